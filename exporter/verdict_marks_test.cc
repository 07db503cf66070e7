// rankscope-export --report: the report's verdict and evidence on a track of their own, on a
// synthetic cluster with a hand-written report of it (the analyzer's own JSON is checked in
// tests/cluster through the demo's trace).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "exporter/exporter.h"
#include "exporter/test_input.h"
#include "exporter/trace_check.h"
#include "rscore/bundle.h"

namespace rs::exporter {
namespace {

using testing::DecodedTrace;
using testing::DecodePerfettoTrace;

class VerdictMarksTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::MakeTempDir());
    synth::ClusterSpec spec;
    spec.nodes = 3;
    spec.ranks_per_node = 2;
    spec.steps = 20;
    ASSERT_EQ(mkdir((*dir_ + "/in").c_str(), 0700), 0);
    auto r = testing::WriteInputs(spec, *dir_ + "/in", *dir_ + "/job.rsdb");
    ASSERT_TRUE(r.ok()) << r.error().message();
    ExportOptions o;
    o.input = *dir_ + "/job.rsdb";
    o.output = *dir_ + "/plain.pftrace";
    auto plain = Export(o);
    ASSERT_TRUE(plain.ok()) << plain.error().message();
    auto opened = OpenRankscopeFile(*dir_ + "/job.rsdb");
    ASSERT_TRUE(opened.ok());
    start_ = opened->info().start_ns;  // what the report's start_ns is
    first_ = plain->summary.first_ts;
    last_ = plain->summary.last_ts;
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(std::system(("rm -rf '" + *dir_ + "'").c_str()), 0);
    delete dir_;
  }

  // A report of the recording: node1 rank 2 last in two collectives (one after the trace's
  // end), and a hang stuck for the last millisecond.
  static std::string Report(int64_t start, int64_t end = last_) {
    const std::string s = std::to_string(start), mid = std::to_string((first_ + last_) / 2);
    return R"J({"verdict": "STRAGGLER: node1 rank 2 — cause compute (confidence high)",
      "verdict_kind": "straggler", "input": "job.rsdb", "start_ns": )J" +
           s + R"J(, "end_ns": )J" + std::to_string(end) + R"J(,
      "stragglers": [{"node": "node1", "cause": "compute", "confidence": "high",
        "late_arrivals": [
          {"comm_id_hex": "0x00000000000000aa", "seq": 3, "op": "ALL_REDUCE", "pid": 11,
           "rank": 2, "arrival_ns": )J" +
           mid + R"J(, "behind_first_ns": 5000000},
          {"comm_id_hex": "0x00000000000000aa", "seq": 9, "op": "ALL_REDUCE", "pid": 11,
           "rank": 2, "arrival_ns": )J" +
           std::to_string(last_ + 1'000'000'000) + R"J(,
           "behind_first_ns": 4000000},
          {"comm_id_hex": "0x00000000000000aa", "seq": null, "graph_replay": 7,
           "op": "ALL_REDUCE", "pid": 11, "rank": 2, "arrival_ns": )J" +
           mid + R"J(,
           "behind_first_ns": 3000000}]}],
      "hang": {"detected": true, "stuck_for_ns": 1000000, "op": "ALL_REDUCE", "seq": 22,
        "culprit_labels": ["node2 rank 4"], "comm_id_hex": "0x00000000000000aa",
        "summary": "stuck", "kind": "hang"}})J";
  }

  static std::string Write(const std::string& name, const std::string& text) {
    const std::string path = *dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  static Result<ExportResult> ExportWith(const std::string& report, const std::string& out,
                                         std::vector<std::string> nodes = {}) {
    ExportOptions o;
    o.input = *dir_ + "/job.rsdb";
    o.output = *dir_ + "/" + out;
    o.report = report;
    o.nodes = std::move(nodes);
    o.compress = false;
    return Export(o);
  }

  static inline std::string* dir_ = nullptr;
  static inline int64_t start_ = 0, first_ = 0, last_ = 0;
};

// Events on the verdict track, by name.
std::vector<testing::DecodedEvent> Marks(const DecodedTrace& t) {
  std::vector<testing::DecodedEvent> out;
  for (const auto& e : t.events) {
    if (t.tracks.at(e.track).name().rfind("verdict and its evidence", 0) == 0) out.push_back(e);
  }
  return out;
}

TEST_F(VerdictMarksTest, TheVerdictItsLateArrivalsAndTheHangAreMarked) {
  auto r = ExportWith(Write("report.json", Report(start_)), "marked.pftrace");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->stats.marks, 4);  // the arrival after the trace's end is left out
  auto t = DecodePerfettoTrace(*dir_ + "/marked.pftrace");
  ASSERT_TRUE(t.ok()) << t.error().message();
  for (const std::string& e : t->errors) ADD_FAILURE() << e;
  // The verdict's track comes before every node.
  int32_t verdict_rank = 0, first_node_rank = INT32_MAX;
  for (const auto& [uuid, d] : t->tracks) {
    if (d.name() == "rankscope verdict") verdict_rank = d.sibling_order_rank();
    if (d.parent_uuid() == 0 && d.name() != "rankscope verdict") {
      first_node_rank = std::min(first_node_rank, d.sibling_order_rank());
    }
  }
  EXPECT_LT(verdict_rank, first_node_rank);
  auto marks = Marks(*t);
  ASSERT_EQ(marks.size(), 4u);
  // A CUDA graph replay's collective is named by its replay number (seq null in the report).
  auto replay = std::find_if(marks.begin(), marks.end(), [](const auto& m) {
    return m.name == "node1 rank 2 last: ALL_REDUCE graph replay 7 (3.00 ms after the first)";
  });
  ASSERT_NE(replay, marks.end());
  EXPECT_EQ(replay->ints.at("graph_replay"), 7);
  EXPECT_EQ(replay->ints.count("seq"), 0u);
  marks.erase(replay);
  EXPECT_EQ(marks[0].name, "STRAGGLER: node1 rank 2 — cause compute (confidence high)");
  EXPECT_EQ(marks[0].ts, first_);
  EXPECT_EQ(marks[0].end, last_);
  EXPECT_EQ(marks[0].strings.at("verdict_kind"), "straggler");
  EXPECT_EQ(marks[1].name, "node1 rank 2 last: ALL_REDUCE seq 3 (5.00 ms after the first)");
  EXPECT_TRUE(marks[1].instant);
  EXPECT_EQ(marks[1].ts, (first_ + last_) / 2);
  EXPECT_EQ(marks[1].ints.at("behind_first_ns"), 5'000'000);
  EXPECT_EQ(marks[1].strings.at("comm_id_hex"), "0x00000000000000aa");
  EXPECT_EQ(marks[2].name, "stuck: ALL_REDUCE seq 22 — culprits node2 rank 4");
  EXPECT_EQ(marks[2].ts, last_ - 1'000'000);
  EXPECT_EQ(marks[2].end, last_);
}

TEST_F(VerdictMarksTest, NodesFilterKeepsTheVerdictAndDropsOtherNodesArrivals) {
  auto r = ExportWith(Write("report2.json", Report(start_)), "node0.pftrace", {"node0"});
  ASSERT_TRUE(r.ok()) << r.error().message();
  auto t = DecodePerfettoTrace(*dir_ + "/node0.pftrace");
  ASSERT_TRUE(t.ok());
  const auto marks = Marks(*t);
  ASSERT_EQ(marks.size(), 2u);  // the verdict and the hang; node1's arrivals are not node0's
  EXPECT_EQ(marks[1].name.rfind("stuck: ", 0), 0u);
}

TEST_F(VerdictMarksTest, AReportOfAnotherRecordingOrNotAReportIsRefusedAndNothingWritten) {
  struct Case {
    std::string text, expect;
  };
  const std::vector<Case> cases = {
      {Report(start_ - 3'600'000'000'000, last_ - 3'600'000'000'000),  // an hour before
       "the report of another recording"},
      {"not json", "not a report's JSON"},
      {R"J({"verdict": "x", "start_ns": "soon"})J", "not a report's JSON"},
      {R"J({"verdict": "x", "start_ns": )J" + std::to_string(start_) + R"J(, "end_ns": )J" +
           std::to_string(last_) +
           R"J(, "stragglers": [{"node": "n", "late_arrivals": [{"seq": "three"}]}]})J",
       "not a report's JSON"}};
  int i = 0;
  for (const Case& c : cases) {
    const std::string out = "refused" + std::to_string(i) + ".pftrace";
    auto r = ExportWith(Write("bad" + std::to_string(i++) + ".json", c.text), out);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.error().message().find(c.expect), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find("--report"), std::string::npos) << r.error().message();
    struct stat st;
    EXPECT_NE(stat((*dir_ + "/" + out).c_str(), &st), 0) << out << " was written";
  }
  auto missing = ExportWith(*dir_ + "/no-such.json", "missing.pftrace");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("cannot read it"), std::string::npos);
}

}  // namespace
}  // namespace rs::exporter
