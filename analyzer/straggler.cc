#include "straggler.h"

#include <algorithm>

#include "clock_bounds.h"

namespace analyzer {
namespace {

// A margin stands out when it is this many times the other ranks' own spread.
constexpr int64_t kNoiseFactor = 3;
constexpr int64_t kMinCollectives = 3;

}  // namespace

LatenessCandidate FindLatenessStraggler(const CollectiveData& data,
                                        const std::vector<ArrivalStats>& stats,
                                        const std::vector<NodeClock>& clocks) {
  LatenessCandidate c;
  int64_t most = 0;
  for (const ArrivalStats& s : stats) most = std::max(most, s.collectives);
  // Only ranks seen in a fair share of the collectives compete (not a late joiner).
  int32_t best = -1;
  for (size_t p = 0; p < stats.size(); ++p) {
    if (stats[p].collectives < kMinCollectives || stats[p].collectives * 2 < most) continue;
    if (best < 0 || stats[p].median_lateness_ns > stats[best].median_lateness_ns ||
        (stats[p].median_lateness_ns == stats[best].median_lateness_ns &&
         stats[p].last_count > stats[best].last_count)) {
      best = static_cast<int32_t>(p);
    }
  }
  if (best < 0) return c;
  const ArrivalStats& b = stats[best];
  const std::string& node = data.participants[best].node;
  std::vector<int64_t> spread, cross;
  int64_t same_node_max = -1;
  for (size_t p = 0; p < stats.size(); ++p) {
    if (static_cast<int32_t>(p) == best || stats[p].collectives < kMinCollectives) continue;
    spread.push_back(stats[p].p90_lateness_ns - stats[p].median_lateness_ns);
    if (data.participants[p].node == node) {
      same_node_max = std::max(same_node_max, stats[p].median_lateness_ns);
    } else {
      cross.push_back(stats[p].median_lateness_ns);
      c.bound_ns = std::max(c.bound_ns, PairBound(clocks, node, data.participants[p].node));
    }
  }
  if (spread.empty()) return c;  // a single rank: nobody to be late against
  c.noise_ns = std::max<int64_t>(1, Quantile(spread, 0.5));
  c.margin_ns = cross.empty() ? 0 : b.median_lateness_ns - Quantile(cross, 0.5);
  if (same_node_max >= 0) c.same_node_margin_ns = b.median_lateness_ns - same_node_max;
  bool same_node_stands_out = c.same_node_margin_ns > kNoiseFactor * c.noise_ns;
  bool cross_stands_out = c.margin_ns > kNoiseFactor * c.noise_ns;
  if (!same_node_stands_out && !cross_stands_out) return c;
  c.participant = best;
  c.last_fraction = b.collectives ? static_cast<double>(b.last_count) / b.collectives : 0;
  // Ranks on one node share a clock: their ordering needs no alignment.
  c.determined = same_node_stands_out || c.margin_ns > c.bound_ns;
  if (!c.determined) {
    c.confidence = "undetermined";
    c.score = 0.1 * c.last_fraction;
  } else if (c.last_fraction >= 0.5 && b.collectives >= 5) {
    c.confidence = "high";
    c.score = 0.7 + 0.3 * c.last_fraction;
  } else if (c.last_fraction >= 0.25 || b.collectives < 5) {
    c.confidence = "medium";
    c.score = 0.4 + 0.3 * c.last_fraction;
  } else {
    c.confidence = "low";
    c.score = 0.2 + 0.2 * c.last_fraction;
  }
  return c;
}

}  // namespace analyzer
