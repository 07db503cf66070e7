// Extraction of rendezvous points from node recordings: blocking collectives matched by
// (comm_id_hash, seq) and communicator inits matched by comm_id_hash, across nodes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "clock_alignment.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace merge {

// Ops whose completed calls are rendezvous points: every rank returns only after the last
// rank entered. Broadcast / Reduce (the root need not wait) and point-to-point calls are not.
inline constexpr const char* kRendezvousOps[] = {"ALL_REDUCE", "ALL_GATHER", "REDUCE_SCATTER",
                                                 "ALL_TO_ALL"};

class RendezvousCollector {
 public:
  // Reads node `node`'s completed, successful, ungrouped collective and init calls from the
  // nccl_events table of `db` (a bundle's schema; timestamps in the node's own clock).
  rs::Result<void> AddNode(rs::Db& db, int node);
  // Adds every observation of `other` (collected for one node) as node `node`.
  void Absorb(const RendezvousCollector& other, int node);
  // Rendezvous seen on at least two nodes.
  std::vector<Rendezvous> Take();
  // Calls read so far (all nodes).
  int64_t calls() const { return calls_; }

 private:
  using Key = std::tuple<int64_t, int64_t, std::string>;  // comm_id_hash, seq, init op
  std::map<Key, size_t> index_;
  std::vector<Rendezvous> all_;
  int64_t calls_ = 0;
};

// The node's largest kernel sync-error estimate in clock_refs (maxerror_us, plus the read
// span of that reference pair), in ns; -1 when no reference carries one.
rs::Result<int64_t> NodeMaxErrorNs(rs::Db& db);

}  // namespace merge
