// Which rows of the event tables a command looks at: those whose timestamp_ns lies in
// [from_ns, to_ns] (both inclusive) and whose node is one of `nodes` (empty: every node). One
// definition for `rankscope-analyze report --from/--to/--nodes`, `rankscope-export`'s and the
// MCP server's windows; the values always reach SQLite as bound parameters, never spliced into
// the statement's text.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs {

struct RowWindow {
  int64_t from_ns = std::numeric_limits<int64_t>::min();
  int64_t to_ns = std::numeric_limits<int64_t>::max();
  std::vector<std::string> nodes;

  // Bounded in time (a term on timestamp_ns).
  bool timed() const {
    return from_ns != std::numeric_limits<int64_t>::min() ||
           to_ns != std::numeric_limits<int64_t>::max();
  }
  bool empty() const { return !timed() && nodes.empty(); }
};

// What a table lets the window narrow: its timestamp_ns (an event table) and its node column.
struct WindowColumns {
  bool timed = true;
  bool node = true;
};

// The window as " AND ..." terms for a WHERE clause, its values as the parameters ?first,
// ?first+1 (the time bounds, where timed) and one per node after them; "" where it selects
// every row. Without a time bound there is no term on timestamp_ns, so a whole-table aggregate
// scans the table instead of seeking row by row through the timestamp index.
std::string WindowTerms(const RowWindow& w, int first, WindowColumns cols = {});
// Binds the values WindowTerms numbered; returns the first parameter number after them.
int BindWindow(Statement& st, const RowWindow& w, int first, WindowColumns cols = {});

// For views, which cannot hold parameters: the window's values stored, with bound statements,
// in TEMP tables of `db` (temp.rs_window, temp.rs_window_nodes; replaced on each call), and
// the " AND ..." terms that read them. TEMP objects work on a database opened read-only.
Result<void> StoreWindow(Db& db, const RowWindow& w);
std::string StoredWindowTerms(const RowWindow& w, WindowColumns cols = {});

}  // namespace rs
