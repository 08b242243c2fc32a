/*
 * large.c - large blocks (see large.h): one per segment, from the owner's
 * cache of free large segments or its node's.
 */
#include "large.h"

#include <errno.h>
#include "node.h"
#include "options.h"
#include "os.h"

static size_t nd_round_os(size_t n)
{
    size_t ps = nd_os_page_size();
    return (n + ps - 1) & ~(ps - 1);
}

void *nd_large_alloc(nd_large_cache *cache, struct nd_heap *owner, uintptr_t tid, int node, bool bound,
                     size_t size, size_t alignment, size_t *bytes)
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
    if (cache->first != NULL) {
        s = cache->first;
        cache->first = s->next;
        s->next = NULL;
        cache->count--;
    } else {
        s = nd_node_seg_get(node, bound, ND_SEG_LARGE);
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
    nd_store_relaxed(&pg->heap, owner);
    nd_store_release(&pg->key, tid | ND_KEY_LARGE);
    nd_gauge_active((long)need);
    *bytes = need;
    return start;
}

size_t nd_large_free(nd_segment *s, nd_page *pg, nd_large_cache *cache)
{
    size_t bytes = pg->block_size;
    nd_store_relaxed(&pg->in_use, 0);
    nd_store_release(&pg->key, ND_KEY_NONE);
    pg->heap = NULL;
    s->used_pages = 0;
    s->free_mask = 1;
    nd_gauge_active(-(long)bytes);
    if (cache != NULL && cache->count < ND_LARGE_CACHE_MAX && nd_opt(ND_OPT_purge_delay) > 0) {
        s->cached_at = nd_os_now_ms();
        s->next = cache->first;
        cache->first = s;
        cache->count++;
        return bytes;
    }
    nd_node_seg_put(s);
    return bytes;
}

bool nd_large_resize(nd_segment *s, nd_page *pg, size_t size, long *delta)
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
        size_t off = (size_t)(pg->start + need - (uint8_t *)s);
        size_t first_free_chunk = (off + ND_CHUNK_SIZE - 1) >> ND_CHUNK_SHIFT;
        uint64_t tail = first_free_chunk >= 64 ? 0 : nd_mask_range((unsigned)first_free_chunk, 63);
        if (tail & s->committed)
            nd_seg_purge(s, tail);
    }
    *delta = (long)need - (long)pg->block_size;
    nd_gauge_active(*delta);
    pg->block_size = (uint32_t)need;
    return true;
}

void nd_large_cache_release(nd_large_cache *cache, uint64_t now, bool all)
{
    uint64_t delay = (uint64_t)nd_opt(ND_OPT_purge_delay);
    nd_segment **pp = &cache->first;
    while (*pp) {
        nd_segment *s = *pp;
        if (all || now >= s->cached_at + delay) {
            *pp = s->next;
            s->next = NULL;
            cache->count--;
            nd_node_seg_put(s);
        } else {
            pp = &s->next;
        }
    }
}
