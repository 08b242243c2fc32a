/*
 * slab.c - the heap profile's sample slabs (prof=1; see slab.h): the
 * cell slab of each node and kind of memory, for small samples; cutting,
 * finding and freeing its cells, and its debug check.
 */
#include "slab.h"

#include "large.h"
#include "lock.h"
#include "os.h"
#include "page.h"
#include "tcache.h"

static nd_page *nd_slab_page(const nd_slab *slab)
{
    return nd_page_of(nd_seg_base(slab), slab);
}

/* The header of the slab of descriptor pg (sampled == ND_PROF_SLAB): the
   block itself. */
static nd_slab *nd_slab_of(const nd_page *pg)
{
    return (nd_slab *)pg->start;
}

/* A slab's memory is the profile's overhead (prof_slab_bytes), not a
   large block of the program's: its cells count as blocks of their
   classes (route.c, free.c). */
size_t nd_slab_unref(nd_segment *s, nd_page *pg)
{
    nd_slab *slab = nd_slab_of(pg);
    if (__atomic_sub_fetch(&slab->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return 0;
    nd_store_relaxed(&pg->sampled, 0);   /* a large block of one OS page again */
    size_t bytes = nd_large_free(s, pg, slab);
    nd_gauge_sub(prof_slab_bytes, bytes);
    return bytes;
}

/* prof=1: the cell slab of each node and kind of memory (2 * node +
   bound: plain 0, bound 1), which the samples of every thread whose cache
   is of that kind take cells of (slab.h), or NULL; under its lock
   (lock.h: prof_slab). In nodal's .data, whose one OS page every process
   has resident (as the unwinder's variables, unwind.c), not on a page of
   .bss of its own. */
static nd_slab *nd_slab_shared[2 * ND_MAX_NODES] __attribute__((section(".data.nodal_slab"), aligned(64)));

static unsigned nd_slab_key(const nd_tcache *tc) { return 2u * (unsigned)tc->heap.node + (tc->heap.bound != 0); }

nd_slab *nd_slab_current(int node, bool bound)
{
    return nd_load_acquire(&nd_slab_shared[2u * (unsigned)node + bound]);
}

/* A new cell slab of tc's kind of memory, one OS page (the reference of
   its node's and kind's pointer taken), or NULL. */
static nd_slab *nd_slab_new(nd_tcache *tc)
{
    size_t bytes;
    nd_slab *slab = nd_large_alloc(tc->heap.node, tc->heap.bound, nd_os_page_size(), 0, &bytes);
    if (slab == NULL)
        return NULL;
    nd_gauge_add(prof_slab_bytes, bytes);
    slab->refs = 1;
    slab->top = ND_SLAB_HEADER;
    slab->ncells = 0;
    slab->bytes = (uint32_t)(bytes < 65536 ? bytes : 65536);   /* a cell's off is 16 bits */
    nd_page *pg = nd_slab_page(slab);
    pg->prof_slot = ND_SLAB_NO_SLOT;   /* the header is the block's start */
    nd_store_release(&pg->sampled, ND_PROF_SLAB);
    return slab;
}

/* A freed cell of slab (under its lock) that a cell of `size` bytes
   aligned to `align` fits: the one of the smallest class; NULL if none. */
static nd_slab_cell *nd_slab_dead_cell(nd_slab *slab, uint32_t size, uint32_t align)
{
    nd_slab_cell *best = NULL;
    uint32_t best_size = UINT32_MAX;
    for (uint32_t i = 0; i < slab->ncells; i++) {
        nd_slab_cell *cell = &slab->cells[i];
        uint32_t cs = nd_class_size[cell->cls];
        if (cs >= size && cs < best_size && (cell->off & (align - 1)) == 0 && !nd_load_acquire(&cell->live)) {
            best = cell;
            best_size = cs;
            if (cs == size)
                break;
        }
    }
    return best;
}

/* The cut itself (nd_sample_slab), under the slab's lock, tc's cache
   marked busy. */
static void *nd_sample_slab_cut(nd_tcache *tc, unsigned c, nd_slab_cell **cellp)
{
    uint32_t size = nd_class_size[c], align = size & -size;
    nd_slab **shared = &nd_slab_shared[nd_slab_key(tc)];
    nd_assert(size <= ND_SLAB_CELL_MAX);
    for (int tries = 0; tries < 2; tries++) {
        nd_slab *slab = *shared;
        if (slab != NULL) {
            uint32_t off = (slab->top + align - 1) & ~(align - 1), n = slab->ncells;
            if (n < ND_SLAB_CELLS && off + size <= slab->bytes) {
                nd_slab_cell *cell = &slab->cells[n];
                cell->off = (uint16_t)off;
                cell->cls = (uint8_t)c;
                cell->slot = ND_SLAB_NO_SLOT;
                nd_store_relaxed(&cell->live, 1);
                __atomic_add_fetch(&slab->refs, 1, __ATOMIC_RELAXED);   /* the cache holds one: refs > 0 */
                slab->top = off + size;
                nd_store_release(&slab->ncells, n + 1);
                *cellp = cell;
                return (char *)slab + off;
            }
            /* No room left at its top: a freed cell it fits, taken again
               (its class stays, so its size and its place in the order do),
               rather than a new slab whose first cell this one would be
               while one long-lived cell pins the old one (Larson -t 2: 500
               slabs of 4 cells of up to 1 KiB made, six of their OS pages
               resident at exit). */
            nd_slab_cell *cell = nd_slab_dead_cell(slab, size, align);
            if (cell != NULL) {
                cell->slot = ND_SLAB_NO_SLOT;
                __atomic_add_fetch(&slab->refs, 1, __ATOMIC_RELAXED);
                nd_store_relaxed(&cell->live, 1);
                *cellp = cell;
                return (char *)slab + cell->off;
            }
        }
        /* Full: the next one; the full one goes back to its pool once
           its last live cell is freed. */
        nd_slab *next = nd_slab_new(tc);
        if (next == NULL)
            return NULL;
        nd_store_release(shared, next);
        if (slab != NULL)
            nd_slab_unref(nd_seg_base(slab), nd_slab_page(slab));
    }
    return NULL;
}

void *nd_sample_slab(nd_tcache *tc, unsigned c, nd_slab_cell **cellp)
{
    /* A signal handler that allocates while its thread cuts a cell here:
       its sample is not taken (as the profiler's own guard does, prof.c),
       rather than cut from a slab half updated. */
    if (tc->prof_slab_busy)
        return NULL;
    tc->prof_slab_busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    nd_lock_t *lock = ND_LOCK(prof_slab, nd_slab_key(tc));
    nd_lock(lock);
    void *p = nd_sample_slab_cut(tc, c, cellp);
#if ND_DEBUG >= 1
    nd_slab *slab = nd_slab_shared[nd_slab_key(tc)];
    nd_assert(slab == NULL || nd_slab_is_valid(slab));
#endif
    nd_unlock(lock);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    tc->prof_slab_busy = 0;
    return p;
}

nd_slab_cell *nd_slab_cell_find(const nd_page *pg, const void *p)
{
    if (nd_load_acquire(&pg->sampled) != ND_PROF_SLAB || !nd_load_relaxed(&pg->in_use))
        return NULL;
    nd_slab *slab = nd_slab_of(pg);
    uintptr_t off = (uintptr_t)p - (uintptr_t)pg->start;
    if (off >= nd_load_relaxed(&slab->bytes) || off < ND_SLAB_HEADER)
        return NULL;
    /* The cells lie in order: halving (a walk of 56 cells of 64 bytes was
       280 instructions a free, callgrind). */
    uint32_t n = nd_load_acquire(&slab->ncells), lo = 0, hi;
    n = n < ND_SLAB_CELLS ? n : ND_SLAB_CELLS;
    hi = n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (slab->cells[mid].off < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* Only the cells the acquire above saw: a cell the owner cuts after it
       is being written (a second load of ncells, relaxed, let a pointer
       past every cell seen, which no valid free is, read its off as the
       owner wrote it). */
    return lo < n && slab->cells[lo].off == off ? &slab->cells[lo] : NULL;
}

/* Debug check of a current slab (under its lock: no cell is added
   meanwhile; frees may take cells, so refs is read first). */
bool nd_slab_is_valid(nd_slab *slab)
{
    const nd_page *pg = nd_slab_page(slab);
    uint32_t refs = nd_load_acquire(&slab->refs), n = nd_load_acquire(&slab->ncells), live = 0, end = ND_SLAB_HEADER;
    if (nd_load_relaxed(&pg->sampled) != ND_PROF_SLAB || !pg->in_use || pg->start != (uint8_t *)slab ||
        pg->prof_slot != ND_SLAB_NO_SLOT || n > ND_SLAB_CELLS || slab->top > slab->bytes ||
        slab->bytes > pg->block_size)
        return false;
    for (uint32_t i = 0; i < n; i++) {
        const nd_slab_cell *cell = &slab->cells[i];
        uint32_t size = cell->cls < ND_CLASS_COUNT ? nd_class_size[cell->cls] : 0;
        if (size == 0 || size > ND_SLAB_CELL_MAX || cell->off < end || (cell->off & ((size & -size) - 1)) != 0)
            return false;
        end = cell->off + size;
        live += nd_load_relaxed(&cell->live) != 0;
    }
    return end <= slab->top && refs >= live + 1;
}
