#include "collectives.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "device_arrival.h"
#include "rscore/cli.h"

namespace analyzer {

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
    return std::tie(a.comm, a.seq, a.ts) < std::tie(b.comm, b.seq, b.ts);
  });
  // Group by (comm, seq); keep one call per participant (the first) in each group.
  std::vector<NcclCall> kept;
  kept.reserve(out.calls.size());
  for (size_t i = 0; i < out.calls.size();) {
    size_t j = i;
    while (j < out.calls.size() && out.calls[j].comm == out.calls[i].comm &&
           out.calls[j].seq == out.calls[i].seq) {
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
  SetArrivals(out);
  return out;
}

namespace {

// One participant's (or node's) samples over the compared collectives.
struct Samples {
  std::vector<int64_t> late, host, durs, wait;
  int64_t last = 0, on_device = 0, wait_last = 0;
};

ArrivalStats Summarize(Samples& m) {
  ArrivalStats s;
  s.collectives = static_cast<int64_t>(m.late.size());
  s.last_count = m.last;
  s.median_lateness_ns = Quantile(m.late, 0.5);
  s.p90_lateness_ns = Quantile(m.late, 0.9);
  s.median_duration_ns = m.durs.empty() ? -1 : Quantile(m.durs, 0.5);
  s.median_host_lateness_ns = Quantile(m.host, 0.5);
  s.device_collectives = m.on_device;
  s.wait_collectives = static_cast<int64_t>(m.wait.size());
  if (!m.wait.empty()) {
    s.median_wait_lateness_ns = Quantile(m.wait, 0.5);
    s.p90_wait_lateness_ns = Quantile(m.wait, 0.9);
  }
  s.wait_last_count = m.wait_last;
  return s;
}

// Device durations of a collective timed on every device: the longest, and the participant
// with the unique shortest (-1: a tie, or the collective is not timed everywhere).
struct Waits {
  int64_t longest = -1;
  int32_t least = -1;
};

Waits WaitsOf(const CollectiveData& data, const Collective& g) {
  Waits w;
  if (!g.device_basis || g.done < 0) return w;
  int64_t shortest = -1;
  for (size_t k = g.begin; k < g.end; ++k) {
    int64_t d = ComparedDuration(g, data.calls[k]);
    w.longest = std::max(w.longest, d);
    if (shortest < 0 || d < shortest) {
      shortest = d;
      w.least = data.calls[k].participant;
    } else if (d == shortest) {
      w.least = -1;
    }
  }
  return w;
}

}  // namespace

std::vector<ArrivalStats> ParticipantStats(const CollectiveData& data) {
  size_t n = data.participants.size();
  std::vector<Samples> m(n);
  for (const Collective& g : data.collectives) {
    if (!g.compared()) continue;
    Waits w = WaitsOf(data, g);
    for (size_t k = g.begin; k < g.end; ++k) {
      const NcclCall& c = data.calls[k];
      Samples& mine = m[c.participant];
      mine.late.push_back(c.arrival - g.first_arrival);
      mine.host.push_back(c.ts - g.first_entry);
      if (g.device_basis) ++mine.on_device;
      int64_t d = ComparedDuration(g, c);
      if (d >= 0) mine.durs.push_back(d);
      if (w.longest >= 0) mine.wait.push_back(w.longest - d);
    }
    if (g.last >= 0) ++m[g.last].last;
    if (w.least >= 0) ++m[w.least].wait_last;
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
  for (const Collective& g : data.collectives) {
    if (!g.compared()) continue;
    Waits w = WaitsOf(data, g);
    std::fill(node_late.begin(), node_late.end(), -1);
    std::fill(node_host.begin(), node_host.end(), -1);
    std::fill(node_wait.begin(), node_wait.end(), -1);
    for (size_t k = g.begin; k < g.end; ++k) {
      const NcclCall& c = data.calls[k];
      size_t n = idx[data.participants[c.participant].node];
      node_late[n] = std::max(node_late[n], c.arrival - g.first_arrival);
      node_host[n] = std::max(node_host[n], c.ts - g.first_entry);
      int64_t d = ComparedDuration(g, c);
      if (d >= 0) m[n].durs.push_back(d);
      if (w.longest >= 0) node_wait[n] = std::max(node_wait[n], w.longest - d);
    }
    for (size_t n = 0; n < idx.size(); ++n) {
      if (node_late[n] < 0) continue;
      m[n].late.push_back(node_late[n]);
      m[n].host.push_back(node_host[n]);
      if (node_wait[n] >= 0) m[n].wait.push_back(node_wait[n]);
      if (g.device_basis) ++m[n].on_device;
    }
    if (g.last >= 0) ++m[idx[data.participants[g.last].node]].last;
    if (w.least >= 0) ++m[idx[data.participants[w.least].node]].wait_last;
  }
  std::vector<ArrivalStats> out;
  for (auto& [node, n] : idx) {
    ArrivalStats s = Summarize(m[n]);
    s.node = node;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<ArrivalStats> AsWaitStats(std::vector<ArrivalStats> stats) {
  for (ArrivalStats& s : stats) {
    s.collectives = s.wait_collectives;
    s.device_collectives = s.wait_collectives;
    s.median_lateness_ns = std::max<int64_t>(0, s.median_wait_lateness_ns);
    s.p90_lateness_ns = std::max<int64_t>(0, s.p90_wait_lateness_ns);
    s.last_count = s.wait_last_count;
  }
  return stats;
}

}  // namespace analyzer
