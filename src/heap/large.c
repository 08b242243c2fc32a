/*
 * large.c - large blocks (see large.h): runs of 64 KiB chunks in LARGE
 * segments, one pool of segments per (node, kind), each under its own lock.
 *
 * Locks: a pool's lock (lock.h: large_pool) is held for no call that takes
 * another lock: segments come from and go back to the node cache (node.c)
 * with it released, and node-bound chunks are populated and checked with it
 * released too (their run is reserved first).
 */
#include "large.h"

#include <errno.h>
#include <string.h>
#include "list.h"
#include "lock.h"
#include "meta.h"
#include "msg.h"
#include "node.h"
#include "options.h"
#include "os.h"
#include "tight.h"
#include "topo.h"

/* The code that takes and gives back a large block of the plainest kind
   (the heap profile's cell slabs are such blocks: slab.c) lies together,
   with the rest of the code a sample runs (nd_sample_path, config.h): a
   process whose only large blocks are its slabs runs about 7 KiB of
   large.c, on the pages of the sample's code (docs/profiling.md, "Cost").
   Only the placement: the code is the same. */
#define nd_large_path nd_sample_path

/* One CPU's cache of freed blocks (large.h), one cache line, no lock
   (compare-and-swap). slot[i]: 0, or a cached block's address (a chunk's
   start: 64 KiB aligned) with its chunks (pages[].reserved, 1-63) in its
   low bits, so that a take chooses a block without reading its
   descriptor. chunks: the chunks of the blocks in the slots, reserved by a
   put before it stores its block (at most ND_LARGE_CPU_CHUNKS) and given
   back by a take after it took one; used: set by a take, cleared by the
   purge's check (nd_large_keep_drain). */
typedef struct nd_aligned(ND_CACHE_LINE) nd_large_cpucache {
    uintptr_t slot[ND_LARGE_CPU_SLOTS];
    uint32_t  chunks;
    uint32_t  used;
    /* What the active gauge would have gained from the blocks this cache
       gave out at a larger size than they were cached with (atomic adds;
       a smaller size goes to the gauge at once, which is never over what
       is in use: config.h, ND_GAUGE_HELD), added to it by maintenance
       (nd_large_gauge_flush) and counted by reports meanwhile
       (nd_large_gauge_pending). */
    long      gauge;
} nd_large_cpucache;
_Static_assert(sizeof(nd_large_cpucache) == ND_CACHE_LINE, "a CPU's cache of freed blocks: one cache line");

#define ND_LARGE_SLOT_CHUNKS ((uintptr_t)63)   /* a slot's chunks bits */

typedef struct nd_aligned(ND_CACHE_LINE) nd_large_pool {
    ND_LIST(nd_segment) segs;
    uint32_t  empty;    /* segments with no block */
    /* One of them, the last that joined the shard or emptied, or NULL
       (under the lock): where a shard of one empty segment finds its
       spare without a walk (nd_large_cleanest_empty). */
    nd_segment *spare;
    /* The active gauge's change by the blocks the shard gave out and took
       back and has not added to it (under the lock): in [0, 2 *
       ND_GAUGE_HELD), the band of config.h, and all of it at maintenance;
       not each (a line every thread writes: two threads each taking and
       freeing large blocks, bench/micro -m large -t 2, 772 against 698 ns
       a step without it; docs/results.md, stop 63). Reports count it
       meanwhile (nd_large_gauge_pending). */
    long      gauge_active;
    size_t    hint;     /* segs.count, also read without the lock (atomics) */
    /* Lending hints (nd_large_borrow), written under the lock, read
       without it (relaxed): room_gen counts the chunks given back (by a
       free, a drain, a shrink: what makes a run another shard's request
       can take; a segment the shard brought is for its own requests, and
       is not counted); lend_fail[resident] is (room_gen << 6 | k) of the
       last borrow of k chunks (step 1) that found no run here (resident:
       all of its chunks resident), k the smallest such since room_gen
       last moved. A borrower of at least k chunks passes a shard whose
       room_gen still says so, and whose stack of deferred frees is empty,
       without taking its lock. */
    uint64_t  room_gen;
    uint64_t  lend_fail[2];
    /* The shard's own search for a resident run (under the lock): at
       room_gen == res_gen, no segment up to res_tail (in the list) had a
       resident run of res_k chunks or more, so the next search of at least
       res_k walks only the segments after it (appended since: a segment
       the node's cache kept with its memory). NULL: none known. A pool of
       333 full segments walked all of them at each block while a segment
       early in its list had a free run, not resident, that the hints start
       at (micro -m batch -s 1m: 1,860 ns a block, docs/results.md, stop
       67). */
    nd_segment *res_tail;
    uint64_t  res_gen;
    unsigned  res_k;
    uint64_t  keep_check;   /* when the kept blocks were last checked for use (under the lock) */
    /* The kept blocks (large.h), without the lock: slot NULL or a block
       (compare-and-swap both ways); keep_used is set by every take. */
    nd_aligned(ND_CACHE_LINE) void *keep[ND_LARGE_KEEP];
    uint32_t  keep_used;
    /* A plain pool that found no room after its release (an
       address-space limit): nd_os_space_returns() + 1 then; 0 otherwise,
       and always for a bound pool (under the lock). While nodal gives
       nothing back, a block that no free run or hole holds fails at once
       rather than trying every mapping and walking every segment again
       (its request then goes to a mapping of its own, route.c). */
    uint64_t  full_at;
    /* Segments a drain of `pending` took out of the shard (one empty
       segment too many), and segments a request brought that a run
       found after all made unneeded (nd_large_recheck: never in a
       shard), linked through next, none with a block: given back to
       their node by the unlock, without the lock (under the lock). */
    nd_segment *gone;
    /* Its fit hints (nd_large_fit, below), NULL until it first holds more
       than ND_LARGE_FIT_FROM segments (under the lock). */
    struct nd_large_fit *fit;
    /* Blocks freed while another thread held the lock (nd_large_defer):
       their descriptors, a stack linked through xnext (pushed with
       compare-and-swap, taken whole by nd_large_drain under the lock). */
    nd_aligned(ND_CACHE_LINE) nd_page *pending;
    /* Debug builds (ND_DEBUG >= 2) only: deferrals under way, each from
       before it marks its block (in_full) until the block is on `pending`
       (sequentially consistent both ways): a block marked and not yet on
       the stack is valid while it is nonzero (nd_large_is_valid, which
       holds the lock that a deferral does not take). 0 in other builds. */
    uint32_t  deferring;
    /* The CPUs' caches of freed blocks (large.h), a line each. */
    nd_large_cpucache cpu[ND_LARGE_SHARD_CPUS];
} nd_large_pool;

/* A shard's lock taken, and the blocks freed meanwhile by threads that
   found it held given back first (nd_large_drain); released, with the
   segments those left empty given back to their node, and the blocks
   freed while it was held (nd_large_unlock). */
static void nd_large_drain(nd_large_pool *pool);
static void nd_large_unlock(nd_large_pool *pool);
#define ND_LARGE_LOCK_TRIES 16   /* a held shard's lock tried again before waiting (nd_lock_brief) */

/* Start-up writes none of them (all zero is an empty pool): a process
   holds pages only of the pools it uses, not 24 KiB for every node id.
   [node][bound][shard] (large.h: the shards of a pool). */
static nd_large_pool nd_large_pools[ND_MAX_NODES][2][ND_LARGE_SHARDS];

/* A pool's fit hints (under its lock): fit_from[k] is the segment of its
   segs a search for a free run of k chunks starts at, every segment
   before it having none (NULL: from the first; ND_LARGE_FIT_PAST: no
   segment has one); fit_seq[k] is its pool_seq (0 from the first,
   UINT64_MAX past the last). next_seq numbers the segments as they join
   segs (pool_seq, rising). A pool of many segments that cannot take a
   request (334 of three 1 MiB blocks each: bench/micro -m batch -s 1m)
   walked all of them, 4 MiB apart, at every request: 3,300 ns a pair
   against mimalloc's 278 (docs/results.md, stop 62). Made (metadata) the
   first time its pool holds more than ND_LARGE_FIT_FROM segments: in the
   pool they took its size past 512 bytes (a pool's lock and shard are
   found from its index: 1,019 -> 1,073 instructions a step of
   bench/micro -m large), and a table for every pool 528 KiB of nodal's
   image. */
/* Hints are kept for runs of up to ND_LARGE_FIT_KS - 1 chunks: a large
   block takes at most 17 (1 MiB and a guard page), a grown one's room 32;
   longer runs (aligned requests) walk from the first. */
#define ND_LARGE_FIT_KS 33u
typedef struct nd_large_fit {
    nd_segment *fit_from[ND_LARGE_FIT_KS];
    uint64_t  fit_seq[ND_LARGE_FIT_KS];
    uint64_t  next_seq;
} nd_large_fit;

/* A shard's lock: ND_LOCK(large_pool, (2 * node + bound) * ND_LARGE_SHARDS + shard). */
static inline nd_lock_t *nd_pool_lock(const nd_large_pool *pool)
{
    return ND_LOCK(large_pool, pool - &nd_large_pools[0][0][0]);
}

/* The shard segment s belongs to (its `shard`, set when its shard took it). */
static inline nd_large_pool *nd_large_pool_of(const nd_segment *s)
{
    return &nd_large_pools[s->node][s->bound ? 1 : 0][s->shard];
}

/* Adds what pool holds back of the active gauge to it, all but `keep`
   (under its lock). */
static nd_noinline void nd_large_gauge_spill(nd_large_pool *pool, long keep)
{
    long v = pool->gauge_active;
    pool->gauge_active = keep;
    if (v != keep)
        nd_gauge_active(v - keep);
}

static void nd_large_gauge_flush(nd_large_pool *pool) { nd_large_gauge_spill(pool, 0); }

/* The active gauge changes by delta: held back by the pool (under its
   lock) within the band of config.h (ND_GAUGE_HELD). */
static inline void nd_large_gauge(nd_large_pool *pool, long delta)
{
    pool->gauge_active += delta;
    if (nd_unlikely(nd_gauge_out_of_band(pool->gauge_active)))
        nd_large_gauge_spill(pool, nd_gauge_held(pool->gauge_active));
}

/* The calling CPU's shard of (node, bound)'s pool: its rseq area's CPU, one
   load (shard 0 before start-up or without one: a choice, never a fault). */
static inline nd_large_pool *nd_large_home(int node, bool bound)
{
    return &nd_large_pools[node][bound ? 1 : 0][(unsigned)nd_os_current_cpu_fast() % ND_LARGE_SHARDS];
}

static inline void nd_large_lock(nd_large_pool *pool)
{
    nd_lock_brief(nd_pool_lock(pool), ND_LARGE_LOCK_TRIES);
    if (nd_load_relaxed(&pool->pending) != NULL)
        nd_large_drain(pool);
}

/* nd_large_lock when the shard's lock is free at once; false (not taken)
   when it is held. */
static inline bool nd_large_trylock(nd_large_pool *pool)
{
    if (!nd_trylock(nd_pool_lock(pool)))
        return false;
    if (nd_load_relaxed(&pool->pending) != NULL)
        nd_large_drain(pool);
    return true;
}

/* Shard sh's index in its pool. */
static inline unsigned nd_large_shard_index(const nd_large_pool *pool)
{
    return (unsigned)(pool - &nd_large_pools[0][0][0]) % ND_LARGE_SHARDS;
}

/* The j-th shard after pool's of its (node, kind), in a ring (j in
   1..ND_LARGE_SHARDS - 1: each other shard once). */
static inline nd_large_pool *nd_large_shard_after(nd_large_pool *pool, unsigned j)
{
    return pool - nd_large_shard_index(pool) + (nd_large_shard_index(pool) + j) % ND_LARGE_SHARDS;
}

/* Do other shards of pool's (node, kind) hold segments (their hints, read
   without their locks)? */
static bool nd_large_others_used(const nd_large_pool *pool)
{
    const nd_large_pool *first = pool - nd_large_shard_index(pool);
    for (unsigned i = 0; i < ND_LARGE_SHARDS; i++)
        if (first + i != pool && nd_load_relaxed(&first[i].hint) != 0)
            return true;
    return false;
}

#define ND_LARGE_FIT_PAST ((nd_segment *)1)
/* The hints are kept and used only while a pool holds more segments than
   this (a walk of as many is short): a pool of a few segments pays
   nothing for them (bench/micro -m large: 1,019 instructions a step
   either way, 1,274 with hints kept at every free). Reset when the pool
   grows past it. */
#define ND_LARGE_FIT_FROM 16

static inline bool nd_large_fit_on(const nd_large_pool *pool)
{
    return pool->segs.count > ND_LARGE_FIT_FROM && pool->fit != NULL;
}
/* Pools past ND_LARGE_FIT_FROM segments, all nodes and kinds: while there
   are none a free keeps no hint (one relaxed load). */
static size_t nd_large_fit_pools;

/* The segment of pool a search for a free run of k chunks starts at (the
   fit hints, above); NULL when none may have one. Under the lock. */
static nd_noinline nd_segment *nd_large_fit_start_past(const nd_large_pool *pool, unsigned k)
{
    nd_segment *s = k < ND_LARGE_FIT_KS && nd_large_fit_on(pool) ? pool->fit->fit_from[k] : NULL;
    return s == NULL ? pool->segs.first : s == ND_LARGE_FIT_PAST ? NULL : s;
}

/* A search of every segment from nd_large_fit_start for a free run of k
   chunks (step 1, the free chunks alone) found it in s, or none (NULL). */
static nd_noinline void nd_large_fit_found_past(nd_large_pool *pool, unsigned k, nd_segment *s)
{
    if (k >= ND_LARGE_FIT_KS || !nd_large_fit_on(pool))
        return;
    pool->fit->fit_from[k] = s != NULL ? s : ND_LARGE_FIT_PAST;
    pool->fit->fit_seq[k] = s != NULL ? s->pool_seq : UINT64_MAX;
}

/* (Out of line: a pool that never held more than ND_LARGE_FIT_FROM
   segments has no hints, and its code, a heap profile's slab's, stays on
   the sample section's pages: tests/api/alloc_basic.c.) */
static inline nd_segment *nd_large_fit_start(const nd_large_pool *pool, unsigned k)
{
    return nd_likely(pool->fit == NULL) ? pool->segs.first : nd_large_fit_start_past(pool, k);
}

static inline void nd_large_fit_found(nd_large_pool *pool, unsigned k, nd_segment *s)
{
    if (nd_unlikely(pool->fit != NULL))
        nd_large_fit_found_past(pool, k, s);
}

/* Chunks of s became free: the hints of runs of up to `longest` chunks
   that start past s start at s again. */
static void nd_large_fit_room(nd_large_pool *pool, const nd_segment *s, unsigned longest)
{
    uint64_t seq = s->pool_seq;
    for (unsigned k = 1; k <= longest && k < ND_LARGE_FIT_KS; k++)
        if (pool->fit->fit_seq[k] > seq) {
            pool->fit->fit_seq[k] = seq;
            pool->fit->fit_from[k] = (nd_segment *)s;
        }
}

/* The free run of mask `free` around chunks lo..hi (free): its length. */
static unsigned nd_large_run_around(uint64_t free, unsigned lo, unsigned hi)
{
    uint64_t taken = ~free;
    uint64_t up = hi < 63 ? taken >> (hi + 1) : 0;
    unsigned end = up != 0 ? hi + (unsigned)__builtin_ctzll(up) : 63;
    uint64_t down = lo > 0 ? taken << (64 - lo) : 0;
    unsigned start = down != 0 ? lo - (unsigned)__builtin_clzll(down) : 0;
    return end - start + 1;
}

/* Chunks i..i+k-1 of s became free (nd_large_give) while some pool keeps
   hints. */
static nd_noinline void nd_large_fit_give(const nd_segment *s, unsigned i, unsigned k)
{
    nd_large_pool *pool = nd_large_pool_of(s);
    if (nd_large_fit_on(pool))
        nd_large_fit_room(pool, s, nd_large_run_around(s->free_mask, i, i + k - 1));
}

/* s joins the end of pool's list: the hints past the last start at it. */
static nd_noinline void nd_large_fit_appended_past(nd_large_pool *pool, nd_segment *s)
{
    bool fresh = pool->segs.count == ND_LARGE_FIT_FROM + 1;   /* past the bound now: from the first */
    if (fresh && pool->fit == NULL)
        pool->fit = nd_meta_alloc(sizeof(nd_large_fit));   /* NULL: no hints, walks from the first */
    if (pool->fit == NULL || !nd_large_fit_on(pool))
        return;
    nd_large_fit *f = pool->fit;
    if (fresh) {
        /* The hints start now: every segment numbered in its order, every
           walk from the first. */
        for (nd_segment *t = pool->segs.first; t != NULL; t = t->next)
            t->pool_seq = ++f->next_seq;
        memset(f->fit_from, 0, sizeof f->fit_from);
        memset(f->fit_seq, 0, sizeof f->fit_seq);
        nd_add_relaxed(&nd_large_fit_pools, 1);
        return;
    }
    s->pool_seq = ++f->next_seq;
    for (unsigned k = 1; k < ND_LARGE_FIT_KS; k++)
        if (f->fit_from[k] == ND_LARGE_FIT_PAST) {
            f->fit_from[k] = s;
            f->fit_seq[k] = s->pool_seq;
        }
}

/* s leaves pool's list: the hints at it move to the segment after it. */
static nd_noinline void nd_large_fit_removed_past(nd_large_pool *pool, const nd_segment *s)
{
    if (!nd_large_fit_on(pool))
        return;
    if (pool->segs.count == ND_LARGE_FIT_FROM + 1)   /* at the bound after this */
        nd_sub_relaxed(&nd_large_fit_pools, 1);
    for (unsigned k = 1; k < ND_LARGE_FIT_KS; k++)
        if (pool->fit->fit_from[k] == s) {
            pool->fit->fit_from[k] = s->next != NULL ? s->next : ND_LARGE_FIT_PAST;
            pool->fit->fit_seq[k] = s->next != NULL ? s->next->pool_seq : UINT64_MAX;
        }
}

/* (The hints' work only for a pool past ND_LARGE_FIT_FROM segments: out
   of the code a pool of a few segments runs, as a heap profile's slab.) */
static inline void nd_large_fit_appended(nd_large_pool *pool, nd_segment *s)
{
    if (nd_unlikely(pool->segs.count > ND_LARGE_FIT_FROM))
        nd_large_fit_appended_past(pool, s);
}

static inline void nd_large_fit_removed(nd_large_pool *pool, const nd_segment *s)
{
    if (pool->res_tail == s)
        pool->res_tail = NULL;   /* (the search's record goes with it) */
    if (nd_unlikely(nd_large_fit_on(pool)))
        nd_large_fit_removed_past(pool, s);
}

/* Takes empty segment s out of shard pool (for its node, or an
   address-space release). Under the lock. */
static inline void nd_large_seg_out(nd_large_pool *pool, nd_segment *s)
{
    if (pool->spare == s)
        pool->spare = NULL;
    nd_large_fit_removed(pool, s);
    nd_list_remove(&pool->segs, s);
    nd_sub_relaxed(&pool->hint, 1);
    nd_sub_relaxed(&pool->empty, 1);
}

static size_t nd_round_os(size_t n)
{
    size_t ps = nd_os_page_size();
    return (n + ps - 1) & ~(ps - 1);
}

/* Empty segments a pool keeps (large.h). */
static unsigned nd_large_spare(void) { return nd_seg_guard != 0 ? ND_LARGE_SPARE_GUARDED : ND_LARGE_SPARE; }

static unsigned nd_chunks_of(size_t bytes) { return (unsigned)((bytes + ND_CHUNK_SIZE - 1) >> ND_CHUNK_SHIFT); }

/* nd_large_find's answer for step 1 (k >= 1), chunk by chunk: the debug
   builds' check of the doubling below. */
static unsigned nd_large_find_slow(uint64_t free, unsigned k)
{
    for (unsigned i = 1; i + k <= 64; i++)
        if ((free & nd_mask_range(i, i + k - 1)) == nd_mask_range(i, i + k - 1))
            return i;
    return 64;
}

/* The first run of k chunks of mask `free` (a segment's free chunks)
   starting at a multiple of step (> 0, never chunk 0); 64 if none. */
static unsigned nd_large_find(uint64_t free, unsigned k, unsigned step)
{
    if (step == 1) {
        uint64_t m = nd_mask_runs(free & ~(uint64_t)1, k);   /* (config.h: in log steps) */
        unsigned at = m != 0 ? (unsigned)__builtin_ctzll(m) : 64;
        nd_assert2(at == nd_large_find_slow(free, k));
        return at;
    }
    for (unsigned i = step; i + k <= 64; i += step) {
        uint64_t run = nd_mask_range(i, i + k - 1);
        if ((free & run) == run)
            return i;
    }
    return 64;
}

/* Makes chunks `run` of s a block of `need` bytes starting at chunk i.
   Under the pool lock. */
nd_inline void *nd_large_take(nd_large_pool *pool, nd_segment *s, unsigned i, unsigned k, size_t need)
{
    uint64_t run = nd_mask_range(i, i + k - 1);
    s->free_mask &= ~run;
    s->purge_mask &= ~run;   /* reused before its purge: keep it */
    uint32_t used = nd_load_relaxed(&s->used_pages);
    nd_store_relaxed(&s->used_pages, used + 1);
    if (used == 0) {
        nd_sub_relaxed(&pool->empty, 1);
        if (pool->spare == s)
            pool->spare = NULL;
    }
    nd_page *pg = &s->pages[i];
    nd_seg_desc_touch(s, pg);
    pg->start = (uint8_t *)s + ((size_t)i << ND_CHUNK_SHIFT);
    pg->block_size = (uint32_t)need;
    pg->reserved = (uint16_t)k;
    pg->capacity = pg->used = 1;
    pg->cls = ND_CLASS_COUNT;
    pg->heap = NULL;
    pg->key = ND_KEY_LARGE;
    nd_store_relaxed(&pg->in_full, 0);   /* not a kept block */
    nd_store_release(&pg->in_use, 1);
    return pg->start;
}

/* Gives chunks [i, i+k) of s back to the segment (a block freed, or a tail
   cut off); their memory is purged after the delay. Under the pool lock. */
static void nd_large_give(nd_segment *s, unsigned i, unsigned k, uint64_t now)
{
    uint64_t run = nd_mask_range(i, i + k - 1);
    s->free_mask |= run;
    nd_large_pool *pool = nd_large_pool_of(s);
    nd_store_relaxed(&pool->room_gen, pool->room_gen + 1);
    if (nd_unlikely(nd_load_relaxed(&nd_large_fit_pools) != 0))
        nd_large_fit_give(s, i, k);
    uint64_t dirty = run & s->committed;
    if (dirty == 0)
        return;
    if (nd_opt(ND_OPT_purge_delay) == 0) {
        nd_seg_purge(s, dirty);
        return;
    }
    s->purge_mask |= dirty;
    s->purge_at = now + (uint64_t)nd_opt(ND_OPT_purge_delay);
}

/* ---- guard pages (secure=1) ------------------------------------------------
   A block's guard page is the last OS page of its run (its usable bytes
   end there), so guards sit at chunk ends (a tight block's, large.h, sits
   inside its last chunk: the choice below does not see it, and
   nd_large_guard opens it as it opens any guard inside a new block). In
   a plain segment a guard stays when its block is freed, and a new block
   takes, among the
   free runs of the first ND_LARGE_SCAN segments that have one, a run that
   needs the fewest system calls: none when its last page is a guard and
   no other page of it is (a run a freed block of as many chunks left);
   one mprotect to open the guards inside it, one to close its last page.
   (A node-bound segment's guard pages go with their block: its chunks are
   populated and checked, which an inaccessible page would fail.) Under
   the pool lock. */

#if ND_DEBUG >= 2
void (*nd_large_commit_hook)(void);
void (*nd_large_grow_hook)(nd_segment *fresh);
#endif

#define ND_LARGE_SCAN 4   /* segments with a free run of the size looked at for one without system calls */

static size_t nd_large_page_of(const nd_segment *s, const void *p)
{
    return (size_t)((const uint8_t *)p - (const uint8_t *)s) / nd_os_page_size();
}

/* Makes the guard pages left among OS pages [a, b) of s accessible, with
   one mprotect from the first to the last (the pages between are
   accessible already: in a LARGE segment a page is inaccessible exactly
   when its guards bit is set). 0 or -1. */
static int nd_large_unguard(nd_segment *s, size_t a, size_t b)
{
    /* A word of guard bits at a time: a run of a large block has up to
       256 OS pages and, in steady state, a guard at its end only. */
    size_t first = SIZE_MAX, last = 0;
    for (size_t w = a / 64; w * 64 < b; w++) {
        size_t lo = w * 64;
        uint64_t g = s->guards[w];
        if (a > lo)
            g &= ~(uint64_t)0 << (a - lo);
        if (b < lo + 64)
            g &= ((uint64_t)1 << (b - lo)) - 1;
        if (g == 0)
            continue;
        if (first == SIZE_MAX)
            first = lo + (size_t)__builtin_ctzll(g);
        last = lo + 63 - (size_t)__builtin_clzll(g);
    }
    if (first == SIZE_MAX)
        return 0;
    size_t ps = nd_os_page_size();
    if (nd_os_protect((uint8_t *)s + first * ps, (last + 1 - first) * ps, true) != 0)
        return -1;
    nd_seg_mark_guards(s, first, last + 1, false);
    return 0;
}

/* Bit c set <=> the last OS page of chunk c of s is a guard page (one of
   a block's chunks, never the header). */
static uint64_t nd_large_guarded_chunks(const nd_segment *s)
{
    return s->guard_ends & ~(uint64_t)1 & nd_mask_range(0, s->page_count - 1u);
}

/* Multiples of step (a power of two below 64) from step on, as a chunk
   mask (a table: all ones over 2^step - 1 is a division). */
static uint64_t nd_large_steps(unsigned step)
{
    static const uint64_t every[6] = { ~(uint64_t)0, 0x5555555555555555ull, 0x1111111111111111ull,
                                       0x0101010101010101ull, 0x0001000100010001ull, 0x0000000100000001ull };
    return every[__builtin_ctz(step)] & ~(uint64_t)1;
}

/* nd_large_pick (large.h), inlined into nd_large_find_guarded. */
nd_inline unsigned nd_large_pick_run(uint64_t free, uint64_t guarded, unsigned k, unsigned step, unsigned *at,
                                     unsigned *len)
{
    /* Every start is weighed at once, with masks (bit i: a block at chunk
       i): a start-by-start walk took 600-900 instructions a block
       (alignloop near 64 KiB: 1.7x the default's 875 a call, all but 200
       of it here; branch h48w). */
    free &= ~(uint64_t)1;
    uint64_t steps = nd_large_steps(step);
    uint64_t starts = nd_mask_runs(free, k) & steps;   /* runs of k free chunks */
    if (starts == 0)
        return 3;
    /* No system call: the first guard from i at chunk i + j, k - 1 <= j <
       most, chunks i..i+j free. reach bit i: chunks i..i+j-1 free and
       unguarded, chunk i+j a free guarded one. */
    unsigned most = step > 1 ? k : 2 * k;   /* the longest run taken up to a guard */
    uint64_t open = free & ~guarded, reach = free & guarded, none = 0;
    for (unsigned j = 0; j < most && reach != 0; j++) {
        if (j + 1 >= k)
            none |= reach;
        reach = reach >> 1 & open;
    }
    none &= steps;
    if (none != 0) {
        *at = (unsigned)__builtin_ctzll(none);
        *len = (unsigned)__builtin_ctzll(guarded >> *at) + 1;   /* up to its first guard */
        return 0;
    }
    /* One mprotect to close the run's last page when no guard ends it,
       one to open those inside it (its other chunks' ends). */
    uint64_t end = guarded >> (k - 1);
    uint64_t inside = k > 1 ? ~nd_mask_runs(~guarded, k - 1) : 0;
    uint64_t one = starts & ~(inside ^ end);
    *at = (unsigned)__builtin_ctzll(one != 0 ? one : starts);
    *len = k;
    return one != 0 ? 1 : 2;
}

unsigned nd_large_pick(uint64_t free, uint64_t guarded, unsigned k, unsigned step, unsigned *at, unsigned *len)
{
    return nd_large_pick_run(free, guarded, k, step, at, len);
}

/* secure=1: the run nd_large_pick chooses in the first ND_LARGE_SCAN
   segments that have a run of k chunks: the first with no system call,
   else the first of the fewest; NULL when no segment has one. */
static nd_segment *nd_large_find_guarded(const nd_large_pool *pool, unsigned k, unsigned step, unsigned *at,
                                         unsigned *len)
{
    nd_segment *best = NULL;
    unsigned best_cost = 3, seen = 0;
    for (nd_segment *s = pool->segs.first; s != NULL && seen < ND_LARGE_SCAN; s = s->next) {
        unsigned i, n;
        unsigned cost = nd_large_pick_run(s->free_mask, nd_large_guarded_chunks(s), k, step, &i, &n);
        if (cost == 3)
            continue;
        seen++;
        if (cost < best_cost) {
            best = s;
            *at = i;
            *len = n;
            best_cost = cost;
            if (cost == 0)
                break;
        }
    }
    return best;
}

/* The large block of `usable` bytes at p (its run's bytes less the guard
   page) is handed out: its pages accessible, its run's last page a guard.
   0, or -1 when the kernel refused (out of mappings: vm.max_map_count). */
static int nd_large_guard(nd_segment *s, uint8_t *p, size_t usable)
{
    if (nd_seg_guard == 0)
        return 0;
    size_t g = nd_large_page_of(s, p + usable);
    if (nd_large_unguard(s, nd_large_page_of(s, p), g) != 0)
        return -1;
    if (nd_seg_guarded(s, g))
        return 0;
    if (nd_os_protect(p + usable, nd_seg_guard, false) != 0)
        return -1;
    nd_seg_mark_guards(s, g, g + 1, true);
    return 0;
}

/* The large block of `usable` bytes at p is freed: a node-bound segment's
   guard page after it goes (see above), but the segment's own. */
static void nd_large_unguard_freed(nd_segment *s, uint8_t *p, size_t usable)
{
    size_t g = nd_large_page_of(s, p + usable);
    if (nd_seg_guard != 0 && s->bound && g + 1 < s->size / nd_os_page_size())
        nd_large_unguard(s, g, g + 1);
}

/* Commits the chunks of [p, p+len) that are not yet: plain memory just says
   so; node-bound memory is populated and checked with the lock released
   (the run is reserved, so nobody else touches those chunks). */
nd_large_path static int nd_large_commit(nd_large_pool *pool, nd_segment *s, const void *p, size_t len)
{
    uint64_t todo = nd_seg_chunks(s, p, len) & ~s->committed;
    if (todo == 0)
        return 0;
    if (!s->bound) {
        s->committed |= todo;
        nd_gauge_add(committed, (size_t)nd_popcount64(todo) << ND_CHUNK_SHIFT);
        return 0;
    }
    nd_unlock(nd_pool_lock(pool));
#if ND_DEBUG >= 2
    if (nd_large_commit_hook != NULL)
        nd_large_commit_hook();
#endif
    uint64_t m = todo, done = 0;
    int rc = 0;
    while (m != 0) {
        unsigned a, b;
        nd_mask_first_run(m, &a, &b);
        size_t n = (size_t)(b - a + 1) << ND_CHUNK_SHIFT;
        if ((size_t)(b + 1) << ND_CHUNK_SHIFT == s->size)
            n -= nd_seg_guard;   /* never populate the segment's guard page */
        rc = nd_seg_commit_bound((uint8_t *)s + ((size_t)a << ND_CHUNK_SHIFT), n, s->node);
        if (rc != 0)
            break;   /* that run was purged again; the ones before stay */
        done |= nd_mask_range(a, b);
        m &= ~nd_mask_range(a, b);
    }
    nd_lock(nd_pool_lock(pool));
    s->committed |= done;
    nd_gauge_add(committed, (size_t)nd_popcount64(done) << ND_CHUNK_SHIFT);
    return rc;
}

/* A run of k chunks (at a multiple of step) of a segment of pool with
   holes (large.h), its holes mapped again: the segment, *at = its first
   chunk; NULL when none maps (no room yet, or another mapping sits in the
   hole). Tried only when no free run fits, before a new segment is asked
   for: a hole costs less address space than a segment. Asked only once
   some segment has had a hole (nd_seg_holes_made). Under the pool lock. */
static nd_segment *nd_large_regain(nd_large_pool *pool, unsigned k, unsigned step, unsigned *at)
{
    for (nd_segment *s = pool->segs.first; s != NULL; s = s->next) {
        if (s->unmapped == 0)
            continue;
        unsigned i = nd_large_find(s->free_mask | s->unmapped, k, step);
        if (i >= 64)
            continue;
        uint64_t holes = nd_mask_range(i, i + k - 1) & s->unmapped;
        uint64_t remapped = nd_seg_remap_chunks(s, holes);
        if (remapped != 0 && nd_large_fit_on(pool))
            nd_large_fit_room(pool, s, 63);
        if (remapped == holes) {
            *at = i;
            return s;
        }
        if (errno == ENOMEM)
            break;   /* no room (not another mapping in the hole): a failing request tries one segment, not all */
    }
    return NULL;
}

/* nd_large_regain in the other shards of pool's (node, kind), one at a
   time: the first whose holes (and free chunks) make a run of k chunks
   (at a multiple of step), its lock held, *seg and *at the run; NULL if
   none. A thread that moved to another CPU (another shard) takes the holes
   its blocks left in its first shard's segments rather than fail for lack
   of address space while they are there (under a limit, a thread moved
   between two rounds of frees and reallocations had a fifth of its
   requests fail with ENOMEM: the unit case
   large_segments_with_unmapped_chunks_under_an_address_space_limit_stay_valid
   failed 4 runs in 20 on a loaded machine, none pinned to one CPU).
   Without any shard's lock; takes the others' one at a time. */
static nd_noinline nd_large_pool *nd_large_regain_other(nd_large_pool *pool, unsigned k, unsigned step,
                                                        nd_segment **seg, unsigned *at)
{
    for (unsigned j = 1; j < ND_LARGE_SHARDS; j++) {
        nd_large_pool *o = nd_large_shard_after(pool, j);
        if (nd_load_relaxed(&o->hint) == 0)
            continue;
        nd_large_lock(o);
        nd_segment *s = nd_large_regain(o, k, step, at);
        if (s != NULL) {
            *seg = s;
            return o;
        }
        nd_large_unlock(o);   /* (each shard tried: errno may be an earlier call's ENOMEM) */
    }
    return NULL;
}

/* Gives back the OS pages of s that nothing uses, past whole chunks
   (large.h): chunk 0's past the header, and those of each block's last
   chunk past the block (and its guard page under secure=1), which become
   tails (segment.h). Node-bound segments keep their blocks' (a tail mapped
   again is not populated and checked as a bound chunk is). The bytes
   given back. Under the pool lock. */
static size_t nd_large_release_tails(nd_segment *s)
{
    size_t freed = 0, head = nd_round_os(ND_SEG_HEADER_SIZE);
    if ((s->tails & 1) == 0 && head < ND_CHUNK_SIZE)
        freed += nd_seg_unmap_tail(s, 0, head);
    if (s->bound)
        return freed;
    for (unsigned i = 1; i < 64; i++) {
        const nd_page *pg = &s->pages[i];
        if (!pg->in_use)
            continue;
        unsigned c = i + pg->reserved - 1u;
        size_t end = ((size_t)i << ND_CHUNK_SHIFT) + pg->block_size + nd_seg_guard;
        size_t from = end - ((size_t)c << ND_CHUNK_SHIFT);
        if (((s->tails >> c) & 1) == 0 && from < ND_CHUNK_SIZE)
            freed += nd_seg_unmap_tail(s, c, from);
        i = c;
    }
    return freed;
}

/* Gives back the address space of pool's free chunks (large.h): its
   empty segments are taken out of it (returned in *gone, for the caller
   to unmap without the lock), every other one unmaps its free chunks
   (holes) and its blocks' unused ends (tails). The bytes given back.
   Under the pool lock. */
static size_t nd_large_release_pool(nd_large_pool *pool, nd_segment **gone)
{
    size_t freed = 0;
    nd_segment *next;
    for (nd_segment *s = pool->segs.first; s != NULL; s = next) {
        next = s->next;
        if (s->used_pages == 0) {
            nd_large_seg_out(pool, s);
            freed += nd_seg_mapped_bytes(s);
            s->next = *gone;
            *gone = s;
        } else {
            if (s->free_mask != 0)
                freed += nd_seg_unmap_chunks(s, s->free_mask);
            freed += nd_large_release_tails(s);
        }
    }
    return freed;
}

static void nd_large_keep_drain(nd_large_pool *pool, uint64_t now, bool force);
/* Gives the blocks of pool's CPUs' caches back to their segments: of
   every cache (all), or of those no block was taken from since the last
   call (their `used` cleared otherwise). Without the pool lock. */
static void nd_large_cpu_drain(nd_large_pool *pool, bool all, bool wait);
static bool nd_large_cpu_holds(const nd_large_pool *pool);

/* The pools that have had a segment (hint set), of every node with memory,
   plain then bound, one per call: start with *i = 0; NULL after the last. */
static nd_large_pool *nd_large_next_used(int *i)
{
    while (*i < 2 * nd_topo.mem_count * ND_LARGE_SHARDS) {
        int j = *i / ND_LARGE_SHARDS;
        nd_large_pool *pool = &nd_large_pools[nd_topo.mem_ids[j / 2]][j % 2][*i % ND_LARGE_SHARDS];
        (*i)++;
        if (nd_load_relaxed(&pool->hint) != 0)
            return pool;
    }
    return NULL;
}

size_t nd_large_release(void)
{
    nd_lock_may_take(ND_LOCK_ID_tight);
    nd_tight_sweep(true);   /* empty tight slabs are free chunks too (tight.h) */
    size_t freed = 0;
    nd_large_pool *pool;
    for (int i = 0; (pool = nd_large_next_used(&i)) != NULL;) {
        nd_large_keep_drain(pool, 0, true);   /* kept blocks are free chunks too */
        nd_segment *gone = NULL;
        nd_large_lock(pool);
        freed += nd_large_release_pool(pool, &gone);
        nd_large_unlock(pool);
        while (gone != NULL) {
            nd_segment *s = gone;
            gone = s->next;
            nd_seg_unmap(s);
        }
    }
    return freed;
}

bool nd_large_release_after(uint64_t refused)
{
    return nd_os_map_refusals() != refused && nd_large_release() != 0;
}

/* A block of one OS page at a chunk's start (plain segments: no guard
   page): kept for the next such request of its pool (large.h). */
static bool nd_large_keepable(size_t usable) { return usable == nd_os_page_size() && nd_seg_guard == 0; }

/* A grown block's (nd_large_alloc_grown: its whole run usable; secure=1:
   but its last page, the guard, which stays protected while it is kept)
   of up to ND_LARGE_KEEP_GROWN chunks: secure=1's shape of a block a
   CPU's cache keeps for the next grown request (nd_large_cacheable). */
static bool nd_large_grown_keepable(size_t usable, unsigned reserved)
{
    /* secure=1: of ND_LARGE_KEEP_GROWN chunks only. A kept block of one
       chunk (60 KiB usable) served the next growth, which past 60 KiB
       mostly could not take the next chunk (the other thread's block)
       and was copied, the block kept again: 11-14 % of the growths to
       64 KiB at 2 threads in some runs, none in others (micro -m
       realloc -t 2 at 55 or 25 ns). Given back, its run goes on serving
       requests that fit it. */
    return (nd_seg_guard == 0 ? reserved <= ND_LARGE_KEEP_GROWN : reserved == ND_LARGE_KEEP_GROWN) &&
           usable + nd_seg_guard == (size_t)reserved << ND_CHUNK_SHIFT;
}

/* The descriptor of kept block p: its chunk's (large.h). */
static nd_page *nd_large_kept_desc(void *p)
{
    nd_segment *s = nd_seg_base(p);
    return &s->pages[((uintptr_t)p - (uintptr_t)s) >> ND_CHUNK_SHIFT];
}

/* A kept block of pool for a request of one OS page, aligned to at most a
   chunk; NULL if none. */
static void *nd_large_keep_take(nd_large_pool *pool, void **keep)
{
    for (unsigned i = 0; i < ND_LARGE_KEEP; i++) {
        void *p = nd_load_relaxed(&keep[i]);
        if (p != NULL && __atomic_compare_exchange_n(&keep[i], &p, NULL, false, __ATOMIC_ACQUIRE,
                                                     __ATOMIC_RELAXED)) {
            nd_store_relaxed(&nd_large_kept_desc(p)->in_full, 0);
            if (!nd_load_relaxed(&pool->keep_used))
                nd_store_relaxed(&pool->keep_used, 1);
            return p;
        }
    }
    return NULL;
}

/* Keeps block p (descriptor pg, in use) in a free slot of its pool's
   slots `keep` (pool->keep): true when kept. *twice when
   it is kept already (a double free). */
static bool nd_large_keep_put(void **keep, nd_page *pg, void *p, bool *twice)
{
    /* Claimed first: a second free of p finds the flag set. */
    uint8_t no = 0;
    *twice = !__atomic_compare_exchange_n(&pg->in_full, &no, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
    if (*twice)
        return false;
    for (unsigned i = 0; i < ND_LARGE_KEEP; i++) {
        void *none = NULL;
        if (nd_load_relaxed(&keep[i]) == NULL &&
            __atomic_compare_exchange_n(&keep[i], &none, p, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
            return true;
    }
    nd_store_relaxed(&pg->in_full, 0);   /* no free slot */
    return false;
}

/* May freed block p (bytes usable, reserved chunks) wait in a CPU's cache
   (large.h)? By default a block of its whole run (one realloc grew:
   nd_large_alloc_grown; or asked for in whole chunks) of up to
   ND_LARGE_CPU_CHUNKS chunks; under secure=1 a grown block of
   ND_LARGE_KEEP_GROWN chunks only, its guard page still protected
   (nd_large_grown_keepable). Its shape only: the caller also tests the
   address-space limit (nd_large_cpu_on). */
static bool nd_large_cacheable(size_t usable, unsigned reserved)
{
    return nd_seg_guard == 0 ? reserved <= ND_LARGE_CPU_CHUNKS && usable == (size_t)reserved << ND_CHUNK_SHIFT
                             : nd_large_grown_keepable(usable, reserved);
}

/* Do the CPUs' caches serve a request (grown: nd_large_alloc_grown)?
   Not once the address space is known to be limited (their blocks then
   go back to be released, tails and holes: nd_large_release), nor with
   purge_delay=0 (nothing freed waits: node.c's huge mappings neither);
   under secure=1 only grown requests, as its kept grown blocks did. */
static bool nd_large_cpu_on(bool grown)
{
    return (nd_seg_guard == 0 || grown) && !nd_os_space_limit_seen() && nd_opt(ND_OPT_purge_delay) != 0;
}

/* The calling CPU's cache of pool: its rseq area's CPU, one load (any
   shard before start-up or without one: a hint, never a fault). */
static nd_large_cpucache *nd_large_cache_of(nd_large_pool *pool)
{
    return &pool->cpu[(unsigned)nd_os_current_cpu_fast() / ND_LARGE_SHARDS % ND_LARGE_SHARD_CPUS];
}

/* Takes the block of shard sh of the fewest chunks from lo to most (the
   first of `want` chunks: no better one), its slot (address | chunks),
   its descriptor's in_full cleared; 0 if none. */
static uintptr_t nd_large_cpu_take(nd_large_cpucache *sh, unsigned lo, unsigned most, unsigned want)
{
    for (;;) {
        if (nd_load_relaxed(&sh->chunks) == 0)
            return 0;
        unsigned best = ND_LARGE_CPU_SLOTS, fewest = most + 1;
        uintptr_t v = 0;
        for (unsigned i = 0; i < ND_LARGE_CPU_SLOTS; i++) {
            uintptr_t w = nd_load_relaxed(&sh->slot[i]);
            unsigned r = (unsigned)(w & ND_LARGE_SLOT_CHUNKS);
            if (w != 0 && r >= lo && r < fewest) {
                best = i;
                fewest = r;
                v = w;
                if (r == want)
                    break;
            }
        }
        if (best == ND_LARGE_CPU_SLOTS)
            return 0;
        if (!__atomic_compare_exchange_n(&sh->slot[best], &v, 0, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            continue;   /* another thread of this CPU took it first: look again */
        nd_sub_relaxed(&sh->chunks, fewest);
        if (!nd_load_relaxed(&sh->used))
            nd_store_relaxed(&sh->used, 1);
        nd_store_relaxed(&nd_large_kept_desc((void *)(v & ~ND_LARGE_SLOT_CHUNKS))->in_full, 0);
        return v;
    }
}

/* Puts block p (descriptor pg, in use, reserved chunks) in shard sh: true
   when cached; false when the shard has no room for it (no free slot, or
   its chunks would pass ND_LARGE_CPU_CHUNKS), *twice when it is kept or
   cached already (a double free). */
static bool nd_large_cpu_put(nd_large_cpucache *sh, nd_page *pg, void *p, unsigned reserved, bool *twice)
{
    uint8_t no = 0;
    *twice = !__atomic_compare_exchange_n(&pg->in_full, &no, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
    if (*twice)
        return false;
    if (nd_load_relaxed(&sh->chunks) + reserved <= ND_LARGE_CPU_CHUNKS) {
        if (__atomic_add_fetch(&sh->chunks, reserved, __ATOMIC_RELAXED) <= ND_LARGE_CPU_CHUNKS) {
            uintptr_t v = (uintptr_t)p | reserved;
            for (unsigned i = 0; i < ND_LARGE_CPU_SLOTS; i++) {
                uintptr_t none = 0;
                if (nd_load_relaxed(&sh->slot[i]) == 0 &&
                    __atomic_compare_exchange_n(&sh->slot[i], &none, v, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
                    return true;
            }
        }
        nd_sub_relaxed(&sh->chunks, reserved);
    }
    nd_store_relaxed(&pg->in_full, 0);
    return false;
}

/* May a block take whole chunks (a grown block's run, and its growth in
   place: nd_large_resize)? Not under secure=1 (its guard page ends its
   usable bytes) nor once the address space is known to be limited (the
   end of a block's last chunk is given back then: tails). */
static bool nd_large_whole_chunks(void) { return nd_seg_guard == 0 && !nd_os_space_limit_seen(); }

/* A grown block of k chunks (nd_large_alloc_grown): the room it is placed
   in, a run of twice its chunks rounded up to a power of two, at a
   multiple of that; 0 if there is no such run in a segment. */
static unsigned nd_large_room(unsigned k)
{
    unsigned room = 2;
    while (room < k)
        room <<= 1;
    return room * 2 <= 32 ? room * 2 : 0;
}

/* The empty segment of pool (one with no block) that holds the fewest
   resident chunks: s (empty too, not counted yet in pool->empty) unless
   another holds fewer; NULL when there is none. What the pool gives back
   when it has more empty segments than its spares: the memory of the one
   it keeps serves its next blocks without page faults, and that of the
   one it gives back is purged at once or after the delay (node.c), so a
   spare left untouched (a segment a racing thread brought, or one purged
   already) goes, not the segment that was just emptied with its blocks'
   memory still in it. Under the pool lock. The walk ends once it has
   seen the pool's pool->empty empty segments: it went through all of a
   pool's segments at every segment emptied, 37 % of the instructions of
   bench/micro -m batch -s 1m with 334 segments (docs/results.md, stop
   62). A shard of one empty segment that knows it (pool->spare, the
   default's one spare) does not walk at all: with each shard its own
   spare (nd_large_emptied), the walk to it through a shard of ~460
   segments was half the time of 1 MiB batches at 8 threads on 2 CPUs
   (stop 68). */
static nd_segment *nd_large_cleanest_empty(nd_large_pool *pool, nd_segment *s)
{
    nd_segment *best = s;
    int least = s != NULL ? nd_popcount64(s->committed & ~(uint64_t)1) : 65;
    uint32_t left = pool->empty;
    if (left == 1 && pool->spare != NULL && pool->spare != s) {
        nd_segment *t = pool->spare;
        return (int)nd_popcount64(t->committed & ~(uint64_t)1) < least ? t : best;
    }
    for (nd_segment *t = pool->segs.first; t != NULL && least > 0 && left > 0; t = t->next) {
        if (t == s || t->used_pages != 0)
            continue;
        left--;
        int n = nd_popcount64(t->committed & ~(uint64_t)1);
        if (n < least) {
            best = t;
            least = n;
        }
    }
    return best;
}

/* Gives a segment taken out of its pool (no block in it) back to its
   node. Without the pool lock. */
static void nd_large_seg_release(nd_segment *release)
{
    if ((release->unmapped | release->tails) != 0) {
        nd_seg_unmap(release);   /* with holes or tails: never cached (segment.h) */
        return;
    }
    /* Its guard pages go (but the segment's own): it may come back as a
       segment of small or medium pages. */
    if (nd_seg_guard != 0)
        nd_large_unguard(release, 0, release->size / nd_os_page_size() - 1);
    nd_node_seg_put(release);   /* purged there, or cached with its memory for a while */
}

static void *nd_large_alloc_at(int node, bool bound, size_t size, size_t alignment, bool grown, size_t *bytes);

/* Has a borrow of k chunks (step 1; resident: all of them resident) in
   shard o nothing to find, by o's lending hints (nd_large_pool)? Without
   o's lock: a hint, stale by the time it is read; a run it hides is found
   by o's own requests, or by the next borrow after o's next give-back.
   Two threads taking batches of 1 MiB blocks, each on its CPU's shard,
   took the other's lock 218,000 times in 400,000 blocks and found a run
   6,200 times; with the hints 4,800 times (docs/results.md, stop 67). */
static inline bool nd_large_lend_failed(const nd_large_pool *o, bool resident, unsigned k)
{
    uint64_t f = nd_load_relaxed(&o->lend_fail[resident]);
    return f != 0 && (f >> 6) == nd_load_relaxed(&o->room_gen) && k >= (unsigned)(f & 63) &&
           nd_load_relaxed(&o->pending) == NULL;
}

/* A borrow of k chunks (step 1) found no run in o: its lending hint says
   so until o's room_gen moves (the smallest such k). Under o's lock. */
static inline void nd_large_lend_fail(nd_large_pool *o, bool resident, unsigned k)
{
    uint64_t f = o->lend_fail[resident];
    if (f != 0 && (f >> 6) == o->room_gen && (unsigned)(f & 63) <= k)
        return;
    nd_store_relaxed(&o->lend_fail[resident], o->room_gen << 6 | k);
}

/* A run of k chunks (at a multiple of step) in a segment of another shard
   of pool's (node, kind), the first shard in order after pool's that has
   one: resident (all its chunks committed) or, when !resident, any free
   run; that shard, its lock held, *seg and *at the run; NULL if none has.
   What a shard does when none of its own runs fits, before it faults in
   chunks (resident: its CPUs' caches gave theirs back) or maps a segment
   (any: its own free runs too): the shards together touch no more memory
   and hold no more segments than one pool did (the freed blocks of a
   thread whose shard is another are reused first; micro -m large -t 2: a
   peak of 33 MiB against one pool's 23 without the resident pass; with
   only that pass, shortlived -t 2 held a third large segment, 4 MiB
   resident at its peak, where one pool held two: branch h58l). The block
   belongs to that shard (its segment's), and its free goes there. Default
   mode only (secure=1's guard pages choose runs by their own rule).
   Without any shard's lock; takes the others' one at a time. */
nd_large_path static nd_noinline nd_large_pool *nd_large_borrow(nd_large_pool *pool, unsigned k, unsigned step,
                                                                bool resident, nd_segment **seg, unsigned *at)
{
    if (ND_LARGE_SHARDS == 1 || nd_seg_guard != 0)
        return NULL;
    for (unsigned j = 1; j < ND_LARGE_SHARDS; j++) {
        nd_large_pool *o = nd_large_shard_after(pool, j);
        if (nd_load_relaxed(&o->hint) == 0 || (step == 1 && nd_large_lend_failed(o, resident, k)))
            continue;
        /* For any free run (its memory faulted in either way), a shard
           whose lock is held is busy with its own blocks (its thread's
           batch, or another borrower): passed over, not waited for (two
           threads cycling batches of 256 KiB blocks, one a CPU, waited
           for each other's shard 29,000 times in 200 rounds:
           docs/results.md, stop 62). For a resident run it is waited
           for: that run saves faults and memory (micro -m large -t 2's
           peak 25.4 MiB, 29.2 passing over busy shards there too). */
        if (resident)
            nd_large_lock(o);
        else if (!nd_large_trylock(o))
            continue;
        for (nd_segment *s = nd_large_fit_start(o, k); s != NULL; s = s->next) {
            unsigned i = nd_large_find(resident ? s->free_mask & s->committed : s->free_mask, k, step);
            if (i < 64) {
                if (!resident && step == 1)
                    nd_large_fit_found(o, k, s);
                *seg = s;
                *at = i;
                return o;
            }
        }
        if (!resident && step == 1)
            nd_large_fit_found(o, k, NULL);
        if (step == 1)
            nd_large_lend_fail(o, resident, k);
        nd_large_unlock(o);
    }
    return NULL;
}

/* The first segment of shard pool with a free run of k chunks (at a
   multiple of step), its first chunk in *at; NULL if none. The walk starts
   at the fit hints and, for step 1, moves them to what it found (so that
   the walks for a resident run, which start there too, start past the
   segments without a free run that fits). Under the lock. */
static nd_segment *nd_large_free_run(nd_large_pool *pool, unsigned k, unsigned step, unsigned *at)
{
    nd_segment *s;
    for (s = nd_large_fit_start(pool, k); s != NULL; s = s->next)
        if ((*at = nd_large_find(s->free_mask, k, step)) < 64)
            break;
    if (step == 1)
        nd_large_fit_found(pool, k, s);
    return s;
}

/* The first segment of shard pool with a run of k free chunks (at a
   multiple of step) all resident, and the run's first chunk in *at; NULL
   if none. Past the segments its last search that found none walked, when
   nothing was given back since (res_tail: appended segments only). Under
   the lock. */
static nd_segment *nd_large_resident_run(nd_large_pool *pool, unsigned k, unsigned step, unsigned *at)
{
    nd_segment *s = nd_large_fit_start(pool, k);
    bool known = step == 1 && pool->res_tail != NULL && pool->res_gen == pool->room_gen && k >= pool->res_k;
    if (known)
        s = pool->res_tail->next;
    for (; s != NULL; s = s->next)
        if ((*at = nd_large_find(s->free_mask & s->committed, k, step)) < 64)
            return s;
    if (step == 1 && pool->segs.last != NULL) {
        pool->res_k = k;   /* (what both walks, the record's and this one's, say together) */
        pool->res_tail = pool->segs.last;
        pool->res_gen = pool->room_gen;
    }
    return NULL;
}

/* Segment s (no block in it, chunk 0 taken) joins the end of shard pool's
   list (last: the older ones' holes first, large.h). Under the lock. */
static void nd_large_append(nd_large_pool *pool, nd_segment *s)
{
    nd_list_push_back(&pool->segs, s);
    nd_large_fit_appended(pool, s);
    s->shard = (uint8_t)nd_large_shard_index(pool);
    nd_add_relaxed(&pool->hint, 1);
    nd_add_relaxed(&pool->empty, 1);
    pool->spare = s;
}

/* A segment was brought for a block of k chunks (at a multiple of step)
   with shard pool's lock released, and the lock is held again: does a
   run fit now, one that a block freed meanwhile left or in a segment
   another thread brought meanwhile? pool (its lock held, *seg = NULL)
   when one of its own segments has a free run that fits (the search of
   nd_large_alloc_at, still under the lock, finds it); another shard of
   its (node, kind) with its lock held (pool's released) and *seg, *at
   its free run (nd_large_borrow: default mode, and not for a shard's
   first segment, as there); NULL with pool's lock held when none fits.
   Two threads that found no room at once, on CPUs of two shards, each
   brought a segment where one served both. Only after a segment was
   brought: the growth path's, not the path of every block. */
nd_large_path static nd_noinline nd_large_pool *nd_large_recheck(nd_large_pool *pool, unsigned k, unsigned step,
                                                                 nd_segment **seg, unsigned *at)
{
    *seg = NULL;
    if (nd_seg_guard != 0) {
        unsigned i, len = k;
        return nd_large_find_guarded(pool, k, step, &i, &len) != NULL ? pool : NULL;
    }
    unsigned i;
    if (nd_large_free_run(pool, k, step, &i) != NULL)
        return pool;
    if (pool->segs.count == 0 || !nd_large_others_used(pool))
        return NULL;
    nd_large_unlock(pool);
    nd_large_pool *o = nd_large_borrow(pool, k, step, false, seg, at);
    if (o == NULL)
        nd_large_lock(pool);
    return o;
}

nd_large_path void *nd_large_alloc(int node, bool bound, size_t size, size_t alignment, size_t *bytes)
{
    return nd_large_alloc_at(node, bound, size, alignment, false, bytes);
}

/* secure=1 (and no address-space limit seen): a grown block takes its
   whole run less the guard page, as every large block there does, and a
   cached one (a CPU's cache, large.h) serves it without the pool's lock. */
void *nd_large_alloc_grown(int node, bool bound, size_t size, size_t *bytes)
{
    bool grown = nd_seg_guard == 0 ? nd_large_whole_chunks() : !nd_os_space_limit_seen();
    return nd_large_alloc_at(node, bound, size, 0, grown, bytes);
}

/* Segment s was brought (without the lock) for a block of k chunks (at
   a multiple of step) that no run of shard pool fitted, the growth path
   of nd_large_alloc_at, out of line: pool's lock is taken again, and
   while s was brought another thread may have freed a block or brought a
   segment of its own. When a run fits now (nd_large_recheck), s goes back
   to its node unused, given back by the unlock of the shard whose lock
   is held, and the run serves the request; else s joins pool. Returns the
   shard whose lock is held: with *seg, *at the run (another shard's) to
   take, or with *seg = NULL for the caller to search pool again (s in it,
   or a run of pool's own that fits). */
nd_large_path static nd_noinline nd_large_pool *nd_large_add(nd_large_pool *pool, nd_segment *s, unsigned k,
                                                             unsigned step, nd_segment **seg, unsigned *at)
{
    s->free_mask &= ~(uint64_t)1;   /* chunk 0: the header */
#if ND_DEBUG >= 2
    if (nd_large_grow_hook != NULL)
        nd_large_grow_hook(s);
#endif
    nd_large_lock(pool);
    nd_large_pool *o = nd_large_recheck(pool, k, step, seg, at);
    if (o != NULL) {
        s->next = o->gone;
        o->gone = s;
        return o;
    }
    nd_large_append(pool, s);
    return pool;
}

/* nd_large_alloc; grown: a block realloc grows (nd_large_whole_chunks
   holds): its whole run usable, placed at the start of a free run of
   twice its chunks if a segment has one (nd_large_room), so that it can
   grow in place to twice its size; the first run that fits otherwise. */
nd_large_path static void *nd_large_alloc_at(int node, bool bound, size_t size, size_t alignment, bool grown,
                                            size_t *bytes)
{
    nd_lock_may_take(ND_LOCK_ID_large_pool);
    size_t usable = nd_round_os(size == 0 ? 1 : size);
    size_t need = usable + nd_seg_guard;   /* secure=1: and its guard page */
    unsigned k = nd_chunks_of(need);
    unsigned step = alignment > ND_CHUNK_SIZE ? (unsigned)(alignment >> ND_CHUNK_SHIFT) : 1;
    unsigned room = grown && nd_seg_guard == 0 ? nd_large_room(k) : 0;
    if (grown && nd_seg_guard == 0)
        usable = need = (size_t)k << ND_CHUNK_SHIFT;
    /* secure=1 once the address space is known to be limited: the block's
       own size and its guard page, the rest of its run unused, given back
       when a mapping is refused (large.h: tight blocks). */
    bool tight = false;
    if (nd_seg_guard != 0 && !(tight = nd_os_space_limit_seen())) {
        /* secure=1: the whole run, its last page the guard; an aligned
           block takes its run up to the next multiple of its alignment,
           so blocks of one alignment end where the one before them in
           that place ended, at its guard page, whatever their sizes (no
           system call: the 1 MiB-aligned blocks of 512 KiB-1 MiB took
           one mprotect in 50 calls, 60 ms of system time in 200,000). */
        if (step > 1 && (size_t)k % step != 0 && (size_t)k / step * step + step < 64)
            k = (k / step + 1) * step;
        need = (size_t)k << ND_CHUNK_SHIFT;
        usable = need - nd_seg_guard;
    }
    if (k > 63 || step >= 64) {
        errno = ENOMEM;
        return NULL;
    }
    nd_large_pool *pool = nd_large_home(node, bound);
    if (nd_large_keepable(usable) && step == 1) {
        void *p = nd_large_keep_take(pool, pool->keep);
        if (p != NULL) {
            *bytes = usable;
            return p;
        }
    }
    if (step == 1 && nd_large_cpu_on(grown)) {
        /* A block of this CPU's cache (large.h): of k chunks up to a
           quarter more; for a grown block of up to ND_LARGE_KEEP_GROWN
           chunks any of them (one of 2 chunks serves a request of 1, one
           of 1 grows in place for a request of 2 where it can, and goes
           back otherwise). */
        bool small = grown && k <= ND_LARGE_KEEP_GROWN;
        nd_large_cpucache *cache = nd_large_cache_of(pool);
        uintptr_t v = nd_large_cpu_take(cache, small ? 1 : k, small ? ND_LARGE_KEEP_GROWN : k + k / 4,
                                        small ? ND_LARGE_KEEP_GROWN : k);
        if (v != 0) {
            void *p = (void *)(v & ~ND_LARGE_SLOT_CHUNKS);
            unsigned r = (unsigned)(v & ND_LARGE_SLOT_CHUNKS);
            nd_page *pg = nd_large_kept_desc(p);
            long delta;
            if (r >= k) {
                /* Its usable bytes: the request's, or a grown block's whole
                   run (secure=1: less the guard page, as it was). */
                size_t was = pg->block_size, now = grown ? ((size_t)r << ND_CHUNK_SHIFT) - nd_seg_guard : usable;
                if (now > was)
                    __atomic_add_fetch(&cache->gauge, (long)now - (long)was, __ATOMIC_RELAXED);
                else if (now < was)
                    nd_gauge_active((long)now - (long)was);
                if (now != was)
                    nd_store_relaxed(&pg->block_size, (uint32_t)now);
                *bytes = now;
                return p;
            }
            if (nd_large_resize(nd_seg_base(p), pg, usable, &delta)) {
                *bytes = pg->block_size;
                return p;
            }
            nd_large_free(nd_seg_base(p), pg, p);
        }
    }
    bool released = false, reclaimed = false, borrowed = false, lent = false, regained = false, fetched = false;
    nd_large_lock(pool);
    for (;;) {
        nd_segment *s;
        unsigned i = 64;
        if (nd_seg_guard != 0) {
            unsigned len = k;
            s = nd_large_find_guarded(pool, k, step, &i, &len);
            if (s != NULL && len != k && !tight) {   /* up to a guard page left there */
                k = len;
                need = (size_t)k << ND_CHUNK_SHIFT;
                usable = need - nd_seg_guard;
            }
        } else {
            s = NULL;
            /* (Each walk starts where a free run of its length may be:
               the fit hints, above.) */
            if (room != 0)
                for (s = nd_large_fit_start(pool, room); s != NULL; s = s->next)
                    if ((i = nd_large_find(s->free_mask, room, room)) < 64)
                        break;
            /* A run whose chunks are all resident (committed: written
               since their last purge) first, in any segment; only then the
               first run that fits (large.h). */
            if (s == NULL)
                s = nd_large_resident_run(pool, k, step, &i);
            if (s == NULL && !reclaimed && nd_large_cpu_holds(pool)) {
                /* No resident run fits: the caches of this shard's CPUs
                   give their blocks back first, so that a block this
                   shard's CPUs freed never has it fault in memory (or map
                   a segment) that the block holds. Once a call. Only this
                   shard's: the other shards' CPUs take theirs again at
                   their next blocks, and a purge delay without one drains
                   them (maintenance; a release and nodal_collect at
                   once); draining every shard's, a request took the
                   locks of the shards whose segments held those blocks at
                   each miss, the other CPUs' (emptied, nd_large_emptied). */
                reclaimed = true;
                nd_large_unlock(pool);
                nd_large_cpu_drain(pool, true, false);
                nd_large_lock(pool);
                continue;
            }
            /* A segment the node's cache keeps with its memory, whose
               resident chunks hold a run that fits, next (once a call):
               the block takes that memory with no page fault, and the
               shard neither borrows another shard's run (under that
               shard's lock, its thread's blocks and the block then in one
               segment) nor faults in chunks of its own while that memory
               waits in the cache for its purge. Two threads taking
               batches of 256 KiB blocks borrowed each other's freed runs
               8,300 times in 440,000 blocks, as each one's segments
               emptied into the cache (docs/results.md, stop 67). */
            if (s == NULL && !fetched && step == 1 && nd_node_has_dirty(node, bound)) {
                fetched = true;
                /* The fit hints moved first, as the search of any free run
                   below moves them: the walks for a resident run start
                   there (they walked every segment of a pool of 333 at
                   each block otherwise). */
                unsigned at;
                (void)nd_large_free_run(pool, k, step, &at);
                nd_large_unlock(pool);
                nd_segment *d = nd_node_seg_get_resident(node, bound, k);
                nd_large_lock(pool);
                if (d == NULL)
                    continue;
                /* Its resident run serves the block (found again: the
                   node looked at chunks past the header, as this does). */
                d->free_mask &= ~(uint64_t)1;   /* chunk 0: the header */
                nd_large_append(pool, d);
                s = d;
                i = nd_large_find(d->free_mask & d->committed, k, step);
                nd_assert(i < 64);
            }
            /* Nor in this shard after that: another shard's resident run
               before this one faults in memory; and when this shard has no
               free run that fits, another shard's free run before it maps
               a segment (nd_large_borrow), but for its first segment: a
               shard that took none of its own would have its CPUs'
               blocks all in the other shards' segments, their frees
               under those shards' locks (micro -m large -t 2's gain).
               Each once a call; the block is then taken under the
               lender's lock (pool, below). */
            bool lend = false;
            if (s == NULL && !borrowed && nd_large_others_used(pool))
                lend = borrowed = true;
            if (s == NULL && !lend)
                s = nd_large_free_run(pool, k, step, &i);
            if (s == NULL && !lend && !lent && pool->segs.count != 0 && nd_large_others_used(pool))
                lend = lent = true;
            if (lend) {
                nd_large_unlock(pool);
                nd_large_pool *o = nd_large_borrow(pool, k, step, !lent, &s, &i);
                if (o == NULL) {
                    nd_large_lock(pool);
                    continue;
                }
                pool = o;   /* its lock held, s its segment */
            }
        }
        if (s == NULL && nd_unlikely(nd_load_relaxed(&nd_seg_holes_made) != 0)) {
            /* Holes (an address-space limit was reached): this shard's,
               then the other shards' (once a call) before a segment maps. */
            s = nd_large_regain(pool, k, step, &i);
            if (s == NULL && ND_LARGE_SHARDS > 1 && !regained) {
                regained = true;
                nd_large_unlock(pool);
                nd_large_pool *o = nd_large_regain_other(pool, k, step, &s, &i);
                if (o == NULL) {
                    nd_large_lock(pool);
                    continue;
                }
                pool = o;   /* its lock held, s its segment */
            }
        }
        if (s == NULL && nd_unlikely(pool->full_at != 0)) {
            if (pool->full_at == nd_os_space_returns() + 1) {
                nd_large_unlock(pool);
                errno = ENOMEM;
                return NULL;
            }
            pool->full_at = 0;
        }
        if (s == NULL) {
            nd_large_unlock(pool);
            uint64_t refused = nd_os_map_refusals();
            s = nd_node_seg_get_large(node, bound);
            if (s == NULL) {
                if (errno != ENOMEM)
                    return NULL;
                if (released) {
                    if (!bound) {
                        nd_large_lock(pool);
                        pool->full_at = nd_os_space_returns() + 1;
                        nd_large_unlock(pool);
                    }
                    errno = ENOMEM;
                    return NULL;
                }
                /* Out of address space (not a full node): every pool's
                   free chunks give theirs back, and once more: a hole of
                   k chunks, or a new segment, may map now. */
                released = true;
                regained = false;   /* the other shards' new holes too */
                bool freed = nd_large_release_after(refused);
                nd_large_lock(pool);
                if (freed)
                    continue;
                if (!bound)
                    pool->full_at = nd_os_space_returns() + 1;
                nd_large_unlock(pool);
                errno = ENOMEM;
                return NULL;
            }
            pool = nd_large_add(pool, s, k, step, &s, &i);   /* its lock held */
            if (s == NULL)
                continue;
        }
        void *p = nd_large_take(pool, s, i, k, usable);
        if (nd_large_commit(pool, s, p, need) != 0) {
            /* The node is full (strict placement): give the run back. */
            nd_page *pg = &s->pages[i];
            nd_store_relaxed(&pg->in_use, 0);
            pg->key = ND_KEY_NONE;
            nd_large_give(s, i, k, nd_os_now_ms());
            nd_store_relaxed(&s->used_pages, s->used_pages - 1);
            if (s->used_pages == 0) {
                nd_add_relaxed(&pool->empty, 1);
                pool->spare = s;
            }
            nd_large_unlock(pool);
            errno = ENOMEM;
            return NULL;
        }
        int guarded = nd_large_guard(s, p, usable);
        /* Two threads that found no room at once each brought a segment:
           the pool keeps its spares, and gives back its least resident
           empty segment past them (nd_large_cleanest_empty). */
        nd_segment *extra = pool->empty > nd_large_spare() ? nd_large_cleanest_empty(pool, NULL) : NULL;
        if (extra != NULL)
            nd_large_seg_out(pool, extra);
        nd_large_gauge(pool, (long)usable);
        nd_large_unlock(pool);
        if (extra != NULL)
            nd_large_seg_release(extra);
        if (guarded != 0) {
            nd_large_free(s, &s->pages[i], p);   /* out of mappings (vm.max_map_count) */
            errno = ENOMEM;
            return NULL;
        }
        *bytes = usable;
        return p;
    }
}

/* Gives chunks [i, i+k) of s back, a block whose last chunk has a tail
   (segment.h): that chunk becomes a hole, mapped again before reuse
   (large.h), the others free. Under the pool lock. */
static nd_noinline void nd_large_give_tailed(nd_segment *s, unsigned i, unsigned k)
{
    nd_seg_tail_to_hole(s, i + k - 1u);
    if (k > 1)
        nd_large_give(s, i, k - 1u, nd_os_now_ms());
}

/* A block of s is gone (freed, or moved: nd_large_move), its descriptor
   cleared and its chunks given back: one block fewer in s; when it was the
   last and the shard has its spare empty segments already, the segment to
   give back to its node (s, or a spare that holds less memory), taken out
   of the shard; NULL otherwise. Under the pool lock.
   Each shard keeps its own spares and gives back only its own segments:
   with one spare for all the shards together (branch h58l), a segment
   emptied while another shard held it stayed until a give-back took the
   other shard's lock to hand back the least resident of the two, so two
   threads freeing batches of large blocks on two CPUs took each other's
   locks at every segment they emptied, and each request that found no
   resident run drained the other shards' CPUs' caches
   (nd_large_alloc_at): micro -m batch -s 256k -t 2 332 -> 236 ns a pair
   with both gone, 1 MiB at 8 threads on 2 CPUs x0.39 of the CPU,
   shortlived -t 2's and mstress -t 2's peaks within their spreads
   (docs/results.md, stop 68). */
nd_large_path static nd_noinline nd_segment *nd_large_emptied(nd_large_pool *pool, nd_segment *s)
{
    if (pool->empty < nd_large_spare()) {
        nd_add_relaxed(&pool->empty, 1);
        pool->spare = s;
        return NULL;
    }
    /* One empty segment too many: the least resident of them goes (s, or
       a spare that holds less memory than s: s stays in its place, the
       spare's successor). */
    nd_segment *release = nd_large_cleanest_empty(pool, s);
    if (release != s)
        pool->spare = s;
    nd_large_fit_removed(pool, release);
    nd_list_remove(&pool->segs, release);
    nd_sub_relaxed(&pool->hint, 1);
    return release;
}

nd_inline nd_segment *nd_large_block_gone_locked(nd_large_pool *pool, nd_segment *s)
{
    nd_store_relaxed(&s->used_pages, s->used_pages - 1);
    return s->used_pages == 0 ? nd_large_emptied(pool, s) : NULL;
}

/* nd_large_block_gone_locked, then the lock released (nd_large_unlock),
   the active bytes counted and the segment given back. */
nd_large_path static void nd_large_block_gone(nd_large_pool *pool, nd_segment *s, size_t bytes)
{
    nd_segment *release = nd_large_block_gone_locked(pool, s);
    nd_large_gauge(pool, -(long)bytes);
    nd_large_unlock(pool);
    if (release != NULL)
        nd_large_seg_release(release);
}

/* Clears the descriptor of block pg of s (in use) and gives its chunks
   back; its bytes. Under the pool lock. */
nd_inline size_t nd_large_unblock(nd_segment *s, nd_page *pg, uint64_t now)
{
    size_t bytes = pg->block_size;
    unsigned i = nd_seg_page_index(s, pg), k = pg->reserved;
    nd_large_unguard_freed(s, pg->start, bytes);   /* before the chunks can be reused */
    nd_store_relaxed(&pg->in_use, 0);
    pg->key = ND_KEY_NONE;
    if (nd_unlikely(s->tails != 0) && ((s->tails >> (i + k - 1u)) & 1))
        nd_large_give_tailed(s, i, k);
    else
        nd_large_give(s, i, k, now);
    return bytes;
}

nd_large_path static void nd_large_drain(nd_large_pool *pool)
{
    nd_page *pg = __atomic_exchange_n(&pool->pending, NULL, __ATOMIC_ACQUIRE);
    if (pg == NULL)
        return;
    uint64_t now = nd_os_now_ms();
    size_t bytes = 0;
    while (pg != NULL) {
        nd_page *next = pg->xnext;
        pg->xnext = NULL;
        nd_segment *s = nd_seg_base(pg);
        nd_store_relaxed(&pg->in_full, 0);
        bytes += nd_large_unblock(s, pg, now);
        nd_segment *release = nd_large_block_gone_locked(pool, s);
        if (release != NULL) {
            release->next = pool->gone;
            pool->gone = release;
        }
        pg = next;
    }
    nd_large_gauge(pool, -(long)bytes);
}

/* The rest of nd_large_unlock, the lock released: the segments `gone`
   given back to their node, and the blocks freed while this thread held
   the lock given back (their freer saw the lock held, and may have tried
   again before this thread let go; else they wait for the shard's next
   lock). */
static nd_noinline void nd_large_unlocked(nd_large_pool *pool, nd_segment *gone)
{
    for (;;) {
        while (gone != NULL) {
            nd_segment *s = gone;
            gone = s->next;
            nd_large_seg_release(s);
        }
        if (nd_load_relaxed(&pool->pending) == NULL || !nd_trylock(nd_pool_lock(pool)))
            return;
        nd_large_drain(pool);
        gone = pool->gone;
        pool->gone = NULL;
        nd_unlock(nd_pool_lock(pool));
    }
}

nd_large_path static void nd_large_unlock(nd_large_pool *pool)
{
    nd_segment *gone = pool->gone;
    if (nd_unlikely(gone != NULL))
        pool->gone = NULL;
    nd_unlock(nd_pool_lock(pool));
    if (nd_unlikely(gone != NULL || nd_load_relaxed(&pool->pending) != NULL))
        nd_large_unlocked(pool, gone);
}

/* Block p (descriptor pg of s, shard pool) is freed without the shard's
   lock: it goes on the shard's stack of deferred frees, flagged (in_full,
   so that a second free is seen), for the lock's holder as it lets go or
   its next taker to give back (nd_large_drain), and the freeing thread
   does not wait. Its bytes; 0 if p is not the start of a block in use, or
   is flagged already (a double free). Without the lock. */
nd_large_path static size_t nd_large_defer(nd_large_pool *pool, nd_page *pg, void *p, bool retry)
{
    if (!nd_load_relaxed(&pg->in_use) || pg->start != (uint8_t *)p)
        return 0;
    if (ND_DEBUG >= 2)
        __atomic_add_fetch(&pool->deferring, 1, __ATOMIC_SEQ_CST);
    uint8_t no = 0;
    if (!__atomic_compare_exchange_n(&pg->in_full, &no, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
        if (ND_DEBUG >= 2)
            __atomic_sub_fetch(&pool->deferring, 1, __ATOMIC_SEQ_CST);
        return 0;
    }
    size_t bytes = nd_load_relaxed(&pg->block_size);
    nd_page *top = nd_load_relaxed(&pool->pending);
    do
        pg->xnext = top;
    while (!__atomic_compare_exchange_n(&pool->pending, &top, pg, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
    if (ND_DEBUG >= 2)
        __atomic_sub_fetch(&pool->deferring, 1, __ATOMIC_SEQ_CST);
    /* Once more (retry: a free of this CPU's shard that found its lock
       held): the holder may have let go meanwhile (and looked at the
       stack before this push). */
    if (retry && nd_trylock(nd_pool_lock(pool))) {
        nd_large_drain(pool);   /* (this block at least) */
        nd_large_unlock(pool);
    }
    return bytes;
}

/* Gives block p back to its segment (nd_large_free without the kept
   blocks). home: the calling CPU's shard of p's (node, kind) for a free
   (nd_large_free); NULL for a drain of the caches: one that waits for the
   lock and leaves nothing behind (wait: nodal_collect, a release,
   maintenance), or one that defers the block when its shard's lock is
   held, as a free does (a request's drain of its shard's CPUs' caches: the
   holder gives it back as it lets go, and the requester's own shard's
   blocks are back once it takes its lock again; waiting for each block's
   lock, two threads taking batches of 256 KiB blocks waited 14,000 times
   in 440,000 blocks, docs/results.md, stop 67). A free is
   deferred (nd_large_defer), the freeing thread taking no lock:
   - a block of another CPU's shard: a shard's lock is taken by the
     threads of its own CPUs (and the rare borrower), who give it back at
     their next request;
   - a block of its own CPU's shard when its stack holds nothing and the
     block is not the last of its segment (used_pages, read without the
     lock: a hint that can only be high while this block is in use): the
     thread's next large request, which takes the lock anyway, gives it
     back first, so a thread that allocates and frees takes one lock a
     malloc and a free, not two; no segment waits on the stack to be
     emptied, and a burst of frees defers every second block at most
     (the next free finds the stack in use, takes the lock and gives both
     back);
   - any block whose shard's lock is held.
   Otherwise it is given back under the lock, taken by trylock. */
nd_large_path static size_t nd_large_give_back(nd_segment *s, nd_page *pg, void *p, nd_large_pool *home,
                                               bool wait)
{
    nd_large_pool *pool = nd_large_pool_of(s);
    if (home == NULL && wait) {
        nd_large_lock(pool);
    } else if (home == NULL) {
        if (!nd_large_trylock(pool))
            return nd_large_defer(pool, pg, p, true);
    } else {
        if (pool != home)
            return nd_large_defer(pool, pg, p, false);
        if (nd_load_relaxed(&pool->pending) == NULL && nd_load_relaxed(&s->used_pages) > 1)
            return nd_large_defer(pool, pg, p, false);
        if (!nd_trylock(nd_pool_lock(pool)))
            return nd_large_defer(pool, pg, p, true);
        if (nd_load_relaxed(&pool->pending) != NULL)
            nd_large_drain(pool);
    }
    if (!pg->in_use || pg->start != (uint8_t *)p || nd_load_relaxed(&pg->in_full)) {
        nd_large_unlock(pool);
        return 0;
    }
    size_t bytes = nd_large_unblock(s, pg, nd_os_now_ms());
    nd_large_block_gone(pool, s, bytes);
    return bytes;
}

bool nd_large_move(nd_segment *s, nd_page *pg, void *p, void *to)
{
    nd_lock_may_take(ND_LOCK_ID_large_pool);
    nd_large_pool *pool = nd_large_pool_of(s);
    nd_large_lock(pool);
    unsigned i = nd_seg_page_index(s, pg), k = pg->reserved;
    size_t bytes = pg->block_size;
    if (!pg->in_use || pg->start != (uint8_t *)p || nd_load_relaxed(&pg->in_full) || s->bound ||
        nd_seg_guard != 0 || bytes != (size_t)k << ND_CHUNK_SHIFT ||
        ((s->unmapped | s->tails) & nd_mask_range(i, i + k - 1u)) != 0 || !nd_seg_move_run(s, i, i + k - 1u, to)) {
        nd_large_unlock(pool);
        return false;
    }
    nd_store_relaxed(&pg->in_use, 0);
    pg->key = ND_KEY_NONE;
    /* Mapped again at once where nothing took the hole's place (free
       chunks then, untouched); a hole otherwise (large.h). */
    if (nd_seg_remap_chunks(s, nd_mask_range(i, i + k - 1u)) != 0 && nd_large_fit_on(pool))
        nd_large_fit_room(pool, s, 63);
    nd_large_block_gone(pool, s, bytes);
    return true;
}

bool nd_large_leave(nd_segment *s, nd_page *pg, void *p)
{
    nd_lock_may_take(ND_LOCK_ID_large_pool);
    nd_large_pool *pool = nd_large_pool_of(s);   /* its segment's shard */
    nd_large_lock(pool);
    if (!pg->in_use || pg->start != (uint8_t *)p || nd_load_relaxed(&pg->in_full) || s->used_pages != 1 ||
        s->bound || s->interleaved || nd_seg_guard != 0 || nd_load_relaxed(&pg->sampled) != 0 ||
        s->size != ND_SEG_SIZE || (s->unmapped | s->tails) != 0) {
        nd_large_unlock(pool);
        return false;
    }
    size_t bytes = pg->block_size;
    nd_large_fit_removed(pool, s);
    nd_list_remove(&pool->segs, s);
    nd_sub_relaxed(&pool->hint, 1);
    nd_store_relaxed(&s->used_pages, 0);
    nd_store_relaxed(&pg->in_use, 0);
    pg->key = ND_KEY_NONE;
    nd_large_gauge(pool, -(long)bytes);
    nd_large_unlock(pool);
    return true;
}

nd_large_path size_t nd_large_free(nd_segment *s, nd_page *pg, void *p)
{
    nd_lock_may_take(ND_LOCK_ID_large_pool);
    size_t bytes = nd_load_relaxed(&pg->block_size);
    if (nd_load_relaxed(&pg->in_full))
        return 0;   /* kept, cached or deferred already: a double free */
    nd_large_pool *pool = nd_large_home(s->node, s->bound);
    if (nd_load_relaxed(&pg->in_use) && pg->start == (uint8_t *)p) {
        /* Kept and cached where this CPU's next request looks: its own
           shard's slots, whichever shard the block's segment is in (a
           drain gives it back to that one: nd_large_give_back). */
        unsigned reserved = nd_load_relaxed(&pg->reserved);
        bool twice = false;
        if (nd_large_keepable(bytes)) {
            if (nd_large_keep_put(pool->keep, pg, p, &twice))
                return bytes;
        } else if (nd_large_cacheable(bytes, reserved) && !nd_os_space_limit_seen() &&
                   nd_opt(ND_OPT_purge_delay) != 0) {
            if (nd_large_cpu_put(nd_large_cache_of(pool), pg, p, reserved, &twice))
                return bytes;
        }
        if (twice)
            return 0;
    }
    return nd_large_give_back(s, pg, p, pool, false);
}

/* Gives pool's kept blocks back to their segments: all of them (force),
   or when none was taken since the last check, a purge delay ago. Without
   the pool lock. */
nd_large_path static void nd_large_keep_drain(nd_large_pool *pool, uint64_t now, bool force)
{
    if (!force) {
        nd_large_lock(pool);
        uint64_t delay = (uint64_t)nd_opt(ND_OPT_purge_delay);
        bool due = now >= pool->keep_check + delay;
        if (due)
            pool->keep_check = now;
        nd_large_unlock(pool);
        if (!due)
            return;
    }
    if (force || !__atomic_exchange_n(&pool->keep_used, 0, __ATOMIC_RELAXED))
        for (unsigned i = 0; i < ND_LARGE_KEEP; i++) {
            void *p = __atomic_exchange_n(&pool->keep[i], NULL, __ATOMIC_ACQUIRE);
            if (p == NULL)
                continue;
            nd_page *pg = nd_large_kept_desc(p);
            nd_store_relaxed(&pg->in_full, 0);
            nd_large_give_back(nd_seg_base(p), pg, p, NULL, true);
        }
    nd_large_cpu_drain(pool, force, true);
}

nd_large_path static void nd_large_cpu_drain(nd_large_pool *pool, bool all, bool wait)
{
    /* (A cache that holds nothing and was not used is only read: a line
       never written stays unwritten.) */
    for (unsigned c = 0; c < ND_LARGE_SHARD_CPUS; c++) {
        nd_large_cpucache *sh = &pool->cpu[c];
        if (nd_load_relaxed(&sh->chunks) == 0 && !nd_load_relaxed(&sh->used))
            continue;
        if (!all && __atomic_exchange_n(&sh->used, 0, __ATOMIC_RELAXED))
            continue;
        for (unsigned i = 0; i < ND_LARGE_CPU_SLOTS; i++) {
            uintptr_t v = __atomic_exchange_n(&sh->slot[i], 0, __ATOMIC_ACQUIRE);
            if (v == 0)
                continue;
            nd_sub_relaxed(&sh->chunks, (uint32_t)(v & ND_LARGE_SLOT_CHUNKS));
            void *p = (void *)(v & ~ND_LARGE_SLOT_CHUNKS);
            nd_page *pg = nd_large_kept_desc(p);
            nd_store_relaxed(&pg->in_full, 0);
            nd_large_give_back(nd_seg_base(p), pg, p, NULL, wait);
        }
    }
}

/* Does a CPU's cache of pool hold a block? */
static bool nd_large_cpu_holds(const nd_large_pool *pool)
{
    for (unsigned c = 0; c < ND_LARGE_SHARD_CPUS; c++)
        if (nd_load_relaxed(&pool->cpu[c].chunks) != 0)
            return true;
    return false;
}

bool nd_large_resize(nd_segment *s, nd_page *pg, size_t size, long *delta)
{
    nd_lock_may_take(ND_LOCK_ID_large_pool);
    size_t need = nd_round_os(size == 0 ? 1 : size);
    unsigned k2 = nd_chunks_of(need + nd_seg_guard);
    nd_large_pool *pool = nd_large_pool_of(s);
    nd_large_lock(pool);
    if (nd_seg_guard != 0) {
        /* secure=1: in place while the run stays (its usable bytes are the
           run's) and the size needs at least half of its chunks (a block may
           have taken up to twice its chunks: nd_large_find_guarded);
           otherwise its guard page would move (two system calls, more than
           a copy into a run that has one): realloc copies. */
        bool whole = pg->block_size + nd_seg_guard == (size_t)pg->reserved << ND_CHUNK_SHIFT;
        bool same = pg->in_use && (whole ? k2 <= pg->reserved && 2 * k2 >= pg->reserved : need <= pg->block_size);
        nd_large_unlock(pool);
        *delta = 0;
        return same;
    }
    unsigned i = nd_seg_page_index(s, pg), k = pg->reserved;
    if (!pg->in_use || i + k2 > 64) {
        nd_large_unlock(pool);
        return false;
    }
    unsigned last = i + k - 1u;
    if ((s->tails >> last) & 1) {
        /* Its last chunk's end was given back (large.h): cut off there
           (a hole), or mapped again before the block reaches into it. */
        if (k2 < k) {
            nd_seg_tail_to_hole(s, last);
            pg->reserved = (uint16_t)--k;
        } else if ((k2 > k || need > ((size_t)k - 1u) * ND_CHUNK_SIZE + s->tail_from[last]) &&
                   !nd_seg_remap_tail(s, last)) {
            nd_large_unlock(pool);
            return false;
        }
    }
    if (k2 > k) {
        uint64_t more = nd_mask_range(i + k, i + k2 - 1);
        if ((s->free_mask & more) != more) {
            nd_large_unlock(pool);
            return false;
        }
        s->free_mask &= ~more;
        s->purge_mask &= ~more;
        pg->reserved = (uint16_t)k2;   /* reserved before a bound commit drops the lock */
        if (nd_large_commit(pool, s, pg->start, need) != 0) {
            pg->reserved = (uint16_t)k;
            nd_large_give(s, i + k, k2 - k, nd_os_now_ms());
            nd_large_unlock(pool);
            return false;
        }
    } else if (k2 < k) {
        nd_large_give(s, i + k2, k - k2, nd_os_now_ms());
        pg->reserved = (uint16_t)k2;
    }
    /* Grown: its whole run (nd_large_whole_chunks), so that it grows on
       to the run's end without this lock (alloc.c: nd_realloc). */
    if (need > pg->block_size && nd_large_whole_chunks())
        need = (size_t)k2 << ND_CHUNK_SHIFT;
    *delta = (long)need - (long)pg->block_size;
    nd_store_relaxed(&pg->block_size, (uint32_t)need);
    nd_large_gauge(pool, *delta);
    nd_large_unlock(pool);
    return true;
}

nd_hot void nd_large_maintain(uint64_t now, bool force)
{
    nd_lock_may_take(ND_LOCK_ID_tight);
    nd_tight_sweep(force);
    nd_large_pool *pool;
    for (int i = 0; (pool = nd_large_next_used(&i)) != NULL;) {
        nd_large_keep_drain(pool, now, force);
        nd_large_lock(pool);
        for (nd_segment *s = pool->segs.first; s != NULL; s = s->next)
            if (s->purge_mask != 0 && (force || now >= s->purge_at))
                nd_seg_purge(s, s->purge_mask);
        /* The active gauge's changes the shard and its CPUs' caches held back. */
        for (unsigned c = 0; c < ND_LARGE_SHARD_CPUS; c++)
            if (nd_load_relaxed(&pool->cpu[c].gauge) != 0)
                pool->gauge_active += __atomic_exchange_n(&pool->cpu[c].gauge, 0, __ATOMIC_RELAXED);
        nd_large_gauge_flush(pool);
        nd_large_unlock(pool);
    }
}

__attribute__((no_sanitize("thread")))
long nd_large_gauge_pending(void)
{
    long v = 0;
    nd_large_pool *pool;
    for (int i = 0; (pool = nd_large_next_used(&i)) != NULL;) {
        v += nd_load_relaxed(&pool->gauge_active);   /* (racy: a whole word) */
        for (unsigned c = 0; c < ND_LARGE_SHARD_CPUS; c++)
            v += nd_load_relaxed(&pool->cpu[c].gauge);
    }
    return v;
}

size_t nd_large_cached_bytes(void)
{
    size_t chunks = 0;
    nd_large_pool *pool;
    for (int i = 0; (pool = nd_large_next_used(&i)) != NULL;)
        for (unsigned c = 0; c < ND_LARGE_SHARD_CPUS; c++)
            chunks += nd_load_relaxed(&pool->cpu[c].chunks);
    return chunks << ND_CHUNK_SHIFT;
}

/* Is pg on pool's stack of deferred frees (nd_large_defer)? Under the
   pool lock (nothing is taken off the stack meanwhile; pushes only put
   blocks before the head read here). */
static bool nd_large_is_pending(const nd_large_pool *pool, const nd_page *pg)
{
    for (const nd_page *q = nd_load_acquire(&pool->pending); q != NULL; q = q->xnext)
        if (q == pg)
            return true;
    return false;
}

nd_lock_t *nd_large_lock_of(const void *p)
{
    return nd_pool_lock(nd_large_pool_of(nd_seg_base(p)));
}

/* The fit hints of pool (nd_large_fit), while kept: its segments' pool_seq
   rise along its list; each hint is NULL, ND_LARGE_FIT_PAST or one of its
   segments, with that segment's pool_seq (0, UINT64_MAX), and no segment
   before it (none at all for ND_LARGE_FIT_PAST) has a free run of its
   length. Under the lock. */
static bool nd_large_fit_is_valid(const nd_large_pool *pool)
{
    if (!nd_large_fit_on(pool))
        return true;
    const nd_large_fit *f = pool->fit;
    uint64_t last = 0;
    for (const nd_segment *s = pool->segs.first; s != NULL; s = s->next) {
        if (s->pool_seq <= last || s->pool_seq > f->next_seq)
            return false;
        last = s->pool_seq;
    }
    for (unsigned k = 1; k < ND_LARGE_FIT_KS; k++) {
        const nd_segment *h = f->fit_from[k];
        if (h == NULL) {
            if (f->fit_seq[k] != 0)
                return false;
            continue;
        }
        if (f->fit_seq[k] != (h == ND_LARGE_FIT_PAST ? UINT64_MAX : h->pool_seq))
            return false;
        const nd_segment *s = pool->segs.first;
        for (; s != NULL && s != h; s = s->next)
            if (nd_large_find(s->free_mask, k, 1) < 64)
                return false;
        if (s != h && h != ND_LARGE_FIT_PAST)
            return false;   /* not one of its segments */
    }
    return true;
}

bool nd_large_is_valid(void)
{
    bool ok = true;
    for (int n = 0; n < nd_topo.mem_count && ok; n++) {
        int node = nd_topo.mem_ids[n];
        for (int j = 0; j < 2 * ND_LARGE_SHARDS && ok; j++) {
            int b = j / ND_LARGE_SHARDS;
            unsigned sh = (unsigned)j % ND_LARGE_SHARDS;
            nd_large_pool *pool = &nd_large_pools[node][b][sh];
            nd_lock(nd_pool_lock(pool));
            ok = b == 0 || pool->full_at == 0;   /* a bound pool never fails fast */
            uint32_t empty = 0;
            size_t count = 0;
            bool spare_in = false;
            for (nd_segment *s = pool->segs.first; s != NULL && ok; s = s->next, count++) {
                ok = s->kind == ND_SEG_LARGE && s->node == node && s->bound == b && s->shard == sh &&
                     (s->free_mask & 1) == 0 &&
                     s->page_count == 64 && s->size == ND_SEG_SIZE && (s->unmapped & 1) == 0 &&
                     (s->purge_mask & ~s->free_mask) == 0 && nd_seg_is_valid(s);
                uint64_t covered = 1, tailed = 1;   /* chunk 0 may have a tail */
                uint32_t blocks = 0;
                for (unsigned i = 1; i < 64 && ok; i++) {
                    const nd_page *pg = &s->pages[i];
                    if (!pg->in_use)
                        continue;
                    uint64_t run = nd_mask_range(i, i + pg->reserved - 1u);
                    /* (A CPU's cache's take sets a cached block's size
                       without the lock: within its run, as checked.) A
                       node-bound run being populated (nd_large_commit,
                       the lock released): its size and guard come after. */
                    size_t bs = nd_load_relaxed(&pg->block_size);
                    bool filling = s->bound && (run & ~s->committed) != 0;
                    ok = pg->reserved >= 1 && i + pg->reserved <= 64 && (covered & run) == 0 &&
                         (!nd_load_relaxed(&pg->in_full) || nd_large_keepable(bs) ||
                          nd_large_cacheable(bs, pg->reserved) || nd_large_is_pending(pool, pg) ||
                          __atomic_load_n(&pool->deferring, __ATOMIC_SEQ_CST) != 0) &&
                         pg->start == (uint8_t *)s + ((size_t)i << ND_CHUNK_SHIFT) &&
                         nd_chunks_of(bs + nd_seg_guard) <= pg->reserved &&
                         (nd_seg_guard == 0 || filling || nd_chunks_of(bs + nd_seg_guard) == pg->reserved);
                    if (ok && nd_seg_guard != 0 && !filling) {
                        size_t a = nd_large_page_of(s, pg->start), g = nd_large_page_of(s, pg->start + bs);
                        for (size_t q = a; q < g && ok; q++)
                            ok = !nd_seg_guarded(s, q);
                        ok = ok && nd_seg_guarded(s, g);
                    }
                    /* A tail: its block's last chunk, past the block (and its guard). */
                    unsigned last = i + pg->reserved - 1u;
                    if (ok && ((s->tails >> last) & 1))
                        ok = !s->bound && ((size_t)last << ND_CHUNK_SHIFT) + s->tail_from[last] >=
                                              ((size_t)i << ND_CHUNK_SHIFT) + bs + nd_seg_guard;
                    tailed |= ok ? s->tails & ((uint64_t)1 << last) : 0;
                    covered |= run;
                    blocks++;
                }
                uint64_t gone = s->unmapped;   /* holes */
                ok = ok && blocks == s->used_pages && (covered | s->free_mask | gone) == ~(uint64_t)0 &&
                     (covered & s->free_mask) == 0 && ((covered | s->free_mask) & gone) == 0 &&
                     (s->tails & ~tailed) == 0 && ((s->tails & 1) == 0 || s->tail_from[0] >= ND_SEG_HEADER_SIZE);
                empty += s->used_pages == 0;
                spare_in |= s == pool->spare;
            }
            ok = ok && !nd_gauge_out_of_band(pool->gauge_active);
            for (unsigned c = 0; c < ND_LARGE_SHARD_CPUS; c++)
                ok = ok && nd_load_relaxed(&pool->cpu[c].gauge) >= 0;
            ok = ok && (pool->spare == NULL || (spare_in && pool->spare->used_pages == 0));
            ok = ok && empty == pool->empty && empty <= nd_large_spare() && count == pool->segs.count &&
                 count == nd_load_relaxed(&pool->hint);
            ok = ok && nd_large_fit_is_valid(pool);
            /* The search's record: its segment in the list, and while it
               holds, no resident run of res_k chunks up to it. */
            if (pool->res_tail != NULL) {
                bool in = false, holds = pool->res_gen == pool->room_gen;
                for (nd_segment *s = pool->segs.first; s != NULL && !in; s = s->next) {
                    in = s == pool->res_tail;
                    if (holds && nd_seg_guard == 0)
                        ok = ok && nd_large_find(s->free_mask & s->committed, pool->res_k, 1) >= 64;
                }
                ok = ok && in && pool->res_k >= 1 && pool->res_gen <= pool->room_gen;
            }
            /* A lending hint names a past state of the shard: a room_gen
               it has had, and a run length a borrow asks for. */
            for (int r = 0; r < 2; r++)
                ok = ok && (pool->lend_fail[r] == 0 ||
                            ((pool->lend_fail[r] >> 6) <= pool->room_gen && (pool->lend_fail[r] & 63) != 0));
            /* The segments the unlock gives back: large, of this (node,
               kind), without a block. */
            for (nd_segment *s = pool->gone; s != NULL && ok; s = s->next)
                ok = s->kind == ND_SEG_LARGE && s->node == node && s->bound == b && s->used_pages == 0;
            nd_unlock(nd_pool_lock(pool));
        }
    }
    return ok;
}
