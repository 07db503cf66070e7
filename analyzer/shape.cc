#include "analyzer/shape.h"

#include <algorithm>

#include "analyzer/report_format.h"

namespace rs::analyzer {
namespace {

// Host-bound when its host's late enqueues account for at least half of its device lateness:
// removing the host delay would then remove most of the straggling, so the host is what to fix
// first. Below it the device's own slowness is the larger part.
constexpr double kHostBoundShare = 0.5;
// Ranks compared with it must have arrived on device in most of their collectives, in at least
// this many (as the lateness straggler's competitors).
constexpr int64_t kMinCollectives = 3;
// Causes explaining less than this share are left out (as LatenessCauses does).
constexpr double kMinScore = 0.05;

int64_t MedianOf(std::vector<int64_t> v) { return Quantile(v, 0.5); }

}  // namespace

ShapeSplit SplitLateness(const CollectiveData& data, const std::vector<ArrivalStats>& stats,
                         const LatenessCandidate& c) {
  ShapeSplit out;
  const int32_t p = c.participant;
  const std::string& node = data.participants[p].node;
  // Its node-mates share its host clock: where it stands out among them they are the better
  // reference; a node-level straggler's mates are late too, so other nodes' ranks are.
  bool mates = !c.node_level && c.same_node_margin_ns > c.noise_ns;
  std::vector<int64_t> device, host;
  for (size_t q = 0; q < stats.size(); ++q) {
    if (static_cast<int32_t>(q) == p) continue;
    const ArrivalStats& s = stats[q];
    if (s.collectives < kMinCollectives || 2 * s.device_collectives < s.collectives) continue;
    if ((data.participants[q].node == node) != mates) continue;
    device.push_back(s.median_lateness_ns);
    host.push_back(s.median_host_lateness_ns);
  }
  out.reference = mates ? "the other ranks on " + node : "the ranks on other nodes";
  if (device.empty()) {
    // Nobody to compare with on that side: against every other rank.
    out.reference = "the other ranks";
    for (size_t q = 0; q < stats.size(); ++q) {
      if (static_cast<int32_t>(q) == p || stats[q].collectives == 0) continue;
      device.push_back(stats[q].median_lateness_ns);
      host.push_back(stats[q].median_host_lateness_ns);
    }
  }
  const ArrivalStats& me = stats[p];
  out.device_excess_ns = me.median_lateness_ns - MedianOf(device);
  if (2 * me.host_collectives < me.collectives) {
    out.host_seen = false;
    out.unseen = &HostUnseenReason(data);
    out.shape = "device_bound";
    return out;
  }
  out.host_excess_ns = me.median_host_lateness_ns - MedianOf(host);
  if (out.device_excess_ns > 0) {
    out.host_share = std::clamp(
        static_cast<double>(out.host_excess_ns) / static_cast<double>(out.device_excess_ns), 0.0,
        1.0);
  }
  out.shape = out.host_share >= kHostBoundShare ? "host_bound" : "device_bound";
  return out;
}

std::vector<Cause> ShapeCauses(const ShapeSplit& split, std::vector<Cause> host_causes,
                               const std::string& label) {
  const double host = split.host_share, device = 1.0 - host;
  std::vector<Cause> out;
  const Cause* host_compute = nullptr;
  for (const Cause& c : host_causes) {
    if (c.kind == "compute") host_compute = &c;
  }
  for (Cause c : host_causes) {
    if (c.kind == "compute" || c.kind == "unknown") continue;
    c.score *= host;
    c.summary = "host side (" + FormatPercent(host) + " of its lateness): " + c.summary;
    out.push_back(std::move(c));
  }
  // One compute cause: its device's own work before the collectives, and its host's own work
  // before enqueueing them where the host side's evidence leaves that unexplained.
  const double host_part = host_compute ? host * host_compute->score : 0.0;
  Cause compute;
  compute.kind = "compute";
  compute.score = std::min(1.0, device + host_part);
  compute.summary =
      "its device reached the collectives " + FormatNs(split.device_excess_ns) + " later than " +
      split.reference +
      (split.host_seen ? " while its host enqueued them " +
                             FormatNs(std::max<int64_t>(0, split.host_excess_ns)) +
                             " later: " + FormatPercent(device) +
                             " of its lateness is its device's own work before the collectives"
                       : std::string("; its host side is not recorded (CUDA graph replays), so "
                                     "what no host-side measure explains is put on the device's "
                                     "own work (or a late graph launch)"));
  if (host_compute && host_part >= kMinScore) {
    compute.summary += "; host side: " + host_compute->summary;
  }
  if (device >= host_part) {
    compute.remediation =
        "check the GPU of " + label +
        ": clocks and throttling (nvidia-smi -q -d CLOCK,PERFORMANCE), temperature and power, "
        "ECC and Xid errors (nvidia-smi -q -d ECC, dmesg); and whether its share of the work is "
        "heavier (uneven shards, batch or sequence lengths, unbalanced pipeline stages)";
  } else {
    compute.remediation = host_compute->remediation;
  }
  compute.values = {{"device_share", device},
                    {"host_share", host},
                    {"device_excess_ns", static_cast<double>(split.device_excess_ns)},
                    {"host_excess_ns", static_cast<double>(split.host_excess_ns)}};
  out.push_back(std::move(compute));
  std::stable_sort(out.begin(), out.end(),
                   [](const Cause& a, const Cause& b) { return a.score > b.score; });
  std::vector<Cause> kept;
  for (Cause& c : out) {
    if (c.score >= kMinScore) kept.push_back(std::move(c));
  }
  if (kept.empty()) kept.push_back(std::move(out.front()));
  return kept;
}

const HostUnseen& HostUnseenReason(const CollectiveData& data) {
  return data.graph_replays > 0 || data.device_ops_by_nccl_names == 0 ? kGraphReplayHostUnseen
                                                                      : kUnmatchedCallsHostUnseen;
}

Evidence ShapeEvidence(const ShapeSplit& split) {
  Evidence e;
  e.kind = "shape";
  if (!split.host_seen) {
    e.summary = "its device arrivals are " + FormatNs(split.device_excess_ns) +
                " later than those of " + split.reference + "; " + split.unseen->why +
                ", so no share of it is put on the host";
    e.values = {{"device_excess_ns", static_cast<double>(split.device_excess_ns)}};
    return e;
  }
  e.summary = std::string(split.shape == "host_bound" ? "host-bound" : "device-bound") +
              ": its device arrivals are " + FormatNs(split.device_excess_ns) +
              " later than those of " + split.reference + ", its host enqueues " +
              FormatNs(split.host_excess_ns) + " later (" + FormatPercent(split.host_share) +
              " of it; host-bound from 50%)";
  e.values = {{"host_share", split.host_share},
              {"device_excess_ns", static_cast<double>(split.device_excess_ns)},
              {"host_excess_ns", static_cast<double>(split.host_excess_ns)}};
  return e;
}

}  // namespace rs::analyzer
