// Per-node clock offset and error bound: from clock_alignment in a merged db, or, in a single
// bundle (clock as recorded), from the kernel's own sync estimate in clock_refs (maxerror_us).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/report_model.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::analyzer {

// `notes` receives data gaps (a node without alignment, a bundle without clock references).
rs::Result<std::vector<NodeClock>> LoadClocks(rs::Db& db, bool merged,
                                              std::vector<std::string>& notes);

// Error bound of comparing a time on node `a` with one on node `b` (0 for the same node).
int64_t PairBound(const std::vector<NodeClock>& clocks, const std::string& a, const std::string& b);

}  // namespace rs::analyzer
