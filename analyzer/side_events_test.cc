#include "analyzer/side_events.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>

#include "analyzer/network.h"
#include "analyzer/plots.h"

#include "rscore/schema.h"

namespace rs::analyzer {
namespace {

// An in-memory merged database holding the rows `sql` inserts.
rs::Db MergedDb(const std::string& sql) {
  auto db = rs::Db::Open(":memory:", rs::Db::Mode::kCreate);
  if (!db.ok()) std::abort();
  EXPECT_TRUE(rs::CreateSchema(*db, rs::DbKind::kMerged).ok());
  auto r = db->Exec(sql);
  EXPECT_TRUE(r.ok()) << r.error().message();
  return std::move(*db);
}

// Ten matched collectives, the i-th moving its data from i * 1000 to i * 1000 + 500.
CollectiveData TenCollectives() {
  CollectiveData data;
  for (int i = 0; i < 10; ++i) {
    Collective g;
    g.seq = i;
    g.end = 2;  // two participants: matched
    g.last_entry = g.last_arrival = i * 1000;
    g.last_exit = g.done = i * 1000 + 500;
    data.collectives.push_back(g);
  }
  return data;
}

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
  rs::Db db = MergedDb(R"sql(
    INSERT INTO interfaces VALUES ('n0', 'eth0', 'ipv4', '10.0.0.1', 24, 1),
                                  ('n1', 'eth0', 'ipv4', '10.0.0.2', 24, 1),
                                  ('n0', 'lo', 'ipv4', '127.0.0.1', 8, 1),
                                  ('n1', 'lo', 'ipv4', '127.0.0.1', 8, 1);
    INSERT INTO tcp_events(node, timestamp_ns, event, family, saddr, daddr, sport, dport, segments)
      VALUES ('n0', 5, 'tcp_retransmit_skb', 'ipv6', '::ffff:10.0.0.1', '::ffff:10.0.0.2', 1, 2, 2),
             ('n1', 3, 'tcp_retransmit_skb', 'ipv4', '127.0.0.1', '127.0.0.1', 1, 2, 1),
             ('n1', 4, 'tcp_retransmit_skb', 'ipv4', '10.0.0.2', '192.168.9.9', 1, 2, 1);
  )sql");
  auto side = LoadSideEvents(db, {});
  ASSERT_TRUE(side.ok()) << side.error().message();
  ASSERT_EQ(side->retransmits.size(), 3u);
  int n0 = side->NodeIndex("n0"), n1 = side->NodeIndex("n1");
  // Ordered by time: loopback on n1 (both ends n1: same node, left out of the attribution),
  // unknown peer, then n0 -> n1 with 2 segments.
  EXPECT_EQ(side->retransmits[0].src, n1);
  EXPECT_EQ(side->retransmits[0].dst, n1);
  EXPECT_TRUE(side->retransmits[0].same_node());
  EXPECT_FALSE(side->retransmits[0].link_repair());
  EXPECT_TRUE(side->retransmits[2].link_repair());
  EXPECT_EQ(side->retransmits[1].src, n1);
  EXPECT_EQ(side->retransmits[1].dst, -1);
  EXPECT_EQ(side->retransmits[2].src, n0);
  EXPECT_EQ(side->retransmits[2].dst, n1);
  EXPECT_EQ(side->retransmits[2].segments, 2);
  EXPECT_EQ(side->retransmits_without_peer, 1);
}

TEST(SideEventsTest, OneRetransmitSeenByTwoRecordersCountsOnce) {
  rs::Db db = MergedDb(R"sql(
    INSERT INTO interfaces VALUES ('n0', 'eth0', 'ipv4', '10.0.0.1', 24, 1),
                                  ('n1', 'eth0', 'ipv4', '10.0.0.2', 24, 2);
    INSERT INTO tcp_events(node, timestamp_ns, event, family, saddr, daddr, sport, dport, seq)
      VALUES ('n0', 1000, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 5, 6, 42),
             ('n1', 1300, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 5, 6, 42),
             ('n0', 900000000, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 5, 6, 42);
  )sql");
  auto side = LoadSideEvents(db, {});
  ASSERT_TRUE(side.ok()) << side.error().message();
  EXPECT_EQ(side->retransmits.size(), 2u);  // the RTO-later retry is a new retransmit
  EXPECT_EQ(side->retransmits_duplicate, 1);
  // An attempt not sent, seen by both recorders: one unsent attempt, one duplicate row.
  ASSERT_TRUE(db.Exec(R"sql(
    INSERT INTO tcp_events(node, timestamp_ns, event, family, saddr, daddr, sport, dport, seq, err)
      VALUES ('n0', 2000000000, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 5, 6, 43, -16),
             ('n1', 2000000300, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 5, 6, 43, -16);
  )sql")
                  .ok());
  side = LoadSideEvents(db, {});
  ASSERT_TRUE(side.ok()) << side.error().message();
  EXPECT_EQ(side->retransmits.size(), 2u);
  EXPECT_EQ(side->retransmits_failed, 1);
  EXPECT_EQ(side->retransmits_duplicate, 2);
}

// A tail-loss probe (congestion state Open, Disorder or CWR) is marked as one; a retransmission
// the kernel could not send (err != 0) is counted apart and left out; rows of a recorder that
// stored neither column count as repairs, as they always did.
TEST(SideEventsTest, ProbesAreMarkedAndUnsentRetransmissionsLeftOut) {
  rs::Db db = MergedDb(R"sql(
    INSERT INTO interfaces VALUES ('n0', 'eth0', 'ipv4', '10.0.0.1', 24, 1),
                                  ('n1', 'eth0', 'ipv4', '10.0.0.2', 24, 2);
    INSERT INTO tcp_events(node, timestamp_ns, event, family, saddr, daddr, sport, dport, seq,
                           ca_state, err)
      VALUES ('n0', 1, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 5, 6, 1, 'Open', 0),
             ('n0', 2, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 5, 6, 2, 'Recovery', 0),
             ('n0', 3, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 5, 6, 3, 'Loss', -16),
             ('n0', 4, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 5, 6, 4, 'CWR', NULL),
             ('n0', 5, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 5, 6, 5, NULL, NULL);
  )sql");
  auto side = LoadSideEvents(db, {});
  ASSERT_TRUE(side.ok()) << side.error().message();
  ASSERT_EQ(side->retransmits.size(), 4u);
  EXPECT_EQ(side->retransmits_failed, 1);
  std::vector<bool> probe;
  for (const Retransmit& r : side->retransmits) probe.push_back(r.probe);
  EXPECT_EQ(probe, (std::vector<bool>{true, false, true, false}));
}

// A database written before ca_state and err existed: every row reads as a repair, as before.
TEST(SideEventsTest, TcpEventsWithoutTheNewColumnsReadAsRepairs) {
  rs::Db db = MergedDb(R"sql(
    ALTER TABLE tcp_events DROP COLUMN ca_state;
    ALTER TABLE tcp_events DROP COLUMN err;
    ALTER TABLE tcp_events DROP COLUMN dsack_dups;
    INSERT INTO interfaces VALUES ('n0', 'eth0', 'ipv4', '10.0.0.1', 24, 1),
                                  ('n1', 'eth0', 'ipv4', '10.0.0.2', 24, 2);
    INSERT INTO tcp_events(node, timestamp_ns, event, family, saddr, daddr, sport, dport, seq)
      VALUES ('n0', 1, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 5, 6, 1),
             ('n0', 2, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 5, 6, 2);
  )sql");
  auto side = LoadSideEvents(db, {});
  ASSERT_TRUE(side.ok()) << side.error().message();
  ASSERT_EQ(side->retransmits.size(), 2u);
  EXPECT_EQ(side->retransmits_failed, 0);
  EXPECT_TRUE(side->retransmits[0].link_repair());
  EXPECT_TRUE(side->retransmits[1].link_repair());
  EXPECT_EQ(side->dsack_unknown_connections, 1);
  EXPECT_EQ(side->dsack_connections, 0);
}

// What the D-SACK count of a connection grew by between two of its retransmits answers the
// retransmits before: those whose every segment the receiver reported twice are needless (no
// repair), latest first; a partly answered one, the last ones (nothing read the count after
// them), those of another connection and those without a count stay repairs. Rows as the test
// bed's runs without a fault record them (a 45-segment send repaired in Recovery, D-SACKed).
TEST(SideEventsTest, RetransmitsTheReceiverHadAlreadyAreNotRepairs) {
  rs::Db db = MergedDb(R"sql(
    INSERT INTO interfaces VALUES ('n0', 'eth0', 'ipv4', '10.0.0.1', 24, 1),
                                  ('n1', 'eth0', 'ipv4', '10.0.0.2', 24, 2);
    INSERT INTO tcp_events(node, timestamp_ns, event, family, saddr, daddr, sport, dport, seq,
                           segments, ca_state, err, dsack_dups, netns)
      VALUES
        -- connection A: 1 and 2 answered by the 47 segments counted at 4; 4 is the last
        ('n0', 1, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 5, 6, 100, 2, 'Loss', 0, 7, 9),
        ('n0', 2, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 5, 6, 200, 45, 'Recovery', 0, 7, 9),
        ('n0', 3, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 5, 6, 300, 1, 'Loss', -11, 7, 9),
        ('n0', 4, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 5, 6, 400, 1, 'Recovery', 0, 54, 9),
        -- connection B: 3 segments answered of the 4 of 5 (partly: a repair), latest first
        ('n0', 5, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 7, 8, 100, 4, 'Recovery', 0, 0, 9),
        ('n0', 6, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 7, 8, 200, 1, 'Recovery', 0, 0, 9),
        ('n0', 7, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 7, 8, 300, 1, 'Recovery', 0, 2, 9),
        -- connection C: no count recorded
        ('n0', 8, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 9, 8, 100, 1, 'Recovery', 0, NULL, 9),
        ('n0', 9, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 9, 8, 200, 1, 'Recovery', 0, NULL, 9);
  )sql");
  auto side = LoadSideEvents(db, {});
  ASSERT_TRUE(side.ok()) << side.error().message();
  ASSERT_EQ(side->retransmits.size(), 8u);  // the unsent one left out
  std::vector<bool> needless;
  for (const Retransmit& r : side->retransmits) needless.push_back(r.needless);
  EXPECT_EQ(needless, (std::vector<bool>{true, true, false, false, true, false, false, false}));
  EXPECT_FALSE(side->retransmits[0].link_repair());
  EXPECT_TRUE(side->retransmits[3].link_repair());
  EXPECT_EQ(side->dsack_connections, 2);
  EXPECT_EQ(side->dsack_unknown_connections, 1);
}

TEST(SideEventsTest, BlockIoOfTheNodesOwnProcessesWinsOverGlobalRows) {
  rs::Db db = MergedDb(R"sql(
    INSERT INTO processes(node, pid) VALUES ('n0', 10), ('n1', 20);
    INSERT INTO block_events(node, timestamp_ns, duration_ns, dev, op, bytes, pid)
      VALUES ('n0', 100, 50, '7:0', 'read', 4096, 10),
             ('n0', 500, 50, '7:0', 'read', 4096, 20),
             ('n1', 100, 50, '7:0', 'read', 4096, 10),
             ('n1', 500, 50, '7:0', 'read', 4096, 20),
             ('n2', 700, 10, '8:0', 'write', 4096, 99);
  )sql");
  auto side = LoadSideEvents(db, {});
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

// Tail-loss probes are sent when an ACK is late, which a busy receiver causes: a node with many
// of them and no repairs is not blamed, and the probes are named in the evidence of the node
// that has repairs.
TEST(NetworkTest, TailLossProbesAreNotAttributed) {
  CollectiveData data = TenCollectives();
  SideEvents side;
  side.nodes = {"n0", "n1", "n2"};
  for (int i = 0; i < 10; ++i) {  // probes n0 -> n1 in every collective
    Retransmit r{i * 1000 + 100, 0, 1, 4};
    r.probe = true;
    side.retransmits.push_back(r);
  }
  NetworkCandidate c = AttributeRetransmits(side, data);
  EXPECT_TRUE(c.node.empty());
  EXPECT_EQ(c.segments_total, 0);
  EXPECT_EQ(c.segments_probe, 40);
  // Repairs of segments n2 sends to n0, two in each of half of the collectives: high.
  for (int i = 0; i < 10; i += 2) {
    side.retransmits.push_back({i * 1000 + 200, 2, 0, 3});
    side.retransmits.push_back({i * 1000 + 300, 2, 0, 3});
  }
  std::sort(side.retransmits.begin(), side.retransmits.end(),
            [](const Retransmit& a, const Retransmit& b) { return a.ts < b.ts; });
  c = AttributeRetransmits(side, data);
  EXPECT_EQ(c.node, "n0");  // destination of the repairs weighs more than their sender
  EXPECT_EQ(c.repairs_total, 10);
  EXPECT_EQ(c.segments_total, 30);
  EXPECT_EQ(c.collectives_affected, 5);
  EXPECT_EQ(c.confidence, Confidence::kHigh);
  EXPECT_NE(NetworkEvidence(c).summary.find("40 more were tail-loss probes"), std::string::npos);
}

// Copies the receivers reported as duplicates (D-SACK) blame no link, however many: a node
// with only those is no candidate, and the evidence of one with repairs names them.
TEST(NetworkTest, NeedlessCopiesAreNotAttributed) {
  CollectiveData data = TenCollectives();
  SideEvents side;
  side.nodes = {"n0", "n1", "n2"};
  for (int i = 0; i < 10; ++i) {
    Retransmit r{i * 1000 + 100, 0, 1, 45};
    r.needless = true;
    side.retransmits.push_back(r);
  }
  NetworkCandidate c = AttributeRetransmits(side, data);
  EXPECT_TRUE(c.node.empty());
  EXPECT_EQ(c.repairs_total, 0);
  EXPECT_EQ(c.segments_needless, 450);
  side.retransmits.push_back({9300, 2, 0, 1});
  c = AttributeRetransmits(side, data);
  EXPECT_EQ(c.node, "n0");
  EXPECT_EQ(c.repairs_total, 1);
  EXPECT_EQ(c.confidence, Confidence::kLow);
  EXPECT_NE(NetworkEvidence(c).summary.find("450 more the receivers reported as received twice"),
            std::string::npos);
}

// Attribution counts repairs, not segments: two repairs of a whole 64 KiB send (45 segments
// each, as a busy host without loss produces) are not a medium finding, however many segments.
TEST(NetworkTest, AFewLargeRepairsAreNotMediumConfidence) {
  CollectiveData data = TenCollectives();
  SideEvents side;
  side.nodes = {"n0", "n1", "n2"};
  side.retransmits = {{100, 1, 0, 45}, {3100, 1, 0, 45}, {5100, 2, 0, 1}};
  NetworkCandidate c = AttributeRetransmits(side, data);
  EXPECT_EQ(c.node, "n0");  // the destination of all three
  EXPECT_EQ(c.repairs_touching, 3);
  EXPECT_EQ(c.segments_touching, 91);
  EXPECT_EQ(c.collectives_affected, 3);
  EXPECT_EQ(c.confidence, Confidence::kLow);
}

// The report's retransmit plot shows what the network cause weighs: repairs between nodes, for
// both ends. Probes and retransmits within one node are not drawn; with only those, no plot.
TEST(PlotsTest, RetransmitSeriesHoldsRepairsBetweenNodesOnly) {
  SideEvents side;
  side.nodes = {"n0", "n1", "n2"};
  Retransmit probe{1000, 0, 1, 4};
  probe.probe = true;
  side.retransmits = {probe, {2000, 2, 2, 7}};
  CollectiveData data;
  EXPECT_TRUE(BuildPlots(data, side, 0, 6000).retransmits.empty());
  side.retransmits.push_back({3000, 1, 2, 3});
  Plots p = BuildPlots(data, side, 0, 6000);
  std::map<std::string, double> sum;
  for (const NodeSeries& s : p.retransmits) {
    sum[s.node] += 0;  // every node has a line, with or without points
    for (const auto& [t, v] : s.points) sum[s.node] += v;
  }
  EXPECT_EQ(sum.size(), 3u);
  EXPECT_EQ(sum["n0"], 0);
  EXPECT_EQ(sum["n1"], 3);
  EXPECT_EQ(sum["n2"], 3);
}

// The plots span the collectives, not the whole recording: a recording of 0..100 us whose
// collectives run from 40 to 49.5 us puts every column inside that window (in recording time),
// and a repair at 45 us lands in the column that holds 45 us.
TEST(PlotsTest, PlotsSpanTheCollectivesNotTheRecording) {
  CollectiveData data;
  data.participants = {{"n0", 10, 0, "", 0, 0}, {"n1", 11, 1, "", 0, 0}};
  for (int i = 0; i < 10; ++i) {
    Collective g;
    g.seq = i;
    g.begin = data.calls.size();
    for (int32_t who : {0, 1}) {
      NcclCall c;
      c.participant = who;
      c.seq = i;
      c.op = "AllReduce";
      c.ts = c.arrival = 40'000 + i * 1000 + who * 100;
      c.dur = 500 - who * 100;
      data.calls.push_back(c);
    }
    g.end = data.calls.size();
    g.first_entry = g.first_arrival = 40'000 + i * 1000;
    g.last_entry = g.last_arrival = 40'000 + i * 1000 + 100;
    g.last_exit = g.done = 40'000 + i * 1000 + 500;
    data.collectives.push_back(g);
  }
  SideEvents side;
  side.nodes = {"n0", "n1"};
  side.retransmits = {{45'000, 0, 1, 2}};
  Plots p = BuildPlots(data, side, 0, 100'000);
  ASSERT_FALSE(p.lateness.column_start_ns.empty());
  EXPECT_EQ(p.time_zero_ns, 0);
  EXPECT_GE(p.lateness.column_start_ns.front(), 39'000);
  EXPECT_LE(p.lateness.column_start_ns.front(), 40'000);
  EXPECT_GE(p.lateness.column_start_ns.back() + p.bin_ns, 49'500);
  EXPECT_LE(p.lateness.column_start_ns.back() + p.bin_ns, 51'000);
  for (const NodeSeries& s : p.retransmits) {
    for (const auto& [t, v] : s.points) {
      EXPECT_LE(t, 45'000) << s.node;
      EXPECT_GT(t + p.bin_ns, 45'000) << s.node;
    }
  }
}

// A collective still in flight at the end (a hang) keeps the span open to the recording's end:
// the stall is what the plots must show.
TEST(PlotsTest, AHangKeepsThePlotsOpenToTheRecordingsEnd) {
  CollectiveData data;
  data.participants = {{"n0", 10, 0, "", 0, 0}, {"n1", 11, 1, "", 0, 0}};
  for (int i = 0; i < 3; ++i) {
    Collective g;
    g.seq = i;
    g.begin = data.calls.size();
    for (int32_t who : {0, 1}) {
      NcclCall c;
      c.participant = who;
      c.seq = i;
      c.op = "AllReduce";
      c.ts = c.arrival = 40'000 + i * 1000;
      c.dur = i < 2 ? 500 : -1;
      data.calls.push_back(c);
    }
    g.end = data.calls.size();
    g.first_entry = g.first_arrival = g.last_entry = g.last_arrival = 40'000 + i * 1000;
    g.last_exit = g.done = i < 2 ? 40'000 + i * 1000 + 500 : -1;
    data.collectives.push_back(g);
  }
  Plots p = BuildPlots(data, SideEvents{}, 0, 100'000);
  EXPECT_LE(p.lateness.column_start_ns.front(), 40'000);
  EXPECT_GE(p.lateness.column_start_ns.front(), 39'000);
  EXPECT_GE(p.lateness.column_start_ns.back() + p.bin_ns, 100'000);
}

// High confidence needs repairs in at least 25% of the collectives: packet loss on a link
// repeats in the collectives that cross it; the few repairs of a busy host land in a few.
// Medium needs the collectives with repairs to have taken longer (or too few to tell).
TEST(NetworkTest, RetransmitsInAFewCollectivesAreNotHighConfidence) {
  CollectiveData data = TenCollectives();
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
  NetworkCandidate few = attribute(2);
  EXPECT_EQ(few.node, "n1");
  EXPECT_EQ(few.collectives_affected, 2);
  // Not medium either: the collectives with the repairs took no longer than the others.
  EXPECT_FALSE(few.slowed || few.too_few_to_tell);
  EXPECT_EQ(few.confidence, Confidence::kLow);
  NetworkCandidate many = attribute(3);
  EXPECT_EQ(many.collectives_affected, 3);
  EXPECT_EQ(many.confidence, Confidence::kHigh);
  EXPECT_GT(many.score, few.score);
}

}  // namespace
}  // namespace rs::analyzer
