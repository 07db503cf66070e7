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
# and the NCCL jobs' dumps (PyTorch 2.11.0+cu130, NCCL 2.28.9, one H200, tests/torch/jobs.py
# --backend nccl; dumps/nccl_SCENARIO/{pickle,json} written by the job, auto/ by PyTorch's
# watchdog on the timeout, gpunode.rsb the recording of the job), each format alone, the
# recording alone and the recording merged with the dumps:
#   nccl_healthy, nccl_slow      no hang (NCCL records completion: 'none'); slow: rank 3 late
#   nccl_skipped                 rank 2 never entered the last world all_reduce: rank 2
#   nccl_two_stalls              ranks 1 and 2 stalled in different tp groups: ranks 1 and 2
#   nccl_size_mismatch           rank 3 passed half the elements (all four hang): rank 3
#   nccl_crash                   rank 1 killed itself (no dump of it; a suspect): rank 1
#   nccl_p2p_stall               rank 2 stalled before its receive from rank 0: rank 2
#   nccl_p2p_dtype               rank 2 received float64 where rank 0 sent float32 (4 KiB):
#                                NCCL completed it and the job went on; no hang, nobody blamed,
#                                the pair's mismatch listed (transfer 3 from rank 0 to rank 2)
#   nccl_p2p_dtype_4m            the same with 4 MiB sent into 8 MiB: rank 2 waits in the receive,
#                                every rank times out: a mismatch, rank 2
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
for fmt in pickle json auto; do
  if [[ $fmt != auto ]]; then
    check nccl_healthy "$fmt" none "" ""
    check nccl_slow "$fmt" none "" 3
  fi
  check nccl_skipped "$fmt" hang 2 ""
  check nccl_two_stalls "$fmt" hang 1,2 ""
  check nccl_size_mismatch "$fmt" mismatch 3 ""
  check nccl_crash "$fmt" hang 1 ""
  check nccl_p2p_stall "$fmt" hang 2 ""
  [[ $fmt == auto ]] || check nccl_p2p_dtype "$fmt" none "" ""
  check nccl_p2p_dtype_4m "$fmt" mismatch 2 ""
done

# check_recorded SCENARIO INPUTS WANT_KIND WANT_CULPRITS: the report's hang verdict on the
# recording (with whatever else INPUTS names beside it)
check_recorded() {
  local sc=$1 inputs=$2 kind=$3 culprits=$4 db="$OUT/$1-rec-${2//\//_}.rsdb" rc=0 args=()
  for i in $inputs; do args+=("$DUMPS/$sc/$i"); done
  "$MERGE" -q -o "$db" "${args[@]}" >"$OUT/merge.log" 2>&1 ||
    { echo "FAIL: $sc $inputs: merge: $(tail -n 3 "$OUT/merge.log")"; failed=1; return; }
  "$ANALYZE" report "$db" --format json -o "$db.json" --fail-on hang >"$OUT/report.log" 2>&1 || rc=$?
  local got want_rc=4
  got=$(python3 - "$db.json" <<'PY'
import json, sys
hang = json.load(open(sys.argv[1])).get("hang") or {}
print("%s %s" % (hang.get("kind"), ",".join(str(r) for r in sorted(hang.get("culprit_ranks") or []))))
PY
)
  [[ -z "$culprits" ]] && want_rc=0
  if [[ "$got" == "$kind $culprits" && $rc -eq $want_rc ]]; then
    echo "ok: $sc ($inputs): $got, --fail-on hang exit $rc"
  else
    echo "FAIL: $sc ($inputs): got '$got' exit $rc, want '$kind $culprits' exit $want_rc"
    failed=1
  fi
}
# The recording alone: its calls in every communicator as the same wait-for graph
# (analyzer/recorded_wait_input.h) give the dumps' culprits.
check_recorded nccl_healthy gpunode.rsb none ""
check_recorded nccl_slow gpunode.rsb none ""
check_recorded nccl_skipped gpunode.rsb hang 2
check_recorded nccl_two_stalls gpunode.rsb hang 1,2
check_recorded nccl_size_mismatch gpunode.rsb mismatch 3
check_recorded nccl_crash gpunode.rsb hang 1
check_recorded nccl_p2p_stall gpunode.rsb hang 2
check_recorded nccl_healthy "gpunode.rsb pickle" none ""
check_recorded nccl_slow "gpunode.rsb pickle" none ""
check_recorded nccl_skipped "gpunode.rsb pickle" hang 2
check_recorded nccl_two_stalls "gpunode.rsb pickle" hang 1,2
check_recorded nccl_size_mismatch "gpunode.rsb pickle" mismatch 3
check_recorded nccl_crash "gpunode.rsb pickle" hang 1
check_recorded nccl_p2p_stall "gpunode.rsb pickle" hang 2
check_recorded nccl_p2p_dtype gpunode.rsb none ""
check_recorded nccl_p2p_dtype "gpunode.rsb pickle" none ""
check_recorded nccl_p2p_dtype_4m gpunode.rsb mismatch 2
check_recorded nccl_p2p_dtype_4m "gpunode.rsb pickle" mismatch 2

# The pair that differed, listed without a hang: from the dumps (their own engine) and from
# the recording alone (its sends and receives, paired by the recorder's per-peer numbering).
p2p_mismatch() {  # INPUTS KEY(flight_recorder|recording)
  local db="$OUT/p2p-dtype-${1//[ /]/_}.rsdb" args=()
  for i in $1; do args+=("$DUMPS/nccl_p2p_dtype/$i"); done
  "$MERGE" -q -o "$db" "${args[@]}" >"$OUT/merge.log" 2>&1 ||
    { echo "FAIL: p2p dtype $1: merge: $(tail -n 3 "$OUT/merge.log")"; failed=1; return; }
  "$ANALYZE" report "$db" --format json -o "$db.json" >"$OUT/report.log" 2>&1 ||
    { echo "FAIL: p2p dtype $1: report: $(tail -n 3 "$OUT/report.log")"; failed=1; return; }
  if python3 - "$db.json" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
hang = (r.get("flight_recorder") or {}).get("hang") if sys.argv[2] == "flight_recorder" else r.get("hang")
got = [(m["sender"], m["receiver"], m["seq"], m["field"], sorted(v["value"] for v in m["variants"]))
       for m in (hang or {}).get("mismatches", []) if m.get("sender") is not None]
sys.exit(0 if got == [(0, 2, 3, "datatype", ["float32", "float64"])] and not hang.get("detected")
         else 1)
PY
  then
    echo "ok: nccl_p2p_dtype ($1): the pair's mismatch listed, no hang"
  else
    echo "FAIL: nccl_p2p_dtype ($1): the pair's mismatch (0 -> 2, transfer 3, float32/float64) not listed alone"
    failed=1
  fi
}
p2p_mismatch pickle flight_recorder
p2p_mismatch json flight_recorder
p2p_mismatch gpunode.rsb recording
p2p_mismatch "gpunode.rsb pickle" recording  # listed once, though both found it

# A hang held in a send: nccl_p2p_stall's recording with rank 0's last send made still running
# on its device (in the job it completed: NCCL buffered the 4 KiB send without the posted
# receive, and rank 0 then waited in the dp all_reduce) and every collective after it removed.
# The wait-for graph over sends and receives names the stuck send and rank 2.
p2p_only() {
  local db="$OUT/p2p-only.rsdb" rc=0
  "$MERGE" -q -o "$db" "$DUMPS/nccl_p2p_stall/gpunode.rsb" >"$OUT/merge.log" 2>&1 ||
    { echo "FAIL: p2p only: merge: $(tail -n 3 "$OUT/merge.log")"; failed=1; return; }
  python3 - "$db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
pid = db.execute("SELECT pid FROM processes WHERE rank = 0").fetchone()[0]
ts, seq = db.execute("SELECT timestamp_ns, seq FROM gpu_ops WHERE pid = ? AND op = 'SEND'"
                     " ORDER BY timestamp_ns DESC LIMIT 1", (pid,)).fetchone()
db.execute("UPDATE gpu_ops SET state = 'started', device_end_ns = NULL"
           " WHERE pid = ? AND op = 'SEND' AND seq = ?", (pid, seq))
for table in ("gpu_ops", "nccl_events"):
    db.execute(f"DELETE FROM {table} WHERE op NOT IN ('SEND', 'RECV') AND op NOT LIKE 'COMM%'"
               " AND timestamp_ns > ?", (ts,))
db.commit()
PY
  "$ANALYZE" report "$db" --format json -o "$db.json" --fail-on hang >"$OUT/report.log" 2>&1 || rc=$?
  local got
  got=$(python3 - "$db.json" <<'PY'
import json, sys
hang = json.load(open(sys.argv[1])).get("hang") or {}
stuck = "p2p" if (hang.get("op") or "") in ("SEND", "RECV") else hang.get("op")
print("%s %s %s" % (hang.get("kind"), ",".join(str(r) for r in sorted(hang.get("culprit_ranks") or [])), stuck))
PY
)
  if [[ "$got" == "hang 2 p2p" && $rc -eq 4 ]]; then
    echo "ok: a hang held in a send: $got, --fail-on hang exit $rc"
  else
    echo "FAIL: a hang held in a send: got '$got' exit $rc, want 'hang 2 p2p' exit 4"
    failed=1
  fi
}
p2p_only

# check_stragglers SCENARIO WANT_RANKS: the ranks the recording alone names as stragglers of
# medium or high confidence (comma-separated, '' for none). On nccl_slow rank 3's lateness
# cascades into its peers' next groups (rank 2 waits for it in tp {2,3}, then enters dp {0,2}
# late): only its own lateness counts (analyzer/collectives.h), so it is the one named.
check_stragglers() {
  local sc=$1 want=$2 db="$OUT/$1-stragglers.rsdb"
  "$MERGE" -q -o "$db" "$DUMPS/$sc/gpunode.rsb" >"$OUT/merge.log" 2>&1 ||
    { echo "FAIL: $sc stragglers: merge: $(tail -n 3 "$OUT/merge.log")"; failed=1; return; }
  "$ANALYZE" report "$db" --format json -o "$db.json" >"$OUT/report.log" 2>&1 || true
  local got
  got=$(python3 - "$db.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
named = sorted({k for s in r.get("stragglers") or [] if s.get("confidence") in ("medium", "high")
                for k in (s.get("ranks") or [])})
print(",".join(str(k) for k in named))
PY
)
  if [[ "$got" == "$want" ]]; then
    echo "ok: $sc (gpunode.rsb): stragglers '$got'"
  else
    echo "FAIL: $sc (gpunode.rsb): stragglers '$got', want '$want'"
    failed=1
  fi
}
check_stragglers nccl_healthy ""
check_stragglers nccl_slow 3

# From the dumps alone the first line says who entered collectives last (rank 3 of nccl_slow),
# and nobody for nccl_healthy.
for sc in nccl_slow nccl_healthy; do
  db="$OUT/$sc-headline.rsdb"
  "$MERGE" -q -o "$db" "$DUMPS/$sc/pickle" >"$OUT/merge.log" 2>&1 &&
    "$ANALYZE" report "$db" -o "$db.txt" >"$OUT/report.log" 2>&1 ||
    { echo "FAIL: $sc headline: $(tail -n 2 "$OUT/merge.log" "$OUT/report.log")"; failed=1; continue; }
  line=$(head -n 1 "$db.txt")
  if [[ "$sc" == nccl_slow && "$line" == "NO HANG: "*"by the dumps, rank 3 entered "* ]] ||
    [[ "$sc" == nccl_healthy && "$line" == "NO HANG: "* && "$line" != *"entered"*"last"* ]]; then
    echo "ok: $sc: the first line from the dumps: $line"
  else
    echo "FAIL: $sc: the first line from the dumps: $line"
    failed=1
  fi
done

# The dumps hold what the job's truth.json says they were written by.
for sc in healthy skipped subgroup_stall size_mismatch slow; do
  grep -q '"torch_version": "2.14' "$DUMPS/$sc/truth.json" || { echo "FAIL: $sc: not PyTorch 2.14"; failed=1; }
done
for sc in healthy slow skipped two_stalls size_mismatch crash p2p_stall; do
  grep -q '"torch_version": "2.11' "$DUMPS/nccl_$sc/truth.json" ||
    { echo "FAIL: nccl_$sc: not PyTorch 2.11"; failed=1; }
done
exit $failed
