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
//    (its tensor-parallel peer was). Followed to the root: a late entry is the rank's own
//    unless, in the collective it issued just before (by its own entry times, one clock), it
//    waited for another member, or was late itself, by so much that what is left of this
//    lateness after that delay is under the floor (noise); then it belongs to whoever that
//    delay belongs to (a chain of at most 256 links). Measured on the test bed's 8-rank
//    4D-parallel job with one 4x slower device (dumps with durations): the slow rank keeps
//    1071 of its 1127 late entries, its tensor-parallel peer and a pipeline neighbour pass
//    156-161 of theirs to others. Allowing a remainder of half the lateness instead cut the
//    slow rank's own to 981 (noise of ~1 ms waits excused ~2 ms lateness). Device streams and hosts
//    go on in issue order: a rank whose kernel held for W ms in one group reaches its next
//    collective up to W ms late on its own device, and a host blocked in a collective issues its
//    next one late likewise. Send and receive entries are not compared (a send of a small message
//    can finish before its receive starts, into NCCL's buffers), so a wait in a receive is not
//    followed: the chain looks through it to the collective before.
//  - a rank is named only where its own late entries are more than half of the collectives it
//    takes part in; one whose lateness is mostly inherited is listed as traced to the rank its
//    late entries lead to most often.
#pragma once

#include <cstdint>
#include <vector>

#include "analyzer/wait_graph.h"

namespace rs::analyzer {

inline constexpr int64_t kAlignedFloorNs = 1'000'000;      // 1 ms
inline constexpr int64_t kUnalignedFloorNs = 100'000'000;  // 100 ms
inline constexpr int64_t kMinLateCollectives = 3;

struct FrLateRank {
  int64_t rank = 0;
  int64_t last = 0;              // collectives it entered last, by at least the floor
  int64_t collectives = 0;       // collectives of two or more dumped members it took part in
  int64_t median_behind_ns = 0;  // over those it was last in
  int64_t by_duration = 0;       // of `last`: read from device durations, not entry times
  int64_t inherited = 0;         // late entries traced to another rank (not in `last`)
};

// A rank last in more than half of its collectives, but mostly because it waited for another.
struct FrTracedRank {
  int64_t rank = 0;
  int64_t inherited = 0;  // late entries traced to other ranks
  int64_t collectives = 0;
  int64_t root = 0;  // the rank most of them lead to
};

struct FrLateness {
  int64_t collectives = 0;           // compared (two or more members' entries)
  int64_t by_duration = 0;           // of them: compared by device durations (every member timed)
  int64_t floor_ns = 0;              // entry-time lateness under this is not counted
  std::vector<FrLateRank> late;      // by rank
  std::vector<FrTracedRank> traced;  // by rank; none of them in `late`
};

// one_clock: every dump's times are on the recording's aligned clock.
FrLateness FindFrLateness(const wait::Input& in, bool one_clock);

}  // namespace rs::analyzer
