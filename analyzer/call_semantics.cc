#include "call_semantics.h"

#include <algorithm>
#include <set>
#include <utility>

#include "clock_bounds.h"
#include "device_arrival.h"
#include "rscore/enqueue.h"
#include "rscore/schema.h"

namespace analyzer {
namespace {

// Early exits needed to call the calls enqueues: a blocking collective cannot produce one, but
// a single one could be a clock error beyond its bound at one moment; two, outnumbering the
// waits, are not.
constexpr int64_t kMinEarlyExits = 2;
// Waits needed to call the calls blocking (the same reasoning).
constexpr int64_t kMinWaits = 2;

}  // namespace

rs::Result<CallSemantics> DetectCallSemantics(rs::Db& db, const CollectiveData& data,
                                              const std::vector<NodeClock>& clocks) {
  CallSemantics s;
  for (const NcclCall& c : data.calls) {
    if (!c.host_seen || c.in_flight() || !c.device || !c.device->start_ns) continue;
    if (!c.device->clock_error_ns) continue;  // unbounded: the order with its exit is unknown
    ++s.device_calls;
    // The converted start is at most clock_error_ns after the true one.
    if (c.ts + c.dur < *c.device->start_ns - *c.device->clock_error_ns) {
      ++s.returned_before_device;
    }
  }
  std::vector<std::pair<std::string, int64_t>> node_latest;  // per collective: node -> entry
  for (const Collective& g : data.collectives) {
    if (!g.matched()) continue;
    node_latest.clear();
    const NcclCall* first = nullptr;
    const NcclCall* last = nullptr;
    for (size_t k = g.begin; k < g.end; ++k) {
      const NcclCall& c = data.calls[k];
      if (!c.host_seen) continue;
      if (!first || c.ts < first->ts) first = &c;
      if (!last || c.ts > last->ts) last = &c;
      const std::string& node = data.participants[c.participant].node;
      auto it = std::find_if(node_latest.begin(), node_latest.end(),
                             [&](const auto& e) { return e.first == node; });
      if (it == node_latest.end()) {
        node_latest.emplace_back(node, c.ts);
      } else {
        it->second = std::max(it->second, c.ts);
      }
    }
    if (!first || first == last) continue;
    const std::string& last_node = data.participants[last->participant].node;
    bool early = false;
    for (size_t k = g.begin; k < g.end && !early; ++k) {
      const NcclCall& c = data.calls[k];
      if (!c.host_seen || c.in_flight() || &c == last) continue;
      const std::string& node = data.participants[c.participant].node;
      int64_t exit = c.ts + c.dur;
      if (exit + PairBound(clocks, node, last_node) < last->ts) early = true;
      for (const auto& [n, latest] : node_latest) {
        if (n == node && exit < latest) early = true;  // one clock: no bound
      }
    }
    if (early) {
      ++s.early_exits;
      continue;
    }
    const std::string& first_node = data.participants[first->participant].node;
    if (!first->in_flight() && first->ts + first->dur >= last->ts &&
        last->ts - first->ts > PairBound(clocks, first_node, last_node)) {
      ++s.waits;
    }
  }
  if (s.returned_before_device > 0 && 2 * s.returned_before_device >= s.device_calls) {
    s.kind = "enqueue";
    s.evidence = std::to_string(s.returned_before_device) + " of " +
                 std::to_string(s.device_calls) +
                 " NCCL calls the profiler plugin saw returned before their device started the "
                 "collective";
  } else if (s.early_exits >= kMinEarlyExits && s.early_exits > s.waits) {
    s.kind = "enqueue";
    s.evidence = "in " + std::to_string(s.early_exits) +
                 " collectives a rank's NCCL call returned before another rank's call entered "
                 "(beyond the clock bound), which a blocking collective cannot do";
    if (s.waits > 0) {
      s.evidence += " (" + std::to_string(s.waits) + " looked blocking)";
    }
  } else if (s.waits >= kMinWaits && s.waits >= s.early_exits) {
    s.kind = "blocking";
    s.evidence = "in " + std::to_string(s.waits) +
                 " collectives the first rank's NCCL call returned only after the last rank "
                 "entered";
    if (s.early_exits > 0) {
      s.evidence += " (" + std::to_string(s.early_exits) + " had a call return earlier)";
    }
  } else {
    // Only now: the scan of cuda_events it needs is the costliest part. The processes as the
    // merge's clock alignment takes them (rscore/enqueue.h).
    ASSIGN_OR_RETURN(auto enqueuing, rs::EnqueuingProcesses(db));
    s.gpu_processes = static_cast<int64_t>(enqueuing.size());
    if (s.gpu_processes > 0) {
      s.kind = "enqueue";
      s.evidence = std::to_string(s.gpu_processes) +
                   " process(es) with NCCL calls used a GPU (CUDA calls, or operations NCCL's "
                   "profiler plugin timed on a device), whose NCCL calls enqueue, and no "
                   "collective showed a blocking call";
    } else {
      s.evidence = "no collective showed whether the NCCL calls block or enqueue";
    }
  }
  return s;
}

namespace {

void MarkEnqueue(NcclCall& c, const CallSemantics& s) {
  c.enqueue = s.kind == "enqueue";
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
    for (NcclCall& c : *calls) MarkEnqueue(c, s);
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

}  // namespace analyzer
