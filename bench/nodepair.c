/*
 * nodepair.c - node-targeted allocation: the full cycle of seed 000's
 * "speedup vs numa_alloc_onnode" table. Each thread repeats
 *     p = alloc(size, node); memset(p, ., size)  (first touch); free(p)
 * with the backend given by -b (nodeapi.h: malloc, nodal, numa, jepool).
 *
 * -N picks the target node: a node id (default 0, as in the seed), "local"
 * (the node of the thread's CPU) or "rr" (thread i -> i-th node). -n is the
 * total number of cycles, split over the threads; each thread first runs -w
 * untimed cycles (default: a twentieth of its share).
 *
 * Reported per thread count: core-normalised wall ns and CPU ns per cycle
 * (numa_alloc_onnode's cost is mostly in the kernel and in waiting for the
 * process's mmap lock, so for it only the wall time is the full cost); and
 * "misplaced":
 * after the timed run each thread allocates 64 blocks on its target node,
 * touches them, and asks the kernel (move_pages) where their pages are; the
 * count that are not on the target node is reported (0 is the only right
 * answer for the node backends; "malloc" ignores the node).
 */
#define _GNU_SOURCE
#include "harness.h"
#include "nodeapi.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK_BLOCKS 64

struct cfg {
    const node_backend *be;
    size_t size;
    long long cycles;       /* per thread */
    long long warm;         /* per thread, untimed */
    int target;
    _Atomic long misplaced;
};

static void cycles(const node_backend *be, size_t size, int node, long long n)
{
    for (long long i = 0; i < n; i++) {
        char *p = be->alloc(size, node);
        if (!p)
            die("%s: allocation of %zu B on node %d failed", be->name, size, node);
        memset(p, (int)i, size);
        escape(p);
        be->free(p, size, node);
    }
}

static void worker(bench_thread *t)
{
    struct cfg *c = t->arg;
    int node = node_target_for(c->target, t->id, t->cpu);
    cycles(c->be, c->size, node, c->warm >= 0 ? c->warm : c->cycles / 20 + 1);
    bench_sync(t);
    cycles(c->be, c->size, node, c->cycles);
    bench_stop(t);
    t->ops = (uint64_t)c->cycles;

    void *blocks[CHECK_BLOCKS];
    long bad = 0;
    for (int i = 0; i < CHECK_BLOCKS; i++) {
        blocks[i] = c->be->alloc(c->size, node);
        memset(blocks[i], 1, c->size);
    }
    for (int i = 0; i < CHECK_BLOCKS; i++) {
        if (node_of_addr(blocks[i]) != node)
            bad++;
        c->be->free(blocks[i], c->size, node);
    }
    atomic_fetch_add(&c->misplaced, bad);
}

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    const char *backend = "malloc", *target = "0";
    long long tl[16] = { 1 }, total = 1000000, size = 32, warm = -1;
    int ntl = 1, opt;
    while ((opt = getopt(argc, argv, "b:s:t:n:w:N:P")) != -1) {
        switch (opt) {
        case 'b': backend = optarg; break;
        case 's': size = parse_size(optarg); break;
        case 't': ntl = parse_list(optarg, tl, 16); break;
        case 'n': total = parse_size(optarg); break;
        case 'w': warm = parse_size(optarg); break;
        case 'N': target = optarg; break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: nodepair [-b " NODE_BACKENDS "] [-s size] [-t threads,...]\n"
                            "                [-n cycles] [-w warm-up per thread] [-N node|local|rr] [-P]\n");
            return 2;
        }
    }
    if (size < 1)
        die("size must be >= 1");
    struct cfg c = { .be = node_backend_get(backend), .size = (size_t)size, .target = node_target_parse(target),
                   .warm = warm };
    if (c.target == -2 || c.target == -1) {     /* rr or local: one node per thread (or per CPU node) */
        int ids[64], n = node_ids(ids, 64), most = 1;
        for (int i = 0; i < ntl; i++)
            most = tl[i] > most ? (int)tl[i] : most;
        node_backend_require(c.be, c.target == -2 ? (most < n ? most : n) : n);
    }
    for (int i = 0; i < ntl; i++) {
        int threads = (int)tl[i];
        c.cycles = total / threads;
        atomic_store(&c.misplaced, 0);
        bench_team r;
        bench_team_run(threads, worker, &c, &r);
        bench_result("nodepair", "backend=%s size=%lld node=%s threads=%d ns_op=%.2f cpu_ns_op=%.2f misplaced=%ld "
                     "user_s=%.3f sys_s=%.3f",
                     backend, size, target, threads, bench_ns_per_op(&r, threads), bench_cpu_ns_per_op(&r),
                     atomic_load(&c.misplaced), r.user_s, r.sys_s);
    }
    return 0;
}
