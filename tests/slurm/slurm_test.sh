#!/usr/bin/env bash
# rankscope-slurm-summarize against a real Slurm: Debian's slurmctld and slurmd (and munged for
# their authentication) started here on loopback with a configuration of their own, a job array
# of 16 tasks summarizing a 16-node synthetic job's bundles, one of them corrupt, and the reduce
# job after it. The reduce job's report must equal the report on the raw bundles (the corrupt
# one skipped by both) and name the node without a summary.
#   slurm_test.sh BUILD_DIR SOURCE_DIR
# Exit 77 = skipped (not root, or Slurm not installed, and CI unset). With CI set, it fails.
set -euo pipefail
BUILD=$(realpath "$1")
SRC=$(realpath "$2")
NODES=16

skip_or_fail() {
  if [[ -n "${CI:-}" ]]; then
    echo "FAIL (CI must not skip): $*"
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}
fail() {
  echo "FAIL: $*"
  for f in "$T"/slurmctld.log "$T"/slurmd.log "$T"/job/.rankscope-summarize-logs/reduce_*.out; do
    [[ -f "$f" ]] && { echo "--- $f"; tail -n 15 "$f"; }
  done
  exit 1
}
((EUID == 0)) || skip_or_fail "needs root (slurmd runs jobs as root here)"
for c in slurmctld slurmd munged sbatch squeue scontrol python3; do
  command -v "$c" >/dev/null || skip_or_fail "$c not installed (apt-get install slurmctld slurmd slurm-client munge)"
done

T=$(mktemp -d /tmp/rankscope-slurm-test.XXXX)
export SLURM_CONF=$T/slurm.conf
cleanup() {
  scontrol shutdown >/dev/null 2>&1 || true
  for f in slurmctld.pid slurmd.pid munged.pid; do
    [[ -f "$T/$f" ]] && kill "$(cat "$T/$f")" 2>/dev/null || true
  done
  sleep 1
  [[ -n "${RANKSCOPE_KEEP_TEST_OUT:-}" ]] && echo "kept $T" || rm -rf "$T"
}
trap cleanup EXIT

# munged with its own key and socket: nothing of a Slurm or munge already on the machine is used.
dd if=/dev/urandom of="$T/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$T/munge.key"
munged -f -S "$T/munge.sock" --key-file="$T/munge.key" --log-file="$T/munged.log" \
  --pid-file="$T/munged.pid" --seed-file="$T/munged.seed" || fail "munged did not start"
read -r ctl_port node_port < <(python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
host=$(hostname -s)
mkdir -p "$T/state" "$T/spool" "$T/job" "$T/bin"
cat >"$SLURM_CONF" <<CONF
ClusterName=rankscope-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctl_port
SlurmdPort=$node_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$T/munge.sock
CredType=cred/munge
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MinJobAge=600
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=rankscope Nodes=ALL Default=YES MaxTime=10 State=UP
CONF
slurmctld -f "$SLURM_CONF" -c || fail "slurmctld did not start"
slurmd -f "$SLURM_CONF" -N "$host" || fail "slurmd did not start"
for ((i = 0; i < 30; i++)); do
  [[ "$(sinfo -h -o %T 2>/dev/null)" == idle ]] && break
  sleep 1
done
[[ "$(sinfo -h -o %T)" == idle ]] || fail "the node never became idle: $(sinfo 2>&1)"
echo "slurm: slurmctld on 127.0.0.1:$ctl_port, slurmd $host on :$node_port, $(nproc) CPUs"

# The job: 16 nodes, one of them (the fault node) starved of CPU, one other's bundle truncated.
seed=${RANKSCOPE_TEST_SEED:-$(date +%s)}
RANDOM=$seed
fault=$((RANDOM % NODES))
corrupt=$(((fault + 1 + RANDOM % (NODES - 1)) % NODES))
echo "seed $seed: cpu fault on node$fault, node$corrupt's bundle truncated"
"$BUILD/tests/support/make-synth-cluster" "$T/job" --nodes "$NODES" --fault cpu \
  --fault-node "$fault" --seed "$seed" >/dev/null
truncate -s 4096 "$T/job/node$corrupt.rsb"
ln -s "$BUILD/analyzer/rankscope-analyze" "$BUILD/merger/rankscope-merge" "$T/bin/"
rc=0
"$BUILD/merger/rankscope-merge" -q -o "$T/raw.rsdb" "$T/job" 2>/dev/null || rc=$?
((rc == 3)) || fail "the raw merge exits $rc, not 3 (the truncated bundle skipped)"
"$BUILD/analyzer/rankscope-analyze" report -q "$T/raw.rsdb" --format json -o "$T/raw.json" || true

start=$SECONDS
"$SRC/analyzer/slurm/rankscope-slurm-summarize" --bin "$T/bin" --out "$T/job.rsdb" --wait "$T/job" \
  -- --time=5 || fail "rankscope-slurm-summarize failed"
echo "slurm: array and reduce done in $((SECONDS - start)) s"
tasks=$(find "$T/job/.rankscope-summarize-logs" -name '*_*.out' ! -name 'reduce_*' | wc -l)
((tasks == NODES)) || fail "expected $NODES array task logs, found $tasks"
summaries=$(find "$T/job" -name '*.rss' | wc -l)
((summaries == NODES - 1)) || fail "expected $((NODES - 1)) summaries, found $summaries"
[[ ! -e "$T/job/node$corrupt.rss" ]] || fail "the truncated bundle has a summary"
grep -q "node$corrupt.rsb" "$T"/job/.rankscope-summarize-logs/*_*.out ||
  fail "no task log names the truncated bundle"
[[ -s "$T/job.json" && -s "$T/job.txt" ]] || fail "the reduce job wrote no report"
python3 "$SRC/tests/cluster/summary_compare.py" "$T/raw.json" "$T/job.json" "$T/job.rsdb" \
  "$T/job" "$T/job" || fail "the report from the Slurm job differs from the raw bundles'"
grep -q "input $T/job/node$corrupt.rss (node ?) was skipped" "$T/job.txt" ||
  fail "the report does not name node$corrupt's missing summary: $(grep -n skipped "$T/job.txt")"
python3 - "$T/job.json" "node$fault" <<'PY' || fail "the verdict does not name the fault node"
import json, sys
r = json.load(open(sys.argv[1]))
top = (r.get("stragglers") or [{}])[0]
print("verdict: %s (%s, %s)" % (top.get("node"), top.get("cause"), top.get("confidence")))
sys.exit(0 if top.get("node") == sys.argv[2] and top.get("cause") == "cpu_contention" else 1)
PY
echo "PASS: slurm"
