/*
 * tcache.h - thread caches: per size class, a stack of free blocks that the
 * fast paths pop and push without a lock or an atomic. A thread has one
 * thread cache per kind of memory it uses (plain, and one per node it asked
 * for); each sits on top of a heap (heap.h) that owns the pages.
 *
 * Owns: struct nd_bin (the hot, fast-path part of one class's cache),
 * struct nd_bin_info (its cold part), struct nd_tcache; filling a bin from
 * the heap, flushing blocks back, growing and shrinking bins (GC), and the
 * per-class statistics the fast paths imply.
 *
 * Thread cache bin (one per size class), a stack of block pointers:
 *
 *     low                 cur                      empty
 *      |  (free slots)     | cached blocks ...       | NULL sentinel
 *      v                   v                         v
 *     [ ][ ][ ][ ][ ][ ][ ][b5][b4][b3][b2][b1][b0]  [0]
 *                           ^ next malloc returns b5 ; a free stores at cur-1
 *
 *   malloc: cur == empty -> slow path (fill), else return *cur++
 *   free:   cur == low   -> slow path (flush), else *--cur = p
 *   a bin with cap 0 has low == cur == empty: every call takes the slow path.
 *   A bin has no slots of its own until its class is first used: low, cur
 *   and empty are then NULL (the slow path gives it its slots,
 *   nd_bin_activate in tcache.c), so the slots a thread touches are those
 *   of the classes it uses, and an all-zero cache (thread.c's static
 *   empty and dead ones, in .bss) is one whose every call takes the slow
 *   path. A bin's slots come from four areas: its first room, in the
 *   struct, 8 slots and a sentinel in its near record (nd_bin_near: the
 *   first 12 classes a thread uses have one) when its start room is larger
 *   (the classes below 1 KiB), where such a bin starts; and after the
 *   struct the start
 *   area, where every bin has twice its starting capacity (4 to 64 slots)
 *   and a sentinel, one bin after the other; the middle area, 256 slots
 *   and a sentinel for each bin whose cap_max is larger, one after the
 *   other; and the large area, cap_max slots (for a small class 4x that
 *   or the process pool's worth of its blocks, whichever is more, at most
 *   tcache_count: tcache.c, nd_bin_room) and a sentinel per bin. A
 *   bin moves (its blocks copied) to the next area that has room for it
 *   when its blocks need more slots than its room in the one it is in (a
 *   fill larger than the room, a free into a bin holding all the room
 *   holds, its capacity being larger: nd_bin_move), not when its capacity
 *   grows past the room; the OS pages of the room it left that no other
 *   bin's room shares are given back then (tcache.c: nd_bin_room_release),
 *   so a busy bin keeps the pages of the room it is in, not of every room
 *   it passed through. A thread that makes a few requests of a few
 *   classes (its bins hold at most 8 blocks: their first fills take 1, 2,
 *   3, 4, 6, 8, 12 and 16, tcache.c) touches no slot past the struct's
 *   first OS page, not a page of slots per class (16 KiB of them
 *   apart for the small classes) nor the two its start rooms' tops span,
 *   and one whose
 *   busy classes hold 64-256 blocks each touches a page of the middle
 *   area for two of them, not one per class.
 *
 * tick counts requests down; when the fast path takes it to 0 it goes to
 * the slow path, which adds the value the tick was armed with (info.armed)
 * to the request total, re-arms the tick and, every ND_TICK_PERIOD
 * requests, lets the thread run its maintenance check. So requests of a
 * class are info.nreq + (info.armed - tick), exactly, without a counter
 * of its own on the fast path; frees into the cache are derived in the same
 * way (nd_tcache_stats_add).
 *
 * Heap profiling (prof=1, docs/profiling.md) uses the same tick: each bin
 * counts the requests to its next sample down (its cold part's prof_left:
 * the bytes to the sample, drawn from an exponential distribution of mean
 * prof_rate, over the class's size, rounded up), and the tick is armed
 * with them (at most ND_TICK_PERIOD), so the request that crosses the
 * sampling point takes the slow path and is sampled. The
 * fast paths do not change; without profiling armed is ND_TICK_PERIOD.
 */
#ifndef ND_TCACHE_H
#define ND_TCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "class.h"
#include "config.h"
#include "counters.h"
#include "heap.h"

/*
 * Hot part of a bin, read and written by the fast paths (half a cache
 * line: two bins to a line).
 * Invariants: low <= cur <= empty; info.cap <= its room in the large area
 * (nd_bin_room: its layout's cap_max, or more for a small class,
 * tcache.c); either the bin has no slots yet (low == cur == empty == NULL,
 * cap == 0) or its layout's (nd_bin_lay) cap_max != 0, *empty == NULL and
 * empty is one of its own sentinel slots: its first room's (when its
 * layout has_first and it has a near record), in the struct, until its
 * blocks needed more than its room there (ND_BIN_FIRST_ROOM), else start_end, in the cache's start area, until its
 * blocks needed more than its room there (nd_bin_start_room: twice its
 * starting capacity), else mid_end (when nonzero), in the middle
 * area, until they needed more than its room there (ND_BIN_MID_ROOM),
 * else slot_end, in the large area (tcache.c: nd_bin_activate,
 * nd_bin_move); a bin with slots has its bit in its heap's classes
 * (heap.h); empty - low == info.cap, or the room where it is when
 * that is less (the bin moves when a free finds cur == low below its
 * capacity); [cur, empty) are free blocks of the bin's class, each
 * carrying the freed-block mark (page.h), from pages of the tcache's kind
 * of memory: its heap's pages, and pages of other heaps of that kind whose
 * blocks this thread freed (the free fast path caches every block of its
 * kind; an overflow puts those of other heaps' pages in the transfer
 * store of the kind (xfer.h) as far as it has room, and a flush gives each
 * other block back to its page, those of one page together: the heap's own
 * without an atomic, the others as one chain per page); 0 < tick <= ND_TICK_PERIOD except transiently 0 between a fast
 * path that took it there and the slow path it calls, and 0 while its class
 * was never used: its cold part is then all zero, and its first request
 * (nd_tcache_count_request) or the first free into it (nd_bin_activate)
 * sets it up (tcache.c: nd_bin_info_init), so the cold parts of the
 * classes a thread never uses are never written. The tier call's
 * counts of the blocks its fast path took from the bin are not here but
 * in the cache's cold tail (nd_tcache.tier_hits, at the same stride), so
 * that a thread's bins take 1.5 KiB, not 3.
 */
typedef struct nd_bin {
    void   **cur;
    void   **empty;
    void   **low;
    int64_t  tick;
} nd_bin;

_Static_assert(sizeof(nd_bin) == ND_BIN_BYTES, "a hot bin is half a cache line: class index << 5");
/* Bin at byte offset `off` of a thread cache's array `bins` (the fast
   paths read and write its words as plain C: from h58a to stop 69 they
   were asms on x86-64, each access addressed as bins + off, the tick's
   decrement and the push's step of cur read-modify-writes of memory, the
   whole array the asms' memory operand: 3 instructions fewer a pair by
   callgrind, but on stop 69's Intel Xeon VM a malloc/free pair of 32 B
   took 8 ns against 3.5 (micro -m pair -s 32 -t 1; at -t 2 6.4 against
   3.6, -s 256 4.0 against 3.55, -m batch -s 64 5.4 against 4.2; the tick's
   decrement in memory with its flags taken most of it, the other asms the
   rest: docs/results.md, stop 69). Time, not instructions, is what the
   fast paths are measured by.) */
#define ND_BIN_AT(bins, off) ((nd_bin *)((char *)(bins) + (off)))
#define ND_TICK_PERIOD 1024
_Static_assert(ND_TICK_PERIOD <= UINT16_MAX, "a cold part's armed and period_left in 16 bits (nd_bin_info)");
_Static_assert(ND_TIER_COUNT <= 4, "a bin's tier counters take as many bytes as the bin (nd_tcache.tier_hits)");
/* follow_thread (thread.c): on a machine where a thread can move to another
   node, a plain cache's tick is armed with at most the requests of
   ND_LOOK_BYTES of its class, so each class looks at the CPU's node at
   least that often: after a move, the blocks of the old node the cache
   hands out before the thread notices are bounded by the bytes of its
   busiest class, not by the cache's size. A tick that ran out for a look
   only takes the short way (alloc.c: nd_malloc_tick; about 40 instructions
   with an rseq area, the CPU compared with the last one seen), not the
   whole slow path (about 200), so the budget can be small and classes of
   8 KiB and more look every ND_LOOK_MIN requests.
   A thread that moved lately is likely to move again (a program that moves
   its threads, a scheduler that balances them across nodes): after a move
   its plain cache is watched (thread.c) for ND_WATCH_MS and for
   ND_WATCH_REQUESTS of its requests, whichever lasts longer (on a loaded
   machine a thread makes its requests, and is moved again, later in
   time), every tick armed for one request (nd_tcache_look_watched), so
   the next move is seen at the first malloc after it, before the cache
   hands out a block of the old node. Such a block, written from the new
   node, is what makes the kernel's NUMA balancing migrate the 2 MiB huge
   page around it to the new node, under the old node's threads
   (docs/results.md). Past its second, a watch costs a move at most
   ND_WATCH_REQUESTS short ways (about 43 instructions each). */
#define ND_LOOK_BYTES     16384
#define ND_LOOK_MIN       2
#define ND_WATCH_MS       1000
#define ND_WATCH_REQUESTS 65536

/*
 * Cold part of a bin (slow paths only). The capacity adapts (from 32
 * blocks on, growing only at the third of fills or overflows in a row
 * that each came soon after the one before, and halved under 32 at a fill
 * long after the last one; a bin under 32 grows to 32, not past it:
 * tcache.c, nd_bin_since): a bin that
 * overflows after having run dry since its last flush (its working set does
 * not fit: fill, flush, fill, ...) doubles its capacity, up to cap_max (from
 * the options tcache_count and tcache_bytes; a bin of a small class whose
 * batches cycle through the transfer store may grow past it into the rest
 * of its slots, tcache.c: nd_tcache_grow_past); one
 * that runs dry again without an overflow in between (its thread hands its
 * blocks to others: a producer) doubles too, for bigger fills, but only up
 * to 16 KiB worth of blocks or 64 of them (tcache.c: ND_BIN_DRY_BYTES); a GC
 * pass that finds more than half of it unused all along halves it, down to
 * the capacity it started with (8 KiB worth of blocks, 2 to 32; tcache.c).
 */
typedef struct nd_bin_info {
    uint64_t nreq;       /* requests counted at tick roll-overs */
    uint64_t mark;       /* the class's request count (nd_bin_requests) at
                            which the bin would be empty again with no free
                            in between (after a fill: the count then plus the
                            blocks it took), or at its last overflow */
    uint16_t armed;      /* the value the tick was last armed with (ND_TICK_PERIOD without profiling; never more: nd_tcache_arm) */
    uint16_t period_left; /* requests to the next maintenance check (ND_TICK_PERIOD apart); 0 only while the class was never used (nd_bin_info_init) */
    uint32_t cap;        /* current capacity: empty - low (0 until the bin has slots) */
    uint32_t low_water;  /* fewest blocks seen cached since the last GC pass
                            (sampled at fills and tick roll-overs), or
                            ND_NO_SAMPLE */
    uint32_t fill;       /* blocks the next fill takes at most: ND_FIRST_FILL
                            at first (fewer past 256 B: ND_FIRST_FILL_BYTES
                            worth; 1 in a cache that fills from one, growing
                            by half up to 32: tcache.c, nd_bin_next_fill;
                            from the nursery in whole pairs of cache lines,
                            which may skip a bound: nd_bin_nursery_take),
                            doubling at each fill, so a thread
                            that makes a few requests of a class does not
                            take (and at its exit give back) a full
                            cache's worth */
    uint32_t run_fill;   /* when last == ND_LAST_FILL: the blocks the fills
                            since the bin's last overflow (or since it was
                            made) took, at most UINT32_MAX */
    uint8_t  last : 2;        /* the bin's last refill or overflow: ND_LAST_FILL,
                                 ND_LAST_SPILL, or 0 (none yet) */
    uint8_t  filled : 1;      /* the bin ran dry since its last flush */
    uint8_t  spilled_all : 1; /* the bin's last overflow sent all of it away */
    uint8_t  spilled_few : 1; /* the bin's last overflow sent less than half of it */
    uint8_t  quick : 2;       /* the bin's last fills and overflows in a row
                                 that each came within ND_QUICK_CYCLE
                                 capacity of the one before (tcache.c:
                                 nd_bin_since), at most 3: from 32 blocks
                                 it grows only at ND_QUICK_RUN (3) */
    uint8_t  inherited : 1;   /* the capacity past its start is a former
                                 thread's of the record (thread.c: a pooled
                                 record taken), not used by this one yet (no
                                 request counted, no growth since): given
                                 back when another bin of the cache would
                                 grow past tcache_bytes (tcache.c:
                                 nd_tcache_reclaim) */
    uint8_t  cycles : 6;      /* overflows in a row, each the first after
                                 fills, that found the bin cycling whole
                                 bins: the one before sent the whole bin
                                 away and the fills since took a bin's
                                 worth back (at most ND_CYCLES_MAX;
                                 tcache.c: ND_EXTRA_CYCLES, ND_OWN_CYCLES) */
    uint8_t  took_foreign : 1; /* a fill of the bin's cycles (cycles != 0)
                                 took a block of another heap's page from the
                                 transfer store (of the first and last it
                                 took: tcache.c, nd_tcache_took_foreign); 0
                                 while cycles is 0 */
    uint8_t  own_route : 1;   /* the bin cycles its own heap's batches:
                                 its overflows send its heap's blocks home
                                 (not to the store) and its fills skip the
                                 store, until its cycles end (tcache.c:
                                 ND_OWN_CYCLES); set only with took_foreign
                                 and cycles >= ND_OWN_CYCLES */
    uint16_t prof_left;  /* prof=1: the class's requests to its next
                            sample, counting this way (0: none drawn yet;
                            with ND_PROF_LEFT_REDRAW, a countdown cut short
                            at ND_PROF_LEFT_MAX: at its end a new one is
                            drawn, no sample taken); once drawn, never
                            below armed (the tick runs out at the sample
                            or before it). Here, in the cold part
                            the class's requests write anyway, not in an
                            array of the cache's own: that was on the
                            struct's third OS page, which a thread of a few
                            small classes then wrote only for it */
    nd_bin_counters counts;   /* the class's counters its fills and overflows
                            write (counters.h: source BIN); the others are in
                            the cache's cstats, on pages a thread that uses a
                            few small classes does not write */
} nd_bin_info;
_Static_assert(sizeof(nd_bin_info) == 40 + sizeof(nd_bin_counters), "a bin's cold part: what changes, 40 bytes, and its counters (tcache.h: the cache's pages)");
_Static_assert(sizeof(nd_bin_counters) == 72, "the counters in a bin's cold part (tcache.h: the cache's pages)");

/*
 * What a bin's cold part would repeat in every cache of one kind: its
 * largest capacity (cap_max, from the options tcache_count and
 * tcache_bytes; 0: the class has no cache) and where its three rooms end
 * (has_first: whether it starts in a first room, in its near record when
 * it has one; their sentinels' slot indices: start_end in the start area, mid_end in
 * the middle area or 0 when it has none there, slot_end in the large
 * area, where its top min(cap_max, ND_BIN_MID_ROOM) slots are on one OS
 * page; tcache.c: nd_tcache_layout_make). One table per kind of cache
 * (nd_tcache_layouts, set once at start-up by nd_tcache_process_init,
 * read-only after): ND_LAYOUT_NONE, all zeros (shared heaps' caches, the
 * static empty and dead ones: no class has a cache), ND_LAYOUT_PLAIN and
 * ND_LAYOUT_BOUND (a node-targeted cache: under secure=1 all zeros too).
 * A cache names its table (nd_tcache.layout), so its own cold parts hold
 * only what changes (tcache.h: the cache's pages).
 */
typedef struct nd_bin_layout {
    uint32_t cap_max;
    uint32_t has_first;  /* 1: it has a first room (ND_BIN_FIRST_ROOM slots and a sentinel) in its near record when it has one (tcache.h: nd_bin_near); 0: none (a start room of at most that many) */
    uint32_t start_end;  /* its sentinel slot in the start area: nd_bin_start_room slots below it */
    uint32_t mid_end;    /* its sentinel slot in the middle area, ND_BIN_MID_ROOM slots below it, or 0: no room there */
    uint32_t slot_end;   /* its sentinel slot in the large area: nd_bin_room slots below it are its own */
} nd_bin_layout;
enum { ND_LAYOUT_NONE, ND_LAYOUT_PLAIN, ND_LAYOUT_BOUND, ND_LAYOUT_COUNT };
extern nd_bin_layout nd_tcache_layouts[ND_LAYOUT_COUNT][ND_CLASS_COUNT] nd_hidden;
/* A bin's batches follow the way its blocks flow (tcache.c): a fill that
   comes after a fill with fewer than a quarter of the capacity freed into
   the bin in between (its blocks leave in a run: a burst of requests, a
   producer) takes the bin's whole capacity; an overflow that comes after
   an overflow with fewer than a quarter of the capacity requested in
   between (a run of frees, a consumer) sends the whole bin away. Else
   (the thread goes back and forth around the bin's edge) half moves,
   which keeps the blocks it will reuse, and a run of requests and frees
   that wanders around an edge (bench/mstress) is not cut into a fill or
   flush every few calls. The capacity, and so the bytes a cache may hold,
   is the same either way. "A quarter" is exact (4 x the calls in between
   against the capacity): a quarter rounded down is 0 for a bin of 2 or 3
   blocks, which then never moved more than one block at a time, a slow
   path every request or free (the classes of 2 KiB and more of rptest -t 8,
   held at 2-4 blocks by the cache's share of tcache_total).
   An overflow that comes after a fill (the bin ran dry, was filled, and
   is full again without room to grow), when the overflow before that did
   not send the whole bin away, sends only a 64th of the bin: the blocks
   over its working set are then what that fill brought and the thread did
   not use, often a few. Half, as a fill takes, would leave the bin short
   by as much as it then fills at the next batch, which then overflows by
   as much again: a working set just under the capacity (batches of 1,000
   blocks in a bin of 1,024) flushed and filled half the bin every round,
   or never, by the bin's history (bench/micro -m batch -s 256: secure=1
   1,031 flushes in 1,000 rounds, the default 14). A working set that does
   not fit sends its whole bin away at its overflows (a run), and the
   overflow after its next fill sends half, as before.
   Whole-bin moves overshoot a working set that fits: batches of W <= the
   capacity alternate a run of requests and a run of frees, and a whole
   fill in the first leaves the bin holding what the second then overflows
   by, and a whole overflow in the second leaves it short by what the next
   batch fills again: a cycle of two fills and two overflows per batch that
   moves 1-3 bins' worth of blocks through the transfer store for as long
   as the thread runs, entered or not by the bin's history (a GC pass's
   flush, the store's contents: bench/micro -m batch -s 256 -t 2 settled
   at 28 flushes in most runs and cycled at 850-1,950 in others, the
   bimodal rows of issue 23). So a fill takes the whole capacity only once
   the fills since the bin's last overflow took a bin's worth (run_fill),
   and an overflow sends the whole bin only when the one before it sent
   half or more (not a 64th: spilled_few): a batch that fits then loses a
   64th of the bin per batch until it fits (the unit test
   batches_that_fit_the_bin_settle_after_a_flush), and a run of requests or
   frees longer than the bin still moves whole bins from its third fill or
   overflow on. */
/* The process's pool of cache capacity past tcache_total (tcache.c:
   nd_tcache_extra_draw): ND_POOL_MULT x tcache_total for all the caches
   together (16 MiB by default; tcmalloc's thread caches share 32 MiB),
   and each cache at most ND_EXTRA_MULT x tcache_total of it, while CPUs
   are shared at most its even part (the pool over the caches). A bin
   that cycles may grow into a room of ND_EXTRA_MULT x its capacity, or
   ND_EXTRA_MULT x tcache_total's worth of its blocks (tcache.c:
   nd_bin_room). */
#define ND_EXTRA_MULT 4u
#define ND_POOL_MULT  16u
_Static_assert(ND_EXTRA_MULT <= ND_POOL_MULT, "a cache draws at most the pool");
#define ND_SPILL_AFTER_FILL 64u
#define ND_LAST_FILL  1u
#define ND_LAST_SPILL 2u
#define ND_FIRST_FILL 4
#define ND_NO_SAMPLE UINT32_MAX
/* prof=1: a bin's prof_left whose countdown was cut at ND_PROF_LEFT_MAX
   requests, the gap drawn being longer: at its end no sample is taken, a
   new gap is drawn (the exponential's rest past a point is the same
   exponential: the draws stay exact), tcache.c. */
#define ND_PROF_LEFT_REDRAW 0x8000u
#define ND_PROF_LEFT_MAX    (ND_PROF_LEFT_REDRAW - 1)

/* The near records (tcache.h, below): the first ND_NEAR_BINS classes a
   thread uses, in the order it first uses them (nd_bin_info_init), have
   their cold part there, on the struct's first OS page, and those of the
   classes below 1 KiB whose start room is larger (class.h: 8 of 16-128 B,
   then 4 a doubling; tcache.c: nd_bin_has_first) their first room too:
   ND_BIN_FIRST_ROOM slots and a sentinel, where the bin starts. The other
   classes' cold parts are binfo[c], on the struct's second and third
   pages. 11 records of 216 bytes are what the first page has room for
   after the bins, the cache's fields and the heap's first line (a static
   assert below): a thread that makes a few requests of 16-160 B and one
   of 512 B (bench/threadcost) uses 10 or 11 classes. 12 slots: a bin's
   fills from the nursery take at most 12 blocks up to their total of 24
   (tcache.c: nd_bin_nursery_take; 8, 8, 8 blocks of 16, 48, 80 and 112 B,
   4, 4, 4, 4, 8 of 32, 96, 160 and 224 B). */
#define ND_BIN_FIRST_ROOM   12u
#define ND_FIRST_CLASSES    19u
#define ND_NEAR_BINS        11u
typedef struct nd_bin_near {
    nd_bin_info info;
    void       *room[ND_BIN_FIRST_ROOM + 1];
} nd_bin_near;
_Static_assert(sizeof(nd_bin_near) == 216, "a near record: a cold part of 112 bytes and a room of 12 slots and its sentinel (tcache.h: the cache's pages)");

/* Where the heap's other per-class counters begin in the struct: on its
   fourth OS page, which they alone take (48 x 64 B), so that a busy
   thread whose classes are below 1 KiB (their cold parts in its near
   records and on the second page) and that counts remote frees writes 3
   pages of its struct and not 4 (bench/larson -t 8: after the cold
   parts, they spanned the third and fourth); the pad is what the other
   classes' cold parts leave of the third. */
#define ND_TC_CSTATS_AT  (3 * 4096)
#define ND_TC_CSTATS_PAD 1152

/*
 * A thread cache and the heap under it.
 * Layout: what a thread that uses a few classes writes is on the struct's
 * first OS page, the rest after it (bench/threadcost: a thread making 64
 * requests of 16-160 B and one of 512 B writes that page of its cache and
 * no other, docs/results.md, h52t):
 *
 *     0      bins[48], 32 B each (the fast paths')            1.5 KiB
 *     1536   the cache's own fields, near_of[48]              104 B
 *     1640   near[11], 216 B each: the cold parts (what
 *            changes per class and the counters its fills and
 *            overflows write) of the first 11 classes the
 *            thread uses, in the order it uses them, and the
 *            first rooms of those below 1 KiB (12 slots and
 *            a sentinel)                                       2.3 KiB
 *     4032   heap: its first line (its owner, clock, counters'
 *            pointer: heap.h, ND_HEAP_HOT_BYTES) the last of
 *            the first OS page; its page queues and statistics
 *            on the second, untouched while it has no page     1.5 KiB
 *     5632   binfo[48], 112 B each: the cold parts of the
 *            classes a thread uses past its first 11, class 0
 *            first, written only when the thread first uses
 *            their class (nd_bin_info_init, tcache.c)          5.25 KiB
 *    11008   a pad
 *    12288   cstats[48], the heap's other per-class counters,
 *            64 B each (remote frees, slow and direct frees,
 *            ...: counters.h; a sample's counts are the
 *            process's, route.c), alone on the fourth OS page  3 KiB
 *    15360   tier_hits (cold: the tier calls')
 *    20480   the slots (ND_TC_HEAD_BYTES: the struct rounded up to
 *            whole OS pages; a cache with slots is a mapping of its
 *            own, page-aligned, meta.c): the start, middle and large
 *            areas
 *
 * Invariants: the bins' slot arrays (slot_bytes) follow the struct in the
 * same allocation, from ND_TC_HEAD_BYTES on (nd_tcache_slots), the start
 * area first; layout names the
 * table of the cache's kind (nd_bin_layout: ND_LAYOUT_NONE for a shared
 * heap's cache and the static ones, ND_LAYOUT_BOUND for a node-bound
 * cache, ND_LAYOUT_PLAIN otherwise); kind == nd_kind_of(heap.bound, heap.node), the kind of
 * the blocks the bins hold (ND_KIND_NONE for a shared heap's cache, which
 * holds none; ND_KIND_NO_PAGE for the static empty and dead caches of
 * thread.c and for plain caches under secure=2; that kind with
 * ND_KIND_SEALED for plain caches under secure=1, whose bins hold plain
 * memory of the heap's node and use that kind's transfer store); cap_bytes == the sum of the bins' cap * class size: a bin
 * grows only while that stays within the option tcache_total, so a thread
 * cache holds at most about that many bytes however many classes it uses
 * (its bins' starting capacities aside). A bin marked inherited has its
 * slots, and its cache is marked inherited too (tcache.c:
 * nd_tcache_reclaim clears them all).
 * fill_from_one is set only in a plain cache (not shared, not bound) of
 * a thread other than the process's first (ND_TID_FIRST), made with
 * secure off: the caches the nursery may serve (tcache.c).
 * gc_samples counts tick roll-overs since the last GC pass. Under secure=2
 * every bin has capacity 0; under secure=1 the bins of classes above
 * ND_LOOKUP_MAX and every bin of a node-bound cache have, the plain
 * cache's kind carries ND_KIND_SEALED (no page's kind matches it: every
 * free takes the fast path's other-kind branch, nd_free_other_kind, which
 * checks the block's canary and then caches it), and the blocks its bins
 * hold carry their canary (secure.h). look_arm is the per-class bound on
 * a plain cache's ticks (follow_thread): nd_tcache_look_arm, or
 * nd_tcache_look_watched while its thread is watched (never set while heap
 * profiling is on, and unset when profiling starts); NULL for a node-bound
 * or shared heap's cache, whose ticks only count to ND_TICK_PERIOD.
 * `secure`, which the tcache only carries, is the cache's secure state
 * (secure.c attaches it, checks it and takes it off; NULL otherwise).
 * tier_hits[c][t] only grows: the blocks the tier call's fast path
 * (tier_api.c) took from bin c for tier t (its owner's plain adds, read
 * by reports as whole words; thread.c attributes them to CPU nodes); a
 * row per bin at the bins' stride, so the fast path finds it from the
 * bin's address.
 */
typedef struct nd_aligned(ND_CACHE_LINE) nd_tcache {
    nd_bin       bins[ND_CLASS_COUNT];
    uint32_t     slot_bytes;
    uint32_t     gc_samples;
    uint32_t     kind;          /* nd_kind_of(heap.bound, heap.node) (secure=1: | ND_KIND_SEALED); the free fast path compares pages' kind with it */
    uint8_t      layout;        /* its kind's nd_tcache_layouts row: ND_LAYOUT_NONE, _PLAIN or _BOUND */
    uint8_t      prof_slab_busy;   /* prof=1: its thread is cutting a cell of its kind's slab (slab.h; a signal handler's sample is not taken) */
    uint8_t      fill_from_one; /* its bins' first fill takes one block, or a pair of cache lines' worth (a cache the nursery may serve: tcache.c, nd_bin_first_fill) */
    uint8_t      near_used : 7; /* near records given to classes so far (at most ND_NEAR_BINS) */
    uint8_t      inherited : 1; /* a bin of it may be inherited (nd_bin_info.inherited) */
    const uint32_t *look_arm;   /* plain: nd_tcache_look_arm, or nd_tcache_look_watched while watched; NULL for the others */
    size_t       cap_bytes;     /* sum over the bins of cap * class size (bounded by tcache_total, or by its share of it while CPUs are shared, bins of up to ND_BIN_SHARED_FLOOR bytes aside; past either by cap_extra) */
    size_t       cap_extra;     /* bytes of capacity past tcache_total, or past its share of it while CPUs are shared, drawn from the process's pool (ND_POOL_MULT; at most ND_EXTRA_MULT x tcache_total) */
    uint64_t     prof_rng;      /* prof=1: the state of the sampling draws */
    struct nd_secure *secure;   /* secure=1: random bins and quarantine (secure.h) */
    uint8_t      near_of[ND_CLASS_COUNT];   /* class c's near record + 1, or 0: its cold part is binfo[c] (nd_bin_info_of) */
    nd_bin_near  near[ND_NEAR_BINS];
    nd_heap      heap;
    nd_bin_info  binfo[ND_CLASS_COUNT];
    uint8_t      cstats_pad[ND_TC_CSTATS_PAD];
    nd_class_counters cstats[ND_CLASS_COUNT];   /* heap.cstats: an OS page of their own */
    uint64_t     tier_hits[ND_CLASS_COUNT][ND_BIN_BYTES / sizeof(uint64_t)];
} nd_tcache;
_Static_assert(__builtin_offsetof(nd_tcache, cstats) == ND_TC_CSTATS_AT &&
               ND_CLASS_COUNT * sizeof(nd_class_counters) <= 4096,
               "the heap's other counters on one OS page of their own (tcache.h; ND_TC_CSTATS_PAD: what binfo leaves of the third)");
_Static_assert(sizeof(((nd_tcache *)0)->tier_hits[0]) == ND_BIN_BYTES, "a bin's tier counters at the bins' stride");
_Static_assert(ND_TIER_COUNT <= ND_BIN_BYTES / sizeof(uint64_t), "a counter per tier in a bin's row");
_Static_assert(__builtin_offsetof(nd_tcache, heap) + ND_HEAP_HOT_BYTES <= 4096 &&
               __builtin_offsetof(nd_tcache, heap) + ND_HEAP_HOT_BYTES > 4096 - sizeof(nd_bin_near),
               "the bins, the cache's fields, the near records and the heap's first line fill the struct's first OS page (tcache.h)");
_Static_assert(ND_NEAR_BINS < 127 && ND_FIRST_CLASSES <= ND_CLASS_COUNT, "near_of holds a record's index + 1");

/* Class c's cold part in tc: its near record's when it has one, else
   binfo[c] (tcache.h). Its record is given at the class's first use
   (nd_bin_info_init), while the cold part is all zero, and never taken
   back, so a pointer taken after that stays good; one taken before a
   first use may not be. Other threads (the statistics) read near_of with
   a relaxed load. */
static inline nd_bin_info *nd_bin_info_of(const nd_tcache *tc, unsigned c)
{
    unsigned k = nd_load_relaxed(&tc->near_of[c]);
    return k != 0 ? (nd_bin_info *)&tc->near[k - 1].info : (nd_bin_info *)&tc->binfo[c];
}

/* Where a cache's slots begin: the struct rounded up to whole 4 KiB
   pages (the OS page on x86-64; on a kernel of larger pages, inside the
   struct's last one), so the start area, which a thread that uses a few
   classes touches the top of a room of each, begins on a page of its own
   (tcache.h). */
#define ND_TC_HEAD_BYTES ((sizeof(nd_tcache) + 4095) & ~(size_t)4095)
static inline void **nd_tcache_slots(const nd_tcache *tc)
{
    return (void **)((char *)tc + ND_TC_HEAD_BYTES);
}

/* The tier counters of bin b (tier_hits' row at the bins' stride: from
   the bin's address, one addressing mode on the tier call's fast path). */
_Static_assert(__builtin_offsetof(nd_tcache, bins) == 0, "a bin's tier counters are found from its address");
static inline uint64_t *nd_bin_tier_hits(nd_bin *b)
{
    return (uint64_t *)((char *)b + __builtin_offsetof(nd_tcache, tier_hits));
}

/* The layout entry (nd_bin_layout) of bin c of tc: its kind's. */
static inline const nd_bin_layout *nd_bin_lay(const nd_tcache *tc, unsigned c)
{
    return &nd_tcache_layouts[tc->layout][c];
}
/* Bin c's largest capacity (0: no cache for its class). */
static inline uint32_t nd_bin_cap_max(const nd_tcache *tc, unsigned c)
{
    return nd_tcache_layouts[tc->layout][c].cap_max;
}

/* A new thread cache with its heap for (node, bound), owner `tid`;
   `shared`: no cache (capacity 0), for the locked shared heaps. NULL when
   out of memory. */
nd_tcache *nd_tcache_create(uintptr_t tid, int node, bool bound, bool shared) nd_hidden;
/* After tc's heap moved to another node (follow_thread: heap.node is the
   new one): the kind its free fast path compares pages' kind with, that
   node's plain kind (under secure=1 with ND_KIND_SEALED: every plain free
   checks the block, nd_free_other_kind). */
void       nd_tcache_follow_node(nd_tcache *tc) nd_hidden;
void       nd_tcache_destroy(nd_tcache *tc) nd_hidden;
/* In a child after fork: tc belonged to a thread the fork did not copy;
   it no longer counts among the caches that share the budget (tc stays
   as it was). nd_tcache_destroy calls it too. */
void       nd_tcache_lost(const nd_tcache *tc) nd_hidden;

/* The tcache whose heap is h. */
static inline nd_tcache *nd_tcache_of_heap(nd_heap *h)
{
    return (nd_tcache *)((char *)h - __builtin_offsetof(nd_tcache, heap));
}

/* Counts a request of class c made on the slow path; the bits of the
   result: ND_COUNT_MAINTAIN, time for a maintenance check;
   ND_COUNT_SAMPLE, prof=1 and the heap profile samples this request. */
#define ND_COUNT_MAINTAIN 1u
#define ND_COUNT_SAMPLE   2u
unsigned nd_tcache_count_request(nd_tcache *tc, unsigned c) nd_hidden;
/* Its common case, inline for the slow paths (a refill's request mostly
   finds its tick with requests left): the tick had more than this one
   left; it counted it, nothing else to do. False: call
   nd_tcache_count_request (nothing counted yet). */
static inline bool nd_tcache_count_quick(nd_tcache *tc, unsigned c)
{
    nd_bin *b = &tc->bins[c];
    if (b->tick <= 1)
        return false;
    b->tick--;
    return true;
}
/* prof=1: the mean bytes between two samples (0: profiling off), set once
   the profiler is ready (prof.c). */
extern int64_t nd_tcache_prof_rate nd_hidden;
/* follow_thread: per class, the most requests a plain cache's tick is
   armed with (ND_LOOK_BYTES; ND_TICK_PERIOD where threads cannot change
   nodes, or until start-up sets them). */
extern uint32_t nd_tcache_look_arm[ND_CLASS_COUNT] nd_hidden;
/* The same while a plain cache is watched (after a move: ND_WATCH_MS,
   ND_WATCH_REQUESTS): 1 for every class, each request looks. */
extern const uint32_t nd_tcache_look_watched[ND_CLASS_COUNT] nd_hidden;
/* Did bin c's tick run out (the fast path counted its last request) with
   a block still in the bin? Then it may have run out only for
   follow_thread's look at the CPU's node (nd_thread_look). */
static inline bool nd_tcache_tick_out(const nd_tcache *tc, unsigned c)
{
    const nd_bin *b = &tc->bins[c];
    return b->tick == 0 && b->cur != b->empty;
}
/* Was bin c's tick, now run out, armed for a look only: not for the
   maintenance roll-over, nor for a heap-profile sample? */
static inline bool nd_tcache_look_due(const nd_tcache *tc, unsigned c)
{
    const nd_bin_info *bi = nd_bin_info_of(tc, c);
    return bi->armed < bi->period_left && nd_load_relaxed(&nd_tcache_prof_rate) == 0;
}
/* The rest of a request whose tick ran out for a look only (both tests
   above true, tc a plain cache): counts the tick's requests and arms it
   again, as nd_tcache_count_request would (tcache.c's nd_tcache_arm, here
   inline for a plain cache: its look budget, or the maintenance period's
   rest if shorter), and pops the bin's block. */
static inline void *nd_tcache_look_pop(nd_tcache *tc, unsigned c)
{
    nd_bin *b = &tc->bins[c];
    nd_bin_info *bi = nd_bin_info_of(tc, c);
    uint32_t done = bi->armed, left = bi->period_left - done;
    uint32_t next = nd_load_relaxed(&tc->look_arm[c]);
    nd_store_relaxed(&bi->nreq, bi->nreq + done);
    bi->period_left = left;
    if (next == 0 || next > left)   /* 0: start-up has not set it */
        next = left;
    nd_store_relaxed(&bi->armed, next);
    nd_store_relaxed(&b->tick, (int64_t)next);
    void *p = *b->cur++;
    nd_block_unmark(p);
    return p;
}
/* follow_thread's watch on plain cache tc (its thread's): on, its ticks
   are armed for one request from now on (the bins re-armed at once, their
   requests counted); off, each bin takes its budget again at its next
   look. On does nothing while heap profiling is on (its samples arm the
   ticks and take the whole slow path). */
void    nd_tcache_watch(nd_tcache *tc, bool on) nd_hidden;
static inline bool nd_tcache_is_watched(const nd_tcache *tc)
{
    return tc->look_arm == nd_tcache_look_watched;
}
/* The requests tc's bins have counted (its owner's thread): every class's
   nreq + armed - tick. */
uint64_t nd_tcache_requests(const nd_tcache *tc) nd_hidden;
/* Once at start-up, after the options and the topology: the most requests
   a plain cache's tick is armed with, per class (ND_LOOK_BYTES where
   threads can change nodes and follow_thread is on, else ND_TICK_PERIOD). */
void    nd_tcache_process_init(void) nd_hidden;
/* A gap in bytes to the next sample: exponential, of mean
   nd_tcache_prof_rate; *rng is the caller's state of the draws. */
int64_t nd_tcache_prof_gap(uint64_t *rng) nd_hidden;
/* ln(x) for x > 0 and normal, to within 1e-11 (no libm; the gaps' logarithm). */
double nd_tcache_ln(double x) nd_hidden;
/* prof=1: arms every bin of tc (its owner's thread) for its first sample
   (a cache made before profiling started, or a new one). */
void    nd_tcache_prof_rearm(nd_tcache *tc) nd_hidden;
/* prof=1: a new countdown for bin c of tc (its prof_left), in requests. */
uint32_t nd_tcache_prof_draw(nd_tcache *tc, unsigned c) nd_hidden;
/* Takes back the count of a request of class c that failed; returns NULL. */
void *nd_tcache_uncount(nd_tcache *tc, unsigned c) nd_hidden;
/* Refills bin c, empty, from the heap (its blocks then in [cur, empty));
   false when out of memory (errno = ENOMEM). */
bool  nd_tcache_fill(nd_tcache *tc, unsigned c) nd_hidden;
/* A block of class c for the slow path: from the bin (refilled if empty),
   or straight from the heap for classes without a cache. NULL = ENOMEM. */
void *nd_tcache_alloc(nd_tcache *tc, unsigned c) nd_hidden;
/* Caches free block p of class c (a block of this heap's hot pages, or of
   another heap's page of the same kind of memory: see nd_free_slow), making
   room first if the bin is full (grow it, or flush half or all of it); p gets the
   freed-block mark. */
void  nd_tcache_push(nd_tcache *tc, unsigned c, void *p) nd_hidden;
/* Returns the n oldest blocks of bin c to their pages. */
void  nd_tcache_flush(nd_tcache *tc, unsigned c, size_t n) nd_hidden;
/* The transfer stores (xfer.h) back to their blocks' pages, through tc
   (its thread's): all: every store, emptied (nodal_collect); else each
   store once per purge_delay (whichever thread's maintenance comes first,
   of any kind: a kind whose threads all exited is swept too), the classes
   no cache took a block from since the last such pass. */
void  nd_tcache_xfer_sweep(nd_tcache *tc, uint64_t now, bool all) nd_hidden;
/* The store of tc's kind emptied to its blocks' pages (every heap's of
   that kind, through tc): a heap about to leave its node (follow_thread)
   gets its own blocks back first, so that its pages can be retired and
   purged rather than held by the store while no heap of the old node
   takes them. */
void  nd_tcache_xfer_give_back(nd_tcache *tc) nd_hidden;
/* Every cached block back to its pages. */
void  nd_tcache_flush_all(nd_tcache *tc) nd_hidden;
/* The bytes of the blocks tc's bins hold (the sizes their capacities are
   counted in): what a flush would give back to their pages. */
size_t nd_tcache_held_bytes(const nd_tcache *tc) nd_hidden;
/* Are CPUs shared: more than two thread caches per CPU (those of live
   and pooled threads)? Then each cache grows only to its share of the
   budget (tcache.c: nd_tcache_total_share). */
bool  nd_tcache_cpus_shared(void) nd_hidden;
/* tc's cached blocks to the transfer store of its kind (as an overflow
   sends them: what the store has no room for goes to its pages), when it
   holds half of tcache_total or more, those of every bin that holds 8 KiB
   of them or more (tcache.c: ND_HAND_OVER_MIN), left empty at its
   capacity; under transfer=2 only, else nothing. For a cache whose
   thread exits while CPUs are shared (thread.c: nd_thread_done), so that
   the threads that run reuse its blocks instead of carving pages while
   the record waits. */
void  nd_tcache_hand_over(nd_tcache *tc) nd_hidden;
/* tc's record was pooled and a new thread takes it: the capacities its
   bins grew to past their start are the former thread's, marked
   inherited until this thread uses the bin; a bin that would grow past
   tcache_bytes, which the cache's other bins refuse, takes them back
   first (tcache.c: nd_tcache_reclaim). */
void  nd_tcache_inherit(nd_tcache *tc) nd_hidden;
/* GC pass: blocks the bins did not need since the last pass go back, and
   bins that kept more than half their capacity unused shrink; force: all. */
void  nd_tcache_gc(nd_tcache *tc, bool force) nd_hidden;
/* Is a GC pass due (enough samples since the last)? */
bool  nd_tcache_gc_due(const nd_tcache *tc) nd_hidden;

/* Adds the statistics of tc (counters and what its bins imply) into
   cls[ND_CLASS_COUNT] and tot. */
void  nd_tcache_stats_add(const nd_tcache *tc, nd_snap_class *cls, nd_snap_totals *tot) nd_hidden;
/* The blocks the tier call's fast path took from tc's bins for tier t
   (tier_hits), and their bytes (the sizes of the blocks the bins hold). */
void  nd_tcache_tier_hits(const nd_tcache *tc, int t, uint64_t *blocks, uint64_t *bytes) nd_hidden;

/* Debug check of the invariants of the bins and the heap. */
bool  nd_tcache_is_valid(const nd_tcache *tc) nd_hidden;

#endif /* ND_TCACHE_H */
