#include "analyzer/fr_lateness.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

namespace rs::analyzer {
namespace {

int64_t Median(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

using Key = std::pair<size_t, int64_t>;  // (group, seq)

struct Arrival {
  int64_t created_ns = 0;
  std::optional<int64_t> duration_ns;  // timed and completed
  int64_t rank = 0;
};

// One collective's members compared: who the others waited for, and how long each waited.
struct Comparison {
  std::optional<int64_t> last;  // the member late by at least the floor
  int64_t gap_ns = 0;           // ... by this much, behind the others' median
  bool by_duration = false;
  std::map<int64_t, int64_t> waited;  // member -> how long it waited for `last`
};

Comparison Compare(std::vector<Arrival> a, int64_t floor_ns) {
  Comparison c;
  c.by_duration = std::all_of(a.begin(), a.end(), [](const Arrival& x) { return x.duration_ns; });
  // Sorted so that the member the others waited for is the last: by entry time, or by device
  // duration, longest first. A key's difference to the last one's is the time waited for it.
  auto key_of = [&](const Arrival& x) { return c.by_duration ? -*x.duration_ns : x.created_ns; };
  std::sort(a.begin(), a.end(),
            [&](const Arrival& x, const Arrival& y) { return key_of(x) < key_of(y); });
  std::vector<int64_t> others;
  for (size_t i = 0; i + 1 < a.size(); ++i) others.push_back(key_of(a[i]));
  const int64_t gap = key_of(a.back()) - Median(others);
  if (gap < (c.by_duration ? kAlignedFloorNs : floor_ns)) return c;
  c.last = a.back().rank;
  c.gap_ns = gap;
  for (size_t i = 0; i + 1 < a.size(); ++i) c.waited[a[i].rank] = key_of(a.back()) - key_of(a[i]);
  return c;
}

// Whose lateness a late entry is (the root, fr_lateness.h): the rank's own unless it waited
// just before, in its previous collective, for all of this lateness but less than the floor.
class Roots {
 public:
  Roots(const std::map<Key, Comparison>& compared, const std::map<int64_t, std::vector<Key>>& order,
        int64_t floor_ns)
      : compared_(compared), floor_ns_(floor_ns) {
    for (const auto& [rank, keys] : order) {
      for (size_t i = 1; i < keys.size(); ++i) previous_[{rank, keys[i]}] = keys[i - 1];
    }
  }

  // `rank` is the late member of `key`.
  int64_t Of(int64_t rank, const Key& key, int depth = 0) {
    if (auto it = memo_.find({rank, key}); it != memo_.end()) return it->second;
    int64_t root = rank;
    auto prev = previous_.find({rank, key});
    auto before = prev == previous_.end() ? compared_.end() : compared_.find(prev->second);
    if (depth < kMaxDepth && before != compared_.end() && before->second.last) {
      const Comparison& p = before->second;
      const Comparison& here = compared_.at(key);
      // What is left of this lateness after that delay is under the floor (noise) or not.
      const int64_t floor = here.by_duration ? kAlignedFloorNs : floor_ns_;
      auto carries = [&](int64_t delay_ns) { return here.gap_ns - delay_ns < floor; };
      if (*p.last == rank) {
        // Late there too: this lateness carries that one's.
        if (carries(p.gap_ns)) root = Of(rank, prev->second, depth + 1);
      } else if (auto w = p.waited.find(rank); w != p.waited.end() && carries(w->second)) {
        root = Of(*p.last, prev->second, depth + 1);
      }
    }
    return memo_[{rank, key}] = root;
  }

 private:
  static constexpr int kMaxDepth = 256;
  const std::map<Key, Comparison>& compared_;
  const int64_t floor_ns_;
  std::map<std::pair<int64_t, Key>, Key> previous_;
  std::map<std::pair<int64_t, Key>, int64_t> memo_;
};

}  // namespace

FrLateness FindFrLateness(const wait::Input& in, bool one_clock) {
  FrLateness out;
  out.floor_ns = one_clock ? kAlignedFloorNs : kUnalignedFloorNs;
  std::map<Key, std::vector<Arrival>> arrivals;  // each member's first entry of it
  std::map<int64_t, std::vector<Key>> order;     // rank -> its collectives as it issued them
  for (const wait::Rank& r : in.ranks) {
    if (!r.recorded) continue;
    std::vector<std::pair<int64_t, Key>> issued;
    for (const wait::Op& o : r.ops) {
      if (o.p2p || !rs::Traits(o.op).collective || o.created_ns <= 0) continue;
      std::vector<Arrival>& a = arrivals[{o.group, o.seq}];
      if (std::any_of(a.begin(), a.end(), [&](const Arrival& x) { return x.rank == r.rank; }))
        continue;
      const bool timed = o.duration_ns && o.outcome == wait::Outcome::kCompleted;
      a.push_back(Arrival{o.created_ns, timed ? *o.duration_ns : std::optional<int64_t>(), r.rank});
      issued.emplace_back(o.created_ns, Key{o.group, o.seq});
    }
    std::stable_sort(issued.begin(), issued.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    for (const auto& [t, key] : issued) order[r.rank].push_back(key);
  }
  std::map<Key, Comparison> compared;
  std::map<int64_t, FrLateRank> per;
  for (const auto& [key, a] : arrivals) {
    if (a.size() < 2) continue;
    ++out.collectives;
    for (const Arrival& x : a) {
      per[x.rank].rank = x.rank;
      ++per[x.rank].collectives;
    }
    compared[key] = Compare(a, out.floor_ns);
    out.by_duration += compared[key].by_duration;
  }
  Roots roots(compared, order, out.floor_ns);
  std::map<int64_t, std::vector<int64_t>> behind;
  std::map<int64_t, std::map<int64_t, int64_t>> traced;  // rank -> root -> late entries
  for (const auto& [key, c] : compared) {
    if (!c.last) continue;
    const int64_t root = roots.Of(*c.last, key);
    FrLateRank& late = per[*c.last];
    if (root != *c.last) {
      ++late.inherited;
      ++traced[*c.last][root];
      continue;
    }
    ++late.last;
    late.by_duration += c.by_duration;
    behind[*c.last].push_back(c.gap_ns);
  }
  for (auto& [rank, p] : per) {
    if (p.last >= kMinLateCollectives && 2 * p.last > p.collectives) {
      p.median_behind_ns = Median(behind[rank]);
      out.late.push_back(p);
    } else if (p.inherited >= kMinLateCollectives && 2 * (p.last + p.inherited) > p.collectives) {
      const auto& to = traced[rank];
      const auto top = std::max_element(
          to.begin(), to.end(), [](const auto& x, const auto& y) { return x.second < y.second; });
      out.traced.push_back(FrTracedRank{rank, p.inherited, p.collectives, top->first});
    }
  }
  return out;
}

}  // namespace rs::analyzer
