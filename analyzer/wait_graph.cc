#include "analyzer/wait_graph.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "analyzer/wait_internal.h"
#include "analyzer/wait_words.h"

namespace rs::analyzer::wait {
namespace {

// Rule 7: at most this many mismatches are listed (each one a line of the report); all of
// them still decide the culprits.
constexpr size_t kMaxMismatches = 20;

bool Open(Outcome o) { return o == Outcome::kPending || o == Outcome::kFailed; }

// Rule 5: an entry whose outcome the record cannot tell, of a collective a member provably
// never entered, failed.
void PromoteEnded(Index& ix) {
  for (size_t ri = 0; ri < ix.in.ranks.size(); ++ri) {
    const Rank& r = ix.in.ranks[ri];
    for (size_t k = 0; k < r.ops.size(); ++k) {
      const Op& o = r.ops[k];
      if (o.p2p || ix.outcome[ri][k] != Outcome::kEnded) continue;
      for (int64_t m : ix.in.groups[o.group].members) {
        if (m != r.rank && ix.ProvesNotReached(m, o.group, o.seq)) {
          ix.outcome[ri][k] = Outcome::kFailed;
          break;
        }
      }
    }
  }
}

// Rule 12: a collective of a group that some member completed was entered by every member,
// and a member's earlier collectives of the group completed before it (one stream, in order):
// open ones in an older record were completed after that record was taken.
void SettleStale(Index& ix, Result& out) {
  int settled = 0;
  for (size_t ri = 0; ri < ix.in.ranks.size(); ++ri) {
    if (ix.record_older[ri]) out.records_older.push_back(ix.in.ranks[ri].rank);
    for (const auto& [g, ops] : ix.collectives[ri]) {
      auto done = ix.completed_through.find(g);
      if (done == ix.completed_through.end()) continue;
      for (size_t k : ops) {
        if (ix.in.ranks[ri].ops[k].seq >= done->second) break;
        if (ix.outcome[ri][k] != Outcome::kPending) continue;
        ix.outcome[ri][k] = Outcome::kCompleted;
        ++settled;
      }
    }
  }
  std::sort(out.records_older.begin(), out.records_older.end());
  out.settled = settled;
  if (settled == 0 && out.records_older.empty()) return;
  ix.skewed = true;
  std::string note = "the records were taken at different moments: ";
  if (!out.records_older.empty()) {
    note += WentOnPhrase(out.records_older) + ": the job ran on between the records";
  }
  if (settled > 0) {
    note += std::string(out.records_older.empty() ? "" : "; ") + std::to_string(settled) +
            " operation(s) open in a record are completed, as a member completed a later "
            "collective of that group";
  }
  out.notes.push_back(note);
}

// Rule 1: per rank, the earliest open collective of each group and every open send/recv
// (the earliest per peer and direction).
std::vector<std::vector<size_t>> OpenOps(const Index& ix) {
  std::vector<std::vector<size_t>> open(ix.in.ranks.size());
  for (size_t ri = 0; ri < ix.in.ranks.size(); ++ri) {
    const Rank& r = ix.in.ranks[ri];
    for (const auto& [g, ops] : ix.collectives[ri]) {
      for (size_t k : ops) {
        if (Open(ix.outcome[ri][k])) {
          open[ri].push_back(k);
          break;
        }
      }
    }
    std::set<std::tuple<size_t, int64_t, rs::NcclOp>> seen;
    std::vector<size_t> p2p;
    for (size_t k = 0; k < r.ops.size(); ++k) {
      if (r.ops[k].p2p && Open(ix.outcome[ri][k])) p2p.push_back(k);
    }
    std::sort(p2p.begin(), p2p.end(), [&](size_t a, size_t b) {
      return std::tie(r.ops[a].group, r.ops[a].seq) < std::tie(r.ops[b].group, r.ops[b].seq);
    });
    for (size_t k : p2p) {
      const Op& o = r.ops[k];
      if (seen.insert({o.group, o.peer.value_or(-1), o.op}).second) open[ri].push_back(k);
    }
  }
  return open;
}

// Rule 3: the peer holds an open counterpart towards `rank` in the group.
bool Matched(const Index& ix, const std::vector<std::vector<size_t>>& open, int64_t rank,
             const Op& o) {
  auto pi = ix.Find(*o.peer);
  if (!pi) return false;
  const rs::NcclOp want = o.op == rs::NcclOp::kSend ? rs::NcclOp::kRecv : rs::NcclOp::kSend;
  for (size_t k : open[*pi]) {
    const Op& q = ix.in.ranks[*pi].ops[k];
    if (q.p2p && q.group == o.group && q.op == want && q.peer == rank) return true;
  }
  return false;
}

// Rules 2 and 3: the edges of every open operation.
std::vector<Edge> Edges(const Index& ix, const std::vector<std::vector<size_t>>& open) {
  std::vector<Edge> edges;
  std::map<std::pair<size_t, int64_t>, std::vector<int64_t>> behind;  // (group, seq) -> members
  for (size_t ri = 0; ri < ix.in.ranks.size(); ++ri) {
    const Rank& r = ix.in.ranks[ri];
    for (size_t k : open[ri]) {
      const Op& o = r.ops[k];
      Edge e{r.rank, k, {}};
      if (!o.p2p) {
        auto key = std::make_pair(o.group, o.seq);
        auto it = behind.find(key);
        if (it == behind.end()) {
          std::vector<int64_t> not_there;
          for (int64_t m : ix.in.groups[o.group].members) {
            if (!ix.Reached(m, o.group, o.seq)) not_there.push_back(m);
          }
          it = behind.emplace(key, std::move(not_there)).first;
        }
        for (int64_t m : it->second) {
          if (m != r.rank) e.to.push_back(m);
        }
      } else if (o.peer && *o.peer != r.rank && !Matched(ix, open, r.rank, o) &&
                 ix.CounterpartOutcome(r.rank, o) != Outcome::kCompleted) {
        // Rule 11: a peer that completed this very transfer's other side did its part; the
        // wait is in the transfer itself (rule 8) or a mismatch, not behind the peer.
        e.to.push_back(*o.peer);
      }
      if (!e.to.empty()) edges.push_back(std::move(e));
    }
  }
  return edges;
}

// Strongly connected components of the rank graph (Tarjan, iterative), each listed once.
std::vector<std::vector<int64_t>> Components(const std::map<int64_t, std::set<int64_t>>& adj) {
  std::map<int64_t, int> index, low;
  std::set<int64_t> on_stack;
  std::vector<int64_t> stack;
  std::vector<std::vector<int64_t>> out;
  int counter = 0;
  static const std::set<int64_t> kNone;
  auto next_of = [&](int64_t v) -> const std::set<int64_t>& {
    auto it = adj.find(v);
    return it == adj.end() ? kNone : it->second;
  };
  for (const auto& [root, unused] : adj) {
    if (index.count(root)) continue;
    // (node, iterator position into its successors)
    std::vector<std::pair<int64_t, std::set<int64_t>::const_iterator>> call;
    auto enter = [&](int64_t v) {
      index[v] = low[v] = counter++;
      stack.push_back(v);
      on_stack.insert(v);
      call.emplace_back(v, next_of(v).begin());
    };
    enter(root);
    while (!call.empty()) {
      auto& [v, it] = call.back();
      if (it != next_of(v).end()) {
        const int64_t w = *it++;
        if (!index.count(w)) {
          enter(w);
        } else if (on_stack.count(w)) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      const int64_t done = v;
      call.pop_back();
      if (!call.empty()) low[call.back().first] = std::min(low[call.back().first], low[done]);
      if (low[done] == index[done]) {
        std::vector<int64_t> comp;
        int64_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack.erase(w);
          comp.push_back(w);
        } while (w != done);
        std::sort(comp.begin(), comp.end());
        out.push_back(std::move(comp));
      }
    }
  }
  return out;
}

// How a cycle's ranks end: a deadlock (rule 7), unless rule 12 finds no proof of one — the
// records taken at different moments, or a wait whose peer's record cannot show it never did
// its part (above) — and no wait in the cycle ran out its timeout (rule 6); an unproven one
// must also be brief. A long or timed-out wait on an unproven edge stays a deadlock, of low
// confidence (wait_verdict.cc): had the peer completed the counterpart, the data would be
// there, so only a transfer that stalled between them is the other reading.
EndKind CycleKind(const Index& ix, const std::vector<Edge>& edges,
                  const std::map<int64_t, size_t>& comp_of, size_t c, bool* unproven) {
  bool timed_out = false, brief = true;
  *unproven = false;
  auto in_cycle = [&](int64_t r) {
    auto it = comp_of.find(r);
    return it != comp_of.end() && it->second == c;
  };
  for (const Edge& e : edges) {
    if (!in_cycle(e.from)) continue;
    timed_out = timed_out || ix.TimedOut(e);
    brief = brief && ix.BriefWait(*ix.Find(e.from), e.op);
    for (int64_t t : e.to) *unproven = *unproven || (in_cycle(t) && !ix.ProvesUnanswered(e, t));
  }
  if (timed_out) return EndKind::kInCycle;
  if (*unproven && brief) return EndKind::kCycleUnproven;
  return ix.skewed ? EndKind::kRecordOlder : EndKind::kInCycle;
}

}  // namespace

bool IsCulprit(EndKind k) {
  return k != EndKind::kStuckTogether && k != EndKind::kUnattributed &&
         k != EndKind::kRecordOlder && k != EndKind::kCycleUnproven;
}

const char* EndKindName(EndKind k) {
  switch (k) {
    case EndKind::kWaitsInNothing:
      return "waits_in_nothing";
    case EndKind::kStuckAlone:
      return "stuck_alone";
    case EndKind::kMismatched:
      return "mismatched";
    case EndKind::kInCycle:
      return "in_cycle";
    case EndKind::kNoRecord:
      return "no_record";
    case EndKind::kRingWrapped:
      return "ring_wrapped";
    case EndKind::kStuckTogether:
      return "stuck_together";
    case EndKind::kUnattributed:
      return "unattributed";
    case EndKind::kRecordOlder:
      return "record_older";
    case EndKind::kCycleUnproven:
      return "cycle_unproven";
  }
  return "";
}

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kNone:
      return "none";
    case Verdict::kHang:
      return "hang";
    case Verdict::kDeadlock:
      return "deadlock";
    case Verdict::kMismatch:
      return "mismatch";
    case Verdict::kStuckInOp:
      return "stuck_in_op";
    case Verdict::kUndetermined:
      return "undetermined";
  }
  return "";
}

bool IsCallOf(const FieldMismatch& m, int64_t rank, const Op& o) {
  if (m.group != o.group || m.p2p != o.p2p) return false;
  if (!m.p2p) return o.seq == m.seq;
  if (o.pair_seq != m.seq || !o.peer) return false;
  if (o.op == rs::NcclOp::kSend) return rank == m.sender && *o.peer == m.receiver;
  return o.op == rs::NcclOp::kRecv && rank == m.receiver && *o.peer == m.sender;
}

Result Analyze(const Input& in) {
  Result out;
  Index ix(in);
  out.latest_ns = ix.latest_ns;
  PromoteEnded(ix);
  SettleStale(ix, out);
  out.mismatches = FindMismatches(ix);
  const std::vector<std::vector<size_t>> open = OpenOps(ix);
  out.edges = Edges(ix, open);

  std::map<int64_t, std::set<int64_t>> adj;  // every rank with an open operation or an edge
  std::map<int64_t, std::vector<int64_t>> waited_by;
  for (size_t ri = 0; ri < in.ranks.size(); ++ri) {
    if (!open[ri].empty()) adj[in.ranks[ri].rank];
  }
  for (const Edge& e : out.edges) {
    for (int64_t t : e.to) {
      adj[e.from].insert(t);
      adj[t];
      waited_by[t].push_back(e.from);
    }
  }
  for (auto& [t, from] : waited_by) {
    std::sort(from.begin(), from.end());
    from.erase(std::unique(from.begin(), from.end()), from.end());
  }
  std::set<int64_t> waiting;
  for (const Edge& e : out.edges) waiting.insert(e.from);
  out.waiting.assign(waiting.begin(), waiting.end());

  std::map<int64_t, size_t> comp_of;
  const std::vector<std::vector<int64_t>> comps = Components(adj);
  for (size_t c = 0; c < comps.size(); ++c) {
    for (int64_t r : comps[c]) comp_of[r] = c;
  }
  for (const auto& comp : comps) {
    if (comp.size() > 1) out.cycles.push_back(comp);
  }
  const EndsContext ctx{ix, open, out.edges, waited_by, out.mismatches};
  for (size_t c = 0; c < comps.size(); ++c) {
    bool sink = true;
    for (int64_t r : comps[c]) {
      for (int64_t t : adj[r]) sink = sink && comp_of[t] == c;
    }
    if (comps[c].size() > 1) {
      bool unproven = false;
      const EndKind kind = CycleKind(ix, out.edges, comp_of, c, &unproven);
      out.cycle_unproven = out.cycle_unproven || (kind == EndKind::kInCycle && unproven);
      for (int64_t r : comps[c]) out.ends.push_back(MakeEnd(ctx, r, kind));
    } else if (sink) {
      out.ends.push_back(ClassifySink(ctx, comps[c][0]));
    }
  }
  Decide(ctx, out);
  return out;
}

}  // namespace rs::analyzer::wait
