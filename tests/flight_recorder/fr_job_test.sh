#!/usr/bin/env bash
# Flight Recorder dumps of whole jobs (make_job_dumps.py) through rankscope-merge and
# rankscope-export: what the merge stores for the analysis to read the states right, and the
# trace of a database of dumps alone.
#  1. Megatron-shaped NCCL jobs (tp, pp, dp, ep groups, ep made by split), healthy and with one
#     and two faulty ranks in different roles, pickle and JSON, timing on and off, a wrapped
#     ring: every group with its listed members, backend / timing / ring per dump, a missing
#     dump said;
#  2. gloo-shaped jobs: pg_config keyed by '' used to make a phantom group '' while the real
#     group '0' had no members, silently: the default group gets its members, the unnamed
#     entry is no group, and groups whose members no dump lists are kept with unknown members
#     and a warning naming them;
#  3. rankscope-export of those databases: one event per entry, a track per rank and group;
#     dumps without entries: refused, exit 1, nothing written.
# Needs python3 (it writes the dumps); without it the test skips, but fails when CI is set.
set -uo pipefail
GEN=$1 MERGE=$2 EXPORT=$3
if ! command -v python3 >/dev/null; then
  echo "python3 missing: it writes the test dumps"
  [[ -n "${CI:-}" ]] && exit 1
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
check() {  # check WHAT EXIT-STATUS
  if [[ $2 -ne 0 ]]; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi
}
# q DB SQL: one query's rows, '|'-separated (the merged database is SQLite).
q() {
  python3 - "$1" "$2" <<'PY'
import sqlite3, sys
for row in sqlite3.connect(sys.argv[1]).execute(sys.argv[2]):
    print("|".join("" if v is None else str(v) for v in row))
PY
}

# 1. NCCL, Megatron-shaped: 8 ranks, tp=2 pp=2 dp=2 ep=2: 1 + 4 dp + 4 tp + 4 pp + 4 ep groups.
n=0
for spec in "healthy||on|pickle" "hang-ep|--fault hang:5:ep|on|pickle" \
  "two|--fault hang:5:ep --fault mismatch:2:tp|off|json" \
  "crash-pp|--fault crash:6:pp --fault hang:1:dp|on|pickle" "wrapped|--buffer 40|on|json"; do
  IFS='|' read -r name faults timing format <<<"$spec"
  d="$work/nccl-$name"
  # shellcheck disable=SC2086
  entries=$(python3 "$GEN" "$d" --format "$format" --timing "$timing" $faults \
    --truth "$d.truth" | awk '{n += $2} END {print n}')
  "$MERGE" -q -o "$d.rsdb" "$d" >"$d.log" 2>&1
  rc=$?
  [[ $rc -eq 0 ]]
  check "nccl $name: merged (exit $rc)" $?
  [[ $(q "$d.rsdb" "SELECT COUNT(*) FROM fr_entries") == "$entries" ]]
  check "nccl $name: $entries entries, one row each" $?
  [[ $(q "$d.rsdb" "SELECT COUNT(*), SUM(members = 'listed'), SUM(ranks = '[]')
                    FROM process_groups") == "17|17|0" ]]
  check "nccl $name: 17 groups, every one with its listed members" $?
  [[ $(q "$d.rsdb" "SELECT ranks FROM process_groups
                    WHERE pg_name = '0:split:[1, 3]'") == "[1,3]" ]]
  check "nccl $name: the expert group made by split has its members" $?
  want_ring=complete
  [[ $name == wrapped ]] && want_ring=wrapped
  [[ $(q "$d.rsdb" "SELECT DISTINCT backend || ' ' || timing || ' ' || ring FROM fr_dumps") == \
    "nccl $timing $want_ring" ]]
  check "nccl $name: every dump says nccl, timing $timing, ring $want_ring" $?
  ((n++))
done
d="$work/nccl-wrapped"
[[ $(q "$d.rsdb" "SELECT COUNT(*) FROM fr_dumps WHERE entries = 40 AND first_record_id > 0
                  AND last_record_id = first_record_id + 39") == 8 ]]
check "a ring of 40 entries: every dump keeps its last 40, record ids from where it wrapped" $?
d="$work/nccl-crash-pp"
grep -qF "no Flight Recorder dump for rank(s) 6 of 8" "$d.log"
check "the crashed rank's missing dump is said" $?
[[ $(q "$d.rsdb" "SELECT COUNT(*) FROM fr_dumps") == 7 ]]
check "the crashed rank has no dump" $?

# 2. gloo: healthy (the default group only), then with subgroups {0,1} and {2,3}.
for format in pickle json; do
  d="$work/gloo-healthy-$format"
  python3 "$GEN" "$d" --backend gloo --format "$format" >/dev/null
  "$MERGE" -o "$d.rsdb" "$d" >"$d.log" 2>&1
  rc=$?
  [[ $rc -eq 0 ]] && ! grep -q "warning" "$d.log"
  check "gloo healthy $format: merged without a warning (exit $rc)" $?
  [[ $(q "$d.rsdb" "SELECT pg_name || ' ' || ranks || ' ' || members FROM process_groups") == \
    "0 [0,1,2,3] default_group" ]]
  check "gloo healthy $format: one group '0' of ranks 0-3, no phantom group ''" $?
  [[ $(q "$d.rsdb" "SELECT DISTINCT backend || ' ' || timing FROM fr_dumps") == "gloo none" ]]
  check "gloo healthy $format: backend gloo, timing none" $?
  [[ $(q "$d.rsdb" "SELECT COUNT(*), SUM(state = 'enqueued' AND retired = 1),
                    SUM(is_p2p) FROM fr_entries") == "48|48|0" ]]
  check "gloo healthy $format: every entry scheduled and retired, no send/recv" $?
done
d="$work/gloo-sub"
python3 "$GEN" "$d" --backend gloo --subgroups --fault hang:2:world >/dev/null
"$MERGE" -q -o "$d.rsdb" "$d" >"$d.log" 2>&1
check "gloo with subgroups: merged (exit $?)" $?
[[ $(q "$d.rsdb" "SELECT group_concat(pg_name || ':' || members || ':' || ranks_seen, ' ')
                  FROM process_groups") == "0:unknown:[0,1,2,3] 1:unknown:[0,1] 2:unknown:[2,3]" ]]
check "gloo with subgroups: every group kept, members unknown, the ranks seen in it" $?
grep -qF "warning: process group '1' (undefined): no dump's pg_config lists its members" \
  "$d.log" && grep -qF "ranks with entries in it: 0-1;" "$d.log"
check "gloo with subgroups: a warning names each group of unknown members" $?
grep -qF "warning: Flight Recorder rank(s) 0-3: pg_config holds an entry under an empty name" \
  "$d.log"
check "gloo with subgroups: the unnamed pg_config entry said once for ranks 0-3" $?

# 3. Export.
for db in nccl-two gloo-healthy-pickle gloo-sub; do
  d="$work/$db"
  "$EXPORT" -q -o "$d.json" --format json "$d.rsdb" 2>"$d.export.err"
  rc=$?
  python3 - "$d.json" "$d.rsdb" <<'PY'
import json, sqlite3, sys
trace = json.load(open(sys.argv[1]))
events = [e for e in trace["traceEvents"] if e.get("cat") == "flight_recorder"]
db = sqlite3.connect(sys.argv[2])
want = db.execute("SELECT COUNT(*) FROM fr_entries").fetchone()[0]
slices = [e for e in events if e["ph"] == "X"]
done = db.execute("SELECT COUNT(*) FROM fr_entries"
                  " WHERE time_discovered_completed_ns IS NOT NULL").fetchone()[0]
names = {e["args"]["name"] for e in trace["traceEvents"]
         if e.get("ph") == "M" and e.get("name") in ("process_name", "thread_name")}
ranks = db.execute("SELECT COUNT(DISTINCT rank) FROM fr_dumps").fetchone()[0]
problems = []
if len(events) != want:
    problems.append(f"{len(events)} events for {want} entries")
if len(slices) != done:
    problems.append(f"{len(slices)} slices for {done} discovered completions")
if sum(n.endswith("(Flight Recorder dump)") for n in names) != ranks:
    problems.append(f"rank tracks: {sorted(names)}")
if not any(n.startswith("Flight Recorder pg ") for n in names):
    problems.append(f"no group track: {sorted(names)}")
if problems:
    print(*problems, sep="\n")
    sys.exit(1)
PY
  check "export $db: exit $rc, an event per entry, a track per rank and group" $(($? + rc))
done
d="$work/empty"
mkdir -p "$d"
python3 - "$d" <<'PY'
import pickle, sys
for r in range(2):
    with open(f"{sys.argv[1]}/nccl_trace_rank_{r}", "wb") as f:
        f.write(pickle.dumps({"version": "2.10", "pg_config": {}, "pg_status": {}}, protocol=2))
PY
"$MERGE" -q -o "$d.rsdb" "$d" >/dev/null 2>&1
"$EXPORT" -o "$d.pftrace" "$d.rsdb" >"$d.log" 2>&1
rc=$?
[[ $rc -eq 1 && ! -e "$d.pftrace" ]] && grep -qF "nothing to export" "$d.log"
check "export of dumps without entries: refused (exit $rc), nothing written" $?
exit $fail
