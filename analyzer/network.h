// Network-caused slowness: TCP retransmits concentrated on one node's connections (as sender or
// as destination — a node whose inbound packets are dropped is the destination of its peers'
// retransmits), tied to the collectives they slowed down: the time from the last rank's
// arrival to completion (on the devices where the profiler plugin timed them), against the
// usual for their size.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "analyzer/collectives.h"
#include "analyzer/confidence.h"
#include "analyzer/report_model.h"
#include "analyzer/side_events.h"

namespace rs::analyzer {

struct NetworkCandidate {
  std::string node;  // empty: no retransmits, or none stands out
  // Segments of the repairs between nodes (Retransmit::link_repair) in the recording.
  int64_t segments_total = 0;
  // ... and between two endpoints of one node (loopback, its own bridge): they never crossed
  // a NIC or a link, so they say nothing of packet loss; left out of the attribution.
  int64_t segments_same_node = 0;
  // ... and tail-loss probes between nodes (Retransmit::probe): an ACK was late, which a busy
  // receiver causes as well as a lost segment (the test bed's runs without a network fault
  // have only these); left out of the attribution.
  int64_t segments_probe = 0;
  // ... and repairs between nodes whose every segment the receiver reported as a duplicate
  // (Retransmit::needless: D-SACK): the original had arrived; left out of the attribution.
  int64_t segments_needless = 0;
  int64_t segments_touching = 0;  // ... with this node as one endpoint
  int64_t segments_as_destination = 0;
  // Retransmit rows that repaired a segment between nodes (Retransmit::link_repair), and those
  // with this node as one endpoint: the attribution and the confidence count these.
  int64_t repairs_total = 0, repairs_touching = 0;
  double weight = 0, runner_up_weight = 0;  // endpoint share + destination share of repairs (0..2)
  std::string runner_up;
  int64_t collectives = 0;                   // matched, completed collectives
  int64_t device_collectives = 0;            // ... timed on the devices (gpu_ops)
  int64_t collectives_affected = 0;          // ... with its retransmits while the data moved
  int64_t median_transfer_affected_ns = -1;  // last entry -> last exit
  int64_t median_transfer_clean_ns = -1;
  // Last arrival -> completion over the median of collectives of the same op, count and
  // datatype without repairs: how much longer than usual for their size (-1: none).
  double median_stretch_affected = -1, median_stretch_clean = -1;
  // The collectives with its repairs took longer than those without, by more than a tenth:
  // compared within a size (op, count, datatype) where both kinds occur, else over all sizes.
  // Without it the retransmits are no cause of anything measured (an observation).
  bool slowed = false;
  bool too_few_to_tell = false;  // slower, but in fewer collectives than a finding needs
  Confidence confidence = Confidence::kUndetermined;
  double score = 0;
};

// The collectives `hit` marks against the others (matched, completed), by the time from their
// last arrival to completion, as a share of the usual for their size (op, count, datatype: the
// median of those of that size not hit): `slowed` where the hit ones' median share is above the
// others' by more than a tenth, in at least three collectives (fewer: too_few_to_tell).
struct TransferComparison {
  int64_t collectives = 0, device_collectives = 0, affected = 0;
  int64_t median_affected_ns = -1, median_clean_ns = -1;
  double stretch_affected = -1, stretch_clean = -1;
  bool slowed = false, too_few_to_tell = false;
};
TransferComparison CompareTransfers(const CollectiveData& data,
                                    const std::function<bool(const Collective&)>& hit);

NetworkCandidate AttributeRetransmits(const SideEvents& side, const CollectiveData& data);

// The straggler entry (node-level) for a candidate, with its network cause and evidence.
Straggler NetworkStraggler(const NetworkCandidate& c);

// The network cause of a candidate (also merged into a lateness straggler on the same node).
Cause NetworkCause(const NetworkCandidate& c);
Evidence NetworkEvidence(const NetworkCandidate& c);

}  // namespace rs::analyzer
