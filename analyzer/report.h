// Builds the report of one bundle (.rsb) or merged database (.rsdb): straggler, causes, hang,
// clock bounds and the series for plots.
#pragma once

#include <string>

#include "analyzer/report_model.h"
#include "rscore/bundle.h"
#include "rscore/result.h"

namespace rs::analyzer {

rs::Result<Report> BuildReport(rs::OpenedDb& opened);

}  // namespace rs::analyzer
