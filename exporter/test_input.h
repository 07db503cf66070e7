// Test and benchmark inputs for rankscope-export: synthetic cluster bundles and a merged
// db built from them the simple way (CreateSchema(kMerged) + ATTACH + INSERT SELECT, the
// known clock offsets subtracted), so the exporter is tested on both input kinds without
// depending on rankscope-merge.
#pragma once

#include <string>
#include <vector>

#include "rscore/result.h"
#include "synth_bundle.h"

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

}  // namespace rs::exporter::testing
