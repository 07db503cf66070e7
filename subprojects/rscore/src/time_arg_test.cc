#include "rscore/time_arg.h"

#include <gtest/gtest.h>

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

TEST(FormatUtc, RoundTripsWithNanoseconds) {
  EXPECT_EQ(FormatUtc(1'764'070'681'000'000'007), "2025-11-25T11:38:01.000000007Z");
  EXPECT_EQ(ParseUtc(FormatUtc(1'764'070'681'123'456'789)).value(), 1'764'070'681'123'456'789);
  EXPECT_EQ(FormatUtc(0), "1970-01-01T00:00:00.000000000Z");
}

}  // namespace
}  // namespace rs
