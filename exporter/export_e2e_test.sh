#!/bin/bash
# End to end: rankscope-export on a synthetic merged db and bundle (and one with gpu_ops),
# output decoded with protoc against the project's .proto, Chrome JSON parsed and checked
# with python3, determinism by byte comparison, CLI errors.
# usage: export_e2e_test.sh RANKSCOPE_EXPORT TESTDATA_TOOL PROTO PROTOC CHECK_JSON_PY [MERGE]
set -euo pipefail
EXPORT=$(realpath "$1") TESTDATA=$2 PROTO=$3 PROTOC=$4 CHECK_JSON=$5 MERGE=${6:-}
dir=$(mktemp -d "${TMPDIR:-/tmp}/rs-export-e2e-XXXXXX")
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$TESTDATA" "$dir" hang
db=$dir/merged.rsdb

"$EXPORT" --help | grep -q -- '--from' || fail "--help does not document --from"

"$EXPORT" "$db" -o "$dir/a.pftrace"
"$EXPORT" "$db" -o "$dir/b.pftrace"
cmp "$dir/a.pftrace" "$dir/b.pftrace" || fail "two runs differ"
"$EXPORT" "$db" -o "$dir/plain.pftrace" --compression none

# The compressed trace is the plain one in deflated compressed_packets chunks (field 50):
# inflating every chunk gives back the plain file byte for byte.
python3 - "$dir/a.pftrace" "$dir/plain.pftrace" <<'PY' || fail "compressed chunks"
import sys, zlib
def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1; v |= (c & 0x7f) << s; s += 7
        if c < 0x80: return v, i
data, plain = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
i, out, chunks = 0, b"", 0
while i < len(data):
    tag, i = varint(data, i); n, i = varint(data, i)
    assert tag == (1 << 3 | 2), tag
    pkt = data[i:i + n]; i += n
    assert n < 512 * 1024, n
    ftag, j = varint(pkt, 0); m, j = varint(pkt, j)
    assert ftag == (50 << 3 | 2) and j + m == len(pkt), ftag
    out += zlib.decompress(pkt[j:]); chunks += 1
assert out == plain, "inflated chunks differ from the plain trace"
print("%d chunks, %d -> %d bytes" % (chunks, len(plain), len(data)))
PY

# protoc decodes the plain file with our subset of perfetto_trace.proto.
"$PROTOC" --proto_path="$(dirname "$PROTO")" --decode=perfetto.protos.Trace \
  "$(basename "$PROTO")" < "$dir/plain.pftrace" > "$dir/a.txt" || fail "protoc cannot decode"
grep -q 'sequence_flags: 1' "$dir/a.txt" || fail "no SEQ_INCREMENTAL_STATE_CLEARED packet"
grep -q 'is_incremental: true' "$dir/a.txt" || fail "no incremental clock"
grep -q 'process_name: "node1 / rank 3 (pid 10101)"' "$dir/a.txt" || fail "process names"
grep -q 'terminating_flow_ids' "$dir/a.txt" || fail "no flows"
grep -q 'name: "node1 / disk loop0"' "$dir/a.txt" || fail "no named disk lane"
grep -q 'sibling_merge_behavior: SIBLING_MERGE_BEHAVIOR_BY_SIBLING_MERGE_KEY' "$dir/a.txt" ||
  fail "disk lanes without a merge key"
if grep -q 'disk .*(overlap' "$dir/a.txt"; then fail "disk requests on overlap tracks"; fi
grep -q 'name: "in_flight"' "$dir/a.txt" || fail "no in-flight annotation"
begins=$(grep -c 'type: TYPE_SLICE_BEGIN' "$dir/a.txt")
ends=$(grep -c 'type: TYPE_SLICE_END' "$dir/a.txt")
[ "$begins" -eq "$ends" ] || fail "$begins slice begins but $ends ends"
rows=$(python3 -c "
import sqlite3,sys
db=sqlite3.connect(sys.argv[1])
print(sum(db.execute('SELECT COUNT(*) FROM '+t).fetchone()[0] for t in
  ('nccl_events','cuda_events','sched_events','block_events')))" "$db")
[ "$begins" -eq "$rows" ] || fail "$begins slices but $rows slice rows in the db"

# Chrome JSON: parse and check against the db.
"$EXPORT" "$db" -o "$dir/a.json"
"$EXPORT" "$db" -o "$dir/b.json" --format chrome-json
cmp "$dir/a.json" "$dir/b.json" || fail "two JSON runs differ"
python3 "$CHECK_JSON" "$dir/a.json" "$db" || fail "chrome json check"

# One bundle, checked against its decompressed image.
"$EXPORT" "$dir/node2.rsb" -o "$dir/node2.json"
if command -v zstd >/dev/null; then
  zstd -q -dc "$dir/node2.rsb" > "$dir/node2.db"
  python3 "$CHECK_JSON" "$dir/node2.json" "$dir/node2.db" || fail "bundle json check"
else
  echo "note: zstd(1) not installed; bundle JSON checked for syntax only"
  python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$dir/node2.json" || fail "bundle json"
fi

# A db merged (and clock-aligned) by rankscope-merge itself.
if [ -n "$MERGE" ]; then
  "$MERGE" -q -o "$dir/real.rsdb" "$dir"/node*.rsb
  "$EXPORT" "$dir/real.rsdb" -o "$dir/real.json"
  python3 "$CHECK_JSON" "$dir/real.json" "$dir/real.rsdb" || fail "merged-by-merge json check"
  "$EXPORT" "$dir/real.rsdb" -o "$dir/real.pftrace" --compression none
  "$PROTOC" --proto_path="$(dirname "$PROTO")" --decode=perfetto.protos.Trace \
    "$(basename "$PROTO")" < "$dir/real.pftrace" > "$dir/real.txt" || fail "protoc real"
  [ "$(grep -c 'type: TYPE_SLICE_BEGIN' "$dir/real.txt")" -eq "$begins" ] || fail "real slices"
  # The device names the recorder wrote (block_devices) come through the merge.
  grep -q 'name: "node1 / disk loop0"' "$dir/real.txt" || fail "merged db: no device name"
fi

# gpu_ops (the NCCL profiler plugin's rows): GPU tracks, host -> device flows, collective
# flows on device time; the JSON checked against the db, the protobuf decoded by protoc.
mkdir "$dir/gpu"
"$TESTDATA" "$dir/gpu" hang gpu
gdb=$dir/gpu/merged.rsdb
"$EXPORT" "$gdb" -o "$dir/gpu/a.json"
"$EXPORT" "$gdb" -o "$dir/gpu/b.json"
cmp "$dir/gpu/a.json" "$dir/gpu/b.json" || fail "two gpu JSON runs differ"
python3 "$CHECK_JSON" "$dir/gpu/a.json" "$gdb" || fail "gpu chrome json check"
"$EXPORT" "$gdb" -o "$dir/gpu/a.pftrace" --compression none
"$PROTOC" --proto_path="$(dirname "$PROTO")" --decode=perfetto.protos.Trace \
  "$(basename "$PROTO")" < "$dir/gpu/a.pftrace" > "$dir/gpu/a.txt" || fail "protoc gpu"
gpu_tracks=$(grep -cE 'name: "[^"]* / rank [0-9]+ / GPU \(NCCL kernels\)"' "$dir/gpu/a.txt" || true)
gpu_procs=$(python3 -c "
import sqlite3,sys
db=sqlite3.connect(sys.argv[1])
print(db.execute('SELECT COUNT(DISTINCT node || pid) FROM gpu_ops WHERE device_start_ns IS NOT NULL').fetchone()[0])" "$gdb")
[ "$gpu_tracks" -eq "$gpu_procs" ] || fail "$gpu_tracks GPU tracks for $gpu_procs ranks with gpu_ops"
[ "$gpu_procs" -eq 5 ] || fail "test data: $gpu_procs ranks with gpu_ops, expected 5"
gbegins=$(grep -c 'type: TYPE_SLICE_BEGIN' "$dir/gpu/a.txt")
gends=$(grep -c 'type: TYPE_SLICE_END' "$dir/gpu/a.txt")
[ "$gbegins" -eq "$gends" ] || fail "gpu: $gbegins slice begins but $gends ends"
grep -q 'name: "queued_ns"' "$dir/gpu/a.txt" || fail "no queued_ns annotation"
grep -q 'name: "ALL_REDUCE not started on GPU"' "$dir/gpu/a.txt" || fail "no not-started instant"
# The same db without its gpu_ops table (an earlier recorder): the trace of before.
cp "$gdb" "$dir/gpu/old.rsdb"
python3 -c "
import sqlite3,sys
db=sqlite3.connect(sys.argv[1]); db.execute('DROP TABLE gpu_ops'); db.commit()" "$dir/gpu/old.rsdb"
"$EXPORT" "$dir/gpu/old.rsdb" -o "$dir/gpu/old.json"
python3 "$CHECK_JSON" "$dir/gpu/old.json" "$dir/gpu/old.rsdb" || fail "no-gpu_ops json check"
if grep -q 'GPU (NCCL kernels)' "$dir/gpu/old.json"; then fail "GPU track without gpu_ops"; fi

# Windows relative to the first event.
"$EXPORT" "$db" -o "$dir/w.pftrace" --from +100ms --to +200ms --nodes node0
[ -s "$dir/w.pftrace" ] || fail "windowed export empty"

# -o -: the trace on standard output, decodable as it streams, and no file named '-'.
(cd "$dir" && "$EXPORT" "$db" -o - --compression none) > "$dir/stdout.pftrace" \
  || fail "-o - failed"
"$PROTOC" --decode_raw < "$dir/stdout.pftrace" > "$dir/stdout.txt" || fail "protoc --decode_raw"
[ -s "$dir/stdout.txt" ] || fail "-o -: nothing decoded"
cmp "$dir/stdout.pftrace" "$dir/plain.pftrace" || fail "-o - differs from the trace written to a file"
(cd "$dir" && "$EXPORT" "$db" -o - --compression none | "$PROTOC" --decode_raw > /dev/null) \
  || fail "-o - | protoc --decode_raw"
[ ! -e "$dir/-" ] || fail "-o - created a file named -"

# A window with no event in it: exit 1, the window and the recording's range named, no file.
set +e
out=$("$EXPORT" "$db" -o "$dir/late.pftrace" --from +1h 2>&1); rc=$?
set -e
[ $rc -eq 1 ] || fail "empty window: exit $rc"
echo "$out" | grep -q 'no event' || fail "empty window message: $out"
echo "$out" | grep -q -- '--from' || fail "empty window message names no window: $out"
[ ! -e "$dir/late.pftrace" ] || fail "empty window: output written"
set +e
out=$(cd "$dir" && "$EXPORT" "$db" -o - --from +1h 2>&1 >/dev/null); rc=$?
set -e
[ $rc -eq 1 ] || fail "empty window to stdout: exit $rc"
[ ! -e "$dir/-" ] || fail "empty window: created a file named -"

# A trace too large for ui.perfetto.dev: warned about before it is written (the limit lowered
# to 10 rows' worth), with the ways to narrow it; still written, exit 0, even with -q. Within
# the limit: no warning.
rm -f "$dir/big.pftrace"
out=$(RANKSCOPE_EXPORT_UI_LIMIT_BYTES=3120 "$EXPORT" "$db" -o "$dir/big.pftrace" -q 2>&1) ||
  fail "large trace: exit $?"
echo "$out" | grep -q "^rankscope-export: warning: .* rows make a trace of about .* it may not open there. Narrow it with --nodes" ||
  fail "large trace: no warning: $out"
[ -s "$dir/big.pftrace" ] || fail "large trace: not written"
rm -f "$dir/big.pftrace"
out=$("$EXPORT" "$db" -o "$dir/big.pftrace" 2>&1) || fail "export: exit $?"
echo "$out" | grep -q "warning" && fail "a small trace warned about: $out"

# User errors: exit status and a message naming what is wrong.
set +e
out=$("$EXPORT" "$db" -o "$dir/x.pftrace" --nodes node42 2>&1); rc=$?
set -e
[ $rc -eq 1 ] || fail "unknown node: exit $rc"
echo "$out" | grep -q node42 || fail "unknown node message: $out"
set +e
out=$("$EXPORT" "$db" -o "$dir/x.pftrace" --from yesterday 2>&1); rc=$?
set -e
[ $rc -eq 2 ] || fail "bad --from: exit $rc"
echo "$out" | grep -q -- '--from' || fail "bad --from message: $out"
[ ! -e "$dir/x.pftrace" ] || fail "output written despite the error"
echo "PASS: export e2e"
