/*
 * shortlived.c - many threads allocating and freeing mixed sizes with short
 * lifetimes: the churn of a program that builds and drops buffers, strings
 * and records of every size all the time.
 *
 * Each of -t threads keeps a window of -k slots (default 256). One step frees
 * the block in a random slot and allocates a new one in its place, so a block
 * lives for -k steps on average. Sizes are drawn log-uniformly from four bands:
 *     60 %  8 B .. 256 B
 *     25 %  257 B .. 4 KiB
 *     12 %  4 KiB .. 64 KiB
 *      3 %  64 KiB .. 1 MiB
 * so a thread holds about 3.5 MiB live (256 blocks of 13.7 KiB on average),
 * and the large blocks come and go often enough that an allocator returning
 * memory to the kernel at each free (munmap, madvise) pays for it in system
 * time and page faults. Every new
 * block is touched: one byte in every 4 KiB, as a program that fills it.
 * -n steps in all, split over the threads (default 2,000,000).
 *
 * Reported: wall seconds of the timed region, CPU ns per step (one free and
 * one malloc, the touch included; CPU time includes kernel time), the
 * process's user and system seconds over the timed region, and peak RSS.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct cfg {
    long long steps;    /* per thread */
    int slots;
};

static size_t mixed_size(uint64_t *rng)
{
    uint64_t band = rng_below(rng, 100);
    if (band < 60)
        return rng_log_uniform(rng, 8, 256);
    if (band < 85)
        return rng_log_uniform(rng, 257, 4 << 10);
    if (band < 97)
        return rng_log_uniform(rng, (4 << 10) + 1, 64 << 10);
    return rng_log_uniform(rng, (64 << 10) + 1, 1 << 20);
}

static void *new_block(uint64_t *rng)
{
    size_t sz = mixed_size(rng);
    void *p = malloc(sz);
    if (!p)
        die("malloc(%zu) failed", sz);
    bench_touch_pages(p, sz);
    return p;
}

static void worker(bench_thread *t)
{
    const struct cfg *c = t->arg;
    void **slot = malloc(sizeof *slot * (size_t)c->slots);
    for (int k = 0; k < c->slots; k++)
        slot[k] = new_block(&t->rng);
    bench_sync(t);
    for (long long i = 0; i < c->steps; i++) {
        int k = (int)rng_below(&t->rng, (uint64_t)c->slots);
        free(slot[k]);
        slot[k] = new_block(&t->rng);
    }
    bench_stop(t);
    t->ops = (uint64_t)c->steps;
    for (int k = 0; k < c->slots; k++)
        free(slot[k]);
    free(slot);
}

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    struct cfg c = { .slots = 256 };
    long long total = 2000000;
    int threads = 2, opt;
    while ((opt = getopt(argc, argv, "t:n:k:P")) != -1) {
        switch (opt) {
        case 't': threads = (int)parse_size(optarg); break;
        case 'n': total = parse_size(optarg); break;
        case 'k': c.slots = (int)parse_size(optarg); break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: shortlived [-t threads] [-n steps] [-k slots per thread] [-P]\n");
            return 2;
        }
    }
    if (threads < 1 || c.slots < 1)
        die("need -t >= 1 and -k >= 1");
    c.steps = total / threads;
    bench_team r;
    bench_team_run(threads, worker, &c, &r);
    bench_result("shortlived", "threads=%d slots=%d wall_s=%.3f ns_step=%.1f cpu_ns_step=%.1f user_s=%.3f sys_s=%.3f "
                 "peak_rss_mib=%.1f",
                 threads, c.slots, (double)r.wall_ns / 1e9, bench_ns_per_op(&r, threads), bench_cpu_ns_per_op(&r),
                 r.user_s, r.sys_s, bench_peak_rss_kib() / 1024.0);
    return 0;
}
