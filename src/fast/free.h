/*
 * free.h - the free fast path (static inline) and the free entry points
 * below it (free.c). A free of a block of one of the thread's own pages is
 * 36 instructions on x86-64 (gcc 12 -O2): five compares (the segment map
 * word, the page's owner against the thread's id, the block-start check by
 * one multiply, the freed mark, the bin's bottom) and three stores (the
 * block into the bin, the bin's cur, the block's mark); a block of another
 * thread's page of the same kind of memory takes eleven more (the page's
 * kind against the thread's, the bin of its class). Anything else (a large
 * or huge block, another kind of memory, a full cache, a bad pointer) folds
 * into one unlikely branch that calls the slow path with what the fast path
 * already found.
 *
 * One free, top to bottom:
 *   nd_free_fast: segment map word -> segment -> page descriptor;
 *                 page kind == the thread's: *--bin->cur = p   (bin->cur != bin->low)
 *                 (a node-bound kind: the thread's cache for that node)
 *   else nd_free_slow (free.c) -> full cache: nd_tcache_push (grows the
 *                                 bin or flushes half of it)
 *                              -> no cache of that kind, an abandoned page:
 *                                 nd_route_free_foreign (route.c)
 *                              -> large / huge: nd_large_free / nd_huge_free
 */
#ifndef ND_FREE_H
#define ND_FREE_H

#include <stddef.h>
#include <stdint.h>
#include "config.h"
#include "options.h"
#include "page.h"
#include "segment.h"
#include "tcache.h"
#include "thread.h"

void nd_free_slow(void *p, nd_segment *s, nd_page *pg) nd_hidden;   /* p first: it stays in its register */
void nd_free_special(void *p) nd_hidden;   /* NULL, huge-aligned, or not nodal's */
/* p (in segment s, whose header checked out) is not the start of a block
   in use: says which of "not the start of a block", "block not in use" or
   "double free" in one line and aborts; fn names the entry point. */
_Noreturn void nd_block_misuse(const char *fn, const nd_segment *s, const void *p) nd_hidden __attribute__((cold));
/* The segment and page of p, the start of a block in use (realloc,
   malloc_usable_size); misuse (abort) otherwise. */
nd_segment *nd_block_find(const char *fn, const void *p, nd_page **pgp) nd_hidden;

nd_inline void nd_free_fast(void *p)
{
    uintptr_t a = (uintptr_t)p;
    /* The map's word names its window in full (segment.h): any address
       of a window where no segment starts, NULL included, takes the
       special path. */
    if (nd_unlikely(!nd_segmap_is_start(a))) {
        nd_free_special(p);
        return;
    }
    nd_segment *s = nd_seg_base(p);
    nd_page *pg = nd_page_of(s, p);
    /* A block of the thread's own page goes to the bin the page names. Any
       other block of the thread's kind of plain memory goes to its cache
       too, whichever thread's page it is on; memory bound to a node goes
       to the thread's cache for that node (a static full one when it has
       none). Large and huge blocks, pages not in use or abandoned, and
       plain memory of another node have no cache here: the slow path. */
    nd_bin *b;
    if (nd_likely(nd_load_relaxed(&pg->key) == nd_tid())) {
        b = pg->bin;
    } else {
        unsigned kind = nd_load_relaxed(&pg->kind);
        nd_tcache *tc = nd_tls_tc;
        if (nd_unlikely(kind != nd_tls_kind)) {
            if (!nd_kind_is_bound(kind)) {
                nd_free_slow(p, s, pg);
                return;
            }
            tc = nd_tls_thread->node_tc[nd_kind_node(kind)];
        }
        b = &tc->bins[pg->cls];
    }
    /* Not a block start, a block already marked free (a double free), or a
       full bin: the slow path sorts it out. */
    void **cur = b->cur;
    if (nd_unlikely(!nd_page_block_ok_shared(pg, p) || nd_block_is_marked(p) || cur == b->low)) {
        nd_free_slow(p, s, pg);
        return;
    }
    *--cur = p;
    b->cur = cur;
    nd_block_mark(p);
}

/* free_sized / sized delete: a block's page knows its size, so the size is
   not needed to find it; every check of free applies. */
nd_inline void nd_free_sized(void *p, size_t size)
{
    (void)size;
    nd_free_fast(p);
}

nd_inline void nd_free_aligned_sized(void *p, size_t alignment, size_t size)
{
    (void)alignment;
    (void)size;
    nd_free_fast(p);
}

#endif /* ND_FREE_H */
