#include "analyzer/report_notes.h"

#include <algorithm>
#include <map>
#include <set>

#include "analyzer/confidence.h"
#include "analyzer/lateness_straggler.h"
#include "analyzer/report_format.h"

#include "rscore/comm_hash.h"
#include "rscore/duration.h"
#include "rscore/schema.h"
#include "rscore/time_arg.h"

namespace rs::analyzer {

rs::Result<void> AddSourceNotes(rs::Db& db, std::vector<std::string>& notes) {
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("SELECT node, source, COALESCE(method, ''), drops FROM sources"
                              " WHERE drops > 0 OR method = 'off' ORDER BY node, source"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    if (st.Text(2) == "off") {
      notes.push_back("node " + st.Text(0) + ": source '" + st.Text(1) +
                      "' was off; causes it would show cannot be seen there");
    } else {
      notes.push_back("node " + st.Text(0) + ": source '" + st.Text(1) + "' dropped " +
                      std::to_string(st.Int(3)) + " events; counts from it are lower bounds");
    }
  }
  // The plugin's device times that ran backwards: left out, and said; collectives on the copy
  // engines: no device time at all (gpu_probe.cc's notes).
  ASSIGN_OR_RETURN(rs::Statement gpu,
                   db.Prepare("SELECT node, note, note LIKE '%copy engines%' FROM sources"
                              " WHERE source = 'gpu' AND (note LIKE '%device times ran backwards%'"
                              " OR note LIKE '%copy engines%') ORDER BY node"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, gpu.Step());
    if (!row) break;
    notes.push_back("node " + gpu.Text(0) + ": " + gpu.Text(1) +
                    (gpu.Int(2) ? "; where its ranks arrived at them is not seen"
                                : "; they are left out of device arrival and duration"));
  }
  return AddUserTagNote(db, notes);
}

rs::Result<void> AddUserTagNote(rs::Db& db, std::vector<std::string>& notes) {
  ASSIGN_OR_RETURN(bool tags, rs::HasColumn(db, "gpu_ops", "user_tag"));
  if (!tags) return rs::Ok();
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("SELECT COUNT(*), COUNT(user_tag), COUNT(DISTINCT user_tag),"
                              " MIN(user_tag), MAX(user_tag) FROM gpu_ops"));
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row || st.Int(1) == 0) return rs::Ok();
  notes.push_back(std::to_string(st.Int(1)) + " of " + std::to_string(st.Int(0)) +
                  " GPU operations carry a user tag (the caller's "
                  "ncclCollConfig_t.userProfilerTag, profiler API v7): " +
                  std::to_string(st.Int(2)) + " distinct, from " + std::to_string(st.Int(3)) +
                  " to " + std::to_string(st.Int(4)) +
                  "; the trace names each tagged GPU slice 'OP tag N', and gpu_ops.user_tag "
                  "holds them for queries");
  return rs::Ok();
}

void AddGraphReplayNote(const CollectiveData& data, std::vector<std::string>& notes) {
  if (data.graph_replays > 0) {
    notes.push_back(
        std::to_string(data.graph_replays) +
        " GPU operations ran in CUDA graph replays (no NCCL call of their own: their calls were "
        "captured once); they are matched across ranks by their number among their "
        "communicator's replayed collectives, shown as 'graph replay N', and their host entry is "
        "when the graph reached them; the " +
        std::to_string(data.graph_captured_collectives) +
        " collectives of the captured calls are left out of lateness (capturing runs nothing)");
  }
  if (data.graph_replays_uncompared > 0) {
    notes.push_back(std::to_string(data.graph_replays_uncompared) +
                    " GPU operations of CUDA graph replays are left out: some node's graph was "
                    "captured before its recorder read (metadata gpu_graph_calls_unrecorded), so "
                    "its replays went unrecorded and replay numbers may name different replays "
                    "on different ranks; start the recorder before the job captures its graphs");
  }
}

rs::Result<void> AddMergeNotes(rs::Db& db, std::vector<std::string>& notes) {
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("SELECT file, COALESCE(original_node, '?'), status,"
                              " COALESCE(reason, '') FROM merge_inputs WHERE status != 'merged'"
                              " ORDER BY input_id"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    const bool duplicate = st.Text(2) == "duplicate";  // its rows are there, from another input
    notes.push_back("input " + st.Text(0) + " (node " + st.Text(1) + ") was " +
                    (duplicate ? "not merged again" : st.Text(2)) + " by rankscope-merge" +
                    (st.Text(3).empty() ? "" : ": " + st.Text(3)) +
                    (duplicate ? "" : "; its ranks are missing from this report"));
  }
  return rs::Ok();
}

rs::Result<void> AddSummaryNotes(rs::Db& db, bool merged, Report& r) {
  // node -> the raw bundle it was summarized from (merged: the node's metadata keys).
  std::map<std::string, std::string> raw;
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare(merged ? "SELECT substr(key, 6, length(key) - 16), value FROM "
                                       "metadata WHERE key LIKE 'node.%.summary_of'"
                                     : "SELECT (SELECT value FROM metadata WHERE key = 'node'),"
                                       " value FROM metadata WHERE key = 'summary_of'"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    raw[st.Text(0)] = st.Text(1);
  }
  if (raw.empty()) return rs::Ok();
  std::string listed;
  for (const auto& [node, file] : raw) {
    listed += (listed.empty() ? "" : ", ") + node;
    r.summary_nodes.push_back(node);
  }
  r.notes.push_back(std::to_string(raw.size()) + " node(s) merged from summaries (" + listed +
                    "): the rows this report reads are all there, but their off-CPU intervals, "
                    "other processes' run-queue waits and asynchronous CUDA calls (kernel "
                    "launches, asynchronous copies) were left on the nodes (a trace of them "
                    "shows less)");
  std::set<std::string> named;  // an undetermined finding names nobody
  for (const Straggler& s : r.stragglers) {
    if (s.confidence != Confidence::kUndetermined) named.insert(s.node);
  }
  for (const std::string& n : r.hang.culprit_nodes) named.insert(n);
  std::string files, nodes;
  for (const std::string& n : named) {
    auto it = raw.find(n);
    if (it == raw.end()) continue;
    files += " " + it->second;
    nodes += (nodes.empty() ? "" : ", ") + n;
  }
  if (files.empty()) return rs::Ok();
  std::string hosts = nodes;
  hosts.erase(std::remove(hosts.begin(), hosts.end(), ' '), hosts.end());
  r.notes.push_back(
      "the verdict names " + nodes +
      ", merged from a summary: for the full evidence fetch its raw bundle and merge it with "
      "this merge's inputs (a node's raw bundle is merged in place of its summary): "
      "rankscope-merge -o raw.rsdb" +
      files +
      " INPUTS...; where the nodes serve their recordings (rankscope-serve, "
      "rankscope-record --serve): rankscope-fleet collect --nodes " +
      hosts + " --since " + rs::FormatUtc(r.start_ns) + " --until " + rs::FormatUtc(r.end_ns) +
      " raw/ (with --ca, --cert, --key), then rankscope-merge -o raw.rsdb raw/ INPUTS...");
  return rs::Ok();
}

rs::Result<void> CountUnidentifiedCalls(rs::Db& db, int64_t by_nccl_names, Report& r) {
  // The recorder names a communicator when it sees it created (ncclCommInitRank*, a split): a
  // communicator created before it attached has NULL rank, nranks and comm_id_hash, and seq
  // counts from the recorder's start, so no two ranks' calls can be matched (rankscope-record(8),
  // metadata nccl_unknown_comms). A recorder started while a job is slow sees only those.
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("SELECT COUNT(*), COUNT(DISTINCT node) FROM nccl_events"
                              " WHERE comm_id_hash IS NULL AND op NOT LIKE 'COMM%'"
                              " AND op NOT IN ('GROUP_START', 'GROUP_END')"));
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row || st.Int(0) == 0) return rs::Ok();
  r.unidentified_calls = st.Int(0);
  r.unidentified_nodes = st.Int(1);
  r.notes.push_back(
      std::to_string(r.unidentified_calls) + " NCCL call(s) on " +
      std::to_string(r.unidentified_nodes) +
      " node(s) belong to communicators created before the recorder started (it identifies a "
      "communicator when the job creates it; metadata nccl_unknown_comms): they cannot be "
      "matched across ranks, and the straggler and hang analyses do not see them" +
      (by_nccl_names > 0
           ? "; the profiler plugin's " + std::to_string(by_nccl_names) +
                 " device operations of such communicators are compared by NCCL's own names "
                 "(commHash, seqNumber) instead"
           : std::string()) +
      "; record from before the job creates its communicators (rankscope-record --ring keeps a "
      "recorder on)");
  return rs::Ok();
}

void QualifyHangByUnidentified(Report& r) {
  if (r.unidentified_calls == 0 || r.hang.detected) return;
  const std::string blind = std::to_string(r.unidentified_calls) +
                            " NCCL call(s) of communicators created before recording started "
                            "were not seen";
  if (r.nccl_calls > 0) {
    r.hang.summary += " (among the collectives that could be matched across ranks; " + blind + ")";
    return;
  }
  r.hang.kind = "undetermined";
  r.hang.reason =
      "every NCCL call recorded belongs to a communicator created before recording "
      "started: no collective can be matched across ranks";
  r.hang.summary = "undetermined: " + r.hang.reason;
}

void AddTimingNotes(const CollectiveData& data, const CallSemantics& sem, Report& r) {
  Timing& t = r.timing;
  t.gpu_ops_table = data.gpu_ops_table;
  t.device_ops = data.device_ops;
  t.device_collectives = data.device_collectives;
  t.barrier_collectives = data.barrier_collectives;
  t.excluded_collectives = data.excluded_collectives;
  t.graph_replay_ops = data.graph_replays;
  t.graph_captured_collectives = data.graph_captured_collectives;
  t.graph_replays_uncompared = data.graph_replays_uncompared;
  t.host_collectives = data.matched - data.device_collectives - data.excluded_collectives -
                       data.graph_captured_collectives;
  t.arrival_basis = ArrivalBasis(t.device_collectives, t.device_collectives + t.host_collectives);
  t.call_semantics = sem.kind;
  t.semantics_evidence = sem.evidence;
  t.call_modes_from = sem.from_merge ? "merge" : "report";
  for (const auto& [comm, c] : sem.modes.communicators) {
    t.call_modes.push_back(Timing::CallMode{
        rs::HashHex(comm), std::string(rs::CallModeName(c.decision.mode)), c.decision.evidence});
  }
  if (sem.kind == "enqueue" && t.device_collectives == 0 && data.matched > 0) {
    r.notes.push_back(
        "GPU-side arrival was not seen: the NCCL calls here only enqueue (" + sem.evidence +
        "); lateness is when each host issued a collective, which a slow GPU does not show, so "
        "no straggler is claimed with high confidence from it" +
        (data.gpu_ops_table ? std::string()
                            : std::string(" (the recording has no gpu_ops table: an earlier "
                                          "recorder)")) +
        "; record with rankscope's NCCL profiler plugin loaded (NCCL_PROFILER_PLUGIN) to see "
        "device arrival and device-side hang states");
  } else if (t.arrival_basis == "mixed") {
    r.notes.push_back("device arrival for " + std::to_string(t.device_collectives) + " of " +
                      std::to_string(data.matched) +
                      " matched collectives (every rank's device start recorded); the other " +
                      std::to_string(t.host_collectives) +
                      " are compared on host entry, so conclusions drawn from them are at most "
                      "medium confidence");
  }
  if (data.barrier_collectives > 0) {
    r.notes.push_back(std::to_string(data.barrier_collectives) + " of " +
                      std::to_string(data.matched) +
                      " matched collectives ran on symmetric-memory kernels on every rank, which "
                      "time their wait at the opening barrier with their peers (NCCL's "
                      "initial_sync kernel phase, profiler API v7): there the clock-free order of "
                      "arrival is measured on each device, not modelled from durations");
  }
  if (data.excluded_collectives > 0) {
    r.notes.push_back(std::to_string(data.excluded_collectives) + " of " +
                      std::to_string(data.matched) +
                      " matched collectives lack some rank's device start (before the profiler "
                      "plugin recorded, or rows lost) and are left out of lateness: their calls "
                      "only enqueue, so their entries are no arrival");
  }
  if (const int64_t unseen = data.device_only_calls - data.graph_replays; unseen > 0) {
    r.notes.push_back(std::to_string(unseen) +
                      " collective calls were seen by the profiler plugin only (no NCCL call "
                      "recorded): their host entry is the plugin's enqueue time");
  }
  AddGraphReplayNote(data, r.notes);
  int64_t unbounded = 0;
  for (const Participant& p : data.participants) unbounded += p.device_unbounded;
  if (unbounded > 0) {
    r.notes.push_back(std::to_string(unbounded) +
                      " device arrivals have no device-to-host conversion bound (clock_error_ns "
                      "NULL): conclusions resting on them are at most medium confidence");
  }
}

// Clock quality and foreign inputs, at the top of the report. A verdict that compares a
// wall-clock-aligned node's times with the others' (its arrivals are host entries or device
// starts on that clock, not the clock-free device waits) says so and drops one confidence
// step.
rs::Result<void> AddWarnings(rs::Db& db, bool merged, Report& r) {
  std::set<std::string> unaligned;
  for (const NodeClock& c : r.clock) {
    if (c.method != "wall_clock") continue;
    unaligned.insert(c.node);
    r.warnings.push_back("node " + c.node +
                         ": clock aligned by its wall clock only (no "
                         "rendezvous with the other nodes), error up to +-" +
                         FormatNs(c.error_bound_ns) +
                         ": comparing its times with other nodes' can mislead");
  }
  ASSIGN_OR_RETURN(const bool has_inputs, rs::HasTable(db, "merge_inputs"));
  if (merged && has_inputs) {
    ASSIGN_OR_RETURN(rs::Statement st,
                     db.Prepare("SELECT file, COALESCE(node, '?') FROM merge_inputs WHERE"
                                " status = 'merged' AND reason LIKE '%another job%'"
                                " ORDER BY input_id"));
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      r.warnings.push_back("input " + st.Text(0) + " (node " + st.Text(1) +
                           ") shares no communicator and no recording time with the others: "
                           "another job's bundle? Its ranks are counted here.");
    }
  }
  auto lower = [](Straggler& s) {
    if (!AtLeastMedium(s.confidence)) return;  // low and undetermined stay
    const bool high = s.confidence == Confidence::kHigh;
    s.confidence = high ? Confidence::kMedium : Confidence::kLow;
    s.confidence_score = std::min(s.confidence_score, high ? 0.6 : 0.3);
  };
  for (Straggler& s : r.stragglers) {
    if (!unaligned.count(s.node) || s.arrival_basis.empty() || s.arrival_basis == "device_waits") {
      continue;
    }
    lower(s);
    s.summary +=
        " (its clock is aligned by wall clock only: this comparison can be off by up "
        "to its error bound)";
  }
  return rs::Ok();
}

void AddRetransmitNotes(const SideEvents& side, Report& r) {
  if (side.retransmits_duplicate > 0) {
    r.notes.push_back(std::to_string(side.retransmits_duplicate) +
                      " retransmit rows were recorded by more than one node (recorders sharing "
                      "one kernel) and counted once");
  }
  if (side.retransmits_failed > 0) {
    r.notes.push_back(std::to_string(side.retransmits_failed) +
                      " retransmit rows are attempts the kernel could not send (err != 0; it "
                      "tries again later): not counted");
  }
  if (side.retransmits_without_peer > 0 && !side.retransmits.empty()) {
    r.notes.push_back(std::to_string(side.retransmits_without_peer) + " of " +
                      std::to_string(side.retransmits.size()) +
                      " retransmits go to addresses of no recorded node (attributed to the "
                      "sender only)");
  }
  int64_t needless = 0, needless_segments = 0;
  for (const Retransmit& r : side.retransmits) {
    if (r.needless && !r.probe && !r.same_node()) ++needless, needless_segments += r.segments;
  }
  if (needless > 0) {
    r.notes.push_back(std::to_string(needless) + " fast or timeout retransmits between nodes (" +
                      std::to_string(needless_segments) +
                      " segments) were reported by their receivers as received twice (D-SACK): "
                      "the originals had arrived, so they are no evidence of packet loss and "
                      "are not counted against any link");
  }
  if (side.dsack_unknown_connections > 0) {
    r.notes.push_back(std::to_string(side.dsack_unknown_connections) +
                      " connections' retransmits carry no D-SACK count (a recorder before "
                      "tcp_events.dsack_dups, or a kernel before 4.19): needless copies among "
                      "them cannot be told from repairs of lost packets and count as repairs");
  }
}

namespace {

// "node2 became later than the other nodes from +T on: ... (a change of 4.7 standard errors, on
// arrivals); 'report --from +T' looks at that window alone": the onset, said alike in the
// verdict's evidence and in a note.
std::string OnsetSentence(const std::string& node, const Onset& o, int64_t start_ns,
                          const std::string& view) {
  const std::string from = "+" + FormatNs(o.at_ns - start_ns);
  return node + " became later than the other nodes from " + from +
         " on: " + FormatNs(o.before_ns) + " above them over the " + std::to_string(o.before) +
         " collectives before, " + FormatNs(o.after_ns) + " over the " + std::to_string(o.after) +
         " after, the latest node in " + std::to_string(o.since.latest) +
         " of those (a change of " + FormatFixed1(o.t) + " standard errors, on " + view +
         "); 'report --from " + from + "' looks at that window alone";
}

}  // namespace

void AddOnsets(Report& r) {
  const bool waits_view = r.timing.device_collectives > 0;
  const std::string default_view = waits_view ? "device waits" : "arrivals";
  // A node that became later part way through, named by no verdict: over the whole recording
  // its medians hide it (late in the last half of the collectives, its median moved by
  // microseconds); the window after the onset does not.
  for (const ArrivalStats& a : r.per_node) {
    const std::optional<Onset>& o = (waits_view ? a.paired_wait : a.paired).onset;
    if (!o || std::any_of(r.stragglers.begin(), r.stragglers.end(),
                          [&](const Straggler& s) { return s.node == a.node; })) {
      continue;
    }
    r.notes.push_back(OnsetSentence(a.node, *o, r.start_ns, default_view) +
                      " (the whole recording's figures dilute it)");
  }
  for (Straggler& s : r.stragglers) {
    if (s.cause == "hang") continue;
    auto node = std::find_if(r.per_node.begin(), r.per_node.end(),
                             [&](const ArrivalStats& a) { return a.node == s.node; });
    if (node == r.per_node.end()) continue;
    // The finding's own view first; else the other: a change needs no common clock (a constant
    // offset between nodes cancels between before and after), so arrivals across nodes date it
    // too.
    const bool on_waits =
        s.arrival_basis == "device_waits" || (s.arrival_basis.empty() && waits_view);
    std::optional<Onset> o = (on_waits ? node->paired_wait : node->paired).onset;
    const char* view = on_waits ? "device waits" : "arrivals";
    if (!o && waits_view) {
      o = (on_waits ? node->paired : node->paired_wait).onset;
      view = on_waits ? "arrivals" : "device waits";
    }
    if (!o) continue;
    Evidence e;
    e.kind = "onset";
    e.summary = OnsetSentence(s.node, *o, r.start_ns, view);
    e.values = {{"onset_ns", static_cast<double>(o->at_ns)},
                {"before_ns", static_cast<double>(o->before_ns)},
                {"after_ns", static_cast<double>(o->after_ns)},
                {"t", o->t}};
    s.evidence.push_back(std::move(e));
    s.summary += " (later from +" + FormatNs(o->at_ns - r.start_ns) +
                 " on: " + FormatNs(o->after_ns) + " after, " + FormatNs(o->before_ns) + " before)";
  }
}

}  // namespace rs::analyzer
