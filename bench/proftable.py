#!/usr/bin/env python3
"""proftable.py - the report's "prof=1 against the default" table again,
from a run's samples.csv (bench/run.py writes it), with this tree's
report code: e.g. an older run's samples with the verdicts as they are now.

    bench/proftable.py RESULTS_DIR/samples.csv
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


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1].strip())
    samples = read(sys.argv[1])
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
