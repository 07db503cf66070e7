// Flight Recorder dumps into the merged db: fr_dumps, process_groups, fr_entries and their
// Python stacks in the shared stacks table. A dump's rank is looked up among the recorded
// processes (processes.rank); where a node recorded it, the dump's wall-clock times move with
// that node's clock alignment, else they stay as written and fr_dumps.clock says 'unaligned'.
// A process group maps to the recorded communicator whose ranks it has (nccl_events joined to
// processes), where exactly one fits.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "merger/clock_alignment.h"
#include "merger/flight_recorder.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::merge {

struct FrInput {
  int input_id = 0;
  fr::Dump dump;
};

struct FrImportResult {
  int dumps = 0;
  int64_t entries = 0;
  int64_t first_ns = 0, last_ns = 0;  // span of the entries' times (aligned where aligned)
  std::vector<std::string> warnings;  // ranks without a dump, unaligned clocks
};

rs::Result<FrImportResult> ImportFlightRecorder(rs::Db& out, const std::vector<FrInput>& inputs,
                                                const std::vector<NodeAlignment>& alignment,
                                                std::ostream& log);

}  // namespace rs::merge

#include "merger/inputs.h"

namespace rs::merge {

// The Flight Recorder dumps among `files` (told by their first bytes), taken out of `files`
// and read: each becomes an Input, 'merged' with its dump or 'skipped' with why (a pickle that
// would import or call, a bad field, a value no reader would accept, a second dump of the same
// rank). Ids from first_id on. A dump merged with values cut to fit (fr_bounds.h) is a warning.
struct FrPlan {
  std::vector<FrInput> dumps;
  std::vector<Input> inputs;
  int skipped = 0;
  std::vector<std::string> warnings;
};
FrPlan PlanFlightRecorder(std::vector<std::string>& files, int first_id, std::ostream& log);

}  // namespace rs::merge
