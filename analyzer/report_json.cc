#include "analyzer/collectives.h"
#include "analyzer/report_format.h"
#include "analyzer/report_render.h"
#include "rscore/comm_hash.h"
#include "rscore/json.h"
#include "rscore/time_arg.h"

namespace rs::analyzer {
namespace {

void Values(rs::JsonWriter& w, const std::vector<Value>& values) {
  w.Key("values").BeginObject();
  for (const auto& [k, v] : values) w.Key(k).Double(v);
  w.EndObject();
}

void OptInt(rs::JsonWriter& w, const std::optional<int64_t>& v) {
  if (v) {
    w.Int(*v);
  } else {
    w.Null();
  }
}

void Stats(rs::JsonWriter& w, const std::vector<ArrivalStats>& stats, bool with_rank) {
  w.BeginArray();
  for (const ArrivalStats& s : stats) {
    w.BeginObject().Key("node").String(s.node);
    if (with_rank) {
      w.Key("rank");
      OptInt(w, s.rank);
      w.Key("pid");
      OptInt(w, s.pid);
    }
    w.Key("collectives").Int(s.collectives).Key("last_count").Int(s.last_count);
    w.Key("median_lateness_ns").Int(s.median_lateness_ns);
    w.Key("p90_lateness_ns").Int(s.p90_lateness_ns);
    w.Key("median_duration_ns");
    if (s.median_duration_ns >= 0) {
      w.Int(s.median_duration_ns);
    } else {
      w.Null();
    }
    w.Key("median_host_lateness_ns").Int(s.median_host_lateness_ns);
    w.Key("device_collectives").Int(s.device_collectives);
    w.Key("wait_collectives").Int(s.wait_collectives);
    w.Key("median_wait_lateness_ns");
    if (s.median_wait_lateness_ns >= 0) {
      w.Int(s.median_wait_lateness_ns);
    } else {
      w.Null();
    }
    w.Key("wait_last_count").Int(s.wait_last_count);
    if (!with_rank) {  // per node: against the other nodes in the same collectives
      for (const auto& [prefix, p] :
           {std::pair{"paired_", &s.paired}, {"paired_wait_", &s.paired_wait}}) {
        const std::string k = prefix;
        w.Key(k + "collectives").Int(p->collectives).Key(k + "excess_ns").Int(p->excess_ns);
        w.Key(k + "excess_se_ns").Int(p->noise_ns).Key(k + "latest_count").Int(p->latest);
        w.Key(k + "latest_z").Double(p->latest_z);
        w.Key(k + "onset");  // when it became later (collectives.h FindOnset); null: no change
        if (p->onset) {
          w.BeginObject().Key("at_ns").Int(p->onset->at_ns);
          w.Key("before_ns").Int(p->onset->before_ns).Key("after_ns").Int(p->onset->after_ns);
          w.Key("before").Int(p->onset->before).Key("after").Int(p->onset->after);
          w.Key("t").Double(p->onset->t);
          const PairedExcess& a = p->onset->since;  // from at_ns on, as over the whole above
          w.Key("since_excess_ns").Int(a.excess_ns).Key("since_excess_se_ns").Int(a.noise_ns);
          w.Key("since_latest_count").Int(a.latest).Key("since_latest_z").Double(a.latest_z);
          w.EndObject();
        } else {
          w.Null();
        }
      }
    }
    w.EndObject();
  }
  w.EndArray();
}

void Groups(rs::JsonWriter& w, const std::vector<GroupView>& groups) {
  w.BeginArray();
  for (const GroupView& g : groups) {
    w.BeginObject().Key("communicator").String(rs::HashHex(g.comm)).Key("label").String(g.label);
    w.Key("basis").String(g.basis).Key("collectives").Int(g.collectives);
    w.Key("median_duration_ns");
    if (g.median_duration_ns >= 0) {
      w.Int(g.median_duration_ns);
    } else {
      w.Null();
    }
    w.Key("members").BeginArray();
    for (const GroupMember& m : g.members) {
      w.BeginObject().Key("node").String(m.node).Key("rank");
      OptInt(w, m.rank);
      w.Key("pid").Int(m.pid).Key("collectives").Int(m.collectives);
      w.Key("last_count").Int(m.last_count).Key("median_lateness_ns").Int(m.median_lateness_ns);
      w.Key("excess_ns").Int(m.excess_ns).Key("excess_se_ns").Int(m.excess_se_ns);
      w.EndObject();
    }
    w.EndArray().EndObject();
  }
  w.EndArray();
}

// Verdicts and observations alike.
void Findings(rs::JsonWriter& w, const std::vector<Straggler>& findings) {
  w.BeginArray();
  for (const Straggler& s : findings) {
    w.BeginObject().Key("node").String(s.node).Key("rank");
    OptInt(w, s.rank);
    w.Key("pid");
    OptInt(w, s.pid);
    w.Key("ranks").BeginArray();
    for (int64_t rank : s.ranks) w.Int(rank);
    w.EndArray().Key("pids").BeginArray();
    for (int64_t pid : s.pids) w.Int(pid);
    w.EndArray();
    w.Key("cause").String(s.cause).Key("confidence").String(ConfidenceName(s.confidence));
    w.Key("confidence_score").Double(s.confidence_score);
    w.Key("ordering_determined").Bool(s.ordering_determined);
    w.Key("clock_bound_ns").Int(s.clock_bound_ns);
    w.Key("basis").String(s.basis).Key("arrival_basis").String(s.arrival_basis);
    w.Key("shape").String(s.shape).Key("summary").String(s.summary);
    w.Key("causes").BeginArray();
    for (const Cause& c : s.causes) {
      w.BeginObject().Key("kind").String(c.kind).Key("score").Double(c.score);
      w.Key("summary").String(c.summary).Key("remediation").String(c.remediation);
      Values(w, c.values);
      w.EndObject();
    }
    w.EndArray().Key("evidence").BeginArray();
    for (const Evidence& e : s.evidence) {
      w.BeginObject().Key("kind").String(e.kind).Key("summary").String(e.summary);
      Values(w, e.values);
      w.EndObject();
    }
    w.EndArray().Key("competitors").BeginArray();
    for (const Competitor& c : s.competitors) {
      w.BeginObject().Key("comm").String(c.comm).Key("pid").Int(c.pid);
      w.Key("ran_ns").Int(c.ran_ns).EndObject();
    }
    w.EndArray().Key("late_arrivals").BeginArray();
    for (const LateArrival& a : s.late_arrivals) {
      // A CUDA graph replay has no call's seq: its number among the replays instead.
      const bool replay = a.seq >= kGraphReplaySeqBase;
      w.BeginObject().Key("comm_id_hex").String(rs::HashHex(a.comm)).Key("seq");
      OptInt(w, replay ? std::nullopt : std::optional<int64_t>(a.seq));
      w.Key("graph_replay");
      OptInt(w, replay ? std::optional<int64_t>(a.seq - kGraphReplaySeqBase) : std::nullopt);
      w.Key("op").String(a.op).Key("pid").Int(a.pid).Key("rank");
      OptInt(w, a.rank);
      w.Key("arrival_ns").Int(a.arrival_ns).Key("behind_first_ns").Int(a.behind_first_ns);
      w.EndObject();
    }
    w.EndArray().Key("late_arrivals_total").Int(s.late_arrivals_total).EndObject();
  }
  w.EndArray();
}

void Ints(rs::JsonWriter& w, const std::vector<int64_t>& v) {
  w.BeginArray();
  for (int64_t x : v) w.Int(x);
  w.EndArray();
}

// The hang engine's view (wait_graph.h): its class, every culprit with its evidence, the chains
// in words, the cycles and the edges of the wait-for graph.
void HangGraph(rs::JsonWriter& w, const HangReport& h) {
  w.Key("kind").String(h.kind.empty() ? (h.detected ? "hang" : "none") : h.kind);
  w.Key("reason").String(h.reason).Key("culprits").BeginArray();
  for (const HangCulprit& c : h.culprits) {
    w.BeginObject().Key("rank").Int(c.rank).Key("label").String(c.label);
    w.Key("node").String(c.node).Key("pid").Int(c.pid).Key("kind").String(c.kind);
    w.Key("evidence").String(c.evidence).Key("op").String(c.op).Key("seq");
    OptInt(w, c.seq);
    w.Key("process_group").String(c.process_group).Key("state").String(c.state);
    w.Key("idle_ns").Int(c.idle_ns).Key("waited_by");
    Ints(w, c.waited_by);
    w.EndObject();
  }
  w.EndArray().Key("chains").BeginArray();
  for (const std::string& c : h.chains) w.String(c);
  w.EndArray().Key("cycles").BeginArray();
  for (const auto& c : h.cycles) Ints(w, c);
  w.EndArray().Key("edges").BeginArray();
  for (const HangEdge& e : h.edges) {
    w.BeginObject().Key("from").Int(e.from).Key("op").String(e.op).Key("seq").Int(e.seq);
    w.Key("p2p").Bool(e.p2p).Key("process_group").String(e.process_group).Key("to");
    Ints(w, e.to);
    w.EndObject();
  }
  w.EndArray().Key("edges_total").Int(static_cast<int64_t>(h.edges_total));
}

void Hang(rs::JsonWriter& w, const HangReport& h) {
  w.BeginObject().Key("detected").Bool(h.detected);
  w.Key("comm_id_hash");
  // As stored in the database (signed 64-bit), so `WHERE comm_id_hash = ...` matches. A
  // Flight Recorder process group no recorded communicator matches has none.
  const bool comm = h.detected && (h.comm_id_hash != 0 || h.basis != "flight_recorder");
  if (comm) {
    w.Int(static_cast<int64_t>(h.comm_id_hash));
  } else {
    w.Null();
  }
  w.Key("comm_id_hex").String(comm ? rs::HashHex(h.comm_id_hash) : "");
  w.Key("process_group").String(h.process_group);
  w.Key("seq");
  if (h.detected) {
    w.Int(h.seq);
  } else {
    w.Null();
  }
  w.Key("op").String(h.op);
  w.Key("culprit_nodes").BeginArray();
  for (const auto& n : h.culprit_nodes) w.String(n);
  w.EndArray().Key("culprit_ranks").BeginArray();
  for (int64_t r : h.culprit_ranks) w.Int(r);
  w.EndArray().Key("culprit_labels").BeginArray();
  for (const auto& l : h.culprit_labels) w.String(l);
  w.EndArray().Key("waiting_ranks").BeginArray();
  for (int64_t r : h.waiting_ranks) w.Int(r);
  w.EndArray();
  w.Key("stuck_for_ns").Int(h.stuck_for_ns).Key("summary").String(h.summary);
  w.Key("confidence").String(HangConfidence(h)).Key("basis").String(h.basis);
  w.Key("progress").BeginArray();
  for (const RankProgress& p : h.progress) {
    w.BeginObject().Key("node").String(p.node).Key("rank");
    OptInt(w, p.rank);
    w.Key("pid").Int(p.pid).Key("state").String(p.state);
    w.Key("state_basis").String(p.state_basis).Key("last_entered_seq");
    OptInt(w, p.last_entered_seq);
    w.Key("last_started_seq");
    OptInt(w, p.last_started_seq);
    w.Key("last_completed_seq");
    OptInt(w, p.last_completed_seq);
    w.Key("in_flight_seq");
    OptInt(w, p.in_flight_seq);
    w.Key("in_flight_op").String(p.in_flight_op);
    w.Key("doing").BeginArray();
    for (const Activity& a : p.doing) {
      w.BeginObject().Key("kind").String(a.kind).Key("what").String(a.what).Key("seq");
      OptInt(w, a.seq);
      w.Key("timestamp_ns").Int(a.timestamp_ns).Key("duration_ns");
      OptInt(w, a.duration_ns);
      w.Key("state").String(a.state).Key("exit_code");
      OptInt(w, a.exit_code);
      w.Key("stack").String(a.stack).EndObject();
    }
    w.EndArray().EndObject();
  }
  w.EndArray().Key("mismatches").BeginArray();
  for (const Mismatch& m : h.mismatches) {
    w.BeginObject().Key("comm_id_hash").Int(static_cast<int64_t>(m.comm_id_hash));
    w.Key("comm_id_hex").String(rs::HashHex(m.comm_id_hash));
    w.Key("process_group").String(m.process_group);
    w.Key("seq").Int(m.seq);
    w.Key("sender");
    OptInt(w, m.sender);
    w.Key("receiver");
    OptInt(w, m.receiver);
    w.Key("field").String(m.field).Key("variants").BeginArray();
    for (const auto& [value, who] : m.variants) {
      w.BeginObject().Key("value").String(value).Key("ranks").BeginArray();
      for (const auto& l : who) w.String(l);
      w.EndArray().EndObject();
    }
    w.EndArray().EndObject();
  }
  w.EndArray();
  HangGraph(w, h);
  w.EndObject();
}

}  // namespace

std::string RenderJson(const Report& r) {
  rs::JsonWriter w;
  w.BeginObject();
  w.Key("report_version").Int(1);
  w.Key("input").String(r.input).Key("db_kind").String(r.db_kind);
  w.Key("start_ns").Int(r.start_ns).Key("end_ns").Int(r.end_ns);
  w.Key("start_utc")
      .String(rs::FormatUtc(r.start_ns))
      .Key("end_utc")
      .String(rs::FormatUtc(r.end_ns));
  w.Key("verdict").String(r.verdict).Key("verdict_kind").String(r.verdict_kind);
  w.Key("warnings").BeginArray();
  for (const auto& x : r.warnings) w.String(x);
  w.EndArray();
  w.Key("nodes").BeginArray();
  for (const auto& n : r.nodes) w.String(n);
  w.EndArray();
  w.Key("ranks").Int(r.ranks).Key("collectives").Int(r.collectives);
  w.Key("nccl_calls").Int(r.nccl_calls);
  w.Key("unidentified_calls").Int(r.unidentified_calls);
  w.Key("stragglers");
  Findings(w, r.stragglers);
  w.Key("observations");
  Findings(w, r.observations);
  w.Key("hang");
  Hang(w, r.hang);
  w.Key("flight_recorder");
  if (const auto& fr = r.flight_recorder) {
    w.BeginObject().Key("dumps").Int(fr->dumps).Key("dumped_ranks").BeginArray();
    for (int64_t x : fr->dumped_ranks) w.Int(x);
    w.EndArray().Key("missing_ranks").BeginArray();
    for (int64_t x : fr->missing_ranks) w.Int(x);
    w.EndArray().Key("versions").BeginArray();
    for (const auto& v : fr->versions) w.String(v);
    w.EndArray().Key("unaligned_dumps").Int(fr->unaligned_dumps);
    w.Key("late_entries").BeginArray();
    for (const FrLateEntry& l : fr->late_entries) {
      w.BeginObject().Key("rank").Int(l.rank).Key("label").String(l.label);
      w.Key("last").Int(l.last).Key("collectives").Int(l.collectives);
      w.Key("median_behind_ns").Int(l.median_behind_ns).Key("by_duration").Int(l.by_duration);
      w.EndObject();
    }
    w.EndArray().Key("late_traced").BeginArray();
    for (const FrTracedEntry& t : fr->late_traced) {
      w.BeginObject().Key("rank").Int(t.rank).Key("label").String(t.label);
      w.Key("inherited").Int(t.inherited).Key("collectives").Int(t.collectives);
      w.Key("root").Int(t.root).Key("root_label").String(t.root_label).EndObject();
    }
    w.EndArray().Key("late_floor_ns").Int(fr->late_floor_ns);
    w.Key("late_by_duration").Int(fr->late_by_duration);
    w.Key("agreement").String(fr->agreement).Key("hang");
    Hang(w, fr->hang);
    w.EndObject();
  } else {
    w.Null();
  }
  w.Key("clock").BeginObject();
  for (const NodeClock& c : r.clock) {
    w.Key(c.node).BeginObject().Key("offset_ns").Int(c.offset_ns);
    w.Key("error_bound_ns").Int(c.error_bound_ns).Key("method").String(c.method);
    w.Key("rendezvous_count").Int(c.rendezvous_count).Key("evidence").String(c.evidence);
    w.EndObject();
  }
  w.EndObject();
  const Timing& t = r.timing;
  w.Key("timing").BeginObject().Key("arrival_basis").String(t.arrival_basis);
  w.Key("device_collectives").Int(t.device_collectives);
  w.Key("barrier_collectives").Int(t.barrier_collectives);
  w.Key("host_collectives").Int(t.host_collectives);
  w.Key("excluded_collectives").Int(t.excluded_collectives);
  w.Key("graph_replay_ops").Int(t.graph_replay_ops);
  w.Key("graph_captured_collectives").Int(t.graph_captured_collectives);
  w.Key("graph_replays_uncompared").Int(t.graph_replays_uncompared);
  w.Key("gpu_ops_table").Bool(t.gpu_ops_table).Key("device_ops").Int(t.device_ops);
  w.Key("call_semantics").String(t.call_semantics);
  w.Key("semantics_evidence").String(t.semantics_evidence);
  w.Key("call_modes_from").String(t.call_modes_from).Key("call_modes").BeginArray();
  for (const Timing::CallMode& m : t.call_modes) {
    w.BeginObject().Key("comm_id_hash").String(m.comm).Key("mode").String(m.mode);
    w.Key("evidence").String(m.evidence).EndObject();
  }
  w.EndArray().EndObject();
  w.Key("per_rank");
  Stats(w, r.per_rank, true);
  w.Key("per_node");
  Stats(w, r.per_node, false);
  w.Key("per_group");
  Groups(w, r.per_group);
  w.Key("across_groups").BeginArray();
  for (const RankAcrossGroups& a : r.across_groups) {
    w.BeginObject().Key("node").String(a.node).Key("rank");
    OptInt(w, a.rank);
    w.Key("pid").Int(a.pid).Key("groups").Int(a.groups).Key("latest_in").Int(a.latest_in);
    w.Key("excess_total_ns").Int(a.excess_total_ns).EndObject();
  }
  w.EndArray();
  w.Key("notes").BeginArray();
  for (const auto& n : r.notes) w.String(n);
  w.EndArray();
  w.EndObject();
  return w.str() + "\n";
}

}  // namespace rs::analyzer
