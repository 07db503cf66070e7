// Whether a communicator's NCCL calls block until their collective is done or only enqueue it:
// one definition for the merge (which exits bound its clock alignment; it writes the decision
// into the merged database's call_modes table) and the report (whether a late entry is a late
// arrival), which reads that table and decides itself only where no merge did.
//
// Facts it rests on:
//  - An NCCL call takes a CUDA stream and returns once its operation is enqueued on it; the
//    device runs it later (NCCL user guide, "CUDA Stream Semantics"). A CPU framework's call (and
//    NCCL's under CUDA_LAUNCH_BLOCKING=1) returns only once its collective is done.
//  - No rank can finish a rendezvous collective (rs::NcclOpTraits::rendezvous) before every rank
//    has entered it, so a call of one that returned before another rank's call of the same
//    collective entered only enqueued it. Ranks on one node share a clock: that order needs no
//    alignment. Across nodes it holds only beyond the two clocks' alignment bound.
//  - The profiler plugin's converted device times are never earlier than the truth and at most
//    clock_error_ns later (libnccl-profiler-rankscope(7)): a call that returned before its device
//    start minus that bound returned before the device started it.
//
// The evidence, strongest first (DecideCallMode):
//   device      at least half of the calls with a bounded device start returned before it
//   same_node   two or more calls of a collective on one node: a call that returned before
//               another entered, in at least kEnqueueFraction of those collectives, means
//               enqueue; fewer, blocking
//   across      (needs aligned clocks: the report's) early exits vs waits, kMinOrderings each
//   others      an undecided communicator takes the mode every decided one agrees on
//               (ResolveUndecided)
//   by_process  none of these: a process that used a GPU (rs::EnqueuingProcesses) is taken to
//               enqueue, the others to block
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs {

enum class CallMode { kBlocking, kEnqueue, kByProcess };

// 'blocking' | 'enqueue' | 'by_process' (the call_modes.mode column).
std::string_view CallModeName(CallMode mode);
std::optional<CallMode> ParseCallMode(std::string_view name);

// What a communicator's calls showed. Every count but the last two is read on one node's clock
// and adds up across nodes.
struct CallModeEvidence {
  int64_t device_calls = 0;            // finished calls with a bounded device start
  int64_t returned_before_device = 0;  // ... that returned before it
  int64_t same_node_checked = 0;       // (node, collective) with two or more finished calls
  int64_t same_node_early_exits = 0;   // ... where one returned before another entered
  int64_t early_exits = 0;  // collectives with such an exit across nodes, beyond the bound
  int64_t waits = 0;  // collectives whose first call returned only after the last (clearly later)
                      // entry
  CallModeEvidence& operator+=(const CallModeEvidence& o);
};

// Same-node early exits needed to call a communicator's calls enqueues. Blocking calls never
// show one. Enqueued calls show one whenever two ranks of a node enqueue further apart than an
// enqueue takes (microseconds): most collectives in training. One in twenty still marks a
// communicator whose ranks enqueue nearly in step, while a few defective rows (a call matched to
// the wrong collective) do not turn a blocking communicator's evidence away.
inline constexpr double kEnqueueFraction = 0.05;
// Orderings across nodes needed either way: a single one could be a clock error beyond its
// bound at one moment; two, outnumbering the other kind, are not.
inline constexpr int64_t kMinOrderings = 2;

struct CallModeDecision {
  CallMode mode = CallMode::kByProcess;
  std::string evidence;  // one sentence: what decided it
};

CallModeDecision DecideCallMode(const CallModeEvidence& e);

// One communicator's evidence and the decision on it (a call_modes row).
struct CommunicatorCallMode {
  int64_t comm_id_hash = 0;
  CallModeEvidence evidence;
  CallModeDecision decision;
};

// A recording's decisions, and the processes that decide for the communicators left undecided.
struct CallModes {
  std::map<int64_t, CommunicatorCallMode> communicators;    // by comm_id_hash
  std::set<std::pair<std::string, int64_t>> gpu_processes;  // rs::EnqueuingProcesses
  // Some communicator left to its processes (gpu_processes is needed).
  bool AnyUndecided() const;
  // Whether a call of `comm` by process (node, pid) only enqueues (a communicator not listed is
  // left to its processes).
  bool Enqueues(int64_t comm, const std::string& node, int64_t pid) const;
};

// Whether an NCCL call returns before its work is done is the library's and its process's
// (stream semantics, CUDA_LAUNCH_BLOCKING), not one communicator's: where every communicator
// decided by evidence agrees, the undecided ones (kByProcess: e.g. one rank per node, or
// sends and receives only) take that mode.
void ResolveUndecided(std::map<int64_t, CommunicatorCallMode>& modes);

// The NCCL calls whose entry and exit count as evidence (here and in the merge's rendezvous):
// finished (state 'complete', a duration), successful, not in a group (a grouped call's work
// starts at ncclGroupEnd), of a recorded communicator.
inline constexpr std::string_view kFinishedCallSql =
    "comm_id_hash IS NOT NULL AND duration_ns IS NOT NULL AND duration_ns >= 0"
    " AND state = 'complete' AND in_group = 0 AND (ret IS NULL OR ret = 0)";

// The clock-free evidence (device, same_node) of every communicator with NCCL calls of a
// rendezvous collective in `db` (a bundle, or a merged database: counted per node, where times
// are aligned by one offset per node, which leaves one node's order as recorded). Calls counted:
// finished (state 'complete', a duration), successful, not in a group (a grouped call's work
// starts at ncclGroupEnd).
Result<std::map<int64_t, CallModeEvidence>> ReadCallModeEvidence(Db& db);

// The decisions a merge wrote (call_modes), by comm_id_hash; nullopt for a bundle or a merged
// database written before the table existed.
Result<std::optional<std::map<int64_t, CommunicatorCallMode>>> ReadStoredCallModes(Db& db);

// Writes one decision into call_modes.
Result<void> WriteCallMode(Db& db, const CommunicatorCallMode& c);

}  // namespace rs
