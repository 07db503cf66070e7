// The hang engine on hand-built jobs: each test lays out what every rank's record holds and
// checks the culprit set, the class of the verdict and the chain in words.
#include "analyzer/wait_graph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "analyzer/wait_test_job.h"
#include "analyzer/wait_words.h"

namespace rs::analyzer::wait {
namespace {

using namespace test_job;  // NOLINT: the job builder

// The shape: a pipeline receive waits on a stage that waits in an expert all-to-all
// for two ranks that never entered it. The culprits are those two; the pipeline peer is a
// victim (the old analysis named it).
TEST(WaitGraph, ChainAcrossGroupsEndsAtBothRoots) {
  Job j;
  const size_t pp = j.Group("pp", {5, 13});
  const size_t ep = j.Group("ep", {1, 5, 9, 14});
  j.Done(ep, {1, 5, 9, 14}, 1, 6, NcclOp::kAllToAll);
  j.P2p(13, pp, NcclOp::kRecv, 5, 0, Outcome::kCompleted, kT0 + 2 * kS);
  j.P2p(5, pp, NcclOp::kSend, 13, 0, Outcome::kCompleted, kT0 + 2 * kS);
  j.Coll(1, ep, 7, Outcome::kPending, kT0 + 10 * kS, NcclOp::kAllToAll);
  j.Coll(5, ep, 7, Outcome::kPending, kT0 + 10 * kS, NcclOp::kAllToAll);
  j.P2p(13, pp, NcclOp::kRecv, 5, 1, Outcome::kPending, kT0 + 11 * kS);
  j.R(13).ops.back().started_ns = kT0 + 190 * kS;  // the latest time any record holds
  const Result r = j.Run();
  EXPECT_EQ(r.verdict, Verdict::kHang);
  EXPECT_EQ(r.culprits, (V{9, 14}));
  EXPECT_EQ(r.waiting, (V{1, 5, 13}));
  EXPECT_EQ(EndOf(r, 9)->kind, EndKind::kWaitsInNothing);
  EXPECT_EQ(EndOf(r, 9)->waited_by, (V{1, 5}));
  EXPECT_EQ(EndOf(r, 9)->idle_ns, 190 * kS - 6 * kS - 1000);
  EXPECT_EQ(r.stuck->seq, 7);
  EXPECT_EQ(r.stuck_for_ns, 180 * kS);           // seq 7 created at +10 s, latest +190 s
  EXPECT_EQ(r.confidence, Confidence::kMedium);  // no timeout recorded
  const std::string chains = Joined(Chains(j.in, r, 10));
  EXPECT_NE(chains.find("rank 13 waits in recv from rank 5 (pp) for at least 179 s, which waits in "
                        "all-to-all seq 7 of ep for at least 180 s for ranks 9 and 14, each of "
                        "which entered nothing after all-to-all seq 6 of ep (completed) for at "
                        "least 184 s"),
            std::string::npos)
      << chains;
}

// Two independent faults in two groups: both are named.
TEST(WaitGraph, TwoRootsInTwoGroups) {
  Job j;
  const size_t dp = j.Group("dp", {0, 1, 2, 3});
  const size_t tp = j.Group("tp", {4, 5});
  j.Done(dp, {0, 1, 2, 3}, 1, 4);
  j.Done(tp, {4, 5}, 1, 9);
  for (int64_t r : {0, 1, 3}) j.Coll(r, dp, 5, Outcome::kFailed, kT0 + 20 * kS);
  j.Coll(4, tp, 10, Outcome::kFailed, kT0 + 21 * kS);
  const Result r = j.Run();
  EXPECT_EQ(r.verdict, Verdict::kHang);
  EXPECT_EQ(r.culprits, (V{2, 5}));
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.confidence, Confidence::kHigh);
  EXPECT_GE(r.stuck_for_ns, 600 * kS);  // NCCL's failed entries waited their timeout
  EXPECT_EQ(Chains(j.in, r, 10).size(), 2u);
}

// Two ranks that each receive first: a deadlock, its own class.
TEST(WaitGraph, CycleOfReceivesIsADeadlock) {
  Job j;
  const size_t pp = j.Group("pp", {0, 1});
  j.P2p(0, pp, NcclOp::kRecv, 1, 0, Outcome::kPending, kT0).pair_seq = 1;
  j.P2p(1, pp, NcclOp::kRecv, 0, 0, Outcome::kPending, kT0).pair_seq = 1;
  const Result r = j.Run();
  EXPECT_EQ(r.verdict, Verdict::kDeadlock);
  EXPECT_EQ(r.confidence, Confidence::kMedium);  // counted from the start: proven (rule 13)
  EXPECT_FALSE(r.cycle_unproven);
  ASSERT_EQ(r.cycles.size(), 1u);
  EXPECT_EQ(r.cycles[0], (V{0, 1}));
  EXPECT_EQ(r.culprits, (V{0, 1}));
  const std::string chains = Joined(Chains(j.in, r, 10));
  EXPECT_NE(chains.find("a cycle"), std::string::npos) << chains;
}

// A cycle through two groups: each rank is ahead in the group the other waits in.
TEST(WaitGraph, CycleAcrossGroups) {
  Job j;
  const size_t a = j.Group("a", {0, 1});
  const size_t b = j.Group("b", {0, 1});
  j.Done(a, {0, 1}, 1, 2);
  j.Done(b, {0, 1}, 1, 4);
  j.Coll(0, a, 3, Outcome::kPending, kT0 + 10 * kS);
  j.Coll(1, b, 5, Outcome::kPending, kT0 + 10 * kS);
  const Result r = j.Run();
  EXPECT_EQ(r.verdict, Verdict::kDeadlock);
  EXPECT_EQ(r.culprits, (V{0, 1}));
}

TEST(WaitGraph, SizeMismatchNamesTheMinority) {
  Job j;
  const size_t g = j.Group("0", {0, 1, 2, 3});
  j.Done(g, {0, 1, 2, 3}, 1, 6);
  for (int64_t r : {0, 1, 2, 3}) j.Coll(r, g, 7, Outcome::kPending, kT0 + 10 * kS);
  j.R(3).ops.back().count = 1024;
  const Result r = j.Run();
  EXPECT_EQ(r.verdict, Verdict::kMismatch);
  EXPECT_EQ(r.culprits, (V{3}));
  ASSERT_EQ(r.mismatches.size(), 1u);
  EXPECT_EQ(r.mismatches[0].field, "count");
  EXPECT_EQ(r.mismatches[0].minority, (V{3}));
  EXPECT_EQ(r.stuck->seq, 7);
}

TEST(WaitGraph, MismatchTieNamesNobody) {
  Job j;
  const size_t g = j.Group("0", {0, 1, 2, 3});
  for (int64_t r : {0, 1, 2, 3}) j.Coll(r, g, 7, Outcome::kPending, kT0);
  j.R(2).ops.back().dtype = "float16";
  j.R(3).ops.back().dtype = "float16";
  const Result r = j.Run();
  EXPECT_EQ(r.verdict, Verdict::kMismatch);
  EXPECT_TRUE(r.culprits.empty());
}

// The test bed's size mismatch in a group of two: the smaller call completed, the larger waits.
// The waiting rank is no culprit. One against one, the votes cannot say which side is wrong;
// the ranks' own other all-reduces in the group (2048 each) name rank 4's 1024 (low).
TEST(WaitGraph, MismatchExplainsTheRankStuckWhereTheOtherCompleted) {
  Job j;
  const size_t g = j.Group("tp", {4, 5});
  j.Done(g, {4, 5}, 1, 6);
  j.Coll(4, g, 7, Outcome::kCompleted, kT0 + 10 * kS).count = 1024;
  j.Coll(5, g, 7, Outcome::kPending, kT0 + 10 * kS);
  const Result r = j.Run();
  EXPECT_EQ(r.verdict, Verdict::kMismatch);
  EXPECT_EQ(r.culprits, (V{4}));
  EXPECT_EQ(r.confidence, Confidence::kLow);
  ASSERT_EQ(r.mismatches.size(), 1u);
  EXPECT_TRUE(r.mismatches[0].by_history);
  const std::vector<std::string> chains = Chains(j.in, r, 10);
  ASSERT_FALSE(chains.empty());
}

// A mismatched call that completed on both ranks (the CPU NCCL lets it), and a later collective
// of the group stuck on one: the earlier mismatch explains it, its stuck rank is no culprit.
TEST(WaitGraph, AnEarlierMismatchInTheGroupExplainsALaterStall) {
  Job j;
  const size_t g = j.Group("tp", {4, 5});
  j.Done(g, {4, 5}, 1, 6);
  j.Coll(4, g, 7, Outcome::kCompleted, kT0 + 7 * kS).count = 1024;
  j.Coll(5, g, 7, Outcome::kCompleted, kT0 + 7 * kS);
  j.Done(g, {4, 5}, 8, 9);
  j.Coll(4, g, 10, Outcome::kCompleted, kT0 + 10 * kS);
  j.Coll(5, g, 10, Outcome::kPending, kT0 + 10 * kS);
  const Result r = j.Run();
  EXPECT_EQ(r.verdict, Verdict::kMismatch);
  EXPECT_EQ(r.culprits, (V{4}));
  ASSERT_TRUE(r.stuck);
  EXPECT_EQ(r.stuck->seq, 10);  // what never completed; the culprit's call is seq 7
  ASSERT_EQ(r.ends.size(), 2u);
  EXPECT_EQ(r.ends[0].op->seq, 7);
}

// Shapes that vary from call to call (no value is any rank's usual one): a tie names nobody.
TEST(WaitGraph, MismatchTieWithVaryingShapesNamesNobody) {
  Job j;
  const size_t g = j.Group("tp", {4, 5});
  for (int64_t s = 1; s <= 6; ++s) {
    for (int64_t r : {4, 5}) j.Coll(r, g, s, Outcome::kCompleted, kT0 + s * kS).count = 100 * s;
  }
  j.Coll(4, g, 7, Outcome::kCompleted, kT0 + 10 * kS).count = 1024;
  j.Coll(5, g, 7, Outcome::kPending, kT0 + 10 * kS).count = 4096;
  const Result r = j.Run();
  EXPECT_EQ(r.verdict, Verdict::kMismatch);
  EXPECT_TRUE(r.culprits.empty());
}

// Three against one: the minority completed its smaller call and went on; it is the culprit,
// not the three stuck in the larger one.
TEST(WaitGraph, MismatchMinorityThatWentOnIsTheCulprit) {
  Job j;
  const size_t g = j.Group("0", {0, 1, 2, 3});
  j.Done(g, {0, 1, 2, 3}, 1, 6);
  for (int64_t r : {0, 1, 2}) j.Coll(r, g, 7, Outcome::kPending, kT0 + 10 * kS);
  j.Coll(3, g, 7, Outcome::kCompleted, kT0 + 10 * kS).count = 1024;
  const Result r = j.Run();
  EXPECT_EQ(r.verdict, Verdict::kMismatch);
  EXPECT_EQ(r.culprits, (V{3}));
}

TEST(WaitGraph, MissingDumpIsASuspect) {
  Job j;
  const size_t g = j.Group("0", {0, 1, 2, 3});
  j.Done(g, {0, 1, 3}, 1, 6);
  for (int64_t r : {0, 1, 3}) j.Coll(r, g, 7, Outcome::kPending, kT0 + 10 * kS);
  j.Missing(2);
  const Result r = j.Run();
  EXPECT_EQ(r.verdict, Verdict::kHang);
  EXPECT_EQ(r.culprits, (V{2}));
  EXPECT_EQ(EndOf(r, 2)->kind, EndKind::kNoRecord);
  EXPECT_EQ(r.confidence, Confidence::kLow);
}

// Rule 4: a ring that wrapped and holds nothing of the group is no proof; one that still holds
// an older entry of the group is.
TEST(WaitGraph, WrappedRingProvesOnlyWithAnOlderEntry) {
  for (bool older_held : {false, true}) {
    Job j;
    const size_t g = j.Group("dp", {0, 1, 2});
    const size_t tp = j.Group("tp", {2, 3});
    j.Done(g, {0, 1}, 1, 6);
    if (older_held) j.Done(g, {2}, 6, 6);
    j.Done(tp, {2, 3}, 1, 50);
    j.R(2).wrapped = true;
    for (int64_t r : {0, 1}) j.Coll(r, g, 7, Outcome::kPending, kT0 + 60 * kS);
    const Result r = j.Run();
    EXPECT_EQ(r.culprits, (V{2})) << older_held;
    EXPECT_EQ(EndOf(r, 2)->kind, older_held ? EndKind::kWaitsInNothing : EndKind::kRingWrapped);
    EXPECT_EQ(r.confidence, older_held ? Confidence::kMedium : Confidence::kLow);
  }
}

TEST(WaitGraph, GapsInARecordProveNothing) {
  Job j;
  const size_t g = j.Group("0", {0, 1});
  j.Done(g, {0, 1}, 1, 3);
  j.R(1).gaps = true;
  j.Coll(0, g, 4, Outcome::kPending, kT0 + 10 * kS);
  EXPECT_EQ(EndOf(j.Run(), 1)->kind, EndKind::kRingWrapped);
}

// Gloo (rule 5, PyTorch 2.14): every entry 'scheduled', retired once run.
TEST(WaitGraph, GlooAllAtTheSameLastEntryIsUndetermined) {
  Job j;
  const size_t g = j.Group("0", {0, 1, 2, 3});
  for (int64_t r : {0, 1, 2, 3}) {
    j.R(r, Basis::kFlightRecorderGloo);
    for (int64_t s = 1; s <= 50; ++s) j.Coll(r, g, s, Outcome::kEnded, kT0 + s * kS);
  }
  const Result r = j.Run();
  EXPECT_EQ(r.verdict, Verdict::kUndetermined);
  EXPECT_TRUE(r.culprits.empty());
  EXPECT_TRUE(r.edges.empty());
  EXPECT_NE(r.reason.find("gloo"), std::string::npos) << r.reason;
  EXPECT_EQ(r.confidence, Confidence::kUndetermined);
}

TEST(WaitGraph, GlooRankThatSkippedACollectiveIsTheCulprit) {
  Job j;
  const size_t g = j.Group("0", {0, 1, 2, 3});
  for (int64_t r : {0, 1, 2, 3}) {
    j.R(r, Basis::kFlightRecorderGloo);
    for (int64_t s = 1; s <= (r == 2 ? 49 : 50); ++s) {
      j.Coll(r, g, s, Outcome::kEnded, kT0 + s * kS + (s == 50 ? 0 : 0));
    }
  }
  const Result r = j.Run();
  EXPECT_EQ(r.verdict, Verdict::kHang);
  EXPECT_EQ(r.culprits, (V{2}));
  EXPECT_EQ(r.waiting, (V{0, 1, 3}));
  EXPECT_EQ(r.stuck->seq, 50);
  EXPECT_TRUE(r.timed_out);  // their seq 50 ended, and cannot have completed without rank 2
  EXPECT_EQ(r.confidence, Confidence::kHigh);
  const std::string chains = Joined(Chains(j.in, r, 10));
  EXPECT_NE(chains.find("each of ranks 0, 1 and 3 waits in all-reduce seq 50 of 0"),
            std::string::npos)
      << chains;
  EXPECT_NE(chains.find("rank 2, which entered nothing after all-reduce seq 49 of 0"),
            std::string::npos)
      << chains;
}

TEST(WaitGraph, GlooWaitStillInFlightIsAHangOfMediumConfidence) {
  Job j;
  const size_t g = j.Group("0", {0, 1});
  j.R(0, Basis::kFlightRecorderGloo);
  j.R(1, Basis::kFlightRecorderGloo);
  j.Coll(0, g, 1, Outcome::kEnded, kT0);
  j.Coll(1, g, 1, Outcome::kEnded, kT0);
  j.Coll(0, g, 2, Outcome::kPending, kT0 + kS);
  const Result r = j.Run();
  EXPECT_EQ(r.culprits, (V{1}));
  EXPECT_EQ(r.confidence, Confidence::kMedium);
}

TEST(WaitGraph, StuckAloneInWhatOthersCompleted) {
  Job j;
  const size_t g = j.Group("0", {0, 1, 2, 3});
  j.Done(g, {0, 1, 2, 3}, 1, 6);
  j.Done(g, {0, 2, 3}, 7, 7);
  Op& stuck = j.Coll(1, g, 7, Outcome::kPending, kT0 + 7 * kS);
  stuck.state = OpState::kStarted;
  for (int64_t r : {0, 2, 3}) j.Coll(r, g, 8, Outcome::kPending, kT0 + 8 * kS);
  const Result r = j.Run();
  EXPECT_EQ(r.verdict, Verdict::kHang);
  EXPECT_EQ(r.culprits, (V{1}));
  EXPECT_EQ(EndOf(r, 1)->kind, EndKind::kStuckAlone);
  EXPECT_EQ(r.stuck->seq, 7);
  EXPECT_EQ(*r.stuck_rank, 1);
}

// Rule 8: everyone inside, none completed: a hang only where it timed out.
TEST(WaitGraph, EveryMemberInsideTheOperation) {
  for (Outcome out : {Outcome::kPending, Outcome::kFailed}) {
    Job j;
    const size_t g = j.Group("0", {0, 1, 2, 3});
    j.Done(g, {0, 1, 2, 3}, 1, 6);
    for (int64_t r : {0, 1, 2, 3}) j.Coll(r, g, 7, out, kT0 + 7 * kS);
    const Result r = j.Run();
    EXPECT_TRUE(r.culprits.empty());
    if (out == Outcome::kFailed) {
      EXPECT_EQ(r.verdict, Verdict::kStuckInOp);
      EXPECT_NE(r.reason.find("network or device"), std::string::npos) << r.reason;
    } else {
      EXPECT_EQ(r.verdict, Verdict::kNone);
      EXPECT_NE(r.reason.find("in flight on every member"), std::string::npos) << r.reason;
    }
  }
}

TEST(WaitGraph, CleanJobNamesNobody) {
  Job j;
  const size_t g = j.Group("0", {0, 1, 2, 3});
  j.Done(g, {0, 1, 2, 3}, 1, 30);
  const Result r = j.Run();
  EXPECT_EQ(r.verdict, Verdict::kNone);
  EXPECT_TRUE(r.culprits.empty());
  EXPECT_TRUE(r.ends.empty());
}

// Records taken at different moments: a completed operation one member never entered is not
// waited in.
TEST(WaitGraph, SkewedRecordsOfACleanJob) {
  Job j;
  const size_t g = j.Group("0", {0, 1});
  j.Done(g, {0}, 1, 10);
  j.Done(g, {1}, 1, 9);
  const Result r = j.Run();
  EXPECT_EQ(r.verdict, Verdict::kNone);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("different moments"), std::string::npos);
}

// A send and its receive both posted: matched, no rank behind.
TEST(WaitGraph, MatchedSendAndReceiveWaitTogether) {
  Job j;
  const size_t pp = j.Group("pp", {0, 1});
  j.P2p(0, pp, NcclOp::kSend, 1, 3, Outcome::kPending, kT0);
  j.P2p(1, pp, NcclOp::kRecv, 0, 3, Outcome::kPending, kT0);
  const Result r = j.Run();
  EXPECT_TRUE(r.edges.empty());
  EXPECT_EQ(r.verdict, Verdict::kNone);
}

// A send whose receiver never posted the receive waits for it: rank 0's second send to rank 1,
// rank 1 received once. Without the pairs' count (rule 13: records that lost their start) rank
// 1's completed receive may be this very send's, and a brief wait proves nothing; one that
// waited 5 s (its dump's stamp), past the stuck threshold, still names rank 1.
TEST(WaitGraph, SendWaitsForItsReceiver) {
  for (int c = 0; c < 3; ++c) {
    const bool counted = c == 0, long_wait = c == 2;
    Job j;
    const size_t pp = j.Group("pp", {0, 1});
    Op& send = j.P2p(0, pp, NcclOp::kSend, 1, 3, Outcome::kPending, kT0);
    Op& recv = j.P2p(1, pp, NcclOp::kRecv, 0, 2, Outcome::kCompleted, kT0 - kS);
    if (counted) {
      send.pair_seq = 2;
      recv.pair_seq = 1;
    }
    if (long_wait) send.started_ns = kT0 + 5 * kS;
    const Result r = j.Run();
    SCOPED_TRACE(c);
    EXPECT_EQ(r.culprits, counted || long_wait ? V{1} : V{});
    EXPECT_EQ(r.verdict, counted || long_wait ? Verdict::kHang : Verdict::kUndetermined);
    EXPECT_EQ(Chains(j.in, r, 10).front().substr(0, 30), "rank 0 waits in send to rank 1");
    // Rule 13: uncounted, rank 1 may have received rank 0's transfer already (its completed
    // receive could be the one), so a long wait names it at low confidence, and says so.
    EXPECT_EQ(r.culprits_unproven, long_wait);
    if (counted) {
      EXPECT_NE(r.confidence, Confidence::kLow);
    }
    if (long_wait) {
      EXPECT_EQ(r.confidence, Confidence::kLow);
    }
  }
}

// Only the earliest open collective of a group is waited in (rule 1): the later ones queue.
TEST(WaitGraph, LaterOperationsOfAGroupQueueBehindTheFirst) {
  Job j;
  const size_t g = j.Group("0", {0, 1});
  j.Done(g, {0, 1}, 1, 3);
  j.Coll(0, g, 4, Outcome::kPending, kT0 + 4 * kS);
  j.Coll(1, g, 4, Outcome::kPending, kT0 + 4 * kS);
  j.Coll(0, g, 5, Outcome::kPending, kT0 + 5 * kS);  // rank 1 never issued 5: not an edge
  const Result r = j.Run();
  EXPECT_TRUE(r.edges.empty());
}

// Rule 11, the test bed's mismatch2 in small: rank 6 received its 3rd transfer from rank 2 as
// float32 where rank 2 sent bfloat16 (as every other time); its later receives from rank 2
// shift, it waits in the 5th, and rank 2 waits in a receive from rank 6 whose send is open too:
// the chain ends in the pair going the other way. The pair's side new to its own calls is the
// culprit, though no chain ends at it.
class P2pJob : public Job {
 public:
  // Transfers 1..n of sender -> receiver in group g, completed, all bfloat16.
  void Pairs(size_t g, int64_t sender, int64_t receiver, int64_t n) {
    for (int64_t k = 1; k <= n; ++k) {
      Transfer(g, sender, receiver, k, Outcome::kCompleted, Outcome::kCompleted);
    }
  }
  void Transfer(size_t g, int64_t sender, int64_t receiver, int64_t k, Outcome send, Outcome recv) {
    Op& s = P2p(sender, g, NcclOp::kSend, receiver, 100 + k, send, kT0 + k * kS);
    s.pair_seq = k;
    s.count = 4096;
    s.dtype = "bfloat16";
    Op& r = P2p(receiver, g, NcclOp::kRecv, sender, 100 + k, recv, kT0 + k * kS);
    r.pair_seq = k;
    r.count = 4096;
    r.dtype = "bfloat16";
  }
  Op& Last(int64_t rank) { return R(rank).ops.back(); }
};

TEST(WaitGraph, P2pDtypeMismatchNamesTheSideNewToIt) {
  P2pJob j;
  const size_t pp = j.Group("pp", {2, 6});
  j.Pairs(pp, 2, 6, 4);
  j.Pairs(pp, 6, 2, 4);
  j.R(6).ops[2].dtype = "float32";  // rank 6's receive of transfer 3 from rank 2
  ASSERT_EQ(j.R(6).ops[2].op, NcclOp::kRecv);
  ASSERT_EQ(j.R(6).ops[2].pair_seq, 3);
  j.Transfer(pp, 2, 6, 5, Outcome::kCompleted, Outcome::kPending);  // rank 6 waits for bytes
  j.Transfer(pp, 6, 2, 5, Outcome::kPending, Outcome::kPending);    // both inside, the way back
  const Result r = j.Run();
  EXPECT_EQ(r.culprits, (V{6}));
  ASSERT_EQ(r.mismatches.size(), 1u);
  const FieldMismatch& m = r.mismatches[0];
  EXPECT_TRUE(m.p2p);
  EXPECT_EQ(m.sender, 2);
  EXPECT_EQ(m.receiver, 6);
  EXPECT_EQ(m.seq, 3);
  EXPECT_EQ(m.field, "datatype");
  EXPECT_EQ(m.minority, (V{6}));
  EXPECT_TRUE(m.by_history);
  const End* six = EndOf(r, 6);
  ASSERT_NE(six, nullptr);
  EXPECT_EQ(six->kind, EndKind::kMismatched);
  ASSERT_TRUE(six->op);
  EXPECT_EQ(six->op->pair_seq, 3);  // the call unlike its others, not the one it waits in
  const std::string words = EndPhrase(j.in, r, *six);
  EXPECT_NE(words.find("unlike rank 2's matching send"), std::string::npos) << words;
}

// The same shift with no history to decide it (the pair's first transfer differs): nobody.
TEST(WaitGraph, P2pMismatchWithoutHistoryNamesNobody) {
  P2pJob j;
  const size_t pp = j.Group("pp", {2, 6});
  j.Transfer(pp, 2, 6, 1, Outcome::kCompleted, Outcome::kPending);
  j.Last(6).dtype = "float32";
  const Result r = j.Run();
  ASSERT_EQ(r.mismatches.size(), 1u);
  EXPECT_TRUE(r.mismatches[0].minority.empty());
  EXPECT_TRUE(r.culprits.empty());
  EXPECT_EQ(r.verdict, Verdict::kMismatch);
}

// Sends and receives are paired by their place per peer (pair_seq), not by p2p_seq_id, and a
// record that cannot place them (no pair_seq: it lost its start) compares nothing.
TEST(WaitGraph, P2pPairsAreComparedOnlyWherePlaced) {
  P2pJob j;
  const size_t pp = j.Group("pp", {0, 1});
  j.Pairs(pp, 0, 1, 3);
  j.R(1).ops[1].p2p = true;  // (unchanged) rank 1's 2nd receive
  j.R(1).ops[1].pair_seq.reset();
  j.R(1).ops[1].dtype = "float32";
  EXPECT_TRUE(j.Run().mismatches.empty());
  j.R(1).ops[1].pair_seq = 2;
  EXPECT_EQ(j.Run().mismatches.size(), 1u);
}

TEST(WaitWords, RanksPhrase) {
  EXPECT_EQ(RanksPhrase({2}), "rank 2");
  EXPECT_EQ(RanksPhrase({9, 14}), "ranks 9 and 14");
  EXPECT_EQ(RanksPhrase({0, 1, 3}), "ranks 0, 1 and 3");
  EXPECT_EQ(RanksPhrase({0, 1, 2, 3, 4, 7}), "ranks 0-4, 7");
}

}  // namespace
}  // namespace rs::analyzer::wait
