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
 * secure=1 adds (secure.h): every free checked here (nd_free_other_kind,
 * from the fast path's other-kind branch); the canary at
 *  the block's end checked                          -> "heap overflow past the end of the block", abort
 * then the block goes to a thread cache as the fast path would have put it.
 * secure=2: caches off as well; the canary after the request and the slack
 * checked; the block is filled, marked and kept in the freeing thread's
 * quarantine, by whichever thread frees it.
 */
#include "free.h"

#include <errno.h>
#include <string.h>
#include "huge.h"
#include "large.h"
#include "lock.h"
#include "msg.h"
#include "prof.h"
#include "route.h"
#include "secure.h"
#include "slab.h"
#include "tight.h"

/* The segment map says a segment starts here, but its header is not one
   nodal wrote (or no longer): memory was overwritten. */
static nd_cold _Noreturn void nd_bad_header(const char *fn, const void *p)
{
    nd_misuse(fn, "heap corruption (segment header overwritten)", p);
}

void nd_block_misuse(const char *fn, const nd_segment *s, const void *p)
{
    bool freeing = strcmp(fn, "free") == 0;
    const char *interior = "invalid pointer (not the start of a block)";
    const char *unused = freeing ? "double free or invalid pointer (block not in use)"
                                 : "invalid pointer (block not in use)";
    const char *why = unused;
    /* Past the segment's mapping: the rest of the window of a short
       segment or of a huge block's last 4 MiB is anyone's. */
    if ((uintptr_t)p - (uintptr_t)s >= s->size)
        nd_misuse(fn, "invalid pointer (not allocated by nodal)", p);
    if (s->kind != ND_SEG_HUGE && (uintptr_t)p - (uintptr_t)s < ND_SEG_HEADER_SIZE) {
        why = interior;   /* the segment's own header: never a block */
    } else if (s->kind == ND_SEG_HUGE) {
        const nd_page *pg = &s->pages[0];
        if (pg->start != (const uint8_t *)p)
            why = interior;
    } else if (s->kind == ND_SEG_LARGE) {
        /* A chunk that no run holds is free; any other is a block's (or the
           header's) without being the start of one in use. */
        const nd_page *pg = nd_page_of((nd_segment *)s, p);
        uint64_t free_mask = nd_load_relaxed(&s->free_mask);
        if (pg->start == (const uint8_t *)p && nd_load_relaxed(&pg->in_use) && nd_load_relaxed(&pg->in_full))
            why = unused;   /* a kept block (large.h): freed already */
        else if (!(free_mask & ((uint64_t)1 << nd_seg_page_index(s, pg))))
            why = interior;
    } else if (s->kind == ND_SEG_SMALL || s->kind == ND_SEG_MEDIUM) {
        const nd_page *pg = nd_page_of((nd_segment *)s, p);
        if (nd_load_relaxed(&pg->in_use) && !nd_page_block_ok_shared(pg, p))
            why = interior;
        else if (nd_load_relaxed(&pg->in_use) && freeing)
            why = "double free";
    }
    nd_misuse(fn, why, p);
}

void nd_free_twice_in_a_row(const void *p)
{
    nd_misuse("free", "double free", p);
}

/* prof=1: is p a live cell of a sample slab (slab.h)? Or a live cell of
   a tight slab (tight.h)? */
static nd_noinline bool nd_free_is_live_cell(const nd_segment *s, const nd_page *pg, const void *p)
{
    if (s->kind == ND_SEG_LARGE && nd_load_relaxed(&pg->sampled) == ND_TIGHT_SLAB)
        return nd_tight_cell_size((nd_segment *)s, pg, p) != 0;
    const nd_slab_cell *cell = s->kind == ND_SEG_LARGE ? nd_slab_cell_find(pg, p) : NULL;
    return cell != NULL && nd_load_relaxed(&cell->live);
}

nd_segment *nd_block_find(const char *fn, const void *p, nd_page **pgp)
{
    nd_segment *s = nd_seg_of(p);
    if (s == NULL)
        nd_misuse(fn, "invalid pointer (not allocated by nodal)", p);
    if (!nd_seg_cookie_ok(s))
        nd_bad_header(fn, p);
    nd_page *pg = s->kind == ND_SEG_HUGE ? &s->pages[0] : nd_page_of(s, p);
    if (!nd_page_is_block_start(pg, p) ||
        ((s->kind == ND_SEG_SMALL || s->kind == ND_SEG_MEDIUM) && nd_block_is_marked(p)) ||
        (s->kind == ND_SEG_LARGE &&
         nd_unlikely(nd_load_relaxed(&pg->sampled) == ND_TIGHT_SLAB || nd_load_relaxed(&pg->in_full))))
        if (!nd_free_is_live_cell(s, pg, p))
            nd_block_misuse(fn, s, p);
    *pgp = pg;
    return s;
}

void nd_free_special(void *p)
{
    if (p == NULL)
        return;
    nd_segment *s = nd_seg_of(p);
    if (s == NULL)
        nd_misuse("free", "invalid pointer (not allocated by nodal)", p);
    /* A segment starts in p's window, without a word in nd_segcache: a
       huge block, or a segment whose slot another window holds. The slow
       path checks it all as it does for the fast path's. */
    if (s == nd_seg_base(p)) {
        nd_free_slow(p, nd_page_of(s, p));
        return;
    }
    if (!nd_seg_cookie_ok(s))
        nd_bad_header("free", p);
    /* Past the first 4 MiB of a huge mapping: an aligned huge block, or an
       interior pointer. */
    if (s->kind != ND_SEG_HUGE || s->pages[0].start != (uint8_t *)p || !s->pages[0].in_use)
        nd_block_misuse("free", s, p);
    if (nd_unlikely(nd_load_relaxed(&s->pages[0].sampled)))
        nd_prof_forget(p, &s->pages[0]);
    nd_thread_count_free(true, nd_huge_usable(s, p));
    nd_huge_free(s);
}

/* prof=1: a cell of a sample slab (slab.h), or a pointer into one that
   is not a live cell's start. */
static nd_noinline void nd_free_slab_cell(void *p, nd_segment *s, nd_page *pg)
{
    nd_slab_cell *cell = nd_slab_cell_find(pg, p);
    uint8_t live = 1;
    if (cell == NULL)
        nd_misuse("free", "invalid pointer (not the start of a block)", p);
    /* Its slot read first: once freed, the cell may be taken again by its
       slab's owner (slab.c), which writes the next sample's slot. */
    uint32_t slot = cell->slot;
    unsigned c = cell->cls;   /* (for the statistics: a taken cell keeps its class) */
    if (!__atomic_compare_exchange_n(&cell->live, &live, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        nd_misuse("free", "double free", p);
    nd_prof_drop(p, slot);
    nd_add_relaxed(&nd_gauge.sampled_cell_frees[c], 1);   /* (the process's count: route.c) */
    nd_slab_unref(s, pg);
}

/* A cell of a tight slab (tight.h), or a pointer into one that is not a
   live cell's start; under secure=1 its canary checked. */
static nd_noinline void nd_free_tight_cell(void *p, nd_segment *s, nd_page *pg)
{
    int why;
    size_t cell;
    size_t bytes = nd_tight_free(s, pg, p, nd_opt(ND_OPT_secure) == 1, &why, &cell);
    if (nd_unlikely(bytes == 0)) {
        if (why == ND_TIGHT_OVERFLOW)
            nd_secure_overflow_at_end("free", p, cell);
        nd_misuse("free", why == ND_TIGHT_NOT_LIVE ? "double free" :
                          why == ND_TIGHT_CORRUPT ? "heap corruption (tight slab header overwritten)" :
                          "invalid pointer (not the start of a block)", p);
    }
    nd_thread_count_free(false, bytes);
}

/* A free into a large segment whose descriptor pg is flagged (`sampled`
   not 0): a sample slab's cell or a tight slab's, freed here (true), or
   a sampled large block, which the profile forgets before its free
   (false). Out of line: nd_free_big tests the flag once (three tests
   inline cost a 200,000 B malloc/free pair 3 instructions). */
static nd_noinline bool nd_free_flagged(void *p, nd_segment *s, nd_page *pg)
{
    uint8_t sampled = nd_load_relaxed(&pg->sampled);
    if (sampled == ND_PROF_SLAB) {
        nd_free_slab_cell(p, s, pg);
        return true;
    }
    if (sampled == ND_TIGHT_SLAB) {
        nd_free_tight_cell(p, s, pg);
        return true;
    }
    if (pg->start == (uint8_t *)p && pg->in_use)
        nd_prof_forget(p, pg);
    return false;
}

/* Huge and large blocks, and segments of no kind that frees take. */
static nd_noinline void nd_free_big(void *p, nd_segment *s, nd_page *pg)
{
    if (s->kind == ND_SEG_HUGE) {
        if (pg->start != (uint8_t *)p || !pg->in_use)
            nd_block_misuse("free", s, p);
        if (nd_unlikely(nd_load_relaxed(&pg->sampled)))
            nd_prof_forget(p, pg);
        nd_thread_count_free(true, nd_huge_usable(s, p));
        nd_huge_free(s);
        return;
    }
    if (s->kind == ND_SEG_LARGE) {
        if (nd_unlikely(nd_load_relaxed(&pg->sampled)) && nd_free_flagged(p, s, pg))
            return;
        size_t bytes = nd_large_free(s, pg, p);
        if (bytes == 0)
            nd_block_misuse("free", s, p);
        nd_thread_count_free(false, bytes);
        return;
    }
    nd_block_misuse("free", s, p);
}

/* A block of one of this thread's own pages, past the fast path: its bin
   is full (grown, or half or all of it flushed), or its class has no cache (or
   checks are on): then straight back to the page. */
static nd_noinline void nd_free_own(void *p, nd_page *pg)
{
    nd_heap *h = pg->heap;
    nd_tcache *tc = nd_tcache_of_heap(h);
    if (nd_bin_cap_max(tc, pg->cls) == 0) {
        nd_block_mark(p);
        if (nd_unlikely(nd_opt(ND_OPT_check) >= 2))
            nd_page_junk(pg, p);
        nd_heap_free_local(h, pg, p);
        return;
    }
    nd_tcache_push(tc, pg->cls, p);
    nd_thread_tick(tc);
}

/* secure=1: every small and medium free, by any thread. The block is
   checked (not free already, nothing written past its request), filled
   and marked, and waits in the calling thread's quarantine; a thread
   without one gives it straight back. */
static void nd_free_secure(void *p, nd_page *pg)
{
    uintptr_t key = nd_load_relaxed(&pg->key), tid = nd_tid();
    bool own = key == tid && tid != 0;
    unsigned cls = pg->cls;
    nd_heap *h = own ? pg->heap : NULL;
    nd_tcache *q = nd_likely(nd_tls_thread->state == ND_THREAD_LIVE) ? nd_tls_tc : nd_thread_quarantine();
    bool kept = nd_secure_free(pg, p, q);   /* aborts on misuse */
    if (own)
        nd_count_inc(&nd_heap_cstats(h, cls)->slow_frees);
    else
        nd_thread_count_remote_free(cls, true);
    if (kept)
        return;
    if (own)
        nd_heap_return_blocks(h, pg, p, p, 1);
    else
        nd_heap_free_remote(pg, p);
}

/* secure=1: a checked block the thread's bin did not take (a full bin,
   another kind of memory, a class without a cache): the slow path's
   usual routes. */
static nd_noinline void nd_free_sealed_route(void *p, nd_segment *s, nd_page *pg)
{
    nd_lock_may_take(ND_LOCK_ID_threads);   /* adoption */
    if (nd_unlikely(!nd_seg_cookie_ok(s)))   /* as the default's slow path (nd_free_checked) */
        nd_bad_header("free", p);
    unsigned bin = nd_class_bin[pg->cls];   /* (class.h) */
    nd_tcache *tc = nd_tls_tc;
    if (bin < ND_CLASS_COUNT && nd_bin_cap_max(tc, bin) != 0 &&
        nd_load_relaxed(&pg->kind) == nd_kind_of(false, tc->heap.node)) {
        void **cur = tc->bins[bin].cur;   /* NULL: the bin has no slots yet (tcache.h) */
        if (nd_unlikely(cur != NULL && *cur == p))
            nd_free_twice_in_a_row(p);
        nd_tcache_push(tc, bin, p);   /* grows the bin or flushes half or all of it */
        nd_thread_tick(tc);
        return;
    }
    uintptr_t key = nd_load_relaxed(&pg->key);
    uintptr_t tid = nd_tid();
    if (key != tid || tid == 0) {
        nd_route_free_foreign(p, s, pg, key);
        return;
    }
    nd_tcache *own = nd_tcache_of_heap(pg->heap);
    if (bin < ND_CLASS_COUNT && nd_bin_cap_max(own, bin) != 0) {
        nd_tcache_push(own, bin, p);
        nd_thread_tick(own);
        return;
    }
    nd_secure_keep(own, pg, p);
}

/* secure=1: a free nd_free_sealed did not finish: a bad segment header,
   a large or huge block, a small or medium block that failed a check
   (each check made again here, in order, for its message), or one of
   another kind of memory than the thread's plain memory (node-bound,
   another node's, an abandoned page's), checked here, then routed. Not declared
   noreturn, and its callers told nothing of it (noipa): they jump here
   rather than call, so their path needs no stack frame. */
static nd_cold nd_noipa void nd_free_sealed_other(void *p, nd_segment *s, nd_page *pg)
{
    if (!nd_seg_cookie_ok(s))
        nd_bad_header("free", p);
    if (s->kind != ND_SEG_SMALL && s->kind != ND_SEG_MEDIUM) {
        nd_lock_may_take(ND_LOCK_ID_threads);
        nd_free_big(p, s, pg);
        return;
    }
    if (!nd_page_block_ok_shared(pg, p))
        nd_block_misuse("free", s, p);
    if (nd_block_is_marked(p))
        nd_misuse("free", "double free", p);
    if (!nd_block_is_sealed(p, pg->block_size))
        nd_secure_overflow_at_end("free", p, pg->block_size);
    /* Every check passed (another kind of memory; or the block changed
       in between, another thread's write): freed as any other. */
    nd_free_sealed_route(p, s, pg);
}

/* secure=1: a free of a block of the plain memory of tc's node, tc the
   thread's cache (its kind is that kind with ND_KIND_SEALED, so the fast
   path sends each one here: nd_free_other_kind). A page of that kind is a
   small or medium page in use (segment.h: every other page's kind is
   ND_KIND_NONE). The block is checked (a block start, not free already,
   its canary intact; its segment's header where a guard page does not
   stop an overflow first, segment.h: ND_SEG_GUARD_ALWAYS), then goes where
   the free fast path would have put it: the thread's bin of its class (the
   block the bin took last freed again: a double free, as there), else the
   usual routes (nd_free_sealed_route, which checks the header, as the
   default's slow path does). The checks fold into two unlikely branches,
   as in the fast path, which nd_free_sealed_other sorts out. s is p's
   segment (nd_seg_base): the paths off this one take it from p again, so
   that s need not stay in a register across the multiplies. */
static inline __attribute__((always_inline)) void nd_free_sealed_in(void *p, nd_segment *s, nd_page *pg, nd_tcache *tc)
{
    if (nd_unlikely((!ND_SEG_GUARD_ALWAYS && !nd_seg_cookie_ok(s)) || !nd_page_block_ok_shared(pg, p) ||
                    !nd_block_is_sealed(p, pg->block_size))) {
        nd_free_sealed_other(p, nd_seg_base(p), pg);
        return;
    }
    uintptr_t mark = nd_block_mark_of(p);
    if (nd_unlikely(((uintptr_t *)p)[1] == mark)) {
        nd_free_sealed_other(p, nd_seg_base(p), pg);
        return;
    }
    /* pg->cls's bin: its own, or one less (class.h); a class without a
       bin, the last bin, which has no slots then (segment.h:
       ND_BIN_OFF_NONE), so the test below sends it on its route. */
    nd_bin *b = (nd_bin *)((char *)tc->bins + pg->bin_off);   /* as the fast path */
    void **cur = b->cur, **low = b->low;
    if (nd_likely(cur != low)) {
        if (nd_unlikely(*cur == p))
            nd_free_twice_in_a_row(p);
        *--cur = p;
        b->cur = cur;
        ((uintptr_t *)p)[1] = mark;   /* nd_block_mark(p) */
        return;
    }
    nd_free_sealed_route(p, nd_seg_base(p), pg);
}

/* secure=1: a free nd_free_other_kind did not take (a large or huge
   block, node-bound memory, another node's, a page not in use or
   abandoned, a thread without a cache of its own): the checked way round,
   or the block above (a page whose kind changed in between). */
static nd_noinline void nd_free_sealed(void *p, nd_segment *s, nd_page *pg)
{
    nd_tcache *tc = nd_tls_tc;
    if ((nd_load_relaxed(&pg->kind) | ND_KIND_SEALED) == tc->kind)
        nd_free_sealed_in(p, s, pg, tc);
    else
        nd_free_sealed_other(p, s, pg);
}

/* The fast path compared the page's kind with tc's already (free.h). */
void nd_free_other_kind(void *p, nd_page *pg, nd_segment *s, nd_tcache *tc)
{
    nd_free_sealed_in(p, s, pg, tc);
}

/* Every other free the fast path did not take. */
static nd_noinline void nd_free_checked(void *p, nd_segment *s, nd_page *pg)
{
    nd_lock_may_take(ND_LOCK_ID_threads);   /* a thread's start, adoption, large blocks */
    if (nd_unlikely(!nd_seg_cookie_ok(s)))
        nd_bad_header("free", p);
    if (nd_unlikely(s->kind != ND_SEG_SMALL && s->kind != ND_SEG_MEDIUM)) {
        nd_free_big(p, s, pg);
        return;
    }
    /* Every free that reaches here is checked in full (a page not in use
       has nothing carved). */
    if (nd_unlikely(!nd_page_block_ok_shared(pg, p)))
        nd_block_misuse("free", s, p);
    if (nd_unlikely(nd_secure_on())) {
        nd_free_secure(p, pg);   /* secure=2 */
        return;
    }
    /* The mark says it is free already, whoever frees it. */
    if (nd_unlikely(nd_block_is_marked(p)))
        nd_misuse("free", "double free", p);
    /* The block the thread's bin of its class took last, freed again with
       its mark erased in between, as the fast path checks (free.h): here
       when that bin is full, which a bin of one block (a medium class's,
       tcache.c) is after its first free. (NULL: the bin has no slots yet.) */
    void **cur = nd_load_relaxed(&nd_tls_tc->bins[pg->cls].cur);
    if (nd_unlikely(cur != NULL && *cur == p))
        nd_free_twice_in_a_row(p);
    /* prof=1: some of the page's blocks are samples (the page's kind sent
       every free of them here): p's sample, if it is one, is dropped. */
    if (nd_unlikely(nd_load_relaxed(&pg->sampled) != 0) && nd_page_sample_take(pg, p))
        nd_prof_drop_block(p);
    uintptr_t key = nd_load_relaxed(&pg->key);
    uintptr_t tid = nd_tid();
    if (key != tid || tid == 0) {
        /* Another heap's page (or no heap's): no cache of this kind here,
           or its bin was full. */
        nd_route_free_foreign(p, s, pg, key);
        return;
    }
    nd_free_own(p, pg);
}

void nd_free_slow(void *p, nd_page *pg)
{
    nd_segment *s = nd_seg_base(p);
    if (nd_opt(ND_OPT_secure) == 1)
        nd_free_sealed(p, s, pg);
    else
        nd_free_checked(p, s, pg);
}

/* ---- public prefixed names ------------------------------------------------- */

nd_public nd_entry void nodal_free(void *p) { nd_free_fast(p); }
nd_public void nodal_free_sized(void *p, size_t size) { nd_free_sized(p, size); }
nd_public void nodal_free_aligned_sized(void *p, size_t alignment, size_t size)
{
    nd_free_aligned_sized(p, alignment, size);
}
