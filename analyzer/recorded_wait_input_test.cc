// The recorded collectives of a multi-group job as the hang engine's input
// (recorded_wait_input.h), on hand-built recordings shaped like tests/torch/jobs.py's NCCL jobs:
// 4 ranks, tp {0,1} {2,3}, dp {0,2} {1,3}, world; every step tp all_reduce, dp all_reduce,
// world all_reduce.
#include <gtest/gtest.h>

#include <map>

#include "analyzer/recorded_wait_input.h"
#include "analyzer/wait_graph.h"

namespace rs::analyzer {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kT0 = 1'000'000 * kMs;

struct Job {
  CollectiveData data;
  std::map<std::string, uint64_t> comm;                   // 'tp0', 'tp1', 'dp0', 'dp1', 'world'
  std::map<int64_t, std::map<std::string, int64_t>> seq;  // rank -> comm name -> last seq

  Job() {
    comm = {{"tp0", 0x10}, {"tp1", 0x11}, {"dp0", 0x20}, {"dp1", 0x21}, {"world", 0x30}};
    for (int64_t r = 0; r < 4; ++r) {
      AddParticipant(data, "node1", 100 + r, r, "python3");
      data.participants.back().rank_recorded = true;  // RANK in its environment
    }
  }
  static std::string Tp(int64_t r) { return r < 2 ? "tp0" : "tp1"; }
  static std::string Dp(int64_t r) { return r % 2 == 0 ? "dp0" : "dp1"; }
  static int64_t RankIn(const std::string& c, int64_t r) {
    if (c == "world") return r;
    if (c[0] == 't') return r % 2;
    return r / 2;
  }
  // One collective call of rank r in communicator c at time ts; device: start and end (ends
  // unset: started, not completed; started unset too: enqueued only).
  NcclCall& Call(int64_t r, const std::string& c, int64_t ts, std::optional<int64_t> start,
                 std::optional<int64_t> end) {
    NcclCall call;
    call.participant = static_cast<int32_t>(r);
    call.comm = comm.at(c);
    call.seq = ++seq[r][c];
    call.op = "ALL_REDUCE";
    call.ts = ts;
    call.dur = 10'000;
    call.rank = RankIn(c, r);
    call.nranks = c == "world" ? 4 : 2;
    call.count = 1024;
    call.datatype = "float32";
    call.enqueue = true;
    DeviceOp d;
    d.enqueue_ns = ts;
    d.start_ns = start;
    d.end_ns = end;
    d.state = end ? "completed" : start ? "started" : "enqueued";
    call.device = d;
    data.calls.push_back(call);
    return data.calls.back();
  }
  // A completed step of every rank from t.
  void Step(int64_t t, const std::vector<int64_t>& ranks = {0, 1, 2, 3}) {
    for (int64_t r : ranks) {
      Call(r, Tp(r), t, t + 1 * kMs, t + 2 * kMs);
      Call(r, Dp(r), t + 3 * kMs, t + 4 * kMs, t + 5 * kMs);
      Call(r, "world", t + 6 * kMs, t + 7 * kMs, t + 8 * kMs);
    }
  }
};

wait::Result Analyze(const Job& job, int64_t end_ns) {
  std::string why;
  std::optional<FrJob> fr = RecordedJob(job.data, {}, {}, end_ns, &why);
  EXPECT_TRUE(fr.has_value()) << why;
  if (!fr) return {};
  EXPECT_EQ(fr->input.groups.size(), 5u);
  return wait::Analyze(fr->input);
}

// Ranks 1 and 2 stop before a step's tp all_reduce; ranks 0 and 3 start theirs on the device,
// and enqueue the step's dp and world all_reduce behind it.
Job TwoStalls(int64_t stall_at) {
  Job job;
  job.Step(kT0);
  job.Step(kT0 + 20 * kMs);
  for (int64_t r : {0, 3}) {
    job.Call(r, Job::Tp(r), stall_at, stall_at + kMs, std::nullopt);
    job.Call(r, Job::Dp(r), stall_at + 2 * kMs, std::nullopt, std::nullopt);
    job.Call(r, "world", stall_at + 3 * kMs, std::nullopt, std::nullopt);
  }
  return job;
}

TEST(RecordedWaitInputTest, ChainsAcrossCommunicatorsEndAtBothStalledRanks) {
  const int64_t stall_at = kT0 + 40 * kMs;
  wait::Result r = Analyze(TwoStalls(stall_at), stall_at + 13'000 * kMs);
  EXPECT_EQ(r.verdict, wait::Verdict::kHang) << r.reason;
  EXPECT_EQ(r.culprits, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(r.waiting, (std::vector<int64_t>{0, 3}));
  // The recording's end bounds how long they waited (rule 10), not their last call.
  EXPECT_GE(r.stuck_for_ns, 12'900 * kMs);
}

TEST(RecordedWaitInputTest, CallsYoungerThanTheStuckThresholdAreProgressing) {
  // The recording ended 50 ms after ranks 0 and 3 entered: mid-step, not a hang.
  const int64_t stall_at = kT0 + 40 * kMs;
  wait::Result r = Analyze(TwoStalls(stall_at), stall_at + 50 * kMs);
  EXPECT_EQ(r.verdict, wait::Verdict::kNone) << r.reason;
  EXPECT_TRUE(r.culprits.empty());
}

TEST(RecordedWaitInputTest, AMemberThatEnteredAMomentAgoDoesNotMakeTheOtherACulprit) {
  // Rank 0 has waited 2 s in a tp all_reduce; rank 1 started it 5 ms before the end (slow,
  // not hung). The collective is as old as its oldest pending call: both wait inside it, and
  // nobody is blamed (no timeout: in flight, rule 8).
  Job job;
  job.Step(kT0);
  const int64_t end = kT0 + 3'000 * kMs;
  job.Call(0, "tp0", end - 2'000 * kMs, end - 2'000 * kMs, std::nullopt);
  job.Call(1, "tp0", end - 6 * kMs, end - 5 * kMs, std::nullopt);
  wait::Result r = Analyze(job, end);
  EXPECT_TRUE(r.culprits.empty()) << wait::VerdictName(r.verdict) << ": " << r.reason;
  EXPECT_NE(r.verdict, wait::Verdict::kHang);
}

TEST(RecordedWaitInputTest, ALostCallMakesASuspectNotACulprit) {
  // The two stalls, on a node whose recorder dropped NCCL events: a call missing from a
  // record proves nothing, so the stalled ranks are suspects.
  const int64_t stall_at = kT0 + 40 * kMs;
  Job job = TwoStalls(stall_at);
  std::string why;
  std::optional<FrJob> fr = RecordedJob(job.data, {}, {"node1"}, stall_at + 13'000 * kMs, &why);
  ASSERT_TRUE(fr.has_value()) << why;
  wait::Result r = wait::Analyze(fr->input);
  for (const wait::End& e : r.ends) {
    if (e.rank == 1 || e.rank == 2) {
      EXPECT_NE(e.kind, wait::EndKind::kWaitsInNothing) << e.rank;
    }
  }
}

TEST(RecordedWaitInputTest, EnqueuesWithoutDeviceStatesFailWhereAMemberNeverEntered) {
  // No profiler plugin: the calls only enqueue and their outcome is unknown; rank 2 never
  // enqueued the last world all_reduce, so the others' failed (rule 5) and they wait in it.
  Job job;
  job.Step(kT0);
  job.Step(kT0 + 20 * kMs, {0, 1, 3});
  job.Call(2, "tp1", kT0 + 20 * kMs, kT0 + 21 * kMs, kT0 + 22 * kMs);
  job.Call(2, "dp0", kT0 + 23 * kMs, kT0 + 24 * kMs, kT0 + 25 * kMs);
  for (NcclCall& c : job.data.calls) c.device.reset();
  wait::Result r = Analyze(job, kT0 + 10'000 * kMs);
  EXPECT_EQ(r.verdict, wait::Verdict::kHang) << r.reason;
  EXPECT_EQ(r.culprits, std::vector<int64_t>{2});
  EXPECT_EQ(r.waiting, (std::vector<int64_t>{0, 1, 3}));
}

RecordedP2p P2p(int64_t global, bool send, int64_t peer_comm_rank, int64_t seq, int64_t ts,
                std::optional<int64_t> end) {
  RecordedP2p c;
  c.participant = static_cast<int32_t>(global);
  c.comm = 0x40;  // ranks 0 and 2: a pipeline's stages
  c.seq = seq;
  c.send = send;
  c.rank = global / 2;
  c.nranks = 2;
  c.peer = peer_comm_rank;
  c.ts = ts;
  c.dur = 10'000;
  DeviceOp d;
  d.enqueue_ns = ts;
  d.start_ns = ts + kMs;
  d.end_ns = end;
  d.state = end ? "completed" : "started";
  c.device = d;
  return c;
}

TEST(RecordedWaitInputTest, AReceiveWaitsForItsPeer) {
  // Rank 0 receives from rank 2 every step; in the third, rank 2 never sends.
  Job job;
  job.Step(kT0);
  job.Step(kT0 + 20 * kMs);
  std::vector<RecordedP2p> p2p;
  for (int64_t seq : {1, 2}) {
    const int64_t t = kT0 + (seq * 20 - 10) * kMs;
    p2p.push_back(P2p(0, false, 1, seq, t, t + 2 * kMs));
    p2p.push_back(P2p(2, true, 0, seq, t, t + 2 * kMs));
  }
  const int64_t stuck = kT0 + 50 * kMs;
  p2p.push_back(P2p(0, false, 1, 3, stuck, std::nullopt));
  std::string why;
  std::optional<FrJob> fr = RecordedJob(job.data, p2p, {}, stuck + 5'000 * kMs, &why);
  ASSERT_TRUE(fr.has_value()) << why;
  EXPECT_EQ(fr->input.groups.size(), 6u);
  wait::Result r = wait::Analyze(fr->input);
  EXPECT_EQ(r.verdict, wait::Verdict::kHang) << r.reason;
  EXPECT_EQ(r.culprits, std::vector<int64_t>{2});
  EXPECT_EQ(r.waiting, std::vector<int64_t>{0});
  ASSERT_TRUE(r.stuck.has_value());
  EXPECT_TRUE(r.stuck->p2p);
  EXPECT_EQ(r.stuck->peer, std::optional<int64_t>(2));
}

TEST(RecordedWaitInputTest, AReceiveWaitingAsLongAsUsualIsNotStuck) {
  // A pipeline stage's receives wait about 300 ms on the device for the upstream compute every
  // step; one pending 800 ms at the end is within 10 x that pace.
  Job job;
  job.Step(kT0);
  std::vector<RecordedP2p> p2p;
  for (int64_t seq : {1, 2, 3}) {
    const int64_t t = kT0 + seq * 1'000 * kMs;
    p2p.push_back(P2p(0, false, 1, seq, t, t + 300 * kMs));
    p2p.push_back(P2p(2, true, 0, seq, t + 299 * kMs, t + 300 * kMs));
  }
  const int64_t end = kT0 + 5'000 * kMs;
  p2p.push_back(P2p(0, false, 1, 4, end - 800 * kMs, std::nullopt));
  std::string why;
  std::optional<FrJob> fr = RecordedJob(job.data, p2p, {}, end, &why);
  ASSERT_TRUE(fr.has_value()) << why;
  wait::Result r = wait::Analyze(fr->input);
  EXPECT_EQ(r.verdict, wait::Verdict::kNone) << r.reason;
  EXPECT_TRUE(r.culprits.empty());
}

TEST(RecordedWaitInputTest, NotBuiltWithoutGlobalRanksOrWithUnseenMembers) {
  std::string why;
  {
    Job job;
    job.Step(kT0);
    job.data.participants[1].rank_recorded = false;  // its rank is a communicator's
    EXPECT_FALSE(RecordedJob(job.data, {}, {}, kT0 + kMs, &why).has_value());
    EXPECT_NE(why.find("node1 rank 1 (pid 101) has no global rank"), std::string::npos) << why;
  }
  {
    Job job;
    job.Step(kT0, {0, 1, 2});  // rank 3 never seen: the world has 4 ranks, dp1 and tp1 2
    EXPECT_FALSE(RecordedJob(job.data, {}, {}, kT0 + kMs, &why).has_value());
    EXPECT_NE(why.find("has 2 ranks and the recording saw 1"), std::string::npos) << why;
  }
  {
    Job job;
    job.Step(kT0);
    job.data.participants[3].rank = 0;  // two processes claim rank 0
    EXPECT_FALSE(RecordedJob(job.data, {}, {}, kT0 + kMs, &why).has_value());
    EXPECT_NE(why.find("two processes claim rank 0"), std::string::npos) << why;
  }
}

}  // namespace
}  // namespace rs::analyzer
