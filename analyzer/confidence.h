// How sure a finding is: one ordered scale for every analysis, and the score each analysis gives
// a tier. The score orders findings in the report; the tier is what people read.
#pragma once

#include <algorithm>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

namespace rs::analyzer {

// Ordered: a later tier is more sure.
enum class Confidence { kUndetermined, kLow, kMedium, kHigh };

// 'undetermined' | 'low' | 'medium' | 'high': the name in every report format.
std::string ConfidenceName(Confidence c);
// The inverse of ConfidenceName; empty for any other text.
std::optional<Confidence> ParseConfidence(std::string_view name);
// Its name (so that test failures print it too).
std::ostream& operator<<(std::ostream& o, Confidence c);

// Sure enough for a verdict and for --fail-on straggler.
inline bool AtLeastMedium(Confidence c) { return c >= Confidence::kMedium; }

// c, lowered to `ceiling` where it is above it.
inline Confidence CapAt(Confidence c, Confidence ceiling) { return std::min(c, ceiling); }

// What a finding rests on. Each basis scores its tiers in its own bands, so that findings of
// different analyses with the same tier still rank as their evidence does.
enum class ScoreBasis {
  kLateness,        // last arrivals (straggler.cc); share: of the collectives it was last in
  kNetwork,         // retransmits (network.cc); share: of the collectives with its repairs
  kNetworkOneNode,  // ... with one node recorded: nothing to compare its retransmits with
  kNodeResource,    // block latency or run-queue share (causes.cc); share: its excess
  kHang,            // a hang's culprit (hang.cc): no share, the tier alone
};

// The score of tier `c` on `basis` at evidence share 0..1: its band's floor plus the share of
// its width. A tier the basis never gives is a bug (CHECK).
double TierScore(ScoreBasis basis, Confidence c, double share);

}  // namespace rs::analyzer
