#!/usr/bin/env bash
# Acceptance test of the report on the test bed: for every fault kind, on a node chosen at
# random, the report names the faulty node as the top straggler (or hang culprit) and the
# injected kind as its cause; without a fault it names nobody (no straggler but undetermined ones).
# Each run's report must come out the same from the nodes' summaries (rankscope-analyze
# summarize), alone and with the faulty node's raw bundle beside them (summary_check.sh).
#   report_acceptance_test.sh BUILD_DIR SOURCE_DIR [FAULT...]
# RANKSCOPE_TEST_SEED=N repeats a run's choice of fault nodes (the seed is printed).
# The test bed runs as GPU nodes do (async collectives, rankscope's NCCL profiler plugin
# loaded); RANKSCOPE_TEST_COLLECTIVES=sync runs it with blocking collectives (a CPU framework)
# and RANKSCOPE_TEST_PLUGIN=off without the plugin. The suite checks async and sync.
# Exit 77 = skipped (not root and CI unset). With CI set, a missing prerequisite fails.
set -euo pipefail

BUILD=$1
SRC=$2
shift 2
FAULTS=("$@")
((${#FAULTS[@]})) || FAULTS=(loss cpu io slow hang none)
HARNESS="$SRC/tests/cluster/run-cluster"
NODES=3
RPN=2
STEPS=30
MODE=${RANKSCOPE_TEST_COLLECTIVES:-async}
PLUGIN=${RANKSCOPE_TEST_PLUGIN:-on}

skip_or_fail() {
  if [[ -n "${CI:-}" ]]; then
    echo "FAIL (CI must not skip): $*"
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}
((EUID == 0)) || skip_or_fail "needs root: run 'sudo meson test -C build --suite cluster'"
command -v python3 >/dev/null || skip_or_fail "python3 not installed"
for tool in tests/cluster/rankscope-trainer recorder/rankscope-record merger/rankscope-merge \
  analyzer/rankscope-analyze; do
  [[ -x "$BUILD/$tool" ]] || skip_or_fail "$tool is not built in $BUILD"
done

OUT=$(mktemp -d "/tmp/rankscope-acceptance.$$.XXXX")
# RANKSCOPE_KEEP_TEST_OUT=1 keeps each scenario's bundles, report and logs for a look.
trap '[[ -n "${RANKSCOPE_KEEP_TEST_OUT:-}" ]] && echo "kept $OUT" || rm -rf "$OUT"' EXIT

SEED=${RANKSCOPE_TEST_SEED:-$(( $(date +%s) % 32768 ))}
RANDOM=$SEED
echo "seed $SEED (RANKSCOPE_TEST_SEED=$SEED repeats the choice of fault nodes)"

# Checks report.json against truth.json for one fault; prints "ok|FAIL: expected ...; got ...".
check_report() {  # fault dir
  python3 - "$1" "$2/truth.json" "$2/report.json" <<'EOF'
import json, sys
fault, truth_path, report_path = sys.argv[1:4]
truth = json.load(open(truth_path))
report = json.load(open(report_path))
node = truth["node"]
expected_cause = {"loss": "network", "cpu": "cpu_contention", "io": "io", "slow": "compute"}
stragglers = report.get("stragglers") or []
hang = report.get("hang") or {}
def describe(s):
    causes = ",".join("%s=%.2f" % (c["kind"], c["score"]) for c in s.get("causes", []))
    return "%s cause=%s confidence=%s [%s]" % (s["node"], s["cause"], s["confidence"], causes)
got = "; ".join(describe(s) for s in stragglers[:3]) or "no straggler"
if hang.get("detected"):
    got += "; hang culprits %s" % hang.get("culprit_nodes")
if fault == "hang":
    want = "hang detected, culprit %s" % node
    ok = truth.get("end") == "hang" and bool(hang.get("detected")) and \
        node in (hang.get("culprit_nodes") or [])
elif fault == "none":
    # A clean run names nobody: no straggler at all (one the clocks cannot order, undetermined,
    # says so and blames no one), no hang, and the verdict line clears the job or says it cannot.
    want = "no straggler but undetermined ones, no hang, verdict no_straggler or undetermined"
    ok = not [s for s in stragglers if s["confidence"] != "undetermined"] and \
        not hang.get("detected") and report.get("verdict_kind") in ("no_straggler", "undetermined")
else:
    want = "top straggler %s cause=%s" % (node, expected_cause[fault])
    ok = bool(stragglers) and stragglers[0]["node"] == node and \
        stragglers[0]["cause"] == expected_cause[fault]
    # Who: the verdict names its ranks and processes; CPU contention names the competitor.
    if ok and not (stragglers[0].get("ranks") and stragglers[0].get("pids")):
        ok, want = False, want + " naming its ranks and pids"
    # What its lateness was read on (device waits here: the devices were timed) is said.
    if ok and not stragglers[0].get("arrival_basis"):
        ok, want = False, want + " saying its arrival_basis"
    if ok and fault == "cpu" and not stragglers[0].get("competitors"):
        ok, want = False, want + " naming the competing processes"
# Verdicts only where earned: no low-confidence side finding about another node among them.
side = [s["node"] for s in stragglers if s["confidence"] == "low" and s["node"] != node]
if ok and side and fault != "none":
    ok, want = False, want + " and no low-confidence side finding among the verdicts"
print("%s: expected %s; got %s" % ("ok" if ok else "FAIL", want, got))
sys.exit(0 if ok else 1)
EOF
}

failed=()
summary=()
# Each scenario on 3 or 4 nodes, with every node's clock but node0's skewed by up to +-50 ms
# and one of them drifting by +-20 ppm (the merge must align them first), chosen by the seed.
clocks() {  # nodes -> "--skew ... --drift ..."
  local n=$1 k skew=()
  for ((k = 1; k < n; k++)); do
    skew+=("node$k=$(((RANDOM % 2 ? 1 : -1) * (5000 + RANDOM % 45000) * 1000))")
  done
  echo "--skew $(IFS=,; echo "${skew[*]}") --drift node$((1 + RANDOM % (n - 1)))=$((RANDOM % 2 ? 20 : -20))"
}
for fault in "${FAULTS[@]}"; do
  nodes=$((NODES + RANDOM % 2))
  k=$((RANDOM % nodes))
  read -r -a clock_args <<<"$(clocks "$nodes")"
  dir="$OUT/$fault"
  [[ -e "$dir" ]] && dir="$OUT/$fault.$((${#summary[@]} + 1))"  # a fault named twice
  start=$SECONDS
  rc=0
  args=(--build "$BUILD" --out "$dir" --nodes "$nodes" --ranks-per-node "$RPN"
        --steps "$STEPS" --fault "$fault" --timeout 120 --collectives "$MODE" --plugin "$PLUGIN"
        "${clock_args[@]}")
  [[ "$fault" != none ]] && args+=(--fault-node "$k")
  timeout -s INT 240 "$HARNESS" "${args[@]}" >"$dir.out" 2>&1 || rc=$?
  took=$((SECONDS - start))
  if ((rc != 0)) || [[ ! -f "$dir/report.json" || ! -f "$dir/truth.json" ]]; then
    line="FAIL: harness exit $rc, no report: $(tail -n 3 "$dir.out" | tr '\n' ' ')"
  else
    line=$(check_report "$fault" "$dir") || true
    # The same verdict from the nodes' summaries, then with the faulty node's raw bundle
    # beside them (rankscope-analyze summarize; tests/cluster/summary_check.sh).
    if [[ "$line" == ok:* ]]; then
      for raw in "" "node$k"; do
        sums=$("$SRC/tests/cluster/summary_check.sh" "$BUILD" "$dir" $raw 2>&1) ||
          line="FAIL: from summaries: $sums"
        echo "  $sums" | head -n 25
      done
    fi
  fi
  where=$([[ "$fault" == none ]] && echo "-" || echo "node$k")
  summary+=("$(printf '%-5s %-6s %d nodes %3d s  %s' "$fault" "$where" "$nodes" "$took" "$line")")
  echo "  clocks: ${clock_args[*]}"
  grep -h "clock node" "$dir/harness.log" 2>/dev/null | sed 's/^ */  /' || true
  echo "${summary[-1]}"
  if [[ "$line" != ok:* ]]; then
    failed+=("$fault")
    # What the report saw, for a failure met only in CI: its headline, findings and tables.
    [[ -f "$dir/report.txt" ]] && sed -n '1,/^reading this report/p' "$dir/report.txt" | head -n 80 |
      sed 's/^/    | /'
  fi
done

echo "---- summary (seed $SEED, 3-4 nodes x $RPN ranks, $STEPS steps, $MODE collectives, plugin $PLUGIN, skewed clocks) ----"
printf '%s\n' "${summary[@]}"
if ((${#failed[@]})); then
  echo "FAIL: ${failed[*]}"
  exit 1
fi
echo "PASS"
