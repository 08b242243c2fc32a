/*
 * peakrel.c - peak then release: does memory go back to the OS once a
 * program's peak has passed?
 *
 * -t threads (default 2) each allocate their share of -m bytes (default
 * 256 MiB) in blocks of 16..1,024 B and write them; after a barrier every
 * thread frees its blocks. Then the main thread keeps lightly busy for -d ms
 * (default 1,000): every millisecond or so it allocates and frees 100 small
 * blocks, which gives allocators that return memory on a timer (or on
 * allocation activity) the chance to do so.
 * Reported, in MiB: peak RSS, RSS right after the frees, RSS after the -d ms
 * of light activity; and the seconds the allocate and free phases took.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct cfg {
    long long bytes_per_thread;
    void ***blocks;         /* per thread */
    long long *counts;
};

static void worker(bench_thread *t)
{
    struct cfg *c = t->arg;
    long long cap = c->bytes_per_thread / 16 + 1, n = 0, bytes = 0;
    void **b = malloc(sizeof(void *) * (size_t)cap);
    bench_sync(t);
    while (bytes < c->bytes_per_thread && n < cap) {
        size_t sz = 16 + (size_t)rng_below(&t->rng, 1009);
        b[n] = malloc(sz);
        memset(b[n], 0x33, sz);
        bytes += (long long)sz;
        n++;
    }
    bench_stop(t);
    c->blocks[t->id] = b;
    c->counts[t->id] = n;
    t->ops = (uint64_t)n;
}

static void freer(bench_thread *t)
{
    struct cfg *c = t->arg;
    bench_sync(t);
    for (long long i = 0; i < c->counts[t->id]; i++)
        free(c->blocks[t->id][i]);
    free(c->blocks[t->id]);
    t->ops = (uint64_t)c->counts[t->id];
}

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    long long total = 256ll << 20, settle_ms = 1000;
    int threads = 2, opt;
    while ((opt = getopt(argc, argv, "t:m:d:P")) != -1) {
        switch (opt) {
        case 't': threads = (int)parse_size(optarg); break;
        case 'm': total = parse_size(optarg); break;
        case 'd': settle_ms = parse_size(optarg); break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: peakrel [-t threads] [-m total bytes] [-d settle ms] [-P]\n");
            return 2;
        }
    }
    if (threads < 1)
        die("threads must be >= 1");
    struct cfg c = { .bytes_per_thread = total / threads };
    c.blocks = calloc((size_t)threads, sizeof *c.blocks);
    c.counts = calloc((size_t)threads, sizeof *c.counts);
    long base = bench_rss_kib();

    bench_team ra, rf;
    bench_team_run(threads, worker, &c, &ra);
    long peak = bench_peak_rss_kib();
    bench_team_run(threads, freer, &c, &rf);
    long after_free = bench_rss_kib();

    uint64_t end = now_ns() + (uint64_t)settle_ms * 1000000u;
    struct timespec ms = { 0, 1000000 };
    void *tmp[100];
    uint64_t rng = rng_seed(3, 4);
    while (now_ns() < end) {
        for (int i = 0; i < 100; i++)
            tmp[i] = malloc(16 + (size_t)rng_below(&rng, 241));
        for (int i = 0; i < 100; i++)
            free(tmp[i]);
        nanosleep(&ms, NULL);
    }
    long settled = bench_rss_kib();
    bench_result("peakrel", "threads=%d total=%lldMiB settle_ms=%lld base_rss_mib=%.1f peak_rss_mib=%.1f "
                 "free_rss_mib=%.1f settled_rss_mib=%.1f alloc_s=%.3f free_s=%.3f",
                 threads, total >> 20, settle_ms, base / 1024.0, peak / 1024.0, after_free / 1024.0,
                 settled / 1024.0, (double)ra.wall_ns / 1e9, (double)rf.wall_ns / 1e9);
    free(c.blocks);
    free(c.counts);
    return 0;
}
