#include "svg_charts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "report_format.h"

namespace analyzer {
namespace {

constexpr int kWidth = 1000;
constexpr int kLeft = 140, kRight = 20, kTop = 20, kBottom = 40;
const char* const kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string Seconds(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3gs", static_cast<double>(ns) / 1e9);
  return buf;
}

// White -> yellow -> red for 0..1.
std::string HeatColor(double f) {
  f = std::clamp(f, 0.0, 1.0);
  int r = 255, g, b;
  if (f < 0.5) {
    g = 255;
    b = static_cast<int>(255 * (1 - 2 * f));
  } else {
    g = static_cast<int>(255 * (2 - 2 * f));
    b = 0;
  }
  char buf[16];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", r, g, b);
  return buf;
}

void TimeAxis(std::ostringstream& o, int x0, int x1, int y, int64_t span_ns) {
  o << "<line x1='" << x0 << "' y1='" << y << "' x2='" << x1 << "' y2='" << y
    << "' stroke='#333'/>";
  for (int i = 0; i <= 5; ++i) {
    double x = x0 + (x1 - x0) * i / 5.0;
    o << "<text x='" << Num(x) << "' y='" << y + 16 << "' font-size='11' text-anchor='middle'>"
      << Seconds(span_ns * i / 5) << "</text>";
  }
}

}  // namespace

std::string HtmlEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '&':
        o += "&amp;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&#39;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::string LatenessHeatmapSvg(const Heatmap& h, int64_t bin_ns, const std::string& id) {
  std::ostringstream o;
  int rows = static_cast<int>(h.rows.size());
  int cols = static_cast<int>(h.column_start_ns.size());
  int cell_h = std::clamp(360 / std::max(1, rows), 4, 24);
  int height = kTop + rows * cell_h + kBottom + 20;
  int plot_w = kWidth - kLeft - kRight;
  std::vector<int64_t> all;
  for (const auto& row : h.cells) {
    for (int64_t v : row) {
      if (v >= 0) all.push_back(v);
    }
  }
  std::sort(all.begin(), all.end());
  int64_t top = all.empty() ? 1 : std::max<int64_t>(1, all[(all.size() - 1) * 99 / 100]);
  o << "<svg id='" << id << "' class='plot' xmlns='http://www.w3.org/2000/svg' width='" << kWidth
    << "' height='" << height << "' viewBox='0 0 " << kWidth << " " << height << "'>";
  o << "<title>Arrival lateness per rank over time</title>";
  for (int r = 0; r < rows; ++r) {
    int y = kTop + r * cell_h;
    o << "<text x='" << kLeft - 6 << "' y='" << y + cell_h - 2 << "' font-size='"
      << std::min(12, cell_h) << "' text-anchor='end'>" << HtmlEscape(h.rows[r]) << "</text>";
    for (int c = 0; c < cols; ++c) {
      int64_t v = h.cells[r][c];
      double x = kLeft + plot_w * c / static_cast<double>(cols);
      o << "<rect class='cell' x='" << Num(x) << "' y='" << y << "' width='"
        << Num(plot_w / static_cast<double>(cols) + 0.5) << "' height='" << cell_h << "' fill='"
        << (v < 0 ? std::string("#eeeeee") : HeatColor(double(v) / top)) << "'><title>"
        << HtmlEscape(h.rows[r]) << ": "
        << (v < 0 ? std::string("no collective") : FormatNs(v) + " late") << "</title></rect>";
    }
  }
  int axis_y = kTop + rows * cell_h + 2;
  TimeAxis(o, kLeft, kLeft + plot_w, axis_y, bin_ns * cols);
  o << "<text x='" << kLeft << "' y='" << height - 4 << "' font-size='11'>colour: lateness, white 0"
    << " to red " << HtmlEscape(FormatNs(top)) << " (p99); grey: no collective</text>";
  o << "</svg>";
  return o.str();
}

std::string NodeLinesSvg(const std::vector<NodeSeries>& series, int64_t bin_ns, int bins,
                         const std::string& id, const std::string& y_label, bool y_is_ns) {
  std::ostringstream o;
  const int height = 260;
  int plot_w = kWidth - kLeft - kRight, plot_h = height - kTop - kBottom;
  double ymax = 0;
  for (const NodeSeries& s : series) {
    for (const auto& [t, v] : s.points) ymax = std::max(ymax, v);
  }
  if (ymax <= 0) ymax = 1;
  int64_t span = bin_ns * bins;
  o << "<svg id='" << id << "' class='plot' xmlns='http://www.w3.org/2000/svg' width='" << kWidth
    << "' height='" << height << "' viewBox='0 0 " << kWidth << " " << height << "'>";
  o << "<title>" << HtmlEscape(y_label) << "</title>";
  o << "<line x1='" << kLeft << "' y1='" << kTop << "' x2='" << kLeft << "' y2='" << kTop + plot_h
    << "' stroke='#333'/>";
  for (int i = 0; i <= 4; ++i) {
    double v = ymax * i / 4, y = kTop + plot_h - plot_h * i / 4.0;
    o << "<text x='" << kLeft - 6 << "' y='" << Num(y + 4) << "' font-size='11' "
      << "text-anchor='end'>" << HtmlEscape(y_is_ns ? FormatNs(static_cast<int64_t>(v)) : Num(v))
      << "</text>";
    o << "<line x1='" << kLeft << "' y1='" << Num(y) << "' x2='" << kLeft + plot_w << "' y2='"
      << Num(y) << "' stroke='#ddd'/>";
  }
  TimeAxis(o, kLeft, kLeft + plot_w, kTop + plot_h, span);
  o << "<text x='12' y='" << kTop + plot_h / 2 << "' font-size='11' transform='rotate(-90 12 "
    << kTop + plot_h / 2 << ")' text-anchor='middle'>" << HtmlEscape(y_label) << "</text>";
  size_t k = 0;
  for (const NodeSeries& s : series) {
    const char* color = kPalette[k % (sizeof kPalette / sizeof kPalette[0])];
    o << "<polyline class='series' fill='none' stroke-width='2' stroke='" << color << "' points='";
    for (const auto& [t, v] : s.points) {
      double x = kLeft + plot_w * (static_cast<double>(t) + bin_ns / 2.0) / span;
      double y = kTop + plot_h - plot_h * v / ymax;
      o << Num(x) << "," << Num(y) << " ";
    }
    o << "'><title>" << HtmlEscape(s.node) << "</title></polyline>";
    o << "<rect x='" << kLeft + 10 + 110 * static_cast<int>(k % 7) << "' y='"
      << 4 + 12 * static_cast<int>(k / 7) << "' width='10' height='8' fill='" << color << "'/>"
      << "<text x='" << kLeft + 24 + 110 * static_cast<int>(k % 7) << "' y='"
      << 12 + 12 * static_cast<int>(k / 7) << "' font-size='11'>" << HtmlEscape(s.node)
      << "</text>";
    ++k;
  }
  if (series.empty()) {
    o << "<text x='" << kLeft + plot_w / 2 << "' y='" << kTop + plot_h / 2
      << "' text-anchor='middle' font-size='14' fill='#777'>none recorded</text>";
  }
  o << "</svg>";
  return o.str();
}

}  // namespace analyzer
