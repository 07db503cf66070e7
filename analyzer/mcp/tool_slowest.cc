// slowest_collectives: the collectives that cost the job most, ranked by how long their first
// arrival waited for the last (the time a straggler costs every other rank) or by how long
// they took from first arrival to completion, each with who arrived last, so that one of them
// can be opened with explain_collective.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/mcp/output_schema.h"
#include "analyzer/mcp/tool_bounds.h"
#include "analyzer/mcp/tools.h"
#include "analyzer/report_format.h"
#include "rscore/comm_hash.h"
#include "rscore/time_arg.h"

namespace rs::analyzer::mcp {
namespace {

constexpr int64_t kDefaultLimit = 10;
constexpr int64_t kMaxLimit = 100;

Json Schema() {
  using namespace schema;
  Json row = Object(
      {{"comm_id_hex", String("the communicator, as explain_collective takes it")},
       {"seq", Integer()},
       {"op", String()},
       {"rank_count", Integer("ranks that called it")},
       {"arrival_basis", String("device_start (the GPUs reached it) | host_entry")},
       {"first_arrival_ns", Integer()},
       {"first_arrival_utc", String()},
       {"wait_ns", Integer("last arrival minus first: how long the first rank waited")},
       {"span_ns", OrNull(Integer("first arrival to completion; null: not completed"))},
       {"last_arrival", OrNull(String("who arrived last ('node1 rank 3'); null on a tie"))}});
  Json last = Object({{"label", String()},
                      {"count", Integer("of the listed collectives, those it arrived last in")}});
  return Result({{"by", Enum({"wait", "span"})},
                 {"collectives_compared", Integer("matched collectives (two or more ranks)")},
                 {"collectives", ArrayOf(row, "the slowest first")},
                 {"last_arrivals", ArrayOf(last, "the most often last first")}});
}

int64_t Key(const Collective& g, bool by_wait) {
  if (by_wait) return g.last_arrival - g.first_arrival;
  return g.done >= 0 ? g.done - g.first_arrival : -1;
}

rs::Result<ToolOutput> Run(Recording& rec, const Args& args, const ToolContext&) {
  rec.BeginCall(kAnalysisTimeLimitNs);
  const bool by_wait = args.String("by").value_or("wait") == "wait";
  const int64_t limit = args.Int("limit").value_or(kDefaultLimit);
  std::optional<uint64_t> comm;
  if (auto text = args.Text("comm")) {
    ASSIGN_OR_RETURN(const int64_t parsed, CommArgument(*text));
    comm = static_cast<uint64_t>(parsed);
  }
  ASSIGN_OR_RETURN(const CollectiveData* data, rec.Collectives());
  std::vector<const Collective*> ranked;
  bool comm_seen = false;
  for (const Collective& g : data->collectives) {
    if (comm && g.comm != *comm) continue;
    comm_seen = true;
    if (g.matched() && Key(g, by_wait) >= 0) ranked.push_back(&g);
  }
  if (comm && !comm_seen) {
    return rs::Error("no communicator " + rs::HashHex(*comm) +
                     " in this recording: summary or find_stragglers name its communicators");
  }
  std::stable_sort(ranked.begin(), ranked.end(), [&](const Collective* a, const Collective* b) {
    return Key(*a, by_wait) > Key(*b, by_wait);
  });

  Json out = Json::object();
  out["by"] = by_wait ? "wait" : "span";
  out["collectives_compared"] = ranked.size();
  out["collectives"] = Json::array();
  out["truncated"] = false;
  std::map<std::string, int64_t> last_counts;
  std::string text;
  for (const Collective* g : ranked) {
    if (static_cast<int64_t>(out["collectives"].size()) == limit) {
      MarkTruncated(out, "the " + std::to_string(limit) + " slowest of " +
                             std::to_string(ranked.size()) + " listed; a larger 'limit' (at most " +
                             std::to_string(kMaxLimit) + ") or 'comm' lists more");
      break;
    }
    const std::string op = data->calls[g->begin].op;
    Json last =
        g->last >= 0 ? Json(data->participants[static_cast<size_t>(g->last)].Label()) : Json();
    if (!last.is_null()) ++last_counts[last.get<std::string>()];
    const int64_t wait = g->last_arrival - g->first_arrival;
    out["collectives"].push_back(
        {{"comm_id_hex", rs::HashHex(g->comm)},
         {"seq", g->seq},
         {"op", op},
         {"rank_count", g->end - g->begin},
         {"arrival_basis", g->device_basis ? "device_start" : "host_entry"},
         {"first_arrival_ns", g->first_arrival},
         {"first_arrival_utc", rs::FormatUtc(g->first_arrival)},
         {"wait_ns", wait},
         {"span_ns", g->done >= 0 ? Json(g->done - g->first_arrival) : Json()},
         {"last_arrival", last}});
    text += "\n" + op + " " + rs::HashHex(g->comm) + " seq " + std::to_string(g->seq) +
            ": waited " + FormatNs(wait) + " for " +
            (last.is_null() ? std::string("a tie") : last.get<std::string>()) +
            (g->done >= 0 ? ", " + FormatNs(g->done - g->first_arrival) + " to completion"
                          : ", not completed");
  }
  out["last_arrivals"] = Json::array();
  std::vector<std::pair<std::string, int64_t>> counts(last_counts.begin(), last_counts.end());
  std::stable_sort(counts.begin(), counts.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [label, n] : counts)
    out["last_arrivals"].push_back({{"label", label}, {"count", n}});
  std::string head =
      std::to_string(out["collectives"].size()) + " slowest of " + std::to_string(ranked.size()) +
      " collectives by " +
      (by_wait ? "the first arrival's wait for the last" : "first arrival to completion");
  if (!counts.empty()) {
    head += "; last among them most often: " + counts[0].first + " (" +
            std::to_string(counts[0].second) + ")";
  }
  if (!ranked.empty()) text += "\nexplain_collective(comm, seq) opens one, rank by rank";
  return ToolOutput{std::move(out), head + text};
}

}  // namespace

Tool SlowestCollectivesTool() {
  Tool t;
  t.name = "slowest_collectives";
  t.title = "The collectives that cost most";
  t.description =
      "The collectives ranked by how long their first rank waited for the last (by = 'wait', "
      "the time a late rank costs the others) or by first arrival to completion (by = 'span'), "
      "on the basis the report compares them on (device starts where every rank's GPU was "
      "seen, else host entries), with who arrived last in each and how often each rank was "
      "last among them. Open one with explain_collective(comm, seq).";
  t.params = {
      Param("by", Param::Type::kString, "wait (default) or span").Choices({"wait", "span"}),
      Param("comm", Param::Type::kStringOrInteger,
            "only this communicator: comm_id_hash as the report prints it (0x26017f0f7f0ca554) "
            "or in decimal"),
      Param("limit", Param::Type::kInteger,
            "at most this many collectives (default " + std::to_string(kDefaultLimit) + ")")
          .Range(1, kMaxLimit)};
  t.output_schema = Schema();
  t.run = Run;
  return t;
}

}  // namespace rs::analyzer::mcp
