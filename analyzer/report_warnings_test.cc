// Warnings about clock bounds wider than the lateness a verdict compares across nodes, on
// reports built by hand (report_e2e_test.sh checks them on a merged recording).
#include "analyzer/report_warnings.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rs::analyzer {
namespace {

// Four nodes compared on host entries; node1's ranks 300 us later than the others' median.
Report FourNodes(int64_t node1_bound_ns) {
  Report r;
  for (int k = 0; k < 4; ++k) {
    const std::string node = "node" + std::to_string(k);
    ArrivalStats a;
    a.node = node;
    a.collectives = 40;
    a.median_lateness_ns = k == 1 ? 320'000 : 20'000;
    r.per_node.push_back(a);
    NodeClock c;
    c.node = node;
    c.error_bound_ns = k == 1 ? node1_bound_ns : 10'000;
    c.method = k == 0 ? "reference" : "rendezvous";
    r.clock.push_back(c);
  }
  return r;
}

// A verdict that rests on node1 being later than the others: CPU starvation of its ranks.
Straggler CpuVerdict() {
  Straggler s;
  s.node = "node1";
  s.cause = "cpu_contention";
  s.confidence = Confidence::kMedium;
  s.confidence_score = 0.55;
  s.summary = "node1: its ranks are starved of CPU";
  s.evidence.push_back(
      {"runq_share", "run-queue share", {{"runq_share", 0.4}, {"lateness_excess_ns", 300'000}}});
  return s;
}

TEST(ClockBoundWarnings, ABoundWiderThanTheComparedLatenessIsWarnedAboutAndLowersTheVerdict) {
  Report r = FourNodes(/*node1_bound_ns=*/1'000'000);
  r.stragglers.push_back(CpuVerdict());
  AddClockBoundWarnings(r);
  ASSERT_EQ(r.warnings.size(), 1u);
  const std::string& w = r.warnings[0];
  EXPECT_EQ(w.rfind("node node1: clock error bound +-1 ms is larger than the 300 us lateness "
                    "across nodes that the verdict (node1, cpu_contention) compares",
                    0),
            0u)
      << w;
  EXPECT_NE(w.find("cannot be ordered"), std::string::npos) << w;
  const Straggler& s = r.stragglers[0];
  EXPECT_EQ(s.confidence, Confidence::kLow);
  EXPECT_LE(s.confidence_score, TierScore(ScoreBasis::kNodeResource, Confidence::kLow, 1.0));
  EXPECT_EQ(s.clock_bound_ns, 1'000'000);
  EXPECT_NE(s.summary.find("inside node node1's clock error bound"), std::string::npos)
      << s.summary;
  ASSERT_EQ(s.evidence.back().kind, "clock");
  EXPECT_EQ(s.evidence.back().values.back().second, 300'000);
}

TEST(ClockBoundWarnings, BoundsNarrowerThanTheLatenessChangeNothing) {
  Report r = FourNodes(/*node1_bound_ns=*/50'000);
  r.stragglers.push_back(CpuVerdict());
  AddClockBoundWarnings(r);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings[0];
  EXPECT_EQ(r.stragglers[0].confidence, Confidence::kMedium);
  EXPECT_EQ(r.stragglers[0].evidence.size(), 1u);
}

TEST(ClockBoundWarnings, ClockFreeAndOneClockComparisonsDependOnNoBound) {
  Report r = FourNodes(/*node1_bound_ns=*/5'000'000);
  // On a device recording the resource findings were placed on the clock-free device waits.
  r.timing.device_collectives = 40;
  r.stragglers.push_back(CpuVerdict());
  Straggler hang;  // a hang culprit: what it did not do, no lateness
  hang.node = "node1";
  hang.cause = "hang";
  hang.confidence = Confidence::kHigh;
  r.stragglers.push_back(hang);
  Straggler mates;  // a rank later than the other ranks of its node, on their one host clock
  mates.node = "node1";
  mates.rank = 3;
  mates.cause = "compute";
  mates.arrival_basis = "host_entry";
  mates.confidence = Confidence::kHigh;
  mates.evidence.push_back({"lateness", "", {{"margin_ns", 400'000}}});
  mates.evidence.push_back({"clock", "", {{"clock_bound_ns", 5'010'000}, {"margin_ns", 400'000}}});
  r.stragglers.push_back(mates);
  AddClockBoundWarnings(r);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings[0];
  for (const Straggler& s : r.stragglers) EXPECT_NE(s.confidence, Confidence::kLow) << s.cause;
  EXPECT_FALSE(ComparedLateness(r.stragglers[0], /*waits_view=*/true));
  EXPECT_EQ(ComparedLateness(r.stragglers[0], /*waits_view=*/false).value_or(-1), 300'000);
  EXPECT_FALSE(ComparedLateness(hang, false));
  EXPECT_FALSE(ComparedLateness(mates, false));
}

TEST(ClockBoundWarnings, AnUndecidedLatenessVerdictIsNamedAndStaysUndetermined) {
  Report r = FourNodes(/*node1_bound_ns=*/20'000'000);
  Straggler s;
  s.node = "node1";
  s.cause = "unknown";
  s.arrival_basis = "host_entry";
  s.ordering_determined = false;
  s.confidence = Confidence::kUndetermined;
  s.evidence.push_back({"lateness", "", {{"margin_ns", 8'000'000}}});
  s.evidence.push_back({"clock", "", {{"clock_bound_ns", 20'010'000}, {"margin_ns", 8'000'000}}});
  r.stragglers.push_back(s);
  r.stragglers.push_back(CpuVerdict());  // node1's 300 us too
  AddClockBoundWarnings(r);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("2 verdicts compare (node1, unknown: 8 ms; node1, cpu_contention: "
                               "300 us)"),
            std::string::npos)
      << r.warnings[0];
  EXPECT_EQ(r.stragglers[0].confidence, Confidence::kUndetermined);
  EXPECT_EQ(r.stragglers[1].confidence, Confidence::kLow);
}

TEST(ClockBoundWarnings, OneNodeComparesNothingAcrossClocks) {
  Report r = FourNodes(/*node1_bound_ns=*/1'000'000);
  r.per_node.resize(1);
  r.stragglers.push_back(CpuVerdict());
  AddClockBoundWarnings(r);
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(r.stragglers[0].confidence, Confidence::kMedium);
}

}  // namespace
}  // namespace rs::analyzer
