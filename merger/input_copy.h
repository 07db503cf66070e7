// Copying validated inputs into the merged schema. An input is copied (node renamed, ids
// remapped, timestamps aligned, stacks deduplicated) either straight into the output or, on a
// worker thread, into a part: a temporary file of its own with exactly the merged schema and no
// indexes. A part's small tables are combined into the output with INSERT INTO t SELECT * FROM
// part.t, which SQLite runs as its transfer optimization (records copied without being
// decoded) because the two table definitions are identical; its event tables the same way once
// every part is written, before the output's indexes are built.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "merger/clock_alignment.h"
#include "merger/inputs.h"
#include "merger/table_copy.h"
#include "rscore/bundle.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::merge {

// Per-table counts of one copied input. The stacks row is added by the caller once every input
// is in (see StacksFirstHeld); stack_rows is its rows_in.
struct InputCopy {
  std::vector<TableCount> counts;
  int64_t stack_rows = 0;
};

// Copies input `in` into the main schema of `db` (merged schema) in one transaction; nothing
// of it remains on failure. Records the input's stacks in temp.stack_origins of `db`.
rs::Result<InputCopy> CopyInput(rs::Db& db, const Input& in, const NodeAlignment& al);

// Pragmas of a database that is built once and renamed or discarded, never updated in place:
// no rollback journal and no fsync (a crash leaves a temp file, never a damaged output).
rs::Result<void> UseBuildPragmas(rs::Db& db, int cache_kib);

struct Part {
  rs::TempFile file;
  InputCopy copy;
};

// Copies `in` into a new part file in `dir`, without a name (TempFile::CreateUnnamed; gone
// when the Part dies, or the process), every table by SQL (CopyInput).
rs::Result<Part> WritePart(const std::string& dir, const std::string& stem, const Input& in,
                           const NodeAlignment& al);

// Adds a part to the output in one transaction: stacks (deduplicated), the node's metadata, and
// every copied table by transfer except the event tables (see AddEventTables).
rs::Result<void> CombinePart(rs::Db& out, const Input& in, const Part& part);

// Adds the event tables of `parts` (in rowid order) to the output `out` by SQLite's transfer
// optimization, then checks that each event table holds exactly `expected_rows` rows.
rs::Result<void> AddEventTables(rs::Db& out, const std::vector<const Part*>& parts,
                                const std::map<std::string, int64_t>& expected_rows);

// Writes parts on worker threads, in order (each thread takes the next input), while the
// output's writer takes them in the same order. Inputs must outlive the pipeline and stay
// unchanged until taken. Idle workers also remove the writer's spent temporary files: removing
// a file whose blocks were already written back waits for the file system (~20 ms for 10 MB
// on ext4 here), which the writer should not.
class PartPipeline {
 public:
  struct Job {
    const Input* input;
    NodeAlignment alignment;
  };
  PartPipeline(std::vector<Job> jobs, int threads, std::string dir, std::string stem);
  // Unstarted jobs are dropped, running ones finish and everything discarded is destroyed.
  ~PartPipeline();
  PartPipeline(const PartPipeline&) = delete;
  PartPipeline& operator=(const PartPipeline&) = delete;
  // Waits for job i (0-based, in the order given).
  rs::Result<Part> Take(size_t i);
  // Destroys `garbage` (e.g. a temp file) on a worker thread; at once without workers.
  void Discard(std::shared_ptr<void> garbage);

 private:
  void Work();
  std::vector<Job> jobs_;
  std::string dir_, stem_;
  std::vector<std::optional<rs::Result<Part>>> done_;
  std::deque<std::shared_ptr<void>> garbage_;
  size_t next_ = 0;
  bool closing_ = false;
  std::mutex mu_;
  std::condition_variable work_, finished_;
  std::vector<std::thread> threads_;
};

}  // namespace rs::merge
