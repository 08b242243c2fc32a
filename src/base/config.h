/*
 * config.h - nodal's compile-time geometry and build switches.
 *
 * Owns: every size and shift the allocator is built from, and the
 * _Static_asserts that tie them together. Nothing here depends on any other
 * nodal header, so every layer can include it.
 *
 *   segment (4 MiB, aligned to 4 MiB; owner of any pointer = p & ~(4 MiB-1))
 *   +-----------+--------------------+--------------------+-----+
 *   | header    | page 0 (rest of    | page 1             | ... |   small: 64 pages of 64 KiB
 *   | 16 KiB    |  the first page)   |                    |     |   medium: 8 pages of 512 KiB
 *   +-----------+--------------------+--------------------+-----+   large: runs of 64 KiB chunks
 *   huge blocks (past 1 MiB) get a mapping of their own, sized to fit and
 *   4 MiB-aligned; a freed one is kept a while for the next (huge.h).
 */
#ifndef ND_CONFIG_H
#define ND_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nodal.h"

#ifndef ND_DEBUG
#define ND_DEBUG 0            /* 0: release, 1: cheap invariant checks, 2: expensive ones */
#endif
#ifndef ND_STATS
#define ND_STATS 1            /* per-thread counters on the fast paths */
#endif
#ifndef ND_PREFETCH_LINES
#define ND_PREFETCH_LINES 0   /* cache lines of the next block a malloc prefetches (alloc.h) */
#endif
/* ND_TSAN: built with ThreadSanitizer (gcc or clang). */
#if defined(__SANITIZE_THREAD__)
#define ND_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ND_TSAN 1
#endif
#endif

/* "0.1.0", from the version macros of the public header (CMake reads the
   same macros, so the version is written in one place). */
#define ND_STR_(x) #x
#define ND_STR(x) ND_STR_(x)
#define NODAL_VERSION_STRING ND_STR(NODAL_VERSION_MAJOR) "." ND_STR(NODAL_VERSION_MINOR) "." ND_STR(NODAL_VERSION_PATCH)

#define ND_KiB ((size_t)1 << 10)
#define ND_MiB ((size_t)1 << 20)

/* ---- segments ---------------------------------------------------------- */
#define ND_SEG_SHIFT        22
#define ND_SEG_SIZE         ((size_t)1 << ND_SEG_SHIFT)
#define ND_SEG_MASK         (ND_SEG_SIZE - 1)
#define ND_SEG_HEADER_SIZE  (16 * ND_KiB)   /* segment header + page descriptors */
#define ND_HUGE_HEADER_SIZE (4 * ND_KiB)    /* huge segments: header + one descriptor */

/* ---- pages (nodal pages; kernel pages are "OS pages") ------------------ */
#define ND_SMALL_PAGE_SHIFT  16              /* 64 KiB */
#define ND_MEDIUM_PAGE_SHIFT 19              /* 512 KiB */
#define ND_SMALL_PAGE_SIZE   ((size_t)1 << ND_SMALL_PAGE_SHIFT)
#define ND_MEDIUM_PAGE_SIZE  ((size_t)1 << ND_MEDIUM_PAGE_SHIFT)
#define ND_SEG_MAX_PAGES     (ND_SEG_SIZE / ND_SMALL_PAGE_SIZE)   /* 64 */

/* Commit/purge bookkeeping unit inside a segment: one bit per 64 KiB chunk. */
#define ND_CHUNK_SHIFT ND_SMALL_PAGE_SHIFT
#define ND_CHUNK_SIZE  ((size_t)1 << ND_CHUNK_SHIFT)
#define ND_SEG_CHUNKS  (ND_SEG_SIZE / ND_CHUNK_SIZE)

/* ---- size classes ------------------------------------------------------ */
/* 16-byte quantum up to 128 B (8 classes), then 4 classes per doubling
   (spacing <= 25 %) up to 128 KiB: 8 + 4 * 10 = 48 classes. */
#define ND_QUANTUM          16
#define ND_CLASS_COUNT      48
#define ND_SMALL_MAX        (16 * ND_KiB)    /* classes <= this live on small pages */
#define ND_MEDIUM_MAX       (128 * ND_KiB)   /* largest size class */
#define ND_LOOKUP_MAX       1024             /* sizes <= this use a table */
/* Large blocks (runs of 64 KiB chunks in shared segments: large.h) up to
   and with 1 MiB, 16 chunks; past it, huge (a mapping each). It was 1 MiB
   - 4 KiB, so that a block of 1 MiB - 4 KiB and its 4 KiB header made an
   exact 1 MiB mapping; but a block of exactly 1 MiB, a common buffer size,
   then took a mapping of its own, which freed waits in the huge cache for
   a block of about 1 MiB and serves no other size: bench/shortlived -t 2
   held 2-4 MiB there at its peak beside its large pool's holes (branch
   h55g). In the pool its chunks serve every large size once freed; three
   fit a segment, and under an address-space limit the free chunks beside
   them are unmapped (nd_large_release). */
#define ND_LARGE_MAX        ND_MiB
#define ND_LARGE_SHARDS     4                /* shards of each large pool (large.h), each with its lock (lock.h) */
#define ND_ALIGN_NATURAL    ND_SEG_HEADER_SIZE /* every page start is aligned to this */

/* ---- nodes and the segment map ----------------------------------------- */
#define ND_MAX_NODES  NODAL_MAX_NODES
/* Memory tiers (tier.h: latency, bandwidth, capacity). */
#define ND_TIER_COUNT 3
#define ND_MAX_CPUS   4096
/* The segment map (segment.h): a byte per 4 MiB window of the user address
   space below 2^ND_VA_BITS (x86-64: 47 bits, aarch64: 48), in leaves of
   2^16 windows (256 GiB of address space, 64 KiB each) mapped when a
   mapping first lands in their range, under a static table of 1,024
   pointers (8 KiB); and the free fast path's table of 2^16 words (512 KiB). */
#define ND_VA_BITS          48
#define ND_SEGMAP_LEAF_BITS 16
#define ND_SEGMAP_LEAF_SIZE ((size_t)1 << ND_SEGMAP_LEAF_BITS)
#define ND_SEGMAP_TOP       ((size_t)1 << (ND_VA_BITS - ND_SEG_SHIFT - ND_SEGMAP_LEAF_BITS))
#define ND_SEGCACHE_SLOTS   ((size_t)1 << 16)

#define ND_CACHE_LINE 64
#define ND_BIN_BYTES  32                     /* one thread-cache bin (tcache.h): two to a cache line */

/* ---- geometry ties ----------------------------------------------------- */
_Static_assert((ND_SEG_SIZE & (ND_SEG_SIZE - 1)) == 0, "segment size must be a power of two");
_Static_assert(ND_SEG_MAX_PAGES == 64, "page masks are 64-bit words");
_Static_assert(ND_SEG_CHUNKS == 64, "chunk masks are 64-bit words");
_Static_assert(ND_SEG_HEADER_SIZE < ND_SMALL_PAGE_SIZE, "the header must leave room in page 0");
_Static_assert(ND_MEDIUM_MAX * 4 <= ND_MEDIUM_PAGE_SIZE, "a medium page holds >= 4 blocks");
_Static_assert(ND_SMALL_MAX * 4 <= ND_SMALL_PAGE_SIZE, "a small page holds >= 4 blocks");
_Static_assert(ND_MAX_NODES >= 1 && ND_MAX_NODES <= 1024, "the kernel's MAX_NUMNODES is 1024");
_Static_assert(ND_MAX_NODES % 64 == 0, "node masks are whole 64-bit words");
_Static_assert(ND_LOOKUP_MAX % ND_QUANTUM == 0, "lookup table steps by the quantum");

#if defined(__GNUC__)
#define nd_likely(x)   __builtin_expect(!!(x), 1)
#define nd_unlikely(x) __builtin_expect(!!(x), 0)
#define nd_inline      static inline __attribute__((always_inline))
#define nd_noinline    __attribute__((noinline))
#define nd_cold        __attribute__((cold, noinline))
/* Callers are told nothing of the function (noipa: gcc draws no
   conclusion such as noreturn from its body); clang, which has no such
   attribute, gets noinline. */
#if defined(__has_attribute)
#if __has_attribute(noipa)
#define nd_noipa       __attribute__((noipa))
#endif
#endif
#ifndef nd_noipa
#define nd_noipa       __attribute__((noinline))
#endif
/* A function every process that makes small requests runs (start-up,
   thread start and exit, the slow paths of small blocks, maintenance),
   also in a file whose other code runs only on request (CMakeLists.txt:
   ND_SOURCES): placed with the others in .text.hot, which the linker puts
   before the rest of the text, right before the fast paths (free.c and
   alloc.c, linked first). The kernel maps a library's code in aligned
   runs of 64 KiB around each page a process runs (fault-around), clipped
   to the mapping: start-up makes the rest of the text, from os.c's own
   code on, a mapping of its own and unmaps what of it start-up ran
   (os.c, nd_os_code_trim), so the code such a process keeps mapped is
   this code and the fast paths, 88 KiB, and no more (docs/how-it-works.md,
   "What every process holds"). Code only start-up runs is not nd_hot
   (it is unmapped after it). Only the placement (a section, not GCC's hot
   attribute): the code is the same. The list comes from callgrind runs of
   bench/'s small-block programs (batchq, larson, rptest, threadcost,
   mstress, shortlived; since stop 51 also xthread and threadchurn, and
   what runs only once a program has run a while: a slow fill's halving
   of a bin, a free of another thread's block by a thread that has not
   allocated, the look at a moved thread's node); a function that none of
   them runs stays in its file's place, and so do large.c's and huge.c's. */
#define nd_hot         __attribute__((section(".text.hot.nodal")))
/* A function the heap profile's samples run (prof=1) that lies in a file
   whose other code they do not run: tcache.c's, thread.c's and route.c's
   sample functions and large.c's path for a plain large block (a cell
   slab is one). Its section has a name outside ld's `.text.*`, so the
   link puts all of them together (an orphan section, one for every file)
   right after `.text`, whose end is the sample's own files (unwind.c,
   slab.c, prof.c: ND_SOURCES, CMakeLists.txt): the code a sample runs is
   one run of pages, about 6, where its functions lay on 12 pages spread
   over the text (larson -t 2 at its peak: docs/profiling.md, "Cost").
   Only the placement: the code is the same. */
#define nd_sample_path __attribute__((section("nodal_sample")))
#define nd_hidden      __attribute__((visibility("hidden")))
#define nd_public      __attribute__((visibility("default")))
#define nd_aligned(n)  __attribute__((aligned(n)))
/* The entry points whose instruction counts are pinned (malloc, free,
   nodal_malloc_node, nodal_free: bench/instr-per-op.sh) start on a 32-byte
   boundary, so that how much code comes before them does not decide how
   -mbranches-within-32B-boundaries pads their jumps: with nodal_free 16
   bytes past one, a two-byte nop took the place of prefixes, one
   instruction more per free. */
#define nd_entry       __attribute__((aligned(32)))
/* malloc starts on a cache line (override.c; free, right after it, then
   lands 160 bytes on, 32 past a line). The same instructions ran malloc/
   free pairs of 16 B-1 KiB 4-7 % slower with malloc 32 bytes past a line
   and free on one, where stop 72's changes elsewhere in the text had moved
   them (bench/micro -m pair -s 32: 3.47 against 3.24 ns a pair; the
   Intel VM of stops 69-72). Only the placement. */
#define nd_entry_line  __attribute__((aligned(64)))
#else
#error "nodal needs GCC or Clang"
#endif

/* Bits set in x. (__builtin_popcountll is a libgcc call without -mpopcnt.) */
static inline unsigned nd_popcount64(uint64_t x)
{
    x = x - ((x >> 1) & 0x5555555555555555ull);
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (unsigned)((x * 0x0101010101010101ull) >> 56);
}

/* Bounds that rise with demand (heap.h: a heap's pending purges; node.c:
   a node cache's dirty and mapped segments): each is kept as `raised`, 0
   at its base, else above it. nd_bound_of: the bound in force.
   nd_bound_aged: `raised` after a window (a maintenance pass, a sweep)
   whose high was `high`: as it was while the high reached half of the
   bound, else down by half at most and not below twice the high, 0 once
   that is the base or less. */
static inline size_t nd_bound_of(size_t raised, size_t base)
{
    return raised > base ? raised : base;
}

static inline size_t nd_bound_aged(size_t raised, size_t base, size_t high)
{
    if (raised <= base || high >= raised / 2)
        return raised;
    size_t to = 2 * high > raised / 2 ? 2 * high : raised / 2;
    return to > base ? to : 0;
}

/* The changes a heap (its pages set up and retired: heap.h, gauge_pages)
   or a large pool's shard (its blocks given out and taken back: large.c,
   gauge_active) holds back from the process's gauges of pages in use and
   active bytes before it adds them, which it also does at maintenance.
   They were added at each, read-modify-writes of lines every thread
   shares: two threads each cycling batches of 1,000 blocks of 16 KiB
   (bench/micro -m batch -s 16384 -t 2: 250 pages set up and retired a
   round) took 42 ns a pair against 31 (docs/results.md, stop 63).
   Reports add what is held back, so they read the gauges whole.
   The active bytes a holder keeps back stay in [0, 2 * ND_GAUGE_HELD):
   a change that takes them out of it adds all but ND_GAUGE_HELD to the
   gauge (of a fall, ND_GAUGE_HELD more than the fall: the holder keeps
   that as a credit against its next falls). So the gauge is never over
   what is in use and peak_active never over the most that was (a
   held-back fall while another holder added its rise put it there:
   shortlived -t 2 reported 88 MiB with at most 31 in use, stop 63); both
   are under it by less than 2 * ND_GAUGE_HELD a holder; and a holder
   writes the gauge once every ND_GAUGE_HELD or more of change. The gauge
   can read below 0 while less is in use than the holders keep (a signed
   count: nd_gauge_active_now). The pages of each class (no peak) go at
   the ND_GAUGE_EVENTS-th change. */
#define ND_GAUGE_EVENTS 32
#define ND_GAUGE_HELD   ((long)1 << 20)

/* Is a holder's `pending` (above) out of its band, [0, 2 * ND_GAUGE_HELD)? */
static inline bool nd_gauge_out_of_band(long pending)
{
    return (unsigned long)pending >= 2 * (unsigned long)ND_GAUGE_HELD;
}

/* What a holder of the active gauge's changes keeps back of its
   `pending`: all of it within the band, else ND_GAUGE_HELD. */
static inline long nd_gauge_held(long pending)
{
    return nd_gauge_out_of_band(pending) ? ND_GAUGE_HELD : pending;
}

/* Bits first..last (inclusive, 0 <= first <= last <= 63) of a 64-bit mask. */
static inline uint64_t nd_mask_range(unsigned first, unsigned last)
{
    uint64_t hi = last == 63 ? ~(uint64_t)0 : (((uint64_t)1 << (last + 1)) - 1);
    return hi & ~(((uint64_t)1 << first) - 1);
}

/* Bit i set <=> bits i..i+k-1 of m are all set (k >= 1; a run past bit 63
   never: the shifts bring in zeros). Two runs of len, t <= len apart, are
   one of len + t: the length doubles at each step, ceil(log2 k) of them
   (one per bit, k - 1, was 186 instructions of a 1 MiB block's request of
   565 in bench/micro -m batch -s 1m; docs/results.md, stop 64), and the
   last step overlaps two runs of len (k - len <= len). */
static inline uint64_t nd_mask_runs(uint64_t m, unsigned k)
{
    unsigned len = 1;
    for (; 2 * len <= k && m != 0; len *= 2)
        m &= m >> len;
    return len < k ? m & m >> (k - len) : m;
}

/* The lowest maximal run of set bits of m (m != 0): bits *first..*last. */
static inline void nd_mask_first_run(uint64_t m, unsigned *first, unsigned *last)
{
    unsigned a = (unsigned)__builtin_ctzll(m);
    uint64_t above = ~(m >> a);                  /* first clear bit at or above a */
    unsigned len = above == 0 ? 64 - a : (unsigned)__builtin_ctzll(above);
    *first = a;
    *last = a + len - 1;
}

/* Assertions in tiers, always compiled so release builds type-check them. */
void nd_assert_fail(const char *expr, const char *file, int line) nd_hidden __attribute__((noreturn, cold));
#define nd_assert(e)  do { if (ND_DEBUG >= 1 && !(e)) nd_assert_fail(#e, __FILE__, __LINE__); } while (0)
#define nd_assert2(e) do { if (ND_DEBUG >= 2 && !(e)) nd_assert_fail(#e, __FILE__, __LINE__); } while (0)

#endif /* ND_CONFIG_H */
