// Which inputs the output's writer copies itself and which go to worker threads as parts.
//
// SQLite lets one connection write the output, so the writer's work is the critical path: its
// own copies, then combining every part (cheaper per row than a copy, but not free), then the
// indexes. Workers copy parts in parallel. Inputs are taken in the order they will reach the
// output (see Input::first_key): a prefix straight into the output, the rest as parts in order.
// The split is chosen by simulating both sides with per-row costs measured on the benchmark
// (tests/bench/merge.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace merge {

struct CopyCosts {
  double copy_per_row = 1.0;     // aligned INSERT ... SELECT from an input
  double combine_per_row = 0.6;  // transfer of a part's rows into the output
  double per_input = 2000;       // attach, schema, commit (in rows' worth)
};

// Inputs [0, result) are copied by the writer; [result, n) become parts, copied by `workers`
// threads in order (each takes the next) and combined by the writer in order. Returns the
// split with the earliest estimated finish; rows.size() when there are no workers.
size_t DirectCopies(const std::vector<int64_t>& rows, int workers, const CopyCosts& costs = {});

// The estimated finish of the writer for a given split (same model; for tests and tuning).
double EstimatedFinish(const std::vector<int64_t>& rows, size_t direct, int workers,
                       const CopyCosts& costs = {});

}  // namespace merge
