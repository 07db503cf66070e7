/* The plugin's lock-free counters and running extremes (relaxed atomics: each field is
 * independent, readers take a snapshot). */
#ifndef RANKSCOPE_GPU_ATOMIC_H_
#define RANKSCOPE_GPU_ATOMIC_H_

#include <stdint.h>

static inline void rs_gpu_count(uint64_t* counter) {
  __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

/* *v = min(*v, x), where 0 in *v means none yet. */
static inline void rs_gpu_atomic_min_nonzero(uint64_t* v, uint64_t x) {
  uint64_t cur = __atomic_load_n(v, __ATOMIC_RELAXED);
  while ((cur == 0 || x < cur) &&
         !__atomic_compare_exchange_n(v, &cur, x, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

/* *v = max(*v, x); 1 where x became the maximum. */
static inline int rs_gpu_atomic_max(int64_t* v, int64_t x) {
  int64_t cur = __atomic_load_n(v, __ATOMIC_RELAXED);
  while (x > cur) {
    if (__atomic_compare_exchange_n(v, &cur, x, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return 1;
  }
  return 0;
}

static inline void rs_gpu_atomic_max_u64(uint64_t* v, uint64_t x) {
  uint64_t cur = __atomic_load_n(v, __ATOMIC_RELAXED);
  while (x > cur &&
         !__atomic_compare_exchange_n(v, &cur, x, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

#endif /* RANKSCOPE_GPU_ATOMIC_H_ */
