// find_stragglers and hang_report: the report's findings, from the same BuildReport and
// RenderJson as `rankscope-analyze report --format json`, so that the verdict is the same.
#include <algorithm>
#include <map>
#include <tuple>

#include "analyzer/mcp/output_schema.h"
#include "analyzer/mcp/tool_bounds.h"
#include "analyzer/mcp/tools.h"
#include "analyzer/report_render.h"
#include "rscore/comm_hash.h"

namespace rs::analyzer::mcp {
namespace {

constexpr size_t kMaxFindings = 10;
constexpr size_t kLatestRanks = 8;
constexpr size_t kMaxProgress = 32;
constexpr size_t kMaxMismatches = 20;
constexpr size_t kMaxCommunicators = 16;
constexpr size_t kMaxLagging = 8;

// The first `max` entries of `list` (an array); the result is marked when some are left out.
Json Bounded(const Json& list, size_t max, Json& out, const std::string& hint) {
  Json kept = Json::array();
  for (const Json& x : list) {
    if (kept.size() == max) {
      MarkTruncated(out, hint);
      break;
    }
    kept.push_back(x);
  }
  return kept;
}

std::string FindingLine(const Json& f) {
  std::string who = f["node"].get<std::string>();
  if (f["rank"].is_number()) who += " rank " + std::to_string(f["rank"].get<int64_t>());
  return who + ": " + f["cause"].get<std::string>() + " (" + f["confidence"].get<std::string>() +
         ") " + CutString(f["summary"].get<std::string>(), 300);
}

// ---- find_stragglers ----

Json StragglersSchema() {
  using namespace schema;
  return Result(
      {{"verdict", String("the report's first line")},
       {"stragglers", ArrayOf(Finding(),
                              "verdicts: findings that explain measured lateness or a hang, best "
                              "first (report --format json's 'stragglers')")},
       {"observations",
        ArrayOf(Finding(), "findings without measured lateness, never in the verdict")},
       {"warnings", ArrayOf(String())},
       {"latest_ranks", ArrayOf(RankStats(), "the ranks with the largest median lateness")}});
}

rs::Result<ToolOutput> RunStragglers(Recording& rec, const Args&, const ToolContext&) {
  rec.BeginCall(kAnalysisTimeLimitNs);
  ASSIGN_OR_RETURN(const Json* report, rec.ReportJson());
  const std::string hint =
      "the report lists more: read the resource rankscope://report, or run rankscope-analyze "
      "report --format json on the recording";
  Json out = Json::object();
  out["verdict"] = report->at("verdict");
  out["truncated"] = false;
  out["stragglers"] = Bounded(report->at("stragglers"), kMaxFindings, out, hint);
  out["observations"] = Bounded(report->at("observations"), kMaxFindings, out, hint);
  // The collectives a finding arrived last in are for the trace (rankscope-export --report);
  // slowest_collectives and explain_collective answer that here, their count stays.
  for (const char* list : {"stragglers", "observations"}) {
    for (Json& f : out[list]) f.erase("late_arrivals");
  }
  out["warnings"] = report->at("warnings");
  std::vector<Json> ranks(report->at("per_rank").begin(), report->at("per_rank").end());
  std::stable_sort(ranks.begin(), ranks.end(), [](const Json& a, const Json& b) {
    return a["median_lateness_ns"].get<int64_t>() > b["median_lateness_ns"].get<int64_t>();
  });
  if (ranks.size() > kLatestRanks) ranks.resize(kLatestRanks);
  out["latest_ranks"] = ranks;

  std::string text = out["verdict"].get<std::string>();
  for (const Json& f : out["stragglers"]) text += "\n- " + FindingLine(f);
  if (!out["observations"].empty()) {
    text += "\nobservations (not in the verdict):";
    for (const Json& f : out["observations"]) text += "\n- " + FindingLine(f);
  }
  return ToolOutput{std::move(out), std::move(text)};
}

// ---- hang_report ----

// Per communicator, how far its members agree: the last sequence every member completed and
// the furthest one any member entered; members behind that are lagging.
struct CommProgress {
  uint64_t comm = 0;
  std::map<int32_t, std::pair<int64_t, int64_t>> members;  // participant -> (entered, completed)
  int64_t nranks = 0, first_seq = INT64_MAX, frontier = -1;
  std::string frontier_op;
};

Json Communicators(const CollectiveData& data, const HangReport& hang, Json& out) {
  std::map<uint64_t, CommProgress> comms;
  for (const NcclCall& c : data.calls) {
    CommProgress& p = comms[c.comm];
    p.comm = c.comm;
    auto [it, added] = p.members.try_emplace(c.participant, -1, -1);
    it->second.first = std::max(it->second.first, c.seq);
    // Completed: its device finished it, or a call that blocks until done returned. An enqueue
    // whose device was not seen has no completion to count.
    const bool completed = c.device ? c.device->end_ns.has_value() : (!c.enqueue && !c.in_flight());
    if (completed) it->second.second = std::max(it->second.second, c.seq);
    p.nranks = std::max(p.nranks, c.nranks.value_or(0));
    p.first_seq = std::min(p.first_seq, c.seq);
    if (c.seq > p.frontier) {
      p.frontier = c.seq;
      p.frontier_op = c.op;
    }
  }
  std::vector<std::tuple<bool, size_t, size_t, Json>> rows;  // stuck, lagging, members, row
  for (const auto& [comm, p] : comms) {
    int64_t agreed = INT64_MAX;
    Json lagging = Json::array();
    size_t lagging_count = 0;
    for (const auto& [participant, seqs] : p.members) {
      agreed = std::min(agreed, seqs.second);
      if (seqs.first >= p.frontier) continue;
      if (lagging.size() < kMaxLagging) lagging.push_back(data.participants[participant].Label());
      ++lagging_count;
    }
    const bool stuck = hang.detected && hang.comm_id_hash == comm;
    const int64_t members = static_cast<int64_t>(p.members.size());
    Json row = {{"comm_id_hash", static_cast<int64_t>(comm)},
                {"comm_id_hex", rs::HashHex(comm)},
                {"members", members},
                {"unseen_ranks", std::max<int64_t>(0, p.nranks - members)},
                {"first_seq", p.first_seq},
                {"all_completed_through", agreed >= 0 ? Json(agreed) : Json()},
                {"frontier_seq", p.frontier},
                {"frontier_op", p.frontier_op},
                {"lagging", std::move(lagging)},
                {"lagging_count", lagging_count},
                {"stuck", stuck}};
    rows.emplace_back(stuck, lagging_count, p.members.size(), std::move(row));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(a), std::get<1>(a), std::get<2>(a)) >
           std::tie(std::get<0>(b), std::get<1>(b), std::get<2>(b));
  });
  Json list = Json::array();
  for (auto& row : rows) {
    if (list.size() == kMaxCommunicators) {
      MarkTruncated(out, std::to_string(rows.size()) +
                             " communicators in all; explain_collective(comm, seq) or "
                             "query(\"SELECT ... FROM nccl_events_v WHERE comm_id_hex = '0x...'\") "
                             "for another");
      break;
    }
    list.push_back(std::move(std::get<3>(row)));
  }
  return list;
}

Json HangSchema() {
  using namespace schema;
  Json comm =
      Object({{"comm_id_hash", Integer("as stored (signed 64-bit)")},
              {"comm_id_hex", String("as the report prints it; explain_collective takes it")},
              {"members", Integer("processes seen calling its collectives")},
              {"unseen_ranks", Integer("ranks of nranks no recording saw")},
              {"first_seq", Integer()},
              {"all_completed_through",
               OrNull(Integer("the last sequence every member completed (device end, or a blocking "
                              "call's return); null: some member's completion was never seen"))},
              {"frontier_seq", Integer("the furthest sequence any member entered")},
              {"frontier_op", String()},
              {"lagging", ArrayOf(String(), "members that never entered frontier_seq (at most 8)")},
              {"lagging_count", Integer()},
              {"stuck", Boolean("the hang's communicator")}});
  // The hang analysis of the Flight Recorder dumps, where some were merged (null otherwise);
  // hang.basis is 'flight_recorder' where the verdict comes from them.
  Json flight_recorder = Object(
      {{"dumps", Integer("PyTorch Flight Recorder dumps merged into the recording")},
       {"dumped_ranks", ArrayOf(Integer())},
       {"missing_ranks", ArrayOf(Integer(), "process group members without a dump")},
       {"versions", ArrayOf(String())},
       {"unaligned_dumps", Integer("dumps on their host's wall clock (no recording of the rank)")},
       {"agreement", String("agree | disagree | flight_recorder_only | recorder_only | no_hang")},
       {"hang", Hang()}});
  return Result({{"detected", Boolean("a hang was found")},
                 {"summary", String()},
                 {"hang", Hang()},
                 {"flight_recorder", OrNull(flight_recorder)},
                 {"progress_total", Integer("ranks in hang.progress before it was cut")},
                 {"communicators", ArrayOf(comm,
                                           "consensus per communicator: the stuck one "
                                           "first, then those with lagging members")}});
}

rs::Result<ToolOutput> RunHang(Recording& rec, const Args&, const ToolContext&) {
  rec.BeginCall(kAnalysisTimeLimitNs);
  ASSIGN_OR_RETURN(const Report* report, rec.GetReport());
  ASSIGN_OR_RETURN(const Json* json, rec.ReportJson());
  ASSIGN_OR_RETURN(const CollectiveData* data, rec.Collectives());
  const HangReport& h = report->hang;
  Json out = Json::object();
  out["detected"] = h.detected;
  out["summary"] = h.summary.empty() ? std::string("no hang found") : h.summary;
  out["truncated"] = false;
  Json hang = json->at("hang");
  // The report's order; where it must be cut, the culprits stay and the others fill the rest.
  const Json& all = hang["progress"];
  std::vector<bool> keep(all.size(), false);
  size_t kept = 0;
  for (size_t i = 0; i < all.size() && kept < kMaxProgress; ++i) {
    const Json& p = all[i];
    const std::string node = p["node"].get<std::string>();
    const std::string label =
        (node.empty() ? "" : node + " ") + (p["rank"].is_number()
                                                ? "rank " + std::to_string(p["rank"].get<int64_t>())
                                                : "pid " + std::to_string(p["pid"].get<int64_t>()));
    if (std::find(h.culprit_labels.begin(), h.culprit_labels.end(), label) !=
        h.culprit_labels.end()) {
      keep[i] = true;
      ++kept;
    }
  }
  for (size_t i = 0; i < all.size() && kept < kMaxProgress; ++i) {
    if (!keep[i]) {
      keep[i] = true;
      ++kept;
    }
  }
  Json progress = Json::array();
  for (size_t i = 0; i < all.size(); ++i) {
    if (keep[i]) progress.push_back(all[i]);
  }
  out["progress_total"] = all.size();
  if (progress.size() < all.size()) {
    MarkTruncated(out, "the stuck communicator has " + std::to_string(all.size()) + " ranks, " +
                           std::to_string(kMaxProgress) +
                           " shown (the culprits among them): query(\"SELECT node, rank, "
                           "MAX(seq) FROM nccl_events_v WHERE comm_id_hex = '" +
                           hang["comm_id_hex"].get<std::string>() + "' GROUP BY node, pid\")");
  }
  hang["progress"] = std::move(progress);
  hang["mismatches"] = Bounded(hang["mismatches"], kMaxMismatches, out,
                               "more mismatches: read the resource rankscope://report");
  out["hang"] = std::move(hang);
  out["communicators"] = Communicators(*data, h, out);
  out["flight_recorder"] =
      json->contains("flight_recorder") ? json->at("flight_recorder") : Json(nullptr);
  if (out["flight_recorder"].is_object()) {
    Json& fr_hang = out["flight_recorder"]["hang"];
    fr_hang["progress"] = Bounded(fr_hang["progress"], kMaxProgress, out,
                                  "more ranks: query(\"SELECT rank, state, seq, op FROM fr_entries "
                                  "ORDER BY rank, seq\")");
    fr_hang["mismatches"] = Bounded(fr_hang["mismatches"], kMaxMismatches, out,
                                    "more mismatches: read the resource rankscope://report");
  }

  std::string text = out["summary"].get<std::string>();
  if (h.detected) {
    std::string culprits;
    for (const auto& l : h.culprit_labels) culprits += (culprits.empty() ? "" : ", ") + l;
    text += "\nstuck: " + out["hang"]["comm_id_hex"].get<std::string>() + " seq " +
            std::to_string(h.seq) + " (" + h.op + "); culprit(s): " + culprits;
  }
  if (!h.mismatches.empty()) {
    text += "\n" + std::to_string(h.mismatches.size()) + " mismatch(es) of op/count/datatype/root";
  }
  if (report->flight_recorder) {
    text += "\nflight recorder: " + rs::analyzer::FlightRecorderLine(*report->flight_recorder);
  }
  return ToolOutput{std::move(out), std::move(text)};
}

}  // namespace

Tool FindStragglersTool() {
  Tool t;
  t.name = "find_stragglers";
  t.title = "Stragglers and their causes";
  t.description =
      "The report's verdicts: which node or rank held the job back, the shape (host-bound, "
      "device-bound, network, hang), the ranked causes (network, cpu_contention, io, compute, "
      "hang) with evidence and remediation, and the confidence with its clock error bound; "
      "also observations that slowed nothing measured. The same analysis as "
      "`rankscope-analyze report --format json`.";
  t.output_schema = StragglersSchema();
  t.run = RunStragglers;
  return t;
}

Tool HangReportTool() {
  Tool t;
  t.name = "hang_report";
  t.title = "Hang analysis";
  t.description =
      "Whether the job hung: the stuck collective (communicator and sequence), the culprit "
      "ranks that never entered or completed it, every rank's state there and what the "
      "culprits were doing at the end, op/count/datatype mismatches, and per communicator the "
      "sequence all members completed and the members lagging behind.";
  t.output_schema = HangSchema();
  t.run = RunHang;
  return t;
}

}  // namespace rs::analyzer::mcp
