#!/usr/bin/env bash
# Cluster tests of the multi-group test bed (run-cluster --parallel): a Megatron-LM-shaped job,
# tp=2,pp=2,dp=2,ep=2 on 4 nodes x 2 ranks, recorded, with Flight Recorder dumps.
#   multigroup_test.sh BUILD_DIR SOURCE_DIR SCENARIO
# SCENARIO:
#   clean  no fault: every rank finishes with every check of the data it received passing; the
#          recording holds every group's communicator on every member with the operations the
#          schedule issues (counts per rank); no rank wrote a Flight Recorder dump
#   hang2  two faulty ranks in different roles at once: rank 1 stops before its first
#          tensor-parallel all-reduce of the fault step, rank 6 before its first pipeline
#          exchange; both struck (truth.json), the others wait where the schedule says
#          (recording and dumps), every rank's dump is readable as pickle and as JSON and
#          merges with the bundles, holding every group it is a member of
# clean also checks that rankscope-analyze names nobody on it and that its per-group view holds
# every compared collective once; the verdicts of faulty runs are
# checked by multigroup_verdicts.sh ('multigroup verdicts').
# Exit 77 = skipped (not root and CI unset). With CI set, a missing prerequisite fails.
set -euo pipefail

BUILD=$1
SRC=$2
SCENARIO=$3
HARNESS="$SRC/tests/cluster/run-cluster"
CHECKS="$SRC/tests/cluster/multigroup_checks.py"
NODES=4
RPN=2
STEPS=9  # the fault at step 3
SHAPE="tp=2,pp=2,dp=2,ep=2"

skip_or_fail() {
  if [[ -n "${CI:-}" ]]; then
    echo "FAIL (CI must not skip): $*"
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}
fail() {
  echo "FAIL [multigroup $SCENARIO]: $*"
  exit 1
}
((EUID == 0)) || skip_or_fail "needs root: run 'sudo meson test -C build --suite cluster'"
command -v python3 >/dev/null || skip_or_fail "python3 not installed"
for tool in tests/cluster/rankscope-trainer recorder/rankscope-record merger/rankscope-merge \
  analyzer/rankscope-analyze; do
  [[ -x "$BUILD/$tool" ]] || skip_or_fail "$tool is not built in $BUILD"
done

OUT=$(mktemp -d "/tmp/rankscope-multigroup-test.$$.XXXX")
# RANKSCOPE_KEEP_TEST_OUT=1 keeps the bundles, dumps and logs of the run for a look.
trap '[[ -n "${RANKSCOPE_KEEP_TEST_OUT:-}" ]] && echo "kept $OUT" || rm -rf "$OUT"' EXIT

run_harness() {  # args...: bounded in time; the harness must finish by itself
  local start=$SECONDS rc=0
  timeout -s INT 240 "$HARNESS" --build "$BUILD" --out "$OUT/run" --nodes "$NODES" \
    --ranks-per-node "$RPN" --steps "$STEPS" --parallel "$SHAPE" --compute-ms 20 --grad-mb 0.25 \
    --timeout 120 --fr-dumps --no-tools "$@" >"$OUT/harness.out" 2>&1 || rc=$?
  echo "harness: $* exit=$rc in $((SECONDS - start)) s"
  ((rc != 124)) || fail "the harness did not finish within 240 s"
  ((rc == 0)) || fail "harness failed: $(tail -n 5 "$OUT/harness.out")"
}

# The report on the raw bundles alone, then the same from the nodes' summaries
# (rankscope-analyze summarize): equal but for its input and the notes about the summaries.
check_summaries() {
  merge "$OUT/bundles.rsdb" "$OUT"/run/bundles/*.rsb
  "$BUILD/analyzer/rankscope-analyze" report -q "$OUT/bundles.rsdb" --format json \
    -o "$OUT/run/report.json" || true
  "$SRC/tests/cluster/summary_check.sh" "$BUILD" "$OUT/run" || fail "the summaries' report differs"
}

merge() {  # output inputs...
  local out=$1
  shift
  "$BUILD/merger/rankscope-merge" -q -o "$out" "$@" >"$OUT/merge.out" 2>&1 ||
    fail "rankscope-merge $*: $(tail -n 5 "$OUT/merge.out")"
}

case "$SCENARIO" in
  clean)
    run_harness --fault none
    merge "$OUT/merged.rsdb" "$OUT"/run/bundles/*.rsb
    python3 "$CHECKS" clean "$OUT/run" "$OUT/merged.rsdb" || fail "see above"
    # A clean run names nobody: no hang, no finding of medium or high confidence (the
    # recording's collectives, sends and receives of every group go through the hang engine).
    "$BUILD/analyzer/rankscope-analyze" report "$OUT/merged.rsdb" --format json \
      -o "$OUT/report.json" >"$OUT/analyze.out" 2>&1 ||
      fail "rankscope-analyze report: $(tail -n 5 "$OUT/analyze.out")"
    python3 - "$OUT/report.json" <<'PY' || fail "the clean run's report names someone, or its per-group view does not add up"
import json, sys
r = json.load(open(sys.argv[1]))
hang = r.get("hang") or {}
named = [(s.get("node"), s.get("ranks"), s.get("cause"), s.get("confidence"))
         for s in r.get("stragglers") or [] if s.get("confidence") in ("medium", "high")]
print("clean report: hang %s (%s); named %s" % (hang.get("detected"), hang.get("summary"), named))
# The per-group view holds every compared collective once, each member in each of its group's.
groups = r.get("per_group") or []
counted = sum(g["collectives"] for g in groups)
compared = r["collectives"] - r["timing"]["excluded_collectives"]
print("per group: %d groups, %d collectives (compared %d); across groups: %d ranks" %
      (len(groups), counted, compared, len(r.get("across_groups") or [])))
bad = [g["label"] for g in groups
       if len(g["members"]) < 2 or any(m["collectives"] != g["collectives"] for m in g["members"])]
ok = counted == compared and not bad and len(r.get("across_groups") or []) == r["ranks"]
if not ok:
    print("per-group view does not reconcile: groups with members missing a collective: %s" % bad)
sys.exit(1 if hang.get("detected") or named or not ok else 0)
PY
    check_summaries
    ;;
  hang2)
    run_harness --fault hang --fault-ranks 1,6 --fault-in tp,pp
    merge "$OUT/merged.rsdb" "$OUT"/run/bundles/*.rsb "$OUT/run/fr"
    merge "$OUT/dumps-pickle.rsdb" "$OUT/run/fr"
    merge "$OUT/dumps-json.rsdb" "$OUT/run/fr-json"
    python3 "$CHECKS" hang2 "$OUT/run" "$OUT/merged.rsdb" "$OUT/dumps-pickle.rsdb" \
      "$OUT/dumps-json.rsdb" || fail "see above"
    check_summaries
    ;;
  *) fail "unknown scenario" ;;
esac
echo "PASS [multigroup $SCENARIO]"
