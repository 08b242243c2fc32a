"""What the real-program drivers (bench/apps/*.py) share.

A driver runs an installed program (the "target") under the allocator of the
current column, drives it, and prints result lines in the harness's format
(`result <workload> key=value ...`, see bench/harness.h).

The runner does not preload the driver itself: it passes the column's library
in BENCH_TARGET_PRELOAD, and the driver puts it into the target's
environment only. An empty BENCH_TARGET_PRELOAD is the glibc column. A target
that links another allocator (Debian's redis-server links libjemalloc) would
not get glibc's malloc that way, so for it the driver preloads libc.so.6
itself: the C library then comes first in the lookup order and its malloc,
free, realloc, calloc and malloc_usable_size serve the program. The
jemalloc-only entry points such a program also imports (mallctl, nallocx)
still resolve to the linked jemalloc, in every column alike.
"""

import os
import subprocess
import sys

OTHER_MALLOCS = ("libjemalloc", "libtcmalloc", "libmimalloc")


def links_other_malloc(binary):
    try:
        out = subprocess.run(["ldd", binary], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return any(lib in out for lib in OTHER_MALLOCS)


def libc_path():
    for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64"):
        p = os.path.join(d, "libc.so.6")
        if os.path.exists(p):
            return p
    return None


def target_env(binary):
    """The environment for the target: the column's allocator preloaded."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    pre = env.pop("BENCH_TARGET_PRELOAD", "")
    if not pre and links_other_malloc(binary):
        pre = libc_path() or ""
        if pre:
            note("%s links its own allocator: preloading %s for glibc's malloc" % (binary, pre))
    if pre:
        env["LD_PRELOAD"] = pre
    return env


def which(name):
    for d in os.environ.get("PATH", "/usr/bin:/bin").split(":"):
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return p
    return None


def require(*names):
    """Paths of the programs, or exit 77 (skipped) when one is missing."""
    paths = []
    for n in names:
        p = which(n)
        if not p:
            print("note: %s is not installed; skipped" % n, flush=True)
            sys.exit(77)
        paths.append(p)
    return paths


def note(msg):
    print("note: " + msg, flush=True)


def result(workload, params, metrics):
    parts = ["%s=%s" % kv for kv in params.items()]
    parts += ["%s=%.4g" % (k, v) if isinstance(v, float) else "%s=%s" % (k, v) for k, v in metrics.items()]
    print("result %s %s" % (workload, " ".join(parts)), flush=True)


def wait_usage(p):
    """Waits for a Popen child; returns (exit code, rusage). The rusage
    includes the child's own waited-for children (wait4)."""
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, ru


def status_kib(pid, field):
    """VmHWM, VmRSS, ... of a live process, in KiB (None if unknown)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def maxrss_mib(ru):
    return ru.ru_maxrss / 1024.0

