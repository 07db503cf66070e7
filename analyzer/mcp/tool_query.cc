// query(sql, limit): the read-only SQL of `rankscope-analyze query`, through the same guard
// (analyzer/query.h: writes, ATTACH, state-changing PRAGMAs and impure functions refused), with
// the same views (TABLE_v), bounded in rows, characters and time.
#include "analyzer/mcp/output_schema.h"
#include "analyzer/mcp/tool_bounds.h"
#include "analyzer/mcp/tools.h"
#include "analyzer/query.h"
#include "rscore/duration.h"

namespace rs::analyzer::mcp {
namespace {

constexpr int64_t kDefaultRows = 100;
constexpr int64_t kMaxRows = 1000;
constexpr size_t kMaxCellChars = 1000;
constexpr size_t kMaxRowsChars = 100000;  // the rows together, serialized

Json Schema() {
  using namespace schema;
  Json cell = {{"type", Json::array({"string", "number", "null"})},
               {"description", "a value: integer, real, text, or a blob as x'hex'"}};
  return Result({{"columns", ArrayOf(String(), "the result's column names")},
                 {"rows", ArrayOf(ArrayOf(cell), "each row's values, in column order")},
                 {"row_count", Integer("rows returned")}});
}

Json Cell(sqlite3_stmt* st, int col, bool* cut) {
  switch (sqlite3_column_type(st, col)) {
    case SQLITE_NULL:
      return nullptr;
    case SQLITE_INTEGER:
      return static_cast<int64_t>(sqlite3_column_int64(st, col));
    case SQLITE_FLOAT: {
      const double d = sqlite3_column_double(st, col);
      return std::isfinite(d) ? Json(d) : Json();
    }
    case SQLITE_BLOB: {
      const auto* p = static_cast<const unsigned char*>(sqlite3_column_blob(st, col));
      const size_t n = static_cast<size_t>(sqlite3_column_bytes(st, col));
      std::string hex = "x'";
      static const char kDigits[] = "0123456789abcdef";
      for (size_t i = 0; i < n && hex.size() < kMaxCellChars; ++i) {
        hex += kDigits[p[i] >> 4];
        hex += kDigits[p[i] & 15];
      }
      if (2 * n + 3 > kMaxCellChars) *cut = true;
      return hex + "'";
    }
    default: {
      const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(st, col));
      std::string s(t ? t : "", static_cast<size_t>(sqlite3_column_bytes(st, col)));
      if (s.size() > kMaxCellChars) {
        *cut = true;
        s = CutString(s, kMaxCellChars);
      }
      return s;
    }
  }
}

rs::Result<ToolOutput> Run(Recording& rec, const Args& args, const ToolContext&) {
  const std::string sql = *args.String("sql");
  const int64_t limit = args.Int("limit").value_or(kDefaultRows);
  ASSIGN_OR_RETURN(rs::Db * db, rec.QueryDb());
  ASSIGN_OR_RETURN(QueryStatement st,
                   PrepareReadOnlyQuery(*db, sql, kLookupTimeLimitNs,
                                        rs::FormatDuration(kLookupTimeLimitNs) + " per query"));
  const int ncol = sqlite3_column_count(st.get());
  Json out = Json::object();
  out["columns"] = Json::array();
  for (int c = 0; c < ncol; ++c) out["columns"].push_back(sqlite3_column_name(st.get(), c));
  out["rows"] = Json::array();
  out["row_count"] = 0;
  out["truncated"] = false;
  size_t chars = 0;
  bool cells_cut = false;
  for (;;) {
    const int rc = sqlite3_step(st.get());
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return db->StepError("query");
    if (static_cast<int64_t>(out["rows"].size()) == limit) {
      MarkTruncated(out, "more than " + std::to_string(limit) +
                             " rows: narrow the WHERE clause, aggregate (GROUP BY, COUNT, AVG), "
                             "or raise 'limit' (at most " +
                             std::to_string(kMaxRows) + ")");
      break;
    }
    Json row = Json::array();
    for (int c = 0; c < ncol; ++c) row.push_back(Cell(st.get(), c, &cells_cut));
    chars += Dump(row).size();
    if (chars > kMaxRowsChars) {
      MarkTruncated(out, "the rows passed " + std::to_string(kMaxRowsChars) +
                             " characters: select fewer or shorter columns (substr()), or fewer "
                             "rows");
      break;
    }
    out["rows"].push_back(std::move(row));
  }
  out["row_count"] = out["rows"].size();
  if (cells_cut) {
    MarkTruncated(out, "values longer than " + std::to_string(kMaxCellChars) +
                           " characters were cut: select substr(column, start, length)");
  }

  std::string text = std::to_string(out["rows"].size()) + " row(s)";
  if (ncol > 0) {
    std::string cols;
    for (const Json& c : out["columns"]) cols += (cols.empty() ? "" : ", ") + c.get<std::string>();
    text += " of " + CutString(cols, 200);
  }
  for (size_t i = 0; i < out["rows"].size() && i < 5; ++i) {
    text += "\n" + CutString(Dump(out["rows"][i]), 200);
  }
  if (out["rows"].size() > 5) text += "\n...";
  if (out["truncated"].get<bool>()) text += "\n(truncated: " + out["hint"].get<std::string>() + ")";
  return ToolOutput{std::move(out), std::move(text)};
}

}  // namespace

Tool QueryTool() {
  Tool t;
  t.name = "query";
  t.title = "Read-only SQL over the recording";
  t.description =
      "One read-only SQL statement (SQLite) over the recording's tables and views, as "
      "`rankscope-analyze query` runs it: writes, ATTACH, PRAGMAs other than the "
      "schema-describing ones and impure functions are refused. Tables: nccl_events, "
      "gpu_ops, cuda_events, tcp_events, sched_events, block_events, process_events, "
      "processes, sources, clock_alignment, ...; views TABLE_v add time_utc and comm_id_hex "
      "(the resource rankscope://schema has every column). Times are ns since the epoch. At "
      "most 'limit' rows and 30 s.";
  t.params = {Param("sql", Param::Type::kString, "one SELECT (or WITH) statement").Required(),
              Param("limit", Param::Type::kInteger,
                    "at most this many rows (default " + std::to_string(kDefaultRows) + ")")
                  .Range(1, kMaxRows)};
  t.output_schema = Schema();
  t.run = Run;
  return t;
}

}  // namespace rs::analyzer::mcp
