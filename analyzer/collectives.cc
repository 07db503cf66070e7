#include "analyzer/collectives.h"

#include <algorithm>
#include <utility>

#include "analyzer/device_arrival.h"
#include "analyzer/held_index.h"
#include "rscore/cli.h"

namespace rs::analyzer {

std::string SeqWords(int64_t seq) {
  if (seq >= kNcclSeqBase) {
    return "NCCL seqNumber " + std::to_string((seq - kNcclSeqBase) % kNcclSeqOpStride);
  }
  return seq >= kGraphReplaySeqBase ? "graph replay " + std::to_string(seq - kGraphReplaySeqBase)
                                    : "seq " + std::to_string(seq);
}

std::string Participant::Label() const {
  return rank ? node + " rank " + std::to_string(*rank) : node + " pid " + std::to_string(pid);
}

bool RankOrderLess(const std::string& node_a, std::optional<int64_t> rank_a, int64_t pid_a,
                   const std::string& node_b, std::optional<int64_t> rank_b, int64_t pid_b) {
  if (node_a != node_b) return rs::cli::NaturalLess(node_a, node_b);
  return std::make_pair(rank_a.value_or(-1), pid_a) < std::make_pair(rank_b.value_or(-1), pid_b);
}

int64_t Quantile(std::vector<int64_t>& v, double q) {
  if (v.empty()) return 0;
  size_t k = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  k = std::min(k, v.size() - 1);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

int32_t AddParticipant(CollectiveData& data, const std::string& node, int64_t pid,
                       std::optional<int64_t> rank, const std::string& comm) {
  auto key = std::make_pair(node, pid);
  auto it = data.participant_index.find(key);
  if (it != data.participant_index.end()) return it->second;
  int32_t index = static_cast<int32_t>(data.participants.size());
  data.participant_index.emplace(std::move(key), index);
  Participant p;
  p.node = node;
  p.pid = pid;
  p.rank = rank;
  p.comm = comm;
  data.participants.push_back(std::move(p));
  return index;
}

int64_t ComparedDuration(const Collective& g, const NcclCall& c) {
  if (g.device_basis) {
    return c.device && c.device->end_ns ? std::max<int64_t>(0, *c.device->end_ns - c.arrival) : -1;
  }
  return c.in_flight() || !c.host_seen ? -1 : c.dur;
}

rs::Result<CollectiveData> LoadCollectives(rs::Db& db) {
  CollectiveData out;
  // Communicator management and point-to-point calls do not rendezvous by (comm, seq).
  ASSIGN_OR_RETURN(
      rs::Statement st,
      db.Prepare("SELECT e.node, e.pid, p.rank, e.rank, e.nranks, e.comm_id_hash, e.seq, e.op,"
                 " e.timestamp_ns, e.duration_ns, e.state, e.count, e.datatype, e.root, p.comm"
                 " FROM nccl_events e LEFT JOIN processes p ON p.node = e.node AND p.pid = e.pid"
                 " WHERE e.comm_id_hash IS NOT NULL AND e.seq IS NOT NULL"
                 "   AND e.op NOT IN ('SEND', 'RECV', 'GROUP_START', 'GROUP_END')"
                 "   AND e.op NOT LIKE 'COMM%'"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    std::optional<int64_t> rank = st.OptInt(2);
    if (!rank) rank = st.OptInt(3);
    NcclCall c;
    c.participant =
        AddParticipant(out, st.Text(0), st.Int(1), rank, st.IsNull(14) ? "" : st.Text(14));
    if (!st.IsNull(2)) out.participants[c.participant].rank_recorded = true;
    c.rank = st.OptInt(3);
    c.nranks = st.OptInt(4);
    c.comm = static_cast<uint64_t>(st.Int(5));
    c.seq = st.Int(6);
    c.op = st.Text(7);
    c.ts = st.Int(8);
    bool in_flight = st.IsNull(9) || st.Text(10) == "in_flight";
    c.dur = in_flight ? -1 : std::max<int64_t>(0, st.Int(9));
    c.count = st.OptInt(11);
    c.datatype = st.IsNull(12) ? "" : st.Text(12);
    c.root = st.OptInt(13);
    out.calls.push_back(std::move(c));
  }
  RETURN_IF_ERROR(JoinDeviceOps(db, out));
  // Sorted here: ORDER BY would walk an index and fetch every row at random.
  std::stable_sort(out.calls.begin(), out.calls.end(), [](const NcclCall& a, const NcclCall& b) {
    return std::tie(a.comm, a.seq, a.graph_call, a.ts) <
           std::tie(b.comm, b.seq, b.graph_call, b.ts);
  });
  // Group by (comm, seq); keep one call per participant (the first) in each group.
  std::vector<NcclCall> kept;
  kept.reserve(out.calls.size());
  for (size_t i = 0; i < out.calls.size();) {
    size_t j = i;
    // Replays of one number that name different captured calls were counted from different
    // points on their ranks: not one collective.
    while (j < out.calls.size() && out.calls[j].comm == out.calls[i].comm &&
           out.calls[j].seq == out.calls[i].seq &&
           out.calls[j].graph_call == out.calls[i].graph_call) {
      ++j;
    }
    Collective g;
    g.comm = out.calls[i].comm;
    g.seq = out.calls[i].seq;
    g.begin = kept.size();
    std::vector<int32_t> seen;
    for (size_t k = i; k < j; ++k) {
      if (std::find(seen.begin(), seen.end(), out.calls[k].participant) != seen.end()) continue;
      seen.push_back(out.calls[k].participant);
      kept.push_back(std::move(out.calls[k]));
    }
    g.end = kept.size();
    g.first_entry = kept[g.begin].ts;
    g.last_entry = kept[g.end - 1].ts;
    int64_t last_exit = 0;
    for (size_t k = g.begin; k < g.end; ++k) {
      if (kept[k].in_flight()) {
        last_exit = -1;
        break;
      }
      last_exit = std::max(last_exit, kept[k].ts + kept[k].dur);
    }
    g.last_exit = last_exit;
    if (g.matched()) ++out.matched;
    out.collectives.push_back(g);
    i = j;
  }
  out.calls = std::move(kept);
  MarkGraphCaptured(out);
  SetArrivals(out);
  RETURN_IF_ERROR(LoadP2pCalls(db, out));
  return out;
}

}  // namespace rs::analyzer
