#!/usr/bin/env python3
"""Checks a Chrome trace JSON written by rankscope-export against its source db.

usage: check_chrome_json.py TRACE.json DB.sqlite
Parses the JSON, then checks: one X event per slice row and one i event per instant row
(per table, by name), timestamps equal the db's (rebased by otherData.base_ns), X events
nest on every (pid, tid), every pid/tid is named, flows (s/t/f) link each collective's ranks.
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

    def table_of(e):
        n = e["name"]
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
    for table in ("nccl_events", "cuda_events", "sched_events", "block_events",
                  "tcp_events", "process_events"):
        instant = table in ("tcp_events", "process_events")
        end = "timestamp_ns" if instant else \
            "COALESCE(timestamp_ns + duration_ns, %d)" % end_ns
        want = sorted(db.execute("SELECT timestamp_ns, %s FROM %s" % (end, table)))
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

    # Flows: ids link exactly the ranks of one collective; s first, f last.
    slices_at = {}
    for e in events:
        if e["ph"] == "X" and "seq" in e.get("args", {}):
            slices_at[(e["pid"], e["tid"], e["ts"])] = e
    flows = collections.defaultdict(list)
    for e in events:
        if e["ph"] in ("s", "t", "f"):
            flows[e["id"]].append(e)
    want_flows = {}
    for comm, seq, ranks in db.execute(
            "SELECT comm_id_hash, seq, group_concat(rank) FROM nccl_events WHERE seq IS NOT"
            " NULL GROUP BY comm_id_hash, seq HAVING COUNT(*) >= 2"):
        want_flows[(comm, seq)] = sorted(int(r) for r in ranks.split(","))
    if len(flows) != len(want_flows):
        errors.append("%d flows, db has %d collectives" % (len(flows), len(want_flows)))
    for fid, fe in flows.items():
        phases = [x["ph"] for x in fe]
        if phases[0] != "s" or phases[-1] != "f" or any(p != "t" for p in phases[1:-1]):
            errors.append("flow %s phases %s" % (fid, phases))
        owners = [slices_at.get((x["pid"], x["tid"], x["ts"])) for x in fe]
        if any(o is None for o in owners):
            errors.append("flow %s step not on a collective slice" % fid)
            continue
        colls = {(o["args"]["comm_id_hash"], o["args"]["seq"]) for o in owners}
        if len(colls) != 1:
            errors.append("flow %s mixes collectives" % fid)
            continue
        ranks = sorted(o["args"]["rank"] for o in owners)
        if ranks != want_flows.get(colls.pop()):
            errors.append("flow %s links ranks %s" % (fid, ranks))

    for e in errors[:20]:
        print("FAIL:", e)
    counts = collections.Counter(e["ph"] for e in events)
    print("%s: %d events %s, %d flows, %d errors" %
          (trace_path, len(events), dict(sorted(counts.items())), len(flows), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
