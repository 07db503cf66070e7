// The report's hang verdict on synthetic clusters (node1's local rank 0 stops entering
// collectives): what the advice names, a culprit without any recording, the other findings
// beside a hang, and collectives the recording's end cut off.
#include <gtest/gtest.h>

#include <algorithm>

#include "analyzer/report.h"
#include "analyzer/report_expect.h"
#include "analyzer/report_render.h"
#include "analyzer/report_test_util.h"
#include "rscore/bundle.h"
#include "tests/support/synth_bundle.h"

namespace rs::analyzer {
namespace {

using testing::HangOnNode1;
using testing::NodeLate;
using testing::ReportOf;
using testing::ScratchDir;

constexpr int64_t kBound = 50'000;  // clock error bound of the aligned test clusters

Report EditedReport(const synth::ClusterSpec& spec, const std::string& sql,
                    int64_t bound = kBound) {
  return testing::EditedReport(spec, sql, bound);
}

// The hang advice names the culprit's process, its last completed call, what it did instead and
// where it was called from.
TEST(ReportTest, HangAdviceNamesTheCulpritsPidLastCallAndCaller) {
  const synth::ClusterSpec spec = HangOnNode1();
  Report r =
      EditedReport(spec,
                   "INSERT INTO stacks(id, frames) VALUES (77,"
                   " 'ncclAllReduce+0x10 (libnccl.so.2@ab+0x10)' || char(10) ||"
                   " 'train_step+0x1c (trainer@cd+0x1c)' || char(10) ||"
                   " 'main+0x20 (trainer@cd+0x20)');"
                   "UPDATE nccl_events SET stack_id = 77 WHERE node = 'node1' AND pid = 10100");
  SCOPED_TRACE(RenderText(r));
  ASSERT_TRUE(r.hang.detected);
  ASSERT_FALSE(r.stragglers.empty());
  const Straggler& s = r.stragglers.front();
  EXPECT_EQ(s.cause, "hang");
  EXPECT_EQ(s.pids, std::vector<int64_t>{10100});
  ASSERT_FALSE(s.causes.empty());
  const std::string& advice = s.causes.front().remediation;
  EXPECT_EQ(advice.find("gdb -p PID"), std::string::npos) << advice;
  EXPECT_NE(advice.find("gdb -p 10100"), std::string::npos) << advice;
  EXPECT_NE(advice.find("py-spy dump --pid 10100"), std::string::npos) << advice;
  // Its last completed call is the all-reduce before the one it never entered.
  EXPECT_NE(advice.find("last completed call: ALL_REDUCE seq " + std::to_string(r.hang.seq - 1)),
            std::string::npos)
      << advice;
  EXPECT_NE(advice.find("train_step+0x1c"), std::string::npos) << advice;
  EXPECT_NE(advice.find("no NCCL or CUDA call in flight"), std::string::npos) << advice;
}

TEST(ReportTest, HangCulpritWithoutAnyRecordingIsNamedByRank) {
  ScratchDir dir;
  synth::ClusterSpec spec;
  spec.seed = testing::TestSeed();
  spec.fault = "hang";
  spec.fault_node = 0;
  spec.fault_local_rank = 1;
  auto path = testing::WriteMergedCluster(spec, dir.path(), kBound);
  ASSERT_TRUE(path.ok()) << path.error().message();
  {
    // As if rank 1's process was never traced.
    auto db = rs::Db::Open(*path, rs::Db::Mode::kReadWrite);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->Exec("DELETE FROM nccl_events WHERE rank = 1").ok());
  }
  Report r = ReportOf(*path);
  SCOPED_TRACE(RenderText(r));
  ASSERT_TRUE(r.hang.detected);
  EXPECT_EQ(r.hang.culprit_ranks, std::vector<int64_t>{1});
  ASSERT_EQ(r.hang.culprit_labels.size(), 1u);
  EXPECT_NE(r.hang.culprit_labels[0].find("no recording"), std::string::npos);
  ASSERT_FALSE(r.stragglers.empty());
  EXPECT_EQ(r.stragglers.front().cause, "hang");
}

// Beside a hang every other finding is an observation of low confidence: the verdicts are the
// hang's culprits alone (a CPU-contention finding on a waiting node, capped to low but left
// among the stragglers, failed the acceptance test's hang scenario).
TEST(ReportTest, BesideAHangOtherFindingsAreObservations) {
  // node2's ranks enter every completed all-reduce 6 ms late: a lateness finding of its own.
  Report r = EditedReport(HangOnNode1(), NodeLate("node2", " AND duration_ns IS NOT NULL"));
  SCOPED_TRACE(RenderText(r));
  ASSERT_TRUE(r.hang.detected);
  ASSERT_FALSE(r.stragglers.empty());
  for (const Straggler& s : r.stragglers) EXPECT_EQ(s.cause, "hang") << s.node;
  auto node2 = std::find_if(r.observations.begin(), r.observations.end(),
                            [](const Straggler& s) { return s.node == "node2"; });
  ASSERT_NE(node2, r.observations.end());
  EXPECT_EQ(node2->confidence, Confidence::kLow);
  bool noted = std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
    return n.find("capped at low and listed as observations") != std::string::npos;
  });
  EXPECT_TRUE(noted);
}

TEST(ReportTest, CollectivesCutOffByTheEndOfTheRecordingAreNoHang) {
  synth::ClusterSpec spec;
  spec.seed = testing::TestSeed();
  Report r = EditedReport(spec,
                          "UPDATE nccl_events SET duration_ns = NULL, state = 'in_flight'"
                          " WHERE seq = (SELECT MAX(seq) FROM nccl_events)");
  EXPECT_FALSE(r.hang.detected) << r.hang.summary;
}

}  // namespace
}  // namespace rs::analyzer

namespace rs::analyzer {
namespace {

// A recorder started after the job created its communicators sees NCCL calls without a
// communicator id (rankscope-record(8)): nothing can be matched across ranks. The report says
// it cannot tell, never "no collectives" or "no hang".
TEST(ReportTest, CommunicatorsCreatedBeforeRecordingLeaveTheVerdictUndetermined) {
  synth::ClusterSpec spec = HangOnNode1();
  Report r = EditedReport(spec,
                          "UPDATE nccl_events SET comm_id_hash = NULL, seq = NULL"
                          " WHERE op NOT LIKE 'COMM%'");
  SCOPED_TRACE(RenderText(r));
  EXPECT_EQ(r.nccl_calls, 0);
  EXPECT_GT(r.unidentified_calls, 0);
  EXPECT_EQ(r.unidentified_nodes, spec.nodes);
  EXPECT_EQ(r.verdict_kind, "undetermined");
  EXPECT_EQ(r.verdict.rfind("UNDETERMINED (communicators not identified)", 0), 0u) << r.verdict;
  EXPECT_FALSE(r.hang.detected);
  EXPECT_EQ(r.hang.kind, "undetermined");
  EXPECT_EQ(r.hang.summary.rfind("undetermined:", 0), 0u) << r.hang.summary;
  EXPECT_TRUE(r.stragglers.empty());
  bool said = false;
  for (const std::string& n : r.notes) {
    said |= n.find("created before the recorder started") != std::string::npos;
    EXPECT_EQ(n.find("check that the NCCL probe attached"), std::string::npos) << n;
  }
  EXPECT_TRUE(said);
  EXPECT_NE(RenderJson(r).find("\"unidentified_calls\":" + std::to_string(r.unidentified_calls)),
            std::string::npos);
}

// Some communicators identified: their verdict stands, and a "no hang" says what it covers.
TEST(ReportTest, ANoHangCoversOnlyTheIdentifiedCommunicators) {
  synth::ClusterSpec spec;
  spec.seed = testing::TestSeed();
  spec.fault = "none";
  Report r = EditedReport(spec,
                          "UPDATE nccl_events SET comm_id_hash = NULL, seq = NULL"
                          " WHERE op NOT LIKE 'COMM%' AND id IN (SELECT id FROM nccl_events"
                          " WHERE op NOT LIKE 'COMM%' ORDER BY timestamp_ns LIMIT 40)");
  SCOPED_TRACE(RenderText(r));
  EXPECT_EQ(r.unidentified_calls, 40);
  EXPECT_GT(r.nccl_calls, 0);
  EXPECT_FALSE(r.hang.detected);
  EXPECT_NE(r.hang.summary.find("among the collectives that could be matched across ranks; 40 NCCL "
                                "call(s) of communicators created before recording started were "
                                "not seen"),
            std::string::npos)
      << r.hang.summary;
  EXPECT_NE(r.verdict_kind, "undetermined");
}

}  // namespace
}  // namespace rs::analyzer
