// The ends of the waiting chains and the verdict on them (wait_graph.h, rules 4 and 7 to 10).
#include <algorithm>
#include <set>

#include "analyzer/wait_internal.h"
#include "analyzer/wait_words.h"

namespace rs::analyzer::wait {
namespace {

const Edge* FirstEdgeInto(const EndsContext& ctx, int64_t rank) {
  for (const Edge& e : ctx.edges) {
    if (std::find(e.to.begin(), e.to.end(), rank) != e.to.end()) return &e;
  }
  return nullptr;
}

const Op& EdgeOp(const EndsContext& ctx, const Edge& e) {
  return ctx.ix.in.ranks[*ctx.ix.Find(e.from)].ops[e.op];
}

// Rule 4: some edge into the rank rests on its record proving it never entered the operation.
bool ProvenAbsent(const EndsContext& ctx, int64_t rank) {
  for (const Edge& e : ctx.edges) {
    if (std::find(e.to.begin(), e.to.end(), rank) == e.to.end()) continue;
    const Op& o = EdgeOp(ctx, e);
    if (o.p2p || ctx.ix.ProvesNotReached(rank, o.group, o.seq)) return true;
  }
  return false;
}

// The mismatch that explains an operation of the group stuck at seq: at that seq, else the
// latest before it. NCCL has every rank pass one count, datatype and op to a collective (its
// API documentation) and does not check them: a mismatched call may complete with wrong data
// and leave the group's later collectives waiting for bytes that never come (the test bed's
// CPU NCCL: a half-size tp all-reduce at seq 97 completed on both ranks, one rank then stuck
// at seq 128).
const FieldMismatch* MismatchAt(const EndsContext& ctx, size_t group, int64_t seq) {
  const FieldMismatch* before = nullptr;
  for (const FieldMismatch& m : ctx.mismatches) {
    if (m.p2p || m.group != group || m.seq > seq) continue;
    if (m.seq == seq) return &m;
    if (!before || m.seq > before->seq) before = &m;
  }
  return before;
}

// Rule 11: the mismatch of a pair on the connection a send or receive of `rank` uses (the
// sender's transfers to the receiver), at its place or earlier: a pair that differed shifts
// every later transfer on that connection.
const FieldMismatch* P2pMismatchOn(const EndsContext& ctx, int64_t rank, const Op& o) {
  if (!o.p2p || !o.peer || !o.pair_seq) return nullptr;
  if (o.op != rs::NcclOp::kSend && o.op != rs::NcclOp::kRecv) return nullptr;
  const int64_t sender = o.op == rs::NcclOp::kSend ? rank : *o.peer;
  const int64_t receiver = o.op == rs::NcclOp::kSend ? *o.peer : rank;
  const FieldMismatch* found = nullptr;
  for (const FieldMismatch& m : ctx.mismatches) {
    if (!m.p2p || m.group != o.group || m.sender != sender || m.receiver != receiver ||
        m.seq > *o.pair_seq) {
      continue;
    }
    if (!found || m.seq > found->seq) found = &m;
  }
  return found;
}

// The mismatch that explains an operation `rank` is in: a collective's (MismatchAt) or a
// send's or receive's (P2pMismatchOn).
const FieldMismatch* MismatchOf(const EndsContext& ctx, int64_t rank, const Op& o) {
  return o.p2p ? P2pMismatchOn(ctx, rank, o) : MismatchAt(ctx, o.group, o.seq);
}

// The call of `rank` that a mismatch names: its collective at the sequence, or its side of
// the pair.
const Op* CallOf(const EndsContext& ctx, const FieldMismatch& m, int64_t rank) {
  if (!m.p2p) return ctx.ix.At(rank, m.group, m.seq);
  auto ri = ctx.ix.Find(rank);
  if (!ri) return nullptr;
  for (const Op& o : ctx.ix.in.ranks[*ri].ops) {
    if (IsCallOf(m, rank, o)) return &o;
  }
  return nullptr;
}

// The wait an open operation shows (rule 10), and whether it timed out.
int64_t WaitOf(const EndsContext& ctx, const Rank& r, size_t k, bool* timed_out) {
  const Op& o = r.ops[k];
  int64_t wait = std::max<int64_t>(0, ctx.ix.latest_ns - o.created_ns);
  const Outcome now = ctx.ix.outcome[*ctx.ix.Find(r.rank)][k];
  if (now == Outcome::kFailed) *timed_out = true;
  // Rule 6: NCCL's own failed entries timed out, so they waited their timeout. Gloo's failures
  // (rule 5) may be a peer that went away, which ends a wait at once.
  if (o.timeout_ns && o.outcome == Outcome::kFailed && r.basis == Basis::kFlightRecorderNccl) {
    wait = std::max(wait, *o.timeout_ns);
  }
  if (o.timeout_ns && *o.timeout_ns > 0 && wait >= *o.timeout_ns) *timed_out = true;
  return wait;
}

// A culprit its record proves: recorded, not suspected for a wrapped ring, and not named by
// waits the records cannot prove unanswered (rule 13).
bool AnyProvenCulprit(const Result& out) {
  return std::any_of(out.ends.begin(), out.ends.end(), [](const End& e) {
    return IsCulprit(e.kind) && e.kind != EndKind::kNoRecord && e.kind != EndKind::kRingWrapped &&
           !e.unproven_wait;
  });
}

Confidence ConfidenceOf(const Result& out) {
  switch (out.verdict) {
    case Verdict::kHang:
      // Only suspects: ranks the records do not show, or waits on them the records cannot
      // prove unanswered (rule 13: or a stalled transfer).
      if (!AnyProvenCulprit(out)) return Confidence::kLow;
      return out.timed_out ? Confidence::kHigh : Confidence::kMedium;
    case Verdict::kDeadlock:
      if (out.cycle_unproven) return Confidence::kLow;  // rule 13: or a stalled transfer
      return out.timed_out ? Confidence::kHigh : Confidence::kMedium;
    case Verdict::kMismatch: {
      // Decided by the ranks' own history rather than by a majority: a hint.
      const bool by_history = std::any_of(out.mismatches.begin(), out.mismatches.end(),
                                          [](const FieldMismatch& m) { return m.by_history; });
      return by_history ? Confidence::kLow : Confidence::kMedium;
    }
    case Verdict::kStuckInOp:
      return Confidence::kLow;
    case Verdict::kNone:
    case Verdict::kUndetermined:
      break;
  }
  return Confidence::kUndetermined;
}

}  // namespace

End MakeEnd(const EndsContext& ctx, int64_t rank, EndKind kind) {
  End end;
  end.rank = rank;
  end.kind = kind;
  if (auto w = ctx.waited_by.find(rank); w != ctx.waited_by.end()) end.waited_by = w->second;
  const Edge* in = FirstEdgeInto(ctx, rank);
  if (in) end.waited_in = EdgeOp(ctx, *in).group;
  auto ri = ctx.ix.Find(rank);
  if (!ri) return end;
  if (ctx.ix.last_activity[*ri] > 0) {
    end.idle_ns = std::max<int64_t>(0, ctx.ix.latest_ns - ctx.ix.last_activity[*ri]);
  }
  const Rank& r = ctx.ix.in.ranks[*ri];
  if (kind == EndKind::kInCycle) {
    for (const Edge& e : ctx.edges) {
      if (e.from == rank) {
        end.op = r.ops[e.op];
        break;
      }
    }
  } else if (kind == EndKind::kWaitsInNothing || kind == EndKind::kRingWrapped) {
    const Op* last = in && !EdgeOp(ctx, *in).p2p ? ctx.ix.Last(rank, *end.waited_in) : nullptr;
    if (!last && !r.ops.empty()) {  // its latest entry of any group
      last = &*std::max_element(r.ops.begin(), r.ops.end(),
                                [](const Op& a, const Op& b) { return OpTime(a) < OpTime(b); });
    }
    if (last) end.op = *last;
  }
  return end;
}

namespace {

// A recorded rank no edge leaves, by its own record (rules 4, 7, 8).
End ClassifyRecorded(const EndsContext& ctx, int64_t rank, size_t ri) {
  if (ctx.open[ri].empty()) {
    return MakeEnd(ctx, rank,
                   ProvenAbsent(ctx, rank) ? EndKind::kWaitsInNothing : EndKind::kRingWrapped);
  }
  // Its open operations have no laggard (rule 8); the most telling names the end.
  const Rank& r = ctx.ix.in.ranks[ri];
  EndKind best = EndKind::kStuckTogether;
  size_t best_op = ctx.open[ri].front();
  auto rank_of = [](EndKind k) {
    switch (k) {
      case EndKind::kStuckAlone:
        return 3;
      case EndKind::kMismatched:
        return 2;
      case EndKind::kUnattributed:
        return 1;
      default:
        return 0;
    }
  };
  for (size_t k : ctx.open[ri]) {
    const Op& o = r.ops[k];
    EndKind kind = EndKind::kStuckTogether;
    if (o.p2p) {
      if (!o.peer) kind = EndKind::kUnattributed;
      // Rule 11: a pair that differed on this connection; its minority is the culprit.
      const FieldMismatch* mm = P2pMismatchOn(ctx, rank, o);
      if (mm && std::find(mm->minority.begin(), mm->minority.end(), rank) != mm->minority.end()) {
        kind = EndKind::kMismatched;
      }
    } else {
      bool others_completed = false;
      for (int64_t m : ctx.ix.in.groups[o.group].members) {
        if (m != rank && ctx.ix.OutcomeAt(m, o.group, o.seq) == Outcome::kCompleted) {
          others_completed = true;
        }
      }
      const FieldMismatch* mm = MismatchAt(ctx, o.group, o.seq);
      if (mm) {
        // Rule 7: members called it differently. That explains a member stuck in it while
        // another completed its own call (the test bed's size mismatch: the smaller call ends,
        // the larger waits for data that never comes): the minority is the culprit, a member
        // of the majority or of a tie is not.
        if (std::find(mm->minority.begin(), mm->minority.end(), rank) != mm->minority.end()) {
          kind = EndKind::kMismatched;
        }
      } else if (others_completed) {
        kind = EndKind::kStuckAlone;
      }
    }
    if (rank_of(kind) > rank_of(best)) {
      best = kind;
      best_op = k;
    }
  }
  End end = MakeEnd(ctx, rank, best);
  end.op = r.ops[best_op];
  if (best == EndKind::kMismatched) {  // the call unlike the others, maybe an earlier one
    if (const FieldMismatch* mm = MismatchOf(ctx, rank, *end.op)) {
      if (const Op* o = CallOf(ctx, *mm, rank)) end.op = *o;
    }
  }
  return end;
}

}  // namespace

End ClassifySink(const EndsContext& ctx, int64_t rank) {
  auto ri = ctx.ix.Find(rank);
  if (!ri) return MakeEnd(ctx, rank, EndKind::kNoRecord);
  End end = ClassifyRecorded(ctx, rank, *ri);
  // Rule 12: a rank's position proves no stop where its record may be older than what judges
  // it: alone in an operation others completed for less than the stuck threshold, or waited
  // for by operations none of which ran out its timeout, in records shown taken at different
  // moments or where the waiters' records stamped with their moments show every wait on it
  // shorter than its group's stuck threshold (a rank that entered nothing yet). Rule 13: nor
  // where every wait on it is a send or receive its record cannot prove unanswered and every
  // such wait is shorter than that threshold (rule 12's measure).
  bool moving = false;
  if (end.kind == EndKind::kStuckAlone) {
    moving = end.op && ctx.ix.Young(*end.op);
  } else if (end.kind == EndKind::kWaitsInNothing || end.kind == EndKind::kRingWrapped) {
    bool timed_out = false, stamped = false, brief = true, unproven = true, unproven_brief = true;
    for (const Edge& e : ctx.edges) {
      if (std::find(e.to.begin(), e.to.end(), rank) == e.to.end()) continue;
      timed_out = timed_out || ctx.ix.TimedOut(e);
      if (std::optional<int64_t> w = ctx.ix.StampedWait(e)) {
        stamped = true;
        brief = brief && *w < ctx.ix.StuckNs(EdgeOp(ctx, e).group);
      }
      unproven = unproven && EdgeOp(ctx, e).p2p && !ctx.ix.ProvesUnanswered(e, rank);
      unproven_brief = unproven_brief && ctx.ix.BriefWait(*ctx.ix.Find(e.from), e.op);
    }
    const bool brief_waits = end.kind == EndKind::kWaitsInNothing && stamped && brief;
    const bool unanswered_unproven = !end.waited_by.empty() && unproven && unproven_brief;
    moving = !timed_out && (ctx.ix.skewed || brief_waits || unanswered_unproven);
    end.unproven_wait = !end.waited_by.empty() && unproven;
  }
  if (moving) end.kind = EndKind::kRecordOlder;
  return end;
}

// Rule 7: the minority of a mismatch at an operation a chain ends in is a culprit even where
// it completed its call and went on (it is then no end of the graph itself). Rule 11: so is
// the minority of a pair that differed on a connection some rank still waits on, at or after
// that pair, through the chain or at its end: the shift leaves one side waiting for bytes, and
// the chain may end on the connection back (the test bed's mismatch2: rank 6 received float32
// where rank 2 sent bfloat16; rank 6 then waits in a receive from rank 2, which is in a
// receive from rank 6 whose send is open too, so the chain ends in the pair going the other
// way).
void AddMismatchMinorities(const EndsContext& ctx, Result& out) {
  std::vector<const FieldMismatch*> found;
  for (const End& e : out.ends) {
    if (e.kind != EndKind::kStuckTogether || !e.op) continue;
    if (const FieldMismatch* m = MismatchOf(ctx, e.rank, *e.op)) found.push_back(m);
  }
  auto p2p_on = [&](int64_t rank, const Op& o) {
    if (const FieldMismatch* m = P2pMismatchOn(ctx, rank, o)) found.push_back(m);
  };
  for (const Edge& e : ctx.edges) p2p_on(e.from, EdgeOp(ctx, e));
  for (const End& e : out.ends) {
    auto ri = ctx.ix.Find(e.rank);
    if (!ri || IsCulprit(e.kind)) continue;
    for (size_t k : ctx.open[*ri]) p2p_on(e.rank, ctx.ix.in.ranks[*ri].ops[k]);
  }
  std::vector<End> minority;
  for (const FieldMismatch* m : found) {
    for (int64_t r : m->minority) {
      auto known = [r](const End& x) { return x.rank == r; };
      auto end = std::find_if(out.ends.begin(), out.ends.end(), known);
      if (end != out.ends.end() && !IsCulprit(end->kind)) {  // an end, no culprit yet
        end->kind = EndKind::kMismatched;
        if (const Op* o = CallOf(ctx, *m, r)) end->op = *o;
        continue;
      }
      if (end != out.ends.end() || std::any_of(minority.begin(), minority.end(), known)) continue;
      End x = MakeEnd(ctx, r, EndKind::kMismatched);
      if (const Op* o = CallOf(ctx, *m, r)) x.op = *o;  // the call unlike the others
      minority.push_back(std::move(x));
    }
  }
  out.ends.insert(out.ends.end(), minority.begin(), minority.end());
}

void Decide(const EndsContext& ctx, Result& out) {
  AddMismatchMinorities(ctx, out);
  std::stable_sort(out.ends.begin(), out.ends.end(), [](const End& a, const End& b) {
    return std::make_pair(!IsCulprit(a.kind), a.rank) < std::make_pair(!IsCulprit(b.kind), b.rank);
  });
  std::set<EndKind> kinds;
  for (const End& e : out.ends) {
    kinds.insert(e.kind);
    if (IsCulprit(e.kind)) out.culprits.push_back(e.rank);
  }
  // Rule 10 over every operation taking part: the waits of the edges and the ends' own.
  std::vector<std::pair<const Rank*, size_t>> involved;
  for (const Edge& e : out.edges)
    involved.emplace_back(&ctx.ix.in.ranks[*ctx.ix.Find(e.from)], e.op);
  for (const End& e : out.ends) {
    auto ri = ctx.ix.Find(e.rank);
    if (!ri || e.kind == EndKind::kWaitsInNothing || e.kind == EndKind::kRingWrapped) continue;
    for (size_t k : ctx.open[*ri]) involved.emplace_back(&ctx.ix.in.ranks[*ri], k);
  }
  bool brief = !involved.empty();  // rule 12's measure, over every operation taking part
  for (const auto& [r, k] : involved) {
    out.stuck_for_ns = std::max(out.stuck_for_ns, WaitOf(ctx, *r, k, &out.timed_out));
    brief = brief && ctx.ix.BriefWait(*ctx.ix.Find(r->rank), k);
  }

  const bool tie_mismatch = std::any_of(out.ends.begin(), out.ends.end(), [&](const End& e) {
    if (e.kind != EndKind::kStuckTogether || !e.op) return false;
    return MismatchOf(ctx, e.rank, *e.op) != nullptr;
  });
  const bool rank_culprits = kinds.count(EndKind::kWaitsInNothing) ||
                             kinds.count(EndKind::kStuckAlone) || kinds.count(EndKind::kNoRecord) ||
                             kinds.count(EndKind::kRingWrapped);
  const bool in_op = kinds.count(EndKind::kStuckTogether) || kinds.count(EndKind::kUnattributed);
  if (kinds.count(EndKind::kInCycle)) {
    out.verdict = Verdict::kDeadlock;
  } else if (rank_culprits) {
    out.verdict = Verdict::kHang;
  } else if (kinds.count(EndKind::kMismatched) || tie_mismatch) {
    out.verdict = Verdict::kMismatch;
  } else if (kinds.count(EndKind::kRecordOlder) || kinds.count(EndKind::kCycleUnproven) ||
             (in_op && !out.edges.empty() && (ctx.ix.skewed || brief) && !out.timed_out)) {
    out.verdict = Verdict::kUndetermined;  // rule 12: records of a job that ran on
  } else if (in_op && (!out.edges.empty() || out.timed_out)) {
    out.verdict = Verdict::kStuckInOp;
  } else if (in_op) {
    out.verdict = Verdict::kNone;
  } else {
    bool unknown = false;
    for (const auto& ops : ctx.ix.outcome) {
      unknown = unknown || std::count(ops.begin(), ops.end(), Outcome::kEnded) > 0;
    }
    out.verdict = unknown ? Verdict::kUndetermined : Verdict::kNone;
  }
  out.confidence = ConfidenceOf(out);
  out.culprits_unproven = out.verdict == Verdict::kHang && !AnyProvenCulprit(out) &&
                          std::any_of(out.ends.begin(), out.ends.end(), [](const End& e) {
                            return IsCulprit(e.kind) && e.unproven_wait;
                          });

  // The operation named: a culprit's own, or the oldest one waiting directly on a culprit;
  // else the oldest one taking part.
  auto consider = [&](int64_t rank, const Op& o) {
    if (!out.stuck || o.created_ns < out.stuck->created_ns) {
      out.stuck = o;
      out.stuck_rank = rank;
    }
  };
  for (const End& e : out.ends) {
    if (!IsCulprit(e.kind)) continue;
    if ((e.kind == EndKind::kStuckAlone || e.kind == EndKind::kMismatched) && e.op) {
      // A mismatched call that completed (an earlier one) is not what is stuck.
      if (e.op->outcome != Outcome::kCompleted) consider(e.rank, *e.op);
      continue;
    }
    for (const Edge& x : out.edges) {
      if (std::find(x.to.begin(), x.to.end(), e.rank) != x.to.end()) {
        consider(x.from, EdgeOp(ctx, x));
      }
    }
  }
  if (!out.stuck) {
    for (const auto& [r, k] : involved) consider(r->rank, r->ops[k]);
  }
  out.reason = Reason(ctx.ix.in, out);
}

}  // namespace rs::analyzer::wait
