// A hang as the plugin sees it: one rank never joins a collective. On the others the
// collective's kernel started and never stops (STARTED in the slots), the next one waits
// behind it (ENQUEUED); ncclCommAbort finalizes the communicator and both are written to the
// ring with RS_GPU_FINALIZED and the state they reached.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "child_check.h"
#include "cuda_runtime_api.h"
#include "gpu_plugin_ranks.h"
#include "nccl.h"
#include "test_ranks.h"

namespace rs_testbed {
namespace {

constexpr int kRanks = 3;
constexpr int kAbsent = 2;  // the rank that never joins

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

bool WaitFor(const std::function<bool()>& done, int timeout_ms) {
  for (int waited = 0; waited < timeout_ms; waited += 10) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

TEST(GpuPluginHang, NeverCompletedIsWrittenWithItsStateAtAbort) {
  setenv("NCCL_PROFILER_PLUGIN", Env("RS_GPU_PLUGIN").c_str(), 1);
  setenv("RANKSCOPE_TESTLIB_COLLECTIVES", "async", 1);
  unsetenv("RANKSCOPE_CUDA_CPU_CLOCK");
  ReportDir dir;
  auto status = RunRanks(
      kRanks,
      [&dir](int rank, ncclComm_t comm) -> int {
        cudaStream_t s = nullptr;
        CHILD_CHECK(cudaStreamCreate(&s) == cudaSuccess);
        std::optional<rs::rec::GpuRingReader> ring = OpenOwnRing();
        CHILD_CHECK(ring.has_value());
        ring->Heartbeat(NowNs());
        std::vector<float> a(300, 1.0f);
        for (int i = 0; i < 2; ++i) {  // the second is the first recorded (seq 2)
          CHILD_CHECK(ncclAllReduce(a.data(), a.data(), 300, ncclFloat32, ncclSum, comm, s) ==
                      ncclSuccess);
        }
        CHILD_CHECK(cudaStreamSynchronize(s) == cudaSuccess);
        if (rank == kAbsent) {  // stays, its connections open, until the others are done
          WaitFor([&] { return Exists(dir.Path("done0")) && Exists(dir.Path("done1")); }, 30000);
          ncclCommAbort(comm);
          return 0;
        }
        for (int i = 0; i < 2; ++i) {  // seq 3 hangs in its kernel, seq 4 waits behind it
          CHILD_CHECK(ncclAllReduce(a.data(), a.data(), 300, ncclFloat32, ncclSum, comm, s) ==
                      ncclSuccess);
        }
        RankReport report;
        report.pid = getpid();
        CHILD_CHECK(WaitFor(
            [&] {
              std::vector<rs_gpu_op> f = ring->InFlight();
              return f.size() == 2 && f[0].state == RS_GPU_STARTED;
            },
            10000));
        report.in_flight = ring->InFlight();
        report.records = ring->Read();  // the completed first one
        CHILD_CHECK(ncclCommAbort(comm) == ncclSuccess);
        // The device's work ends with the abort; the last of it finalizes the communicator.
        CHILD_CHECK(WaitFor(
            [&] {
              std::vector<rs_gpu_op> more = ring->Read();
              report.records.insert(report.records.end(), more.begin(), more.end());
              return report.records.size() >= 3;
            },
            10000));
        CHILD_CHECK(ring->InFlight().empty());
        report.header = ring->header();
        CHILD_CHECK(report.Save(dir.Rank(rank)));
        FILE* f = std::fopen(dir.Path("done" + std::to_string(rank)).c_str(), "w");
        CHILD_CHECK(f != nullptr && std::fclose(f) == 0);
        return 0;
      },
      60, false);
  ExpectAllZero(status);
  for (int r = 0; r < kRanks; ++r) {
    if (r == kAbsent) continue;
    SCOPED_TRACE("rank " + std::to_string(r));
    std::optional<RankReport> rep = RankReport::Load(dir.Rank(r));
    ASSERT_TRUE(rep.has_value());
    // While it hung: both in the slots, oldest first.
    ASSERT_EQ(rep->in_flight.size(), 2u);
    const rs_gpu_op& hung = rep->in_flight[0];
    EXPECT_EQ(hung.seq, 3u);
    EXPECT_EQ(hung.state, RS_GPU_STARTED);
    EXPECT_EQ(hung.channels_started, 1);
    EXPECT_EQ(hung.channels_stopped, 0);
    EXPECT_NE(hung.device_start_raw, 0u);
    EXPECT_EQ(hung.device_end_raw, 0u);
    EXPECT_EQ(rep->in_flight[1].seq, 4u);
    EXPECT_EQ(rep->in_flight[1].state, RS_GPU_ENQUEUED);
    EXPECT_EQ(rep->in_flight[1].device_start_raw, 0u);
    // At the abort: written with the state they reached.
    ASSERT_EQ(rep->records.size(), 3u);
    EXPECT_EQ(rep->records[0].seq, 2u);
    EXPECT_EQ(rep->records[0].state, RS_GPU_COMPLETED);
    EXPECT_EQ(rep->records[0].flags & RS_GPU_FINALIZED, 0u);
    for (const rs_gpu_op& op : {rep->records[1], rep->records[2]}) {
      EXPECT_EQ(op.flags & RS_GPU_FINALIZED, RS_GPU_FINALIZED);
      if (op.seq == 3) {
        EXPECT_EQ(op.state, RS_GPU_STARTED);
        EXPECT_EQ(op.device_start_raw, hung.device_start_raw);
        EXPECT_NE(op.device_start_ns, 0);
        EXPECT_EQ(op.device_end_ns, 0);
      } else {
        EXPECT_EQ(op.seq, 4u);
        EXPECT_EQ(op.state, RS_GPU_ENQUEUED);
        EXPECT_EQ(op.device_start_ns, 0);
      }
    }
    EXPECT_EQ(rep->header.ops, 4u);
    EXPECT_EQ(rep->header.ops_unrecorded, 1u);
  }
}

}  // namespace
}  // namespace rs_testbed
