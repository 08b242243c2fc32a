/*
 * holes.c - memory freed around survivors: a program that builds many
 * buffers, drops most of them and keeps running with the rest (a cache
 * trimmed, a request burst over, a parse tree pruned). How much of the
 * freed memory goes back to the kernel while the blocks left still hold
 * the allocator's pages, and what taking it again costs.
 *
 * 1. Allocate -n blocks (default 1,000) of sizes log-uniform in -a .. -b
 *    bytes (default 8 KiB .. 128 KiB: past most allocators' small size
 *    classes, under their mapping thresholds); write every OS page of each.
 * 2. Free all but one in -k of them (default 4), chosen at random.
 * 3. Keep running for -w milliseconds (default 400): small requests (a
 *    malloc of 64 bytes, a write, a free) with a 1 ms sleep after every
 *    2,000, as a program that goes on with its work; an allocator that
 *    returns memory on a timer gets its chance here.
 * 4. malloc_trim(0) (glibc's call; other allocators map it to their own
 *    trim or ignore it).
 * 5. Allocate the freed blocks' sizes again and write them (the cost of
 *    taking memory back: page faults where it was given back).
 *
 * Reported: live MiB after step 2 (the sizes asked for), RSS after step 1
 * (rss_full_mib), right after step 2 (rss_freed_mib), after step 3
 * (rss_idle_mib: the row's main figure), after step 4 (rss_trim_mib),
 * peak RSS, the CPU seconds of step 3 (idle_cpu_s: what the allocator's
 * returning costs while the program works) and of step 5 (reuse_cpu_s,
 * system time included: the faults), in MiB and seconds.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double process_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

static double mib(long kib) { return (double)kib / 1024.0; }

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    long long n = 1000, lo = 8 << 10, hi = 128 << 10, keep_one_in = 4, wait_ms = 400;
    int opt;
    while ((opt = getopt(argc, argv, "n:a:b:k:w:P")) != -1) {
        switch (opt) {
        case 'n': n = parse_size(optarg); break;
        case 'a': lo = parse_size(optarg); break;
        case 'b': hi = parse_size(optarg); break;
        case 'k': keep_one_in = parse_size(optarg); break;
        case 'w': wait_ms = parse_size(optarg); break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: holes [-n blocks] [-a min size] [-b max size] [-k keep one in] [-w wait ms] [-P]\n");
            return 2;
        }
    }
    if (n < 1 || lo < 16 || hi < lo || keep_one_in < 1 || wait_ms < 0)
        die("need -n >= 1, 16 <= -a <= -b, -k >= 1, -w >= 0");
    bench_pin_self(bench_cpu(0));
    uint64_t rng = rng_seed(42, 11);
    void **p = calloc((size_t)n, sizeof *p);
    size_t *sz = calloc((size_t)n, sizeof *sz);
    if (p == NULL || sz == NULL)
        die("out of memory");

    for (long long i = 0; i < n; i++) {
        sz[i] = rng_log_uniform(&rng, (size_t)lo, (size_t)hi);
        if ((p[i] = malloc(sz[i])) == NULL)
            die("malloc(%zu) failed", sz[i]);
        bench_touch_pages(p[i], sz[i]);
    }
    long rss_full = bench_rss_now_kib();

    size_t live = 0;
    for (long long i = 0; i < n; i++) {
        if (rng_below(&rng, (uint64_t)keep_one_in) == 0) {
            live += sz[i];
            continue;
        }
        free(p[i]);
        p[i] = NULL;
    }
    long rss_freed = bench_rss_now_kib();

    double c0 = process_cpu_s();
    uint64_t until = now_ns() + (uint64_t)wait_ms * 1000000u;
    while (now_ns() < until) {
        for (int i = 0; i < 2000; i++) {
            char *volatile q = malloc(64);
            if (q == NULL)
                die("malloc(64) failed");
            q[0] = (char)i;
            free(q);
        }
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
    double idle_cpu = process_cpu_s() - c0;
    long rss_idle = bench_rss_now_kib();

    malloc_trim(0);
    long rss_trim = bench_rss_now_kib();

    c0 = process_cpu_s();
    for (long long i = 0; i < n; i++) {
        if (p[i] != NULL)
            continue;
        if ((p[i] = malloc(sz[i])) == NULL)
            die("malloc(%zu) failed", sz[i]);
        bench_touch_pages(p[i], sz[i]);
    }
    double reuse_cpu = process_cpu_s() - c0;
    for (long long i = 0; i < n; i++)
        free(p[i]);

    bench_result("holes",
                 "blocks=%lld sizes=%lld-%lld keep_one_in=%lld wait_ms=%lld live_mib=%.1f rss_full_mib=%.1f "
                 "rss_freed_mib=%.1f rss_idle_mib=%.1f rss_trim_mib=%.1f idle_cpu_s=%.3f reuse_cpu_s=%.3f "
                 "peak_rss_mib=%.1f",
                 n, lo, hi, keep_one_in, wait_ms, (double)live / (1 << 20), mib(rss_full), mib(rss_freed),
                 mib(rss_idle), mib(rss_trim), idle_cpu, reuse_cpu, mib(bench_peak_rss_kib()));
    free(p);
    free(sz);
    return 0;
}
