#!/usr/bin/env bash
# Always-on recording on the test bed: what the ring costs and how fast a cut is.
#   sudo tests/cluster/bench_ring.sh BUILD_DIR [STEPS] [COMPUTE_MS] [run-cluster options...]
# One job of STEPS steps (default 300) with `rankscope-record --ring 15m` on every node, the
# cut directory shared. While it runs: each recorder's resident memory (sampled every second),
# then one `rankscope-record cut` on node0 at two thirds of the job: the time until it prints
# its bundle, and until every node's bundle of that cut is there. After it: the ring's
# database size per node, i.e. bytes per hour at the job's event rate, and the recorders' CPU.
# COMPUTE_MS (default 40) sets the step rate: 4 gives about ten times the events per second.
set -euo pipefail
BUILD=${1:?usage: bench_ring.sh BUILD_DIR [STEPS] [COMPUTE_MS] [run-cluster options]}
STEPS=${2:-300}
COMPUTE_MS=${3:-40}
EXTRA=("${@:4}")
HERE=$(cd "$(dirname "$0")" && pwd)
REC=$BUILD/recorder/rankscope-record
OUT=$(mktemp -d /tmp/rankscope-bench-ring.XXXX)
trap 'rm -rf "$OUT"' EXIT

"$HERE/run-cluster" --build "$BUILD" --out "$OUT/run" --fault none --steps "$STEPS" \
  --compute-ms "$COMPUTE_MS" --ring 15m --no-tools "${EXTRA[@]}" >"$OUT/run.log" 2>&1 &
harness=$!

# The work directory (the nodes' ring directories are in it) and the recorders.
for ((i = 0; i < 300; i++)); do
  work=$(grep -o 'work=[^ ]*' "$OUT/run/harness.log" 2>/dev/null | head -n1 | cut -d= -f2 || true)
  [[ -n "$work" ]] && compgen -G "$work/node*/ring/recorder.pid" >/dev/null && break
  sleep 0.1
done
[[ -n "$work" ]] || { echo "no work directory: $(tail -n 5 "$OUT/run.log")" >&2; exit 1; }
nodes=$(compgen -G "$work/node*/ring" | wc -l)
pids=$(cat "$work"/node*/ring/recorder.pid)
start=$SECONDS

rss_max=0 db_bytes=0 job_s=0
steps_done() { { grep -ho '^step [0-9]*' "$OUT"/run/logs/rank0.log 2>/dev/null || true; } | tail -n1 | cut -d' ' -f2; }
cut_done=0
while kill -0 "$harness" 2>/dev/null; do
  for pid in $pids; do
    rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
    ((rss > rss_max)) && rss_max=$rss
  done
  s=$(steps_done)
  if ((!cut_done)) && [[ -n "$s" ]] && ((s >= STEPS * 2 / 3)); then
    cut_done=1
    t0=$(date +%s%N)
    bundle=$("$REC" cut --ring-dir "$work/node0/ring")
    t1=$(date +%s%N)
    dir=$(dirname "$bundle")
    for ((i = 0; i < 200; i++)); do
      (($(compgen -G "$dir/node*.rsb" | wc -l) == nodes)) && break
      sleep 0.05
    done
    t2=$(date +%s%N)
    got=$(compgen -G "$dir/node*.rsb" | wc -l)
    cut_bytes=$(du -cb "$dir"/node*.rsb | tail -n1 | cut -f1)
    ring_rows=$(for b in "$dir"/node*.rsb; do
      "$BUILD/analyzer/rankscope-analyze" query "$b" --format csv \
        "SELECT SUM(events) FROM sources" | tail -n1; done | awk '{s += $1} END {print s}')
  fi
  # The ring databases' size while the job still runs (the last reading before the stop).
  if compgen -G "$work/node*/ring/.*.db" >/dev/null; then
    db_bytes=$(du -cb "$work"/node*/ring/.*.db | tail -n1 | cut -f1)
    job_s=$((SECONDS - start))
  fi
  sleep 1
done
wait "$harness" || { echo "run-cluster failed: $(tail -n 5 "$OUT/run.log")" >&2; exit 1; }

echo "machine: $(nproc) CPUs, $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
echo "job: $nodes nodes, $STEPS steps, compute $COMPUTE_MS ms/step, ${job_s} s with recorders running"
grep -h 'used .* s of CPU' "$OUT/run/harness.log" | sed 's/^\[[^]]*\] /  /'
echo "recorder resident memory: at most $((rss_max / 1024)) MiB (sampled every second)"
echo "ring databases after ${job_s} s: $db_bytes bytes for $nodes nodes," \
  "$(awk -v b="$db_bytes" -v n="$nodes" -v s="$job_s" 'BEGIN {printf "%.1f", b / n / s * 3600 / 1048576}') MiB per node per hour of this job"
if ((cut_done)); then
  echo "cut on node0 at step >= $((STEPS * 2 / 3)): $(((t1 - t0) / 1000000)) ms until its bundle" \
    "was written; $(((t2 - t0) / 1000000)) ms until $got of $nodes nodes' bundles were there" \
    "($cut_bytes bytes compressed, $ring_rows rows)"
else
  echo "no cut: the job ended before step $((STEPS * 2 / 3))"
fi
grep -h '^done:' "$OUT"/run/logs/rank*.log | sed 's/.*steps_per_s=/steps_per_s=/' |
  awk -F= '{s += $2; n++} END {printf "trainer: %.3f steps/s per rank (mean of %d ranks)\n", s / n, n}'
