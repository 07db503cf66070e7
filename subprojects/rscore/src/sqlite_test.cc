#include "rscore/sqlite.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
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

// Errors carry their kind from where they are first seen, and keep it through Wrap: callers
// act on the kind (a full disk stops a merge), never on the message.
TEST(ErrorKind, FromErrnoAndFromSqlite) {
  EXPECT_EQ(ErrnoKind(ENOSPC), ErrorKind::kNoSpace);
  EXPECT_EQ(ErrnoKind(EDQUOT), ErrorKind::kNoSpace);
  EXPECT_EQ(ErrnoKind(ENOENT), ErrorKind::kNotFound);
  EXPECT_EQ(ErrnoKind(EACCES), ErrorKind::kRefused);
  EXPECT_EQ(ErrnoKind(EINVAL), ErrorKind::kOther);
  Error e = ErrnoError("node3.rsb", ENOENT).Wrap("input 2");
  EXPECT_EQ(e.message(), std::string("input 2: node3.rsb: ") + std::strerror(ENOENT));
  EXPECT_TRUE(e.Is(ErrorKind::kNotFound));

  // A database that may not grow past its pages: SQLite's "database or disk is full".
  auto db = Db::Open(":memory:", Db::Mode::kCreate);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(db->Exec("CREATE TABLE t(v BLOB); PRAGMA max_page_count = 8").ok());
  auto st = db->Prepare("INSERT INTO t VALUES (zeroblob(4096))");
  ASSERT_TRUE(st.ok());
  Result<void> full = Ok();
  for (int i = 0; i < 64 && full.ok(); ++i) full = st->Run();
  ASSERT_FALSE(full.ok());
  EXPECT_TRUE(full.error().Is(ErrorKind::kNoSpace)) << full.error().message();
  auto exec = db->Exec("INSERT INTO t VALUES (zeroblob(40960))");
  ASSERT_FALSE(exec.ok());
  EXPECT_TRUE(exec.error().Is(ErrorKind::kNoSpace)) << exec.error().message();

  // Not there; not a database.
  auto missing = Db::Open("/nonexistent-dir/x.db", Db::Mode::kReadOnly);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.error().Is(ErrorKind::kNotFound)) << missing.error().message();
  char path[] = "/tmp/rscore-notadb.XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string junk(8192, 'x');
  ASSERT_EQ(write(fd, junk.data(), junk.size()), static_cast<ssize_t>(junk.size()));
  close(fd);
  auto notadb = Db::Open(path, Db::Mode::kReadOnly);
  ASSERT_TRUE(notadb.ok());  // SQLite reads the header on first use
  auto q = notadb->QueryInt("SELECT COUNT(*) FROM sqlite_master");
  unlink(path);
  ASSERT_FALSE(q.ok());
  EXPECT_TRUE(q.error().Is(ErrorKind::kCorrupt)) << q.error().message();
  EXPECT_TRUE(q.error().Wrap("input 1").Is(ErrorKind::kCorrupt));
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
