// The hang engine on records taken at different moments (wait_graph.h rule 12): dumps asked
// for while a job runs on, each rank's at its own moment, against records of one moment.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

#include "analyzer/wait_graph.h"
#include "analyzer/wait_test_job.h"

namespace rs::analyzer::wait {
namespace {

using namespace test_job;  // NOLINT: the job builder

// Dumps asked for while a two-group job ran on (rule 12), each rank's at its own moment. tp
// {0,1} and dp {0,2}: rank 1's record is the oldest (it holds tp 1-3, 4 still open), rank 0's
// the newest (tp 1-5 done, 6 open; dp 1-2 done, 3 open), rank 2's between (dp 1-2 done).
// Read as one moment, rank 1 would be stuck in tp 4 and rank 2 would have entered nothing
// after dp 2, both waited for by rank 0: two culprits of a job that never stopped.
Job MovingJob() {
  Job j;
  const size_t tp = j.Group("tp", {0, 1});
  const size_t dp = j.Group("dp", {0, 2});
  j.Done(tp, {0}, 1, 5);
  j.Coll(0, tp, 6, Outcome::kPending, kT0 + 6 * kS);
  j.Done(tp, {1}, 1, 3);
  j.Coll(1, tp, 4, Outcome::kPending, kT0 + 4 * kS);
  j.Done(dp, {0, 2}, 1, 2);
  j.Coll(0, dp, 3, Outcome::kPending, kT0 + 6 * kS);
  return j;
}

TEST(WaitGraph, RecordsOfAJobThatRanOnNameNobody) {
  const Result r = MovingJob().Run();
  EXPECT_EQ(r.verdict, Verdict::kUndetermined);
  EXPECT_TRUE(r.culprits.empty());
  EXPECT_EQ(r.records_older, (V{1}));  // rank 0 completed tp 5 with it; its record ends at 4
  // Rank 1's tp 4 completed (tp 5 did); rank 0 waits for it in tp 6 and for rank 2 in dp 3.
  for (int64_t rank : {1, 2}) {
    ASSERT_NE(EndOf(r, rank), nullptr);
    EXPECT_EQ(EndOf(r, rank)->kind, EndKind::kRecordOlder);
  }
  EXPECT_NE(r.reason.find("while the job ran on"), std::string::npos);
  EXPECT_NE(Joined(r.notes).find("rank 1 went on after"), std::string::npos);
}

// Rank 4 waits in group c for rank 3, which is in group b's collective with rank 2, both
// inside, neither done: a stall in the operation (rule 8) where the records are of one
// moment; in flight where they were taken while the job ran on (rank 1's, in group a, is
// older than rank 0's).
TEST(WaitGraph, AnOperationInFlightInRecordsOfAJobThatRanOnIsNoStall) {
  for (bool ran_on : {false, true}) {
    Job j;
    const size_t a = j.Group("a", {0, 1});
    const size_t b = j.Group("b", {2, 3});
    const size_t c = j.Group("c", {3, 4});
    j.Done(a, {0}, 1, 5);
    j.Done(a, {1}, 1, ran_on ? 4 : 5);
    for (int64_t r : {2, 3}) j.Coll(r, b, 1, Outcome::kPending, kT0 + kS);
    j.Coll(4, c, 1, Outcome::kPending, kT0 + kS);
    const Result r = j.Run();
    EXPECT_TRUE(r.culprits.empty());
    EXPECT_EQ(r.verdict, ran_on ? Verdict::kUndetermined : Verdict::kStuckInOp);
    if (ran_on) {
      EXPECT_NE(r.reason.find("every member had entered"), std::string::npos);
    }
  }
}

// Rank 1 is alone in all-reduce 5, which rank 0 completed and went on from to all-reduce 6.
// Dumps hold no time of their own: open for a moment (rank 0 entered 6 10 ms after rank 1
// entered 5) it may only be that rank 1's record was taken before its all-reduce 5 completed
// there too (rule 12); open for 5 s, past the group's stuck threshold, rank 1 is stuck alone.
TEST(WaitGraph, AloneForAMomentIsNoCulprit) {
  for (bool long_ago : {false, true}) {
    Job j;
    const size_t g = j.Group("0", {0, 1});
    j.Done(g, {0}, 1, 5);
    j.Done(g, {1}, 1, 4);
    j.Coll(1, g, 5, Outcome::kPending, kT0 + 5 * kS);
    j.Coll(0, g, 6, Outcome::kPending, kT0 + 5 * kS + (long_ago ? 5 * kS : 10'000'000));
    const Result r = j.Run();
    EXPECT_EQ(r.culprits, long_ago ? V{1} : V{});
    EXPECT_EQ(r.verdict, long_ago ? Verdict::kHang : Verdict::kUndetermined);
    ASSERT_NE(EndOf(r, 1), nullptr);
    EXPECT_EQ(EndOf(r, 1)->kind, long_ago ? EndKind::kStuckAlone : EndKind::kRecordOlder);
    if (!long_ago) {
      EXPECT_NE(r.reason.find("stuck threshold"), std::string::npos) << r.reason;
    }
  }
}

// The same moment, but rank 0's wait in all-reduce 6 ran out its timeout (retired, not
// completed: rule 6): the records were taken at least 10 min after it began.
TEST(WaitGraph, ATimedOutWaitMakesTheStallOld) {
  Job j;
  const size_t g = j.Group("0", {0, 1});
  j.Done(g, {0}, 1, 5);
  j.Done(g, {1}, 1, 4);
  j.Coll(1, g, 5, Outcome::kPending, kT0 + 5 * kS);
  j.Coll(0, g, 6, Outcome::kFailed, kT0 + 5 * kS + 10'000'000);
  const Result r = j.Run();
  EXPECT_EQ(r.culprits, V{1});
  EXPECT_EQ(EndOf(r, 1)->kind, EndKind::kStuckAlone);
}

// Two ranks each waiting for the other through two groups for a moment: a deadlock where the
// records show one moment, not proven where they show a job that ran on.
TEST(WaitGraph, AYoungCycleInSkewedRecordsIsNoDeadlock) {
  for (bool skewed : {false, true}) {
    Job j;
    const size_t a = j.Group("a", {0, 1});
    const size_t b = j.Group("b", {0, 1});
    const size_t c = j.Group("c", {0, 1});
    j.Done(a, {0, 1}, 1, 2);
    j.Done(b, {0, 1}, 1, 4);
    j.Coll(0, a, 3, Outcome::kPending, kT0 + 10 * kS);
    j.Coll(1, b, 5, Outcome::kPending, kT0 + 10 * kS);
    j.Done(c, {0}, 1, 2);
    j.Done(c, {1}, 2, 2);
    if (skewed) j.Coll(1, c, 1, Outcome::kPending, kT0);  // settled by rank 0's c 2
    const Result r = j.Run();
    EXPECT_EQ(r.verdict, skewed ? Verdict::kUndetermined : Verdict::kDeadlock);
    EXPECT_EQ(r.culprits, skewed ? V{} : (V{0, 1}));
  }
}

// The same job with rank 1's record as new as rank 0's (tp 1-5 done, 6 open): no record is
// older, and rank 2, which entered nothing after dp 2 while rank 0 waits in dp 3, stopped.
TEST(WaitGraph, RecordsOfOneMomentStillNameTheRankThatStopped) {
  Job j = MovingJob();
  j.in.ranks[1].ops.clear();
  j.Done(0, {1}, 1, 5);
  j.Coll(1, 0, 6, Outcome::kPending, kT0 + 6 * kS);
  const Result r = j.Run();
  EXPECT_EQ(r.verdict, Verdict::kHang);
  EXPECT_EQ(r.culprits, (V{2}));
  EXPECT_TRUE(r.records_older.empty());
}

// Dumps asked of a running job through the pipes, with no other sign of skew: rank 1 entered
// nothing after tp 4, and rank 0 waits in tp 5, in flight on its device. PyTorch stamps an
// operation in flight with the dump's moment (its started time): where rank 0's dump was taken
// 60 ms after it entered tp 5 (the test bed's slow rank, a moment behind in its program, was
// waited for 58 ms so), rank 1 may simply not have reached it yet; 5 s after, past the
// group's stuck threshold, it stopped. Without a stamp (no start event: timing off) the
// records read as of one moment, as before.
TEST(WaitGraph, AStampedWaitShorterThanTheStuckThresholdProvesNoStop) {
  struct Case {
    std::optional<int64_t> stamp_after_ns;  // rank 0's tp 5 started (stamped) this long after
    Verdict verdict;
  };
  for (const Case& c : {Case{60'000'000, Verdict::kUndetermined}, Case{5 * kS, Verdict::kHang},
                        Case{std::nullopt, Verdict::kHang}}) {
    Job j;
    const size_t tp = j.Group("tp", {0, 1});
    j.Done(tp, {0, 1}, 1, 4);
    Op& wait = j.Coll(0, tp, 5, Outcome::kPending, kT0 + 4 * kS + 20'000'000);
    if (c.stamp_after_ns) wait.started_ns = wait.created_ns + *c.stamp_after_ns;
    const Result r = j.Run();
    SCOPED_TRACE(c.stamp_after_ns ? std::to_string(*c.stamp_after_ns) : "no stamp");
    EXPECT_EQ(r.verdict, c.verdict) << r.reason;
    ASSERT_NE(EndOf(r, 1), nullptr);
    EXPECT_EQ(EndOf(r, 1)->kind,
              c.verdict == Verdict::kHang ? EndKind::kWaitsInNothing : EndKind::kRecordOlder);
    EXPECT_EQ(r.culprits, c.verdict == Verdict::kHang ? V{1} : V{});
    if (c.verdict != Verdict::kHang) {
      EXPECT_NE(r.reason.find("stamped with its dump's moment"), std::string::npos) << r.reason;
    }
  }
}

// Rule 13: two pipeline stages of a running job, dumps asked for mid-run. Stage 0 sent three
// activations and received two gradients, and waits in its third receive; stage 1 received the
// three, completed its third send, and waits in its fourth receive, whose send stage 0 has yet
// to issue. Counted from the start (rule 11), stage 0's receive is answered (stage 1 completed
// that send) and only stage 1 waits on stage 0, in its transfer: no cycle, and while every
// wait is brief not even a stop (rule 12), past that stuck in it. With both rings wrapped the count
// is lost and the two receives read as a cycle, which is no deadlock while both waits are brief; a
// long or timed-out wait keeps the deadlock, of low confidence, the stalled transfer said.
TEST(WaitGraph, APipelineCycleInWrappedRingsIsNoProvenDeadlock) {
  struct Case {
    const char* what;
    bool wrapped;
    std::optional<int64_t> stamped_wait_ns;  // stage 0's receive, as its dump stamped it
    bool timed_out;
    Verdict verdict;
  };
  for (const Case& c : {Case{"counted", false, std::nullopt, false, Verdict::kUndetermined},
                        Case{"counted, 5 s", false, 5 * kS, false, Verdict::kStuckInOp},
                        Case{"wrapped, brief", true, std::nullopt, false, Verdict::kUndetermined},
                        Case{"wrapped, 50 ms", true, 50'000'000, false, Verdict::kUndetermined},
                        Case{"wrapped, 5 s", true, 5 * kS, false, Verdict::kDeadlock},
                        Case{"wrapped, timed out", true, std::nullopt, true, Verdict::kDeadlock}}) {
    SCOPED_TRACE(c.what);
    Job j;
    const size_t pp = j.Group("pp", {0, 1});
    const int64_t open_at = kT0 + 7 * kS;
    int64_t p2p_seq = 0;
    for (int k = 1; k <= 3; ++k) {
      j.P2p(0, pp, NcclOp::kSend, 1, ++p2p_seq, Outcome::kCompleted, kT0 + 2 * k * kS);
      j.P2p(1, pp, NcclOp::kRecv, 0, p2p_seq, Outcome::kCompleted, kT0 + 2 * k * kS);
      if (k == 3) break;
      j.P2p(1, pp, NcclOp::kSend, 0, ++p2p_seq, Outcome::kCompleted, kT0 + (2 * k + 1) * kS);
      j.P2p(0, pp, NcclOp::kRecv, 1, p2p_seq, Outcome::kCompleted, kT0 + (2 * k + 1) * kS);
    }
    j.P2p(1, pp, NcclOp::kSend, 0, ++p2p_seq, Outcome::kCompleted, open_at - kS);
    Op& wait0 = j.P2p(0, pp, NcclOp::kRecv, 1, p2p_seq, Outcome::kPending, open_at);
    if (c.stamped_wait_ns) wait0.started_ns = open_at + *c.stamped_wait_ns;
    if (c.timed_out) wait0.outcome = Outcome::kFailed;
    j.P2p(1, pp, NcclOp::kRecv, 0, ++p2p_seq, Outcome::kPending, open_at);
    for (int64_t rank : {0, 1}) {
      Rank& r = j.R(rank);
      r.wrapped = c.wrapped;
      std::map<NcclOp, int64_t> count;  // rule 11's place, per direction (one peer)
      for (Op& o : r.ops) {
        if (!c.wrapped) o.pair_seq = ++count[o.op];
      }
    }
    const Result r = j.Run();
    EXPECT_EQ(r.verdict, c.verdict) << r.reason;
    if (!c.wrapped) {  // stage 1 waits on stage 0, whose receive is in its transfer (rule 8)
      EXPECT_TRUE(r.cycles.empty());
      EXPECT_TRUE(r.culprits.empty());
      ASSERT_NE(EndOf(r, 0), nullptr);
      EXPECT_EQ(EndOf(r, 0)->kind, EndKind::kStuckTogether);
      continue;
    }
    ASSERT_EQ(r.cycles.size(), 1u);
    if (c.verdict == Verdict::kUndetermined) {
      EXPECT_TRUE(r.culprits.empty());
      ASSERT_NE(EndOf(r, 0), nullptr);
      EXPECT_EQ(EndOf(r, 0)->kind, EndKind::kCycleUnproven);
      EXPECT_FALSE(r.cycle_unproven);
      EXPECT_NE(r.reason.find("ring that wrapped"), std::string::npos) << r.reason;
    } else {
      EXPECT_EQ(r.culprits, (V{0, 1}));
      EXPECT_TRUE(r.cycle_unproven);
      EXPECT_EQ(r.confidence, Confidence::kLow);
    }
  }
}

}  // namespace
}  // namespace rs::analyzer::wait
