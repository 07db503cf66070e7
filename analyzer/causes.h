// Causes of a lateness straggler's late windows — the time between its previous collective's
// exit and its late entry — ranked by how much of the lost time each explains, measured against
// the same windows of the other ranks: run-queue waits of its process (cpu_contention), block
// I/O on its node (io), retransmits touching its node (network), else its own work (compute).
// The windows and lateness are its host's (NCCL call entries): on a GPU they explain its late
// enqueues, the host-bound part of its lateness (shape.h weighs them against its device's).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/collectives.h"
#include "analyzer/confidence.h"
#include "analyzer/report_model.h"
#include "analyzer/side_events.h"

namespace rs::analyzer {

// Ranked causes, best first, with the numbers behind them. `window_evidence` receives a
// summary of the windows measured.
std::vector<Cause> LatenessCauses(const CollectiveData& data, int32_t participant,
                                  const SideEvents& side, Evidence& window_evidence);

// A node whose ranks' own block requests, issued while they run between collectives, take far
// longer than the other nodes' ranks' requests: slow storage on that node. Named as a straggler
// where the lateness statistics alone do not single out the node (a few ms of extra read time
// per step can hide in scheduling noise); confidence rises when its ranks are also later.
struct IoCandidate {
  std::string node;  // empty: no node's requests stand out
  int64_t requests = 0;
  int64_t mean_ns = 0;         // mean issue -> complete of its ranks' requests
  int64_t others_mean_ns = 0;  // median over the other nodes of the same mean
  NodeExcess lateness;         // its median lateness against the other nodes'
  Confidence confidence = Confidence::kUndetermined;
  double score = 0;
  std::string lateness_basis = "host-side NCCL call entry times";  // of lateness_excess_ns
};

// node_stats: the per-node lateness to weigh the node by (NodeStats, or on device recordings
// its clock-free view AsWaitStats; its basis is named by `lateness_basis`).
IoCandidate AttributeBlockLatency(const SideEvents& side, const CollectiveData& data,
                                  const std::vector<ArrivalStats>& node_stats);

// How a resource finding's node compares with the others in lateness, for its summary.
std::string LatenessPhrase(const NodeExcess& e);
Straggler IoStraggler(const IoCandidate& c);

// Share of its ranks' time, between their first and last collective, spent waiting in a run
// queue: mean over the node's ranks, and the median of the other nodes' same share.
struct RunqShare {
  double share = 0, others_share = 0;
  bool stands_out = false;  // well above the other nodes': a CPU-starved node
};
RunqShare NodeRunqShare(const SideEvents& side, const CollectiveData& data,
                        const std::string& node);
// The same for every node with ranks that made calls, computed once.
std::map<std::string, RunqShare> NodeRunqShares(const SideEvents& side, const CollectiveData& data);
// The cause of a CPU-starved node: its ranks' run-queue share above the other nodes'.
Cause CpuStarvationCause(const std::string& node, const RunqShare& cpu);

// A CPU-starved node (cpu.stands_out) named where the lateness statistics alone did not single
// it out; confidence medium when its ranks are also later than the other nodes', else low.
Straggler CpuStraggler(const std::string& node, const RunqShare& cpu,
                       const std::vector<ArrivalStats>& node_stats,
                       const std::string& lateness_basis = "host-side NCCL call entry times");

// A node-level straggler named for its retransmits (no lateness straggler on its node) whose
// own resources explain them: slow block I/O of its ranks (`io`, when io.node is that node) or
// a CPU-starved node, whose late ACKs expire its peers' retransmission timers without loss. The
// resource becomes the top cause; the network cause keeps only the share it leaves unexplained.
// slowed: its retransmits came with slower collectives (NetworkCandidate::slowed).
void ExplainByNodeResources(Straggler& s, const IoCandidate& io, const RunqShare& cpu, bool slowed);

// The node's entry of node_stats (NodeStats or its clock-free view AsWaitStats): its `paired`.
NodeExcess NodeLatenessExcess(const std::vector<ArrivalStats>& node_stats, const std::string& node);

// The processes that had a CPU while the given processes of `node` waited in its run queue,
// between each one's first and last collective: by name and pid, the longest first (the
// processes themselves left out).
std::vector<Competitor> CpuCompetitors(const SideEvents& side, const CollectiveData& data,
                                       const std::string& node, const std::vector<int64_t>& pids);

}  // namespace rs::analyzer
