#!/bin/bash
# Attach latency after a late dlopen: how long after a process loads libnccl does the recorder
# record its first call? Runs rankscope-record on the whole host, then N processes one after
# another, each loading its own copy of the test bed's libnccl.so.2 (a new file each time, so
# every load needs a new attach) and calling ncclGroupStart + ncclGroupEnd every 100 us for
# 300 ms. Prints, per process, the ms from the load to the first recorded call, and the calls
# recorded. Needs root.
#
#   sudo tests/capture/bench_attach.sh [BUILD_DIR] [N] [RECORD_BIN] [RECORDER_ARGS...]
# e.g. RECORDER_ARGS --no-load-tracepoint: rescans only.
set -euo pipefail
BUILD=${1:-build}
N=${2:-10}
REC=${3:-$BUILD/recorder/rankscope-record}
shift $(($# < 3 ? $# : 3))
DRIVER=$BUILD/tests/capture/dlopen_driver
LIB=$BUILD/tests/cluster/libnccl.so.2
ANALYZE=$BUILD/analyzer/rankscope-analyze
WORK=$(mktemp -d /tmp/rs_bench_attach.XXXXXX)
REC_PID=
cleanup() {
  if [ -n "$REC_PID" ]; then kill -INT "$REC_PID" 2>/dev/null || true; wait "$REC_PID" || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
for i in $(seq 1 "$N"); do
  mkdir -p "$WORK/$i"
  cp "$LIB" "$WORK/$i/libnccl.so.2"
done
"$REC" "$@" --out "$WORK/bench.rsb" --node bench --duration 120s 2> "$WORK/record.log" &
REC_PID=$!
sleep 3  # the recorder's start-up
for i in $(seq 1 "$N"); do
  "$DRIVER" attach-latency "$WORK/$i/libnccl.so.2" > "$WORK/out.$i" &
  pid=$!
  wait "$pid"
  echo "$pid $(awk '/loaded_ns/ {print $2}' "$WORK/out.$i")" >> "$WORK/loads"
  sleep 0.2
done
kill -INT "$REC_PID"
wait "$REC_PID"
REC_PID=
echo "process  ms_from_load_to_first_recorded_call  calls_recorded"
while read -r pid t0; do
  row=$("$ANALYZE" query "$WORK/bench.rsb" --format csv \
    "SELECT (MIN(timestamp_ns) - $t0) / 1e6, COUNT(*) FROM nccl_events WHERE pid = $pid" | tail -1)
  echo "$pid  ${row/,/  }"
done < "$WORK/loads"
