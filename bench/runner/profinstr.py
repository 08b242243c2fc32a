"""The heap profile's CPU in instructions: each row of the profile's table
(report.PROF_GROUPS) counted under valgrind's callgrind with prof=1 and
without, at a reduced size.

Instructions are not time: they leave out what the profile's tables and
the unwinder's reads cost in cache misses (on larson -t 2 a sample is
about 1,000 instructions and 300 ns), so the report gives them beside the
time ratio, never instead of it. What they give is a count that repeats:
the rows' times move by +-5-30 % from run to run on a shared machine, their
instruction counts by 0-2 % (the threads that wait for each other spin a
varying number of times under valgrind's scheduler too).

Per row and column: instructions per operation in steady state, (Ir(N2) -
Ir(N1)) / (N2 - N1) from two runs that differ only in their size, so that
start-up, the first unwinds of each stack, thread creation and the exit
dump cancel; REPS such estimates per column, each from its own two runs.
"""

import os
import tempfile

from .callgrind import count_run
from .execute import parse_results

# Estimates per row and column, each from two runs.
REPS = 2


def _with(args, opt, value):
    """args with option opt's value replaced (or appended)."""
    out, i = [], 0
    while i < len(args):
        if args[i] == opt and i + 1 < len(args):
            i += 2
            continue
        out.append(args[i])
        i += 1
    return out + [opt, str(value)]


def units(case):
    """[(base args, size option, N1, N2, operations per unit of the size)]:
    one callgrind measurement per unit, each printing one result line (one
    row). xthread's rows are one -s size each, and its -x row alone (-M);
    the others' cases are one row each. Operations: objects (xthread: -n
    per pair), replacements (larson: -R rounds of -r per thread), steps,
    requests, loops (rptest)."""
    a = list(case.args)
    p = case.program
    if p == "xthread":
        opts = {a[i]: a[i + 1] for i in range(len(a) - 1) if a[i] in ("-s", "-x", "-n", "-p")}
        rest = [x for i, x in enumerate(a) if x not in opts and (i == 0 or a[i - 1] not in opts)]
        rest += ["-p", opts.get("-p", "1")]
        pairs = int(opts.get("-p", "1"))
        out = [(rest + ["-s", s], "-n", 100000, 400000, pairs) for s in opts.get("-s", "8").split(",")]
        if "-x" in opts:
            out.append((rest + ["-x", opts["-x"], "-M"], "-n", 100000, 400000, pairs))
        return out
    if p == "larson":
        return [(a, "-R", 2, 6, int(a[a.index("-r") + 1]) * int(a[a.index("-t") + 1]))]
    if p == "batchq":   # -i 0: no RSS sampler, whose instructions would follow the run's time
        return [(_with(a, "-i", 0), "-n", 200000, 800000, 1)]
    if p == "reqresp":
        return [(a, "-n", 20000, 80000, 1)]
    if p == "rptest":
        return [(a, "-n", 200, 800, 1)]
    if p == "mstress":
        return [(a, "-n", 100000, 400000, 1)]
    return []


def _count(argv, env, tmp):
    ir, stdout = count_run(argv, env, tmp)
    return ir, list(parse_results(stdout))


def run(bindir, todo, log, seq0=200000):
    """todo: [(case, [default variant, prof variant])]. Returns (samples,
    problems): one sample per row, column and estimate, metric instr_op,
    pass "prof-instr"."""
    samples, problems = [], []
    seq = seq0
    with tempfile.TemporaryDirectory() as tmp:
        for case, vs in todo:
            for base, opt, n1, n2, per in units(case):
                path = os.path.join(bindir, case.program)
                for rep in range(REPS):
                    for v in vs[rep % 2:] + vs[:rep % 2]:
                        env = v.environ(os.environ)
                        try:
                            a, _ = _count([path] + _with(base, opt, n1) + v.args, env, tmp)
                            b, lines = _count([path] + _with(base, opt, n2) + v.args, env, tmp)
                        except Exception as e:      # one row failing must not stop the table
                            problems.append("prof instructions %s %s %s: %s" % (case.id, " ".join(base),
                                                                                v.name, e))
                            continue
                        if len(lines) != 1:
                            problems.append("prof instructions %s %s: %d result lines" % (
                                case.id, " ".join(base), len(lines)))
                            continue
                        seq += 1
                        x = (b - a) / ((n2 - n1) * per)
                        samples.append({"rep": rep, "seq": seq, "case": case.id, "group": case.group,
                                        "variant": v.name, "workload": lines[0][0], "params": lines[0][1],
                                        "metric": "instr_op", "value": x, "status": "ok",
                                        "pass": "prof-instr"})
                        log("  %-22s %-24s %-12s %9.2f instr/op" % (
                            case.id, " ".join(_with(base, opt, n2)[-6:]), v.name, x))
    return samples, problems
