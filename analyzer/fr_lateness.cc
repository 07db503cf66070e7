#include "fr_lateness.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace analyzer {
namespace {

int64_t Median(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

FrLateness FindFrLateness(const wait::Input& in, bool one_clock) {
  FrLateness out;
  out.floor_ns = one_clock ? kAlignedFloorNs : kUnalignedFloorNs;
  // (group, seq) -> (created, rank) of each member's first entry of it
  std::map<std::pair<size_t, int64_t>, std::vector<std::pair<int64_t, int64_t>>> arrivals;
  for (const wait::Rank& r : in.ranks) {
    if (!r.recorded) continue;
    std::map<std::pair<size_t, int64_t>, bool> seen;
    for (const wait::Op& o : r.ops) {
      if (o.p2p || !rs::Traits(o.op).collective || o.created_ns <= 0) continue;
      if (!seen.emplace(std::make_pair(o.group, o.seq), true).second) continue;
      arrivals[{o.group, o.seq}].emplace_back(o.created_ns, r.rank);
    }
  }
  std::map<int64_t, FrLateRank> per;
  std::map<int64_t, std::vector<int64_t>> behind;
  for (auto& [key, a] : arrivals) {
    if (a.size() < 2) continue;
    ++out.collectives;
    std::sort(a.begin(), a.end());
    for (const auto& [t, rank] : a) {
      per[rank].rank = rank;
      ++per[rank].collectives;
    }
    std::vector<int64_t> others;
    for (size_t i = 0; i + 1 < a.size(); ++i) others.push_back(a[i].first);
    const int64_t gap = a.back().first - Median(others);
    if (gap < out.floor_ns) continue;
    ++per[a.back().second].last;
    behind[a.back().second].push_back(gap);
  }
  for (auto& [rank, p] : per) {
    if (p.last < kMinLateCollectives || 2 * p.last <= p.collectives) continue;
    p.median_behind_ns = Median(behind[rank]);
    out.late.push_back(p);
  }
  return out;
}

}  // namespace analyzer
