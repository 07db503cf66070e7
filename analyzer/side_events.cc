#include "analyzer/side_events.h"

#include <algorithm>
#include <set>
#include <string_view>

#include "rscore/schema.h"

namespace rs::analyzer {

void DsackLedger::Sent(std::vector<Retransmit>& all, size_t r, std::optional<int64_t> dsack_dups) {
  if (dsack_dups && last_) {
    int64_t answered = *dsack_dups - *last_;
    while (answered > 0 && !pending_.empty()) {
      auto& [index, unanswered] = pending_.back();
      const int64_t take = std::min(answered, unanswered);
      unanswered -= take;
      answered -= take;
      if (unanswered > 0) break;
      all[index].needless = true;
      pending_.pop_back();
    }
  }
  if (dsack_dups) last_ = dsack_dups;
  pending_.emplace_back(r, std::max<int64_t>(1, all[r].segments));
}

int SideEvents::NodeIndex(const std::string& node) const {
  auto it = std::find(nodes.begin(), nodes.end(), node);
  return it == nodes.end() ? -1 : static_cast<int>(it - nodes.begin());
}

std::string NormalizeAddress(const std::string& addr) {
  const std::string mapped = "::ffff:";
  if (addr.size() > mapped.size() && addr.compare(0, mapped.size(), mapped) == 0 &&
      addr.find('.') != std::string::npos) {
    return addr.substr(mapped.size());
  }
  return addr;
}

std::vector<Interval> UnionOf(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(),
            [](const Interval& a, const Interval& b) { return a.start < b.start; });
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (!out.empty() && i.start <= out.back().end) {
      out.back().end = std::max(out.back().end, i.end);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

int64_t CoveredNs(const std::vector<Interval>& u, int64_t a, int64_t b) {
  if (b <= a || u.empty()) return 0;
  auto it = std::upper_bound(u.begin(), u.end(), a,
                             [](int64_t t, const Interval& i) { return t < i.end; });
  int64_t total = 0;
  for (; it != u.end() && it->start < b; ++it) {
    total += std::min(b, it->end) - std::max(a, it->start);
  }
  return total;
}

namespace {

// Retransmits of one segment by one socket are at least an RTO (>= 200 ms) apart.
constexpr int64_t kSameRetransmitNs = 1'000'000;

// Nodes that ran on one kernel: the same boot_id in their recordings' metadata (a merged
// database keeps each bundle's as node.NODE.boot_id). Recordings without one ran alone.
rs::Result<void> LoadKernelMates(rs::Db& db, const std::vector<Participant>& participants,
                                 SideEvents& out) {
  std::set<std::string> job_nodes;
  for (const Participant& p : participants) job_nodes.insert(p.node);
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("SELECT key, value FROM metadata WHERE key LIKE 'node.%.boot_id'"
                              " AND value <> ''"));
  std::map<std::string, std::vector<std::string>> by_boot;  // boot_id -> nodes
  const std::string prefix = "node.", suffix = ".boot_id";
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    std::string key = st.Text(0);
    std::string node = key.substr(prefix.size(), key.size() - prefix.size() - suffix.size());
    if (job_nodes.count(node)) by_boot[st.Text(1)].push_back(node);
  }
  for (const auto& [boot, nodes] : by_boot) {
    for (const std::string& n : nodes) {
      for (const std::string& m : nodes) {
        if (m != n) out.kernel_mates[n].push_back(m);
      }
    }
  }
  return rs::Ok();
}

rs::Result<void> LoadRunq(rs::Db& db, const std::vector<Participant>& participants,
                          SideEvents& out) {
  std::set<std::pair<std::string, int64_t>> wanted;
  std::set<int64_t> pids;
  for (const Participant& p : participants) {
    wanted.emplace(p.node, p.pid);
    pids.insert(p.pid);
  }
  // Per node sharing its kernel: the job's ranks on that kernel (one pid space there).
  std::map<std::string, std::set<int64_t>> co_located_ranks;
  for (const auto& [node, mates] : out.kernel_mates) {
    std::set<std::string> kernel(mates.begin(), mates.end());
    kernel.insert(node);
    for (const Participant& p : participants) {
      if (kernel.count(p.node)) co_located_ranks[node].insert(p.pid);
    }
  }
  if (pids.empty()) return rs::Ok();
  std::string list;
  for (int64_t pid : pids) list += (list.empty() ? "" : ",") + std::to_string(pid);
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("SELECT node, pid, timestamp_ns, duration_ns, other_pid, other_comm"
                              " FROM sched_events WHERE event = 'runq_latency' AND pid IN (" +
                              list + ")"));
  // Millions of rows: the current (node, pid) list and interned comm names avoid a map lookup
  // and a string per row.
  std::string node;
  int64_t pid = -1;
  std::vector<RunqWait>* waits = nullptr;
  const std::set<int64_t>* job_here = nullptr;  // the job's ranks on node's kernel, if shared
  std::map<std::string, int32_t, std::less<>> comm_ids;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    auto text = [&](int col) {
      const unsigned char* t = sqlite3_column_text(st.raw(), col);
      return t ? std::string_view(reinterpret_cast<const char*>(t),
                                  static_cast<size_t>(sqlite3_column_bytes(st.raw(), col)))
               : std::string_view();
    };
    if (st.Int(1) != pid || text(0) != node) {
      node = std::string(text(0));
      pid = st.Int(1);
      waits = wanted.count({node, pid}) ? &out.runq[{node, pid}] : nullptr;
      auto co = co_located_ranks.find(node);
      job_here = co == co_located_ranks.end() ? nullptr : &co->second;
    }
    if (waits == nullptr) continue;
    std::string_view comm = text(5);
    auto it = comm_ids.find(comm);
    if (it == comm_ids.end()) {
      it = comm_ids.emplace(std::string(comm), static_cast<int32_t>(out.comms.size())).first;
      out.comms.emplace_back(comm);
    }
    RunqWait w{st.Int(2), st.Int(2) + std::max<int64_t>(0, st.Int(3)),
               st.IsNull(4) ? -1 : st.Int(4), it->second};
    w.by_co_located_job = job_here != nullptr && job_here->count(w.other_pid) > 0;
    waits->push_back(w);
  }
  // Sorted here: ORDER BY would walk the timestamp index and fetch every row at random.
  for (auto& [key, waits] : out.runq) {
    std::sort(waits.begin(), waits.end(),
              [](const RunqWait& a, const RunqWait& b) { return a.start < b.start; });
  }
  return rs::Ok();
}

// Block I/O of a node: the requests its traced processes issued when it has any (block
// tracepoints are global, so a host running several recorders sees every node's I/O), else
// every request its recorder saw.
rs::Result<void> LoadBlock(rs::Db& db, const std::vector<Participant>& participants,
                           SideEvents& out) {
  std::set<std::pair<std::string, int64_t>> own, ranks;
  for (const Participant& p : participants) own.emplace(p.node, p.pid);
  ranks = own;
  ASSIGN_OR_RETURN(rs::Statement procs, db.Prepare("SELECT node, pid FROM processes"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, procs.Step());
    if (!row) break;
    own.emplace(procs.Text(0), procs.Int(1));
  }
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("SELECT node, timestamp_ns, duration_ns, pid FROM block_events"
                              " WHERE duration_ns IS NOT NULL AND duration_ns > 0"));
  std::map<std::string, std::vector<Interval>> all, mine;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    std::string node = st.Text(0);
    Interval i{st.Int(1), st.Int(1) + st.Int(2)};
    if (!st.IsNull(3) && own.count({node, st.Int(3)})) mine[node].push_back(i);
    if (!st.IsNull(3) && ranks.count({node, st.Int(3)})) {
      out.rank_requests[{node, st.Int(3)}].push_back(BlockRequest{st.Int(1), st.Int(2)});
    }
    all[node].push_back(i);
  }
  for (auto& [key, requests] : out.rank_requests) {
    std::sort(requests.begin(), requests.end(),
              [](const BlockRequest& a, const BlockRequest& b) { return a.ts < b.ts; });
  }
  for (auto& [node, v] : all) {
    auto it = mine.find(node);
    out.block[node] = UnionOf(it != mine.end() ? std::move(it->second) : std::move(v));
  }
  return rs::Ok();
}

// The D-SACK count column where the recording has it (recorders before it wrote none).
rs::Result<std::string> DsackColumn(rs::Db& db) {
  ASSIGN_OR_RETURN(bool has, rs::HasColumn(db, "tcp_events", "dsack_dups"));
  return std::string(has ? "dsack_dups" : "NULL");
}

// One tcp_events row as the attribution reads it.
struct RetransmitRow {
  int64_t ts;
  std::string recorder, saddr, daddr;
  std::string link, conn;  // the socket; the socket and the segment (seq)
  int64_t segments;
  bool has_seq, probe, failed;
  std::optional<int64_t> dsack_dups;
};

rs::Result<std::vector<RetransmitRow>> ReadRetransmitRows(rs::Db& db) {
  ASSIGN_OR_RETURN(std::string ca_state_err, rs::TcpCaStateErrColumns(db));
  ASSIGN_OR_RETURN(std::string dsack, DsackColumn(db));
  std::vector<RetransmitRow> rows;
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("SELECT node, timestamp_ns, saddr, daddr, segments, sport, dport, "
                              "seq, " +
                              ca_state_err + ", " + dsack +
                              ", netns FROM tcp_events WHERE event = 'tcp_retransmit_skb'"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    std::string saddr = st.Text(2), daddr = st.Text(3);
    // One socket: its network namespace (recorders sharing a kernel see the same) and ports.
    std::string link = (st.IsNull(11) ? "?" : st.Text(11)) + "/" + NormalizeAddress(saddr) + ":" +
                       st.Text(5) + ">" + NormalizeAddress(daddr) + ":" + st.Text(6);
    std::string conn = link + "#" + (st.IsNull(7) ? "?" : st.Text(7));
    std::string ca_state = st.IsNull(8) ? "" : st.Text(8);
    bool probe = ca_state == "Open" || ca_state == "Disorder" || ca_state == "CWR";
    std::optional<int64_t> dsack_dups;
    if (!st.IsNull(10)) dsack_dups = st.Int(10);
    rows.push_back({st.Int(1), st.Text(0), std::move(saddr), std::move(daddr), std::move(link),
                    std::move(conn), st.Int(4), !st.IsNull(7), probe,
                    !st.IsNull(9) && st.Int(9) != 0, dsack_dups});
  }
  return rows;
}

rs::Result<void> LoadRetransmits(rs::Db& db, SideEvents& out) {
  std::map<std::string, std::set<std::string>> owners;  // address -> nodes that have it
  ASSIGN_OR_RETURN(rs::Statement ifs, db.Prepare("SELECT node, address FROM interfaces"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, ifs.Step());
    if (!row) break;
    owners[NormalizeAddress(ifs.Text(1))].insert(ifs.Text(0));
  }
  auto owner = [&](const std::string& addr, const std::string& recorder) -> int {
    auto it = owners.find(NormalizeAddress(addr));
    if (it == owners.end()) return -1;
    // Loopback and other shared addresses: the recording node's own, if it has it.
    if (it->second.count(recorder)) return out.NodeIndex(recorder);
    return it->second.size() == 1 ? out.NodeIndex(*it->second.begin()) : -1;
  };
  ASSIGN_OR_RETURN(std::vector<RetransmitRow> rows, ReadRetransmitRows(db));
  // Sorted here: ORDER BY would walk the timestamp index and fetch every row at random.
  std::stable_sort(rows.begin(), rows.end(),
                   [](const RetransmitRow& a, const RetransmitRow& b) { return a.ts < b.ts; });
  // (connection, seq) -> (time, recorder) of its last sighting.
  std::map<std::string, std::pair<int64_t, std::string>> last_seen;
  std::map<std::string, DsackLedger> ledgers;  // per connection
  std::set<std::string> with_dsack, without_dsack;
  for (const RetransmitRow& row : rows) {
    // The same retransmit recorded by several recorders sharing one kernel (nodes that are
    // namespaces of one host) is counted once.
    auto seen = last_seen.find(row.conn);
    if (row.has_seq && seen != last_seen.end() && seen->second.second != row.recorder &&
        row.ts - seen->second.first < kSameRetransmitNs) {
      ++out.retransmits_duplicate;
      continue;
    }
    last_seen[row.conn] = {row.ts, row.recorder};
    if (row.failed) {  // not sent: the kernel tries again later
      ++out.retransmits_failed;
      continue;
    }
    Retransmit r;
    r.ts = row.ts;
    r.src = owner(row.saddr, row.recorder);
    if (r.src < 0) r.src = out.NodeIndex(row.recorder);  // the sender recorded it
    r.dst = owner(row.daddr, row.recorder);
    if (r.dst < 0) ++out.retransmits_without_peer;
    r.segments = std::max<int64_t>(1, row.segments);
    r.probe = row.probe;
    out.retransmits.push_back(r);
    ledgers[row.link].Sent(out.retransmits, out.retransmits.size() - 1, row.dsack_dups);
    (row.dsack_dups ? with_dsack : without_dsack).insert(row.link);
  }
  out.dsack_connections = static_cast<int64_t>(with_dsack.size());
  for (const std::string& link : with_dsack) without_dsack.erase(link);
  out.dsack_unknown_connections = static_cast<int64_t>(without_dsack.size());
  return rs::Ok();
}

}  // namespace

rs::Result<SideEvents> LoadSideEvents(rs::Db& db, const std::vector<Participant>& participants) {
  SideEvents out;
  ASSIGN_OR_RETURN(rs::Statement nodes,
                   db.Prepare("SELECT node FROM interfaces UNION SELECT node FROM tcp_events"
                              " UNION SELECT node FROM clock_refs ORDER BY 1"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, nodes.Step());
    if (!row) break;
    out.nodes.push_back(nodes.Text(0));
  }
  for (const Participant& p : participants) {
    if (out.NodeIndex(p.node) < 0) out.nodes.push_back(p.node);
  }
  RETURN_IF_ERROR(LoadKernelMates(db, participants, out));
  RETURN_IF_ERROR(LoadRunq(db, participants, out));
  RETURN_IF_ERROR(LoadBlock(db, participants, out));
  RETURN_IF_ERROR(LoadRetransmits(db, out));
  return out;
}

}  // namespace rs::analyzer
