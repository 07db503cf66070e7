#!/usr/bin/env bash
# Every JSON the tools write is valid JSON whatever bytes the recording holds: multi-byte UTF-8
# (a process named 'trainer-ö日🔥') comes out unchanged, a byte that is not UTF-8 (0xFF) as
# U+FFFD. Checked in query --format json, report --format json and the chrome-json trace.
set -uo pipefail
build=$1
work=$(mktemp -d)
trap '[[ -n "${KEEP:-}" ]] || rm -rf "$work"' EXIT
cd "$work" || exit 1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
merge=$build/merger/rankscope-merge
analyze=$build/analyzer/rankscope-analyze
export=$build/exporter/rankscope-export

"$build/tests/support/make-synth-cluster" "$work" --fault cpu --fault-node 1 --steps 12 >/dev/null ||
  { echo "FAIL: make-synth-cluster"; exit 1; }
"$merge" -q -o job.rsdb node*.rsb >/dev/null 2>&1 || { echo "FAIL: merge"; exit 1; }
# The ranks' names multi-byte; the competitor on node1 with a stray 0xFF byte too.
good='trainer-ö日🔥'
sqlite3 job.rsdb "UPDATE processes SET comm = '$good';
  UPDATE sched_events SET other_comm = CAST(X'62757266FF' AS TEXT) || '-$good'
    WHERE other_comm IS NOT NULL;" ||
  { echo "FAIL: sqlite3 update"; exit 1; }

# check FILE WHAT: parses as JSON, holds the multi-byte name unchanged, and U+FFFD where asked.
check() {
  python3 - "$1" "$2" "$good" "${3:-}" <<'EOF'
import json, sys
path, what, good, want_replacement = sys.argv[1:5]
raw = open(path, "rb").read()
try:
    text = raw.decode("utf-8")
except UnicodeDecodeError as e:
    sys.exit("%s: not UTF-8 (%s)" % (what, e))
try:
    doc = json.loads(text)
except ValueError as e:
    sys.exit("%s: not JSON (%s)" % (what, e))
flat = json.dumps(doc, ensure_ascii=False)
if good not in flat:
    sys.exit("%s: %r not found unchanged" % (what, good))
if want_replacement and "burf\ufffd" not in flat:
    sys.exit("%s: the 0xFF byte is not U+FFFD" % what)
EOF
}

"$analyze" query job.rsdb --format json \
  "SELECT comm, CAST(X'62757266FF' AS TEXT) AS raw FROM processes LIMIT 2" >query.json 2>query.err ||
  fail "query exits non-zero: $(tail -n 2 query.err)"
check query.json "query --format json" yes || fail "query --format json"

"$analyze" report job.rsdb --format json -o report.json 2>report.err ||
  fail "report exits non-zero: $(tail -n 2 report.err)"
check report.json "report --format json" yes || fail "report --format json"

"$export" job.rsdb --format chrome-json -o trace.json 2>export.err ||
  fail "export exits non-zero: $(tail -n 2 export.err)"
check trace.json "chrome-json trace" || fail "chrome-json trace"

((fails == 0)) && echo "PASS" || { echo "$fails failure(s)"; exit 1; }
