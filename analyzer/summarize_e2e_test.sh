#!/bin/bash
# rankscope-analyze summarize end to end on synthetic clusters: each node's bundle summarized,
# the summaries merged, the report equal to the raw bundles' (summary_check.sh), for a straggler,
# a hang and a clean run; what a summary keeps reconciles with its bundle; the CLI's errors.
#   summarize_e2e_test.sh MAKE_SYNTH_CLUSTER RANKSCOPE_MERGE RANKSCOPE_ANALYZE SUMMARY_CHECK
set -euo pipefail
synth=$1 merge=$2 analyze=$3 summary_check=$4
build=$(dirname "$(dirname "$analyze")")
seed=${RANKSCOPE_TEST_SEED:-$(date +%s)}
echo "seed $seed (rerun with RANKSCOPE_TEST_SEED=$seed)"
RANDOM=$seed
dir=$(mktemp -d "${TMPDIR:-/tmp}/rankscope-summarize-e2e-XXXXXX")
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

for fault in cpu hang none; do
  k=$((RANDOM % 4))
  run="$dir/$fault"
  mkdir -p "$run/bundles"
  "$synth" "$run/bundles" --fault "$fault" --fault-node "$k" --seed "$seed" --collectives async \
    --offset "1=3000000,2=-2500000,3=7000000" > /dev/null
  "$merge" -q -o "$run/raw.rsdb" "$run/bundles"
  "$analyze" report -q "$run/raw.rsdb" --format json -o "$run/report.json" || true
  "$summary_check" "$build" "$run" || fail "fault $fault on node$k, from summaries"
  "$summary_check" "$build" "$run" "node$k" || fail "fault $fault on node$k, node$k raw"
done

# A window ending before the recording's end (just after its last NCCL call), on summaries of
# a hang: the report says what the culprits' "doing" line may miss (a summary keeps each
# thread's latest CUDA call of the whole recording); the raw merge's report has no such note.
to=$("$analyze" query "$dir/hang/raw.rsdb" "SELECT MAX(timestamp_ns) + 1 FROM nccl_events" \
  --format csv -q | tail -n 1)
for name in summaries raw; do
  "$analyze" report -q "$dir/hang/$name.rsdb" --to "$to" --format json -o "$dir/hang/to-$name.json" || true
done
python3 - "$dir/hang/to-summaries.json" "$dir/hang/to-raw.json" <<'PY' || fail "--to on summaries of a hang"
import json, sys
s, r = (json.load(open(f)) for f in sys.argv[1:3])
note = lambda rep: [n for n in rep.get("notes", []) if n.startswith("--to on nodes merged from summaries")]
assert s["hang"]["detected"], s["verdict"]
assert note(s), s.get("notes")
assert not note(r), r.get("notes")
print("ok: --to on summaries of a hang: the note says what the doing line may miss")
PY

# What a summary keeps reconciles with its bundle: the run-queue waits of the job's processes
# and nothing else of sched_events; the CUDA calls that may wait for the device, those in
# flight and each thread's latest, and no other launch or asynchronous call; every NCCL call
# and GPU operation; its metadata's counts are its rows.
b="$dir/cpu/bundles/node0.rsb" s="$dir/cpu/summaries/node0.rss"
q() { "$analyze" query "$1" "$2" --format csv -q | tail -n 1; }
jobs="(SELECT pid FROM nccl_events UNION SELECT pid FROM gpu_ops UNION SELECT pid FROM processes WHERE rank IS NOT NULL)"
for sql in "SELECT COUNT(*) FROM nccl_events" "SELECT COUNT(*) FROM gpu_ops" \
  "SELECT COUNT(*) FROM tcp_events" "SELECT COUNT(*) FROM block_events" \
  "SELECT COUNT(*) FROM sched_events WHERE event = 'runq_latency' AND pid IN $jobs" \
  "SELECT COUNT(*) FROM cuda_events WHERE api LIKE '%Synchronize%' OR api = 'cudaMemcpy'" \
  "SELECT COUNT(*) FROM cuda_events WHERE state <> 'complete' OR duration_ns IS NULL" \
  "SELECT group_concat(api || '@' || ts, ',') FROM (SELECT api, MAX(timestamp_ns) AS ts FROM
     cuda_events GROUP BY pid, tid ORDER BY pid, tid)"; do
  [[ $(q "$b" "$sql") == $(q "$s" "$sql") ]] || fail "$sql: bundle $(q "$b" "$sql"), summary $(q "$s" "$sql")"
done
[[ $(q "$s" "SELECT COUNT(*) FROM sched_events WHERE event <> 'runq_latency' OR pid NOT IN $jobs") == 0 ]] ||
  fail "the summary kept off-CPU intervals or other processes' waits"
[[ $(q "$s" "SELECT COUNT(*) FROM cuda_events WHERE api IN ('cudaLaunchKernel', 'cudaMemcpyAsync',
     'cudaStreamWaitEvent')") -le $(q "$s" "SELECT COUNT(DISTINCT pid || '/' || tid) FROM cuda_events") ]] ||
  fail "the summary kept kernel launches or asynchronous calls beyond each thread's latest"
[[ $(q "$b" "SELECT COUNT(*) FROM cuda_events WHERE api = 'cudaLaunchKernel'") -gt 0 ]] ||
  fail "the synthetic bundle has no kernel launches to leave out"
kept=$(q "$s" "SELECT COUNT(*) FROM sched_events")
read_=$(q "$b" "SELECT COUNT(*) FROM sched_events")
if ((kept < read_)); then
  [[ $(q "$s" "SELECT value FROM metadata WHERE key = 'summary_rows.sched_events'") == "$kept/$read_" ]] ||
    fail "summary_rows.sched_events does not say $kept/$read_"
fi
[[ $(q "$s" "SELECT value FROM metadata WHERE key = 'summary_of'") == "$(realpath "$b")" ]] ||
  fail "summary_of is not the bundle's absolute path"
echo "ok: node0's summary keeps $kept of $read_ scheduler rows, every NCCL call, GPU operation, retransmit and block request"

# A corrupt summary among good ones: the merge skips it naming it (exit 3), the report names it
# and the other nodes still give their verdict (the CPU-starved node of the cpu run).
mkdir "$dir/bad"
cp "$dir"/cpu/summaries/*.rss "$dir/bad/"
k=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["stragglers"][0]["node"])' "$dir/cpu/report.json")
victim=node0; [[ $k == node0 ]] && victim=node1
truncate -s 5000 "$dir/bad/$victim.rss"
set +e
"$merge" -q -o "$dir/bad.rsdb" "$dir/bad" 2> "$dir/bad.err"; rc=$?
set -e
((rc == 3)) && grep -q "skipped $dir/bad/$victim.rss" "$dir/bad.err" ||
  fail "a truncated summary: merge exit $rc, $(cat "$dir/bad.err")"
"$analyze" report -q "$dir/bad.rsdb" --format json -o "$dir/bad.json" || true
python3 - "$dir/bad.json" "$k" "$victim" <<'PY' || fail "a truncated summary: the verdict or the note is missing"
import json, sys
r, node, victim = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
assert r["stragglers"] and r["stragglers"][0]["node"] == node, r["verdict"]
assert any(n.startswith("input ") and victim + ".rss" in n and "missing from this report" in n
           for n in r["notes"]), r["notes"]
PY
echo "ok: a truncated summary is named and skipped; $k is still the verdict"

# The CLI: a merged database and a summary are refused (1); -o with two bundles and an existing
# output are usage errors (2); one bad bundle among good ones is named, the others written (3).
set +e
"$analyze" summarize -q "$dir/cpu/raw.rsdb" -o "$dir/x.rss" 2> "$dir/err"; rc=$?
((rc == 1)) && grep -q "is a merged database" "$dir/err" || fail "merged input: exit $rc, $(cat "$dir/err")"
"$analyze" summarize -q "$s" -o "$dir/x.rss" 2> "$dir/err"; rc=$?
((rc == 1)) && grep -q "is already a summary" "$dir/err" || fail "summary input: exit $rc, $(cat "$dir/err")"
"$analyze" summarize -q "$b" "$dir/cpu/bundles/node1.rsb" -o "$dir/x.rss" 2> "$dir/err"; rc=$?
((rc == 2)) || fail "-o with two bundles: exit $rc"
"$analyze" summarize -q "$b" -o "$s" 2> "$dir/err"; rc=$?
((rc == 2)) && grep -q "exists" "$dir/err" || fail "existing output: exit $rc, $(cat "$dir/err")"
mkdir "$dir/some" && cp "$dir/cpu/bundles/node1.rsb" "$dir/some/" && echo junk > "$dir/some/bad.rsb"
"$analyze" summarize -q "$dir/some/bad.rsb" "$dir/some/node1.rsb" 2> "$dir/err"; rc=$?
set -e
((rc == 3)) && grep -q "bad.rsb" "$dir/err" && [[ -f "$dir/some/node1.rss" && ! -e "$dir/some/bad.rss" ]] ||
  fail "one bad bundle of two: exit $rc, $(cat "$dir/err"), $(ls "$dir/some")"
echo "ok: the CLI's errors"
