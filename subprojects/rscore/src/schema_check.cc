// Validation of a bundle or merged database read from elsewhere: only the expected schema
// objects, the declared column types, bounded values, a known schema version.
#include "rscore/schema.h"

#include <cctype>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rs {

namespace {

// The first `n` words of an SQL statement, upper-cased, with whitespace and comments skipped
// between them (as SQLite's own parser skips them).
std::vector<std::string> LeadingWords(std::string_view sql, size_t n) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < sql.size() && words.size() < n) {
    const unsigned char c = static_cast<unsigned char>(sql[i]);
    if (std::isspace(c)) {
      ++i;
    } else if (sql.substr(i, 2) == "--") {
      size_t nl = sql.find('\n', i);
      i = nl == std::string_view::npos ? sql.size() : nl + 1;
    } else if (sql.substr(i, 2) == "/*") {
      size_t e = sql.find("*/", i + 2);
      i = e == std::string_view::npos ? sql.size() : e + 2;
    } else if (std::isalpha(c) || c == '_') {
      std::string w;
      while (i < sql.size() &&
             (std::isalnum(static_cast<unsigned char>(sql[i])) || sql[i] == '_')) {
        w += static_cast<char>(std::toupper(static_cast<unsigned char>(sql[i++])));
      }
      words.push_back(std::move(w));
    } else {
      words.push_back(std::string(1, sql[i]));
      ++i;
    }
  }
  return words;
}

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

struct MainTable {
  std::string name, type;
  bool without_rowid = false, strict = false;
};

// The tables of the main schema as SQLite parsed them (its own view of each object's type).
Result<std::vector<MainTable>> MainTables(Db& db) {
  ASSIGN_OR_RETURN(Statement st, db.Prepare("SELECT name, type, wr, strict FROM pragma_table_list"
                                            " WHERE schema = 'main'"));
  std::vector<MainTable> out;
  for (;;) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back({st.Text(0), st.Text(1), st.Int(2) != 0, st.Int(3) != 0});
  }
  return out;
}

struct DeclaredColumn {
  std::string name, type;
  int hidden = 0;
};

Result<std::vector<DeclaredColumn>> DeclaredColumns(Db& db, const std::string& table) {
  ASSIGN_OR_RETURN(Statement st,
                   db.Prepare("SELECT name, type, hidden FROM pragma_table_xinfo(?1, 'main')"));
  st.Bind(1, table);
  std::vector<DeclaredColumn> out;
  for (;;) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back({st.Text(0), Upper(st.Text(1)), static_cast<int>(st.Int(2))});
  }
  return out;
}

}  // namespace

Result<void> CheckSchemaObjects(Db& db) {
  ASSIGN_OR_RETURN(Statement st,
                   db.Prepare("SELECT type, name, sql FROM main.sqlite_schema ORDER BY rowid"));
  for (;;) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    const std::string type = st.Text(0), name = st.Text(1);
    if (st.IsNull(2)) {
      if (type == "index" && name.rfind("sqlite_autoindex_", 0) == 0) continue;
      return Error("schema object '" + name + "' has no definition");
    }
    const std::vector<std::string> w = LeadingWords(st.Text(2), 3);
    std::string what;  // what the definition makes, when not a table or index
    if (w.size() < 2 || w[0] != "CREATE") {
      what = "object without a CREATE statement";
    } else if (w[1] == "TABLE" && type == "table") {
      continue;
    } else if ((w[1] == "INDEX" || (w[1] == "UNIQUE" && w.size() > 2 && w[2] == "INDEX")) &&
               type == "index") {
      continue;
    } else if (w[1] == "VIEW" || w[1] == "TRIGGER") {
      what = w[1] == "VIEW" ? "view" : "trigger";
    } else if (w[1] == "VIRTUAL") {
      what = "virtual table";
    } else {
      what = "'" + type + "' object defined by CREATE " + w[1];
    }
    return Error("the database holds a " + what + " '" + name +
                 "'; a rankscope file has only tables and indexes (refused)");
  }
  const std::vector<TableDoc> docs = DescribeSchema(DbKind::kMerged);
  ASSIGN_OR_RETURN(std::vector<MainTable> tables, MainTables(db));
  for (const MainTable& t : tables) {
    if (t.type != "table") {
      return Error("'" + t.name + "' is a " + t.type +
                   ", not a table; a rankscope file has only tables and indexes (refused)");
    }
    const TableDoc* doc = FindTableDoc(docs, t.name);
    if (doc == nullptr) continue;  // a table of a later version: never read
    if (t.without_rowid) return Error("table " + t.name + " is a WITHOUT ROWID table (refused)");
    ASSIGN_OR_RETURN(std::vector<DeclaredColumn> columns, DeclaredColumns(db, t.name));
    for (const DeclaredColumn& c : columns) {
      if (c.hidden != 0) {
        return Error("table " + t.name + " has a hidden or generated column '" + c.name +
                     "' (refused)");
      }
      const ColumnDoc* cd = doc->Find(c.name);
      if (cd != nullptr && c.type != cd->type) {
        return Error("table " + t.name + ", column " + c.name + ": declared " +
                     (c.type.empty() ? std::string("without a type") : c.type) + ", not " +
                     cd->type + " (refused)");
      }
    }
  }
  return Ok();
}

Result<bool> AllKnownTablesStrict(Db& db) {
  const std::vector<TableDoc> docs = DescribeSchema(DbKind::kMerged);
  ASSIGN_OR_RETURN(std::vector<MainTable> tables, MainTables(db));
  for (const MainTable& t : tables) {
    if (FindTableDoc(docs, t.name) != nullptr && !t.strict) return false;
  }
  return true;
}

Result<void> CheckValues(Db& db, bool check_types, int64_t max_value_bytes) {
  if (!check_types) return Ok();  // STRICT: types kept by SQLite, sizes by SQLITE_LIMIT_LENGTH
  const std::vector<TableDoc> docs = DescribeSchema(DbKind::kMerged);
  ASSIGN_OR_RETURN(std::vector<MainTable> tables, MainTables(db));
  std::string problems;
  for (const MainTable& t : tables) {
    const TableDoc* doc = FindTableDoc(docs, t.name);
    if (doc == nullptr || t.type != "table") continue;
    ASSIGN_OR_RETURN(std::vector<DeclaredColumn> columns, DeclaredColumns(db, t.name));
    // Per column: rows of a wrong type (with check_types), the longest text or blob.
    struct Probe {
      std::string column, type;
      int types_at = -1, length_at = -1;
    };
    std::vector<Probe> probes;
    std::string select;
    int at = 0;
    for (const DeclaredColumn& c : columns) {
      const ColumnDoc* cd = doc->Find(c.name);
      if (cd == nullptr) continue;
      Probe p{c.name, cd->type};
      const std::string q = QuoteIdentifier(c.name);
      // A value unequal to itself cast to the declared type is of another type: text or a
      // blob in INTEGER, a number or a blob in TEXT (cheaper than typeof() per value).
      if (check_types && (cd->type == "INTEGER" || cd->type == "REAL" || cd->type == "TEXT")) {
        select += (select.empty() ? "" : ", ") + std::string("sum(") + q + " <> CAST(" + q +
                  " AS " + cd->type + "))";
        p.types_at = at++;
      }
      if (check_types && cd->type != "INTEGER" && cd->type != "REAL") {
        select += (select.empty() ? "" : ", ") + std::string("max(length(") + q + "))";
        p.length_at = at++;
      }
      probes.push_back(std::move(p));
    }
    if (select.empty()) continue;
    auto scan = db.Prepare("SELECT " + select + " FROM main." + QuoteIdentifier(t.name));
    if (!scan.ok()) return scan.error().Wrap("table " + t.name);
    auto row = scan->Step();
    if (!row.ok()) return row.error().Wrap("table " + t.name);
    for (const Probe& p : probes) {
      const int64_t wrong = p.types_at >= 0 ? scan->Int(p.types_at) : 0;
      if (wrong > 0) {
        problems += (problems.empty() ? "" : "; ") + std::string("table ") + t.name +
                    ", column " + p.column + ": " + std::to_string(wrong) + " row" +
                    (wrong == 1 ? "" : "s") + " not of its declared type " + p.type;
      }
      const int64_t longest = p.length_at >= 0 ? scan->Int(p.length_at) : 0;
      if (longest > max_value_bytes) {
        problems += (problems.empty() ? "" : "; ") + std::string("table ") + t.name +
                    ", column " + p.column + ": a value of " + std::to_string(longest) +
                    " bytes, over the limit of " + std::to_string(max_value_bytes) + " bytes";
      }
    }
  }
  if (!problems.empty()) return Error(problems + " (the file is refused)");
  return Ok();
}

Result<int> CheckSchemaVersion(Db& db) {
  auto v = db.QueryText("SELECT value FROM metadata WHERE key = 'schema_version'");
  if (!v.ok()) return Error("not a rankscope database (no metadata table)");
  if (!v.value()) return Error("not a rankscope database (metadata has no schema_version)");
  int version = 0;
  try {
    version = std::stoi(*v.value());
  } catch (...) {
    return Error("corrupt metadata: schema_version '" + *v.value() + "' is not a number");
  }
  if (version > kSchemaVersion) {
    return Error("schema version " + std::to_string(version) +
                 " is newer than this rankscope understands (" + std::to_string(kSchemaVersion) +
                 "); upgrade rankscope");
  }
  if (version < 1) return Error("invalid schema version " + std::to_string(version));
  return version;
}

}  // namespace rs
