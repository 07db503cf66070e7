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

# A clock bound wider than the lateness a verdict compares: one rank per node (so that its
# lateness is compared with other nodes' ranks, not with node-mates on its own clock), CPU
# contention on one node, whose bound is raised to 50 ms (its rank is about 8 ms late) in a copy
# of the merged database. A warning at the top names the node and the verdict resting on it,
# whose confidence drops from high to undetermined (--fail-on straggler no longer fires on it).
cpu_node=node$((RANDOM % 4))
mkdir "$dir/one"
"$synth" "$dir/one" --fault cpu --fault-node "${cpu_node#node}" --ranks 1 --seed "$seed" \
  --offset "1=3000000,2=-2500000,3=7000000" > /dev/null
"$merge" -q -o "$dir/one.rsdb" "$dir/one"
"$analyze" report -q "$dir/one.rsdb" --format json -o "$dir/one.json"
cp "$dir/one.rsdb" "$dir/wide.rsdb"
python3 - "$dir/wide.rsdb" "$cpu_node" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
n = db.execute("UPDATE clock_alignment SET error_bound_ns = 50000000 WHERE node = ?",
               (sys.argv[2],)).rowcount
db.commit()
assert n == 1, n
PY
"$analyze" report "$dir/wide.rsdb" --format json -o "$dir/wide.json"
python3 - "$dir/one.json" "$dir/wide.json" "$cpu_node" <<'PY' || { "$analyze" report "$dir/wide.rsdb"; exit 1; }
import json, sys
before, after, node = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
w = [x for x in after["warnings"] if x.startswith("node %s: clock error bound +-50 ms is larger than" % node)]
assert len(w) == 1, after["warnings"]
assert "(%s, cpu_contention)" % node in w[0] and "cannot be ordered" in w[0], w[0]
assert not [x for x in before["warnings"] if "clock error bound" in x], before["warnings"]
top_before = before["stragglers"][0]
top_after = [s for s in after["stragglers"] if s["node"] == node][0]
assert top_before["node"] == node and top_before["confidence"] == "high", top_before
assert top_before["cause"] == "cpu_contention", top_before
assert top_after["cause"] == "cpu_contention", top_after
# The clocks cannot order it: undetermined (the CPU starvation is measured on the node's own
# clock, whether it made the node late is not), and the verdict line says so.
assert top_after["confidence"] == "undetermined", top_after["confidence"]
assert after["verdict_kind"] == "undetermined", after["verdict"]
assert top_after["clock_bound_ns"] >= 50000000, top_after["clock_bound_ns"]
PY
"$analyze" report "$dir/wide.rsdb" | grep -q "^WARNING: node $cpu_node: clock error bound" ||
  { echo "FAIL: no clock-bound WARNING line in the text report"; exit 1; }
set +e
"$analyze" report -q "$dir/wide.rsdb" --fail-on straggler > /dev/null; rc=$?
set -e
[[ $rc == 0 ]] || { echo "FAIL: --fail-on straggler exits $rc on a verdict inside the clock bound"; exit 1; }
echo "ok: a clock bound wider than the compared lateness warned about, the verdict lowered"

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
[[ $rc == 1 ]] && grep -q "no node node9 in this recording (its nodes with NCCL calls: node0, node1, node2, node3)" "$dir/err" ||
  { echo "FAIL: unknown --nodes: rc $rc: $(cat "$dir/err")"; exit 1; }
"$analyze" report "$dir/cpu.rsdb" --ranks 1,99 2> "$dir/err"; rc=$?
[[ $rc == 1 ]] && grep -q -- "--ranks: no NCCL call of rank 99 in this recording (its ranks: 0-7)" "$dir/err" ||
  { echo "FAIL: unknown --ranks: rc $rc: $(cat "$dir/err")"; exit 1; }
"$analyze" report "$dir/cpu.rsdb" --from +1h 2> "$dir/err"; rc=$?
[[ $rc == 1 ]] && grep -q "calls span 20" "$dir/err" || { echo "FAIL: empty window: rc $rc $(cat "$dir/err")"; exit 1; }
"$analyze" report "$dir/cpu.rsdb" --from yesterday 2> "$dir/err"; rc=$?
[[ $rc == 2 ]] && grep -q -- "--from" "$dir/err" || { echo "FAIL: bad --from: rc $rc"; exit 1; }
"$analyze" report "$dir/cpu.rsdb" --comm 0x1 2> "$dir/err"; rc=$?
[[ $rc == 1 ]] && grep -q -E -- "--comm 0x0000000000000001: no NCCL call of that communicator in this recording \(its communicators: 0x[0-9a-f]{16} \(8 ranks\)\)" "$dir/err" ||
  { echo "FAIL: unknown --comm: rc $rc: $(cat "$dir/err")"; exit 1; }
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
