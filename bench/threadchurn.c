/*
 * threadchurn.c - thread churn: short threads that allocate a little and exit,
 * over and over, as a program that spawns a thread per task does.
 *
 * The main thread starts -c threads (default 8), joins them, and repeats
 * until -n threads (default 20,000) have run. Each thread allocates -b blocks
 * (default 64, log-uniform 16 B .. 2 KiB), writes them, frees all but -l of
 * them (default 8), and leaves those in a hand-off slot: the thread with the
 * same index in the next wave frees them, so some blocks outlive the thread
 * that allocated them and are freed by another. The main thread frees the
 * last wave's leftovers.
 *
 * Reported: CPU us per thread (the process's user + system time over the
 * run, divided by the threads: thread start and exit included), wall us per
 * thread (core-normalised), the process's user and system seconds, RSS after
 * the run (every thread joined, every block freed) and peak RSS, in MiB.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

struct cfg {
    int blocks, left;
    void ***handoff;    /* [concurrency][left] */
};

struct task {
    struct cfg *cfg;
    int slot;
    uint64_t seed;
};

static void *short_thread(void *arg)
{
    struct task *t = arg;
    struct cfg *c = t->cfg;
    bench_pin_self(bench_cpu(t->slot));
    uint64_t rng = t->seed;
    void *mine[256];
    for (int i = 0; i < c->blocks; i++) {
        size_t sz = rng_log_uniform(&rng, 16, 2048);
        mine[i] = malloc(sz);
        if (!mine[i])
            die("malloc(%zu) failed", sz);
        memset(mine[i], i, sz < 64 ? sz : 64);
    }
    void **h = c->handoff[t->slot];
    for (int i = 0; i < c->left; i++) {     /* the previous wave's blocks */
        free(h[i]);
        h[i] = mine[i];
    }
    for (int i = c->left; i < c->blocks; i++)
        free(mine[i]);
    return NULL;
}

static double tv_s(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec / 1e6; }

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    struct cfg c = { .blocks = 64, .left = 8 };
    long long total = 20000;
    int conc = 8, opt;
    while ((opt = getopt(argc, argv, "n:c:b:l:P")) != -1) {
        switch (opt) {
        case 'n': total = parse_size(optarg); break;
        case 'c': conc = (int)parse_size(optarg); break;
        case 'b': c.blocks = (int)parse_size(optarg); break;
        case 'l': c.left = (int)parse_size(optarg); break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: threadchurn [-n threads in all] [-c threads at a time] [-b blocks per thread]\n"
                            "                   [-l blocks left for the next wave] [-P]\n");
            return 2;
        }
    }
    if (conc < 1 || total < conc || c.blocks < 1 || c.blocks > 256 || c.left < 0 || c.left > c.blocks)
        die("need 1 <= -c <= -n, 1 <= -b <= 256 and 0 <= -l <= -b");
    c.handoff = calloc((size_t)conc, sizeof *c.handoff);
    for (int i = 0; i < conc; i++)
        c.handoff[i] = calloc((size_t)c.left + 1, sizeof(void *));
    pthread_t *tids = calloc((size_t)conc, sizeof *tids);
    struct task *tasks = calloc((size_t)conc, sizeof *tasks);
    long base = bench_rss_kib();

    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    uint64_t t0 = now_ns();
    long long started = 0;
    while (started < total) {
        int n = total - started < conc ? (int)(total - started) : conc;
        for (int i = 0; i < n; i++) {
            tasks[i] = (struct task){ &c, i, rng_seed(0x6368726eULL, (uint64_t)(started + i)) };
            int e = pthread_create(&tids[i], NULL, short_thread, &tasks[i]);
            if (e)
                die("pthread_create: %s", strerror(e));
        }
        for (int i = 0; i < n; i++)
            pthread_join(tids[i], NULL);
        started += n;
    }
    for (int i = 0; i < conc; i++)
        for (int k = 0; k < c.left; k++) {
            free(c.handoff[i][k]);
            c.handoff[i][k] = NULL;
        }
    uint64_t wall = now_ns() - t0;
    getrusage(RUSAGE_SELF, &r1);
    long after = bench_rss_kib();

    double user = tv_s(r1.ru_utime) - tv_s(r0.ru_utime), sys = tv_s(r1.ru_stime) - tv_s(r0.ru_stime);
    int cores = conc < bench_ncpus() ? conc : bench_ncpus();
    bench_result("threadchurn", "threads=%d total=%lld blocks=%d cpu_us_thread=%.2f us_thread=%.2f user_s=%.3f "
                 "sys_s=%.3f base_rss_mib=%.1f rss_mib=%.1f peak_rss_mib=%.1f",
                 conc, total, c.blocks, (user + sys) * 1e6 / (double)total,
                 (double)wall * cores / 1e3 / (double)total, user, sys, base / 1024.0, after / 1024.0,
                 bench_peak_rss_kib() / 1024.0);
    for (int i = 0; i < conc; i++)
        free(c.handoff[i]);
    free(c.handoff);
    free(tids);
    free(tasks);
    return 0;
}
