// The lateness straggler: the rank (or node) persistently entering collectives last. It must
// stand out twice: it is last far more often than chance (binomial z-score) and its median
// lateness exceeds the other ranks' spread — or its margin alone is several times that spread.
// Compared across nodes the margin must also exceed the clock error bound; otherwise the
// ordering is reported as undetermined. Ranks on one node share a host clock; device arrivals
// add the late rank's conversion bound (clock_error_ns, one-sided: see DeviceBound) to either
// comparison. Where the clocks cannot decide, the caller may look again on device waits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/collectives.h"
#include "analyzer/confidence.h"
#include "analyzer/device_arrival.h"
#include "analyzer/report_model.h"

namespace rs::analyzer {

struct LatenessCandidate {
  int32_t participant = -1;  // -1: nobody stands out; else the latest rank (representative)
  bool node_level = false;   // every rank of its node is late alike: the node is the straggler
  std::vector<int64_t> node_ranks;   // node-level: the node's ranks, latest first
  bool determined = false;           // beyond noise and (across nodes) the clock bound
  int64_t margin_ns = 0;             // median lateness minus the other nodes' typical one
  int64_t same_node_margin_ns = -1;  // rank minus the latest other rank on its node (-1: none)
  int64_t noise_ns = 0;              // typical p90 - median lateness of the others
  int64_t bound_ns = 0;              // clock error bound of the cross-node comparison
  int64_t mate_bound_ns = 0;         // ... of the same-node one (device conversion bounds)
  bool one_node = false;             // every competing rank is on its node: no cross-node margin
  int64_t collectives = 0;
  int64_t last_count = 0;
  double chance = 0;  // probability of being last by chance (its ranks / all ranks)
  double z = 0;       // (last_count - collectives * chance) / binomial sd
  Confidence confidence = Confidence::kUndetermined;
  double score = 0;
  // Undetermined by the clocks, the straggler was ordered by its device waits (OrderByWaits):
  // confidence at most medium.
  bool by_waits = false;
  bool found_on_waits = false;  // ... and found there too (its stats are AsWaitStats')
  WaitOrdering waits;
  // Named across communicators (group_straggler.h): its summary's lead ("is later than ...")
  // and the evidence that stands for the one-communicator lateness, clock and waits lines.
  std::string group_lead;
  std::vector<Evidence> group_evidence;
  // Found on its node's lateness paired within each collective (margin_ns: that mean excess,
  // noise_ns its standard error), where no median stood out: late in part of each step only.
  bool paired = false;
};

// stats is indexed like data.participants (ParticipantStats); node_stats is NodeStats(data).
// clock_free: stats of a clock-free lateness (AsWaitStats): no clock or conversion bound (pass
// no clocks); the caller decides the ordering (OrderByWaits) and rates it again.
LatenessCandidate FindLatenessStraggler(const CollectiveData& data,
                                        const std::vector<ArrivalStats>& stats,
                                        const std::vector<ArrivalStats>& node_stats,
                                        const std::vector<NodeClock>& clocks,
                                        bool clock_free = false);

// Sets confidence and score from determined, z, collectives, last_count and by_waits.
void RateCandidate(LatenessCandidate& c);

// Binomial z-score of `hits` in `n` trials of probability p.
double BinomialZ(int64_t hits, int64_t n, double p);

}  // namespace rs::analyzer
