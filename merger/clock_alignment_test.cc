#include "merger/clock_alignment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace rs::merge {
namespace {

// A hand-built cluster: node k's clock reads true + offset[k] + drift[k]*1e-6*(true - t0).
struct Sim {
  std::vector<int64_t> offset;
  std::vector<double> drift_ppm;
  int ranks_per_node = 2;
  int64_t t0 = 1'000'000'000'000;
  std::mt19937_64 rng{7};

  int64_t Local(int node, int64_t t) const {
    return t + offset[node] + std::llround(drift_ppm[node] * 1e-6 * (t - t0));
  }
  int64_t U(int64_t hi) { return hi <= 0 ? 0 : static_cast<int64_t>(rng() % hi); }

  // One collective at true time t: entries jittered, exits after the last entry + transfer.
  // enqueue_only: every call returns `transfer` after its own entry (GPU-like, no rendezvous).
  Rendezvous Collective(int64_t t, int64_t jitter, int64_t transfer, int64_t exit_jitter,
                        bool enqueue_only = false) {
    int n = static_cast<int>(offset.size());
    std::vector<std::vector<std::pair<int64_t, int64_t>>> calls(n);
    int64_t last = 0;
    std::vector<int64_t> entry(n * ranks_per_node);
    for (auto& e : entry) {
      e = t + U(jitter);
      last = std::max(last, e);
    }
    for (int g = 0; g < n * ranks_per_node; ++g) {
      int64_t exit = enqueue_only ? entry[g] + transfer : last + transfer + U(exit_jitter);
      calls[g / ranks_per_node].emplace_back(entry[g], exit);
    }
    Rendezvous r;
    for (int k = 0; k < n; ++k) {
      NodeObservation o;
      o.node = k;
      o.max_entry_ns = INT64_MIN;
      o.min_exit_ns = INT64_MAX;
      std::vector<int64_t> exits;
      for (auto [en, ex] : calls[k]) {
        o.max_entry_ns = std::max(o.max_entry_ns, Local(k, en));
        o.min_exit_ns = std::min(o.min_exit_ns, Local(k, ex));
        exits.push_back(Local(k, ex));
      }
      std::sort(exits.begin(), exits.end());
      o.mid_exit_ns = exits[exits.size() / 2];
      r.nodes.push_back(o);
    }
    return r;
  }

  std::vector<NodeClock> Clocks(int64_t maxerror_ns) const {
    std::vector<NodeClock> c;
    for (size_t k = 0; k < offset.size(); ++k) {
      c.push_back(NodeClock{"n" + std::to_string(k), Local(static_cast<int>(k), t0), maxerror_ns});
    }
    return c;
  }

  // The true lead of node k over node ref at the anchor of `al`, and at local time `x`.
  double TrueOffsetAt(int k, int ref, int64_t x_local_k) const {
    double t = static_cast<double>(x_local_k - offset[k] - t0) / (1 + drift_ppm[k] * 1e-6) + t0;
    double lead_k = offset[k] + drift_ppm[k] * 1e-6 * (t - t0);
    double lead_ref = offset[ref] + drift_ppm[ref] * 1e-6 * (t - t0);
    return lead_k - lead_ref;
  }
};

TEST(PairConstraints, HandBuiltNumbers) {
  // Node b's clock is 1000 ns ahead. a: entry 100, exit 200; b: entry 1150, exit 1201.
  Rendezvous r;
  r.nodes = {NodeObservation{0, 100, 200, 200}, NodeObservation{1, 1150, 1201, 1201}};
  auto cs = PairConstraints({r}, 0, 1);
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_EQ(cs[0].lo_ns, 100 - 1201);
  EXPECT_EQ(cs[0].hi_ns, 200 - 1150);
  EXPECT_EQ(cs[0].point_ns, 200 - 1201);
  EXPECT_LE(cs[0].lo_ns, -1000);
  EXPECT_GE(cs[0].hi_ns, -1000);
  EXPECT_TRUE(PairConstraints({r}, 0, 2).empty());
}

TEST(EstimatePair, CentreOfTheIntersection) {
  // Three constraints; intersection [-10, 4]; the exit differences (7) lie outside it and do
  // not move the estimate: the centre -3, off by at most 7 wherever the truth lies inside.
  std::vector<PairConstraint> cs = {{1, -30, 4, 7}, {2, -10, 50, 7}, {3, -20, 10, 7}};
  PairEstimate e = EstimatePair(cs, 0);
  ASSERT_TRUE(e.usable) << e.note;
  EXPECT_DOUBLE_EQ(e.offset_ns, -3);
  EXPECT_NEAR(e.error_bound_ns, 7, 0.01);  // drift over 2 ns adds nothing measurable
  EXPECT_EQ(e.count, 3);
  EXPECT_EQ(e.drift_ppm, 0);
}

TEST(EstimatePair, EmptyIntervalIsAContradiction) {
  std::vector<PairConstraint> cs = {{1, 0, 10, 5}, {2, 20, 30, 25}, {3, 0, 10, 5}};
  PairEstimate e = EstimatePair(cs, 0);
  EXPECT_FALSE(e.usable);
  EXPECT_NE(e.note.find("contradict"), std::string::npos) << e.note;
}

TEST(EstimatePair, NoConstraints) {
  PairEstimate e = EstimatePair({}, 0);
  EXPECT_FALSE(e.usable);
  EXPECT_EQ(e.note, "no shared rendezvous");
}

TEST(AlignClocks, RecoversConstantOffsetsWithinBounds) {
  Sim sim;
  sim.offset = {0, 30'000'000, -50'000'000, 12'345};
  sim.drift_ppm = {0, 0, 0, 0};
  std::vector<Rendezvous> rz;
  for (int64_t i = 0; i < 60; ++i) {
    rz.push_back(sim.Collective(sim.t0 + i * 25'000'000, 200'000, 2'000'000, 20'000));
  }
  auto al = AlignClocks(sim.Clocks(16'000'000), rz);
  ASSERT_EQ(al.size(), 4u);
  EXPECT_EQ(al[0].method, "reference");
  EXPECT_EQ(al[0].offset_ns, 0);
  for (int k = 1; k < 4; ++k) {
    SCOPED_TRACE(k);
    EXPECT_EQ(al[k].method, "rendezvous") << al[k].note;
    EXPECT_EQ(al[k].rendezvous_count, 60);
    EXPECT_NEAR(al[k].offset_ns, sim.offset[k], 50'000);
    EXPECT_LE(std::abs(al[k].offset_ns - sim.offset[k]), al[k].error_bound_ns);
    EXPECT_EQ(al[k].drift_ppm, 0);
    // The bound comes from the constraints: roughly the transfer time, not the wall clock's.
    EXPECT_LT(al[k].error_bound_ns, 5'000'000);
    EXPECT_EQ(al[k].evidence, "blocking_call 60");
  }
}

TEST(AlignClocks, RecoversDrift) {
  Sim sim;
  sim.offset = {0, 3'000'000, -1'000'000};
  sim.drift_ppm = {0, 20, -8};
  std::vector<Rendezvous> rz;
  for (int64_t i = 0; i < 400; ++i) {  // 10 s of collectives
    rz.push_back(sim.Collective(sim.t0 + i * 25'000'000, 200'000, 2'000'000, 20'000));
  }
  auto al = AlignClocks(sim.Clocks(16'000'000), rz);
  for (int k = 1; k < 3; ++k) {
    SCOPED_TRACE(k);
    ASSERT_EQ(al[k].method, "rendezvous") << al[k].note;
    EXPECT_NEAR(al[k].drift_ppm, sim.drift_ppm[k], 1.0);
    for (int64_t t : {sim.t0, sim.t0 + 5'000'000'000, sim.t0 + 9'900'000'000}) {
      int64_t local = sim.Local(k, t);
      double truth = sim.TrueOffsetAt(k, 0, local);
      double est = static_cast<double>(local - al[k].Apply(local));
      EXPECT_NEAR(est, truth, 50'000) << "at t=" << t;
      EXPECT_LE(std::fabs(est - truth), al[k].error_bound_ns + 1.0);
      // Applying the alignment maps the node's reading back onto the reference clock.
      EXPECT_NEAR(static_cast<double>(al[k].Apply(local)), static_cast<double>(sim.Local(0, t)),
                  50'000);
    }
  }
}

TEST(AlignClocks, BoundHoldsForDriftTooSmallToDetect) {
  // Exits spread by milliseconds hide a 100 ppm drift; the offset estimate is then constant,
  // and its bound must still cover the true offset at every moment of the recording.
  Sim sim;
  sim.offset = {0, 1'000'000};
  sim.drift_ppm = {0, 100};
  std::vector<Rendezvous> rz;
  // A few tight rendezvous at the start pin the offset there to a few microseconds...
  for (int64_t i = 0; i < 4; ++i) {
    rz.push_back(sim.Collective(sim.t0 + i * 1'000'000, 0, 5'000, 0));
  }
  // ...the loose ones over 12 s cannot show the 1.2 ms the clock drifts meanwhile.
  for (int64_t i = 1; i < 120; ++i) {
    rz.push_back(sim.Collective(sim.t0 + i * 100'000'000, 20'000'000, 1'000'000, 5'000'000));
  }
  auto al = AlignClocks(sim.Clocks(16'000'000), rz);
  ASSERT_EQ(al[1].method, "rendezvous") << al[1].note;
  for (int64_t t = sim.t0; t <= sim.t0 + 12'000'000'000; t += 500'000'000) {
    int64_t local = sim.Local(1, t);
    double truth = sim.TrueOffsetAt(1, 0, local);
    double est = static_cast<double>(local - al[1].Apply(local));
    EXPECT_LE(std::fabs(est - truth), al[1].error_bound_ns + 1.0) << "at t0 + " << t - sim.t0;
  }
}

TEST(AlignClocks, EnqueueOnlyCallsFallBackToWallClock) {
  Sim sim;
  sim.offset = {0, 2'000'000, -3'000'000};
  sim.drift_ppm = {0, 0, 0};
  std::vector<Rendezvous> rz;
  for (int64_t i = 0; i < 50; ++i) {
    rz.push_back(sim.Collective(sim.t0 + i * 25'000'000, 200'000, 5'000, 0, true));
  }
  auto al = AlignClocks(sim.Clocks(8'000'000), rz);
  for (int k = 1; k < 3; ++k) {
    SCOPED_TRACE(k);
    EXPECT_EQ(al[k].method, "wall_clock") << al[k].note;
    EXPECT_EQ(al[k].offset_ns, 0);
    EXPECT_EQ(al[k].error_bound_ns, 16'000'000);  // maxerror of the node + of the reference
    EXPECT_LE(std::abs(sim.offset[k]), al[k].error_bound_ns);
    EXPECT_NE(al[k].note.find("wall clock"), std::string::npos);
  }
}

TEST(AlignClocks, ValidRendezvousWhoseExitsDoNotClusterStillAlign) {
  // Blocking collectives whose ranks leave milliseconds apart (a loaded machine): every
  // constraint holds, the exit differences just estimate nothing. The interval's centre is the
  // estimate; nothing falls back to the wall clock.
  Sim sim;
  sim.ranks_per_node = 1;
  sim.offset = {0, -41'000'000, 30'000'000};
  sim.drift_ppm = {0, 0, 0};
  std::vector<Rendezvous> rz;
  for (int64_t i = 0; i < 200; ++i) {
    rz.push_back(sim.Collective(sim.t0 + i * 25'000'000, 100'000, 20'000, 4'000'000));
  }
  auto al = AlignClocks(sim.Clocks(16'000'000'000), rz);
  for (int k = 1; k < 3; ++k) {
    SCOPED_TRACE(k);
    ASSERT_EQ(al[k].method, "rendezvous") << al[k].note;
    EXPECT_NE(al[k].note.find("interval centre"), std::string::npos) << al[k].note;
    EXPECT_LE(std::abs(al[k].offset_ns - sim.offset[k]), al[k].error_bound_ns);
    EXPECT_NEAR(al[k].offset_ns, sim.offset[k], 50'000);
    EXPECT_LT(al[k].error_bound_ns, 1'000'000);  // from the constraints, not 32 s
    EXPECT_EQ(al[k].evidence, "blocking_call 200");
  }
}

TEST(CentreOfExits, TwoModesGiveTheCentreOfTheGapWhateverTheirWeights) {
  // A pair's exit differences around a ring: +h when one rank arrived last, -h when the other
  // did, each with some wakeup noise. The median lies in the heavier mode; the gap's centre
  // stays on the truth (0) at any weighting.
  std::mt19937_64 rng(3);
  std::normal_distribution<double> noise(0, 15'000);
  for (double weight : {0.5, 0.6, 0.68}) {
    SCOPED_TRACE(weight);
    std::vector<double> v;
    for (int i = 0; i < 1000; ++i) {
      double h = i < weight * 1000 ? 60'000 : -60'000;
      v.push_back(h + noise(rng));
    }
    ExitCentre c = CentreOfExits(v);
    EXPECT_TRUE(c.between_modes);
    EXPECT_NEAR(c.value, 0, 15'000);
    if (weight > 0.55) {
      std::nth_element(v.begin(), v.begin() + 500, v.end());
      EXPECT_GT(v[500], 30'000);  // what the median would have said
    }
  }
}

TEST(CentreOfExits, OneModeOrFewPointsGiveTheMedian) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> noise(20'000, 40'000);
  std::vector<double> v;
  for (int i = 0; i < 2000; ++i) v.push_back(noise(rng));
  ExitCentre c = CentreOfExits(v);
  EXPECT_FALSE(c.between_modes);
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_DOUBLE_EQ(c.value, (sorted[999] + sorted[1000]) / 2);
  // Two clean modes, but too few differences to tell a gap from chance.
  std::vector<double> few;
  for (int i = 0; i < 60; ++i) few.push_back(i % 3 == 0 ? -50'000 + i : 50'000 + i);
  c = CentreOfExits(few);
  EXPECT_FALSE(c.between_modes);
  EXPECT_GT(c.value, 40'000);
  EXPECT_FALSE(CentreOfExits({}).between_modes);
}

TEST(EstimatePair, RingOrderExitsCentredBetweenTheirModes) {
  // Node a's rank leaves 50 us before node b's in 65% of the collectives (b arrived last) and
  // 50 us after in the rest; d = 3 ms. The estimate is the centre between the modes, not the
  // heavier mode.
  std::mt19937_64 rng(11);
  std::normal_distribution<double> noise(0, 10'000);
  std::vector<PairConstraint> cs;
  const int64_t d = 3'000'000;
  for (int i = 0; i < 600; ++i) {
    PairConstraint c;
    c.x_ns = 1'000'000'000 + i * 20'000'000LL;
    c.lo_ns = d - 2'000'000;
    c.hi_ns = d + 2'000'000;
    c.point_ns = d + (i % 20 < 13 ? -50'000 : 50'000) + std::llround(noise(rng));
    c.evidence = Evidence::kSyncAfter;
    cs.push_back(c);
  }
  PairEstimate e = EstimatePair(cs, 1'000'000'000);
  ASSERT_TRUE(e.usable) << e.note;
  EXPECT_NEAR(e.offset_ns, d, 10'000) << e.note;
  EXPECT_NE(e.note.find("exit modes' centre"), std::string::npos) << e.note;
  EXPECT_LE(std::abs(e.offset_ns - d), e.error_bound_ns);
}

TEST(EstimatePair, DriftSeparatesTheExitModesWhenWhoIsLastChangesAlongTheRecording) {
  // d drifts by 20 ppm over 12 s; the exit differences sit 60 us above or below it, above in 75%
  // of the first half's collectives and in 25% of the second's (another rank became the usual
  // last arrival). Least squares follows the weights (a slope about 7 ppm off); the line that
  // separates the modes does not.
  std::mt19937_64 rng(13);
  std::normal_distribution<double> noise(0, 12'000);
  const int64_t d = -41'000'000, anchor = 5'000'000'000;
  std::vector<PairConstraint> cs;
  for (int i = 0; i < 1200; ++i) {
    const int64_t x = anchor + i * 10'000'000LL;
    const double truth = d + 20e-6 * static_cast<double>(x - anchor);
    const bool above = (i < 600) == (i % 4 != 0);
    PairConstraint c;
    c.x_ns = x;
    c.lo_ns = std::llround(truth) - 3'000'000;
    c.hi_ns = std::llround(truth) + 3'000'000;
    c.point_ns = std::llround(truth + (above ? 60'000 : -60'000) + noise(rng));
    c.evidence = Evidence::kSyncAfter;
    cs.push_back(c);
  }
  PairEstimate e = EstimatePair(cs, anchor);
  ASSERT_TRUE(e.usable) << e.note;
  EXPECT_NE(e.note.find("linear drift fitted"), std::string::npos) << e.note;
  EXPECT_NEAR(e.drift_ppm, 20, 1) << e.note;
  EXPECT_NEAR(e.offset_ns, d, 10'000) << e.note;
}

TEST(SeparatingSlope, FindsTheSlopeThatLeavesTheWidestGap) {
  std::vector<double> u, y;
  for (int i = 0; i < 400; ++i) {
    u.push_back(i * 1e7);
    y.push_back(-3e-6 * u.back() + (i % 3 == 0 ? 50'000.0 : -50'000.0) + (i % 7) * 1'000.0);
  }
  EXPECT_NEAR(SeparatingSlope(u, y, -10e-6, 10e-6), -3e-6, 0.05e-6);
  // Confined to the range given.
  EXPECT_NEAR(SeparatingSlope(u, y, 1e-6, 10e-6), 1e-6, 0.05e-6);
  // A long recording (searched on a subsample) gives the same slope.
  u.clear();
  y.clear();
  for (int i = 0; i < 20000; ++i) {
    u.push_back(i * 2e5);
    y.push_back(7e-6 * u.back() + (i % 5 < 2 ? 50'000.0 : -50'000.0) + (i % 7) * 1'000.0);
  }
  EXPECT_NEAR(SeparatingSlope(u, y, 0, 20e-6), 7e-6, 0.05e-6);
}

TEST(PairConstraints, ExitsOfDifferentKindsGiveNoPoint) {
  Rendezvous r;
  r.nodes = {NodeObservation{0, 100, 200, 250, Evidence::kDevice},
             NodeObservation{1, 150, 400, 450, Evidence::kSyncAfter, true}};
  auto cs = PairConstraints({r}, 0, 1);
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_FALSE(cs[0].has_point);
  EXPECT_EQ(cs[0].evidence, Evidence::kSyncAfter);  // the weaker side's
  EXPECT_TRUE(cs[0].device_clock_unbounded);
  r.nodes[1].evidence = Evidence::kDevice;
  cs = PairConstraints({r}, 0, 1);
  EXPECT_TRUE(cs[0].has_point);
  EXPECT_EQ(cs[0].evidence, Evidence::kDevice);
}

TEST(EstimatePair, WithoutPointsTheCentreAndTheKindsCounted) {
  std::vector<PairConstraint> cs = {{1, -30, 4, 7, false, Evidence::kSyncAfter},
                                    {2, -10, 50, -2, false, Evidence::kDevice, true},
                                    {3, -20, 10, 0, false, Evidence::kCommInit}};
  PairEstimate e = EstimatePair(cs, 0);
  ASSERT_TRUE(e.usable) << e.note;
  EXPECT_DOUBLE_EQ(e.offset_ns, -3);  // the centre of [-10, 4], whatever the points say
  EXPECT_NE(e.note.find("no exits of one kind"), std::string::npos) << e.note;
  EXPECT_NE(e.note.find("1 rendezvous rest on device times without a conversion bound"),
            std::string::npos)
      << e.note;
  EXPECT_EQ(EvidenceSummary(e.by_evidence), "device 1, sync_after 1, comm_init 1");
}

TEST(AlignClocks, AroundAReferencePairThatContradictsItself) {
  // n1's constraints with the reference n0 are contradictory (one of them wrong), those with n2
  // are fine: n1 is aligned through n2.
  Sim sim;
  sim.offset = {0, 4'000'000, -7'000'000};
  sim.drift_ppm = {0, 0, 0};
  std::vector<Rendezvous> rz;
  for (int64_t i = 0; i < 40; ++i) {
    Rendezvous all = sim.Collective(sim.t0 + i * 25'000'000, 200'000, 2'000'000, 20'000);
    Rendezvous r01, r02, r12;
    r01.nodes = {all.nodes[0], all.nodes[1]};
    r02.nodes = {all.nodes[0], all.nodes[2]};
    r12.nodes = {all.nodes[1], all.nodes[2]};
    if (i == 7) r01.nodes[1].min_exit_ns = r01.nodes[1].max_entry_ns - 10'000'000;  // wrong
    rz.push_back(r01);
    rz.push_back(r02);
    rz.push_back(r12);
  }
  auto al = AlignClocks(sim.Clocks(16'000'000), rz, 0);
  ASSERT_EQ(al[2].method, "rendezvous") << al[2].note;
  ASSERT_EQ(al[1].method, "rendezvous") << al[1].note;
  EXPECT_NE(al[1].note.find("through node n2"), std::string::npos) << al[1].note;
  EXPECT_NEAR(al[1].offset_ns, sim.offset[1], 50'000);
  EXPECT_LE(std::abs(al[1].offset_ns - sim.offset[1]), al[1].error_bound_ns);
}

TEST(AlignClocks, ThroughAnIntermediateNode) {
  // n2 never meets the reference n0, only n1: its alignment composes n2->n1->n0.
  Sim sim;
  sim.offset = {0, 4'000'000, -7'000'000};
  sim.drift_ppm = {0, 0, 0};
  std::vector<Rendezvous> rz;
  for (int64_t i = 0; i < 40; ++i) {
    Rendezvous all = sim.Collective(sim.t0 + i * 25'000'000, 200'000, 2'000'000, 20'000);
    Rendezvous r01, r12;
    r01.nodes = {all.nodes[0], all.nodes[1]};
    r12.nodes = {all.nodes[1], all.nodes[2]};
    rz.push_back(r01);
    rz.push_back(r12);
  }
  // By default the most connected node (n1) is the reference.
  EXPECT_EQ(AlignClocks(sim.Clocks(16'000'000), rz)[1].method, "reference");
  auto al = AlignClocks(sim.Clocks(16'000'000), rz, 0);
  EXPECT_EQ(al[0].method, "reference");
  for (int k : {1, 2}) {
    SCOPED_TRACE(k);
    ASSERT_EQ(al[k].method, "rendezvous") << al[k].note;
    EXPECT_NEAR(al[k].offset_ns, sim.offset[k], 50'000);
    EXPECT_LE(std::abs(al[k].offset_ns - sim.offset[k]), al[k].error_bound_ns);
  }
  EXPECT_NE(al[2].note.find("through node n1"), std::string::npos) << al[2].note;
  // Bounds add up along the path.
  EXPECT_GE(al[2].error_bound_ns, al[1].error_bound_ns);
}

TEST(AlignClocks, NoRendezvousAndNoMaxerrorUsesTheKernelCeiling) {
  std::vector<NodeClock> nodes = {{"a", 0, -1}, {"b", 0, 1'000'000}};
  auto al = AlignClocks(nodes, {}, 0);
  EXPECT_EQ(al[0].method, "reference");
  EXPECT_EQ(al[1].method, "wall_clock");
  EXPECT_EQ(al[1].error_bound_ns, 16'000'000'000 + 1'000'000);
  EXPECT_NE(al[1].note.find("no shared rendezvous"), std::string::npos);
}

TEST(NodeAlignment, ApplyFormula) {
  NodeAlignment al;
  al.offset_ns = 1000;
  al.drift_ppm = 10;
  al.anchor_ns = 1'000'000;
  EXPECT_EQ(al.Apply(1'000'000), 999'000);
  EXPECT_EQ(al.Apply(1'000'000 + 1'000'000'000), 1'000'000 + 1'000'000'000 - 1000 - 10'000);
}

}  // namespace
}  // namespace rs::merge
