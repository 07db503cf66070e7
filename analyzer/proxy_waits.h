// NCCL's own view of the network: where its proxy's time went, per node, from the profiler
// plugin's ProxyStep phases (gpu_ops proxy_steps, send_gpu_wait_ns ... net_step_max_peer;
// libnccl-profiler-rankscope(7)). A send step waits for this rank's kernel to fill the buffer,
// then for the receiving peer's free buffer, then for the network to complete it; a receive
// step waits for the data, then for this rank's kernel to consume it (NCCL 2.28-2.31,
// src/transport/net.cc). When a send is complete depends on the transport: over InfiniBand /
// RoCE when the peer's adapter acknowledged it (a bad link's retries lengthen it), over NCCL's
// socket transport once the kernel took the bytes (packet loss shows in the receivers' waits
// instead).
//
// Used as network evidence: a node one of whose ranks' sends' time on the network per
// operation stands out against every rank's (kNetStandsOutBy times their median and
// kNetStandsOutNs more) is
// named in a note and, where a network finding names it, in that finding's evidence; it is no
// finding of its own (the time a send takes also grows with its size and the peer's load).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/report_model.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::analyzer {

struct NodeProxyWaits {
  std::string node;
  int64_t ops = 0;    // operations with timed steps
  int64_t steps = 0;  // steps timed (sends and receives)
  // Summed over its operations, ns.
  int64_t send_gpu_wait_ns = 0, send_peer_wait_ns = 0, send_net_ns = 0;
  int64_t recv_net_wait_ns = 0, recv_gpu_wait_ns = 0;
  // Medians per operation, ns: sends on the network, of its rank whose median is the largest
  // (worst_rank, -1 unknown; worst_rank_ops its operations with sends); waits for the node's
  // own kernels (sends' GPU wait + receives' GPU wait), over its operations.
  int64_t send_net_per_op_ns = 0, own_gpu_wait_per_op_ns = 0;
  int64_t worst_rank = -1, worst_rank_ops = 0;
  // The longest single send step on the network, and the node of its peer ("" unknown).
  int64_t slowest_step_ns = 0;
  std::string slowest_step_to;
  bool net_stands_out = false;  // see the file comment
};

struct ProxyWaits {
  std::vector<NodeProxyWaits> nodes;  // nodes with timed steps, in the table's order
  int64_t partial_ops = 0;            // metadata gpu_proxy_times_partial, summed
  int64_t processes_off = 0;          // metadata gpu_regions_proxy_times_off, summed
  // The median over every rank of its sends' median time on the network per operation, ns.
  int64_t median_send_net_per_op_ns = 0;
  bool empty() const { return nodes.empty() && processes_off == 0; }
  const NodeProxyWaits* Find(const std::string& node) const;
};

// Nothing where gpu_ops lacks the columns (an older recorder) or no step was timed.
rs::Result<ProxyWaits> LoadProxyWaits(rs::Db& db);

// The evidence for a node ("proxy"): its sends' network time against the other nodes'.
Evidence ProxyEvidence(const ProxyWaits& w, const NodeProxyWaits& n);

// A note on what the proxy saw (nothing when it timed no step); and the evidence added to the
// network findings on a node whose sends stood out.
void PlaceProxyWaits(const ProxyWaits& w, std::vector<Straggler>& ranked,
                     std::vector<Straggler>& observed, std::vector<std::string>& notes);

}  // namespace rs::analyzer
