/*
 * secure.h - secure=1, the hardened mode: what it adds to a thread cache
 * (a small random bin of candidate blocks per size class, and a quarantine
 * of freed blocks) and the checks it makes on every small and medium block.
 *
 * Owns: struct nd_secure, the canary word after each live block, the
 * random choice of the next block, the quarantine. (The fill of free
 * blocks is the page layer's, page.h; guard pages are the segment's,
 * large blocks' and huge blocks', segment.h, large.h, huge.h.)
 *
 * How secure=1 reaches here without touching the fast paths: every thread
 * cache bin has capacity 0 (tcache.c), so the malloc fast path always finds
 * its bin empty and the free fast path finds it full; nd_check_frees sends
 * frees into cold pages to the slow path too. The slow paths call in here:
 *   malloc (thread.c)  -> nd_secure_alloc: audit one quarantined block; a
 *                         random block of the class's bin (refilled from
 *                         the heap); its fill checked; its canary written
 *   free   (free.c)    -> nd_secure_free: not freed already, canary
 *                         intact; filled and marked; the calling thread
 *                         keeps it in quarantine; the oldest block there
 *                         goes back to its cache's bin or its page
 *
 * A live block of a request of n bytes (class size at least n + 8):
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
 *    freed-block mark and the fill with ND_FILL_WORD in word 0 (page.h);
 *    count[c] <= cap[c] <= ND_SECURE_BIN, cap[c] = the class's bin size.
 *  - the quarantine holds the blocks this thread freed most recently (the
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

/* Draws the canary key (process start). */
void nd_secure_init(void) nd_hidden;
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
   ENOMEM). Aborts when the block's fill was changed while it was free. */
void *nd_secure_alloc(struct nd_tcache *tc, unsigned c, size_t size) nd_hidden;

/* Frees block p of page pg (a block start of an in-use page): aborts with
   a message if it is free already or written past its request; otherwise
   fills and marks it and keeps it in tc's quarantine (tc: the calling
   thread's plain cache), the oldest blocks beyond its bounds going back.
   tc == NULL (a thread without one): returns false, and the caller gives
   the block (filled and marked) back to its page. */
bool nd_secure_free(nd_page *pg, void *p, struct nd_tcache *tc) nd_hidden;

/* The request size of live block p of page pg (its canary checked: a damaged
   one aborts with "FN(): heap overflow past the end of the block"). */
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
