/*
 * alloc.h - the malloc fast paths (static inline): plain and node-targeted
 * malloc. A plain malloc of up to 1 KiB is 18 instructions and a ret on
 * x86-64 (gcc 12 -O2; the slow paths are tail jumps; 17 with h58a's asms,
 * which addressed the bin as the cache's bins plus the class's offset and
 * decremented the tick in memory, taken out at stop 69: tcache.h):
 * the TLS word, the class table, the bin's cur, empty and tick (two
 * compares, one decrement), then three stores: the bin's cur, its tick and
 * the block's freed mark (cleared). Anything else (first call in a
 * thread, empty cache, a request count that ran out, sizes above the
 * classes) folds into an unlikely branch that jumps to a slow path in
 * alloc.c with the same arguments: nd_malloc_tick when only the tick ran
 * out (follow_thread's look may end it there), nd_malloc_slow otherwise.
 *
 * Every ND_TICK_PERIOD requests of a class also take the slow path, which
 * then runs the thread's periodic maintenance (thread-cache GC, purging):
 * a thread that only ever hits its cache still gives memory back.
 *
 * One malloc, top to bottom:
 *   nd_malloc_fast: tcache = TLS word; bin = &tcache->bins[class(size)];
 *                   return *bin->cur++            (bin->cur != bin->empty)
 *   else nd_malloc_slow (alloc.c) -> nd_route_malloc (route.c)
 *        -> nd_tcache_alloc (tcache.c) -> nd_heap_take_blocks (heap.c)
 *        -> nd_page_take (page.c), or a new page: nd_node_seg_get (node.c)
 *        -> nd_seg_map (segment.c) -> nd_os_map_aligned (os.c) -> mmap
 */
#ifndef ND_ALLOC_H
#define ND_ALLOC_H

#include <stddef.h>
#include <stdint.h>
#include "class.h"
#include "config.h"
#include "options.h"
#include "page.h"
#include "tcache.h"
#include "thread.h"

void *nd_malloc_slow(size_t size, nd_tcache *tc) nd_hidden;   /* size first: it stays in its register */
/* The fast path's tick of the bin at byte offset `off` ran out, the bin
   holding a block: follow_thread's look (nd_thread_look), or the slow path. */
void *nd_malloc_tick(size_t size, nd_tcache *tc, size_t off) nd_hidden;
void *nd_malloc_node_slow(size_t size, int node) nd_hidden;

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
void  *nd_realloc_node(void *p, size_t size, int node) nd_hidden;
void  *nd_malloc_node_aligned(size_t alignment, size_t size, int node) nd_hidden;
void  *nd_calloc_node(size_t count, size_t size, int node) nd_hidden;

/* Built with -DNODAL_PREFETCH_LINES=N (config.h: ND_PREFETCH_LINES), a
   malloc from a bin also prefetches N cache lines of the block the next
   malloc of the class will return (as jemalloc's with-prefetch-objects);
   0, the default, costs nothing. */
#if ND_PREFETCH_LINES > 0
#define ND_BIN_PREFETCH(cur)                                                   \
    do {                                                                       \
        const char *next_ = (const char *)(cur)[1];                            \
        if (next_ != NULL)                                                     \
            for (int i_ = 0; i_ < ND_PREFETCH_LINES; i_++)                     \
                __builtin_prefetch(next_ + i_ * ND_CACHE_LINE, 1, 3);          \
    } while (0)
#else
#define ND_BIN_PREFETCH(cur) ((void)0)
#endif

/* Pops a block from the bin at byte offset `off` of tcache tc and clears
   its freed-block mark (page.h); the caller takes its slow path when the
   bin is empty or its tick ran out. ND_BIN_POP_THEN_OR runs the statement
   `then` once the block is taken (the tier call's counts), in which b_ is
   the bin (its tier counters are found from its address: tcache.h,
   nd_bin_tier_hits). */
#define ND_BIN_POP_OR(tc, off, slow) ND_BIN_POP_THEN_OR(tc, off, (void)0, slow)
#define ND_BIN_POP_THEN_OR(tc, off, then, slow) ND_BIN_POP_TICK_OR(tc, off, then, slow, slow)
/* The same, with `ran_out` the slow path when only the tick ran out (the bin
   holds a block): plain malloc's, nd_malloc_tick. */
#define ND_BIN_POP_TICK_OR(tc, off, then, slow, ran_out)                       \
    do {                                                                       \
        nd_bin *b_ = ND_BIN_AT((tc)->bins, (off));                             \
        void **cur_ = b_->cur;                                                 \
        if (nd_unlikely(cur_ == b_->empty))                                    \
            return (slow);                                                     \
        if (nd_unlikely(--b_->tick == 0))                                      \
            return (ran_out);                                                  \
        b_->cur = cur_ + 1;                                                    \
        then;                                                                  \
        ND_BIN_PREFETCH(cur_);                                                 \
        void *p_ = *cur_;                                                      \
        nd_block_unmark(p_);                                                   \
        return p_;                                                             \
    } while (0)

nd_inline void *nd_malloc_fast(nd_tcache *tc, size_t size)
{
    size_t c;
    if (nd_unlikely(!nd_class_fast(size, &c)))
        return nd_malloc_slow(size, tc);
    ND_BIN_POP_TICK_OR(tc, c, (void)0, nd_malloc_slow(size, tc), nd_malloc_tick(size, tc, c));
}

nd_inline void *nd_malloc_node_fast(size_t size, int node)
{
    if (nd_unlikely((unsigned)node >= ND_MAX_NODES))
        return nd_malloc_node_slow(size, node);
    nd_tcache *tc = nd_tls_node_tc[node];
    size_t c;
    if (nd_unlikely(!nd_class_fast(size, &c)))
        return nd_malloc_node_slow(size, node);
    ND_BIN_POP_OR(tc, c, nd_malloc_node_slow(size, node));
}

#endif /* ND_ALLOC_H */
