#include "analyzer/report_render.h"

#include <algorithm>

#include "analyzer/report_format.h"
#include "rscore/cli.h"
#include "rscore/comm_hash.h"
#include "rscore/time_arg.h"

namespace rs::analyzer {

rs::Result<ReportFormat> ParseReportFormat(const std::string& name) {
  if (name == "text") return ReportFormat::kText;
  if (name == "json") return ReportFormat::kJson;
  if (name == "markdown" || name == "md") return ReportFormat::kMarkdown;
  if (name == "html") return ReportFormat::kHtml;
  return rs::Error("--format '" + name + "' is not one of text, json, markdown, html");
}

std::string Render(const Report& r, ReportFormat f) {
  switch (f) {
    case ReportFormat::kJson:
      return RenderJson(r);
    case ReportFormat::kMarkdown:
      return RenderMarkdown(r);
    case ReportFormat::kHtml:
      return RenderHtml(r);
    case ReportFormat::kText:
      break;
  }
  return RenderText(r);
}

std::string MismatchPlace(const Mismatch& m) {
  const std::string group =
      " (" + (m.process_group.empty() ? rs::HashHex(m.comm_id_hash) : m.process_group) + ")";
  if (m.sender && m.receiver) {
    return "mismatch in transfer " + std::to_string(m.seq) + " from rank " +
           std::to_string(*m.sender) + " to rank " + std::to_string(*m.receiver) + group;
  }
  return "mismatch at seq " + std::to_string(m.seq) + group;
}

std::string HangConfidence(const HangReport& h) {
  return h.confidence ? ConfidenceName(*h.confidence) : "";
}

std::string FlightRecorderLine(const FlightRecorderSummary& fr) {
  std::string versions;
  for (const std::string& v : fr.versions) versions += (versions.empty() ? "" : ", ") + v;
  std::string line = std::to_string(fr.dumps) + " PyTorch Flight Recorder dump(s) (version " +
                     versions + ") of rank(s) " + rs::cli::RankRanges(fr.dumped_ranks);
  if (!fr.missing_ranks.empty())
    line += "; no dump for rank(s) " + rs::cli::RankRanges(fr.missing_ranks);
  if (fr.unaligned_dumps > 0) {
    line += "; " + std::to_string(fr.unaligned_dumps) + " on their host's wall clock (unaligned)";
  }
  for (const FrLateEntry& l : fr.late_entries) {
    const char* basis = l.by_duration == l.last ? "device durations: the others waited for it"
                        : l.by_duration == 0    ? "entry times"
                                                : "device durations and entry times";
    line += "; " + l.label + " entered " + std::to_string(l.last) + " of its " +
            std::to_string(l.collectives) + " collectives last, a median " +
            FormatNs(l.median_behind_ns) + " behind the others (" + basis + ")";
  }
  for (const FrTracedEntry& t : fr.late_traced) {
    line += "; " + t.label + " entered " + std::to_string(t.inherited) + " of its " +
            std::to_string(t.collectives) + " collectives last only after waiting for others (" +
            "traced to " + t.root_label + ", not named)";
  }
  if (fr.agreement == "agree") {
    line += "; their hang agrees with the recording's";
  } else if (fr.agreement == "disagree") {
    line += "; their hang DISAGREES with the recording's (both shown)";
  } else if (fr.agreement == "flight_recorder_only") {
    line += "; the hang above comes from them";
  } else if (fr.agreement == "recorder_only") {
    line += "; they show no stuck operation (the hang above is the recording's)";
  } else if (fr.hang.kind == "undetermined") {
    line += "; whether they show a hang they cannot decide (see the hang line)";
  } else {
    line += "; no stuck operation in them";
  }
  return line;
}

std::string StragglerLabel(const Straggler& s) {
  std::string rank = s.rank ? "rank " + std::to_string(*s.rank) : "";
  if (s.node.empty()) return rank.empty() ? "unknown rank" : rank;
  return rank.empty() ? s.node : s.node + " " + rank;
}

namespace {

std::string List(const std::vector<int64_t>& v) {
  std::string o;
  for (int64_t x : v) o += (o.empty() ? "" : ", ") + std::to_string(x);
  return o;
}

}  // namespace

std::string StragglerWho(const Straggler& s) {
  std::string o;
  auto add = [&](const std::string& part) { o += (o.empty() ? "" : "; ") + part; };
  if (!s.ranks.empty()) add((s.ranks.size() == 1 ? "rank " : "ranks ") + List(s.ranks));
  if (!s.pids.empty()) add((s.pids.size() == 1 ? "pid " : "pids ") + List(s.pids));
  if (s.clock_bound_ns > 0) {
    // Waits are read on each device's own clock: the alignment's bound does not enter them.
    add("clock bound +/-" + FormatNs(s.clock_bound_ns) +
        (s.arrival_basis == "device_waits"
             ? " (not in play: its lateness is on device waits, each on one device clock)"
             : ""));
  }
  return o;
}

std::string CompetitorsLine(const Straggler& s) {
  std::string o;
  for (const Competitor& c : s.competitors) {
    o += (o.empty() ? "" : ", ") + std::string("'") + (c.comm.empty() ? "?" : c.comm) + "' (pid " +
         std::to_string(c.pid) + ") ran " + FormatNs(c.ran_ns);
  }
  return o;
}

std::string RecordingSpan(const Report& r) {
  return "recording " + rs::FormatUtc(r.start_ns) + " to " + rs::FormatUtc(r.end_ns) +
         " (UTC; every +offset counts from its start)";
}

std::vector<const ArrivalStats*> NodeRows(const Report& r, size_t* left_out) {
  std::vector<const ArrivalStats*> rows;
  for (const ArrivalStats& s : r.per_node) rows.push_back(&s);
  *left_out = 0;
  if (r.node_rows == 0 || rows.size() <= r.node_rows) return rows;
  std::stable_sort(rows.begin(), rows.end(), [](const ArrivalStats* a, const ArrivalStats* b) {
    return a->median_lateness_ns > b->median_lateness_ns;
  });
  *left_out = rows.size() - r.node_rows;
  rows.resize(r.node_rows);
  return rows;
}

std::string NodeExcessText(const Report& r, const ArrivalStats& s) {
  const bool waits = r.timing.device_collectives > 0;
  const NodeExcess& p = waits ? s.paired_wait : s.paired;
  if (p.collectives == 0) return "-";
  const int64_t excess = p.excess_ns, error = p.noise_ns;
  return (excess >= 0 ? "+" : "-") + FormatNs(excess >= 0 ? excess : -excess) + " +- " +
         FormatNs(error);
}

std::vector<const GroupView*> GroupRows(const Report& r, size_t* left_out) {
  std::vector<const GroupView*> rows;
  for (const GroupView& g : r.per_group) {
    if (!g.members.empty()) rows.push_back(&g);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const GroupView* a, const GroupView* b) {
    return a->members.front().excess_ns > b->members.front().excess_ns;
  });
  *left_out = rows.size() > kGroupRows ? rows.size() - kGroupRows : 0;
  if (*left_out) rows.resize(kGroupRows);
  return rows;
}

std::string MemberLabel(const std::string& node, std::optional<int64_t> rank, int64_t pid) {
  return node + (rank ? " rank " + std::to_string(*rank) : " pid " + std::to_string(pid));
}

std::string GroupLatest(const GroupView& g) {
  const GroupMember& m = g.members.front();
  return MemberLabel(m.node, m.rank, m.pid) + ", +" + FormatNs(m.excess_ns) + " +- " +
         FormatNs(m.excess_se_ns) + ", last " + std::to_string(m.last_count) + "/" +
         std::to_string(m.collectives);
}

std::string AcrossLine(const RankAcrossGroups& a) {
  return "latest in " + std::to_string(a.latest_in) + " of its " + std::to_string(a.groups) +
         " groups, " + FormatNs(a.excess_total_ns) + " above the other members in all";
}

std::string GroupViewCaption() {
  return "Each communicator on its own: its latest member, by its own lateness (less what another "
         "group's call held it) above the median of the other members' in each collective, mean "
         "+- standard error, on device waits where every device timed the group, else on "
         "arrivals. Across groups: each rank's excess summed over the groups where it was the "
         "latest, the largest first. A view, not a verdict: in a healthy job some member of each "
         "group is a little later by the work it does (pipeline stages differ); a rank far ahead "
         "of the rest here, latest in each of its groups, is where to look";
}

std::string ReadingGuide() {
  return "Verdicts are findings that explain measured lateness (a rank or node arriving late, "
         "or collectives taking longer while data moved) or a hang; observations are findings "
         "without measured lateness, shown for completeness. Confidence says how sure the "
         "report is that a verdict names the right rank or node: high (ordering beyond the "
         "clock error bound and last far more often than chance), medium (weaker evidence or "
         "a weaker timing basis), low (a hint only), undetermined (the lateness is inside the "
         "clock error bound, or is host-bound on nodes that share one kernel's CPUs and "
         "nothing outside the job explains it). A cause's share (its score, the percentage beside "
         "it) is the part "
         "of the lost time that the cause's own numbers explain, against the other ranks (a "
         "count such as retransmits at half weight); it ranks the causes, it is no "
         "probability, and the shares need not add up to 100%.";
}

}  // namespace rs::analyzer
