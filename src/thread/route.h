/*
 * route.h - the slow paths' choices, below the fast layer and above a
 * thread's caches: which kind of block serves a malloc that its thread
 * cache could not (by size: a size class through the cache, secure=1's
 * checked path, a large block, a huge block), and where a small or medium
 * block freed by a thread that does not own its page goes (this thread's
 * cache, an abandoned segment this thread adopts, or its page's remote
 * list).
 *
 * Every function works for the calling thread, with one of its thread
 * caches, or with a shared heap's cache under that heap's lock (shared.h).
 */
#ifndef ND_ROUTE_H
#define ND_ROUTE_H

#include <stddef.h>
#include <stdint.h>
#include "config.h"
#include "segment.h"
#include "tcache.h"

/* The slow path of malloc for tc: size classes through the cache (or
   secure=1's checked path), large and huge blocks. NULL with errno =
   ENOMEM. */
void *nd_route_malloc(nd_tcache *tc, size_t size) nd_hidden;
/* The same with an alignment (a power of two). */
void *nd_route_malloc_aligned(nd_tcache *tc, size_t alignment, size_t size) nd_hidden;
/* A large block (a run of 64 KiB chunks, see large.h) of tc's kind of
   memory, whatever its size up to ND_LARGE_MAX. */
void *nd_route_large(nd_tcache *tc, size_t size, size_t alignment) nd_hidden;
/* The same for a block realloc grows (large.h: nd_large_alloc_grown). */
void *nd_route_grown(nd_tcache *tc, size_t size) nd_hidden;

/* Block p (a block start, not marked free) of small or medium page pg of
   segment s, which another heap owns (key, read by the caller) or nobody
   does (ND_KEY_NONE: an exited thread abandoned its segment), is freed by
   the calling thread, whose free fast path could not cache it (no cache
   of that kind yet, or a full bin): kept in this thread's cache of the
   same kind of memory (made after a few such frees; a full bin grows or
   flushes), else taken in by adopting the abandoned segment (option
   reclaim_on_free), else pushed on the page's remote-free list at once. */
void nd_route_free_foreign(void *p, nd_segment *s, nd_page *pg, uintptr_t key) nd_hidden;

#endif /* ND_ROUTE_H */
