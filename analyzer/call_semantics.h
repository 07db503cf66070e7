// Whether the recorded NCCL calls block until their collective is done (a CPU framework, the
// test bed's sync mode) or only enqueue it for a GPU that runs it later. Host entry lateness
// means "arrived late" only for the first; for enqueues it is when the host issued the work,
// which a slow device does not show. Decided per communicator from evidence, never from names,
// by one rule (rscore/call_mode.h) that the merge applies too: a merged database keeps the
// merge's decisions (call_modes) and the report takes them; it reads the evidence itself only
// from a bundle (or a merged database older than the table). Where the evidence read on one clock
// left a communicator to its processes, the report adds what the merge could not have before its
// alignment: the order of the calls across nodes on the aligned clocks (an early exit beyond the
// two clocks' bound; a wait: the first rank's call returned only after the last rank clearly
// entered). Where some communicators stay undecided and every decided one agrees, they take that
// mode (rs::ResolveUndecided).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/collectives.h"
#include "analyzer/report_model.h"
#include "rscore/call_mode.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::analyzer {

struct CallSemantics {
  // The recording's, for its wording: 'blocking' | 'enqueue' (every communicator's calls) |
  // 'mixed' (communicators differ) | 'unknown' (no evidence and no process that used a GPU).
  std::string kind = "unknown";
  std::string evidence;     // one sentence: what decided it
  bool from_merge = false;  // the decisions are the merge's (call_modes)
  // Per communicator; gpu_processes read where one is undecided or there is none. Whether a
  // call only enqueues, before its own device times: modes.Enqueues.
  rs::CallModes modes;
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

}  // namespace rs::analyzer
