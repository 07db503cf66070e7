#include "analyzer/device_arrival.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "rscore/device_times.h"
#include "rscore/nccl_ops.h"
#include "rscore/schema.h"

namespace rs::analyzer {

namespace {

// Whether the recording's graph replays may be compared across ranks: false where some node's
// plugin saw a call captured while NCCL's mask lacked the device events. Its replays were
// neither recorded nor numbered there, so that node's replay numbers may run behind the
// others' and one number name different replays of the same captured call (the captured-call
// check of LoadCollectives cannot see that).
rs::Result<bool> GraphReplaysComparable(rs::Db& db, int64_t* uncompared) {
  ASSIGN_OR_RETURN(
      int64_t nodes_behind,
      db.QueryInt("SELECT COUNT(*) FROM metadata WHERE (key = "
                  "'gpu_graph_calls_unrecorded' OR key LIKE "
                  "'node.%.gpu_graph_calls_unrecorded') AND CAST(value AS INTEGER) > 0"));
  if (nodes_behind == 0) return true;
  ASSIGN_OR_RETURN(*uncompared,
                   db.QueryInt("SELECT COUNT(*) FROM gpu_ops WHERE graph_replay_seq IS NOT NULL"));
  return false;
}

}  // namespace

rs::Result<void> JoinDeviceOps(rs::Db& db, CollectiveData& data) {
  ASSIGN_OR_RETURN(data.gpu_ops_table, rs::HasGpuOps(db));
  if (!data.gpu_ops_table) return rs::Ok();
  // Recordings of graph replays (older bundles lack the columns).
  ASSIGN_OR_RETURN(bool graphs, rs::HasColumn(db, "gpu_ops", "graph_replay_seq"));
  if (graphs) {
    ASSIGN_OR_RETURN(graphs, GraphReplaysComparable(db, &data.graph_replays_uncompared));
  }
  // (participant, comm, seq) -> its earliest call: the one grouping keeps.
  std::map<std::tuple<int32_t, uint64_t, int64_t>, size_t> first_call;
  // Recordings of profiler API v7 hold the kernel's phases (older bundles lack the columns).
  ASSIGN_OR_RETURN(bool phases, rs::HasColumn(db, "gpu_ops", "kernel_symmetric"));
  // Collectives of communicators created before the recorder started, by NCCL's own names.
  ASSIGN_OR_RETURN(bool nccl_names, rs::HasColumn(db, "gpu_ops", "nccl_comm_hash"));
  for (size_t k = 0; k < data.calls.size(); ++k) {
    const NcclCall& c = data.calls[k];
    auto [it, added] = first_call.emplace(std::make_tuple(c.participant, c.comm, c.seq), k);
    if (!added && c.ts < data.calls[it->second].ts) it->second = k;
  }
  ASSIGN_OR_RETURN(
      rs::Statement st,
      db.Prepare("SELECT g.node, g.pid, p.rank, g.rank, g.nranks, g.comm_id_hash, g.seq, g.op,"
                 " g.timestamp_ns, g.device_start_ns, g.device_end_ns, g.clock_error_ns, g.state,"
                 " g.count, g.datatype, g.root, p.comm, " +
                 std::string(phases ? "CASE WHEN g.kernel_symmetric = 1 THEN g.initial_sync_ns END"
                                    : "NULL") +
                 (graphs ? ", g.graph_replay_seq, g.graph_call_seq" : ", NULL, NULL") +
                 (nccl_names ? ", g.nccl_comm_hash, g.nccl_seq" : ", NULL, NULL") +
                 " FROM gpu_ops g LEFT JOIN processes p ON p.node = g.node AND p.pid = g.pid"
                 " WHERE ((g.comm_id_hash IS NOT NULL AND " +
                 (graphs ? "(g.seq IS NOT NULL OR g.graph_replay_seq IS NOT NULL))"
                         : "g.seq IS NOT NULL)") +
                 (nccl_names ? " OR (g.comm_id_hash IS NULL AND g.nccl_comm_hash IS NOT NULL"
                               " AND g.nccl_seq IS NOT NULL AND g.nccl_seq >= 0)"
                             : "") +
                 ") AND g.op NOT IN ('SEND', 'RECV')"));
  std::vector<NcclCall> device_only;
  std::map<std::tuple<int32_t, uint64_t, int64_t>, size_t> device_only_index;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    std::optional<int64_t> rank = st.OptInt(2);
    if (!rank) rank = st.OptInt(3);
    int32_t p = AddParticipant(data, st.Text(0), st.Int(1), rank, st.IsNull(16) ? "" : st.Text(16));
    if (!st.IsNull(2)) data.participants[p].rank_recorded = true;
    const bool by_nccl_names = st.IsNull(5);
    uint64_t comm = static_cast<uint64_t>(by_nccl_names ? st.Int(20) : st.Int(5));
    // A replay has no call: never joined to one (its seq is past every call's).
    const bool replay = !by_nccl_names && st.IsNull(6);
    int64_t seq = replay ? kGraphReplaySeqBase + st.Int(18) : st.Int(6);
    if (by_nccl_names) {
      const auto op_index = static_cast<int64_t>(rs::OpFromName(st.Text(7)));
      seq = kNcclSeqBase + op_index * kNcclSeqOpStride + std::min(st.Int(21), kNcclSeqOpStride - 1);
      ++data.device_ops_by_nccl_names;
    }
    DeviceOp op;
    op.enqueue_ns = st.Int(8);
    // Read as the merge reads them (rscore/device_times.h).
    const rs::DeviceTimes t = rs::ReadDeviceTimes(st.OptInt(9), st.OptInt(10), st.OptInt(11));
    op.start_ns = t.start_ns;
    op.end_ns = t.end_ns;
    op.clock_error_ns = t.clock_error_ns;
    op.state = st.Text(12);
    op.barrier_wait_ns = st.OptInt(17);
    if (op.barrier_wait_ns && *op.barrier_wait_ns < 0) op.barrier_wait_ns.reset();
    auto key = std::make_tuple(p, comm, seq);
    auto it = first_call.find(key);
    if (it != first_call.end()) {
      std::optional<DeviceOp>& slot = data.calls[it->second].device;
      if (!slot || op.enqueue_ns < slot->enqueue_ns) {
        if (!slot) ++data.device_ops;
        slot = std::move(op);
      }
      continue;
    }
    auto dup = device_only_index.find(key);
    if (dup != device_only_index.end()) {
      NcclCall& c = device_only[dup->second];
      if (op.enqueue_ns < c.device->enqueue_ns) {
        c.ts = op.enqueue_ns;
        c.device = std::move(op);
      }
      continue;
    }
    // The plugin saw a collective whose NCCL call the recorder did not (attached later, or
    // sampled out): it still shows where this rank was.
    NcclCall c;
    c.participant = p;
    c.rank = st.OptInt(3);
    c.nranks = st.OptInt(4);
    c.comm = comm;
    c.seq = seq;
    c.op = st.Text(7);
    c.ts = op.enqueue_ns;
    c.dur = 0;
    c.count = st.OptInt(13);
    c.datatype = st.IsNull(14) ? "" : st.Text(14);
    c.root = st.OptInt(15);
    c.host_seen = false;
    c.graph_call = replay ? st.OptInt(19).value_or(-1) : 0;
    if (replay) ++data.graph_replays;
    c.device = std::move(op);
    device_only_index.emplace(key, device_only.size());
    device_only.push_back(std::move(c));
  }
  data.device_ops += static_cast<int64_t>(device_only.size());
  data.device_only_calls = static_cast<int64_t>(device_only.size());
  for (NcclCall& c : device_only) data.calls.push_back(std::move(c));
  return rs::Ok();
}

void SetArrivals(CollectiveData& data, bool device) {
  data.device_collectives = 0;
  data.barrier_collectives = 0;
  for (Participant& p : data.participants) {
    p.device_clock_error_ns = 0;
    p.device_unbounded = 0;
  }
  for (Collective& g : data.collectives) {
    g.device_basis = device;
    g.barrier_basis = device;
    // A symmetric kernel's barrier is among its load-store team (NCCL's ncclTeamTagLsa: the
    // GPUs of one NVLink domain); a collective across nodes may span several teams, whose
    // barriers release apart, and its waits would then compare different barriers. Only a
    // collective of one node's ranks is read on its barrier waits.
    const std::string& node = data.participants[data.calls[g.begin].participant].node;
    for (size_t k = g.begin; k < g.end; ++k) {
      const NcclCall& c = data.calls[k];
      if (!c.device || !c.device->start_ns) g.device_basis = g.barrier_basis = false;
      if (g.barrier_basis && !c.device->barrier_wait_ns) g.barrier_basis = false;
      if (data.participants[c.participant].node != node) g.barrier_basis = false;
    }
    int64_t done = 0;
    for (size_t k = g.begin; k < g.end; ++k) {
      NcclCall& c = data.calls[k];
      c.arrival = g.device_basis ? *c.device->start_ns : c.ts;
      if (!g.device_basis) continue;
      if (!c.device->end_ns) {
        done = -1;
      } else if (done >= 0) {
        done = std::max(done, *c.device->end_ns);
      }
      Participant& who = data.participants[c.participant];
      if (c.device->clock_error_ns) {
        who.device_clock_error_ns = std::max(who.device_clock_error_ns, *c.device->clock_error_ns);
      } else {
        ++who.device_unbounded;
      }
    }
    g.done = g.device_basis ? done : g.last_exit;
    g.first_arrival = data.calls[g.begin].arrival;
    g.last_arrival = g.first_arrival;
    g.last = data.calls[g.begin].participant;
    bool tie = false;
    for (size_t k = g.begin + 1; k < g.end; ++k) {
      const NcclCall& c = data.calls[k];
      g.first_arrival = std::min(g.first_arrival, c.arrival);
      if (c.arrival > g.last_arrival) {
        g.last_arrival = c.arrival;
        g.last = c.participant;
        tie = false;
      } else if (c.arrival == g.last_arrival) {
        tie = true;
      }
    }
    if (tie) g.last = -1;
    if (g.matched() && g.device_basis) ++data.device_collectives;
    if (g.matched() && g.barrier_basis) ++data.barrier_collectives;
  }
  // Measured and modelled waits are not mixed: the barrier waits are read only where every
  // collective compared on device has them (else one median would pool a measurement, whose
  // noise is symmetric, with the model's conservative bound).
  if (data.barrier_collectives < data.device_collectives) {
    for (Collective& g : data.collectives) g.barrier_basis = false;
    data.barrier_collectives = 0;
  }
}

int64_t DeviceBound(const CollectiveData& data, int32_t later) {
  return data.participants[later].device_clock_error_ns;
}

void MarkGraphCaptured(CollectiveData& data) {
  std::set<std::pair<uint64_t, int64_t>> captured;  // (comm, seq) of captured calls
  for (const NcclCall& c : data.calls) {
    if (c.seq >= kGraphReplaySeqBase) captured.emplace(c.comm, c.graph_call);
  }
  if (captured.empty()) return;
  for (Collective& g : data.collectives) {
    if (g.seq >= kGraphReplaySeqBase || !captured.count({g.comm, g.seq})) continue;
    g.graph_captured = g.excluded = true;
    g.last = -1;
    if (g.matched()) ++data.graph_captured_collectives;
  }
}

int64_t ExcludeEnqueueEntries(CollectiveData& data) {
  int64_t excluded = 0;
  if (data.device_collectives == 0) return 0;
  for (Collective& g : data.collectives) {
    if (!g.matched() || g.device_basis || g.graph_captured) continue;
    bool enqueues = false;
    for (size_t k = g.begin; k < g.end; ++k) enqueues |= data.calls[k].enqueue;
    if (!enqueues) continue;
    g.excluded = true;
    g.last = -1;
    ++excluded;
  }
  data.excluded_collectives = excluded;
  return excluded;
}

WaitOrdering OrderByWaits(const CollectiveData& data, int32_t late, bool other_nodes) {
  WaitOrdering out;
  const std::string& node = data.participants[late].node;
  std::vector<int64_t> bounds, own, others;
  std::vector<int64_t> theirs;
  for (const Collective& g : data.collectives) {
    if (!g.compared() || !g.device_basis || (g.done < 0 && !g.barrier_basis)) continue;
    int64_t mine = -1;
    theirs.clear();
    for (size_t k = g.begin; k < g.end; ++k) {
      const NcclCall& c = data.calls[k];
      int64_t d =
          g.barrier_basis ? *c.device->barrier_wait_ns : *c.device->end_ns - *c.device->start_ns;
      if (c.participant == late) {
        mine = d;
      } else if (!other_nodes || data.participants[c.participant].node != node) {
        theirs.push_back(d);
      }
    }
    if (mine < 0 || theirs.empty()) continue;
    int64_t them = Quantile(theirs, 0.5);
    own.push_back(mine);
    others.push_back(them);
    // Barrier waits are measured: every rank leaves the barrier when the last one reached it,
    // so the late rank arrived their wait - its wait later. Durations are a model: their
    // wait - its wait - the end-spread allowance.
    bounds.push_back(g.barrier_basis ? them - mine : them - 2 * mine);
    if (g.barrier_basis) ++out.barrier_collectives;
  }
  out.collectives = static_cast<int64_t>(bounds.size());
  if (bounds.empty()) return out;
  out.own_wait_ns = Quantile(own, 0.5);
  out.others_wait_ns = Quantile(others, 0.5);
  out.late_at_least_ns = Quantile(bounds, 0.5);
  out.determined = out.late_at_least_ns > 0;
  return out;
}

}  // namespace rs::analyzer
