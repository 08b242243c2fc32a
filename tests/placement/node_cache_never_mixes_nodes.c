/*
 * node_cache_never_mixes_nodes - a thread cache never hands a node-k request
 * a block of another node (nor a plain one), and never hands plain malloc a
 * node block. This is the bug of the allocator nodal replaces: caches kept
 * per size class only, so "200 of 4096 node-1 allocations landed on node 0".
 *
 * Several threads, pinned over the CPU nodes, make 4096 node-B allocations
 * in all (B = the second node with memory), cycling through every size
 * class; before each one, the same thread has just allocated a node-A block
 * of that class (A = the first node), freed older node-A blocks of its own
 * and of other threads, and malloc'ed and freed a plain block of that class
 * - so its caches hold exactly the blocks a mixed-up cache would hand out.
 * Node-B blocks are freed again later, so node-A requests meet them too.
 * Every block is checked right after allocation: node blocks page by page
 * with move_pages plus their node policy, plain blocks for the default
 * policy. The result line reads "N of 4096 node-B blocks off node B".
 *
 * On a machine with one node, A = B = 0: the node-0 blocks and plain blocks
 * are then told apart by their policy, which still catches a cache that
 * mixes node and plain memory.
 *
 *   node_cache_never_mixes_nodes [-t THREADS] [-n B_ALLOCATIONS] [-v]
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

#define RING 32          /* node-A blocks a thread keeps before freeing */
#define XCHG 64          /* node-A blocks passed between threads */

typedef struct worker {
    int idx, cpu;
    pthread_t tid;
    int allocs_b;
    pt_batch *ba, *bb;
    unsigned long plain_bad;
} worker;

static int node_a, node_b, nthreads = 4, total_b = 4096;
static size_t classes[256];
static int ncls;
static pthread_barrier_t barrier;
static pthread_mutex_t xlock = PTHREAD_MUTEX_INITIALIZER;
static void *xchg[XCHG];

/* Puts p into the exchange and returns what was in its slot (to free). */
static void *exchange(void *p, unsigned slot)
{
    pthread_mutex_lock(&xlock);
    void *old = xchg[slot % XCHG];
    xchg[slot % XCHG] = p;
    pthread_mutex_unlock(&xlock);
    return old;
}

static void *run(void *arg)
{
    worker *w = arg;
    void *ring[RING] = { 0 }, *held_b[4] = { 0 };
    unsigned long before = pt_failures();
    if (pt_pin(w->cpu) != 0)
        pt_die("thread %d: cannot pin to CPU %d: %s", w->idx, w->cpu, strerror(errno));
    w->ba = pt_batch_new();
    w->bb = pt_batch_new();
    pthread_barrier_wait(&barrier);
    for (int i = 0; i < w->allocs_b; i++) {
        size_t c = classes[((size_t)i * 5 + (size_t)w->idx * 17) % (size_t)ncls];

        /* 1. A node-A block of this class; the one it displaces from the
              ring (allocated and checked earlier) is freed here or, every
              4th time, by another thread via the exchange. */
        void *a = nodal_malloc_node(c, node_a);
        if (!a) {
            pt_fail("thread %d: nodal_malloc_node(%zu, %d) returned NULL (%s); expected a "
                    "block", w->idx, c, node_a, strerror(errno));
        } else {
            pt_touch(a, c, 0xa);
            pt_expect_node_policy(a, c, node_a, "node-A block");
            pt_batch_add(w->ba, a, c, node_a, "node-A block", (unsigned long)i);
        }
        void *old = ring[i % RING];
        ring[i % RING] = a;
        if (old && i % 4 == 0)
            old = exchange(old, (unsigned)(i + w->idx * 7));
        free(old);

        /* 2. A plain block of this class, malloc'ed and freed. */
        void *q = malloc(c);
        if (q) {
            pt_touch(q, c, 0xc);
            if (!pt_expect_default_policy(q, c, "plain block malloc'ed between node requests"))
                w->plain_bad++;
        }
        free(q);

        /* 3. The node-B request: its cache for this class has just seen
              node-A and plain blocks of the same size come and go. */
        void *b = nodal_malloc_node(c, node_b);
        if (!b) {
            pt_fail("thread %d: nodal_malloc_node(%zu, %d) returned NULL (%s); expected a "
                    "block", w->idx, c, node_b, strerror(errno));
        } else {
            pt_touch(b, c, 0xb);
            pt_expect_node_policy(b, c, node_b, "node-B block");
            pt_batch_add(w->bb, b, c, node_b, "node-B block", (unsigned long)i);
        }
        /* ask the kernel before anything allocated in this round is freed */
        pt_batch_flush(w->ba);
        pt_batch_flush(w->bb);

        /* 4. Node-B blocks go back too, a few iterations later. */
        free(held_b[i % 4]);
        held_b[i % 4] = b;
    }
    for (int k = 0; k < 4; k++)
        free(held_b[k]);
    for (int k = 0; k < RING; k++)
        free(ring[k]);
    if (pt_verbose)
        pt_info("thread %d on CPU %d: %d node-B requests, %lu violations", w->idx, w->cpu,
                w->allocs_b, pt_failures() - before);
    return NULL;
}

int main(int argc, char **argv)
{
    int i;
    argc = pt_begin(argc, argv, "node_cache_never_mixes_nodes",
                     "a node-k request is never served from another node's or plain memory, "
                     "whatever the thread's caches hold");
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc)
            nthreads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc)
            total_b = atoi(argv[++i]);
        else
            pt_die("usage: %s [-t THREADS] [-n B_ALLOCATIONS] [-v]", argv[0]);
    }
    if (nthreads < 1 || total_b < nthreads)
        pt_die("need THREADS >= 1 and B_ALLOCATIONS >= THREADS");
    const pt_topo *t = pt_topology();
    ncls = pt_class_sizes(classes, 256);
    node_a = t->mem[0];
    node_b = t->nmem > 1 ? t->mem[1] : t->mem[0];
    if (node_a == node_b)
        pt_info("one node with memory: node-%d blocks are told from plain blocks by their "
                "policy only", node_a);
    pt_info("node A = %d, node B = %d; %d threads, %d node-B requests over %d class sizes",
            node_a, node_b, nthreads, total_b, ncls);

    worker *w = calloc((size_t)nthreads, sizeof *w);
    pthread_barrier_init(&barrier, NULL, (unsigned)nthreads);
    for (i = 0; i < nthreads; i++) {
        w[i].idx = i;
        w[i].cpu = pt_spread_cpu(i, NULL);
        w[i].allocs_b = total_b / nthreads + (i < total_b % nthreads);
        if (pthread_create(&w[i].tid, NULL, run, &w[i]) != 0)
            pt_die("pthread_create failed");
    }
    size_t b_bad = 0, a_bad = 0, b_pages = 0, a_pages = 0;
    unsigned long plain_bad = 0;
    for (i = 0; i < nthreads; i++) {
        pthread_join(w[i].tid, NULL);
        b_bad += pt_batch_bad_blocks(w[i].bb);
        a_bad += pt_batch_bad_blocks(w[i].ba);
        b_pages += pt_batch_pages(w[i].bb);
        a_pages += pt_batch_pages(w[i].ba);
        plain_bad += w[i].plain_bad;
        pt_batch_free(w[i].ba);
        pt_batch_free(w[i].bb);
    }
    for (i = 0; i < XCHG; i++)
        free(xchg[i]);
    pt_info("%zu of %d node-%d blocks off node %d (%zu OS pages checked); %zu of %d node-%d "
            "blocks off node %d (%zu OS pages checked); %lu plain blocks under a non-default "
            "policy", b_bad, total_b, node_b, node_b, b_pages, a_bad, total_b, node_a, node_a,
            a_pages, plain_bad);
    return pt_end();
}
