// `rankscope-analyze query`: read-only SQL over a bundle or merged db.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>

#include "rscore/read_only_query.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::analyzer {

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

// The guard, the views and one guarded statement: rscore/read_only_query.h, shared with the
// node-side server.
using rs::CreateQueryViews;
using rs::InstallReadOnlyGuard;

// `schema`: the tables and views of `db`, each with its row count and meaning
// (rs::DescribeSchema), as an aligned table.
rs::Result<void> PrintSchema(rs::Db& db, std::ostream& out);
// One table's or view's columns with type and meaning. A name that is neither is an error
// that lists the tables and views.
rs::Result<void> PrintTableSchema(rs::Db& db, const std::string& table, std::ostream& out);

using rs::PrepareReadOnlyQuery;
using rs::QueryStatement;

// Runs exactly one SQL statement and prints its rows. A second statement is an error, and so is
// a statement still running after options.timeout_ns.
rs::Result<QueryStats> RunQuery(rs::Db& db, const std::string& sql, const QueryOptions& options,
                                std::ostream& out);

}  // namespace rs::analyzer
