#include "analyzer/group_straggler.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "analyzer/report_test_util.h"

namespace rs::analyzer {
namespace {

// Four ranks, two per node: tensor-parallel groups {0, 1} (comm 1) and {2, 3} (comm 2), data-
// parallel groups {0, 2} (comm 3) and {1, 3} (comm 4). Each step: the tp all-reduces, then the
// dp ones; every call of a collective ends together on the devices.
struct Job {
  std::vector<NcclCall> calls;
  void Call(int32_t p, uint64_t comm, int64_t seq, int64_t start, int64_t end) {
    NcclCall c;
    c.participant = p;
    c.comm = comm;
    c.seq = seq;
    c.op = "ALL_REDUCE";
    c.ts = start - 5;
    c.dur = 1;
    c.device = DeviceOp{start - 5, start, end, 0, "completed", std::nullopt};
    calls.push_back(c);
  }
  // Per step s: each rank's arrival after the group's base time in tp and in dp.
  template <typename TpLate, typename DpLate>
  void Steps(int64_t n, TpLate tp, DpLate dp) {
    for (int64_t s = 0; s < n; ++s) {
      const int64_t t = s * 100'000;
      for (int32_t r = 0; r < 4; ++r) {
        Call(r, r < 2 ? 1 : 2, s, t + tp(r, s), t + 5'000);
        Call(r, r % 2 == 0 ? 3 : 4, s, t + 10'000 + dp(r, s), t + 15'000);
      }
    }
  }
  CollectiveData Data() {
    CollectiveData data;
    AddParticipant(data, "a", 100, 0, "");
    AddParticipant(data, "a", 101, 1, "");
    AddParticipant(data, "b", 102, 2, "");
    AddParticipant(data, "b", 103, 3, "");
    testing::GroupCalls(data, calls);
    return data;
  }
};

// A few microseconds of jitter that differs per rank and step.
int64_t Jitter(int32_t r, int64_t s) { return ((s * 37 + r * 11) % 50); }

std::vector<Straggler> Named(Job& job) {
  CollectiveData data = job.Data();
  const std::vector<GroupView> groups = GroupStats(data);
  return GroupStragglers(data, groups, ParticipantStats(data), {}, SideEvents{}, CallSemantics{},
                         {});
}

TEST(GroupStragglerTest, ARankLaterInEachOfItsGroupsIsNamed) {
  Job job;
  job.Steps(
      20, [](int32_t r, int64_t s) { return (r == 0 ? 400 : 0) + Jitter(r, s); },
      [](int32_t r, int64_t s) { return (r == 0 ? 300 : 0) + Jitter(r, s); });
  std::vector<Straggler> named = Named(job);
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].rank, 0);
  // Its groups rest on device waits: that reading assumes the ranks leave together.
  EXPECT_EQ(named[0].confidence, Confidence::kMedium);
  EXPECT_EQ(named[0].arrival_basis, "device_waits");
  auto groups = std::find_if(named[0].evidence.begin(), named[0].evidence.end(),
                             [](const Evidence& e) { return e.kind == "groups"; });
  ASSERT_NE(groups, named[0].evidence.end());
  EXPECT_NE(groups->summary.find("(ranks 0-1)"), std::string::npos) << groups->summary;
  EXPECT_NE(groups->summary.find("(ranks 0, 2)"), std::string::npos) << groups->summary;
  EXPECT_NE(named[0].summary.find("each of its 2 communicators"), std::string::npos);
}

TEST(GroupStragglerTest, TwoSlowRanksInDifferentGroupsAreBothNamed) {
  Job job;
  job.Steps(
      20, [](int32_t r, int64_t s) { return (r == 0 || r == 3 ? 400 : 0) + Jitter(r, s); },
      [](int32_t r, int64_t s) { return (r == 0 || r == 3 ? 300 : 0) + Jitter(r, s); });
  std::vector<Straggler> named = Named(job);
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[0].rank, 0);
  EXPECT_EQ(named[1].rank, 3);
}

TEST(GroupStragglerTest, ANodeSlowAlikeIsNamedAsTheNode) {
  // Node a's two ranks (0 and 1) are equally slow: inside their tensor-parallel group neither is
  // later, but each is later than its data-parallel peer on node b.
  Job job;
  job.Steps(
      20, [](int32_t r, int64_t s) { return (r < 2 ? 400 : 0) + Jitter(r, s); },
      [](int32_t r, int64_t s) { return (r < 2 ? 300 : 0) + Jitter(r, s); });
  std::vector<Straggler> named = Named(job);
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].node, "a");
  EXPECT_FALSE(named[0].rank.has_value());
  EXPECT_EQ(named[0].ranks, (std::vector<int64_t>{0, 1}));
  EXPECT_NE(named[0].summary.find("every rank of it"), std::string::npos) << named[0].summary;
}

TEST(GroupStragglerTest, OneSlowRankDoesNotMakeItsNodeSlow) {
  // Rank 0 alone is slow: it is named, its node-mate (waiting for it in tp) is not.
  Job job;
  job.Steps(
      20, [](int32_t r, int64_t s) { return (r == 0 ? 400 : 0) + Jitter(r, s); },
      [](int32_t r, int64_t s) { return (r == 0 ? 300 : 0) + Jitter(r, s); });
  std::vector<Straggler> named = Named(job);
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].rank, 0);
}

TEST(GroupStragglerTest, LateInOneGroupAndEarlyInAnotherIsNoStraggler) {
  // Rank 0 is the latest of its tp group (its stage's work), the earliest of its dp group.
  Job job;
  job.Steps(
      20, [](int32_t r, int64_t s) { return (r == 0 ? 400 : 0) + Jitter(r, s); },
      [](int32_t r, int64_t s) { return (r == 0 ? 0 : 100) + Jitter(r, s); });
  EXPECT_TRUE(Named(job).empty());
}

TEST(GroupStragglerTest, FarLaterInOneGroupAndBarelyInAnotherIsNoStraggler) {
  // A healthy rank's role can make it much later in one group; in its other group it is later
  // only within noise: each group must show it.
  Job job;
  job.Steps(
      20, [](int32_t r, int64_t s) { return (r == 0 ? 400 : 0) + Jitter(r, s); },
      [](int32_t r, int64_t s) { return (r == 0 ? 8 : 0) + Jitter(r, s * (r + 2)); });
  CollectiveData data = job.Data();
  for (const GroupView& g : GroupStats(data)) {
    for (const GroupMember& m : g.members) {
      if (m.rank == 0) {
        EXPECT_GT(m.excess_ns, 0) << g.label;  // later in both
      }
    }
  }
  EXPECT_TRUE(Named(job).empty());
}

TEST(GroupStragglerTest, SlightlyLaterEverywhereWithinNoiseIsNoStraggler) {
  // Rank 0 is on average 10 us later in both groups, against jitter of 0-49 us: under three
  // standard errors in a group.
  Job job;
  job.Steps(
      20, [](int32_t r, int64_t s) { return (r == 0 ? 10 : 0) + Jitter(r, s * (r + 1)); },
      [](int32_t r, int64_t s) { return (r == 0 ? 10 : 0) + Jitter(r, s * (r + 2)); });
  CollectiveData data = job.Data();
  const std::vector<GroupView> groups = GroupStats(data);
  double most = 0;
  for (const GroupView& g : groups) {
    for (const GroupMember& m : g.members) {
      if (m.rank == 0) most = std::max(most, static_cast<double>(m.excess_ns) / m.excess_se_ns);
    }
  }
  EXPECT_GT(most, 0.5);  // later there, but not by enough
  EXPECT_LT(most, kGroupStragglerZ);
  EXPECT_TRUE(Named(job).empty());
}

TEST(GroupStragglerTest, AlreadyNamedRanksAreSkipped) {
  Job job;
  job.Steps(
      20, [](int32_t r, int64_t s) { return (r == 0 ? 400 : 0) + Jitter(r, s); },
      [](int32_t r, int64_t s) { return (r == 0 ? 300 : 0) + Jitter(r, s); });
  CollectiveData data = job.Data();
  const std::vector<GroupView> groups = GroupStats(data);
  EXPECT_TRUE(
      GroupStragglers(data, groups, ParticipantStats(data), {}, SideEvents{}, CallSemantics{}, {0})
          .empty());
}

TEST(GroupStragglerTest, AnUndeterminedVerdictGivesWayADeterminedOneStays) {
  Job job;
  job.Steps(
      20, [](int32_t r, int64_t s) { return (r == 0 ? 400 : 0) + Jitter(r, s); },
      [](int32_t r, int64_t s) { return (r == 0 ? 300 : 0) + Jitter(r, s); });
  CollectiveData data = job.Data();
  Report r;
  r.per_group = GroupStats(data);
  const std::vector<ArrivalStats> stats = ParticipantStats(data);
  for (bool determined : {false, true}) {
    SCOPED_TRACE(determined ? "determined" : "undetermined");
    LatenessCandidate lc;
    lc.participant = 0;
    lc.determined = determined;
    Straggler earlier;
    earlier.node = "a";
    earlier.rank = 0;
    earlier.summary = "the one-communicator verdict";
    std::vector<Straggler> ranked = {earlier};
    AddGroupStragglers(data, stats, SideEvents{}, CallSemantics{}, lc, r, ranked);
    ASSERT_EQ(ranked.size(), 1u);  // rank 0 once
    EXPECT_EQ(ranked[0].rank, 0);
    EXPECT_EQ(ranked[0].summary == "the one-communicator verdict", determined) << ranked[0].summary;
  }
}

}  // namespace
}  // namespace rs::analyzer
