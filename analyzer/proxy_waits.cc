#include "analyzer/proxy_waits.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "analyzer/collectives.h"
#include "analyzer/report_format.h"
#include "rscore/schema.h"

namespace rs::analyzer {
namespace {

// A rank's sends stand out on the network at this many times the median of every rank's
// per-operation time, and this much more in absolute terms: a send's time grows with its size
// and its peer's load. Measured on the test bed (run-cluster, 4 nodes x 2 ranks, 40 steps, TCP
// sockets, one run each): per-rank medians 293-562 us clean, 366-593 us with 5% loss on one
// node (over sockets a send completes once the kernel took the bytes), and under --fault rdma
// (the fault node's sends to other nodes 1 ms late per ring step) 285-521 us except the faulty
// link's sender, 16.0 ms.
constexpr double kNetStandsOutBy = 3.0;
constexpr int64_t kNetStandsOutNs = 1'000'000;
// ... over at least this many operations with sends.
constexpr int64_t kMinOps = 3;

struct Acc {
  NodeProxyWaits w;
  std::map<int64_t, std::vector<int64_t>> send_net;  // by rank (-1: unknown)
  std::vector<int64_t> own_gpu;
  int64_t slowest_comm = 0, slowest_peer = -1;
  bool slowest_peer_known = false;
};

int64_t Median(std::vector<int64_t>& v) { return v.empty() ? 0 : Quantile(v, 0.5); }

std::string Ms(int64_t ns) { return FormatNs(ns); }

std::string RankWords(const NodeProxyWaits& n) {
  return n.worst_rank >= 0 ? "rank " + std::to_string(n.worst_rank) + "'s" : "its";
}

// A recorder's metadata count, summed over the nodes of a merged recording.
rs::Result<int64_t> SumMetadata(rs::Db& db, const std::string& key) {
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("SELECT COALESCE(SUM(CAST(value AS INTEGER)), 0) FROM metadata"
                              " WHERE key = ?1 OR (substr(key, 1, 5) = 'node.'"
                              " AND substr(key, -length(?1) - 1) = '.' || ?1)"));
  st.Bind(1, key);
  ASSIGN_OR_RETURN(bool row, st.Step());
  return row ? st.Int(0) : 0;
}

}  // namespace

const NodeProxyWaits* ProxyWaits::Find(const std::string& node) const {
  for (const NodeProxyWaits& n : nodes) {
    if (n.node == node) return &n;
  }
  return nullptr;
}

rs::Result<ProxyWaits> LoadProxyWaits(rs::Db& db) {
  ProxyWaits out;
  ASSIGN_OR_RETURN(bool has, rs::HasColumn(db, "gpu_ops", "net_step_max_peer"));
  if (!has) return out;
  // (communicator, rank) -> node, for the peer of a node's slowest step.
  std::map<std::pair<int64_t, int64_t>, std::string> node_of;
  {
    ASSIGN_OR_RETURN(rs::Statement st,
                     db.Prepare("SELECT DISTINCT comm_id_hash, rank, node FROM gpu_ops"
                                " WHERE comm_id_hash IS NOT NULL AND rank IS NOT NULL"));
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      node_of[{st.Int(0), st.Int(1)}] = st.Text(2);
    }
  }
  std::vector<std::string> order;
  std::map<std::string, Acc> acc;
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("SELECT node, comm_id_hash, proxy_steps, send_gpu_wait_ns,"
                              " send_peer_wait_ns, send_net_ns, recv_net_wait_ns,"
                              " recv_gpu_wait_ns, net_step_max_ns, net_step_max_peer, rank"
                              " FROM gpu_ops WHERE proxy_steps > 0 ORDER BY id"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    const std::string node = st.Text(0);
    auto [it, added] = acc.try_emplace(node);
    if (added) order.push_back(node);
    Acc& a = it->second;
    a.w.node = node;
    ++a.w.ops;
    a.w.steps += st.Int(2);
    const int64_t sent_gpu = st.Int(3), peer = st.Int(4), net = st.Int(5);
    const int64_t recv_net = st.Int(6), recv_gpu = st.Int(7);
    a.w.send_gpu_wait_ns += sent_gpu;
    a.w.send_peer_wait_ns += peer;
    a.w.send_net_ns += net;
    a.w.recv_net_wait_ns += recv_net;
    a.w.recv_gpu_wait_ns += recv_gpu;
    if (sent_gpu + peer + net > 0) a.send_net[st.IsNull(10) ? -1 : st.Int(10)].push_back(net);
    a.own_gpu.push_back(sent_gpu + recv_gpu);
    const int64_t longest = st.IsNull(8) ? 0 : st.Int(8);
    if (longest > a.w.slowest_step_ns) {
      a.w.slowest_step_ns = longest;
      a.slowest_peer_known = !st.IsNull(1) && !st.IsNull(9);
      a.slowest_comm = st.IsNull(1) ? 0 : st.Int(1);
      a.slowest_peer = st.IsNull(9) ? -1 : st.Int(9);
    }
  }
  ASSIGN_OR_RETURN(out.partial_ops, SumMetadata(db, "gpu_proxy_times_partial"));
  ASSIGN_OR_RETURN(out.processes_off, SumMetadata(db, "gpu_regions_proxy_times_off"));
  if (order.empty()) return out;
  // Per rank: each GPU may have a NIC of its own (rail-optimized clusters), so one rank's link
  // is diluted in its node's other ranks.
  std::vector<int64_t> medians;
  for (const std::string& node : order) {
    Acc& a = acc.at(node);
    for (auto& [rank, v] : a.send_net) {
      const int64_t m = Median(v);
      medians.push_back(m);
      if (a.w.worst_rank_ops == 0 || m > a.w.send_net_per_op_ns) {
        a.w.send_net_per_op_ns = m;
        a.w.worst_rank = rank;
        a.w.worst_rank_ops = static_cast<int64_t>(v.size());
      }
    }
    a.w.own_gpu_wait_per_op_ns = Median(a.own_gpu);
    if (a.slowest_peer_known) {
      auto it = node_of.find({a.slowest_comm, a.slowest_peer});
      if (it != node_of.end()) a.w.slowest_step_to = it->second;
    }
  }
  out.median_send_net_per_op_ns = Median(medians);
  for (const std::string& node : order) {
    Acc& a = acc.at(node);
    const double usual = static_cast<double>(out.median_send_net_per_op_ns);
    const int64_t mine = a.w.send_net_per_op_ns;
    a.w.net_stands_out = medians.size() >= 2 && a.w.worst_rank_ops >= kMinOps &&
                         static_cast<double>(mine) >= kNetStandsOutBy * usual &&
                         mine - out.median_send_net_per_op_ns >= kNetStandsOutNs;
    out.nodes.push_back(std::move(a.w));
  }
  return out;
}

Evidence ProxyEvidence(const ProxyWaits& w, const NodeProxyWaits& n) {
  Evidence e;
  e.kind = "proxy";
  e.summary = "NCCL's proxy on " + n.node + ": " + RankWords(n) + " sends were on the network " +
              Ms(n.send_net_per_op_ns) + " per operation (median of " +
              std::to_string(n.worst_rank_ops) + "), against " + Ms(w.median_send_net_per_op_ns) +
              " over all ranks";
  if (n.slowest_step_ns > 0) {
    e.summary += "; its slowest step took " + Ms(n.slowest_step_ns) +
                 (n.slowest_step_to.empty() ? "" : " (to " + n.slowest_step_to + ")");
  }
  e.summary += "; waiting for its own GPU: " + Ms(n.own_gpu_wait_per_op_ns) + " per operation";
  e.values = {{"ops", static_cast<double>(n.ops)},
              {"steps", static_cast<double>(n.steps)},
              {"send_net_per_op_ns", static_cast<double>(n.send_net_per_op_ns)},
              {"median_send_net_per_op_ns", static_cast<double>(w.median_send_net_per_op_ns)},
              {"own_gpu_wait_per_op_ns", static_cast<double>(n.own_gpu_wait_per_op_ns)},
              {"slowest_step_ns", static_cast<double>(n.slowest_step_ns)}};
  return e;
}

void PlaceProxyWaits(const ProxyWaits& w, std::vector<Straggler>& ranked,
                     std::vector<Straggler>& observed, std::vector<std::string>& notes) {
  if (w.empty()) return;
  std::string off;
  if (w.processes_off > 0) {
    off = std::to_string(w.processes_off) +
          " process(es) timed no proxy step (RANKSCOPE_PLUGIN_PROXY_TIMES=0): their sends and "
          "receives are not in this view";
  }
  if (w.nodes.empty()) {
    notes.push_back("NCCL's proxy: " + off);
    return;
  }
  int64_t steps = 0, ops = 0;
  std::vector<const NodeProxyWaits*> out;
  for (const NodeProxyWaits& n : w.nodes) {
    steps += n.steps;
    ops += n.ops;
    if (n.net_stands_out) out.push_back(&n);
  }
  std::string note =
      "NCCL's proxy timed " + std::to_string(steps) + " network steps of " + std::to_string(ops) +
      " operations on " + std::to_string(w.nodes.size()) +
      " node(s) (median per operation on the network: " + Ms(w.median_send_net_per_op_ns) + ")";
  if (out.empty()) {
    note += ": no node's sends stood out on the network";
  }
  for (const NodeProxyWaits* n : out) {
    note += "; " + n->node + "'s sends stood out (" + RankWords(*n) +
            "): " + Ms(n->send_net_per_op_ns) + " per operation" +
            (n->slowest_step_to.empty() ? "" : ", its slowest step to " + n->slowest_step_to);
    for (std::vector<Straggler>* list : {&ranked, &observed}) {
      for (Straggler& s : *list) {
        if (s.node == n->node && s.cause == "network") s.evidence.push_back(ProxyEvidence(w, *n));
      }
    }
  }
  note +=
      " (a send is complete when the transport says so: over InfiniBand/RoCE once the "
      "peer's adapter acknowledged it, over NCCL's socket transport once the kernel took "
      "the bytes, so loss there shows in the receivers' waits)";
  if (!off.empty()) note += "; " + off;
  if (w.partial_ops > 0) {
    note += "; " + std::to_string(w.partial_ops) +
            " operation(s) had steps left untimed (metadata gpu_proxy_times_partial): their "
            "times are lower bounds";
  }
  notes.push_back(note);
}

}  // namespace rs::analyzer
