// The query endpoint's work: one read-only statement under the guard of
// `rankscope-analyze query` (rscore/read_only_query.h: the same refusals, the same time limit) on a
// connection of its own, its rows encoded for the wire (rscore/fleet_wire.h) with a row limit
// and a size limit.
#pragma once

#include <cstdint>
#include <string>

#include "rscore/fleet_wire.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::serve {

struct QueryLimits {
  int64_t max_rows = 100000;
  int64_t max_result_bytes = 16 << 20;
  int64_t timeout_ns = int64_t{30} * 1'000'000'000;
};

// What SQLite may allocate for one query beyond twice its reply's limit (the page cache and
// sorter of a connection take a few MiB; a row of 300 values of 4 MiB would take 1.2 GB).
inline constexpr int64_t kQueryMemoryBytes = 64 << 20;
inline int64_t QueryMemoryLimit(const QueryLimits& l) {
  return kQueryMemoryBytes + 2 * l.max_result_bytes;
}

// A read-only connection for one query: `path` (a decompressed bundle, or the live recording's
// database in WAL mode, where a read transaction is a snapshot that never holds the writer
// back) opened read-only and guarded (rs::Db::GuardInput), with the query views
// (rs::CreateQueryViews) and the read-only guard (rs::InstallReadOnlyGuard).
// `label` names it in errors.
rs::Result<rs::Db> OpenQueryConnection(const std::string& path, const std::string& label);

// Runs `req` on `db` within `limits` (the request's own limit and timeout when smaller) and
// returns the reply's JSON, stopping at the row or value that would take it past
// max_result_bytes (before that value is encoded). What SQLite allocates meanwhile on this
// thread is bounded by QueryMemoryLimit (rs::SqliteMemoryBudget). Errors: refused or invalid
// SQL, the time limit, a value over the size limit, the memory limit.
rs::Result<std::string> RunWireQuery(rs::Db& db, const rs::wire::QueryRequest& req,
                                     const std::string& node, const std::string& source,
                                     const QueryLimits& limits);

}  // namespace rs::serve
