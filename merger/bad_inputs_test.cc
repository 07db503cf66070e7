// Bad inputs: each reported by file and reason and skipped, the rest merged, counts reconcile.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "merger/inputs.h"
#include "merger/merge.h"
#include "merger/test_bundles.h"
#include "tests/support/synth_bundle.h"

namespace rs::merge {
namespace {

using testing::TempDir;

class BadInputs : public ::testing::Test {
 protected:
  void SetUp() override {
    spec_.nodes = 3;
    spec_.steps = 12;
    auto p = synth::WriteClusterBundles(spec_, dir_.path());
    ASSERT_TRUE(p.ok()) << p.error().message();
    good_ = p.value();
  }
  rs::Result<MergeResult> Run(const std::vector<std::string>& inputs, bool strict = false) {
    MergeOptions opt;
    opt.inputs = inputs;
    opt.out_path = dir_.File("out.rsdb");
    opt.strict = strict;
    std::ostringstream log;
    auto r = Merge(opt, log);
    log_ = log.str();
    return r;
  }
  int64_t Int(const std::string& sql) {
    auto db = rs::Db::Open(dir_.File("out.rsdb"), rs::Db::Mode::kReadOnly);
    EXPECT_TRUE(db.ok());
    auto v = db->QueryInt(sql);
    EXPECT_TRUE(v.ok()) << sql;
    return v.ok() ? v.value() : -1;
  }
  std::string Text(const std::string& sql) {
    auto db = rs::Db::Open(dir_.File("out.rsdb"), rs::Db::Mode::kReadOnly);
    EXPECT_TRUE(db.ok());
    auto v = db->QueryText(sql);
    return v.ok() && v.value() ? *v.value() : "";
  }
  void ExpectReconciled() {
    EXPECT_EQ(Int("SELECT COUNT(*) FROM merge_counts WHERE rows_in != rows_out + rows_skipped"), 0);
    for (const char* t : {"nccl_events", "sched_events", "block_events", "process_events"}) {
      EXPECT_EQ(
          Int(std::string("SELECT COUNT(*) FROM ") + t),
          Int(std::string("SELECT SUM(rows_out) FROM merge_counts WHERE table_name = '") + t + "'"))
          << t;
    }
  }
  synth::ClusterSpec spec_;
  TempDir dir_;
  std::vector<std::string> good_;
  std::string log_;
};

TEST_F(BadInputs, EachBadFileSkippedWithItsReasonAndTheRestMerged) {
  const std::string truncated = dir_.File("truncated.rsb");
  ASSERT_TRUE(testing::Truncate(good_[0], truncated, testing::FileSize(good_[0]) / 2).ok());
  const std::string flipped = dir_.File("flipped.rsb");
  // Page 2's b-tree page type byte: the image stays a readable SQLite file but is corrupt.
  ASSERT_TRUE(testing::FlipByteInImage(good_[1], flipped, 4096).ok());
  const std::string future = dir_.File("future.rsb");
  ASSERT_TRUE(testing::RewriteBundle(
                  good_[2], future, "UPDATE metadata SET value = '99' WHERE key = 'format_version'")
                  .ok());
  const std::string text = dir_.File("notes.rsb");
  ASSERT_TRUE(testing::WriteText(text, "node0 was rebooted at 10:32\n").ok());
  const std::string empty = dir_.File("empty.rsb");
  ASSERT_TRUE(testing::WriteText(empty, "").ok());
  const std::string no_events = dir_.File("idle.rsb");
  ASSERT_TRUE(
      testing::WriteEmptyBundle(no_events, "idle", "00000000000000000000000000000abc").ok());
  const std::string missing = dir_.File("missing.rsb");

  std::vector<std::string> inputs = good_;
  for (const std::string& f : {truncated, flipped, future, text, empty, no_events, missing}) {
    inputs.push_back(f);
  }
  auto r = Run(inputs);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->merged, 4);  // 3 good + the valid bundle without events
  EXPECT_EQ(r->skipped, 6);
  EXPECT_EQ(r->exit_code(), rs::cli::kExitPartial);
  std::map<std::string, std::string> reason;
  for (const InputSummary& in : r->inputs) reason[in.file] = in.status + ": " + in.reason;
  EXPECT_NE(reason[truncated].find("skipped"), std::string::npos);
  EXPECT_NE(reason[truncated].find("truncated"), std::string::npos) << reason[truncated];
  EXPECT_NE(reason[flipped].find("corrupt"), std::string::npos) << reason[flipped];
  EXPECT_NE(reason[future].find("newer than this rankscope"), std::string::npos) << reason[future];
  EXPECT_NE(reason[text].find("not a rankscope bundle"), std::string::npos) << reason[text];
  EXPECT_NE(reason[empty].find("empty file"), std::string::npos) << reason[empty];
  EXPECT_NE(reason[missing].find("No such file"), std::string::npos) << reason[missing];
  EXPECT_EQ(reason[no_events], "merged: ");
  // The log names every skipped file.
  for (const std::string& f : {truncated, flipped, future, text, empty, missing}) {
    EXPECT_NE(log_.find("skipping " + f + ": "), std::string::npos) << f;
  }
  // merge_inputs tells the same story.
  EXPECT_EQ(Int("SELECT COUNT(*) FROM merge_inputs WHERE status = 'skipped' AND reason != ''"), 6);
  EXPECT_EQ(Int("SELECT COUNT(*) FROM merge_inputs WHERE status = 'merged'"), 4);
  // The good inputs are complete.
  synth::RowCounts want = synth::ExpectedRows(spec_);
  EXPECT_EQ(Int("SELECT COUNT(*) FROM nccl_events"), want.nccl);
  EXPECT_EQ(Int("SELECT COUNT(*) FROM sched_events"), want.sched);
  // The idle node is there, with counts of zero and a wall-clock alignment.
  EXPECT_EQ(Int("SELECT COUNT(*) FROM merge_counts c JOIN merge_inputs i USING (input_id)"
                " WHERE i.node = 'idle' AND c.table_name = 'nccl_events' AND c.rows_in = 0"),
            1);
  EXPECT_EQ(Text("SELECT method FROM clock_alignment WHERE node = 'idle'"), "wall_clock");
  ExpectReconciled();
}

TEST_F(BadInputs, StrictAbortsWithoutWriting) {
  const std::string empty = dir_.File("empty.rsb");
  ASSERT_TRUE(testing::WriteText(empty, "").ok());
  std::vector<std::string> inputs = good_;
  inputs.push_back(empty);
  auto r = Run(inputs, true);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find(empty), std::string::npos) << r.error().message();
  EXPECT_FALSE(std::filesystem::exists(dir_.File("out.rsdb")));
  // Nothing left behind but the inputs.
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir_.path())) files += e.is_regular_file();
  EXPECT_EQ(files, 4);
}

TEST_F(BadInputs, NothingValidIsAnError) {
  const std::string text = dir_.File("notes.rsb");
  ASSERT_TRUE(testing::WriteText(text, "hello").ok());
  auto r = Run({text});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("nothing merged"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir_.File("out.rsdb")));
}

TEST_F(BadInputs, SameRecordingTwiceMergedOnce) {
  const std::string copy = dir_.File("node1-copy.rsb");
  std::filesystem::copy_file(good_[1], copy);
  std::vector<std::string> inputs = good_;
  inputs.push_back(copy);
  inputs.push_back(good_[0]);  // the very same file again
  auto r = Run(inputs);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->merged, 3);
  EXPECT_EQ(r->duplicates, 2);
  EXPECT_EQ(r->skipped, 0);
  EXPECT_EQ(r->exit_code(), 0);
  EXPECT_EQ(Int("SELECT COUNT(*) FROM merge_inputs WHERE status = 'duplicate' AND reason LIKE "
                "'same recording%merged once'"),
            2);
  EXPECT_NE(log_.find(copy + ": same recording"), std::string::npos) << log_;
  // The repeats' rows are counted, and counted as skipped: all of them are there once.
  EXPECT_EQ(Int("SELECT rows_skipped FROM merge_counts WHERE input_id = 4 AND table_name ="
                " 'nccl_events'"),
            Int("SELECT rows_out FROM merge_counts WHERE input_id = 2 AND table_name ="
                " 'nccl_events'"));
  EXPECT_EQ(Int("SELECT SUM(rows_out) FROM merge_counts WHERE input_id IN (4, 5)"), 0);
  EXPECT_GT(Int("SELECT SUM(rows_in) FROM merge_counts WHERE input_id = 5"), 0);
  EXPECT_EQ(Int("SELECT COUNT(*) FROM nccl_events"), synth::ExpectedRows(spec_).nccl);
  ExpectReconciled();
}

TEST_F(BadInputs, TwoRecordingsWithOneNodeNameBothKept) {
  // Another recording that also calls itself node1, with event ids in the same id space (its
  // ids would overwrite node1's rows if copied as they are).
  const std::string other = dir_.File("other-node1.rsb");
  ASSERT_TRUE(
      testing::RewriteBundle(good_[1], other,
                             "UPDATE metadata SET value = 'ffffffffffffffffffffffffffffffff'"
                             " WHERE key = 'recording_id'")
          .ok());
  std::vector<std::string> inputs = good_;
  inputs.push_back(other);
  auto r = Run(inputs);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->merged, 4);
  EXPECT_EQ(r->exit_code(), 0);
  EXPECT_EQ(Text("SELECT node FROM merge_inputs WHERE input_id = 4"), "node1#2");
  EXPECT_EQ(Text("SELECT original_node FROM merge_inputs WHERE input_id = 4"), "node1");
  std::string reason = Text("SELECT reason FROM merge_inputs WHERE input_id = 4");
  EXPECT_NE(reason.find("already used"), std::string::npos) << reason;
  EXPECT_NE(reason.find("remapped"), std::string::npos) << reason;
  const int64_t per_node = Int("SELECT COUNT(*) FROM nccl_events WHERE node = 'node1'");
  EXPECT_GT(per_node, 0);
  EXPECT_EQ(Int("SELECT COUNT(*) FROM nccl_events WHERE node = 'node1#2'"), per_node);
  EXPECT_EQ(Int("SELECT COUNT(*) FROM nccl_events"), synth::ExpectedRows(spec_).nccl + per_node);
  // Same low 32 bits (the event counter), different recording key.
  EXPECT_EQ(Int("SELECT COUNT(*) FROM nccl_events a JOIN nccl_events b"
                " ON (a.id & 4294967295) = (b.id & 4294967295) AND a.local_timestamp_ns ="
                " b.local_timestamp_ns WHERE a.node = 'node1' AND b.node = 'node1#2'"),
            per_node);
  EXPECT_EQ(Text("SELECT method FROM clock_alignment WHERE node = 'node1#2'"), "rendezvous");
  ExpectReconciled();
}

TEST_F(BadInputs, RowsOfAnotherNodeInsideABundleAreCountedAsSkipped) {
  const std::string odd = dir_.File("odd.rsb");
  ASSERT_TRUE(testing::RewriteBundle(good_[2], odd,
                                     "UPDATE sched_events SET node = 'intruder' WHERE id % 3 = 0")
                  .ok());
  auto r = Run({good_[0], good_[1], odd});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_GT(Int("SELECT rows_skipped FROM merge_counts WHERE input_id = 3 AND table_name = "
                "'sched_events'"),
            0);
  EXPECT_EQ(Int("SELECT COUNT(*) FROM sched_events WHERE node = 'intruder'"), 0);
  ExpectReconciled();
}

// tcp_events gained ca_state and err after bundles were first written, without a new format
// version: a bundle without them merges whole, its rows with NULL there (state unknown).
TEST_F(BadInputs, BundleWrittenBeforeTcpEventsHadCaStateAndErrMergesWithNulls) {
  synth::ClusterSpec loss = spec_;
  loss.fault = "loss";
  loss.fault_node = 1;
  const std::string sub = dir_.File("loss");
  std::filesystem::create_directory(sub);
  auto p = synth::WriteClusterBundles(loss, sub);
  ASSERT_TRUE(p.ok()) << p.error().message();
  const std::vector<std::string> bundles = p.value();
  const std::string older = dir_.File("before-ca-state.rsb");
  ASSERT_TRUE(testing::RewriteBundle(bundles[1], older,
                                     "ALTER TABLE tcp_events DROP COLUMN ca_state;"
                                     " ALTER TABLE tcp_events DROP COLUMN err")
                  .ok());
  ASSERT_TRUE(Run(bundles).ok());
  const int64_t rows_node1 = Int("SELECT COUNT(*) FROM tcp_events WHERE node = 'node1'");
  const int64_t rows_all = Int("SELECT COUNT(*) FROM tcp_events");
  ASSERT_GT(rows_node1, 0);  // the loss fault's node retransmits, and so do its neighbours
  ASSERT_GT(rows_all, rows_node1);
  std::remove(dir_.File("out.rsdb").c_str());  // merged again below
  for (int workers : {0, 3}) {  // straight into the output, and as parts on worker threads
    SCOPED_TRACE(workers);
    MergeOptions opt;
    opt.inputs = {bundles[0], older, bundles[2]};
    opt.out_path = dir_.File("out.rsdb");
    opt.worker_threads = workers;
    std::ostringstream log;
    auto r = Merge(opt, log);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->merged, 3);
    EXPECT_EQ(r->exit_code(), 0) << log.str();
    EXPECT_EQ(Int("SELECT COUNT(*) FROM tcp_events"), rows_all);
    EXPECT_EQ(Int("SELECT COUNT(*) FROM tcp_events WHERE node = 'node1' AND ca_state IS NULL"
                  " AND err IS NULL"),
              rows_node1);
    EXPECT_EQ(Int("SELECT COUNT(*) FROM tcp_events WHERE node != 'node1' AND ca_state ="
                  " 'Recovery' AND err = 0"),
              rows_all - rows_node1);
    ExpectReconciled();
    std::remove(opt.out_path.c_str());
  }
}

TEST_F(BadInputs, InputThatFailsToCopyLeavesNothingBehind) {
  // Validates (intact, current versions) but cannot be copied: a NOT NULL column is missing.
  const std::string old_schema = dir_.File("old-schema.rsb");
  ASSERT_TRUE(
      testing::RewriteBundle(good_[1], old_schema, "ALTER TABLE block_events DROP COLUMN dev")
          .ok());
  // Copied straight into the output, and as a part on a worker thread.
  for (int workers : {0, 3}) {
    SCOPED_TRACE(workers);
    MergeOptions opt;
    opt.inputs = {good_[0], old_schema, good_[2]};
    opt.out_path = dir_.File("out.rsdb");
    opt.worker_threads = workers;
    std::ostringstream log;
    auto r = Merge(opt, log);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->phases[1].phase,
              workers ? "copy (0 direct, 3 parts)" : "copy (3 direct, 0 parts)");
    EXPECT_EQ(r->merged, 2);
    EXPECT_EQ(r->skipped, 1);
    EXPECT_EQ(r->exit_code(), rs::cli::kExitPartial);
    EXPECT_EQ(r->inputs[1].status, "skipped");
    EXPECT_NE(r->inputs[1].reason.find("copy failed"), std::string::npos) << r->inputs[1].reason;
    EXPECT_NE(log.str().find("skipping " + old_schema), std::string::npos);
    // None of its rows, metadata or clock alignment; the others complete and reconciled.
    EXPECT_EQ(Int("SELECT COUNT(*) FROM nccl_events WHERE node = 'node1'"), 0);
    EXPECT_EQ(Int("SELECT COUNT(*) FROM metadata WHERE key LIKE 'node.node1.%'"), 0);
    EXPECT_EQ(Int("SELECT COUNT(*) FROM clock_alignment WHERE node = 'node1'"), 0);
    EXPECT_EQ(Int("SELECT COUNT(*) FROM merge_counts WHERE input_id = 2"), 0);
    EXPECT_EQ(Int("SELECT COUNT(DISTINCT node) FROM sched_events"), 2);
    ExpectReconciled();
    // --strict gives up instead, writing nothing.
    std::remove(opt.out_path.c_str());
    opt.strict = true;
    auto strict = Merge(opt, log);
    ASSERT_FALSE(strict.ok());
    EXPECT_NE(strict.error().message().find("--strict: " + old_schema), std::string::npos);
    EXPECT_FALSE(std::filesystem::exists(opt.out_path));
    int files = 0;  // no temp output or part left behind
    for (auto& e : std::filesystem::directory_iterator(dir_.path())) files += e.is_regular_file();
    EXPECT_EQ(files, 4);
  }
}

TEST_F(BadInputs, FileChangedAfterValidationIsNotCopied) {
  std::ostringstream log;
  std::vector<Input> inputs = PlanInputs({good_[0]}, log);
  ASSERT_EQ(inputs.size(), 1u);
  ASSERT_EQ(inputs[0].status, "merged") << inputs[0].reason;
  EXPECT_TRUE(ReopenInput(inputs[0]).ok());
  std::filesystem::copy_file(good_[1], good_[0], std::filesystem::copy_options::overwrite_existing);
  auto r = ReopenInput(inputs[0]);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("changed while merging"), std::string::npos);
}

}  // namespace
}  // namespace rs::merge
