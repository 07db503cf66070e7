#include "rscore/sqlite.h"

#include <gtest/gtest.h>

#include <string>

namespace rs {
namespace {

// A bind that fails is not lost: the statement's next step says which parameter and why, and
// Reset() starts over.
TEST(Statement, FailedBindFailsTheStep) {
  auto db = Db::Open(":memory:", Db::Mode::kCreate);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(db->Exec("CREATE TABLE t(a INTEGER, b TEXT)").ok());
  auto st = db->Prepare("INSERT INTO t VALUES (?, ?)");
  ASSERT_TRUE(st.ok());
  auto r = st->Bind(1, 7).Bind(3, "no such parameter").Bind(2, "x").Run();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("binding parameter 3"), std::string::npos)
      << r.error().message();
  EXPECT_EQ(db->QueryInt("SELECT COUNT(*) FROM t").value(), 0);
  // Run() reset it: the next rows go in.
  ASSERT_TRUE(st->Bind(1, 8).Bind(2, "y").Run().ok());
  EXPECT_EQ(db->QueryInt("SELECT COUNT(*) FROM t").value(), 1);
  // A value over the connection's length limit.
  sqlite3_limit(db->raw(), SQLITE_LIMIT_LENGTH, 16);
  auto big = st->Bind(1, 9).Bind(2, std::string(100, 'z')).Run();
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message().find("binding parameter 2"), std::string::npos)
      << big.error().message();
}

TEST(SqliteMemoryBudget, BoundsWhatTheThreadAllocates) {
  // The allocator is chosen while SQLite is not initialized (no connection is open here).
  ASSERT_EQ(sqlite3_shutdown(), SQLITE_OK);
  ASSERT_TRUE(CountSqliteMemoryPerThread().ok());
  auto db = Db::Open(":memory:", Db::Mode::kCreate);
  ASSERT_TRUE(db.ok());
  // 64 values of 1 MB held at once (a group_concat grows to 64 MB).
  const std::string sql =
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 64) "
      "SELECT length(group_concat(printf('%.*c', 1000000, 'a'))) FROM c";
  {
    SqliteMemoryBudget budget(8 << 20);
    auto r = db->QueryInt(sql);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(budget.hit());
    EXPECT_NE(r.error().message().find("out of memory"), std::string::npos) << r.error().message();
  }
  SqliteMemoryBudget roomy(256 << 20);
  auto r = db->QueryInt(sql);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(*r, 64 * 1000000 + 63);
  EXPECT_FALSE(roomy.hit());
}

}  // namespace
}  // namespace rs
