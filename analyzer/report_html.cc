#include <algorithm>
#include <set>
#include <sstream>

#include "analyzer/plots.h"
#include "analyzer/report_format.h"
#include "analyzer/report_render.h"
#include "analyzer/svg_charts.h"

namespace rs::analyzer {
namespace {

constexpr const char* kStyle = R"css(
body { font-family: sans-serif; margin: 24px; color: #222; max-width: 1100px; }
.verdict { font-size: 1.3em; font-weight: bold; padding: 12px; border-radius: 6px;
           background: #fff3cd; border: 1px solid #e0c060; }
.verdict.ok { background: #e6f4ea; border-color: #8c8; }
.verdict.neutral { background: #eef1f5; border-color: #9aa8b8; }
.warning { background: #fff4e5; border: 1px solid #e0a040; padding: 6px 12px; border-radius: 6px; }
table { border-collapse: collapse; margin: 8px 0 16px; }
td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: left; font-size: 0.9em; }
th { background: #f3f3f3; }
.plot { border: 1px solid #ddd; margin: 6px 0 18px; background: #fff; }
.note { color: #555; }
tr.straggler td { background: #fde2e4; font-weight: bold; }
tr.straggler td:first-child { border-left: 4px solid #b00020; }
)css";

// Rows whose `marked` entry is true (the verdict's ranks) get class 'straggler' and a marker.
void Table(std::ostringstream& o, const std::vector<std::string>& head,
           const std::vector<std::vector<std::string>>& rows,
           const std::vector<bool>& marked = {}) {
  o << "<table><tr>";
  for (const auto& h : head) o << "<th>" << HtmlEscape(h) << "</th>";
  o << "</tr>";
  for (size_t r = 0; r < rows.size(); ++r) {
    bool mark = r < marked.size() && marked[r];
    o << (mark ? "<tr class='straggler'>" : "<tr>");
    for (size_t c = 0; c < rows[r].size(); ++c) {
      o << "<td>" << (mark && c == 0 ? "&#9654; " : "") << HtmlEscape(rows[r][c]) << "</td>";
    }
    o << "</tr>";
  }
  o << "</table>";
}

// Whether a verdict (a straggler or a hang culprit) names this rank: its node where it stands
// for the whole node, else its rank or one of the late ranks it stands for.
bool Names(const Straggler& s, const std::string& node, const std::optional<int64_t>& rank) {
  if (s.node != node) return false;
  if (!s.rank && s.ranks.empty()) return true;
  if (!rank) return !s.rank;
  return s.rank == rank || std::find(s.ranks.begin(), s.ranks.end(), *rank) != s.ranks.end();
}

bool Drawn(const std::vector<NodeSeries>& series) {
  return std::any_of(series.begin(), series.end(),
                     [](const NodeSeries& s) { return !s.points.empty(); });
}

bool Marked(const Report& r, const std::string& node, const std::optional<int64_t>& rank) {
  return std::any_of(r.stragglers.begin(), r.stragglers.end(),
                     [&](const Straggler& s) { return Names(s, node, rank); });
}

// The verdict line, the warnings and what the input holds.
void Head(std::ostringstream& o, const Report& r) {
  // Green only where the report saw enough to clear the job; grey where it cannot decide.
  const char* tone = r.verdict_kind == "no_straggler" || r.verdict_kind == "no_hang" ? " ok"
                     : r.verdict_kind == "undetermined" || r.verdict_kind == "no_collectives"
                         ? " neutral"
                         : "";
  o << "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
    << "<title>rankscope report: " << HtmlEscape(r.input) << "</title><style>" << kStyle
    << "</style></head><body>";
  o << "<h1>rankscope report</h1>";
  o << "<p id='verdict' class='verdict" << tone << "'>" << HtmlEscape(r.verdict) << "</p>";
  for (const std::string& w : r.warnings) {
    o << "<p class='warning'><b>Warning:</b> " << HtmlEscape(w) << "</p>";
  }
  o << "<p>Input <code>" << HtmlEscape(r.input) << "</code> (" << HtmlEscape(r.db_kind)
    << "): " << r.nodes.size() << " node(s), " << r.ranks << " rank(s), " << r.collectives
    << " matched collectives; " << HtmlEscape(RecordingSpan(r)) << ".</p>";
}

// One straggler or observation: its causes, evidence and basis.
void Finding(std::ostringstream& o, const Straggler& s, const char* cls) {
  o << "<div class='" << cls << "'><h3>" << HtmlEscape(StragglerLabel(s)) << " — "
    << HtmlEscape(s.cause) << " (" << HtmlEscape(s.shape.empty() ? "" : ShapeSpoken(s.shape) + ", ")
    << "confidence " << HtmlEscape(ConfidenceName(s.confidence)) << ")</h3><p>"
    << HtmlEscape(s.summary) << "</p>";
  if (std::string who = StragglerWho(s); !who.empty()) {
    o << "<p>Who: " << HtmlEscape(who) << ".</p>";
  }
  if (!s.competitors.empty()) {
    o << "<p>Competing for its CPUs: " << HtmlEscape(CompetitorsLine(s)) << ".</p>";
  }
  std::vector<std::vector<std::string>> rows;
  for (const Cause& c : s.causes) {
    rows.push_back({c.kind, FormatPercent(c.score), c.summary, c.remediation});
  }
  Table(o, {"cause", "score", "numbers", "remediation"}, rows);
  o << "<ul>";
  for (const Evidence& e : s.evidence) {
    o << "<li><b>" << HtmlEscape(e.kind) << "</b>: " << HtmlEscape(e.summary) << "</li>";
  }
  o << "</ul><p class='note'>Basis"
    << HtmlEscape(s.arrival_basis.empty() ? "" : " (arrival: " + Spoken(s.arrival_basis) + ")")
    << ": " << HtmlEscape(s.basis) << "</p></div>";
}

// The verdicts, then the observations.
void Findings(std::ostringstream& o, const Report& r) {
  o << "<h2>Stragglers</h2>";
  if (r.stragglers.empty()) o << "<p>None claimed.</p>";
  for (const Straggler& s : r.stragglers) Finding(o, s, "straggler");
  if (!r.observations.empty()) {
    o << "<h2>Observations</h2><p class='note'>No measured lateness behind these; they are not "
         "verdicts.</p>";
    for (const Straggler& s : r.observations) Finding(o, s, "observation");
  }
}

// The hang verdict, its chains and culprits, and each rank's progress.
void HangSection(std::ostringstream& o, const Report& r) {
  o << "<h2>Hang</h2><p id='hang'>" << (r.hang.detected ? "<b>Detected.</b> " : "")
    << HtmlEscape(r.hang.summary) << "</p>";
  if (r.hang.detected) {
    o << "<p>Confidence " << HtmlEscape(HangConfidence(r.hang)) << "; states from "
      << HtmlEscape(Spoken(r.hang.basis))
      << (r.hang.stuck_for_ns > 0 ? "; stuck for at least " + FormatNs(r.hang.stuck_for_ns) : "")
      << ".</p>";
    if (!r.hang.chains.empty() || !r.hang.culprits.empty()) {
      o << "<ul id='hang-chains'>";
      for (const std::string& c : r.hang.chains) o << "<li>chain: " << HtmlEscape(c) << "</li>";
      for (const HangCulprit& c : r.hang.culprits) {
        o << "<li>culprit (" << HtmlEscape(Spoken(c.kind)) << "): " << HtmlEscape(c.evidence)
          << "</li>";
      }
      o << "</ul>";
    }
  }
  if (!r.hang.progress.empty()) {
    std::vector<std::vector<std::string>> rows;
    std::vector<bool> marked;
    for (const RankProgress& p : r.hang.progress) {
      marked.push_back(Marked(r, p.node, p.rank));
      std::string doing;
      for (const Activity& a : p.doing) {
        doing += (doing.empty() ? "" : "; ") + DescribeActivityLine(a, r.start_ns);
      }
      rows.push_back(
          {p.node, p.rank ? std::to_string(*p.rank) : "?", Spoken(p.state),
           p.last_entered_seq ? std::to_string(*p.last_entered_seq) : "-",
           p.last_started_seq ? std::to_string(*p.last_started_seq) : "-",
           p.last_completed_seq ? std::to_string(*p.last_completed_seq) : "-",
           p.in_flight_seq ? p.in_flight_op + " " + std::to_string(*p.in_flight_seq) : "-",
           doing.empty() ? "-" : doing});
    }
    Table(o,
          {"node", "rank", "state", "last entered", "last started", "last completed", "in flight",
           "doing"},
          rows, marked);
  }
}

// What the Flight Recorder dumps said, where the input has them.
void FlightRecorderSection(std::ostringstream& o, const Report& r) {
  if (const auto& fr = r.flight_recorder) {
    o << "<h2>Flight Recorder</h2><p id='flight-recorder'>" << HtmlEscape(FlightRecorderLine(*fr))
      << ".</p>";
    if (fr->agreement == "agree" || fr->agreement == "disagree") {
      o << "<p>Their hang: " << HtmlEscape(fr->hang.summary) << " (confidence "
        << HtmlEscape(HangConfidence(fr->hang)) << ").</p>";
    }
    if (!fr->hang.mismatches.empty()) {
      o << "<ul>";
      for (const Mismatch& m : fr->hang.mismatches) {
        o << "<li>" << HtmlEscape(MismatchPlace(m)) << ", " << HtmlEscape(m.field) << ":";
        for (const auto& [value, who] : m.variants) {
          o << " " << HtmlEscape(value) << " x" << who.size();
        }
        o << "</li>";
      }
      o << "</ul>";
    }
  }
}

// The four plots, the verdict's ranks and nodes marked.
void PlotsSection(std::ostringstream& o, const Report& r) {
  std::vector<bool> marked_rows;
  for (size_t k = 0; k < r.plots.lateness.row_nodes.size(); ++k) {
    marked_rows.push_back(Marked(r, r.plots.lateness.row_nodes[k], r.plots.lateness.row_ranks[k]));
  }
  std::set<std::string> marked_nodes;
  for (const Straggler& s : r.stragglers) marked_nodes.insert(s.node);
  o << "<h2>Plots</h2><p class='note'>Time in seconds since the recording's start; the plots span "
       "the matched collectives, +"
    << HtmlEscape(FormatNs(r.plots.from_ns)) << " to +"
    << HtmlEscape(FormatNs(r.plots.from_ns + r.plots.bin_ns * r.plots.bins)) << ", in "
    << r.plots.bins << " bins of " << HtmlEscape(FormatNs(r.plots.bin_ns))
    << ". Hover a mark for its time and the collectives (op, seq) behind it"
    << (marked_nodes.empty() ? "" : "; &#9654; marks the verdict's ranks and nodes") << ".</p>";
  // A plot with nothing recorded is said so, not drawn as empty axes.
  auto plot = [&](const std::string& id, const std::string& none, const auto& draw) {
    if (none.empty()) {
      o << draw();
    } else {
      o << "<p id='" << id << "' class='note plot-none'>" << HtmlEscape(none) << "</p>";
    }
  };
  o << "<h3>Arrival lateness per rank</h3>";
  plot("plot-lateness", r.plots.lateness.rows.empty() ? "No ranks' collectives recorded." : "",
       [&] { return LatenessHeatmapSvg(r.plots, marked_rows, "plot-lateness"); });
  o << "<h3>Collective duration per node</h3>";
  plot("plot-durations", !Drawn(r.plots.durations) ? "No collective durations recorded." : "", [&] {
    return NodeLinesSvg(r.plots, r.plots.durations, marked_nodes, "plot-durations",
                        "mean collective duration", true);
  });
  o << "<h3>TCP loss repairs over the network (between nodes, or to peers no recorder saw), "
       "sent or received by each node</h3>";
  plot("plot-retransmits",
       !Drawn(r.plots.retransmits) ? "None recorded in the collectives' span." : "", [&] {
         return NodeBarsSvg(r.plots, r.plots.retransmits, marked_nodes, "plot-retransmits",
                            "repaired segments per bin", "segments repaired");
       });
  o << "<h3>Run-queue latency of the ranks' processes per node</h3>";
  plot("plot-runq", !Drawn(r.plots.runq) ? "None recorded in the collectives' span." : "", [&] {
    return NodeLinesSvg(r.plots, r.plots.runq, marked_nodes, "plot-runq", "run-queue wait per bin",
                        true);
  });
}

// Lateness per node (the first rows; the JSON has them all).
void PerNodeSection(std::ostringstream& o, const Report& r) {
  size_t nodes_left_out = 0;
  const std::vector<const ArrivalStats*> node_rows = NodeRows(r, &nodes_left_out);
  if (!node_rows.empty()) {
    o << "<h2>Per node</h2>";
    std::vector<std::vector<std::string>> cells;
    std::vector<bool> node_marked;
    for (const ArrivalStats* s : node_rows) {
      node_marked.push_back(Marked(r, s->node, std::nullopt));
      cells.push_back({s->node, std::to_string(s->collectives), std::to_string(s->last_count),
                       FormatNs(s->median_lateness_ns), FormatNs(s->p90_lateness_ns),
                       NodeExcessText(r, *s),
                       s->median_duration_ns >= 0 ? FormatNs(s->median_duration_ns) : "-"});
    }
    Table(o,
          {"node", "collectives", "last", "median lateness", "p90 lateness",
           "against the other nodes (mean +- error)", "median duration"},
          cells, node_marked);
    if (nodes_left_out) {
      o << "<p class='note'>" << nodes_left_out << " more node(s) in the JSON report.</p>";
    }
  }
}

// Lateness per rank.
void PerRankSection(std::ostringstream& o, const Report& r) {
  o << "<h2>Per rank</h2>";
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> marked;
  for (const ArrivalStats& s : r.per_rank) {
    marked.push_back(Marked(r, s.node, s.rank));
    rows.push_back({s.node, s.rank ? std::to_string(*s.rank) : "?", std::to_string(s.collectives),
                    std::to_string(s.device_collectives), std::to_string(s.last_count),
                    FormatNs(s.median_lateness_ns), FormatNs(s.p90_lateness_ns),
                    FormatNs(s.median_host_lateness_ns),
                    s.median_duration_ns >= 0 ? FormatNs(s.median_duration_ns) : "-"});
  }
  Table(o,
        {"node", "rank", "collectives", "on device", "last", "median lateness", "p90 lateness",
         "median host lateness", "median duration"},
        rows, marked);
}

// Lateness per communicator and across them, where there are several.
void PerGroupSection(std::ostringstream& o, const Report& r) {
  size_t groups_left_out = 0;
  const std::vector<const GroupView*> groups = GroupRows(r, &groups_left_out);
  if (!groups.empty()) {
    o << "<h2>Per group</h2><p id='per-group' class='note'>" << HtmlEscape(GroupViewCaption())
      << ".</p>";
    std::vector<std::vector<std::string>> group_rows;
    std::vector<bool> group_marked;
    for (const GroupView* g : groups) {
      const GroupMember& m = g->members.front();
      group_marked.push_back(Marked(r, m.node, m.rank));
      group_rows.push_back({g->label, MemberLabel(m.node, m.rank, m.pid),
                            FormatNs(m.excess_ns) + " +- " + FormatNs(m.excess_se_ns),
                            std::to_string(m.last_count) + "/" + std::to_string(m.collectives),
                            Spoken(g->basis),
                            g->median_duration_ns >= 0 ? FormatNs(g->median_duration_ns) : "-"});
    }
    Table(o,
          {"communicator", "latest member", "excess (mean +- error)", "last", "basis",
           "median duration"},
          group_rows, group_marked);
    if (groups_left_out) {
      o << "<p class='note'>" << groups_left_out << " more group(s) in the JSON report.</p>";
    }
    o << "<h3>Across groups</h3>";
    std::vector<std::vector<std::string>> across_rows;
    std::vector<bool> across_marked;
    for (const RankAcrossGroups& a : r.across_groups) {
      across_marked.push_back(Marked(r, a.node, a.rank));
      across_rows.push_back({MemberLabel(a.node, a.rank, a.pid), std::to_string(a.groups),
                             std::to_string(a.latest_in), FormatNs(a.excess_total_ns)});
    }
    Table(o, {"rank", "groups", "latest in", "excess in all"}, across_rows, across_marked);
  }
}

// What the arrivals rest on, and each node's clock.
void TimingSection(std::ostringstream& o, const Report& r) {
  if (!r.timing.arrival_basis.empty()) {
    o << "<h2>Timing</h2><p id='timing'>Arrivals from "
      << HtmlEscape(Spoken(r.timing.arrival_basis)) << " (" << r.timing.device_collectives
      << " collectives on device, " << r.timing.host_collectives << " on host entry, "
      << r.timing.excluded_collectives << " left out). NCCL calls "
      << HtmlEscape(r.timing.call_semantics) << ": " << HtmlEscape(r.timing.semantics_evidence)
      << ".</p>";
  }
  o << "<h2>Clock</h2>";
  std::vector<std::vector<std::string>> rows;
  for (const NodeClock& c : r.clock) {
    rows.push_back({c.node, FormatNs(c.offset_ns), FormatNs(c.error_bound_ns), c.method,
                    c.evidence.empty() ? "-" : c.evidence});
  }
  Table(o, {"node", "offset applied", "error bound", "method", "evidence"}, rows);
}

// The notes and how to read the report.
void NotesSection(std::ostringstream& o, const Report& r) {
  if (!r.notes.empty()) {
    o << "<h2>Notes</h2><ul>";
    for (const std::string& n : r.notes) o << "<li>" << HtmlEscape(n) << "</li>";
    o << "</ul>";
  }
  o << "<h2>Reading this report</h2><p id='reading' class='note'>" << HtmlEscape(ReadingGuide())
    << "</p>";
}

}  // namespace

std::string RenderHtml(const Report& r) {
  std::ostringstream o;
  Head(o, r);
  Findings(o, r);
  HangSection(o, r);
  FlightRecorderSection(o, r);
  PlotsSection(o, r);
  PerNodeSection(o, r);
  PerRankSection(o, r);
  PerGroupSection(o, r);
  TimingSection(o, r);
  NotesSection(o, r);
  o << "</body></html>\n";
  return o.str();
}

}  // namespace rs::analyzer
