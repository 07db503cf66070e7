#!/usr/bin/env bash
# fleet_netns_test.sh BUILD_DIR: rankscope-fleet against four rankscope-serve nodes, each in a
# network namespace of its own behind a bridge, the workstation in a fifth, with certificates
# of a test CA made here by openssl (make-certs.sh). Synthetic bundles (make-synth-cluster, a
# packet-loss fault on node2, clock offsets on node1 and node2) are what the nodes serve; each
# node reports its clock with the same offset as its bundle's. Checks:
#   query     every node's rows with the node column; each node's rows equal
#             `rankscope-analyze query` on its bundle (counts and a grouped query), CSV and JSON
#   clock     the wire offsets agree with the injected ones within their bounds
#   collect   the files arrive byte for byte with clock_offsets.json; merge reports agreement
#             with its rendezvous alignment; merge -> report gives the same verdict as copying
#   resume    a partial download is resumed; a corrupt one fails its checksum and is removed
#   refused   a client without a certificate, TLS 1.2, a writing query, ATTACH, an oversized
#             request (each logged by the node, with the client's certificate subject)
#   token     bearer-token mode (right and wrong token), --max-queries (503), --query-timeout
#   recorder  rankscope-record --ring --serve in a node: the live ring queried as it grows, its
#             clock offset, a cut collected byte for byte
#   partial   one node's link down, one serving a certificate of another CA, one stalled
#             (SIGSTOP): three warnings naming them and why, node0's rows, exit 3, within the
#             timeout
# Root (network namespaces); skipped outside CI without root, a failure in CI.
set -euo pipefail
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
if ((EUID != 0)); then
  if [[ -n "${CI:-}" ]]; then
    echo "FAIL: needs root (network namespaces) and CI is set: it must not be skipped"
    exit 1
  fi
  echo "SKIP: needs root (network namespaces): sudo meson test -C build 'fleet netns'"
  exit 77
fi
SERVE=$BUILD/recorder/serve/rankscope-serve
FLEET=$BUILD/analyzer/fleet/rankscope-fleet
MERGE=$BUILD/merger/rankscope-merge
ANALYZE=$BUILD/analyzer/rankscope-analyze
SYNTH=$BUILD/tests/support/make-synth-cluster
for b in "$SERVE" "$FLEET" "$MERGE" "$ANALYZE" "$SYNTH" "$BUILD/recorder/rankscope-record"; do
  [[ -x "$b" ]] || { echo "FAIL: $b is not built"; exit 1; }
done

TAG=rf$$
SUBNET=10.79.0
WORK=$(mktemp -d /tmp/rankscope-fleet.XXXX)
declare -a NETNS=() PIDS=()
cleanup() {
  local rc=$? p ns
  for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  for ns in "${NETNS[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  if ((rc != 0)); then
    echo "--- node logs"
    tail -n 15 "$WORK"/node*.log 2>/dev/null || true
  fi
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() { echo "FAIL: $*"; exit 1; }
pass() { echo "ok (${SECONDS} s): $*"; }
deadline=$((SECONDS + 170))  # the whole test, bounded
in_time() { ((SECONDS < deadline)) || fail "out of time"; }

# ---- the network: a bridge in a switch namespace, the workstation and four nodes -------------
source "$HERE/netns.sh"
netns_switch "$TAG"
join() { netns_join "$TAG" "$1" "$2" "$3/24"; }  # ns index address
join "$TAG-ws" 9 "$SUBNET.2"
NODES=4
for ((k = 0; k < NODES; k++)); do join "$TAG-n$k" "$k" "$SUBNET.1$k"; done

# ---- certificates, bundles, servers -----------------------------------------------------------
CERTS=$WORK/certs
specs=(ws=DNS:workstation)
for ((k = 0; k < NODES; k++)); do specs+=("node$k=IP:$SUBNET.1$k,DNS:node$k"); done
bash "$HERE/make-certs.sh" "$CERTS" ca "${specs[@]}"
bash "$HERE/make-certs.sh" "$CERTS" otherca "rogue2=IP:$SUBNET.12,DNS:node2"
OFFSETS=(0 3000000 -2000000 0)  # each node's clock, ns ahead of true time
mkdir -p "$WORK/synth"
"$SYNTH" "$WORK/synth" --nodes "$NODES" --fault loss --fault-node 2 \
  --offset "node1=${OFFSETS[1]},node2=${OFFSETS[2]}" >/dev/null
declare -a SERVER_PID=()
start_server() {  # k cert
  local k=$1 cert=$2
  mkdir -p "$WORK/n$k"
  cp -n "$WORK/synth/node$k.rsb" "$WORK/n$k/" 2>/dev/null || true
  ip netns exec "$TAG-n$k" "$SERVE" --listen "$SUBNET.1$k:7443" --node "node$k" \
    --cert "$CERTS/$cert.pem" --key "$CERTS/$cert.key" --ca "$CERTS/ca.pem" \
    --simulate-clock-offset "${OFFSETS[k]}" "$WORK/n$k" >>"$WORK/node$k.log" 2>&1 &
  SERVER_PID[k]=$!
  PIDS+=($!)
  for _ in $(seq 100); do
    ip netns exec "$TAG-ws" bash -c "exec 3<>/dev/tcp/$SUBNET.1$k/7443" 2>/dev/null && return 0
    sleep 0.05
  done
  fail "node$k's server did not listen within 5 s"
}
for ((k = 0; k < NODES; k++)); do start_server "$k" "node$k"; done
: >"$WORK/nodes.txt"
for ((k = 0; k < NODES; k++)); do echo "node$k $SUBNET.1$k:7443" >>"$WORK/nodes.txt"; done
TLS=(--ca "$CERTS/ca.pem" --cert "$CERTS/ws.pem" --key "$CERTS/ws.key")
fleet() { ip netns exec "$TAG-ws" "$FLEET" "$@"; }

# ---- query: one table, the node column, the same rows as rankscope-analyze query ----------------
in_time
out=$(fleet query --nodes "$WORK/nodes.txt" "${TLS[@]}" -f csv -q \
  "SELECT COUNT(*) AS calls FROM nccl_events")
[[ $(head -1 <<<"$out") == "node,calls" ]] || fail "query header: $(head -1 <<<"$out")"
(($(wc -l <<<"$out") == NODES + 1)) || fail "query: expected $NODES rows: $out"
for ((k = 0; k < NODES; k++)); do
  want=$("$ANALYZE" query "$WORK/synth/node$k.rsb" -f csv "SELECT COUNT(*) AS calls FROM nccl_events" | tail -1)
  grep -qx "node$k,$want" <<<"$out" || fail "node$k: fleet says $(grep "^node$k," <<<"$out"), analyze says $want"
done
pass "query: $NODES nodes' counts, each equal to rankscope-analyze query on its bundle"

SQL="SELECT rank, op, COUNT(*) AS calls, SUM(duration_ns) AS total_ns, AVG(duration_ns) AS avg_ns
     FROM nccl_events GROUP BY rank, op ORDER BY rank, op"
out=$(fleet query --nodes "$WORK/nodes.txt" "${TLS[@]}" -f csv -q "$SQL")
total=0
for ((k = 0; k < NODES; k++)); do
  want=$("$ANALYZE" query "$WORK/synth/node$k.rsb" -f csv "$SQL" | tail -n +2)
  got=$(grep "^node$k," <<<"$out" | sed "s/^node$k,//")
  [[ "$got" == "$want" ]] || fail "node$k's grouped rows differ: fleet
$got
analyze
$want"
  total=$((total + $(wc -l <<<"$want")))
done
(($(wc -l <<<"$out") == total + 1)) || fail "grouped query: $(($(wc -l <<<"$out") - 1)) rows, want $total"
# A host list (no names: the nodes name themselves).
fleet query --nodes "$SUBNET.1[0-3]" "${TLS[@]}" -f json -q "$SQL" >"$WORK/q.json"
python3 - "$WORK/q.json" "$total" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
assert len(rows) == int(sys.argv[2]), (len(rows), sys.argv[2])
assert all(list(r)[0] == "node" for r in rows), rows[0]
assert sorted({r["node"] for r in rows}) == ["node0", "node1", "node2", "node3"], {r["node"] for r in rows}
assert all(isinstance(r["calls"], int) and isinstance(r["avg_ns"], (int, float)) for r in rows)
PY
pass "query: grouped rows per node equal rankscope-analyze query's ($total rows), JSON from a host list"

# ---- clock: the wire offsets against the injected ones -----------------------------------------
in_time
fleet query --nodes "$WORK/nodes.txt" "${TLS[@]}" -q --show-clock "SELECT 1" 2>"$WORK/clock.txt" >/dev/null
python3 - "$WORK/clock.txt" "${OFFSETS[@]}" <<'PY'
import sys
offsets = [int(x) / 1e6 for x in sys.argv[2:]]
clock = {}
for line in open(sys.argv[1]):
    f = line.split()
    if f and f[0].startswith("node") and len(f) >= 5 and f[1] != "clock":
        clock[f[0]] = (float(f[1]), float(f[3]))  # offset ms, bound ms
assert len(clock) == len(offsets), clock
o0, b0 = clock["node0"]
for k in range(1, len(offsets)):
    o, b = clock[f"node{k}"]
    got, want = o - o0, offsets[k] - offsets[0]
    assert abs(got - want) <= b + b0, f"node{k}: {got} ms vs {want} ms, bound {b + b0} ms"
print("  wire offsets to node0:", {k: round(v[0] - o0, 3) for k, v in clock.items()})
PY
pass "clock: each node's wire offset within its bound of the injected offset"

# ---- collect -> merge -> report, against copying the files ------------------------------------
in_time
mkdir -p "$WORK/viafleet" "$WORK/viacopy/bundles"
fleet collect --nodes "$WORK/nodes.txt" "${TLS[@]}" --since 2000-01-01T00:00:00Z \
  --until 2100-01-01T00:00:00Z "$WORK/viafleet/bundles" 2>"$WORK/collect.txt" ||
  fail "collect: $(cat "$WORK/collect.txt")"
for ((k = 0; k < NODES; k++)); do
  cmp -s "$WORK/synth/node$k.rsb" "$WORK/viafleet/bundles/node$k.rsb" || fail "node$k.rsb differs after collect"
done
[[ -f "$WORK/viafleet/bundles/clock_offsets.json" ]] || fail "no clock_offsets.json beside the bundles"
cp "$WORK"/synth/*.rsb "$WORK/viacopy/bundles/"
(cd "$WORK/viafleet" && "$MERGE" -o merged.rsdb bundles 2>"$WORK/merge_fleet.txt")
(cd "$WORK/viacopy" && "$MERGE" -o merged.rsdb bundles 2>/dev/null)
agree=$(grep -c "wire clock agrees" "$WORK/merge_fleet.txt" || true)
((agree == NODES - 1)) || fail "merge: $agree wire clock agreements, want $((NODES - 1)): $(grep wire "$WORK/merge_fleet.txt")"
grep -q "disagrees" "$WORK/merge_fleet.txt" && fail "merge: a wire clock disagrees"
check=$("$ANALYZE" query "$WORK/viafleet/merged.rsdb" -f csv \
  "SELECT value FROM metadata WHERE key = 'clock_wire_check'" | tail -1)
[[ "$check" == '"3 agree, 0 disagree'* ]] || fail "metadata clock_wire_check: $check"
(cd "$WORK/viafleet" && "$ANALYZE" report merged.rsdb >report.txt)
(cd "$WORK/viacopy" && "$ANALYZE" report merged.rsdb >report.txt)
head -1 "$WORK/viafleet/report.txt" | grep -q "^STRAGGLER: node2 .* network" ||
  fail "report after collect: $(head -1 "$WORK/viafleet/report.txt")"
diff "$WORK/viacopy/report.txt" "$WORK/viafleet/report.txt" >/dev/null ||
  fail "reports differ: $(diff "$WORK/viacopy/report.txt" "$WORK/viafleet/report.txt" | head)"
pass "collect: bundles byte for byte; merge: $agree wire clocks agree; report identical to copying ($(head -1 "$WORK/viafleet/report.txt"))"

# ---- collect --summaries: each node summarizes its own bundles ----------------------------------
in_time
fleet collect --summaries --nodes "$WORK/nodes.txt" "${TLS[@]}" --since 2000-01-01T00:00:00Z \
  --until 2100-01-01T00:00:00Z "$WORK/viafleet/summaries" 2>"$WORK/collect.txt" ||
  fail "collect --summaries: $(cat "$WORK/collect.txt")"
for ((k = 0; k < NODES; k++)); do
  got=$WORK/viafleet/summaries/node$k.rss
  [[ -f "$got" ]] || fail "no summary of node$k: $(ls "$WORK/viafleet/summaries")"
  v=$("$ANALYZE" query "$got" -f csv "SELECT value FROM metadata WHERE key = 'summary_version'" | tail -1)
  [[ "$v" == 1 ]] || fail "node$k.rss is no summary (summary_version '$v')"
  [[ $("$ANALYZE" query "$got" -f csv "SELECT COUNT(*) FROM nccl_events" | tail -1) == \
     $("$ANALYZE" query "$WORK/synth/node$k.rsb" -f csv "SELECT COUNT(*) FROM nccl_events" | tail -1) ]] ||
    fail "node$k.rss lacks NCCL calls of its bundle"
done
ls "$WORK"/viafleet/summaries/*.rsb >/dev/null 2>&1 && fail "collect --summaries brought raw bundles"
(cd "$WORK/viafleet" && "$MERGE" -q -o summaries.rsdb summaries && "$ANALYZE" report summaries.rsdb >summaries.txt)
diff <(head -1 "$WORK/viacopy/report.txt") <(head -1 "$WORK/viafleet/summaries.txt") >/dev/null ||
  fail "the verdict from the nodes' summaries differs: $(head -1 "$WORK/viafleet/summaries.txt")"
grep -q "merged from summaries" "$WORK/viafleet/summaries.txt" || fail "the report does not say it read summaries"
# Asked again: the node's summaries are kept (the same checksums), nothing is downloaded anew.
fleet collect --summaries --nodes "$WORK/nodes.txt" "${TLS[@]}" --since 2000-01-01T00:00:00Z \
  --until 2100-01-01T00:00:00Z "$WORK/viafleet/summaries" 2>"$WORK/collect.txt" ||
  fail "collect --summaries again: $(cat "$WORK/collect.txt")"
grep -q "$NODES already there" "$WORK/collect.txt" || fail "summaries made anew: $(cat "$WORK/collect.txt")"
pass "collect --summaries: every node's summary made on the node, merged: the same verdict ($(head -1 "$WORK/viafleet/summaries.txt"))"

# ---- resume and checksum ------------------------------------------------------------------------
in_time
B=$WORK/viafleet/bundles
rm "$B/node2.rsb"
head -c 3000 "$WORK/synth/node2.rsb" >"$B/node2.rsb.part"
fleet collect --nodes "$WORK/nodes.txt" "${TLS[@]}" --since 2000-01-01T00:00:00Z \
  --until 2100-01-01T00:00:00Z "$B" 2>"$WORK/collect.txt" || fail "resume: $(cat "$WORK/collect.txt")"
grep -q "1 resumed, 3 already there" "$WORK/collect.txt" || fail "resume: $(cat "$WORK/collect.txt")"
cmp -s "$WORK/synth/node2.rsb" "$B/node2.rsb" || fail "resumed node2.rsb differs"
rm "$B/node2.rsb"
head -c 3000 "$WORK/synth/node1.rsb" >"$B/node2.rsb.part"  # not node2's bytes
rc=0
fleet collect --nodes "$WORK/nodes.txt" "${TLS[@]}" --since 2000-01-01T00:00:00Z \
  --until 2100-01-01T00:00:00Z "$B" 2>"$WORK/collect.txt" || rc=$?
((rc == 3)) || fail "corrupt partial: exit $rc, want 3"
grep -q "warning: node2 .*checksum mismatch" "$WORK/collect.txt" || fail "corrupt partial: $(cat "$WORK/collect.txt")"
[[ ! -e "$B/node2.rsb.part" && ! -e "$B/node2.rsb" ]] || fail "the corrupt partial download was kept"
fleet collect --nodes "$WORK/nodes.txt" "${TLS[@]}" --since 2000-01-01T00:00:00Z \
  --until 2100-01-01T00:00:00Z -q "$B" || fail "collect after a checksum mismatch"
cmp -s "$WORK/synth/node2.rsb" "$B/node2.rsb" || fail "node2.rsb differs after the new download"
pass "resume: a partial download resumed; a corrupt one failed its checksum, was removed, then fetched again"

# ---- refused ------------------------------------------------------------------------------------
in_time
N0=https://$SUBNET.10:7443
if ip netns exec "$TAG-ws" curl -s --max-time 5 --cacert "$CERTS/ca.pem" "$N0/v1/time" >/dev/null 2>&1; then
  fail "a client without a certificate was served"
fi
sleep 0.2
grep -q "refused a TLS connection from $SUBNET.2:[0-9]*: certificate required" "$WORK/node0.log" ||
  fail "node0 did not log the refused client: $(tail -3 "$WORK/node0.log")"
if ip netns exec "$TAG-ws" curl -s --max-time 5 --tls-max 1.2 --cacert "$CERTS/ca.pem" \
  --cert "$CERTS/ws.pem" --key "$CERTS/ws.key" "$N0/v1/time" >/dev/null 2>&1; then
  fail "TLS 1.2 was accepted"
fi
ip netns exec "$TAG-ws" curl -sf --max-time 5 --cacert "$CERTS/ca.pem" --cert "$CERTS/ws.pem" \
  --key "$CERTS/ws.key" "$N0/v1/time" | grep -q '"node":"node0"' || fail "curl with the certificate"
refused() {  # SQL expected-message
  local rc=0
  fleet query --nodes "$WORK/nodes.txt" "${TLS[@]}" -q "$1" >/dev/null 2>"$WORK/refused.txt" || rc=$?
  ((rc == 1)) || fail "'${1:0:40}': exit $rc, want 1 (no node answered)"
  (($(grep -c "warning: node[0-3] .*$2" "$WORK/refused.txt") == NODES)) ||
    fail "'${1:0:40}': $(cat "$WORK/refused.txt")"
}
refused "DELETE FROM nccl_events" "query refused: DELETE is not allowed"
refused "ATTACH DATABASE '/etc/passwd' AS p" "query refused: ATTACH is not allowed"
refused "SELECT $(printf '1+%.0s' $(seq 40000))1" "HTTP 413"
grep -q "\"CN=ws,O=rankscope test\" POST /v1/query 400 sql=\"DELETE FROM nccl_events\"" "$WORK/node3.log" ||
  fail "node3 did not log the refused query with the client's subject"
pass "refused: no client certificate, TLS 1.2, DELETE, ATTACH, an oversized request; logged with the subject"

# ---- bearer-token mode, and the query limit ------------------------------------------------------
in_time
openssl rand -hex 32 >"$WORK/token"
chmod 600 "$WORK/token"
openssl rand -hex 32 >"$WORK/wrong-token"
chmod 600 "$WORK/wrong-token"
ip netns exec "$TAG-n0" "$SERVE" --listen "$SUBNET.10:7445" --node node0 --cert "$CERTS/node0.pem" \
  --key "$CERTS/node0.key" --token-file "$WORK/token" --max-queries 1 --query-timeout 2s \
  "$WORK/n0" >>"$WORK/node0-token.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do
  ip netns exec "$TAG-ws" bash -c "exec 3<>/dev/tcp/$SUBNET.10/7445" 2>/dev/null && break
  sleep 0.05
done
TOK=(--nodes "$SUBNET.10:7445" --ca "$CERTS/ca.pem")
out=$(fleet query "${TOK[@]}" --token-file "$WORK/token" -f csv -q "SELECT COUNT(*) FROM tcp_events")
want=$("$ANALYZE" query "$WORK/synth/node0.rsb" -f csv "SELECT COUNT(*) FROM tcp_events" | tail -1)
[[ "$(tail -1 <<<"$out")" == "node0,$want" ]] || fail "token mode: $out"
rc=0
fleet query "${TOK[@]}" --token-file "$WORK/wrong-token" -q "SELECT 1" >/dev/null 2>"$WORK/tok.txt" || rc=$?
((rc == 1)) && grep -q "HTTP 401: the node wants a bearer token" "$WORK/tok.txt" ||
  fail "a wrong token: exit $rc: $(cat "$WORK/tok.txt")"
# One query at a time: a second one while a slow one runs gets 503; the slow one stops at the
# node's --query-timeout.
SLOW="WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c"
fleet query "${TOK[@]}" --token-file "$WORK/token" -q "$SLOW" >/dev/null 2>"$WORK/slow.txt" &
slow_pid=$!
sleep 0.5
rc=0
fleet query "${TOK[@]}" --token-file "$WORK/token" -q "SELECT 1" >/dev/null 2>"$WORK/busy.txt" || rc=$?
wait "$slow_pid" || true
((rc == 1)) && grep -q "HTTP 503: busy: 1 queries are running" "$WORK/busy.txt" ||
  fail "the second query: exit $rc: $(cat "$WORK/busy.txt")"
grep -q "the query time limit 2.00 s" "$WORK/slow.txt" || fail "the slow query: $(cat "$WORK/slow.txt")"
grep -q '"(bearer token)" POST /v1/query 200' "$WORK/node0-token.log" || fail "token requests not logged"
pass "bearer token: the right one served, a wrong one 401; --max-queries 1: a second query 503, the slow one stopped at --query-timeout"

# ---- the recorder serving its live ring and its cuts ---------------------------------------------
in_time
RECORD=$BUILD/recorder/rankscope-record
REC_OFFSET=5000000
ip netns exec "$TAG-n0" "$RECORD" --scope netns --node recnode --ring 1m --ring-dir "$WORK/ring" \
  --cut-dir "$WORK/cuts" --simulate-clock-offset "$REC_OFFSET" --serve "$SUBNET.10:7444" \
  --serve-cert "$CERTS/node0.pem" --serve-key "$CERTS/node0.key" --serve-ca "$CERTS/ca.pem" \
  >"$WORK/node0-recorder.log" 2>&1 &
REC_PID=$!
PIDS+=("$REC_PID")
for _ in $(seq 200); do
  grep -q "serving the live recording and its cuts" "$WORK/node0-recorder.log" && break
  kill -0 "$REC_PID" 2>/dev/null || fail "the recorder ended: $(cat "$WORK/node0-recorder.log")"
  sleep 0.05
done
grep -q "serving the live recording" "$WORK/node0-recorder.log" || fail "the recorder does not serve"
# The server, cpp-httplib and OpenSSL come with --serve only (librankscope-serve.so).
readelf -d "$RECORD" | grep -q "NEEDED.*\(libssl\|libcrypto\|httplib\)" &&
  fail "rankscope-record is linked with OpenSSL or cpp-httplib"
grep -q "librankscope-serve.so" "/proc/$REC_PID/maps" || fail "the serving recorder has no server module"
LIVE="SELECT COUNT(*) AS n FROM process_events"
ip netns exec "$TAG-n0" bash -c 'for i in $(seq 30); do /bin/true; done'  # exec events to record
sleep 0.5
n1=$(fleet query --nodes "$SUBNET.10:7444" "${TLS[@]}" -f csv -q "$LIVE" | tail -1 | cut -d, -f2)
ip netns exec "$TAG-n0" bash -c 'for i in $(seq 30); do /bin/true; done'
sleep 0.5
n2=$(fleet query --nodes "$SUBNET.10:7444" "${TLS[@]}" -f csv -q --show-clock "$LIVE" 2>"$WORK/rec_clock.txt" |
  tail -1 | cut -d, -f2)
((n1 > 0 && n2 > n1)) || fail "live query: $n1 then $n2 process events"
python3 - "$WORK/rec_clock.txt" "$REC_OFFSET" <<'PY'
import sys
for line in open(sys.argv[1]):
    f = line.split()
    if f and f[0] == "recnode":
        o, b = float(f[1]), float(f[3])
        assert abs(o - int(sys.argv[2]) / 1e6) <= b, (o, b)
        break
else:
    raise SystemExit("no clock line for recnode")
PY
ip netns exec "$TAG-n0" "$RECORD" cut --ring-dir "$WORK/ring" >"$WORK/cut.txt" || fail "cut"
rm -rf "$WORK/reccut"
fleet collect --nodes "$SUBNET.10:7444" "${TLS[@]}" --since 2000-01-01T00:00:00Z \
  --until 2100-01-01T00:00:00Z -q "$WORK/reccut" || fail "collect from the recorder"
cut=$(cat "$WORK/cut.txt")
got="$WORK/reccut/$(basename "$(dirname "$cut")")/recnode.rsb"
cmp -s "$cut" "$got" || fail "the collected cut $got differs from $cut"
n3=$("$ANALYZE" query "$got" -f csv "$LIVE" | tail -1)
((n3 >= n2)) || fail "the cut has $n3 process events, the live query saw $n2"
kill -INT "$REC_PID"
for _ in $(seq 200); do kill -0 "$REC_PID" 2>/dev/null || break; sleep 0.05; done
kill -0 "$REC_PID" 2>/dev/null && fail "the recorder did not stop within 10 s"
wait "$REC_PID" || fail "the recorder exited with $?: $(tail -3 "$WORK/node0-recorder.log")"
grep -q "serve: $SUBNET.2:[0-9]* \"CN=ws,O=rankscope test\" POST /v1/query 200" "$WORK/node0-recorder.log" ||
  fail "the recorder did not log the queries"
pass "recorder --serve: live ring queried twice ($n1, then $n2 process events), clock +$((REC_OFFSET / 1000000)) ms within its bound, the cut collected byte for byte ($n3)"

# ---- partial: down, another CA, stalled -----------------------------------------------------------
in_time
ip -n "$TAG-n1" link set eth0 down
kill -TERM "${SERVER_PID[2]}"
wait "${SERVER_PID[2]}" 2>/dev/null || true
start_server 2 rogue2
kill -STOP "${SERVER_PID[3]}"
rc=0
t0=$SECONDS
fleet query --nodes "$WORK/nodes.txt" "${TLS[@]}" --timeout 3s -f csv \
  "SELECT COUNT(*) AS calls FROM nccl_events" >"$WORK/partial.csv" 2>"$WORK/partial.txt" || rc=$?
took=$((SECONDS - t0))
kill -CONT "${SERVER_PID[3]}"
((rc == 3)) || fail "partial: exit $rc, want 3: $(cat "$WORK/partial.txt")"
grep -q "warning: node1 ($SUBNET.11:7443): clock: .*\(no connection\|cannot connect\)" "$WORK/partial.txt" ||
  fail "no warning for node1 (down): $(cat "$WORK/partial.txt")"
grep -q "warning: node2 ($SUBNET.12:7443): clock: TLS: the node's certificate is not trusted" "$WORK/partial.txt" ||
  fail "no warning for node2 (another CA): $(cat "$WORK/partial.txt")"
grep -q "warning: node3 ($SUBNET.13:7443): clock: .*no answer within 3.00 s" "$WORK/partial.txt" ||
  fail "no warning for node3 (stalled): $(cat "$WORK/partial.txt")"
(($(grep -c warning "$WORK/partial.txt") == 3)) || fail "partial: $(cat "$WORK/partial.txt")"
want=$("$ANALYZE" query "$WORK/synth/node0.rsb" -f csv "SELECT COUNT(*) AS calls FROM nccl_events" | tail -1)
[[ "$(cat "$WORK/partial.csv")" == "node,calls
node0,$want" ]] || fail "partial: node0's rows: $(cat "$WORK/partial.csv")"
((took <= 8)) || fail "partial: took $took s with --timeout 3s"
sed 's/^/  /' "$WORK/partial.txt"
pass "partial: three warnings naming node1 (down), node2 (another CA), node3 (stalled); node0's rows; exit 3 in $took s"
echo "PASS"
