// Hang analysis on PyTorch Flight Recorder dumps (tables fr_dumps, process_groups, fr_entries
// of a merged db): their entries read as every rank's position in every process group
// (fr_wait_input.h) and given to the hang engine (wait_graph.h), whose wait-for graph names
// every rank where the waiting chains end, cycles (deadlocks), mismatches, an operation every
// member is stuck in, or says that the dumps cannot decide (gloo records no completion).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/fr_wait_input.h"
#include "analyzer/report_model.h"
#include "analyzer/wait_graph.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::analyzer {

// Where a job's records came from, as the hang's words name them.
struct EngineSource {
  std::string name;         // 'Flight Recorder' | 'recording': the summary's tag
  std::string records;      // 'the Flight Recorder dumps of' (N rank(s))
  std::string state_basis;  // HangReport::basis and each progress row's state_basis
};
extern const EngineSource kFlightRecorderSource;

// The engine's answer on a job's records (the dumps, or the recorded calls:
// recorded_wait_input.h) as the report's hang: culprits with their evidence, chains, edges,
// mismatches, the stuck operation's members.
HangReport EngineHang(const FrJob& job, const wait::Result& res, const EngineSource& src);

// Culprit i of such a hang as a finding at the hang's confidence; basis: what it rests on.
Straggler EngineStraggler(const HangReport& h, size_t i, const std::string& basis);

// Empty (dumps == 0) for a db without Flight Recorder tables or rows.
rs::Result<FlightRecorderSummary> AnalyzeFlightRecorder(rs::Db& db);

// Runs it and folds it into the report: its hang becomes the verdict where the recorder saw
// none, is compared with the recorder's where both found one (a disagreement is a warning, both
// are shown and the confidence lowered), and dumps missing for members are a warning.
rs::Result<void> AddFlightRecorder(rs::Db& db, Report& r);

}  // namespace rs::analyzer
