#!/usr/bin/env python3
"""Checks a Chrome trace JSON written by rankscope-export against its source db.

usage: check_chrome_json.py TRACE.json DB.sqlite
Parses the JSON, then checks: one X event per slice row and one i event per instant row
(per table, by name), timestamps equal the db's (rebased by otherData.base_ns), X events
nest on every (pid, tid), every pid/tid is named, flows (s/t/f) link each collective's ranks,
communicators are named by comm_id_hex only.
With gpu_ops: one X (cat gpu) per operation that ran on the GPU, one i (cat gpu) per enqueue
without a host call or never started, an enqueue flow (s, f) from each host call to its
device slice, and collective flows through the device slices of ranks with gpu_ops.
"""
import collections
import json
import sqlite3
import sys


def main():
    trace_path, db_path = sys.argv[1], sys.argv[2]
    with open(trace_path, encoding="utf-8") as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    base = int(trace["otherData"]["base_ns"])
    db = sqlite3.connect(db_path)
    errors = []

    def ns(us_text):
        # ts/dur are printed with exactly 3 decimals: recover exact nanoseconds.
        return round(float(us_text) * 1000)

    ops = {r[0] for r in db.execute("SELECT DISTINCT op FROM nccl_events")}
    sched = {r[0] for r in db.execute("SELECT DISTINCT event FROM sched_events")}
    has_gpu = db.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'"
                         " AND name = 'gpu_ops'").fetchone()[0] > 0

    def table_of(e):
        n = e["name"]
        if e.get("cat") == "gpu":
            return "gpu_ops" if e["ph"] == "X" else "gpu_ops enqueue"
        if n == "retransmit":
            return "tcp_events"
        if n in ("exec", "exit"):
            return "process_events"
        if n.startswith("block "):
            return "block_events"
        if n in sched:
            return "sched_events"
        if n in ops:
            return "nccl_events"
        return "cuda_events"

    named_pids, named_tids = set(), set()
    for e in events:
        if e["ph"] == "M" and e["name"] == "process_name":
            named_pids.add(e["pid"])
        if e["ph"] == "M" and e["name"] == "thread_name":
            named_tids.add((e["pid"], e["tid"]))

    got = collections.defaultdict(list)
    lanes = collections.defaultdict(list)
    for e in events:
        if e["ph"] in ("X", "i"):
            start = base + ns(e["ts"])
            end = start + (ns(e["dur"]) if e["ph"] == "X" else 0)
            got[table_of(e)].append((start, end))
            if e["pid"] not in named_pids:
                errors.append("unnamed pid %d" % e["pid"])
            if (e["pid"], e["tid"]) not in named_tids:
                errors.append("unnamed tid %d/%d" % (e["pid"], e["tid"]))
            if e["ph"] == "X":
                lanes[(e["pid"], e["tid"])].append((start, -end, end))
    end_ns = int(trace["otherData"]["end_ns"])
    # The host call a gpu_ops row was enqueued by: same process, communicator, seq and op
    # (and peer for SEND / RECV), entered no later than the enqueue.
    host_call = """EXISTS (SELECT 1 FROM nccl_events n WHERE n.node = g.node
        AND n.pid = g.pid AND n.comm_id_hash = g.comm_id_hash AND n.seq = g.seq
        AND n.op = g.op AND (g.op NOT IN ('SEND', 'RECV') OR n.peer IS g.peer)
        AND n.timestamp_ns <= g.timestamp_ns)"""
    queries = {}
    for table in ("nccl_events", "cuda_events", "sched_events", "block_events",
                  "tcp_events", "process_events"):
        instant = table in ("tcp_events", "process_events")
        end = "timestamp_ns" if instant else \
            "COALESCE(timestamp_ns + duration_ns, %d)" % end_ns
        queries[table] = "SELECT timestamp_ns, %s FROM %s" % (end, table)
    if has_gpu:
        start = "MAX(device_start_ns, timestamp_ns)"
        queries["gpu_ops"] = ("SELECT %s, MAX(COALESCE(device_end_ns, %d), %s) FROM gpu_ops"
                              " WHERE device_start_ns IS NOT NULL" % (start, end_ns, start))
        queries["gpu_ops enqueue"] = (
            "SELECT timestamp_ns, timestamp_ns FROM gpu_ops g WHERE device_start_ns IS NULL"
            " OR comm_id_hash IS NULL OR seq IS NULL OR NOT " + host_call)
    for table, sql in queries.items():
        want = sorted(db.execute(sql))
        have = sorted(got[table])
        if len(want) != len(have):
            errors.append("%s: %d events, db has %d rows" % (table, len(have), len(want)))
        elif want != have:
            errors.append("%s: timestamps differ from the db" % table)

    # X events on one (pid, tid) must nest: each starts after the previous ended or ends
    # no later than every slice still open.
    for key, spans in lanes.items():
        stack = []
        for start, _, end in sorted(spans):
            while stack and stack[-1] <= start:
                stack.pop()
            if stack and end > stack[-1]:
                errors.append("overlapping X events on pid/tid %s at %d" % (key, start))
                break
            stack.append(end)

    # Flows: ids link exactly the ranks of one collective; s first, f last. A rank is in it by
    # its device slice where its process has gpu_ops, else by its host call.
    slices_at = {}
    for e in events:
        if e["ph"] == "X" and "seq" in e.get("args", {}):
            slices_at[(e["pid"], e["tid"], e["ts"])] = e
    # The communicator one way: comm_id_hex, as the report and the query views spell it.
    decimal = sum(1 for e in events if "comm_id_hash" in e.get("args", {}))
    if decimal:
        errors.append("%d events carry the decimal comm_id_hash beside comm_id_hex" % decimal)
    flows = collections.defaultdict(list)
    enqueue_flows = collections.defaultdict(list)
    for e in events:
        if e["ph"] in ("s", "t", "f"):
            (enqueue_flows if e.get("cat") == "gpu.flow" else flows)[e["id"]].append(e)
    linked = ("seq IS NOT NULL AND comm_id_hash IS NOT NULL AND op NOT IN ('SEND', 'RECV')"
              " AND op NOT LIKE 'COMM%' AND op NOT LIKE 'GROUP%'")
    participants = "SELECT comm_id_hash, seq, rank FROM nccl_events WHERE " + linked
    if has_gpu:
        participants += (" AND (node, pid) NOT IN (SELECT node, pid FROM gpu_ops)"
                         " UNION ALL SELECT comm_id_hash, seq, rank FROM gpu_ops WHERE " +
                         linked + " AND device_start_ns IS NOT NULL")
    want_flows = {}
    for comm, seq, ranks in db.execute(
            "SELECT comm_id_hash, seq, group_concat(rank) FROM (%s)"
            " GROUP BY comm_id_hash, seq HAVING COUNT(*) >= 2" % participants):
        want_flows[("0x%016x" % (comm & 0xFFFFFFFFFFFFFFFF), seq)] = sorted(
            int(r) for r in ranks.split(","))
    if len(flows) != len(want_flows):
        errors.append("%d flows, db has %d collectives" % (len(flows), len(want_flows)))
    # Host -> device flows: s on the host call, f on the device slice of the same process
    # and operation, one per operation that ran and has a host call.
    want_enqueue = 0
    if has_gpu:
        want_enqueue = db.execute(
            "SELECT COUNT(*) FROM gpu_ops g WHERE device_start_ns IS NOT NULL AND"
            " comm_id_hash IS NOT NULL AND seq IS NOT NULL AND " + host_call).fetchone()[0]
    if len(enqueue_flows) != want_enqueue:
        errors.append("%d host -> device flows, db has %d" % (len(enqueue_flows), want_enqueue))
    for fid, fe in enqueue_flows.items():
        if [x["ph"] for x in fe] != ["s", "f"]:
            errors.append("enqueue flow %s phases %s" % (fid, [x["ph"] for x in fe]))
            continue
        host, dev = [slices_at.get((x["pid"], x["tid"], x["ts"])) for x in fe]
        if host is None or dev is None or host.get("cat") != "nccl" or dev.get("cat") != "gpu":
            errors.append("enqueue flow %s not from a host call to a device slice" % fid)
            continue
        if (host["pid"], host["args"]["seq"], host["name"]) != \
                (dev["pid"], dev["args"]["seq"], dev["name"]) or \
                host["args"]["comm_id_hex"] != dev["args"]["comm_id_hex"]:
            errors.append("enqueue flow %s links different operations" % fid)
        if ns(dev["ts"]) < ns(host["ts"]):
            errors.append("enqueue flow %s goes back in time" % fid)
    for fid, fe in flows.items():
        phases = [x["ph"] for x in fe]
        if phases[0] != "s" or phases[-1] != "f" or any(p != "t" for p in phases[1:-1]):
            errors.append("flow %s phases %s" % (fid, phases))
        owners = [slices_at.get((x["pid"], x["tid"], x["ts"])) for x in fe]
        if any(o is None for o in owners):
            errors.append("flow %s step not on a collective slice" % fid)
            continue
        colls = {(o["args"]["comm_id_hex"], o["args"]["seq"]) for o in owners}
        if len(colls) != 1:
            errors.append("flow %s mixes collectives" % fid)
            continue
        ranks = sorted(o["args"]["rank"] for o in owners)
        if ranks != want_flows.get(colls.pop()):
            errors.append("flow %s links ranks %s" % (fid, ranks))

    for e in errors[:20]:
        print("FAIL:", e)
    counts = collections.Counter(e["ph"] for e in events)
    print("%s: %d events %s, %d flows, %d host -> device flows, %d errors" %
          (trace_path, len(events), dict(sorted(counts.items())), len(flows),
           len(enqueue_flows), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
