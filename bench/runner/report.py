"""Turns samples into the Markdown report and the raw CSV.

A table has one row per parameter combination (size, threads, ...) and one
column per variant. A cell is "median [min-max]" of the repetitions and
"xR", the ratio to the best peer in that row, oriented so that R > 1 is
worse and R < 1 beats every peer: for costs (ns, seconds, MiB) R = value /
best; for throughputs (Mops/s) R = best / value. The best peer is bold.
"""

import csv
import math
import re
import statistics

from .cases import GROUPS, VS_GLIBC

# Metrics where more is better (throughputs, counts and shares of successes).
HIGHER_IS_BETTER = {"mops", "blocks", "small_ok_pct", "idle_ok_pct", "new_ok_pct", "refill_pct", "fill_pct", "local_pct"}

# Per-process figures every sample carries (from wait4, see execute.py), as
# metrics a group may list: one value per run, the row is the case.
PROC_METRICS = {
    "proc_sys_s": lambda s: s.get("proc_sys_s"),
    "proc_user_s": lambda s: s.get("proc_user_s"),
    "proc_cpu_s": lambda s: (s["proc_user_s"] + s["proc_sys_s"]
                             if s.get("proc_user_s") is not None and s.get("proc_sys_s") is not None
                             else None),
    "proc_rss_mib": lambda s: s["proc_maxrss_kib"] / 1024.0 if s.get("proc_maxrss_kib") else None,
    # sleeps (voluntary context switches: a futex wait that slept, a join), preemptions (involuntary)
    # and minor page faults: what a row's system time is made of (docs/results.md, h50k)
    "proc_nvcsw": lambda s: s.get("proc_nvcsw"),
    "proc_nivcsw": lambda s: s.get("proc_nivcsw"),
    "proc_minflt": lambda s: s.get("proc_minflt"),
}


def higher_is_better(metric):
    return metric in HIGHER_IS_BETTER or metric.endswith("_mops")


def caption(metric):
    """What the numbers of a metric are."""
    if metric.startswith("cpu_ns_"):
        return "CPU time, ns"
    if metric.startswith("ns_"):
        return "wall time per operation and busy core, ns"
    if metric.startswith("cpu_us_"):
        return "CPU time, us"
    if metric.startswith("us_"):
        return "wall time per operation and busy core, us"
    if metric == "overhead":
        return "final RSS / live bytes"
    if metric in PROC_METRICS:
        return "whole process, from wait4, %s; one row per case" % unit_of(metric)
    u = unit_of(metric)
    if higher_is_better(metric):
        u = (u + ", " if u else "") + "higher is better"
    return u


def unit_of(metric):
    if metric.startswith(("ns_", "cpu_ns_")):
        return "ns"
    if metric.startswith(("us_", "cpu_us_")):
        return "us"
    if metric.endswith("_pct"):
        return "%"
    if metric == "blocks":
        return "blocks"
    if metric in ("proc_nvcsw", "proc_nivcsw"):
        return "context switches"
    if metric == "proc_minflt":
        return "minor faults"
    if metric.startswith("instr_"):
        return "instructions"
    if metric.endswith("_mib"):
        return "MiB"
    if metric.endswith("_s"):
        return "s"
    if metric == "cpu_mops":
        return "Mops per CPU-s"
    if metric == "mops" or metric.endswith("_mops"):
        return "Mops/s"
    return ""


def fmt(x):
    if x is None:
        return "-"
    if float(x).is_integer() and abs(x) < 1000:
        return "%d" % x
    a = abs(x)
    if a >= 1000:
        return "{:,.0f}".format(x)
    if a >= 100:
        return "%.0f" % x
    if a >= 10:
        return "%.1f" % x
    if a >= 1 or a == 0:
        return "%.2f" % x
    return "%.2g" % x if a >= 0.001 else "%.1e" % x


_UNITS = {"": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def _num(v):
    """Sort key of a parameter value: numbers (with an optional KiB/MiB/GiB
    unit) by value, then everything else (8-1024, near, ...) as text."""
    m = re.match(r"^(\d+(?:\.\d+)?)(KiB|MiB|GiB)?$", v)
    if m:
        return (0, float(m.group(1)) * _UNITS[m.group(2) or ""], "")
    return (1, 0.0, v)


def param_key(params):
    return tuple(sorted(params.items()))


class Table:
    """Medians and spreads of one metric of one group, by row and variant."""

    def __init__(self, samples, group, metric, variants):
        self.group, self.metric = group, metric
        vals = {}
        if metric in PROC_METRICS:
            seen_runs = set()
            for s in samples:
                run = (s["rep"], s["seq"])
                if (s["group"] != group or s["status"] != "ok" or run in seen_runs
                        or s.get("pass", "main") != "main"):
                    continue
                seen_runs.add(run)
                v = PROC_METRICS[metric](s)
                if v is not None:
                    vals.setdefault(param_key({"case": s["case"]}), {}).setdefault(s["variant"], []).append(v)
        else:
            for s in samples:
                if (s["group"] == group and s["metric"] == metric and s["status"] == "ok"
                        and s.get("pass", "main") == "main"):
                    vals.setdefault(param_key(s["params"]), {}).setdefault(s["variant"], []).append(s["value"])
        self.values = vals
        seen = {v for row in vals.values() for v in row}
        self.variants = [v for v in variants if v.name in seen]
        keys = []
        for pk in vals:
            for k, _ in pk:
                if k not in keys:
                    keys.append(k)
        # parameters that are the same in every row go to the caption
        self.fixed = {k: dict(pk).get(k) for k in keys
                      if len({dict(pk).get(k) for pk in vals}) == 1}
        self.cols = [k for k in keys if k not in self.fixed]
        order = ["case", "lang", "mode", "api", "free", "touch", "size", "align", "pairs", "producers",
                 "threads"]
        self.cols.sort(key=lambda k: (order.index(k) if k in order else len(order), k))
        self.rows = sorted(vals, key=lambda pk: [_num(dict(pk).get(k, "")) for k in self.cols])

    def median(self, row, variant):
        xs = self.values.get(row, {}).get(variant)
        return statistics.median(xs) if xs else None

    def best_peer(self, row):
        meds = [self.median(row, v.name) for v in self.variants if v.peer]
        meds = [m for m in meds if m is not None]
        if not meds:
            return None
        return max(meds) if higher_is_better(self.metric) else min(meds)

    def ratio(self, value, best):
        if value is None or not best or not value:
            return None
        return best / value if higher_is_better(self.metric) else value / best

    def cell(self, row, v):
        xs = self.values.get(row, {}).get(v.name)
        if not xs:
            return "-"
        med = statistics.median(xs)
        text = fmt(med)
        if len(xs) > 1 and fmt(min(xs)) != fmt(max(xs)):
            text += " [%s-%s]" % (fmt(min(xs)), fmt(max(xs)))
        best = self.best_peer(row)
        if self.metric == "misplaced":
            return text
        r = self.ratio(med, best)
        if v.peer and best is not None and med == best:
            return "**%s**" % text
        if r is not None:
            text += " x" + ("%.2f" % r if r < 10 else fmt(r))
        return text

    def markdown(self):
        head = self.cols + [v.name for v in self.variants]
        lines = ["| " + " | ".join(head) + " |",
                 "|" + "|".join(["---"] * len(self.cols) + ["---:"] * len(self.variants)) + "|"]
        for row in self.rows:
            d = dict(row)
            lines.append("| " + " | ".join([d.get(k, "") for k in self.cols] +
                                           [self.cell(row, v) for v in self.variants]) + " |")
        return "\n".join(lines)


def header(meta):
    m = meta["machine"]
    rows = [
        ("command", "`%s`" % meta["command"]),
        ("commit", meta["commit"]),
        ("date (UTC)", meta["date"]),
        ("machine", "%s: %d CPUs, %s, kernel %s, %s RAM, %d NUMA node(s), THP %s"
         % (m["host"], m["nproc"], m["cpu"], m["kernel"], m["memory"], m["numa_nodes"], m["thp"])),
        ("load average", "start %s; end %s" % (m["loadavg"], meta.get("loadavg_end", "?"))),
        ("packages", ", ".join("%s %s" % kv for kv in meta["versions"].items())),
        ("nodal", meta["nodal"]),
        ("repetitions", "%d, interleaved: every repetition runs every case once per allocator, "
         "allocator order rotated each repetition" % meta["reps"]),
        ("cells", "median [min-max] over repetitions; xR = times the best peer's cost "
         "(for throughput: best peer / this), so R < 1 beats every peer; best peer in bold"),
        ("took", "%.0f s" % meta.get("elapsed", 0)),
    ]
    out = ["# nodal benchmarks: %s mode" % meta["mode"], "", "| | |", "|---|---|"]
    out += ["| %s | %s |" % r for r in rows]
    return "\n".join(out)


def _extra_nodepair(tables, group):
    """Seed 000's speedup table, and nodal's node API against its own malloc."""
    t = tables.get((group, "ns_op"))
    if not t:
        return []
    out = []
    names = [v.name for v in t.variants]
    if "numa_alloc_onnode" in names:
        others = [n for n in names if n != "numa_alloc_onnode"]
        out += ["", "Speedup vs numa_alloc_onnode (its median / each median, wall time):", "",
                "| " + " | ".join(t.cols + others) + " |",
                "|" + "|".join(["---"] * len(t.cols) + ["---:"] * len(others)) + "|"]
        for row in t.rows:
            base = t.median(row, "numa_alloc_onnode")
            cells = []
            for n in others:
                m = t.median(row, n)
                cells.append("%s x" % fmt(base / m) if base and m else "-")
            out.append("| " + " | ".join([dict(row).get(k, "") for k in t.cols] + cells) + " |")
    # CPU time where there is one: both loops run in user space, and it is
    # the steadier clock on a shared machine
    tc = tables.get((group, "cpu_ns_op")) or t
    if "nodal-node" in names and "nodal-malloc" in names:
        out += ["", "nodal's node-targeted cycle / nodal's plain malloc cycle, %s (target <= 1.15):"
                % tc.metric, "",
                "| " + " | ".join(tc.cols + ["ratio", "verdict"]) + " |",
                "|" + "|".join(["---"] * len(tc.cols) + ["---:", "---"]) + "|"]
        for row in tc.rows:
            a, b = tc.median(row, "nodal-node"), tc.median(row, "nodal-malloc")
            r = a / b if a and b else None
            verdict = "-" if r is None else ("ok" if r <= 1.15 else "over")
            out.append("| " + " | ".join([dict(row).get(k, "") for k in tc.cols] +
                                         [fmt(r) if r else "-", verdict]) + " |")
    return out


def _extra_tiercost(tables, group):
    """The tier call against the node call on the resolved node (target <=
    1.05), and memkind's kind against the tier call (target >= 2)."""
    t = tables.get((group, "cpu_ns_op"))
    if not t:
        return []
    names = [v.name for v in t.variants]
    if "nodal-tier" not in names or "nodal-node" not in names:
        return []
    has_mk = "memkind" in names
    out = ["", "nodal-tier / nodal-node (target <= 1.05)%s, %s medians:" % (
        " and memkind / nodal-tier (target >= 2)" if has_mk else "", t.metric), "",
        "| " + " | ".join(t.cols + ["tier / node", "memkind / tier"]) + " |",
        "|" + "|".join(["---"] * len(t.cols) + ["---:", "---:"]) + "|"]
    for row in t.rows:
        a, b = t.median(row, "nodal-tier"), t.median(row, "nodal-node")
        m = t.median(row, "memkind") if has_mk else None
        out.append("| " + " | ".join([dict(row).get(k, "") for k in t.cols] +
                                     [fmt(a / b) if a and b else "-", fmt(m / a) if m and a else "-"]) + " |")
    return out


def _extra_app(tables, group, metric):
    """numa/numa against numa/regular with the same allocator family."""
    t = tables.get((group, metric))
    if not t:
        return []
    names = [v.name for v in t.variants]
    pairs = [("numa/jemalloc-pool", "regular/jemalloc"), ("numa/nodal", "regular/nodal")]
    # memkind's own jemalloc is not a drop-in here: compare it with jemalloc's
    pairs += [(n, "regular/jemalloc") for n in names if n.startswith("numa/memkind")]
    pairs += [(n, "regular/nodal") for n in names if n.startswith("numa/nodal ")]
    pairs = [p for p in pairs if p[0] in names and p[1] in names]
    if not pairs:
        return []
    out = ["", "numa/numa vs numa/regular, %s (throughput change of the node-placed configuration):"
           % metric, "",
           "| " + " | ".join(t.cols + ["%s vs %s" % p for p in pairs]) + " |",
           "|" + "|".join(["---"] * len(t.cols) + ["---:"] * len(pairs)) + "|"]
    for row in t.rows:
        cells = []
        for a, b in pairs:
            x, y = t.median(row, a), t.median(row, b)
            cells.append("%+.1f %%" % (100 * (x / y - 1)) if x and y else "-")
        out.append("| " + " | ".join([dict(row).get(k, "") for k in t.cols] + cells) + " |")
    return out


def _extra_cxxnew(tables, group):
    """nodal's operator new/delete pair against its own malloc/free pair in
    the same binary (target: at most 1 ns more)."""
    t = tables.get((group, "cpu_ns_pair"))
    if not t or "nodal" not in [v.name for v in t.variants] or "api" not in t.cols:
        return []
    keys = [k for k in t.cols if k != "api"]
    by = {}
    for row in t.rows:
        d = dict(row)
        by.setdefault(tuple(d.get(k, "") for k in keys), {})[d.get("api")] = row
    out = ["", "nodal: operator new/delete pair minus nodal's malloc/free pair, cpu_ns_pair "
           "(target <= +1 ns):", "", "| " + " | ".join(keys + ["new", "malloc", "difference",
                                                                "verdict"]) + " |",
           "|" + "|".join(["---"] * len(keys) + ["---:"] * 3 + ["---"]) + "|"]
    for k, rows in by.items():
        if "new" not in rows or "malloc" not in rows:
            continue
        a, b = t.median(rows["new"], "nodal"), t.median(rows["malloc"], "nodal")
        if a is None or b is None:
            continue
        out.append("| " + " | ".join(list(k) + [fmt(a), fmt(b), "%+.2f" % (a - b),
                                                "ok" if a - b <= 1.0 else "over"]) + " |")
    return out


def _extra_vs_glibc(tables, group):
    """Each column's median divided by glibc's, for the metrics whose targets
    are ratios to glibc (cases.VS_GLIBC). Not oriented: for counts and
    throughputs (higher is better) a ratio below 1 is worse."""
    out = []
    for metric in VS_GLIBC.get(group, []):
        t = tables.get((group, metric))
        if not t or "glibc" not in [v.name for v in t.variants]:
            continue
        others = [v.name for v in t.variants if v.name != "glibc"]
        out += ["", "%s: each median / glibc's median%s:" % (
            metric, " (higher is better)" if higher_is_better(metric) else " (lower is better)"), "",
            "| " + " | ".join(t.cols + others) + " |",
            "|" + "|".join(["---"] * len(t.cols) + ["---:"] * len(others)) + "|"]
        for row in t.rows:
            base = t.median(row, "glibc")
            cells = []
            for n in others:
                m = t.median(row, n)
                cells.append("%.2f" % (m / base) if base and m is not None else "-")
            out.append("| " + " | ".join([dict(row).get(k, "") for k in t.cols] + cells) + " |")
    return out


def _extra_nodecost(tables, group):
    """The issue-12 target: a new node-bound MiB through nodal costs at most
    1.2x a plain first-touched MiB."""
    t = tables.get((group, "ratio"))
    if not t:
        return []
    out = ["", "A new node-bound MiB through nodal / a plain first-touched MiB (median CPU time per MiB; "
           "target <= 1.2):", "", "| " + " | ".join(t.cols + [v.name for v in t.variants] + ["verdict"]) + " |",
           "|" + "|".join(["---"] * len(t.cols) + ["---:"] * len(t.variants) + ["---"]) + "|"]
    for row in t.rows:
        meds = [t.median(row, v.name) for v in t.variants]
        worst = max([m for m in meds if m is not None], default=None)
        verdict = "-" if worst is None else ("ok" if worst <= 1.2 else "over")
        out.append("| " + " | ".join([dict(row).get(k, "") for k in t.cols] + [fmt(m) for m in meds] +
                                     [verdict]) + " |")
    return out


# The issue-23 targets for secure=1: its time / the default's, at most this
# in geometric mean over the drop-in workloads, and at most ROW on every row.
SECURE_GEOMEAN, SECURE_ROW = 1.25, 1.5


def _time_metric(group, tables):
    """The group's CPU-time metric (or its wall-time or throughput one)."""
    metrics = [m for m in GROUPS[group][1] if (group, m) in tables]
    for pick in (lambda m: m.startswith("cpu_"),
                 lambda m: m.startswith("ns_") or m.endswith("mops")):
        for m in metrics:
            if pick(m):
                return m
    return None


def _extra_secure(tables):
    """secure=1 against the default, per row of every drop-in workload that
    has both columns (time: secure / default; throughput: default /
    secure), and their geometric mean, with the issue-23 targets."""
    rows, out = [], []
    for group in GROUPS:
        m = _time_metric(group, tables)
        t = tables.get((group, m)) if m else None
        if not t:
            continue
        names = [v.name for v in t.variants]
        if "nodal" not in names or "nodal secure" not in names:
            continue
        for row in t.rows:
            a, b = t.median(row, "nodal secure"), t.median(row, "nodal")
            if not a or not b:
                continue
            r = b / a if higher_is_better(m) else a / b
            label = ", ".join("%s=%s" % (k, dict(row).get(k, "")) for k in t.cols)
            rows.append((group, m, label, r))
    if not rows:
        return []
    gm = math.exp(sum(math.log(r) for *_, r in rows) / len(rows))
    worst = max(r for *_, r in rows)
    out += ["", "## secure=1 against the default", "",
            "nodal with secure=1 / nodal, the median of each row (time; for throughput the default's / "
            "secure=1's), target <= %.2f on every row and <= %.2f in geometric mean: geometric mean "
            "%.2f over %d rows (%s), worst %.2f (%s)." % (
                SECURE_ROW, SECURE_GEOMEAN, gm, len(rows), "ok" if gm <= SECURE_GEOMEAN else "over",
                worst, "ok" if worst <= SECURE_ROW else "over"), "",
            "| workload | metric | row | secure=1 / default | verdict |", "|---|---|---|---:|---|"]
    for group, m, label, r in rows:
        out.append("| %s | %s | %s | %.2f | %s |" % (group, m, label or "-", r,
                                                    "ok" if r <= SECURE_ROW else "over"))
    return out


# The issue-21 targets for the heap profile on (prof=1, default rate): CPU
# time at most this much above the default on the hand-off and server rows,
# and peak RSS at most this much above it.
PROF_CPU, PROF_RSS = 1.05, 1.02
PROF_GROUPS = ("xthread", "batchq", "larson", "reqresp", "rptest", "mstress", "redis")
# The two columns the profile table compares, and the confidence level of
# its verdicts.
PROF_ON, PROF_OFF = "nodal prof", "nodal"
PROF_LEVEL = 0.90


def median_interval(xs, level=PROF_LEVEL):
    """A distribution-free confidence interval for the median of xs: the
    order statistics x(k) and x(n+1-k) for the largest k whose coverage,
    1 - 2 P(Binomial(n, 1/2) < k), is still at least level. Returns (low,
    high, coverage); with too few values for the level (n < 5 at 90 %) it
    is [min, max] with its own, lower coverage (3 values: 75 %)."""
    xs = sorted(xs)
    n = len(xs)

    def coverage(k):
        return 1.0 - 2.0 * sum(math.comb(n, i) for i in range(k)) / 2.0 ** n

    k = 1
    while k + 1 <= (n + 1) // 2 and coverage(k + 1) >= level:
        k += 1
    return xs[k - 1], xs[n - k], coverage(k)


def prof_verdict(low, high, target):
    """ok: the interval lies at or under the target; over: above it; not
    resolved: the interval covers the target (the row's spread is wider
    than the distance to it)."""
    if high <= target:
        return "ok"
    if low > target:
        return "over"
    return "not resolved"


def _prof_pairs(samples, group, metric):
    """{row: [(prof=1 value, default value), ...]}, one pair per repetition
    in which both columns ran the row (within a repetition, minutes or
    seconds apart: the pair shares the machine's load of that time)."""
    by = {}
    for s in samples:
        if (s["group"] != group or s["metric"] != metric or s["status"] != "ok"
                or s["variant"] not in (PROF_ON, PROF_OFF) or s["value"] is None):
            continue
        by.setdefault(param_key(s["params"]), {}).setdefault(s["rep"], {}).setdefault(
            s["variant"], []).append(s["value"])
    pairs = {}
    for row, reps in by.items():
        for rep in sorted(reps):
            d = reps[rep]
            if len(d.get(PROF_ON, [])) == 1 and len(d.get(PROF_OFF, [])) == 1:
                pairs.setdefault(row, []).append((d[PROF_ON][0], d[PROF_OFF][0]))
    return pairs


def _prof_instr(samples, group):
    """{row: (prof=1 / default low, high, estimates)} of the instructions per
    operation (profinstr.py, pass "prof-instr"): the range of the ratio over
    every pairing of the two columns' estimates, min(on) / max(off) to
    max(on) / min(off), so that it holds whatever estimate was the right
    one."""
    by = {}
    for s in samples:
        if (s["group"] == group and s["metric"] == "instr_op" and s.get("pass") == "prof-instr"
                and s["status"] == "ok" and s["value"] and s["variant"] in (PROF_ON, PROF_OFF)):
            by.setdefault(param_key(s["params"]), {}).setdefault(s["variant"], []).append(s["value"])
    out = {}
    for row, d in by.items():
        on, off = d.get(PROF_ON), d.get(PROF_OFF)
        if on and off:
            out[row] = (min(on) / max(off), max(on) / min(off), min(len(on), len(off)))
    return out


def _prof_pages(samples, group):
    """{row: (low, high, coverage, median, text)} of the peak RSS rows'
    second measure (profpages.py, pass "prof-pages"): per pair, the default
    run's peak plus what prof=1 adds outside the program's blocks and the
    other objects' pages (profpages.split), over the
    default run's peak; the median of those ratios and its interval, as the
    pairs' (median_interval)."""
    from . import profpages
    out = {}
    for row, (rs, bs, ds) in profpages.ratios(samples, group).items():
        low, high, cov = median_interval(rs)
        bl, bh, _ = median_interval(bs)
        text = "%.3f [%.3f-%.3f] (%d pairs, %.0f %%; +%.0f KiB, blocks x%.3f [%.3f-%.3f])" % (
            statistics.median(rs), low, high, len(rs), cov * 100, statistics.median(ds),
            statistics.median(bs), bl, bh)
        out[row] = (low, high, cov, statistics.median(rs), text)
    return out


def _prof_rows(samples, tables, variants_by_group=None):
    """The rows of the profile's table: (group, metric, label, pairs,
    median ratio, low, high, coverage, ratio of medians, target, second
    measure or None, row key)."""
    rows = []
    for group in PROF_GROUPS:
        have = {s["metric"] for s in samples if s["group"] == group}
        rss = "peak_rss_kib" if "peak_rss_kib" in have else (
            [x for x in GROUPS.get(group, ("", []))[1] if "peak_rss" in x] or [None])[0]
        for m in (_time_metric(group, tables), rss):
            if not m:
                continue
            target = PROF_RSS if "rss" in m else PROF_CPU
            pairs = _prof_pairs(samples, group, m)
            instr = _prof_instr(samples, group) if target == PROF_CPU else {}
            pages = _prof_pages(samples, group) if target == PROF_RSS else {}
            # the rows' order and labels of the metric's table (peak_rss_kib
            # has none in the report: made here the same way)
            t = tables.get((group, m)) or Table(samples, group, m, (variants_by_group or {}).get(group, []))
            order = t.rows + sorted(r for r in pairs if r not in t.rows)
            for row in order:
                ps = [(a, b) for a, b in pairs.get(row, []) if a and b]
                if not ps:
                    continue
                ratios = [b / a if higher_is_better(m) else a / b for a, b in ps]
                low, high, cov = median_interval(ratios)
                meds = (statistics.median(a for a, _ in ps), statistics.median(b for _, b in ps))
                of_medians = meds[1] / meds[0] if higher_is_better(m) else meds[0] / meds[1]
                cols = t.cols if row in t.rows else [k for k, _ in row]
                label = ", ".join("%s=%s" % (k, dict(row).get(k, "")) for k in cols)
                second = None
                if row in instr:
                    lo, hi, n = instr[row]
                    # a range of one estimate a column says nothing of its spread
                    second = ("instructions", "%.3f-%.3f (range, %d+%d)" % (lo, hi, n, n), lo, hi, n >= 2)
                if row in pages:
                    lo, hi, pcov, _, text = pages[row]
                    # as the pairs: a verdict only at the interval's full coverage
                    second = ("pages", text, lo, hi, pcov >= PROF_LEVEL)
                rows.append((group, m, label, len(ps), statistics.median(ratios), low, high, cov,
                             of_medians, target, second, row))
    # a verdict of the pairs needs the interval's full coverage (5 pairs
    # and more at 90 %): the range of fewer says nothing at that level
    verdicts = [prof_verdict(r[5], r[6], r[9]) if r[7] >= PROF_LEVEL else "not resolved" for r in rows]
    seconds = [(prof_verdict(r[10][2], r[10][3], r[9]) if r[10][4] else "not resolved") if r[10] else ""
               for r in rows]
    final = [v if v != "not resolved" or not s2 or s2 == "not resolved" else "%s (%s)" % (s2, r[10][0])
             for v, s2, r in zip(verdicts, seconds, rows)]
    return rows, verdicts, seconds, final


def prof_open_cases(samples, rss_only=False):
    """The cases (ids) one of whose rows of the profile's table is not
    resolved (rss_only: one of whose peak RSS rows): run.py's extra pairs,
    and the pages of profpages.py, go to these alone."""
    cols = [type("Variant", (), {"name": n})() for n in (PROF_OFF, PROF_ON)]
    tables = {}
    for group in PROF_GROUPS:
        for metric in GROUPS.get(group, ("", []))[1]:
            t = Table(samples, group, metric, cols)
            if t.rows:
                tables[(group, metric)] = t
    rows, _, _, final = _prof_rows(samples, tables)
    open_rows = {(r[0], r[11]) for r, f in zip(rows, final)
                 if f == "not resolved" and (not rss_only or r[9] == PROF_RSS)}
    return {s["case"] for s in samples
            if (s["group"], param_key(s["params"])) in open_rows and s["variant"] == PROF_ON}


def _extra_prof(samples, tables, variants_by_group=None):
    """prof=1 against the default on the hand-off and server workloads: CPU
    time (or time) and peak RSS per row, as the ratio within each
    repetition's pair of runs (the median of those ratios and its
    confidence interval), with the targets: a verdict only where the
    interval does not cover the target. A second measure where the pairs
    do not decide on a CPU row: its instructions (profinstr.py)."""
    rows, verdicts, seconds, final = _prof_rows(samples, tables, variants_by_group)
    if not rows:
        return []

    def counts(vs):
        return ", ".join("%d %s" % (sum(1 for v in vs if v.split(" (")[0] == k), k)
                         for k in ("ok", "over", "not resolved"))
    cpu = [f for r, f in zip(rows, final) if r[9] == PROF_CPU]
    rss = [f for r, f in zip(rows, final) if r[9] != PROF_CPU]
    out = ["", "## prof=1 against the default", "",
           "nodal with the heap profile on (prof=1, one sample per 512 KiB) against nodal, on every row of "
           "the hand-off and server workloads; targets: CPU time <= %.2f, peak RSS <= %.2f. Each "
           "repetition runs both columns (in rotating order), so each gives one ratio, "
           "prof=1 / default; the table gives the median of those ratios, its %d %% confidence interval "
           "(order statistics of the ratios; with fewer than 5 pairs the range, whose coverage is lower: "
           "the column says which) and the ratio of the columns' medians. Verdict of the pairs: ok when "
           "the interval, at full coverage, lies at or under the target, over when above it, else not "
           "resolved (the row's own spread is wider than its distance to the target; the runner ran "
           "more pairs of such rows, up to `--prof-max-reps`). %s." % (
               PROF_CPU, PROF_RSS, round(PROF_LEVEL * 100), counts(verdicts)),
           "",
           "Second measure, of the CPU rows: instructions per operation under callgrind at a reduced "
           "size (bench/runner/profinstr.py: two runs of different sizes, so start-up and the exit "
           "dump cancel), prof=1 / default, the range over every pairing of the columns' estimates, "
           "against the same %.2f. Instructions, not time: they leave out the cache misses of the "
           "profile's tables and unwinder (on larson -t 2 prof=1 adds about 0.5 %% of instructions "
           "and 3-4 %% of CPU time), so an \"ok (instructions)\" says the profile's work is within the "
           "target, not its time: %s." % (PROF_CPU, counts([x for r, x in zip(rows, seconds)
                                                              if x and r[9] == PROF_CPU])),
           "",
           "Second measure, of the peak RSS rows the pairs leave open: pages (bench/runner/profpages.py: "
           "9 more pairs of runs under bench/peakmap.py without address-space randomisation, each "
           "run's resident pages at its largest snapshot before its result line): per pair, the "
           "default run's peak plus what prof=1 adds to nodal's file and to the anonymous memory that "
           "is not the program's blocks (the small, medium, large and huge blocks of nodal's segments): "
           "nodal's code and data, its bookkeeping, the profile's tables and cell slabs, the "
           "segments' headers, the stacks; over the default run's peak (the other objects' pages left "
           "out: bench/README.md); the median of these ratios, "
           "its interval as the pairs', against the same %.2f. It takes the program's blocks at the "
           "peak to be the default run's: the profile does not change which blocks a program holds "
           "(the blocks' own ratio per pair, shown, moves by the row's spread around 1): %s." % (
               PROF_RSS, counts([x for r, x in zip(rows, seconds) if x and r[9] != PROF_CPU])),
           "",
           "The verdict column is the pairs' where they decide, else the second measure's, named. "
           "CPU rows: %s; peak RSS rows: %s." % (counts(cpu), counts(rss)),
           "",
           "| workload | metric | row | pairs | prof=1 / default, median of the pairs | interval "
           "(coverage) | ratio of medians | verdict of the pairs | second measure | verdict |",
           "|---|---|---|---:|---:|---|---:|---|---|---|"]
    for (group, m, label, n, med, low, high, cov, of_medians, target, second, _), verdict, f in zip(
            rows, verdicts, final):
        out.append("| %s | %s | %s | %d | %.3f | %.3f-%.3f (%.0f %%) | %.3f | %s | %s | %s |" % (
            group, m, label or "-", n, med, low, high, cov * 100, of_medians, verdict,
            "%s: %s" % (second[0], second[1]) if second else "-", f))
    return out


# Metrics the summary leaves out: the program's own bytes (live, in
# flight), placement counts, derived ratios and the per-process counters.
SUMMARY_SKIP = {"inflight_mib", "live_mib", "misplaced", "overhead", "ratio"} | set(PROC_METRICS)
# The column the summary compares, the first a table has.
SUMMARY_NODAL = ("nodal", "nodal-node", "numa/nodal")


def _summary_row_name(t, row):
    d = dict(row)
    return ", ".join("%s=%s" % (k, d[k]) for k in t.cols if k in d) or "the one row"


def _summary(tables):
    """One line per table: nodal's ratio to the best peer over the table's
    rows (the cells' xR), so a run says at a glance where nodal is ahead and
    where it is behind; the tables below have the figures."""
    lines = []
    for (group, metric), t in tables.items():
        if metric in SUMMARY_SKIP:
            continue
        # the drop-in tables' nodal; the node tables' nodal-node and numa/nodal
        nodal = next((v for name in SUMMARY_NODAL for v in t.variants if v.name == name), None)
        if nodal is None:
            continue
        rs = []
        for row in t.rows:
            r = t.ratio(t.median(row, nodal.name), t.best_peer(row))
            if r is not None:
                rs.append((r, row))
        if not rs:
            continue
        rs.sort(key=lambda x: x[0])
        worst, best = rs[-1], rs[0]
        over = sum(1 for r, _ in rs if r > 1.10)
        lines.append("| %s | %s | %d | x%.2f | x%.2f | x%.2f (%s) | %s |" % (
            GROUPS[group][0], metric if nodal.name == "nodal" else "%s (%s)" % (metric, nodal.name), len(rs), statistics.median(r for r, _ in rs), best[0], worst[0],
            _summary_row_name(t, worst[1]), over if over else "-"))
    if not lines:
        return []
    return ["", "## nodal against the best peer, table by table", "",
            "Each line is one table below: nodal's ratio to the best peer's median in each of its rows (the "
            "cells' xR; below 1 nodal beats every peer, for throughputs too), the median of those ratios, "
            "the best and the worst row, and how many rows are past x1.10.", "",
            "| workload | metric | rows | median | best | worst (its row) | rows past x1.10 |",
            "|---|---|---:|---:|---:|---|---:|"] + lines


def markdown(samples, variants_by_group, meta, problems):
    out = [header(meta)]
    tables = {}
    for group, (title, metrics, what) in GROUPS.items():
        variants = variants_by_group.get(group)
        if not variants:
            continue
        made = []
        for metric in metrics:
            t = Table(samples, group, metric, variants)
            if t.rows:
                tables[(group, metric)] = t
                made.append(t)
        if not made:
            continue
        out += ["", "## " + title, "", what + "."]
        for t in made:
            fixed = ", ".join("%s=%s" % kv for kv in t.fixed.items())
            cap = caption(t.metric)
            out += ["", "**%s**%s%s" % (t.metric, " (%s)" % cap if cap else "",
                                          " - " + fixed if fixed else ""), "", t.markdown()]
        if group.endswith("nodepair"):
            out += _extra_nodepair(tables, group)
        if group.startswith("cxxnew"):
            out += _extra_cxxnew(tables, group)
        out += _extra_vs_glibc(tables, group)
        if group.endswith("nodecost"):
            out += _extra_nodecost(tables, group)
        if group.endswith("tiercost"):
            out += _extra_tiercost(tables, group)
        if group.endswith(("bst", "ycsb")):
            for metric in GROUPS[group][1]:
                if metric != "misplaced":
                    out += _extra_app(tables, group, metric)
        if group == "callgrind" and meta.get("callgrind_loop") is not None:
            out += ["", "The benchmark loop alone (micro -m empty) costs %.1f instructions per iteration."
                    % meta["callgrind_loop"]]
    out += _extra_secure(tables)
    out += _extra_prof(samples, tables, variants_by_group)
    out[1:1] = _summary(tables)
    if problems:
        out += ["", "## Runs that failed (a few keep the results they printed first: said so)", ""]
        out += ["- %s" % p for p in problems]
    return "\n".join(out) + "\n"


CSV_FIELDS = ["rep", "pass", "seq", "case", "group", "variant", "workload", "params", "metric", "value",
              "status", "proc_wall_s", "proc_user_s", "proc_sys_s", "proc_maxrss_kib", "proc_minflt",
              "proc_nvcsw", "proc_nivcsw", "load1"]


def write_csv(path, samples, meta):
    with open(path, "w", newline="") as f:
        for line in header(meta).splitlines():
            if line.startswith("| ") and not line.startswith("| |"):
                f.write("# " + line.strip("| ").replace(" | ", ": ", 1) + "\n")
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for s in samples:
            row = {k: ("%.6g" % v if isinstance(v, float) else v) for k, v in s.items()}
            row["params"] = ";".join("%s=%s" % kv for kv in s["params"].items())
            w.writerow(row)
