// The report on jobs that replay CUDA graphs (gpu_job_fixture.h, graph_replays): the captured
// step's calls are the only NCCL calls; every later collective exists only as the plugin's
// gpu_ops rows of a replay, with no seq of its own. They are compared across ranks by their
// replay number, and only where every node's capture was recorded.
#include <gtest/gtest.h>

#include <algorithm>

#include "analyzer/collectives.h"
#include "analyzer/gpu_job_fixture.h"
#include "analyzer/report.h"
#include "analyzer/report_expect.h"
#include "analyzer/report_render.h"
#include "analyzer/report_test_util.h"
#include "rscore/sqlite.h"

namespace rs::analyzer {
namespace {

using testing::GpuJob;
using testing::ScratchDir;

struct Written {
  ScratchDir dir;
  std::string path;
};

std::unique_ptr<Written> Write(const GpuJob& job) {
  auto w = std::make_unique<Written>();
  auto path = testing::WriteGpuJob(job, w->dir.path());
  EXPECT_TRUE(path.ok()) << path.error().message();
  if (path.ok()) w->path = *path;
  return w;
}

bool HasNote(const Report& r, const std::string& text) {
  return std::any_of(r.notes.begin(), r.notes.end(),
                     [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

GpuJob ReplayJob() {
  GpuJob job;
  job.graph_replays = true;
  return job;
}

TEST(GraphReplayTest, ReplaysAreCollectivesOfTheirOwnMatchedByReplayNumber) {
  const GpuJob job = ReplayJob();
  auto w = Write(job);
  auto db = rs::Db::Open(w->path, rs::Db::Mode::kReadWrite);
  ASSERT_TRUE(db.ok());
  auto data = LoadCollectives(*db);
  ASSERT_TRUE(data.ok()) << data.error().message();
  const int ranks = job.nodes * job.ranks_per_node;
  const int64_t replays = static_cast<int64_t>(job.steps - 1) * job.buckets;
  EXPECT_EQ(data->graph_replays, replays * ranks);
  int64_t replay_groups = 0;
  for (const Collective& g : data->collectives) {
    if (g.seq < kGraphReplaySeqBase) {
      EXPECT_LT(g.seq, job.buckets);  // the captured calls, nothing joined to them
      for (size_t k = g.begin; k < g.end; ++k) EXPECT_FALSE(data->calls[k].device);
      continue;
    }
    ++replay_groups;
    EXPECT_EQ(g.end - g.begin, static_cast<size_t>(ranks));  // every rank's replay
    EXPECT_TRUE(g.device_basis);
    const int64_t call = data->calls[g.begin].graph_call;
    EXPECT_EQ(call, (g.seq - kGraphReplaySeqBase - 1) % job.buckets);
  }
  EXPECT_EQ(replay_groups, replays);
  EXPECT_EQ(SeqWords(kGraphReplaySeqBase + 7), "graph replay 7");
  EXPECT_EQ(SeqWords(7), "seq 7");
}

TEST(GraphReplayTest, ASlowDeviceIsFoundOnReplaysAlone) {
  GpuJob job = ReplayJob();
  job.device_late_rank = 4;
  auto w = Write(job);
  const Report r = testing::ReportOf(w->path);
  SCOPED_TRACE(RenderText(r));
  ASSERT_FALSE(r.stragglers.empty());
  EXPECT_EQ(r.stragglers.front().rank, std::optional<int64_t>(4));
  EXPECT_EQ(r.stragglers.front().node, "node2");
  EXPECT_EQ(r.stragglers.front().arrival_basis, "device_start");
  EXPECT_NE(r.stragglers.front().basis.find("graph_replay_seq"), std::string::npos);
  EXPECT_TRUE(HasNote(r, "GPU operations ran in CUDA graph replays"));
  ASSERT_FALSE(r.stragglers.front().late_arrivals.empty());
  for (const LateArrival& a : r.stragglers.front().late_arrivals) {
    EXPECT_GE(a.seq, kGraphReplaySeqBase);  // replays only: the captured calls are left out
  }
  const std::string json = RenderJson(r);
  EXPECT_NE(json.find("\"seq\":null,\"graph_replay\":"), std::string::npos);
  EXPECT_EQ(r.timing.graph_captured_collectives, job.buckets);
  EXPECT_EQ(r.timing.excluded_collectives, 0);  // the captured calls are not "rows lost"
  EXPECT_FALSE(HasNote(r, "seen by the profiler plugin only"));
  const Report clean = testing::ReportOf(Write(ReplayJob())->path);
  EXPECT_EQ(clean.verdict_kind, "no_straggler") << clean.verdict;
}

TEST(GraphReplayTest, ReplaysNamingOtherCapturedCallsAreNotOneCollective) {
  // Node 1's replay numbers run one ahead (a replay counted there and not elsewhere): its k-th
  // replay is another bucket's all-reduce than the others' k-th.
  const GpuJob job = ReplayJob();
  auto w = Write(job);
  {
    auto db = rs::Db::Open(w->path, rs::Db::Mode::kReadWrite);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->Exec("UPDATE gpu_ops SET graph_replay_seq = graph_replay_seq + 1"
                         " WHERE node = 'node1' AND graph_replay_seq IS NOT NULL")
                    .ok());
  }
  auto db = rs::Db::Open(w->path, rs::Db::Mode::kReadWrite);
  ASSERT_TRUE(db.ok());
  auto data = LoadCollectives(*db);
  ASSERT_TRUE(data.ok());
  for (const Collective& g : data->collectives) {
    for (size_t k = g.begin; k < g.end; ++k) {
      EXPECT_EQ(data->calls[k].graph_call, data->calls[g.begin].graph_call);
    }
    if (g.seq >= kGraphReplaySeqBase && g.matched()) {
      // node1's ranks never join the others': each group is node1's alone, or the others'.
      const bool node1 = data->participants[data->calls[g.begin].participant].node == "node1";
      for (size_t k = g.begin; k < g.end; ++k) {
        EXPECT_EQ(data->participants[data->calls[k].participant].node == "node1", node1);
      }
    }
  }
}

TEST(GraphReplayTest, ACaptureBeforeTheRecorderReadLeavesReplaysOutAndSaysSo) {
  GpuJob job = ReplayJob();
  job.device_late_rank = 4;
  job.graph_behind_node = 0;
  auto w = Write(job);
  const Report r = testing::ReportOf(w->path);
  SCOPED_TRACE(RenderText(r));
  EXPECT_TRUE(HasNote(r, "GPU operations of CUDA graph replays are left out"));
  for (const Straggler& s : r.stragglers) {
    EXPECT_FALSE(AtLeastMedium(s.confidence)) << s.summary;  // nothing left to decide on
  }
  EXPECT_EQ(r.verdict_kind, "undetermined") << r.verdict;  // blind is not clean
  EXPECT_NE(r.verdict.find("CUDA graph replays not compared"), std::string::npos) << r.verdict;
  EXPECT_EQ(r.timing.graph_replays_uncompared, 29 * 2 * 6);
}

}  // namespace
}  // namespace rs::analyzer
