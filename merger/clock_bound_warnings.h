// Clock bounds against what the recording measures: a node whose alignment error bound exceeds
// the median duration of the recording's collectives is warned about (MergeResult::warnings,
// printed even with -q): lateness differences smaller than its bound cannot be ordered across
// nodes, and stragglers are told apart by lateness of about that size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "merger/clock_alignment.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::merge {

// The median duration of a merged database's collectives: the profiler plugin's device
// durations (gpu_ops: device_end_ns - device_start_ns) where it has any, else the completed
// NCCL calls' (nccl_events.duration_ns); point-to-point, group and communicator calls left out.
struct CollectiveDurations {
  int64_t count = 0;  // collectives measured (0: none, no median)
  int64_t median_ns = 0;
  std::string source;  // 'device' (gpu_ops) or 'call' (nccl_events)
  // Of `count` ('call' only): calls that only enqueue the collective (their communicator's mode
  // in call_modes; undecided there, their process used a GPU without CUDA_LAUNCH_BLOCKING=1):
  // their duration is the enqueue's, not the collective's.
  int64_t enqueued = 0;
};
rs::Result<CollectiveDurations> MeasureCollectiveDurations(rs::Db& merged);

// One warning per node (in `alignment` order) whose error_bound_ns exceeds the median; none
// without collectives. Where most measured calls only enqueue, the warning says that the
// collectives' own durations were not recorded.
std::vector<std::string> ClockBoundWarnings(const std::vector<NodeAlignment>& alignment,
                                            const CollectiveDurations& durations);

}  // namespace rs::merge
