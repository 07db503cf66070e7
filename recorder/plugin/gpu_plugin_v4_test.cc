// The plugin through its ncclProfiler_v4 table, as NCCL 2.27 calls it (no API or launch
// events): collectives numbered in launch order (RS_GPU_SEQ_LAUNCH_ORDER), device times
// without an upper bound of the clock offset. Its own process: the first init chooses the
// API version of the process's masks.
#include <gtest/gtest.h>

#include <vector>

#include "recorder/plugin/gpu_plugin_testing.h"
#include "recorder/plugin/profiler_driver.h"

namespace rs_test {
namespace {

constexpr int64_t kDeviceOffset = -500'000;  // the device's clock behind the host's

TEST(GpuPluginV4, NumbersInLaunchOrderAndSaysSo) {
  ASSERT_NE(PluginV4(), nullptr) << "RS_GPU_PLUGIN must name the built plugin";
  ProfilerDriver d(PluginV4(), 0xf4, 2, 1);
  ASSERT_EQ(d.init_result(), 0);
  ASSERT_NE(OwnRing(), nullptr);
  EXPECT_EQ(OwnRing()->header().api_version, 4);
  EXPECT_EQ(d.mask(), kBaseMaskV4);
  SetReader(true);
  ProfilerDriver::Task warm = d.Launch({d.Collective("AllReduce", 4)})[0];
  EXPECT_EQ(warm.handle, nullptr);  // its mask was read before the reader was seen
  EXPECT_EQ(d.mask(), kBaseMaskV4 | kDeviceEvents);

  // A group whose second call is launched first: v4 numbers in launch order.
  ProfilerDriver::Call first = d.Collective("AllReduce", 16);
  ProfilerDriver::Call second = d.Collective("Broadcast", 64, "ncclInt8", 1);
  std::vector<ProfilerDriver::Task> tasks = d.Launch({second, first});
  std::vector<int64_t> start_truth, end_truth;
  for (const ProfilerDriver::Task& t : tasks) {
    ASSERT_NE(t.handle, nullptr);
    start_truth.push_back(NowNs());
    void* ch = d.KernelChStart(t, static_cast<uint64_t>(start_truth.back() + kDeviceOffset));
    void* op = d.ProxyOpStart(t, 0, true, 1);
    d.ProxyStep(op, 0, true, 64);
    d.Stop(op);
    end_truth.push_back(NowNs());
    d.KernelChStop(ch, static_cast<uint64_t>(end_truth.back() + kDeviceOffset));
  }
  std::vector<rs_gpu_op> r = OwnRing()->Read();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].func, RS_GPU_BROADCAST);
  EXPECT_EQ(r[0].seq, 2u);
  EXPECT_EQ(r[0].peer, 1);
  EXPECT_EQ(r[1].func, RS_GPU_ALL_REDUCE);
  EXPECT_EQ(r[1].seq, 3u);
  EXPECT_EQ(r[1].nccl_seq, 1u);
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(r[i].flags, static_cast<uint32_t>(RS_GPU_SEQ_LAUNCH_ORDER | RS_GPU_CLOCK_UNBOUNDED));
    EXPECT_EQ(r[i].clock_error_ns, -1);
    EXPECT_EQ(r[i].api_ns, 0);  // no API events in v4
    EXPECT_EQ(r[i].state, RS_GPU_COMPLETED);
    EXPECT_EQ(r[i].net_bytes_sent, 64u);
    // Unbounded above, still never earlier than the truth.
    EXPECT_GE(r[i].device_start_ns, start_truth[i]);
    EXPECT_GE(r[i].device_end_ns, end_truth[i]);
    EXPECT_LT(r[i].device_end_ns, end_truth[i] + 1'000'000'000);
  }
  // Sends and receives: per peer and direction, as in v5.
  std::vector<ProfilerDriver::Task> p2p =
      d.Launch({d.PointToPoint("Send", 8, 0), d.PointToPoint("Send", 8, 0)});
  for (const ProfilerDriver::Task& t : p2p) {
    void* ch = d.KernelChStart(t, static_cast<uint64_t>(NowNs() + kDeviceOffset));
    d.KernelChStop(ch, static_cast<uint64_t>(NowNs() + kDeviceOffset));
  }
  r = OwnRing()->Read();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].seq, 1u);
  EXPECT_EQ(r[1].seq, 2u);
  EXPECT_EQ(r[1].flags & RS_GPU_SEQ_LAUNCH_ORDER, 0u);  // send/receive numbers are exact
  const Counters c = Counters::Of(OwnRing()->header());
  EXPECT_EQ(c.ops, 5u);
  EXPECT_EQ(c.unrecorded, 1u);
  EXPECT_EQ(c.late, 0u);
}

}  // namespace
}  // namespace rs_test
