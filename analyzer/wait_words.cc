#include "analyzer/wait_words.h"

#include <algorithm>
#include <map>
#include <set>

#include "analyzer/report_format.h"
#include "rscore/cli.h"

namespace rs::analyzer::wait {
namespace {

// A chain is cut after this many hops, and a hop shows at most this many distinct
// continuations: the text stays readable for jobs of thousands of ranks.
constexpr int kMaxDepth = 8;
constexpr size_t kMaxBranches = 4;

std::string OutcomeWord(const Op& o) {
  switch (o.outcome) {
    case Outcome::kCompleted:
      return "completed";
    case Outcome::kFailed:
      return "failed";
    case Outcome::kEnded:
      return "ended, completion not recorded";
    case Outcome::kPending:
      break;
  }
  return std::string(rs::OpStateName(o.state));
}

std::string AtLeast(int64_t ns) { return ns > 0 ? " for at least " + FormatNs(ns) : ""; }

const End* EndOf(const Result& r, int64_t rank) {
  for (const End& e : r.ends) {
    if (e.rank == rank) return &e;
  }
  return nullptr;
}

class ChainWriter {
 public:
  ChainWriter(const Input& in, const Result& r) : in_(in), r_(r) {
    for (const auto& c : r.cycles) cyclic_.insert(c.begin(), c.end());
  }

  // What `rank` does, from its own wait to the ends of its chains.
  std::string Continue(int64_t rank, int depth, std::vector<int64_t>& path) {
    if (std::find(path.begin(), path.end(), rank) != path.end()) {
      return "is rank " + std::to_string(rank) + " again: a cycle";
    }
    const End* end = EndOf(r_, rank);
    if (end && end->kind != EndKind::kInCycle) return EndPhrase(in_, r_, *end);
    if (depth >= kMaxDepth) return "waits further (the chain is cut here)";
    const bool memo = !cyclic_.count(rank);
    if (memo) {
      if (auto it = memo_.find(rank); it != memo_.end()) return it->second;
    }
    path.push_back(rank);
    std::string out;
    for (const Edge& e : r_.edges) {
      if (e.from != rank) continue;
      const Op& o = OpOf(e);
      std::string clause = "waits in " + OpPhrase(in_, o) + AtLeast(WaitedNs(o));
      if (!o.p2p) clause += " for " + RanksPhrase(e.to);
      std::map<std::string, std::vector<int64_t>> by;
      for (int64_t t : e.to) {
        std::string next = Continue(t, depth + 1, path);
        if (by.size() < kMaxBranches || by.count(next)) by[next].push_back(t);
      }
      if (by.size() == 1 && e.to.size() == 1) {
        clause += ", which " + by.begin()->first;
      } else if (by.size() == 1) {
        clause += ", each of which " + by.begin()->first;
      } else {
        std::string parts;
        for (const auto& [next, ts] : by) {
          parts += (parts.empty() ? "" : "; ") + RanksPhrase(ts) + ": " + next;
        }
        clause += " (" + parts + ")";
      }
      out += (out.empty() ? "" : ", and ") + clause;
    }
    path.pop_back();
    if (out.empty() && end) out = EndPhrase(in_, r_, *end);
    if (memo) memo_[rank] = out;
    return out;
  }

 private:
  const Op& OpOf(const Edge& e) const {
    for (const Rank& rk : in_.ranks) {
      if (rk.rank == e.from) return rk.ops[e.op];
    }
    return in_.ranks.front().ops.front();  // unreachable: every edge leaves a recorded rank
  }
  int64_t WaitedNs(const Op& o) const {
    int64_t w = std::max<int64_t>(0, r_.latest_ns - o.created_ns);
    if (o.outcome == Outcome::kFailed && o.timeout_ns) w = std::max(w, *o.timeout_ns);
    return w;
  }

  const Input& in_;
  const Result& r_;
  std::set<int64_t> cyclic_;
  std::map<int64_t, std::string> memo_;
};

// Rules 9, 12 and 13: why the records cannot decide.
std::string UndeterminedReason(const Result& r) {
  std::set<int64_t> unproven;
  std::vector<int64_t> older;
  bool in_op = false;
  for (const End& e : r.ends) {
    if (e.kind == EndKind::kCycleUnproven) unproven.insert(e.rank);
    if (e.kind == EndKind::kRecordOlder) older.push_back(e.rank);
    in_op = in_op || e.kind == EndKind::kStuckTogether || e.kind == EndKind::kUnattributed;
  }
  std::vector<std::string> why;
  std::string cycles;
  for (const auto& c : r.cycles) {
    if (!unproven.count(c.front())) continue;
    cycles += (cycles.empty() ? "" : "; ") + RanksPhrase(c);
  }
  if (!cycles.empty()) {
    why.push_back(cycles +
                  " wait for each other in sends/receives, but the records do not reach back to "
                  "the start of those pairs (a Flight Recorder ring that wrapped), so whether "
                  "each peer had already completed what the other waits for cannot be counted");
  }
  if (!older.empty()) {
    why.push_back("the waiting chains end at " + RanksPhrase(older) +
                  ", where a record taken a moment before the others' looks the same");
  }
  if (why.empty() && in_op && !r.edges.empty()) {
    why.push_back("the waiting chains end in operations every member had entered");
  }
  if (why.empty()) {  // rule 9
    return "no rank is behind another, and the records cannot say whether the last "
           "operations completed: gloo's Flight Recorder records no completion (its entries "
           "stay 'scheduled', and 'retired' is set for finished and timed-out work alike), so "
           "a clean end and a hang in which every rank timed out in the same operation look "
           "the same";
  }
  std::string moments =
      "the records hold no time of their own and may have been taken at different moments "
      "(dumps asked for on demand)";
  if (!r.records_older.empty()) {
    moments = "the records were taken at different moments while the job ran on: " +
              WentOnPhrase(r.records_older);
  } else if (r.settled > 0) {
    moments = "the records were taken at different moments: " + std::to_string(r.settled) +
              " operation(s) open in some records were completed, as members completed later "
              "collectives of their groups";
  }
  std::string out = moments;
  for (const std::string& w : why) out += "; " + w;
  return out +
         " (no wait there ran out its timeout or, by a record stamped with its dump's moment "
         "or counted to the latest time the records hold, lasted its group's stuck threshold, "
         "and none alone in an operation longer than that: 10 x the p99 of the group's "
         "completed operations' time from creation to completion, at least 100 ms), which "
         "such records show of a moving job too; take every rank's "
         "dump at one moment, or after the timeout" +
         (cycles.empty() ? "" : ", with a ring that holds the whole run (TORCH_FR_BUFFER_SIZE)");
}

}  // namespace

std::string WentOnPhrase(const std::vector<int64_t>& sorted) {
  const bool one = sorted.size() == 1;
  return RanksPhrase(sorted) +
         (one ? " went on after its record was taken" : " went on after their records were taken") +
         " (members completed collectives with " + (one ? "it" : "them") + " that " +
         (one ? "its record does" : "their records do") + " not hold)";
}

std::string RanksPhrase(const std::vector<int64_t>& sorted) {
  if (sorted.size() == 1) return "rank " + std::to_string(sorted[0]);
  if (sorted.size() > 4) return "ranks " + rs::cli::RankRanges(sorted);
  std::string out = "ranks ";
  for (size_t i = 0; i < sorted.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == sorted.size() ? " and " : ", ") + std::to_string(sorted[i]);
  }
  return out;
}

std::string OpPhrase(const Input& in, const Op& o) {
  const std::string group = o.group < in.groups.size() ? in.groups[o.group].label : "?";
  if (o.p2p && (o.op == rs::NcclOp::kSend || o.op == rs::NcclOp::kRecv) && o.peer) {
    return std::string(rs::OpSpoken(o.op)) +
           (o.op == rs::NcclOp::kSend ? " to rank " : " from rank ") + std::to_string(*o.peer) +
           " (" + group + ")";
  }
  if (o.p2p)
    return "a batch of sends/receives (" + group + ", p2p seq " + std::to_string(o.seq) + ")";
  return std::string(rs::OpSpoken(o.op)) + " seq " + std::to_string(o.seq) + " of " + group;
}

std::string EndPhrase(const Input& in, const Result& r, const End& e) {
  const std::string op = e.op ? OpPhrase(in, *e.op) : "";
  switch (e.kind) {
    case EndKind::kWaitsInNothing:
      return "entered nothing" +
             (e.op ? " after " + op + " (" + OutcomeWord(*e.op) + ")" : std::string()) +
             AtLeast(e.idle_ns);
    case EndKind::kRingWrapped:
      return "shows no entry of it, but its record holds only its latest entries: not proof "
             "that it never entered (a suspect)" +
             (e.op ? std::string("; its last: ") + op : std::string());
    case EndKind::kNoRecord:
      return "wrote no dump: its state is unknown (a suspect)";
    case EndKind::kStuckAlone:
      return "is still in " + op + " (" + OutcomeWord(*e.op) + ")" +
             AtLeast(std::max<int64_t>(0, r.latest_ns - e.op->created_ns)) +
             ", which another member completed";
    case EndKind::kMismatched: {
      for (const FieldMismatch& m : r.mismatches) {
        if (!e.op || !m.by_history || !IsCallOf(m, e.rank, *e.op)) continue;
        if (m.p2p) {
          const int64_t peer = e.rank == m.sender ? m.receiver : m.sender;
          return "called " + op + " with a " + m.field + " unlike rank " + std::to_string(peer) +
                 "'s matching " + (e.rank == m.sender ? "receive" : "send") +
                 ", and unlike its own other calls of it with that peer, which pass rank " +
                 std::to_string(peer) + "'s value (see the mismatches)";
        }
        return "called " + op + " with a " + m.field +
               " unlike the other member(s), and unlike its own other calls of it in that "
               "group, which pass the others' value (see the mismatches)";
      }
      return "called " + op + " unlike the other members (see the mismatches)";
    }
    case EndKind::kInCycle:
      return "waits in " + op + " in a cycle of ranks waiting for each other";
    case EndKind::kStuckTogether:
      return "is in " + op + " (" + OutcomeWord(*e.op) + ")" +
             AtLeast(std::max<int64_t>(0, r.latest_ns - e.op->created_ns)) +
             " with every member of it, none completed: no rank lags there";
    case EndKind::kUnattributed:
      return "waits in " + op + ", whose peers the record does not name";
    case EndKind::kCycleUnproven:
      return "waits in " + op +
             " in a cycle of ranks waiting for each other, but the records lost the pairs' "
             "count (a wrapped ring): the peer may have done its part already, so no proof of "
             "a deadlock";
    case EndKind::kRecordOlder:
      return std::string("ends its record") + (e.op ? " in " + op : std::string()) +
             ", where a record taken a moment before the others' looks the same: no proof "
             "that it stopped";
  }
  return "";
}

std::vector<std::string> Chains(const Input& in, const Result& r, size_t max_lines) {
  ChainWriter w(in, r);
  std::set<int64_t> waited;
  for (const Edge& e : r.edges) waited.insert(e.to.begin(), e.to.end());
  std::vector<int64_t> starts;
  for (int64_t x : r.waiting) {
    if (!waited.count(x)) starts.push_back(x);
  }
  for (const auto& c : r.cycles) {  // a cycle nobody outside waits on starts at its first rank
    if (std::none_of(c.begin(), c.end(), [&](int64_t x) {
          return std::find(starts.begin(), starts.end(), x) != starts.end();
        })) {
      starts.push_back(c.front());
    }
  }
  for (const End& e : r.ends) {  // ends nobody waits for: they are in an operation themselves
    if (e.waited_by.empty() && e.kind != EndKind::kInCycle) starts.push_back(e.rank);
  }
  std::map<std::string, std::vector<int64_t>> by;  // what they do -> who
  std::vector<std::string> order;
  for (int64_t s : starts) {
    std::vector<int64_t> path;
    std::string what = w.Continue(s, 0, path);
    if (!by.count(what)) order.push_back(what);
    by[what].push_back(s);
  }
  std::vector<std::string> lines;
  for (const std::string& what : order) {
    std::vector<int64_t> who = by[what];
    std::sort(who.begin(), who.end());
    if (lines.size() + 1 == max_lines && order.size() > max_lines) {
      lines.push_back("... and " + std::to_string(order.size() - lines.size()) +
                      " more chain(s): the JSON report's edges hold them all");
      break;
    }
    lines.push_back((who.size() == 1 ? RanksPhrase(who) : "each of " + RanksPhrase(who)) + " " +
                    what);
  }
  return lines;
}

std::string Reason(const Input& in, const Result& r) {
  const std::string op = r.stuck ? OpPhrase(in, *r.stuck) : "";
  switch (r.verdict) {
    case Verdict::kNone:
      if (r.stuck) {
        return op +
               " was in flight on every member when recorded, none behind and none past "
               "its timeout: a record taken mid-step looks alike";
      }
      return "every recorded operation completed; nothing is waited in";
    case Verdict::kUndetermined:
      return UndeterminedReason(r);
    case Verdict::kStuckInOp:
      return "every member entered " + op + " and none completed it" +
             (r.timed_out ? " (it timed out)" : "") +
             ": no rank lags there, and the records cannot say which rank or link stalls it "
             "(network or device)";
    case Verdict::kHang:
    case Verdict::kDeadlock:
    case Verdict::kMismatch:
      break;
  }
  return "";
}

}  // namespace rs::analyzer::wait
