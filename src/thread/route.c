/*
 * route.c - the slow paths' choices (see route.h): malloc by size, and
 * frees of blocks whose page another thread owns.
 */
#include "route.h"

#include <errno.h>
#include "heap.h"
#include "huge.h"
#include "large.h"
#include "lock.h"
#include "node.h"
#include "options.h"
#include "os.h"
#include "prof.h"
#include "secure.h"
#include "slab.h"
#include "thread.h"
#include "tight.h"

/* ---- malloc by size ------------------------------------------------------------ */

static void *nd_route_huge(nd_tcache *tc, size_t size, size_t alignment);

/* A block of plain memory found no room (an address-space limit, say):
   the thread's heap gives back what its small and medium segments do not
   use (nd_heap_release); true if anything went, worth one more try. Not
   for bound memory: its node is full, which no unmapping changes. */
static bool nd_route_release(nd_heap *h)
{
    return errno == ENOMEM && !h->bound && nd_heap_release(h) != 0;
}

static nd_noinline void *nd_route_huge_failed(nd_heap *h, size_t size, size_t alignment)
{
    return nd_route_release(h) ? nd_huge_alloc(size, alignment, h->node, h->bound, NULL) : NULL;
}

static void *nd_route_huge(nd_tcache *tc, size_t size, size_t alignment)
{
    nd_heap *h = &tc->heap;
    void *p = nd_huge_alloc(size, alignment, h->node, h->bound, NULL);
    if (nd_unlikely(p == NULL))
        p = nd_route_huge_failed(h, size, alignment);
    if (p != NULL) {
        nd_count_inc(&h->stats.huge_allocs);
        nd_count_add(&h->stats.huge_bytes_allocated, size);
    }
    return p;
}

/* No large block to be had: once more after the heap's release, then (no
   room in the pool and no 4 MiB segment to be had: an address-space
   limit) plain memory gets a mapping of the block's own size, as a huge
   block, while one fits. (A bound block failed because its node is full,
   which another mapping would not change.) */
static nd_noinline void *nd_route_large_failed(nd_tcache *tc, size_t size, size_t alignment)
{
    nd_heap *h = &tc->heap;
    size_t bytes;
    void *p = nd_route_release(h) ? nd_large_alloc(h->node, h->bound, size, alignment, &bytes) : NULL;
    if (p != NULL) {
        nd_count_inc(&h->stats.large_allocs);
        nd_count_add(&h->stats.large_bytes_allocated, bytes);
        return p;
    }
    if (errno == ENOMEM && !h->bound)
        p = nd_route_huge(tc, size, alignment);
    return p;
}

/* Out of line, as its failure path is: inlined, it made nd_route_malloc's
   frame larger for every path through it (2 instructions more per 1 MiB
   malloc/free pair, callgrind). */
nd_hot nd_noinline void *nd_route_large(nd_tcache *tc, size_t size, size_t alignment)
{
    nd_heap *h = &tc->heap;
    size_t bytes;
    void *p = nd_large_alloc(h->node, h->bound, size, alignment, &bytes);
    if (nd_unlikely(p == NULL))
        return nd_route_large_failed(tc, size, alignment);
    nd_count_inc(&h->stats.large_allocs);
    nd_count_add(&h->stats.large_bytes_allocated, bytes);
    return p;
}

void *nd_route_grown(nd_tcache *tc, size_t size)
{
    nd_heap *h = &tc->heap;
    size_t bytes;
    void *p = nd_large_alloc_grown(h->node, h->bound, size, &bytes);
    if (nd_unlikely(p == NULL))
        return nd_route_large_failed(tc, size, 0);
    nd_count_inc(&h->stats.large_allocs);
    nd_count_add(&h->stats.large_bytes_allocated, bytes);
    return p;
}

/* prof=1: sampled block p (large or huge) of `size` bytes requested into
   the heap profile. */
static nd_sample_path void *nd_route_sampled(nd_tcache *tc, void *p, size_t size, size_t usable)
{
    if (p != NULL) {
        nd_page *pg;
        nd_segment *s = nd_seg_base(p);
        pg = s->kind == ND_SEG_HUGE ? &s->pages[0] : nd_page_of(s, p);
        nd_prof_record(p, pg, size, usable, tc->heap.node, tc->heap.bound);
    }
    return p;
}

/* Blocks above the classes: large or huge. Inlined into its three
   callers, as the compiler did when it had two (a call of its own made a
   200,000 B pair 9 instructions longer, callgrind). */
nd_inline void *nd_route_big(nd_tcache *tc, size_t size)
{
    if (size > (size_t)PTRDIFF_MAX) {
        errno = ENOMEM;
        return NULL;
    }
    if (nd_unlikely(nd_prof_is_on()) && !tc->heap.shared && nd_prof_big_due(size))
        return nd_route_sampled(tc, size <= ND_LARGE_MAX ? nd_route_large(tc, size, 0) : nd_route_huge(tc, size, 0),
                                size, size);
    if (size <= ND_LARGE_MAX)
        return nd_route_large(tc, size, 0);
    return nd_route_huge(tc, size, 0);
}

/* prof=1: a sampled request of class c. Up to ND_SLAB_CELL_MAX it gets a
   cell of the cache's sample slab (slab.h), counted as a request of the
   cell's class all the same (sampled_cells: not a block its cache gave;
   the slab's memory is the profile's, prof_slab_bytes); a larger class
   its class's ordinary block, whose page counts it (page.h:
   nd_page_sample_add). Either way every free of it takes the slow path,
   which drops the sample. */
static nd_noinline nd_sample_path void *nd_route_small_sampled(nd_tcache *tc, unsigned c, size_t size)
{
    if (nd_class_size[c] > ND_SLAB_CELL_MAX) {
        void *p = nd_tcache_alloc(tc, c);
        if (p != NULL) {
            nd_page *pg = nd_page_of(nd_seg_base(p), p);
            /* (Not recorded: a full table, or a signal handler's request
               inside the profiler; the block is then not a sample.) */
            if (nd_page_sample_fits(pg) &&
                nd_prof_put(p, size, nd_class_size[c], tc->heap.node, tc->heap.bound) < ND_PROF_LIVE)
                nd_page_sample_add(pg, p);
        }
        return p;
    }
    nd_slab_cell *cell;
    void *p = nd_sample_slab(tc, c, &cell);
    if (p == NULL)   /* out of memory, or a signal handler inside the cut: the block of its class, unsampled */
        return nd_tcache_alloc(tc, c);
    nd_tcache_uncount(tc, c);   /* (its bin's count: blocks its cache gave) */
    /* (A freed cell taken again may be of a larger class.) The process's
       count, not the thread's: a sample is rare, and its cache's per-class
       counters lie on an OS page of their own (tcache.h) that a thread of
       a few classes does not write otherwise. */
    nd_add_relaxed(&nd_gauge.sampled_cells[cell->cls], 1);
    cell->slot = nd_prof_put(p, size, nd_class_size[c], tc->heap.node, tc->heap.bound);
    return p;
}

/* Near an address-space limit (os.h: nd_os_space_tight), whether a request
   that pads to `padded` bytes (secure=1: with its canary word) takes a
   large block rather than one of class c: when the large block is more
   than 4 % smaller. A large block of plain memory holds the request
   rounded up to the OS page (secure=1: and its guard page), the rest of
   its run given back when a mapping is refused (large.h: tails), where a
   block of class c holds the class's size however little of it the
   program asked for (100,000 B in 112 KiB, 13 % more). Not up to 32 KiB,
   where classes are 4 KiB apart (a large block would save an OS page at
   most) and a large block's run, a chunk of 64 KiB, takes twice its size
   and more until a refusal; not for bound memory, whose large blocks keep
   their runs whole; nor when the limit holds more such blocks than an
   eighth of the mappings the kernel allows (os.h: nd_os_space_maps_fit):
   each one whose tail went back is a mapping of its own, and past the
   kernel's count the tails stay (36,864 B blocks under 4 GiB fitted
   0.815x glibc's count that way, 0.896x in their class); and once the
   limit is reached each large block that finds no free run costs a walk
   of the large segments (large.c), which grows with their number
   (100,000 B blocks filling 700 MiB, near the cap: 0.32 s, where their
   class took 0.11 s; 1,500 MiB with a cap of a quarter: 2.5 s). */
#define ND_ROUTE_TIGHT_MIN (32 * ND_KiB)
static bool nd_route_tight(const nd_tcache *tc, size_t padded, unsigned c)
{
    if (padded <= ND_ROUTE_TIGHT_MIN || tc->heap.bound)
        return false;
    size_t ps = nd_os_page_size(), tight = (padded + ps - 1) / ps * ps + nd_seg_guard;
    return tight * 25 < (size_t)nd_class_size[c] * 24 && nd_os_space_maps_fit(tight);
}

/* A cell of `cell` bytes (secure=1: sealed) of a tight slab of tc's
   node, counted as a large block; NULL when none. A slab that found no
   room is tried once more after the thread's heap gave back what its
   small and medium segments do not use (nd_route_release), as a large
   block is: else that room went to blocks of the request's class
   (secure=1 16 KiB requests in 20 KiB: 0.950x glibc's count, 0.955x
   so). */
static void *nd_route_cell_take(nd_tcache *tc, size_t cell, bool sealed)
{
    bool no_room;
    void *p = nd_tight_alloc(tc->heap.node, cell, sealed, &no_room);
    if (nd_unlikely(no_room) && nd_route_release(&tc->heap))
        p = nd_tight_alloc(tc->heap.node, cell, sealed, &no_room);
    if (p != NULL) {
        nd_count_inc(&tc->heap.stats.large_allocs);
        nd_count_add(&tc->heap.stats.large_bytes_allocated, cell);
    }
    return p;
}

/* Near the limit, a request that pads to `padded` bytes (secure=1: with
   its canary word, written then: sealed), whose block would otherwise
   take `block` bytes (its class's size; secure=1 above the classes a
   large block and its guard page), gets a cell of a tight slab (tight.h)
   when that block is more than 4 % larger than the cell, the request
   rounded up to 256 bytes (32,769 B: 33,024 where its class takes
   40 KiB and a tight large block 36 KiB), and the cell smaller than the
   request's OS pages (with secure=1's guard page: a tight large block,
   nd_route_tight, takes no more than those). Counted as a large block.
   NULL when it does not (plain memory from ND_TIGHT_MIN to
   ND_TIGHT_MAX only; not under secure=2, whose canary follows the
   request) or no slab has room: the caller goes on. */
static void *nd_route_cell(nd_tcache *tc, size_t padded, size_t block, bool sealed)
{
    if (padded <= ND_TIGHT_MIN || padded > ND_TIGHT_MAX || tc->heap.bound || nd_secure_full())
        return NULL;
    size_t cell = nd_tight_cell_of(padded), ps = nd_os_page_size();
    if (cell * 25 >= block * 24 || cell >= (padded + ps - 1) / ps * ps + nd_seg_guard ||
        !nd_os_space_maps_fit(ND_TIGHT_SLAB_BYTES))
        return NULL;
    return nd_route_cell_take(tc, cell, sealed);
}

/* secure=1 near the limit, a request above the classes: a cell (the
   request and its canary rounded up to 256 bytes) rather than a large
   block (its OS pages and its guard page) when the cell is more than
   1.5 % smaller: both take the slow path, and a slab's header and last
   OS page eat a little of the difference (200,000 B: 200,192 in a cell,
   49 OS pages and the guard in a large block). Not by default, where a
   large block has no guard page and a cell would save 1-3 % at sizes
   just past an OS page (131,101 B: 0.977x glibc's count, 1.004x in
   cells), for a test of the mark in every large malloc (7 instructions
   of a 200,000 B pair's 777, callgrind). */
static void *nd_route_cell_big(nd_tcache *tc, size_t size)
{
    size_t ps = nd_os_page_size(), padded = size + ND_SECURE_TAIL;
    size_t block = (size + ps - 1) / ps * ps + nd_seg_guard;
    if (padded > ND_TIGHT_MAX || tc->heap.bound || nd_secure_full() ||
        nd_tight_cell_of(padded) * 64 >= block * 63 || !nd_os_space_maps_fit(ND_TIGHT_SLAB_BYTES))
        return NULL;
    return nd_route_cell_take(tc, nd_tight_cell_of(padded), true);
}

/* A request of class c near the limit: a cell when its class wastes room
   (nd_route_cell), else a large block when that saves room
   (nd_route_tight), else (or when neither had room) its class's: the
   blocks of its class freed since may be on their pages (a refill of
   freed 32,769 B blocks made before the mark once found none). Out of
   line: the fast paths' refills through nd_route_malloc keep their code. */
static nd_noinline void *nd_route_malloc_tight(nd_tcache *tc, size_t size, unsigned c)
{
    void *p = nd_route_cell(tc, size, nd_class_size[c], false);
    if (p != NULL)
        return p;
    if (nd_route_tight(tc, size, c) && (p = nd_route_big(tc, size)) != NULL)
        return p;
    if (nd_unlikely(nd_thread_count_request(tc, c)))
        return nd_route_small_sampled(tc, c, size);
    return nd_tcache_alloc(tc, c);
}

/* secure=1: a block of class c for a request of `size` bytes, through the
   checked path (secure.h), which pads the request by a canary word (the
   caller chose c for that). Every malloc comes here, counted like the fast
   path's (nd_thread_count_request: maintenance at its roll-overs). */
static void *nd_route_secure(nd_tcache *tc, unsigned c, size_t size)
{
    unsigned bin = nd_class_bin[c];   /* the fast path's tick is its bin's (secure=1: class.h) */
    nd_thread_count_request(tc, bin < ND_CLASS_COUNT ? bin : c);
    return nd_secure_alloc(tc, c, size);
}

/* secure=1: requests padded by the canary word; those too large for a
   class with it are large blocks. */
static nd_noinline void *nd_route_malloc_secure(nd_tcache *tc, size_t size)
{
    if (size <= ND_SECURE_CLASS_MAX) {
        if (nd_likely(!nd_os_space_tight()))
            return nd_route_secure(tc, nd_secure_request_class(tc, size), size);
        /* Near the limit: a cell, the class the canary needs (not the
           next one its bin holds past 1 KiB, class.h), or a large block. */
        unsigned c = nd_secure_class_of(size);
        void *p = nd_route_cell(tc, size + ND_SECURE_TAIL, nd_class_size[c], true);
        if (p != NULL) {
            nd_thread_tick(tc);
            return p;
        }
        if (nd_route_tight(tc, size + ND_SECURE_TAIL, c)) {
            nd_thread_tick(tc);
            if ((p = nd_route_big(tc, size)) != NULL)
                return p;
        }
        return nd_route_secure(tc, c, size);   /* (or when neither had room: as above) */
    } else if (nd_unlikely(nd_os_space_tight())) {
        /* A cell rather than a large block and its guard page (131,101 B:
           128.25 KiB rather than 136). */
        void *p = nd_route_cell_big(tc, size);
        if (p != NULL) {
            nd_thread_tick(tc);
            return p;
        }
    }
    nd_thread_tick(tc);
    return nd_route_big(tc, size);
}

nd_hot void *nd_route_malloc(nd_tcache *tc, size_t size)
{
    /* A shared heap's lock may be held: what follows may take a large
       pool's, a node's and the metadata lock. */
    nd_lock_may_take(ND_LOCK_ID_large_pool);
    if (nd_unlikely(nd_secure_on()))
        return nd_route_malloc_secure(tc, size);
    nd_thread_tick(tc);
    if (size <= ND_MEDIUM_MAX) {
        unsigned c = nd_class_of(size);
        if (nd_unlikely(nd_os_space_tight()))
            return nd_route_malloc_tight(tc, size, c);
        if (nd_unlikely(nd_thread_count_request(tc, c)))
            return nd_route_small_sampled(tc, c, size);
        return nd_tcache_alloc(tc, c);
    }
    return nd_route_big(tc, size);
}

nd_hot void *nd_route_malloc_aligned(nd_tcache *tc, size_t alignment, size_t size)
{
    if (alignment <= ND_QUANTUM)
        return nd_route_malloc(tc, size);
    if (size > (size_t)PTRDIFF_MAX || alignment > ((size_t)1 << 40)) {
        errno = ENOMEM;
        return NULL;
    }
    if (alignment <= ND_ALIGN_NATURAL) {
        if (nd_unlikely(nd_secure_on())) {
            unsigned c = size <= ND_SECURE_CLASS_MAX ?
                         nd_secure_class_with_bin(nd_class_aligned(size + ND_SECURE_TAIL, alignment)) :
                         ND_CLASS_COUNT;
            if (c < ND_CLASS_COUNT)
                return nd_route_secure(tc, c, size);
        } else {
            unsigned c = nd_class_aligned(size, alignment);
            if (c < ND_CLASS_COUNT)
                return nd_route_malloc(tc, nd_class_size[c]);
        }
    }
    if (nd_large_fits(size, alignment))
        return nd_route_large(tc, size, alignment);
    return nd_route_huge(tc, size, alignment);
}

/* ---- frees of other threads' blocks ---------------------------------------------- */

nd_hot void nd_route_free_foreign(void *p, nd_segment *s, nd_page *pg, uintptr_t key)
{
    unsigned cls = pg->cls;
    unsigned bin = nd_class_bin[cls];   /* cls but under secure=1 (class.h) */
    unsigned counted = bin < ND_CLASS_COUNT ? bin : cls;   /* where its request was counted */
    if (key != ND_KEY_NONE) {
        nd_tcache *tc = nd_thread_cache_for_free(s, true);
        if (tc != NULL && bin < ND_CLASS_COUNT && nd_bin_cap_max(tc, bin) != 0) {
            nd_tcache_push(tc, bin, p);   /* counted when it goes back to its page */
            return;
        }
    }
    /* A free into a segment abandoned by an exited thread: adopt it, and
       the block (like the rest of the segment's) is freed locally, its
       page reused or released. The adoption comes first: once p is pushed
       to another owner's page, that owner may free the page and unmap the
       segment, so nothing here may read s after a push. */
    if (key == ND_KEY_NONE && nd_load_relaxed(&s->abandoned) && nd_opt(ND_OPT_reclaim_on_free)) {
        nd_tcache *tc = nd_thread_tcache_for(s);
        if (tc != NULL && nd_node_abandoned_claim(s)) {
            nd_heap_adopt_segment(&tc->heap, s);   /* keeps s: p is still out of its page */
            nd_block_mark(p);
            nd_count_inc(&nd_heap_cstats(&tc->heap, counted)->slow_frees);
            nd_heap_return_blocks(&tc->heap, pg, p, p, 1);
            return;
        }
    }
    nd_thread_count_remote_free(counted, true);
    nd_heap_free_remote(pg, p);
}
