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
#include "tier.h"
#include "topo.h"

/* Set once any segment had a hole (segment.h: nd_seg_holes_made). */
uint8_t nd_seg_holes_made;

uint8_t  *nd_segmap_top[ND_SEGMAP_TOP];
uint64_t  nd_segcache[ND_SEGCACHE_SLOTS];
uintptr_t nd_seg_secret;
size_t    nd_seg_guard;

/* Slot 0's word of nd_segcache, which no window has (slot 0's windows'
   words are multiples of 2^16): addresses in the top 4 MiB of the 64-bit
   space, whose key wraps to 0, never match it. */
#define ND_SEGCACHE_NONE ((uint64_t)1)

void nd_seg_gauge_mapped(const nd_segment *s, long delta)
{
    nd_gauge_add_peak(&nd_gauge.segment_bytes, &nd_gauge.peak_segment_bytes, delta);
    size_t *node = s->bound ? &nd_gauge.bound_mapped[s->node] : &nd_gauge.plain_mapped[s->node];
    nd_add_relaxed(node, (size_t)delta);
}

void nd_seg_init(void)
{
    nd_store_release(&nd_segcache[0], ND_SEGCACHE_NONE);
    nd_seg_secret = (uintptr_t)nd_os_random() | 1;
    /* A guard page is an OS page: with pages above 16 KiB (some aarch64
       kernels) it would take a whole 64 KiB page of a small segment, and
       secure=1 goes without guard pages there. */
    size_t ps = nd_os_page_size();
    nd_seg_guard = nd_secure_on() && ps <= 16 * ND_KiB ? ps : 0;
    nd_assert(!nd_secure_on() || !ND_SEG_GUARD_ALWAYS || nd_seg_guard != 0);
    if (nd_secure_on() && nd_seg_guard == 0 && nd_opt_verbose())
        nd_warn("secure=1 without guard pages: the OS page (%zu bytes) is too large", ps);
}

/* Gives [p, p+size) its node as policy. A kernel without NUMA calls
   (ENOSYS) or a sandbox that forbids them (EPERM, e.g. containers without
   CAP_SYS_NICE) is fine on a machine with one node with memory: there is
   nowhere else for the pages to go. With several, the request fails with
   that errno rather than promise a placement nodal cannot make. */
int nd_seg_bind_node(void *p, size_t size, int node)
{
    uint64_t mask[ND_MAX_NODES / 64];
    memset(mask, 0, sizeof mask);
    mask[node / 64] |= (uint64_t)1 << (node % 64);
    if (nd_os_bind(p, size, ND_MPOL_PREFERRED, mask) == 0)
        return 0;
    int err = errno;
    if (nd_topo.mem_count <= 1 && (err == ENOSYS || err == EPERM))
        return 0;
    errno = (err == ENOSYS || err == EPERM) ? err : ENOMEM;
    return -1;
}

static size_t nd_segmap_leaf_bytes;   /* the leaves mapped so far */

size_t nd_segmap_mapped(void) { return nd_load_relaxed(&nd_segmap_leaf_bytes); }

static size_t nd_segmap_chunks(size_t size)
{
    size_t n = (size + ND_SEG_SIZE - 1) >> ND_SEG_SHIFT;
    return n < ND_SEGMAP_REACH ? n : ND_SEGMAP_REACH;
}

/* The leaf of the segment map that holds window w, mapped if it is not yet
   (NULL, ENOMEM: beyond 2^ND_VA_BITS, or no room for it). Two threads
   that map one at once both try; the compare-and-swap publishes one
   (release: its zeroed bytes are seen by whoever reads the pointer) and
   the other is unmapped. A leaf stays for the life of the process. */
static uint8_t *nd_segmap_leaf(uintptr_t w)
{
    if (w >= (uintptr_t)ND_SEGMAP_TOP << ND_SEGMAP_LEAF_BITS)
        return errno = ENOMEM, NULL;
    uint8_t **top = &nd_segmap_top[w >> ND_SEGMAP_LEAF_BITS];
    uint8_t *leaf = nd_load_acquire(top);
    if (leaf != NULL)
        return leaf;
    uint8_t *fresh = nd_os_map_aligned(ND_SEGMAP_LEAF_SIZE, ND_CACHE_LINE);
    if (fresh == NULL)
        return errno = ENOMEM, NULL;
    if (nd_cas_strong_acq_rel(top, &leaf, fresh)) {
        nd_add_relaxed(&nd_segmap_leaf_bytes, ND_SEGMAP_LEAF_SIZE);
        return fresh;
    }
    nd_os_unmap(fresh, ND_SEGMAP_LEAF_SIZE);
    return leaf;
}

/* Window w's byte (its leaf is mapped). */
static void nd_segmap_set(uintptr_t w, uint8_t value)
{
    uint8_t *leaf = nd_load_acquire(&nd_segmap_top[w >> ND_SEGMAP_LEAF_BITS]);
    nd_store_release(&leaf[w & (ND_SEGMAP_LEAF_SIZE - 1)], value);
}

nd_hot bool nd_segmap_huge(const nd_segment *s, size_t old_size, size_t new_size)
{
    uintptr_t first = (uintptr_t)s >> ND_SEG_SHIFT;
    size_t had = nd_segmap_chunks(old_size), has = nd_segmap_chunks(new_size);
    /* Every leaf first, so that a failure changes nothing. */
    for (size_t i = had; i < has; i++)
        if (nd_segmap_leaf(first + i) == NULL)
            return false;
    for (size_t i = had; i < has; i++)
        nd_segmap_set(first + i, (uint8_t)(i + 1));
    for (size_t i = has; i < had; i++)
        nd_segmap_set(first + i, 0);
    return true;
}

/* nd_segcache: segment s (of 4 MiB or less) takes its window's slot if it
   is free (with the word of its kind, segment.h), and gives it back if it
   holds it. A slot is claimed, rewritten (nd_seg_format: the kind's flag)
   and released only by the owner of the segment whose word it holds, each
   with a compare-and-swap: a segment whose slot another window holds
   keeps none (its frees take the special path), and a release never
   wipes another segment's word. */
static void nd_segcache_claim(const nd_segment *s, int kind)
{
    uintptr_t key = nd_segcache_key((uintptr_t)s);
    uint64_t *slot = &nd_segcache[key & (ND_SEGCACHE_SLOTS - 1)];
    uint64_t expect = nd_load_relaxed(slot);
    if ((expect & ~ND_SEGCACHE_MEDIUM) != key)   /* not s's: taken only if free */
        expect = 0;
    nd_cas_strong_acq_rel(slot, &expect, nd_segcache_word(key, kind));
}

static void nd_segcache_release(const nd_segment *s)
{
    uintptr_t key = nd_segcache_key((uintptr_t)s);
    uint64_t *slot = &nd_segcache[key & (ND_SEGCACHE_SLOTS - 1)];
    uint64_t expect = nd_load_relaxed(slot);
    if ((expect & ~ND_SEGCACHE_MEDIUM) == key)
        nd_cas_strong_acq_rel(slot, &expect, (uint64_t)0);
}

nd_hot void *nd_seg_reserve(size_t size, size_t alignment)
{
    void *p = nd_os_map_aligned(size, alignment);
    if (p != NULL && !nd_segmap_huge(p, 0, size)) {
        nd_os_unmap(p, size);
        p = NULL;
    }
    if (p == NULL)
        errno = ENOMEM;
    return p;
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

int nd_seg_commit_bound(uint8_t *p, size_t len, int node)
{
    nd_gauge_add(os_commits, 1);
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
        nd_gauge_add(strict_failures, 1);
        errno = ENOMEM;
        return -1;
    }
    nd_gauge_add(node_fallback_pages, strays);
    return 0;
}

nd_hot int nd_seg_commit_slow(nd_segment *s, uint64_t todo)
{
    if (s->bound) {
        /* Commit maximal runs of uncommitted chunks. */
        uint64_t m = todo;
        while (m) {
            unsigned a, b;
            nd_mask_first_run(m, &a, &b);
            uint8_t *start = (uint8_t *)s + ((size_t)a << ND_CHUNK_SHIFT);
            size_t n = (size_t)(b - a + 1) << ND_CHUNK_SHIFT;
            if ((size_t)(b + 1) << ND_CHUNK_SHIFT == s->size)
                n -= nd_seg_guard;   /* never populate the guard page */
            if (nd_seg_commit_bound(start, n, s->node) != 0)
                return -1;
            s->committed |= nd_mask_range(a, b);
            nd_gauge_add(committed, (size_t)(b - a + 1) << ND_CHUNK_SHIFT);   /* whole chunks, as purges count */
            m &= ~s->committed;
        }
    } else {
        s->committed |= todo;
        nd_gauge_add(committed, (size_t)nd_popcount64(todo) << ND_CHUNK_SHIFT);
    }
    return 0;
}

/* Purges the runs of `chunks` (never the header: chunk 0 stays committed)
   and clears their committed bits: the runs go to the batch, purged when
   its caller flushes it. The returned gauge counts the bytes purged, or
   (whole: chunks that were not committed among them) the chunks that
   were committed: the rest held no memory nodal counted. */
static nd_hot void nd_seg_purge_runs(nd_segment *s, uint64_t chunks, bool whole, nd_os_purges *batch)
{
    nd_seg_purge_drop(s, chunks);
    while (chunks) {
        unsigned a, b;
        nd_mask_first_run(chunks, &a, &b);
        uint8_t *start = (uint8_t *)s + (a == 0 ? ND_SEG_HEADER_SIZE : (size_t)a << ND_CHUNK_SHIFT);
        uint8_t *end = (uint8_t *)s + ((size_t)(b + 1) << ND_CHUNK_SHIFT);
        uint64_t run = nd_mask_range(a, b) & ~(uint64_t)1;
        size_t was = (size_t)nd_popcount64(run & s->committed) << ND_CHUNK_SHIFT;
        nd_os_purges_add(batch, start, (size_t)(end - start));
        nd_gauge_add(returned, whole ? was : (size_t)(end - start));
        nd_gauge_sub(committed, was);   /* committed counts whole chunks */
        s->committed &= ~run;
        chunks &= ~nd_mask_range(a, b);
    }
}

/* A segment's runs (32 at most) go to the kernel in one call (os.h). */
nd_hot void nd_seg_purge(nd_segment *s, uint64_t mask)
{
    nd_os_purges batch;
    nd_os_purges_init(&batch);
    nd_seg_purge_runs(s, mask & s->committed, false, &batch);
    nd_os_purges_flush(&batch);
}

nd_hot void nd_seg_purge_into(nd_segment *s, uint64_t mask, nd_os_purges *b)
{
    nd_seg_purge_runs(s, mask & s->committed, false, b);
}

/* The chunks of s's free pages (all: of the whole segment). */
static uint64_t nd_seg_free_chunks(nd_segment *s, bool all)
{
    uint64_t chunks = 0;
    if (all)
        chunks = nd_mask_range(0, (unsigned)((s->size >> ND_CHUNK_SHIFT) - 1));
    for (uint64_t m = all ? 0 : s->free_mask; m != 0; m &= m - 1) {
        size_t area;
        uint8_t *start = nd_seg_page_area(s, (unsigned)__builtin_ctzll(m), &area);
        chunks |= nd_seg_chunks(s, start, area);
    }
    return chunks & ~(s->unmapped | s->tails);   /* not mapped (segment.h): nothing to purge */
}

void nd_seg_purge_free(nd_segment *s, bool all)
{
    nd_os_purges batch;
    nd_os_purges_init(&batch);
    nd_seg_purge_runs(s, nd_seg_free_chunks(s, all), true, &batch);
    nd_os_purges_flush(&batch);
}

void nd_seg_purge_free_into(nd_segment *s, bool all, nd_os_purges *b)
{
    nd_seg_purge_runs(s, nd_seg_free_chunks(s, all), true, b);
}

void nd_seg_purge_elsewhere(nd_segment *s, bool all)
{
    uint64_t mask = nd_seg_free_chunks(s, all);
    if (mask == 0)
        return;
    /* Two OS pages per chunk, its first (after the header in chunk 0) and
       its last: a huge page spans whole chunks. */
    void *pages[2 * ND_SEG_CHUNKS];
    int status[2 * ND_SEG_CHUNKS];
    size_t ps = nd_os_page_size(), n = 0;
    for (uint64_t m = mask; m != 0; m &= m - 1) {
        uint8_t *c = (uint8_t *)s + ((size_t)__builtin_ctzll(m) << ND_CHUNK_SHIFT);
        pages[n++] = c == (uint8_t *)s ? c + ND_SEG_HEADER_SIZE : c;
        pages[n++] = c + ND_CHUNK_SIZE - ps;
    }
    if (nd_os_pages_nodes(pages, status, n) != 0)
        return;
    uint64_t moved = 0;
    size_t j = 0;
    for (uint64_t m = mask; m != 0; m &= m - 1, j += 2)   /* not resident: a negative status */
        if ((status[j] >= 0 && status[j] != s->node) || (status[j + 1] >= 0 && status[j + 1] != s->node))
            moved |= m & -m;
    if (moved != 0) {
        nd_os_purges batch;
        nd_os_purges_init(&batch);
        nd_seg_purge_runs(s, moved, true, &batch);
        nd_os_purges_flush(&batch);
    }
}

/* A new mapping [p, p+size) for node-bound memory: bound to node (before
   anything touches it), transparent huge pages asked for if the option
   says so, and its first `commit` bytes committed. 0, or -1 with errno. */
static int nd_seg_place_new(void *p, size_t size, int node, size_t commit)
{
    if (nd_seg_bind_node(p, size, node) != 0)
        return -1;
    if (nd_opt(ND_OPT_huge_pages))
        nd_os_advise_hugepage(p, size);
    return nd_seg_commit_bound(p, commit, node);
}

nd_hot int nd_seg_adopt_mapping(nd_segment *s, size_t size, int node, bool bound, const uint64_t *interleave, size_t commit)
{
    unsigned over = bound && interleave == NULL ? nd_tier_over_cap(node, size) : 0;
    if (over != 0) {
        nd_os_unmap(s, size);   /* a capped tier's memory (tier_*_max): as if the node were full */
        nd_gauge_add(tier_cap_refusals, 1);
        int from = nd_topo_current_node();   /* the node the refused thread runs on */
        for (int t = 0; t < ND_TIER_COUNT; t++)
            if (over & (1u << t))
                nd_add_relaxed(&nd_gauge.cap_refusals[t][from], 1);
        errno = ENOMEM;
        return -1;
    }
    if (interleave != NULL) {
        nd_os_bind(s, size, ND_MPOL_INTERLEAVE, interleave);
    } else if (bound && nd_seg_place_new(s, size, node, commit) != 0) {
        int err = errno;
        nd_segmap_huge(s, size, 0);
        nd_os_unmap(s, size);
        errno = err;
        return -1;
    }
    if (nd_seg_guard != 0 && nd_os_protect((uint8_t *)s + size - nd_seg_guard, nd_seg_guard, false) != 0) {
        nd_segmap_huge(s, size, 0);
        nd_os_unmap(s, size);   /* out of mappings (vm.max_map_count) */
        errno = ENOMEM;
        return -1;
    }
    s->cookie = (uintptr_t)s ^ nd_seg_secret;
    s->node = (int16_t)node;
    s->bound = bound;
    s->interleaved = interleave != NULL;
    s->size = size;
    nd_seg_gauge_mapped(s, (long)size);
    nd_gauge_add(segments, 1);
    return 0;
}

nd_hot void nd_seg_thp_opt_out(void *p, size_t size)
{
    if (!nd_opt(ND_OPT_huge_pages) && nd_os_thp_always())
        (void)nd_os_advise_nohugepage(p, size);   /* refused (no THP in this kernel): nothing to opt out of */
}

nd_hot nd_segment *nd_seg_map(int node, bool bound, size_t size)
{
    nd_assert(size >= ND_CHUNK_SIZE && size <= ND_SEG_SIZE && (size & (ND_CHUNK_SIZE - 1)) == 0);
    nd_segment *s = nd_seg_reserve(size, ND_SEG_SIZE);
    if (s == NULL)
        return NULL;
    nd_seg_thp_opt_out(s, size);   /* before anything touches it */
    if (nd_seg_adopt_mapping(s, size, node, bound, NULL, ND_CHUNK_SIZE) != 0)
        return NULL;
    nd_segcache_claim(s, ND_SEG_FREE);
    s->kind = ND_SEG_FREE;
    s->formatted = 0;
    s->committed = 1;
    nd_gauge_add(committed, ND_CHUNK_SIZE);
    return s;
}

/* Bytes of s's tails (segment.h). */
static size_t nd_seg_tail_bytes(const nd_segment *s)
{
    size_t bytes = 0;
    for (uint64_t m = s->tails; m != 0; m &= m - 1)
        bytes += ND_CHUNK_SIZE - s->tail_from[__builtin_ctzll(m)];
    return bytes;
}

size_t nd_seg_mapped_bytes(const nd_segment *s)
{
    return s->size - ((size_t)nd_popcount64(s->unmapped) << ND_CHUNK_SHIFT) - nd_seg_tail_bytes(s);
}

/* Unmaps s (its size bytes) but its holes and tails, which may hold
   another mapping by now: a whole mapped run at a time, then the mapped
   start of each chunk with a tail, all read first (the header goes with
   the first run, or with chunk 0's start). */
static void nd_seg_unmap_mapped(nd_segment *s)
{
    uint64_t holes = s->unmapped, tails = s->tails;
    size_t size = s->size;
    if ((holes | tails) == 0) {
        nd_os_unmap(s, size);
        return;
    }
    uint16_t from[ND_SEG_CHUNKS];
    memcpy(from, s->tail_from, sizeof from);
    uint64_t mapped = ~(holes | tails) & nd_mask_range(0, (unsigned)(size >> ND_CHUNK_SHIFT) - 1u);
    uint8_t *base = (uint8_t *)s;
    while (mapped != 0) {
        unsigned a, b;
        nd_mask_first_run(mapped, &a, &b);
        mapped &= ~nd_mask_range(a, b);
        nd_os_unmap(base + ((size_t)a << ND_CHUNK_SHIFT), (size_t)(b - a + 1) << ND_CHUNK_SHIFT);
    }
    for (; tails != 0; tails &= tails - 1) {
        unsigned c = (unsigned)__builtin_ctzll(tails);
        nd_os_unmap(base + ((size_t)c << ND_CHUNK_SHIFT), from[c]);
    }
}

void nd_seg_unmap(nd_segment *s)
{
    size_t tail = nd_seg_tail_bytes(s);   /* tails are of committed chunks, already subtracted */
    size_t committed = ((size_t)nd_popcount64(s->committed) << ND_CHUNK_SHIFT) - tail;
    size_t mapped = nd_seg_mapped_bytes(s), size = s->size;
    nd_segcache_release(s);
    nd_segmap_huge(s, size, 0);
    s->cookie = 0;
    nd_gauge_sub(committed, committed);
    nd_gauge_add(returned, committed);
    nd_seg_gauge_mapped(s, -(long)mapped);
    nd_gauge_sub(segments, 1);
    nd_seg_unmap_mapped(s);
}

/* Unmaps chunks `chunks` of s (none the header's, nor in a block): they
   become holes, their committed bytes returned, their guard bits cleared,
   their purge dropped. The bytes unmapped. */
/* Chunks a..b of s are holes now (unmapped, or moved away: `returned`
   counts what an unmapping gave back): their bits and gauges. */
static void nd_seg_run_gone(nd_segment *s, unsigned a, unsigned b, bool returned)
{
    size_t ps = nd_os_page_size();
    uint64_t run = nd_mask_range(a, b);
    size_t committed = (size_t)nd_popcount64(s->committed & run) << ND_CHUNK_SHIFT;
    nd_gauge_sub(committed, committed);
    if (returned)
        nd_gauge_add(returned, committed);
    s->committed &= ~run;
    nd_seg_purge_drop(s, run);
    nd_store_relaxed(&nd_seg_holes_made, 1);
    nd_store_relaxed(&s->unmapped, s->unmapped | run);   /* read unlocked: nd_seg_maps */
    nd_seg_mark_guards(s, (size_t)a * (ND_CHUNK_SIZE / ps), (size_t)(b + 1) * (ND_CHUNK_SIZE / ps), false);
    nd_seg_gauge_mapped(s, -(long)((size_t)(b - a + 1) << ND_CHUNK_SHIFT));
}

static size_t nd_seg_unmap_runs(nd_segment *s, uint64_t chunks)
{
    size_t bytes = 0;
    uint64_t m = chunks;
    while (m != 0) {
        unsigned a, b;
        nd_mask_first_run(m, &a, &b);
        m &= ~nd_mask_range(a, b);
        uint8_t *start = (uint8_t *)s + ((size_t)a << ND_CHUNK_SHIFT);
        size_t len = (size_t)(b - a + 1) << ND_CHUNK_SHIFT;
        nd_seg_run_gone(s, a, b, true);
        nd_os_unmap(start, len);
        bytes += len;
    }
    return bytes;
}

bool nd_seg_move_run(nd_segment *s, unsigned a, unsigned b, void *to)
{
    nd_assert(s->kind == ND_SEG_LARGE && a > 0 && a <= b && b < 64 && ((s->unmapped | s->tails) & nd_mask_range(a, b)) == 0);
    uint8_t *start = (uint8_t *)s + ((size_t)a << ND_CHUNK_SHIFT);
    size_t len = (size_t)(b - a + 1) << ND_CHUNK_SHIFT;
    if (nd_os_remap_to(start, len, len, to) == NULL)
        return false;
    nd_seg_run_gone(s, a, b, false);
    return true;
}

size_t nd_seg_unmap_chunks(nd_segment *s, uint64_t chunks)
{
    nd_assert(s->kind == ND_SEG_LARGE && (chunks & 1) == 0 && (s->free_mask & chunks) == chunks);
    s->free_mask &= ~chunks;
    return nd_seg_unmap_runs(s, chunks);
}

/* Maps holes `chunks` of s again, where they were, one run at a time (as
   nd_seg_remap_chunks): the chunks mapped. */
static uint64_t nd_seg_remap_runs(nd_segment *s, uint64_t chunks)
{
    uint64_t done = 0, m = chunks;
    size_t ps = nd_os_page_size();
    while (m != 0) {
        unsigned a, b;
        nd_mask_first_run(m, &a, &b);
        m &= ~nd_mask_range(a, b);
        uint8_t *start = (uint8_t *)s + ((size_t)a << ND_CHUNK_SHIFT);
        size_t len = (size_t)(b - a + 1) << ND_CHUNK_SHIFT;
        if (nd_os_map_at((uintptr_t)start, len) == NULL)
            continue;
        nd_seg_thp_opt_out(start, len);   /* a new mapping: the segment's advice is gone there */
        bool last = (size_t)(b + 1) << ND_CHUNK_SHIFT == s->size;
        if ((s->bound && nd_seg_bind_node(start, len, s->node) != 0) ||
            (last && nd_seg_guard != 0 && nd_os_protect(start + len - nd_seg_guard, nd_seg_guard, false) != 0)) {
            nd_os_unmap(start, len);
            continue;
        }
        if (nd_opt(ND_OPT_huge_pages))
            nd_os_advise_hugepage(start, len);
        if (last && nd_seg_guard != 0) {
            size_t g = s->size / ps - 1;
            nd_seg_mark_guards(s, g, g + 1, true);
        }
        uint64_t run = nd_mask_range(a, b);
        nd_store_relaxed(&s->unmapped, s->unmapped & ~run);   /* read unlocked: nd_seg_maps */
        nd_seg_gauge_mapped(s, (long)len);
        done |= run;
    }
    return done;
}

uint64_t nd_seg_remap_chunks(nd_segment *s, uint64_t chunks)
{
    nd_assert(s->kind == ND_SEG_LARGE && (s->unmapped & chunks) == chunks);
    uint64_t done = nd_seg_remap_runs(s, chunks);
    s->free_mask |= done;
    return done;
}

void nd_seg_mark_guards(nd_segment *s, size_t a, size_t b, bool guarded)
{
    for (size_t i = a; i < b; i++) {
        uint64_t bit = (uint64_t)1 << (i % 64);
        s->guards[i / 64] = guarded ? s->guards[i / 64] | bit : s->guards[i / 64] & ~bit;
    }
    size_t per = ND_CHUNK_SIZE / nd_os_page_size();
    for (size_t c = a / per; c * per < b && c < 64; c++) {
        uint64_t bit = (uint64_t)1 << c;
        s->guard_ends = nd_seg_guarded(s, (c + 1) * per - 1) ? s->guard_ends | bit : s->guard_ends & ~bit;
    }
}

size_t nd_seg_unmap_tail(nd_segment *s, unsigned c, size_t from)
{
    size_t ps = nd_os_page_size(), per = ND_CHUNK_SIZE / ps;
    nd_assert(s->kind != ND_SEG_HUGE && s->kind != ND_SEG_FREE && c < 64 && from > 0 && from < ND_CHUNK_SIZE &&
              from % ps == 0 && ((s->tails | s->unmapped | (s->kind == ND_SEG_LARGE ? s->free_mask : 0)) >> c & 1) == 0 &&
              (s->committed >> c & 1) == 1);
    uint8_t *start = (uint8_t *)s + ((size_t)c << ND_CHUNK_SHIFT) + from;
    size_t len = ND_CHUNK_SIZE - from;
    nd_seg_mark_guards(s, c * per + from / ps, (c + 1) * per, false);
    /* tail_from before the bit: nd_seg_maps reads them unlocked. */
    nd_store_relaxed(&s->tail_from[c], (uint16_t)from);
    nd_store_release(&s->tails, s->tails | (uint64_t)1 << c);
    nd_gauge_sub(committed, len);
    nd_gauge_add(returned, len);
    nd_seg_gauge_mapped(s, -(long)len);
    nd_os_unmap(start, len);
    return len;
}

bool nd_seg_remap_tail(nd_segment *s, unsigned c)
{
    nd_assert(c < 64 && (s->tails >> c & 1) == 1);
    size_t from = s->tail_from[c], len = ND_CHUNK_SIZE - from;
    uint8_t *start = (uint8_t *)s + ((size_t)c << ND_CHUNK_SHIFT) + from;
    if (nd_os_map_at((uintptr_t)start, len) == NULL)
        return false;
    bool last = (size_t)(c + 1) << ND_CHUNK_SHIFT == s->size;
    if ((s->bound && nd_seg_bind_node(start, len, s->node) != 0) ||
        (last && nd_seg_guard != 0 && nd_os_protect(start + len - nd_seg_guard, nd_seg_guard, false) != 0)) {
        nd_os_unmap(start, len);
        errno = ENOMEM;
        return false;
    }
    if (last && nd_seg_guard != 0) {
        size_t g = s->size / nd_os_page_size() - 1;
        nd_seg_mark_guards(s, g, g + 1, true);
    }
    nd_store_relaxed(&s->tails, s->tails & ~((uint64_t)1 << c));
    nd_gauge_add(committed, len);
    nd_seg_gauge_mapped(s, (long)len);
    return true;
}

void nd_seg_tail_to_hole(nd_segment *s, unsigned c)
{
    size_t ps = nd_os_page_size(), per = ND_CHUNK_SIZE / ps;
    nd_assert(c >= 1 && c < 64 && (s->tails >> c & 1) == 1);
    size_t from = s->tail_from[c];
    uint64_t bit = (uint64_t)1 << c;
    nd_seg_mark_guards(s, c * per, (c + 1) * per, false);
    s->committed &= ~bit;
    nd_seg_purge_drop(s, bit);
    if (s->kind == ND_SEG_LARGE)   /* a bit per chunk there; a small or medium segment's are pages */
        s->free_mask &= ~bit;
    /* A hole first, then no tail: nd_seg_maps says "not mapped" throughout. */
    nd_store_relaxed(&nd_seg_holes_made, 1);
    nd_store_relaxed(&s->unmapped, s->unmapped | bit);
    nd_store_relaxed(&s->tails, s->tails & ~bit);
    nd_gauge_sub(committed, from);
    nd_gauge_add(returned, from);
    nd_seg_gauge_mapped(s, -(long)from);
    nd_os_unmap((uint8_t *)s + ((size_t)c << ND_CHUNK_SHIFT), from);
}

/* The chunks of page i of a SMALL or MEDIUM segment s (page 0's chunk 0,
   the header's, included). */
static uint64_t nd_seg_page_chunks(nd_segment *s, unsigned i)
{
    size_t area;
    uint8_t *start = nd_seg_page_area(s, i, &area);
    return nd_seg_chunks(s, start, area);
}

/* The end of page i's blocks (offset in s): past the most blocks of its
   class it can hold, rounded up to the OS page; its area's start when the
   page is free. */
static size_t nd_seg_page_used_end(nd_segment *s, unsigned i)
{
    size_t area, ps = nd_os_page_size();
    uint8_t *start = nd_seg_page_area(s, i, &area);
    const nd_page *pg = &s->pages[i];
    size_t off = (size_t)(start - (uint8_t *)s);
    if (((s->free_mask >> i) & 1) == 0)
        off += (size_t)pg->reserved * pg->block_size;
    return (off + ps - 1) & ~(ps - 1);
}

size_t nd_seg_release_pages(nd_segment *s)
{
    nd_assert(s->kind == ND_SEG_SMALL || s->kind == ND_SEG_MEDIUM);
    size_t freed = 0;
    uint64_t gone = 0;
    for (unsigned i = 0; i < s->page_count; i++) {
        bool in_use = ((s->free_mask >> i) & 1) == 0;
        size_t used = nd_seg_page_used_end(s, i);
        size_t c0 = (used + ND_CHUNK_SIZE - 1) >> ND_CHUNK_SHIFT;   /* the first whole chunk past the blocks */
        size_t c1 = ((size_t)i + 1) << (s->page_shift - ND_CHUNK_SHIFT);   /* the page's end */
        /* The guard page's chunk stays while its page is in use: unmapped,
           another mapping could take its place, which an overflow would
           then reach unseen (hardening.md). */
        if (in_use && i + 1u == s->page_count && nd_seg_guard != 0)
            c1--;
        if (c0 == 0)
            c0 = 1;   /* never the header's */
        if (c0 < c1)
            gone |= nd_mask_range((unsigned)c0, (unsigned)c1 - 1u) & ~s->unmapped;
        /* The rest of the chunk the blocks end in: a tail (not in a
           node-bound segment, whose tails would come back unverified). */
        size_t c = used >> ND_CHUNK_SHIFT, from = used & (ND_CHUNK_SIZE - 1);
        if (in_use && !s->bound && from != 0 && c != 0 && c < c1 && ((s->tails | s->unmapped) >> c & 1) == 0 &&
            (s->committed >> c & 1) == 1)
            freed += nd_seg_unmap_tail(s, (unsigned)c, from);
    }
    return freed + nd_seg_unmap_runs(s, gone);
}

bool nd_seg_page_remap(nd_segment *s, unsigned i)
{
    nd_assert((s->free_mask >> i) & 1);
    uint64_t holes = nd_seg_page_chunks(s, i) & s->unmapped;
    return holes == 0 || nd_seg_remap_runs(s, holes) == holes;
}

void nd_seg_page_untail(nd_segment *s, unsigned i)
{
    for (uint64_t m = nd_seg_page_chunks(s, i) & s->tails; m != 0; m &= m - 1)
        nd_seg_tail_to_hole(s, (unsigned)__builtin_ctzll(m));
}

nd_hot void nd_seg_set_geometry(nd_segment *s, unsigned page_shift, unsigned page_count)
{
    s->page_shift = (uint8_t)page_shift;
    s->page_count = (uint16_t)page_count;
    s->desc_shift = (uint8_t)(page_shift - ND_PAGE_DESC_SHIFT);
    s->desc_mask = (uint16_t)((page_count - 1) << ND_PAGE_DESC_SHIFT);
}

nd_hot void nd_seg_unmap_huge(nd_segment *s)
{
    size_t total = s->size;
    nd_segmap_huge(s, total, 0);
    s->cookie = 0;
    nd_seg_gauge_mapped(s, -(long)total);
    nd_gauge_sub(committed, total);
    nd_gauge_add(returned, total);
    nd_gauge_sub(segments, 1);
    nd_os_unmap(s, total);
}

void nd_seg_to_huge(nd_segment *s, size_t offset)
{
    nd_assert(s->kind == ND_SEG_LARGE && s->size == ND_SEG_SIZE && (s->unmapped | s->tails) == 0 && nd_seg_guard == 0 &&
              !s->bound && !s->interleaved && (offset & (ND_CHUNK_SIZE - 1)) == 0 && offset >= ND_CHUNK_SIZE &&
              offset < ND_SEG_SIZE);
    /* The chunks before the block stay as they are (resident or not): a
       purge here was a system call at every such growth, and the next
       blocks of the segment, once it is one again, fault them back in
       (bench/micro -m realloc -g 2m: 10 % of its time in madvise). The
       block holds them for its life, at most 4 MiB less itself. */
    nd_segcache_release(s);   /* its free takes the path of a huge block */
    /* A huge mapping counts committed whole; its committed mask keeps the
       chunks that may hold memory (segment.h), these and the block's
       (nd_huge_setup), for the large pool's taking it back (node.c). */
    nd_gauge_add(committed, s->size - ((size_t)nd_popcount64(s->committed) << ND_CHUNK_SHIFT));
    s->purge_mask = 0;
    s->purge_young = 0;
    s->free_mask = 0;
    s->owner = NULL;
    s->abandoned = 0;
    s->fresh = 0;
    s->seams[0] = s->seams[1] = 0;
    memset(s->guards, 0, sizeof s->guards);
    s->guard_ends = 0;
    /* Its large blocks' descriptors: none may say "a block" any more (a
       huge block's is pages[0]). */
    memset(s->pages, 0, sizeof(nd_page) * (ND_SEG_SIZE >> ND_CHUNK_SHIFT));
}

nd_segment *nd_seg_split_huge(nd_segment *s, size_t at)
{
    nd_assert(at % ND_SEG_SIZE == 0 && at > 0 && at < s->size && (s->seams[0] | s->seams[1]) == 0 &&
              nd_seg_guard == 0 && !s->interleaved);
    nd_segment *t = (nd_segment *)((uint8_t *)s + at);
    size_t rest = s->size - at;
    memset(t, 0, __builtin_offsetof(nd_segment, pages) + sizeof(nd_page));
    t->cookie = (uintptr_t)t ^ nd_seg_secret;
    t->kind = ND_SEG_FREE;
    t->node = s->node;
    t->bound = s->bound;
    t->size = rest;
    t->committed = ~(uint64_t)0;
    t->used_pages = 1;
    s->size = at;
    /* s's windows past `at` cleared, then t's pointing at t: a pointer
       into either finds its own header. (Both ranges are covered by
       leaves already: no failure.) */
    nd_segmap_huge(s, at + rest, at);
    nd_segmap_huge(t, 0, rest);
    nd_gauge_add(segments, 1);
    return t;
}

void nd_seg_join_huge(nd_segment *s, nd_segment *t)
{
    nd_assert((uint8_t *)t == (uint8_t *)s + s->size && s->size % ND_SEG_SIZE == 0 && t->node == s->node &&
              t->bound == s->bound && !t->interleaved && (t->seams[0] | t->seams[1]) == 0);
    size_t old = s->size;
    nd_segmap_huge(s, old, old + t->size);   /* over t's windows: its leaves are there */
    s->size = old + t->size;
    t->cookie = 0;
    nd_gauge_sub(segments, 1);
}

nd_hot void nd_seg_format(nd_segment *s, int kind)
{
    nd_assert(kind == ND_SEG_SMALL || kind == ND_SEG_MEDIUM || kind == ND_SEG_LARGE);
    nd_assert(s->unmapped == 0 && s->tails == 0);   /* a segment with holes or tails is never formatted again (segment.h) */
    s->kind = (uint8_t)kind;
    /* LARGE: the descriptors are per 64 KiB chunk; a block takes a run. */
    unsigned shift = kind == ND_SEG_SMALL ? ND_SMALL_PAGE_SHIFT
                   : kind == ND_SEG_MEDIUM ? ND_MEDIUM_PAGE_SHIFT : ND_CHUNK_SHIFT;
    /* The descriptor lookup is a whole segment's; a short one (s->size <
       4 MiB) has the pages that fit in its mapping. */
    nd_seg_set_geometry(s, shift, (unsigned)(ND_SEG_SIZE >> shift));
    unsigned lookup = s->page_count;
    s->page_count = (uint16_t)(s->size >> shift);
    nd_assert(s->page_count >= 1 && ((size_t)s->page_count << shift) == s->size);
    s->used_pages = 0;
    s->free_mask = nd_mask_range(0, s->page_count - 1u);
    s->owner = NULL;
    s->abandoned = 0;
    s->next = s->prev = NULL;
    memset(s->guards, 0, sizeof s->guards);
    s->guard_ends = 0;
    if (nd_seg_guard != 0) {   /* the last page, that of the last chunk (nd_seg_mark_guards' bits) */
        size_t last = s->size / nd_os_page_size() - 1;
        s->guards[last / 64] |= (uint64_t)1 << (last % 64);
        s->guard_ends = (uint64_t)1 << ((s->size >> ND_CHUNK_SHIFT) - 1);
    }
    /* Every descriptor the lookup can reach (a short segment's beyond its
       pages too: a foreign pointer past its mapping finds one in no use).
       A fresh segment's are all zero, as a descriptor never used is
       (segment.h): none is written, and the OS pages of those it never
       uses stay unwritten (8 KiB of its 12 KiB of header on a segment of
       a few pages). A segment formatted before (taken back from a node's
       cache) has its old pages' descriptors: all are written. */
    if (s->formatted) {
        /* Only those set up since the last format (desc_dirty). */
        uint64_t reach = lookup >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << lookup) - 1;
        nd_assert2(nd_seg_descs_clean(s, ~s->desc_dirty & reach));
        for (uint64_t m = s->desc_dirty & reach; m != 0; m &= m - 1) {
            nd_page *pg = &s->pages[__builtin_ctzll(m)];
            memset(pg, 0, sizeof *pg);
            pg->key = ND_KEY_NONE;
            pg->recarved = 1;   /* freed memory: carved in address order (page.h) */
        }
        s->desc_dirty &= ~reach;
    } else {
        s->desc_dirty = ~(uint64_t)0;   /* all zero, key 0 and recarved 0: set up at the next format */
    }
    s->formatted = 1;
    /* The slot's word says the kind, for the free fast path's lookup
       (segment.h); its slot taken when it was mapped, one free now is. */
    nd_segcache_claim(s, kind);
}

bool nd_seg_descs_clean(const nd_segment *s, uint64_t which)
{
    nd_page clean;
    memset(&clean, 0, sizeof clean);
    clean.key = ND_KEY_NONE;
    clean.recarved = 1;
    for (uint64_t m = which; m != 0; m &= m - 1)
        if (memcmp(&s->pages[__builtin_ctzll(m)], &clean, sizeof clean) != 0)
            return false;
    return true;
}

bool nd_seg_is_valid(const nd_segment *s)
{
    if (!nd_seg_cookie_ok(s) || nd_seg_of(s) != s)
        return false;
    /* Its nd_segcache word, where it holds its slot, says its kind (a free
       one's, the kind it had: it gets its next one when formatted). */
    uintptr_t key = nd_segcache_key((uintptr_t)s);
    uint64_t word = nd_load_relaxed(&nd_segcache[key & (ND_SEGCACHE_SLOTS - 1)]);
    if ((word & ~ND_SEGCACHE_MEDIUM) == key && s->kind != ND_SEG_FREE && word != nd_segcache_word(key, s->kind))
        return false;
    if (s->bound && (s->node < 0 || s->node >= ND_MAX_NODES))
        return false;
    if ((s->purge_mask & ~s->committed) != 0 || (s->committed & 1) == 0 || (s->purge_young & ~s->purge_mask) != 0)
        return false;
    if (s->kind == ND_SEG_HUGE) {   /* committed: all chunks but in one made of a segment; the block's */
        size_t offset = (size_t)(s->pages[0].start - (const uint8_t *)s);
        uint64_t block = offset < ND_SEG_SIZE ? nd_mask_range((unsigned)(offset >> ND_CHUNK_SHIFT), 63) : 0;
        if ((!s->formatted && s->committed != ~(uint64_t)0) || (s->committed & block) != block)
            return false;
    }
    bool gaps_allowed = s->kind == ND_SEG_LARGE || s->kind == ND_SEG_SMALL || s->kind == ND_SEG_MEDIUM;
    uint64_t free_chunks = s->kind == ND_SEG_LARGE ? s->free_mask : 0;   /* a small or medium segment's bits are pages */
    if (s->unmapped != 0 && (!gaps_allowed || (s->unmapped & (s->committed | free_chunks | 1)) != 0))
        return false;
    if (s->tails != 0) {   /* of committed chunks neither free nor holes; no guard bits */
        if (!gaps_allowed || (s->tails & (s->unmapped | free_chunks | ~s->committed)) != 0)
            return false;
        size_t ps = nd_os_page_size(), per = ND_CHUNK_SIZE / ps;
        for (uint64_t m = s->tails; m != 0; m &= m - 1) {
            size_t c = (size_t)__builtin_ctzll(m), from = s->tail_from[c];
            if (from == 0 || from >= ND_CHUNK_SIZE || from % ps != 0)
                return false;
            for (size_t i = c * per + from / ps; i < (c + 1) * per; i++)
                if (nd_seg_guarded(s, i))
                    return false;
        }
    }
    if ((s->seams[0] | s->seams[1]) != 0) {   /* a huge mapping's, past its header */
        size_t ps = nd_os_page_size();
        if ((s->kind != ND_SEG_HUGE && s->kind != ND_SEG_FREE) || s->seams[0] == 0 ||
            (size_t)s->seams[0] * ps >= s->size || (s->seams[1] != 0 && s->seams[1] <= s->seams[0]) ||
            (size_t)s->seams[1] * ps >= s->size)
            return false;
    }
    if (s->kind == ND_SEG_HUGE || s->kind == ND_SEG_FREE)
        return true;
    if (s->kind != ND_SEG_SMALL && s->kind != ND_SEG_MEDIUM && s->kind != ND_SEG_LARGE)
        return false;
    if (s->page_count == 0 || s->page_count > ND_SEG_MAX_PAGES ||
        (s->free_mask & ~nd_mask_range(0, s->page_count - 1u)) != 0)
        return false;
    /* A short segment: its pages fill its mapping. */
    if (s->size > ND_SEG_SIZE || ((size_t)s->page_count << s->page_shift) != s->size)
        return false;
    size_t last = s->size / nd_os_page_size() - 1;
    bool last_hole = ((s->unmapped | s->tails) >> ((s->size >> ND_CHUNK_SHIFT) - 1u)) & 1;   /* no page there to guard */
    if (nd_seg_guarded(s, last) != (nd_seg_guard != 0 && !last_hole))
        return false;
    size_t per = ND_CHUNK_SIZE / nd_os_page_size();
    for (unsigned c = 0; c < 64; c++)   /* guard_ends: the guards bit of each chunk's last page */
        if (((s->guard_ends >> c) & 1) != nd_seg_guarded(s, (c + 1) * per - 1))
            return false;
    for (uint64_t m = s->unmapped; m != 0; m &= m - 1) {   /* a hole has no guard bits */
        size_t c = (size_t)__builtin_ctzll(m);
        for (size_t i = c * per; i < (c + 1) * per; i++)
            if (nd_seg_guarded(s, i))
                return false;
    }
    uint32_t in_use = 0;
    const uint8_t *guard = (const uint8_t *)s + s->size - nd_seg_guard;
    for (unsigned i = 0; i < s->page_count; i++) {
        const nd_page *pg = &s->pages[i];
        bool is_free = (s->free_mask >> i) & 1;
        /* No block reaches the guard page (a large block: its usable bytes,
           which a CPU's cache of kept blocks rewrites without the pool's
           lock when it hands the block out again: large.c, relaxed). */
        if (nd_load_relaxed(&pg->in_use) &&
            pg->start + (s->kind == ND_SEG_LARGE ? nd_load_relaxed(&pg->block_size)
                                                 : (size_t)pg->reserved * pg->block_size) > guard)
            return false;
        if (s->kind == ND_SEG_LARGE) {   /* a block covers a run; its first chunk's descriptor is in use */
            if (is_free && nd_load_relaxed(&pg->in_use))
                return false;
            in_use += nd_load_relaxed(&pg->in_use) != 0;
            continue;
        }
        if (is_free == (nd_load_relaxed(&pg->in_use) != 0))
            return false;
        /* Holes and tails (an address-space limit): a free page's whole
           chunks, or an in-use page's past its blocks; no tail on a free
           page. */
        uint64_t gaps = nd_seg_page_chunks((nd_segment *)s, i) & (s->unmapped | s->tails);
        if (is_free && (gaps & s->tails) != 0)
            return false;
        for (uint64_t m = is_free ? 0 : gaps; m != 0; m &= m - 1) {
            size_t c = (size_t)__builtin_ctzll(m);
            size_t off = (c << ND_CHUNK_SHIFT) + ((s->tails >> c & 1) ? s->tail_from[c] : 0);
            if (off < (size_t)(pg->start - (const uint8_t *)s) + (size_t)pg->reserved * pg->block_size)
                return false;
        }
        in_use += !is_free;
    }
    if (in_use != s->used_pages)
        return false;
    /* Owned (or cached) or abandoned, never both. */
    return !(s->abandoned && s->owner != NULL);
}
