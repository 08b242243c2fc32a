/*
 * idlewait.c - a worker that frees and then waits: a thread of a pool that
 * served a burst (built buffers, answered, dropped them) and now sleeps on
 * its queue while the rest of the program goes on. How much of what it
 * freed the allocator gives back while that thread does not run, and after
 * it exits.
 *
 * 1. A worker thread allocates -n blocks (default 800) of -s bytes
 *    (default 100,000: a medium size, under every peer's mapping
 *    threshold) and writes every OS page of each.
 * 2. It frees all but one in -k of them (default 1: all), then waits on a
 *    condition variable.
 * 3. Meanwhile the main thread keeps working for -w milliseconds (default
 *    1,000): small requests (a malloc of 64 bytes, a write, a free), 1,000
 *    at a time with a 100 us sleep after each thousand.
 * 4. The worker is woken, frees the rest and exits; the main thread works
 *    300 ms more the same way.
 *
 * Reported: live MiB after step 2, RSS after step 1 (rss_full_mib), right
 * after step 2 (rss_freed_mib), after step 3 while the worker still waits
 * (rss_waiting_mib: the row's main figure), after step 4 (rss_exit_mib),
 * and peak RSS, in MiB.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long n_blocks = 800, block_size = 100000, keep_one_in = 1, wait_ms = 1000;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int freed, wake;
static long rss_full;
static size_t live;

static void *worker(void *arg)
{
    (void)arg;
    void **p = calloc((size_t)n_blocks, sizeof *p);
    if (p == NULL)
        die("out of memory");
    for (long long i = 0; i < n_blocks; i++) {
        if ((p[i] = malloc((size_t)block_size)) == NULL)
            die("malloc(%lld) failed", block_size);
        bench_touch_pages(p[i], (size_t)block_size);
    }
    rss_full = bench_rss_now_kib();
    for (long long i = 0; i < n_blocks; i++) {
        if (i % keep_one_in == 0 && keep_one_in > 1) {
            live += (size_t)block_size;
            continue;
        }
        free(p[i]);
        p[i] = NULL;
    }
    pthread_mutex_lock(&mu);
    freed = 1;
    pthread_cond_broadcast(&cv);
    while (!wake)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    for (long long i = 0; i < n_blocks; i++)
        free(p[i]);
    free(p);
    return NULL;
}

/* Small requests for `ms` milliseconds: 1,000 at a time, a 100 us sleep
   after each thousand. */
static void keep_working(long long ms)
{
    static void *slots[64];
    static unsigned k;
    uint64_t until = now_ns() + (uint64_t)ms * 1000000u;
    while (now_ns() < until) {
        for (int i = 0; i < 1000; i++, k++) {
            free(slots[k % 64]);
            char *q = malloc(64);
            if (q == NULL)
                die("malloc(64) failed");
            q[0] = (char)i;
            slots[k % 64] = q;
        }
        struct timespec us = { 0, 100000 };
        nanosleep(&us, NULL);
    }
}

static double mib(long kib) { return (double)kib / 1024.0; }

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    int opt;
    while ((opt = getopt(argc, argv, "n:s:k:w:P")) != -1) {
        switch (opt) {
        case 'n': n_blocks = parse_size(optarg); break;
        case 's': block_size = parse_size(optarg); break;
        case 'k': keep_one_in = parse_size(optarg); break;
        case 'w': wait_ms = parse_size(optarg); break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: idlewait [-n blocks] [-s size] [-k keep one in] [-w wait ms] [-P]\n");
            return 2;
        }
    }
    if (n_blocks < 1 || block_size < 16 || keep_one_in < 1 || wait_ms < 0)
        die("need -n >= 1, -s >= 16, -k >= 1, -w >= 0");
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0)
        die("pthread_create failed");
    pthread_mutex_lock(&mu);
    while (!freed)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    long rss_freed = bench_rss_now_kib();

    keep_working(wait_ms);
    long rss_waiting = bench_rss_now_kib();

    pthread_mutex_lock(&mu);
    wake = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(t, NULL);
    keep_working(300);
    long rss_exit = bench_rss_now_kib();

    bench_result("idlewait",
                 "blocks=%lld size=%lld keep_one_in=%lld wait_ms=%lld live_mib=%.1f rss_full_mib=%.1f "
                 "rss_freed_mib=%.1f rss_waiting_mib=%.1f rss_exit_mib=%.1f peak_rss_mib=%.1f",
                 n_blocks, block_size, keep_one_in, wait_ms, (double)live / (1 << 20), mib(rss_full),
                 mib(rss_freed), mib(rss_waiting), mib(rss_exit), mib(bench_peak_rss_kib()));
    return 0;
}
