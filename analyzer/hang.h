// Hang analysis in the manner of a flight recorder, from the recorded NCCL calls: per
// communicator the last sequence each rank entered and completed and what is still in flight;
// the rank(s) that never entered the collective the others are stuck in; and op / count /
// datatype / root mismatches at one sequence across ranks.
#pragma once

#include <cstdint>

#include "collectives.h"
#include "report_model.h"

namespace analyzer {

// end_ns: end of the recording (aligned); in-flight calls are stuck at least end_ns - entry.
HangReport AnalyzeHang(const CollectiveData& data, int64_t end_ns);

// The straggler entry naming a hang culprit (cause 'hang').
Straggler HangStraggler(const HangReport& hang, const CollectiveData& data, size_t culprit);

}  // namespace analyzer
