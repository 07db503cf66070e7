#include "rscore/schema.h"

#include <gtest/gtest.h>

namespace rs {
namespace {

TEST(Schema, CreatesBundleTablesWithVersion) {
  auto db = Db::Open(":memory:", Db::Mode::kCreate);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(CreateSchema(*db, DbKind::kBundle).ok());
  for (std::string_view t : kEventTables) {
    auto n = db->QueryInt("SELECT COUNT(*) FROM " + std::string(t));
    ASSERT_TRUE(n.ok()) << t;
    EXPECT_EQ(*n, 0);
  }
  EXPECT_EQ(CheckSchemaVersion(*db).value(), kSchemaVersion);
  EXPECT_FALSE(db->Exec("SELECT local_timestamp_ns FROM nccl_events").ok());
}

TEST(Schema, MergedAddsLocalTimestampAndMergeTables) {
  auto db = Db::Open(":memory:", Db::Mode::kCreate);
  ASSERT_TRUE(CreateSchema(*db, DbKind::kMerged).ok());
  EXPECT_TRUE(db->Exec("SELECT local_timestamp_ns FROM tcp_events").ok());
  EXPECT_TRUE(db->Exec("SELECT offset_ns, error_bound_ns FROM clock_alignment").ok());
  EXPECT_TRUE(db->Exec("SELECT rows_in FROM merge_counts").ok());
}

TEST(Schema, HasTableAndHasColumnSeeWhatAnEarlierVersionLacks) {
  auto db = Db::Open(":memory:", Db::Mode::kCreate);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(CreateSchema(*db, DbKind::kBundle).ok());
  EXPECT_TRUE(*HasTable(*db, "gpu_ops"));
  EXPECT_TRUE(*HasGpuOps(*db));
  EXPECT_TRUE(*HasColumn(*db, "processes", "cuda_launch_blocking"));
  EXPECT_FALSE(*HasColumn(*db, "processes", "no_such_column"));
  EXPECT_FALSE(*HasColumn(*db, "no_such_table", "pid"));
  EXPECT_EQ(*TcpCaStateErrColumns(*db), "ca_state, err");
  // A bundle of an earlier recorder: no gpu_ops, tcp_events without err.
  ASSERT_TRUE(db->Exec("DROP TABLE gpu_ops; ALTER TABLE tcp_events DROP COLUMN err").ok());
  EXPECT_FALSE(*HasTable(*db, "gpu_ops"));
  EXPECT_FALSE(*HasGpuOps(*db));
  EXPECT_TRUE(*HasColumn(*db, "tcp_events", "ca_state"));
  EXPECT_EQ(*TcpCaStateErrColumns(*db), "NULL, NULL");
}

TEST(Schema, RejectsNewerOrMissingVersion) {
  auto db = Db::Open(":memory:", Db::Mode::kCreate);
  EXPECT_FALSE(CheckSchemaVersion(*db).ok());
  ASSERT_TRUE(CreateSchema(*db, DbKind::kBundle).ok());
  ASSERT_TRUE(db->Exec("UPDATE metadata SET value='99' WHERE key='schema_version'").ok());
  auto r = CheckSchemaVersion(*db);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("newer"), std::string::npos);
}

TEST(Schema, SeedQueryColumnsExist) {
  auto db = Db::Open(":memory:", Db::Mode::kCreate);
  ASSERT_TRUE(CreateSchema(*db, DbKind::kBundle).ok());
  EXPECT_TRUE(db->Exec("SELECT timestamp_ns, duration_ns, op, rank, nranks, comm_id_hash, pid "
                       "FROM nccl_events; SELECT timestamp_ns, event, saddr, daddr, seq "
                       "FROM tcp_events;")
                  .ok());
}

}  // namespace
}  // namespace rs
