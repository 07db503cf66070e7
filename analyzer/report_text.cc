#include <algorithm>
#include <sstream>
#include <vector>

#include "analyzer/collectives.h"
#include "analyzer/report_format.h"
#include "analyzer/report_render.h"
#include "rscore/comm_hash.h"
#include "rscore/text_escape.h"

namespace rs::analyzer {
namespace {

constexpr size_t kTextRanks = 8;

// Every string of the report is shown through this: names and values from the inputs (a
// process group named "0\nSTRAGGLER: node7 ...", a process name with terminal escapes) keep
// to their line and show what they hold (rscore/text_escape.h).
std::string T(const std::string& s) { return rs::EscapeText(s); }

// The per-group and cross-group views (jobs with several communicators per rank).
void GroupViewText(std::ostream& o, const Report& r) {
  size_t left_out = 0;
  std::vector<const GroupView*> rows = GroupRows(r, &left_out);
  if (rows.empty()) return;
  o << "\nper group: latest member, its own lateness above the others' (mean +- error), times "
       "last; basis, median duration\n";
  for (const GroupView* g : rows) {
    o << "  " << T(g->label) << ": " << T(GroupLatest(*g)) << "; " << T(Spoken(g->basis)) << ", "
      << (g->median_duration_ns >= 0 ? FormatNs(g->median_duration_ns) : "-") << "\n";
  }
  if (left_out) o << "  ... " << left_out << " more group(s) in the JSON report (per_group)\n";
  o << "across groups (the largest first):\n";
  for (size_t i = 0; i < std::min<size_t>(r.across_groups.size(), kTextRanks); ++i) {
    const RankAcrossGroups& a = r.across_groups[i];
    o << "  " << T(MemberLabel(a.node, a.rank, a.pid)) << ": " << T(AcrossLine(a)) << "\n";
  }
  o << "  (" << T(GroupViewCaption()) << ")\n";
}

void HangText(std::ostream& o, const std::string& title, const HangReport& h, int64_t start_ns) {
  o << title << ": "
    << (h.detected                 ? "DETECTED"
        : h.kind == "undetermined" ? "UNDETERMINED"
                                   : "none")
    << " — " << T(h.summary) << "\n";
  if (h.detected) {
    o << "  confidence " << HangConfidence(h) << ", states from " << T(Spoken(h.basis));
    if (h.stuck_for_ns > 0) o << ", stuck for at least " << FormatNs(h.stuck_for_ns);
    o << "\n";
    for (const std::string& c : h.chains) o << "  chain: " << T(c) << "\n";
    for (const HangCulprit& c : h.culprits) {
      o << "  culprit (" << T(Spoken(c.kind)) << "): " << T(c.evidence) << "\n";
    }
    for (const RankProgress& p : h.progress) {
      o << "  " << (p.node.empty() ? "" : T(p.node) + " ") << "rank "
        << (p.rank ? std::to_string(*p.rank) : "?") << ": " << T(Spoken(p.state)) << " ("
        << T(Spoken(p.state_basis)) << "); last entered "
        << (p.last_entered_seq ? std::to_string(*p.last_entered_seq) : "-");
      if (p.last_started_seq) o << ", last started " << *p.last_started_seq;
      o << ", last completed "
        << (p.last_completed_seq ? std::to_string(*p.last_completed_seq) : "-");
      if (p.in_flight_seq)
        o << ", in flight " << T(p.in_flight_op) << " " << SeqWords(*p.in_flight_seq);
      o << "\n";
      for (const Activity& a : p.doing) {
        o << "      " << T(DescribeActivityLine(a, start_ns)) << "\n";
      }
    }
  }
  for (const Mismatch& m : h.mismatches) {
    o << "  " << T(MismatchPlace(m)) << ": " << T(m.field);
    for (const auto& [value, who] : m.variants) {
      o << " [" << T(value) << ": " << who.size() << " rank(s), e.g. " << T(who.front()) << "]";
    }
    o << "\n";
  }
}

}  // namespace

std::string RenderText(const Report& r) {
  std::ostringstream o;
  o << T(r.verdict) << "\n\n";
  for (const std::string& w : r.warnings) o << "WARNING: " << T(w) << "\n";
  if (!r.warnings.empty()) o << "\n";
  auto finding = [&](const Straggler& s) {
    o << T(StragglerLabel(s)) << ": cause " << T(s.cause);
    if (!s.shape.empty()) o << ", " << T(ShapeSpoken(s.shape));
    o << ", confidence " << ConfidenceName(s.confidence) << "\n";
    o << "  " << T(s.summary) << "\n";
    if (std::string who = StragglerWho(s); !who.empty()) o << "  who: " << T(who) << "\n";
    if (!s.competitors.empty()) {
      o << "  competing for its CPUs: " << T(CompetitorsLine(s)) << "\n";
    }
    size_t i = 0;
    for (const Cause& c : s.causes) {
      o << "  " << ++i << ". " << T(c.kind) << " (" << FormatPercent(c.score)
        << "): " << T(c.summary) << "\n";
      if (!c.remediation.empty()) o << "     -> " << T(c.remediation) << "\n";
    }
    o << "  evidence:\n";
    for (const Evidence& e : s.evidence) o << "   - " << T(e.summary) << "\n";
    o << "  basis"
      << (s.arrival_basis.empty() ? "" : " (arrival: " + T(Spoken(s.arrival_basis)) + ")") << ": "
      << T(s.basis) << "\n\n";
  };
  for (const Straggler& s : r.stragglers) finding(s);
  if (!r.observations.empty()) {
    o << "observations (no measured lateness behind them; not verdicts):\n\n";
    for (const Straggler& s : r.observations) finding(s);
  }
  HangText(o, "hang", r.hang, r.start_ns);
  if (const auto& fr = r.flight_recorder) {
    o << "flight recorder: " << T(FlightRecorderLine(*fr)) << "\n";
    // Shown beside the recorder's where both found a hang (its own section otherwise is r.hang).
    if (fr->agreement == "agree" || fr->agreement == "disagree") {
      HangText(o, "  flight recorder hang", fr->hang, r.start_ns);
    }
  }
  o << "\n"
    << r.nodes.size() << " node(s), " << r.ranks << " rank(s), " << r.collectives
    << " matched collectives (" << r.nccl_calls << " calls), input " << T(r.input) << " ("
    << T(r.db_kind) << ")\n"
    << RecordingSpan(r) << "\n";
  auto line = [&](const ArrivalStats& s, const std::string& who, const std::string& more = "") {
    o << "  " << T(who) << ": " << FormatNs(s.median_lateness_ns) << " / "
      << FormatNs(s.p90_lateness_ns) << ", last " << s.last_count << "/" << s.collectives << ", "
      << (s.median_duration_ns >= 0 ? FormatNs(s.median_duration_ns) : "-") << more << "\n";
  };
  if (!r.per_node.empty()) {
    size_t left_out = 0;
    std::vector<const ArrivalStats*> rows = NodeRows(r, &left_out);
    o << "\nper node" << (left_out ? ", the latest " + std::to_string(rows.size()) : std::string())
      << ": median / p90 lateness, times last, median duration; against the other nodes in the "
         "same collectives (mean +- error)\n";
    for (const ArrivalStats* s : rows) line(*s, s->node, "; " + NodeExcessText(r, *s));
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
  GroupViewText(o, r);
  if (!r.timing.arrival_basis.empty()) {
    o << "\ntiming: arrivals from " << T(Spoken(r.timing.arrival_basis)) << " ("
      << r.timing.device_collectives << " collectives on device, " << r.timing.host_collectives
      << " on host entry, " << r.timing.excluded_collectives << " left out); NCCL calls "
      << T(r.timing.call_semantics) << ": " << T(r.timing.semantics_evidence) << "\n";
    if (r.timing.call_semantics == "mixed") {
      for (const Timing::CallMode& m : r.timing.call_modes) {
        o << "  communicator " << T(m.comm) << ": " << T(m.mode) << ": " << T(m.evidence) << "\n";
      }
    }
  }
  o << "\nclock (offset applied, error bound, method, evidence):\n";
  for (const NodeClock& c : r.clock) {
    o << "  " << T(c.node) << ": " << FormatNs(c.offset_ns) << ", +/-" << FormatNs(c.error_bound_ns)
      << ", " << T(c.method);
    if (!c.evidence.empty()) o << ", " << T(c.evidence);
    o << "\n";
  }
  if (!r.notes.empty()) {
    o << "\nnotes:\n";
    for (const std::string& n : r.notes) o << "  - " << T(n) << "\n";
  }
  o << "\nreading this report: " << ReadingGuide() << "\n";
  return o.str();
}

}  // namespace rs::analyzer
