// The server in process, on synthetic recordings that the server merges itself: a
// CPU-contention straggler (a directory of bundles) and a hang (two bundle files).
#include "analyzer/mcp/server.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "analyzer/mcp/tool_bounds.h"
#include "tests/support/synth_bundle.h"

namespace rs::analyzer::mcp {
namespace {

std::string MakeTempDir() {
  std::string dir = std::filesystem::temp_directory_path().string() + "/mcp-test-XXXXXX";
  EXPECT_NE(::mkdtemp(dir.data()), nullptr);
  return dir;
}

class ServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(MakeTempDir());
    synth::ClusterSpec cpu;
    cpu.fault = "cpu";
    cpu.fault_node = 2;
    std::filesystem::create_directories(*dir_ + "/cpu");
    std::filesystem::create_directories(*dir_ + "/hang");
    auto written = synth::WriteClusterBundles(cpu, *dir_ + "/cpu");
    ASSERT_TRUE(written.ok()) << written.error().message();
    synth::ClusterSpec hang;
    hang.nodes = 2;
    hang.fault = "hang";
    hang.fault_node = 1;
    written = synth::WriteClusterBundles(hang, *dir_ + "/hang");
    ASSERT_TRUE(written.ok()) << written.error().message();
    std::ostringstream log;
    auto cpu_rec = Recording::Open({*dir_ + "/cpu"}, true, log);  // a directory: merged
    ASSERT_TRUE(cpu_rec.ok()) << cpu_rec.error().message();
    cpu_ = cpu_rec->release();
    auto hang_rec =  // two files: merged too
        Recording::Open({*dir_ + "/hang/node0.rsb", *dir_ + "/hang/node1.rsb"}, true, log);
    ASSERT_TRUE(hang_rec.ok()) << hang_rec.error().message();
    hang_ = hang_rec->release();
  }
  static void TearDownTestSuite() {
    delete cpu_;
    delete hang_;
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }

  // One request's reply, parsed.
  Json Ask(Server& s, const Json& request) {
    std::optional<std::string> reply = s.Handle(Dump(request));
    EXPECT_TRUE(reply.has_value());
    if (!reply) return nullptr;
    EXPECT_EQ(reply->find('\n'), std::string::npos);
    return Json::parse(*reply);
  }
  Json Request(const std::string& method, Json params = Json::object()) {
    return {{"jsonrpc", "2.0"}, {"id", ++id_}, {"method", method}, {"params", std::move(params)}};
  }
  Json Call(Server& s, const std::string& tool, Json arguments = Json::object()) {
    Json reply = Ask(s, Request("tools/call", {{"name", tool}, {"arguments", arguments}}));
    EXPECT_TRUE(reply.contains("result")) << Dump(reply);
    return reply["result"];
  }
  Server MakeServer(Recording* r) {
    return Server(*r, {.version = "test", .trace_dir = *dir_, .verbose = false}, log_);
  }
  static std::string ErrorText(const Json& result) {
    EXPECT_TRUE(result.value("isError", false)) << Dump(result);
    return result["content"][0]["text"].get<std::string>();
  }

  static std::string* dir_;
  static Recording* cpu_;
  static Recording* hang_;
  std::ostringstream log_;
  int id_ = 0;
};
std::string* ServerTest::dir_ = nullptr;
Recording* ServerTest::cpu_ = nullptr;
Recording* ServerTest::hang_ = nullptr;

TEST_F(ServerTest, NegotiatesTheProtocolVersion) {
  Server s = MakeServer(cpu_);
  for (const char* v : kProtocolVersions) {
    Json r = Ask(s, Request("initialize", {{"protocolVersion", v},
                                           {"capabilities", Json::object()},
                                           {"clientInfo", {{"name", "t"}, {"version", "1"}}}}));
    EXPECT_EQ(r["result"]["protocolVersion"], v);
    EXPECT_EQ(s.protocol_version(), v);
  }
  Json r = Ask(s, Request("initialize", {{"protocolVersion", "2099-01-01"}}));
  EXPECT_EQ(r["result"]["protocolVersion"], "2025-11-25");
  EXPECT_EQ(r["result"]["serverInfo"]["name"], "rankscope-analyze");
  EXPECT_TRUE(r["result"]["capabilities"].contains("tools"));
  EXPECT_TRUE(r["result"]["capabilities"].contains("resources"));
  r = Ask(s, Request("initialize", {{"protocolVersion", 20250618}}));
  EXPECT_EQ(r["error"]["code"], kInvalidParams);
  // A notification gets no answer, a ping an empty result.
  EXPECT_FALSE(s.Handle(R"({"jsonrpc":"2.0","method":"notifications/initialized"})").has_value());
  EXPECT_EQ(Ask(s, Request("ping"))["result"], Json::object());
}

TEST_F(ServerTest, BadMessagesGetProtocolErrorsAndTheServerGoesOn) {
  Server s = MakeServer(cpu_);
  EXPECT_EQ(Json::parse(*s.Handle("{oops"))["error"]["code"], kParseError);
  EXPECT_EQ(Json::parse(*s.Handle("[]"))["error"]["code"], kInvalidRequest);
  EXPECT_EQ(Ask(s, Request("no/such/method"))["error"]["code"], kMethodNotFound);
  Json bad_params = Request("tools/call");
  bad_params["params"] = Json::array({1});
  EXPECT_EQ(Ask(s, bad_params)["error"]["code"], kInvalidParams);
  Json unknown = Ask(s, Request("tools/call", {{"name", "no_such_tool"}}));
  EXPECT_EQ(unknown["error"]["code"], kInvalidParams);
  EXPECT_NE(unknown["error"]["message"].get<std::string>().find("summary, find_stragglers"),
            std::string::npos);
  EXPECT_EQ(Ask(s, Request("tools/call", {{"name", 5}}))["error"]["code"], kInvalidParams);
  EXPECT_EQ(Ask(s, Request("resources/read", {{"uri", "rankscope://nothing"}}))["error"]["code"],
            kResourceNotFound);
  EXPECT_FALSE(s.Handle("   ").has_value());
  EXPECT_EQ(Ask(s, Request("ping"))["result"], Json::object());
}

TEST_F(ServerTest, ListsToolsForTheNegotiatedRevision) {
  Server s = MakeServer(cpu_);
  Json tools = Ask(s, Request("tools/list"))["result"]["tools"];
  std::vector<std::string> names;
  for (const Json& t : tools) {
    names.push_back(t["name"]);
    EXPECT_EQ(t["inputSchema"]["type"], "object") << t["name"];
    EXPECT_EQ(t["outputSchema"]["type"], "object") << t["name"];
    EXPECT_TRUE(t["outputSchema"]["properties"].contains("truncated")) << t["name"];
    EXPECT_FALSE(t["description"].get<std::string>().empty());
  }
  EXPECT_EQ(names, std::vector<std::string>({"summary", "find_stragglers", "hang_report",
                                             "explain_collective", "slowest_collectives",
                                             "node_timeline", "query", "export_trace"}));
  // 2024-11-05 has neither outputSchema nor structuredContent: the JSON comes as text.
  Ask(s, Request("initialize", {{"protocolVersion", "2024-11-05"}}));
  tools = Ask(s, Request("tools/list"))["result"]["tools"];
  EXPECT_FALSE(tools[0].contains("outputSchema"));
  EXPECT_FALSE(tools[0].contains("annotations"));
  Json r = Call(s, "summary");
  EXPECT_FALSE(r.contains("structuredContent"));
  ASSERT_EQ(r["content"].size(), 2u);
  EXPECT_EQ(Json::parse(r["content"][1]["text"].get<std::string>())["node_count"], 4);
}

TEST_F(ServerTest, SummaryAndStragglersOfTheCpuFault) {
  Server s = MakeServer(cpu_);
  Json summary = Call(s, "summary")["structuredContent"];
  EXPECT_EQ(summary["db_kind"], "merged");
  EXPECT_EQ(summary["node_count"], 4);
  EXPECT_EQ(summary["ranks"], 8);
  ASSERT_EQ(summary["nodes"].size(), 4u);
  EXPECT_EQ(summary["nodes"][2]["node"], "node2");
  EXPECT_EQ(summary["nodes"][2]["ranks"], Json::array({4, 5}));
  EXPECT_FALSE(summary["nodes"][2]["sources"].empty());
  EXPECT_EQ(summary["truncated"], false);
  Json found = Call(s, "find_stragglers");
  EXPECT_FALSE(found["isError"].get<bool>());
  const Json& top = found["structuredContent"]["stragglers"][0];
  EXPECT_EQ(top["node"], "node2");
  EXPECT_EQ(top["cause"], "cpu_contention");
  EXPECT_EQ(found["structuredContent"]["verdict"], (*cpu_->ReportJson().value())["verdict"]);
  EXPECT_NE(found["content"][0]["text"].get<std::string>().find("node2"), std::string::npos);
}

TEST_F(ServerTest, HangReportNamesTheCulprit) {
  Server s = MakeServer(hang_);
  Json r = Call(s, "hang_report")["structuredContent"];
  EXPECT_TRUE(r["detected"].get<bool>()) << Dump(r);
  EXPECT_EQ(r["hang"]["culprit_nodes"], Json::array({"node1"}));
  ASSERT_FALSE(r["communicators"].empty());
  EXPECT_TRUE(r["communicators"][0]["stuck"].get<bool>());
  EXPECT_EQ(r["communicators"][0]["comm_id_hex"], r["hang"]["comm_id_hex"]);
}

// The cpu fault's node2 (ranks 4 and 5) arrives last in most collectives: the slowest by wait
// are mostly its, ranked, each one explain_collective opens.
TEST_F(ServerTest, SlowestCollectivesRankByWaitAndNameWhoWasLast) {
  Server s = MakeServer(cpu_);
  Json r = Call(s, "slowest_collectives", {{"limit", 5}})["structuredContent"];
  EXPECT_EQ(r["by"], "wait");
  ASSERT_EQ(r["collectives"].size(), 5u) << Dump(r);
  EXPECT_TRUE(r["truncated"].get<bool>());
  EXPECT_GT(r["collectives_compared"].get<int64_t>(), 5);
  for (size_t i = 1; i < 5; ++i) {
    EXPECT_GE(r["collectives"][i - 1]["wait_ns"].get<int64_t>(),
              r["collectives"][i]["wait_ns"].get<int64_t>());
  }
  ASSERT_FALSE(r["last_arrivals"].empty());
  EXPECT_EQ(r["last_arrivals"][0]["label"].get<std::string>().rfind("node2 ", 0), 0u) << Dump(r);
  const Json& top = r["collectives"][0];
  Json opened = Call(s, "explain_collective",
                     {{"comm", top["comm_id_hex"]}, {"seq", top["seq"]}})["structuredContent"];
  EXPECT_EQ(opened["arrival_spread_ns"], top["wait_ns"]);
  EXPECT_EQ(opened["last_arrival"], top["last_arrival"]);
  // By span, and one communicator only; an unknown one is named as such.
  Json span =
      Call(s, "slowest_collectives",
           {{"by", "span"}, {"comm", top["comm_id_hex"]}, {"limit", 100}})["structuredContent"];
  EXPECT_EQ(span["by"], "span");
  for (const Json& c : span["collectives"]) EXPECT_EQ(c["comm_id_hex"], top["comm_id_hex"]);
  EXPECT_FALSE(span["collectives"].empty());
  std::string e = ErrorText(Call(s, "slowest_collectives", {{"comm", "0x1"}}));
  EXPECT_NE(e.find("no communicator 0x0000000000000001"), std::string::npos) << e;
  e = ErrorText(Call(s, "slowest_collectives", {{"by", "fastest"}}));
  EXPECT_NE(e.find("'by'"), std::string::npos) << e;
}

TEST_F(ServerTest, ExplainsACollectiveAndNamesWhatExists) {
  Server s = MakeServer(cpu_);
  Json rows = Call(s, "query",
                   {{"sql",
                     "SELECT comm_id_hex, MAX(seq) FROM nccl_events_v "
                     "WHERE op = 'ALL_REDUCE' GROUP BY 1"}});
  const std::string comm = rows["structuredContent"]["rows"][0][0];
  Json r = Call(s, "explain_collective", {{"comm", comm}, {"seq", 10}})["structuredContent"];
  EXPECT_EQ(r["rank_count"], 8);
  EXPECT_EQ(r["ranks"].size(), 8u);
  EXPECT_EQ(r["comm_id_hex"], comm);
  EXPECT_GE(r["ranks"][0]["lateness_ns"].get<int64_t>(),
            r["ranks"][7]["lateness_ns"].get<int64_t>());
  EXPECT_EQ(r["ranks"][7]["lateness_ns"], 0);
  // Decimal works as well as hex.
  const int64_t decimal = static_cast<int64_t>(std::stoull(comm.substr(2), nullptr, 16));
  EXPECT_EQ(Call(s, "explain_collective",
                 {{"comm", decimal}, {"seq", 10}})["structuredContent"]["comm_id_hex"],
            comm);
  std::string e = ErrorText(Call(s, "explain_collective", {{"comm", "0x1"}, {"seq", 1}}));
  EXPECT_NE(e.find("no communicator 0x0000000000000001"), std::string::npos) << e;
  EXPECT_NE(e.find(comm), std::string::npos) << e;
  e = ErrorText(Call(s, "explain_collective", {{"comm", comm}, {"seq", 100000}}));
  EXPECT_NE(e.find("sequence numbers run from"), std::string::npos) << e;
  e = ErrorText(Call(s, "explain_collective", {{"comm", comm}, {"seq", "ten"}}));
  EXPECT_NE(e.find("argument 'seq' must be an integer"), std::string::npos) << e;
  e = ErrorText(Call(s, "explain_collective", {{"comm", "zz"}, {"seq", 1}}));
  EXPECT_NE(e.find("argument 'comm' 'zz'"), std::string::npos) << e;
}

TEST_F(ServerTest, NodeTimelineIsBoundedAndContinues) {
  Server s = MakeServer(cpu_);
  std::string e = ErrorText(Call(s, "node_timeline", {{"node", "node9"}}));
  EXPECT_EQ(e,
            "argument 'node': no node 'node9' in this recording; its nodes are node0, node1, "
            "node2, node3");
  Json r = Call(s, "node_timeline", {{"node", "node2"}, {"limit", 5}})["structuredContent"];
  ASSERT_EQ(r["events"].size(), 5u);
  EXPECT_TRUE(r["truncated"].get<bool>());
  ASSERT_TRUE(r.contains("next_from"));
  Json next =
      Call(s, "node_timeline",
           {{"node", "node2"}, {"limit", 5}, {"from", r["next_from"]}})["structuredContent"];
  EXPECT_GE(next["events"][0]["timestamp_ns"].get<int64_t>(),
            r["events"][4]["timestamp_ns"].get<int64_t>());
  Json sched = Call(s, "node_timeline",
                    {{"node", "node2"},
                     {"from", "+0"},
                     {"to", "+1s"},
                     {"kinds", Json::array({"sched"})},
                     {"limit", 1000}})["structuredContent"];
  for (const Json& ev : sched["events"]) EXPECT_EQ(ev["kind"], "sched");
  EXPECT_FALSE(sched["events"].empty());
  e = ErrorText(Call(s, "node_timeline", {{"node", "node2"}, {"from", "yesterday"}}));
  EXPECT_NE(e.find("argument 'from' 'yesterday'"), std::string::npos) << e;
  e = ErrorText(Call(s, "node_timeline", {{"node", "node2"}, {"kinds", Json::array({"disk"})}}));
  EXPECT_NE(e.find("must be one of nccl, cuda, gpu, tcp, sched, block, process"), std::string::npos)
      << e;
}

TEST_F(ServerTest, QueryIsGuardedAndBounded) {
  Server s = MakeServer(cpu_);
  EXPECT_NE(ErrorText(Call(s, "query", {{"sql", "DROP TABLE nccl_events"}}))
                .find("DROP TABLE is not allowed"),
            std::string::npos);
  EXPECT_NE(ErrorText(Call(s, "query", {{"sql", "INSERT INTO metadata VALUES ('a', 'b')"}}))
                .find("INSERT is not allowed"),
            std::string::npos);
  EXPECT_NE(ErrorText(Call(s, "query", {{"sql", "ATTACH DATABASE '/tmp/x.db' AS x"}}))
                .find("ATTACH is not allowed"),
            std::string::npos);
  EXPECT_NE(ErrorText(Call(s, "query", {{"sql", "SELECT 1; SELECT 2"}})).find("only one SQL"),
            std::string::npos);
  Json r = Call(
      s, "query",
      {{"sql", "SELECT node, COUNT(*) AS n FROM nccl_events GROUP BY node"}})["structuredContent"];
  EXPECT_EQ(r["columns"], Json::array({"node", "n"}));
  EXPECT_EQ(r["row_count"], 4);
  EXPECT_EQ(r["truncated"], false);
  // Many rows: cut at the limit; long rows: cut at the character bound.
  r = Call(s, "query", {{"sql", "SELECT id FROM nccl_events"}, {"limit", 10}})["structuredContent"];
  EXPECT_EQ(r["row_count"], 10);
  EXPECT_TRUE(r["truncated"].get<bool>());
  EXPECT_NE(r["hint"].get<std::string>().find("limit"), std::string::npos);
  r = Call(s, "query",
           {{"sql",
             "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
             "LIMIT 100000) SELECT x, printf('%.900c', 'y') FROM c"},
            {"limit", 1000}})["structuredContent"];
  EXPECT_TRUE(r["truncated"].get<bool>());
  EXPECT_LT(r["row_count"].get<int64_t>(), 1000);
  EXPECT_LE(Dump(r).size(), kMaxResultChars);
}

TEST_F(ServerTest, ExportsATraceIntoTheTraceDirectory) {
  Server s = MakeServer(cpu_);
  Json r =
      Call(s, "export_trace", {{"from", "+0"}, {"to", "+1s"}, {"nodes", Json::array({"node2"})}});
  ASSERT_FALSE(r["isError"].get<bool>()) << Dump(r);
  const std::string path = r["structuredContent"]["path"];
  EXPECT_EQ(path.rfind(*dir_ + "/rankscope-", 0), 0u) << path;
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_EQ(static_cast<int64_t>(std::filesystem::file_size(path)),
            r["structuredContent"]["bytes"].get<int64_t>());
  // A second export is a second file; the whole of node2 carries the verdict (node2, the cpu
  // fault's straggler) and its late arrivals as marks, one per collective it was last in.
  Json again = Call(s, "export_trace", {{"nodes", Json::array({"node2"})}});
  EXPECT_NE(again["structuredContent"]["path"], path);
  const Json& report = *cpu_->ReportJson().value();
  ASSERT_EQ(report["stragglers"][0]["node"], "node2");
  EXPECT_GT(report["stragglers"][0]["late_arrivals"].size(), 10u);
  int64_t node2_arrivals = 0;
  for (const Json& f : report["stragglers"]) {
    if (f["node"] == "node2") node2_arrivals += static_cast<int64_t>(f["late_arrivals"].size());
  }
  EXPECT_EQ(again["structuredContent"]["verdict_marks"].get<int64_t>(), 1 + node2_arrivals);
  // No place for the report's file: the trace is still written, unmarked, and says so.
  const char* tmp = std::getenv("TMPDIR");
  const std::string saved = tmp ? tmp : "";
  setenv("TMPDIR", "/nonexistent-rankscope-dir", 1);
  Json unmarked = Call(s, "export_trace", {{"nodes", Json::array({"node2"})}});
  if (tmp) {
    setenv("TMPDIR", saved.c_str(), 1);
  } else {
    unsetenv("TMPDIR");
  }
  ASSERT_FALSE(unmarked["isError"].get<bool>()) << Dump(unmarked);
  EXPECT_EQ(unmarked["structuredContent"]["verdict_marks"], 0);
  EXPECT_NE(
      unmarked["content"][0]["text"].get<std::string>().find("without the report's verdict marked"),
      std::string::npos)
      << Dump(unmarked);
  std::string e = ErrorText(Call(s, "export_trace", {{"nodes", Json::array({"gpu7"})}}));
  EXPECT_NE(e.find("no node 'gpu7'"), std::string::npos) << e;
}

TEST_F(ServerTest, ResourcesAreTheSchemaAndTheReport) {
  Server s = MakeServer(cpu_);
  Json list = Ask(s, Request("resources/list"))["result"]["resources"];
  ASSERT_EQ(list.size(), 2u);
  Json schema = Ask(s, Request("resources/read", {{"uri", "rankscope://schema"}}))["result"];
  const std::string text = schema["contents"][0]["text"];
  EXPECT_NE(text.find("nccl_events_v"), std::string::npos);
  EXPECT_NE(text.find("comm_id_hash"), std::string::npos);
  Json report = Ask(s, Request("resources/read", {{"uri", "rankscope://report"}}))["result"];
  EXPECT_EQ(report["contents"][0]["text"].get<std::string>().rfind(
                (*cpu_->ReportJson().value())["verdict"].get<std::string>(), 0),
            0u);
}

TEST(FitResult, CutsLongStringsAndListsUntilTheResultFits) {
  Json r = {{"rows", Json::array()}, {"note", std::string(10000, 'n')}, {"truncated", false}};
  for (int i = 0; i < 1000; ++i) r["rows"].push_back(std::string(1000, 'r'));
  EXPECT_TRUE(FitResult(r, "narrow it"));
  EXPECT_LE(Dump(r).size(), kMaxResultChars);
  EXPECT_EQ(r["note"].get<std::string>().size(), kMaxStringChars);
  EXPECT_TRUE(r["truncated"].get<bool>());
  EXPECT_EQ(r["hint"], "narrow it");
  Json small = {{"a", 1}, {"truncated", false}};
  EXPECT_FALSE(FitResult(small, "x"));
  EXPECT_FALSE(small.contains("hint"));
}

}  // namespace
}  // namespace rs::analyzer::mcp
