// Late entries from Flight Recorder creation times (fr_lateness.h), on hand-built records.
#include "analyzer/fr_lateness.h"

#include <gtest/gtest.h>

namespace rs::analyzer {
namespace {

constexpr int64_t kMs = 1'000'000;

wait::Op Coll(size_t group, int64_t seq, int64_t created_ns) {
  wait::Op o;
  o.group = group;
  o.op = rs::NcclOp::kAllReduce;
  o.seq = seq;
  o.created_ns = created_ns;
  o.outcome = wait::Outcome::kCompleted;
  return o;
}

// Ranks 0-3; group 0 = tp {0,1}, group 1 = world {0..3}. Rank `slow` enters every collective
// `late` after the others; with `victim`, rank 0 also enters group 1's collectives late (it
// waited in group 0 just before) but not group 0's.
wait::Input Job(int64_t slow, int64_t late, bool victim, int steps = 5) {
  wait::Input in;
  in.groups = {{"tp", {0, 1}}, {"world", {0, 1, 2, 3}}};
  for (int64_t r = 0; r < 4; ++r) {
    wait::Rank rank;
    rank.rank = r;
    rank.recorded = true;
    for (int s = 1; s <= steps; ++s) {
      const int64_t base = s * 10'000 * kMs;
      const int64_t extra = r == slow ? late : 0;
      if (r < 2) rank.ops.push_back(Coll(0, s, base + extra + r));
      const int64_t wait = victim && r == 0 ? late : 0;
      rank.ops.push_back(Coll(1, s, base + 5'000 * kMs + extra + wait + r));
    }
    in.ranks.push_back(rank);
  }
  return in;
}

TEST(FrLateness, NamesTheRankLastInMostOfItsCollectives) {
  const FrLateness got = FindFrLateness(Job(3, 2'000 * kMs, false), /*one_clock=*/false);
  EXPECT_EQ(got.collectives, 10);
  EXPECT_EQ(got.floor_ns, kUnalignedFloorNs);
  ASSERT_EQ(got.late.size(), 1u);
  EXPECT_EQ(got.late[0].rank, 3);
  EXPECT_EQ(got.late[0].last, 5);
  EXPECT_EQ(got.late[0].collectives, 5);
  EXPECT_EQ(got.late[0].median_behind_ns, 2'000 * kMs + 2);  // +3 ns against rank 1's +1 ns
}

// Rank 0 is last in the world collectives only because it waited in tp just before: it is
// last in 5 of its 10 collectives, not more than half, and is not named.
TEST(FrLateness, AVictimLateInOneGroupOfTwoIsNotNamed) {
  EXPECT_TRUE(FindFrLateness(Job(-1, 2'000 * kMs, true), false).late.empty());
  // Late in both groups, it is.
  wait::Input in = Job(0, 2'000 * kMs, false);
  const FrLateness got = FindFrLateness(in, false);
  ASSERT_EQ(got.late.size(), 1u);
  EXPECT_EQ(got.late[0].rank, 0);
  EXPECT_EQ(got.late[0].last, 10);
}

TEST(FrLateness, UnderTheFloorAndTooFewCollectivesNameNobody) {
  // 50 ms is within what two hosts' clocks may differ by; counted on one clock.
  EXPECT_TRUE(FindFrLateness(Job(3, 50 * kMs, false), false).late.empty());
  ASSERT_EQ(FindFrLateness(Job(3, 50 * kMs, false), true).late.size(), 1u);
  EXPECT_TRUE(FindFrLateness(Job(3, 2'000 * kMs, false, 2), false).late.empty());
}

TEST(FrLateness, PointToPointAndUnrecordedRanksAreLeftOut) {
  wait::Input in = Job(3, 2'000 * kMs, false);
  in.ranks[3].recorded = false;
  EXPECT_TRUE(FindFrLateness(in, false).late.empty());
  in = Job(3, 2'000 * kMs, false);
  for (wait::Op& o : in.ranks[3].ops) o.p2p = true;
  EXPECT_TRUE(FindFrLateness(in, false).late.empty());
}

// Timed entries (TORCH_NCCL_ENABLE_TIMING): each member's kernel ran from when its stream
// reached the collective until the last member joined, plus the transfer. Rank `slow` reaches
// every collective `late` after the others, and its host clock runs `skew` off theirs.
wait::Input TimedJob(int64_t slow, int64_t late, int64_t skew) {
  wait::Input in = Job(slow, late, false);
  for (wait::Rank& r : in.ranks) {
    for (wait::Op& o : r.ops) {
      o.duration_ns = (r.rank == slow ? 0 : late) + 2 * kMs + r.rank * 1000;
      if (r.rank == slow) o.created_ns += skew;
    }
  }
  return in;
}

TEST(FrLateness, DeviceDurationsNameTheRankTheOthersWaitedForWhateverTheClocks) {
  // 20 ms late, under the unaligned floor, and its clock 5 s behind: entry times alone would
  // make it the first to arrive.
  const FrLateness got = FindFrLateness(TimedJob(3, 20 * kMs, -5'000 * kMs), false);
  EXPECT_EQ(got.by_duration, 10);
  ASSERT_EQ(got.late.size(), 1u);
  EXPECT_EQ(got.late[0].rank, 3);
  EXPECT_EQ(got.late[0].last, 5);
  EXPECT_EQ(got.late[0].by_duration, 5);
  EXPECT_EQ(got.late[0].median_behind_ns, 20 * kMs - 2000);  // rank 1's 22.001 ms vs its 2.003
  // A clock 5 s ahead instead of behind: the same.
  ASSERT_EQ(FindFrLateness(TimedJob(3, 20 * kMs, 5'000 * kMs), false).late.size(), 1u);
}

TEST(FrLateness, DurationsOfAHealthyJobNameNobody) {
  // Nobody late; one host's clock 3 s ahead, which entry times would read as lateness.
  const FrLateness got = FindFrLateness(TimedJob(2, 0, 3'000 * kMs), false);
  EXPECT_EQ(got.by_duration, 10);
  EXPECT_TRUE(got.late.empty());
  // Durations within a millisecond of each other are noise, not waiting.
  EXPECT_TRUE(FindFrLateness(TimedJob(3, kMs / 2, 0), true).late.empty());
}

TEST(FrLateness, AMemberWithoutADurationTurnsTheCollectiveBackToEntryTimes) {
  wait::Input in = TimedJob(3, 20 * kMs, 0);
  for (wait::Op& o : in.ranks[0].ops) o.duration_ns.reset();  // rank 0 untimed
  FrLateness got = FindFrLateness(in, false);
  EXPECT_EQ(got.by_duration, 0);  // every collective has rank 0 in it
  EXPECT_TRUE(got.late.empty());  // 20 ms by entry times is under the 100 ms floor
  got = FindFrLateness(in, true);
  ASSERT_EQ(got.late.size(), 1u);
  EXPECT_EQ(got.late[0].by_duration, 0);
  // A duration of an entry that did not complete is no kernel's whole run.
  in = TimedJob(3, 20 * kMs, 0);
  for (wait::Op& o : in.ranks[3].ops) o.outcome = wait::Outcome::kPending;
  EXPECT_EQ(FindFrLateness(in, false).by_duration, 5);  // the tp collectives, without rank 3
}

// Four ranks in three groups, as a rank of a 3D-parallel job is: tp {0,1}, ep {0,2}, dp {0,3}.
// Each step rank 0 issues a tp, then an ep, then a dp collective. Rank 1 reaches tp `tp_late`
// after rank 0; rank 0 then reaches ep and dp `own` plus however long it waited in tp later
// than ranks 2 and 3, who are on time.
wait::Input ThreeGroups(int64_t tp_late, int64_t own, int steps = 6) {
  wait::Input in;
  in.groups = {{"tp", {0, 1}}, {"ep", {0, 2}}, {"dp", {0, 3}}};
  for (int64_t r = 0; r < 4; ++r) {
    wait::Rank rank;
    rank.rank = r;
    rank.recorded = true;
    in.ranks.push_back(rank);
  }
  for (int s = 1; s <= steps; ++s) {
    const int64_t base = s * 10'000 * kMs;
    in.ranks[0].ops.push_back(Coll(0, s, base));
    in.ranks[1].ops.push_back(Coll(0, s, base + tp_late));
    const int64_t behind = tp_late + own;  // rank 0 goes on when rank 1 joined tp
    in.ranks[0].ops.push_back(Coll(1, s, base + 1'000 * kMs + behind));
    in.ranks[2].ops.push_back(Coll(1, s, base + 1'000 * kMs));
    in.ranks[0].ops.push_back(Coll(2, s, base + 2'000 * kMs + behind));
    in.ranks[3].ops.push_back(Coll(2, s, base + 2'000 * kMs));
  }
  return in;
}

// Rank 0 is last in 12 of its 18 collectives, every one of them because it waited for rank 1 in
// tp just before (ep), or was late for that reason in the one before (dp): named is rank 1, and
// rank 0 is listed as traced to it.
TEST(FrLateness, LatenessInheritedFromAnotherGroupIsFollowedToItsRoot) {
  const FrLateness got = FindFrLateness(ThreeGroups(500 * kMs, 0), false);
  EXPECT_EQ(got.collectives, 18);
  ASSERT_EQ(got.late.size(), 1u);
  EXPECT_EQ(got.late[0].rank, 1);
  EXPECT_EQ(got.late[0].last, 6);
  ASSERT_EQ(got.traced.size(), 1u);
  EXPECT_EQ(got.traced[0].rank, 0);
  EXPECT_EQ(got.traced[0].inherited, 12);
  EXPECT_EQ(got.traced[0].collectives, 18);
  EXPECT_EQ(got.traced[0].root, 1);
}

// A wait much shorter than the lateness after it explains little of it: rank 0, 2 s late in ep
// and dp on its own, waited 0.3 s in tp and is named; so is rank 1.
TEST(FrLateness, AShortWaitDoesNotExcuseALongLateness) {
  const FrLateness got = FindFrLateness(ThreeGroups(300 * kMs, 2'000 * kMs), false);
  ASSERT_EQ(got.late.size(), 2u);
  EXPECT_EQ(got.late[0].rank, 0);
  EXPECT_EQ(got.late[0].last, 12);
  EXPECT_EQ(got.late[0].inherited, 0);
  EXPECT_EQ(got.late[1].rank, 1);
  EXPECT_TRUE(got.traced.empty());
}

// The chain runs through ranks: rank 1 was itself late in tp because it waited for rank 4 in a
// group {1,4} just before; the root of rank 0's lateness is rank 4, three links back.
TEST(FrLateness, TheChainRunsThroughEveryRankThatOnlyWaited) {
  wait::Input in = ThreeGroups(500 * kMs, 0);
  in.groups.push_back({"tp2", {1, 4}});
  wait::Rank four;
  four.rank = 4;
  four.recorded = true;
  in.ranks.push_back(four);
  for (int s = 1; s <= 6; ++s) {
    const int64_t base = s * 10'000 * kMs;
    // Rank 1 issues tp2 before tp (inserted before its tp entry; order is by entry time).
    in.ranks[1].ops.push_back(Coll(3, s, base - 1'000 * kMs));
    in.ranks[4].ops.push_back(Coll(3, s, base - 1'000 * kMs + 500 * kMs));
  }
  const FrLateness got = FindFrLateness(in, false);
  ASSERT_EQ(got.late.size(), 1u);
  EXPECT_EQ(got.late[0].rank, 4);
  // Rank 1, last in 6 of its 12 (tp), is not more than half late and not listed.
  ASSERT_EQ(got.traced.size(), 1u);
  EXPECT_EQ(got.traced[0].rank, 0);
  EXPECT_EQ(got.traced[0].root, 4);
  EXPECT_EQ(got.traced[0].inherited, 12);
}

}  // namespace
}  // namespace rs::analyzer
