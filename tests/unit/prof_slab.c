/*
 * prof_slab.c - unit tests of the heap profile's sample slabs
 * (src/thread/slab.h): a sampled request of a class of at most 1 KiB
 * takes a cell of its thread cache's slab, one OS page shared by the
 * thread's samples, not an OS page of its own; its usable size is its
 * class size; a cell freed by any thread drops its sample, and a slab
 * whose cells are all freed (its thread gone or on to another slab) goes
 * back to the large pool; realloc moves a cell as a block of its class;
 * aligned and node-bound requests get cells of the right alignment and
 * memory; a cell freed twice aborts; a forked child frees the cells of a
 * thread it does not have; a request made inside the cut of a cell (by a
 * signal handler) takes none. A sampled request of a medium class up to
 * 32 KiB takes a run of OS pages of its kind's run slab, shared by every
 * thread, and the runs freed are taken again; its usable size is its
 * class size, its alignment its class's; a run freed twice or a pointer
 * inside it aborts; threads cutting and freeing runs at once do not
 * overlap.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "alloc.h"
#include "check.h"
#include "class.h"
#include "os.h"
#include "page.h"
#include "prof.h"
#include "segment.h"
#include "slab.h"
#include "tcache.h"

#define RATE  256          /* bytes between samples: a 64-byte request is sampled with p = 0.22 */
#define COUNT 4000

static void start(void)
{
    EXPECT(nd_prof_start(RATE), "profiling to start");
    nodal_free(nodal_malloc(1));   /* the thread has its cache */
}

/* Is p a live sample (in the profile's live table)? */
static bool is_sampled(const void *p)
{
    for (size_t i = nd_prof_live_next(0); i < ND_PROF_LIVE; i = nd_prof_live_next(i + 1)) {
        nd_prof_live v;
        if (nd_prof_live_copy(i, &v) && v.addr == (uintptr_t)p)
            return true;
    }
    return false;
}

/* The live samples among blocks[0, n): their indexes into out. */
static size_t sampled_of(void **blocks, size_t n, size_t *out)
{
    size_t k = 0;
    for (size_t i = nd_prof_live_next(0); i < ND_PROF_LIVE; i = nd_prof_live_next(i + 1)) {
        nd_prof_live v;
        if (!nd_prof_live_copy(i, &v))
            continue;
        for (size_t j = 0; j < n; j++)
            if (blocks[j] == (void *)v.addr)
                out[k++] = j;
    }
    return k;
}

static uintptr_t os_page_of(const void *p) { return (uintptr_t)p & ~(uintptr_t)(nd_os_page_size() - 1); }

/* The descriptor of the large block p lies in; NULL if p is not in a large segment. */
static nd_page *large_page_of(const void *p)
{
    nd_segment *s = nd_seg_of(p);
    return s != NULL && s->kind == ND_SEG_LARGE ? nd_page_of(s, p) : NULL;
}

/* Adds pg to slabs[0, *n) unless it is there. */
static void add_slab(nd_page **slabs, size_t *n, nd_page *pg)
{
    for (size_t k = 0; k < *n; k++)
        if (slabs[k] == pg)
            return;
    slabs[(*n)++] = pg;
}

static void *blocks[COUNT];
static size_t idx[COUNT];

/* The slabs of the live samples among blocks[] (at least 100, each a
   slab's cell), into slabs[]; their count. */
static size_t slabs_of_samples(nd_page **slabs)
{
    size_t n = sampled_of(blocks, COUNT, idx), ns = 0;
    EXPECT(n >= 100, "samples of 4,000 requests, got %zu", n);
    for (size_t k = 0; k < n; k++) {
        nd_page *pg = large_page_of(blocks[idx[k]]);
        EXPECT(pg != NULL && pg->sampled == ND_PROF_SLAB, "sample %zu to be a slab's cell", k);
        add_slab(slabs, &ns, pg);
    }
    return ns;
}

/* 64-byte samples share OS pages (56 cells to a 4 KiB slab), each one's
   usable size is 64, and each sits in a slab's cell. */
static void small_samples_share_a_slab_and_keep_their_class_size(void)
{
    start();
    for (int i = 0; i < COUNT; i++)
        blocks[i] = nodal_malloc(64);
    size_t n = sampled_of(blocks, COUNT, idx);
    EXPECT(n >= 200, "about 900 samples of 4,000 requests of 64 bytes at rate %d, got %zu", RATE, n);
    size_t pages = 0;
    for (size_t k = 0; k < n; k++) {
        void *p = blocks[idx[k]];
        EXPECT(nodal_malloc_usable_size(p) == 64, "a sampled 64-byte block's usable size to be 64, it is %zu",
               nodal_malloc_usable_size(p));
        nd_page *pg = large_page_of(p);
        EXPECT(pg != NULL && pg->sampled == ND_PROF_SLAB, "sample %p to be a cell of a sample slab", p);
        bool seen = false;
        for (size_t j = 0; j < k && !seen; j++)
            seen = os_page_of(blocks[idx[j]]) == os_page_of(p);
        pages += !seen;
    }
    EXPECT(pages * 16 <= n, "%zu samples of 64 bytes to share OS pages, they lie on %zu", n, pages);
    for (int i = 0; i < COUNT; i++)
        nodal_free(blocks[i]);
    EXPECT(nd_prof_live_bytes() == 0, "no live sample once all is freed, %ld bytes", (long)nd_prof_live_bytes());
}

static void *free_all(void *arg)
{
    (void)arg;
    for (int i = 0; i < COUNT; i++)
        nodal_free(blocks[i]);
    return NULL;
}

static void *alloc_all(void *arg)
{
    size_t size = (size_t)(uintptr_t)arg;
    nodal_free(nodal_malloc(1));
    for (int i = 0; i < COUNT; i++)
        blocks[i] = nodal_malloc(size);
    return NULL;
}

/* Cells freed by another thread drop their samples; every slab but the
   allocating thread's current one goes back (its descriptor no longer a
   slab's); the current one goes when the thread exits and its record is
   taken apart, or stays for the next thread that takes the record. */
static void cells_freed_by_another_thread_drop_samples_and_free_their_slabs(void)
{
    start();
    for (int i = 0; i < COUNT; i++)
        blocks[i] = nodal_malloc(96);
    nd_page *slabs[COUNT];
    size_t ns = slabs_of_samples(slabs);
    EXPECT(ns >= 2, "samples to fill more than one slab, %zu", ns);
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, free_all, NULL) == 0, "a thread");
    pthread_join(t, NULL);
    EXPECT(nd_prof_live_bytes() == 0 && !is_sampled(blocks[idx[0]]),
           "no live sample once another thread freed them, %ld bytes", (long)nd_prof_live_bytes());
    nd_tcache *tc = nd_tls_tc;
    for (size_t k = 0; k < ns; k++) {
        bool current = tc->prof_slab != NULL && slabs[k]->start == (uint8_t *)tc->prof_slab;
        EXPECT(current || slabs[k]->sampled != ND_PROF_SLAB, "slab %zu of %zu, its cells freed, to be freed", k, ns);
    }
}

/* A thread exits with live samples: its slabs stay while their cells
   live; once the cells are freed (here, by the main thread) no slab of
   it is left. */
static void a_slab_outlives_its_thread_until_its_cells_are_freed(void)
{
    start();
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, alloc_all, (void *)(uintptr_t)48) == 0, "a thread");
    pthread_join(t, NULL);
    nd_page *slabs[COUNT];
    size_t ns = slabs_of_samples(slabs);
    for (int i = 0; i < COUNT; i++)
        nodal_free(blocks[i]);
    EXPECT(nd_prof_live_bytes() == 0, "no live sample left, %ld bytes", (long)nd_prof_live_bytes());
    /* Left: at most the exited thread's cache's current slab (its record
       may be pooled for the next thread, cache and all). */
    size_t left = 0;
    for (size_t k = 0; k < ns; k++)
        left += slabs[k]->sampled == ND_PROF_SLAB && slabs[k]->in_use;
    EXPECT(left <= 1, "the exited thread's %zu slabs to be freed but its cache's, %zu are left", ns, left);
}

/* realloc within the class stays; beyond it the block moves, its
   contents kept, its sample dropped. */
static void realloc_moves_a_cell_as_a_block_of_its_class(void)
{
    start();
    for (int i = 0; i < COUNT; i++) {
        blocks[i] = nodal_malloc(64);
        memset(blocks[i], i & 0xff, 64);
    }
    size_t n = sampled_of(blocks, COUNT, idx);
    EXPECT(n >= 100, "samples, got %zu", n);
    for (size_t k = 0; k < n; k++) {
        void *p = blocks[idx[k]];
        EXPECT(nodal_realloc(p, 60) == p, "a cell shrunk within its class to stay");
        void *q = nodal_realloc(p, 300);
        EXPECT(q != NULL && q != p, "a cell grown past its class to move");
        for (int b = 0; b < 60; b++)
            EXPECT(((unsigned char *)q)[b] == (idx[k] & 0xff), "realloc to keep the cell's contents");
        EXPECT(!is_sampled(p), "the moved cell's sample to be dropped");
        blocks[idx[k]] = q;
    }
    for (int i = 0; i < COUNT; i++)
        nodal_free(blocks[i]);
}

/* Aligned requests of a class that takes cells get cells of their
   alignment; node-bound requests get cells of bound memory. */
static void aligned_and_node_bound_samples_get_cells_of_their_kind(void)
{
    start();
    size_t aligns[] = { 32, 64, 128, 256, 512, 1024 };
    for (size_t a = 0; a < sizeof aligns / sizeof aligns[0]; a++) {
        size_t al = aligns[a];
        for (int i = 0; i < 1000; i++)
            EXPECT(nodal_posix_memalign(&blocks[i], al, al / 2 + 1) == 0, "posix_memalign(%zu)", al);
        size_t n = sampled_of(blocks, 1000, idx), cells = 0;
        for (size_t k = 0; k < n; k++) {
            void *p = blocks[idx[k]];
            EXPECT(((uintptr_t)p & (al - 1)) == 0, "a sampled block aligned to %zu at %p", al, p);
            nd_page *pg = large_page_of(p);
            cells += pg != NULL && pg->sampled == ND_PROF_SLAB;
        }
        EXPECT(n > 0 && cells == n, "the %zu samples aligned to %zu to be cells (%zu are)", n, al, cells);
        for (int i = 0; i < 1000; i++)
            nodal_free(blocks[i]);
    }
    for (int i = 0; i < COUNT; i++)
        blocks[i] = nodal_malloc_node(64, 0);
    size_t n = sampled_of(blocks, COUNT, idx);
    EXPECT(n >= 100, "samples of node-bound requests, got %zu", n);
    for (size_t k = 0; k < n; k++) {
        nd_segment *s = nd_seg_of(blocks[idx[k]]);
        nd_page *pg = large_page_of(blocks[idx[k]]);
        EXPECT(s->bound && s->node == 0 && pg != NULL && pg->sampled == ND_PROF_SLAB,
               "a node-bound sample to be a cell of a slab bound to node 0");
    }
    for (int i = 0; i < COUNT; i++)
        nodal_free(blocks[i]);
}

/* In a child: frees `first`, then `second` (unless NULL); expects the
   child to abort with `want` in what it says. */
static void free_in_child_aborts(void *first, void *second, const char *want)
{
    int fds[2];
    EXPECT(pipe(fds) == 0, "a pipe");
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        nodal_free(first);
        if (second != NULL)
            nodal_free(second);
        _exit(0);
    }
    close(fds[1]);
    char out[512] = { 0 };
    size_t got = 0;
    ssize_t r;
    while (got < sizeof out - 1 && (r = read(fds[0], out + got, sizeof out - 1 - got)) > 0)
        got += (size_t)r;
    close(fds[0]);
    int st;
    waitpid(pid, &st, 0);
    EXPECT(WIFSIGNALED(st) && strstr(out, want) != NULL, "the child to abort with \"%s\"; it said: %s", want, out);
}

/* A cell freed twice, or a pointer into a slab that is no cell's start,
   aborts with the message. */
static void a_cell_freed_twice_or_inside_aborts(void)
{
    start();
    for (int i = 0; i < COUNT; i++)
        blocks[i] = nodal_malloc(64);
    size_t n = sampled_of(blocks, COUNT, idx);
    EXPECT(n >= 2, "samples, got %zu", n);
    for (int how = 0; how < 2; how++) {
        nd_page *pg = large_page_of(blocks[idx[how]]);
        EXPECT(pg != NULL && pg->sampled == ND_PROF_SLAB, "sample %d to be a slab's cell", how);
        char *p = blocks[idx[how]];
        if (how == 0)
            free_in_child_aborts(p, p, "double free");
        else
            free_in_child_aborts(p + 16, NULL, "invalid pointer");
    }
}

/* While the thread is inside the cut of a cell (a signal handler that
   allocates then), its requests take no cell and are not sampled: they
   get blocks of their class. */
static void a_request_inside_the_cut_takes_no_cell(void)
{
    start();
    nd_tcache *tc = nd_tls_tc;
    tc->prof_slab_busy = 1;   /* as while the thread cuts a cell */
    for (int i = 0; i < COUNT; i++)
        blocks[i] = nodal_malloc(64);
    tc->prof_slab_busy = 0;
    size_t cells = 0;
    for (int i = 0; i < COUNT; i++) {
        nd_page *pg = large_page_of(blocks[i]);
        cells += pg != NULL && pg->sampled == ND_PROF_SLAB;
    }
    EXPECT(cells == 0 && sampled_of(blocks, COUNT, idx) == 0,
           "no cell and no sample while the cut is busy: %zu cells", cells);
    for (int i = 0; i < COUNT; i++)
        nodal_free(blocks[i]);
    for (int i = 0; i < COUNT; i++)
        blocks[i] = nodal_malloc(64);
    EXPECT(sampled_of(blocks, COUNT, idx) > 0, "samples again once it is not");
    for (int i = 0; i < COUNT; i++)
        nodal_free(blocks[i]);
}

static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cond = PTHREAD_COND_INITIALIZER;
static int hold_state;   /* 1: blocks allocated; 2: the thread may exit */

static void *alloc_and_wait(void *arg)
{
    alloc_all(arg);
    pthread_mutex_lock(&hold_lock);
    hold_state = 1;
    pthread_cond_broadcast(&hold_cond);
    while (hold_state != 2)
        pthread_cond_wait(&hold_cond, &hold_lock);
    pthread_mutex_unlock(&hold_lock);
    return NULL;
}

/* fork() while another thread holds a slab (its cache's current one, and
   full ones whose cells live): in the child, which has no such thread,
   its cells free as any (their samples dropped) and the child allocates
   and samples on. */
static void a_forked_child_frees_the_cells_of_a_thread_it_lacks(void)
{
    start();
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, alloc_and_wait, (void *)(uintptr_t)64) == 0, "a thread");
    pthread_mutex_lock(&hold_lock);
    while (hold_state != 1)
        pthread_cond_wait(&hold_cond, &hold_lock);
    pthread_mutex_unlock(&hold_lock);
    nd_page *slabs[COUNT];
    size_t ns = slabs_of_samples(slabs);
    EXPECT(ns >= 2, "the thread's samples to fill more than one slab, %zu", ns);
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; i < COUNT; i++)
            nodal_free(blocks[i]);
        if (nd_prof_live_bytes() != 0)
            _exit(2);
        for (int i = 0; i < COUNT; i++)
            blocks[i] = nodal_malloc(64);
        if (sampled_of(blocks, COUNT, idx) == 0)
            _exit(3);
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child to free the cells and sample on (status %d)", st);
    pthread_mutex_lock(&hold_lock);
    hold_state = 2;
    pthread_cond_broadcast(&hold_cond);
    pthread_mutex_unlock(&hold_lock);
    pthread_join(t, NULL);
    for (int i = 0; i < COUNT; i++)
        nodal_free(blocks[i]);
}

/* The chunk (64 KiB) p lies in. */
static uintptr_t chunk_of(const void *p) { return (uintptr_t)p >> 16; }

/* Fourteen live samples of 8 KiB (at RATE every one is sampled) share two
   run slabs, seven 8 KiB-aligned runs each, as cells of class 8192 whose
   bytes do not overlap; freed, their runs are taken again by the next
   fourteen, which lie in the same chunks. Before, each was a large block
   of its own: fourteen chunks. With four run slabs full, a sample is a
   large block of its own again. */
static void medium_samples_share_run_slabs_and_take_freed_runs_again(void)
{
    start();
    enum { N = 14 };
    uintptr_t chunks[N];
    size_t nchunks = 0;
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < N; i++) {
            blocks[i] = nodal_malloc(8000);
            EXPECT(blocks[i] != NULL && is_sampled(blocks[i]), "request %d of round %d to be sampled", i, round);
            nd_page *pg = large_page_of(blocks[i]);
            EXPECT(pg != NULL && pg->sampled == ND_PROF_SLAB, "sample %d to be a run of a run slab", i);
            EXPECT(((uintptr_t)blocks[i] & 8191) == 0 && nodal_malloc_usable_size(blocks[i]) == 8192,
                   "a run of class 8192 aligned to 8 KiB at %p, usable %zu", blocks[i],
                   nodal_malloc_usable_size(blocks[i]));
            memset(blocks[i], 'a' + i, 8192);
            bool seen = false;
            for (size_t k = 0; k < nchunks && !seen; k++)
                seen = chunks[k] == chunk_of(blocks[i]);
            if (!seen) {
                EXPECT(round == 0, "round 2's sample %d to lie in a chunk of round 1's", i);
                chunks[nchunks++] = chunk_of(blocks[i]);
            }
        }
        EXPECT(nchunks <= 2, "14 samples of 8 KiB to share 2 chunks, they lie in %zu", nchunks);
        for (int i = 0; i < N; i++)
            for (int b = 0; b < 8192; b += 512)
                EXPECT(((unsigned char *)blocks[i])[b] == 'a' + i, "sample %d's bytes to be its own", i);
        for (int i = 0; i < N; i++)
            nodal_free(blocks[i]);
        EXPECT(nd_prof_live_bytes() == 0, "no live sample once all is freed, %ld bytes", (long)nd_prof_live_bytes());
    }
    /* Every medium class up to 32 KiB, and an aligned request: a run at its
       class's alignment (at most 16 KiB), its class size usable. */
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        size_t size = nd_class_size[c];
        if (size <= ND_SLAB_CELL_MAX || size > ND_SLAB_RUN_MAX)
            continue;
        /* (A request of 1280 bytes is sampled with p = 1 - exp(-5): one in
           150 is not, and is its class's ordinary block; the next is.) */
        void *p = nodal_malloc(size);
        for (int tries = 0; tries < 20 && !is_sampled(p); tries++) {
            nodal_free(p);
            p = nodal_malloc(size);
        }
        size_t align = (size & -size) < 16384 ? (size & -size) : 16384;
        nd_page *pg = large_page_of(p);
        EXPECT(pg != NULL && pg->sampled == ND_PROF_SLAB && ((uintptr_t)p & (align - 1)) == 0 &&
               nodal_malloc_usable_size(p) == size, "a sample of class %zu to be a run aligned to %zu", size, align);
        EXPECT(nodal_realloc(p, size - 100) == p, "a run shrunk within its class to stay");
        nodal_free(p);
    }
    /* Four run slabs full (32 runs of 8 KiB: every OS page of a chunk takes
       runs): the next samples are large blocks of their own, sampled as well. */
    size_t runs = 0, own = 0;
    for (int i = 0; i < 40; i++) {
        blocks[i] = nodal_malloc(8000);
        nd_page *pg = large_page_of(blocks[i]);
        EXPECT(pg != NULL && is_sampled(blocks[i]), "request %d to be sampled", i);
        runs += pg->sampled == ND_PROF_SLAB;
        own += pg->sampled == 1;
    }
    size_t per = ND_CHUNK_SIZE / nd_os_page_size() / 2;
    EXPECT(runs == 4 * per && own == 40 - runs, "%zu runs of four run slabs, then large blocks: %zu runs, %zu own",
           4 * per, runs, own);
    for (int i = 0; i < 40; i++)
        nodal_free(blocks[i]);
    EXPECT(nd_prof_live_bytes() == 0, "no live sample once all is freed, %ld bytes", (long)nd_prof_live_bytes());
    void *q;
    EXPECT(nodal_posix_memalign(&q, 16384, 9000) == 0 && ((uintptr_t)q & 16383) == 0, "posix_memalign(16384)");
    nd_page *pg = large_page_of(q);
    EXPECT(pg != NULL && pg->sampled == ND_PROF_SLAB, "the aligned sample to be a run");
    nodal_free(q);
    EXPECT(nd_prof_live_bytes() == 0, "no live sample once all is freed, %ld bytes", (long)nd_prof_live_bytes());
}

/* Every OS page of a run slab's chunk takes runs (its header is elsewhere):
   two 32 KiB samples share one chunk, at its start and half-way; then the
   chunk's pages are the runs of 1 OS page of as many 4 KiB samples. On
   main f0a54d9 the header took the chunk's first page, and the second
   32 KiB sample went to another chunk. */
static void a_run_slab_takes_runs_on_every_os_page(void)
{
    start();
    size_t ps = nd_os_page_size(), pages = ND_CHUNK_SIZE / ps;
    char *a = nodal_malloc(32768), *b = nodal_malloc(32768);
    nd_page *pa = large_page_of(a), *pb = large_page_of(b);
    EXPECT(pa != NULL && pa->sampled == ND_PROF_SLAB && pb != NULL && pb->sampled == ND_PROF_SLAB,
           "two 32 KiB samples to be runs of a run slab");
    EXPECT(chunk_of(a) == chunk_of(b) && ((uintptr_t)a & (ND_CHUNK_SIZE - 1)) == 0 && b == a + 32768,
           "two 32 KiB runs at the start of one chunk and half-way: %p %p", (void *)a, (void *)b);
    memset(a, 'a', 32768);
    memset(b, 'b', 32768);
    EXPECT(a[32767] == 'a' && b[0] == 'b', "the runs' bytes their own");
    uintptr_t chunk = (uintptr_t)a;
    nodal_free(a);
    nodal_free(b);
    for (size_t i = 0; i < pages; i++) {   /* (4096: a medium class, one OS page, lowest first) */
        blocks[i] = nodal_malloc(4096);
        EXPECT(blocks[i] != NULL && (uintptr_t)blocks[i] == chunk + i * ps,
               "4 KiB sample %zu to be the chunk's OS page %zu: %p, chunk %#lx", i, i, blocks[i], (unsigned long)chunk);
    }
    for (size_t i = 0; i < pages; i++)
        nodal_free(blocks[i]);
    EXPECT(nd_prof_live_bytes() == 0, "no live sample once all is freed, %ld bytes", (long)nd_prof_live_bytes());
}

/* A run freed twice, or a pointer inside a run (its second OS page, or 16
   bytes in), aborts with the message. */
static void a_run_freed_twice_or_inside_aborts(void)
{
    start();
    for (int how = 0; how < 3; how++) {
        char *p = nodal_malloc(8000);
        nd_page *pg = large_page_of(p);
        EXPECT(pg != NULL && pg->sampled == ND_PROF_SLAB, "sample %d to be a run of a run slab", how);
        if (how == 0)
            free_in_child_aborts(p, p, "double free");
        else
            free_in_child_aborts(p + (how == 1 ? nd_os_page_size() : 16), NULL, "invalid pointer");
        nodal_free(p);
    }
}

/* Two threads cut runs of the same run slabs and free them (their own and
   each other's) at once: no two live runs overlap (each block keeps the
   bytes written into it), and every sample is dropped at the end. */
#define SHARED_SLOTS 64
static void *shared_slot[SHARED_SLOTS];   /* atomic: blocks handed to whichever thread takes them */
static unsigned long run_cells;           /* atomic: samples that were runs of a run slab */
static void *cut_and_free(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg;
    uint64_t x = 0x9e3779b97f4a7c15ull * (id + 1);
    void *mine[8] = { 0 };
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t size = 1100 + (size_t)(x % 31000);
        unsigned slot = (unsigned)(x >> 32) % 8;
        if (mine[slot] != NULL) {
            unsigned char *b = mine[slot];
            size_t len = nodal_malloc_usable_size(b);
            for (size_t k = 0; k < len; k += 256)
                EXPECT(b[k] == (unsigned char)(uintptr_t)b, "a block's bytes to be its own");
            /* Half to the other thread, through a shared slot. */
            void *prev = __atomic_exchange_n(&shared_slot[(x >> 40) % SHARED_SLOTS], (x & 1) ? b : NULL,
                                             __ATOMIC_ACQ_REL);
            if (!(x & 1))
                nodal_free(b);
            if (prev != NULL)
                nodal_free(prev);
        }
        unsigned char *p = nodal_malloc(size);
        nd_page *pg = large_page_of(p);
        if (pg != NULL && pg->sampled == ND_PROF_SLAB)
            __atomic_add_fetch(&run_cells, 1, __ATOMIC_RELAXED);
        memset(p, (unsigned char)(uintptr_t)p, nodal_malloc_usable_size(p));
        mine[slot] = p;
    }
    for (int k = 0; k < 8; k++)
        nodal_free(mine[k]);
    return NULL;
}

static void runs_cut_and_freed_by_two_threads_do_not_overlap(void)
{
    start();
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        EXPECT(pthread_create(&t[i], NULL, cut_and_free, (void *)(uintptr_t)i) == 0, "a thread");
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < SHARED_SLOTS; i++)
        nodal_free(shared_slot[i]);
    EXPECT(run_cells > 1000, "runs of run slabs among the samples, got %lu of %lu", run_cells,
           (unsigned long)nd_prof_samples());
    EXPECT(nd_prof_live_bytes() == 0, "no live sample once all is freed, %ld bytes", (long)nd_prof_live_bytes());
}

static const struct nd_case cases[] = {
    ND_CASE(small_samples_share_a_slab_and_keep_their_class_size),
    ND_CASE(cells_freed_by_another_thread_drop_samples_and_free_their_slabs),
    ND_CASE(a_slab_outlives_its_thread_until_its_cells_are_freed),
    ND_CASE(realloc_moves_a_cell_as_a_block_of_its_class),
    ND_CASE(aligned_and_node_bound_samples_get_cells_of_their_kind),
    ND_CASE(a_cell_freed_twice_or_inside_aborts),
    ND_CASE(a_forked_child_frees_the_cells_of_a_thread_it_lacks),
    ND_CASE(a_request_inside_the_cut_takes_no_cell),
    ND_CASE(medium_samples_share_run_slabs_and_take_freed_runs_again),
    ND_CASE(a_run_slab_takes_runs_on_every_os_page),
    ND_CASE(a_run_freed_twice_or_inside_aborts),
    ND_CASE(runs_cut_and_freed_by_two_threads_do_not_overlap),
};
ND_MAIN(cases)
