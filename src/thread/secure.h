/*
 * secure.h - secure=1 and secure=2, the hardened modes: what they add to a
 * thread cache and the checks they make on every small and medium block.
 *
 * Owns: struct nd_secure, the canary word of each live block, the random
 * allocation order, the quarantine (secure=2). (The fill of free blocks is
 * the page layer's, page.h; guard pages are the segment's, large blocks'
 * and huge blocks', segment.h, large.h, huge.h.)
 *
 * secure=1, for production: the malloc fast path stays as it is; the
 * fast paths' class table is padded by ND_SECURE_TAIL bytes
 * (nd_class_pad_requests), so a block has room for a canary word after
 * any request, and the word is written when a block enters a thread
 * cache's bin from its page (tcache.c's fill: nd_block_seal). Blocks the
 * caches hand each other through the transfer store of their kind keep
 * it: checked with their mark as they go in and as they come out
 * (tcache.c), so a write over either while a block waits there aborts
 * when a cache takes it, before it can be handed out, or when a sweep
 * sends it to its page. The allocation order of a
 * fresh page is random: carving shuffles the blocks it carves (the heap's
 * carve_rng, page.h; a page released and carved again holds freed memory
 * and is carved in address order); freed blocks that come back through their page are
 * reused in address order (a bin's own in the order freed, last first),
 * not shuffled again at refill (as mimalloc's secure mode, which reuses
 * them in the order freed). The plain cache's kind is its memory's with
 * ND_KIND_SEALED, which matches no page, so every free takes the fast
 * path's other-kind branch (nd_free_other_kind, free.c): block start, not
 * freed already, canary intact, then into the bin. Classes above ND_LOOKUP_MAX (which the fast path does not pad) and
 * node-bound caches have bins of capacity 0: their mallocs come here
 * (nd_secure_alloc: a random block of a small bin of candidates), their
 * frees too (nd_secure_keep).
 *
 *   p                                   p + size - 8      p + size
 *   | program's bytes (size - 8 usable) ...   | canary word |
 *
 *   canary word = a keyed folded multiply of the block's address. It stays
 *   in place while the block is cached (nothing nodal writes reaches it:
 *   link and mark are words 0 and 1, and every block is 32 bytes at least),
 *   and free checks it. malloc_usable_size says size - 8.
 *
 * secure=2, the debugging level: every thread cache bin has capacity 0
 * (tcache.c), so every call takes a slow path:
 *   malloc (thread.c)  -> nd_secure_alloc: audit one quarantined block; a
 *                         random block of the class's bin (refilled from
 *                         the heap); its fill checked; its canary written
 *   free   (free.c)    -> nd_secure_free: not freed already, canary
 *                         intact; filled and marked; the calling thread
 *                         keeps it in quarantine; the oldest block there
 *                         goes back to its cache's bin or its page
 *
 * A live block of a request of n bytes under secure=2 (class size at
 * least n + 8):
 *
 *   p                         p + n          p + size - 8      p + size
 *   | program's n bytes ...   | 0xdf x min(16, slack) ... | canary word |
 *
 *   canary word (little-endian u64) = canary32(p, delta) | delta << 32,
 *   delta = size - 8 - n (the slack), canary32 a keyed hash of the block's
 *   address and delta. A write past the n bytes changes a slack byte or the
 *   canary (its low bytes come first); free checks both. The canary also
 *   tells malloc_usable_size and realloc the request's size.
 */
#ifndef ND_SECURE_H
#define ND_SECURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "class.h"
#include "config.h"
#include "options.h"
#include "page.h"

struct nd_tcache;

#define ND_SECURE_TAIL      8      /* bytes a request is padded by: the canary word */
#define ND_SECURE_CLASS_MAX (ND_MEDIUM_MAX - ND_SECURE_TAIL)   /* largest request a class serves */
#define ND_SECURE_SLACK     16     /* bytes after the request filled and checked */
#define ND_SECURE_BIN       32     /* most candidate blocks per class ... */
#define ND_SECURE_BIN_BYTES (64 * ND_KiB)   /* ... and at most this many bytes of them (2 at least) */
#define ND_QUARANTINE       256    /* most blocks a thread keeps freed before reuse ... */
#define ND_QUARANTINE_BYTES ND_MiB /* ... and at most this many bytes of them */
#define ND_SECURE_AUDIT     32     /* bytes of one quarantined block each malloc checks (where an
                                      overflow into it lands first) */

_Static_assert((ND_QUARANTINE & (ND_QUARANTINE - 1)) == 0, "the quarantine is a ring indexed by a mask");
_Static_assert(ND_MEDIUM_MAX <= ND_QUARANTINE_BYTES, "any block fits in the quarantine");
_Static_assert(ND_SECURE_BIN <= 255, "bin counts are bytes");

/*
 * The secure state of one thread cache (plain or node-bound).
 * Invariants:
 *  - bin[c][0..count[c]) are free blocks of class c taken out of pages of
 *    the cache's heap (counted in their pages' used), each carrying the
 *    freed-block mark and, under secure=2, the fill with ND_FILL_WORD in
 *    word 0 (page.h); count[c] <= cap[c] <= ND_SECURE_BIN, cap[c] = the
 *    class's bin size. Under secure=1 only classes whose thread-cache bin
 *    has capacity 0 use them.
 *  - the quarantine (secure=2; empty under secure=1) holds the blocks this thread freed most recently (the
 *    plain cache's only: a thread has one), oldest first, in
 *    ring[(head + i) % ND_QUARANTINE] for i < qcount: block starts of in-use
 *    small or medium pages of any heap, out of their pages (counted in
 *    used), each marked and filled (word 0 too); qbytes = the sum of their
 *    block sizes <= ND_QUARANTINE_BYTES; qcount <= ND_QUARANTINE.
 *  - audit is the ring position the next malloc checks (any value: it is
 *    brought into [head, head + qcount) before use).
 */
typedef struct nd_secure {
    uint64_t rng;
    uint32_t head, qcount, audit;
    uint32_t pad_;
    size_t   qbytes;
    void    *ring[ND_QUARANTINE];
    uint8_t  count[ND_CLASS_COUNT];
    uint8_t  cap[ND_CLASS_COUNT];
    void    *bin[ND_CLASS_COUNT][ND_SECURE_BIN];
} nd_secure;

/* Draws the canary keys and, under secure=1, pads the fast paths' class
   table (process start, before any thread cache exists). */
void nd_secure_init(void) nd_hidden;

/* Class c, or under secure=1 the next one when c has no bin (class 0,
   which no padded request takes, class.h): so every block handed out is
   of a bin's class, and statistics count it at that bin. The next class
   keeps any alignment up to 16 bytes that c has. */
static inline unsigned nd_secure_class_with_bin(unsigned c)
{
    return c < ND_CLASS_COUNT && nd_class_bin[c] >= ND_CLASS_COUNT ? c + 1 : c;
}

/* The class of a request of `size` bytes (<= ND_SECURE_CLASS_MAX) with its
   canary word: under secure=1 a block keeps its link, mark and canary
   apart, so 24 bytes at least (the fast paths' padded table agrees). */
static inline unsigned nd_secure_class_of(size_t size)
{
    size_t need = size + ND_SECURE_TAIL;
    if (need < 3 * sizeof(uint64_t) && !nd_secure_full())
        need = 3 * sizeof(uint64_t);
    return nd_secure_class_with_bin(nd_class_of(need));
}

/* The class a malloc of `size` bytes (<= ND_SECURE_CLASS_MAX) takes on
   the slow path: under secure=1 the class of the bin the fast path pops
   for it (so that a refill here serves the fast path), when that bin has
   a cache; else nd_secure_class_of. */
unsigned nd_secure_request_class(const struct nd_tcache *tc, size_t size) nd_hidden;

/* ---- secure=1's canary word: page.h (nd_block_canary, nd_block_seal, nd_block_is_sealed) ---- */
_Static_assert(ND_SECURE_TAIL == sizeof(uint64_t), "the canary is the block's last word (nd_block_end_word)");

/* secure=1: the canary of block p was overwritten ("FN(): heap overflow
   past the end of the block"), abort. */
_Noreturn void nd_secure_overflow_at_end(const char *fn, const void *p, size_t block_size) nd_hidden
    __attribute__((cold));

/* secure=1: frees block p (a block start of page pg, of tc's heap, whose
   class has no thread-cache bin; checked already): marked, then kept in
   tc's small bin of its class, or given back to its page. */
void nd_secure_keep(struct nd_tcache *tc, nd_page *pg, void *p) nd_hidden;
/* Gives thread cache tc its secure state when secure=1 (a shared heap's
   cache has none); false when out of memory. nd_secure_detach takes it off
   (its blocks given back first: nd_secure_flush). */
bool nd_secure_attach(struct nd_tcache *tc) nd_hidden;
void nd_secure_detach(struct nd_tcache *tc) nd_hidden;
/* New randomness for the allocation order (a forked child). */
void nd_secure_reseed(nd_secure *sc) nd_hidden;

/* A block of class c (nd_class_size[c] >= size + ND_SECURE_TAIL) for a
   request of `size` bytes, from tc's heap (the request is counted by the
   caller: on failure it is uncounted here and NULL returned, errno =
   ENOMEM). secure=2: aborts when the block's fill was changed while it
   was free. */
void *nd_secure_alloc(struct nd_tcache *tc, unsigned c, size_t size) nd_hidden;

/* secure=2: frees block p of page pg (a block start of an in-use page): aborts with
   a message if it is free already or written past its request; otherwise
   fills and marks it and keeps it in tc's quarantine (tc: the calling
   thread's plain cache), the oldest blocks beyond its bounds going back.
   tc == NULL (a thread without one): returns false, and the caller gives
   the block (filled and marked) back to its page. */
bool nd_secure_free(nd_page *pg, void *p, struct nd_tcache *tc) nd_hidden;

/* The request size of live block p of page pg (secure=1: its block size
   less the canary word), its canary checked: a damaged one aborts with
   "FN(): heap overflow past the end of the block". */
size_t nd_secure_size(const char *fn, const nd_page *pg, const void *p) nd_hidden;
/* Live block p of page pg now holds a request of `size` bytes (realloc in
   place; size + ND_SECURE_TAIL <= its block size). */
void nd_secure_resize(const nd_page *pg, void *p, size_t size) nd_hidden;

/* Every block of tc's bins and quarantine back to its page (nothing
   without a secure state). */
void nd_secure_flush(struct nd_tcache *tc) nd_hidden;
/* Every block of tc's quarantine back (checked): a thread's exit. */
void nd_secure_flush_quarantine(struct nd_tcache *tc) nd_hidden;

/* Debug check of the invariants above (tc's secure state, which tc has
   exactly when secure=1 and it is not a shared heap's). */
bool nd_secure_is_valid(const struct nd_tcache *tc) nd_hidden;

#endif /* ND_SECURE_H */
