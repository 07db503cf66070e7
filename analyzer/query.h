// `rankscope-analyze query`: read-only SQL over a bundle or merged db.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace analyzer {

enum class OutputFormat { kTable, kCsv, kJson };
rs::Result<OutputFormat> ParseOutputFormat(const std::string& name);

struct QueryOptions {
  OutputFormat format = OutputFormat::kTable;
  int64_t limit = 10000;  // rows printed at most; 0 = no limit
};

struct QueryStats {
  int64_t rows = 0;
  bool truncated = false;
};

// Makes `db` refuse anything but reading: writes, schema changes, ATTACH/DETACH, PRAGMAs
// that change state, and extension loading are denied with a clear message.
void InstallReadOnlyGuard(rs::Db& db);

// Runs exactly one SQL statement and prints its rows. A second statement is an error.
rs::Result<QueryStats> RunQuery(rs::Db& db, const std::string& sql, const QueryOptions& options,
                                std::ostream& out);

}  // namespace analyzer
