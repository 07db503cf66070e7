#!/bin/bash
# rankscope-analyze diff end to end on synthetic clusters (make-synth-cluster -> rankscope-merge):
# a clean run against one with a slow rank names that rank's finding as new, puts the rank
# first with the rise its two reports give, and the all-reduce first among the kinds; a
# recording against itself changes nothing; recordings of different shapes are compared on
# what they share, with a warning; the CLI's errors name the input.
#   diff_e2e_test.sh MAKE_SYNTH_CLUSTER RANKSCOPE_MERGE RANKSCOPE_ANALYZE
set -euo pipefail
synth=$1 merge=$2 analyze=$3
seed=${RANKSCOPE_TEST_SEED:-$(date +%s)}
echo "seed $seed (rerun with RANKSCOPE_TEST_SEED=$seed)"
RANDOM=$seed
dir=$(mktemp -d "${TMPDIR:-/tmp}/rankscope-diff-e2e-XXXXXX")
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

make_run() {  # make_run NAME SYNTH-ARGS...
  local name=$1; shift
  mkdir "$dir/$name"
  "$synth" "$dir/$name" --seed "$seed" --offset "1=3000000,2=-2500000" "$@" >/dev/null
  "$merge" -q -o "$dir/$name.rsdb" "$dir/$name"
  "$analyze" report -q "$dir/$name.rsdb" --format json -o "$dir/$name.report.json"
}
k=$((RANDOM % 4))
make_run clean --fault none --collectives async
make_run slow --fault slow --fault-node "$k" --collectives async
make_run small --fault none --collectives async --nodes 3

"$analyze" diff -q "$dir/clean.rsdb" "$dir/slow.rsdb" --format json -o "$dir/slow.diff.json"
"$analyze" diff -q "$dir/clean.rsdb" "$dir/slow.rsdb" -o "$dir/slow.diff.txt" --rows 3
"$analyze" diff -q "$dir/slow.rsdb" "$dir/slow.rsdb" --format json -o "$dir/same.diff.json"
"$analyze" diff -q "$dir/clean.rsdb" "$dir/small.rsdb" --format json -o "$dir/small.diff.json"
python3 - "$dir" "node$k" <<'PY' || { cat "$dir/slow.diff.txt"; exit 1; }
import json, sys
d, node = sys.argv[1], sys.argv[2]
load = lambda name: json.load(open("%s/%s" % (d, name)))
clean, slow = load("clean.report.json"), load("slow.report.json")
diff, same, small = load("slow.diff.json"), load("same.diff.json"), load("small.diff.json")

# Clean against slow: the slow report's verdict is new, as its report names it.
top = slow["stragglers"][0]
assert top["node"] == node and top["cause"] == "compute", (top["node"], top["cause"])
assert not [s for s in clean["stragglers"]], clean["verdict"]
added = [f for f in diff["findings"] if f["change"] == "added" and f["kind"] == "verdict"]
obs = lambda rep: len(rep["observations"])
assert len([f for f in diff["findings"] if f["kind"] == "observation"]) <= obs(clean) + obs(slow)
assert len(added) == len(slow["stragglers"]), diff["findings"]
assert added[0]["cause_other"] == top["cause"] and added[0]["confidence_other"] == top["confidence"]
assert added[0]["who"].startswith(node), added[0]
assert diff["headline"].startswith("new in OTHER: " + added[0]["who"]), diff["headline"]
assert diff["baseline"]["verdict"] == clean["verdict"] and diff["other"]["verdict"] == slow["verdict"]
# Ranks: every rank matched; the slow rank's rise first, as the two reports' per-rank rows give it.
per = lambda rep: {r["rank"]: r for r in rep["per_rank"]}
pa, pb = per(clean), per(slow)
assert sorted(r["rank"] for r in diff["ranks"]) == sorted(pa) == sorted(pb)
first = diff["ranks"][0]
assert first["rank"] == top["rank"] and first["named_other"] and not first["named_baseline"], first
for r in diff["ranks"]:
    a, b = pa[r["rank"]], pb[r["rank"]]
    assert r["median_lateness_baseline_ns"] == a["median_lateness_ns"], (r, a)
    assert r["median_lateness_other_ns"] == b["median_lateness_ns"], (r, b)
    assert r["lateness_change_ns"] == b["median_lateness_ns"] - a["median_lateness_ns"]
    assert r["last_other"] == b["last_count"] and r["collectives_other"] == b["collectives"]
changes = [r["lateness_change_ns"] for r in diff["ranks"]]
assert changes == sorted(changes, reverse=True), changes
# Kinds: every compared collective counted once per side; the all-reduces added the most time.
assert sum(k["collectives_baseline"] for k in diff["kinds"]) == clean["collectives"]
assert sum(k["collectives_other"] for k in diff["kinds"]) == slow["collectives"]
assert diff["kinds"][0]["op"] == "ALL_REDUCE" and diff["kinds"][0]["added_ns"] > 0, diff["kinds"][0]
assert diff["kinds"][0]["members"] == "ranks 0-7", diff["kinds"][0]
assert diff["warnings"] == [], diff["warnings"]

# A recording against itself: nothing added or removed, no rank moved.
assert {f["change"] for f in same["findings"]} <= {"kept"}, same["findings"]
assert len(same["findings"]) == len(slow["stragglers"]) + obs(slow), same["findings"]
assert all(r["lateness_change_ns"] == 0 for r in same["ranks"]), same["ranks"]
assert all(k["added_ns"] == 0 for k in same["kinds"]), same["kinds"]
assert same["headline"].startswith("the same findings in both"), same["headline"]

# 4 nodes against 3: ranks 6-7 only in the baseline, said first; no kind in both (other ranks).
assert small["ranks_only_baseline"] == ["node3 rank 6", "node3 rank 7"], small["ranks_only_baseline"]
assert len(small["ranks"]) == 6, len(small["ranks"])
assert any(w.startswith("the recordings' ranks differ (BASELINE 8, OTHER 6)") for w in small["warnings"]), small["warnings"]
assert any("may be different jobs" in w for w in small["warnings"]), small["warnings"]
print("ok: diff json")
PY
grep -q "^ranks (the largest rise in median lateness first; 3 of 8):$" "$dir/slow.diff.txt" ||
  { cat "$dir/slow.diff.txt"; fail "text: no ranks header with --rows 3"; }
grep -q "\[named in OTHER\]$" "$dir/slow.diff.txt" || fail "text: the slow rank not marked"

# Errors: a missing input is named with its side; nothing is written.
rc=0
"$analyze" diff "$dir/clean.rsdb" "$dir/none.rsdb" -o "$dir/x.txt" 2>"$dir/err" || rc=$?
[[ $rc == 1 ]] || fail "a missing OTHER exits $rc"
grep -q "^rankscope-analyze diff: OTHER $dir/none.rsdb: " "$dir/err" || fail "error: $(cat "$dir/err")"
[[ ! -e "$dir/x.txt" ]] || fail "an output was written on error"
echo "PASS"
