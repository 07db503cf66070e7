#include "rscore/bundle.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "rscore/event_id.h"
#include "rscore/zstd_file.h"

namespace rs {
namespace {

std::string TmpDir() {
  char tmpl[] = "/tmp/rscore_test.XXXXXX";
  return mkdtemp(tmpl);
}

Result<void> WriteSmallBundle(const std::string& path, const std::string& node) {
  ASSIGN_OR_RETURN(BundleWriter w, BundleWriter::Create(path));
  std::string rid = NewRecordingId();
  RETURN_IF_ERROR(w.SetMetadata("recording_id", rid));
  RETURN_IF_ERROR(w.SetMetadata("node", node));
  RETURN_IF_ERROR(w.SetMetadata("start_ns", "100"));
  RETURN_IF_ERROR(w.SetMetadata("end_ns", "200"));
  EventIdAllocator ids(RecordingKey(rid));
  ASSIGN_OR_RETURN(
      Statement st,
      w.db().Prepare(
          "INSERT INTO tcp_events(id, node, timestamp_ns, event, family, saddr, daddr, sport, "
          "dport) "
          "VALUES (?, ?, ?, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 1, 2)"));
  for (int i = 0; i < 1000; ++i)
    RETURN_IF_ERROR(st.Bind(1, ids.Next()).Bind(2, node).Bind(3, i).Run());
  return w.Finalize();
}

TEST(Bundle, RoundTripModeAndReadBack) {
  std::string dir = TmpDir();
  std::string path = dir + "/n1.rsb";
  ASSERT_TRUE(WriteSmallBundle(path, "n1").ok());
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(HasZstdMagic(path));
  auto opened = OpenRankscopeFile(path);
  ASSERT_TRUE(opened.ok()) << opened.error().message();
  EXPECT_EQ(opened->info().node, "n1");
  EXPECT_EQ(opened->info().db_kind, "bundle");
  EXPECT_EQ(opened->info().end_ns, 200);
  EXPECT_EQ(opened->db().QueryInt("SELECT COUNT(*) FROM tcp_events").value(), 1000);
  EXPECT_EQ(opened->db().QueryInt("SELECT COUNT(DISTINCT id) FROM tcp_events").value(), 1000);
  // No temp files left beside the bundle.
  EXPECT_EQ(std::system(("test $(ls -A " + dir + " | wc -l) -eq 1").c_str()), 0);
}

TEST(Bundle, TruncatedAndCorruptAreRejectedByName) {
  std::string dir = TmpDir();
  std::string path = dir + "/n2.rsb";
  ASSERT_TRUE(WriteSmallBundle(path, "n2").ok());
  struct stat st {};
  stat(path.c_str(), &st);
  std::string trunc = dir + "/trunc.rsb";
  ASSERT_EQ(std::system(
                ("head -c " + std::to_string(st.st_size / 2) + " " + path + " > " + trunc).c_str()),
            0);
  auto r = OpenRankscopeFile(trunc);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("trunc.rsb"), std::string::npos);
  EXPECT_NE(r.error().message().find("truncated"), std::string::npos);

  std::string text = dir + "/notes.txt";
  std::ofstream(text) << "hello";
  auto t = OpenRankscopeFile(text);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message().find("not a rankscope bundle"), std::string::npos);

  std::string empty = dir + "/empty.rsb";
  std::ofstream(empty).close();
  EXPECT_FALSE(OpenRankscopeFile(empty).ok());
}

// Every tool reading a bundle keeps the recorder's and the merge's node-name rule.
TEST(Bundle, NodeNameOutsideTheRuleIsRefused) {
  std::string dir = TmpDir();
  for (const char* bad : {"../../etc", "<script>", "a b"}) {
    std::string path = dir + "/bad.rsb";
    ASSERT_TRUE(WriteSmallBundle(path, bad).ok());
    auto r = OpenRankscopeFile(path);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message().find("node name"), std::string::npos) << r.error().message();
    unlink(path.c_str());
  }
}

TEST(Bundle, UnwritableOutputIsAnError) {
  auto r = BundleWriter::Create("/nonexistent-dir/x.rsb");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("does not exist"), std::string::npos);
}

TEST(Bundle, EventIdsAreNamespaced) {
  uint32_t a = RecordingKey("aaaa"), b = RecordingKey("bbbb");
  EXPECT_NE(a, b);
  EventIdAllocator ia(a), ib(b);
  int64_t x = ia.Next(), y = ib.Next();
  EXPECT_NE(x, y);
  EXPECT_EQ(EventIdRecordingKey(x), a);
  EXPECT_GT(x, 0);
}

}  // namespace
}  // namespace rs

namespace rs {
namespace {

// A plain (uncompressed) rankscope db at `path`, changed by `sql` after the schema is made.
void WriteDb(const std::string& path, const std::string& sql) {
  auto db = Db::Open(path, Db::Mode::kCreate);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(CreateSchema(*db, DbKind::kBundle).ok());
  ASSERT_TRUE(db->Exec("INSERT INTO metadata VALUES ('recording_id', 'r'), ('node', 'n0'),"
                       " ('start_ns', '1'), ('end_ns', '2')")
                  .ok());
  ASSERT_TRUE(db->Exec(sql).ok()) << sql;
}

TEST(InputGuard, DeadlineStopsAStatementAndNamesTheFile) {
  auto db = Db::Open(":memory:", Db::Mode::kCreate);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(db->GuardInput("job.rsdb", {.time_limit_ns = 100'000'000}).ok());
  auto r = db->QueryInt(
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("job.rsdb: stopped: the time limit"), std::string::npos)
      << r.error().message();
  db->RestartDeadline(1'000'000'000);
  EXPECT_TRUE(db->QueryInt("SELECT 1").ok());
}

TEST(InputGuard, ValueSizeIsLimited) {
  auto db = Db::Open(":memory:", Db::Mode::kCreate);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(db->GuardInput("n.rsb", {.max_value_bytes = 1000}).ok());
  EXPECT_TRUE(db->QueryInt("SELECT length(zeroblob(1000))").ok());
  auto r = db->QueryInt("SELECT length(zeroblob(1001))");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("over the limit of 1000 bytes"), std::string::npos)
      << r.error().message();
}

TEST(Validation, OnlyTablesAndIndexes) {
  std::string dir = TmpDir();
  const std::pair<std::string, std::string> cases[] = {
      {"CREATE VIEW v AS SELECT 1", "holds a view 'v'"},
      {"CREATE TRIGGER t AFTER INSERT ON metadata BEGIN SELECT 1; END", "holds a trigger 't'"},
      {"DROP TABLE tcp_events; CREATE VIEW /* x */ tcp_events AS SELECT * FROM nccl_events",
       "holds a view 'tcp_events'"},
      {"ALTER TABLE nccl_events ADD COLUMN g INTEGER AS (1)", "generated column 'g'"},
  };
  int n = 0;
  for (const auto& [sql, want] : cases) {
    std::string path = dir + "/case" + std::to_string(n++) + ".rsdb";
    WriteDb(path, sql);
    auto r = OpenRankscopeFile(path);
    ASSERT_FALSE(r.ok()) << sql;
    EXPECT_EQ(r.error().message().rfind(path + ": ", 0), 0u) << r.error().message();
    EXPECT_NE(r.error().message().find(want), std::string::npos) << r.error().message();
  }
  std::string ok = dir + "/ok.rsdb";
  WriteDb(ok, "CREATE TABLE later_table(x INTEGER); CREATE INDEX later_x ON later_table(x)");
  EXPECT_TRUE(OpenRankscopeFile(ok).ok());
}

TEST(Validation, WrongTypesInTablesThatAreNotStrict) {
  std::string dir = TmpDir();
  std::string path = dir + "/old.rsdb";
  WriteDb(path,
          "PRAGMA writable_schema=ON;"
          " UPDATE sqlite_schema SET sql = replace(sql, ') STRICT', ')') WHERE type = 'table';");
  {
    auto db = Db::Open(path, Db::Mode::kReadWrite);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->Exec("INSERT INTO nccl_events(id, node, timestamp_ns, pid, tid, op) VALUES"
                         " (1, 'n0', 'soon', 1, 1, 'SEND'), (2, 'n0', 5, 1, 1, x'00')")
                    .ok());
  }
  auto r = OpenRankscopeFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find(
                "table nccl_events, column timestamp_ns: 1 row not of its declared type INTEGER"),
            std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("column op: 1 row not of its declared type TEXT"),
            std::string::npos)
      << r.error().message();
}

TEST(Schema, NewTablesAreStrict) {
  auto db = Db::Open(":memory:", Db::Mode::kCreate);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(CreateSchema(*db, DbKind::kMerged).ok());
  EXPECT_TRUE(AllKnownTablesStrict(*db).value());
  auto r = db->Exec("INSERT INTO nccl_events(id, node, timestamp_ns, pid, tid, op)"
                    " VALUES (1, 'n0', 'soon', 1, 1, 'SEND')");
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace rs
