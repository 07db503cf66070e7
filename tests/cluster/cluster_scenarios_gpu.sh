# Scenarios of cluster_test.sh for GPU-side features (sourced by it; its helpers and
# variables: run_harness, open_bundles, check_own_ranks, qall, qgpu, qview, merge_and_report,
# check_summaries, fail, OUT, BUILD, NODES, RPN, WORLD, STEPS, BUCKETS, FAULT_NODE): CUDA graph
# replays, non-blocking communicators, a degraded RDMA link, always-on recorders' stall cut,
# Flight Recorder dumps beside the bundles.
# shellcheck shell=bash

# CUDA graphs: every rank captures its step's gradient AllReduces at step 0 and replays them
# each step (run-cluster --cuda-graph), one rank slow from the fault step on. Its bundle has
# the captured calls once and every replay as a gpu_ops row of its own (no seq; the same replay
# number names the same captured call on every rank); merged, the report names the slow rank
# on the replays alone (it is late in the first of each step's pair only).
scenario_graph() {
  # Late in one collective of each step's two: three times the steps of the other scenarios,
  # for the node's paired excess to reach the report's bar (4 errors, z 3) with room: at 60
  # steps a passing run measured 25.6 ms +- 4.81 (5.3 errors), and some runs fell under 4.
  local STEPS=90
  run_harness slow --cuda-graph
  ((HARNESS_RC == 0)) || fail "harness failed: $(tail -n 5 "$OUT/harness.out")"
  open_bundles
  check_own_ranks
  local got replays=$((STEPS * BUCKETS))
  got=$(qall "SELECT COUNT(*) FROM ev WHERE op = 'ALL_REDUCE'")
  [[ "$got" == $((WORLD * BUCKETS)) ]] || fail "expected $BUCKETS captured AllReduce calls per rank, found $got in all"
  got=$(qgpu "SELECT COUNT(*) FROM gp WHERE graph_replay_seq IS NOT NULL AND seq IS NULL
              AND state = 'completed' AND device_start_ns IS NOT NULL")
  [[ "$got" == $((WORLD * replays)) ]] || fail "expected $replays completed replays per rank, found $got in all"
  got=$(qgpu "SELECT COUNT(*) FROM (SELECT graph_replay_seq FROM gp WHERE graph_replay_seq IS NOT NULL
              GROUP BY graph_replay_seq HAVING COUNT(DISTINCT graph_call_seq) != 1
              OR COUNT(*) != $WORLD)")
  [[ "$got" == 0 ]] || fail "$got replay numbers do not name one captured call on all $WORLD ranks"
  got=$(qview metadata md "SELECT value FROM md WHERE key = 'gpu_graph_calls'" | sort -u | tr '\n' ' ')
  [[ "$got" == "$((RPN * BUCKETS)) " ]] || fail "metadata gpu_graph_calls per node: $got"
  merge_and_report graph "$OUT/run/bundles"
  python3 - "$OUT/graph.json" "node$FAULT_NODE" "$((FAULT_NODE * RPN))" "$WORLD" <<'PY' || fail "report"
import json, sys
report, node, rank, world = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
top = (report.get("stragglers") or [None])[0]
assert top, "no straggler: %s" % report.get("verdict")
# The fault node, as the other scenarios check; its slow rank where the report tells it from
# its node-mate (one CI run of 9 named the node as a whole: both its ranks late alike).
assert top["node"] == node and top.get("rank") in (rank, None), "named %s rank %s" % (
    top["node"], top.get("rank"))
assert top["confidence"] in ("medium", "high"), top["confidence"]
t = report["timing"]
assert t["graph_replay_ops"] > 0 and t["graph_replays_uncompared"] == 0, t
print("ok: the report names %s %s (%s) on %d replayed GPU operations" % (
    node, "rank %d" % rank if top.get("rank") is not None else "(the node)", top["confidence"],
    t["graph_replay_ops"]))
PY
  check_summaries "$OUT/graph.json" "$OUT/run/bundles"
  echo "ok: $replays replays per rank recorded apart from the $BUCKETS captured calls"
}

# A recorder started while the job runs (run-cluster --record-late), as a user does when a job
# is slow: the communicators were created before it attached, so its NCCL calls carry no
# communicator id (rankscope-record(8): never guessed) and cannot be matched across ranks. The
# profiler plugin's rows keep NCCL's own commHash and seqNumber, the same on every rank: the
# report compares the collectives on device starts by them and names the slow rank's node, at
# most at medium confidence (its host side is not matched), and says what it could not see.
scenario_record_late() {
  local STEPS=150
  run_harness slow --record-late 3 --fault-step 90
  ((HARNESS_RC == 0)) || fail "harness failed: $(tail -n 5 "$OUT/harness.out")"
  open_bundles
  local got
  got=$(qall "SELECT COUNT(*) FROM ev WHERE op = 'ALL_REDUCE' AND comm_id_hash IS NOT NULL")
  [[ "$got" == 0 ]] || fail "$got AllReduce calls carry a communicator id: the recorders saw the job's init"
  got=$(qgpu "SELECT COUNT(*) FROM gp WHERE comm_id_hash IS NULL AND nccl_comm_hash IS NOT NULL
              AND nccl_seq IS NOT NULL AND state = 'completed'")
  ((got > 0)) || fail "no completed GPU operation carries NCCL's own names"
  merge_and_report late "$OUT/run/bundles"
  python3 - "$OUT/late.json" "node$FAULT_NODE" <<'PY' || fail "report"
import json, sys
report, node = json.load(open(sys.argv[1])), sys.argv[2]
assert report["unidentified_calls"] > 0, report["unidentified_calls"]
notes = " ".join(report.get("notes") or [])
assert "compared by NCCL's own names" in notes, notes
top = (report.get("stragglers") or [None])[0]
assert top, "no straggler: %s" % report.get("verdict")
assert top["node"] == node, "named %s" % top["node"]
assert top["confidence"] == "medium", top["confidence"]
assert "could not be matched" in top["summary"], top["summary"]
assert report["timing"]["arrival_basis"] == "device_start", report["timing"]["arrival_basis"]
print("ok: %d NCCL calls without a communicator id; the report names %s (%s) on device starts "
      "by NCCL's names" % (report["unidentified_calls"], node, top["confidence"]))
PY
}

# Non-blocking communicators (run-cluster --nonblocking: ncclConfig_t.blocking = 0, as
# PyTorch's TORCH_NCCL_USE_COMM_NONBLOCKING=1), one rank slow. Every collective call returns
# ncclInProgress (NCCL's group.cc: the launch runs on a thread of its own, the caller polls
# ncclCommGetAsyncError) and is recorded with that return, no error; the profiler plugin sees
# each launch's events on that thread (gpu_ops.tid is not the caller's), times every
# collective on the device, and they pair across ranks; the report names the slow rank.
scenario_nonblocking() {
  run_harness slow --nonblocking
  ((HARNESS_RC == 0)) || fail "harness failed: $(tail -n 5 "$OUT/harness.out")"
  open_bundles
  check_own_ranks
  local got calls=$((WORLD * STEPS * BUCKETS))
  got=$(qall "SELECT COUNT(*) FROM ev WHERE op = 'ALL_REDUCE' AND ret = 7")
  [[ "$got" == "$calls" ]] || fail "expected $calls AllReduce calls returning ncclInProgress, found $got"
  got=$(qall "SELECT COUNT(*) FROM ev WHERE $COLL AND ret NOT IN (0, 7)")
  [[ "$got" == 0 ]] || fail "$got collective calls recorded with an error"
  got=$(qgpu "SELECT COUNT(*) FROM gp WHERE op = 'ALL_REDUCE' AND state = 'completed'
              AND device_start_ns IS NOT NULL AND seq IS NOT NULL")
  [[ "$got" == "$calls" ]] || fail "expected $calls AllReduces timed on the device, found $got"
  got=$(qgpu "SELECT COUNT(*) FROM (SELECT comm_id_hash, seq FROM gp WHERE op = 'ALL_REDUCE'
              GROUP BY comm_id_hash, seq HAVING COUNT(*) != $WORLD)")
  [[ "$got" == 0 ]] || fail "$got AllReduces not on all $WORLD ranks under one (comm, seq)"
  local k joined same
  for ((k = 0; k < NODES; k++)); do
    read -r joined same < <(q $k "SELECT COUNT(*), TOTAL(g.tid = e.tid) FROM gpu_ops g
      JOIN nccl_events e ON e.pid = g.pid AND e.comm_id_hash = g.comm_id_hash AND e.seq = g.seq" |
      tr '|' ' ')
    ((joined >= RPN * STEPS * BUCKETS)) || fail "node$k: only $joined operations joined to their calls"
    [[ "$same" == 0.0 ]] || fail "node$k: $same operations launched on the calling thread, not NCCL's launch thread"
  done
  merge_and_report nb "$OUT/run/bundles"
  python3 - "$OUT/nb.json" "node$FAULT_NODE" <<'PY' || fail "report"
import json, sys
report, node = json.load(open(sys.argv[1])), sys.argv[2]
top = (report.get("stragglers") or [None])[0]
assert top, "no straggler: %s" % report.get("verdict")
assert top["node"] == node, "named %s" % top["node"]
assert top["confidence"] in ("medium", "high"), top["confidence"]
print("ok: the report names %s (%s, cause %s)" % (node, top["confidence"], top.get("cause")))
PY
  check_summaries "$OUT/nb.json" "$OUT/run/bundles"
  echo "ok: $calls non-blocking AllReduce calls recorded and timed on the device, launched on NCCL's thread"
  # The multi-group job on non-blocking communicators, split from a non-blocking world: many
  # launches of several communicators in flight on the devices while the hosts launch more.
  # Every rank's received data checks out, every operation completes, and nobody is named.
  rm -rf "$OUT/run"
  timeout -s INT 240 "$HARNESS" --build "$BUILD" --out "$OUT/run" --nodes 4 --ranks-per-node 2 \
    --steps 5 --parallel tp=2,pp=2,dp=2,ep=2 --compute-ms 20 --grad-mb 0.25 --fault none \
    --timeout 120 --no-tools --nonblocking >"$OUT/harness.out" 2>&1 ||
    fail "multi-group harness failed: $(tail -n 5 "$OUT/harness.out")"
  ! grep -h "checks of received data failed\|NCCL asynchronous error" "$OUT"/run/logs/rank*.log ||
    fail "a rank received wrong data or saw an NCCL error"
  merge_and_report nbp "$OUT/run/bundles"
  got=$(sqlite3 -batch -noheader "$OUT/nbp.rsdb" "SELECT COUNT(*) || ' ' || TOTAL(state != 'completed')
                                                 FROM gpu_ops")
  [[ "$got" != "0 "* && "$got" == *" 0.0" ]] || fail "multi-group gpu_ops (count, not completed): $got"
  python3 - "$OUT/nbp.json" <<'PY' || fail "multi-group report"
import json, sys
r = json.load(open(sys.argv[1]))
named = [s["node"] for s in r.get("stragglers") or [] if s.get("confidence") in ("medium", "high")]
assert not named and not (r.get("hang") or {}).get("detected"), r.get("verdict")
print("ok: multi-group, non-blocking: %s" % r.get("verdict"))
PY
}

# A degraded RDMA link on the fault node (run-cluster --fault rdma): every node's recorder
# reads an mlx5 InfiniBand port from a fake sysfs tree; the fault node's link error and retry
# counters rise from the fault step on while its collective sends to other nodes leave 1 ms
# late. Its bundle has the rises, no other node's has any; NCCL's proxy timed the steps on
# every node; merged, the report names the node and its port, cause network, with the
# proxy's evidence of its late sender.
scenario_rdma() {
  # The recorder reads the ports about once a second: twice the steps of the other scenarios,
  # so that readings before the fault step (a third in) find the counters still.
  local STEPS=60
  run_harness rdma
  ((HARNESS_RC == 0)) || fail "harness failed: $(tail -n 5 "$OUT/harness.out")"
  open_bundles
  check_own_ranks
  local got k errors="counter IN ('symbol_error', 'link_error_recovery', 'port_rcv_errors')"
  got=$(qview rdma_ports rp "SELECT COUNT(*) FROM rp WHERE device = 'mlx5_0' AND port = 1
        AND link_layer = 'InfiniBand' AND netdev = 'ib0'")
  [[ "$got" == "$NODES" ]] || fail "expected mlx5_0 port 1 (InfiniBand, ib0) on each of $NODES nodes, found $got"
  for ((k = 0; k < NODES; k++)); do
    got=$(q $k "SELECT COALESCE(SUM(delta), 0) FROM rdma_counters WHERE $errors")
    if ((k == FAULT_NODE)); then
      ((got >= 10)) || fail "node$k's link error counters rose by only $got"
    else
      [[ "$got" == 0 ]] || fail "node$k's link error counters rose by $got (no fault there)"
    fi
    got=$(q $k "SELECT COUNT(*) FROM gpu_ops WHERE proxy_steps > 0")
    ((got > 0)) || fail "node$k: no gpu_ops row with NCCL's proxy steps timed"
  done
  got=$(q $FAULT_NODE "SELECT COUNT(*) FROM rdma_counters WHERE delta IS NOT NULL AND
        since_ns IS NOT NULL AND timestamp_ns - since_ns > 3000000000")
  [[ "$got" == 0 ]] || fail "$got counter rows state a window of more than 3 readings"
  merge_and_report rdma "$OUT/run/bundles"
  python3 - "$OUT/rdma.json" "node$FAULT_NODE" <<'PY' || fail "report"
import json, sys
report, node = json.load(open(sys.argv[1])), sys.argv[2]
top = (report.get("stragglers") or [None])[0]
assert top, "no straggler: %s" % report.get("verdict")
assert top["node"] == node and top["cause"] == "network", "named %s, cause %s" % (top["node"], top["cause"])
assert "mlx5_0 port 1" in top["causes"][0]["summary"], top["causes"][0]["summary"]
kinds = [e["kind"] for e in top["evidence"]]
assert "rdma_counters" in kinds and "proxy" in kinds, kinds
# Another node may be listed only where the report says it cannot tell (clock bounds wider
# than a lateness of a millisecond or two: undetermined), never at low confidence or above.
others = [(s["node"], s["confidence"]) for s in report.get("stragglers", [])
          if s["node"] != node and s["confidence"] != "undetermined"]
assert not others, "other nodes named: %s" % others
print("ok: the report names %s (%s), cause network on mlx5_0 port 1, evidence %s" % (
    node, top["confidence"], kinds))
PY
  check_summaries "$OUT/rdma.json" "$OUT/run/bundles"
}

# Always-on recorders (--ring) that cut by themselves (--cut-on-stall) through a cut
# directory the nodes share: the hang makes one cluster-wide cut, a bundle per node, and the
# report on those bundles alone names the hung rank from the devices' states.
scenario_ring_hang() {
  run_harness hang --ring 60s --cut-on-stall 2s
  ((HARNESS_RC == 0)) || fail "harness failed: $(tail -n 5 "$OUT/harness.out")"
  grep -q '"end": "hang"' "$OUT/run/truth.json" || fail "the harness did not see the hang"
  local stall
  stall=$(compgen -G "$OUT/run/cuts/*-stall-*" || true)
  [[ $(wc -l <<<"$stall") -eq 1 && -n "$stall" ]] || fail "expected one stall cut, found: $stall"
  [[ $(compgen -G "$stall/node*.rsb" | wc -l) -eq $NODES ]] ||
    fail "the stall cut has $(compgen -G "$stall/node*.rsb" | wc -l) of $NODES bundles: $(ls "$stall")"
  merge_and_report cut "$stall"
  python3 - "$OUT/cut.json" "node$FAULT_NODE" "$((FAULT_NODE * RPN))" <<'PY' || fail "report on the cut"
import json, sys
report, node, rank = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3])
hang = report.get("hang") or {}
assert hang.get("detected"), "no hang in the report of the cut"
assert node in (hang.get("culprit_nodes") or []), "culprits %s" % hang.get("culprit_nodes")
print("ok: the stall cut of %s names %s (rank %d) the hang's culprit, confidence %s" % (
    sys.argv[1], node, rank, hang.get("confidence")))
PY
  check_summaries "$OUT/cut.json" "$stall"
  echo "ok: one cluster-wide stall cut, $NODES bundles: $(basename "$stall")"
}

# Every rank keeps a PyTorch Flight Recorder (rankscope-trainer --fr-dump-dir) and writes its
# dump when its collectives stall; the dumps merged beside the bundles give one verdict: the
# recording's hang analysis and the dumps' name the same rank, on the same communicator, with
# the dumps' clocks aligned through their nodes' recordings.
scenario_fr_hang() {
  run_harness hang --fr-dumps
  ((HARNESS_RC == 0)) || fail "harness failed: $(tail -n 5 "$OUT/harness.out")"
  grep -q '"end": "hang"' "$OUT/run/truth.json" || fail "the harness did not see the hang"
  local dumps
  dumps=$(compgen -G "$OUT/run/fr/nccl_trace_rank_*[0-9]" | wc -l)
  ((dumps == WORLD)) || fail "$dumps of $WORLD ranks wrote a Flight Recorder dump: $(ls "$OUT/run/fr")"
  merge_and_report fr "$OUT"/run/bundles/*.rsb "$OUT/run/fr"
  python3 - "$OUT/fr.json" "node$FAULT_NODE" "$((FAULT_NODE * RPN))" "$WORLD" <<'PY' ||
import json, sys
report, node, rank, world = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
hang, fr = report["hang"], report["flight_recorder"]
assert hang["detected"] and hang["basis"] != "flight_recorder", hang["summary"]
assert hang["culprit_ranks"] == [rank], ("recording", hang["culprit_ranks"], rank)
assert fr and fr["dumps"] == world and not fr["missing_ranks"], fr
assert fr["unaligned_dumps"] == 0, fr
assert fr["hang"]["detected"] and fr["hang"]["culprit_ranks"] == [rank], fr["hang"]
assert node in fr["hang"]["culprit_nodes"], fr["hang"]["culprit_nodes"]
assert fr["agreement"] == "agree", fr["agreement"]
assert fr["hang"]["comm_id_hash"] == hang["comm_id_hash"], (fr["hang"]["comm_id_hash"], hang["comm_id_hash"])
states = {p["rank"]: p["state"] for p in fr["hang"]["progress"]}
assert states[rank] == "not_enqueued", states
assert all(s in ("enqueued", "started") for r, s in states.items() if r != rank), states
print("ok: recording and %d Flight Recorder dumps agree: %s rank %d never issued %s seq %d (%s)" % (
    world, node, rank, fr["hang"]["op"], fr["hang"]["seq"], fr["hang"]["process_group"]))
PY
    fail "report on the bundles and the dumps"
  check_summaries "$OUT/fr.json" "$OUT/run/bundles" "$OUT/run/fr"
}
