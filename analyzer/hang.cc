#include "hang.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "report_format.h"

namespace analyzer {
namespace {

// A collective every rank entered counts as hung only when it has been in flight this many
// times longer than the communicator's slowest completed calls (and at least kMinStuckNs):
// otherwise the recording may simply have ended while it ran.
constexpr int64_t kStuckFactor = 10;
constexpr int64_t kMinStuckNs = 100'000'000;
constexpr size_t kMaxMismatches = 20;

bool HasRoot(const std::string& op) { return op == "BROADCAST" || op == "BCAST" || op == "REDUCE"; }

void FindMismatches(const CollectiveData& data, const Collective& g, HangReport& out) {
  using Key = std::string;
  auto check = [&](const std::string& field, auto value_of) {
    std::map<Key, std::vector<std::string>> variants;
    for (size_t k = g.begin; k < g.end; ++k) {
      const NcclCall& c = data.calls[k];
      variants[value_of(c)].push_back(data.participants[c.participant].Label());
    }
    if (variants.size() < 2 || out.mismatches.size() >= kMaxMismatches) return;
    Mismatch m{g.comm, g.seq, field, {}};
    for (auto& [value, who] : variants) m.variants.emplace_back(value, std::move(who));
    out.mismatches.push_back(std::move(m));
  };
  check("op", [](const NcclCall& c) { return c.op; });
  check("count", [](const NcclCall& c) { return c.count ? std::to_string(*c.count) : "?"; });
  check("datatype", [](const NcclCall& c) { return c.datatype.empty() ? "?" : c.datatype; });
  if (HasRoot(data.calls[g.begin].op)) {
    check("root", [](const NcclCall& c) { return c.root ? std::to_string(*c.root) : "?"; });
  }
}

struct CommView {
  std::set<int32_t> members;
  int64_t nranks = 0;
  std::vector<int64_t> completed_durations;
  const Collective* stuck = nullptr;  // lowest seq with a call in flight
};

}  // namespace

HangReport AnalyzeHang(const CollectiveData& data, int64_t end_ns) {
  HangReport out;
  std::map<uint64_t, CommView> comms;
  for (const Collective& g : data.collectives) {
    CommView& v = comms[g.comm];
    bool in_flight = false;
    for (size_t k = g.begin; k < g.end; ++k) {
      const NcclCall& c = data.calls[k];
      v.members.insert(c.participant);
      if (c.nranks) v.nranks = std::max(v.nranks, *c.nranks);
      if (c.in_flight()) {
        in_flight = true;
      } else {
        v.completed_durations.push_back(c.dur);
      }
    }
    if (in_flight && !v.stuck) v.stuck = &g;
    if (g.matched()) FindMismatches(data, g, out);
  }
  // Pick the communicator whose stuck collective waits longest with ranks missing.
  const Collective* best = nullptr;
  const CommView* best_view = nullptr;
  std::vector<int32_t> best_missing;
  int64_t best_stuck_for = -1;
  bool best_absent = false;
  for (auto& [comm, v] : comms) {
    if (!v.stuck) continue;
    std::set<int32_t> entered;
    int64_t since = v.stuck->first_entry;
    for (size_t k = v.stuck->begin; k < v.stuck->end; ++k) {
      entered.insert(data.calls[k].participant);
    }
    std::vector<int32_t> missing;
    for (int32_t p : v.members) {
      if (!entered.count(p)) missing.push_back(p);
    }
    int64_t stuck_for = end_ns - since;
    int64_t slowest = v.completed_durations.empty() ? 0 : Quantile(v.completed_durations, 0.99);
    int64_t needed = std::max(kMinStuckNs, kStuckFactor * slowest);
    bool ranks_absent =
        !missing.empty() || (v.nranks > 0 && static_cast<int64_t>(entered.size()) < v.nranks);
    if (stuck_for < needed) continue;  // may just be the end of the recording
    if (!best || (ranks_absent && !best_absent) ||
        (ranks_absent == best_absent && stuck_for > best_stuck_for)) {
      best = v.stuck;
      best_view = &v;
      best_missing = missing;
      best_stuck_for = stuck_for;
      best_absent = ranks_absent;
    }
  }
  if (!best) {
    out.summary = "no hang: no collective was stuck in flight at the end of the recording";
    for (auto& [comm, v] : comms) {
      if (v.stuck) {
        out.summary =
            "no hang: collectives still in flight at the end of the recording had "
            "run too briefly to call them stuck";
      }
    }
    return out;
  }
  out.detected = true;
  out.comm_id_hash = best->comm;
  out.seq = best->seq;
  out.op = data.calls[best->begin].op;
  out.stuck_for_ns = best_stuck_for;
  std::set<int64_t> entered_ranks;
  for (size_t k = best->begin; k < best->end; ++k) {
    const NcclCall& c = data.calls[k];
    if (c.rank) entered_ranks.insert(*c.rank);
    if (c.in_flight() && c.rank) out.waiting_ranks.push_back(*c.rank);
  }
  std::set<std::string> nodes;
  for (int32_t p : best_missing) {
    const Participant& who = data.participants[p];
    nodes.insert(who.node);
    out.culprit_labels.push_back(who.Label());
    // The rank in this communicator, from its earlier calls.
    for (const NcclCall& c : data.calls) {
      if (c.participant == p && c.comm == best->comm && c.rank) {
        out.culprit_ranks.push_back(*c.rank);
        entered_ranks.insert(*c.rank);
        break;
      }
    }
  }
  // Ranks that no recording ever saw in this communicator.
  for (int64_t r = 0; r < best_view->nranks; ++r) {
    if (entered_ranks.count(r)) continue;
    out.culprit_ranks.push_back(r);
    out.culprit_labels.push_back("rank " + std::to_string(r) + " (no recording saw it)");
  }
  // Every rank entered: the culprit is whoever called something else at that sequence.
  if (out.culprit_labels.empty()) {
    for (const Mismatch& m : out.mismatches) {
      if (m.comm_id_hash != best->comm || m.seq != best->seq) continue;
      auto minority = std::min_element(
          m.variants.begin(), m.variants.end(),
          [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
      for (const std::string& label : minority->second) out.culprit_labels.push_back(label);
    }
    for (size_t k = best->begin; k < best->end; ++k) {
      const NcclCall& c = data.calls[k];
      const std::string label = data.participants[c.participant].Label();
      if (std::find(out.culprit_labels.begin(), out.culprit_labels.end(), label) !=
          out.culprit_labels.end()) {
        nodes.insert(data.participants[c.participant].node);
        if (c.rank) out.culprit_ranks.push_back(*c.rank);
      }
    }
  }
  out.culprit_nodes.assign(nodes.begin(), nodes.end());
  std::sort(out.waiting_ranks.begin(), out.waiting_ranks.end());
  // Progress of every member of the stuck communicator.
  for (int32_t p : best_view->members) {
    RankProgress r;
    const Participant& who = data.participants[p];
    r.node = who.node;
    r.pid = who.pid;
    for (const NcclCall& c : data.calls) {
      if (c.participant != p || c.comm != best->comm) continue;
      if (c.rank) r.rank = c.rank;
      r.last_entered_seq = std::max(r.last_entered_seq.value_or(c.seq), c.seq);
      if (!c.in_flight()) {
        r.last_completed_seq = std::max(r.last_completed_seq.value_or(c.seq), c.seq);
      } else if (!r.in_flight_seq || c.seq < *r.in_flight_seq) {
        r.in_flight_seq = c.seq;
        r.in_flight_op = c.op;
        r.in_flight_since_ns = c.ts;
      }
    }
    if (!r.rank) r.rank = who.rank;
    out.progress.push_back(std::move(r));
  }
  std::sort(out.progress.begin(), out.progress.end(),
            [](const RankProgress& a, const RankProgress& b) {
              return std::make_tuple(a.node, a.rank.value_or(-1), a.pid) <
                     std::make_tuple(b.node, b.rank.value_or(-1), b.pid);
            });
  std::string who = out.culprit_labels.empty() ? "no single rank" : "";
  for (size_t i = 0; i < out.culprit_labels.size(); ++i) {
    who += (i ? ", " : "") + out.culprit_labels[i];
  }
  out.summary = std::to_string(out.waiting_ranks.size()) + " rank(s) stuck in " + out.op + " seq " +
                std::to_string(out.seq) + " of communicator " + FormatHash(out.comm_id_hash) +
                " for " + FormatNs(out.stuck_for_ns) + "; never entered: " + who;
  if (best_missing.empty() && !out.culprit_labels.empty()) {
    out.summary = std::to_string(out.waiting_ranks.size()) + " rank(s) stuck in " + out.op +
                  " seq " + std::to_string(out.seq) + " of communicator " +
                  FormatHash(out.comm_id_hash) + " for " + FormatNs(out.stuck_for_ns) +
                  "; mismatched call by: " + who;
  }
  return out;
}

Straggler HangStraggler(const HangReport& hang, const CollectiveData& data, size_t culprit) {
  Straggler s;
  const std::string& label = hang.culprit_labels[culprit];
  for (const Participant& p : data.participants) {
    if (p.Label() == label) {
      s.node = p.node;
      s.rank = p.rank;
      s.pid = p.pid;
    }
  }
  if (s.node.empty() && culprit < hang.culprit_ranks.size()) s.rank = hang.culprit_ranks[culprit];
  if (s.rank) s.ranks.push_back(*s.rank);
  s.cause = "hang";
  s.confidence = "high";
  s.confidence_score = 1.0;
  s.basis = "NCCL calls still in flight at the end of the recording (duration NULL)";
  s.summary = label + " never entered " + hang.op + " seq " + std::to_string(hang.seq) +
              " that the other ranks are stuck in";
  Cause c;
  c.kind = "hang";
  c.score = 1.0;
  c.summary = hang.summary;
  c.remediation = "dump the stacks of " + label +
                  " (py-spy dump, gdb -p PID, or the framework's flight recorder): it is "
                  "stuck before the collective, took a different code path, or died; the "
                  "waiting ranks only time out";
  c.values = {{"seq", static_cast<double>(hang.seq)},
              {"stuck_for_ns", static_cast<double>(hang.stuck_for_ns)},
              {"waiting_ranks", static_cast<double>(hang.waiting_ranks.size())}};
  s.causes.push_back(c);
  Evidence e;
  e.kind = "hang";
  e.summary = hang.summary;
  e.values = c.values;
  s.evidence.push_back(std::move(e));
  return s;
}

}  // namespace analyzer
