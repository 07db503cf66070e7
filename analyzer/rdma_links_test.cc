// RDMA link evidence (rdma_links.h) on synthetic clusters whose nodes have an InfiniBand port
// (synth ClusterSpec::rdma): the ib fault's link errors during the slowed collectives name its
// node; ports read without errors name nobody and the report says they were read; errors
// during which nothing was slower are an observation.
#include "analyzer/rdma_links.h"

#include <gtest/gtest.h>

#include <random>

#include "analyzer/report.h"
#include "analyzer/report_expect.h"
#include "analyzer/report_render.h"
#include "analyzer/report_test_util.h"
#include "tests/support/synth_bundle.h"

namespace rs::analyzer {
namespace {

using testing::ScratchDir;

Report Merged(const synth::ClusterSpec& spec, const std::string& sql = "") {
  if (!sql.empty()) return testing::EditedReport(spec, sql, 50'000);
  ScratchDir dir;
  auto path = testing::WriteMergedCluster(spec, dir.path(), 50'000);
  EXPECT_TRUE(path.ok()) << path.error().message();
  return testing::ReportOf(*path);
}

bool HasNote(const Report& r, const std::string& prefix) {
  for (const std::string& n : r.notes) {
    if (n.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

class IbFault : public ::testing::TestWithParam<const char*> {};

TEST_P(IbFault, LinkErrorsDuringTheSlowedCollectivesNameTheNode) {
  const uint64_t seed = testing::TestSeed();
  std::mt19937_64 rng(seed);
  synth::ClusterSpec spec;
  spec.seed = seed;
  spec.collectives = GetParam();
  spec.fault = "ib";
  spec.fault_node = static_cast<int>(rng() % spec.nodes);
  std::cout << "seed " << seed << ": ib fault on node " << spec.fault_node << "\n";
  const Report r = Merged(spec);
  SCOPED_TRACE(RenderText(r));
  ASSERT_FALSE(r.stragglers.empty());
  const Straggler& top = r.stragglers.front();
  EXPECT_EQ(top.node, synth::NodeName(spec.fault_node));
  EXPECT_EQ(top.cause, "network");
  EXPECT_EQ(top.shape, "network");
  EXPECT_EQ(top.confidence, Confidence::kMedium);
  ASSERT_FALSE(top.causes.empty());
  EXPECT_NE(top.causes[0].summary.find("symbol_error +"), std::string::npos);
  EXPECT_NE(top.causes[0].remediation.find("mlx5_0 port 1"), std::string::npos);
  ASSERT_FALSE(top.evidence.empty());
  EXPECT_EQ(top.evidence[0].kind, "rdma_counters");
  // Congestion counters rose on every node: shown, never the cause of another node.
  for (const auto* list : {&r.stragglers, &r.observations}) {
    for (const Straggler& s : *list) EXPECT_EQ(s.node, top.node) << s.summary;
  }
  EXPECT_TRUE(HasNote(r,
                      "RDMA: 4 port(s) on 4 node(s) recorded; link errors or transport "
                      "retries on 1 of them"));
  EXPECT_FALSE(r.hang.detected);
}

INSTANTIATE_TEST_SUITE_P(Modes, IbFault, ::testing::Values("sync", "async"),
                         [](const auto& info) { return std::string(info.param); });

TEST(RdmaLinks, PortsWithoutErrorsNameNobodyAndAreSaidToHaveBeenRead) {
  synth::ClusterSpec spec;
  spec.seed = testing::TestSeed();
  spec.rdma = true;
  const Report r = Merged(spec);
  SCOPED_TRACE(RenderText(r));
  EXPECT_TRUE(r.stragglers.empty());
  for (const Straggler& s : r.observations) EXPECT_NE(s.cause, "network") << s.summary;
  EXPECT_TRUE(HasNote(r,
                      "RDMA: 4 port(s) on 4 node(s) recorded; no link error or transport "
                      "retry counter rose during the recording"));
  // Without the tables (a recorder before the rdma source): no RDMA note at all.
  spec.rdma = false;
  EXPECT_FALSE(HasNote(Merged(spec), "RDMA:"));
}

// Link errors on node1 over the whole recording: every collective moved data while they rose,
// none took longer than another of its size, so they explain nothing measured.
TEST(RdmaLinks, ErrorsDuringWhichNothingWasSlowerAreAnObservation) {
  synth::ClusterSpec spec;
  spec.seed = testing::TestSeed();
  spec.rdma = true;
  const Report r = Merged(
      spec,
      "INSERT INTO rdma_counters(id, node, timestamp_ns, local_timestamp_ns, device, port, "
      "counter, dir, value, delta, since_ns) SELECT 9000000000001, 'node1', MAX(timestamp_ns) "
      "+ 1, MAX(timestamp_ns) + 1, 'mlx5_0', 1, 'symbol_error', 'counters', 400, 400, "
      "MIN(timestamp_ns) - 1 FROM nccl_events");
  SCOPED_TRACE(RenderText(r));
  EXPECT_TRUE(r.stragglers.empty());
  const Straggler* obs = nullptr;
  for (const Straggler& s : r.observations) {
    if (s.node == "node1" && s.cause == "network") obs = &s;
  }
  ASSERT_NE(obs, nullptr);
  EXPECT_EQ(obs->confidence, Confidence::kLow);
  EXPECT_NE(obs->summary.find("explain no lateness"), std::string::npos) << obs->summary;
  EXPECT_TRUE(HasNote(r,
                      "RDMA: 4 port(s) on 4 node(s) recorded; link errors or transport "
                      "retries on 1 of them"));
}

}  // namespace
}  // namespace rs::analyzer
