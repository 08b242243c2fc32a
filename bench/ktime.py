#!/usr/bin/env python3
"""ktime.py - where a program's kernel time goes, by cause, per allocator.

    bench/ktime.py [--hz F] REPS NAME=LIB[:OPTIONS] ... -- PROGRAM ARGS...

Runs PROGRAM REPS times under each allocator (interleaved, as bench/ab.py;
the same arguments: LIB is a path, several paths separated by commas, or
one of the aliases glibc, tc, mi, je) under `perf record -g -e cpu-clock -F F` (default 10,000
samples a second of each thread's CPU time), and sorts each kernel sample
by the outermost kernel entry of its call chain: futex (the program's and
the allocator's locks, condition variables, joins), page fault, mmap,
munmap, madvise, mprotect, sched_yield, clone/exit, a switch to another
thread on a system call's way back to user (resched: a futex wake that
woke a thread, mostly), another system call, or an interrupt / return to
user (irq: preemption, IPIs, the tick). It prints per
allocator the medians in milliseconds (a sample is 1/F s of CPU) and, when
the program prints them (BENCH_KSTAT=1 is set for it: bench/harness.c),
the timed region's sleeps (proc_nvcsw: voluntary context switches),
preemptions (proc_nivcsw) and minor faults (proc_minflt).

Why not the system time of getrusage: this kernel charges CPU time by the
tick (CONFIG_TICK_CPU_ACCOUNTING, HZ=250): each 4 ms tick goes whole to
user or system by where the CPU was at that instant, so a 0.2 s run has
~50 samples and its system time moves by 4 ms a sample (docs/results.md,
h50k). cpu-clock samples at 10 kHz are 40 times finer and come with the
call chain that says whose the kernel time is.

Needs perf (Debian's linux-perf) with cpu-clock sampling; no hardware
counters are used.

Example (the batch queue: its kernel time is the queue's futex waits):
    bench/ktime.py 5 nodal=build/libnodal.so tc=tc mi=mi -- \\
        build/bench/batchq -w 2 -n 4000000
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ab  # noqa: E402  (the NAME=LIB[:OPTIONS] arguments and the allocators' aliases)

# (cause, a kernel function that marks it), the first found from the outside in
CAUSES = [("futex", "__x64_sys_futex"), ("fault", "exc_page_fault"), ("mmap", "__x64_sys_mmap"),
          ("munmap", "__x64_sys_munmap"), ("madvise", "__x64_sys_madvise"),
          ("mprotect", "__x64_sys_mprotect"), ("yield", "__x64_sys_sched_yield"),
          ("clone/exit", "__x64_sys_clone"), ("clone/exit", "__x64_sys_clone3"),
          ("clone/exit", "__x64_sys_exit"), ("clone/exit", "do_exit")]
KEYS = ["user", "kernel", "futex", "fault", "mmap", "munmap", "madvise", "mprotect", "yield",
        "clone/exit", "resched", "syscall", "irq"]
OWN = ["proc_nvcsw", "proc_nivcsw", "proc_minflt"]


def usage():
    sys.exit(__doc__.split("\n\n")[1].strip())


def classify(script):
    """Counts of samples by cause from `perf script -F ip,sym` output."""
    c = Counter()
    for blk in script.split("\n\n"):
        frames = [ln.split() for ln in blk.strip().splitlines() if ln.strip()]
        if not frames:
            continue
        if not frames[0][0].startswith("ffffffff"):
            c["user"] += 1
            continue
        c["kernel"] += 1
        syms = [f[1] for f in frames if f[0].startswith("ffffffff") and len(f) > 1]
        cause = "syscall" if "do_syscall_64" in syms else "irq"
        for name, mark in CAUSES:
            if mark in syms:
                cause = name
                break
        else:
            if cause == "syscall" and "exit_to_user_mode_loop" in syms:
                cause = "resched"   # switched out on a system call's way back (after a wake-up, mostly)
        c[cause] += 1
    return c


def main(argv):
    hz = 10000
    if len(argv) > 2 and argv[1] == "--hz":
        hz = int(argv[2])
        argv = argv[:1] + argv[3:]
    if len(argv) < 4 or "--" not in argv:
        usage()
    sep = argv.index("--")
    try:
        reps = int(argv[1])
    except ValueError:
        usage()
    try:
        configs = ab.parse_configs(argv[2:sep], "ktime.py")
    except ValueError:
        usage()
    cmd = argv[sep + 1:]
    if not configs or not cmd:
        usage()
    runs = {name: [] for name, _, _ in configs}
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        for r in range(reps):
            k = r % len(configs)
            for name, lib, opts in configs[k:] + configs[:k]:
                env = dict(os.environ)
                env.pop("LD_PRELOAD", None)
                env["BENCH_KSTAT"] = "1"
                if opts:
                    env["NODAL_OPTIONS"] = opts
                # perf itself runs without the preload; the program under it with it
                wrapped = ["env"] + (["LD_PRELOAD=" + lib] if lib else []) + cmd
                p = subprocess.run(["perf", "record", "-q", "-g", "-e", "cpu-clock", "-F", str(hz), "-o", data,
                                    "--"] + wrapped, env=env, capture_output=True, text=True)
                if p.returncode != 0:
                    sys.exit("ktime.py: %s under %s exited with %d:\n%s%s" % (cmd[0], name, p.returncode,
                                                                              p.stdout[-2000:], p.stderr[-2000:]))
                s = subprocess.run(["perf", "script", "-i", data, "-F", "ip,sym"], capture_output=True, text=True)
                c = classify(s.stdout)
                for f in OWN:
                    m = re.search(r"\b%s=([0-9]+)" % f, p.stdout)
                    if m:
                        c[f] = int(m.group(1))
                runs[name].append(c)
    print("kernel time by cause, ms (median of %d runs; cpu-clock samples at %d Hz)" % (reps, hz))
    for name, _, _ in configs:
        v = runs[name]
        line = "%-10s" % name + "  ".join("%s %.1f" % (k, statistics.median(c[k] for c in v) * 1000.0 / hz)
                                          for k in KEYS)
        kern = [c["kernel"] * 1000.0 / hz for c in v]
        line += "  (kernel range %.1f-%.1f)" % (min(kern), max(kern))
        if all(f in c for c in v for f in OWN):
            line += "  timed region: sleeps %.0f preemptions %.0f minflt %.0f" % tuple(
                statistics.median(c[f] for c in v) for f in OWN)
        print(line)


if __name__ == "__main__":
    main(sys.argv)
