#include "analyzer/straggler.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "analyzer/clock_bounds.h"
#include "analyzer/device_arrival.h"

namespace rs::analyzer {
namespace {

// A margin alone stands out when it is this many times the others' own spread; backed by a
// persistent last place (z >= kPersistentZ) it needs only to exceed that spread.
constexpr int64_t kNoiseFactor = 3;
constexpr double kPersistentZ = 3.0;
constexpr int64_t kMinCollectives = 3;

int64_t Spread(const ArrivalStats& s) { return s.p90_lateness_ns - s.median_lateness_ns; }

// A node late in only part of each step keeps the others' median lateness, yet its lateness
// paired within each collective (NodeExcess) shows it. Test bed 'slow' with --cuda-graph (4
// nodes x 2 ranks, each step's two all-reduces replayed back to back once both buckets were
// ready): the slow rank was ~100 ms late in the first of each pair and on time in the second;
// its median lateness was 6.26 ms against the others' spreads of ~20 ms and nobody was named,
// while its node's paired excess was 24 ms +- 4.6 ms, the latest node in 53 of 128 (z 4.3).
// Stricter than PairedExcess::later (what a resource finding needs): beyond kPairedErrors
// standard errors and the latest node more often than chance at kPersistentZ, both.
constexpr double kPairedErrors = 4.0;

bool PairedLate(const PairedExcess& e) {
  return e.collectives >= kMinCollectives && e.latest_z >= kPersistentZ &&
         static_cast<double>(e.excess_ns) >
             kPairedErrors * static_cast<double>(std::max<int64_t>(1, e.noise_ns));
}

// The node whose paired excess stands out (the largest), represented by its rank that was the
// latest most often; the whole node where its ranks were the latest about equally often.
LatenessCandidate PairedCandidate(const CollectiveData& data,
                                  const std::vector<ArrivalStats>& stats,
                                  const std::vector<ArrivalStats>& node_stats,
                                  const std::vector<NodeClock>& clocks, bool clock_free,
                                  int64_t most) {
  LatenessCandidate c;
  const ArrivalStats* late = nullptr;
  for (const ArrivalStats& s : node_stats) {
    if (PairedLate(s.paired) && (!late || s.paired.excess_ns > late->paired.excess_ns)) late = &s;
  }
  if (late == nullptr) return c;
  int32_t best = -1;
  int64_t ranks_total = 0, mate_last = 0;
  std::vector<int64_t> others;
  for (size_t p = 0; p < stats.size(); ++p) {
    if (stats[p].collectives < kMinCollectives || stats[p].collectives * 2 < most) continue;
    ++ranks_total;
    const std::string& node = data.participants[p].node;
    if (node != late->node) {
      others.push_back(static_cast<int64_t>(p));
      continue;
    }
    if (best < 0 || stats[p].last_count > stats[best].last_count) {
      if (best >= 0) mate_last = std::max(mate_last, stats[best].last_count);
      best = static_cast<int32_t>(p);
    } else {
      mate_last = std::max(mate_last, stats[p].last_count);
    }
  }
  if (best < 0 || others.empty()) return c;
  const ArrivalStats& b = stats[best];
  const int64_t on_node = ranks_total - static_cast<int64_t>(others.size());
  c.participant = best;
  c.node_level = on_node > 1 && 2 * mate_last >= b.last_count;
  c.collectives = c.node_level ? late->collectives : b.collectives;
  c.last_count = c.node_level ? late->last_count : b.last_count;
  c.chance = static_cast<double>(c.node_level ? on_node : 1) / static_cast<double>(ranks_total);
  c.z = BinomialZ(c.last_count, c.collectives, c.chance);
  c.margin_ns = late->paired.excess_ns;
  c.noise_ns = std::max<int64_t>(1, late->paired.noise_ns);
  const int64_t device = clock_free ? 0 : DeviceBound(data, best);
  for (int64_t p : others) {
    c.bound_ns =
        std::max(c.bound_ns, PairBound(clocks, late->node, data.participants[p].node) + device);
  }
  if (c.node_level) {
    for (size_t p = 0; p < stats.size(); ++p) {
      if (data.participants[p].node == late->node && data.participants[p].rank) {
        c.node_ranks.push_back(*data.participants[p].rank);
      }
    }
  }
  c.paired = true;
  c.determined = c.margin_ns > c.bound_ns;
  RateCandidate(c);
  return c;
}

}  // namespace

double BinomialZ(int64_t hits, int64_t n, double p) {
  if (n <= 0 || p <= 0 || p >= 1) return 0;
  double mean = static_cast<double>(n) * p;
  return (static_cast<double>(hits) - mean) / std::sqrt(mean * (1 - p));
}

LatenessCandidate FindLatenessStraggler(const CollectiveData& data,
                                        const std::vector<ArrivalStats>& stats,
                                        const std::vector<ArrivalStats>& node_stats,
                                        const std::vector<NodeClock>& clocks, bool clock_free) {
  LatenessCandidate c;
  int64_t most = 0;
  for (const ArrivalStats& s : stats) most = std::max(most, s.collectives);
  // Only ranks seen in a fair share of the collectives compete (not a late joiner).
  auto competes = [&](size_t p) {
    return stats[p].collectives >= kMinCollectives && stats[p].collectives * 2 >= most;
  };
  int32_t best = -1;
  for (size_t p = 0; p < stats.size(); ++p) {
    if (!competes(p)) continue;
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
  std::vector<size_t> mates;
  int64_t same_node_max = -1, ranks_total = 0;
  for (size_t p = 0; p < stats.size(); ++p) {
    if (!competes(p)) continue;
    ++ranks_total;
    if (static_cast<int32_t>(p) == best) continue;
    int64_t device = clock_free ? 0 : DeviceBound(data, best);
    if (data.participants[p].node == node) {
      same_node_max = std::max(same_node_max, stats[p].median_lateness_ns);
      mates.push_back(p);
      c.mate_bound_ns = std::max(c.mate_bound_ns, device);
    } else {
      spread.push_back(Spread(stats[p]));
      cross.push_back(stats[p].median_lateness_ns);
      c.bound_ns =
          std::max(c.bound_ns, PairBound(clocks, node, data.participants[p].node) + device);
    }
  }
  std::vector<int64_t> mate_spread;
  for (size_t p : mates) mate_spread.push_back(Spread(stats[p]));
  if (spread.empty()) spread = mate_spread;  // one node: its ranks are all there is
  if (spread.empty()) return c;              // a single rank: nobody to be late against
  c.noise_ns = std::max<int64_t>(1, Quantile(spread, 0.5));
  c.margin_ns = cross.empty() ? 0 : b.median_lateness_ns - Quantile(cross, 0.5);
  c.one_node = cross.empty();
  if (same_node_max >= 0) c.same_node_margin_ns = b.median_lateness_ns - same_node_max;
  double rank_z = BinomialZ(b.last_count, b.collectives, 1.0 / ranks_total);
  auto stands_out = [&](int64_t margin, double z) {
    return margin > kNoiseFactor * c.noise_ns || (z >= kPersistentZ && margin > c.noise_ns);
  };
  // Against its node-mates (same clock) the rank itself stands out: a rank-level straggler.
  bool rank_vs_mates = same_node_max >= 0 && stands_out(c.same_node_margin_ns, rank_z);
  bool rank_vs_others = !cross.empty() && stands_out(c.margin_ns, rank_z);
  // Its whole node late alike: the node is the straggler.
  const ArrivalStats* ns = nullptr;
  std::vector<int64_t> other_nodes;
  for (const ArrivalStats& s : node_stats) {
    if (s.node == node)
      ns = &s;
    else if (s.collectives > 0)
      other_nodes.push_back(s.median_lateness_ns);
  }
  double node_z = 0;
  bool node_late = false;
  if (ns && !mates.empty() && !other_nodes.empty()) {
    node_z = BinomialZ(ns->last_count, ns->collectives,
                       static_cast<double>(mates.size() + 1) / ranks_total);
    node_late = stands_out(ns->median_lateness_ns - Quantile(other_nodes, 0.5), node_z);
  }
  if (!rank_vs_mates && !rank_vs_others && !node_late) {
    return PairedCandidate(data, stats, node_stats, clocks, clock_free, most);
  }
  c.participant = best;
  c.node_level = !rank_vs_mates && !mates.empty();
  c.collectives = c.node_level ? ns->collectives : b.collectives;
  c.last_count = c.node_level ? ns->last_count : b.last_count;
  c.chance = c.node_level ? static_cast<double>(mates.size() + 1) / ranks_total : 1.0 / ranks_total;
  c.z = c.node_level ? node_z : rank_z;
  if (c.node_level) {
    std::vector<size_t> all = mates;
    all.push_back(best);
    std::sort(all.begin(), all.end(), [&](size_t x, size_t y) {
      return stats[x].median_lateness_ns > stats[y].median_lateness_ns;
    });
    for (size_t p : all) {
      if (data.participants[p].rank) c.node_ranks.push_back(*data.participants[p].rank);
    }
  }
  // Ranks on one node share a clock: their ordering needs no alignment (only the device
  // conversion bounds, where the arrivals are device starts).
  c.determined =
      (rank_vs_mates && c.same_node_margin_ns > c.mate_bound_ns) || c.margin_ns > c.bound_ns;
  RateCandidate(c);
  return c;
}

void RateCandidate(LatenessCandidate& c) {
  double frac = c.collectives ? static_cast<double>(c.last_count) / c.collectives : 0;
  if (!c.determined) {
    c.confidence = Confidence::kUndetermined;
  } else if (c.z >= 4 && c.collectives >= 5 && (!c.by_waits || c.waits.measured())) {
    c.confidence = Confidence::kHigh;
  } else if (c.z >= 2) {
    c.confidence = Confidence::kMedium;  // also from waits where the z-score would make it high
  } else {
    c.confidence = Confidence::kLow;
  }
  c.score = TierScore(ScoreBasis::kLateness, c.confidence, frac);
}

}  // namespace rs::analyzer
