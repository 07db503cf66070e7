#!/bin/bash
# Packs rankscope-record with the shared libraries it links (all but glibc's own) into KIT, for
# a node that has none of Debian's packages (e.g. a GPU image): check_real_nccl.sh OUTDIR KIT.
#
#   tests/gpu/pack_recorder.sh BUILD_DIR KIT
set -eu
BUILD=${1:?usage: pack_recorder.sh BUILD_DIR KIT}
KIT=${2:?usage: pack_recorder.sh BUILD_DIR KIT}
mkdir -p "$KIT/lib"
cp "$BUILD/recorder/rankscope-record" "$KIT/"
ldd "$BUILD/recorder/rankscope-record" | awk '$3 ~ /^\// {print $3}' |
  grep -v -E '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" "$KIT/lib/"; done
ls -l "$KIT" "$KIT/lib"
