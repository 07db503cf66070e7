#include "btree_splice.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "rscore/bundle.h"

namespace merge {
namespace {

constexpr const char* kSchema =
    "CREATE TABLE t (id INTEGER PRIMARY KEY, node TEXT NOT NULL, ts INTEGER NOT NULL,"
    " a INTEGER, b INTEGER, payload BLOB);"
    "CREATE TABLE small (k TEXT PRIMARY KEY, v INTEGER);";
constexpr const char* kIndexes = "CREATE INDEX t_ts ON t(ts); CREATE INDEX t_ab ON t(a, b);";

// Pages of table `t` of a database of type `type` ('leaf', 'internal', 'overflow'; from SQLite's
// dbstat table).
std::vector<int64_t> PagesOf(const std::string& path, const std::string& type) {
  std::vector<int64_t> out;
  auto db = rs::Db::Open(path, rs::Db::Mode::kReadOnly);
  EXPECT_TRUE(db.ok());
  auto st = db->Prepare("SELECT pageno FROM dbstat WHERE name = 't' AND pagetype = ?1");
  EXPECT_TRUE(st.ok());
  st->Bind(1, type);
  while (st->Step().value()) out.push_back(st->Int(0));
  return out;
}

// Overwrites bytes of page `page` at `offset`.
void Patch(const std::string& path, int page_size, int64_t page, int offset,
           const std::string& bytes) {
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  f.seekp((page - 1) * page_size + offset);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class SpliceTest : public ::testing::Test {
 protected:
  // A database file with the given page size, made by `sql` (journal off, as the merge's files).
  std::string NewDbWith(int page_size, const std::string& sql) {
    auto f = rs::TempFile::Create("", "splice_test");
    EXPECT_TRUE(f.ok());
    std::string path = f->path();
    files_.push_back(std::move(f).value());
    auto db = rs::Db::Open(path, rs::Db::Mode::kReadWrite);
    EXPECT_TRUE(db.ok());
    EXPECT_TRUE(db->Exec("PRAGMA page_size=" + std::to_string(page_size) +
                         "; PRAGMA journal_mode=OFF;" + sql)
                    .ok());
    return path;
  }
  // The test schema; `indexes`: with the indexes too (the output).
  std::string NewDb(int page_size, bool indexes) {
    return NewDbWith(page_size, std::string(kSchema) + (indexes ? kIndexes : ""));
  }

  // Rows with ids [first, first + n): timestamps out of id order, NULLs, 0/1, negative and
  // 64-bit values, and every `big_every`-th row with a payload spanning overflow pages.
  void Fill(const std::string& path, int64_t first, int n, int big_every, uint32_t seed) {
    auto db = rs::Db::Open(path, rs::Db::Mode::kReadWrite);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->Exec("BEGIN").ok());
    auto st = db->Prepare("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)");
    ASSERT_TRUE(st.ok());
    std::mt19937_64 rng(seed);
    const int64_t values[] = {0,         1,         -1,      127,
                              128,       -129,      40000,   int64_t{1} << 40,
                              INT64_MIN, INT64_MAX, 8388608, -2147483649LL};
    for (int i = 0; i < n; ++i) {
      st->Bind(1, first + i).Bind(2, "node-" + std::to_string(seed));
      st->Bind(3, static_cast<int64_t>(rng() % 1000000) - 500000);
      if (i % 7 == 3) {
        st->BindNull(4);
      } else {
        st->Bind(4, values[rng() % 12]);
      }
      if (i % 5 == 1) {
        st->BindNull(5);
      } else {
        st->Bind(5, values[rng() % 12]);
      }
      if (big_every > 0 && i % big_every == 0) {
        st->Bind(6, std::string(3000 + rng() % 5000, static_cast<char>('a' + i % 26)));
      } else {
        st->Bind(6, std::string(rng() % 40, 'x'));
      }
      ASSERT_TRUE(st->Run().ok());
    }
    ASSERT_TRUE(db->Exec("INSERT INTO small VALUES ('k" + std::to_string(seed) + "', 1)").ok());
    ASSERT_TRUE(db->Exec("COMMIT").ok());
  }

  // The plan for table t, read while the output is open (it is closed again on return).
  static rs::Result<SplicePlan> Plan(const std::string& out,
                                     const std::vector<std::string>& parts) {
    ASSIGN_OR_RETURN(rs::Db db, rs::Db::Open(out, rs::Db::Mode::kReadWrite));
    return PlanSplice(db, out, parts, {"t"});
  }

  rs::Result<SpliceStats> Splice(const std::string& out, const std::vector<std::string>& parts,
                                 int64_t budget = int64_t{128} << 20) {
    ASSIGN_OR_RETURN(SplicePlan plan, Plan(out, parts));
    plan.key_budget_bytes = budget;
    ASSIGN_OR_RETURN(auto work, PrepareSplice(plan));
    ASSIGN_OR_RETURN(SpliceStats stats, WriteSplice(*work));
    if (!stats.reindex.empty()) {
      auto db = rs::Db::Open(out, rs::Db::Mode::kReadWrite);
      if (!db.ok()) return db.error();
      for (const std::string& i : stats.reindex) RETURN_IF_ERROR(db->Exec("REINDEX " + i));
    }
    return stats;
  }

  // Splices and expects `rows` rows, then checks the output as ExpectSame does.
  void SpliceAndCheck(const std::string& out, const std::vector<std::string>& parts, int64_t rows) {
    auto stats = Splice(out, parts);
    ASSERT_TRUE(stats.ok()) << stats.error().message();
    EXPECT_EQ(stats->rows, rows);
    ExpectSame(out, parts);
  }

  // integrity_check, then the output's rows against the parts' rows, in rowid order and in
  // each index's order.
  void ExpectSame(const std::string& out, const std::vector<std::string>& parts) {
    auto db = rs::Db::Open(out, rs::Db::Mode::kReadWrite);
    ASSERT_TRUE(db.ok());
    auto check = db->QueryText("PRAGMA integrity_check");
    ASSERT_TRUE(check.ok());
    EXPECT_EQ(check->value_or(""), "ok");
    std::string all;
    for (size_t i = 0; i < parts.size(); ++i) {
      ASSERT_TRUE(db->Exec("ATTACH '" + parts[i] + "' AS p" + std::to_string(i)).ok());
      all += (all.empty() ? "" : " UNION ALL ") + std::string("SELECT * FROM p") +
             std::to_string(i) + ".t";
    }
    auto expected = db->QueryInt("SELECT COUNT(*) FROM (" + all + ")");
    auto got = db->QueryInt("SELECT COUNT(*) FROM main.t");
    ASSERT_TRUE(expected.ok() && got.ok());
    EXPECT_EQ(*got, *expected);
    auto missing = db->QueryInt("SELECT COUNT(*) FROM (" + all + " EXCEPT SELECT * FROM main.t)");
    ASSERT_TRUE(missing.ok());
    EXPECT_EQ(*missing, 0);
    // The same order through each index as SQLite's own sort of the parts' rows.
    for (const char* q : {"ts, id", "a, b, id"}) {
      auto via_index = db->QueryText(std::string("SELECT group_concat(id) FROM (SELECT id FROM"
                                                 " main.t INDEXED BY ") +
                                     (q[0] == 't' ? "t_ts" : "t_ab") + " ORDER BY " + q + ")");
      auto sorted = db->QueryText("SELECT group_concat(id) FROM (SELECT id FROM (" + all +
                                  ") ORDER BY " + q + ")");
      ASSERT_TRUE(via_index.ok() && sorted.ok());
      EXPECT_EQ(via_index->value_or(""), sorted->value_or("")) << q;
    }
    // Range lookups go through the index b-tree's interior pages.
    auto range = db->QueryInt(
        "SELECT COUNT(*) FROM main.t INDEXED BY t_ts WHERE ts BETWEEN"
        " -1000 AND 250000");
    auto range_expected =
        db->QueryInt("SELECT COUNT(*) FROM (" + all + ") WHERE ts BETWEEN -1000 AND 250000");
    ASSERT_TRUE(range.ok() && range_expected.ok());
    EXPECT_EQ(*range, *range_expected);
  }

  std::vector<rs::TempFile> files_;
};

TEST_F(SpliceTest, DeepTreesOverflowChainsAndIndexes) {
  // 512-byte pages: thousands of rows make trees three and four levels deep.
  std::string out = NewDb(512, true);
  std::vector<std::string> parts;
  int64_t first = 1;
  for (uint32_t s = 1; s <= 3; ++s) {
    parts.push_back(NewDb(512, false));
    Fill(parts.back(), first, 3000 + 500 * static_cast<int>(s), 97, s);
    first += int64_t{1} << 32;  // recording keys, as the merge assigns them
  }
  auto stats = Splice(out, parts);
  ASSERT_TRUE(stats.ok()) << stats.error().message();
  EXPECT_EQ(stats->rows, 3500 + 4000 + 4500);
  EXPECT_EQ(stats->index_entries, 2 * stats->rows);
  EXPECT_TRUE(stats->reindex.empty());
  ExpectSame(out, parts);
}

TEST_F(SpliceTest, LargePagesManyRows) {
  std::string out = NewDb(16384, true);
  std::vector<std::string> parts;
  for (uint32_t s = 1; s <= 2; ++s) {
    parts.push_back(NewDb(16384, false));
    Fill(parts.back(), static_cast<int64_t>(s) * 1000000, 60000, 0, s);
  }
  SpliceAndCheck(out, parts, 120000);
}

TEST_F(SpliceTest, OneLeafEmptyPartsAndNoRows) {
  std::string out = NewDb(4096, true);
  std::vector<std::string> parts = {NewDb(4096, false), NewDb(4096, false), NewDb(4096, false)};
  Fill(parts[1], 10, 3, 0, 7);  // one leaf in all: written at the table's root
  SpliceAndCheck(out, parts, 3);
  SpliceAndCheck(NewDb(4096, true), {NewDb(4096, false)}, 0);
}

TEST_F(SpliceTest, KeysSqliteMustCompareAndBudgetGoToReindex) {
  std::string out = NewDb(1024, true);
  {
    auto db = rs::Db::Open(out, rs::Db::Mode::kReadWrite);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->Exec("CREATE INDEX t_node ON t(node); CREATE INDEX t_desc ON t(ts DESC)").ok());
  }
  std::vector<std::string> parts = {NewDb(1024, false), NewDb(1024, false)};
  Fill(parts[0], 1, 2000, 50, 1);
  Fill(parts[1], 5000, 2000, 50, 2);
  // A real value in an integer column: SQLite compares reals, the splice leaves it to REINDEX.
  {
    auto db = rs::Db::Open(parts[1], rs::Db::Mode::kReadWrite);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->Exec("UPDATE t SET a = 2.5 WHERE id = 5001").ok());
  }
  auto stats = Splice(out, parts, /*budget=*/64 * 1024);
  ASSERT_TRUE(stats.ok()) << stats.error().message();
  std::set<std::string> reindexed(stats->reindex.begin(), stats->reindex.end());
  EXPECT_TRUE(reindexed.count("t_node"));  // text key
  EXPECT_TRUE(reindexed.count("t_desc"));  // descending
  EXPECT_TRUE(reindexed.count("t_ab"));    // a real key
  EXPECT_TRUE(reindexed.count("t_ts"));    // 4000 keys of 24 bytes > 64 KiB
  ExpectSame(out, parts);
}

TEST_F(SpliceTest, RefusesWithoutTouchingTheOutput) {
  std::string out = NewDb(4096, true);
  std::vector<std::string> parts = {NewDb(4096, false), NewDb(4096, false)};
  Fill(parts[0], 1000, 500, 0, 1);
  Fill(parts[1], 1200, 500, 0, 2);  // rowids overlap the first part's
  std::string before = ReadAll(out);
  auto p = Plan(out, parts);
  ASSERT_TRUE(p.ok()) << p.error().message();
  SplicePlan plan = std::move(p).value();
  before = ReadAll(out);
  auto work = PrepareSplice(plan);
  ASSERT_FALSE(work.ok());
  EXPECT_NE(work.error().message().find("do not follow"), std::string::npos)
      << work.error().message();
  EXPECT_EQ(ReadAll(out), before);

  // Another page size.
  std::vector<std::string> other = {NewDb(8192, false)};
  Fill(other[0], 1, 10, 0, 3);
  plan.part_paths = other;
  work = PrepareSplice(plan);
  ASSERT_FALSE(work.ok());
  EXPECT_NE(work.error().message().find("page size"), std::string::npos) << work.error().message();

  // A table that is not empty in the output.
  Fill(out, 1, 5, 0, 4);
  plan.part_paths = {parts[0]};
  before = ReadAll(out);
  work = PrepareSplice(plan);
  ASSERT_FALSE(work.ok());
  EXPECT_NE(work.error().message().find("not empty"), std::string::npos) << work.error().message();
  EXPECT_EQ(ReadAll(out), before);
}

TEST_F(SpliceTest, DamagedPartsAreRefusedBeforeAnythingIsWritten) {
  // A leaf claiming 65535 cells, and overflow chains turned into a cycle: both found by the
  // read-only pass, also when no index keys are collected (budget 0), output untouched.
  for (const char* damage : {"cells", "chain"}) {
    SCOPED_TRACE(damage);
    std::string out = NewDb(1024, true);
    std::vector<std::string> parts = {NewDb(1024, false)};
    Fill(parts[0], 1, 200, 3, 9);  // every third row spans an overflow chain
    if (std::string(damage) == "cells") {
      auto leaves = PagesOf(parts[0], "leaf");
      ASSERT_FALSE(leaves.empty());
      Patch(parts[0], 1024, leaves.back(), 3, std::string("\xff\xff", 2));
    } else {
      auto overflow = PagesOf(parts[0], "overflow");
      ASSERT_GT(overflow.size(), 2u);
      std::string first(4, '\0');
      for (int i = 0; i < 4; ++i) first[i] = static_cast<char>(overflow[0] >> (24 - 8 * i));
      for (int64_t p : overflow) Patch(parts[0], 1024, p, 0, first);
    }
    auto p = Plan(out, parts);
    ASSERT_TRUE(p.ok()) << p.error().message();
    SplicePlan plan = std::move(p).value();
    plan.key_budget_bytes = 0;
    std::string before = ReadAll(out);
    auto work = PrepareSplice(plan);
    ASSERT_FALSE(work.ok());
    EXPECT_NE(work.error().message().find(std::string(damage) == "cells" ? "too many cells"
                                                                         : "overflow chain"),
              std::string::npos)
        << work.error().message();
    EXPECT_EQ(ReadAll(out), before);
  }
}

TEST_F(SpliceTest, IntegerPrimaryKeyDescIsNotTheRowid) {
  // `INTEGER PRIMARY KEY DESC` is not a rowid alias: the value is in the record.
  auto make = [&](bool index) {
    return NewDbWith(1024, "CREATE TABLE t (x INTEGER PRIMARY KEY DESC, y);" +
                               std::string(index ? " CREATE INDEX t_y ON t(x, y);" : ""));
  };
  std::string out = make(true);
  std::vector<std::string> parts = {make(false), make(false)};
  for (int p = 0; p < 2; ++p) {
    auto db = rs::Db::Open(parts[p], rs::Db::Mode::kReadWrite);
    ASSERT_TRUE(db.ok());
    // Rowids ascend from part to part (the splice's precondition); x falls.
    ASSERT_TRUE(db->Exec("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE"
                         " i < 500) INSERT INTO t(rowid, x, y) SELECT i + " +
                         std::to_string(1000 * p) + ", 100000 - i - " + std::to_string(1000 * p) +
                         ", i % 7 FROM n")
                    .ok());
  }
  auto stats = Splice(out, parts);
  ASSERT_TRUE(stats.ok()) << stats.error().message();
  auto db = rs::Db::Open(out, rs::Db::Mode::kReadOnly);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(db->QueryText("PRAGMA integrity_check")->value_or(""), "ok");
  EXPECT_EQ(*db->QueryInt("SELECT COUNT(*) FROM t INDEXED BY t_y WHERE x = 99500"), 1);
  EXPECT_EQ(*db->QueryInt("SELECT COUNT(*) FROM t"), 1000);
}

TEST_F(SpliceTest, DifferentTableDefinitionIsRefused) {
  std::string out = NewDb(4096, true);
  auto f = rs::TempFile::Create("", "splice_test");
  ASSERT_TRUE(f.ok());
  {
    auto db = rs::Db::Open(f->path(), rs::Db::Mode::kReadWrite);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->Exec("PRAGMA page_size=4096; CREATE TABLE t (id INTEGER PRIMARY KEY, x)").ok());
  }
  auto db = rs::Db::Open(out, rs::Db::Mode::kReadWrite);
  ASSERT_TRUE(db.ok());
  auto plan = PlanSplice(*db, out, {f->path()}, {"t"});
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().message().find("defined differently"), std::string::npos);
}

}  // namespace
}  // namespace merge
