// Causes of a lateness straggler's late windows — the time between its previous collective's
// exit and its late entry — ranked by how much of the lost time each explains, measured against
// the same windows of the other ranks: run-queue waits of its process (cpu_contention), block
// I/O on its node (io), retransmits touching its node (network), else its own work (compute).
#pragma once

#include <cstdint>
#include <vector>

#include "collectives.h"
#include "report_model.h"
#include "side_events.h"

namespace analyzer {

// Ranked causes, best first, with the numbers behind them. `window_evidence` receives a
// summary of the windows measured.
std::vector<Cause> LatenessCauses(const CollectiveData& data, int32_t participant,
                                  const SideEvents& side, Evidence& window_evidence);

}  // namespace analyzer
