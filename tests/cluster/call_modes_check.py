#!/usr/bin/env python3
"""The report's call modes are the merge's: every communicator the merge decided (call_modes:
blocking or enqueue) has that mode in the report's JSON, and the report says it took them from
the merge. Only a communicator the merge left to its processes (by_process) may be decided by the
report, from the order of calls across nodes on the aligned clocks.

usage: call_modes_check.py MERGED.rsdb REPORT.json   (exit 1 with the disagreements listed)
"""
import json
import sqlite3
import sys


def main(db_path, report_path):
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    merged = {}
    for comm, mode in db.execute("SELECT comm_id_hash, mode FROM call_modes"):
        merged[f"0x{comm & 0xFFFFFFFFFFFFFFFF:016x}"] = mode  # as rs::HashHex
    with open(report_path) as f:
        timing = json.load(f)["timing"]
    report = {m["comm_id_hash"]: m["mode"] for m in timing["call_modes"]}
    wrong = []
    if merged and timing["call_modes_from"] != "merge":
        wrong.append(f"call_modes_from is {timing['call_modes_from']!r} beside a call_modes table")
    for comm, mode in sorted(merged.items()):
        got = report.get(comm)
        if got is None:
            wrong.append(f"communicator {comm}: the merge decided {mode}, the report lists none")
        elif mode != "by_process" and got != mode:
            wrong.append(f"communicator {comm}: the merge decided {mode}, the report {got}")
    for line in wrong:
        print(f"call_modes_check: {report_path}: {line}", file=sys.stderr)
    if wrong:
        return 1
    decided = sum(1 for m in merged.values() if m != "by_process")
    print(f"call modes: {len(merged)} communicator(s) in the merged database, {decided} decided "
          f"by the merge, the report agrees on all")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
