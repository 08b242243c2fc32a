/*
 * node.h - state shared by all threads, per NUMA node: the cache of free
 * segments and the list of segments abandoned by exited threads, for each
 * kind of memory a node has (plain memory created by threads running on the
 * node, and memory bound to the node).
 *
 * Locks: one per node (lock.h: node), held only for list operations; no
 * system call is made under it.
 */
#ifndef ND_NODE_H
#define ND_NODE_H

#include <stdbool.h>
#include "config.h"
#include "os.h"
#include "segment.h"

/* A free segment for (node, bound): from the cache or fresh from the OS;
   formatted for `kind` (SMALL/MEDIUM/LARGE). When no 4 MiB mapping can be
   made, a SMALL or MEDIUM one may be short (segment.h). A cached one
   still holding memory (dirty) comes with its resident chunks but the
   header's in purge_mask, due at purge_at = when the cache would have
   purged them (cached_at + purge_delay): the taker reuses them first
   (resident memory first: heap.c, large.c) and its maintenance purges the
   rest at that deadline (a fresh one: purge_mask 0). NULL with errno =
   ENOMEM. */
nd_segment *nd_node_seg_get(int node, bool bound, int kind) nd_hidden;
/* nd_node_seg_get for a large pool: when the node has no cached segment,
   a cached huge mapping that was a segment (a large block realloc made a
   huge block where it was: huge.h, nd_huge_from_large), still 4 MiB and
   one mapping to the kernel, serves as one again, its memory resident (a
   fresh segment's would fault in: bench/micro -m realloc -g 2m, where
   each growth past 1 MiB takes its segment from its pool and the pool
   takes it back here); formatted LARGE, committed whole, its purge due
   when the huge cache's unmapping would have been. Not under secure=1
   (a huge mapping's guard page is not where a segment's is). */
nd_segment *nd_node_seg_get_large(int node, bool bound) nd_hidden;
/* For a large pool (large.c) that has no resident run of `run` chunks: a
   segment of the cache of (node, bound) that still holds memory, among
   those first in it, whose resident chunks past the header hold such a
   run, formatted LARGE, as nd_node_seg_get gives it; NULL when the cache
   has none (no segment is mapped). */
nd_segment *nd_node_seg_get_resident(int node, bool bound, unsigned run) nd_hidden;
/* Does that cache hold a segment with memory in it (a hint: no lock)? */
bool nd_node_has_dirty(int node, bool bound) nd_hidden;
/* Takes back a segment with no page in use (cached, purged later, or
   unmapped; a short one is unmapped). */
void nd_node_seg_put(nd_segment *s) nd_hidden;

/* The node's reserve (node.c): a short segment of plain memory mapped
   under an address-space limit for the plain shared heap of its node.
   nd_node_reserve_note: maps it if the space is limited and it has none
   yet (called before each fresh mapping: nd_node_seg_get's, a huge
   block's). nd_node_reserve_take: the reserve, formatted SMALL, the first
   time it is asked for (the caller owns it for good), else NULL.
   nd_node_reserve_is: whether s is its node's reserve (never given back). */
void        nd_node_reserve_note(int node) nd_hidden;
nd_segment *nd_node_reserve_take(int node) nd_hidden;
bool        nd_node_reserve_is(const nd_segment *s) nd_hidden;

/* Abandoned segments (pages still holding blocks, no owner). */
void        nd_node_abandon(nd_segment *s) nd_hidden;
nd_segment *nd_node_abandoned_pop(int node, bool bound) nd_hidden;
/* How many segments the abandoned list of (node, bound) holds (read
   without the lock: a moment's count). */
size_t      nd_node_abandoned_count(int node, bool bound) nd_hidden;
/* Takes s off its abandoned list if it is still there and the lock is free. */
bool        nd_node_abandoned_claim(nd_segment *s) nd_hidden;

/* Freed huge mappings, kept whole for purge_delay (their memory too) for
   the next huge block of the same kind of memory that fits.
   nd_node_huge_take: the smallest cached mapping of size need..most (the
   largest, when need is 0), taken off the cache, or NULL. nd_node_huge_keep: caches a huge segment whose
   block was freed (kind set to FREE), unmapping the oldest beyond the
   cache's bounds; false if it may not be cached (the caller unmaps it). */
nd_segment *nd_node_huge_take(int node, bool bound, size_t need, size_t most) nd_hidden;
bool        nd_node_huge_keep(nd_segment *s) nd_hidden;
/* The cached huge mapping of (node, bound) that starts at `at`, of
   need..most bytes, taken off the cache; NULL if there is none (huge.c: a
   huge block grows into the rest of its own mapping, cached apart when it
   was freed: nd_huge_free). */
nd_segment *nd_node_huge_take_at(int node, bool bound, const void *at, size_t need, size_t most) nd_hidden;

/* Purges every cached segment of (node, kind) that still has memory in it,
   now: a thread that moved off the node leaves nothing resident behind. */
void        nd_node_purge_cached(int node, bool bound) nd_hidden;

/* Out of address space: unmaps every cached segment and huge mapping of
   every node (abandoned ones stay: they hold blocks). */
void        nd_node_release_cached(void) nd_hidden;

/* Purges cached segments: ND_SWEEP_PERIODIC (expired ones, at most once per
   purge_delay across all threads), ND_SWEEP_EXPIRED (expired ones, now),
   ND_SWEEP_ALL (every one). */
enum { ND_SWEEP_PERIODIC, ND_SWEEP_EXPIRED, ND_SWEEP_ALL };
void nd_node_maintain(int mode) nd_hidden;

typedef struct nd_node_counts { size_t cached, cached_committed, abandoned; } nd_node_counts;
void nd_node_counts_get(int node, bool bound, nd_node_counts *c) nd_hidden;

/* Debug check of the invariants of a node's caches and abandoned lists
   (node.c); true when they hold. Takes the node lock. */
bool nd_node_is_valid(int node) nd_hidden;

#endif /* ND_NODE_H */
