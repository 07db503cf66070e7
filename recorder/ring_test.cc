// The ring's pure parts: trimming by id range and the size cap on a database of our own, the
// slowdown watch, cut paths, cut requests in a directory and the rotation of old cuts.
#include "recorder/ring.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "rscore/event_id.h"
#include "rscore/schema.h"

namespace rec {
namespace {

constexpr int64_t kSec = 1'000'000'000;

std::string TempDirPath() {
  char tmpl[] = "/tmp/rs_ring_unit.XXXXXX";
  const char* d = mkdtemp(tmpl);
  return d ? d : "";
}

struct TempDirGuard {
  std::string path = TempDirPath();
  ~TempDirGuard() { (void)!std::system(("rm -rf '" + path + "'").c_str()); }
};

int64_t Count(rs::Db& db, const std::string& table) {
  return *db.QueryInt("SELECT COUNT(*) FROM " + table);
}

TEST(Ring, TrimDeletesTheRowsWrittenBeforeTheWindowAndCountsThem) {
  auto db = rs::Db::Open(":memory:", rs::Db::Mode::kCreate);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(rs::CreateSchema(*db, rs::DbKind::kBundle).ok());
  rs::EventIdAllocator ids(7);
  Ring ring(/*window_ns=*/10 * kSec, /*max_bytes=*/uint64_t{1} << 30, 7);
  auto write = [&](const char* table, int n, int64_t ts) {
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(db->Exec(std::string("INSERT INTO ") + table +
                           "(id, node, timestamp_ns, pid, event) VALUES (" +
                           std::to_string(ids.Next()) + ", 'n', " + std::to_string(ts) +
                           ", 1, 'exec')")
                      .ok());
    }
  };
  // Three commits: at 1 s (3 rows), 5 s (2 rows), 14 s (4 rows).
  write("process_events", 3, 1 * kSec);
  ring.Checkpoint(1 * kSec, ids.count());
  write("process_events", 2, 5 * kSec);
  ring.Checkpoint(5 * kSec, ids.count());
  write("process_events", 4, 14 * kSec);
  ring.Checkpoint(14 * kSec, ids.count());
  ASSERT_TRUE(ring.Trim(*db, 14 * kSec).ok());  // window from 4 s: the first commit goes
  EXPECT_EQ(Count(*db, "process_events"), 6);
  EXPECT_EQ(ring.aged_out("process_events"), 3u);
  EXPECT_EQ(ring.aged_out_total(), 3u);
  EXPECT_EQ(ring.held_since_ns(), 1 * kSec);
  ASSERT_TRUE(ring.Trim(*db, 16 * kSec).ok());  // from 6 s: the second goes too
  EXPECT_EQ(Count(*db, "process_events"), 4);
  ASSERT_TRUE(ring.Trim(*db, 100 * kSec).ok());  // the newest commit always stays
  EXPECT_EQ(Count(*db, "process_events"), 4);
  EXPECT_EQ(ring.aged_out_total(), 5u);
  EXPECT_EQ(ring.size_dropped_total(), 0u);
}

TEST(Ring, TheSizeCapDropsTheOldestFirst) {
  auto db = rs::Db::Open(":memory:", rs::Db::Mode::kCreate);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(rs::CreateSchema(*db, rs::DbKind::kBundle).ok());
  rs::EventIdAllocator ids(9);
  Ring ring(/*window_ns=*/3600 * kSec, /*max_bytes=*/1, 9);  // every commit but the newest
  for (int commit = 1; commit <= 3; ++commit) {
    for (int i = 0; i < 100; ++i) {
      ASSERT_TRUE(db->Exec("INSERT INTO process_events(id, node, timestamp_ns, pid, event) "
                           "VALUES (" + std::to_string(ids.Next()) + ", 'n', " +
                           std::to_string(commit * kSec) + ", 1, 'exec')")
                      .ok());
    }
    ring.Checkpoint(commit * kSec, ids.count());
  }
  ASSERT_TRUE(ring.Trim(*db, 3 * kSec).ok());
  EXPECT_EQ(Count(*db, "process_events"), 100);
  EXPECT_EQ(*db->QueryInt("SELECT MIN(timestamp_ns) FROM process_events"), 3 * kSec);
  EXPECT_EQ(ring.size_dropped_total(), 200u);
  EXPECT_EQ(ring.aged_out_total(), 0u);
}

TEST(SlowdownWatch, FiresOnceWhenTheRateFallsBelowTheFractionOfItsMedian) {
  SlowdownWatch w(0.5);
  int64_t t = 0;
  uint64_t ops = 0;
  auto window = [&](uint64_t n) {
    t += SlowdownWatch::kWindowNs;
    ops += n;
    return w.Feed(t, ops);
  };
  EXPECT_FALSE(w.Feed(t, ops));
  for (size_t i = 0; i < SlowdownWatch::kMinHistory; ++i) EXPECT_FALSE(window(100));
  EXPECT_FALSE(window(60));  // above half of the median
  EXPECT_TRUE(window(40));   // below: once
  EXPECT_EQ(w.last_window_ops(), 40u);
  EXPECT_EQ(w.median_ops(), 100u);
  EXPECT_FALSE(window(10));  // still slow: not again
  EXPECT_FALSE(window(100));  // back
  EXPECT_TRUE(window(0));     // a stop: again
}

TEST(SlowdownWatch, JudgesNothingBeforeEnoughHistory) {
  SlowdownWatch w(0.5);
  EXPECT_FALSE(w.Feed(1, 0));
  EXPECT_FALSE(w.Feed(1 + SlowdownWatch::kWindowNs, 1000));
  EXPECT_FALSE(w.Feed(1 + 2 * SlowdownWatch::kWindowNs, 1000));  // 0 in a window, too early
}

TEST(CutRequests, AJoinWithinTheWindowAndPendingOnesPerNode) {
  TempDirGuard dir;
  auto a = PostCutRequest(dir.path, "n1", 100 * kSec, "stall", 10 * kSec);
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_NE(a->cut_id.find("-stall-n1"), std::string::npos);
  auto b = PostCutRequest(dir.path, "n2", 105 * kSec, "request", 10 * kSec);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->cut_id, a->cut_id) << "within 10 s: joined";
  EXPECT_EQ(b->node, "n1");
  auto c = PostCutRequest(dir.path, "n2", 200 * kSec, "request", 10 * kSec);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(c->cut_id, a->cut_id);
  EXPECT_EQ(PendingCutRequests(dir.path, "n3", 0).size(), 2u);
  EXPECT_EQ(PendingCutRequests(dir.path, "n3", 150 * kSec).size(), 1u) << "older than its start";
  std::ofstream(dir.path + "/" + a->cut_id + "/n3.rsb") << "x";
  EXPECT_EQ(PendingCutRequests(dir.path, "n3", 0).size(), 1u) << "answered";
}

TEST(CutRotation, OldestOfThisNodeGoFirstNeverTheNewest) {
  TempDirGuard dir;
  for (const char* id : {"20260101T000000Z-stop", "20260102T000000Z-stop", "20260103T000000Z-stop"}) {
    ASSERT_TRUE(MakeDirs(dir.path + "/" + id).ok());
    std::ofstream(dir.path + "/" + id + "/n1.rsb") << std::string(1000, 'x');
  }
  std::ofstream(dir.path + "/20260101T000000Z-stop/n2.rsb") << "other node";
  const auto removed = RotateCuts(dir.path, "n1", 1500);
  ASSERT_EQ(removed.size(), 2u);
  EXPECT_NE(removed[0].find("20260101"), std::string::npos);
  EXPECT_NE(removed[1].find("20260102"), std::string::npos);
  EXPECT_EQ(access((dir.path + "/20260101T000000Z-stop/n2.rsb").c_str(), F_OK), 0)
      << "another node's bundle stays, and its directory";
  EXPECT_NE(access((dir.path + "/20260102T000000Z-stop").c_str(), F_OK), 0) << "emptied: gone";
  EXPECT_EQ(access((dir.path + "/20260103T000000Z-stop/n1.rsb").c_str(), F_OK), 0);
  EXPECT_TRUE(RotateCuts(dir.path, "n1", 0).empty()) << "0 keeps all";
}

TEST(CutLeftovers, ADeadRecordersCopyAndHalfBundleGoNothingElse) {
  TempDirGuard dir;
  // A pid that no longer runs: a child that has exited and been reaped.
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  ASSERT_GT(dead, 0);
  int status = 0;
  ASSERT_EQ(waitpid(dead, &status, 0), dead);
  const std::string cut = dir.path + "/20260101T000000Z-stall";
  ASSERT_TRUE(MakeDirs(cut).ok());
  const std::string d = std::to_string(dead), me = std::to_string(getpid());
  for (const std::string& name : std::vector<std::string>{
           ".n1.cut-" + d + ".db", ".n1.cut-" + d + ".db-journal", "n1.rsb.partial",  // stale
           ".n1.cut-" + me + ".db",                   // a live recorder's copy (ours)
           ".n2.cut-" + d + ".db", "n2.rsb.partial",  // another node's
           "n1.rsb", "request", ".n1.cut-x.db", ".n1.cut-" + d + ".txt", ".n1.cut-" + d + ".dbx"}) {
    std::ofstream(cut + "/" + name) << "x";
  }
  std::ofstream(dir.path + "/notes") << "a file beside the cuts";
  const auto removed = RemoveStaleCutFiles(dir.path, "n1");
  ASSERT_EQ(removed.size(), 3u);
  EXPECT_EQ(removed[0], cut + "/.n1.cut-" + d + ".db");
  EXPECT_EQ(removed[1], cut + "/.n1.cut-" + d + ".db-journal");
  EXPECT_EQ(removed[2], cut + "/n1.rsb.partial");
  for (const std::string& kept : std::vector<std::string>{
           ".n1.cut-" + me + ".db", ".n2.cut-" + d + ".db", "n2.rsb.partial", "n1.rsb", "request",
           ".n1.cut-x.db", ".n1.cut-" + d + ".txt", ".n1.cut-" + d + ".dbx"}) {
    EXPECT_EQ(access((cut + "/" + kept).c_str(), F_OK), 0) << kept;
  }
  EXPECT_TRUE(RemoveStaleCutFiles(dir.path, "n1").empty());
  EXPECT_TRUE(RemoveStaleCutFiles(dir.path + "/missing", "n1").empty());
}

TEST(CutPath, IdFromTheRequestElseTimeAndReason) {
  CutInfo info;
  info.reason = "stop";
  info.node = "node3";
  info.cut_ns = 1795627757458423862;  // 2026-11-25T17:29:17Z
  EXPECT_EQ(CutPath("/c", info), "/c/20261125T172917Z-stop/node3.rsb");
  info.cut_id = "X";
  EXPECT_EQ(CutPath("/c", info), "/c/X/node3.rsb");
}

}  // namespace
}  // namespace rec
