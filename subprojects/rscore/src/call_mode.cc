#include "rscore/call_mode.h"

#include <algorithm>
#include <cmath>

#include "rscore/comm_hash.h"
#include "rscore/nccl_ops.h"
#include "rscore/schema.h"

namespace rs {
namespace {

std::string N(int64_t n) { return std::to_string(n); }

}  // namespace

std::string_view CallModeName(CallMode mode) {
  switch (mode) {
    case CallMode::kBlocking:
      return "blocking";
    case CallMode::kEnqueue:
      return "enqueue";
    case CallMode::kByProcess:
      return "by_process";
  }
  return "?";
}

std::optional<CallMode> ParseCallMode(std::string_view name) {
  for (CallMode m : {CallMode::kBlocking, CallMode::kEnqueue, CallMode::kByProcess}) {
    if (CallModeName(m) == name) return m;
  }
  return std::nullopt;
}

CallModeEvidence& CallModeEvidence::operator+=(const CallModeEvidence& o) {
  device_calls += o.device_calls;
  returned_before_device += o.returned_before_device;
  same_node_checked += o.same_node_checked;
  same_node_early_exits += o.same_node_early_exits;
  early_exits += o.early_exits;
  waits += o.waits;
  return *this;
}

CallModeDecision DecideCallMode(const CallModeEvidence& e) {
  CallModeDecision d;
  if (e.returned_before_device > 0 && 2 * e.returned_before_device >= e.device_calls) {
    d.mode = CallMode::kEnqueue;
    d.evidence = N(e.returned_before_device) + " of " + N(e.device_calls) +
                 " NCCL calls the profiler plugin saw returned before their device started the "
                 "collective";
    return d;
  }
  if (e.same_node_checked > 0) {
    const double needed =
        std::max(1.0, std::ceil(kEnqueueFraction * static_cast<double>(e.same_node_checked)));
    if (static_cast<double>(e.same_node_early_exits) >= needed) {
      d.mode = CallMode::kEnqueue;
      d.evidence = "in " + N(e.same_node_early_exits) + " of " + N(e.same_node_checked) +
                   " collectives a call returned before another rank of its node entered, which "
                   "a blocking collective cannot do";
    } else {
      d.mode = CallMode::kBlocking;
      d.evidence = "no call returned before another rank of its node entered (" +
                   N(e.same_node_checked) + " collectives checked";
      if (e.same_node_early_exits > 0)
        d.evidence += "; " + N(e.same_node_early_exits) + " did, too few";
      d.evidence += ")";
    }
    return d;
  }
  if (e.early_exits >= kMinOrderings && e.early_exits > e.waits) {
    d.mode = CallMode::kEnqueue;
    d.evidence = "in " + N(e.early_exits) +
                 " collectives a rank's NCCL call returned before another rank's call entered "
                 "(beyond the clock bound), which a blocking collective cannot do";
    if (e.waits > 0) d.evidence += " (" + N(e.waits) + " looked blocking)";
    return d;
  }
  if (e.waits >= kMinOrderings && e.waits >= e.early_exits) {
    d.mode = CallMode::kBlocking;
    d.evidence = "in " + N(e.waits) +
                 " collectives the first rank's NCCL call returned only after the last rank "
                 "entered";
    if (e.early_exits > 0) d.evidence += " (" + N(e.early_exits) + " had a call return earlier)";
    return d;
  }
  d.evidence = e.early_exits == 0 && e.waits == 0
                   ? "no node has two of its ranks in a collective and no device start decided"
                   : "too few collectives ordered the calls across nodes (" + N(e.early_exits) +
                         " early exits, " + N(e.waits) + " waits)";
  d.evidence += ": a process that used a GPU is taken to enqueue, the others to block";
  return d;
}

bool CallModes::AnyUndecided() const {
  for (const auto& [comm, c] : communicators) {
    if (c.decision.mode == CallMode::kByProcess) return true;
  }
  return false;
}

bool CallModes::Enqueues(int64_t comm, const std::string& node, int64_t pid) const {
  auto it = communicators.find(comm);
  if (it != communicators.end() && it->second.decision.mode != CallMode::kByProcess) {
    return it->second.decision.mode == CallMode::kEnqueue;
  }
  return gpu_processes.count({node, pid}) != 0;
}

void ResolveUndecided(std::map<int64_t, CommunicatorCallMode>& modes) {
  std::optional<CallMode> agreed;
  int64_t decided = 0;
  for (const auto& [comm, c] : modes) {
    if (c.decision.mode == CallMode::kByProcess) continue;
    if (agreed && *agreed != c.decision.mode) return;  // they differ: each process decides
    agreed = c.decision.mode;
    ++decided;
  }
  if (!agreed) return;
  for (auto& [comm, c] : modes) {
    if (c.decision.mode != CallMode::kByProcess) continue;
    c.decision.mode = *agreed;
    c.decision.evidence = "no evidence of its own; the calls of all " + N(decided) +
                          " communicators that showed it " +
                          (*agreed == CallMode::kBlocking ? "block" : "only enqueue") +
                          ", and whether NCCL calls block is their library's and process's";
  }
}

Result<std::map<int64_t, CallModeEvidence>> ReadCallModeEvidence(Db& db) {
  std::map<int64_t, CallModeEvidence> out;
  {
    // Per (node, collective): how many finished calls, and whether one returned before another
    // entered.
    ASSIGN_OR_RETURN(
        Statement st,
        db.Prepare("SELECT comm_id_hash, SUM(n >= 2), SUM(n >= 2 AND first_exit < last_entry)"
                   " FROM (SELECT comm_id_hash, COUNT(*) AS n,"
                   " MIN(timestamp_ns + duration_ns) AS first_exit, MAX(timestamp_ns) AS last_entry"
                   " FROM nccl_events WHERE " +
                   std::string(kFinishedCallSql) + " AND seq IS NOT NULL AND op IN (" +
                   RendezvousOpsSql() +
                   ") GROUP BY node, comm_id_hash, seq) GROUP BY comm_id_hash"));
    for (;;) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      CallModeEvidence& e = out[st.Int(0)];
      e.same_node_checked = st.Int(1);
      e.same_node_early_exits = st.Int(2);
    }
  }
  ASSIGN_OR_RETURN(bool gpu_ops, HasGpuOps(db));
  if (!gpu_ops) return out;
  // A call and its gpu_ops row share (node, pid, comm_id_hash, seq). The converted start is at
  // most clock_error_ns after the true one; a NULL or negative bound is none (rs::ReadDeviceTimes)
  // and leaves the order unknown.
  ASSIGN_OR_RETURN(
      Statement st,
      db.Prepare("SELECT e.comm_id_hash, COUNT(*),"
                 " SUM(e.timestamp_ns + e.duration_ns < g.device_start_ns - g.clock_error_ns)"
                 " FROM nccl_events e JOIN gpu_ops g ON g.node = e.node AND g.pid = e.pid"
                 " AND g.comm_id_hash = e.comm_id_hash AND g.seq = e.seq"
                 " WHERE e.duration_ns >= 0 AND e.op NOT IN ('SEND', 'RECV')"
                 " AND g.device_start_ns IS NOT NULL AND g.clock_error_ns >= 0"
                 " GROUP BY e.comm_id_hash"));
  for (;;) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    CallModeEvidence& e = out[st.Int(0)];
    e.device_calls = st.Int(1);
    e.returned_before_device = st.Int(2);
  }
  return out;
}

Result<std::optional<std::map<int64_t, CommunicatorCallMode>>> ReadStoredCallModes(Db& db) {
  std::map<int64_t, CommunicatorCallMode> out;
  ASSIGN_OR_RETURN(bool has, HasTable(db, "call_modes"));
  if (!has) return std::optional<std::map<int64_t, CommunicatorCallMode>>();
  ASSIGN_OR_RETURN(Statement st, db.Prepare("SELECT comm_id_hash, mode, evidence, device_calls,"
                                            " returned_before_device, same_node_checked,"
                                            " same_node_early_exits FROM call_modes"));
  for (;;) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    std::optional<CallMode> mode = ParseCallMode(st.Text(1));
    if (!mode) {
      return Error("call_modes: communicator " + HashHex(st.Int(0)) + " has mode '" + st.Text(1) +
                       "', not blocking, enqueue or by_process",
                   ErrorKind::kCorrupt);
    }
    CommunicatorCallMode& s = out[st.Int(0)];
    s.comm_id_hash = st.Int(0);
    s.decision.mode = *mode;
    s.decision.evidence = st.Text(2);
    s.evidence.device_calls = st.Int(3);
    s.evidence.returned_before_device = st.Int(4);
    s.evidence.same_node_checked = st.Int(5);
    s.evidence.same_node_early_exits = st.Int(6);
  }
  return std::optional(std::move(out));
}

Result<void> WriteCallMode(Db& db, const CommunicatorCallMode& c) {
  const CallModeEvidence& e = c.evidence;
  ASSIGN_OR_RETURN(Statement st,
                   db.Prepare("INSERT INTO call_modes(comm_id_hash, mode, evidence, device_calls,"
                              " returned_before_device, same_node_checked, same_node_early_exits)"
                              " VALUES (?,?,?,?,?,?,?)"));
  return st.Bind(1, c.comm_id_hash)
      .Bind(2, CallModeName(c.decision.mode))
      .Bind(3, c.decision.evidence)
      .Bind(4, e.device_calls)
      .Bind(5, e.returned_before_device)
      .Bind(6, e.same_node_checked)
      .Bind(7, e.same_node_early_exits)
      .Run();
}

}  // namespace rs
