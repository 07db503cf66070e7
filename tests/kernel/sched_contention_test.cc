// Scheduler contention: a traced process (--pid) and a CPU-bound competitor pinned to the
// same CPU, both SCHED_RR so that they take turns with each other however loaded the machine
// is. The traced process waits on the run queue while the competitor runs, and goes
// off CPU for it: rows name the competitor as the other task.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kernel_test.h"
#include "recorder_runner.h"

namespace rs::rec::ktest {
namespace {

TEST(SchedContention, RunqLatencyNamesTheCompetitor) {
  REQUIRE_ROOT_OR_SKIP();
  const int cpu = 0;
  pid_t traced = SpawnSpinner(cpu, "rs_traced", 10, /*round_robin=*/true);
  pid_t competitor = SpawnSpinner(cpu, "rs_competitor", 10, /*round_robin=*/true);
  ASSERT_GT(traced, 0);
  ASSERT_GT(competitor, 0);
  TempDir dir;
  std::string out = dir.File("sched.rsb");
  auto rec =
      RecorderProcess::Start({"--out", out, "--node", "ksched", "--pid", std::to_string(traced)});
  ASSERT_TRUE(rec.ok());
  bool ready = rec->WaitReady();
  if (ready) usleep(2'000'000);
  int rc = rec->Stop(SIGINT);
  Reap(traced);
  Reap(competitor);
  ASSERT_TRUE(ready) << rec->stderr_text();
  ASSERT_EQ(rc, 0) << rec->stderr_text();

  std::string t = std::to_string(traced), c = std::to_string(competitor);
  int64_t runq_by_competitor = *QueryBundleInt(
      out, "SELECT COUNT(*) FROM sched_events WHERE event = 'runq_latency' AND pid = " + t +
               " AND tid = " + t + " AND other_pid = " + c + " AND other_comm = 'rs_competitor'");
  EXPECT_GT(runq_by_competitor, 0);
  // Both spin on one CPU: every wait of the traced process is on that CPU.
  EXPECT_EQ(*QueryBundleInt(out, "SELECT COUNT(*) FROM sched_events WHERE pid = " + t +
                                     " AND cpu <> " + std::to_string(cpu)),
            0);
  // Waits behind the competitor are round-robin slices (100 ms): far above the 10 us event
  // threshold.
  EXPECT_GT(*QueryBundleInt(out,
                            "SELECT MAX(duration_ns) FROM sched_events WHERE event = "
                            "'runq_latency' AND pid = " +
                                t),
            10'000'000);
  EXPECT_EQ(*QueryBundleInt(out, "SELECT COUNT(*) FROM sched_events WHERE duration_ns < 10000"), 0);
  // Preempted by the competitor: off-CPU intervals with the competitor as the next task.
  EXPECT_GT(*QueryBundleInt(out,
                            "SELECT COUNT(*) FROM sched_events WHERE event = 'off_cpu' "
                            "AND pid = " +
                                t + " AND other_pid = " + c),
            0);
  // Only traced processes get events; the competitor only shows up in aggregates.
  EXPECT_EQ(*QueryBundleInt(out, "SELECT COUNT(*) FROM sched_events WHERE pid <> " + t), 0);
  EXPECT_GT(*QueryBundleInt(
                out, "SELECT SUM(switches) FROM sched_summary WHERE cpu = " + std::to_string(cpu)),
            0);
  EXPECT_EQ(*QueryBundleInt(
                out, "SELECT COUNT(*) FROM processes WHERE pid = " + t + " AND comm = 'rs_traced'"),
            1);
  EXPECT_EQ(*QueryBundleInt(out, "SELECT events FROM sources WHERE source = 'sched'"),
            *QueryBundleInt(out, "SELECT COUNT(*) FROM sched_events"));
}

}  // namespace
}  // namespace rs::rec::ktest
