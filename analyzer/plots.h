// Time series behind the report's plots: per-rank lateness heatmap, collective durations per
// node, retransmits and run-queue latency per node over time.
#pragma once

#include <cstdint>

#include "analyzer/collectives.h"
#include "analyzer/report_model.h"
#include "analyzer/side_events.h"

namespace rs::analyzer {

inline constexpr int kPlotBins = 60;

Plots BuildPlots(const CollectiveData& data, const SideEvents& side, int64_t start_ns,
                 int64_t end_ns);

}  // namespace rs::analyzer
