/*
 * micro.c - the cost of malloc and free themselves, with nothing else going on.
 *
 *   -m pair     tight pairs: p = malloc(size); free(p); repeated
 *   -m batch    -b blocks (default 1,000) allocated, then all freed in the
 *               same order; the two phases are timed apart, which splits the
 *               CPU time per pair into ns per alloc and ns per free
 *   -m realloc  a block grown by realloc from 8 B to -g bytes (default 64 KiB)
 *               in steps of a quarter plus 8 B, writing its last byte each
 *               time; ns per realloc call
 *   -m grow     a block grown by realloc from -s bytes (default 1 MiB) to -g
 *               bytes (here default 64 MiB) in steps of a tenth, writing its
 *               last byte each time: what a vector or a buffer reading a file
 *               does with a big block; ns per realloc call. -N node: the
 *               block from nodal_malloc_node(size, node) (nodal only; looked
 *               up at run time), which realloc keeps on its node
 *   -m shrink   a block of -g bytes shrunk by realloc down to 16 B in steps
 *               of a fifth, writing its last byte each time; ns per realloc
 *               call
 *   -m aligned  tight pairs of aligned_alloc(-a alignment, size) / free
 *   -m large    large-block churn across threads: each step mallocs a block
 *               of a random size from -s (default 128 KiB + 1) to -g
 *               (default 1 MiB), writes its first and last bytes, swaps it
 *               into a random one of 8 slots a thread shared by all threads
 *               and frees the block it took out (often another thread's);
 *               ns per step (a malloc and a free)
 *   -m empty    the pair loop with no allocation (loop overhead, for the
 *               instruction-count study)
 *
 * Every thread runs the same loop; the total -n operations are split over the
 * -t threads. Each thread first does -w untimed warm-up iterations. Reported:
 * core-normalised wall time (ns_*) and CPU time (cpu_ns_*) per operation
 * (see harness.h).
 */
#define _GNU_SOURCE
#include "harness.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum mode { PAIR, BATCH, REALLOC, ALIGNED, EMPTY, SHRINK, GROW, LARGE };
static const char *mode_names[] = { "pair", "batch", "realloc", "aligned", "empty", "shrink", "grow", "large" };
#define MODE_COUNT ((int)(sizeof mode_names / sizeof mode_names[0]))

struct cfg {
    enum mode mode;
    size_t size;
    size_t align;
    size_t grow_max;
    long long ops;      /* per thread */
    long long warm;     /* per thread */
    int batch;
};

static void pairs(size_t size, long long n)
{
    for (long long i = 0; i < n; i++) {
        void *p = malloc(size);
        escape(p);
        free(p);
    }
}

static void aligned_pairs(size_t align, size_t size, long long n)
{
    for (long long i = 0; i < n; i++) {
        void *p = aligned_alloc(align, size);
        escape(p);
        free(p);
    }
}

static void empty_pairs(size_t size, long long n)
{
    char buf[16];
    for (long long i = 0; i < n; i++) {
        void *p = buf + (size & 7);
        escape(p);
    }
}

/* One growth sequence from `from` (8 B: -m realloc) to max, by a quarter
   and 8 B (by a tenth: grow == 2, -m grow), or one shrinking sequence from
   max (its first and last bytes written) to 16 B; returns the number of
   realloc calls made. */
static void *(*node_malloc)(size_t size, int node);   /* -N: nodal_malloc_node */
static int grow_node;

static long long resize_once(size_t from, size_t max, int grow)
{
    long long calls = 0;
    size_t sz = grow ? from : max;
    char *p = node_malloc != NULL ? node_malloc(sz, grow_node) : malloc(sz);
    if (!p)
        die("malloc(%zu) failed", sz);
    if (!grow) {
        p[0] = 1;
        p[sz - 1] = (char)sz;
    }
    escape(p);
    while (grow ? sz < max : sz > 16) {
        sz = grow == 2 ? sz + sz / 10 + 8 : grow ? sz + sz / 4 + 8 : sz - sz / 5 - 1;
        char *q = realloc(p, sz);
        if (!q)
            die("realloc(%zu) failed", sz);
        p = q;
        p[sz - 1] = (char)sz;
        escape(p);
        calls++;
    }
    free(p);
    return calls;
}

/* -m large: the slots every thread swaps its blocks into (8 a thread). */
static char **large_slots;
static size_t large_nslots;

static void large_churn(bench_thread *t, size_t lo, size_t hi, long long n)
{
    for (long long i = 0; i < n; i++) {
        size_t sz = lo + (size_t)rng_below(&t->rng, hi - lo + 1);
        char *p = malloc(sz);
        if (!p)
            die("malloc(%zu) failed", sz);
        p[0] = 1;
        p[sz - 1] = 2;
        char *old = __atomic_exchange_n(&large_slots[rng_below(&t->rng, large_nslots)], p, __ATOMIC_ACQ_REL);
        free(old);
    }
}

/*
 * Allocates and frees `rounds` batches. When timed, adds the wall times of the
 * two phases to acc[0] and acc[1], which give the alloc/free split of the CPU
 * time. Only batches that took at most 1.5 times the fastest batch so far
 * count: a batch during which the thread was preempted (a busy machine) would
 * put its stall into whichever phase it hit.
 */
static void batches(bench_thread *t, const struct cfg *c, void **slots, long long rounds, int timed)
{
    int b = c->batch;
    uint64_t fastest = UINT64_MAX;
    for (long long r = 0; r < rounds; r++) {
        uint64_t t0 = timed ? now_ns() : 0;
        for (int i = 0; i < b; i++) {
            slots[i] = malloc(c->size);
            escape(slots[i]);
        }
        uint64_t t1 = timed ? now_ns() : 0;
        for (int i = 0; i < b; i++)
            free(slots[i]);
        if (timed) {
            uint64_t t2 = now_ns();
            if (t2 - t0 < fastest)
                fastest = t2 - t0;
            if (t2 - t0 <= fastest + fastest / 2) {
                t->acc[0] += (double)(t1 - t0);
                t->acc[1] += (double)(t2 - t1);
            }
        }
    }
}

static void worker(bench_thread *t)
{
    const struct cfg *c = t->arg;
    switch (c->mode) {
    case PAIR:
        pairs(c->size, c->warm);
        bench_sync(t);
        pairs(c->size, c->ops);
        t->ops = (uint64_t)c->ops;
        break;
    case ALIGNED:
        aligned_pairs(c->align, c->size, c->warm);
        bench_sync(t);
        aligned_pairs(c->align, c->size, c->ops);
        t->ops = (uint64_t)c->ops;
        break;
    case EMPTY:
        empty_pairs(c->size, c->warm);
        bench_sync(t);
        empty_pairs(c->size, c->ops);
        t->ops = (uint64_t)c->ops;
        break;
    case BATCH: {
        void **slots = calloc((size_t)c->batch, sizeof *slots);
        long long rounds = c->ops / c->batch, wrounds = c->warm / c->batch;
        batches(t, c, slots, wrounds > 0 ? wrounds : 1, 0);
        bench_sync(t);
        batches(t, c, slots, rounds, 1);
        bench_stop(t);
        t->ops = (uint64_t)(rounds * c->batch);
        free(slots);
        break;
    }
    case LARGE:
        large_churn(t, c->size, c->grow_max, c->warm);
        bench_sync(t);
        large_churn(t, c->size, c->grow_max, c->ops);
        t->ops = (uint64_t)c->ops;
        break;
    case REALLOC:
    case GROW:
    case SHRINK: {
        int grow = c->mode == GROW ? 2 : c->mode == REALLOC;
        size_t from = c->mode == GROW ? c->size : 8;
        long long calls = 0;
        while (calls < c->warm)
            calls += resize_once(from, c->grow_max, grow);
        bench_sync(t);
        calls = 0;
        while (calls < c->ops)
            calls += resize_once(from, c->grow_max, grow);
        t->ops = (uint64_t)calls;
        break;
    }
    }
}

static void usage(void)
{
    fprintf(stderr, "usage: micro -m pair|batch|realloc|grow|shrink|aligned|empty|large [-s sizes] [-t threads]\n"
                    "             [-n ops] [-w warm-up per thread] [-b batch] [-a align] [-g grow max] [-N node] [-P]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    struct cfg c = { .mode = PAIR, .align = 64, .grow_max = 64 << 10, .batch = 1000 };
    long long sizes[32] = { 32 };
    int nsizes = 1, threads = 1, sizes_given = 0, grow_given = 0, total_given = 0;
    long long total = 4000000, warm = -1;
    int opt;
    while ((opt = getopt(argc, argv, "m:s:t:n:w:b:a:g:N:P")) != -1) {
        switch (opt) {
        case 'm': {
            int found = 0;
            for (int i = 0; i < MODE_COUNT; i++)
                if (strcmp(optarg, mode_names[i]) == 0) {
                    c.mode = (enum mode)i;
                    found = 1;
                }
            if (!found)
                usage();
            break;
        }
        case 's': nsizes = parse_list(optarg, sizes, 32); sizes_given = 1; break;
        case 't': threads = (int)parse_size(optarg); break;
        case 'n': total = parse_size(optarg); total_given = 1; break;
        case 'w': warm = parse_size(optarg); break;
        case 'b': c.batch = (int)parse_size(optarg); break;
        case 'a': c.align = (size_t)parse_size(optarg); break;
        case 'g': c.grow_max = (size_t)parse_size(optarg); grow_given = 1; break;
        case 'N':
            grow_node = (int)parse_size(optarg);
            node_malloc = (void *(*)(size_t, int))dlsym(RTLD_DEFAULT, "nodal_malloc_node");
            if (node_malloc == NULL)
                die("-N: no nodal_malloc_node (run it with nodal)");
            break;
        case 'P': bench_pinning = 0; break;
        default: usage();
        }
    }
    if (c.mode == GROW) {
        if (!sizes_given)
            sizes[0] = 1 << 20;
        if (!grow_given)
            c.grow_max = (size_t)64 << 20;
        nsizes = 1;
    }
    if (c.mode == LARGE) {
        if (!sizes_given)
            sizes[0] = (128 << 10) + 1;
        if (!grow_given)
            c.grow_max = 1 << 20;
        if (!total_given)
            total = 400000;
        nsizes = 1;
    }
    if (threads < 1 || c.batch < 1 || ((c.mode == GROW || c.mode == LARGE) && (sizes[0] < 1 || (size_t)sizes[0] >= c.grow_max)))
        usage();
    c.ops = total / threads;
    if (c.mode == BATCH)
        c.ops = (c.ops / c.batch) * c.batch;
    c.warm = warm >= 0 ? warm : c.ops / 10;
    if (c.mode == LARGE) {
        large_nslots = 8 * (size_t)threads;
        large_slots = calloc(large_nslots, sizeof *large_slots);
    }

    for (int i = 0; i < nsizes; i++) {
        c.size = (size_t)sizes[i];
        bench_team r;
        bench_team_run(threads, worker, &c, &r);
        double ns = bench_ns_per_op(&r, threads), cpu = bench_cpu_ns_per_op(&r);
        const char *m = mode_names[c.mode];
        switch (c.mode) {
        case BATCH: {
            /* Split the CPU time per pair by the measured phase ratio. */
            double phases = r.acc[0] + r.acc[1];
            double fa = phases > 0 ? r.acc[0] / phases : 0.5;
            bench_result("micro", "mode=%s size=%zu threads=%d ns_pair=%.2f cpu_ns_pair=%.2f cpu_ns_alloc=%.2f "
                         "cpu_ns_free=%.2f user_s=%.3f sys_s=%.3f",
                         m, c.size, threads, ns, cpu, cpu * fa, cpu * (1 - fa), r.user_s, r.sys_s);
            break;
        }
        case GROW:
            bench_result("micro", "mode=%s from=%zu max=%zu threads=%d ns_realloc=%.2f cpu_ns_realloc=%.2f user_s=%.3f sys_s=%.3f",
                         m, c.size, c.grow_max, threads, ns, cpu, r.user_s, r.sys_s);
            break;
        case REALLOC:
        case SHRINK:
            bench_result("micro", "mode=%s max=%zu threads=%d ns_realloc=%.2f cpu_ns_realloc=%.2f user_s=%.3f sys_s=%.3f",
                         m, c.grow_max, threads, ns, cpu, r.user_s, r.sys_s);
            break;
        case LARGE:
            bench_result("micro", "mode=%s from=%zu max=%zu threads=%d ns_pair=%.2f cpu_ns_pair=%.2f user_s=%.3f sys_s=%.3f",
                         m, c.size, c.grow_max, threads, ns, cpu, r.user_s, r.sys_s);
            break;
        case ALIGNED:
            bench_result("micro", "mode=%s size=%zu align=%zu threads=%d ns_pair=%.2f cpu_ns_pair=%.2f user_s=%.3f sys_s=%.3f",
                         m, c.size, c.align, threads, ns, cpu, r.user_s, r.sys_s);
            break;
        default:
            bench_result("micro", "mode=%s size=%zu threads=%d ns_pair=%.2f cpu_ns_pair=%.2f user_s=%.3f sys_s=%.3f",
                         m, c.size, threads, ns, cpu, r.user_s, r.sys_s);
        }
        if (c.mode == REALLOC || c.mode == SHRINK)
            break;  /* size does not apply */
    }
    if (c.mode == LARGE) {
        for (size_t i = 0; i < large_nslots; i++)
            free(large_slots[i]);
        free(large_slots);
    }
    return 0;
}
