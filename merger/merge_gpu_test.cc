// The merge on bundles of GPU nodes: gpu_ops copied with its device times aligned like
// timestamp_ns on every copy path; bundles of earlier recorders (no gpu_ops, no
// nccl_events.nccl_comm_hash) merged whole beside them; clocks recovered from device times,
// from blocking syncs after enqueues and from blocking calls, never from an enqueue's own
// entry and exit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "merger/merge.h"
#include "merger/merge_checks.h"
#include "merger/test_bundles.h"
#include "rscore/bundle.h"
#include "tests/support/synth_bundle.h"

namespace rs::merge {
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
  spec.steps = 150;  // long enough for the drift to be fitted
  spec.offset_ns = {0, 23'000'000, -41'000'000};
  spec.drift_ppm = {0, 20, -20};
  auto paths = Write(spec);
  for (const std::string& p : paths) ASSERT_TRUE(testing::RewriteBundle(p, p, kAddGpuOps).ok());
  // Straight into the output, and as parts on worker threads: the same database either way.
  std::vector<std::string> want;
  for (int workers : {0, 2}) {
    {
      SCOPED_TRACE("workers " + std::to_string(workers));
      MergeOptions opt;
      opt.worker_threads = workers;
      Merged m = RunMerge(dir_, paths, opt);
      ASSERT_GE(m.result.phases.size(), 2u);
      EXPECT_EQ(m.result.phases[1].phase,
                workers ? "copy (0 direct, 3 parts)" : "copy (3 direct, 0 parts)");
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
    EXPECT_EQ(m.result.phases[1].phase,
              workers ? "copy (0 direct, 3 parts)" : "copy (3 direct, 0 parts)");
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

// The worst error of the stored alignments against the truth, over the whole recording.
struct Recovery {
  double max_error_ns = 0;
  double min_bound_ns = 0;  // the smallest stated bound (for the record)
};

// Checks every node's stored alignment against the injected clocks at 21 moments of the
// recording: within `tolerance_ns` of the truth, and within its own stated bound.
Recovery ExpectRecovered(const synth::ClusterSpec& spec, const Merged& m,
                         double tolerance_ns = 50'000) {
  Recovery rec;
  rec.min_bound_ns = 1e18;
  auto db = OpenMerged(m.path);
  EXPECT_TRUE(db.ok());
  if (!db.ok()) return rec;
  auto ref_name = db->QueryText("SELECT value FROM metadata WHERE key = 'clock_reference'");
  int ref = -1;
  for (int k = 0; k < spec.nodes; ++k) {
    if (ref_name.ok() && ref_name->value_or("") == synth::NodeName(k)) ref = k;
  }
  EXPECT_GE(ref, 0);
  if (ref < 0) return rec;
  // The true recording window: node0 has no offset or drift in these tests.
  const int64_t start = Int(*db,
                            "SELECT CAST(value AS INTEGER) FROM metadata WHERE key ="
                            " 'node.node0.local_start_ns'");
  const int64_t end = Int(*db,
                          "SELECT CAST(value AS INTEGER) FROM metadata WHERE key ="
                          " 'node.node0.local_end_ns'");
  EXPECT_GT(end, start);
  for (int k = 0; k < spec.nodes; ++k) {
    if (k == ref) continue;
    const NodeAlignment al = testing::StoredAlignment(*db, synth::NodeName(k));
    SCOPED_TRACE(synth::NodeName(k) + ": " + al.method);
    EXPECT_EQ(al.method, "rendezvous");
    rec.min_bound_ns = std::min(rec.min_bound_ns, static_cast<double>(al.error_bound_ns));
    for (int i = 0; i <= 20; ++i) {
      const int64_t t = start + (end - start) / 20 * i;
      const double err = static_cast<double>(al.Apply(synth::RecordedTime(spec, k, t)) -
                                             synth::RecordedTime(spec, ref, t));
      EXPECT_LE(std::fabs(err), tolerance_ns) << "at " << i << "/20 of the recording";
      EXPECT_LE(std::fabs(err), static_cast<double>(al.error_bound_ns))
          << "at " << i << "/20 of the recording";
      rec.max_error_ns = std::max(rec.max_error_ns, std::fabs(err));
    }
  }
  return rec;
}

// Offsets of tens of ms of either sign, drift of +-20 ppm on every node but node0; about 10 s
// of training.
synth::ClusterSpec SkewedCluster(const std::string& collectives, uint64_t seed) {
  synth::ClusterSpec spec;
  spec.nodes = 4;
  spec.ranks_per_node = 2;
  spec.steps = 400;
  spec.seed = seed;
  spec.collectives = collectives;
  spec.offset_ns = {0, 23'000'000, -41'000'000, 67'000'000};
  spec.drift_ppm = {0, 20, -20, 20};
  return spec;
}

class MergeEvidence : public MergeGpu {
 protected:
  // Writes and merges `spec` into a fresh subdirectory; checks the counts.
  Merged WriteAndMerge(const synth::ClusterSpec& spec, std::vector<std::string>* paths = nullptr) {
    const std::string sub = dir_.File("run" + std::to_string(++runs_));
    std::filesystem::create_directory(sub);
    auto p = synth::WriteClusterBundles(spec, sub);
    EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message());
    if (paths && p.ok()) *paths = p.value();
    Merged m = RunMerge(dir_, p.ok() ? p.value() : std::vector<std::string>{});
    auto db = OpenMerged(m.path);
    EXPECT_TRUE(db.ok());
    if (db.ok()) {
      ExpectCountsReconcile(*db);
      ExpectAlignmentApplied(*db);
    }
    return m;
  }
  // Every node but the reference rests on `kind` (and the init), never on blocking calls unless
  // `kind` is blocking_call.
  static void ExpectEvidence(const Merged& m, const std::string& kind) {
    for (const NodeAlignment& a : m.result.alignment) {
      if (a.method == "reference") continue;
      SCOPED_TRACE(a.node + ": " + a.note);
      EXPECT_EQ(a.evidence.rfind(kind + " ", 0), 0u) << a.evidence;
      EXPECT_NE(a.evidence.find("comm_init 1"), std::string::npos) << a.evidence;
      if (kind != "blocking_call") {
        EXPECT_EQ(a.evidence.find("blocking_call"), std::string::npos) << a.evidence;
      }
    }
  }
  static void Report(const char* what, uint64_t seed, const Recovery& r) {
    std::printf("[ accuracy ] %s, seed %llu: largest error %.1f us, smallest bound %.1f us\n", what,
                static_cast<unsigned long long>(seed), r.max_error_ns / 1000,
                r.min_bound_ns / 1000);
  }
  int runs_ = 0;
};

TEST_F(MergeEvidence, DeviceTimesRecoverEveryClock) {
  for (uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE(seed);
    synth::ClusterSpec spec = SkewedCluster("async", seed);
    std::vector<std::string> paths;
    Merged m = WriteAndMerge(spec, &paths);
    EXPECT_NE(m.log.find("calls only enqueue"), std::string::npos) << m.log;
    ExpectEvidence(m, "device");
    Report("device", seed, ExpectRecovered(spec, m));
    auto db = OpenMerged(m.path);
    ASSERT_TRUE(db.ok());
    EXPECT_EQ(ExpectGpuOpsAligned(*db, paths), synth::ExpectedRows(spec).gpu);
  }
}

TEST_F(MergeEvidence, DeviceTimesWithoutAConversionBoundAreSaidSo) {
  synth::ClusterSpec spec = SkewedCluster("async", 4);
  spec.gpu_clock_error_ns = -1;
  Merged m = WriteAndMerge(spec);
  ExpectEvidence(m, "device");
  ExpectRecovered(spec, m);
  for (const NodeAlignment& a : m.result.alignment) {
    if (a.method == "reference") continue;
    EXPECT_NE(a.note.find("device times without a conversion bound (their ends only"),
              std::string::npos)
        << a.note;
  }
}

TEST_F(MergeEvidence, BlockingSyncsAfterEnqueuesRecoverEveryClock) {
  for (uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE(seed);
    synth::ClusterSpec spec = SkewedCluster("async", seed);
    spec.gpu_ops = false;
    Merged m = WriteAndMerge(spec);
    ExpectEvidence(m, "sync_after");
    Report("sync_after", seed, ExpectRecovered(spec, m));
  }
  // One rank per node: no node can show that the calls enqueue; the processes' CUDA calls make
  // them enqueues all the same.
  synth::ClusterSpec spec = SkewedCluster("async", 5);
  spec.gpu_ops = false;
  spec.ranks_per_node = 1;
  Merged m = WriteAndMerge(spec);
  EXPECT_NE(m.log.find("no node has two of its ranks"), std::string::npos) << m.log;
  ExpectEvidence(m, "sync_after");
  Report("sync_after, one rank per node", 5, ExpectRecovered(spec, m));
}

TEST_F(MergeEvidence, BlockingCallsRecoverEveryClock) {
  for (uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE(seed);
    synth::ClusterSpec spec = SkewedCluster("sync", seed);
    spec.cuda_calls = true;  // the test bed's sync mode: CUDA_LAUNCH_BLOCKING
    Merged m = WriteAndMerge(spec);
    EXPECT_NE(m.log.find("calls block"), std::string::npos) << m.log;
    ExpectEvidence(m, "blocking_call");
    Report("blocking_call", seed, ExpectRecovered(spec, m));
  }
}

TEST_F(MergeEvidence, CudaLaunchBlockingMakesAGpuProcessesCallsBlock) {
  // One rank per node: no node can show how the calls behave; the processes make CUDA calls
  // but ran with CUDA_LAUNCH_BLOCKING=1, so their NCCL calls block (taking them as enqueues
  // would give sync_after evidence here).
  synth::ClusterSpec spec = SkewedCluster("sync", 4);
  spec.cuda_calls = true;
  spec.ranks_per_node = 1;
  Merged m = WriteAndMerge(spec);
  ExpectEvidence(m, "blocking_call");
  Report("blocking_call, one rank per node", 4, ExpectRecovered(spec, m));
}

TEST_F(MergeEvidence, AnEnqueuesEntryAndExitAreNeverARendezvous) {
  // GPU nodes without device times and without any sync after their collectives (the loss
  // copies removed): the enqueues bound nothing, only the init aligns the clocks. Taking the
  // enqueue calls as rendezvous would show blocking_call evidence here (and, with one rank
  // per node, constraints that miss the truth).
  for (int ranks : {2, 1}) {
    SCOPED_TRACE(ranks);
    synth::ClusterSpec spec = SkewedCluster("async", 6);
    spec.gpu_ops = false;
    spec.ranks_per_node = ranks;
    spec.steps = 100;
    std::vector<std::string> paths;
    WriteAndMerge(spec, &paths);
    for (const std::string& p : paths) {
      ASSERT_TRUE(
          testing::RewriteBundle(p, p, "DELETE FROM cuda_events WHERE api = 'cudaMemcpy'").ok());
    }
    Merged m = RunMerge(dir_, paths);
    for (const NodeAlignment& a : m.result.alignment) {
      if (a.method == "reference") continue;
      SCOPED_TRACE(a.node + ": " + a.note);
      EXPECT_EQ(a.method, "rendezvous");
      EXPECT_EQ(a.evidence, "comm_init 1");
      EXPECT_EQ(a.rendezvous_count, 1);
    }
    // The init pins the clocks at the start; the bound grows with the drift it cannot see.
    ExpectRecovered(spec, m, /*tolerance_ns=*/5'000'000);
  }
}

}  // namespace
}  // namespace rs::merge
