/* Device -> host clock calibration.
 *
 * NCCL reports device times as the GPU's globaltimer (KernelCh events: a channel's start, and
 * its stop in the ncclProfilerKernelChStop state). The record wants them on the host's
 * CLOCK_MONOTONIC. The offset off = device - host is bounded by facts, never guessed:
 *
 *   lower bounds: a callback that reports a device timestamp runs after the device took it,
 *     so for every KernelCh start and stop, off >= pTimer - host_now_at_callback;
 *   upper bounds: a kernel cannot start before it was launched; profiler API v5 reports the
 *     launch (the KernelLaunch event, host time just before the launch), so for the first
 *     channel of an operation launched after it, off <= device_start - launch_host_ns.
 *
 * The estimate is the largest lower bound of a window of the last RS_GPU_CLOCK_WINDOW samples
 * (bounded memory; a window moves with the clocks), and the conversion's error bound is the
 * smallest upper bound minus that estimate. A device time converts to device - estimate: since
 * the estimate never exceeds the true offset, a converted time is never earlier than the true
 * host time of the device event and at most error_ns later. Without an upper bound (profiler
 * API v4 has no launch events, or none was seen yet) the record says so
 * (RS_GPU_CLOCK_UNBOUNDED, clock_error_ns -1): still never earlier than the truth, by an
 * unknown amount later (the delay of NCCL's proxy in noticing the device's progress).
 *
 * Drift: the two clocks may run at rates that differ by tens of ppm. Every bound is widened by
 * RS_GPU_CLOCK_DRIFT_PPM of its age (the distance between the time it was taken and the time
 * it is applied to), so the statements above hold as long as the rates differ by less than
 * that; the window's bounds are of the last few operations, so the widening is small while
 * operations are frequent. (Strictly, an estimate is applied at the host time of the callback
 * that reported the device event, which is later than the event itself: the guarantee is off
 * by at most RS_GPU_CLOCK_DRIFT_PPM of that delay, nanoseconds.)
 *
 * Clock steps: a new bound that contradicts the window (a lower bound above an upper bound,
 * both widened to the new sample's time) means a clock was stepped: both windows are emptied
 * and start again from the new sample. */
#include "gpu_clock.h"

#include <string.h>

static int64_t widening(int64_t age_ns) {
  if (age_ns < 0) age_ns = -age_ns;
  /* age * ppm / 1e6, rounded up, without overflow for any age */
  const int64_t whole = age_ns / 1000000 * RS_GPU_CLOCK_DRIFT_PPM;
  const int64_t part = (age_ns % 1000000 * RS_GPU_CLOCK_DRIFT_PPM + 999999) / 1000000;
  return whole + part;
}

static int try_lock(struct rs_gpu_clock* c, int tries) {
  for (int i = 0; i < tries; ++i) {
    if (!__atomic_test_and_set(&c->busy, __ATOMIC_ACQUIRE)) return 1;
  }
  return 0;
}

static void unlock(struct rs_gpu_clock* c) { __atomic_clear(&c->busy, __ATOMIC_RELEASE); }

static void push(struct rs_gpu_clock_window* w, int64_t offset_ns, int64_t host_ns) {
  w->samples[w->next].offset_ns = offset_ns;
  w->samples[w->next].host_ns = host_ns;
  w->next = (w->next + 1) % RS_GPU_CLOCK_WINDOW;
  if (w->count < RS_GPU_CLOCK_WINDOW) ++w->count;
}

static void clear_windows(struct rs_gpu_clock* c) {
  c->lower.count = c->lower.next = 0;
  c->upper.count = c->upper.next = 0;
  __atomic_store_n(&c->has_lower, 0, __ATOMIC_RELAXED);
  __atomic_fetch_add(&c->resets, 1, __ATOMIC_RELAXED);
}

/* The largest lower bound, each widened to host_ns; 0 when there is none. */
static int max_lower(const struct rs_gpu_clock_window* w, int64_t host_ns, int64_t* out) {
  for (uint32_t i = 0; i < w->count; ++i) {
    const struct rs_gpu_clock_sample* s = &w->samples[i];
    const int64_t v = s->offset_ns - widening(host_ns - s->host_ns);
    if (i == 0 || v > *out) *out = v;
  }
  return w->count > 0;
}

/* The smallest upper bound, each widened to host_ns; 0 when there is none. */
static int min_upper(const struct rs_gpu_clock_window* w, int64_t host_ns, int64_t* out) {
  for (uint32_t i = 0; i < w->count; ++i) {
    const struct rs_gpu_clock_sample* s = &w->samples[i];
    const int64_t v = s->offset_ns + widening(host_ns - s->host_ns);
    if (i == 0 || v < *out) *out = v;
  }
  return w->count > 0;
}

void rs_gpu_clock_init(struct rs_gpu_clock* c) { memset(c, 0, sizeof(*c)); }

void rs_gpu_clock_device_before(struct rs_gpu_clock* c, uint64_t device_ns, int64_t host_ns) {
  const int64_t bound = (int64_t)device_ns - host_ns;
  if (!try_lock(c, 1)) return; /* busy: one sample fewer */
  int64_t upper = 0;
  if (min_upper(&c->upper, host_ns, &upper) && bound > upper) clear_windows(c);
  push(&c->lower, bound, host_ns);
  __atomic_store_n(&c->newest_lower, bound, __ATOMIC_RELAXED);
  __atomic_store_n(&c->has_lower, 1, __ATOMIC_RELEASE);
  unlock(c);
}

void rs_gpu_clock_device_after(struct rs_gpu_clock* c, uint64_t device_ns, int64_t host_ns) {
  const int64_t bound = (int64_t)device_ns - host_ns;
  if (!try_lock(c, 1)) return;
  int64_t lower = 0;
  if (max_lower(&c->lower, host_ns, &lower) && bound < lower) clear_windows(c);
  push(&c->upper, bound, host_ns);
  unlock(c);
}

struct rs_gpu_clock_estimate rs_gpu_clock_at(struct rs_gpu_clock* c, int64_t host_ns) {
  struct rs_gpu_clock_estimate e = {0, 0, 0, -1};
  if (try_lock(c, 256)) {
    e.valid = max_lower(&c->lower, host_ns, &e.offset_ns);
    int64_t upper = 0;
    if (e.valid && min_upper(&c->upper, host_ns, &upper)) {
      e.bounded = 1;
      e.error_ns = upper > e.offset_ns ? upper - e.offset_ns : 0;
    }
    unlock(c);
    if (e.valid) return e;
  }
  /* Busy for long (its holder lost its CPU): the newest lower bound alone. */
  if (__atomic_load_n(&c->has_lower, __ATOMIC_ACQUIRE)) {
    e.valid = 1;
    e.offset_ns = __atomic_load_n(&c->newest_lower, __ATOMIC_RELAXED);
  }
  return e;
}

uint64_t rs_gpu_clock_resets(const struct rs_gpu_clock* c) {
  return __atomic_load_n(&c->resets, __ATOMIC_RELAXED);
}
