// Synthetic cluster recordings for tests and benchmarks of the workstation tools.
// Models the semantics the tools rely on: a blocking collective ends for every rank shortly
// after the last rank entered it; each node's recorder sees true time shifted by its clock
// offset (and drift); one injected fault leaves its trace on one node.
// In async mode the ranks are GPU processes shaped like PyTorch DDP on the test bed's trainer:
// per step host preprocessing, then the step's kernels issued on a compute stream and one
// AllReduce per gradient bucket enqueued on a communication stream (the NCCL call returns in
// microseconds), the device running them later; the step ends with a blocking cudaMemcpy of the
// loss, which returns once the optimizer (ordered after the reductions) is done. The NCCL
// profiler plugin's gpu_ops rows carry the device times, converted to the node's wall clock
// no earlier than the truth and at most gpu_clock_error_ns later.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rscore/result.h"

namespace synth {

struct ClusterSpec {
  int nodes = 4;
  int ranks_per_node = 2;
  int steps = 40;
  uint64_t seed = 1;
  int64_t start_ns = 1'760'000'000'000'000'000;  // true wall-clock start
  int64_t step_compute_ns = 20'000'000;          // per-rank compute before the AllReduce
  int64_t transfer_ns = 2'000'000;               // collective time once all ranks are in
  int64_t jitter_ns = 200'000;                   // arrival jitter (uniform 0..jitter)
  int64_t exit_jitter_ns = 20'000;               // spread of exits after the collective ends
  std::vector<int64_t> offset_ns;                // per node recorder clock offset (default 0)
  std::vector<double> drift_ppm;                 // per node recorder clock drift (default 0)
  // none | loss | cpu | io | slow | hang | ib (the fault node's RDMA link: collectives of the
  // second quarter of the steps take 5x as long while its port counts link errors)
  std::string fault = "none";
  int fault_node = 1;
  int fault_local_rank = 0;
  int hang_step = 25;                  // hang: the fault rank never enters this step
  int64_t fault_delay_ns = 8'000'000;  // extra lateness per step of the fault rank
  int extra_sched_per_step = 0;        // padding rows per rank and step (scale tests)
  // Kernel launches (cudaLaunchKernel rows) per rank and step, spread over its compute: the bulk
  // of a GPU node's recording (scale tests, summaries' size).
  int launches_per_step = 0;
  int64_t clock_ref_interval_ns = 1'000'000'000;
  // sync: collectives block (a CPU framework, the test bed's sync mode); async: GPU nodes (see
  // above).
  std::string collectives = "sync";
  bool cuda_calls = false;  // sync mode: the trainer's CUDA calls too (launches that block, as
                            // with CUDA_LAUNCH_BLOCKING, and the loss copy); async: always
  bool gpu_ops = true;      // async mode: the profiler plugin's gpu_ops rows
  int buckets = 2;          // async mode: gradient AllReduces per step
  int64_t gpu_clock_error_ns = 2'000;  // async: bound of the device-time conversion; -1: NULL
  int64_t enqueue_ns = 12'000;         // async: an NCCL call's duration (uniform 4 us..this)
  int64_t wake_jitter_ns = 30'000;     // async: the loss copy's return after the device is done
  // Every node has an RDMA port (mlx5_0 port 1, InfiniBand; rdma_ports) read every
  // rdma_reading_ns (rdma_counters: traffic, port_xmit_wait on every node; symbol_error and
  // link_error_recovery on the ib fault's node while its link is bad). On with fault ib.
  bool rdma = false;
  int64_t rdma_reading_ns = 100'000'000;
};

// The time node `node`'s recorder reads at true time `true_ns` (its offset and drift).
int64_t RecordedTime(const ClusterSpec& spec, int node, int64_t true_ns);

// The node name of node k: "node<k>"; its address: 10.77.0.<k+1>.
std::string NodeName(int k);
std::string NodeAddress(int k);

// Writes <dir>/node<k>.rsb for every node and returns their paths.
rs::Result<std::vector<std::string>> WriteClusterBundles(const ClusterSpec& spec,
                                                         const std::string& dir);

// Total rows written per event table across all bundles of the last call for `spec`
// (computed without writing: used to reconcile counts).
struct RowCounts {
  int64_t nccl = 0, tcp = 0, sched = 0, block = 0, process = 0, cuda = 0, gpu = 0, rdma = 0;
};
RowCounts ExpectedRows(const ClusterSpec& spec);

}  // namespace synth
