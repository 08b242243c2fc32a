/*
 * alignloop.c - large alignments and huge requests in a loop, as programs do
 * for I/O buffers (4 KiB), DMA and SIMD arenas (64 KiB) or huge-page regions
 * (1-2 MiB).
 *
 * One row per alignment and size range. Each of -t threads (default 1) keeps
 * -k slots (default 8); a call frees the block in a random slot and allocates
 * a new one, alternately with posix_memalign(align, size) and
 * aligned_alloc(align, size rounded up to a multiple of align), then writes
 * its first and last byte. The program stops if a block is misaligned.
 *   near rows (-a alignments, default 4k,16k,64k,256k,1m): size uniform in
 *       [align/2, 2*align]
 *   huge rows (-A alignments, default 4k,1m): size uniform in [4 MiB, 32 MiB]
 * -n calls per near row and -N per huge row (split over the threads), after a
 * tenth as many untimed warm-up calls per thread.
 *
 * Reported per row: core-normalised wall ns and CPU ns per call (one free and
 * one aligned allocation; CPU time includes kernel time), and the process's
 * user and system seconds over the row's timed region.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct cfg {
    size_t align, min, max;
    long long calls, warm;  /* per thread */
    int slots;
};

static void call(bench_thread *t, const struct cfg *c, char **slot, long long i)
{
    int k = (int)rng_below(&t->rng, (uint64_t)c->slots);
    free(slot[k]);
    size_t sz = c->min + (size_t)rng_below(&t->rng, c->max - c->min + 1);
    char *p = NULL;
    if (i & 1) {
        if (posix_memalign((void **)&p, c->align, sz) != 0)
            p = NULL;
    } else {
        sz = (sz + c->align - 1) / c->align * c->align;
        p = aligned_alloc(c->align, sz);
    }
    if (!p)
        die("aligned allocation of %zu B at %zu failed", sz, c->align);
    if ((uintptr_t)p & (c->align - 1))
        die("%p is not aligned to %zu", (void *)p, c->align);
    p[0] = 1;
    p[sz - 1] = 2;
    escape(p);
    slot[k] = p;
}

static void worker(bench_thread *t)
{
    const struct cfg *c = t->arg;
    char **slot = calloc((size_t)c->slots, sizeof *slot);
    for (long long i = 0; i < c->warm; i++)
        call(t, c, slot, i);
    bench_sync(t);
    for (long long i = 0; i < c->calls; i++)
        call(t, c, slot, i);
    bench_stop(t);
    t->ops = (uint64_t)c->calls;
    for (int k = 0; k < c->slots; k++)
        free(slot[k]);
    free(slot);
}

static void row(struct cfg *c, const char *kind, int threads, long long total)
{
    c->calls = total / threads;
    c->warm = c->calls / 10;
    bench_team r;
    bench_team_run(threads, worker, c, &r);
    bench_result("alignloop", "size=%s align=%zu threads=%d ns_call=%.1f cpu_ns_call=%.1f user_s=%.3f sys_s=%.3f",
                 kind, c->align, threads, bench_ns_per_op(&r, threads), bench_cpu_ns_per_op(&r), r.user_s, r.sys_s);
}

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    long long near[16] = { 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20 };
    long long huge[16] = { 4 << 10, 1 << 20 };
    int nnear = 5, nhuge = 2, threads = 1, slots = 8, opt;
    long long near_calls = 200000, huge_calls = 2000;
    while ((opt = getopt(argc, argv, "a:A:n:N:k:t:P")) != -1) {
        switch (opt) {
        case 'a': nnear = parse_list(optarg, near, 16); break;
        case 'A': nhuge = parse_list(optarg, huge, 16); break;
        case 'n': near_calls = parse_size(optarg); break;
        case 'N': huge_calls = parse_size(optarg); break;
        case 'k': slots = (int)parse_size(optarg); break;
        case 't': threads = (int)parse_size(optarg); break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: alignloop [-a near alignments] [-A huge alignments] [-n calls per near row]\n"
                            "                 [-N calls per huge row] [-k slots] [-t threads] [-P]\n"
                            "       (an empty list is 0: -a 0 or -A 0 skips those rows)\n");
            return 2;
        }
    }
    if (threads < 1 || slots < 1)
        die("need -t >= 1 and -k >= 1");
    for (int i = 0; i < nnear + nhuge; i++) {
        long long a = i < nnear ? near[i] : huge[i - nnear];
        if (a == 0)
            continue;
        if (a < (long long)sizeof(void *) || (a & (a - 1)))
            die("alignment %lld is not a power of two >= %zu", a, sizeof(void *));
        struct cfg c = { .align = (size_t)a, .slots = slots };
        if (i < nnear) {
            c.min = c.align / 2;
            c.max = 2 * c.align;
            row(&c, "near", threads, near_calls);
        } else {
            c.min = 4u << 20;
            c.max = 32u << 20;
            row(&c, "huge", threads, huge_calls);
        }
    }
    return 0;
}
