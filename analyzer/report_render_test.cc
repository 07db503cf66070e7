// The report's output formats: JSON parsed by Python with the stable keys scripts rely on, the
// text verdict first, and the HTML file rendered offline by headless Chromium with its plots.
#include "analyzer/report_render.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "analyzer/report.h"
#include "analyzer/report_expect.h"
#include "analyzer/report_test_util.h"
#include "rscore/bundle.h"
#include "tests/support/kernel_test.h"
#include "tests/support/synth_bundle.h"

namespace rs::analyzer {
namespace {

using testing::ScratchDir;

Report ClusterReport(const std::string& dir, const std::string& fault, int node) {
  synth::ClusterSpec spec;
  spec.seed = 7;
  spec.fault = fault;
  spec.fault_node = node;
  auto path = testing::WriteMergedCluster(spec, dir, 50'000);
  EXPECT_TRUE(path.ok()) << path.error().message();
  return path.ok() ? testing::ReportOf(*path) : Report{};
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
# The collectives a finding arrived last in (what rankscope-export --report marks): its own
# processes', in time order, as many as its lateness evidence counts.
for s in r["stragglers"] + r["observations"]:
    la = s["late_arrivals"]
    assert len(la) <= 500 and len(la) <= s["late_arrivals_total"], s["late_arrivals_total"]
    assert [a["arrival_ns"] for a in la] == sorted(a["arrival_ns"] for a in la)
    for a in la:
        assert a["pid"] in s["pids"] and a["behind_first_ns"] >= 0, a
        assert a["comm_id_hex"].startswith("0x") and len(a["comm_id_hex"]) == 18, a
        assert (a["seq"] is None) != (a["graph_replay"] is None), a
    if s["cause"] == "hang":
        assert s["late_arrivals_total"] == 0
    lat = [e for e in s["evidence"] if e["kind"] == "lateness"]
    if lat and s["arrival_basis"] != "device_waits":
        assert s["late_arrivals_total"] == lat[0]["values"]["last_count"], \
            (s["late_arrivals_total"], lat[0]["values"]["last_count"])
for k in ("detected", "comm_id_hash", "seq", "culprit_nodes", "culprit_ranks"):
    assert k in r["hang"], "hang lacks " + k
for node, c in r["clock"].items():
    for k in ("offset_ns", "error_bound_ns", "method"):
        assert k in c, node + " clock lacks " + k
want = sys.argv[2:]
if want:
    top = r["stragglers"][0]
    assert top["node"] == want[0] and top["cause"] == want[1], (top["node"], top["cause"])
    if want[1] != "hang":
        assert top["late_arrivals"], "the straggler arrived last in no collective"
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

// Names from the recording cannot inject HTML, links or table cells into the Markdown report.
TEST(ReportRenderTest, MarkdownShowsRecordedNamesLiterally) {
  ScratchDir dir;
  Report r = ClusterReport(dir.path(), "cpu", 1);
  ASSERT_FALSE(r.stragglers.empty());
  const std::string evil = "<script>alert(1)</script> [x](http://e.example) `c` a|b *s*";
  r.stragglers[0].summary = evil;
  r.stragglers[0].node = "#node\n- item";
  r.clock.front().node = evil;
  std::string md = RenderMarkdown(r);
  EXPECT_EQ(md.find("<script>"), std::string::npos) << md;
  EXPECT_EQ(md.find("[x]("), std::string::npos) << md;
  EXPECT_EQ(md.find("`c`"), std::string::npos) << md;
  EXPECT_EQ(md.find("a|b"), std::string::npos) << md;
  EXPECT_EQ(md.find("\n- item"), std::string::npos) << md;
  EXPECT_NE(md.find("\\<script\\>alert(1)\\</script\\> \\[x\\](http://e.example) \\`c\\` a\\|b "
                    "\\*s\\*"),
            std::string::npos)
      << md;
}

// A Flight Recorder process group named "0\nSTRAGGLER: node7 ..." put a forged verdict line into
// the text report. Every string of every human format is shown through rs::EscapeText: the
// name stays on its line, terminal escapes are shown rather than sent.
TEST(ReportRenderTest, ControlCharactersInInputNamesCannotForgeLines) {
  ScratchDir dir;
  Report r = ClusterReport(dir.path(), "cpu", 1);
  const std::string group = "process group 0\nSTRAGGLER: node7 rank 7: cause cpu_contention\x1b[2J";
  r.hang.detected = true;
  r.hang.summary = "all_reduce seq 7 of " + group + " never completed";
  r.hang.mismatches.push_back(
      Mismatch{0, 7, "count", {{"2048\r", {"rank 0"}}}, group, std::nullopt, std::nullopt});
  r.notes.push_back(
      "node\x9b"
      "31m\xc2\x9b"
      "31m");
  const std::string text = RenderText(r);
  EXPECT_EQ(text.find("\nSTRAGGLER: node7"), std::string::npos) << text;
  EXPECT_NE(text.find("of process group 0\\nSTRAGGLER: node7 rank 7: cause cpu_contention\\x1b[2J"
                      " never completed"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("[2048\\r: 1 rank(s)"), std::string::npos) << text;
  EXPECT_NE(text.find("node\\x9b31m\\u009b31m"), std::string::npos) << text;
  for (const std::string& out : {text, RenderMarkdown(r), RenderHtml(r)}) {
    EXPECT_EQ(out.find('\x1b'), std::string::npos);
    EXPECT_EQ(out.find('\r'), std::string::npos);
    EXPECT_EQ(out.find("\xc2\x9b"), std::string::npos);
    EXPECT_EQ(out.find("\nSTRAGGLER: node7"), std::string::npos);
  }
}

// The HTML marks the verdict's ranks (table rows and heatmap rows), draws counts as bars on an
// integer axis, and names time, op and seq in the tooltips of the plotted marks.
TEST(ReportRenderTest, HtmlMarksTheStragglerCountsAsBarsAndTooltipsNameCollectives) {
  ScratchDir dir;
  Report r = ClusterReport(dir.path(), "loss", 2);
  ASSERT_FALSE(r.stragglers.empty());
  ASSERT_EQ(r.stragglers[0].node, "node2");
  std::string html = RenderHtml(r);
  auto section = [&](const std::string& id) {
    size_t b = html.find("id='" + id + "'");
    EXPECT_NE(b, std::string::npos) << id;
    if (b == std::string::npos) return std::string();
    return html.substr(b, html.find("</svg>", b) - b);
  };
  // Per-rank table: node2's rows carry the class, no other node's do.
  size_t table = html.find("<h2>Per rank</h2>");
  ASSERT_NE(table, std::string::npos);
  std::string per_rank = html.substr(table, html.find("</table>", table) - table);
  std::regex row("<tr([^>]*)><td>([^<]*)</td>");
  int marked = 0, rows = 0;
  for (std::sregex_iterator it(per_rank.begin(), per_rank.end(), row), end; it != end; ++it) {
    ++rows;
    bool is_marked = (*it)[1].str().find("straggler") != std::string::npos;
    EXPECT_EQ(is_marked, (*it)[2].str().find("node2") != std::string::npos) << (*it)[0];
    marked += is_marked;
  }
  EXPECT_GT(rows, marked);
  EXPECT_GT(marked, 0);
  // Heatmap: node2's row labels are marked.
  std::string heat = section("plot-lateness");
  std::regex label("<text class='row-label( straggler)?'[^>]*>([^<]*)</text>");
  int labels = 0;
  for (std::sregex_iterator it(heat.begin(), heat.end(), label), end; it != end; ++it) {
    ++labels;
    EXPECT_EQ((*it)[1].matched, (*it)[2].str().find("node2") != std::string::npos) << (*it)[0];
  }
  EXPECT_EQ(labels, static_cast<int>(r.plots.lateness.rows.size()));
  // Heatmap cells with a collective name its time, op and seq.
  std::regex cell("<rect class='cell'[^>]*><title>([^<]*)</title>");
  int named = 0;
  for (std::sregex_iterator it(heat.begin(), heat.end(), cell), end; it != end; ++it) {
    std::string t = (*it)[1];
    if (t.find("no collective") != std::string::npos) continue;
    EXPECT_TRUE(std::regex_search(t, std::regex("\\+[0-9.]+ ?s"))) << t;
    EXPECT_TRUE(std::regex_search(t, std::regex("[A-Za-z]+ seq [0-9]+"))) << t;
    ++named;
  }
  EXPECT_GT(named, 0);
  // Retransmits: bars, each with a tooltip, on an axis of whole numbers.
  std::string rt = section("plot-retransmits");
  std::regex bar("<rect class='bar[^']*'[^>]*><title>([^<]*)</title>");
  int bars = 0;
  for (std::sregex_iterator it(rt.begin(), rt.end(), bar), end; it != end; ++it) {
    EXPECT_TRUE(std::regex_search((*it)[1].str(), std::regex("\\+[0-9.]+"))) << (*it)[1];
    EXPECT_NE((*it)[1].str().find("seq"), std::string::npos) << (*it)[1];
    ++bars;
  }
  EXPECT_GT(bars, 0) << rt;
  EXPECT_EQ(rt.find("<polyline"), std::string::npos);
  std::regex ytick("<text class='ytick'[^>]*>([^<]*)</text>");
  int ticks = 0;
  for (std::sregex_iterator it(rt.begin(), rt.end(), ytick), end; it != end; ++it) {
    EXPECT_TRUE(std::regex_match((*it)[1].str(), std::regex("[0-9]+"))) << (*it)[1];
    ++ticks;
  }
  EXPECT_GE(ticks, 2);
  // Durations: points with tooltips naming the collectives.
  std::string dur = section("plot-durations");
  std::regex point("<circle class='point'[^>]*><title>([^<]*)</title>");
  int points = 0;
  for (std::sregex_iterator it(dur.begin(), dur.end(), point), end; it != end; ++it) {
    EXPECT_NE((*it)[1].str().find("seq"), std::string::npos) << (*it)[1];
    ++points;
  }
  EXPECT_GT(points, 0);
}

// Eleven nodes: node2 before node10 in the JSON per-rank list, the heat map's rows and the
// plots' series, as everywhere nodes are listed.
TEST(ReportRenderTest, NodesAreInNaturalOrderInPerRankAndPlots) {
  ScratchDir dir;
  synth::ClusterSpec spec;
  spec.seed = 5;
  spec.nodes = 11;
  spec.steps = 6;
  auto path = testing::WriteMergedCluster(spec, dir.path(), 50'000);
  ASSERT_TRUE(path.ok()) << path.error().message();
  auto opened = rs::OpenRankscopeFile(*path);
  ASSERT_TRUE(opened.ok()) << opened.error().message();
  auto r = BuildReport(*opened);
  ASSERT_TRUE(r.ok()) << r.error().message();
  std::vector<std::string> want;  // node0 node0 node1 node1 ... node10 node10
  for (int k = 0; k < spec.nodes; ++k) {
    for (int i = 0; i < spec.ranks_per_node; ++i) want.push_back("node" + std::to_string(k));
  }
  // JSON per_rank, in the order written.
  const std::string json = RenderJson(*r);
  const size_t list = json.find("\"per_rank\":");
  ASSERT_NE(list, std::string::npos);
  std::vector<std::string> json_nodes;
  std::regex node_key("\"node\":\"([^\"]*)\"");
  const std::string per_rank = json.substr(list, json.find(']', list) - list);
  for (std::sregex_iterator it(per_rank.begin(), per_rank.end(), node_key), end; it != end; ++it) {
    json_nodes.push_back((*it)[1]);
  }
  EXPECT_EQ(json_nodes, want);
  EXPECT_EQ(r->plots.lateness.row_nodes, want);
  std::vector<std::string> series;
  for (const NodeSeries& n : r->plots.durations) series.push_back(n.node);
  std::vector<std::string> nodes;
  for (int k = 0; k < spec.nodes; ++k) nodes.push_back("node" + std::to_string(k));
  EXPECT_EQ(series, nodes);
  // The HTML heat map's row labels, top to bottom.
  const std::string html = RenderHtml(*r);
  const size_t heat = html.find("id='plot-lateness'");
  ASSERT_NE(heat, std::string::npos);
  const std::string svg = html.substr(heat, html.find("</svg>", heat) - heat);
  std::regex label("<text class='row-label[^']*'[^>]*>(?:&#9654; )?(node[0-9]+) ");
  std::vector<std::string> rows;
  for (std::sregex_iterator it(svg.begin(), svg.end(), label), end; it != end; ++it) {
    rows.push_back((*it)[1]);
  }
  EXPECT_EQ(rows, want);
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
}  // namespace rs::analyzer

namespace rs::analyzer {
namespace {

// The flight recorder line names late ranks with their basis, and a rank whose lateness was
// traced to another as such, not as late.
TEST(FlightRecorderLine, NamesLateRanksAndWhereAVictimsLatenessWasTraced) {
  FlightRecorderSummary fr;
  fr.dumps = 4;
  fr.dumped_ranks = {0, 1, 2, 3};
  fr.versions = {"2.10"};
  fr.late_entries.push_back(FrLateEntry{1, "rank 1", 6, 6, 500'000'000, 0});
  fr.late_traced.push_back(FrTracedEntry{0, "rank 0", 12, 18, 1, "rank 1"});
  const std::string line = FlightRecorderLine(fr);
  EXPECT_NE(line.find("rank 1 entered 6 of its 6 collectives last, a median 500"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("(entry times)"), std::string::npos) << line;
  EXPECT_NE(line.find("rank 0 entered 12 of its 18 collectives last only after waiting for "
                      "others (traced to rank 1, not named)"),
            std::string::npos)
      << line;
}

}  // namespace
}  // namespace rs::analyzer
