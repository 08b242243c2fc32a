/*
 * free.c - the free slow path: blocks owned by another thread (remote free),
 * full thread caches, large and huge blocks, and pointers that are not
 * nodal's. Also free_sized/free_aligned_sized.
 *
 * Checks that always run (they cost nothing on the fast path):
 *  - a pointer outside every nodal segment            -> "invalid pointer", abort
 *  - a segment header whose cookie does not match     -> "invalid pointer", abort
 *  - a pointer into a page with no block in use       -> "double free or invalid pointer", abort
 *  - freeing again the block this thread freed last, with no malloc of
 *    its size class in between                       -> "double free", abort
 *  - on the slow paths: a pointer that is not the start of a block -> abort
 * check=2 adds: every free validated (block start, not already on the page's
 * free list), thread caches off, freed memory filled with 0xdf.
 */
#include "alloc.h"

#include <errno.h>
#include "node.h"
#include "page.h"

static nd_cold void nd_free_fatal(const char *why, const void *p)
{
    nd_fatal("free(): %s: %p", why, p);
}

static void nd_count_huge_free(size_t bytes)
{
    nd_heap *me = nd_tls_heap;
    if (me->kind == ND_HEAP_NORMAL) {
        nd_stat_inc(&me->stats.huge_frees);
        nd_stat_add(&me->stats.huge_bytes_freed, bytes);
    }
}

void nd_free_special(void *p)
{
    if (p == NULL)
        return;
    nd_segment *s = nd_seg_of(p);
    if (s == NULL || !nd_seg_is_valid(s))
        nd_free_fatal("invalid pointer (not allocated by nodal)", p);
    /* Only huge blocks aligned past the first 4 MiB land here. */
    if (s->kind != ND_SEG_HUGE || s->pages[0].start != (uint8_t *)p)
        nd_free_fatal("invalid pointer (not the start of a block)", p);
    nd_count_huge_free(nd_huge_usable(s, p));
    nd_huge_free(s);
}

/* Remote free: p belongs to a page another heap owns (or nobody does). */
static void nd_free_remote(nd_segment *s, nd_page *pg, void *p, uintptr_t key)
{
    if (nd_unlikely(!nd_page_is_block_start(pg, p)))
        nd_free_fatal(nd_load_relaxed(&pg->in_use) ? "invalid pointer (not the start of a block)"
                                                   : "double free or invalid pointer (page not in use)", p);
    nd_page_free_remote(s, pg, p);
    nd_heap_count_remote_free(pg->cls);
    /* A free into a segment abandoned by an exited thread: adopt it, so that
       the rest of its blocks are freed locally and its pages reused. */
    if (key == ND_KEY_NONE && nd_load_relaxed(&s->abandoned) && nd_opt(ND_OPT_reclaim_on_free)) {
        nd_heap *h = nd_heap_of_kind(s);
        if (h != NULL && nd_node_abandoned_claim(s))
            nd_heap_adopt_segment(h, s);
    }
}

void nd_free_slow(nd_segment *s, nd_page *pg, void *p)
{
    if (nd_unlikely(!nd_seg_is_valid(s)))
        nd_free_fatal("invalid pointer (not allocated by nodal)", p);
    uintptr_t key = nd_load_relaxed(&pg->key);
    uintptr_t me = nd_tid();

    if (s->kind == ND_SEG_HUGE) {
        if (pg->start != (uint8_t *)p || !pg->in_use)
            nd_free_fatal("invalid pointer (not the start of a block)", p);
        nd_count_huge_free(nd_huge_usable(s, p));
        nd_huge_free(s);
        return;
    }
    if (s->kind == ND_SEG_LARGE) {
        if (!nd_load_relaxed(&pg->in_use))
            nd_free_fatal("double free or invalid pointer (block not in use)", p);
        if (pg->start != (uint8_t *)p)
            nd_free_fatal("invalid pointer (not the start of a block)", p);
        nd_large_free(s, pg);
        return;
    }
    if (s->kind != ND_SEG_SMALL && s->kind != ND_SEG_MEDIUM)
        nd_free_fatal("double free or invalid pointer (segment not in use)", p);

    if ((key & ~ND_KEY_COLD) != me || me == 0) {
        nd_free_remote(s, pg, p, key);
        return;
    }
    if (key & ND_KEY_COLD) {   /* our page, not the hot one: straight back to it */
        nd_page_free_local(pg->heap, pg, p);
        return;
    }
    /* Our own block: the cache is full (or has no slots), or p was just freed. */
    nd_bin *b = pg->bin;
    if (b->last_free == p || (b->cur != b->empty && *b->cur == p))
        nd_free_fatal("double free", p);
    nd_heap *h = pg->heap;
    nd_bin_info *bi = &h->binfo[pg->cls];
    if (bi->cap_max == 0) {
        nd_page_free_local(h, pg, p);
        return;
    }
    if (nd_unlikely(!nd_page_is_block_start(pg, p)))
        nd_free_fatal("invalid pointer (not the start of a block)", p);
    if (bi->filled && bi->cap < bi->cap_max) {
        /* Dry, then full again: the working set does not fit. Grow. */
        uint32_t cap = bi->cap * 2 < bi->cap_max ? bi->cap * 2 : bi->cap_max;
        b->low = b->empty - cap;
        bi->cap = cap;
    } else {
        nd_bin_flush(h, pg->cls, (bi->cap + 1) / 2);
    }
    bi->filled = 0;
    *--b->cur = p;
    nd_heap_tick(h);
}

void nd_free_sized(void *p, size_t size)
{
    (void)size;
    nd_free_fast(p);
}

void nd_free_aligned_sized(void *p, size_t alignment, size_t size)
{
    (void)alignment;
    (void)size;
    nd_free_fast(p);
}
