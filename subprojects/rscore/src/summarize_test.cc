#include "rscore/summarize.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <climits>
#include <optional>
#include <string>

#include "rscore/bundle.h"
#include "rscore/event_id.h"
#include "rscore/output.h"

namespace rs {
namespace {

std::string TmpDir() {
  char tmpl[] = "/tmp/rscore_summarize_test.XXXXXX";
  return mkdtemp(tmpl);
}

// A node with one rank (pid 10, threads 10 and 11) and a competitor (pid 20): each kind of row
// a summary keeps or leaves, with what it is named by.
Result<void> WriteNode(const std::string& path) {
  ASSIGN_OR_RETURN(BundleWriter w, BundleWriter::Create(path));
  const std::string rid = NewRecordingId();
  RETURN_IF_ERROR(w.SetMetadata("recording_id", rid));
  RETURN_IF_ERROR(w.SetMetadata("node", "n1"));
  RETURN_IF_ERROR(w.SetMetadata("start_ns", "100"));
  RETURN_IF_ERROR(w.SetMetadata("end_ns", "100000"));
  EventIdAllocator ids(RecordingKey(rid));
  Db& db = w.db();
  RETURN_IF_ERROR(
      db.Exec("INSERT INTO stacks(id, frames) VALUES (1, 'ncclAllReduce'), (2, 'cudaLaunchKernel'),"
              " (3, 'cudaStreamSynchronize');"
              "INSERT INTO processes(node, pid, comm, rank) VALUES ('n1', 10, 'train', 0),"
              " ('n1', 20, 'burn', NULL)"));
  ASSIGN_OR_RETURN(Statement nccl,
                   db.Prepare("INSERT INTO nccl_events(id, node, timestamp_ns, duration_ns, pid,"
                              " tid, op, rank, seq, stack_id) VALUES (?, 'n1', ?, 5, 10, 10,"
                              " 'ALL_REDUCE', 0, ?, 1)"));
  for (int i = 0; i < 10; ++i) {
    RETURN_IF_ERROR(nccl.Bind(1, ids.Next()).Bind(2, 1000 + i * 100).Bind(3, i).Run());
  }
  ASSIGN_OR_RETURN(Statement sched,
                   db.Prepare("INSERT INTO sched_events(id, node, timestamp_ns, duration_ns,"
                              " event, pid, tid, other_pid, other_comm) VALUES (?, 'n1', ?, 7,"
                              " ?, ?, ?, 20, 'burn')"));
  for (int i = 0; i < 6; ++i) {
    const char* event = i % 2 ? "off_cpu" : "runq_latency";
    const int pid = i < 4 ? 10 : 20;  // rows 0 and 2: the rank's waits, kept
    RETURN_IF_ERROR(sched.Bind(1, ids.Next())
                        .Bind(2, 1000 + i)
                        .Bind(3, event)
                        .Bind(4, pid)
                        .Bind(5, pid + i % 2)
                        .Run());
  }
  ASSIGN_OR_RETURN(Statement cuda,
                   db.Prepare("INSERT INTO cuda_events(id, node, timestamp_ns, duration_ns, pid,"
                              " tid, api, library, state, stack_id) VALUES (?, 'n1', ?, ?, 10, ?,"
                              " ?, 'cudart', ?, ?)"));
  struct Call {
    int64_t ts;
    std::optional<int64_t> dur;
    int tid;
    const char* api;
    const char* state;
    std::optional<int64_t> stack;
  };
  const Call calls[] = {
      {2000, 3, 10, "cudaLaunchKernel", "complete", 2},       // left: a launch
      {2010, 3, 10, "cudaMemcpyAsync", "complete", {}},       // left: asynchronous
      {2020, 9, 10, "cudaStreamSynchronize", "complete", 3},  // kept: may wait
      {2030, 4, 10, "cudaMemcpy", "complete", {}},            // kept: a blocking copy
      {2040, 3, 10, "cudaLaunchKernel", "complete", 2},       // kept: thread 10's latest
      {2005, 3, 11, "cudaStreamWaitEvent", "complete", {}},   // left: asynchronous
      {2015, {}, 11, "cudaLaunchKernel", "in_flight", {}},    // kept: in flight (and latest)
  };
  for (const Call& c : calls) {
    cuda.Bind(1, ids.Next()).Bind(2, c.ts).Bind(3, c.dur).Bind(4, c.tid).Bind(5, c.api);
    RETURN_IF_ERROR(cuda.Bind(6, c.state).Bind(7, c.stack).Run());
  }
  return w.Finalize();
}

int64_t Count(Db& db, const std::string& sql) {
  auto v = db.QueryInt(sql);
  EXPECT_TRUE(v.ok()) << sql;
  return v.ok() ? *v : -1;
}

TEST(Summarize, KeepsWhatTheAnalysesReadAndSaysWhatItLeft) {
  const std::string dir = TmpDir();
  ASSERT_TRUE(WriteNode(dir + "/n1.rsb").ok());
  auto target = CheckOutput(dir + "/n1.rss", false, {dir + "/n1.rsb"});
  ASSERT_TRUE(target.ok()) << target.error().message();
  auto stats = Summarize(dir + "/n1.rsb", *target);
  ASSERT_TRUE(stats.ok()) << stats.error().message();
  EXPECT_EQ(stats->node, "n1");
  EXPECT_GT(stats->summary_bytes, 0);
  auto opened = OpenRankscopeFile(dir + "/n1.rss");
  ASSERT_TRUE(opened.ok()) << opened.error().message();
  Db& db = opened->db();
  EXPECT_EQ(opened->info().db_kind, "bundle");
  EXPECT_EQ(opened->info().node, "n1");
  EXPECT_EQ(Count(db, "SELECT COUNT(*) FROM nccl_events"), 10);
  EXPECT_EQ(Count(db, "SELECT COUNT(*) FROM processes"), 2);
  // The rank's run-queue waits only: no off-CPU interval, no competitor's wait.
  EXPECT_EQ(Count(db, "SELECT COUNT(*) FROM sched_events"), 2);
  EXPECT_EQ(
      Count(db, "SELECT COUNT(*) FROM sched_events WHERE event = 'runq_latency' AND pid = 10"), 2);
  // CUDA: the sync, the blocking copy, thread 10's latest launch, thread 11's call in flight.
  EXPECT_EQ(Count(db, "SELECT COUNT(*) FROM cuda_events"), 4);
  EXPECT_EQ(Count(db, "SELECT COUNT(*) FROM cuda_events WHERE api = 'cudaStreamSynchronize'"), 1);
  EXPECT_EQ(Count(db, "SELECT COUNT(*) FROM cuda_events WHERE api = 'cudaMemcpy'"), 1);
  EXPECT_EQ(Count(db,
                  "SELECT COUNT(*) FROM cuda_events WHERE api = 'cudaLaunchKernel' AND"
                  " timestamp_ns = 2040"),
            1);
  EXPECT_EQ(Count(db, "SELECT COUNT(*) FROM cuda_events WHERE state = 'in_flight' AND tid = 11"),
            1);
  EXPECT_EQ(Count(db,
                  "SELECT COUNT(*) FROM cuda_events WHERE api IN ('cudaMemcpyAsync',"
                  " 'cudaStreamWaitEvent')"),
            0);
  // Stacks: those kept rows point to (all three here: the latest launch keeps stack 2).
  EXPECT_EQ(Count(db, "SELECT COUNT(*) FROM stacks"), 3);
  auto meta = [&](const std::string& key) {
    auto v = db.QueryText("SELECT value FROM metadata WHERE key = '" + key + "'");
    return v.ok() && *v ? **v : std::string("(none)");
  };
  EXPECT_EQ(meta("summary_version"), std::to_string(kSummaryVersion));
  EXPECT_EQ(meta("summary_rows.sched_events"), "2/6");
  EXPECT_EQ(meta("summary_rows.cuda_events"), "4/7");
  EXPECT_EQ(meta("summary_rows.nccl_events"), "(none)");  // nothing left: not listed
  char real[PATH_MAX];
  ASSERT_NE(realpath((dir + "/n1.rsb").c_str(), real), nullptr);
  EXPECT_EQ(meta("summary_of"), real);
  // A summary is no input of another.
  auto again = CheckOutput(dir + "/n1b.rss", false, {dir + "/n1.rss"});
  ASSERT_TRUE(again.ok());
  auto refused = Summarize(dir + "/n1.rss", *again);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("is already a summary (of " + std::string(real)),
            std::string::npos)
      << refused.error().message();
  struct stat st {};
  EXPECT_NE(stat((dir + "/n1b.rss").c_str(), &st), 0) << "a refused summary left a file";
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace rs
