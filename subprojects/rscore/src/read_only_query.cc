#include "rscore/read_only_query.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <string_view>
#include <utility>

#include "rscore/query_functions.h"
#include "rscore/schema.h"

namespace rs {
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

bool ColumnListed(const std::vector<DeclaredColumn>& columns, std::string_view name) {
  return std::any_of(columns.begin(), columns.end(),
                     [&](const DeclaredColumn& c) { return c.name == name; });
}

std::string ViewName(std::string_view table) { return std::string(table) + "_v"; }

// What the view of `table` adds, given the table's columns.
std::vector<QueryViewColumn> ViewColumns(std::string_view table,
                                         const std::vector<DeclaredColumn>& columns,
                                         bool process_ranks) {
  std::vector<QueryViewColumn> added;
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
rs::Result<std::vector<std::pair<std::string, std::vector<DeclaredColumn>>>> EventTables(
    rs::Db& db) {
  std::vector<std::pair<std::string, std::vector<DeclaredColumn>>> tables;
  for (std::string_view t : rs::kEventTables) {
    ASSIGN_OR_RETURN(bool present, rs::HasTable(db, t));
    if (!present) continue;
    ASSIGN_OR_RETURN(auto columns, DeclaredColumns(db, std::string(t)));
    tables.emplace_back(std::string(t), std::move(columns));
  }
  return tables;
}

}  // namespace

Result<std::vector<DeclaredColumn>> DeclaredColumns(Db& db, const std::string& table) {
  ASSIGN_OR_RETURN(Statement st, db.Prepare("SELECT name, type FROM pragma_table_info(?1)"));
  st.Bind(1, table);
  std::vector<DeclaredColumn> columns;
  for (;;) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    columns.push_back({st.Text(0), st.Text(1)});
  }
  return columns;
}

rs::Result<void> CreateQueryViews(rs::Db& db) {
  ASSIGN_OR_RETURN(auto tables, EventTables(db));
  ASSIGN_OR_RETURN(bool ranks, ProcessRanks(db));
  for (const auto& [table, columns] : tables) {
    std::string sql = "CREATE TEMP VIEW IF NOT EXISTS " + ViewName(table) + " AS SELECT *";
    for (const QueryViewColumn& v : ViewColumns(table, columns, ranks)) {
      sql += ", " + v.sql + " AS " + v.name;
    }
    RETURN_IF_ERROR(db.Exec(sql + " FROM main." + table));
  }
  return rs::Ok();
}

Result<std::vector<QueryView>> DescribeQueryViews(Db& db) {
  ASSIGN_OR_RETURN(auto tables, EventTables(db));
  ASSIGN_OR_RETURN(bool ranks, ProcessRanks(db));
  std::vector<QueryView> out;
  for (const auto& [table, columns] : tables) {
    out.push_back({table, ViewName(table), ViewColumns(table, columns, ranks)});
  }
  return out;
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

Result<QueryStatement> PrepareReadOnlyQuery(rs::Db& db, const std::string& sql, int64_t timeout_ns,
                                            const std::string& what) {
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

}  // namespace rs
