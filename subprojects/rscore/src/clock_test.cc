#include "rscore/clock.h"

#include <gtest/gtest.h>

namespace rs {
namespace {

class FakeClock : public ClockSource {
 public:
  int64_t mono = 1'000'000'000;
  int64_t real_minus_mono = 1'700'000'000'000'000'000;
  int64_t MonotonicNs() override { return mono += 10; }
  int64_t RealtimeNs() override { return (mono += 10) + real_minus_mono; }
  void SyncError(ClockRef& r) override {
    r.maxerror_us = 500;
    r.esterror_us = 20;
    r.clock_state = "TIME_OK";
  }
};

TEST(Clock, RefBracketsRealtime) {
  FakeClock fc;
  WallClock wc(fc);
  ClockRef r = wc.TakeRef("start");
  EXPECT_EQ(r.kind, "start");
  EXPECT_EQ(r.read_span_ns, 20);  // realtime read sits midway
  EXPECT_EQ(r.realtime_ns - r.mono_ns, fc.real_minus_mono);
  EXPECT_EQ(r.maxerror_us, 500);
  EXPECT_EQ(r.clock_state, "TIME_OK");
}

TEST(Clock, SimulatedOffsetAndDriftShiftWallReadings) {
  FakeClock fc;
  WallClock wc(fc, 5'000'000, 100.0);  // +5 ms, +100 ppm
  ClockRef a = wc.TakeRef("start");
  EXPECT_EQ(a.realtime_ns - a.mono_ns, fc.real_minus_mono + 5'000'000);
  fc.mono += 10'000'000'000;  // 10 s later: +1 ms drift
  ClockRef b = wc.TakeRef("end");
  EXPECT_NEAR(static_cast<double>(b.realtime_ns - b.mono_ns - fc.real_minus_mono),
              5'000'000 + 1'000'000, 10.0);
}

TEST(Clock, MonoToWallInterpolates) {
  MonoToWall m;
  ClockRef a{"start", 1000, 1'000'000 + 1000, 0, -1, -1, ""};
  ClockRef b{"end", 2000, 1'000'000 + 2010, 0, -1, -1, ""};  // wall runs 1% fast
  m.Add(b);
  m.Add(a);
  EXPECT_EQ(m.Convert(1000), 1'001'000);
  EXPECT_EQ(m.Convert(1500), 1'001'505);
  EXPECT_EQ(m.Convert(2000), 1'002'010);
  EXPECT_EQ(m.Convert(3000), 1'003'020);  // extrapolated
}

}  // namespace
}  // namespace rs
