// The v5 table's test fixture and device helpers, shared by the plugin's test files: a driver
// per communicator (profiler_driver.h), the records of this process's region, a made-up device
// whose clock runs kDeviceOffset ahead of the host so that converted times can be checked.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "recorder/plugin/gpu_plugin_testing.h"
#include "recorder/plugin/profiler_driver.h"

namespace rs_test {

inline constexpr int64_t kDeviceOffset = 3'000'000'000;

inline std::vector<rs_gpu_op> Records() { return OwnRing()->Read(); }

inline std::vector<rs_gpu_op> BySeq(std::vector<rs_gpu_op> r) {
  std::sort(r.begin(), r.end(),
            [](const rs_gpu_op& a, const rs_gpu_op& b) { return a.seq < b.seq; });
  return r;
}

// A driver of communicator `hash` whose region is open, with the reader's state given.
class V5 : public ::testing::Test {
 protected:
  ProfilerDriver* Comm(uint64_t hash, int nranks = 4, int rank = 1) {
    comms_.push_back(std::make_unique<ProfilerDriver>(PluginV5(), hash, nranks, rank));
    return comms_.back().get();
  }
  // Every test starts without a reader and with the base mask (a call switched it back).
  void SetUp() override {
    ASSERT_NE(PluginV5(), nullptr) << "RS_GPU_PLUGIN must name the built plugin";
    ProfilerDriver* first = Comm(0x5e7);  // the region exists from the first init on
    ASSERT_NE(OwnRing(), nullptr);
    SetReader(false);
    first->Launch({first->Collective("AllReduce", 1)});
    ASSERT_EQ(first->mask(), kBaseMaskV5);
    ASSERT_TRUE(OwnRing()->InFlight().empty());
    Records();  // earlier tests' records
    before_ = Counters::Of(OwnRing()->header());
  }
  void TearDown() override {
    comms_.clear();
    Records();
  }
  Counters Delta() const { return Counters::Of(OwnRing()->header()).Since(before_); }

  std::vector<std::unique_ptr<ProfilerDriver>> comms_;
  Counters before_{};
};

// What the device did for a task, and when (truth on the host clock).
struct DeviceRun {
  uint64_t start_raw = 0, end_raw = 0;
  int64_t start_truth = 0, end_truth = 0;
};

// One channel with a send and a receive proxy operation of `steps` steps of `bytes` each.
inline DeviceRun RunOnDevice(ProfilerDriver* d, const ProfilerDriver::Task& t, int steps = 2,
                      size_t bytes = 1000) {
  DeviceRun run;
  run.start_truth = NowNs();
  run.start_raw = static_cast<uint64_t>(run.start_truth + kDeviceOffset);
  void* ch = d->KernelChStart(t, run.start_raw);
  for (bool send : {true, false}) {
    void* op = d->ProxyOpStart(t, send ? 2 : 0, send, steps);
    for (int s = 0; s < steps; ++s) d->ProxyStep(op, s, send, bytes);
    d->Stop(op);
  }
  run.end_truth = NowNs();
  run.end_raw = static_cast<uint64_t>(run.end_truth + kDeviceOffset);
  d->KernelChStop(ch, run.end_raw);
  return run;
}

// Converted times are never earlier than the truth and at most clock_error_ns later.
inline void ExpectConverted(const rs_gpu_op& r, const DeviceRun& run) {
  EXPECT_EQ(r.device_start_raw, run.start_raw);
  EXPECT_EQ(r.device_end_raw, run.end_raw);
  ASSERT_EQ(r.flags & RS_GPU_CLOCK_UNBOUNDED, 0u);
  EXPECT_GE(r.clock_error_ns, 0);
  EXPECT_GE(r.device_start_ns, run.start_truth);
  EXPECT_LE(r.device_start_ns, run.start_truth + r.clock_error_ns);
  EXPECT_GE(r.device_end_ns, run.end_truth);
  EXPECT_LE(r.device_end_ns, run.end_truth + r.clock_error_ns);
}

}  // namespace rs_test
