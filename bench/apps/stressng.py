#!/usr/bin/python3
"""bench/apps/stressng.py - stress-ng's malloc stressor under the column's
allocator.

Runs `stress-ng --malloc W --malloc-ops N --metrics-brief` with the allocator
preloaded (see common.py). Each of the W worker processes (default 2) calls
malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign and free at
random on up to 65,536 live blocks of 1 B .. 64 KiB (stress-ng's defaults);
the run stops after N successful allocations in all (default 400,000), so
every column does the same work.

Reported: cpu_s (user + system seconds of stress-ng and its workers: the
figure to compare), user_s, sys_s, wall_s, and peak_rss_mib (the largest
peak RSS of stress-ng and its workers).
"""

import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-w", "--workers", type=int, default=2)
    ap.add_argument("-n", "--ops", type=int, default=400000)
    ap.add_argument("--pthreads", type=int, default=0, help="--malloc-pthreads (0: one thread per worker)")
    a = ap.parse_args()
    (binary,) = common.require("stress-ng")
    argv = [binary, "--malloc", str(a.workers), "--malloc-ops", str(a.ops), "--metrics-brief",
            "--timeout", "600"]
    if a.pthreads:
        argv += ["--malloc-pthreads", str(a.pthreads)]
    t0 = time.monotonic()
    p = subprocess.Popen(argv, env=common.target_env(binary), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    out = p.stdout.read()
    rc, ru = common.wait_usage(p)
    wall = time.monotonic() - t0
    for line in out.splitlines():
        if "malloc" in line or "fail" in line or "error" in line:
            common.note(line.strip())
    if rc != 0 or "successful run completed" not in out:
        sys.exit("stress-ng exited %d:\n%s" % (rc, out[-1000:]))
    common.result("stressng", {"workers": a.workers, "ops": a.ops, "pthreads": a.pthreads},
                  {"cpu_s": ru.ru_utime + ru.ru_stime, "user_s": ru.ru_utime, "sys_s": ru.ru_stime,
                   "wall_s": wall, "peak_rss_mib": common.maxrss_mib(ru)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
