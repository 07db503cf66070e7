#!/bin/bash
# What the recorder adds to every system call of the machine (the library-load tracepoint
# syscalls/sys_enter_mmap puts every task on the kernel's traced system-call path). Runs
# bench_syscall REPEATS times in each setting, the settings interleaved:
#   none       no recorder
#   recorder   rankscope-record of BUILD (whole host)
#   no-load-tp the same with --no-load-tracepoint
#   other      a second rankscope-record binary (OTHER_RECORD_BIN, e.g. a build without the
#              tracepoint), when given
#   bt-mmap    bpftrace with an empty program on tracepoint:syscalls:sys_enter_mmap (the
#              traced path alone, no recorder), when bpftrace is installed
# Needs root.
#
#   sudo tests/capture/bench_syscall.sh [BUILD_DIR] [REPEATS] [OTHER_RECORD_BIN]
set -euo pipefail
BUILD=${1:-build}
REPEATS=${2:-3}
OTHER=${3:-}
BENCH=$BUILD/tests/capture/bench_syscall
WORK=$(mktemp -d /tmp/rs_bench_syscall.XXXXXX)
BG_PID=
stop_bg() {
  if [ -n "$BG_PID" ]; then kill -INT "$BG_PID" 2>/dev/null || true; wait "$BG_PID" || true; fi
  BG_PID=
}
cleanup() { stop_bg; rm -rf "$WORK"; }
trap cleanup EXIT

wait_for() {  # wait_for FILE PATTERN: until the background program says it is ready (30 s)
  for _ in $(seq 1 300); do
    if grep -q "$2" "$1" 2>/dev/null; then return 0; fi
    if ! kill -0 "$BG_PID" 2>/dev/null; then cat "$1" >&2; return 1; fi
    sleep 0.1
  done
  echo "timed out waiting for '$2' in $1" >&2
  return 1
}

record() {  # record BIN [ARGS]: runs BIN on the whole host in the background until stop_bg
  "$@" --out "$WORK/bench.rsb" --node bench --duration 300s 2> "$WORK/record.log" &
  BG_PID=$!
  wait_for "$WORK/record.log" "recording node"
}

settings=(none recorder no-load-tp)
[ -n "$OTHER" ] && settings+=(other)
command -v bpftrace > /dev/null && settings+=(bt-mmap)
for rep in $(seq 1 "$REPEATS"); do
  for s in "${settings[@]}"; do
    rm -f "$WORK/bench.rsb"
    case $s in
      recorder) record "$BUILD/recorder/rankscope-record" ;;
      no-load-tp) record "$BUILD/recorder/rankscope-record" --no-load-tracepoint ;;
      other) record "$OTHER" ;;
      bt-mmap)
        # bpftrace needs tracefs: mounted in a private mount namespace where it is not.
        unshare -m --propagation private sh -c 'test -e /sys/kernel/tracing/events ||
          mount -t tracefs nodev /sys/kernel/tracing; exec bpftrace -e "tracepoint:syscalls:sys_enter_mmap { }"' \
          > "$WORK/bt.log" 2>&1 &
        BG_PID=$!
        wait_for "$WORK/bt.log" "Attaching"
        sleep 0.5 ;;
    esac
    echo "== run $rep: $s (load average $(cut -d' ' -f1 /proc/loadavg))"
    "$BENCH"
    stop_bg
  done
done
