// Inline SVG charts for the HTML report (no scripts, no external resources).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report_model.h"

namespace analyzer {

std::string HtmlEscape(const std::string& s);

// Per-rank lateness over time: one row per rank, one column per time bin.
std::string LatenessHeatmapSvg(const Heatmap& h, int64_t bin_ns, const std::string& id);

// One line per node over time; y_is_ns formats the axis as durations.
std::string NodeLinesSvg(const std::vector<NodeSeries>& series, int64_t bin_ns, int bins,
                         const std::string& id, const std::string& y_label, bool y_is_ns);

}  // namespace analyzer
