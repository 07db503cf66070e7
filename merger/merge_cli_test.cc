// The rankscope-merge executable: exit statuses, messages, output files.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "merger/test_bundles.h"
#include "rscore/bundle.h"
#include "rscore/call_mode.h"
#include "tests/support/synth_bundle.h"

namespace rs::merge {
namespace {

struct CliRun {
  int status = -1;
  std::string output;  // stdout + stderr
};

class MergeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("RANKSCOPE_MERGE");
    if (!bin) GTEST_SKIP() << "set RANKSCOPE_MERGE to the rankscope-merge binary (meson test does)";
    bin_ = bin;
    synth::ClusterSpec spec;
    spec.nodes = 2;
    spec.steps = 10;
    spec.offset_ns = {0, 20'000'000};
    auto p = synth::WriteClusterBundles(spec, dir_.path());
    ASSERT_TRUE(p.ok()) << p.error().message();
    bundles_ = p.value();
  }
  CliRun Merge(const std::string& args) {
    std::string log = dir_.File("log.txt");
    int rc = std::system((bin_ + " " + args + " >" + log + " 2>&1").c_str());
    std::ifstream f(log);
    CliRun r;
    r.output.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    return r;
  }
  std::string bin_;
  testing::TempDir dir_;
  std::vector<std::string> bundles_;
};

TEST_F(MergeCli, AllMergedExitsZero) {
  std::string out = dir_.File("m.rsdb");
  CliRun r = Merge("-o " + out + " " + bundles_[0] + " " + bundles_[1]);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("2 input(s) merged, 0 skipped"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("nccl_events"), std::string::npos) << r.output;  // per-table counts
  EXPECT_NE(r.output.find("clock node1: rendezvous"), std::string::npos) << r.output;
  // What the alignment rests on, and how the communicator's calls were judged.
  EXPECT_NE(r.output.find("(12 rendezvous: blocking_call 11, comm_init 1)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(": calls block: no call returned before another rank of its node"
                          " entered (22 collectives checked)"),
            std::string::npos)
      << r.output;
  auto opened = rs::OpenRankscopeFile(out);
  ASSERT_TRUE(opened.ok()) << opened.error().message();
  EXPECT_EQ(opened->info().db_kind, "merged");
  // The decision the log states is the one the merged database keeps for the report.
  auto modes = rs::ReadStoredCallModes(opened->db());
  ASSERT_TRUE(modes.ok()) << modes.error().message();
  ASSERT_TRUE(modes->has_value());
  ASSERT_EQ((*modes)->size(), 1u);
  const rs::CommunicatorCallMode& c = (*modes)->begin()->second;
  EXPECT_EQ(c.decision.mode, rs::CallMode::kBlocking);
  EXPECT_EQ(c.evidence.same_node_checked, 22);
  EXPECT_EQ(c.evidence.same_node_early_exits, 0);
  struct stat sb {};
  ASSERT_EQ(stat(out.c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0600u);
}

TEST_F(MergeCli, SkippedInputExitsThreeWithAWarningQuietDoesNotHide) {
  std::string bad = dir_.File("bad.rsb");
  ASSERT_TRUE(testing::WriteText(bad, "").ok());
  CliRun r = Merge("-q -o " + dir_.File("m.rsdb") + " " + dir_.path());
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_NE(r.output.find("warning: skipped " + bad + ": empty file"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("nccl_events"), std::string::npos) << "quiet prints no counts";
}

TEST_F(MergeCli, StrictAndNothingMergedExitOne) {
  std::string bad = dir_.File("bad.rsb");
  ASSERT_TRUE(testing::WriteText(bad, "garbage").ok());
  std::string out = dir_.File("m.rsdb");
  CliRun r = Merge("--strict -o " + out + " " + dir_.path());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("--strict"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out));
  r = Merge("-o " + out + " " + bad);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("nothing merged"), std::string::npos) << r.output;
}

// A stale bundle of another job (another communicator, a day earlier) picked up with the
// others: a warning that -q does not hide, noted in merge_inputs; --strict refuses it.
TEST_F(MergeCli, ABundleOfAnotherJobIsAWarningAndRefusedUnderStrict) {
  synth::ClusterSpec old;
  old.nodes = 1;
  old.steps = 5;
  old.seed = 99;
  old.start_ns -= 86'400'000'000'000;
  std::filesystem::create_directories(dir_.File("old"));
  auto p = synth::WriteClusterBundles(old, dir_.File("old"));
  ASSERT_TRUE(p.ok()) << p.error().message();
  const std::string stale = p.value()[0];
  const std::string out = dir_.File("m.rsdb");
  CliRun r = Merge("-q -o " + out + " " + bundles_[0] + " " + bundles_[1] + " " + stale);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("warning: " + stale), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("another job's bundle?"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("warning: " + bundles_[0]), std::string::npos) << r.output;
  auto opened = rs::OpenRankscopeFile(out);
  ASSERT_TRUE(opened.ok()) << opened.error().message();
  EXPECT_EQ(opened->db()
                .QueryInt("SELECT COUNT(*) FROM merge_inputs WHERE reason LIKE '%another job%'")
                .value(),
            1);
  std::filesystem::remove(out);
  r = Merge("--strict -o " + out + " " + bundles_[0] + " " + bundles_[1] + " " + stale);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find(stale), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out));
}

// A node with no rendezvous with the others (the same time, other communicators: nothing
// joins): aligned by its wall clock, said as a warning that -q does not hide.
TEST_F(MergeCli, ANodeAlignedByItsWallClockIsAWarning) {
  synth::ClusterSpec other;
  other.nodes = 2;
  other.steps = 10;
  other.seed = 8;  // another communicator
  std::filesystem::create_directories(dir_.File("other"));
  auto p = synth::WriteClusterBundles(other, dir_.File("other"));
  ASSERT_TRUE(p.ok()) << p.error().message();
  CliRun r = Merge("-q -o " + dir_.File("w.rsdb") + " " + bundles_[0] + " " + p.value()[1]);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("warning: node node1: no rendezvous with the other nodes, its clock is"
                          " aligned by its wall clock only"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("another job"), std::string::npos) << "same time: not foreign";
}

// A node whose clock bound is wider than the recording's collectives take (node1's wall clock,
// bounded by the kernels' maxerror, 32 ms; the collectives about 2 ms): lateness differences
// that small cannot be ordered, said as a warning that -q does not hide. Rendezvous-aligned
// nodes (bounds of microseconds) are not warned about.
TEST_F(MergeCli, AClockBoundWiderThanTheCollectivesIsAWarning) {
  synth::ClusterSpec other;
  other.nodes = 2;
  other.steps = 10;
  other.seed = 8;  // another communicator
  std::filesystem::create_directories(dir_.File("other"));
  auto p = synth::WriteClusterBundles(other, dir_.File("other"));
  ASSERT_TRUE(p.ok()) << p.error().message();
  CliRun r = Merge("-q -o " + dir_.File("w.rsdb") + " " + bundles_[0] + " " + p.value()[1]);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("rankscope-merge: warning: node node1: its clock error bound (+-"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("exceeds the median duration of the recording's collectives ("),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("lateness differences smaller than the bound cannot be ordered"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("warning: node node0: its clock error bound"), std::string::npos)
      << r.output;
  r = Merge("-q -o " + dir_.File("r.rsdb") + " " + bundles_[0] + " " + bundles_[1]);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.find("exceeds the median duration"), std::string::npos) << r.output;
}

// Two cuts of one ring (rankscope-record --ring: one recording, two windows) used to be
// merged as one "duplicate", the second dropped without a word (exit 0, nothing under -q). A
// merged database holds one window per recording: the second cut is skipped, loudly, exit 3.
// A byte-for-byte copy of a bundle stays a quiet duplicate.
TEST_F(MergeCli, ASecondCutOfTheSameRingIsSkippedLoudly) {
  const std::string cut1 = dir_.File("cut1.rsb"), cut2 = dir_.File("cut2.rsb");
  const std::string copy = dir_.File("copy.rsb");
  auto cut = [](int64_t from_s, int64_t to_s) {
    const std::string from = std::to_string(from_s * 1'000'000'000);
    const std::string to = std::to_string(to_s * 1'000'000'000);
    return "INSERT OR REPLACE INTO metadata(key, value) VALUES ('cut_reason', 'request'),"
           " ('cut_ns', '" +
           to + "'), ('cut_window_start_ns', '" + from +
           "'),"
           " ('cut_window_end_ns', '" +
           to + "');";
  };
  ASSERT_TRUE(testing::RewriteBundle(bundles_[0], cut1, cut(1'700'000'000, 1'700'000'060)).ok());
  // The later window: the ring's oldest rows aged out, new ones came.
  ASSERT_TRUE(
      testing::RewriteBundle(bundles_[0], cut2,
                             cut(1'700'000'030, 1'700'000'090) +
                                 " DELETE FROM nccl_events WHERE id IN (SELECT id FROM nccl_events"
                                 " ORDER BY id LIMIT 4);")
          .ok());
  std::filesystem::copy_file(cut1, copy);
  const std::string out = dir_.File("m.rsdb");
  CliRun r = Merge("-q -o " + out + " " + cut1 + " " + bundles_[1] + " " + cut2 + " " + copy);
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_NE(
      r.output.find("warning: skipped " + cut2 + ": another cut of the same ring recording (id "),
      std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("as input 1 (" + cut1 + "): it holds 2023-11-14T22:13:50"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("a merged database holds one window per recording"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find(copy), std::string::npos) << "a copy is a quiet duplicate: " << r.output;
  auto merged = testing::OpenMerged(out);
  ASSERT_TRUE(merged.ok()) << merged.error().message();
  EXPECT_EQ(merged
                ->QueryText("SELECT group_concat(status, ',') FROM (SELECT status FROM"
                            " merge_inputs ORDER BY input_id)")
                .value(),
            "merged,merged,skipped,duplicate");
  // Alone, the second cut merges.
  r = Merge("-q -o " + dir_.File("second.rsdb") + " " + cut2 + " " + bundles_[1]);
  EXPECT_EQ(r.status, 0) << r.output;
}

// File names are printed through rs::EscapeText: a name cannot start a line of its own.
TEST_F(MergeCli, FileNamesCannotForgeLines) {
  const std::string forged = dir_.File("bad\nrankscope-merge: wrote m.rsdb\x1b[2J.rsb");
  ASSERT_TRUE(testing::WriteText(forged, "garbage").ok());
  CliRun r = Merge("-q -o " + dir_.File("m.rsdb") + " '" + forged + "' " + bundles_[0]);
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_NE(r.output.find("bad\\nrankscope-merge: wrote m.rsdb\\x1b[2J.rsb: "), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("\nrankscope-merge: wrote"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << r.output;
}

// The shared convention (rscore/cli.h): usage errors exit 2, --help is laid out like every
// tool's, '-' is standard output, the last line says how long it took.
TEST_F(MergeCli, UsageErrorsExitTwo) {
  std::string out = dir_.File("m.rsdb");
  CliRun r = Merge("-o " + out);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("no inputs: give node bundles"), std::string::npos) << r.output;
  r = Merge("--no-such-flag -o " + out + " " + bundles_[0]);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("no-such-flag"), std::string::npos) << r.output;
  // One line, ending with the hint every tool gives.
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << r.output;
  EXPECT_NE(r.output.find(" (see 'rankscope-merge --help')\n"), std::string::npos) << r.output;
  r = Merge("--bundle -o - " + bundles_[0]);
  EXPECT_EQ(r.status, 2) << r.output;
}

TEST_F(MergeCli, HelpHasTheSharedLayout) {
  CliRun r = Merge("-h");
  EXPECT_EQ(r.status, 0) << r.output;
  size_t at = 0;
  for (const char* part :
       {"usage: rankscope-merge -o OUT.rsdb INPUT...", "\noptions:\n", "  -o, --out FILE",
        "      --strict", "\nexamples:\n", "  rankscope-merge -o job.rsdb bundles/",
        "\nexit status: 0 done", "See rankscope-merge(1)."}) {
    size_t next = r.output.find(part, at);
    EXPECT_NE(next, std::string::npos) << "missing or out of order: " << part << "\n" << r.output;
    if (next != std::string::npos) at = next;
  }
  EXPECT_EQ(r.output.find("[ --"), std::string::npos) << "Boost's raw layout: " << r.output;
}

TEST_F(MergeCli, DashWritesTheDatabaseToStandardOutput) {
  const std::string db = dir_.File("piped.rsdb");
  const std::string err = dir_.File("err.txt");
  const int rc = std::system(
      (bin_ + " -o - " + bundles_[0] + " " + bundles_[1] + " > " + db + " 2> " + err).c_str());
  ASSERT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
  EXPECT_FALSE(std::filesystem::exists("-"));
  auto opened = rs::OpenRankscopeFile(db);
  ASSERT_TRUE(opened.ok()) << opened.error().message();
  EXPECT_EQ(opened->info().db_kind, "merged");
  EXPECT_GT(opened->db().QueryInt("SELECT COUNT(*) FROM nccl_events").value(), 0);
  std::ifstream f(err);
  std::string log((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(log.find("wrote standard output: 2 input(s) merged"), std::string::npos) << log;
  EXPECT_EQ(log.find("\r"), std::string::npos) << "no terminal: no redrawn progress";
}

TEST_F(MergeCli, BundleCopyIsReadable) {
  std::string out = dir_.File("m.rsdb");
  CliRun r = Merge("--bundle -o " + out + " " + dir_.path());
  ASSERT_EQ(r.status, 0) << r.output;
  auto opened = rs::OpenRankscopeFile(out + ".zst");
  ASSERT_TRUE(opened.ok()) << opened.error().message();
  EXPECT_TRUE(opened->compressed());
  EXPECT_EQ(opened->info().db_kind, "merged");
  EXPECT_EQ(opened->db().QueryInt("SELECT COUNT(*) FROM clock_alignment").value(), 2);
}

TEST_F(MergeCli, HelpDocumentsExitStatus) {
  CliRun r = Merge("--help");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.output.find("exit status"), std::string::npos);
  EXPECT_NE(r.output.find("--strict"), std::string::npos);
}

}  // namespace
}  // namespace rs::merge
