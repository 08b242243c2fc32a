/*
 * mstress.c - stress with transfers, the shape of mimalloc-bench's "mstress"
 * (written here from its description): threads allocate random sizes, mostly
 * small and now and then up to MiBs, keep them in slot arrays, and swap
 * blocks with other threads through a shared transfer array, in rounds of
 * short-lived threads.
 *
 * -R rounds (default 5). Each round starts -t threads (default 2) and joins
 * them; the transfer array of -x slots (default 1,000) outlives the rounds,
 * so blocks of threads that have exited are freed by the threads of later
 * rounds (an allocator has to adopt or drain what an exited thread left).
 * -n steps in all (default 2,000,000), split over rounds and threads. Each
 * thread keeps -k slots (default 500), empty at its start; one step picks a
 * random slot and
 *     25 %  swaps it with a random transfer slot (one atomic exchange; either
 *           side may be empty), so the thread now holds another thread's block
 *     50 %  frees the slot's block (if any) and allocates a new one in its place
 *     25 %  frees the slot's block if there is one, else allocates one
 * and at its end the thread frees what its slots still hold. Sizes:
 *     90 %    8 B .. 256 B     (log-uniform in each band)
 *     9.9 %   257 B .. 64 KiB
 *     0.1 %   64 KiB .. 4 MiB
 * Every new block is touched (one byte in every 4 KiB) and gets a check word
 * (its size, scrambled) that is verified before it is freed: a block freed
 * twice or handed out twice shows up as a wrong word.
 *
 * Reported: wall seconds of the whole row (every round, thread start and
 * exit included), core-normalised wall ns per step, CPU ns per step (the
 * process's user + system time over the row, per step: thread exit
 * included), user and system seconds, and peak RSS.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#define CHECK_MAGIC 0x6d73747265737321ULL

struct cfg {
    long long steps;            /* per thread per round */
    int slots;
    long long xslots;
    _Atomic(uint64_t *) *xfer;  /* the shared transfer array */
};

static size_t stress_size(uint64_t *rng)
{
    uint64_t r = rng_below(rng, 1000);
    if (r < 900)
        return rng_log_uniform(rng, 8, 256);
    if (r < 999)
        return rng_log_uniform(rng, 257, 64 << 10);
    return rng_log_uniform(rng, (64 << 10) + 1, 4 << 20);
}

static uint64_t *new_block(uint64_t *rng)
{
    size_t sz = stress_size(rng);
    uint64_t *p = malloc(sz);
    if (!p)
        die("malloc(%zu) failed", sz);
    bench_touch_pages(p, sz);
    p[0] = sz ^ CHECK_MAGIC;
    return p;
}

static void drop(uint64_t *p)
{
    if (!p)
        return;
    uint64_t sz = p[0] ^ CHECK_MAGIC;
    if (sz < 8 || sz > (4 << 20))
        die("block %p: check word %#llx is wrong", (void *)p, (unsigned long long)p[0]);
    p[0] = 0;
    free(p);
}

static void worker(bench_thread *t)
{
    const struct cfg *c = t->arg;
    uint64_t **slot = calloc((size_t)c->slots, sizeof *slot);
    bench_sync(t);
    for (long long i = 0; i < c->steps; i++) {
        uint64_t r = rng_below(&t->rng, 4);
        int k = (int)rng_below(&t->rng, (uint64_t)c->slots);
        if (r == 0) {
            long long j = (long long)rng_below(&t->rng, (uint64_t)c->xslots);
            slot[k] = atomic_exchange_explicit(&c->xfer[j], slot[k], memory_order_acq_rel);
        } else if (r <= 2) {
            drop(slot[k]);
            slot[k] = new_block(&t->rng);
        } else if (slot[k]) {
            drop(slot[k]);
            slot[k] = NULL;
        } else {
            slot[k] = new_block(&t->rng);
        }
    }
    for (int k = 0; k < c->slots; k++)
        drop(slot[k]);
    free(slot);
    bench_stop(t);
    t->ops = (uint64_t)c->steps;
}

static double tv_s(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec / 1e6; }

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    struct cfg c = { .slots = 500, .xslots = 1000 };
    long long total = 2000000;
    int threads = 2, rounds = 5, opt;
    while ((opt = getopt(argc, argv, "t:R:n:k:x:P")) != -1) {
        switch (opt) {
        case 't': threads = (int)parse_size(optarg); break;
        case 'R': rounds = (int)parse_size(optarg); break;
        case 'n': total = parse_size(optarg); break;
        case 'k': c.slots = (int)parse_size(optarg); break;
        case 'x': c.xslots = parse_size(optarg); break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: mstress [-t threads] [-R rounds] [-n steps] [-k slots per thread]\n"
                            "               [-x transfer slots] [-P]\n");
            return 2;
        }
    }
    if (threads < 1 || rounds < 1 || c.slots < 1 || c.xslots < 1)
        die("need -t, -R, -k, -x >= 1");
    c.steps = total / rounds / threads;
    if (c.steps < 1)
        die("-n too small");
    c.xfer = calloc((size_t)c.xslots, sizeof *c.xfer);

    bench_reset_peak_rss();
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    uint64_t t0 = now_ns(), ops = 0;
    for (int i = 0; i < rounds; i++) {
        bench_team r;
        bench_team_run(threads, worker, &c, &r);
        ops += r.ops;
    }
    uint64_t wall = now_ns() - t0;
    getrusage(RUSAGE_SELF, &r1);
    double user = tv_s(r1.ru_utime) - tv_s(r0.ru_utime), sys = tv_s(r1.ru_stime) - tv_s(r0.ru_stime);
    int cores = threads < bench_ncpus() ? threads : bench_ncpus();
    bench_result("mstress", "threads=%d rounds=%d wall_s=%.3f ns_step=%.1f cpu_ns_step=%.1f user_s=%.3f sys_s=%.3f "
                 "peak_rss_mib=%.1f",
                 threads, rounds, (double)wall / 1e9, (double)wall * cores / (double)ops,
                 (user + sys) * 1e9 / (double)ops, user, sys, bench_peak_rss_kib() / 1024.0);
    for (long long j = 0; j < c.xslots; j++)
        drop(atomic_load(&c.xfer[j]));
    free(c.xfer);
    return 0;
}
