#!/usr/bin/env python3
"""peakmap.py - where a program's resident pages are at its peak, page by page.

    bench/peakmap.py [-r RUNS] [-i MS] [-l] [-p OBJ,...] LIB -- PROGRAM ARGS...

Runs PROGRAM (LIB LD_PRELOADed: a path, or glibc, tc, mi, je as in ab.py)
and polls its resident size (/proc/PID/statm) every MS milliseconds
(default 0.5). Each time it is 16 KiB past the largest seen, it stops the
process (SIGSTOP), reads /proc/PID/maps and the present bits of
/proc/PID/pagemap for every mapping, sorts each resident page into a
group by what holds it, and lets it go (SIGCONT). It prints the groups of
the largest snapshot (KiB), and the program's own VmHWM for comparison
(the poll can miss the last pages of a peak; it never adds any).

Groups: each loaded object's code (r-x), read-only data (r--), relro and
.data (rw- of the file) and .bss (the anonymous mapping right after it);
thread stacks (an anonymous mapping above a guard page), the main stack;
[heap] (brk); and the other anonymous memory, for nodal cut by 4 MiB
window: a window whose first bytes read as a segment header (kind,
page_shift, page_count, size: segment.h) is "seg header" (its first
16 KiB) and "seg blocks" (the rest, by kind; of a large segment, the
heap profile's cell slabs apart: "seg cell slabs", slab.h), anything else is "nodal
metadata / other anon" (thread records and caches, transfer stores, the
segment map's leaves, and the program's own mappings if it makes any).
With -l it takes no snapshot once the program has printed its first
result line (bench/'s programs print VmHWM there as peak_rss_kib, and
flush it): what comes after (the exit, the heap profile's exit dump)
is not the peak the line gives; a snapshot taken while the line was
already in the pipe is dropped (the program printed it, then ran on
into its exit before the poll read it). With -r RUNS it runs RUNS times and
prints each group's median. -p
LIB,libc.so.6,anon lists the last run's resident pages of those objects
(file offsets; .bss and anonymous pages: offsets in their mapping).
"""
import os
import signal
import statistics
import struct
import subprocess
import sys
import time

LIBDIR = "/usr/lib/x86_64-linux-gnu/"
ALIASES = {"glibc": "", "tc": LIBDIR + "libtcmalloc_minimal.so.4",
           "mi": LIBDIR + "libmimalloc.so.2", "je": LIBDIR + "libjemalloc.so.2"}
PAGE = os.sysconf("SC_PAGESIZE")
SEG = 4 << 20
DUMP = set()   # -p: objects (LIB, libc.so.6, anon) whose resident pages are listed
KINDS = {1: "small", 2: "medium", 3: "large", 4: "huge"}


def read_maps(pid):
    out = []
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            parts = line.split(None, 5)
            a, b = (int(x, 16) for x in parts[0].split("-"))
            name = parts[5].strip() if len(parts) > 5 else ""
            out.append((a, b, parts[1], name, parts[2]))
    return out


def present_pages(pm, a, b, anon=False):
    """The resident pages of [a, b); of an anonymous mapping (anon), only
    those written: a page read but never written maps the kernel's zero
    page, neither file-backed nor exclusive (pagemap bits 61, 56), which
    RSS does not count."""
    n = (b - a) // PAGE
    pm.seek(a // PAGE * 8)
    data = pm.read(n * 8)
    res = []
    for i, (e,) in enumerate(struct.iter_unpack("<Q", data)):
        if e >> 63 and not (anon and not (e >> 56) & 1 and not (e >> 61) & 1):
            res.append(a + i * PAGE)
    return res


def seg_kind(mem, base, cache):
    if base in cache:
        return cache[base]
    k = None
    try:
        mem.seek(base)
        h = mem.read(32)
        kind, shift, _bound, _ab, _node, count, size = struct.unpack("<8xBBBBhHQ", h[:24])
        if kind in KINDS and shift in (16, 19, 22) and 0 < count <= 64 and 0 < size and size % (64 << 10) == 0:
            k = KINDS[kind]
    except (OSError, struct.error):
        # the process runs on while it is read: a segment unmapped since its
        # line in maps reads short (xthread -p 2, 2026-12-06's full run)
        pass
    cache[base] = k
    return k


def is_cell_slab(mem, p, base):
    """Is p, a page of a large segment, the heap profile's cell slab (slab.h:
    a large block of one OS page, at a 64 KiB chunk's start, whose header
    reads refs, top, ncells, bytes: top in [512, bytes], at most 60 cells,
    bytes a whole number of OS pages up to 64 KiB, the first cell past the
    512-byte header), in use or freed (refs 0: a slab the large pool keeps
    resident for the next one, large.h)? The program's large blocks are its
    own: a block whose first 18 bytes read so by chance is not looked for."""
    if (p - base) % (64 << 10):
        return False
    try:
        mem.seek(p)
        refs, top, ncells, nbytes, off0 = struct.unpack("<IIIIH", mem.read(18))
    except (OSError, struct.error):
        return False
    return (refs <= 64 and 0 < nbytes <= (64 << 10) and nbytes % PAGE == 0 and 512 <= top <= nbytes
            and ncells <= 60 and (ncells == 0 or 512 <= off0 < top))


def snapshot(pid, lib):
    maps = read_maps(pid)
    groups = {}
    pagelist = []

    def add(g, n, pages=()):
        groups[g] = groups.get(g, 0) + n * PAGE // 1024
        for p in pages:
            pagelist.append((g, p))

    segcache = {}
    large_heads, slab_segs = {}, set()
    with open("/proc/%d/pagemap" % pid, "rb") as pm, open("/proc/%d/mem" % pid, "rb") as mem:
        prev = None
        for idx, (a, b, perm, name, _off) in enumerate(maps):
            if name in ("[vvar]", "[vsyscall]"):
                prev = (a, b, perm, name)
                continue
            pages = present_pages(pm, a, b, anon=not name.startswith("/"))
            if not pages:
                prev = (a, b, perm, name)
                continue
            if name.startswith("/"):
                obj = os.path.basename(name)
                if lib and os.path.realpath(name) == os.path.realpath(lib):
                    obj = "LIB"
                sect = {"r-xp": "code", "r--p": "rodata", "rw-p": "data", "r--s": "shared"}.get(perm, perm)
                add("%s %s" % (obj, sect), len(pages), [(name, p - a + int(_off, 16)) for p in pages] if obj in DUMP else ())
            elif name == "[stack]":
                add("main stack", len(pages))
            elif name == "[heap]":
                add("[heap] (brk)", len(pages))
            elif name.startswith("["):
                add(name, len(pages))
            elif prev is not None and prev[1] == a and prev[3].startswith("/") and prev[2] == "rw-p":
                obj = os.path.basename(prev[3])
                if lib and os.path.realpath(prev[3]) == os.path.realpath(lib):
                    obj = "LIB"
                add("%s bss" % obj, len(pages), [(prev[3] + " bss", p - prev[0]) for p in pages] if obj in DUMP else ())
            elif prev is not None and prev[1] == a and prev[2] == "---p" and b - a >= (1 << 20):
                add("thread stacks", len(pages))
            else:
                for p in pages:
                    base = p & ~(SEG - 1)
                    k = seg_kind(mem, base, segcache)
                    if k is None:
                        add("other anon (nodal metadata, arenas)", 1, [("%x-%x" % (a, b), p - a)] if "anon" in DUMP else ())
                    elif p - base < (16 << 10):
                        add("seg header", 1)
                        if k == "large":
                            large_heads[base] = large_heads.get(base, 0) + 1
                    elif k == "large" and is_cell_slab(mem, p, base):
                        add("seg cell slabs", 1)
                        slab_segs.add(base)
                    else:
                        add("seg blocks %s" % k, 1)
            prev = (a, b, perm, name)
    groups["_pages"] = pagelist
    # The header pages of the large segments that hold a cell slab (in
    # "seg header" too): what the profile's slabs add there at most.
    groups["_slab_seg_header"] = sum(n for b, n in large_heads.items() if b in slab_segs) * PAGE // 1024
    return groups


def run_once(lib, argv, interval, until_result=False, env=None):
    """One run: (the largest snapshot's total KiB, its groups, the peak
    in KiB, the program's output). env: the process's environment (else
    this one's, LD_PRELOAD=lib); until_result: no snapshot once the
    program printed a result line (-l)."""
    if env is None:
        env = dict(os.environ)
        if lib:
            env["LD_PRELOAD"] = lib
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    best, best_groups, hwm = 0, {}, 0
    statm = "/proc/%d/statm" % p.pid
    status = "/proc/%d/status" % p.pid
    early = b""
    if until_result:
        os.set_blocking(p.stdout.fileno(), False)

    def result_printed():
        """Reads what the program printed so far; has its result line come?"""
        nonlocal early
        try:
            early += p.stdout.read() or b""
        except (OSError, TypeError):
            pass
        return b"result " in early

    while p.poll() is None:
        if until_result:
            if result_printed():
                break
        try:
            with open(statm) as f:
                rss = int(f.read().split()[1]) * PAGE // 1024
            with open(status) as f:
                for line in f:
                    if line.startswith("VmHWM"):
                        hwm = int(line.split()[1])
        except (OSError, ValueError, IndexError):
            break
        try:
            started = "python" not in os.path.basename(os.readlink("/proc/%d/exe" % p.pid))
        except OSError:
            break
        if rss > best + 16 and started:
            try:
                os.kill(p.pid, signal.SIGSTOP)
                time.sleep(0.0005)
                g = snapshot(p.pid, lib)
                tot = sum(v for k, v in g.items() if not k.startswith("_"))
                if until_result and result_printed():
                    # printed before it stopped: this snapshot may be of
                    # its exit (the exit statistics, the profile's dump)
                    tot = 0
                if tot > best:
                    best, best_groups = tot, g
            except (OSError, ProcessLookupError):
                pass
            finally:
                try:
                    os.kill(p.pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
        time.sleep(interval)
    if until_result:
        os.set_blocking(p.stdout.fileno(), True)
    out = (early + p.communicate()[0]).decode(errors="replace")
    kib = [int(t.split("=")[1]) for t in out.split() if t.startswith("peak_rss_kib=")]
    mib = [int(float(t.split("=")[1]) * 1024) for t in out.split() if t.startswith("peak_rss_mib=")]
    hwm = max([hwm] + (kib or mib))   # peak_rss_kib where printed (peak_rss_mib's steps are 102 KiB)
    return best, best_groups, hwm, out


def main(argv):
    runs, interval, until_result = 1, 0.0005, False
    while argv and argv[0] in ("-r", "-i", "-p", "-l"):
        if argv[0] == "-l":
            until_result = True
            argv = argv[1:]
            continue
        if argv[0] == "-p":
            DUMP.update(argv[1].split(","))
        elif argv[0] == "-r":
            runs = int(argv[1])
        else:
            interval = float(argv[1]) / 1000
        argv = argv[2:]
    if len(argv) < 3 or argv[1] != "--":
        sys.exit(__doc__.split("\n\n")[1].strip())
    lib = ALIASES.get(argv[0], argv[0])
    if lib:
        lib = os.path.abspath(lib)
    results = [run_once(lib, argv[2:], interval, until_result)[:3] for _ in range(runs)]
    if DUMP:
        for g, (where, off) in results[-1][1]["_pages"]:
            print("page %s %s %#x" % (g.replace(" ", "_"), where, off))
    for r in results:
        for k in [k for k in r[1] if k.startswith("_")]:
            r[1].pop(k)
    keys = sorted({k for _, g, _ in results for k in g}, key=lambda k: -statistics.median(r[1].get(k, 0) for r in results))
    print("%-44s %9s   (median of %d runs; KiB)" % ("group", "KiB", runs))
    for k in keys:
        vals = [r[1].get(k, 0) for r in results]
        print("%-44s %9.0f   [%d-%d]" % (k, statistics.median(vals), min(vals), max(vals)))
    print("%-44s %9.0f   [%d-%d]" % ("total at the largest snapshot", statistics.median(r[0] for r in results),
                                      min(r[0] for r in results), max(r[0] for r in results)))
    print("%-44s %9.0f   [%d-%d]" % ("program's peak (VmHWM / peak_rss_mib)", statistics.median(r[2] for r in results),
                                      min(r[2] for r in results), max(r[2] for r in results)))


if __name__ == "__main__":
    main(sys.argv[1:])
