#include <sstream>

#include "report_format.h"
#include "report_render.h"
#include "rscore/comm_hash.h"

namespace analyzer {
namespace {

// Table cells must not break the row.
std::string Cell(std::string s) {
  std::string o;
  for (char c : s) {
    if (c == '|') {
      o += "\\|";
    } else if (c == '\n') {
      o += ' ';
    } else {
      o += c;
    }
  }
  return o;
}

}  // namespace

std::string RenderMarkdown(const Report& r) {
  std::ostringstream o;
  o << "# rankscope report\n\n**" << Cell(r.verdict) << "**\n\n";
  for (const std::string& w : r.warnings) o << "> **Warning:** " << Cell(w) << "\n>\n";
  if (!r.warnings.empty()) o << "\n";
  o << "Input `" << r.input << "` (" << r.db_kind << "): " << r.nodes.size() << " node(s), "
    << r.ranks << " rank(s), " << r.collectives << " matched collectives; " << RecordingSpan(r)
    << ".\n\n";
  auto finding = [&](const Straggler& s) {
    o << "### " << StragglerLabel(s) << " — " << s.cause << " ("
      << (s.shape.empty() ? "" : Spoken(s.shape) + ", ") << "confidence " << s.confidence << ")\n\n"
      << s.summary << "\n\n";
    if (std::string who = StragglerWho(s); !who.empty()) o << "Who: " << who << ".\n\n";
    if (!s.competitors.empty()) {
      o << "Competing for its CPUs: " << Cell(CompetitorsLine(s)) << ".\n\n";
    }
    o << "| # | cause | score | numbers | remediation |\n|---|---|---|---|---|\n";
    size_t i = 0;
    for (const Cause& c : s.causes) {
      o << "| " << ++i << " | " << c.kind << " | " << FormatPercent(c.score) << " | "
        << Cell(c.summary) << " | " << Cell(c.remediation) << " |\n";
    }
    o << "\nEvidence:\n\n";
    for (const Evidence& e : s.evidence) o << "- *" << e.kind << "*: " << e.summary << "\n";
    o << "\nBasis" << (s.arrival_basis.empty() ? "" : " (arrival: " + Spoken(s.arrival_basis) + ")")
      << ": " << s.basis << "\n\n";
  };
  o << "## Stragglers\n\n";
  if (r.stragglers.empty()) o << "None claimed.\n\n";
  for (const Straggler& s : r.stragglers) finding(s);
  if (!r.observations.empty()) {
    o << "## Observations\n\nNo measured lateness behind these; they are not verdicts.\n\n";
    for (const Straggler& s : r.observations) finding(s);
  }
  o << "## Hang\n\n" << (r.hang.detected ? "**Detected.** " : "") << r.hang.summary << "\n\n";
  if (r.hang.detected) {
    o << "Confidence " << r.hang.confidence << "; states from " << Spoken(r.hang.basis) << ".\n\n";
  }
  if (!r.hang.progress.empty()) {
    o << "| node | rank | state | last entered | last started | last completed | in flight |"
         " doing |\n|---|---|---|---|---|---|---|---|\n";
    for (const RankProgress& p : r.hang.progress) {
      std::string doing;
      for (const Activity& a : p.doing) {
        doing += (doing.empty() ? "" : "; ") + DescribeActivityLine(a, r.start_ns);
      }
      o << "| " << p.node << " | " << (p.rank ? std::to_string(*p.rank) : "?") << " | "
        << Spoken(p.state) << " | "
        << (p.last_entered_seq ? std::to_string(*p.last_entered_seq) : "-") << " | "
        << (p.last_started_seq ? std::to_string(*p.last_started_seq) : "-") << " | "
        << (p.last_completed_seq ? std::to_string(*p.last_completed_seq) : "-") << " | "
        << (p.in_flight_seq ? p.in_flight_op + " " + std::to_string(*p.in_flight_seq) : "-")
        << " | " << Cell(doing.empty() ? "-" : doing) << " |\n";
    }
    o << "\n";
  }
  for (const Mismatch& m : r.hang.mismatches) {
    o << "- mismatch at seq " << m.seq << " (" << rs::HashHex(m.comm_id_hash) << "), " << m.field
      << ":";
    for (const auto& [value, who] : m.variants) o << " `" << value << "` x" << who.size();
    o << "\n";
  }
  o << "## Per rank\n\n| node | rank | collectives | on device | last | median lateness |"
       " p90 lateness | median host lateness | median duration |\n"
       "|---|---|---|---|---|---|---|---|---|\n";
  for (const ArrivalStats& s : r.per_rank) {
    o << "| " << s.node << " | " << (s.rank ? std::to_string(*s.rank) : "?") << " | "
      << s.collectives << " | " << s.device_collectives << " | " << s.last_count << " | "
      << FormatNs(s.median_lateness_ns) << " | " << FormatNs(s.p90_lateness_ns) << " | "
      << FormatNs(s.median_host_lateness_ns) << " | "
      << (s.median_duration_ns >= 0 ? FormatNs(s.median_duration_ns) : "-") << " |\n";
  }
  if (!r.timing.arrival_basis.empty()) {
    o << "\n## Timing\n\nArrivals from " << Spoken(r.timing.arrival_basis) << " ("
      << r.timing.device_collectives << " collectives on device, " << r.timing.host_collectives
      << " on host entry, " << r.timing.excluded_collectives << " left out). NCCL calls "
      << r.timing.call_semantics << ": " << r.timing.semantics_evidence << ".\n";
  }
  o << "\n## Clock\n\n| node | offset | error bound | method | evidence |\n"
       "|---|---|---|---|---|\n";
  for (const NodeClock& c : r.clock) {
    o << "| " << c.node << " | " << FormatNs(c.offset_ns) << " | " << FormatNs(c.error_bound_ns)
      << " | " << c.method << " | " << Cell(c.evidence.empty() ? "-" : c.evidence) << " |\n";
  }
  if (!r.notes.empty()) {
    o << "\n## Notes\n\n";
    for (const std::string& n : r.notes) o << "- " << n << "\n";
  }
  o << "\n## Reading this report\n\n" << ReadingGuide() << "\n";
  return o.str();
}

}  // namespace analyzer
