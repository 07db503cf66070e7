// The report's first line (Report::verdict) and its kind (Report::verdict_kind): a hang, a
// straggler of medium confidence or more, what the data cannot decide (a lateness inside the
// clock bound, a GPU side not seen), or a clean run.
#pragma once

#include <vector>

#include "analyzer/report_model.h"

namespace rs::analyzer {

// Sets r.verdict and r.verdict_kind once the findings are placed; `stats` are the ranks'
// arrival statistics.
void SetVerdict(Report& r, const std::vector<ArrivalStats>& stats);

}  // namespace rs::analyzer
