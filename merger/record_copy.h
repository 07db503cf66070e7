// Event rows of one input copied into a part page by page (see CopyRecords).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "rscore/result.h"

namespace merge {

// Event rows of one input written straight into a part's empty tables as b-tree pages, each
// record transformed exactly as CopyTables' SQL does: columns matched by name (a nullable column
// the input's table lacks, being older, written NULL), node renamed (rows of another node
// skipped), rowid shifted, timestamp_ns and the table's other wall-clock columns
// (rs::kExtraTimeColumns) aligned, stack_id remapped (NULL when the bundle lacks the stack),
// local_timestamp_ns appended. No SQLite on the per-row path. An error (a record without every
// column, a non-integer timestamp or stack_id, a record needing overflow pages, a damaged
// input) leaves the part as it was; the caller copies with SQL instead.
struct RecordTable {
  std::string name;
  int64_t input_root = 0, part_root = 0;
  int columns = 0;  // columns of the input table (fields of each input record)
  // For each column of the part's table but the last (local_timestamp_ns): the input field it
  // is copied from, or -1 for NULL (a column the input's table does not have).
  std::vector<int> source;
  // Input fields (not output columns) of these roles.
  int rowid_column = 0, node_column = 0, timestamp_column = 0;
  int stack_column = -1;
  std::vector<int> time_columns;  // aligned like timestamp_ns; NULL stays NULL
};

struct RecordCopy {
  std::string input_path, part_path;  // the part closed, its tables created
  std::string node, original_node;
  int64_t id_shift = 0;
  std::function<int64_t(int64_t)> align;                            // local -> aligned timestamp
  const std::unordered_map<int64_t, int64_t>* stack_map = nullptr;  // old -> new stack id
  std::vector<RecordTable> tables;
};

struct RecordCounts {
  std::string table;
  int64_t rows_in = 0, rows_out = 0;
  int64_t other_node = 0;  // rows whose node is not the bundle's
  int64_t dangling = 0;    // rows whose stack_id the bundle's stacks lack
};

rs::Result<std::vector<RecordCounts>> CopyRecords(const RecordCopy& copy);

}  // namespace merge
