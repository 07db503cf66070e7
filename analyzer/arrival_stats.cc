// The arrival statistics over the loaded collectives (collectives.h): per participant, per
// node and per communicator, paired against the others in each collective, with the onset of a
// change; LoadCollectives and the participants are in collectives.cc.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "analyzer/collectives.h"
#include "analyzer/held_index.h"
#include "rscore/cli.h"
#include "rscore/comm_hash.h"

namespace rs::analyzer {

namespace {

// What a rank waited inside a collective, on its own device clock: its barrier wait where every
// rank's kernel measured one, else its device duration (the late rank's is the shortest).
int64_t WaitedInside(const Collective& g, const NcclCall& c) {
  if (g.barrier_basis) return *c.device->barrier_wait_ns;
  return g.done >= 0 ? ComparedDuration(g, c) : -1;
}

// Fewest collectives on either side of an onset, and the change it must show (FindOnset).
constexpr size_t kOnsetMinSide = 8;
constexpr double kOnsetMinT = 4.5;

// A node in one collective: the chance it had to be the latest of the nodes there (1/k among
// k), and whether it alone was.
struct LatestChance {
  double chance = 0;
  bool latest = false;
};

// One participant's (or node's) samples over the compared collectives.
struct Samples {
  std::vector<int64_t> late, host, durs, wait;
  std::vector<int64_t> paired, paired_wait;        // per node: minus the other nodes' median
  std::vector<int64_t> paired_at, paired_wait_at;  // ... the collective's time (first entry)
  std::vector<LatestChance> paired_latest, paired_wait_latest;  // ... the latest of the nodes?
  int64_t last = 0, on_device = 0, wait_last = 0;
};

// The 10 % trimmed mean of v and its standard error (Tukey-McLaughlin: the winsorized sample
// deviation / ((1 - 2 x 0.1) sqrt(n)); 0 under two samples). Trimmed because lateness has heavy
// tails: on the test bed's CPU-starved node (3 nodes x 2 ranks sharing 2 CPUs with another job)
// a few collectives 50-100 ms late made the plain mean's error as large as the shift itself.
std::pair<int64_t, int64_t> MeanAndError(std::vector<int64_t> v) {
  if (v.empty()) return {0, 0};
  std::sort(v.begin(), v.end());
  const size_t n = v.size(), g = n / 10;
  double mean = 0;
  for (size_t i = g; i < n - g; ++i) mean += static_cast<double>(v[i]);
  mean /= static_cast<double>(n - 2 * g);
  if (n < 2) return {static_cast<int64_t>(std::llround(mean)), 0};
  double wmean = 0, sq = 0;
  auto w = [&](size_t i) { return static_cast<double>(v[std::clamp(i, g, n - g - 1)]); };
  for (size_t i = 0; i < n; ++i) wmean += w(i) / static_cast<double>(n);
  for (size_t i = 0; i < n; ++i) sq += (w(i) - wmean) * (w(i) - wmean);
  const double kept = static_cast<double>(n - 2 * g) / static_cast<double>(n);
  double se =
      std::sqrt(sq / static_cast<double>(n - 1)) / (kept * std::sqrt(static_cast<double>(n)));
  return {static_cast<int64_t>(std::llround(mean)), static_cast<int64_t>(std::llround(se))};
}

// The paired excess over the collectives from `since_ns` on; how often the node alone was the
// latest there, against chance.
PairedExcess PairedSince(const std::vector<int64_t>& diffs, const std::vector<int64_t>& at,
                         const std::vector<LatestChance>& latest, int64_t since_ns) {
  PairedExcess out;
  std::vector<int64_t> kept;
  double expected = 0, variance = 0;
  for (size_t i = 0; i < diffs.size(); ++i) {
    if (at[i] < since_ns) continue;
    kept.push_back(diffs[i]);
    expected += latest[i].chance;
    variance += latest[i].chance * (1 - latest[i].chance);
    out.latest += latest[i].latest ? 1 : 0;
  }
  std::tie(out.excess_ns, out.noise_ns) = MeanAndError(kept);
  out.collectives = static_cast<int64_t>(kept.size());
  out.latest_z =
      variance > 0 ? (static_cast<double>(out.latest) - expected) / std::sqrt(variance) : 0;
  return out;
}

NodeExcess Paired(const std::vector<int64_t>& diffs, const std::vector<int64_t>& at,
                  const std::vector<LatestChance>& latest) {
  NodeExcess out;
  static_cast<PairedExcess&>(out) =
      PairedSince(diffs, at, latest, std::numeric_limits<int64_t>::min());
  out.onset = FindOnset(at, diffs);
  if (out.onset) out.onset->since = PairedSince(diffs, at, latest, out.onset->at_ns);
  return out;
}

ArrivalStats Summarize(Samples& m) {
  ArrivalStats s;
  s.collectives = static_cast<int64_t>(m.late.size());
  s.last_count = m.last;
  s.median_lateness_ns = Quantile(m.late, 0.5);
  s.p90_lateness_ns = Quantile(m.late, 0.9);
  s.median_duration_ns = m.durs.empty() ? -1 : Quantile(m.durs, 0.5);
  s.median_host_lateness_ns = Quantile(m.host, 0.5);
  s.host_collectives = static_cast<int64_t>(m.host.size());
  s.device_collectives = m.on_device;
  s.wait_collectives = static_cast<int64_t>(m.wait.size());
  if (!m.wait.empty()) {
    s.median_wait_lateness_ns = Quantile(m.wait, 0.5);
    s.p90_wait_lateness_ns = Quantile(m.wait, 0.9);
  }
  s.wait_last_count = m.wait_last;
  s.paired = Paired(m.paired, m.paired_at, m.paired_latest);
  s.paired_wait = Paired(m.paired_wait, m.paired_wait_at, m.paired_wait_latest);
  return s;
}

// The median of v (the midpoint of the middle two for an even count; Quantile takes the upper
// one, which, against two other nodes, would compare a node with the later of them); v reordered.
int64_t Median(std::vector<int64_t>& v) {
  if (v.size() % 2 == 1 || v.empty()) return Quantile(v, 0.5);
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  const int64_t upper = *mid, lower = *std::max_element(v.begin(), mid);
  return lower + (upper - lower) / 2;
}

// Median of `sorted` (ascending) without its element at `skip`: what Median gives for the rest,
// without copying them (the sorted values are shared by every node of a collective, so pairing
// is N log N per collective, not N^2: 1,024 nodes would be 10^6 per collective).
int64_t MedianWithout(const std::vector<int64_t>& sorted, size_t skip) {
  const size_t m = sorted.size() - 1;
  auto at = [&](size_t j) { return sorted[j < skip ? j : j + 1]; };
  if (m % 2 == 1) return at(m / 2);
  const int64_t upper = at(m / 2), lower = at(m / 2 - 1);
  return lower + (upper - lower) / 2;
}

// Each node's value in `by_node` (-1: not in the collective) minus the median of the other
// nodes' values, appended to its samples' `into` (with the collective's time in `into_at`, and
// in `into_latest` whether it alone was the latest and the chance it had: 1/k among k nodes,
// exact where nodes are alike).
void PairWithOthers(const std::vector<int64_t>& by_node, int64_t at, std::vector<Samples>& m,
                    std::vector<int64_t> Samples::*into, std::vector<int64_t> Samples::*into_at,
                    std::vector<LatestChance> Samples::*into_latest) {
  const auto k = static_cast<double>(
      std::count_if(by_node.begin(), by_node.end(), [](int64_t v) { return v >= 0; }));
  int64_t top = -1, latest = -1;
  bool tie = false;
  for (size_t n = 0; n < by_node.size(); ++n) {
    if (by_node[n] < 0) continue;
    if (by_node[n] > top) {
      top = by_node[n], latest = static_cast<int64_t>(n), tie = false;
    } else if (by_node[n] == top) {
      tie = true;
    }
  }
  std::vector<int64_t> present;
  for (int64_t v : by_node) {
    if (v >= 0) present.push_back(v);
  }
  if (present.size() < 2) return;  // no other node to pair with
  std::sort(present.begin(), present.end());
  for (size_t n = 0; n < by_node.size(); ++n) {
    if (by_node[n] < 0) continue;
    const auto own = std::lower_bound(present.begin(), present.end(), by_node[n]);
    const int64_t others = MedianWithout(present, static_cast<size_t>(own - present.begin()));
    (m[n].*into).push_back(by_node[n] - others);
    (m[n].*into_at).push_back(at);
    (m[n].*into_latest).push_back({1 / k, !tie && latest == static_cast<int64_t>(n)});
  }
}

// One compared collective's samples: per call (calls[g.begin + i]) its own lateness and its
// wait (-1: not timed on every device); who was last and who waited least, where that was its own.
struct GroupSamples {
  std::vector<int64_t> late, wait;
  int32_t last = -1, wait_last = -1;
};

GroupSamples SampleGroup(const CollectiveData& data, const Collective& g, const HeldIndex& held) {
  GroupSamples out;
  // Device durations where every device timed it: the longest, and the unique shortest (its
  // participant waited least; -1 on a tie).
  int64_t longest = -1, shortest = -1;
  int32_t least = -1;
  if (g.barrier_basis || (g.device_basis && g.done >= 0)) {
    for (size_t k = g.begin; k < g.end; ++k) {
      int64_t d = WaitedInside(g, data.calls[k]);
      longest = std::max(longest, d);
      if (shortest < 0 || d < shortest) {
        shortest = d;
        least = data.calls[k].participant;
      } else if (d == shortest) {
        least = -1;
      }
    }
  }
  // Each member's work before it, where its previous call was outside g too (another
  // communicator's, a send or receive): from that call's end to its arrival. Members of a group
  // run the same program between their collectives (one model, one schedule, one batch shape:
  // SPMD), so a member released late by a peer elsewhere still needs about as long as the
  // others to arrive: only what it took beyond the quickest other member is its own (else a
  // waiting rank's ordinary work after the wait counted as lateness). A member whose previous
  // call was g's own last collective is at another point of the program: not compared.
  std::vector<std::optional<int64_t>> holds;
  std::vector<int64_t> work;
  for (size_t k = g.begin; k < g.end; ++k) {
    const NcclCall& c = data.calls[k];
    std::optional<int64_t> h = held.Held(g, c), r = held.Released(g, c);
    holds.push_back(h);
    work.push_back(h && r && *h == *r ? std::max<int64_t>(0, c.arrival - *h) : -1);
  }
  // The quickest and second quickest member's work (-1: none), so that each member's "quickest
  // other" is found without a pass over the others (N^2 per collective at thousands of ranks).
  int64_t quickest = -1, second = -1;
  size_t quickest_at = work.size();
  for (size_t o = 0; o < work.size(); ++o) {
    if (work[o] < 0) continue;
    if (quickest < 0 || work[o] < quickest) {
      second = quickest;
      quickest = work[o], quickest_at = o;
    } else if (second < 0 || work[o] < second) {
      second = work[o];
    }
  }
  for (size_t k = g.begin; k < g.end; ++k) {
    const NcclCall& c = data.calls[k];
    const std::optional<int64_t>& h = holds[k - g.begin];
    const int64_t others_work = k - g.begin == quickest_at ? second : quickest;  // quickest other
    // Free to arrive: held until h, then (where it came from that call too) the others' work.
    const int64_t own_work = work[k - g.begin];
    const int64_t free = !h ? 0 : own_work >= 0 ? *h + std::max<int64_t>(0, others_work) : *h;
    int64_t plain = c.arrival - g.first_arrival;
    int64_t own =
        h ? std::clamp<int64_t>(c.arrival - std::max(g.first_arrival, free), 0, plain) : plain;
    int64_t wait = longest >= 0 ? longest - WaitedInside(g, c) : -1;
    int64_t own_wait =
        h && wait >= 0 ? std::min(wait, std::max<int64_t>(0, c.arrival - free)) : wait;
    out.late.push_back(own);
    out.wait.push_back(own_wait);
    // Last (or waiting least) only where most of that lateness is its own.
    if (c.participant == g.last && own * 2 > plain) out.last = g.last;
    if (c.participant == least && own_wait * 2 > wait) out.wait_last = least;
  }
  return out;
}

}  // namespace

// The change must reach kOnsetMinT standard errors: the largest of the split statistics of a
// series without any change grows only like sqrt(2 log log n) (Darling-Erdos: about 2.1 for a
// thousand collectives, 2.3 for a million); 4.5 leaves room for lateness's heavy tails
// (winsorized first) and its correlation from one collective to the next. It makes no verdict
// on its own: it dates one (AddOnsets), and the window after it decides whether a resource
// finding's node was later (NodeExcess::later). Test bed 'io' (4 nodes, writers on node2's
// disk from +4.96 s): 4.7 errors, the onset at +4.51 s (4 collectives early).
std::optional<Onset> FindOnset(const std::vector<int64_t>& at, const std::vector<int64_t>& v) {
  const size_t n = v.size();
  const size_t side = std::max(kOnsetMinSide, n / 10);
  if (n != at.size() || n < 2 * side) return std::nullopt;
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return at[a] < at[b]; });
  std::vector<int64_t> sorted = v;
  const int64_t lo = Quantile(sorted, 0.05), hi = Quantile(sorted, 0.95);
  std::vector<double> x(n), sum(n + 1, 0), sq(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    x[i] = static_cast<double>(std::clamp(v[order[i]], lo, hi));
    sum[i + 1] = sum[i] + x[i];
    sq[i + 1] = sq[i] + x[i] * x[i];
  }
  // Mean and sum of squared deviations of x[b, e).
  auto stats = [&](size_t b, size_t e, double* mean, double* ss) {
    const double k = static_cast<double>(e - b);
    *mean = (sum[e] - sum[b]) / k;
    *ss = std::max(0.0, sq[e] - sq[b] - k * *mean * *mean);
  };
  std::optional<Onset> best;
  for (size_t k = side; k + side <= n; ++k) {
    // The two-sample statistic with the variance pooled within the two sides: where the
    // change lies, the split separates the sides best (separate variances would favour a
    // short quiet side, placing the onset early).
    double mb, sb, ma, sa;
    stats(0, k, &mb, &sb);
    stats(k, n, &ma, &sa);
    const double kb = static_cast<double>(k), ka = static_cast<double>(n - k);
    const double se = std::sqrt((sb + sa) / static_cast<double>(n - 2) * (1 / kb + 1 / ka));
    if (se <= 0) continue;
    const double t = (ma - mb) / se;
    if (!best || t > best->t) {
      best = Onset{at[order[k]],
                   static_cast<int64_t>(std::llround(mb)),
                   static_cast<int64_t>(std::llround(ma)),
                   static_cast<int64_t>(k),
                   static_cast<int64_t>(n - k),
                   t,
                   {}};
    }
  }
  // A node that became later: a rise beyond kOnsetMinT errors to a positive excess.
  if (!best || best->t < kOnsetMinT || best->after_ns <= 0) return std::nullopt;
  return best;
}

std::vector<ArrivalStats> ParticipantStats(const CollectiveData& data) {
  size_t n = data.participants.size();
  std::vector<Samples> m(n);
  const HeldIndex held(data);
  for (const Collective& g : data.collectives) {
    if (!g.compared()) continue;
    GroupSamples s = SampleGroup(data, g, held);
    for (size_t k = g.begin; k < g.end; ++k) {
      const NcclCall& c = data.calls[k];
      Samples& mine = m[c.participant];
      mine.late.push_back(s.late[k - g.begin]);
      if (c.seq < kGraphReplaySeqBase) mine.host.push_back(c.ts - g.first_entry);
      if (g.device_basis) ++mine.on_device;
      int64_t d = ComparedDuration(g, c);
      if (d >= 0) mine.durs.push_back(d);
      if (s.wait[k - g.begin] >= 0) mine.wait.push_back(s.wait[k - g.begin]);
    }
    if (s.last >= 0) ++m[s.last].last;
    if (s.wait_last >= 0) ++m[s.wait_last].wait_last;
  }
  std::vector<ArrivalStats> out;
  for (size_t p = 0; p < n; ++p) {
    ArrivalStats s = Summarize(m[p]);
    s.node = data.participants[p].node;
    s.rank = data.participants[p].rank;
    s.pid = data.participants[p].pid;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<ArrivalStats> NodeStats(const CollectiveData& data) {
  std::map<std::string, size_t> idx;
  for (const Participant& p : data.participants) idx.emplace(p.node, 0);
  size_t i = 0;
  for (auto& [node, k] : idx) k = i++;
  std::vector<Samples> m(idx.size());
  std::vector<int64_t> node_late(idx.size()), node_host(idx.size()), node_wait(idx.size());
  const HeldIndex held(data);
  for (const Collective& g : data.collectives) {
    if (!g.compared()) continue;
    GroupSamples s = SampleGroup(data, g, held);
    std::fill(node_late.begin(), node_late.end(), -1);
    std::fill(node_host.begin(), node_host.end(), -1);
    std::fill(node_wait.begin(), node_wait.end(), -1);
    for (size_t k = g.begin; k < g.end; ++k) {
      const NcclCall& c = data.calls[k];
      size_t n = idx[data.participants[c.participant].node];
      node_late[n] = std::max(node_late[n], s.late[k - g.begin]);
      if (c.seq < kGraphReplaySeqBase) node_host[n] = std::max(node_host[n], c.ts - g.first_entry);
      int64_t d = ComparedDuration(g, c);
      if (d >= 0) m[n].durs.push_back(d);
      node_wait[n] = std::max(node_wait[n], s.wait[k - g.begin]);
    }
    PairWithOthers(node_late, g.first_entry, m, &Samples::paired, &Samples::paired_at,
                   &Samples::paired_latest);
    PairWithOthers(node_wait, g.first_entry, m, &Samples::paired_wait, &Samples::paired_wait_at,
                   &Samples::paired_wait_latest);
    for (size_t n = 0; n < idx.size(); ++n) {
      if (node_late[n] < 0) continue;
      m[n].late.push_back(node_late[n]);
      if (node_host[n] >= 0) m[n].host.push_back(node_host[n]);
      if (node_wait[n] >= 0) m[n].wait.push_back(node_wait[n]);
      if (g.device_basis) ++m[n].on_device;
    }
    if (s.last >= 0) ++m[idx[data.participants[s.last].node]].last;
    if (s.wait_last >= 0) ++m[idx[data.participants[s.wait_last].node]].wait_last;
  }
  std::vector<ArrivalStats> out;
  for (auto& [node, n] : idx) {
    ArrivalStats s = Summarize(m[n]);
    s.node = node;
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

// One communicator's samples, per member (participant) on both bases.
struct GroupSamplesBy {
  std::map<int32_t, Samples> late, wait;  // Samples::late: own lateness; ::paired: minus others
  std::vector<int64_t> durs;
  int64_t collectives = 0;
  bool all_waited = true;  // every compared collective timed on every device
};

// Each call's value minus the median of the other calls' values, into its participant's samples.
void PairMembers(const CollectiveData& data, const Collective& g, const std::vector<int64_t>& v,
                 std::map<int32_t, Samples>& into, int32_t last) {
  std::vector<int64_t> others;
  for (size_t i = 0; i < v.size(); ++i) {
    others.clear();
    for (size_t o = 0; o < v.size(); ++o) {
      if (o != i) others.push_back(v[o]);
    }
    Samples& m = into[data.calls[g.begin + i].participant];
    m.late.push_back(v[i]);
    m.paired.push_back(v[i] - Median(others));
  }
  if (last >= 0) ++into[last].last;
}

GroupMember Member(const Participant& who, Samples& m) {
  GroupMember out;
  out.node = who.node;
  out.rank = who.rank;
  out.pid = who.pid;
  out.collectives = static_cast<int64_t>(m.late.size());
  out.last_count = m.last;
  out.median_lateness_ns = Quantile(m.late, 0.5);
  std::tie(out.excess_ns, out.excess_se_ns) = MeanAndError(m.paired);
  return out;
}

}  // namespace

std::vector<GroupView> GroupStats(const CollectiveData& data) {
  std::map<uint64_t, GroupSamplesBy> by_comm;
  const HeldIndex held(data);
  for (const Collective& g : data.collectives) {
    if (!g.compared()) continue;
    GroupSamples s = SampleGroup(data, g, held);
    GroupSamplesBy& b = by_comm[g.comm];
    ++b.collectives;
    const bool waited = std::all_of(s.wait.begin(), s.wait.end(), [](int64_t w) { return w >= 0; });
    b.all_waited = b.all_waited && waited;
    PairMembers(data, g, s.late, b.late, s.last);
    if (waited) PairMembers(data, g, s.wait, b.wait, s.wait_last);
    for (size_t k = g.begin; k < g.end; ++k) {
      int64_t d = ComparedDuration(g, data.calls[k]);
      if (d >= 0) b.durs.push_back(d);
    }
  }
  std::vector<GroupView> out;
  for (auto& [comm, b] : by_comm) {
    GroupView v;
    v.comm = comm;
    v.basis = b.all_waited ? "device_waits" : "arrivals";
    v.collectives = b.collectives;
    v.median_duration_ns = b.durs.empty() ? -1 : Quantile(b.durs, 0.5);
    std::vector<int64_t> ranks;
    for (auto& [p, m] : b.all_waited ? b.wait : b.late) {
      v.members.push_back(Member(data.participants[p], m));
      if (data.participants[p].rank) ranks.push_back(*data.participants[p].rank);
    }
    std::sort(ranks.begin(), ranks.end());
    v.label = "communicator " + rs::HashHex(comm) + " (ranks " + rs::cli::RankRanges(ranks) + ")";
    std::stable_sort(
        v.members.begin(), v.members.end(),
        [](const GroupMember& x, const GroupMember& y) { return x.excess_ns > y.excess_ns; });
    out.push_back(std::move(v));
  }
  return out;
}

// Per rank, over the communicators of the per-group view: where it was the latest member.
std::vector<RankAcrossGroups> AcrossGroups(const std::vector<GroupView>& groups) {
  std::map<std::pair<std::string, int64_t>, RankAcrossGroups> by;
  for (const GroupView& g : groups) {
    for (size_t i = 0; i < g.members.size(); ++i) {
      const GroupMember& m = g.members[i];
      RankAcrossGroups& a = by[{m.node, m.pid}];
      a.node = m.node, a.rank = m.rank, a.pid = m.pid;
      ++a.groups;
      if (i == 0 && m.excess_ns > 0) {
        ++a.latest_in;
        a.excess_total_ns += m.excess_ns * m.collectives;
      }
    }
  }
  std::vector<RankAcrossGroups> out;
  for (auto& [key, a] : by) out.push_back(std::move(a));
  std::stable_sort(out.begin(), out.end(),
                   [](const RankAcrossGroups& x, const RankAcrossGroups& y) {
                     return x.excess_total_ns > y.excess_total_ns;
                   });
  return out;
}

std::vector<ArrivalStats> AsWaitStats(std::vector<ArrivalStats> stats) {
  for (ArrivalStats& s : stats) {
    s.collectives = s.wait_collectives;
    s.device_collectives = s.wait_collectives;
    s.median_lateness_ns = std::max<int64_t>(0, s.median_wait_lateness_ns);
    s.p90_lateness_ns = std::max<int64_t>(0, s.p90_wait_lateness_ns);
    s.last_count = s.wait_last_count;
    s.paired = s.paired_wait;
  }
  return stats;
}

}  // namespace rs::analyzer
