#!/usr/bin/env bash
# `meson install` into an empty root (DESTDIR): the tools on PATH-style directories, the
# plugin under its own name only (libnccl-profiler.so, the name every NCCL job loads when
# NCCL_PROFILER_PLUGIN is unset, is installed only with -Dnccl_profiler_default=true), the man
# pages and the unit; then the installed tools, run from there with nothing of the build
# directory on their paths, merge and report a synthetic cluster.
# Usage: install_test.sh BUILD_DIR
set -uo pipefail
build=$(realpath "$1")
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

prefix=$(meson introspect "$build" --buildoptions |
  python3 -c 'import json,sys; o={x["name"]: x["value"] for x in json.load(sys.stdin)}
print(o["prefix"], o["libdir"], o["nccl_profiler_default"])') || { echo "FAIL: introspect"; exit 1; }
read -r pfx libdir default_link <<<"$prefix"
meson install -C "$build" --destdir "$root" --no-rebuild --quiet >"$root.log" 2>&1 ||
  { echo "FAIL: meson install: $(tail -n 5 "$root.log")"; rm -f "$root.log"; exit 1; }
rm -f "$root.log"
top=$root$pfx
[[ "$libdir" == /* ]] || libdir=$pfx/$libdir
lib=$root$libdir

for tool in bin/rankscope-analyze bin/rankscope-merge bin/rankscope-export bin/rankscope-fleet \
  bin/rankscope-slurm-summarize sbin/rankscope-record sbin/rankscope-serve; do
  [[ -x "$top/$tool" ]] || fail "$tool not installed under $pfx"
done
[[ -f "$lib/libnccl-profiler-rankscope.so" ]] || fail "the plugin is not in $libdir"
if [[ "$default_link" == true ]]; then
  [[ -L "$lib/libnccl-profiler.so" ]] || fail "-Dnccl_profiler_default=true but no link installed"
else
  [[ ! -e "$lib/libnccl-profiler.so" && ! -L "$lib/libnccl-profiler.so" ]] ||
    fail "libnccl-profiler.so installed: every NCCL job on the machine would load the plugin"
fi
for page in man1/rankscope-analyze.1 man1/rankscope-merge.1 man1/rankscope-export.1 \
  man1/rankscope-slurm-summarize.1 \
  man5/rankscope-bundle.5 man7/libnccl-profiler-rankscope.7 man8/rankscope-record.8; do
  [[ -f "$top/share/man/$page" ]] || fail "man page $page not installed"
done
[[ -f "$top/lib/systemd/system/rankscope-record.service" ]] || fail "systemd unit not installed"
grep -q "^ExecStart=$pfx/sbin/rankscope-record " "$top/lib/systemd/system/rankscope-record.service" ||
  fail "the unit does not run the installed recorder"

# The installed tools alone: no build directory on any path they use.
work=$root/work
mkdir -p "$work"
"$build/tests/support/make-synth-cluster" "$work" --fault slow --fault-node 2 --steps 12 \
  >/dev/null || { echo "FAIL: make-synth-cluster"; exit 1; }
cd "$work" || exit 1
for tool in rankscope-analyze rankscope-merge rankscope-export; do
  env -i PATH="$top/bin:/usr/bin:/bin" "$tool" --help >/dev/null 2>&1 ||
    fail "installed $tool --help fails"
done
env -i PATH="$top/sbin:/usr/bin:/bin" rankscope-record --version >/dev/null 2>&1 ||
  fail "installed rankscope-record --version fails"
env -i PATH="$top/bin:/usr/bin:/bin" rankscope-merge -q -o job.rsdb node*.rsb >/dev/null 2>&1 ||
  fail "installed rankscope-merge fails"
out=$(env -i PATH="$top/bin:/usr/bin:/bin" rankscope-analyze report job.rsdb --format json 2>/dev/null)
node=$(python3 -c 'import json,sys; s=json.load(sys.stdin)["stragglers"]; print(s[0]["node"] if s else "-")' \
  <<<"$out" 2>/dev/null)
[[ "$node" == node2 ]] || fail "installed rankscope-analyze names '$node', not node2 (slow)"

if ((fails)); then
  echo "$fails failure(s)"
  exit 1
fi
echo "ok: installed under $pfx into an empty root; tools run from there"
