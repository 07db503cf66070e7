#include "query.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <map>
#include <memory>
#include <string_view>
#include <vector>

#include "query_functions.h"
#include "rscore/duration.h"
#include "rscore/json.h"
#include "rscore/schema.h"
#include "rscore/text_escape.h"

namespace analyzer {
namespace {

// What the guard refused first, for the error message (set from the authorizer callback); a
// write to the schema table is only noted (see Authorize).
thread_local std::string g_denied;
thread_local std::string g_schema_write;

const char* ActionName(int action) {
  switch (action) {
    case SQLITE_INSERT:
      return "INSERT";
    case SQLITE_UPDATE:
      return "UPDATE";
    case SQLITE_DELETE:
      return "DELETE";
    case SQLITE_ATTACH:
      return "ATTACH";
    case SQLITE_DETACH:
      return "DETACH";
    case SQLITE_PRAGMA:
      return "PRAGMA";
    case SQLITE_ALTER_TABLE:
      return "ALTER TABLE";
    case SQLITE_REINDEX:
      return "REINDEX";
    case SQLITE_ANALYZE:
      return "ANALYZE";
    case SQLITE_TRANSACTION:
      return "a transaction statement";
    case SQLITE_SAVEPOINT:
      return "SAVEPOINT";
    case SQLITE_CREATE_INDEX:
    case SQLITE_CREATE_TEMP_INDEX:
      return "CREATE INDEX";
    case SQLITE_CREATE_TABLE:
    case SQLITE_CREATE_TEMP_TABLE:
      return "CREATE TABLE";
    case SQLITE_CREATE_TRIGGER:
    case SQLITE_CREATE_TEMP_TRIGGER:
      return "CREATE TRIGGER";
    case SQLITE_CREATE_VIEW:
    case SQLITE_CREATE_TEMP_VIEW:
      return "CREATE VIEW";
    case SQLITE_CREATE_VTABLE:
      return "CREATE VIRTUAL TABLE";
    case SQLITE_DROP_INDEX:
    case SQLITE_DROP_TEMP_INDEX:
      return "DROP INDEX";
    case SQLITE_DROP_TABLE:
    case SQLITE_DROP_TEMP_TABLE:
      return "DROP TABLE";
    case SQLITE_DROP_TRIGGER:
    case SQLITE_DROP_TEMP_TRIGGER:
      return "DROP TRIGGER";
    case SQLITE_DROP_VIEW:
    case SQLITE_DROP_TEMP_VIEW:
      return "DROP VIEW";
    case SQLITE_DROP_VTABLE:
      return "DROP VIRTUAL TABLE";
    default:
      return "a schema change";
  }
}

bool Listed(std::string_view name, std::initializer_list<std::string_view> list) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::find(list.begin(), list.end(), std::string_view(lower)) != list.end();
}

// PRAGMAs that only describe the schema (whatever their argument), as statements or as
// table-valued functions (pragma_table_info(...)).
bool IsReadOnlyPragma(std::string_view name) {
  return Listed(name, {"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo",
                       "foreign_key_list", "table_list"});
}

// SQL functions a query may call: pure scalar, aggregate and window functions of the values
// they are given (SQLite's core, date/time, math and JSON functions). Everything else is
// refused: what reads or changes state outside the query's rows (load_extension,
// fts3_tokenizer, sqlite_offset, changes, last_insert_rowid, sqlite_compileoption_*), and
// what only makes data up (random, randomblob, zeroblob).
bool IsAllowedFunction(std::string_view name) {
  return Listed(
      name,
      {// core scalar
       "abs", "char", "coalesce", "format", "glob", "hex", "ifnull", "iif", "instr", "length",
       "like", "likelihood", "likely", "lower", "ltrim", "max", "min", "nullif", "printf", "quote",
       "replace", "round", "rtrim", "sign", "soundex", "substr", "substring", "trim", "typeof",
       "unhex", "unicode", "unlikely", "upper", "octet_length", "concat", "concat_ws",
       // date and time
       "date", "time", "datetime", "julianday", "strftime", "unixepoch", "timediff",
       // aggregate
       "avg", "count", "group_concat", "string_agg", "sum", "total",
       // window
       "row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead",
       "first_value", "last_value", "nth_value",
       // math
       "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "ceiling", "cos", "cosh",
       "degrees", "exp", "floor", "ln", "log", "log10", "log2", "mod", "pi", "pow", "power",
       "radians", "sin", "sinh", "sqrt", "tan", "tanh", "trunc",
       // JSON
       "json", "json_array", "json_array_length", "json_extract", "->", "->>", "json_insert",
       "json_object", "json_patch", "json_quote", "json_remove", "json_replace", "json_set",
       "json_type", "json_valid", "json_group_array", "json_group_object"});
}

bool IsSchemaTable(const char* table) {
  return table != nullptr && Listed(table, {"sqlite_master", "sqlite_schema", "sqlite_temp_master",
                                            "sqlite_temp_schema"});
}

// Table-valued functions that read something other than the query's data: pragma_* other
// than the schema-describing ones, and SQLite's views of its own state.
bool IsRefusedTableFunction(const char* table) {
  if (table == nullptr) return false;
  std::string_view t(table);
  if (t.substr(0, 7) == "pragma_") return !IsReadOnlyPragma(t.substr(7));
  return Listed(t, {"sqlite_dbpage", "sqlite_stmt", "dbstat"});
}

int Authorize(void*, int action, const char* a1, const char* a2, const char*, const char*) {
  switch (action) {
    case SQLITE_SELECT:
    case SQLITE_RECURSIVE:
      return SQLITE_OK;
    case SQLITE_READ:
      if (!IsRefusedTableFunction(a1)) return SQLITE_OK;
      g_denied = std::string("the table-valued function ") + a1 + "()";
      return SQLITE_DENY;
    case SQLITE_FUNCTION:
      if (a2 && IsAllowedFunction(a2)) return SQLITE_OK;
      g_denied = std::string("the SQL function ") + (a2 ? a2 : "") + "()";
      return SQLITE_DENY;
    case SQLITE_PRAGMA:
      if (a1 && IsReadOnlyPragma(a1)) return SQLITE_OK;
      g_denied = std::string("PRAGMA ") + (a1 ? a1 : "");
      return SQLITE_DENY;
    case SQLITE_INSERT:
    case SQLITE_UPDATE:
    case SQLITE_DELETE:
      // DROP, CREATE and ALTER first ask to write the schema table, and the first use of a
      // table-valued function asks to update it: the DDL action that follows is refused
      // under its own name, and a statement that still writes is refused by RunQuery as not
      // read-only (with this name).
      if (IsSchemaTable(a1)) {
        if (g_schema_write.empty()) g_schema_write = std::string(ActionName(action)) + " of " + a1;
        return SQLITE_OK;
      }
      g_denied = ActionName(action);
      return SQLITE_DENY;
    default:
      g_denied = ActionName(action);
      return SQLITE_DENY;
  }
}

bool OnlyWhitespaceOrComments(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (std::isspace(static_cast<unsigned char>(s[i])) || s[i] == ';') {
      ++i;
    } else if (s.substr(i, 2) == "--") {
      size_t nl = s.find('\n', i);
      i = nl == std::string_view::npos ? s.size() : nl + 1;
    } else if (s.substr(i, 2) == "/*") {
      size_t e = s.find("*/", i + 2);
      i = e == std::string_view::npos ? s.size() : e + 2;
    } else {
      return false;
    }
  }
  return true;
}

std::string CellText(sqlite3_stmt* st, int col) {
  switch (sqlite3_column_type(st, col)) {
    case SQLITE_NULL:
      return "";
    case SQLITE_BLOB: {
      const auto* p = static_cast<const unsigned char*>(sqlite3_column_blob(st, col));
      int n = sqlite3_column_bytes(st, col);
      std::string hex = "x'";
      char b[3];
      for (int i = 0; i < n; ++i) {
        std::snprintf(b, sizeof b, "%02x", p[i]);
        hex += b;
      }
      return hex + "'";
    }
    default: {
      const unsigned char* t = sqlite3_column_text(st, col);
      return t ? std::string(reinterpret_cast<const char*>(t),
                             static_cast<size_t>(sqlite3_column_bytes(st, col)))
               : "";
    }
  }
}

std::string CsvQuote(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string JsonCell(sqlite3_stmt* st, int col) {
  switch (sqlite3_column_type(st, col)) {
    case SQLITE_NULL:
      return "null";
    case SQLITE_INTEGER:
      return std::to_string(sqlite3_column_int64(st, col));
    case SQLITE_FLOAT:
      return rs::JsonWriter::Number(sqlite3_column_double(st, col));
    default:
      return rs::JsonWriter::Quote(CellText(st, col));
  }
}

// Buffers rows to size the columns; flushed in pages so memory stays bounded.
class TablePrinter {
 public:
  TablePrinter(std::vector<std::string> names, std::ostream& out)
      : names_(std::move(names)), out_(out) {}
  void Add(std::vector<std::string> row) {
    rows_.push_back(std::move(row));
    if (rows_.size() >= 1000) Flush();
  }
  void Flush() {
    if (rows_.empty() && header_done_) return;
    std::vector<size_t> w(names_.size());
    for (size_t c = 0; c < names_.size(); ++c) {
      w[c] = names_[c].size();
      for (const auto& r : rows_) w[c] = std::max(w[c], std::min<size_t>(r[c].size(), 60));
    }
    auto line = [&](const std::vector<std::string>& cells) {
      for (size_t c = 0; c < cells.size(); ++c) {
        std::string v = cells[c].size() > 60 ? cells[c].substr(0, 57) + "..." : cells[c];
        out_ << (c ? "  " : "") << v;
        if (c + 1 < cells.size()) out_ << std::string(w[c] - v.size(), ' ');
      }
      out_ << '\n';
    };
    if (!header_done_) {
      line(names_);
      std::vector<std::string> dashes;
      for (size_t c = 0; c < names_.size(); ++c) dashes.push_back(std::string(w[c], '-'));
      line(dashes);
      header_done_ = true;
    }
    for (const auto& r : rows_) line(r);
    rows_.clear();
  }

 private:
  std::vector<std::string> names_;
  std::vector<std::vector<std::string>> rows_;
  std::ostream& out_;
  bool header_done_ = false;
};

// Columns the views add to their table's.
struct ViewColumn {
  std::string name;
  std::string sql;  // its value over the table's columns
  std::string meaning;
};

constexpr int64_t kNsPerSecond = 1000000000;

// ISO 8601 UTC with nanoseconds of a nanoseconds-since-epoch column; NULL stays NULL.
std::string UtcTimeSql(const std::string& column) {
  const std::string ns = std::to_string(kNsPerSecond);
  const std::string frac = "((" + column + " % " + ns + " + " + ns + ") % " + ns + ")";
  return "CASE WHEN " + column + " IS NULL THEN NULL ELSE strftime('%Y-%m-%dT%H:%M:%S', (" +
         column + " - " + frac + ") / " + ns + ", 'unixepoch') || printf('.%09dZ', " + frac +
         ") END";
}

// A 64-bit hash column as 16 hex digits of its unsigned value; NULL stays NULL.
std::string HexSql(const std::string& column) {
  return "CASE WHEN " + column + " IS NULL THEN NULL ELSE printf('0x%016x', " + column + ") END";
}

struct ColumnInfo {
  std::string name, type;
};

rs::Result<std::vector<ColumnInfo>> TableColumns(rs::Db& db, const std::string& table) {
  ASSIGN_OR_RETURN(rs::Statement st, db.Prepare("SELECT name, type FROM pragma_table_info(?1)"));
  st.Bind(1, table);
  std::vector<ColumnInfo> columns;
  for (;;) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    columns.push_back({st.Text(0), st.Text(1)});
  }
  return columns;
}

bool ColumnListed(const std::vector<ColumnInfo>& columns, std::string_view name) {
  return std::any_of(columns.begin(), columns.end(),
                     [&](const ColumnInfo& c) { return c.name == name; });
}

std::string ViewName(std::string_view table) { return std::string(table) + "_v"; }

// What the view of `table` adds, given the table's columns.
std::vector<ViewColumn> ViewColumns(std::string_view table, const std::vector<ColumnInfo>& columns,
                                    bool process_ranks) {
  std::vector<ViewColumn> added;
  // Events of a process (scheduler, block I/O, TCP, CUDA, process events) carry no rank of their
  // own: the rank of their process (processes.rank), so that a query can ask by rank.
  if (process_ranks && ColumnListed(columns, "node") && ColumnListed(columns, "pid") &&
      !ColumnListed(columns, "rank")) {
    const std::string t(table);
    added.push_back({"rank",
                     "(SELECT p.rank FROM main.processes p WHERE p.node = " + t +
                         ".node AND p.pid = " + t + ".pid)",
                     "the rank of the event's process (processes.rank; NULL where unknown)"});
  }
  auto time = [&](const std::string& column, const std::string& name) {
    if (ColumnListed(columns, column)) {
      added.push_back(
          {name, UtcTimeSql(column), column + " as UTC text: ISO 8601 with nanoseconds"});
    }
  };
  time("timestamp_ns", "time_utc");
  for (const rs::TimeColumn& t : rs::kExtraTimeColumns) {
    if (t.table != table) continue;
    std::string column(t.column);
    time(column, column.substr(0, column.size() - 3) + "_utc");  // device_start_ns -> ..._utc
  }
  for (const char* hash : {"comm_id_hash", "nccl_comm_hash"}) {
    if (!ColumnListed(columns, hash)) continue;
    std::string column = hash;
    added.push_back({column.substr(0, column.size() - 5) + "_hex", HexSql(column),
                     column + " as 16 hex digits, as the report and the trace show it"});
  }
  return added;
}

// The database has processes.rank (the views then give every process event its rank).
rs::Result<bool> ProcessRanks(rs::Db& db) {
  ASSIGN_OR_RETURN(bool has, rs::HasTable(db, "processes"));
  if (!has) return false;
  return rs::HasColumn(db, "processes", "rank");
}

// The event tables `db` has, with their columns.
rs::Result<std::vector<std::pair<std::string, std::vector<ColumnInfo>>>> EventTables(rs::Db& db) {
  std::vector<std::pair<std::string, std::vector<ColumnInfo>>> tables;
  for (std::string_view t : rs::kEventTables) {
    ASSIGN_OR_RETURN(bool present, rs::HasTable(db, t));
    if (!present) continue;
    ASSIGN_OR_RETURN(auto columns, TableColumns(db, std::string(t)));
    tables.emplace_back(std::string(t), std::move(columns));
  }
  return tables;
}

// Left-aligned columns, two spaces apart; the last one is not padded.
void PrintAligned(const std::vector<std::vector<std::string>>& rows, std::ostream& out) {
  if (rows.empty()) return;
  std::vector<size_t> w(rows[0].size(), 0);
  for (const auto& r : rows) {
    for (size_t c = 0; c < r.size(); ++c) w[c] = std::max(w[c], r[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (size_t c = 0; c < cells.size(); ++c) {
      l += (c ? "  " : "") + cells[c];
      if (c + 1 < cells.size()) l += std::string(w[c] - cells[c].size(), ' ');
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out << l << '\n';
  };
  line(rows[0]);
  std::vector<std::string> dashes;
  for (size_t c = 0; c < w.size(); ++c) dashes.push_back(std::string(w[c], '-'));
  line(dashes);
  for (size_t i = 1; i < rows.size(); ++i) line(rows[i]);
}

// Tables (in creation order) and then the query views of `db`.
rs::Result<std::vector<std::string>> TableNames(rs::Db& db, const char* type, const char* master) {
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare(std::string("SELECT name FROM ") + master + " WHERE type = '" + type +
                              "' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid"));
  std::vector<std::string> names;
  for (;;) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    names.push_back(st.Text(0));
  }
  return names;
}

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

rs::Result<void> CreateQueryViews(rs::Db& db) {
  ASSIGN_OR_RETURN(auto tables, EventTables(db));
  ASSIGN_OR_RETURN(bool ranks, ProcessRanks(db));
  for (const auto& [table, columns] : tables) {
    std::string sql = "CREATE TEMP VIEW IF NOT EXISTS " + ViewName(table) + " AS SELECT *";
    for (const ViewColumn& v : ViewColumns(table, columns, ranks)) {
      sql += ", " + v.sql + " AS " + v.name;
    }
    RETURN_IF_ERROR(db.Exec(sql + " FROM main." + table));
  }
  return rs::Ok();
}

rs::Result<void> PrintSchema(rs::Db& db, std::ostream& out) {
  const std::vector<rs::TableDoc> docs = rs::DescribeSchema(rs::DbKind::kMerged);
  ASSIGN_OR_RETURN(std::vector<std::string> tables, TableNames(db, "table", "sqlite_master"));
  ASSIGN_OR_RETURN(std::vector<std::string> views, TableNames(db, "view", "sqlite_temp_master"));
  ASSIGN_OR_RETURN(auto event_tables, EventTables(db));
  ASSIGN_OR_RETURN(bool ranks, ProcessRanks(db));
  std::vector<std::vector<std::string>> rows = {{"table", "rows", "meaning"}};
  std::map<std::string, std::string> counts;
  for (const std::string& t : tables) {
    ASSIGN_OR_RETURN(int64_t n, db.QueryInt("SELECT COUNT(*) FROM main." + rs::QuoteIdentifier(t)));
    counts[t] = std::to_string(n);
    const rs::TableDoc* doc = rs::FindTableDoc(docs, t);
    rows.push_back({t, counts[t], doc ? doc->meaning : ""});
  }
  for (const auto& [table, columns] : event_tables) {
    const std::string view = ViewName(table);
    if (std::find(views.begin(), views.end(), view) == views.end()) continue;
    std::vector<std::string> added;
    for (const ViewColumn& v : ViewColumns(table, columns, ranks)) added.push_back(v.name);
    rows.push_back({view, counts[table], "view: " + table + " with " + Join(added)});
  }
  PrintAligned(rows, out);
  return rs::Ok();
}

rs::Result<void> PrintTableSchema(rs::Db& db, const std::string& table, std::ostream& out) {
  const std::vector<rs::TableDoc> docs = rs::DescribeSchema(rs::DbKind::kMerged);
  ASSIGN_OR_RETURN(std::vector<std::string> tables, TableNames(db, "table", "sqlite_master"));
  ASSIGN_OR_RETURN(std::vector<std::string> views, TableNames(db, "view", "sqlite_temp_master"));
  std::string base = table;  // the table whose columns' meanings apply
  std::vector<ViewColumn> added;
  if (std::find(views.begin(), views.end(), table) != views.end()) {
    ASSIGN_OR_RETURN(auto event_tables, EventTables(db));
    ASSIGN_OR_RETURN(bool ranks, ProcessRanks(db));
    for (const auto& [t, columns] : event_tables) {
      if (ViewName(t) != table) continue;
      base = t;
      added = ViewColumns(t, columns, ranks);
    }
  } else if (std::find(tables.begin(), tables.end(), table) == tables.end()) {
    return rs::Error("no table or view '" + table + "' in this database; tables: " + Join(tables) +
                     (views.empty() ? "" : "; views: " + Join(views)));
  }
  ASSIGN_OR_RETURN(std::vector<ColumnInfo> columns, TableColumns(db, base));
  const rs::TableDoc* doc = rs::FindTableDoc(docs, base);
  std::vector<std::vector<std::string>> rows = {{"column", "type", "meaning"}};
  for (const ColumnInfo& c : columns) {
    const rs::ColumnDoc* cd = doc ? doc->Find(c.name) : nullptr;
    rows.push_back({c.name, c.type, cd ? cd->meaning : ""});
  }
  for (const ViewColumn& v : added) rows.push_back({v.name, "TEXT", v.meaning});
  PrintAligned(rows, out);
  return rs::Ok();
}

rs::Result<OutputFormat> ParseOutputFormat(const std::string& name) {
  if (name == "table") return OutputFormat::kTable;
  if (name == "csv") return OutputFormat::kCsv;
  if (name == "json") return OutputFormat::kJson;
  return rs::Error("--format: unknown format '" + name + "' (use table, csv or json)");
}

rs::Result<void> InstallReadOnlyGuard(rs::Db& db) {
  // The guard limits values to rs::kMaxValueBytes (SQLITE_LIMIT_LENGTH) and time to the
  // deadline each query restarts; the functions whose one call outlasts a deadline are bounded
  // by their arguments (query_functions.h).
  if (!db.guarded()) RETURN_IF_ERROR(db.GuardInput(db.path()));
  RETURN_IF_ERROR(BoundExpensiveFunctions(db));
  sqlite3_set_authorizer(db.raw(), Authorize, nullptr);
  return rs::Ok();
}

rs::Result<QueryStatement> PrepareReadOnlyQuery(rs::Db& db, const std::string& sql,
                                                int64_t timeout_ns, const std::string& what) {
  g_denied.clear();
  g_schema_write.clear();
  // The time limit counts from here: preparing, every row and the output.
  db.RestartDeadline(timeout_ns, what);
  sqlite3_stmt* raw = nullptr;
  const char* tail = nullptr;
  int rc = sqlite3_prepare_v2(db.raw(), sql.c_str(), static_cast<int>(sql.size()), &raw, &tail);
  if (rc != SQLITE_OK) {
    if (!g_denied.empty()) {
      const bool function = g_denied.rfind("the ", 0) == 0;  // an SQL or table-valued function
      return rs::Error("query refused: " + g_denied + " is not allowed; " +
                       (function ? "queries may call only pure functions of the values they read"
                                 : "queries are read-only (SELECT / WITH only)"));
    }
    return rs::Error(rs::SqliteErrorText(db.raw(), nullptr));
  }
  if (raw == nullptr) return rs::Error("empty query: give one SELECT statement");
  QueryStatement st(raw, sqlite3_finalize);
  if (tail && !OnlyWhitespaceOrComments(tail)) {
    return rs::Error("only one SQL statement per query (found more after the first ';')");
  }
  if (!sqlite3_stmt_readonly(raw)) {
    return rs::Error(
        "query refused: " + (g_schema_write.empty() ? "a statement that writes" : g_schema_write) +
        " is not allowed; queries are read-only (SELECT / WITH only)");
  }
  return st;
}

rs::Result<QueryStats> RunQuery(rs::Db& db, const std::string& sql, const QueryOptions& options,
                                std::ostream& out) {
  ASSIGN_OR_RETURN(QueryStatement st,
                   PrepareReadOnlyQuery(db, sql, options.timeout_ns,
                                        options.timeout_text.empty()
                                            ? "--timeout " + rs::FormatDuration(options.timeout_ns)
                                            : "--timeout " + options.timeout_text));
  sqlite3_stmt* raw = st.get();
  int ncol = sqlite3_column_count(raw);
  std::vector<std::string> names;
  for (int c = 0; c < ncol; ++c) names.push_back(sqlite3_column_name(raw, c));
  QueryStats stats;
  std::vector<std::string> shown_names;
  for (const std::string& n : names) shown_names.push_back(rs::EscapeText(n));
  TablePrinter table(shown_names, out);
  if (options.format == OutputFormat::kCsv) {
    for (int c = 0; c < ncol; ++c) out << (c ? "," : "") << CsvQuote(names[c]);
    out << '\n';
  } else if (options.format == OutputFormat::kJson) {
    out << "[";
  }
  for (;;) {
    const int rc = sqlite3_step(raw);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return db.StepError("query");
    if (options.limit > 0 && stats.rows >= options.limit) {
      stats.truncated = true;
      break;
    }
    ++stats.rows;
    switch (options.format) {
      case OutputFormat::kTable: {
        std::vector<std::string> row;
        for (int c = 0; c < ncol; ++c) {
          std::string cell = sqlite3_column_type(raw, c) == SQLITE_NULL ? "NULL" : CellText(raw, c);
          // The table shows 60 characters of a cell: a page of 1000 rows of 4 MiB values is
          // not kept whole. It is for a terminal: a control character in a value is shown
          // escaped, never acted on (CSV and JSON carry values as they are, quoted).
          if (cell.size() > 61) cell.resize(61);
          row.push_back(rs::EscapeText(cell));
        }
        table.Add(std::move(row));
        break;
      }
      case OutputFormat::kCsv:
        for (int c = 0; c < ncol; ++c) out << (c ? "," : "") << CsvQuote(CellText(raw, c));
        out << '\n';
        break;
      case OutputFormat::kJson:
        out << (stats.rows > 1 ? ",\n " : "\n ") << "{";
        for (int c = 0; c < ncol; ++c) {
          out << (c ? ", " : "") << rs::JsonWriter::Quote(names[c]) << ": " << JsonCell(raw, c);
        }
        out << "}";
        break;
    }
    if (!out) break;  // the output failed (a full disk): the caller says so, no use going on
  }
  if (options.format == OutputFormat::kTable) table.Flush();
  if (options.format == OutputFormat::kJson) out << (stats.rows ? "\n]\n" : "]\n");
  return stats;
}

}  // namespace analyzer
