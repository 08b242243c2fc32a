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
 * signal handler) takes none. A sampled request of a class above 1 KiB
 * is its class's ordinary block, counted by its page while it lives (its
 * page's kind ND_KIND_PROF meanwhile), dropped by its free from any
 * thread, after its thread exits too; freed twice it aborts; two threads
 * adding and dropping samples in the same pages leave none; and a
 * workload of such samples makes little more resident than without them.
 * A slab takes its freed cells again. A dump runs within a thread stack
 * of 16 KiB. The statistics count a cell as a block of its class and its
 * slab as the profile's overhead (prof_slab_bytes), not the program's.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "alloc.h"
#include "check.h"
#include "proc.h"
#include "class.h"
#include "os.h"
#include "page.h"
#include "prof.h"
#include "segment.h"
#include "slab.h"
#include "tcache.h"
#include "thread.h"

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
   current one of the allocating thread's node and kind goes back (its
   descriptor no longer a slab's); the current one stays for the next
   samples of any thread. */
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
    nd_slab *now = nd_slab_current(tc->heap.node, false);
    for (size_t k = 0; k < ns; k++) {
        bool current = now != NULL && slabs[k]->start == (uint8_t *)now;
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
    /* Left: at most the current slab of the node's plain memory (the
       next samples', any thread's). */
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

/* A thread that allocates blocks[] of `size` bytes and waits, holding them,
   until let go (let_go_and_join). */
static pthread_t start_holder(size_t size)
{
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, alloc_and_wait, (void *)(uintptr_t)size) == 0, "a thread");
    pthread_mutex_lock(&hold_lock);
    while (hold_state != 1)
        pthread_cond_wait(&hold_cond, &hold_lock);
    pthread_mutex_unlock(&hold_lock);
    return t;
}

/* In a forked child: frees blocks[], exits with status 2 if a sample is
   left live. */
static void child_frees_every_block(void)
{
    for (int i = 0; i < COUNT; i++)
        nodal_free(blocks[i]);
    if (nd_prof_live_bytes() != 0)
        _exit(2);
}

/* Waits for child pid (want: its exit status 0), lets the holder t exit,
   and frees blocks[]. */
static void reap_let_go_and_free(pid_t pid, pthread_t t, const char *want)
{
    int st;
    waitpid(pid, &st, 0);
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child to %s (status %d)", want, st);
    pthread_mutex_lock(&hold_lock);
    hold_state = 2;
    pthread_cond_broadcast(&hold_cond);
    pthread_mutex_unlock(&hold_lock);
    pthread_join(t, NULL);
    for (int i = 0; i < COUNT; i++)
        nodal_free(blocks[i]);
}

/* fork() while another thread holds a slab (its cache's current one, and
   full ones whose cells live): in the child, which has no such thread,
   its cells free as any (their samples dropped) and the child allocates
   and samples on. */
static void a_forked_child_frees_the_cells_of_a_thread_it_lacks(void)
{
    start();
    pthread_t t = start_holder(64);
    nd_page *slabs[COUNT];
    size_t ns = slabs_of_samples(slabs);
    EXPECT(ns >= 2, "the thread's samples to fill more than one slab, %zu", ns);
    pid_t pid = fork();
    if (pid == 0) {
        child_frees_every_block();
        for (int i = 0; i < COUNT; i++)
            blocks[i] = nodal_malloc(64);
        if (sampled_of(blocks, COUNT, idx) == 0)
            _exit(3);
        _exit(0);
    }
    reap_let_go_and_free(pid, t, "free the cells and sample on");
}

/* The small or medium page p lies in; NULL if p is not in such a page. */
static nd_page *class_page_of(const void *p)
{
    nd_segment *s = nd_seg_of(p);
    return s != NULL && (s->kind == ND_SEG_SMALL || s->kind == ND_SEG_MEDIUM) ? nd_page_of(s, p) : NULL;
}

/* The kind of the pages of this thread's plain memory. */
static unsigned own_kind(void) { return nd_kind_of(false, nd_tls_tc->heap.node); }

/* A sampled request of a class above 1 KiB is its class's ordinary block,
   in a page of its class, not a block of the large pool: the page counts
   its live samples and shows ND_KIND_PROF while it has any (so every free
   of its blocks takes the slow path), its other blocks are freed without
   touching the profile, and the last sample freed gives the page its kind
   back. On main (3cc3791) a medium sample was a run of a run slab, or a
   large block of its own: memory of the large pool besides the class's. */
static void a_medium_sample_is_an_ordinary_block_of_its_class(void)
{
    /* Eight blocks of 8 KiB before profiling starts (not sampled), four of
       them freed into the bin: the four samples below are those. */
    enum { N = 8 };
    void *before[N];
    for (int i = 0; i < N; i++)
        before[i] = nodal_malloc(8000);
    for (int i = N - 1; i >= N / 2; i--)
        nodal_free(before[i]);
    start();
    nd_page *pages[N];
    for (int i = N / 2; i < N; i++) {
        void *p = nodal_malloc(8000);
        nd_page *pg = class_page_of(p);
        EXPECT(p != NULL && is_sampled(p), "request %d to be sampled", i);
        EXPECT(pg != NULL && pg->cls == nd_class_of(8000) && nodal_malloc_usable_size(p) == 8192,
               "a sample of 8,000 bytes to be a block of class 8192 in its class's page, usable %zu",
               nodal_malloc_usable_size(p));
        EXPECT(pg->kind == ND_KIND_PROF && (pg->prof_mask >> nd_page_block_index(pg, p) & 1),
               "its page to show its sample: kind %u, mask %#lx", pg->kind, (unsigned long)pg->prof_mask);
        before[i] = p;
        pages[i] = pg;
    }
    unsigned total = 0;
    for (int i = N / 2; i < N; i++) {
        bool seen = false;
        for (int j = N / 2; j < i; j++)
            seen |= pages[j] == pages[i];
        if (!seen)
            total += pages[i]->sampled;
    }
    EXPECT(total == N / 2, "the pages to count the %d samples, they count %u", N / 2, total);
    /* The blocks that are not samples: freed (slow path), no sample taken. */
    int64_t live = nd_prof_live_bytes();
    for (int i = 0; i < N / 2; i++) {
        nd_page *pg = class_page_of(before[i]);
        unsigned n = pg->sampled;
        nodal_free(before[i]);
        EXPECT(pg->sampled == n && nd_prof_live_bytes() == live, "a block that is not a sample to leave the samples");
    }
    for (int i = N / 2; i < N; i++) {
        memset(before[i], 'a', 8192);
        EXPECT(nodal_realloc(before[i], 7000) == before[i] && is_sampled(before[i]),
               "a sample shrunk within its class to stay, sampled");
        nodal_free(before[i]);
        EXPECT(!is_sampled(before[i]), "a freed sample to be dropped");
    }
    for (int i = N / 2; i < N; i++)
        EXPECT(pages[i]->sampled == 0 && pages[i]->prof_mask == 0 &&
               (!pages[i]->in_use || pages[i]->kind == own_kind()),
               "a page whose samples are freed to have its kind back: %u, %u samples", pages[i]->kind,
               pages[i]->sampled);
    EXPECT(nd_prof_live_bytes() == 0, "no live sample once all is freed, %ld bytes", (long)nd_prof_live_bytes());
    /* Every class above 1 KiB, and an aligned request. */
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        size_t size = nd_class_size[c];
        if (size <= ND_SLAB_CELL_MAX)
            continue;
        /* (A request of 1280 bytes is sampled with p = 1 - exp(-5): one in
           150 is not; the next is.) */
        void *p = nodal_malloc(size);
        for (int tries = 0; tries < 20 && !is_sampled(p); tries++) {
            nodal_free(p);
            p = nodal_malloc(size);
        }
        nd_page *pg = class_page_of(p);
        EXPECT(pg != NULL && pg->cls == c && pg->kind == ND_KIND_PROF && nodal_malloc_usable_size(p) == size,
               "a sample of class %zu to be a block of its class's page", size);
        nodal_free(p);
        EXPECT(!is_sampled(p) && pg->sampled == 0, "a freed sample of class %zu to be dropped", size);
    }
    void *q;
    EXPECT(nodal_posix_memalign(&q, 16384, 9000) == 0 && ((uintptr_t)q & 16383) == 0, "posix_memalign(16384)");
    EXPECT(class_page_of(q) != NULL && is_sampled(q), "the aligned sample to be a block of its class");
    nodal_free(q);
    EXPECT(nd_prof_live_bytes() == 0, "no live sample once all is freed, %ld bytes", (long)nd_prof_live_bytes());
}

/* A thread's medium samples outlive it: its pages are orphaned (kind
   ND_KIND_NONE) with their samples counted, and the main thread's frees
   drop them (adopting the pages); node-bound samples likewise, in bound
   memory. */
static void *alloc_medium(void *arg)
{
    size_t size = (size_t)(uintptr_t)arg;
    nodal_free(nodal_malloc(1));
    for (int i = 0; i < 200; i++)
        blocks[i] = nodal_malloc(size);
    for (int i = 200; i < 240; i++)
        blocks[i] = nodal_malloc_node(size, 0);
    return NULL;
}

static void medium_samples_outlive_their_thread_and_are_dropped_by_anothers_frees(void)
{
    start();
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, alloc_medium, (void *)(uintptr_t)3000) == 0, "a thread");
    pthread_join(t, NULL);
    size_t n = sampled_of(blocks, 240, idx);
    EXPECT(n >= 230, "the exited thread's requests of 3,000 bytes to be sampled, %zu of 240", n);
    for (size_t k = 0; k < n; k++) {
        nd_page *pg = class_page_of(blocks[idx[k]]);
        EXPECT(pg != NULL && pg->sampled > 0 && (pg->kind == ND_KIND_NONE || pg->kind == ND_KIND_PROF),
               "sample %zu to be counted by its page (kind %u, %u samples)", k, pg ? pg->kind : 0u,
               pg ? pg->sampled : 0u);
        EXPECT(idx[k] < 200 || nd_seg_of(blocks[idx[k]])->bound, "a node-bound sample to be bound memory");
    }
    for (int i = 0; i < 240; i++)
        nodal_free(blocks[i]);
    EXPECT(nd_prof_live_bytes() == 0, "no live sample once the main thread freed them, %ld bytes",
           (long)nd_prof_live_bytes());
    for (size_t k = 0; k < n; k++) {
        nd_page *pg = nd_page_of(nd_seg_base(blocks[idx[k]]), blocks[idx[k]]);
        EXPECT(pg->sampled == 0 && pg->prof_mask == 0 && pg->kind != ND_KIND_PROF,
               "page of sample %zu to count none once freed (kind %u, %u samples)", k, pg->kind, pg->sampled);
    }
}

/* fork() while another thread holds medium samples in its pages: the
   child, which has no such thread, frees them (its pages' counts go back
   to 0, their kinds with them) and samples on; so does the parent. */
static void a_forked_child_frees_the_medium_samples_of_a_thread_it_lacks(void)
{
    start();
    pthread_t t = start_holder(3000);
    size_t n = sampled_of(blocks, 400, idx);
    EXPECT(n >= 390 && class_page_of(blocks[idx[0]]) != NULL && class_page_of(blocks[idx[0]])->sampled > 0,
           "the thread's first 400 requests of 3,000 bytes to be samples in their class's pages, %zu are", n);
    pid_t pid = fork();
    if (pid == 0) {
        child_frees_every_block();
        for (int i = 0; i < COUNT; i++) {
            nd_page *pg = nd_page_of(nd_seg_base(blocks[i]), blocks[i]);
            if (pg->sampled != 0 || pg->prof_mask != 0 || pg->kind == ND_KIND_PROF)
                _exit(3);
        }
        for (int i = 0; i < 400; i++)
            blocks[i] = nodal_malloc(3000);
        if (sampled_of(blocks, 400, idx) < 390)
            _exit(4);
        _exit(0);
    }
    reap_let_go_and_free(pid, t, "free the samples and sample on");
    EXPECT(nd_prof_live_bytes() == 0, "no live sample once all is freed, %ld bytes", (long)nd_prof_live_bytes());
}

/* A medium sample freed twice aborts with "double free". */
static void a_medium_sample_freed_twice_aborts(void)
{
    start();
    char *p = nodal_malloc(8000);
    EXPECT(is_sampled(p) && class_page_of(p) != NULL, "a sample in its class's page");
    free_in_child_aborts(p, p, "double free");
    nodal_free(p);
}

/* Two threads take medium blocks, some sampled, and free them (their own
   and each other's, handed through shared slots) at once: samples are
   added to and dropped from the same pages by both threads while their
   owners free the rest, and every sample is dropped at the end, every
   page's count back at 0. (The debug build checks the pages' kinds and
   counts at every fill, flush and adoption.) */
#define SHARED_SLOTS 64
static void *shared_slot[SHARED_SLOTS];   /* atomic: blocks handed to whichever thread takes them */
static unsigned long medium_samples;      /* atomic: samples in pages of their class */
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
        nd_page *pg = class_page_of(p);
        if (pg != NULL && (__atomic_load_n(&pg->prof_mask, __ATOMIC_RELAXED) >> nd_page_block_index(pg, p) & 1))
            __atomic_add_fetch(&medium_samples, 1, __ATOMIC_RELAXED);
        memset(p, (unsigned char)(uintptr_t)p, nodal_malloc_usable_size(p));
        mine[slot] = p;
    }
    for (int k = 0; k < 8; k++)
        nodal_free(mine[k]);
    return NULL;
}

static void medium_samples_taken_and_freed_by_two_threads_are_all_dropped(void)
{
    EXPECT(nd_prof_start(16384), "profiling to start");   /* about one request in three sampled */
    nodal_free(nodal_malloc(1));
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        EXPECT(pthread_create(&t[i], NULL, cut_and_free, (void *)(uintptr_t)i) == 0, "a thread");
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    void *left[SHARED_SLOTS];
    for (int i = 0; i < SHARED_SLOTS; i++) {
        left[i] = shared_slot[i];
        nodal_free(shared_slot[i]);
    }
    EXPECT(medium_samples > 1000, "samples in their class's pages, got %lu of %lu", medium_samples,
           (unsigned long)nd_prof_samples());
    EXPECT(nd_prof_live_bytes() == 0, "no live sample once all is freed, %ld bytes", (long)nd_prof_live_bytes());
    for (int i = 0; i < SHARED_SLOTS; i++) {
        nd_page *pg = left[i] != NULL ? class_page_of(left[i]) : NULL;
        EXPECT(pg == NULL || (pg->sampled == 0 && pg->kind != ND_KIND_PROF), "a page to count no sample at the end");
    }
}

/* A workload of medium requests, every one sampled, with at most 12
   blocks of 1-32 KiB live at a time: run once before profiling starts
   and once after, the second run makes no more than 256 KiB more of the
   process resident: the profile's own first pages, and the pages of the
   20-32 KiB classes the first run did without (it borrowed blocks of the
   classes above where its own pages would have faulted memory in,
   tcache.c, which no request does under prof=1). 168-196 KiB (4 runs,
   h51s), 28-48 with borrowing off; 160 KiB was the bound before
   borrowing. On main (3cc3791) the samples were runs of up to four run
   slabs of 64 KiB and large blocks of their own, all resident besides
   the classes' pages: 500 KiB and more. */
static void medium_samples_take_no_resident_memory_of_their_own(void)
{
#ifdef ND_TEST_SANITIZER
    SKIP("a sanitizer's shadow memory and allocator are resident too: the process's RSS is not nodal's");
#endif
    uint64_t x = 88172645463325252ull;
    size_t grown = 0;
    for (int round = 0; round < 2; round++) {
        if (round == 1)
            start();
        size_t before = nd_rss_bytes();
        void *live[12] = { 0 };
        for (int i = 0; i < 20000; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            unsigned slot = (unsigned)(x >> 32) % 12;
            nodal_free(live[slot]);
            live[slot] = nodal_malloc(1100 + (size_t)(x % 31668));
            memset(live[slot], 1, 64);
            ((char *)live[slot])[nodal_malloc_usable_size(live[slot]) - 1] = 1;
        }
        for (int k = 0; k < 12; k++)
            nodal_free(live[k]);
        grown = nd_rss_bytes() - before;
        if (round == 0)
            x = 88172645463325252ull;   /* the same requests again */
    }
    EXPECT(nd_prof_samples() >= 19000, "every request to be sampled, %lu", (unsigned long)nd_prof_samples());
    EXPECT(grown <= 256 * 1024, "the sampled run to make at most 256 KiB more resident, it made %zu KiB",
           grown / 1024);
}

/* A thread whose samples die as it goes (two 1,000-byte ones live at a
   time; three 1 KiB cells to a slab) goes on in its slab, its freed cells
   taken again, rather than a new slab every three samples. */
static void a_slab_takes_its_freed_cells_again(void)
{
    start();
    void *live[2] = { 0 };
    nd_slab *first = NULL;
    unsigned changes = 0;
    for (int i = 0; i < 600; i++) {
        nodal_free(live[i % 2]);
        live[i % 2] = nodal_malloc(1000);
        nd_slab *slab = nd_slab_current(nd_tls_tc->heap.node, false);
        if (first == NULL)
            first = slab;
        else
            changes += slab != first;
        first = slab != NULL ? slab : first;
    }
    EXPECT(nd_prof_samples() >= 500, "most of 600 requests of 1,000 bytes sampled at rate %d, %lu", RATE,
           (unsigned long)nd_prof_samples());
    EXPECT(changes == 0, "the thread's samples to stay in one slab, it moved to another %u times", changes);
    nodal_free(live[0]);
    nodal_free(live[1]);
    EXPECT(nd_prof_live_bytes() == 0, "no live sample left, %ld bytes", (long)nd_prof_live_bytes());
}

static void *dump_numbered(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)nodal_profile_dump(NULL);
}

/* A dump (its file names, its copy of the memory map, its formatting)
   runs within a thread stack of 16 KiB: the exit dump's stack pages are
   the main thread's resident memory (it took 21 KiB). In a child, so
   that an overflow is a failed case, not a crash of the runner. */
static void a_dump_runs_on_a_16_kib_thread_stack(void)
{
    start();
    for (int i = 0; i < COUNT; i++)
        blocks[i] = nodal_malloc(64);
    pid_t pid = fork();
    EXPECT(pid >= 0, "fork");
    if (pid == 0) {
        pthread_attr_t a;
        pthread_t t;
        void *r = (void *)1;
        if (pthread_attr_init(&a) != 0 || pthread_attr_setstacksize(&a, 16384) != 0 ||
            pthread_create(&t, &a, dump_numbered, NULL) != 0 || pthread_join(t, &r) != 0)
            _exit(3);
        _exit(r == NULL ? 0 : 2);
    }
    int status = 0;
    EXPECT(waitpid(pid, &status, 0) == pid, "waitpid");
    EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the dump on a 16 KiB stack to succeed: %s %d",
           WIFSIGNALED(status) ? "signal" : "exit status", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    for (int i = 0; i < COUNT; i++)
        nodal_free(blocks[i]);
}


/* ---- statistics (issue 21) ---------------------------------------------------- */

/* A field of the JSON report's row of the class of `size` bytes (stats.c:
   {"size":N,... per class), or of the process (its first "name":); 0 for
   a field it does not have. */
static char stats_json[1 << 17];
static unsigned long json_class_field(size_t size, const char *field)
{
    char key[64];
    snprintf(key, sizeof key, "{\"size\":%zu,", size);
    const char *p = strstr(stats_json, key);
    EXPECT(p != NULL, "the JSON report to have a row for class %zu", size);
    const char *end = strchr(p, '}');
    snprintf(key, sizeof key, "\"%s\":", field);
    const char *f = strstr(p, key);
    return f != NULL && f < end ? strtoul(f + strlen(key), NULL, 10) : 0;   /* (0: no such field) */
}
static unsigned long json_field(const char *field)
{
    char key[64];
    snprintf(key, sizeof key, "\"%s\":", field);
    const char *f = strstr(stats_json, key);
    return f != NULL ? strtoul(f + strlen(key), NULL, 10) : 0;
}
static void stats_take(void)
{
    size_t len = nodal_stats_json(stats_json, sizeof stats_json);
    EXPECT(len > 0 && len < sizeof stats_json, "the JSON report to fit");
}

enum { STAT_N = 2000, STAT_PLAIN = 48, STAT_BOUND = 160 };
static void *stat_blocks[2 * STAT_N];
static void *alloc_plain_and_bound(void *arg)
{
    (void)arg;
    for (int i = 0; i < STAT_N; i++)
        stat_blocks[i] = nodal_malloc(STAT_PLAIN);
    for (int i = STAT_N; i < 2 * STAT_N; i++)
        stat_blocks[i] = nodal_malloc_node(STAT_BOUND, 0);
    return NULL;
}

/* Sampled cells are blocks of their classes in the statistics (the
   program's bytes), their slabs the profile's overhead (prof_slab_bytes):
   a thread allocates plain and node-bound small blocks, many of them cells
   (one sample per 256 bytes), and exits; its class rows count every one,
   allocated grows by their class sizes alone; the main thread frees them
   and allocated is back where it was. (On main before this, the cells were
   missing from their classes and their slabs were counted as large blocks
   the program held: allocated stayed 4,096 bytes up.) */
static void sampled_cells_count_as_blocks_of_their_class(void)
{
    start();
    nodal_collect(1);
    size_t plain = nd_class_size[nd_class_of(STAT_PLAIN)], bound = nd_class_size[nd_class_of(STAT_BOUND)];
    EXPECT(plain == STAT_PLAIN && bound == STAT_BOUND, "classes of exactly %d and %d bytes", STAT_PLAIN, STAT_BOUND);
    nodal_memory_info before, live, after;
    EXPECT(nodal_memory_info_get(&before) == 0, "nodal_memory_info_get");
    stats_take();
    unsigned long req_p = json_class_field(plain, "requests"), req_b = json_class_field(bound, "requests");
    unsigned long fr_p = json_class_field(plain, "frees"), fr_b = json_class_field(bound, "frees");
    unsigned long cells_p = json_class_field(plain, "sampled_cells");
    unsigned long large = json_field("large_allocs");

    pthread_t t;
    EXPECT(pthread_create(&t, NULL, alloc_plain_and_bound, NULL) == 0, "a thread");
    pthread_join(t, NULL);
    size_t n = sampled_of(stat_blocks, STAT_N, idx), cells = 0;
    for (size_t k = 0; k < n; k++) {
        nd_page *pg = large_page_of(stat_blocks[idx[k]]);
        cells += pg != NULL && pg->sampled == ND_PROF_SLAB;
    }
    size_t nb = sampled_of(stat_blocks + STAT_N, STAT_N, idx);
    EXPECT(cells >= 100 && nb >= 100, "cells among the blocks: %zu of %zu plain samples, %zu bound samples", cells, n, nb);
    EXPECT(nodal_memory_info_get(&live) == 0, "nodal_memory_info_get");
    stats_take();
    EXPECT(json_class_field(plain, "requests") - req_p == STAT_N && json_class_field(bound, "requests") - req_b == STAT_N,
           "every block to be counted in its class, cells too: %lu of %d in class %zu, %lu in class %zu",
           json_class_field(plain, "requests") - req_p, STAT_N, plain, json_class_field(bound, "requests") - req_b, bound);
    EXPECT(json_class_field(plain, "sampled_cells") - cells_p >= cells,
           "the %zu cells to be counted as sampled_cells of class %zu, %lu are", cells, plain,
           json_class_field(plain, "sampled_cells") - cells_p);
    EXPECT(json_field("large_allocs") == large, "no large block counted for the slabs: %lu, was %lu",
           json_field("large_allocs"), large);
    EXPECT(json_field("prof_slab_bytes") >= nd_os_page_size(), "the slabs to be the profile's, %lu bytes",
           json_field("prof_slab_bytes"));
    EXPECT(live.allocated - before.allocated == (size_t)STAT_N * (plain + bound),
           "allocated to grow by the blocks' class sizes, %zu, it grew by %zu",
           (size_t)STAT_N * (plain + bound), live.allocated - before.allocated);
    for (int i = 0; i < 2 * STAT_N; i++)
        nodal_free(stat_blocks[i]);
    EXPECT(nodal_memory_info_get(&after) == 0, "nodal_memory_info_get");
    stats_take();
    EXPECT(json_class_field(plain, "frees") - fr_p == STAT_N && json_class_field(bound, "frees") - fr_b == STAT_N,
           "every free to be counted in its class, cells too: %lu and %lu of %d",
           json_class_field(plain, "frees") - fr_p, json_class_field(bound, "frees") - fr_b, STAT_N);
    EXPECT(after.allocated == before.allocated, "allocated to be back at %zu once every block is freed, it is %zu",
           before.allocated, after.allocated);
}

/* The profile's own tables are in the statistics (prof_table_bytes):
   zero before it starts; once a thread's few thousand requests are
   sampled (one sample per 256 bytes), the resident pages of its tables
   of sites and live samples and of the unwinder's cache, whole OS pages,
   at least the first page of the sites and of the live samples, and a
   few pages only (their first tables; the sites handed out in order). On
   main 4c6e842 the statistic did not exist (the tables were in no
   statistic: bench/runner/profpages.py placed them by hand). */
static void the_profiles_tables_are_counted_in_prof_table_bytes(void)
{
    stats_take();
    EXPECT(json_field("prof_table_bytes") == 0 && strstr(stats_json, "\"prof_table_bytes\":") != NULL,
           "prof_table_bytes to be 0 before the profile starts, it is %lu", json_field("prof_table_bytes"));
    start();
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, alloc_plain_and_bound, NULL) == 0, "a thread");
    pthread_join(t, NULL);
    stats_take();
    unsigned long bytes = json_field("prof_table_bytes"), ps = (unsigned long)nd_os_page_size();
    EXPECT(bytes % ps == 0 && bytes >= 2 * ps && bytes <= 64 * ps,
           "the tables' resident bytes to be whole pages, 2 to 64 of them: %lu", bytes);
    for (int i = 0; i < 2 * STAT_N; i++)
        nodal_free(stat_blocks[i]);
    stats_take();
    EXPECT(json_field("prof_table_bytes") >= bytes, "the tables' pages to stay once written: %lu, was %lu",
           json_field("prof_table_bytes"), bytes);
}

/* A thread's requests of 64 B until one of them is a cell (sampled), the
   cell's slab page in *arg; the blocks stay live. */
static void *alloc_until_a_cell(void *arg)
{
    nd_page **out = arg;
    *out = NULL;
    for (int i = 0; i < 1000 && *out == NULL; i++) {
        void *p = nodal_malloc(64);
        nd_page *pg = is_sampled(p) ? large_page_of(p) : NULL;
        if (pg != NULL && pg->sampled == ND_PROF_SLAB)
            *out = pg;
    }
    return NULL;
}

/* The small samples of two threads (of one node's plain memory) take cells
   of one slab, not a slab (an OS page) each: the second thread's first
   cell is in the slab the first thread's cell is in, which has room. On
   main 4c6e842 each thread cache had a slab of its own (batchq -w 8: 8
   producers, 8 pages). */
static void two_threads_small_samples_share_one_slab(void)
{
    start();
    nd_page *a, *b;
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, alloc_until_a_cell, &a) == 0, "a thread");
    pthread_join(t, NULL);
    EXPECT(pthread_create(&t, NULL, alloc_until_a_cell, &b) == 0, "a thread");
    pthread_join(t, NULL);
    EXPECT(a != NULL && b != NULL, "each thread to have a sampled cell");
    EXPECT(a == b, "the two threads' cells to be in one slab, they are in %p and %p", (void *)a->start,
           (void *)b->start);
    EXPECT(nd_slab_current(nd_tls_tc->heap.node, false) == (nd_slab *)a->start,
           "that slab to be the node's current one");
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
    ND_CASE(a_medium_sample_is_an_ordinary_block_of_its_class),
    ND_CASE(medium_samples_outlive_their_thread_and_are_dropped_by_anothers_frees),
    ND_CASE(a_forked_child_frees_the_medium_samples_of_a_thread_it_lacks),
    ND_CASE(a_medium_sample_freed_twice_aborts),
    ND_CASE(medium_samples_taken_and_freed_by_two_threads_are_all_dropped),
    ND_CASE(medium_samples_take_no_resident_memory_of_their_own),
    ND_CASE(a_slab_takes_its_freed_cells_again),
    ND_CASE(a_dump_runs_on_a_16_kib_thread_stack),
    ND_CASE(sampled_cells_count_as_blocks_of_their_class),
    ND_CASE(the_profiles_tables_are_counted_in_prof_table_bytes),
    ND_CASE(two_threads_small_samples_share_one_slab),
};
ND_MAIN(cases)
