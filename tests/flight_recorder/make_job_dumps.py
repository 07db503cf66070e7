#!/usr/bin/env python3
"""Writes the Flight Recorder dumps of a whole job, as PyTorch writes them, for tests.

  make_job_dumps.py OUT_DIR [--backend nccl|gloo] [--format pickle|json] [--version 2.10]
                    [--tp 2 --pp 2 --dp 2 --ep 2] [--steps 3] [--micro 4]
                    [--fault KIND:RANK:ROLE]... [--timing on|off] [--buffer N]
                    [--p2p batched|single]
                    [--world 4] [--subgroups] [--t0 NS] [--truth FILE]

nccl: a Megatron-shaped job of tp*pp*dp ranks (rank = (pp*dp + d)*tp + t). Groups made as
  Megatron makes them: the default group '0' (default_pg), then data-, tensor- and
  pipeline-parallel groups by new_group (names '1', '2', ... from the process-wide counter,
  so equal on every rank), then expert-parallel groups by split_group (named
  '0:split:[ranks]', the name ProcessGroup::splitGroup gives). Every rank records the groups
  it is a member of (pg_config, pg_id in construction order). A step: micro-batches in 1F1B
  order (stage p of P warms up with P-p-1 forwards), each forward and backward doing 2
  tensor-parallel all-reduces and an expert all-to-all (dispatch and combine), activations and
  gradients passed by send/recv between stages (--p2p batched: batch_isend_irecv, Megatron's
  default, recorded as ProcessGroupNCCL records coalesced ops: each send and recv without
  events, forever 'scheduled', then one 'nccl:coalesced' entry of the same p2p_seq_id with
  the group's state; --p2p single: one send or recv per call, even stages sending first);
  at the step's end a data-parallel
  reduce-scatter and all-gather, then the host waits for its device (loss.item()).
  Simulated per rank: the host enqueues without waiting (NCCL), the device runs its stream
  in order, a collective ends when every member has started it, a send/recv pair when both
  have. States as ProcessGroupNCCL leaves them: 'completed' with discovered times, 'started'
  (with --timing on only) for what runs and waits, 'scheduled' for what is queued behind.
gloo: a job of --world ranks (4 by default) in the default group; with --subgroups also the
  groups {0,1} and {2,3} (new_group, desc 'undefined'). As ProcessGroupGloo records: host
  waits on each collective, no send/recv entries, every entry 'scheduled' with no discovered
  time, 'retired' true once gloo ran it, finished or timed out; collective_seq_id from 1;
  pg_config keyed by '' (recorded before the group is named): ranks 0..N-1 where the default
  group was the last gloo group built on that rank, [] where a subgroup was.

--fault KIND:RANK:ROLE (up to two): ROLE is the group (tp, pp, dp, ep; gloo: world, sub) of the
  operation of the last step where the fault strikes: 'hang' never enters it (the host stops
  there), 'crash' stops there and writes no dump, 'mismatch' enters it with another size
  (the collective never completes). The others wait and time out (TORCH_NCCL_DUMP_ON_TIMEOUT:
  every rank dumps).
--buffer N: TORCH_FR_BUFFER_SIZE: each dump keeps only its last N entries.

Writes nccl_trace_rank_N (.json with --format json) per rank, and with --truth a JSON file of
what was injected (ranks, kinds, roles) and the groups; prints one line per dump: its name and
its number of entries.
"""
import json
import os
import pickle
import sys

POLL_NS = 700_000  # the watchdog discovers a start or end up to a poll interval late
DUR = {"tp": 60_000, "ep": 250_000, "pp": 120_000, "dp": 2_000_000, "world": 400_000,
       "sub": 300_000}
GAP_NS = 30_000  # host time between two enqueues
TIMEOUT_MS = 600_000


class Op:
    """One call: a collective ('coll'), a send or recv ('p2p', one of `p2p`), or a
    batch_isend_irecv ('batch', all of `p2p`: NCCL runs them as one group)."""

    def __init__(self, role, group, kind, name, p2p=(), size=4096):
        self.role, self.group, self.kind, self.name = role, group, kind, name
        self.p2p, self.size = list(p2p), size  # p2p: ('send' | 'recv', peer global rank)
        self.h = self.ds = self.de = None  # host enqueue, device start, device end
        self.keys = []  # what must be started elsewhere for it to end
        self.step = 0
        self.step_end = False


def megatron_groups(tp, pp, dp, ep):
    """{rank: {role: group}} and the groups in creation order (name, desc, ranks)."""
    world = tp * pp * dp
    rank = lambda p, d, t: (p * dp + d) * tp + t
    groups, counter = [("0", "default_pg", list(range(world)))], 1

    def add(desc, members, name=None):
        nonlocal counter
        if name is None:
            name, counter = str(counter), counter + 1
        groups.append((name, desc, members))

    for p in range(pp):
        for t in range(tp):
            add("DATA_PARALLEL_GROUP", [rank(p, d, t) for d in range(dp)])
    for p in range(pp):
        for d in range(dp):
            add("TENSOR_MODEL_PARALLEL_GROUP", [rank(p, d, t) for t in range(tp)])
    for d in range(dp):
        for t in range(tp):
            add("PIPELINE_MODEL_PARALLEL_GROUP", [rank(p, d, t) for p in range(pp)])
    for p in range(pp):
        for t in range(tp):
            for e0 in range(0, dp, ep):
                members = [rank(p, d, t) for d in range(e0, e0 + ep)]
                add("EXPERT_MODEL_PARALLEL_GROUP", members, f"0:split:{members}")
    roles = {}
    for name, desc, members in groups:
        role = {"default_pg": "world", "DATA_PARALLEL_GROUP": "dp",
                "TENSOR_MODEL_PARALLEL_GROUP": "tp", "PIPELINE_MODEL_PARALLEL_GROUP": "pp",
                "EXPERT_MODEL_PARALLEL_GROUP": "ep"}[desc]
        for r in members:
            roles.setdefault(r, {})[role] = (name, desc, members)
    return roles, groups


def megatron_program(r, roles, pp, steps, micro, batched):
    g = roles[r]
    stage = g["pp"][2].index(r)
    prev = g["pp"][2][stage - 1] if stage > 0 else None
    nxt = g["pp"][2][stage + 1] if stage < pp - 1 else None
    ops = []

    def comm(*pairs):
        """Megatron's p2p_communication: one batch_isend_irecv (batch_p2p_comm, the
        default), or single isend/irecv calls, even stages sending first."""
        pairs = [(k, peer) for k, peer in pairs if peer is not None]
        if not pairs:
            return
        if batched:
            ops.append(Op("pp", g["pp"], "batch", "coalesced", pairs, 16384))
            return
        pairs.sort(key=lambda p: (p[0] == "send") == (stage % 2 == 1))
        for k, peer in pairs:
            ops.append(Op("pp", g["pp"], "p2p", k, [(k, peer)], 16384))

    def layer():
        ops.append(Op("tp", g["tp"], "coll", "all_reduce"))
        ops.append(Op("ep", g["ep"], "coll", "all_to_all_single", size=8192))
        ops.append(Op("ep", g["ep"], "coll", "all_to_all_single", size=8192))
        ops.append(Op("tp", g["tp"], "coll", "all_reduce"))

    # forward_backward_pipelining_without_interleaving: warm-up forwards, then one forward
    # and one backward per micro-batch (each send paired with the next receive), then the
    # cool-down backwards.
    for s in range(steps):
        first = len(ops)
        if s == 0:
            ops.append(Op("world", g["world"], "coll", "barrier", size=1))
        warm = min(pp - stage - 1, micro)
        steady = micro - warm
        for _ in range(warm):
            comm(("recv", prev))
            layer()
            comm(("send", nxt))
        if steady:
            comm(("recv", prev))
        for i in range(steady):
            layer()
            comm(("send", nxt), ("recv", nxt))
            layer()
            if i == steady - 1:
                comm(("send", prev))
            else:
                comm(("send", prev), ("recv", prev))
        for _ in range(warm):
            comm(("recv", nxt))
            layer()
            comm(("send", prev))
        ops.append(Op("dp", g["dp"], "coll", "_reduce_scatter_base", size=1 << 20))
        ops.append(Op("dp", g["dp"], "coll", "_allgather_base", size=1 << 20))
        for o in ops[first:]:
            o.step = s
        ops[-1].step_end = True
    return ops


def gloo_program(r, world, steps, subgroups):
    wg = ("0", "default_pg", list(range(world)))
    sub = None
    if subgroups:
        half = world // 2
        members = list(range(half)) if r < half else list(range(half, world))
        sub = ("1" if r < half else "2", "undefined", members)
    ops = []
    for s in range(steps):
        for k in range(4):
            o = Op("world", wg, "coll", "all_reduce")
            o.step, o.step_end = s, True  # gloo: the host waits on every collective
            ops.append(o)
            if sub and k % 2 == 1:
                o = Op("sub", sub, "coll", "all_reduce", size=1024)
                o.step, o.step_end = s, True
                ops.append(o)
    return ops


def assign_keys(programs):
    for r, ops in programs.items():
        cseq, p2p = {}, {}
        for o in ops:
            name = o.group[0]
            if o.kind == "coll":
                cseq[name] = cseq.get(name, 0) + 1
                o.cseq, o.keys = cseq[name], [("c", name, cseq[name])]
                continue
            o.cseq = cseq.get(name, 0)
            for k, peer in o.p2p:
                src, dst = (r, peer) if k == "send" else (peer, r)
                n = p2p.get((name, src, dst), 0) + 1
                p2p[(name, src, dst)] = n
                o.keys.append(("p", name, src, dst, n))


def simulate(programs, t0, faults, gloo):
    """Host and device times of every op; a fault's op and what follows never get them."""
    stop = {}  # rank -> index of the first op its host never enqueues
    never = set()  # keys that never complete (a size mismatch)
    for kind, rank, idx in faults:
        if kind in ("hang", "crash"):
            stop[rank] = idx
        else:
            programs[rank][idx].size //= 2
            never.update(programs[rank][idx].keys)
    members = {}
    for r, ops in programs.items():
        for o in ops:
            for key in o.keys:
                members.setdefault(key, []).append(o)
    nxt_h = {r: 0 for r in programs}
    nxt_d = {r: 0 for r in programs}
    changed = True
    while changed:
        changed = False
        for r, ops in programs.items():
            i = nxt_h[r]
            if i < len(ops) and i < stop.get(r, len(ops)):
                prev = ops[i - 1] if i else None
                if prev is None:
                    ops[i].h = t0 + r * 3_000
                elif prev.step_end and (gloo or prev.step != ops[i].step):
                    # The host waits for its device: gloo on every collective, NCCL at the
                    # step's end.
                    if prev.de is not None:
                        ops[i].h = prev.de + GAP_NS + r * 1_000
                else:
                    ops[i].h = prev.h + GAP_NS
                if ops[i].h is not None:
                    nxt_h[r], changed = i + 1, True
            j = nxt_d[r]
            if j < nxt_h[r] and (j == 0 or ops[j - 1].de is not None):
                ops[j].ds = max(ops[j].h, ops[j - 1].de if j else 0)
                nxt_d[r], changed = j + 1, True
        # An operation ends once everything it waits for (the members of its collective, the
        # peers of its sends and receives) has started on their devices.
        for ops in programs.values():
            for o in ops:
                if o.ds is None or o.de is not None or any(k in never for k in o.keys):
                    continue
                partners = [p for k in o.keys for p in members[k]]
                want = sum(2 if k[0] == "p" else len(o.group[2]) for k in o.keys)
                if len(partners) == want and all(p.ds is not None for p in partners):
                    o.de = max(p.ds for p in partners) + DUR[o.role]
                    changed = True
    stuck = [o.ds for ops in programs.values() for o in ops if o.ds is not None and o.de is None]
    last = max(o.de or o.h or t0 for ops in programs.values() for o in ops)
    # A hang is dumped when the first stuck operation times out; a healthy job at its end.
    return min(stuck) + TIMEOUT_MS * 1_000_000 if stuck else last + 1_000_000_000


def entries_of(r, ops, dump_t, args, pg_ids):
    gloo = args["backend"] == "gloo"
    timing = args["timing"] == "on"
    out, p2p_seq, op_id = [], {}, {}

    def add(o, prof, p2p_id, events):
        name, desc, _ = o.group
        op_id[name] = op_id.get(name, 0) + 1
        done = o.de is not None and o.de <= dump_t
        dtype = "Float" if gloo else "BFloat16"
        e = {
            "record_id": len(out), "pg_id": pg_ids[name], "process_group": (name, desc),
            "collective_seq_id": o.cseq, "p2p_seq_id": p2p_id, "op_id": op_id[name],
            "profiling_name": prof, "time_created_ns": o.h,
            "input_sizes": [[o.size]], "input_dtypes": [dtype],
            "output_sizes": [[o.size]], "output_dtypes": [dtype],
            "timeout_ms": TIMEOUT_MS, "is_p2p": o.kind != "coll",
            "thread_id": str(140000000000 + r), "thread_name": "pt_main_thread",
            "time_discovered_started_ns": None, "time_discovered_completed_ns": None,
            "state": "scheduled", "retired": False,
        }
        poll = (r * 37_000 + len(out) * 11_000) % POLL_NS
        if gloo:
            # No events: scheduled forever; retired once gloo ran it (finished or timed out).
            e["retired"] = done or (o.ds is not None and o.de is None)
        elif events:
            started = o.ds + poll if (timing and o.ds is not None) else None
            completed = o.de + poll if done else None
            e.update(state="completed" if done else "started" if started else "scheduled",
                     time_discovered_started_ns=started, time_discovered_completed_ns=completed,
                     retired=done)
            if timing and done:
                e["duration_ms"] = (o.de - o.ds) / 1e6
        if args["format"] == "json":
            e["time_discovered_started_ns"] = e["time_discovered_started_ns"] or 0
            e["time_discovered_completed_ns"] = e["time_discovered_completed_ns"] or 0
            e["process_group"] = list(e["process_group"])
        else:
            e["frames"] = [
                {"name": o.name, "filename": "torch/distributed/distributed_c10d.py", "line": 2696},
                {"name": f"{o.role}_step", "filename": "/job/train.py", "line": 100 + o.step},
            ]
        out.append(e)

    for o in ops:
        if o.h is None:
            break
        name, _, members = o.group
        if o.kind == "coll":
            add(o, f"{args['backend']}:{o.name}", p2p_seq.get(name, 0), True)
            continue
        p2p_seq[name] = p2p_seq.get(name, 0) + 1
        me = members.index(r)
        for k, peer in o.p2p:
            other = members.index(peer)
            prof = f"nccl:send {me}->{other}" if k == "send" else f"nccl:recv {me}<-{other}"
            # Inside a batch (coalescing) ProcessGroupNCCL records each op without events: it
            # stays 'scheduled'; the group's 'nccl:coalesced' entry carries the state.
            add(o, prof, p2p_seq[name], o.kind == "p2p")
        if o.kind == "batch":
            add(o, "nccl:coalesced", p2p_seq[name], True)
    if args["buffer"] and len(out) > args["buffer"]:
        out = out[-args["buffer"]:]
    return out


def dump_of(r, entries, groups_of_rank, args, pg_ids):
    gloo = args["backend"] == "gloo"
    if gloo:
        # Recorded by the constructor before the group has its name and global ranks: one key.
        last = groups_of_rank[-1]
        ranks = list(range(len(last[2]))) if last[0] == "0" else []
        pg_config = {"": {"name": "", "desc": "", "ranks": str(ranks)}}
    else:
        pg_config = {n: {"name": n, "desc": d, "ranks": str(m)} for n, d, m in groups_of_rank}
    status = {}
    for name, _, _ in groups_of_rank:
        colls = [e for e in entries if e["process_group"][0] == name and not e["is_p2p"]]
        seq = lambda pred: max([e["collective_seq_id"] for e in colls if pred(e)] or [-1])
        status[str(pg_ids[name])] = {
            "last_enqueued_collective": seq(lambda e: True),
            "last_started_collective": -1 if gloo else seq(lambda e: e["state"] != "scheduled"),
            "last_completed_collective": seq(lambda e: e["retired"]) if gloo else
            seq(lambda e: e["state"] == "completed")}
    d = {"version": args["version"], "comm_lib_version": "" if gloo else "2.27.3",
         "pg_config": pg_config, "pg_status": status}
    if entries:
        d["entries"] = entries
    if not gloo:
        d["nccl_comm_state"] = {"0x5c1a": {"rank": str(r), "status": "ok"}}
    if args["format"] == "json":
        d["pg_status"] = {k: {kk: str(vv) for kk, vv in v.items()} for k, v in status.items()}
    return d


def main():
    argv = sys.argv[1:]
    if not argv or argv[0].startswith("-"):
        sys.exit(__doc__)
    out_dir = argv[0]
    args = {"backend": "nccl", "format": "pickle", "version": "2.10", "tp": 2, "pp": 2,
            "dp": 2, "ep": 2, "steps": 3, "micro": 4, "timing": "on", "buffer": 0,
            "t0": 1_764_000_000_000_000_000, "subgroups": False, "world": 4, "truth": "", "p2p": "batched"}
    faults = []
    rest = argv[1:]
    while rest:
        k = rest.pop(0)
        if k == "--subgroups":
            args["subgroups"] = True
            continue
        v = rest.pop(0)
        if k == "--fault":
            kind, rank, role = v.split(":")
            assert kind in ("hang", "crash", "mismatch"), kind
            faults.append((kind, int(rank), role))
        elif k[2:] in ("tp", "pp", "dp", "ep", "steps", "micro", "buffer", "t0", "world"):
            args[k[2:]] = int(v)
        else:
            args[k[2:]] = v
    gloo = args["backend"] == "gloo"
    if gloo:
        world = args["world"]
        programs = {r: gloo_program(r, world, args["steps"], args["subgroups"])
                    for r in range(world)}
        groups = [("0", "default_pg", list(range(world)))]
        if args["subgroups"]:
            half = world // 2
            groups += [("1", "undefined", list(range(half))),
                       ("2", "undefined", list(range(half, world)))]
    else:
        roles, groups = megatron_groups(args["tp"], args["pp"], args["dp"], args["ep"])
        world = args["tp"] * args["pp"] * args["dp"]
        programs = {r: megatron_program(r, roles, args["pp"], args["steps"], args["micro"],
                                        args["p2p"] == "batched")
                    for r in range(world)}
    assign_keys(programs)
    placed = []
    for kind, rank, role in faults:
        last = max(o.step for o in programs[rank])
        idx = next(i for i, o in enumerate(programs[rank]) if o.step == last and o.role == role)
        placed.append((kind, rank, idx))
    dump_t = simulate(programs, args["t0"], placed, gloo)
    os.makedirs(out_dir, exist_ok=True)
    truth = {"backend": args["backend"], "world": world,
             "faults": [{"kind": k, "rank": r, "role": ro} for k, r, ro in faults],
             "ranks": sorted({r for _, r, _ in faults}),
             "groups": [{"name": n, "desc": d, "ranks": m} for n, d, m in groups]}
    for r in range(world):
        if any(k == "crash" and fr == r for k, fr, _ in faults):
            continue
        mine = [g for g in groups if r in g[2]]
        pg_ids = {g[0]: i for i, g in enumerate(mine)}
        entries = entries_of(r, programs[r], dump_t, args, pg_ids)
        d = dump_of(r, entries, mine, args, pg_ids)
        name = f"nccl_trace_rank_{r}" + (".json" if args["format"] == "json" else "")
        with open(os.path.join(out_dir, name), "w" if args["format"] == "json" else "wb") as f:
            if args["format"] == "json":
                json.dump(d, f)
            else:
                f.write(pickle.dumps(d, protocol=2))
        print(name, len(entries))
    if args["truth"]:
        with open(args["truth"], "w") as f:
            json.dump(truth, f, indent=1)


if __name__ == "__main__":
    main()
