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

# Packages whose versions go into every result header.
VERSIONED = ["libc6", "libjemalloc2", "libmimalloc2.0", "libtcmalloc-minimal4",
             "libnuma1", "libmemkind0", "gcc-12", "valgrind"]


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
    head = _out(["git", "-C", repo, "rev-parse", "--short", "HEAD"])
    if not head:
        return "uncommitted"
    # --no-optional-locks: reading the status must not touch the index
    dirty = _out(["git", "--no-optional-locks", "-C", repo, "status", "--porcelain",
                  "--untracked-files=no"])
    return head + ("-dirty" if dirty else "")


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
