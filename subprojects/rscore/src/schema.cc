#include "rscore/schema.h"

#include <cctype>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "schema_sql.h"

namespace rs {
namespace {

using schema_sql::kBundleSql;
using schema_sql::kLocalTimestampColumn;
using schema_sql::kMergedSql;

const char* KindName(DbKind kind) { return kind == DbKind::kBundle ? "bundle" : "merged"; }

std::string_view Trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// The first word of `s` and what follows it.
std::pair<std::string_view, std::string_view> FirstWord(std::string_view s) {
  s = Trim(s);
  size_t e = s.find_first_of(" \t,(");
  if (e == std::string_view::npos) return {s, {}};
  return {s.substr(0, e), s.substr(e)};
}

// "name TYPE ... -- meaning" -> a column; nullopt for a table constraint or a blank line.
std::optional<ColumnDoc> ParseColumnLine(std::string_view line) {
  size_t dash = line.find("--");
  std::string_view def = Trim(line.substr(0, dash));
  std::string_view comment = dash == std::string_view::npos ? "" : Trim(line.substr(dash + 2));
  auto [name, rest] = FirstWord(def);
  if (name.empty()) return std::nullopt;
  for (std::string_view constraint : {"PRIMARY", "UNIQUE", "FOREIGN", "CHECK", "CONSTRAINT"}) {
    if (name == constraint) return std::nullopt;
  }
  return ColumnDoc{std::string(name), std::string(FirstWord(rest).first), std::string(comment)};
}

void AppendMeaning(std::string& meaning, std::string_view more) {
  if (more.empty()) return;
  if (!meaning.empty()) meaning += ' ';
  meaning += more;
}

// The tables of CREATE TABLE statements laid out as above: the comment lines just before a
// statement give the table's meaning, a column's comment (and comment-only lines under it)
// the column's.
void ParseSchemaSql(std::string_view sql, std::vector<TableDoc>& tables) {
  std::string pending;  // comment lines since the last statement
  TableDoc* table = nullptr;
  ColumnDoc* column = nullptr;
  while (!sql.empty()) {
    size_t nl = sql.find('\n');
    std::string_view line = Trim(sql.substr(0, nl));
    sql = nl == std::string_view::npos ? std::string_view() : sql.substr(nl + 1);
    const bool comment_only = line.substr(0, 2) == "--";
    if (table == nullptr) {
      if (comment_only) {
        AppendMeaning(pending, Trim(line.substr(2)));
      } else if (line.substr(0, 13) == "CREATE TABLE ") {
        tables.push_back({std::string(FirstWord(line.substr(13)).first), pending, {}});
        table = &tables.back();
        column = nullptr;
        pending.clear();
      }
    } else if (line.substr(0, 1) == ")") {
      table = nullptr;
    } else if (comment_only) {
      if (column != nullptr) AppendMeaning(column->meaning, Trim(line.substr(2)));
    } else if (auto c = ParseColumnLine(line)) {
      table->columns.push_back(std::move(*c));
      column = &table->columns.back();
    } else {
      column = nullptr;
    }
  }
}

}  // namespace

const ColumnDoc* TableDoc::Find(std::string_view column) const {
  for (const ColumnDoc& c : columns) {
    if (c.name == column) return &c;
  }
  return nullptr;
}

const TableDoc* FindTableDoc(const std::vector<TableDoc>& tables, std::string_view name) {
  for (const TableDoc& t : tables) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::vector<TableDoc> DescribeSchema(DbKind kind) {
  std::vector<TableDoc> tables;
  ParseSchemaSql(kBundleSql, tables);
  if (kind == DbKind::kMerged) {
    ParseSchemaSql(kMergedSql, tables);
    const ColumnDoc local = *ParseColumnLine(kLocalTimestampColumn);
    for (TableDoc& t : tables) {
      if (IsEventTable(t.name)) t.columns.push_back(local);
    }
  }
  return tables;
}

namespace {

std::string LocalTimestampColumnDef() {
  return std::string(Trim(kLocalTimestampColumn.substr(0, kLocalTimestampColumn.find("--"))));
}

}  // namespace

std::string_view BundleSchemaSql() { return kBundleSql; }

Result<void> CreateSchema(Db& db, DbKind kind) {
  RETURN_IF_ERROR(db.Exec(kBundleSql));
  if (kind == DbKind::kMerged) {
    RETURN_IF_ERROR(db.Exec(kMergedSql));
    for (std::string_view t : kEventTables) {
      RETURN_IF_ERROR(
          db.Exec("ALTER TABLE " + std::string(t) + " ADD COLUMN " + LocalTimestampColumnDef()));
    }
  }
  ASSIGN_OR_RETURN(Statement st,
                   db.Prepare("INSERT OR REPLACE INTO metadata(key, value) VALUES (?, ?)"));
  RETURN_IF_ERROR(st.Bind(1, "schema_version").Bind(2, std::to_string(kSchemaVersion)).Run());
  RETURN_IF_ERROR(st.Bind(1, "format_version").Bind(2, std::to_string(kFormatVersion)).Run());
  RETURN_IF_ERROR(st.Bind(1, "db_kind").Bind(2, KindName(kind)).Run());
  return Ok();
}

Result<void> CreateIndexes(Db& db) {
  return db.Exec(R"sql(
CREATE INDEX IF NOT EXISTS nccl_events_ts ON nccl_events(timestamp_ns);
CREATE INDEX IF NOT EXISTS nccl_events_coll ON nccl_events(comm_id_hash, seq);
CREATE INDEX IF NOT EXISTS gpu_ops_ts ON gpu_ops(timestamp_ns);
CREATE INDEX IF NOT EXISTS gpu_ops_coll ON gpu_ops(comm_id_hash, seq);
CREATE INDEX IF NOT EXISTS cuda_events_ts ON cuda_events(timestamp_ns);
CREATE INDEX IF NOT EXISTS tcp_events_ts ON tcp_events(timestamp_ns);
CREATE INDEX IF NOT EXISTS sched_events_ts ON sched_events(timestamp_ns);
CREATE INDEX IF NOT EXISTS block_events_ts ON block_events(timestamp_ns);
CREATE INDEX IF NOT EXISTS process_events_ts ON process_events(timestamp_ns);
)sql");
}

Result<std::string> TcpCaStateErrColumns(Db& db) {
  ASSIGN_OR_RETURN(bool ca_state, HasColumn(db, "tcp_events", "ca_state"));
  ASSIGN_OR_RETURN(bool err, HasColumn(db, "tcp_events", "err"));
  return std::string(ca_state && err ? "ca_state, err" : "NULL, NULL");
}

Result<bool> HasTable(Db& db, std::string_view table) {
  ASSIGN_OR_RETURN(Statement st, db.Prepare("SELECT COUNT(*) FROM sqlite_master"
                                            " WHERE type = 'table' AND name = ?1"));
  st.Bind(1, std::string(table));
  ASSIGN_OR_RETURN(bool row, st.Step());
  return row && st.Int(0) > 0;
}

Result<bool> HasColumn(Db& db, std::string_view table, std::string_view column) {
  ASSIGN_OR_RETURN(Statement st,
                   db.Prepare("SELECT COUNT(*) FROM pragma_table_info(?1) WHERE name = ?2"));
  st.Bind(1, std::string(table)).Bind(2, std::string(column));
  ASSIGN_OR_RETURN(bool row, st.Step());
  return row && st.Int(0) > 0;
}

Result<bool> HasGpuOps(Db& db) { return HasTable(db, "gpu_ops"); }

}  // namespace rs
