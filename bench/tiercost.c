/*
 * tiercost.c - allocation by memory attribute: each thread repeats
 *     p = alloc(size); memset(p, ., size); free(p)
 * for one attribute (-T latency|bandwidth|capacity) with one backend:
 *
 *   nodal-tier  nodal_malloc_tier(size, tier), resolved per call from the
 *               calling CPU's node;
 *   nodal-node  nodal_malloc_node(size, k), k = nodal_tier_node(tier, the
 *               thread's node) resolved once per thread: the node call on
 *               the resolved node, the cost a tier call must stay within;
 *   memkind     memkind_malloc / memkind_free with memkind's kind for the
 *               attribute (MEMKIND_LOWEST_LATENCY_LOCAL,
 *               MEMKIND_HIGHEST_BANDWIDTH_LOCAL, MEMKIND_HIGHEST_CAPACITY_LOCAL:
 *               resolved through hwloc from the firmware's HMAT).
 *
 * nodal is reached through weak references a preloaded libnodal.so
 * resolves (as nodeapi.c does); memkind is dlopen()ed (BENCH_MEMKIND, or
 * libmemkind.so.0), so that its jemalloc stays private.
 *
 * Reported per thread count: ns_op and cpu_ns_op (harness.h) per cycle,
 * and, for the nodal backends, misplaced: of 64 blocks per thread, those
 * with a page off nodal_tier_node's node (move_pages; 0 for memkind); a
 * note line gives the node of the first block (the kernel's view).
 *
 *   tiercost [-b nodal-tier|nodal-node|memkind] [-T latency|bandwidth|capacity]
 *            [-s size] [-t threads,...] [-n cycles] [-w warm-up]
 */
#define _GNU_SOURCE
#include "harness.h"
#include "nodeapi.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nodal.h"

#pragma weak nodal_malloc_tier
#pragma weak nodal_malloc_node
#pragma weak nodal_tier_node
#pragma weak nodal_free

#define CHECK_BLOCKS 64

enum { B_TIER, B_NODE, B_MEMKIND };

struct cfg {
    int backend, tier;
    size_t size;
    long long cycles, warm;
    _Atomic long misplaced;
    _Atomic int first_node;
};

static void *mk_kind;
static void *(*mk_malloc)(void *, size_t);
static void (*mk_free)(void *, void *);

static void mk_init(int tier)
{
    static const char *const kinds[3] = { "MEMKIND_LOWEST_LATENCY_LOCAL", "MEMKIND_HIGHEST_BANDWIDTH_LOCAL",
                                          "MEMKIND_HIGHEST_CAPACITY_LOCAL" };
    const char *path = getenv("BENCH_MEMKIND");
    void *h = dlopen(path ? path : "libmemkind.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("SKIP tiercost: memkind: %s\n", dlerror());
        exit(77);
    }
    void **kind = dlsym(h, kinds[tier]);
    mk_malloc = (void *(*)(void *, size_t))dlsym(h, "memkind_malloc");
    mk_free = (void (*)(void *, void *))dlsym(h, "memkind_free");
    if (!kind || !mk_malloc || !mk_free) {
        printf("SKIP tiercost: memkind has no %s\n", kinds[tier]);
        exit(77);
    }
    mk_kind = *kind;
    void *p = mk_malloc(mk_kind, 64);
    if (!p) {
        printf("SKIP tiercost: memkind's %s gives no memory here (it needs the firmware's HMAT)\n", kinds[tier]);
        exit(77);
    }
    mk_free(mk_kind, p);
}

static inline void *alloc_one(const struct cfg *c, int node)
{
    switch (c->backend) {
    case B_TIER: return nodal_malloc_tier(c->size, c->tier);
    case B_NODE: return nodal_malloc_node(c->size, node);
    default: return mk_malloc(mk_kind, c->size);
    }
}

static inline void free_one(const struct cfg *c, void *p)
{
    if (c->backend == B_MEMKIND)
        mk_free(mk_kind, p);
    else
        nodal_free(p);
}

static void cycles(const struct cfg *c, int node, long long n)
{
    for (long long i = 0; i < n; i++) {
        char *p = alloc_one(c, node);
        if (!p)
            die("tiercost: allocation of %zu B failed", c->size);
        memset(p, (int)i, c->size);
        escape(p);
        free_one(c, p);
    }
}

static void worker(bench_thread *t)
{
    struct cfg *c = t->arg;
    int node = c->backend == B_MEMKIND ? -1 : nodal_tier_node(c->tier, node_of_cpu(t->cpu));
    cycles(c, node, c->warm >= 0 ? c->warm : c->cycles / 20 + 1);
    bench_sync(t);
    cycles(c, node, c->cycles);
    bench_stop(t);
    t->ops = (uint64_t)c->cycles;

    void *blocks[CHECK_BLOCKS];
    for (int i = 0; i < CHECK_BLOCKS; i++) {
        blocks[i] = alloc_one(c, node);
        memset(blocks[i], 1, c->size);
    }
    int expect = nodal_tier_node ? nodal_tier_node(c->tier, node_of_cpu(t->cpu)) : -1;
    long bad = expect >= 0 ? node_count_misplaced(blocks, CHECK_BLOCKS, expect) : 0;
    int none = -1;
    atomic_compare_exchange_strong(&c->first_node, &none, node_of_addr(blocks[0]));
    for (int i = 0; i < CHECK_BLOCKS; i++)
        free_one(c, blocks[i]);
    atomic_fetch_add(&c->misplaced, bad);
}

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    const char *backend = "nodal-tier", *tier = "bandwidth";
    long long tl[16] = { 1 }, total = 1000000, size = 32, warm = -1;
    int ntl = 1, opt;
    while ((opt = getopt(argc, argv, "b:T:s:t:n:w:")) != -1) {
        switch (opt) {
        case 'b': backend = optarg; break;
        case 'T': tier = optarg; break;
        case 's': size = parse_size(optarg); break;
        case 't': ntl = parse_list(optarg, tl, 16); break;
        case 'n': total = parse_size(optarg); break;
        case 'w': warm = parse_size(optarg); break;
        default:
            fprintf(stderr, "usage: tiercost [-b nodal-tier|nodal-node|memkind] [-T latency|bandwidth|capacity]\n"
                            "                [-s size] [-t threads,...] [-n cycles] [-w warm-up per thread]\n");
            return 2;
        }
    }
    struct cfg c = { .size = (size_t)size, .warm = warm };
    c.tier = !strcmp(tier, "latency") ? NODAL_TIER_LATENCY : !strcmp(tier, "bandwidth") ? NODAL_TIER_BANDWIDTH
             : !strcmp(tier, "capacity") ? NODAL_TIER_CAPACITY : -1;
    c.backend = !strcmp(backend, "nodal-tier") ? B_TIER : !strcmp(backend, "nodal-node") ? B_NODE
                : !strcmp(backend, "memkind") ? B_MEMKIND : -1;
    if (c.tier < 0 || c.backend < 0 || size < 1)
        die("tiercost: -b nodal-tier|nodal-node|memkind, -T latency|bandwidth|capacity, -s >= 1");
    if (c.backend == B_MEMKIND) {
        mk_init(c.tier);
    } else if (!nodal_malloc_tier || !nodal_malloc_node || !nodal_tier_node || !nodal_free) {
        printf("SKIP tiercost: %s needs libnodal.so preloaded (LD_PRELOAD)\n", backend);
        return 77;
    }
    for (int i = 0; i < ntl; i++) {
        int threads = (int)tl[i];
        c.cycles = total / threads;
        atomic_store(&c.misplaced, 0);
        atomic_store(&c.first_node, -1);
        bench_team r;
        bench_team_run(threads, worker, &c, &r);
        printf("tiercost: %s, %d thread(s): the first block of a thread was on node %d (the kernel's view)\n",
               backend, threads, atomic_load(&c.first_node));
        bench_result("tiercost", "backend=%s tier=%s size=%lld threads=%d ns_op=%.2f cpu_ns_op=%.2f misplaced=%ld",
                     backend, tier, size, threads, bench_ns_per_op(&r, threads), bench_cpu_ns_per_op(&r),
                     c.backend == B_MEMKIND ? 0L : atomic_load(&c.misplaced));
    }
    return 0;
}
