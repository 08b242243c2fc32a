/*
 * plain_frees_go_home_to_their_node - a block freed by another thread goes
 * back to memory of its own kind and node, and a thread on another node
 * does not hand it out as its own. A thread pinned to a CPU of node X
 * allocates plain blocks of every small and medium class (first-touched on
 * X) and blocks bound to each node with memory; it hands them all to a
 * thread pinned to node Y, which frees them, then allocates plain blocks of
 * the same sizes and touches them: every OS page of those must be on Y
 * (had Y's thread reused X's plain blocks from its cache, they would be on
 * X), and every bound block it then allocates on node k must be on k. The
 * first thread, still on X, allocates again: its plain blocks are on X, and
 * nodal counts the frees that went home (remote_frees).
 * Needs two nodes with CPUs (skipped otherwise: one node cannot tell).
 *
 * The kernel's automatic NUMA balancing migrates default-policy pages
 * toward the CPUs that touch them after their first touch: Y's thread
 * writes its free links into X's plain blocks, and the balancer may then
 * move those pages to Y before X's thread gets them back (in the VM under
 * load: failing runs with thousands of pages migrated by the balancer,
 * tests/placement/README.md; none with it off). Where plain pages
 * sit then is the kernel's choice, not nodal's, so the VM plan (run-vm.sh)
 * runs this program with kernel.numa_balancing=0 (--expect-balancing 0),
 * every check as above; and again with balancing on and
 * --no-first-touch-check, where the plain blocks' node is not asked and
 * every other check holds (bound blocks on their node, remote_frees).
 *
 *   plain_frees_go_home_to_their_node [--no-first-touch-check] [-v]
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

#define ROUNDS 6

typedef struct blk {
    void *p;
    size_t size;
    int node;   /* -1: plain */
} blk;

static size_t classes[256];
static int ncls, nblocks;
static blk *handed;
static int cpu_x, cpu_y, node_x, node_y;
static pthread_barrier_t turn;
static int first_touch_check = 1;   /* --no-first-touch-check: 0 */

/* Allocates the round's blocks on the calling thread: plain ones of every
   class (touched), and one bound block per node with memory and class. */
static void allocate(blk *v, int plain_only)
{
    const pt_topo *t = pt_topology();
    int n = 0;
    for (int r = 0; r < ROUNDS; r++)
        for (int c = 0; c < ncls; c++) {
            blk *b = &v[n++];
            b->size = classes[c];
            b->node = -1;
            b->p = malloc(b->size);
            if (!b->p)
                pt_die("malloc(%zu) returned NULL", b->size);
            pt_touch(b->p, b->size, (unsigned char)c);
            if (plain_only)
                continue;
            for (int k = 0; k < t->nmem; k++) {
                blk *d = &v[n++];
                d->size = classes[c];
                d->node = t->mem[k];
                d->p = nodal_malloc_node(d->size, d->node);
                if (!d->p)
                    pt_die("nodal_malloc_node(%zu, %d) returned NULL (%s)", d->size, d->node, strerror(errno));
                pt_touch(d->p, d->size, (unsigned char)c);
            }
        }
    nblocks = n;
}

/* Every plain block of v must be on `node`, every bound one on its own. */
static void expect_on(const blk *v, int n, int node, const char *who)
{
    pt_batch *batch = pt_batch_new();
    char plain[96], bound[96];   /* the batch keeps the pointers until it is flushed */
    snprintf(plain, sizeof plain, "%s plain block", who);
    snprintf(bound, sizeof bound, "%s bound block", who);
    for (int i = 0; i < n; i++) {
        if (v[i].p == NULL || (v[i].node < 0 && !first_touch_check))
            continue;
        pt_batch_add(batch, v[i].p, v[i].size, v[i].node < 0 ? node : v[i].node, v[i].node < 0 ? plain : bound,
                     (unsigned long)i);
    }
    pt_batch_flush(batch);
    pt_batch_free(batch);
}

static void *thread_x(void *arg)
{
    (void)arg;
    if (pt_pin(cpu_x) != 0)
        pt_die("cannot pin to CPU %d", cpu_x);
    allocate(handed, 0);
    expect_on(handed, nblocks, node_x, "node-X thread's");
    pthread_barrier_wait(&turn);   /* handed over */
    pthread_barrier_wait(&turn);   /* freed by Y's thread */
    blk *again = calloc((size_t)nblocks, sizeof *again);
    allocate(again, 1);
    expect_on(again, nblocks, node_x, "node-X thread's new");
    for (int i = 0; i < nblocks; i++)
        free(again[i].p);
    free(again);
    pthread_barrier_wait(&turn);
    return NULL;
}

static void *thread_y(void *arg)
{
    (void)arg;
    if (pt_pin(cpu_y) != 0)
        pt_die("cannot pin to CPU %d", cpu_y);
    free(malloc(1));   /* this thread's caches are of node Y */
    pthread_barrier_wait(&turn);
    int n = nblocks;
    for (int i = 0; i < n; i++)
        free(handed[i].p);
    blk *mine = calloc((size_t)n * 2, sizeof *mine);
    allocate(mine, 0);
    expect_on(mine, nblocks, node_y, "node-Y thread's");
    for (int i = 0; i < nblocks; i++)
        free(mine[i].p);
    free(mine);
    nodal_collect(0);   /* every block of X's pages goes home now */
    pthread_barrier_wait(&turn);
    pthread_barrier_wait(&turn);
    return NULL;
}

int main(int argc, char **argv)
{
    argc = pt_begin(argc, argv, "plain_frees_go_home_to_their_node",
             "plain blocks freed by a thread on another node go back to their own node's pages and "
             "are not handed out there; bound blocks stay on their node");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--no-first-touch-check"))
            first_touch_check = 0;
        else
            pt_die("usage: %s [--no-first-touch-check] [-v]", argv[0]);
    }
    const pt_topo *t = pt_topology();
    if (t->ncpunode < 2)
        return pt_skip("needs two nodes with CPUs (this machine has %d)", t->ncpunode);
    cpu_x = pt_spread_cpu(0, &node_x);
    cpu_y = pt_spread_cpu(1, &node_y);
    size_t all[256];
    int n = pt_class_sizes(all, 256);
    for (int i = 0; i < n; i++)
        if (all[i] <= (32 << 10))   /* the classes thread caches hold */
            classes[ncls++] = all[i];
    handed = calloc((size_t)ROUNDS * (size_t)ncls * (size_t)(1 + t->nmem), sizeof *handed);
    char *before = pt_stats_json();
    int found = 0;
    unsigned long long remote0 = pt_json_max(before, "remote_frees", &found);
    free(before);
    pthread_barrier_init(&turn, NULL, 2);
    pthread_t x, y;
    if (pthread_create(&x, NULL, thread_x, NULL) != 0 || pthread_create(&y, NULL, thread_y, NULL) != 0)
        pt_die("pthread_create failed");
    pthread_join(x, NULL);
    pthread_join(y, NULL);
    char *after = pt_stats_json();
    unsigned long long remote1 = pt_json_max(after, "remote_frees", &found);
    free(after);
    if (found && remote1 - remote0 < (unsigned long long)nblocks / 2)
        pt_fail("remote_frees grew by %llu; expected about the %d blocks of node-%d's thread freed on "
                "node %d to have gone back to their pages", remote1 - remote0, nblocks, node_x, node_y);
    pt_info("%d blocks handed from a thread on node %d (CPU %d) to one on node %d (CPU %d)", nblocks,
            node_x, cpu_x, node_y, cpu_y);
    free(handed);
    return pt_end();
}
