#include "recorder/serve/query_service.h"

#include <algorithm>
#include <chrono>

#include "analyzer/query.h"
#include "rscore/duration.h"

namespace serve {

rs::Result<rs::Db> OpenQueryConnection(const std::string& path, const std::string& label) {
  ASSIGN_OR_RETURN(rs::Db db, rs::Db::Open(path, rs::Db::Mode::kReadOnly));
  RETURN_IF_ERROR(db.GuardInput(label));
  RETURN_IF_ERROR(analyzer::CreateQueryViews(db));
  RETURN_IF_ERROR(analyzer::InstallReadOnlyGuard(db));
  return db;
}

rs::Result<std::string> RunWireQuery(rs::Db& db, const rs::wire::QueryRequest& req,
                                     const std::string& node, const std::string& source,
                                     const QueryLimits& limits) {
  const auto start = std::chrono::steady_clock::now();
  const int64_t timeout_ns = std::min(limits.timeout_ns, req.timeout_ms * 1'000'000);
  const int64_t max_rows = req.limit > 0 ? std::min(req.limit, limits.max_rows) : limits.max_rows;
  ASSIGN_OR_RETURN(
      analyzer::QueryStatement st,
      analyzer::PrepareReadOnlyQuery(db, req.sql, timeout_ns,
                                     "the query time limit " + rs::FormatDuration(timeout_ns)));
  sqlite3_stmt* raw = st.get();
  const int ncol = sqlite3_column_count(raw);
  std::vector<std::string> names;
  for (int c = 0; c < ncol; ++c) names.push_back(sqlite3_column_name(raw, c));
  rs::wire::QueryReplyWriter w(node, source, names);
  int64_t rows = 0;
  std::string truncated_by;
  for (;;) {
    const int rc = sqlite3_step(raw);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return db.StepError("query");
    if (rows >= max_rows) {
      truncated_by = "rows";
      break;
    }
    w.BeginRow();
    for (int c = 0; c < ncol; ++c) {
      switch (sqlite3_column_type(raw, c)) {
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
    }
    if (static_cast<int64_t>(w.size()) + 256 > limits.max_result_bytes) {
      w.AbandonRow();
      truncated_by = "bytes";
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

}  // namespace serve
