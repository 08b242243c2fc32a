/*
 * page.h - nodal pages: one size class per page; free lists, remote frees,
 * the page queues of a heap, and the thread-cache fill and flush that sit
 * between the fast paths and the pages.
 *
 * Remote frees. A block freed by a thread that does not own its page is
 * pushed on the page's xfree list with a compare-and-swap; the owner takes
 * the whole list back with one exchange when it next needs blocks from the
 * page. The two low bits of xfree (blocks are 16-byte aligned) hold a state:
 *
 *     xfree = [ block pointer ............................ | state ]
 *     NONE    remote frees just push.
 *     NOTIFY  the page sits on its owner's full queue; the first remote free
 *             turns NOTIFY into BUSY, pushes the page on owner->xpages, then
 *             clears BUSY. The owner moves notified pages back to their
 *             queue, so a full page that gets remote frees is found again
 *             without scanning.
 *     BUSY    a remote thread is between reading page->heap and pushing the
 *             page on that heap; the owner waits for it to clear before it
 *             abandons the heap or gives the page back to its segment.
 */
#ifndef ND_PAGE_H
#define ND_PAGE_H

#include <stdbool.h>
#include "config.h"
#include "heap.h"
#include "segment.h"

#define ND_XSTATE_MASK   ((uintptr_t)3)
#define ND_XSTATE_NONE   ((uintptr_t)0)
#define ND_XSTATE_NOTIFY ((uintptr_t)1)
#define ND_XSTATE_BUSY   ((uintptr_t)2)

/* Pages in use per size class (statistics). */
extern size_t nd_page_gauge[ND_CLASS_COUNT] nd_hidden;

/* The malloc slow path for cached classes: refills bin; false when out of
   memory (errno = ENOMEM). */
bool  nd_bin_fill(nd_heap *h, unsigned cls) nd_hidden;
/* Returns the n oldest blocks of bin cls to their pages. */
void  nd_bin_flush(nd_heap *h, unsigned cls, size_t n) nd_hidden;
/* One block of class cls straight from a page (classes without a cache). */
void *nd_page_alloc_block(nd_heap *h, unsigned cls) nd_hidden;
/* The owner gives block p back to its page pg. */
void  nd_page_free_local(nd_heap *h, nd_page *pg, void *p) nd_hidden;
/* Any other thread gives block p back to page pg of segment s. */
void  nd_page_free_remote(nd_segment *s, nd_page *pg, void *p) nd_hidden;

/* Moves pages notified by remote frees back to their queues. */
void  nd_heap_drain_xpages(nd_heap *h) nd_hidden;
/* Takes the remote frees of pg into its free list (owner only). */
void  nd_page_collect(nd_page *pg) nd_hidden;
/* Abandonment: stop notifications for pg (waits out a notifier in flight). */
void  nd_page_disarm(nd_page *pg) nd_hidden;
/* Puts an in-use page of a segment being adopted into h's queues. */
void  nd_page_adopt(nd_heap *h, nd_page *pg) nd_hidden;
/* Hands a segment with no page in use, already off h's lists, to its node. */
void  nd_heap_seg_release(nd_heap *h, nd_segment *s) nd_hidden;
/* Gives an empty page back to its segment; the segment goes to its node's
   cache when no page is left in use. */
void  nd_page_retire(nd_heap *h, nd_page *pg) nd_hidden;

/* Is p the start of a block of pg? (never true for a page not in use) */
bool  nd_page_is_block_start(const nd_page *pg, const void *p) nd_hidden;

/* Debug checks of the invariants written above struct nd_page / nd_heap
   (heap.h); true when they hold. Cost: O(blocks) and O(pages). */
bool nd_page_is_valid(const nd_page *pg) nd_hidden;
bool nd_heap_is_valid(const nd_heap *h) nd_hidden;

/* Page queues. */
void nd_pq_push(nd_page_queue *q, nd_page *pg) nd_hidden;       /* at the front */
void nd_pq_push_back(nd_page_queue *q, nd_page *pg) nd_hidden;
void nd_pq_remove(nd_page_queue *q, nd_page *pg) nd_hidden;

/* Segment lists of a heap: segments with a free page first. */
void nd_seglist_push(nd_segment **head, nd_segment *s) nd_hidden;
void nd_seglist_remove(nd_segment **head, nd_segment *s) nd_hidden;

#endif /* ND_PAGE_H */
