#include "rscore/row_window.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace rs {
namespace {

// Rows at 10..50 on nodes a, b and one whose name would end a quoted SQL literal.
Db Events() {
  auto db = Db::Open(":memory:", Db::Mode::kCreate);
  EXPECT_TRUE(db.ok());
  EXPECT_TRUE(db->Exec("CREATE TABLE e(id INTEGER PRIMARY KEY, node TEXT, timestamp_ns INTEGER);"
                       "INSERT INTO e(node, timestamp_ns) VALUES ('a', 10), ('b', 20), ('a', 30),"
                       " ('x'' OR ''1''=''1', 40), ('b', 50);")
                  .ok());
  return std::move(*db);
}

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

RowWindow Win(int64_t from, int64_t to, std::vector<std::string> nodes = {}) {
  RowWindow w;
  w.from_ns = from;
  w.to_ns = to;
  w.nodes = std::move(nodes);
  return w;
}

int64_t CountBound(Db& db, const RowWindow& w, WindowColumns cols = {}) {
  auto st = db.Prepare("SELECT COUNT(*) FROM e WHERE 1" + WindowTerms(w, 1, cols));
  EXPECT_TRUE(st.ok());
  BindWindow(*st, w, 1, cols);
  auto row = st->Step();
  EXPECT_TRUE(row.ok() && *row);
  return st->Int(0);
}

int64_t CountStored(Db& db, const RowWindow& w, WindowColumns cols = {}) {
  EXPECT_TRUE(StoreWindow(db, w).ok());
  auto n = db.QueryInt("SELECT COUNT(*) FROM e WHERE 1" + StoredWindowTerms(w, cols));
  EXPECT_TRUE(n.ok());
  return n.ok() ? *n : -1;
}

// Both forms select the same rows: bounds inclusive, nodes as a set, each part only where the
// table has its column; a node name holding quotes is a value, never SQL.
TEST(RowWindow, BoundAndStoredFormsSelectTheSameRows) {
  Db db = Events();
  struct Case {
    RowWindow w;
    WindowColumns cols;
    int64_t rows;
  };
  const Case cases[] = {
      {Win(kMin, kMax), {}, 5},
      {Win(20, 40), {}, 3},
      {Win(20, kMax), {}, 4},
      {Win(kMin, 20), {}, 2},
      {Win(kMin, kMax, {"a"}), {}, 2},
      {Win(20, kMax, {"a", "b"}), {}, 3},
      {Win(kMin, kMax, {"x' OR '1'='1"}), {}, 1},
      {Win(kMin, kMax, {"nobody"}), {}, 0},
      {Win(20, 40, {"a"}), {.timed = false, .node = true}, 2},
      {Win(20, 40, {"a"}), {.timed = true, .node = false}, 3},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(WindowTerms(c.w, 1, c.cols));
    EXPECT_EQ(CountBound(db, c.w, c.cols), c.rows);
    EXPECT_EQ(CountStored(db, c.w, c.cols), c.rows);
  }
}

// Numbering: the time bounds first, then one parameter per node, from `first`; BindWindow
// returns the number after them, for a caller's own parameters.
TEST(RowWindow, ParametersAreNumberedFromFirst) {
  const RowWindow w = Win(1, 2, {"a", "b"});
  EXPECT_EQ(WindowTerms(w, 3),
            " AND timestamp_ns >= ?3 AND timestamp_ns <= ?4 AND node IN (?5, ?6)");
  EXPECT_EQ(WindowTerms(RowWindow{}, 1), "");
  EXPECT_EQ(WindowTerms(Win(kMin, kMax, {"a"}), 2), " AND node IN (?2)");
  Db db = Events();
  auto st = db.Prepare("SELECT COUNT(*) FROM e WHERE ?1" + WindowTerms(w, 2));
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(BindWindow(*st, w, 2), 6);
  EXPECT_EQ(BindWindow(*st, RowWindow{}, 2), 2);
}

}  // namespace
}  // namespace rs
