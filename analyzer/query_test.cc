#include "analyzer/query.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <sstream>

#include "rscore/schema.h"

namespace rs::analyzer {
namespace {

QueryOptions Options(OutputFormat format, int64_t limit) {
  QueryOptions o;
  o.format = format;
  o.limit = limit;
  return o;
}

class QueryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = std::move(rs::Db::Open(":memory:", rs::Db::Mode::kCreate).value());
    ASSERT_TRUE(rs::CreateSchema(db_, rs::DbKind::kBundle).ok());
    ASSERT_TRUE(db_.Exec("INSERT INTO nccl_events(id, node, timestamp_ns, duration_ns, pid, tid, "
                         "op, rank, nranks, comm_id_hash) VALUES "
                         "(1, 'n0', 1764072187123456789, 60000000, 7, 7, 'ALL_REDUCE', 3, 4, -5),"
                         "(2, 'n0', 2000, 10, 7, 7, 'ALL_REDUCE', 3, 4, -5),"
                         "(3, 'n0', 3000, NULL, 7, 7, 'SEND', NULL, 4, -5)")
                    .ok());
    ASSERT_TRUE(db_.Exec("INSERT INTO gpu_ops(id, node, timestamp_ns, pid, op, comm_id_hash, "
                         "device_start_ns, state) VALUES "
                         "(9, 'n0', 5, 7, 'ALL_REDUCE', 2738609752950744404, 1000000001, "
                         "'completed')")
                    .ok());
    ASSERT_TRUE(CreateQueryViews(db_).ok());
    ASSERT_TRUE(InstallReadOnlyGuard(db_).ok());
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
  ASSERT_TRUE(
      Run("SELECT id, op FROM nccl_events WHERE id = 1", Options(OutputFormat::kCsv, 0)).ok());
  EXPECT_EQ(out_.str(), "id,op\n1,ALL_REDUCE\n");
  ASSERT_TRUE(Run("SELECT id, rank, 'a\"b' AS s FROM nccl_events WHERE id = 3",
                  Options(OutputFormat::kJson, 0))
                  .ok());
  EXPECT_EQ(out_.str(), "[\n {\"id\": 3, \"rank\": null, \"s\": \"a\\\"b\"}\n]\n");
}

// A value that holds a newline or a terminal escape cannot forge a row nor drive the terminal
// in the table; CSV carries it as it is, quoted.
TEST_F(QueryTest, TheTableShowsControlCharactersEscaped) {
  ASSERT_TRUE(Run("SELECT 'n1' || char(10) || 'STRAGGLER: node7' || char(27) || '[2J' AS v").ok());
  EXPECT_EQ(out_.str().find('\x1b'), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("n1\\nSTRAGGLER: node7\\x1b[2J"), std::string::npos) << out_.str();
  const std::string table = out_.str();
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 3) << table;
  ASSERT_TRUE(Run("SELECT 'a' || char(10) || 'b' AS v", Options(OutputFormat::kCsv, 0)).ok());
  EXPECT_EQ(out_.str(), "v\n\"a\nb\"\n");
}

TEST_F(QueryTest, JsonNumbersAreShortestRoundTrip) {
  ASSERT_TRUE(Run("SELECT 8.32 AS x, 0.1 + 0.2 AS y, 1e-7 AS z, 3 AS i, duration_ns AS d "
                  "FROM nccl_events WHERE id = 1",
                  Options(OutputFormat::kJson, 0))
                  .ok());
  EXPECT_EQ(out_.str(),
            "[\n {\"x\": 8.32, \"y\": 0.30000000000000004, \"z\": 1e-07, \"i\": 3, "
            "\"d\": 60000000}\n]\n");
}

TEST_F(QueryTest, ViewsShowHexCommunicatorAndUtcTimes) {
  ASSERT_TRUE(Run("SELECT id, comm_id_hex, time_utc FROM nccl_events_v ORDER BY id",
                  Options(OutputFormat::kCsv, 0))
                  .ok());
  EXPECT_EQ(out_.str(),
            "id,comm_id_hex,time_utc\n"
            "1,0xfffffffffffffffb,2025-11-25T12:03:07.123456789Z\n"
            "2,0xfffffffffffffffb,1970-01-01T00:00:00.000002000Z\n"
            "3,0xfffffffffffffffb,1970-01-01T00:00:00.000003000Z\n");
  ASSERT_TRUE(Run("SELECT comm_id_hex, nccl_comm_hex, time_utc, device_start_utc, device_end_utc "
                  "FROM gpu_ops_v",
                  Options(OutputFormat::kCsv, 0))
                  .ok());
  EXPECT_EQ(out_.str(),
            "comm_id_hex,nccl_comm_hex,time_utc,device_start_utc,device_end_utc\n"
            "0x26017f0f7f0ca554,,1970-01-01T00:00:00.000000005Z,1970-01-01T00:00:01.000000001Z,\n");
  for (const char* view : {"nccl_events_v", "cuda_events_v", "gpu_ops_v", "tcp_events_v",
                           "sched_events_v", "block_events_v", "process_events_v"}) {
    auto r = Run(std::string("SELECT time_utc FROM ") + view);
    EXPECT_TRUE(r.ok()) << view << ": " << r.error().message();
  }
  // The views are as read-only as the tables.
  EXPECT_FALSE(Run("DELETE FROM nccl_events_v").ok());
  for (const char* sql : {"DROP VIEW nccl_events_v", "CREATE TEMP VIEW x AS SELECT 1"}) {
    auto r = Run(sql);
    ASSERT_FALSE(r.ok()) << sql;
    EXPECT_NE(r.error().message().find("read-only"), std::string::npos) << r.error().message();
  }
}

TEST_F(QueryTest, SchemaListsTablesAndViewsWithRowsAndMeaning) {
  out_.str("");
  ASSERT_TRUE(PrintSchema(db_, out_).ok());
  const std::string s = out_.str();
  EXPECT_EQ(s.substr(0, 5), "table");
  auto line = [&](const std::string& name) {
    size_t p = s.find("\n" + name + " ");
    return p == std::string::npos ? std::string() : s.substr(p + 1, s.find('\n', p + 1) - p - 1);
  };
  EXPECT_NE(line("nccl_events").find(" 3 "), std::string::npos) << s;
  EXPECT_NE(line("nccl_events").find("NCCL"), std::string::npos) << s;
  EXPECT_NE(line("gpu_ops").find(" 1 "), std::string::npos) << s;
  EXPECT_NE(line("nccl_events_v").find("comm_id_hex"), std::string::npos) << s;
  EXPECT_NE(line("metadata").find(" 3 "), std::string::npos) << s;
  EXPECT_EQ(line("merge_inputs"), "") << "a bundle has no merge tables";
}

TEST_F(QueryTest, SchemaOfOneTableGivesColumnsTypesAndMeanings) {
  out_.str("");
  ASSERT_TRUE(PrintTableSchema(db_, "nccl_events", out_).ok());
  const std::string s = out_.str();
  EXPECT_NE(s.find("comm_id_hash"), std::string::npos) << s;
  EXPECT_NE(s.find("splitmix64 fold of the ncclUniqueId"), std::string::npos) << s;
  EXPECT_NE(s.find("INTEGER"), std::string::npos) << s;
  // A comment continued on the next line is one meaning.
  EXPECT_NE(s.find("NCCL's commHash, as NCCL's logs and profiler plugins name the communicator"),
            std::string::npos)
      << s;
  out_.str("");
  ASSERT_TRUE(PrintTableSchema(db_, "nccl_events_v", out_).ok());
  EXPECT_NE(out_.str().find("time_utc"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("splitmix64"), std::string::npos) << out_.str();
  auto unknown = PrintTableSchema(db_, "nccl_event", out_);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find("nccl_event"), std::string::npos);
  EXPECT_NE(unknown.error().message().find("tcp_events"), std::string::npos)
      << unknown.error().message();
}

TEST(SchemaDocTest, EveryTableAndColumnIsDescribed) {
  auto db = std::move(rs::Db::Open(":memory:", rs::Db::Mode::kCreate).value());
  ASSERT_TRUE(rs::CreateSchema(db, rs::DbKind::kMerged).ok());
  auto tables = rs::DescribeSchema(rs::DbKind::kMerged);
  auto st = db.Prepare(
      "SELECT m.name, p.name, p.type FROM sqlite_master m, pragma_table_info(m.name) p "
      "WHERE m.type = 'table' ORDER BY m.name, p.cid");
  ASSERT_TRUE(st.ok());
  int columns = 0;
  while (st->Step().value()) {
    std::string table = st->Text(0), column = st->Text(1), type = st->Text(2);
    const rs::TableDoc* t = rs::FindTableDoc(tables, table);
    ASSERT_NE(t, nullptr) << table;
    EXPECT_FALSE(t->meaning.empty()) << table;
    const rs::ColumnDoc* c = t->Find(column);
    ASSERT_NE(c, nullptr) << table << "." << column;
    EXPECT_EQ(c->type, type) << table << "." << column;
    ++columns;
  }
  EXPECT_GT(columns, 150);
  const rs::TableDoc* merged = rs::FindTableDoc(tables, "gpu_ops");
  ASSERT_NE(merged, nullptr);
  ASSERT_NE(merged->Find("local_timestamp_ns"), nullptr);
  EXPECT_FALSE(merged->Find("local_timestamp_ns")->meaning.empty());
  EXPECT_EQ(rs::FindTableDoc(rs::DescribeSchema(rs::DbKind::kBundle), "clock_alignment"), nullptr);
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

TEST_F(QueryTest, RefusalsNameTheOperation) {
  const std::pair<const char*, const char*> cases[] = {
      {"DROP TABLE nccl_events", "DROP TABLE is not allowed"},
      {"DROP VIEW nccl_events_v", "DROP VIEW is not allowed"},
      {"CREATE INDEX i ON nccl_events(op)", "CREATE INDEX is not allowed"},
      {"ALTER TABLE nccl_events ADD COLUMN x", "ALTER TABLE is not allowed"},
      {"DELETE FROM nccl_events", "DELETE is not allowed"},
      {"SELECT fts3_tokenizer('simple')", "the SQL function fts3_tokenizer() is not allowed"},
      {"SELECT load_extension('/tmp/x.so')", "the SQL function load_extension() is not allowed"},
      {"SELECT randomblob(10)", "the SQL function randomblob() is not allowed"},
      {"SELECT changes()", "the SQL function changes() is not allowed"},
      {"SELECT name FROM pragma_function_list",
       "the table-valued function pragma_function_list() is not allowed"},
      {"SELECT * FROM pragma_database_list", "pragma_database_list() is not allowed"},
  };
  for (const auto& [sql, want] : cases) {
    auto r = Run(sql);
    ASSERT_FALSE(r.ok()) << sql;
    EXPECT_NE(r.error().message().find(want), std::string::npos) << r.error().message();
  }
  EXPECT_EQ(db_.QueryInt("SELECT COUNT(*) FROM nccl_events").value(), 3);
}

TEST_F(QueryTest, PureFunctionsAndSchemaPragmasRun) {
  for (const char* sql :
       {"SELECT name, type FROM pragma_table_info('nccl_events')",
        "SELECT count(*), sum(duration_ns), group_concat(op), max(abs(rank)) FROM nccl_events",
        "SELECT printf('%x', id), strftime('%Y', timestamp_ns / 1e9, 'unixepoch') FROM nccl_events",
        "SELECT json_extract('{\"a\": 1}', '$.a'), value FROM json_each('[1, 2]')",
        "SELECT row_number() OVER (ORDER BY id), lag(id) OVER (ORDER BY id) FROM nccl_events",
        "SELECT time_utc, comm_id_hex FROM nccl_events_v"}) {
    auto r = Run(sql);
    EXPECT_TRUE(r.ok()) << sql << ": " << (r.ok() ? "" : r.error().message());
  }
}

TEST_F(QueryTest, TimeoutStopsAnEndlessQuery) {
  QueryOptions o;
  o.timeout_ns = 200'000'000;
  o.timeout_text = "200ms";
  auto r =
      Run("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)"
          " SELECT count(*) FROM c",
          o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("time limit"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("--timeout 200ms"), std::string::npos) << r.error().message();
  // The next query gets its own time.
  EXPECT_TRUE(Run("SELECT count(*) FROM nccl_events", o).ok());
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
          Options(OutputFormat::kCsv, 100));
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
}  // namespace rs::analyzer
