/*
 * larson.c - a server simulation in the style of Larson and Krishnan's
 * benchmark: blocks outlive the thread that allocated them.
 *
 * Each of -t threads holds an array of -k blocks of random sizes in
 * [-a, -b] bytes. In every round each thread makes -r random replacements in
 * its current array (free a random block, allocate a new random-sized one in
 * its place, write its first bytes). After each round the arrays move on to
 * the next thread (array i goes to thread (i + round) mod t), so blocks
 * outlive their thread's turn and are freed by another thread, as when a
 * server hands requests between worker threads. How many depends on -r
 * against -k: a round replaces each slot about r / k times, and only its
 * first replacement frees a block another thread allocated. With the
 * defaults (-k 1000, -r 50000: 50 times) that is 1.9 % of the frees at 8
 * threads; -r 1000 makes it 60 % (counted by a throwaway copy of this
 * program, 2026-12-05, docs/results.md: h49l).
 *
 * -f sized frees each block with its size, as C++'s sized delete does and
 * as a program that knows its blocks' sizes can: through C23's
 * free_sized(p, size) when the preloaded allocator exports it, else through
 * the allocator's own sized free (jemalloc's sdallocx(p, size, 0), tcmalloc's
 * tc_free_sized, mimalloc's mi_free_size), looked up with dlsym at run time;
 * -f c23 takes free_sized only. Without one (glibc 2.36 has none) the program
 * says so and exits 77 (skipped: the cell stays empty). A note names the
 * function used and its library. The sizes travel with the arrays, in a
 * side array, so that no block is read before it is freed. -f plain (the
 * default) calls free(p). Rows carry free=plain|sized|c23.
 *
 * Reported: core-normalised wall ns and CPU ns per replacement (one free plus
 * one malloc), millions of replacements per second, the process's user and
 * system seconds, and peak RSS. With several thread counts (-t 2,4) the peak
 * is reset before each row, but what earlier rows left resident still counts:
 * run one thread count per process to compare footprints (bench/run.py does).
 */
#define _GNU_SOURCE
#include "harness.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How blocks are freed (-f). */
enum free_kind { FREE_PLAIN, FREE_SIZED2, FREE_SDALLOCX };
static enum free_kind free_kind = FREE_PLAIN;
static void (*sized2)(void *, size_t);          /* free_sized, tc_free_sized, mi_free_size */
static void (*sdallocx_fn)(void *, size_t, int);

static inline void release(void *p, size_t size)
{
    switch (free_kind) {
    case FREE_SIZED2: sized2(p, size); break;
    case FREE_SDALLOCX: sdallocx_fn(p, size, 0); break;
    default: free(p); break;
    }
}

/* Picks the sized free the preloaded allocator offers; 0 if none. */
static int find_sized_free(int c23_only)
{
    static const char *const names[] = { "free_sized", "sdallocx", "tc_free_sized", "mi_free_size" };
    for (int i = 0; i < (c23_only ? 1 : 4); i++) {
        void *f = dlsym(RTLD_DEFAULT, names[i]);
        if (!f)
            continue;
        if (i == 1) {
            sdallocx_fn = (void (*)(void *, size_t, int))f;
            free_kind = FREE_SDALLOCX;
        } else {
            sized2 = (void (*)(void *, size_t))f;
            free_kind = FREE_SIZED2;
        }
        Dl_info info;
        const char *lib = dladdr(f, &info) && info.dli_fname ? info.dli_fname : "?";
        const char *base = strrchr(lib, '/');
        printf("note: larson: sized free through %s (%s)\n", names[i], base ? base + 1 : lib);
        return 1;
    }
    printf("note: larson: the allocator exports no %s; skipped\n",
           c23_only ? "free_sized" : "free_sized, sdallocx, tc_free_sized or mi_free_size");
    return 0;
}

struct cfg {
    int threads, rounds;
    long long slots, repl;      /* per array; per thread per round */
    size_t min, max;
    void ***arrays;             /* [threads][slots] */
    uint32_t **sizes;           /* [threads][slots], with -f sized/c23 only */
    pthread_barrier_t round_barrier;
};

static size_t pick_size(uint64_t *rng, const struct cfg *c)
{
    return c->min + (size_t)rng_below(rng, c->max - c->min + 1);
}

static void fill(void **a, uint32_t *sizes, long long n, uint64_t *rng, const struct cfg *c)
{
    for (long long i = 0; i < n; i++) {
        size_t sz = pick_size(rng, c);
        a[i] = malloc(sz);
        memset(a[i], 0x5a, sz < 16 ? sz : 16);
        if (sizes)
            sizes[i] = (uint32_t)sz;
    }
}

static void worker(bench_thread *t)
{
    struct cfg *c = t->arg;
    fill(c->arrays[t->id], c->sizes ? c->sizes[t->id] : NULL, c->slots, &t->rng, c);
    bench_sync(t);
    for (int round = 0; round < c->rounds; round++) {
        int at = (t->id + round) % c->threads;
        void **a = c->arrays[at];
        if (c->sizes) {
            uint32_t *s = c->sizes[at];
            for (long long i = 0; i < c->repl; i++) {
                long long k = (long long)rng_below(&t->rng, (uint64_t)c->slots);
                release(a[k], s[k]);
                size_t sz = pick_size(&t->rng, c);
                a[k] = malloc(sz);
                s[k] = (uint32_t)sz;
                memset(a[k], 0x5a, sz < 16 ? sz : 16);
            }
        } else {
            for (long long i = 0; i < c->repl; i++) {
                long long k = (long long)rng_below(&t->rng, (uint64_t)c->slots);
                free(a[k]);
                size_t sz = pick_size(&t->rng, c);
                a[k] = malloc(sz);
                memset(a[k], 0x5a, sz < 16 ? sz : 16);
            }
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
    const char *how = "plain";
    while ((opt = getopt(argc, argv, "t:k:r:R:a:b:f:P")) != -1) {
        switch (opt) {
        case 't': ntl = parse_list(optarg, tl, 16); break;
        case 'k': c.slots = parse_size(optarg); break;
        case 'r': c.repl = parse_size(optarg); break;
        case 'R': c.rounds = (int)parse_size(optarg); break;
        case 'a': c.min = (size_t)parse_size(optarg); break;
        case 'b': c.max = (size_t)parse_size(optarg); break;
        case 'f': how = optarg; break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: larson [-t threads] [-k blocks per thread] [-r replacements per round]\n"
                            "              [-R rounds] [-a min size] [-b max size] [-f plain|sized|c23] [-P]\n");
            return 2;
        }
    }
    if (c.min < 1 || c.max < c.min || c.slots < 1 || c.max > UINT32_MAX)
        die("bad sizes or slot count");
    int sized = strcmp(how, "sized") == 0, c23 = strcmp(how, "c23") == 0;
    if (!sized && !c23 && strcmp(how, "plain") != 0)
        die("-f takes plain, sized or c23");
    if ((sized || c23) && !find_sized_free(c23))
        return BENCH_SKIP;
    for (int i = 0; i < ntl; i++) {
        c.threads = (int)tl[i];
        c.arrays = calloc((size_t)c.threads, sizeof *c.arrays);
        c.sizes = free_kind != FREE_PLAIN ? calloc((size_t)c.threads, sizeof *c.sizes) : NULL;
        for (int k = 0; k < c.threads; k++) {
            c.arrays[k] = calloc((size_t)c.slots, sizeof(void *));
            if (c.sizes)
                c.sizes[k] = calloc((size_t)c.slots, sizeof(uint32_t));
        }
        pthread_barrier_init(&c.round_barrier, NULL, (unsigned)c.threads);
        bench_reset_peak_rss();
        bench_team r;
        bench_team_run(c.threads, worker, &c, &r);
        pthread_barrier_destroy(&c.round_barrier);
        double ns = bench_ns_per_op(&r, c.threads);
        bench_result("larson", "free=%s threads=%d ns_op=%.2f cpu_ns_op=%.2f mops=%.3f peak_rss_mib=%.1f user_s=%.3f sys_s=%.3f",
                     how, c.threads, ns, bench_cpu_ns_per_op(&r), (double)r.ops / ((double)r.wall_ns / 1e9) / 1e6,
                     bench_peak_rss_kib() / 1024.0, r.user_s, r.sys_s);
        for (int k = 0; k < c.threads; k++) {
            for (long long j = 0; j < c.slots; j++)
                release(c.arrays[k][j], c.sizes ? c.sizes[k][j] : 0);
            free(c.arrays[k]);
            if (c.sizes)
                free(c.sizes[k]);
        }
        free(c.sizes);
        free(c.arrays);
    }
    return 0;
}
