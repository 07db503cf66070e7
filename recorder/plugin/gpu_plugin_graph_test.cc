// CUDA graphs through the v5 table, as NCCL 2.28+ reports them: a call made while its stream is
// captured comes with graphCaptured and runs nothing; each replay of the graph starts the
// tasks' events again, with the captured call's API event as their parent. Replays are
// recorded apart from the calls (their own numbers), and the calls' numbering stays that of
// the recorder's NCCL probe, which sees the captured calls.
#include <gtest/gtest.h>

#include <vector>

#include "recorder/plugin/gpu_plugin_v5_fixture.h"

namespace rs_test {
namespace {

uint64_t GraphCalls() { return OwnRing()->header().graph_calls; }
uint64_t GraphCallsUnrecorded() { return OwnRing()->header().graph_calls_unrecorded; }
uint64_t GraphReplayOps() { return OwnRing()->header().graph_replay_ops; }

// Runs every task of a launch or replay on the device; the records written, by seq.
std::vector<rs_gpu_op> RunAll(ProfilerDriver* d, const std::vector<ProfilerDriver::Task>& tasks) {
  for (const ProfilerDriver::Task& t : tasks) {
    EXPECT_NE(t.handle, nullptr);
    RunOnDevice(d, t);
  }
  return Records();
}

TEST_F(V5, GraphReplaysAreNumberedApartAndCallsKeepTheirNumbers) {
  SetReader(true);
  ProfilerDriver* d = Comm(0x96a9, 4, 2);
  d->Launch({d->Collective("AllReduce", 4)});  // switches the mask on: call 1, not recorded
  const uint64_t graph_calls = GraphCalls(), replay_ops = GraphReplayOps();
  d->BeginCapture();
  ProfilerDriver::Call a = d->Collective("AllReduce", 64);   // call 2
  ProfilerDriver::Call b = d->Collective("AllGather", 128);  // call 3
  d->CaptureLaunch({a});
  d->CaptureLaunch({b});
  d->EndCapture();
  EXPECT_TRUE(Records().empty());  // a capture runs nothing
  EXPECT_EQ(GraphCalls(), graph_calls + 2);
  EXPECT_TRUE(OwnRing()->InFlight().empty());

  std::vector<rs_gpu_op> replays;
  for (int replay = 0; replay < 3; ++replay) {
    for (const ProfilerDriver::Call& c : {a, b}) {
      const int64_t before = NowNs();
      std::vector<rs_gpu_op> r = RunAll(d, d->Replay({c}));
      ASSERT_EQ(r.size(), 1u);
      EXPECT_GE(r[0].enqueue_ns, before);  // the replay's own time
      replays.push_back(r[0]);
    }
  }
  for (size_t k = 0; k < replays.size(); ++k) {
    const rs_gpu_op& r = replays[k];
    EXPECT_NE(r.flags & RS_GPU_GRAPH_REPLAY, 0u);
    EXPECT_EQ(r.seq, k + 1);                            // the communicator's replayed collectives
    EXPECT_EQ(r.graph_call_seq, k % 2 == 0 ? 2u : 3u);  // the captured call
    EXPECT_EQ(r.api_ns, 0);                             // no call of its own
    EXPECT_EQ(r.func, k % 2 == 0 ? RS_GPU_ALL_REDUCE : RS_GPU_ALL_GATHER);
    EXPECT_EQ(r.nccl_seq, k / 2 + (k % 2 == 0 ? 1u : 0u));  // NCCL's, per function
    EXPECT_EQ(r.state, RS_GPU_COMPLETED);
  }
  EXPECT_EQ(GraphReplayOps(), replay_ops + 6);
  // A call after the graph takes the number after the captured ones, as the probe's.
  std::vector<rs_gpu_op> next = RunAll(d, d->Launch({d->Collective("AllReduce", 8)}));
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].seq, 4u);
  EXPECT_EQ(next[0].flags & RS_GPU_GRAPH_REPLAY, 0u);
  EXPECT_EQ(next[0].graph_call_seq, 0u);
  EXPECT_GT(next[0].api_ns, 0);
  EXPECT_EQ(GraphCallsUnrecorded(), 0u);
}

TEST_F(V5, AGraphCapturedWithoutDeviceEventsIsCountedAndItsReplaysTakeNoNumber) {
  ProfilerDriver* d = Comm(0x96aa, 2, 0);
  const uint64_t unrecorded = GraphCallsUnrecorded();
  d->BeginCapture();
  ProfilerDriver::Call early = d->Collective("AllReduce", 16);  // no reader: base mask
  d->CaptureLaunch({early});
  d->EndCapture();
  EXPECT_EQ(GraphCallsUnrecorded(), unrecorded + 1);
  SetReader(true);
  d->Launch({d->Collective("AllReduce", 4)});  // switches the mask on: not recorded
  // NCCL starts the replay's task events only if the plan has proxy work; when it does, the
  // task is neither recorded nor numbered (its mask lacked the device events).
  for (const ProfilerDriver::Task& t : d->Replay({early})) EXPECT_EQ(t.handle, nullptr);
  d->BeginCapture();
  ProfilerDriver::Call late = d->Collective("AllReduce", 16);
  d->CaptureLaunch({late});
  d->EndCapture();
  std::vector<rs_gpu_op> r = RunAll(d, d->Replay({late}));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].seq, 1u);  // the first replay recorded on this communicator
  EXPECT_EQ(r[0].graph_call_seq, 3u);
}

TEST_F(V5, SendsOfAReplayAndAfterACapturedOneAreRecordedUnnumbered) {
  SetReader(true);
  ProfilerDriver* d = Comm(0x96ab, 4, 1);
  d->Launch({d->PointToPoint("Send", 4, 2)});  // switches the mask on: not recorded
  std::vector<rs_gpu_op> before = RunAll(d, d->Launch({d->PointToPoint("Send", 8, 2)}));
  ASSERT_EQ(before.size(), 1u);
  EXPECT_EQ(before[0].seq, 2u);  // the second send to rank 2
  d->BeginCapture();
  ProfilerDriver::Call send = d->PointToPoint("Send", 64, 2);
  d->CaptureLaunch({send});
  d->EndCapture();
  std::vector<rs_gpu_op> replay = RunAll(d, d->Replay({send}));
  ASSERT_EQ(replay.size(), 1u);
  EXPECT_NE(replay[0].flags & RS_GPU_GRAPH_REPLAY, 0u);
  EXPECT_EQ(replay[0].seq, 0u);
  EXPECT_EQ(replay[0].graph_call_seq, 3u);  // the communicator's third send / receive call
  // NCCL numbers a send at its launch, the probe at its call: after a captured one they may
  // differ, so no later send is numbered.
  std::vector<rs_gpu_op> after = RunAll(d, d->Launch({d->PointToPoint("Send", 8, 2)}));
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].seq, 0u);
  EXPECT_EQ(after[0].flags & RS_GPU_GRAPH_REPLAY, 0u);
}

}  // namespace
}  // namespace rs_test
