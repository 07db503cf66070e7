// The evidence beside the collectives: run-queue waits of the ranks' processes (sched_events),
// block I/O (block_events) and TCP retransmits attributed to nodes through both endpoints'
// addresses (each node records its own in `interfaces`).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/collectives.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::analyzer {

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
  // The receiver reported every segment of it received twice (D-SACK, RFC 2883; read from
  // tcp_sock.dsack_dups at the connection's later retransmits, see AnswerByDsack): the
  // original had arrived, the copy was needless. Linux sends such copies when it takes
  // reordering or a late ACK for loss (RACK, RTO); no packet was lost.
  bool needless = false;
  // Between two endpoints of one node (loopback, its own bridge): it crossed no link.
  bool same_node() const { return src >= 0 && src == dst; }
  // Evidence of packet loss on a link between nodes: a repair that crossed one, and which the
  // receiver did not report as a duplicate.
  bool link_repair() const { return !probe && !needless && !same_node(); }
};

// D-SACK accounting of one connection's retransmits, in the order they were sent. The kernel's
// count of D-SACKed segments (tcp_sock.dsack_dups) only grows; what it grew by between two
// retransmits answers the retransmits sent before the second. Those answered are marked
// needless, latest first: a retransmit still unanswered when a later one was recorded had its
// chance (a D-SACK comes back within a round trip), and a lost segment's copy is never
// reported twice. Segments the count grew by that no pending retransmit takes answer ones from
// before the recording. The last retransmits of a connection stay unanswered (nothing read the
// count after them): they count as repairs.
class DsackLedger {
 public:
  // `dsack_dups`: the connection's count when `r` was sent; nullopt where not recorded (then
  // nothing before `r` is answered by what the count did meanwhile).
  void Sent(std::vector<Retransmit>& all, size_t r, std::optional<int64_t> dsack_dups);

 private:
  std::optional<int64_t> last_;
  std::vector<std::pair<size_t, int64_t>> pending_;  // (index in `all`, segments unanswered)
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
  // Connections whose retransmits carried the D-SACK count (tcp_events.dsack_dups), and those
  // without it (an older recorder or kernel): there needless copies count as repairs.
  int64_t dsack_connections = 0, dsack_unknown_connections = 0;
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

}  // namespace rs::analyzer
