/*
 * rss_peak.c - memory goes back to the OS after a peak. The program
 * allocates and touches 512 MiB in mixed sizes, frees all of it, and the
 * resident set (the kernel's count, /proc/self/statm) must come back down
 * near where it was before the peak:
 *
 *   - without any nodal call: a program that frees everything gets its memory
 *     back after nodal's purge delay. We sleep 100 ms at a time, doing a
 *     little small-block malloc/free activity (in case purging is driven by
 *     allocation calls rather than a background thread), for up to 10 s;
 *     bound: pre-peak RSS + 32 MiB (1/16 of the peak).
 *   - with nodal_collect(1) once (force: purge now, whatever the delay), no
 *     waiting; bound: pre-peak RSS + 16 MiB.
 *   - blocks allocated by threads that have since exited, freed by the main
 *     thread, no nodal call: as the first, bound pre-peak + 32 MiB.
 */
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>

#include "api.h"
#include "check.h"
#include "proc.h"
#include "sizes.h"

#define PEAK ((size_t)512 << 20)
#define NO_CALL_SLACK ((size_t)32 << 20)     /* RSS above pre-peak allowed, no call */
#define COLLECT_SLACK ((size_t)16 << 20)     /* ... right after nodal_collect(1) */

struct batch {
    void **p;
    size_t n, cap;
    size_t bytes;
    uint64_t stream;
};

/* The pointer array is mmap()ed, outside the allocator under test, and
   touched before the pre-peak measurement. */
static void batch_init(struct batch *b, size_t cap, uint64_t stream)
{
    b->p = mmap(NULL, cap * sizeof(void *), PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT(b->p != MAP_FAILED, "mmap of the pointer array to work");
    memset(b->p, 0, cap * sizeof(void *));
    b->n = 0;
    b->cap = cap;
    b->bytes = 0;
    b->stream = stream;
}

/* Allocates `target` bytes: by bytes about 40% small, 30% medium, 20% large,
   10% huge; every byte written. */
static void batch_fill(struct batch *b, size_t target)
{
    const struct nd_api *A = nd_api();
    struct nd_rng r = nd_rng_for(b->stream);
    size_t band_bytes[4] = { 0 };
    const size_t band_share[4] = { 40, 30, 20, 10 };
    const size_t band_lo[4] = { 16, 1025, 65537, (size_t)2 << 20 };
    const size_t band_hi[4] = { 1024, 65536, (size_t)1 << 20, (size_t)16 << 20 };
    for (int band = 0; band < 4; band++) {
        size_t want = target / 100 * band_share[band];
        while (band_bytes[band] < want) {
            EXPECT(b->n < b->cap, "the pointer array (%zu) to be big enough", b->cap);
            size_t s = band_lo[band] + nd_rng_below(&r, band_hi[band] - band_lo[band] + 1);
            void *p = A->malloc(s);
            EXPECT(p != NULL, "%s(%zu) to succeed at %zu MiB allocated", nd_fn("malloc"), s,
                   b->bytes >> 20);
            memset(p, 0x5a, s);
            b->p[b->n++] = p;
            band_bytes[band] += s;
            b->bytes += s;
        }
    }
}

/* Frees in a shuffled order, so no page empties early by luck. */
static void batch_free(struct batch *b)
{
    struct nd_rng r = nd_rng_for(b->stream + 100);
    for (size_t i = b->n; i > 1; i--) {
        size_t j = nd_rng_below(&r, i);
        void *t = b->p[i - 1];
        b->p[i - 1] = b->p[j];
        b->p[j] = t;
    }
    for (size_t i = 0; i < b->n; i++)
        nd_api()->free(b->p[i]);
    b->n = 0;
}

static void small_activity(void)
{
    const struct nd_api *A = nd_api();
    for (int i = 0; i < 1000; i++) {
        void *p = A->malloc(64);
        EXPECT(p != NULL, "%s(64) to succeed", nd_fn("malloc"));
        A->free(p);
    }
}

static size_t warm_up_and_measure(void)
{
    small_activity();
    return nd_rss_bytes();
}

static void expect_peak(size_t pre, size_t peak)
{
    EXPECT(peak >= pre + PEAK / 2, "the resident set to rise by at least %zu MiB while %zu MiB "
           "are allocated and written (from %zu MiB), it is %zu MiB; the test measures nothing",
           (PEAK / 2) >> 20, PEAK >> 20, pre >> 20, peak >> 20);
}

/* Sleeps in 100 ms steps with a little activity until RSS <= limit or 10 s
   pass; returns the last RSS. */
static size_t wait_for_rss_below(size_t limit, double *waited)
{
    struct timespec step = { 0, 100 * 1000 * 1000 };
    size_t rss = nd_rss_bytes();
    int i = 0;
    for (; i < 100 && rss > limit; i++) {
        nanosleep(&step, NULL);
        small_activity();
        rss = nd_rss_bytes();
    }
    *waited = i * 0.1;
    return rss;
}

static void rss_falls_back_after_peak_without_nodal_calls(void)
{
    struct batch b;
    batch_init(&b, 2u << 20, 1);
    size_t pre = warm_up_and_measure();
    batch_fill(&b, PEAK);
    size_t peak = nd_rss_bytes();
    expect_peak(pre, peak);
    batch_free(&b);
    size_t bound = pre + NO_CALL_SLACK;
    double waited;
    size_t after = wait_for_rss_below(bound, &waited);
    printf("rss before %zu MiB, at peak %zu MiB, after free %zu MiB (waited %.1f s)\n",
           pre >> 20, peak >> 20, after >> 20, waited);
    EXPECT(after <= bound, "the resident set to fall back to within %zu MiB of its pre-peak "
           "%zu MiB within 10 s of freeing everything (no nodal call), it is %zu MiB",
           NO_CALL_SLACK >> 20, pre >> 20, after >> 20);
}

static void rss_falls_back_after_peak_with_nodal_collect(void)
{
    struct batch b;
    batch_init(&b, 2u << 20, 2);
    size_t pre = warm_up_and_measure();
    batch_fill(&b, PEAK);
    size_t peak = nd_rss_bytes();
    expect_peak(pre, peak);
    batch_free(&b);
    nodal_collect(1);
    size_t after = nd_rss_bytes();
    printf("rss before %zu MiB, at peak %zu MiB, after free + nodal_collect(1) %zu MiB\n",
           pre >> 20, peak >> 20, after >> 20);
    EXPECT(after <= pre + COLLECT_SLACK, "the resident set right after nodal_collect(1) to "
           "be within %zu MiB of its pre-peak %zu MiB, it is %zu MiB", COLLECT_SLACK >> 20,
           pre >> 20, after >> 20);
}

static void *fill_in_thread(void *arg)
{
    batch_fill(arg, PEAK / 4);
    return NULL;
}

static void rss_falls_back_after_peak_in_exited_threads(void)
{
    enum { T = 4 };
    struct batch b[T];
    for (int t = 0; t < T; t++)
        batch_init(&b[t], 1u << 20, 10 + (uint64_t)t);
    nd_api();
    nd_test_seed();
    size_t pre = warm_up_and_measure();
    pthread_t tid[T];
    for (int t = 0; t < T; t++)
        EXPECT(pthread_create(&tid[t], NULL, fill_in_thread, &b[t]) == 0, "pthread_create to work");
    for (int t = 0; t < T; t++)
        pthread_join(tid[t], NULL);
    size_t peak = nd_rss_bytes();
    expect_peak(pre, peak);
    for (int t = 0; t < T; t++)
        batch_free(&b[t]);
    size_t bound = pre + NO_CALL_SLACK;
    double waited;
    size_t after = wait_for_rss_below(bound, &waited);
    printf("rss before %zu MiB, at peak %zu MiB (4 threads, exited), after the main thread "
           "freed it all %zu MiB (waited %.1f s)\n", pre >> 20, peak >> 20, after >> 20, waited);
    EXPECT(after <= bound, "the resident set to fall back to within %zu MiB of its pre-peak "
           "%zu MiB within 10 s of freeing the blocks of exited threads, it is %zu MiB",
           NO_CALL_SLACK >> 20, pre >> 20, after >> 20);
}

static const struct nd_case cases[] = {
    ND_CASE(rss_falls_back_after_peak_without_nodal_calls),
    ND_CASE(rss_falls_back_after_peak_with_nodal_collect),
    ND_CASE(rss_falls_back_after_peak_in_exited_threads),
};
ND_MAIN(cases)
