/*
 * segment.c - maps, binds, commits, purges and unmaps segments; keeps the
 * segment map. No locks: every function works on a segment the caller owns
 * exclusively (a heap, a node cache under its lock, or a fresh mapping).
 *
 * Placement of node-bound memory. A bound segment gets MPOL_PREFERRED for its
 * node before anything touches it. Chunks are then committed explicitly:
 * populated (MADV_POPULATE_WRITE) and checked page by page with move_pages.
 * Pages the kernel put elsewhere (node short of free memory) are migrated to
 * the node with move_pages(MPOL_MF_MOVE), which reclaims there if it can and
 * fails cleanly if it cannot. Whatever is still off-node then either fails
 * the commit (strict mode: purged, ENOMEM) or is accepted and counted
 * (preferred mode). MPOL_BIND is not used because a bound fault on a full
 * node invokes the OOM killer instead of returning an error.
 */
#include "segment.h"

#include <errno.h>
#include <string.h>
#include "options.h"
#include "os.h"
#include "topo.h"

uint8_t   nd_segmap[ND_SEGMAP_SIZE];
uintptr_t nd_seg_secret;
nd_seg_gauges nd_seg_gauge;

static void nd_gauge_peak(size_t *peak, size_t value)
{
    size_t old = nd_load_relaxed(peak);
    while (value > old && !nd_cas_weak_acq_rel(peak, &old, value))
        ;
}

void nd_gauge_active(long delta)
{
    size_t now = __atomic_add_fetch(&nd_seg_gauge.active, (size_t)delta, __ATOMIC_RELAXED);
    if (delta > 0)
        nd_gauge_peak(&nd_seg_gauge.peak_active, now);
}

void nd_gauge_mapped(const nd_segment *s, long delta)
{
    size_t now = __atomic_add_fetch(&nd_seg_gauge.mapped, (size_t)delta, __ATOMIC_RELAXED);
    __atomic_add_fetch(&nd_seg_gauge.node_mapped[s->node][s->bound ? 1 : 0], (size_t)delta, __ATOMIC_RELAXED);
    if (delta > 0)
        nd_gauge_peak(&nd_seg_gauge.peak_mapped, now);
}

void nd_seg_init(void)
{
    nd_seg_secret = (uintptr_t)nd_os_random() | 1;
}

static void nd_node_mask(uint64_t *mask, int node)
{
    memset(mask, 0, ND_MAX_NODES / 8);
    mask[node / 64] |= (uint64_t)1 << (node % 64);
}

/* Gives [p, p+size) its node as policy. A kernel without NUMA calls
   (ENOSYS) or a sandbox that forbids them (EPERM, e.g. containers without
   CAP_SYS_NICE) is fine on a machine with one node with memory: there is
   nowhere else for the pages to go. With several, the request fails with
   that errno rather than promise a placement nodal cannot make. */
static int nd_seg_bind(void *p, size_t size, const uint64_t *mask)
{
    if (nd_os_bind(p, size, ND_MPOL_PREFERRED, mask) == 0)
        return 0;
    int err = errno;
    if (nd_topo.mem_count <= 1 && (err == ENOSYS || err == EPERM))
        return 0;
    errno = (err == ENOSYS || err == EPERM) ? err : ENOMEM;
    return -1;
}

static void nd_segmap_set(const void *chunk_addr, unsigned value)
{
    nd_store_release(&nd_segmap[(uintptr_t)chunk_addr >> ND_SEG_SHIFT], (uint8_t)value);
}

/*
 * Checks that every OS page of [p, p+len) is on `node`, migrating strays.
 * Returns the number of OS pages that remain elsewhere (0 = all placed), or
 * -1 if the kernel could not be asked (treated as placed: no NUMA support).
 */
static long nd_seg_verify(uint8_t *p, size_t len, int node)
{
    enum { BATCH = 256 };
    void *pages[BATCH];
    int status[BATCH], nodes[BATCH];
    size_t ps = nd_os_page_size();
    long stray_total = 0;
    for (size_t off = 0; off < len; off += BATCH * ps) {
        size_t n = 0;
        for (size_t o = off; o < len && n < BATCH; o += ps)
            pages[n++] = p + o;
        if (nd_os_pages_nodes(pages, status, n) != 0)
            return -1;
        size_t strays = 0;
        for (size_t i = 0; i < n; i++) {
            if (status[i] != node) {
                pages[strays] = pages[i];
                nodes[strays] = node;
                strays++;
            }
        }
        if (strays == 0)
            continue;
        /* Migrate the strays to the node; the kernel reclaims there if it can. */
        long rc = nd_os_move_pages(pages, nodes, status, strays);
        for (size_t i = 0; i < strays; i++)
            if (rc < 0 || status[i] != node)
                stray_total++;
    }
    return stray_total;
}

/* Commits [p, p+len) of a bound mapping: populate, verify, migrate. */
static int nd_commit_bound(uint8_t *p, size_t len, int node)
{
    if (nd_os_populate(p, len) != 0) {
        nd_os_purge(p, len);
        errno = ENOMEM;
        return -1;
    }
    long strays = nd_seg_verify(p, len, node);
    if (strays <= 0)
        return 0;
    if (nd_opt(ND_OPT_node_fallback) == 0) {   /* strict */
        nd_os_purge(p, len);
        nd_add_relaxed(&nd_seg_gauge.strict_failures, 1);
        errno = ENOMEM;
        return -1;
    }
    nd_add_relaxed(&nd_seg_gauge.fallback_pages, (size_t)strays);
    return 0;
}

int nd_seg_commit_slow(nd_segment *s, uint64_t todo)
{
    if (s->bound) {
        /* Commit maximal runs of uncommitted chunks. */
        uint64_t m = todo;
        while (m) {
            unsigned a = (unsigned)__builtin_ctzll(m);
            unsigned b = a;
            while (b + 1 < 64 && (m >> (b + 1) & 1))
                b++;
            uint8_t *start = (uint8_t *)s + ((size_t)a << ND_CHUNK_SHIFT);
            size_t n = (size_t)(b - a + 1) << ND_CHUNK_SHIFT;
            if (nd_commit_bound(start, n, s->node) != 0) {
                return -1;
            }
            s->committed |= (b == 63 ? ~(uint64_t)0 : (((uint64_t)1 << (b + 1)) - 1)) & ~(((uint64_t)1 << a) - 1);
            nd_add_relaxed(&nd_seg_gauge.committed, n);
            m &= ~s->committed;
        }
    } else {
        s->committed |= todo;
        nd_add_relaxed(&nd_seg_gauge.committed, (size_t)nd_popcount64(todo) << ND_CHUNK_SHIFT);
    }
    return 0;
}

void nd_seg_purge(nd_segment *s, uint64_t mask)
{
    mask &= s->committed;
    s->purge_mask &= ~mask;
    while (mask) {
        unsigned a = (unsigned)__builtin_ctzll(mask);
        unsigned b = a;
        while (b + 1 < 64 && (mask >> (b + 1) & 1))
            b++;
        uint8_t *start = (uint8_t *)s + ((size_t)a << ND_CHUNK_SHIFT);
        uint8_t *end = (uint8_t *)s + ((size_t)(b + 1) << ND_CHUNK_SHIFT);
        if (a == 0)
            start = (uint8_t *)s + ND_SEG_HEADER_SIZE;   /* keep the header */
        nd_os_purge(start, (size_t)(end - start));
        nd_add_relaxed(&nd_seg_gauge.returned, (size_t)(end - start));
        uint64_t run = (b == 63 ? ~(uint64_t)0 : (((uint64_t)1 << (b + 1)) - 1)) & ~(((uint64_t)1 << a) - 1);
        if (a != 0)
            s->committed &= ~run;
        else
            s->committed &= ~(run & ~(uint64_t)1);  /* chunk 0 holds the header: stays committed */
        nd_sub_relaxed(&nd_seg_gauge.committed, (size_t)(end - start));
        mask &= ~run;
    }
}

nd_segment *nd_seg_map(int node, bool bound)
{
    nd_segment *s = nd_os_map_aligned(ND_SEG_SIZE, ND_SEG_SIZE);
    if (s == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    if (bound) {
        uint64_t mask[ND_MAX_NODES / 64];
        nd_node_mask(mask, node);
        if (nd_seg_bind(s, ND_SEG_SIZE, mask) != 0) {
            nd_os_unmap(s, ND_SEG_SIZE);
            return NULL;
        }
        if (nd_opt(ND_OPT_huge_pages))
            nd_os_advise_hugepage(s, ND_SEG_SIZE);
        if (nd_commit_bound((uint8_t *)s, ND_CHUNK_SIZE, node) != 0) {
            nd_os_unmap(s, ND_SEG_SIZE);
            return NULL;
        }
    }
    s->cookie = (uintptr_t)s ^ nd_seg_secret;
    s->node = (int16_t)node;
    s->bound = bound;
    s->size = ND_SEG_SIZE;
    s->kind = ND_SEG_FREE;
    s->committed = 1;
    nd_add_relaxed(&nd_seg_gauge.committed, ND_CHUNK_SIZE);
    nd_gauge_mapped(s, (long)ND_SEG_SIZE);
    nd_add_relaxed(&nd_seg_gauge.segments, 1);
    nd_segmap_set(s, 1);
    return s;
}

void nd_seg_unmap(nd_segment *s)
{
    size_t committed = (size_t)nd_popcount64(s->committed) << ND_CHUNK_SHIFT;
    nd_segmap_set(s, 0);
    s->cookie = 0;
    nd_sub_relaxed(&nd_seg_gauge.committed, committed);
    nd_add_relaxed(&nd_seg_gauge.returned, committed);
    nd_gauge_mapped(s, -(long)ND_SEG_SIZE);
    nd_sub_relaxed(&nd_seg_gauge.segments, 1);
    nd_os_unmap(s, ND_SEG_SIZE);
}

void nd_seg_format(nd_segment *s, int kind)
{
    nd_assert(kind == ND_SEG_SMALL || kind == ND_SEG_MEDIUM || kind == ND_SEG_LARGE);
    s->kind = (uint8_t)kind;
    s->page_shift = kind == ND_SEG_SMALL ? ND_SMALL_PAGE_SHIFT
                  : kind == ND_SEG_MEDIUM ? ND_MEDIUM_PAGE_SHIFT : ND_SEG_SHIFT;
    s->page_count = (uint16_t)(kind == ND_SEG_LARGE ? 1 : ND_SEG_SIZE >> s->page_shift);
    s->used_pages = 0;
    s->free_mask = s->page_count == 64 ? ~(uint64_t)0 : (((uint64_t)1 << s->page_count) - 1);
    s->owner = NULL;
    s->abandoned = 0;
    s->next = s->prev = NULL;
    memset(s->pages, 0, sizeof(nd_page) * s->page_count);
    for (unsigned i = 0; i < s->page_count; i++) {
        s->pages[i].key = ND_KEY_NONE;
        s->pages[i].index = (uint8_t)i;
    }
}

/* ---- huge blocks ------------------------------------------------------- */

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
    } else if (bound) {
        uint64_t mask[ND_MAX_NODES / 64];
        nd_node_mask(mask, node);
        if (nd_seg_bind(s, total, mask) != 0) {
            nd_os_unmap(s, total);
            return NULL;
        }
        if (nd_opt(ND_OPT_huge_pages))
            nd_os_advise_hugepage(s, total);
        if (nd_commit_bound((uint8_t *)s, total, node) != 0) {
            nd_os_unmap(s, total);
            return NULL;
        }
    }
    s->cookie = (uintptr_t)s ^ nd_seg_secret;
    s->kind = ND_SEG_HUGE;
    s->page_shift = ND_SEG_SHIFT;
    s->page_count = 1;
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
    nd_gauge_mapped(s, (long)total);
    nd_gauge_active((long)(total - offset));
    nd_add_relaxed(&nd_seg_gauge.committed, total);
    nd_add_relaxed(&nd_seg_gauge.segments, 1);
    nd_add_relaxed(&nd_seg_gauge.huge_count, 1);
    nd_add_relaxed(&nd_seg_gauge.huge_bytes, total - offset);
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
    nd_gauge_mapped(s, -(long)total);
    nd_gauge_active(-(long)(total - offset));
    nd_sub_relaxed(&nd_seg_gauge.committed, total);
    nd_add_relaxed(&nd_seg_gauge.returned, total);
    nd_sub_relaxed(&nd_seg_gauge.segments, 1);
    nd_sub_relaxed(&nd_seg_gauge.huge_count, 1);
    nd_sub_relaxed(&nd_seg_gauge.huge_bytes, total - offset);
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
    nd_gauge_mapped(s, (long)total - (long)old_total);
    nd_gauge_active((long)total - (long)old_total);
    if (total > old_total) {
        nd_add_relaxed(&nd_seg_gauge.committed, total - old_total);
        nd_add_relaxed(&nd_seg_gauge.huge_bytes, total - old_total);
    } else {
        nd_sub_relaxed(&nd_seg_gauge.committed, old_total - total);
        nd_sub_relaxed(&nd_seg_gauge.huge_bytes, old_total - total);
        nd_add_relaxed(&nd_seg_gauge.returned, old_total - total);
    }
    return s->pages[0].start;
}
