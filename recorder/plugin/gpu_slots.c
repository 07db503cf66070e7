#include "recorder/plugin/gpu_slots.h"

#include <stddef.h>
#include <string.h>

#include "recorder/plugin/gpu_handle.h"
#include "recorder/plugin/gpu_region.h"

struct slot {
  uint64_t word;      /* atomic: generation << 32 | references */
  uint32_t next_free; /* free list: index + 1 of the next free slot, 0 at the end */
  struct rs_gpu_slot_info info;
};

static struct slot g_slots[RS_GPU_SLOT_COUNT];
static uint64_t g_free_head; /* atomic: pop count << 32 | (index + 1), 0 index part: empty */

#define REFS(w) ((uint32_t)(w))
#define GEN(w) ((uint32_t)((w) >> 32))
#define WORD(gen, refs) (((uint64_t)(gen) << 32) | (uint32_t)(refs))

static void push_free(uint32_t index) {
  uint64_t head = __atomic_load_n(&g_free_head, __ATOMIC_ACQUIRE);
  uint64_t next;
  do {
    __atomic_store_n(&g_slots[index].next_free, (uint32_t)head, __ATOMIC_RELAXED);
    next = ((head >> 32) + 1) << 32 | (index + 1);
  } while (!__atomic_compare_exchange_n(&g_free_head, &head, next, 1, __ATOMIC_RELEASE,
                                        __ATOMIC_ACQUIRE));
}

/* The tag in the head's upper half changes with every pop and push, so a head that was
 * popped and pushed back meanwhile does not pass for unchanged. */
static int pop_free(uint32_t* index) {
  uint64_t head = __atomic_load_n(&g_free_head, __ATOMIC_ACQUIRE);
  for (;;) {
    const uint32_t top = (uint32_t)head;
    if (top == 0) return 0;
    const uint32_t after = __atomic_load_n(&g_slots[top - 1].next_free, __ATOMIC_RELAXED);
    const uint64_t next = ((head >> 32) + 1) << 32 | after;
    if (__atomic_compare_exchange_n(&g_free_head, &head, next, 1, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
      *index = top - 1;
      return 1;
    }
  }
}

void rs_gpu_slots_reset(void) {
  for (uint32_t i = 0; i < RS_GPU_SLOT_COUNT; ++i) {
    const uint64_t w = __atomic_load_n(&g_slots[i].word, __ATOMIC_RELAXED);
    __atomic_store_n(&g_slots[i].word, WORD(GEN(w) + 1, 0), __ATOMIC_RELAXED);
    g_slots[i].next_free = i + 1 < RS_GPU_SLOT_COUNT ? i + 2 : 0;
  }
  __atomic_store_n(&g_free_head, (uint64_t)1, __ATOMIC_RELEASE); /* slot 0 first */
}

struct rs_gpu_op* rs_gpu_slot_take(void* owner, uint32_t* index, uint32_t* gen) {
  uint32_t i;
  if (!pop_free(&i)) return NULL;
  struct slot* s = &g_slots[i];
  const uint32_t g = GEN(__atomic_load_n(&s->word, __ATOMIC_RELAXED));
  memset(&s->info, 0, sizeof(s->info));
  __atomic_store_n(&s->info.owner, owner, __ATOMIC_RELAXED); /* finalize reads it */
  struct rs_gpu_op* op = rs_gpu_region_slot(i);
  memset((char*)op + sizeof(op->stamp), 0, sizeof(*op) - sizeof(op->stamp));
  __atomic_store_n(&s->word, WORD(g, 2), __ATOMIC_RELEASE);
  *index = i;
  *gen = g;
  return op;
}

void rs_gpu_slot_publish(uint32_t index, uint32_t gen) {
  /* non-zero while in use (gpu_ring.h); the reader takes it as the slot's version */
  __atomic_store_n(&rs_gpu_region_slot(index)->stamp, WORD(gen, index + 1), __ATOMIC_RELEASE);
}

struct rs_gpu_slot_info* rs_gpu_slot_info(uint32_t index) {
  return &g_slots[index].info;
}

/* The slot a slot-kind handle names, if the region it was made for is still there. */
static struct slot* slot_of(const void* handle) {
  if (rs_gpu_region_header() == NULL) return NULL;
  const uint32_t i = rs_gpu_handle_slot(handle);
  return i < RS_GPU_SLOT_COUNT ? &g_slots[i] : NULL;
}

struct rs_gpu_op* rs_gpu_slot_acquire(const void* handle) {
  struct slot* s = slot_of(handle);
  if (s == NULL) return NULL;
  const uint32_t gen = rs_gpu_handle_gen(handle);
  uint64_t w = __atomic_load_n(&s->word, __ATOMIC_ACQUIRE);
  do {
    if (GEN(w) != gen || REFS(w) == 0) return NULL;
  } while (
      !__atomic_compare_exchange_n(&s->word, &w, w + 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
  return rs_gpu_region_slot(rs_gpu_handle_slot(handle));
}

struct rs_gpu_op* rs_gpu_slot_live(const void* handle) {
  struct slot* s = slot_of(handle);
  if (s == NULL) return NULL;
  const uint64_t w = __atomic_load_n(&s->word, __ATOMIC_ACQUIRE);
  if (GEN(w) != rs_gpu_handle_gen(handle) || REFS(w) == 0) return NULL;
  return rs_gpu_region_slot(rs_gpu_handle_slot(handle));
}

int rs_gpu_slot_release(const void* handle, uint32_t n) {
  struct slot* s = slot_of(handle);
  if (s == NULL) return -1;
  const uint32_t gen = rs_gpu_handle_gen(handle);
  uint64_t w = __atomic_load_n(&s->word, __ATOMIC_ACQUIRE);
  uint64_t next;
  do {
    if (GEN(w) != gen || REFS(w) == 0) return -1;
    next = REFS(w) > n ? w - n : WORD(gen, 0);
  } while (!__atomic_compare_exchange_n(&s->word, &w, next, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
  return REFS(next) == 0;
}

int rs_gpu_slot_claim(uint32_t index, const void* owner) {
  struct slot* s = &g_slots[index];
  uint64_t w = __atomic_load_n(&s->word, __ATOMIC_ACQUIRE);
  do {
    if (REFS(w) == 0 || __atomic_load_n(&s->info.owner, __ATOMIC_RELAXED) != owner) return 0;
  } while (!__atomic_compare_exchange_n(&s->word, &w, WORD(GEN(w), 0), 1, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE));
  return 1;
}

void rs_gpu_slot_free(uint32_t index) {
  struct slot* s = &g_slots[index];
  __atomic_store_n(&rs_gpu_region_slot(index)->stamp, 0, __ATOMIC_RELEASE);
  const uint64_t w = __atomic_load_n(&s->word, __ATOMIC_RELAXED);
  __atomic_store_n(&s->word, WORD(GEN(w) + 1, 0), __ATOMIC_RELEASE);
  push_free(index);
}
