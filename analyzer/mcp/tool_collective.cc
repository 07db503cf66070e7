// explain_collective(comm, seq): one collective as every rank saw it (arrival, duration,
// lateness, on the basis the report compares it on) and what happened beside it in its window:
// TCP retransmits, run-queue waits of its ranks' processes, block I/O on its nodes.
#include <algorithm>
#include <map>
#include <set>

#include "analyzer/mcp/output_schema.h"
#include "analyzer/mcp/tool_bounds.h"
#include "analyzer/mcp/tools.h"
#include "analyzer/report_filter.h"
#include "analyzer/report_format.h"
#include "rscore/comm_hash.h"
#include "rscore/time_arg.h"

namespace rs::analyzer::mcp {
namespace {

constexpr size_t kMaxRanks = 64;
constexpr int64_t kMaxSideEvents = 20;
constexpr size_t kCommsListed = 10;
// Run-queue waits and block requests that began up to this long before the window and were
// still going in it are counted too.
constexpr int64_t kLookBackNs = int64_t{1} * 1000000000;

Json Schema() {
  using namespace schema;
  Json rank = Object(
      {{"node", String()},
       {"rank", OrNull(Integer())},
       {"pid", Integer()},
       {"label", String("'node1 rank 3', or 'node1 pid 4242' where the rank is unknown")},
       {"op", String()},
       {"entry_ns", Integer("its host entered the NCCL call (aligned clock)")},
       {"host_duration_ns", OrNull(Integer("the call's duration; null: in flight at the end"))},
       {"enqueue", Boolean("the call only enqueued the collective (it returned before the "
                           "collective completed)")},
       {"device_start_ns", OrNull(Integer("its GPU started it (profiler plugin)"))},
       {"device_end_ns", OrNull(Integer())},
       {"device_state", String("enqueued | started | completed at the end; '' without gpu_ops")},
       {"arrival_ns", Integer("as compared: device start on device basis, else host entry")},
       {"lateness_ns", Integer("arrival after the first rank's")},
       {"duration_ns", OrNull(Integer("as compared across ranks (device where timed)"))},
       {"count", OrNull(Integer())},
       {"datatype", String()},
       {"root", OrNull(Integer())}});
  Json retransmit = Object({{"node", String("the node that recorded it")},
                            {"timestamp_ns", Integer()},
                            {"source", String("saddr:sport")},
                            {"destination", String("daddr:dport")},
                            {"segments", Integer()},
                            {"ca_state", OrNull(String("congestion state: Open, Disorder, CWR "
                                                       "(tail-loss probes), Recovery, Loss"))}});
  Json runq = Object({{"node", String()},
                      {"pid", Integer()},
                      {"label", String("the rank whose process waited")},
                      {"timestamp_ns", Integer()},
                      {"duration_ns", Integer("time it waited for a CPU")},
                      {"other_comm", OrNull(String("the task that had the CPU"))},
                      {"other_pid", OrNull(Integer())}});
  Json block = Object({{"node", String()},
                       {"timestamp_ns", Integer("issue")},
                       {"duration_ns", OrNull(Integer("issue to completion"))},
                       {"dev", String()},
                       {"op", String()},
                       {"bytes", Integer()},
                       {"pid", OrNull(Integer())},
                       {"comm", OrNull(String())}});
  Json side = Object(
      {{"retransmits", ArrayOf(retransmit, "in the window, by time (at most 20)")},
       {"retransmits_total", Integer()},
       {"retransmitted_segments", Integer()},
       {"runq_waits", ArrayOf(runq, "of its ranks' processes, the longest first (at most 20)")},
       {"runq_waits_total", Integer()},
       {"runq_wait_ns_total", Integer()},
       {"block_io", ArrayOf(block, "on its nodes, the longest first (at most 20)")},
       {"block_io_total", Integer()}});
  return Result(
      {{"comm_id_hash", Integer("as stored (signed 64-bit)")},
       {"comm_id_hex", String()},
       {"seq", Integer()},
       {"op", String()},
       {"rank_count", Integer("ranks that called it")},
       {"matched", Boolean("called by two or more ranks")},
       {"compared", Boolean("in the report's lateness statistics")},
       {"arrival_basis", Enum({"device_start", "host_entry"})},
       {"first_arrival_ns", Integer()},
       {"first_arrival_utc", String()},
       {"arrival_spread_ns", Integer("last arrival minus first")},
       {"last_arrival", OrNull(String("the rank that arrived last; null on a tie"))},
       {"completed", Boolean()},
       {"completed_ns", OrNull(Integer("the last device end, or the last call's return"))},
       {"ranks", ArrayOf(rank, "the latest first (at most 64)")},
       {"window",
        Object({{"from_ns", Integer()},
                {"to_ns", Integer()},
                {"from_utc", String()},
                {"to_utc", String()}},
               {}, "first entry or arrival to completion (to the recording's end if pending)")},
       {"side_events", side}});
}

Json OptInt(const std::optional<int64_t>& v) { return v ? Json(*v) : Json(); }

// The communicators of the recording, for an error: "0x.. (seq 0-479, ALL_REDUCE, 8 ranks)".
std::string CommList(const CollectiveData& data) {
  std::map<uint64_t, std::tuple<int64_t, int64_t, size_t, std::string>> comms;
  for (const Collective& g : data.collectives) {
    auto [it, added] =
        comms.try_emplace(g.comm, g.seq, g.seq, g.end - g.begin, data.calls[g.begin].op);
    std::get<0>(it->second) = std::min(std::get<0>(it->second), g.seq);
    std::get<1>(it->second) = std::max(std::get<1>(it->second), g.seq);
    std::get<2>(it->second) = std::max(std::get<2>(it->second), g.end - g.begin);
  }
  std::string out;
  size_t n = 0;
  for (const auto& [comm, v] : comms) {
    if (n++ == kCommsListed) {
      out += " and " + std::to_string(comms.size() - kCommsListed) + " more";
      break;
    }
    out += (out.empty() ? "" : ", ") + rs::HashHex(comm) + " (seq " +
           std::to_string(std::get<0>(v)) + "-" + std::to_string(std::get<1>(v)) + ", " +
           std::get<3>(v) + ", " + std::to_string(std::get<2>(v)) + " ranks)";
  }
  return out.empty() ? "none (no collectives with a communicator and sequence were recorded)" : out;
}

rs::Result<const Collective*> Find(const CollectiveData& data, uint64_t comm, int64_t seq) {
  auto it = std::lower_bound(
      data.collectives.begin(), data.collectives.end(), std::make_pair(comm, seq),
      [](const Collective& g, const auto& key) { return std::make_pair(g.comm, g.seq) < key; });
  if (it != data.collectives.end() && it->comm == comm && it->seq == seq) return &*it;
  int64_t lo = INT64_MAX, hi = -1;
  for (const Collective& g : data.collectives) {
    if (g.comm != comm) continue;
    lo = std::min(lo, g.seq);
    hi = std::max(hi, g.seq);
  }
  if (hi < 0) {
    return rs::Error("no communicator " + rs::HashHex(comm) +
                     " in this recording; its "
                     "communicators: " +
                     CommList(data));
  }
  return rs::Error("communicator " + rs::HashHex(comm) + " has no collective with seq " +
                   std::to_string(seq) + ": its sequence numbers run from " + std::to_string(lo) +
                   " to " + std::to_string(hi));
}

Json RankRow(const CollectiveData& data, const Collective& g, const NcclCall& c) {
  const Participant& p = data.participants[c.participant];
  const int64_t dur = ComparedDuration(g, c);
  return {{"node", p.node},
          {"rank", OptInt(p.rank)},
          {"pid", p.pid},
          {"label", p.Label()},
          {"op", c.op},
          {"entry_ns", c.ts},
          {"host_duration_ns", c.in_flight() ? Json() : Json(c.dur)},
          {"enqueue", c.enqueue},
          {"device_start_ns", c.device ? OptInt(c.device->start_ns) : Json()},
          {"device_end_ns", c.device ? OptInt(c.device->end_ns) : Json()},
          {"device_state", c.device ? c.device->state : std::string()},
          {"arrival_ns", c.arrival},
          {"lateness_ns", c.arrival - g.first_arrival},
          {"duration_ns", dur >= 0 ? Json(dur) : Json()},
          {"count", OptInt(c.count)},
          {"datatype", c.datatype},
          {"root", OptInt(c.root)}};
}

Json NullableText(const rs::Statement& st, int col) {
  return st.IsNull(col) ? Json() : Json(st.Text(col));
}

rs::Result<Json> SideEvents(rs::Db& db, const CollectiveData& data, const Collective& g,
                            int64_t from, int64_t to) {
  std::set<std::string> nodes;
  std::map<std::pair<std::string, int64_t>, std::string> labels;
  for (size_t i = g.begin; i < g.end; ++i) {
    const Participant& p = data.participants[data.calls[i].participant];
    nodes.insert(p.node);
    labels[{p.node, p.pid}] = p.Label();
  }
  Json side = Json::object();
  side["retransmits"] = Json::array();
  ASSIGN_OR_RETURN(bool tcp, rs::HasTable(db, "tcp_events"));
  int64_t retransmits = 0, segments = 0;
  if (tcp) {
    ASSIGN_OR_RETURN(rs::Statement st,
                     db.Prepare("SELECT node, timestamp_ns, saddr, sport, daddr, dport, segments,"
                                " ca_state FROM tcp_events WHERE timestamp_ns BETWEEN ?1 AND ?2"
                                " ORDER BY timestamp_ns"));
    st.Bind(1, from).Bind(2, to);
    for (;;) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      ++retransmits;
      segments += st.Int(6);
      if (retransmits > kMaxSideEvents) continue;
      side["retransmits"].push_back({{"node", st.Text(0)},
                                     {"timestamp_ns", st.Int(1)},
                                     {"source", st.Text(2) + ":" + std::to_string(st.Int(3))},
                                     {"destination", st.Text(4) + ":" + std::to_string(st.Int(5))},
                                     {"segments", st.Int(6)},
                                     {"ca_state", NullableText(st, 7)}});
    }
  }
  side["retransmits_total"] = retransmits;
  side["retransmitted_segments"] = segments;

  std::vector<Json> waits;
  int64_t wait_ns = 0;
  ASSIGN_OR_RETURN(bool sched, rs::HasTable(db, "sched_events"));
  if (sched) {
    ASSIGN_OR_RETURN(rs::Statement st,
                     db.Prepare("SELECT node, pid, timestamp_ns, duration_ns, other_comm, other_pid"
                                " FROM sched_events WHERE event = 'runq_latency' AND timestamp_ns"
                                " BETWEEN ?1 AND ?2 AND timestamp_ns + duration_ns > ?3"));
    st.Bind(1, from - kLookBackNs).Bind(2, to).Bind(3, from);
    for (;;) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      auto label = labels.find({st.Text(0), st.Int(1)});
      if (label == labels.end()) continue;  // not one of this collective's ranks
      wait_ns += st.Int(3);
      waits.push_back({{"node", st.Text(0)},
                       {"pid", st.Int(1)},
                       {"label", label->second},
                       {"timestamp_ns", st.Int(2)},
                       {"duration_ns", st.Int(3)},
                       {"other_comm", NullableText(st, 4)},
                       {"other_pid", st.IsNull(5) ? Json() : Json(st.Int(5))}});
    }
  }
  auto longest = [](const Json& a, const Json& b) {
    return a["duration_ns"].get<int64_t>() > b["duration_ns"].get<int64_t>();
  };
  std::stable_sort(waits.begin(), waits.end(), longest);
  side["runq_waits"] = Json::array();
  for (size_t i = 0; i < waits.size() && i < static_cast<size_t>(kMaxSideEvents); ++i) {
    side["runq_waits"].push_back(waits[i]);
  }
  side["runq_waits_total"] = waits.size();
  side["runq_wait_ns_total"] = wait_ns;

  std::vector<Json> requests;
  ASSIGN_OR_RETURN(bool block, rs::HasTable(db, "block_events"));
  if (block) {
    ASSIGN_OR_RETURN(rs::Statement st,
                     db.Prepare("SELECT node, timestamp_ns, duration_ns, dev, op, bytes, pid, comm"
                                " FROM block_events WHERE timestamp_ns BETWEEN ?1 AND ?2 AND"
                                " COALESCE(timestamp_ns + duration_ns, ?2) > ?3"));
    st.Bind(1, from - kLookBackNs).Bind(2, to).Bind(3, from);
    for (;;) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      if (!nodes.count(st.Text(0))) continue;
      requests.push_back({{"node", st.Text(0)},
                          {"timestamp_ns", st.Int(1)},
                          {"duration_ns", st.IsNull(2) ? Json() : Json(st.Int(2))},
                          {"dev", st.Text(3)},
                          {"op", st.Text(4)},
                          {"bytes", st.Int(5)},
                          {"pid", st.IsNull(6) ? Json() : Json(st.Int(6))},
                          {"comm", NullableText(st, 7)}});
    }
  }
  std::stable_sort(requests.begin(), requests.end(), [](const Json& a, const Json& b) {
    return a["duration_ns"].is_null() ? false
           : b["duration_ns"].is_null()
               ? true
               : a["duration_ns"].get<int64_t>() > b["duration_ns"].get<int64_t>();
  });
  side["block_io"] = Json::array();
  for (size_t i = 0; i < requests.size() && i < static_cast<size_t>(kMaxSideEvents); ++i) {
    side["block_io"].push_back(requests[i]);
  }
  side["block_io_total"] = requests.size();
  return side;
}

rs::Result<ToolOutput> Run(Recording& rec, const Args& args, const ToolContext&) {
  rec.BeginCall(kAnalysisTimeLimitNs);
  ASSIGN_OR_RETURN(const int64_t comm_signed, CommArgument(*args.Text("comm")));
  const uint64_t comm = static_cast<uint64_t>(comm_signed);
  const int64_t seq = *args.Int("seq");
  ASSIGN_OR_RETURN(const Report* report, rec.GetReport());
  ASSIGN_OR_RETURN(const CollectiveData* data, rec.Collectives());
  ASSIGN_OR_RETURN(const Collective* g, Find(*data, comm, seq));

  Json out = Json::object();
  out["comm_id_hash"] = comm_signed;
  out["comm_id_hex"] = rs::HashHex(comm);
  out["seq"] = seq;
  out["op"] = data->calls[g->begin].op;
  out["rank_count"] = g->end - g->begin;
  out["matched"] = g->matched();
  out["compared"] = g->compared();
  out["arrival_basis"] = g->device_basis ? "device_start" : "host_entry";
  out["first_arrival_ns"] = g->first_arrival;
  out["first_arrival_utc"] = rs::FormatUtc(g->first_arrival);
  out["arrival_spread_ns"] = g->last_arrival - g->first_arrival;
  out["last_arrival"] =
      g->last >= 0 ? Json(data->participants[static_cast<size_t>(g->last)].Label()) : Json();
  out["completed"] = g->done >= 0;
  out["completed_ns"] = g->done >= 0 ? Json(g->done) : Json();
  out["truncated"] = false;

  std::vector<const NcclCall*> calls;
  for (size_t i = g->begin; i < g->end; ++i) calls.push_back(&data->calls[i]);
  std::stable_sort(calls.begin(), calls.end(),
                   [](const NcclCall* a, const NcclCall* b) { return a->arrival > b->arrival; });
  out["ranks"] = Json::array();
  for (const NcclCall* c : calls) {
    if (out["ranks"].size() == kMaxRanks) {
      MarkTruncated(
          out, "the " + std::to_string(kMaxRanks) + " latest of " + std::to_string(calls.size()) +
                   " ranks listed; query(\"SELECT * FROM nccl_events_v WHERE "
                   "comm_id_hex = '" +
                   rs::HashHex(comm) + "' AND seq = " + std::to_string(seq) + "\") has every call");
      break;
    }
    out["ranks"].push_back(RankRow(*data, *g, *c));
  }
  const int64_t from = std::min(g->first_entry, g->first_arrival);
  const int64_t to = g->done >= 0 ? g->done : std::max(report->end_ns, g->last_entry);
  out["window"] = {{"from_ns", from},
                   {"to_ns", to},
                   {"from_utc", rs::FormatUtc(from)},
                   {"to_utc", rs::FormatUtc(to)}};
  rec.BeginCall(kLookupTimeLimitNs);
  ASSIGN_OR_RETURN(out["side_events"], SideEvents(rec.db(), *data, *g, from, to));
  const Json& side = out["side_events"];
  if (side["retransmits_total"].get<int64_t>() > kMaxSideEvents ||
      side["runq_waits_total"].get<size_t>() > static_cast<size_t>(kMaxSideEvents) ||
      side["block_io_total"].get<size_t>() > static_cast<size_t>(kMaxSideEvents)) {
    MarkTruncated(out,
                  "side events are cut at 20 of each kind; node_timeline(node, from, to, "
                  "kinds) lists them in the window");
  }

  std::string text = out["op"].get<std::string>() + " " + rs::HashHex(comm) + " seq " +
                     std::to_string(seq) + ": " + std::to_string(calls.size()) + " ranks, " +
                     (g->device_basis ? "device starts" : "host entries") + " spread over " +
                     FormatNs(g->last_arrival - g->first_arrival);
  if (g->last >= 0) {
    text += "; last: " + data->participants[static_cast<size_t>(g->last)].Label();
  }
  text += g->done >= 0 ? "; completed " + rs::FormatUtc(g->done) : "; not completed";
  text += "\nin its window: " + std::to_string(side["retransmits_total"].get<int64_t>()) +
          " TCP retransmit(s), " + std::to_string(side["runq_waits_total"].get<size_t>()) +
          " run-queue wait(s) of its ranks (" +
          FormatNs(side["runq_wait_ns_total"].get<int64_t>()) + "), " +
          std::to_string(side["block_io_total"].get<size_t>()) +
          " block I/O request(s) on its nodes";
  return ToolOutput{std::move(out), std::move(text)};
}

}  // namespace

rs::Result<int64_t> CommArgument(const std::string& text) {
  const rs::Result<int64_t> parsed = ParseComm(text);
  if (parsed.ok()) return *parsed;
  return rs::Error("argument 'comm' '" + text +
                   "': a communicator's comm_id_hash as the report prints it "
                   "(0x26017f0f7f0ca554) or in decimal");
}

Tool ExplainCollectiveTool() {
  Tool t;
  t.name = "explain_collective";
  t.title = "One collective, rank by rank";
  t.description =
      "One collective (communicator and sequence number, as the report and hang_report name "
      "them): every rank's arrival, duration and lateness on the basis the report compares "
      "it on, who arrived last, and the side events in its window (TCP retransmits, run-queue "
      "waits of its ranks, block I/O on its nodes).";
  t.params = {Param("comm", Param::Type::kStringOrInteger,
                    "the communicator: comm_id_hash as the report prints it "
                    "(0x26017f0f7f0ca554) or in decimal")
                  .Required(),
              Param("seq", Param::Type::kInteger, "the collective's sequence number")
                  .Required()
                  .Range(0, std::nullopt)};
  t.output_schema = Schema();
  t.run = Run;
  return t;
}

}  // namespace rs::analyzer::mcp
