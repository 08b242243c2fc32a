/*
 * free.c - the free slow path: blocks owned by another thread (remote
 * free), full thread caches, cold pages with checks on, large and huge
 * blocks, and pointers that are not nodal's; free_sized and
 * free_aligned_sized; the public nodal_free names.
 *
 * Checks that always run:
 *  - a pointer outside every nodal segment            -> "invalid pointer", abort
 *  - a segment whose header was overwritten           -> "heap corruption", abort
 *  - a pointer into a page with no block in use       -> "double free or invalid pointer", abort
 *  - a block that carries the freed-block mark (page.h): freed already,
 *    by any thread, however long ago                 -> "double free", abort
 *  - a pointer that is not the start of a carved block (an interior
 *    pointer, a segment header, a block never handed out)
 *                                                    -> "invalid pointer", abort
 * check=2 adds: thread caches off, so every free takes the slow path and is
 * checked in full; freed memory filled with 0xdf past its link and mark.
 */
#include "free.h"

#include <errno.h>
#include "huge.h"
#include "large.h"
#include "msg.h"
#include "node.h"

/* The segment map says a segment starts here, but its header is not one
   nodal wrote (or no longer): memory was overwritten. */
static nd_cold void nd_free_bad_header(const void *p, const nd_segment *s)
{
    nd_fatal("free(): heap corruption: the header of the segment at %p, which holds %p, is overwritten "
             "(an overflow from the memory before it?)", (const void *)s, p);
}

void nd_free_special(void *p)
{
    if (p == NULL)
        return;
    nd_segment *s = nd_seg_of(p);
    if (s == NULL)
        nd_misuse("free", "invalid pointer (not allocated by nodal)", p);
    if (!nd_seg_cookie_ok(s))
        nd_free_bad_header(p, s);
    /* Only huge blocks aligned past the first 4 MiB land here. */
    if (s->kind != ND_SEG_HUGE || s->pages[0].start != (uint8_t *)p)
        nd_misuse("free", "invalid pointer (not the start of a block)", p);
    nd_thread_count_free(true, nd_huge_usable(s, p));
    nd_huge_free(s);
}

/* Remote free: p belongs to a page another heap owns (or nobody does).
   If this thread has a thread cache for the same kind of memory, the block
   waits there like one of its own: no atomic now, reused here while it is
   still in this core's cache, and given back to its page with the others
   of that page as one chain when the cache flushes. Otherwise (or when the
   page was abandoned by an exited thread) it goes onto the page's remote
   list at once. */
static void nd_free_remote(void *p, nd_segment *s, nd_page *pg, uintptr_t key)
{
    if (nd_unlikely(nd_block_is_marked(p)))
        nd_misuse("free", "double free", p);
    unsigned cls = pg->cls;
    if (nd_likely(key != ND_KEY_NONE)) {
        /* The common case inline: a live thread with a cache for this kind
           of memory (the empty tcache has tid 0) and room in the bin. */
        nd_thread *t = nd_tls_thread;
        nd_tcache *tc = s->bound ? t->node_tc[s->node] : t->plain;
        if (nd_likely(tc->heap.tid == nd_tid() && tc->heap.tid != 0 && tc->heap.node == s->node)) {
            nd_bin *b = &tc->bins[cls];
            if (nd_likely(b->cur != b->low)) {
                *--b->cur = p;
                nd_block_mark(p);
                nd_count_inc(&tc->heap.cstats[cls].remote_frees);
                return;
            }
        }
        tc = nd_thread_cache_for_free(s, true);
        if (tc != NULL && tc->binfo[cls].cap_max != 0) {
            nd_thread_count_remote_free(cls, false);
            nd_tcache_push(tc, cls, p);
            return;
        }
    }
    nd_thread_count_remote_free(cls, true);
    nd_heap_free_remote(pg, p);
    /* A free into a segment abandoned by an exited thread: adopt it, so that
       the rest of its blocks are freed locally and its pages reused. */
    if (key == ND_KEY_NONE && nd_load_relaxed(&s->abandoned) && nd_opt(ND_OPT_reclaim_on_free)) {
        nd_tcache *tc = nd_thread_tcache_for(s);
        if (tc != NULL && nd_node_abandoned_claim(s))
            nd_heap_adopt_segment(&tc->heap, s);
    }
}

void nd_free_slow(void *p, nd_segment *s, nd_page *pg)
{
    if (nd_unlikely(!nd_seg_cookie_ok(s)))
        nd_free_bad_header(p, s);
    if (s->kind == ND_SEG_HUGE) {
        if (pg->start != (uint8_t *)p || !pg->in_use)
            nd_misuse("free", "invalid pointer (not the start of a block)", p);
        nd_thread_count_free(true, nd_huge_usable(s, p));
        nd_huge_free(s);
        return;
    }
    if (s->kind == ND_SEG_LARGE) {
        nd_thread_count_free(false, nd_large_free(s, pg, p));
        return;
    }
    if (s->kind != ND_SEG_SMALL && s->kind != ND_SEG_MEDIUM)
        nd_misuse("free", "double free or invalid pointer (segment not in use)", p);
    /* Every free that reaches here is checked in full (a page not in use
       has no span). */
    if (nd_unlikely(!nd_page_block_ok_shared(pg, p)))
        nd_misuse("free", nd_load_relaxed(&pg->in_use) ? "invalid pointer (not the start of a block)"
                                                       : "double free or invalid pointer (page not in use)", p);
    uintptr_t key = nd_load_relaxed(&pg->key);
    uintptr_t tid = nd_tid();
    if ((key & ~ND_KEY_COLD) != tid || tid == 0) {
        nd_free_remote(p, s, pg, key);
        return;
    }
    /* Our own block. The mark says it is free already. */
    if (nd_unlikely(nd_block_is_marked(p)))
        nd_misuse("free", "double free", p);
    nd_heap *h = pg->heap;
    nd_tcache *tc = nd_tcache_of_heap(h);
    if ((key & ND_KEY_COLD) || tc->binfo[pg->cls].cap_max == 0) {
        /* A page that is not hot (or a class without a cache, or checks on):
           straight back to the page. */
        nd_block_mark(p);
        if (nd_unlikely(nd_opt(ND_OPT_check) >= 2))
            nd_page_junk(pg, p);
        nd_heap_free_local(h, pg, p);
        return;
    }
    nd_tcache_push(tc, pg->cls, p);
    nd_thread_tick(tc);
}

/* ---- public prefixed names ------------------------------------------------- */

nd_public void nodal_free(void *p) { nd_free_fast(p); }
nd_public void nodal_free_sized(void *p, size_t size) { nd_free_sized(p, size); }
nd_public void nodal_free_aligned_sized(void *p, size_t alignment, size_t size)
{
    nd_free_aligned_sized(p, alignment, size);
}
