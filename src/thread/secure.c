/*
 * secure.c - secure=1 and 2 (see secure.h): canaries in live blocks, the
 * random allocation order (a fresh page's blocks shuffled as they are
 * carved, with the generator kept here; secure=2 and the classes without a
 * cache: a random choice among a bin of candidate blocks), and,
 * under secure=2, fills checked at reuse and the quarantine of freed
 * blocks.
 *
 * Everything here runs on the thread that owns the thread cache (or, for a
 * shared heap, under its lock); nd_secure_free checks and fills the block
 * it is given whichever thread frees it, and keeps it in that thread's
 * quarantine.
 */
#include "secure.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "heap.h"
#include "meta.h"
#include "msg.h"
#include "options.h"
#include "os.h"
#include "tcache.h"

void nd_secure_init(void)
{
    if (nd_secure_on() && !nd_secure_full())
        nd_class_pad_requests(ND_SECURE_TAIL);
}

void nd_secure_overflow_at_end(const char *fn, const void *p, size_t block_size)
{
    if (*nd_block_end_word(p, block_size) == ND_FILL_WORD)   /* unlikely to be a program's */
        nd_fatal("%s(): heap overflow past the end of the block: %p (the canary in its last 8 bytes, "
                 "at byte %zu of the %zu-byte block, was overwritten)", fn, p,
                 block_size - ND_SECURE_TAIL, block_size);
    nd_fatal("%s(): heap overflow past the end of the block: %p (the canary in its last 8 bytes, at byte %zu "
             "of the %zu-byte block, was overwritten; %zu bytes are usable)", fn, p, block_size - ND_SECURE_TAIL,
             block_size, block_size - ND_SECURE_TAIL);
}

/* ---- the canary word ------------------------------------------------------- */

static inline uint32_t nd_canary32(const void *p, uint64_t delta)
{
    uint64_t h = ((uint64_t)(uintptr_t)p ^ nd_block_canary_key[0] ^ (delta << 40)) * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 32);
}

static inline uint64_t *nd_tail_of(const void *p, size_t block_size)
{
    return (uint64_t *)((uintptr_t)p + block_size - ND_SECURE_TAIL);
}

/* The slack bytes checked are the first min(delta, ND_SECURE_SLACK) after
   the request: one or two (unaligned) words from p + size. Both words lie
   inside the block (size + 8 <= block size; the second is read only when
   delta > 8); the first may overlap the canary word, which is why it is
   written before the canary and compared under a mask. */
_Static_assert(ND_SECURE_SLACK == 2 * sizeof(uint64_t), "the slack is two words");

static inline uint64_t nd_bytes_mask(size_t n)   /* the low n bytes (n <= 8) */
{
    return n >= 8 ? ~(uint64_t)0 : (((uint64_t)1 << (8 * n)) - 1);
}

/* Writes the canary word and the slack fill of a request of `size` bytes. */
static inline void nd_secure_set_tail(void *p, size_t block_size, size_t size)
{
    size_t delta = block_size - ND_SECURE_TAIL - size;
    char *end = (char *)p + size;
    uint64_t fill = ND_FILL_WORD;
    memcpy(end, &fill, sizeof fill);
    if (delta > 8)
        memcpy(end + 8, &fill, sizeof fill);
    *nd_tail_of(p, block_size) = nd_canary32(p, delta) | (uint64_t)delta << 32;
}

static _Noreturn nd_cold void nd_overflow(const char *fn, const void *p, const char *detail)
{
    nd_fatal("%s(): heap overflow past the end of the block: %p (%s)", fn, p, detail);
}

/* The request size of live block p (block_size bytes); aborts on damage. */
static size_t nd_secure_check_tail(const char *fn, const void *p, size_t block_size)
{
    uint64_t tail = *nd_tail_of(p, block_size);
    uint64_t delta = tail >> 32;
    char detail[160];
    if (nd_unlikely(delta > block_size - ND_SECURE_TAIL || (uint32_t)tail != nd_canary32(p, delta))) {
        if (tail == ND_FILL_WORD)   /* a free block whose mark was overwritten */
            nd_fatal("%s(): %s: %p (freed before, then written to)", fn,
                     strcmp(fn, "free") == 0 ? "double free" : "invalid pointer (block not in use)", p);
        snprintf(detail, sizeof detail, "the canary in its last 8 bytes, at byte %zu of the %zu-byte block, "
                 "was overwritten", block_size - ND_SECURE_TAIL, block_size);
        nd_overflow(fn, p, detail);
    }
    size_t size = block_size - ND_SECURE_TAIL - (size_t)delta;
    const char *end = (const char *)p + size;
    uint64_t w0, w1 = ND_FILL_WORD;
    memcpy(&w0, end, sizeof w0);
    if (delta > 8)
        memcpy(&w1, end + 8, sizeof w1);
    uint64_t bad0 = (w0 ^ ND_FILL_WORD) & nd_bytes_mask((size_t)delta);
    uint64_t bad1 = (w1 ^ ND_FILL_WORD) & nd_bytes_mask(delta > 8 ? (size_t)delta - 8 : 0);
    if (nd_unlikely((bad0 | bad1) != 0)) {
        size_t at = bad0 != 0 ? (size_t)__builtin_ctzll(bad0) / 8 : 8 + (size_t)__builtin_ctzll(bad1) / 8;
        snprintf(detail, sizeof detail, "byte %zu was written, %zu bytes were asked for", size + at, size);
        nd_overflow(fn, p, detail);
    }
    return size;
}

size_t nd_secure_size(const char *fn, const nd_page *pg, const void *p)
{
    if (!nd_secure_full()) {
        if (nd_unlikely(!nd_block_is_sealed(p, pg->block_size)))
            nd_secure_overflow_at_end(fn, p, pg->block_size);
        return pg->block_size - ND_SECURE_TAIL;
    }
    return nd_secure_check_tail(fn, p, pg->block_size);
}

void nd_secure_resize(const nd_page *pg, void *p, size_t size)
{
    nd_assert(size + ND_SECURE_TAIL <= pg->block_size);
    if (nd_secure_full())
        nd_secure_set_tail(p, pg->block_size, size);   /* (secure=1: the canary stays at the end) */
}

/* ---- state ----------------------------------------------------------------- */

static nd_secure *nd_secure_create(void)
{
    nd_secure *sc = nd_meta_alloc(sizeof(nd_secure));
    if (sc == NULL)
        return NULL;
    nd_secure_reseed(sc);
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        size_t n = ND_SECURE_BIN_BYTES / nd_class_size[c];
        sc->cap[c] = (uint8_t)(n < 2 ? 2 : n > ND_SECURE_BIN ? ND_SECURE_BIN : n);
    }
    return sc;
}

void nd_secure_reseed(nd_secure *sc)
{
    sc->rng = nd_os_random() ^ (uint64_t)(uintptr_t)sc;
}

nd_hot bool nd_secure_attach(nd_tcache *tc)
{
    if (!nd_secure_on() || tc->heap.shared)
        return true;
    tc->secure = nd_secure_create();
    if (tc->secure == NULL)
        return false;
    tc->heap.carve_rng = &tc->secure->rng;   /* a fresh page's blocks in a random order */
    return true;
}

nd_hot void nd_secure_detach(nd_tcache *tc)
{
    tc->heap.carve_rng = NULL;
    if (tc->secure != NULL)
        nd_meta_free(tc->secure, sizeof(nd_secure));
    tc->secure = NULL;
}

/* A random number below n (n > 0): nd_random64 (page.h), then Lemire's
   reduction. */
static inline uint32_t nd_secure_random(nd_secure *sc, uint32_t n)
{
    return (uint32_t)(((nd_random64(&sc->rng) >> 32) * (uint64_t)n) >> 32);
}

/* ---- malloc ------------------------------------------------------------------ */

/* A write into a free block, found at byte `at` of p when it was handed
   out again (or audited in quarantine). */
static _Noreturn nd_cold void nd_secure_modified(const void *p, const char *where)
{
    const nd_page *pg = nd_page_of(nd_seg_base(p), p);
    size_t n = pg->block_size < ND_FILL_MAX ? pg->block_size : ND_FILL_MAX;
    char detail[128];
    snprintf(detail, sizeof detail, "byte %zu of the %u-byte block was changed while it %s",
             nd_block_fill_damage(p, n), pg->block_size, where);
    nd_page_corrupt(pg, p, ND_CORRUPT_REUSE, detail);
}

/* Are the first ND_SECURE_AUDIT bytes of quarantined block p (of a page
   with blocks of block_size) as its free left them? */
static inline bool nd_secure_audit_ok(const void *p, size_t block_size)
{
    const uintptr_t *w = p;
    /* Every block has at least 16 bytes; those of 16 end with the mark. */
    _Static_assert(ND_SECURE_AUDIT == 32, "the audit reads four words");
    uintptr_t diff = (w[0] ^ ND_FILL_WORD) | (w[1] ^ nd_block_mark_of(p));
    if (block_size > 16)
        diff |= (w[2] ^ ND_FILL_WORD) | (w[3] ^ ND_FILL_WORD);
    return diff == 0;
}

/* Checks the first bytes of one quarantined block, in turn: a write into a
   freed block is seen within ND_QUARANTINE mallocs even if the block is
   never reused. */
static void nd_secure_audit(nd_secure *sc)
{
    if (sc->qcount == 0)
        return;
    if ((uint32_t)(sc->audit - sc->head) >= sc->qcount)
        sc->audit = sc->head;
    const void *p = sc->ring[sc->audit++ & (ND_QUARANTINE - 1)];
    if (nd_unlikely(!nd_secure_audit_ok(p, nd_page_of(nd_seg_base(p), p)->block_size)))
        nd_secure_modified(p, "waited in quarantine");
}

/* secure=1: a block of class c from tc (a cached class: its bin; else the
   small random bin of secure state sc, or for a shared heap the heap), its
   canary written. */
unsigned nd_secure_request_class(const nd_tcache *tc, size_t size)
{
    size_t off;
    if (!nd_secure_full() && nd_class_fast(size, &off)) {
        unsigned bin = (unsigned)(off / ND_BIN_BYTES), c = nd_bin_class[bin];
        if (c < ND_CLASS_COUNT && nd_bin_cap_max(tc, bin) != 0)
            return c;
    }
    return nd_secure_class_of(size);
}

static void *nd_secure_alloc_sealed(nd_tcache *tc, nd_secure *sc, unsigned c)
{
    void *p;
    unsigned bin = nd_class_bin[c];
    unsigned counted = bin < ND_CLASS_COUNT ? bin : c;   /* the request's tick (route.c) */
    if (bin < ND_CLASS_COUNT && nd_bin_cap_max(tc, bin) != 0) {
        /* The fast path pops what a refill here sealed. */
        nd_bin *b = &tc->bins[bin];
        if (b->cur == b->empty && !nd_tcache_fill(tc, bin))   /* sealed or checked there */
            return nd_tcache_uncount(tc, bin);
        p = nd_tcache_alloc(tc, bin);
    } else if (sc == NULL) {
        if (nd_heap_take_blocks(&tc->heap, c, &p, 1, 1) == 0)
            return nd_tcache_uncount(tc, counted);
        nd_block_unmark(p);
    } else {
        uint32_t n = sc->count[c];
        void **v = sc->bin[c];
        if (n == 0) {
            n = (uint32_t)nd_heap_take_blocks(&tc->heap, c, v, sc->cap[c], sc->cap[c]);
            /* Counted where the request was (route.c), whose cold part that
               count set up: class c's may not be (a node-bound cache has
               no bins, and past ND_LOOKUP_MAX its request is bin c - 1's). */
            nd_bin_counters *cs = &nd_bin_info_of(tc, counted)->counts;
            nd_count_inc(&cs->fills);
            nd_count_add(&cs->fill_blocks, n);
            if (n == 0)
                return nd_tcache_uncount(tc, counted);
        }
        uint32_t j = nd_secure_random(sc, n);
        p = v[j];
        v[j] = v[--n];
        sc->count[c] = (uint8_t)n;
        nd_block_unmark(p);
    }
    nd_block_seal(p, nd_class_size[c]);
    return p;
}

void nd_secure_keep(nd_tcache *tc, nd_page *pg, void *p)
{
    nd_secure *sc = tc->secure;
    unsigned c = pg->cls;
    /* The block this bin took last, freed again (its mark erased in
       between): as the free fast path's check. */
    if (nd_unlikely(sc != NULL && sc->count[c] > 0 && sc->bin[c][sc->count[c] - 1] == p))
        nd_misuse("free", "double free", p);
    nd_block_mark(p);
    /* Counted where its request was (route.c): its bin's class. */
    unsigned bin = nd_class_bin[c];
    nd_count_inc(&nd_heap_cstats(&tc->heap, bin < ND_CLASS_COUNT ? bin : c)->slow_frees);
    if (nd_likely(sc != NULL && sc->count[c] < sc->cap[c])) {
        sc->bin[c][sc->count[c]++] = p;
        return;
    }
    nd_heap_return_blocks(&tc->heap, pg, p, p, 1);
}

void *nd_secure_alloc(nd_tcache *tc, unsigned c, size_t size)
{
    nd_secure *sc = tc->secure;
    void *p;
    if (!nd_secure_full())
        return nd_secure_alloc_sealed(tc, sc, c);
    if (sc == NULL) {
        /* A shared heap (threads being torn down): no bin, no quarantine. */
        if (nd_heap_take_blocks(&tc->heap, c, &p, 1, 1) == 0)
            return nd_tcache_uncount(tc, c);
        *(uintptr_t *)p = ND_FILL_WORD;   /* its link, checked as it was followed */
    } else {
        nd_secure_audit(sc);
        uint32_t n = sc->count[c];
        void **bin = sc->bin[c];
        if (n <= sc->cap[c] / 2u) {
            size_t got = nd_heap_take_blocks(&tc->heap, c, bin + n, sc->cap[c] - n, sc->cap[c] - n);
            for (size_t i = n; i < n + got; i++)
                *(uintptr_t *)bin[i] = ND_FILL_WORD;   /* their links, checked as they were followed */
            n += (uint32_t)got;
            nd_bin_counters *cs = &nd_bin_info_of(tc, c)->counts;
            nd_count_inc(&cs->fills);
            nd_count_add(&cs->fill_blocks, got);
            sc->count[c] = (uint8_t)n;
            nd_assert2(nd_secure_is_valid(tc));
            if (n == 0)
                return nd_tcache_uncount(tc, c);
        }
        uint32_t j = nd_secure_random(sc, n);
        p = bin[j];
        bin[j] = bin[--n];
        sc->count[c] = (uint8_t)n;
    }
    size_t bsize = nd_class_size[c];
    if (nd_unlikely(!nd_block_fill_ok(p, bsize < ND_FILL_MAX ? bsize : ND_FILL_MAX)))
        nd_secure_modified(p, "was free");
    nd_block_unmark(p);
    nd_secure_set_tail(p, bsize, size);
    return p;
}

/* ---- free ---------------------------------------------------------------------- */

static inline void nd_secure_retire(nd_page *pg, void *p)
{
    if (nd_unlikely(nd_block_is_marked(p)))
        nd_misuse("free", "double free", p);
    size_t bsize = pg->block_size;
    nd_secure_check_tail("free", p, bsize);
    nd_block_fill(p, bsize);
    if (bsize > ND_FILL_MAX)
        *nd_tail_of(p, bsize) = ND_FILL_WORD;   /* past the fill: leave no valid canary behind */
}

/* Quarantined block p (a marked block start) is free for reuse: a block
   of a heap of tc's thread goes to the bin of that heap's cache (its whole
   fill is checked when it is handed out) or, the bin full, to its page;
   another heap's goes to its page's remote list. Its first bytes are
   checked here, before a link overwrites its first word. */
static inline void nd_secure_release(nd_tcache *tc, void *p)
{
    nd_page *pg = nd_page_of(nd_seg_base(p), p);
    if (nd_unlikely(!nd_secure_audit_ok(p, pg->block_size)))
        nd_page_corrupt(pg, p, ND_CORRUPT_FREED, "a block waiting in quarantine was modified");
    uintptr_t key = nd_load_relaxed(&pg->key);
    if (key == tc->heap.tid && tc->heap.tid != 0) {
        nd_heap *h = pg->heap;
        nd_secure *sc = nd_tcache_of_heap(h)->secure;
        unsigned c = pg->cls;
        if (nd_likely(sc != NULL && sc->count[c] < sc->cap[c])) {
            sc->bin[c][sc->count[c]++] = p;
            return;
        }
        nd_heap_return_blocks(h, pg, p, p, 1);
    } else {
        nd_heap_free_remote(pg, p);   /* nothing reads pg after this */
    }
}

/* The oldest quarantined block goes back. */
static inline void nd_secure_evict(nd_tcache *tc)
{
    nd_secure *sc = tc->secure;
    void *p = sc->ring[sc->head++ & (ND_QUARANTINE - 1)];
    sc->qcount--;
    sc->qbytes -= nd_page_of(nd_seg_base(p), p)->block_size;
    nd_secure_release(tc, p);
}

bool nd_secure_free(nd_page *pg, void *p, nd_tcache *tc)
{
    nd_secure_retire(pg, p);
    if (tc == NULL)
        return false;
    size_t block_size = pg->block_size;
    nd_secure *sc = tc->secure;
    if (sc->qcount == ND_QUARANTINE)
        nd_secure_evict(tc);
    while (sc->qbytes + block_size > ND_QUARANTINE_BYTES)   /* a block fits alone: qcount > 0 here */
        nd_secure_evict(tc);
    sc->ring[(sc->head + sc->qcount) & (ND_QUARANTINE - 1)] = p;
    sc->qcount++;
    sc->qbytes += block_size;
    return true;
}

void nd_secure_flush_quarantine(nd_tcache *tc)
{
    nd_secure *sc = tc->secure;
    while (sc->qcount > 0)
        nd_secure_evict(tc);
}

nd_hot void nd_secure_flush(nd_tcache *tc)
{
    nd_secure *sc = tc->secure;
    if (sc == NULL)
        return;
    nd_secure_flush_quarantine(tc);
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        while (sc->count[c] > 0) {
            void *p = sc->bin[c][--sc->count[c]];
            nd_heap_return_blocks(&tc->heap, nd_page_of(nd_seg_base(p), p), p, p, 1);
        }
    }
    nd_assert2(nd_secure_is_valid(tc));
}

/* ---- debug validation ---------------------------------------------------------- */

/* p is a marked (secure=2: and filled) block start of an in-use small or
   medium page. */
static bool nd_secure_block_ok(const void *p)
{
    const nd_segment *s = nd_seg_base(p);
    const nd_page *pg = nd_page_of((nd_segment *)s, p);
    if ((s->kind != ND_SEG_SMALL && s->kind != ND_SEG_MEDIUM) || !nd_load_relaxed(&pg->in_use) ||
        !nd_page_has_block(pg, p))
        return false;
    if (!nd_secure_full())
        return nd_block_is_marked(p);
    return nd_block_fill_ok(p, pg->block_size < ND_FILL_MAX ? pg->block_size : ND_FILL_MAX);
}

bool nd_secure_is_valid(const nd_tcache *tc)
{
    const nd_secure *sc = tc->secure;
    if ((sc != NULL) != (nd_secure_on() && !tc->heap.shared))
        return false;
    if (sc == NULL)
        return tc->heap.carve_rng == NULL;
    if (tc->heap.carve_rng != &sc->rng)
        return false;
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        if (sc->count[c] > sc->cap[c] || sc->cap[c] > ND_SECURE_BIN)
            return false;
        for (unsigned i = 0; i < sc->count[c]; i++) {
            const void *p = sc->bin[c][i];
            const nd_page *pg = nd_page_of(nd_seg_base(p), p);
            if (!nd_secure_block_ok(p) || pg->cls != c || pg->heap != &tc->heap)
                return false;
        }
    }
    if (sc->qcount > ND_QUARANTINE || sc->qbytes > ND_QUARANTINE_BYTES)
        return false;
    size_t bytes = 0;
    for (uint32_t i = 0; i < sc->qcount; i++) {
        const void *p = sc->ring[(sc->head + i) & (ND_QUARANTINE - 1)];
        if (!nd_secure_block_ok(p))
            return false;
        bytes += nd_page_of(nd_seg_base(p), p)->block_size;
    }
    return bytes == sc->qbytes;
}
