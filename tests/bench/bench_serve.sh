#!/usr/bin/env bash
# bench_serve.sh BUILD_DIR [ROUNDS] [SECONDS]: what serving costs the recorder's event path
# (a benchmark: prints numbers, asserts nothing; results in tests/bench/fleet.md). Runs
# tests/bench/bench_ringbuf_sqlite (BPF ring buffer -> event loop -> SQLite, as rankscope-record)
# in four configurations, interleaved, ROUNDS times:
#   plain     as rankscope-record without --serve (rollback journal, SQLite single-threaded)
#   wal       the same with the database in WAL mode (what --serve changes in the recording)
#   serve     as with --serve: WAL, a connection per thread, the HTTPS server up, no client
#   queried   as serve, and a workstation querying the live recording back to back over HTTPS
#             (a full scan of sched_events each time: the heaviest steady load a client makes)
# at the rates max, 500000 and 100000 events/s. Root (it loads a BPF program).
set -euo pipefail
BUILD=$(cd "$1" && pwd)
ROUNDS=${2:-3}
SECONDS_EACH=${3:-3}
BENCH=$BUILD/tests/bench/bench_ringbuf_sqlite
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d /tmp/bench-serve.XXXX)
trap 'rm -rf "$WORK"' EXIT
bash "$HERE/../../tests/fleet/make-certs.sh" "$WORK/certs" ca node=IP:127.0.0.1 ws=DNS:ws
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)," \
  "Linux $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-18s' "round config"
"$BENCH" --rates 1 --seconds 0 --dir "$WORK" 2>/dev/null | head -1
for ((r = 1; r <= ROUNDS; r++)); do
  for config in plain wal serve queried; do
    args=(--seconds "$SECONDS_EACH" --rates max,500000,100000 --dir "$WORK")
    case $config in
      wal) args+=(--journal WAL) ;;
      serve) args+=(--serve "$WORK/certs") ;;
      queried) args+=(--serve "$WORK/certs" --query-every 0) ;;
    esac
    "$BENCH" "${args[@]}" 2>/dev/null | sed -n '2,$p' | sed "s/^/round $r $config  /"
  done
done
