/*
 * chase.c - pointer chasing over node-bound objects: the latency of walking
 * a large linked structure, which is what huge pages (NODAL_OPTIONS=
 * huge_pages=1 vs 0) are meant to improve (fewer TLB misses).
 *
 * Allocates -c objects of -s bytes (default 4M of 64 B = 256 MiB) with the
 * backend -b on node -N (default 0), links them into one cycle in random
 * order, and follows the links -h times (default 20M); one thread.
 * Reported: ns per hop, and ns per object to allocate and link.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "nodeapi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct obj { struct obj *next; };

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    const char *backend = "malloc", *target = "0";
    long long count = 4ll << 20, size = 64, hops = 20000000;
    int opt;
    while ((opt = getopt(argc, argv, "b:c:s:h:N:P")) != -1) {
        switch (opt) {
        case 'b': backend = optarg; break;
        case 'c': count = parse_size(optarg); break;
        case 's': size = parse_size(optarg); break;
        case 'h': hops = parse_size(optarg); break;
        case 'N': target = optarg; break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: chase [-b " NODE_BACKENDS "] [-c objects] [-s size] [-h hops]\n"
                            "             [-N node|local] [-P]\n");
            return 2;
        }
    }
    if (size < (long long)sizeof(struct obj) || count < 2)
        die("need size >= %zu and count >= 2", sizeof(struct obj));
    const node_backend *be = node_backend_get(backend);
    bench_pin_self(bench_cpu(0));
    int node = node_target_for(node_target_parse(target), 0, bench_cpu(0));

    uint64_t t0 = now_ns();
    struct obj **objs = malloc(sizeof *objs * (size_t)count);
    for (long long i = 0; i < count; i++) {
        objs[i] = be->alloc((size_t)size, node);
        if (!objs[i])
            die("allocation %lld failed", i);
        memset(objs[i], 0, (size_t)size);
    }
    /* a random cyclic order: shuffle, then link neighbours */
    uint64_t rng = rng_seed(11, 13);
    for (long long i = count - 1; i > 0; i--) {
        long long j = (long long)rng_below(&rng, (uint64_t)i + 1);
        struct obj *tmp = objs[i];
        objs[i] = objs[j];
        objs[j] = tmp;
    }
    for (long long i = 0; i < count; i++)
        objs[i]->next = objs[(i + 1) % count];
    uint64_t t1 = now_ns();

    struct obj *p = objs[0];
    for (long long i = 0; i < count; i++)     /* one lap to warm up */
        p = p->next;
    uint64_t t2 = now_ns();
    for (long long i = 0; i < hops; i++)
        p = p->next;
    uint64_t t3 = now_ns();
    escape(p);
    int where = node_of_addr(objs[0]);
    bench_result("chase", "backend=%s size=%lld count=%lld node=%d ns_hop=%.2f ns_setup=%.2f peak_rss_mib=%.1f",
                 backend, size, count, node, (double)(t3 - t2) / (double)hops, (double)(t1 - t0) / (double)count,
                 bench_peak_rss_kib() / 1024.0);
    printf("note: first object is on node %d\n", where);
    for (long long i = 0; i < count; i++)
        be->free(objs[i], (size_t)size, node);
    free(objs);
    return 0;
}
