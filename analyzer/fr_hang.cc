#include "analyzer/fr_hang.h"

#include <algorithm>
#include <set>
#include <utility>

#include "analyzer/confidence.h"
#include "analyzer/fr_lateness.h"
#include "analyzer/fr_wait_input.h"
#include "analyzer/report_format.h"
#include "analyzer/wait_words.h"
#include "rscore/cli.h"

namespace rs::analyzer {
namespace {

// The chains listed in words; the JSON's edges hold the rest.
constexpr size_t kMaxChainLines = 12;
constexpr size_t kMaxMismatches = 20;

bool Detected(wait::Verdict v) {
  return v == wait::Verdict::kHang || v == wait::Verdict::kDeadlock ||
         v == wait::Verdict::kMismatch || v == wait::Verdict::kStuckInOp;
}

std::string StateWord(const wait::Op& o) {
  if (o.outcome == wait::Outcome::kCompleted) return "completed";
  return std::string(rs::OpStateName(o.state));
}

// kind: the backend that ran it, as the rank's record says ('nccl' | 'gloo').
Activity ActivityOf(const wait::Op& o, wait::Basis basis) {
  Activity a;
  a.kind = basis == wait::Basis::kFlightRecorderGloo ? "gloo" : "nccl";
  a.what = std::string(rs::OpName(o.op));
  a.seq = o.seq;
  a.timestamp_ns = o.created_ns;
  a.state = o.outcome == wait::Outcome::kCompleted ? "complete" : "in_flight";
  a.stack = o.stack;
  return a;
}

const wait::Rank* RankOf(const FrJob& job, int64_t rank) {
  for (const wait::Rank& r : job.input.ranks) {
    if (r.rank == rank && r.recorded) return &r;
  }
  return nullptr;
}

// The group's members at the stuck operation, as the report's progress table shows them.
void AddProgress(const FrJob& job, const wait::Result& res, const EngineSource& src,
                 HangReport& h) {
  if (!res.stuck) return;
  const wait::Op& stuck = *res.stuck;
  std::vector<int64_t> rows;
  if (stuck.p2p) {
    rows.push_back(*res.stuck_rank);
    if (stuck.peer) rows.push_back(*stuck.peer);
  } else {
    rows = job.input.groups[stuck.group].members;
  }
  for (int64_t c : res.culprits) {
    if (std::find(rows.begin(), rows.end(), c) == rows.end()) rows.push_back(c);
  }
  const std::set<int64_t> involved(res.waiting.begin(), res.waiting.end());
  for (int64_t rank : rows) {
    RankProgress p;
    p.rank = rank;
    const wait::Rank* r = RankOf(job, rank);
    if (!r) {
      p.state = "no_dump";
      p.state_basis = "none";
      h.progress.push_back(std::move(p));
      continue;
    }
    const FrDumpInfo& d = job.dumps.at(rank);
    p.node = d.node;
    p.pid = d.pid;
    p.state_basis = src.state_basis;
    const wait::Op* at = nullptr;
    const wait::Op* last = nullptr;
    const wait::Op* open = nullptr;
    for (const wait::Op& o : r->ops) {
      if (o.group != stuck.group || o.p2p != stuck.p2p) continue;
      if (!o.p2p) {
        p.last_entered_seq = std::max(p.last_entered_seq.value_or(o.seq), o.seq);
        if (o.state >= rs::OpState::kStarted) {
          p.last_started_seq = std::max(p.last_started_seq.value_or(o.seq), o.seq);
        }
        if (o.outcome == wait::Outcome::kCompleted) {
          p.last_completed_seq = std::max(p.last_completed_seq.value_or(o.seq), o.seq);
        }
        if (o.seq == stuck.seq && !at) at = &o;
      } else if (o.peer == (rank == *res.stuck_rank ? stuck.peer : res.stuck_rank) &&
                 o.outcome != wait::Outcome::kCompleted && !open) {
        open = &o;
      }
      if (!last || o.created_ns > last->created_ns) last = &o;
    }
    if (stuck.p2p) {
      p.state = open ? StateWord(*open) : "not_enqueued";
      at = open;
    } else if (at) {
      p.state = StateWord(*at);
    } else if (p.last_entered_seq && *p.last_entered_seq > stuck.seq) {
      p.state = "unknown";  // older than its ring holds
    } else {
      p.state = "not_enqueued";
    }
    const bool culprit =
        std::find(res.culprits.begin(), res.culprits.end(), rank) != res.culprits.end();
    if (at) {
      p.doing.push_back(ActivityOf(*at, r->basis));
    } else if (culprit && last) {
      p.doing.push_back(ActivityOf(*last, r->basis));  // what it did last, in the group
    }
    if (!involved.count(rank) && !culprit && p.doing.empty() && last) {
      p.doing.push_back(ActivityOf(*last, r->basis));
    }
    h.progress.push_back(std::move(p));
  }
}

void AddCulprits(const FrJob& job, const wait::Result& res, HangReport& h) {
  for (const wait::End& e : res.ends) {
    if (!wait::IsCulprit(e.kind)) continue;
    HangCulprit c;
    c.rank = e.rank;
    c.label = FrRankLabel(job, e.rank);
    if (auto d = job.dumps.find(e.rank); d != job.dumps.end()) {
      c.node = d->second.node;
      c.pid = d->second.pid;
    }
    c.kind = wait::EndKindName(e.kind);
    c.evidence = c.label + " " + wait::EndPhrase(job.input, res, e);
    if (!e.waited_by.empty()) {
      c.evidence += "; " + wait::RanksPhrase(e.waited_by) +
                    (e.waited_by.size() == 1 ? " waits" : " wait") + " for it";
    }
    if (e.op) {
      c.op = std::string(rs::OpName(e.op->op));
      c.seq = e.op->seq;
      c.process_group = job.groups[e.op->group].label;
      c.state = StateWord(*e.op);
    }
    c.idle_ns = e.idle_ns;
    c.waited_by = e.waited_by;
    h.culprit_ranks.push_back(c.rank);
    h.culprit_labels.push_back(c.label);
    if (!c.node.empty() && std::find(h.culprit_nodes.begin(), h.culprit_nodes.end(), c.node) ==
                               h.culprit_nodes.end()) {
      h.culprit_nodes.push_back(c.node);
    }
    h.culprits.push_back(std::move(c));
  }
}

void AddEdges(const FrJob& job, const wait::Result& res, HangReport& h) {
  h.edges_total = res.edges.size();
  for (const wait::Edge& e : res.edges) {
    if (h.edges.size() == kMaxHangEdges) break;
    const wait::Op& o = RankOf(job, e.from)->ops[e.op];
    h.edges.push_back(HangEdge{e.from, std::string(rs::OpName(o.op)), o.seq, o.p2p,
                               job.groups[o.group].label, e.to});
  }
}

void AddMismatches(const FrJob& job, const wait::Result& res, HangReport& h) {
  for (const wait::FieldMismatch& m : res.mismatches) {
    if (h.mismatches.size() == kMaxMismatches) break;
    Mismatch x;
    x.comm_id_hash = static_cast<uint64_t>(job.groups[m.group].comm_id_hash.value_or(0));
    x.process_group = job.groups[m.group].label;
    x.seq = m.seq;
    if (m.p2p) {
      x.sender = m.sender;
      x.receiver = m.receiver;
    }
    x.field = m.field;
    for (const auto& [value, ranks] : m.variants) {
      std::vector<std::string> who;
      for (int64_t r : ranks) who.push_back(FrRankLabel(job, r));
      x.variants.emplace_back(value, std::move(who));
    }
    h.mismatches.push_back(std::move(x));
  }
}

std::string Summary(const FrJob& job, const wait::Result& res, const EngineSource& src,
                    const HangReport& h) {
  const std::string records = src.records + " " + std::to_string(job.dumps.size()) + " rank(s)";
  const std::string tag = " (" + src.name + ")";
  if (!h.detected) {
    if (res.verdict == wait::Verdict::kUndetermined) {
      return records + " cannot decide whether the job hangs: " + res.reason;
    }
    return "no operation is stuck in " + records + (res.stuck ? ": " + res.reason : "");
  }
  const std::string op =
      res.stuck ? wait::OpPhrase(job.input, *res.stuck) + " never completed" : "a hang";
  if (res.verdict == wait::Verdict::kStuckInOp) return op + tag + ": " + res.reason;
  if (res.verdict == wait::Verdict::kDeadlock) {
    std::string cycles;
    for (const auto& c : res.cycles) cycles += (cycles.empty() ? "" : "; ") + wait::RanksPhrase(c);
    return "deadlock" + tag + ": " + cycles + " wait for each other" +
           (h.chains.empty() ? "" : " — " + h.chains.front()) +
           (res.cycle_unproven
                ? "; not proven: the records lost the count of some of those sends/receives "
                  "(a wrapped ring), so a peer may have completed its side and the transfer "
                  "stalled between them"
                : "");
  }
  if (h.culprits.empty()) {  // a mismatch evenly split
    return op + tag +
           ": its members called it with different op, size or dtype, evenly split: which side "
           "is wrong is not decidable";
  }
  std::string names, why;
  for (size_t i = 0; i < h.culprits.size(); ++i) {
    names += (i ? ", " : "") + h.culprits[i].label;
    if (i < 3) why += (i ? "; " : "") + h.culprits[i].evidence;
  }
  if (h.culprits.size() > 3) why += "; and " + std::to_string(h.culprits.size() - 3) + " more";
  return op + tag + ": the waiting chains end at " + names + " — " + why +
         (res.culprits_unproven
              ? "; not proven: the records lost the count of the sends/receives waiting on "
                "them (a wrapped ring), so a peer may have completed its side and the transfer "
                "stalled between them"
              : "");
}

// What the late entries rest on, and what that basis cannot say.
std::string LateEntriesNote(const FrLateness& late) {
  std::string basis;
  if (late.by_duration > 0) {
    basis = "device durations where every member of a collective was timed (" +
            std::to_string(late.by_duration) + " of " + std::to_string(late.collectives) +
            " collectives: TORCH_NCCL_ENABLE_TIMING; the others' kernels held the time they "
            "waited for it, on their own devices, so no clock enters)";
  }
  if (late.by_duration < late.collectives) {
    basis += std::string(basis.empty() ? "" : ", elsewhere ") +
             "entry creation times (when each rank issued the collective, on its host's wall "
             "clock: lateness under " +
             FormatNs(late.floor_ns) + " is not counted there)";
  }
  return "late entries come from the Flight Recorder dumps' " + basis +
         ". They cannot say why a rank was late (its host or its device: the dumps hold "
         "neither). A rank's late entry is traced to the rank it waited for in the collective "
         "it issued just before where that wait leaves less than the floor of the lateness "
         "unexplained, and on through the groups; a rank is named where more than half of its "
         "collectives it "
         "entered last on its own account";
}

}  // namespace

const EngineSource kFlightRecorderSource{"Flight Recorder", "the Flight Recorder dumps of",
                                         "flight_recorder"};

HangReport EngineHang(const FrJob& job, const wait::Result& res, const EngineSource& src) {
  HangReport h;
  h.basis = src.state_basis;
  h.detected = Detected(res.verdict);
  h.kind = wait::VerdictName(res.verdict);
  h.reason = res.reason;
  if (h.detected) {
    h.confidence = res.confidence;
    h.stuck_for_ns = res.stuck_for_ns;
    if (res.stuck) {
      const FrGroupInfo& g = job.groups[res.stuck->group];
      h.process_group = g.label;
      h.comm_id_hash = static_cast<uint64_t>(g.comm_id_hash.value_or(0));
      h.seq = res.stuck->seq;
      h.op = std::string(rs::OpName(res.stuck->op));
    }
    AddCulprits(job, res, h);
    h.waiting_ranks = res.waiting;
    h.chains = wait::Chains(job.input, res, kMaxChainLines);
    h.cycles = res.cycles;
    AddEdges(job, res, h);
    AddProgress(job, res, src, h);
  }
  AddMismatches(job, res, h);
  h.summary = Summary(job, res, src, h);
  return h;
}

Straggler EngineStraggler(const HangReport& h, size_t i, const std::string& basis) {
  Straggler s;
  s.rank = h.culprit_ranks[i];
  s.ranks = {*s.rank};
  for (const RankProgress& p : h.progress) {
    if (p.rank == s.rank) {
      s.node = p.node;
      if (p.pid) {
        s.pid = p.pid;
        s.pids = {p.pid};
      }
    }
  }
  s.cause = "hang";
  s.shape = "hang";
  s.confidence = h.confidence.value_or(Confidence::kLow);
  s.confidence_score = TierScore(ScoreBasis::kHang, s.confidence, 0);
  s.basis = basis;
  std::string why = i < h.culprits.size() ? h.culprits[i].evidence : h.summary;
  // A recording saw its process end (process_events): say so, with the code as a shell spells
  // it (ExitCodeFromWaitStatus: 128 + the signal where a signal killed it).
  std::optional<std::string> exited;
  for (const RankProgress& p : h.progress) {
    if (p.rank != s.rank) continue;
    for (const Activity& a : p.doing) {
      if (a.kind != "exit") continue;
      exited = "its process exited";
      if (a.exit_code) {
        *exited += " with code " + std::to_string(*a.exit_code);
        if (*a.exit_code > 128 && *a.exit_code < 128 + 65) {
          *exited += " (signal " + std::to_string(*a.exit_code - 128) +
                     " killed it, unless it exited with that code itself)";
        }
      }
    }
  }
  if (exited) why += "; " + *exited;
  s.summary = why;
  Cause c;
  c.kind = "hang";
  c.score = 1;
  c.summary = h.summary;
  const std::string label =
      i < h.culprit_labels.size() ? h.culprit_labels[i] : "rank " + std::to_string(*s.rank);
  c.remediation =
      exited ? "read why " + label + " ended (" + *exited + "): its log, and the kernel's on " +
                   (s.node.empty() ? "its node" : s.node) +
                   " (dmesg: the OOM killer, Xid errors); the ranks waiting for it only time out"
             : "dump the stacks of " + label +
                   (s.pid ? " (py-spy dump --pid " + std::to_string(*s.pid) + ", gdb -p " +
                                std::to_string(*s.pid) + " on " + s.node + ")"
                          : " (py-spy dump, gdb -p with its pid)") +
                   ": the waiting chains end there — it is stuck before its next operation, "
                   "took another code path, or died; the ranks waiting for it only time out";
  s.causes.push_back(std::move(c));
  Evidence e;
  e.kind = "hang";
  e.summary = why;
  if (i < h.culprits.size() && h.culprits[i].idle_ns >= 0) {
    e.values.emplace_back("idle_ns", static_cast<double>(h.culprits[i].idle_ns));
  }
  e.values.emplace_back("stuck_for_ns", static_cast<double>(h.stuck_for_ns));
  s.evidence.push_back(std::move(e));
  return s;
}

rs::Result<FlightRecorderSummary> AnalyzeFlightRecorder(rs::Db& db) {
  FlightRecorderSummary fa;
  ASSIGN_OR_RETURN(FrJob job, ReadFrJob(db));
  fa.dumps = static_cast<int>(job.dumps.size());
  if (job.dumps.empty()) return fa;
  for (const auto& [r, d] : job.dumps) fa.dumped_ranks.push_back(r);
  fa.versions = job.versions;
  fa.unaligned_dumps = job.unaligned_dumps;
  fa.missing_ranks = job.missing_ranks;
  fa.notes = job.notes;

  const FrLateness late = FindFrLateness(job.input, job.unaligned_dumps == 0);
  fa.late_floor_ns = late.floor_ns;
  fa.late_by_duration = late.by_duration;
  for (const FrLateRank& l : late.late) {
    fa.late_entries.push_back(FrLateEntry{l.rank, FrRankLabel(job, l.rank), l.last, l.collectives,
                                          l.median_behind_ns, l.by_duration});
  }
  for (const FrTracedRank& t : late.traced) {
    fa.late_traced.push_back(FrTracedEntry{t.rank, FrRankLabel(job, t.rank), t.inherited,
                                           t.collectives, t.root, FrRankLabel(job, t.root)});
  }
  if (!fa.late_entries.empty() || !fa.late_traced.empty())
    fa.notes.push_back(LateEntriesNote(late));

  const wait::Result res = wait::Analyze(job.input);
  fa.notes.insert(fa.notes.end(), res.notes.begin(), res.notes.end());
  fa.hang = EngineHang(job, res, kFlightRecorderSource);
  return fa;
}

}  // namespace rs::analyzer
