// The straggler entry for the lateness straggler (straggler.h): its evidence, the basis its
// lateness rests on, its shape and causes, and the confidence ceilings of weaker bases.
#pragma once

#include <string>
#include <vector>

#include "analyzer/call_semantics.h"
#include "analyzer/collectives.h"
#include "analyzer/report_model.h"
#include "analyzer/side_events.h"
#include "analyzer/straggler.h"

namespace rs::analyzer {

// 'device_start' (every arrival a device start), 'host_entry' (none), 'mixed'; '' for none.
std::string ArrivalBasis(int64_t device, int64_t all);

// stats: those the candidate was found on (ParticipantStats, or AsWaitStats where c.by_waits).
Straggler LatenessStraggler(const CollectiveData& data, const std::vector<ArrivalStats>& stats,
                            const LatenessCandidate& c, const SideEvents& side,
                            const CallSemantics& sem);

// Re-ranks the causes after a change: `cause` and the summary's "top cause: ".
void SetTopCause(Straggler& s);

// The compared collectives whose last arrival was one of the finding's processes (s.node,
// s.pids), into s.late_arrivals (at most kMaxLateArrivals, those furthest behind the first
// arrival, in time order) and s.late_arrivals_total.
void FindLateArrivals(Straggler& s, const CollectiveData& data);

}  // namespace rs::analyzer
