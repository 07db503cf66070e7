#include "rscore/wire_clock.h"

#include <gtest/gtest.h>

namespace rs {
namespace {

constexpr int64_t kT = 1'764'070'681'000'000'000;  // 2025-11-25, near where real clocks are

TEST(WireClockTest, KeepsTheExchangeWithTheSmallestRoundTrip) {
  // The node's clock is 5 ms ahead; the second exchange is the fastest (40 us) and its node
  // reading was taken 10 us after t0 (asymmetric): the estimate is off by 10 us, within 20 us.
  const int64_t off = 5'000'000;
  std::vector<ClockExchange> ex = {
      {kT, kT + 900'000 + off, kT + 2'000'000},                   // TLS handshake: 2 ms
      {kT + 10'000'000, kT + 10'010'000 + off, kT + 10'040'000},  // 40 us
      {kT + 20'000'000, kT + 20'050'000 + off, kT + 20'100'000},  // 100 us
  };
  auto c = EstimateWireClock(ex);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->rtt_ns, 40'000);
  EXPECT_EQ(c->bound_ns, 20'000);
  EXPECT_EQ(c->offset_ns, off - 10'000);
  EXPECT_LE(std::llabs(c->offset_ns - off), c->bound_ns);
  EXPECT_EQ(c->measured_ns, kT + 10'020'000);
  EXPECT_EQ(c->exchanges, 3);
}

TEST(WireClockTest, TheBoundHoldsWhereverTheNodeReadItsClock) {
  // A node behind by 3 ms read its clock at the very start and at the very end of a 1 ms
  // round trip: both estimates stay within half the round trip of the truth.
  const int64_t off = -3'000'000;
  for (int64_t at : {int64_t{0}, int64_t{1'000'000}, int64_t{333'333}}) {
    auto c = EstimateWireClock({{kT, kT + at + off, kT + 1'000'000}});
    ASSERT_TRUE(c.has_value());
    EXPECT_LE(std::llabs(c->offset_ns - off), c->bound_ns) << at;
  }
}

TEST(WireClockTest, AnOddRoundTripRoundsTheBoundUp) {
  auto c = EstimateWireClock({{kT, kT + 1, kT + 3}});
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->rtt_ns, 3);
  EXPECT_EQ(c->bound_ns, 2);   // not 1: the node may have read its clock at t0 or at t3
  EXPECT_EQ(c->offset_ns, 0);  // measured at kT + 1
}

TEST(WireClockTest, NoUsableExchange) {
  EXPECT_FALSE(EstimateWireClock({}).has_value());
  // The workstation's clock stepped back between send and receive.
  EXPECT_FALSE(EstimateWireClock({{kT, kT, kT - 5}}).has_value());
}

TEST(WireClockTest, FormatsForPeople) {
  WireClock c;
  c.offset_ns = 1'234'000;
  c.bound_ns = 120'000;
  EXPECT_EQ(FormatWireClock(c), "+1.234 ms \u00b10.120 ms");
  c.offset_ns = -2'500'000;
  EXPECT_EQ(FormatWireClock(c), "-2.500 ms \u00b10.120 ms");
}

}  // namespace
}  // namespace rs
