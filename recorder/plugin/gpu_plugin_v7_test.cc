// The plugin through its ncclProfiler_v7 table, as NCCL 2.31 calls it: each call's user tag
// kept in its record, the kernel channels' phases (the longest initial and final sync of an
// operation's channels), copy-engine collectives counted without a record and without
// disturbing the numbering. Its own process: the first init chooses the API version of the
// process's masks.
#include <gtest/gtest.h>

#include <vector>

#include "recorder/plugin/gpu_plugin_testing.h"
#include "recorder/plugin/profiler_driver.h"

namespace rs_test {
namespace {

constexpr uint64_t kDevice = 7'000'000'000;  // a made-up device clock

class V7 : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(PluginV7(), nullptr) << "RS_GPU_PLUGIN must name the built plugin";
    ASSERT_NE(PluginV6(), nullptr);  // NCCL 2.29-2.30 look for it
    d_ = std::make_unique<ProfilerDriver>(PluginV7(), 0x77, 4, 2);
    ASSERT_EQ(d_->init_result(), 0);
    ASSERT_NE(OwnRing(), nullptr);
    SetReader(true);
    // The switch to the full mask (the first test's call is not recorded: its mask was read
    // before the reader was seen; later tests' calls are, and complete here).
    ProfilerDriver::Task warm = d_->Launch({d_->Collective("AllReduce", 1)})[0];
    d_->KernelChStop(d_->KernelChStart(warm, kDevice), kDevice + 1);
    OwnRing()->Read();
    ASSERT_TRUE(OwnRing()->InFlight().empty());
  }
  // A launched collective whose channels ran with the given phases: per channel, the lengths
  // of initial_sync, compute and final_sync (0: not reported, as NCCL leaves out a phase of
  // zero length); phases off: no KernelPhase events at all.
  rs_gpu_op Run(ProfilerDriver::Call call, const std::vector<std::vector<uint64_t>>& channels,
                bool phases = true) {
    ProfilerDriver::Task t = d_->Launch({call}, static_cast<uint8_t>(channels.size()))[0];
    EXPECT_NE(t.handle, nullptr);
    for (const std::vector<uint64_t>& lengths : channels) {
      uint64_t at = kDevice + next_++ * 1'000'000;
      void* ch = d_->KernelChStart(t, at);
      for (uint8_t phase = 0; phase < 3 && phases; ++phase) {
        if (lengths[phase] != 0) d_->KernelPhase(ch, phase, at, at + lengths[phase]);
        at += lengths[phase];
      }
      d_->KernelChStop(ch, at + 1);
    }
    std::vector<rs_gpu_op> r = OwnRing()->Read();
    EXPECT_EQ(r.size(), 1u);
    return r.empty() ? rs_gpu_op{} : r[0];
  }
  std::unique_ptr<ProfilerDriver> d_;
  uint64_t next_ = 0;
};

TEST_F(V7, ChosenWithTheKernelPhasesInTheFullMask) {
  EXPECT_EQ(OwnRing()->header().api_version, 7);
  EXPECT_EQ(d_->mask() & ncclProfileKernelPhase, ncclProfileKernelPhase);
  EXPECT_EQ(d_->mask() & ncclProfileCeColl, ncclProfileCeColl);  // counted, always
  SetReader(false);
  d_->Launch({d_->Collective("AllReduce", 1)});
  EXPECT_EQ(d_->mask() & (ncclProfileKernelPhase | ncclProfileKernelCh), 0);
  EXPECT_EQ(d_->mask() & ncclProfileCeColl, ncclProfileCeColl);
}

TEST_F(V7, KeepsTheLongestSyncPhasesAndTheUserTag) {
  ProfilerDriver::Call c = d_->Collective("AllReduce", 1024);
  c.user_tag = 42;
  c.symmetric = true;
  const rs_gpu_op r = Run(c, {{5000, 20000, 300}, {7000, 18000, 0}});
  EXPECT_EQ(r.user_tag, 42u);
  EXPECT_EQ(r.flags & (RS_GPU_V7_TASK | RS_GPU_SYMMETRIC_KERNEL),
            RS_GPU_V7_TASK | RS_GPU_SYMMETRIC_KERNEL);
  EXPECT_NE(r.flags & RS_GPU_KERNEL_PHASES, 0u);
  EXPECT_EQ(r.initial_sync_ns, 7000);
  EXPECT_EQ(r.final_sync_ns, 300);
  EXPECT_EQ(r.state, RS_GPU_COMPLETED);
  EXPECT_EQ(r.channels_stopped, 2);
}

TEST_F(V7, NoPhasesNoFlagAndAnUnreportedPhaseIsZero) {
  const rs_gpu_op none = Run(d_->Collective("AllReduce", 8), {{0, 0, 0}}, false);
  EXPECT_EQ(none.flags & RS_GPU_KERNEL_PHASES, 0u);
  EXPECT_EQ(none.user_tag, 0u);  // untagged
  EXPECT_EQ(none.flags & (RS_GPU_V7_TASK | RS_GPU_SYMMETRIC_KERNEL), RS_GPU_V7_TASK);
  const rs_gpu_op compute_only = Run(d_->Collective("AllReduce", 8), {{0, 9000, 0}});
  EXPECT_NE(compute_only.flags & RS_GPU_KERNEL_PHASES, 0u);
  EXPECT_EQ(compute_only.initial_sync_ns, 0);
  EXPECT_EQ(compute_only.final_sync_ns, 0);
}

TEST_F(V7, APhaseEndingBeforeItStartedIsFlaggedNotUsed) {
  ProfilerDriver::Task t = d_->Launch({d_->Collective("AllReduce", 8)})[0];
  void* ch = d_->KernelChStart(t, kDevice);
  d_->KernelPhase(ch, ncclProfilerKernelPhaseInitialSync, kDevice + 500, kDevice + 100);
  d_->KernelChStop(ch, kDevice + 1000);
  std::vector<rs_gpu_op> r = OwnRing()->Read();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(r[0].flags & RS_GPU_DEVICE_TIME_BACKWARDS, 0u);
  EXPECT_EQ(r[0].initial_sync_ns, 0);
}

TEST_F(V7, CopyEngineCollectivesAreCountedAndKeepTheNumbering) {
  const uint64_t ce_before = OwnRing()->header().ops_copy_engine;
  ProfilerDriver::Task first = d_->Launch({d_->Collective("AllReduce", 8)})[0];
  ProfilerDriver::Call ce = d_->Collective("AllGather", 64);
  d_->CopyEngineCollective(ce);
  const rs_gpu_op after = Run(d_->Collective("AllReduce", 8), {{100, 100, 100}});
  void* ch = d_->KernelChStart(first, kDevice);
  d_->KernelChStop(ch, kDevice + 10);
  std::vector<rs_gpu_op> r = OwnRing()->Read();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(after.seq, r[0].seq + 2);  // the copy-engine call between them kept its number
  EXPECT_EQ(OwnRing()->header().ops_copy_engine, ce_before + 1);
  EXPECT_TRUE(OwnRing()->InFlight().empty());  // nothing waits for device events
  // A copy-engine AlltoAll: NCCL starts a CollApi event for it, but nccl_events numbers no
  // ncclAlltoAll call: it takes no number, the next collective follows on.
  d_->CopyEngineCollective(d_->Collective("AlltoAll", 64));
  const rs_gpu_op next = Run(d_->Collective("AllReduce", 8), {{100, 100, 100}});
  EXPECT_EQ(next.seq, after.seq + 1);
  EXPECT_EQ(OwnRing()->header().ops_copy_engine, ce_before + 2);
}

TEST_F(V7, SendsAndReceivesCarryTheirTag) {
  ProfilerDriver::Call c = d_->PointToPoint("Send", 256, 3);
  c.user_tag = 7;
  const rs_gpu_op r = Run(c, {{0, 400, 0}});
  EXPECT_EQ(r.func, RS_GPU_SEND);
  EXPECT_EQ(r.user_tag, 7u);
}

// The same events through the v6 table (NCCL 2.29-2.30): no tags and no phases arrive.
TEST(GpuPluginV6, AdaptedEventsLoseTagsAndPhases) {
  ncclProfilerEventDescr_v7_t d;
  std::memset(&d, 0, sizeof(d));
  d.type = ncclProfileColl;
  d.coll.func = "AllReduce";
  d.coll.count = 5;
  d.coll.algo = "RING";
  d.coll.userTag = 9;
  ncclProfilerEventDescr_v6_t v6;
  ASSERT_TRUE(rs::NcclProfilerDescrV6(d, &v6));
  EXPECT_STREQ(v6.coll.func, "AllReduce");
  EXPECT_EQ(v6.coll.count, 5u);
  EXPECT_STREQ(v6.coll.algo, "RING");
  ncclProfilerEventDescr_v5_t v5;
  ASSERT_TRUE(rs::NcclProfilerDescrV5(d, &v5));
  EXPECT_EQ(v5.coll.count, 5u);
  EXPECT_STREQ(v5.coll.algo, "RING");
  d.type = ncclProfileKernelPhase;
  EXPECT_FALSE(rs::NcclProfilerDescrV6(d, &v6));
  d.type = ncclProfileCeColl;
  ASSERT_TRUE(rs::NcclProfilerDescrV6(d, &v6));
  EXPECT_FALSE(rs::NcclProfilerDescrV5(v6, &v5));
}

}  // namespace
}  // namespace rs_test
