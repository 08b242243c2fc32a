/*
 * large.h - large blocks: above the largest size class and small enough to
 * share a 4 MiB segment with its header; one block per segment, sized to
 * whole OS pages. A freed large segment goes to its owner heap's small
 * cache of free large segments (no lock) when the owner frees it, to its
 * node's cache otherwise.
 *
 * A large page descriptor: reserved = capacity = used = 1, block_size = the
 * block's usable bytes (OS-page multiple), start = the block, key = owner
 * id | ND_KEY_LARGE (so every free takes the slow path), heap = the owner.
 */
#ifndef ND_LARGE_H
#define ND_LARGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "segment.h"

#define ND_LARGE_CACHE_MAX 2

/* Free large segments a heap keeps for its next large blocks.
   Invariant: count == length of the list through segment->next; each is
   kind LARGE with no page in use. */
typedef struct nd_large_cache {
    nd_segment *first;
    uint32_t    count;
} nd_large_cache;

struct nd_heap;

/* A large block of `size` bytes, aligned to `alignment` (0 or a power of two
   <= 2 MiB), for the heap `owner` (thread id `tid`) whose memory is (node,
   bound). *bytes = its usable size. NULL with errno = ENOMEM. */
void  *nd_large_alloc(nd_large_cache *cache, struct nd_heap *owner, uintptr_t tid, int node, bool bound,
                      size_t size, size_t alignment, size_t *bytes) nd_hidden;
/* Frees the large block of s; keeps the segment in `cache` (the owner's, or
   NULL when another thread frees). Returns the block's bytes. */
size_t nd_large_free(nd_segment *s, nd_page *pg, nd_large_cache *cache) nd_hidden;
/* Resizes a large block in place; false if it does not fit its segment.
   *delta = the change in its bytes. */
bool   nd_large_resize(nd_segment *s, nd_page *pg, size_t size, long *delta) nd_hidden;
/* Gives cached segments back to their node: all, or those cached for the
   purge delay. */
void   nd_large_cache_release(nd_large_cache *cache, uint64_t now, bool all) nd_hidden;
/* Will a block of `size` bytes aligned to `alignment` fit a large segment? */
static inline bool nd_large_fits(size_t size, size_t alignment)
{
    if (size > ND_LARGE_MAX || alignment > ND_SEG_SIZE / 2)
        return false;
    size_t offset = (ND_SEG_HEADER_SIZE + alignment - 1) & ~(alignment - 1);
    if (alignment == 0)
        offset = ND_SEG_HEADER_SIZE;
    return offset + size <= ND_SEG_SIZE;
}

#endif /* ND_LARGE_H */
