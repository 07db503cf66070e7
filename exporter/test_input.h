// Test and benchmark inputs for rankscope-export: synthetic cluster bundles and a merged
// db built from them the simple way (CreateSchema(kMerged) + ATTACH + INSERT SELECT, the
// known clock offsets subtracted), so the exporter is tested on both input kinds without
// depending on rankscope-merge.
#pragma once

#include <string>
#include <vector>

#include "rscore/result.h"
#include "tests/support/synth_bundle.h"

namespace rs::exporter::testing {

// Writes spec's bundles into `dir` and merges them into `merged_path`. Returns the bundles.
Result<std::vector<std::string>> WriteInputs(const synth::ClusterSpec& spec, const std::string& dir,
                                             const std::string& merged_path);

// gpu_ops rows for a merged db, made from its NCCL calls as rankscope's profiler plugin would
// record them: one per call that runs on the GPU, enqueued 2 us after the call's entry, run on
// the device from 5..45 us after the entry (an order per (rank, seq) unlike the host's) to
// shortly before the call returned; calls in flight at the end started but never completed.
struct GpuOpsSpec {
  int64_t no_plugin_rank = -1;  // this rank's process gets none (no plugin loaded)
  int64_t unstarted_rank = -1;  // this rank's calls in flight never started on the GPU
  int64_t hostless_rank = -1;   // this rank's host calls of every 5th seq are deleted after
};
Result<void> AddGpuOps(const std::string& merged_path, const GpuOpsSpec& spec);

// A small merged db (node a: rank 0 = pid 10, rank 1 = pid 11, both with gpu_ops; node b:
// rank 2 = pid 20, no plugin), communicator 42:
//   call (pid/tid)   host [ts, end]     gpu_ops enqueue, device [start, end], state
//   ALL_REDUCE seq 7 rank 0 (10/10)  [1000, 1020]   1010, [1500, 3000] completed
//                    rank 1 (11/12)  [1100, 1120]   1110, [1300, 3000] completed
//                    rank 2 (20/20)  [1050, 3050]   -
//   ALL_REDUCE seq 8 rank 0 (10/10)  [4000, 4010]   4005, [4100, -] started
//                    rank 1 (11/12)  [4000, 4010]   4005, never started: enqueued
//                    rank 2 (20/20)  [4050, -]      -
//   SEND seq 1 peer 1, rank 0 (10/10)  no call row  5000, [5100, 5200] completed
//   RECV seq 1 peer 0, rank 1 (11/12)  [5000, 5010]   5002, [4990, 5200] completed (the device
//                                                   start converted before the enqueue)
// seq 7: 1024 float32 = 4096 bytes, RING / LL, 4 channels, net 100 sent / 200 received,
// clock_error_ns 50. The trace ends at 5200. With `with_gpu_ops` false the db has the same
// calls and no gpu_ops table at all (a recorder from before it).
Result<void> WriteSmallGpuDb(const std::string& path, bool with_gpu_ops);

// A fresh directory under $TMPDIR (or /tmp); "" on failure.
std::string MakeTempDir();
std::string ReadFile(const std::string& path);

}  // namespace rs::exporter::testing
