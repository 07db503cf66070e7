// The plugin's clock bounds driven through the v5 table (gpu_plugin_v5_fixture.h): the upper
// bound a network receive handed to the device gives, where it holds and where not, and device
// times that run backwards.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "recorder/plugin/gpu_plugin_v5_fixture.h"

namespace rs_test {
namespace {

// A kernel queued on the device behind other work starts long after its launch, which alone
// bounds the clock offset from above; a collective's last network receive handed to the GPU
// (RecvGPUWait) bounds it by how long the kernel ran after it: RING and SIMPLE only, where
// every receive waits for the tail NCCL stores after that state (gpu_clock.c).
struct QueuedRun {
  rs_gpu_op record;
  DeviceRun run;
};
QueuedRun RunQueued(ProfilerDriver* d, ProfilerDriver::Call call, int64_t queued_ns) {
  std::vector<ProfilerDriver::Task> t = d->Launch({call});
  std::this_thread::sleep_for(std::chrono::nanoseconds(queued_ns));
  QueuedRun q;
  q.run = RunOnDevice(d, t.at(0));
  std::vector<rs_gpu_op> r = Records();
  if (r.size() == 1) q.record = r[0];
  return q;
}

TEST_F(V5, ReceiveHandedToTheDeviceTightensTheClockBound) {
  constexpr int64_t kQueued = 30'000'000;
  SetReader(true);
  ProfilerDriver* d = Comm(0xb0b, 4, 1);
  d->Launch({d->Collective("AllReduce", 4)});  // switches the mask on: not recorded
  ProfilerDriver::Call ll = d->Collective("AllReduce", 64);
  ll.proto = "LL";
  const QueuedRun loose = RunQueued(d, ll, kQueued);
  ExpectConverted(loose.record, loose.run);
  EXPECT_GE(loose.record.clock_error_ns, kQueued);  // LL: the launch is the only upper bound
  ProfilerDriver::Call tree = d->Collective("AllReduce", 64);
  tree.algo = "TREE";
  const QueuedRun split = RunQueued(d, tree, kQueued);
  ExpectConverted(split.record, split.run);
  EXPECT_GE(split.record.clock_error_ns, kQueued);
  const QueuedRun ring = RunQueued(d, d->Collective("AllReduce", 1 << 20), kQueued);
  ExpectConverted(ring.record, ring.run);
  // Bounded by the time from its last receive to its stop (microseconds here), not the queue.
  EXPECT_LT(ring.record.clock_error_ns, kQueued);
  EXPECT_LE(ring.record.clock_error_ns, ring.run.end_truth - ring.run.start_truth);
  // The offset stays bounded for what follows.
  const QueuedRun next = RunQueued(d, ll, kQueued);
  ExpectConverted(next.record, next.run);
  EXPECT_LT(next.record.clock_error_ns, kQueued);
  EXPECT_EQ(Delta().late, 0u);
}

// Send/receive split a channel's threads into groups, and a channel stopped without a device
// time may be the one that received last: neither bounds the offset from above.
TEST_F(V5, NoReceiveBoundFromPointToPointOrUntimedStops) {
  constexpr int64_t kQueued = 30'000'000;
  SetReader(true);
  ProfilerDriver* d = Comm(0xb0c, 4, 1);
  d->Launch({d->Collective("AllReduce", 4)});
  const QueuedRun p2p = RunQueued(d, d->PointToPoint("Recv", 4096, 2), kQueued);
  ExpectConverted(p2p.record, p2p.run);
  EXPECT_GE(p2p.record.clock_error_ns, kQueued);
  std::vector<ProfilerDriver::Task> t = d->Launch({d->Collective("AllReduce", 1 << 20)}, 2);
  std::this_thread::sleep_for(std::chrono::nanoseconds(kQueued));
  const int64_t start = NowNs();
  void* ch0 = d->KernelChStart(t[0], static_cast<uint64_t>(start + kDeviceOffset));
  void* ch1 = d->KernelChStart(t[0], static_cast<uint64_t>(start + kDeviceOffset));
  void* op = d->ProxyOpStart(t[0], 0, false, 1);
  d->ProxyStep(op, 0, false, 4096);
  d->Stop(op);
  d->KernelChStop(ch0, static_cast<uint64_t>(NowNs() + kDeviceOffset));
  d->KernelChStop(ch1, 0);  // NCCL had no device time for it
  std::vector<rs_gpu_op> r = Records();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].state, RS_GPU_COMPLETED);
  EXPECT_GE(r[0].clock_error_ns, kQueued);
}

// A channel stop at a device time before the operation's start is never used: no end, no
// clock sample (the next operation converts as before), the record flagged.
TEST_F(V5, ADeviceStopBeforeTheStartIsFlaggedNeverUsed) {
  SetReader(true);
  ProfilerDriver* d = Comm(0xb0d, 4, 1);
  d->Launch({d->Collective("AllReduce", 4)});
  std::vector<ProfilerDriver::Task> t = d->Launch({d->Collective("AllReduce", 64)});
  const int64_t start = NowNs();
  void* ch = d->KernelChStart(t[0], static_cast<uint64_t>(start + kDeviceOffset));
  d->KernelChStop(ch, static_cast<uint64_t>(start + kDeviceOffset - 5'000'000));
  std::vector<rs_gpu_op> r = Records();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].flags & RS_GPU_DEVICE_TIME_BACKWARDS, RS_GPU_DEVICE_TIME_BACKWARDS);
  EXPECT_EQ(r[0].device_end_raw, 0u);
  EXPECT_EQ(r[0].device_end_ns, 0);
  EXPECT_EQ(r[0].state, RS_GPU_COMPLETED);  // the channel did stop
  const QueuedRun next = RunQueued(d, d->Collective("AllReduce", 64), 0);
  ExpectConverted(next.record, next.run);
  EXPECT_EQ(next.record.flags & RS_GPU_DEVICE_TIME_BACKWARDS, 0u);
}


}  // namespace
}  // namespace rs_test
