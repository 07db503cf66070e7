#include "analyzer/confidence.h"

#include <array>
#include <cstddef>
#include <ostream>

#include "rscore/result.h"

namespace rs::analyzer {
namespace {

constexpr std::array<Confidence, 4> kTiers = {Confidence::kUndetermined, Confidence::kLow,
                                              Confidence::kMedium, Confidence::kHigh};

// score = floor + width * share.
struct Band {
  double floor;
  double width;
};

// One row per ScoreBasis (in its order), one column per tier: undetermined, low, medium, high.
// Empty where the basis never gives the tier.
using Bands = std::array<std::optional<Band>, kTiers.size()>;
constexpr std::optional<Band> kNever = std::nullopt;
constexpr std::array<Bands, 5> kBands = {{
    // kLateness: undetermined where the lateness is inside the clock error bound.
    {Band{0.0, 0.1}, Band{0.2, 0.2}, Band{0.4, 0.3}, Band{0.7, 0.3}},
    // kNetwork
    {kNever, Band{0.1, 0.2}, Band{0.4, 0.3}, Band{0.7, 0.3}},
    // kNetworkOneNode
    {kNever, Band{0.1, 0.1}, kNever, kNever},
    // kNodeResource: never high, the lateness statistics did not single the node out alone.
    {kNever, Band{0.25, 0.2}, Band{0.4, 0.3}, kNever},
    // kHang: medium where device-side state was not seen; low where the evidence cannot
    // name the culprit's state (its Flight Recorder dump missing, or the recording and the
    // dumps disagree: fr_hang.h).
    {kNever, Band{0.3, 0.0}, Band{0.65, 0.0}, Band{1.0, 0.0}},
}};
static_assert(kBands.size() == static_cast<size_t>(ScoreBasis::kHang) + 1,
              "one row of bands per ScoreBasis");

}  // namespace

std::string ConfidenceName(Confidence c) {
  switch (c) {
    case Confidence::kUndetermined:
      return "undetermined";
    case Confidence::kLow:
      return "low";
    case Confidence::kMedium:
      return "medium";
    case Confidence::kHigh:
      return "high";
  }
  CHECK(false);
  return "";
}

std::optional<Confidence> ParseConfidence(std::string_view name) {
  for (Confidence c : kTiers) {
    if (ConfidenceName(c) == name) return c;
  }
  return std::nullopt;
}

std::ostream& operator<<(std::ostream& o, Confidence c) { return o << ConfidenceName(c); }

double TierScore(ScoreBasis basis, Confidence c, double share) {
  const std::optional<Band>& band = kBands[static_cast<size_t>(basis)][static_cast<size_t>(c)];
  CHECK(band.has_value());
  return band->floor + band->width * share;
}

}  // namespace rs::analyzer
