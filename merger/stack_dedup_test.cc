#include "stack_dedup.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include "rscore/schema.h"

namespace merge {
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

}  // namespace
}  // namespace merge
