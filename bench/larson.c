/*
 * larson.c - a server simulation in the style of Larson and Krishnan's
 * benchmark: blocks outlive the thread that allocated them.
 *
 * Each of -t threads holds an array of -k blocks of random sizes in
 * [-a, -b] bytes. In every round each thread makes -r random replacements in
 * its current array (free a random block, allocate a new random-sized one in
 * its place, write its first bytes). After each round the arrays move on to
 * the next thread (array i goes to thread (i + round) mod t), so most blocks
 * are freed by a thread other than the one that allocated them, as when a
 * server hands requests between worker threads.
 *
 * Reported: core-normalised wall ns and CPU ns per replacement (one free plus
 * one malloc), millions of replacements per second, the process's user and
 * system seconds, and peak RSS. With several thread counts (-t 2,4) the peak
 * is reset before each row, but what earlier rows left resident still counts:
 * run one thread count per process to compare footprints (bench/run.py does).
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cfg {
    int threads, rounds;
    long long slots, repl;      /* per array; per thread per round */
    size_t min, max;
    void ***arrays;             /* [threads][slots] */
    pthread_barrier_t round_barrier;
};

static size_t pick_size(uint64_t *rng, const struct cfg *c)
{
    return c->min + (size_t)rng_below(rng, c->max - c->min + 1);
}

static void fill(void **a, long long n, uint64_t *rng, const struct cfg *c)
{
    for (long long i = 0; i < n; i++) {
        size_t sz = pick_size(rng, c);
        a[i] = malloc(sz);
        memset(a[i], 0x5a, sz < 16 ? sz : 16);
    }
}

static void worker(bench_thread *t)
{
    struct cfg *c = t->arg;
    fill(c->arrays[t->id], c->slots, &t->rng, c);
    bench_sync(t);
    for (int round = 0; round < c->rounds; round++) {
        void **a = c->arrays[(t->id + round) % c->threads];
        for (long long i = 0; i < c->repl; i++) {
            long long k = (long long)rng_below(&t->rng, (uint64_t)c->slots);
            free(a[k]);
            size_t sz = pick_size(&t->rng, c);
            a[k] = malloc(sz);
            memset(a[k], 0x5a, sz < 16 ? sz : 16);
        }
        pthread_barrier_wait(&c->round_barrier);
    }
    bench_stop(t);
    t->ops = (uint64_t)(c->rounds * c->repl);
}

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    struct cfg c = { .threads = 2, .rounds = 20, .slots = 1000, .repl = 50000, .min = 8, .max = 1000 };
    long long tl[16] = { 2 };
    int ntl = 1, opt;
    while ((opt = getopt(argc, argv, "t:k:r:R:a:b:P")) != -1) {
        switch (opt) {
        case 't': ntl = parse_list(optarg, tl, 16); break;
        case 'k': c.slots = parse_size(optarg); break;
        case 'r': c.repl = parse_size(optarg); break;
        case 'R': c.rounds = (int)parse_size(optarg); break;
        case 'a': c.min = (size_t)parse_size(optarg); break;
        case 'b': c.max = (size_t)parse_size(optarg); break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: larson [-t threads] [-k blocks per thread] [-r replacements per round]\n"
                            "              [-R rounds] [-a min size] [-b max size] [-P]\n");
            return 2;
        }
    }
    if (c.min < 1 || c.max < c.min || c.slots < 1)
        die("bad sizes or slot count");
    for (int i = 0; i < ntl; i++) {
        c.threads = (int)tl[i];
        c.arrays = calloc((size_t)c.threads, sizeof *c.arrays);
        for (int k = 0; k < c.threads; k++)
            c.arrays[k] = calloc((size_t)c.slots, sizeof(void *));
        pthread_barrier_init(&c.round_barrier, NULL, (unsigned)c.threads);
        bench_reset_peak_rss();
        bench_team r;
        bench_team_run(c.threads, worker, &c, &r);
        pthread_barrier_destroy(&c.round_barrier);
        double ns = bench_ns_per_op(&r, c.threads);
        bench_result("larson", "threads=%d ns_op=%.2f cpu_ns_op=%.2f mops=%.3f peak_rss_mib=%.1f user_s=%.3f sys_s=%.3f",
                     c.threads, ns, bench_cpu_ns_per_op(&r), (double)r.ops / ((double)r.wall_ns / 1e9) / 1e6,
                     bench_peak_rss_kib() / 1024.0, r.user_s, r.sys_s);
        for (int k = 0; k < c.threads; k++) {
            for (long long j = 0; j < c.slots; j++)
                free(c.arrays[k][j]);
            free(c.arrays[k]);
        }
        free(c.arrays);
    }
    return 0;
}
