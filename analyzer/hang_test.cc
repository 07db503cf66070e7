// Hangs of GPU jobs (gpu_job_fixture.h): no NCCL call is in flight anywhere, the waiting ranks
// sit in a blocking cudaMemcpy. Flight-recorder states per rank from the profiler plugin's
// gpu_ops; without them, who enqueued what, with lower confidence.
#include <gtest/gtest.h>

#include <algorithm>

#include "analyzer/gpu_job_fixture.h"
#include "analyzer/report.h"
#include "analyzer/report_expect.h"
#include "analyzer/report_format.h"
#include "analyzer/report_render.h"
#include "analyzer/report_test_util.h"
#include "rscore/bundle.h"

namespace rs::analyzer {
namespace {

using testing::GpuJob;
using testing::ScratchDir;

Report JobReport(const GpuJob& job) {
  ScratchDir dir;
  auto path = testing::WriteGpuJob(job, dir.path());
  EXPECT_TRUE(path.ok()) << path.error().message();
  return testing::ReportOf(*path);
}

const RankProgress& Progress(const Report& r, int64_t rank) {
  auto it = std::find_if(r.hang.progress.begin(), r.hang.progress.end(),
                         [&](const RankProgress& p) { return p.rank == rank; });
  EXPECT_NE(it, r.hang.progress.end());
  return *it;
}

const Activity* Doing(const RankProgress& p, const std::string& what) {
  for (const Activity& a : p.doing) {
    if (a.what == what) return &a;
  }
  return nullptr;
}

constexpr int kHung = 3;  // node1's second rank

TEST(HangStatesTest, CulpritNeverEnqueuedTheCollective) {
  GpuJob job;
  job.hang_rank = kHung;
  Report r = JobReport(job);
  SCOPED_TRACE(RenderText(r));
  ASSERT_TRUE(r.hang.detected) << r.hang.summary;
  EXPECT_EQ(r.verdict.rfind("HANG", 0), 0u) << r.verdict;
  EXPECT_EQ(r.hang.basis, "device");
  EXPECT_EQ(r.hang.confidence, Confidence::kHigh);
  EXPECT_EQ(r.hang.culprit_ranks, std::vector<int64_t>{kHung});
  EXPECT_EQ(r.hang.culprit_nodes, std::vector<std::string>{"node1"});
  EXPECT_EQ(r.hang.waiting_ranks, (std::vector<int64_t>{0, 1, 2, 4, 5}));
  EXPECT_EQ(r.hang.seq, job.hang_step * job.buckets);
  EXPECT_GT(r.hang.stuck_for_ns, 2'000'000'000);
  // Flight-recorder states at the stuck collective.
  const RankProgress& hung = Progress(r, kHung);
  EXPECT_EQ(hung.state, "not_enqueued");
  EXPECT_EQ(hung.last_entered_seq, std::optional<int64_t>(r.hang.seq - 1));
  for (int64_t rank : r.hang.waiting_ranks) {
    const RankProgress& p = Progress(r, rank);
    EXPECT_EQ(p.state, "started") << rank;
    EXPECT_EQ(p.state_basis, "device");
    EXPECT_EQ(p.last_started_seq, std::optional<int64_t>(r.hang.seq));
    EXPECT_EQ(p.last_completed_seq, std::optional<int64_t>(r.hang.seq - 1));
    const Activity* copy = Doing(p, "cudaMemcpy");
    ASSERT_NE(copy, nullptr) << rank;
    EXPECT_EQ(copy->state, "in_flight");
    // Its caller is the first frame outside the CUDA runtime.
    EXPECT_EQ(CallerFrame(copy->stack), "train_step+0x9c (trainer)") << copy->stack;
  }
  // What the culprit did instead: its last CUDA call with its caller, its last NCCL call.
  const Activity* last_cuda = Doing(hung, "cudaMemcpyAsync");
  ASSERT_NE(last_cuda, nullptr);
  EXPECT_EQ(last_cuda->state, "complete");
  EXPECT_NE(last_cuda->stack.find("load_batch"), std::string::npos);
  const Activity* last_nccl = Doing(hung, "ALL_REDUCE");
  ASSERT_NE(last_nccl, nullptr);
  EXPECT_EQ(last_nccl->seq, std::optional<int64_t>(r.hang.seq - 1));
  ASSERT_FALSE(r.stragglers.empty());
  const Straggler& top = r.stragglers.front();
  EXPECT_EQ(top.cause, "hang");
  EXPECT_EQ(top.shape, "hang");
  EXPECT_EQ(top.rank, std::optional<int64_t>(kHung));
  EXPECT_NE(top.summary.find("never enqueued"), std::string::npos) << top.summary;
  std::string json = RenderJson(r);
  EXPECT_NE(json.find("\"state\":\"not_enqueued\""), std::string::npos);
  EXPECT_NE(json.find("\"doing\":[{"), std::string::npos);
}

TEST(HangStatesTest, CulpritEnqueuedButItsDeviceNeverStarted) {
  GpuJob job;
  job.hang_rank = kHung;
  job.hang_enqueues = true;
  Report r = JobReport(job);
  SCOPED_TRACE(RenderText(r));
  ASSERT_TRUE(r.hang.detected) << r.hang.summary;
  EXPECT_EQ(r.hang.confidence, Confidence::kHigh);
  EXPECT_EQ(r.hang.culprit_ranks, std::vector<int64_t>{kHung});
  EXPECT_EQ(r.hang.seq, job.hang_step * job.buckets);
  const RankProgress& hung = Progress(r, kHung);
  EXPECT_EQ(hung.state, "enqueued");
  EXPECT_EQ(hung.last_entered_seq, std::optional<int64_t>(r.hang.seq));
  EXPECT_EQ(Progress(r, 0).state, "started");
  EXPECT_NE(r.hang.summary.find("device never started"), std::string::npos) << r.hang.summary;
  const Activity* sync = Doing(hung, "cudaStreamSynchronize");
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->state, "in_flight");
  EXPECT_NE(sync->stack.find("load_batch"), std::string::npos);
  ASSERT_FALSE(r.stragglers.empty());
  EXPECT_NE(r.stragglers.front().summary.find("device never started"), std::string::npos);
  EXPECT_NE(r.stragglers.front().causes.front().remediation.find("Xid"), std::string::npos);
}

TEST(HangStatesTest, WithoutDeviceStatesTheEnqueuesNameTheCulprit) {
  GpuJob job;
  job.hang_rank = kHung;
  job.gpu_ops = false;
  Report r = JobReport(job);
  SCOPED_TRACE(RenderText(r));
  ASSERT_TRUE(r.hang.detected) << r.hang.summary;
  EXPECT_EQ(r.hang.basis, "host_enqueue");
  EXPECT_EQ(r.hang.confidence, Confidence::kMedium);
  EXPECT_EQ(r.hang.culprit_ranks, std::vector<int64_t>{kHung});
  EXPECT_EQ(r.hang.culprit_nodes, std::vector<std::string>{"node1"});
  EXPECT_NE(r.hang.summary.find("device-side state was not seen"), std::string::npos);
  EXPECT_EQ(Progress(r, kHung).state, "not_enqueued");
  EXPECT_EQ(Progress(r, 0).state, "enqueued");
  EXPECT_EQ(Progress(r, 0).state_basis, "host_enqueue");
  EXPECT_FALSE(Progress(r, 0).last_completed_seq.has_value());  // completion not seen
  ASSERT_FALSE(r.stragglers.empty());
  EXPECT_EQ(r.stragglers.front().cause, "hang");
  EXPECT_EQ(r.stragglers.front().confidence, Confidence::kMedium);
  EXPECT_EQ(r.verdict.rfind("HANG", 0), 0u) << r.verdict;
  bool noted = false;
  for (const std::string& n : r.notes)
    noted |= n.find("without device-side state") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(HangStatesTest, ARecordingThatEndsMidStepIsNoHang) {
  for (bool gpu_ops : {true, false}) {
    GpuJob job;
    job.hang_rank = kHung;
    job.gpu_ops = gpu_ops;
    job.hang_recorded_ns = 30'000'000;  // ended 30 ms after the step was issued
    Report r = JobReport(job);
    EXPECT_FALSE(r.hang.detected) << gpu_ops << ": " << r.hang.summary;
  }
}

}  // namespace
}  // namespace rs::analyzer
