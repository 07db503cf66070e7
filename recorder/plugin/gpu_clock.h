/* Device -> host clock calibration of one communicator (see gpu_clock.c for the method and
 * its bound). Samples come from NCCL's events; estimates are asked for when an operation is
 * written. Constant time and memory. Thread-safe: adding a sample never waits (a sample that
 * finds the calibration busy is dropped), asking for an estimate waits at most a few hundred
 * nanoseconds and otherwise answers with the newest lower bound, unbounded. */
#ifndef RANKSCOPE_GPU_CLOCK_H_
#define RANKSCOPE_GPU_CLOCK_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RS_GPU_CLOCK_DRIFT_PPM 100 /* assumed bound of the clocks' rate difference */

/* The best bound of one kind so far, as it stands at host time at_ns (gpu_clock.c). */
struct rs_gpu_clock_bound {
  int64_t offset_ns;
  int64_t at_ns;
  int known;
};

struct rs_gpu_clock {
  char busy; /* the lock (test-and-set) */
  struct rs_gpu_clock_bound lower, upper;
  uint64_t resets;         /* contradictions seen (a clock step), atomic */
  int64_t newest_lower;    /* the newest lower bound, atomic; valid once has_lower */
  int64_t newest_lower_at; /* the host time of that sample, atomic */
  int has_lower;           /* atomic */
};

struct rs_gpu_clock_estimate {
  int valid;         /* a lower bound exists: offset_ns can be used */
  int bounded;       /* an upper bound exists: error_ns is the conversion's bound */
  int64_t offset_ns; /* device - host; never above the true offset (see gpu_clock.c) */
  int64_t error_ns;  /* true offset - offset_ns is in [0, error_ns]; -1 when unbounded */
};

void rs_gpu_clock_init(struct rs_gpu_clock* c);
/* The device read device_ns no later than the host read host_ns: a callback reporting a
 * device timestamp runs after it (offset >= device_ns - host_ns). */
void rs_gpu_clock_device_before(struct rs_gpu_clock* c, uint64_t device_ns, int64_t host_ns);
/* The device read device_ns no earlier than host_ns: a kernel cannot start before it was
 * launched (offset <= device_ns - host_ns). */
void rs_gpu_clock_device_after(struct rs_gpu_clock* c, uint64_t device_ns, int64_t host_ns);
/* The estimate for an event near host time host_ns. */
struct rs_gpu_clock_estimate rs_gpu_clock_at(struct rs_gpu_clock* c, int64_t host_ns);
uint64_t rs_gpu_clock_resets(const struct rs_gpu_clock* c);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RANKSCOPE_GPU_CLOCK_H_ */
