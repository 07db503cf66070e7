// The ring's pure parts: trimming by id range and the size cap on a database of our own, the
// slowdown watch and the limit on cuts for other nodes' requests.
#include "recorder/ring.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "rscore/event_id.h"
#include "rscore/schema.h"

namespace rs::rec {
namespace {

constexpr int64_t kSec = 1'000'000'000;

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
                           "VALUES (" +
                           std::to_string(ids.Next()) + ", 'n', " + std::to_string(commit * kSec) +
                           ", 1, 'exec')")
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
  EXPECT_FALSE(window(10));   // still slow: not again
  EXPECT_FALSE(window(100));  // back
  EXPECT_TRUE(window(0));     // a stop: again
}

TEST(SlowdownWatch, JudgesNothingBeforeEnoughHistory) {
  SlowdownWatch w(0.5);
  EXPECT_FALSE(w.Feed(1, 0));
  EXPECT_FALSE(w.Feed(1 + SlowdownWatch::kWindowNs, 1000));
  EXPECT_FALSE(w.Feed(1 + 2 * SlowdownWatch::kWindowNs, 1000));  // 0 in a window, too early
}

TEST(PostedCutLimit, AtMostFourInAnyTenMinutes) {
  PostedCutLimit limit;
  const int64_t t0 = 1000 * kSec;
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(limit.Allow(t0 + i * kSec)) << i;
  EXPECT_FALSE(limit.Allow(t0 + 5 * kSec));
  EXPECT_FALSE(limit.Allow(t0 + PostedCutLimit::kWindowNs - kSec));
  EXPECT_TRUE(limit.Allow(t0 + PostedCutLimit::kWindowNs)) << "the first has left the window";
  EXPECT_FALSE(limit.Allow(t0 + PostedCutLimit::kWindowNs + kSec / 2));
}

}  // namespace
}  // namespace rs::rec
