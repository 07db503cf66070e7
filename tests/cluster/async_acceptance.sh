#!/usr/bin/env bash
# Repeats the report acceptance checks (report_acceptance_test.sh) with the test bed as a GPU
# job (async collectives) over several rounds with fault nodes chosen at random, and prints a
# table per fault kind. RANKSCOPE_TEST_PLUGIN=off runs it without rankscope's NCCL profiler
# plugin (no device-side evidence: the slow device cannot be seen). A measurement, not a test.
#   sudo tests/cluster/async_acceptance.sh BUILD_DIR [ROUNDS] [FAULT...]
set -euo pipefail
BUILD=${1:?usage: async_acceptance.sh BUILD_DIR [ROUNDS] [FAULT...]}
ROUNDS=${2:-3}
shift $(($# >= 2 ? 2 : 1))
SRC=$(cd "$(dirname "$0")/../.." && pwd)
LOGS=$(mktemp -d /tmp/rankscope-async-acceptance.XXXX)
trap 'rm -rf "$LOGS"' EXIT
for ((round = 1; round <= ROUNDS; round++)); do
  RANKSCOPE_TEST_COLLECTIVES=async bash "$SRC/tests/cluster/report_acceptance_test.sh" \
    "$BUILD" "$SRC" "$@" >"$LOGS/round$round.log" 2>&1 || true
  echo "== round $round =="
  sed -n '/^---- summary/,$p' "$LOGS/round$round.log" | grep -E '^[a-z]+ +(node[0-9]+|-) '
done
echo "== checks passed per fault kind (async collectives, $ROUNDS rounds) =="
cat "$LOGS"/round*.log | sed -n '/^---- summary/,/^PASS\|^FAIL/p' |
  awk '$1 ~ /^(loss|cpu|io|slow|hang|none)$/ {n[$1]++; if ($7 == "ok:") ok[$1]++}
       END {for (f in n) printf "%-5s %d of %d\n", f, ok[f], n[f]}' | sort
