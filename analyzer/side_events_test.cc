#include "side_events.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "network.h"

#include "rscore/schema.h"

namespace analyzer {
namespace {

TEST(IntervalsTest, UnionAndCoverage) {
  auto u = UnionOf({{10, 20}, {15, 30}, {40, 50}, {0, 5}});
  ASSERT_EQ(u.size(), 3u);
  EXPECT_EQ(u[1].start, 10);
  EXPECT_EQ(u[1].end, 30);
  EXPECT_EQ(CoveredNs(u, 0, 100), 5 + 20 + 10);
  EXPECT_EQ(CoveredNs(u, 25, 45), 5 + 5);
  EXPECT_EQ(CoveredNs(u, 31, 39), 0);
  EXPECT_EQ(CoveredNs(u, 50, 40), 0);
}

TEST(SideEventsTest, RetransmitsAreAttributedThroughBothEndpoints) {
  auto db = rs::Db::Open(":memory:", rs::Db::Mode::kCreate);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(rs::CreateSchema(*db, rs::DbKind::kMerged).ok());
  ASSERT_TRUE(db->Exec(R"sql(
    INSERT INTO interfaces VALUES ('n0', 'eth0', 'ipv4', '10.0.0.1', 24, 1),
                                  ('n1', 'eth0', 'ipv4', '10.0.0.2', 24, 1),
                                  ('n0', 'lo', 'ipv4', '127.0.0.1', 8, 1),
                                  ('n1', 'lo', 'ipv4', '127.0.0.1', 8, 1);
    INSERT INTO tcp_events(node, timestamp_ns, event, family, saddr, daddr, sport, dport, segments)
      VALUES ('n0', 5, 'tcp_retransmit_skb', 'ipv6', '::ffff:10.0.0.1', '::ffff:10.0.0.2', 1, 2, 2),
             ('n1', 3, 'tcp_retransmit_skb', 'ipv4', '127.0.0.1', '127.0.0.1', 1, 2, 1),
             ('n1', 4, 'tcp_retransmit_skb', 'ipv4', '10.0.0.2', '192.168.9.9', 1, 2, 1);
  )sql")
                  .ok());
  auto side = LoadSideEvents(*db, {});
  ASSERT_TRUE(side.ok()) << side.error().message();
  ASSERT_EQ(side->retransmits.size(), 3u);
  int n0 = side->NodeIndex("n0"), n1 = side->NodeIndex("n1");
  // Ordered by time: loopback on n1 (no peer), unknown peer, then n0 -> n1 with 2 segments.
  EXPECT_EQ(side->retransmits[0].src, n1);
  EXPECT_EQ(side->retransmits[0].dst, -1);
  EXPECT_EQ(side->retransmits[1].src, n1);
  EXPECT_EQ(side->retransmits[1].dst, -1);
  EXPECT_EQ(side->retransmits[2].src, n0);
  EXPECT_EQ(side->retransmits[2].dst, n1);
  EXPECT_EQ(side->retransmits[2].segments, 2);
  EXPECT_EQ(side->retransmits_without_peer, 2);
}

TEST(SideEventsTest, OneRetransmitSeenByTwoRecordersCountsOnce) {
  auto db = rs::Db::Open(":memory:", rs::Db::Mode::kCreate);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(rs::CreateSchema(*db, rs::DbKind::kMerged).ok());
  ASSERT_TRUE(db->Exec(R"sql(
    INSERT INTO interfaces VALUES ('n0', 'eth0', 'ipv4', '10.0.0.1', 24, 1),
                                  ('n1', 'eth0', 'ipv4', '10.0.0.2', 24, 2);
    INSERT INTO tcp_events(node, timestamp_ns, event, family, saddr, daddr, sport, dport, seq)
      VALUES ('n0', 1000, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 5, 6, 42),
             ('n1', 1300, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 5, 6, 42),
             ('n0', 900000000, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 5, 6, 42);
  )sql")
                  .ok());
  auto side = LoadSideEvents(*db, {});
  ASSERT_TRUE(side.ok()) << side.error().message();
  EXPECT_EQ(side->retransmits.size(), 2u);  // the RTO-later retry is a new retransmit
  EXPECT_EQ(side->retransmits_duplicate, 1);
}

TEST(SideEventsTest, BlockIoOfTheNodesOwnProcessesWinsOverGlobalRows) {
  auto db = rs::Db::Open(":memory:", rs::Db::Mode::kCreate);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(rs::CreateSchema(*db, rs::DbKind::kMerged).ok());
  ASSERT_TRUE(db->Exec(R"sql(
    INSERT INTO processes(node, pid) VALUES ('n0', 10), ('n1', 20);
    INSERT INTO block_events(node, timestamp_ns, duration_ns, dev, op, bytes, pid)
      VALUES ('n0', 100, 50, '7:0', 'read', 4096, 10),
             ('n0', 500, 50, '7:0', 'read', 4096, 20),
             ('n1', 100, 50, '7:0', 'read', 4096, 10),
             ('n1', 500, 50, '7:0', 'read', 4096, 20),
             ('n2', 700, 10, '8:0', 'write', 4096, 99);
  )sql")
                  .ok());
  auto side = LoadSideEvents(*db, {});
  ASSERT_TRUE(side.ok()) << side.error().message();
  ASSERT_EQ(side->block["n0"].size(), 1u);
  EXPECT_EQ(side->block["n0"][0].start, 100);
  ASSERT_EQ(side->block["n1"].size(), 1u);
  EXPECT_EQ(side->block["n1"][0].start, 500);
  ASSERT_EQ(side->block["n2"].size(), 1u);  // no known processes: everything it recorded
}

// Retransmits between two endpoints of one node (a busy host's timer retransmits on its own
// loopback or bridge) crossed no link: they are left out of the network attribution, which
// they used to tilt towards that node (counted as sender, receiver and destination).
TEST(NetworkTest, RetransmitsWithinOneNodeAreNotAttributed) {
  SideEvents side;
  side.nodes = {"n0", "n1", "n2"};
  for (int i = 0; i < 12; ++i) side.retransmits.push_back({100 + i, 0, 0, 1});
  for (int i = 0; i < 4; ++i) side.retransmits.push_back({200 + i, 1, 2, 1});
  side.retransmits.push_back({300, 2, 1, 1});
  CollectiveData data;
  NetworkCandidate c = AttributeRetransmits(side, data);
  EXPECT_EQ(c.segments_total, 5);
  EXPECT_EQ(c.segments_same_node, 12);
  EXPECT_NE(c.node, "n0");
  EXPECT_EQ(c.segments_touching, 5);
  EXPECT_NE(NetworkEvidence(c).summary.find("12 more between endpoints of one node"),
            std::string::npos);
  // Only same-node retransmits: no network candidate at all.
  side.retransmits.resize(12);
  c = AttributeRetransmits(side, data);
  EXPECT_TRUE(c.node.empty());
  EXPECT_EQ(c.segments_total, 0);
}

// High confidence needs the retransmits in at least 40% of the collectives: packet loss on a
// link slows most of them; the timer retransmits of a busy host land in a few.
TEST(NetworkTest, RetransmitsInAFewCollectivesAreNotHighConfidence) {
  CollectiveData data;
  for (int i = 0; i < 10; ++i) {
    Collective g;
    g.seq = i;
    g.end = 2;  // two participants: matched
    g.last_entry = i * 1000;
    g.last_exit = i * 1000 + 500;
    data.collectives.push_back(g);
  }
  auto attribute = [&](int collectives_hit) {
    SideEvents side;
    side.nodes = {"n0", "n1", "n2"};
    for (int i = 0; i < 12; ++i) {  // n0 -> n1, inside the first `collectives_hit` windows
      side.retransmits.push_back({(i % collectives_hit) * 1000 + 100 + i, 0, 1, 1});
    }
    std::sort(side.retransmits.begin(), side.retransmits.end(),
              [](const Retransmit& a, const Retransmit& b) { return a.ts < b.ts; });
    return AttributeRetransmits(side, data);
  };
  NetworkCandidate few = attribute(3);
  EXPECT_EQ(few.node, "n1");
  EXPECT_EQ(few.collectives_affected, 3);
  EXPECT_EQ(few.confidence, "medium");
  NetworkCandidate many = attribute(4);
  EXPECT_EQ(many.collectives_affected, 4);
  EXPECT_EQ(many.confidence, "high");
  EXPECT_GT(many.score, few.score);
}

}  // namespace
}  // namespace analyzer
