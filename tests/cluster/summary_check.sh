#!/usr/bin/env bash
# The verdict from summaries equals the verdict from the raw bundles.
#   summary_check.sh BUILD_DIR RUN_DIR [RAW_NODE]
# RUN_DIR is a run-cluster output (bundles/, report.json from the raw bundles). Every bundle is
# summarized into RUN_DIR/summaries (rankscope-analyze summarize, two at a time through
# xargs -P, as the man page shows), the summaries merged and reported on; the JSON report must equal report.json in
# everything but its input and the notes about the summaries themselves. With RAW_NODE that
# node's raw bundle is given too, after the summaries: it must be merged in place of its summary
# (merge_inputs says which), and the report must still be the same.
# Prints one line "ok: ..." or "FAIL: ..." (with the differences) and exits 0 or 1.
set -euo pipefail
BUILD=$1
RUN=$2
RAW_NODE=${3:-}
SUMS="$RUN/summaries"
rm -rf "$SUMS" && mkdir -p "$SUMS"
find "$RUN/bundles" -name '*.rsb' -print0 |
  xargs -0 -P 2 -I {} sh -c '"$1" summarize -q "$2" -o "$3/$(basename "$2" .rsb).rss"' _ \
    "$BUILD/analyzer/rankscope-analyze" {} "$SUMS"
inputs=("$SUMS")
name=summaries
if [[ -n "$RAW_NODE" ]]; then
  inputs+=("$RUN/bundles/$RAW_NODE.rsb")
  name=mixed
fi
# The clock reference of the raw merge: with no --reference the merge takes, among the nodes
# sharing rendezvous with the most others, the first input, and the raw bundle given last
# moves it (the same verdict in another frame, its numbers shifted within the clock bounds).
reference=$(python3 -c 'import json, sys
c = json.load(open(sys.argv[1])).get("clock") or {}
print(next((n for n, a in c.items() if a.get("method") == "reference"), ""))' "$RUN/report.json")
[[ -n "$reference" ]] && inputs+=(--reference "$reference")
rm -f "$RUN/$name.rsdb" "$RUN/$name.json"
"$BUILD/merger/rankscope-merge" -q -o "$RUN/$name.rsdb" "${inputs[@]}" ||
  { echo "FAIL: rankscope-merge of the summaries failed"; exit 1; }
"$BUILD/analyzer/rankscope-analyze" report -q "$RUN/$name.rsdb" --format json \
  -o "$RUN/$name.json" || true
python3 - "$RUN" "$name" "$RAW_NODE" <<'PY'
import glob, json, os, sqlite3, sys
run, name, raw_node = sys.argv[1:4]
raw = json.load(open(os.path.join(run, "report.json")))
got = json.load(open(os.path.join(run, name + ".json")))
bundle_bytes = sum(os.path.getsize(f) for f in glob.glob(os.path.join(run, "bundles", "*.rsb")))
summary_bytes = sum(os.path.getsize(f) for f in glob.glob(os.path.join(run, "summaries", "*.rss")))

def own_notes(notes):  # the notes that are about the data, not about how it came
    return [n for n in notes if "summar" not in n and "not merged again" not in n]

diffs = []
def walk(a, b, path):
    if len(diffs) > 20:
        return
    if type(a) != type(b):
        diffs.append("%s: %r vs %r" % (path, a, b))
    elif isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k == "input":
                continue
            if k == "notes":
                walk(own_notes(a.get(k, [])), own_notes(b.get(k, [])), path + "/notes")
            elif k not in a or k not in b:
                diffs.append("%s/%s only in %s" % (path, k, "raw" if k in a else name))
            else:
                walk(a[k], b[k], path + "/" + k)
    elif isinstance(a, list):
        if len(a) != len(b):
            diffs.append("%s: %d items vs %d" % (path, len(a), len(b)))
        for i, (x, y) in enumerate(zip(a, b)):
            walk(x, y, "%s[%d]" % (path, i))
    elif a != b:
        diffs.append("%s: %s vs %s" % (path, str(a)[:120], str(b)[:120]))
walk(raw, got, "")
problems = []
summarized = [n for n in got.get("notes", []) if "merged from summaries" in n]
if not summarized:
    problems.append("the report does not say that its nodes came from summaries")
if raw_node:
    db = sqlite3.connect(os.path.join(run, name + ".rsdb"))
    merged = db.execute("SELECT file FROM merge_inputs WHERE status = 'merged'"
                        " AND original_node = ?", (raw_node,)).fetchall()
    left = db.execute("SELECT COUNT(*) FROM merge_inputs WHERE status = 'duplicate'"
                      " AND original_node = ?", (raw_node,)).fetchone()[0]
    if len(merged) != 1 or not merged[0][0].endswith(raw_node + ".rsb") or left != 1:
        problems.append("%s: expected its raw bundle merged and its summary left, got %s merged,"
                        " %d left" % (raw_node, merged, left))
    if any(raw_node + "," in n or raw_node + ")" in n for n in summarized):
        problems.append("%s is listed among the summarized nodes: %s" % (raw_node, summarized))
# Each node the verdict names, merged from its summary: the note gives its raw bundle's path.
named = {x["node"] for x in got.get("stragglers") or []}
named |= set((got.get("hang") or {}).get("culprit_nodes") or [])
for node in sorted(named - {raw_node}):
    path = os.path.realpath(os.path.join(run, "bundles", node + ".rsb"))
    if not any(path in n and "rankscope-merge" in n for n in got.get("notes", [])):
        problems.append("no note gives %s's raw bundle %s to merge" % (node, path))
if diffs:
    problems.append("the report differs from the raw bundles' (raw vs %s):\n    %s"
                    % (name, "\n    ".join(diffs)))
what = "%s: summaries %d bytes, %.1f%% of the bundles' %d; verdict %s" % (
    name, summary_bytes, 100.0 * summary_bytes / max(1, bundle_bytes), bundle_bytes,
    got.get("verdict_kind"))
if problems:
    print("FAIL: %s: %s" % (what, "; ".join(problems)))
    sys.exit(1)
print("ok: %s, the same report as from the raw bundles" % what)
PY
