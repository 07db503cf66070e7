#!/bin/bash
# End to end on synthetic clusters: make-synth-cluster (skewed clocks, one fault on a node chosen
# at random) -> rankscope-merge -> rankscope-analyze report --format json; the top straggler (or
# hang culprit) must be the faulty node with the injected cause. Also the CLI's errors.
#   report_e2e_test.sh MAKE_SYNTH_CLUSTER RANKSCOPE_MERGE RANKSCOPE_ANALYZE
set -euo pipefail
synth=$1 merge=$2 analyze=$3
seed=${RANKSCOPE_TEST_SEED:-$(date +%s)}
echo "seed $seed (rerun with RANKSCOPE_TEST_SEED=$seed)"
RANDOM=$seed
dir=$(mktemp -d "${TMPDIR:-/tmp}/rankscope-report-e2e-XXXXXX")
trap 'rm -rf "$dir"' EXIT

check() {  # check JSON NODE CAUSE
  python3 - "$@" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
node, cause = sys.argv[2], sys.argv[3]
if cause == "none":
    assert not [s for s in r["stragglers"] if s["confidence"] in ("high", "medium")], r["verdict"]
    assert not r["hang"]["detected"]
    sys.exit(0)
top = r["stragglers"][0]
assert top["node"] == node and top["cause"] == cause, (top["node"], top["cause"], r["verdict"])
assert top["confidence"] == "high", top["confidence"]
assert r["hang"]["detected"] == (cause == "hang")
if cause == "hang":
    assert r["hang"]["culprit_nodes"] == [node], r["hang"]
for n, c in r["clock"].items():
    assert c["method"] in ("reference", "rendezvous"), (n, c)
PY
}

for pair in none:none loss:network cpu:cpu_contention io:io slow:compute hang:hang; do
  fault=${pair%%:*} cause=${pair#*:}
  k=$((RANDOM % 4))
  mkdir "$dir/$fault"
  "$synth" "$dir/$fault" --fault "$fault" --fault-node "$k" --seed "$seed" \
    --offset "1=3000000,2=-2500000,3=7000000" > /dev/null
  "$merge" -q -o "$dir/$fault.rsdb" "$dir/$fault"
  "$analyze" report "$dir/$fault.rsdb" --format json -o "$dir/$fault.json"
  if ! check "$dir/$fault.json" "node$k" "$cause"; then
    echo "FAIL: fault $fault on node$k"; "$analyze" report "$dir/$fault.rsdb"; exit 1
  fi
  echo "ok: fault $fault on node$k -> $(head -c 100 <("$analyze" report "$dir/$fault.rsdb"))"
done

# Every format writes; a single bundle works as input too.
for f in text markdown html; do
  "$analyze" report "$dir/cpu.rsdb" -f "$f" -o "$dir/out.$f"
  test -s "$dir/out.$f"
done
"$analyze" report "$dir/cpu/node0.rsb" | head -1

# Clock quality and foreign inputs at the top: a node of another communicator at the same time
# has no rendezvous (wall clock); a bundle of another job a day earlier shares nothing.
mkdir "$dir/other" "$dir/old"
"$synth" "$dir/other" --nodes 2 --seed $((seed + 1)) > /dev/null
"$synth" "$dir/old" --nodes 1 --seed $((seed + 2)) --offset "0=-86400000000000" > /dev/null
"$merge" -q -o "$dir/mixed.rsdb" "$dir/cpu/node0.rsb" "$dir/cpu/node2.rsb" "$dir/other/node1.rsb" \
  "$dir/old/node0.rsb" 2> "$dir/mixed.err" || true
"$analyze" report "$dir/mixed.rsdb" --format json -o "$dir/mixed.json"
python3 - "$dir/mixed.json" <<'PY' || { cat "$dir/mixed.err"; exit 1; }
import json, sys
r = json.load(open(sys.argv[1]))
w = " | ".join(r["warnings"])
assert "node1: clock aligned by its wall clock only" in w, w
assert "another job's bundle?" in w, w
for s in r["stragglers"]:
    if r["clock"][s["node"]]["method"] == "wall_clock" and s.get("arrival_basis") not in ("", "device_waits", None):
        assert s["confidence"] != "high", s
PY
"$analyze" report "$dir/mixed.rsdb" | sed -n '3p' | grep -q '^WARNING: ' || { echo "FAIL: no WARNING line at the top of the text report"; exit 1; }
echo "ok: wall-clock node and another job's bundle warned about"

# Filters: a part of the recording, +offsets from its start (the same zero as every tool's).
"$analyze" report "$dir/cpu.rsdb" --format json -o "$dir/all.json"
"$analyze" report "$dir/cpu.rsdb" --format json -o "$dir/part.json" --nodes node0,node2 \
  --ranks 0-5 --from +0 --to +2s
start=$(python3 -c "import json; print(json.load(open('$dir/all.json'))['start_ns'])")
python3 - "$dir/all.json" "$dir/part.json" "$start" <<'PY'
import json, sys
whole, part, start = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
assert part["nodes"] == ["node0", "node2"], part["nodes"]
assert {r["rank"] for r in part["per_rank"]} <= {0, 1, 4, 5}, part["per_rank"]
assert 0 < part["nccl_calls"] < whole["nccl_calls"], (part["nccl_calls"], whole["nccl_calls"])
assert any(n.startswith("only nodes node0, node2") for n in part["notes"]), part["notes"]
PY
set +e
"$analyze" report "$dir/cpu.rsdb" --nodes node9 2> "$dir/err"; rc=$?
[[ $rc == 1 ]] && grep -q "no node node9" "$dir/err" || { echo "FAIL: unknown --nodes: rc $rc"; exit 1; }
"$analyze" report "$dir/cpu.rsdb" --from +1h 2> "$dir/err"; rc=$?
[[ $rc == 1 ]] && grep -q "calls span 20" "$dir/err" || { echo "FAIL: empty window: rc $rc $(cat "$dir/err")"; exit 1; }
"$analyze" report "$dir/cpu.rsdb" --from yesterday 2> "$dir/err"; rc=$?
[[ $rc == 2 ]] && grep -q -- "--from" "$dir/err" || { echo "FAIL: bad --from: rc $rc"; exit 1; }
"$analyze" report "$dir/cpu.rsdb" --comm 0x1 2> "$dir/err"; rc=$?
[[ $rc == 1 ]] || { echo "FAIL: unknown --comm: rc $rc"; exit 1; }
set -e
echo "ok: report filters"

# Errors: usage (2), unreadable input naming the file (1), unwritable output naming it (1).
set +e
"$analyze" report "$dir/cpu.rsdb" --format pdf 2> "$dir/err"; rc=$?
[[ $rc == 2 ]] && grep -q "pdf" "$dir/err" || { echo "FAIL: bad --format: rc $rc"; exit 1; }
"$analyze" report "$dir/missing.rsdb" 2> "$dir/err"; rc=$?
[[ $rc == 1 ]] && grep -q "missing.rsdb" "$dir/err" || { echo "FAIL: missing input: rc $rc"; exit 1; }
"$analyze" report "$dir/cpu.rsdb" -o "$dir/no/such/dir/r.txt" 2> "$dir/err"; rc=$?
# A wrong -o is refused before any work, as a usage error.
[[ $rc == 2 ]] && grep -q "no/such/dir" "$dir/err" || { echo "FAIL: bad -o: rc $rc"; exit 1; }
"$analyze" report 2> "$dir/err"; rc=$?
[[ $rc == 2 ]] || { echo "FAIL: no input: rc $rc"; exit 1; }
echo "all ok"
