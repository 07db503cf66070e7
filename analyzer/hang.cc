#include "analyzer/hang.h"

#include <algorithm>
#include <map>
#include <set>

#include "analyzer/report_format.h"
#include "rscore/comm_hash.h"
#include "rscore/nccl_ops.h"

namespace rs::analyzer {
namespace {

constexpr size_t kMaxMismatches = 20;

enum Level : int { kNotEnqueued = 0, kEnqueued = 1, kStarted = 2, kCompleted = 3 };
constexpr const char* kLevelNames[] = {"not_enqueued", "enqueued", "started", "completed"};

struct CallState {
  int level = kNotEnqueued;
  const char* basis = "none";
  bool pending = false;  // observably waiting: in flight on its host, or not completed on device
  int64_t since = 0;     // when it reached this state
};

CallState StateOf(const NcclCall& c) {
  if (c.device) {
    const DeviceOp& d = *c.device;
    if (d.end_ns || d.state == "completed") {
      return {kCompleted, "device", false, d.end_ns.value_or(d.start_ns.value_or(d.enqueue_ns))};
    }
    if (d.start_ns || d.state == "started") {
      return {kStarted, "device", true, d.start_ns.value_or(d.enqueue_ns)};
    }
    return {kEnqueued, "device", true, d.enqueue_ns};
  }
  if (c.in_flight()) return {kStarted, "host_call", true, c.ts};
  if (c.enqueue) return {kEnqueued, "host_enqueue", false, c.ts};
  return {kCompleted, "host_call", false, c.ts + c.dur};
}

bool HasRoot(const std::string& op) { return rs::Traits(rs::OpFromName(op)).has_root; }

void FindMismatches(const CollectiveData& data, const Collective& g, HangReport& out) {
  using Key = std::string;
  auto check = [&](const std::string& field, auto value_of) {
    std::map<Key, std::vector<std::string>> variants;
    for (size_t k = g.begin; k < g.end; ++k) {
      const NcclCall& c = data.calls[k];
      variants[value_of(c)].push_back(data.participants[c.participant].Label());
    }
    if (variants.size() < 2 || out.mismatches.size() >= kMaxMismatches) return;
    Mismatch m{g.comm, g.seq, field, {}, "", std::nullopt, std::nullopt};
    for (auto& [value, who] : variants) m.variants.emplace_back(value, std::move(who));
    out.mismatches.push_back(std::move(m));
  };
  check("op", [](const NcclCall& c) { return c.op; });
  check("count", [](const NcclCall& c) { return c.count ? std::to_string(*c.count) : "?"; });
  check("datatype", [](const NcclCall& c) { return c.datatype.empty() ? "?" : c.datatype; });
  if (HasRoot(data.calls[g.begin].op)) {
    check("root", [](const NcclCall& c) { return c.root ? std::to_string(*c.root) : "?"; });
  }
}

struct CommView {
  std::set<int32_t> members;
  int64_t nranks = 0;
  std::vector<int64_t> durations;       // completed collectives: blocking calls, device times
  std::vector<int64_t> gaps;            // between consecutive collectives' first entries
  const Collective* pending = nullptr;  // lowest seq with a pending call
  std::map<int32_t, int64_t> last_called;
  int64_t max_seq = -1;
};

// The rank of call c waits at the end: its call is in flight, or a blocking CUDA call it made
// after c is.
bool Waits(const std::vector<std::vector<CudaWait>>& cuda, const NcclCall& c) {
  if (c.in_flight()) return true;
  size_t p = static_cast<size_t>(c.participant);
  if (p >= cuda.size()) return false;
  return std::any_of(cuda[p].begin(), cuda[p].end(),
                     [&](const CudaWait& w) { return w.blocking && w.ts >= c.ts; });
}

struct Candidate {
  const Collective* g = nullptr;
  const CommView* view = nullptr;
  int64_t stuck_for = -1;
  bool lagging = false;  // some member's state lags the others' (or ranks were never seen)
};

// The communicator's stuck collective, if any, and whether it lags.
Candidate StuckIn(const CollectiveData& data, const std::vector<std::vector<CudaWait>>& cuda,
                  const CommView& v, const std::vector<const Collective*>& groups, int64_t end_ns) {
  Candidate out;
  const Collective* g = v.pending;
  int64_t since = 0, needed = 0;
  if (g) {
    since = end_ns;
    for (size_t k = g->begin; k < g->end; ++k) {
      CallState s = StateOf(data.calls[k]);
      if (s.pending) since = std::min(since, s.since);
    }
    std::vector<int64_t> d = v.durations;
    needed = std::max(kHangMinStuckNs, kHangStuckFactor * (d.empty() ? 0 : Quantile(d, 0.99)));
  } else {
    // Nothing pending is seen: the first collective some members never enqueued, where ranks
    // that enqueued it wait at the end.
    int64_t lowest = -1;
    for (const auto& [p, last] : v.last_called) {
      if (last >= v.max_seq) continue;
      for (const Collective* c : groups) {
        if (c->seq > last) {
          if (lowest < 0 || c->seq < lowest) lowest = c->seq;
          break;
        }
      }
    }
    if (lowest < 0) return out;
    for (const Collective* c : groups) {
      if (c->seq == lowest) g = c;
    }
    bool waiting = false;
    for (size_t k = g->begin; k < g->end; ++k) {
      const NcclCall& c = data.calls[k];
      waiting |= c.enqueue && Waits(cuda, c);
    }
    if (!waiting) return out;
    since = g->first_entry;
    std::vector<int64_t> gaps = v.gaps;
    needed =
        std::max(kHangMinStuckNs, kHangStuckFactor * (gaps.empty() ? 0 : Quantile(gaps, 0.99)));
  }
  out.stuck_for = end_ns - since;
  if (out.stuck_for < needed) return Candidate{};
  out.g = g;
  out.view = &v;
  std::set<int32_t> called;
  int low = kCompleted, high = kNotEnqueued;
  for (size_t k = g->begin; k < g->end; ++k) {
    called.insert(data.calls[k].participant);
    int level = StateOf(data.calls[k]).level;
    low = std::min(low, level);
    high = std::max(high, level);
  }
  if (called.size() < v.members.size()) low = kNotEnqueued;
  out.lagging = low < high || (v.nranks > 0 && static_cast<int64_t>(called.size()) < v.nranks);
  return out;
}

std::string Describe(const Activity& a) {
  if (a.kind == "exit") {
    return "its process exited" +
           (a.exit_code ? " with code " + std::to_string(*a.exit_code) : std::string());
  }
  std::string out = a.what;
  if (a.seq) out += " seq " + std::to_string(*a.seq);
  return out + (a.state == "in_flight" ? " (in flight)" : " (returned)");
}

std::string JoinLabels(const std::vector<std::string>& labels) {
  std::string who;
  for (size_t i = 0; i < labels.size(); ++i) who += (i ? ", " : "") + labels[i];
  return who.empty() ? "no single rank" : who;
}

// Every communicator's collectives in order, with what they tell about its members, its
// pace and its first collective still pending; mismatched calls go to `out`.
struct CommScan {
  std::map<uint64_t, CommView> comms;
  std::map<uint64_t, std::vector<const Collective*>> groups;
};

CommScan ScanCommunicators(const CollectiveData& data, HangReport& out) {
  CommScan scan;
  auto& comms = scan.comms;
  auto& groups = scan.groups;
  for (const Collective& g : data.collectives) {
    CommView& v = comms[g.comm];
    std::vector<const Collective*>& mine = groups[g.comm];
    if (!mine.empty()) v.gaps.push_back(g.first_entry - mine.back()->first_entry);
    mine.push_back(&g);
    v.max_seq = std::max(v.max_seq, g.seq);
    bool pending = false;
    for (size_t k = g.begin; k < g.end; ++k) {
      const NcclCall& c = data.calls[k];
      v.members.insert(c.participant);
      v.last_called[c.participant] = std::max(v.last_called[c.participant], g.seq);
      if (c.nranks) v.nranks = std::max(v.nranks, *c.nranks);
      CallState s = StateOf(c);
      pending |= s.pending;
      if (s.level != kCompleted) continue;
      if (c.device && c.device->start_ns && c.device->end_ns) {
        v.durations.push_back(*c.device->end_ns - *c.device->start_ns);
      } else if (!c.device && c.host_seen) {
        v.durations.push_back(c.dur);
      }
    }
    if (pending && !v.pending) v.pending = &g;
    if (g.matched()) FindMismatches(data, g, out);
  }
  return scan;
}

// The communicator whose stuck collective lags (ranks missing or behind), else the one stuck
// longest; no collective (g == nullptr) where none is stuck.
Candidate PickStuck(const CollectiveData& data,
                    const std::vector<std::vector<CudaWait>>& cuda_in_flight, CommScan& scan,
                    int64_t end_ns) {
  Candidate best;
  for (auto& [comm, v] : scan.comms) {
    Candidate c = StuckIn(data, cuda_in_flight, v, scan.groups[comm], end_ns);
    if (!c.g) continue;
    if (!best.g || (c.lagging && !best.lagging) ||
        (c.lagging == best.lagging && c.stuck_for > best.stuck_for)) {
      best = c;
    }
  }
  return best;
}

// Each member's state in the stuck collective and its rank in the communicator.
struct StuckStates {
  std::map<int32_t, CallState> state;
  std::map<int32_t, std::optional<int64_t>> comm_rank;
  bool device = false, host_pending = false;
  int Level(int32_t p) const {
    auto it = state.find(p);
    return it == state.end() ? kNotEnqueued : it->second.level;
  }
};

StuckStates StatesAt(const CollectiveData& data, const Collective& g) {
  StuckStates st;
  auto& state = st.state;
  auto& comm_rank = st.comm_rank;
  for (size_t k = g.begin; k < g.end; ++k) {
    const NcclCall& c = data.calls[k];
    CallState s = StateOf(c);
    state[c.participant] = s;
    st.device |= c.device.has_value();
    st.host_pending |= s.pending;
  }
  for (const NcclCall& c : data.calls) {
    if (c.comm == g.comm && c.rank && !comm_rank[c.participant]) comm_rank[c.participant] = c.rank;
  }
  return st;
}

// The culprits: the members at the lowest state, the ranks no recording saw, or (every rank
// alike) whoever called something else at that sequence. Their nodes, and the waiting ranks.
struct Culprits {
  int low = kCompleted, high = kNotEnqueued;
  bool by_mismatch = false;
};

Culprits NameCulprits(const CollectiveData& data, const Collective& g, const CommView& view,
                      StuckStates& st, HangReport& out) {
  Culprits found;
  int& low = found.low;
  int& high = found.high;
  auto& state = st.state;
  auto& comm_rank = st.comm_rank;
  for (int32_t p : view.members) {
    int level = st.Level(p);
    low = std::min(low, level);
    high = std::max(high, level);
  }
  std::set<int64_t> seen_ranks;
  for (const auto& [p, r] : comm_rank) {
    if (r) seen_ranks.insert(*r);
  }
  bool unseen = false;
  for (int64_t r = 0; r < view.nranks; ++r) unseen |= !seen_ranks.count(r);
  if (unseen) low = kNotEnqueued;
  std::set<std::string> nodes;
  if (low < high) {
    for (int32_t p : view.members) {
      int level = st.Level(p);
      std::optional<int64_t> rank = comm_rank[p];
      if (level == low) {
        const Participant& who = data.participants[p];
        nodes.insert(who.node);
        out.culprit_labels.push_back(who.Label());
        if (rank) out.culprit_ranks.push_back(*rank);
      } else if (rank) {
        out.waiting_ranks.push_back(*rank);
      }
    }
  } else {
    for (int32_t p : view.members) {
      if (state.count(p) && state[p].pending && comm_rank[p])
        out.waiting_ranks.push_back(*comm_rank[p]);
    }
  }
  // Ranks that no recording ever saw in this communicator.
  for (int64_t r = 0; r < view.nranks; ++r) {
    if (seen_ranks.count(r)) continue;
    out.culprit_ranks.push_back(r);
    out.culprit_labels.push_back("rank " + std::to_string(r) + " (no recording saw it)");
  }
  if (out.culprit_labels.empty()) {
    // Every rank alike: the culprit is whoever called something else at that sequence.
    for (const Mismatch& m : out.mismatches) {
      if (m.comm_id_hash != g.comm || m.seq != g.seq) continue;
      auto minority = std::min_element(
          m.variants.begin(), m.variants.end(),
          [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
      for (const std::string& label : minority->second) out.culprit_labels.push_back(label);
    }
    for (size_t k = g.begin; k < g.end; ++k) {
      const NcclCall& c = data.calls[k];
      const std::string label = data.participants[c.participant].Label();
      if (std::find(out.culprit_labels.begin(), out.culprit_labels.end(), label) !=
          out.culprit_labels.end()) {
        nodes.insert(data.participants[c.participant].node);
        if (c.rank) out.culprit_ranks.push_back(*c.rank);
        found.by_mismatch = true;
      }
    }
  }
  out.culprit_nodes.assign(nodes.begin(), nodes.end());
  std::sort(out.waiting_ranks.begin(), out.waiting_ranks.end());
  return found;
}

// Progress of every member of the stuck communicator, by node, rank and pid.
std::vector<RankProgress> MemberProgress(const CollectiveData& data, const Collective& g,
                                         const CommView& view, const StuckStates& st) {
  std::vector<RankProgress> progress;
  const auto& state = st.state;
  for (int32_t p : view.members) {
    RankProgress r;
    const Participant& who = data.participants[p];
    r.node = who.node;
    r.pid = who.pid;
    for (const NcclCall& c : data.calls) {
      if (c.participant != p || c.comm != g.comm) continue;
      if (c.rank) r.rank = c.rank;
      r.last_entered_seq = std::max(r.last_entered_seq.value_or(c.seq), c.seq);
      CallState s = StateOf(c);
      if (s.level >= kStarted && c.device) {
        r.last_started_seq = std::max(r.last_started_seq.value_or(c.seq), c.seq);
      }
      if (s.level == kCompleted) {
        r.last_completed_seq = std::max(r.last_completed_seq.value_or(c.seq), c.seq);
      }
      if (c.in_flight() && (!r.in_flight_seq || c.seq < *r.in_flight_seq)) {
        r.in_flight_seq = c.seq;
        r.in_flight_op = c.op;
        r.in_flight_since_ns = c.ts;
      }
    }
    if (!r.rank) r.rank = who.rank;
    auto it = state.find(p);
    r.state = kLevelNames[it == state.end() ? kNotEnqueued : it->second.level];
    r.state_basis = it == state.end() ? "none" : it->second.basis;
    progress.push_back(std::move(r));
  }
  std::sort(progress.begin(), progress.end(), [](const RankProgress& a, const RankProgress& b) {
    return RankOrderLess(a.node, a.rank, a.pid, b.node, b.rank, b.pid);
  });
  return progress;
}

// The one-line description: who waits where, and what the culprits did not do.
std::string HangSummary(const CollectiveData& data, const Collective& g, const HangReport& out,
                        const Culprits& culprits) {
  const int low = culprits.low, high = culprits.high;
  std::string what = std::to_string(out.waiting_ranks.size()) + " rank(s) stuck in " + out.op +
                     " " + SeqWords(out.seq) + " of communicator " + rs::HashHex(out.comm_id_hash) +
                     " for " + FormatNs(out.stuck_for_ns);
  if (out.basis == "device" && high > kNotEnqueued && low < high) {
    what += std::string(" (") +
            (high == kStarted    ? "started on their devices, waiting"
             : high == kEnqueued ? "enqueued, not started on their devices"
                                 : "completed on their devices") +
            ")";
  } else if (out.basis == "host_enqueue") {
    what += " (they enqueued it and wait in blocking CUDA calls)";
  }
  std::string verb;
  if (culprits.by_mismatch) {
    verb = "mismatched call by: ";
  } else if (low == kEnqueued) {
    verb = "enqueued, but its device never started it: ";
  } else if (low == kStarted) {
    verb = "started on its device, never completed: ";
  } else {
    // Blocking calls are entered; enqueues (device seen or not) enqueued.
    bool enqueues = false;
    for (size_t k = g.begin; k < g.end; ++k) enqueues |= data.calls[k].enqueue;
    verb = enqueues ? "never enqueued: " : "never entered: ";
  }
  std::string summary = what + "; " + verb + JoinLabels(out.culprit_labels);
  if (out.basis == "host_enqueue") summary += "; device-side state was not seen";
  return summary;
}

}  // namespace

HangReport AnalyzeHang(const CollectiveData& data,
                       const std::vector<std::vector<CudaWait>>& cuda_in_flight, int64_t end_ns) {
  HangReport out;
  CommScan scan = ScanCommunicators(data, out);
  Candidate best = PickStuck(data, cuda_in_flight, scan, end_ns);
  if (!best.g) {
    out.summary = "no hang: no collective was stuck at the end of the recording";
    for (auto& [comm, v] : scan.comms) {
      if (v.pending) {
        out.summary =
            "no hang: collectives still in flight at the end of the recording had "
            "run too briefly to call them stuck";
      }
    }
    return out;
  }
  const Collective& g = *best.g;
  const CommView& view = *best.view;
  out.detected = true;
  out.comm_id_hash = g.comm;
  out.seq = g.seq;
  out.op = data.calls[g.begin].op;
  out.stuck_for_ns = best.stuck_for;
  StuckStates st = StatesAt(data, g);
  out.basis = st.device ? "device" : st.host_pending ? "host_call" : "host_enqueue";
  out.confidence = out.basis == "host_enqueue" ? Confidence::kMedium : Confidence::kHigh;
  const Culprits culprits = NameCulprits(data, g, view, st, out);
  out.progress = MemberProgress(data, g, view, st);
  out.summary = HangSummary(data, g, out, culprits);
  return out;
}

Straggler HangStraggler(const HangReport& hang, const CollectiveData& data, size_t culprit) {
  Straggler s;
  const std::string& label = hang.culprit_labels[culprit];
  for (const Participant& p : data.participants) {
    if (p.Label() == label) {
      s.node = p.node;
      s.rank = p.rank;
      s.pid = p.pid;
    }
  }
  if (s.node.empty() && culprit < hang.culprit_ranks.size()) s.rank = hang.culprit_ranks[culprit];
  if (s.rank) s.ranks.push_back(*s.rank);
  const RankProgress* mine = nullptr;
  for (const RankProgress& p : hang.progress) {
    if (!s.node.empty() && p.node == s.node && s.pid && p.pid == *s.pid) mine = &p;
  }
  s.cause = "hang";
  s.shape = "hang";
  s.confidence = hang.confidence.value_or(Confidence::kHigh);
  s.confidence_score = TierScore(ScoreBasis::kHang, s.confidence, 0);
  if (hang.basis == "device") {
    s.basis =
        "flight-recorder states from rankscope's NCCL profiler plugin (gpu_ops: enqueued, "
        "started and completed on each device) at the first collective not completed everywhere";
  } else if (hang.basis == "host_enqueue") {
    s.basis =
        "which ranks enqueued the collective (their NCCL calls only enqueue) while the others sit "
        "in blocking CUDA calls at the end of the recording; device-side state was not seen";
  } else {
    s.basis = "NCCL calls still in flight at the end of the recording (duration NULL)";
  }
  std::string state = mine ? mine->state : "not_enqueued";
  std::string where = hang.op + " " + SeqWords(hang.seq);
  if (state == "enqueued") {
    s.summary = label + " enqueued " + where +
                " but its device never started it; the other ranks are stuck in it";
  } else if (state == "started") {
    s.summary = label + " started " + where +
                " on its device but never completed it; the other ranks wait for it";
  } else if (state == "not_enqueued") {
    bool entered = hang.summary.find("never entered") != std::string::npos;
    s.summary = label + (entered ? " never entered " : " never enqueued ") + where +
                " that the other ranks are stuck in";
  } else {
    s.summary = label + " called something else at " + where + " than the other ranks";
  }
  std::string doing;
  if (mine) {
    for (const Activity& a : mine->doing) doing += (doing.empty() ? "" : ", ") + Describe(a);
  }
  if (!doing.empty()) s.summary += "; last seen: " + doing;
  Cause c;
  c.kind = "hang";
  c.score = 1.0;
  c.summary = hang.summary;
  // Where to look: its processes, its last completed call, what it was in instead, its caller.
  std::string dump = s.pid ? "py-spy dump --pid " + std::to_string(*s.pid) + ", gdb -p " +
                                 std::to_string(*s.pid) + " on " + s.node
                           : "py-spy dump, gdb -p with its pid (no recording of it names one)";
  std::string facts;
  if (mine) {
    const std::optional<Activity>& last = mine->last_completed_call;
    facts += "; its last completed call: " +
             (last ? last->what + (last->seq ? " seq " + std::to_string(*last->seq) : "")
                   : std::string("none recorded"));
    std::string in_flight, exited;
    for (const Activity& a : mine->doing) {
      if (a.state == "in_flight") in_flight += (in_flight.empty() ? "" : ", ") + Describe(a);
      if (a.state == "exited") exited = Describe(a);
    }
    facts += "; at the end of the recording: " +
             (!exited.empty()      ? exited
              : !in_flight.empty() ? "in " + in_flight
                                   : std::string("no NCCL or CUDA call in flight (its process "
                                                 "did other work, or waited outside them)"));
    std::string caller;
    for (const Activity& a : mine->doing) {
      if (caller.empty() && a.state == "in_flight" && !a.stack.empty()) {
        caller = a.what + " called from " + CallerFrame(a.stack);
      }
    }
    if (caller.empty() && last && !last->stack.empty()) {
      caller = "its last completed call was made from " + CallerFrame(last->stack);
    }
    if (!caller.empty()) facts += "; " + caller;
  }
  if (state == "enqueued" && hang.basis == "device") {
    c.remediation =
        "its device is stuck before the collective (a kernel that never finishes, or "
        "work ordered before it on another stream): check " +
        label + "'s GPU for Xid errors (dmesg, nvidia-smi -q) and dump its host stacks (" + dump +
        ")" + facts + "; the waiting ranks only time out";
  } else {
    c.remediation = "dump the stacks of " + label + " (" + dump +
                    ", or the framework's flight recorder): it is stuck before the collective, "
                    "took a different code path, or died" +
                    facts + "; the waiting ranks only time out";
  }
  c.values = {{"seq", static_cast<double>(hang.seq)},
              {"stuck_for_ns", static_cast<double>(hang.stuck_for_ns)},
              {"waiting_ranks", static_cast<double>(hang.waiting_ranks.size())}};
  s.causes.push_back(c);
  Evidence e;
  e.kind = "hang";
  e.summary = hang.summary;
  e.values = c.values;
  s.evidence.push_back(std::move(e));
  if (mine && !mine->doing.empty()) {
    Evidence d;
    d.kind = "activity";
    d.summary = "at the end of the recording: " + doing;
    for (const Activity& a : mine->doing) {
      if (!a.stack.empty()) {
        d.summary += "; " + a.what + " called from " + CallerFrame(a.stack);
        break;
      }
    }
    s.evidence.push_back(std::move(d));
  }
  return s;
}

}  // namespace rs::analyzer
