#include "merger/table_copy.h"

#include <gtest/gtest.h>

#include "rscore/schema.h"

namespace rs::merge {
namespace {

TEST(AlignedExpr, IsApply) {
  auto db = rs::Db::Open(":memory:", rs::Db::Mode::kCreate);
  ASSERT_TRUE(db.ok());
  NodeAlignment a;
  a.offset_ns = -1'234'567;
  a.drift_ppm = 17.25;
  a.anchor_ns = 1'760'000'000'000'000'000;
  ASSERT_TRUE(RegisterAlignment(*db, a).ok());
  for (int64_t local : {a.anchor_ns, a.anchor_ns + 3'000'000'017, a.anchor_ns - 999'999'999}) {
    auto v = db->QueryInt("SELECT " + AlignedExpr("timestamp_ns") + " FROM (SELECT " +
                          std::to_string(local) + " AS timestamp_ns)");
    ASSERT_TRUE(v.ok()) << v.error().message();
    EXPECT_EQ(v.value(), a.Apply(local)) << local;
  }
  auto null = db->QueryInt("SELECT " + AlignedExpr("t") + " IS NULL FROM (SELECT NULL AS t)");
  ASSERT_TRUE(null.ok());
  EXPECT_EQ(null.value(), 1);
  // Registering again replaces the alignment.
  a.drift_ppm = 0;
  ASSERT_TRUE(RegisterAlignment(*db, a).ok());
  EXPECT_EQ(db->QueryInt("SELECT aligned_ns(1000)").value(), 1000 + 1'234'567);
}

// A table an input names with double quotes and SQL in it is counted as unknown, and its
// name, quoted once, changes nothing else (before, the quote ended the identifier).
TEST(CopyTables, AHostileTableNameIsOnlyAName) {
  auto db = rs::Db::Open(":memory:", rs::Db::Mode::kCreate);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(rs::CreateSchema(*db, rs::DbKind::kMerged).ok());
  ASSERT_TRUE(db->Exec("ATTACH ':memory:' AS src").ok());
  const std::string hostile = "x\" WHERE 0; DELETE FROM main.metadata; --";
  ASSERT_TRUE(db->Exec("CREATE TABLE src." + rs::QuoteIdentifier(hostile) +
                       "(a);"
                       "INSERT INTO src." +
                       rs::QuoteIdentifier(hostile) +
                       " VALUES (1), (2);"
                       "CREATE TEMP TABLE stack_map(old INTEGER PRIMARY KEY, new INTEGER)")
                  .ok());
  const int64_t metadata = db->QueryInt("SELECT COUNT(*) FROM main.metadata").value();
  ASSERT_GT(metadata, 0);
  CopySpec spec;
  spec.schema = "src";
  spec.node = spec.original_node = "n";
  auto counts = CopyTables(*db, spec);
  ASSERT_TRUE(counts.ok()) << counts.error().message();
  ASSERT_EQ(counts->size(), 1u);
  EXPECT_EQ(counts->at(0).table, hostile);
  EXPECT_EQ(counts->at(0).rows_in, 2);
  EXPECT_EQ(counts->at(0).rows_skipped, 2);
  EXPECT_EQ(db->QueryInt("SELECT COUNT(*) FROM main.metadata").value(), metadata);
  EXPECT_EQ(rs::QuoteIdentifier("a\"b"), "\"a\"\"b\"");
}

TEST(CopyTables, RenamesShiftsAlignsAndCounts) {
  auto db = rs::Db::Open(":memory:", rs::Db::Mode::kCreate);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(rs::CreateSchema(*db, rs::DbKind::kMerged).ok());
  ASSERT_TRUE(db->Exec("ATTACH ':memory:' AS src").ok());
  // The input: a bundle schema in 'src' (schema.cc's SQL, run inside the attached db).
  std::string sql(rs::BundleSchemaSql());
  for (size_t p = 0; (p = sql.find("CREATE TABLE ", p)) != std::string::npos; p += 17) {
    sql.replace(p, 13, "CREATE TABLE src.");
  }
  ASSERT_TRUE(db->Exec(sql).ok());
  ASSERT_TRUE(db->Exec("CREATE TEMP TABLE stack_map(old INTEGER PRIMARY KEY, new INTEGER);"
                       "INSERT INTO temp.stack_map VALUES (7, 700);"
                       "INSERT INTO src.tcp_events(id, node, timestamp_ns, event, family, saddr,"
                       " daddr, sport, dport) VALUES (1, 'n', 5000, 'tcp_retransmit_skb', 'ipv4',"
                       " 'a', 'b', 1, 2), (2, 'other', 6000, 'tcp_retransmit_skb', 'ipv4', 'a',"
                       " 'b', 1, 2);"
                       "INSERT INTO src.nccl_events(id, node, timestamp_ns, pid, tid, op, stack_id)"
                       " VALUES (3, 'n', 7000, 1, 1, 'ALL_REDUCE', 7),"
                       " (4, 'n', 7100, 1, 1, 'ALL_REDUCE', 8);"
                       "CREATE TABLE src.future_table(x); INSERT INTO src.future_table VALUES (1);"
                       "INSERT INTO src.clock_refs(node, seq, kind, mono_ns, realtime_ns,"
                       " read_span_ns) VALUES ('n', 0, 'start', 1, 9000, 10);")
                  .ok());
  CopySpec spec;
  spec.schema = "src";
  spec.node = "n#2";
  spec.original_node = "n";
  spec.id_shift = int64_t{5} << 32;
  spec.alignment.offset_ns = 1000;
  auto counts = CopyTables(*db, spec);
  ASSERT_TRUE(counts.ok()) << counts.error().message();
  std::map<std::string, TableCount> by;
  for (auto& c : counts.value()) by[c.table] = c;
  EXPECT_EQ(by["tcp_events"].rows_in, 2);
  EXPECT_EQ(by["tcp_events"].rows_out, 1);
  EXPECT_EQ(by["tcp_events"].rows_skipped, 1);
  EXPECT_EQ(by["future_table"].rows_skipped, 1);
  EXPECT_NE(by["future_table"].note.find("unknown"), std::string::npos);
  EXPECT_EQ(db->QueryInt("SELECT id FROM main.tcp_events").value(), (int64_t{5} << 32) + 1);
  EXPECT_EQ(db->QueryInt("SELECT timestamp_ns FROM main.tcp_events").value(), 4000);
  EXPECT_EQ(db->QueryInt("SELECT local_timestamp_ns FROM main.tcp_events").value(), 5000);
  EXPECT_EQ(db->QueryText("SELECT node FROM main.tcp_events").value().value(), "n#2");
  EXPECT_EQ(db->QueryInt("SELECT stack_id FROM main.nccl_events WHERE id = (5 << 32) + 3").value(),
            700);
  // A reference to a stack the bundle does not hold: kept row, NULL stack, said so.
  EXPECT_EQ(db->QueryInt("SELECT COUNT(*) FROM main.nccl_events WHERE stack_id IS NULL").value(),
            1);
  EXPECT_NE(by["nccl_events"].note.find("1 rows referenced stacks missing"), std::string::npos)
      << by["nccl_events"].note;
  // Defaults of columns the row did not set survive; clock_refs stay as recorded.
  EXPECT_EQ(db->QueryInt("SELECT COUNT(*) FROM main.nccl_events WHERE state = 'complete'").value(),
            2);
  EXPECT_EQ(db->QueryInt("SELECT realtime_ns FROM main.clock_refs WHERE node = 'n#2'").value(),
            9000);
}

}  // namespace
}  // namespace rs::merge
