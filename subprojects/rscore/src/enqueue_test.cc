#include "rscore/enqueue.h"

#include <gtest/gtest.h>

#include "rscore/device_times.h"
#include "rscore/schema.h"

namespace rs {
namespace {

// One definition, read by the merge and the report alike: a process with NCCL calls that used
// a GPU (CUDA calls, or operations the plugin timed on a device) enqueues, unless it ran with
// CUDA_LAUNCH_BLOCKING=1; the node is part of a process's name.
TEST(EnqueuingProcesses, GpuUseWithoutLaunchBlocking) {
  auto db = Db::Open(":memory:", Db::Mode::kCreate);
  ASSERT_TRUE(db.ok()) << db.error().message();
  ASSERT_TRUE(CreateSchema(*db, DbKind::kMerged).ok());
  auto nccl = [](const char* node, int pid, int id) {
    return "INSERT INTO nccl_events(id, node, timestamp_ns, duration_ns, pid, tid, op) VALUES (" +
           std::to_string(id) + ", '" + node + "', 100, 5, " + std::to_string(pid) + ", " +
           std::to_string(pid) + ", 'ALL_REDUCE');";
  };
  std::string sql =
      // n0/1: CUDA calls. n0/2: the plugin's operations only. n0/3: CUDA calls, launch
      // blocking. n0/4: no GPU use (a CPU framework's calls). n1/1: the same pid on another
      // node, no GPU use. n0/5: CUDA calls but no NCCL call (not listed).
      nccl("n0", 1, 1) + nccl("n0", 2, 2) + nccl("n0", 3, 3) + nccl("n0", 4, 4) + nccl("n1", 1, 5) +
      "INSERT INTO cuda_events(id, node, timestamp_ns, duration_ns, pid, tid, api, library) VALUES"
      " (10, 'n0', 90, 5, 1, 1, 'cudaLaunchKernel', 'cudart'),"
      " (11, 'n0', 90, 5, 3, 3, 'cudaLaunchKernel', 'cudart'),"
      " (12, 'n0', 90, 5, 5, 5, 'cudaLaunchKernel', 'cudart');"
      "INSERT INTO gpu_ops(id, node, timestamp_ns, pid, tid, op, state) VALUES"
      " (20, 'n0', 95, 2, 2, 'ALL_REDUCE', 'completed');"
      "INSERT INTO processes(node, pid, cuda_launch_blocking) VALUES ('n0', 3, 1), ('n0', 1, 0);";
  auto r = db->Exec(sql);
  ASSERT_TRUE(r.ok()) << r.error().message();
  auto got = EnqueuingProcesses(*db);
  ASSERT_TRUE(got.ok()) << got.error().message();
  const std::set<std::pair<std::string, int64_t>> want = {{"n0", 1}, {"n0", 2}};
  EXPECT_EQ(*got, want);
  // One node's rows (a bundle) are read per process; the same answer.
  ASSERT_TRUE(db->Exec("DELETE FROM nccl_events WHERE node = 'n1'").ok());
  got = EnqueuingProcesses(*db);
  ASSERT_TRUE(got.ok()) << got.error().message();
  EXPECT_EQ(*got, want);
}

// A gpu_ops row's device times, read alike by the merge and the report: a negative bound is
// none, an end without a start or before it is no end.
TEST(DeviceTimes, ReadAlikeEverywhere) {
  DeviceTimes t = ReadDeviceTimes(100, 150, 7);
  EXPECT_EQ(t.start_ns, 100);
  EXPECT_EQ(t.end_ns, 150);
  EXPECT_EQ(t.clock_error_ns, 7);
  t = ReadDeviceTimes(100, 150, -1);
  EXPECT_FALSE(t.clock_error_ns.has_value());
  EXPECT_EQ(t.end_ns, 150);
  t = ReadDeviceTimes(100, 150, 0);
  EXPECT_EQ(t.clock_error_ns, 0);
  t = ReadDeviceTimes(100, 99, 7);
  EXPECT_EQ(t.start_ns, 100);
  EXPECT_FALSE(t.end_ns.has_value());
  t = ReadDeviceTimes(std::nullopt, 150, 7);
  EXPECT_FALSE(t.start_ns.has_value());
  EXPECT_FALSE(t.end_ns.has_value());
  t = ReadDeviceTimes(100, 100, std::nullopt);
  EXPECT_EQ(t.end_ns, 100);
  EXPECT_FALSE(t.clock_error_ns.has_value());
}

}  // namespace
}  // namespace rs
