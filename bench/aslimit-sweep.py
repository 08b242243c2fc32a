#!/usr/bin/env python3
"""aslimit-sweep.py - how many blocks of each size nodal fits under an
address-space limit, against glibc, over a range of sizes.

    bench/aslimit-sweep.py [--lib LIB] [--prog PROG] [-v LIMIT] RANGE...

RANGE is aslimit's -r argument, LO-HI[:N] (N sizes spread evenly from LO to
HI; K and M suffixes), or a list for its -s (`200000,300000`). For each
size the program (default build/bench/aslimit, limit 200M) runs once under
glibc (no preload) and under LIB (default build/libnodal.so) by default and
with NODAL_OPTIONS=secure=1, and one Markdown row is printed: the size, the
three counts of blocks, nodal's counts over glibc's, and the least share of
the 64 B requests that succeeded after the limit was reached in nodal's
main, idle and new threads (both modes; glibc's own are not compared: its
new threads make arenas, which may not fit). A last line gives the least
ratio of each mode and its size.
"""
import argparse
import os
import subprocess
import sys


def run(prog, arg_flag, arg, limit, env_extra):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.pop("NODAL_OPTIONS", None)
    env.update(env_extra)
    out = subprocess.run([prog, arg_flag, arg, "-v", limit], env=env, capture_output=True, text=True).stdout
    rows = {}
    for line in out.splitlines():
        if not line.startswith("result aslimit"):
            continue
        f = dict(kv.split("=", 1) for kv in line.split()[2:] if "=" in kv)
        rows[int(f["bytes"])] = f
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default="build/libnodal.so")
    ap.add_argument("--prog", default="build/bench/aslimit")
    ap.add_argument("-v", dest="limit", default="200M")
    ap.add_argument("ranges", nargs="+")
    a = ap.parse_args()
    lib = os.path.abspath(a.lib)
    modes = [("default", {"LD_PRELOAD": lib}), ("secure=1", {"LD_PRELOAD": lib, "NODAL_OPTIONS": "secure=1"})]
    print("| bytes | glibc | default | default / glibc | secure=1 | secure=1 / glibc | 64 B ok after, least (%) |")
    print("|---|---|---|---|---|---|---|")
    worst = {m: (float("inf"), 0) for m, _ in modes}
    for r in a.ranges:
        flag = "-r" if "-" in r else "-s"
        g = run(a.prog, flag, r, a.limit, {})
        got = {m: run(a.prog, flag, r, a.limit, env) for m, env in modes}
        for size in sorted(g):
            gb = int(g[size].get("blocks", 0))
            cells, least = [], 100.0
            for m, _ in modes:
                f = got[m].get(size)
                if f is None:
                    cells += ["-", "-"]
                    continue
                # a part the child died in is missing from its line (aslimit.c):
                # counted as nothing got
                n = int(f.get("blocks", 0))
                ratio = n / gb if gb else 0.0
                if ratio < worst[m][0]:
                    worst[m] = (ratio, size)
                cells += ["{:,}".format(n), "{:.3f}x".format(ratio)]
                least = min([least] + [float(f.get(k, 0)) for k in ("small_ok_pct", "idle_ok_pct", "new_ok_pct")])
            print("| {:,} | {:,} | {} | {:.1f} |".format(size, gb, " | ".join(cells), least))
    print("least: " + ", ".join("{} {:.3f}x at {:,} B".format(m, w[0], w[1]) for m, w in worst.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
