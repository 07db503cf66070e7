#include "analyzer/collectives.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include "analyzer/causes.h"
#include "analyzer/device_arrival.h"
#include "analyzer/report_test_util.h"

#include "rscore/schema.h"

namespace rs::analyzer {
namespace {

class CollectivesTest : public ::testing::Test {
 public:
  void SetUp() override {
    auto db = rs::Db::Open(":memory:", rs::Db::Mode::kCreate);
    ASSERT_TRUE(db.ok());
    db_ = std::move(db).value();
    ASSERT_TRUE(rs::CreateSchema(db_, rs::DbKind::kBundle).ok());
  }
  void Call(const char* node, int pid, int rank, int64_t seq, int64_t ts, int64_t dur,
            const char* op = "ALL_REDUCE", int64_t nranks = 3, int64_t comm = 77) {
    auto st = db_.Prepare(
        "INSERT INTO nccl_events(node, timestamp_ns, duration_ns, pid, tid, op, rank, nranks,"
        " comm_id_hash, seq, count, datatype, state) VALUES (?,?,?,?,?,?,?,?,?,?,10,'float32',?)");
    ASSERT_TRUE(st.ok());
    st->Bind(1, node).Bind(2, ts).Bind(4, pid).Bind(5, pid).Bind(6, op).Bind(7, rank);
    st->Bind(8, nranks).Bind(9, comm).Bind(10, seq);
    if (dur >= 0) st->Bind(3, dur);
    st->Bind(11, dur >= 0 ? "complete" : "in_flight");
    ASSERT_TRUE(st->Run().ok());
  }
  rs::Db db_;
};

// Four nodes of one rank, 40 collectives 100 ms apart, each arrival +-2 ms of noise: node c
// `before_ns` against the others before collective 30 and `after_ns` from it on.
void ChangingNode(CollectivesTest& t, int64_t before_ns, int64_t after_ns) {
  uint64_t x = 11;
  auto noise = [&x] {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((x >> 33) % 4'000'001) - 2'000'000;
  };
  const char* nodes[] = {"a", "b", "c", "d"};
  for (int64_t k = 0; k < 40; ++k) {
    const int64_t base = 100'000'000 * (k + 1);
    for (int n = 0; n < 4; ++n) {
      const int64_t shift = n != 2 ? 0 : k < 30 ? before_ns : after_ns;
      t.Call(nodes[n], n + 1, n, k, base + 10'000'000 + shift + noise(), 1'000'000, "ALL_REDUCE",
             4);
    }
  }
}

TEST_F(CollectivesTest, SendsAndReceivesLoadWithTheirPeerAndDeviceTimes) {
  Call("a", 1, 0, 0, 1000, 500, "ALL_REDUCE", 2);
  Call("b", 2, 1, 0, 1100, 400, "ALL_REDUCE", 2);
  ASSERT_TRUE(db_.Exec("INSERT INTO nccl_events(node, timestamp_ns, duration_ns, pid, tid, op,"
                       " rank, nranks, comm_id_hash, seq, peer, count, datatype, state) VALUES"
                       " ('a', 2000, 10, 1, 1, 'SEND', 0, 2, 88, 1, 1, 64, 'bfloat16', 'complete'),"
                       " ('b', 2005, -1, 2, 2, 'RECV', 1, 2, 88, 1, 0, 64, 'bfloat16',"
                       "  'in_flight'),"
                       " ('c', 2005, 10, 9, 9, 'RECV', 1, 2, 88, 1, 0, 64, 'bfloat16', 'complete')")
                  .ok());
  ASSERT_TRUE(db_.Exec("INSERT INTO gpu_ops(node, timestamp_ns, pid, op, rank, nranks,"
                       " comm_id_hash, seq, peer, device_start_ns, device_end_ns, clock_error_ns,"
                       " state) VALUES ('a', 2001, 1, 'SEND', 0, 2, 88, 1, 1, 2100, 2600, 7,"
                       " 'completed')")
                  .ok());
  auto data = LoadCollectives(db_);
  ASSERT_TRUE(data.ok()) << data.error().message();
  // c's process calls no collective: it has no participant, its receive is left out.
  ASSERT_EQ(data->p2p.size(), 2u);
  std::sort(data->p2p.begin(), data->p2p.end(),
            [](const NcclCall& x, const NcclCall& y) { return x.ts < y.ts; });
  const NcclCall& send = data->p2p[0];
  EXPECT_EQ(send.op, "SEND");
  EXPECT_EQ(send.comm, 88u);
  EXPECT_EQ(send.seq, 1);
  EXPECT_EQ(send.peer, 1);
  EXPECT_EQ(send.rank, 0);
  EXPECT_EQ(send.nranks, 2);
  EXPECT_EQ(send.count, 64);
  EXPECT_EQ(send.datatype, "bfloat16");
  EXPECT_EQ(send.dur, 10);
  ASSERT_TRUE(send.device.has_value());
  EXPECT_EQ(send.device->start_ns, 2100);
  EXPECT_EQ(send.device->end_ns, 2600);
  EXPECT_EQ(send.device->clock_error_ns, 7);
  EXPECT_EQ(send.device->state, "completed");
  const NcclCall& recv = data->p2p[1];
  EXPECT_EQ(recv.op, "RECV");
  EXPECT_EQ(recv.peer, 0);
  EXPECT_TRUE(recv.in_flight());
  EXPECT_FALSE(recv.device.has_value());
}

TEST_F(CollectivesTest, NodesArePairedWithTheOthersInEachCollective) {
  // Four nodes of one rank; per collective k: a at base, b +100, d +200, c +200 + x[k].
  const int64_t x[] = {1000, 1200, 800, 1000, 1000};
  for (int64_t k = 0; k < 5; ++k) {
    const int64_t base = 10'000 * (k + 1) + 37 * k * k;  // the job's pace varies; pairs do not
    Call("a", 1, 0, k, base, 5'000, "ALL_REDUCE", 4);
    Call("b", 2, 1, k, base + 100, 5'000, "ALL_REDUCE", 4);
    Call("c", 3, 2, k, base + 200 + x[k], 5'000, "ALL_REDUCE", 4);
    Call("d", 4, 3, k, base + 200, 5'000, "ALL_REDUCE", 4);
  }
  auto data = LoadCollectives(db_);
  ASSERT_TRUE(data.ok()) << data.error().message();
  auto nodes = NodeStats(*data);
  ASSERT_EQ(nodes.size(), 4u);
  ASSERT_EQ(nodes[2].node, "c");
  // c minus the others' median (b's 100): 200 + x - 100; its deviations 0, 200, -200, 0, 0
  // give a sample deviation of sqrt(80000 / 4) = 141.4 and an error of 141.4 / sqrt(5) = 63.
  EXPECT_EQ(nodes[2].paired.collectives, 5);
  EXPECT_EQ(nodes[2].paired.excess_ns, 1100);
  EXPECT_EQ(nodes[2].paired.noise_ns, 63);
  // a minus the others' median (d's 200), the same in each: no error.
  EXPECT_EQ(nodes[0].paired.excess_ns, -200);
  EXPECT_EQ(nodes[0].paired.noise_ns, 0);
  // c is the latest of 4 in all 5: chance 5 x 1/4 = 1.25, variance 5 x 3/16, z = 3.75 / 0.968.
  EXPECT_EQ(nodes[2].paired.latest, 5);
  EXPECT_NEAR(nodes[2].paired.latest_z, 3.873, 0.001);
  EXPECT_EQ(nodes[0].paired.latest, 0);
  EXPECT_TRUE(NodeLatenessExcess(nodes, "c").later());
  EXPECT_FALSE(NodeLatenessExcess(nodes, "a").later());
  EXPECT_FALSE(NodeLatenessExcess(nodes, "b").later());  // 100 - 200: earlier
}

TEST_F(CollectivesTest, EachGroupNamesItsLatestMemberAndRanksAddUpAcrossGroups) {
  // Rank 1 (node b) is in both communicators, 100 ns behind the other member of each; its call
  // in the other communicator ended well before each arrival, so all of it is its own.
  for (int64_t k = 0; k < 3; ++k) {
    const int64_t t = 100'000 * (k + 1);
    Call("a", 1, 0, k, t, 10, "ALL_REDUCE", 2, 77);
    Call("b", 2, 1, k, t + 100, 10, "ALL_REDUCE", 2, 77);
    Call("c", 3, 2, k, t + 500, 10, "ALL_REDUCE", 2, 88);
    Call("b", 2, 1, k, t + 600, 10, "ALL_REDUCE", 2, 88);
  }
  auto data = LoadCollectives(db_);
  ASSERT_TRUE(data.ok()) << data.error().message();
  std::vector<GroupView> groups = GroupStats(*data);
  ASSERT_EQ(groups.size(), 2u);
  for (const GroupView& g : groups) {
    EXPECT_EQ(g.collectives, 3);
    EXPECT_EQ(g.basis, "arrivals");  // no device times
    ASSERT_EQ(g.members.size(), 2u);
    EXPECT_EQ(g.members[0].rank, std::optional<int64_t>(1)) << g.label;
    EXPECT_EQ(g.members[0].excess_ns, 100);
    EXPECT_EQ(g.members[0].excess_se_ns, 0);
    EXPECT_EQ(g.members[0].last_count, 3);
    EXPECT_EQ(g.members[0].median_lateness_ns, 100);
    EXPECT_EQ(g.members[1].excess_ns, -100);
  }
  EXPECT_EQ(groups[0].label, "communicator 0x000000000000004d (ranks 0-1)");
  std::vector<RankAcrossGroups> across = AcrossGroups(groups);
  ASSERT_EQ(across.size(), 3u);
  EXPECT_EQ(across[0].rank, std::optional<int64_t>(1));
  EXPECT_EQ(across[0].groups, 2);
  EXPECT_EQ(across[0].latest_in, 2);
  EXPECT_EQ(across[0].excess_total_ns, 600);  // 100 in each of 3 collectives of 2 groups
  EXPECT_EQ(across[1].latest_in, 0);
  EXPECT_EQ(across[1].excess_total_ns, 0);
}

NodeExcess Excess(int64_t excess, int64_t noise, int64_t collectives, int64_t latest = 0,
                  double z = 0) {
  NodeExcess e;
  e.excess_ns = excess;
  e.noise_ns = noise;
  e.collectives = collectives;
  e.latest = latest;
  e.latest_z = z;
  return e;
}

// A series of n collectives 1 ms apart: noise of +-sd (a fixed pseudo-random sequence), and
// `shift` added from collective `from` on.
std::pair<std::vector<int64_t>, std::vector<int64_t>> Series(size_t n, int64_t sd, size_t from,
                                                             int64_t shift, uint64_t seed = 7) {
  std::vector<int64_t> at, v;
  uint64_t x = seed;
  for (size_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const int64_t noise = static_cast<int64_t>((x >> 33) % static_cast<uint64_t>(2 * sd + 1)) - sd;
    at.push_back(1'000'000 * static_cast<int64_t>(i));
    v.push_back(noise + (i >= from ? shift : 0));
  }
  return {at, v};
}

TEST(OnsetTest, AStepUpIsFoundWhereItBegan) {
  auto [at, v] = Series(200, 500'000, 120, 2'000'000);
  auto o = FindOnset(at, v);
  ASSERT_TRUE(o);
  EXPECT_NEAR(static_cast<double>(o->at_ns), 120e6, 3e6);  // within 3 collectives
  EXPECT_EQ(o->before + o->after, 200);
  EXPECT_NEAR(static_cast<double>(o->after_ns - o->before_ns), 2e6, 0.3e6);
  EXPECT_GE(o->t, 5);
}

TEST(OnsetTest, AStationarySeriesHasNone) {
  // A constant bias (a pipeline stage that always does more) is no onset, nor is noise alone.
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    auto [at, v] = Series(300, 2'000'000, 0, 700'000, seed);
    EXPECT_FALSE(FindOnset(at, v)) << "seed " << seed;
  }
}

TEST(OnsetTest, HeavyTailsAloneMakeNone) {
  // A few collectives 50 ms late in the second half (stalls elsewhere) do not make a change.
  auto [at, v] = Series(200, 500'000, 0, 0);
  for (size_t i : {130u, 150u, 171u, 190u}) v[i] += 50'000'000;
  EXPECT_FALSE(FindOnset(at, v));
}

TEST(OnsetTest, AStepDownOrTooFewCollectivesIsNone) {
  auto [at, v] = Series(200, 500'000, 100, -3'000'000);
  EXPECT_FALSE(FindOnset(at, v));  // it became earlier
  auto [at2, v2] = Series(15, 100'000, 8, 5'000'000);
  EXPECT_FALSE(FindOnset(at2, v2));  // under 8 on a side
  // Order by time, not by position: the same step, given in reverse, is found alike.
  auto [at3, v3] = Series(200, 500'000, 120, 2'000'000);
  std::reverse(at3.begin(), at3.end());
  std::reverse(v3.begin(), v3.end());
  auto o = FindOnset(at3, v3);
  ASSERT_TRUE(o);
  EXPECT_NEAR(static_cast<double>(o->at_ns), 120e6, 3e6);
}

TEST(NodeExcessTest, LaterNeedsThreeStandardErrorsOrTheLatestMoreOftenThanChance) {
  EXPECT_FALSE((Excess(100, 50, 10).later()));  // two errors: chance
  EXPECT_TRUE((Excess(151, 50, 10).later()));
  EXPECT_FALSE((Excess(5000, 0, 1).later()));  // one collective: no error to weigh it by
  EXPECT_TRUE((Excess(5000, 0, 2).later()));
  EXPECT_FALSE((Excess(1, 0, 40).later()));  // nothing above none
  EXPECT_FALSE((NodeExcess().later()));
  // Heavy tails: two errors, but the latest of 3 nodes in 37 of 64 (z 4.2).
  EXPECT_TRUE((Excess(16'300'000, 7'750'000, 64, 37, 4.2).later()));
  EXPECT_FALSE((Excess(16'300'000, 7'750'000, 64, 25, 1.0).later()));
  EXPECT_TRUE((Excess(51'000'000, 28'000'000, 34, 16, 2.97).later()));  // 1 %: z >= 2.33
  EXPECT_FALSE((Excess(51'000'000, 28'000'000, 34, 12, 2.2).later()));
  EXPECT_FALSE((Excess(-100, 10, 64, 40, 5.0).later()));  // latest often, yet earlier on average
}

TEST_F(CollectivesTest, ANodeThatBecameLaterIsWeighedFromItsOnsetOn) {
  // Early by 2 ms for 30 collectives, then 6 ms late for 10: over the whole recording its mean
  // excess is about none and it was the latest no more often than chance; from the onset on it
  // is later beyond doubt.
  ChangingNode(*this, -2'000'000, 6'000'000);
  auto data = LoadCollectives(db_);
  ASSERT_TRUE(data.ok()) << data.error().message();
  const NodeExcess c = NodeLatenessExcess(NodeStats(*data), "c");
  EXPECT_EQ(c.collectives, 40);
  EXPECT_FALSE(c.PairedExcess::later())
      << c.excess_ns << " +- " << c.noise_ns << " z " << c.latest_z;
  ASSERT_TRUE(c.onset);
  EXPECT_EQ(c.onset->after, 10);
  EXPECT_EQ(c.onset->since.collectives, 10);
  EXPECT_EQ(c.onset->since.latest, 10);
  EXPECT_NEAR(static_cast<double>(c.onset->since.excess_ns), 6e6, 1.5e6);
  EXPECT_TRUE(c.later_since_onset());
  EXPECT_TRUE(c.later());
  EXPECT_FALSE(NodeLatenessExcess(NodeStats(*data), "a").later());
}

TEST_F(CollectivesTest, ANodeThatCameOnTimeAfterBeingEarlyIsNotLater) {
  // Early by 4 ms, then level with the others: a change, but nothing late after it.
  ChangingNode(*this, -4'000'000, 0);
  auto data = LoadCollectives(db_);
  ASSERT_TRUE(data.ok()) << data.error().message();
  const NodeExcess c = NodeLatenessExcess(NodeStats(*data), "c");
  EXPECT_FALSE(c.later_since_onset());
  EXPECT_FALSE(c.later());
}

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

// A call whose device ran [start, end) (device basis), or whose blocking host call did (host
// basis: no device op).
NcclCall Timed(int32_t p, uint64_t comm, int64_t seq, int64_t start, int64_t end, bool device) {
  NcclCall c;
  c.participant = p;
  c.comm = comm;
  c.seq = seq;
  c.op = "ALL_REDUCE";
  c.ts = device ? start - 5 : start;
  c.dur = device ? 1 : end - start;
  if (device) c.device = DeviceOp{start - 5, start, end, 0, "completed", std::nullopt};
  return c;
}

// Grouped by (comm, seq) as LoadCollectives does; participants 0 on node a, 1 and 2 on node b.
CollectiveData Grouped(std::vector<NcclCall> calls) {
  CollectiveData data;
  AddParticipant(data, "a", 100, 0, "");
  AddParticipant(data, "b", 101, 1, "");
  AddParticipant(data, "b", 102, 2, "");
  testing::GroupCalls(data, std::move(calls));
  return data;
}

// Rank 0 is slow in group {0, 1}; rank 1, held there until 600, enters group {1, 2} at 610,
// 510 after rank 2: 500 of that inherited from rank 0, 10 its own. `comm2` is group {1, 2}'s
// communicator (its sequence numbers follow group {0, 1}'s where both share one).
std::vector<NcclCall> Cascade(uint64_t comm2, bool device) {
  std::vector<NcclCall> calls;
  for (int64_t s = 0; s < 3; ++s) {
    int64_t t = s * 10000;
    int64_t seq2 = comm2 == 1 ? 2 * s + 1 : s;
    calls.push_back(Timed(0, 1, comm2 == 1 ? 2 * s : s, t + 500, t + 600, device));
    calls.push_back(Timed(1, 1, comm2 == 1 ? 2 * s : s, t, t + 600, device));
    calls.push_back(Timed(1, comm2, seq2, t + 610, t + 700, device));
    calls.push_back(Timed(2, comm2, seq2, t + 100, t + 700, device));
  }
  return calls;
}

TEST(OwnLatenessTest, LatenessInheritedFromAnotherCommunicatorIsNotOwn) {
  for (bool device : {true, false}) {
    SCOPED_TRACE(device ? "device basis" : "host basis");
    CollectiveData data = Grouped(Cascade(2, device));
    ASSERT_EQ(data.collectives.size(), 6u);
    auto stats = ParticipantStats(data);
    ASSERT_EQ(stats.size(), 3u);
    EXPECT_EQ(stats[0].median_lateness_ns, 500);
    EXPECT_EQ(stats[0].last_count, 3);
    // Rank 1: 0 in group {0, 1}, 610 - max(100, 600) = 10 of its own in group {1, 2}, where it
    // arrived last but mostly for rank 0: not counted last.
    EXPECT_EQ(stats[1].median_lateness_ns, 10);
    EXPECT_EQ(stats[1].p90_lateness_ns, 10);
    EXPECT_EQ(stats[1].last_count, 0);
    EXPECT_EQ(stats[2].median_lateness_ns, 0);
    EXPECT_EQ(stats[2].last_count, 0);
    if (device) {
      // Waits (longest device duration minus its own): rank 0 500; rank 1 510 capped at 10.
      EXPECT_EQ(stats[0].median_wait_lateness_ns, 500);
      EXPECT_EQ(stats[0].wait_last_count, 3);
      EXPECT_EQ(stats[1].median_wait_lateness_ns, 10);
      EXPECT_EQ(stats[1].p90_wait_lateness_ns, 10);
      EXPECT_EQ(stats[1].wait_last_count, 0);
    } else {
      EXPECT_EQ(stats[1].wait_collectives, 0);
    }
    auto nodes = NodeStats(data);
    ASSERT_EQ(nodes.size(), 2u);
    EXPECT_EQ(nodes[0].median_lateness_ns, 500);
    EXPECT_EQ(nodes[0].last_count, 3);
    EXPECT_EQ(nodes[1].median_lateness_ns, 10);  // max of ranks 1 and 2
    EXPECT_EQ(nodes[1].last_count, 0);
  }
}

TEST(OwnLatenessTest, ASendOrReceiveHoldsItsRankLikeAnotherCommunicator) {
  // Rank 1 enters group {1, 2} at 610, 510 after rank 2, having waited until 600 in a receive
  // (a pipeline stage waiting for the previous one): 10 of it are its own.
  for (bool device : {true, false}) {
    SCOPED_TRACE(device ? "device basis" : "host basis");
    std::vector<NcclCall> calls;
    std::vector<NcclCall> p2p;
    for (int64_t s = 0; s < 3; ++s) {
      int64_t t = s * 10000;
      calls.push_back(Timed(1, 2, s, t + 610, t + 700, device));
      calls.push_back(Timed(2, 2, s, t + 100, t + 700, device));
      p2p.push_back(Timed(1, 5, s, t, t + 600, device));
      p2p.back().op = "RECV";
    }
    CollectiveData plain = Grouped(calls);
    EXPECT_EQ(ParticipantStats(plain)[1].median_lateness_ns, 510);
    CollectiveData data = Grouped(calls);
    data.p2p = p2p;
    auto stats = ParticipantStats(data);
    EXPECT_EQ(stats[1].median_lateness_ns, 10);
    EXPECT_EQ(stats[1].last_count, 0);  // last, but mostly for whoever it received from
    // A receive that only enqueued (its return, no device end) holds nothing.
    if (!device) {
      for (NcclCall& c : data.p2p) c.enqueue = true;
      EXPECT_EQ(ParticipantStats(data)[1].median_lateness_ns, 510);
    }
  }
}

TEST(OwnLatenessTest, WorkAfterALateReleaseIsOwnOnlyBeyondTheOthers) {
  // Both members of group {1, 2} come from a receive (another point of the program is not
  // compared): rank 2's ended at 100, rank 1's at 600 (its sender was late); each then works 100
  // and arrives, at 200 and 700. Rank 1 is 500 later, none of it its own. With 300 of work
  // instead of 100 (a slower device), 200 are.
  for (int64_t work : {100, 300}) {
    SCOPED_TRACE("rank 1 works " + std::to_string(work));
    std::vector<NcclCall> calls;
    std::vector<NcclCall> p2p;
    for (int64_t s = 0; s < 3; ++s) {
      int64_t t = s * 10000;
      calls.push_back(Timed(1, 2, s, t + 600 + work, t + 1000, true));
      calls.push_back(Timed(2, 2, s, t + 200, t + 1000, true));
      p2p.push_back(Timed(1, 5, s, t, t + 600, true));
      p2p.push_back(Timed(2, 6, s, t, t + 100, true));
    }
    for (NcclCall& c : p2p) c.op = "RECV";
    CollectiveData data = Grouped(calls);
    data.p2p = p2p;
    auto stats = ParticipantStats(data);
    EXPECT_EQ(stats[1].median_lateness_ns, work - 100);
    EXPECT_EQ(stats[1].median_wait_lateness_ns, work - 100);
    EXPECT_EQ(stats[2].median_lateness_ns, 0);
  }
}

TEST(OwnLatenessTest, OthersWorkIsNotGivenToAMemberComingFromTheGroupsOwnCall) {
  // Group {0, 1, 2}, two collectives a step, the first ending at 1000. Before the second: rank 0
  // comes from a receive ending at 1050 and works 1000 (arrives at 2050); rank 2 comes from the
  // group's first collective and arrives first, at 1200; rank 1 comes from it too and arrives at
  // 1500, 300 after rank 2, though a receive of its own had ended at 600. Rank 1's 300 are its
  // own: rank 0's work after its receive is no measure of rank 1's after another call.
  std::vector<NcclCall> calls;
  std::vector<NcclCall> p2p;
  for (int64_t s = 0; s < 3; ++s) {
    int64_t t = s * 10000;
    for (int32_t p = 0; p < 3; ++p) calls.push_back(Timed(p, 2, 2 * s, t + 100, t + 1000, true));
    calls.push_back(Timed(0, 2, 2 * s + 1, t + 2050, t + 2100, true));
    calls.push_back(Timed(1, 2, 2 * s + 1, t + 1500, t + 2100, true));
    calls.push_back(Timed(2, 2, 2 * s + 1, t + 1200, t + 2100, true));
    p2p.push_back(Timed(0, 5, s, t + 1010, t + 1050, true));
    p2p.push_back(Timed(1, 6, s, t + 500, t + 600, true));
  }
  for (NcclCall& c : p2p) c.op = "RECV";
  CollectiveData data = Grouped(calls);
  data.p2p = p2p;
  auto stats = ParticipantStats(data);
  EXPECT_EQ(stats[1].p90_lateness_ns, 300);  // samples 0, 300 per step
  EXPECT_EQ(stats[0].p90_lateness_ns, 850);  // 2050 - max(1200, 1050): nobody else's work known
}

TEST(OwnLatenessTest, AnEnqueuesReturnHoldsNothing) {
  // Host calls that only enqueue (no device times): rank 1's call in group {0, 1} returned at
  // once in truth, so its entry in group {1, 2} is its own lateness, all 510 of it.
  std::vector<NcclCall> calls = Cascade(2, false);
  for (NcclCall& c : calls) c.enqueue = true;
  CollectiveData data = Grouped(std::move(calls));
  auto stats = ParticipantStats(data);
  ASSERT_EQ(stats.size(), 3u);
  EXPECT_EQ(stats[1].median_lateness_ns, 510);  // samples 0, 510 per step
  EXPECT_EQ(stats[1].last_count, 3);
}

TEST(OwnLatenessTest, OneCommunicatorKeepsPlainLateness) {
  // The same timings with both groups' calls in one communicator: nothing is discounted.
  CollectiveData data = Grouped(Cascade(1, true));
  ASSERT_EQ(data.collectives.size(), 6u);
  auto stats = ParticipantStats(data);
  ASSERT_EQ(stats.size(), 3u);
  EXPECT_EQ(stats[0].median_lateness_ns, 500);
  EXPECT_EQ(stats[0].last_count, 3);
  EXPECT_EQ(stats[1].median_lateness_ns, 510);  // samples 0, 510, 0, 510, 0, 510
  EXPECT_EQ(stats[1].last_count, 3);
  EXPECT_EQ(stats[1].median_wait_lateness_ns, 510);
  EXPECT_EQ(stats[1].wait_last_count, 3);
  auto nodes = NodeStats(data);
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[1].median_lateness_ns, 510);
  EXPECT_EQ(nodes[1].last_count, 3);
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
}  // namespace rs::analyzer
