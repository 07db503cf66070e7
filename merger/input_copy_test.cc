#include "merger/input_copy.h"

#include <gtest/gtest.h>

#include "rscore/schema.h"

namespace rs::merge {
namespace {

// A merged-schema database file with `rows` sched_events rows from id `first` (and one
// nccl_events row), written with the given page size.
rs::TempFile MergedFile(int page_size, int64_t first, int rows) {
  auto f = rs::TempFile::Create("", "input_copy_test");
  EXPECT_TRUE(f.ok());
  auto db = rs::Db::Open(f->path(), rs::Db::Mode::kReadWrite);
  EXPECT_TRUE(db.ok());
  EXPECT_TRUE(
      db->Exec("PRAGMA page_size=" + std::to_string(page_size) + "; PRAGMA journal_mode=OFF;")
          .ok());
  EXPECT_TRUE(rs::CreateSchema(*db, rs::DbKind::kMerged).ok());
  EXPECT_TRUE(db->Exec("BEGIN").ok());
  auto st = db->Prepare(
      "INSERT INTO sched_events(id, node, timestamp_ns, duration_ns, event, pid, tid)"
      " VALUES (?, 'n', ?, 5, 'off_cpu', 1, 1)");
  EXPECT_TRUE(st.ok());
  for (int i = 0; i < rows; ++i) {
    EXPECT_TRUE(st->Bind(1, first + i).Bind(2, int64_t{1000000} - i * 7 % 1000).Run().ok());
  }
  EXPECT_TRUE(db->Exec("INSERT INTO nccl_events(id, node, timestamp_ns, pid, tid, op,"
                       " comm_id_hash, seq) VALUES (" +
                       std::to_string(first + rows) + ", 'n', 5, 1, 1, 'ALL_REDUCE', 42, 1)")
                  .ok());
  EXPECT_TRUE(db->Exec("COMMIT").ok());
  return std::move(f).value();
}

class AddEventTablesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    out_file_ = MergedFile(16384, 0, 0);
    auto db = rs::Db::Open(out_file_.path(), rs::Db::Mode::kReadWrite);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->Exec("DELETE FROM nccl_events").ok());
    out_ = std::move(db).value();
  }
  std::map<std::string, int64_t> Expected(int sched) {
    return {{"sched_events", sched}, {"nccl_events", static_cast<int64_t>(parts_.size())}};
  }
  int64_t Int(const std::string& sql) {
    auto v = out_.QueryInt(sql);
    EXPECT_TRUE(v.ok()) << sql;
    return v.ok() ? *v : -1;
  }
  void ExpectIndexedAndIntact(int sched) {
    EXPECT_EQ(out_.QueryText("PRAGMA integrity_check")->value_or(""), "ok");
    EXPECT_EQ(Int("SELECT COUNT(*) FROM sqlite_schema WHERE type = 'index' AND name ="
                  " 'sched_events_ts'"),
              1);
    EXPECT_EQ(Int("SELECT COUNT(*) FROM sched_events INDEXED BY sched_events_ts"
                  " WHERE timestamp_ns > 0"),
              sched);
    EXPECT_EQ(Int("SELECT COUNT(*) FROM nccl_events INDEXED BY nccl_events_coll"
                  " WHERE comm_id_hash = 42"),
              static_cast<int64_t>(parts_.size()));
  }

  rs::TempFile out_file_;
  rs::Db out_;
  std::vector<Part> parts_;
};

// Parts of different page sizes (a part needs no particular layout): the rows come by SQL
// transfer, the indexes are built after them.
TEST_F(AddEventTablesTest, TransfersAndCounts) {
  parts_.push_back(Part{MergedFile(16384, 1000, 3000), {}});
  parts_.push_back(Part{MergedFile(4096, 1 << 20, 2000), {}});
  std::vector<const Part*> list = {&parts_[0], &parts_[1]};
  auto added = AddEventTables(out_, list, Expected(5000));
  ASSERT_TRUE(added.ok()) << added.error().message();
  ASSERT_TRUE(rs::CreateIndexes(out_).ok());  // as the merge does at its end
  ExpectIndexedAndIntact(5000);
}

TEST_F(AddEventTablesTest, RowsThatDoNotReconcileAreAnError) {
  parts_.push_back(Part{MergedFile(16384, 1000, 300), {}});
  std::vector<const Part*> list = {&parts_[0]};
  auto added = AddEventTables(out_, list, Expected(299));
  ASSERT_FALSE(added.ok());
  EXPECT_NE(added.error().message().find("sched_events of the output holds 300 rows, the"
                                         " parts 299"),
            std::string::npos)
      << added.error().message();
}

}  // namespace
}  // namespace rs::merge
