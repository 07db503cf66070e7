#!/usr/bin/env bash
# Cluster tests: run the harness for one scenario and check the recorded bundles for the
# physical trace of the injected fault, on the faulty node and not elsewhere.
#   cluster_test.sh BUILD_DIR SOURCE_DIR SCENARIO
# SCENARIO: none | loss | cpu | io | slow | hang | crash (the test bed as GPU nodes run:
# collectives enqueued, run later on each rank's device, NCCL's profiler plugin loaded),
# sync_none | sync_slow | sync_hang (the same with blocking collectives, a CPU framework),
# interrupt, clock (merge's clock alignment in both modes, with and without the plugin),
# entry_lateness (the slow fault in both modes: what host-side entry times can show),
# ring_hang (always-on recorders cut by themselves on the hang, one bundle set for the cluster),
# graph (CUDA graph replays recorded apart and compared on their replay numbers),
# rdma (a degraded RDMA link: fake sysfs counters and late sends, no TCP retransmit needed),
# nonblocking (non-blocking communicators: NCCL launches on a thread of its own),
# record_late (recorders started after the job created its communicators).
# Exit 77 = skipped (not root and CI unset). With CI set, a missing prerequisite fails.
set -euo pipefail

BUILD=$1
SRC=$2
SCENARIO=$3
HARNESS="$SRC/tests/cluster/run-cluster"
NODES=3
RPN=2
STEPS=30
FAULT_NODE=1
WORLD=$((NODES * RPN))

skip_or_fail() {
  if [[ -n "${CI:-}" ]]; then
    echo "FAIL (CI must not skip): $*"
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}
fail() {
  echo "FAIL [$SCENARIO]: $*"
  exit 1
}
((EUID == 0)) || skip_or_fail "needs root: run 'sudo meson test -C build --suite cluster'"
[[ -x "$BUILD/tests/cluster/rankscope-trainer" ]] || fail "rankscope-trainer not built"
command -v sqlite3 >/dev/null || skip_or_fail "sqlite3 CLI not installed (apt-get install sqlite3)"
if [[ "$SCENARIO" != crash && "$SCENARIO" != interrupt && ! -x "$BUILD/recorder/rankscope-record" ]]; then
  skip_or_fail "rankscope-record is not built in $BUILD (the recorder is needed for this test)"
fi

OUT=$(mktemp -d "/tmp/rankscope-cluster-test.$$.XXXX")
# RANKSCOPE_KEEP_TEST_OUT=1 keeps the bundles and logs of a failed run for a look.
trap '[[ -n "${RANKSCOPE_KEEP_TEST_OUT:-}" ]] && echo "kept $OUT" || rm -rf "$OUT"' EXIT

# What the machine looks like before, to prove the harness leaves nothing behind.
snapshot() {
  {
    ip netns list | grep -c '^rs[0-9]*-' || true
    ls /sys/fs/cgroup/cpu | grep -c '^rs[0-9]*-node' || true
    losetup -a | grep -c 'rankscope-cluster\.' || true
    pgrep -c -f 'rankscope-cluster\.[0-9]|rankscope-burn' || true
    { compgen -G "/tmp/rankscope-cluster.[0-9]*" || true
      compgen -G "/dev/shm/rankscope-cluster.[0-9]*" || true; } | wc -l
  } | tr '\n' ' '
}
BEFORE=$(snapshot)

MODE=async
BUCKETS=2  # the harness's default in async mode (1 in sync mode)
run_harness() {  # fault [extra args]: bounded in time; the harness must finish by itself
  local fault=$1
  shift
  local start=$SECONDS rc=0
  timeout -s INT 240 "$HARNESS" --build "$BUILD" --out "$OUT/run" --collectives "$MODE" --nodes "$NODES" \
    --ranks-per-node "$RPN" --steps "$STEPS" --fault "$fault" --fault-node "$FAULT_NODE" \
    --timeout 120 --no-tools "$@" >"$OUT/harness.out" 2>&1 || rc=$?
  echo "harness: fault=$fault collectives=$MODE exit=$rc in $((SECONDS - start)) s"
  HARNESS_RC=$rc
  ((rc != 124)) || fail "the harness did not finish within 240 s"
}

open_bundles() {  # decompress each node's bundle (what a user does after scp)
  local k
  for ((k = 0; k < NODES; k++)); do
    [[ -f "$OUT/run/bundles/node$k.rsb" ]] || fail "node$k left no bundle: $(cat "$OUT/harness.out")"
    zstd -q -dc "$OUT/run/bundles/node$k.rsb" >"$OUT/node$k.db" || fail "node$k.rsb is not zstd"
  done
}
q() {  # node_index sql -> single value
  sqlite3 -batch -noheader "$OUT/node$1.db" "$2"
}
# All nodes' nccl_events in one view (each bundle stays separate on disk).
all_nccl_sql() {
  local k sql=""
  for ((k = 0; k < NODES; k++)); do
    [[ -n "$sql" ]] && sql+=" UNION ALL "
    sql+="SELECT '$k' AS node_index, * FROM n$k.nccl_events"
  done
  echo "$sql"
}
qall() {  # sql over view `ev` (all nodes' nccl_events)
  local k attach=""
  for ((k = 0; k < NODES; k++)); do attach+="ATTACH '$OUT/node$k.db' AS n$k; "; done
  sqlite3 -batch -noheader ":memory:" "$attach CREATE TEMP VIEW ev AS $(all_nccl_sql); $1"
}
fault_addr() { echo "10.77.0.$((10 + FAULT_NODE))"; }
COLL="op IN ('ALL_REDUCE','ALL_GATHER','BROADCAST','REDUCE','REDUCE_SCATTER')"

check_no_leftovers() {
  local after
  after=$(snapshot)
  [[ "$after" == "$BEFORE" ]] ||
    fail "the harness left things behind (netns cgroups loops processes workdirs): before '$BEFORE' after '$after'"
}

# Each node's bundle holds only its own ranks, with rank, nranks and communicator known.
check_own_ranks() {
  local k lo hi
  for ((k = 0; k < NODES; k++)); do
    lo=$((k * RPN))
    hi=$((lo + RPN - 1))
    [[ $(q $k "SELECT COUNT(*) FROM nccl_events WHERE $COLL") -gt 0 ]] || fail "node$k: no collectives recorded"
    [[ $(q $k "SELECT COUNT(*) FROM nccl_events WHERE rank IS NULL OR rank NOT BETWEEN $lo AND $hi") == 0 ]] ||
      fail "node$k: rows of ranks outside $lo..$hi or without rank"
    [[ $(q $k "SELECT COUNT(DISTINCT rank) FROM nccl_events WHERE $COLL") == "$RPN" ]] ||
      fail "node$k: expected $RPN ranks"
    [[ $(q $k "SELECT COUNT(*) FROM nccl_events WHERE $COLL AND (nranks != $WORLD OR comm_id_hash IS NULL)") == 0 ]] ||
      fail "node$k: collectives with wrong nranks or no comm_id_hash"
    [[ $(q $k "SELECT COUNT(*) FROM processes WHERE comm = 'rankscope-train' AND (env_rank NOT BETWEEN $lo AND $hi)") == 0 ]] ||
      fail "node$k: processes table has another node's rank"
  done
}

# All nodes' gpu_ops in one view `gp`, and cuda_events in `cu` (like `ev` for nccl_events).
qview() {  # table view sql
  local k attach="" sql=""
  for ((k = 0; k < NODES; k++)); do
    attach+="ATTACH '$OUT/node$k.db' AS n$k; "
    [[ -n "$sql" ]] && sql+=" UNION ALL "
    sql+="SELECT '$k' AS node_index, * FROM n$k.$1"
  done
  sqlite3 -batch -noheader ":memory:" "$attach CREATE TEMP VIEW $2 AS $sql; $3"
}
qgpu() { qview gpu_ops gp "$1"; }

# name input...: the inputs merged into $OUT/name.rsdb and its JSON report written to
# $OUT/name.json (the report's exit status says what it found; the checks read the JSON).
merge_and_report() {
  local name=$1
  shift
  "$BUILD/merger/rankscope-merge" -q -o "$OUT/$name.rsdb" "$@" || fail "merge into $name.rsdb"
  "$BUILD/analyzer/rankscope-analyze" report "$OUT/$name.rsdb" --format json \
    -o "$OUT/$name.json" || true
  [[ -f "$OUT/$name.json" ]] || return 0  # the scenario's checks say what is missing
  python3 "$SRC/tests/cluster/call_modes_check.py" "$OUT/$name.rsdb" "$OUT/$name.json" ||
    fail "the report's call modes are not the merge's"
}
qcuda() { qview cuda_events cu "$1"; }

# The report from the bundles' summaries equals the raw bundles' (tests/cluster/summary_check.sh:
# every field but the input and the notes about summaries), from summaries alone and with the
# fault node's raw bundle among them.   check_summaries RAW_JSON BUNDLE_DIR [EXTRA_INPUT]
check_summaries() {
  local raw got
  for raw in "" "node$FAULT_NODE"; do
    got=$(REPORT=$1 BUNDLES=$2 EXTRA=${3:-} "$SRC/tests/cluster/summary_check.sh" "$BUILD" \
      "$OUT/run" $raw 2>&1) || fail "the report from summaries${raw:+ and the raw bundle of $raw}: $got"
    echo "$got"
  done
}

scenario_none() {
  # Clock skew and drift on two nodes: the bundles' contents must not depend on them.
  run_harness none --skew node1=5000000,node2=-3000000 --drift node2=50
  ((HARNESS_RC == 0)) || fail "harness failed: $(tail -n 5 "$OUT/harness.out")"
  grep -q "\"collectives\": \"$MODE\"" "$OUT/run/truth.json" || fail "truth.json does not say $MODE"
  open_bundles
  check_own_ranks
  local buckets=$([[ $MODE == async ]] && echo $BUCKETS || echo 1)
  local expected=$((STEPS * buckets + STEPS / 10 + STEPS / 25))
  local got
  got=$(qall "SELECT COUNT(DISTINCT comm_id_hash || ':' || seq) FROM ev WHERE $COLL")
  [[ "$got" == "$expected" ]] || fail "expected $expected distinct collectives, found $got"
  got=$(qall "SELECT COUNT(*) FROM (SELECT comm_id_hash, seq FROM ev WHERE $COLL
              GROUP BY comm_id_hash, seq HAVING COUNT(DISTINCT rank) != $WORLD
              OR COUNT(DISTINCT op) != 1 OR COUNT(*) != $WORLD)")
  [[ "$got" == 0 ]] || fail "$got collectives are not matched by all $WORLD ranks exactly once"
  got=$(qall "SELECT COUNT(DISTINCT node_index) FROM ev WHERE $COLL")
  [[ "$got" == "$NODES" ]] || fail "collectives from $got of $NODES nodes"
  got=$(qall "SELECT COUNT(*) FROM ev WHERE $COLL AND (state != 'complete' OR duration_ns IS NULL)")
  [[ "$got" == 0 ]] || fail "$got collectives not complete after a clean run"
  if [[ $MODE == sync ]]; then
    # The skewed node's clock really is shifted: a blocking collective completes at nearly the
    # same instant on every rank, so node1's completion times sit ~5 ms after node0's.
    got=$(qall "SELECT CAST(AVG(d) / 100000 AS INTEGER) FROM (SELECT
                AVG(CASE WHEN node_index = '1' THEN timestamp_ns + duration_ns END) -
                AVG(CASE WHEN node_index = '0' THEN timestamp_ns + duration_ns END) AS d
                FROM ev WHERE op = 'ALL_REDUCE' GROUP BY comm_id_hash, seq)")
  else
    check_async_pattern "$expected"
    # The same on the devices: every rank's device finishes a collective at nearly the same
    # instant, recorded on its node's (skewed) host clock.
    got=$(qgpu "SELECT CAST(AVG(d) / 100000 AS INTEGER) FROM (SELECT
                AVG(CASE WHEN node_index = '1' THEN device_end_ns END) -
                AVG(CASE WHEN node_index = '0' THEN device_end_ns END) AS d
                FROM gp WHERE op = 'ALL_REDUCE' AND state = 'completed' GROUP BY comm_id_hash, seq)")
  fi
  echo "node1 - node0 mean completion time: ${got}00 us (skew 5 ms)"
  ((got >= 30 && got <= 80)) || fail "the --skew of node1 does not show in its timestamps"
  echo "ok: $expected collectives matched across $WORLD ranks on $NODES nodes ($MODE)"
}

# A GPU job's recording (async mode): the CUDA probes see the trainer's call pattern exactly,
# NCCL calls only enqueue, and the profiler plugin's gpu_ops join every rank's calls.
check_async_pattern() {  # expected collectives
  local expected=$1 got launches copies nccl_ms sync_ms
  # Per rank and step one blocking loss copy (the sync point), 3 forward + $BUCKETS backward +
  # 1 optimizer launches, $BUCKETS + 1 stream waits.
  got=$(qcuda "SELECT COUNT(DISTINCT pid) FROM cu WHERE api = 'cudaMemcpy'")
  [[ "$got" == "$WORLD" ]] || fail "cudaMemcpy recorded for $got of $WORLD ranks"
  copies=$(qcuda "SELECT COUNT(*) FROM cu WHERE api = 'cudaMemcpy'")
  launches=$(qcuda "SELECT COALESCE(SUM(sample_weight), 0) FROM cu WHERE api = 'cudaLaunchKernel'")
  echo "cuda_events: $copies blocking copies, $launches kernel launches for $WORLD ranks x $STEPS steps"
  ((copies == WORLD * STEPS)) || fail "expected $((WORLD * STEPS)) cudaMemcpy rows, found $copies"
  ((launches == WORLD * STEPS * (4 + BUCKETS))) ||
    fail "expected $((WORLD * STEPS * (4 + BUCKETS))) kernel launches, found $launches"
  got=$(qcuda "SELECT COUNT(*) FROM cu WHERE api = 'cudaStreamWaitEvent'")
  ((got == WORLD * STEPS * (BUCKETS + 1))) || fail "expected $((WORLD * STEPS * (BUCKETS + 1))) cudaStreamWaitEvent rows, found $got"
  # Host-side NCCL calls only enqueue: together they take a small fraction of the time the
  # hosts spend blocked in their step-end copies (the device time they wait for).
  nccl_ms=$(qall "SELECT COALESCE(SUM(duration_ns), 0) / 1000000 FROM ev WHERE $COLL")
  sync_ms=$(qcuda "SELECT COALESCE(SUM(duration_ns), 0) / 1000000 FROM cu WHERE api = 'cudaMemcpy'")
  echo "host time in NCCL calls ${nccl_ms} ms, blocked in the step-end copies ${sync_ms} ms"
  ((nccl_ms * 20 < sync_ms)) || fail "NCCL calls took ${nccl_ms} ms against ${sync_ms} ms of syncs: not asynchronous"
  # The plugin: every process seen with profiler API 7 (the test bed's NCCL is 2.31's), one
  # completed operation per rank and collective (but the first: launched before the recorders
  # read), device times in order; every collective's kernel phases reported (not symmetric
  # kernels: no sync phase).
  got=$(qview processes pr "SELECT COUNT(*) FROM pr WHERE comm = 'rankscope-train' AND nccl_profiler_api = 7")
  [[ "$got" == "$WORLD" ]] || fail "the plugin was seen in $got of $WORLD ranks"
  got=$(qgpu "SELECT COUNT(*) FROM gp WHERE $COLL AND (kernel_symmetric IS NOT 0 OR initial_sync_ns IS NOT 0)")
  [[ "$got" == 0 ]] || fail "$got collectives without their v7 kernel kind and phases"
  got=$(qgpu "SELECT COUNT(*) FROM (SELECT comm_id_hash, seq FROM gp WHERE $COLL AND state = 'completed'
              AND timestamp_ns <= device_start_ns AND device_start_ns <= device_end_ns
              GROUP BY comm_id_hash, seq HAVING COUNT(DISTINCT rank) = $WORLD)")
  echo "gpu_ops: $got of $expected collectives completed on every rank's device"
  ((got >= expected - 2)) || fail "only $got of $expected collectives have every rank's device times"
  got=$(qgpu "SELECT COUNT(*) FROM gp WHERE state != 'completed'")
  [[ "$got" == 0 ]] || fail "$got operations not completed after a clean run"
}

# Merges the run's bundles and checks every node's clock alignment against what was injected:
#   check_alignment "SKEW0 SKEW1 ..." "DRIFT0 DRIFT1 ..." TOLERANCE_NS [DRIFT_TOLERANCE_PPM]
# Offsets are relative to the reference node the merge chose; each must be within TOLERANCE_NS
# of the truth and within its own error bound, and drifts within DRIFT_TOLERANCE_PPM (10) -
# unless the merge says it could not fit one (too scattered), when its bound must hold the
# injected drift over the whole recording.
check_alignment() {
  local -a skew=($1) drift=($2)
  local tolerance=$3 drift_tolerance=${4:-10}
  local merged="$OUT/merged.rsdb" k ref=-1 row off bound method ppm want err
  # On failure, the merge's own account of every node (method, bound, why) and the load.
  fail_alignment() {
    echo "clock_alignment of the merge:"
    sqlite3 -batch -header "$merged" "SELECT node, method, offset_ns, error_bound_ns,
      ROUND(drift_ppm, 1) AS drift_ppm, rendezvous_count, note FROM clock_alignment" || true
    echo "load average: $(cat /proc/loadavg)"
    fail "$@"
  }
  "$BUILD/merger/rankscope-merge" -o "$merged" "$OUT"/run/bundles/*.rsb >"$OUT/merge.out" 2>&1 ||
    fail "rankscope-merge failed: $(tail -n 5 "$OUT/merge.out")"
  for ((k = 0; k < NODES; k++)); do
    [[ $(sqlite3 -batch -noheader "$merged" "SELECT method FROM clock_alignment WHERE node = 'node$k'") == reference ]] && ref=$k
  done
  ((ref >= 0)) || fail_alignment "no reference node in clock_alignment"
  for ((k = 0; k < NODES; k++)); do
    row=$(sqlite3 -batch -noheader -separator ' ' "$merged" "SELECT offset_ns, error_bound_ns, method,
          CAST(ROUND(drift_ppm) AS INTEGER), rendezvous_count FROM clock_alignment WHERE node = 'node$k'")
    read -r off bound method ppm count <<<"$row"
    want=$((skew[k] - skew[ref]))
    err=$((off - want))
    ((err < 0)) && err=$((-err))
    printf 'node%d: offset %d ns (injected %d), error %d ns, bound %d ns, drift %s ppm (injected %d), %s, %s rendezvous\n' \
      "$k" "$off" "$want" "$err" "$bound" "$ppm" "$((drift[k] - drift[ref]))" "$method" "$count"
    [[ "$method" == rendezvous || "$method" == reference ]] || fail_alignment "node$k: aligned by $method, not by rendezvous"
    ((err <= tolerance)) || fail_alignment "node$k: offset $off ns is $err ns from the injected $want ns (> $tolerance ns)"
    ((err <= bound)) || fail_alignment "node$k: the bound $bound ns does not contain the injected offset ($err ns away)"
    want=$((drift[k] - drift[ref]))
    if [[ $(sqlite3 -batch -noheader "$merged" "SELECT note LIKE '%bound allows undetected drift%'
          FROM clock_alignment WHERE node = 'node$k'") == 1 ]]; then
      # The merge found the evidence too scattered to fit a drift and says so: its bound must
      # then hold what the injected drift does over the whole recording.
      local span_ns drift_ns
      span_ns=$(sqlite3 -batch -noheader "$merged" "SELECT MAX(timestamp_ns) - MIN(timestamp_ns)
                FROM nccl_events")
      drift_ns=$((${want#-} * span_ns / 1000000))
      echo "node$k: drift left undetermined by the merge; $drift_ns ns over the recording, bound $bound ns"
      ((err + drift_ns <= bound)) ||
        fail_alignment "node$k: no drift fitted and the bound $bound ns does not hold the injected drift ($drift_ns ns) and the error ($err ns)"
      continue
    fi
    ((ppm - want <= drift_tolerance && want - ppm <= drift_tolerance)) ||
      fail_alignment "node$k: drift $ppm ppm, injected $want ppm (tolerance $drift_tolerance ppm)"
  done
}

scenario_clock() {
  # Skew and drift on every node but one (offsets of tens of ms of either sign, +-20 ppm), 3
  # nodes, one rank each (a rank's collectives and syncs then share the machine's 2 CPUs with
  # fewer threads), small collectives: each node's offset within TOLERANCE of the truth and
  # inside its stated bound, its drift close to the injected one, from the evidence the mode gives: device
  # rendezvous (a GPU job with the profiler plugin), the blocking syncs after the enqueues
  # (without the plugin), blocking collectives (sync mode).
  # Without device times the estimate rests on when each host woke from its step-end copy:
  # on this 2-CPU machine those wakeups scatter by 100-200 us (MAD), and the exit differences
  # of a node pair fall into two modes, one per end order around the ring (who arrived last);
  # the merge takes the centre between the modes (CentreOfExits). All three runs are held to
  # 50 us and 10 ppm: seen 2-23 us without the plugin (the median of the differences, used
  # before, was 40-100 us off), 0-10 us with it, 0-5 us on the blocking calls
  # (tests/bench/merge.md).
  # The blocking run has one collective per step (two in async mode): 600 steps give its drift
  # fit as many points over a longer span (a 6 ppm slope error, 58 us at the start, was seen at
  # 300 steps on a loaded machine). The run without the plugin takes 600 steps too: at 300, its
  # wakeups scattered by 236 us left a 20 ppm drift under four standard errors, so the merge
  # (rightly) fitted none and the constant offset was 146-153 us off at the recording's ends.
  local skew="0 37000000 -41000000" drift="0 20 -20" mode plugin tolerance drift_tolerance evidence
  NODES=3 RPN=1 WORLD=3
  for run in "async on 50000 300 10" "async off 50000 600 10" "sync off 50000 600 10"; do
    read -r mode plugin tolerance STEPS drift_tolerance <<<"$run"
    MODE=$mode
    rm -rf "$OUT/run" "$OUT/merged.rsdb"
    run_harness none --grad-mb 0.004 --compute-ms 20 --plugin "$plugin" \
      --skew node1=37000000,node2=-41000000 --drift node1=20,node2=-20
    ((HARNESS_RC == 0)) || fail "harness failed: $(tail -n 5 "$OUT/harness.out")"
    echo "-- $mode collectives, plugin $plugin (tolerance $((tolerance / 1000)) us):"
    check_alignment "$skew" "$drift" "$tolerance" "$drift_tolerance"
    evidence=$(sqlite3 -batch -noheader "$OUT/merged.rsdb" "SELECT group_concat(node || ': ' || evidence, '; ')
               FROM clock_alignment WHERE method = 'rendezvous'")
    echo "evidence: $evidence"
    case "$mode $plugin" in
      "async on") [[ "$evidence" == *device* ]] || fail "a GPU job with the plugin aligned without device times" ;;
      "async off") [[ "$evidence" == *sync_after* && "$evidence" != *device* ]] ||
        fail "a GPU job without the plugin must align on the syncs after its enqueues" ;;
      "sync off") [[ "$evidence" == *blocking_call* ]] || fail "blocking collectives were not used" ;;
    esac
  done
  echo "ok: offsets within their tolerance and inside their bounds, drift within 10 ppm, in all three runs"
}

scenario_loss() {
  run_harness loss
  ((HARNESS_RC == 0)) || fail "harness failed: $(tail -n 5 "$OUT/harness.out")"
  open_bundles
  check_own_ranks
  local a k mine involving=0 others=0 sent="(err IS NULL OR err = 0)"
  a=$(fault_addr)
  # Retransmissions sent (an attempt the kernel could not send has err != 0), each recorded
  # once, by the node whose kernel retransmitted it.
  mine=$(q $FAULT_NODE "SELECT COUNT(*) FROM tcp_events WHERE event = 'tcp_retransmit_skb' AND saddr = '$a' AND $sent")
  [[ $(q $FAULT_NODE "SELECT COUNT(*) FROM tcp_events WHERE saddr != '$a'") == 0 ]] ||
    fail "node$FAULT_NODE's bundle has retransmits of other nodes' sockets"
  for ((k = 0; k < NODES; k++)); do
    involving=$((involving + $(q $k "SELECT COUNT(*) FROM tcp_events WHERE (saddr = '$a' OR daddr = '$a') AND $sent")))
    others=$((others + $(q $k "SELECT COUNT(*) FROM tcp_events WHERE saddr != '$a' AND daddr != '$a' AND $sent")))
  done
  echo "retransmissions sent: on connections of node$FAULT_NODE $involving (its own $mine), on all other connections $others"
  ((mine >= 5)) || fail "node$FAULT_NODE sent only $mine retransmissions under 5% loss"
  ((involving >= 2 * others)) ||
    fail "retransmissions on node$FAULT_NODE's connections ($involving) do not stand out ($others elsewhere)"
}

scenario_cpu() {
  run_harness cpu
  ((HARNESS_RC == 0)) || fail "harness failed: $(tail -n 5 "$OUT/harness.out")"
  open_bundles
  check_own_ranks
  local k wait=() behind=() max_other=0 max_behind_other=0 sel
  # The ranks' main threads (tid = pid: data loading, preprocessing, issuing the step): their
  # stream workers, mostly asleep, wait on every node alike and would drown the fault.
  sel="FROM sched_events s JOIN processes p ON p.pid = s.pid
       WHERE p.comm = 'rankscope-train' AND s.tid = s.pid AND s.event = 'runq_latency'"
  for ((k = 0; k < NODES; k++)); do
    # Run-queue wait of the node's ranks (woken or preempted -> running again), in ms.
    wait+=("$(q $k "SELECT COALESCE(SUM(s.duration_ns), 0) / 1000000 $sel")")
    behind+=("$(q $k "SELECT COALESCE(SUM(s.duration_ns), 0) / 1000000 $sel
                      AND s.other_comm = 'rankscope-burn'")")
    ((k != FAULT_NODE && wait[k] > max_other)) && max_other=${wait[k]}
    ((k != FAULT_NODE && behind[k] > max_behind_other)) && max_behind_other=${behind[k]}
  done
  echo "run-queue wait of the ranks' main threads per node (ms): ${wait[*]}; directly behind the competitor: ${behind[*]}"
  [[ $(q $FAULT_NODE "SELECT COUNT(*) FROM sched_events WHERE other_comm = 'rankscope-burn'") -gt 0 ]] ||
    fail "node$FAULT_NODE: the competitor never shows in its scheduler events"
  # All nodes share this machine's CPUs, so every node's ranks also wait behind other nodes'
  # processes (the competitor included). The faulty node must still stand out: its ranks' total
  # wait at least 1.3x any other node's (fault-free nodes stay within ~1.06x of each other), and
  # the most time spent directly behind the competitor.
  ((wait[FAULT_NODE] * 10 >= 13 * max_other)) ||
    fail "node$FAULT_NODE's run-queue wait does not stand out (${wait[*]})"
  ((behind[FAULT_NODE] > max_behind_other)) ||
    fail "node$FAULT_NODE's ranks do not wait behind the competitor the most (${behind[*]})"
}

scenario_io() {
  run_harness io
  ((HARNESS_RC == 0)) || fail "harness failed: $(tail -n 5 "$OUT/harness.out")"
  open_bundles
  check_own_ranks
  local k w lat=() max_other=0
  for ((k = 0; k < NODES; k++)); do
    w=$(q $k "SELECT COUNT(*) FROM block_events WHERE comm = 'rankscope-burn'")
    if ((k == FAULT_NODE)); then
      ((w > 0)) || fail "node$FAULT_NODE: no block I/O of the competing writer recorded"
    else
      ((w == 0)) || fail "node$k: the competitor's block I/O shows on another node"
    fi
    # Mean latency (us) of the trainer's data reads in the second half of the run.
    lat+=("$(q $k "SELECT CAST(COALESCE(AVG(duration_ns), 0) / 1000 AS INTEGER) FROM block_events
                   WHERE op = 'read' AND comm = 'rankscope-train' AND timestamp_ns >
                   (SELECT (MIN(timestamp_ns) + MAX(timestamp_ns)) / 2 FROM block_events
                    WHERE comm = 'rankscope-train' AND op = 'read')")")
    ((k != FAULT_NODE && lat[k] > max_other)) && max_other=${lat[k]}
  done
  echo "mean data read latency (us) per node: ${lat[*]}"
  ((lat[FAULT_NODE] >= 2 * max_other)) ||
    fail "node$FAULT_NODE's read latency does not stand out (${lat[*]})"
}

# Mean gap (ns) between a rank's AllReduces, its compute between them: on the host between
# blocking calls (sync), on its device between the collectives' kernels (async, gpu_ops).
gap_sql() {  # rank first_seq
  if [[ $MODE == sync ]]; then
    echo "SELECT CAST(AVG(gap) AS INTEGER) FROM (SELECT LEAD(timestamp_ns) OVER (ORDER BY seq)
          - (timestamp_ns + duration_ns) AS gap, seq FROM nccl_events WHERE op = 'ALL_REDUCE'
          AND rank = $1) WHERE seq > $2 AND gap IS NOT NULL"
  else
    echo "SELECT CAST(AVG(gap) AS INTEGER) FROM (SELECT LEAD(device_start_ns) OVER (ORDER BY seq)
          - device_end_ns AS gap, seq FROM gpu_ops WHERE op = 'ALL_REDUCE' AND rank = $1
          AND state = 'completed') WHERE seq > $2 AND gap IS NOT NULL"
  fi
}

scenario_slow() {
  run_harness slow
  ((HARNESS_RC == 0)) || fail "harness failed: $(tail -n 5 "$OUT/harness.out")"
  open_bundles
  check_own_ranks
  local buckets=$([[ $MODE == async ]] && echo $BUCKETS || echo 1)
  local slow=$((FAULT_NODE * RPN)) from=$(((STEPS / 3) * buckets + STEPS / 10 + 2)) k r g gaps=()
  local max_other=0 slow_gap=0
  for ((k = 0; k < NODES; k++)); do
    for ((r = k * RPN; r < (k + 1) * RPN; r++)); do
      g=$(q $k "$(gap_sql $r $from)")
      gaps+=("$r:${g:-0}")
      ((r != slow && ${g:-0} > max_other)) && max_other=${g:-0}
      ((r == slow)) && slow_gap=${g:-0}
    done
  done
  echo "mean compute gap between AllReduces (ns) per rank, $([[ $MODE == sync ]] && echo host || echo device): ${gaps[*]}"
  ((slow_gap * 10 >= 16 * max_other)) || fail "rank $slow's longer compute does not show (${gaps[*]})"
}

scenario_hang() {
  run_harness hang
  ((HARNESS_RC == 0)) || fail "harness failed: $(tail -n 5 "$OUT/harness.out")"
  grep -q '"end": "hang"' "$OUT/run/truth.json" || fail "the harness did not see the hang"
  open_bundles
  local hung=$((FAULT_NODE * RPN)) stuck got waiting states first
  if [[ $MODE == sync ]]; then
    # The stuck collective: the highest seq any rank entered. All but the hung rank are in it.
    stuck=$(qall "SELECT MAX(seq) FROM ev WHERE $COLL")
    got=$(qall "SELECT COUNT(*) FROM ev WHERE rank = $hung AND seq = $stuck")
    [[ "$got" == 0 ]] || fail "the hung rank $hung has an entry for the stuck collective"
    got=$(qall "SELECT MAX(seq) FROM ev WHERE rank = $hung AND $COLL AND state = 'complete'")
    [[ "$got" == $((stuck - 1)) ]] || fail "the hung rank's last collective is $got, not $((stuck - 1))"
    got=$(qall "SELECT COUNT(*) FROM ev WHERE $COLL AND seq = $stuck AND state = 'in_flight'
                AND duration_ns IS NULL")
    [[ "$got" == $((WORLD - 1)) ]] || fail "expected $((WORLD - 1)) ranks in flight at seq $stuck, found $got"
    echo "ok: $((WORLD - 1)) ranks in flight at seq $stuck; rank $hung never entered it"
    return
  fi
  # A GPU job: the others enqueued the collectives of the step the hung rank never issued (one
  # per bucket); no NCCL call is left in flight on any host (each was enqueued and returned);
  # the waiting ranks sit in their step-end sync, a blocking copy in flight.
  stuck=$(($(qall "SELECT MAX(seq) FROM ev WHERE rank = $hung AND $COLL AND state = 'complete'") + 1))
  got=$(qall "SELECT COUNT(*) FROM ev WHERE rank = $hung AND seq >= $stuck")
  [[ "$got" == 0 ]] || fail "the hung rank $hung has calls after its last collective $((stuck - 1))"
  got=$(qall "SELECT COUNT(DISTINCT rank) FROM ev WHERE $COLL AND seq = $stuck")
  [[ "$got" == $((WORLD - 1)) ]] || fail "expected $((WORLD - 1)) ranks to have enqueued seq $stuck, found $got"
  got=$(qall "SELECT COUNT(*) FROM ev WHERE state != 'complete'")
  [[ "$got" == 0 ]] || fail "$got NCCL calls in flight on the hosts (an async job leaves none)"
  waiting=$(qcuda "SELECT COUNT(DISTINCT pid) FROM cu WHERE api = 'cudaMemcpy' AND state = 'in_flight'")
  [[ "$waiting" == $((WORLD - 1)) ]] || fail "expected $((WORLD - 1)) ranks blocked in cudaMemcpy, found $waiting"
  # The plugin's states: the first collective the others did not complete is the one the hung
  # rank never enqueued; the others' devices reached it (started) and wait there.
  first=$(qgpu "SELECT MIN(seq) FROM gp WHERE $COLL AND state != 'completed'")
  [[ "$first" == "$stuck" ]] || fail "the first operation not completed is seq '$first', not $stuck"
  got=$(qgpu "SELECT COUNT(*) FROM gp WHERE rank = $hung AND seq >= $first")
  [[ "$got" == 0 ]] || fail "the hung rank has $got gpu_ops rows at or after seq $first"
  states=$(qgpu "SELECT group_concat(state || ' ' || n, ', ') FROM (SELECT state, COUNT(*) AS n FROM gp
                 WHERE seq = $first GROUP BY state ORDER BY state)")
  got=$(qgpu "SELECT COUNT(*) FROM gp WHERE seq = $first AND state = 'started' AND device_start_ns IS NOT NULL
              AND device_end_ns IS NULL")
  echo "seq $stuck enqueued by $((WORLD - 1)) ranks, NCCL calls in flight: 0, ranks blocked in cudaMemcpy: $waiting; gpu_ops at seq $first: $states"
  [[ "$got" == $((WORLD - 1)) ]] || fail "expected $((WORLD - 1)) ranks' devices started at seq $first ($states)"
}

scenario_crash() {  # a rank dies: the run ends by itself and nothing is left behind
  run_harness crash --no-record
  check_no_leftovers
  grep -q "ranks that failed" "$OUT/run/harness.log" || fail "the harness did not notice the failed ranks"
  grep -qE "(dies|die) at step" "$OUT/run/harness.log" || fail "the crash was not injected"
  # A GPU job: the others' device work fails; their watchdogs end them.
  local k n=0
  for ((k = 0; k < WORLD; k++)); do
    grep -q "NCCL asynchronous error" "$OUT/run/logs/rank$k.log" 2>/dev/null && n=$((n + 1))
  done
  echo "ranks ended by their watchdog after the asynchronous error: $n of $((WORLD - 1))"
  ((n == WORLD - 1)) || fail "expected $((WORLD - 1)) ranks to report the asynchronous error, found $n"
}

scenario_interrupt() {  # Ctrl-C on the harness mid-run: everything is cleaned up
  # Job control on: the harness gets its own process group and does not inherit an ignored
  # SIGINT (what a non-interactive shell gives background jobs); Ctrl-C = SIGINT to the group.
  set -m
  "$HARNESS" --build "$BUILD" --out "$OUT/run" --nodes "$NODES" --ranks-per-node "$RPN" \
    --steps 1000 --fault cpu --no-record --no-tools >"$OUT/harness.out" 2>&1 &
  local pid=$! i
  set +m
  for ((i = 0; i < 300; i++)); do
    grep -qs "ranks started" "$OUT/run/harness.log" && break
    sleep 0.1
  done
  sleep 3
  kill -INT -- "-$pid"
  for ((i = 0; i < 300; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && fail "the harness did not exit within 30 s of SIGINT"
  wait "$pid" || true
  check_no_leftovers
  echo "ok: interrupted run cleaned up"
}

# Host-side entry lateness of the slow rank, in both modes. Per collective of the run's second
# half (the fault starts at a third) matched by every rank: each rank's entry time minus the
# earliest. Prints every rank's mean and how often it entered last.
entry_lateness() {  # -> "RANK MEAN_MS LAST_SHARE" lines
  qall "WITH m AS (SELECT comm_id_hash, seq FROM ev WHERE $COLL GROUP BY comm_id_hash, seq
          HAVING COUNT(DISTINCT rank) = $WORLD AND seq > (SELECT MAX(seq) / 2 FROM ev)),
        e AS (SELECT ev.rank, ev.timestamp_ns - MIN(ev.timestamp_ns) OVER w AS late,
          ev.timestamp_ns = MAX(ev.timestamp_ns) OVER w AS last FROM ev JOIN m USING (comm_id_hash, seq)
          WINDOW w AS (PARTITION BY ev.comm_id_hash, ev.seq))
        SELECT rank || ' ' || ROUND(AVG(late) / 1e6, 2) || ' ' || ROUND(AVG(last), 2) FROM e
        GROUP BY rank ORDER BY rank"
}

scenario_entry_lateness() {
  local slow=$((FAULT_NODE * RPN)) mode rank mean last injected sync_mean=0 async_mean=0
  local async_other=0
  # The slow rank's device loses 3x its device time per step: 40 ms x 0.85 x (4 - 1).
  injected=102
  for mode in sync async; do
    MODE=$mode
    rm -rf "$OUT/run" "$OUT"/node*.db
    run_harness slow
    ((HARNESS_RC == 0)) || fail "harness failed: $(tail -n 5 "$OUT/harness.out")"
    open_bundles
    echo "$mode mode: host-side entry lateness per rank (mean ms, share of collectives entered last); slow rank $slow, its device ${injected} ms slower per step:"
    while read -r rank mean last; do
      echo "  rank $rank: ${mean} ms, last in ${last}"
      if ((rank == slow)); then
        [[ $mode == sync ]] && sync_mean=$mean || async_mean=$mean
      elif [[ $mode == async ]]; then
        async_other=$(awk -v a="$async_other" -v m="$mean" 'BEGIN {print (m > a ? m : a)}')
      fi
    done < <(entry_lateness)
  done
  # sync: the slow rank's lateness is its device's delay; async: hosts enqueue at the same
  # pace after each step's sync, so entry times show (almost) none of it, and the slow rank
  # does not stand out from the others (its mean is below 1.5x the latest other rank's).
  awk -v s="$sync_mean" -v a="$async_mean" -v i="$injected" -v o="$async_other" 'BEGIN {
    printf "slow rank entry lateness: sync %.1f ms (%.0f%% of the device delay), async %.1f ms (%.0f%%; latest other rank %.1f ms)\n", s, 100 * s / i, a, 100 * a / i, o
    exit !(s >= 0.5 * i && a <= 0.15 * i && a < 1.5 * o) }' ||
    fail "expected the slow rank's entry lateness to show >= 50% of the device delay in sync mode, and in async mode <= 15% of it and below 1.5x the latest other rank's"
}

# The scenarios of GPU-side features: CUDA graphs, non-blocking communicators, RDMA ports,
# always-on recorders' stall cuts, Flight Recorder dumps.
# shellcheck source=cluster_scenarios_gpu.sh
source "$SRC/tests/cluster/cluster_scenarios_gpu.sh"

case "$SCENARIO" in
  none | loss | cpu | io | slow | hang | crash | interrupt | clock | entry_lateness | ring_hang | \
    fr_hang | graph | rdma | nonblocking | record_late)
    "scenario_$SCENARIO" ;;
  sync_none | sync_slow | sync_hang) MODE=sync BUCKETS=1; "scenario_${SCENARIO#sync_}" ;;
  *) fail "unknown scenario" ;;
esac
check_no_leftovers
echo "PASS [$SCENARIO]"
