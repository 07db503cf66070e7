// The shape of a lateness straggler whose arrivals are device starts. Its device cannot start
// work its host has not issued yet, so the host's own enqueue lateness is the part of the device
// lateness the host accounts for: host_bound when it is most of it (its device idled waiting
// for work; the host side's causes apply), device_bound when its host enqueued on time and its
// device still reached the collectives late (slower device work: a slow or throttled GPU, or a
// heavier shard).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/collectives.h"
#include "analyzer/report_model.h"
#include "analyzer/straggler.h"

namespace rs::analyzer {

// Why a rank's host side is missing, for the texts that say so: why, the prefix of its host
// side's cause, and why its confidence is capped.
struct HostUnseen {
  const char* why;
  const char* host_side;
  const char* cap;
};
inline constexpr HostUnseen kGraphReplayHostUnseen{
    "its collectives ran in CUDA graph replays, whose host side (the graph's launch) is not "
    "recorded",
    "host side (the graph's launch is not timed): ",
    ": a host that launched the graph late cannot be told from a slow device"};
// Collectives compared by NCCL's own names (kNcclSeqBase): their calls carry no communicator id.
inline constexpr HostUnseen kUnmatchedCallsHostUnseen{
    "its collectives' NCCL calls could not be matched to them (their communicator was created "
    "before the recorder started)",
    "host side (its calls are not matched to the collectives): ",
    ": a host that enqueued late cannot be told from a slow device"};
// The recording's reason: graph replays where it has any, else unmatched calls.
const HostUnseen& HostUnseenReason(const CollectiveData& data);

struct ShapeSplit {
  std::string shape;             // 'host_bound' | 'device_bound'
  double host_share = 0;         // host_excess / device_excess, clamped to 0..1
  int64_t device_excess_ns = 0;  // its median device lateness above the reference ranks'
  int64_t host_excess_ns = 0;    // its median host enqueue lateness above theirs
  std::string reference;         // whom it was compared with, for people
  // Its host enqueues were seen in most of its collectives; false where they ran in CUDA graph
  // replays (no host entry): then no host share is claimed (0) and the shape is device-bound
  // only as far as the recording shows.
  bool host_seen = true;
  const HostUnseen* unseen = &kGraphReplayHostUnseen;  // why, where !host_seen
};

// stats as for FindLatenessStraggler; c its answer (a participant was found).
ShapeSplit SplitLateness(const CollectiveData& data, const std::vector<ArrivalStats>& stats,
                         const LatenessCandidate& c);

// Its causes: the host side's (LatenessCauses of its host windows) weighed by the host share,
// its device's own work before the collectives (compute) by the rest; ranked, best first.
std::vector<Cause> ShapeCauses(const ShapeSplit& split, std::vector<Cause> host_causes,
                               const std::string& label);

Evidence ShapeEvidence(const ShapeSplit& split);

}  // namespace rs::analyzer
