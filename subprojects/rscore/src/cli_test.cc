#include "rscore/cli.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

namespace rs::cli {
namespace {

TEST(NaturalLess, NumbersInNamesCompareAsNumbers) {
  std::vector<std::string> v = {"node60", "node7", "node6", "node10", "gpu-a2", "gpu-a10",
                                "node007", "node", "node6b", "node6a"};
  std::sort(v.begin(), v.end(), [](const std::string& a, const std::string& b) {
    return NaturalLess(a, b);
  });
  EXPECT_EQ(v, (std::vector<std::string>{"gpu-a2", "gpu-a10", "node", "node6", "node6a",
                                         "node6b", "node7", "node007", "node10", "node60"}));
}

TEST(RankRanges, RunsOfConsecutiveRanks) {
  EXPECT_EQ(RankRanges({}), "");
  EXPECT_EQ(RankRanges({3}), "3");
  EXPECT_EQ(RankRanges({0, 1, 2, 5, 7, 8}), "0-2, 5, 7-8");
  EXPECT_EQ(RankRanges({4, 6}), "4, 6");
}

TEST(NaturalLess, IsAStrictOrder) {
  EXPECT_FALSE(NaturalLess("node1", "node1"));
  EXPECT_TRUE(NaturalLess("node1", "node01"));  // equal numbers: the shorter spelling first
  EXPECT_FALSE(NaturalLess("node01", "node1"));
  EXPECT_TRUE(NaturalLess("n99999999999999999999998", "n99999999999999999999999"));
  EXPECT_TRUE(NaturalLess("a", "b"));
  EXPECT_TRUE(NaturalLess("", "a"));
}

TEST(FormatElapsed, MillisecondsThenSeconds) {
  EXPECT_EQ(FormatElapsed(850'000'000), "850 ms");
  EXPECT_EQ(FormatElapsed(1'234'000'000), "1.23 s");
}

TEST(WithHelpHint, OneFormForEveryTool) {
  EXPECT_EQ(WithHelpHint("unknown option '--x'", "rankscope-merge"),
            "unknown option '--x' (see 'rankscope-merge --help')");
  EXPECT_EQ(WithHelpHint("expected INPUT", "rankscope-analyze query"),
            "expected INPUT (see 'rankscope-analyze query --help')");
}

TEST(WroteLine, NamesTheOutputWhatAndTheElapsedTime) {
  EXPECT_EQ(WroteLine("standard output", "12 rows", 850'000'000),
            "wrote standard output: 12 rows in 850 ms");
  EXPECT_EQ(WroteLine("r.json", "json report, 10 bytes", 1'234'000'000),
            "wrote r.json: json report, 10 bytes in 1.23 s");
}

}  // namespace
}  // namespace rs::cli
