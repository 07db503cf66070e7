#include "rscore/call_mode.h"

#include <gtest/gtest.h>

#include <string>

#include "rscore/schema.h"

namespace rs {
namespace {

CallModeEvidence SameNode(int64_t checked, int64_t early) {
  CallModeEvidence e;
  e.same_node_checked = checked;
  e.same_node_early_exits = early;
  return e;
}

TEST(DecideCallMode, SameNodeThresholdIsOneCollectiveInTwenty) {
  EXPECT_EQ(DecideCallMode(SameNode(100, 4)).mode, CallMode::kBlocking);
  EXPECT_EQ(DecideCallMode(SameNode(100, 5)).mode, CallMode::kEnqueue);
  EXPECT_EQ(DecideCallMode(SameNode(3, 1)).mode, CallMode::kEnqueue);
  EXPECT_EQ(DecideCallMode(SameNode(22, 0)).evidence,
            "no call returned before another rank of its node entered (22 collectives checked)");
  EXPECT_EQ(DecideCallMode(SameNode(0, 0)).mode, CallMode::kByProcess);
}

TEST(DecideCallMode, DeviceTimesComeFirstThenOneClockThenAligned) {
  CallModeEvidence e = SameNode(40, 0);  // one node: blocking
  e.device_calls = 10;
  e.returned_before_device = 5;  // half returned before their device started
  EXPECT_EQ(DecideCallMode(e).mode, CallMode::kEnqueue);
  e.returned_before_device = 4;
  EXPECT_EQ(DecideCallMode(e).mode, CallMode::kBlocking);
  // Orderings across nodes count only where no node has two ranks.
  e.early_exits = 9;
  EXPECT_EQ(DecideCallMode(e).mode, CallMode::kBlocking);
  e.same_node_checked = 0;
  EXPECT_EQ(DecideCallMode(e).mode, CallMode::kEnqueue);
  e.waits = 9;  // as many waits: not enqueue; as many early exits: not blocking either
  EXPECT_EQ(DecideCallMode(e).mode, CallMode::kBlocking);
  e.early_exits = 10;
  EXPECT_EQ(DecideCallMode(e).mode, CallMode::kEnqueue);
  CallModeEvidence one;
  one.early_exits = 1;  // one could be a clock error beyond its bound
  EXPECT_EQ(DecideCallMode(one).mode, CallMode::kByProcess);
  EXPECT_NE(DecideCallMode(one).evidence.find("1 early exits, 0 waits"), std::string::npos);
  one.early_exits = 0;
  one.waits = 2;
  EXPECT_EQ(DecideCallMode(one).mode, CallMode::kBlocking);
}

TEST(CallModeName, RoundTrips) {
  for (CallMode m : {CallMode::kBlocking, CallMode::kEnqueue, CallMode::kByProcess}) {
    EXPECT_EQ(ParseCallMode(CallModeName(m)), m);
  }
  EXPECT_FALSE(ParseCallMode("block").has_value());
}

// The clock-free evidence is counted per node (merged or not) from finished, successful,
// ungrouped calls of rendezvous collectives; the device's from calls joined to their gpu_ops
// row with a bounded start.
TEST(ReadCallModeEvidence, CountsPerNodeOnOneClock) {
  auto db = Db::Open(":memory:", Db::Mode::kCreate);
  ASSERT_TRUE(db.ok()) << db.error().message();
  ASSERT_TRUE(CreateSchema(*db, DbKind::kMerged).ok());
  int id = 0;
  auto call = [&](const char* node, int pid, int64_t seq, int64_t ts, int64_t dur,
                  const char* op = "ALL_REDUCE", const char* extra_cols = "",
                  const char* extra_vals = "") {
    return "INSERT INTO nccl_events(id, node, timestamp_ns, duration_ns, pid, tid, op,"
           " comm_id_hash, seq" +
           std::string(extra_cols) + ") VALUES (" + std::to_string(++id) + ", '" + node + "', " +
           std::to_string(ts) + ", " + std::to_string(dur) + ", " + std::to_string(pid) + ", " +
           std::to_string(pid) + ", '" + op + "', 7, " + std::to_string(seq) + extra_vals + ");";
  };
  std::string sql =
      // seq 1: both n0 ranks left after both entered. seq 2: one left before the other came.
      call("n0", 1, 1, 100, 400) + call("n0", 2, 1, 300, 210) + call("n0", 1, 2, 1000, 5) +
      call("n0", 2, 2, 1100, 5) +
      // n1's clock is far ahead: its order with n0 says nothing, but its own two ranks do.
      call("n1", 1, 2, 900000, 5) + call("n1", 2, 2, 900100, 5) +
      // Left out: one call of a collective on a node, a broadcast, a grouped call, a failed
      // call, one in flight.
      call("n1", 1, 1, 800000, 5) + call("n0", 1, 3, 2000, 5, "BROADCAST") +
      call("n0", 2, 3, 2100, 5, "BROADCAST") +
      call("n0", 1, 4, 3000, 5, "ALL_REDUCE", ", in_group", ", 1") +
      call("n0", 2, 4, 3100, 5, "ALL_REDUCE", ", in_group", ", 1") +
      call("n0", 1, 5, 4000, 5, "ALL_REDUCE", ", ret", ", 3") + call("n0", 2, 5, 4100, 5) +
      call("n0", 1, 6, 5000, 0, "ALL_REDUCE", ", state", ", 'in_flight'") +
      call("n0", 2, 6, 5100, 5) +
      // Device starts: n0/1 seq 2 returned at 1005, its device started at 1100 (bound 10):
      // before. n0/2 seq 2 returned at 1105, started 1110 (bound 10): not clearly before.
      // n1/1 seq 2: no bound, not counted.
      "INSERT INTO gpu_ops(id, node, timestamp_ns, pid, tid, op, comm_id_hash, seq,"
      " device_start_ns, clock_error_ns, state) VALUES"
      " (100, 'n0', 1000, 1, 1, 'ALL_REDUCE', 7, 2, 1100, 10, 'completed'),"
      " (101, 'n0', 1100, 2, 2, 'ALL_REDUCE', 7, 2, 1110, 10, 'completed'),"
      " (102, 'n1', 900000, 1, 1, 'ALL_REDUCE', 7, 2, 900200, -1, 'completed');";
  auto r = db->Exec(sql);
  ASSERT_TRUE(r.ok()) << r.error().message();
  auto got = ReadCallModeEvidence(*db);
  ASSERT_TRUE(got.ok()) << got.error().message();
  ASSERT_EQ(got->size(), 1u);
  const CallModeEvidence& e = got->at(7);
  EXPECT_EQ(e.same_node_checked, 3);      // n0 seq 1, 2; n1 seq 2
  EXPECT_EQ(e.same_node_early_exits, 2);  // n0 seq 2, n1 seq 2
  EXPECT_EQ(e.device_calls, 2);
  EXPECT_EQ(e.returned_before_device, 1);
  EXPECT_EQ(DecideCallMode(e).mode, CallMode::kEnqueue);
}

TEST(StoredCallModes, WrittenAndReadBack) {
  auto db = Db::Open(":memory:", Db::Mode::kCreate);
  ASSERT_TRUE(db.ok()) << db.error().message();
  ASSERT_TRUE(CreateSchema(*db, DbKind::kBundle).ok());
  auto none = ReadStoredCallModes(*db);
  ASSERT_TRUE(none.ok()) << none.error().message();
  EXPECT_FALSE(none->has_value());  // a bundle: nothing decided yet
  auto merged = Db::Open(":memory:", Db::Mode::kCreate);
  ASSERT_TRUE(merged.ok());
  ASSERT_TRUE(CreateSchema(*merged, DbKind::kMerged).ok());
  CommunicatorCallMode c{-5, SameNode(30, 3), {}};
  c.decision = DecideCallMode(c.evidence);
  ASSERT_TRUE(WriteCallMode(*merged, c).ok());
  auto got = ReadStoredCallModes(*merged);
  ASSERT_TRUE(got.ok()) << got.error().message();
  ASSERT_TRUE(got->has_value());
  const CommunicatorCallMode& back = (*got)->at(-5);
  EXPECT_EQ(back.decision.mode, CallMode::kEnqueue);
  EXPECT_EQ(back.decision.evidence, c.decision.evidence);
  EXPECT_EQ(back.evidence.same_node_checked, 30);
  EXPECT_EQ(back.evidence.same_node_early_exits, 3);
  ASSERT_TRUE(merged->Exec("UPDATE call_modes SET mode = 'sometimes'").ok());
  got = ReadStoredCallModes(*merged);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().kind(), ErrorKind::kCorrupt);
}

}  // namespace
}  // namespace rs
