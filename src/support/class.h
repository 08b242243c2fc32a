/*
 * class.h - size classes: the sizes small and medium blocks are rounded up
 * to, and the lookups from a request to its class.
 *
 * 48 classes: 16-byte steps to 128 B (8 classes), then four per doubling
 * (at most 25 % apart) to 128 KiB. Classes up to ND_SMALL_MAX live on small
 * pages (64 KiB), the rest on medium pages (512 KiB). Requests up to
 * ND_LOOKUP_MAX take their class from a table, larger ones from the bit
 * length of the size.
 */
#ifndef ND_CLASS_H
#define ND_CLASS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "config.h"

extern const uint8_t  nd_class_lookup[ND_LOOKUP_MAX / ND_QUANTUM + 1] nd_hidden;
/* The same lookup, as the byte offset of the class's bin in a thread cache
   (class * ND_BIN_BYTES): the fast paths' table. Under secure=1 it maps a
   request to a class with `pad` bytes more room (nd_class_pad_requests,
   once, before any thread cache exists): the fast path then hands out
   blocks with room for the canary word after any request up to 1 KiB.
   One entry per ND_BIN_STEP bytes (the class table's per 16), so that
   under secure=1 a request and its canary take the smallest class they
   fit (40 bytes: 48-byte blocks); by default the two entries of a 16-byte
   step are the same bin (the same instructions: an add, a shift and a
   load; the table is 258 bytes rather than 130). */
#define ND_BIN_STEP 8
extern uint16_t nd_class_bin_offset[ND_LOOKUP_MAX / ND_BIN_STEP + 1] nd_hidden;
/* The class whose blocks a thread cache's bin b holds, and the bin that
   holds class c's blocks (ND_CLASS_COUNT: none). Identities, except under
   secure=1: past ND_LOOKUP_MAX the fast path takes a request's bin from
   its size unpadded, so bin b holds blocks of class b + 1 there (room for
   the canary word after any request of bin b's range); the first class
   past ND_LOOKUP_MAX then goes to bin 0 (the padded requests of
   1,017-1,024 bytes take it), and class 0 (16 B, which no padded request
   takes) has no bin, nor does the last bin any class. */
extern uint8_t nd_bin_class[ND_CLASS_COUNT] nd_hidden;
extern uint8_t nd_class_bin[ND_CLASS_COUNT] nd_hidden;
/* secure=1, once, before any thread cache exists: the fast paths' table
   gives the bin of a request of `pad` bytes more, and the bins past
   ND_LOOKUP_MAX hold the next class. */
void nd_class_pad_requests(size_t pad) nd_hidden;
/* secure=1's aligned requests past ND_ALIGN_FAST_MAX, filled by
   nd_class_pad_requests (zeros otherwise: the default path rounds the
   size up instead, nd_class_aligned_past_lookup below): the bin that
   serves an aligned request of alignment 2^(k + ND_ALIGN_ROW0) (32 bytes
   to ND_ALIGN_NATURAL) whose padded size is of class c, in row k, column
   c: the first class from c on whose size is a multiple of the alignment,
   the one after it if that has no bin (class.h above), then its bin;
   ND_CLASS_COUNT if none. One load where nd_class_aligned walks the
   classes (4 KiB aligned to 4 KiB, padded: 5, 6, 7 then 8 KiB). */
#define ND_ALIGN_ROW0 5
#define ND_ALIGN_ROWS 10
_Static_assert(ND_ALIGN_NATURAL == (size_t)1 << (ND_ALIGN_ROW0 + ND_ALIGN_ROWS - 1),
               "one row per alignment from 32 bytes to ND_ALIGN_NATURAL");
#define ND_ALIGN_BIN_ROW 64   /* >= ND_CLASS_COUNT, a power of two: a row is a shift (the rest unused) */
_Static_assert(ND_ALIGN_BIN_ROW >= ND_CLASS_COUNT, "a row holds every class");
_Static_assert(ND_MEDIUM_MAX % ND_ALIGN_NATURAL == 0, "the last class is a multiple of every alignment of a row");
extern uint8_t nd_class_aligned_bin[ND_ALIGN_ROWS][ND_ALIGN_BIN_ROW] nd_hidden;
/* The aligned fast path's table (nd_class_bin_offset's twin, one row per
   alignment as above): row k, entry i holds the bin (not its offset: one
   byte) that serves a request of up to i * ND_BIN_STEP bytes (at most
   ND_ALIGN_FAST_MAX) aligned to 2^(k + ND_ALIGN_ROW0): the bin of the
   smallest class of at least that many bytes (plus `pad`) whose size is a
   multiple of the alignment (the next class if that one has no bin).
   Every entry names a bin: a request of up to 1 KiB + pad at an alignment
   of up to ND_ALIGN_NATURAL always has such a class (checked at the fill).
   Filled by nd_class_aligned_init at process start, before any thread
   cache exists (zeros until then: only the empty cache, whose bins are
   all empty, is reached through it). Small on purpose: every 4 KiB of
   static data is address space a process under an RLIMIT_AS loses (the
   static test programs of api/memory.c count it). */
#define ND_ALIGN_ROW_LEN 128   /* a power of two (a row is a shift), 1,280 bytes in all */
#define ND_ALIGN_FAST_MAX ((ND_ALIGN_ROW_LEN - 1) * ND_BIN_STEP)   /* 1,016 B: the largest request of a row */
_Static_assert(ND_ALIGN_FAST_MAX <= ND_LOOKUP_MAX, "a row's requests are in the lookup table's range");
extern uint8_t nd_class_aligned_off[ND_ALIGN_ROWS][ND_ALIGN_ROW_LEN] nd_hidden;
/* Fills nd_class_aligned_off; pad: as nd_class_pad_requests's (0 but
   under secure=1), called after it. */
void nd_class_aligned_init(size_t pad) nd_hidden;
extern const uint32_t nd_class_size[ND_CLASS_COUNT] nd_hidden;

/* The class of a request past ND_LOOKUP_MAX (to ND_MEDIUM_MAX), per
   ND_BIG_STEP bytes: every class from 1 KiB on is a multiple of 256, so
   the sizes of one entry past 1 KiB, (i-1)*256+1 .. i*256, share a class
   (entry 4, 1 KiB, is right for 897-1,024 B, not for 769-896). One load where
   the class's bit length took ten instructions (a 4 KiB malloc, an
   aligned request past 1 KiB); tcmalloc's class index also steps by 128
   bytes past 1 KiB. */
#define ND_BIG_STEP 256
extern const uint8_t nd_class_big[ND_MEDIUM_MAX / ND_BIG_STEP + 1] nd_hidden;

/* The class of a request of `size` bytes (size <= ND_MEDIUM_MAX). */
static inline unsigned nd_class_of(size_t size)
{
    if (size <= ND_LOOKUP_MAX)
        return nd_class_lookup[(size + ND_QUANTUM - 1) / ND_QUANTUM];
    return nd_class_big[(size + ND_BIG_STEP - 1) / ND_BIG_STEP];
}

/* The byte offset of the bin a thread cache serves `size` from (class *
   ND_BIN_BYTES); false for sizes above the classes. */
static inline __attribute__((always_inline)) bool nd_class_fast(size_t size, size_t *bin_off)
{
    if (nd_likely(size <= ND_LOOKUP_MAX))
        *bin_off = nd_class_bin_offset[(size + ND_BIN_STEP - 1) / ND_BIN_STEP];
    else if (size <= ND_MEDIUM_MAX)
        *bin_off = (size_t)nd_class_of(size) * ND_BIN_BYTES;
    else
        return false;
    return true;
}

/* The smallest class of at least `size` bytes whose blocks are all aligned
   to `alignment` (a power of two <= ND_ALIGN_NATURAL: every page starts on
   such a boundary, so a class whose size is a multiple of the alignment is
   naturally aligned); ND_CLASS_COUNT if none. */
static inline unsigned nd_class_aligned(size_t size, size_t alignment)
{
    size_t want = size < alignment ? alignment : size;
    if (want > ND_MEDIUM_MAX)
        return ND_CLASS_COUNT;
    unsigned c = nd_class_of(want);
    while (c < ND_CLASS_COUNT && (nd_class_size[c] & (alignment - 1)) != 0)
        c++;
    return c;
}

/* nd_class_aligned(size, alignment) for a size past ND_ALIGN_FAST_MAX (to
   ND_MEDIUM_MAX) at an alignment from 32 bytes to ND_ALIGN_NATURAL: the
   class of the size rounded up to the alignment. That class's size is a
   multiple of the alignment (a multiple of it up to 4 x the alignment is
   a class; past that, classes step by a quarter of a power of two, itself
   a multiple), and no smaller class of that kind holds the size; the
   rounded size is at least 1 KiB (nd_class_big's range: 1,017 B at 32 is
   1,024) and at most ND_MEDIUM_MAX (a multiple of every such alignment).
   Checked against nd_class_aligned for every size and alignment
   (tests/unit/size_classes.c). */
static inline __attribute__((always_inline)) unsigned nd_class_aligned_past_lookup(size_t size, size_t alignment)
{
    return nd_class_big[(((size + alignment - 1) & (0 - alignment)) + ND_BIG_STEP - 1) / ND_BIG_STEP];
}

/* The smallest request that nd_class_aligned maps to class c, less `pad`
   bytes (a request padded by pad: secure=1's canary word), over every
   alignment it takes: the largest power of two up to ND_ALIGN_NATURAL
   that divides c's size gives the smallest (the requests above the
   largest class below c of that alignment): 64 KiB blocks serve requests
   from 48 KiB + 1 aligned to 16 KiB (56 KiB is not a multiple of it). At
   least 1 (a request of 0 bytes is one of 1). */
static inline size_t nd_class_aligned_min(unsigned c, size_t pad)
{
    size_t size = nd_class_size[c], a = size & (0 - size);
    if (a > ND_ALIGN_NATURAL)
        a = ND_ALIGN_NATURAL;
    size_t below = 0;
    for (unsigned d = c; d-- > 0;)
        if ((nd_class_size[d] & (a - 1)) == 0) {
            below = nd_class_size[d];
            break;
        }
    return below > pad ? below + 1 - pad : 1;
}

/* Is class c served by small pages (else medium ones)? */
static inline bool nd_class_is_small(unsigned c) { return nd_class_size[c] <= ND_SMALL_MAX; }

#endif /* ND_CLASS_H */
