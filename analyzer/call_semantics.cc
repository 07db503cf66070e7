#include "analyzer/call_semantics.h"

#include <algorithm>
#include <map>
#include <utility>

#include "analyzer/clock_bounds.h"
#include "analyzer/device_arrival.h"
#include "rscore/comm_hash.h"
#include "rscore/enqueue.h"
#include "rscore/nccl_ops.h"
#include "rscore/schema.h"

namespace rs::analyzer {
namespace {

// Per communicator, its collectives' order across nodes on the aligned clocks: an early exit (a
// call returned before another rank's call of the same rendezvous collective entered, beyond
// the two clocks' bound), or a wait (the first rank's call returned only after the last rank
// entered, clearly later than the first).
std::map<int64_t, rs::CallModeEvidence> OrderingsAcrossNodes(const CollectiveData& data,
                                                             const std::vector<NodeClock>& clocks) {
  std::map<int64_t, rs::CallModeEvidence> out;
  for (const Collective& g : data.collectives) {
    if (!g.matched() || !rs::Traits(rs::OpFromName(data.calls[g.begin].op)).rendezvous) continue;
    const NcclCall* first = nullptr;
    const NcclCall* last = nullptr;
    for (size_t k = g.begin; k < g.end; ++k) {
      const NcclCall& c = data.calls[k];
      if (!c.host_seen) continue;
      if (!first || c.ts < first->ts) first = &c;
      if (!last || c.ts > last->ts) last = &c;
    }
    if (!first || first == last) continue;
    const std::string& last_node = data.participants[last->participant].node;
    bool early = false;
    for (size_t k = g.begin; k < g.end && !early; ++k) {
      const NcclCall& c = data.calls[k];
      if (!c.host_seen || c.in_flight() || &c == last) continue;
      const std::string& node = data.participants[c.participant].node;
      early = c.ts + c.dur + PairBound(clocks, node, last_node) < last->ts;
    }
    rs::CallModeEvidence& e = out[static_cast<int64_t>(g.comm)];
    const std::string& first_node = data.participants[first->participant].node;
    if (early) {
      ++e.early_exits;
    } else if (!first->in_flight() && first->ts + first->dur >= last->ts &&
               last->ts - first->ts > PairBound(clocks, first_node, last_node)) {
      ++e.waits;
    }
  }
  return out;
}

// The recording's kind and sentence from its communicators' modes.
void Summarize(CallSemantics& s) {
  int64_t block = 0, enqueue = 0, undecided = 0;
  const rs::CommunicatorCallMode* shown = nullptr;  // the one with the most evidence
  auto weight = [](const rs::CallModeEvidence& e) {
    return e.same_node_checked + e.device_calls + e.waits + e.early_exits;
  };
  for (const auto& [comm, c] : s.modes.communicators) {
    switch (c.decision.mode) {
      case rs::CallMode::kBlocking:
        ++block;
        break;
      case rs::CallMode::kEnqueue:
        ++enqueue;
        break;
      case rs::CallMode::kByProcess:
        ++undecided;
        break;
    }
    if (!shown || weight(c.evidence) > weight(shown->evidence)) shown = &c;
  }
  const std::string gpu = std::to_string(s.modes.gpu_processes.size()) +
                          " process(es) with NCCL calls used a GPU (CUDA calls, or operations "
                          "NCCL's profiler plugin timed on a device), whose NCCL calls enqueue";
  // Nothing decided (or no communicator): their GPU processes enqueue, the others block.
  if (block == 0 && enqueue == 0) {
    s.kind = s.modes.gpu_processes.empty() ? "unknown" : "enqueue";
    s.evidence = s.modes.gpu_processes.empty()
                     ? "no collective showed whether the NCCL calls block or enqueue, and no "
                       "process with NCCL calls used a GPU"
                     : gpu + ", and no collective showed whether the calls block";
    return;
  }
  const int64_t n = static_cast<int64_t>(s.modes.communicators.size());
  if (undecided == 0 && (block == 0 || enqueue == 0)) {
    s.kind = block > 0 ? "blocking" : "enqueue";
    s.evidence = shown->decision.evidence;
    if (n > 1) {
      s.evidence += " (communicator " + rs::HashHex(shown->comm_id_hash) + "; the calls of all " +
                    std::to_string(n) + " communicators " + (block > 0 ? "block" : "only enqueue") +
                    ")";
    }
    return;
  }
  s.kind = "mixed";
  s.evidence = "the communicators differ: the calls of " + std::to_string(enqueue) +
               " only enqueue, of " + std::to_string(block) + " block";
  if (undecided > 0) {
    s.evidence += ", " + std::to_string(undecided) + " undecided (" + gpu + ")";
  }
}

}  // namespace

rs::Result<CallSemantics> DetectCallSemantics(rs::Db& db, const CollectiveData& data,
                                              const std::vector<NodeClock>& clocks) {
  CallSemantics s;
  ASSIGN_OR_RETURN(auto stored, rs::ReadStoredCallModes(db));
  if (stored) {
    s.modes.communicators = std::move(*stored);
    s.from_merge = true;
  } else {
    ASSIGN_OR_RETURN(auto evidence, rs::ReadCallModeEvidence(db));
    for (const auto& [comm, e] : evidence)
      s.modes.communicators[comm] = {comm, e, rs::DecideCallMode(e)};
  }
  for (const std::vector<NcclCall>* calls : {&data.calls, &data.p2p}) {
    for (const NcclCall& c : *calls) {
      const auto comm = static_cast<int64_t>(c.comm);
      s.modes.communicators.try_emplace(comm,
                                        rs::CommunicatorCallMode{comm, {}, rs::DecideCallMode({})});
    }
  }
  // The order across nodes, where the evidence read on one clock left a communicator undecided.
  const auto across = s.modes.AnyUndecided() ? OrderingsAcrossNodes(data, clocks)
                                             : std::map<int64_t, rs::CallModeEvidence>{};
  for (auto& [comm, c] : s.modes.communicators) {
    if (c.decision.mode != rs::CallMode::kByProcess) continue;
    auto it = across.find(comm);
    if (it != across.end()) {
      c.evidence.early_exits = it->second.early_exits;
      c.evidence.waits = it->second.waits;
      c.decision = rs::DecideCallMode(c.evidence);
    }
  }
  rs::ResolveUndecided(s.modes.communicators);
  if (s.modes.AnyUndecided() || s.modes.communicators.empty()) {
    // Only now: the scan of cuda_events it needs is the costliest part. The processes as the
    // merge's clock alignment takes them (rscore/enqueue.h).
    ASSIGN_OR_RETURN(s.modes.gpu_processes, rs::EnqueuingProcesses(db));
  }
  Summarize(s);
  return s;
}

namespace {

void MarkEnqueue(NcclCall& c, const std::string& node, int64_t pid, const CallSemantics& s) {
  c.enqueue = s.modes.Enqueues(static_cast<int64_t>(c.comm), node, pid);
  if (!c.device || !c.device->end_ns || !c.host_seen || c.in_flight()) return;
  // Its own device times decide where they can: converted ends are never early and at most
  // clock_error_ns late.
  int64_t exit = c.ts + c.dur, end = *c.device->end_ns;
  if (exit >= end) {
    c.enqueue = false;  // returned after its device finished
  } else if (c.device->clock_error_ns && exit < end - *c.device->clock_error_ns) {
    c.enqueue = true;  // returned before its device finished
  }
}

}  // namespace

void MarkEnqueues(CollectiveData& data, const CallSemantics& s) {
  for (std::vector<NcclCall>* calls : {&data.calls, &data.p2p}) {
    for (NcclCall& c : *calls) {
      const Participant& p = data.participants[c.participant];
      MarkEnqueue(c, p.node, p.pid, s);
    }
  }
}

rs::Result<CollectiveData> LoadComparedCollectives(rs::Db& db, const std::vector<NodeClock>& clock,
                                                   CallSemantics* sem) {
  ASSIGN_OR_RETURN(CollectiveData data, LoadCollectives(db));
  ASSIGN_OR_RETURN(CallSemantics found, DetectCallSemantics(db, data, clock));
  MarkEnqueues(data, found);
  if (found.kind == "blocking" && data.device_collectives > 0) {
    data.device_collectives_set_aside = data.device_collectives;
    SetArrivals(data, /*device=*/false);
  }
  ExcludeEnqueueEntries(data);
  if (sem != nullptr) *sem = std::move(found);
  return data;
}

}  // namespace rs::analyzer
