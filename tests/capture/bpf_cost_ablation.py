#!/usr/bin/env python3
"""Where the NCCL probe's BPF run time goes: builds bench_capture with one part of
bpf/nccl.bpf.c (or call_probe.bpf.h) taken out at a time, runs `bench_capture --bpf-time` on the
test bed library (five runs of 150,000 calls, the kernel's own run_time_ns / run_cnt of
nccl_entry and nccl_return) and prints the mean per variant, ROUNDS rounds interleaved so the
machine's drift falls on every variant alike. The variants are measurements only: a program
without its stack read or its ring output records nothing useful. The sources are restored
on exit, also on error or Ctrl-C. Needs root (bpf_stats).

    tests/capture/bpf_cost_ablation.py BUILD_DIR [ROUNDS]     (results: tests/bench/capture.md)
"""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
NCCL = ROOT / "bpf/nccl.bpf.c"
PROBE = ROOT / "bpf/call_probe.bpf.h"
ENTRY = "int nccl_entry(struct pt_regs* ctx) {\n"
RETURN = "int nccl_return(struct pt_regs* ctx) {\n"


def patched(text, old, new):
    if text.count(old) != 1:
        sys.exit(f"bpf_cost_ablation: the source no longer has exactly one {old!r}: update the variants")
    return text.replace(old, new)


def variants(nccl, probe):
    no_return = patched(nccl, RETURN, RETURN + "  return 0;\n")
    return {
        "full programs": (nccl, probe),
        "empty programs (the bpf_stats floor)": (
            patched(no_return, ENTRY, ENTRY + "  return 0;\n"), probe),
        "entry: thread id only": (
            patched(no_return, "  __u64 sp = PT_REGS_SP(ctx);\n",
                    "  __u64 sp = PT_REGS_SP(ctx);\n  if (sp) return tid;\n"), probe),
        "entry: thread id + slot lookup": (
            patched(no_return, "  if (e && e->exit_ns == 0 &&",
                    "  if (sp) return e != 0;\n  if (e && e->exit_ns == 0 &&"), probe),
        "without the stack read at entry": (
            nccl, patched(probe, "  bpf_probe_read_user(words, sizeof(words), (void*)sp);\n", "")),
        "without the ring output": (
            patched(nccl, "  if (bpf_ringbuf_output(&nccl_events",
                    "  if (size) return 0;\n  if (bpf_ringbuf_output(&nccl_events"), probe),
        "without the ring fill query": (
            patched(nccl, "wakeup_flags(&nccl_events, e->pid, &e->flags, size)",
                    "BPF_RB_NO_WAKEUP"), probe),
        "without the output words in the record": (
            patched(nccl, "offsetof(struct nccl_event, unique_id)",
                    "offsetof(struct nccl_event, out)"), probe),
    }


def measure(build):
    subprocess.run(["ninja", "-C", str(build), "tests/capture/bench_capture"], check=True,
                   stdout=subprocess.DEVNULL)
    out = subprocess.run([str(build / "tests/capture/bench_capture"), "--bpf-time",
                          str(build / "tests/cluster/libnccl.so.2"), ""],
                         check=True, capture_output=True, text=True).stdout
    runs = [line.split() for line in out.splitlines() if ": entry " in line]
    if not runs:
        sys.exit("bpf_cost_ablation: bench_capture printed no run:\n" + out)
    entry = [int(r[r.index("entry") + 1]) for r in runs]
    ret = [int(r[r.index("return") + 1]) for r in runs]
    return sum(entry) / len(entry), sum(ret) / len(ret)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build = pathlib.Path(sys.argv[1]).resolve()
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    nccl, probe = NCCL.read_text(), PROBE.read_text()
    table = variants(nccl, probe)
    results = {name: [] for name in table}
    try:
        for r in range(rounds):
            for name, (n, p) in table.items():
                NCCL.write_text(n)
                PROBE.write_text(p)
                results[name].append(measure(build))
                print(f"round {r + 1}: {name}: entry {results[name][-1][0]:.0f} ns, "
                      f"return {results[name][-1][1]:.0f} ns", file=sys.stderr, flush=True)
    finally:
        NCCL.write_text(nccl)
        PROBE.write_text(probe)
        subprocess.run(["ninja", "-C", str(build), "tests/capture/bench_capture"],
                       stdout=subprocess.DEVNULL)
    print("| variant | entry ns | return ns | both | per round |\n|---|---|---|---|---|")
    for name, rows in results.items():
        e = sum(a for a, _ in rows) / len(rows)
        t = sum(b for _, b in rows) / len(rows)
        print(f"| {name} | {e:.0f} | {t:.0f} | {e + t:.0f} | "
              + " ".join(f"{a + b:.0f}" for a, b in rows) + " |")


if __name__ == "__main__":
    main()
