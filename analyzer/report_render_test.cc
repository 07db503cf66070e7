// The report's output formats: JSON parsed by Python with the stable keys scripts rely on, the
// text verdict first, and the HTML file rendered offline by headless Chromium with its plots.
#include "report_render.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "kernel_test.h"
#include "report.h"
#include "report_test_util.h"
#include "rscore/bundle.h"
#include "synth_bundle.h"

namespace analyzer {
namespace {

using testing::ScratchDir;

Report ClusterReport(const std::string& dir, const std::string& fault, int node) {
  synth::ClusterSpec spec;
  spec.seed = 7;
  spec.fault = fault;
  spec.fault_node = node;
  auto path = testing::WriteMergedCluster(spec, dir, 50'000);
  EXPECT_TRUE(path.ok()) << path.error().message();
  auto opened = rs::OpenRankscopeFile(*path);
  EXPECT_TRUE(opened.ok());
  auto r = BuildReport(*opened);
  EXPECT_TRUE(r.ok()) << r.error().message();
  return std::move(r).value();
}

void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Have(const char* program) {
  return std::system((std::string("command -v ") + program + " >/dev/null 2>&1").c_str()) == 0;
}

// Checks the stable keys; exits non-zero (with a message) when one is missing.
constexpr const char* kJsonCheck = R"py(
import json, sys
r = json.load(open(sys.argv[1]))
for k in ("verdict", "stragglers", "hang", "clock", "per_rank", "per_node", "notes"):
    assert k in r, "missing top-level key " + k
for s in r["stragglers"]:
    for k in ("node", "rank", "cause", "confidence", "evidence", "causes"):
        assert k in s, "straggler lacks " + k
    assert s["cause"] in ("network", "cpu_contention", "io", "compute", "hang", "unknown")
    for c in s["causes"]:
        assert c["kind"] and "remediation" in c and "score" in c
for k in ("detected", "comm_id_hash", "seq", "culprit_nodes", "culprit_ranks"):
    assert k in r["hang"], "hang lacks " + k
for node, c in r["clock"].items():
    for k in ("offset_ns", "error_bound_ns", "method"):
        assert k in c, node + " clock lacks " + k
want = sys.argv[2:]
if want:
    top = r["stragglers"][0]
    assert top["node"] == want[0] and top["cause"] == want[1], (top["node"], top["cause"])
    if want[1] == "hang":
        assert r["hang"]["detected"] and r["hang"]["culprit_nodes"] == [want[0]]
print("ok")
)py";

TEST(ReportRenderTest, JsonParsesWithStableKeys) {
  SKIP_UNLESS_OR_FAIL_IN_CI(Have("python3"), "python3 is needed to check the JSON");
  ScratchDir dir;
  WriteFile(dir.path() + "/check.py", kJsonCheck);
  for (auto [fault, node, cause] :
       {std::tuple{"hang", 2, "hang"}, {"io", 1, "io"}, {"loss", 3, "network"}, {"none", 0, ""}}) {
    ScratchDir cluster;
    Report r = ClusterReport(cluster.path(), fault, node);
    std::string json = dir.path() + "/" + fault + ".json";
    WriteFile(json, RenderJson(r));
    std::string cmd = "python3 " + dir.path() + "/check.py " + json;
    if (*cause) cmd += " node" + std::to_string(node) + " " + cause;
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << RenderJson(r);
  }
}

TEST(ReportRenderTest, TextAndMarkdownLeadWithTheVerdict) {
  ScratchDir dir;
  Report r = ClusterReport(dir.path(), "cpu", 1);
  std::string text = RenderText(r);
  EXPECT_EQ(text.rfind("STRAGGLER: node1", 0), 0u) << text;
  EXPECT_NE(text.find("cpu_contention"), std::string::npos);
  std::string md = RenderMarkdown(r);
  EXPECT_EQ(md.rfind("# rankscope report\n\n**STRAGGLER", 0), 0u) << md;
  EXPECT_NE(md.find("| 1 | cpu_contention |"), std::string::npos);
}

TEST(ReportRenderTest, HtmlRendersOfflineWithPlots) {
  SKIP_UNLESS_OR_FAIL_IN_CI(Have("chromium"),
                            "chromium is needed to render the HTML report (apt-get install "
                            "chromium)");
  ScratchDir dir;
  Report r = ClusterReport(dir.path(), "loss", 2);
  std::string html = dir.path() + "/report.html";
  WriteFile(html, RenderHtml(r));
  const std::string flags =
      "chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
      "--disable-background-networking --disable-component-update --disable-sync "
      "--user-data-dir=" +
      dir.path() + "/profile ";
  std::string dom = dir.path() + "/dom.html", png = dir.path() + "/shot.png";
  ASSERT_EQ(std::system((flags + "--dump-dom file://" + html + " > " + dom + " 2>" + dir.path() +
                         "/chromium.log")
                            .c_str()),
            0)
      << ReadFile(dir.path() + "/chromium.log");
  std::string parsed = ReadFile(dom);
  for (const char* id : {"plot-lateness", "plot-durations", "plot-retransmits", "plot-runq"}) {
    EXPECT_NE(parsed.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  }
  size_t cells = 0;
  for (size_t p = 0; (p = parsed.find("class=\"cell\"", p)) != std::string::npos; ++p) ++cells;
  EXPECT_EQ(cells, r.plots.lateness.rows.size() * r.plots.lateness.column_start_ns.size());
  EXPECT_NE(parsed.find("<polyline"), std::string::npos);
  EXPECT_NE(parsed.find("STRAGGLER: node2"), std::string::npos);
  ASSERT_EQ(std::system((flags + "--hide-scrollbars --window-size=1200,2000 --screenshot=" + png +
                         " file://" + html + " 2>>" + dir.path() + "/chromium.log")
                            .c_str()),
            0)
      << ReadFile(dir.path() + "/chromium.log");
  std::string image = ReadFile(png);
  ASSERT_GT(image.size(), 24u);
  EXPECT_EQ(image.substr(1, 3), "PNG");
  // A blank 1200x2000 page compresses to a few KiB; text, tables and plots do not.
  EXPECT_GT(image.size(), 40'000u);
  if (const char* keep = std::getenv("RANKSCOPE_KEEP_SCREENSHOT")) {
    std::ofstream(keep, std::ios::binary) << image;
    std::ofstream(std::string(keep) + ".html") << ReadFile(html);
  }
}

}  // namespace
}  // namespace analyzer
