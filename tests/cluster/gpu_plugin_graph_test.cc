// rankscope's NCCL profiler plugin with CUDA graphs on the test bed: each rank captures two
// all-reduces into a graph and replays it; the records of the replays carry the captured calls
// and the same replay numbers on every rank, and the calls made after the graph keep the
// numbers the recorder's NCCL probe gives them (the captured calls counted).
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "child_check.h"
#include "cuda_runtime_api.h"
#include "gpu_plugin_ranks.h"
#include "nccl.h"
#include "test_ranks.h"

namespace rs_testbed {
namespace {

constexpr int kGraphRanks = 3;
constexpr int kReplays = 4;

TEST(GpuPluginTestbed, GraphReplaysAreRecordedWithTheirReplayNumbers) {
  UsePlugin(Env("RS_GPU_PLUGIN"));
  ReportDir dir;
  auto status = RunRanksWith(
      [] {
        ncclUniqueId id{};
        EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
        return id;
      },
      kGraphRanks,
      [&dir](int rank, ncclComm_t comm) -> int {
        cudaStream_t s = nullptr;
        CHILD_CHECK(cudaStreamCreate(&s) == cudaSuccess);
        std::optional<rs::rec::GpuRingReader> ring;
        if (int r = Attach(&ring, comm, s)) return r;  // call 1
        std::vector<float> a(64, 1.0f), b(32, 1.0f);
        CHILD_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
        CHILD_CHECK(ncclAllReduce(a.data(), a.data(), a.size(), ncclFloat32, ncclSum, comm, s) ==
                    ncclSuccess);  // call 2
        CHILD_CHECK(ncclAllReduce(b.data(), b.data(), b.size(), ncclFloat32, ncclSum, comm, s) ==
                    ncclSuccess);  // call 3
        cudaGraph_t graph = nullptr;
        CHILD_CHECK(cudaStreamEndCapture(s, &graph) == cudaSuccess);
        cudaGraphExec_t exec = nullptr;
        CHILD_CHECK(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
        for (int k = 0; k < kReplays; ++k) CHILD_CHECK(cudaGraphLaunch(exec, s) == cudaSuccess);
        CHILD_CHECK(ncclAllReduce(b.data(), b.data(), b.size(), ncclFloat32, ncclSum, comm, s) ==
                    ncclSuccess);  // call 4
        CHILD_CHECK(cudaStreamSynchronize(s) == cudaSuccess);
        CHILD_CHECK(cudaGraphExecDestroy(exec) == cudaSuccess);
        CHILD_CHECK(cudaGraphDestroy(graph) == cudaSuccess);
        int want = 1;
        for (int k = 0; k < kReplays; ++k) want *= kGraphRanks;
        CHILD_CHECK(a[0] == static_cast<float>(want));  // replayed, in place, kReplays times
        CHILD_CHECK(b[0] == static_cast<float>(want * kGraphRanks));
        return Finish(*ring, comm, dir.Rank(rank));
      },
      60, false);
  ExpectAllZero(status);
  std::vector<RankReport> ranks = dir.LoadAll(kGraphRanks);
  ASSERT_EQ(ranks.size(), static_cast<size_t>(kGraphRanks));
  for (int r = 0; r < kGraphRanks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const std::vector<rs_gpu_op>& recs = ranks[r].records;
    ASSERT_EQ(recs.size(), static_cast<size_t>(2 * kReplays + 1));
    for (int k = 0; k < 2 * kReplays; ++k) {
      const rs_gpu_op& op = recs[k];
      EXPECT_NE(op.flags & RS_GPU_GRAPH_REPLAY, 0u);
      EXPECT_EQ(op.seq, static_cast<uint64_t>(k + 1));
      EXPECT_EQ(op.graph_call_seq, k % 2 == 0 ? 2u : 3u);
      EXPECT_EQ(op.count, k % 2 == 0 ? 64u : 32u);
      EXPECT_EQ(op.api_ns, 0);
      EXPECT_EQ(op.state, RS_GPU_COMPLETED);
      EXPECT_NE(op.device_start_ns, 0);
      EXPECT_EQ(op.nccl_seq, recs[0].nccl_seq + static_cast<uint64_t>(k));  // NCCL's counts them
    }
    const rs_gpu_op& after = recs.back();
    EXPECT_EQ(after.flags & RS_GPU_GRAPH_REPLAY, 0u);
    EXPECT_EQ(after.seq, 4u);  // calls 2 and 3 were captured, and counted
    EXPECT_EQ(ranks[r].header.graph_calls, 2u);
    EXPECT_EQ(ranks[r].header.graph_calls_unrecorded, 0u);
    EXPECT_EQ(ranks[r].header.graph_replay_ops, static_cast<uint64_t>(2 * kReplays));
    // The same replay number is the same operation on every rank.
    for (size_t k = 0; k < recs.size(); ++k) {
      EXPECT_EQ(recs[k].graph_call_seq, ranks[0].records[k].graph_call_seq);
    }
  }
}

}  // namespace
}  // namespace rs_testbed
