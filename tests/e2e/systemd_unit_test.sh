#!/usr/bin/env bash
# The systemd unit the build installs (recorder/systemd/rankscope-record.service.in): its
# recorder options parse, and systemd itself finds nothing wrong with it (where
# systemd-analyze exists; the installed paths are replaced by the build's).
# Usage: systemd_unit_test.sh BUILD_DIR
set -euo pipefail
BUILD=$1
UNIT=$BUILD/recorder/rankscope-record.service
REC=$BUILD/recorder/rankscope-record
fail() { echo "FAIL: $*" >&2; exit 1; }

[[ -f "$UNIT" ]] || fail "$UNIT not generated"
exec_start=$(sed -n 's/^ExecStart=//p' "$UNIT")
[[ $(wc -l <<<"$exec_start") -eq 1 && -n "$exec_start" ]] || fail "one ExecStart= expected"
[[ "${exec_start%% *}" == */sbin/rankscope-record ]] || fail "ExecStart runs ${exec_start%% *}"
read -r -a args <<<"${exec_start#* }"
# Every option is known and takes a valid value; --ring must be there (always on).
"$REC" "${args[@]}" --version >/dev/null || fail "the unit's options do not parse: ${args[*]}"
printf '%s\n' "${args[@]}" | grep -qx -- --ring || fail "the unit does not record always on"
for cap in CAP_BPF CAP_PERFMON; do
  grep -q "^CapabilityBoundingSet=.*$cap" "$UNIT" || fail "$cap not in the bounding set"
done

if command -v systemd-analyze >/dev/null; then
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
  sed "s|^ExecStart=[^ ]*|ExecStart=$(realpath "$REC")|" "$UNIT" >"$dir/rankscope-record.service"
  # The man page is found only once installed.
  out=$(systemd-analyze verify "$dir/rankscope-record.service" 2>&1 |
    grep -v "Command 'man rankscope-record(8)' failed" || true)
  [[ -z "$out" ]] || fail "systemd-analyze verify: $out"
  echo "ok: systemd-analyze verify finds nothing"
else
  echo "note: systemd-analyze not installed; the unit's syntax is not checked"
fi
echo "ok: the unit's options parse: ${args[*]}"
