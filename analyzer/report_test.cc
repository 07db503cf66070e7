// The report on synthetic clusters: every fault kind on a node chosen at random (the seed is
// printed; rerun with RANKSCOPE_TEST_SEED=N), no fault, clocks skewed inside the bound, a single
// bundle, and the data gaps real recordings have.
#include "analyzer/report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "analyzer/report_expect.h"
#include "analyzer/report_render.h"
#include "analyzer/report_test_util.h"
#include "rscore/bundle.h"
#include "tests/support/synth_bundle.h"

namespace rs::analyzer {
namespace {

using testing::ScratchDir;

constexpr int64_t kBound = 50'000;  // clock error bound of the aligned test clusters

using testing::NodeLate;
using testing::ReportOf;

Report MergedReport(const synth::ClusterSpec& spec, int64_t bound = kBound) {
  ScratchDir dir;
  auto path = testing::WriteMergedCluster(spec, dir.path(), bound);
  EXPECT_TRUE(path.ok()) << path.error().message();
  return ReportOf(*path);
}

// The report of a synthetic cluster after `sql` changed its merged database.
Report EditedReport(const synth::ClusterSpec& spec, const std::string& sql,
                    int64_t bound = kBound) {
  return testing::EditedReport(spec, sql, bound);
}

// Both ranks of node1 enter every all-reduce 6 ms late and leave with everyone, who waits for
// them in the blocking call (nobody leaves before the last rank entered).
constexpr const char* kNode1Late =
    "UPDATE nccl_events SET duration_ns = duration_ns + 6000000 WHERE op = 'ALL_REDUCE';"
    "UPDATE nccl_events SET timestamp_ns = timestamp_ns + 6000000,"
    " duration_ns = duration_ns - 6000000 WHERE node = 'node1' AND op = 'ALL_REDUCE'";

struct FaultCase {
  const char* fault;
  const char* cause;
};

class FaultTest : public ::testing::TestWithParam<FaultCase> {};

TEST_P(FaultTest, TopStragglerIsTheFaultyNodeWithTheInjectedCause) {
  uint64_t seed = testing::TestSeed();
  std::mt19937_64 rng(seed);
  synth::ClusterSpec spec;
  spec.seed = seed;
  spec.fault = GetParam().fault;
  spec.fault_node = static_cast<int>(rng() % spec.nodes);
  spec.fault_local_rank = static_cast<int>(rng() % spec.ranks_per_node);
  std::cout << "seed " << seed << ": fault " << spec.fault << " on node " << spec.fault_node
            << " local rank " << spec.fault_local_rank << "\n";
  Report r = MergedReport(spec);
  SCOPED_TRACE(RenderText(r));
  ASSERT_FALSE(r.stragglers.empty());
  const Straggler& top = r.stragglers.front();
  EXPECT_EQ(top.node, synth::NodeName(spec.fault_node));
  EXPECT_EQ(top.cause, GetParam().cause);
  EXPECT_EQ(top.confidence, Confidence::kHigh);
  // Every finding but a hang's says what its lateness was read on (a resource finding: the
  // recording's arrivals, host entries here).
  for (const auto* list : {&r.stragglers, &r.observations}) {
    for (const Straggler& s : *list) {
      if (s.cause != "hang") {
        EXPECT_FALSE(s.arrival_basis.empty()) << s.node << " " << s.cause;
      }
    }
  }
  int64_t global_rank = spec.fault_node * spec.ranks_per_node + spec.fault_local_rank;
  if (spec.fault != "loss") {
    ASSERT_TRUE(top.rank.has_value());
    EXPECT_EQ(*top.rank, global_rank);
  }
  EXPECT_EQ(r.hang.detected, spec.fault == "hang");
  if (spec.fault == "hang") {
    EXPECT_EQ(r.hang.culprit_nodes, std::vector<std::string>{synth::NodeName(spec.fault_node)});
    EXPECT_EQ(r.hang.culprit_ranks, std::vector<int64_t>{global_rank});
    EXPECT_EQ(r.hang.waiting_ranks.size(),
              static_cast<size_t>(spec.nodes * spec.ranks_per_node - 1));
    EXPECT_EQ(r.verdict.rfind("HANG", 0), 0u) << r.verdict;
  } else {
    EXPECT_EQ(r.verdict.rfind("STRAGGLER", 0), 0u) << r.verdict;
  }
  // Counts reconcile with what the generator wrote.
  synth::RowCounts rows = synth::ExpectedRows(spec);
  EXPECT_EQ(r.nccl_calls, rows.nccl - spec.nodes * spec.ranks_per_node);  // minus COMM_INIT
  EXPECT_EQ(r.ranks, spec.nodes * spec.ranks_per_node);
}

INSTANTIATE_TEST_SUITE_P(Faults, FaultTest,
                         ::testing::Values(FaultCase{"loss", "network"},
                                           FaultCase{"cpu", "cpu_contention"},
                                           FaultCase{"io", "io"}, FaultCase{"slow", "compute"},
                                           FaultCase{"hang", "hang"}),
                         [](const auto& info) { return std::string(info.param.fault); });

TEST(ReportTest, NoFaultClaimsNoConfidentStraggler) {
  uint64_t seed = testing::TestSeed();
  for (uint64_t k = 0; k < 3; ++k) {
    synth::ClusterSpec spec;
    spec.seed = seed + k;
    std::cout << "seed " << spec.seed << "\n";
    Report r = MergedReport(spec);
    SCOPED_TRACE(RenderText(r));
    // No straggler at all: a hint of low confidence is an observation, never stragglers[0].
    for (const Straggler& s : r.stragglers) ADD_FAILURE() << s.summary;
    for (const Straggler& s : r.observations) EXPECT_FALSE(AtLeastMedium(s.confidence));
    EXPECT_FALSE(r.hang.detected);
    EXPECT_EQ(r.verdict.rfind("NO STRAGGLER", 0), 0u) << r.verdict;
    EXPECT_EQ(r.verdict_kind, "no_straggler");
    EXPECT_EQ(r.verdict.find("hint"), std::string::npos) << r.verdict;
    EXPECT_GT(r.collectives, 0);
  }
}

TEST(ReportTest, SkewInsideTheClockBoundIsUndetermined) {
  uint64_t seed = testing::TestSeed();
  synth::ClusterSpec spec;
  spec.seed = seed;
  int skewed = static_cast<int>(seed % spec.nodes);
  std::cout << "seed " << seed << ": node " << skewed << " runs 3 ms ahead\n";
  spec.offset_ns.assign(spec.nodes, 0);
  spec.offset_ns[skewed] = 3'000'000;
  Report r = MergedReport(spec, /*bound=*/5'000'000);
  SCOPED_TRACE(RenderText(r));
  ASSERT_FALSE(r.stragglers.empty());
  const Straggler& top = r.stragglers.front();
  EXPECT_EQ(top.node, synth::NodeName(skewed));
  EXPECT_EQ(top.confidence, Confidence::kUndetermined);
  EXPECT_FALSE(top.ordering_determined);
  EXPECT_NE(top.summary.find("undetermined"), std::string::npos);
  EXPECT_EQ(r.verdict.rfind("UNDETERMINED", 0), 0u) << r.verdict;
  // The same skew with a tight bound is a (wrong-clock) straggler: the bound decides.
  Report tight = MergedReport(spec, /*bound=*/100'000);
  ASSERT_FALSE(tight.stragglers.empty());
  EXPECT_TRUE(tight.stragglers.front().ordering_determined);
}

// node1's ranks enter every all-reduce from seq `from` on 6 ms late.
std::string Node1LateFrom(int from) {
  return NodeLate("node1", " AND seq > " + std::to_string(from));
}

// node1 late from the 11th all-reduce on (of 40): the verdict says when.
TEST(ReportTest, TheVerdictSaysWhenItsNodeBecameLate) {
  synth::ClusterSpec spec;
  spec.seed = testing::TestSeed();
  std::cout << "seed " << spec.seed << "\n";
  Report r = EditedReport(spec, Node1LateFrom(10));
  SCOPED_TRACE(RenderText(r));
  ASSERT_FALSE(r.stragglers.empty());
  const Straggler& s = r.stragglers.front();
  ASSERT_EQ(s.node, "node1");
  auto onset = std::find_if(s.evidence.begin(), s.evidence.end(),
                            [](const Evidence& e) { return e.kind == "onset"; });
  ASSERT_NE(onset, s.evidence.end());
  auto node1 = std::find_if(r.per_node.begin(), r.per_node.end(),
                            [](const ArrivalStats& a) { return a.node == "node1"; });
  ASSERT_NE(node1, r.per_node.end());
  ASSERT_TRUE(node1->paired.onset);
  EXPECT_NEAR(static_cast<double>(node1->paired.onset->before), 10, 1);
  EXPECT_GT(node1->paired.onset->after_ns - node1->paired.onset->before_ns, 5'000'000);
  EXPECT_NE(s.summary.find("later from +"), std::string::npos) << s.summary;
  // A node late alike from the start has none.
  Report steady = EditedReport(spec, kNode1Late);
  for (const ArrivalStats& a : steady.per_node) EXPECT_FALSE(a.paired.onset) << a.node;
}

// Late only in the last half: the whole recording's medians barely move (no verdict of medium
// confidence names node1); the finding on node1, or where there is none a note, says from when
// it is late and points at that window.
TEST(ReportTest, ALateLastHalfIsPointedAt) {
  synth::ClusterSpec spec;
  spec.seed = testing::TestSeed();
  std::cout << "seed " << spec.seed << "\n";
  Report r = EditedReport(spec, Node1LateFrom(20));
  SCOPED_TRACE(RenderText(r));
  bool noted = false;
  for (const std::string& n : r.notes) {
    noted = noted || (n.rfind("node1 became later than the other nodes from +", 0) == 0 &&
                      n.find("'report --from +") != std::string::npos);
  }
  for (const Straggler& s : r.stragglers) {
    if (s.node != "node1") continue;
    noted = noted || std::any_of(s.evidence.begin(), s.evidence.end(), [](const Evidence& e) {
              return e.kind == "onset" && e.summary.find("'report --from +") != std::string::npos;
            });
  }
  EXPECT_TRUE(noted);
}

TEST(ReportTest, AWholeNodeLateAlikeIsANodeLevelStraggler) {
  synth::ClusterSpec spec;
  spec.seed = testing::TestSeed();
  std::cout << "seed " << spec.seed << "\n";
  Report r = EditedReport(spec, kNode1Late);
  SCOPED_TRACE(RenderText(r));
  ASSERT_FALSE(r.stragglers.empty());
  const Straggler& top = r.stragglers.front();
  EXPECT_EQ(top.node, "node1");
  EXPECT_FALSE(top.rank.has_value());
  std::vector<int64_t> ranks = top.ranks;
  std::sort(ranks.begin(), ranks.end());
  EXPECT_EQ(ranks, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(top.confidence, Confidence::kHigh);
  EXPECT_EQ(top.cause, "compute");
}

TEST(ReportTest, SingleBundleComparesRanksOnTheNode) {
  ScratchDir dir;
  synth::ClusterSpec spec;
  spec.seed = testing::TestSeed();
  spec.fault = "cpu";
  spec.fault_node = 2;
  spec.fault_local_rank = 1;
  auto paths = synth::WriteClusterBundles(spec, dir.path());
  ASSERT_TRUE(paths.ok()) << paths.error().message();
  Report r = ReportOf((*paths)[2]);
  SCOPED_TRACE(RenderText(r));
  // Retransmits of one node alone compare with nothing: never a confident network verdict.
  spec.fault = "loss";
  ScratchDir loss_dir;
  auto loss = synth::WriteClusterBundles(spec, loss_dir.path());
  ASSERT_TRUE(loss.ok());
  Report one = ReportOf((*loss)[2]);
  for (const Straggler& s : one.stragglers) EXPECT_EQ(s.confidence, Confidence::kLow) << s.summary;
  EXPECT_EQ(r.db_kind, "bundle");
  EXPECT_EQ(r.nodes, std::vector<std::string>{"node2"});
  ASSERT_FALSE(r.stragglers.empty());
  EXPECT_EQ(r.stragglers.front().rank, std::optional<int64_t>(5));
  EXPECT_EQ(r.stragglers.front().cause, "cpu_contention");
  ASSERT_EQ(r.clock.size(), 1u);
  EXPECT_EQ(r.clock[0].method, "as_recorded");
  EXPECT_EQ(r.clock[0].error_bound_ns, 16'000'000 + 400);  // maxerror_us + read span
  bool noted = false;
  for (const auto& n : r.notes) noted |= n.find("one node only") != std::string::npos;
  EXPECT_TRUE(noted);
  // The competing process is named in the remediation.
  EXPECT_NE(r.stragglers.front().causes.front().remediation.find("burner"), std::string::npos);
}

// Retransmits on node3's connections while node1 is the CPU-starved straggler: the repairs fall
// in the collectives that completed fastest, so they slowed nothing and node3 was not late.
TEST(ReportTest, RetransmitsThatSlowedNothingAreAnObservation) {
  synth::ClusterSpec spec;
  spec.seed = testing::TestSeed();
  spec.fault = "cpu";
  spec.fault_node = 1;
  std::cout << "seed " << spec.seed << "\n";
  // One repair (state Loss) from node0 to node3 just after the last arrival of each of the
  // 14 all-reduces with the shortest time from last arrival to completion.
  Report r = EditedReport(
      spec,
      "INSERT INTO tcp_events(id, node, timestamp_ns, event, family, saddr, daddr,"
      " sport, dport, seq, segments, state, netns, ca_state, err)"
      " SELECT (SELECT MAX(id) FROM tcp_events) + 1000 + ROW_NUMBER() OVER (), 'node0',"
      " last_arrival + 1000, 'tcp_retransmit_skb', 'ipv4', '10.77.0.1', '10.77.0.4',"
      " 40000, 29500, seq * 7919, 1, 'ESTABLISHED', 4026531840, 'Loss', 0 FROM"
      " (SELECT seq, MAX(timestamp_ns) AS last_arrival,"
      "  MAX(timestamp_ns + duration_ns) - MAX(timestamp_ns) AS transfer"
      "  FROM nccl_events WHERE op = 'ALL_REDUCE' GROUP BY seq"
      "  ORDER BY transfer LIMIT 14)");
  std::string text = RenderText(r);
  SCOPED_TRACE(text);
  ASSERT_FALSE(r.stragglers.empty());
  EXPECT_EQ(r.stragglers.front().node, "node1");
  EXPECT_EQ(r.stragglers.front().cause, "cpu_contention");
  for (const Straggler& s : r.stragglers) EXPECT_NE(s.node, "node3") << s.summary;
  auto net = std::find_if(r.observations.begin(), r.observations.end(),
                          [](const Straggler& s) { return s.node == "node3"; });
  ASSERT_NE(net, r.observations.end());
  EXPECT_EQ(net->cause, "network");
  // Its numbers show the collectives with repairs were not slower: no slowdown is claimed.
  EXPECT_EQ(net->summary.find("slowed"), std::string::npos) << net->summary;
  for (const Cause& c : net->causes) {
    EXPECT_EQ(c.summary.find("slowed"), std::string::npos) << c.summary;
  }
  // Rendered apart from the verdicts, in every format.
  size_t observations = text.find("observations");
  ASSERT_NE(observations, std::string::npos);
  EXPECT_GT(text.find("node3: cause network"), observations);
  // Its shape reads beside its cause as a shape, not the cause twice.
  EXPECT_EQ(text.find("cause network, network,"), std::string::npos);
  if (net->shape == "network") {
    EXPECT_NE(text.find("cause network, network-bound,"), std::string::npos);
  }
  std::string md = RenderMarkdown(r);
  size_t md_obs = md.find("## Observations");
  ASSERT_NE(md_obs, std::string::npos);
  EXPECT_GT(md.find("### node3"), md_obs);
  std::string html = RenderHtml(r);
  size_t html_obs = html.find("<h2>Observations</h2>");
  ASSERT_NE(html_obs, std::string::npos);
  EXPECT_GT(html.find("<h3>node3"), html_obs);
  std::string json = RenderJson(r);
  size_t json_obs = json.find("\"observations\"");
  ASSERT_NE(json_obs, std::string::npos);
  EXPECT_GT(json.find("\"node\":\"node3\""), json_obs);
}

// A whole node late inside a wide clock bound: the lateness decides nothing, but the slow
// disk reads of that node's ranks are measured on its own clock. The block-latency finding is
// the verdict, once, and the clock evidence of the undecided ordering stays with it.
TEST(ReportTest, ClockFreeResourceFindingReplacesAnUndecidedOrdering) {
  synth::ClusterSpec spec;
  spec.seed = testing::TestSeed();
  std::cout << "seed " << spec.seed << "\n";
  // node1's ranks late as in kNode1Late, each after a 5 ms read; the others' reads take 200 us.
  Report r = EditedReport(spec,
                          std::string(kNode1Late) +
                              ";INSERT INTO block_events(node, timestamp_ns, duration_ns, dev, op,"
                              " bytes, pid, local_timestamp_ns)"
                              " SELECT node, timestamp_ns - 5500000, "
                              " CASE node WHEN 'node1' THEN 5000000 ELSE 200000 END,"
                              " '7:0', 'read', 1048576, pid, timestamp_ns - 5500000"
                              " FROM nccl_events WHERE op = 'ALL_REDUCE'",
                          /*bound=*/1'000'000'000);
  SCOPED_TRACE(RenderText(r));
  ASSERT_FALSE(r.stragglers.empty());
  const Straggler& top = r.stragglers.front();
  EXPECT_EQ(top.node, "node1");
  EXPECT_EQ(top.cause, "io");
  int on_node = 0;
  for (const Straggler& s : r.stragglers) on_node += s.node == top.node;
  EXPECT_EQ(on_node, 1);
  EXPECT_TRUE(std::any_of(top.evidence.begin(), top.evidence.end(),
                          [](const Evidence& e) { return e.kind == "clock"; }));
  // Its lateness was read from host entries across nodes, which the clocks left undecided.
  EXPECT_EQ(top.confidence, Confidence::kUndetermined);
  EXPECT_EQ(r.verdict_kind, "undetermined");
  EXPECT_EQ(r.verdict.rfind("UNDETERMINED: node1", 0), 0u) << r.verdict;
  EXPECT_NE(top.summary.find("inside the cross-node clock error bound"), std::string::npos)
      << top.summary;
}

// The meaning of confidence and of a cause's share is stated once in every human format.
TEST(ReportTest, ConfidenceAndShareAreExplainedOnce) {
  ScratchDir dir;
  synth::ClusterSpec spec;
  spec.seed = testing::TestSeed();
  spec.fault = "io";
  auto path = testing::WriteMergedCluster(spec, dir.path(), kBound);
  ASSERT_TRUE(path.ok()) << path.error().message();
  Report r = ReportOf(*path);
  for (ReportFormat f : {ReportFormat::kText, ReportFormat::kMarkdown, ReportFormat::kHtml}) {
    std::string out = Render(r, f);
    size_t at = out.find("Confidence says");
    ASSERT_NE(at, std::string::npos) << out;
    EXPECT_EQ(out.find("Confidence says", at + 1), std::string::npos);
    EXPECT_NE(out.find("share (its score"), std::string::npos) << out;
  }
}

// A node-level verdict names the node's ranks and processes, its clock bound and the processes
// that took its CPUs.
TEST(ReportTest, NodeLevelVerdictNamesRanksPidsClockAndCompetitors) {
  ScratchDir dir;
  synth::ClusterSpec spec;
  spec.seed = testing::TestSeed();
  std::cout << "seed " << spec.seed << "\n";
  auto path = testing::WriteMergedCluster(spec, dir.path(), kBound);
  ASSERT_TRUE(path.ok()) << path.error().message();
  {
    // Both ranks of node2 enter every all-reduce 6 ms late (everyone waits for them in the
    // blocking call), having waited 4 ms of it for a CPU held by one of two 'burner' processes;
    // node2's clock is aligned within 4.34 ms, the others within 50 us.
    auto db = rs::Db::Open(*path, rs::Db::Mode::kReadWrite);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->Exec("UPDATE nccl_events SET duration_ns = duration_ns + 6000000"
                         " WHERE op = 'ALL_REDUCE';"
                         "UPDATE nccl_events SET timestamp_ns = timestamp_ns + 6000000,"
                         " duration_ns = duration_ns - 6000000"
                         " WHERE node = 'node2' AND op = 'ALL_REDUCE';"
                         "INSERT INTO sched_events(id, node, timestamp_ns, duration_ns, event, pid,"
                         " tid, cpu, other_pid, other_tid, other_comm)"
                         " SELECT (SELECT MAX(id) FROM sched_events) + ROW_NUMBER() OVER (),"
                         " n.node, n.timestamp_ns - 5000000, 4000000, 'runq_latency', n.pid,"
                         " n.tid, 0, 31337 + (n.pid % 2), 31337 + (n.pid % 2), 'burner'"
                         " FROM nccl_events n WHERE n.node = 'node2' AND n.op = 'ALL_REDUCE';"
                         "UPDATE clock_alignment SET error_bound_ns = 4340000"
                         " WHERE node = 'node2'")
                    .ok());
  }
  Report r = ReportOf(*path);
  SCOPED_TRACE(RenderText(r));
  auto it = std::find_if(r.stragglers.begin(), r.stragglers.end(), [](const Straggler& s) {
    return s.node == "node2" && !s.rank.has_value();
  });
  ASSERT_NE(it, r.stragglers.end());
  EXPECT_EQ(it->cause, "cpu_contention");
  std::vector<int64_t> ranks = it->ranks, pids = it->pids;
  std::sort(ranks.begin(), ranks.end());
  std::sort(pids.begin(), pids.end());
  EXPECT_EQ(ranks, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(pids, (std::vector<int64_t>{10200, 10201}));
  // Compared with the other nodes across node2's clock bound.
  EXPECT_GE(it->clock_bound_ns, 4'340'000);
  // The two burners first (the node's kernel workers took far less).
  ASSERT_GE(it->competitors.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const Competitor& c = it->competitors[i];
    EXPECT_EQ(c.comm, "burner");
    EXPECT_TRUE(c.pid == 31337 || c.pid == 31338) << c.pid;
    // 4 ms before each of its rank's all-reduces.
    EXPECT_GE(c.ran_ns, 4'000'000 * 30);
  }
  EXPECT_NE(it->competitors[0].pid, it->competitors[1].pid);
  std::string json = RenderJson(r);
  EXPECT_NE(json.find("\"competitors\":[{\"comm\":\"burner\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"pids\":["), std::string::npos);
}

TEST(ReportTest, NoCollectivesIsSaidClearly) {
  ScratchDir dir;
  std::string path = dir.path() + "/empty.rsb";
  {
    auto w = rs::BundleWriter::Create(path, 1);
    ASSERT_TRUE(w.ok()) << w.error().message();
    for (auto [k, v] : {std::pair{"recording_id", "r1"},
                        {"node", "lonely"},
                        {"start_ns", "1000"},
                        {"end_ns", "2000"}}) {
      ASSERT_TRUE(w->SetMetadata(k, v).ok());
    }
    ASSERT_TRUE(w->Finalize().ok());
  }
  Report r = ReportOf(path);
  EXPECT_EQ(r.verdict.rfind("NO COLLECTIVES", 0), 0u) << r.verdict;
  EXPECT_TRUE(r.stragglers.empty());
  EXPECT_FALSE(r.hang.detected);
  EXPECT_FALSE(r.notes.empty());
  for (ReportFormat f :
       {ReportFormat::kText, ReportFormat::kJson, ReportFormat::kMarkdown, ReportFormat::kHtml}) {
    EXPECT_FALSE(Render(r, f).empty());
  }
}

TEST(ReportTest, NullRanksAreNamedByPid) {
  ScratchDir dir;
  synth::ClusterSpec spec;
  spec.seed = testing::TestSeed();
  spec.fault = "slow";
  spec.fault_node = 3;
  auto path = testing::WriteMergedCluster(spec, dir.path(), kBound);
  ASSERT_TRUE(path.ok()) << path.error().message();
  {
    auto db = rs::Db::Open(*path, rs::Db::Mode::kReadWrite);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(
        db->Exec("UPDATE nccl_events SET rank = NULL; UPDATE processes SET rank = NULL").ok());
  }
  {
    auto db = rs::Db::Open(*path, rs::Db::Mode::kReadWrite);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->Exec("INSERT INTO merge_inputs(file, original_node, status, reason)"
                         " VALUES ('node9.rsb', 'node9', 'skipped', 'zstd frame truncated')")
                    .ok());
  }
  Report r = ReportOf(*path);
  SCOPED_TRACE(RenderText(r));
  bool noted = false;
  for (const auto& n : r.notes) noted |= n.find("node9.rsb") != std::string::npos;
  EXPECT_TRUE(noted);
  ASSERT_FALSE(r.stragglers.empty());
  EXPECT_EQ(r.stragglers.front().node, "node3");
  EXPECT_FALSE(r.stragglers.front().rank.has_value());
  EXPECT_EQ(r.stragglers.front().pid, std::optional<int64_t>(10300));
  EXPECT_EQ(r.stragglers.front().cause, "compute");
}

TEST(ReportTest, MismatchedCountAtOneSequenceIsReported) {
  synth::ClusterSpec spec;
  spec.seed = testing::TestSeed();
  Report r = EditedReport(spec, "UPDATE nccl_events SET count = 7 WHERE seq = 5 AND rank = 3");
  ASSERT_EQ(r.hang.mismatches.size(), 1u);
  const Mismatch& m = r.hang.mismatches[0];
  EXPECT_EQ(m.seq, 5);
  EXPECT_EQ(m.field, "count");
  ASSERT_EQ(m.variants.size(), 2u);
  bool found = false;
  for (const auto& [value, who] : m.variants) {
    if (value == "7") found = who == std::vector<std::string>{"node1 rank 3"};
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace rs::analyzer
