#!/usr/bin/env python3
"""Compares what rankscope recorded on a GPU node (check_real_nccl.sh's OUTDIR) with what the
job itself saw: every operation the job logged has exactly one gpu_ops row in its process,
enqueued while the call ran, run on the device after that and finished before the host saw
it finished, joined with its nccl_events call on (comm_id_hash, seq); both ranks' rows of a
collective name the same (comm_id_hash, seq); the steps on which rank 1's GPU slept show up
as a late device start on rank 1, not as a late enqueue; the collective only rank 0 entered
is in flight. Prints the figures; exit status 1 if a check failed.

    tests/gpu/check_real_nccl.py OUTDIR MERGED.rsdb

(MERGED.rsdb: rankscope-merge -o MERGED.rsdb OUTDIR/gpunode.rsb)"""
import glob
import json
import os
import sqlite3
import statistics
import sys

TOL_NS = 2_000_000  # the recorder's and the job's wall clocks are read apart: 2 ms of slack


def main():
    outdir, db_path = sys.argv[1], sys.argv[2]
    db = sqlite3.connect(db_path)
    db.row_factory = sqlite3.Row
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)
        return ok

    logs = {}
    # The short job, the job, and the short job through each profiler API version (vN_rank).
    versions = sorted({os.path.basename(p).split("_")[0]
                       for p in glob.glob(f"{outdir}/v[0-9]_rank[01].jsonl")})
    for prefix in ["short_rank", "job_rank"] + [f"{v}_rank" for v in versions]:
        for r in (0, 1):
            try:
                logs[(prefix, r)] = [json.loads(l) for l in open(f"{outdir}/{prefix}{r}.jsonl")]
            except FileNotFoundError:
                pass
    matched = {}
    errors, lead_ns, after_ns = [], [], []
    graphs = []
    for (prefix, r), entries in sorted(logs.items()):
        for e in entries:
            if "graph_replays" in e or "graph_error" in e:
                graphs.append((prefix, r, e))
                continue
            hi = e["t1_real"] + TOL_NS
            rows = db.execute(
                "SELECT * FROM gpu_ops WHERE pid = ? AND op = ? AND timestamp_ns BETWEEN ? AND ?",
                (e["pid"], e["op"], e["t0_real"] - TOL_NS, hi)).fetchall()
            what = f"{prefix}{r} step {e['step']} {e['op']}"
            if not check(len(rows) == 1, f"{what}: {len(rows)} gpu_ops rows"):
                continue
            g = rows[0]
            matched[(prefix, r, e["step"], e["op"], e.get("group"), e.get("size"))] = g
            if e.get("hang"):
                check(g["state"] in ("started", "enqueued"), f"{what}: hang state {g['state']}")
                continue
            check(g["state"] == "completed", f"{what}: state {g['state']}")
            check(g["device_start_ns"] is not None and g["device_end_ns"] is not None,
                  f"{what}: device times missing")
            if g["device_end_ns"] is None:
                continue
            check(g["timestamp_ns"] <= g["device_start_ns"] <= g["device_end_ns"],
                  f"{what}: enqueue/start/end out of order")
            check(g["device_end_ns"] <= e["t2_real"] + TOL_NS,
                  f"{what}: device end {g['device_end_ns'] - e['t2_real']} ns after the host saw it")
            after_ns.append(e["t2_real"] - g["device_end_ns"])
            lead_ns.append(g["device_start_ns"] - g["timestamp_ns"])
            if g["clock_error_ns"] is not None:
                errors.append(g["clock_error_ns"])
            calls = db.execute(
                "SELECT COUNT(*) FROM nccl_events WHERE pid = ? AND comm_id_hash = ? AND seq = ?"
                " AND op = ? AND peer IS ?", (g["pid"], g["comm_id_hash"], g["seq"], g["op"],
                                             g["peer"])).fetchone()[0]
            check(calls == 1, f"{what}: joins {calls} nccl_events rows")
    # Both ranks' rows of one collective: the same (comm_id_hash, seq).
    for key, g0 in matched.items():
        prefix, r, step, op, group, size = key
        if r != 0 or op in ("SEND", "RECV"):
            continue
        g1 = matched.get((prefix, 1, step, op, group, size))
        if g1 is not None:
            check((g0["comm_id_hash"], g0["seq"]) == (g1["comm_id_hash"], g1["seq"]),
                  f"{prefix} step {step} {op}: ranks name different collectives")
    # The CUDA graph: no row for the capture, one row per replay with no seq of its own, the
    # captured call named, and the same replay numbers naming the same call on both ranks.
    replay_sets = {}
    for prefix, r, e in graphs:
        what = f"{prefix}{r} CUDA graph"
        if "graph_error" in e:
            print(f"{what}: the job could not capture: {e['graph_error']}")
            continue
        rows = db.execute(
            "SELECT seq, graph_call_seq, graph_replay_seq, state FROM gpu_ops WHERE pid = ?"
            " AND graph_call_seq IS NOT NULL", (e["pid"],)).fetchall()
        check(len(rows) == e["graph_replays"], f"{what}: {len(rows)} replay rows, "
              f"{e['graph_replays']} replays")
        check(all(g["seq"] is None and g["state"] == "completed" for g in rows),
              f"{what}: a replay row has a seq or did not complete")
        replay_sets.setdefault(prefix, []).append(
            sorted((g["graph_replay_seq"], g["graph_call_seq"]) for g in rows))
        print(f"{what}: {len(rows)} replay rows, replay numbers and captured calls"
              f" {replay_sets[prefix][-1]}")
    for prefix, sets in replay_sets.items():
        if len(sets) == 2:
            check(sets[0] == sets[1], f"{prefix}: the ranks' replays name different calls")
    for v in versions:  # each version's operations matched, as the others'
        n = sum(len(logs.get((f"{v}_rank", r), [])) for r in (0, 1))
        got = sum(1 for k in matched if k[0] == f"{v}_rank")
        print(f"profiler API {v}: operations logged {n}, matched to a gpu_ops row {got}")
        check(n > 0 and got == n, f"profiler API {v}: {got} of {n} operations matched")
    total = sum(len(v) for v in logs.values())
    print(f"operations logged by the job: {total}, matched to a gpu_ops row: {len(matched)}")
    if errors:
        print(f"clock_error_ns: min {min(errors)} median {statistics.median(errors):.0f}"
              f" max {max(errors)} (rows with a bound: {len(errors)})")
    print("rows with an unbounded conversion:",
          db.execute("SELECT COUNT(*) FROM gpu_ops WHERE clock_error_ns IS NULL").fetchone()[0])
    if lead_ns:
        print(f"enqueue -> device start: median {statistics.median(lead_ns) / 1e3:.1f} us;"
              f" device end -> host saw it: median {statistics.median(after_ns) / 1e3:.1f} us")
    # The slowed steps: rank 1's device started late, its host did not enqueue late.
    slow = [e for e in logs.get(("job_rank", 1), []) if e.get("slow")]
    dev_late, host_late = [], []
    for e in slow:
        g0 = matched.get(("job_rank", 0, e["step"], "ALL_REDUCE", None, None))
        g1 = matched.get(("job_rank", 1, e["step"], "ALL_REDUCE", None, None))
        if g0 is None or g1 is None or g1["device_start_ns"] is None:
            continue
        dev_late.append(g1["device_start_ns"] - g0["device_start_ns"])
        host_late.append(g1["timestamp_ns"] - g0["timestamp_ns"])
    if slow:
        if check(len(dev_late) == len(slow), "slow steps without both ranks' rows"):
            print(f"slowed steps ({len(slow)}): rank 1's device start after rank 0's by median"
                  f" {statistics.median(dev_late) / 1e6:.2f} ms; its enqueue by median"
                  f" {statistics.median(host_late) / 1e6:.2f} ms")
            check(statistics.median(dev_late) > 10e6, "rank 1's device was not late")
            check(abs(statistics.median(host_late)) < 5e6, "rank 1's host enqueued late")
    for row in db.execute("SELECT op, algorithm, protocol, channels, COUNT(*) AS n,"
                          " MIN(bytes) AS b, SUM(net_bytes_sent) AS s, SUM(net_bytes_recv) AS rv"
                          " FROM gpu_ops GROUP BY op, algorithm, protocol, channels"):
        print("  {op} {algorithm}/{protocol} channels {channels}: {n} rows, bytes >= {b},"
              " net sent {s} recv {rv}".format(**dict(row)))
    for key in ("gpu_ops_unrecorded", "gpu_in_flight", "gpu_graph_calls", "gpu_graph_replay_ops",
                "gpu_drops_overrun",
                "gpu_drops_slots_full", "gpu_drops_late_event", "gpu_drops_undecodable"):
        row = db.execute("SELECT value FROM metadata WHERE key LIKE ?", ("%." + key,)).fetchone()
        print(f"  {key}: {row[0] if row else 'absent'}")
    for f in failures:
        print("FAILED:", f)
    print("all checks passed" if not failures else f"{len(failures)} check(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
