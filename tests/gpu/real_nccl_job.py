#!/usr/bin/env python3
"""A small torch.distributed job on real NCCL, for checking rankscope on a GPU node.

Two ranks share one GPU: each rank claims a host of its own (NCCL_HOSTID), so NCCL connects
them through its network transport over loopback instead of refusing a second rank on the
device. Every operation is logged as one JSON line (host CLOCK_REALTIME and CLOCK_MONOTONIC
before the call, after it returned, and after the result was synchronized; torch's own device
duration of the collective), which check_real_nccl.py compares with the bundle's gpu_ops.

Phases: all_reduce steps (rank 1's device held back by a GPU sleep on some of them: a
device-bound straggler whose host enqueues on time), the other collectives, send/recv, a
collective on a communicator split from the world, an all_reduce captured into a CUDA graph and
replayed (NCCL runs nothing at the capture; each replay is a gpu_ops row of its own), and at
last an all_reduce that only rank 0
enters (never completes: the driver stops the recorder while it is in flight, then kills
the job)."""
import argparse
import json
import os
import sys
import time


def now():
    return time.clock_gettime_ns(time.CLOCK_REALTIME), time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def graph(dist, torch, dev, out, a, replays=3):
    """One all_reduce captured into a CUDA graph (after a warm-up on a side stream, as torch's
    graphs want), then replayed; logged as one line with the replay count, or the error when
    this torch / NCCL refuses the capture (the job's limit, not the recorder's)."""
    rec = {"rank": a.rank, "pid": os.getpid(), "step": a.steps + 2, "op": "ALL_REDUCE"}
    try:
        y = torch.ones(1024, device=dev)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            dist.all_reduce(y)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        t0 = now()
        with torch.cuda.graph(g):
            dist.all_reduce(y)
        t1 = now()
        for _ in range(replays):
            g.replay()
        torch.cuda.synchronize()
        t2 = now()
        rec.update({"graph_replays": replays, "t0_real": t0[0], "t1_real": t1[0], "t2_real": t2[0],
                    "result": float(y[0].item())})
    except Exception as e:  # noqa: BLE001 -- reported, not hidden
        rec["graph_error"] = repr(e)[:300]
    out.write(json.dumps(rec) + "\n")
    out.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--port", type=int, default=29533)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--slow-steps", default="20-24", help="steps on which rank 1's GPU sleeps first")
    ap.add_argument("--slow-ms", type=float, default=20.0)
    ap.add_argument("--log", required=True)
    ap.add_argument("--hang-marker", help="file rank 0 creates once the hang is enqueued")
    ap.add_argument("--no-hang", action="store_true", help="end cleanly after the split communicator")
    a = ap.parse_args()

    os.environ.setdefault("NCCL_HOSTID", "rankscope-gpu-check-%d" % a.rank)
    os.environ.setdefault("TORCH_NCCL_ENABLE_TIMING", "1")
    import torch
    import torch.distributed as dist

    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:%d" % a.port,
                            rank=a.rank, world_size=a.world, device_id=dev)
    lo, hi = (int(x) for x in a.slow_steps.split("-"))
    # GPU clock rate for the sleep: cycles per ms.
    cycles_per_ms = torch.cuda.get_device_properties(dev).clock_rate if hasattr(
        torch.cuda.get_device_properties(dev), "clock_rate") else 1_900_000
    out = open(a.log, "w")

    def run(op, step, fn, **extra):
        t0 = now()
        work = fn()
        t1 = now()
        work.wait()
        torch.cuda.synchronize()
        t2 = now()
        try:
            dur = work.get_duration()
        except Exception as e:  # timing not enabled in this torch
            dur = repr(e)[:80]
        rec = {"rank": a.rank, "pid": os.getpid(), "step": step, "op": op,
               "t0_real": t0[0], "t0_mono": t0[1], "t1_real": t1[0], "t1_mono": t1[1],
               "t2_real": t2[0], "t2_mono": t2[1], "torch_ms": dur}
        rec.update(extra)
        out.write(json.dumps(rec) + "\n")

    n = 1 << 20  # 4 MiB of float32
    x = torch.ones(n, device=dev)
    for step in range(a.steps):
        slow = a.rank == 1 and lo <= step <= hi
        if slow:
            torch.cuda._sleep(int(a.slow_ms * cycles_per_ms))
        run("ALL_REDUCE", step, lambda: dist.all_reduce(x, async_op=True), slow=slow)
        x.fill_(1.0)

    small = torch.ones(1024, device=dev)
    run("ALL_REDUCE", a.steps, lambda: dist.all_reduce(small, async_op=True), size="small")
    run("BROADCAST", a.steps, lambda: dist.broadcast(x, src=1, async_op=True))
    gathered = torch.empty(n * a.world, device=dev)
    run("ALL_GATHER", a.steps, lambda: dist.all_gather_into_tensor(gathered, x, async_op=True))
    part = torch.empty(n // a.world, device=dev)
    run("REDUCE_SCATTER", a.steps, lambda: dist.reduce_scatter_tensor(part, x, async_op=True))
    run("REDUCE", a.steps, lambda: dist.reduce(x, dst=0, async_op=True))
    peer = 1 - a.rank
    buf = torch.ones(1 << 20, device=dev)
    if a.rank == 0:
        run("SEND", a.steps, lambda: dist.isend(buf, dst=peer), peer=peer)
    else:
        run("RECV", a.steps, lambda: dist.irecv(buf, src=peer), peer=peer)
    # A communicator split from the world (ncclCommSplit: the default group was created eagerly
    # on a bound device).
    sub = dist.new_group(ranks=list(range(a.world)))
    run("ALL_REDUCE", a.steps + 1, lambda: dist.all_reduce(x, group=sub, async_op=True), group="split")
    out.flush()
    graph(dist, torch, dev, out, a)

    dist.barrier()
    torch.cuda.synchronize()
    if a.no_hang:
        out.close()
        dist.destroy_process_group()
        return 0
    if a.rank == 0:
        t0 = now()
        dist.all_reduce(x, async_op=True)  # rank 1 never joins
        t1 = now()
        out.write(json.dumps({"rank": 0, "pid": os.getpid(), "step": a.steps + 2, "op": "ALL_REDUCE",
                              "t0_real": t0[0], "t0_mono": t0[1], "t1_real": t1[0],
                              "t1_mono": t1[1], "hang": True}) + "\n")
        out.flush()
        open(a.hang_marker, "w").close()
    time.sleep(600)  # the driver kills the job


if __name__ == "__main__":
    sys.exit(main())
