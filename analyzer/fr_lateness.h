// Ranks that enter collectives late, from Flight Recorder entries alone.
//
// Where every member's entry of a collective carries its device duration (duration_ms:
// TORCH_NCCL_ENABLE_TIMING=1, WorkNCCL's start and end CUDA events around the NCCL kernel on
// the group's stream), the one the others waited for is read from those: an NCCL collective's
// kernel cannot finish before every member's kernel has joined it, and the start event fires
// when the rank's stream reaches the kernel, so the member that reached it last ran the
// shortest kernel and the others' kernels held the time they waited for it. Durations are each
// measured on one device, so no clock offset between hosts enters: the member whose duration is
// shorter than the median of the others' by at least kAlignedFloorNs counts as last. They cannot
// say why it reached the collective late (its host issued late or its device was busy: the
// dumps hold neither) and are absent without timing and in gloo's entries (no CUDA events).
//
// Otherwise an entry's time_created_ns is stamped when PyTorch records the collective, as the rank
// issues it (FlightRecorder::record, called by ProcessGroupNCCL and ProcessGroupGloo before the
// work is launched; c10::getTime, the host's wall clock). Per collective (process group, sequence
// number) the member whose entry was created last arrived last, by how much its creation
// follows the median of the other members'. A rank that arrives last in most of the
// collectives it takes part in enters late. What this basis cannot say:
//  - between hosts the times differ by the hosts' clock offsets, which nothing in the dumps
//    measures: unless every dump is aligned with a recording, lateness under kUnalignedFloorNs
//    is not counted;
//  - a rank that waited in another group just before arrives late without being slow itself
//    (its tensor-parallel peer was): a rank counts only where it is last in more than half of
//    the collectives it takes part in, so a victim late in one of two groups is not named,
//    but the root is not followed through the groups.
#pragma once

#include <cstdint>
#include <vector>

#include "wait_graph.h"

namespace analyzer {

inline constexpr int64_t kAlignedFloorNs = 1'000'000;      // 1 ms
inline constexpr int64_t kUnalignedFloorNs = 100'000'000;  // 100 ms
inline constexpr int64_t kMinLateCollectives = 3;

struct FrLateRank {
  int64_t rank = 0;
  int64_t last = 0;              // collectives it entered last, by at least the floor
  int64_t collectives = 0;       // collectives of two or more dumped members it took part in
  int64_t median_behind_ns = 0;  // over those it was last in
  int64_t by_duration = 0;       // of `last`: read from device durations, not entry times
};

struct FrLateness {
  int64_t collectives = 0;       // compared (two or more members' entries)
  int64_t by_duration = 0;       // of them: compared by device durations (every member timed)
  int64_t floor_ns = 0;          // entry-time lateness under this is not counted
  std::vector<FrLateRank> late;  // by rank
};

// one_clock: every dump's times are on the recording's aligned clock.
FrLateness FindFrLateness(const wait::Input& in, bool one_clock);

}  // namespace analyzer
