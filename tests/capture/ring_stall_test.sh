#!/usr/bin/env bash
# --cut-on-stall: an always-on recorder cuts by itself when a collective hangs. Two ranks of
# the test bed's NCCL (nccl_scenario hang: rank 1 stops, rank 0 blocks in the next
# AllReduce) under `rankscope-record --ring 30s --cut-on-stall 1s` (attached to the library
# from the start: the scenario makes its first calls at once): one cut with reason
# 'stall' appears, holding the hung call in flight, and the report on it names the hang.
# Usage: ring_stall_test.sh BUILD_DIR
set -euo pipefail
BUILD=$1
REC=$BUILD/recorder/rankscope-record
ANALYZE=$BUILD/analyzer/rankscope-analyze
SCENARIO=$BUILD/tests/capture/nccl_scenario

fail() { echo "FAIL: $*" >&2; exit 1; }
if [[ $EUID -ne 0 ]]; then
  [[ -n "${CI:-}" ]] && fail "needs root (CI is set: a skip fails the run)"
  echo "SKIP: needs root"; exit 77
fi

dir=$(mktemp -d /tmp/rs_ring_stall.XXXXXX)
rec_pid="" scen_pid=""
cleanup() {
  [[ -n "$scen_pid" ]] && kill -9 -- "-$scen_pid" 2>/dev/null || true
  [[ -n "$rec_pid" ]] && kill -9 "$rec_pid" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

# wait_for FILE TEXT SECONDS
wait_for() {
  for ((i = 0; i < $3 * 10; ++i)); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

"$REC" --ring 30s --cut-on-stall 1s --ring-dir "$dir/ring" --node kstall \
  --sources nccl,process --nccl-lib "$BUILD/tests/cluster/libnccl.so.2.28.9" 2>"$dir/rec.log" &
rec_pid=$!
wait_for "$dir/rec.log" "recording node" 20 || fail "recorder not ready: $(cat "$dir/rec.log")"

port=$((20000 + $$ % 20000))
NCCL_COMM_ID=127.0.0.1:$port RANKSCOPE_TESTLIB_TIMEOUT_S=60 setsid "$SCENARIO" hang \
  >"$dir/scenario.out" 2>&1 &
scen_pid=$!
wait_for "$dir/scenario.out" "hanging" 20 || fail "no hang: $(cat "$dir/scenario.out")"

wait_for "$dir/ring/cuts.log" "-stall-kstall/kstall.rsb" 15 ||
  fail "no stall cut within 15 s: $(cat "$dir/rec.log")"
cut=$(grep -- "-stall-kstall/kstall.rsb" "$dir/ring/cuts.log")
sleep 2  # the same stalled call must not be cut again
[[ $(grep -c -- "-stall-" "$dir/ring/cuts.log") -eq 1 ]] ||
  fail "more than one stall cut: $(cat "$dir/ring/cuts.log")"

q() { "$ANALYZE" query "$cut" "$1" --format csv | tail -n +2; }
[[ $(q "SELECT value FROM metadata WHERE key = 'cut_reason'") == stall ]] || fail "cut_reason"
[[ $(q "SELECT COUNT(*) FROM nccl_events WHERE op = 'ALL_REDUCE' AND seq = 2 AND
          state = 'in_flight' AND rank = 0") -eq 1 ]] ||
  fail "the hung AllReduce (seq 2, rank 0) is not in flight in the cut:
$(q "SELECT rank, op, seq, state FROM nccl_events")"
[[ $(q "SELECT COUNT(*) FROM nccl_events WHERE op = 'ALL_REDUCE' AND seq = 1 AND
          state = 'complete'") -eq 2 ]] || fail "the first AllReduce on both ranks"
[[ $(q "SELECT events FROM sources WHERE source = 'nccl'") -eq \
   $(q "SELECT COUNT(*) FROM nccl_events") ]] || fail "sources.events vs rows"

report=$("$ANALYZE" report "$cut" 2>&1) || true
grep -qi "hang" <<<"$report" || fail "the report does not name the hang: $report"
grep -q "rank 1" <<<"$report" || fail "the report does not name rank 1: $report"

kill -9 -- "-$scen_pid" 2>/dev/null || true
scen_pid=""
kill -INT "$rec_pid"
wait "$rec_pid" || fail "recorder exit status $?: $(cat "$dir/rec.log")"
rec_pid=""
# The hung call was cut once and is in the live recording once more only at the stop.
[[ $(grep -c -- "-stop/kstall.rsb" "$dir/ring/cuts.log") -eq 1 ]] || fail "no stop cut"
echo "ok: stall cut $(basename "$(dirname "$cut")")"
