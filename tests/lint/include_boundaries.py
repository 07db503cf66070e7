#!/usr/bin/env python3
# Which tool folder includes which: the tools (recorder/, merger/, analyzer/, exporter/) share
# code through rscore (subprojects/rscore) only, and a tool may use another's library through
# the public headers that library declares (PUBLIC: included by their rooted name, the Meson
# dependency putting the source root on the include path). Any other quoted #include that
# resolves to another tool's folder is an edge ARCHITECTURE.md does not draw. The edges that
# exist today are listed below, each with why, as debts: a new one fails this test, and so
# does a listed one that is gone (then the list is shortened).
#   include_boundaries.py SOURCE_ROOT
# An include is resolved as the compiler's search would find it in this tree: beside the
# including file, from the source root (rooted includes), then in the folders the build adds
# to the include path (bpf/ and bpf/abi/ for the probes' shared structs, tests/support/, and the tool
# folders that a meson.build names with include_directories). Generated headers (*.skel.h,
# *.pb.h) and rscore's own are not tool code.
# Every quoted include in a tool folder names its header by its path from the source root
# ("analyzer/hang.h"; a generated one from the build root: "bpf/nccl.skel.h"), so a header has
# one name across the tree; a bare or relative name fails. (BPF programs, *.bpf.c, are built by
# clang with bpf/ and bpf/abi/ on the path, as the kernel's own BPF code is.)
import os, re, sys

root = sys.argv[1]
TOOLS = ["recorder", "merger", "analyzer", "exporter"]
SEARCH = ["bpf", "bpf/abi", "tests/support", "analyzer", "merger", "exporter", "recorder"]
# Headers a tool's library offers the others (merger_dep, exporter_dep): rankscope-analyze
# mcp merges and exports for its tools.
PUBLIC = {"merger/merge.h", "exporter/exporter.h", "exporter/event_reader.h"}
# (including file, included file): the edges of today, each a debt with its reason (none now).
KNOWN = set()


def resolve(including_dir, inc):
    for base in [including_dir, root] + [os.path.join(root, d) for d in SEARCH]:
        p = os.path.normpath(os.path.join(base, inc))
        if os.path.isfile(p):
            return os.path.relpath(p, root)
    return None


# The first part of a rooted include: a top-level folder, or rscore's include root.
ROOTS = {"recorder", "merger", "analyzer", "exporter", "bpf", "tests", "subprojects", "rscore"}
found, public, unresolved, unrooted = set(), set(), [], []
for tool in TOOLS:
    for dirpath, _, files in os.walk(os.path.join(root, tool)):
        for name in sorted(files):
            if not name.endswith((".cc", ".h", ".c")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            for n, line in enumerate(open(path, errors="replace"), 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m:
                    continue
                inc = m.group(1)
                if inc.split("/")[0] not in ROOTS and not name.endswith(".bpf.c"):
                    unrooted.append("%s:%d: \"%s\"" % (rel, n, inc))
                if inc.startswith("rscore/") or inc.endswith((".skel.h", ".pb.h")):
                    continue
                target = resolve(dirpath, inc)
                if target is None:
                    unresolved.append("%s:%d: \"%s\"" % (rel, n, inc))
                    continue
                top = target.split("/")[0]
                if top in TOOLS and top != tool:
                    if target in PUBLIC and inc == target:
                        public.add((rel, target))
                    else:
                        found.add((rel, target))

new = sorted(found - KNOWN)
gone = sorted(KNOWN - found)
for a, b in new:
    print("FAIL: %s includes %s: another tool's header (share it through rscore)" % (a, b))
for a, b in gone:
    print("FAIL: %s no longer includes %s: take the edge off the list" % (a, b))
for u in unresolved:
    print("FAIL: %s resolves nowhere in the source tree" % u)
for u in unrooted:
    print("FAIL: %s is not rooted: name the header by its path from the source root" % u)
if new or gone or unresolved or unrooted:
    sys.exit(1)
print("ok: every include rooted; %d includes of other tools' public headers (%s); %d listed debts (%s)" % (
    len(public), ", ".join("%s -> %s" % e for e in sorted(public)),
    len(found), ", ".join("%s -> %s" % e for e in sorted(found))))
