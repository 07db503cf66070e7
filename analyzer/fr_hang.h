// Hang analysis on PyTorch Flight Recorder dumps (tables fr_dumps, process_groups, fr_entries
// of a merged db), by consensus of the ranks' states per (process group, seq).
//
// At a sequence number a rank of the group is 'not_enqueued' (its dump ends before it),
// 'enqueued' (FR: scheduled), 'started' or 'completed'; a rank whose dump is missing is
// 'no_dump'. The stuck collective of a group is its first sequence some rank has not
// completed, where the ranks disagree (some are further) or PyTorch retired it uncompleted (its
// timeout). The culprits are the ranks furthest behind there; where every dumped rank is alike
// and some dumps are missing, those ranks are the suspects (low confidence); where all are
// alike and all dumped, the dumps cannot name one (undetermined). Point-to-point operations are
// paired per (sender, receiver) in order: a pending send whose receiver posted no matching
// receive names the receiver, and the reverse. Op, element-count and dtype mismatches between
// ranks at one sequence are listed, and at the stuck sequence name the ranks that differ from
// the majority where states cannot.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report_model.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace analyzer {

// Empty (dumps == 0) for a db without Flight Recorder tables or rows.
rs::Result<FlightRecorderSummary> AnalyzeFlightRecorder(rs::Db& db);

// Runs it and folds it into the report: its hang becomes the verdict where the recorder saw
// none, is compared with the recorder's where both found one (a disagreement is a warning, both
// are shown and the confidence lowered), and dumps missing for members are a warning.
rs::Result<void> AddFlightRecorder(rs::Db& db, Report& r);

}  // namespace analyzer
