#!/usr/bin/env bash
# The static recorder on a node where nothing is installed: rankscope-record-static is copied
# alone into an empty root directory (no loader, no libraries) and run there in a private mount
# namespace with a fresh /proc and /sys (so no tracefs mount: the recorder mounts its own, in a
# mount namespace of its own, and must come back to the chroot to write its bundle) and /dev,
# while the test bed's NCCL runs on the host. Its bundle must hold the host's process events
# and the NCCL calls.
#   static_recorder_test.sh BUILD_DIR
# Exit 77 = skipped (not root and CI unset). With CI set, a missing prerequisite fails.
set -euo pipefail
BUILD=$1
STATIC=$BUILD/recorder/rankscope-record-static
ANALYZE=$BUILD/analyzer/rankscope-analyze
SCENARIO=$BUILD/tests/capture/nccl_scenario

skip_or_fail() {
  if [[ -n "${CI:-}" ]]; then
    echo "FAIL (CI must not skip): $*"
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}
((EUID == 0)) || skip_or_fail "needs root: run 'sudo meson test -C build static recorder'"
for f in "$STATIC" "$ANALYZE" "$SCENARIO"; do
  [[ -x "$f" ]] || skip_or_fail "$f is not built"
done

fail() {
  echo "FAIL: $*"
  exit 1
}

# Nothing for a loader to load: no dynamic section, no interpreter.
readelf -d "$STATIC" 2>&1 | grep -q "no dynamic section" ||
  fail "$STATIC has a dynamic section: $(readelf -d "$STATIC" | grep NEEDED | tr -s ' ')"
! readelf -l "$STATIC" | grep -q "program interpreter" || fail "$STATIC names a program interpreter"

ROOT=$(mktemp -d /tmp/rankscope-static.XXXX)
KID=
REC=
cleanup() {
  local p
  for p in $KID $REC; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  rm -rf "$ROOT"
}
trap cleanup EXIT
mkdir -p "$ROOT"/{proc,sys,dev,out}
strip -o "$ROOT/rankscope-record" "$STATIC"
echo "static recorder: $(stat -c %s "$STATIC") bytes, $(stat -c %s "$ROOT/rankscope-record") stripped"
[[ -z "$(find "$ROOT" -name '*.so*' -o -name 'ld-linux*')" ]] || fail "libraries in $ROOT"

# An NCCL process on the host, waiting for a line before its collectives.
coproc SCEN { RANKSCOPE_TESTLIB_NO_PEERS=1 exec "$SCENARIO" local 2>&1; }
SCEN_PID_SEEN=$SCEN_PID
KID=$SCEN_PID
exec {to_scen}>&"${SCEN[1]}" {from_scen}<&"${SCEN[0]}"

# The recorder in the empty root, in a mount namespace of its own that the test throws away.
unshare -m --propagation private bash -c '
  root=$1
  mount -t proc proc "$root/proc"
  mount -t sysfs sysfs "$root/sys"
  mount --rbind /dev "$root/dev"
  exec chroot "$root" /rankscope-record -v --duration 4s -o /out/node.rsb
' _ "$ROOT" >"$ROOT/record.log" 2>&1 &
REC=$!
for ((i = 0; i < 100; i++)); do
  grep -q "recording node" "$ROOT/record.log" && break
  kill -0 "$REC" 2>/dev/null || break
  sleep 0.1
done
grep -q "recording node" "$ROOT/record.log" || fail "the recorder did not start: $(cat "$ROOT/record.log")"
sleep 0.5  # its first scan of the processes
for k in 1 2 3; do /bin/true; done  # exec and exit events on the host
echo go >&"$to_scen"
done_seen=
while read -r -t 20 line <&"$from_scen"; do
  [[ "$line" == done* ]] && done_seen=1 && break
done
[[ -n "$done_seen" ]] || fail "nccl_scenario did not finish"
echo exit >&"$to_scen"
wait "$SCEN_PID_SEEN" 2>/dev/null || true
KID=
rc=0
wait "$REC" || rc=$?
grep -v "attached " "$ROOT/record.log"
((rc == 0)) || fail "the recorder exited $rc"
grep -q "tracefs mounted at /sys/kernel/tracing in the recorder's own mount namespace" \
  "$ROOT/record.log" || fail "the recorder did not mount tracefs itself"
grep -q "(8 of 8 sources)" "$ROOT/record.log" || fail "not every source attached"
[[ -s "$ROOT/out/node.rsb" ]] || fail "no bundle at $ROOT/out/node.rsb"

count() {  # table [where] -> rows
  "$ANALYZE" query "$ROOT/out/node.rsb" --format csv \
    "SELECT count(*) FROM $1 ${2:+WHERE $2}" | tail -n 1
}
execs=$(count process_events "event = 'exec' AND comm = 'true'")
nccl=$(count nccl_events "pid = $SCEN_PID_SEEN")
echo "bundle: $execs exec events of true, $nccl nccl_events of the scenario"
((execs >= 3)) || fail "$execs exec events of /bin/true, expected 3"
((nccl > 0)) || fail "no NCCL calls of the scenario (pid $SCEN_PID_SEEN)"
# Where the kernel has uprobe_multi links (6.6+), the chroot must not hide them.
method=$("$ANALYZE" query "$ROOT/out/node.rsb" --format csv \
  "SELECT method FROM sources WHERE source = 'nccl'" | tail -n 1)
IFS=. read -r major minor _ <<<"$(uname -r)"
if ((major > 6 || (major == 6 && minor >= 6))); then
  [[ "$method" == uprobe_multi ]] || fail "nccl attached by '$method' on $(uname -r), not uprobe_multi"
fi
echo "nccl attached by $method on Linux $(uname -r)"
echo "PASS"
