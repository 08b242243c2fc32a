/*
 * slab.c - the heap profile's sample slabs (prof=1; see slab.h): a
 * cache's cell slab for small samples, the run slabs of each kind of
 * memory for medium ones; cutting, finding and freeing their cells, and
 * their debug checks.
 */
#include "slab.h"

#include "large.h"
#include "meta.h"
#include "os.h"
#include "page.h"
#include "tcache.h"

/* The run slabs of each kind of memory (node, bound), tried in order: the
   first made at the first run, the next one when no run of those before
   it fits (atomic: NULL until then, ND_SLAB_MAKING while a thread makes
   it), kept while profiling is on. Their headers are metadata, not the
   chunk's first OS page: every OS page of the chunk takes runs, and a
   32 KiB run fits at 0, 16 and 32 KiB, where the header's page left it
   the last two only. A run slab's descriptor names its entry here
   (prof_slot: node, bound and index, nd_slab_of). */
static nd_slab *nd_slab_runs[ND_MAX_NODES * 2 * ND_SLAB_RUN_SLABS];
#define ND_SLAB_MAKING ((nd_slab *)1)

static nd_page *nd_slab_page(const nd_slab *slab)
{
    return nd_page_of(nd_seg_base(slab->base), slab->base);
}

/* The header of the slab of descriptor pg (sampled == ND_PROF_SLAB): the
   block itself for a cell slab (prof_slot ND_SLAB_NO_SLOT), else the run
   slab's entry that prof_slot names. */
static nd_slab *nd_slab_of(const nd_page *pg)
{
    uint32_t k = pg->prof_slot;
    return k == ND_SLAB_NO_SLOT ? (nd_slab *)pg->start : nd_load_acquire(&nd_slab_runs[k]);
}

size_t nd_slab_unref(nd_segment *s, nd_page *pg)
{
    nd_slab *slab = nd_slab_of(pg);
    if (__atomic_sub_fetch(&slab->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return 0;
    nd_assert(slab->runs == 0);   /* (a run slab's table keeps its reference) */
    nd_store_relaxed(&pg->sampled, 0);   /* a large block of one OS page again */
    return nd_large_free(s, pg, slab->base);
}

/* Drops a reference tc held on slab; a free of the slab (its last
   reference) is counted in tc's statistics. */
static void nd_slab_release(nd_tcache *tc, nd_slab *slab)
{
    size_t bytes = nd_slab_unref(nd_seg_base(slab->base), nd_slab_page(slab));
    if (bytes != 0) {
        nd_count_inc(&tc->heap.stats.large_frees);
        nd_count_add(&tc->heap.stats.large_bytes_freed, bytes);
    }
}

void nd_tcache_slab_drop(nd_tcache *tc)
{
    nd_slab *slab = tc->prof_slab;
    if (slab == NULL)
        return;
    tc->prof_slab = NULL;
    nd_slab_release(tc, slab);
}

/* The run slabs of tc's kind of memory. */
static nd_slab **nd_slab_runs_of_kind(const nd_tcache *tc)
{
    return &nd_slab_runs[((size_t)tc->heap.node * 2 + (tc->heap.bound ? 1 : 0)) * ND_SLAB_RUN_SLABS];
}

/* A run of class size `size` (more than ND_SLAB_CELL_MAX): the bits of
   `used` its OS pages take, from bit 0, and the alignment it starts at
   (its size's lowest bit, at most ND_ALIGN_NATURAL). */
static uint32_t nd_slab_run_mask(uint32_t size)
{
    size_t ps = nd_os_page_size();
    uint32_t k = (uint32_t)((size + ps - 1) / ps);
    return k >= 32 ? UINT32_MAX : (1u << k) - 1;
}
static size_t nd_slab_run_align(uint32_t size)
{
    size_t low = (size_t)(size & -size);
    return low < ND_ALIGN_NATURAL ? low : ND_ALIGN_NATURAL;
}

/* The OS pages of a run slab (one chunk), or 0 where the OS page is too
   large for runs (fewer than 4 pages to a chunk; more than 32 do not fit
   `used`): medium samples are then large blocks of their own. */
static uint32_t nd_slab_run_pages(void)
{
    size_t n = ND_CHUNK_SIZE / nd_os_page_size();
    return n >= 4 && n <= 32 && n <= ND_SLAB_CELLS ? (uint32_t)n : 0;
}

bool nd_sample_slab_fits(unsigned c)
{
    size_t size = nd_class_size[c];
    return size <= ND_SLAB_CELL_MAX ||
           (size <= ND_SLAB_RUN_MAX && nd_slab_run_pages() != 0 &&
            (size + nd_os_page_size() - 1) / nd_os_page_size() < nd_slab_run_pages());
}

/* A new cell slab of tc's kind of memory, one OS page (its cache's
   reference taken), or NULL. */
static nd_slab *nd_slab_new(nd_tcache *tc)
{
    size_t bytes;
    nd_slab *slab = nd_large_alloc(tc->heap.node, tc->heap.bound, nd_os_page_size(), 0, &bytes);
    if (slab == NULL)
        return NULL;
    nd_count_inc(&tc->heap.stats.large_allocs);
    nd_count_add(&tc->heap.stats.large_bytes_allocated, bytes);
    slab->refs = 1;
    slab->top = ND_SLAB_HEADER;
    slab->ncells = 0;
    slab->bytes = (uint32_t)(bytes < 65536 ? bytes : 65536);   /* a cell slab's off is 16 bits */
    slab->runs = 0;
    slab->base = (uint8_t *)slab;
    nd_store_relaxed(&slab->used, 0u);
    nd_page *pg = nd_slab_page(slab);
    pg->prof_slot = ND_SLAB_NO_SLOT;   /* the header is the block's start */
    nd_store_release(&pg->sampled, ND_PROF_SLAB);
    return slab;
}

/* A new run slab of tc's kind of memory for entry `at` of the table, the
   idx-th entry of the whole table (its header metadata, its runs a chunk
   of the large pool; the table's reference taken), or NULL. */
static nd_slab *nd_slab_runs_new(nd_tcache *tc, uint32_t idx)
{
    nd_slab *slab = nd_meta_alloc(sizeof *slab);
    if (slab == NULL)
        return NULL;
    size_t bytes;
    uint8_t *chunk = nd_large_alloc(tc->heap.node, tc->heap.bound, ND_CHUNK_SIZE, 0, &bytes);
    if (chunk == NULL) {
        nd_meta_free(slab, sizeof *slab);
        return NULL;
    }
    nd_count_inc(&tc->heap.stats.large_allocs);
    nd_count_add(&tc->heap.stats.large_bytes_allocated, bytes);
    slab->refs = 1;
    slab->runs = nd_slab_run_pages();
    slab->bytes = (uint32_t)(slab->runs * nd_os_page_size());
    slab->base = chunk;
    for (uint32_t i = 0; i < slab->runs; i++) {
        slab->cells[i].off = 0;   /* (a run slab's cell i is at OS page i) */
        slab->cells[i].cls = ND_CLASS_COUNT;   /* no run starts here */
        slab->cells[i].live = 0;
        slab->cells[i].slot = ND_SLAB_NO_SLOT;
    }
    nd_page *pg = nd_slab_page(slab);
    pg->prof_slot = idx;
    nd_store_release(&pg->sampled, ND_PROF_SLAB);
    return slab;
}

/* The run of a run slab for class c: the first free pages at its
   alignment, taken by compare-and-swap on `used` (any thread), its cell
   set (live); NULL when none fits. */
static void *nd_slab_run_cut(nd_slab *slab, unsigned c, nd_slab_cell **cellp)
{
    size_t ps = nd_os_page_size();
    uint32_t size = nd_class_size[c];
    uint32_t k = (uint32_t)((size + ps - 1) / ps);
    size_t align = nd_slab_run_align(size);
    uint32_t step = align > ps ? (uint32_t)(align / ps) : 1;
    uint32_t run = nd_slab_run_mask(size);
    uint32_t used = nd_load_acquire(&slab->used);
    for (uint32_t i = 0; i + k <= slab->runs;) {
        if ((used & (run << i)) != 0) {
            i += step;
            continue;
        }
        /* Taken, or `used` changed meanwhile (reread; the same i again). */
        if (!__atomic_compare_exchange_n(&slab->used, &used, used | run << i, false, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE))
            continue;
        nd_assert((nd_load_relaxed(&slab->used) & run << i) == run << i);
        for (uint32_t j = i + 1; j < i + k; j++)
            nd_store_relaxed(&slab->cells[j].cls, (uint8_t)ND_CLASS_COUNT);   /* inside this run: no start */
        nd_slab_cell *cell = &slab->cells[i];
        nd_assert((i * ps & (align - 1)) == 0 && !nd_load_relaxed(&cell->live));
        nd_store_relaxed(&cell->cls, (uint8_t)c);   /* (atomic: the checks of nd_slab_runs_are_valid read it) */
        cell->slot = ND_SLAB_NO_SLOT;
        __atomic_add_fetch(&slab->refs, 1, __ATOMIC_RELAXED);   /* the table holds one: refs > 0 */
        nd_store_release(&cell->live, 1);
        *cellp = cell;
        return slab->base + (size_t)i * ps;
    }
    return NULL;
}

/* Run slab k of tc's kind of memory, made if there is none yet; NULL when
   out of memory or while another thread makes it. */
static nd_slab *nd_slab_runs_of(nd_tcache *tc, unsigned k)
{
    nd_slab **at = &nd_slab_runs_of_kind(tc)[k];
    nd_slab *slab = nd_load_acquire(at), *none = NULL;
    if (slab != NULL)
        return slab != ND_SLAB_MAKING ? slab : NULL;
    if (!__atomic_compare_exchange_n(at, &none, ND_SLAB_MAKING, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return none != ND_SLAB_MAKING ? none : NULL;
    slab = nd_slab_runs_new(tc, (uint32_t)(at - nd_slab_runs));
    nd_store_release(at, slab);   /* (NULL when it failed: a later run tries again) */
    return slab;
}

size_t nd_slab_cell_free(nd_segment *s, nd_page *pg, nd_slab_cell *cell)
{
    nd_slab *slab = nd_slab_of(pg);
    if (slab->runs != 0) {
        uint32_t i = (uint32_t)(cell - slab->cells);
        uint32_t run = nd_slab_run_mask(nd_class_size[cell->cls]);
        __atomic_fetch_and(&slab->used, ~(run << i), __ATOMIC_RELEASE);   /* the owner may cut it again now */
    }
    return nd_slab_unref(s, pg);
}

/* The cut itself (nd_sample_slab), with the cache's slab marked busy. */
static void *nd_sample_slab_cut(nd_tcache *tc, unsigned c, nd_slab_cell **cellp)
{
    uint32_t size = nd_class_size[c], align = size & -size;
    if (size > ND_SLAB_CELL_MAX) {
        /* The first run slab with a run that fits, lowest first: a few
           live samples keep the first slab's first pages resident. One
           that another thread is making is passed over. */
        for (unsigned k = 0; k < ND_SLAB_RUN_SLABS; k++) {
            nd_slab *runs = nd_load_acquire(&nd_slab_runs_of_kind(tc)[k]);
            if (runs == ND_SLAB_MAKING)
                continue;
            if (runs == NULL && (runs = nd_slab_runs_of(tc, k)) == NULL)
                return NULL;
            void *p = nd_slab_run_cut(runs, c, cellp);
            if (p != NULL)
                return p;
        }
        return NULL;
    }
    for (int tries = 0; tries < 2; tries++) {
        nd_slab *slab = tc->prof_slab;
        if (slab != NULL && nd_seg_base(slab)->node == tc->heap.node) {
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
        }
        /* Full (or of the node the heap left): the next one. */
        nd_tcache_slab_drop(tc);
        tc->prof_slab = nd_slab_new(tc);
        if (tc->prof_slab == NULL)
            return NULL;
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
    void *p = nd_sample_slab_cut(tc, c, cellp);
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
    if (off >= nd_load_relaxed(&slab->bytes) || (slab->runs == 0 && off < ND_SLAB_HEADER))
        return NULL;
    if (slab->runs != 0) {   /* a run slab: the cell of p's OS page, if a run starts there */
        size_t ps = nd_os_page_size();
        nd_slab_cell *cell = &slab->cells[off / ps];
        return off % ps == 0 && nd_load_relaxed(&cell->cls) < ND_CLASS_COUNT ? cell : NULL;
    }
    /* The cells lie in order: halving (a walk of 56 cells of 64 bytes was
       280 instructions a free, callgrind). */
    uint32_t lo = 0, hi = nd_load_acquire(&slab->ncells);
    hi = hi < ND_SLAB_CELLS ? hi : ND_SLAB_CELLS;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (slab->cells[mid].off < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ND_SLAB_CELLS && lo < nd_load_relaxed(&slab->ncells) && slab->cells[lo].off == off ? &slab->cells[lo]
                                                                                                     : NULL;
}

/* Debug check of the run slabs of tc's kind of memory, from any thread
   while others cut and free runs: what holds of each cell however the
   others move (a live cell's class, its run inside the slab at its
   alignment), the descriptor naming this header, no page past the slab's
   taken, the slab's size; whether a live
   cell's pages are all taken, and that no two runs overlap, hold only
   between a cut and a free (no snapshot of `used` and the cells at once
   is taken), and the cut asserts them as it takes a run. */
bool nd_slab_runs_are_valid(const nd_tcache *tc)
{
    if (tc->heap.shared)
        return true;
    size_t ps = nd_os_page_size();
    for (unsigned k = 0; k < ND_SLAB_RUN_SLABS; k++) {
        nd_slab *slab = nd_load_acquire(&nd_slab_runs_of_kind(tc)[k]);
        if (slab == NULL || slab == ND_SLAB_MAKING)
            continue;
        const nd_page *pg = nd_slab_page(slab);
        uint32_t used = nd_load_acquire(&slab->used);
        if (nd_load_relaxed(&pg->sampled) != ND_PROF_SLAB || !nd_load_relaxed(&pg->in_use) ||
            pg->start != slab->base || nd_slab_of(pg) != slab || slab->runs != nd_slab_run_pages() ||
            slab->bytes != slab->runs * ps || slab->bytes > pg->block_size || nd_load_relaxed(&slab->refs) == 0 ||
            (slab->runs < 32 && used >> slab->runs != 0))
            return false;
        for (uint32_t i = 0; i < slab->runs; i++) {
            const nd_slab_cell *cell = &slab->cells[i];
            uint8_t cls = nd_load_relaxed(&cell->cls);
            if (!nd_load_acquire(&cell->live) || cls >= ND_CLASS_COUNT)
                continue;
            uint32_t size = nd_class_size[cls];
            size_t align = nd_slab_run_align(size);
            if (size <= ND_SLAB_CELL_MAX || size > ND_SLAB_RUN_MAX || i + (size + ps - 1) / ps > slab->runs ||
                (i * ps) % align != 0)
                return false;
        }
    }
    return true;
}

/* Debug check of a cache's slab (its owner's thread: no cell is added
   meanwhile; frees may take cells, so refs is read first). */
bool nd_slab_is_valid(nd_slab *slab)
{
    const nd_page *pg = nd_slab_page(slab);
    uint32_t refs = nd_load_acquire(&slab->refs), n = nd_load_acquire(&slab->ncells), live = 0, end = ND_SLAB_HEADER;
    if (nd_load_relaxed(&pg->sampled) != ND_PROF_SLAB || !pg->in_use || pg->start != (uint8_t *)slab ||
        slab->base != (uint8_t *)slab || pg->prof_slot != ND_SLAB_NO_SLOT || slab->runs != 0 || n > ND_SLAB_CELLS || slab->top > slab->bytes || slab->bytes > pg->block_size)
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
