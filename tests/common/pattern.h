/*
 * pattern.h - fill a block with bytes derived from a tag (usually the block's
 * address when it was filled) and verify them later, so a block that was
 * overwritten, handed out twice, or moved without its contents is caught.
 *
 * Blocks up to ND_PAT_DENSE bytes are filled completely. Larger blocks get the
 * first and last ND_PAT_PAGE bytes plus one 8-byte word at every ND_PAT_PAGE
 * boundary in between: every OS page is touched (so a lost or shared page
 * shows) without writing hundreds of megabytes.
 *
 * The byte at offset o of a block with tag t depends only on (t, o), so after
 * realloc the surviving prefix can be checked against the old tag.
 */
#ifndef ND_TEST_PATTERN_H
#define ND_TEST_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#include "check.h"

#define ND_PAT_DENSE ((size_t)64 * 1024)
#define ND_PAT_PAGE  ((size_t)4096)

static inline uint8_t nd_pat_byte(uint64_t tag, size_t off)
{
    uint64_t w = nd_mix64(tag ^ ((uint64_t)(off >> 3) * 0x9e3779b97f4a7c15ULL));
    return (uint8_t)(w >> ((off & 7) * 8));
}

/* Writes (or, when check != 0, verifies) the pattern bytes of [lo, hi).
   Returns the offset of the first wrong byte, or SIZE_MAX. */
static inline size_t nd_pat_range(unsigned char *p, size_t lo, size_t hi,
                                  uint64_t tag, int check)
{
    size_t o = lo;
    /* Byte steps up to an 8-byte boundary, then whole words. */
    for (; o < hi && (o & 7); o++) {
        if (check) {
            if (p[o] != nd_pat_byte(tag, o))
                return o;
        } else {
            p[o] = nd_pat_byte(tag, o);
        }
    }
    for (; o + 8 <= hi; o += 8) {
        uint64_t w = nd_mix64(tag ^ ((uint64_t)(o >> 3) * 0x9e3779b97f4a7c15ULL));
        if (check) {
            uint64_t have;
            memcpy(&have, p + o, 8);
            if (have != w) {
                for (size_t b = 0; b < 8; b++)
                    if (p[o + b] != nd_pat_byte(tag, o + b))
                        return o + b;
            }
        } else {
            memcpy(p + o, &w, 8);
        }
    }
    for (; o < hi; o++) {
        if (check) {
            if (p[o] != nd_pat_byte(tag, o))
                return o;
        } else {
            p[o] = nd_pat_byte(tag, o);
        }
    }
    return SIZE_MAX;
}

static inline size_t nd_min_size(size_t a, size_t b) { return a < b ? a : b; }

/*
 * The pattern positions of a block of `size` bytes, cut at `limit`: writes
 * them (check == 0) or verifies them (check != 0, returns the first wrong
 * offset or SIZE_MAX).
 */
static inline size_t nd_pat_apply(void *block, size_t size, size_t limit,
                                  uint64_t tag, int check)
{
    unsigned char *p = block;
    size_t end = nd_min_size(size, limit), bad;
    if (size <= ND_PAT_DENSE)
        return nd_pat_range(p, 0, end, tag, check);
    if ((bad = nd_pat_range(p, 0, nd_min_size(ND_PAT_PAGE, end), tag, check)) != SIZE_MAX)
        return bad;
    for (size_t o = ND_PAT_PAGE; o + 8 <= size - ND_PAT_PAGE && o < end; o += ND_PAT_PAGE)
        if ((bad = nd_pat_range(p, o, nd_min_size(o + 8, end), tag, check)) != SIZE_MAX)
            return bad;
    if (size - ND_PAT_PAGE < end)
        return nd_pat_range(p, size - ND_PAT_PAGE, end, tag, check);
    return SIZE_MAX;
}

static inline void nd_pat_fill(void *p, size_t size, uint64_t tag)
{
    nd_pat_apply(p, size, size, tag, 0);
}

/* First wrong offset among the first `limit` bytes of a block filled as
   `size` bytes with `tag`, or SIZE_MAX. */
static inline size_t nd_pat_check(const void *p, size_t size, size_t limit, uint64_t tag)
{
    return nd_pat_apply((void *)p, size, limit, tag, 1);
}

/* First non-zero offset of the first `size` bytes (pattern positions only
   for large blocks, so huge calloc results are not read in full), or
   SIZE_MAX. */
static inline size_t nd_zero_check(const void *block, size_t size)
{
    const unsigned char *p = block;
    if (size <= ND_PAT_DENSE) {
        for (size_t o = 0; o < size; o++)
            if (p[o])
                return o;
        return SIZE_MAX;
    }
    for (size_t o = 0; o < ND_PAT_PAGE; o++)
        if (p[o])
            return o;
    for (size_t o = ND_PAT_PAGE; o + 8 <= size - ND_PAT_PAGE; o += ND_PAT_PAGE)
        for (size_t b = 0; b < 8; b++)
            if (p[o + b])
                return o + b;
    for (size_t o = size - ND_PAT_PAGE; o < size; o++)
        if (p[o])
            return o;
    return SIZE_MAX;
}

/* First non-zero offset of all `size` bytes, or SIZE_MAX. */
static inline size_t nd_zero_check_full(const void *block, size_t size)
{
    const unsigned char *p = block;
    size_t o = 0;
    for (; o + 8 <= size; o += 8) {
        uint64_t w;
        memcpy(&w, p + o, 8);
        if (w)
            break;
    }
    for (; o < size; o++)
        if (p[o])
            return o;
    return SIZE_MAX;
}

#endif /* ND_TEST_PATTERN_H */
