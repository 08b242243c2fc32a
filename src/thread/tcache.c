/*
 * tcache.c - thread caches (see tcache.h): creation, refilling bins from
 * the heap, flushing them back, growing and shrinking them, and the
 * statistics their positions imply.
 */
#include "tcache.h"

#include <errno.h>
#include <string.h>
#include "meta.h"
#include "msg.h"
#include "nursery.h"
#include "options.h"
#include "os.h"
#include "slab.h"
#include "topo.h"
#include "xfer.h"


#define ND_GC_MIN_SAMPLES 8

/* ---- creation ------------------------------------------------------------ */

/* The bytes a block of bin c counts for in the cache's budgets
   (tcache_bytes, tcache_total, the starting capacity): its class's size;
   under secure=1, whose bins hold blocks a class above their requests'
   own (the canary word, class.h), the size of the class below the bin's
   blocks, that of the bin's smallest requests without the canary. So a
   bin holds as many blocks as the default's bin for the same requests
   (1,000 blocks of 256 B fit the default's bin of 256 B and secure=1's
   of 320 B alike; requests of up to tcache_max are cached), and its
   bytes are up to one class step more (1.25x for 320 B; 2x at most,
   32-byte blocks counted as 16). */
static inline size_t nd_bin_counted_size(unsigned c)
{
    unsigned cls = nd_bin_class[c];
    if (nd_secure_on() && cls > 0 && cls < ND_CLASS_COUNT)
        return nd_class_size[cls - 1];
    return nd_class_size[c];
}

/* No cache: shared heaps, check=2, secure=2; under secure=1, node-bound
   caches (their free fast path would skip the canary check) and classes
   above ND_LOOKUP_MAX (the fast path does not pad those requests). */
static uint32_t nd_bin_capacity(unsigned bin, bool shared, bool bound)
{
    unsigned cls = nd_bin_class[bin];   /* (secure=1: the next class past ND_LOOKUP_MAX) */
    if (cls >= ND_CLASS_COUNT || (nd_secure_on() && bound))
        return 0;
    size_t size = nd_bin_counted_size(bin);   /* tcache_max too: secure=1 caches the default's requests */
    /* secure=1: an aligned request a padded class cannot serve at its own
       size lands in a bin further up (32 KiB aligned to 16 KiB: 48 KiB
       blocks, in the bin counted as 40 KiB): the bin is cached when a
       request of up to tcache_max lands in it, as the default caches that
       request. The canary word: 8 bytes (page.h). */
    size_t least = size;
    if (nd_secure_on() && nd_class_aligned_min(cls, sizeof(uint64_t)) < least)
        least = nd_class_aligned_min(cls, sizeof(uint64_t));
    if (shared || nd_opt(ND_OPT_check) >= 2 || nd_secure_full() || least > (size_t)nd_opt(ND_OPT_tcache_max))
        return 0;
    /* A medium class's bin (past ND_SMALL_MAX: 20-128 KiB) twice that
       worth: at 256 KiB a bin of 64 KiB blocks held 4, and a batch of them
       refilled and flushed it every 4 requests (micro -m batch -s 64k: 768
       instructions a pair, the slow paths most of it; docs/results.md,
       stop 67). Still within tcache_total, which all bins share. */
    size_t bytes = (size_t)nd_opt(ND_OPT_tcache_bytes);
    if (size > ND_SMALL_MAX && bytes <= SIZE_MAX / 2)
        bytes *= 2;
    size_t cap = bytes / size;
    if (cap > (size_t)nd_opt(ND_OPT_tcache_count))
        cap = (size_t)nd_opt(ND_OPT_tcache_count);
    if (cap == 0 && nd_opt(ND_OPT_tcache_count) > 0)
        cap = 1;
    return (uint32_t)cap;
}

/* The capacity a bin starts with, and the least the GC shrinks it to:
   ND_BIN_START_BYTES worth of blocks, 2 to 32 of them (at most cap_max);
   one block for a medium class (past ND_SMALL_MAX: 20-128 KiB).
   It doubles each time the bin runs dry and then overflows (a working set
   that does not fit), so a class the thread allocates in bursts reaches
   its full size in a few rounds, while a class it only frees blocks of
   (blocks of other threads, kept for a chain back to their page) stays
   small and pins few pages. A medium bin of two blocks held 40-256 KiB of
   each class a thread had touched, out of every other thread's reach
   (the transfer store gets only overflows): bench/shortlived -t 8, whose
   threads each use every medium class now and then, had 8.0 MiB of
   medium blocks in its caches at its peak for 6.3 MiB live (medians of
   7 runs); with one, 4.2 MiB, and the medium segments' resident bytes
   22.2 -> 16.2 MiB. A bin of one is full after its first free: the
   slow path checks that block against a second free (free.c). A slow path
   there is about 500 instructions for a block the program writes 5-32
   OS pages of; a class used in bursts grows as before (the batches of
   bench/batchq -s 49152, xthread -s 65536: docs/results.md, h49r). */
#define ND_BIN_START_BYTES 8192u
/* A bin that runs dry again and again (its thread hands out what it
   allocates: a producer) grows to ND_BIN_DRY_BYTES worth of blocks, or
   ND_BIN_DRY_MIN blocks, whichever is more; one whose working set does not
   fit (dry, then full) grows to cap_max. */
#define ND_BIN_DRY_BYTES 16384u
#define ND_BIN_DRY_MIN   64u
/* A bin whose fills since its last overflow took ND_RUN_BINS times its
   capacity or more (a run of requests that does not fit it: a thread
   allocating a batch, then freeing it) may grow past its cache's share of
   tcache_total, up to twice the share (never past tcache_total): under
   oversubscription the share holds the bins of the classes of 2 KiB and
   more at 2-4 blocks, and such a bin takes a slow path every 1-2 requests
   of its runs whatever its batches, while a bin whose requests and frees
   alternate around its edge (a random walk: Larson, shortlived) never
   fills that much between two overflows and stays within the share.
   rptest -t 8 (9 caches on 2 CPUs, a share of ~455 KiB; runs of about 28
   blocks per class, with the replacements that follow): the bins of
   2 KiB and more grow from 2-4 blocks to 8, each cache to about twice its
   share, and the fills of the classes above 1 KiB go from 484,000 to
   278,000; Larson -t 8's caches stay at their share. The bound stays a
   multiple of the share: twice what each cache may hold, however many
   threads. */
#define ND_RUN_BINS 8u
/* With CPUs shared, a bin may always grow to ND_BIN_SHARED_FLOOR bytes of
   capacity, whatever its cache's share (which still counts them): the
   share is in bytes, and the bins of the large classes, which run dry
   first, take all of it, so the small classes' bins stayed at 32-64
   blocks (16 B: 512 B to 1 KiB of capacity) and took a fill and an
   overflow every 30-60 of their requests, each costing what a fill of
   blocks of 16 KiB costs. rptest -t 8 (9 caches on 2 CPUs, a share of
   ~455 KiB): the fills of the classes of up to 512 B 90,000 -> 8,000,
   and of all 400,000 -> 330,000; Larson -t 8's peak unchanged, mstress
   -t 8's (90 % of its requests of 8-256 B) 36.0 -> 37.3 MiB, medians of
   13 runs ranging 31-46 (docs/results.md, h48c). A cache holds at most
   this much more per class of up to 8 KiB than its share. */
#define ND_BIN_SHARED_FLOOR 16384u
static uint32_t nd_bin_start_capacity(unsigned cls, uint32_t cap_max)
{
    size_t size = nd_bin_counted_size(cls);
    uint32_t n = (uint32_t)(ND_BIN_START_BYTES / size), least = size > ND_SMALL_MAX ? 1 : 2;
    n = n < least ? least : n > 32 ? 32 : n;
    return n < cap_max ? n : cap_max;
}
/* The most blocks a bin's first fill takes: ND_FIRST_FILL, or as many as
   make ND_FIRST_FILL_BYTES (at least one) for classes past a quarter of
   that. A thread that makes one request of a class of 512 B took 4
   blocks, 2 KiB of its node's nursery (or of its own page) written, for
   one; its fills double from there as before (tcache.h).
   A cache the nursery may serve (fill_from_one: a plain cache of a thread
   other than the process's first, secure off) takes one block at its
   first fill, and its fills grow by half from there (nd_bin_next_fill):
   a thread that makes a few requests of a class takes at most half as
   many again, not up to 4 + 8 (7 requests: 12 blocks, 5 of them ahead;
   now 1 + 2 + 3 + 4, 3). From the nursery each fill is whole pairs of
   cache lines (nd_bin_nursery_take): the nursery's blocks are its
   threads' in the order they asked, and two threads' first blocks on
   one line (1 block of 32 B each) had every free of one write the line
   the other's malloc read (micro -m pair -s 32 -t 2: x1.07 of the CPU,
   docs/results.md h50t). */
#define ND_FIRST_FILL_BYTES 1024u
/* The fewest blocks of class c that fill whole pairs of cache lines (the
   unit the L2's adjacent-line prefetcher fetches): 1 from 128 B blocks
   up, 2 of 64, 192 and 320 B, 4 of 32, 96, 160 and 224 B, 8 of 16, 48,
   80 and 112 B: fills from the nursery (whose blocks are its threads'
   in the order they asked) of whole pairs keep two threads' blocks off
   one pair of lines (nd_bin_nursery_take). Whole single lines were not enough: with one 64 B
   block a thread, micro -m realloc -t 2 took x1.17-1.26 of main
   1378f24's CPU with the same instructions (callgrind), x0.98 with
   pairs (lead's fix of h50t, 2026-12-05). */
#define ND_LINE_PAIR 128u
static inline size_t nd_bin_pair_blocks(unsigned c)
{
    size_t size = nd_bin_counted_size(c), pow2 = size & (0 - size);
    return ND_LINE_PAIR / (pow2 < ND_LINE_PAIR ? pow2 : ND_LINE_PAIR);
}
static uint32_t nd_bin_first_fill(const nd_tcache *tc, unsigned c)
{
    if (tc->fill_from_one)   /* from the nursery in whole pairs of lines: nd_bin_nursery_take */
        return 1;
    size_t n = ND_FIRST_FILL_BYTES / nd_bin_counted_size(c);
    return n < 1 ? 1 : n > ND_FIRST_FILL ? ND_FIRST_FILL : (uint32_t)n;
}
/* The bound of a bin's next fill after one of `fill` (tcache.h): twice
   that, but in a cache that fills from one, up to ND_FILL_HALF_END, half
   as much again: 1, 2, 3, 4, 6, 8, 12 from the nursery (36 blocks, in
   whole pairs of cache lines for the classes below 128 B: 8, 8, 8, 16
   blocks of 16, 48, 80 and 112 B, nd_bin_nursery_take; nursery.h),
   16 and 24 from the thread's own pages, then 32 and on as
   before. What a thread takes ahead of its requests (blocks waiting in
   its bins) is at most half of what it asked for, not all of it. The dry
   rule (nd_tcache_fill) counts the fills of 8 and 16 only, as a doubling
   bin's, so a bin's capacity is as before from its fill of 32 on. */
#define ND_FILL_HALF_END 32u
static inline uint32_t nd_bin_next_fill(const nd_tcache *tc, uint32_t fill)
{
    if (!tc->fill_from_one || fill >= ND_FILL_HALF_END)
        return fill * 2;
    return fill == 1 ? 2 : (fill & (fill - 1)) != 0 ? fill + fill / 3 : fill + fill / 2;
}
/* The blocks a from-one bin's fills of bounds 1, 2, 3, ... up to `fill`
   take together (1, 3, 6, 10, 16, 24, 36: nd_bin_next_fill). */
static uint32_t nd_bin_fills_through(const nd_tcache *tc, uint32_t fill)
{
    uint32_t f = 1, sum = 1;
    while (f < fill) {
        f = nd_bin_next_fill(tc, f);
        sum += f;
    }
    return sum;
}
/* A from-one bin's fill from the nursery: its blocks are its threads' in
   the order they asked, so each take is whole pairs of cache lines
   (nd_bin_pair_blocks(c) blocks: two threads' blocks never share a pair)
   and brings what the bin's fills took from there to the first whole
   pair at or past the sequence's total (nd_bin_fills_through). A bound
   whose total the fills before it reached already is skipped (*fill
   moves on to the first that is not: 8 blocks of 48 B stand for the
   fills of 1, 2 and 3 and 2 of the 4). So a thread of k requests of a
   class holds at most about k/2 blocks it did not ask for, as with fills
   of one block (1, 2, 3, 4, 6, 8, 12), plus less than a pair of lines:
   8, 8, 8, 16 blocks of 16, 48, 80 and 112 B where a first fill of a
   pair and growth by half from there took 8 and 12 (a thread of 9
   requests of 48 B kept 11 blocks it did not ask for), and whose takes
   past the first broke the pairs for the threads after it (12 blocks of
   48 B are 4.5 pairs). */
static uint32_t nd_bin_nursery_take(const nd_tcache *tc, unsigned c, uint32_t *fill)
{
    const uint32_t p = (uint32_t)nd_bin_pair_blocks(c);
    for (;;) {
        uint32_t to = nd_bin_fills_through(tc, *fill), from = to - *fill;
        uint32_t n = (to + p - 1) / p * p - (from + p - 1) / p * p;
        if (n != 0)
            return n;
        *fill = nd_bin_next_fill(tc, *fill);
    }
}
/* Does a new cache with these parameters start its bins' fills at one
   block (fill_from_one)? The caches nd_nursery_serves may serve. */
static bool nd_tcache_fills_from_one(uintptr_t tid, bool bound, bool shared)
{
    return !shared && !bound && tid != ND_TID_FIRST && !nd_secure_on();
}

/* The slots a bin has in the start area (tcache.h): twice its starting
   capacity (at most cap_max), so a class a thread holds a few dozen
   blocks of stays there; the bin moves on when its blocks need more
   (nd_bin_move), whatever its capacity. Not less: a thread whose bins
   hold 33-64 blocks would move them to the middle area, two to a page
   instead of eight (tried, a start room of once the starting capacity:
   threadcost 41.3 -> 37.7 KiB a thread at 64 threads, but nodal's
   bookkeeping at the peak of rptest -t 2 384 -> 432 KiB, larson -t 8
   688 -> 736, bench/peakmap.py -r 3). */
#define ND_BIN_START_ROOM 2u
static uint32_t nd_bin_start_room(unsigned cls, uint32_t cap_max)
{
    uint32_t n = ND_BIN_START_ROOM * nd_bin_start_capacity(cls, cap_max);
    return n < cap_max ? n : cap_max;
}
/* Has a bin a first room (tcache.h: in its near record, when its class
   has one), where it starts when its start room is larger? A thread that
   makes a few requests of a class holds at most 8 of its blocks in its
   bin (fills of 1, 2, 3, 4, 6 and 8, tcache.h), and the near records of
   the first 12 classes it uses, with their rooms, share the struct's
   first OS page with the bins, where their start rooms (65 slots each
   for the classes up to 256 B) spread the top slots a thread touches
   over two pages more (bench/threadcost: 4 pages of its cache a thread,
   3 with a first area of 16 slots a class after the struct, 2 with that
   area in the struct, 1 with the near records). A bin moves to its start
   room when its blocks need more (nd_bin_move): a busy thread's bins
   write their start rooms' pages. */
static bool nd_bin_has_first(unsigned cls, uint32_t cap_max)
{
    return cls < ND_FIRST_CLASSES && nd_bin_start_room(cls, cap_max) > ND_BIN_FIRST_ROOM;
}
_Static_assert(ND_FIRST_CLASSES == 19, "the classes below 1 KiB: those whose start room can exceed ND_BIN_FIRST_ROOM (ND_BIN_START_BYTES / 1 KiB = 8 blocks, twice that)");
/* Bin c's sentinel in its first room (in its near record), or NULL when
   its layout gives it none or its class has no near record. */
static inline void **nd_bin_first_sentinel(const nd_tcache *tc, unsigned c)
{
    unsigned k = tc->near_of[c];
    return nd_bin_lay(tc, c)->has_first && k != 0 ? (void **)&tc->near[k - 1].room[ND_BIN_FIRST_ROOM] : NULL;
}
/* The slots a bin has in the middle area (tcache.h), where it goes when it
   grows past its start room and while it holds at most ND_BIN_MID_ROOM
   blocks (2 KiB of slots): the bins of a thread's busy classes, most of
   which settle at 64-256 blocks (bench/larson -t 2: 43 of its 53 grown
   bins), share a page two by two there instead of taking a page each
   at the top of their large rooms (tcache_count slots, 16 KiB, apart).
   Only a bin whose cap_max exceeds it has one (the large room of the
   others is no bigger). */
#define ND_BIN_MID_ROOM 256u
static bool nd_bin_has_mid(unsigned cls, uint32_t cap_max)
{
    return cap_max > ND_BIN_MID_ROOM && nd_bin_start_room(cls, cap_max) < ND_BIN_MID_ROOM;
}
/* The slots a bin has in the large area: cap_max, and for a bin of a small
   class ND_EXTRA_MULT times that or the most a cache draws from the
   process's pool, in its blocks (ND_EXTRA_MULT x tcache_total, tcache.h),
   whichever is more (at most
   tcache_count), the room a bin whose batches cycle through the transfer
   store may grow into past tcache_bytes, drawing from the pool
   (nd_tcache_grow_past). That worth: with 4 x cap_max, batches of
   1,000 blocks of 4 KiB (micro -m batch -s 4096) fitted no room (256
   blocks), and each batch moved ~940 of its blocks out through the store
   and the pages and back: 161 instructions a pair against tcmalloc's 83
   (its thread cache held the batch); in a room of 1,024 they take no slow
   path, 74 instructions a pair, and the pairs' CPU went from 18.7 to 16.8
   ns (docs/results.md, stop 61). Address space only: a bin touches the slots
   it holds blocks in (the classes of 640 B-16 KiB have 410-1,536 slots
   more each than with 4 x cap_max: 120 KiB more address space a cache). */
static uint32_t nd_bin_room(unsigned bin, uint32_t cap_max)
{
    if (cap_max == 0 || !nd_class_is_small(nd_bin_class[bin]))
        return cap_max;
    size_t room = (size_t)ND_EXTRA_MULT * cap_max, count = (size_t)nd_opt(ND_OPT_tcache_count);
    size_t most = ND_EXTRA_MULT * (size_t)nd_opt(ND_OPT_tcache_total) / nd_bin_counted_size(bin);
    room = room > most ? room : most;
    room = room < count ? room : count;
    return room > cap_max ? (uint32_t)room : cap_max;
}

/* The kind a cache's free fast path compares pages' kind with (tcache.h). */
static unsigned nd_tcache_kind(bool shared, bool bound, int node)
{
    if (shared)
        return ND_KIND_NONE;
    if (nd_secure_on() && !bound)   /* secure=1: every plain free checks the block (nd_free_other_kind); secure=2: none is cached */
        return nd_secure_full() ? ND_KIND_NO_PAGE : nd_kind_of(false, node) | ND_KIND_SEALED;
    return nd_kind_of(bound, node);
}

void nd_tcache_follow_node(nd_tcache *tc)
{
    tc->kind = nd_tcache_kind(tc->heap.shared, tc->heap.bound, tc->heap.node);
}

uint32_t nd_tcache_look_arm[ND_CLASS_COUNT];
const uint32_t nd_tcache_look_watched[ND_CLASS_COUNT] = { [0 ... ND_CLASS_COUNT - 1] = 1 };

/* Threads beyond the CPUs share the CPUs' cache budget: while the process
   has more than two thread caches per CPU (nd_tcache_count, those of live
   and pooled threads; relaxed atomics), a cache grows only to its share of
   tcache_total x 2 x CPUs (at least an eighth of tcache_total), not to
   tcache_total: only as many threads run at a time as there are CPUs, and
   the blocks the others hold wait with them (a bin in long runs may take
   its cache to twice the share: ND_RUN_BINS; a bin of a small class
   whose batches cycle through the transfer store, and a full bin of its
   own heap's blocks, may draw from the process's pool past it:
   ND_EXTRA_CYCLES, nd_tcache_may_draw; every bin may hold
   ND_BIN_SHARED_FLOOR bytes). nd_tcache_cpus is set at start-up (0 until
   then: no sharing). */
static uint32_t nd_tcache_count;
static uint32_t nd_tcache_cpus;

static size_t nd_tcache_total_share(void)
{
    size_t total = (size_t)nd_opt(ND_OPT_tcache_total);
    size_t each = 2 * (size_t)nd_load_relaxed(&nd_tcache_cpus);
    size_t n = nd_load_relaxed(&nd_tcache_count);
    if (each == 0 || n <= each)
        return total;
    size_t share = total / n * each;
    return share > total / 8 ? share : total / 8;
}

/* Past tcache_total: a thread whose loops allocate, then free, more than
   its cache holds moves each loop's excess through the transfer store
   twice, out as an overflow and back as a fill, a slow path of several
   hundred instructions for every few blocks. A bin that does so in whole
   bins (its overflow sent the whole bin away, and the fills since took a
   whole bin back) ND_EXTRA_CYCLES times in a row (nd_bin_info.cycles) is
   one a bigger capacity would spare those moves. Such a bin, of a class
   up to 16 KiB, may grow its cache past tcache_total, or past its share
   of it while CPUs are shared (nd_tcache_total_share), by drawing the
   growth from one process-wide pool of ND_POOL_MULT x tcache_total
   (tcache.h; nd_tcache_extra: what every cache drew; each cache's own draw
   in its cap_extra, at most ND_EXTRA_MULT x tcache_total, given back as
   its GC shrinks it and when it is destroyed or lost). So a process's
   caches hold at most that much more than before however many threads it
   has, as tcmalloc's thread caches share one overall bound (32 MiB). The
   pool was ND_EXTRA_MULT x tcache_total, each cache's most now, until stop
   69: with CPUs shared each cache's even part of it (455 KiB of 9 caches
   on 2 CPUs) held a thread churning its own blocks in 8 (bench/mthread -t
   8, glibc's thread benchmark) to 150,000 fills and 164,000 overflows in
   5 M requests, x1.11 of tcmalloc's CPU; with 16 x, 36,000-45,000 and
   47,000-57,000, CPU x0.91-0.96, and rptest -t 8 x0.91-0.94, for 1.7 MiB
   more peak RSS in mthread -t 8 (22.2 MiB against tcmalloc's 31.9;
   docs/results.md, stop 69). Medium classes' cycles draw nothing: their bins of 2
   blocks of 40-64 KiB cycle in a random walk too (bench/mstress), and drew
   the whole pool there for 2 MiB more peak RSS and no CPU; a full bin of
   any class that holds only its own heap's blocks does draw (a thread
   churning its own blocks: nd_tcache_may_draw). rptest -t 2 (loops of
   1,000 blocks of 8 B-16 KiB, 2.1 MB a thread; within 1 MiB the bins of
   2-16 KiB held 4-8 blocks for 10-12 requests a loop): fills 319,000 ->
   94,000 and overflows 298,000 -> 113,000 for 4.8 M requests, CPU x0.87
   (docs/results.md, h45r). Oversubscribed, the same pool (h48c): rptest
   -t 8's 9 caches on 2 CPUs, each held to ~455 KiB, moved 3.2 M blocks
   each way through the store in 400,000 fills; with the pool (each
   cache at most its even part of it, nd_tcache_extra_draw) and
   ND_BIN_SHARED_FLOOR, 247,000 fills, CPU x0.94-0.97, while Larson -t
   8's bins, in a random walk, do not cycle and draw nothing. */
#define ND_EXTRA_CYCLES 4u
/* The most cycles a bin counts (nd_bin_info.cycles: 6 bits). */
#define ND_CYCLES_MAX 63u
_Static_assert(ND_EXTRA_CYCLES <= ND_CYCLES_MAX, "a bin's cycles reach ND_EXTRA_CYCLES");

/* A bin's own route (nd_bin_info.own_route, issue 18): a thread whose
   loops allocate a batch, then free it, and whose bin's batches do not
   fit, sends the excess through the transfer store each loop, out as
   overflows and back as fills. Alone it takes back its own blocks; beside
   other such threads their overflows and fills meet in the store's
   shards: thread A's overflow goes in, thread B's fill takes it, B frees
   A's blocks into its bin and its next overflow puts them back, or sends
   them to A's pages as remote frees when the store is full, and A carves
   or takes B's blocks in turn. Every block then lives on pages another
   core wrote last (micro -m batch -s 4096, batches of 1,000 blocks: 20.6
   ns a pair at 1 thread, 44-62 ns at 2-8 on main 35b5b2d; 563,000 of 1.1
   M blocks through the store, 9,000-12,000 remote frees at -t 4). So a
   bin that has cycled ND_OWN_CYCLES times in a row (cycles), one of whose
   cycles' fills took a block of another heap's page from the store
   (took_foreign: a thread alone never does), and whose full bin at an
   overflow holds only its own heap's blocks (nd_bin_holds_own: the
   blocks a thread hands to others, or frees for others, as rptest, larson
   and mstress do, are mixed, and those bins stay on the store) takes its
   own route: its overflows send its heap's blocks home to its pages (the
   store still takes other heaps' blocks, as with transfer=1), and its
   fills take from its heap, not from the store, until its cycles end (an
   overflow after fills that was not a cycle clears it). All on the slow
   paths: its fills and overflows; what the store still holds of the bin's
   blocks goes home at the next sweep. */
#define ND_OWN_CYCLES 4u
_Static_assert(ND_OWN_CYCLES <= ND_CYCLES_MAX, "a bin's cycles reach ND_OWN_CYCLES");
static size_t nd_tcache_extra;

/* Would tc's part of the pool take `more` bytes (nd_tcache_extra_draw's
   bounds, nothing drawn)? Its part: ND_EXTRA_MULT x tcache_total, or while
   CPUs are shared its even part of the pool if that is less. */
static nd_hot bool nd_tcache_extra_fits(const nd_tcache *tc, size_t more)
{
    size_t total = (size_t)nd_opt(ND_OPT_tcache_total), bound = ND_POOL_MULT * total, part = ND_EXTRA_MULT * total;
    size_t each = 2 * (size_t)nd_load_relaxed(&nd_tcache_cpus), n = nd_load_relaxed(&nd_tcache_count);
    if (each != 0 && n > each && bound / n < part)
        part = bound / n;
    return tc->cap_extra + more <= part && nd_load_relaxed(&nd_tcache_extra) + more <= bound;
}

/* Draws what tc's growth by `more` bytes takes past tcache_total (or its
   share) from the pool; false (nothing drawn) when the cache would pass
   ND_EXTRA_MULT x tcache_total, or, while CPUs are shared, its even part
   of the pool (ND_POOL_MULT x tcache_total / caches) if that is less, or
   the pool has not that much left. The even part (h48c, h49c, with the
   pool of ND_EXTRA_MULT x tcache_total then): with the whole pool open
   to each, rptest -t 8's first caches to cycle drew all of it (~2 MiB
   each), and while their threads waited for a CPU their blocks waited
   with them (only its owner can take a cache's blocks back, and it does
   so only when it runs: a thread of rptest -t 8 runs ~0.4 ms at a time
   and waits 1-2 ms for a CPU, docs/results.md, h49c); two parts each
   (~0.9 MiB of 9 caches): 9 % fewer fills (270,000 -> 247,000), and of
   the peak RSS that the whole pool had added (+12 MiB, 55.9 -> 68.0;
   faults 13,800 -> 17,000), a quarter (58.9, 14,700 faults; bench/ab.py
   11, load 16-21; h48c). One part each (~455 KiB): as many slow paths
   (fills +1 %, overflows -1 %) and 8 % fewer bytes waiting in caches
   (5.65 -> 5.17 MiB on average; h49c): the caches that drew two parts,
   the first to cycle, held them whether their threads ran or waited, and
   the others drew little. With the pool of 16 x since stop 69, each of
   rptest -t 8's 9 caches may draw 1.8 MiB: CPU x0.91-0.94, peak RSS within
   the runs' spread (43.9 against 44.1-44.3 MiB). */
static nd_hot nd_noinline bool nd_tcache_extra_draw(nd_tcache *tc, size_t more)
{
    size_t bound = ND_POOL_MULT * (size_t)nd_opt(ND_OPT_tcache_total);
    if (!nd_tcache_extra_fits(tc, more))
        return false;
    size_t cur = nd_load_relaxed(&nd_tcache_extra);
    do {
        if (cur + more > bound)
            return false;
    } while (!nd_cas_weak_acq_rel(&nd_tcache_extra, &cur, cur + more));
    tc->cap_extra += more;
    return true;
}

/* tc's capacity shrank by `less` bytes (a GC pass): as much of its draw
   goes back to the pool. */
static void nd_tcache_extra_give(nd_tcache *tc, size_t less)
{
    if (less > tc->cap_extra)
        less = tc->cap_extra;
    if (less != 0) {
        nd_sub_relaxed(&nd_tcache_extra, less);
        tc->cap_extra -= less;
    }
}

nd_bin_layout nd_tcache_layouts[ND_LAYOUT_COUNT][ND_CLASS_COUNT];
/* The bytes of a cache whose slots take slot_bytes: the struct, and the
   slots from the page after it (ND_TC_HEAD_BYTES); a cache without slots
   (a shared heap's) is the struct alone. */
static size_t nd_tcache_bytes(size_t slot_bytes)
{
    return slot_bytes != 0 ? ND_TC_HEAD_BYTES + slot_bytes : sizeof(nd_tcache);
}
/* The slots a cache of each kind has after its struct (nd_tcache_create). */
static uint32_t nd_tcache_layout_slots[ND_LAYOUT_COUNT];
/* The kind of cache (its nd_tcache_layouts row) of a heap: shared (no
   cache), bound to a node, or plain. */
static unsigned nd_tcache_layout_of(bool shared, bool bound)
{
    return shared ? ND_LAYOUT_NONE : bound ? ND_LAYOUT_BOUND : ND_LAYOUT_PLAIN;
}

/* Slots on an OS page of 4 KiB (the slots begin on one: ND_TC_HEAD_BYTES). */
#define ND_PAGE_SLOTS (4096u / sizeof(void *))
/* The slots to leave unused before an area of n rooms (room[i] slots and
   a sentinel each, one after the other) that would begin at slot `at`:
   a bin fills its room from the top (its sentinel) down, so a room whose
   sentinel sits near the start of an OS page has a bin of a few dozen
   blocks write two pages. The pad (less than a page) is the one that
   makes the least, over the rooms of bins that may hold ND_BIN_MID_ROOM
   blocks or more (cap[i], their cap_max), of their top slots on their
   sentinel's page the largest. The rooms of the
   middle area (257 slots apart: two to a page, the second's sentinel a
   slot further on each time) then all hold 238 or more blocks on one
   page (at the offset main 55f8196 had by chance, every other one held
   48: bench/larson -t 8's busy bins wrote a page more or less by where
   the struct ended). Address space only: less than a page a cache. The
   large area's rooms are placed one by one (nd_tcache_layout_make). */
static uint32_t nd_tcache_area_pad(uint32_t at, const uint32_t *room, const uint32_t *cap, unsigned n)
{
    uint32_t best = 0, best_least = 0;
    for (uint32_t pad = 0; pad < ND_PAGE_SLOTS; pad++) {
        uint32_t end = at + pad, least = UINT32_MAX;
        for (unsigned i = 0; i < n; i++) {
            end += room[i];
            uint32_t top = end % ND_PAGE_SLOTS < room[i] ? end % ND_PAGE_SLOTS : room[i];
            if (cap[i] >= ND_BIN_MID_ROOM && top < least)
                least = top;
            end++;
        }
        if (least != UINT32_MAX && least > best_least) {
            best_least = least;
            best = pad;
        }
    }
    return best;
}

/* The table of one kind of cache (tcache.h: nd_bin_layout): each bin's
   cap_max, whether it has a first room (in the struct: its near record's,
   the classes below 1 KiB) and its rooms in the three
   areas after the struct. The start
   area first, each bin's starting slots and sentinel one after the other
   (tcache.h: a thread that uses a few classes touches a page or two of
   slots, not a page per class); then the middle area, ND_BIN_MID_ROOM
   slots and a sentinel per bin that has a room there; then the large
   area, nd_bin_room slots and a sentinel per bin. The middle area after a
   pad, and each large room after its own, that keep the rooms' tops on
   one OS page (nd_tcache_area_pad). */
static nd_hot uint32_t nd_tcache_layout_make(nd_bin_layout *lay, bool bound)
{
    uint32_t end = 0, room[ND_CLASS_COUNT], cap[ND_CLASS_COUNT];
    unsigned n = 0;
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        lay[c].cap_max = nd_bin_capacity(c, false, bound);
        lay[c].has_first = lay[c].cap_max != 0 && nd_bin_has_first(c, lay[c].cap_max);   /* (in its near record) */
    }
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        if (lay[c].cap_max != 0) {
            end += nd_bin_start_room(c, lay[c].cap_max);
            lay[c].start_end = end++;
        }
    }
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++)
        if (lay[c].cap_max != 0 && nd_bin_has_mid(c, lay[c].cap_max)) {
            room[n] = ND_BIN_MID_ROOM;
            cap[n++] = lay[c].cap_max;
        }
    end += nd_tcache_area_pad(end, room, cap, n);
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++)
        if (lay[c].cap_max != 0 && nd_bin_has_mid(c, lay[c].cap_max)) {
            end += ND_BIN_MID_ROOM;
            lay[c].mid_end = end++;   /* (else 0: never a sentinel, the start area comes first) */
        }
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++)
        if (lay[c].cap_max != 0) {
            end += nd_bin_room(c, lay[c].cap_max);
            /* Its room later, past its slots' bottom, when its top
               min(cap_max, ND_BIN_MID_ROOM) slots would not be on one OS
               page (nd_tcache_area_pad: the large rooms are not a multiple
               of a page apart, nor all alike). */
            uint32_t top = end % ND_PAGE_SLOTS, need = lay[c].cap_max < ND_BIN_MID_ROOM ? lay[c].cap_max : ND_BIN_MID_ROOM;
            if (top < need)
                end += need - top;
            lay[c].slot_end = end++;
        }
    return end;
}

void nd_tcache_process_init(void)
{
    /* The kinds' tables, before the first cache (the options are read). */
    nd_tcache_layout_slots[ND_LAYOUT_PLAIN] = nd_tcache_layout_make(nd_tcache_layouts[ND_LAYOUT_PLAIN], false);
    nd_tcache_layout_slots[ND_LAYOUT_BOUND] = nd_tcache_layout_make(nd_tcache_layouts[ND_LAYOUT_BOUND], true);
    /* Can a thread change nodes? Only if CPUs of two nodes are served by
       two different nodes' memory, and only follow_thread looks. */
    bool moves = nd_opt(ND_OPT_follow_thread) && nd_topo_cpus_span_mem_nodes();
    uint32_t cpus = 0;
    for (int cpu = 0; cpu < nd_topo.cpu_count; cpu++)
        cpus += nd_topo.cpu_node[cpu] >= 0;
    nd_store_relaxed(&nd_tcache_cpus, cpus);
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        size_t n = moves ? ND_LOOK_BYTES / nd_bin_counted_size(c) : ND_TICK_PERIOD;   /* (secure=1: bin 0) */
        nd_store_relaxed(&nd_tcache_look_arm[c], n < ND_LOOK_MIN ? ND_LOOK_MIN : n > ND_TICK_PERIOD ? ND_TICK_PERIOD : (uint32_t)n);
    }
}

/* The most requests of class c a tick of tc is armed with: a plain
   cache's look at its CPU's node comes at least every tc->look_arm[c] of
   them (nd_tcache_look_arm, or 1 while watched). */
static inline uint32_t nd_tcache_arm_max(const nd_tcache *tc, unsigned c)
{
    uint32_t n = tc->look_arm != NULL ? nd_load_relaxed(&tc->look_arm[c]) : 0;
    return n != 0 ? n : ND_TICK_PERIOD;
}

nd_hot nd_tcache *nd_tcache_create(uintptr_t tid, int node, bool bound, bool shared)
{
    unsigned layout = nd_tcache_layout_of(shared, bound);
    size_t slots = nd_tcache_layout_slots[layout];
    /* The slots need no zeroing: only [cur, empty) of a bin is ever read.
       Nor are they touched here: a bin gets its slots (and its sentinel is
       written) when the thread first uses its class (nd_bin_activate).
       The struct's first OS page holds the bins, the cache's fields, the
       near records (the cold parts and first rooms of the first 12
       classes the thread uses) and the heap's first line; the pages
       after it the heap's page queues, the other classes' cold parts,
       the heap's other counters and the cold tail; the start area begins
       on the page after the struct (ND_TC_HEAD_BYTES): a thread that uses
       a few classes writes the struct's first page and no other
       (bench/threadcost: 1 page of its cache a thread; a cache with
       slots is a mapping of its own, page-aligned, meta.c). Nor does the
       allocation pre-touch the struct (a fresh mapping is zero): the
       heap's first line is written below, the cold parts at their
       class's first use (a recycled cache's struct is zeroed whole by
       meta.c, its slots are not). */
    nd_tcache *tc = nd_meta_alloc_untouched(nd_tcache_bytes(slots * sizeof(void *)), sizeof(nd_tcache));
    if (tc == NULL)
        return NULL;
    tc->layout = (uint8_t)layout;
    tc->fill_from_one = nd_tcache_fills_from_one(tid, bound, shared);
    tc->look_arm = !shared && !bound ? nd_tcache_look_arm : NULL;
    /* The bins are all zero (no slots, tick 0) and so are their cold
       parts: each is set up when its class is first used
       (nd_bin_info_init), so the cold parts of the classes a thread never
       uses, past the struct's second OS page, stay unwritten. */
    /* (The struct's first page, where the bins, the near records and the
       heap's first line are, is written here: counts are a load then a
       store, counters.h, and a page first loaded maps the shared zero
       page, whose store then costs a copy and a TLB shootdown. The pages
       of the heap's queues and of the other classes' cold parts and
       counters are left for the thread to write if it uses them.) */
    tc->slot_bytes = (uint32_t)(slots * sizeof(void *));
    tc->prof_slab_busy = 0;
    nd_heap_init(&tc->heap, tid, node, bound, tc->cstats);
    if (!shared)
        nd_add_relaxed(&nd_tcache_count, 1);
    tc->kind = nd_tcache_kind(shared, bound, node);
    if (nd_unlikely(nd_load_relaxed(&nd_tcache_prof_rate) != 0) && !shared)
        nd_tcache_prof_rearm(tc);   /* after the heap: its arming reads bound */
    return tc;
}

/* Is bin c's cold part set up (nd_bin_info_init)? Until its class is
   first used it is all zero (its period_left, never 0 once set), and so is
   its bin's tick. */
static inline bool nd_bin_info_is_set(const nd_bin_info *bi)
{
    return bi->period_left != 0;
}

/* The first use of bin c's class (a request counted, or a free into its
   bin, nd_bin_activate): its cold part gets its starting values and its
   tick `tick` requests of the one it is armed for: 0 from
   nd_tcache_count_request, whose request is that one (counted, as if
   the fast path had taken the tick to 0), 1 from a free (the next
   request takes the tick's slow path, which arms it for its whole
   period). Requests stay nreq + armed - tick, exactly. */
static nd_hot nd_noinline void nd_bin_info_init(nd_tcache *tc, unsigned c, int64_t tick)
{
    nd_assert(tc->near_of[c] == 0);
    if (tc->near_used < ND_NEAR_BINS && tc->layout != ND_LAYOUT_NONE) {   /* one of the first 12 classes a thread's cache uses: its near record */
        tc->near_used++;
        nd_store_relaxed(&tc->near_of[c], tc->near_used);
    }
    nd_bin_info *bi = nd_bin_info_of(tc, c);
    bi->period_left = ND_TICK_PERIOD;
    bi->low_water = ND_NO_SAMPLE;
    bi->fill = nd_bin_first_fill(tc, c);
    nd_store_relaxed(&bi->armed, 1);
    nd_store_relaxed(&tc->bins[c].tick, tick);
    /* prof=1: its first sample's gap drawn now, so that this request
       counts toward it (nd_tcache_prof_arm), as when a cache armed every
       bin for its first sample when it was made */
    if (nd_unlikely(nd_load_relaxed(&nd_tcache_prof_rate) != 0) && !tc->heap.shared && bi->prof_left == 0)
        bi->prof_left = (uint16_t)nd_tcache_prof_draw(tc, c);
}

/* Has bin c its slots yet (nd_bin_activate)? */
static inline bool nd_bin_is_active(const nd_tcache *tc, unsigned c)
{
    return tc->bins[c].empty != NULL;
}

/* The first use of bin c (a class with a cache): it takes its slots in
   the start area, at its starting capacity. Until then it has none
   (capacity 0, no slot or sentinel written), so a thread's cache holds
   resident slots only for the classes it uses, not tcache_count of every
   class; and those of the classes it uses share pages until a bin grows
   (nd_tcache_grow moves it to its large area). */
static nd_hot void nd_bin_activate(nd_tcache *tc, unsigned c)
{
    nd_bin *b = &tc->bins[c];
    const nd_bin_layout *lay = nd_bin_lay(tc, c);
    nd_assert(lay->cap_max != 0 && !nd_bin_is_active(tc, c));
    if (nd_unlikely(!nd_bin_info_is_set(nd_bin_info_of(tc, c))))   /* its first use a free: armed for one request */
        nd_bin_info_init(tc, c, 1);
    nd_bin_info *bi = nd_bin_info_of(tc, c);   /* (after its first use: its near record) */
    uint32_t start = nd_bin_start_capacity(c, lay->cap_max);
    void **first = nd_bin_first_sentinel(tc, c);
    uint32_t room = first != NULL ? ND_BIN_FIRST_ROOM : start;   /* (the start room holds at least start) */
    b->empty = first != NULL ? first : nd_tcache_slots(tc) + lay->start_end;
    *b->empty = NULL;
    b->cur = b->empty;
    b->low = b->empty - (start < room ? start : room);
    bi->cap = start;
    tc->cap_bytes += (size_t)start * nd_bin_counted_size(c);
    if (c >= ND_HEAP_CLASSES_FROM)   /* (heap.h: a block of c may be free here now; relaxed: a sweep's check reads it) */
        nd_store_relaxed(&tc->heap.classes, (uint16_t)(tc->heap.classes | ND_HEAP_CLASS_BIT(c)));
}

void nd_tcache_lost(const nd_tcache *tc)
{
    if (!tc->heap.shared)
        nd_sub_relaxed(&nd_tcache_count, 1);
    if (tc->cap_extra != 0)   /* its draw back to the pool */
        nd_sub_relaxed(&nd_tcache_extra, tc->cap_extra);
}

nd_hot void nd_tcache_destroy(nd_tcache *tc)
{
    nd_tcache_lost(tc);
    nd_assert(tc->secure == NULL);   /* secure.c detached it */
    nd_meta_free(tc, nd_tcache_bytes(tc->slot_bytes));
}

/* ---- the malloc slow path ----------------------------------------------- */

int64_t nd_tcache_prof_rate;
static nd_sample_path nd_noinline uint32_t nd_tcache_prof_arm(nd_tcache *tc, unsigned c, uint32_t done, bool *sample);

/* ln(x) for x > 0 without libm, to within 1e-11 (tests/unit/prof.c checks
   it against libm's): x = m * 2^e with m in [1, 2); c, the middle of m's
   sixteenth of [1, 2) (its top four bits), from a table with 1 / c, so
   ln m = ln c + ln(1 + r), r = (m - c) / c, |r| < 1/32; ln(1 + r) by its
   series to r^6 (error below |r|^7 / 7, 4e-12). No division nor loop:
   the atanh series before took one of each (a draw 79 instructions, now
   74, callgrind of micro -m pair -s 64 under prof_rate=8192; the
   division's latency is the larger part of the difference). The table is
   1 / c and ln c for c = 1 + (j + 1/2) / 16, j = 0..15, each the double
   nearest (Python's math.log). */
static const double nd_ln_tab[16][2] = {
    { 0.96969696969696972, 0.030771658666753687 },
    { 0.91428571428571426, 0.089612158689687138 },
    { 0.86486486486486491, 0.14518200984449789 },
    { 0.82051282051282048, 0.19782574332991987 },
    { 0.78048780487804881, 0.24783616390458127 },
    { 0.7441860465116279, 0.2954642128938359 },
    { 0.71111111111111114, 0.34092658697059319 },
    { 0.68085106382978722, 0.38441169891033206 },
    { 0.65306122448979587, 0.42608439531090009 },
    { 0.62745098039215685, 0.46608972992459924 },
    { 0.60377358490566035, 0.50455601075239531 },
    { 0.58181818181818179, 0.54159728243274441 },
    { 0.56140350877192979, 0.57731536503482361 },
    { 0.5423728813559322, 0.61180154110599294 },
    { 0.52459016393442626, 0.6451379613735847 },
    { 0.50793650793650791, 0.67739882359180614 },
};

nd_sample_path double nd_tcache_ln(double x)
{
    union { double d; uint64_t u; } v = { .d = x };
    int e = (int)((v.u >> 52) & 0x7ff) - 1023;
    const double *t = nd_ln_tab[(v.u >> 48) & 15];
    v.u = (v.u & ((1ull << 52) - 1)) | (1023ull << 52);   /* m in [1, 2) */
    double r = v.d * t[0] - 1;
    double series = r * (1 + r * (-1 / 2. + r * (1 / 3. + r * (-1 / 4. + r * (1 / 5. - r * (1 / 6.))))));
    return t[1] + series + e * 0.6931471805599453;
}

nd_sample_path int64_t nd_tcache_prof_gap(uint64_t *rng)
{
    /* xorshift64*: 53 random bits, u in (0, 1]. */
    uint64_t x = *rng ? *rng : nd_os_random() | 1;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *rng = x;
    double u = (double)(int64_t)(((x * 0x2545F4914F6CDD1Dull) >> 11) + 1) * (1 / 9007199254740992.0);   /* signed: one instruction */
    double gap = -nd_tcache_ln(u) * (double)nd_load_relaxed(&nd_tcache_prof_rate);
    return gap < 1 ? 1 : gap > 1e15 ? (int64_t)1e15 : (int64_t)gap;
}

/* prof=1: a new countdown for class c: the requests to its next sample,
   ceil(gap / size) for a gap of bytes drawn from the exponential (the
   request whose bytes cross the gap is the sample), or ND_PROF_LEFT_MAX
   of them with ND_PROF_LEFT_REDRAW when the gap is longer (32,767
   requests: 2 MiB of 64 B, a gap of 4 times the default rate's mean;
   16 bits, so that the countdown fits in the cold part's 40 bytes),
   whose end draws again. */
nd_sample_path nd_noinline uint32_t nd_tcache_prof_draw(nd_tcache *tc, unsigned c)
{
    uint64_t size = nd_bin_counted_size(c);   /* its requests' (secure=1: bin 0 holds 1,280 B blocks) */
    uint64_t n = ((uint64_t)nd_tcache_prof_gap(&tc->prof_rng) + size - 1) / size;
    return n <= ND_PROF_LEFT_MAX ? (uint32_t)n : ND_PROF_LEFT_MAX | ND_PROF_LEFT_REDRAW;
}

/* prof=1: takes the `done` requests of class c since the tick was armed
   off the bin's countdown; returns the requests to arm the tick with (the
   next sample's, at most ND_TICK_PERIOD) and sets *sample when the
   countdown ran out (this request is sampled). The same samples as a
   countdown of the bytes (ceil: the request that takes the bytes to 0 or
   below), with no division at a re-arm. Out of line, with the sample's
   code (config.h: nd_sample_path), not in the tick's slow path. */
static nd_sample_path nd_noinline uint32_t nd_tcache_prof_arm(nd_tcache *tc, unsigned c, uint32_t done, bool *sample)
{
    nd_bin_info *bi = nd_bin_info_of(tc, c);
    uint32_t left = bi->prof_left;
    if (left == 0) {   /* the first count since profiling started */
        left = nd_tcache_prof_draw(tc, c);
    } else {
        while (done >= (left & ND_PROF_LEFT_MAX)) {
            done -= left & ND_PROF_LEFT_MAX;
            if (!(left & ND_PROF_LEFT_REDRAW)) {   /* a sample: the next gap from here */
                *sample = true;
                done = 0;
            }
            left = nd_tcache_prof_draw(tc, c);
        }
        left -= done;
    }
    bi->prof_left = (uint16_t)left;
    left &= ND_PROF_LEFT_MAX;
    return left < ND_TICK_PERIOD ? left : ND_TICK_PERIOD;
}

/* Arms bin c's tick with `next` requests (the next sample's, or
   ND_TICK_PERIOD), or fewer: follow_thread's next look at the CPU's node,
   and the maintenance clock's period, come first. */
static void nd_tcache_arm(nd_tcache *tc, unsigned c, uint32_t next)
{
    nd_bin_info *bi = nd_bin_info_of(tc, c);
    uint32_t most = nd_tcache_arm_max(tc, c);
    if (next > most)
        next = most;
    if (next > bi->period_left)
        next = bi->period_left;
    nd_store_relaxed(&bi->armed, next);
    nd_store_relaxed(&tc->bins[c].tick, (int64_t)next);
}

void nd_tcache_watch(nd_tcache *tc, bool on)
{
    nd_assert(tc->look_arm != NULL);
    on = on && nd_load_relaxed(&nd_tcache_prof_rate) == 0;
    tc->look_arm = on ? nd_tcache_look_watched : nd_tcache_look_arm;
    if (!on)
        return;
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        nd_bin *b = &tc->bins[c];
        nd_bin_info *bi = nd_bin_info_of(tc, c);
        if (b->tick <= 1)
            continue;   /* its next request looks, and re-arms it */
        uint32_t done = bi->armed - (uint32_t)b->tick;   /* tick <= armed <= period_left */
        nd_store_relaxed(&bi->nreq, bi->nreq + done);
        bi->period_left -= done;
        nd_store_relaxed(&bi->armed, 1);
        nd_store_relaxed(&b->tick, 1);
    }
}

/* The requests of bin c so far (those the tick counted since it was
   armed too). Relaxed loads, and not instrumented by TSan: the statistics
   read it from other threads while the owner counts with plain stores
   (as nd_tcache_stats_add does); a re-arm seen between the two loads
   counts 0. */
__attribute__((no_sanitize("thread")))
static inline uint64_t nd_bin_requests(const nd_tcache *tc, unsigned c)
{
    int64_t armed = nd_load_relaxed(&nd_bin_info_of(tc, c)->armed), tick = nd_load_relaxed(&tc->bins[c].tick);
    return nd_load_relaxed(&nd_bin_info_of(tc, c)->nreq) + (uint64_t)(tick < armed ? armed - tick : 0);
}

uint64_t nd_tcache_requests(const nd_tcache *tc)
{
    uint64_t n = 0;
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++)
        n += nd_bin_requests(tc, c);
    return n;
}

nd_sample_path void nd_tcache_prof_rearm(nd_tcache *tc)
{
    if (tc->look_arm != NULL)
        tc->look_arm = nd_tcache_look_arm;   /* no watch under profiling */
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        nd_bin *b = &tc->bins[c];
        nd_bin_info *bi = nd_bin_info_of(tc, c);
        if (!nd_bin_info_is_set(bi))
            continue;   /* its first request arms it, for its sample too */
        uint32_t done = b->tick < (int64_t)bi->armed ? bi->armed - (uint32_t)b->tick : 0;
        nd_store_relaxed(&bi->nreq, bi->nreq + done);
        bi->period_left = done < bi->period_left ? bi->period_left - done : 1;
        bool sample = false;
        bi->prof_left = 0;
        nd_tcache_arm(tc, c, nd_tcache_prof_arm(tc, c, 0, &sample));
    }
}

nd_hot unsigned nd_tcache_count_request(nd_tcache *tc, unsigned c)
{
    if (nd_tcache_count_quick(tc, c))
        return 0;
    nd_bin *b = &tc->bins[c];
    if (nd_unlikely(!nd_bin_info_is_set(nd_bin_info_of(tc, c))))   /* the class's first request */
        nd_bin_info_init(tc, c, 0);
    nd_bin_info *bi = nd_bin_info_of(tc, c);   /* (after its first use: its near record) */
    b->tick = 0;   /* it was 1 (this request its last), or 0: the fast path counted it already */
    bi->inherited = 0;   /* this thread uses it (nd_tcache_reclaim) */
    uint32_t done = bi->armed;
    unsigned r = 0;
    nd_store_relaxed(&bi->nreq, bi->nreq + done);
    if (done >= bi->period_left) {
        bi->period_left = ND_TICK_PERIOD;
        uint32_t count = (uint32_t)(b->empty - b->cur);
        if (count < bi->low_water)
            bi->low_water = count;
        tc->gc_samples++;
        nd_heap_tick(&tc->heap);
        r = ND_COUNT_MAINTAIN;
    } else {
        bi->period_left -= done;
    }
    uint32_t next = ND_TICK_PERIOD;
    if (nd_unlikely(nd_load_relaxed(&nd_tcache_prof_rate) != 0) && !tc->heap.shared) {
        bool sample = false;
        next = nd_tcache_prof_arm(tc, c, done, &sample);
        if (sample)
            r |= ND_COUNT_SAMPLE;
    }
    nd_tcache_arm(tc, c, next);
    return r;
}

/* The slots bin c (active) has where it is now: its room in the start
   area, in the middle area, or in the large area (tcache.h). */
static inline uint32_t nd_bin_room_here(const nd_tcache *tc, unsigned c)
{
    const nd_bin_layout *lay = nd_bin_lay(tc, c);
    void *const *slots = nd_tcache_slots(tc), *const *empty = tc->bins[c].empty;
    if (lay->has_first && empty == nd_bin_first_sentinel(tc, c))
        return ND_BIN_FIRST_ROOM;
    if (empty == slots + lay->start_end)
        return nd_bin_start_room(c, lay->cap_max);
    if (lay->mid_end != 0 && empty == slots + lay->mid_end)
        return ND_BIN_MID_ROOM;
    return nd_bin_room(c, lay->cap_max);
}

/* Bin c's bottom after its capacity changed: cap slots below its
   sentinel, or as many as its room where it is holds (a bin that grew
   past its room stays there until its blocks need the slots:
   nd_bin_move). */
static inline void nd_bin_set_low(nd_tcache *tc, unsigned c)
{
    nd_bin *b = &tc->bins[c];
    uint32_t room = nd_bin_room_here(tc, c), cap = nd_bin_info_of(tc, c)->cap;
    b->low = b->empty - (cap < room ? cap : room);
}

/* Bin c left its room [lo, hi) (its slots and its sentinel) in the start
   or middle area: each OS page of it that no active bin's [low, empty]
   shares, c's new one included, gives its memory back (nd_os_purge); in
   a cache that is a mapping of its own (page-aligned: meta.c; one from
   the metadata chunk shares its edges with other objects, and keeps its
   pages). A slot is read only in [cur, empty] of the bin whose room holds
   it (low <= cur), after the bin wrote it, so a page given back is
   written again, zero-filled, only when a bin's blocks need it. The busy
   bins of a long-running thread leave their start and middle rooms one
   by one (bench/batchq's consumers: the 64 B bin's pages in both areas,
   12 KiB a thread), at a system call each time a page empties, at most
   twice a class in a thread's life. */
static nd_hot nd_noinline void nd_bin_room_release(const nd_tcache *tc, void **lo, void **hi)
{
    uintptr_t ps = nd_os_page_size();
    if (((uintptr_t)tc & (ps - 1)) != 0)
        return;
    for (uintptr_t p = (uintptr_t)lo & ~(ps - 1); p < (uintptr_t)hi; p += ps) {   /* (at most 3 pages: 257 slots) */
        bool keep = false;
        for (unsigned d = 0; d < ND_CLASS_COUNT && !keep; d++) {
            const nd_bin *o = &tc->bins[d];
            keep = o->empty != NULL && (uintptr_t)o->low < p + ps && p < (uintptr_t)(o->empty + 1);
        }
        if (!keep)
            (void)nd_os_purge((void *)p, ps);
    }
}

/* Bin c, whose capacity is past its room where it is, moves to the next
   area that holds it: from its first room to its start room when that
   holds the `need` slots its blocks need now, else on as from the start
   area; from the start area to its room in the middle area if it has one
   and its capacity fits there, else to its large area; from the middle
   area to its large area. Its cached blocks (the oldest deepest) go with
   it. Never back: it stays where it is when the GC shrinks it. Called
   when its blocks need the slots (a fill larger than its room here, a
   free into a bin holding all it can here), not when its capacity grows:
   a bin's capacity doubles as it runs dry (tcache.h), for bigger fills,
   and a class a thread makes a few requests of (fills of 4, 8 and 16
   blocks) had its capacity doubled twice and moved to the middle area,
   a page of slots more, for blocks that fit its start room
   (bench/threadcost: a thread's 160-byte bin). need is at most its
   capacity: the room it moves to holds it. The room it left gives its
   pages back (nd_bin_room_release). */
static nd_hot nd_noinline void nd_bin_move(nd_tcache *tc, unsigned c, size_t need)
{
    nd_bin *b = &tc->bins[c];
    nd_bin_info *bi = nd_bin_info_of(tc, c);
    const nd_bin_layout *lay = nd_bin_lay(tc, c);
    void **slots = nd_tcache_slots(tc), **to = slots + lay->slot_end;
    bool first = lay->has_first && b->empty == nd_bin_first_sentinel(tc, c);
    void **was = b->empty, **was_low = b->low;   /* (its room's bottom: a bin moves when full where it is) */
    if (first && need <= nd_bin_start_room(c, lay->cap_max))
        to = slots + lay->start_end;
    else if ((first || b->empty == slots + lay->start_end) && lay->mid_end != 0 && bi->cap <= ND_BIN_MID_ROOM)
        to = slots + lay->mid_end;
    nd_assert(to != b->empty && nd_bin_room_here(tc, c) < bi->cap && need <= bi->cap);
    size_t n = (size_t)(b->empty - b->cur);
    memcpy(to - n, b->cur, n * sizeof(void *));
    *to = NULL;
    b->empty = to;
    b->cur = to - n;
    nd_bin_set_low(tc, c);
    nd_assert((size_t)(b->empty - b->low) >= need);
    if (!first)
        nd_bin_room_release(tc, was_low, was + 1);
}

/* nd_tcache_grow's growth, once allowed: bin c to capacity cap, more
   bytes counted (noinline: the check, inline, mostly says no). Its
   slots stay where they are until its blocks need them (nd_bin_move). */
static nd_hot nd_noinline void nd_tcache_grow_to(nd_tcache *tc, unsigned c, uint32_t cap, size_t more)
{
    tc->cap_bytes += more;
    nd_bin_info_of(tc, c)->cap = cap;
    nd_bin_info_of(tc, c)->inherited = 0;
    nd_bin_set_low(tc, c);
}

static nd_hot bool nd_tcache_reclaim(nd_tcache *tc, unsigned keep);

/* Does full bin c (an overflow's) hold its own heap's blocks: of
   ND_OWN_SAMPLES blocks spread over it (all of them in a smaller bin), is
   every one of its cache's heap's pages? The blocks of a thread that
   reuses its own batches (its mallocs, then its frees) are; those of
   threads that hand blocks to one another (bench/rptest, larson, mstress)
   are mixed. A bin of fewer than ND_OWN_SAMPLES blocks (a medium class's:
   1-4 blocks of 64 KiB) counted as mixed, so two threads cycling batches
   of medium blocks kept trading them through the store (micro -m batch -s
   65536 -t 2: 388 -> 247 ns a pair; docs/results.md, stop 62). */
#define ND_OWN_SAMPLES 16u
static nd_hot bool nd_bin_holds_own(const nd_tcache *tc, unsigned c)
{
    void *const *cur = tc->bins[c].cur;
    size_t n = (size_t)(tc->bins[c].empty - cur);
    if (n == 0 || n < nd_bin_info_of(tc, c)->cap)
        return false;
    size_t samples = n < ND_OWN_SAMPLES ? n : ND_OWN_SAMPLES;
    for (size_t k = 0; k < samples; k++) {
        void *p = cur[k * n / samples];
        if (nd_load_relaxed(&nd_page_of(nd_seg_base(p), p)->heap) != &tc->heap)
            return false;
    }
    return true;
}

/* Past cap_max (tcache_bytes worth): a bin of a small class at it whose
   batches cycle whole bins through the transfer store (ND_EXTRA_CYCLES)
   doubles into its room
   (nd_bin_room) until it holds the run it just saw (the fills since its
   last overflow and the bin it had: a bin grown one doubling, to 512
   blocks, for runs of 640 no longer sent them away whole, so no longer
   counted as cycling, and stayed there), or grows to that run when its
   cache's part of the pool has not the doubling (below), drawing the
   whole growth from the pool (ND_POOL_MULT),
   whatever the cache's capacities: tcache_bytes bounded such a bin before
   tcache_total did (micro -m batch -s 1024: batches of 1,000 blocks of
   1 KiB against a bin of 256 moved ~750 blocks a batch out through the
   store and back, a third of the instructions; docs/results.md, h47k).
   Only while the fills of its runs (run_fill: the blocks they took since
   the overflow before) fit that room: a bin whose runs stay larger keeps
   cycling after it grew, its runs' blocks still going through pages, and
   a bigger bin saved it instructions but not time (micro -m batch -s 4096,
   runs of ~960 fills against a room of 256 then: x1.06-1.07 of the CPU;
   its room is 1,024 blocks now, nd_bin_room).
   And only while the cache's other bins hold at most cap_max worth
   (tcache_bytes): tcache_bytes shares tcache_total among a thread's
   classes, and yields only when there is little to share. A cache of
   many busy classes (rptest -t 2: bins of 6-16 KiB grown 2-4x past it,
   16 -> 64 blocks of 16 KiB) drew the pool those classes' bins grow into
   past tcache_total (ND_POOL_MULT), and its fills went from
   ~67,000 to 130,000-190,000.
   While CPUs are shared, its growth comes from its even part of the pool
   (nd_tcache_extra_draw), whoever's blocks the bin holds. Until stop 70
   only a bin of its own heap's blocks grew then (nd_bin_holds_own, a
   sample of the full bin; stop 45, with a pool of 4 x tcache_total: bins
   past tcache_bytes for every cycling bin while CPUs were shared took
   mstress -t 8's peak RSS from 36.7 to 42.0 MiB, rptest -t 8's +4); but threads
   whose batches meet in the store fill their bins with one another's
   blocks, and theirs never grew: micro -m batch -s 1024 -t 8 (9 caches
   on 2 CPUs, batches of 1,000) 11-15 ns a pair, bins of 256. With the
   even parts (each 16 MiB / 9 caches), 5 ns, and mstress -t 8's, rptest
   -t 8's, Larson -t 8's, shortlived -t 8's and mthread -t 8's CPU and
   peak RSS within their runs' spreads (docs/results.md, stop 70). And
   when the part has not the doubling, the bin grows to the run itself:
   runs of up to ~1,300 blocks of 1 KiB doubled a bin of 256 to 2,048
   (1.75 MiB more), which the part (1.8 MiB less what the cache drew
   before) refused, and the bin stayed at 256 and cycled; a bin grown
   part of the way to its run still cycles, holding more (micro -m batch
   -s 4096 -t 8, halvings of the step until the part had it: x1.30 of the
   CPU), so no smaller step is taken. And a cache whose other bins hold
   more than cap_max worth gives back, first, the capacity of those its
   thread took with a pooled record and has not used (nd_tcache_reclaim). */
static nd_hot nd_noinline bool nd_tcache_grow_past(nd_tcache *tc, unsigned c)
{
    nd_bin_info *bi = nd_bin_info_of(tc, c);
    uint32_t room = nd_bin_room(c, nd_bin_cap_max(tc, c)), cap = bi->cap;
    size_t run = (size_t)bi->run_fill + bi->cap;   /* the run it just saw, at most */
    do
        cap = cap * 2 < room ? cap * 2 : room;
    while (cap < run && cap < room);
    size_t size = nd_bin_counted_size(c), others = tc->cap_bytes - (size_t)bi->cap * size;
    if (cap <= bi->cap || bi->last != ND_LAST_FILL || bi->run_fill > room)
        return false;
    /* The doubling past the run when the cache's part of the pool has it,
       else the run itself if it is more than the bin (its draw checked
       below; a fill that took nothing leaves no run past it). */
    if (run < cap && run > bi->cap && !nd_tcache_extra_fits(tc, (size_t)(cap - bi->cap) * size))
        cap = (uint32_t)run;
    size_t more = (size_t)(cap - bi->cap) * size;
    if (others > (size_t)nd_bin_cap_max(tc, c) * size) {   /* a former thread's bins first, if the pool has the growth (nd_tcache_reclaim) */
        if (!tc->inherited || !nd_tcache_extra_fits(tc, more) || !nd_tcache_reclaim(tc, c))
            return false;
        others = tc->cap_bytes - (size_t)bi->cap * size;
        if (others > (size_t)nd_bin_cap_max(tc, c) * size)
            return false;
    }
    if (!nd_tcache_extra_draw(tc, more))
        return false;
    nd_tcache_grow_to(tc, c, cap, more);
    return true;
}

/* Doubles bin c's capacity (at most to cap_max), or, at an overflow that
   ends a cycle (nd_bin_info.cycles: the overflow before sent the whole
   bin away, the fills since took a whole bin back), doubles it until it
   holds `seen`, the run the cycle saw (the fills and the bin it had), if
   it holds ND_WANDER_MIN blocks or more (below it, one doubling, to
   ND_WANDER_MIN at most: e282bd8 let bins of 9-12 blocks, the start of
   the classes of 640 B-1 KiB, jump to 36-48 from cycles of 20-30 blocks
   in shortlived -t 8's random walk, ~1,000 times a run, x1.03 of its
   CPU; none now), if the cache's capacities
   stay within its share of tcache_total (nd_tcache_total_share; twice it
   for a bin in long runs, ND_RUN_BINS); false if it may not grow. One
   doubling at each: a thread's batches of 1,000 blocks of 256 B took 4
   batches to a bin of 1,024 alone, and more with CPUs shared (a growth
   past the share waits for ND_EXTRA_CYCLES cycles): micro -m batch -s 256
   -t 8 / 16 x0.89 / x0.87 of the CPU now, and issue 18's rows at 2 and 8
   threads within their spreads, where a jump to the run at every overflow
   after fills, a cycle or not, raised Larson -t 8's and rptest -t 8's
   peak RSS 8 % (docs/results.md, stop 70). Inline
   in its two callers: a cache at its share calls it at every fill of a
   bin that runs dry (rptest -t 2: ~130,000 times, all refused), and the
   refusal costs ~25 instructions here against ~50 as a call. */
/* The rules of a wandering bin (nd_bin_since, below): how soon a cycle
   is quick, how late a fill is slow (both in capacities of calls), and
   the capacity they apply from, which a bin below it grows to and not
   past (so a bin that starts at 9-25 blocks, the classes of 320 B-1 KiB,
   comes under them at 32 blocks, not at 36-50). */
#define ND_QUICK_CYCLE 1u
#define ND_QUICK_RUN   3u
#define ND_SLOW_CYCLE  8u
#define ND_WANDER_MIN  32u
_Static_assert(ND_QUICK_RUN <= 3, "a bin's run of quick cycles saturates at 3 (nd_bin_info.quick: 2 bits)");
/* May bin c's growth by `more` bytes past its cache's share draw from the
   process's pool (nd_tcache_extra_draw)? A bin of a small class whose
   batches cycle whole bins through the transfer store (ND_EXTRA_CYCLES),
   and a full bin (an overflow's) that holds only its own heap's blocks
   (nd_bin_holds_own), whatever its class: a thread that churns its own
   blocks in a random walk around its bins' edges (bench/mthread, glibc's
   thread benchmark: 1,024 blocks of 4 B-32 KiB a thread, 3.6 MiB) keeps
   them resident in its own pages whether its bins hold them or its
   pages do, and a bin of 20-28 KiB held to 2-4 blocks by the share (the
   smaller classes' bins took it first) took a fill or an overflow every
   2-4 of its requests, each ~500 instructions; a bin's slow paths fall
   with the square of its capacity (the walk's time to an edge). mthread
   -t 1: fills and overflows 346,000 -> 57,000 for 5 M requests, 420 ->
   381 instructions a step (tcmalloc 379), CPU x0.90; -t 2 x0.89, peak RSS
   within the runs' spread (docs/results.md, stop 65). The bins of
   threads that hand blocks to one another hold mixed blocks (bench/mstress,
   rptest, larson) and draw nothing for a random walk (a medium bin's
   walk on mstress drew the whole pool for more peak RSS and no CPU:
   ND_EXTRA_CYCLES). The pool's bound is checked before the sample (up to
   ND_OWN_SAMPLES descriptors read). */
static inline bool nd_tcache_may_draw(const nd_tcache *tc, unsigned c, size_t more)
{
    const nd_bin_info *bi = nd_bin_info_of(tc, c);
    if (bi->last == ND_LAST_FILL && bi->cycles >= ND_EXTRA_CYCLES && nd_class_is_small(nd_bin_class[c]))
        return true;
    return tc->bins[c].cur == tc->bins[c].low && nd_tcache_extra_fits(tc, more) && nd_bin_holds_own(tc, c);
}

static inline bool nd_tcache_grow(nd_tcache *tc, unsigned c, size_t seen)
{
    nd_bin_info *bi = nd_bin_info_of(tc, c);
    uint32_t max = nd_bin_cap_max(tc, c);
    if (bi->cap >= max)
        return bi->cycles >= ND_EXTRA_CYCLES && nd_tcache_grow_past(tc, c);
    uint32_t cap = bi->cap * 2 < max ? bi->cap * 2 : max;
    if (bi->cap < ND_WANDER_MIN) {   /* (the wandering rules' threshold: nd_bin_since) */
        if (cap > ND_WANDER_MIN)
            cap = ND_WANDER_MIN;
    } else {
        while (cap < seen && cap < max)
            cap = cap * 2 < max ? cap * 2 : max;
    }
    size_t more = (size_t)(cap - bi->cap) * nd_bin_counted_size(c);
    size_t share = nd_tcache_total_share();
    if (tc->cap_bytes + more > share) {
        /* Past the share: with CPUs shared (more than two caches per
           CPU), a bin of up to ND_BIN_SHARED_FLOOR bytes, and a bin in a
           long run to twice the share (ND_RUN_BINS); either way, a bin
           of a small class whose batches cycle through the transfer
           store, from the process's pool (ND_POOL_MULT). */
        size_t total = (size_t)nd_opt(ND_OPT_tcache_total);
        bool shared = share < total;
        bool at_floor = shared && (size_t)cap * nd_bin_counted_size(c) <= ND_BIN_SHARED_FLOOR;
        bool run = shared && bi->last == ND_LAST_FILL && bi->run_fill >= ND_RUN_BINS * bi->cap &&
                   tc->cap_bytes + more <= (2 * share < total ? 2 * share : total);
        if (!at_floor && !run &&   /* the pool is drawn from last: only a growth nothing else allows */
            !(nd_tcache_may_draw(tc, c, more) && nd_tcache_extra_draw(tc, more)))
            return false;
    }
    nd_tcache_grow_to(tc, c, cap, more);
    return true;
}

/* The kind of the blocks tc's bins hold: its kind without the flag a
   plain cache has under secure=1 (ND_KIND_SEALED: every free is checked
   on its way in, free.c), whose bins hold plain memory of its heap's node
   as the default's do. */
static inline unsigned nd_tcache_bin_kind(const nd_tcache *tc)
{
    return tc->kind & ~ND_KIND_SEALED;
}

/* The transfer store of the kind of tc's bins (xfer.h), made on first use
   when make; NULL without the option `transfer`, and for a cache that does
   not use one: a shared heap's (no bins) and the static caches of
   thread.c (ND_KIND_NONE, ND_KIND_NO_PAGE). Bins hold only blocks of
   their kind, so a store holds blocks of one kind, and only caches of
   that kind take them. Under secure=1 the blocks carry their canaries in
   and out of it, checked both ways (secure.h). */
static inline nd_xfer *nd_tcache_xfer(const nd_tcache *tc, bool make)
{
    unsigned kind = nd_tcache_bin_kind(tc);
    if (kind < 2 || !nd_opt(ND_OPT_transfer))   /* ND_KIND_NONE, ND_KIND_NO_PAGE; the option */
        return NULL;
    return make ? nd_xfer_get(kind) : nd_xfer_find(kind);
}
/* The shard of a class's store where tc's puts and takes start (xfer.h):
   from its heap's owner id, stable for the cache's life; threads made one
   after another start at different shards. */
static inline unsigned nd_tcache_xfer_shard(const nd_tcache *tc)
{
    return (unsigned)(tc->heap.tid / ND_TID_STEP) & (ND_XFER_SHARDS - 1);
}

/* secure=1's plain caches (tc->secure set: secure.h) keep a canary in the
   last word of each block (page.h), which every free checks, and hand
   their blocks to each other through the transfer store of their kind as
   the default's caches do. A block their fill takes from its page gets
   its canary; one it takes from the store, and one a sweep sends from the
   store to its page, must still carry its mark and its canary: a write
   over either while the block was free (in a bin, in the store) aborts
   here, before the block can be handed out ("malloc(): free block
   modified after free: P"; from a sweep, "free(): block modified after
   free: P"). Their overflows check both before a block goes in
   (nd_tcache_spill). */
static void nd_tcache_seal(void *const *v, size_t n, size_t block_size)
{
    nd_assert(block_size >= 3 * sizeof(uint64_t));   /* link, mark, canary */
    for (size_t i = 0; i < n; i++)
        nd_block_seal(v[i], block_size);
}
static void nd_tcache_check_sealed(void *const *v, size_t n, size_t block_size, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (nd_unlikely(!nd_block_is_marked(v[i]) || !nd_block_is_sealed(v[i], block_size)))
            nd_page_corrupt(nd_page_of(nd_seg_base(v[i]), v[i]), v[i], what,
                            "a block waiting in the transfer store was modified");
}

/* The blocks a fill took from the transfer store were freed by other
   threads: each one's line (its freed-block mark, page.h) was last written
   by another core, and each malloc that hands one out writes it (clears
   the mark). Those writes went out one per malloc, in order, each waiting
   for its line to come over from the other core; asking for all the
   lines at once, for writing, moves them while the thread uses the first
   ones. xthread -s 1024 -p 1 (one thread mallocs, another frees, every
   refill from the store): CPU x0.56 (docs/results.md, h46x). A block
   handed out before its line came is no worse off than without. */
static inline void nd_tcache_prefetch_taken(void *const *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        __builtin_prefetch((const char *)v[i] + sizeof(void *), 1, 3);
}

/* Is the first or the last of the n blocks a fill took from the store,
   v[0 .. n), of another heap's page? A take copies the newest blocks of
   the cache's own shard to the end, then those of the next shards below
   them (xfer.h): the first block is the one most likely another heap's,
   the last the newest of its own shard. (A bin's cycles, ND_OWN_CYCLES:
   whether its fills take other heaps' blocks, not how many; two pages'
   descriptors, not every block's: micro -m batch -s 4096 -t 1, whose
   takes never find one, +0.4 instructions a pair with two, +0.8 with
   five, callgrind.) */
static nd_hot bool nd_tcache_took_foreign(const nd_tcache *tc, void *const *v, size_t n)
{
    return nd_load_relaxed(&nd_page_of(nd_seg_base(v[0]), v[0])->heap) != &tc->heap ||
           nd_load_relaxed(&nd_page_of(nd_seg_base(v[n - 1]), v[n - 1])->heap) != &tc->heap;
}

/* Borrowing (docs/results.md, h50s): the bin of a medium class
   (ND_BORROW_CLASS_MIN on) that runs dry when its pages would have to
   carve into memory they never had (or take a new page) takes a block of
   one of the ND_BORROW_CLASSES classes above it (two doublings: up to 4x
   its size) instead, already free (in this cache, or on its heap's page
   of that class) and so already resident: each (thread, class) carving
   to its own high of live blocks held 2-3x the medium band's high in
   memory (h49m, h49r). shortlived -t 2's medium pages at its peak: 7.0-8.5
   MiB (5 runs; one 11.1); 4 classes up 5.7-6.9, 8 up 4.9-5.5. The small
   classes past 1 KiB too took its small pages from 2.3-2.6 MiB to
   1.5-1.9, but rptest -t 8's peak RSS up 25-40 % (3 runs of 11-21 at load
   20-27): left out. The block stays of its page's class: its free puts it
   in that class's bin, and its request is counted there. Its address
   must be a multiple of the natural alignment of the class asked for (an
   aligned request takes a class for it: class.h). Not under secure=1 (its
   bins' canaries). Under prof=1 too (h53p: without it mstress -t 2's
   medium pages at its peak were 1.3-1.8x the default's, its peak RSS
   x1.10 per pair, the blocks it could not borrow carved anew): the
   borrowed request counts toward its own class's countdown to its next
   sample, not the lender's (below), so that the samples stay with the
   sites of the class asked for; a sampled request that borrows is a
   sample of the borrowed block, in its page (route.c:
   nd_route_small_sampled). What it costs a
   fill that cannot borrow: one load and a test (nd_tcache_lenders: the
   heap's classes, heap.h, none of the classes above ever used), or the
   scan of the classes above that were used (h51s: scanning all 8 cost
   batchq -w 8 -s 49152 6 % more instructions, micro -m batch -s 65536 +50
   an op); the borrowed block goes through c's bin (nd_tcache_fill), so
   nd_tcache_alloc is as it was. */
#define ND_BORROW_CLASSES 8
#define ND_BORROW_CLASS_MIN 36   /* 20 KiB, the first medium class (checked in debug builds) */
_Static_assert(ND_BORROW_CLASS_MIN >= ND_HEAP_CLASSES_FROM, "a heap's classes has a bit for every class that lends");

static inline bool nd_tcache_may_borrow(const nd_tcache *tc)
{
    return tc->secure == NULL;
}

/* The classes above c a block may be borrowed from that may hold a free
   block (heap.h: classes), as bits from c + 1 on: 0 when none ever did
   (one load: a dry bin whose classes above were never used, as batchq 48
   KiB's producers' and micro -m batch -s 65536's, pays no more). */
static inline uint32_t nd_tcache_lenders(const nd_tcache *tc, unsigned c)
{
    return ((uint32_t)tc->heap.classes >> (c + 1 - ND_HEAP_CLASSES_FROM)) & ((1u << ND_BORROW_CLASSES) - 1);
}

/* One block of a class above c (<= c + ND_BORROW_CLASSES, one of
   nd_tcache_lenders), from that class's bin, else from the heap's first
   page of that class; the request moves from c's count to that class's.
   NULL if none. */
static void *nd_tcache_borrow_in(nd_tcache *tc, unsigned c)
{
    nd_assert(nd_class_size[ND_BORROW_CLASS_MIN - 1] == ND_SMALL_MAX);
    uintptr_t align = (uintptr_t)nd_class_size[c] & -(uintptr_t)nd_class_size[c];
    if (align > ND_ALIGN_NATURAL)
        align = ND_ALIGN_NATURAL;
    for (uint32_t m = nd_tcache_lenders(tc, c); m != 0; m &= m - 1) {
        unsigned up = c + 1 + (unsigned)__builtin_ctz(m);
        nd_bin *b = &tc->bins[up];
        const nd_page *pg = tc->heap.pages[up].first;
        void *p = NULL;
        if (b->cur == b->empty && (pg == NULL || pg->free == NULL))
            continue;   /* (the usual case, in two loads or three) */
        if (b->cur != b->empty && ((uintptr_t)*b->cur & (align - 1)) == 0) {
            p = *b->cur++;
            nd_bin_info *bi = nd_bin_info_of(tc, up);
            uint32_t count = (uint32_t)(b->empty - b->cur);
            if (bi->low_water != ND_NO_SAMPLE && count < bi->low_water)
                bi->low_water = count;
        } else if ((p = nd_heap_take_free_aligned(&tc->heap, up, align)) != NULL) {
            /* From its page, through the cache as the statistics see it:
               a block in (a fill's) and out (its request), on its cold
               part set up first (below) */
            if (nd_unlikely(!nd_bin_info_is_set(nd_bin_info_of(tc, up))))
                nd_bin_info_init(tc, up, 1);
            nd_count_add(&nd_bin_info_of(tc, up)->counts.fill_blocks, 1);
        }
        if (p == NULL)
            continue;
        /* prof=1: the request stays counted toward c's countdown to its
           next sample, not the lender's: a request the profile sees as
           one of c's (its size, its site's class), whose block is of
           another class. c's request count gives it back, its countdown
           keeps it. When the tick counted it (it had requests left), the
           tick keeps its place, so that it still runs out at the request
           the countdown samples, and its armed value takes it back
           instead (requests are nreq + armed - tick), prof_left with it
           (at a roll-over done = armed is taken from prof_left). Giving
           the tick the request back instead (uncount) moved that sample
           to the request after it, one sample in about 2 lost at a
           p = 0.46 class: h56p, prof_sites' site_a 7 % short. (When the
           tick rolled over at this request, nd_tcache_prof_arm took it
           already and the tick was armed anew: uncount takes it from
           nreq.) The lender's request count takes it by nreq then, not
           by its tick, whose countdown it is not. */
        bool prof = nd_unlikely(nd_load_relaxed(&nd_tcache_prof_rate) != 0) && !tc->heap.shared;
        nd_bin_info *ci = nd_bin_info_of(tc, c);
        if (prof && tc->bins[c].tick < (int64_t)ci->armed) {
            nd_assert(tc->bins[c].tick >= 1 && (ci->prof_left & ND_PROF_LEFT_MAX) >= ci->armed);
            nd_store_relaxed(&ci->armed, ci->armed - 1);   /* still >= tick */
            ci->prof_left--;
        } else {
            nd_tcache_uncount(tc, c);
        }
        if (prof || !nd_tcache_count_quick(tc, up)) {
            /* A class the thread never requested (its page came with an
               adopted segment) has its cold part set up first, armed for
               one request with its tick at 1 (none counted yet), so that
               this request counts exactly (nreq + armed - tick). */
            if (nd_unlikely(!nd_bin_info_is_set(nd_bin_info_of(tc, up))))
                nd_bin_info_init(tc, up, 1);
            nd_store_relaxed(&nd_bin_info_of(tc, up)->nreq, nd_bin_info_of(tc, up)->nreq + 1);
        }
        nd_gauge_add(borrowed_blocks, 1);
        return p;
    }
    return NULL;
}

/* nd_tcache_borrow_in in the heap's bracket (heap.h): it reads the pages
   of the classes it borrows from. */
static nd_noinline void *nd_tcache_borrow(nd_tcache *tc, unsigned c)
{
    nd_heap_enter(&tc->heap);
    void *p = nd_tcache_borrow_in(tc, c);
    nd_heap_exit(&tc->heap);
    return p;
}

/* How fast bin c turns over: the calls that undo its last fill or
   overflow, since then (since a fill: the frees into the bin, which are
   the requests since less the blocks the fill took, tcache.h: mark, plus
   the `held` blocks the bin holds now; since an overflow: the requests).
   A bin that runs dry again and again (a producer), overflows again and
   again (a consumer), or goes from one to the other (batches larger than
   the bin) sees at most about one capacity of them between two misses.
   A thread whose requests and frees of a class wander around a level
   (bench/larson: one of 1,000 blocks of 8-1,000 B replaced at random at a
   time; bench/mstress) misses once in about a quarter of the capacity
   squared calls, in cycles whose lengths spread widely: a larger bin saves
   it few misses but holds about half its capacity of blocks, carved for
   it, all the time. So, for a bin of ND_WANDER_MIN blocks or more (a
   wandering bin's cycles are then about 8 capacities long or more; a
   smaller bin misses every few calls whatever the thread does, and the
   rules below cost bench/shortlived -t 2, whose medium bins of 1-8 blocks
   they shrank and held back, 4 % more instructions):
   - a bin grows (nd_tcache_grow, the rules above it) only at the third
     (ND_QUICK_RUN) of fills or overflows in a row that each came within
     ND_QUICK_CYCLE capacity of the one before (nd_bin_quick): a single
     short cycle of a wandering bin is no evidence (bench/larson -t 2, its
     1,000-block arrays filled in a run of requests first: the bins of
     448-1,024 B grew to 128-288 blocks, 420-470 KiB held a cache, one
     doubling at a time on single short cycles). The calls counted are
     those that undo the last miss, so a producer's or a consumer's cycle
     counts none and one of batches larger than the bin at most one
     capacity (the frees since a fill: the bin went from what the fill
     left to full), while a wandering bin, which a fill leaves half full,
     counts about half its calls: a cycle within one capacity needs a
     walk of half the bin's capacity in about twice its capacity of calls
     (two standard deviations at 32 blocks, one in about 10 cycles), one
     within two capacities (as on main 61f716f, a run of two) in four (one
     and a half, one in about 3), which held a bin of 96 B blocks walking
     at random at 79 blocks on average (the test
     a_bin_that_wanders_holds_about_32_blocks; 33 now), and Larson -t 2's
     bins of 16-256 B at 64-128;
   - a fill that comes ND_SLOW_CYCLE capacities or more after the bin's
     last fill or overflow halves it until it is under ND_WANDER_MIN
     blocks or at its starting capacity (nd_bin_halve; the bin is empty
     then, so nothing is flushed; a GC pass, which waits for purge_delay,
     never comes in a run shorter than that). Halving at such an overflow too, which flushes half the bin,
     raised larson -t 2's peak RSS 2-5 % (docs/results.md, h52m): the
     blocks it sent were mostly of the other thread's pages, home to their
     remote lists, and the thread carved fresh ones. */
static inline int64_t nd_bin_since(const nd_tcache *tc, unsigned c, uint64_t now, size_t held)
{
    const nd_bin_info *bi = nd_bin_info_of(tc, c);
    return (int64_t)(now - bi->mark) + (bi->last == ND_LAST_FILL ? (int64_t)held : 0);
}
/* Counts this fill or overflow of bin c (holding `held` blocks) in the
   bin's run of quick ones; true when the bin may grow: it holds fewer than
   ND_WANDER_MIN blocks, or the run is ND_QUICK_RUN or more long. */
static inline bool nd_bin_quick(nd_tcache *tc, unsigned c, uint64_t now, size_t held)
{
    nd_bin_info *bi = nd_bin_info_of(tc, c);
    bool quick = nd_bin_since(tc, c, now, held) <= (int64_t)ND_QUICK_CYCLE * bi->cap;
    bi->quick = quick ? (bi->quick + (bi->quick < 3)) & 3u : 0;   /* saturating at 3 (a 2-bit field) */
    return bi->quick >= ND_QUICK_RUN || bi->cap < ND_WANDER_MIN;
}
/* Is the fill of bin c (empty) ND_SLOW_CYCLE capacities or more after its
   last fill or overflow? */
static inline bool nd_bin_fills_slowly(const nd_tcache *tc, unsigned c, uint64_t now)
{
    const nd_bin_info *bi = nd_bin_info_of(tc, c);
    return bi->last != 0 && nd_bin_since(tc, c, now, 0) >= (int64_t)ND_SLOW_CYCLE * bi->cap;
}

/* Bin c's capacity halved, its blocks past the half flushed (a GC pass's,
   nd_tcache_gc; a slow fill's, on an empty bin, nd_tcache_fill). */
static nd_hot void nd_bin_halve(nd_tcache *tc, unsigned c)
{
    nd_bin *b = &tc->bins[c];
    nd_bin_info *bi = nd_bin_info_of(tc, c);
    uint32_t cap = bi->cap / 2;
    size_t now_count = (size_t)(b->empty - b->cur);
    if (now_count > cap)
        nd_tcache_flush(tc, c, now_count - cap);
    tc->cap_bytes -= (size_t)(bi->cap - cap) * nd_bin_counted_size(c);
    nd_tcache_extra_give(tc, (size_t)(bi->cap - cap) * nd_bin_counted_size(c));
    bi->cap = cap;
    nd_bin_set_low(tc, c);
}

/* A growth of bin `keep` past tcache_bytes that tc's other bins refuse
   (nd_tcache_grow_past), the pool having it: its inherited bins (tcache.h: nd_bin_info.inherited,
   the capacities a former thread of the record grew them to, which this
   one has not used) halve down to their start capacity, their blocks
   past it flushed; true if the cache's capacities shrank. A thread that
   takes a pooled record takes its caches as they were, bins grown for
   the former thread's classes and full of its blocks; while the bins
   held their capacities the new thread's own classes found the budget
   spent: bench/micro -m batch -s 256,1024 -t 2 (a new team of threads
   for each size, on the former team's records) held the bin of 1 KiB at
   tcache_bytes, the 256 B bin's 1,024 blocks counted as the cache's other
   bins (nd_tcache_grow_past), and each batch of 1,000 went out through
   the transfer store and back: 10-15 ns a pair against 5 for -s 1024
   alone (docs/results.md, h58b). Once for each record taken: the bins'
   marks are cleared here or as the thread uses them. Not for a growth
   within tcache_bytes that the cache's share refuses (nd_tcache_grow):
   with 16 threads on 2 CPUs (micro -m batch -s 64,256,1024,4096 -t 16),
   the bins of 4 KiB then grew into what the inherited ones gave back,
   fills 107,000 -> 22,000, and the row went from 82 to 545 ns a pair
   (peak RSS +6 MiB, system time x4): the blocks of threads that wait for
   a CPU wait with them while the others carve pages. */
static nd_hot nd_noinline bool nd_tcache_reclaim(nd_tcache *tc, unsigned keep)
{
    size_t was = tc->cap_bytes;
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        if (!nd_bin_is_active(tc, c))
            continue;
        nd_bin_info *bi = nd_bin_info_of(tc, c);
        if (!bi->inherited)
            continue;
        bi->inherited = 0;
        if (c == keep)
            continue;
        uint32_t start = nd_bin_start_capacity(c, nd_bin_cap_max(tc, c));
        while (bi->cap / 2 >= start)
            nd_bin_halve(tc, c);
    }
    tc->inherited = 0;   /* (after the bins: nd_bin_halve checks the cache) */
    nd_assert2(nd_tcache_is_valid(tc));
    return tc->cap_bytes < was;
}

/* A bin grown past tcache_bytes (nd_tcache_grow_past) was so for the
   former thread's batches: it goes back to cap_max at once, its draw to
   the pool (nd_bin_halve). Kept inherited, the bins of 1 KiB that micro -m
   batch -s 64,256,1024,4096 -t 4's third team grew to 1,024 blocks held
   the fourth team's caches past their share, and its bins of 4 KiB at 4
   blocks (ND_BIN_SHARED_FLOOR): 56 ns a pair against 46 on main. */
nd_hot void nd_tcache_inherit(nd_tcache *tc)
{
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        if (!nd_bin_is_active(tc, c))
            continue;
        nd_bin_info *bi = nd_bin_info_of(tc, c);
        while (bi->cap > nd_bin_cap_max(tc, c))
            nd_bin_halve(tc, c);
        if (bi->cap > nd_bin_start_capacity(c, nd_bin_cap_max(tc, c))) {
            bi->inherited = 1;
            tc->inherited = 1;
        }
    }
}

nd_hot bool nd_tcache_fill(nd_tcache *tc, unsigned c)
{
    nd_bin *bin = &tc->bins[c];
    nd_assert2(bin->cur == bin->empty && (bin->empty == NULL || *bin->empty == NULL));
    if (nd_unlikely(!nd_bin_is_active(tc, c)))
        nd_bin_activate(tc, c);
    nd_bin_info *bi = nd_bin_info_of(tc, c);   /* (after its first use: its near record) */
    /* Dry again with no overflow since the last fill: the blocks this
       thread allocates do not come back to it fast enough (it hands them
       to others, or keeps them). Bigger fills, like a cache that did not
       fit its working set, but only up to ND_BIN_DRY_BYTES: a cache that
       never gets its blocks back gains no hits from its size, only fewer
       fills, and every block it holds is memory of its pages kept out. */
    uint64_t now = nd_bin_requests(tc, c);
    bool quick = nd_bin_quick(tc, c, now, 0);
    if (bi->cap >= ND_WANDER_MIN && nd_bin_fills_slowly(tc, c, now)) {   /* under ND_WANDER_MIN (nd_bin_since) */
        while (bi->cap >= ND_WANDER_MIN && bi->cap / 2 >= nd_bin_start_capacity(c, nd_bin_cap_max(tc, c)))
            nd_bin_halve(tc, c);
    } else if (quick && bi->filled &&
               (bi->cap < ND_BIN_DRY_MIN || (size_t)bi->cap * nd_bin_counted_size(c) < ND_BIN_DRY_BYTES) &&
               (!tc->fill_from_one || (bi->fill > ND_FIRST_FILL && (bi->fill & (bi->fill - 1)) == 0))) {   /* (nd_bin_next_fill) */
        nd_tcache_grow(tc, c, 0);
    }
    /* Half the capacity; all of it when the bin ran dry twice with few
       frees into it in between (tcache.h: ND_LAST_FILL; frees = requests
       since the last fill less the blocks it took) and the fills since
       its last overflow took a whole bin's worth already (run_fill), but
       the second half only from blocks already free (nd_heap_take_free):
       carving ahead of need (all of it from the heap, tried) raised
       rptest -t 2's peak RSS 4-8 %. A bin on its own route (ND_OWN_CYCLES)
       takes a whole fill from its heap, carving too: its cycles take a
       whole bin's worth each time, and its overflows send its blocks home,
       where the pages they empty do not keep them on free lists. */
    const unsigned cls = nd_bin_class[c];   /* c; under secure=1 the class the bin's blocks have (class.h) */
    size_t want = bi->cap / 2;
    size_t whole = bi->last == ND_LAST_FILL && 4 * (now - bi->mark) < bi->cap && bi->run_fill >= bi->cap ? bi->cap
                                                                                                       : want;
    if (bi->own_route)
        want = whole;
    if (bi->last != ND_LAST_FILL)
        bi->run_fill = 0;
    bi->last = ND_LAST_FILL;
    if (want > bi->fill)
        want = bi->fill;
    if (whole > bi->fill)
        whole = bi->fill;
    if (want == 0)
        want = 1;
    uint32_t fill = bi->fill;
    /* (a from-one cache's bound below ND_FIRST_FILL << ND_NURSERY_FILLS
       takes whole pairs; a skipped bound moves fill on) */
    if (tc->fill_from_one && nd_nursery_serves(tc, cls, fill)) {
        uint32_t f = fill, n = nd_bin_nursery_take(tc, c, &f);
        if (n <= bi->cap) {
            fill = f;
            want = whole = n;
        }
    }
    if (bi->fill < nd_bin_cap_max(tc, c) || bi->fill < bi->cap)   /* (past cap_max: nd_tcache_grow_past) */
        bi->fill = nd_bin_next_fill(tc, fill);
    /* The slots the fill may use: the bin's where it is, [low, empty);
       it moves first when they are fewer than the fill takes. */
    if ((size_t)(bin->empty - bin->low) < (whole > want ? whole : want))
        nd_bin_move(tc, c, whole > want ? whole : want);
    const size_t room = (size_t)(bin->empty - bin->low);
    /* First the blocks other caches of the kind handed over (the transfer
       store: pointers only, no block touched), but for a bin on its own
       route (ND_OWN_CYCLES); else from the heap, into the bin's whole
       room: the remote frees of a page, walked once to be counted, come in
       as many as fit (nd_page_take). */
    nd_bin_counters *cs = &bi->counts;
    size_t got = 0;
    void **at = bin->low;   /* where the blocks came: from the store, the bin's end already */
    nd_xfer *x = bi->own_route ? NULL : nd_tcache_xfer(tc, false);
    if (x != NULL) {
        got = nd_xfer_take(x, cls, nd_tcache_xfer_shard(tc), bin->empty, whole > want ? whole : want);
        at = bin->empty - got;
        if (got != 0) {
            nd_count_inc(&cs->xfer_takes);
            nd_count_add(&cs->xfer_take_blocks, got);
            nd_tcache_prefetch_taken(at, got);
            if (bi->cycles != 0 && !bi->took_foreign)   /* (ND_OWN_CYCLES) */
                bi->took_foreign = nd_tcache_took_foreign(tc, at, got);
            if (nd_unlikely(tc->secure != NULL))   /* secure=1: mark and canary checked */
                nd_tcache_check_sealed(at, got, nd_class_size[cls], ND_CORRUPT_REUSE);
        } else {
            nd_count_inc(&cs->xfer_empty);
        }
    }
    if (got == 0) {
        at = bin->low;
        if (nd_nursery_serves(tc, cls, fill))
            got = nd_nursery_take(tc, cls, at, want);
        void *lent;
        if (got == 0 && c >= ND_BORROW_CLASS_MIN && nd_tcache_lenders(tc, c) != 0 && nd_tcache_may_borrow(tc) &&
            nd_heap_would_fault(&tc->heap, cls) && (lent = nd_tcache_borrow(tc, c)) != NULL) {
            bi->mark = now;
            bi->low_water = 0;   /* it just ran dry */
            bi->filled = 1;
            nd_assert2(nd_tcache_is_valid(tc));
            /* The borrowed block alone in c's bin, for nd_tcache_alloc to
               take at once: the only moment a bin holds a block of another
               class (a caller that borrows takes the block it filled, and
               secure.c's never borrows). */
            bin->cur = bin->empty - 1;
            *bin->cur = lent;
            return true;
        }
        if (got == 0) {
            got = nd_heap_take_blocks(&tc->heap, cls, at, want, room);
            if (got != 0 && got < whole)
                got += nd_heap_take_free(&tc->heap, cls, at + got, whole - got);
        }
        if (nd_unlikely(tc->secure != NULL))   /* secure=1: their canaries */
            nd_tcache_seal(at, got, nd_class_size[cls]);
    }
    if (got > 0 && bin->empty - got != at)   /* (a store's, or a whole bin's, fill is in place) */
        memmove(bin->empty - got, at, got * sizeof(void *));
    bin->cur = bin->empty - got;
    bi->mark = now + got;
    size_t run = (size_t)bi->run_fill + got;
    bi->run_fill = run > UINT32_MAX ? UINT32_MAX : (uint32_t)run;
    nd_bin_info_of(tc, c)->low_water = 0;   /* it just ran dry */
    nd_bin_info_of(tc, c)->filled = 1;
    nd_count_inc(&cs->fills);
    nd_count_add(&cs->fill_blocks, got);
    if (bi->cap >= nd_bin_cap_max(tc, c) && want == bi->cap / 2)
        nd_count_inc(&nd_heap_cstats(&tc->heap, c)->full_size_fills);
    nd_assert2(nd_tcache_is_valid(tc));
    return got != 0;
}

/* A request that failed is not counted (see nd_tcache_count_request). */
nd_sample_path void *nd_tcache_uncount(nd_tcache *tc, unsigned c)
{
    nd_bin *b = &tc->bins[c];
    if (b->tick < (int64_t)nd_bin_info_of(tc, c)->armed)
        nd_store_relaxed(&b->tick, b->tick + 1);
    else if (nd_bin_info_of(tc, c)->nreq > 0)   /* the tick had just rolled over */
        nd_store_relaxed(&nd_bin_info_of(tc, c)->nreq, nd_bin_info_of(tc, c)->nreq - 1);
    return NULL;
}

nd_hot void *nd_tcache_alloc(nd_tcache *tc, unsigned c)
{
    void *p = NULL;
    if (nd_bin_cap_max(tc, c) == 0) {
        if (nd_heap_take_blocks(&tc->heap, c, &p, 1, 1) == 0)
            return nd_tcache_uncount(tc, c);
        nd_count_inc(&nd_heap_cstats(&tc->heap, c)->direct_allocs);
    } else {
        nd_bin *b = &tc->bins[c];
        if (b->cur == b->empty && !nd_tcache_fill(tc, c))
            return nd_tcache_uncount(tc, c);
        p = *b->cur++;
    }
    nd_block_unmark(p);
    return p;
}

/* ---- giving blocks back ---------------------------------------------------- */

/* Moves the blocks of the page whose bytes are [base, base + size) that
   stand in it..end right to the front of it..end (*it is not one of
   them), in one pass; returns how many it moved. */
static size_t nd_tcache_gather(void **it, void **end, uintptr_t base, uintptr_t size)
{
    void **mid = it;
    for (void **i = it + 1; i < end; i++)
        if ((uintptr_t)*i - base < size) {
            void *t = *i;
            *i = *mid;
            *mid++ = t;
        }
    return (size_t)(mid - it);
}

/* A run of at least this many blocks ends where its page's blocks do,
   without the gather: blocks that come in long runs were freed about in
   address order, and a page's other blocks out are elsewhere (the
   transfer store, the program) far more often than later in the flush.
   bench/prefetch (208-byte blocks freed in order, 315 a page) spent 7.6
   instructions a block on gathers that found nothing, at the page each
   flush began in the middle of; a page whose blocks do come later pays
   one more run (one more return to the page, or one more compare-and-swap
   for another heap's page). */
#define ND_GATHER_RUN_MAX 32

/* Gives the run of blocks of page pg that starts at it (it < end)
   (in use, of the bin's class), back to that page: those of the heap's own
   pages without an atomic, those of other heaps' pages (or of no heap's,
   when abandoned) as one chain on the page's remote list. Another heap's
   page whose run is shorter than ND_GATHER_RUN_MAX takes all its blocks
   in it..end, not only the run: where the run ends, the page's other
   blocks are pulled in behind it (one scan of the rest), so that they go
   home as one chain, one compare-and-swap, instead of one per run.
   Blocks usually come in long runs of one page already (a thread frees
   what it allocated, or what another thread allocated, in about that
   order). The heap's own pages gather their blocks the same
   way while the flush's scan budget (*scan, slots still to look at) lasts,
   then take their runs as they come: a run costs no atomic there, only a
   return to the page (about 60 instructions, nd_heap_return_blocks), and
   a program that frees in scattered order (bench/rptest) leaves runs of
   2-3 blocks; the budget keeps a flush of blocks of many pages (a batch of
   large blocks) linear. Each block is looked at once here (its
   mark checked, its link to the block before it set): the chain is built
   in the same pass that finds the run's end; a run that gives the heap's
   own page every block it has out, when the page then drops its blocks,
   is not linked at all (below). The page cannot leave use
   while they are out; nothing reads pg after the blocks went back (its
   page may be released, its segment unmapped). Returns where the page's
   blocks end. */
static nd_hot void **nd_tcache_flush_page(nd_tcache *tc, nd_page *pg, void **it, void **end, size_t *scan)
{
    /* The page's bytes: pages are aligned to their size in the segment
       (page 0's blocks start after the header, its bytes at the segment).
       Read once: the loop writes into blocks, which the compiler would
       otherwise assume may alias the descriptor. */
    const uintptr_t size = nd_seg_page_size(nd_seg_base(pg));
    const uintptr_t base = (uintptr_t)pg->start & ~(size - 1);
    nd_heap *h = &tc->heap;
    const bool own = nd_load_relaxed(&pg->heap) == h;
    /* Gather at most once: the heap's own pages while the budget lasts
       (charged with the slots a gather looks at), and only while the
       run leaves some of the page's blocks out (its used count: the
       blocks a thread cache, the program, the transfer store or the
       remote list hold); a run that holds all of them ends the page's
       blocks here. A class of few blocks a page (8 KiB: 8 a page of 64
       KiB) ends a run at each page, and a scan of the rest of the flush
       at each found nothing: 9 % of micro -m batch -s 8192's
       instructions (docs/results.md, stop 61). */
    bool gathered = own && *scan < (size_t)(end - it);
    /* A run that may hold every block the page has out, of a page that
       then drops its blocks (kept, recarved from its start when next
       used, or retired: nd_heap_drops_emptied) writes no link: they
       would never be read (bench/prefetch, whose batches of 80,000 go
       home page by page: a keyed multiply and a write a block, about 10
       instructions of the 40 a block's flush took). It is linked after
       all if it turns out shorter. */
    const bool whole = own && pg->used <= (size_t)(end - it) && nd_heap_drops_emptied(h, pg);
    void **first = it;
    nd_block *tail = *it, *head = tail;
    if (nd_unlikely(!nd_block_is_marked(tail)))
        nd_page_corrupt(pg, tail, ND_CORRUPT_FREED, "a block waiting in a thread cache was modified");
    for (it++; it < end; it++) {
        nd_block *p = *it;
        if ((uintptr_t)p - base >= size) {
            if (gathered || (own && pg->used == (size_t)(it - first)) || it - first >= ND_GATHER_RUN_MAX)
                break;
            if (own)
                *scan -= (size_t)(end - it);
            if (nd_tcache_gather(it, end, base, size) == 0)
                break;
            gathered = true;
            p = *it;
        }
        if (nd_unlikely(!nd_block_is_marked(p)))
            nd_page_corrupt(pg, p, ND_CORRUPT_FREED, "a block waiting in a thread cache was modified");
        if (!whole)
            nd_link_set(pg, p, head);
        head = p;
    }
    uint32_t k = (uint32_t)(it - first);
    /* head .. tail: the last block taken first. */
    if (own) {
        if (whole) {
            if (k == pg->used) {
                nd_heap_return_all(h, pg, k);
                return it;
            }
            for (void **q = first + 1; q < it; q++)
                nd_link_set(pg, q[0], q[-1]);
        }
        nd_heap_return_blocks(h, pg, head, tail, k);   /* sets tail's link */
    } else {
        nd_count_add(&nd_heap_cstats(h, pg->cls)->remote_frees, k);
        nd_heap_free_remote_chain(pg, head, tail);   /* sets tail's link */
    }
    return it;
}

/* The page of block p, a block of class cls waiting in a cache: aborts
   when p is no block of that class in use (a bad pointer freed). */
static inline nd_page *nd_tcache_page_of(void *p, unsigned cls)
{
    nd_page *pg = nd_page_of(nd_seg_base(p), p);
    if (nd_unlikely(!nd_load_relaxed(&pg->in_use) || pg->cls != cls))
        nd_misuse("free", "invalid pointer (not a block of its size class)", p);
    return pg;
}

/* Bin c's n oldest blocks (sent away already) leave it: the newer ones
   move down over them; counted as one flush. */
static void nd_tcache_drop_oldest(nd_tcache *tc, unsigned c, size_t n)
{
    nd_bin *bin = &tc->bins[c];
    void **oldest = bin->empty - n;
    if (oldest != bin->cur)   /* (none left after a whole bin's overflow) */
        memmove(bin->cur + n, bin->cur, (size_t)(oldest - bin->cur) * sizeof(void *));
    bin->cur += n;
    nd_bin_counters *cs = &nd_bin_info_of(tc, c)->counts;
    nd_count_inc(&cs->flushes);
    nd_count_add(&cs->flush_blocks, n);
    nd_assert2(nd_tcache_is_valid(tc));
}

/* Sends the blocks [from, end) of class cls back to their pages. In the
   heap's bracket (heap.h): a flush reads its own pages' used counts, which
   a sweep's collection of their remote frees changes. */
static nd_hot void nd_tcache_send_home(nd_tcache *tc, unsigned cls, void **from, void **end)
{
    size_t scan = 4 * (size_t)(end - from);   /* the own pages' gathers: a few passes over the blocks */
    nd_heap_enter(&tc->heap);
    for (void **it = from; it < end;)
        it = nd_tcache_flush_page(tc, nd_tcache_page_of(*it, cls), it, end, &scan);
    nd_heap_exit(&tc->heap);
}

nd_hot void nd_tcache_flush(nd_tcache *tc, unsigned c, size_t n)
{
    nd_bin *bin = &tc->bins[c];
    nd_assert2(bin->low <= bin->cur && bin->cur <= bin->empty && (bin->empty == NULL || *bin->empty == NULL));
    size_t count = (size_t)(bin->empty - bin->cur);
    if (n > count)
        n = count;
    if (n == 0)
        return;
    nd_tcache_send_home(tc, nd_bin_class[c], bin->empty - n, bin->empty);
    nd_tcache_drop_oldest(tc, c, n);
}

/* Is a block of [it, end) from another heap's page? (Only until the
   kind's store exists: a thread that frees only its own blocks never
   makes one, nor spends its metadata.) */
static bool nd_tcache_has_foreign(const nd_tcache *tc, void *const *it, void *const *end)
{
    for (; it < end; it++)
        if (nd_load_relaxed(&nd_page_of(nd_seg_base(*it), *it)->heap) != &tc->heap)
            return true;
    return false;
}

/* The check of an overflow's blocks as they go into the store (under
   transfer=2, nd_xfer_put's check): each block's mark, and under secure=1
   its canary (nd_tcache_seal), as a flush checks it; only the block's own
   words are read, its class being its bin's (its free found its page,
   which cannot leave use while the block is out). */
typedef struct nd_spill_check {
    unsigned cls;      /* the blocks' class */
    size_t   sealed;   /* secure=1: the class's size (the canary's place); else 0 */
} nd_spill_check;
static nd_hot void nd_tcache_check_spilled(void *const *v, size_t n, const void *arg)
{
    const nd_spill_check *k = arg;
    for (size_t i = 0; i < n; i++)
        if (nd_unlikely(!nd_block_is_marked(v[i]) || (k->sealed != 0 && !nd_block_is_sealed(v[i], k->sealed))))
            nd_page_corrupt(nd_tcache_page_of(v[i], k->cls), v[i], ND_CORRUPT_FREED,
                            "a block waiting in a thread cache was modified");
}

/* Are more heaps waiting with notified pages (notified_owners) than the
   process has CPUs? Then some of those owners cannot be running, and
   the frees waiting on their pages wait for as long as the scheduler
   keeps them aside. With as many owners as CPUs or fewer, each can be
   running and comes back for its frees soon: the deep room stays shut
   (bench/batchq -w 2 -s 20000, two producers on 2 CPUs: with it open
   their objects in flight went 26.6 -> 32.8 MiB, peak RSS x1.17; two
   producers fed each other's blocks outran their consumers, as xfer.h's
   8,192 blocks did). A moment below 0 (a drain before its push's count,
   heap.c) reads as a huge count: shut. */
static inline bool nd_tcache_owners_away(void)
{
    size_t owners = nd_load_relaxed(&nd_gauge.notified_owners), cpus = nd_load_relaxed(&nd_tcache_cpus);
    return cpus != 0 && owners > cpus && owners <= (size_t)UINT32_MAX;
}

/* Of the medium blocks [from, end) of an overflow that the transfer store
   had no room for, while more owners wait with notified pages than there
   are CPUs (nd_tcache_owners_away), those of another heap's page whose
   remote list already holds blocks (its owner has not taken back the
   frees waiting there: a thread the scheduler set aside, or one that now
   gets its blocks from the store and not from that page) go to the
   class's deep room (nd_xfer_put_deep, xfer.h), for the next fill of any
   cache of the kind; sent home they would wait on that page for its owner
   alone, and the threads that run would carve fresh pages meanwhile
   (bench/batchq -w 8 -s 49152: docs/results.md, h53b). The heap's own blocks, and those of a
   page whose owner keeps up, go home as before: a thread that frees a
   burst of its own blocks and goes quiet does not leave them in the store
   (xfer.h). Reorders [from, end): those put first. Returns how many went
   in. A block here is out of its page (counted among its used blocks), so
   the page and its descriptor stay (the same as nd_tcache_page_of's read).
   Not nd_hot: only programs that hand medium blocks over while more owners
   wait than there are CPUs run it. */
static nd_noinline size_t nd_tcache_spill_deep(nd_tcache *tc, nd_xfer *x, const nd_spill_check *check,
                                               void **from, void **end, bool unchecked)
{
    const nd_heap *h = &tc->heap;
    void **mid = from;
    for (void **it = from; it < end; it++) {
        void *p = *it;
        const nd_page *pg = nd_tcache_page_of(p, check->cls);
        if (nd_load_relaxed(&pg->heap) == h || (nd_load_relaxed(&pg->xfree) & ~ND_XSTATE_MASK) == 0)
            continue;
        *it = *mid;
        *mid++ = p;
    }
    if (mid == from)
        return 0;
    return nd_xfer_put_deep(x, check->cls, nd_tcache_xfer_shard(tc), from, (size_t)(mid - from),
                            unchecked ? nd_tcache_check_spilled : NULL, check);
}

/* A full bin's overflow: its n oldest blocks leave it. As many as the
   transfer store of the cache's kind has room for go there as pointers
   (xfer.h), for the next fill of a cache of that kind: with transfer=2
   any of them, with transfer=1 those of other heaps' pages (the blocks
   another thread allocated, which this one freed); each is checked first
   as a flush checks it (its mark intact), here where its line is still
   hot. The rest go to their pages as a flush sends them (and checked
   there): the heap's own without an atomic. One put, no separate look at
   the store's room: it takes what fits (its shards in turn), checking
   only those (nd_tcache_check_spilled), and says how many. own_home: the
   heap's own blocks go home whatever transfer is (a bin on its own route,
   ND_OWN_CYCLES). */
static nd_hot size_t nd_tcache_spill(nd_tcache *tc, unsigned c, size_t n, bool own_home)
{
    nd_bin *bin = &tc->bins[c];
    size_t count = (size_t)(bin->empty - bin->cur);
    if (n > count)
        n = count;
    nd_xfer *x = nd_tcache_xfer(tc, false);
    /* transfer=2: the heap's own blocks go to the store too, so that the
       node's other heaps reuse them before they carve (xfer.h). */
    const bool own_too = nd_opt(ND_OPT_transfer) >= 2 && !own_home;
    if (nd_unlikely(x == NULL) && nd_tcache_bin_kind(tc) >= 2 && nd_opt(ND_OPT_transfer) &&
        (own_too || nd_tcache_has_foreign(tc, bin->empty - n, bin->empty)))
        x = nd_tcache_xfer(tc, true);   /* the kind's first hand-off: its store */
    if (x == NULL || n == 0) {
        nd_tcache_flush(tc, c, n);
        return 0;
    }
    /* The store's class: the blocks' (under secure=1 a bin holds the next
       class's blocks, class.h). */
    const nd_spill_check check = {nd_bin_class[c], tc->secure != NULL ? nd_class_size[nd_bin_class[c]] : 0};
    void **oldest = bin->empty - n, **mid = bin->empty;
    if (!own_too) {
        /* transfer=1, or a bin on its own route: only other heaps' pages'
           blocks, to the front (and checked here): the heap's own go home
           without an atomic, to pages whose lines this thread has. */
        const nd_heap *h = &tc->heap;
        mid = oldest;
        for (void **it = oldest; it < bin->empty; it++) {
            void *p = *it;
            if (nd_load_relaxed(&nd_tcache_page_of(p, check.cls)->heap) == h)
                continue;
            nd_tcache_check_spilled(&p, 1, &check);
            *it = *mid;
            *mid++ = p;
        }
    }
    size_t foreign = (size_t)(mid - oldest);
    size_t put = nd_xfer_put(x, check.cls, nd_tcache_xfer_shard(tc), oldest, foreign,
                             own_too ? nd_tcache_check_spilled : NULL, &check);
    if (put < foreign && !nd_class_is_small(check.cls) && nd_tcache_owners_away())
        put += nd_tcache_spill_deep(tc, x, &check, oldest + put, mid, own_too);
    nd_bin_counters *cs = &nd_bin_info_of(tc, c)->counts;
    if (put != 0) {
        nd_count_inc(&cs->xfer_puts);
        nd_count_add(&cs->xfer_put_blocks, put);
    }
    if (put < foreign)
        nd_count_inc(&nd_heap_cstats(&tc->heap, c)->xfer_full);
    if (put < n)
        nd_tcache_send_home(tc, check.cls, oldest + put, bin->empty);
    nd_tcache_drop_oldest(tc, c, n);
    nd_assert2(nd_xfer_is_valid(x, check.cls));
    return put;
}

/* Blocks a sweep moves at a time: maintenance runs on the program's
   stack (a thread may have 16 KiB of it), so not a whole class's slots. */
#define ND_XFER_SWEEP_BATCH 128u

/* Store x's blocks back to their pages through tc: all of them, or
   (idle_only, a sweep) those that sat untaken since the last sweep: the
   classes no cache took from, whole, and of the others as many as they
   never went below (nd_xfer_drain), shard by shard. A shard another
   thread has claimed is skipped. With `purge` (a sweep's, a forced
   collect's), each block of 8 KiB and more gives back its OS pages past
   its first on the way (nd_heap_purge_idle_blocks): it sat untaken a
   purge delay or more, and the page it goes to may be a thread's that no
   longer runs, whose passes would purge it only when it ran again (a
   worker that freed 80 MiB of 100,000-byte blocks and waited kept 21 MiB
   a second later, 15 now: the 64 blocks the store held went home to its
   pages' remote lists with their memory; the rest is its own pages',
   which only its passes purge; docs/results.md, stop 61). */
static nd_hot void nd_tcache_xfer_empty(nd_tcache *tc, nd_xfer *x, bool idle_only, bool purge)
{
    void *buf[ND_XFER_SWEEP_BATCH];
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++)
        for (unsigned s = 0; s < ND_XFER_SHARDS; s++) {
            size_t n;
            do {
                n = nd_xfer_drain(x, c, s, buf, ND_XFER_SWEEP_BATCH, idle_only);
                if (n != 0)   /* (the counters of a class no block of which it sends stay unwritten) */
                    nd_count_add(&nd_heap_cstats(&tc->heap, c)->xfer_drained, n);
                if (nd_unlikely(nd_opt(ND_OPT_secure) == 1))   /* secure=1: their canaries (nd_tcache_seal) */
                    nd_tcache_check_sealed(buf, n, nd_class_size[c], ND_CORRUPT_FREED);
                if (purge)
                    nd_heap_purge_idle_blocks(buf, n, c, nd_kind_is_bound(x->kind));
                nd_tcache_send_home(tc, c, buf, buf + n);
            } while (n == ND_XFER_SWEEP_BATCH);
        }
}

nd_hot void nd_tcache_xfer_sweep(nd_tcache *tc, uint64_t now, bool all)
{
    long delay = nd_opt(ND_OPT_purge_delay);
    for (unsigned kind = 2; kind < 2 + ND_XFER_KINDS; kind++) {
        nd_xfer *x = nd_xfer_find(kind);
        if (x == NULL || (!all && !nd_xfer_sweep_claim(x, now, delay > 0 ? (uint64_t)delay : 1)))
            continue;
        nd_tcache_xfer_empty(tc, x, !all, true);
    }
    nd_assert2(nd_tcache_is_valid(tc));
}

void nd_tcache_xfer_give_back(nd_tcache *tc)
{
    nd_xfer *x = nd_tcache_xfer(tc, false);
    if (x != NULL)
        nd_tcache_xfer_empty(tc, x, false, false);
    nd_assert2(nd_tcache_is_valid(tc));
}

nd_hot void nd_tcache_flush_all(nd_tcache *tc)
{
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++)
        nd_tcache_flush(tc, c, nd_bin_info_of(tc, c)->cap);
}

nd_hot bool nd_tcache_cpus_shared(void)
{
    size_t each = 2 * (size_t)nd_load_relaxed(&nd_tcache_cpus);
    return each != 0 && nd_load_relaxed(&nd_tcache_count) > each;
}

/* What a cache hands over as its thread exits (nd_tcache_hand_over): only
   a cache that holds half of tcache_total or more, and of it only the
   bins holding ND_HAND_OVER_MIN bytes of blocks or more. Threads that
   make a few requests each and exit (bench/threadchurn -c 8: 64 blocks of
   16 B-2 KiB a thread, 20,000 threads) leave caches of 28-290 KiB (a
   record's warm blocks grow over its threads), and handing those over,
   every bin or only those of 8 KiB and more, took x1.05-1.07 of the CPU
   per thread (a put per bin at the exit, a fill per class in the next
   thread; ab.py, load 13-22); mstress -t 8's threads (50,000 requests
   each) leave 1.0-1.6 MiB. */
#define ND_HAND_OVER_MIN ND_BIN_START_BYTES

/* Every bin's blocks, as one overflow each (nd_tcache_spill), when they
   make ND_HAND_OVER_MIN bytes or more and the cache holds half of
   tcache_total or more: into the store as far as it has room, the rest
   home. Only with transfer=2, where a spill may put any block in the
   store; with less, most would go home, to pages of this heap, which no
   other heap takes blocks from, and the blocks would be no nearer to the
   threads that run (tried as a flush home: the same peak RSS on mstress
   -t 8, and the record's next thread refilled them from its pages). */
nd_hot void nd_tcache_hand_over(nd_tcache *tc)
{
    if (nd_opt(ND_OPT_transfer) < 2)
        return;
    size_t held = 0;
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++)
        held += (size_t)(tc->bins[c].empty - tc->bins[c].cur) * nd_bin_counted_size(c);
    if (held < (size_t)nd_opt(ND_OPT_tcache_total) / 2)
        return;
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        size_t n = (size_t)(tc->bins[c].empty - tc->bins[c].cur);
        if (n != 0 && n * nd_bin_counted_size(c) >= ND_HAND_OVER_MIN)
            nd_tcache_spill(tc, c, n, false);
    }
    nd_assert2(nd_tcache_is_valid(tc));
}

nd_hot void nd_tcache_push(nd_tcache *tc, unsigned c, void *p)
{
    nd_bin *b = &tc->bins[c];
    nd_bin_info *bi = nd_bin_info_of(tc, c);
    if (b->cur == b->low) {
        if (nd_unlikely(!nd_bin_is_active(tc, c))) {
            nd_bin_activate(tc, c);   /* the class's first block here */
            bi = nd_bin_info_of(tc, c);   /* (its first use: its near record) */
        } else if ((size_t)(b->empty - b->low) < bi->cap) {
            nd_bin_move(tc, c, (size_t)(b->empty - b->low) + 1);   /* full where it is, not to its capacity */
        } else {
            /* Dry, then full again: the working set does not fit. Grow,
               within the cache's budget, if it turns over quickly
               (nd_bin_quick); else half of it leaves, or all of it (below). */
            if (bi->last == ND_LAST_FILL) {   /* the first overflow since fills: a cycle? */
                bool cycle = bi->spilled_all && bi->run_fill >= bi->cap;
                bi->cycles = cycle ? bi->cycles + (bi->cycles < ND_CYCLES_MAX) : 0;
                if (!cycle)
                    bi->took_foreign = bi->own_route = 0;
                else if (!bi->own_route && bi->took_foreign && bi->cycles >= ND_OWN_CYCLES && nd_bin_holds_own(tc, c)) {
                    bi->own_route = 1;   /* (ND_OWN_CYCLES) */
                    nd_gauge_add(own_routes, 1);
                }
            }
            bool quick = nd_bin_quick(tc, c, nd_bin_requests(tc, c), (size_t)(b->empty - b->cur));
            if (quick && bi->filled &&
                nd_tcache_grow(tc, c, bi->cycles != 0 ? (size_t)bi->run_fill + bi->cap : 0)) {   /* (a cycle: up to its run) */
                bi->filled = 0;
            } else {
                if (bi->cap >= nd_bin_cap_max(tc, c))
                    nd_count_inc(&nd_heap_cstats(&tc->heap, c)->full_size_flushes);
                /* Half of it, or all of it when it overflowed twice
                   with few requests in between (tcache.h: ND_LAST_SPILL)
                   and the first of the two sent half or more; a 64th
                   when it was filled since its last overflow and that
                   one did not send the whole bin (tcache.h:
                   ND_SPILL_AFTER_FILL). */
                uint64_t now = nd_bin_requests(tc, c);
                bool run = bi->last == ND_LAST_SPILL && 4 * (now - bi->mark) < bi->cap && !bi->spilled_few;
                size_t n = run ? bi->cap
                         : bi->last == ND_LAST_FILL && !bi->spilled_all
                               ? (bi->cap + ND_SPILL_AFTER_FILL - 1) / ND_SPILL_AFTER_FILL
                               : (bi->cap + 1) / 2;
                bi->spilled_all = run;
                bi->spilled_few = n < (bi->cap + 1) / 2;
                size_t put = nd_tcache_spill(tc, c, n, bi->own_route);
                bi->last = ND_LAST_SPILL;
                bi->mark = now;
                /* A bin whose overflows feed the transfer store (a
                   consumer's: it never runs dry) grows at its next
                   overflow, as a producer's does, up to ND_BIN_DRY_BYTES
                   worth or ND_BIN_DRY_MIN blocks, the larger (a bin of
                   64 KiB blocks kept at 2 sent 1 block a free, each free
                   a flush through the store: xthread -s 65536 -p 1 took
                   2.5x the CPU and 59.5 against 5.6 MiB at its peak):
                   fewer and larger hand-offs, each one claim of the
                   store's lines (xthread -s 64 -p 2 with transfer=1:
                   x1.39 of main's CPU with bins of 32 blocks, x1.03). */
                bi->filled = put != 0 && (bi->cap < ND_BIN_DRY_MIN || (size_t)bi->cap * nd_bin_counted_size(c) < ND_BIN_DRY_BYTES);
            }
            if (b->cur == b->low)   /* grown past its room where it is */
                nd_bin_move(tc, c, (size_t)(b->empty - b->low) + 1);
        }
    }
    *--b->cur = p;
    nd_block_mark(p);
}

/* ---- garbage collection ---------------------------------------------------- */

nd_hot bool nd_tcache_gc_due(const nd_tcache *tc) { return tc->gc_samples >= ND_GC_MIN_SAMPLES; }

nd_hot void nd_tcache_gc(nd_tcache *tc, bool force)
{
    /* The blocks a bin kept all along since the last pass (its low-water
       mark) were not needed; three quarters of them go back. A bin never
       sampled since (no fill, no tick) was idle: all it holds counts as
       unneeded. The pass waits for a few samples (nd_tcache_gc_due), so
       that low-water marks mean something however slowly time passes. */
    tc->gc_samples = 0;
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        nd_bin *b = &tc->bins[c];
        nd_bin_info *bi = nd_bin_info_of(tc, c);
        size_t count = (size_t)(b->empty - b->cur);
        size_t unneeded = bi->low_water == ND_NO_SAMPLE ? count : bi->low_water;
        if (unneeded > count)
            unneeded = count;
        if (force)
            unneeded = count;
        if (unneeded != 0)
            nd_tcache_flush(tc, c, force ? count : unneeded - unneeded / 4);
        /* More than half the capacity unused all along: halve it. */
        if (bi->low_water != ND_NO_SAMPLE && bi->low_water > bi->cap / 2 &&
            bi->cap / 2 >= nd_bin_start_capacity(c, nd_bin_cap_max(tc, c)))
            nd_bin_halve(tc, c);
        if (nd_bin_info_is_set(bi))   /* (a class never used: its cold part stays unwritten) */
            bi->low_water = ND_NO_SAMPLE;
    }
}

size_t nd_tcache_held_bytes(const nd_tcache *tc)
{
    size_t bytes = 0;
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        const nd_bin *b = &tc->bins[c];
        bytes += (size_t)(b->empty - b->cur) * nd_bin_counted_size(c);
    }
    return bytes;
}

/* ---- statistics -------------------------------------------------------------- */

__attribute__((no_sanitize("thread")))
nd_hot void nd_tcache_stats_add(const nd_tcache *tc, nd_snap_class *cls, nd_snap_totals *tot)
{
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        const nd_bin *b = &tc->bins[c];
        const nd_class_counters *cs = nd_heap_cstats(&tc->heap, c);
        const nd_bin_counters *bs = &nd_bin_info_of(tc, c)->counts;
        uint64_t requests = nd_bin_requests(tc, c);
        uint64_t cached = (uint64_t)(b->empty - nd_load_relaxed(&b->cur));
        uint64_t fill_blocks = nd_load_relaxed(&bs->fill_blocks);
        uint64_t flush_blocks = nd_load_relaxed(&bs->flush_blocks);
        /* Blocks into the cache = fills + frees into it (the owner's, and
           other threads' blocks it keeps); out = requests + flushes; so
           frees into the cache = cached + requests + flushes - fills.
           Classes without a cache count their frees. */
        uint64_t cache_frees = nd_bin_cap_max(tc, c) != 0 ? cached + requests + flush_blocks - fill_blocks : 0;
        nd_snap_class_add_counters(&cls[c], cs);
        nd_snap_class_add_bin_counters(&cls[c], bs);
        cls[c].requests += requests;
        cls[c].frees += cache_frees + nd_load_relaxed(&cs->slow_frees) +
                        nd_load_relaxed(&cs->remote_pushes);
        cls[c].cached += cached;
    }
    nd_snap_totals_add_counters(tot, &tc->heap.stats);
}

__attribute__((no_sanitize("thread")))
void nd_tcache_tier_hits(const nd_tcache *tc, int t, uint64_t *blocks, uint64_t *bytes)
{
    uint64_t n = 0, b = 0;
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        uint64_t h = nd_load_relaxed(&tc->tier_hits[c][t]);
        unsigned held = nd_bin_class[c] < ND_CLASS_COUNT ? nd_bin_class[c] : c;   /* secure=1 (class.h) */
        n += h;
        b += h * nd_class_size[held];
    }
    *blocks = n;
    *bytes = b;
}

/* ---- debug validation ---------------------------------------------------------- */

bool nd_tcache_is_valid(const nd_tcache *tc)
{
    size_t cap_bytes = 0;
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++)
        cap_bytes += (size_t)nd_bin_info_of(tc, c)->cap * nd_bin_counted_size(c);
    if (cap_bytes != tc->cap_bytes)
        return false;
    /* What it drew from the pool (ND_POOL_MULT) is part of its capacity,
       and at most a cache's most (ND_EXTRA_MULT x tcache_total). */
    if (tc->cap_extra > cap_bytes || tc->cap_extra > ND_EXTRA_MULT * (size_t)nd_opt(ND_OPT_tcache_total))
        return false;
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        const nd_bin *b = &tc->bins[c];
        const nd_bin_info *bi = nd_bin_info_of(tc, c);
        if (!(b->low <= b->cur && b->cur <= b->empty) || (b->empty != NULL && *b->empty != NULL) ||
            bi->cap > nd_bin_room(c, nd_bin_cap_max(tc, c)))
            return false;
        /* Without its slots: capacity 0; with them: its sentinel one of
           its own three, in the start area, the middle area (a bin that
           has a room there) or the large area, and as many slots below it
           as its capacity, or as its room there holds
           (nd_bin_start_room, ND_BIN_MID_ROOM, nd_bin_room). */
        const nd_bin_layout *lay = nd_bin_lay(tc, c);
        void *const *slots = nd_tcache_slots(tc);
        bool in_start = b->empty == slots + lay->start_end || (lay->has_first && b->empty == nd_bin_first_sentinel(tc, c));
        bool in_mid = lay->mid_end != 0 && b->empty == slots + lay->mid_end;
        if (nd_bin_is_active(tc, c) ? lay->cap_max == 0 || (b->empty != slots + lay->slot_end && !in_start && !in_mid)
                                    : bi->cap != 0 || b->cur != NULL || b->low != NULL)
            return false;
        /* A class never used: its cold part and its tick still zero
           (nd_bin_info_init), and no slots. */
        if (!nd_bin_info_is_set(bi) && (b->tick != 0 || nd_bin_is_active(tc, c) || bi->nreq != 0 || bi->armed != 0))
            return false;
        /* prof=1: its tick runs out at the request its countdown samples
           or before it (armed <= prof_left, once drawn), so that no sample
           moves to a later request (nd_tcache_prof_arm; a borrow, which
           the tick counted, takes it from both: nd_tcache_borrow). */
        if (nd_load_relaxed(&nd_tcache_prof_rate) != 0 && !tc->heap.shared && bi->prof_left != 0 &&
            bi->armed > (bi->prof_left & ND_PROF_LEFT_MAX))
            return false;
        if (bi->inherited && (!nd_bin_is_active(tc, c) || !tc->inherited))   /* (tcache.h: nd_tcache_reclaim) */
            return false;
        /* Its own route only after ND_OWN_CYCLES cycles, one of whose fills
           took another heap's block; neither outlives its cycles. */
        if ((bi->took_foreign && bi->cycles == 0) ||
            (bi->own_route && (!bi->took_foreign || bi->cycles < ND_OWN_CYCLES)))
            return false;
        if (nd_bin_is_active(tc, c)) {
            uint32_t room = nd_bin_room_here(tc, c);
            if ((size_t)(b->empty - b->low) != (bi->cap < room ? bi->cap : room) ||
                (c >= ND_HEAP_CLASSES_FROM && !(tc->heap.classes & ND_HEAP_CLASS_BIT(c))))   /* (heap.h: classes) */
                return false;
        }
        if ((lay->mid_end != 0) != (lay->cap_max != 0 && nd_bin_has_mid(c, lay->cap_max)) ||
            (lay->has_first != 0) != (lay->cap_max != 0 && nd_bin_has_first(c, lay->cap_max)))
            return false;
        /* Its large room's top min(cap_max, ND_BIN_MID_ROOM) slots on one
           OS page (nd_tcache_layout_make). */
        if (lay->cap_max != 0 && (ND_TC_HEAD_BYTES / sizeof(void *) + lay->slot_end) % ND_PAGE_SLOTS <
                                     (lay->cap_max < ND_BIN_MID_ROOM ? lay->cap_max : ND_BIN_MID_ROOM))
            return false;
        for (void *const *it = b->cur; it < b->empty; it++) {
            const nd_page *pg = nd_page_of(nd_seg_base(*it), *it);
            const nd_segment *s = nd_seg_base(*it);
            if (!pg->in_use || pg->cls != nd_bin_class[c] || !nd_page_has_block(pg, *it) || !nd_block_is_marked(*it) ||
                s->bound != tc->heap.bound || s->node != tc->heap.node)
                return false;
        }
    }
    if (tc->kind != nd_tcache_kind(tc->heap.shared, tc->heap.bound, tc->heap.node))
        return false;
    /* The near records (tcache.h): the first near_used of them given, one
       to a class, each to a class set up (nd_bin_info_init), whose binfo
       is then all zero; the others all zero; none in a shared heap's
       cache. */
    if (tc->near_used > ND_NEAR_BINS || (tc->layout == ND_LAYOUT_NONE && tc->near_used != 0))
        return false;
    unsigned given = 0;
    static const nd_bin_info zero_info;
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        unsigned k = tc->near_of[c];
        if (k == 0)
            continue;
        given++;
        if (k > tc->near_used || !nd_bin_info_is_set(&tc->near[k - 1].info) ||
            memcmp(&tc->binfo[c], &zero_info, sizeof zero_info) != 0)
            return false;
        for (unsigned d = 0; d < c; d++)
            if (tc->near_of[d] == k)
                return false;
    }
    if (given != tc->near_used)
        return false;
    for (unsigned k = tc->near_used; k < ND_NEAR_BINS; k++)
        if (memcmp(&tc->near[k].info, &zero_info, sizeof zero_info) != 0)
            return false;
    /* Its kind's table (tcache.h: nd_bin_layout), and its slots that table's. */
    unsigned layout = nd_tcache_layout_of(tc->heap.shared, tc->heap.bound);
    if (tc->fill_from_one && !nd_tcache_fills_from_one(tc->heap.tid, tc->heap.bound, tc->heap.shared))
        return false;
    if (tc->layout != layout || tc->slot_bytes != nd_tcache_layout_slots[layout] * sizeof(void *))
        return false;
    if (tc->heap.shared || tc->heap.bound ? tc->look_arm != NULL
                                          : tc->look_arm != nd_tcache_look_arm && tc->look_arm != nd_tcache_look_watched)
        return false;
    if (tc->heap.cstats != tc->cstats)   /* its heap counts in the cache's array (tcache.h) */
        return false;
    nd_heap *h = (nd_heap *)&tc->heap;   /* (its bracket: heap.h) */
    nd_heap_enter(h);
    bool ok = nd_heap_is_valid(h);
    nd_heap_exit(h);
    return ok;
}
