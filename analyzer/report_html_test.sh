#!/bin/bash
# The HTML report in a headless browser: synthetic clusters with a fault on node1 (CPU
# contention; packet loss, which gives the retransmits plot its bars) -> rankscope-merge ->
# rankscope-analyze report --format html, loaded by Debian's Chromium. The console must stay
# free of errors, every plot drawn must have marks beyond its axes (on the loss cluster every
# plot must draw), the verdict's rows must stand out, and the screenshots (kept as test
# artifacts: SCREENSHOT.png for CPU contention, SCREENSHOT-loss.png for loss) must be real pages.
#   report_html_test.sh MAKE_SYNTH_CLUSTER RANKSCOPE_MERGE RANKSCOPE_ANALYZE SCREENSHOT.png
# Exit 77 = skipped (no chromium or python3, CI unset). With CI set, a missing one fails.
set -euo pipefail
synth=$1 merge=$2 analyze=$3 shot=$4

skip() {
  if [[ -n "${CI:-}" ]]; then
    echo "FAIL (CI must not skip): $*"
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}
chromium=${RANKSCOPE_CHROMIUM:-/usr/bin/chromium}  # another path only to test the skip
[[ -x $chromium ]] || skip "$chromium is missing (apt-get install chromium, or .ci/install-deps)"
command -v python3 > /dev/null || skip "python3 is missing"

dir=$(mktemp -d "${TMPDIR:-/tmp}/rankscope-report-html-XXXXXX")
trap 'rm -rf "$dir"' EXIT

browse() {  # browse LOG HTML ARGS...: Chromium on a report with the shared flags
  local log=$1 html=$2
  shift 2
  "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$(mktemp -d "$dir/profile-XXXXXX")" --enable-logging=stderr --v=0 \
    "$@" "file://$html" 2>> "$log"
}

# check FAULT SCREENSHOT EVERY_PLOT: one cluster with FAULT on node1, its report in the browser.
check() {
  local fault=$1 png=$2 every=$3 work="$dir/$1"
  mkdir -p "$work/cluster"
  "$synth" "$work/cluster" --fault "$fault" --fault-node 1 > /dev/null
  "$merge" -q -o "$work/m.rsdb" "$work/cluster"
  "$analyze" report -q "$work/m.rsdb" --format html -o "$work/report.html"
  browse "$work/chromium.log" "$work/report.html" --dump-dom > "$work/dom.html"
  mkdir -p "$(dirname "$png")"
  rm -f "$png"
  browse "$work/chromium.log" "$work/report.html" --hide-scrollbars --window-size=1400,3000 \
    --screenshot="$png"
  if grep -E "CONSOLE|Uncaught" "$work/chromium.log"; then
    echo "FAIL ($fault): the browser console reported the lines above"
    exit 1
  fi
  python3 - "$work/dom.html" "$png" "$every" <<'PY' || { echo "FAIL ($fault)"; exit 1; }
import struct, sys
from html.parser import HTMLParser

MARKS = {"rect", "circle", "path", "polyline", "polygon", "ellipse"}

class Plots(HTMLParser):
    def __init__(self):
        super().__init__()
        self.svgs = []       # [id, marks, tooltips of marks]
        self.depth = 0       # nesting inside the current plot's <svg>
        self.in_mark = None  # the mark whose <title> may follow
        self.in_title = False
        self.tr_class = None
        self.rows = []       # (class, first cell text) of every table row
        self.cell = None
        self.ids = []        # every plot, drawn or said to have nothing to draw
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if (a.get("id") or "").startswith("plot-"):
            self.ids.append(a["id"])
        if tag == "svg" and "plot" in (a.get("class") or "").split():
            self.svgs.append([a.get("id"), 0, []])
            self.depth = 1
            return
        if tag == "tr":
            self.tr_class, self.cell = a.get("class") or "", None
        if tag == "td" and self.cell is None:
            self.cell = ""
        if not self.depth:
            return
        self.depth += 1
        cls = (a.get("class") or "").split()
        # Axes and grid are <line>s and <text>; legend swatches are class 'swatch'.
        if tag in MARKS and "swatch" not in cls:
            self.svgs[-1][1] += 1
            self.in_mark = tag
        if tag == "title" and self.in_mark:
            self.in_title = True
            self.svgs[-1][2].append("")
    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None and self.tr_class is not None:
            self.rows.append((self.tr_class, self.cell))
            self.tr_class = None
        if not self.depth:
            return
        self.depth -= 1
        if tag == "title":
            self.in_title = False
        if tag == self.in_mark:
            self.in_mark = None
    def handle_data(self, data):
        if self.in_title:
            self.svgs[-1][2][-1] += data
        if self.cell is not None and self.tr_class is not None:
            self.cell += data

p = Plots()
p.feed(open(sys.argv[1], encoding="utf-8").read())
want = ["plot-lateness", "plot-durations", "plot-retransmits", "plot-runq"]
assert sorted(p.ids) == sorted(want), "plots: %s" % p.ids
drawn = [s[0] for s in p.svgs]
assert "plot-lateness" in drawn and "plot-durations" in drawn, "plots drawn: %s" % drawn
if sys.argv[3] == "every":
    assert sorted(drawn) == sorted(want), "plots said to have nothing to draw: %s" % (
        [i for i in want if i not in drawn])
print("plots drawn: %s; said to have nothing to draw: %s"
      % (drawn, [i for i in want if i not in drawn]))
for sid, marks, titles in p.svgs:
    assert marks > 0, "plot %s draws nothing beyond its axes" % sid
    assert titles and all(titles), "plot %s: marks without a tooltip" % sid
    print("plot %s: %d marks, e.g. '%s'" % (sid, marks, titles[0]))
lateness = next(t for sid, m, t in p.svgs if sid == "plot-lateness")
named = [t for t in lateness if "seq" in t]
assert named, "no heatmap tooltip names a collective's seq"
marked = [c for k, c in p.rows if "straggler" in k.split()]
assert marked and all("node1" in c for c in marked), "straggler rows: %s" % marked
assert any("node1" not in c for k, c in p.rows), "every row is marked"
print("straggler rows marked: %d" % len(marked))

png = open(sys.argv[2], "rb").read()
assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
width, height = struct.unpack(">II", png[16:24])
assert (width, height) == (1400, 3000), (width, height)
# A blank page of that size compresses to a few KiB; text, tables and plots do not.
assert len(png) > 60_000, "screenshot of %d bytes looks empty" % len(png)
print("screenshot %dx%d, %d bytes" % (width, height, len(png)))
PY
  echo "ok ($fault): screenshot written to $png"
}
check cpu "$shot" some
check loss "${shot%.png}-loss.png" every
