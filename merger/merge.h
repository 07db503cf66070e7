// rankscope-merge as a library: node bundles -> one clock-aligned SQLite db (.rsdb).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "merger/clock_alignment.h"
#include "rscore/call_mode.h"
#include "rscore/cli.h"
#include "rscore/result.h"

namespace rs::merge {

struct MergeOptions {
  std::vector<std::string> inputs;         // bundle files and/or directories of bundles
  std::string out_path;                    // the .rsdb ('-': standard output), mode 0600
  bool force = false;                      // replace an existing out_path (and bundle_path)
  bool strict = false;                     // any bad input aborts the merge (nothing written)
  std::optional<std::string> bundle_path;  // also write a zstd-compressed copy here
  std::string reference_node;              // node whose clock is the reference; empty: automatic
  bool progress = false;                   // progress lines (for a terminal)
  bool progress_plain = false;             // as plain lines, not redrawn (not a terminal)
  AlignOptions align;
  // Threads that copy inputs into parts (the output's writer waits meanwhile); -1: one per
  // core; 0: none, the writer copies every input itself.
  int worker_threads = -1;
};

struct InputSummary {
  int input_id = 0;
  std::string file, node, status, reason;
};

// Where the time of a merge went (wall clock and CPU of all threads).
struct PhaseTime {
  std::string phase;
  double wall_s = 0, cpu_s = 0;
};

struct MergeResult {
  int merged = 0, skipped = 0, duplicates = 0;
  int64_t event_rows = 0;            // event-table rows written
  int64_t start_ns = 0, end_ns = 0;  // the merged recording's span (metadata start_ns, end_ns)
  std::vector<InputSummary> inputs;
  std::vector<NodeAlignment> alignment;
  // How each communicator's calls were judged before the clocks were aligned (call_modes).
  std::vector<rs::CommunicatorCallMode> call_modes;
  std::vector<PhaseTime> phases;
  // What the user must see even with -q: inputs that look like another job's, nodes whose
  // clock could only be aligned by its wall clock.
  std::vector<std::string> warnings;
  // The wire clock check (clock_offsets.json beside the inputs): "3 agree, 0 disagree (...)";
  // empty: there was none. Metadata clock_wire_check.
  std::string wire_clock_check;
  // Exit status: 0 all merged, 3 merged with some inputs skipped (1 is an Error).
  int exit_code() const { return skipped > 0 ? rs::cli::kExitPartial : rs::cli::kExitOk; }
};

// Process-wide SQLite settings that make a merge faster; call before SQLite is first used
// (later calls have no effect).
void ConfigureSqlite();

// Runs the whole merge. Per-input problems are reported to `log` and recorded in the output
// (merge_inputs); an Error means nothing was written. The output is checked as
// rs::CheckOutput does (never an input, an existing file only with `force`), built without a
// name and linked into place when complete (rscore/output.h); '-' copies it to standard output.
rs::Result<MergeResult> Merge(const MergeOptions& options, std::ostream& log);

}  // namespace rs::merge
