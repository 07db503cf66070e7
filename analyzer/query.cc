#include "analyzer/query.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string_view>
#include <vector>

#include "rscore/duration.h"
#include "rscore/json.h"
#include "rscore/schema.h"
#include "rscore/text_escape.h"

namespace rs::analyzer {
namespace {

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

rs::Result<void> PrintSchema(rs::Db& db, std::ostream& out) {
  const std::vector<rs::TableDoc> docs = rs::DescribeSchema(rs::DbKind::kMerged);
  ASSIGN_OR_RETURN(std::vector<std::string> tables, TableNames(db, "table", "sqlite_master"));
  ASSIGN_OR_RETURN(std::vector<std::string> views, TableNames(db, "view", "sqlite_temp_master"));
  ASSIGN_OR_RETURN(std::vector<rs::QueryView> query_views, rs::DescribeQueryViews(db));
  std::vector<std::vector<std::string>> rows = {{"table", "rows", "meaning"}};
  std::map<std::string, std::string> counts;
  for (const std::string& t : tables) {
    ASSIGN_OR_RETURN(int64_t n, db.QueryInt("SELECT COUNT(*) FROM main." + rs::QuoteIdentifier(t)));
    counts[t] = std::to_string(n);
    const rs::TableDoc* doc = rs::FindTableDoc(docs, t);
    rows.push_back({t, counts[t], doc ? doc->meaning : ""});
  }
  for (const rs::QueryView& q : query_views) {
    if (std::find(views.begin(), views.end(), q.view) == views.end()) continue;
    std::vector<std::string> added;
    for (const rs::QueryViewColumn& v : q.added) added.push_back(v.name);
    rows.push_back({q.view, counts[q.table], "view: " + q.table + " with " + Join(added)});
  }
  PrintAligned(rows, out);
  return rs::Ok();
}

rs::Result<void> PrintTableSchema(rs::Db& db, const std::string& table, std::ostream& out) {
  const std::vector<rs::TableDoc> docs = rs::DescribeSchema(rs::DbKind::kMerged);
  ASSIGN_OR_RETURN(std::vector<std::string> tables, TableNames(db, "table", "sqlite_master"));
  ASSIGN_OR_RETURN(std::vector<std::string> views, TableNames(db, "view", "sqlite_temp_master"));
  std::string base = table;  // the table whose columns' meanings apply
  std::vector<rs::QueryViewColumn> added;
  if (std::find(views.begin(), views.end(), table) != views.end()) {
    ASSIGN_OR_RETURN(std::vector<rs::QueryView> query_views, rs::DescribeQueryViews(db));
    for (const rs::QueryView& q : query_views) {
      if (q.view != table) continue;
      base = q.table;
      added = q.added;
    }
  } else if (std::find(tables.begin(), tables.end(), table) == tables.end()) {
    return rs::Error("no table or view '" + table + "' in this database; tables: " + Join(tables) +
                     (views.empty() ? "" : "; views: " + Join(views)));
  }
  ASSIGN_OR_RETURN(std::vector<rs::DeclaredColumn> columns, rs::DeclaredColumns(db, base));
  const rs::TableDoc* doc = rs::FindTableDoc(docs, base);
  std::vector<std::vector<std::string>> rows = {{"column", "type", "meaning"}};
  for (const rs::DeclaredColumn& c : columns) {
    const rs::ColumnDoc* cd = doc ? doc->Find(c.name) : nullptr;
    rows.push_back({c.name, c.type, cd ? cd->meaning : ""});
  }
  for (const rs::QueryViewColumn& v : added) rows.push_back({v.name, "TEXT", v.meaning});
  PrintAligned(rows, out);
  return rs::Ok();
}

rs::Result<OutputFormat> ParseOutputFormat(const std::string& name) {
  if (name == "table") return OutputFormat::kTable;
  if (name == "csv") return OutputFormat::kCsv;
  if (name == "json") return OutputFormat::kJson;
  return rs::Error("--format: unknown format '" + name + "' (use table, csv or json)");
}

rs::Result<QueryStats> RunQuery(rs::Db& db, const std::string& sql, const QueryOptions& options,
                                std::ostream& out) {
  ASSIGN_OR_RETURN(
      rs::QueryStatement st,
      rs::PrepareReadOnlyQuery(db, sql, options.timeout_ns,
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

}  // namespace rs::analyzer
