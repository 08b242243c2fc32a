/*
 * free.h - the free fast path (static inline) and the free entry points
 * below it (free.c). A free of a small or medium block of the thread's
 * kind of memory is 40 instructions on x86-64 (gcc 12 -O3; its ret
 * included; callgrind); 38 with h58a's asms, which also addressed the bin
 * as the cache's bins plus the page's bin_off and stepped cur in memory,
 * and took a pair of 32 B from 3.5 to 8 ns on stop 69's Intel Xeon (out at
 * stop 69: tcache.h); 42 before h58a took the nd_segcache
 * word as its compare's operand; 46 before h51l folded
 * the page's limit and the bin's low into their compares, took out two
 * register copies and found the segment from the nd_segcache key; a
 * medium block's, 5 more: its word read again, its second compare and a
 * jump back), whichever thread's page the block is on: six
 * compares (the
 * nd_segcache word, the page's kind of memory against the thread's, the
 * block-start check by one multiply, the freed mark (a keyed folded
 * multiply, page.h), the bin's bottom, the block the bin took last) and
 * three stores (the block into the bin, the bin's cur, the block's mark).
 * The path does not ask whose page it is: when a thread frees a mix of its
 * own and other threads' blocks, as every program that hands blocks
 * between threads does, a branch on the owner was mispredicted about every
 * other free, which cost more than the rest of the free (Larson at 2
 * threads: 2x the time). Anything else (a large or huge block, another
 * kind of memory, a full cache, a bad pointer) folds into one unlikely
 * branch that calls the slow path with what the fast path already found.
 *
 * One free, top to bottom:
 *   nd_free_fast: nd_segcache word -> page descriptor (per 64 KiB, or
 *                 per 512 KiB where the word says MEDIUM);
 *                 page kind == the thread's: *--bin->cur = p   (bin->cur != bin->low)
 *                 (a node-bound kind: the thread's cache for that node)
 *   other kind: secure=1, the thread's plain memory (its kind | ND_KIND_SEALED):
 *                 nd_free_other_kind (free.c): checked (block start,
 *                 canary, mark; the segment header where no guard page
 *                 ends every segment), into the bin
 *   else nd_free_slow (free.c) -> full cache: nd_tcache_push (grows the
 *                                 bin or flushes half or all of it)
 *                              -> no cache of that kind, an abandoned page:
 *                                 nd_route_free_foreign (route.c)
 *                              -> large / huge: nd_large_free / nd_huge_free
 */
#ifndef ND_FREE_H
#define ND_FREE_H

#include <stddef.h>
#include <stdint.h>
#include "config.h"
#include "options.h"
#include "page.h"
#include "segment.h"
#include "tcache.h"
#include "thread.h"

/* p first: it stays in its register. Its segment it takes from p (the
   fast path finds pg from the nd_segcache key, without it). */
void nd_free_slow(void *p, nd_page *pg) nd_hidden;
/* secure=1: a block of the thread's plain memory (its page's kind is tc's
   without ND_KIND_SEALED), from the fast path's other-kind branch: checked,
   then cached (or routed as the slow path would). */
void nd_free_other_kind(void *p, nd_page *pg, nd_segment *s, nd_tcache *tc) nd_hidden;   /* s third: the multiplies' rdx */
void nd_free_special(void *p) nd_hidden;   /* NULL, huge, a segment without a word in nd_segcache, or not nodal's */
/* p is the block on top of the bin it would go to: "double free", abort. */
_Noreturn void nd_free_twice_in_a_row(const void *p) nd_hidden __attribute__((cold));
/* p (in segment s, whose header checked out) is not the start of a block
   in use: says which of "not the start of a block", "block not in use" or
   "double free" in one line and aborts; fn names the entry point. */
_Noreturn void nd_block_misuse(const char *fn, const nd_segment *s, const void *p) nd_hidden __attribute__((cold));
/* The segment and page of p, the start of a block in use (realloc,
   malloc_usable_size); misuse (abort) otherwise. */
nd_segment *nd_block_find(const char *fn, const void *p, nd_page **pgp) nd_hidden;

/* The descriptor of the page or chunk holding p from nd_segcache's word
   alone: false when the word does not name p's window (no segment starts
   there, NULL included, or a segment without a slot). The word names its window in full (segment.h) and says where
   the descriptor is: per 64 KiB chunk (small pages, large chunks), or per
   512 KiB page with ND_SEGCACHE_MEDIUM, so the lookup reads no segment
   header (whose desc_shift and desc_mask made the chain of dependent
   loads one longer: Larson -t 1 x0.92). The free fast path's and
   realloc's (alloc.c: nd_realloc_find). */
static inline __attribute__((always_inline)) bool nd_page_lookup(const void *p, nd_page **pgp)
{
    uintptr_t key = nd_segcache_key((uintptr_t)p);
    /* The segment is the key shifted back (nd_segcache_seg), once the
       compare is done with it: one shift. The empty asm keeps gcc from
       turning it back into a copy of p and a mask (two instructions). */
    __asm__("" : "+r"(key));
    /* On x86-64 the first compare takes the word as its memory operand (an
       aligned 8-byte load is atomic there; gcc does not fold an atomic
       load into a compare, and kept the word in a register for the
       second): one instruction fewer in every free. A medium block's
       lookup reads the word again, a relaxed load of its own: either read
       is a word the slot held, and a block's word stays while the block is
       live. TSan builds keep the atomic loads, which it checks. */
#if defined(__x86_64__) && !defined(ND_TSAN)
    /* Base and index in registers of their own, both reads' address mode
       (given as the slot's memory operand, gcc made the slot's address with
       an lea for the two); the whole table is the asm's memory input (by
       its symbol: no register). */
    uintptr_t slots = (uintptr_t)nd_segcache, i = key & (ND_SEGCACHE_SLOTS - 1);
    const uint64_t (*table)[ND_SEGCACHE_SLOTS] = &nd_segcache;
    bool hit;
    __asm__("cmpq (%[b],%[i],8), %[key]" : "=@ccz"(hit)
            : [key] "r"(key), [b] "r"(slots), [i] "r"(i), "m"(*table));
    if (nd_likely(hit)) {
        *pgp = nd_page_of_chunk(nd_segcache_seg(key), p);
        return true;
    }
    uint64_t word;
    __asm__("movq (%[b],%[i],8), %[w]" : [w] "=r"(word) : [b] "r"(slots), [i] "r"(i), "m"(*table));
#else
    const uint64_t *slot = &nd_segcache[key & (ND_SEGCACHE_SLOTS - 1)];
    if (nd_likely(nd_load_relaxed(slot) == key)) {
        *pgp = nd_page_of_chunk(nd_segcache_seg(key), p);
        return true;
    }
    uint64_t word = nd_load_relaxed(slot);
#endif
    if (word == (key | ND_SEGCACHE_MEDIUM)) {
        *pgp = nd_page_of_medium(nd_segcache_seg(key), p);
        return true;
    }
    return false;
}

nd_inline void nd_free_fast(void *p)
{
    nd_page *pg;
    if (nd_unlikely(!nd_page_lookup(p, &pg))) {
        nd_free_special(p);
        return;
    }
    /* A block of the thread's kind of plain memory goes to the thread's
       bin of its class, whichever thread's page it is on (its own pages'
       and others' alike: one path, so a program whose threads free each
       other's blocks does not pay a mispredicted branch on whose page it
       is); memory bound to a node goes to the thread's cache for that
       node (a static full one when it has none). Large and huge blocks,
       pages not in use or abandoned, and plain memory of another node have
       no cache here: the slow path. */
    unsigned kind = nd_load_relaxed(&pg->kind);
    nd_tcache *tc = nd_tls_tc;
    if (nd_unlikely(kind != tc->kind)) {
        /* Memory bound to a node first (the node-targeted cycle's path).
           Then secure=1: tc's kind is its plain memory's with
           ND_KIND_SEALED (a bit no page's kind has), so this compare finds
           every block to check (and no block under the default, whose
           kinds never carry the flag). tc's kind read again here (the
           relaxed load is not merged with the one above): held in a
           register for this branch, it cost the compare above an
           instruction. */
        if (nd_unlikely(!nd_kind_is_bound(kind))) {
            if ((kind ^ nd_load_relaxed(&tc->kind)) == ND_KIND_SEALED)
                nd_free_other_kind(p, pg, nd_seg_base(p), tc);
            else
                nd_free_slow(p, pg);
            return;
        }
        tc = nd_tls_node_tc[nd_kind_node(kind)];
    }
    /* The page's bin offset (its class's bin: class index << 5 under the
       default; secure=1 takes this path only for node-bound caches, whose
       bins have no slots then, tcache.c), one shift fewer than the class's. */
    nd_bin *b = ND_BIN_AT(tc->bins, pg->bin_off);
    /* Not a block start, a block already marked free (a double free), or a
       full bin: the slow path sorts it out. */
    void **cur = b->cur;
    uintptr_t mark = nd_block_mark_of(p);
    /* b->low read in its compare (gcc makes it the compare's memory operand). */
    if (nd_unlikely(!nd_page_block_ok_shared(pg, p) || ((uintptr_t *)p)[1] == mark || cur == b->low)) {
        nd_free_slow(p, pg);
        return;
    }
    /* The block this bin took last (*cur; the NULL below an empty bin's
       slots otherwise): freed twice in a row by this thread, its mark
       erased in between by a write after free into its second word. */
    if (nd_unlikely(*cur == p))
        nd_free_twice_in_a_row(p);
    *--cur = p;
    b->cur = cur;
    ((uintptr_t *)p)[1] = mark;   /* nd_block_mark(p) */
}

/* free_sized / sized delete: a block's page knows its size, so the size is
   not needed to find it; every check of free applies. */
nd_inline void nd_free_sized(void *p, size_t size)
{
    (void)size;
    nd_free_fast(p);
}

nd_inline void nd_free_aligned_sized(void *p, size_t alignment, size_t size)
{
    (void)alignment;
    (void)size;
    nd_free_fast(p);
}

#endif /* ND_FREE_H */
