#include "merger/stack_dedup.h"

#include <xxhash.h>

namespace rs::merge {

int64_t StackId(std::string_view frames) {
  return static_cast<int64_t>(XXH64(frames.data(), frames.size(), 0));
}

rs::Result<StackCounts> MergeStacks(rs::Db& out, const std::string& schema) {
  RETURN_IF_ERROR(out.Exec(
      "CREATE TEMP TABLE IF NOT EXISTS stack_map(old INTEGER PRIMARY KEY, new INTEGER NOT NULL);"
      "DELETE FROM temp.stack_map;"));
  ASSIGN_OR_RETURN(rs::Statement read, out.Prepare("SELECT id, frames FROM " + schema + ".stacks"));
  ASSIGN_OR_RETURN(rs::Statement insert,
                   out.Prepare("INSERT OR IGNORE INTO main.stacks(id, frames) VALUES (?, ?)"));
  ASSIGN_OR_RETURN(rs::Statement map,
                   out.Prepare("INSERT OR REPLACE INTO temp.stack_map(old, new) VALUES (?, ?)"));
  StackCounts c;
  for (;;) {
    ASSIGN_OR_RETURN(bool row, read.Step());
    if (!row) break;
    ++c.rows_in;
    std::string frames = read.Text(1);
    int64_t id = StackId(frames);
    RETURN_IF_ERROR(insert.Bind(1, id).Bind(2, frames).Run());
    if (sqlite3_changes(out.raw()) > 0)
      ++c.inserted;
    else
      ++c.deduped;
    RETURN_IF_ERROR(map.Bind(1, read.Int(0)).Bind(2, id).Run());
  }
  return c;
}

rs::Result<void> RecordStackOrigins(rs::Db& db, int input_id, const std::string& ids_query) {
  RETURN_IF_ERROR(
      db.Exec("CREATE TEMP TABLE IF NOT EXISTS stack_origins(id INTEGER NOT NULL,"
              " input_id INTEGER NOT NULL, PRIMARY KEY (id, input_id)) WITHOUT ROWID"));
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("INSERT OR IGNORE INTO temp.stack_origins(id, input_id)"
                              " SELECT x.*, ?1 FROM (" +
                              ids_query + ") AS x"));
  return st.Bind(1, input_id).Run();
}

rs::Result<std::map<int, int64_t>> StacksFirstHeld(rs::Db& db) {
  std::map<int, int64_t> out;
  ASSIGN_OR_RETURN(int64_t exists,
                   db.QueryInt("SELECT COUNT(*) FROM temp.sqlite_master WHERE name ="
                               " 'stack_origins'"));
  if (!exists) return out;
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("SELECT first, COUNT(*) FROM (SELECT MIN(input_id) AS first"
                              " FROM temp.stack_origins GROUP BY id) GROUP BY first"));
  for (;;) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out[static_cast<int>(st.Int(0))] = st.Int(1);
  }
  return out;
}

}  // namespace rs::merge
