#!/usr/bin/env python3
"""proftable.py - the report's "prof=1 against the default" table again,
from a run's samples.csv (bench/run.py writes it), with this tree's
report code: e.g. an older run's samples with the verdicts as they are now.

    bench/proftable.py RESULTS_DIR/samples.csv [--pages BENCH_DIR LIB]

--pages: first runs the pages (runner/profpages.py) again, with this tree's
code, for the cases whose peak RSS rows the run's pairs leave open, its
programs in BENCH_DIR (e.g. build/bench) under LIB (a libnodal.so) without
and with prof=1; the run's earlier pages are dropped.
"""
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from runner import report  # noqa: E402


def read(path):
    samples = []
    with open(path, newline="") as f:
        for row in csv.DictReader(line for line in f if not line.startswith("#")):
            s = dict(row)
            s["rep"], s["seq"] = int(s["rep"] or 0), int(s["seq"] or 0)
            s["value"] = float(s["value"]) if s["value"] not in ("", None) else None
            s["params"] = dict(kv.split("=", 1) for kv in s["params"].split(";") if "=" in kv)
            s["pass"] = s.get("pass") or "main"
            samples.append(s)
    return samples


class _Variant:
    """One of the table's two columns: LIB preloaded, prof=1 or not."""
    def __init__(self, name, lib, opts):
        self.name, self.args = name, []
        self.env = {"LD_PRELOAD": os.path.abspath(lib)}
        if opts:
            self.env["NODAL_OPTIONS"] = opts

    def environ(self, base):
        env = {k: v for k, v in base.items() if k not in ("LD_PRELOAD", "NODAL_OPTIONS")}
        env.update(self.env)
        return env


def pages_again(samples, bench_dir, lib):
    """samples without their pages, plus pages run now for the cases whose
    peak RSS rows the pairs leave open."""
    from runner import cases, profpages
    samples = [s for s in samples if s.get("pass") != profpages.PASS]
    still = report.prof_open_cases(samples, rss_only=True)
    vs = [_Variant(report.PROF_OFF, lib, ""), _Variant(report.PROF_ON, lib, "prof=1")]
    todo = [(c, vs) for c in cases.full_cases() if c.id in still and c.group in report.PROF_GROUPS]
    print("pages: %d cases" % len(todo), file=sys.stderr)
    s, problems = profpages.run(bench_dir, todo, lambda m: print(m, file=sys.stderr))
    for p in problems:
        print("problem: %s" % p, file=sys.stderr)
    return samples + s


def main():
    args = sys.argv[1:]
    if len(args) not in (1, 4) or (len(args) == 4 and args[1] != "--pages"):
        sys.exit(__doc__.split("\n\n")[1].strip())
    samples = read(args[0])
    if len(args) == 4:
        samples = pages_again(samples, args[2], args[3])
    cols = [type("Variant", (), {"name": n})() for n in (report.PROF_OFF, report.PROF_ON)]
    tables = {}
    for group in report.PROF_GROUPS:
        for metric in report.GROUPS.get(group, ("", []))[1]:
            t = report.Table(samples, group, metric, cols)
            if t.rows:
                tables[(group, metric)] = t
    print("\n".join(report._extra_prof(samples, tables, {g: cols for g in report.PROF_GROUPS})))


if __name__ == "__main__":
    main()
