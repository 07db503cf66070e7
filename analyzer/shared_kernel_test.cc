// Nodes that ran on one kernel (the same boot_id in their bundles): run-queue waits behind the
// job's own ranks there are not CPU contention, and a host-bound lateness nothing outside the
// job explains names nobody. Nodes with machines of their own are judged as before.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "analyzer/report.h"
#include "analyzer/report_expect.h"
#include "analyzer/report_render.h"
#include "analyzer/report_test_util.h"
#include "analyzer/side_events.h"
#include "rscore/schema.h"
#include "tests/support/synth_bundle.h"

namespace rs::analyzer {
namespace {

TEST(SharedKernelTest, WaitsBehindTheJobAreMarkedOnlyWhereNodesShareAKernel) {
  auto db = rs::Db::Open(":memory:", rs::Db::Mode::kCreate);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(rs::CreateSchema(*db, rs::DbKind::kMerged).ok());
  // n0 and n1 on one kernel, n2 on its own; n2's pid 300 waits behind a process whose pid is
  // n0's rank's (another machine's pid space: a coincidence).
  auto r = db->Exec(R"sql(
    INSERT INTO metadata VALUES ('node.n0.boot_id', 'b1'), ('node.n1.boot_id', 'b1'),
                                ('node.n2.boot_id', 'b2');
    INSERT INTO sched_events(node, timestamp_ns, duration_ns, event, pid, tid, other_pid,
                             other_tid, other_comm)
      VALUES ('n0', 10, 5, 'runq_latency', 100, 100, 200, 200, 'trainer'),
             ('n0', 20, 5, 'runq_latency', 100, 100, 100, 101, 'trainer'),
             ('n0', 30, 5, 'runq_latency', 100, 100, 999, 999, 'burner'),
             ('n2', 10, 5, 'runq_latency', 300, 300, 100, 100, 'trainer');
  )sql");
  ASSERT_TRUE(r.ok()) << r.error().message();
  std::vector<Participant> job(3);
  job[0].node = "n0", job[0].pid = 100;
  job[1].node = "n1", job[1].pid = 200;
  job[2].node = "n2", job[2].pid = 300;
  auto side = LoadSideEvents(*db, job);
  ASSERT_TRUE(side.ok()) << side.error().message();
  EXPECT_EQ(side->kernel_mates.at("n0"), std::vector<std::string>{"n1"});
  EXPECT_EQ(side->kernel_mates.at("n1"), std::vector<std::string>{"n0"});
  EXPECT_FALSE(side->SharesKernel("n2"));
  const auto& n0 = side->runq.at({"n0", 100});
  ASSERT_EQ(n0.size(), 3u);
  EXPECT_TRUE(n0[0].by_co_located_job);   // n1's rank
  EXPECT_TRUE(n0[1].by_co_located_job);   // its own process's other thread
  EXPECT_FALSE(n0[2].by_co_located_job);  // outside the job
  ASSERT_EQ(side->runq.at({"n2", 300}).size(), 1u);
  EXPECT_FALSE(side->runq.at({"n2", 300})[0].by_co_located_job);
}

// A job of 4 nodes x 2 ranks (GPU-style: async calls, device times) where node1 rank 2 enters
// every all-reduce 8 ms late, having waited for a CPU held by `holder` (pid, comm); with
// `shared`, every node's bundle carries the same boot_id.
Report CpuLateReport(int64_t holder_pid, const std::string& holder_comm, bool shared) {
  synth::ClusterSpec spec;
  spec.seed = 7;
  spec.collectives = "async";
  spec.fault = "cpu";
  spec.fault_node = 1;
  std::string sql = "UPDATE sched_events SET other_pid = " + std::to_string(holder_pid) +
                    ", other_tid = " + std::to_string(holder_pid) + ", other_comm = '" +
                    holder_comm + "' WHERE other_comm = 'burner';";
  if (shared) {
    for (int n = 0; n < spec.nodes; ++n) {
      sql += "INSERT INTO metadata VALUES ('node." + synth::NodeName(n) +
             ".boot_id', '6f1c0f9e-3d2a-4c55-9a61-0c2b8e7d4a10');";
    }
  }
  return testing::EditedReport(spec, sql, 50'000);
}

const Straggler* Node1(const Report& r) {
  auto it = std::find_if(r.stragglers.begin(), r.stragglers.end(),
                         [](const Straggler& s) { return s.node == "node1"; });
  return it == r.stragglers.end() ? nullptr : &*it;
}

bool HasEvidence(const Straggler& s, const std::string& kind) {
  return std::any_of(s.evidence.begin(), s.evidence.end(),
                     [&](const Evidence& e) { return e.kind == kind; });
}

TEST(SharedKernelTest, LatenessBehindTheJobsOwnRanksOnASharedKernelNamesNobody) {
  // The CPU went to node0's first rank (pid 10000), which runs on the same kernel.
  Report r = CpuLateReport(10000, "trainer", /*shared=*/true);
  SCOPED_TRACE(RenderText(r));
  EXPECT_NE(r.verdict_kind, "straggler");
  for (const Straggler& s : r.stragglers) EXPECT_FALSE(AtLeastMedium(s.confidence)) << s.node;
  const Straggler* s = Node1(r);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->confidence, Confidence::kUndetermined);
  EXPECT_TRUE(HasEvidence(*s, "shared_kernel"));
  EXPECT_NE(s->summary.find("shares its CPUs with node0, node2, node3"), std::string::npos)
      << s->summary;
}

TEST(SharedKernelTest, AProcessOutsideTheJobIsContentionOnASharedKernelToo) {
  Report r = CpuLateReport(31337, "burner", /*shared=*/true);
  SCOPED_TRACE(RenderText(r));
  const Straggler* s = Node1(r);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(AtLeastMedium(s->confidence));
  EXPECT_EQ(s->cause, "cpu_contention");
  EXPECT_FALSE(HasEvidence(*s, "shared_kernel"));
}

TEST(SharedKernelTest, NodesOfTheirOwnAreJudgedWhateverThePidsSay) {
  // Without boot_ids (or with different ones) a pid of another node's rank names nothing here.
  Report r = CpuLateReport(10000, "trainer", /*shared=*/false);
  SCOPED_TRACE(RenderText(r));
  const Straggler* s = Node1(r);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(AtLeastMedium(s->confidence));
  EXPECT_EQ(s->cause, "cpu_contention");
}

}  // namespace
}  // namespace rs::analyzer
