// The clock offsets measured over the wire when `rankscope-fleet collect` fetched the bundles
// (clock_offsets.json beside them, rscore/wire_clock_file.h), as an independent check of the
// merge's rendezvous alignment: for two nodes a and b, the alignment's o_a - o_b and the
// wire's w_a - w_b must agree within the sum of both error bounds. The wire offsets are of the
// time of collection, the alignment's of the recording: clocks that moved in between (NTP
// steps, drift) show as a disagreement, which says so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "merger/clock_alignment.h"
#include "rscore/result.h"
#include "rscore/wire_clock.h"

namespace rs::merge {

// The wire clocks of clock_offsets.json in each input directory, or beside each input file
// (each file read once; a node in several: the first). `files` gets the files read. A file
// that cannot be read or parsed is an error naming it.
rs::Result<std::vector<rs::WireClock>> ReadWireClocksBeside(const std::vector<std::string>& inputs,
                                                            std::vector<std::string>& files);

struct WireClockCheck {
  std::string node;
  std::string against;  // the node both differences are taken to
  bool agrees = false;
  int64_t alignment_ns = 0;  // o_node - o_against from the merge
  int64_t wire_ns = 0;       // w_node - w_against from the wire
  int64_t bound_ns = 0;      // the sum of the four error bounds
  std::string note;          // for clock_alignment.note and the log
};

// Compares every node that has a wire clock with the first node (in `alignment` order: the
// reference first when it has one) that has one too. Nodes without a wire clock are left out.
std::vector<WireClockCheck> CheckWireClocks(const std::vector<NodeAlignment>& alignment,
                                            const std::vector<rs::WireClock>& wire);

}  // namespace rs::merge
