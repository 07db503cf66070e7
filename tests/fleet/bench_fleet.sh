#!/usr/bin/env bash
# bench_fleet.sh BUILD_DIR [ROUNDS]: how rankscope-fleet's time grows with the number of nodes
# (a benchmark: prints numbers, asserts nothing; results in tests/bench/fleet.md). 32
# rankscope-serve nodes, each in a network namespace of its own behind one bridge, serve a
# synthetic bundle (make-synth-cluster --nodes 32); the workstation, in another namespace,
# runs `fleet query` and `fleet collect` on the first 1, 8 and 32 of them, ROUNDS times each,
# with every node asked at once (the default) and one at a time (--parallel 1); then a query of
# all 32 with one node stalled (SIGSTOP) and --timeout 2s: bounded by that node's time limit,
# not by the number of nodes. Root.
set -euo pipefail
BUILD=$(cd "$1" && pwd)
ROUNDS=${2:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
((EUID == 0)) || { echo "bench_fleet.sh: run as root (network namespaces)" >&2; exit 1; }
SERVE=$BUILD/recorder/serve/rankscope-serve
FLEET=$BUILD/analyzer/fleet/rankscope-fleet
TAG=rb$$
SUBNET=10.80
NODES=32
WORK=$(mktemp -d /tmp/bench-fleet.XXXX)
declare -a NETNS=() PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  for ns in "${NETNS[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
addr() { echo "$SUBNET.$((1 + $1 / 200)).$((10 + $1 % 200))"; }
source "$HERE/netns.sh"
netns_switch "$TAG"
join() { netns_join "$TAG" "$1" "$2" "$3/16"; }  # ns index address
join "$TAG-ws" ws "$SUBNET.0.2"
specs=(ws=DNS:workstation)
for ((k = 0; k < NODES; k++)); do
  join "$TAG-n$k" "$k" "$(addr "$k")"
  specs+=("node$k=IP:$(addr "$k")")
done
bash "$HERE/make-certs.sh" "$WORK/certs" ca "${specs[@]}"
mkdir -p "$WORK/synth"
"$BUILD/tests/support/make-synth-cluster" "$WORK/synth" --nodes "$NODES" --steps 200 >/dev/null
for ((k = 0; k < NODES; k++)); do
  mkdir -p "$WORK/n$k"
  mv "$WORK/synth/node$k.rsb" "$WORK/n$k/"
  ip netns exec "$TAG-n$k" "$SERVE" -q --listen "$(addr "$k"):7443" --node "node$k" \
    --cert "$WORK/certs/node$k.pem" --key "$WORK/certs/node$k.key" --ca "$WORK/certs/ca.pem" \
    --max-connections 2 "$WORK/n$k" 2>/dev/null &
  PIDS+=($!)
done
for ((k = 0; k < NODES; k++)); do
  for _ in $(seq 100); do
    ip netns exec "$TAG-ws" bash -c "exec 3<>/dev/tcp/$(addr "$k")/7443" 2>/dev/null && break
    sleep 0.05
  done
done
for n in 1 8 32; do
  : >"$WORK/nodes$n.txt"
  for ((k = 0; k < n; k++)); do echo "node$k $(addr "$k"):7443" >>"$WORK/nodes$n.txt"; done
done
TLS=(--ca "$WORK/certs/ca.pem" --cert "$WORK/certs/ws.pem" --key "$WORK/certs/ws.key")
SQL="SELECT op, COUNT(*) AS calls, AVG(duration_ns) AS avg_ns FROM nccl_events GROUP BY op"
CPU_LOG=$WORK/cpu.txt
ms() {  # command...: its wall time in ms (it must succeed); its CPU time (user + system, ms)
  local t0=$EPOCHREALTIME t
  t=$({ TIMEFORMAT='%U %S'; time "$@" >/dev/null 2>&1; } 2>&1) ||
    { echo "bench_fleet.sh: failed: $*" >&2; exit 1; }
  awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", (b - a) * 1000 }'
  awk '{ printf "%.0f\n", ($1 + $2) * 1000 }' <<<"$t" >>"$CPU_LOG"
}
cpu() {  # the median CPU ms of the commands since the last call
  sort -n "$CPU_LOG" | awk '{ v[NR] = $1 } END { printf "%.0f", v[int((NR + 1) / 2)] }'
  : >"$CPU_LOG"
}
stats() {  # numbers...: median min max
  printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { printf "%8.1f %8.1f %8.1f", v[int((NR + 1) / 2)], v[1], v[NR] }'
}
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)," \
  "Linux $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg); $ROUNDS rounds; ms: median min max"
printf '%-8s %-6s %-10s %26s %10s %26s\n' command nodes rows "all at once (wall)" "(CPU)" \
  "one at a time (--parallel 1)"
for n in 1 8 32; do
  par=() seq=()
  for ((r = 0; r < ROUNDS; r++)); do
    par+=("$(ms ip netns exec "$TAG-ws" "$FLEET" query --nodes "$WORK/nodes$n.txt" "${TLS[@]}" -q "$SQL")")
  done
  par_cpu=$(cpu)
  for ((r = 0; r < ROUNDS; r++)); do
    seq+=("$(ms ip netns exec "$TAG-ws" "$FLEET" query --nodes "$WORK/nodes$n.txt" "${TLS[@]}" -q --parallel 1 "$SQL")")
  done
  rows=$(ip netns exec "$TAG-ws" "$FLEET" query --nodes "$WORK/nodes$n.txt" "${TLS[@]}" -q -f csv "$SQL" | tail -n +2 | wc -l)
  : >"$CPU_LOG"
  printf '%-8s %-6s %-10s %26s %10s %26s\n' query "$n" "$rows" "$(stats "${par[@]}")" "$par_cpu" \
    "$(stats "${seq[@]}")"
done
for n in 1 8 32; do
  par=() seq=()
  for ((r = 0; r < ROUNDS; r++)); do
    rm -rf "$WORK/c"
    par+=("$(ms ip netns exec "$TAG-ws" "$FLEET" collect --nodes "$WORK/nodes$n.txt" "${TLS[@]}" -q \
      --since 2000-01-01T00:00:00Z --until 2100-01-01T00:00:00Z "$WORK/c")")
  done
  par_cpu=$(cpu)
  for ((r = 0; r < ROUNDS; r++)); do
    rm -rf "$WORK/c"
    seq+=("$(ms ip netns exec "$TAG-ws" "$FLEET" collect --nodes "$WORK/nodes$n.txt" "${TLS[@]}" -q \
      --parallel 1 --since 2000-01-01T00:00:00Z --until 2100-01-01T00:00:00Z "$WORK/c")")
  done
  bytes=$(du -cb "$WORK"/c/*.rsb | tail -1 | cut -f1)
  : >"$CPU_LOG"
  printf '%-8s %-6s %-10s %26s %10s %26s\n' collect "$n" "${bytes}B" "$(stats "${par[@]}")" \
    "$par_cpu" "$(stats "${seq[@]}")"
done
# One stalled node among 32: the query ends at its --timeout, with the 31 others' rows (exit 3).
kill -STOP "${PIDS[31]}"
stalled=()
for ((r = 0; r < 3; r++)); do
  t0=$EPOCHREALTIME
  rc=0
  ip netns exec "$TAG-ws" "$FLEET" query --nodes "$WORK/nodes32.txt" "${TLS[@]}" -q --timeout 2s \
    "$SQL" >/dev/null 2>&1 || rc=$?
  ((rc == 3)) || { echo "bench_fleet.sh: the stalled query exited $rc, not 3" >&2; exit 1; }
  stalled+=("$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", (b - a) * 1000 }')")
done
kill -CONT "${PIDS[31]}"
printf '%-8s %-6s %-10s %26s\n' query "32" "1 stalled" "$(stats "${stalled[@]}")"
