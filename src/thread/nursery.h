/*
 * nursery.h - the nurseries: per node, a shared heap whose pages serve
 * the first blocks of each small class to threads' plain caches (their
 * fills, tcache.c: nd_tcache_fill).
 */
#ifndef ND_NURSERY_H
#define ND_NURSERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "options.h"
#include "tcache.h"

/*
 * The nursery: a thread's first blocks of each small class come from
 * pages shared by the threads of its node, not from a page of its own.
 * A thread that makes a few requests of a few classes would otherwise
 * hold a page (an OS page of it resident) per class and a segment (its
 * 12 KiB header) of its own, most of what such a thread costs beyond its
 * stack (docs/how-it-works.md). A plain cache's bin (secure off) of a
 * class of at most ND_NURSERY_CLASS_MAX bytes whose heap has no page of
 * it takes its first fills, while their bound is below ND_FIRST_FILL <<
 * ND_NURSERY_FILLS (16: such a cache's bins start at one block and grow
 * by half, 1, 2, 3, 4, 6, 8 and 12 blocks, 36 in all, each fill rounded to
 * whole pairs of cache lines, 2, 4 or 8 blocks of the classes below
 * 128 B, whose next bounds it may cover: tcache.c, nd_bin_first_fill,
 * nd_bin_next_fill, nd_bin_nursery_take), from
 * the nursery of its heap's node,
 * unless its thread is the process's first (ND_TID_FIRST: a program that
 * never starts a thread maps no nursery, and the first thread's pages
 * are its own as before): a heap without a cache (ND_TID_NURSERY, a
 * shared heap that never takes its node's reserve, node.h; one per node,
 * under ND_LOCK(nursery, node)), of plain
 * memory of that node, so the blocks are of the cache's kind and every
 * free of them takes the paths of any block of its kind freed by a thread
 * that does not own its page (its bin; back to the page as a remote free
 * when the bin overflows or its thread's record is taken apart). Past
 * those fills, or once its heap has a page of the class, a bin fills
 * from its own heap as before.
 */
#define ND_NURSERY_CLASS_MAX 1024u
#define ND_NURSERY_FILLS     2u
/* A thread's maintenance (any thread's, once per purge_delay for each
   nursery, skipped while another holds it; force: now): each nursery
   takes its blocks back from their remote lists, retires its empty pages
   and purges those past the delay, as a thread's heap does, so the
   blocks young threads took and gave back do not stay resident. */
void nd_nursery_maintain(uint64_t now, bool force) nd_hidden;
/* The nursery of `node` (a cache without capacity whose heap is it), or
   NULL while it has none (read with acquire: its statistics and fork
   child, shared.c, walk it with the shared heaps). */
nd_tcache *nd_nursery_of(int node) nd_hidden;

/* Does a fill of tc's bin of class cls, whose fill bound is `fill`
   (before it doubles: 1 at the bin's first fill, tcache.c),
   take its blocks from its node's nursery? A plain cache of a thread
   other than the first (no secure state, secure off), a class of at most
   ND_NURSERY_CLASS_MAX bytes its heap has no page of, while the bound is
   below ND_FIRST_FILL << ND_NURSERY_FILLS (the bin's first fills, 36-40
   blocks: 1, 2, 3, 4, 6, 8, 12 in whole pairs of cache lines, tcache.c:
   nd_bin_nursery_take). */
static inline bool nd_nursery_serves(const nd_tcache *tc, unsigned cls, uint32_t fill)
{
    return fill < (ND_FIRST_FILL << ND_NURSERY_FILLS) && nd_class_size[cls] <= ND_NURSERY_CLASS_MAX &&
           tc->heap.tid != ND_TID_FIRST && !tc->heap.bound && !tc->heap.shared && tc->secure == NULL &&
           !nd_secure_on() && tc->heap.pages[cls].first == NULL;
}
/* Up to n blocks of class cls from the nursery of tc's node into out; 0
   when it has none to give (errno as it was). */
size_t nd_nursery_take(const nd_tcache *tc, unsigned cls, void **out, size_t n) nd_hidden;

#endif /* ND_NURSERY_H */
