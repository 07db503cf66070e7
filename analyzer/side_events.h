// The evidence beside the collectives: run-queue waits of the ranks' processes (sched_events),
// block I/O (block_events) and TCP retransmits attributed to nodes through both endpoints'
// addresses (each node records its own in `interfaces`).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "collectives.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace analyzer {

struct Interval {
  int64_t start = 0, end = 0;
};

struct RunqWait {
  int64_t start = 0, end = 0;
  int64_t other_pid = -1;
  int32_t other_comm = 0;  // index into SideEvents::comms
  // The CPU went to a rank of this job, and the waiting rank's node shares its kernel with
  // another node of the job (SideEvents::kernel_mates): the job's own work, not counted as CPU
  // contention (causes.cc).
  bool by_co_located_job = false;
};

struct BlockRequest {
  int64_t ts = 0, dur = 0;  // issue time, issue -> complete
};

struct Retransmit {
  int64_t ts = 0;
  int src = -1, dst = -1;  // indices into SideEvents::nodes; -1 = address of no recorded node
  int64_t segments = 1;
  // Sent in congestion state Open, Disorder or CWR: a tail-loss probe, sent because an ACK was
  // late; a slow receiver causes it as well as a lost segment. False for Recovery and Loss
  // (the sender repairs a segment it took for lost) and where the state was not recorded.
  bool probe = false;
  // Between two endpoints of one node (loopback, its own bridge): it crossed no link.
  bool same_node() const { return src >= 0 && src == dst; }
  // Evidence of packet loss on a link between nodes: a repair that crossed one.
  bool link_repair() const { return !probe && !same_node(); }
};

struct SideEvents {
  std::vector<std::string> nodes;
  // (node, pid) -> run-queue waits of that process, ordered by start.
  std::map<std::pair<std::string, int64_t>, std::vector<RunqWait>> runq;
  std::vector<std::string> comms;  // names of the tasks that had the CPU
  // node -> union of its block requests' issue..complete intervals, ordered.
  std::map<std::string, std::vector<Interval>> block;
  // (node, pid) -> block requests issued by that rank's own process, ordered by issue time.
  std::map<std::pair<std::string, int64_t>, std::vector<BlockRequest>> rank_requests;
  std::vector<Retransmit> retransmits;   // ordered by ts
  int64_t retransmits_without_peer = 0;  // daddr belongs to no recorded node
  int64_t retransmits_duplicate = 0;     // seen by several recorders sharing one kernel
  int64_t retransmits_failed = 0;        // err != 0: not sent (the kernel tries again later)
  // node -> the job's other nodes that ran on its kernel (the same boot_id in their bundles'
  // metadata: nodes that are namespaces or containers of one host). Their ranks share one
  // set of CPUs and one scheduler: a rank waiting behind the job's own ranks there waits for
  // the job's work, which lands on one node or another by the scheduler's choice, not for
  // anything of its node. Empty for nodes with a machine of their own (or no boot_id).
  std::map<std::string, std::vector<std::string>> kernel_mates;
  int NodeIndex(const std::string& node) const;
  bool SharesKernel(const std::string& node) const { return kernel_mates.count(node) > 0; }
};

rs::Result<SideEvents> LoadSideEvents(rs::Db& db, const std::vector<Participant>& participants);

// Length of [a, b) covered by a sorted union of intervals.
int64_t CoveredNs(const std::vector<Interval>& sorted_union, int64_t a, int64_t b);

// Makes the union of intervals (sorted, non-overlapping).
std::vector<Interval> UnionOf(std::vector<Interval> v);

// Strips an IPv4-mapped IPv6 prefix so both spellings of one address match.
std::string NormalizeAddress(const std::string& addr);

}  // namespace analyzer
