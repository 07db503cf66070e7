// The lateness straggler: the rank persistently entering collectives last. Its margin over the
// other ranks must stand out from the arrival noise, and — compared across nodes — exceed the
// clock error bound; otherwise the ordering is reported as undetermined.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectives.h"
#include "report_model.h"

namespace analyzer {

struct LatenessCandidate {
  int32_t participant = -1;          // -1: nobody stands out
  bool determined = false;           // the margin exceeds noise and (across nodes) the clock bound
  int64_t margin_ns = 0;             // its median lateness minus the other nodes' typical one
  int64_t same_node_margin_ns = -1;  // ... minus the latest other rank on its node (-1: none)
  int64_t noise_ns = 0;              // typical p90 - median lateness of the other ranks
  int64_t bound_ns = 0;              // clock error bound of the cross-node comparison
  double last_fraction = 0;          // share of its collectives it entered last
  std::string confidence;            // high | medium | low | undetermined
  double score = 0;
};

// stats is indexed like data.participants (ParticipantStats).
LatenessCandidate FindLatenessStraggler(const CollectiveData& data,
                                        const std::vector<ArrivalStats>& stats,
                                        const std::vector<NodeClock>& clocks);

}  // namespace analyzer
