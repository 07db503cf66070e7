#include "query.h"

#include <gtest/gtest.h>

#include <sstream>

#include "rscore/schema.h"

namespace analyzer {
namespace {

class QueryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = std::move(rs::Db::Open(":memory:", rs::Db::Mode::kCreate).value());
    ASSERT_TRUE(rs::CreateSchema(db_, rs::DbKind::kBundle).ok());
    ASSERT_TRUE(db_.Exec("INSERT INTO nccl_events(id, node, timestamp_ns, duration_ns, pid, tid, "
                         "op, rank, nranks, comm_id_hash) VALUES "
                         "(1, 'n0', 1000, 60000000, 7, 7, 'ALL_REDUCE', 3, 4, -5),"
                         "(2, 'n0', 2000, 10, 7, 7, 'ALL_REDUCE', 3, 4, -5),"
                         "(3, 'n0', 3000, NULL, 7, 7, 'SEND', NULL, 4, -5)")
                    .ok());
    InstallReadOnlyGuard(db_);
  }
  rs::Result<QueryStats> Run(const std::string& sql, QueryOptions o = {}) {
    out_.str("");
    return RunQuery(db_, sql, o, out_);
  }
  rs::Db db_;
  std::ostringstream out_;
};

TEST_F(QueryTest, SelectPrintsTableWithNulls) {
  auto r = Run("SELECT id, op, rank FROM nccl_events ORDER BY id");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->rows, 3);
  EXPECT_NE(out_.str().find("ALL_REDUCE"), std::string::npos);
  EXPECT_NE(out_.str().find("NULL"), std::string::npos);
  EXPECT_EQ(out_.str().substr(0, 2), "id");
}

TEST_F(QueryTest, CsvAndJson) {
  ASSERT_TRUE(Run("SELECT id, op FROM nccl_events WHERE id = 1", {OutputFormat::kCsv, 0}).ok());
  EXPECT_EQ(out_.str(), "id,op\n1,ALL_REDUCE\n");
  ASSERT_TRUE(
      Run("SELECT id, rank, 'a\"b' AS s FROM nccl_events WHERE id = 3", {OutputFormat::kJson, 0})
          .ok());
  EXPECT_EQ(out_.str(), "[\n {\"id\": 3, \"rank\": null, \"s\": \"a\\\"b\"}\n]\n");
}

TEST_F(QueryTest, RefusesWritesAttachAndPragmaWrites) {
  for (const char* sql :
       {"DELETE FROM nccl_events", "INSERT INTO metadata VALUES ('a','b')",
        "UPDATE nccl_events SET rank = 0", "DROP TABLE nccl_events", "CREATE TABLE x(a)",
        "ATTACH DATABASE '/tmp/x.db' AS x", "PRAGMA journal_mode = DELETE"}) {
    auto r = Run(sql);
    ASSERT_FALSE(r.ok()) << sql;
    EXPECT_NE(r.error().message().find("read-only"), std::string::npos) << r.error().message();
  }
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM nccl_events").value(), 3);
  EXPECT_TRUE(Run("PRAGMA table_info(nccl_events)").ok());
}

TEST_F(QueryTest, OneStatementOnly) {
  auto r = Run("SELECT 1; DELETE FROM nccl_events");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("one SQL statement"), std::string::npos);
  EXPECT_TRUE(Run("SELECT 1; -- trailing comment\n").ok());
}

TEST_F(QueryTest, OutputIsBounded) {
  auto r =
      Run("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 500) "
          "SELECT x FROM c",
          {OutputFormat::kCsv, 100});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->rows, 100);
  EXPECT_TRUE(r->truncated);
}

TEST_F(QueryTest, SqlErrorsAreReported) {
  auto r = Run("SELECT nope FROM nccl_events");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("no such column"), std::string::npos);
}

}  // namespace
}  // namespace analyzer
