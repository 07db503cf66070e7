#include "merger/evidence.h"

#include <algorithm>
#include <limits>

namespace rs::merge {
namespace {

int64_t Median(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

bool Blocks(const HostCall& call, CallMode mode) {
  switch (mode) {
    case CallMode::kBlocking:
      return true;
    case CallMode::kEnqueue:
      return false;
    case CallMode::kByProcess:
      return !call.gpu_process;
  }
  return false;
}

std::optional<NodeObservation> Observe(const NodeRecords& records, CallMode mode, int node) {
  NodeObservation o;
  o.node = node;
  o.max_entry_ns = std::numeric_limits<int64_t>::min();
  o.min_exit_ns = std::numeric_limits<int64_t>::max();
  auto entry = [&](int64_t t) { o.max_entry_ns = std::max(o.max_entry_ns, t); };
  std::vector<int64_t> exits[kEvidenceKinds];
  for (const DeviceSpan& d : records.device) {
    // A converted device time is never early, and at most clock_error_ns late: its start minus
    // the bound is a valid entry. Without a bound it may be late by any amount: no entry (the
    // host's call, recorded before it, gives one); its end is still a valid exit.
    if (d.clock_error_ns) entry(d.start_ns - *d.clock_error_ns);
    o.device_clock_unbounded |= !d.clock_error_ns;
    exits[static_cast<int>(Evidence::kDevice)].push_back(d.end_ns);
  }
  for (const HostCall& c : records.calls) {
    entry(c.entry_ns);
    if (records.init) {
      exits[static_cast<int>(Evidence::kCommInit)].push_back(c.exit_ns);
    } else if (Blocks(c, mode)) {
      exits[static_cast<int>(Evidence::kBlockingCall)].push_back(c.exit_ns);
    }
    if (!records.init && c.sync_exit_ns) {
      exits[static_cast<int>(Evidence::kSyncAfter)].push_back(*c.sync_exit_ns);
    }
  }
  bool any = false;
  for (const std::vector<int64_t>& kind : exits) {
    for (int64_t x : kind) o.min_exit_ns = std::min(o.min_exit_ns, x), any = true;
  }
  if (!any) return std::nullopt;  // entries alone bound nothing
  // Nor do exits alone (an unbounded device span without its host call): one side of every
  // constraint would be unbounded.
  if (o.max_entry_ns == std::numeric_limits<int64_t>::min()) return std::nullopt;
  for (Evidence e :
       {Evidence::kDevice, Evidence::kBlockingCall, Evidence::kSyncAfter, Evidence::kCommInit}) {
    const std::vector<int64_t>& kind = exits[static_cast<int>(e)];
    if (kind.empty()) continue;
    o.evidence = e;
    o.mid_exit_ns = Median(kind);
    break;
  }
  return o;
}

const char* SyncKindName(SyncKind kind) {
  switch (kind) {
    case SyncKind::kDevice:
      return "device synchronize";
    case SyncKind::kStream:
      return "stream synchronize";
    case SyncKind::kLegacyCopy:
      return "blocking copy";
    case SyncKind::kEvent:
      return "event synchronize";
  }
  return "?";
}

std::optional<SyncKind> BlockingSyncKind(std::string_view api, std::optional<int64_t> memcpy_kind,
                                         std::optional<int64_t> stream) {
  if (api == "cudaDeviceSynchronize" || api == "cuCtxSynchronize") return SyncKind::kDevice;
  if (api == "cudaStreamSynchronize" || api == "cuStreamSynchronize") {
    return stream ? std::optional(SyncKind::kStream) : std::nullopt;
  }
  if (api == "cudaStreamSynchronize_ptsz") {
    return stream && *stream != 0 ? std::optional(SyncKind::kStream) : std::nullopt;
  }
  if (api == "cudaMemcpy") {
    const bool host_device = memcpy_kind && (*memcpy_kind == 1 || *memcpy_kind == 2);
    return host_device ? std::optional(SyncKind::kLegacyCopy) : std::nullopt;
  }
  if (api == "cuMemcpyHtoD_v2" || api == "cuMemcpyDtoH_v2") return SyncKind::kLegacyCopy;
  if (api == "cudaEventSynchronize") return SyncKind::kEvent;
  return std::nullopt;
}

std::optional<int64_t> FirstSyncExit(const std::vector<SyncCall>& syncs, int64_t after_ns,
                                     std::optional<int64_t> stream) {
  auto it = std::lower_bound(syncs.begin(), syncs.end(), after_ns,
                             [](const SyncCall& s, int64_t t) { return s.entry_ns < t; });
  for (; it != syncs.end(); ++it) {
    if (it->kind != SyncKind::kStream || (stream && it->stream == stream)) return it->exit_ns;
  }
  return std::nullopt;
}

}  // namespace rs::merge
