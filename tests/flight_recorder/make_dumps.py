#!/usr/bin/env python3
"""Writes PyTorch Flight Recorder dumps for tests, following the dump's documented structure
(FlightRecorder.hpp / FlightRecorderDetail.hpp: a dict with version, pg_config, pg_status,
entries and optionally nccl_comm_state and comm_lib_version).

  make_dumps.py OUT_DIR SCENARIO VERSION FORMAT [--ranks N] [--t0 NS] [--skip-ranks 2,3]
                [--culprit R] [--pg-name NAME] [--big-value BYTES]

SCENARIO: healthy | missing_collective | stuck_started | size_mismatch | p2p_hang |
          missing_dump | hostile (a set of malicious pickles, one per file)
FORMAT:   pickle (protocol 2, as PyTorch's C++ pickler writes) | pickle5 (protocol 5, framed)
          | pickle0 | pickle1 (Python's pickle at protocols 0 and 1) | json
          | json-bom (JSON after a UTF-8 byte order mark, Python's 'utf-8-sig')
--pg-name:   the default process group's name (instead of '0')
--big-value: rank 0's first entry's profiling name grows by that many bytes
Prints one line per dump file: its name and its number of entries.
"""
import json
import os
import pickle
import sys

STEPS = 8  # collectives per rank before the fault
DUMP_AFTER_NS = 30_000_000_000  # the dumps are taken 30 s after t0 (set in main)
DUMP_NS = 0
PG_NAME = "0"
BIG_VALUE = 0
CULPRIT = {"missing_collective": 2, "stuck_started": 1, "size_mismatch": 3, "missing_dump": 2,
           "p2p_hang": 1}


def entry(version, fmt, rank, pg, record_id, seq, p2p_seq, op_id, name, sizes, dtype, state,
          t, is_p2p=False, timing=True):
    # An operation in flight is stamped started with the dump's own moment: dump_entries()
    # runs update_state on copies of the entries (PyTorch 2.11's timeout dumps: their stuck
    # all-reduces said started 20.2-21.0 s after creation, the newest time in each dump). A
    # completed one was noted by the watchdog when it retired it.
    started = DUMP_NS if state == "started" else t + 20_000 if state == "completed" else None
    completed = t + 400_000 if state == "completed" else None
    e = {
        "record_id": record_id,
        "pg_id": pg["id"],
        "process_group": (pg["name"], pg["desc"]),
        "collective_seq_id": seq,
        "p2p_seq_id": p2p_seq,
        "op_id": op_id,
        "profiling_name": name,
        "time_created_ns": t,
        "input_sizes": [sizes],
        "input_dtypes": [dtype],
        "output_sizes": [sizes],
        "output_dtypes": [dtype],
        "state": state,
        "time_discovered_started_ns": started,
        "time_discovered_completed_ns": completed,
        "retired": state == "completed",
        "timeout_ms": 600000,
        "is_p2p": is_p2p,
    }
    if timing and state == "completed" and rank % 2 == 0:
        e["duration_ms"] = 0.37  # TORCH_NCCL_ENABLE_TIMING=1 on the even ranks only
    minor = int(version.split(".")[1])
    if minor >= 10:
        e["thread_id"] = str(140000000000 + rank)
        e["thread_name"] = "pt_main_thread"
    if fmt.startswith("json"):
        # JSON dumps: 0 for a time not discovered, no frames, the group as a list.
        e["time_discovered_started_ns"] = started or 0
        e["time_discovered_completed_ns"] = completed or 0
        e["process_group"] = [pg["name"], pg["desc"]]
    else:
        e["frames"] = [
            {"name": "all_reduce" if not is_p2p else name.split(":")[1].split(" ")[0],
             "filename": "torch/distributed/distributed_c10d.py", "line": 2696},
            {"name": "train_step", "filename": "/job/train.py", "line": 41 + rank % 2},
            {"name": "<module>", "filename": "/job/train.py", "line": 90},
        ]
    return e


def dump_for(version, fmt, rank, ranks, entries, with_state=True):
    pg0 = {"name": PG_NAME, "desc": "default_pg", "ranks": str(list(range(ranks)))}
    d = {
        "version": version,
        "pg_config": {PG_NAME: pg0},
        "pg_status": {"0": {"last_enqueued_collective": 0, "last_started_collective": 0,
                            "last_completed_collective": 0}},
        "entries": entries,
    }
    colls = [e for e in entries if not e["is_p2p"]]
    if colls:
        st = d["pg_status"]["0"]
        st["last_enqueued_collective"] = max(e["collective_seq_id"] for e in colls)
        st["last_started_collective"] = max(
            [e["collective_seq_id"] for e in colls if e["state"] != "scheduled"] or [-1])
        st["last_completed_collective"] = max(
            [e["collective_seq_id"] for e in colls if e["state"] == "completed"] or [-1])
    minor = int(version.split(".")[1])
    if minor >= 9:
        d["comm_lib_version"] = "2.27.3"
    if with_state:
        d["nccl_comm_state"] = {"0x5c1a": {"rank": str(rank), "status": "ok"}}
    if fmt.startswith("json"):
        # JSON: pg_status numbers as strings, pg_config as written by getPgConfigJson.
        d["pg_status"] = {k: {kk: str(vv) for kk, vv in v.items()} for k, v in d["pg_status"].items()}
    return d


def collectives(version, fmt, rank, ranks, t0, scenario):
    """Entries of one rank for a collective scenario."""
    pg = {"id": 0, "name": PG_NAME, "desc": "default_pg"}
    out = []
    last = STEPS - 1  # seq of the faulty step
    for seq in range(STEPS):
        t = t0 + seq * 1_000_000 + rank * 1000
        sizes, dtype = [2048], "Float"
        state = "completed"
        if seq == last:
            if scenario == "missing_collective":
                if rank == CULPRIT[scenario]:
                    continue  # rank 2 never called it
                state = "started"
            elif scenario == "stuck_started":
                state = "started" if rank == CULPRIT[scenario] else "completed"
            elif scenario == "size_mismatch":
                state = "started"
                if rank == CULPRIT[scenario]:
                    sizes = [1024]
            elif scenario == "missing_dump":
                state = "started"
        out.append(entry(version, fmt, rank, pg, len(out), seq, 0, seq, "nccl:all_reduce", sizes,
                         dtype, state, t))
    if scenario == "stuck_started" and rank != CULPRIT[scenario]:
        # The others moved on to the next collective and wait in it until it times out: retired,
        # not completed (the dump the timeout writes; without it, records taken a moment apart
        # would look the same).
        t = t0 + STEPS * 1_000_000 + rank * 1000
        e = entry(version, fmt, rank, pg, len(out), STEPS, 0, STEPS, "nccl:all_reduce", [2048],
                  "Float", "started", t)
        e["retired"] = True
        out.append(e)
    return out


def p2p(version, fmt, rank, ranks, t0):
    """Ranks 0 and 1 exchange; at the end rank 0 sends to rank 1, which never posts the
    receive. The other ranks only do the collectives."""
    pg = {"id": 0, "name": PG_NAME, "desc": "default_pg"}
    out = collectives(version, fmt, rank, ranks, t0, "healthy")
    t = t0 + STEPS * 1_000_000
    if rank in (0, 1):
        for k in range(3):
            peer = 1 - rank
            send_first = rank == 0
            for j, kind in enumerate(("send", "recv") if send_first else ("recv", "send")):
                name = (f"nccl:send {rank}->{peer}" if kind == "send" else f"nccl:recv {rank}<-{peer}")
                p2p_seq = 2 * k + j
                out.append(entry(version, fmt, rank, pg, len(out), STEPS - 1, p2p_seq, 100 + p2p_seq,
                                 name, [256], "Float", "completed", t + k * 10_000, is_p2p=True))
        if rank == 0:
            out.append(entry(version, fmt, rank, pg, len(out), STEPS - 1, 6, 106, "nccl:send 0->1",
                             [256], "Float", "started", t + 100_000, is_p2p=True))
    return out


def write(path, obj, fmt):
    if fmt.startswith("json"):
        with open(path, "w", encoding="utf-8-sig" if fmt == "json-bom" else "utf-8") as f:
            json.dump(obj, f)
    else:
        protocol = {"pickle": 2, "pickle0": 0, "pickle1": 1, "pickle5": 5}[fmt]
        with open(path, "wb") as f:
            f.write(pickle.dumps(obj, protocol=protocol))


def hostile(out_dir):
    marker = os.path.join(out_dir, "EXECUTED")
    cases = {
        # GLOBAL os.system + REDUCE: what pickle.load would run.
        "global": b"\x80\x02cos\nsystem\nq\x00X" + len("touch " + marker).to_bytes(4, "little")
                  + ("touch " + marker).encode() + b"\x85q\x01Rq\x02.",
        # STACK_GLOBAL (protocol 4) builtins.eval
        "stack_global": b"\x80\x04\x8c\x08builtins\x8c\x04eval\x93\x8c\x011\x85R.",
        # INST and OBJ
        "inst": b"\x80\x02(X\x01\x00\x00\x00xios\nsystem\n.",
        "obj": b"\x80\x02(cos\nsystem\nX\x01\x00\x00\x00xo.",
        # BUILD on a dict
        "build": b"\x80\x02}q\x00}q\x01b.",
        # 200000 nested lists
        "deep": b"\x80\x02" + b"]" * 200000 + b"a" * 199999 + b".",
        # A 4 GiB string length in a tiny file
        "huge_len": b"\x80\x02X\xff\xff\xff\xff" + b"a" * 16 + b".",
        # A frame longer than the file
        "truncated_frame": b"\x80\x04\x95\x00\x10\x00\x00\x00\x00\x00\x00}\x94.",
        # Truncated in the middle of the dict
        "truncated": pickle.dumps({"version": "2.10", "entries": []}, protocol=2)[:-5],
        # Billion laughs: one list referenced 10 times at each of 12 levels.
        "laughs": b"\x80\x02]q\x000" + b"".join(
            b"(" + (b"h" + bytes([i])) * 10 + b"lq" + bytes([i + 1]) + b"0" for i in range(12))
            + b"h\x0c.",
    }
    for i, (name, data) in enumerate(cases.items()):
        path = os.path.join(out_dir, f"nccl_trace_{name}_rank_{i}")
        with open(path, "wb") as f:
            f.write(data)
        print(os.path.basename(path), 0)


def main():
    global PG_NAME, BIG_VALUE, DUMP_NS
    args = sys.argv[1:]
    if len(args) < 4:
        sys.exit(__doc__)
    out_dir, scenario, version, fmt = args[:4]
    ranks, t0, skip = 4, 1_764_000_000_000_000_000, set()
    rest = args[4:]
    while rest:
        k, v = rest[0], rest[1]
        rest = rest[2:]
        if k == "--ranks":
            ranks = int(v)
        elif k == "--t0":
            t0 = int(v)
        elif k == "--culprit":
            CULPRIT[scenario] = int(v)
        elif k == "--skip-ranks":
            skip = {int(x) for x in v.split(",") if x}
        elif k == "--pg-name":
            PG_NAME = v
        elif k == "--big-value":
            BIG_VALUE = int(v)
    DUMP_NS = t0 + DUMP_AFTER_NS
    os.makedirs(out_dir, exist_ok=True)
    if scenario == "hostile":
        hostile(out_dir)
        return
    if scenario == "missing_dump":
        skip.add(CULPRIT[scenario])
    for rank in range(ranks):
        if rank in skip:
            continue
        if scenario == "p2p_hang":
            entries = p2p(version, fmt, rank, ranks, t0)
        else:
            entries = collectives(version, fmt, rank, ranks, t0, scenario)
        if rank == 0 and BIG_VALUE and entries:
            entries[0]["profiling_name"] += "x" * BIG_VALUE
        d = dump_for(version, fmt, rank, ranks, entries)
        name = f"nccl_trace_rank_{rank}" + (".json" if fmt.startswith("json") else "")
        write(os.path.join(out_dir, name), d, fmt)
        print(name, len(entries))


if __name__ == "__main__":
    main()
