// The report of `rankscope-analyze report`: what the analyses conclude and the numbers they
// rest on. Built by BuildReport (report.h), printed by the renderers (report_render.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/confidence.h"

namespace rs::analyzer {

// How one node's timestamps relate to the reference clock, and how far they can be off.
struct NodeClock {
  std::string node;
  int64_t offset_ns = 0;       // node's lead over the reference (already applied in a merged db)
  int64_t error_bound_ns = 0;  // |aligned - true| <= error_bound_ns
  std::string method;          // 'reference' | 'rendezvous' | 'wall_clock' | 'as_recorded'
  int64_t rendezvous_count = 0;
  // What the alignment rests on, kinds of rendezvous with counts ('device 120, comm_init 1');
  // empty where the merge did not say (an earlier merge, or a single bundle).
  std::string evidence;
};

// A number behind a conclusion, e.g. {"median_lateness_ns", 8.1e6}.
using Value = std::pair<std::string, double>;

struct Evidence {
  std::string kind;     // 'lateness', 'duration', 'retransmits', 'clock', ...
  std::string summary;  // one sentence for people
  std::vector<Value> values;
};

// Cause vocabulary (fixed): network, cpu_contention, io, compute, hang, unknown.
struct Cause {
  std::string kind;
  double score = 0;  // 0..1: share of the lost time this cause explains (ranking key)
  std::string summary;
  std::string remediation;
  std::vector<Value> values;
};

// A process that held a CPU while the ranks of a finding waited for one (sched_events: the
// run-queue waits of the ranks' processes between their first and last collective, by the task
// that had the CPU, other_comm and other_pid).
struct Competitor {
  std::string comm;
  int64_t pid = -1;
  int64_t ran_ns = 0;  // its time on the CPU while the ranks waited in the run queue
};

// Shapes of a straggler (Straggler::shape):
//  host_bound    its host enqueued the collectives late, so its device idled waiting for work
//  device_bound  enqueued on time, its device reached the collectives late (slower device work)
//  network       every device arrived about together, the collectives then took longer than
//                usual for their size, with repairs on its node's connections
//  hang          it lags the others at a collective that never completed
//  host_entry    blocking calls: the host entered late; host and device are one there
//  device_unseen the calls only enqueue and no device time was recorded: late enqueues are
//                seen, a late device is not
// A collective a straggler's process arrived last in, on the collective's basis (device start
// where every rank's was seen, else host entry): what a trace marks (rankscope-export
// --report).
struct LateArrival {
  uint64_t comm = 0;
  int64_t seq = 0;
  std::string op;
  int64_t pid = 0;
  std::optional<int64_t> rank;
  int64_t arrival_ns = 0;
  int64_t behind_first_ns = 0;  // its arrival after the collective's first
};

// At most this many LateArrivals per finding: the latest behind the first, listed in time order.
inline constexpr size_t kMaxLateArrivals = 500;

struct Straggler {
  std::string node;
  std::optional<int64_t> rank;  // empty: the whole node (network) or rank unknown
  std::optional<int64_t> pid;
  std::vector<int64_t> ranks;  // the late ranks it stands for (node-level: all of its node's)
  std::vector<int64_t> pids;   // their processes (node-level: every recorded one of its node)
  std::string cause;           // kind of causes[0]
  Confidence confidence = Confidence::kUndetermined;
  double confidence_score = 0;
  bool ordering_determined = true;  // false: lateness difference inside the clock error bound
  // Error bound the ordering conclusion rests on; a node-level finding at least its node's own
  // alignment bound (NodeClock::error_bound_ns).
  int64_t clock_bound_ns = 0;
  std::string basis;  // what kind of timestamps the conclusion used
  // 'device_start' (every arrival a device start), 'host_entry', 'mixed', 'device_waits'
  // (the clocks could not decide; device durations did). A resource finding (retransmits,
  // block I/O, run-queue shares) holds the basis of the lateness beside it
  // (NameResourceLatenessBasis); '' while the report is built, and for hang culprits.
  std::string arrival_basis;
  std::string shape;  // see above; '' where no shape applies
  std::string summary;
  std::vector<Cause> causes;  // ranked, best first
  std::vector<Evidence> evidence;
  std::vector<Competitor> competitors;     // the busiest first; where a cause is cpu_contention
  std::vector<LateArrival> late_arrivals;  // not for hang culprits
  int64_t late_arrivals_total = 0;         // before the kMaxLateArrivals cut
};

// A node's lateness against the other nodes' in each collective they shared (NodeStats): its
// lateness minus the median of theirs in that collective, the 10 % trimmed mean of that and
// its standard error (collectives.cc MeanAndError). Pairing within a collective removes what
// every node shares (the job's own pace), so a node late in one collective of each step shows
// although its median does not.
// When a node became later than the others: the split of its paired lateness (NodeExcess), in
// time order, where the mean after differs most from the mean before, in standard errors
// (collectives.cc FindOnset says when it counts).
// A node's paired lateness over some of its collectives (all of them, or those after an onset).
struct PairedExcess {
  int64_t excess_ns = 0;  // mean over shared collectives of its lateness minus the others' median
  int64_t noise_ns = 0;   // that mean's standard error
  int64_t collectives = 0;
  int64_t latest = 0;   // of them, those where it alone was the latest node
  double latest_z = 0;  // ... against chance (1/k among k nodes)
  // Later than the others: a positive excess beyond three standard errors (one-sided, 0.13 %
  // by chance for a normal mean), or, where lateness's heavy tails swell that error, the latest
  // node more often than chance at the one-sided 1 % level (z >= 2.33; the run-queue share or
  // block latency that must also stand out is evidence of its own). With blocking collectives a
  // CPU-starved node of 4 arrived 51 +- 28 ms later, 1.8 errors, and was the latest in 16 of 34
  // (z 2.97), twice in 4 runs. The resource findings (block I/O, CPU) need this,
  // not any excess: on a clean job of 4 nodes x 2 ranks on 2 CPUs, a node whose median lateness
  // was tens of microseconds above the others' (spreads of 1.5-1.9 ms) and whose ranks had
  // waited more for a CPU was named at medium confidence. Paired within each collective, not
  // median against median: a node whose slow reads delay one collective a step (test bed 'io',
  // 4 nodes) had a median 0.13 ms above the others' with spreads of 19-34 ms; a CPU-starved
  // node (its ranks waiting for a CPU 89% of the time, the others 20%) arrived 16 +- 7.8 ms
  // later, 2.1 errors, but was the latest of 3 nodes in 37 of 64 collectives (z 4.2).
  bool later() const {
    return collectives >= 2 && excess_ns > 0 &&
           (excess_ns > std::max<int64_t>(1, 3 * noise_ns) || latest_z >= 2.33);
  }
};

struct Onset {
  int64_t at_ns = 0;                    // the first collective after the change (aligned)
  int64_t before_ns = 0, after_ns = 0;  // mean excess before and after (winsorized at 5/95 %)
  int64_t before = 0, after = 0;        // collectives on each side
  double t = 0;                         // the change over its standard error
  PairedExcess since;                   // the paired excess over the collectives from at_ns on
};

struct NodeExcess : PairedExcess {
  std::optional<Onset> onset;  // it became later during the recording (FindOnset)
  // Later over the whole recording, or from its onset on: a node that became later part way
  // through has its change diluted by the collectives before it. Test bed 'io' with blocking
  // collectives (4 nodes, writers on node3's disk from step 10 of 30): over all 34 collectives
  // 3.33 +- 1.56 ms (2.1 errors), the latest in 13 (z 1.8), so a disk 11x slower than the
  // others' was "not shown to delay the job"; from the onset (a change of 4.6 errors) on, 7.41 ms
  // over 20. The onset must reach its own 4.5 errors (FindOnset) before the window after it is
  // weighed, and that window must pass the same test: a change alone (from early to on time)
  // makes no node later.
  bool later() const { return PairedExcess::later() || later_since_onset(); }
  bool later_since_onset() const { return onset && onset->since.later(); }
};

// Per rank (or per node) arrival statistics over matched collectives.
struct ArrivalStats {
  std::string node;
  std::optional<int64_t> rank;
  std::optional<int64_t> pid;
  int64_t collectives = 0;
  int64_t last_count = 0;
  int64_t median_lateness_ns = 0;
  int64_t p90_lateness_ns = 0;
  int64_t median_duration_ns = -1;  // -1: no completed calls (device time where seen)
  // Host-side view of the same collectives: its NCCL call entry (its enqueue, on a GPU) minus
  // the earliest entry. Equal to median_lateness_ns where no device time was recorded.
  int64_t median_host_lateness_ns = 0;
  // ... over this many of its collectives: a CUDA graph replay has no host entry (its NCCL
  // call was made once, at the capture; the graph's launch is not recorded)
  int64_t host_collectives = 0;
  int64_t device_collectives = 0;  // of `collectives`, those whose arrivals are device starts
  // Clock-free view of device arrivals: in each collective timed on every device, the longest
  // device duration minus its own (early ranks wait inside for the late one; each duration is
  // read on one device clock). -1: no such collective.
  int64_t wait_collectives = 0;
  int64_t median_wait_lateness_ns = -1;
  int64_t p90_wait_lateness_ns = -1;
  int64_t wait_last_count = 0;  // collectives in which it waited least
  // Per node only (NodeStats): against the other nodes, on arrivals and on the clock-free
  // wait lateness; empty (0 collectives) where never paired.
  NodeExcess paired, paired_wait;
};

// One member of a communicator over that communicator's compared collectives (GroupView).
struct GroupMember {
  std::string node;
  std::optional<int64_t> rank;  // global rank
  int64_t pid = 0;
  int64_t collectives = 0;
  int64_t last_count = 0;          // collectives in which it alone was the latest
  int64_t median_lateness_ns = 0;  // its own lateness (collectives.h), on the group's basis
  int64_t excess_ns = 0;     // mean (10 % trimmed) of its own lateness minus the others' median
  int64_t excess_se_ns = 0;  // ... and that mean's standard error
};

// A communicator (tensor-, pipeline-, data- or expert-parallel group) seen on its own: who in
// it arrives late, on its own account (lateness inherited from another group is removed).
struct GroupView {
  uint64_t comm = 0;
  std::string label;  // "communicator 0x... (ranks 2-3)"
  std::string basis;  // 'device_waits' (clock-free) | 'arrivals' (device starts or host entries)
  int64_t collectives = 0;
  int64_t median_duration_ns = -1;   // of its calls (device time where seen); -1: none finished
  std::vector<GroupMember> members;  // the latest (largest excess) first
};

// One rank over every communicator it is a member of (the cross-group view): where it was the
// latest member and by how much, summed. A view, not a verdict: in a clean pipeline-parallel
// job some rank of each group is systematically a little later (the stages' work differs).
struct RankAcrossGroups {
  std::string node;
  std::optional<int64_t> rank;
  int64_t pid = 0;
  int64_t groups = 0;     // communicators it is compared in
  int64_t latest_in = 0;  // ... of which it is the latest member (GroupView::members[0])
  // Over those: its mean excess times the collectives, summed: its own lateness above the other
  // members' in total.
  int64_t excess_total_ns = 0;
};

// Something a rank was doing at the end of the recording (hang reports).
struct Activity {
  std::string kind;            // 'nccl' | 'cuda' | 'exit'; 'gloo' for a gloo Flight Recorder entry
  std::string what;            // op or API name ('ALL_REDUCE', 'cudaMemcpy'); 'exit' for kind exit
  std::optional<int64_t> seq;  // nccl
  int64_t timestamp_ns = 0;
  std::optional<int64_t> duration_ns;  // empty: in flight at the end of the recording
  std::string state;                   // 'in_flight' | 'complete' | 'exited'
  std::optional<int64_t> exit_code;    // kind exit
  std::string stack;                   // caller frames, one per line ('' when not recorded)
};

struct RankProgress {
  std::string node;
  std::optional<int64_t> rank;
  int64_t pid = 0;
  std::optional<int64_t> last_entered_seq;  // last sequence it called (entered or enqueued)
  std::optional<int64_t> last_started_seq;  // ... its device started (gpu_ops)
  // ... completed: on its device where seen, else its blocking call returned; empty for
  // enqueue-only calls without a device view (their completion was not seen)
  std::optional<int64_t> last_completed_seq;
  std::optional<int64_t> in_flight_seq;
  std::string in_flight_op;
  int64_t in_flight_since_ns = 0;
  // State at the hang's collective, as a flight recorder keeps it: 'not_enqueued' |
  // 'enqueued' | 'started' | 'completed'; empty without a hang.
  std::string state;
  // What the state rests on: 'device' (the profiler plugin's gpu_ops), 'host_call' (a blocking
  // NCCL call: in flight = started), 'host_enqueue' (an enqueue seen, its device not), 'none'.
  std::string state_basis;
  std::vector<Activity> doing;  // hang culprits (and blocked ranks): what they were doing
  // ... and the last NCCL call they completed (kind 'nccl', state 'complete'; empty: none)
  std::optional<Activity> last_completed_call;
};

struct Mismatch {
  uint64_t comm_id_hash = 0;
  int64_t seq = 0;
  std::string field;  // 'op' | 'count' | 'datatype' | 'root'
  // value -> the ranks (labels) that used it
  std::vector<std::pair<std::string, std::vector<std::string>>> variants;
  std::string process_group;  // Flight Recorder mismatches: 'process group 0 (default_pg)'
  // A send and its receive that differ (wait_graph.h rule 11): the global ranks; seq is then
  // the pair's place (the seq-th transfer from sender to receiver in the group).
  std::optional<int64_t> sender, receiver;
};

// Where the hang's waiting chains end (wait_graph.h): a culprit with what shows it.
struct HangCulprit {
  int64_t rank = 0;
  std::string label;  // "node1 rank 2"
  std::string node;
  int64_t pid = 0;
  // 'waits_in_nothing' | 'stuck_alone' | 'mismatched' | 'in_cycle' | 'no_record' (a suspect:
  // no dump) | 'ring_wrapped' (a suspect: its record does not reach back far enough)
  std::string kind;
  std::string evidence;  // in words: "entered nothing after all-reduce seq 49 of ... for 3 min"
  // The operation it is in, or the last it entered where it is waited for ('' / none: no record)
  std::string op;
  std::optional<int64_t> seq;
  std::string process_group;
  std::string state;               // that operation's state ('completed', 'enqueued', ...)
  int64_t idle_ns = -1;            // its last entry to the latest time recorded; -1: unknown
  std::vector<int64_t> waited_by;  // ranks waiting for it directly
};

// One edge of the wait-for graph: a rank waiting in an operation for other ranks.
struct HangEdge {
  int64_t from = 0;
  std::string op;
  int64_t seq = 0;  // collective sequence; p2p: the rank's own p2p sequence
  bool p2p = false;
  std::string process_group;
  std::vector<int64_t> to;
};

struct HangReport {
  bool detected = false;
  uint64_t comm_id_hash = 0;
  int64_t seq = -1;
  std::string op;
  std::vector<std::string> culprit_nodes;
  std::vector<int64_t> culprit_ranks;
  std::vector<std::string> culprit_labels;  // "node1 rank 2" (also for ranks without a number)
  std::vector<int64_t> waiting_ranks;
  // From the first in-flight entry to the end of the recording; Flight Recorder: at least this
  // long, from the stuck entry's creation to the latest time the dumps hold (and at least its
  // timeout where PyTorch timed it out)
  int64_t stuck_for_ns = 0;
  // High, or medium where device-side state was not seen; empty without a hang.
  std::optional<Confidence> confidence;
  // 'device' (gpu_ops states), 'host_call' (blocking calls in flight), 'host_enqueue' (who
  // enqueued what, the others blocked in CUDA sync calls; device state not seen),
  // 'flight_recorder' (PyTorch Flight Recorder dumps: fr_hang.h)
  std::string basis;
  std::string process_group;  // basis 'flight_recorder': 'process group 0 (default_pg)'
  std::string summary;
  std::vector<RankProgress> progress;  // of the stuck communicator (or every one if no hang)
  std::vector<Mismatch> mismatches;
  // The hang engine's view (wait_graph.h; the Flight Recorder analysis fills it): 'hang' |
  // 'deadlock' | 'mismatch' | 'stuck_in_op' | 'undetermined' | 'none'; '' where not run.
  std::string kind;
  std::string reason;                 // kinds undetermined, none, stuck_in_op: why, in words
  std::vector<HangCulprit> culprits;  // every culprit, each with its evidence
  std::vector<std::string> chains;    // the waiting chains in words
  std::vector<std::vector<int64_t>> cycles;
  std::vector<HangEdge> edges;  // at most kMaxHangEdges
  size_t edges_total = 0;
};

// Edges kept in a report (the JSON lists them): chains of thousands of ranks stay readable.
inline constexpr size_t kMaxHangEdges = 2000;

// A rank that entered collectives late by its Flight Recorder entries: their device durations
// where every member's entry has one, else their creation times (fr_lateness.h).
struct FrLateEntry {
  int64_t rank = 0;
  std::string label;        // "node1 rank 3", or "rank 3"
  int64_t last = 0;         // collectives it entered last, by at least the floor
  int64_t collectives = 0;  // collectives of two or more dumped members it took part in
  int64_t median_behind_ns = 0;
  int64_t by_duration = 0;  // of `last`: read from device durations (clock-free)
};

// A rank last in more than half of its collectives, mostly because it had waited for another
// just before (fr_lateness.h): not named, its lateness traced to `root`.
struct FrTracedEntry {
  int64_t rank = 0;
  std::string label;
  int64_t inherited = 0;  // late entries traced to other ranks
  int64_t collectives = 0;
  int64_t root = 0;
  std::string root_label;
};

// What PyTorch Flight Recorder dumps merged into the recording say (fr_hang.h).
struct FlightRecorderSummary {
  int dumps = 0;
  std::vector<int64_t> dumped_ranks;
  std::vector<int64_t> missing_ranks;  // members of a process group without a dump
  std::vector<std::string> versions;   // the dumps' schema versions, each once
  int unaligned_dumps = 0;             // dumps whose times are their host's wall clock
  HangReport hang;                     // basis 'flight_recorder'
  // How it compares with the recorder's own hang analysis: 'agree' | 'disagree' (both are
  // shown, confidence lowered) | 'flight_recorder_only' (the hang verdict comes from the dumps)
  // | 'recorder_only' | 'no_hang'.
  std::string agreement;
  // What the report should say of them: how a group's members were found where no dump lists
  // them, records taken at different moments.
  std::vector<std::string> notes;
  // Ranks entering collectives late by their entries, and the entry-time lateness under which
  // nothing is counted (the hosts' clocks may differ by that much).
  std::vector<FrLateEntry> late_entries;
  std::vector<FrTracedEntry> late_traced;
  int64_t late_floor_ns = 0;
  int64_t late_by_duration = 0;  // collectives compared by device durations
};

// Time series for the plots (time in ns since the report's time zero). The plots span the
// matched collectives (the first entry or arrival to the last completion, or to the recording's
// end while one is in flight), not the recording; events outside that window are not drawn.
// Tooltips name the collectives behind a mark.
struct PlotCollective {
  std::string op;
  int64_t seq = -1;   // -1: none
  int64_t at_ns = 0;  // its first arrival, since the time zero
};
// The matched collectives that begin in one column.
struct BinCollectives {
  std::string ops;                        // their ops, distinct, joined by '/'
  int64_t first_seq = -1, last_seq = -1;  // -1: none began in this column
  int64_t count = 0;
};
struct Heatmap {
  std::vector<std::string> rows;                   // participant labels
  std::vector<std::string> row_nodes;              // each row's node
  std::vector<std::optional<int64_t>> row_ranks;   // ... and rank, where known
  std::vector<int64_t> column_start_ns;            // start of each column (collective bins)
  std::vector<std::vector<int64_t>> cells;         // [row][col]: max lateness in bin, -1 = none
  std::vector<std::vector<PlotCollective>> worst;  // [row][col]: the collective of that max
};
struct NodeSeries {
  std::string node;
  std::vector<std::pair<int64_t, double>> points;  // (bin start ns, value)
};
struct Plots {
  int64_t time_zero_ns = 0;
  int64_t bin_ns = 0;
  int64_t from_ns = 0;                  // start of the first column, since time_zero_ns
  int bins = 0;                         // columns, from from_ns on
  std::vector<BinCollectives> columns;  // [col]
  Heatmap lateness;
  std::vector<NodeSeries> durations;    // mean collective duration (ns) per bin
  std::vector<NodeSeries> retransmits;  // segments of repairs between nodes per bin
                                        // (Retransmit::link_repair) sent or received; counts
  std::vector<NodeSeries> runq;         // run-queue latency (ns) per bin
};

// What the recording's timing rests on.
struct Timing {
  // Arrivals of the matched collectives: 'device_start' (all), 'host_entry' (none from the
  // device), 'mixed'; '' without matched collectives.
  std::string arrival_basis;
  int64_t device_collectives = 0;  // matched collectives whose arrivals are device starts
  // ... of them with every rank's wait at its kernel's opening barrier (symmetric kernels,
  // profiler API v7): their clock-free waits are measured, not modelled from durations
  int64_t barrier_collectives = 0;
  int64_t host_collectives = 0;  // ... whose arrivals are host entries
  // ... left out of lateness: some rank's device start is missing and the calls only enqueue
  // (compared on device elsewhere, their entries are no arrival)
  int64_t excluded_collectives = 0;
  // CUDA graphs: gpu_ops rows of replays compared as collectives of their own; the collectives
  // of captured calls (left out: capturing runs nothing); replay rows left out because some
  // node's capture went unrecorded (CollectiveData::graph_replays_uncompared)
  int64_t graph_replay_ops = 0;
  int64_t graph_captured_collectives = 0;
  int64_t graph_replays_uncompared = 0;
  bool gpu_ops_table = false;  // the recording has the table (a recorder that knows it)
  int64_t device_ops = 0;      // gpu_ops rows of collectives joined to the calls
  // 'blocking' (calls return when the collective is done), 'enqueue' (they return at enqueue,
  // the device completes the work later), 'mixed' (communicators differ), 'unknown'.
  std::string call_semantics;
  std::string semantics_evidence;  // one sentence: what decided it
  // Per communicator (rscore/call_mode.h): 'blocking' | 'enqueue' | 'by_process', and why.
  struct CallMode {
    std::string comm;  // comm_id_hash in hex
    std::string mode;
    std::string evidence;
  };
  std::vector<CallMode> call_modes;
  std::string call_modes_from;  // 'merge' (the merged database's call_modes) | 'report'
};

struct Report {
  std::string input;
  std::string db_kind;
  int64_t start_ns = 0, end_ns = 0;
  std::vector<std::string> nodes;
  int64_t ranks = 0;
  int64_t collectives = 0;  // matched across >= 2 ranks
  int64_t nccl_calls = 0;   // rows considered
  // NCCL calls (not communicator management) of communicators created before the recorder
  // attached: no comm_id_hash (rankscope-record(8)), so no analysis can match them across ranks;
  // on how many nodes.
  int64_t unidentified_calls = 0, unidentified_nodes = 0;
  // The most communicators whose collectives one rank called: above 1 in a job with tensor-,
  // pipeline-, data- or expert-parallel groups, where the recording's hang analysis (hang.h:
  // one communicator) may name a rank that only waits for another group.
  int64_t comms_per_rank = 0;
  std::string verdict;  // first line of every format
  // What the verdict says: 'hang' | 'straggler' | 'undetermined' (the data cannot decide: a
  // lateness inside the clock bound, dumps that cannot tell, or a recording that could not see
  // the GPU side) | 'no_straggler' | 'no_hang' (dumps only) | 'no_collectives'.
  std::string verdict_kind;
  // Verdicts: findings that explain measured lateness (of a rank, a node, or collectives
  // slowed while data moved) or a hang, best first.
  std::vector<Straggler> stragglers;
  // Findings without measured lateness (a node's retransmits, CPU or disk that slowed nothing
  // measured): shown apart, never in the verdict.
  std::vector<Straggler> observations;
  HangReport hang;
  std::optional<FlightRecorderSummary> flight_recorder;  // present where dumps were merged
  std::vector<NodeClock> clock;
  std::vector<ArrivalStats> per_rank;
  std::vector<ArrivalStats> per_node;
  // Per communicator, in a job whose ranks use several (comms_per_rank > 1): empty otherwise.
  std::vector<GroupView> per_group;
  std::vector<RankAcrossGroups> across_groups;  // the largest excess_total_ns first
  // Rows of the per-node table in text, Markdown and HTML: the latest nodes first, this many
  // (0: every node, in natural order). JSON always has every node.
  size_t node_rows = 10;
  // What may make a conclusion wrong, shown at the top: nodes whose clock is aligned by their
  // wall clock only, inputs that look like another job's.
  std::vector<std::string> warnings;
  std::vector<std::string> notes;  // data gaps the reader should know about
  // Nodes merged from summaries (rankscope-analyze summarize), for the notes; not rendered.
  std::vector<std::string> summary_nodes;
  Timing timing;
  Plots plots;
};

}  // namespace rs::analyzer
