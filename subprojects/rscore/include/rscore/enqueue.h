// Which processes' NCCL calls enqueue GPU work and return, rather than return when the
// collective is done: one definition for the merge (the rendezvous its clock alignment reads,
// its clock-bound warnings) and the report (call semantics, where the collectives themselves do
// not decide).
//
// Facts it rests on: an NCCL call takes a CUDA stream as its last argument and returns once
// its operation is enqueued on that stream; the device runs it later (NCCL user guide, "CUDA
// Stream Semantics"). With CUDA_LAUNCH_BLOCKING=1 every kernel launch, NCCL's too, returns
// only when the kernel is done, so the calls block. A process is a GPU process where the recording shows it
// used a device: CUDA runtime or driver calls (cuda_events), or operations NCCL's profiler
// plugin timed on a device (gpu_ops). A recording of neither cannot tell (a CPU framework's
// blocking calls look alike), and the process is not listed.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>

#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs {

// (node, pid) of every process with NCCL calls in `db` (a bundle or a merged database) that
// made CUDA calls or whose operations the plugin timed, and did not run with
// CUDA_LAUNCH_BLOCKING=1 (processes.cuda_launch_blocking).
Result<std::set<std::pair<std::string, int64_t>>> EnqueuingProcesses(Db& db);

}  // namespace rs
