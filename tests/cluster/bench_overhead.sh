#!/usr/bin/env bash
# Recorder overhead on the test bed: trainer steps/s with and without rankscope-record on
# every node, alternating runs (fault none). Prints one line per run and the medians.
#   sudo tests/cluster/bench_overhead.sh BUILD_DIR [PAIRS] [STEPS] [run-cluster options...]
# RANKSCOPE_BENCH_A / RANKSCOPE_BENCH_B: the run-cluster options of the two sides (default
# '--no-record' and ''), e.g. A='--plugin off' B='--plugin on' for what the NCCL profiler
# plugin and its capture add to a recorded run.
set -euo pipefail
BUILD=${1:?usage: bench_overhead.sh BUILD_DIR [PAIRS] [STEPS]}
PAIRS=${2:-3}
STEPS=${3:-60}
EXTRA=("${@:4}")
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(mktemp -d /tmp/rankscope-bench.XXXX)
trap 'rm -rf "$OUT"' EXIT

run() {  # label extra-args... -> prints mean steps/s over ranks
  local label=$1
  shift
  local start=$SECONDS
  "$HERE/run-cluster" --build "$BUILD" --out "$OUT/$label" --fault none --steps "$STEPS" \
    --no-tools "${EXTRA[@]}" "$@" >/dev/null 2>&1
  local sps
  sps=$(grep -h '^done:' "$OUT/$label"/logs/rank*.log |
    sed 's/.*steps_per_s=//' | awk '{s += $1; n++} END {printf "%.3f", s / n}')
  echo "$label steps_per_s=$sps wall_s=$((SECONDS - start))" >&2
  echo "$sps"
}

read -r -a A_ARGS <<<"${RANKSCOPE_BENCH_A---no-record}"
read -r -a B_ARGS <<<"${RANKSCOPE_BENCH_B-}"
base=()
rec=()
for ((i = 0; i < PAIRS; i++)); do
  base+=("$(run "a$i" "${A_ARGS[@]}")")
  rec+=("$(run "b$i" "${B_ARGS[@]}")")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
mb=$(median "${base[@]}")
mr=$(median "${rec[@]}")
echo "A (${A_ARGS[*]:-as given}): ${base[*]} (median $mb steps/s)"
echo "B (${B_ARGS[*]:-as given}): ${rec[*]} (median $mr steps/s)"
awk -v b="$mb" -v r="$mr" 'BEGIN {printf "overhead: %.2f%% (median vs median)\n", (b - r) / b * 100}'
