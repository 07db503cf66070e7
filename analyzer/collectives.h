// NCCL collectives matched across ranks by (comm_id_hash, seq): who arrived when, who was last.
// Point-to-point calls (per-peer sequence numbers) and communicator management are left out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report_model.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace analyzer {

// One process taking part in collectives: (node, pid), with its best known global rank.
struct Participant {
  std::string node;
  int64_t pid = 0;
  std::optional<int64_t> rank;  // processes.rank, else the rank of its first communicator
  std::string comm;             // processes.comm ("" when unknown)
  std::string Label() const;    // "node1 rank 3" or "node1 pid 4242"
};

struct NcclCall {
  int32_t participant = 0;
  uint64_t comm = 0;
  int64_t seq = 0;
  std::string op;
  int64_t ts = 0;               // entry (aligned in a merged db)
  int64_t dur = -1;             // -1: in flight at the end of the recording
  std::optional<int64_t> rank;  // rank in this communicator
  std::optional<int64_t> nranks;
  std::optional<int64_t> count;
  std::string datatype;
  std::optional<int64_t> root;
  bool in_flight() const { return dur < 0; }
};

// One (comm, seq) group; calls[begin, end) of CollectiveData::calls, ordered by entry time.
struct Collective {
  uint64_t comm = 0;
  int64_t seq = 0;
  size_t begin = 0, end = 0;
  int64_t first_entry = 0, last_entry = 0;
  int64_t last_exit = -1;  // -1 when some call is still in flight
  int32_t last = -1;       // participant that entered last; -1 on a tie
  bool matched() const { return end - begin >= 2; }
};

struct CollectiveData {
  std::vector<Participant> participants;
  std::vector<NcclCall> calls;          // ordered by (comm, seq, ts)
  std::vector<Collective> collectives;  // every group, in (comm, seq) order
  int64_t matched = 0;                  // groups with >= 2 participants
};

// Loads every collective call (complete or in flight) with a communicator and sequence number.
rs::Result<CollectiveData> LoadCollectives(rs::Db& db);

// Arrival statistics over matched collectives; per_rank is indexed like participants.
std::vector<ArrivalStats> ParticipantStats(const CollectiveData& data);
std::vector<ArrivalStats> NodeStats(const CollectiveData& data);

// Quantile q (0..1) of v by nearest rank; v is reordered. Returns 0 for an empty v.
int64_t Quantile(std::vector<int64_t>& v, double q);

}  // namespace analyzer
