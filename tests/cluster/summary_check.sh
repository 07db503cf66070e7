#!/usr/bin/env bash
# The verdict from summaries equals the verdict from the raw bundles.
#   summary_check.sh BUILD_DIR RUN_DIR [RAW_NODE]
# RUN_DIR is a run-cluster output (bundles/, report.json from the raw bundles). Every bundle is
# summarized into RUN_DIR/summaries (rankscope-analyze summarize, two at a time through
# xargs -P, as the man page shows), the summaries merged and reported on; the JSON report must equal report.json in
# everything but its input and the notes about the summaries themselves. With RAW_NODE that
# node's raw bundle is given too, after the summaries: it must be merged in place of its summary
# (merge_inputs says which), and the report must still be the same.
# Environment, for runs laid out otherwise: BUNDLES (the bundles' directory, default
# RUN_DIR/bundles; a stall cut's directory, say), REPORT (the raw bundles' JSON report, default
# RUN_DIR/report.json), EXTRA (one more input merged beside the bundles and the summaries alike:
# a directory of Flight Recorder dumps).
# Prints one line "ok: ..." or "FAIL: ..." (with the differences) and exits 0 or 1.
set -euo pipefail
BUILD=$1
RUN=$2
RAW_NODE=${3:-}
BUNDLES=${BUNDLES:-$RUN/bundles}
REPORT=${REPORT:-$RUN/report.json}
SUMS="$RUN/summaries"
rm -rf "$SUMS" && mkdir -p "$SUMS"
find "$BUNDLES" -name '*.rsb' -print0 |
  xargs -0 -P 2 -I {} sh -c '"$1" summarize -q "$2" -o "$3/$(basename "$2" .rsb).rss"' _ \
    "$BUILD/analyzer/rankscope-analyze" {} "$SUMS"
inputs=("$SUMS")
[[ -n "${EXTRA:-}" ]] && inputs+=("$EXTRA")
name=summaries
if [[ -n "$RAW_NODE" ]]; then
  inputs+=("$BUNDLES/$RAW_NODE.rsb")
  name=mixed
fi
# The clock reference of the raw merge: with no --reference the merge takes, among the nodes
# sharing rendezvous with the most others, the first input, and the raw bundle given last
# moves it (the same verdict in another frame, its numbers shifted within the clock bounds).
reference=$(python3 -c 'import json, sys
c = json.load(open(sys.argv[1])).get("clock") or {}
print(next((n for n, a in c.items() if a.get("method") == "reference"), ""))' "$REPORT")
[[ -n "$reference" ]] && inputs+=(--reference "$reference")
rm -f "$RUN/$name.rsdb" "$RUN/$name.json"
"$BUILD/merger/rankscope-merge" -q -o "$RUN/$name.rsdb" "${inputs[@]}" ||
  { echo "FAIL: rankscope-merge of the summaries failed"; exit 1; }
"$BUILD/analyzer/rankscope-analyze" report -q "$RUN/$name.rsdb" --format json \
  -o "$RUN/$name.json" || true
# The report took each communicator's call mode from the merge (call_modes_check.py), here and
# in the raw merge where the run left it beside its report.
checks=("$RUN/$name.rsdb" "$RUN/$name.json")
[[ -f "$RUN/merged.rsdb" && "$REPORT" == "$RUN/report.json" ]] &&
  checks+=("$RUN/merged.rsdb" "$REPORT")
for ((i = 0; i < ${#checks[@]}; i += 2)); do
  modes=$(python3 "$(dirname "$0")/call_modes_check.py" "${checks[i]}" "${checks[i + 1]}" 2>&1) ||
    { echo "FAIL: $modes"; exit 1; }
done
python3 "$(dirname "$0")/summary_compare.py" "$REPORT" "$RUN/$name.json" \
  "$RUN/$name.rsdb" "$BUNDLES" "$SUMS" $RAW_NODE
