"""Instruction counts per malloc/free pair under valgrind's callgrind, which
are repeatable where timings on a shared machine are not.

Each measurement runs the program twice with op counts N1 < N2 and the same
fixed warm-up, and reports (Ir(N2) - Ir(N1)) / (N2 - N1): start-up, warm-up
and exit cost cancel. The "loop" row is micro -m empty, the loop and
escape() alone, so "instr_pair - loop" is the allocator's own share.
"""

import os
import subprocess
import tempfile

from .execute import status_of

N1, N2 = 200000, 600000


def _ir(out_file):
    with open(out_file) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise ValueError("no totals in " + out_file)


def count_run(argv, env, tmp):
    """argv under callgrind: (its instructions, its standard output)."""
    out = os.path.join(tmp, "cg.out")
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out] + argv
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (status_of(r.returncode), r.stderr.strip().splitlines()[-1:]))
    ir = _ir(out)
    os.unlink(out)
    return ir, r.stdout


def _count(argv, env, tmp):
    return count_run(argv, env, tmp)[0]


def per_op(argv_for, env):
    with tempfile.TemporaryDirectory() as tmp:
        a = _count(argv_for(N1), env, tmp)
        b = _count(argv_for(N2), env, tmp)
    return (b - a) / (N2 - N1)


def run(bindir, allocs, log):
    """Returns (samples, variants_by_group, problems)."""
    micro = os.path.join(bindir, "micro")
    nodepair = os.path.join(bindir, "nodepair")
    cxxnew = os.path.join(bindir, "cxxnew")
    samples, problems = [], []
    seq = [0]

    def record(group, variant, params, value):
        seq[0] += 1
        samples.append({"rep": 0, "seq": seq[0], "case": "callgrind", "group": group,
                        "variant": variant.name, "workload": "callgrind", "params": params,
                        "metric": "instr_pair", "value": value, "status": "ok"})

    dropin = allocs.dropin()
    loop = None
    for v in dropin:
        env = v.environ(os.environ)
        for mode in ("pair", "batch"):
            def argv(n, mode=mode):
                return [micro, "-m", mode, "-s", "32", "-t", "1", "-n", str(n), "-w", "20000"]
            try:
                x = per_op(argv, env)
            except Exception as e:      # one allocator failing must not stop the study
                problems.append("callgrind %s %s: %s" % (v.name, mode, e))
                continue
            log("  callgrind %-10s %-5s %7.1f instr/pair" % (v.name, mode, x))
            record("callgrind", v, {"mode": mode, "size": "32"}, x)
        if loop is None:
            loop = per_op(lambda n: [micro, "-m", "empty", "-s", "32", "-t", "1", "-n", str(n),
                                     "-w", "20000"], env)
            log("  callgrind loop overhead %.1f instr/iteration" % loop)
        if not os.path.exists(cxxnew):
            continue
        for mode in ("pair", "batch"):
            for api in ("new", "unsized", "malloc"):
                def argv(n, mode=mode, api=api):
                    return [cxxnew, "-m", mode, "-a", api, "-s", "32", "-t", "1", "-n", str(n),
                            "-w", "20000"]
                try:
                    x = per_op(argv, env)
                except Exception as e:
                    problems.append("callgrind cxxnew %s %s %s: %s" % (v.name, mode, api, e))
                    continue
                log("  callgrind %-10s C++ %-5s %-7s %7.1f instr/pair" % (v.name, mode, api, x))
                record("callgrind-cxx", v, {"mode": mode, "api": api, "size": "32"}, x)

    node_variants = [v for v in allocs.node(numa_ops=1, other_ops=1) if not v.name.startswith("numa_")]
    for v in node_variants:
        env = v.environ(os.environ)
        base_args = [a for i, a in enumerate(v.args) if a != "-n" and (i == 0 or v.args[i - 1] != "-n")]

        def argv(n, base_args=base_args):
            return [nodepair, "-s", "32", "-t", "1", "-n", str(n), "-w", "2000"] + base_args
        try:
            x = per_op(argv, env)
        except Exception as e:
            problems.append("callgrind %s: %s" % (v.name, e))
            continue
        log("  callgrind %-16s %7.1f instr/cycle" % (v.name, x))
        record("callgrind-node", v, {"size": "32"}, x)
    return (samples, {"callgrind": dropin, "callgrind-node": node_variants, "callgrind-cxx": dropin},
            problems, loop)
