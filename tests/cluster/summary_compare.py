#!/usr/bin/env python3
# The report from summaries against the report from the raw bundles:
#   summary_compare.py RAW_JSON GOT_JSON GOT_DB BUNDLE_DIR SUMMARY_DIR [RAW_NODE]
# GOT_JSON (the report on GOT_DB, merged from the summaries in SUMMARY_DIR of the bundles in
# BUNDLE_DIR) must equal RAW_JSON in every field but its input and the notes about summaries;
# it must say its nodes came from summaries and, for each node its verdict names, give that
# node's raw bundle to merge. With RAW_NODE, that node's raw bundle was given beside the
# summaries: it must have been merged in place of its summary. Prints one line "ok: ..." or
# "FAIL: ..." with the differences; exits 0 or 1.
import glob, json, os, sqlite3, sys
raw_json, got_json, got_db, bundles, summaries = sys.argv[1:6]
raw_node = sys.argv[6] if len(sys.argv) > 6 else ""
name = os.path.basename(got_json)[:-5]
raw = json.load(open(raw_json))
got = json.load(open(got_json))
bundle_bytes = sum(os.path.getsize(f) for f in glob.glob(os.path.join(bundles, "*.rsb")))
summary_bytes = sum(os.path.getsize(f) for f in glob.glob(os.path.join(summaries, "*.rss")))

def own_notes(notes):  # the notes that are about the data, not about how it came
    return [n for n in notes if "summar" not in n and not n.startswith("input ")]

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
    db = sqlite3.connect(got_db)
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
named = {x["node"] for x in got.get("stragglers") or [] if x.get("confidence") != "undetermined"}
named |= set((got.get("hang") or {}).get("culprit_nodes") or [])
for node in sorted(named - {raw_node}):
    path = os.path.realpath(os.path.join(bundles, node + ".rsb"))
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
