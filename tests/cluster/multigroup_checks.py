#!/usr/bin/env python3
"""Checks of a multi-group test bed run (multigroup_test.sh) against what truth.json says was
done: the rank logs, the merged recording (nccl_events, gpu_ops, processes) and the Flight
Recorder dumps as rankscope-merge read them. No verdict of rankscope-analyze is checked here.

  multigroup_checks.py clean RUN_DIR MERGED_DB
  multigroup_checks.py hang2 RUN_DIR MERGED_DB DUMPS_PICKLE_DB DUMPS_JSON_DB

Exits 1 with every failed check printed."""
import glob
import json
import os
import re
import sqlite3
import sys

ROLES = ("tp", "pp", "dp", "ep")
FAILED = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        FAILED.append(what)


def schedule_counts(truth, rank):
    """Per step, what the trainer issues on each of the rank's groups (trainer/parallel_trainer.h):
    the number of calls of each op on the group's communicator."""
    p = truth["parallel"]
    tp, pp, dp, ep = p["tp"], p["pp"], p["dp"], p["ep"]
    m, layers = p["microbatches"], p["layers"]
    stage = rank // (tp * dp)
    sends = (m if stage < pp - 1 else 0) + (m if stage > 0 else 0)  # activations, gradients
    out = {}
    if tp > 1:
        out["tp"] = {"ALL_REDUCE": 4 * m * layers}  # two per layer, forward and backward
    if ep > 1:  # dispatch and combine per layer and direction; a send and a recv per member
        out["ep"] = {"SEND": 4 * m * layers * ep, "RECV": 4 * m * layers * ep}
    if pp > 1:
        out["pp"] = {"SEND": sends, "RECV": sends}
    if dp > 1:
        out["dp"] = {"REDUCE_SCATTER": 1, "ALL_GATHER": 1}
    return out


def group_of(truth, role, rank):
    for g in truth["parallel"]["groups"][role]:
        if rank in g:
            return g
    return None


class Recording:
    """The merged recording: each rank's communicators, named by role."""

    def __init__(self, path, truth):
        self.db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
        self.truth = truth
        self.rank_of_pid = {}
        for node, pid, env_rank in self.db.execute(
                "SELECT node, pid, env_rank FROM processes WHERE comm LIKE 'rankscope-train%'"):
            self.rank_of_pid[(node, pid)] = env_rank
        # Each rank's communicators: (node, pid, comm pointer) -> nranks, hash, op counts.
        self.comms = {}
        for node, pid, comm, nranks, h, op, n in self.db.execute(
                "SELECT node, pid, comm, MAX(nranks), MAX(comm_id_hash), op, COUNT(*) "
                "FROM nccl_events WHERE comm IS NOT NULL GROUP BY node, pid, comm, op"):
            c = self.comms.setdefault((node, pid, comm), {"nranks": None, "hash": None, "ops": {}})
            c["nranks"] = nranks if nranks is not None else c["nranks"]
            c["hash"] = h if h is not None else c["hash"]
            c["ops"][op] = n

    def role_of(self, comm):
        """A communicator's role from what it carried (the ranks of its group cannot tell: with
        ep = dp the expert-parallel groups have the data-parallel groups' ranks)."""
        ops = set(comm["ops"])
        p = self.truth["parallel"]
        if "ALL_REDUCE" in ops and comm["nranks"] == p["tp"]:
            return "tp"
        if "REDUCE_SCATTER" in ops or "ALL_GATHER" in ops:
            return "dp"
        if ops & {"SEND", "RECV"}:
            # The pipeline sends to other stages only; an all-to-all also to the rank itself.
            return "ep" if comm.get("self_send") else "pp"
        if comm["nranks"] == sum(len(g) for g in p["groups"]["tp"]):
            return "world"
        return None

    def rank_comms(self):
        """{rank: {role: comm}}."""
        out = {}
        for (node, pid, ptr), c in self.comms.items():
            rank = self.rank_of_pid.get((node, pid))
            if rank is None:
                continue
            c["self_send"] = self.db.execute(
                "SELECT COUNT(*) FROM nccl_events WHERE node = ? AND pid = ? AND comm = ? AND "
                "op = 'SEND' AND peer = rank", (node, pid, ptr)).fetchone()[0] > 0
            role = self.role_of(c)
            if role is not None:
                out.setdefault(rank, {})[role] = dict(c, ptr=ptr, node=node, pid=pid)
        return out


def check_groups(rec, truth, steps, exact):
    """Every group's communicator on every member, with the operations the schedule issues
    (exactly, `steps` steps of them, when `exact`); members of one group share one
    communicator hash, other groups do not."""
    comms = rec.rank_comms()
    world = len(rec.rank_of_pid)
    check(world == sum(len(g) for g in truth["parallel"]["groups"]["tp"]),
          "the recording holds every rank's process (%d)" % world)
    hashes = {}
    for rank in range(world):
        mine = comms.get(rank, {})
        for role, ops in schedule_counts(truth, rank).items():
            c = mine.get(role)
            group = group_of(truth, role, rank)
            if c is None:
                check(False, "rank %d: no %s communicator recorded" % (rank, role))
                continue
            check(c["nranks"] == len(group), "rank %d: %s communicator of %d ranks (group %s)" % (
                rank, role, c["nranks"] or -1, group))
            for op, per_step in ops.items():
                got = c["ops"].get(op, 0)
                want = per_step * steps
                ok = got == want if exact else got > 0
                check(ok, "rank %d: %s %s calls: %d%s" % (
                    rank, role, op, got, " (want %d)" % want if exact else ""))
            hashes.setdefault((role, tuple(group)), set()).add(c["hash"])
        check("world" in mine, "rank %d: the world communicator recorded" % rank)
    for (role, group), hs in sorted(hashes.items()):
        check(len(hs) == 1 and None not in hs,
              "%s group %s: one communicator hash on all members (%s)" % (role, list(group), hs))
    all_hashes = [h for hs in hashes.values() for h in hs]
    check(len(all_hashes) == len(set(all_hashes)), "every group has a communicator of its own")
    return comms


def logs(run):
    out = {}
    for path in glob.glob(os.path.join(run, "logs", "rank*.log")):
        out[int(re.search(r"rank(\d+)\.log$", path).group(1))] = open(path, errors="replace").read()
    return out


def scenario_clean(run, merged):
    truth = json.load(open(os.path.join(run, "truth.json")))
    check(truth["end"] == "completed", "the job completed (end %s)" % truth["end"])
    check(truth["parallel"] is not None and truth["parallel"]["order"] == "tp-cp-ep-dp-pp",
          "truth.json holds the layout")
    for rank, text in sorted(logs(run).items()):
        check("done: rank %d" % rank in text and "WARNING" not in text,
              "rank %d finished with every check of its received data passing" % rank)
    dumps = glob.glob(os.path.join(run, "fr", "nccl_trace_rank_*"))
    check(not dumps, "no Flight Recorder dump on a clean run (%d)" % len(dumps))
    rec = Recording(merged, truth)
    check_groups(rec, truth, truth["steps"], exact=True)
    n = rec.db.execute("SELECT COUNT(*) FROM gpu_ops WHERE state != 'completed'").fetchone()[0]
    total = rec.db.execute("SELECT COUNT(*) FROM gpu_ops").fetchone()[0]
    check(total > 0 and n == 0, "the plugin saw %d operations, all completed (%d not)" % (total, n))


# The scenario's faults: rank 1 stops before its first tensor-parallel all-reduce of step 3,
# rank 6 before its first pipeline exchange. Where the others' devices then wait (each one's
# only operation started and never completed), from the schedule: rank 0 in its tp all-reduce
# with rank 1; ranks 2 and 3 (stage 0) in their first ep all-to-all, with rank 0 (stuck in tp)
# and rank 1 (hung); ranks 4, 5, 7 (stage 1) in their first pipeline exchange, the receive of
# micro-batch 0 from stage 0, which never sends it.
HANG2_RANKS = [1, 6]
HANG2_WAITS = {0: "tp", 2: "ep", 3: "ep", 4: "pp", 5: "pp", 7: "pp"}
HANG2_DESC = {"tp": "TENSOR_MODEL_PARALLEL_GROUP", "pp": "PIPELINE_MODEL_PARALLEL_GROUP",
              "dp": "DATA_PARALLEL_GROUP_WITH_CP", "ep": "EXPERT_MODEL_PARALLEL_GROUP"}


def scenario_hang2(run, merged, dumps_pickle, dumps_json):
    truth = json.load(open(os.path.join(run, "truth.json")))
    check(truth["end"] == "hang", "the harness saw the hang (end %s)" % truth["end"])
    check(truth["ranks"] == HANG2_RANKS and truth["fault_in"] == ["tp", "pp"],
          "both faults struck: ranks %s in %s" % (truth["ranks"], truth["fault_in"]))
    text = logs(run)
    for rank in range(len(text)):
        hung = "issuing nothing from step %d" % truth["fault_step"] in text[rank]
        check(hung == (rank in HANG2_RANKS) and "done:" not in text[rank],
              "rank %d %s" % (rank, "stopped issuing" if rank in HANG2_RANKS else "kept waiting"))
    rec = Recording(merged, truth)
    comms = check_groups(rec, truth, truth["fault_step"], exact=False)
    # The hung ranks never issued the operation their group's others did.
    per = {r: {role: c["ops"] for role, c in comms.get(r, {}).items()} for r in range(8)}
    # Asynchronous collectives: rank 0's calls return at once, so it may enqueue a few more
    # before its stream waits; at least the one rank 1 never issued.
    check(per[1]["tp"].get("ALL_REDUCE", 0) < per[0]["tp"].get("ALL_REDUCE", 0),
          "rank 0 issued more tp all-reduces than rank 1 (%s, %s)" % (
              per[0]["tp"].get("ALL_REDUCE"), per[1]["tp"].get("ALL_REDUCE")))
    check(per[2]["pp"].get("SEND", 0) == per[6]["pp"].get("RECV", 0) + 1,
          "rank 2 sent one activation more than rank 6 received (%s, %s)" % (
              per[2]["pp"].get("SEND"), per[6]["pp"].get("RECV")))
    # The others' devices wait where the schedule says: each one's operations started and
    # never completed are in the expected group (the plugin's device states).
    role_of_hash = {}
    for rank, mine in comms.items():
        for role, c in mine.items():
            role_of_hash[c["hash"]] = role
    for rank in range(8):
        pids = [p for (n, p), r in rec.rank_of_pid.items() if r == rank]
        rows = rec.db.execute(
            "SELECT DISTINCT comm_id_hash FROM gpu_ops WHERE pid IN (%s) AND state = 'started'" %
            ",".join(str(p) for p in pids)).fetchall() if pids else []
        roles = sorted({role_of_hash.get(h, "?") for (h,) in rows})
        want = [HANG2_WAITS[rank]] if rank in HANG2_WAITS else []
        check(roles == want, "rank %d's device waits in %s (want %s)" % (rank, roles, want))
    # Every rank's dump, in both formats, read by the merge alike; the groups it lists.
    for fmt, path in (("pickle", dumps_pickle), ("json", dumps_json)):
        db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
        n = db.execute("SELECT COUNT(*) FROM fr_dumps").fetchone()[0]
        check(n == 8, "%s: 8 dumps merged (%d)" % (fmt, n))
        groups = {(name, desc): json.loads(ranks) for name, desc, ranks in db.execute(
            "SELECT pg_name, pg_desc, ranks FROM process_groups")}
        for role in ROLES:
            for g in truth["parallel"]["groups"][role]:
                found = [k for k, v in groups.items() if v == g and k[1] == HANG2_DESC[role]]
                check(len(found) == 1, "%s: the %s group %s is in the dumps" % (fmt, role, g))
        check(("0", "default_pg") in groups, "%s: the default group is in the dumps" % fmt)
        # Where each rank's first incomplete Work is: the same as the devices.
        for rank in range(8):
            row = db.execute(
                "SELECT p.pg_desc FROM fr_entries e JOIN process_groups p ON p.id = e.pg "
                "WHERE e.rank = ? AND e.state != 'completed' AND NOT (e.is_p2p AND "
                "e.profiling_name != 'nccl:coalesced') ORDER BY e.timestamp_ns, e.id LIMIT 1",
                (rank,)).fetchone()
            want = HANG2_DESC[HANG2_WAITS[rank]] if rank in HANG2_WAITS else None
            check((row[0] if row else None) == want,
                  "%s: rank %d's first incomplete operation is in %s (want %s)" % (
                      fmt, rank, row[0] if row else None, want))
    counts = [sqlite3.connect("file:%s?mode=ro" % p, uri=True).execute(
        "SELECT COUNT(*), COUNT(DISTINCT pg) FROM fr_entries").fetchone()
        for p in (dumps_pickle, dumps_json)]
    check(counts[0] == counts[1], "pickle and JSON dumps hold the same entries (%s, %s)" % (
        counts[0], counts[1]))


def main():
    scenario = sys.argv[1]
    if scenario == "clean":
        scenario_clean(*sys.argv[2:4])
    elif scenario == "hang2":
        scenario_hang2(*sys.argv[2:6])
    else:
        sys.exit("unknown scenario %s" % scenario)
    if FAILED:
        print("%d check(s) failed" % len(FAILED))
        sys.exit(1)


if __name__ == "__main__":
    main()
