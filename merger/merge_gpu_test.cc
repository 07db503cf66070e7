// The merge on bundles of GPU nodes: gpu_ops copied with its device times aligned like
// timestamp_ns on every copy path, and bundles of earlier recorders (no gpu_ops, no
// nccl_events.nccl_comm_hash) merged whole beside them.
#include <gtest/gtest.h>

#include <sstream>

#include "merge.h"
#include "merge_checks.h"
#include "rscore/bundle.h"
#include "synth_bundle.h"
#include "test_bundles.h"

namespace merge {
namespace {

using testing::Contents;
using testing::ExpectAlignmentApplied;
using testing::ExpectCountsReconcile;
using testing::ExpectGpuOpsAligned;
using testing::Int;
using testing::Merged;
using testing::OpenMerged;
using testing::RunMerge;
using testing::TempDir;

class MergeGpu : public ::testing::Test {
 protected:
  std::vector<std::string> Write(const synth::ClusterSpec& spec) {
    auto paths = synth::WriteClusterBundles(spec, dir_.path());
    EXPECT_TRUE(paths.ok()) << (paths.ok() ? "" : paths.error().message());
    return paths.ok() ? paths.value() : std::vector<std::string>{};
  }
  // Rewrites `path` into a bundle as a recorder before gpu_ops wrote it: no gpu_ops table and,
  // where this version's bundles have it, no nccl_events.nccl_comm_hash.
  void MakeOld(const std::string& path) {
    ASSERT_TRUE(testing::RewriteBundle(path, path, "DROP TABLE IF EXISTS gpu_ops").ok());
    auto in = rs::OpenRankscopeFile(path);
    ASSERT_TRUE(in.ok());
    const bool has = Int(in->db(),
                         "SELECT COUNT(*) FROM pragma_table_info('nccl_events')"
                         " WHERE name = 'nccl_comm_hash'") > 0;
    if (has) {
      ASSERT_TRUE(
          testing::RewriteBundle(path, path, "ALTER TABLE nccl_events DROP COLUMN nccl_comm_hash")
              .ok());
    }
  }
  TempDir dir_;
};

// gpu_ops rows beside every recorded collective (device times 5 us after the call and at its
// end; some NULL, some without a conversion bound), as a plugin would have written them.
constexpr const char* kAddGpuOps =
    "INSERT INTO gpu_ops(id, node, timestamp_ns, pid, tid, op, rank, nranks, comm_id_hash, seq,"
    " device_start_ns, device_end_ns, clock_error_ns, state)"
    " SELECT id + 1000000, node, timestamp_ns, pid, tid, op, rank, nranks, comm_id_hash, seq,"
    " timestamp_ns + 5000, CASE WHEN id % 7 = 0 THEN NULL ELSE timestamp_ns + duration_ns END,"
    " CASE WHEN id % 5 = 0 THEN NULL ELSE 1500 END,"
    " CASE WHEN id % 7 = 0 THEN 'started' ELSE 'completed' END"
    " FROM nccl_events WHERE seq IS NOT NULL AND duration_ns IS NOT NULL";

TEST_F(MergeGpu, DeviceTimesAlignedLikeTimestampsOnEveryCopyPath) {
  synth::ClusterSpec spec;
  spec.nodes = 3;
  spec.steps = 30;
  spec.offset_ns = {0, 23'000'000, -41'000'000};
  spec.drift_ppm = {0, 20, -20};
  auto paths = Write(spec);
  for (const std::string& p : paths) ASSERT_TRUE(testing::RewriteBundle(p, p, kAddGpuOps).ok());
  // Straight into the output by SQL; as parts page by page, the event tables spliced or
  // transferred by SQL: the same database every time.
  std::vector<std::string> want;
  for (int workers : {0, 2}) {
    for (bool splice : {true, false}) {
      if (workers == 0 && !splice) continue;
      SCOPED_TRACE("workers " + std::to_string(workers) + ", splice " + std::to_string(splice));
      MergeOptions opt;
      opt.worker_threads = workers;
      opt.splice = splice;
      Merged m = RunMerge(dir_, paths, opt);
      ASSERT_GE(m.result.phases.size(), 2u);
      EXPECT_EQ(m.result.phases[1].phase, workers ? "copy (0 direct, 3 parts; 3 by pages)"
                                                  : "copy (3 direct, 0 parts; 0 by pages)");
      auto db = OpenMerged(m.path);
      ASSERT_TRUE(db.ok());
      EXPECT_GT(Int(*db, "SELECT COUNT(*) FROM gpu_ops WHERE device_end_ns IS NULL"), 0);
      EXPECT_GT(Int(*db, "SELECT COUNT(*) FROM clock_alignment WHERE drift_ppm != 0"), 0);
      EXPECT_EQ(ExpectGpuOpsAligned(*db, paths), Int(*db, "SELECT COUNT(*) FROM gpu_ops"));
      EXPECT_GT(Int(*db, "SELECT COUNT(*) FROM gpu_ops"), 0);
      ExpectCountsReconcile(*db);
      ExpectAlignmentApplied(*db);
      if (want.empty()) {
        want = Contents(*db);
      } else {
        EXPECT_EQ(Contents(*db), want);
      }
    }
  }
}

TEST_F(MergeGpu, BundlesOfEarlierRecordersMergeWholeStraightAndAsParts) {
  synth::ClusterSpec spec;
  spec.nodes = 3;
  spec.steps = 12;
  spec.offset_ns = {0, 5'000'000, -3'000'000};
  auto paths = Write(spec);
  ASSERT_TRUE(testing::RewriteBundle(paths[0], paths[0], kAddGpuOps).ok());
  MakeOld(paths[1]);
  MakeOld(paths[2]);
  int64_t nccl_in = 0;
  for (const std::string& p : paths) {
    auto in = rs::OpenRankscopeFile(p);
    ASSERT_TRUE(in.ok());
    nccl_in += Int(in->db(), "SELECT COUNT(*) FROM nccl_events");
  }
  std::vector<std::string> want;
  for (int workers : {0, 2}) {
    SCOPED_TRACE(workers);
    MergeOptions opt;
    opt.worker_threads = workers;
    Merged m = RunMerge(dir_, paths, opt);
    EXPECT_EQ(m.result.merged, 3);
    EXPECT_EQ(m.result.exit_code(), 0) << m.log;
    // The older bundles' event rows go page by page too (columns matched by name).
    EXPECT_EQ(m.result.phases[1].phase, workers ? "copy (0 direct, 3 parts; 3 by pages)"
                                                : "copy (3 direct, 0 parts; 0 by pages)");
    auto db = OpenMerged(m.path);
    ASSERT_TRUE(db.ok());
    // The full schema whatever the inputs held.
    EXPECT_EQ(Int(*db,
                  "SELECT COUNT(*) FROM pragma_table_info('gpu_ops') WHERE name IN"
                  " ('device_start_ns', 'device_end_ns', 'clock_error_ns', 'local_timestamp_ns')"),
              4);
    EXPECT_EQ(Int(*db, "SELECT COUNT(*) FROM nccl_events"), nccl_in);
    EXPECT_EQ(Int(*db, "SELECT COUNT(*) FROM gpu_ops WHERE node != 'node0'"), 0);
    EXPECT_EQ(Int(*db, "SELECT COUNT(*) FROM merge_counts WHERE table_name = 'gpu_ops'"), 1);
    EXPECT_EQ(ExpectGpuOpsAligned(*db, {paths[0]}), Int(*db, "SELECT COUNT(*) FROM gpu_ops"));
    // Old rows keep every value they had, in the right columns.
    EXPECT_EQ(Int(*db,
                  "SELECT COUNT(*) FROM nccl_events WHERE node != 'node0' AND (op IS NULL OR"
                  " pid IS NULL OR comm_id_hash IS NULL OR bytes IS NULL OR state != 'complete')"),
              0);
    for (int k = 1; k < 3; ++k) {
      EXPECT_EQ(testing::StoredAlignment(*db, synth::NodeName(k)).method, "rendezvous");
    }
    ExpectCountsReconcile(*db);
    ExpectAlignmentApplied(*db);
    if (want.empty()) {
      want = Contents(*db);
    } else {
      EXPECT_EQ(Contents(*db), want);
    }
  }
}

}  // namespace
}  // namespace merge
