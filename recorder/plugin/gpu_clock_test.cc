// The device -> host clock calibration (gpu_clock.c) on made-up clocks: device events at known
// host times, callbacks after them, launches before them; the estimate must never exceed the
// true offset and the true offset must lie within the stated error.
#include "recorder/plugin/gpu_clock.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>

namespace {

constexpr int64_t kOffset = 5'000'000'000;  // device - host

// A device whose clock is host + offset(t), offset drifting by ppm from t = 0.
struct Device {
  int64_t offset;
  double ppm;
  int64_t OffsetAt(int64_t host) const {
    return offset + static_cast<int64_t>(ppm * 1e-6 * static_cast<double>(host));
  }
  uint64_t Read(int64_t host) const { return static_cast<uint64_t>(host + OffsetAt(host)); }
};

// One operation as NCCL reports it: launched at `launch`, its kernel starts `queue` later on
// the device, the proxy notices `delay` after that; ends `run` later, noticed `delay` after.
struct Op {
  int64_t launch, queue, run, delay;
};

// Feeds the operation's bounds and returns the estimate at its start, with the truth.
void Feed(rs_gpu_clock* c, const Device& d, const Op& op, bool with_launch) {
  const int64_t start = op.launch + op.queue;
  const int64_t end = start + op.run;
  if (with_launch) rs_gpu_clock_device_after(c, d.Read(start), op.launch);
  rs_gpu_clock_device_before(c, d.Read(start), start + op.delay);
  rs_gpu_clock_device_before(c, d.Read(end), end + op.delay);
}

void ExpectWithinBound(rs_gpu_clock* c, const Device& d, int64_t host, bool bounded) {
  const rs_gpu_clock_estimate e = rs_gpu_clock_at(c, host);
  ASSERT_TRUE(e.valid);
  const int64_t truth = d.OffsetAt(host);
  EXPECT_LE(e.offset_ns, truth) << "a converted time would be earlier than the truth";
  EXPECT_EQ(e.bounded, bounded ? 1 : 0);
  if (bounded) {
    EXPECT_GE(e.offset_ns + e.error_ns, truth) << "the truth lies outside the stated bound";
  } else {
    EXPECT_EQ(e.error_ns, -1);
  }
}

TEST(GpuClock, NothingKnownWithoutSamples) {
  rs_gpu_clock c;
  rs_gpu_clock_init(&c);
  const rs_gpu_clock_estimate e = rs_gpu_clock_at(&c, 1000);
  EXPECT_FALSE(e.valid);
  EXPECT_FALSE(e.bounded);
  EXPECT_EQ(e.error_ns, -1);
}

TEST(GpuClock, LargestLowerBoundSmallestUpperBound) {
  rs_gpu_clock c;
  rs_gpu_clock_init(&c);
  const int64_t t = 1'000'000'000;
  rs_gpu_clock_device_before(&c, static_cast<uint64_t>(t + kOffset - 300), t);  // off >= O-300
  rs_gpu_clock_device_before(&c, static_cast<uint64_t>(t + kOffset - 100), t);  // off >= O-100
  rs_gpu_clock_device_after(&c, static_cast<uint64_t>(t + kOffset + 900), t);   // off <= O+900
  rs_gpu_clock_device_after(&c, static_cast<uint64_t>(t + kOffset + 400), t);   // off <= O+400
  const rs_gpu_clock_estimate e = rs_gpu_clock_at(&c, t);
  ASSERT_TRUE(e.valid);
  ASSERT_TRUE(e.bounded);
  EXPECT_EQ(e.offset_ns, kOffset - 100);
  EXPECT_EQ(e.error_ns, 500);
}

TEST(GpuClock, WithoutLaunchesUnbounded) {
  rs_gpu_clock c;
  rs_gpu_clock_init(&c);
  Device d{kOffset, 0};
  Feed(&c, d, Op{1'000'000, 20'000, 50'000, 3'000}, false);
  ExpectWithinBound(&c, d, 1'020'000, false);
  // The callback delay, at the newest sample's time (earlier, the bound widens by 100 ppm of
  // the distance: 5 ns for the 50 us before).
  EXPECT_EQ(rs_gpu_clock_at(&c, 1'073'000).offset_ns, kOffset - 3'000);
  EXPECT_EQ(rs_gpu_clock_at(&c, 1'023'000).offset_ns, kOffset - 3'005);
}

TEST(GpuClock, RandomDelaysStayWithinTheBound) {
  rs_gpu_clock c;
  rs_gpu_clock_init(&c);
  Device d{-1'000'000'000, 0};  // device behind the host
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> queue(0, 2'000'000), delay(500, 200'000);
  int64_t t = 3'000'000'000;
  for (int i = 0; i < 500; ++i) {
    Op op{t, queue(rng), 100'000, delay(rng)};
    Feed(&c, d, op, true);
    ExpectWithinBound(&c, d, op.launch + op.queue, true);
    t += 1'000'000;
  }
  // Over many operations some start right after their launch and are noticed at once: the
  // bound gets tight.
  EXPECT_LT(rs_gpu_clock_at(&c, t).error_ns, 20'000);
}

// A drift of 50 ppm over operations a second apart: a bound 64 s old is 3.2 ms off by now.
// Widened by 100 ppm of their age, the bounds still hold.
TEST(GpuClock, DriftWithinTheAssumedRateHolds) {
  rs_gpu_clock c;
  rs_gpu_clock_init(&c);
  for (double ppm : {50.0, -50.0}) {
    rs_gpu_clock_init(&c);
    Device d{kOffset, ppm};
    int64_t t = 1'000'000'000;
    for (int i = 0; i < 200; ++i) {
      Op op{t, 1'000, 2'000'000, 2'000};
      Feed(&c, d, op, true);
      ExpectWithinBound(&c, d, op.launch + op.queue, true);
      ExpectWithinBound(&c, d, op.launch + op.queue + op.run, true);
      t += 1'000'000'000;
    }
    EXPECT_EQ(rs_gpu_clock_resets(&c), 0u) << ppm;
  }
}

// A clock step of +1 ms: the first new lower bound exceeds the upper bound; calibration
// starts over and the estimate follows the new offset.
TEST(GpuClock, StepStartsOver) {
  rs_gpu_clock c;
  rs_gpu_clock_init(&c);
  Device d{kOffset, 0};
  int64_t t = 1'000'000'000;
  for (int i = 0; i < 20; ++i, t += 1'000'000) Feed(&c, d, Op{t, 1'000, 10'000, 1'000}, true);
  EXPECT_EQ(rs_gpu_clock_resets(&c), 0u);
  d.offset += 1'000'000;
  for (int i = 0; i < 5; ++i, t += 1'000'000) Feed(&c, d, Op{t, 1'000, 10'000, 1'000}, true);
  EXPECT_EQ(rs_gpu_clock_resets(&c), 1u);
  ExpectWithinBound(&c, d, t, true);
  // Backwards (a contradiction the other way round): an upper bound below the lower ones.
  d.offset -= 2'000'000;
  Feed(&c, d, Op{t, 1'000, 10'000, 1'000}, true);
  EXPECT_EQ(rs_gpu_clock_resets(&c), 2u);
  ExpectWithinBound(&c, d, t + 1'000, true);
}

// Old bounds fade: a tight lower bound 10 s old is 1 ms weaker now, below a newer loose one.
TEST(GpuClock, OldBoundsFadeWithAge) {
  rs_gpu_clock c;
  rs_gpu_clock_init(&c);
  const int64_t t = 1'000'000'000;
  rs_gpu_clock_device_before(&c, static_cast<uint64_t>(t + 1'000), t);  // off >= 1000
  EXPECT_EQ(rs_gpu_clock_at(&c, t).offset_ns, 1'000);
  EXPECT_EQ(rs_gpu_clock_at(&c, t + 10'000'000'000).offset_ns, 1'000 - 1'000'000);
  rs_gpu_clock_device_before(&c, static_cast<uint64_t>(t + 10'000'000'000 + 500),
                             t + 10'000'000'000);  // off >= 500, 10 s later
  EXPECT_EQ(rs_gpu_clock_at(&c, t + 10'000'000'000).offset_ns, 500);
  // Samples that arrive out of order (two threads) are kept as well.
  rs_gpu_clock_device_before(&c, static_cast<uint64_t>(t + 5'000'000'000 + 900'000),
                             t + 5'000'000'000);  // off >= 900000, 5 s before the newest
  EXPECT_EQ(rs_gpu_clock_at(&c, t + 10'000'000'000).offset_ns, 900'000 - 500'000);
}

// Bounds widen by 100 ppm of their age, rounded up.
TEST(GpuClock, BoundsWidenWithAge) {
  rs_gpu_clock c;
  rs_gpu_clock_init(&c);
  const int64_t t = 1'000'000'000;
  rs_gpu_clock_device_before(&c, static_cast<uint64_t>(t + kOffset), t);
  rs_gpu_clock_device_after(&c, static_cast<uint64_t>(t + kOffset), t);
  rs_gpu_clock_estimate e = rs_gpu_clock_at(&c, t + 1'000'000'000);  // 1 s later
  EXPECT_EQ(e.offset_ns, kOffset - 100'000);
  EXPECT_EQ(e.error_ns, 200'000);
  e = rs_gpu_clock_at(&c, t - 1);  // 1 ns earlier: 1e-4 ns, rounded up to 1
  EXPECT_EQ(e.offset_ns, kOffset - 1);
}

}  // namespace
