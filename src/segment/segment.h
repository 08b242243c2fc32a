/*
 * segment.h - segments: the aligned regions nodal gets from the OS, their
 * page descriptors, and the segment map that tells nodal's pointers from
 * everyone else's.
 *
 * Owns: struct nd_segment and the layout of struct nd_page (the page
 * operations are in page.h), the segment map (nd_segmap_top, nd_segcache),
 * and mapping, binding, committing, purging and unmapping segment memory.
 * Huge blocks (huge.h) are segments too; their mapping is huge.c's.
 *
 * A segment (4 MiB, 4 MiB-aligned; huge ones larger):
 *
 *   seg +0       +16 KiB                 +64 KiB                      +4 MiB
 *   | nd_segment | page 0 blocks ...     | page 1 blocks ...    | ... |
 *   | (header +  |                       |                      |     |
 *   |  64 page   |                       |                      |     |
 *   |  descrs)   |                       |                      |     |
 *
 *   kind SMALL: 64 pages of 64 KiB; MEDIUM: 8 pages of 512 KiB; page i
 *   covers [seg + i*page_size, seg + (i+1)*page_size) except that page 0
 *   starts after the header. LARGE: one page holding one block. HUGE: one
 *   block, segment sized to fit, 4 KiB header.
 *
 *   A short segment (size < 4 MiB) maps the first `size` bytes of its
 *   4 MiB window, page_count pages; the rest of the window is not nodal's.
 *   SMALL or MEDIUM: made only when a 4 MiB mapping fails (an
 *   address-space limit). Unmapped as soon as it is empty. A LARGE segment
 *   is always 4 MiB, but may have holes: free chunks unmapped when a
 *   mapping failed for lack of address space (`unmapped`, below). So may
 *   a SMALL or MEDIUM one (nd_seg_release_pages): its free pages' chunks,
 *   and its pages' ends past their blocks.
 *
 *   secure=1: the last OS page of every 4 MiB segment is a guard page
 *   (inaccessible, nd_seg_guard bytes; 0 otherwise): the last page's
 *   blocks (and large blocks) end before it, so an overflow past the last
 *   block of a segment faults instead of reaching the next segment's header.
 *
 *   Owner of a pointer p:  seg = p & ~(4 MiB - 1)
 *                          page = &seg->pages[(p - seg) >> seg->page_shift]
 *
 * The segment map has a byte per 4 MiB window w = p >> 22 of the address
 * space below 2^ND_VA_BITS, in two levels: nd_segmap_top (static, 8 KiB)
 * points to a leaf per 2^16 windows (256 GiB, a leaf of 64 KiB), mapped
 * when a mapping of nodal's first lands in its range, published with one
 * compare-and-swap (release) and never unmapped; NULL where none did. So
 * the map takes 8 KiB plus 64 KiB per 256 GiB range nodal uses, of the
 * address space an RLIMIT_AS counts (a byte per window of the whole space
 * took 32 MiB), and caps nothing. The byte:
 *   0   not nodal's
 *   1   a segment starts in window w (p's header is at p & ~(4 MiB-1))
 *   d+1 window w is the d-th 4 MiB chunk (1 <= d < ND_SEGMAP_REACH) of a
 *       huge segment (the header is d chunks lower: a block aligned beyond
 *       4 MiB starts there, or it is an interior pointer)
 * A window's byte is written only by the owner of the mapping covering
 * it: set before the mapping is handed out, cleared before it is unmapped.
 *
 * The free fast path reads neither level: nd_segcache is a direct-mapped
 * table of 2^16 words (512 KiB) in which a segment of 4 MiB or less
 * (nd_seg_map's) claims the slot (w + 1) % 2^16 with the word w + 1, when
 * the slot is free (compare-and-swap; released before the segment is
 * unmapped). The word names its window in full, so the test "word == w+1"
 * (one load, one compare, as the flat byte map's) is true only for a
 * window where a segment starts. A MEDIUM segment's word also carries
 * ND_SEGCACHE_MEDIUM (bit 63, above every key), set and cleared by
 * nd_seg_format as it gives the segment its kind: the word then says how
 * to find a pointer's page descriptor without the segment header, one
 * per 64 KiB chunk when it equals w + 1 (small pages, large chunks, a
 * free segment), one per 512 KiB when it is w + 1 | ND_SEGCACHE_MEDIUM
 * (nd_page_of_chunk, nd_page_of_medium: page.h). The free fast path's
 * first compare is the same; its chain of dependent loads is one shorter
 * (word, descriptor, bin, slot instead of header, descriptor, bin, slot). Any other free (a huge block, a pointer
 * that is not nodal's, a segment whose slot another window 256 GiB away
 * holds) goes to the special path, which asks the segment map: a segment
 * without a slot loses only the fast path, never its memory, and claims a
 * slot again whenever it is formatted anew.
 *
 * Page descriptor (two cache lines):
 *   line 0, read by every thread's free fast path, written by the owner:
 *     key       owner thread id (a multiple of 16); ND_KEY_NONE (1) when no
 *               thread owns the page (and for large blocks)
 *     free, start, mul, limit, block_size, used, capacity, reserved,
 *     cls, in_use, in_full, bin_off
 *     kind      the page's kind of memory, for the free fast path: any
 *               thread caches a freed block in its cache of the same kind
 *               (nd_kind_of: plain memory of node n, or bound to node n);
 *               ND_KIND_NONE when the page holds no small or medium blocks
 *               that may be cached (not in use, abandoned, large, huge);
 *               ND_KIND_PROF while some of its blocks are samples of the
 *               heap profile (their frees take the slow path)
 *     sampled   (one atomic word with kind) those samples' count
 *   line 1, written by other threads:
 *     xfree     remote-free list head | 2 state bits (see page.h)
 *     xnext     link in the owner heap's list of notified pages
 *     heap      owner heap; next/prev: links in the owner's page queue
 *     prof_mask the blocks that are samples of the heap profile, a bit each
 */
#ifndef ND_SEGMENT_H
#define ND_SEGMENT_H

#include <stdbool.h>
#include <stdint.h>
#include "atomic.h"
#include "config.h"
#include "counters.h"

struct nd_heap;

#define ND_SEG_GUARD_WORDS (ND_SEG_SIZE / 4096 / 64)   /* a bit per OS page (4 KiB or more) */

typedef struct nd_block { struct nd_block *next; } nd_block;
struct nd_page;

#define ND_KEY_NONE  ((uintptr_t)1)
#define ND_KEY_LARGE ((uintptr_t)1)     /* a large block's descriptor: no owner */
#define ND_TID_STEP  ((uintptr_t)16)    /* thread ids are multiples of this */

/* Kinds of memory, as a page's `kind` byte and a thread cache's: plain
   memory of node n is 2 + 2n, memory bound to node n is 3 + 2n (odd). */
#define ND_KIND_NONE 0u
#define ND_KIND_NO_PAGE 1u   /* a kind no page has: a thread without a cache of its own (every free of it takes the slow path) */
/* A flag no page's kind has (kinds fit a byte): a secure=1 plain thread
   cache's kind is its memory's kind with this bit (tcache.c), so the free
   fast path's compare fails for every block and its "other kind" branch
   (nd_free_other_kind, free.c) checks the block before caching it. */
#define ND_KIND_SEALED 0x100u
/* A small or medium page's kind while some of its blocks hold live samples
   of the heap profile (prof=1, page.h: nd_page_sample_add) and a heap owns
   it: no thread cache's kind, and even (not bound: the free fast path
   takes it to the slow path, which drops the samples). */
#define ND_KIND_PROF 0xfeu
_Static_assert(2u * NODAL_MAX_NODES + 1u < ND_KIND_PROF, "every node's kinds fit a byte below ND_KIND_PROF");
static inline unsigned nd_kind_of(bool bound, int node) { return 2u + 2u * (unsigned)node + (bound ? 1u : 0u); }
/* Bound kinds are odd. On x86-64 the bit is tested in place (testb): gcc
   tests it with an AND on a copy of the kind, and made that copy in the
   free fast path's common part, an instruction in every free. */
static inline bool     nd_kind_is_bound(unsigned kind)
{
#if defined(__x86_64__)
    bool bound;
    __asm__("testb $1, %b1" : "=@ccnz"(bound) : "r"(kind));
    return bound;
#else
    return kind & 1u;
#endif
}
/* The node of a kind (2 or more), as an index: (kind >> 1) - 1, whose - 1
   folds into the indexed load's displacement (node_tc[...] in free.h). */
static inline size_t   nd_kind_node(unsigned kind) { return (size_t)(kind >> 1) - 1; }

enum { ND_SEG_FREE = 0, ND_SEG_SMALL, ND_SEG_MEDIUM, ND_SEG_LARGE, ND_SEG_HUGE };

/* A page's bin_off when no thread-cache bin holds its class's blocks
   (secure=1 only: class 0 and the last class, class.h): the last bin's,
   which then holds no class either, so no thread cache ever gives it slots
   (its cap_max is 0, tcache.c) and a free that looks in it finds it full
   (cur == low == NULL) and takes its route, with no test of its own. */
#define ND_BIN_OFF_NONE ((ND_CLASS_COUNT - 1u) * ND_BIN_BYTES)

/*
 * A page: one size class, one owner heap.
 * Invariants:
 *  - a page belongs to exactly one segment and so to one node kind (bound
 *    node k, or plain with a home node); that never changes while in use.
 *  - in_use == 0  <=>  key == ND_KEY_NONE (or 0), heap == NULL, used == 0.
 *  - a descriptor no page or block used since its segment was mapped is
 *    all zero (key 0: no owner, as ND_KEY_NONE; kind ND_KIND_NONE, nothing
 *    carved, recarved 0): nd_seg_format writes none of a fresh segment's,
 *    so the OS pages of descriptors the segment never uses stay unwritten
 *    (a 4 MiB segment's header is 12 KiB resident otherwise). A page's
 *    position is where its descriptor is (nd_seg_page_index), not a field.
 *  - kind == nd_kind_of(its segment's bound, node) while a heap owns the
 *    page and sampled == 0, ND_KIND_PROF while a heap owns it and
 *    sampled > 0; ND_KIND_NONE otherwise (not in use, abandoned, not
 *    small or medium).
 *  - small and medium pages: sampled = the blocks that hold a live sample
 *    of the heap profile (prof=1), 0 while not in use; it changes only
 *    together with kind, one atomic step on kind_word (a sampler, a free
 *    and the owner in three threads); bit i of prof_mask is set from
 *    before block i's sample counts in sampled to after it no longer
 *    does, and only then (bits past reserved: never).
 *  - used = blocks handed out of the page (in a thread cache, with the
 *    program, or on xfree); capacity - used - length(free) = 0.
 *  - capacity <= reserved <= 65535; blocks [0, capacity) have been carved;
 *    mul == nd_block_mul(block_size) and limit == capacity * (mul *
 *    block_size mod 2^64) (small and medium pages; see nd_page_block_ok).
 *  - every block on free or xfree carries the freed-block mark (page.h).
 *  - free is touched only by the owner thread (or under the owner's lock for
 *    a shared heap); xfree only with atomics.
 *  - key == heap->tid while a heap owns the page.
 *  - bin_off == nd_class_bin[cls] * ND_BIN_BYTES, or ND_BIN_OFF_NONE (the
 *    last bin's offset, a bin that then holds no class) when
 *    nd_class_bin[cls] is no bin, while a small or medium page is in use
 *    (nd_page_init).
 *  - recarved == 1 once the page has been released since its segment was
 *    formatted (nd_page_release sets it), or when its segment was
 *    formatted before since it was mapped (nd_seg_format: a segment taken
 *    back from a node's cache), or kept (nd_page_keep).
 *  - kept == 1 only while in use, with no block out or carved (used ==
 *    capacity == 0, free == NULL, recarved == 1): emptied, and kept set up
 *    for its class by its heap (heap.h); kept_at and kept_epoch are read
 *    only while kept. 0 while not in use.
 *  - free_seen and free_purged (in kept_at's place: read only while in use
 *    and not kept; 0 when the page is set up, kept or taken back from its
 *    kept pages): bits of blocks on the page's free list only (a block
 *    taken off it loses both: nd_page_take_list), and only of a page of
 *    at most 32 blocks. free_purged: the block's whole OS pages past its
 *    first 16 bytes were given back (MADV_DONTNEED) since it was freed,
 *    the page staying in use (heap.c: nd_heap_purge_free_blocks);
 *    free_seen: the block was on the list at its heap's last such pass.
 *    free_pushed == 0 (not kept, at most 32 blocks): the free list holds
 *    exactly the blocks of free_seen (none went on it since that pass;
 *    those taken off lost their bit), so the pass need not walk it.
 */
typedef struct nd_aligned(ND_CACHE_LINE) nd_page {
    /* line 0: owner side */
    uintptr_t       key;
    nd_block       *free;        /* links encoded (page.h) */
    uint8_t        *start;       /* first block */
    uint64_t        mul;         /* floor(2^64 / block_size) + 1: block index by multiply */
    uint64_t        limit;       /* capacity * (mul * block_size mod 2^64): the carved blocks
                                    (owner writes; see nd_page_block_ok) */
    uint32_t        block_size;
    uint16_t        used;
    uint16_t        capacity;
    uint16_t        reserved;
    uint8_t         cls;
    uint8_t         in_use;
    uint8_t         in_full;     /* on the owner's full queue */
    union {
        struct {
            uint8_t kind;        /* nd_kind_of, ND_KIND_NONE or ND_KIND_PROF (read by every thread's free) */
            uint8_t sampled;     /* a large or huge block's: 1, the heap profile holds a sample of it (prof.c);
                                    ND_PROF_SLAB (2), a sample slab (slab.h); ND_TIGHT_SLAB (3), every chunk
                                    of a tight slab (tight.h). A small or medium page's: how many of its
                                    blocks hold a live sample (prof=1) */
        };
        uint16_t    kind_word;   /* kind and sampled as one atomic word (small and medium pages: prof=1
                                    changes both at once, page.h: nd_page_sample_add) */
    };
    uint32_t        prof_slot;   /* ... and its slot in the profile's live table (prof.c); a tight slab's
                                    chunk: its run's first chunk */
    uint16_t        bin_off;     /* small and medium: the byte offset in a thread cache's bins of the bin
                                    its blocks go to (nd_class_bin[cls] * ND_BIN_BYTES: under secure=1 a
                                    bin past 1 KiB holds the next class's blocks, class.h), or
                                    ND_BIN_OFF_NONE when no bin holds them: the last bin's, which has no
                                    slots then (read by secure=1's checked free) */
    uint8_t         free_pushed; /* a block went on the free list since the heap's last pass over it
                                    (heap.c: nd_heap_purge_free_blocks); 0: the list is free_seen's blocks */
    /* line 1: shared side */
    nd_aligned(ND_CACHE_LINE) uintptr_t xfree;
    struct nd_page *xnext;
    struct nd_heap *heap;
    struct nd_page *next, *prev;
    uint8_t         recarved;    /* the page was released before, since its segment was formatted:
                                    its blocks are freed memory (secure=1: carved in address order, page.h) */
    uint8_t         kept;        /* emptied and kept set up for its class by its heap (heap.h) */
    uint32_t        kept_epoch;  /* kept: its heap's epoch (low 32 bits) when it was kept */
    uint64_t        prof_mask;   /* small and medium pages (prof=1): bit i, block i holds a live sample (atomic) */
    union {
        uint64_t    kept_at;     /* kept: its heap's clock (ms) when it was kept */
        struct {                 /* not kept: its free blocks' purges (heap.c: nd_heap_purge_free_blocks) */
            uint32_t free_seen;   /* bit i: block i was on the free list at the last pass and has not left it */
            uint32_t free_purged; /* bit i: block i's OS pages past its first were given back since its free */
        };
    };
} nd_page;

/*
 * A segment.
 * Invariants:
 *  - cookie == (uintptr_t)seg ^ nd_seg_secret while mapped (nd_seg_cookie_ok).
 *  - bound == 1: every committed chunk is on `node` (verified when committed;
 *    strict mode never commits a misplaced one). bound == 0: plain memory,
 *    default policy, never bound; `node` is only the creator's CPU node.
 *  - SMALL/MEDIUM: owner != NULL and abandoned == 0 while a heap owns it; all
 *    its in-use pages then belong to owner. abandoned == 1: on its node's
 *    abandoned list, owner == NULL, pages keep their blocks.
 *  - free_mask bit i set <=> pages[i] not in use; used_pages = popcount of the rest.
 *  - SMALL/MEDIUM: page_count << page_shift == size (4 MiB, or less for a
 *    short segment); the descriptor lookup (desc_mask) is a 4 MiB segment's.
 *  - committed bit j: chunk j may hold resident memory (bound: populated and
 *    verified). purge_mask is a subset of committed and of free pages' chunks.
 *  - purge_young is a subset of purge_mask (0 in a large, cached or huge segment):
 *    the chunks that began to wait after purge_at was set for the others
 *    (nd_seg_purge_wait), due at purge_young_at, the latest of their own
 *    deadlines (meaningful while purge_young != 0). At purge_at the others
 *    are due (nd_seg_purge_due) and the young ones become the waiting ones,
 *    due at purge_young_at (at once if it has passed): a segment whose pages
 *    keep being freed still gives back the chunks freed first, each chunk
 *    a purge delay after its free at the soonest, two (and a maintenance
 *    period) at the latest, where one deadline for the whole segment,
 *    pushed back at every free, gave back nothing while frees went on; a
 *    segment that goes quiet gives back everything a delay after its last
 *    free, as before.
 *    Heaps' segments only: a large pool's keep one deadline, put off by
 *    every give (large.h; docs/results.md: two generations there traded
 *    faults for no steady RSS gain).
 *    HUGE (and FREE: a freed huge mapping): the committed gauge counts the
 *    mapping whole, whatever the bits; bit j, chunk j of its first 4 MiB
 *    may hold memory: all of them but in a mapping made of a large segment
 *    (nd_seg_to_huge), where they are the segment's committed ones and the
 *    chunks any huge block of it covered (from its start to the mapping's
 *    end: huge.c, nd_huge_setup), so that the large pool taking it back
 *    (node.c) counts and takes for resident only those.
 *  - the segment map says 1 for seg while mapped.
 *  - where seg holds its nd_segcache slot, the word is
 *    nd_segcache_word(its key, kind): ND_SEGCACHE_MEDIUM set iff MEDIUM
 *    (the free fast path's descriptor lookup, nd_page_of_chunk or
 *    nd_page_of_medium, is then nd_page_of's); a FREE segment's word keeps
 *    the flag of the kind it had (none of its pages is in use) until
 *    nd_seg_format gives it the next.
 *  - unmapped bit j (LARGE, SMALL, MEDIUM; 0 otherwise): chunk j of the
 *    4 MiB window is not mapped (given back under an address-space limit,
 *    large.h, nd_seg_release_pages); j is never 0, nor a committed or
 *    guarded chunk, nor in a block (LARGE: nor a free chunk; SMALL and
 *    MEDIUM: a chunk of a free page, or of a page in use past the most
 *    blocks it can hold). A segment with such a hole is never cached
 *    (unmapped when empty, one mapped run at a time: the hole may hold
 *    another mapping by then).
 *  - secure=1 (nd_seg_guard != 0): the last nd_seg_guard bytes of a 4 MiB
 *    segment are inaccessible while it is mapped and belong to no block:
 *    every in-use page's blocks (a large block's usable bytes) end before them.
 *  - tails bit c (LARGE, SMALL, MEDIUM; 0 otherwise): the end of chunk c,
 *    from byte tail_from[c] of it (a multiple of the OS page, 0 <
 *    tail_from[c] < 64 KiB), is not mapped (given back under an
 *    address-space limit, large.h): chunk 0 past the header, or the last
 *    chunk of a block in use past the block (past its guard page under
 *    secure=1); SMALL and MEDIUM: the chunk a page in use ends its blocks
 *    in, past the most blocks it can hold, never chunk 0 (it becomes a
 *    hole when the page is given back). c is never a free chunk or a
 *    hole, and is committed; the tail has no guard bits. A segment with a
 *    tail is never cached either (unmapped when empty).
 *  - guards (SMALL, MEDIUM, LARGE): bit i set <=> OS page i of the segment
 *    is inaccessible: the last one under secure=1, and in a LARGE segment
 *    the guard pages its blocks left (large.h); never a page of a block.
 *    Changed only by nd_seg_mark_guards, which keeps guard_ends with it
 *    (and nd_seg_format, which sets both: the hot section's code stays
 *    where it was, docs/results.md "Where the code falls").
 *  - guard_ends bit c (SMALL, MEDIUM, LARGE) <=> the guards bit of the
 *    last OS page of chunk c: where the guard pages a LARGE segment's
 *    blocks left end runs (large.c reads it for every secure=1 block).
 *  - desc_dirty bit i clear (a segment formatted before: `formatted`) =>
 *    descriptor pages[i] is as a format leaves it, all zero but key
 *    ND_KEY_NONE and recarved 1 (nd_seg_descs_clean): every descriptor set
 *    up since the last format (a page: nd_page_init; a large block or a
 *    tight cell's slab: large.c, tight.c; a huge block: huge.c, all bits)
 *    has its bit set first (nd_seg_desc_touch), and a format resets only
 *    those (a segment's 64 descriptors, 8 KiB, reset at every trip through
 *    a node's cache: 474 instructions a pair of micro -m batch -s 1m,
 *    docs/results.md, stop 63). Set in whole at a segment's first format,
 *    whose descriptors are all zero.
 *  - seams (HUGE, and FREE: a freed huge mapping; 0 in any other): 0, 0
 *    when the kernel holds the mapping as one (VMA); else OS pages
 *    [seams[0], seams[1]) are a mapping of their own, the pages a large
 *    block brought when realloc grew it into this huge block
 *    (nd_huge_moved_in; seams[1] == 0: to the end), which the kernel never
 *    joins to the pages around them: 0 < seams[0], seams[0] < seams[1] or
 *    seams[1] == 0, both within the mapping. A move takes one mapping at
 *    a time (nd_huge_move_undoable), and the pieces keep their offsets.
 */
typedef struct nd_segment {
    uintptr_t       cookie;
    uint8_t         kind;
    uint8_t         page_shift;
    uint8_t         bound;
    uint8_t         abandoned;
    int16_t         node;
    uint16_t        page_count;
    size_t          size;        /* bytes mapped */
    struct nd_heap *owner;
    uint32_t        used_pages;
    uint16_t        desc_mask;   /* (p >> desc_shift) & desc_mask: byte offset of p's page descriptor in pages[]
                                    (16 bits: even an overwritten header sends the free path no
                                    further than 64 KiB into the mapping, to its cookie check) */
    uint8_t         desc_shift;  /* page_shift - log2(sizeof(nd_page)) */
    uint8_t         interleaved; /* huge only: pages spread over nodes */
    uint8_t         fresh;       /* huge only: never handed out since mapped (all zero) */
    uint8_t         formatted;   /* small, medium, large: formatted before since mapped (its pages'
                                    memory was handed out: nd_page's recarved) */
    uint16_t        seams[2];    /* huge (and a freed huge mapping): where its mapping is two or
                                    three to the kernel, in OS pages (invariants) */
    uint8_t         shard;       /* large only: the shard of its pool that holds it (large.h) */
    uint64_t        free_mask;
    uint64_t        committed;
    uint64_t        purge_mask;
    uint64_t        unmapped;    /* LARGE, SMALL, MEDIUM: chunks given back to the OS (holes), mapped again before reuse */
    uint64_t        tails;       /* LARGE, SMALL, MEDIUM: chunks whose end is given back (below); 0 in any other */
    uint64_t        purge_at;    /* ms; when purge_mask is due ... */
    uint64_t        purge_epoch; /* ... and the owner heap's epoch it must have reached */
    uint64_t        cached_at;   /* ms; when it entered a node cache */
    struct nd_segment *next, *prev;
    uint64_t        guard_ends;  /* chunks whose last OS page is a guard (a summary of guards) */
    uint64_t        guards[ND_SEG_GUARD_WORDS];   /* inaccessible OS pages (secure=1) */
    uint64_t        purge_young; /* of purge_mask, the chunks waiting for a later deadline (above) ... */
    uint64_t        purge_young_at; /* ... ms: when the last of them is due (its free and the delay) */
    uint64_t        desc_dirty;  /* descriptors that may not be as nd_seg_format leaves them (invariants) */
    nd_page         pages[ND_SEG_MAX_PAGES];
    /* LARGE, SMALL, MEDIUM: chunks whose end is unmapped from byte tail_from[c] of
       chunk c (tails, above); read unlocked by nd_seg_maps. Past a huge
       segment's header: read only where a tails bit is set. */
    uint16_t        tail_from[ND_SEG_CHUNKS];
    uint64_t        pool_seq;    /* large only: its place in its shard's list (large.c: the fit hints), rising */
} nd_segment;

/* The page descriptors on a segment header's first 4 KiB, with its
   fields: the pages a heap takes first in a segment are among them
   (heap.c: its page colour), so a segment a thread uses a few pages of
   writes one OS page of its header, not two (docs/how-it-works.md). */
#define ND_SEG_FIRST_DESCS ((4096 - __builtin_offsetof(nd_segment, pages)) / sizeof(nd_page))

/* The position in s of the page (or chunk) whose descriptor is pg. */
static inline unsigned nd_seg_page_index(const nd_segment *s, const struct nd_page *pg)
{
    return (unsigned)(pg - s->pages);
}

/* Descriptor pg of s is set up (or written) from now on: a format resets
   it (desc_dirty, invariants). */
static inline void nd_seg_desc_touch(nd_segment *s, const struct nd_page *pg)
{
    s->desc_dirty |= (uint64_t)1 << (nd_seg_page_index(s, pg) & 63);
}

/* Whether address p of segment s's windows (nd_seg_of) is memory of s:
   within its size (a short segment's window's rest is not nodal's) and
   not in a hole (a chunk given back, which another mapping may hold by
   now). Read without the pool's lock (queries such as nodal_node_of): a
   hole made or mapped again meanwhile is seen either way. */
static inline bool nd_seg_maps(const nd_segment *s, const void *p)
{
    uintptr_t off = (uintptr_t)p - (uintptr_t)s, c = off >> ND_CHUNK_SHIFT;
    if (off >= s->size || c >= 64)
        return off < s->size;
    /* tails is 0 but in large, small and medium segments: tail_from (past
       a huge segment's header, in its block's bytes) is read only there. */
    return ((nd_load_relaxed(&s->unmapped) >> c) & 1) == 0 &&
           (((nd_load_acquire(&s->tails) >> c) & 1) == 0 ||
            (off & (ND_CHUNK_SIZE - 1)) < nd_load_relaxed(&s->tail_from[c]));
}

_Static_assert(sizeof(nd_page) == 2 * ND_CACHE_LINE, "a page descriptor is two cache lines");
#define ND_PAGE_DESC_SHIFT 7   /* log2(sizeof(nd_page)) */
_Static_assert(__builtin_offsetof(nd_page, xfree) == ND_CACHE_LINE, "the owner's fields fit line 0");
_Static_assert(sizeof(nd_segment) <= ND_SEG_HEADER_SIZE, "the segment header must fit");
_Static_assert(ND_SEG_FIRST_DESCS >= 16 && ND_SEG_FIRST_DESCS < ND_SEG_MAX_PAGES,
               "a header's first 4 KiB hold 16 descriptors or more: the page colours (heap.c)");
_Static_assert(__builtin_offsetof(nd_segment, free_mask) == 48, "seams fill padding: the fields after them stay where they were");
_Static_assert(__builtin_offsetof(nd_segment, pages) + sizeof(nd_page) <= ND_HUGE_HEADER_SIZE,
               "a huge segment's header holds one page descriptor");

extern uint8_t  *nd_segmap_top[ND_SEGMAP_TOP] nd_hidden;
extern uint64_t  nd_segcache[ND_SEGCACHE_SLOTS] nd_hidden;
extern uintptr_t nd_seg_secret nd_hidden;
/* Bytes of the guard page at the end of every 4 MiB segment (secure=1), or 0. */
extern size_t    nd_seg_guard nd_hidden;
/* 1 where the OS page is known at build time to be small enough for guard
   pages (4 KiB: x86-64), so that under secure=1 every mapping nodal makes
   (segment, short segment, huge block) ends in one (nd_seg_init). Then a
   linear overflow out of nodal's memory faults before it reaches the next
   segment's header, and secure=1's checked free of a block of the
   thread's own kind leaves the header's cookie to the slow paths, as the
   default's free does (free.c). Elsewhere (aarch64: pages of 4-64 KiB) it
   checks the cookie at every free. */
#if defined(__x86_64__)
#define ND_SEG_GUARD_ALWAYS 1
#else
#define ND_SEG_GUARD_ALWAYS 0
#endif

/* The segment whose 4 MiB-aligned start is at or below p: the owner of any
   pointer into a small, medium or large page, and of a page descriptor. */
static inline nd_segment *nd_seg_base(const void *p)
{
    return (nd_segment *)((uintptr_t)p & ~(uintptr_t)ND_SEG_MASK);
}

/* w + 1 for the window w of address a, computed as (a + 4 MiB) >> 22 (one
   instruction fewer; the top 4 MiB of the 64-bit space wrap to 0, whose
   slot holds a word no window has: nd_seg_init). */
static inline uintptr_t nd_segcache_key(uintptr_t a) { return (a + ND_SEG_SIZE) >> ND_SEG_SHIFT; }
/* The segment whose window's key is `key` (nd_seg_base of any address
   with that key): one shift of the key the lookup has in a register,
   where nd_seg_base takes a copy of the address and a mask. */
static inline nd_segment *nd_segcache_seg(uintptr_t key) { return (nd_segment *)((key << ND_SEG_SHIFT) - ND_SEG_SIZE); }

/* The flag of a MEDIUM segment's nd_segcache word (above): no key has
   bit 63 (keys are below 2^42). */
#define ND_SEGCACHE_MEDIUM ((uint64_t)1 << 63)

/* The nd_segcache word of a segment of kind `kind` whose key is `key`. */
static inline uint64_t nd_segcache_word(uintptr_t key, int kind)
{
    return (uint64_t)key | (kind == ND_SEG_MEDIUM ? ND_SEGCACHE_MEDIUM : 0);
}

/* Does a segment start in the 4 MiB window of a, by nd_segcache (the free
   fast path's test, which also tells medium segments from the others)?
   False also for a segment whose slot another window holds: the segment
   map has the last word. */
static inline bool nd_segcache_is_start(uintptr_t a)
{
    uintptr_t key = nd_segcache_key(a);
    return (nd_load_relaxed(&nd_segcache[key & (ND_SEGCACHE_SLOTS - 1)]) & ~ND_SEGCACHE_MEDIUM) == key;
}

/* The segment map's byte of the window of a (see above); 0 beyond
   2^ND_VA_BITS and in ranges no leaf covers. The leaf pointer is read with
   acquire: a leaf published by another thread is seen with its bytes. */
static inline unsigned nd_segmap_byte(uintptr_t a)
{
    uintptr_t w = a >> ND_SEG_SHIFT;
    if (w >= (uintptr_t)ND_SEGMAP_TOP << ND_SEGMAP_LEAF_BITS)
        return 0;
    const uint8_t *leaf = nd_load_acquire(&nd_segmap_top[w >> ND_SEGMAP_LEAF_BITS]);
    return leaf == NULL ? 0 : nd_load_relaxed(&leaf[w & (ND_SEGMAP_LEAF_SIZE - 1)]);
}

/* The segment a pointer belongs to, or NULL if it is not nodal's. */
static inline nd_segment *nd_seg_of(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    unsigned v = nd_segmap_byte(a);
    if (v == 0)
        return NULL;
    return (nd_segment *)((a & ~(uintptr_t)ND_SEG_MASK) - (uintptr_t)(v - 1) * ND_SEG_SIZE);
}

/* Does s carry this process's cookie (a segment nodal mapped)? */
static inline bool nd_seg_cookie_ok(const nd_segment *s)
{
    return s->cookie == ((uintptr_t)s ^ nd_seg_secret);
}

static inline size_t nd_seg_page_size(const nd_segment *s) { return (size_t)1 << s->page_shift; }

/* First byte and end of the block area of page i (the last page's ends at
   the segment's guard page, if any). */
static inline uint8_t *nd_seg_page_area(nd_segment *s, unsigned i, size_t *size)
{
    size_t psize = nd_seg_page_size(s);
    uint8_t *start = (uint8_t *)s + (size_t)i * psize;
    uint8_t *end = start + psize;
    if (i == 0)
        start = (uint8_t *)s + ND_SEG_HEADER_SIZE;
    if (i + 1u == s->page_count)
        end -= nd_seg_guard;
    *size = (size_t)(end - start);
    return start;
}

void nd_seg_init(void) nd_hidden;
/* A fresh mapping of `size` bytes aligned to `alignment` (at least 4 MiB)
   whose windows the segment map holds for it (as a huge segment's of that
   size: nd_segmap_huge(s, 0, size)). NULL with errno = ENOMEM (no room
   for the mapping, or for a leaf of the segment map it needs). */
void *nd_seg_reserve(size_t size, size_t alignment) nd_hidden;
/* A fresh segment of `size` bytes for (node, bound), 4 MiB-aligned,
   header committed, kind FREE; NULL with errno = ENOMEM. size is
   ND_SEG_SIZE, or less for a short segment (a whole number of the pages
   of the kind it is formatted for): the fallback when address space is
   short (RLIMIT_AS), whose window's rest stays unmapped. */
nd_segment *nd_seg_map(int node, bool bound, size_t size) nd_hidden;
void nd_seg_unmap(nd_segment *s) nd_hidden;
/* Unmaps the free chunks `chunks` of a LARGE segment (not the header):
   they become holes (unmapped), their committed bytes returned, their
   guard bits cleared. For an address-space limit (RLIMIT_AS): the room a
   freed large block took serves any other mapping. The bytes unmapped. */
size_t nd_seg_unmap_chunks(nd_segment *s, uint64_t chunks) nd_hidden;
/* Moves the pages of chunks a..b of LARGE segment s (a run of no block
   now, without holes or tails; 0 < a) to `to`, a range of as many bytes
   mapped already (a huge block's), by mremap: no copy. The chunks become
   holes, as nd_seg_unmap_chunks makes them (mapped again by
   nd_seg_remap_chunks). false if the kernel would not (nothing changed). */
bool nd_seg_move_run(nd_segment *s, unsigned a, unsigned b, void *to) nd_hidden;
/* Maps holes `chunks` of LARGE segment s again, where they were (never
   over another mapping), one run at a time: bound to the segment's node
   as a new segment is, the segment's own guard page restored if the last
   chunk is among them. The chunks mapped, which become free (a run that
   would not map stays a hole: no room, errno ENOMEM, or another mapping
   there now). */
uint64_t nd_seg_remap_chunks(nd_segment *s, uint64_t chunks) nd_hidden;
/* Nonzero once any segment had a chunk unmapped (a hole: an address-space
   release, or pages moved away); read with relaxed atomics. Until then no
   walk for holes to map again finds one (large.c: nd_large_regain walked
   every segment each time a pool brought one). */
extern uint8_t nd_seg_holes_made nd_hidden;
/* Unmaps the end of chunk c of LARGE segment s from byte `from` of the
   chunk (a multiple of the OS page, 0 < from < 64 KiB), which nothing
   uses: chunk 0 past the header, or a block's last chunk past the block
   (and its guard page). It becomes a tail (tails, above); its guard bits
   are cleared. For an address-space limit, as nd_seg_unmap_chunks. The
   bytes unmapped. */
size_t nd_seg_unmap_tail(nd_segment *s, unsigned c, size_t from) nd_hidden;
/* Maps chunk c's tail again where it was (never over another mapping),
   as nd_seg_remap_chunks maps a hole; true when it did (chunk c is whole
   again), false when it would not map (errno ENOMEM: no room). */
bool nd_seg_remap_tail(nd_segment *s, unsigned c) nd_hidden;
/* The block whose last chunk is c (with a tail) is freed or cut off
   there: the chunk's mapped start is unmapped too, and chunk c becomes a
   hole (not free: a hole is mapped again before reuse). */
void nd_seg_tail_to_hole(nd_segment *s, unsigned c) nd_hidden;
/* Gives back the address space of SMALL or MEDIUM segment s that no
   block holds, for an address-space limit (RLIMIT_AS), as large
   segments' holes and tails: the chunks of its free pages (not the
   header's) become holes, and each page in use unmaps its end past the
   most blocks of its class it can hold (a 112 KiB class holds four in a
   512 KiB page: 64 KiB), whole chunks as holes, the rest of the chunk the
   blocks end in as a tail (not in a node-bound segment, nor the guard
   page's chunk under secure=1). The bytes unmapped. */
size_t nd_seg_release_pages(nd_segment *s) nd_hidden;
/* Free page i of a SMALL or MEDIUM segment is about to be used: its holes
   are mapped again where they were (nd_seg_remap_chunks). False when one
   would not map (no room, or another mapping there now): the page must
   not be used then. */
bool nd_seg_page_remap(nd_segment *s, unsigned i) nd_hidden;
/* Page i of a SMALL or MEDIUM segment is given back: its tails become
   holes (nd_seg_tail_to_hole; free pages have none). */
void nd_seg_page_untail(nd_segment *s, unsigned i) nd_hidden;
/* Bytes of s mapped: its size less its holes and tails. */
size_t nd_seg_mapped_bytes(const nd_segment *s) nd_hidden;
/* A fresh mapping s of `size` bytes becomes a segment of (node, bound) or,
   interleave != NULL, of pages spread over that node mask: placed (bound:
   bound to its node before anything touches it, its first `commit` bytes
   committed), its last nd_seg_guard bytes a guard page, its header's
   cookie, node, bound, interleaved and size written, the mapped gauges
   counted. s comes from nd_seg_reserve(size, ...). Kind and committed
   chunks are the caller's. 0, or -1 with errno (the mapping and its
   windows in the segment map are then gone). */
int  nd_seg_adopt_mapping(nd_segment *s, size_t size, int node, bool bound, const uint64_t *interleave,
                          size_t commit) nd_hidden;
/* Unmaps a huge segment's whole mapping (s->size bytes; its block already
   gone from the block gauges), fixing the segment map and the gauges. */
void nd_seg_unmap_huge(nd_segment *s) nd_hidden;
/* A LARGE segment of 4 MiB (no hole, tail or guard page; plain: a
   node-bound one's committed chunks are populated and verified ones)
   whose only block, at chunk `offset` (a multiple of 64 KiB), becomes a huge block
   where it is (huge.c: nd_huge_from_large): its nd_segcache word
   released (a huge block's free takes the segment map), committed whole
   (and so counted), no purge due (the chunks before the block too: the
   block holds their memory for its life), no page descriptor in use (the
   caller sets the huge one up). Its segment map byte, mapping, cookie and mapped gauges
   stay: a segment's are a 4 MiB huge mapping's. */
void nd_seg_to_huge(nd_segment *s, size_t offset) nd_hidden;
/* A huge mapping s (freed, one mapping to the kernel: no seams; plain
   or bound, not interleaved, no guard page) cut in two at `at` (a
   multiple of 4 MiB inside it): s keeps [0, at), and the rest becomes a
   mapping of its own with a header written at s + at (kind FREE, s's
   node and kind of memory, committed whole), each with its windows in
   the segment map and counted in the segments gauge; the mapped and
   committed gauges count the same bytes. Returns the rest (huge.c: a
   huge block that was a segment, freed: the segment and the rest are
   cached apart, nd_huge_free). */
nd_segment *nd_seg_split_huge(nd_segment *s, size_t at) nd_hidden;
/* The reverse: live huge block s takes t, the freed huge mapping that
   starts where s ends (taken off its cache; same node and kind, no
   seams), into its own mapping: s->size grows by t's, the segment map
   points t's windows at s, t's header is no longer one (no system call:
   the pages are mapped already). */
void nd_seg_join_huge(nd_segment *s, nd_segment *t) nd_hidden;
/* Sets page_shift and page_count, and the descriptor lookup they imply. */
void nd_seg_set_geometry(nd_segment *s, unsigned page_shift, unsigned page_count) nd_hidden;
/* Lays out pages for `kind` (SMALL, MEDIUM or LARGE); all pages free. */
void nd_seg_format(nd_segment *s, int kind) nd_hidden;
/* Makes [p, p+len) of s usable: bound segments populate and verify chunks not
   yet committed. 0, or -1 with errno = ENOMEM when strict placement failed. */
int  nd_seg_commit_slow(nd_segment *s, uint64_t todo) nd_hidden;
/* Chunks `chunks` of s (committed, of no page or block in use) wait for
   their purge, not before `due` (invariants: purge_young): with those
   waiting already (their deadline then `due` if sooner) when none waits
   or `due` is no later than theirs, else as young ones (purge_young_at
   the latest of their deadlines). Returns the chunks that were not
   waiting before. */
static inline uint64_t nd_seg_purge_wait(nd_segment *s, uint64_t chunks, uint64_t due)
{
    uint64_t fresh = chunks & ~s->purge_mask;
    if (s->purge_mask == 0 || due <= s->purge_at) {
        s->purge_young &= ~chunks;
        s->purge_at = due;
    } else if (fresh != 0) {
        if (s->purge_young == 0 || due > s->purge_young_at)
            s->purge_young_at = due;
        s->purge_young |= fresh;
    }
    s->purge_mask |= chunks;
    return fresh;
}

/* At `now`, at or past s's deadline (purge_at): the chunks due, the
   waiting ones but the young; those become the waiting ones, due at
   their own deadline (with the others if it has passed too). */
static inline uint64_t nd_seg_purge_due(nd_segment *s, uint64_t now)
{
    uint64_t young = s->purge_young;
    s->purge_young = 0;
    if (young == 0 || s->purge_young_at <= now)
        return s->purge_mask;
    s->purge_at = s->purge_young_at;
    return s->purge_mask & ~young;
}

/* Chunks `chunks` of s wait for their purge no more (used again, or
   gone): off purge_mask and purge_young. */
static inline void nd_seg_purge_drop(nd_segment *s, uint64_t chunks)
{
    s->purge_mask &= ~chunks;
    s->purge_young &= ~chunks;
}

/* The segments (small, medium and large: up to 4 MiB) opt out of
   transparent huge pages where the kernel gives them unasked (mode
   "always") and huge_pages does not ask for them (MADV_NOHUGEPAGE, on
   [p, p+size) before anything touches it): nodal commits, purges and
   places memory by 64 KiB chunks, and a 2 MiB page the kernel faults in
   around a chunk holds memory nodal neither counts (committed) nor gives
   back, on the node of the thread that touched it first. Under "always"
   that memory tripled the resident set a forced collect leaves
   (tests/placement/thread_churn_keeps_rss_bounded on the host: 24-30
   MiB against 4 with "madvise") and took peak RSS past every peer's
   (docs/results.md). Huge blocks (their own mappings) keep the kernel's
   choice. */
void nd_seg_thp_opt_out(void *p, size_t size) nd_hidden;

/* Purges the chunks in mask (never the header), in one system call where
   the kernel takes a batch (os.h); clears their committed bits. */
void nd_seg_purge(nd_segment *s, uint64_t mask) nd_hidden;
/* The same, its runs added to batch b (os.h: nd_os_purges), purged when
   the caller flushes it: s's bits and the gauges say purged already, so s
   must stay where it is, none of those chunks handed out, until then. */
struct nd_os_purges;
void nd_seg_purge_into(nd_segment *s, uint64_t mask, struct nd_os_purges *b) nd_hidden;
/* Purges the whole range of s's free pages (all: of every page, the
   header excepted), not only their committed chunks: where transparent
   huge pages are on, the kernel faults in a whole 2 MiB around the first
   byte touched (the header of a new segment, a page's first block), so
   chunks nodal never committed can hold memory too, on the node of the
   CPU that touched it or the one the kernel's NUMA balancing migrated
   that huge page to. Purged, they fault in again where they are used. */
void nd_seg_purge_free(nd_segment *s, bool all) nd_hidden;
/* nd_seg_purge_free(s, all) into batch b (as nd_seg_purge_into). */
void nd_seg_purge_free_into(nd_segment *s, bool all, struct nd_os_purges *b) nd_hidden;
/* The same for those of the chunks nd_seg_purge_free would purge whose
   memory the kernel has on another node than s's (one move_pages query,
   two OS pages a chunk): a segment taken from its node's cache or
   abandoned list can hold such memory where nodal never committed it (a
   huge page faulted in around its header by a thread on another node, or
   migrated there by the kernel's NUMA balancing). */
void nd_seg_purge_elsewhere(nd_segment *s, bool all) nd_hidden;

/* Sets (guarded) or clears the guard bits of OS pages [a, b) of s, and
   guard_ends with them (the bits only: the caller protects the pages). */
void nd_seg_mark_guards(nd_segment *s, size_t a, size_t b, bool guarded) nd_hidden;

/* Is OS page i of s inaccessible (segment.h: guards)? */
static inline bool nd_seg_guarded(const nd_segment *s, size_t i)
{
    return (s->guards[i / 64] >> (i % 64)) & 1;
}

/* The pages of a SMALL or MEDIUM segment s with a chunk in `chunks`: a
   bit per page (a small page is one chunk, a medium one eight). */
static inline uint64_t nd_seg_pages_of_chunks(const nd_segment *s, uint64_t chunks)
{
    if (chunks == 0 || s->page_shift == ND_CHUNK_SHIFT)
        return chunks;
    unsigned per = 1u << (s->page_shift - ND_CHUNK_SHIFT);
    uint64_t pages = 0;
    for (unsigned i = 0; i < s->page_count; i++)
        if ((chunks >> (i * per)) & (((uint64_t)1 << per) - 1))
            pages |= (uint64_t)1 << i;
    return pages;
}

/* Chunk mask covering [p, p + len). */
static inline uint64_t nd_seg_chunks(const nd_segment *s, const void *p, size_t len)
{
    if (len == 0)
        return 0;
    size_t first = ((uintptr_t)p - (uintptr_t)s) >> ND_CHUNK_SHIFT;
    size_t last = ((uintptr_t)p - (uintptr_t)s + len - 1) >> ND_CHUNK_SHIFT;
    if (last >= 64)
        last = 63;
    return nd_mask_range((unsigned)first, (unsigned)last);
}

static inline int nd_seg_commit(nd_segment *s, const void *p, size_t len)
{
    uint64_t todo = nd_seg_chunks(s, p, len) & ~s->committed;
    return todo == 0 ? 0 : nd_seg_commit_slow(s, todo);
}

/* Adds (or, negative, removes) the bytes of a mapping of s to the mapped
   gauges (process and node) and their peak. */
void nd_seg_gauge_mapped(const nd_segment *s, long delta) nd_hidden;
/* A mapping at s (4 MiB-aligned) changes from old_size to new_size bytes
   (0: none): its first ND_SEGMAP_REACH chunks point back at s, its other
   windows are cleared, so that any pointer into its first GiB finds the
   header (a free of an interior pointer says so, not "not nodal's").
   Growing into a range no leaf covers yet maps the leaf: false, with
   nothing changed, when that fails (ENOMEM). */
bool nd_segmap_huge(const nd_segment *s, size_t old_size, size_t new_size) nd_hidden;
/* Bytes of the segment map's leaves (metadata: they are never unmapped). */
size_t nd_segmap_mapped(void) nd_hidden;
#define ND_SEGMAP_REACH 255u   /* map bytes 1..255: the distance back, plus one */
/* Binds [p, p+size) to `node` (MPOL_PREFERRED); 0 or -1 with errno. */
int  nd_seg_bind_node(void *p, size_t size, int node) nd_hidden;
/* Populates [p, p+len) of node-bound memory and checks (migrating strays)
   that every OS page is on `node`: 0, or -1 with errno = ENOMEM when strict
   placement failed (the range is then purged). */
int  nd_seg_commit_bound(uint8_t *p, size_t len, int node) nd_hidden;

/* Debug check of the invariants above struct nd_segment that the segment
   itself can tell (cookie, masks, counts, the segment map); true when they
   hold. Cost: O(pages). */
bool nd_seg_is_valid(const nd_segment *s) nd_hidden;
/* Are the descriptors of s in mask `which` as a format leaves them
   (desc_dirty, invariants)? */
bool nd_seg_descs_clean(const nd_segment *s, uint64_t which) nd_hidden;

#endif /* ND_SEGMENT_H */
