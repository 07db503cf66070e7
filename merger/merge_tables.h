// What a merge says about itself: the rows per table of every input (on the log and in
// merge_counts), the merge_inputs and clock_alignment tables, and the merged metadata.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <vector>

#include "merger/clock_alignment.h"
#include "merger/input_copy.h"
#include "merger/inputs.h"
#include "merger/merge.h"
#include "merger/table_copy.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::merge {

// Every input's row counts: its stack counts in input order (`first_held`: the stack rows
// each input was the first to bring), then the tables it copied; the event rows written are
// added to result.event_rows.
std::map<int, std::vector<TableCount>> InputCounts(std::map<int, InputCopy>& copies,
                                                   std::map<int, int64_t>& first_held,
                                                   MergeResult& result);
// The counts on the log: per input for a few inputs, else per table over all of them.
void PrintAllCounts(std::ostream& log, const std::vector<Input>& inputs,
                    std::map<int, std::vector<TableCount>>& counts);
// A repeated recording: its rows are all there once already; counted as skipped.
void CountDuplicates(std::ostream& log, const std::vector<Input>& inputs,
                     std::map<int, std::vector<TableCount>>& counts);
// merge_inputs, merge_counts, clock_alignment and the merged metadata (start/end, counts,
// the clock reference).
rs::Result<void> WriteMergeTables(rs::Db& out, const std::vector<Input>& inputs,
                                  const std::map<int, std::vector<TableCount>>& counts,
                                  const std::vector<NodeAlignment>& alignment, MergeResult& result);

// Sets the merged recording's span (metadata start_ns / end_ns and result's), for a merge
// whose only inputs are Flight Recorder dumps.
rs::Result<void> SetSpan(rs::Db& out, int64_t start_ns, int64_t end_ns, MergeResult& result);

}  // namespace rs::merge
