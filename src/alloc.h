/*
 * alloc.h - the fast paths: static inline malloc, free and node-targeted
 * malloc. Each is a few loads, one compare and one store on the thread
 * cache; anything else (first call in a thread, empty or full cache, remote
 * or large blocks, bad pointers) folds into one unlikely branch that calls a
 * slow path in alloc.c / free.c with the same arguments.
 *
 * Every ND_TICK_MASK+1 requests of a class also take the slow path, which
 * then runs the heap's periodic maintenance (thread-cache GC, purging): a
 * thread that only ever hits its cache still gives memory back.
 *
 * One malloc, top to bottom:
 *   nd_malloc_fast: heap = TLS word; bin = &heap->bins[class(size)];
 *                   return *bin->cur++            (bin->cur != bin->empty)
 *   else nd_malloc_slow -> nd_heap_malloc (heap.c) -> nd_bin_fill (page.c)
 *        -> nd_page_new -> nd_node_seg_get (node.c) -> nd_seg_map (segment.c)
 *        -> nd_os_map_aligned (os.c) -> mmap
 */
#ifndef ND_ALLOC_H
#define ND_ALLOC_H

#include <stddef.h>
#include <stdint.h>
#include "config.h"
#include "heap.h"
#include "options.h"
#include "segment.h"

void *nd_malloc_slow(nd_heap *h, size_t size) nd_hidden;
void *nd_malloc_node_slow(size_t size, int node) nd_hidden;
void  nd_free_slow(nd_segment *s, nd_page *pg, void *p) nd_hidden;
void  nd_free_special(void *p) nd_hidden;   /* NULL, huge-aligned, or not nodal's */

/* Slow-path entry points shared by the prefixed and the standard names. */
void  *nd_calloc(size_t count, size_t size) nd_hidden;
void  *nd_realloc(void *p, size_t size) nd_hidden;
void  *nd_reallocarray(void *p, size_t count, size_t size) nd_hidden;
int    nd_posix_memalign(void **out, size_t alignment, size_t size) nd_hidden;
void  *nd_aligned_alloc(size_t alignment, size_t size) nd_hidden;
void  *nd_memalign(size_t alignment, size_t size) nd_hidden;
void  *nd_valloc(size_t size) nd_hidden;
void  *nd_pvalloc(size_t size) nd_hidden;
size_t nd_usable_size(const void *p) nd_hidden;
void   nd_free_sized(void *p, size_t size) nd_hidden;
void   nd_free_aligned_sized(void *p, size_t alignment, size_t size) nd_hidden;
void  *nd_realloc_node(void *p, size_t size, int node) nd_hidden;
void  *nd_malloc_node_aligned(size_t alignment, size_t size, int node) nd_hidden;

nd_inline void nd_prefetch_next(void **cur)
{
    if (nd_unlikely(nd_prefetch_lines != 0)) {
        const char *next = cur[1];
        if (next != NULL)
            for (unsigned i = 0; i < nd_prefetch_lines; i++)
                __builtin_prefetch(next + i * ND_CACHE_LINE, 1, 3);
    }
}

/* Pops a block from bin c of h; the caller takes its slow path when the bin
   is empty or its tick ran out. */
#define ND_BIN_POP_OR(h, c, slow)                                              \
    do {                                                                       \
        nd_bin *b_ = &(h)->bins[(c)];                                          \
        void **cur_ = b_->cur;                                                 \
        if (nd_unlikely(cur_ == b_->empty) || nd_unlikely(--b_->tick == 0))    \
            return (slow);                                                     \
        b_->cur = cur_ + 1;                                                    \
        b_->last_free = NULL;                                                  \
        nd_prefetch_next(cur_);                                                \
        return *cur_;                                                          \
    } while (0)

/* The size class of a request the thread caches serve; false for larger. */
nd_inline bool nd_class_fast(size_t size, size_t *c)
{
    if (nd_likely(size <= ND_LOOKUP_MAX))
        *c = nd_class_lookup[(size + ND_QUANTUM - 1) / ND_QUANTUM];
    else if (size <= ND_MEDIUM_MAX)
        *c = nd_class_of(size);
    else
        return false;
    return true;
}

nd_inline void *nd_malloc_fast(nd_heap *h, size_t size)
{
    size_t c;
    if (nd_unlikely(!nd_class_fast(size, &c)))
        return nd_malloc_slow(h, size);
    ND_BIN_POP_OR(h, c, nd_malloc_slow(h, size));
}

nd_inline void *nd_malloc_node_fast(size_t size, int node)
{
    if (nd_unlikely((unsigned)node >= ND_MAX_NODES))
        return nd_malloc_node_slow(size, node);
    nd_heap *h = nd_tls_heap->node_heaps[node];
    size_t c;
    if (nd_unlikely(!nd_class_fast(size, &c)))
        return nd_malloc_node_slow(size, node);
    ND_BIN_POP_OR(h, c, nd_malloc_node_slow(size, node));
}

nd_inline void nd_free_fast(void *p)
{
    uintptr_t a = (uintptr_t)p;
    /* The map index is masked, not bounds-checked: an address beyond 2^47
       either aliases no segment (slow path: "invalid pointer") or fails the
       segment's cookie check on the slow path. */
    if (nd_unlikely(nd_load_relaxed(&nd_segmap[(a >> ND_SEG_SHIFT) & (ND_SEGMAP_SIZE - 1)]) != 1)) {
        nd_free_special(p);
        return;
    }
    nd_segment *s = (nd_segment *)(a & ~(uintptr_t)ND_SEG_MASK);
    nd_page *pg = nd_seg_page_of(s, p);
    uintptr_t key = nd_load_relaxed(&pg->key), me = nd_tid();
    if (nd_unlikely(key != me)) {
        /* One of our pages that is not hot: the block goes straight back to
           it, unless that is the page's last block out or it sits on the
           full queue (both need the page queues) or checks are on. */
        if (key == (me | ND_KEY_COLD) && me != 0 && pg->used > 1 && !pg->in_full &&
            nd_likely(!nd_check_frees)) {
            nd_block *blk = p;
            blk->next = pg->free;
            pg->free = blk;
            pg->used--;
            nd_stat_inc(&pg->bin->page_frees);
            return;
        }
        nd_free_slow(s, pg, p);
        return;
    }
    nd_bin *b = pg->bin;
    void **cur = b->cur;
    /* Full, or p freed twice in a row: the bin remembers its last free until
       the next malloc of the class (cheaper than reading the cache's top). */
    if (nd_unlikely(cur == b->low || b->last_free == p)) {
        nd_free_slow(s, pg, p);
        return;
    }
    *--cur = p;
    b->cur = cur;
    b->last_free = p;
}

#endif /* ND_ALLOC_H */
