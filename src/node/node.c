/*
 * node.c - per-node shared state (see node.h): free-segment caches and
 * abandoned-segment lists, one pair per (node, kind), each node under its
 * own lock.
 *
 * Cache policy: at most ND_CACHE_DIRTY_MAX cached segments per (node, kind)
 * keep their memory (they serve the next request without page faults);
 * those are purged once purge_delay has passed. Every other segment is
 * purged on arrival. At most cache_segments are kept mapped; the rest are
 * unmapped. Both bounds rise with demand: a segment purged on arrival (or
 * unmapped) that the cache would have served within a purge delay (a
 * request found only clean segments, or none, while that many were
 * dropped in the last delay) raises the bound by one, up to
 * ND_CACHE_DIRTY_TOP (ND_CACHE_COUNT_TOP), so that a program that frees
 * and takes again more segments than the bounds in rounds shorter than a
 * purge delay keeps them for their delay rather than purge (or unmap) and
 * fault in (or map) them at every round: batches of 1,000 blocks of 128
 * KiB (bench/micro -m batch -s 131072) took 7,000 ns a pair, 1 MiB 63,000
 * against mimalloc's 57 and 301 (docs/results.md, stop 62). A raised
 * bound comes down, by half at most and not below twice the most
 * segments (dirty ones) the cache held since, at each sweep whose highs
 * stayed under half of it (nd_node_bounds_age). Dirty segments are still
 * purged once their delay has passed, however many there are.
 */
#include "node.h"

#include <errno.h>
#include <string.h>
#include "atomic.h"
#include "list.h"
#include "lock.h"
#include "options.h"
#include "os.h"
#include "topo.h"

#define ND_CACHE_DIRTY_MAX 4
#define ND_CACHE_DIRTY_TOP 1024    /* 4 GiB of memory */
#define ND_CACHE_COUNT_TOP 1024    /* 4 GiB of address space */
#define ND_HUGE_CACHE_COUNT 8
#define ND_HUGE_CACHE_BYTES ((size_t)128 << 20)

typedef ND_LIST(nd_segment) nd_seg_list;

/*
 * Invariants (under the node lock):
 *  - cache lists free segments (kind FREE, no page in use, owner NULL, not
 *    abandoned), dirty ones (memory beyond the header still committed)
 *    before clean ones; cache_dirty counts the dirty ones.
 *  - abandoned lists segments with abandoned == 1 and owner NULL.
 *  - huge lists freed huge mappings (kind FREE, interleaved 0, their block
 *    gone from the block gauges) newest first; huge_bytes is the sum of
 *    their sizes, at most ND_HUGE_CACHE_BYTES, and huge.count is at most
 *    ND_HUGE_CACHE_COUNT.
 *  - huge_asked_at: the clock (ms) when a huge block of this kind was last
 *    asked of the cache (demand, above); read and written with atomics,
 *    without the lock.
 *  - cache_hint, dirty_hint, abandoned_hint and huge_hint equal
 *    cache.count, cache_dirty, abandoned.count and huge.count; they are
 *    also read without the lock (as hints), so they change with atomics.
 *  - dirty_max, count_max: the bounds (above), 0 for their base
 *    (ND_CACHE_DIRTY_MAX, cache_segments), else above it and at most
 *    ND_CACHE_DIRTY_TOP, ND_CACHE_COUNT_TOP; read without the lock
 *    (relaxed atomics), written under it. dropped_dirty, dropped_mapped:
 *    segments purged on arrival, unmapped, since dropped_at (ms; set to 0
 *    by a request that finds both spent or the window past) and not made
 *    up for by a raise yet; dirty_high, count_high: the most
 *    cache_dirty, cache.count since the last sweep.
 */
typedef struct nd_kind_state {
    nd_seg_list cache;
    size_t      cache_dirty;
    nd_seg_list abandoned;
    nd_seg_list huge;          /* freed huge mappings, newest first */
    size_t      huge_bytes;
    uint64_t    huge_asked_at; /* ms: the last huge block of this kind asked of the cache */
    size_t      cache_hint, dirty_hint, abandoned_hint, huge_hint;
    size_t      dirty_max, count_max;
    size_t      dropped_dirty, dropped_mapped;
    uint64_t    dropped_at;
    size_t      dirty_high, count_high;
} nd_kind_state;

/*
 * The reserve (per node): under an address-space limit, a short segment of
 * plain memory (ND_NODE_RESERVE_SIZE) mapped while there is still room, for
 * the plain shared heap of its node (thread/shared.h) to take when nothing
 * else maps: the small requests of a thread whose own heap finds no room
 * then still succeed, as glibc's go to its main arena.
 * Invariants:
 *  - reserve: NULL, or that segment (bound 0, node this node); written once,
 *    under the node lock, and read without it (acquire).
 *  - reserve_taken == 0: kind FREE, owner NULL, on no list, no page in use.
 *    reserve_taken == 1: formatted SMALL and the plain shared heap's for
 *    good: never given back (heap.c keeps it when its pages are free).
 */
#define ND_NODE_RESERVE_SIZE ((size_t)256 << 10)

typedef struct nd_aligned(ND_CACHE_LINE) nd_node_state {
    nd_kind_state kinds[2];    /* [0] plain, [1] bound; under ND_LOCK(node, node id) */
    nd_segment   *reserve;     /* above */
    bool          reserve_taken;
} nd_node_state;

static nd_node_state nd_nodes[ND_MAX_NODES];

/* Demand, for the cache of freed huge mappings: while huge blocks of a
   kind of memory are asked for (within the last ND_DEMAND_DELAYS purge
   delays), its cached mappings stay past purge_delay, within the cache's
   bounds, so a program that makes and frees huge blocks reuses them rather
   than mapping and faulting them again, however long a busy machine keeps
   its threads waiting. Once they are not, the mappings past their delay go
   as far as they exceed the process's headroom: the most memory it had in
   use (the `active` gauge) over the last one to two demand windows, less
   what it has in use now; two windows after its use came down, all of them.
   nd_node_demand_note samples `active` (segment requests, huge blocks made
   and freed, and every sweep call it); nd_node_headroom returns that
   headroom. */
#define ND_DEMAND_DELAYS 3

/* peak[0] is the highest `active` sampled in the window
   that began at `since`, peak[1] that of the window before. Relaxed
   atomics: a sample lost to a race only makes a release come sooner. */
static struct { uint64_t since; size_t peak[2]; } nd_demand;
static uint64_t nd_node_next_maintain;   /* ms; one thread at a time sweeps */

/* The lock of node state ns (lock.h: row node, instance = node id). */
static nd_lock_t *nd_node_lock(const nd_node_state *ns) { return ND_LOCK(node, ns - nd_nodes); }

static bool nd_node_seg_is_dirty(const nd_segment *s) { return (s->committed & ~(uint64_t)1) != 0; }

/* Under the node lock: list changes that keep the hints equal. */
static void nd_node_cache_add(nd_kind_state *k, nd_segment *s, bool front)
{
    if (front)
        nd_list_push_front(&k->cache, s);
    else
        nd_list_push_back(&k->cache, s);
    nd_add_relaxed(&k->cache_hint, 1);
    if (nd_node_seg_is_dirty(s)) {
        k->cache_dirty++;
        nd_add_relaxed(&k->dirty_hint, 1);
        if (k->cache_dirty > k->dirty_high)
            k->dirty_high = k->cache_dirty;
    }
    if (k->cache.count > k->count_high)
        k->count_high = k->cache.count;
}

/* The bounds of a (node, kind)'s cache: its dirty segments, all its
   segments (node.c, above). */
static size_t nd_node_dirty_max(const nd_kind_state *k)
{
    return nd_bound_of(nd_load_relaxed(&k->dirty_max), ND_CACHE_DIRTY_MAX);
}

static size_t nd_node_count_max(const nd_kind_state *k)
{
    return nd_bound_of(nd_load_relaxed(&k->count_max), (size_t)nd_opt(ND_OPT_cache_segments));
}

/* Under the node lock: a request at `now` found no dirty segment (clean:
   a clean one, else none at all). Each segment the bounds dropped within
   the last purge delay that would have served it raises its bound by one
   (above). */
static void nd_node_cache_missed(nd_kind_state *k, uint64_t now, bool clean)
{
    if ((k->dropped_dirty | k->dropped_mapped) == 0 || now > k->dropped_at + (uint64_t)nd_opt(ND_OPT_purge_delay)) {
        /* Nothing dropped, or too late: not the same round. A request
           finding the cache empty then takes no lock (nd_node_seg_get). */
        k->dropped_dirty = k->dropped_mapped = 0;
        nd_store_relaxed(&k->dropped_at, 0);
        return;
    }
    bool raised = false;
    if (k->dropped_dirty != 0) {
        size_t m = nd_node_dirty_max(k);
        if (m < ND_CACHE_DIRTY_TOP) {
            raised |= m == ND_CACHE_DIRTY_MAX;
            nd_store_relaxed(&k->dirty_max, m + 1);
        }
        k->dropped_dirty--;
    }
    if (!clean && k->dropped_mapped != 0) {
        size_t m = nd_node_count_max(k);
        if (m < ND_CACHE_COUNT_TOP) {
            raised |= m == (size_t)nd_opt(ND_OPT_cache_segments);
            nd_store_relaxed(&k->count_max, m + 1);
        }
        k->dropped_mapped--;
    }
    if (raised)
        nd_gauge_add(purge_bounds_raised, 1);
}

/* Under the node lock, at each sweep: a raised bound whose cache stayed
   under half of it since the last sweep comes down (config.h:
   nd_bound_aged). */
static void nd_node_bounds_age(nd_kind_state *k)
{
    nd_store_relaxed(&k->dirty_max, nd_bound_aged(k->dirty_max, ND_CACHE_DIRTY_MAX, k->dirty_high));
    nd_store_relaxed(&k->count_max, nd_bound_aged(k->count_max, (size_t)nd_opt(ND_OPT_cache_segments), k->count_high));
    k->dirty_high = k->cache_dirty;
    k->count_high = k->cache.count;
}

static void nd_node_cache_take(nd_kind_state *k, nd_segment *s)
{
    nd_list_remove(&k->cache, s);
    nd_sub_relaxed(&k->cache_hint, 1);
    if (nd_node_seg_is_dirty(s)) {
        k->cache_dirty--;
        nd_sub_relaxed(&k->dirty_hint, 1);
    }
}

static nd_kind_state *nd_node_kind(int node, bool bound) { return &nd_nodes[node].kinds[bound ? 1 : 0]; }

static nd_hot void nd_node_demand_note(uint64_t now)
{
    size_t active = nd_gauge_active_now();
    uint64_t since = nd_load_relaxed(&nd_demand.since);
    long delay = nd_opt(ND_OPT_purge_delay);
    uint64_t window = (uint64_t)(delay > 0 ? delay : 1) * ND_DEMAND_DELAYS;
    if (now >= since + window && nd_cas_strong_acq_rel(&nd_demand.since, &since, now)) {
        /* A window that saw no sample at all counts as one of no demand. */
        size_t last = now >= since + 2 * window ? 0 : nd_load_relaxed(&nd_demand.peak[0]);
        nd_store_relaxed(&nd_demand.peak[1], last);
        nd_store_relaxed(&nd_demand.peak[0], active);
        return;
    }
    size_t old = nd_load_relaxed(&nd_demand.peak[0]);
    while (active > old && !nd_cas_weak_acq_rel(&nd_demand.peak[0], &old, active))
        ;
}

static size_t nd_node_headroom(uint64_t now)
{
    nd_node_demand_note(now);
    size_t p0 = nd_load_relaxed(&nd_demand.peak[0]), p1 = nd_load_relaxed(&nd_demand.peak[1]);
    size_t peak = p0 > p1 ? p0 : p1;
    size_t active = nd_gauge_active_now();
    return peak > active ? peak - active : 0;
}

/* Called before each fresh mapping, while one may still fit. */
nd_hot void nd_node_reserve_note(int node)
{
    nd_lock_may_take(ND_LOCK_ID_node);
    nd_node_state *ns = &nd_nodes[node];
    if (nd_load_acquire(&ns->reserve) != NULL || !nd_os_space_limited())
        return;
    int saved = errno;
    nd_segment *s = nd_seg_map(node, false, ND_NODE_RESERVE_SIZE);
    errno = saved;
    if (s == NULL)
        return;
    nd_lock(nd_node_lock(ns));
    bool kept = ns->reserve == NULL;
    if (kept)
        nd_store_release(&ns->reserve, s);
    nd_unlock(nd_node_lock(ns));
    if (!kept)
        nd_seg_unmap(s);   /* another thread's came first */
}

nd_segment *nd_node_reserve_take(int node)
{
    nd_lock_may_take(ND_LOCK_ID_node);
    nd_node_state *ns = &nd_nodes[node];
    if (nd_load_acquire(&ns->reserve) == NULL)
        return NULL;
    nd_segment *s = NULL;
    nd_lock(nd_node_lock(ns));
    if (!ns->reserve_taken) {
        s = ns->reserve;
        ns->reserve_taken = true;
    }
    nd_unlock(nd_node_lock(ns));
    if (s != NULL) {
        s->purge_mask = s->purge_young = 0;
        nd_seg_format(s, ND_SEG_SMALL);
    }
    return s;
}

nd_hot bool nd_node_reserve_is(const nd_segment *s)
{
    return s == nd_load_acquire(&nd_nodes[s->node].reserve);
}

/* The dirty cached segment of k (under its node's lock) whose resident
   chunks past the header hold a run of `run`, among the first
   ND_NODE_RESIDENT_LOOK dirty ones (dirty ones come first); NULL if none. */
#define ND_NODE_RESIDENT_LOOK 8
static nd_segment *nd_node_cached_with_run(nd_kind_state *k, unsigned run)
{
    unsigned n = 0;
    for (nd_segment *s = k->cache.first; s != NULL && nd_node_seg_is_dirty(s) && n < ND_NODE_RESIDENT_LOOK;
         s = s->next, n++)
        if (nd_mask_runs(s->committed & ~(uint64_t)1, run) != 0)
            return s;
    return NULL;
}

/* nd_node_seg_get; run > 0: only a cached segment whose resident chunks
   hold a run of `run` chunks past the header (nd_node_seg_get_resident),
   else NULL, nothing mapped. */
static nd_hot nd_noinline nd_segment *nd_node_seg_get_from(int node, bool bound, int kind, unsigned run)
{
    nd_node_demand_note(nd_os_now_ms());
    nd_lock_may_take(ND_LOCK_ID_node);
    nd_node_state *ns = &nd_nodes[node];
    nd_kind_state *k = nd_node_kind(node, bound);
    nd_segment *s = NULL;
    if (run != 0) {   /* (nd_node_seg_get_resident: the cache held a dirty one a moment ago) */
        nd_lock(nd_node_lock(ns));
        s = nd_node_cached_with_run(k, run);
        if (s != NULL)
            nd_node_cache_take(k, s);
        nd_unlock(nd_node_lock(ns));
        if (s == NULL)
            return NULL;
    } else if (nd_load_relaxed(&k->cache_hint) != 0 || nd_load_relaxed(&k->dropped_at) != 0) {
        uint64_t now = nd_os_now_ms();
        nd_lock(nd_node_lock(ns));
        s = k->cache.first;
        if (s != NULL)
            nd_node_cache_take(k, s);
        if (s == NULL || !nd_node_seg_is_dirty(s))
            nd_node_cache_missed(k, now, s != NULL);
        nd_unlock(nd_node_lock(ns));
    }
    bool cached = s != NULL;
    if (cached) {
        if (nd_node_seg_is_dirty(s))
            nd_gauge_add(segments_reused_dirty, 1);
        else
            nd_gauge_add(segments_reused_clean, 1);
    }
    if (s == NULL) {
        nd_node_reserve_note(node);
        s = nd_seg_map(node, bound, ND_SEG_SIZE);
        if (s == NULL && errno == ENOMEM) {
            /* Out of address space (or memory): give back every cached
               segment and huge mapping, and try once more. */
            nd_node_release_cached();
            s = nd_seg_map(node, bound, ND_SEG_SIZE);
        }
        /* Still none: a short segment, the largest that maps, down to
           one page of the kind (small: 64 KiB, the header and a page of
           48 KiB). Under an address-space limit (RLIMIT_AS) the last
           megabyte left still serves small and medium blocks, and a thread
           that starts then gets its first page. */
        size_t least = kind == ND_SEG_SMALL ? ND_SMALL_PAGE_SIZE : ND_MEDIUM_PAGE_SIZE;
        for (size_t size = ND_SEG_SIZE / 2; s == NULL && kind != ND_SEG_LARGE && size >= least; size /= 2)
            s = nd_seg_map(node, bound, size);
        if (s == NULL)
            return NULL;
    }
    /* A cached segment's resident memory keeps its deadline: the chunks
       the taker does not use again are due when the cache would have
       purged them (node.h), not resident for as long as the segment has
       a page or a block in use. */
    s->purge_mask = cached ? s->committed & ~(uint64_t)1 : 0;   /* chunk 0: the header's */
    s->purge_young = 0;
    if (cached)
        s->purge_at = s->cached_at + (uint64_t)nd_opt(ND_OPT_purge_delay);
    nd_seg_format(s, kind);
    return s;
}

nd_hot nd_segment *nd_node_seg_get(int node, bool bound, int kind)
{
    return nd_node_seg_get_from(node, bound, kind, 0);
}

nd_hot bool nd_node_has_dirty(int node, bool bound)
{
    return nd_load_relaxed(&nd_node_kind(node, bound)->dirty_hint) != 0;
}

nd_sample_path nd_segment *nd_node_seg_get_resident(int node, bool bound, unsigned run)
{
    if (!nd_node_has_dirty(node, bound))
        return NULL;   /* (no clock read, no lock) */
    return nd_node_seg_get_from(node, bound, ND_SEG_LARGE, run);
}

nd_hot void nd_node_seg_put(nd_segment *s)
{
    nd_lock_may_take(ND_LOCK_ID_node);
    nd_assert(s->used_pages == 0 && !s->abandoned);
    int node = s->node;
    nd_node_state *ns = &nd_nodes[node];
    nd_kind_state *k = nd_node_kind(node, s->bound);
    uint64_t now = nd_os_now_ms();
    s->owner = NULL;
    s->kind = ND_SEG_FREE;
    s->cached_at = now;
    s->purge_mask = s->purge_young = 0;
    if (s->size < ND_SEG_SIZE || (s->unmapped | s->tails) != 0) {   /* short: a stopgap; with holes: (segment.h); never cached */
        nd_seg_unmap(s);
        return;
    }

    bool dirty = nd_node_seg_is_dirty(s);
    bool keep_dirty = dirty && nd_opt(ND_OPT_purge_delay) > 0 &&
                      nd_load_relaxed(&k->dirty_hint) < nd_node_dirty_max(k);
    nd_gauge_add(segments_cached, 1);
    if (!keep_dirty && dirty) {
        nd_seg_purge(s, s->committed);
        nd_gauge_add(segments_cache_purged, 1);
    }

    nd_segment *victim = NULL;
    nd_lock(nd_node_lock(ns));
    if (dirty && !keep_dirty && nd_opt(ND_OPT_purge_delay) > 0) {
        k->dropped_dirty++;
        nd_store_relaxed(&k->dropped_at, now);
    }
    nd_node_cache_add(k, s, nd_node_seg_is_dirty(s));   /* dirty ones first */
    if (k->cache.count > nd_node_count_max(k)) {
        victim = k->cache.last;
        nd_node_cache_take(k, victim);
        if (nd_opt(ND_OPT_purge_delay) > 0) {
            k->dropped_mapped++;
            nd_store_relaxed(&k->dropped_at, now);
        }
    }
    nd_unlock(nd_node_lock(ns));
    if (victim != NULL)
        nd_seg_unmap(victim);
    nd_assert2(nd_node_is_valid(node));
}

nd_hot void nd_node_abandon(nd_segment *s)
{
    nd_lock_may_take(ND_LOCK_ID_node);
    nd_node_state *ns = &nd_nodes[s->node];
    nd_kind_state *k = nd_node_kind(s->node, s->bound);
    nd_lock(nd_node_lock(ns));
    s->owner = NULL;
    nd_store_release(&s->abandoned, 1);
    nd_list_push_front(&k->abandoned, s);
    nd_add_relaxed(&k->abandoned_hint, 1);
    int node = s->node;   /* s may be adopted (and released) once unlocked */
    nd_unlock(nd_node_lock(ns));
    nd_assert2(nd_node_is_valid(node));
}

nd_hot size_t nd_node_abandoned_count(int node, bool bound)
{
    return nd_load_relaxed(&nd_node_kind(node, bound)->abandoned_hint);
}

nd_hot nd_segment *nd_node_abandoned_pop(int node, bool bound)
{
    nd_lock_may_take(ND_LOCK_ID_node);
    nd_node_state *ns = &nd_nodes[node];
    nd_kind_state *k = nd_node_kind(node, bound);
    if (nd_load_relaxed(&k->abandoned_hint) == 0)
        return NULL;
    nd_lock(nd_node_lock(ns));
    nd_segment *s = k->abandoned.first;
    if (s != NULL) {
        nd_list_remove(&k->abandoned, s);
        nd_sub_relaxed(&k->abandoned_hint, 1);
        nd_store_relaxed(&s->abandoned, 0);
    }
    nd_unlock(nd_node_lock(ns));
    return s;
}

nd_hot bool nd_node_abandoned_claim(nd_segment *s)
{
    nd_node_state *ns = &nd_nodes[s->node];
    nd_kind_state *k = nd_node_kind(s->node, s->bound);
    if (!nd_trylock(nd_node_lock(ns)))
        return false;
    bool claimed = false;
    if (nd_load_relaxed(&s->abandoned)) {
        nd_list_remove(&k->abandoned, s);
        nd_sub_relaxed(&k->abandoned_hint, 1);
        nd_store_relaxed(&s->abandoned, 0);
        claimed = true;
    }
    nd_unlock(nd_node_lock(ns));
    return claimed;
}

/* ---- freed huge mappings ------------------------------------------------ */

/* Takes cached mapping s out of kind k's huge cache (the node's lock held). */
static void nd_node_huge_unlink(nd_kind_state *k, nd_segment *s)
{
    nd_list_remove(&k->huge, s);
    k->huge_bytes -= s->size;
    nd_sub_relaxed(&k->huge_hint, 1);
    nd_gauge_sub(huge_cached_bytes, s->size);
}

nd_hot nd_segment *nd_node_huge_take(int node, bool bound, size_t need, size_t most)
{
    nd_lock_may_take(ND_LOCK_ID_node);
    nd_node_state *ns = &nd_nodes[node];
    nd_kind_state *k = nd_node_kind(node, bound);
    uint64_t now = nd_os_now_ms();
    nd_store_relaxed(&k->huge_asked_at, now);
    if (nd_load_relaxed(&k->huge_hint) == 0)
        return NULL;
    nd_node_demand_note(now);
    nd_lock(nd_node_lock(ns));
    /* The smallest of size need..most; when need is 0, the largest. */
    nd_segment *best = NULL;
    for (nd_segment *s = k->huge.first; s != NULL; s = s->next)
        if (s->size >= need && s->size <= most &&
            (best == NULL || (need == 0 ? s->size > best->size : s->size < best->size)))
            best = s;
    if (best != NULL)
        nd_node_huge_unlink(k, best);
    nd_unlock(nd_node_lock(ns));
    return best;
}

/* nd_node_seg_get_large's look in the huge cache (the first fit of 4 MiB
   that was a segment), out of the samples' path. */
static nd_noinline nd_segment *nd_node_seg_from_huge(int node, bool bound)
{
    nd_node_state *ns = &nd_nodes[node];
    nd_kind_state *k = nd_node_kind(node, bound);
    nd_segment *s;
    nd_lock(nd_node_lock(ns));
    for (s = k->huge.first; s != NULL; s = s->next)
        if (s->size == ND_SEG_SIZE && s->formatted && (s->seams[0] | s->seams[1]) == 0)
            break;
    if (s != NULL)
        nd_node_huge_unlink(k, s);
    nd_unlock(nd_node_lock(ns));
    if (s == NULL)
        return nd_node_seg_get(node, bound, ND_SEG_LARGE);
    /* As nd_node_seg_get gives a cached segment: its committed chunks
       those that may hold memory (segment.h: a huge mapping's committed;
       the huge cache counted it whole, the others are counted no more),
       due when the huge cache would have given it back. */
    nd_gauge_sub(committed, (size_t)(64 - nd_popcount64(s->committed)) << ND_CHUNK_SHIFT);
    s->purge_mask = s->committed & ~(uint64_t)1;
    s->purge_young = 0;
    s->purge_at = s->cached_at + (uint64_t)nd_opt(ND_OPT_purge_delay);
    s->next = s->prev = NULL;
    nd_gauge_add(segments_from_huge, 1);
    nd_seg_format(s, ND_SEG_LARGE);
    return s;
}

nd_sample_path nd_segment *nd_node_seg_get_large(int node, bool bound)
{
    nd_lock_may_take(ND_LOCK_ID_node);
    nd_kind_state *k = nd_node_kind(node, bound);
    if (nd_load_relaxed(&k->cache_hint) != 0 || nd_load_relaxed(&k->huge_hint) == 0 || nd_seg_guard != 0)
        return nd_node_seg_get(node, bound, ND_SEG_LARGE);
    return nd_node_seg_from_huge(node, bound);
}

nd_segment *nd_node_huge_take_at(int node, bool bound, const void *at, size_t need, size_t most)
{
    nd_lock_may_take(ND_LOCK_ID_node);
    nd_node_state *ns = &nd_nodes[node];
    nd_kind_state *k = nd_node_kind(node, bound);
    if (nd_load_relaxed(&k->huge_hint) == 0)
        return NULL;
    nd_lock(nd_node_lock(ns));
    nd_segment *s;
    for (s = k->huge.first; s != NULL; s = s->next)
        if ((const void *)s == at)
            break;
    if (s != NULL && (s->size < need || s->size > most))
        s = NULL;
    if (s != NULL)
        nd_node_huge_unlink(k, s);
    nd_unlock(nd_node_lock(ns));
    return s;
}

nd_hot bool nd_node_huge_keep(nd_segment *s)
{
    nd_lock_may_take(ND_LOCK_ID_node);
    if (nd_opt(ND_OPT_purge_delay) <= 0 || s->interleaved || s->size > ND_HUGE_CACHE_BYTES / 2)
        return false;
    nd_node_state *ns = &nd_nodes[s->node];
    nd_kind_state *k = nd_node_kind(s->node, s->bound);
    nd_segment *victims[ND_HUGE_CACHE_COUNT + 1];
    size_t nv = 0;
    s->kind = ND_SEG_FREE;
    s->cached_at = nd_os_now_ms();
    nd_node_demand_note(s->cached_at);
    nd_lock(nd_node_lock(ns));
    nd_list_push_front(&k->huge, s);
    k->huge_bytes += s->size;
    nd_add_relaxed(&k->huge_hint, 1);
    nd_gauge_add(huge_cached_bytes, s->size);
    while ((k->huge.count > ND_HUGE_CACHE_COUNT || k->huge_bytes > ND_HUGE_CACHE_BYTES) && nv < ND_HUGE_CACHE_COUNT) {
        nd_segment *v = k->huge.last;   /* the oldest */
        nd_node_huge_unlink(k, v);
        victims[nv++] = v;
    }
    nd_unlock(nd_node_lock(ns));
    for (size_t i = 0; i < nv; i++)
        nd_seg_unmap_huge(victims[i]);
    return true;
}

/* Unmaps the freed huge mappings of one (node, kind) whose delay is over. */
static void nd_node_sweep_huge(int node, bool bound, uint64_t now, bool force)
{
    nd_node_state *ns = &nd_nodes[node];
    nd_kind_state *k = nd_node_kind(node, bound);
    if (nd_load_relaxed(&k->huge_hint) == 0)
        return;
    uint64_t delay = (uint64_t)nd_opt(ND_OPT_purge_delay);
    /* While huge blocks of this kind are asked for, the cache keeps what
       it holds (within its bounds); once they have not been for a demand
       window, what exceeds the process's headroom goes (demand, above). */
    bool asked = nd_load_relaxed(&k->huge_asked_at) + delay * ND_DEMAND_DELAYS > now;
    size_t keep = force ? 0 : asked ? SIZE_MAX : nd_node_headroom(now);
    for (;;) {
        nd_segment *v = NULL;
        nd_lock(nd_node_lock(ns));
        nd_segment *old = k->huge.last;
        if (old != NULL && k->huge_bytes > keep && (force || old->cached_at + delay <= now)) {
            v = old;
            nd_node_huge_unlink(k, v);
        }
        nd_unlock(nd_node_lock(ns));
        if (v == NULL)
            return;
        nd_seg_unmap_huge(v);
    }
}

void nd_node_release_cached(void)
{
    nd_lock_may_take(ND_LOCK_ID_node);
    for (int i = 0; i < nd_topo.mem_count; i++) {
        int node = nd_topo.mem_ids[i];
        for (int b = 0; b < 2; b++) {
            nd_node_sweep_huge(node, b, 0, true);
            nd_node_state *ns = &nd_nodes[node];
            nd_kind_state *k = nd_node_kind(node, b);
            for (;;) {
                nd_lock(nd_node_lock(ns));
                nd_segment *v = k->cache.last;
                if (v != NULL)
                    nd_node_cache_take(k, v);
                nd_unlock(nd_node_lock(ns));
                if (v == NULL)
                    break;
                nd_seg_unmap(v);
            }
        }
    }
}

static bool nd_node_sweep_round(nd_node_state *ns, nd_kind_state *k, uint64_t now, bool force, bool whole);

/* Purges the dirty cached segments of one (node, kind) whose delay is over
   (all of them if force): their committed chunks, or (whole) everything
   but their headers, also what the kernel faulted in around those chunks
   as transparent huge pages (segment.h: nd_seg_purge_free). */
static nd_hot void nd_node_sweep(int node, bool bound, uint64_t now, bool force, bool whole)
{
    nd_node_state *ns = &nd_nodes[node];
    nd_kind_state *k = nd_node_kind(node, bound);
    if ((nd_load_relaxed(&k->dirty_max) | nd_load_relaxed(&k->count_max)) != 0) {
        nd_lock(nd_node_lock(ns));
        nd_node_bounds_age(k);
        nd_unlock(nd_node_lock(ns));
    }
    /* A raised bound holds more dirty segments than a round takes. */
    while (nd_load_relaxed(&k->dirty_hint) != 0 && nd_node_sweep_round(ns, k, now, force, whole))
        ;
}

/* One round of nd_node_sweep: up to MAXV due segments purged; true when
   it found MAXV (there may be more). */
static nd_hot bool nd_node_sweep_round(nd_node_state *ns, nd_kind_state *k, uint64_t now, bool force, bool whole)
{
    enum { MAXV = ND_CACHE_DIRTY_MAX + 2 };
    nd_segment *v[MAXV];
    size_t nv = 0;
    uint64_t delay = (uint64_t)nd_opt(ND_OPT_purge_delay);
    nd_lock(nd_node_lock(ns));
    for (nd_segment *s = k->cache.first; s != NULL && nv < MAXV;) {
        nd_segment *next = s->next;
        if (!nd_node_seg_is_dirty(s))
            break;
        if (force || s->cached_at + delay <= now) {
            nd_node_cache_take(k, s);
            v[nv++] = s;
        }
        s = next;
    }
    nd_unlock(nd_node_lock(ns));
    if (nv == 0)
        return false;
    nd_gauge_add(segments_cache_purged, nv);
    /* Off the cache, so no one else sees them: purged in one batch (os.h),
       flushed before they go back. */
    nd_os_purges batch;
    nd_os_purges_init(&batch);
    for (size_t i = 0; i < nv; i++)
        if (whole)
            nd_seg_purge_free_into(v[i], true, &batch);
        else
            nd_seg_purge_into(v[i], v[i]->committed, &batch);
    nd_os_purges_flush(&batch);
    nd_lock(nd_node_lock(ns));
    for (size_t i = 0; i < nv; i++)
        nd_node_cache_add(k, v[i], false);   /* clean now: to the back */
    nd_unlock(nd_node_lock(ns));
    return nv == MAXV;
}

void nd_node_purge_cached(int node, bool bound)
{
    nd_node_sweep(node, bound, 0, true, true);
}

nd_hot void nd_node_maintain(int mode)
{
    nd_lock_may_take(ND_LOCK_ID_node);
    uint64_t now = nd_os_now_ms();
    uint64_t due = nd_load_relaxed(&nd_node_next_maintain);
    bool force = mode == ND_SWEEP_ALL;
    if (mode == ND_SWEEP_PERIODIC) {
        if (now < due)
            return;
        uint64_t next = now + (uint64_t)(nd_opt(ND_OPT_purge_delay) > 0 ? nd_opt(ND_OPT_purge_delay) : 1);
        if (!nd_cas_strong_acq_rel(&nd_node_next_maintain, &due, next))
            return;   /* another thread sweeps */
    }
    for (int i = 0; i < nd_topo.mem_count; i++) {
        int node = nd_topo.mem_ids[i];
        nd_node_sweep(node, false, now, force, false);
        nd_node_sweep(node, true, now, force, false);
        nd_node_sweep_huge(node, false, now, force);
        nd_node_sweep_huge(node, true, now, force);
        nd_assert2(nd_node_is_valid(node));
    }
}

void nd_node_counts_get(int node, bool bound, nd_node_counts *c)
{
    nd_lock_may_take(ND_LOCK_ID_node);
    nd_node_state *ns = &nd_nodes[node];
    nd_kind_state *k = nd_node_kind(node, bound);
    nd_lock(nd_node_lock(ns));
    c->cached = k->cache.count;
    c->cached_committed = 0;
    for (nd_segment *s = k->cache.first; s; s = s->next)
        c->cached_committed += (size_t)nd_popcount64(s->committed) << ND_CHUNK_SHIFT;
    c->abandoned = k->abandoned.count;
    nd_unlock(nd_node_lock(ns));
}

bool nd_node_is_valid(int node)
{
    nd_node_state *ns = &nd_nodes[node];
    bool ok = true;
    nd_lock(nd_node_lock(ns));
    for (int b = 0; b < 2 && ok; b++) {
        nd_kind_state *k = &ns->kinds[b];
        size_t n = 0, dirty = 0;
        bool clean_seen = false;
        for (nd_segment *s = k->cache.first; s != NULL && ok; s = s->next, n++) {
            bool d = nd_node_seg_is_dirty(s);
            ok = s->kind == ND_SEG_FREE && s->owner == NULL && !s->abandoned && s->node == node &&
                 s->bound == b && !(d && clean_seen) && nd_seg_is_valid(s);
            clean_seen |= !d;
            dirty += d;
        }
        ok = ok && n == k->cache.count && dirty == k->cache_dirty &&
             nd_load_relaxed(&k->cache_hint) == n && nd_load_relaxed(&k->dirty_hint) == dirty;
        size_t dmax = nd_load_relaxed(&k->dirty_max), cmax = nd_load_relaxed(&k->count_max);
        ok = ok && (dmax == 0 || (dmax > ND_CACHE_DIRTY_MAX && dmax <= ND_CACHE_DIRTY_TOP)) &&
             (cmax == 0 || (cmax > (size_t)nd_opt(ND_OPT_cache_segments) && cmax <= ND_CACHE_COUNT_TOP)) &&
             k->dirty_high >= dirty && k->count_high >= n;
        n = 0;
        for (nd_segment *s = k->abandoned.first; s != NULL && ok; s = s->next, n++)
            ok = s->abandoned && s->owner == NULL && s->node == node && s->bound == b;
        ok = ok && n == k->abandoned.count && nd_load_relaxed(&k->abandoned_hint) == n;
        size_t bytes = 0;
        n = 0;
        for (nd_segment *s = k->huge.first; s != NULL && ok; s = s->next, n++) {
            ok = s->kind == ND_SEG_FREE && !s->interleaved && s->node == node && s->bound == b &&
                 nd_seg_cookie_ok(s);
            bytes += s->size;
        }
        ok = ok && n == k->huge.count && bytes == k->huge_bytes && bytes <= ND_HUGE_CACHE_BYTES &&
             n <= ND_HUGE_CACHE_COUNT && nd_load_relaxed(&k->huge_hint) == n;
    }
    nd_segment *r = ns->reserve;
    if (ok && r != NULL)
        ok = nd_seg_cookie_ok(r) && !r->bound && r->node == node && r->size == ND_NODE_RESERVE_SIZE &&
             (ns->reserve_taken ? r->kind == ND_SEG_SMALL
                                : r->kind == ND_SEG_FREE && r->owner == NULL && r->used_pages == 0);
    nd_unlock(nd_node_lock(ns));
    return ok;
}
