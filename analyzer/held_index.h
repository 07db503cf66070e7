// What held a rank before it arrived at a collective: the end of its previous call in another
// communicator, or of a send or receive. Lateness a rank spent held there is not its own (it is
// its peers' in that other call); the per-rank, per-node and per-group statistics
// (collectives.h) count only what came after.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "analyzer/collectives.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::analyzer {

// Loads every send and receive of the participants `data` knows into data.p2p (joined with its
// gpu_ops row where the recording has that table); call after the collectives are loaded.
rs::Result<void> LoadP2pCalls(rs::Db& db, CollectiveData& data);

class HeldIndex {
 public:
  explicit HeldIndex(const CollectiveData& data);
  // The latest end, at or before c's arrival in g, of its participant's calls that are not g's
  // own communicator's collectives (other communicators' collectives, any send or receive), on
  // g's clock basis (device end, else the return of a call that blocked; host basis: returns).
  std::optional<int64_t> Held(const Collective& g, const NcclCall& c) const;
  // The latest end, at or before c's arrival, of any of its participant's calls (g's own
  // communicator's too), on g's clock basis: where its work before c began.
  std::optional<int64_t> Released(const Collective& g, const NcclCall& c) const;

 private:
  struct End {
    int64_t at = 0;
    uint64_t comm = 0;
    bool p2p = false;
    bool SameSource(const End& o) const { return comm == o.comm && p2p == o.p2p; }
    bool operator<(const End& o) const { return at < o.at; }
  };
  struct Ends {
    std::vector<End> ends;  // sorted by time
    // Per entry, the latest earlier one from another source than its own (-1: none).
    std::vector<int64_t> other;
    void Add(const NcclCall& c, bool device, bool p2p);
    void Index();
    int64_t Before(int64_t at) const;  // the latest entry at or before `at`; -1: none
  };
  std::vector<Ends> device_, host_;
};

}  // namespace rs::analyzer
