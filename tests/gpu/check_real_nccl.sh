#!/bin/bash
# Checks rankscope on a GPU node against the real NCCL and CUDA runtime of PyTorch: builds the
# NCCL profiler plugin with the node's C compiler, starts rankscope-record, runs
# real_nccl_job.py (two ranks on GPU 0, the plugin loaded by path through NCCL_PROFILER_PLUGIN),
# stops the recorder while rank 0 is stuck in a collective rank 1 never joins, and keeps the
# bundle, the job's log and NCCL's log in OUTDIR for check_real_nccl.py (run on a workstation).
#
#   tests/gpu/check_real_nccl.sh OUTDIR [KIT]
#
# KIT: a folder holding rankscope-record (the static build, build/recorder/
# rankscope-record-static, runs on any node; a dynamic one finds libraries it needs that the
# node lacks under KIT/lib); default: the rankscope-record on PATH. Needs root (the recorder), python3 with torch, a GPU.
set -u
OUTDIR=${1:?usage: check_real_nccl.sh OUTDIR [KIT]}
KIT=${2:-}
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
mkdir -p "$OUTDIR"
exec > >(tee "$OUTDIR/check.log") 2>&1
step() { echo "== $*"; }

step "node"
uname -r
nvidia-smi -L || { echo "no GPU"; exit 1; }
python3 -c 'import torch; print("torch", torch.__version__, "nccl", ".".join(map(str, torch.cuda.nccl.version())))'
NCCL_SO=$(python3 - <<'PY'
import glob, os, nvidia
for d in nvidia.__path__:
    for p in glob.glob(os.path.join(d, "nccl", "lib", "libnccl.so*")):
        print(os.path.realpath(p)); break
PY
)
echo "libnccl: ${NCCL_SO:-not found in the nvidia wheels}"
ls -l /sys/kernel/btf/vmlinux 2>&1
find / -xdev \( -name 'profiler_v5.h' -o -name 'nccl_profiler.h' \) 2>/dev/null | head -3 |
  sed 's/^/NCCL profiler header: /'

step "plugin built here"
PLUGIN_DIR="$OUTDIR/plugin"
mkdir -p "$PLUGIN_DIR"
# Every C source of the plugin (its tests are C++); -z defs: a source left out fails here, not
# at NCCL's dlopen.
cc -std=c11 -O2 -fPIC -shared -fvisibility=hidden -Wl,-z,nodelete -Wl,-z,defs -Wall \
  -DRANKSCOPE_VERSION='"gpu-check"' -I"$SRC/subprojects/rscore/include" \
  "$SRC"/recorder/plugin/gpu_*.c \
  -o "$PLUGIN_DIR/libnccl-profiler-rankscope.so" -lpthread || { echo "plugin build failed"; exit 1; }
nm -D --defined-only "$PLUGIN_DIR/libnccl-profiler-rankscope.so" | grep -i ncclProfiler
PLUGIN="$PLUGIN_DIR/libnccl-profiler-rankscope.so"

step "recorder"
if [[ -n "$KIT" ]]; then
  RECORD=("env" "LD_LIBRARY_PATH=$KIT/lib" "$KIT/rankscope-record")
else
  RECORD=(rankscope-record)
fi
"${RECORD[@]}" --version
# start_recorder BUNDLE LOG: REC is its pid once it says it records (at most 30 s)
start_recorder() {
  "${RECORD[@]}" --node gpunode --out "$1" -v >"$2" 2>&1 &
  REC=$!
  for ((i = 0; i < 300; i++)); do
    grep -q "recording node" "$2" && break
    kill -0 $REC 2>/dev/null || { echo "recorder exited:"; tail -n 20 "$2"; exit 1; }
    sleep 0.1
  done
  grep "recording node" "$2" || echo "no readiness line; going on"
}
# RANKSCOPE_FR_ONLY=1: only the Flight Recorder jobs below.
if [[ -z ${RANKSCOPE_FR_ONLY:-} ]]; then
start_recorder "$OUTDIR/gpunode.rsb" "$OUTDIR/record.log"

step "short job, the plugin found by its default name on the library path"
ln -sf libnccl-profiler-rankscope.so "$PLUGIN_DIR/libnccl-profiler.so"
SHORT=()
for r in 0 1; do
  env -u NCCL_PROFILER_PLUGIN LD_LIBRARY_PATH="$PLUGIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 \
    timeout 180 python3 "$HERE/real_nccl_job.py" --rank $r --port 29544 --steps 3 --no-hang \
    --log "$OUTDIR/short_rank$r.jsonl" >"$OUTDIR/short_rank$r.log" 2>&1 &
  SHORT+=($!)
done
for p in "${SHORT[@]}"; do wait "$p"; echo "short rank exit: $?"; done
grep -h "PROFILER/Plugin\|rankscope profiler" "$OUTDIR"/short_rank*.log | head -4

# Every profiler API version the node's NCCL offers, each forced by a library that exports
# only that version of the plugin (tests/cluster/gpu_plugin_version_shim.c): NCCL's loader
# (src/plugin/profiler.cc) takes the newest version a plugin exports. NCCL 2.27 offers v4,
# 2.28 v5, 2.29 and 2.30 v6, 2.31 v7, each release the older ones too. Logs vN_rankR.jsonl,
# checked by check_real_nccl.py like the short job's.
step "each profiler API version"
NCCL_MINOR=$(python3 -c 'import torch; print(torch.cuda.nccl.version()[1])' 2>/dev/null || echo 0)
MAXV=$(((NCCL_MINOR >= 31) ? 7 : (NCCL_MINOR >= 29) ? 6 : (NCCL_MINOR >= 28) ? 5 : 4))
for ((v = 4; v <= MAXV; v++)); do
  SHIM="$PLUGIN_DIR/libnccl-profiler-rankscope-v$v.so"
  cc -std=c11 -O2 -fPIC -shared -fvisibility=hidden -Wl,-z,defs -Wall -DRS_SHIM_VERSION=$v \
    -I"$SRC/subprojects/rscore/include" "$SRC/tests/cluster/gpu_plugin_version_shim.c" \
    -o "$SHIM" -ldl || { echo "v$v: shim build failed"; continue; }
  VJOB=()
  for r in 0 1; do
    NCCL_PROFILER_PLUGIN="$SHIM" RS_GPU_PLUGIN="$PLUGIN" NCCL_DEBUG=INFO \
      NCCL_DEBUG_SUBSYS=INIT NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 \
      timeout 180 python3 "$HERE/real_nccl_job.py" --rank $r --port $((29560 + v)) --steps 3 \
      --no-hang --log "$OUTDIR/v${v}_rank$r.jsonl" >"$OUTDIR/v${v}_rank$r.log" 2>&1 &
    VJOB+=($!)
  done
  for p in "${VJOB[@]}"; do wait "$p"; echo "v$v rank exit: $?"; done
  grep -h "PROFILER/Plugin" "$OUTDIR"/v${v}_rank0.log | head -2 | sed "s/^/v$v: /"
done

step "job"
rm -f "$OUTDIR/hang.marker"
JOB=()
for r in 0 1; do
  NCCL_PROFILER_PLUGIN="$PLUGIN" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,NET,PROFILE \
    NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 PYTHONUNBUFFERED=1 \
    setsid python3 "$HERE/real_nccl_job.py" --rank $r --log "$OUTDIR/job_rank$r.jsonl" \
    --hang-marker "$OUTDIR/hang.marker" >"$OUTDIR/job_rank$r.log" 2>&1 &
  JOB+=($!)
done
for ((i = 0; i < 1800; i++)); do
  [[ -e "$OUTDIR/hang.marker" ]] && break
  for p in "${JOB[@]}"; do
    kill -0 "$p" 2>/dev/null || { echo "rank pid $p exited early"; break 2; }
  done
  sleep 0.1
done
[[ -e "$OUTDIR/hang.marker" ]] && echo "rank 0 is in the collective rank 1 never joins"
sleep 2
step "stop the recorder while the job hangs"
kill -INT $REC
wait $REC
echo "recorder exit: $?"
tail -n 30 "$OUTDIR/record.log"
# setsid may have forked: the ranks are found by their command line.
pkill -KILL -f "$HERE/real_nccl_job.py"
for p in "${JOB[@]}"; do wait "$p" 2>/dev/null; done
grep -h -i -E "profiler|NCCL version" "$OUTDIR"/job_rank*.log | sort | uniq -c | head -20
ls -l "$OUTDIR"
fi

# The Flight Recorder jobs: 4 ranks, tp and dp split from the world, NCCL writing the dumps
# (tests/torch/jobs.py --backend nccl says what each does), each under a recording of its own
# that the job stops once every rank dumped (while a hang still holds).
step "Flight Recorder jobs"
for sc in ${RANKSCOPE_FR_SCENARIOS:-healthy slow skipped two_stalls size_mismatch}; do
  d="$OUTDIR/fr/$sc"
  mkdir -p "$d"
  start_recorder "$d/gpunode.rsb" "$d/record.log"
  timeout 240 python3 "$SRC/tests/torch/jobs.py" --backend nccl --plugin "$PLUGIN" \
    --recorder-pid $REC "$d" "$sc"
  echo "$sc: job exit $?"
  kill -INT $REC 2>/dev/null
  wait $REC
  echo "$sc: recorder exit $?"
  grep -E "drop|unrecorded|bundle" "$d/record.log" | tail -n 4
  pkill -KILL -f -- "--nccl-worker $d" 2>/dev/null
  ls -l "$d" "$d/auto" "$d/pickle"
done
