/*
 * plain_malloc_stays_unbound - using the node API never changes where plain
 * malloc() memory goes. In threads pinned to every usable CPU (so on every
 * CPU node), each thread first allocates and frees node blocks for every
 * node with memory, of every size class, then allocates plain blocks of
 * the same sizes (and large and huge ones) with malloc, calloc, realloc,
 * aligned_alloc and posix_memalign, writes them, and the kernel must say:
 *   - the thread's own policy is still the default one (before and after);
 *   - every plain block is under the default policy (get_mempolicy with
 *     MPOL_F_ADDR), never bound to a node;
 *   - every OS page of every plain block is on the node of the CPU that
 *     wrote it first (first-touch placement, checked with move_pages).
 * This is the trap where a thread's arena choice for node-typed requests
 * leaked into plain malloc.
 *
 * Plain memory is checked on fresh pages: the threads start together at
 * process start-up and no thread frees plain memory before every thread
 * has checked its own (a barrier), so no page could have been first
 * touched elsewhere. A thread on a CPU node
 * without memory checks only the policy.
 *
 * The kernel's automatic NUMA balancing migrates default-policy pages
 * toward the CPUs that touch them after their first touch, so the node
 * check measures nodal only with it off: the VM plan (run-vm.sh) runs this
 * program with kernel.numa_balancing=0 (--expect-balancing 0), and again
 * with balancing on and --no-first-touch-check, where every check but the
 * node of the pages still holds (the policies, the contents). Nothing
 * about nodal is checked less: only the kernel's moves are kept out.
 *
 *   plain_malloc_stays_unbound [-t THREADS_PER_CPU] [--no-first-touch-check] [-v]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nodal.h"
#include "placement.h"

typedef struct worker {
    int idx, cpu, node;
    pthread_t tid;
    unsigned long plain_blocks, changed_blocks;
    pt_batch *batch;
} worker;

static pthread_barrier_t barrier;
static size_t classes[256], large[32];
static int ncls, nlarge;
static int first_touch_check = 1;   /* --no-first-touch-check: 0 */

static void check_thread_policy(const worker *w, const char *when)
{
    int mode;
    unsigned long mask[PT_MASK_LONGS];
    char pol[128];
    if (pt_thread_policy(&mode, mask) != 0)
        pt_fail("thread %d: get_mempolicy (thread policy) failed: %s", w->idx, strerror(errno));
    else if (mode != PT_MPOL_DEFAULT)
        pt_fail("thread %d on CPU %d %s: thread policy is %s; expected default (nodal never "
                "changes a thread's policy)", w->idx, w->cpu, when,
                pt_policy_str(mode, mask, pol, sizeof pol));
}

/* Each thread writes its own byte, so lost or shared memory shows. */
static unsigned char fill_byte(const worker *w)
{
    return (unsigned char)(0x40 + w->idx);
}

/* Node API for every node: caches of every class get filled and emptied. */
static void use_node_api(worker *w)
{
    const pt_topo *t = pt_topology();
    void **keep = calloc((size_t)ncls * t->nmem, sizeof *keep);
    int n = 0;
    for (int s = 0; s < ncls; s++)
        for (int k = 0; k < t->nmem; k++) {
            void *a = nodal_malloc_node(classes[s], t->mem[k]);
            void *b = nodal_calloc_node(1, classes[s], t->mem[k]);
            if (!a || !b) {
                pt_fail("thread %d: node %d block of %zu B: NULL (%s); expected a block",
                        w->idx, t->mem[k], classes[s], strerror(errno));
            }
            if (a)
                memset(a, 1, classes[s]);
            free(b);              /* freed at once: sits in this thread's cache */
            keep[n++] = a;        /* freed later: the slow path too */
        }
    void *big = nodal_malloc_node(3 << 20, t->mem[w->idx % t->nmem]);
    free(big);
    for (int i = 0; i < n; i += 2)
        free(keep[i]);
    for (int i = 1; i < n; i += 2)
        free(keep[i]);
    free(keep);
}

/* Plain blocks of one thread, kept until checked. */
typedef struct plain_set {
    void **p;
    size_t *size;
    int n;
} plain_set;

/* Writes a new plain block, checks its policy and queues its pages. */
static void keep_plain(worker *w, plain_set *set, void *p, size_t size, const char *api)
{
    char what[96];
    if (!p) {
        pt_fail("thread %d: %s(%zu) returned NULL; expected a block", w->idx, api, size);
        return;
    }
    memset(p, fill_byte(w), size);
    w->plain_blocks++;
    snprintf(what, sizeof what, "%s block of thread %d on CPU %d", api, w->idx, w->cpu);
    pt_expect_default_policy(p, size, what);
    if (w->node >= 0 && first_touch_check)
        pt_batch_add(w->batch, p, size, w->node, "plain block (first touch by a CPU of the "
                     "expected node)", (unsigned long)w->idx);
    set->p[set->n] = p;
    set->size[set->n++] = size;
}

/* Still what this thread wrote? (Memory purged while live reads as 0.) */
static void check_contents(worker *w, const plain_set *set)
{
    for (int i = 0; i < set->n; i++) {
        const unsigned char *b = set->p[i];
        size_t bad = 0, first = 0;
        for (size_t k = 0; k < set->size[i]; k++)
            if (b[k] != fill_byte(w) && bad++ == 0)
                first = k;
        w->changed_blocks += bad != 0;
        if (bad)
            pt_fail("thread %d: plain block %p (%zu B): %zu bytes changed after it was "
                    "written (the first at +%zu is now 0x%02x); expected it to keep its "
                    "contents", w->idx, (const void *)b, set->size[i], bad, first, b[first]);
    }
}

static void *run(void *arg)
{
    worker *w = arg;
    int node;
    if (pt_pin(w->cpu) != 0)
        pt_die("thread %d: cannot pin to CPU %d: %s", w->idx, w->cpu, strerror(errno));
    w->batch = pt_batch_new();
    node = pt_cpu_node();
    w->node = pt_node_get(node) && pt_node_get(node)->has_memory ? node : -1;
    pthread_barrier_wait(&barrier);
    check_thread_policy(w, "before using the node API");
    use_node_api(w);
    check_thread_policy(w, "after using the node API");

    size_t cap = (size_t)ncls * 3 + (size_t)nlarge + 8;
    plain_set set = { calloc(cap, sizeof(void *)), calloc(cap, sizeof(size_t)), 0 };
    if (!set.p || !set.size)
        pt_die("out of memory");
    for (int s = 0; s < ncls; s++) {
        size_t al = classes[s] >= 64 ? 64 : 16, asz = (classes[s] + al - 1) & ~(al - 1);
        keep_plain(w, &set, malloc(classes[s]), classes[s], "malloc");
        keep_plain(w, &set, calloc(1, classes[s]), classes[s], "calloc");
        keep_plain(w, &set, aligned_alloc(al, asz), asz, "aligned_alloc");
    }
    for (int s = 0; s < nlarge; s++)
        keep_plain(w, &set, malloc(large[s]), large[s], "malloc");
    void *pm = NULL;
    if (posix_memalign(&pm, 4096, 100000) != 0)
        pm = NULL;
    keep_plain(w, &set, pm, 100000, "posix_memalign");
    void *r = realloc(NULL, 5000);
    keep_plain(w, &set, r ? realloc(r, 70000) : NULL, 70000, "realloc");
    keep_plain(w, &set, malloc(12 << 20), 12 << 20, "malloc (huge)");
    pt_batch_flush(w->batch);
    check_contents(w, &set);
    /* Nothing plain is freed until every thread has checked its blocks:
       memory a thread on another node wrote and freed may be handed out
       again here (as by any allocator), and would then be on that node. */
    pthread_barrier_wait(&barrier);
    for (int i = 0; i < set.n; i++)
        free(set.p[i]);
    free(set.p);
    free(set.size);
    check_thread_policy(w, "at the end");
    return NULL;
}

int main(int argc, char **argv)
{
    int per_cpu = 2, i;
    argc = pt_begin(argc, argv, "plain_malloc_stays_unbound",
                 "plain malloc memory stays unbound and first-touch local in threads that use "
                 "the node API");
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc)
            per_cpu = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-first-touch-check"))
            first_touch_check = 0;
        else
            pt_die("usage: %s [-t THREADS_PER_CPU] [--no-first-touch-check] [-v]", argv[0]);
    }
    ncls = pt_class_sizes(classes, 256);
    nlarge = pt_large_sizes(large, 32);
    const pt_topo *t = pt_topology();
    int ncpus = 0;
    for (int c = 0; c < t->ncpunode; c++)
        ncpus += pt_node_get(t->cpunode[c])->ncpus;
    int nthreads = ncpus * per_cpu;
    if (nthreads > 64)
        nthreads = 64;  /* enough to cover a big machine's nodes */
    worker *w = calloc((size_t)nthreads, sizeof *w);
    pthread_barrier_init(&barrier, NULL, (unsigned)nthreads);
    /* The main thread is not pinned: memory it wrote and freed while
       setting up (on whatever CPU it ran) could be handed to a worker
       still resident where main wrote it. Give it all back to the OS
       first, so that every page a worker gets is touched first by it. */
    nodal_collect(1);
    for (i = 0; i < nthreads; i++) {
        w[i].idx = i;
        w[i].cpu = pt_spread_cpu(i, NULL);
    }
    for (i = 0; i < nthreads; i++)
        if (pthread_create(&w[i].tid, NULL, run, &w[i]) != 0)
            pt_die("pthread_create failed");
    unsigned long blocks = 0, pages = 0, bad = 0, changed = 0;
    for (i = 0; i < nthreads; i++) {
        pthread_join(w[i].tid, NULL);
        blocks += w[i].plain_blocks;
        pages += pt_batch_pages(w[i].batch);
        bad += pt_batch_bad_pages(w[i].batch);
        changed += w[i].changed_blocks;
        if (pt_verbose)
            pt_info("thread %d: CPU %d, node %d", i, w[i].cpu, w[i].node);
        pt_batch_free(w[i].batch);
    }
    pt_info("%d threads over %d CPU node(s): %lu plain blocks, %lu OS pages checked, %lu not "
            "on the writing CPU's node%s; %lu blocks with changed contents", nthreads,
            t->ncpunode, blocks, pages, bad, first_touch_check ? "" : " (not asked: --no-first-touch-check)",
            changed);
    return pt_end();
}
