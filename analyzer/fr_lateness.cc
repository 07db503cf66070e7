#include "fr_lateness.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

namespace analyzer {
namespace {

int64_t Median(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Arrival {
  int64_t created_ns = 0;
  std::optional<int64_t> duration_ns;  // timed and completed
  int64_t rank = 0;
};

}  // namespace

FrLateness FindFrLateness(const wait::Input& in, bool one_clock) {
  FrLateness out;
  out.floor_ns = one_clock ? kAlignedFloorNs : kUnalignedFloorNs;
  // (group, seq) -> each member's first entry of it
  std::map<std::pair<size_t, int64_t>, std::vector<Arrival>> arrivals;
  for (const wait::Rank& r : in.ranks) {
    if (!r.recorded) continue;
    std::map<std::pair<size_t, int64_t>, bool> seen;
    for (const wait::Op& o : r.ops) {
      if (o.p2p || !rs::Traits(o.op).collective || o.created_ns <= 0) continue;
      if (!seen.emplace(std::make_pair(o.group, o.seq), true).second) continue;
      const bool timed = o.duration_ns && o.outcome == wait::Outcome::kCompleted;
      arrivals[{o.group, o.seq}].push_back(
          Arrival{o.created_ns, timed ? *o.duration_ns : std::optional<int64_t>(), r.rank});
    }
  }
  std::map<int64_t, FrLateRank> per;
  std::map<int64_t, std::vector<int64_t>> behind;
  for (auto& [key, a] : arrivals) {
    if (a.size() < 2) continue;
    ++out.collectives;
    for (const Arrival& x : a) {
      per[x.rank].rank = x.rank;
      ++per[x.rank].collectives;
    }
    const bool by_duration =
        std::all_of(a.begin(), a.end(), [](const Arrival& x) { return x.duration_ns; });
    out.by_duration += by_duration;
    // Sorted so that the member the others waited for is the last: by entry time, or by
    // device duration, longest first.
    std::sort(a.begin(), a.end(), [&](const Arrival& x, const Arrival& y) {
      return by_duration ? *x.duration_ns > *y.duration_ns : x.created_ns < y.created_ns;
    });
    auto key_of = [&](const Arrival& x) { return by_duration ? -*x.duration_ns : x.created_ns; };
    std::vector<int64_t> others;
    for (size_t i = 0; i + 1 < a.size(); ++i) others.push_back(key_of(a[i]));
    const int64_t gap = key_of(a.back()) - Median(others);
    if (gap < (by_duration ? kAlignedFloorNs : out.floor_ns)) continue;
    FrLateRank& late = per[a.back().rank];
    ++late.last;
    late.by_duration += by_duration;
    behind[a.back().rank].push_back(gap);
  }
  for (auto& [rank, p] : per) {
    if (p.last < kMinLateCollectives || 2 * p.last <= p.collectives) continue;
    p.median_behind_ns = Median(behind[rank]);
    out.late.push_back(p);
  }
  return out;
}

}  // namespace analyzer
