#include "merger/evidence.h"

#include <gtest/gtest.h>

namespace rs::merge {
namespace {

HostCall Call(int64_t entry, int64_t exit, bool gpu = false,
              std::optional<int64_t> sync = std::nullopt) {
  HostCall c;
  c.entry_ns = entry;
  c.exit_ns = exit;
  c.gpu_process = gpu;
  c.sync_exit_ns = sync;
  return c;
}

TEST(BlockingSyncKind, OnlyCallsThatWaitForTheDevice) {
  EXPECT_EQ(BlockingSyncKind("cudaDeviceSynchronize", {}, {}), SyncKind::kDevice);
  EXPECT_EQ(BlockingSyncKind("cuCtxSynchronize", {}, {}), SyncKind::kDevice);
  EXPECT_EQ(BlockingSyncKind("cudaStreamSynchronize", {}, 0x10), SyncKind::kStream);
  EXPECT_EQ(BlockingSyncKind("cudaStreamSynchronize", {}, 0), SyncKind::kStream);  // legacy
  EXPECT_EQ(BlockingSyncKind("cudaStreamSynchronize_ptsz", {}, 0x10), SyncKind::kStream);
  // The thread's own default stream: no NCCL call names it.
  EXPECT_EQ(BlockingSyncKind("cudaStreamSynchronize_ptsz", {}, 0), std::nullopt);
  EXPECT_EQ(BlockingSyncKind("cudaStreamSynchronize", {}, std::nullopt), std::nullopt);
  EXPECT_EQ(BlockingSyncKind("cuStreamSynchronize", {}, 0x10), SyncKind::kStream);
  // Blocking copies between host and device; device-to-device, host-to-host and inferred
  // directions do not synchronize with the host.
  EXPECT_EQ(BlockingSyncKind("cudaMemcpy", 2, {}), SyncKind::kLegacyCopy);
  EXPECT_EQ(BlockingSyncKind("cudaMemcpy", 1, {}), SyncKind::kLegacyCopy);
  for (std::optional<int64_t> kind : {std::optional<int64_t>(0), std::optional<int64_t>(3),
                                      std::optional<int64_t>(4), std::optional<int64_t>()}) {
    EXPECT_EQ(BlockingSyncKind("cudaMemcpy", kind, {}), std::nullopt) << kind.value_or(-1);
  }
  EXPECT_EQ(BlockingSyncKind("cuMemcpyDtoH_v2", 2, {}), SyncKind::kLegacyCopy);
  EXPECT_EQ(BlockingSyncKind("cuMemcpyDtoD_v2", 3, {}), std::nullopt);
  EXPECT_EQ(BlockingSyncKind("cudaEventSynchronize", {}, {}), SyncKind::kEvent);
  // Asynchronous calls never count.
  for (const char* api : {"cudaMemcpyAsync", "cudaLaunchKernel", "cudaStreamWaitEvent",
                          "cudaMalloc", "cudaFree", "cuMemcpyDtoHAsync_v2"}) {
    EXPECT_EQ(BlockingSyncKind(api, 2, 0x10), std::nullopt) << api;
  }
}

TEST(FirstSyncExit, TheFirstWaitingSyncEnteredAfterTheCallReturned) {
  std::vector<SyncCall> syncs = {
      {100, 900, SyncKind::kLegacyCopy, {}},  // entered before the call returned
      {210, 300, SyncKind::kStream, 0x20},    // another stream
      {220, 400, SyncKind::kStream, 0x10},    // the collective's stream
      {230, 500, SyncKind::kDevice, {}},
  };
  EXPECT_EQ(FirstSyncExit(syncs, 200, 0x10), 400);
  EXPECT_EQ(FirstSyncExit(syncs, 200, 0x20), 300);
  EXPECT_EQ(FirstSyncExit(syncs, 200, std::nullopt), 500);  // unknown stream: device-wide only
  EXPECT_EQ(FirstSyncExit(syncs, 100, 0x30), 900);          // entered exactly at the return
  EXPECT_EQ(FirstSyncExit(syncs, 231, 0x10), std::nullopt);
  EXPECT_EQ(FirstSyncExit({}, 0, 0x10), std::nullopt);
}

TEST(CallMode, ByProcessAsksTheProcess) {
  // Without same-node evidence, a process's CUDA calls decide.
  EXPECT_TRUE(Blocks(Call(0, 1, false), CallMode::kByProcess));
  EXPECT_FALSE(Blocks(Call(0, 1, true), CallMode::kByProcess));
  EXPECT_TRUE(Blocks(Call(0, 1, true), CallMode::kBlocking));
  EXPECT_FALSE(Blocks(Call(0, 1, false), CallMode::kEnqueue));
}

TEST(Observe, BlockingCallsBoundByTheirOwnEntriesAndExits) {
  NodeRecords r;
  r.calls = {Call(100, 500), Call(300, 520), Call(200, 510)};
  auto o = Observe(r, CallMode::kBlocking, 3);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->node, 3);
  EXPECT_EQ(o->max_entry_ns, 300);
  EXPECT_EQ(o->min_exit_ns, 500);
  EXPECT_EQ(o->mid_exit_ns, 510);
  EXPECT_EQ(o->evidence, Evidence::kBlockingCall);
}

TEST(Observe, AnEnqueueExitNeverBoundsTheRendezvous) {
  // Enqueues (returned in 5 ns) followed by blocking syncs: the exits are the syncs', the
  // entries the calls'.
  NodeRecords r;
  r.calls = {Call(100, 105, true, 900), Call(300, 305, true, 950)};
  for (CallMode mode : {CallMode::kEnqueue, CallMode::kByProcess}) {
    auto o = Observe(r, mode, 0);
    ASSERT_TRUE(o);
    EXPECT_EQ(o->evidence, Evidence::kSyncAfter);
    EXPECT_EQ(o->max_entry_ns, 300);
    EXPECT_EQ(o->min_exit_ns, 900);
    EXPECT_EQ(o->mid_exit_ns, 950);
  }
  // Without a sync after them, enqueues bound nothing.
  NodeRecords bare;
  bare.calls = {Call(100, 105, true), Call(300, 305, true)};
  EXPECT_FALSE(Observe(bare, CallMode::kEnqueue, 0));
  EXPECT_FALSE(Observe(bare, CallMode::kByProcess, 0));
  // The same calls taken as blocking would be an observation that contradicts itself.
  auto wrong = Observe(bare, CallMode::kBlocking, 0);
  ASSERT_TRUE(wrong);
  EXPECT_LT(wrong->min_exit_ns, wrong->max_entry_ns);
}

TEST(Observe, DeviceTimesArePreferredAndTheirConversionBoundWidensTheEntry) {
  NodeRecords r;
  r.calls = {Call(100, 105, true, 2000), Call(150, 160, true, 2100)};
  r.device = {DeviceSpan{1000, 1500, 20}, DeviceSpan{1200, 1510, 20}};
  auto o = Observe(r, CallMode::kEnqueue, 1);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->evidence, Evidence::kDevice);
  EXPECT_EQ(o->max_entry_ns, 1200 - 20);  // the true start can be that much earlier
  EXPECT_EQ(o->min_exit_ns, 1500);        // the tightest exit of every kind
  EXPECT_EQ(o->mid_exit_ns, 1510);
  EXPECT_FALSE(o->device_clock_unbounded);
  // Without a bound the converted start may be late by any amount: no entry from it (the host
  // calls' entries remain), its end still an exit, and said so.
  r.device[1].clock_error_ns.reset();
  o = Observe(r, CallMode::kEnqueue, 1);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->max_entry_ns, 1000 - 20);
  EXPECT_EQ(o->min_exit_ns, 1500);
  EXPECT_TRUE(o->device_clock_unbounded);
  // Unbounded device spans alone (no host call recorded) give no entry: no observation.
  NodeRecords alone;
  alone.device = {DeviceSpan{1000, 1500, std::nullopt}};
  EXPECT_FALSE(Observe(alone, CallMode::kEnqueue, 1));
}

TEST(Observe, ATighterExitOfAnotherKindIsUsedButTheMedianKeepsItsKind) {
  // One rank blocking (a CPU process without CUDA), one enqueueing with a sync after: under the
  // per-process rule both exits count, the median comes from the blocking calls.
  NodeRecords r;
  r.calls = {Call(100, 400, false), Call(150, 160, true, 380)};
  auto o = Observe(r, CallMode::kByProcess, 0);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->evidence, Evidence::kBlockingCall);
  EXPECT_EQ(o->min_exit_ns, 380);
  EXPECT_EQ(o->mid_exit_ns, 400);
  EXPECT_EQ(o->max_entry_ns, 150);
}

TEST(Observe, InitsAreCommInitEvidence) {
  NodeRecords r;
  r.init = true;
  r.calls = {Call(100, 900, true), Call(200, 950, true)};
  auto o = Observe(r, CallMode::kEnqueue, 0);  // init calls block whatever the collectives do
  ASSERT_TRUE(o);
  EXPECT_EQ(o->evidence, Evidence::kCommInit);
  EXPECT_EQ(o->min_exit_ns, 900);
}

}  // namespace
}  // namespace rs::merge
