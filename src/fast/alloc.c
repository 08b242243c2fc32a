/*
 * alloc.c - allocation entry points: the malloc slow path (a thread's
 * first call, a thread being torn down), calloc, realloc, the aligned
 * family, usable size, the node-targeted calls, and the prefixed public
 * names (nodal_*). The standard names live in override.c and call the same
 * hidden functions.
 */
#include "alloc.h"

#include <errno.h>
#include <string.h>
#include "free.h"
#include "huge.h"
#include "init.h"
#include "large.h"
#include "lock.h"
#include "msg.h"
#include "prof.h"
#include "os.h"
#include "route.h"
#include "secure.h"
#include "shared.h"
#include "slab.h"
#include "tight.h"
#include "topo.h"

/* ---- slow paths ------------------------------------------------------------ */

/* The calling thread's plain tcache, or NULL: use a shared heap. */
static nd_tcache *nd_plain_tcache(void)
{
    if (nd_likely(nd_tls_thread->state == ND_THREAD_LIVE))
        return nd_tls_tc;
    nd_process_ensure();
    return nd_thread_start();
}

/* p, a small request's block from tc's heap, or if there was no room for
   it (an address-space limit: no segment would map), one from the plain
   shared heap of tc's node, whose pages include its node's reserve
   (node.h), else from another node's (plain memory promises no node, and
   the reserve is made on the node of the thread that mapped after the
   limit was set): a thread that never got a page still gets small blocks,
   as glibc's threads fall back to its main arena. */
static void *nd_malloc_or_shared(void *p, nd_tcache *tc, size_t alignment, size_t size)
{
    if (nd_likely(p != NULL) || size > ND_SMALL_MAX || errno != ENOMEM)
        return p;
    int node = tc->heap.node;
    p = nd_shared_malloc(node, false, alignment, size);
    for (int i = 0; p == NULL && i < nd_topo.mem_count; i++)
        if (nd_topo.mem_ids[i] != node)
            p = nd_shared_malloc(nd_topo.mem_ids[i], false, alignment, size);
    return p;
}

/* The whole slow path of malloc (the tick's look, if any, was taken). */
static nd_noinline void *nd_malloc_whole(size_t size, nd_tcache *tc)
{
    nd_lock_may_take(ND_LOCK_ID_threads);   /* a thread's start, maintenance */
    if (nd_unlikely(nd_tls_thread->state != ND_THREAD_LIVE)) {
        tc = nd_plain_tcache();
        if (tc == NULL)
            return nd_shared_malloc(nd_topo.mem_ids[0], false, 0, size);
    }
    return nd_malloc_or_shared(nd_route_malloc(tc, size), tc, 0, size);
}

/* nd_malloc_tick's look on another CPU than the last one (noinline: the
   short way keeps no register). */
static nd_noinline void *nd_malloc_look_node(size_t size, nd_tcache *tc, unsigned c, int cpu)
{
    if (nd_thread_look_node(cpu))
        return nd_tcache_look_pop(tc, c);
    return nd_malloc_whole(size, tc);
}

void *nd_malloc_tick(size_t size, nd_tcache *tc, size_t off)
{
    unsigned c = (unsigned)(off / ND_BIN_BYTES);
    int cpu;
    switch (nd_thread_look(tc, c, &cpu)) {
    case ND_LOOK_SAME: return nd_tcache_look_pop(tc, c);
    case ND_LOOK_CPU:  return nd_malloc_look_node(size, tc, c, cpu);
    default:           return nd_malloc_whole(size, tc);
    }
}

void *nd_malloc_slow(size_t size, nd_tcache *tc)
{
    /* A tick that ran out for follow_thread's look only, reached through
       another fast path than malloc's (operator new's): the bin of the
       request's class (secure=1 pads the fast paths' classes: not here). */
    if (nd_likely(size <= ND_MEDIUM_MAX) && !nd_secure_on()) {
        unsigned c = nd_class_of(size);
        if (nd_tcache_tick_out(tc, c))
            return nd_malloc_tick(size, tc, (size_t)c * ND_BIN_BYTES);
    }
    return nd_malloc_whole(size, tc);
}

/* The tcache for node-bound memory on `node` (NULL + errno when none; *shared
   set when the thread can only use the shared heap). */
static nd_tcache *nd_node_tcache(int node, bool *shared)
{
    *shared = false;
    nd_process_ensure();
    if (!nd_topo_node_has_memory(node)) {
        errno = EINVAL;
        return NULL;
    }
    if (nd_plain_tcache() == NULL) {
        *shared = true;
        return NULL;
    }
    return nd_thread_node_tcache(node);
}

void *nd_malloc_node_slow(size_t size, int node)
{
    bool shared;
    nd_tcache *tc = nd_node_tcache(node, &shared);
    if (tc == NULL)
        return shared ? nd_shared_malloc(node, true, 0, size) : NULL;
    return nd_route_malloc(tc, size);
}

void *nd_malloc_node_aligned(size_t alignment, size_t size, int node)
{
    bool shared;
    nd_tcache *tc = nd_node_tcache(node, &shared);
    if (tc == NULL)
        return shared ? nd_shared_malloc(node, true, alignment, size) : NULL;
    return nd_route_malloc_aligned(tc, alignment, size);
}

static nd_noinline void *nd_malloc_aligned_slow(size_t alignment, size_t size)
{
    nd_tcache *tc = nd_plain_tcache();
    if (tc == NULL)
        return nd_shared_malloc(nd_topo.mem_ids[0], false, alignment, size);
    return nd_malloc_or_shared(nd_route_malloc_aligned(tc, alignment, size), tc, alignment, size);
}

/* Aligned requests of more than 1,016 B at an alignment from 32 bytes to
   ND_ALIGN_NATURAL: those a size class can serve (class.h) come from the
   thread cache like any malloc; the rest take the slow path. */
static nd_noinline void *nd_malloc_aligned_big_secure(size_t alignment, size_t size)
{
    unsigned c;
    if (nd_secure_full() || size > ND_SECURE_CLASS_MAX)
        c = ND_CLASS_COUNT;   /* secure=2: every call on the slow path */
    else   /* secure=1: room for the canary; the bin holding an aligned class's blocks (class.h) */
        c = nd_class_aligned_bin[__builtin_ctzl(alignment) - ND_ALIGN_ROW0][nd_class_of(size + ND_SECURE_TAIL)];
    if (c < ND_CLASS_COUNT) {
        nd_tcache *tc = nd_tls_tc;
        ND_BIN_POP_OR(tc, (size_t)c * ND_BIN_BYTES, nd_malloc_aligned_slow(alignment, size));
    }
    return nd_malloc_aligned_slow(alignment, size);
}

/* `slow` for an empty bin, a tick that ran out and a size past the medium
   classes: nd_malloc_aligned_slow, or posix_memalign's
   nd_malloc_aligned_keep_errno, which takes secure=1's bins itself (so
   posix_memalign's fast path is aligned_alloc's: before, every such request
   of posix_memalign went through keep_errno, its errno saved and restored,
   69 instructions a call against aligned_alloc's 36; callgrind). */
static inline __attribute__((always_inline)) void *
nd_malloc_aligned_big_or(size_t alignment, size_t size, void *(*slow)(size_t, size_t))
{
    if (nd_unlikely(nd_secure_on()))
        return slow == nd_malloc_aligned_slow ? nd_malloc_aligned_big_secure(alignment, size) : slow(alignment, size);
    if (nd_likely(size <= ND_MEDIUM_MAX)) {   /* nd_class_aligned's class: the size rounded up, one load (class.h) */
        size_t c = nd_class_aligned_past_lookup(size, alignment);
        nd_tcache *tc = nd_tls_tc;
        ND_BIN_POP_OR(tc, c * ND_BIN_BYTES, slow(alignment, size));
    }
    return slow(alignment, size);
}

/* posix_memalign's slow path: errno as it was (it returns its error). The
   fast path's bin pop has been tried (secure=1's here: its bins). */
static nd_noinline void *nd_malloc_aligned_keep_errno(size_t alignment, size_t size)
{
    int saved = errno;
    void *p = nd_unlikely(nd_secure_on()) && alignment > ND_QUANTUM && alignment <= ND_ALIGN_NATURAL &&
              size > ND_ALIGN_FAST_MAX ?
              nd_malloc_aligned_big_secure(alignment, size) : nd_malloc_aligned_slow(alignment, size);
    if (p == NULL)
        errno = saved;
    return p;
}

/* An aligned request (alignment a power of two): up to 1,016 B at an
   alignment of up to ND_ALIGN_NATURAL, malloc's fast path with one more
   table (nd_class_aligned_off, class.h: the bin of the smallest class of
   blocks all aligned to it; under secure=1 with room for the canary, as
   malloc's; under secure=2 every bin is empty); `slow` for the rest, and
   for an empty bin or a tick that ran out. */
static inline __attribute__((always_inline)) void *
nd_malloc_aligned_or(size_t alignment, size_t size, void *(*slow)(size_t, size_t))
{
    if (alignment <= ND_QUANTUM) {
        if (slow == nd_malloc_aligned_slow)
            return nd_malloc_fast(nd_tls_tc, size);
        nd_tcache *tc = nd_tls_tc;   /* errno kept: malloc's bins, then `slow` */
        size_t c;
        if (nd_class_fast(size, &c))
            ND_BIN_POP_OR(tc, c, slow(alignment, size));
        return slow(alignment, size);
    }
    if (nd_likely(alignment <= ND_ALIGN_NATURAL)) {
        if (nd_likely(size <= ND_ALIGN_FAST_MAX)) {
            nd_tcache *tc = nd_tls_tc;
            /* row ctz - ND_ALIGN_ROW0: the constant part folds into the address */
            size_t i = ((size_t)(unsigned)__builtin_ctzl(alignment) * ND_ALIGN_ROW_LEN +
                        (size + ND_BIN_STEP - 1) / ND_BIN_STEP);
            size_t off = (size_t)(&nd_class_aligned_off[0][0] - ND_ALIGN_ROW0 * ND_ALIGN_ROW_LEN)[i] * ND_BIN_BYTES;
            ND_BIN_POP_OR(tc, off, slow(alignment, size));
        }
        return nd_malloc_aligned_big_or(alignment, size, slow);
    }
    return slow(alignment, size);
}

static inline __attribute__((always_inline)) void *nd_malloc_aligned(size_t alignment, size_t size)
{
    return nd_malloc_aligned_or(alignment, size, nd_malloc_aligned_slow);
}

/* ---- calloc and the aligned family --------------------------------------- */

static bool nd_mul_overflows(size_t a, size_t b, size_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}

/* Zeroes p unless it is a freshly mapped huge block (already zero). */
static void *nd_zero(void *p, size_t bytes)
{
    if (p == NULL)
        return NULL;
    if (bytes > ND_LARGE_MAX) {
        nd_segment *s = nd_seg_of(p);
        if (s != NULL && nd_huge_is_fresh(s))
            return p;
    }
    memset(p, 0, bytes);
    return p;
}

void *nd_calloc(size_t count, size_t size)
{
    size_t bytes;
    if (nd_mul_overflows(count, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    return nd_zero(nd_malloc_fast(nd_tls_tc, bytes), bytes);
}

void *nd_calloc_node(size_t count, size_t size, int node)
{
    size_t bytes;
    if (nd_mul_overflows(count, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    return nd_zero(nd_malloc_node_fast(bytes, node), bytes);
}

static bool nd_is_pow2(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

int nd_posix_memalign(void **out, size_t alignment, size_t size)
{
    if (!nd_is_pow2(alignment) || alignment < sizeof(void *))
        return EINVAL;
    void *p = nd_malloc_aligned_or(alignment, size, nd_malloc_aligned_keep_errno);
    if (p == NULL)
        return ENOMEM;
    *out = p;
    return 0;
}

void *nd_aligned_alloc(size_t alignment, size_t size)
{
    /* A power of two from 1 to ND_ALIGN_NATURAL, the alignments size
       classes serve, in one test of each (0 fails the second). */
    if (nd_likely((alignment & (alignment - 1)) == 0 && alignment - 1 < ND_ALIGN_NATURAL))
        return nd_malloc_aligned(alignment, size);
    if (!nd_is_pow2(alignment)) {
        errno = EINVAL;
        return NULL;
    }
    return nd_malloc_aligned(alignment, size);
}

void *nd_memalign(size_t alignment, size_t size)
{
    /* glibc: an alignment that is not a power of two is rounded up to one. */
    if (alignment > ((size_t)1 << 62)) {
        errno = EINVAL;
        return NULL;
    }
    if (!nd_is_pow2(alignment)) {
        size_t a = 1;
        while (a < alignment)
            a <<= 1;
        alignment = a;
    }
    return nd_malloc_aligned(alignment, size);
}

void *nd_valloc(size_t size)
{
    return nd_malloc_aligned(nd_os_page_size(), size);
}

void *nd_pvalloc(size_t size)
{
    size_t ps = nd_os_page_size();
    if (size > SIZE_MAX - ps) {
        errno = ENOMEM;
        return NULL;
    }
    size_t rounded = (size + ps - 1) & ~(ps - 1);
    return nd_malloc_aligned(ps, rounded == 0 ? ps : rounded);
}

/* ---- realloc --------------------------------------------------------------- */

/* prof=1: the bytes of sample slab cell p (nd_block_find found it): its
   class size. */
static nd_noinline size_t nd_slab_cell_usable(const nd_page *pg, const void *p)
{
    return nd_class_size[nd_slab_cell_find(pg, p)->cls];
}

/* The bytes of block p (in s, page pg) a program may use: its block size,
   or under secure=1 for a small or medium block the size it asked for (the
   canary comes right after). fn: the entry point, for a damaged canary. */
static size_t nd_block_usable(const char *fn, const nd_segment *s, const nd_page *pg, const void *p)
{
    if (s->kind == ND_SEG_HUGE)
        return nd_huge_usable(s, p);
    if (s->kind != ND_SEG_LARGE && nd_unlikely(nd_secure_on()))
        return nd_secure_size(fn, pg, p);
    if (s->kind == ND_SEG_LARGE) {   /* (a small or medium page's sampled counts its samples) */
        uint8_t sampled = nd_load_relaxed(&pg->sampled);
        if (nd_unlikely(sampled == ND_PROF_SLAB))
            return nd_slab_cell_usable(pg, p);
        if (nd_unlikely(sampled == ND_TIGHT_SLAB))   /* a live cell: nd_block_find */
            return nd_tight_cell_size((nd_segment *)s, pg, p) - (nd_secure_on() ? ND_SECURE_TAIL : 0);
    }
    return pg->block_size;
}

size_t nd_usable_size(const void *p)
{
    if (p == NULL)
        return 0;
    nd_page *pg;
    nd_segment *s = nd_block_find("malloc_usable_size", p, &pg);
    return nd_block_usable("malloc_usable_size", s, pg, p);
}

/* A new block like the one in s (same node kind). */
static void *nd_malloc_like(const nd_segment *s, size_t size)
{
    if (s->bound)
        return nd_malloc_node_fast(size, s->node);
    return nd_malloc_fast(nd_tls_tc, size);
}

/* The new block of a realloc that grows a block of s to size bytes: more
   room than asked, so that a block grown a little at a time is not copied
   at every step (not under secure=2: the canary goes right after what was
   asked for; secure=1's is at the block's end; nd_grown_room). Past ND_SMALL_MAX with
   that room it is a large block, whatever its size: a block that grows
   once tends to grow again, and a large block grows in place while the
   chunks after it are free (and costs only its touched pages until
   then), where a size class would copy at every class step. (From 13 KiB
   on, not 16: a block grown from 15,994 to 19,992 B took a medium class
   first and was copied once more, 20 KiB, at its next step, 42 % of the
   bytes a growth from 8 B to 64 KiB copied.) Under secure=1 the test is
   the class the room takes with its canary (nd_secure_request_class), not
   the room: a growth to 12,789 B, whose room (15,986 B) and canary took
   the 20 KiB class (its thread's bin), takes a large block then, not a
   medium one copied again into a large block at 25,008 B (bench/micro
   -m realloc; branch h47v). live: the calling thread has its caches
   (secure=1's test reads its plain cache's bins), which the caller read
   once. */
static bool nd_grown_is_large(size_t room, bool live)
{
    return room > ND_SMALL_MAX ||
           (nd_unlikely(nd_secure_on()) && live && nd_class_size[nd_secure_request_class(nd_tls_tc, room)] > ND_SMALL_MAX);
}

/* The room of a block of `usable` bytes grown to size (> usable): half
   as much again when it grows by less than half (a block grown in small
   steps: a string appended to, a buffer read into a piece at a time),
   a quarter otherwise (a caller that grows it geometrically itself, by
   doubling, needs less). Half: a block grown by a quarter and 8 B at a
   time from 8 B to 64 KiB (34 steps) was copied 15 times (38.9 KB) with a
   quarter, 11 times (26.8 KB) with half, and a realloc took 0.6x the
   time: it goes with the bytes copied more than with the copies, whose
   destinations are blocks no longer in the L1 (bench/micro -m realloc;
   docs/results.md, h51r). The block keeps the bytes
   of its class above that (usable size is the class's): at rest, a block
   grown in small steps holds at most half again what it was last asked
   for, a quarter before. */
static size_t nd_grown_room(size_t size, size_t usable)
{
    if (size > ND_SMALL_MAX || nd_secure_full())
        return size;
    return size - usable < usable / 2 ? size + size / 2 : size + size / 4;
}

/* The thread's state is read once: a thread with its caches takes a large
   block from the cache of the block's kind (its plain cache, or its cache
   for the node of bound memory, created on first use: that node has
   memory, s is there); any other thread (starting, exiting), or one whose
   node cache cannot be made, a size class (nd_malloc_like). usable: the
   old block's bytes. */
static void *nd_malloc_grown(const nd_segment *s, size_t size, size_t usable)
{
    size_t room = nd_grown_room(size, usable);
    if (nd_tls_thread->state == ND_THREAD_LIVE && size <= ND_LARGE_MAX && nd_grown_is_large(room, true)) {
        nd_tcache *tc = s->bound ? nd_thread_node_tcache(s->node) : nd_tls_tc;
        if (tc != NULL)
            return nd_route_grown(tc, size);
    }
    return nd_malloc_like(s, room);
}

/* realloc's lookup of block p: the free fast path's (nd_segcache's word,
   the page descriptor from the address, the multiply check of a block
   start, the free mark) for a small or medium block; nd_block_find's
   (the segment map, the header's cookie, every kind's checks) for any
   other, a secure=1 one, and whatever that check does not pass (which it
   reports). nd_block_find was a fifth of a realloc that grows a small
   block (perf, bench/micro -m realloc). */
static nd_segment *nd_realloc_find(const void *p, nd_page **pgp)
{
    nd_segment *s = nd_seg_base(p);
    nd_page *pg;
    if (!nd_page_lookup(p, &pg))
        return nd_block_find("realloc", p, pgp);
    if (s->kind == ND_SEG_LARGE) {
        /* The descriptor of p's chunk: a large block starts there, in use,
           neither kept (in_full) nor a slab nor sampled (the checks
           nd_block_find makes of a large block, but the header's cookie,
           which free's path leaves to its slow path too). nd_block_find
           was a ninth of a realloc that grows a block by small steps. */
        if (nd_load_relaxed(&pg->in_use) && pg->start == (const uint8_t *)p && !nd_load_relaxed(&pg->in_full) &&
            nd_load_relaxed(&pg->sampled) == 0) {
            *pgp = pg;
            return s;
        }
        return nd_block_find("realloc", p, pgp);
    }
    if ((s->kind != ND_SEG_SMALL && s->kind != ND_SEG_MEDIUM) || nd_secure_on() ||
        !nd_page_block_ok_shared(pg, p) || nd_block_is_marked(p))
        return nd_block_find("realloc", p, pgp);
    *pgp = pg;
    return s;
}

/* Large block p (s, pg: usable bytes) grown past ND_LARGE_MAX. Alone in
   its segment (plain, not sampled, no guard pages: nd_large_leave) and
   asked for no more than the segment holds, it stays where it is, a huge
   block whose mapping is the segment (nd_huge_from_large): no copy, no
   page moved, no system call up to the segment's end (bench/micro -m
   realloc -g 2m: 274.5 -> 30.5 ns a call, h55r). Asked for more, it
   would only leave its pool for a mapping that must grow past the
   segment's neighbours at once: the path below maps that where it has
   room. Otherwise a huge block with an eighth more room (as nd_huge_realloc
   grows one). When it is a fresh mapping (no page of it touched yet), the kernel moves p's
   pages into it (nd_large_move: a grown block, plain memory) rather than
   a copy of up to 1 MiB, and p's chunks go back to the kernel at once
   (copied, they stay resident for a purge delay). Into a huge block from
   its node's cache (resident pages) p is copied: moved, its pages would
   be dropped and p's chunks mapped again empty, and both faulted in again
   (bench/micro -m realloc -g 1048576, where every growth finds the last
   one's huge block cached: 675 ns a call, 0.53 s of system time in 1 M
   calls, against 465 ns copied). NULL (p intact) when no huge block is
   to be had. */
static nd_noinline void *nd_realloc_to_huge(nd_segment *s, nd_page *pg, void *p, size_t size, size_t usable)
{
    size_t room = size <= (size_t)PTRDIFF_MAX - size / 8 ? size + size / 8 : size;
    if (size <= ND_SEG_SIZE - (size_t)((uint8_t *)p - (uint8_t *)s) && nd_large_leave(s, pg, p)) {
        /* Its segment held no other block: it is the block's huge mapping
           now, p where it was (huge.h: nd_huge_from_large), grown past
           its 4 MiB as a huge block is; if that fails, p is a huge block
           of its 4 MiB less its offset, and the copy below takes it. */
        nd_huge_from_large(s, (size_t)((uint8_t *)p - (uint8_t *)s));
        size_t have = nd_huge_usable(s, p);
        nd_thread_count_free(false, usable);
        nd_thread_count_huge_alloc(have);
        if (size <= have)
            return p;
        void *q = nd_huge_realloc(s, p, size);
        if (q == NULL && (q = nd_malloc_like(s, room)) != NULL) {
            memcpy(q, p, have);
            nd_free_fast(p);
        }
        return q;
    }
    void *q = nd_malloc_like(s, room);
    if (q == NULL)
        return NULL;
    nd_segment *t = nd_seg_of(q);
    if (t != NULL && t->kind == ND_SEG_HUGE && t->fresh && !s->bound && nd_load_relaxed(&pg->sampled) == 0 &&
        ((uintptr_t)q & (nd_os_page_size() - 1)) == 0 && nd_large_move(s, pg, p, q)) {
        t->fresh = false;
        nd_huge_moved_in(t, (size_t)((uint8_t *)q - (uint8_t *)t), usable);
        nd_thread_count_free(false, usable);
        return q;
    }
    memcpy(q, p, usable);
    nd_free_fast(p);
    return q;
}

void *nd_realloc(void *p, size_t size)
{
    if (p == NULL)
        return nd_malloc_fast(nd_tls_tc, size);
    if (size == 0) {
        nd_free_fast(p);
        return NULL;
    }
    nd_page *pg;
    nd_segment *s = nd_realloc_find(p, &pg);
    size_t usable;
    if (s->kind == ND_SEG_HUGE) {
        usable = nd_huge_usable(s, p);
        if (size <= usable && (size > usable / 2 || (size > ND_LARGE_MAX && nd_huge_was_segment(s))))
            return p;
        if (size > ND_LARGE_MAX) {
            if (nd_unlikely(nd_load_relaxed(&s->pages[0].sampled)))
                nd_prof_forget(p, &s->pages[0]);   /* it may move: no longer sampled */
            void *q = nd_huge_realloc(s, p, size);
            if (q != NULL)
                return q;
        }
    } else if (s->kind == ND_SEG_LARGE) {
        usable = nd_block_usable("realloc", s, pg, p);
        long delta;
        if (nd_unlikely(nd_load_relaxed(&pg->sampled) >= ND_PROF_SLAB)) {
            /* A sample slab's cell, a tight slab's (tight.h): in place as
               a block of its class (secure=1: the canary stays at the
               cell's end). */
            if (size <= usable && (size > usable / 2 || usable <= 4 * ND_QUANTUM))
                return p;
        } else if (size <= usable &&
                   (size > ND_SMALL_MAX ||
                    nd_grown_is_large(size + size / 2, nd_tls_thread->state == ND_THREAD_LIVE)) &&
                   nd_large_stays(size, nd_load_relaxed(&pg->reserved))) {
            /* In place without the pool's lock (large.h); also a size a
               growth in small steps gives a large block (nd_grown_room:
               from 10,923 B on, or under secure=1 the class its room and
               canary take), not copied into a size class at its next
               step and into a large block again at the one after. */
            return p;
        } else if (size > ND_SMALL_MAX && size <= ND_LARGE_MAX && nd_large_resize(s, pg, size, &delta)) {
            nd_thread_count_large_resize(delta);
            return p;
        } else if (size > usable && size > ND_LARGE_MAX && size <= (size_t)PTRDIFF_MAX) {
            return nd_realloc_to_huge(s, pg, p, size, usable);
        }
    } else if (nd_unlikely(nd_secure_on())) {
        /* In place while the request and its canary fit (the canary moves). */
        usable = nd_secure_size("realloc", pg, p);
        size_t room = pg->block_size - ND_SECURE_TAIL;
        if (size <= room && (size > room / 2 || room <= 4 * ND_QUANTUM)) {
            nd_secure_resize(pg, p, size);
            return p;
        }
    } else {
        usable = pg->block_size;
        if (size <= usable && (size > usable / 2 || usable <= 4 * ND_QUANTUM))
            return p;
    }
    if (size > (size_t)PTRDIFF_MAX) {
        errno = ENOMEM;
        return NULL;
    }
    void *q = size > usable ? nd_malloc_grown(s, size, usable) : nd_malloc_like(s, size);
    if (q == NULL)
        return NULL;
    memcpy(q, p, usable < size ? usable : size);
    nd_free_fast(p);
    return q;
}

void *nd_reallocarray(void *p, size_t count, size_t size)
{
    size_t bytes;
    if (nd_mul_overflows(count, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    return nd_realloc(p, bytes);
}

void *nd_realloc_node(void *p, size_t size, int node)
{
    if (p == NULL)
        return nd_malloc_node_fast(size, node);
    if (!nd_topo_node_has_memory(node)) {
        errno = EINVAL;
        return NULL;
    }
    nd_page *pg;
    nd_segment *s = nd_block_find("nodal_realloc_node", p, &pg);
    if (s->bound && s->node == node && !s->interleaved)
        return nd_realloc(p, size);
    if (size == 0) {
        nd_free_fast(p);
        return NULL;
    }
    size_t usable = nd_block_usable("nodal_realloc_node", s, pg, p);
    void *q = nd_malloc_node_fast(size, node);
    if (q == NULL)
        return NULL;
    memcpy(q, p, usable < size ? usable : size);
    nd_free_fast(p);
    return q;
}

/* ---- public prefixed names ------------------------------------------------- */

nd_public void *nodal_malloc(size_t size) { return nd_malloc_fast(nd_tls_tc, size); }
nd_public void *nodal_calloc(size_t count, size_t size) __attribute__((alias("nd_calloc")));
nd_public void *nodal_realloc(void *p, size_t size) __attribute__((alias("nd_realloc")));
nd_public void *nodal_reallocarray(void *p, size_t count, size_t size) __attribute__((alias("nd_reallocarray")));
nd_public int nodal_posix_memalign(void **out, size_t alignment, size_t size) __attribute__((alias("nd_posix_memalign")));
nd_public void *nodal_aligned_alloc(size_t alignment, size_t size) __attribute__((alias("nd_aligned_alloc")));
nd_public void *nodal_memalign(size_t alignment, size_t size) __attribute__((alias("nd_memalign")));
nd_public void *nodal_valloc(size_t size) __attribute__((alias("nd_valloc")));
nd_public void *nodal_pvalloc(size_t size) __attribute__((alias("nd_pvalloc")));
nd_public size_t nodal_usable_size(const void *p) __attribute__((alias("nd_usable_size")));
nd_public size_t nodal_malloc_usable_size(const void *p) __attribute__((alias("nd_usable_size")));

nd_public nd_entry void *nodal_malloc_node(size_t size, int node) { return nd_malloc_node_fast(size, node); }
nd_public void *nodal_realloc_node(void *p, size_t size, int node) __attribute__((alias("nd_realloc_node")));
nd_public void *nodal_calloc_node(size_t count, size_t size, int node) __attribute__((alias("nd_calloc_node")));

nd_public void *nodal_aligned_alloc_node(size_t alignment, size_t size, int node)
{
    if (!nd_is_pow2(alignment)) {
        errno = EINVAL;
        return NULL;
    }
    if ((unsigned)node >= ND_MAX_NODES) {
        errno = EINVAL;
        return NULL;
    }
    if (alignment <= ND_QUANTUM)
        return nd_malloc_node_fast(size, node);
    return nd_malloc_node_aligned(alignment, size, node);
}
