#include "synth_bundle.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "rscore/bundle.h"

namespace synth {
namespace {

int64_t Count(rs::Db& db, const std::string& sql) { return db.QueryInt(sql).value(); }

TEST(SynthBundle, WritesValidBundlesWithExpectedRows) {
  char tmpl[] = "/tmp/synth_test.XXXXXX";
  std::string dir = mkdtemp(tmpl);
  ClusterSpec spec;
  spec.fault = "loss";
  spec.offset_ns = {0, 3'000'000, -2'000'000, 0};
  auto paths = WriteClusterBundles(spec, dir);
  ASSERT_TRUE(paths.ok()) << paths.error().message();
  ASSERT_EQ(paths->size(), 4u);
  RowCounts want = ExpectedRows(spec);
  RowCounts got;
  for (const auto& p : *paths) {
    auto db = rs::OpenRankscopeFile(p);
    ASSERT_TRUE(db.ok()) << db.error().message();
    got.nccl += Count(db->db(), "SELECT COUNT(*) FROM nccl_events");
    got.tcp += Count(db->db(), "SELECT COUNT(*) FROM tcp_events");
    got.sched += Count(db->db(), "SELECT COUNT(*) FROM sched_events");
    // Every collective seq appears once per rank of this node.
    EXPECT_EQ(Count(db->db(),
                    "SELECT COUNT(*) FROM (SELECT seq FROM nccl_events WHERE seq IS NOT "
                    "NULL GROUP BY seq HAVING COUNT(*) != 2)"),
              0);
  }
  EXPECT_EQ(got.nccl, want.nccl);
  EXPECT_EQ(got.tcp, want.tcp);
  EXPECT_EQ(got.sched, want.sched);
  EXPECT_GT(want.tcp, 0);
  std::system(("rm -rf " + dir).c_str());
}

TEST(SynthBundle, AsyncModeIsShapedLikeAGpuNode) {
  char tmpl[] = "/tmp/synth_test.XXXXXX";
  std::string dir = mkdtemp(tmpl);
  ClusterSpec spec;
  spec.collectives = "async";
  spec.steps = 20;
  spec.offset_ns = {0, 3'000'000, -2'000'000, 0};
  spec.drift_ppm = {0, 20, -20, 0};
  auto paths = WriteClusterBundles(spec, dir);
  ASSERT_TRUE(paths.ok()) << paths.error().message();
  RowCounts want = ExpectedRows(spec), got;
  const int64_t collectives = spec.steps * spec.buckets + spec.steps / 10;
  for (const auto& p : *paths) {
    auto db = rs::OpenRankscopeFile(p);
    ASSERT_TRUE(db.ok()) << db.error().message();
    rs::Db& d = db->db();
    got.nccl += Count(d, "SELECT COUNT(*) FROM nccl_events");
    got.cuda += Count(d, "SELECT COUNT(*) FROM cuda_events");
    got.gpu += Count(d, "SELECT COUNT(*) FROM gpu_ops");
    // Every collective call enqueues: it returns in microseconds.
    EXPECT_EQ(Count(d, "SELECT COUNT(*) FROM nccl_events WHERE seq IS NOT NULL"),
              collectives * spec.ranks_per_node);
    EXPECT_EQ(Count(d,
                    "SELECT COUNT(*) FROM nccl_events WHERE seq IS NOT NULL AND"
                    " duration_ns > 12000"),
              0);
    // One device row per call, joined on (comm_id_hash, seq) and pid; the device starts after
    // the host enqueued it and never ends before it started.
    EXPECT_EQ(Count(d,
                    "SELECT COUNT(*) FROM gpu_ops g JOIN nccl_events e USING (comm_id_hash,"
                    " seq, pid) WHERE g.state = 'completed' AND g.device_start_ns >"
                    " e.timestamp_ns + e.duration_ns AND g.device_end_ns > g.device_start_ns"
                    " AND g.clock_error_ns = 2000"),
              collectives * spec.ranks_per_node);
    // The step's sync point: one blocking loss copy per rank and step, after its AllReduces
    // were enqueued and after their device work ended.
    EXPECT_EQ(Count(d,
                    "SELECT COUNT(*) FROM cuda_events WHERE api = 'cudaMemcpy' AND"
                    " memcpy_kind = 2 AND stream IS NULL"),
              spec.steps * spec.ranks_per_node);
    EXPECT_EQ(Count(d,
                    "SELECT COUNT(*) FROM gpu_ops g WHERE NOT EXISTS (SELECT 1 FROM"
                    " cuda_events c WHERE c.pid = g.pid AND c.api = 'cudaMemcpy' AND"
                    " c.timestamp_ns > g.timestamp_ns AND c.timestamp_ns + c.duration_ns >"
                    " g.device_end_ns)"),
              0);
  }
  EXPECT_EQ(got.nccl, want.nccl);
  EXPECT_EQ(got.cuda, want.cuda);
  EXPECT_EQ(got.gpu, want.gpu);
  EXPECT_EQ(want.gpu, collectives * spec.nodes * spec.ranks_per_node);
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace synth
