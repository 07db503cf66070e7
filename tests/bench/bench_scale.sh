#!/usr/bin/env bash
# Summaries at scale: a synthetic GPU job (tests/support/make-synth-cluster, async collectives,
# the profiler plugin's rows, one node CPU-starved) of NODES nodes x RANKS ranks x STEPS steps,
# with LAUNCHES kernel launches and EXTRA off-CPU intervals per rank and step. Prints, per node
# count: the bundles' rows and bytes; summarize throughput (rows read per CPU second) and the
# summaries' share of the bundles' bytes; the reduce (merge of the summaries, then the report):
# wall and CPU seconds, peak memory, the merged database's size; and whether the verdict equals
# the one from the raw bundles (RAW_UP_TO nodes at most: the raw merge is what does not scale).
#   bench_scale.sh BUILD_DIR [NODES...]         (default 16 64 256)
# Environment: RANKS (8) STEPS (60) LAUNCHES (50) EXTRA (20) RAW_UP_TO (64) OUT (a temp dir,
# removed unless KEEP=1).
set -euo pipefail
BUILD=$(realpath "$1")
shift
NODE_COUNTS=("$@")
((${#NODE_COUNTS[@]})) || NODE_COUNTS=(16 64 256)
RANKS=${RANKS:-8} STEPS=${STEPS:-60} LAUNCHES=${LAUNCHES:-50} EXTRA=${EXTRA:-20}
RAW_UP_TO=${RAW_UP_TO:-64}
OUT=${OUT:-$(mktemp -d /tmp/rankscope-bench-scale.XXXX)}
[[ -n "${KEEP:-}" ]] || trap 'rm -rf "$OUT"' EXIT
SYNTH=$BUILD/tests/support/make-synth-cluster
ANALYZE=$BUILD/analyzer/rankscope-analyze
MERGE=$BUILD/merger/rankscope-merge
measure() {  # label command...: "wall cpu rss_mib" of the command into $OUT/time.LABEL
  /usr/bin/time -f "%e %U %S %M" -o "$OUT/time.$1" "${@:2}"
  awk '{printf "%.2f %.2f %.0f\n", $1, $2 + $3, $4 / 1024}' "$OUT/time.$1"
}
rows() {  # bundle -> rows of its event tables
  "$ANALYZE" query "$1" "SELECT (SELECT COUNT(*) FROM nccl_events) + (SELECT COUNT(*) FROM
    gpu_ops) + (SELECT COUNT(*) FROM cuda_events) + (SELECT COUNT(*) FROM sched_events) +
    (SELECT COUNT(*) FROM tcp_events) + (SELECT COUNT(*) FROM block_events)" --format csv -q |
    tail -n 1
}
echo "machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); $RANKS ranks per node, $STEPS steps, $LAUNCHES launches and $EXTRA off-CPU intervals per rank and step"
printf '%6s %12s %10s %11s %9s %8s %8s %8s %8s %8s %s\n' nodes bundle_rows bundle_MB \
  rows/cpu_s summary_% merge_s merge_cpu report_s rep_cpu peak_MiB "verdict (raw)"
for n in "${NODE_COUNTS[@]}"; do
  d="$OUT/n$n"
  rm -rf "$d" && mkdir -p "$d/bundles" "$d/summaries"
  "$SYNTH" "$d/bundles" --nodes "$n" --ranks "$RANKS" --steps "$STEPS" --collectives async \
    --fault cpu --fault-node $((n / 3)) --launches "$LAUNCHES" --extra-sched "$EXTRA" --seed 7 >/dev/null
  brows=$(( $(rows "$d/bundles/node0.rsb") * n ))  # every node alike but the fault node
  bbytes=$(du -cb "$d"/bundles/*.rsb | tail -n 1 | cut -f 1)
  read -r _ scpu _ < <(measure sum.$n sh -c 'for b in "$1"/bundles/*.rsb; do
    "$2" summarize -q "$b" -o "$1/summaries/$(basename "$b" .rsb).rss"; done' _ "$d" "$ANALYZE")
  sbytes=$(du -cb "$d"/summaries/*.rss | tail -n 1 | cut -f 1)
  read -r mw mc mm < <(measure merge.$n "$MERGE" -q -o "$d/sum.rsdb" "$d/summaries")
  read -r rw rc rm_ < <(measure report.$n sh -c '"$1" report -q "$2" --format json -o "$3" || true' \
    _ "$ANALYZE" "$d/sum.rsdb" "$d/sum.json")
  verdict=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); s=(r.get("stragglers") or [{}])[0]
print("%s %s %s" % (r.get("verdict_kind"), s.get("node"), s.get("cause")))' "$d/sum.json")
  raw="-"
  if ((n <= RAW_UP_TO)); then
    "$MERGE" -q -o "$d/raw.rsdb" "$d/bundles"
    "$ANALYZE" report -q "$d/raw.rsdb" --format json -o "$d/raw.json" || true
    raw=$(python3 "$(dirname "$0")/../cluster/summary_compare.py" "$d/raw.json" "$d/sum.json" \
      "$d/sum.rsdb" "$d/bundles" "$d/summaries" | cut -c 1-4)
  fi
  peak=$((mm > rm_ ? mm : rm_))
  printf '%6d %12d %10.1f %11.0f %9.2f %8s %8s %8s %8s %8d %s\n' "$n" "$brows" \
    "$(echo "$bbytes / 1000000" | bc -l)" "$(echo "$brows / $scpu" | bc -l)" \
    "$(echo "100 * $sbytes / $bbytes" | bc -l)" "$mw" "$mc" "$rw" "$rc" "$peak" "$verdict ($raw)"
  echo "       merged db $(du -m "$d/sum.rsdb" | cut -f 1) MB"
  rm -rf "$d/bundles" "$d/raw.rsdb"
done
