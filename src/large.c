/*
 * large.c - large blocks: above the largest size class and small enough to
 * share a 4 MiB segment with its header, one block per segment, sized to
 * whole OS pages. A freed large segment goes to its owner heap's small cache
 * (no lock) when the owner frees it, to the node cache otherwise.
 *
 * A large page descriptor: reserved = capacity = used = 1, block_size = the
 * block's usable bytes (OS-page multiple), start = the block,
 * key = owner tid | ND_KEY_LARGE (so every free takes the slow path).
 */
#include <errno.h>
#include <string.h>
#include "heap.h"
#include "node.h"
#include "options.h"

#define ND_LARGE_CACHE_MAX 2

static size_t nd_round_os(size_t n)
{
    size_t ps = nd_os_page_size();
    return (n + ps - 1) & ~(ps - 1);
}

void *nd_heap_large_alloc(nd_heap *h, size_t size, size_t alignment)
{
    size_t offset = ND_SEG_HEADER_SIZE;
    if (alignment > offset)
        offset = alignment;   /* alignments are powers of two <= 2 MiB here */
    size_t need = nd_round_os(size == 0 ? 1 : size);
    if (offset + need > ND_SEG_SIZE) {
        errno = ENOMEM;
        return NULL;
    }
    nd_segment *s = NULL;
    if (h->large_cache != NULL) {
        s = h->large_cache;
        h->large_cache = s->next;
        s->next = NULL;
        h->large_cache_count--;
    } else {
        s = nd_node_seg_get(h->node, h->bound, ND_SEG_LARGE);
        if (s == NULL)
            return NULL;
    }
    uint8_t *start = (uint8_t *)s + offset;
    if (nd_seg_commit(s, start, need) != 0) {
        nd_node_seg_put(s);
        errno = ENOMEM;
        return NULL;
    }
    s->purge_mask = 0;
    s->free_mask = 0;
    s->used_pages = 1;
    nd_page *pg = &s->pages[0];
    pg->block_size = (uint32_t)need;
    pg->reserved = pg->capacity = pg->used = 1;
    pg->start = start;
    pg->cls = ND_CLASS_COUNT;
    nd_store_relaxed(&pg->in_use, 1);
    nd_store_relaxed(&pg->heap, h);
    nd_store_release(&pg->key, h->tid | ND_KEY_LARGE);
    nd_gauge_active((long)need);
    nd_stat_inc(&h->stats.large_allocs);
    nd_stat_add(&h->stats.large_bytes_alloc, need);
    return start;
}

void nd_large_free(nd_segment *s, nd_page *pg)
{
    uintptr_t owner = nd_load_relaxed(&pg->key) & ~ND_KEY_LARGE;
    nd_heap *h = owner == nd_tid() ? pg->heap : NULL;   /* our own heap: alive */
    size_t bytes = pg->block_size;
    nd_store_relaxed(&pg->in_use, 0);
    nd_store_release(&pg->key, ND_KEY_NONE);
    pg->heap = NULL;
    s->used_pages = 0;
    s->free_mask = 1;
    nd_gauge_active(-(long)bytes);
    nd_heap *me = nd_tls_heap;
    if (me->kind == ND_HEAP_NORMAL) {
        nd_stat_inc(&me->stats.large_frees);
        nd_stat_add(&me->stats.large_bytes_freed, bytes);
    }
    if (h != NULL && h->kind == ND_HEAP_NORMAL && h->large_cache_count < ND_LARGE_CACHE_MAX &&
        nd_opt(ND_OPT_purge_delay) > 0) {
        s->cached_at = nd_os_now_ms();
        s->next = h->large_cache;
        h->large_cache = s;
        h->large_cache_count++;
        return;
    }
    nd_node_seg_put(s);
}

bool nd_large_resize(nd_segment *s, nd_page *pg, size_t size)
{
    size_t need = nd_round_os(size == 0 ? 1 : size);
    uint8_t *end = (uint8_t *)s + ND_SEG_SIZE;
    if (pg->start + need > end)
        return false;
    if (need > pg->block_size) {
        if (nd_seg_commit(s, pg->start, need) != 0)
            return false;
    } else if (need < pg->block_size) {
        /* Give back whole chunks past the new end. */
        uint8_t *keep_end = pg->start + need;
        size_t off = (size_t)(keep_end - (uint8_t *)s);
        size_t first_free_chunk = (off + ND_CHUNK_SIZE - 1) >> ND_CHUNK_SHIFT;
        uint64_t tail = first_free_chunk >= 64 ? 0 : ~(((uint64_t)1 << first_free_chunk) - 1);
        if (tail & s->committed)
            nd_seg_purge(s, tail);
    }
    nd_heap *me = nd_tls_heap;
    if (me->kind == ND_HEAP_NORMAL) {
        if (need > pg->block_size)
            nd_stat_add(&me->stats.large_bytes_alloc, need - pg->block_size);
        else
            nd_stat_add(&me->stats.large_bytes_freed, pg->block_size - need);
    }
    nd_gauge_active((long)need - (long)pg->block_size);
    pg->block_size = (uint32_t)need;
    return true;
}
