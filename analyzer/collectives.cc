#include "collectives.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

namespace analyzer {

std::string Participant::Label() const {
  return rank ? node + " rank " + std::to_string(*rank) : node + " pid " + std::to_string(pid);
}

int64_t Quantile(std::vector<int64_t>& v, double q) {
  if (v.empty()) return 0;
  size_t k = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  k = std::min(k, v.size() - 1);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
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
  std::map<std::pair<std::string, int64_t>, int32_t> index;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    std::string node = st.Text(0);
    int64_t pid = st.Int(1);
    auto key = std::make_pair(node, pid);
    auto it = index.find(key);
    if (it == index.end()) {
      Participant p{node, pid, st.OptInt(2), st.IsNull(14) ? "" : st.Text(14)};
      if (!p.rank) p.rank = st.OptInt(3);
      it = index.emplace(key, static_cast<int32_t>(out.participants.size())).first;
      out.participants.push_back(std::move(p));
    }
    NcclCall c;
    c.participant = it->second;
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
    g.last = kept[g.end - 1].participant;
    if (g.end - g.begin >= 2 && kept[g.end - 2].ts == g.last_entry) g.last = -1;
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
  return out;
}

namespace {

ArrivalStats Summarize(std::vector<int64_t>& lateness, std::vector<int64_t>& durations,
                       int64_t last_count) {
  ArrivalStats s;
  s.collectives = static_cast<int64_t>(lateness.size());
  s.last_count = last_count;
  s.median_lateness_ns = Quantile(lateness, 0.5);
  s.p90_lateness_ns = Quantile(lateness, 0.9);
  s.median_duration_ns = durations.empty() ? -1 : Quantile(durations, 0.5);
  return s;
}

}  // namespace

std::vector<ArrivalStats> ParticipantStats(const CollectiveData& data) {
  size_t n = data.participants.size();
  std::vector<std::vector<int64_t>> late(n), durs(n);
  std::vector<int64_t> last(n, 0);
  for (const Collective& g : data.collectives) {
    if (!g.matched()) continue;
    for (size_t k = g.begin; k < g.end; ++k) {
      const NcclCall& c = data.calls[k];
      late[c.participant].push_back(c.ts - g.first_entry);
      if (!c.in_flight()) durs[c.participant].push_back(c.dur);
    }
    if (g.last >= 0) ++last[g.last];
  }
  std::vector<ArrivalStats> out;
  for (size_t p = 0; p < n; ++p) {
    ArrivalStats s = Summarize(late[p], durs[p], last[p]);
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
  std::vector<std::vector<int64_t>> late(idx.size()), durs(idx.size());
  std::vector<int64_t> last(idx.size(), 0);
  std::vector<int64_t> node_late(idx.size());
  for (const Collective& g : data.collectives) {
    if (!g.matched()) continue;
    std::fill(node_late.begin(), node_late.end(), -1);
    for (size_t k = g.begin; k < g.end; ++k) {
      const NcclCall& c = data.calls[k];
      size_t n = idx[data.participants[c.participant].node];
      node_late[n] = std::max(node_late[n], c.ts - g.first_entry);
      if (!c.in_flight()) durs[n].push_back(c.dur);
    }
    for (size_t n = 0; n < idx.size(); ++n) {
      if (node_late[n] >= 0) late[n].push_back(node_late[n]);
    }
    if (g.last >= 0) ++last[idx[data.participants[g.last].node]];
  }
  std::vector<ArrivalStats> out;
  for (auto& [node, n] : idx) {
    ArrivalStats s = Summarize(late[n], durs[n], last[n]);
    s.node = node;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace analyzer
