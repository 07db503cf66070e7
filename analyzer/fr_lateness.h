// Ranks that enter collectives late, from Flight Recorder entries alone.
//
// An entry's time_created_ns is stamped when PyTorch records the collective, as the rank issues
// it (FlightRecorder::record, called by ProcessGroupNCCL and ProcessGroupGloo before the work is
// launched; c10::getTime, the host's wall clock). Per collective (process group, sequence
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

inline constexpr int64_t kAlignedFloorNs = 1'000'000;        // 1 ms
inline constexpr int64_t kUnalignedFloorNs = 100'000'000;    // 100 ms
inline constexpr int64_t kMinLateCollectives = 3;

struct FrLateRank {
  int64_t rank = 0;
  int64_t last = 0;         // collectives it entered last, by at least the floor
  int64_t collectives = 0;  // collectives of two or more dumped members it took part in
  int64_t median_behind_ns = 0;  // over those it was last in
};

struct FrLateness {
  int64_t collectives = 0;  // compared (two or more members' entries)
  int64_t floor_ns = 0;     // lateness under this is not counted
  std::vector<FrLateRank> late;  // by rank
};

// one_clock: every dump's times are on the recording's aligned clock.
FrLateness FindFrLateness(const wait::Input& in, bool one_clock);

}  // namespace analyzer
