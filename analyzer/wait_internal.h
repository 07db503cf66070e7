// The hang engine's parts (wait_graph.h): what each part of wait_graph.cc, wait_index.cc and
// wait_verdict.cc needs of the others. Not used outside the engine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "analyzer/wait_graph.h"

namespace rs::analyzer::wait {

// Lookups over the input: per rank and group its collectives in sequence order, and the
// outcome of every operation (the input's, changed by rule 5).
struct Index {
  explicit Index(const Input& in);

  const Input& in;
  std::map<int64_t, size_t> by_rank;  // rank -> index into in.ranks
  // [rank index][group] -> indices of its collective ops, by seq (then as given)
  std::vector<std::map<size_t, std::vector<size_t>>> collectives;
  std::vector<std::vector<Outcome>> outcome;  // [rank index][op index]
  std::vector<int64_t> last_activity;         // [rank index]: its latest time; 0: none
  int64_t latest_ns = 0;                      // the latest time of every record
  // group -> the highest collective seq some member completed (rule 12)
  std::map<size_t, int64_t> completed_through;
  // [rank index]: its record holds no entry of a collective of one of its groups that some
  // member completed: it issued that after its record was taken (rule 12)
  std::vector<bool> record_older;
  // group -> how long an operation of records taken at different moments must have waited to
  // be stuck alone (rule 12): 10 x p99 of its completed operations' creation-to-completion
  // time, at least 100 ms
  std::map<size_t, int64_t> stuck_ns;
  // Rule 12 found the records taken at different moments (an older record, or open
  // operations a later completion settled).
  bool skewed = false;
  // The records were taken at least this late: the latest time they hold, or the end of a
  // timeout one of their operations ran out (rule 6).
  int64_t taken_at_least_ns = 0;
  // Rule 12: `o`, open in records without a common end for less than its group's stuck
  // threshold.
  bool Young(const Op& o) const;
  // The edge's operation ran out its timeout (rule 6).
  bool TimedOut(const Edge& e) const;
  // Rules 3, 4, 11 and 13: the record of `to` proves that it has not done what the edge's
  // operation waits for. A collective: `to` never reached it (rule 4). A send or receive: the
  // pair's count places it and the peer's record reaches back to its start, so the counterpart
  // it lacks was never issued. Without the count (a Flight Recorder ring that wrapped has lost
  // the early sends and receives) the peer's latest completed send may be the very one
  // awaited: in the test bed's running 1F1B pipeline every ring had wrapped by the dump (2000
  // entries, about 30 steps), and a stage's receive whose send the other stage had completed
  // read as a wait on it.
  bool ProvesUnanswered(const Edge& e, int64_t to) const;
  // [rank index]: the latest start time of its operations in flight, 0: none. PyTorch's dump
  // stamps an operation that started and has not completed with the dump's own moment
  // (dump_entries() runs update_state on copies of the entries; with TORCH_NCCL_ENABLE_TIMING,
  // which gives a Work its start event): PyTorch 2.11's timeout dumps said their stuck
  // all-reduces started 20.2-21.0 s after their creation, each the newest time of its dump.
  std::vector<int64_t> stamped_ns;
  // Rule 12: how long the edge's operation had waited when its rank's record was taken, where
  // that record is stamped (above); none where it is not, or for a recording.
  std::optional<int64_t> StampedWait(const Edge& e) const;
  // The group's stuck threshold (stuck_ns), at least a recording's (hang.h).
  int64_t StuckNs(size_t group) const;
  // Rule 12's measure: op k of rank index ri had waited less than its group's stuck threshold
  // when its record was taken, by its record's stamp where it has one (StampedWait), else
  // counted to the latest time the records hold (Young). Never for a recording.
  bool BriefWait(size_t ri, size_t k) const;

  std::optional<size_t> Find(int64_t rank) const;  // only ranks with a record
  // The rank entered seq or a later collective of the group: its record holds one, or some
  // member completed one (rule 12).
  bool Reached(int64_t rank, size_t group, int64_t seq) const;
  // Rule 4: its record proves it never entered seq of the group.
  bool ProvesNotReached(int64_t rank, size_t group, int64_t seq) const;
  const Op* Last(int64_t rank, size_t group) const;                  // its last collective there
  const Op* At(int64_t rank, size_t group, int64_t seq) const;       // its first entry at seq
  Outcome OutcomeAt(int64_t rank, size_t group, int64_t seq) const;  // kPending: none
  // Rule 11: the peer's counterpart of a placed send or receive of `rank` (its receive of
  // that send, its send of that receive: the same pair_seq); none where not recorded.
  std::optional<Outcome> CounterpartOutcome(int64_t rank, const Op& o) const;

 private:
  // (group, sender, receiver, pair_seq, op) -> (rank index, op index)
  std::map<std::tuple<size_t, int64_t, int64_t, int64_t, rs::NcclOp>, std::pair<size_t, size_t>>
      placed_;
};

// The latest of an operation's times.
int64_t OpTime(const Op& o);

// Rule 7: per group and collective sequence, the values of op, count and dtype that differ.
std::vector<FieldMismatch> FindMismatches(const Index& ix);

struct EndsContext {
  const Index& ix;
  const std::vector<std::vector<size_t>>& open;  // [rank index]: its open ops (rule 1)
  const std::vector<Edge>& edges;
  const std::map<int64_t, std::vector<int64_t>>& waited_by;
  const std::vector<FieldMismatch>& mismatches;
};

End MakeEnd(const EndsContext& ctx, int64_t rank, EndKind kind);
// A rank no edge leaves (rules 4, 7, 8).
End ClassifySink(const EndsContext& ctx, int64_t rank);
// Verdict, culprits, confidence, times and the operation named (rules 7 to 10).
void Decide(const EndsContext& ctx, Result& out);

}  // namespace rs::analyzer::wait
