// NCCL's network proxy through the v5 table: each step's states, in the order NCCL's net
// transport records them (src/transport/net.cc), become the operation's proxy sums -- how long
// its sends waited for the kernel, for the receiving peer and for the network, how long its
// receives waited for the data and for the kernel -- and the peer of its slowest send step.
// Times are checked against sleeps the test makes (lower bounds) and against the wall time
// around the step (upper bounds): no assertion on how fast this machine is.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "recorder/plugin/gpu_plugin_v5_fixture.h"
#include "recorder/plugin/gpu_proxy.h"

namespace rs_test {
namespace {

constexpr int64_t kMs = 1'000'000;

void Sleep(int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

void State(ProfilerDriver* d, void* step, ncclProfilerEventState_t s, size_t bytes = 100) {
  ncclProfilerEventStateArgs_v5_t a;
  std::memset(&a, 0, sizeof(a));
  a.proxyStep.transSize = bytes;
  d->Record(step, s, &a);
}

// Finishes the task's kernel (its one channel) and returns its record.
rs_gpu_op Finish(ProfilerDriver* d, void* channel) {
  d->KernelChStop(channel, static_cast<uint64_t>(NowNs() + kDeviceOffset));
  std::vector<rs_gpu_op> r = Records();
  EXPECT_EQ(r.size(), 1u);
  return r.empty() ? rs_gpu_op{} : r[0];
}

struct Started {
  ProfilerDriver::Task task;
  void* channel = nullptr;
};

// A task launched with the device events (the call before it switched NCCL's mask to them).
Started Start(ProfilerDriver* d) {
  d->Launch({d->Collective("AllReduce", 4)});
  Started s;
  s.task = d->Launch({d->Collective("AllReduce", 8)})[0];
  s.channel = d->KernelChStart(s.task, static_cast<uint64_t>(NowNs() + kDeviceOffset));
  return s;
}

TEST_F(V5, SendStepPhasesAreSummedAndARepeatedPeerWaitGoesOn) {
  SetReader(true);
  ProfilerDriver* d = Comm(0x9a01);
  Started s = Start(d);
  void* op = d->ProxyOpStart(s.task, 3, true, 1);
  const int64_t before = NowNs();
  void* step = d->ProxyStepStart(op, 0);
  ASSERT_NE(step, nullptr);
  State(d, step, ncclProfilerProxyStepSendGPUWait);
  Sleep(3);  // the kernel fills the buffer
  State(d, step, ncclProfilerProxyStepSendPeerWait_v4);
  Sleep(2);  // isend turned down: no credit from the peer yet ...
  State(d, step, ncclProfilerProxyStepSendPeerWait_v4);  // ... NCCL records the state again
  Sleep(2);
  State(d, step, ncclProfilerProxyStepSendWait, 4096);
  Sleep(4);  // on the network
  d->Stop(step);
  const int64_t after = NowNs();
  d->Stop(op);
  const rs_gpu_op r = Finish(d, s.channel);
  EXPECT_EQ(r.proxy_steps, 1u);
  EXPECT_GE(r.send_gpu_wait_ns, 3 * kMs);
  EXPECT_GE(r.send_peer_wait_ns, 4 * kMs);  // from the first PeerWait, not the repeat
  EXPECT_GE(r.send_net_ns, 4 * kMs);
  EXPECT_LE(r.send_gpu_wait_ns + r.send_peer_wait_ns + r.send_net_ns, after - before);
  EXPECT_EQ(r.net_step_max_ns, r.send_net_ns);
  EXPECT_EQ(r.net_step_max_peer, 3);
  EXPECT_EQ(r.recv_net_wait_ns, 0);
  EXPECT_EQ(r.recv_gpu_wait_ns, 0);
  EXPECT_EQ(r.net_bytes_sent, 4096u);
  EXPECT_EQ(r.flags & RS_GPU_PROXY_TIMES_PARTIAL, 0u);
}

TEST_F(V5, ReceiveStepWaitsForTheDataThroughTheFlushThenForTheKernel) {
  SetReader(true);
  ProfilerDriver* d = Comm(0x9a02);
  Started s = Start(d);
  void* op = d->ProxyOpStart(s.task, 0, false, 1);
  const int64_t before = NowNs();
  void* step = d->ProxyStepStart(op, 0);
  State(d, step, ncclProfilerProxyStepRecvWait);
  Sleep(3);  // the sender's data on its way
  State(d, step, ncclProfilerProxyStepRecvFlushWait, 512);
  Sleep(2);  // NCCL's flush into device memory
  State(d, step, ncclProfilerProxyStepRecvGPUWait);
  Sleep(4);  // the kernel consumes it
  d->Stop(step);
  const int64_t after = NowNs();
  d->Stop(op);
  const rs_gpu_op r = Finish(d, s.channel);
  EXPECT_EQ(r.proxy_steps, 1u);
  EXPECT_GE(r.recv_net_wait_ns, 5 * kMs);
  EXPECT_GE(r.recv_gpu_wait_ns, 4 * kMs);
  EXPECT_LE(r.recv_net_wait_ns + r.recv_gpu_wait_ns, after - before);
  EXPECT_EQ(r.send_gpu_wait_ns + r.send_peer_wait_ns + r.send_net_ns, 0);
  EXPECT_EQ(r.net_step_max_peer, -1);  // no send step
  EXPECT_EQ(r.net_bytes_recv, 512u);
}

// Two channels' sends to two peers: the sums add up, the slowest step names its peer; a step
// stopped before any state (a receive NCCL posts again) is not counted.
TEST_F(V5, SlowestSendStepNamesItsPeer) {
  SetReader(true);
  ProfilerDriver* d = Comm(0x9a03);
  Started s = Start(d);
  void* to1 = d->ProxyOpStart(s.task, 1, true, 1);
  void* to2 = d->ProxyOpStart(s.task, 2, true, 1);
  void* fast = d->ProxyStepStart(to1, 0);
  void* slow = d->ProxyStepStart(to2, 0);
  for (void* step : {fast, slow}) {
    State(d, step, ncclProfilerProxyStepSendGPUWait);
    State(d, step, ncclProfilerProxyStepSendPeerWait_v4);
    State(d, step, ncclProfilerProxyStepSendWait);
  }
  d->Stop(fast);
  Sleep(5);
  d->Stop(slow);
  void* unposted = d->ProxyStepStart(to1, 1);
  d->Stop(unposted);
  d->Stop(to1);
  d->Stop(to2);
  const rs_gpu_op r = Finish(d, s.channel);
  EXPECT_EQ(r.proxy_steps, 2u);
  EXPECT_EQ(r.net_step_max_peer, 2);
  EXPECT_GE(r.net_step_max_ns, 5 * kMs);
  EXPECT_GE(r.send_net_ns, r.net_step_max_ns);
}

// NCCL starts a receive step again (same step, handle overwritten) whenever the network turned
// its irecv down; the abandoned start never stops. The operation is still written when its
// ProxyOp and kernel stop, with the step that ran timed once.
TEST_F(V5, ReceiveStepStartedAgainDoesNotHoldTheOperation) {
  SetReader(true);
  ProfilerDriver* d = Comm(0x9a06);
  Started s = Start(d);
  void* op = d->ProxyOpStart(s.task, 0, false, 1);
  d->ProxyStepStart(op, 0);  // irecv turned down: no state, never stopped
  void* step = d->ProxyStepStart(op, 0);
  State(d, step, ncclProfilerProxyStepRecvWait);
  State(d, step, ncclProfilerProxyStepRecvFlushWait, 64);
  State(d, step, ncclProfilerProxyStepRecvGPUWait);
  d->Stop(step);
  d->Stop(op);
  const rs_gpu_op r = Finish(d, s.channel);
  EXPECT_EQ(r.state, RS_GPU_COMPLETED);
  EXPECT_EQ(r.flags & RS_GPU_FINALIZED, 0u);
  EXPECT_EQ(r.proxy_steps, 1u);
  EXPECT_EQ(r.net_bytes_recv, 64u);
  EXPECT_EQ(Delta().late, 0u);
}

// A peer the handle cannot hold (rank 4095 and up) is not named; its steps are still timed.
TEST_F(V5, PeerPastTheHandlesRangeIsNotNamed) {
  SetReader(true);
  ProfilerDriver* d = Comm(0x9a04, 8192, 1);
  Started s = Start(d);
  void* op = d->ProxyOpStart(s.task, 5000, true, 1);
  d->ProxyStep(op, 0, true, 64);
  d->Stop(op);
  const rs_gpu_op r = Finish(d, s.channel);
  EXPECT_EQ(r.proxy_steps, 1u);
  EXPECT_EQ(r.net_step_max_peer, -1);
}

// More steps in flight than the timing entries: the oldest step's entry goes to a later step,
// so its states are not timed and the operation says its sums are partial.
TEST_F(V5, StepWhoseEntryWasTakenIsUntimedAndFlagged) {
  SetReader(true);
  ProfilerDriver* d = Comm(0x9a05);
  Started s = Start(d);
  void* op = d->ProxyOpStart(s.task, 2, true, RS_GPU_STEP_ENTRIES + 1);
  void* old = d->ProxyStepStart(op, 0);
  State(d, old, ncclProfilerProxyStepSendGPUWait);
  for (int i = 1; i <= RS_GPU_STEP_ENTRIES; ++i) {
    void* step = d->ProxyStepStart(op, i);
    State(d, step, ncclProfilerProxyStepSendWait);
    d->Stop(step);
  }
  State(d, old, ncclProfilerProxyStepSendWait);
  d->Stop(old);
  d->Stop(op);
  const rs_gpu_op r = Finish(d, s.channel);
  EXPECT_EQ(r.proxy_steps, static_cast<uint32_t>(RS_GPU_STEP_ENTRIES));
  EXPECT_NE(r.flags & RS_GPU_PROXY_TIMES_PARTIAL, 0u);
  EXPECT_EQ(r.send_gpu_wait_ns, 0);  // the old step's phase went untimed
}

}  // namespace
}  // namespace rs_test
