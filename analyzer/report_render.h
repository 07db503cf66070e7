// Renderers of a Report: text for the terminal (verdict first, evidence after), JSON with
// stable keys for scripts, Markdown, and one self-contained HTML file with inline SVG plots.
#pragma once

#include <string>

#include "analyzer/report_model.h"
#include "rscore/result.h"

namespace rs::analyzer {

enum class ReportFormat { kText, kJson, kMarkdown, kHtml };

rs::Result<ReportFormat> ParseReportFormat(const std::string& name);

std::string RenderText(const Report& r);
std::string RenderJson(const Report& r);
std::string RenderMarkdown(const Report& r);
std::string RenderHtml(const Report& r);
std::string Render(const Report& r, ReportFormat f);

// "mismatch at seq 97 (process group 14 (ep))" or, for a send and its receive, "mismatch in
// transfer 13 from rank 2 to rank 6 (process group 11 (pp))": a mismatch's place in every format.
std::string MismatchPlace(const Mismatch& m);
// The hang's confidence as named in every format; "" without a hang.
std::string HangConfidence(const HangReport& h);
// "8 dumps (version 2.10) of ranks 0-7; no dump for rank 3; ...": what the Flight Recorder
// dumps are and how their hang compares with the recording's.
std::string FlightRecorderLine(const FlightRecorderSummary& fr);
// "node1 rank 3", "node1" (node-level), or "rank 3".
std::string StragglerLabel(const Straggler& s);
// "ranks 2, 3; pids 10100, 10101; clock bound +/-4.34 ms" ("" where nothing is known).
std::string StragglerWho(const Straggler& s);
// "'burner' (pid 31337) ran 120 ms, ..." while the finding's ranks waited for a CPU ("" none).
std::string CompetitorsLine(const Straggler& s);
// What verdicts, observations, confidence and a cause's share mean: said once per report.
std::string ReadingGuide();
// "recording 2026-11-25T11:49:28.362958180Z to ...Z (UTC; every +offset counts from its
// start)": the one time base of the report, the plots and the other tools.
std::string RecordingSpan(const Report& r);
// The per-node table's rows (Report::node_rows): the latest nodes first when cut, else every
// node in natural order; `left_out` gets how many were cut.
std::vector<const ArrivalStats*> NodeRows(const Report& r, size_t* left_out);

// A node's lateness against the other nodes' in the same collectives, as the CPU and disk
// findings weigh it (device waits where the recording has device arrivals): "+4.54 ms +- 1.2 ms"
// ("-" where never paired).
std::string NodeExcessText(const Report& r, const ArrivalStats& s);

// The per-group view (Report::per_group, jobs with several communicators per rank): the groups
// whose latest member is latest by most first, at most kGroupRows; `left_out` gets the rest.
inline constexpr size_t kGroupRows = 10;
std::vector<const GroupView*> GroupRows(const Report& r, size_t* left_out);
// "node1 rank 2, +1.24 ms +- 119 us, last 210/288": its latest member.
std::string GroupLatest(const GroupView& g);
// "latest in 2 of its 2 groups, 363 ms above the other members in all"
std::string AcrossLine(const RankAcrossGroups& a);
// What the two views show, said once above them in every format.
std::string GroupViewCaption();
// "node1 rank 2" ("node1 pid 4242" where its rank is unknown).
std::string MemberLabel(const std::string& node, std::optional<int64_t> rank, int64_t pid);

}  // namespace rs::analyzer
