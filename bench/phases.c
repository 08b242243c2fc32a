/*
 * phases.c - a phase of large blocks, then a phase of small ones: what
 * stays resident of the first while the second runs.
 *
 * The main thread allocates -m bytes (default 28 MiB) in blocks of -s bytes
 * (default 600 KiB), writes them whole and frees them all. A thread started
 * then keeps -k slots (default 4,096) of blocks of 64 B-3.6 KiB (every
 * block's first 64 bytes written) and replaces a random one at every step
 * for -d ms (default 600): an allocator that keeps freed memory for a while
 * has given back what it means to by then. Reported: RSS after the large
 * phase's frees (free_rss_mib), at the end of the small phase (end_rss_mib),
 * the small phase's live bytes (live_mib), peak RSS.
 *
 * Written for docs/results.md, branch h54s: a heap that took a segment the
 * large blocks left resident in nodal's node cache kept all of it.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cfg {
    int slots;
    long long ms;
    size_t live;
    long end_rss;
};

static void small_phase(bench_thread *t)
{
    struct cfg *c = t->arg;
    void **slot = malloc(sizeof *slot * (size_t)c->slots);
    size_t *size = malloc(sizeof *size * (size_t)c->slots);
    if (slot == NULL || size == NULL)
        die("malloc of the slots failed");
    bench_sync(t);
    for (int k = 0; k < c->slots; k++) {
        size[k] = 64 + 512 * (size_t)rng_below(&t->rng, 8);
        if ((slot[k] = malloc(size[k])) == NULL)
            die("malloc(%zu) failed", size[k]);
        memset(slot[k], 1, 64);
    }
    uint64_t end = now_ns() + (uint64_t)c->ms * 1000000u;
    while (now_ns() < end)
        for (int i = 0; i < 1000; i++) {
            int k = (int)rng_below(&t->rng, (uint64_t)c->slots);
            free(slot[k]);
            size[k] = 64 + 512 * (size_t)rng_below(&t->rng, 8);
            if ((slot[k] = malloc(size[k])) == NULL)
                die("malloc(%zu) failed", size[k]);
            memset(slot[k], 1, 64);
        }
    bench_stop(t);
    c->end_rss = bench_rss_kib();
    c->live = 0;
    for (int k = 0; k < c->slots; k++) {
        c->live += size[k];
        free(slot[k]);
    }
    free(slot);
    free(size);
}

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    long long total = 28ll << 20, block = 600 << 10;
    struct cfg c = { .slots = 4096, .ms = 600 };
    int opt;
    while ((opt = getopt(argc, argv, "m:s:k:d:P")) != -1) {
        switch (opt) {
        case 'm': total = parse_size(optarg); break;
        case 's': block = parse_size(optarg); break;
        case 'k': c.slots = (int)parse_size(optarg); break;
        case 'd': c.ms = parse_size(optarg); break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: phases [-m large bytes] [-s large block] [-k small slots] [-d ms] [-P]\n");
            return 2;
        }
    }
    if (block < 1 || total < block || c.slots < 1)
        die("need -s >= 1, -m >= -s and -k >= 1");
    long long n = total / block;
    void **b = malloc(sizeof *b * (size_t)n);
    if (b == NULL)
        die("malloc of the large slots failed");
    for (long long i = 0; i < n; i++) {
        if ((b[i] = malloc((size_t)block)) == NULL)
            die("malloc(%lld) failed", block);
        memset(b[i], 1, (size_t)block);
    }
    for (long long i = 0; i < n; i++)
        free(b[i]);
    free(b);
    long after_free = bench_rss_kib();
    bench_team r;
    bench_team_run(1, small_phase, &c, &r);
    bench_result("phases", "large_mib=%.1f block_kib=%lld slots=%d ms=%lld free_rss_mib=%.1f end_rss_mib=%.1f "
                 "live_mib=%.1f sys_s=%.3f peak_rss_mib=%.1f",
                 (double)total / (1 << 20), block >> 10, c.slots, c.ms, after_free / 1024.0, c.end_rss / 1024.0,
                 (double)c.live / (1 << 20), r.sys_s, bench_peak_rss_kib() / 1024.0);
    return 0;
}
