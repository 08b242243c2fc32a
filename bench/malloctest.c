/*
 * malloctest.c - the "malloc-test" of seed 001 (the 2005 jemalloc thread):
 * each of N threads performs n requests of -s bytes (default 1,024); a
 * request is malloc, a write to the block's first and last byte, and free.
 *
 * The original printed each thread's "adjusted timing" in seconds. Here:
 * core-normalised wall ns per request (flat when the allocator scales), CPU
 * ns per request, and the slowest thread's seconds, which is what the seed's
 * tables compare.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct cfg {
    size_t size;
    long long requests;     /* per thread */
};

static void requests(size_t size, long long n)
{
    for (long long i = 0; i < n; i++) {
        char *p = malloc(size);
        p[0] = 1;
        p[size - 1] = 2;
        escape(p);
        free(p);
    }
}

static void worker(bench_thread *t)
{
    const struct cfg *c = t->arg;
    requests(c->size, c->requests / 20);
    bench_sync(t);
    requests(c->size, c->requests);
    t->ops = (uint64_t)c->requests;
}

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    struct cfg c = { .size = 1024, .requests = 1000000 };
    long long tl[16] = { 1 };
    int ntl = 1, opt;
    while ((opt = getopt(argc, argv, "s:n:t:P")) != -1) {
        switch (opt) {
        case 's': c.size = (size_t)parse_size(optarg); break;
        case 'n': c.requests = parse_size(optarg); break;
        case 't': ntl = parse_list(optarg, tl, 16); break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: malloctest [-s size] [-n requests per thread] [-t threads,...] [-P]\n");
            return 2;
        }
    }
    if (c.size < 1)
        die("size must be >= 1");
    for (int i = 0; i < ntl; i++) {
        int threads = (int)tl[i];
        bench_team r;
        bench_team_run(threads, worker, &c, &r);
        bench_result("malloctest", "size=%zu threads=%d ns_req=%.2f cpu_ns_req=%.2f max_thread_s=%.3f user_s=%.3f sys_s=%.3f",
                     c.size, threads, bench_ns_per_op(&r, threads), bench_cpu_ns_per_op(&r), r.max_thread_s,
                     r.user_s, r.sys_s);
    }
    return 0;
}
