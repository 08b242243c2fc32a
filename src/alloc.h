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
    long lines = nd_opt_values[ND_OPT_prefetch];
    if (nd_unlikely(lines != 0)) {
        const char *next = cur[1];
        if (next != NULL)
            for (long i = 0; i < lines; i++)
                __builtin_prefetch(next + i * ND_CACHE_LINE, 1, 3);
    }
}

nd_inline void *nd_malloc_fast(nd_heap *h, size_t size)
{
    if (nd_likely(size <= ND_MEDIUM_MAX)) {
        nd_bin *b = &h->bins[nd_class_of(size)];
        void **cur = b->cur;
        uint64_t n = nd_load_relaxed(&b->nreq) + 1;
        if (nd_likely(cur != b->empty && (n & ND_TICK_MASK) != 0)) {
            void *p = *cur;
            b->cur = cur + 1;
            nd_store_relaxed(&b->nreq, n);
            nd_prefetch_next(cur);
            return p;
        }
    }
    return nd_malloc_slow(h, size);
}

nd_inline void *nd_malloc_node_fast(size_t size, int node)
{
    if (nd_likely((unsigned)node < ND_MAX_NODES && size <= ND_MEDIUM_MAX)) {
        nd_heap *h = nd_tls_heap->node_heaps[node];
        nd_bin *b = &h->bins[nd_class_of(size)];
        void **cur = b->cur;
        uint64_t n = nd_load_relaxed(&b->nreq) + 1;
        if (nd_likely(cur != b->empty && (n & ND_TICK_MASK) != 0)) {
            void *p = *cur;
            b->cur = cur + 1;
            nd_store_relaxed(&b->nreq, n);
            nd_prefetch_next(cur);
            return p;
        }
    }
    return nd_malloc_node_slow(size, node);
}

nd_inline void nd_free_fast(void *p)
{
    uintptr_t a = (uintptr_t)p, idx = a >> ND_SEG_SHIFT;
    if (nd_unlikely(idx >= ND_SEGMAP_SIZE || nd_load_relaxed(&nd_segmap[idx]) != 1)) {
        nd_free_special(p);
        return;
    }
    nd_segment *s = (nd_segment *)(a & ~(uintptr_t)ND_SEG_MASK);
    nd_page *pg = nd_seg_page_of(s, p);
    if (nd_unlikely(nd_load_relaxed(&pg->key) != nd_tid())) {
        nd_free_slow(s, pg, p);
        return;
    }
    nd_bin *b = pg->bin;
    void **cur = b->cur;
    if (nd_unlikely(cur == b->low || *cur == p)) {   /* full, or freed twice in a row */
        nd_free_slow(s, pg, p);
        return;
    }
    *--cur = p;
    b->cur = cur;
    nd_stat_inc(&b->nfree);
}

#endif /* ND_ALLOC_H */
