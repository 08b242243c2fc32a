#!/usr/bin/env python3
"""largesim.py - a model of nodal's large-block pool under bench/shortlived's churn.

What it answers: how much memory the large band (the pool's segments, the
emptied ones the node caches with their memory, and the huge cache) holds
at its high for a given geometry and placement, when nothing is purged
while the program runs (a block of shortlived lives ~0.3 ms, a purge delay
~400 lifetimes: docs/results.md, h53s). The figure that counts is the
band's resident high: the high-water, over the run, of the distinct OS pages
ever written and not purged (plus each segment's header), which is what
peak RSS sees: a block writes the pages of its usable size, not the rest
of its last chunk (bench/harness.c: bench_touch_pages).

The program (bench/shortlived.c): T threads x K slots; one step frees the
block of a random slot and allocates one in its place, its size drawn as
mixed_size() draws it (3 % of the steps log-uniform in 64 KiB+1 .. 1 MiB);
the threads' steps interleave one for one, each filling its K slots first.
Only the blocks past ND_MEDIUM_MAX (128 KiB) are modelled: smaller ones live
in size-class pages, another band.

The pool (src/heap/large.c, as of main 4b802c7), per geometry:
  - a segment has `chunks` usable chunks of `chunk` bytes after its header;
    a block takes a run of ceil(round4k(size) / chunk) chunks;
  - placement `today`: a run all of whose chunks were written (resident)
    first, the first that fits in list order; then the first run that fits
    in list order; a new segment goes to the end of the list;
    `fullest`: the same two passes, segments ordered by chunks in use, most
    first (so the emptiest drains); `arena`: one unbounded address-ordered
    segment (the floor of first fit: no segment edges), resident runs
    first; `arena-ff`: the same, plain first fit;
  - a pool keeps ND_LARGE_SPARE (1) empty segment, the one with the most
    written chunks; it gives the others to the node cache, which keeps at
    most ND_CACHE_DIRTY_MAX (4) with memory and purges the rest; a pool
    that needs a segment takes a cached one with memory first (the last
    cached), then a fresh one;
  - blocks past `large_max` are huge: a mapping each (4 KiB header), freed
    ones cached and reused by the next huge block that fits (never
    purged within the run).

Usage:
  bench/largesim.py [-t T] [-k K] [-n STEPS] [--seeds 1,2,3] [--config NAME ...]
  bench/largesim.py --list          the geometries it knows
Prints, per configuration, medians and ranges over the seeds, MiB:
live_high (the large blocks' own high, usable sizes), pool_high (the
large band's resident high: pool + cached segments), segs_high (segments
with memory at that high), huge_high (the huge cache's high), sum (the
two highs added, as the RSS adds them), the same less the first
configuration's in the same seed (the paired difference) and, with --verbose, the pool's
chunks in use each time it grew, by the segments it had (the real pool's
figures to check against: docs/results.md, h54s).
"""
import argparse
import math
import random
import statistics
import sys

KiB = 1024
MiB = 1024 * KiB
MEDIUM_MAX = 128 * KiB
LARGE_MAX = MiB - 4 * KiB
SPARE = 1
CACHE_DIRTY_MAX = 4

# name: (chunk bytes, usable chunks a segment, header bytes, large_max, placement)
CONFIGS = {
    "today":          (64 * KiB, 63, 16 * KiB, LARGE_MAX, "today"),
    "fullest":        (64 * KiB, 63, 16 * KiB, LARGE_MAX, "fullest"),
    "seg8m":          (64 * KiB, 127, 32 * KiB, LARGE_MAX, "today"),
    "seg16m":         (64 * KiB, 255, 64 * KiB, LARGE_MAX, "today"),
    "seg8m-fullest":  (64 * KiB, 127, 32 * KiB, LARGE_MAX, "fullest"),
    "seg16m-fullest": (64 * KiB, 255, 64 * KiB, LARGE_MAX, "fullest"),
    "chunk32k":       (32 * KiB, 127, 16 * KiB, LARGE_MAX, "today"),
    "chunk16k":       (16 * KiB, 255, 16 * KiB, LARGE_MAX, "today"),
    "chunk16k-fullest": (16 * KiB, 255, 16 * KiB, LARGE_MAX, "fullest"),
    "arena":          (64 * KiB, 1 << 14, 16 * KiB, LARGE_MAX, "arena"),
    "arena-ff":       (64 * KiB, 1 << 14, 16 * KiB, LARGE_MAX, "arena-ff"),
    "arena16k":       (16 * KiB, 1 << 16, 16 * KiB, LARGE_MAX, "arena"),
    "today-1m":       (64 * KiB, 63, 16 * KiB, MiB, "today"),
    "fullest-1m":     (64 * KiB, 63, 16 * KiB, MiB, "fullest"),
    "seg8m-1m":       (64 * KiB, 127, 32 * KiB, MiB, "today"),
    "seg8m-fullest-1m": (64 * KiB, 127, 32 * KiB, MiB, "fullest"),
    "seg16m-1m":      (64 * KiB, 255, 64 * KiB, MiB, "today"),
    "chunk16k-1m":    (16 * KiB, 255, 16 * KiB, MiB, "today"),
    "arena-1m":       (64 * KiB, 1 << 14, 16 * KiB, MiB, "arena"),
    "arena16k-1m":    (16 * KiB, 1 << 16, 16 * KiB, MiB, "arena"),
}


def log_uniform(rng, lo, hi):
    """bench/harness.c's rng_log_uniform."""
    u = rng.random()
    v = int(math.exp(math.log(lo) + u * (math.log(hi + 1) - math.log(lo))))
    return lo if v < lo else hi if v > hi else v


def mixed_size(rng):
    """shortlived.c's mixed_size: only the band past 64 KiB matters here."""
    band = rng.randrange(100)
    if band < 97:
        return 0   # a small or medium block: another band
    return log_uniform(rng, 64 * KiB + 1, MiB)


def events(threads, slots, steps, seed):
    """The program's allocations and frees past MEDIUM_MAX, in the order
    the interleaved threads make them: ('a', id, size) and ('f', id)."""
    rng = random.Random(seed)
    ev = []
    nid = 0
    slot = [[0] * slots for _ in range(threads)]   # 0: no large block there
    for k in range(slots):
        for t in range(threads):
            sz = mixed_size(rng)
            if sz > MEDIUM_MAX:
                nid += 1
                slot[t][k] = nid
                ev.append(("a", nid, sz))
    per = steps // threads
    rr = rng.randrange
    for _ in range(per):
        for t in range(threads):
            k = rr(slots)
            old = slot[t][k]
            if old:
                ev.append(("f", old))
            sz = mixed_size(rng)
            if sz > MEDIUM_MAX:
                nid += 1
                slot[t][k] = nid
                ev.append(("a", nid, sz))
            else:
                slot[t][k] = 0
    return ev


def find_run(mask, k):
    """Lowest i with bits i..i+k-1 all set in mask, or -1."""
    m, s = mask, 1
    while s < k and m:
        t = min(s, k - s)
        m &= m >> t
        s += t
    if not m:
        return -1
    return (m & -m).bit_length() - 1


class Seg:
    __slots__ = ("free", "touched", "pages", "blocks", "used")

    def __init__(self, chunks):
        self.free = (1 << chunks) - 1
        self.touched = 0    # chunks a block had (large.c's committed: placement)
        self.pages = 0      # OS pages written (what RSS counts)
        self.blocks = 0
        self.used = 0


class Model:
    def __init__(self, cfg, verbose=False):
        self.chunk, self.chunks, self.header, self.large_max, self.place = cfg
        self.segs = []          # the pool, in list order
        self.cache = []         # the node's cached segments (with memory or purged)
        self.blocks = {}        # id -> (seg, at, k, usable) or ('huge', mapping bytes)
        self.touched = 0        # OS pages written and not purged, pool + cache
        self.headers = 0        # segments mapped (their headers resident)
        self.live = 0
        self.live_high = 0
        self.high = 0           # pool + cache resident bytes, high-water
        self.segs_at_high = 0
        self.huge_free = []     # cached huge mappings (bytes)
        self.huge_bytes = 0     # mapped huge bytes (live + cached)
        self.huge_high = 0
        self.sum_high = 0       # the high of the two bands' sum
        self.grow = {}          # segments the pool had when it grew -> [chunks in use]
        self.verbose = verbose

    def resident(self):
        return self.touched * 4096 + self.headers * self.header

    def note(self):
        r = self.resident()
        if r > self.high:
            self.high = r
            self.segs_at_high = len(self.segs) + sum(1 for s in self.cache if s.touched)
        if r + self.huge_bytes > self.sum_high:
            self.sum_high = r + self.huge_bytes

    def order(self):
        if self.place == "fullest":
            return sorted(self.segs, key=lambda s: -s.used)
        return self.segs

    def new_seg(self):
        if self.verbose:
            n = len(self.segs)
            self.grow.setdefault(n, []).append(sum(s.used for s in self.segs))
        dirty = [s for s in self.cache if s.touched]
        if dirty:
            s = dirty[-1]
            self.cache.remove(s)
        elif self.cache:
            s = self.cache.pop()
        else:
            s = Seg(self.chunks)
            self.headers += 1
        self.segs.append(s)
        return s

    def alloc(self, bid, size):
        usable = (size + 4095) & ~4095
        if size > self.large_max:
            need = usable + 4096
            fit = [m for m in self.huge_free if need <= m <= 4 * need + 16 * MiB]
            if fit:
                m = min(fit)
                self.huge_free.remove(m)
            else:
                m = need
                self.huge_bytes += m
                self.huge_high = max(self.huge_high, self.huge_bytes)
            self.blocks[bid] = ("huge", m)
            self.note()
            return
        k = (usable + self.chunk - 1) // self.chunk
        s, at = None, -1
        ordered = self.order()
        if self.place != "arena-ff":
            for t in ordered:
                at = find_run(t.free & t.touched, k)
                if at >= 0:
                    s = t
                    break
        if s is None:
            for t in ordered:
                at = find_run(t.free, k)
                if at >= 0:
                    s = t
                    break
        if s is None:
            s = self.new_seg()
            at = find_run(s.free, k)
            assert at >= 0
        run = ((1 << k) - 1) << at
        s.free &= ~run
        s.touched |= run
        cpp = self.chunk // 4096
        pages = ((1 << (usable // 4096)) - 1) << (at * cpp)
        self.touched += bin(pages & ~s.pages).count("1")
        s.pages |= pages
        s.blocks += 1
        s.used += k
        self.blocks[bid] = (s, at, k, usable)
        self.live += usable
        self.live_high = max(self.live_high, self.live)
        self.note()

    def free(self, bid):
        b = self.blocks.pop(bid)
        if b[0] == "huge":
            self.huge_free.append(b[1])
            return
        s, at, k, usable = b
        s.free |= ((1 << k) - 1) << at
        s.blocks -= 1
        s.used -= k
        self.live -= usable
        if s.blocks == 0 and self.place not in ("arena", "arena-ff"):
            empty = [t for t in self.segs if t.blocks == 0]
            if len(empty) > SPARE:
                gone = min(empty, key=lambda t: bin(t.touched).count("1"))
                self.segs.remove(gone)
                self.cache.append(gone)
                dirty = [t for t in self.cache if t.touched]
                while len(dirty) > CACHE_DIRTY_MAX:
                    p = dirty.pop(0)   # the oldest with memory is purged
                    self.touched -= bin(p.pages).count("1")
                    p.touched = p.pages = 0

    def run(self, ev):
        for e in ev:
            if e[0] == "a":
                self.alloc(e[1], e[2])
            else:
                self.free(e[1])
        return self


def fmt(vals):
    vals = sorted(vals)
    return "%6.2f [%.2f-%.2f]" % (statistics.median(vals), vals[0], vals[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-t", type=int, default=2, help="threads (2)")
    ap.add_argument("-k", type=int, default=256, help="slots a thread (256)")
    ap.add_argument("-n", type=int, default=2000000, help="steps in all (2,000,000)")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--config", nargs="*", default=None, help="names (--list); all by default")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--verbose", action="store_true", help="the pool's chunks in use when it grew")
    a = ap.parse_args()
    if a.list:
        for n, c in CONFIGS.items():
            print("%-18s chunk %3d KiB, %5d chunks a segment, large up to %d B, %s"
                  % (n, c[0] // KiB, c[1], c[3], c[4]))
        return 0
    names = a.config or list(CONFIGS)
    for n in names:
        if n not in CONFIGS:
            sys.exit("largesim: no configuration %s (--list)" % n)
    seeds = [int(x) for x in a.seeds.split(",")]
    res = {n: [] for n in names}
    for sd in seeds:
        ev = events(a.t, a.k, a.n, sd)
        for n in names:
            m = Model(CONFIGS[n], a.verbose).run(ev)
            res[n].append(m)
            if a.verbose and m.grow:
                print("seed %d %s: chunks in use when the pool grew, by its segments: %s"
                      % (sd, n, "; ".join("%d: %d-%d (%d times)" % (g, min(v), max(v), len(v))
                                          for g, v in sorted(m.grow.items()))))
    print("largesim: -t %d -k %d -n %d, seeds %s; MiB, median [range]" % (a.t, a.k, a.n, a.seeds))
    print("%-18s %-20s %-20s %-6s %-20s %-20s %s" % ("config", "live_high", "pool_high", "segs", "huge_high", "sum",
                                                    "sum - first config's, same seed"))
    base = res[names[0]]
    for n in names:
        ms = res[n]
        print("%-18s %-20s %-20s %-6s %-20s %-20s %s" % (
            n, fmt([m.live_high / MiB for m in ms]), fmt([m.high / MiB for m in ms]),
            "%d-%d" % (min(m.segs_at_high for m in ms), max(m.segs_at_high for m in ms)),
            fmt([m.huge_high / MiB for m in ms]), fmt([(m.high + m.huge_high) / MiB for m in ms]),
            fmt([(m.high + m.huge_high - b.high - b.huge_high) / MiB for m, b in zip(ms, base)])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
