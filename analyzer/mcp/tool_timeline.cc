// node_timeline(node, from, to, kinds, limit): what one node recorded in a window, in time
// order, every kind of event in one list, at most `limit` of them (then `next_from` continues).
#include <algorithm>
#include <map>
#include <tuple>

#include "analyzer/mcp/output_schema.h"
#include "analyzer/mcp/tool_bounds.h"
#include "analyzer/mcp/tools.h"
#include "rscore/comm_hash.h"
#include "rscore/row_window.h"
#include "rscore/schema.h"
#include "rscore/time_arg.h"

namespace rs::analyzer::mcp {
namespace {

constexpr int64_t kDefaultLimit = 200;
constexpr int64_t kMaxLimit = 1000;

// One kind of event: its table, the columns read (timestamp_ns first, then pid) and how a row
// reads as an event.
struct Kind {
  const char* name;
  const char* table;
  const char* columns;
  // Fills what, duration_ns, rank and detail from the row (columns 2 on).
  void (*describe)(const rs::Statement& st, Json& event);
};

std::string Text(const rs::Statement& st, int col) { return st.IsNull(col) ? "" : st.Text(col); }
Json OptInt(const rs::Statement& st, int col) {
  return st.IsNull(col) ? Json() : Json(st.Int(col));
}

const Kind kKinds[] = {
    {"nccl", "nccl_events",
     "timestamp_ns, pid, op, duration_ns, rank, comm_id_hash, seq, count, datatype, state",
     [](const rs::Statement& st, Json& e) {
       e["what"] = st.Text(2);
       e["duration_ns"] = OptInt(st, 3);
       e["rank"] = OptInt(st, 4);
       std::string d;
       if (!st.IsNull(5)) d += "comm " + rs::HashHex(static_cast<uint64_t>(st.Int(5)));
       if (!st.IsNull(6)) d += " seq " + std::to_string(st.Int(6));
       if (!st.IsNull(7)) d += ", count " + std::to_string(st.Int(7)) + " " + Text(st, 8);
       if (Text(st, 9) == "in_flight") d += ", in flight at the end";
       e["detail"] = d;
     }},
    {"cuda", "cuda_events", "timestamp_ns, pid, api, duration_ns, bytes, stream, state",
     [](const rs::Statement& st, Json& e) {
       e["what"] = st.Text(2);
       e["duration_ns"] = OptInt(st, 3);
       std::string d;
       if (!st.IsNull(4)) d += std::to_string(st.Int(4)) + " bytes";
       if (!st.IsNull(5)) d += std::string(d.empty() ? "" : ", ") + "stream " + st.Text(5);
       if (Text(st, 6) == "in_flight") d += std::string(d.empty() ? "" : ", ") + "in flight";
       e["detail"] = d;
     }},
    {"gpu", "gpu_ops",
     "timestamp_ns, pid, op, device_start_ns, device_end_ns, rank, comm_id_hash, seq, state",
     [](const rs::Statement& st, Json& e) {
       e["what"] = st.Text(2) + " on the GPU";
       e["duration_ns"] = st.IsNull(3) || st.IsNull(4) ? Json() : Json(st.Int(4) - st.Int(3));
       e["rank"] = OptInt(st, 5);
       // timestamp_ns is its enqueue by the host; the device's own times follow.
       std::string d =
           st.IsNull(3) ? "not started on the device" : "device start " + rs::FormatUtc(st.Int(3));
       if (!st.IsNull(6)) d += ", comm " + rs::HashHex(static_cast<uint64_t>(st.Int(6)));
       if (!st.IsNull(7)) d += " seq " + std::to_string(st.Int(7));
       d += ", " + st.Text(8) + " at the end";
       e["detail"] = d;
     }},
    {"tcp", "tcp_events",
     "timestamp_ns, pid, event, saddr, sport, daddr, dport, segments, ca_state",
     [](const rs::Statement& st, Json& e) {
       e["what"] = st.Text(2);
       e["detail"] = st.Text(3) + ":" + st.Text(4) + " -> " + st.Text(5) + ":" + st.Text(6) + ", " +
                     st.Text(7) + " segment(s)" + (st.IsNull(8) ? "" : ", state " + st.Text(8));
     }},
    {"sched", "sched_events", "timestamp_ns, pid, event, duration_ns, cpu, other_comm, other_pid",
     [](const rs::Statement& st, Json& e) {
       e["what"] = st.Text(2);
       e["duration_ns"] = st.Int(3);
       std::string d = st.IsNull(4) ? "" : "cpu " + st.Text(4);
       if (!st.IsNull(5)) {
         d += std::string(d.empty() ? "" : ", ") + "CPU held by '" + st.Text(5) + "'" +
              (st.IsNull(6) ? "" : " (pid " + st.Text(6) + ")");
       }
       e["detail"] = d;
     }},
    {"block", "block_events", "timestamp_ns, pid, op, duration_ns, dev, bytes, comm",
     [](const rs::Statement& st, Json& e) {
       e["what"] = "block " + st.Text(2);
       e["duration_ns"] = OptInt(st, 3);
       e["detail"] = "dev " + st.Text(4) + ", " + st.Text(5) + " bytes" +
                     (st.IsNull(6) ? "" : ", by '" + st.Text(6) + "'");
     }},
    {"process", "process_events", "timestamp_ns, pid, event, comm, filename, exit_code",
     [](const rs::Statement& st, Json& e) {
       e["what"] = st.Text(2);
       std::string d = Text(st, 3);
       if (!st.IsNull(4)) d += std::string(d.empty() ? "" : " ") + st.Text(4);
       if (!st.IsNull(5)) d += std::string(d.empty() ? "" : ", ") + "exit code " + st.Text(5);
       e["detail"] = d;
     }},
};

std::vector<std::string> KindNames() {
  std::vector<std::string> names;
  for (const Kind& k : kKinds) names.push_back(k.name);
  return names;
}

Json Schema() {
  using namespace schema;
  Json event = Object({{"timestamp_ns", Integer("ns since the epoch (aligned clock)")},
                       {"time_utc", String()},
                       {"offset_s", Number("seconds from the recording's start")},
                       {"kind", Enum(KindNames())},
                       {"what", String("op, API, event or request kind")},
                       {"duration_ns", OrNull(Integer())},
                       {"pid", OrNull(Integer())},
                       {"rank", OrNull(Integer())},
                       {"detail", String()}});
  return Result({{"node", String()},
                 {"from_ns", Integer()},
                 {"to_ns", Integer()},
                 {"from_utc", String()},
                 {"to_utc", String()},
                 {"kinds", ArrayOf(Enum(KindNames()))},
                 {"events", ArrayOf(event, "in time order")},
                 {"counts", MapOf(Integer(), "events returned per kind")},
                 {"next_from", String("when truncated: the time to pass as 'from' for the next "
                                      "events (events at that very time may repeat)")}},
                {"next_from"});
}

rs::Result<ToolOutput> Run(Recording& rec, const Args& args, const ToolContext&) {
  rec.BeginCall(kAnalysisTimeLimitNs);  // the report and the node names, once per server
  const std::string node = *args.String("node");
  RETURN_IF_ERROR(rec.CheckNode(node, "argument 'node'"));
  const int64_t limit = args.Int("limit").value_or(kDefaultLimit);
  ASSIGN_OR_RETURN(const Report* report, rec.GetReport());
  rec.BeginCall(kLookupTimeLimitNs);
  int64_t from = std::min(report->start_ns, rec.start_ns());
  int64_t to = report->end_ns;
  if (auto t = args.Text("from")) {
    ASSIGN_OR_RETURN(from, rec.ResolveTime(*t, "argument 'from'"));
  }
  if (auto t = args.Text("to")) {
    ASSIGN_OR_RETURN(to, rec.ResolveTime(*t, "argument 'to'"));
  }
  if (from > to) {
    return rs::Error("'from' (" + rs::FormatUtc(from) + ") is after 'to' (" + rs::FormatUtc(to) +
                     "); the recording runs from " + rs::FormatUtc(report->start_ns) + " to " +
                     rs::FormatUtc(report->end_ns));
  }
  std::vector<std::string> kinds = args.Strings("kinds");
  if (kinds.empty()) kinds = KindNames();

  std::map<int64_t, int64_t> rank_of;  // pid -> rank on this node
  {
    ASSIGN_OR_RETURN(rs::Statement st, rec.db().Prepare("SELECT pid, rank FROM processes WHERE"
                                                        " node = ?1 AND rank IS NOT NULL"));
    st.Bind(1, node);
    for (;;) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      rank_of[st.Int(0)] = st.Int(1);
    }
  }
  // Each kind's first limit+1 events in the window (the timestamp index), then merged.
  std::vector<std::tuple<int64_t, size_t, Json>> events;
  const rs::RowWindow window{.from_ns = from, .to_ns = to, .nodes = {node}};
  for (size_t k = 0; k < std::size(kKinds); ++k) {
    const Kind& kind = kKinds[k];
    if (std::find(kinds.begin(), kinds.end(), kind.name) == kinds.end()) continue;
    ASSIGN_OR_RETURN(bool present, rs::HasTable(rec.db(), kind.table));
    if (!present) continue;
    ASSIGN_OR_RETURN(rs::Statement st,
                     rec.db().Prepare(std::string("SELECT ") + kind.columns + " FROM " +
                                      kind.table + " WHERE 1" + rs::WindowTerms(window, 2) +
                                      " ORDER BY timestamp_ns, id LIMIT ?1"));
    st.Bind(1, limit + 1);
    rs::BindWindow(st, window, 2);
    for (;;) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      const int64_t ts = st.Int(0);
      Json e = {{"timestamp_ns", ts},
                {"time_utc", rs::FormatUtc(ts)},
                {"offset_s", static_cast<double>(ts - rec.start_ns()) * 1e-9},
                {"kind", kind.name},
                {"what", ""},
                {"duration_ns", nullptr},
                {"pid", OptInt(st, 1)},
                {"rank", nullptr},
                {"detail", ""}};
      if (!st.IsNull(1)) {
        auto r = rank_of.find(st.Int(1));
        if (r != rank_of.end()) e["rank"] = r->second;
      }
      kind.describe(st, e);
      events.emplace_back(ts, k, std::move(e));
    }
  }
  std::stable_sort(events.begin(), events.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
  });

  Json out = Json::object();
  out["node"] = node;
  out["from_ns"] = from;
  out["to_ns"] = to;
  out["from_utc"] = rs::FormatUtc(from);
  out["to_utc"] = rs::FormatUtc(to);
  out["kinds"] = kinds;
  out["events"] = Json::array();
  out["counts"] = Json::object();
  out["truncated"] = false;
  for (auto& [ts, k, e] : events) {
    if (static_cast<int64_t>(out["events"].size()) == limit) {
      out["next_from"] = std::to_string(ts);
      MarkTruncated(out, "more than " + std::to_string(limit) +
                             " events: narrow 'from'/'to' or 'kinds', or continue with 'from' = "
                             "next_from");
      break;
    }
    out["counts"][kKinds[k].name] = out["counts"].value(kKinds[k].name, 0) + 1;
    out["events"].push_back(std::move(e));
  }

  std::string text = node + ", " + rs::FormatUtc(from) + " to " + rs::FormatUtc(to) + ": " +
                     std::to_string(out["events"].size()) + " event(s)";
  for (const auto& [kind, n] : out["counts"].items()) {
    text += ", " + std::to_string(n.get<int64_t>()) + " " + kind;
  }
  if (out["truncated"].get<bool>()) {
    text += "; more after " + out["next_from"].get<std::string>() + " (pass it as 'from')";
  }
  return ToolOutput{std::move(out), std::move(text)};
}

}  // namespace

Tool NodeTimelineTool() {
  Tool t;
  t.name = "node_timeline";
  t.title = "What one node recorded, in time order";
  t.description =
      "The events one node recorded between 'from' and 'to', in time order: NCCL calls, CUDA "
      "calls, GPU operations, TCP retransmits, scheduler intervals (off-CPU, run-queue waits "
      "and who had the CPU), block I/O, process exec/exit. At most 'limit' events; when cut, "
      "'next_from' continues. Times as report's --from/--to: ISO 8601 UTC "
      "(2026-11-25T11:38:01.5Z), nanoseconds since the epoch, or +offset from the recording's "
      "start (+40s).";
  t.params = {
      Param("node", Param::Type::kString, "the node's name, as summary lists it").Required(),
      Param("from", Param::Type::kStringOrInteger,
            "start of the window (default: the recording's start): ISO 8601 UTC, ns "
            "since the epoch, or +offset like +40s"),
      Param("to", Param::Type::kStringOrInteger,
            "end of the window (default: the recording's end)"),
      Param("kinds", Param::Type::kStringList, "only these kinds of event (default: all)")
          .Choices(KindNames()),
      Param("limit", Param::Type::kInteger,
            "at most this many events (default " + std::to_string(kDefaultLimit) + ")")
          .Range(1, kMaxLimit)};
  t.output_schema = Schema();
  t.run = Run;
  return t;
}

}  // namespace rs::analyzer::mcp
