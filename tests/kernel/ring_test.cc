// Always-on recording (--ring), with the real recorder: a window shorter than the recording
// (the cut holds the window and no older event; what fell out is counted), `rankscope-record
// cut`, the stop cut, one recorder per ring directory, and a ring left by kill -9 turned into
// a cut at the next start.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kernel_test.h"
#include "recorder_runner.h"

namespace rs::rec::ktest {
namespace {

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

int64_t Meta(const std::string& bundle, const std::string& key) {
  auto v = QueryBundleInt(bundle,
                          "SELECT CAST(value AS INTEGER) FROM metadata WHERE key = '" + key + "'");
  EXPECT_TRUE(v.ok()) << bundle << " " << key << ": " << (v.ok() ? "" : v.error().message());
  return v.ok() ? *v : -1;
}

// Execs of /bin/true, about 20 a second for `seconds`: process_events rows all along.
void Execs(double seconds) {
  Sh("for i in $(seq 1 " + std::to_string(static_cast<int>(seconds * 20)) +
     "); do /bin/true; sleep 0.05; done");
}

constexpr int64_t kWriteLagNs = 500'000'000;

// The cut holds the window only: no process event older than its window's start, its
// sources count the rows it holds, and the rows that fell out are counted.
void CheckCut(const std::string& cut, int64_t window_ns) {
  const int64_t start = Meta(cut, "cut_window_start_ns"), end = Meta(cut, "cut_window_end_ns");
  EXPECT_GT(start, 0);
  EXPECT_GE(end - start, window_ns) << "the window reaches back at least --ring";
  EXPECT_LE(end - start, window_ns + 1'500'000'000) << "about one commit more than --ring";
  // Rows go out of the ring by when they were written: an event from just before the window
  // that was written in it stays (at most one commit and a read of the rings late).
  EXPECT_EQ(*QueryBundleInt(cut, "SELECT COUNT(*) FROM process_events WHERE timestamp_ns < " +
                                     std::to_string(start - kWriteLagNs)),
            0)
      << "before the window by more than the write lag: "
      << *QueryBundleInt(
             cut, "SELECT " + std::to_string(start) + " - MIN(timestamp_ns) FROM process_events")
      << " ns";
  EXPECT_GT(*QueryBundleInt(cut, "SELECT COUNT(*) FROM process_events"), 0);
  EXPECT_EQ(*QueryBundleInt(cut, "SELECT events FROM sources WHERE source = 'process'"),
            *QueryBundleInt(cut, "SELECT COUNT(*) FROM process_events"));
  EXPECT_GT(Meta(cut, "process_ring_aged_out"), 0) << "older execs fell out of the ring";
  EXPECT_EQ(Meta(cut, "ring_aged_out") + Meta(cut, "ring_size_dropped"),
            *QueryBundleInt(cut,
                            "SELECT SUM(CAST(value AS INTEGER)) FROM metadata WHERE key "
                            "LIKE '%\\_ring\\_aged\\_out' ESCAPE '\\'"));
  EXPECT_EQ(Meta(cut, "ring_window_ns"), window_ns);
}

TEST(Ring, CutsHoldTheWindowAndCountWhatFellOut) {
  REQUIRE_ROOT_OR_SKIP();
  TempDir dir;
  const std::string ring = dir.File("ring");
  const int64_t window_ns = 2'000'000'000;
  auto rec = RecorderProcess::Start(
      {"--ring", "2s", "--ring-dir", ring, "--node", "kring", "--sources", "process"});
  ASSERT_TRUE(rec.ok());
  ASSERT_TRUE(rec->WaitReady()) << rec->stderr_text();

  // A second recorder on the same ring directory is refused, naming the first.
  RunResult second = RunRecorder({"--ring", "2s", "--ring-dir", ring, "--node", "kring"});
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_NE(second.stderr_text.find(std::to_string(rec->pid())), std::string::npos)
      << second.stderr_text;

  Execs(4.5);
  const std::string cut = ShOut(RecorderPath() + " cut --ring-dir " + ring);
  ASSERT_FALSE(cut.empty()) << rec->stderr_text();
  EXPECT_NE(cut.find("/cuts/"), std::string::npos) << cut;
  EXPECT_NE(cut.find("-request-kring/kring.rsb"), std::string::npos) << cut;
  CheckCut(cut, window_ns);
  EXPECT_EQ(*QueryBundleInt(cut,
                            "SELECT COUNT(*) FROM metadata WHERE (key = 'stop_reason' AND "
                            "value = 'cut') OR (key = 'cut_reason' AND value = 'request')"),
            2);

  Execs(1);
  ASSERT_EQ(rec->Stop(SIGINT), 0) << rec->stderr_text();
  const std::vector<std::string> log = Lines(ring + "/cuts.log");
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0], cut);
  EXPECT_NE(log[1].find("-stop/kring.rsb"), std::string::npos) << log[1];
  CheckCut(log[1], window_ns);
  EXPECT_NE(access((ring + "/recorder.pid").c_str(), F_OK), 0) << "the claim is released";
}

// Two nodes sharing a cut directory: one node's cut is answered by the other into the same
// CUT-ID directory; a second request moments later joins it instead of making another.
TEST(Ring, ACutDirectorySharedByNodesGivesOneSetOfBundles) {
  REQUIRE_ROOT_OR_SKIP();
  TempDir dir;
  const std::string cuts = dir.File("shared-cuts");
  auto start = [&](const std::string& node) {
    return RecorderProcess::Start({"--ring", "5s", "--ring-dir", dir.File("ring-" + node),
                                   "--cut-dir", cuts, "--node", node, "--sources", "process"});
  };
  auto a = start("ka");
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(a->WaitReady()) << a->stderr_text();
  auto b = start("kb");
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(b->WaitReady()) << b->stderr_text();
  Execs(1);

  const std::string cut_a = ShOut(RecorderPath() + " cut --ring-dir " + dir.File("ring-ka"));
  ASSERT_NE(cut_a.find("/shared-cuts/"), std::string::npos) << cut_a << a->stderr_text();
  const std::string cut_dir = cut_a.substr(0, cut_a.rfind('/'));
  const std::string cut_b = cut_dir + "/kb.rsb";
  for (int i = 0; i < 100 && access(cut_b.c_str(), F_OK) != 0; ++i) usleep(100'000);
  ASSERT_EQ(access(cut_b.c_str(), F_OK), 0) << b->stderr_text();
  for (const std::string& cut : {cut_a, cut_b}) {
    EXPECT_EQ(*QueryBundleInt(cut,
                              "SELECT COUNT(*) FROM metadata WHERE key = "
                              "'cut_requested_by' AND value = 'ka'"),
              1)
        << cut;
    EXPECT_GT(*QueryBundleInt(cut, "SELECT COUNT(*) FROM process_events"), 0) << cut;
  }
  // kb asks too, moments later: the same cut, already written there.
  const std::string again = ShOut(RecorderPath() + " cut --ring-dir " + dir.File("ring-kb"));
  EXPECT_EQ(again, cut_b);
  EXPECT_EQ(ShOut("ls " + cuts + " | wc -l"), "1") << ShOut("ls " + cuts);

  // The set merges as one job.
  EXPECT_EQ(Sh(std::string(std::getenv("RANKSCOPE_MERGE")) + " -q -o " + dir.File("m.rsdb") + " " +
               cut_dir),
            0);
  ASSERT_EQ(a->Stop(SIGINT), 0) << a->stderr_text();
  ASSERT_EQ(b->Stop(SIGINT), 0) << b->stderr_text();
}

// --cut-keep: this node's oldest cuts go once they take more than the cap, never the newest
// nor the newest it asked for itself (an incident: here the operator's `cut`).
TEST(Ring, OldCutsGoBeyondTheCap) {
  REQUIRE_ROOT_OR_SKIP();
  TempDir dir;
  const std::string ring = dir.File("ring");
  const std::vector<std::string> args = {"--ring",     "30s",   "--ring-dir", ring,
                                         "--node",     "kring", "--sources",  "process",
                                         "--cut-keep", "1"};
  auto rec = RecorderProcess::Start(args);
  ASSERT_TRUE(rec.ok());
  ASSERT_TRUE(rec->WaitReady()) << rec->stderr_text();
  Execs(0.5);
  const std::string asked = ShOut(RecorderPath() + " cut --ring-dir " + ring);
  ASSERT_EQ(access(asked.c_str(), F_OK), 0) << asked << rec->stderr_text();
  ASSERT_EQ(rec->Stop(SIGINT), 0) << rec->stderr_text();
  std::vector<std::string> log = Lines(ring + "/cuts.log");
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(access(asked.c_str(), F_OK), 0) << "the node's own incident stays";
  const std::string first_stop = log[1];
  EXPECT_EQ(access(first_stop.c_str(), F_OK), 0) << "the newest stays, whatever its size";
  // A second recording's stop cut: the first stop cut is the oldest that may go.
  sleep(1);  // another second: another stop cut's name
  auto again = RecorderProcess::Start(args);
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(again->WaitReady()) << again->stderr_text();
  ASSERT_EQ(again->Stop(SIGINT), 0) << again->stderr_text();
  log = Lines(ring + "/cuts.log");
  ASSERT_EQ(log.size(), 3u);
  EXPECT_NE(access(first_stop.c_str(), F_OK), 0) << "the older cut is removed";
  EXPECT_NE(access(first_stop.substr(0, first_stop.rfind('/')).c_str(), F_OK), 0)
      << "and its directory";
  EXPECT_EQ(access(asked.c_str(), F_OK), 0) << "the incident still stays";
  EXPECT_EQ(access(log[2].c_str(), F_OK), 0);
  EXPECT_NE(again->stderr_text().find("removed the cut " + first_stop), std::string::npos)
      << again->stderr_text();
}

TEST(Ring, ARingLeftByKillIsACutAtTheNextStart) {
  REQUIRE_ROOT_OR_SKIP();
  TempDir dir;
  const std::string ring = dir.File("ring");
  {
    auto rec = RecorderProcess::Start(
        {"--ring", "30s", "--ring-dir", ring, "--node", "kring", "--sources", "process"});
    ASSERT_TRUE(rec.ok());
    ASSERT_TRUE(rec->WaitReady()) << rec->stderr_text();
    Execs(1);
    usleep(500'000);  // two commits
    kill(rec->pid(), SIGKILL);
    rec->Wait();
  }
  auto rec = RecorderProcess::Start(
      {"--ring", "30s", "--ring-dir", ring, "--node", "kring", "--sources", "process"});
  ASSERT_TRUE(rec.ok());
  ASSERT_TRUE(rec->WaitReady()) << rec->stderr_text();
  EXPECT_NE(rec->stderr_text().find("is now the cut"), std::string::npos) << rec->stderr_text();
  ASSERT_EQ(rec->Stop(SIGTERM), 0) << rec->stderr_text();
  const std::vector<std::string> log = Lines(ring + "/cuts.log");
  ASSERT_EQ(log.size(), 2u);
  EXPECT_NE(log[0].find("-recovered/kring.rsb"), std::string::npos) << log[0];
  EXPECT_GT(*QueryBundleInt(log[0], "SELECT COUNT(*) FROM process_events"), 10)
      << "the execs committed before the kill";
  // Nothing of the killed recorder is left in the ring directory.
  EXPECT_EQ(ShOut("ls -A " + ring + " | grep -c 'rec-' || true"), "0");
}

}  // namespace
}  // namespace rs::rec::ktest
