/*
 * huge.c - huge blocks (see huge.h): mapped on allocation, unmapped on free,
 * moved with mremap when a plain one grows.
 */
#include "huge.h"

#include <errno.h>
#include "os.h"

void *nd_huge_alloc(size_t size, size_t alignment, int node, bool bound, const uint64_t *interleave)
{
    if (alignment < ND_HUGE_HEADER_SIZE)
        alignment = ND_HUGE_HEADER_SIZE;
    size_t ps = nd_os_page_size();
    size_t offset = alignment;   /* block offset from the segment start: >= header */
    size_t map_align = alignment > ND_SEG_SIZE ? alignment : ND_SEG_SIZE;
    if (offset / ND_SEG_SIZE > 254 || size > ((size_t)1 << 46)) {
        errno = ENOMEM;
        return NULL;
    }
    size_t total = (offset + size + ps - 1) & ~(ps - 1);
    if (total < size) {
        errno = ENOMEM;
        return NULL;
    }
    nd_segment *s = nd_os_map_aligned(total, map_align);
    if (s == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    if (interleave != NULL) {
        nd_os_bind(s, total, ND_MPOL_INTERLEAVE, interleave);
    } else if (bound && nd_seg_place_new(s, total, node, total) != 0) {
        nd_os_unmap(s, total);
        return NULL;
    }
    s->cookie = (uintptr_t)s ^ nd_seg_secret;
    s->kind = ND_SEG_HUGE;
    nd_seg_set_geometry(s, ND_SEG_SHIFT, 1);
    s->bound = bound;
    s->interleaved = interleave != NULL;
    s->node = (int16_t)node;
    s->size = total;
    s->free_mask = 0;
    s->used_pages = 1;
    s->committed = ~(uint64_t)0;
    nd_page *pg = &s->pages[0];
    pg->key = ND_KEY_NONE;
    pg->in_use = 1;
    pg->used = 1;
    pg->capacity = pg->reserved = 1;
    pg->start = (uint8_t *)s + offset;
    pg->block_size = 0;   /* see nd_huge_usable */
    pg->cls = ND_CLASS_COUNT;
    nd_seg_gauge_mapped(s, (long)total);
    nd_gauge_active((long)(total - offset));
    nd_gauge_add(committed, total);
    nd_gauge_add(segments, 1);
    nd_gauge_add(huge_count, 1);
    nd_gauge_add(huge_bytes, total - offset);
    nd_segmap_set(s, 1);
    if (offset >= ND_SEG_SIZE)
        nd_segmap_set(pg->start, (unsigned)(offset / ND_SEG_SIZE) + 1);
    return pg->start;
}

size_t nd_huge_usable(const nd_segment *s, const void *p)
{
    return (size_t)((const uint8_t *)s + s->size - (const uint8_t *)p);
}

void nd_huge_free(nd_segment *s)
{
    size_t total = s->size;
    size_t offset = (size_t)(s->pages[0].start - (uint8_t *)s);
    if (offset >= ND_SEG_SIZE)
        nd_segmap_set(s->pages[0].start, 0);
    nd_segmap_set(s, 0);
    s->cookie = 0;
    nd_seg_gauge_mapped(s, -(long)total);
    nd_gauge_active(-(long)(total - offset));
    nd_gauge_sub(committed, total);
    nd_gauge_add(returned, total);
    nd_gauge_sub(segments, 1);
    nd_gauge_sub(huge_count, 1);
    nd_gauge_sub(huge_bytes, total - offset);
    nd_os_unmap(s, total);
}

void *nd_huge_realloc(nd_segment *s, void *p, size_t size)
{
    /* Only plain huge blocks whose block starts in the first chunk move by
       remapping; bound ones must be committed and verified, which a copy
       into a fresh block does. */
    size_t offset = (size_t)((uint8_t *)p - (uint8_t *)s);
    if (s->bound || s->interleaved || offset >= ND_SEG_SIZE)
        return NULL;
    size_t ps = nd_os_page_size();
    size_t total = (offset + size + ps - 1) & ~(ps - 1);
    if (total < size || size > ((size_t)1 << 46))
        return NULL;
    size_t old_total = s->size;
    if (total == old_total)
        return p;
    if (total < old_total || nd_os_remap_inplace(s, old_total, total) == 0) {
        if (total < old_total)
            nd_os_unmap((uint8_t *)s + total, old_total - total);
        s->size = total;
    } else {
        /* Reserve an aligned destination and move the mapping there. */
        void *to = nd_os_map_aligned(total, ND_SEG_SIZE);
        if (to == NULL)
            return NULL;
        nd_segment *t = nd_os_remap_to(s, old_total, total, to);
        if (t == NULL) {
            nd_os_unmap(to, total);
            return NULL;
        }
        nd_segmap_set(s, 0);
        t->cookie = (uintptr_t)t ^ nd_seg_secret;
        t->pages[0].start = (uint8_t *)t + offset;
        t->size = total;
        nd_segmap_set(t, 1);
        s = t;
    }
    long delta = (long)total - (long)old_total;
    nd_seg_gauge_mapped(s, delta);
    nd_gauge_active(delta);
    if (delta > 0) {
        nd_gauge_add(committed, delta);
        nd_gauge_add(huge_bytes, delta);
    } else {
        nd_gauge_sub(committed, -delta);
        nd_gauge_sub(huge_bytes, -delta);
        nd_gauge_add(returned, -delta);
    }
    return s->pages[0].start;
}
