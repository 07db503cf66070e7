#include "rscore/row_window.h"

namespace rs {

std::string WindowTerms(const RowWindow& w, int first, WindowColumns cols) {
  std::string sql;
  int p = first;
  if (cols.timed && w.timed()) {
    sql += " AND timestamp_ns >= ?" + std::to_string(p) + " AND timestamp_ns <= ?" +
           std::to_string(p + 1);
    p += 2;
  }
  if (cols.node && !w.nodes.empty()) {
    sql += " AND node IN (";
    for (size_t i = 0; i < w.nodes.size(); ++i) {
      sql += (i ? ", ?" : "?") + std::to_string(p++);
    }
    sql += ")";
  }
  return sql;
}

int BindWindow(Statement& st, const RowWindow& w, int first, WindowColumns cols) {
  int p = first;
  if (cols.timed && w.timed()) {
    st.Bind(p, w.from_ns).Bind(p + 1, w.to_ns);
    p += 2;
  }
  if (cols.node) {
    for (const std::string& n : w.nodes) st.Bind(p++, n);
  }
  return p;
}

Result<void> StoreWindow(Db& db, const RowWindow& w) {
  RETURN_IF_ERROR(
      db.Exec("DROP TABLE IF EXISTS temp.rs_window; DROP TABLE IF EXISTS temp.rs_window_nodes;"
              "CREATE TEMP TABLE rs_window(from_ns INTEGER NOT NULL, to_ns INTEGER NOT NULL);"
              "CREATE TEMP TABLE rs_window_nodes(node TEXT PRIMARY KEY) WITHOUT ROWID;"));
  ASSIGN_OR_RETURN(Statement bounds, db.Prepare("INSERT INTO temp.rs_window VALUES (?1, ?2)"));
  RETURN_IF_ERROR(bounds.Bind(1, w.from_ns).Bind(2, w.to_ns).Run());
  ASSIGN_OR_RETURN(Statement node,
                   db.Prepare("INSERT OR IGNORE INTO temp.rs_window_nodes VALUES (?1)"));
  for (const std::string& n : w.nodes) {
    RETURN_IF_ERROR(node.Bind(1, n).Run());
  }
  return Ok();
}

std::string StoredWindowTerms(const RowWindow& w, WindowColumns cols) {
  std::string sql;
  if (cols.timed && w.timed()) {
    sql +=
        " AND timestamp_ns >= (SELECT from_ns FROM temp.rs_window)"
        " AND timestamp_ns <= (SELECT to_ns FROM temp.rs_window)";
  }
  if (cols.node && !w.nodes.empty()) sql += " AND node IN (SELECT node FROM temp.rs_window_nodes)";
  return sql;
}

}  // namespace rs
