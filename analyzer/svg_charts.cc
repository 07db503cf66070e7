#include "analyzer/svg_charts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "analyzer/collectives.h"
#include "analyzer/report_format.h"
#include "rscore/text_escape.h"

namespace rs::analyzer {
namespace {

constexpr int kWidth = 1000;
constexpr int kLeft = 140, kRight = 20, kTop = 20, kBottom = 40;
const char* const kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr const char* kMarkColor = "#b00020";

// Seconds since the time zero with enough decimals to tell apart steps of `resolution_ns`.
std::string Offset(int64_t ns, int64_t resolution_ns) {
  double step = std::max(1.0, static_cast<double>(resolution_ns)) / 1e9;
  int decimals = std::clamp(static_cast<int>(std::ceil(-std::log10(step))) + 1, 1, 6);
  char buf[48];
  std::snprintf(buf, sizeof buf, "+%.*f s", decimals, static_cast<double>(ns) / 1e9);
  return buf;
}

// "+4.80 s to +4.95 s": the time a column covers.
std::string ColumnTime(const Plots& p, int col) {
  int64_t from = p.from_ns + col * p.bin_ns;
  return Offset(from, p.bin_ns) + " to " + Offset(from + p.bin_ns, p.bin_ns);
}

std::string SeqRange(const BinCollectives& c) {
  std::string seq = SeqWords(c.first_seq);
  if (c.last_seq == c.first_seq) return c.ops + " " + seq;
  const bool calls = c.last_seq < kGraphReplaySeqBase;  // then the first is a call's too
  return c.ops + " " + seq +
         (calls ? "-" + std::to_string(c.last_seq) : " to " + SeqWords(c.last_seq));
}

// The collectives a column's mark falls among: those that began in it, else the last one
// before it (or the first one after it).
std::string ColumnCollectives(const Plots& p, int col) {
  if (col < 0 || col >= static_cast<int>(p.columns.size())) return "";
  const BinCollectives& c = p.columns[col];
  if (c.count > 0) {
    return std::to_string(c.count) + " collective" + (c.count == 1 ? "" : "s") +
           " began: " + SeqRange(c);
  }
  for (int k = col - 1; k >= 0; --k) {
    const BinCollectives& b = p.columns[k];
    if (b.count > 0) {
      return "no collective began; the last before: " + b.ops + " " + SeqWords(b.last_seq);
    }
  }
  for (size_t k = col + 1; k < p.columns.size(); ++k) {
    const BinCollectives& b = p.columns[k];
    if (b.count > 0) {
      return "no collective began; the next: " + b.ops + " " + SeqWords(b.first_seq);
    }
  }
  return "no collective";
}

int ColumnOf(const Plots& p, int64_t t) {
  return static_cast<int>((t - p.from_ns) / std::max<int64_t>(1, p.bin_ns));
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

// The x axis: Plots' window, labelled in seconds since the time zero.
void TimeAxis(std::ostringstream& o, const Plots& p, int x0, int x1, int y) {
  int64_t span = p.bin_ns * p.bins;
  o << "<line x1='" << x0 << "' y1='" << y << "' x2='" << x1 << "' y2='" << y
    << "' stroke='#333'/>";
  for (int i = 0; i <= 5; ++i) {
    double x = x0 + (x1 - x0) * i / 5.0;
    o << "<text class='xtick' x='" << FormatFixed1(x) << "' y='" << y + 16
      << "' font-size='11' text-anchor='middle'>" << Offset(p.from_ns + span * i / 5, span / 5)
      << "</text>";
  }
  o << "<text x='" << x1 << "' y='" << y + 30 << "' font-size='11' text-anchor='end'>"
    << "time since the recording's start (the collectives' span)</text>";
}

void Open(std::ostringstream& o, const std::string& id, int height, const std::string& title) {
  o << "<svg id='" << id << "' class='plot' xmlns='http://www.w3.org/2000/svg' width='" << kWidth
    << "' height='" << height << "' viewBox='0 0 " << kWidth << " " << height << "'>";
  o << "<title>" << HtmlEscape(title) << "</title>";
}

// The y axis with its grid; tick values from `ticks`, labelled by `label`.
template <typename Label>
void ValueAxis(std::ostringstream& o, int plot_w, int plot_h, const std::vector<double>& ticks,
               double top, const std::string& y_label, Label label) {
  o << "<line x1='" << kLeft << "' y1='" << kTop << "' x2='" << kLeft << "' y2='" << kTop + plot_h
    << "' stroke='#333'/>";
  for (double v : ticks) {
    double y = kTop + plot_h - plot_h * v / top;
    o << "<text class='ytick' x='" << kLeft - 6 << "' y='" << FormatFixed1(y + 4)
      << "' font-size='11' "
      << "text-anchor='end'>" << HtmlEscape(label(v)) << "</text>";
    o << "<line x1='" << kLeft << "' y1='" << FormatFixed1(y) << "' x2='" << kLeft + plot_w
      << "' y2='" << FormatFixed1(y) << "' stroke='#ddd'/>";
  }
  o << "<text x='12' y='" << kTop + plot_h / 2 << "' font-size='11' transform='rotate(-90 12 "
    << kTop + plot_h / 2 << ")' text-anchor='middle'>" << HtmlEscape(y_label) << "</text>";
}

void Legend(std::ostringstream& o, size_t k, const std::string& node, const char* color,
            bool marked) {
  int x = kLeft + 10 + 110 * static_cast<int>(k % 7), y = 4 + 12 * static_cast<int>(k / 7);
  o << "<rect class='swatch' x='" << x << "' y='" << y << "' width='10' height='8' fill='" << color
    << "'/><text x='" << x + 14 << "' y='" << y + 8 << "' font-size='11'"
    << (marked ? " class='straggler' font-weight='bold' fill='" + std::string(kMarkColor) + "'"
               : "")
    << ">" << (marked ? "&#9654; " : "") << HtmlEscape(node) << "</text>";
}

void NoneRecorded(std::ostringstream& o, int plot_w, int plot_h) {
  o << "<text x='" << kLeft + plot_w / 2 << "' y='" << kTop + plot_h / 2
    << "' text-anchor='middle' font-size='14' fill='#777'>none recorded</text>";
}

const char* Color(size_t k) { return kPalette[k % (sizeof kPalette / sizeof kPalette[0])]; }

}  // namespace

std::string HtmlEscape(const std::string& raw) {
  // Control characters, invalid in HTML text, first shown as escapes (rscore/text_escape.h).
  const std::string s = rs::EscapeText(raw);
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

std::string LatenessHeatmapSvg(const Plots& p, const std::vector<bool>& marked,
                               const std::string& id) {
  const Heatmap& h = p.lateness;
  std::ostringstream o;
  int rows = static_cast<int>(h.rows.size());
  int cols = static_cast<int>(h.column_start_ns.size());
  int cell_h = std::clamp(360 / std::max(1, rows), 4, 24);
  int height = kTop + rows * cell_h + kBottom + 34;
  int plot_w = kWidth - kLeft - kRight;
  std::vector<int64_t> all;
  for (const auto& row : h.cells) {
    for (int64_t v : row) {
      if (v >= 0) all.push_back(v);
    }
  }
  std::sort(all.begin(), all.end());
  int64_t top = all.empty() ? 1 : std::max<int64_t>(1, all[(all.size() - 1) * 99 / 100]);
  Open(o, id, height, "Arrival lateness per rank over time");
  for (int r = 0; r < rows; ++r) {
    int y = kTop + r * cell_h;
    bool mark = r < static_cast<int>(marked.size()) && marked[r];
    o << "<text class='row-label" << (mark ? " straggler" : "") << "' x='" << kLeft - 6 << "' y='"
      << y + cell_h - 2 << "' font-size='" << std::min(12, cell_h) << "' text-anchor='end'"
      << (mark ? " font-weight='bold' fill='" + std::string(kMarkColor) + "'" : "") << ">"
      << (mark ? "&#9654; " : "") << HtmlEscape(h.rows[r]) << "</text>";
    for (int c = 0; c < cols; ++c) {
      int64_t v = h.cells[r][c];
      double x = kLeft + plot_w * c / static_cast<double>(cols);
      o << "<rect class='cell' x='" << FormatFixed1(x) << "' y='" << y << "' width='"
        << FormatFixed1(plot_w / static_cast<double>(cols) + 0.5) << "' height='" << cell_h
        << "' fill='" << (v < 0 ? std::string("#eeeeee") : HeatColor(double(v) / top))
        << "'><title>" << HtmlEscape(h.rows[r]) << ", " << ColumnTime(p, c) << ": ";
      if (v < 0) {
        o << "no collective";
      } else {
        const PlotCollective& w = h.worst[r][c];
        o << HtmlEscape(FormatNs(v) + " late at most, in " + w.op + " " + SeqWords(w.seq) +
                        " (first arrival " + Offset(w.at_ns, p.bin_ns / 100) + ")");
      }
      o << "</title></rect>";
    }
    if (mark) {
      o << "<rect class='row-mark' x='" << kLeft << "' y='" << y << "' width='" << plot_w
        << "' height='" << cell_h << "' fill='none' stroke='" << kMarkColor
        << "' stroke-width='1.5'><title>" << HtmlEscape(h.rows[r])
        << ": named by the verdict</title></rect>";
    }
  }
  int axis_y = kTop + rows * cell_h + 2;
  TimeAxis(o, p, kLeft, kLeft + plot_w, axis_y);
  o << "<text x='" << kLeft << "' y='" << height - 4 << "' font-size='11'>colour: lateness, white 0"
    << " to red " << HtmlEscape(FormatNs(top)) << " (p99); grey: no collective"
    << (std::count(marked.begin(), marked.end(), true) ? "; &#9654; the verdict's ranks" : "")
    << "</text>";
  o << "</svg>";
  return o.str();
}

std::string NodeLinesSvg(const Plots& p, const std::vector<NodeSeries>& series,
                         const std::set<std::string>& marked, const std::string& id,
                         const std::string& y_label, bool y_is_ns) {
  std::ostringstream o;
  const int height = 276;
  int plot_w = kWidth - kLeft - kRight, plot_h = height - kTop - kBottom - 16;
  double ymax = 0;
  for (const NodeSeries& s : series) {
    for (const auto& [t, v] : s.points) ymax = std::max(ymax, v);
  }
  if (ymax <= 0) ymax = 1;
  int64_t span = p.bin_ns * p.bins;
  auto value = [&](double v) {
    return y_is_ns ? FormatNs(static_cast<int64_t>(v)) : FormatFixed1(v);
  };
  Open(o, id, height, y_label);
  ValueAxis(o, plot_w, plot_h, {0, ymax / 4, ymax / 2, ymax * 3 / 4, ymax}, ymax, y_label, value);
  TimeAxis(o, p, kLeft, kLeft + plot_w, kTop + plot_h);
  size_t k = 0;
  for (const NodeSeries& s : series) {
    const char* color = Color(k);
    bool mark = marked.count(s.node) > 0;
    std::ostringstream dots;
    o << "<polyline class='series' fill='none' stroke-width='" << (mark ? 3 : 2) << "' stroke='"
      << color << "' points='";
    for (const auto& [t, v] : s.points) {
      double x = kLeft + plot_w * (static_cast<double>(t - p.from_ns) + p.bin_ns / 2.0) / span;
      double y = kTop + plot_h - plot_h * v / ymax;
      o << FormatFixed1(x) << "," << FormatFixed1(y) << " ";
      int col = ColumnOf(p, t);
      dots << "<circle class='point' cx='" << FormatFixed1(x) << "' cy='" << FormatFixed1(y)
           << "' r='" << (mark ? 3.5 : 2.5) << "' fill='" << color << "'><title>"
           << HtmlEscape(s.node + ", " + ColumnTime(p, col) + ": " + value(v) + "; " +
                         ColumnCollectives(p, col))
           << "</title></circle>";
    }
    o << "'><title>" << HtmlEscape(s.node) << "</title></polyline>" << dots.str();
    Legend(o, k, s.node, color, mark);
    ++k;
  }
  if (series.empty()) NoneRecorded(o, plot_w, plot_h);
  o << "</svg>";
  return o.str();
}

std::string NodeBarsSvg(const Plots& p, const std::vector<NodeSeries>& series,
                        const std::set<std::string>& marked, const std::string& id,
                        const std::string& y_label, const std::string& unit) {
  std::ostringstream o;
  const int height = 276;
  int plot_w = kWidth - kLeft - kRight, plot_h = height - kTop - kBottom - 16;
  double ymax = 0;
  for (const NodeSeries& s : series) {
    for (const auto& [t, v] : s.points) ymax = std::max(ymax, v);
  }
  // Whole-number ticks: the smallest step of 1, 2 or 5 times a power of ten that needs at most
  // five of them to reach the largest count.
  int64_t step = 1;
  for (int64_t base = 1; std::ceil(ymax / static_cast<double>(step)) > 5; base *= 10) {
    for (int64_t s : {base, 2 * base, 5 * base}) {
      step = s;
      if (std::ceil(ymax / static_cast<double>(s)) <= 5) break;
    }
  }
  int64_t top = std::max<int64_t>(step, static_cast<int64_t>(std::ceil(ymax / step)) * step);
  std::vector<double> ticks;
  for (int64_t v = 0; v <= top; v += step) ticks.push_back(static_cast<double>(v));
  Open(o, id, height, y_label);
  ValueAxis(o, plot_w, plot_h, ticks, static_cast<double>(top), y_label,
            [](double v) { return std::to_string(static_cast<int64_t>(std::llround(v))); });
  TimeAxis(o, p, kLeft, kLeft + plot_w, kTop + plot_h);
  double column_w = plot_w / static_cast<double>(std::max(1, p.bins));
  double bar_w = column_w * 0.8 / static_cast<double>(std::max<size_t>(1, series.size()));
  size_t k = 0;
  for (const NodeSeries& s : series) {
    const char* color = Color(k);
    bool mark = marked.count(s.node) > 0;
    for (const auto& [t, v] : s.points) {
      if (v <= 0) continue;
      int col = ColumnOf(p, t);
      double x = kLeft + column_w * col + column_w * 0.1 + bar_w * static_cast<double>(k);
      double h = plot_h * v / static_cast<double>(top);
      int64_t n = std::llround(v);
      o << "<rect class='bar" << (mark ? " straggler" : "") << "' x='" << FormatFixed1(x) << "' y='"
        << FormatFixed1(kTop + plot_h - h) << "' width='" << FormatFixed1(std::max(1.0, bar_w))
        << "' height='" << FormatFixed1(h) << "' fill='" << color << "'><title>"
        << HtmlEscape(s.node + ", " + ColumnTime(p, col) + ": " + std::to_string(n) + " " + unit +
                      "; " + ColumnCollectives(p, col))
        << "</title></rect>";
    }
    Legend(o, k, s.node, color, mark);
    ++k;
  }
  if (series.empty()) NoneRecorded(o, plot_w, plot_h);
  o << "</svg>";
  return o.str();
}

}  // namespace rs::analyzer
