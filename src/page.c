/*
 * page.c - pages: carving, free lists, remote frees and their notification
 * (protocol in page.h), page queues, and the thread-cache fill/flush that is
 * nodal's malloc slow path.
 *
 * Everything here runs on the owner thread of the heap it is given (or under
 * a shared heap's lock), except nd_page_free_remote, which any thread calls.
 */
#include "page.h"

#include <errno.h>
#include <string.h>
#include "node.h"
#include "options.h"

size_t nd_page_gauge[ND_CLASS_COUNT];

/* ---- queues and lists --------------------------------------------------- */

void nd_pq_push(nd_page_queue *q, nd_page *pg)
{
    pg->prev = NULL;
    pg->next = q->first;
    if (q->first)
        q->first->prev = pg;
    else
        q->last = pg;
    q->first = pg;
    q->count++;
}

void nd_pq_push_back(nd_page_queue *q, nd_page *pg)
{
    pg->next = NULL;
    pg->prev = q->last;
    if (q->last)
        q->last->next = pg;
    else
        q->first = pg;
    q->last = pg;
    q->count++;
}

void nd_pq_remove(nd_page_queue *q, nd_page *pg)
{
    if (pg->prev)
        pg->prev->next = pg->next;
    else
        q->first = pg->next;
    if (pg->next)
        pg->next->prev = pg->prev;
    else
        q->last = pg->prev;
    pg->next = pg->prev = NULL;
    q->count--;
}

void nd_seglist_push(nd_segment **head, nd_segment *s)
{
    s->prev = NULL;
    s->next = *head;
    if (*head)
        (*head)->prev = s;
    *head = s;
}

void nd_seglist_remove(nd_segment **head, nd_segment *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        *head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->next = s->prev = NULL;
}

static inline nd_segment *nd_seg_of_page(nd_page *pg)
{
    return (nd_segment *)((uintptr_t)pg & ~(uintptr_t)ND_SEG_MASK);
}

static inline int nd_seg_list_index(const nd_segment *s) { return s->kind == ND_SEG_SMALL ? 0 : 1; }

/* ---- remote frees -------------------------------------------------------- */

void nd_page_free_remote(nd_segment *s, nd_page *pg, void *p)
{
    (void)s;
    nd_block *b = p;
    uintptr_t old = nd_load_relaxed(&pg->xfree), desired;
    do {
        /* The block already heads the list: freed twice in a row. Pushing it
           again would close a cycle that the owner would walk forever. */
        if (nd_unlikely((old & ~ND_XSTATE_MASK) == (uintptr_t)b))
            nd_fatal("free(): double free: %p", p);
        b->next = (nd_block *)(old & ~ND_XSTATE_MASK);
        uintptr_t st = old & ND_XSTATE_MASK;
        desired = (uintptr_t)b | (st == ND_XSTATE_NOTIFY ? ND_XSTATE_BUSY : st);
    } while (!nd_cas_weak_acq_rel(&pg->xfree, &old, desired));

    if ((old & ND_XSTATE_MASK) != ND_XSTATE_NOTIFY)
        return;
    /* We took NOTIFY -> BUSY: tell the owner, then clear BUSY. The owner
       cannot go away meanwhile: it waits for BUSY to clear first. */
    nd_heap *h = nd_load_acquire(&pg->heap);
    nd_page *top = nd_load_relaxed(&h->xpages);
    do {
        pg->xnext = top;
    } while (!nd_cas_weak_acq_rel(&h->xpages, &top, pg));
    uintptr_t cur = nd_load_relaxed(&pg->xfree);
    while (!nd_cas_weak_acq_rel(&pg->xfree, &cur, cur & ~ND_XSTATE_MASK))
        ;
}

void nd_page_collect(nd_page *pg)
{
    uintptr_t x = nd_load_relaxed(&pg->xfree);
    if ((x & ~ND_XSTATE_MASK) == 0)
        return;
    while (!nd_cas_weak_acq_rel(&pg->xfree, &x, x & ND_XSTATE_MASK))
        ;
    nd_block *list = (nd_block *)(x & ~ND_XSTATE_MASK);
    if (list == NULL)
        return;
    /* The list can hold at most the blocks out of the page. A longer one,
       or a cycle, means a block was freed twice by other threads (p, q, p):
       stop at the bound rather than walk a cycle forever. */
    uint32_t n = 1;
    nd_block *tail = list;
    while (tail->next != NULL) {
        if (nd_unlikely(n >= pg->used))
            nd_fatal("free(): double free: %p (a block of the page at %p freed twice by other threads)",
                     (void *)tail->next, (void *)pg->start);
        tail = tail->next;
        n++;
    }
    if (nd_unlikely(n > pg->used))
        nd_fatal("free(): double free: %p (a block of the page at %p freed twice by other threads)",
                 (void *)list, (void *)pg->start);
    tail->next = pg->free;
    pg->free = list;
    pg->used -= n;
}

/* Waits out a notifier in flight; returns true if the page was armed (and is
   now disarmed), false if it was not armed (it may then be on xpages). */
static bool nd_page_disarm_was_armed(nd_page *pg)
{
    for (;;) {
        uintptr_t x = nd_load_acquire(&pg->xfree);
        uintptr_t st = x & ND_XSTATE_MASK;
        if (st == ND_XSTATE_BUSY) {
            nd_os_yield();
            continue;
        }
        if (st != ND_XSTATE_NOTIFY)
            return false;
        if (nd_cas_weak_acq_rel(&pg->xfree, &x, x & ~ND_XSTATE_MASK))
            return true;
    }
}

void nd_page_disarm(nd_page *pg) { (void)nd_page_disarm_was_armed(pg); }

/* Arms notification for a page going on the full queue. False if remote
   frees are already waiting (then the page is not full after all). */
static bool nd_page_arm(nd_page *pg)
{
    for (;;) {
        uintptr_t x = nd_load_acquire(&pg->xfree);
        if ((x & ~ND_XSTATE_MASK) != 0)
            return false;
        uintptr_t st = x & ND_XSTATE_MASK;
        if (st == ND_XSTATE_BUSY) {     /* last cycle's notifier still finishing */
            nd_os_yield();
            continue;
        }
        if (st == ND_XSTATE_NOTIFY)
            return true;
        if (nd_cas_weak_acq_rel(&pg->xfree, &x, ND_XSTATE_NOTIFY))
            return true;
    }
}

void nd_heap_drain_xpages(nd_heap *h)
{
    nd_page *list = nd_exchange_acq_rel(&h->xpages, (nd_page *)NULL);
    while (list != NULL) {
        nd_page *pg = list;
        list = pg->xnext;
        pg->xnext = NULL;
        if (pg->in_full && pg->heap == h) {
            nd_pq_remove(&h->full, pg);
            pg->in_full = 0;
            nd_page_collect(pg);
            nd_pq_push(&h->pages[pg->cls], pg);
        }
    }
}

/* A page on the full queue got a block back from its owner: back to its queue. */
static void nd_page_unfull(nd_heap *h, nd_page *pg)
{
    bool was_armed = nd_page_disarm_was_armed(pg);
    nd_pq_remove(&h->full, pg);
    pg->in_full = 0;
    nd_pq_push(&h->pages[pg->cls], pg);
    if (!was_armed)      /* a notifier pushed it on xpages: take it off */
        nd_heap_drain_xpages(h);
}

/* ---- page life ------------------------------------------------------------ */

/* A block is a block start of a small or medium page if its index, found by
   multiply, maps back to it (capacity is read atomically: remote frees ask
   while the owner carves). */
static inline bool nd_page_has_block(const nd_page *pg, const void *p)
{
    size_t idx = nd_page_block_index(pg, p);
    return (const uint8_t *)p >= pg->start && idx < nd_load_relaxed(&pg->capacity) &&
           pg->start + idx * pg->block_size == (const uint8_t *)p;
}

bool nd_page_is_block_start(const nd_page *pg, const void *p)
{
    if (!nd_load_relaxed(&pg->in_use))
        return false;
    if (pg->block_size == 0 || pg->reserved == 1)   /* huge or large: one block */
        return (const uint8_t *)p == pg->start;
    return nd_page_has_block(pg, p);
}

static void nd_page_init(nd_heap *h, nd_segment *s, nd_page *pg, unsigned cls, uint8_t *start, size_t area)
{
    uint32_t bsize = nd_class_size[cls];
    pg->block_size = bsize;
    pg->reserved = (uint32_t)(area / bsize);
    pg->capacity = 0;
    pg->used = 0;
    pg->free = NULL;
    pg->start = start;
    pg->recip = UINT64_MAX / bsize + 1;
    pg->cls = (uint8_t)cls;
    pg->in_full = 0;
    pg->xnext = NULL;
    nd_store_relaxed(&pg->xfree, (uintptr_t)0);
    nd_store_relaxed(&pg->in_use, 1);
    nd_store_release(&pg->heap, h);
    pg->bin = &h->bins[cls];
    (void)s;
    nd_store_release(&pg->key, h->tid | ND_KEY_COLD);
}

/* Makes pg one of the hot pages of its class (frees of its blocks by the
   owner go to the thread cache); the page it displaces goes cold. */
static inline void nd_page_make_hot(nd_heap *h, nd_page *pg)
{
    if (pg->key == h->tid)
        return;
    unsigned c = pg->cls, i = h->hot_next[c];
    nd_page *old = h->hot[c][i];
    if (old != NULL)
        nd_store_release(&old->key, h->tid | ND_KEY_COLD);
    h->hot[c][i] = pg;
    h->hot_next[c] = (uint8_t)((i + 1) % ND_HOT_PAGES);
    nd_store_release(&pg->key, h->tid);
}

static inline void nd_page_make_cold(nd_heap *h, nd_page *pg)
{
    for (int i = 0; i < ND_HOT_PAGES; i++)
        if (h->hot[pg->cls][i] == pg) {
            h->hot[pg->cls][i] = NULL;
            nd_store_release(&pg->key, h->tid | ND_KEY_COLD);
        }
}

static inline bool nd_page_is_hot(const nd_heap *h, const nd_page *pg)
{
    for (int i = 0; i < ND_HOT_PAGES; i++)
        if (h->hot[pg->cls][i] == pg)
            return true;
    return false;
}

/* A fresh page of class cls for h; NULL (errno ENOMEM) if memory ran out. */
static nd_page *nd_page_new(nd_heap *h, unsigned cls)
{
    int k = nd_class_size[cls] <= ND_SMALL_MAX ? 0 : 1;
    for (;;) {
        nd_segment *s = h->avail[k];
        if (s == NULL) {
            /* Adopt what exited threads left behind before asking for more. */
            if (nd_heap_reclaim(h)) {
                if (h->pages[cls].first != NULL)
                    return h->pages[cls].first;
                continue;
            }
            s = nd_node_seg_get(h->node, h->bound, k == 0 ? ND_SEG_SMALL : ND_SEG_MEDIUM);
            if (s == NULL)
                return NULL;
            s->owner = h;
            nd_seglist_push(&h->avail[k], s);
        }
        unsigned i = (unsigned)__builtin_ctzll(s->free_mask);
        size_t area;
        uint8_t *start = nd_seg_page_area(s, i, &area);
        if (nd_seg_commit(s, start, area) != 0) {
            /* The node is full (strict placement). Leave the page free. */
            if (s->used_pages == 0) {
                nd_seglist_remove(&h->avail[k], s);
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
            s->purge_mask &= ~spared;
            size_t bytes = (size_t)nd_popcount64(spared) << ND_CHUNK_SHIFT;
            h->purge_pending = h->purge_pending > bytes ? h->purge_pending - bytes : 0;
        }
        if (s->free_mask == 0) {
            nd_seglist_remove(&h->avail[k], s);
            nd_seglist_push(&h->used[k], s);
        }
        nd_page *pg = &s->pages[i];
        nd_page_init(h, s, pg, cls, start, area);
        nd_add_relaxed(&nd_page_gauge[cls], 1);
        nd_gauge_active((long)area);
        nd_pq_push(&h->pages[cls], pg);
        return pg;
    }
}

void nd_heap_seg_release(nd_heap *h, nd_segment *s)
{
    size_t pending = (size_t)nd_popcount64(s->purge_mask) << ND_CHUNK_SHIFT;
    h->purge_pending = h->purge_pending > pending ? h->purge_pending - pending : 0;
    if (h->spare[0] == s)
        h->spare[0] = NULL;
    if (h->spare[1] == s)
        h->spare[1] = NULL;
    s->owner = NULL;
    nd_node_seg_put(s);   /* may be unmapped: do not touch s after this */
}

void nd_page_retire(nd_heap *h, nd_page *pg)
{
    nd_assert(pg->used == 0 && pg->in_use);
    if (pg->in_full)
        nd_page_unfull(h, pg);
    nd_page_make_cold(h, pg);
    nd_pq_remove(&h->pages[pg->cls], pg);
    /* A notifier may still be clearing BUSY on this page: let it finish
       before the page (and perhaps its segment) changes hands. */
    while ((nd_load_acquire(&pg->xfree) & ND_XSTATE_MASK) == ND_XSTATE_BUSY)
        nd_os_yield();
    nd_store_relaxed(&pg->xfree, (uintptr_t)0);
    nd_store_release(&pg->key, ND_KEY_NONE);
    nd_store_relaxed(&pg->in_use, 0);
    nd_store_relaxed(&pg->heap, (nd_heap *)NULL);
    pg->bin = NULL;
    pg->free = NULL;
    pg->capacity = 0;

    nd_segment *s = nd_seg_of_page(pg);
    size_t area;
    uint8_t *start = nd_seg_page_area(s, pg->index, &area);
    nd_sub_relaxed(&nd_page_gauge[pg->cls], 1);
    nd_gauge_active(-(long)area);
    int k = nd_seg_list_index(s);
    if (s->free_mask == 0) {
        nd_seglist_remove(&h->used[k], s);
        nd_seglist_push(&h->avail[k], s);
    }
    s->free_mask |= (uint64_t)1 << pg->index;
    s->used_pages--;
    if (s->used_pages == 0) {
        if (h->spare[k] == NULL && h->kind == ND_HEAP_NORMAL && nd_opt(ND_OPT_purge_delay) > 0) {
            h->spare[k] = s;
            h->spare_since[k] = h->clock_ms;
            s->purge_epoch = h->epoch;
        } else if (h->spare[k] != s) {
            nd_seglist_remove(&h->avail[k], s);
            nd_heap_seg_release(h, s);
            return;
        }
    }
    uint64_t chunks = nd_seg_chunks(s, start, area) & s->committed;
    if (nd_opt(ND_OPT_purge_delay) == 0) {
        nd_seg_purge(s, chunks);
    } else if (chunks != 0) {
        /* The segment's free pages wait until it has been quiet for the
           delay (the clock as of the last maintenance check: close enough). */
        s->purge_at = h->clock_ms + (uint64_t)nd_opt(ND_OPT_purge_delay);
        s->purge_epoch = h->epoch;
        s->purge_mask |= chunks;
        h->purge_pending += (size_t)nd_popcount64(chunks) << ND_CHUNK_SHIFT;
        if (h->purge_pending > ND_PURGE_PENDING_MAX)
            nd_heap_purge(h, 0, true);
    }
}

void nd_page_adopt(nd_heap *h, nd_page *pg)
{
    pg->in_full = 0;
    pg->xnext = NULL;
    nd_store_release(&pg->heap, h);
    pg->bin = &h->bins[pg->cls];
    nd_store_release(&pg->key, h->tid | ND_KEY_COLD);
    nd_page_collect(pg);
    nd_pq_push_back(&h->pages[pg->cls], pg);
    if (pg->used == 0)
        nd_page_retire(h, pg);
}

/* ---- taking blocks ------------------------------------------------------- */

/* Takes up to n blocks from pg into out; returns how many. */
static size_t nd_page_take(nd_page *pg, void **out, size_t n)
{
    size_t got = 0;
    while (got < n) {
        nd_block *b = pg->free;
        if (b != NULL) {
            pg->free = b->next;
            out[got++] = b;
            continue;
        }
        if (pg->capacity < pg->reserved) {
            size_t k = pg->reserved - pg->capacity;
            if (k > n - got)
                k = n - got;
            uint8_t *p = pg->start + (size_t)pg->capacity * pg->block_size;
            for (size_t i = 0; i < k; i++, p += pg->block_size)
                out[got++] = p;
            nd_store_relaxed(&pg->capacity, pg->capacity + (uint32_t)k);   /* read by remote frees */
            continue;
        }
        if ((nd_load_relaxed(&pg->xfree) & ~ND_XSTATE_MASK) != 0) {
            nd_page_collect(pg);
            if (pg->free != NULL)
                continue;
        }
        break;
    }
    pg->used += (uint32_t)got;
    return got;
}

static bool nd_page_is_exhausted(const nd_page *pg)
{
    return pg->free == NULL && pg->capacity == pg->reserved;
}

/* Fills out[0..n) with blocks of class cls from h's pages; returns how many
   (0 only when memory ran out). */
static size_t nd_heap_take_blocks(nd_heap *h, unsigned cls, void **out, size_t n)
{
    if (nd_load_relaxed(&h->xpages) != NULL)
        nd_heap_drain_xpages(h);
    nd_page_queue *q = &h->pages[cls];
    size_t got = 0;
    while (got < n) {
        nd_page *pg = q->first;
        if (pg == NULL) {
            pg = nd_page_new(h, cls);
            if (pg == NULL)
                break;
        }
        nd_page_make_hot(h, pg);
        got += nd_page_take(pg, out + got, n - got);
        if (nd_page_is_exhausted(pg)) {
            /* Full: park it where remote frees will find it again. */
            nd_pq_remove(q, pg);
            if (nd_page_arm(pg)) {
                pg->in_full = 1;
                nd_pq_push(&h->full, pg);
            } else {
                nd_page_collect(pg);
                nd_pq_push_back(q, pg);
            }
        }
    }
    return got;
}

bool nd_bin_fill(nd_heap *h, unsigned cls)
{
    nd_bin *bin = &h->bins[cls];
    nd_assert2(bin->cur == bin->empty && *bin->empty == NULL);
    size_t want = h->binfo[cls].cap / 2;
    if (want == 0)
        want = 1;
    void **dst = bin->empty - want;
    size_t got = nd_heap_take_blocks(h, cls, dst, want);
    if (got < want && got > 0)
        memmove(bin->empty - got, dst, got * sizeof(void *));
    bin->cur = bin->empty - got;
    h->binfo[cls].low_water = 0;   /* it just ran dry */
    h->binfo[cls].filled = 1;
    nd_cls_stats *cs = &h->cstats[cls];
    nd_stat_inc(&cs->fills);
    nd_stat_add(&cs->fill_blocks, got);
    if (got == 0) {
        errno = ENOMEM;
        return false;
    }
    return true;
}

void *nd_page_alloc_block(nd_heap *h, unsigned cls)
{
    void *p = NULL;
    if (nd_heap_take_blocks(h, cls, &p, 1) == 0) {
        errno = ENOMEM;
        return NULL;
    }
    nd_stat_inc(&h->cstats[cls].direct_allocs);
    return p;
}

/* ---- giving blocks back --------------------------------------------------- */

static nd_cold void nd_page_bad_free(const void *p, const char *why)
{
    nd_fatal("free(): %s: %p", why, p);
}

/* Junk-fills a freed block past its link word (check=2). */
static void nd_junk(nd_page *pg, void *p)
{
    if (pg->block_size > sizeof(nd_block))
        memset((char *)p + sizeof(nd_block), 0xdf, pg->block_size - sizeof(nd_block));
}

/* check=2: p must not already be free in pg; then junk-fill it. */
static void nd_page_check_free(nd_page *pg, void *p)
{
    for (nd_block *b = pg->free; b != NULL; b = b->next)
        if (b == p)
            nd_page_bad_free(p, "double free");
    nd_junk(pg, p);
}

/* Gives `count` blocks, linked head..tail, back to pg; then the page leaves
   the full queue, or retires when it has no block out (except the last page
   of its class, kept to avoid churn). */
static void nd_page_push_chain(nd_heap *h, nd_page *pg, nd_block *head, nd_block *tail, uint32_t count)
{
    if (nd_unlikely(count > pg->used))
        nd_page_bad_free(head, "double free or corruption (more blocks back than out)");
    tail->next = pg->free;
    pg->free = head;
    pg->used -= count;
    if (pg->used == 0) {
        if (pg->in_full || h->pages[pg->cls].count > 1 || h->kind == ND_HEAP_SHARED)
            nd_page_retire(h, pg);
    } else if (pg->in_full) {
        nd_page_unfull(h, pg);
    }
}

void nd_page_free_local(nd_heap *h, nd_page *pg, void *p)
{
    if (nd_unlikely(!pg->in_use || !nd_page_has_block(pg, p)))
        nd_page_bad_free(p, "invalid pointer (not the start of a block)");
    if (nd_unlikely(nd_opt(ND_OPT_check) >= 2))
        nd_page_check_free(pg, p);
    nd_stat_inc(&h->cstats[pg->cls].slow_frees);
    nd_page_push_chain(h, pg, p, p, 1);
}

void nd_bin_flush(nd_heap *h, unsigned cls, size_t n)
{
    nd_bin *bin = &h->bins[cls];
    nd_assert2(bin->low <= bin->cur && bin->cur <= bin->empty && *bin->empty == NULL);
    size_t count = (size_t)(bin->empty - bin->cur);
    if (n > count)
        n = count;
    if (n == 0)
        return;
    bool check2 = nd_opt(ND_OPT_check) >= 2;
    void **oldest = bin->empty - n;
    void **it = oldest, **end = bin->empty;
    while (it < end) {
        /* A run of blocks from one page goes back as one chain. The page's
           geometry is read once: the loop writes into blocks, which the
           compiler would otherwise assume may alias it. */
        void *p = *it;
        nd_segment *s = (nd_segment *)((uintptr_t)p & ~(uintptr_t)ND_SEG_MASK);
        nd_page *pg = nd_seg_page_of(s, p);
        if (nd_unlikely(pg->heap != h || !pg->in_use))
            nd_page_bad_free(p, "invalid pointer (not a block of this thread's heap)");
        const uintptr_t start = (uintptr_t)pg->start;
        const uint64_t recip = pg->recip;
        const uintptr_t bsize = pg->block_size;
        const uintptr_t span = (uintptr_t)pg->capacity * bsize;   /* carved blocks */
        uintptr_t off = (uintptr_t)p - start;
        nd_block *head = NULL, *tail = p;
        uint32_t k = 0;
        for (;;) {
            uintptr_t idx = (uintptr_t)(((__uint128_t)off * recip) >> 64);
            if (nd_unlikely(off >= span || idx * bsize != off))
                nd_page_bad_free(p, "invalid pointer (not the start of a block)");
            if (nd_unlikely(check2))
                nd_page_check_free(pg, p);
            ((nd_block *)p)->next = head;
            head = p;
            k++;
            if (++it == end)
                break;
            p = *it;
            off = (uintptr_t)p - start;
            if (off >= span)
                break;
        }
        nd_page_push_chain(h, pg, head, tail, k);
        nd_assert2(!pg->in_use || nd_page_is_valid(pg));
    }
    memmove(bin->cur + n, bin->cur, (size_t)(oldest - bin->cur) * sizeof(void *));
    bin->cur += n;
    nd_cls_stats *cs = &h->cstats[cls];
    nd_stat_inc(&cs->flushes);
    nd_stat_add(&cs->flush_blocks, n);
}

/* ---- debug validation ------------------------------------------------------ */

bool nd_page_is_valid(const nd_page *pg)
{
    if (!pg->in_use)
        return pg->key == ND_KEY_NONE && pg->used == 0;
    if (pg->capacity > pg->reserved || pg->used > pg->capacity)
        return false;
    if (pg->cls < ND_CLASS_COUNT && pg->block_size != nd_class_size[pg->cls])
        return false;
    size_t free_len = 0;
    for (const nd_block *b = pg->free; b != NULL; b = b->next) {
        if (!nd_page_is_block_start(pg, b) || ++free_len > pg->capacity)
            return false;
    }
    /* Blocks out of the page may still sit on xfree, so <= rather than ==. */
    return pg->used + free_len <= pg->capacity;
}

bool nd_heap_is_valid(const nd_heap *h)
{
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        const nd_bin *b = &h->bins[c];
        if (!(b->low <= b->cur && b->cur <= b->empty) || *b->empty != NULL ||
            (size_t)(b->empty - b->low) != h->binfo[c].cap || h->binfo[c].cap > h->binfo[c].cap_max)
            return false;
        size_t n = 0;
        for (const nd_page *pg = h->pages[c].first; pg != NULL; pg = pg->next, n++) {
            if (!pg->in_use || pg->cls != c || pg->heap != h || pg->in_full || !nd_page_is_valid(pg))
                return false;
            if (h->kind == ND_HEAP_NORMAL && pg->key != (nd_page_is_hot(h, pg) ? h->tid : (h->tid | ND_KEY_COLD)))
                return false;
        }
        if (n != h->pages[c].count)
            return false;
    }
    size_t n = 0;
    for (const nd_page *pg = h->full.first; pg != NULL; pg = pg->next, n++)
        if (!pg->in_use || pg->heap != h || !pg->in_full)
            return false;
    if (n != h->full.count)
        return false;
    for (int k = 0; k < 2; k++) {
        for (const nd_segment *s = h->avail[k]; s; s = s->next)
            if (s->owner != h || s->free_mask == 0 || s->bound != h->bound ||
                (s->used_pages == 0 && h->spare[k] != s))
                return false;
        for (const nd_segment *s = h->used[k]; s; s = s->next)
            if (s->owner != h || s->free_mask != 0 || s->bound != h->bound)
                return false;
    }
    return true;
}
