#include "recorder/sched_probe.h"

#include <gtest/gtest.h>

#include <cstring>

#include "recorder/test_db.h"

namespace rs::rec {
namespace {

using testing::Bytes;
using testing::TestDb;

TEST(SchedEventWriter, DecodesRunqLatencyAndOffCpu) {
  TestDb t;
  auto w = SchedEventWriter::Create(t.db, "n1", &t.ids, &t.clock);
  ASSERT_TRUE(w.ok());
  rs_sched_event e{};
  e.ts_ns = 1'200'000'000'000;
  e.duration_ns = 3'500'000;
  e.kind = RS_SCHED_RUNQ;
  e.pid = 100;
  e.tid = 101;
  e.cpu = 1;
  e.other_pid = 200;
  e.other_tid = 201;
  std::strcpy(e.other_comm, "competitor");
  ASSERT_TRUE(w->Write(Bytes(e)).ok());
  e.kind = RS_SCHED_OFF_CPU;
  e.other_pid = 0;  // unknown
  e.other_tid = 0;
  std::memset(e.other_comm, 0, sizeof(e.other_comm));
  ASSERT_TRUE(w->Write(Bytes(e)).ok());

  EXPECT_EQ(t.Int("SELECT COUNT(*) FROM sched_events"), 2);
  EXPECT_EQ(t.Text("SELECT event FROM sched_events ORDER BY id LIMIT 1"), "runq_latency");
  EXPECT_EQ(t.Int("SELECT timestamp_ns FROM sched_events ORDER BY id LIMIT 1"),
            TestDb::kOffset + 1'200'000'000'000);
  EXPECT_EQ(t.Int("SELECT duration_ns FROM sched_events ORDER BY id LIMIT 1"), 3'500'000);
  EXPECT_EQ(t.Text("SELECT pid || '/' || tid || '@' || cpu FROM sched_events LIMIT 1"),
            "100/101@1");
  EXPECT_EQ(t.Text("SELECT other_pid || '/' || other_tid || ' ' || other_comm FROM sched_events "
                   "ORDER BY id LIMIT 1"),
            "200/201 competitor");
  EXPECT_EQ(t.Int("SELECT COUNT(*) FROM sched_events WHERE event = 'off_cpu' AND other_pid IS "
                  "NULL AND other_tid IS NULL AND other_comm IS NULL"),
            1);
}

TEST(SchedEventWriter, RejectsUnknownKind) {
  TestDb t;
  auto w = SchedEventWriter::Create(t.db, "n1", &t.ids, &t.clock);
  ASSERT_TRUE(w.ok());
  rs_sched_event e{};
  e.kind = 7;
  EXPECT_FALSE(w->Write(Bytes(e)).ok());
  EXPECT_FALSE(w->Write(Bytes(e).first(8)).ok());
  EXPECT_EQ(t.Int("SELECT COUNT(*) FROM sched_events"), 0);
}

TEST(SchedSummaryWriter, WritesPerCpuDeltas) {
  TestDb t;
  auto w = SchedSummaryWriter::Create(t.db, "n1");
  ASSERT_TRUE(w.ok());
  std::vector<SchedCpuSample> a = {{10, 2, 100, 60}, {5, 0, 0, 0}};
  std::vector<SchedCpuSample> b = {{25, 5, 400, 250}, {9, 1, 30, 30}};
  auto first = w->Write(1000, 0, {}, a);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, 0);
  auto rows = w->Write(2000, 1'000'000'000, a, b);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(*rows, 2);
  EXPECT_EQ(t.Text("SELECT switches || ',' || runq_count || ',' || runq_total_ns || ',' || "
                   "runq_max_ns FROM sched_summary WHERE cpu = 0"),
            "15,3,300,250");
  EXPECT_EQ(t.Text("SELECT switches || ',' || runq_count || ',' || runq_total_ns || ',' || "
                   "runq_max_ns FROM sched_summary WHERE cpu = 1"),
            "4,1,30,30");
  EXPECT_EQ(t.Int("SELECT SUM(interval_ns) FROM sched_summary"), 2'000'000'000);
  // Counters never go backwards; CPU count never changes.
  EXPECT_FALSE(w->Write(3000, 1, b, a).ok());
  EXPECT_FALSE(w->Write(3000, 1, b, {b[0]}).ok());
}

}  // namespace
}  // namespace rs::rec
