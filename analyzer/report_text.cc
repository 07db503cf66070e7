#include <algorithm>
#include <sstream>
#include <vector>

#include "report_format.h"
#include "report_render.h"
#include "rscore/comm_hash.h"

namespace analyzer {
namespace {

constexpr size_t kTextRanks = 8;

void HangText(std::ostream& o, const std::string& title, const HangReport& h, int64_t start_ns) {
  o << title << ": " << (h.detected ? "DETECTED" : "none") << " — " << h.summary << "\n";
  if (h.detected) {
    o << "  confidence " << HangConfidence(h) << ", states from " << Spoken(h.basis) << "\n";
    for (const RankProgress& p : h.progress) {
      o << "  " << (p.node.empty() ? "" : p.node + " ") << "rank "
        << (p.rank ? std::to_string(*p.rank) : "?") << ": " << Spoken(p.state) << " ("
        << Spoken(p.state_basis) << "); last entered "
        << (p.last_entered_seq ? std::to_string(*p.last_entered_seq) : "-");
      if (p.last_started_seq) o << ", last started " << *p.last_started_seq;
      o << ", last completed "
        << (p.last_completed_seq ? std::to_string(*p.last_completed_seq) : "-");
      if (p.in_flight_seq) o << ", in flight " << p.in_flight_op << " seq " << *p.in_flight_seq;
      o << "\n";
      for (const Activity& a : p.doing) {
        o << "      " << DescribeActivityLine(a, start_ns) << "\n";
      }
    }
  }
  for (const Mismatch& m : h.mismatches) {
    o << "  mismatch at seq " << m.seq << " ("
      << (m.process_group.empty() ? rs::HashHex(m.comm_id_hash) : m.process_group)
      << "): " << m.field;
    for (const auto& [value, who] : m.variants) {
      o << " [" << value << ": " << who.size() << " rank(s), e.g. " << who.front() << "]";
    }
    o << "\n";
  }
}

}  // namespace

std::string RenderText(const Report& r) {
  std::ostringstream o;
  o << r.verdict << "\n\n";
  for (const std::string& w : r.warnings) o << "WARNING: " << w << "\n";
  if (!r.warnings.empty()) o << "\n";
  auto finding = [&](const Straggler& s) {
    o << StragglerLabel(s) << ": cause " << s.cause;
    if (!s.shape.empty()) o << ", " << Spoken(s.shape);
    o << ", confidence " << ConfidenceName(s.confidence) << "\n";
    o << "  " << s.summary << "\n";
    if (std::string who = StragglerWho(s); !who.empty()) o << "  who: " << who << "\n";
    if (!s.competitors.empty()) {
      o << "  competing for its CPUs: " << CompetitorsLine(s) << "\n";
    }
    size_t i = 0;
    for (const Cause& c : s.causes) {
      o << "  " << ++i << ". " << c.kind << " (" << FormatPercent(c.score) << "): " << c.summary
        << "\n";
      if (!c.remediation.empty()) o << "     -> " << c.remediation << "\n";
    }
    o << "  evidence:\n";
    for (const Evidence& e : s.evidence) o << "   - " << e.summary << "\n";
    o << "  basis" << (s.arrival_basis.empty() ? "" : " (arrival: " + Spoken(s.arrival_basis) + ")")
      << ": " << s.basis << "\n\n";
  };
  for (const Straggler& s : r.stragglers) finding(s);
  if (!r.observations.empty()) {
    o << "observations (no measured lateness behind them; not verdicts):\n\n";
    for (const Straggler& s : r.observations) finding(s);
  }
  HangText(o, "hang", r.hang, r.start_ns);
  if (const auto& fr = r.flight_recorder) {
    o << "flight recorder: " << FlightRecorderLine(*fr) << "\n";
    // Shown beside the recorder's where both found a hang (its own section otherwise is r.hang).
    if (fr->agreement == "agree" || fr->agreement == "disagree") {
      HangText(o, "  flight recorder hang", fr->hang, r.start_ns);
    }
  }
  o << "\n"
    << r.nodes.size() << " node(s), " << r.ranks << " rank(s), " << r.collectives
    << " matched collectives (" << r.nccl_calls << " calls), input " << r.input << " (" << r.db_kind
    << ")\n"
    << RecordingSpan(r) << "\n";
  auto line = [&](const ArrivalStats& s, const std::string& who) {
    o << "  " << who << ": " << FormatNs(s.median_lateness_ns) << " / "
      << FormatNs(s.p90_lateness_ns) << ", last " << s.last_count << "/" << s.collectives << ", "
      << (s.median_duration_ns >= 0 ? FormatNs(s.median_duration_ns) : "-") << "\n";
  };
  if (!r.per_node.empty()) {
    size_t left_out = 0;
    std::vector<const ArrivalStats*> rows = NodeRows(r, &left_out);
    o << "\nper node" << (left_out ? ", the latest " + std::to_string(rows.size()) : std::string())
      << ": median / p90 lateness, times last, median duration\n";
    for (const ArrivalStats* s : rows) line(*s, s->node);
    if (left_out) {
      o << "  ... " << left_out << " more node(s): --all-nodes lists them (JSON has all)\n";
    }
  }
  if (!r.per_rank.empty()) {
    // The latest ranks only: the terminal report stays short (all ranks: --format json).
    std::vector<ArrivalStats> ranks = r.per_rank;
    std::stable_sort(ranks.begin(), ranks.end(), [](const ArrivalStats& a, const ArrivalStats& b) {
      return a.median_lateness_ns > b.median_lateness_ns;
    });
    size_t shown = std::min<size_t>(ranks.size(), kTextRanks);
    o << "\nlatest " << shown << " of " << ranks.size() << " ranks: median / p90 lateness, "
      << "times last, median duration\n";
    for (size_t i = 0; i < shown; ++i) {
      const ArrivalStats& s = ranks[i];
      line(s, s.node + " " +
                  (s.rank ? "rank " + std::to_string(*s.rank)
                          : "pid " + std::to_string(s.pid.value_or(0))));
    }
  }
  if (!r.timing.arrival_basis.empty()) {
    o << "\ntiming: arrivals from " << Spoken(r.timing.arrival_basis) << " ("
      << r.timing.device_collectives << " collectives on device, " << r.timing.host_collectives
      << " on host entry, " << r.timing.excluded_collectives << " left out); NCCL calls "
      << r.timing.call_semantics << ": " << r.timing.semantics_evidence << "\n";
  }
  o << "\nclock (offset applied, error bound, method, evidence):\n";
  for (const NodeClock& c : r.clock) {
    o << "  " << c.node << ": " << FormatNs(c.offset_ns) << ", +/-" << FormatNs(c.error_bound_ns)
      << ", " << c.method;
    if (!c.evidence.empty()) o << ", " << c.evidence;
    o << "\n";
  }
  if (!r.notes.empty()) {
    o << "\nnotes:\n";
    for (const std::string& n : r.notes) o << "  - " << n << "\n";
  }
  o << "\nreading this report: " << ReadingGuide() << "\n";
  return o.str();
}

}  // namespace analyzer
