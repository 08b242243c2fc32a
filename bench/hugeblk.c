/*
 * hugeblk.c - huge blocks in a loop: blocks of 5-25 MiB allocated, used and
 * freed, over and over, as a program does with per-file or per-frame buffers.
 *
 * Each of -t threads (default 1) keeps -k slots (default 1). One step frees
 * the block in a random slot and allocates a new one of a random size, uniform
 * in [-a, -b] (default 5 MiB .. 25 MiB), then touches it:
 *   -T page    one byte written in every 4 KiB of the block (default): every
 *              page is used, as when a buffer is filled. An allocator that
 *              returns the block to the kernel at free pays a page fault per
 *              4 KiB on the next block; one that keeps it pays a cache miss.
 *   -T little  only the first and the last byte: the cost of the allocator's
 *              own work (mmap/munmap/madvise calls, bookkeeping) without the
 *              faults that using the memory brings.
 * -n steps in all (split over the threads), after -w untimed warm-up steps
 * per thread (default: a tenth).
 *
 * Reported: core-normalised wall us and CPU us per block (CPU time includes
 * the threads' kernel time: faults, mmap, munmap), the process's user and
 * system seconds over the timed region, and peak RSS (MiB).
 */
#define _GNU_SOURCE
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cfg {
    size_t min, max;
    long long steps, warm;      /* per thread */
    int slots;
    int touch_all;
};

static void step(bench_thread *t, const struct cfg *c, char **slot)
{
    int k = (int)rng_below(&t->rng, (uint64_t)c->slots);
    free(slot[k]);
    size_t sz = c->min + (size_t)rng_below(&t->rng, c->max - c->min + 1);
    char *p = malloc(sz);
    if (!p)
        die("malloc(%zu) failed", sz);
    if (c->touch_all) {
        bench_touch_pages(p, sz);
    } else {
        p[0] = 1;
        p[sz - 1] = 2;
    }
    escape(p);
    slot[k] = p;
}

static void worker(bench_thread *t)
{
    const struct cfg *c = t->arg;
    char **slot = calloc((size_t)c->slots, sizeof *slot);
    for (long long i = 0; i < c->warm; i++)
        step(t, c, slot);
    bench_sync(t);
    for (long long i = 0; i < c->steps; i++)
        step(t, c, slot);
    bench_stop(t);
    t->ops = (uint64_t)c->steps;
    for (int k = 0; k < c->slots; k++)
        free(slot[k]);
    free(slot);
}

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    struct cfg c = { .min = 5u << 20, .max = 25u << 20, .slots = 1, .touch_all = 1 };
    long long total = 400, warm = -1;
    int threads = 1, opt;
    while ((opt = getopt(argc, argv, "t:n:w:k:a:b:T:P")) != -1) {
        switch (opt) {
        case 't': threads = (int)parse_size(optarg); break;
        case 'n': total = parse_size(optarg); break;
        case 'w': warm = parse_size(optarg); break;
        case 'k': c.slots = (int)parse_size(optarg); break;
        case 'a': c.min = (size_t)parse_size(optarg); break;
        case 'b': c.max = (size_t)parse_size(optarg); break;
        case 'T':
            if (strcmp(optarg, "page") == 0)
                c.touch_all = 1;
            else if (strcmp(optarg, "little") == 0)
                c.touch_all = 0;
            else
                die("-T takes page or little");
            break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: hugeblk [-t threads] [-n steps] [-w warm-up per thread] [-k slots per thread]\n"
                            "               [-a min size] [-b max size] [-T page|little] [-P]\n");
            return 2;
        }
    }
    if (threads < 1 || c.slots < 1 || c.min < 1 || c.max < c.min)
        die("need -t >= 1, -k >= 1 and 1 <= -a <= -b");
    c.steps = total / threads;
    c.warm = warm >= 0 ? warm : c.steps / 10;
    bench_team r;
    bench_team_run(threads, worker, &c, &r);
    bench_result("hugeblk", "touch=%s slots=%d threads=%d min=%zuMiB max=%zuMiB us_block=%.2f cpu_us_block=%.2f "
                 "user_s=%.3f sys_s=%.3f peak_rss_mib=%.1f",
                 c.touch_all ? "page" : "little", c.slots, threads, c.min >> 20, c.max >> 20,
                 bench_ns_per_op(&r, threads) / 1e3, bench_cpu_ns_per_op(&r) / 1e3, r.user_s, r.sys_s,
                 bench_peak_rss_kib() / 1024.0);
    return 0;
}
