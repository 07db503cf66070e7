#!/usr/bin/env bash
# A Debian sid root holding real PyTorch (python3-torch: CPU, gloo), built once and kept outside
# the source tree, so that tests can run real torch.distributed jobs on a machine where PyPI is
# out of reach and the host's own Debian (bookworm: torch 1.13, no Flight Recorder) is too old.
#
#   setup_chroot.sh ensure               build the root if it is missing or broken; print its path
#   setup_chroot.sh run [--bind DIR] -- CMD [ARG...]
#                                        run CMD inside it (DIR, if given, at /job), after ensure
#   setup_chroot.sh path                 print where the root is (or would be)
#
# Environment:
#   RANKSCOPE_TORCH_ROOT     the root (default /var/cache/rankscope/torch-sid); its lock is
#                            ROOT.lock beside it
#   RANKSCOPE_DEBIAN_MIRROR  the mirror (default http://deb.debian.org/debian)
#
# Needs root, debootstrap (.ci/install-deps), util-linux's unshare and flock, iproute2.
# The first build downloads about 0.6 GB and fills about 2.3 GB (tests/torch/README.md).
#
# Mounts: a job runs in a mount and network namespace of its own (unshare), with /proc, /sys,
# /dev and a fresh tmpfs at /dev/shm bound into the root only there and only while it runs;
# the trap below unmounts them on every exit, and were it killed before that, the namespace's
# mounts end with its last process anyway: nothing is ever left mounted on the host (a stale
# bind of /dev under a cache directory is how an `rm -rf` of the cache wipes the host's /dev).
# The network namespace holds only loopback: the job reaches nothing outside the machine.
set -euo pipefail

ROOT=${RANKSCOPE_TORCH_ROOT:-/var/cache/rankscope/torch-sid}
MIRROR=${RANKSCOPE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
ROOT=${ROOT%/}
LOCK="$ROOT.lock"
STAMP_NAME=.rankscope-torch-stamp
# apt inside the root: the machine's clock may run ahead of the mirror's Release files, whose
# Valid-Until is a week after they were signed; refusing them as expired would make the cache
# unbuildable on such a machine. The signatures are still checked (debootstrap's gpgv and apt's).
APT_OPTS=(-o Acquire::Check-Valid-Until=false -o Acquire::Check-Date=false
  -o Acquire::Retries=3 -o APT::Install-Recommends=false -o Dpkg::Use-Pty=false)

die() {
  echo "setup_chroot: $*" >&2
  exit 1
}

# The root is run as root, with its own programs: a tree another user could write into is a
# root shell for that user. Every directory from / down to the root's parent must be root's
# and writable by nobody else (sticky directories like /tmp included: a name planted there
# before us would be followed).
check_parent() {
  local d
  d=$(dirname "$ROOT")
  mkdir -p -m 0755 "$d"
  d=$(cd "$d" && pwd -P)
  while :; do
    local owner mode
    owner=$(stat -c %u "$d")
    mode=$(stat -c %a "$d")
    if [[ $owner != 0 ]] || (((8#$mode & 8#022) != 0)); then
      die "$d (owner uid $owner, mode $mode) may be written by others than root; put the root" \
        "under a directory only root can write (RANKSCOPE_TORCH_ROOT)"
    fi
    [[ $d == / ]] && break
    d=$(dirname "$d")
  done
}

# in_root DIR CMD...: CMD inside DIR with /proc, /sys, /dev and a tmpfs /dev/shm, in a mount
# namespace of its own (and with NET=none, a network namespace holding only loopback).
in_root() {
  local dir=$1
  shift
  local net=()
  [[ ${NET:-host} == none ]] && net=(--net)
  unshare --mount --propagation private "${net[@]}" -- bash -c '
    set -eu
    dir=$1; shift
    mounted=()
    cleanup() {  # innermost first; lazily where a process still holds one
      local i
      for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" 2>/dev/null || true
      done
    }
    trap cleanup EXIT
    trap "exit 130" INT
    trap "exit 143" TERM
    if [[ -n "${NET_NONE:-}" ]]; then ip link set lo up; fi
    for m in proc sys dev; do
      mkdir -p "$dir/$m"
      mount --bind "/$m" "$dir/$m"
      mounted+=("$dir/$m")
    done
    mkdir -p "$dir/dev/shm"
    mount -t tmpfs -o mode=1777,nosuid,nodev,size=1g tmpfs "$dir/dev/shm"
    mounted+=("$dir/dev/shm")
    if [[ -n "${JOB_DIR:-}" ]]; then
      mkdir -p "$dir/job"
      mount --bind "$JOB_DIR" "$dir/job"
      mounted+=("$dir/job")
    fi
    rc=0
    env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
      LANG=C.UTF-8 ${JOB_ENV:-} chroot "$dir" "$@" || rc=$?
    exit $rc
  ' in_root "$dir" "$@"
}

# Whether the root at DIR works: its stamp names a torch version and that torch imports, with
# torch.distributed and gloo.
probe() {
  local dir=$1 want
  [[ -f "$dir/$STAMP_NAME" ]] || return 1
  want=$(sed -n 's/^torch_version=//p' "$dir/$STAMP_NAME")
  [[ -n $want ]] || return 1
  local got
  got=$(in_root "$dir" python3 -c '
import torch, torch.distributed as dist
assert dist.is_gloo_available()
print(torch.__version__)' 2>/dev/null) || return 1
  [[ $got == "$want" ]]
}

build() {
  command -v debootstrap >/dev/null ||
    die "debootstrap missing: run .ci/install-deps (or apt-get install debootstrap)"
  local parent tmp start=$SECONDS
  parent=$(dirname "$ROOT")
  # What an interrupted build left: a half-made root is never used, only removed.
  # --one-file-system: nothing mounted under it is followed (there never should be).
  find "$parent" -maxdepth 1 -name "$(basename "$ROOT").building.*" -exec \
    rm -rf --one-file-system {} + 2>/dev/null || true
  tmp=$(mktemp -d "$ROOT.building.XXXXXX")
  chmod 0755 "$tmp"
  echo "setup_chroot: building Debian sid + python3-torch in $tmp (from $MIRROR)" >&2
  # debootstrap mounts /proc and /sys in the target itself: inside a mount namespace of our
  # own, an interrupted run leaves none of them behind.
  if ! unshare --mount --propagation private -- \
    debootstrap --variant=minbase --include=ca-certificates sid "$tmp" "$MIRROR" \
    >"$tmp.debootstrap.log" 2>&1; then
    tail -n 20 "$tmp.debootstrap.log" >&2
    die "debootstrap of sid from $MIRROR failed (no network? a mirror down?); log: $tmp.debootstrap.log"
  fi
  rm -f "$tmp.debootstrap.log"
  local apt_line
  apt_line="apt-get ${APT_OPTS[*]} -y -q"
  # No service may start inside the root.
  printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"
  chmod 0755 "$tmp/usr/sbin/policy-rc.d"
  if ! JOB_ENV="DEBIAN_FRONTEND=noninteractive" in_root "$tmp" sh -c \
    "$apt_line update && $apt_line install python3-torch && apt-get clean" \
    >"$tmp.apt.log" 2>&1; then
    tail -n 20 "$tmp.apt.log" >&2
    die "installing python3-torch in $tmp failed; log: $tmp.apt.log"
  fi
  rm -f "$tmp.apt.log"
  local torch_version deb_version python_version
  torch_version=$(in_root "$tmp" python3 -c 'import torch; print(torch.__version__)') ||
    die "torch does not import in the new root $tmp"
  deb_version=$(chroot "$tmp" dpkg-query -W -f '${Version}' python3-torch)
  python_version=$(chroot "$tmp" python3 -c 'import sys; print(sys.version.split()[0])')
  {
    echo "# written by tests/torch/setup_chroot.sh once the root worked"
    echo "torch_version=$torch_version"
    echo "python3_torch_deb=$deb_version"
    echo "python_version=$python_version"
    echo "mirror=$MIRROR"
    echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "build_seconds=$((SECONDS - start))"
    echo "disk_kib=$(du -sk --one-file-system "$tmp" | cut -f1)"
  } >"$tmp/$STAMP_NAME"
  if [[ -e $ROOT ]]; then
    rm -rf --one-file-system "$ROOT"
  fi
  mv "$tmp" "$ROOT"
  echo "setup_chroot: built $ROOT in $((SECONDS - start)) s:" >&2
  sed 's/^/  /' "$ROOT/$STAMP_NAME" >&2
}

# ensure: under the exclusive lock, rebuild unless the root probes well.
ensure() {
  check_parent
  exec {fd}>>"$LOCK"
  flock -x "$fd"
  if ! probe "$ROOT"; then
    [[ -e $ROOT ]] && echo "setup_chroot: $ROOT is missing its stamp or does not work; rebuilding" >&2
    build
    probe "$ROOT" || die "the root just built at $ROOT does not work (python3 -c 'import torch')"
  fi
  exec {fd}>&-
}

cmd=${1:-}
shift || true
case $cmd in
  path)
    echo "$ROOT"
    ;;
  ensure)
    [[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, chroot, mounts)"
    ensure
    echo "$ROOT"
    ;;
  run)
    [[ $(id -u) -eq 0 ]] || die "needs root (chroot, mounts)"
    job_dir=
    while [[ $# -gt 0 && $1 != -- ]]; do
      case $1 in
        --bind)
          job_dir=$(cd "${2:?--bind needs a directory}" && pwd -P)
          shift 2
          ;;
        *) die "run: unknown option $1 (run [--bind DIR] -- CMD...)" ;;
      esac
    done
    [[ ${1:-} == -- ]] && shift
    [[ $# -gt 0 ]] || die "run: no command (run [--bind DIR] -- CMD...)"
    ensure
    # A shared lock while the job runs: no rebuild replaces the root under it.
    exec {fd}>>"$LOCK"
    flock -s "$fd"
    [[ -f "$ROOT/$STAMP_NAME" ]] || die "$ROOT vanished after it was built"
    NET=none NET_NONE=1 JOB_DIR=$job_dir JOB_ENV="${JOB_ENV:-}" in_root "$ROOT" "$@"
    ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
