#!/usr/bin/env bash
# `rankscope-analyze schema` and the query views on synthetic bundles and a merged db: the
# tables with row counts and meanings, one table's columns, an unknown table (exit 1, the
# tables listed), usage errors (exit 2), the shared --help layout; query's JSON numbers are the
# shortest that read back the same; communicators appear as the same hex text in the views and
# the report, merge's output, the trace and the views; the views give UTC times.
set -uo pipefail
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
analyze=$build/analyzer/rankscope-analyze
merge=$build/merger/rankscope-merge

"$build/tests/support/make-synth-cluster" "$work" --fault loss --fault-node 1 --steps 12 >/dev/null ||
  { echo "FAIL: make-synth-cluster"; exit 1; }
inputs=(node0.rsb)
if [[ -x $merge ]]; then
  "$merge" -q -o merged.rsdb node*.rsb >/dev/null 2>&1 || fail "merge"
  inputs+=(merged.rsdb)
fi

for in in "${inputs[@]}"; do
  out=$("$analyze" schema "$in" 2>&1); rc=$?
  [[ $rc == 0 ]] || fail "schema $in exits $rc: $out"
  head -n 1 <<<"$out" | grep -q -E '^table +rows +meaning$' || fail "schema $in: header: $(head -n 1 <<<"$out")"
  n=$("$analyze" query "$in" "SELECT COUNT(*) FROM nccl_events" --format csv | tail -n 1)
  grep -q -E "^nccl_events +$n +[A-Za-z]" <<<"$out" || fail "schema $in: no 'nccl_events $n meaning' line"
  for t in metadata clock_refs sources tcp_events sched_events nccl_events_v tcp_events_v; do
    grep -q -E "^$t +[0-9]+ +[A-Za-z]" <<<"$out" || fail "schema $in: no line for $t"
  done
  out=$("$analyze" schema "$in" nccl_events 2>&1); rc=$?
  [[ $rc == 0 ]] || fail "schema $in nccl_events exits $rc"
  head -n 1 <<<"$out" | grep -q -E '^column +type +meaning$' || fail "schema $in nccl_events: header"
  grep -q -E '^comm_id_hash +INTEGER +splitmix64 fold of the ncclUniqueId' <<<"$out" ||
    fail "schema $in nccl_events: comm_id_hash line: $(grep comm_id_hash <<<"$out")"
  out=$("$analyze" schema "$in" nccl_events_v 2>&1)
  grep -q -E '^time_utc +TEXT +[A-Za-z]' <<<"$out" || fail "schema $in nccl_events_v: no time_utc"
  out=$("$analyze" schema "$in" no_such_table 2>&1); rc=$?
  [[ $rc == 1 ]] || fail "schema $in no_such_table exits $rc, not 1"
  grep -q 'no_such_table' <<<"$out" && grep -q 'nccl_events' <<<"$out" ||
    fail "schema $in no_such_table: the message names neither it nor the tables: $out"
  # Views: hex communicators as the report shows them, UTC times with nanoseconds.
  t=$("$analyze" query "$in" "SELECT time_utc FROM nccl_events_v LIMIT 1" --format csv | tail -n 1)
  [[ $t =~ ^20[0-9][0-9]-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]\.[0-9]{9}Z$ ]] ||
    fail "query $in: time_utc '$t' is not ISO 8601 UTC with nanoseconds"
  hex=$("$analyze" query "$in" "SELECT comm_id_hex FROM nccl_events_v WHERE comm_id_hash IS NOT NULL
        AND comm_id_hex = printf('0x%016x', comm_id_hash) LIMIT 1" --format csv | tail -n 1)
  [[ $hex =~ ^0x[0-9a-f]{16}$ ]] || fail "query $in: comm_id_hex '$hex'"
  # Shortest round-trip numbers in JSON.
  out=$("$analyze" query "$in" "SELECT 8.32 AS x, 0.1 + 0.2 AS y, 7 AS i" --format json)
  [[ $out == *'"x": 8.32, "y": 0.30000000000000004, "i": 7'* ]] || fail "query $in json: $out"
done

# A hang's communicator: the same hex text in the report (text and JSON) as in the views.
if [[ -x $merge ]]; then
  mkdir -p hang
  "$build/tests/support/make-synth-cluster" hang --fault hang --fault-node 2 >/dev/null || fail "make-synth-cluster hang"
  "$merge" -o hang.rsdb hang >merge.log 2>&1 || fail "merge hang"
  report_hex=$("$analyze" report hang.rsdb --format json 2>/dev/null |
    grep -o -E '"comm_id_hex":"0x[0-9a-f]{16}"' | head -n 1 | cut -d'"' -f4)
  [[ -n $report_hex ]] || fail "no comm_id_hex in the hang report's JSON"
  "$analyze" report hang.rsdb >report.txt 2>/dev/null
  grep -q "communicator $report_hex" report.txt ||
    fail "the text report does not name communicator $report_hex"
  n=$("$analyze" query hang.rsdb "SELECT COUNT(*) FROM nccl_events_v WHERE comm_id_hex = '$report_hex'" \
    --format csv | tail -n 1)
  [[ $n -gt 0 ]] || fail "report's comm_id_hex $report_hex is not in nccl_events_v.comm_id_hex"
  grep -q "communicator $report_hex: " merge.log ||
    fail "merge's output does not name communicator $report_hex: $(grep -m 1 communicator merge.log)"
  if [[ -x $build/exporter/rankscope-export ]]; then
    "$build/exporter/rankscope-export" hang.rsdb -o trace.json >/dev/null 2>&1 || fail "export"
    grep -q "\"comm_id_hex\": *\"$report_hex\"" trace.json ||
      fail "the trace's NCCL events have no comm_id_hex $report_hex"
  fi
fi

# Usage errors exit 2; help in the shared layout.
for cmd in "$analyze schema" "$analyze schema --no-such-flag node0.rsb" "$analyze schema node0.rsb a b"; do
  $cmd >/dev/null 2>&1; rc=$?
  [[ $rc == 2 ]] || fail "'$cmd' exits $rc, not 2 (usage)"
done
for flag in -h --help; do
  out=$("$analyze" schema $flag 2>&1); rc=$?
  [[ $rc == 0 ]] || fail "schema $flag exits $rc"
  for part in "^usage: rankscope-analyze schema" "^options:$" "^examples:$" "^exit status: 0 done" "^See rankscope-analyze"; do
    grep -q -E "$part" <<<"$out" || fail "schema $flag: no '$part' line"
  done
done
"$analyze" --help | grep -q 'rankscope-analyze schema' || fail "rankscope-analyze --help does not name schema"

# The events of a process carry its rank in the views (processes.rank), every one of them.
for in in "${inputs[@]}"; do
  n=$("$analyze" query -q "$in" "SELECT COUNT(*) FROM sched_events_v WHERE rank IS NOT NULL" --format csv | tail -n 1)
  [[ "$n" =~ ^[0-9]+$ && $n -gt 0 ]] || fail "$in: sched_events_v has no rank ($n)"
  off=$("$analyze" query -q "$in" "SELECT COUNT(*) FROM sched_events_v v LEFT JOIN processes p
        ON p.node = v.node AND p.pid = v.pid WHERE v.rank IS NOT p.rank" --format csv | tail -n 1)
  [[ "$off" == 0 ]] || fail "$in: $off sched_events_v rows whose rank is not their process's"
  "$analyze" schema -q "$in" | grep -q -E '^sched_events_v +[0-9]+ +view: sched_events with rank, time_utc' ||
    fail "$in: schema does not list sched_events_v's rank"
done

[[ $fails == 0 ]] || { echo "$fails failure(s)"; exit 1; }
echo "PASS"
