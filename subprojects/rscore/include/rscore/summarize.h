// A summary (`rankscope-analyze summarize NODE.rsb -o NODE.rss`): a node's recording reduced to
// what the report's verdict reads, so that the nodes of a large job can each reduce their own
// bundle where it lies and only the summaries travel (man/rankscope-bundle.5, SUMMARIES).
//
// A summary is a bundle (the same zstd frame around an SQLite image of the same schema, the
// same recording id and node), so every tool opens it and rankscope-merge merges it beside raw
// bundles. What it keeps, per table (KeptRows in summarize.cc): every row of the tables the
// verdict reads whole (NCCL calls, GPU operations, processes, clocks, retransmits, block I/O,
// RDMA counters, Flight Recorder records); of the bulky ones only the rows an analysis reads:
//  - sched_events: the run-queue waits of the job's processes (analyzer/side_events.cc
//    LoadRunq reads only those); off-CPU intervals and other processes' waits are left out;
//  - cuda_events: the calls that may wait for the device (synchronizes, copies and sets that
//    are not asynchronous), every call in flight, and each thread's latest call
//    (analyzer/hang_activity.cc reads in-flight calls and a rank's latest call;
//    merger/rendezvous.cc the synchronizing calls; analyzer/call_semantics.cc which processes
//    call CUDA); kernel launches, asynchronous copies and stream-event waits are left out;
//  - stacks: those a kept row points to.
// Its metadata says it is one (summary_version) and, per reduced table, the rows read and kept
// (summary_rows.TABLE = "KEPT/READ"), and where the raw bundle was (summary_of).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rscore/output.h"
#include "rscore/result.h"

namespace rs {

inline constexpr int kSummaryVersion = 1;

struct SummaryTable {
  std::string table;
  int64_t rows_read = 0, rows_kept = 0;
};

struct SummaryStats {
  std::string node;
  int64_t bundle_bytes = 0, summary_bytes = 0;
  std::vector<SummaryTable> tables;  // every table copied, in schema order
};

// Reads the bundle at `input` (a raw node bundle: a merged database or a summary is refused)
// and writes its summary to `target` (checked by CheckOutput). Memory stays bounded: the rows
// are copied by SQLite, never held. In rscore so that the node-side server can summarize the
// bundles it serves (rankscope-fleet collect --summaries) without the workstation's libraries.
Result<SummaryStats> Summarize(const std::string& input, const OutputTarget& target,
                               bool check_integrity = true);

}  // namespace rs
