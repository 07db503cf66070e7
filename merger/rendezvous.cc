#include "merger/rendezvous.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "rscore/call_mode.h"
#include "rscore/device_times.h"
#include "rscore/enqueue.h"
#include "rscore/nccl_ops.h"
#include "rscore/schema.h"

namespace rs::merge {
namespace {

// Completed, successful, ungrouped collectives and inits.
std::string CallQuery() {
  return "SELECT comm_id_hash, op, seq, timestamp_ns, timestamp_ns + duration_ns, pid, stream"
         " FROM nccl_events WHERE " +
         std::string(rs::kFinishedCallSql) + " AND ((op IN (" + rs::RendezvousOpsSql() +
         ") AND seq IS NOT NULL) OR op LIKE 'COMM\\_INIT%' ESCAPE '\\' OR op = 'COMM_SPLIT')"
         " ORDER BY comm_id_hash, seq, op";
}

// Completed collectives with both device times: by (comm_id_hash, seq) where the recorder saw
// the communicator's init; a CUDA graph's replay (no seq of its own) by its number among the
// communicator's replays, with the captured call and the op in the key's third part (ranks
// whose replay numbers disagree name other calls there, and never pair); else by NCCL's own
// commHash and seqNumber (the same on every rank of a communicator, counted per op), with the
// op in the key's third part. `graphs`: the bundle has the replay columns.
std::string DeviceQuery(bool graphs) {
  return std::string(
             "SELECT comm_id_hash IS NOT NULL AND seq IS NOT NULL, comm_id_hash, seq,"
             " nccl_comm_hash, nccl_seq, op, device_start_ns, device_end_ns,"
             " clock_error_ns, ") +
         (graphs ? "graph_replay_seq, graph_call_seq" : "NULL, NULL") +
         " FROM gpu_ops"
         " WHERE state = 'completed' AND device_start_ns IS NOT NULL AND device_end_ns IS NOT NULL"
         " AND device_end_ns >= device_start_ns"  // rs::ReadDeviceTimes keeps such an end
         " AND ((comm_id_hash IS NOT NULL AND seq IS NOT NULL) OR"
         " (nccl_comm_hash IS NOT NULL AND nccl_seq IS NOT NULL)) AND op IN (" +
         rs::RendezvousOpsSql() + ")";
}

std::tuple<int64_t, int64_t, std::string> DeviceKey(rs::Statement& dev) {
  if (dev.Int(0)) return {dev.Int(1), dev.Int(2), std::string()};
  if (!dev.IsNull(1) && !dev.IsNull(9) && !dev.IsNull(10)) {
    return {dev.Int(1), dev.Int(9), "graph " + dev.Text(5) + " of call " + dev.Text(10)};
  }
  return {dev.Int(3), dev.Int(4), "nccl " + dev.Text(5)};
}

// Completed, successful calls of the functions that may block until device work is done.
constexpr const char* kSyncQuery =
    "SELECT pid, api, memcpy_kind, stream, timestamp_ns, timestamp_ns + duration_ns"
    " FROM cuda_events WHERE api IN ('cudaDeviceSynchronize', 'cuCtxSynchronize',"
    " 'cudaStreamSynchronize', 'cudaStreamSynchronize_ptsz', 'cuStreamSynchronize',"
    " 'cudaMemcpy', 'cuMemcpyHtoD_v2', 'cuMemcpyDtoH_v2', 'cudaEventSynchronize')"
    " AND state = 'complete' AND duration_ns IS NOT NULL AND duration_ns >= 0"
    " AND (ret IS NULL OR ret = 0) ORDER BY pid, timestamp_ns";

// The bundle's processes whose NCCL calls enqueue (rscore/enqueue.h: the report's definition
// too), by pid: a bundle is one node's.
rs::Result<std::unordered_set<int64_t>> EnqueuingPids(rs::Db& db) {
  ASSIGN_OR_RETURN(auto processes, rs::EnqueuingProcesses(db));
  std::unordered_set<int64_t> out;
  for (const auto& [node, pid] : processes) out.insert(pid);
  return out;
}

rs::Result<std::unordered_map<int64_t, std::vector<SyncCall>>> SyncCalls(rs::Db& db) {
  std::unordered_map<int64_t, std::vector<SyncCall>> out;
  ASSIGN_OR_RETURN(rs::Statement st, db.Prepare(kSyncQuery));
  for (;;) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    std::optional<SyncKind> kind = BlockingSyncKind(st.Text(1), st.OptInt(2), st.OptInt(3));
    if (!kind) continue;
    out[st.Int(0)].push_back(SyncCall{st.Int(4), st.Int(5), *kind, st.OptInt(3)});
  }
  return out;
}

}  // namespace

rs::Result<void> RendezvousCollector::AddNode(rs::Db& db, int node) {
  ASSIGN_OR_RETURN(bool has_gpu_ops, rs::HasGpuOps(db));
  ASSIGN_OR_RETURN(const std::unordered_set<int64_t> enqueuing, EnqueuingPids(db));
  ASSIGN_OR_RETURN(auto syncs, SyncCalls(db));
  ASSIGN_OR_RETURN(auto evidence, rs::ReadCallModeEvidence(db));
  for (const auto& [comm, e] : evidence) evidence_[comm] += e;
  const std::vector<SyncCall> none;
  // This node's records, by key; added to records_ at the end.
  std::map<Key, NodeRecords> mine;
  ASSIGN_OR_RETURN(rs::Statement calls, db.Prepare(CallQuery()));
  for (;;) {
    ASSIGN_OR_RETURN(bool row, calls.Step());
    if (!row) break;
    std::string op = calls.Text(1);
    const bool init = op.rfind("COMM_", 0) == 0;
    NodeRecords& r = mine[Key{calls.Int(0), init ? -1 : calls.Int(2), init ? op : std::string()}];
    r.init = init;
    HostCall c;
    c.entry_ns = calls.Int(3);
    c.exit_ns = calls.Int(4);
    const int64_t pid = calls.Int(5);
    c.gpu_process = enqueuing.count(pid) != 0;
    if (!init) {
      auto s = syncs.find(pid);
      c.sync_exit_ns =
          FirstSyncExit(s == syncs.end() ? none : s->second, c.exit_ns, calls.OptInt(6));
    }
    r.calls.push_back(c);
    ++calls_;
  }
  if (has_gpu_ops) {
    ASSIGN_OR_RETURN(bool graphs, rs::HasColumn(db, "gpu_ops", "graph_replay_seq"));
    ASSIGN_OR_RETURN(rs::Statement dev, db.Prepare(DeviceQuery(graphs)));
    for (;;) {
      ASSIGN_OR_RETURN(bool row, dev.Step());
      if (!row) break;
      const Key key = DeviceKey(dev);
      // Read as the report reads them (a negative bound is none).
      const rs::DeviceTimes t = rs::ReadDeviceTimes(dev.Int(6), dev.Int(7), dev.OptInt(8));
      mine[key].device.push_back(DeviceSpan{*t.start_ns, *t.end_ns, t.clock_error_ns});
      ++calls_;
    }
  }
  for (auto& [key, r] : mine) records_[key].emplace_back(node, std::move(r));
  return rs::Ok();
}

std::set<int64_t> RendezvousCollector::Communicators() const {
  std::set<int64_t> out;
  for (const auto& [key, list] : records_) out.insert(std::get<0>(key));
  return out;
}

void RendezvousCollector::Absorb(RendezvousCollector&& other, int node) {
  for (auto& [key, list] : other.records_) {
    auto& mine = records_[key];
    for (auto& [n, r] : list) mine.emplace_back(node, std::move(r));
  }
  for (const auto& [comm, e] : other.evidence_) evidence_[comm] += e;
  calls_ += other.calls_;
  other = RendezvousCollector();
}

std::vector<Rendezvous> RendezvousCollector::Take() {
  summary_ = RendezvousSummary{};
  // Before the clocks are aligned: the evidence read on one clock (rscore/call_mode.h).
  std::map<int64_t, rs::CommunicatorCallMode> decided;
  for (const auto& [comm, e] : evidence_) decided[comm] = {comm, e, rs::DecideCallMode(e)};
  rs::ResolveUndecided(decided);
  std::vector<Rendezvous> out;
  for (const auto& [key, list] : records_) {
    auto m = decided.find(std::get<0>(key));
    const CallMode mode = m == decided.end() ? CallMode::kByProcess : m->second.decision.mode;
    Rendezvous rz;
    for (const auto& [node, r] : list) {
      std::optional<NodeObservation> o = Observe(r, mode, node);
      if (!o) continue;
      if (o->min_exit_ns < o->max_entry_ns) {
        ++summary_.dropped;
        continue;
      }
      rz.nodes.push_back(*o);
    }
    if (rz.nodes.size() < 2) continue;
    for (const NodeObservation& o : rz.nodes)
      ++summary_.by_evidence[static_cast<size_t>(o.evidence)];
    out.push_back(std::move(rz));
  }
  for (auto& [comm, c] : decided) summary_.communicators.push_back(std::move(c));
  records_.clear();
  evidence_.clear();
  return out;
}

rs::Result<int64_t> NodeMaxErrorNs(rs::Db& db) {
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("SELECT maxerror_us * 1000 + read_span_ns FROM clock_refs"
                              " WHERE maxerror_us IS NOT NULL AND maxerror_us >= 0"
                              " ORDER BY 1 DESC LIMIT 1"));
  ASSIGN_OR_RETURN(bool row, st.Step());
  return row ? st.Int(0) : int64_t{-1};
}

}  // namespace rs::merge
