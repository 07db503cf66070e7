// Copies one attached input's tables into the merged db with INSERT ... SELECT (streamed by
// SQLite, never all rows in memory): node renamed, event ids shifted, timestamps aligned
// (timestamp_ns, with its original kept in local_timestamp_ns, and the wall-clock columns of
// rs::kExtraTimeColumns), stack references remapped.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "merger/clock_alignment.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::merge {

struct CopySpec {
  std::string schema;         // name the input is attached under
  std::string node;           // node name in the merged db
  std::string original_node;  // node name in the input's rows
  int64_t id_shift = 0;
  NodeAlignment alignment;
  std::set<std::string> skip;  // tables copied another way (not copied, not counted here)
};

struct TableCount {
  std::string table;
  int64_t rows_in = 0;
  int64_t rows_out = 0;
  int64_t rows_skipped = 0;
  std::string note;  // why rows were skipped
};

// Makes the SQL function aligned_ns(x) on `db` apply `a` (NodeAlignment::Apply), replacing the
// alignment registered before; CopyTables registers its spec's.
rs::Result<void> RegisterAlignment(rs::Db& db, const NodeAlignment& a);
// SQL expression giving the aligned value of `column` (a local timestamp): aligned_ns(column).
std::string AlignedExpr(const std::string& column);

// Copies every table of the bundle schema except metadata and stacks (see MergeStacks), plus
// counts tables the merged schema does not know (their rows are skipped, and said so).
// Expects temp.stack_map to hold this input's stack ids.
// Column names and declared types (upper case) of `table` in `schema`, in column order.
rs::Result<std::vector<std::pair<std::string, std::string>>> TableColumns(rs::Db& db,
                                                                          const std::string& schema,
                                                                          const std::string& table);

rs::Result<std::vector<TableCount>> CopyTables(rs::Db& out, const CopySpec& spec);

// The tables of `schema` ('main' or an attached name), without SQLite's own, by name.
rs::Result<std::vector<std::string>> Tables(rs::Db& db, const std::string& schema);

}  // namespace rs::merge
