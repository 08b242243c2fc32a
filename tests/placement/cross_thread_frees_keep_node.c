/*
 * cross_thread_frees_keep_node - with 8 threads pinned over the CPU nodes,
 * each allocating for every node with memory and freeing blocks other
 * threads allocated, no block is ever off its node: at least 1,000,000 node
 * blocks in all, every one of them checked (every OS page with move_pages,
 * its policy with get_mempolicy, its contents for corruption) by the thread
 * that frees it, one round after it was allocated.
 *
 * Rounds are double-buffered: in round r thread i allocates a batch into
 * its buffer r%2 while it checks and frees the batch that thread
 * (i+1+r) mod T allocated in round r-1, so allocations and remote frees of
 * the same size classes and nodes overlap in time. Every round every thread
 * covers all size classes; the rest of a batch is mostly small, as in real
 * programs. One block in 16 is a plain malloc() block, which must stay
 * under the default policy (plain memory is never bound).
 *
 *   cross_thread_frees_keep_node [-t THREADS] [-n BLOCKS] [-b PER_ROUND] [-v]
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

typedef struct blk {
    unsigned char *p;
    size_t size;
    uint64_t tag;    /* written at the start of the block */
    int node;        /* -1: plain malloc */
} blk;

typedef struct worker {
    int idx, cpu, cpu_node;
    pthread_t tid;
    blk *buf[2];
    unsigned long node_blocks, plain_blocks, corrupt, policy_checks;
    pt_batch *batch;
    double alloc_s, check_s;
} worker;

static int nthreads = 8, per_round = 2048, rounds;
static long total_wanted = 1000000;
static worker *workers;
static pthread_barrier_t barrier;
static size_t classes[256];
static int ncls;

static size_t pick_size(uint64_t *rng, int j, int round, int idx)
{
    if (j < ncls)
        return classes[(j + round + idx) % ncls];   /* every class, every round */
    uint64_t r = pt_rand(rng) % 1000;
    if (r < 900)
        return 1 + pt_rand(rng) % 1024;
    if (r < 990)
        return 1024 + pt_rand(rng) % (15 << 10);
    return (16 << 10) + pt_rand(rng) % (112 << 10);
}

static void write_block(blk *b)
{
    pt_touch(b->p, b->size, (unsigned char)b->tag);
    if (b->size > sizeof b->tag)
        memcpy(b->p, &b->tag, sizeof b->tag);
}

static int block_intact(const blk *b)
{
    uint64_t t;
    if (b->size > sizeof t) {
        memcpy(&t, b->p, sizeof t);
        if (t != b->tag)
            return 0;
    } else if (b->p[0] != (unsigned char)b->tag) {
        return 0;
    }
    return b->p[b->size - 1] == (unsigned char)b->tag;
}

static void allocate_batch(worker *w, int round)
{
    const pt_topo *t = pt_topology();
    uint64_t rng = (uint64_t)w->idx * 1000003u + (uint64_t)round;
    blk *v = w->buf[round & 1];
    for (int j = 0; j < per_round; j++) {
        blk *b = &v[j];
        b->size = pick_size(&rng, j, round, w->idx);
        b->tag = ((uint64_t)(w->idx + 1) << 48) | ((uint64_t)round << 24) | (uint64_t)j;
        if (j % 16 == 15) {
            b->node = -1;
            b->p = malloc(b->size);
        } else {
            b->node = t->mem[(w->idx + j + round) % t->nmem];
            errno = 0;
            b->p = nodal_malloc_node(b->size, b->node);
        }
        if (!b->p) {
            pt_fail("thread %d: %s(%zu B%s) returned NULL (%s); expected a block", w->idx,
                    b->node < 0 ? "malloc" : "nodal_malloc_node", b->size,
                    b->node < 0 ? "" : ", node", strerror(errno));
            continue;
        }
        write_block(b);
    }
}

/* Checks and frees the batch another thread allocated in the previous round. */
static void check_and_free(worker *w, blk *v, int owner)
{
    const void *last_page = NULL;
    int last_node = -2;
    uintptr_t pmask = ~(uintptr_t)(pt_topology()->page_size - 1);
    char what[64];

    snprintf(what, sizeof what, "block of thread %d freed by thread %d", owner, w->idx);
    for (int j = 0; j < per_round; j++) {
        blk *b = &v[j];
        if (!b->p)
            continue;
        if (!block_intact(b)) {
            w->corrupt++;
            pt_fail("%s (%p, %zu B, node %d): contents changed between allocation and free; "
                    "expected the tag it was written with (block handed out twice?)",
                    what, (void *)b->p, b->size, b->node);
        }
        /* The policy covers a whole mapping: once per OS page and node. */
        const void *page = (const void *)((uintptr_t)b->p & pmask);
        if (page != last_page || b->node != last_node) {
            w->policy_checks++;
            if (b->node >= 0)
                pt_expect_node_policy(b->p, b->size, b->node, "node block");
            else
                pt_expect_default_policy(b->p, b->size, "plain malloc block");
            last_page = page;
            last_node = b->node;
        }
        if (b->node >= 0) {
            w->node_blocks++;
            pt_batch_add(w->batch, b->p, b->size, b->node, "node block", b->tag);
        } else {
            w->plain_blocks++;
        }
    }
    pt_batch_flush(w->batch);   /* ask the kernel before anything is freed */
    for (int j = 0; j < per_round; j++) {
        int k = (owner & 1) ? per_round - 1 - j : j;   /* both orders */
        free(v[k].p);
        v[k].p = NULL;
    }
}

static void *run(void *arg)
{
    worker *w = arg;
    int node;
    w->cpu = pt_spread_cpu(w->idx, &node);
    if (pt_pin(w->cpu) != 0)
        pt_die("thread %d: cannot pin to CPU %d: %s", w->idx, w->cpu, strerror(errno));
    w->cpu_node = node;
    w->batch = pt_batch_new();
    pthread_barrier_wait(&barrier);
    for (int r = 0; r <= rounds; r++) {
        double t0 = pt_now();
        if (r < rounds)
            allocate_batch(w, r);
        double t1 = pt_now();
        if (r > 0) {
            int owner = (w->idx + 1 + r) % nthreads;
            check_and_free(w, workers[owner].buf[(r - 1) & 1], owner);
        }
        w->alloc_s += t1 - t0;
        w->check_s += pt_now() - t1;
        pthread_barrier_wait(&barrier);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int i;
    argc = pt_begin(argc, argv, "cross_thread_frees_keep_node",
                     "threads on all CPU nodes allocating for all nodes and freeing each "
                     "other's blocks never get a block off its node");
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc)
            nthreads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc)
            total_wanted = atol(argv[++i]);
        else if (!strcmp(argv[i], "-b") && i + 1 < argc)
            per_round = atoi(argv[++i]);
        else
            pt_die("usage: %s [-t THREADS] [-n BLOCKS] [-b PER_ROUND] [-v]", argv[0]);
    }
    ncls = pt_class_sizes(classes, 256);
    if (nthreads < 1 || per_round < ncls || total_wanted < 1)
        pt_die("need -t >= 1, -b >= %d (the number of class sizes), -n >= 1", ncls);
    /* 15 of 16 blocks are node blocks. */
    long node_per_round = (long)nthreads * (per_round - per_round / 16);
    rounds = (int)((total_wanted + node_per_round - 1) / node_per_round);

    const pt_topo *t = pt_topology();
    pt_info("%d threads on CPU node(s) %d%s, %d memory node(s), %d rounds of %d blocks per "
            "thread", nthreads, t->cpunode[0], t->ncpunode > 1 ? " and others" : "", t->nmem,
            rounds, per_round);
    workers = calloc((size_t)nthreads, sizeof *workers);
    pthread_barrier_init(&barrier, NULL, (unsigned)nthreads);
    for (i = 0; i < nthreads; i++) {
        workers[i].idx = i;
        workers[i].buf[0] = calloc((size_t)per_round, sizeof(blk));
        workers[i].buf[1] = calloc((size_t)per_round, sizeof(blk));
        if (!workers[i].buf[0] || !workers[i].buf[1])
            pt_die("out of memory");
    }
    double t0 = pt_now();
    for (i = 0; i < nthreads; i++)
        if (pthread_create(&workers[i].tid, NULL, run, &workers[i]) != 0)
            pt_die("pthread_create failed");
    unsigned long node_blocks = 0, plain = 0, pages = 0, bad_pages = 0, bad_blocks = 0;
    unsigned long policy_checks = 0;
    double alloc_s = 0, check_s = 0;
    for (i = 0; i < nthreads; i++) {
        worker *w = &workers[i];
        pthread_join(w->tid, NULL);
        node_blocks += w->node_blocks;
        plain += w->plain_blocks;
        pages += pt_batch_pages(w->batch);
        bad_pages += pt_batch_bad_pages(w->batch);
        bad_blocks += pt_batch_bad_blocks(w->batch);
        policy_checks += w->policy_checks;
        alloc_s += w->alloc_s;
        check_s += w->check_s;
        if (pt_verbose)
            pt_info("thread %d on CPU %d (node %d): %lu node blocks checked and freed",
                    i, w->cpu, w->cpu_node, w->node_blocks);
        pt_batch_free(w->batch);
    }
    double wall = pt_now() - t0;
    pt_info("%lu node blocks and %lu plain blocks allocated, checked and freed across threads "
            "in %.1f s (threads spent %.1f s allocating, %.1f s checking)", node_blocks, plain,
            wall, alloc_s, check_s);
    pt_info("%lu OS pages asked with move_pages, %lu policies with get_mempolicy: %lu pages "
            "misplaced in %lu blocks", pages, policy_checks, bad_pages, bad_blocks);
    if (node_blocks < (unsigned long)total_wanted)
        pt_fail("only %lu node blocks were allocated and checked; expected at least %ld",
                node_blocks, total_wanted);
    return pt_end();
}
