#include "merger/stack_dedup.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include "rscore/schema.h"

namespace rs::merge {
namespace {

TEST(StackId, IsXxh64OfTheFramesAsSigned) {
  std::string f = "main+0x1 (/bin/x@00+0x1)";
  EXPECT_EQ(static_cast<uint64_t>(StackId(f)), XXH64(f.data(), f.size(), 0));
  EXPECT_NE(StackId(f), StackId(f + "\n"));
}

TEST(MergeStacks, DedupsAcrossInputsAndMapsOldIds) {
  auto out = rs::Db::Open(":memory:", rs::Db::Mode::kCreate);
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(rs::CreateSchema(*out, rs::DbKind::kMerged).ok());
  ASSERT_TRUE(out->Exec("ATTACH ':memory:' AS src; CREATE TABLE src.stacks (id INTEGER PRIMARY "
                        "KEY, frames TEXT NOT NULL);"
                        "INSERT INTO src.stacks VALUES (10, 'a'), (11, 'b');")
                  .ok());
  auto c = MergeStacks(*out, "src");
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->rows_in, 2);
  EXPECT_EQ(c->inserted, 2);
  EXPECT_EQ(c->deduped, 0);
  EXPECT_EQ(out->QueryInt("SELECT new FROM temp.stack_map WHERE old = 10").value(), StackId("a"));
  // Second input: 'b' again under another id, and a new 'c'.
  ASSERT_TRUE(out->Exec("DELETE FROM src.stacks; INSERT INTO src.stacks VALUES (5, 'b'), (6, "
                        "'c');")
                  .ok());
  c = MergeStacks(*out, "src");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->inserted, 1);
  EXPECT_EQ(c->deduped, 1);
  EXPECT_EQ(out->QueryInt("SELECT COUNT(*) FROM main.stacks").value(), 3);
  EXPECT_EQ(out->QueryInt("SELECT new FROM temp.stack_map WHERE old = 5").value(), StackId("b"));
  EXPECT_EQ(out->QueryInt("SELECT COUNT(*) FROM temp.stack_map WHERE old = 10").value(), 0);
}

TEST(StacksFirstHeld, CreditsTheLowestInputWhateverTheRecordingOrder) {
  auto db = rs::Db::Open(":memory:", rs::Db::Mode::kCreate);
  ASSERT_TRUE(db.ok());
  EXPECT_TRUE(StacksFirstHeld(*db).value().empty());  // nothing recorded yet
  ASSERT_TRUE(db->Exec("CREATE TABLE ids(input INTEGER, id INTEGER);"
                       "INSERT INTO ids VALUES (3, 100), (3, 200), (1, 200), (2, 300), (2, 100);")
                  .ok());
  for (int input : {3, 1, 2}) {  // recorded out of input order
    ASSERT_TRUE(
        RecordStackOrigins(*db, input, "SELECT id FROM ids WHERE input = " + std::to_string(input))
            .ok());
  }
  ASSERT_TRUE(RecordStackOrigins(*db, 2, "SELECT 300").ok());  // twice: counted once
  auto first = StacksFirstHeld(*db);
  ASSERT_TRUE(first.ok()) << first.error().message();
  EXPECT_EQ(first.value(), (std::map<int, int64_t>{{1, 1}, {2, 2}}));  // 200; 100 and 300
}

}  // namespace
}  // namespace rs::merge
