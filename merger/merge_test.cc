// The merge on synthetic cluster bundles: clock offsets and drift recovered within their
// bounds, enqueue-only calls never taken as rendezvous, stack dedup, and counts that reconcile.
#include "merger/merge.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "merger/merge_checks.h"
#include "merger/stack_dedup.h"
#include "merger/test_bundles.h"
#include "tests/support/synth_bundle.h"

namespace rs::merge {
namespace {

using testing::Contents;
using testing::ExpectAlignmentApplied;
using testing::ExpectCountsReconcile;
using testing::Int;
using testing::Merged;
using testing::OpenMerged;
using testing::RunMerge;
using testing::TempDir;

class MergeSynth : public ::testing::Test {
 protected:
  std::vector<std::string> Write(const synth::ClusterSpec& spec) {
    auto paths = synth::WriteClusterBundles(spec, dir_.path());
    EXPECT_TRUE(paths.ok()) << (paths.ok() ? "" : paths.error().message());
    return paths.ok() ? paths.value() : std::vector<std::string>{};
  }
  TempDir dir_;
};

TEST_F(MergeSynth, RecoversInjectedOffsetsWithinBounds) {
  synth::ClusterSpec spec;
  spec.offset_ns = {0, 50'000'000, -50'000'000, 7'500'000};
  auto paths = Write(spec);
  Merged m = RunMerge(dir_, {dir_.path()});  // a directory of bundles
  EXPECT_EQ(m.result.merged, 4);
  EXPECT_EQ(m.result.exit_code(), 0);
  auto db = OpenMerged(m.path);
  ASSERT_TRUE(db.ok());
  auto st = db->Prepare(
      "SELECT node, offset_ns, error_bound_ns, method, rendezvous_count FROM clock_alignment"
      " ORDER BY node");
  ASSERT_TRUE(st.ok());
  int k = 0;
  while (st->Step().value()) {
    SCOPED_TRACE(st->Text(0));
    int64_t truth = spec.offset_ns[k] - spec.offset_ns[0];
    EXPECT_EQ(st->Text(0), synth::NodeName(k));
    EXPECT_EQ(st->Text(3), k == 0 ? "reference" : "rendezvous");
    EXPECT_NEAR(st->Int(1), truth, 50'000);
    EXPECT_LE(std::abs(st->Int(1) - truth), st->Int(2));
    if (k > 0) {
      EXPECT_EQ(st->Int(4), spec.steps + spec.steps / 10 + 1);  // + gathers + init
    }
    ++k;
  }
  EXPECT_EQ(k, 4);
  // After alignment the exits of each collective cluster across nodes.
  EXPECT_LT(Int(*db,
                "SELECT MAX(spread) FROM (SELECT MAX(timestamp_ns + duration_ns) -"
                " MIN(timestamp_ns + duration_ns) AS spread FROM nccl_events"
                " WHERE seq IS NOT NULL GROUP BY comm_id_hash, seq)"),
            150'000);
  synth::RowCounts want = synth::ExpectedRows(spec);
  EXPECT_EQ(Int(*db, "SELECT COUNT(*) FROM nccl_events"), want.nccl);
  EXPECT_EQ(Int(*db, "SELECT COUNT(*) FROM sched_events"), want.sched);
  EXPECT_EQ(Int(*db, "SELECT COUNT(*) FROM block_events"), want.block);
  EXPECT_EQ(Int(*db, "SELECT COUNT(*) FROM process_events"), want.process);
  EXPECT_EQ(m.result.event_rows, want.nccl + want.sched + want.block + want.process + want.tcp);
  ExpectCountsReconcile(*db);
  ExpectAlignmentApplied(*db);
  // Merged metadata: the recording window in aligned time; per-node originals kept.
  EXPECT_EQ(db->QueryText("SELECT value FROM metadata WHERE key = 'db_kind'").value(), "merged");
  EXPECT_EQ(Int(*db,
                "SELECT CAST(value AS INTEGER) FROM metadata WHERE key = "
                "'node.node1.local_start_ns'") -
                Int(*db,
                    "SELECT CAST(value AS INTEGER) FROM metadata WHERE key = "
                    "'node.node1.start_ns'"),
            Int(*db, "SELECT offset_ns FROM clock_alignment WHERE node = 'node1'"));
  // Output is private to its owner.
  struct stat sb {};
  ASSERT_EQ(stat(m.path.c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0600u);
}

TEST_F(MergeSynth, NoSkewGivesOffsetsNearZero) {
  synth::ClusterSpec spec;
  spec.nodes = 3;
  auto paths = Write(spec);
  Merged m = RunMerge(dir_, paths);
  ASSERT_EQ(m.result.alignment.size(), 3u);
  for (const NodeAlignment& a : m.result.alignment) {
    SCOPED_TRACE(a.node);
    EXPECT_NEAR(a.offset_ns, 0, 50'000);
    EXPECT_LE(std::abs(a.offset_ns), a.error_bound_ns);
    EXPECT_EQ(a.drift_ppm, 0);
  }
}

TEST_F(MergeSynth, RecoversDrift) {
  synth::ClusterSpec spec;
  spec.nodes = 3;
  spec.steps = 400;  // about 9 s of training: 20 ppm moves the clock by ~180 us
  spec.offset_ns = {0, 3'000'000, -2'000'000};
  spec.drift_ppm = {0, 20, -10};
  auto paths = Write(spec);
  Merged m = RunMerge(dir_, paths);
  ASSERT_EQ(m.result.alignment.size(), 3u);
  for (int k = 1; k < 3; ++k) {
    const NodeAlignment& a = m.result.alignment[k];
    SCOPED_TRACE(a.node);
    EXPECT_EQ(a.method, "rendezvous") << a.note;
    EXPECT_NEAR(a.drift_ppm, spec.drift_ppm[k], 1.0);
    // anchor = the node's local recording start, where its lead is the injected offset.
    EXPECT_NEAR(a.offset_ns, spec.offset_ns[k], 50'000);
    EXPECT_LE(std::abs(a.offset_ns - spec.offset_ns[k]), a.error_bound_ns);
  }
  auto db = OpenMerged(m.path);
  ASSERT_TRUE(db.ok());
  ExpectAlignmentApplied(*db);
  EXPECT_LT(Int(*db,
                "SELECT MAX(spread) FROM (SELECT MAX(timestamp_ns + duration_ns) -"
                " MIN(timestamp_ns + duration_ns) AS spread FROM nccl_events"
                " WHERE seq IS NOT NULL GROUP BY comm_id_hash, seq)"),
            150'000);
}

TEST_F(MergeSynth, EnqueueOnlyCollectivesAreNoRendezvous) {
  // GPU-like: the recorded collective calls return right after enqueueing (two ranks per node:
  // one returns before the other enters), so they are no rendezvous and nothing else waited
  // for them; the communicator's init still is one.
  synth::ClusterSpec spec;
  spec.nodes = 3;
  spec.offset_ns = {0, 4'000'000, -6'000'000};
  auto paths = Write(spec);
  for (const std::string& p : paths) {
    ASSERT_TRUE(testing::RewriteBundle(
                    p, p, "UPDATE nccl_events SET duration_ns = 3000 + id % 5000 WHERE seq >= 0")
                    .ok());
  }
  Merged m = RunMerge(dir_, paths);
  ASSERT_EQ(m.result.alignment.size(), 3u);
  EXPECT_NE(m.log.find("calls only enqueue"), std::string::npos) << m.log;
  for (int k = 1; k < 3; ++k) {
    const NodeAlignment& a = m.result.alignment[k];
    SCOPED_TRACE(a.node);
    EXPECT_EQ(a.method, "rendezvous") << a.note;
    EXPECT_EQ(a.rendezvous_count, 1);
    EXPECT_EQ(a.evidence, "comm_init 1");
    EXPECT_LE(std::abs(a.offset_ns - spec.offset_ns[k]), a.error_bound_ns);
  }
  // Inits that return at once too: nothing is a rendezvous, the wall clock stays.
  for (const std::string& p : paths) {
    ASSERT_TRUE(
        testing::RewriteBundle(p, p, "UPDATE nccl_events SET duration_ns = 3000 + id % 5000").ok());
  }
  m = RunMerge(dir_, paths);
  ASSERT_EQ(m.result.alignment.size(), 3u);
  const int64_t maxerr = 16'000'000 + 400;  // synth clock_refs: maxerror 16 ms, read span 400 ns
  for (int k = 1; k < 3; ++k) {
    const NodeAlignment& a = m.result.alignment[k];
    SCOPED_TRACE(a.node);
    EXPECT_EQ(a.method, "wall_clock") << a.note;
    EXPECT_EQ(a.offset_ns, 0);
    EXPECT_EQ(a.error_bound_ns, 2 * maxerr);
    EXPECT_LE(std::abs(spec.offset_ns[k]), a.error_bound_ns);
    EXPECT_EQ(a.evidence, "");
  }
  auto db = OpenMerged(m.path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(Int(*db, "SELECT COUNT(*) FROM nccl_events WHERE timestamp_ns != local_timestamp_ns"),
            0);
  EXPECT_EQ(Int(*db, "SELECT COUNT(*) FROM clock_alignment WHERE evidence IS NOT NULL"), 0);
}

TEST_F(MergeSynth, StacksDeduplicatedAndReferencesRemapped) {
  synth::ClusterSpec spec;
  spec.nodes = 2;
  spec.steps = 10;
  auto paths = Write(spec);
  // node0: stacks A, B; node1: stacks B, C, with ids that are not the frames hash (a recorder
  // bug must not merge different stacks or split equal ones).
  const std::string a =
      "train_step+0x10 (/usr/bin/trainer@ab+0x1010)\nmain+0x5 (/usr/bin/trainer@ab+0x105)";
  const std::string b = "pncclAllReduce+0x0 (/usr/lib/libnccl.so.2@cd+0x4000)";
  const std::string c = "cudaMalloc+0x0 (/usr/lib/libcudart.so.13@ef+0x2000)";
  auto q = [](const std::string& s) { return "'" + s + "'"; };
  ASSERT_TRUE(testing::RewriteBundle(
                  paths[0], paths[0],
                  "INSERT INTO stacks VALUES (" + std::to_string(StackId(a)) + ", " + q(a) +
                      "), (" + std::to_string(StackId(b)) + ", " + q(b) +
                      ");"
                      "UPDATE nccl_events SET stack_id = CASE WHEN id % 2 = 0 THEN " +
                      std::to_string(StackId(a)) + " ELSE " + std::to_string(StackId(b)) + " END;")
                  .ok());
  ASSERT_TRUE(testing::RewriteBundle(paths[1], paths[1],
                                     "INSERT INTO stacks VALUES (1, " + q(b) + "), (2, " + q(c) +
                                         ");"
                                         "UPDATE nccl_events SET stack_id = 1 + id % 2;")
                  .ok());
  Merged m = RunMerge(dir_, paths);
  auto db = OpenMerged(m.path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(Int(*db, "SELECT COUNT(*) FROM stacks"), 3);
  EXPECT_EQ(Int(*db, "SELECT COUNT(DISTINCT frames) FROM stacks"), 3);
  for (const std::string* s : {&a, &b, &c}) {
    EXPECT_EQ(Int(*db, "SELECT id FROM stacks WHERE frames = " + q(*s)), StackId(*s));
  }
  // Every reference resolves, to the frames it had in its own bundle.
  EXPECT_EQ(Int(*db, "SELECT COUNT(*) FROM nccl_events WHERE stack_id IS NULL"), 0);
  EXPECT_EQ(Int(*db,
                "SELECT COUNT(*) FROM nccl_events e LEFT JOIN stacks s ON s.id = e.stack_id"
                " WHERE s.id IS NULL"),
            0);
  EXPECT_EQ(Int(*db,
                "SELECT COUNT(*) FROM nccl_events e JOIN stacks s ON s.id = e.stack_id"
                " WHERE e.node = 'node1' AND (e.local_timestamp_ns IS NULL OR"
                " (e.id % 2 = 0 AND s.frames != " +
                    q(b) + ") OR (e.id % 2 = 1 AND s.frames != " + q(c) + "))"),
            0);
  EXPECT_EQ(Int(*db,
                "SELECT rows_skipped FROM merge_counts WHERE input_id = 2 AND table_name = "
                "'stacks'"),
            1);  // b was already there
  ExpectCountsReconcile(*db);
}

TEST_F(MergeSynth, PartsGiveTheSameDatabaseAsCopyingEverythingDirectly) {
  synth::ClusterSpec spec;
  spec.nodes = 4;
  spec.steps = 10;
  spec.offset_ns = {0, 2'000'000, -3'000'000, 1'000'000};
  spec.drift_ppm = {0, 500, -300, 0};  // both copy paths apply a (large) drift too
  auto paths = Write(spec);
  // Shared stacks, so that which input holds a stack first depends on the input order; and a
  // second recording named node1 whose event ids must be remapped.
  const std::string a = "a+0x1 (/bin/t@ab+0x1)", b = "b+0x2 (/bin/t@ab+0x2)";
  for (size_t k = 0; k < paths.size(); ++k) {
    const std::string& s = k % 2 ? a : b;
    ASSERT_TRUE(testing::RewriteBundle(paths[k], paths[k],
                                       "INSERT INTO stacks VALUES (" + std::to_string(k + 1) +
                                           ", '" + s + "'), (9, '" + a + "');" +
                                           "UPDATE nccl_events SET stack_id = 9 - 8 * (id % 2);"
                                           " UPDATE nccl_events SET stack_id = " +
                                           std::to_string(k + 1) + " WHERE stack_id = 1;")
                    .ok());
  }
  // A row larger than a page (overflow pages): the same database whichever way it is copied.
  ASSERT_TRUE(testing::RewriteBundle(paths[3], paths[3],
                                     "INSERT INTO process_events(id, node, timestamp_ns, event,"
                                     " pid, filename) SELECT MAX(id) + 1, 'node3', 5, 'exec', 1,"
                                     " printf('%.30000c', 'x') FROM sched_events")
                  .ok());
  const std::string other = dir_.File("other-node1.rsb");
  ASSERT_TRUE(
      testing::RewriteBundle(paths[1], other,
                             "UPDATE metadata SET value = 'eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee'"
                             " WHERE key = 'recording_id'")
          .ok());
  paths.push_back(other);

  MergeOptions direct;
  direct.worker_threads = 0;
  Merged d = RunMerge(dir_, paths, direct);
  auto ddb = OpenMerged(d.path);
  ASSERT_TRUE(ddb.ok());
  std::vector<std::string> want = Contents(*ddb);
  ExpectCountsReconcile(*ddb);
  ExpectAlignmentApplied(*ddb);
  EXPECT_GE(Int(*ddb, "SELECT COUNT(*) FROM clock_alignment WHERE drift_ppm != 0"), 2);
  EXPECT_EQ(Int(*ddb,
                "SELECT COUNT(*) FROM merge_counts WHERE table_name = 'stacks' AND"
                " rows_skipped > 0"),
            4);  // every input after the first holds a stack seen before
  EXPECT_EQ(Int(*ddb,
                "SELECT rows_out FROM merge_counts WHERE table_name = 'stacks' AND"
                " input_id = 1"),
            2);  // whichever input reached the db first, input 1 is credited with both
  ddb = rs::Error("closed");

  // Every input a part on a worker thread, the parts' tables added by SQLite's transfer: the
  // same rows, and a database SQLite finds intact.
  {
    MergeOptions parts;
    parts.worker_threads = 2;
    Merged p = RunMerge(dir_, paths, parts);
    auto pdb = OpenMerged(p.path);
    ASSERT_TRUE(pdb.ok());
    ASSERT_GE(p.result.phases.size(), 3u);
    EXPECT_EQ(p.result.phases[1].phase, "copy (0 direct, 5 parts)");
    EXPECT_EQ(p.result.phases[2].phase, "event tables");
    EXPECT_EQ(Contents(*pdb), want);
    EXPECT_EQ(pdb->QueryText("PRAGMA integrity_check")->value_or(""), "ok");
    EXPECT_EQ(Int(*pdb, "SELECT COUNT(*) FROM nccl_events WHERE node = 'node1#2'"),
              Int(*pdb, "SELECT COUNT(*) FROM nccl_events WHERE node = 'node1'"));
    EXPECT_EQ(Int(*pdb,
                  "SELECT COUNT(*) FROM nccl_events e LEFT JOIN stacks s ON s.id = e.stack_id"
                  " WHERE s.id IS NULL"),
              0);
    // The indexes answer as the tables do.
    EXPECT_EQ(Int(*pdb,
                  "SELECT COUNT(*) FROM sched_events INDEXED BY sched_events_ts"
                  " WHERE timestamp_ns > 0"),
              Int(*pdb, "SELECT COUNT(*) FROM sched_events NOT INDEXED WHERE timestamp_ns > 0"));
    EXPECT_EQ(Int(*pdb,
                  "SELECT COUNT(*) FROM nccl_events INDEXED BY nccl_events_coll"
                  " WHERE comm_id_hash IS NOT NULL"),
              Int(*pdb,
                  "SELECT COUNT(*) FROM nccl_events NOT INDEXED"
                  " WHERE comm_id_hash IS NOT NULL"));
    ExpectAlignmentApplied(*pdb);
  }
}

TEST_F(MergeSynth, ReferenceNodeChosenByFlag) {
  synth::ClusterSpec spec;
  spec.nodes = 3;
  spec.steps = 10;
  spec.offset_ns = {0, 9'000'000, 0};
  auto paths = Write(spec);
  MergeOptions opt;
  opt.reference_node = "node1";
  Merged m = RunMerge(dir_, paths, opt);
  ASSERT_EQ(m.result.alignment.size(), 3u);
  EXPECT_EQ(m.result.alignment[1].method, "reference");
  EXPECT_NEAR(m.result.alignment[0].offset_ns, -9'000'000, 50'000);
  EXPECT_NEAR(m.result.alignment[2].offset_ns, -9'000'000, 50'000);
  auto db = OpenMerged(m.path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(db->QueryText("SELECT value FROM metadata WHERE key = 'clock_reference'").value(),
            "node1");
  // An unknown reference is an error naming the flag and the nodes there are.
  opt.reference_node = "node7";
  opt.inputs = paths;
  opt.out_path = dir_.File("other.rsdb");
  std::ostringstream log;
  auto r = Merge(opt, log);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("--reference node7"), std::string::npos);
  EXPECT_NE(r.error().message().find("node0, node1, node2"), std::string::npos);
}

TEST_F(MergeSynth, MergedDatabaseIsNotAnInput) {
  synth::ClusterSpec spec;
  spec.nodes = 2;
  spec.steps = 5;
  auto paths = Write(spec);
  Merged first = RunMerge(dir_, paths);
  MergeOptions opt;
  opt.inputs = {paths[0], paths[1], first.path};
  opt.out_path = dir_.File("again.rsdb");
  std::ostringstream log;
  auto r = Merge(opt, log);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->skipped, 1);
  EXPECT_EQ(r->inputs[2].status, "skipped");
  EXPECT_NE(r->inputs[2].reason.find("merged database"), std::string::npos) << r->inputs[2].reason;
}

}  // namespace
}  // namespace rs::merge
