// The SQLite schema shared by node bundles (.rsb) and merged databases (.rsdb).
// Column names are part of the user-facing contract (users' own SQL uses them).
//
// Versioning rules (bump kSchemaVersion when any apply):
//  - a table or column is removed or renamed, or a column's meaning or unit changes;
//  - a new NOT NULL column is added.
// Adding a nullable column or a new table keeps the version (readers ignore what they
// do not know). kFormatVersion covers the container (zstd frame around an SQLite image)
// and is bumped only when that changes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs {

inline constexpr int kFormatVersion = 1;
inline constexpr int kSchemaVersion = 1;

// Event tables: every row has id (node-namespaced, see event_id.h), node, timestamp_ns
// (CLOCK_REALTIME nanoseconds; aligned in a merged db). The one list of them, with what the
// tools need to know of each: the recorder's source that writes it (the `sources` table, the
// `<source>_ring_aged_out` metadata), whether its rows are a process's own calls (pid: narrowed
// with that process's ranks), and whether they carry comm_id_hash.
struct EventTable {
  std::string_view name, source;
  bool process_calls = false;
  bool communicator = false;
  constexpr operator std::string_view() const { return name; }  // a table is its name
};
inline constexpr EventTable kEventTables[] = {
    {"nccl_events", "nccl", true, true},     {"cuda_events", "cuda", true, false},
    {"tcp_events", "tcp", false, false},     {"sched_events", "sched", false, false},
    {"block_events", "block", false, false}, {"process_events", "process", false, false},
    {"gpu_ops", "gpu", true, true},          {"rdma_counters", "rdma", false, false},
};

// Columns of event tables that hold wall-clock times besides timestamp_ns (aligned by the
// merge like it).
struct TimeColumn {
  std::string_view table, column;
};
inline constexpr TimeColumn kExtraTimeColumns[] = {
    {"gpu_ops", "device_start_ns"},
    {"gpu_ops", "device_end_ns"},
    {"rdma_counters", "since_ns"},
};

// A bool, not a pointer into kEventTables: GCC's address sanitizer makes such a pointer no
// constant expression, and the exporter checks its tables at compile time.
constexpr bool IsEventTable(std::string_view table) {
  for (const EventTable& e : kEventTables) {
    if (e.name == table) return true;
  }
  return false;
}

enum class DbKind {
  kBundle,  // one node's recording
  kMerged,  // rankscope-merge output: adds local_timestamp_ns + merge_* / clock_alignment tables
};

// Creates every table of the given kind in an empty database and writes schema_version /
// format_version / db_kind into metadata.
Result<void> CreateSchema(Db& db, DbKind kind);

// Indexes that make analysis fast; created once at finalize (inserts stay fast).
Result<void> CreateIndexes(Db& db);

// Reads metadata.schema_version and checks this build can read it.
Result<int> CheckSchemaVersion(Db& db);

// tcp_events' ca_state and err came with a later recorder (same schema version, nullable):
// "ca_state, err" for a SELECT list where the table has them, "NULL, NULL" where it does not.
Result<std::string> TcpCaStateErrColumns(Db& db);

// Whether `db` has a table / a table has a column: tables and nullable columns that came with a
// later version (same schema version) are absent from earlier bundles and merged dbs.
Result<bool> HasTable(Db& db, std::string_view table);
Result<bool> HasColumn(Db& db, std::string_view table, std::string_view column);
// gpu_ops came with a later recorder (same schema version, a new table): whether `db` has it.
Result<bool> HasGpuOps(Db& db);

// Checks that `db` (a file from elsewhere, before any of its rows is read) holds only what a
// rankscope file may: ordinary tables and their indexes; no view, trigger or virtual table,
// whatever its name. The tables this version knows must be rowid tables without hidden or
// generated columns, each known column declared with its type (tables and columns this version
// does not know are allowed: a later recorder may add them).
Result<void> CheckSchemaObjects(Db& db);

// With `check_types` (tables that are not STRICT: files of earlier versions, or foreign ones),
// scans the values of the known columns of every known table: a value whose type is not its
// column's declared type (text or a blob in an INTEGER column, a number or a blob in a TEXT
// one) and a text or blob value longer than `max_value_bytes` are refused; the error names the
// table, column and number of rows. STRICT tables need no scan: SQLite keeps their types (and
// PRAGMA quick_check verifies them), and the connection's SQLITE_LIMIT_LENGTH (Db::GuardInput)
// refuses an oversized value when it is read.
Result<void> CheckValues(Db& db, bool check_types, int64_t max_value_bytes);

// Whether every known table of `db` is STRICT (new files; older ones declare types only).
Result<bool> AllKnownTablesStrict(Db& db);

// The full CREATE statements of the bundle schema (for docs and tests).
std::string_view BundleSchemaSql();

// What the tables and columns mean, as the comments in the CREATE statements (schema.cc) say:
// the comment line before a CREATE TABLE is the table's meaning, a column's trailing comment
// (with the comment-only lines under it) the column's; empty where there is none. The one
// source of `rankscope-analyze schema`.
struct ColumnDoc {
  std::string name;
  std::string type;  // as declared: INTEGER, TEXT, REAL
  std::string meaning;
};
struct TableDoc {
  std::string name;
  std::string meaning;
  std::vector<ColumnDoc> columns;                        // in table order
  const ColumnDoc* Find(std::string_view column) const;  // nullptr: not in this table
};
// The tables of a bundle or of a merged db (whose event tables have local_timestamp_ns too).
std::vector<TableDoc> DescribeSchema(DbKind kind);
const TableDoc* FindTableDoc(const std::vector<TableDoc>& tables, std::string_view name);

}  // namespace rs
