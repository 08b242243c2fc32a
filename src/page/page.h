/*
 * page.h - one nodal page: its blocks, its free list and its remote-free
 * list. A page holds blocks of one size class and belongs to one heap; the
 * page layer keeps its own state consistent and knows nothing of heaps,
 * queues or thread caches (the `heap` and `bin` fields of a descriptor are
 * only stored here, for the layers above).
 *
 * The descriptor layout is in segment.h. A page's blocks:
 *
 *   start                                         start + reserved * block_size
 *   | b0 | b1 | ... | b(capacity-1) | not yet carved ........... |
 *     handed out (used), on `free`, or on `xfree`
 *
 * Remote frees. A block freed by a thread that does not own the page is
 * pushed on the page's xfree list with a compare-and-swap; the owner takes
 * the whole list back with one exchange when it next needs blocks from the
 * page. The two low bits of xfree (blocks are 16-byte aligned) hold a state:
 *
 *     xfree = [ block pointer ............................ | state ]
 *     NONE    remote frees just push.
 *     NOTIFY  the page sits on its owner's full queue; the first remote free
 *             turns NOTIFY into BUSY, (the heap layer then pushes the page
 *             on its owner's notified list), then clears BUSY. The owner
 *             moves notified pages back to their queue, so a full page that
 *             gets remote frees is found again without scanning.
 *     BUSY    a remote thread is between reading page->heap and pushing the
 *             page on that heap; the owner waits for it to clear before it
 *             abandons the heap or gives the page back to its segment.
 */
#ifndef ND_PAGE_H
#define ND_PAGE_H

#include <stdbool.h>
#include "class.h"
#include "config.h"
#include "segment.h"

/*
 * Freed blocks (small and medium pages). Every free block, wherever it
 * waits (a thread-cache bin, the page's free list, its remote list),
 * carries the freed-block mark in its second word; a malloc clears it when
 * it hands the block out. A free that finds the mark already there is a
 * double free (the slow path confirms it where it can).
 *
 * The mark is the block's own: a keyed function of the block's address
 * (nd_block_mark_of). Freed blocks leave their marks in memory that later
 * becomes other blocks' bytes (a large block carved out of a retired page
 * is not cleared, nor are the tails of reused blocks), and a program may
 * copy such bytes into a live block: realloc of an uninitialised large
 * block into a small one does exactly that. With one process-wide mark, the
 * copy made the live block look freed (its free aborted as a double free,
 * malloc_usable_size as "not in use"); a mark that names its address is
 * only ever found at that address, where every malloc clears it.
 *
 * The function is a folded multiply with two secret words k (XOR) and m
 * (multiplier): x = address ^ k, mark = (low(x * m) ^ high(x * m)) | 0x20
 * (128-bit product), not an XOR: a program that reads the marks of freed
 * blocks (a read after free) learns those blocks' marks and nothing that
 * computes the mark of another address, short of recovering k and m from
 * folded products (no cheaper way is known to us; it is not a
 * cryptographic MAC). With mark = secret ^ address, one freed block gave
 * the secret, and with it the mark of every block: a live block could be
 * dressed as a free one and a forged link would lead malloc to it. Bit 5
 * is set in every mark and clear in 0 (an unmarked block) and in the fill
 * word (0xdf bytes): a mark is never either, whatever the address.
 *
 * A block on a free list keeps its link in its first word: the index of
 * the next block in the page (plus one; 0 ends the list) in the low 16
 * bits, and above them 48 bits of a keyed folded multiply of the block's
 * address and that index (nd_link_set, other keys than the mark's). Every
 * link is checked when it is followed: its 48 bits must be the ones
 * computed for this block and this index, the index a carved block of the
 * page, and that block must carry its mark. Reading a freed block's link
 * gives where it leads, and no link from any block to any other place:
 * a write into a freed block cannot steer a later malloc to a live block,
 * nor to a block waiting in a thread cache (which would hand it out
 * twice), nor outside the page; it is reported instead. Replaying words
 * read earlier at the same addresses is not stopped (a link and a mark
 * read while that block was free, written back after it was reused).
 *
 *   free block:  [ link = mac(address, i) | i | mark = f(address) | (stale contents) ... ]
 *                  (48 bits)                (16)
 *   live block:  [ program data ...                          ]   (word 1 != mark)
 *
 * secure=2 also fills every free block (ND_FILL_BYTE over its first
 * ND_FILL_MAX bytes, the mark and a link excepted): blocks carved here get
 * it (nd_page_fill_carved), freed ones get it at free (secure.c), and the
 * fill is checked when a block is handed out again, so a write after free
 * or an overflow into a free block is seen at its next reuse.
 *
 *   free block, secure=2: [ link or fill | mark | 0xdf 0xdf ... (to byte 256) | ... ]
 *
 * secure=1 gives every small and medium block a canary in its last word
 * (secure.h has the layout and the checks at free): a folded multiply of
 * the block's address with two secrets of its own, so a canary read from
 * one block gives no other block's. It is written when a thread cache
 * takes the block from its page (tcache.c), and stays while the block is
 * live and while it waits freed in a thread cache or a transfer store,
 * where it is checked as the block goes in and as it comes out.
 *
 *   block, secure=1: [ program's bytes, or link | mark | ... | canary ]
 */
/* The mark's keys: [0] = k, [1] = m (see above). */
extern uint64_t nd_block_mark_key[2] nd_hidden;
/* The links' keys (see above). */
extern uint64_t nd_link_key[2] nd_hidden;
/* The canary's keys (secure=1; see above). */
extern uint64_t nd_block_canary_key[2] nd_hidden;
/* secure=2: carving fills the blocks it hands out (set at start-up). */
extern uint8_t nd_page_fill_carved nd_hidden;
/* Draws the secrets (process start). */
void nd_page_keys_init(void) nd_hidden;

/* The freed-block mark of the block at p (see above). */
/* The folded multiply: the low and the high word of the 128-bit product
   a * b, XORed. On x86-64 as one mulq in asm: gcc spills an __int128
   product to the stack in loops that keep many registers live (a flush's,
   a fill's), three instructions more per block. */
static inline uint64_t nd_mulfold(uint64_t a, uint64_t b)
{
#if defined(__x86_64__)
    uint64_t lo, hi;
    __asm__("mulq %3" : "=a"(lo), "=d"(hi) : "0"(a), "rm"(b) : "cc");
    return lo ^ hi;
#else
    __uint128_t x = (__uint128_t)a * b;
    return (uint64_t)x ^ (uint64_t)(x >> 64);
#endif
}

static inline uintptr_t nd_block_mark_of(const void *p)
{
    return (uintptr_t)(nd_mulfold((uint64_t)(uintptr_t)p ^ nd_block_mark_key[0], nd_block_mark_key[1]) | 0x20);
}
static inline bool nd_block_is_marked(const void *p) { return ((const uintptr_t *)p)[1] == nd_block_mark_of(p); }
static inline void nd_block_mark(void *p) { ((uintptr_t *)p)[1] = nd_block_mark_of(p); }
static inline void nd_block_unmark(void *p) { ((uintptr_t *)p)[1] = 0; }

/* secure=1's canary word of block p (block_size bytes: its last word). */
static inline uint64_t *nd_block_end_word(const void *p, size_t block_size)
{
    return (uint64_t *)((uintptr_t)p + block_size - sizeof(uint64_t));
}
/* The canary of block p: the folded multiply of its address with two
   secrets, as the mark's with two others (a canary read from one block
   gives no other block's). */
static inline uint64_t nd_block_canary(const void *p)
{
    return nd_mulfold((uint64_t)(uintptr_t)p ^ nd_block_canary_key[0], nd_block_canary_key[1]);
}
/* Is the canary of block p (block_size bytes) intact? */
static inline bool nd_block_is_sealed(const void *p, size_t block_size)
{
    return *nd_block_end_word(p, block_size) == nd_block_canary(p);
}
static inline void nd_block_seal(void *p, size_t block_size)
{
    *nd_block_end_word(p, block_size) = nd_block_canary(p);
}

#define ND_FILL_BYTE 0xdf
#define ND_FILL_WORD ((uintptr_t)0xdfdfdfdfdfdfdfdfull)
/* Bytes of a free block filled and checked (secure=2): all of most blocks,
   and where an overflow into a block lands; filling and checking more costs
   about 0.07 ns a byte per malloc/free pair (1 KiB blocks: 37 ns per pair
   at 256, 92 at 1024). */
#define ND_FILL_MAX  256
/* secure=2: gives free block p of `size` bytes (a multiple of 16) its fill
   (word 0 too) and the mark. */
static inline void nd_block_fill(void *p, size_t size)
{
    size_t n = (size < ND_FILL_MAX ? size : ND_FILL_MAX) / sizeof(uintptr_t);
    uintptr_t *w = p;
    w[0] = ND_FILL_WORD;
    w[1] = nd_block_mark_of(p);
    /* Small blocks (most) without a loop's set-up. */
    if (n > 2)
        w[2] = w[3] = ND_FILL_WORD;
    if (n > 4)
        w[4] = w[5] = ND_FILL_WORD;
    for (size_t i = 6; i < n; i += 2) {
        w[i] = ND_FILL_WORD;
        w[i + 1] = ND_FILL_WORD;
    }
}
/* Are the first n bytes of free block p (n >= 16, a multiple of 16) its
   fill and mark, as nd_block_fill left them? */
static inline bool nd_block_fill_ok(const void *p, size_t n)
{
    const uintptr_t *w = p;
    uintptr_t diff = (w[0] ^ ND_FILL_WORD) | (w[1] ^ nd_block_mark_of(p));
    n /= sizeof(uintptr_t);
    /* Small blocks (most) without a loop's set-up. */
    if (n > 2)
        diff |= (w[2] ^ ND_FILL_WORD) | (w[3] ^ ND_FILL_WORD);
    if (n > 4)
        diff |= (w[4] ^ ND_FILL_WORD) | (w[5] ^ ND_FILL_WORD);
    for (size_t i = 6; i < n; i += 2)
        diff |= (w[i] ^ ND_FILL_WORD) | (w[i + 1] ^ ND_FILL_WORD);
    return diff == 0;
}
/* The offset of the first of those bytes that changed (for the message),
   or n. */
size_t nd_block_fill_damage(const void *p, size_t n) nd_hidden;

#define ND_XSTATE_MASK   ((uintptr_t)3)
#define ND_XSTATE_NONE   ((uintptr_t)0)
#define ND_XSTATE_NOTIFY ((uintptr_t)1)
#define ND_XSTATE_BUSY   ((uintptr_t)2)

struct nd_heap;

/* The page descriptor of p in s where descriptors are per 64 KiB chunk
   (small pages, large chunks) and where they are per 512 KiB page
   (medium): nd_page_of without the header's desc_shift and desc_mask, for
   the free fast path, which knows the kind from its nd_segcache word
   (segment.h). A 4 MiB segment's lookup, as nd_page_of's is, short
   segments' included. */
static inline nd_page *nd_page_of_chunk(nd_segment *s, const void *p)
{
    uintptr_t off = ((uintptr_t)p >> (ND_CHUNK_SHIFT - ND_PAGE_DESC_SHIFT)) &
                    (((ND_SEG_SIZE >> ND_CHUNK_SHIFT) - 1) << ND_PAGE_DESC_SHIFT);
    return (nd_page *)((char *)s->pages + off);
}

static inline nd_page *nd_page_of_medium(nd_segment *s, const void *p)
{
    uintptr_t off = ((uintptr_t)p >> (ND_MEDIUM_PAGE_SHIFT - ND_PAGE_DESC_SHIFT)) &
                    (((ND_SEG_SIZE >> ND_MEDIUM_PAGE_SHIFT) - 1) << ND_PAGE_DESC_SHIFT);
    return (nd_page *)((char *)s->pages + off);
}
_Static_assert(ND_SMALL_PAGE_SHIFT == ND_CHUNK_SHIFT, "small pages are chunks: one lookup for small and large segments");

/* The page descriptor of p in s (small, medium and large segments). */
static inline nd_page *nd_page_of(nd_segment *s, const void *p)
{
    uintptr_t off = ((uintptr_t)p >> s->desc_shift) & s->desc_mask;
    return (nd_page *)((uintptr_t)s + __builtin_offsetof(nd_segment, pages) + off);
}

/* The multiplier of a block size b: floor(2^64 / b) + 1. Then
   b * mul = 2^64 + e with 1 <= e <= b, the e of nd_page_block_ok. */
static inline uint64_t nd_block_mul(uint32_t b)
{
    return UINT64_MAX / b + 1 + ((b & (b - 1)) == 0);
}

/* Block index of p in page pg (exact for every offset in a segment). */
static inline size_t nd_page_block_index(const nd_page *pg, const void *p)
{
    uint64_t off = (uint64_t)((uintptr_t)p - (uintptr_t)pg->start);
    return (size_t)(((__uint128_t)off * pg->mul) >> 64);
}

/* Is p, a pointer into pg's segment, the start of a carved block of pg?
   The free fast path's check, one multiply and one compare: with
   off = p - start = k * size + r (0 <= r < size) and size * mul = 2^64 + e,
   off * mul mod 2^64 = k * e + r * mul. For r == 0 that is k * e, below
   limit = capacity * e exactly when k < capacity. For r > 0 it is at least
   mul > 2^64 / size >= 2^47 (sizes are at most 128 KiB) while k * e stays
   below 2^23 (|off| < 4 MiB), so it never passes; nor does a p before
   start (the segment header before page 0): -d * mul mod 2^64 lands within
   2^47 of 2^64 or above 2^46. A page not carved (limit 0) takes nothing.
   tests/unit/size_classes.c checks every offset of every class. */
nd_inline bool nd_page_block_ok(const nd_page *pg, const void *p)
{
    uint64_t off = (uint64_t)((uintptr_t)p - (uintptr_t)pg->start);
    return off * pg->mul < pg->limit;
}

/* The same for a thread that does not own pg: limit only grows while the
   page is in use, and the carving of a block happened before it was
   handed out, so before any thread can free it. On x86-64 the relaxed
   load of limit is the compare's memory operand (an aligned 8-byte load
   is atomic there), which gcc does not fold from an atomic load: one
   instruction fewer in every free (the free fast path's); TSan builds
   keep the atomic load, which it checks. */
nd_inline bool nd_page_block_ok_shared(const nd_page *pg, const void *p)
{
    uint64_t off = (uint64_t)((uintptr_t)p - (uintptr_t)pg->start);
#if defined(__x86_64__) && !defined(ND_TSAN)
    bool below;
    __asm__("cmpq %[limit], %[x]" : "=@ccb"(below) : [x] "r"(off * pg->mul), [limit] "m"(pg->limit));
    return below;
#else
    return off * pg->mul < nd_load_relaxed(&pg->limit);
#endif
}

/* The check of a remote list's head (the pointer in pg's xfree word): a
   carved block start of pg, whatever the value (the range is checked
   too). */
static inline bool nd_page_link_ok(const nd_page *pg, const void *p)
{
    uint64_t off = (uint64_t)((uintptr_t)p - (uintptr_t)pg->start);
    return off < (uint64_t)pg->capacity * pg->block_size && off * pg->mul < pg->limit;
}

/* The links of free blocks (see above). The 48 keyed bits of the link of
   block b with index field f (f < 2^16; b < 2^48, so (b, f) -> x is one
   to one). */
#define ND_LINK_FIELD ((uint64_t)0xffff)
static inline uint64_t nd_link_mac(const nd_block *b, uint64_t f)
{
    return nd_mulfold(((uint64_t)(uintptr_t)b | f << 48) ^ nd_link_key[0], nd_link_key[1]) & ~ND_LINK_FIELD;
}
/* Links free block b of page pg to next, a block of pg, or NULL. Any
   thread (pg's start and mul do not change while it is in use). */
static inline void nd_link_set(const nd_page *pg, nd_block *b, const nd_block *next)
{
    uint64_t f = next == NULL ? 0 : (uint64_t)nd_page_block_index(pg, next) + 1;
    b->next = (nd_block *)(uintptr_t)(nd_link_mac(b, f) | f);
}
/* Follows the link of free block b of page pg: false if it is not one
   nd_link_set wrote for b (overwritten) or leads to no carved block (owner
   only: capacity); else *next is the block, or NULL at the list's end. */
static inline bool nd_link_get(const nd_page *pg, const nd_block *b, nd_block **next)
{
    uint64_t w = (uint64_t)(uintptr_t)b->next, f = w & ND_LINK_FIELD;
    if (nd_unlikely((w & ~ND_LINK_FIELD) != nd_link_mac(b, f) || f > pg->capacity))
        return false;
    *next = f == 0 ? NULL : (nd_block *)(pg->start + (size_t)(f - 1) * pg->block_size);
    return true;
}

/* Is p the start of a carved block of the small or medium page pg?
   (capacity is read atomically: remote frees ask while the owner carves) */
static inline bool nd_page_has_block(const nd_page *pg, const void *p)
{
    size_t idx = nd_page_block_index(pg, p);
    return (const uint8_t *)p >= pg->start && idx < nd_load_relaxed(&pg->capacity) &&
           pg->start + idx * pg->block_size == (const uint8_t *)p;
}

/* Is p the start of a block of pg, of any kind? (never true for a page not
   in use) */
bool nd_page_is_block_start(const nd_page *pg, const void *p) nd_hidden;

_Static_assert(ND_CLASS_COUNT * ND_BIN_BYTES <= 0xffffu, "every bin's offset fits a page's bin_off");
/* The bin_off of a page of class cls (segment.h). */
static inline uint16_t nd_page_bin_off(unsigned cls)
{
    unsigned bin = nd_class_bin[cls];
    /* No bin (secure=1's class 0): the last bin, which holds no class then. */
    nd_assert(bin < ND_CLASS_COUNT || nd_bin_class[ND_CLASS_COUNT - 1] >= ND_CLASS_COUNT);
    return bin < ND_CLASS_COUNT ? (uint16_t)(bin * ND_BIN_BYTES) : (uint16_t)ND_BIN_OFF_NONE;
}

/* A page's kind_word (segment.h) of kind and sampled, and its parts. */
static inline uint16_t nd_kind_word(unsigned kind, unsigned sampled)
{
    union { uint16_t w; uint8_t b[2]; } u = { .b = { (uint8_t)kind, (uint8_t)sampled } };   /* kind first */
    return u.w;
}
static inline unsigned nd_kind_word_kind(uint16_t w)
{
    union { uint16_t w; uint8_t b[2]; } u = { .w = w };
    return u.b[0];
}
static inline unsigned nd_kind_word_sampled(uint16_t w)
{
    union { uint16_t w; uint8_t b[2]; } u = { .w = w };
    return u.b[1];
}
/* The kind a page of `kind` (nd_kind_of, or ND_KIND_NONE: no owner) shows
   while `sampled` of its blocks hold samples (segment.h). */
static inline unsigned nd_page_kind_now(unsigned kind, unsigned sampled)
{
    return kind == ND_KIND_NONE || sampled == 0 ? kind : ND_KIND_PROF;
}

/* prof=1: block p, out of the small or medium page pg (in use), holds a
   live sample of the heap profile from now on: its bit of prof_mask set,
   then sampled + 1 and (while a heap owns pg) kind ND_KIND_PROF in one
   step, so that every free of pg's blocks takes the slow path, which asks
   nd_page_sample_take. Any thread: the owner's, another cache's whose bin
   held p, while others free pg's blocks and its owner exits or adopts it.
   Only for a page that nd_page_sample_fits. */
void nd_page_sample_add(nd_page *pg, const void *p) nd_hidden;
/* Does pg have a bit of prof_mask for each of its blocks (every page of a
   class above 1 KiB: 64 KiB / 1,280 B is 51 blocks)? */
static inline bool nd_page_sample_fits(const nd_page *pg) { return pg->reserved <= 64; }
/* prof=1: block p of pg, whose sampled is not 0, is being freed: true when
   it held a sample (its bit cleared, once), after which sampled - 1 and,
   when that was the page's last sample, its kind again, in one step;
   false for a block that is not one. */
bool nd_page_sample_take(nd_page *pg, const void *p) nd_hidden;

/* A free page of segment s goes into use for class cls, owned by `owner`
   (thread id `key`), for memory of `kind` (nd_kind_of). */
void nd_page_init(nd_page *pg, unsigned cls, uint8_t *start, size_t area,
                  struct nd_heap *owner, uintptr_t key, unsigned kind) nd_hidden;
/* An in-use page changes owner (adoption): new owner fields, its kind
   again, remote frees taken back. */
void nd_page_set_owner(nd_page *pg, struct nd_heap *owner, uintptr_t key, unsigned kind) nd_hidden;
/* The page loses its owner (its thread exited): frees no longer cache its
   blocks (they go to its remote list), and no heap takes from it until one
   adopts its segment. */
void nd_page_orphan(nd_page *pg) nd_hidden;
/* The page leaves use (no block out): waits out a notifier in flight, then
   clears its state. */
void nd_page_release(nd_page *pg) nd_hidden;
/* The page, no block out, stays in use, its owner's, for its class, and
   starts over as it was before its first carve: no block carved, none
   free, none a thread may free (limit 0), its memory freed memory
   (recarved: carved in address order under secure=1, as a released
   page's would be). Its remote-free word is left as it is: no block is
   on it, and a notifier may still be clearing BUSY (page.h). Owner only. */
void nd_page_keep(nd_page *pg) nd_hidden;

/* A random 64-bit word from generator state *s (wyrand: a Weyl sequence
   through a 128-bit multiply). Not for cryptography: it only has to make
   the next block unpredictable from the program's view (secure.h). */
static inline uint64_t nd_random64(uint64_t *s)
{
    uint64_t x = (*s += 0xa0761d6478bd642full);
    __uint128_t m = (__uint128_t)x * (x ^ 0xe7037ed1a0b428dbull);
    return (uint64_t)(m >> 64) ^ (uint64_t)m;
}

/* Puts v[0..n) (n < 2^21) in a random order (Fisher-Yates, generator *s).
   A draw of 64 bits gives three of 21 bits: j = (r * i) >> 21 (a page holds
   under 2^12 blocks, so no j is more than 0.2 % likelier than another). */
void nd_shuffle(void **v, size_t n, uint64_t *s) nd_hidden;

/* Takes n blocks (fewer if the page has no more) into out, which has room
   for max >= n: free list first, then blocks that fit in the OS pages
   carving has reached, then the remote frees, then carving new ones. The
   remote frees go straight into out, up to max of them (they have been
   walked once to be counted and checked; the ones past max become the
   free list). Returns how many, possibly more than n. Owner only.
   rng != NULL (secure=1 and 2, secure.h): the blocks carved by one call
   go into out in a random order (generator *rng), so that a fresh page
   hands its blocks out in a random order; a page released before (or of
   a segment formatted before: recarved, segment.h) holds freed memory, and
   its blocks are carved in address order, as freed blocks are taken (a
   program that fills and empties its pages every round, bench/prefetch,
   paid the random order of every round's pages: x2.2 the default's time,
   x1.3 without); the blocks taken from the free
   list go in address order, as the remote frees do (so freed blocks do
   not keep the order their page was carved in: a program that walks its
   blocks in the order it got them walks up through memory again). */
size_t nd_page_take(nd_page *pg, void **out, size_t n, size_t max, uint64_t *rng) nd_hidden;
/* Takes up to n blocks from pg's free list only (blocks already carved and
   free: no memory made resident, no remote list taken); returns how many.
   Owner only. */
size_t nd_page_take_free(nd_page *pg, void **out, size_t n) nd_hidden;
/* No block left to take without remote frees? */
static inline bool nd_page_is_exhausted(const nd_page *pg)
{
    return pg->free == NULL && pg->capacity == pg->reserved;
}
/* Would pg's next block be carved out of an OS page no block had (memory
   the page never had)? A page never released since its segment was
   formatted (recarved 0: a page released before, or of a segment used
   before, holds freed memory, resident unless purged since), with no
   block on its free list, none given back by other threads waiting, no
   room left in the OS pages carved (owner only). */
bool nd_page_would_fault(const nd_page *pg) nd_hidden;
/* Gives `count` blocks, linked head..tail, back to pg (owner only). More
   blocks back than out is a double free: abort. */
void nd_page_give(nd_page *pg, nd_block *head, nd_block *tail, uint32_t count) nd_hidden;

/* Takes the remote frees of pg into its free list (owner only). */
void nd_page_collect(nd_page *pg) nd_hidden;
/* Any thread: pushes block b on pg's remote-free list. Returns the state
   the list was in; ND_XSTATE_NOTIFY means the caller now holds BUSY and
   must notify the owner, then call nd_page_xdone. */
uintptr_t nd_page_xpush(nd_page *pg, nd_block *b) nd_hidden;
/* The same for `count` blocks linked head..tail (all marked; the tail's
   link is set here). */
uintptr_t nd_page_xpush_chain(nd_page *pg, nd_block *head, nd_block *tail) nd_hidden;
void      nd_page_xdone(nd_page *pg) nd_hidden;
/* Arms notification for a page going on the full queue. False if remote
   frees are already waiting (then the page is not full after all). */
bool nd_page_arm(nd_page *pg) nd_hidden;
/* Stops notification (waiting out a notifier in flight); true if the page
   was armed, false if not (a notifier may then have pushed it). */
bool nd_page_disarm(nd_page *pg) nd_hidden;
/* In a child after fork, single-threaded: a notifier that did not survive the
   fork may have left pg BUSY, which its owner would wait out forever. Clears
   BUSY (the waiting blocks stay on the list); true if it was set. */
bool nd_page_fork_clear_busy(nd_page *pg) nd_hidden;

/* check=2: fills p's bytes past its link and mark with 0xdf. */
void nd_page_junk(nd_page *pg, void *p) nd_hidden;
/* A damaged free list or remote list, or a freed block written to: one
   line, "nodal: WHAT: BLOCK (DETAIL; ...)", abort. */
_Noreturn void nd_page_corrupt(const nd_page *pg, const void *block, const char *what, const char *detail) nd_hidden;
#define ND_CORRUPT_LIST  "malloc(): corrupted free list"
#define ND_CORRUPT_FREED "free(): block modified after free"
#define ND_CORRUPT_REUSE "malloc(): free block modified after free"   /* secure=2 at reuse; secure=1 out of a transfer store */

/* Debug check of the invariants above struct nd_page (segment.h); true
   when they hold. Cost: O(blocks). */
bool nd_page_is_valid(const nd_page *pg) nd_hidden;

#endif /* ND_PAGE_H */
