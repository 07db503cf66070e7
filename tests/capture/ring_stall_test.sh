#!/usr/bin/env bash
# --cut-on-stall: an always-on recorder cuts by itself when a collective hangs, under
# `rankscope-record --ring 30s --cut-on-stall 1s` (attached to the test bed's NCCL from the
# start: the scenarios make their first calls at once). Two ranks, rank 1 stops and rank 0
# goes on into the next AllReduce:
#  - blocking (nccl_scenario hang): rank 0's host call never returns;
#  - as on a GPU node (gpu_scenario hang, asynchronous collectives, rankscope's profiler
#    plugin): rank 0's calls return, its device waits; only the plugin's slots show it.
# Each time one cut with reason 'stall' appears, holding the hung operation in flight, and
# the report on it names the hang and rank 1. In the first case a second hang, after the
# first one's ranks were killed, is cut again (a dead thread's call is no stall).
# Usage: ring_stall_test.sh BUILD_DIR
set -euo pipefail
BUILD=$1
REC=$BUILD/recorder/rankscope-record
ANALYZE=$BUILD/analyzer/rankscope-analyze
SCENARIO=$BUILD/tests/capture/nccl_scenario
GPU_SCENARIO=$BUILD/tests/capture/gpu_scenario
PLUGIN=$BUILD/recorder/plugin/libnccl-profiler-rankscope.so
NCCL_LIB=$BUILD/tests/cluster/libnccl.so.2.28.9

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

# stall_case NODE SOURCES IN_FLIGHT_SQL COMMAND...: records with --cut-on-stall while
# COMMAND hangs; checks the stall cut. IN_FLIGHT_SQL counts the hung operation in the cut.
stall_case() {
  local node=$1 sources=$2 in_flight_sql=$3
  shift 3
  local ring=$dir/ring-$node
  "$REC" --ring 30s --cut-on-stall 1s --ring-dir "$ring" --node "$node" \
    --sources "$sources" --nccl-lib "$NCCL_LIB" 2>"$dir/$node.log" &
  rec_pid=$!
  wait_for "$dir/$node.log" "recording node" 20 || fail "recorder not ready: $(cat "$dir/$node.log")"

  port=$((20000 + ($$ + RANDOM) % 20000))
  NCCL_COMM_ID=127.0.0.1:$port RANKSCOPE_TESTLIB_TIMEOUT_S=60 setsid "$@" \
    >"$dir/$node.out" 2>&1 &
  scen_pid=$!
  wait_for "$dir/$node.out" "hanging" 30 || fail "$node: no hang: $(cat "$dir/$node.out")"

  wait_for "$ring/cuts.log" "-stall-$node/$node.rsb" 15 ||
    fail "$node: no stall cut within 15 s: $(cat "$dir/$node.log")"
  cut=$(grep -- "-stall-$node/$node.rsb" "$ring/cuts.log")
  sleep 2  # the same stalled operation must not be cut again
  [[ $(grep -c -- "-stall-" "$ring/cuts.log") -eq 1 ]] ||
    fail "$node: more than one stall cut: $(cat "$ring/cuts.log")"

  q() { "$ANALYZE" query "$cut" "$1" --format csv | tail -n +2; }
  [[ $(q "SELECT value FROM metadata WHERE key = 'cut_reason'") == stall ]] || fail "cut_reason"
  [[ $(q "$in_flight_sql") -ge 1 ]] || fail "$node: the hung operation is not in flight in the cut:
$(q "SELECT rank, op, seq, state FROM nccl_events")"
  [[ $(q "SELECT COUNT(*) FROM nccl_events WHERE op = 'ALL_REDUCE' AND seq = 1 AND
            state = 'complete'") -eq 2 ]] || fail "$node: the first AllReduce on both ranks:
$(q "SELECT rank, pid, op, seq, state, comm_id_hash FROM nccl_events")"
  for source in ${sources//,/ }; do
    [[ $(q "SELECT events FROM sources WHERE source = '$source'") -eq \
       $(q "SELECT COUNT(*) FROM $(table_of "$source")") ]] || fail "$node: $source events vs rows"
  done

  report=$("$ANALYZE" report "$cut" 2>&1) || true
  grep -qi "hang" <<<"$report" || fail "$node: the report does not name the hang: $report"
  grep -q "rank 1" <<<"$report" || fail "$node: the report does not name rank 1: $report"

  kill -9 -- "-$scen_pid" 2>/dev/null || true
  scen_pid=""
  if [[ -n "${AGAIN:-}" ]]; then
    # The killed rank's call stays in the probe's slots (written as in flight at the end) but
    # is no stall: a new hang after the join window (10 s) is cut again.
    sleep 11
    NCCL_COMM_ID=127.0.0.1:$((port + 1)) RANKSCOPE_TESTLIB_TIMEOUT_S=60 setsid "$@" \
      >"$dir/$node.again.out" 2>&1 &
    scen_pid=$!
    wait_for "$dir/$node.again.out" "hanging" 30 || fail "$node: no second hang"
    for ((i = 0; i < 150; ++i)); do
      (($(grep -c -- "-stall-$node/$node.rsb" "$ring/cuts.log") == 2)) && break
      sleep 0.1
    done
    [[ $(grep -c -- "-stall-$node/$node.rsb" "$ring/cuts.log") -eq 2 ]] ||
      fail "$node: the second hang was not cut: $(cat "$ring/cuts.log") $(cat "$dir/$node.log")"
    kill -9 -- "-$scen_pid" 2>/dev/null || true
    scen_pid=""
  fi
  kill -INT "$rec_pid"
  wait "$rec_pid" || fail "$node: recorder exit status $?: $(cat "$dir/$node.log")"
  rec_pid=""
  [[ $(grep -c -- "-stop/$node.rsb" "$ring/cuts.log") -eq 1 ]] || fail "$node: no stop cut"
  echo "ok: $node: stall cut $(basename "$(dirname "$cut")")"
}

table_of() {
  case $1 in
    nccl) echo nccl_events ;; gpu) echo gpu_ops ;; process) echo process_events ;;
    *) fail "table_of $1" ;;
  esac
}

AGAIN=1 stall_case kblock nccl,process \
  "SELECT COUNT(*) FROM nccl_events WHERE op = 'ALL_REDUCE' AND seq = 2 AND state = 'in_flight'
   AND rank = 0" \
  "$SCENARIO" hang
NCCL_PROFILER_PLUGIN=$PLUGIN stall_case kgpu nccl,gpu,process \
  "SELECT COUNT(*) FROM gpu_ops WHERE rank = 0 AND state IN ('enqueued', 'started')" \
  "$GPU_SCENARIO" hang
