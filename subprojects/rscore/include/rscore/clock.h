// Clock references: pairs of CLOCK_MONOTONIC (the clock BPF timestamps use) and
// CLOCK_REALTIME readings, plus the kernel's own estimate of its sync error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rscore/result.h"

namespace rs {

struct ClockRef {
  std::string kind;     // 'start' | 'periodic' | 'end'
  int64_t mono_ns = 0;  // midpoint of the two monotonic reads bracketing realtime_ns
  int64_t realtime_ns = 0;
  int64_t read_span_ns = 0;  // distance between the two monotonic reads
  int64_t maxerror_us = -1;  // adjtimex maxerror; -1 when unavailable
  int64_t esterror_us = -1;
  std::string clock_state;  // 'TIME_OK', 'TIME_ERROR', 'unavailable', ...
};

// Where clock readings come from; tests substitute a fake.
class ClockSource {
 public:
  virtual ~ClockSource() = default;
  virtual int64_t MonotonicNs() = 0;
  virtual int64_t RealtimeNs() = 0;
  // Fills maxerror/esterror/clock_state from adjtimex(2).
  virtual void SyncError(ClockRef& ref) = 0;
};

ClockSource& SystemClock();

// CLOCK_MONOTONIC now, in ns (the clock BPF timestamps use).
int64_t MonotonicNowNs();

// Takes reference pairs. For testing clock alignment a recorder may shift its view of
// the wall clock by a fixed offset and a linear drift (relative to the first reading).
// The shift is applied to every wall-clock reading and is never written anywhere.
class WallClock {
 public:
  explicit WallClock(ClockSource& source = SystemClock(), int64_t simulate_offset_ns = 0,
                     double simulate_drift_ppm = 0);
  ClockRef TakeRef(const std::string& kind);
  // Current wall-clock time (shifted like the references).
  int64_t NowNs();

 private:
  int64_t Shift(int64_t mono_ns, int64_t realtime_ns);
  ClockSource& source_;
  int64_t offset_ns_;
  double drift_ppm_;
  int64_t first_mono_ns_ = -1;
};

// Converts monotonic timestamps to wall clock by linear interpolation between the
// surrounding reference pairs (extrapolating from the nearest two at the ends).
class MonoToWall {
 public:
  void Add(const ClockRef& ref);
  bool empty() const { return refs_.empty(); }
  int64_t Convert(int64_t mono_ns) const;
  const std::vector<ClockRef>& refs() const { return refs_; }

 private:
  std::vector<ClockRef> refs_;  // ordered by mono_ns
};

}  // namespace rs
