#include "analyzer/causes.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "analyzer/report_format.h"

namespace rs::analyzer {

// How a resource finding's node compares with the others in lateness, for its summary.
std::string LatenessPhrase(const NodeExcess& e) {
  const std::string numbers = FormatNs(e.excess_ns) + " +- " + FormatNs(e.noise_ns) +
                              " later than the other nodes' in the "
                              "same collectives (mean over " +
                              std::to_string(e.collectives) + "; the latest node in " +
                              std::to_string(e.latest) + " of them)";
  if (e.PairedExcess::later()) return "its ranks arrived " + numbers;
  if (e.later_since_onset()) {
    const PairedExcess& a = e.onset->since;
    return "its ranks arrived " + FormatNs(a.excess_ns) + " +- " + FormatNs(a.noise_ns) +
           " later than the other nodes' in the " + std::to_string(a.collectives) +
           " collectives since it became later (the latest node in " + std::to_string(a.latest) +
           " of them); over the whole recording, which dilutes it, " + FormatNs(e.excess_ns) +
           " +- " + FormatNs(e.noise_ns) + " (the latest in " + std::to_string(e.latest) + " of " +
           std::to_string(e.collectives) + ")";
  }
  return "but its ranks arrived " + numbers +
         ", neither beyond three errors nor the latest more often than chance (1 % level): not "
         "shown to delay the job";
}

namespace {

// Evidence-backed causes explaining at least this share leave `compute` at half weight.
constexpr double kEvidenceShare = 0.25;

struct WindowSums {
  int64_t windows = 0;
  int64_t lateness = 0, runq = 0, io = 0, with_retransmits = 0;
  int64_t span = 0;                                              // total length of the windows
  std::map<std::pair<int32_t, int64_t>, int64_t> runq_by_other;  // (comm, pid) -> ns
  double Mean(int64_t v) const { return windows ? static_cast<double>(v) / windows : 0; }
};

class WindowMeter {
 public:
  WindowMeter(const CollectiveData& data, const SideEvents& side) : data_(data), side_(side) {
    call_group_.assign(data.calls.size(), -1);
    for (size_t g = 0; g < data.collectives.size(); ++g) {
      for (size_t k = data.collectives[g].begin; k < data.collectives[g].end; ++k) {
        call_group_[k] = static_cast<int32_t>(g);
      }
    }
    by_participant_.resize(data.participants.size());
    for (size_t k = 0; k < data.calls.size(); ++k) {
      by_participant_[data.calls[k].participant].push_back(k);
    }
    for (auto& v : by_participant_) {
      std::sort(v.begin(), v.end(),
                [&](size_t a, size_t b) { return data.calls[a].ts < data.calls[b].ts; });
    }
    for (const std::string& node : side.nodes) {
      int idx = side.NodeIndex(node);
      std::vector<int64_t>& t = retransmit_times_[node];
      for (const Retransmit& r : side.retransmits) {
        if (r.link_repair() && (r.src == idx || r.dst == idx)) t.push_back(r.ts);
      }
    }
  }

  // Sums over p's windows (before every matched collective); by_other: also sum the waits by
  // the task that had the CPU (for the straggler only).
  WindowSums Measure(int32_t p, bool by_other = false) const {
    WindowSums s;
    const Participant& who = data_.participants[p];
    auto runq_it = side_.runq.find({who.node, who.pid});
    int64_t longest_wait = 0;
    if (runq_it != side_.runq.end()) {
      for (const RunqWait& w : runq_it->second)
        longest_wait = std::max(longest_wait, w.end - w.start);
    }
    auto block_it = side_.block.find(who.node);
    auto rt_it = retransmit_times_.find(who.node);
    const std::vector<size_t>& calls = by_participant_[p];
    for (size_t i = 1; i < calls.size(); ++i) {
      const NcclCall& prev = data_.calls[calls[i - 1]];
      const NcclCall& cur = data_.calls[calls[i]];
      const Collective& g = data_.collectives[call_group_[calls[i]]];
      // A CUDA graph replay's entry is when the graph reached it on the device's stream, no
      // host's: no host window ends there.
      if (!g.matched() || cur.seq >= kGraphReplaySeqBase) continue;
      int64_t a = prev.in_flight() ? prev.ts : prev.ts + prev.dur, b = cur.ts;
      if (b <= a) continue;
      ++s.windows;
      s.span += b - a;
      // Host entry lateness (what its host side can explain). After a call that only
      // enqueued, the lateness of that call carries into this one (nothing waited for the
      // others in between): no more than the window's own length was lost in it.
      int64_t late = cur.ts - g.first_entry;
      if (prev.enqueue) late = std::min(late, b - a);
      s.lateness += late;
      if (runq_it != side_.runq.end()) {
        const std::vector<RunqWait>& waits = runq_it->second;
        auto first = std::lower_bound(waits.begin(), waits.end(), a - longest_wait,
                                      [](const RunqWait& w, int64_t t) { return w.start < t; });
        for (auto w_it = first; w_it != waits.end(); ++w_it) {
          const RunqWait& w = *w_it;
          if (w.start >= b) break;
          if (w.by_co_located_job) continue;  // the job's own work on a shared kernel
          int64_t o = std::min(b, w.end) - std::max(a, w.start);
          if (o <= 0) continue;
          s.runq += o;
          if (by_other) s.runq_by_other[{w.other_comm, w.other_pid}] += o;
        }
      }
      if (block_it != side_.block.end()) s.io += CoveredNs(block_it->second, a, b);
      if (rt_it != retransmit_times_.end()) {
        auto it = std::lower_bound(rt_it->second.begin(), rt_it->second.end(), a);
        if (it != rt_it->second.end() && *it < b) ++s.with_retransmits;
      }
    }
    return s;
  }

 private:
  const CollectiveData& data_;
  const SideEvents& side_;
  std::vector<int32_t> call_group_;
  std::vector<std::vector<size_t>> by_participant_;
  std::map<std::string, std::vector<int64_t>> retransmit_times_;
};

double MedianOf(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct WindowComparison {
  WindowSums mine;                                  // the straggler's windows
  std::vector<double> late, runq, io, rt, rt_rate;  // per other rank: means per window
  double lost = 1, cpu_ns = 0, io_ns = 0;           // its excess per window
  double rt_expected = 0, rt_share = 0;             // windows with retransmits: expected, excess
};

// Its windows against every other rank's, and the excess per window of each measured cause.
// All of its windows, not only those before the collectives it entered last: a window is late
// because something delayed it, so the windows picked by lateness hold more of every delay
// (run-queue waits included) than the others' unpicked ones, even where nothing singles the
// rank out. On the test bed without a fault (3 nodes x 2 ranks on 2 CPUs), the rank of a node
// last in 55 of 64 collectives waited for a CPU 3.1 ms per window above the other ranks' 8.46
// ms over the windows before its 43 last entries, 0.65 ms over all of its windows: the picked
// windows named CPU contention (100% of its lateness) out of scheduling noise. Excess and
// lateness are both averaged over every window, so a cause that delays one collective in ten
// keeps its share of the lateness.
WindowComparison CompareWindows(const CollectiveData& data, int32_t participant,
                                const SideEvents& side) {
  WindowMeter meter(data, side);
  WindowComparison w;
  w.mine = meter.Measure(participant, /*by_other=*/true);
  for (size_t q = 0; q < data.participants.size(); ++q) {
    if (static_cast<int32_t>(q) == participant) continue;
    WindowSums o = meter.Measure(static_cast<int32_t>(q));
    if (o.windows == 0) continue;
    w.late.push_back(o.Mean(o.lateness));
    w.runq.push_back(o.Mean(o.runq));
    w.io.push_back(o.Mean(o.io));
    w.rt.push_back(o.Mean(o.with_retransmits));
    // Retransmits as a rate in time (Poisson): a longer window catches more of them by itself.
    if (o.span > 0) {
      w.rt_rate.push_back(-std::log(1.0 - std::min(0.999, o.Mean(o.with_retransmits))) /
                          o.Mean(o.span));
    }
  }
  w.lost = std::max(1.0, w.mine.Mean(w.mine.lateness) - MedianOf(w.late));
  w.cpu_ns = std::max(0.0, w.mine.Mean(w.mine.runq) - MedianOf(w.runq));
  w.io_ns = std::max(0.0, w.mine.Mean(w.mine.io) - MedianOf(w.io));
  // Share of its windows expected to see a retransmit at the others' rate, given their length.
  w.rt_expected = w.rt_rate.empty()
                      ? MedianOf(w.rt)
                      : 1.0 - std::exp(-MedianOf(w.rt_rate) * w.mine.Mean(w.mine.span));
  w.rt_share = std::max(0.0, w.mine.Mean(w.mine.with_retransmits) - w.rt_expected);
  return w;
}

// CPU contention: the run-queue wait of its process above the other ranks', and who had the CPU.
Cause WindowCpuCause(const WindowComparison& w, const Participant& who, const SideEvents& side) {
  Cause c;
  c.kind = "cpu_contention";
  c.score = std::min(1.0, w.cpu_ns / w.lost);
  // The tasks that had the CPU, by name: total wait, number of pids, busiest pid.
  struct Competitor {
    int64_t ns = 0, top_pid_ns = 0, top_pid = -1;
    int pids = 0;
  };
  std::map<int32_t, Competitor> by_name;
  for (const auto& [other, ns] : w.mine.runq_by_other) {
    Competitor& k = by_name[other.first];
    k.ns += ns;
    ++k.pids;
    if (ns > k.top_pid_ns) k.top_pid_ns = ns, k.top_pid = other.second;
  }
  std::vector<std::pair<int32_t, Competitor>> ranked(by_name.begin(), by_name.end());
  std::sort(ranked.begin(), ranked.end(),
            [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  auto describe = [&](const std::pair<int32_t, Competitor>& k) {
    const std::string& n = side.comms[k.first];
    return "'" + (n.empty() ? std::string("?") : n) + "' (" +
           (k.second.pids == 1 ? "pid " + std::to_string(k.second.top_pid)
                               : std::to_string(k.second.pids) + " pids, busiest " +
                                     std::to_string(k.second.top_pid)) +
           ")";
  };
  c.summary = "run-queue wait of its process: " + FormatNs(static_cast<int64_t>(w.cpu_ns)) +
              " per window above the other ranks' " +
              FormatNs(static_cast<int64_t>(MedianOf(w.runq)));
  for (size_t i = 0; i < ranked.size() && i < 3; ++i) {
    c.summary +=
        (i ? ", " : "; the CPU was taken by ") + describe(ranked[i]) + " " +
        FormatPercent(w.mine.runq ? static_cast<double>(ranked[i].second.ns) / w.mine.runq : 0);
  }
  // The remedy names the busiest task that is not another copy of the training program.
  const std::pair<int32_t, Competitor>* culprit = nullptr;
  for (const auto& k : ranked) {
    if (side.comms[k.first] != who.comm) {
      culprit = &k;
      break;
    }
  }
  c.remediation = culprit == nullptr
                      ? "find what else runs on " + who.node +
                            "'s CPUs (top, pidstat); pin the training ranks to separate cores"
                      : "move or renice " + describe(*culprit) + " on " + who.node +
                            ", or pin the training ranks to cores it does not use";
  int64_t top_pid = culprit ? culprit->second.top_pid : -1;
  int64_t top_ns = culprit ? culprit->second.ns : 0;
  c.values = {{"runq_excess_ns_per_window", w.cpu_ns},
              {"runq_ns_per_window", w.mine.Mean(w.mine.runq)},
              {"others_runq_ns_per_window", MedianOf(w.runq)},
              {"top_competitor_pid", static_cast<double>(top_pid)},
              {"top_competitor_ns", static_cast<double>(top_ns)}};
  return c;
}

// Block I/O in flight on its node during its windows, above the other ranks'.
Cause WindowIoCause(const WindowComparison& w, const Participant& who) {
  Cause c;
  c.kind = "io";
  c.score = std::min(1.0, w.io_ns / w.lost);
  c.summary = "block I/O in flight on " + who.node + ": " +
              FormatNs(static_cast<int64_t>(w.io_ns)) + " per window above the other ranks' " +
              FormatNs(static_cast<int64_t>(MedianOf(w.io)));
  c.remediation = "stage the training data on " + who.node +
                  "'s local disk or in memory, or check that disk (iostat -x, smartctl) and "
                  "what else writes to it";
  c.values = {{"io_excess_ns_per_window", w.io_ns},
              {"io_ns_per_window", w.mine.Mean(w.mine.io)},
              {"others_io_ns_per_window", MedianOf(w.io)}};
  return c;
}

// Retransmits in its windows beyond what the others' rate predicts (a count: half weight).
Cause WindowNetworkCause(const WindowComparison& w, const Participant& who) {
  Cause c;
  c.kind = "network";
  c.score = 0.5 * std::min(1.0, w.rt_share);  // a count, not time: half weight
  c.summary = FormatPercent(w.mine.Mean(w.mine.with_retransmits)) +
              " of its late windows had TCP retransmits touching " + who.node + " (others " +
              FormatPercent(MedianOf(w.rt)) + "; " + FormatPercent(w.rt_expected) +
              " expected at their rate for windows as long as its own)";
  c.remediation = "check the NIC, cable and switch port of " + who.node;
  c.values = {{"windows_with_retransmits_share", w.mine.Mean(w.mine.with_retransmits)},
              {"others_windows_with_retransmits_share", MedianOf(w.rt)},
              {"expected_windows_with_retransmits_share", w.rt_expected}};
  return c;
}

// Its own work: the part of the lost time CPU contention and block I/O leave unexplained
// (halved where another cause has evidence).
Cause WindowComputeCause(const WindowComparison& w, const Participant& who, double explained,
                         bool evidence) {
  Cause c;
  c.kind = "compute";
  c.score = (1.0 - explained) * (evidence ? 0.5 : 1.0);
  c.summary = "its own work before entering took " + FormatNs(static_cast<int64_t>(w.lost)) +
              " longer per window than the other ranks'; " + FormatPercent(1.0 - explained) +
              " of that is not explained by CPU contention or block I/O";
  c.remediation = "profile " + who.Label() +
                  " before its collectives: uneven input sizes or work split, a slower or "
                  "throttled CPU/GPU, or extra work (logging, checkpointing) on that rank";
  c.values = {{"unexplained_ns_per_window", (1.0 - explained) * w.lost}};
  return c;
}

}  // namespace

std::vector<Cause> LatenessCauses(const CollectiveData& data, int32_t participant,
                                  const SideEvents& side, Evidence& window_evidence) {
  const Participant& who = data.participants[participant];
  const WindowComparison w = CompareWindows(data, participant, side);
  window_evidence.kind = "windows";
  window_evidence.summary = "measured " + std::to_string(w.mine.windows) +
                            " windows from its previous collective's exit "
                            "to its late entry: mean lateness " +
                            FormatNs(static_cast<int64_t>(w.mine.Mean(w.mine.lateness))) +
                            " (others " + FormatNs(static_cast<int64_t>(MedianOf(w.late))) + ")";
  window_evidence.values = {{"windows", static_cast<double>(w.mine.windows)},
                            {"excess_lateness_ns", w.lost}};

  std::vector<Cause> causes = {WindowCpuCause(w, who, side), WindowIoCause(w, who),
                               WindowNetworkCause(w, who)};
  double explained = std::min(1.0, causes[0].score + causes[1].score);
  bool evidence = causes[0].score >= kEvidenceShare || causes[1].score >= kEvidenceShare ||
                  causes[2].score >= kEvidenceShare;
  causes.push_back(WindowComputeCause(w, who, explained, evidence));
  std::stable_sort(causes.begin(), causes.end(),
                   [](const Cause& a, const Cause& b) { return a.score > b.score; });
  // Causes without evidence are dropped; if nothing remains the cause is unknown.
  std::vector<Cause> out;
  for (Cause& c : causes) {
    if (c.score >= 0.05) out.push_back(std::move(c));
  }
  if (out.empty()) {
    Cause c;
    c.kind = "unknown";
    c.summary = "no recorded evidence explains its lateness";
    c.remediation = "record with all sources enabled (sched, block, tcp) and longer";
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace rs::analyzer
