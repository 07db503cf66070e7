// Test support: a small GPU training job as a merged database, written row by row with SQL so
// the report's device-side analyses can be tested without the recorder, the plugin or the merge.
// Per step every rank's host loads and preprocesses data, issues its device work and enqueues
// one AllReduce per bucket (the NCCL call returns in microseconds), then blocks in a cudaMemcpy
// until its device is done. Each device starts a collective once its own work before it is done
// and the call enqueued it, and finishes it a transfer time after the last device started.
// The profiler plugin's gpu_ops rows carry the device times (clocks aligned, offsets 0).
#pragma once

#include <cstdint>
#include <string>

#include "rscore/result.h"

namespace rs::analyzer::testing {

struct GpuJob {
  int nodes = 3;
  int ranks_per_node = 2;
  int steps = 30;
  int buckets = 2;  // AllReduces per step
  uint64_t seed = 1;
  bool gpu_ops = true;  // the profiler plugin's rows
  // Blocking calls and launches (the test bed's sync mode, CUDA_LAUNCH_BLOCKING): a rank calls
  // each collective once its device work before it is done, and the call returns when the
  // collective is.
  bool blocking = false;
  bool gpu_ops_table = true;        // false: an earlier recorder and merge (no gpu_ops table, no
                                    // clock_alignment.evidence)
  int64_t host_ns = 4'000'000;      // host work per step before the first enqueue
  int64_t device_ns = 20'000'000;   // device work before the step's collectives
  int64_t transfer_ns = 2'000'000;  // device time of a collective once every device is in it
  int64_t jitter_ns = 200'000;
  // gpu_ops.clock_error_ns. As with the plugin, converted device times are never early and at
  // most this late; the error is systematic: a fixed fraction of the bound per rank. -1: NULL
  // (no bound: the plugin had seen no launch yet, or NCCL used profiler API v4).
  int64_t clock_error_ns = 2'000;
  int device_from_step = 0;         // the plugin records from this step on (no rows before)
  int64_t error_bound_ns = 50'000;  // clock_alignment.error_bound_ns of every node
  // The merge's alignment of this node off by skew_ns (inside its bound, as it may be): every
  // time it recorded reads that much later.
  int skewed_node = -1;
  int64_t skew_ns = 0;
  // Faults from step steps / 3 on (global ranks and node indices; -1: none).
  int host_late_rank = -1;    // its host is starved of CPU (run-queue waits behind 'burner'):
                              // it enqueues late, its device idles waiting for the work
  int device_late_rank = -1;  // its device's work takes longer (a slow GPU); host on time
  int64_t delay_ns = 8'000'000;
  int lossy_node = -1;  // repairs on its connections; collectives take 3x their transfer time
  int hang_rank = -1;   // stops at hang_step; the others enqueue the step and block
  int hang_step = 20;
  bool hang_enqueues = false;  // the hung rank enqueues the step's first collective, but its
                               // device never starts it (false: it never enqueues it)
  int64_t hang_recorded_ns = 3'000'000'000;  // recorded after the hang step's last call
  // Profiler API v7 with symmetric-memory kernels: each row's initial_sync_ns is its wait at the
  // kernel's opening barrier (the last device start - its own, plus up to 2 us).
  bool symmetric_kernels = false;
  bool tag_steps = false;  // v7: each call's user tag is its step + 1
  // CUDA graphs: step 0's collectives are captured into a graph (NCCL calls, nothing run), the
  // later steps replay it: no NCCL call, gpu_ops rows without seq, with the captured call
  // (graph_call_seq) and their number among the communicator's replays (graph_replay_seq).
  bool graph_replays = false;
  int graph_behind_node = -1;  // its metadata: a call captured before its recorder read
};

// Global rank g runs on node g / ranks_per_node as pid 1000 + 100 * node + local rank.
std::string JobNode(int node);
int64_t JobPid(const GpuJob& job, int rank);

// Writes dir/job.rsdb and returns its path.
rs::Result<std::string> WriteGpuJob(const GpuJob& job, const std::string& dir);

}  // namespace rs::analyzer::testing
