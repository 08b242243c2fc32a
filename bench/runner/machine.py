"""What a result file must record about where it came from (STYLE.md habit 13):
the git commit, the machine, the allocator package versions; and the Debian
packages the suite needs, installed when missing."""

import os
import platform
import subprocess
import sys

# Debian packages per purpose. The runner installs the missing ones as root.
PACKAGES = {
    "jemalloc": ["libjemalloc2", "libjemalloc-dev"],
    "mimalloc": ["libmimalloc2.0", "libmimalloc-dev"],
    "tcmalloc": ["libtcmalloc-minimal4"],
    "numa": ["libnuma1", "libnuma-dev"],
    "memkind": ["libmemkind0"],
    "build": ["cmake", "gcc"],
    "plots": ["python3-matplotlib"],
}
CALLGRIND_PACKAGES = ["valgrind"]
# The real programs of full mode (redis, sqlite, stress-ng). Not installed
# automatically (redis-server's package starts a system service): their rows
# are skipped, with a note, when these are missing.
APP_PACKAGES = ["libsqlite3-dev", "redis-server", "redis-tools", "stress-ng"]

# Packages whose versions go into every result header.
VERSIONED = ["libc6", "libjemalloc2", "libmimalloc2.0", "libtcmalloc-minimal4",
             "libnuma1", "libmemkind0", "gcc-12", "valgrind", "redis-server", "libsqlite3-0", "stress-ng"]


def _out(cmd, cwd=None):
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def installed(pkg):
    status = _out(["dpkg-query", "-W", "-f", "${Status}", pkg])
    return bool(status) and status.endswith(" installed")


def ensure_packages(pkgs, log):
    """Installs missing Debian packages (root) or exits naming them."""
    missing = [p for p in pkgs if not installed(p)]
    if not missing:
        return
    if os.geteuid() != 0:
        sys.exit("bench: missing Debian packages: %s\n"
                 "       install them with: sudo apt-get install -y %s"
                 % (" ".join(missing), " ".join(missing)))
    log("installing %s" % " ".join(missing))
    cmd = ["apt-get", "install", "-y", "--no-install-recommends"] + missing
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if subprocess.run(cmd, env=env).returncode != 0:
        subprocess.run(["apt-get", "update"], env=env)
        if subprocess.run(cmd, env=env).returncode != 0:
            sys.exit("bench: apt-get install %s failed" % " ".join(missing))


def package_versions():
    versions = {}
    for p in VERSIONED:
        v = _out(["dpkg-query", "-W", "-f", "${Version}", p])
        versions[p] = v if v else "not installed"
    return versions


def git_commit(repo):
    """(long, short) description of the code that ran: the commit and its date,
    and whether the tree had changes not in that commit (which files), e.g.
    ("1d92385 of 2026-11-30, with uncommitted changes to bench/run.py",
     "1d92385 + changes"). The long form goes into the result header, the short
    one into plot footers."""
    head = _out(["git", "-C", repo, "log", "-1", "--format=%h %cs"])
    if not head:
        return "not a git checkout", "no commit"
    commit, date = (head.split() + ["?"])[:2]
    # tracked files that differ from the commit (staged or not); untracked
    # files do not count. --no-optional-locks: this must not touch the index.
    diff = _out(["git", "--no-optional-locks", "-C", repo, "diff", "--name-only", "HEAD"]) or ""
    changed = [line for line in diff.splitlines() if line]
    if not changed:
        return "%s of %s (the tree matched the commit)" % (commit, date), commit
    shown = ", ".join(changed[:4]) + (" and %d more" % (len(changed) - 4) if len(changed) > 4 else "")
    return ("%s of %s, with uncommitted changes to %s" % (commit, date, shown),
            "%s + changes" % commit)


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _read(path, default="?"):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def machine_info():
    nodes = sorted(d for d in os.listdir("/sys/devices/system/node")
                   if d.startswith("node") and d[4:].isdigit()) \
        if os.path.isdir("/sys/devices/system/node") else []
    mem_kib = 0
    for line in _read("/proc/meminfo", "").splitlines():
        if line.startswith("MemTotal:"):
            mem_kib = int(line.split()[1])
    return {
        "host": platform.node(),
        "nproc": len(os.sched_getaffinity(0)),
        "cpu": _cpu_model(),
        "kernel": platform.release(),
        "memory": "%.1f GiB" % (mem_kib / 1048576),
        "numa_nodes": len(nodes) or 1,
        "thp": _read("/sys/kernel/mm/transparent_hugepage/enabled"),
        "loadavg": _read("/proc/loadavg"),
    }
