#include "rscore/duration.h"

#include <gtest/gtest.h>

namespace rs {
namespace {

TEST(Duration, ParsesUnits) {
  EXPECT_EQ(ParseDuration("500ms").value(), 500'000'000);
  EXPECT_EQ(ParseDuration("30s").value(), 30'000'000'000);
  EXPECT_EQ(ParseDuration("2m").value(), 120'000'000'000);
  EXPECT_EQ(ParseDuration("1.5s").value(), 1'500'000'000);
  EXPECT_EQ(ParseDuration("10").value(), 10'000'000'000);
  EXPECT_EQ(ParseDuration("250us").value(), 250'000);
}

TEST(Duration, RejectsBadInput) {
  for (const char* s : {"", "abc", "10x", "-5s", "0s", "1.2.3s", "s"}) {
    auto r = ParseDuration(s);
    ASSERT_FALSE(r.ok()) << s;
    EXPECT_NE(r.error().message().find("invalid duration"), std::string::npos);
  }
}

TEST(Duration, Formats) {
  EXPECT_EQ(FormatDuration(1'500'000), "1.50 ms");
  EXPECT_EQ(FormatDuration(2'000'000'000), "2.00 s");
  EXPECT_EQ(FormatDuration(12), "12 ns");
}

}  // namespace
}  // namespace rs
