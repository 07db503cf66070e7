#include "rscore/time_arg.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace rs {
namespace {

TEST(TimeArg, IsoUtcEpochNanosecondsAndOffsetsAlike) {
  const int64_t t = 1'764'070'681'500'000'000;  // 2025-11-25T11:38:01.5Z
  EXPECT_EQ(ParseTimeArg("2025-11-25T11:38:01.5Z", "--from")->ns, t);
  EXPECT_EQ(ParseTimeArg("2025-11-25 11:38:01.500000000", "--from")->ns, t);
  EXPECT_EQ(ParseTimeArg("2025-11-25T12:38:01.5+01:00", "--from")->ns, t);
  EXPECT_EQ(ParseTimeArg("1764070681500000000", "--from")->ns, t);
  EXPECT_FALSE(ParseTimeArg("1764070681500000000", "--from")->relative);
  auto off = ParseTimeArg("+1.5s", "--to");
  ASSERT_TRUE(off.ok());
  EXPECT_TRUE(off->relative);
  EXPECT_EQ(off->Resolve(1000), 1000 + 1'500'000'000);
  EXPECT_EQ(ParseTimeArg("+0", "--to")->Resolve(7), 7);
}

TEST(TimeArg, BadTimesNameTheFlag) {
  for (const char* bad : {"", "2025-13-01T00:00:00Z", "2025-02-30T00:00Z", "yesterday",
                          "2025-11-25T11:38:01.Z", "+fast", "-5"}) {
    auto r = ParseTimeArg(bad, "--from");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message().find("--from"), std::string::npos) << r.error().message();
  }
}

// A bare number is nanoseconds; epoch seconds (1795763715) used to select 1970-01-01T00:00:01.8Z
// silently. Refused, with the unit it looks like and the forms that mean it.
TEST(TimeArg, EpochSecondsMillisecondsAndMicrosecondsAreRefusedWithTheFix) {
  struct Case {
    const char* text;
    const char* unit;
    const char* ns;
  };
  for (const Case& c : {Case{"1795763715", "seconds", "1795763715000000000"},
                        Case{"1795763715123", "milliseconds", "1795763715123000000"},
                        Case{"1795763715123456", "microseconds", "1795763715123456000"}}) {
    auto r = ParseTimeArg(c.text, "--from");
    ASSERT_FALSE(r.ok()) << c.text;
    const std::string& m = r.error().message();
    EXPECT_NE(m.find("--from"), std::string::npos) << m;
    EXPECT_NE(m.find(std::string("looks like ") + c.unit), std::string::npos) << m;
    EXPECT_NE(m.find(c.ns), std::string::npos) << m;
    EXPECT_NE(m.find("2026-11-27T"), std::string::npos) << m;  // the ISO form of that instant
  }
  EXPECT_TRUE(ParseTimeArg("0", "--from").ok());  // the epoch itself: before everything
  EXPECT_TRUE(ParseTimeArg("100000000000000000", "--from").ok());  // 1973-03-03 in ns
}

// 64-bit nanoseconds since 1970 hold 1677-09-21 to 2262-04-11: a year past them used to wrap
// (9999 became 1816) and select a window nobody asked for.
TEST(TimeArg, TimesOutsideWhatNanosecondsHoldAreRefused) {
  for (const char* far : {"9999-01-01T00:00:00Z", "2262-04-12T00:00:00Z", "1677-09-21T00:12:43Z",
                          "0001-01-01T00:00:00Z", "2262-04-11T23:47:16.854775808Z"}) {
    auto r = ParseTimeArg(far, "--until");
    ASSERT_FALSE(r.ok()) << far << " -> " << FormatUtc(r->ns);
    EXPECT_NE(r.error().message().find("--until"), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find(far), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find("outside the times this can hold"), std::string::npos)
        << r.error().message();
  }
  // The first and the last nanosecond still are times.
  EXPECT_EQ(ParseUtc("2262-04-11T23:47:16.854775807Z").value(), INT64_MAX);
  EXPECT_EQ(ParseUtc("1677-09-21T00:12:43.145224192Z").value(), INT64_MIN);
  EXPECT_EQ(ParseUtc(FormatUtc(INT64_MIN)).value(), INT64_MIN);
  EXPECT_EQ(ParseUtc("2261-12-31T00:00:00Z").value(), 9'214'560'000'000'000'000);
  // An offset past the end resolves to the end, not to 1677.
  auto off = ParseTimeArg("+2000000000s", "--to");
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->Resolve(9'000'000'000'000'000'000), INT64_MAX);
}

TEST(FormatUtc, RoundTripsWithNanoseconds) {
  EXPECT_EQ(FormatUtc(1'764'070'681'000'000'007), "2025-11-25T11:38:01.000000007Z");
  EXPECT_EQ(ParseUtc(FormatUtc(1'764'070'681'123'456'789)).value(), 1'764'070'681'123'456'789);
  EXPECT_EQ(FormatUtc(0), "1970-01-01T00:00:00.000000000Z");
}

}  // namespace
}  // namespace rs
