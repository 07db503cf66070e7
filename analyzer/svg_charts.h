// Inline SVG charts for the HTML report (no scripts, no external resources). Every plotted mark
// carries an SVG <title> (a tooltip without scripts) naming its time, and the op and seq of the
// collectives behind it; the x axis spans Plots' window, in seconds since the time zero.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "analyzer/report_model.h"

namespace rs::analyzer {

std::string HtmlEscape(const std::string& s);

// Per-rank lateness over time: one row per rank, one column per time bin. Rows whose `marked`
// entry is true (the verdict's ranks) stand out: a marker, class 'straggler' and an outline.
std::string LatenessHeatmapSvg(const Plots& p, const std::vector<bool>& marked,
                               const std::string& id);

// One line per node over time, a point per bin; y_is_ns formats the axis as durations. The
// lines of `marked` nodes are drawn thicker and their legend entries marked.
std::string NodeLinesSvg(const Plots& p, const std::vector<NodeSeries>& series,
                         const std::set<std::string>& marked, const std::string& id,
                         const std::string& y_label, bool y_is_ns);

// Counts per bin and node as bars side by side, on an axis of whole numbers; `unit` names what
// is counted in the tooltips ("segments").
std::string NodeBarsSvg(const Plots& p, const std::vector<NodeSeries>& series,
                        const std::set<std::string>& marked, const std::string& id,
                        const std::string& y_label, const std::string& unit);

}  // namespace rs::analyzer
