#!/usr/bin/env bash
# serve_hostile_test.sh BUILD_DIR: rankscope-serve in bearer-token mode on the loopback against
# hostile clients (hostile_client.py) and hostile bundles. Checks:
#   bomb     a zstd bomb among its bundles (a bundle padded with 1 GiB of zeros): not served,
#            refused at the decompression limit at start-up
#   flood    one request with 20,000 header fields of 8 KB: the server lives, closes that
#            connection at the request limit, and its peak memory stays within 64 MiB of where
#            it started; 36 KB of header fields, or 101 of them, are 431
#   chunked  a 64 MiB chunked body with the right token: 411 before the body is read, memory
#            bounded likewise
#   slow     10 clients without a token sending a byte every 3 s, half in the TLS handshake:
#            a valid client is served while they still hold their connections (not after the
#            server's deadline closed them: its request's log line comes first), then the
#            deadline closes them
#   range    a range past the end: 416 with "bytes */SIZE"; one ending past it: the rest of
#            the file (206); two ranges: 416
#   log      requests with a wrong token and without one are logged as such, not as
#            "(bearer token)"
#   printf   printf('%.*c', 2147483647, 'x') over every row: refused at once (a value over the
#            limit of 4194304 bytes)
#   wide     a row of 300 values of 4 MB: refused at the query's memory limit, the server's
#            peak memory within 256 MiB of where it started
# The peak memory (VmHWM) before and after each attack is printed. No root needed.
set -euo pipefail
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
SERVE=$BUILD/recorder/serve/rankscope-serve
SYNTH=$BUILD/tests/support/make-synth-cluster
for b in "$SERVE" "$SYNTH"; do [[ -x "$b" ]] || { echo "FAIL: $b is not built"; exit 1; }; done
for t in curl python3 openssl zstd; do
  command -v "$t" >/dev/null || { echo "SKIP: $t is not installed"; exit 77; }
done
WORK=$(mktemp -d /tmp/rankscope-serve-hostile.XXXX)
PID=
cleanup() {
  local rc=$?
  if [[ -n "$PID" ]]; then kill -TERM "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
  ((rc == 0)) || { echo "--- server log"; tail -n 30 "$WORK/serve.log" 2>/dev/null || true; }
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() { echo "FAIL: $*"; exit 1; }
pass() { echo "ok (${SECONDS} s): $*"; }
alive() { kill -0 "$PID" 2>/dev/null || fail "the server ended: $(tail -5 "$WORK/serve.log")"; }
peak_kib() { awk '/^VmHWM/ {print $2}' "/proc/$PID/status"; }

bash "$HERE/make-certs.sh" "$WORK/certs" ca node=IP:127.0.0.1
openssl rand -hex 32 >"$WORK/token"
chmod 600 "$WORK/token"
TOKEN=$(cat "$WORK/token")
mkdir -p "$WORK/synth"
"$SYNTH" "$WORK/synth" --nodes 1 >/dev/null
mkdir -p "$WORK/bundles" "$WORK/tmp"
cp "$WORK/synth/node0.rsb" "$WORK/bundles/"
{ zstd -qdc "$WORK/synth/node0.rsb"; head -c 1G /dev/zero; } | zstd -q -1 >"$WORK/bundles/bomb.rsb"
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
TMPDIR=$WORK/tmp "$SERVE" --listen "127.0.0.1:$PORT" --node node0 --cert "$WORK/certs/node.pem" \
  --key "$WORK/certs/node.key" --token-file "$WORK/token" "$WORK/bundles" >"$WORK/serve.log" 2>&1 &
PID=$!
for _ in $(seq 600); do
  grep -q "serving" "$WORK/serve.log" && break
  alive
  sleep 0.1
done
grep -q "serving 1 bundle" "$WORK/serve.log" || fail "the server did not start: $(cat "$WORK/serve.log")"
URL=https://127.0.0.1:$PORT
CURL=(curl -sS --max-time 30 --cacert "$WORK/certs/ca.pem")
AUTH=(-H "Authorization: Bearer $TOKEN")
CLIENT=(python3 "$HERE/hostile_client.py")

# ---- bomb: refused while the directory was listed, before 1 GiB reached $TMPDIR --------------
grep -q "warning: not served: bomb.rsb: .*bomb.rsb: decompresses to more than [0-9]* bytes, over 200 times its size" \
  "$WORK/serve.log" || fail "bomb: $(grep bomb "$WORK/serve.log")"
pass "bomb: not served, refused at the decompression limit ($(grep -o 'more than [0-9]* bytes' "$WORK/serve.log"))"

# ---- flood ---------------------------------------------------------------------------------------
start_kib=$(peak_kib)
out=$("${CLIENT[@]}" flood 127.0.0.1 "$PORT" 20000)
alive
peak=$(peak_kib)
echo "  header flood: $out; server peak RSS $((start_kib / 1024)) MiB before, $((peak / 1024)) MiB after"
((peak - start_kib < 65536)) || fail "flood: the server's peak memory grew by $(((peak - start_kib) / 1024)) MiB"
grep -q "closed the connection from 127.0.0.1:[0-9]*: the request passed 160 KiB" "$WORK/serve.log" ||
  fail "flood: no line for the closed connection"
"${CURL[@]}" "${AUTH[@]}" "$URL/v1/time" | grep -q '"node":"node0"' || fail "flood: not serving after it"
pass "flood: closed at the request limit, peak memory +$(((peak - start_kib) / 1024)) MiB, still serving"
big=$(head -c 6000 /dev/zero | tr '\0' a)
hdrs=()
for i in 1 2 3 4 5 6; do hdrs+=(-H "X-Big-$i: $big"); done
code=$("${CURL[@]}" "${AUTH[@]}" "${hdrs[@]}" -o "$WORK/reply" -w '%{http_code}' "$URL/v1/time")
[[ $code == 431 ]] || fail "36 KB of header fields: HTTP $code $(cat "$WORK/reply")"
hdrs=()
for i in $(seq 101); do hdrs+=(-H "X-Field-$i: 1"); done
code=$("${CURL[@]}" "${AUTH[@]}" "${hdrs[@]}" -o "$WORK/reply" -w '%{http_code}' "$URL/v1/time")
[[ $code == 431 ]] || fail "101 header fields: HTTP $code $(cat "$WORK/reply")"
pass "headers: 36 KB of them 431, 101 fields 431"

# ---- chunked -------------------------------------------------------------------------------------
start_kib=$(peak_kib)
out=$("${CLIENT[@]}" chunked 127.0.0.1 "$PORT" "$TOKEN" 64)
alive
peak=$(peak_kib)
echo "  chunked body: $out; server peak RSS $((peak / 1024)) MiB"
[[ $out == *"status=411"* ]] || fail "chunked: $out"
((peak - start_kib < 65536)) || fail "chunked: the server's peak memory grew by $(((peak - start_kib) / 1024)) MiB"
grep -q '"(bearer token)" POST /v1/query 411 a request body must come with a Content-Length, not chunked' \
  "$WORK/serve.log" || fail "chunked: not logged"
pass "chunked: 411 before the body was read ($out)"

# ---- slow ----------------------------------------------------------------------------------------
out=$("${CLIENT[@]}" slow 127.0.0.1 "$PORT" 10 -- "${CURL[@]}" -o /dev/null -f "${AUTH[@]}" "$URL/v1/time")
echo "  slow clients: $out"
[[ $out == *"served=1"* ]] || fail "slow: the valid client was not served: $out"
after=$(sed 's/.*connected_after=\([0-9]*\).*/\1/' <<<"$out")
((after >= 1)) || fail "slow: no slow client was still connected when the valid one was served: $out"
[[ $out == *"left_open=0"* ]] || fail "slow: the server's deadline did not close them: $out"
served_at=$(grep -n '"(bearer token)" GET /v1/time 200' "$WORK/serve.log" | tail -1 | cut -d: -f1)
cut_at=$(grep -n "did not authenticate within 10 s" "$WORK/serve.log" | head -1 | cut -d: -f1)
[[ -n "$cut_at" ]] || fail "slow: no connection closed at the deadline"
((served_at < cut_at)) || fail "slow: the valid client was served only after the deadline closed slow ones"
pass "slow: the valid client served beside $after slow ones, which the deadline then closed"

# ---- range ---------------------------------------------------------------------------------------
SIZE=$(stat -c %s "$WORK/bundles/node0.rsb")
code=$("${CURL[@]}" "${AUTH[@]}" -r "$((SIZE + 100))-" -D "$WORK/h" -o "$WORK/body" -w '%{http_code}' \
  "$URL/v1/bundle/node0.rsb")
[[ $code == 416 ]] || fail "range past the end: HTTP $code"
grep -qi "^content-range: bytes \*/$SIZE" "$WORK/h" || fail "range past the end: $(cat "$WORK/h")"
code=$("${CURL[@]}" "${AUTH[@]}" -r "10-$((SIZE + 1000))" -D "$WORK/h" -o "$WORK/body" -w '%{http_code}' \
  "$URL/v1/bundle/node0.rsb")
[[ $code == 206 ]] || fail "range ending past the end: HTTP $code"
grep -qi "^content-range: bytes 10-$((SIZE - 1))/$SIZE" "$WORK/h" || fail "range ending past the end: $(cat "$WORK/h")"
cmp -s "$WORK/body" <(tail -c +11 "$WORK/bundles/node0.rsb") || fail "range ending past the end: other bytes"
code=$("${CURL[@]}" "${AUTH[@]}" -r "0-1,5-6" -o /dev/null -w '%{http_code}' "$URL/v1/bundle/node0.rsb")
[[ $code == 416 ]] || fail "two ranges: HTTP $code"
pass "range: past the end 416 (bytes */$SIZE), ending past it 206 to the end, two ranges 416"

# ---- log -----------------------------------------------------------------------------------------
"${CURL[@]}" -H "Authorization: Bearer not-the-token" -o /dev/null "$URL/v1/bundles"
"${CURL[@]}" -o /dev/null "$URL/v1/bundles"
grep -q '"(wrong bearer token)" GET /v1/bundles 401' "$WORK/serve.log" || fail "log: wrong token"
grep -q '"(no bearer token)" GET /v1/bundles 401' "$WORK/serve.log" || fail "log: no token"
grep -q '"(bearer token)" GET /v1/bundles 401' "$WORK/serve.log" && fail "log: a refused request logged as '(bearer token)'"
pass "log: a wrong token and none logged as such"

# ---- printf --------------------------------------------------------------------------------------
query() {  # SQL: the reply's status and body in $WORK/reply
  python3 -c 'import json, sys; print(json.dumps({"sql": sys.argv[1], "timeout_ms": 1000}))' "$1" >"$WORK/q.json"
  "${CURL[@]}" "${AUTH[@]}" -H "Content-Type: application/json" --data-binary "@$WORK/q.json" \
    -o "$WORK/reply" -w '%{http_code}' "$URL/v1/query" || true
}
code=$(query "SELECT length(printf('%.*c', 2147483647, 'x')) FROM nccl_events")
[[ $code == 400 ]] && grep -q "a text or blob value over the limit of 4194304 bytes" "$WORK/reply" ||
  fail "printf: HTTP $code $(cat "$WORK/reply")"
pass "printf: refused at once: $(cat "$WORK/reply")"

# ---- wide ----------------------------------------------------------------------------------------
# 300 calls of a column's value, so that SQLite computes each (a constant it would compute once).
cols=$(python3 -c 'q = chr(39); print(", ".join(f"printf({q}%.*c{q}, 4000000, op) AS c{i}" for i in range(300)))')
start_kib=$(peak_kib)
code=$(query "SELECT $cols FROM nccl_events LIMIT 1")
alive
peak=$(peak_kib)
echo "  300 values of 4 MB: HTTP $code; server peak RSS $((start_kib / 1024)) MiB before, $((peak / 1024)) MiB after"
[[ $code == 400 ]] && grep -q "MiB of memory" "$WORK/reply" || fail "wide: HTTP $code $(cat "$WORK/reply")"
((peak - start_kib < 262144)) || fail "wide: the server's peak memory grew by $(((peak - start_kib) / 1024)) MiB"
pass "wide: refused at the query's memory limit: $(cat "$WORK/reply")"
echo "PASS"
