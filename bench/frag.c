/*
 * frag.c - fragmentation: how much memory stays resident for a given amount
 * of live data after a mixed-size heap has been churned.
 *
 * 1. Allocate blocks of many sizes (log-uniform over 8 B .. -x bytes,
 *    default 16 KiB) until -m bytes (default 256 MiB) are live; write them.
 * 2. Free a random half.
 * 3. Allocate again, from sizes 1.5 times larger, until -m bytes are live
 *    once more, so the holes left in step 2 fit the new blocks badly.
 * Reported: live MiB at the end, peak and final RSS (MiB), final RSS / live
 * (the overhead factor; 1.0 would be perfect) and the seconds taken.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct block { void *p; size_t size; };

static size_t log_uniform(uint64_t *rng, size_t lo, size_t hi)
{
    double u = (double)rng_below(rng, 1u << 30) / (double)(1u << 30);
    return (size_t)exp(log((double)lo) + u * (log((double)hi) - log((double)lo)));
}

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    long long target = 256ll << 20, max_size = 16 << 10;
    int opt;
    while ((opt = getopt(argc, argv, "m:x:P")) != -1) {
        switch (opt) {
        case 'm': target = parse_size(optarg); break;
        case 'x': max_size = parse_size(optarg); break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: frag [-m live bytes] [-x max block size] [-P]\n");
            return 2;
        }
    }
    if (max_size < 16)
        die("max size must be >= 16");
    bench_pin_self(bench_cpu(0));
    uint64_t rng = rng_seed(42, 7);
    /* mean of a log-uniform size over [lo, hi] is (hi - lo) / ln(hi / lo) */
    double mean = (double)(max_size - 8) / log((double)max_size / 8.0);
    size_t cap = (size_t)(2.0 * (double)target / mean) + 4096, n = 0;
    struct block *b = malloc(sizeof *b * cap);
    uint64_t t0 = now_ns();

    long long live = 0;
    while (live < target && n < cap) {
        size_t sz = log_uniform(&rng, 8, (size_t)max_size);
        b[n].p = malloc(sz);
        b[n].size = sz;
        memset(b[n].p, 0x11, sz);
        live += (long long)sz;
        n++;
    }
    for (size_t i = 0; i < n; i++) {
        if (rng_below(&rng, 2)) {
            free(b[i].p);
            live -= (long long)b[i].size;
            b[i].p = NULL;
        }
    }
    size_t slot = 0;
    while (live < target) {
        while (slot < n && b[slot].p)
            slot++;
        if (slot == n) {
            if (n == cap)
                break;
            n++;
        }
        size_t sz = log_uniform(&rng, 12, (size_t)max_size * 3 / 2);
        b[slot].p = malloc(sz);
        b[slot].size = sz;
        memset(b[slot].p, 0x22, sz);
        live += (long long)sz;
    }
    uint64_t t1 = now_ns();
    long rss = bench_rss_kib(), peak = bench_peak_rss_kib();
    double live_mib = (double)live / (1 << 20);
    bench_result("frag", "live=%.0fMiB max_size=%lld peak_rss_mib=%.1f final_rss_mib=%.1f overhead=%.3f wall_s=%.3f",
                 live_mib, max_size, peak / 1024.0, rss / 1024.0, rss / 1024.0 / live_mib, (double)(t1 - t0) / 1e9);
    for (size_t i = 0; i < n; i++)
        free(b[i].p);
    free(b);
    return 0;
}
