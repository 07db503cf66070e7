// The hang engine: a wait-for graph over every process group (communicator) of a job, built
// from whatever each rank's record holds (Flight Recorder entries now; device states, NCCL
// calls in flight and host syncs are the same positions), and the ranks where its chains end.
//
// Rules, each with the fact it rests on:
//  1. A rank whose operation of group G has not completed waits in it. Per rank and group only
//     the earliest such collective counts: NCCL runs a communicator's kernels in issue order on
//     one stream, ProcessGroupGloo runs a group's work in queue order, so later ones wait
//     behind it. Every open send/recv counts (a peer each).
//  2. A rank waiting in collective seq N of G waits for every member of G that has not
//     reached N (its last entry in G is older). Every collective of NCCL and gloo needs each
//     member's part to progress (rings and trees pass through every rank), and PyTorch counts
//     collective_seq_id per group identically on every member (FlightRecorder.hpp:
//     "collective_seq_id only increments for true collective operations (over all ranks in
//     the group)").
//  3. A rank waiting in a send (recv) waits for its peer unless the peer has an open recv from
//     (send to) it: the pair matched and both wait inside. Counting sends against receives
//     is not used: a ring that wrapped has lost the early ones.
//  4. "Never reached N" is believed only where the member's record proves it: it holds an
//     older entry of G, or its ring never wrapped (FlightRecorder::record overwrites the oldest
//     entry once max_entries_ are held; ids count from 0, so a first record_id above 0 means
//     older entries were dropped) and lost nothing in between (a dump of active entries only
//     skips ids). Otherwise the edge still stands but its end is a suspect, not a culprit.
//  5. Gloo's Flight Recorder records no completion: its entries stay 'scheduled' and 'retired'
//     is set once the work ran, finished or failed alike (ProcessGroupGloo::runLoop retires
//     after AsyncWork::execute, which catches the error; measured on PyTorch 2.14). Such an
//     entry's outcome is unknown, unless a member provably never entered it: a collective
//     cannot complete without every member, so it failed (rule 2) and the rank waited in it.
//  6. NCCL's Flight Recorder marks an entry retired when the watchdog drops it; "a retired but
//     not completed event has timed out" (FlightRecorder.hpp). Such an entry failed.
//  7. The culprits are the ends of the chains, every one of them: ranks waiting in nothing (the
//     record shows no open operation), ranks still in an operation every other member
//     completed, and members without a record (suspects, low confidence). A set of ranks
//     waiting for each other with no way out is a cycle: a deadlock. Members that called one
//     sequence with another op, element count or dtype (same_count ops only, rscore/nccl_ops.h)
//     are a mismatch; where the stuck operation has one, its minority is the culprit, even where
//     it completed its own call and went on, and a member stuck in it is not (a smaller call
//     can end while the larger one waits for data that never comes); a tie names nobody.
//  8. An operation every member entered and none completed has no laggard: the chain ends in
//     the operation itself (network or device). It is a hang only where it timed out or
//     waited past its timeout; otherwise it is in flight (a dump taken mid-step looks alike).
//  9. Nothing open and some outcome unknown (gloo, rule 5): a clean end and a hang where every
//     rank timed out in the same operation look alike. That is said, never a hang.
// 10. Times are the evidence's own: the latest time any record holds (an entry's creation,
//     discovered start or completion; a recording's end) bounds the moment the records were
//     taken from below. A
//     wait lasted at least from its entry's creation to then, and at least its timeout where
//     it timed out (rule 6); a culprit was idle at least from its last entry to then.
// 11. A send and a receive pair up in issue order: the k-th send from A to B in a group meets
//     B's k-th receive from A there (NCCL runs a communicator's operations in stream order and
//     executes calls to the same peer in order, usage/p2p.html; each p2p connection is a
//     FIFO of steps). NCCL requires the pair to pass the same count and datatype (ncclSend's
//     API documentation) and does not check it: on NCCL 2.28.9 (one H200, socket transport,
//     4 KiB) a float64 receive of a float32 send completed and the job went on with wrong data
//     (tests/torch/dumps/nccl_p2p_dtype: no hang, the mismatch listed); with 4 MiB sent into
//     8 MiB the receive never completed and every rank timed out (nccl_p2p_dtype_4m): one side
//     waits for bytes the other never gives, or (the test bed's byte streams) the pair's later
//     transfers shift by it. A pair that differs is a mismatch; of its two sides, the one whose
//     value is new to its own calls with that peer, where the other side's is what it always
//     passes, is the culprit (rule 7's history tie-break).
// 12. Records are taken at different moments: dumps asked for while the job runs
//     (TORCH_NCCL_DEBUG_INFO_PIPE_FILE: each rank's own thread reads its own pipe) catch each
//     rank at its own position, and a rank's operations can end after its record was taken.
//     A collective some member completed was entered by every member (rule 2's fact), so
//     every member reached it; and a member's earlier collectives of that group completed
//     before it (rule 1's fact). Open ones of those in an older record are completed, not
//     waited in, and no member is waited for to reach them. A member whose record holds no
//     entry of such a completed collective issued it after its record was taken (its record
//     is older). Either shows the records taken at different moments (never in the dumps of 6
//     hung, crashed and mismatched test-bed jobs, written at their timeout; in 13 of 15
//     running ones, asked for through the pipes). There a rank that entered nothing the
//     others wait in, or ranks waiting for each other, prove no stop unless a wait on them ran
//     out its timeout (rule 6). In any records without a common end, a rank alone in an
//     operation others completed proves none either where it has been open for less than its
//     group's stuck threshold (10 x the p99 of its completed operations' creation-to-
//     completion time, at least 100 ms: the recording's threshold, hang.h), counted to the
//     latest time the records hold or the end of a timeout one of them ran out: its record may
//     have been taken before the operation completed there too (one of the 2 running jobs
//     without other sign of skew showed only that; the one real case seen was an aborted
//     communicator's, below). Nor does a rank that entered nothing where the records that
//     wait on it are stamped with their own moments and every such wait is shorter than its
//     group's stuck threshold: PyTorch's dump stamps an operation in flight (started, with
//     TORCH_NCCL_ENABLE_TIMING) with the dump's moment (dump_entries() runs update_state on
//     copies of the entries; 2.11's timeout dumps said their stuck all-reduces started
//     20.2-21.0 s after creation), so such a record shows how long its rank had waited when it
//     was taken. Without timing (no start event) or in gloo's records nothing is stamped and
//     the records read as of one moment (the torch test bed's missing collective, timing off:
//     the others' waits look 88-101 ms long by their own records, taken 6 s into the hang).
//     The test bed's slow rank, a moment behind in its program in dumps asked of a running
//     job, was waited for 58 ms so: read as of one moment it looked stopped.
//     Such an end is 'record_older', no culprit. Where only such ends
//     remain, or chains end in an operation every member entered that did not time out
//     (rule 8's in-flight look) in skewed records or with every wait taking part shorter than
//     its group's stuck threshold (by its record's stamp, else counted to the latest time the
//     records hold: a running pipeline's dump catches a stage in a receive whose send is done
//     while the other stage waits on it), the records cannot decide.
//     Not for a recording (its records end at one moment), nor in a group with a member
//     without a record: it may have died, and an aborted communicator's kernels end, so their
//     events fire and its peers' entries read completed (PyTorch 2.11, NCCL 2.28.9:
//     tests/torch/dumps/nccl_crash, rank 3's all-reduce with the killed rank 1 'completed'
//     6 s after it was issued).
// 13. A wait in a send or receive is on the peer only where the peer's record proves it has not
//     issued the counterpart: both sides are counted from their start (rule 11) and the
//     peer's record lost nothing. A Flight Recorder ring that wrapped has lost the pairs' count,
//     and a pipeline stage's receive whose send the other stage already completed then reads
//     as a wait on that stage: the test bed's running tensor/pipeline/data job (8 ranks, 1F1B,
//     dumps asked for at step 28 of 40) had its rings wrapped (2000 entries hold about 30
//     steps; in a run listed, every rank's first record_id was 350-385) and, in 2 of 10 runs,
//     showed the two pipeline stages each in a receive from the other,
//     285-359 ms old, against stuck thresholds of 0.4-1.9 s (most 0.5-0.9 s). A cycle with such an
//     unproven wait is no deadlock while no wait in it ran out its timeout or lasted its group's
//     stuck threshold (rule 12's measure): its ends are 'cycle_unproven', no culprit, and the
//     records cannot decide. Past that it stays a deadlock of low confidence: had the peer
//     completed the counterpart its data would be there, so the one other reading is a
//     transfer that stalled between them (rule 8), which is said. Likewise a rank that entered
//     nothing is no culprit where every wait on it is such an unproven send or receive, all
//     brief: it may have done its part already ('record_older'); some of them long, it stays
//     a culprit, the hang of low confidence, and the stalled transfer is said alike
//     (End::unproven_wait, Result::culprits_unproven).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/confidence.h"
#include "rscore/nccl_ops.h"
#include "rscore/op_state.h"

namespace rs::analyzer::wait {

// How a rank's operation ended, as its record says.
enum class Outcome : uint8_t {
  kPending,    // not ended when recorded: queued or in flight
  kCompleted,  // completed
  kFailed,     // ended without completing (timed out, aborted)
  kEnded,      // ended, completed or failed: the record cannot tell (rule 5)
};

// What a rank's record rests on.
enum class Basis : uint8_t {
  kFlightRecorderNccl,  // ProcessGroupNCCL's Flight Recorder: completion recorded
  kFlightRecorderGloo,  // ProcessGroupGloo's: no completion, no send/recv (rule 5)
};

struct Op {
  size_t group = 0;  // index into Input::groups
  rs::NcclOp op = rs::NcclOp::kUnknown;
  bool p2p = false;
  int64_t seq = 0;              // collective_seq_id; p2p: the rank's own p2p_seq_id
  std::optional<int64_t> peer;  // p2p: the other rank (global); none: not named (a batch)
  // p2p: its place among this rank's sends to (receives from) `peer` in the group, from 1 at
  // the group's start (rule 11); none: the record cannot tell (it lost its start).
  std::optional<int64_t> pair_seq;
  rs::OpState state = rs::OpState::kEnqueued;
  Outcome outcome = Outcome::kPending;
  std::optional<int64_t> count;  // elements over all inputs
  std::string dtype;
  int64_t created_ns = 0;
  std::optional<int64_t> started_ns, completed_ns;
  // Its time on the device, start event to end event (a Flight Recorder entry with
  // TORCH_NCCL_ENABLE_TIMING=1: WorkNCCL's getDuration); none: not timed.
  std::optional<int64_t> duration_ns;
  std::optional<int64_t> timeout_ns;
  std::string stack;  // caller frames, one per line ('' when not recorded)
};

struct Rank {
  int64_t rank = 0;
  bool recorded = false;  // false: no record of it (no dump)
  Basis basis = Basis::kFlightRecorderNccl;
  // Rule 4: its record lost older operations (wrapped) or some in between (gaps).
  bool wrapped = false;
  bool gaps = false;
  std::vector<Op> ops;
};

struct Group {
  std::string label;             // 'process group 3 (pp)'
  std::vector<int64_t> members;  // global ranks in group-rank order
};

struct Input {
  std::vector<Group> groups;
  std::vector<Rank> ranks;  // one per rank with a record, and members without one
  // When the records were taken, where that is known (a recording's end): rule 10's latest
  // time is then at least this. 0: unknown (a Flight Recorder dump holds no time of its own).
  int64_t taken_ns = 0;
};

// Where a chain ends.
enum class EndKind : uint8_t {
  kWaitsInNothing,  // culprit: no open operation; it never entered what others wait in
  kStuckAlone,      // culprit: in an operation another member completed
  kMismatched,      // culprit: called the stuck operation unlike the others (minority)
  kInCycle,         // culprit: one of ranks waiting for each other (deadlock)
  kNoRecord,        // suspect: a member without a record
  kRingWrapped,     // suspect: its record does not reach back far enough to prove it
  kStuckTogether,   // no culprit: in an operation every member entered and none completed
  kUnattributed,    // no culprit: waits in an operation whose peers the record does not name
  // no culprit: it ends by its position (nothing entered, alone in an operation, in a cycle)
  // for less than the stuck threshold in records taken at different moments (rule 12)
  kRecordOlder,
  // no culprit: in a cycle some wait of which its peer's record cannot prove unanswered (the
  // pair's count lost: a wrapped ring), none timed out or past the stuck threshold (rule 13)
  kCycleUnproven,
};
bool IsCulprit(EndKind k);
const char* EndKindName(EndKind k);  // 'waits_in_nothing', ...

enum class Verdict : uint8_t {
  kNone,          // nothing waits, or only in flight with nobody behind (rule 8)
  kHang,          // chains end at ranks
  kDeadlock,      // chains end in a cycle
  kMismatch,      // the stuck operation was called differently by its members
  kStuckInOp,     // chains end in an operation every member entered (rule 8)
  kUndetermined,  // the records cannot decide (rules 9, 12)
};
const char* VerdictName(Verdict v);  // 'none', 'hang', 'deadlock', ...

// rank -> ranks it waits for, through one of its open operations.
struct Edge {
  int64_t from = 0;
  size_t op = 0;  // index into the waiting rank's ops
  std::vector<int64_t> to;
};

struct End {
  int64_t rank = 0;
  EndKind kind = EndKind::kWaitsInNothing;
  // The operation it is in (kStuckAlone, kStuckTogether, kMismatched, kUnattributed) or the
  // last it entered of the group it is waited in (kWaitsInNothing); none without a record.
  std::optional<Op> op;
  int64_t idle_ns = -1;             // last entry to the latest time recorded; -1: unknown
  std::vector<int64_t> waited_by;   // ranks with an edge to it
  std::optional<size_t> waited_in;  // the group it is waited in (first edge's)
  // Rule 13: every wait on it is a send or receive its record cannot prove unanswered, and
  // some is not brief (else it is 'record_older'): it stays a culprit, but the peer may have
  // completed its side and the transfer stalled between them.
  bool unproven_wait = false;
};

struct FieldMismatch {
  size_t group = 0;
  int64_t seq = 0;  // collectives: the sequence; p2p: the pair's k (Op::pair_seq)
  // p2p (rule 11): the send of `sender` and the receive of `receiver` that differ.
  bool p2p = false;
  int64_t sender = -1, receiver = -1;
  std::string field;  // 'op' | 'count' | 'datatype'
  std::vector<std::pair<std::string, std::vector<int64_t>>> variants;  // value -> ranks
  std::vector<int64_t> minority;  // the one least used value's ranks; empty: a tie
  // A tie of two values decided by the ranks' own other calls of that op in the group: one
  // side's value is what its ranks always pass there, the other's new to them (minority).
  bool by_history = false;
};

// `o`, a call of `rank`, is the mismatch's own call: its collective at m.seq, or its side of
// the pair (rule 11).
bool IsCallOf(const FieldMismatch& m, int64_t rank, const Op& o);

struct Result {
  Verdict verdict = Verdict::kNone;
  std::string reason;  // kNone, kUndetermined, kStuckInOp: why, in words
  Confidence confidence = Confidence::kUndetermined;
  std::vector<Edge> edges;
  std::vector<End> ends;          // every chain end, culprits first, by rank
  std::vector<int64_t> culprits;  // ranks of the culprit ends, ascending
  std::vector<int64_t> waiting;   // ranks with an edge, ascending
  std::vector<std::vector<int64_t>> cycles;
  std::vector<FieldMismatch> mismatches;
  // The operation the verdict names: a culprit's own (stuck alone, mismatched) or the oldest
  // one waiting directly on a culprit; the oldest open one otherwise.
  std::optional<int64_t> stuck_rank;
  std::optional<Op> stuck;
  int64_t stuck_for_ns = 0;  // rule 10, at least
  bool timed_out = false;    // some waiting operation failed or waited past its timeout
  int64_t latest_ns = 0;     // the latest time any record holds
  // Rule 12: ranks whose records are older than their peers' (they went on after them), and
  // open operations completed by a later completion.
  std::vector<int64_t> records_older;
  int settled = 0;
  // Rule 13: a deadlock found where some wait in its cycle is not proven unanswered (it timed
  // out or lasted past the stuck threshold): a stalled transfer reads alike.
  bool cycle_unproven = false;
  // Rule 13: a hang whose every culprit by its record is an End::unproven_wait.
  bool culprits_unproven = false;
  std::vector<std::string> notes;
};

Result Analyze(const Input& in);

}  // namespace rs::analyzer::wait
