// NCCL's proxy times (proxy_waits.h) on synthetic async clusters whose gpu_ops rows are given
// proxy sums: a node whose sends stood out on the network is named in the note and in the
// evidence of the network finding on it (an RDMA link fault), never blamed on those times
// alone; uniform times name nobody; without the columns' data there is no note.
#include "analyzer/proxy_waits.h"

#include <gtest/gtest.h>

#include <string>

#include "analyzer/report.h"
#include "analyzer/report_expect.h"
#include "analyzer/report_render.h"
#include "analyzer/report_test_util.h"
#include "tests/support/synth_bundle.h"

namespace rs::analyzer {
namespace {

// Nobody named: a random synthetic cluster may still show a node a few microseconds late
// inside the clock bound, which the report lists as undetermined (no blame); nothing above that,
// and no entry resting on the proxy's times.
void ExpectNobodyNamed(const Report& r) {
  for (const Straggler& s : r.stragglers) {
    EXPECT_EQ(s.confidence, Confidence::kUndetermined) << s.summary;
    for (const Evidence& e : s.evidence) EXPECT_NE(e.kind, "proxy") << s.summary;
  }
}

const std::string* ProxyNote(const Report& r) {
  for (const std::string& n : r.notes) {
    if (n.rfind("NCCL's proxy timed ", 0) == 0) return &n;
  }
  return nullptr;
}

// Every operation: 4 steps, 300-360 us on the network, its slowest step to the same rank of the
// next node; the node named `slow` (if any) 6 ms.
std::string ProxySql(const std::string& slow = "") {
  return "UPDATE gpu_ops SET proxy_steps = 4, send_gpu_wait_ns = 20000, send_peer_wait_ns ="
         " 5000, recv_net_wait_ns = 400000, recv_gpu_wait_ns = 10000, send_net_ns = CASE node"
         " WHEN '" +
         slow +
         "' THEN 6000000 ELSE 300000 + (id % 7) * 10000 END,"
         " net_step_max_peer = (rank + 2) % nranks;"
         " UPDATE gpu_ops SET net_step_max_ns = send_net_ns / 2";
}

TEST(ProxyWaits, UniformTimesNameNobody) {
  synth::ClusterSpec spec;
  spec.seed = testing::TestSeed();
  spec.collectives = "async";
  const Report r = testing::EditedReport(spec, ProxySql(), 50'000);
  SCOPED_TRACE("seed " + std::to_string(spec.seed) + "\n" + RenderText(r));
  ExpectNobodyNamed(r);
  const std::string* note = ProxyNote(r);
  ASSERT_NE(note, nullptr);
  EXPECT_NE(note->find("no node's sends stood out on the network"), std::string::npos) << *note;
  for (const Straggler& s : r.observations) {
    for (const Evidence& e : s.evidence) EXPECT_NE(e.kind, "proxy") << s.summary;
  }
}

// Alone, a node's slow sends are a note, not a finding: a send's time grows with its size and
// its peer's load too.
TEST(ProxyWaits, SlowSendsAloneAreANoteNotABlame) {
  synth::ClusterSpec spec;
  spec.seed = testing::TestSeed();
  spec.collectives = "async";
  const Report r = testing::EditedReport(spec, ProxySql("node2"), 50'000);
  SCOPED_TRACE("seed " + std::to_string(spec.seed) + "\n" + RenderText(r));
  ExpectNobodyNamed(r);
  const std::string* note = ProxyNote(r);
  ASSERT_NE(note, nullptr);
  EXPECT_NE(note->find("node2's sends stood out (rank 4's): 6 ms per operation, its slowest step "
                       "to node3"),
            std::string::npos)
      << *note;
}

// An RDMA link fault on a node (link errors while its collectives slowed): its network finding
// carries the proxy's evidence when its sends stood out.
TEST(ProxyWaits, EvidenceJoinsTheNetworkFindingOnTheNode) {
  synth::ClusterSpec spec;
  spec.seed = testing::TestSeed();
  spec.collectives = "async";
  spec.fault = "ib";
  spec.fault_node = 1;
  const Report r = testing::EditedReport(spec, ProxySql("node1"), 50'000);
  SCOPED_TRACE(RenderText(r));
  ASSERT_FALSE(r.stragglers.empty());
  const Straggler& top = r.stragglers.front();
  EXPECT_EQ(top.node, "node1");
  EXPECT_EQ(top.cause, "network");
  const Evidence* proxy = nullptr;
  for (const Evidence& e : top.evidence) {
    if (e.kind == "proxy") proxy = &e;
  }
  ASSERT_NE(proxy, nullptr);
  EXPECT_NE(proxy->summary.find("rank 2's sends were on the network 6 ms per operation"),
            std::string::npos)
      << proxy->summary;
  EXPECT_NE(proxy->summary.find("(to node2)"), std::string::npos) << proxy->summary;
}

TEST(ProxyWaits, NoTimedStepNoNote) {
  synth::ClusterSpec spec;
  spec.seed = testing::TestSeed();
  spec.collectives = "async";
  const Report r = testing::EditedReport(spec, "UPDATE gpu_ops SET proxy_steps = NULL", 50'000);
  EXPECT_EQ(ProxyNote(r), nullptr);
}

// What the plugin could not time is said: processes with proxy times off, operations with
// steps left untimed (their sums lower bounds), counted from every node's metadata.
TEST(ProxyWaits, TimesOffAndPartialAreSaid) {
  synth::ClusterSpec spec;
  spec.seed = testing::TestSeed();
  spec.collectives = "async";
  const Report off = testing::EditedReport(
      spec,
      "UPDATE gpu_ops SET proxy_steps = NULL; INSERT OR REPLACE INTO metadata(key, value) VALUES"
      " ('node.node1.gpu_regions_proxy_times_off', '2'),"
      " ('node.node3.gpu_regions_proxy_times_off', '1')",
      50'000);
  const std::string* note = ProxyNote(off);
  ASSERT_EQ(note, nullptr);
  bool said = false;
  for (const std::string& n : off.notes) {
    said |= n ==
            "NCCL's proxy: 3 process(es) timed no proxy step (RANKSCOPE_PLUGIN_PROXY_TIMES=0):"
            " their sends and receives are not in this view";
  }
  EXPECT_TRUE(said);
  const Report partial =
      testing::EditedReport(spec,
                            ProxySql() +
                                "; INSERT OR REPLACE INTO metadata(key, value) VALUES"
                                " ('node.node2.gpu_proxy_times_partial', '4'),"
                                " ('node.node2.not_gpu_proxy_times_partial', '100')",
                            50'000);
  note = ProxyNote(partial);
  ASSERT_NE(note, nullptr);
  EXPECT_NE(note->find("; 4 operation(s) had steps left untimed"), std::string::npos) << *note;
}

}  // namespace
}  // namespace rs::analyzer
