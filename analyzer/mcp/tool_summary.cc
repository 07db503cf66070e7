// summary: what the recording holds: nodes and ranks, its time span, how well each node's
// clock is aligned, what was recorded and what was dropped.
#include <algorithm>
#include <map>
#include <set>

#include "analyzer/mcp/output_schema.h"
#include "analyzer/mcp/tool_bounds.h"
#include "analyzer/mcp/tools.h"
#include "analyzer/report_format.h"
#include "rscore/cli.h"
#include "rscore/schema.h"
#include "rscore/time_arg.h"

namespace rs::analyzer::mcp {
namespace {

constexpr size_t kMaxNodes = 64;
constexpr size_t kMaxNotes = 20;

Json OutputSchema() {
  using namespace schema;
  Json clock = OrNull(Object(
      {{"method", String("reference | rendezvous | wall_clock | as_recorded")},
       {"offset_ns", Integer("the node's lead over the reference clock (already applied)")},
       {"error_bound_ns", Integer("|aligned - true| is at most this")},
       {"rendezvous_count", Integer()},
       {"evidence", String("what the alignment rests on, e.g. 'device 120, comm_init 1'")}}));
  Json source = Object({{"source", String("tcp, sched, block, process, nccl, cuda, gpu")},
                        {"method", OrNull(String("how it attached ('off': not recorded)"))},
                        {"events", Integer()},
                        {"drops", Integer("events lost (counts from it are lower bounds)")},
                        {"note", OrNull(String())}});
  Json node = Object({{"node", String()},
                      {"ranks", ArrayOf(Integer(), "ranks that called collectives there")},
                      {"processes", Integer("processes that called collectives")},
                      {"clock", clock},
                      {"sources", ArrayOf(source)},
                      {"dropped_events", Integer()}});
  return Result({{"input", String()},
                 {"db_kind", Enum({"bundle", "merged"})},
                 {"start_ns", Integer("the recording's start, ns since the epoch (UTC)")},
                 {"end_ns", Integer()},
                 {"start_utc", String("ISO 8601 UTC; every +offset counts from it")},
                 {"end_utc", String()},
                 {"duration_s", Number()},
                 {"verdict", String("the report's verdict line")},
                 {"node_count", Integer()},
                 {"ranks", Integer()},
                 {"collectives", Integer("collectives matched across two or more ranks")},
                 {"nccl_calls", Integer()},
                 {"nodes", ArrayOf(node, "in natural order")},
                 {"tables", ArrayOf(Object({{"table", String()}, {"rows", Integer()}}),
                                    "event tables and their rows")},
                 {"dropped_events", Integer("events lost by every node's sources together")},
                 {"warnings", ArrayOf(String(), "what can make the conclusions wrong")},
                 {"notes", ArrayOf(String(), "data gaps the reader should know about")}});
}

std::string ClockLine(const NodeClock& c) {
  if (c.method == "reference" || c.method == "as_recorded") return c.node + " " + c.method;
  return c.node + " " + c.method + " +/-" + FormatNs(c.error_bound_ns);
}

rs::Result<ToolOutput> Run(Recording& rec, const Args&, const ToolContext&) {
  rec.BeginCall(kAnalysisTimeLimitNs);
  ASSIGN_OR_RETURN(const Report* r, rec.GetReport());
  ASSIGN_OR_RETURN(const std::vector<std::string>* all_nodes, rec.Nodes());
  rs::Db& db = rec.db();  // the same limit: the tables' rows are counted too

  std::map<std::string, Json> sources;  // node -> [source]
  std::map<std::string, int64_t> drops;
  int64_t dropped = 0;
  ASSIGN_OR_RETURN(rs::Statement st, db.Prepare("SELECT node, source, method, events, drops, note"
                                                " FROM sources ORDER BY node, source"));
  for (;;) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    Json s = {{"source", st.Text(1)},
              {"method", st.IsNull(2) ? Json() : Json(st.Text(2))},
              {"events", st.Int(3)},
              {"drops", st.Int(4)},
              {"note", st.IsNull(5) ? Json() : Json(st.Text(5))}};
    sources[st.Text(0)].push_back(std::move(s));
    drops[st.Text(0)] += st.Int(4);
    dropped += st.Int(4);
  }
  std::map<std::string, std::set<int64_t>> ranks;
  std::map<std::string, int64_t> processes;
  for (const ArrivalStats& s : r->per_rank) {
    if (s.rank) ranks[s.node].insert(*s.rank);
    ++processes[s.node];
  }

  Json out = Json::object();
  out["input"] = r->input;
  out["db_kind"] = r->db_kind;
  out["start_ns"] = r->start_ns;
  out["end_ns"] = r->end_ns;
  out["start_utc"] = rs::FormatUtc(r->start_ns);
  out["end_utc"] = rs::FormatUtc(r->end_ns);
  out["duration_s"] = static_cast<double>(r->end_ns - r->start_ns) * 1e-9;
  out["verdict"] = r->verdict;
  out["node_count"] = all_nodes->size();
  out["ranks"] = r->ranks;
  out["collectives"] = r->collectives;
  out["nccl_calls"] = r->nccl_calls;
  out["nodes"] = Json::array();
  out["truncated"] = false;
  for (const std::string& n : *all_nodes) {
    if (out["nodes"].size() == kMaxNodes) {
      MarkTruncated(out, std::to_string(kMaxNodes) + " of " + std::to_string(all_nodes->size()) +
                             " nodes listed; for another node call node_timeline(node) or "
                             "query(\"SELECT * FROM sources WHERE node = 'NAME'\")");
      break;
    }
    Json clock = nullptr;
    for (const NodeClock& c : r->clock) {
      if (c.node != n) continue;
      clock = {{"method", c.method},
               {"offset_ns", c.offset_ns},
               {"error_bound_ns", c.error_bound_ns},
               {"rendezvous_count", c.rendezvous_count},
               {"evidence", c.evidence}};
    }
    const auto& node_ranks = ranks[n];
    out["nodes"].push_back({{"node", n},
                            {"ranks", std::vector<int64_t>(node_ranks.begin(), node_ranks.end())},
                            {"processes", processes[n]},
                            {"clock", clock},
                            {"sources", sources.count(n) ? sources[n] : Json::array()},
                            {"dropped_events", drops[n]}});
  }
  out["tables"] = Json::array();
  for (std::string_view t : rs::kEventTables) {
    ASSIGN_OR_RETURN(bool present, rs::HasTable(db, t));
    if (!present) continue;
    ASSIGN_OR_RETURN(int64_t rows, db.QueryInt("SELECT COUNT(*) FROM " + std::string(t)));
    out["tables"].push_back({{"table", std::string(t)}, {"rows", rows}});
  }
  out["dropped_events"] = dropped;
  out["warnings"] = Json::array();
  for (const std::string& w : r->warnings) out["warnings"].push_back(w);
  out["notes"] = Json::array();
  for (const std::string& n : r->notes) {
    if (out["notes"].size() == kMaxNotes) {
      MarkTruncated(out, "more notes in the text report (resource rankscope://report)");
      break;
    }
    out["notes"].push_back(n);
  }

  std::string text = r->input + ": " + r->db_kind + ", " + std::to_string(all_nodes->size()) +
                     " nodes, " + std::to_string(r->ranks) + " ranks, " +
                     std::to_string(r->collectives) + " matched collectives, " +
                     rs::FormatUtc(r->start_ns) + " to " + rs::FormatUtc(r->end_ns) + " (" +
                     FormatNs(r->end_ns - r->start_ns) + ")\n" + r->verdict + "\n";
  std::string clocks;
  for (const NodeClock& c : r->clock) {
    if (clocks.size() > 300) {
      clocks += ", ...";
      break;
    }
    clocks += (clocks.empty() ? "" : ", ") + ClockLine(c);
  }
  if (!clocks.empty()) text += "clocks: " + clocks + "\n";
  text += "dropped events: " + std::to_string(dropped);
  for (const std::string& w : r->warnings) text += "\nWARNING: " + w;
  return ToolOutput{std::move(out), std::move(text)};
}

}  // namespace

Tool SummaryTool() {
  Tool t;
  t.name = "summary";
  t.title = "Recording summary";
  t.description =
      "What the recording holds: nodes and their ranks, its time span (UTC and ns; every "
      "+offset of the other tools counts from its start), how well each node's clock is "
      "aligned (method and error bound), what each node recorded and dropped, and the "
      "report's verdict. Call this first.";
  t.output_schema = OutputSchema();
  t.run = Run;
  return t;
}

}  // namespace rs::analyzer::mcp
