#include "analyzer/confidence.h"

#include <gtest/gtest.h>

#include <sstream>

namespace rs::analyzer {
namespace {

constexpr Confidence kAll[] = {Confidence::kUndetermined, Confidence::kLow, Confidence::kMedium,
                               Confidence::kHigh};

TEST(Confidence, TiersAreOrdered) {
  EXPECT_LT(Confidence::kUndetermined, Confidence::kLow);
  EXPECT_LT(Confidence::kLow, Confidence::kMedium);
  EXPECT_LT(Confidence::kMedium, Confidence::kHigh);
}

// The names are what every report format prints and scripts compare against.
TEST(Confidence, NamesRoundTrip) {
  EXPECT_EQ(ConfidenceName(Confidence::kUndetermined), "undetermined");
  EXPECT_EQ(ConfidenceName(Confidence::kLow), "low");
  EXPECT_EQ(ConfidenceName(Confidence::kMedium), "medium");
  EXPECT_EQ(ConfidenceName(Confidence::kHigh), "high");
  for (Confidence c : kAll) EXPECT_EQ(ParseConfidence(ConfidenceName(c)), c);
  EXPECT_EQ(ParseConfidence(""), std::nullopt);
  EXPECT_EQ(ParseConfidence("High"), std::nullopt);
  std::ostringstream o;
  o << Confidence::kMedium;
  EXPECT_EQ(o.str(), "medium");
}

TEST(Confidence, AtLeastMedium) {
  EXPECT_FALSE(AtLeastMedium(Confidence::kUndetermined));
  EXPECT_FALSE(AtLeastMedium(Confidence::kLow));
  EXPECT_TRUE(AtLeastMedium(Confidence::kMedium));
  EXPECT_TRUE(AtLeastMedium(Confidence::kHigh));
}

TEST(Confidence, CapAtLowersOnlyWhatIsAbove) {
  EXPECT_EQ(CapAt(Confidence::kHigh, Confidence::kMedium), Confidence::kMedium);
  EXPECT_EQ(CapAt(Confidence::kMedium, Confidence::kMedium), Confidence::kMedium);
  EXPECT_EQ(CapAt(Confidence::kLow, Confidence::kMedium), Confidence::kLow);
  EXPECT_EQ(CapAt(Confidence::kHigh, Confidence::kLow), Confidence::kLow);
  EXPECT_EQ(CapAt(Confidence::kUndetermined, Confidence::kLow), Confidence::kUndetermined);
}

// A band's ends: the score at share 0 and at share 1. The scores order the findings of a report,
// so a changed band changes reports.
struct BandEnds {
  ScoreBasis basis;
  Confidence tier;
  double at0, at1;
};

constexpr BandEnds kEnds[] = {
    {ScoreBasis::kLateness, Confidence::kUndetermined, 0.0, 0.1},
    {ScoreBasis::kLateness, Confidence::kLow, 0.2, 0.4},
    {ScoreBasis::kLateness, Confidence::kMedium, 0.4, 0.7},
    {ScoreBasis::kLateness, Confidence::kHigh, 0.7, 1.0},
    {ScoreBasis::kNetwork, Confidence::kLow, 0.1, 0.3},
    {ScoreBasis::kNetwork, Confidence::kMedium, 0.4, 0.7},
    {ScoreBasis::kNetwork, Confidence::kHigh, 0.7, 1.0},
    {ScoreBasis::kNetworkOneNode, Confidence::kLow, 0.1, 0.2},
    {ScoreBasis::kNodeResource, Confidence::kLow, 0.25, 0.45},
    {ScoreBasis::kNodeResource, Confidence::kMedium, 0.4, 0.7},
    {ScoreBasis::kHang, Confidence::kLow, 0.3, 0.3},
    {ScoreBasis::kHang, Confidence::kMedium, 0.65, 0.65},
    {ScoreBasis::kHang, Confidence::kHigh, 1.0, 1.0},
};

TEST(Confidence, TierScoreBands) {
  for (const BandEnds& e : kEnds) {
    SCOPED_TRACE(::testing::Message() << "basis " << static_cast<int>(e.basis) << ", " << e.tier);
    EXPECT_DOUBLE_EQ(TierScore(e.basis, e.tier, 0.0), e.at0);
    EXPECT_DOUBLE_EQ(TierScore(e.basis, e.tier, 1.0), e.at1);
  }
}

// The tiers a basis never gives have no band: asking for one is a bug in the caller.
TEST(ConfidenceDeathTest, TierWithoutBand) {
  EXPECT_DEATH(TierScore(ScoreBasis::kNodeResource, Confidence::kHigh, 0.5), "CHECK");
  EXPECT_DEATH(TierScore(ScoreBasis::kHang, Confidence::kUndetermined, 0.0), "CHECK");
}

}  // namespace
}  // namespace rs::analyzer
