#!/usr/bin/env bash
# The command-line convention every tool keeps (rscore/cli.h, README "Command line"): usage
# errors exit 2 with one line ending "(see 'TOOL --help')", --help and -h print the same layout
# (usage, options, examples, exit status, man page) in every tool and in analyze itself, '-' is
# standard output for -o (refused by record: a bundle is a file) and standard input for query's
# SQL, report --fail-on exits 4 when it finds what was asked for, every tool's last line says
# what was written and how long it took unless -q, -q hides that line and progress but never a
# warning, and no tool leaves a file named '-'.
set -uo pipefail
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
record=$build/recorder/rankscope-record
merge=$build/merger/rankscope-merge
analyze=$build/analyzer/rankscope-analyze
export=$build/exporter/rankscope-export

"$build/tests/support/make-synth-cluster" "$work" --fault loss --fault-node 1 --steps 12 >/dev/null ||
  { echo "FAIL: make-synth-cluster"; exit 1; }

# --help / -h: one layout (the recorder's help is written by hand in the same shape).
for cmd in "$record" "$merge" "$export" "$analyze" "$analyze query" "$analyze schema" \
           "$analyze report" "$analyze diff" "$analyze summarize" "$analyze mcp"; do
  for flag in -h --help; do
    out=$($cmd $flag 2>&1); rc=$?
    [[ $rc == 0 ]] || fail "$cmd $flag exits $rc"
    for part in "^usage: " "^options:$" "^examples:$" "^exit status: 0 done, 1 error, 2 usage error" "^See rankscope-"; do
      grep -q -E "$part" <<<"$out" || fail "$cmd $flag: no '$part' line"
    done
    grep -q -F '[ --' <<<"$out" && fail "$cmd $flag: Boost's raw option layout"
    grep -q -E '^  -o, --out ' <<<"$out" || [[ "$cmd" == "$analyze" || "$cmd" == *mcp ]] ||
      fail "$cmd $flag: no '-o, --out'"
    grep -q -E '^  -q, --quiet ' <<<"$out" || [[ "$cmd" == "$analyze" ]] || fail "$cmd $flag: no '-q, --quiet'"
    # Only the codes the command can return: 3 from merge, 4 from report (and analyze's own).
    exit_line=$(grep -E '^exit status: ' <<<"$out")
    [[ "$exit_line" != *" 3 "* || "$cmd" == "$merge" || "$cmd" == *summarize ]] ||
      fail "$cmd $flag: lists 3: $exit_line"
    [[ "$exit_line" != *" 4 "* || "$cmd" == *report || "$cmd" == "$analyze" ]] ||
      fail "$cmd $flag: lists 4: $exit_line"
  done
done
grep -q -E "^  rankscope-analyze report job.rsdb$" <<<"$("$analyze" -h)" || fail "analyze -h: no example"

# Usage errors: exit 2 in every tool.
for cmd in "$record --no-such-flag" "$merge --no-such-flag -o x.rsdb node0.rsb" "$merge node0.rsb" \
           "$export --no-such-flag node0.rsb -o x.pftrace" "$export node0.rsb" \
           "$analyze" "$analyze no-such-command" "$analyze query node0.rsb" \
           "$analyze query --no-such-flag node0.rsb 'SELECT 1'" "$analyze report" \
           "$analyze report node0.rsb --fail-on nothing" "$analyze report node0.rsb --format nope" \
           "$analyze mcp" "$analyze mcp --no-such-flag node0.rsb" "$analyze diff node0.rsb" \
           "$analyze diff node0.rsb node0.rsb --format html" \
           "$analyze diff node0.rsb node0.rsb -o node0.rsb --force" "$analyze summarize" \
           "$analyze summarize node0.rsb node1.rsb -o x.rss" "$analyze summarize node0.rsb -o node0.rsb"; do
  $cmd >/dev/null 2>usage.err; rc=$?
  [[ $rc == 2 ]] || fail "'$cmd' exits $rc, not 2 (usage)"
  # One line, "TOOL[ COMMAND]: what is wrong (see 'TOOL[ COMMAND] --help')", the same form in
  # every tool.
  [[ $(wc -l <usage.err) == 1 ]] || fail "'$cmd': the usage error is not one line: $(cat usage.err)"
  line=$(tail -n 1 usage.err)
  tool=${line%%: *}
  [[ "$line" =~ ^rankscope-(record|merge|export|analyze)(\ (query|schema|report|diff|summarize|mcp))?:\ .+\ \(see\ \'(.+)\ --help\'\)$ ]] &&
    [[ "${BASH_REMATCH[4]}" == "$tool" ]] ||
    fail "'$cmd': the usage error does not end with \"(see '$tool --help')\": $line"
done
# record -o -: a bundle is a file (written beside its name while recording); refused before any
# recording, whoever runs it.
"$record" -q -o - --duration 1s >/dev/null 2>record.err; rc=$?
[[ $rc == 2 ]] || fail "record -o - exits $rc, not 2"
grep -q -- "--out -: a bundle is a file .*give a path, then copy it" record.err ||
  fail "record -o - does not say why: $(cat record.err)"
grep -q "unknown option" record.err && fail "record does not take -q: $(cat record.err)"

# merge -o -: the database on standard output, readable by sqlite3; the last line is the summary.
"$merge" -o - node*.rsb >piped.rsdb 2>merge.err; rc=$?
[[ $rc == 0 ]] || fail "merge -o - exits $rc: $(tail -n 2 merge.err)"
[[ $(sqlite3 piped.rsdb "SELECT COUNT(*) FROM clock_alignment" 2>&1) -gt 0 ]] ||
  fail "merge -o -: not a database: $(head -c 200 piped.rsdb | od -c | head -2)"
tail -n 1 merge.err | grep -q -E '^rankscope-merge: wrote standard output: .* in [0-9.]+ (ms|s)$' ||
  fail "merge: last line is not the summary with the elapsed time: $(tail -n 1 merge.err)"
grep -q $'\r' merge.err && fail "merge: progress redrawn with \\r although stderr is a file"
# --progress: plain lines, prefixed like every other line of the tool.
"$merge" --progress -o progress.rsdb node*.rsb 2>progress.err >/dev/null || fail "merge --progress"
grep -q -E '^rankscope-merge: validating [0-9]+ inputs\.\.\.$' progress.err ||
  fail "merge --progress: no prefixed progress line: $(head -n 3 progress.err)"
grep -v -E '^(rankscope-merge: |  )' progress.err | grep -q . &&
  fail "merge --progress: a line without the prefix: $(grep -v -E '^(rankscope-merge: |  )' progress.err | head -n 1)"
# -q: nothing at all on stderr when there is nothing to warn about, in every tool.
"$merge" -q -o quiet.rsdb node*.rsb 2>quiet-merge.err >/dev/null || fail "merge -q"
[[ -s quiet-merge.err ]] && fail "merge -q printed: $(head -n 3 quiet-merge.err)"
"$export" -q quiet.rsdb -o quiet.pftrace 2>quiet-export.err || fail "export -q"
[[ -s quiet-export.err ]] && fail "export -q printed: $(head -n 3 quiet-export.err)"
[[ -s quiet.pftrace ]] || fail "export -q wrote no trace"
"$analyze" report -q quiet.rsdb -o quiet.txt 2>quiet-report.err || fail "report -q"
[[ -s quiet-report.err ]] && fail "report -q printed: $(head -n 3 quiet-report.err)"
[[ -s quiet.txt ]] || fail "report -q wrote no report"
"$analyze" query -q quiet.rsdb "SELECT 1" >/dev/null 2>quiet-query.err || fail "query -q"
[[ -s quiet-query.err ]] && fail "query -q printed: $(head -n 3 quiet-query.err)"
"$analyze" schema -q quiet.rsdb >/dev/null 2>quiet-schema.err || fail "schema -q"
[[ -s quiet-schema.err ]] && fail "schema -q printed: $(head -n 3 quiet-schema.err)"
# A skipped input: exit 3, and the warning stays under -q.
printf 'not a bundle' >bad.rsb
"$merge" -q -o part.rsdb node*.rsb bad.rsb >/dev/null 2>quiet.err; rc=$?
[[ $rc == 3 ]] || fail "merge with a skipped input exits $rc, not 3"
grep -q "warning: skipped .*bad.rsb" quiet.err || fail "merge -q hid the skipped input's warning"
rm -f bad.rsb
# Nodes in natural order.
mkdir -p many
"$build/tests/support/make-synth-cluster" "$work/many" --nodes 11 --steps 4 >/dev/null ||
  fail "make-synth-cluster --nodes 11"
"$merge" -o many.rsdb many/node*.rsb >/dev/null 2>many.err
order=$(grep -o -E '^  clock node[0-9]+' many.err | awk '{print $2}' | tr '\n' ' ')
[[ "$order" == "node0 node1 node2 node3 node4 node5 node6 node7 node8 node9 node10 " ]] ||
  fail "merge's clock lines not in natural order: $order"
# Many inputs: one count line per table, not per input and table.
grep -q "11 inputs, rows per table over all of them" many.err || fail "merge: no per-table totals"
(($(wc -l <many.err) < 60)) || fail "merge printed $(wc -l <many.err) lines for 11 inputs"

# export -o -: the trace on standard output.
"$export" piped.rsdb -o - --compression none >trace.pb 2>export.err; rc=$?
[[ $rc == 0 ]] || fail "export -o - exits $rc: $(tail -n 2 export.err)"
[[ -s trace.pb ]] || fail "export -o -: nothing on standard output"
if command -v protoc >/dev/null; then
  protoc --decode_raw <trace.pb >/dev/null 2>&1 || fail "export -o -: protoc --decode_raw fails"
fi
tail -n 1 export.err | grep -q -E '^rankscope-export: wrote standard output: .* in [0-9.]+ (ms|s)$' ||
  fail "export: last line is not the summary with the elapsed time: $(tail -n 1 export.err)"
"$export" piped.rsdb --output old.pftrace 2>/dev/null && [[ -s old.pftrace ]] ||
  fail "export: the old spelling --output no longer works"

# query: SQL from standard input; its last line on stderr, as every tool's, says what was written.
out=$(echo "SELECT COUNT(*) AS n FROM clock_alignment" | "$analyze" query piped.rsdb - --format csv 2>query.err)
[[ "$(tail -n 1 <<<"$out")" -gt 0 ]] 2>/dev/null || fail "query - did not read SQL from stdin: $out"
tail -n 1 query.err | grep -q -E '^rankscope-analyze query: wrote standard output: 1 row\(s\) in [0-9.]+ (ms|s)$' ||
  fail "query: last line is not the summary with the elapsed time: $(tail -n 1 query.err)"
"$analyze" schema piped.rsdb nccl_events >/dev/null 2>schema.err || fail "schema TABLE"
tail -n 1 schema.err | grep -q -E '^rankscope-analyze schema: wrote standard output: the columns of nccl_events in [0-9.]+ (ms|s)$' ||
  fail "schema: last line is not the summary with the elapsed time: $(tail -n 1 schema.err)"

# query and schema: -o FILE like the other outputs (never the input, an existing file only
# with --force, the final line naming it).
"$analyze" query piped.rsdb "SELECT COUNT(*) AS n FROM nccl_events" -f csv -o q.csv 2>q.err ||
  fail "query -o: $(cat q.err)"
[[ "$(tail -n 1 q.csv)" == "$("$analyze" query -q piped.rsdb "SELECT COUNT(*) FROM nccl_events" -f csv | tail -n 1)" ]] ||
  fail "query -o: q.csv holds $(cat q.csv)"
tail -n 1 q.err | grep -q -E '^rankscope-analyze query: wrote q.csv: 1 row\(s\) in ' ||
  fail "query -o: last line: $(tail -n 1 q.err)"
"$analyze" query -q piped.rsdb "SELECT 1" -o q.csv 2>/dev/null; rc=$?
[[ $rc == 2 ]] || fail "query -o over an existing file without --force exits $rc, not 2"
"$analyze" query -q piped.rsdb "SELECT 1" -o q.csv --force || fail "query -o --force"
"$analyze" schema -q piped.rsdb -o piped.rsdb --force 2>/dev/null; rc=$?
[[ $rc == 2 ]] || fail "schema -o INPUT exits $rc, not 2"
"$analyze" schema piped.rsdb nccl_events -o s.txt 2>/dev/null && grep -q '^comm_id_hash ' s.txt ||
  fail "schema -o: s.txt lacks the columns"

# report: -o - is standard output; --fail-on any exits 4 on the lossy node, 0 without it.
"$analyze" report piped.rsdb -o - --format json >report.json 2>report-stdout.err || fail "report -o - failed"
python3 -c "import json,sys; json.load(open('report.json'))" || fail "report -o -: not JSON"
bytes=$(wc -c <report.json)
tail -n 1 report-stdout.err | grep -q -E "^rankscope-analyze report: wrote standard output: json report, $bytes bytes in [0-9.]+ (ms|s)\$" ||
  fail "report -o -: last line is not the summary with the elapsed time: $(tail -n 1 report-stdout.err)"
"$analyze" report piped.rsdb --fail-on any >/dev/null; rc=$?
[[ $rc == 4 ]] || fail "report --fail-on any on a lossy run exits $rc, not 4"
"$analyze" report piped.rsdb --fail-on hang >/dev/null; rc=$?
[[ $rc == 0 ]] || fail "report --fail-on hang without a hang exits $rc, not 0"
"$analyze" report piped.rsdb --out r.txt 2>report.err && [[ -s r.txt ]] || fail "report --out"
tail -n 1 report.err | grep -q -E '^rankscope-analyze report: wrote r.txt: text report, [0-9]+ bytes in ' ||
  fail "report: no final line: $(tail -n 1 report.err)"

# One time base: the report's start, merge's and export's are the same UTC instant, and
# --from takes it as ISO 8601, as epoch ns and as +0 alike.
start_utc=$(python3 -c "import json; print(json.load(open('report.json'))['start_utc'])")
start_ns=$(python3 -c "import json; print(json.load(open('report.json'))['start_ns'])")
grep -q "recording from $start_utc" merge.err || fail "merge does not print the start $start_utc"
grep -q "recording starts $start_utc" export.err || fail "export does not print the start $start_utc"
for t in "$start_utc" "$start_ns" "+0"; do
  "$export" piped.rsdb -o "w.json" --from "$t" --to +1s 2>/dev/null || fail "export --from $t"
  mv w.json "w-${t//[:+]/_}.json" 2>/dev/null
done
cmp -s "w-${start_utc//[:+]/_}.json" "w-_0.json" && cmp -s "w-$start_ns.json" "w-_0.json" ||
  fail "export --from ISO / ns / +0 do not give the same window"
"$analyze" report piped.rsdb --from "$start_utc" --to +1h --format json -o r1.json &&
  "$analyze" report piped.rsdb --format json -o r2.json ||
  fail "report --from ISO"
[[ $(python3 -c "import json; print(json.load(open('r1.json'))['nccl_calls'] == json.load(open('r2.json'))['nccl_calls'])") == True ]] ||
  fail "report --from <start> --to +1h is not the whole recording"

# The fleet's tools, where they are built (cpp-httplib and OpenSSL): the same layout and exit 2.
fleet=$build/analyzer/fleet/rankscope-fleet
serve=$build/recorder/serve/rankscope-serve
if [[ -x "$fleet" && -x "$serve" ]]; then
  for cmd in "$fleet query" "$fleet collect" "$serve"; do
    for flag in -h --help; do
      out=$($cmd $flag 2>&1); rc=$?
      [[ $rc == 0 ]] || fail "$cmd $flag exits $rc"
      for part in "^usage: " "^options:$" "^examples:$" "^exit status: 0 done, 1 error, 2 usage error" "^See rankscope-"; do
        grep -q -E "$part" <<<"$out" || fail "$cmd $flag: no '$part' line"
      done
      grep -q -E '^  -q, --quiet ' <<<"$out" || fail "$cmd $flag: no '-q, --quiet'"
      grep -q -E '^  -o, --out ' <<<"$out" || [[ "$cmd" == "$serve" ]] || fail "$cmd $flag: no '-o, --out'"
    done
  done
  for cmd in "$fleet" "$fleet nope" "$fleet query --no-such-flag" "$fleet query 'SELECT 1'" \
             "$fleet query --nodes a,b 'SELECT 1'" "$fleet query --nodes a --ca /nonexistent --cert x --key y 'SELECT 1'" \
             "$fleet query --nodes 'a[3-1]' --ca x --token-file y 'SELECT 1'" \
             "$fleet collect --nodes a --ca x --cert y --key z dir" "$serve" "$serve --listen :1 dir" \
             "$serve --listen :1 --cert a --key b dir" "$serve --max-queries 0 dir"; do
    eval "$cmd" >/dev/null 2>&1; rc=$?
    [[ $rc == 2 ]] || fail "'$cmd' exits $rc, not 2 (usage)"
  done
fi

[[ -e "$work/-" || -e "$build/-" ]] && fail "a file named '-' was created"
if ((fails)); then echo "$fails failure(s)"; exit 1; fi
echo "PASS"
