// What ranks were doing at the end of a recording, for hang reports: CUDA calls still in flight
// (a GPU job's ranks wait for a hung collective in a blocking cudaMemcpy or stream
// synchronization, not in NCCL), their last NCCL and CUDA calls, their process's exit, and the
// callers' stacks where the recorder captured them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/collectives.h"
#include "analyzer/report_model.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::analyzer {

struct CudaWait {
  std::string api;
  int64_t ts = 0;
  std::optional<int64_t> stack_id;
  bool blocking = false;  // the host waits in it for device work (IsBlockingCudaCall)
};

// Host waits for the device until the work is done: synchronizations and synchronous copies.
bool IsBlockingCudaCall(const std::string& api);

// Per participant (indexed like data.participants): its CUDA calls in flight at the end of the
// recording, latest first.
rs::Result<std::vector<std::vector<CudaWait>>> LoadCudaInFlight(rs::Db& db,
                                                                const CollectiveData& data);

// Fills `progress.doing` for `who`: its CUDA calls in flight (else its last CUDA call), its last
// NCCL call of any kind, its exit if recorded; stacks of the calls that have one. Also
// `progress.last_completed_call`: its last NCCL call that completed.
rs::Result<void> DescribeActivity(rs::Db& db, const Participant& who,
                                  const std::vector<CudaWait>& in_flight, RankProgress& progress);

}  // namespace rs::analyzer
