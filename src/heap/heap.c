/*
 * heap.c - a heap's pages and segments (see heap.h): page queues, taking
 * blocks for the thread cache and taking them back, remote
 * frees and their notification, new and retired pages, spare segments,
 * adoption and abandonment, purging.
 */
#include "heap.h"

#include <errno.h>
#include <string.h>
#include "large.h"
#include "msg.h"
#include "node.h"
#include "options.h"
#include "os.h"
#include "topo.h"

nd_hot void nd_heap_init(nd_heap *h, uintptr_t tid, int node, bool bound, nd_class_counters *cstats)
{
    h->tid = tid;
    h->cstats = cstats;
    h->node = (int16_t)node;
    h->bound = bound;
    h->shared = tid == ND_TID_SHARED || tid == ND_TID_NURSERY;
    nd_store_relaxed(&h->clock_ms, nd_os_now_ms());
    h->classes = 0;
}

/* ---- the owner's calls and idle sweeps (heap.h: depth, busy, sweep) ------ */

static inline nd_heap *nd_heap_call_begin(nd_heap *h)
{
    nd_heap_enter(h);
    return h;
}

static inline void nd_heap_call_end(nd_heap **hp) { nd_heap_exit(*hp); }

/* The first statement of each public function the owner calls: its
   bracket (nd_heap_enter now, nd_heap_exit at every return). */
#define ND_HEAP_CALL(h) nd_heap *nd_heap_call_ __attribute__((cleanup(nd_heap_call_end), unused)) = nd_heap_call_begin(h)

/* Is h held by the caller: its owner inside a call, a sweeper, or a
   shared heap (whose lock its caller holds)? (The debug build's check
   that no path of the owner's reaches a heap's pages and segments
   outside its bracket.) */
static inline bool nd_heap_held(const nd_heap *h)
{
    /* sweep first: a sweeper never reads depth, the owner's own word,
       which the owner may be changing as it arrives to wait. */
    return nd_load_relaxed(&h->sweep) != 0 || h->shared || h->depth != 0;
}

nd_cold void nd_heap_wait_sweep(nd_heap *h)
{
#ifdef ND_TSAN
    while (__atomic_load_n(&h->sweep, __ATOMIC_SEQ_CST) != 0)
#else
    while (__atomic_load_n(&h->sweep, __ATOMIC_ACQUIRE) != 0)
#endif
        nd_os_yield();
}

static void nd_heap_retire_empty_pages(nd_heap *h);
static void nd_heap_abandon_in(nd_heap *h);
static bool nd_heap_adopt_segment_in(nd_heap *h, nd_segment *s);
static void nd_heap_collect_in(nd_heap *h, uint64_t now, bool purge_all);
static void nd_heap_drain_notified(nd_heap *h);
static void nd_heap_free_local_in(nd_heap *h, nd_page *pg, void *p);
static void nd_heap_idle_purge_in(nd_heap *h, uint64_t now);
static size_t nd_heap_leave_in(nd_heap *h, int node);
static void nd_heap_maintain_in(nd_heap *h, uint64_t now, bool force);
static void nd_heap_purge_in(nd_heap *h, uint64_t now, bool all);
static bool nd_heap_reclaim(nd_heap *h);
static size_t nd_heap_release_in(nd_heap *h);
static void nd_heap_retire_kept_in(nd_heap *h);
static void nd_heap_return_blocks_in(nd_heap *h, nd_page *pg, nd_block *head, nd_block *tail, uint32_t count);
static size_t nd_heap_take_blocks_in(nd_heap *h, unsigned cls, void **out, size_t n, size_t max);
static size_t nd_heap_take_free_in(nd_heap *h, unsigned cls, void **out, size_t n);
static void *nd_heap_take_free_aligned_in(nd_heap *h, unsigned cls, uintptr_t align);
static void nd_heap_trim_in(nd_heap *h, uint64_t now);
static bool nd_heap_would_fault_in(nd_heap *h, unsigned cls);
static void nd_heap_gauge_flush_in(nd_heap *h);
static void nd_heap_release_kept(nd_heap *h, uint64_t now, bool all);
static void nd_heap_purge_pass(nd_heap *h, uint64_t now, bool all, bool idle);
static void nd_heap_gauge_spill(nd_heap *h, long keep);

bool nd_heap_sweep_idle(nd_heap *h, uint64_t now)
{
    uint8_t zero = 0;
    if (h->shared || !__atomic_compare_exchange_n(&h->sweep, &zero, 1, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
        return false;
#ifdef ND_TSAN
    bool busy = __atomic_load_n(&h->busy, __ATOMIC_SEQ_CST) != 0;
#else
    /* The owner stores busy and then loads sweep with no fence of its own:
       this barrier on every CPU of the process is it (heap.h). */
    bool busy = !nd_os_barrier_all() || __atomic_load_n(&h->busy, __ATOMIC_ACQUIRE) != 0;
#endif
    if (!busy) {
        if (nd_load_relaxed(&h->notified) != NULL)
            nd_heap_drain_notified(h);
        nd_heap_retire_empty_pages(h);   /* kept pages too */
        nd_heap_release_kept(h, now, true);
        nd_heap_purge_pass(h, now, true, true);
        nd_heap_gauge_spill(h, 0);
        nd_gauge_add(idle_heaps_swept, 1);
    }
    __atomic_store_n(&h->sweep, 0, __ATOMIC_RELEASE);
    return !busy;
}

/* The kind of memory h's pages are (segment.h). */
static inline unsigned nd_heap_kind(const nd_heap *h) { return nd_kind_of(h->bound, h->node); }

static inline int nd_heap_kind_of(const nd_segment *s) { return s->kind == ND_SEG_SMALL ? 0 : 1; }

/* ---- kept pages (heap.h) --------------------------------------------------- */

_Static_assert(ND_CLASS_COUNT <= 64, "a bit of kept_classes per class");

/* The bytes a kept page of class cls counts (kept_bytes). */
static inline size_t nd_heap_page_size(unsigned cls)
{
    return nd_class_is_small(cls) ? ND_SMALL_PAGE_SIZE : ND_MEDIUM_PAGE_SIZE;
}

/* Puts pg, not kept, at the back of queue q, before its kept pages. */
static void nd_heap_queue_back(nd_page_queue *q, nd_page *pg)
{
    nd_page *at = q->last;
    if (nd_likely(at == NULL || !at->kept)) {
        nd_list_push_back(q, pg);
        return;
    }
    while (at->prev != NULL && at->prev->kept)
        at = at->prev;
    nd_list_insert_before(q, at, pg);
}

/* Kept page pg is kept no more (it is taken, or retired): off the
   accounts, still on its queue. */
static void nd_heap_unkeep(nd_heap *h, nd_page *pg)
{
    unsigned cls = pg->cls;
    nd_assert(pg->kept && h->kept_bytes >= nd_heap_page_size(cls));
    /* The kept pages are a suffix: another one is after pg, or before it. */
    if (pg->next == NULL && (pg->prev == NULL || !pg->prev->kept))
        h->kept_classes &= ~((uint64_t)1 << cls);
    pg->kept = 0;
    pg->free_seen = pg->free_purged = 0;   /* (kept_at's place: segment.h) */
    pg->free_pushed = 0;   /* (its list is empty) */
    h->kept_bytes -= nd_heap_page_size(cls);
}

/* ---- the gauges of pages in use (heap.h: gauge_pages) ---------------------- */

/* Adds all of h's held-back bytes but `keep` to the active gauge, its
   pages left held back. */
static nd_hot nd_noinline void nd_heap_gauge_spill_bytes(nd_heap *h, long keep)
{
    if (h->gauge_active != keep)
        nd_gauge_active(h->gauge_active - keep);
    h->gauge_active = keep;
}

/* Adds what h holds back to the gauges: its pages, and of its bytes all
   but `keep`. */
static nd_hot nd_noinline void nd_heap_gauge_spill(nd_heap *h, long keep)
{
    for (uint64_t m = h->gauge_classes; m != 0; m &= m - 1) {
        unsigned c = (unsigned)__builtin_ctzll(m);
        if (h->gauge_pages[c] != 0)
            nd_add_relaxed(&nd_gauge.pages[c], (size_t)(long)h->gauge_pages[c]);   /* (a fall: modulo 2^64) */
        h->gauge_pages[c] = 0;
    }
    nd_heap_gauge_spill_bytes(h, keep);
    h->gauge_classes = 0;
    h->gauge_events = 0;
}

static nd_hot nd_noinline void nd_heap_gauge_flush_in(nd_heap *h)
{
    nd_assert(nd_heap_held(h));
    nd_heap_gauge_spill(h, 0);
}

/* A page of class cls set up (pages 1) or retired (-1), of `bytes`
   (negative when retired): its bytes held back within the band of
   config.h (ND_GAUGE_HELD), its page until h's ND_GAUGE_EVENTS-th such
   event; into the gauges at once in a shared heap. Bytes out of the band
   go to the active gauge alone: pages of 512 KiB leave it every second
   set-up or retirement, and each time every class's page gauge written
   too took two read-modify-writes of lines every thread writes where
   one is needed (micro -m batch -s 131072 -t 2, 250 pages set up and
   retired a round: the spills 7.5 % of the samples; without the pages'
   x0.97-0.98 of the CPU a pair at 128 and 64 KiB in sets of 11, x0.93-0.95
   in a first set of 9; docs/results.md, stop 69). */
static inline void nd_heap_gauge_page(nd_heap *h, unsigned cls, long bytes, int pages)
{
    h->gauge_active += bytes;
    h->gauge_pages[cls] = (int16_t)(h->gauge_pages[cls] + pages);
    h->gauge_classes |= (uint64_t)1 << cls;
    if (nd_unlikely(++h->gauge_events >= ND_GAUGE_EVENTS || h->shared))
        nd_heap_gauge_spill(h, h->shared ? 0 : nd_gauge_held(h->gauge_active));
    else if (nd_unlikely(nd_gauge_out_of_band(h->gauge_active)))
        nd_heap_gauge_spill_bytes(h, nd_gauge_held(h->gauge_active));   /* (config.h) */
}

__attribute__((no_sanitize("thread")))
void nd_heap_gauge_pending(const nd_heap *h, long *active, long *pages)
{
    *active += nd_load_relaxed(&h->gauge_active);
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++)
        pages[c] += nd_load_relaxed(&h->gauge_pages[c]);
}

/* ---- segments and pages -------------------------------------------------- */

/* Can h's memory have been moved by the kernel to another node than its
   segments'? Plain memory of a thread that follows its node, on a machine
   whose CPUs are on two or more nodes' memory, with no memory policy. */
static int nd_heap_multi_node = -1;
static bool nd_heap_checks_moved(const nd_heap *h)
{
    if (h->bound || h->shared || !nd_opt(ND_OPT_follow_thread))
        return false;
    int multi = nd_load_relaxed(&nd_heap_multi_node);
    if (multi < 0) {
        multi = nd_topo_cpus_span_mem_nodes();
        nd_store_relaxed(&nd_heap_multi_node, multi);
    }
    return multi && nd_os_policy_is_local();
}

/* Hands a segment with no page in use, already off h's lists, to its node. */
static void nd_heap_seg_release(nd_heap *h, nd_segment *s)
{
    size_t pending = (size_t)nd_popcount64(s->purge_mask) << ND_CHUNK_SHIFT;
    h->purge_pending = h->purge_pending > pending ? h->purge_pending - pending : 0;
    if (h->spare[0] == s)
        h->spare[0] = NULL;
    if (h->spare[1] == s)
        h->spare[1] = NULL;
    s->owner = NULL;
    if (nd_unlikely(h->leaving))
        nd_seg_purge_free(s, true);   /* handed back by a thread that moved: nothing stays resident */
    nd_node_seg_put(s);   /* may be unmapped: do not touch s after this */
}

/* A fresh page of class cls for h; NULL (errno ENOMEM) if memory ran out. */
/* The pages of s that may hold resident memory: a bit per page, set when
   any chunk of the page is committed (a small page is one chunk, a medium
   one eight). */
static uint64_t nd_heap_resident_pages(const nd_segment *s)
{
    return nd_seg_pages_of_chunks(s, s->committed & ~(uint64_t)1);   /* chunk 0: the header's, always committed */
}

/* The free pages of s without a hole (nd_heap_release): all of them
   unless an address-space limit was met. */
static inline uint64_t nd_heap_whole_pages(const nd_segment *s)
{
    if (nd_likely((s->unmapped | s->tails) == 0))
        return s->free_mask;
    return s->free_mask & ~nd_seg_pages_of_chunks(s, s->unmapped | s->tails);
}

/* The free page of s a new page of a class takes: a page whose memory is
   still resident (freed lately, waiting for its purge) if there is one, so
   that a heap that frees and takes pages reuses the memory it has rather
   than touch fresh memory while the old waits for its delay; among those
   (or among all), the first one at or after the segment's colour, a page
   index that differs from segment to segment. Without it every segment's
   first pages sit at the same offsets, 4 MiB apart, and a thread that
   works in several segments at once (one per node it targets, say) finds
   their pages, and their descriptors, competing for the same sets of the
   TLB and caches. The colours are the pages whose descriptors share the
   header's first 4 KiB with its fields (nd_heap_colour), so a segment a
   thread uses a few pages of writes one OS page of header. Pages with
   holes (nd_heap_release) come last: they are mapped again before use. */
static unsigned nd_heap_pick_page(const nd_segment *s)
{
    unsigned colour = nd_heap_colour(s);
    uint64_t whole = nd_heap_whole_pages(s), resident = whole & nd_heap_resident_pages(s);
    uint64_t m = resident != 0 ? resident : whole;
    if (m == 0)
        m = s->free_mask;   /* only pages with holes: mapped again first */
    uint64_t at_or_after = m & ~(((uint64_t)1 << colour) - 1);
    return (unsigned)__builtin_ctzll(at_or_after != 0 ? at_or_after : m);
}

/* The segments of a queue a new page looks at for a free page whose memory
   is still resident, at most (a heap rarely has more with a free page). */
#define ND_HEAP_RESIDENT_SCAN 8

/* The first of the first ND_HEAP_RESIDENT_SCAN segments of queue q with a
   free page without holes whose memory is still resident (not the node's
   reserve if no_reserve); NULL if none: a new page would be faulted in. */
nd_inline nd_segment *nd_heap_resident_segment(const nd_seg_queue *q, bool no_reserve)
{
    unsigned n = 0;
    for (nd_segment *s = q->first; s != NULL && n < ND_HEAP_RESIDENT_SCAN; s = s->next, n++)
        if ((nd_heap_whole_pages(s) & nd_heap_resident_pages(s)) != 0 && !(no_reserve && nd_node_reserve_is(s)))
            return s;
    return NULL;
}

/* The segment of queue q (segments with a free page) a new page comes
   from: the first one with a free page whose memory is still resident
   (nd_heap_resident_segment), so that such a page in a segment further
   down the queue is used before a page that would be faulted in; else
   the first one. no_reserve: never the node's reserve (a class it does
   not serve, below); NULL when the queue has no other segment. whole:
   only a segment with a free page without holes (a hole that would not
   map again: nd_heap_page_new), NULL if none. */
static nd_segment *nd_heap_pick_segment(const nd_seg_queue *q, bool no_reserve, bool whole)
{
    nd_segment *r = nd_heap_resident_segment(q, no_reserve);
    if (r != NULL)
        return r;
    if (nd_unlikely(whole)) {
        for (nd_segment *s = q->first; s != NULL; s = s->next)
            if (nd_heap_whole_pages(s) != 0 && !(no_reserve && nd_node_reserve_is(s)))
                return s;
        return NULL;
    }
    nd_segment *s = q->first;
    if (no_reserve && s != NULL && nd_node_reserve_is(s))
        s = s->next;   /* a node has one reserve: the next is not it */
    return s;
}

static void nd_heap_kept_give_one(nd_heap *h, int k);

/* Only h's own segments: another thread's heap changes only under that
   thread (or its shared heap's lock). */
static nd_noinline size_t nd_heap_release_in(nd_heap *h)
{
    nd_assert(nd_heap_held(h));
    nd_heap_retire_kept_in(h);   /* kept pages first: their memory is given back too */
    size_t freed = 0;
    for (int k = 0; k < 2; k++) {
        nd_seg_queue *lists[2] = { &h->avail[k], &h->used[k] };
        for (int l = 0; l < 2; l++)
            for (nd_segment *s = lists[l]->first; s != NULL; s = s->next) {
                if (nd_node_reserve_is(s))
                    continue;
                size_t pending = (size_t)nd_popcount64(s->purge_mask);
                freed += nd_seg_release_pages(s);
                pending = (pending - (size_t)nd_popcount64(s->purge_mask)) << ND_CHUNK_SHIFT;
                h->purge_pending = h->purge_pending > pending ? h->purge_pending - pending : 0;
                nd_assert2(nd_seg_is_valid(s));
            }
    }
    return freed;
}

/* The largest class the node's reserve (node.h) serves: a shared heap
   that holds it makes no page of a larger class there, so that a loop of
   larger requests (16 KiB, say) that fail in their own heap under an
   address-space limit does not eat the pages meant for the small requests
   of any thread after it (they would then fail: a 16 KiB page holds three
   blocks, a 64 B page a thousand). */
#define ND_RESERVE_CLASS_MAX ((size_t)1 << 10)

static inline bool nd_heap_reserve_serves(unsigned cls) { return nd_class_size[cls] <= ND_RESERVE_CLASS_MAX; }
/* Is a new page of class cls for h never from the node's reserve? (A
   shared heap's small classes the reserve does not serve.) */
static inline bool nd_heap_no_reserve(const nd_heap *h, unsigned cls)
{
    return h->shared && nd_class_is_small(cls) && !nd_heap_reserve_serves(cls);
}


/* h's bound on its pending purges (heap.h: ND_PURGE_PENDING_MAX). */
static inline size_t nd_heap_pending_max(const nd_heap *h)
{
    return nd_bound_of(h->pending_max, ND_PURGE_PENDING_MAX);
}

/* A new page of h faults in `fresh` chunks (not committed) while memory
   its last purge past the bound gave back was not faulted in again yet,
   within a purge delay of it: that purge gave back memory the heap needed,
   so the bound is raised by as much (heap.h), and the next round of the
   same size keeps its pages for their delay. */
static void nd_heap_regret(nd_heap *h, uint64_t fresh)
{
    if (fresh == 0)
        return;
    if (nd_load_relaxed(&h->clock_ms) > h->purged_at + (uint64_t)nd_opt(ND_OPT_purge_delay)) {
        h->purged_back = 0;   /* too late: not the same round */
        return;
    }
    size_t bytes = (size_t)nd_popcount64(fresh) << ND_CHUNK_SHIFT;
    if (bytes > h->purged_back)
        bytes = h->purged_back;
    h->purged_back -= bytes;
    size_t max = nd_heap_pending_max(h);
    bool first = h->pending_max == 0;
    h->pending_max = max + bytes < ND_PURGE_PENDING_TOP ? max + bytes : ND_PURGE_PENDING_TOP;
    if (first)
        nd_gauge_add(purge_bounds_raised, 1);
}

static nd_page *nd_heap_page_new(nd_heap *h, unsigned cls)
{
    int k = nd_class_is_small(cls) ? 0 : 1;
    bool no_reserve = nd_heap_no_reserve(h, cls);
    bool whole = false;   /* a hole would not map again: a page without */
    /* A page kept for another class (this one has none) gives its memory
       to this one: retired, it is a free page whose memory is resident,
       which nd_heap_pick_page takes first. */
    if (nd_unlikely(h->kept_classes != 0))
        nd_heap_kept_give_one(h, k);
    for (;;) {
        nd_segment *s = nd_heap_pick_segment(&h->avail[k], no_reserve, whole);
        if (s == NULL) {
            /* Adopt what exited threads left behind before asking for more. */
            if (nd_heap_reclaim(h)) {
                if (h->pages[cls].first != NULL)
                    return h->pages[cls].first;
                continue;
            }
            int kind = k == 0 ? ND_SEG_SMALL : ND_SEG_MEDIUM;
            uint64_t refused = nd_os_map_refusals();
            s = nd_node_seg_get(h->node, h->bound, kind);
            /* Out of address space (a mapping was refused, not a full
               node): the heap's own segments give back what no block
               holds, the free chunks of the large blocks' segments theirs
               (large.h), and once more. */
            if (s == NULL && nd_os_map_refusals() != refused && nd_heap_release_in(h) + nd_large_release() != 0)
                s = nd_node_seg_get(h->node, h->bound, kind);
            /* Still none: a plain shared heap takes its node's reserve
               (node.h), the small pages kept for this, for a class it
               serves. */
            if (s == NULL && h->tid == ND_TID_SHARED && !h->bound && k == 0 && !no_reserve)
                s = nd_node_reserve_take(h->node);
            if (s == NULL) {
                errno = ENOMEM;
                return NULL;
            }
            if (nd_heap_checks_moved(h))
                nd_seg_purge_elsewhere(s, true);
            /* A cached segment's resident chunks wait for their purge
               (node.h), as the heap's own freed pages do. */
            s->purge_epoch = nd_load_relaxed(&h->epoch);
            h->purge_pending += (size_t)nd_popcount64(s->purge_mask) << ND_CHUNK_SHIFT;
            s->owner = h;
            nd_list_push_front(&h->avail[k], s);
        }
        unsigned i = nd_heap_pick_page(s);
        if (nd_unlikely(s->unmapped != 0) && !nd_seg_page_remap(s, i)) {
            whole = true;   /* no room, or another mapping in the hole: a page without holes, or a new segment */
            continue;
        }
        size_t area;
        uint8_t *start = nd_seg_page_area(s, i, &area);
        /* Memory faulted in before, handed out while the thread runs on
           another node (heap.h: away): counted. */
        uint64_t reused = nd_unlikely(h->away) ? s->committed & nd_seg_chunks(s, start, area) : 0;
        if (nd_unlikely(h->purged_back != 0))
            nd_heap_regret(h, nd_seg_chunks(s, start, area) & ~s->committed);
        if (nd_seg_commit(s, start, area) != 0) {
            /* The node is full (strict placement). Leave the page free. */
            if (s->used_pages == 0 && !nd_node_reserve_is(s)) {
                nd_list_remove(&h->avail[k], s);
                nd_heap_seg_release(h, s);
            }
            errno = ENOMEM;
            return NULL;
        }
        s->free_mask &= ~((uint64_t)1 << i);
        s->used_pages++;
        if (h->spare[k] == s)
            h->spare[k] = NULL;   /* in use again */
        /* Chunks that were waiting for their purge are in use again. */
        uint64_t spared = s->purge_mask & nd_seg_chunks(s, start, area);
        if (spared != 0) {
            nd_seg_purge_drop(s, spared);
            size_t bytes = (size_t)nd_popcount64(spared) << ND_CHUNK_SHIFT;
            h->purge_pending = h->purge_pending > bytes ? h->purge_pending - bytes : 0;
        }
        if (s->free_mask == 0)
            nd_list_move_front(&h->avail[k], &h->used[k], s);
        nd_page *pg = &s->pages[i];
        if (nd_unlikely(reused != 0))
            nd_count_inc(&h->stats.remote_pages);
        nd_page_init(pg, cls, start, area, h, h->tid, nd_heap_kind(h));
        nd_heap_gauge_page(h, cls, (long)area, 1);
        nd_list_push_front(&h->pages[cls], pg);
        if (cls >= ND_HEAP_CLASSES_FROM)
            h->classes |= ND_HEAP_CLASS_BIT(cls);
        return pg;
    }
}

/* A page on the full queue got a block back: back to its class's queue. */
static void nd_heap_unfull(nd_heap *h, nd_page *pg)
{
    bool was_armed = nd_page_disarm(pg);
    nd_list_remove(&h->full, pg);
    pg->in_full = 0;
    nd_list_push_front(&h->pages[pg->cls], pg);
    if (!was_armed)      /* a notifier pushed it on `notified`: take it off */
        nd_heap_drain_notified(h);
}

/* Gives an empty page back to its segment; the segment goes to its node's
   cache when no page is left in use (or stays as the heap's spare). due: a
   kept page that waited out the purge delay (maintenance): its segment's
   free pages are due at the next purge, not a delay later (one purge for
   them all, not a system call a page). */
static nd_hot void nd_heap_page_retire_as(nd_heap *h, nd_page *pg, bool due)
{
    nd_assert(pg->used == 0 && pg->in_use);
    if (nd_unlikely(pg->kept))
        nd_heap_unkeep(h, pg);
    if (pg->in_full)
        nd_heap_unfull(h, pg);
    nd_list_remove(&h->pages[pg->cls], pg);
    unsigned cls = pg->cls;
    nd_page_release(pg);

    nd_segment *s = nd_seg_base(pg);
    if (nd_unlikely(s->tails != 0))
        nd_seg_page_untail(s, nd_seg_page_index(s, pg));   /* a free page has holes, no tails */
    size_t area;
    unsigned i = nd_seg_page_index(s, pg);
    uint8_t *start = nd_seg_page_area(s, i, &area);
    nd_heap_gauge_page(h, cls, -(long)area, -1);
    int k = nd_heap_kind_of(s);
    if (s->free_mask == 0)
        nd_list_move_front(&h->used[k], &h->avail[k], s);
    s->free_mask |= (uint64_t)1 << i;
    s->used_pages--;
    if (s->used_pages == 0) {
        if (h->spare[k] == NULL && !h->shared && nd_opt(ND_OPT_purge_delay) > 0) {
            h->spare[k] = s;
            h->spare_since[k] = nd_load_relaxed(&h->clock_ms);
            s->purge_epoch = nd_load_relaxed(&h->epoch);
        } else if (h->spare[k] != s && !nd_node_reserve_is(s)) {   /* a reserve stays */
            nd_list_remove(&h->avail[k], s);
            nd_heap_seg_release(h, s);
            return;
        }
    }
    uint64_t chunks = nd_seg_chunks(s, start, area) & s->committed;
    if (nd_opt(ND_OPT_purge_delay) == 0) {
        nd_seg_purge(s, chunks);
    } else if (chunks != 0) {
        /* The page's chunks wait for the delay (the clock as of the last
           maintenance check: close enough), with the segment's others or
           after them (segment.h: purge_young); the heap's epochs count from
           the first. Due: with the others, all of them due at once. */
        bool first = s->purge_mask == 0;
        uint64_t fresh = nd_seg_purge_wait(s, chunks, nd_load_relaxed(&h->clock_ms) + (nd_unlikely(due) ? 0 : (uint64_t)nd_opt(ND_OPT_purge_delay)));
        if (nd_unlikely(due))
            s->purge_epoch = nd_load_relaxed(&h->epoch) >= ND_PURGE_MIN_EPOCHS ? nd_load_relaxed(&h->epoch) - ND_PURGE_MIN_EPOCHS : nd_load_relaxed(&h->epoch);
        else if (first)
            s->purge_epoch = nd_load_relaxed(&h->epoch);
        h->purge_pending += (size_t)nd_popcount64(fresh) << ND_CHUNK_SHIFT;
        if (h->purge_pending > h->pending_high)
            h->pending_high = h->purge_pending;
        if (h->purge_pending > nd_heap_pending_max(h)) {
            h->purged_back = h->purge_pending;
            h->purged_at = nd_load_relaxed(&h->clock_ms);
            nd_heap_purge_in(h, 0, true);
        }
    }
}

static nd_hot void nd_heap_page_retire(nd_heap *h, nd_page *pg)
{
    nd_heap_page_retire_as(h, pg, false);
}

/* May h keep empty page pg (heap.h: kept pages) rather than retire it? */
static inline bool nd_heap_may_keep(const nd_heap *h, const nd_page *pg)
{
    const nd_segment *s = nd_seg_base(pg);
    return !h->shared && !h->leaving && h->kept_bytes + nd_heap_page_size(pg->cls) <= ND_HEAP_KEPT_MAX &&
           nd_opt(ND_OPT_purge_delay) > 0 && (s->unmapped | s->tails) == 0;
}

/* Empty page pg (no block out) stays set up for its class, kept at the
   back of its queue (heap.h). It stays counted in the gauges of pages in
   use (pages, active: counters.h), as it stays set up: no shared counter
   is written per page a heap cycles. */
static void nd_heap_keep(nd_heap *h, nd_page *pg)
{
    unsigned cls = pg->cls;
    nd_page_queue *q = &h->pages[cls];
    if (pg->in_full) {
        /* nd_heap_unfull without its move to the queue's front. */
        bool was_armed = nd_page_disarm(pg);
        nd_list_remove(&h->full, pg);
        pg->in_full = 0;
        if (!was_armed)   /* a notifier pushed it on `notified`: take it off */
            nd_heap_drain_notified(h);
    } else {
        nd_list_remove(q, pg);
    }
    nd_list_push_back(q, pg);   /* the last kept: the first taken of them (nd_heap_take_blocks) */
    nd_page_keep(pg);
    pg->kept = 1;
    pg->kept_at = nd_load_relaxed(&h->clock_ms);
    pg->kept_epoch = (uint32_t)nd_load_relaxed(&h->epoch);
    h->kept_bytes += nd_heap_page_size(cls);
    h->kept_classes |= (uint64_t)1 << cls;
}

/* Retires the kept page at the back of the first queue of segment kind k
   (0 small, 1 medium) that has one, if any: the one kept last, whose
   memory is the likeliest still in the caches. */
static void nd_heap_kept_give_one(nd_heap *h, int k)
{
    for (uint64_t m = h->kept_classes; m != 0; m &= m - 1) {
        unsigned c = (unsigned)__builtin_ctzll(m);
        if ((nd_class_is_small(c) ? 0 : 1) != k)
            continue;
        nd_page *pg = h->pages[c].last;
        nd_assert(pg != NULL && pg->kept);
        nd_heap_page_retire(h, pg);
        return;
    }
}

/* Retires h's kept pages: all of them, or those kept for longer than the
   purge delay and ND_PURGE_MIN_EPOCHS of the heap's epochs (their
   segments' free pages then due at once). */
static void nd_heap_kept_age(nd_heap *h, uint64_t now, bool all)
{
    uint64_t delay = (uint64_t)nd_opt(ND_OPT_purge_delay);
    for (uint64_t m = h->kept_classes; m != 0; m &= m - 1) {
        nd_page_queue *q = &h->pages[__builtin_ctzll(m)];
        for (nd_page *pg = q->last, *prev; pg != NULL && pg->kept; pg = prev) {
            prev = pg->prev;
            if (all)
                nd_heap_page_retire(h, pg);
            else if (now >= pg->kept_at + delay && (uint32_t)((uint32_t)nd_load_relaxed(&h->epoch) - pg->kept_epoch) >= ND_PURGE_MIN_EPOCHS)
                nd_heap_page_retire_as(h, pg, true);
        }
    }
}

/* ---- blocks out ------------------------------------------------------------- */

/* Page pg of queue q has no block left to take: park it where remote
   frees will find it again. */
static void nd_heap_park(nd_heap *h, nd_page_queue *q, nd_page *pg)
{
    nd_list_remove(q, pg);
    if (nd_page_arm(pg)) {
        pg->in_full = 1;
        nd_list_push_front(&h->full, pg);
    } else {
        nd_heap_queue_back(q, pg);   /* remote frees are waiting: taken at its turn (before kept pages) */
    }
}

static nd_hot nd_noinline size_t nd_heap_take_blocks_in(nd_heap *h, unsigned cls, void **out, size_t n, size_t max)
{
    nd_assert(nd_heap_held(h));
    if (nd_load_relaxed(&h->notified) != NULL)
        nd_heap_drain_notified(h);
    nd_page_queue *q = &h->pages[cls];
    size_t got = 0;
    while (got < n) {
        nd_page *pg = q->first;
        if (pg == NULL) {
            /* Other heaps' pages wait with blocks freed by other threads
               that this heap cannot take (statistics). */
            if (nd_load_relaxed(&nd_gauge.notified_pages) != 0 && nd_load_relaxed(&h->notified) == NULL)
                nd_gauge_add(pages_past_notified, 1);
            pg = nd_heap_page_new(h, cls);
            if (pg == NULL)
                break;
        } else if (nd_unlikely(pg->kept)) {
            /* Only kept pages are left: the one kept last, before a new
               page. A heap that cycles pages reuses the ones it emptied
               last, as it reused a retired page's memory first, and its
               blocks stay in as few pages (taken oldest first, the rounds
               of bench/micro -m batch -s 4096 spread their blocks over 63
               pages rather than 53: 6,000 more flushes of runs to pages
               in 620,000 blocks, +1.5 instructions a block). */
            pg = q->last;
            nd_heap_unkeep(h, pg);
            if (pg != q->first) {
                nd_list_remove(q, pg);
                nd_list_push_front(q, pg);
            }
        }
        got += nd_page_take(pg, out + got, n - got, max - got, h->carve_rng);
        if (nd_page_is_exhausted(pg))
            nd_heap_park(h, q, pg);
    }
    if (got == 0)
        errno = ENOMEM;
    return got;
}

static nd_hot nd_noinline bool nd_heap_would_fault_in(nd_heap *h, unsigned cls)
{
    nd_assert(nd_heap_held(h));
    if (nd_load_relaxed(&h->notified) != NULL)
        return false;
    const nd_page *pg = h->pages[cls].first;
    if (pg != NULL)
        return nd_page_would_fault(pg);
    /* A new page: resident memory if one of the segments nd_heap_page_new
       looks at has a free page with some. */
    return nd_heap_resident_segment(&h->avail[nd_class_is_small(cls) ? 0 : 1], nd_heap_no_reserve(h, cls)) == NULL;
}

static nd_hot nd_noinline void *nd_heap_take_free_aligned_in(nd_heap *h, unsigned cls, uintptr_t align)
{
    nd_assert(nd_heap_held(h));
    const nd_page *pg = h->pages[cls].first;
    void *p = NULL;
    if (pg != NULL && pg->free != NULL && ((uintptr_t)pg->free & (align - 1)) == 0)
        nd_heap_take_free_in(h, cls, &p, 1);
    return p;
}

static nd_hot nd_noinline size_t nd_heap_take_free_in(nd_heap *h, unsigned cls, void **out, size_t n)
{
    nd_assert(nd_heap_held(h));
    nd_page_queue *q = &h->pages[cls];
    size_t got = 0;
    for (nd_page *pg = q->first; got < n && pg != NULL && pg->free != NULL; pg = q->first) {
        got += nd_page_take_free(pg, out + got, n - got);
        if (!nd_page_is_exhausted(pg))
            break;   /* its list ran out (or n did): carving is next, not wanted here */
        nd_heap_park(h, q, pg);
    }
    return got;
}

/* ---- blocks back -------------------------------------------------------------- */

/* Page pg, which no block is out of, drops its blocks: kept set up for
   its class (recarved when next used), or retired. */
static nd_hot nd_noinline void nd_heap_page_drop(nd_heap *h, nd_page *pg)
{
    if (nd_heap_may_keep(h, pg))
        nd_heap_keep(h, pg);
    else
        nd_heap_page_retire(h, pg);
}

static nd_hot nd_noinline void nd_heap_return_blocks_in(nd_heap *h, nd_page *pg, nd_block *head, nd_block *tail, uint32_t count)
{
    nd_assert(nd_heap_held(h));
    nd_page_give(pg, head, tail, count);
    if (pg->used == 0) {
        /* Keep it set up for its class, or retire it, unless it is the
           last page of its class (left as it is to avoid churn) and not
           parked as full. */
        if (nd_heap_drops_emptied(h, pg))
            nd_heap_page_drop(h, pg);
    } else if (pg->in_full) {
        nd_heap_unfull(h, pg);
    }
}

static nd_hot nd_noinline void nd_heap_free_local_in(nd_heap *h, nd_page *pg, void *p)
{
    nd_assert(nd_heap_held(h));
    nd_assert(pg->in_use && nd_page_has_block(pg, p) && nd_block_is_marked(p));
    nd_count_inc(&nd_heap_cstats(h, pg->cls)->slow_frees);
    nd_heap_return_blocks_in(h, pg, p, p, 1);
}

/* After a push found the page armed (and set BUSY): tell the owner, then
   clear BUSY. The owner cannot go away meanwhile: it waits for BUSY to
   clear first. */
static void nd_heap_notify(nd_page *pg)
{
    nd_heap *h = nd_load_acquire(&pg->heap);
    /* Counted before the push, so that the owner's drain never takes it
       off the gauge first. */
    nd_gauge_add_peak(&nd_gauge.notified_pages, &nd_gauge.peak_notified_pages, 1);
    nd_page *top = nd_load_relaxed(&h->notified);
    do {
        pg->xnext = top;
    } while (!nd_cas_weak_acq_rel(&h->notified, &top, pg));
    /* notified_owners: one more for the push onto an empty list, counted
       after it; the drain that empties the list takes one (nd_heap_drain_
       notified). So the gauge is exact whenever no push is between its
       compare-and-swap and this count, and otherwise low, never high: a
       drain that comes first takes it a moment below 0, which reads as a
       huge count (tcache.c, nd_tcache_owners_away: the deep room shut);
       counted before the push, two threads' pushes onto one empty list
       read as two owners for a moment, and batchq -w 2 -s 20000's two
       producers opened the deep room meant for more owners than CPUs. */
    if (top == NULL)
        nd_gauge_add(notified_owners, 1);
    nd_page_xdone(pg);
}

nd_hot void nd_heap_free_remote(nd_page *pg, void *p)
{
    /* nd_page_xpush marks p and links it. */
    if (nd_page_xpush(pg, p) == ND_XSTATE_NOTIFY)
        nd_heap_notify(pg);
}

nd_hot void nd_heap_free_remote_chain(nd_page *pg, nd_block *head, nd_block *tail)
{
    if (nd_page_xpush_chain(pg, head, tail) == ND_XSTATE_NOTIFY)
        nd_heap_notify(pg);
}

/* Takes n pages off the notified_pages gauge (statistics), never below 0
   (a child after fork: nd_heap_fork_child queues pages it does not
   count). */
static void nd_heap_notified_gone(size_t n)
{
    size_t v = nd_load_relaxed(&nd_gauge.notified_pages);
    while (!nd_cas_weak_acq_rel(&nd_gauge.notified_pages, &v, v > n ? v - n : 0))
        ;
}

static nd_hot void nd_heap_drain_notified(nd_heap *h)
{
    nd_assert(nd_heap_held(h));
    nd_page *list = nd_exchange_acq_rel(&h->notified, (nd_page *)NULL);
    if (list != NULL)
        nd_gauge_sub(notified_owners, 1);
    size_t n = 0;
    for (; list != NULL; n++) {
        nd_page *pg = list;
        list = pg->xnext;
        pg->xnext = NULL;
        if (pg->in_full && pg->heap == h) {
            /* Its remote frees stay where they are: the next take
               collects them straight into the thread cache. */
            nd_list_remove(&h->full, pg);
            pg->in_full = 0;
            nd_list_push_front(&h->pages[pg->cls], pg);
        }
    }
    if (n != 0)
        nd_heap_notified_gone(n);
}

/* ---- purging and maintenance ----------------------------------------------- */

/* The first class whose blocks can give back an OS page while their page
   stays in use (nd_heap_purge_free_blocks): two OS pages and more. */
static unsigned nd_heap_first_purged_class(uintptr_t ps)
{
    unsigned c = 0;
    while (c < ND_CLASS_COUNT && nd_class_size[c] < 2 * ps)
        c++;
    return c;
}

/* Do free blocks of `bound` memory give back their OS pages while their
   page stays in use (the free-block pass, a store's idle blocks)? Plain
   memory only (a page of node-bound memory faulted in again would not be
   placed and checked: segment.h, committed), and not under secure=1 or 2
   (the canary at a block's end, the fill) or check=2 (its fill of freed
   blocks). */
static inline bool nd_heap_purges_blocks(bool bound)
{
    return !bound && nd_opt(ND_OPT_secure) == 0 && nd_opt(ND_OPT_check) < 2;
}

/* Adds to `batch` the whole OS pages of the free block at `start` of
   `size` bytes past its first 16 bytes (its link and its mark stay), their
   bytes to *bytes; false when it spans none. */
static inline bool nd_heap_purge_block(nd_os_purges *batch, uintptr_t start, size_t size, uintptr_t ps, size_t *bytes)
{
    uintptr_t lo = (start + 2 * sizeof(uintptr_t) + ps - 1) & ~(ps - 1), hi = (start + size) & ~(ps - 1);
    if (hi <= lo)
        return false;
    nd_os_purges_add(batch, (void *)lo, hi - lo);
    *bytes += hi - lo;
    return true;
}

/* The free blocks of h's pages in use (segment.h: free_seen,
   free_purged, free_pushed): each block on a page's free list now that
   was on it at the last pass too, and has not left it since (free_seen),
   gives back its whole OS pages past its first 16 bytes (its link and
   mark stay), once (free_purged); with `all` (a forced collect, an
   abandon), or purge_delay 0, every block on a free list. Only classes
   whose blocks span an
   OS page past the one their start is on, in pages of at most 32 blocks;
   only where nd_heap_purges_blocks. One batch (os.h), flushed before this
   returns. */
static nd_hot void nd_heap_purge_free_blocks(nd_heap *h, bool all)
{
    if (!nd_heap_purges_blocks(h->bound))
        return;
    nd_os_purges batch;
    nd_os_purges_init(&batch);
    const uintptr_t ps = (uintptr_t)nd_os_page_size();
    all |= nd_opt(ND_OPT_purge_delay) == 0;
    size_t blocks = 0, bytes = 0;
    for (unsigned c = nd_heap_first_purged_class(ps); c < ND_CLASS_COUNT; c++) {
        for (nd_page *pg = h->pages[c].first; pg != NULL && !pg->kept; pg = pg->next) {
            if (pg->free == NULL || pg->reserved > 32)
                continue;
            /* The list's blocks: free_seen's unless some went on it since
               the last pass (free_pushed), so a page whose list only
               shrank, or stayed as it was, is not walked (a heap whose
               free blocks sit still costs a test a page). */
            uint32_t on_list = pg->free_seen;
            if (pg->free_pushed) {
                bool whole = true;
                on_list = 0;
                for (nd_block *x = pg->free; x != NULL && whole;) {
                    size_t k = nd_page_block_index(pg, x);
                    on_list |= k < 32 ? (uint32_t)1 << k : 0;
                    whole = k < 32 && nd_link_get(pg, x, &x);   /* (overwritten: the next take reports it) */
                }
                pg->free_pushed = !whole;
            }
            uint32_t due = on_list & ~pg->free_purged & (all ? UINT32_MAX : pg->free_seen);
            pg->free_seen = on_list;
            pg->free_purged = (pg->free_purged & on_list) | due;
            for (; due != 0; due &= due - 1) {
                uintptr_t start = (uintptr_t)pg->start + (uintptr_t)__builtin_ctz(due) * pg->block_size;
                blocks += nd_heap_purge_block(&batch, start, pg->block_size, ps, &bytes);
            }
        }
    }
    nd_os_purges_flush(&batch);
    if (blocks != 0) {
        nd_gauge_add(free_blocks_purged, blocks);
        nd_gauge_add(returned, bytes);
    }
}

nd_hot void nd_heap_purge_idle_blocks(void *const *blocks, size_t n, unsigned cls, bool bound)
{
    const uintptr_t ps = (uintptr_t)nd_os_page_size();
    if (n == 0 || cls >= ND_CLASS_COUNT || cls < nd_heap_first_purged_class(ps) || !nd_heap_purges_blocks(bound))
        return;
    nd_os_purges batch;
    nd_os_purges_init(&batch);
    size_t purged = 0, bytes = 0;
    for (size_t i = 0; i < n; i++)
        purged += nd_heap_purge_block(&batch, (uintptr_t)blocks[i], nd_class_size[cls], ps, &bytes);
    nd_os_purges_flush(&batch);
    if (purged != 0) {
        nd_gauge_add(idle_blocks_purged, purged);
        nd_gauge_add(returned, bytes);
    }
}

/* One pass over h's segments: the due purges of all of them go to the
   kernel in one batch (os.h), flushed before this returns; nothing here
   hands a page out or lets a segment leave h meanwhile. Due: past the
   deadline and ND_PURGE_MIN_EPOCHS of h's work since; past the deadline
   alone when `idle` (a heap no thread runs: a pooled record's, whose
   epochs stopped with its thread). */
static nd_hot void nd_heap_purge_pass(nd_heap *h, uint64_t now, bool all, bool idle)
{
    const uint64_t min_epochs = idle ? 0 : ND_PURGE_MIN_EPOCHS;
    size_t left = 0;
    nd_os_purges batch;
    nd_os_purges_init(&batch);
    /* avail[0], used[0], avail[1], used[1]: one list at a time, no array
       of them (gcc built its addresses with a vector constant, a page of
       read-only data a thread's exit then reads: api.std,
       the_read_only_data_a_plain_program_does_not_read_stays_unmapped). */
    for (int k = 0; k < 2; k++) {
        for (int l = 0; l < 2; l++)
            for (nd_segment *s = (l == 0 ? h->avail[k] : h->used[k]).first; s; s = s->next) {
                if (s->purge_mask == 0)
                    continue;
                if (all) {
                    nd_seg_purge_into(s, s->purge_mask, &batch);
                } else if (now >= s->purge_at && nd_load_relaxed(&h->epoch) >= s->purge_epoch + min_epochs) {
                    /* The chunks waiting since the deadline was set; the
                       young ones wait for theirs (and the epochs from now). */
                    uint64_t due = nd_seg_purge_due(s, now);
                    if (due != s->purge_mask)
                        s->purge_epoch = nd_load_relaxed(&h->epoch);
                    nd_seg_purge_into(s, due, &batch);
                    left += (size_t)nd_popcount64(s->purge_mask) << ND_CHUNK_SHIFT;
                } else {
                    left += (size_t)nd_popcount64(s->purge_mask) << ND_CHUNK_SHIFT;
                }
            }
    }
    nd_os_purges_flush(&batch);
    h->purge_pending = left;
    nd_assert2(nd_heap_is_valid(h));
}

static nd_hot nd_noinline void nd_heap_purge_in(nd_heap *h, uint64_t now, bool all)
{
    nd_assert(nd_heap_held(h));
    nd_heap_purge_pass(h, now, all, false);
}

/* Gives the segments h keeps for reuse (its spares) back to their node:
   all of them, or those unused for the delay. */
static nd_hot void nd_heap_release_kept(nd_heap *h, uint64_t now, bool all)
{
    uint64_t delay = (uint64_t)nd_opt(ND_OPT_purge_delay);
    for (int k = 0; k < 2; k++) {
        nd_segment *s = h->spare[k];
        if (s != NULL && (all || (now >= h->spare_since[k] + delay &&
                                  nd_load_relaxed(&h->epoch) >= s->purge_epoch + ND_PURGE_MIN_EPOCHS))) {
            nd_list_remove(&h->avail[k], s);
            nd_heap_seg_release(h, s);
        }
    }
}

static nd_noinline void nd_heap_retire_kept_in(nd_heap *h)
{
    nd_assert(nd_heap_held(h));
    nd_heap_kept_age(h, 0, true);
}

/* At each maintenance pass: a raised bound on h's pending purges whose
   pending stayed under half of it since the last pass comes down
   (nd_bound_aged: by half at most, not below twice that high): heap.h. */
static void nd_heap_pending_max_age(nd_heap *h)
{
    h->pending_max = nd_bound_aged(h->pending_max, ND_PURGE_PENDING_MAX, h->pending_high);
    h->pending_high = h->purge_pending;
}

static nd_hot nd_noinline void nd_heap_maintain_in(nd_heap *h, uint64_t now, bool force)
{
    nd_assert(nd_heap_held(h));
    nd_store_relaxed(&h->clock_ms, now);
    nd_heap_pending_max_age(h);
    if (nd_load_relaxed(&h->notified) != NULL)
        nd_heap_drain_notified(h);
    /* Segments left by exited threads: adopt a few, so their free memory
       comes back even if this thread never needs a new page. */
    for (int i = 0; i < 4 && nd_heap_reclaim(h); i++)
        ;
    if (h->kept_classes != 0)
        nd_heap_kept_age(h, now, force);
    nd_heap_purge_free_blocks(h, force);
    nd_heap_purge_in(h, now, force);
    nd_heap_release_kept(h, now, force);
    if ((h->gauge_events | (unsigned long)h->gauge_active) != 0)
        nd_heap_gauge_flush_in(h);
}

/* Takes remote frees back and retires every page left with no block out. */
static void nd_heap_retire_empty_pages(nd_heap *h)
{
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        nd_page *pg, *next;
        nd_list_foreach_safe(&h->pages[c], pg, next) {
            nd_page_collect(pg);
            if (pg->used == 0)
                nd_heap_page_retire(h, pg);
        }
    }
}

/* The bytes of the free blocks on the free lists of h's pages in use
   that the free-block pass reaches (nd_heap_purge_free_blocks):
   capacity - used of each (segment.h). A record pooled with more than
   ND_HEAP_KEPT_MAX of them (nd_heap_trim) gives their memory back at
   once: a worker of bench/idlewait that freed 600 of its 800 blocks of
   100,000 B and exited left 18.5 MiB resident 300 ms later, the record
   waiting 10 purge delays for a next thread (6.7 MiB now). With no bound,
   mstress -t 2, whose rounds of threads take the last round's records
   and their free blocks, took x1.04-1.07 of the CPU and 450-600 more
   faults; with this one its records never pass it (docs/results.md,
   stop 61). */
static nd_hot size_t nd_heap_free_block_bytes(const nd_heap *h)
{
    size_t bytes = 0;
    for (unsigned c = nd_heap_first_purged_class((uintptr_t)nd_os_page_size()); c < ND_CLASS_COUNT; c++)
        for (const nd_page *pg = h->pages[c].first; pg != NULL && !pg->kept; pg = pg->next)
            if (pg->reserved <= 32)   /* (the pages the pass walks) */
                bytes += (size_t)(pg->capacity - pg->used) * pg->block_size;
    return bytes;
}

static nd_hot nd_noinline void nd_heap_trim_in(nd_heap *h, uint64_t now)
{
    nd_assert(nd_heap_held(h));
    nd_heap_drain_notified(h);
    nd_heap_retire_empty_pages(h);
    nd_heap_release_kept(h, 0, true);
    if (nd_heap_free_block_bytes(h) > ND_HEAP_KEPT_MAX)
        nd_heap_purge_free_blocks(h, true);
    nd_heap_purge_pass(h, now, false, true);
    nd_heap_gauge_flush_in(h);
}

static nd_hot nd_noinline void nd_heap_idle_purge_in(nd_heap *h, uint64_t now)
{
    nd_assert(nd_heap_held(h));
    /* Remote frees that emptied pages since the last look (notified, or
       waiting on pages that were not full): those pages retire, and
       their memory joins the pending purges. */
    if (nd_load_relaxed(&h->notified) != NULL)
        nd_heap_drain_notified(h);
    nd_heap_retire_empty_pages(h);
    nd_heap_purge_pass(h, now, false, true);
    nd_heap_gauge_flush_in(h);
}

static nd_hot nd_noinline void nd_heap_collect_in(nd_heap *h, uint64_t now, bool purge_all)
{
    nd_assert(nd_heap_held(h));
    nd_heap_drain_notified(h);
    nd_heap_retire_empty_pages(h);
    nd_heap_maintain_in(h, now, purge_all);
    nd_heap_release_kept(h, now, true);
}

/* ---- adoption and abandonment ------------------------------------------------- */

static nd_hot nd_noinline bool nd_heap_adopt_segment_in(nd_heap *h, nd_segment *s)
{
    nd_assert(nd_heap_held(h));
    int k = nd_heap_kind_of(s);
    nd_seg_queue *list = s->free_mask ? &h->avail[k] : &h->used[k];
    s->owner = h;
    nd_list_push_front(list, s);
    h->purge_pending += (size_t)nd_popcount64(s->purge_mask) << ND_CHUNK_SHIFT;
    /* Hold the segment while its pages are adopted: retiring the last one
       must not release it under our feet. */
    s->used_pages++;
    for (unsigned i = 0; i < s->page_count; i++) {
        nd_page *pg = &s->pages[i];
        if (!pg->in_use)
            continue;
        nd_assert(!pg->kept);   /* its heap retired them before it abandoned the segment */
        nd_page_set_owner(pg, h, h->tid, nd_heap_kind(h));
        nd_heap_queue_back(&h->pages[pg->cls], pg);
        if (pg->cls >= ND_HEAP_CLASSES_FROM)
            h->classes |= ND_HEAP_CLASS_BIT(pg->cls);
        if (pg->used == 0)
            nd_heap_page_retire(h, pg);
    }
    s->used_pages--;
    nd_count_inc(&h->stats.reclaimed_segments);
    if (s->used_pages == 0) {
        nd_list_remove(s->free_mask ? &h->avail[k] : &h->used[k], s);
        nd_heap_seg_release(h, s);
        return false;
    }
    nd_assert2(nd_heap_is_valid(h));
    return true;
}

static nd_hot bool nd_heap_reclaim(nd_heap *h)
{
    nd_assert(nd_heap_held(h));
    if (h->shared)
        return false;
    /* Segments whose blocks were all freed since their thread exited give
       themselves back during adoption; keep going until one stays, so that
       such empty segments do not pile up. */
    bool any = false;
    for (int i = 0; i < 16; i++) {
        nd_segment *s = nd_node_abandoned_pop(h->node, h->bound);
        if (s == NULL)
            break;
        if (nd_heap_checks_moved(h))
            nd_seg_purge_elsewhere(s, false);
        any = true;
        if (nd_heap_adopt_segment_in(h, s))   /* kept: it still holds blocks */
            break;
    }
    return any;
}

void nd_heap_fork_child(nd_heap *h)
{
    /* A notifier holds BUSY from its push until its page is on h->notified
       (nd_heap_notify). One that was cut off by the fork left the page BUSY,
       on the list or not: clear BUSY and make sure the owner hears of it. */
    for (nd_page *pg = h->full.first; pg; pg = pg->next) {
        if (!nd_page_fork_clear_busy(pg))
            continue;
        bool queued = false;
        for (nd_page *q = h->notified; q != NULL; q = q->xnext)
            if (q == pg) {
                queued = true;
                break;
            }
        if (!queued) {
            /* Not counted again: its notifier may have counted it before
               the fork (nd_heap_notify), and a gauge one too high would
               stay so; one too low is taken no further than 0. The list's
               owner is (notified_owners), when the list was empty: its
               notifier had not pushed. */
            if (h->notified == NULL)
                nd_gauge_add(notified_owners, 1);
            pg->xnext = h->notified;
            h->notified = pg;
        }
    }
}

/* No more notifications: full pages disarmed, notified ones forgotten,
   all back on their class queues. */
static nd_hot void nd_heap_unfull_all(nd_heap *h)
{
    for (nd_page *pg = h->full.first; pg; pg = pg->next)
        nd_page_disarm(pg);
    nd_heap_drain_notified(h);
    while (h->full.first) {
        nd_page *pg = h->full.first;
        nd_list_remove(&h->full, pg);
        pg->in_full = 0;
        nd_list_push_front(&h->pages[pg->cls], pg);
    }
}

static nd_hot nd_noinline void nd_heap_abandon_in(nd_heap *h)
{
    nd_assert(nd_heap_held(h));
    nd_heap_unfull_all(h);
    nd_heap_retire_empty_pages(h);   /* kept pages too */
    nd_assert(h->kept_bytes == 0 && h->kept_classes == 0);
    nd_heap_release_kept(h, 0, true);
    /* The free pages' memory goes back now, and the free blocks' of pages
       in use: an abandoned segment's purges wait for no one (they waited
       until a heap adopted it, maybe never). */
    nd_heap_purge_free_blocks(h, true);
    nd_heap_purge_in(h, 0, true);
    for (int k = 0; k < 2; k++) {
        nd_seg_queue *lists[2] = { &h->avail[k], &h->used[k] };
        for (int l = 0; l < 2; l++) {
            while (lists[l]->first) {
                nd_segment *s = lists[l]->first;
                nd_list_remove(lists[l], s);
                nd_assert(s->used_pages != 0);   /* the spare went back above */
                for (unsigned i = 0; i < s->page_count; i++)
                    if (s->pages[i].in_use)
                        nd_page_orphan(&s->pages[i]);
                nd_count_inc(&h->stats.abandoned_segments);
                nd_node_abandon(s);
            }
        }
    }
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++)
        nd_list_init(&h->pages[c]);
    h->spare[0] = h->spare[1] = NULL;
    h->purge_pending = 0;
    nd_heap_gauge_flush_in(h);   /* its pages stay in use, abandoned: counted */
}

size_t nd_heap_sweep_abandoned(nd_heap *h, size_t max)
{
    nd_assert(h->shared && h->avail[0].first == NULL && h->used[0].first == NULL && h->avail[1].first == NULL &&
              h->used[1].first == NULL);
    size_t n = 0;
    nd_segment *s;
    while (n < max && (s = nd_node_abandoned_pop(h->node, h->bound)) != NULL) {
        n++;
        nd_heap_adopt_segment_in(h, s);   /* gives back its empty pages, and itself if none is left in use */
    }
    if (n != 0) {
        nd_assert2(nd_heap_is_valid(h));
        nd_heap_abandon_in(h);   /* the rest purged and abandoned again */
    }
    return n;
}

static nd_noinline size_t nd_heap_leave_in(nd_heap *h, int node)
{
    nd_assert(nd_heap_held(h));
    nd_assert(!h->bound && !h->shared);
    size_t pages = 0;
    for (int k = 0; k < 2; k++) {
        nd_seg_queue *lists[2] = { &h->avail[k], &h->used[k] };
        for (int l = 0; l < 2; l++)
            for (nd_segment *s = lists[l]->first; s; s = s->next)
                pages += s->page_count;
    }
    h->leaving = 1;
    nd_heap_unfull_all(h);
    nd_heap_retire_empty_pages(h);   /* segments left with no page in use go back purged */
    nd_heap_purge_in(h, 0, true);       /* free pages of the others, and the spares */
    for (int k = 0; k < 2; k++)      /* and what huge pages faulted in around them */
        for (nd_segment *s = h->avail[k].first; s; s = s->next)
            nd_seg_purge_free(s, false);
    nd_heap_abandon_in(h);
    /* The segments this heap gave its node's cache lately, kept with their
       memory for reuse by a thread of that node, are purged too. */
    nd_node_purge_cached(h->node, false);
    h->leaving = 0;
    h->node = (int16_t)node;
    h->away = 0;
    nd_assert2(nd_heap_is_valid(h));
    return pages;
}

/* ---- debug validation ---------------------------------------------------------- */

static bool nd_heap_seg_queue_is_valid(const nd_heap *h, const nd_seg_queue *q, int k, bool avail)
{
    size_t n = 0;
    for (const nd_segment *s = q->first; s; s = s->next, n++) {
        if (s->owner != h || (s->free_mask != 0) != avail || s->bound != h->bound || s->node != h->node ||
            nd_heap_kind_of(s) != k || !nd_seg_is_valid(s))
            return false;
        if (s->used_pages == 0 && h->spare[k] != s && !nd_node_reserve_is(s))
            return false;
    }
    return n == q->count;
}

bool nd_heap_is_valid(const nd_heap *h)
{
    /* The gauges held back (heap.h: gauge_pages). */
    if (h->gauge_events >= ND_GAUGE_EVENTS || nd_gauge_out_of_band(h->gauge_active) ||
        (h->shared && (h->gauge_events | h->gauge_classes | (unsigned long)h->gauge_active) != 0))
        return false;
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++)
        if ((h->gauge_pages[c] != 0 && !(h->gauge_classes & ((uint64_t)1 << c))) ||
            h->gauge_pages[c] > (int)h->gauge_events || -h->gauge_pages[c] > (int)h->gauge_events)
            return false;
    size_t kept = 0;
    uint64_t kept_classes = 0;
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        size_t n = 0;
        for (const nd_page *pg = h->pages[c].first; pg != NULL; pg = pg->next, n++) {
            if (pg->kept) {
                const nd_segment *s = nd_seg_base(pg);
                /* A suffix of its queue; no block out or carved (nd_page_is_valid). */
                if ((pg->next != NULL && !pg->next->kept) || h->shared || pg->used != 0 ||
                    (s->unmapped | s->tails) != 0)
                    return false;
                kept += nd_heap_page_size(c);
                kept_classes |= (uint64_t)1 << c;
            }
            uint16_t kw = nd_load_relaxed(&pg->kind_word);   /* (other threads count samples) */
            if (!pg->in_use || pg->cls != c || pg->heap != h || pg->in_full || !nd_page_is_valid(pg) ||
                pg->key != h->tid ||
                nd_kind_word_kind(kw) != nd_page_kind_now(nd_heap_kind(h), nd_kind_word_sampled(kw)) ||
                (!nd_heap_reserve_serves(c) && nd_node_reserve_is(nd_seg_base(pg))) ||
                (c >= ND_HEAP_CLASSES_FROM && !(nd_load_relaxed(&h->classes) & ND_HEAP_CLASS_BIT(c))))   /* (its owner's cache sets bits: tcache.c) */
                return false;
        }
        if (n != h->pages[c].count)
            return false;
    }
    if (kept != h->kept_bytes || kept_classes != h->kept_classes || kept > ND_HEAP_KEPT_MAX)
        return false;
    size_t n = 0;
    for (const nd_page *pg = h->full.first; pg != NULL; pg = pg->next, n++)
        if (!pg->in_use || pg->heap != h || !pg->in_full || pg->kept ||
            (pg->cls >= ND_HEAP_CLASSES_FROM && !(h->classes & ND_HEAP_CLASS_BIT(pg->cls))))
            return false;
    if (n != h->full.count)
        return false;
    size_t pending = 0;
    for (int k = 0; k < 2; k++) {
        if (!nd_heap_seg_queue_is_valid(h, &h->avail[k], k, true) || !nd_heap_seg_queue_is_valid(h, &h->used[k], k, false))
            return false;
        const nd_seg_queue *lists[2] = { &h->avail[k], &h->used[k] };
        for (int l = 0; l < 2; l++)
            for (const nd_segment *s = lists[l]->first; s; s = s->next)
                pending += (size_t)nd_popcount64(s->purge_mask) << ND_CHUNK_SHIFT;
    }
    if (h->pending_max != 0 && (h->pending_max <= ND_PURGE_PENDING_MAX || h->pending_max > ND_PURGE_PENDING_TOP))
        return false;
    return pending == h->purge_pending;
}

/* ---- the owner's calls: each public function above, in its bracket -------- */

nd_hot void nd_heap_abandon(nd_heap *h)
{
    ND_HEAP_CALL(h);
    nd_heap_abandon_in(h);
}

nd_hot bool nd_heap_adopt_segment(nd_heap *h, nd_segment *s)
{
    ND_HEAP_CALL(h);
    return nd_heap_adopt_segment_in(h, s);
}

nd_hot void nd_heap_collect(nd_heap *h, uint64_t now, bool purge_all)
{
    ND_HEAP_CALL(h);
    nd_heap_collect_in(h, now, purge_all);
}

nd_hot void nd_heap_free_local(nd_heap *h, nd_page *pg, void *p)
{
    ND_HEAP_CALL(h);
    nd_heap_free_local_in(h, pg, p);
}

nd_hot void nd_heap_idle_purge(nd_heap *h, uint64_t now)
{
    ND_HEAP_CALL(h);
    nd_heap_idle_purge_in(h, now);
}

size_t nd_heap_leave(nd_heap *h, int node)
{
    ND_HEAP_CALL(h);
    return nd_heap_leave_in(h, node);
}

nd_hot void nd_heap_maintain(nd_heap *h, uint64_t now, bool force)
{
    ND_HEAP_CALL(h);
    nd_heap_maintain_in(h, now, force);
}

nd_hot void nd_heap_purge(nd_heap *h, uint64_t now, bool all)
{
    ND_HEAP_CALL(h);
    nd_heap_purge_in(h, now, all);
}

size_t nd_heap_release(nd_heap *h)
{
    ND_HEAP_CALL(h);
    return nd_heap_release_in(h);
}

void nd_heap_retire_kept(nd_heap *h)
{
    ND_HEAP_CALL(h);
    nd_heap_retire_kept_in(h);
}

nd_hot void nd_heap_return_blocks(nd_heap *h, nd_page *pg, nd_block *head, nd_block *tail, uint32_t count)
{
    ND_HEAP_CALL(h);
    nd_heap_return_blocks_in(h, pg, head, tail, count);
}

nd_hot void nd_heap_return_all(nd_heap *h, nd_page *pg, uint32_t count)
{
    ND_HEAP_CALL(h);
    nd_assert(nd_heap_drops_emptied(h, pg));
    if (nd_unlikely(count != pg->used))
        nd_misuse("free", "double free or corruption (a page's blocks back, but not as many as out)", pg->start);
    pg->used = 0;
    nd_heap_page_drop(h, pg);
}

nd_hot size_t nd_heap_take_blocks(nd_heap *h, unsigned cls, void **out, size_t n, size_t max)
{
    ND_HEAP_CALL(h);
    return nd_heap_take_blocks_in(h, cls, out, n, max);
}

nd_hot size_t nd_heap_take_free(nd_heap *h, unsigned cls, void **out, size_t n)
{
    ND_HEAP_CALL(h);
    return nd_heap_take_free_in(h, cls, out, n);
}

nd_hot void *nd_heap_take_free_aligned(nd_heap *h, unsigned cls, uintptr_t align)
{
    ND_HEAP_CALL(h);
    return nd_heap_take_free_aligned_in(h, cls, align);
}

nd_hot void nd_heap_trim(nd_heap *h, uint64_t now)
{
    ND_HEAP_CALL(h);
    nd_heap_trim_in(h, now);
}

nd_hot bool nd_heap_would_fault(nd_heap *h, unsigned cls)
{
    ND_HEAP_CALL(h);
    return nd_heap_would_fault_in(h, cls);
}

nd_hot void nd_heap_gauge_flush(nd_heap *h)
{
    ND_HEAP_CALL(h);
    nd_heap_gauge_flush_in(h);
}
