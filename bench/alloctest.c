/*
 * alloctest.c - mixed small sizes, the shape of the "alloc-test" of
 * mimalloc-bench (written here from its description): each thread keeps a
 * large array of small blocks whose sizes are skewed towards the smallest,
 * and replaces random ones, using every block it allocates.
 *
 * Each of -t threads (default 1) keeps -k slots (default 65,536), filled
 * before the timed region (about 3 MiB per thread: more than the caches, so
 * the blocks freed are mostly cold). One step picks a random slot, checks its
 * block (first and last byte), frees it, and allocates a new one that it
 * fills entirely (memset), as a program that builds an object there would.
 * Sizes: an octave 2^e, e = 3 .. 9, with probability 1/2, 1/4, ... (the last
 * octave takes the remainder), then uniform within the octave: 8 B .. 1 KiB,
 * half of the blocks under 16 B, a mean of about 40 B. -n steps in all
 * (default 5,000,000), split over the threads.
 *
 * -o ORDER changes the order of one step's calls, to tell an allocator's
 * own cost from what its free does to the program's next malloc (the same
 * calls and blocks; docs/results.md, h56a): `free` (the default: free the
 * block, then allocate its replacement), `malloc` (allocate the
 * replacement, fill it, then free the old block) or `previous` (allocate
 * and fill the replacement, then free the block the previous step took
 * out: a free whose pointer was loaded a step earlier).
 *
 * -w WORK adds WORK (0, 16, 32, 48 or 64) instructions of the program's own
 * to each step: register-only adds in four independent chains, no loads or
 * stores, independent of the blocks. They tell whether a step's time goes
 * with the instructions it runs (what a faster allocator saves a program
 * that waits on its own misses), as a model of an allocator whose calls
 * take WORK more instructions (docs/results.md, h57a).
 *
 * Reported: core-normalised wall ns and CPU ns per step (free + malloc +
 * fill), wall seconds, the process's user and system seconds over the timed
 * region, and peak RSS.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum order { ORDER_FREE, ORDER_MALLOC, ORDER_PREVIOUS };
static const char *const order_names[] = { "free", "malloc", "previous" };   /* -o, by enum order */

struct cfg {
    long long steps;            /* per thread */
    int slots;
    enum order order;
    int work;                   /* -w: the program's own instructions added to a step */
};

struct slot {
    unsigned char *p;
    uint32_t size;
};

static size_t small_size(uint64_t *rng)
{
    uint64_t r = rng_next(rng);
    int e = 3;
    while (e < 9 && (r & 1)) {          /* each further octave: half as likely */
        e++;
        r >>= 1;
    }
    size_t lo = (size_t)1 << e;
    return lo + (size_t)rng_below(rng, lo);
}

static void fill(struct slot *s, uint64_t *rng)
{
    size_t sz = small_size(rng);
    s->p = malloc(sz);
    if (!s->p)
        die("malloc(%zu) failed", sz);
    s->size = (uint32_t)sz;
    memset(s->p, (int)(sz & 0xff), sz);
}

/* REPS x 4 adds of 1 in four registers (four chains of REPS each): -w. */
#if defined(__x86_64__)
#define WORK_ADD4 "lea 1(%0),%0\n\tlea 1(%1),%1\n\tlea 1(%2),%2\n\tlea 1(%3),%3\n\t"
#elif defined(__aarch64__)
#define WORK_ADD4 "add %0,%0,#1\n\tadd %1,%1,#1\n\tadd %2,%2,#1\n\tadd %3,%3,#1\n\t"
#else
#error "alloctest -w: an add instruction for this architecture"
#endif
#define WORK_ADDS(seed, reps)                                                  \
    do {                                                                       \
        unsigned long w0_ = (seed), w1_ = w0_, w2_ = w0_, w3_ = w0_;           \
        __asm__ volatile(".rept " #reps "\n\t" WORK_ADD4 ".endr"             \
                         : "+r"(w0_), "+r"(w1_), "+r"(w2_), "+r"(w3_));        \
    } while (0)

/* The timed steps; work is a constant in each call (worker's switch), so
   the loop holds exactly its adds. */
static inline __attribute__((always_inline)) void run_steps(bench_thread *t, const struct cfg *c,
                                                            struct slot *slot, unsigned char **prevp, int work)
{
    unsigned char *prev = *prevp;   /* -o previous: the block the last step took out */
    for (long long i = 0; i < c->steps; i++) {
        struct slot *s = &slot[rng_below(&t->rng, (uint64_t)c->slots)];
        unsigned char want = (unsigned char)(s->size & 0xff);
        if (s->p[0] != want || s->p[s->size - 1] != want)
            die("block %p of %u B was overwritten", (void *)s->p, s->size);
        unsigned char *old = s->p;
        switch (c->order) {
        case ORDER_FREE:
            free(old);
            fill(s, &t->rng);
            break;
        case ORDER_MALLOC:
            fill(s, &t->rng);
            free(old);
            break;
        case ORDER_PREVIOUS:
            fill(s, &t->rng);
            free(prev);
            prev = old;
            break;
        }
        if (work == 16)
            WORK_ADDS((unsigned long)i, 4);
        else if (work == 32)
            WORK_ADDS((unsigned long)i, 8);
        else if (work == 48)
            WORK_ADDS((unsigned long)i, 12);
        else if (work == 64)
            WORK_ADDS((unsigned long)i, 16);
    }
    *prevp = prev;
}

static void worker(bench_thread *t)
{
    const struct cfg *c = t->arg;
    struct slot *slot = malloc(sizeof *slot * (size_t)c->slots);
    for (int k = 0; k < c->slots; k++)
        fill(&slot[k], &t->rng);
    unsigned char *prev = NULL;
    bench_sync(t);
    switch (c->work) {
    case 0:  run_steps(t, c, slot, &prev, 0); break;
    case 16: run_steps(t, c, slot, &prev, 16); break;
    case 32: run_steps(t, c, slot, &prev, 32); break;
    case 48: run_steps(t, c, slot, &prev, 48); break;
    default: run_steps(t, c, slot, &prev, 64); break;
    }
    bench_stop(t);
    free(prev);
    t->ops = (uint64_t)c->steps;
    for (int k = 0; k < c->slots; k++)
        free(slot[k].p);
    free(slot);
}

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    struct cfg c = { .slots = 65536, .order = ORDER_FREE };
    long long total = 5000000;
    int threads = 1, opt;
    while ((opt = getopt(argc, argv, "t:n:k:o:w:P")) != -1) {
        switch (opt) {
        case 't': threads = (int)parse_size(optarg); break;
        case 'n': total = parse_size(optarg); break;
        case 'k': c.slots = (int)parse_size(optarg); break;
        case 'o': {
            unsigned k = 0;
            while (k < sizeof order_names / sizeof *order_names && strcmp(optarg, order_names[k]) != 0)
                k++;
            if (k == sizeof order_names / sizeof *order_names)
                die("-o takes free, malloc or previous");
            c.order = (enum order)k;
            break;
        }
        case 'w':
            c.work = (int)parse_size(optarg);
            if (c.work % 16 != 0 || c.work < 0 || c.work > 64)
                die("-w takes 0, 16, 32, 48 or 64");
            break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: alloctest [-t threads] [-n steps] [-k slots per thread] [-o free|malloc|previous] [-w 0|16|32|48|64] [-P]\n");
            return 2;
        }
    }
    if (threads < 1 || c.slots < 1)
        die("need -t >= 1 and -k >= 1");
    c.steps = total / threads;
    bench_reset_peak_rss();
    bench_team r;
    bench_team_run(threads, worker, &c, &r);
    bench_result("alloctest", "threads=%d slots=%d order=%s work=%d ns_step=%.2f cpu_ns_step=%.2f wall_s=%.3f user_s=%.3f sys_s=%.3f "
                 "peak_rss_mib=%.1f",
                 threads, c.slots, order_names[c.order], c.work,
                 bench_ns_per_op(&r, threads), bench_cpu_ns_per_op(&r), (double)r.wall_ns / 1e9,
                 r.user_s, r.sys_s, bench_peak_rss_kib() / 1024.0);
    return 0;
}
