#!/usr/bin/env python3
"""Real 4-rank torch.distributed jobs on the gloo backend, run with real PyTorch (Debian sid's
python3-torch, inside the root tests/torch/setup_chroot.sh builds), each rank writing its
Flight Recorder dump in both formats PyTorch writes.

  jobs.py OUT_DIR SCENARIO
  jobs.py --backend nccl [--plugin LIB] [--recorder-pid PID] OUT_DIR SCENARIO

SCENARIO (gloo): healthy | skipped | subgroup_stall | size_mismatch | slow
SCENARIO (nccl): healthy | slow | skipped | two_stalls | size_mismatch | crash | p2p_stall |
                 p2p_dtype
                 (NCCL_SCENARIOS below)

The job is shaped like a small 2-way tensor-parallel x 2-way data-parallel job:
  world  ranks 0-3   the default group (init_process_group, FileStore)
  tp     {0,1} {2,3} torch.distributed.new_subgroups(group_size=2)
  dp     {0,2} {1,3} torch.distributed.new_subgroups_by_enumeration([[0, 2], [1, 3]])
Every step: all_reduce and all_gather in tp, all_reduce in dp, all_reduce in world.

  healthy         STEPS steps, then every rank dumps
  skipped         rank 2 skips the world all_reduce of the last step (its program ends there);
                  ranks 0, 1, 3 time out in it
  subgroup_stall  rank 1 stalls (sleeps, like a stuck kernel or data loader) before the last
                  step's tp all_reduce: rank 0 times out in that tp all_reduce, ranks 2 and 3
                  in the dp all_reduce after it (3 waits for 1, 2 waits for 0)
  size_mismatch   rank 3 passes a tensor of half the size to the last step's world all_reduce.
                  gloo then aborts rank 3's process (std::terminate on a gloo::EnforceNotMet,
                  "op.preamble.length <= op.nbytes", thrown on its transport thread when the
                  larger chunks arrive), and a process that aborts writes no dump. So rank 3
                  issues that all_reduce with async_op=True (the entry is recorded when it is
                  issued), dumps, and only then do the others enter it: the dumps are those
                  of the moment of the mismatch, and rank 3 still aborts afterwards
  slow            rank 3 enters every collective SLOW_S late; nothing hangs

Every rank writes OUT_DIR/pickle/nccl_trace_rank_R (torch._C._distributed_c10d._dump_fr_trace:
gloo writes no dump by itself, on a timeout or otherwise) and OUT_DIR/json/nccl_trace_rank_R.json
(_dump_fr_trace_json), then waits for the others before it exits: a rank that exited early would
close its connections and turn the others' timeout into a connection error. OUT_DIR/truth.json
says what was injected; OUT_DIR/rank_R.log what each rank saw.
"""
import datetime
import json
import os
import subprocess
import sys
import time

WORLD = 4
STEPS = 3  # the dumps of all five jobs stay small enough to keep as fixtures (~150 KB)
TIMEOUT_S = 5  # every group's timeout: short, so a hang ends in seconds
SLOW_S = 2.0  # how late the slow rank enters each collective
# The slow job's timeout: its peers wait up to 3 x SLOW_S in one collective (rank 1 enters the
# dp all_reduce while rank 3 still sleeps before its tp all_reduce, tp all_gather and dp
# all_reduce), so the default 5 s would turn lateness into a timeout.
SLOW_TIMEOUT_S = 30
# Elements per tensor (float32); RANKSCOPE_FR_NUMEL changes it (the kept dumps use 1024: 4 KiB
# messages, which NCCL's socket transport sends without waiting for the receive).
NUMEL = int(os.environ.get("RANKSCOPE_FR_NUMEL", "1024"))
FR_BUFFER = 2000  # TORCH_FR_BUFFER_SIZE: entries kept per process (every entry of a job here)
WAIT_OTHERS_S = 120  # how long a finished rank waits for the others before it exits anyway
JOB_S = 240  # the whole job's bound (the launcher kills what still runs after it)

SCENARIOS = {
    "healthy": {"faulty_ranks": [], "kind": "none",
                "what": f"{STEPS} steps; every rank dumps at the end"},
    "skipped": {"faulty_ranks": [2], "kind": "missing_collective", "group": "world",
                "op": "all_reduce",
                "what": "rank 2 never calls the last step's world all_reduce; ranks 0, 1, 3 time "
                        "out in it"},
    "subgroup_stall": {"faulty_ranks": [1], "kind": "stall", "group": "tp {0,1}",
                       "op": "all_reduce",
                       "what": "rank 1 stalls before the last step's tp all_reduce; rank 0 times "
                               "out in it, ranks 2 and 3 in the dp all_reduce after it"},
    "size_mismatch": {"faulty_ranks": [3], "kind": "mismatch", "group": "world",
                      "op": "all_reduce", "field": "size",
                      "what": f"rank 3 passes {NUMEL // 2} elements to the last step's world "
                              f"all_reduce, the others {NUMEL}"},
    "slow": {"faulty_ranks": [3], "kind": "slow",
             "what": f"rank 3 enters every collective {SLOW_S} s late; no collective times out"},
}


def log(rank, msg):
    print(f"[rank {rank} {time.monotonic():.3f}] {msg}", flush=True)


def wait_for(out_dir, ranks):
    """Until the ranks have dumped (their done.R files), at most WAIT_OTHERS_S."""
    deadline = time.monotonic() + WAIT_OTHERS_S
    while time.monotonic() < deadline:
        if all(os.path.exists(os.path.join(out_dir, f"done.{r}")) for r in ranks):
            return
        time.sleep(0.2)


def read_outcomes(out_dir):
    """Each rank's outcome from its done.R file (removed), 'no dump' where it wrote none."""
    outcomes = {}
    for rank in range(WORLD):
        path = os.path.join(out_dir, f"done.{rank}")
        try:
            with open(path) as f:
                outcomes[str(rank)] = f.read().strip()
            os.unlink(path)
        except FileNotFoundError:
            outcomes[str(rank)] = "no dump"
    return outcomes


def dump(out_dir, rank, outcome):
    """Both dumps of this rank, then its done.R file."""
    import torch._C._distributed_c10d as c10d
    with open(os.path.join(out_dir, "pickle", f"nccl_trace_rank_{rank}"), "wb") as f:
        f.write(c10d._dump_fr_trace())
    dump_json = c10d._dump_fr_trace_json()
    with open(os.path.join(out_dir, "json", f"nccl_trace_rank_{rank}.json"), "wb") as f:
        f.write(dump_json if isinstance(dump_json, bytes) else dump_json.encode())
    with open(os.path.join(out_dir, f"done.{rank}"), "w") as f:
        f.write(outcome + "\n")
    log(rank, f"dumped ({outcome})")


def worker(out_dir, scenario, rank):
    import torch
    import torch.distributed as dist

    timeout = datetime.timedelta(seconds=SLOW_TIMEOUT_S if scenario == "slow" else TIMEOUT_S)
    store = dist.FileStore(os.path.join(out_dir, "store"), WORLD)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=WORLD, timeout=timeout)
    world = dist.group.WORLD
    tp, _ = dist.new_subgroups(group_size=2, timeout=timeout, group_desc="tp")
    dp, _ = dist.new_subgroups_by_enumeration([[0, 2], [1, 3]], timeout=timeout, group_desc="dp")
    log(rank, f"torch {torch.__version__}, groups ready")

    slow = scenario == "slow" and rank == 3

    def collective(name, fn):
        if slow:
            time.sleep(SLOW_S)
        fn()

    outcome = "completed"
    dumped = False
    try:
        for step in range(STEPS):
            last = step == STEPS - 1
            x = torch.full((NUMEL,), float(rank + step))
            if last and scenario == "subgroup_stall" and rank == 1:
                log(rank, "stalls before the tp all_reduce (until the others have dumped)")
                wait_for(out_dir, [r for r in range(WORLD) if r != rank])
                outcome = "stalled"
                break
            collective("tp all_reduce", lambda: dist.all_reduce(x, group=tp))
            parts = [torch.empty(NUMEL) for _ in range(2)]
            collective("tp all_gather", lambda: dist.all_gather(parts, x, group=tp))
            collective("dp all_reduce", lambda: dist.all_reduce(x, group=dp))
            if last and scenario == "skipped" and rank == 2:
                log(rank, "skips the world all_reduce")
                outcome = "skipped"
                break
            if last and scenario == "size_mismatch":
                if rank == 3:
                    y = torch.ones(NUMEL // 2)
                    log(rank, f"passes {y.numel()} elements to the world all_reduce")
                    work = dist.all_reduce(y, group=world, async_op=True)
                    dump(out_dir, rank, "issued the mismatched all_reduce")
                    dumped = True
                    work.wait()  # gloo aborts the process in here
                    outcome = "the mismatched all_reduce returned"
                    break
                else:
                    wait_for(out_dir, [3])
            collective("world all_reduce", lambda: dist.all_reduce(x, group=world))
            log(rank, f"step {step} done")
    except Exception as e:  # the timeout (or the error a size mismatch gives), caught
        outcome = f"error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        log(rank, outcome)

    # Every rank dumps, as a job's dump-on-timeout handler would.
    if not dumped:
        dump(out_dir, rank, outcome)
    # Stay alive (connections open) until every rank has dumped.
    wait_for(out_dir, range(WORLD))
    os._exit(0)  # no process-group teardown: it could block on a peer that never answers


def launch(out_dir, scenario):
    os.makedirs(os.path.join(out_dir, "pickle"), exist_ok=True)
    os.makedirs(os.path.join(out_dir, "json"), exist_ok=True)
    for name in ["store"] + [f"done.{r}" for r in range(WORLD)]:
        try:
            os.unlink(os.path.join(out_dir, name))
        except FileNotFoundError:
            pass
    env = dict(os.environ)
    env.update({
        "TORCH_FR_BUFFER_SIZE": str(FR_BUFFER),
        "GLOO_SOCKET_IFNAME": "lo",  # loopback only
        "OMP_NUM_THREADS": "1",
        "PYTHONUNBUFFERED": "1",
    })
    procs = []
    for rank in range(WORLD):
        logf = open(os.path.join(out_dir, f"rank_{rank}.log"), "w")
        procs.append((subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", out_dir, scenario, str(rank)],
            env=env, stdout=logf, stderr=subprocess.STDOUT), logf))
    deadline = time.monotonic() + JOB_S
    codes = []
    for p, logf in procs:
        try:
            codes.append(p.wait(timeout=max(1, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            p.kill()
            codes.append(p.wait())
        logf.close()
    outcomes = read_outcomes(out_dir)
    import torch
    truth = dict(SCENARIOS[scenario])
    truth.update({
        "scenario": scenario,
        "world_size": WORLD,
        "steps": STEPS,
        "timeout_s": SLOW_TIMEOUT_S if scenario == "slow" else TIMEOUT_S,
        "groups": {"world": [[0, 1, 2, 3]], "tp": [[0, 1], [2, 3]], "dp": [[0, 2], [1, 3]]},
        "per_step": ["tp all_reduce", "tp all_gather", "dp all_reduce", "world all_reduce"],
        "backend": "gloo",
        "torch_version": torch.__version__,
        "outcome": outcomes,
        "exit_codes": {str(r): c for r, c in enumerate(codes)},
    })
    with open(os.path.join(out_dir, "truth.json"), "w") as f:
        json.dump(truth, f, indent=1, sort_keys=True)
        f.write("\n")
    for name in ["store"] + [f"done.{r}" for r in range(WORLD)]:
        try:
            os.unlink(os.path.join(out_dir, name))
        except FileNotFoundError:
            pass
    print(f"{scenario}: exit codes {codes}, outcomes {outcomes}")
    # Exit codes are what gloo made of the fault (size_mismatch's rank 3 aborts): the job
    # failed only where a rank left no dump.
    return 1 if "no dump" in outcomes.values() else 0


# ---- The NCCL jobs (a GPU node: tests/gpu/check_real_nccl.sh runs them) ----------------------
# The same 2 x 2 shape on the nccl backend, the four ranks on one GPU: each claims a host of its
# own (NCCL_HOSTID), so NCCL connects them over its socket transport on loopback instead of
# refusing a second rank on one device. init_process_group gets device_id, so the world
# communicator is made at once and new_subgroups splits tp and dp from it (ncclCommSplit), as
# torchtitan and Megatron-LM set up theirs. Every step: all_reduce and all_gather in tp, a
# send/receive from stage 0 to stage 1 (0 -> 2, 1 -> 3, on the world group, as a pipeline's
# activations), all_reduce in dp, all_reduce in world, then torch.cuda.synchronize() (a
# training loop's loss.item()): the host enqueues the step's operations and waits at its end,
# so a rank stuck in one operation has the step's later ones recorded as scheduled behind it.
#
# The dumps are written twice, as PyTorch writes them:
#   OUT_DIR/auto/nccl_trace_rank_R   PyTorch's own dump on a timeout (TORCH_NCCL_DUMP_ON_TIMEOUT,
#                                    TORCH_NCCL_DEBUG_INFO_TEMP_FILE): the rank whose watchdog
#                                    timed out writes it and signals the others through the
#                                    store, whose monitor threads then write theirs (pickle)
#   OUT_DIR/{pickle,json}/...        torch._C._distributed_c10d._dump_nccl_trace and
#                                    _dump_nccl_trace_json, called DUMP_AFTER_S into the last
#                                    step (before any timeout), or at the end of a clean job
NCCL_TIMEOUT_S = 20  # every group's timeout
NCCL_SLOW_S = 0.5  # how late the slow rank enters each operation
DUMP_AFTER_S = 6  # the explicit dumps, this long after a rank began the last step
NCCL_JOB_S = 150
AUTO_DUMP_WAIT_S = 30  # after the timeout, how long the ranks get to write their own dumps
# RANKSCOPE_JOBS_DRY_RUN=1: the NCCL jobs' logic on gloo and the CPU (no GPU; no dump of
# PyTorch's own): a check of this script where no GPU is, as the chroot's PyTorch allows.
DRY_RUN = os.environ.get("RANKSCOPE_JOBS_DRY_RUN") == "1"

NCCL_SCENARIOS = {
    "healthy": {"faulty_ranks": [], "kind": "none",
                "what": f"{STEPS} steps; every rank dumps at the end"},
    "slow": {"faulty_ranks": [3], "kind": "slow",
             "what": f"rank 3 enters every operation {NCCL_SLOW_S} s late; nothing times out"},
    "skipped": {"faulty_ranks": [2], "kind": "missing_collective", "group": "world",
                "op": "all_reduce", "timing": False,
                "what": "rank 2 never calls the last step's world all_reduce (then idles); "
                        "ranks 0, 1, 3 time out in it. TORCH_NCCL_ENABLE_TIMING is off here"},
    "two_stalls": {"faulty_ranks": [1, 2], "kind": "stall", "group": "tp {0,1} and tp {2,3}",
                   "op": "all_reduce",
                   "what": "ranks 1 and 2 stall (sleep) before the last step's tp all_reduce: "
                           "rank 0 times out in tp {0,1} waiting for 1, rank 3 in tp {2,3} "
                           "waiting for 2"},
    "size_mismatch": {"faulty_ranks": [3], "kind": "mismatch", "group": "world",
                      "op": "all_reduce", "field": "size",
                      "what": f"rank 3 passes {NUMEL // 2} elements to the last step's world "
                              f"all_reduce, the others {NUMEL}: NCCL checks no count across "
                              f"ranks, so what follows is whatever the transport does"},
    "crash": {"faulty_ranks": [1], "kind": "crash", "group": "tp {0,1}", "op": "all_reduce",
              "what": "rank 1 kills itself (SIGKILL) before the last step's tp all_reduce: it "
                      "writes no dump; the others find its connections closed or time out"},
    "p2p_stall": {"faulty_ranks": [2], "kind": "stall", "group": "p2p 0->2", "op": "recv",
                  "what": "rank 2 stalls (sleeps) before the last step's receive from rank 0: "
                          "rank 0's send and everything after it wait for rank 2"},
    "p2p_dtype": {"faulty_ranks": [2], "kind": "mismatch", "group": "p2p 0->2", "op": "recv",
                  "field": "dtype",
                  "what": "rank 2 receives the last step's tensor from rank 0 into a float64 "
                          "buffer where rank 0 sends float32 (as every step before): NCCL "
                          "checks neither count nor dtype of a pair"},
}


def nccl_dump(out_dir, rank, outcome):
    """This rank's dump in both formats (the NCCL entry points), then its done.R file."""
    import torch._C._distributed_c10d as c10d
    try:
        nccl = hasattr(c10d, "_dump_nccl_trace") and not DRY_RUN
        pick = c10d._dump_nccl_trace() if nccl else c10d._dump_fr_trace()
        with open(os.path.join(out_dir, "pickle", f"nccl_trace_rank_{rank}"), "wb") as f:
            f.write(pick)
        js = c10d._dump_nccl_trace_json() if nccl else c10d._dump_fr_trace_json()
        with open(os.path.join(out_dir, "json", f"nccl_trace_rank_{rank}.json"), "wb") as f:
            f.write(js if isinstance(js, bytes) else js.encode())
    except Exception as e:  # written down, not fatal: the auto dumps may still come
        outcome = f"{outcome}; dump failed: {type(e).__name__}: {e}"
    with open(os.path.join(out_dir, f"done.{rank}"), "w") as f:
        f.write(outcome + "\n")
    log(rank, f"dumped ({outcome})")


def nccl_worker(out_dir, scenario, rank):
    import signal
    import threading
    import torch
    import torch.distributed as dist

    timeout = datetime.timedelta(seconds=NCCL_TIMEOUT_S)
    if DRY_RUN:
        dev, sync = torch.device("cpu"), (lambda: None)
        dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=WORLD,
                                timeout=timeout)
    else:
        dev, sync = torch.device("cuda", 0), torch.cuda.synchronize
        torch.cuda.set_device(dev)
        dist.init_process_group("nccl", init_method="env://", rank=rank, world_size=WORLD,
                                timeout=timeout, device_id=dev)
    world = dist.group.WORLD
    tp, _ = dist.new_subgroups(group_size=2, timeout=timeout, group_desc="tp")
    dp, _ = dist.new_subgroups_by_enumeration([[0, 2], [1, 3]], timeout=timeout, group_desc="dp")
    log(rank, f"torch {torch.__version__}, groups ready")

    faulty = rank in NCCL_SCENARIOS[scenario]["faulty_ranks"]
    slow = scenario == "slow" and faulty

    def op(fn):
        if slow:
            time.sleep(NCCL_SLOW_S)
        fn()

    timer = None
    try:
        for step in range(STEPS):
            last = step == STEPS - 1
            if last and scenario != "healthy" and scenario != "slow":
                timer = threading.Thread(
                    target=lambda: (time.sleep(DUMP_AFTER_S),
                                    nccl_dump(out_dir, rank, "dumped in the last step")),
                    daemon=True)
                timer.start()
            x = torch.full((NUMEL,), float(rank + step), device=dev)
            if last and scenario == "two_stalls" and faulty:
                log(rank, "stalls before the tp all_reduce")
                time.sleep(NCCL_JOB_S)
                os._exit(0)
            if last and scenario == "crash" and faulty:
                log(rank, "kills itself before the tp all_reduce")
                os.kill(os.getpid(), signal.SIGKILL)
            op(lambda: dist.all_reduce(x, group=tp))
            parts = [torch.empty(NUMEL, device=dev) for _ in range(2)]
            op(lambda: dist.all_gather(parts, x, group=tp))
            if rank < 2:
                op(lambda: dist.send(x, rank + 2))
            else:
                buf = torch.empty(NUMEL, device=dev)
                if last and scenario == "p2p_stall" and faulty:
                    log(rank, "stalls before the receive from rank 0")
                    time.sleep(NCCL_JOB_S)
                    os._exit(0)
                if last and scenario == "p2p_dtype" and faulty:
                    buf = torch.empty(NUMEL, dtype=torch.float64, device=dev)
                    log(rank, "receives float64 where rank 0 sends float32")
                op(lambda: dist.recv(buf, rank - 2))
            op(lambda: dist.all_reduce(x, group=dp))
            if last and scenario == "skipped" and faulty:
                log(rank, "skips the world all_reduce")
                sync()
                time.sleep(NCCL_JOB_S)
                os._exit(0)
            y = x
            if last and scenario == "size_mismatch" and faulty:
                y = torch.ones(NUMEL // 2, device=dev)
                log(rank, f"passes {y.numel()} elements to the world all_reduce")
            op(lambda: dist.all_reduce(y, group=world))
            log(rank, f"step {step} enqueued")
            sync()
            log(rank, f"step {step} done")
    except Exception as e:  # a peer's death or an abort, seen by this rank: written down
        log(rank, f"error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        if timer is None:
            nccl_dump(out_dir, rank, f"error before the last step: {type(e).__name__}")
        time.sleep(NCCL_JOB_S)  # the timer dumps; the launcher ends the job
        os._exit(1)
    nccl_dump(out_dir, rank, "completed")
    wait_for(out_dir, range(WORLD))
    os._exit(0)  # no teardown: nothing is left to wait for


def nccl_launch(out_dir, scenario, plugin, recorder_pid):
    import signal
    import socket
    for sub in ("pickle", "json", "auto"):
        os.makedirs(os.path.join(out_dir, sub), exist_ok=True)
    for r in range(WORLD):
        try:
            os.unlink(os.path.join(out_dir, f"done.{r}"))
        except FileNotFoundError:
            pass
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    spec = NCCL_SCENARIOS[scenario]
    timing = spec.get("timing", True)
    procs = []
    for rank in range(WORLD):
        env = dict(os.environ)
        env.update({
            "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(WORLD),
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
            "NCCL_HOSTID": f"rankscope-fr-{rank}", "NCCL_SOCKET_IFNAME": "lo",
            "NCCL_IB_DISABLE": "1", "NCCL_DEBUG": "WARN",
            "TORCH_FR_BUFFER_SIZE": str(FR_BUFFER), "TORCH_NCCL_TRACE_BUFFER_SIZE": str(FR_BUFFER),
            "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",
            "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": os.path.join(out_dir, "auto", "nccl_trace_rank_"),
            "TORCH_NCCL_ENABLE_TIMING": "1" if timing else "0",
            "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1",
        })
        if plugin:
            env["NCCL_PROFILER_PLUGIN"] = plugin
        if DRY_RUN:
            env["USE_LIBUV"] = "0"  # Debian's PyTorch has a TCPStore without libuv
        logf = open(os.path.join(out_dir, f"rank_{rank}.log"), "w")
        procs.append((subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--nccl-worker", out_dir, scenario,
             str(rank)], env=env, stdout=logf, stderr=subprocess.STDOUT), logf))

    # The ranks that can dump: not one that killed itself.
    dumping = [r for r in range(WORLD) if not (scenario == "crash" and r in spec["faulty_ranks"])]

    def all_dumped():
        return all(os.path.exists(os.path.join(out_dir, f"done.{r}")) for r in dumping)

    def stop_recorder(why):
        nonlocal recorder_pid
        if recorder_pid:
            print(f"{scenario}: stopping the recorder ({why})", flush=True)
            try:
                os.kill(recorder_pid, signal.SIGINT)
            except ProcessLookupError:
                pass
            recorder_pid = None

    # Until every process ended, or every rank wrote PyTorch's own dump (then 2 s more for the
    # writing to end), or the timeout and AUTO_DUMP_WAIT_S passed after the explicit dumps.
    start = time.monotonic()
    deadline = start + NCCL_JOB_S
    dumped_at = auto_at = None
    while time.monotonic() < deadline:
        now = time.monotonic()
        if dumped_at is None and all_dumped():
            dumped_at = now
            stop_recorder("every rank dumped")
        if all(p.poll() is not None for p, _ in procs):
            break
        if auto_at is None and all(
                os.path.exists(os.path.join(out_dir, "auto", f"nccl_trace_rank_{r}"))
                for r in dumping):
            auto_at = now
        if auto_at is not None and now - auto_at > 2:
            break
        if dumped_at is not None and now - dumped_at > NCCL_TIMEOUT_S + AUTO_DUMP_WAIT_S:
            break
        time.sleep(0.2)
    stop_recorder("the job ended")
    codes = []
    for p, logf in procs:
        if p.poll() is None:
            p.kill()
        codes.append(p.wait())
        logf.close()
    outcomes = read_outcomes(out_dir)
    import torch
    truth = dict(spec)
    truth.update({
        "scenario": scenario, "world_size": WORLD, "steps": STEPS, "timeout_s": NCCL_TIMEOUT_S,
        "numel": NUMEL,
        "groups": {"world": [[0, 1, 2, 3]], "tp": [[0, 1], [2, 3]], "dp": [[0, 2], [1, 3]],
                   "p2p": [[0, 2], [1, 3]]},
        "per_step": ["tp all_reduce", "tp all_gather", "p2p send 0->2 1->3 (world)",
                     "dp all_reduce", "world all_reduce", "torch.cuda.synchronize"],
        "backend": "nccl", "timing": timing, "dump_after_s": DUMP_AFTER_S,
        "torch_version": torch.__version__,
        "nccl_version": "none (dry run)" if DRY_RUN else
        ".".join(map(str, torch.cuda.nccl.version())),
        "auto_dumps": sorted(os.listdir(os.path.join(out_dir, "auto"))),
        "outcome": outcomes,
        "exit_codes": {str(r): c for r, c in enumerate(codes)},
        "seconds": round(time.monotonic() - start, 1),
    })
    with open(os.path.join(out_dir, "truth.json"), "w") as f:
        json.dump(truth, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{scenario}: exit codes {codes}, outcomes {outcomes}, auto dumps "
          f"{truth['auto_dumps']}, {truth['seconds']} s", flush=True)
    return 1 if any(outcomes[str(r)] == "no dump" for r in dumping) else 0


def main():
    args = sys.argv[1:]
    if args and args[0] == "--worker":
        worker(args[1], args[2], int(args[3]))
        return 0
    if args and args[0] == "--nccl-worker":
        nccl_worker(args[1], args[2], int(args[3]))
        return 0
    backend, plugin, recorder_pid = "gloo", None, None
    while args and args[0].startswith("--"):
        if args[0] == "--backend" and len(args) > 1:
            backend = args[1]
        elif args[0] == "--plugin" and len(args) > 1:
            plugin = args[1]
        elif args[0] == "--recorder-pid" and len(args) > 1:
            recorder_pid = int(args[1])
        else:
            sys.exit(__doc__)
        args = args[2:]
    scenarios = NCCL_SCENARIOS if backend == "nccl" else SCENARIOS
    if backend not in ("gloo", "nccl") or len(args) != 2 or args[1] not in scenarios:
        sys.exit(__doc__)
    if backend == "nccl":
        return nccl_launch(args[0], args[1], plugin, recorder_pid)
    return launch(args[0], args[1])


if __name__ == "__main__":
    sys.exit(main())
