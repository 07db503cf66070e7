#!/usr/bin/env bash
# rankscope on Flight Recorder dumps that real PyTorch wrote (2.14.1, Debian sid's python3-torch,
# gloo backend, 4 ranks: tests/torch/jobs.py run in the root tests/torch/setup_chroot.sh builds;
# the dumps are kept in tests/torch/dumps/SCENARIO/{pickle,json} with the job's truth.json).
# Every scenario in both formats: merged alone, reported, and the hang verdict checked against
# what the job did:
#   healthy, slow     no hang and nobody blamed: gloo records no completion, so the dumps cannot
#                     tell a clean end from every rank timing out alike ('undetermined'), and
#                     --fail-on hang exits 0; slow: rank 3 (2 s late into every collective) is
#                     the one late entry, by its entries' creation times, and no other job has one
#   skipped           rank 2 never entered the last world all_reduce: the culprit is rank 2
#   subgroup_stall    rank 1 stalled before a tp all_reduce: the culprit is rank 1
#   size_mismatch     rank 3 passed half the elements: a mismatch naming rank 3
#   torch_dumps_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD=$1
SRC=$2
DUMPS=$SRC/tests/torch/dumps
MERGE=$BUILD/merger/rankscope-merge
ANALYZE=$BUILD/analyzer/rankscope-analyze
OUT=$(mktemp -d /tmp/rankscope-torch-dumps.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
failed=0

# check SCENARIO FORMAT WANT_KIND WANT_CULPRITS WANT_LATE (comma-separated, '' for none)
check() {
  local sc=$1 fmt=$2 kind=$3 culprits=$4 late=$5 db="$OUT/$1-$2.rsdb" rc=0
  "$MERGE" -q -o "$db" "$DUMPS/$sc/$fmt" >"$OUT/merge.log" 2>&1 ||
    { echo "FAIL: $sc $fmt: merge: $(tail -n 3 "$OUT/merge.log")"; failed=1; return; }
  "$ANALYZE" report "$db" --format json -o "$db.json" --fail-on hang >"$OUT/report.log" 2>&1 || rc=$?
  local got
  got=$(python3 - "$db.json" <<'PY'
import json, sys
fr = json.load(open(sys.argv[1])).get("flight_recorder") or {}
hang = fr.get("hang") or {}
print("%s %s %s late:%s" % (hang.get("kind"), ",".join(str(r) for r in sorted(hang.get("culprit_ranks") or [])),
                    "detected" if hang.get("detected") else "not-detected",
                    ",".join(str(l["rank"]) for l in fr.get("late_entries") or [])))
PY
)
  local want_detected=detected want_rc=4
  [[ -z "$culprits" ]] && want_detected=not-detected want_rc=0
  if [[ "$got" == "$kind $culprits $want_detected late:$late" && $rc -eq $want_rc ]]; then
    echo "ok: $sc ($fmt): $got, --fail-on hang exit $rc"
  else
    echo "FAIL: $sc ($fmt): got '$got' exit $rc, want '$kind $culprits $want_detected late:$late' exit $want_rc"
    failed=1
  fi
}

for fmt in pickle json; do
  check healthy "$fmt" undetermined "" ""
  check slow "$fmt" undetermined "" 3
  check skipped "$fmt" hang 2 ""
  check subgroup_stall "$fmt" hang 1 ""
  check size_mismatch "$fmt" mismatch 3 ""
done
# The dumps hold what the job's truth.json says they were written by.
for sc in healthy skipped subgroup_stall size_mismatch slow; do
  grep -q '"torch_version": "2.14' "$DUMPS/$sc/truth.json" || { echo "FAIL: $sc: not PyTorch 2.14"; failed=1; }
done
exit $failed
