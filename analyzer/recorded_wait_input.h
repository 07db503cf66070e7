// The recorded NCCL collectives of a job whose ranks each use several communicators (tensor-,
// pipeline-, data-, expert-parallel groups) as the hang engine's input (wait_graph.h): a group
// per communicator, its members the global ranks of the processes that called it in
// communicator-rank order, and per rank its collectives in every communicator with their state.
//
// A call's state and outcome, by what the recording holds of it:
//   profiler plugin (gpu_ops)   completed on the device: completed; started or enqueued and
//                               not completed: pending (the device view decides)
//   blocking call, no device    returned: completed; in flight: started, pending
//   enqueue only, no device     enqueued, outcome unknown (Outcome::kEnded): the engine takes it
//                               as failed where a member provably never entered it (rule 5)
// A pending call younger than the stuck threshold at the end of the recording (its
// communicator's 10 x p99 completed duration, at least 100 ms: the threshold hang.h uses) is
// taken as progressing: a recording cut at an arbitrary moment holds calls that began a moment
// ago, and a member that has not reached them yet is no culprit.
// Sends and receives are not in the collectives' data (collectives.h) and are left out.
// Not built (nullopt, `why` says why) where a calling process has no global rank
// (processes.rank), two processes claim one, or a communicator has members the recording never
// saw (fewer communicator ranks than its nranks): their global ranks would be unknown.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "collectives.h"
#include "fr_wait_input.h"

namespace analyzer {

// end_ns: the end of the recording (aligned).
std::optional<FrJob> RecordedJob(const CollectiveData& data, int64_t end_ns, std::string* why);

}  // namespace analyzer
