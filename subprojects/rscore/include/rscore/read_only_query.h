// Read-only SQL over a bundle or merged database, as `rankscope-analyze query`, the fleet's
// node-side server (rankscope-serve, rankscope-record --serve) and the MCP query tool run it:
// one guard, one set of query views, in rscore so that the node-side server needs nothing of
// the workstation tools. Printing rows is the tools' own (analyzer/query.h).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs {

// Makes `db` refuse anything but reading: writes, schema changes, ATTACH/DETACH, PRAGMAs
// that change state or read more than the schema, and SQL functions other than pure functions
// of the values read (an allow-list) are denied with a message naming what was refused.
// Guards the connection (Db::GuardInput) when it is not yet, and bounds the functions whose
// one call could outlast a time limit (query_functions.h).
Result<void> InstallReadOnlyGuard(Db& db);

// Views for reading the event tables by eye, created as TEMP views on the (read-only)
// connection before InstallReadOnlyGuard: TABLE_v for every event table present has TABLE's
// columns, then time_utc (timestamp_ns as ISO 8601 UTC with nanoseconds,
// "2026-11-25T12:03:07.123456789Z"), gpu_ops_v device_start_utc / device_end_utc likewise,
// comm_id_hex / nccl_comm_hex (the hashes as 16 hex digits, "0x26017f0f7f0ca554", as the
// report and the trace show communicators), and for events of a process its rank.
Result<void> CreateQueryViews(Db& db);

// What CreateQueryViews makes of `db`: per event table present, its view and the columns the
// view adds (for describing the schema).
struct QueryViewColumn {
  std::string name;
  std::string sql;  // its value over the table's columns
  std::string meaning;
};
struct QueryView {
  std::string table, view;
  std::vector<QueryViewColumn> added;
};
Result<std::vector<QueryView>> DescribeQueryViews(Db& db);

// A table's columns with their declared types, in order.
struct DeclaredColumn {
  std::string name, type;
};
Result<std::vector<DeclaredColumn>> DeclaredColumns(Db& db, const std::string& table);

// One statement that passed the guard (InstallReadOnlyGuard, on the connection already): it
// reads only. Its rows are stepped with sqlite3_step; a failed step is db.StepError(...).
using QueryStatement = std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)>;

// Prepares exactly one SQL statement under the guard, restarting the connection's time limit
// (`timeout_ns`, named `what` in the error: "--timeout 30s"). Errors: the statement refused
// (naming what was refused), a second statement, an empty one, SQLite's own error.
Result<QueryStatement> PrepareReadOnlyQuery(Db& db, const std::string& sql, int64_t timeout_ns,
                                            const std::string& what);

}  // namespace rs
