// NCCL collectives matched across ranks by (comm_id_hash, seq): who arrived when, who was last.
// Point-to-point calls (per-peer sequence numbers) and communicator management are left out.
// A rank arrives at a collective when its device starts it where rankscope's NCCL profiler
// plugin recorded that (gpu_ops, joined in device_arrival.h), else when its host entered the
// call; one collective is compared on one basis.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/report_model.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::analyzer {

// One process taking part in collectives: (node, pid), with its best known global rank.
struct Participant {
  std::string node;
  int64_t pid = 0;
  std::optional<int64_t> rank;        // processes.rank, else the rank of its first communicator
  std::string comm;                   // processes.comm ("" when unknown)
  int64_t device_clock_error_ns = 0;  // largest conversion bound of its device arrivals
  int64_t device_unbounded = 0;       // device arrivals without a conversion bound
  bool rank_recorded = false;         // rank is processes.rank (RANK / SLURM_PROCID)
  std::string Label() const;          // "node1 rank 3" or "node1 pid 4242"
};

// The order of ranks wherever they are listed (the per-rank table, the heat map, a hang's
// progress): nodes in natural order (node2 before node10), then rank (unknown first), then pid.
bool RankOrderLess(const std::string& node_a, std::optional<int64_t> rank_a, int64_t pid_a,
                   const std::string& node_b, std::optional<int64_t> rank_b, int64_t pid_b);

// The device side of one call, from the NCCL profiler plugin (gpu_ops; aligned in a merged db).
struct DeviceOp {
  int64_t enqueue_ns = 0;                 // NCCL launched it (host clock)
  std::optional<int64_t> start_ns;        // the device reached it (first channel started)
  std::optional<int64_t> end_ns;          // ... finished it
  std::optional<int64_t> clock_error_ns;  // bound of the device -> host conversion
  std::string state;                      // 'enqueued' | 'started' | 'completed' at the end
  // Its kernel's wait at the opening barrier with its team, on its own device clock: NCCL 2.31's
  // initial_sync phase of a symmetric-memory kernel (gpu_ops.kernel_symmetric = 1); unset for
  // any other kernel (whose initial_sync ends before any exchange) or an older profiler API.
  std::optional<int64_t> barrier_wait_ns;
};

// A CUDA graph replay's collective has no call of its own (gpu_ops.seq NULL): its seq is its
// number among its communicator's replayed collectives (gpu_ops.graph_replay_seq) past this
// base, so that it never meets a call's seq; the same replay number is the same collective on
// every rank whose capture was recorded (the plugin's rule, gpu_plugin.c replay_numbering).
inline constexpr int64_t kGraphReplaySeqBase = int64_t{1} << 40;
// A collective of a communicator created before the recorder started (gpu_ops.comm_id_hash NULL:
// the recorder names a communicator when it sees it created) is known by NCCL's own names only,
// which its profiler plugin records on every rank alike: commHash (gpu_ops.nccl_comm_hash, the
// call's comm here) and seqNumber (nccl_seq: counted per communicator and op from 0). Its seq is
// past this base, one block per op, so that it never meets a call's or a replay's.
inline constexpr int64_t kNcclSeqBase = int64_t{1} << 50;
inline constexpr int64_t kNcclSeqOpStride = int64_t{1} << 44;
// "seq N", "graph replay N" for a replay's, "NCCL seqNumber N" for one by NCCL's own names.
std::string SeqWords(int64_t seq);

struct NcclCall {
  int32_t participant = 0;
  uint64_t comm = 0;
  int64_t seq = 0;
  std::string op;
  int64_t ts = 0;               // entry (aligned in a merged db)
  int64_t dur = -1;             // -1: in flight at the end of the recording
  std::optional<int64_t> rank;  // rank in this communicator
  std::optional<int64_t> nranks;
  std::optional<int64_t> count;
  std::string datatype;
  std::optional<int64_t> root;
  std::optional<int64_t> peer;  // SEND / RECV: the other side's rank in this communicator
  bool host_seen = true;   // false: only its gpu_ops row saw it (ts = that row's enqueue, dur 0)
  int64_t graph_call = 0;  // a graph replay (seq past kGraphReplaySeqBase): the captured call's
                           // seq (-1: not recorded)
  std::optional<DeviceOp> device;
  // It returned before its collective completed: an enqueue (device seen, or the recording's
  // calls shown to enqueue; see call_semantics.h). Its lateness may carry into the next call.
  bool enqueue = false;
  int64_t arrival = 0;  // device start where its collective is compared on device, else ts
  bool in_flight() const { return dur < 0; }
};

// One (comm, seq) group; calls[begin, end) of CollectiveData::calls, ordered by entry time.
struct Collective {
  uint64_t comm = 0;
  int64_t seq = 0;
  size_t begin = 0, end = 0;
  int64_t first_entry = 0, last_entry = 0;  // host entries
  int64_t last_exit = -1;                   // -1 when some call is still in flight
  // Every call has a device start: arrivals are device starts, completion the last device end.
  bool device_basis = false;
  // ... and every call's kernel timed its wait at the opening barrier (DeviceOp::barrier_wait_ns),
  // every call on one node (one barrier): the waits are measured, not modelled from durations.
  bool barrier_basis = false;
  int64_t first_arrival = 0, last_arrival = 0;
  // Completion: the last device end (device basis; -1 while one has none), else last_exit.
  int64_t done = -1;
  int32_t last = -1;      // participant that arrived last; -1 on a tie
  bool excluded = false;  // left out of lateness (ExcludeEnqueueEntries, graph_captured)
  // Its calls were captured into a CUDA graph (replays name it as their graph_call): they ran
  // nothing and returned at once, so their entries are no arrival; left out of lateness.
  bool graph_captured = false;
  bool matched() const { return end - begin >= 2; }
  bool compared() const { return matched() && !excluded; }  // in the lateness statistics
};

struct CollectiveData {
  std::vector<Participant> participants;
  std::vector<NcclCall> calls;          // ordered by (comm, seq, ts)
  std::vector<Collective> collectives;  // every group, in (comm, seq) order
  // Sends and receives (op 'SEND' | 'RECV'; seq numbers a peer's transfers) of the participants
  // above, for what they held (held_index.h); arrival unset.
  std::vector<NcclCall> p2p;
  int64_t matched = 0;                     // groups with >= 2 participants
  bool gpu_ops_table = false;              // the recording has gpu_ops (rs::HasGpuOps)
  int64_t device_ops = 0;                  // gpu_ops rows of collectives joined to calls
  int64_t device_only_calls = 0;           // ... of them without an NCCL call recorded
  int64_t graph_replays = 0;               // ... of them CUDA graph replays (device_only_calls too)
  int64_t device_ops_by_nccl_names = 0;    // ... of communicators known by NCCL's names only
                                           // (kNcclSeqBase)
  int64_t graph_captured_collectives = 0;  // matched groups of captured calls (left out)
  // Replays left out: some node's capture lacked the device events (metadata
  // gpu_graph_calls_unrecorded), so replay numbers may name different replays across ranks.
  int64_t graph_replays_uncompared = 0;
  int64_t device_collectives = 0;  // matched groups on device basis
  // ... of them with every rank's barrier wait (0 unless every one of them has: SetArrivals)
  int64_t barrier_collectives = 0;
  int64_t excluded_collectives = 0;  // matched groups left out of lateness
  // The calls block: groups that could be compared on device starts are compared on host
  // entries instead (LoadComparedCollectives, report.h); how many there were.
  int64_t device_collectives_set_aside = 0;
  std::map<std::pair<std::string, int64_t>, int32_t> participant_index;  // (node, pid)
};

// A call's duration as compared across ranks: on the device where its collective is on device
// basis and it ended there, else the host call's (-1: not finished).
int64_t ComparedDuration(const Collective& g, const NcclCall& c);

// Loads every collective call (complete or in flight) with a communicator and sequence number,
// joined with its gpu_ops row where the recording has one.
rs::Result<CollectiveData> LoadCollectives(rs::Db& db);

// Finds (or adds) the participant (node, pid); `rank` and `comm` fill a new one.
int32_t AddParticipant(CollectiveData& data, const std::string& node, int64_t pid,
                       std::optional<int64_t> rank, const std::string& comm);

// Arrival statistics over matched collectives; per_rank is indexed like participants. A rank's
// lateness is its own: less the time its previous call in another communicator held it
// (collectives.cc, HeldIndex); one communicator's job keeps its plain lateness.
std::vector<ArrivalStats> ParticipantStats(const CollectiveData& data);
std::vector<ArrivalStats> NodeStats(const CollectiveData& data);

// When a node became later: over `v` (its paired lateness per collective, at the times `at`),
// the split, in time order, with at least max(8, n/10) collectives on each side, where the mean
// after exceeds the mean before by the most standard errors (values winsorized at their 5th and
// 95th percentiles; the variance pooled within the sides); an onset only where that is at least
// 4.5 errors and the mean after is above none.
std::optional<Onset> FindOnset(const std::vector<int64_t>& at, const std::vector<int64_t>& v);

// Per communicator with at least two members in a compared collective: its members' own
// lateness on one basis (device waits where every compared collective of it has them, else
// arrivals), paired within each collective; members the latest first; label is
// "communicator 0x... (ranks ...)".
std::vector<GroupView> GroupStats(const CollectiveData& data);

// Per rank over the groups of GroupStats: where it was the latest member (members[0], with a
// positive excess) and its excess times the collectives there, summed; the largest sum first.
std::vector<RankAcrossGroups> AcrossGroups(const std::vector<GroupView>& groups);

// The same statistics on the clock-free wait lateness (ArrivalStats::median_wait_lateness_ns):
// lateness, p90 and last count replaced by their wait counterparts.
std::vector<ArrivalStats> AsWaitStats(std::vector<ArrivalStats> stats);

// Quantile q (0..1) of v by nearest rank; v is reordered. Returns 0 for an empty v.
int64_t Quantile(std::vector<int64_t>& v, double q);

}  // namespace rs::analyzer
