// Extraction of rendezvous points from node recordings: what each node recorded of every
// collective (matched by comm_id_hash, seq; device times of a communicator whose init the
// recorder missed by NCCL's own commHash and seqNumber) and communicator init (matched by
// comm_id_hash), turned into observations by the rules of evidence.h once every node is read.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "merger/clock_alignment.h"
#include "merger/evidence.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::merge {

// What Take found besides the rendezvous.
struct RendezvousSummary {
  std::vector<rs::CommunicatorCallMode> communicators;  // how each one's calls were judged
  // Node observations dropped because their own exit preceded their own entry (an assumption of
  // the evidence failed for that collective on that node).
  int64_t dropped = 0;
  std::array<int64_t, kEvidenceKinds> by_evidence{};  // node observations kept, per kind
};

class RendezvousCollector {
 public:
  // Reads node `node`'s records of collectives and inits from `db` (a bundle's schema;
  // timestamps in the node's own clock): completed, successful, ungrouped NCCL calls; the
  // blocking sync calls after them (cuda_events); device times (gpu_ops, where the bundle has
  // the table).
  rs::Result<void> AddNode(rs::Db& db, int node);
  // Moves everything `other` (collected for one node) holds here, as node `node`.
  void Absorb(RendezvousCollector&& other, int node);
  // Decides each communicator's call mode from every node's evidence and returns the
  // rendezvous seen on at least two nodes. Empties the collector.
  std::vector<Rendezvous> Take();
  // Calls and device spans read so far (all nodes).
  int64_t calls() const { return calls_; }
  // The communicators whose records it holds (comm_id_hash, or NCCL's commHash where only
  // device times name one).
  std::set<int64_t> Communicators() const;
  // Filled by Take.
  const RendezvousSummary& summary() const { return summary_; }

 private:
  // comm_id_hash, seq, "" for a collective; comm_id_hash, -1, its op for an init; NCCL's
  // commHash, seqNumber, "nccl " + op for device times of a communicator whose init was not
  // recorded.
  using Key = std::tuple<int64_t, int64_t, std::string>;
  std::map<Key, std::vector<std::pair<int, NodeRecords>>> records_;
  std::map<int64_t, rs::CallModeEvidence> evidence_;  // per comm_id_hash, every node's
  int64_t calls_ = 0;
  RendezvousSummary summary_;
};

// The node's largest kernel sync-error estimate in clock_refs (maxerror_us, plus the read
// span of that reference pair), in ns; -1 when no reference carries one.
rs::Result<int64_t> NodeMaxErrorNs(rs::Db& db);

}  // namespace rs::merge
