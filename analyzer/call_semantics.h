// Whether the recorded NCCL calls block until their collective is done (a CPU framework, the
// test bed's sync mode) or only enqueue it for a GPU that runs it later. Host entry lateness
// means "arrived late" only for the first; for enqueues it is when the host issued the work,
// which a slow device does not show. Decided from evidence, never from names:
//  - the profiler plugin's device times: a call that returned before its device started the
//    collective (before the converted start minus its conversion bound) was an enqueue;
//  - an early exit: a call returned before another rank's call of the same collective entered
//    (by more than the two nodes' clock bound; ranks on one node share a clock). No rank can
//    leave a blocking collective before the last rank entered it;
//  - a wait: the first rank's call returned only after the last rank entered, which that rank
//    entered clearly (beyond the clock bound) later: what a blocking call does;
//  - the process made CUDA runtime calls (cuda_events) and passed its NCCL calls a stream,
//    taken as enqueue only where no waits say otherwise.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectives.h"
#include "report_model.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace analyzer {

struct CallSemantics {
  std::string kind = "unknown";        // 'blocking' | 'enqueue' | 'unknown'
  std::string evidence;                // one sentence: what decided it
  int64_t returned_before_device = 0;  // calls that returned before their device started
  int64_t device_calls = 0;            // calls with a device start and a host exit
  int64_t early_exits = 0;             // matched collectives with an early exit
  int64_t waits = 0;                   // matched collectives with a wait
  int64_t gpu_processes = 0;           // rs::EnqueuingProcesses, where asked
};

rs::Result<CallSemantics> DetectCallSemantics(rs::Db& db, const CollectiveData& data,
                                              const std::vector<NodeClock>& clocks);

// Sets NcclCall::enqueue of every call and send or receive: from its own device times where
// seen, else from `s`.
void MarkEnqueues(CollectiveData& data, const CallSemantics& s);

// The collectives as the report compares them: loaded, the calls' semantics decided (given the
// report's clocks), enqueues marked, arrivals on the basis those imply (host entries where the
// calls block), enqueue-only entries left out. `sem` gets the semantics where not null.
rs::Result<CollectiveData> LoadComparedCollectives(rs::Db& db, const std::vector<NodeClock>& clock,
                                                   CallSemantics* sem = nullptr);

}  // namespace analyzer
