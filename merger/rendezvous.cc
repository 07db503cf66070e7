#include "rendezvous.h"

#include <algorithm>
#include <utility>

namespace merge {
namespace {

std::string RendezvousQuery() {
  std::string ops;
  for (const char* op : kRendezvousOps)
    ops += std::string(ops.empty() ? "" : ", ") + "'" + op + "'";
  return "SELECT comm_id_hash, op, seq, timestamp_ns, timestamp_ns + duration_ns FROM nccl_events"
         " WHERE comm_id_hash IS NOT NULL AND duration_ns IS NOT NULL AND duration_ns >= 0"
         " AND state = 'complete' AND in_group = 0 AND (ret IS NULL OR ret = 0)"
         " AND ((op IN (" +
         ops +
         ") AND seq IS NOT NULL) OR op LIKE 'COMM\\_INIT%' ESCAPE '\\' OR op = 'COMM_SPLIT')"
         " ORDER BY comm_id_hash, seq, op";
}

}  // namespace

rs::Result<void> RendezvousCollector::AddNode(rs::Db& db, int node) {
  ASSIGN_OR_RETURN(rs::Statement st, db.Prepare(RendezvousQuery()));
  // Calls of one rendezvous on this node (its ranks); flushed when the key changes.
  Key current;
  std::vector<std::pair<int64_t, int64_t>> calls;
  auto flush = [&]() {
    if (calls.empty()) return;
    NodeObservation o;
    o.node = node;
    o.max_entry_ns = calls[0].first;
    o.min_exit_ns = calls[0].second;
    std::vector<int64_t> exits;
    for (auto [entry, exit] : calls) {
      o.max_entry_ns = std::max(o.max_entry_ns, entry);
      o.min_exit_ns = std::min(o.min_exit_ns, exit);
      exits.push_back(exit);
    }
    std::sort(exits.begin(), exits.end());
    o.mid_exit_ns = exits[exits.size() / 2];
    auto [it, fresh] = index_.emplace(current, all_.size());
    if (fresh) all_.emplace_back();
    all_[it->second].nodes.push_back(o);
    calls.clear();
  };
  for (;;) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    std::string op = st.Text(1);
    bool init = op.rfind("COMM_", 0) == 0;
    Key key{st.Int(0), init ? -1 : st.Int(2), init ? op : std::string()};
    if (key != current) {
      flush();
      current = key;
    }
    calls.emplace_back(st.Int(3), st.Int(4));
    ++calls_;
  }
  flush();
  return rs::Ok();
}

void RendezvousCollector::Absorb(const RendezvousCollector& other, int node) {
  for (const auto& [key, idx] : other.index_) {
    auto [it, fresh] = index_.emplace(key, all_.size());
    if (fresh) all_.emplace_back();
    for (NodeObservation o : other.all_[idx].nodes) {
      o.node = node;
      all_[it->second].nodes.push_back(o);
    }
  }
  calls_ += other.calls_;
}

std::vector<Rendezvous> RendezvousCollector::Take() {
  std::vector<Rendezvous> out;
  for (Rendezvous& r : all_) {
    if (r.nodes.size() >= 2) out.push_back(std::move(r));
  }
  all_.clear();
  index_.clear();
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

}  // namespace merge
