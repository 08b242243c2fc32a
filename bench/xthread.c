/*
 * xthread.c - cross-thread frees: producer/consumer pairs, one thread
 * allocates, another frees.
 *
 * -p pairs of threads (a list: one row per count, default 1). In each pair
 * the producer mallocs a block and pushes the pointer into a
 * single-producer/single-consumer ring; the consumer pops it, reads the first
 * byte and frees the block. Every block is therefore freed by a thread that
 * did not allocate it: the remote-free path of the allocator. Block sizes:
 * one row per size in -s, plus with -x min,max a row (size=min-max) whose
 * sizes are drawn log-uniformly from [min, max] per block (-M: that row
 * alone, without -s's). The producer writes
 * the first byte of each block (and one byte per 64 B of a mixed-size block,
 * as a program filling a message would).
 *
 * Reported per row: ns per object = wall time / objects per pair, i.e. the
 * time one object takes to go through the pipeline in steady state
 * (core-normalised when the pairs outnumber the CPUs); CPU time of both
 * threads per object (cpu_ns_obj; the threads spin briefly, then yield, while
 * they wait for each other, so it includes some waiting); throughput in
 * million objects per second over all pairs (mops); the process's user and
 * system seconds over the row; and peak RSS (reset before each row, so it
 * starts from what the previous rows left resident). inflight_mib is the
 * part of that peak the program itself holds: the most blocks allocated and
 * not yet freed in all the rings at once (each producer looks at every ring
 * every 1,024 of its objects, so a peak between two looks can be missed by
 * up to that many per pair), times the block size (mixed sizes: times the
 * mean size the producers asked for). How full a ring gets depends on which thread runs
 * faster and on the scheduler, not on what the allocator keeps: a producer
 * that outruns its consumer fills its ring (65,536 x 64 B = 4 MiB), and on
 * a busy machine a consumer descheduled for a moment lets it fill too; so
 * compare peak_rss_mib - inflight_mib between allocators, not peak RSS
 * alone.
 *
 * -m noalloc passes blocks from a static pool instead: the cost of the ring
 * and of moving the blocks' cache lines between the cores, without any
 * allocator. -g sets how many slots are published at a time (default 8, one
 * cache line of pointers), -r how many slots the ring has (default 65,536):
 * how far the producer may run ahead. A deep ring keeps the pipeline moving
 * when the two threads are not always running at the same time (a busy,
 * shared machine); with 4,096 slots the result there measured mostly the
 * scheduler.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RING_MAX 65536   /* slots; -r picks a power of two up to this */

struct ring {
    _Alignas(64) _Atomic uint64_t head;   /* next slot to write (producer) */
    _Alignas(64) _Atomic uint64_t tail;   /* next slot to read (consumer) */
    _Alignas(64) uint64_t peak;           /* most blocks in flight in all rings, as this producer saw them */
    double bytes;                         /* bytes the producer asked for, */
    uint64_t made;                        /* over this many blocks */
    _Alignas(64) void *slot[RING_MAX];
};

struct cfg {
    size_t size;            /* 0: log-uniform in [min, max] per block */
    size_t min, max;
    long long objects;      /* per pair */
    int noalloc;
    int batch;              /* publish every batch slots (power of two) */
    uint64_t depth;         /* ring slots in use (power of two) */
    struct ring *rings;     /* one per pair */
    int pairs;
};

/* -m noalloc: blocks handed out round-robin from a pool twice the ring's
   size (a block is never reused while the consumer may still read it), so the
   baseline pays the same cache-line transfers as real blocks. */
typedef char pool_block[64];
static pool_block *pool;

/* Spin briefly, then yield: on an oversubscribed or shared machine the
   partner may not be running. */
static void backoff(unsigned *spins)
{
    if (++*spins < 64)
        cpu_relax();
    else
        sched_yield();
}

static char *produce(const struct cfg *c, uint64_t *rng, long long i, size_t *szp)
{
    if (c->noalloc)
        return pool[i & (2 * c->depth - 1)];
    if (c->size)
        return malloc(c->size);
    size_t sz = rng_log_uniform(rng, c->min, c->max);
    *szp += sz;
    char *p = malloc(sz);
    for (size_t off = 64; off < sz; off += 64)
        p[off] = (char)off;
    return p;
}

static void producer(struct ring *r, const struct cfg *c, uint64_t *rng, long long n)
{
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t tail_seen = atomic_load_explicit(&r->tail, memory_order_acquire);
    uint64_t peak = r->peak;
    size_t bytes = 0;   /* mixed sizes: what the producer asked for */
    for (long long i = 0; i < n; i++) {
        char *p = produce(c, rng, i, &bytes);
        p[0] = (char)i;
        /* blocks in flight (allocated, not yet freed) in every ring,
           looked at now and then: two loads per pair per 1,024 objects */
        if ((i & 1023) == 0) {
            uint64_t all = head + 1 - atomic_load_explicit(&r->tail, memory_order_relaxed);
            for (int k = 0; k < c->pairs; k++) {
                if (&c->rings[k] == r)
                    continue;
                /* tail first: the head read after it is at least as far */
                uint64_t t = atomic_load_explicit(&c->rings[k].tail, memory_order_acquire);
                all += atomic_load_explicit(&c->rings[k].head, memory_order_acquire) - t;
            }
            if (all > peak)
                peak = all;
        }
        unsigned spins = 0;
        while (head - tail_seen >= c->depth) {
            backoff(&spins);
            tail_seen = atomic_load_explicit(&r->tail, memory_order_acquire);
        }
        r->slot[head & (c->depth - 1)] = p;
        head++;
        /* publish in small groups so the consumer's line is not hammered */
        if ((head & (uint64_t)(c->batch - 1)) == 0 || i == n - 1)
            atomic_store_explicit(&r->head, head, memory_order_release);
    }
    r->peak = peak;
    r->bytes += c->size ? (double)c->size * (double)n : (double)bytes;
    r->made += (uint64_t)n;
}

static void consumer(struct ring *r, const struct cfg *c, long long n)
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t head_seen = atomic_load_explicit(&r->head, memory_order_acquire);
    long sum = 0;
    for (long long i = 0; i < n; i++) {
        unsigned spins = 0;
        while (tail == head_seen) {
            backoff(&spins);
            head_seen = atomic_load_explicit(&r->head, memory_order_acquire);
        }
        char *p = r->slot[tail & (c->depth - 1)];
        tail++;
        if ((tail & (uint64_t)(c->batch - 1)) == 0 || i == n - 1)
            atomic_store_explicit(&r->tail, tail, memory_order_release);
        sum += p[0];
        if (!c->noalloc)
            free(p);
    }
    escape(&sum);
}

static void worker(bench_thread *t)
{
    struct cfg *c = t->arg;
    struct ring *r = &c->rings[t->id / 2];
    long long warm = c->objects / 10;
    if (t->id % 2 == 0)
        producer(r, c, &t->rng, warm);
    else
        consumer(r, c, warm);
    bench_sync(t);
    if (t->id % 2 == 0)
        producer(r, c, &t->rng, c->objects);
    else
        consumer(r, c, c->objects);
    t->ops = t->id % 2 ? (uint64_t)c->objects : 0;
}

static void run_row(struct cfg *c, int pairs)
{
    if (posix_memalign((void **)&c->rings, 64, sizeof *c->rings * (size_t)pairs))
        die("out of memory");
    memset(c->rings, 0, sizeof *c->rings * (size_t)pairs);
    c->pairs = pairs;
    bench_reset_peak_rss();
    bench_team r;
    bench_team_run(2 * pairs, worker, c, &r);
    /* per-pair pipeline time; with more pairs than CPU pairs this is
       core-normalised like everything else */
    int cores = 2 * pairs < bench_ncpus() ? 2 * pairs : bench_ncpus();
    /* the most blocks in flight any producer saw, times the mean size */
    uint64_t peak = 0, made = 0;
    double bytes = 0;
    for (int i = 0; i < pairs; i++) {
        if (c->rings[i].peak > peak)
            peak = c->rings[i].peak;
        bytes += c->rings[i].bytes;
        made += c->rings[i].made;
    }
    double inflight = made ? (double)peak * bytes / (double)made : 0;
    double ns = (double)r.wall_ns * cores / 2.0 / (double)r.ops;
    double mops = (double)r.ops / ((double)r.wall_ns / 1e9) / 1e6;
    char size[64];
    if (c->size)
        snprintf(size, sizeof size, "%zu", c->size);
    else
        snprintf(size, sizeof size, "%zu-%zu", c->min, c->max);
    bench_result("xthread", "mode=%s size=%s pairs=%d ns_obj=%.2f cpu_ns_obj=%.2f mops=%.3f user_s=%.3f sys_s=%.3f "
                 "peak_rss_mib=%.1f inflight_mib=%.1f",
                 c->noalloc ? "noalloc" : "prodcons", size, pairs, ns, bench_cpu_ns_per_op(&r), mops,
                 r.user_s, r.sys_s, bench_peak_rss_kib() / 1024.0, inflight / 1048576.0);
    free(c->rings);
}

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    struct cfg c = { .objects = 2000000, .batch = 8, .depth = 65536 };
    long long sizes[16] = { 8 }, pl[16] = { 1 }, range[2] = { 0, 0 };
    int nsizes = 1, npl = 1, nrange = 0, opt;
    int mixed_only = 0;
    while ((opt = getopt(argc, argv, "s:x:n:p:g:r:mMP")) != -1) {
        switch (opt) {
        case 's': nsizes = parse_list(optarg, sizes, 16); break;
        case 'x': nrange = parse_list(optarg, range, 2); break;
        case 'n': c.objects = parse_size(optarg); break;
        case 'p': npl = parse_list(optarg, pl, 16); break;
        case 'g': c.batch = (int)parse_size(optarg); break;
        case 'r': c.depth = (uint64_t)parse_size(optarg); break;
        case 'm': c.noalloc = 1; break;
        case 'M': mixed_only = 1; break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: xthread [-s sizes] [-x min,max (mixed sizes)] [-n objects per pair] [-p pairs]\n"
                            "               [-g publish batch] [-r ring slots] [-m (no alloc)] [-M (-x's row only)] [-P]\n");
            return 2;
        }
    }
    for (int i = 0; i < npl; i++)
        if (pl[i] < 1)
            die("need at least one pair");
    if (nrange && (nrange != 2 || range[0] < 1 || range[1] < range[0]))
        die("-x takes min,max with 1 <= min <= max");
    if (mixed_only) {
        if (!nrange || c.noalloc)
            die("-M needs -x (and no -m)");
        nsizes = 0;
    }
    if (c.depth < 2 || c.depth > RING_MAX || (c.depth & (c.depth - 1)))
        die("-r must be a power of two in 2..%d", RING_MAX);
    if (c.batch < 1 || c.batch > (int)c.depth || (c.batch & (c.batch - 1)))
        die("-g must be a power of two <= -r");
    if (c.noalloc && posix_memalign((void **)&pool, 64, sizeof *pool * 2 * c.depth))
        die("out of memory");
    for (int k = 0; k < npl; k++) {
        for (int i = 0; i < nsizes + (nrange && !c.noalloc); i++) {
            if (i < nsizes) {
                c.size = (size_t)sizes[i];
                if (c.size < 1)
                    die("sizes must be >= 1");
            } else {
                c.size = 0;
                c.min = (size_t)range[0];
                c.max = (size_t)range[1];
            }
            run_row(&c, (int)pl[k]);
        }
    }
    return 0;
}
