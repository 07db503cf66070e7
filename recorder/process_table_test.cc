#include "recorder/process_table.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "recorder/test_db.h"

namespace rs::rec {
namespace {

namespace fs = std::filesystem;
using testing::TestDb;

// A fake /proc with processes described by comm, exe, netns inode and environment.
class FakeProc {
 public:
  FakeProc() {
    char tmpl[] = "/tmp/rs_fakeproc.XXXXXX";
    root_ = mkdtemp(tmpl);
  }
  ~FakeProc() { fs::remove_all(root_); }
  void Add(int pid, const std::string& comm, uint64_t netns, const std::string& environ) {
    fs::path d = fs::path(root_) / std::to_string(pid);
    fs::create_directories(d / "ns");
    std::ofstream(d / "comm") << comm << "\n";
    std::ofstream(d / "environ", std::ios::binary) << environ;
    fs::create_symlink("/usr/bin/" + comm, d / "exe");
    fs::create_symlink("net:[" + std::to_string(netns) + "]", d / "ns" / "net");
  }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

std::string Env(std::initializer_list<std::string> kvs) {
  std::string out;
  for (const auto& kv : kvs) out += kv + std::string(1, '\0');
  return out;
}

TEST(ProcessTable, TraceReadsProcOnceAndStoresOnlyRankVariables) {
  FakeProc proc;
  proc.Add(41, "trainer", 4026532000,
           Env({"PATH=/bin", "RANK=3", "LOCAL_RANK=1", "WORLD_SIZE=8", "SECRET_TOKEN=hunter2",
                "SLURM_JOB_ID=991", "CUDA_LAUNCH_BLOCKING=1"}));
  TestDb t;
  ProcessTable table(&t.db, "n1", proc.root(), 0, [] { return int64_t{123}; });
  auto r = table.Trace(41);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(*r);
  EXPECT_TRUE(table.IsTraced(41));
  EXPECT_FALSE(table.IsTraced(42));
  auto again = table.Trace(41);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
  EXPECT_EQ(table.TakeNewlyTraced(), std::vector<int>{41});
  EXPECT_TRUE(table.TakeNewlyTraced().empty());

  EXPECT_EQ(t.Int("SELECT COUNT(*) FROM processes"), 1);
  EXPECT_EQ(t.Text("SELECT comm || ' ' || exe FROM processes"), "trainer /usr/bin/trainer");
  EXPECT_EQ(t.Int("SELECT netns FROM processes"), 4026532000LL);
  EXPECT_EQ(t.Int("SELECT first_seen_ns FROM processes"), 123);
  EXPECT_EQ(t.Text("SELECT env_rank || ',' || env_local_rank || ',' || env_world_size || ',' || "
                   "slurm_job_id FROM processes"),
            "3,1,8,991");
  EXPECT_EQ(t.Int("SELECT rank FROM processes"), 3);
  EXPECT_EQ(t.Int("SELECT cuda_launch_blocking FROM processes"), 1);
  EXPECT_EQ(t.Int("SELECT COUNT(*) FROM processes WHERE rank_conflict IS NULL"), 1);
  // Nothing but the rank variables reaches the bundle.
  EXPECT_EQ(t.Int("SELECT COUNT(*) FROM processes WHERE comm || exe || "
                  "IFNULL(torchelastic_run_id, '') || slurm_job_id LIKE '%hunter2%'"),
            0);
}

TEST(ProcessTable, TraceErrors) {
  FakeProc proc;
  proc.Add(50, "other", 111, "");
  ProcessTable table(nullptr, "n1", proc.root(), /*scope_netns=*/222, nullptr);
  auto missing = table.Trace(51);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("pid 51: no such process"), std::string::npos);
  auto other_ns = table.Trace(50);
  ASSERT_FALSE(other_ns.ok());
  EXPECT_NE(other_ns.error().message().find("another network namespace"), std::string::npos);
  EXPECT_FALSE(table.IsTraced(50));
}

TEST(ProcessTable, NcclRankAgreeingWithEnvironment) {
  FakeProc proc;
  proc.Add(60, "trainer", 1, Env({"RANK=2", "WORLD_SIZE=4"}));
  TestDb t;
  ProcessTable table(&t.db, "n1", proc.root(), 0, nullptr);
  ASSERT_TRUE(table.SetNcclRank(60, 2, 4).ok());  // traces on first sight
  EXPECT_TRUE(table.IsTraced(60));
  EXPECT_EQ(t.Text("SELECT nccl_rank || '/' || nccl_nranks || ' rank ' || rank FROM processes"),
            "2/4 rank 2");
  EXPECT_EQ(t.Int("SELECT COUNT(*) FROM processes WHERE rank_conflict IS NULL"), 1);
}

TEST(ProcessTable, RankConflictIsStoredNeverResolved) {
  FakeProc proc;
  proc.Add(70, "trainer", 1, Env({"RANK=5", "WORLD_SIZE=8"}));
  TestDb t;
  ProcessTable table(&t.db, "n1", proc.root(), 0, nullptr);
  ASSERT_TRUE(table.Trace(70).ok());
  ASSERT_TRUE(table.SetNcclRank(70, 1, 8).ok());
  EXPECT_EQ(t.Int("SELECT COUNT(*) FROM processes WHERE rank IS NULL"), 1);
  EXPECT_EQ(t.Text("SELECT rank_conflict FROM processes"),
            "environment RANK=5 but ncclCommInitRank rank=1");
  EXPECT_EQ(t.Int("SELECT nccl_rank FROM processes"), 1);
  EXPECT_EQ(t.Int("SELECT env_rank FROM processes"), 5);
  // A later communicator does not overwrite the first.
  ASSERT_TRUE(table.SetNcclRank(70, 5, 8).ok());
  EXPECT_EQ(t.Int("SELECT nccl_rank FROM processes"), 1);
}

TEST(ProcessTable, NcclProfilerApiOfThePluginTracesTheProcessAndKeepsTheRest) {
  FakeProc proc;
  proc.Add(75, "trainer", 1, Env({"RANK=2"}));
  proc.Add(76, "other", 1, Env({}));
  TestDb t;
  ProcessTable table(&t.db, "n1", proc.root(), 0, nullptr);
  ASSERT_TRUE(table.SetNcclRank(75, 2, 4).ok());
  ASSERT_TRUE(table.SetNcclProfilerApi(75, 5).ok());
  EXPECT_EQ(t.Text("SELECT nccl_profiler_api || ' ' || nccl_rank || ' ' || rank FROM processes"
                   " WHERE pid = 75"),
            "5 2 2");
  ASSERT_TRUE(table.SetNcclProfilerApi(76, 4).ok());  // traces on first sight
  EXPECT_TRUE(table.IsTraced(76));
  EXPECT_EQ(t.Int("SELECT nccl_profiler_api FROM processes WHERE pid = 76"), 4);
  EXPECT_EQ(t.Int("SELECT COUNT(*) FROM processes WHERE nccl_profiler_api IS NULL"), 0);
  EXPECT_FALSE(table.SetNcclProfilerApi(77, 5).ok());  // no such process
}

TEST(ProcessTable, NcclRankWithoutEnvironmentAndSlurmFallback) {
  FakeProc proc;
  proc.Add(80, "a", 1, Env({"PATH=/bin"}));
  proc.Add(81, "b", 1, Env({"SLURM_PROCID=4"}));
  ProcessTable table(nullptr, "n1", proc.root(), 0, nullptr);
  ASSERT_TRUE(table.SetNcclRank(80, 7, 16).ok());
  EXPECT_EQ(table.Find(80)->rank.value_or(-1), 7);
  ASSERT_TRUE(table.SetNcclRank(81, 3, 16).ok());
  EXPECT_FALSE(table.Find(81)->rank.has_value());
  EXPECT_EQ(table.Find(81)->rank_conflict,
            "environment SLURM_PROCID=4 but ncclCommInitRank rank=3");
}

TEST(ReadNetnsInode, ParsesLinkText) {
  FakeProc proc;
  proc.Add(90, "x", 4026531840ULL, "");
  EXPECT_EQ(ReadNetnsInode(proc.root(), 90).value_or(0), 4026531840ULL);
  EXPECT_FALSE(ReadNetnsInode(proc.root(), 91).has_value());
  EXPECT_TRUE(ReadNetnsInode("/proc", getpid()).has_value());
}

}  // namespace
}  // namespace rs::rec
