"""The allocators under test and how each one is put into a benchmark process.

A Variant is one column of a results table: a label, the library to
LD_PRELOAD (None: glibc's malloc), extra environment, extra program
arguments (e.g. the node backend "-b jepool"), and whether it is a peer
(peers define "best peer"; nodal and reference columns are compared to it).

Variant sets:
  dropin  glibc, jemalloc, mimalloc, tcmalloc (+ nodal): the same binary,
          only LD_PRELOAD differs
  node    node-targeted calls: numa_alloc_onnode, the jemalloc NUMA pool,
          memkind (a fixed kind per node; MEMKIND_HBW for one node)
          (+ nodal's node API and nodal's plain malloc), plus jemalloc's plain
          malloc as the seed's reference row
  app     the BST/YCSB configurations: numa/regular under each drop-in
          allocator, numa/numa with the jemalloc pool and memkind (+ nodal,
          and nodal with each --nodal-variants option set)
  chase   pointer chasing: plain malloc under each peer, the jemalloc pool,
          memkind, nodal's node API with huge_pages=0 and =1
  nodecost  the cost of node-bound memory per mechanism (bench/nodecost.c),
          one column per transparent-huge-page setting, nodal preloaded
"""

import atexit
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field

LIBDIR_SONAMES = {
    "jemalloc": "libjemalloc.so.2",
    "mimalloc": "libmimalloc.so.2",
    "tcmalloc": "libtcmalloc_minimal.so.4",
}
PEERS = ["glibc", "jemalloc", "mimalloc", "tcmalloc"]
MEMKIND_SONAME = "libmemkind.so.0"
# libjemalloc.so.2 needs more static TLS than glibc leaves for dlopen();
# jepool.c re-executes itself with this when it is missing.
JEPOOL_ENV = {"GLIBC_TUNABLES": "glibc.rtld.optional_static_tls=16384"}


_prof_dir = []


def _variant_env(opts):
    """NODAL_OPTIONS of a variant; with the heap profile on, its dumps go
    to a scratch directory removed at exit (not the current one)."""
    env = {"NODAL_OPTIONS": opts}
    if re.search(r"(^|,)prof(=1)?(,|$)", opts):
        if not _prof_dir:
            _prof_dir.append(tempfile.mkdtemp(prefix="nodal-bench-prof-"))
            atexit.register(shutil.rmtree, _prof_dir[0], True)
        env["NODAL_PROF_PREFIX"] = os.path.join(_prof_dir[0], "p.%p")
    return env


@dataclass
class Variant:
    name: str
    preload: str = None
    env: dict = field(default_factory=dict)
    args: list = field(default_factory=list)
    peer: bool = True

    def environ(self, base, target=False):
        """The process environment. target: the process is a driver of a real
        program (bench/apps/), which must not run under the allocator
        itself: the library goes into BENCH_TARGET_PRELOAD, and the driver
        preloads it into the program it starts (empty: glibc)."""
        env = dict(base)
        env.pop("LD_PRELOAD", None)
        env.pop("NODAL_OPTIONS", None)
        env.pop("BENCH_TARGET_PRELOAD", None)
        if target:
            env["BENCH_TARGET_PRELOAD"] = self.preload or ""
        elif self.preload:
            env["LD_PRELOAD"] = self.preload
        env.update(self.env)
        return env


def find_library(soname):
    """Path of a shared library by soname, from the loader cache."""
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    except OSError:
        out = ""
    for line in out.splitlines():
        parts = line.strip().split(" => ")
        if len(parts) == 2 and parts[0].split()[0] == soname and "x86-64" in parts[0]:
            return parts[1]
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"):
        p = os.path.join(d, soname)
        if os.path.exists(p):
            return p
    return None


class Allocators:
    """Resolves the libraries once and builds the variant sets."""

    def __init__(self, nodal_lib, nodal_options=None, only=None, nodal_variants=None):
        self.libs = {"glibc": None}
        for name, soname in LIBDIR_SONAMES.items():
            path = find_library(soname)
            if path:
                self.libs[name] = path
        self.nodal = nodal_lib            # path, or None when not available
        self.nodal_env = {"NODAL_OPTIONS": nodal_options} if nodal_options else {}
        self.only = only                  # --allocators filter, or None
        # --nodal-variants: extra nodal columns with other options, so knobs
        # are compared within one run: [(label, NODAL_OPTIONS), ...]
        self.nodal_variants = nodal_variants or []
        self.jepool_env = dict(JEPOOL_ENV)
        if "jemalloc" in self.libs:       # an absolute path also works in the VM
            self.jepool_env["BENCH_JEMALLOC"] = self.libs["jemalloc"]
        # memkind is dlopen()ed too; the VM runner adds the library (and,
        # through its ELF dependencies, what it needs) when the path is set
        self.memkind_env = {}
        memkind = find_library(MEMKIND_SONAME)
        if memkind:
            self.memkind_env["BENCH_MEMKIND"] = memkind

    def _keep(self, name):
        """--allocators keeps every column whose label has the name as a word
        (jemalloc keeps jemalloc, jemalloc-pool, regular/jemalloc, ...)."""
        if self.only is None:
            return True
        words = re.split(r"[-/_ =]", name)
        return any(o == name or o in words for o in self.only)

    def _filter(self, variants):
        return [v for v in variants if self._keep(v.name)]

    def dropin(self):
        vs = [Variant(n, self.libs[n]) for n in PEERS if n in self.libs]
        if self.nodal:
            vs.append(Variant("nodal", self.nodal, dict(self.nodal_env), peer=False))
            for label, opts in self.nodal_variants:
                vs.append(Variant("nodal " + label, self.nodal, _variant_env(opts), peer=False))
        return self._filter(vs)

    def node(self, numa_ops, other_ops):
        """numa_alloc_onnode is ~1000x slower: it gets its own op count."""
        vs = [Variant("numa_alloc_onnode", args=["-b", "numa", "-n", str(numa_ops)]),
              Variant("jemalloc-pool", env=dict(self.jepool_env), args=["-b", "jepool", "-n", str(other_ops)]),
              Variant("memkind", env=dict(self.memkind_env), args=["-b", "memkind", "-n", str(other_ops)]),
              Variant("memkind-hbw", env=dict(self.memkind_env), args=["-b", "memkind-hbw", "-n", str(other_ops)])]
        if self.nodal:
            vs.append(Variant("nodal-node", self.nodal, dict(self.nodal_env),
                              ["-b", "nodal", "-n", str(other_ops)], peer=False))
            vs.append(Variant("nodal-malloc", self.nodal, dict(self.nodal_env),
                              ["-b", "malloc", "-n", str(other_ops)], peer=False))
        if "jemalloc" in self.libs:
            vs.append(Variant("jemalloc-malloc", self.libs["jemalloc"],
                              args=["-b", "malloc", "-n", str(other_ops)], peer=False))
        return self._filter(vs)

    def app(self):
        vs = [Variant("regular/" + n, self.libs[n], args=["-b", "malloc"])
              for n in PEERS if n in self.libs]
        vs.append(Variant("numa/jemalloc-pool", env=dict(self.jepool_env), args=["-b", "jepool"]))
        vs.append(Variant("numa/memkind", env=dict(self.memkind_env), args=["-b", "memkind"]))
        vs.append(Variant("numa/memkind-hbw", env=dict(self.memkind_env), args=["-b", "memkind-hbw"]))
        if self.nodal:
            vs.append(Variant("regular/nodal", self.nodal, dict(self.nodal_env),
                              ["-b", "malloc"], peer=False))
            vs.append(Variant("numa/nodal", self.nodal, dict(self.nodal_env),
                              ["-b", "nodal"], peer=False))
            for label, opts in self.nodal_variants:
                vs.append(Variant("numa/nodal " + label, self.nodal, {"NODAL_OPTIONS": opts},
                                  ["-b", "nodal"], peer=False))
        return self._filter(vs)

    def chase(self):
        vs = [Variant(n, self.libs[n], args=["-b", "malloc"]) for n in PEERS if n in self.libs]
        vs.append(Variant("jemalloc-pool", env=dict(self.jepool_env), args=["-b", "jepool"]))
        vs.append(Variant("memkind", env=dict(self.memkind_env), args=["-b", "memkind"]))
        if self.nodal:
            for hp in ("0", "1"):
                opts = ",".join(filter(None, [self.nodal_env.get("NODAL_OPTIONS"), "huge_pages=" + hp]))
                vs.append(Variant("nodal-node hp=" + hp, self.nodal, {"NODAL_OPTIONS": opts},
                                  ["-b", "nodal"], peer=False))
        return self._filter(vs)

    def nodecost(self, modes=("default", "off", "on")):
        """One column per THP setting of nodecost -H; nodal is preloaded when
        available (its rows are skipped otherwise); huge_pages=1 goes with
        THP on."""
        base = self.nodal_env.get("NODAL_OPTIONS")
        vs = []
        for mode in modes:
            env = {}
            opts = ",".join(filter(None, [base, "huge_pages=1" if mode == "on" else None]))
            if opts:
                env["NODAL_OPTIONS"] = opts
            vs.append(Variant("thp-" + mode, self.nodal, env, ["-H", mode], peer=False))
        return vs       # not filtered by --allocators: the columns are settings

    def tier(self, ops):
        """tiercost: memkind's attribute kinds against nodal's tier call and
        its node call on the resolved node."""
        vs = [Variant("memkind", env=dict(self.memkind_env), args=["-b", "memkind", "-n", str(ops)])]
        if self.nodal:
            vs.append(Variant("nodal-tier", self.nodal, dict(self.nodal_env),
                              ["-b", "nodal-tier", "-n", str(ops)], peer=False))
            vs.append(Variant("nodal-node", self.nodal, dict(self.nodal_env),
                              ["-b", "nodal-node", "-n", str(ops)], peer=False))
        return self._filter(vs)

    def for_set(self, name, **kw):
        return {"dropin": self.dropin, "node": self.node, "app": self.app,
                "chase": self.chase, "nodecost": self.nodecost, "tier": self.tier}[name](**kw)


def shown_path(path, repo):
    """A path as a result header shows it: relative to the repository when
    inside it (build/libnodal.so.0.1.0), else only the file name."""
    if repo:
        rel = os.path.relpath(path, repo)
        if not rel.startswith(".."):
            return rel
    return os.path.basename(path)


def probe_nodal(build, bindir, override=None, log=print, repo=None):
    """Returns (path or None, status text). nodal counts as available only if
    libnodal.so exists and a benchmark program runs with it preloaded. The
    status names the library without machine-specific directories."""
    path = override or os.path.join(build, "libnodal.so")
    if not os.path.exists(path):
        return None, "not built (%s missing)" % shown_path(path, repo)
    path = os.path.realpath(path)
    shown = shown_path(path, repo)
    env = dict(os.environ, LD_PRELOAD=path)
    micro = os.path.join(bindir, "micro")
    try:
        r = subprocess.run([micro, "-m", "pair", "-n", "20000", "-t", "2"], env=env,
                           capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return None, "broken (%s: smoke test timed out)" % shown
    if r.returncode != 0:
        return None, "broken (%s: smoke test exited %d: %s)" % (
            shown, r.returncode, (r.stderr or "").strip().splitlines()[-1:] or "")
    version = "nodal"
    nodepair = os.path.join(bindir, "nodepair")
    if os.path.exists(nodepair):
        r = subprocess.run([nodepair, "-b", "nodal", "-n", "1000"], env=env,
                           capture_output=True, text=True, timeout=60)
        for line in r.stdout.splitlines():
            if line.startswith("note: nodal"):
                version = line[len("note: "):]
        if r.returncode != 0:
            log("warning: nodal's node API smoke test exited %d" % r.returncode)
    return path, "%s (%s)" % (version, shown)
