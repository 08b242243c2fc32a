#!/usr/bin/env python3
"""ab.py - a quick side-by-side of allocators on one program, interleaved.

    bench/ab.py [--field F]... [--ratio A/B]... [--line K=V]... REPS NAME=LIB[:OPTIONS] ... -- PROGRAM ARGS...

Runs PROGRAM REPS times under each allocator, rotating the order every
repetition (so a burst of load on a shared machine hits every allocator),
and prints per allocator the median CPU time (user + system) with its
range, the ratio to the first allocator's median, and the medians of
system time and peak RSS with their ranges, and of minor page faults and
context switches (voluntary+involuntary: the child's ru_nvcsw, ru_nivcsw). LIB is a shared library to
LD_PRELOAD (several: separated by commas), or one of the aliases glibc (no preload), tc, mi, je (Debian
12's tcmalloc minimal, mimalloc, jemalloc); OPTIONS, after a colon, go into
NODAL_OPTIONS. Peak RSS is the program's own `peak_rss_mib=` field where it
prints one (most of bench/'s workloads: their peak as they define it, often
of their timed part), else the largest `peak_rss_kib=` (VmHWM, which every
result line of bench/'s programs ends with: micro, nodepair, threadcost,
alignloop, ... print no peak_rss_mib), else the kernel's maximum for the
run (which counts the forked Python before the exec: only a floor).

--field NAME (before the configs; repeatable) also reports the program's own
NAME=VALUE output (e.g. cpu_ns_op: the CPU time of its timed part, without
start-up and exit) per allocator: median, quartiles, and the ratio of
medians to the first allocator's, with the quartiles of the per-repetition
ratios (each repetition runs every allocator once, back to back).

--ratio A/B (before the configs; repeatable) also reports, for each --field,
config A's value over config B's within each repetition (their median and
quartiles): e.g. the heap profile's cost in two libraries, each against its
own default, in one interleaved run (on/off and main_on/main_off).

--line K=V (before the configs; repeatable) reads the --field values only
from the output lines that have every K=V given, as words: one row of a
program that prints several (`--line size=1024` for micro's 1 KiB row of
`-s 8,...,4096`). Without it a field's first occurrence in the output counts.

Example (nodal's build against tcmalloc and glibc on Larson at 8 threads):
    bench/ab.py 5 nodal=build/libnodal.so tc=tc glibc=glibc -- \\
        build/bench/larson -t 8 -r 50000 -R 20
"""
import os
import re
import statistics
import subprocess
import sys

LIBDIR = "/usr/lib/x86_64-linux-gnu/"
ALIASES = {
    "glibc": "",
    "tc": LIBDIR + "libtcmalloc_minimal.so.4",
    "mi": LIBDIR + "libmimalloc.so.2",
    "je": LIBDIR + "libjemalloc.so.2",
}


def num(x):
    """A value of a program's own field for the report: four significant
    digits, but every digit of the integer part (a peak of 30,080 KiB
    reads 30080, not 3.008e+04, so columns of KiB compare at a glance)."""
    return "%.0f" % x if abs(x) >= 1000 else "%.4g" % x


def usage():
    sys.exit(__doc__.split("\n\n")[1].strip())


def parse_configs(specs, tool="ab.py"):
    """NAME=LIB[,LIB...][:OPTIONS] arguments -> [(name, LD_PRELOAD value, options)]
    (an empty LD_PRELOAD value for glibc). Raises ValueError on an argument
    without '='; exits on a library that does not exist."""
    configs = []
    for spec in specs:
        if "=" not in spec:
            raise ValueError(spec)
        name, rest = spec.split("=", 1)
        lib, _, opts = rest.partition(":")
        libs = [ALIASES.get(x, x) for x in lib.split(",")]
        for x in libs:
            if x and not os.path.exists(x):
                sys.exit("%s: %s: no such library" % (tool, x))
        configs.append((name, " ".join(x for x in libs if x), opts))
    return configs


def main(argv):
    if len(argv) < 4 or "--" not in argv:
        usage()
    sep = argv.index("--")
    fields, pairs = [], []
    lines = []
    while len(argv) > 2 and argv[1] in ("--field", "--ratio", "--line"):
        if argv[1] == "--line":
            if "=" not in argv[2]:
                sys.exit("ab.py: --line wants K=V")
            lines.append(argv[2])
        elif argv[1] == "--field":
            fields.append(argv[2])
        else:
            a, _, b = argv[2].partition("/")
            pairs.append((a, b))
        argv = argv[:1] + argv[3:]
        sep -= 2
    try:
        reps = int(argv[1])
    except ValueError:
        usage()
    try:
        configs = parse_configs(argv[2:sep])
    except ValueError:
        usage()
    cmd = argv[sep + 1:]
    if not configs or not cmd:
        usage()
    names = [name for name, _, _ in configs]
    if any(a not in names or b not in names for a, b in pairs):
        sys.exit("ab.py: --ratio A/B: A and B must be configs' names")
    runs = {name: [] for name, _, _ in configs}
    own = {(name, f): [] for name, _, _ in configs for f in fields}
    for r in range(reps):
        k = r % len(configs)
        for name, lib, opts in configs[k:] + configs[:k]:
            env = dict(os.environ)
            env.pop("LD_PRELOAD", None)
            if lib:
                env["LD_PRELOAD"] = lib
            if opts:
                env["NODAL_OPTIONS"] = opts
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            text = proc.stdout.read()
            proc.stdout.close()
            _, status, ru = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode != 0:
                sys.exit("ab.py: %s under %s exited with %d:\n%s" % (cmd[0], name, proc.returncode, text))
            picked = text if not lines else "\n".join(
                ln for ln in text.splitlines() if all(kv in ln.split() for kv in lines))
            for f in fields:
                v = re.search(r"\b%s=([0-9.]+)" % re.escape(f), picked)
                own[(name, f)].append(float(v.group(1)) if v else float("nan"))
            m = re.search(r"peak_rss_mib=([0-9.]+)", text)
            kib = [float(x) for x in re.findall(r"\bpeak_rss_kib=([0-9]+)", text)]
            rss = float(m.group(1)) if m else max(kib) / 1024.0 if kib else ru.ru_maxrss / 1024.0
            user, sys_t, faults = ru.ru_utime, ru.ru_stime, ru.ru_minflt
            runs[name].append((user + sys_t, sys_t, faults, rss, ru.ru_nvcsw, ru.ru_nivcsw))
    base = None
    for name, _, _ in configs:
        v = runs[name]
        cpu = [x[0] for x in v]
        med = statistics.median(cpu)
        base = base or med or 1.0
        sys_t = [x[1] for x in v]
        rss = [x[3] for x in v]
        print("%-12s cpu %.3f s [%.3f-%.3f] x%.2f  sys %.3f s [%.3f-%.3f]  faults %.0f  csw %.0f+%.0f  "
              "peak rss %.1f MiB [%.1f-%.1f]" % (
                  name, med, min(cpu), max(cpu), med / base, statistics.median(sys_t), min(sys_t), max(sys_t),
                  statistics.median(x[2] for x in v), statistics.median(x[4] for x in v),
                  statistics.median(x[5] for x in v), statistics.median(rss), min(rss), max(rss)))
    for f in fields:
        first = own[(configs[0][0], f)]
        for name, _, _ in configs:
            v = own[(name, f)]
            q = statistics.quantiles(v, n=4) if len(v) > 1 else [v[0]] * 3
            ratios = [a / b for a, b in zip(v, first) if b]
            rq = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
            print("%-12s %s median %s [quartiles %s-%s] x%.3f (per-repetition ratios: median x%.3f, "
                  "quartiles %.3f-%.3f)" % (name, f, num(statistics.median(v)), num(q[0]), num(q[2]),
                                            statistics.median(v) / statistics.median(first),
                                            statistics.median(ratios), rq[0], rq[2]))
        for a, b in pairs:
            ratios = [x / y for x, y in zip(own[(a, f)], own[(b, f)]) if y]
            rq = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
            diffs = [x - y for x, y in zip(own[(a, f)], own[(b, f)])]
            dq = statistics.quantiles(diffs, n=4)[::2] if len(diffs) > 1 else diffs * 2
            print("%-12s %s %s / %s per repetition: median x%.3f, quartiles %.3f-%.3f (differences: median %s, "
                  "quartiles %s-%s)" % ("", f, a, b, statistics.median(ratios), rq[0], rq[2],
                                        num(statistics.median(diffs)), num(dq[0]), num(dq[1])))


if __name__ == "__main__":
    main(sys.argv)
