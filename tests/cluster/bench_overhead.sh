#!/usr/bin/env bash
# Recorder overhead on the test bed: trainer steps/s without recorders and with one recorder
# per node in each configuration, in interleaved rounds (every round runs the baseline and each
# configuration once, in an order that rotates from round to round). Prints every run, then per
# configuration the overhead against the same round's baseline: mean over rounds with its 95 %
# confidence interval (Student's t), and the medians.
#   sudo tests/cluster/bench_overhead.sh BUILD_DIR [ROUNDS] [STEPS] [run-cluster options...]
# RANKSCOPE_BENCH_CONFIGS: 'label=rankscope-record options' entries separated by ';' (default
# 'all=': every source). The baseline is run-cluster --no-record with the same options, e.g.
#   RANKSCOPE_BENCH_CONFIGS='all=;no-gpu=--no-gpu;setup-calls=--nccl-calls setup' \
#     sudo tests/cluster/bench_overhead.sh build 10 60 --collectives async
# Run it on an otherwise idle machine: the figure is only as good as the quiet it ran in.
set -euo pipefail
BUILD=${1:?usage: bench_overhead.sh BUILD_DIR [ROUNDS] [STEPS] [run-cluster options]}
ROUNDS=${2:-10}
STEPS=${3:-60}
EXTRA=("${@:4}")
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(mktemp -d /tmp/rankscope-bench.XXXX)
trap 'rm -rf "$OUT"' EXIT

run() {  # label run-cluster-args... -> prints mean steps/s over ranks
  local label=$1
  shift
  local start=$SECONDS
  "$HERE/run-cluster" --build "$BUILD" --out "$OUT/$label" --fault none --steps "$STEPS" \
    --no-tools "${EXTRA[@]}" "$@" >"$OUT/$label.log" 2>&1 ||
    { echo "run $label failed: $(tail -n 3 "$OUT/$label.log")" >&2; exit 1; }
  local sps
  sps=$(grep -h '^done:' "$OUT/$label"/logs/rank*.log |
    sed 's/.*steps_per_s=//' | awk '{s += $1; n++} END {printf "%.4f", s / n}')
  echo "$label steps_per_s=$sps wall_s=$((SECONDS - start))" >&2
  rm -rf "${OUT:?}/$label"
  echo "$sps"
}

IFS=';' read -r -a CONFIGS <<<"${RANKSCOPE_BENCH_CONFIGS-all=}"
labels=(baseline)
declare -A args=([baseline]=--no-record)
for c in "${CONFIGS[@]}"; do
  labels+=("${c%%=*}")
  args[${c%%=*}]=${c#*=}
done
echo "machine: $(nproc) CPUs, $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
declare -A results
for ((r = 0; r < ROUNDS; r++)); do
  n=${#labels[@]}
  for ((i = 0; i < n; i++)); do
    label=${labels[(i + r) % n]}
    if [[ $label == baseline ]]; then
      results[$label.$r]=$(run "$label.$r" --no-record)
    else
      results[$label.$r]=$(run "$label.$r" --record-args "${args[$label]}")
    fi
  done
done
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
for label in "${labels[@]}"; do
  printf '%s' "$label:"
  for ((r = 0; r < ROUNDS; r++)); do printf ' %s' "${results[$label.$r]}"; done
  echo
done
for label in "${labels[@]:1}"; do
  pairs=()
  for ((r = 0; r < ROUNDS; r++)); do pairs+=("${results[baseline.$r]} ${results[$label.$r]}"); done
  printf '%s\n' "${pairs[@]}" | python3 -c '
import math, statistics, sys
label, options = sys.argv[1], sys.argv[2]
pairs = [tuple(map(float, l.split())) for l in sys.stdin if l.strip()]
d = [(a - b) / a * 100 for a, b in pairs]  # overhead in % of the same round baseline
n = len(d)
# two-sided 95 % Student t quantiles for n - 1 degrees of freedom (1..30), normal beyond
t = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
     2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060,
     2.056, 2.052, 2.048, 2.045, 2.042]
mean = statistics.fmean(d)
half = t[min(n - 2, len(t) - 1)] * statistics.stdev(d) / math.sqrt(n) if n > 1 else float("nan")
base = statistics.median(a for a, _ in pairs)
rec = statistics.median(b for _, b in pairs)
print("%s (rankscope-record %s): overhead %.2f %% +- %.2f %% (95 %% CI %.2f .. %.2f %%, %d rounds);"
      " medians %.3f -> %.3f steps/s" % (label, options or "with every source", mean, half,
                                          mean - half, mean + half, n, base, rec))
' "$label" "${args[$label]}"
done
