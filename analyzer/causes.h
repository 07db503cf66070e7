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

#include "collectives.h"
#include "confidence.h"
#include "report_model.h"
#include "side_events.h"

namespace analyzer {

// Ranked causes, best first, with the numbers behind them. `window_evidence` receives a
// summary of the windows measured.
std::vector<Cause> LatenessCauses(const CollectiveData& data, int32_t participant,
                                  const SideEvents& side, Evidence& window_evidence);

// A node's lateness against the other nodes' in the same collectives (node_stats: NodeStats
// or its clock-free view AsWaitStats).
struct NodeExcess {
  int64_t excess_ns = 0;  // mean over shared collectives of its lateness minus the others' median
  int64_t noise_ns = 0;   // that mean's standard error
  int64_t collectives = 0;
  int64_t latest = 0;     // of them, those where it alone was the latest node
  double latest_z = 0;    // ... against chance (1/k among k nodes)
  // Later than the others: a positive excess beyond three standard errors (one-sided, 0.13 %
  // by chance for a normal mean), or, where lateness's heavy tails swell that error, the latest
  // node more often than chance at the one-sided 1 % level (z >= 2.33; the run-queue share or
  // block latency that must also stand out is evidence of its own). With blocking collectives a
  // CPU-starved node of 4 arrived 51 +- 28 ms later, 1.8 errors, and was the latest in 16 of 34
  // (z 2.97), twice in 4 runs. The resource findings (block I/O, CPU) need this,
  // not any excess: on a clean job of 4 nodes x 2 ranks on 2 CPUs, a node whose median lateness
  // was tens of microseconds above the others' (spreads of 1.5-1.9 ms) and whose ranks had
  // waited more for a CPU was named at medium confidence. Paired within each collective, not
  // median against median: a node whose slow reads delay one collective a step (test bed 'io',
  // 4 nodes) had a median 0.13 ms above the others' with spreads of 19-34 ms; a CPU-starved
  // node (its ranks waiting for a CPU 89% of the time, the others 20%) arrived 16 +- 7.8 ms
  // later, 2.1 errors, but was the latest of 3 nodes in 37 of 64 collectives (z 4.2).
  bool later() const {
    return collectives >= 2 && excess_ns > 0 &&
           (excess_ns > std::max<int64_t>(1, 3 * noise_ns) || latest_z >= 2.33);
  }
};

// A node whose ranks' own block requests, issued while they run between collectives, take far
// longer than the other nodes' ranks' requests: slow storage on that node. Named as a straggler
// where the lateness statistics alone do not single out the node (a few ms of extra read time
// per step can hide in scheduling noise); confidence rises when its ranks are also later.
struct IoCandidate {
  std::string node;  // empty: no node's requests stand out
  int64_t requests = 0;
  int64_t mean_ns = 0;             // mean issue -> complete of its ranks' requests
  int64_t others_mean_ns = 0;      // median over the other nodes of the same mean
  NodeExcess lateness;             // its median lateness against the other nodes'
  Confidence confidence = Confidence::kUndetermined;
  double score = 0;
  std::string lateness_basis = "host-side NCCL call entry times";  // of lateness_excess_ns
};

// node_stats: the per-node lateness to weigh the node by (NodeStats, or on device recordings
// its clock-free view AsWaitStats; its basis is named by `lateness_basis`).
IoCandidate AttributeBlockLatency(const SideEvents& side, const CollectiveData& data,
                                  const std::vector<ArrivalStats>& node_stats);
Straggler IoStraggler(const IoCandidate& c);

// Share of its ranks' time, between their first and last collective, spent waiting in a run
// queue: mean over the node's ranks, and the median of the other nodes' same share.
struct RunqShare {
  double share = 0, others_share = 0;
  bool stands_out = false;  // well above the other nodes': a CPU-starved node
};
RunqShare NodeRunqShare(const SideEvents& side, const CollectiveData& data,
                        const std::string& node);

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

NodeExcess NodeLatenessExcess(const std::vector<ArrivalStats>& node_stats, const std::string& node);

// The processes that had a CPU while the given processes of `node` waited in its run queue,
// between each one's first and last collective: by name and pid, the longest first (the
// processes themselves left out).
std::vector<Competitor> CpuCompetitors(const SideEvents& side, const CollectiveData& data,
                                       const std::string& node, const std::vector<int64_t>& pids);

}  // namespace analyzer
