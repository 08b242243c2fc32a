/*
 * mthread.c - the shape of glibc's bench-malloc-thread (written here from
 * its description): each of N threads churns random sizes in its own loop
 * over a fixed working set; no block crosses threads.
 *
 * Each of -t threads (default 2) keeps -k slots (default 1,024), filled
 * before the timed region. One step frees the block in a random slot and
 * allocates a new one of a random size in its place, writing its first byte.
 * Sizes follow glibc's benchmark: density proportional to 1/size between -a
 * and -b (default 4 B .. 32 KiB), i.e. log-uniform, so small sizes dominate
 * while every octave up to 32 KiB comes up. -n steps in all (default
 * 5,000,000), split over the threads (glibc's runs for a fixed time; a fixed
 * amount of work is what the runner compares).
 *
 * Reported: core-normalised wall ns and CPU ns per step (one free and one
 * malloc), wall seconds, the process's user and system seconds over the timed
 * region, and peak RSS.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct cfg {
    long long steps;            /* per thread */
    int slots;
    size_t min, max;
};

static char *new_block(bench_thread *t, const struct cfg *c)
{
    size_t sz = rng_log_uniform(&t->rng, c->min, c->max);
    char *p = malloc(sz);
    if (!p)
        die("malloc(%zu) failed", sz);
    p[0] = (char)sz;
    return p;
}

static void worker(bench_thread *t)
{
    const struct cfg *c = t->arg;
    char **slot = malloc(sizeof *slot * (size_t)c->slots);
    for (int k = 0; k < c->slots; k++)
        slot[k] = new_block(t, c);
    bench_sync(t);
    for (long long i = 0; i < c->steps; i++) {
        int k = (int)rng_below(&t->rng, (uint64_t)c->slots);
        free(slot[k]);
        slot[k] = new_block(t, c);
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
    struct cfg c = { .slots = 1024, .min = 4, .max = 32 << 10 };
    long long total = 5000000;
    int threads = 2, opt;
    while ((opt = getopt(argc, argv, "t:n:k:a:b:P")) != -1) {
        switch (opt) {
        case 't': threads = (int)parse_size(optarg); break;
        case 'n': total = parse_size(optarg); break;
        case 'k': c.slots = (int)parse_size(optarg); break;
        case 'a': c.min = (size_t)parse_size(optarg); break;
        case 'b': c.max = (size_t)parse_size(optarg); break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: mthread [-t threads] [-n steps] [-k slots per thread] [-a min size]\n"
                            "               [-b max size] [-P]\n");
            return 2;
        }
    }
    if (threads < 1 || c.slots < 1 || c.min < 1 || c.max < c.min)
        die("need -t, -k >= 1 and 1 <= -a <= -b");
    c.steps = total / threads;
    bench_reset_peak_rss();
    bench_team r;
    bench_team_run(threads, worker, &c, &r);
    bench_result("mthread", "threads=%d slots=%d size=%zu-%zu ns_step=%.2f cpu_ns_step=%.2f wall_s=%.3f user_s=%.3f "
                 "sys_s=%.3f peak_rss_mib=%.1f",
                 threads, c.slots, c.min, c.max, bench_ns_per_op(&r, threads), bench_cpu_ns_per_op(&r),
                 (double)r.wall_ns / 1e9, r.user_s, r.sys_s, bench_peak_rss_kib() / 1024.0);
    return 0;
}
