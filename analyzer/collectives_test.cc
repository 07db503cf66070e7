#include "collectives.h"

#include <gtest/gtest.h>

#include "rscore/schema.h"

namespace analyzer {
namespace {

class CollectivesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = rs::Db::Open(":memory:", rs::Db::Mode::kCreate);
    ASSERT_TRUE(db.ok());
    db_ = std::move(db).value();
    ASSERT_TRUE(rs::CreateSchema(db_, rs::DbKind::kBundle).ok());
  }
  void Call(const char* node, int pid, int rank, int64_t seq, int64_t ts, int64_t dur,
            const char* op = "ALL_REDUCE") {
    auto st = db_.Prepare(
        "INSERT INTO nccl_events(node, timestamp_ns, duration_ns, pid, tid, op, rank, nranks,"
        " comm_id_hash, seq, count, datatype, state) VALUES (?,?,?,?,?,?,?,3,77,?,10,'float32',?)");
    ASSERT_TRUE(st.ok());
    st->Bind(1, node).Bind(2, ts).Bind(4, pid).Bind(5, pid).Bind(6, op).Bind(7, rank).Bind(8, seq);
    if (dur >= 0) st->Bind(3, dur);
    st->Bind(9, dur >= 0 ? "complete" : "in_flight");
    ASSERT_TRUE(st->Run().ok());
  }
  rs::Db db_;
};

TEST_F(CollectivesTest, LatenessAndLastAreCountedPerRankAndNode) {
  // seq 0: rank 2 last by 30; seq 1: rank 2 last by 50; seq 2: tie between ranks 1 and 2.
  Call("a", 1, 0, 0, 100, 40);
  Call("a", 2, 1, 0, 110, 30);
  Call("b", 3, 2, 0, 130, 10);
  Call("a", 1, 0, 1, 200, 60);
  Call("a", 2, 1, 1, 200, 60);
  Call("b", 3, 2, 1, 250, 10);
  Call("a", 1, 0, 2, 300, 5);
  Call("a", 2, 1, 2, 310, 5);
  Call("b", 3, 2, 2, 310, 5);
  Call("a", 1, 0, 3, 400, -1);        // in flight, alone: not matched
  Call("a", 1, 0, 0, 90, 5, "SEND");  // p2p: ignored
  auto data = LoadCollectives(db_);
  ASSERT_TRUE(data.ok()) << data.error().message();
  EXPECT_EQ(data->calls.size(), 10u);
  EXPECT_EQ(data->collectives.size(), 4u);
  EXPECT_EQ(data->matched, 3);
  EXPECT_EQ(data->collectives[2].last, -1);
  EXPECT_EQ(data->collectives[3].last_exit, -1);
  auto stats = ParticipantStats(*data);
  ASSERT_EQ(stats.size(), 3u);
  // Participants appear in load order: (a,1), (a,2), (b,3).
  EXPECT_EQ(stats[2].rank, std::optional<int64_t>(2));
  EXPECT_EQ(stats[2].last_count, 2);
  EXPECT_EQ(stats[2].collectives, 3);
  EXPECT_EQ(stats[2].median_lateness_ns, 30);
  EXPECT_EQ(stats[2].p90_lateness_ns, 50);
  EXPECT_EQ(stats[2].median_duration_ns, 10);
  EXPECT_EQ(stats[0].last_count, 0);
  auto nodes = NodeStats(*data);
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].node, "a");
  EXPECT_EQ(nodes[0].median_lateness_ns, 10);  // max of its ranks: 10, 0, 10
  EXPECT_EQ(nodes[1].last_count, 2);
}

TEST(QuantileTest, NearestRank) {
  std::vector<int64_t> v{5, 1, 4, 2, 3};
  EXPECT_EQ(Quantile(v, 0.5), 3);
  EXPECT_EQ(Quantile(v, 0.0), 1);
  EXPECT_EQ(Quantile(v, 1.0), 5);
  std::vector<int64_t> empty;
  EXPECT_EQ(Quantile(empty, 0.5), 0);
}

}  // namespace
}  // namespace analyzer
