// The recorded NCCL collectives of a job whose ranks each use several communicators (tensor-,
// pipeline-, data-, expert-parallel groups) as the hang engine's input (wait_graph.h): a group
// per communicator, its members the global ranks of the processes that called it in
// communicator-rank order, and per rank its collectives in every communicator with their state.
//
// A call's state and outcome, by what the recording holds of it:
//   profiler plugin (gpu_ops)   completed on the device: completed; started or enqueued and
//                               not completed: pending (the device view decides)
//   blocking call, no device    returned: completed; in flight: started, pending
//   enqueue only, no device     enqueued, outcome unknown (Outcome::kEnded): the engine takes it
//                               as failed where a member provably never entered it (rule 5)
// A pending call is taken as progressing where its collective (or, for a send or receive, its
// pair's pending calls) has been pending for less than the stuck threshold at the end of the
// recording, counted from the oldest member's pending call: its communicator's 10 x p99
// completed duration (sends' and receives' device durations included), at least 100 ms, the
// threshold hang.h uses. A recording cut at an arbitrary moment holds calls that began a
// moment ago, and a member that has not reached them yet is no culprit.
// A rank on a node whose recorder lost NCCL or plugin events (sources.drops) has gaps: a call
// missing from its record proves nothing (wait_graph.h rule 4).
// Sends and receives (RecordedP2ps: nccl_events with the plugin's gpu_ops row where it has
// one) are the engine's p2p operations, their peer the global rank of the communicator member
// the call names; without a device state a returned one's outcome is unknown, and the engine
// does not wait in it.
// Not built (nullopt, `why` says why) where a calling process has no global rank
// (processes.rank, from RANK or SLURM_PROCID), two processes claim one, or a communicator has
// members the recording never saw (fewer communicator ranks than its nranks): their global ranks
// would be unknown.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analyzer/collectives.h"
#include "analyzer/fr_wait_input.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::analyzer {

// One send or receive of a process that also called collectives (data.participants).
struct RecordedP2p {
  int32_t participant = 0;
  uint64_t comm = 0;
  int64_t seq = 0;  // per peer
  bool send = false;
  std::optional<int64_t> rank, nranks;
  int64_t peer = 0;  // communicator rank
  std::optional<int64_t> count;
  std::string datatype;  // '' when not recorded
  int64_t ts = 0;
  int64_t dur = -1;  // -1: in flight at the end of the recording
  std::optional<DeviceOp> device;
};

// The sends and receives of the participants the collectives' data knows (CollectiveData::p2p;
// a process without a collective is left out: it has no participant).
std::vector<RecordedP2p> RecordedP2ps(const CollectiveData& data);

// end_ns: the end of the recording (aligned).
// The nodes whose recorder dropped NCCL or plugin events (sources.drops).
rs::Result<std::set<std::string>> LoadLossyNodes(rs::Db& db);

// lossy_nodes: LoadLossyNodes's.
std::optional<FrJob> RecordedJob(const CollectiveData& data, const std::vector<RecordedP2p>& p2p,
                                 const std::set<std::string>& lossy_nodes, int64_t end_ns,
                                 std::string* why);

}  // namespace rs::analyzer
