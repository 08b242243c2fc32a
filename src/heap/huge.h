/*
 * huge.h - huge blocks: a mapping of their own, sized to fit, for requests
 * too large (or too aligned) for a segment's pages. The mapping is a
 * segment of kind HUGE: a 4 KiB header with one page descriptor, then the
 * block. A freed one stays mapped, whole, for purge_delay in its node's
 * cache of huge mappings (node.h), for the next huge block of the same kind
 * of memory that fits; then it is unmapped.
 *
 *   s +0           +offset (>= 4 KiB, the alignment)           +size
 *   | nd_segment   | block ................................... |
 *
 * secure=1: the last OS page of every huge mapping is a guard page
 * (inaccessible; nd_seg_guard bytes), not part of the block: an overflow
 * past the block faults at once. A cached mapping grown or trimmed for
 * reuse, and a live block realloc resizes, gets its guard page at its new
 * end.
 *
 * realloc resizes a huge block without copying it (nd_huge_realloc):
 * shrunk where it is (its tail unmapped), grown where it is when the
 * addresses after it are free, else moved by the kernel (mremap: its
 * pages go along, their bytes are not copied). Every kind: plain,
 * interleaved (the mapping's policy goes with it), node-bound (the bytes
 * it gains bound to its node, populated and verified there as a new
 * block's are; a move that fails is undone), secure=1 (the guard page
 * moves to the new end), aligned beyond 4 MiB (a move keeps the
 * alignment). The statistics count each (huge_resizes). A block that was
 * a large block, whose pages the kernel moved into its mapping (realloc
 * past 1 MiB: nd_large_move), is then two or three mappings to the
 * kernel, which moves one at a time: its moves take each (seams,
 * segment.h), or every later move failed and realloc copied it. A large
 * block alone in its segment becomes a huge block where it is instead,
 * the segment its mapping (nd_huge_from_large); freed past 4 MiB, such a
 * mapping is cached in two, the segment (which its node's large pool
 * takes back: node.h, nd_node_seg_get_large) and the rest, into which the
 * next such block grows where it is (nd_huge_join_next, a piece at a time
 * from a rest much larger than a growth). A block that cannot grow where
 * it is moves to a place with room after it (nd_huge_reserve_room).
 *
 * A block aligned beyond 4 MiB starts in a later 4 MiB chunk of its mapping;
 * the segment map says how far back the header is (segment.h).
 */
#ifndef ND_HUGE_H
#define ND_HUGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "segment.h"

/* A huge block of `size` bytes aligned to `alignment` (a power of two).
   interleave == NULL: bound to node when bound, else plain; interleave !=
   NULL: pages spread over the nodes in that mask. NULL with errno = ENOMEM. */
void  *nd_huge_alloc(size_t size, size_t alignment, int node, bool bound, const uint64_t *interleave) nd_hidden;
void   nd_huge_free(nd_segment *s) nd_hidden;
/* Bytes usable from p (the block start) to the end of the mapping. */
size_t nd_huge_usable(const nd_segment *s, const void *p) nd_hidden;
/* Resizes huge block p (of s) to size bytes where it is or by moving its
   mapping, without a copy (above); NULL with the block as it was if it
   cannot (the caller then copies). */
void  *nd_huge_realloc(nd_segment *s, void *p, size_t size) nd_hidden;
/* The pages of a large block moved into huge block s at `offset` (bytes
   of them; nd_large_move): the kernel holds them as a mapping of their
   own from now on, which s's seams record (segment.h) so that a later
   move takes its mapping piece by piece. */
void   nd_huge_moved_in(nd_segment *s, size_t offset, size_t bytes) nd_hidden;
/* The segment of a large block that realloc grows past ND_LARGE_MAX, taken
   off its pool (large.c: nd_large_leave), becomes the mapping of a huge
   block where the large block was (segment.h: nd_seg_to_huge): the same
   address and bytes, nothing copied nor moved, its usable size the rest
   of the 4 MiB (a block at chunk 1: 4 MiB less 64 KiB); past that it
   grows as a huge block does (nd_huge_realloc). Freed, its mapping is a
   huge mapping of 4 MiB, which the node's cache gives back as a segment
   when it has no segment of its own to give (node.h: nd_node_seg_get_large).
   Returns the block (at s + offset). */
void  *nd_huge_from_large(nd_segment *s, size_t offset) nd_hidden;
/* Debug builds (ND_DEBUG >= 2; tests): called when a realloc has moved a
   huge mapping away from [old_start, old_start + old_size), before the new
   one is in the segment map, so that a test can map something there
   meanwhile. Release builds do not define it. */
extern void (*nd_huge_moved_hook)(void *old_start, size_t old_size) nd_hidden;

/* Is huge block s's mapping a segment it was made of, still 4 MiB
   (nd_huge_from_large)? realloc keeps it whole while the block stays past
   ND_LARGE_MAX (its pages past the block are the room it was made with,
   and freed whole, it can serve as a segment again). */
static inline bool nd_huge_was_segment(const nd_segment *s) { return s->formatted && s->size == ND_SEG_SIZE; }
/* Is this huge block zero-filled fresh memory (calloc may skip the memset)? */
static inline bool nd_huge_is_fresh(const nd_segment *s) { return s->kind == ND_SEG_HUGE && s->fresh; }

#endif /* ND_HUGE_H */
