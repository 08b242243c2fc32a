/*
 * shared.h - the shared heaps: one per node and kind of memory (plain,
 * bound), each under its own lock (lock.h: shared_heap), for the threads
 * that have no thread cache of their own: a thread that is starting (its
 * record is being made: the allocations that needs), that is being torn
 * down (destructors running after nodal's), or that could not get one (out
 * of memory); and the small requests a thread's own heap had no room for
 * (an address-space limit: no segment maps), for which a plain shared heap
 * takes its node's reserve when it can map nothing either (node.h). A
 * shared heap has no cache (capacity 0): every request takes blocks
 * straight from its pages, and no page of it is ever hot.
 */
#ifndef ND_SHARED_H
#define ND_SHARED_H

#include <stdbool.h>
#include <stddef.h>
#include "config.h"
#include "counters.h"

/* A block of `size` bytes aligned to `alignment` (0: none) from the shared
   heap of (node, bound). NULL with errno = ENOMEM. */
void *nd_shared_malloc(int node, bool bound, size_t alignment, size_t size) nd_hidden;
/* Adds the statistics of the shared heaps (the nurseries too, nursery.h)
   into cls[ND_CLASS_COUNT] and tot. */
void  nd_shared_stats_add(nd_snap_class *cls, nd_snap_totals *tot) nd_hidden;
/* fork(), in the child, every lock held: finishes the notifications that
   threads lost in the fork had begun on the shared heaps' pages (the
   nurseries' too). */
void  nd_shared_fork_child(void) nd_hidden;

#endif /* ND_SHARED_H */
