#include <sstream>
#include <string_view>

#include "analyzer/report_format.h"
#include "analyzer/report_render.h"
#include "rscore/comm_hash.h"
#include "rscore/text_escape.h"

namespace rs::analyzer {
namespace {

// Text from the recording (node and process names, SQL values) and from the analysis, as
// Markdown that shows it literally: no HTML (a node named <script>), no links, code spans or
// strong emphasis, no table row broken by '|' or a newline, no heading or list made by a
// leading character. The escapes are CommonMark's backslash escapes; '_' stays as it is
// (cpu_contention reads better raw, and inside words it emphasizes nothing). Control
// characters are first shown as escapes (rscore/text_escape.h): a newline as \n, ESC as \x1b.
std::string Md(std::string_view raw) {
  const std::string s = rs::EscapeText(raw);
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool inline_special = std::string_view("\\`*[]<>|~").find(c) != std::string_view::npos;
    const bool line_start = i == 0 && std::string_view("#+-=>").find(c) != std::string_view::npos;
    if (inline_special || line_start) o += '\\';
    o += c;
  }
  return o;
}

// The verdict line, the warnings and what the input holds.
void Head(std::ostringstream& o, const Report& r) {
  o << "# rankscope report\n\n**" << Md(r.verdict) << "**\n\n";
  for (const std::string& w : r.warnings) o << "> **Warning:** " << Md(w) << "\n>\n";
  if (!r.warnings.empty()) o << "\n";
  o << "Input " << Md(r.input) << " (" << Md(r.db_kind) << "): " << r.nodes.size() << " node(s), "
    << r.ranks << " rank(s), " << r.collectives << " matched collectives; " << Md(RecordingSpan(r))
    << ".\n\n";
}

// One straggler or observation: its causes, evidence and basis.
void Finding(std::ostringstream& o, const Straggler& s) {
  o << "### " << Md(StragglerLabel(s)) << " — " << Md(s.cause) << " ("
    << Md(s.shape.empty() ? "" : ShapeSpoken(s.shape) + ", ") << "confidence "
    << Md(ConfidenceName(s.confidence)) << ")\n\n"
    << Md(s.summary) << "\n\n";
  if (std::string who = StragglerWho(s); !who.empty()) o << "Who: " << Md(who) << ".\n\n";
  if (!s.competitors.empty()) {
    o << "Competing for its CPUs: " << Md(CompetitorsLine(s)) << ".\n\n";
  }
  o << "| # | cause | score | numbers | remediation |\n|---|---|---|---|---|\n";
  size_t i = 0;
  for (const Cause& c : s.causes) {
    o << "| " << ++i << " | " << Md(c.kind) << " | " << FormatPercent(c.score) << " | "
      << Md(c.summary) << " | " << Md(c.remediation) << " |\n";
  }
  o << "\nEvidence:\n\n";
  for (const Evidence& e : s.evidence) o << "- *" << Md(e.kind) << "*: " << Md(e.summary) << "\n";
  o << "\nBasis" << Md(s.arrival_basis.empty() ? "" : " (arrival: " + Spoken(s.arrival_basis) + ")")
    << ": " << Md(s.basis) << "\n\n";
}

// The verdicts, then the observations.
void Findings(std::ostringstream& o, const Report& r) {
  o << "## Stragglers\n\n";
  if (r.stragglers.empty()) o << "None claimed.\n\n";
  for (const Straggler& s : r.stragglers) Finding(o, s);
  if (!r.observations.empty()) {
    o << "## Observations\n\nNo measured lateness behind these; they are not verdicts.\n\n";
    for (const Straggler& s : r.observations) Finding(o, s);
  }
}

// The hang verdict, its chains and culprits, each rank's progress, the mismatches.
void HangSection(std::ostringstream& o, const Report& r) {
  o << "## Hang\n\n" << (r.hang.detected ? "**Detected.** " : "") << Md(r.hang.summary) << "\n\n";
  if (r.hang.detected) {
    o << "Confidence " << Md(HangConfidence(r.hang)) << "; states from " << Md(Spoken(r.hang.basis))
      << (r.hang.stuck_for_ns > 0 ? "; stuck for at least " + FormatNs(r.hang.stuck_for_ns) : "")
      << ".\n\n";
    for (const std::string& c : r.hang.chains) o << "- chain: " << Md(c) << "\n";
    for (const HangCulprit& c : r.hang.culprits) {
      o << "- culprit (" << Md(Spoken(c.kind)) << "): " << Md(c.evidence) << "\n";
    }
    if (!r.hang.chains.empty() || !r.hang.culprits.empty()) o << "\n";
  }
  if (!r.hang.progress.empty()) {
    o << "| node | rank | state | last entered | last started | last completed | in flight |"
         " doing |\n|---|---|---|---|---|---|---|---|\n";
    for (const RankProgress& p : r.hang.progress) {
      std::string doing;
      for (const Activity& a : p.doing) {
        doing += (doing.empty() ? "" : "; ") + DescribeActivityLine(a, r.start_ns);
      }
      o << "| " << Md(p.node) << " | " << (p.rank ? std::to_string(*p.rank) : "?") << " | "
        << Md(Spoken(p.state)) << " | "
        << (p.last_entered_seq ? std::to_string(*p.last_entered_seq) : "-") << " | "
        << (p.last_started_seq ? std::to_string(*p.last_started_seq) : "-") << " | "
        << (p.last_completed_seq ? std::to_string(*p.last_completed_seq) : "-") << " | "
        << (p.in_flight_seq ? Md(p.in_flight_op) + " " + std::to_string(*p.in_flight_seq) : "-")
        << " | " << Md(doing.empty() ? "-" : doing) << " |\n";
    }
    o << "\n";
  }
  for (const Mismatch& m : r.hang.mismatches) {
    o << "- " << Md(MismatchPlace(m)) << ", " << Md(m.field) << ":";
    for (const auto& [value, who] : m.variants) o << " " << Md(value) << " x" << who.size();
    o << "\n";
  }
}

// What the Flight Recorder dumps said, where the input has them.
void FlightRecorderSection(std::ostringstream& o, const Report& r) {
  if (const auto& fr = r.flight_recorder) {
    o << "## Flight Recorder\n\n" << Md(FlightRecorderLine(*fr)) << ".\n\n";
    if (fr->agreement == "agree" || fr->agreement == "disagree") {
      o << "Their hang: " << Md(fr->hang.summary) << " (confidence " << Md(HangConfidence(fr->hang))
        << ").\n\n";
    }
    for (const Mismatch& m : fr->hang.mismatches) {
      o << "- " << Md(MismatchPlace(m)) << ", " << Md(m.field) << ":";
      for (const auto& [value, who] : m.variants) o << " " << Md(value) << " x" << who.size();
      o << "\n";
    }
    if (!fr->hang.mismatches.empty()) o << "\n";
  }
}

// Lateness per node (the first rows; the JSON has them all).
void PerNodeSection(std::ostringstream& o, const Report& r) {
  size_t nodes_left_out = 0;
  const std::vector<const ArrivalStats*> node_rows = NodeRows(r, &nodes_left_out);
  if (!node_rows.empty()) {
    o << "## Per node\n\n| node | collectives | last | median lateness | p90 lateness | "
         "against the other nodes (mean +- error) | median duration |\n"
         "|---|---|---|---|---|---|---|\n";
    for (const ArrivalStats* s : node_rows) {
      o << "| " << Md(s->node) << " | " << s->collectives << " | " << s->last_count << " | "
        << FormatNs(s->median_lateness_ns) << " | " << FormatNs(s->p90_lateness_ns) << " | "
        << NodeExcessText(r, *s) << " | "
        << (s->median_duration_ns >= 0 ? FormatNs(s->median_duration_ns) : "-") << " |\n";
    }
    if (nodes_left_out) o << "\n" << nodes_left_out << " more node(s) in the JSON report.\n";
    o << "\n";
  }
}

// Lateness per rank.
void PerRankSection(std::ostringstream& o, const Report& r) {
  o << "## Per rank\n\n| node | rank | collectives | on device | last | median lateness |"
       " p90 lateness | median host lateness | median duration |\n"
       "|---|---|---|---|---|---|---|---|---|\n";
  for (const ArrivalStats& s : r.per_rank) {
    o << "| " << Md(s.node) << " | " << (s.rank ? std::to_string(*s.rank) : "?") << " | "
      << s.collectives << " | " << s.device_collectives << " | " << s.last_count << " | "
      << FormatNs(s.median_lateness_ns) << " | " << FormatNs(s.p90_lateness_ns) << " | "
      << FormatNs(s.median_host_lateness_ns) << " | "
      << (s.median_duration_ns >= 0 ? FormatNs(s.median_duration_ns) : "-") << " |\n";
  }
}

// Lateness per communicator and across them, where there are several.
void PerGroupSection(std::ostringstream& o, const Report& r) {
  size_t groups_left_out = 0;
  const std::vector<const GroupView*> groups = GroupRows(r, &groups_left_out);
  if (!groups.empty()) {
    o << "\n## Per group\n\n"
      << Md(GroupViewCaption()) << ".\n\n"
      << "| communicator | latest member | excess (mean +- error) | last | basis | median duration "
         "|\n"
         "|---|---|---|---|---|---|\n";
    for (const GroupView* g : groups) {
      const GroupMember& m = g->members.front();
      o << "| " << Md(g->label) << " | " << Md(MemberLabel(m.node, m.rank, m.pid)) << " | "
        << FormatNs(m.excess_ns) << " +- " << FormatNs(m.excess_se_ns) << " | " << m.last_count
        << "/" << m.collectives << " | " << Md(Spoken(g->basis)) << " | "
        << (g->median_duration_ns >= 0 ? FormatNs(g->median_duration_ns) : "-") << " |\n";
    }
    if (groups_left_out) o << "\n" << groups_left_out << " more group(s) in the JSON report.\n";
    o << "\n### Across groups\n\n| rank | groups | latest in | excess in all "
         "|\n|---|---|---|---|\n";
    for (const RankAcrossGroups& a : r.across_groups) {
      o << "| " << Md(MemberLabel(a.node, a.rank, a.pid)) << " | " << a.groups << " | "
        << a.latest_in << " | " << FormatNs(a.excess_total_ns) << " |\n";
    }
  }
}

// What the arrivals rest on, and each node's clock.
void TimingSection(std::ostringstream& o, const Report& r) {
  if (!r.timing.arrival_basis.empty()) {
    o << "\n## Timing\n\nArrivals from " << Md(Spoken(r.timing.arrival_basis)) << " ("
      << r.timing.device_collectives << " collectives on device, " << r.timing.host_collectives
      << " on host entry, " << r.timing.excluded_collectives << " left out). NCCL calls "
      << Md(r.timing.call_semantics) << ": " << Md(r.timing.semantics_evidence) << ".\n";
  }
  o << "\n## Clock\n\n| node | offset | error bound | method | evidence |\n"
       "|---|---|---|---|---|\n";
  for (const NodeClock& c : r.clock) {
    o << "| " << Md(c.node) << " | " << FormatNs(c.offset_ns) << " | " << FormatNs(c.error_bound_ns)
      << " | " << Md(c.method) << " | " << Md(c.evidence.empty() ? "-" : c.evidence) << " |\n";
  }
}

// The notes and how to read the report.
void NotesSection(std::ostringstream& o, const Report& r) {
  if (!r.notes.empty()) {
    o << "\n## Notes\n\n";
    for (const std::string& n : r.notes) o << "- " << Md(n) << "\n";
  }
  o << "\n## Reading this report\n\n" << Md(ReadingGuide()) << "\n";
}

}  // namespace

std::string RenderMarkdown(const Report& r) {
  std::ostringstream o;
  Head(o, r);
  Findings(o, r);
  HangSection(o, r);
  FlightRecorderSection(o, r);
  PerNodeSection(o, r);
  PerRankSection(o, r);
  PerGroupSection(o, r);
  TimingSection(o, r);
  NotesSection(o, r);
  return o.str();
}

}  // namespace rs::analyzer
