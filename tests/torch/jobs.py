#!/usr/bin/env python3
"""Real 4-rank torch.distributed jobs on the gloo backend, run with real PyTorch (Debian sid's
python3-torch, inside the root tests/torch/setup_chroot.sh builds), each rank writing its
Flight Recorder dump in both formats PyTorch writes.

  jobs.py OUT_DIR SCENARIO

SCENARIO: healthy | skipped | subgroup_stall | size_mismatch | slow

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
NUMEL = 1024
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
    outcomes = {}
    for rank in range(WORLD):
        try:
            with open(os.path.join(out_dir, f"done.{rank}")) as f:
                outcomes[str(rank)] = f.read().strip()
        except FileNotFoundError:
            outcomes[str(rank)] = "no dump"
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


def main():
    args = sys.argv[1:]
    if args and args[0] == "--worker":
        worker(args[1], args[2], int(args[3]))
        return 0
    if len(args) != 2 or args[1] not in SCENARIOS:
        sys.exit(__doc__)
    return launch(args[0], args[1])


if __name__ == "__main__":
    sys.exit(main())
