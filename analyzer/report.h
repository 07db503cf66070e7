// Builds the report of one bundle (.rsb) or merged database (.rsdb): straggler, causes, hang,
// clock bounds and the series for plots.
#pragma once

#include <string>

#include <vector>

#include "call_semantics.h"
#include "collectives.h"
#include "report_model.h"
#include "rscore/bundle.h"
#include "rscore/result.h"

namespace analyzer {

rs::Result<Report> BuildReport(rs::OpenedDb& opened);

// The collectives as the report compares them: loaded, the calls' semantics decided (given the
// report's clocks), enqueues marked, arrivals on the basis those imply (host entries where the
// calls block), enqueue-only entries left out. `sem` gets the semantics where not null.
rs::Result<CollectiveData> LoadComparedCollectives(rs::Db& db, const std::vector<NodeClock>& clock,
                                                   CallSemantics* sem = nullptr);

}  // namespace analyzer
