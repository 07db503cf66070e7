#include "query.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string_view>
#include <vector>

namespace analyzer {
namespace {

// What the guard refused last, for the error message (set from the authorizer callback).
thread_local std::string g_denied;

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
    default:
      return "a schema change";
  }
}

// PRAGMAs that only describe the schema (whatever their argument).
bool IsReadOnlyPragma(const char* name) {
  static const char* kAllowed[] = {"table_info",  "table_xinfo",      "index_list", "index_info",
                                   "index_xinfo", "foreign_key_list", "table_list"};
  for (const char* a : kAllowed) {
    if (std::string_view(name) == a) return true;
  }
  return false;
}

int Authorize(void*, int action, const char* a1, const char*, const char*, const char*) {
  switch (action) {
    case SQLITE_SELECT:
    case SQLITE_READ:
    case SQLITE_FUNCTION:
    case SQLITE_RECURSIVE:
      return SQLITE_OK;
    case SQLITE_PRAGMA:
      if (a1 && IsReadOnlyPragma(a1)) return SQLITE_OK;
      g_denied = std::string("PRAGMA ") + (a1 ? a1 : "");
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

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string JsonCell(sqlite3_stmt* st, int col) {
  switch (sqlite3_column_type(st, col)) {
    case SQLITE_NULL:
      return "null";
    case SQLITE_INTEGER:
      return std::to_string(sqlite3_column_int64(st, col));
    case SQLITE_FLOAT: {
      double d = sqlite3_column_double(st, col);
      if (!std::isfinite(d)) return "null";
      char b[32];
      std::snprintf(b, sizeof b, "%.17g", d);
      return b;
    }
    default:
      return JsonString(CellText(st, col));
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

}  // namespace

rs::Result<OutputFormat> ParseOutputFormat(const std::string& name) {
  if (name == "table") return OutputFormat::kTable;
  if (name == "csv") return OutputFormat::kCsv;
  if (name == "json") return OutputFormat::kJson;
  return rs::Error("--format: unknown format '" + name + "' (use table, csv or json)");
}

void InstallReadOnlyGuard(rs::Db& db) {
  sqlite3_db_config(db.raw(), SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, nullptr);
  sqlite3_db_config(db.raw(), SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_set_authorizer(db.raw(), Authorize, nullptr);
}

rs::Result<QueryStats> RunQuery(rs::Db& db, const std::string& sql, const QueryOptions& options,
                                std::ostream& out) {
  g_denied.clear();
  sqlite3_stmt* raw = nullptr;
  const char* tail = nullptr;
  int rc = sqlite3_prepare_v2(db.raw(), sql.c_str(), static_cast<int>(sql.size()), &raw, &tail);
  if (rc != SQLITE_OK) {
    if (!g_denied.empty()) {
      return rs::Error("query refused: " + g_denied +
                       " is not allowed; queries are read-only (SELECT / WITH only)");
    }
    return rs::Error(std::string("SQL error: ") + sqlite3_errmsg(db.raw()));
  }
  if (raw == nullptr) return rs::Error("empty query: give one SELECT statement");
  std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> st(raw, sqlite3_finalize);
  if (tail && !OnlyWhitespaceOrComments(tail)) {
    return rs::Error("only one SQL statement per query (found more after the first ';')");
  }
  if (!sqlite3_stmt_readonly(raw)) {
    return rs::Error("query refused: queries are read-only (SELECT / WITH only)");
  }
  int ncol = sqlite3_column_count(raw);
  std::vector<std::string> names;
  for (int c = 0; c < ncol; ++c) names.push_back(sqlite3_column_name(raw, c));
  QueryStats stats;
  TablePrinter table(names, out);
  if (options.format == OutputFormat::kCsv) {
    for (int c = 0; c < ncol; ++c) out << (c ? "," : "") << CsvQuote(names[c]);
    out << '\n';
  } else if (options.format == OutputFormat::kJson) {
    out << "[";
  }
  for (;;) {
    rc = sqlite3_step(raw);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return rs::Error(std::string("SQL error: ") + sqlite3_errmsg(db.raw()));
    if (options.limit > 0 && stats.rows >= options.limit) {
      stats.truncated = true;
      break;
    }
    ++stats.rows;
    switch (options.format) {
      case OutputFormat::kTable: {
        std::vector<std::string> row;
        for (int c = 0; c < ncol; ++c) {
          row.push_back(sqlite3_column_type(raw, c) == SQLITE_NULL ? "NULL" : CellText(raw, c));
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
          out << (c ? ", " : "") << JsonString(names[c]) << ": " << JsonCell(raw, c);
        }
        out << "}";
        break;
    }
  }
  if (options.format == OutputFormat::kTable) table.Flush();
  if (options.format == OutputFormat::kJson) out << (stats.rows ? "\n]\n" : "]\n");
  return stats;
}

}  // namespace analyzer
