/*
 * falseshare.c - allocator-induced false sharing: do blocks used by different
 * threads end up on the same cache line?
 *
 *   -m scratch  (passive, after Hoard's cache-scratch) the main thread
 *               allocates one -s byte block per thread, back to back, and
 *               hands them out; each thread frees the block it was given,
 *               then repeatedly allocates a block, writes it -w times and
 *               frees it. An allocator that hands the freed block (or its
 *               neighbours) straight back makes the threads write to one line.
 *   -m thrash   (active, after cache-thrash) no hand-out: each thread
 *               allocates its own blocks from the start, so any sharing is
 *               the allocator packing different threads' blocks together.
 *
 * Reported: core-normalised wall ns and CPU ns per write pass over the
 * block; -r rounds of -w passes per thread.
 * With no false sharing this is the cost of an L1 store, about 1 ns.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cfg {
    int scratch;
    size_t size;
    long long rounds, writes;
    char **handout;
};

static void worker(bench_thread *t)
{
    struct cfg *c = t->arg;
    if (c->scratch)
        free(c->handout[t->id]);
    bench_sync(t);
    for (long long r = 0; r < c->rounds; r++) {
        volatile char *p = malloc(c->size);
        for (long long w = 0; w < c->writes; w++) {
            for (size_t i = 0; i < c->size; i++)
                p[i] = (char)(p[i] + 1);
        }
        free((void *)p);
    }
    t->ops = (uint64_t)(c->rounds * c->writes);
}

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    struct cfg c = { .scratch = 1, .size = 8, .rounds = 2000, .writes = 2000 };
    long long tl[16] = { 2 };
    int ntl = 1, opt;
    while ((opt = getopt(argc, argv, "m:t:s:r:w:P")) != -1) {
        switch (opt) {
        case 'm':
            if (strcmp(optarg, "scratch") && strcmp(optarg, "thrash"))
                die("-m scratch|thrash");
            c.scratch = strcmp(optarg, "scratch") == 0;
            break;
        case 't': ntl = parse_list(optarg, tl, 16); break;
        case 's': c.size = (size_t)parse_size(optarg); break;
        case 'r': c.rounds = parse_size(optarg); break;
        case 'w': c.writes = parse_size(optarg); break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: falseshare [-m scratch|thrash] [-t threads] [-s size] [-r rounds] [-w writes] [-P]\n");
            return 2;
        }
    }
    if (c.size < 1)
        die("size must be >= 1");
    for (int i = 0; i < ntl; i++) {
        int threads = (int)tl[i];
        c.handout = calloc((size_t)threads, sizeof *c.handout);
        for (int k = 0; k < threads && c.scratch; k++)
            c.handout[k] = malloc(c.size);
        bench_team r;
        bench_team_run(threads, worker, &c, &r);
        bench_result("falseshare", "mode=%s size=%zu threads=%d ns_write=%.3f cpu_ns_write=%.3f user_s=%.3f sys_s=%.3f",
                     c.scratch ? "scratch" : "thrash", c.size, threads, bench_ns_per_op(&r, threads),
                     bench_cpu_ns_per_op(&r), r.user_s, r.sys_s);
        free(c.handout);
    }
    return 0;
}
