#include "analyzer/held_index.h"

#include <algorithm>
#include <string>
#include <utility>

#include "rscore/device_times.h"

namespace rs::analyzer {

rs::Result<void> LoadP2pCalls(rs::Db& db, CollectiveData& data) {
  const std::string device_cols =
      data.gpu_ops_table ? "g.timestamp_ns, g.device_start_ns, g.device_end_ns, g.clock_error_ns,"
                           " g.state"
                         : "NULL, NULL, NULL, NULL, NULL";
  const std::string join = data.gpu_ops_table
                               ? " LEFT JOIN gpu_ops g ON g.node = e.node AND g.pid = e.pid"
                                 " AND g.comm_id_hash = e.comm_id_hash AND g.seq = e.seq"
                                 " AND g.op = e.op AND g.peer = e.peer"
                               : "";
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("SELECT e.node, e.pid, e.comm_id_hash, e.seq, e.op, e.timestamp_ns,"
                              " e.duration_ns, e.state, e.rank, e.nranks, e.peer, e.count,"
                              " e.datatype, " +
                              device_cols + " FROM nccl_events e" + join +
                              " WHERE e.op IN ('SEND', 'RECV') AND e.comm_id_hash IS NOT NULL"
                              "   AND e.seq IS NOT NULL AND e.peer IS NOT NULL"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    auto who = data.participant_index.find({st.Text(0), st.Int(1)});
    if (who == data.participant_index.end()) continue;
    NcclCall c;
    c.participant = who->second;
    c.comm = static_cast<uint64_t>(st.Int(2));
    c.seq = st.Int(3);
    c.op = st.Text(4);
    c.ts = st.Int(5);
    c.dur = st.IsNull(6) || st.Text(7) == "in_flight" ? -1 : std::max<int64_t>(0, st.Int(6));
    c.rank = st.OptInt(8);
    c.nranks = st.OptInt(9);
    c.peer = st.Int(10);
    c.count = st.OptInt(11);
    c.datatype = st.IsNull(12) ? "" : st.Text(12);
    if (!st.IsNull(13)) {
      DeviceOp d;
      d.enqueue_ns = st.Int(13);
      const rs::DeviceTimes t = rs::ReadDeviceTimes(st.OptInt(14), st.OptInt(15), st.OptInt(16));
      d.start_ns = t.start_ns;
      d.end_ns = t.end_ns;
      d.clock_error_ns = t.clock_error_ns;
      d.state = st.Text(17);
      c.device = d;
    }
    data.p2p.push_back(std::move(c));
  }
  return {};
}

// PyTorch (ProcessGroupNCCL, 2.x): a collective's NCCL stream first waits for the current CUDA
// stream (syncStream), and a finished work's wait() makes the current stream wait for the NCCL
// stream's end event; sends and receives are works like collectives (Megatron-LM's pipeline
// schedule waits on its batch_isend_irecv requests before computing on what they moved). So a
// rank's device reaches its next collective only after the previous call of another
// communicator, or its last send or receive, finished there; and a blocking call is entered
// only after the previous one returned.
void HeldIndex::Ends::Add(const NcclCall& c, bool device, bool p2p) {
  // An enqueue's return holds nothing: the rank may enter its next call at once.
  const bool host_exit = c.host_seen && !c.in_flight() && !c.enqueue;
  if (device && c.device && c.device->end_ns) {
    ends.push_back({*c.device->end_ns, c.comm, p2p});
  } else if (host_exit) {
    ends.push_back({c.ts + c.dur, c.comm, p2p});
  }
}

void HeldIndex::Ends::Index() {
  std::stable_sort(ends.begin(), ends.end());
  other.assign(ends.size(), -1);
  for (size_t i = 1; i < ends.size(); ++i) {
    other[i] = !ends[i - 1].SameSource(ends[i]) ? static_cast<int64_t>(i - 1) : other[i - 1];
  }
}

HeldIndex::HeldIndex(const CollectiveData& data)
    : device_(data.participants.size()), host_(data.participants.size()) {
  for (bool p2p : {false, true}) {
    for (const NcclCall& c : p2p ? data.p2p : data.calls) {
      device_[c.participant].Add(c, /*device=*/true, p2p);
      host_[c.participant].Add(c, /*device=*/false, p2p);
    }
  }
  for (std::vector<Ends>* basis : {&device_, &host_}) {
    for (Ends& e : *basis) e.Index();
  }
}

int64_t HeldIndex::Ends::Before(int64_t at) const {
  // The first end after `at`; ties count as before it.
  auto it = std::upper_bound(ends.begin(), ends.end(), End{at, 0, false});
  return it - ends.begin() - 1;
}

std::optional<int64_t> HeldIndex::Released(const Collective& g, const NcclCall& c) const {
  const Ends& e = (g.device_basis ? device_ : host_)[c.participant];
  const int64_t i = e.Before(c.arrival);
  if (i < 0) return std::nullopt;
  return e.ends[i].at;
}

std::optional<int64_t> HeldIndex::Held(const Collective& g, const NcclCall& c) const {
  const Ends& e = (g.device_basis ? device_ : host_)[c.participant];
  int64_t i = e.Before(c.arrival);
  if (i < 0) return std::nullopt;
  if (!e.ends[i].p2p && e.ends[i].comm == g.comm) i = e.other[i];
  if (i < 0) return std::nullopt;
  return e.ends[i].at;
}

}  // namespace rs::analyzer
