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
 *     A kernel queued behind others (a collective waiting for the backward pass on the
 *     device) starts long after its launch, so this bound alone stays loose by the device's
 *     queue (about 22 ms on the test bed's DDP job). The second kind: a kernel cannot finish
 *     a network receive before NCCL's proxy handed it the data. NCCL 2.23-2.30 record the
 *     proxy step's RecvGPUWait state and only then store the receive tail the GPU waits for
 *     (src/transport/net.cc, recvProxyProgress), so for a collective whose channels consume
 *     every step on that tail (gpu_operation.c: RING, SIMPLE), off <= device_end -
 *     host time of its last RecvGPUWait callback: tight by how long the kernel ran after its
 *     last receive.
 *
 * The estimate is the largest lower bound, and the conversion's error bound is the smallest
 * upper bound minus the estimate. A device time converts to device - estimate: since the
 * estimate never exceeds the true offset, a converted time is never earlier than the true
 * host time of the device event, and at most error_ns later. Without an upper bound (profiler
 * API v4 reports no launches, or none was seen yet) the record says so
 * (RS_GPU_CLOCK_UNBOUNDED, clock_error_ns -1): still never earlier than the truth, later by
 * an unknown amount (the delay of NCCL's proxy thread in noticing the device's progress).
 *
 * Drift: the two clocks may run at rates that differ by tens of ppm, so a bound taken a while
 * ago says less about the offset now. Every bound is widened by RS_GPU_CLOCK_DRIFT_PPM of its
 * age (the distance between the host time it was taken at and the time it is applied to): a
 * lower bound taken 1 s ago counts 100 us lower. This takes the place of a window of recent
 * samples: old bounds fade on their own, so only the best bound of each kind, widened to the
 * time of the newest sample, has to be kept (constant memory, constant time per sample), and
 * the statements above hold as long as the rates differ by less than RS_GPU_CLOCK_DRIFT_PPM.
 * (Strictly, the estimate is applied at the host time of the callback that reported the
 * device event, later than the event itself: the guarantee is off by at most
 * RS_GPU_CLOCK_DRIFT_PPM of that delay, nanoseconds.)
 *
 * Clock steps: a new bound that contradicts the other kind's (a lower bound above the upper
 * bound, both widened to the new sample's time) means a clock was stepped: both are dropped
 * and calibration starts again from the new sample. */
#include "recorder/plugin/gpu_clock.h"

#include <string.h>

/* RS_GPU_CLOCK_DRIFT_PPM of a duration, rounded up. */
static int64_t widening(int64_t age_ns) {
  if (age_ns < 0) age_ns = -age_ns;
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

/* The bound as it stands at host_ns: lower bounds widen down (sign -1), upper bounds up. */
static int64_t at(const struct rs_gpu_clock_bound* b, int64_t host_ns, int sign) {
  return b->offset_ns + sign * widening(host_ns - b->at_ns);
}

/* Keeps the better of the bound so far and a new sample, at the later of their two times:
 * widening a bound to another time keeps it true, so both stay valid at any time. */
static void merge(struct rs_gpu_clock_bound* b, int64_t offset_ns, int64_t host_ns, int sign) {
  if (!b->known) {
    b->offset_ns = offset_ns;
    b->at_ns = host_ns;
    b->known = 1;
    return;
  }
  const int64_t when = host_ns > b->at_ns ? host_ns : b->at_ns;
  const int64_t old = at(b, when, sign);
  const int64_t fresh = offset_ns + sign * widening(when - host_ns);
  b->offset_ns = sign < 0 ? (fresh > old ? fresh : old) : (fresh < old ? fresh : old);
  b->at_ns = when;
}

static void restart(struct rs_gpu_clock* c) {
  memset(&c->lower, 0, sizeof(c->lower));
  memset(&c->upper, 0, sizeof(c->upper));
  __atomic_store_n(&c->has_lower, 0, __ATOMIC_RELAXED);
  __atomic_fetch_add(&c->resets, 1, __ATOMIC_RELAXED);
}

void rs_gpu_clock_init(struct rs_gpu_clock* c) { memset(c, 0, sizeof(*c)); }

void rs_gpu_clock_device_before(struct rs_gpu_clock* c, uint64_t device_ns, int64_t host_ns) {
  const int64_t bound = (int64_t)device_ns - host_ns;
  if (!try_lock(c, 1)) return; /* busy: one sample fewer */
  if (c->upper.known && bound > at(&c->upper, host_ns, +1)) restart(c);
  merge(&c->lower, bound, host_ns, -1);
  __atomic_store_n(&c->newest_lower, bound, __ATOMIC_RELAXED);
  __atomic_store_n(&c->newest_lower_at, host_ns, __ATOMIC_RELAXED);
  __atomic_store_n(&c->has_lower, 1, __ATOMIC_RELEASE);
  unlock(c);
}

void rs_gpu_clock_device_after(struct rs_gpu_clock* c, uint64_t device_ns, int64_t host_ns) {
  const int64_t bound = (int64_t)device_ns - host_ns;
  if (!try_lock(c, 1)) return;
  if (c->lower.known && bound < at(&c->lower, host_ns, -1)) restart(c);
  merge(&c->upper, bound, host_ns, +1);
  unlock(c);
}

struct rs_gpu_clock_estimate rs_gpu_clock_at(struct rs_gpu_clock* c, int64_t host_ns) {
  struct rs_gpu_clock_estimate e = {0, 0, 0, -1};
  if (try_lock(c, 256)) {
    if (c->lower.known) {
      e.valid = 1;
      e.offset_ns = at(&c->lower, host_ns, -1);
      if (c->upper.known) {
        const int64_t upper = at(&c->upper, host_ns, +1);
        e.bounded = 1;
        e.error_ns = upper > e.offset_ns ? upper - e.offset_ns : 0;
      }
    }
    unlock(c);
    return e;
  }
  /* Busy for long (its holder lost its CPU): the newest lower bound alone, widened to host_ns
   * like every bound (the two fields may come from two samples: each widening is still true of
   * its own, and the samples are moments apart). */
  if (__atomic_load_n(&c->has_lower, __ATOMIC_ACQUIRE)) {
    e.valid = 1;
    const int64_t newest_at = __atomic_load_n(&c->newest_lower_at, __ATOMIC_RELAXED);
    e.offset_ns =
        __atomic_load_n(&c->newest_lower, __ATOMIC_RELAXED) - widening(host_ns - newest_at);
  }
  return e;
}

uint64_t rs_gpu_clock_resets(const struct rs_gpu_clock* c) {
  return __atomic_load_n(&c->resets, __ATOMIC_RELAXED);
}
