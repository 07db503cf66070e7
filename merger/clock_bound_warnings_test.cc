#include "merger/clock_bound_warnings.h"

#include <gtest/gtest.h>

#include "rscore/schema.h"

namespace rs::merge {
namespace {

rs::Db MergedDb() {
  auto db = rs::Db::Open(":memory:", rs::Db::Mode::kCreate);
  EXPECT_TRUE(db.ok());
  EXPECT_TRUE(rs::CreateSchema(*db, rs::DbKind::kMerged).ok());
  return std::move(db).value();
}

void Exec(rs::Db& db, const std::string& sql) {
  auto r = db.Exec(sql);
  ASSERT_TRUE(r.ok()) << sql << ": " << r.error().message();
}

// Collective calls of 1, 2, 3, 4 and 100 ms; a SEND, a COMM_INIT and a call in flight that are
// no completed collective.
constexpr const char* kCalls =
    "INSERT INTO nccl_events(node, timestamp_ns, local_timestamp_ns, duration_ns, pid, tid, op,"
    " seq, comm_id_hash, state) VALUES"
    " ('n0', 1, 1, 1000000, 1, 1, 'ALL_REDUCE', 0, 7, 'complete'),"
    " ('n0', 2, 2, 2000000, 1, 1, 'ALL_REDUCE', 1, 7, 'complete'),"
    " ('n1', 3, 3, 3000000, 2, 2, 'ALL_GATHER', 0, 7, 'complete'),"
    " ('n1', 4, 4, 4000000, 2, 2, 'ALL_REDUCE', 1, 7, 'complete'),"
    " ('n1', 5, 5, 100000000, 2, 2, 'BROADCAST', 2, 7, 'complete'),"
    " ('n1', 6, 6, 900000000, 2, 2, 'SEND', 3, 7, 'complete'),"
    " ('n1', 7, 7, 900000000, 2, 2, 'COMM_INIT', 4, 7, 'complete'),"
    " ('n1', 8, 8, NULL, 2, 2, 'ALL_REDUCE', 5, 7, 'in_flight')";

TEST(CollectiveDurations, MedianOfTheCompletedCollectiveCalls) {
  rs::Db db = MergedDb();
  Exec(db, kCalls);
  auto d = MeasureCollectiveDurations(db);
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(d->source, "call");
  EXPECT_EQ(d->count, 5);
  EXPECT_EQ(d->median_ns, 3'000'000);
}

TEST(CollectiveDurations, CountsTheCallsThatOnlyEnqueue) {
  rs::Db db = MergedDb();
  Exec(db, kCalls);
  // pid 2 on n1 made CUDA calls (its 3 completed collectives enqueue); pid 1 on n0 did too but
  // ran with CUDA_LAUNCH_BLOCKING=1 (its calls block); a CUDA call of pid 1 on n1 is another
  // process.
  Exec(db,
       "INSERT INTO cuda_events(node, timestamp_ns, local_timestamp_ns, pid, tid, api, library)"
       " VALUES ('n1', 1, 1, 2, 2, 'cudaMemcpy', 'cudart'), ('n1', 2, 2, 2, 2, 'cudaMemcpy',"
       " 'cudart'), ('n0', 3, 3, 1, 1, 'cudaMemcpy', 'cudart'), ('n1', 4, 4, 1, 1, 'cudaMalloc',"
       " 'cudart')");
  Exec(db, "INSERT INTO processes(node, pid, cuda_launch_blocking) VALUES ('n0', 1, 1)");
  auto d = MeasureCollectiveDurations(db);
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(d->source, "call");
  EXPECT_EQ(d->count, 5);
  EXPECT_EQ(d->enqueued, 3);
}

// Where the merge decided the communicator's mode (call_modes), that decides, not the process.
TEST(CollectiveDurations, TheMergesCallModeDecidesFirst) {
  rs::Db db = MergedDb();
  Exec(db, kCalls);
  // pid 2 made CUDA calls: by its process, its calls would enqueue.
  Exec(db,
       "INSERT INTO cuda_events(node, timestamp_ns, local_timestamp_ns, pid, tid, api, library)"
       " VALUES ('n1', 1, 1, 2, 2, 'cudaMemcpy', 'cudart')");
  for (const char* mode : {"blocking", "enqueue", "by_process"}) {
    SCOPED_TRACE(mode);
    Exec(db, std::string("DELETE FROM call_modes; INSERT INTO call_modes VALUES (7, '") + mode +
                 "', 'why', 0, 0, 4, 0)");
    auto d = MeasureCollectiveDurations(db);
    ASSERT_TRUE(d.ok()) << d.error().message();
    EXPECT_EQ(d->count, 5);
    EXPECT_EQ(d->enqueued, std::string(mode) == "blocking"  ? 0
                           : std::string(mode) == "enqueue" ? 5
                                                            : 3);
  }
}

TEST(CollectiveDurations, DeviceDurationsWhereThePluginRecordedThem) {
  rs::Db db = MergedDb();
  Exec(db, kCalls);
  Exec(db,
       "INSERT INTO gpu_ops(node, timestamp_ns, local_timestamp_ns, pid, op, seq, "
       "device_start_ns, device_end_ns, state) VALUES"
       " ('n0', 1, 1, 1, 'ALL_REDUCE', 0, 100, 500100, 'completed'),"
       " ('n0', 2, 2, 1, 'ALL_REDUCE', 1, 100, 700100, 'completed'),"
       " ('n1', 3, 3, 2, 'ALL_REDUCE', 0, 100, 600100, 'completed'),"
       " ('n1', 4, 4, 2, 'ALL_REDUCE', 1, 100, NULL, 'started'),"
       " ('n1', 5, 5, 2, 'RECV', 2, 100, 90000100, 'completed')");
  auto d = MeasureCollectiveDurations(db);
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(d->source, "device");
  EXPECT_EQ(d->count, 3);
  EXPECT_EQ(d->median_ns, 600'000);
}

TEST(ClockBoundWarnings, NamesEveryNodeWhoseBoundExceedsTheMedian) {
  CollectiveDurations d{.count = 5, .median_ns = 3'000'000, .source = "call"};
  std::vector<NodeAlignment> nodes(3);
  nodes[0].node = "node0";  // the reference: no bound
  nodes[1].node = "node1";
  nodes[1].error_bound_ns = 3'000'000;  // equal: not beyond
  nodes[2].node = "node2";
  nodes[2].error_bound_ns = 32'000'000;
  auto w = ClockBoundWarnings(nodes, d);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].rfind("node node2: its clock error bound (+-", 0), 0u) << w[0];
  EXPECT_NE(w[0].find("exceeds the median duration of the recording's collectives ("),
            std::string::npos)
      << w[0];
  EXPECT_NE(w[0].find("over 5): lateness differences smaller than the bound cannot be ordered"),
            std::string::npos)
      << w[0];
  // Most calls only enqueue: the warning says what the median is of.
  d.enqueued = 3;
  w = ClockBoundWarnings(nodes, d);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("exceeds the median duration of the recording's NCCL calls (3.00 ms, over "
                      "5; 3 of them only enqueue a collective on a GPU stream, whose time on the "
                      "device was not recorded: no profiler plugin): lateness differences"),
            std::string::npos)
      << w[0];
  d.enqueued = 2;  // a minority: the collectives' durations
  EXPECT_NE(ClockBoundWarnings(nodes, d)[0].find("median duration of the recording's collectives"),
            std::string::npos);
  // Without collectives there is nothing to compare the bound with.
  EXPECT_TRUE(ClockBoundWarnings(nodes, CollectiveDurations{}).empty());
}

}  // namespace
}  // namespace rs::merge
