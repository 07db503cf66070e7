// Node-level resource findings (causes.h): slow block I/O of a node's ranks, a CPU-starved
// node by its ranks' run-queue share and who had the CPU meanwhile, and a retransmitting node
// explained by its own resources. The per-window causes of a late rank are in causes.cc.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "analyzer/causes.h"
#include "analyzer/report_format.h"

namespace rs::analyzer {
namespace {

// A node's requests stand out at this many times the other nodes' mean latency, and by at least
// kIoMinExcessNs (a memory-backed or NVMe disk answers in tens of microseconds), over at least
// kIoMinRequests requests.
constexpr int64_t kIoFactor = 3;
constexpr int64_t kIoMinExcessNs = 1'000'000;
constexpr int64_t kIoMinRequests = 5;
// Processes named as taking a finding's CPUs.
constexpr size_t kCompetitorsListed = 8;

}  // namespace

IoCandidate AttributeBlockLatency(const SideEvents& side, const CollectiveData& data,
                                  const std::vector<ArrivalStats>& node_stats) {
  IoCandidate c;
  // Each rank's span from its first to its last collective: requests issued there delay its
  // next entry (start-up writes of data files and checkpoints at exit do not).
  std::vector<int64_t> first(data.participants.size(), -1), last(data.participants.size(), -1);
  for (const NcclCall& k : data.calls) {
    int64_t& f = first[k.participant];
    if (f < 0 || k.ts < f) f = k.ts;
    last[k.participant] = std::max(last[k.participant], k.ts);
  }
  struct Sum {
    int64_t n = 0, ns = 0;
  };
  std::map<std::string, Sum> by_node;
  for (size_t p = 0; p < data.participants.size(); ++p) {
    const Participant& who = data.participants[p];
    Sum& sum = by_node[who.node];
    auto it = side.rank_requests.find({who.node, who.pid});
    if (it == side.rank_requests.end() || first[p] < 0) continue;
    for (const BlockRequest& r : it->second) {
      if (r.ts < first[p] || r.ts > last[p]) continue;
      ++sum.n;
      sum.ns += r.dur;
    }
  }
  std::string best;
  for (const auto& [node, sum] : by_node) {
    if (sum.n < kIoMinRequests) continue;
    if (best.empty() || sum.ns / sum.n > by_node[best].ns / by_node[best].n) best = node;
  }
  if (best.empty()) return c;
  std::vector<int64_t> others;
  for (const auto& [node, sum] : by_node) {
    if (node != best && sum.n > 0) others.push_back(sum.ns / sum.n);
  }
  if (others.empty()) return c;  // one node: nothing to compare with
  int64_t mean = by_node[best].ns / by_node[best].n, rest = Quantile(others, 0.5);
  if (mean < kIoFactor * rest || mean - rest < kIoMinExcessNs) return c;
  c.node = best;
  c.requests = by_node[best].n;
  c.mean_ns = mean;
  c.others_mean_ns = rest;
  c.lateness = NodeLatenessExcess(node_stats, best);
  // Never high: the lateness statistics did not single the node out on their own. The score
  // grows with the share of its requests' time the other nodes do not need.
  double excess_share = 1.0 - static_cast<double>(rest) / static_cast<double>(mean);
  c.confidence = c.lateness.later() ? Confidence::kMedium : Confidence::kLow;
  c.score = TierScore(ScoreBasis::kNodeResource, c.confidence, excess_share);
  return c;
}

Straggler IoStraggler(const IoCandidate& c) {
  Straggler s;
  s.node = c.node;
  s.confidence = c.confidence;
  s.confidence_score = c.score;
  s.basis =
      "block request issue/complete tracepoints of the ranks' own processes, between their "
      "first and last collective; lateness from " +
      c.lateness_basis;
  Cause cause;
  cause.kind = "io";
  cause.score = std::min(1.0, 1.0 - static_cast<double>(c.others_mean_ns) /
                                        static_cast<double>(std::max<int64_t>(1, c.mean_ns)));
  cause.summary = "block requests of its ranks took " + FormatNs(c.mean_ns) + " on average (" +
                  std::to_string(c.requests) + " requests) vs " + FormatNs(c.others_mean_ns) +
                  " on the other nodes";
  cause.remediation = "stage the training data on " + c.node +
                      "'s local disk or in memory, or check that disk (iostat -x, smartctl) and "
                      "what else writes to it";
  cause.values = {{"requests", static_cast<double>(c.requests)},
                  {"mean_request_ns", static_cast<double>(c.mean_ns)},
                  {"others_mean_request_ns", static_cast<double>(c.others_mean_ns)}};
  s.cause = cause.kind;
  s.shape = "host_bound";  // block I/O of its hosts' own processes
  s.summary = c.node + ": its ranks' data reads are slow (" + FormatNs(c.mean_ns) + " vs " +
              FormatNs(c.others_mean_ns) + " elsewhere); " + LatenessPhrase(c.lateness);
  s.causes.push_back(std::move(cause));
  Evidence e;
  e.kind = "block_latency";
  e.summary = s.summary;
  e.values = {{"requests", static_cast<double>(c.requests)},
              {"mean_request_ns", static_cast<double>(c.mean_ns)},
              {"others_mean_request_ns", static_cast<double>(c.others_mean_ns)},
              {"lateness_excess_ns", static_cast<double>(c.lateness.excess_ns)},
              {"lateness_noise_ns", static_cast<double>(c.lateness.noise_ns)}};
  s.evidence.push_back(std::move(e));
  return s;
}

std::map<std::string, RunqShare> NodeRunqShares(const SideEvents& side,
                                                const CollectiveData& data) {
  std::vector<int64_t> first(data.participants.size(), -1), last(data.participants.size(), -1);
  for (const NcclCall& k : data.calls) {
    int64_t& f = first[k.participant];
    if (f < 0 || k.ts < f) f = k.ts;
    last[k.participant] = std::max(last[k.participant], k.ts);
  }
  std::map<std::string, std::vector<double>> shares;
  for (size_t p = 0; p < data.participants.size(); ++p) {
    const Participant& who = data.participants[p];
    if (first[p] < 0 || last[p] <= first[p]) continue;
    int64_t waited = 0;
    auto it = side.runq.find({who.node, who.pid});
    if (it != side.runq.end()) {
      for (const RunqWait& w : it->second) {
        int64_t o = std::min(last[p], w.end) - std::max(first[p], w.start);
        if (o > 0 && !w.by_co_located_job) waited += o;
      }
    }
    shares[who.node].push_back(static_cast<double>(waited) /
                               static_cast<double>(last[p] - first[p]));
  }
  auto mean = [](const std::vector<double>& v) {
    double t = 0;
    for (double x : v) t += x;
    return v.empty() ? 0 : t / static_cast<double>(v.size());
  };
  // Every node's mean, sorted once: each node's "others" are the list without it (MedianOf of
  // the rest, found by index: N log N for N nodes, not N^2).
  std::map<std::string, RunqShare> out;
  std::vector<double> sorted;
  for (const auto& [n, v] : shares) {
    out[n].share = mean(v);
    sorted.push_back(out[n].share);
  }
  std::sort(sorted.begin(), sorted.end());
  for (auto& [n, r] : out) {
    if (sorted.size() < 2) break;
    const size_t skip = static_cast<size_t>(
        std::lower_bound(sorted.begin(), sorted.end(), r.share) - sorted.begin());
    const size_t mid = (sorted.size() - 1) / 2;  // MedianOf: the element at size / 2
    r.others_share = sorted[mid < skip ? mid : mid + 1];
    r.stands_out = r.share >= 1.3 * r.others_share && r.share - r.others_share >= 0.05;
  }
  return out;
}

RunqShare NodeRunqShare(const SideEvents& side, const CollectiveData& data,
                        const std::string& node) {
  const std::map<std::string, RunqShare> all = NodeRunqShares(side, data);
  auto it = all.find(node);
  return it == all.end() ? RunqShare{} : it->second;
}

NodeExcess NodeLatenessExcess(const std::vector<ArrivalStats>& node_stats,
                              const std::string& node) {
  for (const ArrivalStats& a : node_stats) {
    if (a.node == node) return a.paired;
  }
  return {};
}

std::vector<Competitor> CpuCompetitors(const SideEvents& side, const CollectiveData& data,
                                       const std::string& node, const std::vector<int64_t>& pids) {
  std::map<std::pair<int32_t, int64_t>, int64_t> ran;  // (comm, pid) -> ns
  for (int64_t pid : pids) {
    auto p = data.participant_index.find({node, pid});
    auto it = side.runq.find({node, pid});
    if (p == data.participant_index.end() || it == side.runq.end()) continue;
    int64_t first = -1, last = -1;
    for (const NcclCall& k : data.calls) {
      if (k.participant != p->second) continue;
      if (first < 0 || k.ts < first) first = k.ts;
      last = std::max(last, k.ts);
    }
    for (const RunqWait& w : it->second) {
      int64_t o = std::min(last, w.end) - std::max(first, w.start);
      if (o > 0) ran[{w.other_comm, w.other_pid}] += o;
    }
  }
  // The job's own ranks (of any node: nodes that share a kernel see each other's) wait for
  // each other's CPUs too: they are no competitor; what else ran is.
  std::set<int64_t> job;
  for (const Participant& p : data.participants) job.insert(p.pid);
  std::vector<Competitor> out;
  for (const auto& [who, ns] : ran) {
    if (std::find(pids.begin(), pids.end(), who.second) != pids.end()) continue;
    if (job.count(who.second)) continue;
    out.push_back({side.comms[who.first], who.second, ns});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Competitor& a, const Competitor& b) { return a.ran_ns > b.ran_ns; });
  if (out.size() > kCompetitorsListed) out.resize(kCompetitorsListed);
  return out;
}

Cause CpuStarvationCause(const std::string& node, const RunqShare& cpu) {
  Cause c;
  c.kind = "cpu_contention";
  c.score = std::min(1.0, (cpu.share - cpu.others_share) / std::max(cpu.share, 1e-9));
  c.summary = "its ranks waited for a CPU " + FormatPercent(cpu.share) +
              " of the time between their first and last collective (other nodes' ranks " +
              FormatPercent(cpu.others_share) + ")";
  c.remediation = "find what else runs on " + node +
                  "'s CPUs (top, pidstat); pin the training ranks to separate cores";
  c.values = {{"runq_share", cpu.share}, {"others_runq_share", cpu.others_share}};
  return c;
}

Straggler CpuStraggler(const std::string& node, const RunqShare& cpu,
                       const std::vector<ArrivalStats>& node_stats,
                       const std::string& lateness_basis) {
  Straggler s;
  s.node = node;
  s.causes.push_back(CpuStarvationCause(node, cpu));
  NodeExcess excess = NodeLatenessExcess(node_stats, node);
  // Never high: the lateness statistics did not single the node out on their own.
  double share = s.causes.front().score;
  s.confidence = excess.later() ? Confidence::kMedium : Confidence::kLow;
  s.confidence_score = TierScore(ScoreBasis::kNodeResource, s.confidence, share);
  s.basis =
      "run-queue latency (sched tracepoints) of the ranks' own processes between their "
      "first and last collective; lateness from " +
      lateness_basis;
  s.cause = "cpu_contention";
  s.shape = "host_bound";  // its hosts' CPUs
  s.summary = node + ": its ranks are starved of CPU (" + s.causes.front().summary + "); " +
              LatenessPhrase(excess);
  Evidence e;
  e.kind = "runq_share";
  e.summary = s.causes.front().summary;
  e.values = {{"runq_share", cpu.share},
              {"others_runq_share", cpu.others_share},
              {"lateness_excess_ns", static_cast<double>(excess.excess_ns)},
              {"lateness_noise_ns", static_cast<double>(excess.noise_ns)}};
  s.evidence.push_back(std::move(e));
  return s;
}

void ExplainByNodeResources(Straggler& s, const IoCandidate& io, const RunqShare& cpu,
                            bool slowed) {
  Cause c;
  if (io.node == s.node) {
    c = IoStraggler(io).causes.front();
    c.summary += "; the retransmits on its connections explain less";
    if (io.score > s.confidence_score) s.confidence = io.confidence, s.confidence_score = io.score;
  } else if (cpu.stands_out) {
    c = CpuStarvationCause(s.node, cpu);
    c.summary +=
        "; a CPU-starved node sends its ACKs and segments late, so the retransmits on "
        "its connections are likely a consequence (expired retransmission timers), not packet "
        "loss";
  } else {
    return;
  }
  // The retransmits are the resource's consequence: it inherits the slowdown they measured,
  // and the network keeps only the share the resource leaves unexplained.
  double explained = c.score;
  for (Cause& n : s.causes) {
    if (n.kind != "network") continue;
    c.score = std::max(c.score, n.score);
    n.score *= 1.0 - explained;
  }
  s.causes.insert(s.causes.begin(), std::move(c));
  std::stable_sort(s.causes.begin(), s.causes.end(),
                   [](const Cause& a, const Cause& b) { return a.score > b.score; });
  s.cause = s.causes.front().kind;
  if (s.cause != "network") s.shape = "host_bound";
  s.summary = s.node +
              (slowed ? ": its collectives are slowed" : ": retransmits on its connections") +
              "; top cause " + s.cause + " (" + s.causes.front().summary + ")";
}

}  // namespace rs::analyzer
