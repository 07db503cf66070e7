#!/usr/bin/env bash
# What merge, analyze (query, schema, report) and export write (rscore/output.h, README
# "Command line"): never one of their inputs (same path, hard link, symbolic link, a file of an
# input directory, standard output appended to an input), an existing file only with --force,
# with the most restrictive mode of the inputs; nothing left behind, in $TMPDIR or beside the
# output, by a failure or by SIGINT, SIGTERM, SIGHUP, SIGPIPE or SIGKILL; temporaries of killed
# runs removed by the next; every failed write (/dev/full, a full disk) an error naming the file
# or standard output.
set -uo pipefail
set -m  # background jobs in their own process group: SIGINT is not ignored by them
build=$1
work=$(realpath "$(mktemp -d)")
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
export TMPDIR=$work/tmp  # private: every temporary file of the tools appears here
mkdir -p "$TMPDIR" out
umask 022
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
merge=$build/merger/rankscope-merge
analyze=$build/analyzer/rankscope-analyze
export=$build/exporter/rankscope-export
synth=$build/tests/support/make-synth-cluster

mkdir small big && "$synth" small --steps 12 >/dev/null || { echo "FAIL: make-synth-cluster"; exit 1; }
"$merge" -q -o small.rsdb small/ 2>/dev/null || { echo "FAIL: merge small"; exit 1; }
tmp_empty() {  # WHAT: nothing may be left in $TMPDIR
  [[ -z "$(ls -A "$TMPDIR")" ]] || { fail "$1 left in \$TMPDIR: $(ls -A "$TMPDIR")"; rm -f "$TMPDIR"/* "$TMPDIR"/.[!.]*; }
}

# --- An input is never the output --------------------------------------------------------
# COMMAND... exits 2 (usage) with an error naming OUT and INPUT, and leaves INPUT as it was.
refused() {  # INPUT OUT COMMAND...
  local input=$1 out=$2 before rc
  shift 2
  before=$(cksum <"$input")
  "$@" >/dev/null 2>refused.err
  rc=$?
  [[ $rc == 2 ]] || fail "'$*' exits $rc, not 2: $(tail -n 1 refused.err)"
  grep -q -F -- "$out" refused.err && grep -q -F -- "is the input $input" refused.err ||
    fail "'$*': the error names not both $out and $input: $(cat refused.err)"
  [[ $(cksum <"$input") == "$before" ]] || fail "'$*' changed its input $input"
}
ln small/node0.rsb hard.rsb
ln -s "$work/small/node0.rsb" sym.rsb
ln small.rsdb hard.rsdb
ln small/node0.rsb b.rsdb.zst  # --bundle's OUT.zst
ln -s "$work/small.rsdb" sym.rsdb
for force in "" --force; do
  refused small/node0.rsb small/node0.rsb $merge $force -o small/node0.rsb small/node0.rsb small/node1.rsb
  refused small/node0.rsb hard.rsb $merge $force -o hard.rsb small/node0.rsb small/node1.rsb
  refused small/node0.rsb sym.rsb $merge $force -o sym.rsb small/node0.rsb small/node1.rsb
  refused small/node1.rsb small/node1.rsb $merge $force -o small/node1.rsb small/
  refused b.rsdb.zst b.rsdb.zst $merge $force --bundle -o b.rsdb b.rsdb.zst small/node1.rsb
  for input in small.rsdb small/node0.rsb; do
    refused $input $input $export $force $input -o $input
    refused $input $input $analyze report $force $input -o $input
  done
  refused small.rsdb hard.rsdb $export $force small.rsdb -o hard.rsdb
  refused small.rsdb sym.rsdb $export $force small.rsdb -o sym.rsdb
  refused small.rsdb hard.rsdb $analyze report $force small.rsdb -o hard.rsdb
  refused small.rsdb sym.rsdb $analyze report $force small.rsdb -o sym.rsdb
done
# Standard output appended to the input.
for cmd in "$export small.rsdb -o -" "$analyze report small.rsdb" "$merge -o - small/node0.rsb"; do
  input=small.rsdb
  [[ $cmd == "$merge"* ]] && input=small/node0.rsb
  before=$(cksum <$input)
  $cmd >>$input 2>refused.err
  rc=$?
  [[ $rc == 2 ]] || fail "'$cmd >> $input' exits $rc, not 2"
  grep -q "standard output is the input $input" refused.err || fail "'$cmd >> $input': $(cat refused.err)"
  [[ $(cksum <$input) == "$before" ]] || fail "'$cmd >> $input' changed its input"
done
tmp_empty "refused outputs"

# --- An existing file only with --force; the inputs' mode -----------------------------------
existing() {  # FILE COMMAND...: refused while FILE exists, replaced with --force
  local file=$1 rc
  shift
  echo old >"$file"
  "$@" >/dev/null 2>existing.err
  rc=$?
  [[ $rc == 2 ]] || fail "'$*' over an existing $file exits $rc, not 2"
  grep -q -F "$file: exists; give --force to replace it" existing.err || fail "'$*': $(cat existing.err)"
  [[ $(cat "$file") == old ]] || fail "'$*' replaced $file without --force"
  "$@" --force >/dev/null 2>existing.err || fail "'$* --force' fails: $(tail -n 1 existing.err)"
  [[ $(head -c 3 "$file") != old ]] || fail "'$* --force' did not replace $file"
}
existing out/m.rsdb "$merge" -q -o out/m.rsdb small/
existing out/t.pftrace "$export" small.rsdb -o out/t.pftrace
existing out/r.txt "$analyze" report small.rsdb -o out/r.txt
mode() { stat -c %a "$1"; }
[[ $(mode small.rsdb) == 600 && $(mode small/node0.rsb) == 600 ]] || fail "inputs not 0600"
rm -f out/*
"$merge" -q -o out/m.rsdb small/ 2>/dev/null
"$export" small.rsdb -o out/t.pftrace 2>/dev/null
"$export" small/node0.rsb -o out/t.json 2>/dev/null
"$analyze" report small.rsdb -o out/r.txt 2>/dev/null
for f in out/m.rsdb out/t.pftrace out/t.json out/r.txt; do
  [[ $(mode $f) == 600 ]] || fail "$f from a 0600 input has mode $(mode $f), not 600"
done
cp small.rsdb open.rsdb && chmod 644 open.rsdb
"$export" open.rsdb -o out/open.pftrace 2>/dev/null
"$analyze" report open.rsdb -o out/open.txt 2>/dev/null
for f in out/open.pftrace out/open.txt; do
  [[ $(mode $f) == 644 ]] || fail "$f from a 0644 input has mode $(mode $f), not 644"
done
(umask 077 && "$analyze" report open.rsdb -o out/private.txt 2>/dev/null)
[[ $(mode out/private.txt) == 600 ]] || fail "report under umask 077 has mode $(mode out/private.txt)"
rm -f out/* out/.[!.]* open.rsdb
tmp_empty "outputs"

# --- Every write checked: /dev/full ---------------------------------------------------------
# -o names links to the devices: a tool that replaced its output instead of writing to it would
# replace the link, never the device.
ln -s /dev/full full
ln -s /dev/null null
full() {  # RC WHAT DESCRIPTION: the run failed with exit 1, saying what it could not write
  [[ $1 == 1 ]] || fail "$3 exits $1, not 1"
  grep -q -F "no space left on device writing $2" full.err || fail "$3: $(cat full.err)"
  tmp_empty "$3"
}
"$analyze" query small.rsdb "SELECT * FROM nccl_events" >/dev/full 2>full.err
full $? "standard output" "query > /dev/full"
"$analyze" query small/node0.rsb "SELECT * FROM nccl_events" --format json >/dev/full 2>full.err
full $? "standard output" "query --format json > /dev/full"
"$analyze" schema small.rsdb >/dev/full 2>full.err
full $? "standard output" "schema > /dev/full"
"$analyze" report small.rsdb >/dev/full 2>full.err
full $? "standard output" "report > /dev/full"
"$analyze" report small.rsdb -o full 2>full.err
full $? "full" "report -o /dev/full"
"$export" small.rsdb -o - >/dev/full 2>full.err
full $? "standard output" "export -o - > /dev/full"
"$export" small.rsdb -o full 2>full.err
full $? "full" "export -o /dev/full"
"$merge" -q -o - small/ >/dev/full 2>full.err
full $? "standard output" "merge -o - > /dev/full"
"$merge" -q -o full small/ 2>full.err
full $? "full" "merge -o /dev/full"
# /dev/null is written to, never replaced, and needs no --force.
"$export" small.rsdb -o null 2>/dev/null || fail "export -o /dev/null"
"$analyze" report small.rsdb -o null 2>/dev/null || fail "report -o /dev/null"
"$merge" -q -o null small/ 2>/dev/null || fail "merge -o /dev/null"
[[ -L full && -c full && -L null && -c null ]] || fail "-o /dev/full or /dev/null replaced the link"
# A device as input is not "an empty file".
"$analyze" query /dev/zero "SELECT 1" >/dev/null 2>zero.err
[[ $? == 1 ]] && grep -q "/dev/zero: not a regular file" zero.err && ! grep -q "empty" zero.err ||
  fail "query /dev/zero: $(cat zero.err)"
"$merge" -o out/z.rsdb /dev/zero >/dev/null 2>zero.err
grep -q "/dev/zero: not a regular file" zero.err || fail "merge /dev/zero: $(cat zero.err)"
# A full disk during a merge is said as such (a 64 KiB tmpfs in a mount namespace of its own;
# skipped where mounting is not allowed).
mkdir tiny
if unshare -m true 2>/dev/null; then
  unshare -m bash -c "mount -t tmpfs -o size=64k tmpfs tiny || exit 77
    '$merge' -q -o tiny/m.rsdb small/ 2>nospace.err; echo \$? >nospace.rc; ls -A tiny >nospace.left"
  if [[ $? == 77 ]]; then
    echo "note: cannot mount a tmpfs: the full-disk merge is not checked"
  else
    [[ $(cat nospace.rc) == 1 ]] || fail "merge onto a full disk exits $(cat nospace.rc)"
    grep -q -F "no space left on device writing tiny/m.rsdb" nospace.err ||
      fail "merge onto a full disk: $(cat nospace.err)"
    grep -q "copy failed" nospace.err && fail "merge onto a full disk says 'copy failed'"
    [[ -s nospace.left ]] && fail "merge onto a full disk left $(cat nospace.left)"
    tmp_empty "merge onto a full disk"
    # No room for the inputs' decompressed copies (TMPDIR on a tmpfs within the 64 MiB the
    # decompression keeps free): the merge stops at the first input and says where to make
    # room, instead of skipping every input for the same reason.
    unshare -m bash -c "mount -t tmpfs -o size=64m tmpfs tiny || exit 77
      TMPDIR=\$PWD/tiny '$merge' -q -o out/noroom.rsdb small/ 2>noroom.err; echo \$? >noroom.rc"
    [[ $(cat noroom.rc) == 1 ]] || fail "merge without room for its temporaries exits $(cat noroom.rc)"
    grep -q "set TMPDIR to a file system with room" noroom.err && ! grep -q "skipping" noroom.err ||
      fail "merge without room for its temporaries: $(cat noroom.err)"
    [[ ! -e out/noroom.rsdb ]] || fail "merge without room for its temporaries left out/noroom.rsdb"
  fi
else
  echo "note: no mount namespace: the full-disk merge is not checked"
fi

# --- Temporaries of a killed run are removed by the next -----------------------------------
gone=$(sh -c 'echo $$')  # a process that has exited
stale=out/.t.pftrace.tmp-rankscope-$gone-abcdef
echo partial >"$stale"
touch -d '-2 min' "$stale"
"$export" small.rsdb -o out/t.pftrace 2>stale.err || fail "export after a killed run"
[[ -e $stale ]] && fail "the temporary of a killed run is still there"
grep -q -F "removed out/.t.pftrace.tmp-rankscope-$gone-abcdef, left by an interrupted run" stale.err ||
  fail "the removal is not reported: $(cat stale.err)"
rm -f out/*

# --- Interrupted: nothing left ----------------------------------------------------------------
# A recording large enough that each tool is still running when the signal comes.
"$synth" big --nodes 4 --steps 1500 --extra-sched 40 >/dev/null || fail "make-synth-cluster big"
"$merge" -q -o big.rsdb big/ 2>/dev/null || fail "merge big"
listing() { ls -A out "$TMPDIR"; }
# Starts COMMAND..., stops it once it has a temporary file open (in out/ or $TMPDIR), sends it
# SIGNAL, lets it go on, and checks that it died of that signal and left nothing. A run that
# ended before it could be stopped (a busy machine) is tried again, up to 5 times.
interrupt() {  # SIGNAL COMMAND...
  local sig=$1 before pid rc i attempt
  shift
  before=$(listing)
  for ((attempt = 1; attempt <= 5; attempt++)); do
    "$@" >/dev/null 2>int.err &
    pid=$!
    for ((i = 0; i < 20000; i++)); do
      ls -l /proc/$pid/fd 2>/dev/null | grep -q -E -- "-> ($work/out|$TMPDIR)/" && break
      [[ "$(listing)" != "$before" ]] && break
      kill -0 $pid 2>/dev/null || break
    done
    kill -s STOP $pid 2>/dev/null  # the signal arrives while the temporary is there
    kill -s "$sig" $pid 2>/dev/null
    kill -s CONT $pid 2>/dev/null
    { wait $pid; } 2>/dev/null
    rc=$?
    while ((rc == 128 + $(kill -l STOP))); do  # wait reported the stop: wait for the end
      { wait $pid; } 2>/dev/null
      rc=$?
    done
    [[ $rc == 0 ]] || break
    rm -f out/*  # done before the signal: its output is no leftover
  done
  [[ $rc == $((128 + $(kill -l "$sig"))) ]] || fail "SIG$sig: '$*' exits $rc: $(tail -n 1 int.err)"
  [[ "$(listing)" == "$before" ]] || fail "SIG$sig: '$*' left: $(diff <(echo "$before") <(listing) | grep '^>')"
  rm -rf "${TMPDIR:?}"/* "$TMPDIR"/.[!.]* out/* out/.[!.]*
}
slow_sql="SELECT COUNT(*) FROM sched_events a, sched_events b"
for sig in INT TERM HUP PIPE KILL; do
  interrupt $sig "$merge" -q -o out/m.rsdb big/
  interrupt $sig "$merge" -q -o - big/
  interrupt $sig "$export" big.rsdb -o out/t.pftrace
  interrupt $sig "$export" big/node1.rsb -o out/t.json
  interrupt $sig "$analyze" report big/node2.rsb -o out/r.html --format html
  interrupt $sig "$analyze" query big/node3.rsb "$slow_sql"
done
# SIGPIPE from a reader that went away.
"$export" big.rsdb -o - --compression none | head -c 10 >/dev/null
[[ ${PIPESTATUS[0]} == 141 ]] || fail "export -o - | head: exit ${PIPESTATUS[0]}, not 141 (SIGPIPE)"
"$analyze" query big/node0.rsb "SELECT * FROM sched_events" | head -n 1 >/dev/null
[[ ${PIPESTATUS[0]} == 141 ]] || fail "query | head: exit ${PIPESTATUS[0]}, not 141 (SIGPIPE)"
tmp_empty "SIGPIPE from a reader"

if ((fails)); then echo "$fails failure(s)"; exit 1; fi
echo "PASS"
