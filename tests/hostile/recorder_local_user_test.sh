#!/usr/bin/env bash
# The root recorder among untrusted local users: what an unprivileged user (nobody) can plant
# where the real rankscope-record writes, reads and signals, and what the recorder must do.
#   1. --out in a sticky directory everybody writes (as /var/tmp): links planted at every
#      name the recorder ever used there (NAME.partial, NAME.rsb.partial, the bundle itself)
#      and, while it records, at its working files: a root-only file stays untouched, and the
#      bundle is written.
#   2. --out in a directory everybody writes without the sticky bit, a cut directory nobody
#      may write, a ring directory under a directory nobody owns: refused at start (exit 1),
#      nothing written.
#   3. A cut directory whose contents a stranger controls (as after a loosened mode; made here
#      by root and given to nobody): a FIFO request, a request linked to /dev/zero, a 100 GiB sparse
#      one, 60 requests of nobody, a CUT-ID linked to a root-only directory, a forged log line
#      in a request. The recorder refuses each (one line each), keeps cutting on request,
#      stops on SIGTERM at once with its stop cut, and rotation deletes nothing outside.
#   4. A recorder.pid left behind naming a live process of nobody: `cut` does not signal it,
#      and a new --ring start is not refused.
# Usage: recorder_local_user_test.sh BUILD_DIR
set -euo pipefail
BUILD=$1
REC=$BUILD/recorder/rankscope-record

fail() { echo "FAIL: $*" >&2; exit 1; }
if [[ $EUID -ne 0 ]]; then
  [[ -n "${CI:-}" ]] && fail "needs root (CI is set: a skip fails the run)"
  echo "SKIP: needs root"; exit 77
fi
command -v setpriv >/dev/null || fail "setpriv (util-linux) is missing"
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
as_nobody() { "${nobody[@]}" "$@"; }

dir=$(mktemp -d /tmp/rs_local_user.XXXXXX)
chmod 0755 "$dir"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT

# A file only root may read or write, which every planted link points at.
secret=$dir/root-only/victim
mkdir -m 0700 "$dir/root-only"
printf 'precious\n' >"$secret"
chmod 0644 "$secret"
victim_unchanged() {
  [[ $(cat "$secret") == precious ]] || fail "$1: the root-only file was written"
  [[ $(stat -c %a "$secret") == 644 ]] || fail "$1: the root-only file was chmod-ed"
}

wait_for() {  # wait_for FILE TEXT SECONDS
  for ((i = 0; i < $3 * 10; ++i)); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# --- 1. --out in a sticky directory everybody writes ---------------------------------
shared=$dir/shared
mkdir -m 1777 "$shared"
for name in n1.rsb.partial n1.rsb n1.rsb.journal; do
  as_nobody ln -s "$secret" "$shared/$name"
done
# While recording: plant links at every name inside whatever the recorder creates there.
"${nobody[@]}" bash -c '
  for ((i = 0; i < 300; ++i)); do
    for d in "$1"/.n1.rsb.rec-*; do
      [[ -d $d ]] || continue
      for f in recording.db-journal recording.db-wal recording.db.reserve x; do
        ln -s "$2" "$d/$f" 2>/dev/null
      done
    done
    for f in "$1"/.n1.rsb.partial-*; do ln -sf "$2" "$f" 2>/dev/null; done
    sleep 0.01
  done' planter "$shared" "$secret" &
planter=$!
pids+=($planter)
"$REC" --out "$shared/n1.rsb" --force --duration 2s --node n1 --sources process \
  2>"$dir/out.log" || fail "recording into $shared: $(cat "$dir/out.log")"
kill "$planter" 2>/dev/null || true
wait "$planter" 2>/dev/null || true
victim_unchanged "--out in a sticky shared directory"
[[ -f $shared/n1.rsb && ! -L $shared/n1.rsb ]] || fail "no bundle at $shared/n1.rsb"
zstd -tq "$shared/n1.rsb" || fail "the bundle is not whole"
[[ $(stat -c '%U %a' "$shared/n1.rsb") == "root 600" ]] || fail "bundle owner/mode"
if ls -a "$shared" | grep -q '\.rec-'; then fail "a working directory was left: $(ls -a "$shared")"; fi
echo "ok   --out in a sticky shared directory: planted links not followed"

# --- 2. directories refused at start ------------------------------------------------
open=$dir/open
mkdir -m 0777 "$open"
if "$REC" --out "$open/n1.rsb" --duration 1s --node n1 --sources process 2>"$dir/open.log"; then
  fail "--out in a directory everybody may write (no sticky bit) was accepted"
fi
grep -q "without the sticky bit" "$dir/open.log" || fail "open: $(cat "$dir/open.log")"
[[ -z $(ls -A "$open") ]] || fail "open: something was written: $(ls -A "$open")"

mkdir -m 0700 "$dir/ring-a"
mkdir -m 1777 "$dir/cuts-open"
if "$REC" --ring 30s --ring-dir "$dir/ring-a" --cut-dir "$dir/cuts-open" --node n1 \
  --sources process --duration 1s 2>"$dir/cuts-open.log"; then
  fail "a cut directory everybody may write was accepted"
fi
grep -q -- "--cut-dir $dir/cuts-open: .* is writable by others" "$dir/cuts-open.log" ||
  fail "cuts-open: $(cat "$dir/cuts-open.log")"
[[ ! -e $dir/ring-a/recorder.pid ]] || fail "the refused recorder claimed the ring directory"

mkdir -m 0755 "$dir/theirs"
chown 65534:65534 "$dir/theirs"
if "$REC" --ring 30s --ring-dir "$dir/theirs/ring" --node n1 --sources process --duration 1s \
  2>"$dir/theirs.log"; then
  fail "a ring directory under a directory of nobody was accepted"
fi
grep -q "is owned by uid 65534" "$dir/theirs.log" || fail "theirs: $(cat "$dir/theirs.log")"
echo "ok   unsafe directories refused at start"

# --- 3. a cut directory with a stranger's files in it --------------------------------
ring=$dir/ring
cuts=$ring/cuts
mkdir -p -m 0700 "$cuts"
mkdir -m 0700 "$dir/root-only/elsewhere"
printf 'x%.0s' {1..2000} >"$dir/root-only/elsewhere/n1.rsb"
# What nobody would have made there (the path above is root's, so root makes it and gives
# it to nobody): plant ID makes a CUT-ID directory, own FILE gives a file away.
plant() { mkdir -m 0755 "$cuts/$1" && chown 65534:65534 "$cuts/$1"; }
own() { chown -h 65534:65534 "$1"; }
plant 20990101T000000Z-request-fifo
mkfifo "$cuts/20990101T000000Z-request-fifo/request"
own "$cuts/20990101T000000Z-request-fifo/request"
plant 20990101T000001Z-request-zero
ln -s /dev/zero "$cuts/20990101T000001Z-request-zero/request"
own "$cuts/20990101T000001Z-request-zero/request"
plant 20990101T000002Z-request-huge
truncate -s 100G "$cuts/20990101T000002Z-request-huge/request"
own "$cuts/20990101T000002Z-request-huge/request"
for i in $(seq -w 10 69); do
  plant "20990101T0001${i}Z-request-flood"
  printf 'node=flood\ncut_ns=%s\nreason=request\n' "$(date +%s%N)" \
    >"$cuts/20990101T0001${i}Z-request-flood/request"
  own "$cuts/20990101T0001${i}Z-request-flood/request"
done
ln -s "$dir/root-only/elsewhere" "$cuts/20000101T000000Z-stop"
mkdir -m 0700 "$cuts/20990101T000003Z-request-spoof"
printf 'node=n2\nrankscope-record: wrote /etc/shadow\ncut_ns=%s\nreason=request x\n' \
  "$(date +%s%N)" >"$cuts/20990101T000003Z-request-spoof/request"

"$REC" --ring 30s --ring-dir "$ring" --node n1 --sources process --cut-keep 1 \
  2>"$dir/ring.log" &
rec=$!
pids+=($rec)
wait_for "$dir/ring.log" "recording node" 20 || fail "ring recorder not ready: $(cat "$dir/ring.log")"
sleep 1.5  # the cut directory is read twice a second
cut=$(timeout 30 "$REC" cut --ring-dir "$ring") || fail "cut: $(cat "$dir/ring.log")"
[[ -f $cut ]] || fail "cut printed $cut, which does not exist"
start=$SECONDS
kill -TERM "$rec"
timeout 30 tail --pid="$rec" -f /dev/null || fail "the recorder did not stop on SIGTERM"
wait "$rec" || fail "the ring recorder exited $?: $(cat "$dir/ring.log")"
((SECONDS - start < 30)) || fail "stopping took $((SECONDS - start)) s"
for id in fifo zero huge flood spoof; do
  grep -q "cut request $cuts/20990101T[0-9]*Z-request-$id refused" "$dir/ring.log" ||
    fail "no refusal logged for $id: $(cat "$dir/ring.log")"
done
grep -q "20000101T000000Z-stop refused: a symbolic link" "$dir/ring.log" ||
  fail "the linked CUT-ID was not refused: $(cat "$dir/ring.log")"
if grep -q "^rankscope-record: wrote /etc/shadow" "$dir/ring.log"; then fail "a forged log line"; fi
n_cuts=$(find "$cuts" -name n1.rsb | wc -l)
((n_cuts <= 2)) || fail "$n_cuts cuts were made: $(find "$cuts" -name n1.rsb)"
[[ -f $dir/root-only/elsewhere/n1.rsb ]] || fail "rotation deleted a file outside the cut directory"
victim_unchanged "the cut directory"
echo "ok   a stranger's files in the cut directory refused; cut, stop and rotation as usual"

# --- 4. a pid file left behind, naming a process of nobody ----------------------------
ring2=$dir/ring2
mkdir -m 0700 "$ring2"
"${nobody[@]}" sleep 60 &  # not through a function: $! is then sleep itself
sleeper=$!
pids+=($sleeper)
sleep 0.2
echo "$sleeper" >"$ring2/recorder.pid"
if timeout 10 "$REC" cut --ring-dir "$ring2" 2>"$dir/cut2.log"; then fail "cut believed a stale pid file"; fi
grep -q "no recorder holds it" "$dir/cut2.log" || fail "cut2: $(cat "$dir/cut2.log")"
sleep 0.2
kill -0 "$sleeper" || fail "the unrelated process named by a stale pid file was signalled"
"$REC" --ring 30s --ring-dir "$ring2" --node n1 --sources process --duration 1s \
  2>"$dir/ring2.log" || fail "a start was refused for a stale pid file: $(cat "$dir/ring2.log")"
kill -0 "$sleeper" || fail "the unrelated process ended"
echo "ok   a stale pid file names nobody"
echo "PASS"
