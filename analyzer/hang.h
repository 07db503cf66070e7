// Hang analysis in the manner of a flight recorder. Per communicator and sequence every member
// rank has a state: never enqueued < enqueued, not started on its device < started, not
// completed < completed. The states come from the profiler plugin's gpu_ops where recorded
// (basis 'device'), from blocking NCCL calls (in flight = started: basis 'host_call'), or from
// enqueue-only calls without a device view (enqueued: basis 'host_enqueue').
// The stuck collective of a communicator is its first one with a call still pending: in flight
// on the host, or enqueued or started on a device and not completed. Where nothing pending is
// seen (enqueues without device times), it is the first collective some members enqueued and
// others never did, provided ranks that enqueued it sit in a blocking CUDA call or an NCCL
// call at the end (they wait for it). Either way it must have been stuck far longer than the
// communicator's usual collectives take, or the recording may simply have ended mid-step.
// The culprits are the ranks whose state lags the others' there (also ranks no recording saw,
// from nranks); where every rank is alike, whoever called something else at that sequence
// (op / count / datatype / root mismatches, listed at any sequence).
#pragma once

#include <cstdint>
#include <vector>

#include "analyzer/collectives.h"
#include "analyzer/hang_activity.h"
#include "analyzer/report_model.h"

namespace rs::analyzer {

// A collective counts as hung only when it has been stuck kHangStuckFactor times longer than
// the communicator's slowest (p99) completed collectives — or, where completion is not seen,
// its slowest gap between consecutive collectives — and at least kHangMinStuckNs: otherwise
// the recording may simply have ended while it ran. recorded_wait_input.h uses the same.
inline constexpr int64_t kHangStuckFactor = 10;
inline constexpr int64_t kHangMinStuckNs = 100'000'000;

// end_ns: end of the recording (aligned). cuda_in_flight: LoadCudaInFlight's answer (may be
// empty: no CUDA calls recorded).
HangReport AnalyzeHang(const CollectiveData& data,
                       const std::vector<std::vector<CudaWait>>& cuda_in_flight, int64_t end_ns);

// The straggler entry naming a hang culprit (cause 'hang', shape 'hang').
Straggler HangStraggler(const HangReport& hang, const CollectiveData& data, size_t culprit);

}  // namespace rs::analyzer
