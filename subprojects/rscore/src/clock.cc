#include "rscore/clock.h"

#include <sys/timex.h>
#include <time.h>

#include <algorithm>
#include <cmath>

namespace rs {
namespace {

int64_t ReadClock(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

}  // namespace

int64_t MonotonicNowNs() { return ReadClock(CLOCK_MONOTONIC); }

namespace {

class RealClock : public ClockSource {
 public:
  int64_t MonotonicNs() override { return ReadClock(CLOCK_MONOTONIC); }
  int64_t RealtimeNs() override { return ReadClock(CLOCK_REALTIME); }
  void SyncError(ClockRef& ref) override {
    timex tx{};
    int state = adjtimex(&tx);
    if (state < 0) {
      ref.clock_state = "unavailable";
      return;
    }
    ref.maxerror_us = tx.maxerror;
    ref.esterror_us = tx.esterror;
    switch (state) {
      case TIME_OK:
        ref.clock_state = "TIME_OK";
        break;
      case TIME_INS:
        ref.clock_state = "TIME_INS";
        break;
      case TIME_DEL:
        ref.clock_state = "TIME_DEL";
        break;
      case TIME_OOP:
        ref.clock_state = "TIME_OOP";
        break;
      case TIME_WAIT:
        ref.clock_state = "TIME_WAIT";
        break;
      case TIME_ERROR:
        ref.clock_state = "TIME_ERROR";
        break;
      default:
        ref.clock_state = "state_" + std::to_string(state);
        break;
    }
  }
};

}  // namespace

ClockSource& SystemClock() {
  static RealClock clock;
  return clock;
}

WallClock::WallClock(ClockSource& source, int64_t simulate_offset_ns, double simulate_drift_ppm)
    : source_(source), offset_ns_(simulate_offset_ns), drift_ppm_(simulate_drift_ppm) {}

int64_t WallClock::Shift(int64_t mono_ns, int64_t realtime_ns) {
  if (first_mono_ns_ < 0) first_mono_ns_ = mono_ns;
  double drift = drift_ppm_ * 1e-6 * static_cast<double>(mono_ns - first_mono_ns_);
  return realtime_ns + offset_ns_ + static_cast<int64_t>(std::llround(drift));
}

ClockRef WallClock::TakeRef(const std::string& kind) {
  ClockRef best;
  // The tightest of three brackets: a preemption between the reads only widens one.
  for (int i = 0; i < 3; ++i) {
    int64_t m0 = source_.MonotonicNs();
    int64_t r = source_.RealtimeNs();
    int64_t m1 = source_.MonotonicNs();
    if (i == 0 || m1 - m0 < best.read_span_ns) {
      best.mono_ns = m0 + (m1 - m0) / 2;
      best.realtime_ns = r;
      best.read_span_ns = m1 - m0;
    }
  }
  best.realtime_ns = Shift(best.mono_ns, best.realtime_ns);
  best.kind = kind;
  source_.SyncError(best);
  return best;
}

int64_t WallClock::NowNs() {
  int64_t m = source_.MonotonicNs();
  return Shift(m, source_.RealtimeNs());
}

void MonoToWall::Add(const ClockRef& ref) {
  auto it = std::upper_bound(refs_.begin(), refs_.end(), ref.mono_ns,
                             [](int64_t m, const ClockRef& r) { return m < r.mono_ns; });
  refs_.insert(it, ref);
}

int64_t MonoToWall::Convert(int64_t mono_ns) const {
  if (refs_.empty()) return mono_ns;
  if (refs_.size() == 1) return mono_ns + (refs_[0].realtime_ns - refs_[0].mono_ns);
  auto it = std::upper_bound(refs_.begin(), refs_.end(), mono_ns,
                             [](int64_t m, const ClockRef& r) { return m < r.mono_ns; });
  size_t hi = static_cast<size_t>(it - refs_.begin());
  if (hi == 0) hi = 1;
  if (hi >= refs_.size()) hi = refs_.size() - 1;
  const ClockRef& a = refs_[hi - 1];
  const ClockRef& b = refs_[hi];
  if (b.mono_ns == a.mono_ns) return mono_ns + (a.realtime_ns - a.mono_ns);
  double slope = static_cast<double>(b.realtime_ns - a.realtime_ns) /
                 static_cast<double>(b.mono_ns - a.mono_ns);
  return a.realtime_ns +
         static_cast<int64_t>(std::llround(slope * static_cast<double>(mono_ns - a.mono_ns)));
}

}  // namespace rs
