#include "analyzer/mcp/output_schema.h"

namespace rs::analyzer::mcp::schema {
namespace {

Json Described(Json s, const std::string& description) {
  if (!description.empty()) s["description"] = description;
  return s;
}

// {kind, summary, values} and {kind, score, summary, remediation, values} of a finding.
Json Values() {
  return MapOf(OrNull(Number()), "the numbers behind it, by name (ns, counts, shares)");
}

}  // namespace

Json String(const std::string& d) { return Described({{"type", "string"}}, d); }
Json Integer(const std::string& d) { return Described({{"type", "integer"}}, d); }
Json Number(const std::string& d) { return Described({{"type", "number"}}, d); }
Json Boolean(const std::string& d) { return Described({{"type", "boolean"}}, d); }

Json OrNull(Json s) {
  const Json type = s["type"];
  s["type"] = Json::array({type, "null"});
  return s;
}

Json Enum(const std::vector<std::string>& values, const std::string& d) {
  return Described({{"type", "string"}, {"enum", values}}, d);
}

Json ArrayOf(Json items, const std::string& d) {
  return Described({{"type", "array"}, {"items", std::move(items)}}, d);
}

Json Object(std::vector<std::pair<std::string, Json>> properties,
            const std::vector<std::string>& optional, const std::string& d) {
  Json props = Json::object();
  Json required = Json::array();
  for (auto& [name, s] : properties) {
    bool is_optional = false;
    for (const auto& o : optional) is_optional = is_optional || o == name;
    if (!is_optional) required.push_back(name);
    props[name] = std::move(s);
  }
  Json out = {{"type", "object"}, {"properties", std::move(props)}};
  if (!required.empty()) out["required"] = std::move(required);
  out["additionalProperties"] = false;
  return Described(std::move(out), d);
}

Json MapOf(Json values, const std::string& d) {
  return Described({{"type", "object"}, {"additionalProperties", std::move(values)}}, d);
}

Json Result(std::vector<std::pair<std::string, Json>> properties,
            const std::vector<std::string>& optional) {
  std::vector<std::string> opt = optional;
  properties.emplace_back("truncated",
                          Boolean("true when a list or a text was cut to keep the result small"));
  properties.emplace_back("hint", String("how to narrow the question (present when truncated)"));
  opt.push_back("hint");
  return Object(std::move(properties), opt);
}

Json Finding() {
  return Object(
      {{"node", String("the node of the finding")},
       {"rank", OrNull(Integer("its rank; null: the whole node, or the rank is unknown"))},
       {"pid", OrNull(Integer())},
       {"ranks", ArrayOf(Integer(), "the late ranks it stands for")},
       {"pids", ArrayOf(Integer())},
       {"cause", String("network | cpu_contention | io | compute | hang | unknown")},
       {"confidence", Enum({"high", "medium", "low", "undetermined"})},
       {"confidence_score", OrNull(Number())},
       {"ordering_determined", Boolean("false: the lateness is inside the clock error bound")},
       {"clock_bound_ns", Integer("the clock error bound the ordering rests on")},
       {"basis", String("what kind of timestamps the conclusion used")},
       {"arrival_basis", String("device_start | host_entry | mixed | device_waits | ''")},
       {"shape", String("host_bound | device_bound | network | hang | host_entry | "
                        "device_unseen | ''")},
       {"summary", String()},
       {"causes", ArrayOf(Object({{"kind", String()},
                                  {"score", OrNull(Number("share of the lost time, 0..1"))},
                                  {"summary", String()},
                                  {"remediation", String()},
                                  {"values", Values()}}),
                          "ranked, best first")},
       {"evidence",
        ArrayOf(Object({{"kind", String()}, {"summary", String()}, {"values", Values()}}))},
       {"competitors",
        ArrayOf(Object({{"comm", String()}, {"pid", Integer()}, {"ran_ns", Integer()}}),
                "processes that had the CPU while the ranks waited for one")},
       {"late_arrivals_total",
        Integer("collectives its ranks arrived last in (slowest_collectives lists them)")}});
}

Json Hang() {
  Json activity = Object({{"kind", Enum({"nccl", "cuda", "exit"})},
                          {"what", String()},
                          {"seq", OrNull(Integer())},
                          {"timestamp_ns", Integer()},
                          {"duration_ns", OrNull(Integer("null: in flight"))},
                          {"state", String("in_flight | complete | exited")},
                          {"exit_code", OrNull(Integer())},
                          {"stack", String()}});
  Json progress = Object({{"node", String()},
                          {"rank", OrNull(Integer())},
                          {"pid", Integer()},
                          {"state", String("not_enqueued | enqueued | started | completed | "
                                           "no_dump | ''")},
                          {"state_basis", String("device | host_call | host_enqueue | "
                                                 "flight_recorder | none | ''")},
                          {"last_entered_seq", OrNull(Integer())},
                          {"last_started_seq", OrNull(Integer())},
                          {"last_completed_seq", OrNull(Integer())},
                          {"in_flight_seq", OrNull(Integer())},
                          {"in_flight_op", String()},
                          {"doing", ArrayOf(activity, "what it was doing at the end")}});
  Json variant = Object({{"value", String()}, {"ranks", ArrayOf(String())}});
  Json culprit = Object(
      {{"rank", Integer()},
       {"label", String()},
       {"node", String()},
       {"pid", Integer()},
       {"kind", String("waits_in_nothing | stuck_alone | mismatched | in_cycle | no_record | "
                       "ring_wrapped")},
       {"evidence", String("in words")},
       {"op", String("the operation it is in, or the last it entered where it is waited for")},
       {"seq", OrNull(Integer())},
       {"process_group", String()},
       {"state", String()},
       {"idle_ns", Integer("its last entry to the latest time recorded; -1: unknown")},
       {"waited_by", ArrayOf(Integer(), "ranks waiting for it directly")}});
  Json edge = Object({{"from", Integer()},
                      {"op", String()},
                      {"seq", Integer()},
                      {"p2p", Boolean()},
                      {"process_group", String()},
                      {"to", ArrayOf(Integer())}});
  Json mismatch = Object({{"comm_id_hash", Integer()},
                          {"comm_id_hex", String()},
                          {"process_group", String("Flight Recorder mismatches: its process "
                                                   "group; '' otherwise")},
                          {"seq", Integer()},
                          {"field", String("op | count | datatype | root")},
                          {"variants", ArrayOf(variant)}});
  return Object(
      {{"detected", Boolean()},
       {"comm_id_hash", OrNull(Integer("the stuck communicator as stored (signed 64-bit)"))},
       {"comm_id_hex",
        String("the stuck communicator as the report prints it ('' without a hang)")},
       {"process_group", String("basis flight_recorder: the stuck process group ('process group 0 "
                                "(default_pg)'); '' otherwise")},
       {"seq", OrNull(Integer("the stuck collective's sequence number"))},
       {"op", String()},
       {"culprit_nodes", ArrayOf(String())},
       {"culprit_ranks", ArrayOf(Integer())},
       {"culprit_labels", ArrayOf(String())},
       {"waiting_ranks", ArrayOf(Integer())},
       {"stuck_for_ns", Integer()},
       {"summary", String()},
       {"confidence", String("high | medium | low | '' (no hang)")},
       {"basis", String("device | host_call | host_enqueue | flight_recorder | ''")},
       {"progress", ArrayOf(progress, "every rank's state at the stuck collective")},
       {"mismatches", ArrayOf(mismatch, "op/count/datatype/root that differ at one sequence")},
       {"kind", String("hang | deadlock | mismatch | stuck_in_op | undetermined | none")},
       {"reason", String("undetermined, none, stuck_in_op: why, in words")},
       {"culprits", ArrayOf(culprit, "every rank where the waiting chains end, with its evidence")},
       {"chains", ArrayOf(String(), "the waiting chains in words")},
       {"cycles", ArrayOf(ArrayOf(Integer()), "ranks waiting for each other (deadlocks)")},
       {"edges", ArrayOf(edge, "the wait-for graph (at most 2000)")},
       {"edges_total", Integer("edges in the graph")}});
}

Json RankStats() {
  return Object({{"node", String()},
                 {"rank", OrNull(Integer())},
                 {"pid", OrNull(Integer())},
                 {"collectives", Integer()},
                 {"last_count", Integer("collectives it arrived last at")},
                 {"median_lateness_ns", Integer()},
                 {"p90_lateness_ns", Integer()},
                 {"median_duration_ns", OrNull(Integer())},
                 {"median_host_lateness_ns", Integer()},
                 {"device_collectives", Integer()},
                 {"wait_collectives", Integer()},
                 {"median_wait_lateness_ns", OrNull(Integer())},
                 {"wait_last_count", Integer()}});
}

}  // namespace rs::analyzer::mcp::schema
