// `rankscope-analyze query`: read-only SQL over a bundle or merged db.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>

#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace analyzer {

enum class OutputFormat { kTable, kCsv, kJson };
rs::Result<OutputFormat> ParseOutputFormat(const std::string& name);

inline constexpr int64_t kDefaultQueryTimeoutNs = int64_t{30} * 1000000000;

struct QueryOptions {
  OutputFormat format = OutputFormat::kTable;
  int64_t limit = 10000;                        // rows printed at most; 0 = no limit
  int64_t timeout_ns = kDefaultQueryTimeoutNs;  // the query stops with an error after this
  std::string timeout_text;                     // as given on the command line, for the error
};

struct QueryStats {
  int64_t rows = 0;
  bool truncated = false;
};

// Makes `db` refuse anything but reading: writes, schema changes, ATTACH/DETACH, PRAGMAs
// that change state or read more than the schema, and SQL functions other than pure functions
// of the values read (an allow-list) are denied with a message naming what was refused.
// Guards the connection (rs::Db::GuardInput) when it is not yet.
rs::Result<void> InstallReadOnlyGuard(rs::Db& db);

// Views for reading the event tables by eye, created as TEMP views on the (read-only)
// connection before InstallReadOnlyGuard: TABLE_v for every event table present has TABLE's
// columns, then time_utc (timestamp_ns as ISO 8601 UTC with nanoseconds,
// "2026-11-25T12:03:07.123456789Z"), gpu_ops_v device_start_utc / device_end_utc likewise,
// and comm_id_hex / nccl_comm_hex (the hashes as 16 hex digits, "0x26017f0f7f0ca554", as the
// report and the trace show communicators).
rs::Result<void> CreateQueryViews(rs::Db& db);

// `schema`: the tables and views of `db`, each with its row count and meaning
// (rs::DescribeSchema), as an aligned table.
rs::Result<void> PrintSchema(rs::Db& db, std::ostream& out);
// One table's or view's columns with type and meaning. A name that is neither is an error
// that lists the tables and views.
rs::Result<void> PrintTableSchema(rs::Db& db, const std::string& table, std::ostream& out);

// One statement that passed the guard (InstallReadOnlyGuard, on the connection already): it
// reads only. Its rows are stepped with sqlite3_step; a failed step is db.StepError(...).
using QueryStatement = std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)>;

// Prepares exactly one SQL statement under the guard, restarting the connection's time limit
// (`timeout_ns`, named `what` in the error: "--timeout 30s"). Errors: the statement refused
// (naming what was refused), a second statement, an empty one, SQLite's own error.
rs::Result<QueryStatement> PrepareReadOnlyQuery(rs::Db& db, const std::string& sql,
                                                int64_t timeout_ns, const std::string& what);

// Runs exactly one SQL statement and prints its rows. A second statement is an error, and so is
// a statement still running after options.timeout_ns.
rs::Result<QueryStats> RunQuery(rs::Db& db, const std::string& sql, const QueryOptions& options,
                                std::ostream& out);

}  // namespace analyzer
