// The test bed library in async mode, as NCCL behaves on a GPU: a collective returns once it
// is enqueued on its stream and runs when the stream reaches it; groups launch at their end;
// launch order per communicator holds across streams; a peer's death is an asynchronous error
// (ncclCommGetAsyncError, later calls) while the stream stays stuck until ncclCommAbort.
// Ranks are forked processes; a host function on the stream that waits for a gate the test
// opens makes "not yet run" observable without timing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "cuda_runtime_api.h"
#include "nccl.h"
#include "test_ranks.h"

namespace {

const bool kAsyncMode = [] { return setenv("RANKSCOPE_TESTLIB_COLLECTIVES", "async", 1) == 0; }();

std::atomic<bool> g_gate{false};

void WaitForGate(void*) {
  while (!g_gate.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

TEST(NcclAsync, TheCallReturnsBeforeTheStreamRunsTheCollective) {
  ASSERT_TRUE(kAsyncMode);
  auto status = RunRanks(3, [](int rank, ncclComm_t comm) -> int {
    cudaStream_t s = nullptr;
    CHILD_CHECK(cudaStreamCreate(&s) == cudaSuccess);
    std::vector<float> buf(3000, static_cast<float>(rank + 1));
    CHILD_CHECK(cudaLaunchHostFunc(s, WaitForGate, nullptr) == cudaSuccess);
    CHILD_CHECK(ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, s) ==
                ncclSuccess);
    CHILD_CHECK(buf[0] == rank + 1);  // enqueued, not run: the stream is held by the gate
    CHILD_CHECK(cudaStreamQuery(s) == cudaErrorNotReady);
    g_gate = true;
    CHILD_CHECK(cudaStreamSynchronize(s) == cudaSuccess);
    for (float v : buf) CHILD_CHECK(v == 6.0f);
    ncclResult_t async = ncclInternalError;
    CHILD_CHECK(ncclCommGetAsyncError(comm, &async) == ncclSuccess && async == ncclSuccess);
    cudaStreamDestroy(s);
    return 0;
  });
  ExpectAllZero(status);
}

TEST(NcclAsync, AGroupLaunchesAtItsEndAndEveryTaskRuns) {
  auto status = RunRanks(2, [](int rank, ncclComm_t comm) -> int {
    cudaStream_t s = nullptr;
    CHILD_CHECK(cudaStreamCreate(&s) == cudaSuccess);
    std::vector<int32_t> sum(64, rank + 1), gathered(2 * 8, -1), mine(8, rank * 10);
    std::vector<int64_t> out(100, rank), in(100, -1);
    CHILD_CHECK(cudaLaunchHostFunc(s, WaitForGate, nullptr) == cudaSuccess);
    CHILD_CHECK(ncclGroupStart() == ncclSuccess);
    CHILD_CHECK(ncclAllReduce(sum.data(), sum.data(), sum.size(), ncclInt32, ncclSum, comm, s) ==
                ncclSuccess);
    CHILD_CHECK(ncclAllGather(mine.data(), gathered.data(), mine.size(), ncclInt32, comm, s) ==
                ncclSuccess);
    CHILD_CHECK(ncclSend(out.data(), out.size(), ncclInt64, 1 - rank, comm, s) == ncclSuccess);
    CHILD_CHECK(ncclRecv(in.data(), in.size(), ncclInt64, 1 - rank, comm, s) == ncclSuccess);
    CHILD_CHECK(ncclGroupEnd() == ncclSuccess);
    CHILD_CHECK(in[0] == -1 && gathered[0] == -1);
    g_gate = true;
    CHILD_CHECK(cudaStreamSynchronize(s) == cudaSuccess);
    for (int32_t v : sum) CHILD_CHECK(v == 3);
    for (size_t i = 0; i < gathered.size(); ++i) CHILD_CHECK(gathered[i] == (i < 8 ? 0 : 10));
    for (int64_t v : in) CHILD_CHECK(v == 1 - rank);
    cudaStreamDestroy(s);
    return 0;
  });
  ExpectAllZero(status);
}

// Rank 0 issues AllReduce A on a held stream, then B on a free one; rank 1 issues both on free
// streams. NCCL runs a communicator's work in launch order: rank 0's B must wait for A, or the
// two ranks would pair A with B on the same connections.
TEST(NcclAsync, LaunchOrderHoldsAcrossStreams) {
  auto status = RunRanks(2, [](int rank, ncclComm_t comm) -> int {
    cudaStream_t s1 = nullptr, s2 = nullptr;
    CHILD_CHECK(cudaStreamCreate(&s1) == cudaSuccess && cudaStreamCreate(&s2) == cudaSuccess);
    std::vector<float> a(4096, 1.0f + rank), b(8192, 10.0f * (rank + 1));
    if (rank == 0) CHILD_CHECK(cudaLaunchHostFunc(s1, WaitForGate, nullptr) == cudaSuccess);
    CHILD_CHECK(ncclAllReduce(a.data(), a.data(), a.size(), ncclFloat32, ncclSum, comm, s1) == 0);
    CHILD_CHECK(ncclAllReduce(b.data(), b.data(), b.size(), ncclFloat32, ncclSum, comm, s2) == 0);
    if (rank == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      CHILD_CHECK(cudaStreamQuery(s2) == cudaErrorNotReady);  // B waits for A
      g_gate = true;
    }
    CHILD_CHECK(cudaStreamSynchronize(s1) == cudaSuccess);
    CHILD_CHECK(cudaStreamSynchronize(s2) == cudaSuccess);
    for (float v : a) CHILD_CHECK(v == 3.0f);
    for (float v : b) CHILD_CHECK(v == 30.0f);
    return 0;
  });
  ExpectAllZero(status);
}

// A peer dies: the surviving ranks' calls still succeed (they only enqueue); the device work
// fails, ncclCommGetAsyncError reports it, later calls return it, and the stream stays stuck
// (a kernel waiting for a dead peer never finishes) until ncclCommAbort.
TEST(NcclAsync, APeersDeathIsAnAsynchronousError) {
  auto status = RunRanks(
      3,
      [](int rank, ncclComm_t comm) -> int {
        if (rank == 1) _exit(0);
        cudaStream_t s = nullptr;
        CHILD_CHECK(cudaStreamCreate(&s) == cudaSuccess);
        std::vector<float> buf(1 << 16, 1.0f);
        CHILD_CHECK(ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm,
                                  s) == ncclSuccess);
        ncclResult_t async = ncclSuccess;
        for (int i = 0; i < 2000 && async == ncclSuccess; ++i) {
          CHILD_CHECK(ncclCommGetAsyncError(comm, &async) == ncclSuccess);
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        CHILD_CHECK(async == ncclRemoteError);
        CHILD_CHECK(cudaStreamQuery(s) == cudaErrorNotReady);  // stuck
        CHILD_CHECK(ncclAllReduce(buf.data(), buf.data(), 4, ncclFloat32, ncclSum, comm, s) ==
                    ncclRemoteError);
        CHILD_CHECK(ncclCommAbort(comm) == ncclSuccess);
        CHILD_CHECK(cudaStreamSynchronize(s) == cudaSuccess);  // released by the abort
        return 0;
      },
      30, /*destroy=*/false);
  EXPECT_EQ(status[0], 0);
  EXPECT_EQ(status[2], 0);
}

TEST(NcclAsync, DestroyWaitsForTheWorkStillQueued) {
  auto status = RunRanks(
      2,
      [](int rank, ncclComm_t comm) -> int {
        cudaStream_t s = nullptr;
        CHILD_CHECK(cudaStreamCreate(&s) == cudaSuccess);
        std::vector<double> buf(1000, rank + 0.5);
        CHILD_CHECK(cudaLaunchHostFunc(s, WaitForGate, nullptr) == cudaSuccess);
        CHILD_CHECK(ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat64, ncclSum, comm,
                                  s) == ncclSuccess);
        std::thread opener([] {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          g_gate = true;
        });
        CHILD_CHECK(ncclCommDestroy(comm) == ncclSuccess);  // returns after the AllReduce ran
        CHILD_CHECK(buf[999] == 2.0);
        opener.join();
        return 0;
      },
      60, /*destroy=*/false);
  ExpectAllZero(status);
}

TEST(NcclAsync, AnInvalidStreamIsRefusedAtTheCall) {
  auto status = RunRanks(1, [](int, ncclComm_t comm) -> int {
    float v = 1;
    CHILD_CHECK(ncclAllReduce(&v, &v, 1, ncclFloat32, ncclSum, comm,
                              reinterpret_cast<cudaStream_t>(0x5151)) == ncclUnhandledCudaError);
    CHILD_CHECK(ncclAllReduce(&v, &v, 1, ncclFloat32, ncclSum, comm, nullptr) == ncclSuccess);
    CHILD_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    CHILD_CHECK(v == 1.0f);
    return 0;
  });
  ExpectAllZero(status);
}

// ncclResult_t after polling ncclCommGetAsyncError while it says ncclInProgress (bounded).
ncclResult_t Polled(ncclComm_t comm, ncclResult_t r) {
  for (int i = 0; r == ncclInProgress && i < 20000; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    if (ncclCommGetAsyncError(comm, &r) != ncclSuccess) return ncclInternalError;
  }
  return r;
}

// A non-blocking communicator (ncclConfig_t.blocking = 0), as NCCL's group.cc runs one: the
// split and every launch return ncclInProgress, the communicator reads ncclInProgress until
// the launch thread is done, a call meanwhile is refused with ncclInvalidArgument
// (ncclCommEnsureReady), and a group that mixes it with a blocking one is refused
// (ncclInvalidUsage). The work itself is NCCL's: the results are the blocking ones.
TEST(NcclAsync, ANonBlockingCommunicatorReturnsInProgressUntilItsLaunchIsDone) {
  auto status = RunRanks(2, [](int rank, ncclComm_t world) -> int {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t comm = nullptr;
    CHILD_CHECK(ncclCommSplit(world, 0, rank, &comm, &config) == ncclInProgress);
    CHILD_CHECK(comm != nullptr && Polled(comm, ncclInProgress) == ncclSuccess);
    cudaStream_t s = nullptr;
    CHILD_CHECK(cudaStreamCreate(&s) == cudaSuccess);
    std::vector<float> a(4096, 1.0f + rank), b(64, 2.0f * (rank + 1));
    CHILD_CHECK(cudaLaunchHostFunc(s, WaitForGate, nullptr) == cudaSuccess);
    ncclResult_t r = ncclAllReduce(a.data(), a.data(), a.size(), ncclFloat32, ncclSum, comm, s);
    CHILD_CHECK(r == ncclInProgress);
    ncclResult_t state = ncclInternalError;
    CHILD_CHECK(ncclCommGetAsyncError(comm, &state) == ncclSuccess);
    if (state == ncclInProgress) {  // the launch thread has not enqueued it yet
      CHILD_CHECK(ncclAllReduce(b.data(), b.data(), b.size(), ncclFloat32, ncclSum, comm, s) ==
                  ncclInvalidArgument);
    }
    CHILD_CHECK(Polled(comm, r) == ncclSuccess);
    CHILD_CHECK(ncclAllReduce(b.data(), b.data(), b.size(), ncclFloat32, ncclSum, comm, s) ==
                ncclInProgress);
    CHILD_CHECK(Polled(comm, ncclInProgress) == ncclSuccess);
    CHILD_CHECK(ncclGroupStart() == ncclSuccess);
    CHILD_CHECK(ncclAllReduce(b.data(), b.data(), b.size(), ncclFloat32, ncclSum, comm, s) ==
                ncclSuccess);
    CHILD_CHECK(ncclAllReduce(b.data(), b.data(), b.size(), ncclFloat32, ncclSum, world, s) ==
                ncclSuccess);
    CHILD_CHECK(ncclGroupEnd() == ncclInvalidUsage);
    CHILD_CHECK(Polled(comm, ncclInProgress) == ncclSuccess);  // nothing was launched
    g_gate = true;
    CHILD_CHECK(cudaStreamSynchronize(s) == cudaSuccess);
    for (float v : a) CHILD_CHECK(v == 3.0f);
    for (float v : b) CHILD_CHECK(v == 6.0f);
    CHILD_CHECK(ncclCommDestroy(comm) == ncclSuccess);
    cudaStreamDestroy(s);
    return 0;
  });
  ExpectAllZero(status);
}

}  // namespace
