/*
 * heap.c - per-thread heaps (see heap.h): creation, thread start and exit,
 * abandoning and adopting segments, the locked shared heaps, maintenance
 * (purging, cache garbage collection) and the allocation slow path
 * dispatcher.
 *
 * Locks: nd_heaps_lock_ (list of live threads) -> nd_shared_lock (creation of
 * shared heaps) -> a shared heap's lock -> node locks -> meta lock.
 */
#include "heap.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include "meta.h"
#include "node.h"
#include "options.h"
#include "page.h"
#include "topo.h"

/* ---- size classes ------------------------------------------------------- */

const uint32_t nd_class_size[ND_CLASS_COUNT] = {
    16, 32, 48, 64, 80, 96, 112, 128,
    160, 192, 224, 256, 320, 384, 448, 512, 640, 768, 896, 1024,
    1280, 1536, 1792, 2048, 2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192,
    10240, 12288, 14336, 16384, 20480, 24576, 28672, 32768,
    40960, 49152, 57344, 65536, 81920, 98304, 114688, 131072,
};

/* Class of sizes (i-1)*16+1 .. i*16 (index 0: size 0). */
const uint8_t nd_class_lookup[ND_LOOKUP_MAX / ND_QUANTUM + 1] = {
    0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 12, 12,
    13, 13, 13, 13, 14, 14, 14, 14, 15, 15, 15, 15, 16, 16, 16, 16, 16, 16,
    16, 16, 17, 17, 17, 17, 17, 17, 17, 17, 18, 18, 18, 18, 18, 18, 18, 18,
    19, 19, 19, 19, 19, 19, 19, 19,
};

_Static_assert(sizeof nd_class_lookup == 65, "one entry per 16 bytes up to 1 KiB");

/* ---- the static heaps and TLS ------------------------------------------ */

static void *nd_empty_slot[1];   /* the NULL sentinel of every bin without slots */

#define ND_EMPTY_BIN { .cur = nd_empty_slot, .empty = nd_empty_slot, .low = nd_empty_slot }

nd_heap nd_heap_empty = {
    .bins = { [0 ... ND_CLASS_COUNT - 1] = ND_EMPTY_BIN },
    .node_heaps = { [0 ... ND_MAX_NODES - 1] = &nd_heap_empty },
    .kind = ND_HEAP_EMPTY,
};

nd_heap nd_heap_dead = {
    .bins = { [0 ... ND_CLASS_COUNT - 1] = ND_EMPTY_BIN },
    .node_heaps = { [0 ... ND_MAX_NODES - 1] = &nd_heap_dead },
    .kind = ND_HEAP_DEAD,
};

__thread nd_heap *nd_tls_heap = &nd_heap_empty;
__thread uintptr_t nd_tls_tid;

static uintptr_t nd_next_tid = 4 * ND_TID_STEP;   /* below: reserved (shared heaps) */
static pthread_key_t nd_thread_key;

static nd_lock_t nd_heaps_lock_ = ND_LOCK_INIT;
static nd_heap  *nd_heaps_head;

#define ND_GC_EVENTS 256
#define ND_GC_MIN_SAMPLES 8

/* Totals of exited threads (under nd_heaps_lock_). */
static nd_cls_totals nd_dead_totals[ND_CLASS_COUNT];
static nd_heap_stats nd_dead_hstats;
/* Remote frees by threads without a heap (atomic). */
static uint64_t     nd_anon_remote[ND_CLASS_COUNT];

/* ---- creation ------------------------------------------------------------ */

static uint32_t nd_bin_capacity(unsigned cls, uint8_t kind)
{
    size_t size = nd_class_size[cls];
    if (kind == ND_HEAP_SHARED || nd_opt(ND_OPT_check) >= 2 || size > (size_t)nd_opt(ND_OPT_tcache_max))
        return 0;
    size_t cap = (size_t)nd_opt(ND_OPT_tcache_bytes) / size;
    if (cap > (size_t)nd_opt(ND_OPT_tcache_count))
        cap = (size_t)nd_opt(ND_OPT_tcache_count);
    if (cap == 0 && nd_opt(ND_OPT_tcache_count) > 0)
        cap = 1;
    return (uint32_t)cap;
}

static nd_heap *nd_heap_create(nd_heap *plain, int node, bool bound, uint8_t kind)
{
    uint32_t caps[ND_CLASS_COUNT];
    size_t slots = 0;
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        caps[c] = nd_bin_capacity(c, kind);
        slots += caps[c] + 1;
    }
    nd_heap *h = nd_meta_alloc(sizeof(nd_heap) + slots * sizeof(void *));
    if (h == NULL)
        return NULL;
    void **slot = (void **)(h + 1);
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        nd_bin *b = &h->bins[c];
        uint32_t start = caps[c] / 4 ? caps[c] / 4 : caps[c];
        b->empty = slot + caps[c];
        b->low = b->empty - start;
        *b->empty = NULL;
        b->cur = b->empty;
        b->tick = ND_TICK_PERIOD;
        h->binfo[c].cap = start;
        h->binfo[c].cap_max = caps[c];
        h->binfo[c].low_water = ND_NO_SAMPLE;
        slot += caps[c] + 1;
    }
    h->slot_bytes = (uint32_t)(slots * sizeof(void *));
    for (int n = 0; n < ND_MAX_NODES; n++)
        h->node_heaps[n] = &nd_heap_empty;
    h->tid = kind == ND_HEAP_SHARED ? ND_TID_SHARED : nd_tls_tid;
    h->kind = kind;
    h->bound = bound;
    h->node = (int16_t)node;
    h->plain = plain != NULL ? plain : h;
    if (kind == ND_HEAP_SHARED)
        nd_lock_init(&h->lock);
    h->gc_countdown = ND_GC_EVENTS;
    h->clock_ms = nd_os_now_ms();
    h->maintain_at = h->clock_ms + (uint64_t)nd_opt(ND_OPT_purge_delay);
    return h;
}

static size_t nd_heap_bytes(const nd_heap *h) { return sizeof(nd_heap) + h->slot_bytes; }

/* ---- threads ------------------------------------------------------------- */

static __thread uint8_t nd_tls_starting;

void nd_heap_process_init(void)
{
    pthread_key_create(&nd_thread_key, nd_thread_done);
}

nd_heap *nd_thread_heap(void)
{
    nd_heap *h = nd_tls_heap;
    if (nd_likely(h->kind == ND_HEAP_NORMAL))
        return h;
    if (h->kind == ND_HEAP_DEAD || nd_tls_starting)
        return NULL;
    nd_tls_starting = 1;
    if (nd_tls_tid == 0)
        nd_tls_tid = nd_fetch_add_relaxed(&nd_next_tid, ND_TID_STEP);
    int node = nd_topo_local_mem_node(nd_topo_current_node());
    h = nd_heap_create(NULL, node, false, ND_HEAP_NORMAL);
    if (h == NULL) {
        nd_tls_starting = 0;
        return NULL;
    }
    nd_lock(&nd_heaps_lock_);
    h->next = nd_heaps_head;
    if (nd_heaps_head)
        nd_heaps_head->prev = h;
    nd_heaps_head = h;
    nd_unlock(&nd_heaps_lock_);
    nd_tls_heap = h;
    /* May allocate (for high key numbers): h is already in place. */
    pthread_setspecific(nd_thread_key, h);
    nd_tls_starting = 0;
    return h;
}

nd_heap *nd_heap_for_node(nd_heap *plain, int node)
{
    if (!nd_topo_node_has_memory(node)) {
        errno = EINVAL;
        return NULL;
    }
    nd_heap *h = plain->node_heaps[node];
    if (h != &nd_heap_empty)
        return h;
    h = nd_heap_create(plain, node, true, ND_HEAP_NORMAL);
    if (h == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    plain->node_heaps[node] = h;
    return h;
}

nd_heap *nd_heap_of_kind(nd_segment *s)
{
    nd_heap *plain = nd_tls_heap;
    if (plain->kind != ND_HEAP_NORMAL)
        return NULL;
    if (!s->bound)
        return plain;
    return nd_heap_for_node(plain, s->node);   /* created if this thread has none yet */
}

/* The calling thread's heaps: its plain heap, then its node heaps. */
static int nd_thread_heaps(nd_heap *plain, nd_heap **out)
{
    int n = 0;
    out[n++] = plain;
    for (int i = 0; i < nd_topo.mem_count; i++) {
        nd_heap *nh = plain->node_heaps[nd_topo.mem_ids[i]];
        if (nh->kind == ND_HEAP_NORMAL)
            out[n++] = nh;
    }
    return n;
}

static void nd_heap_flush_caches(nd_heap *h)
{
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++)
        nd_bin_flush(h, c, h->binfo[c].cap);
}

/* Takes remote frees back and retires every page left with no block out. */
static void nd_heap_retire_empty_pages(nd_heap *h)
{
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        nd_page *pg = h->pages[c].first;
        while (pg) {
            nd_page *next = pg->next;
            nd_page_collect(pg);
            if (pg->used == 0)
                nd_page_retire(h, pg);
            pg = next;
        }
    }
}

/* Gives the segments h keeps for reuse (its spares and free large
   segments) back to their node: all of them, or those unused for the delay. */
static void nd_heap_release_kept(nd_heap *h, uint64_t now, bool all)
{
    uint64_t delay = (uint64_t)nd_opt(ND_OPT_purge_delay);
    for (int k = 0; k < 2; k++) {
        nd_segment *s = h->spare[k];
        if (s != NULL && (all || (now >= h->spare_since[k] + delay &&
                                  h->epoch >= s->purge_epoch + ND_PURGE_MIN_EPOCHS))) {
            nd_seglist_remove(&h->avail[k], s);
            nd_heap_seg_release(h, s);
        }
    }
    nd_segment **pp = &h->large_cache;
    while (*pp) {
        nd_segment *s = *pp;
        if (all || now >= s->cached_at + delay) {
            *pp = s->next;
            s->next = NULL;
            h->large_cache_count--;
            nd_node_seg_put(s);
        } else {
            pp = &s->next;
        }
    }
}

/* Gives everything h holds back: caches flushed, empty pages retired, the
   rest of its segments abandoned to their node. h can then be recycled. */
static void nd_heap_abandon(nd_heap *h)
{
    nd_heap_flush_caches(h);
    /* No more notifications: disarm full pages, then forget notified ones. */
    for (nd_page *pg = h->full.first; pg; pg = pg->next)
        nd_page_disarm(pg);
    nd_heap_drain_xpages(h);
    while (h->full.first) {
        nd_page *pg = h->full.first;
        nd_pq_remove(&h->full, pg);
        pg->in_full = 0;
        nd_pq_push(&h->pages[pg->cls], pg);
    }
    nd_heap_retire_empty_pages(h);
    nd_heap_release_kept(h, 0, true);
    for (int k = 0; k < 2; k++) {
        nd_segment **lists[2] = { &h->avail[k], &h->used[k] };
        for (int l = 0; l < 2; l++) {
            while (*lists[l]) {
                nd_segment *s = *lists[l];
                nd_seglist_remove(lists[l], s);
                nd_assert(s->used_pages != 0);   /* the spare went back above */
                for (unsigned i = 0; i < s->page_count; i++) {
                    nd_page *pg = &s->pages[i];
                    if (!pg->in_use)
                        continue;
                    nd_store_release(&pg->key, ND_KEY_NONE);
                    nd_store_relaxed(&pg->heap, (nd_heap *)NULL);
                    pg->bin = NULL;
                    pg->next = pg->prev = NULL;
                }
                nd_stat_inc(&h->stats.abandoned_segments);
                nd_node_abandon(s);
            }
        }
    }
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        h->pages[c].first = h->pages[c].last = NULL, h->pages[c].count = 0;
        for (int i = 0; i < ND_HOT_PAGES; i++)
            h->hot[c][i] = NULL;
    }
    h->spare[0] = h->spare[1] = NULL;
}

/* Adds h's counters into t (racy reads of another thread's counters are
   fine: every field is read once, as a whole word). */
__attribute__((no_sanitize("thread")))
static void nd_sum_heap(const nd_heap *h, nd_cls_totals *t, nd_heap_stats *hs)
{
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        const nd_bin *b = &h->bins[c];
        const nd_cls_stats *cs = &h->cstats[c];
        uint64_t requests = nd_load_relaxed(&h->binfo[c].nreq) +
                            (uint64_t)(ND_TICK_PERIOD - nd_load_relaxed(&b->tick));
        uint64_t cached = (uint64_t)(b->empty - nd_load_relaxed(&b->cur));
        uint64_t fill_blocks = nd_load_relaxed(&cs->fill_blocks);
        uint64_t flush_blocks = nd_load_relaxed(&cs->flush_blocks);
        /* Blocks into the cache = fills + owner frees; out = requests +
           flushes; so owner frees into the cache = cached + requests +
           flushes - fills. Classes without a cache count their frees. */
        uint64_t cache_frees = h->binfo[c].cap_max != 0 ? cached + requests + flush_blocks - fill_blocks : 0;
        t[c].requests += requests;
        t[c].frees += cache_frees + nd_load_relaxed(&b->page_frees) + nd_load_relaxed(&cs->slow_frees) +
                      nd_load_relaxed(&cs->remote_frees);
        t[c].fills += nd_load_relaxed(&cs->fills);
        t[c].fill_blocks += fill_blocks + nd_load_relaxed(&cs->direct_allocs);
        t[c].flushes += nd_load_relaxed(&cs->flushes);
        t[c].flush_blocks += flush_blocks;
        t[c].remote_frees += nd_load_relaxed(&cs->remote_frees);
        t[c].cached += cached;
    }
    const uint64_t *src = (const uint64_t *)&h->stats;
    uint64_t *dst = (uint64_t *)hs;
    for (size_t i = 0; i < sizeof(nd_heap_stats) / sizeof(uint64_t); i++)
        dst[i] += nd_load_relaxed(&src[i]);
}

static void nd_heap_merge_dead_locked(const nd_heap *h)
{
    nd_sum_heap(h, nd_dead_totals, &nd_dead_hstats);
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++)
        nd_dead_totals[c].cached = 0;   /* a dead heap caches nothing */
}

void nd_thread_done(void *arg)
{
    nd_heap *h = arg;
    if (h == NULL || h->kind != ND_HEAP_NORMAL || h != nd_tls_heap)
        return;
    /* From here on this thread allocates from the shared heaps. */
    nd_tls_heap = &nd_heap_dead;
    nd_heap *heaps[ND_MAX_NODES + 1];
    int n = nd_thread_heaps(h, heaps);
    for (int i = 0; i < n; i++)
        nd_heap_abandon(heaps[i]);
    nd_lock(&nd_heaps_lock_);
    if (h->prev)
        h->prev->next = h->next;
    else
        nd_heaps_head = h->next;
    if (h->next)
        h->next->prev = h->prev;
    for (int i = 0; i < n; i++)
        nd_heap_merge_dead_locked(heaps[i]);
    nd_unlock(&nd_heaps_lock_);
    nd_tls_tid = 0;
    for (int i = 0; i < n; i++)
        nd_meta_free(heaps[i], nd_heap_bytes(heaps[i]));
}

/* ---- adoption ------------------------------------------------------------- */

bool nd_heap_adopt_segment(nd_heap *h, nd_segment *s)
{
    int k = s->kind == ND_SEG_SMALL ? 0 : 1;
    s->owner = h;
    nd_seglist_push(s->free_mask ? &h->avail[k] : &h->used[k], s);
    /* Hold the segment while its pages are adopted: retiring the last one
       must not release it under our feet. */
    s->used_pages++;
    for (unsigned i = 0; i < s->page_count; i++)
        if (s->pages[i].in_use)
            nd_page_adopt(h, &s->pages[i]);
    s->used_pages--;
    nd_stat_inc(&h->stats.reclaimed_segments);
    if (s->used_pages == 0) {
        nd_seglist_remove(s->free_mask ? &h->avail[k] : &h->used[k], s);
        nd_heap_seg_release(h, s);
        return false;
    }
    return true;
}

bool nd_heap_reclaim(nd_heap *h)
{
    if (h->kind == ND_HEAP_SHARED)
        return false;
    /* Segments whose blocks were all freed since their thread exited give
       themselves back during adoption; keep going until one stays, so that
       such empty segments do not pile up. */
    bool any = false;
    for (int i = 0; i < 16; i++) {
        nd_segment *s = nd_node_abandoned_pop(h->node, h->bound);
        if (s == NULL)
            break;
        any = true;
        if (nd_heap_adopt_segment(h, s))   /* kept: it still holds blocks */
            break;
    }
    return any;
}

/* ---- shared heaps ----------------------------------------------------------- */

static nd_lock_t nd_shared_lock = ND_LOCK_INIT;
static nd_heap  *nd_shared[ND_MAX_NODES][2];

nd_heap *nd_heap_shared(int node, bool bound)
{
    nd_heap *h = nd_load_acquire(&nd_shared[node][bound]);
    if (h != NULL)
        return h;
    nd_lock(&nd_shared_lock);
    h = nd_shared[node][bound];
    if (h == NULL) {
        h = nd_heap_create(NULL, node, bound, ND_HEAP_SHARED);
        if (h != NULL)
            nd_store_release(&nd_shared[node][bound], h);
    }
    nd_unlock(&nd_shared_lock);
    return h;
}

void nd_heap_shared_lock_all(void)
{
    nd_lock(&nd_shared_lock);
    for (int n = 0; n < ND_MAX_NODES; n++)
        for (int b = 0; b < 2; b++)
            if (nd_shared[n][b])
                nd_lock(&nd_shared[n][b]->lock);
}

void nd_heap_shared_unlock_all(void)
{
    for (int n = ND_MAX_NODES - 1; n >= 0; n--)
        for (int b = 1; b >= 0; b--)
            if (nd_shared[n][b])
                nd_unlock(&nd_shared[n][b]->lock);
    nd_unlock(&nd_shared_lock);
}

/* ---- maintenance ---------------------------------------------------------- */

void nd_heap_purge(nd_heap *h, uint64_t now, bool all)
{
    size_t left = 0;
    for (int k = 0; k < 2; k++) {
        nd_segment *lists[2] = { h->avail[k], h->used[k] };
        for (int l = 0; l < 2; l++)
            for (nd_segment *s = lists[l]; s; s = s->next) {
                if (s->purge_mask == 0)
                    continue;
                if (all || (now >= s->purge_at && h->epoch >= s->purge_epoch + ND_PURGE_MIN_EPOCHS))
                    nd_seg_purge(s, s->purge_mask);
                else
                    left += (size_t)nd_popcount64(s->purge_mask) << ND_CHUNK_SHIFT;
            }
    }
    h->purge_pending = left;
}

static void nd_heap_maintain_one(nd_heap *h, uint64_t now, bool force)
{
    if (nd_load_relaxed(&h->xpages) != NULL)
        nd_heap_drain_xpages(h);
    /* Thread-cache GC: the blocks a bin kept all along since the last pass
       (its low-water mark) were not needed; three quarters of them go back.
       A bin never sampled since (no fill, no tick) was idle: all it holds
       counts as unneeded. The pass waits for a few samples, so that low-water
       marks mean something however slowly time passes. */
    bool gc = force || h->gc_samples >= ND_GC_MIN_SAMPLES;
    if (gc)
        h->gc_samples = 0;
    for (unsigned c = 0; gc && c < ND_CLASS_COUNT; c++) {
        nd_bin *b = &h->bins[c];
        size_t count = (size_t)(b->empty - b->cur);
        size_t unneeded = h->binfo[c].low_water == ND_NO_SAMPLE ? count : h->binfo[c].low_water;
        if (unneeded > count)
            unneeded = count;
        if (force)
            unneeded = count;
        if (unneeded != 0)
            nd_bin_flush(h, c, force ? count : unneeded - unneeded / 4);
        /* More than half the capacity unused all along: halve it. */
        nd_bin_info *bi = &h->binfo[c];
        if (bi->low_water != ND_NO_SAMPLE && bi->low_water > bi->cap / 2 && bi->cap > bi->cap_max / 4) {
            uint32_t cap = bi->cap / 2;
            size_t now_count = (size_t)(b->empty - b->cur);
            if (now_count > cap)
                nd_bin_flush(h, c, now_count - cap);
            bi->cap = cap;
            b->low = b->empty - cap;
        }
        h->binfo[c].low_water = ND_NO_SAMPLE;
    }
    /* Segments left by exited threads: adopt a few, so their free memory
       comes back even if this thread never needs a new page. */
    for (int i = 0; i < 4 && nd_heap_reclaim(h); i++)
        ;
    nd_heap_purge(h, now, force);
    nd_heap_release_kept(h, now, force);
}

void nd_heap_maintain(nd_heap *h, bool force)
{
    uint64_t now = nd_os_now_ms();
    h->clock_ms = now;
    if (!force && now < h->maintain_at)
        return;
    long delay = nd_opt(ND_OPT_purge_delay);
    h->maintain_at = now + (uint64_t)(delay > 0 ? delay : 1);
    nd_heap *heaps[ND_MAX_NODES + 1];
    int n = nd_thread_heaps(h->plain, heaps);
    for (int i = 0; i < n; i++)
        nd_heap_maintain_one(heaps[i], now, force);
    nd_node_maintain(force ? ND_SWEEP_ALL : ND_SWEEP_PERIODIC);
}

/* nodal_collect: everything this thread caches goes back to pages, empty
   pages to their segments, and memory to the OS (all of it when purge_all,
   else what is past its delay). */
void nd_heap_collect(nd_heap *h, bool purge_all)
{
    uint64_t now = nd_os_now_ms();
    nd_heap *heaps[ND_MAX_NODES + 1];
    int n = nd_thread_heaps(h->plain, heaps);
    for (int i = 0; i < n; i++) {
        nd_heap_flush_caches(heaps[i]);
        nd_heap_drain_xpages(heaps[i]);
        nd_heap_retire_empty_pages(heaps[i]);
        nd_heap_maintain_one(heaps[i], now, purge_all);
        nd_heap_release_kept(heaps[i], now, true);
    }
}

/* ---- the allocation slow path -------------------------------------------- */

void nd_heap_tick(nd_heap *h)
{
    h->epoch++;
    if (nd_unlikely(--h->gc_countdown == 0)) {
        h->gc_countdown = ND_GC_EVENTS;
        if (h->kind == ND_HEAP_NORMAL)
            nd_heap_maintain(h, false);
    }
}

/* Counts a request of class c made on the slow path; true when the tick
   rolled over (time for a maintenance check). See heap.h. */
static bool nd_bin_count_request(nd_heap *h, unsigned c)
{
    nd_bin *b = &h->bins[c];
    if (b->tick > 0 && --b->tick > 0)   /* 0: the fast path already counted it */
        return false;
    uint32_t count = (uint32_t)(b->empty - b->cur);
    if (count < h->binfo[c].low_water)
        h->binfo[c].low_water = count;
    h->gc_samples++;
    h->epoch++;
    nd_store_relaxed(&h->binfo[c].nreq, h->binfo[c].nreq + ND_TICK_PERIOD);
    nd_store_relaxed(&b->tick, (int64_t)ND_TICK_PERIOD);
    return true;
}

void *nd_heap_malloc(nd_heap *h, size_t size)
{
    nd_heap_tick(h);
    if (size <= ND_MEDIUM_MAX) {
        unsigned c = nd_class_of(size);
        nd_bin *b = &h->bins[c];
        if (nd_bin_count_request(h, c) && h->kind == ND_HEAP_NORMAL)
            nd_heap_maintain(h, false);
        if (h->binfo[c].cap_max == 0)
            return nd_page_alloc_block(h, c);
        if (b->cur == b->empty && !nd_bin_fill(h, c))
            return NULL;
        b->last_free = NULL;   /* see nd_free_fast */
        return *b->cur++;
    }
    if (size > (size_t)PTRDIFF_MAX) {
        errno = ENOMEM;
        return NULL;
    }
    if (size <= ND_LARGE_MAX)
        return nd_heap_large_alloc(h, size, 0);
    void *p = nd_huge_alloc(size, 0, h->node, h->bound, NULL);
    if (p != NULL) {
        nd_stat_inc(&h->stats.huge_allocs);
        nd_stat_add(&h->stats.huge_bytes_alloc, size);
    }
    return p;
}

void *nd_heap_malloc_aligned(nd_heap *h, size_t alignment, size_t size)
{
    if (alignment <= ND_QUANTUM)
        return nd_heap_malloc(h, size);
    if (size > (size_t)PTRDIFF_MAX || alignment > ((size_t)1 << 40)) {
        errno = ENOMEM;
        return NULL;
    }
    /* Size classes that are multiples of the alignment are naturally aligned
       (every page starts on a 16 KiB boundary). */
    if (alignment <= ND_ALIGN_NATURAL && size <= ND_MEDIUM_MAX) {
        size_t want = size < alignment ? alignment : size;
        unsigned c = nd_class_of(want);
        while (c < ND_CLASS_COUNT && (nd_class_size[c] & (alignment - 1)) != 0)
            c++;
        if (c < ND_CLASS_COUNT)
            return nd_heap_malloc(h, nd_class_size[c]);
    }
    if (alignment <= ND_SEG_SIZE / 2 && size <= ND_LARGE_MAX) {
        size_t offset = (ND_SEG_HEADER_SIZE + alignment - 1) & ~(alignment - 1);
        if (offset + size <= ND_SEG_SIZE)
            return nd_heap_large_alloc(h, size, alignment);
    }
    void *p = nd_huge_alloc(size, alignment, h->node, h->bound, NULL);
    if (p != NULL) {
        nd_stat_inc(&h->stats.huge_allocs);
        nd_stat_add(&h->stats.huge_bytes_alloc, size);
    }
    return p;
}

/* ---- the list of live threads ---------------------------------------------- */

void nd_heaps_lock(void) { nd_lock(&nd_heaps_lock_); }
void nd_heaps_unlock(void) { nd_unlock(&nd_heaps_lock_); }

void nd_heap_fork_child(void)
{
    /* Only the forking thread survives. The heaps of the others are left as
       they were (they may have been mid-update): their ids never match a
       thread of the child, so frees of their blocks take the remote path.
       Their counters are folded into the totals. */
    nd_heap *self = nd_tls_heap;
    nd_heap *h = nd_heaps_head;
    nd_heaps_head = NULL;
    while (h) {
        nd_heap *next = h->next;
        if (h == self) {
            h->next = nd_heaps_head;
            h->prev = NULL;
            nd_heaps_head = h;
        } else {
            nd_heap_merge_dead_locked(h);
            for (int i = 0; i < ND_MAX_NODES; i++)
                if (h->node_heaps[i] != &nd_heap_empty)
                    nd_heap_merge_dead_locked(h->node_heaps[i]);
        }
        h = next;
    }
}

/* ---- statistics sums ------------------------------------------------------ */

void nd_heap_count_remote_free(unsigned cls)
{
    nd_heap *h = nd_tls_heap;
    if (cls >= ND_CLASS_COUNT)
        return;
    if (h->kind == ND_HEAP_NORMAL) {
        nd_stat_inc(&h->cstats[cls].remote_frees);
        nd_stat_inc(&h->stats.remote_frees);
    } else {
        nd_add_relaxed(&nd_anon_remote[cls], 1);
    }
}

void nd_heap_stats_sum(nd_cls_totals *t, nd_heap_stats *hs, size_t *threads)
{
    memset(t, 0, sizeof(nd_cls_totals) * ND_CLASS_COUNT);
    memset(hs, 0, sizeof *hs);
    size_t nthreads = 0;
    nd_lock(&nd_heaps_lock_);
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        t[c] = nd_dead_totals[c];
        t[c].frees += nd_load_relaxed(&nd_anon_remote[c]);
        t[c].remote_frees += nd_load_relaxed(&nd_anon_remote[c]);
    }
    *hs = nd_dead_hstats;
    for (nd_heap *h = nd_heaps_head; h; h = h->next) {
        nthreads++;
        nd_sum_heap(h, t, hs);
        for (int i = 0; i < ND_MAX_NODES; i++)
            if (h->node_heaps[i] != &nd_heap_empty)
                nd_sum_heap(h->node_heaps[i], t, hs);
    }
    for (int n = 0; n < ND_MAX_NODES; n++)
        for (int b = 0; b < 2; b++)
            if (nd_shared[n][b])
                nd_sum_heap(nd_shared[n][b], t, hs);
    nd_unlock(&nd_heaps_lock_);
    if (threads)
        *threads = nthreads;
}
