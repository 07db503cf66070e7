// Ranks of split communicators derived from every member's split (split_ranks.h).
#include "merger/split_ranks.h"

#include <gtest/gtest.h>

#include <string>

#include "rscore/comm_hash.h"
#include "rscore/schema.h"

namespace rs::merge {
namespace {

constexpr int64_t kWorld = 777;

class SplitRanksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = rs::Db::Open(":memory:", rs::Db::Mode::kCreate);
    ASSERT_TRUE(db.ok());
    db_ = std::move(db).value();
    ASSERT_TRUE(rs::CreateSchema(db_, rs::DbKind::kMerged).ok());
  }
  // A member's split of the world (4 ranks), rank `rank` on node n<rank/2>, pid 100+rank.
  void Split(int rank, int color, int key, int seq, int nranks = 4) {
    Row(rank, "COMM_SPLIT", kWorld, rank, nranks, ", split_color, split_key, split_seq",
        ", " + std::to_string(color) + ", " + std::to_string(key) + ", " + std::to_string(seq));
  }
  // A call of the member on a child (rank unknown to its recorder).
  void Call(int rank, uint64_t comm) {
    Row(rank, "ALL_REDUCE", static_cast<int64_t>(comm), std::nullopt, std::nullopt, "", "");
  }
  void Row(int rank, const std::string& op, int64_t comm, std::optional<int> r,
           std::optional<int> n, const std::string& cols, const std::string& vals) {
    auto opt = [](std::optional<int> v) { return v ? std::to_string(*v) : std::string("NULL"); };
    ASSERT_TRUE(db_.Exec("INSERT INTO nccl_events(node, timestamp_ns, pid, tid, op, rank, nranks,"
                         " comm_id_hash" +
                         cols + ") VALUES ('n" + std::to_string(rank / 2) + "', 1, " +
                         std::to_string(100 + rank) + ", 1, '" + op + "', " + opt(r) + ", " +
                         opt(n) + ", " + std::to_string(comm) + vals + ")")
                    .ok());
  }
  std::string RanksOf(uint64_t comm) {
    auto st = db_.Prepare(
        "SELECT group_concat(pid || ':' || IFNULL(rank, '-') || '/' ||"
        " IFNULL(nranks, '-'), ' ') FROM (SELECT * FROM nccl_events WHERE"
        " comm_id_hash = ? AND op = 'ALL_REDUCE' ORDER BY pid)");
    EXPECT_TRUE(st.ok());
    st->Bind(1, comm);
    auto row = st->Step();
    EXPECT_TRUE(row.ok() && *row);
    return st->Text(0);
  }
  static uint64_t Child(int color, int seq) {
    return rs::SplitCommIdHash(static_cast<uint64_t>(kWorld), color, seq - 1);
  }
  rs::Db db_;
};

// Two children by color, ordered by key, equal keys by the parent rank; a member that passed
// NCCL_SPLIT_NOCOLOR gets none.
TEST_F(SplitRanksTest, RanksByKeyThenParentRank) {
  Split(0, 1, 5, 1);
  Split(1, 0, 0, 1);
  Split(2, 1, 5, 1);
  Split(3, 1, 2, 1);
  for (int r : {0, 2, 3}) Call(r, Child(1, 1));
  Call(1, Child(0, 1));
  auto got = DeriveSplitRanks(db_);
  ASSERT_TRUE(got.ok()) << got.error().message();
  EXPECT_EQ(got->communicators, 2);
  EXPECT_EQ(got->rows, 4);
  EXPECT_TRUE(got->warnings.empty());
  // color 1: rank 3 (key 2) first, then ranks 0 and 2 (key 5) by their world rank
  EXPECT_EQ(RanksOf(Child(1, 1)), "100:1/3 102:2/3 103:0/3");
  EXPECT_EQ(RanksOf(Child(0, 1)), "101:0/1");
}

TEST_F(SplitRanksTest, NoColorMembersAndLaterSplitsCountSeparately) {
  for (int r = 0; r < 4; ++r) Split(r, r < 2 ? 0 : -1, r, 1);
  for (int r = 0; r < 4; ++r) Split(r, r % 2, r, 2);
  Call(0, Child(0, 1));
  Call(1, Child(0, 1));
  Call(3, Child(1, 2));
  auto got = DeriveSplitRanks(db_);
  ASSERT_TRUE(got.ok()) << got.error().message();
  EXPECT_EQ(got->communicators, 3);  // color 0 of the first; colors 0 and 1 of the second
  EXPECT_EQ(RanksOf(Child(0, 1)), "100:0/2 101:1/2");
  EXPECT_EQ(RanksOf(Child(1, 2)), "103:1/2");
}

// A member's bundle missing: the children cannot be ranked, and that is said.
TEST_F(SplitRanksTest, ASplitNotRecordedOnEveryMemberIsLeftUnknown) {
  for (int r = 0; r < 3; ++r) Split(r, 0, r, 1);
  for (int r = 0; r < 3; ++r) Call(r, Child(0, 1));
  auto got = DeriveSplitRanks(db_);
  ASSERT_TRUE(got.ok()) << got.error().message();
  EXPECT_EQ(got->communicators, 0);
  EXPECT_EQ(got->rows, 0);
  ASSERT_EQ(got->warnings.size(), 1u);
  EXPECT_NE(got->warnings[0].find("only some members"), std::string::npos);
  EXPECT_EQ(RanksOf(Child(0, 1)), "100:-/- 101:-/- 102:-/-");
}

// A rank the program learned from NCCL (ncclCommUserRank) is NCCL's word: never overwritten.
TEST_F(SplitRanksTest, KnownRanksStay) {
  for (int r = 0; r < 4; ++r) Split(r, 0, 3 - r, 1);
  Row(0, "ALL_REDUCE", static_cast<int64_t>(Child(0, 1)), 3, 4, "", "");
  Call(1, Child(0, 1));
  auto got = DeriveSplitRanks(db_);
  ASSERT_TRUE(got.ok()) << got.error().message();
  EXPECT_EQ(RanksOf(Child(0, 1)), "100:3/4 101:2/4");  // keys 3..0: rank 1 is second last
}

}  // namespace
}  // namespace rs::merge
