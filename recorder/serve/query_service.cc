#include "recorder/serve/query_service.h"

#include <algorithm>
#include <chrono>

#include "rscore/duration.h"
#include "rscore/read_only_query.h"

namespace rs::serve {

rs::Result<rs::Db> OpenQueryConnection(const std::string& path, const std::string& label) {
  ASSIGN_OR_RETURN(rs::Db db, rs::Db::Open(path, rs::Db::Mode::kReadOnly));
  RETURN_IF_ERROR(db.GuardInput(label));
  RETURN_IF_ERROR(rs::CreateQueryViews(db));
  RETURN_IF_ERROR(rs::InstallReadOnlyGuard(db));
  return db;
}

rs::Result<std::string> RunWireQuery(rs::Db& db, const rs::wire::QueryRequest& req,
                                     const std::string& node, const std::string& source,
                                     const QueryLimits& limits) {
  const auto start = std::chrono::steady_clock::now();
  const int64_t timeout_ns = std::min(limits.timeout_ns, req.timeout_ms * 1'000'000);
  const int64_t max_rows = req.limit > 0 ? std::min(req.limit, limits.max_rows) : limits.max_rows;
  rs::SqliteMemoryBudget memory(QueryMemoryLimit(limits));
  auto failed = [&](const rs::Error& e) -> rs::Error {
    if (!memory.hit()) return e;
    return rs::Error(source + ": the query needed more than " +
                     std::to_string(memory.max_bytes() >> 20) +
                     " MiB of memory (this node's limit for one query: 64 MiB and twice "
                     "--max-result-bytes); select fewer or smaller columns");
  };
  auto prepared = rs::PrepareReadOnlyQuery(
      db, req.sql, timeout_ns, "the query time limit " + rs::FormatDuration(timeout_ns));
  if (!prepared.ok()) return failed(prepared.error());
  rs::QueryStatement st = std::move(prepared).value();
  sqlite3_stmt* raw = st.get();
  const int ncol = sqlite3_column_count(raw);
  std::vector<std::string> names;
  for (int c = 0; c < ncol; ++c) names.push_back(sqlite3_column_name(raw, c));
  rs::wire::QueryReplyWriter w(node, source, names);
  // Room for the reply's end (Finish) under the limit.
  const int64_t room = limits.max_result_bytes - 256;
  int64_t rows = 0;
  std::string truncated_by;
  for (;;) {
    const int rc = sqlite3_step(raw);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return failed(db.StepError("query"));
    if (rows >= max_rows) {
      truncated_by = "rows";
      break;
    }
    w.BeginRow();
    // Value by value: a value that cannot fit (its bytes at least, a blob's hex twice that)
    // ends the reply before it is copied.
    for (int c = 0; c < ncol && truncated_by.empty(); ++c) {
      const int type = sqlite3_column_type(raw, c);
      const int64_t least = type == SQLITE_BLOB   ? 2 * int64_t{sqlite3_column_bytes(raw, c)}
                            : type == SQLITE_TEXT ? sqlite3_column_bytes(raw, c)
                                                  : 0;
      if (static_cast<int64_t>(w.size()) + least > room) {
        truncated_by = "bytes";
        break;
      }
      switch (type) {
        case SQLITE_NULL:
          w.Null();
          break;
        case SQLITE_INTEGER:
          w.Int(sqlite3_column_int64(raw, c));
          break;
        case SQLITE_FLOAT:
          w.Real(sqlite3_column_double(raw, c));
          break;
        case SQLITE_BLOB: {
          const void* p = sqlite3_column_blob(raw, c);
          const int n = sqlite3_column_bytes(raw, c);
          w.BlobValue(std::string_view(static_cast<const char*>(p), p ? n : 0));
          break;
        }
        default: {
          const unsigned char* t = sqlite3_column_text(raw, c);
          const int n = sqlite3_column_bytes(raw, c);
          w.Text(std::string_view(reinterpret_cast<const char*>(t), t ? n : 0));
        }
      }
      if (static_cast<int64_t>(w.size()) > room) truncated_by = "bytes";
    }
    if (!truncated_by.empty()) {
      w.AbandonRow();
      break;
    }
    w.EndRow();
    ++rows;
  }
  const int64_t elapsed =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  return w.Finish(!truncated_by.empty(), truncated_by, elapsed);
}

}  // namespace rs::serve
