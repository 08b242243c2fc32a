/*
 * batchq.c - batch producer/consumer: producers allocate small objects in
 * batches and hand each batch, through one queue under a mutex and condition
 * variables, to consumers that free them.
 *
 * -w W producers and W consumers (2W threads; default W = 2). Each producer
 * makes -n / W objects (default 4,000,000 in all) of -s bytes (default 64) in
 * batches of -b (default 100): it mallocs the batch's objects, writes the
 * first and the last byte of each, chains them through their first word and
 * pushes the chain's head onto the queue. A consumer pops a batch, walks the
 * chain (reading each object) and frees every object. So every object is
 * freed by a thread that did not allocate it, a whole batch at a time: the
 * remote-free path of the allocator in bulk, as when a pipeline stage hands
 * work items to the next one.
 *
 * -x X: every 8,192nd object a producer makes is X bytes instead (at least
 * -s; default none): a program whose hand-off carries a rare block of
 * another size, as the heap profile's sampled requests are (issue 21: on
 * this workload they cost nodal the same CPU as such blocks do without the
 * profile).
 *
 * The queue holds at most -q batches (default 64): a producer that finds it
 * full waits on a condition variable, as a consumer that finds it empty does,
 * so the objects in flight stay bounded (64 x 100 x 64 B = 400 KiB) and peak
 * RSS measures the allocator rather than the backlog. Past the CPUs (W = 8:
 * 16 threads on 2 cores) the threads wait for each other in the kernel; the
 * futex calls cost the same under every allocator.
 *
 * Reported: core-normalised wall ns per object (wall time x min(2W, CPUs) /
 * objects), CPU ns per object (all threads, queue and wake-ups included),
 * million objects per second, wall seconds, the process's user and system
 * seconds over the timed region, peak RSS, and the most objects in flight
 * at once (made and not yet freed: peak_inflight). With large objects or a
 * deep queue the backlog is most of the peak RSS (-s 49152: up to 8,000
 * objects of which the two OS pages written are resident, 62.5 MiB; -q
 * 100000: up to 4 M objects), and how full the queue gets depends on how
 * fast the producers run against the consumers, so the peak RSS of two
 * allocators compares their backlogs as much as themselves.
 *
 * What the allocator holds beyond the live objects, measured in the run
 * (beyond_mib): the most RSS - live bytes at a moment the RSS grew. A
 * sampler thread (not one of the team; it never calls malloc, so the
 * allocator never sees it) reads the process's RSS every -i microseconds
 * (default 1000; 0: no sampler). Live bytes are the objects made and not yet
 * freed, each counted as the least memory its writes keep resident: its
 * size, or past two OS pages the two OS pages the program writes (first
 * word, last byte). With each RSS reading the sampler takes the most live
 * bytes there were since its last sample (the producers raise a window's
 * high, the sampler reads and resets it after the RSS), and at least those
 * read just before and after the RSS: on a loaded machine it runs late,
 * after a burst of the producers that the consumers have freed already, and
 * the RSS it reads grew for objects that lived in between. So a malloc or a
 * free around the reading can only make the difference smaller, never
 * larger: a lower bound, looser the later the sampler runs. A sample that
 * finds the RSS more than 1 MiB above the last such sample is a growth
 * sample (the kernel's count lags by up to its per-CPU batches, and a late
 * fold must not pass for growth once the objects are freed), and beyond_mib
 * is the largest RSS - live of the growth samples. Only those: once the
 * objects are freed every allocator keeps memory for a while, and RSS - live
 * then is only what it has not returned yet. An allocator that reuses every
 * freed block before it takes new memory grows only when its live bytes
 * reach a new high, so its beyond_mib is what the process holds besides the
 * objects (code, libraries, stacks, the queue's ring: rss_start_mib, the RSS
 * when the team was started, is most of it) and its own metadata and caches;
 * memory an allocator took while freed blocks waited elsewhere (another
 * thread's cache, a page whose owner is not running) counts in full, however
 * far the producers ran ahead. A note line gives the samples, the growth
 * samples, and the RSS and live bytes at the largest difference.
 * inflight_mib is the most live bytes at once. Both in MiB.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct cfg {
    int producers;
    long long batches;          /* per producer */
    int batch;                  /* objects per batch */
    size_t size;
    size_t odd;                 /* -x: every ODD_EVERY-th object's size (0: none) */
    /* the queue: a ring of batch heads; NULL is a consumer's stop signal */
    pthread_mutex_t mu;
    pthread_cond_t not_empty, not_full;
    int wait_empty, wait_full;  /* threads waiting on each condition */
    size_t head, tail, cap;
    void **ring;
    int producers_left;         /* under mu */
};

static void push(struct cfg *c, void *item)
{
    pthread_mutex_lock(&c->mu);
    while (c->tail - c->head == c->cap) {
        c->wait_full++;
        pthread_cond_wait(&c->not_full, &c->mu);
        c->wait_full--;
    }
    c->ring[c->tail++ % c->cap] = item;
    if (c->wait_empty)
        pthread_cond_signal(&c->not_empty);
    pthread_mutex_unlock(&c->mu);
}

static void *pop(struct cfg *c)
{
    pthread_mutex_lock(&c->mu);
    while (c->tail == c->head) {
        c->wait_empty++;
        pthread_cond_wait(&c->not_empty, &c->mu);
        c->wait_empty--;
    }
    void *item = c->ring[c->head++ % c->cap];
    if (c->wait_full)
        pthread_cond_signal(&c->not_full);
    pthread_mutex_unlock(&c->mu);
    return item;
}

#define ODD_EVERY 8192

/* Objects made and not yet freed and their live bytes (see the top), and
   the most of each at once: counted once per batch on each side. live_window:
   the most live bytes since the sampler last looked (it resets it). */
static long long inflight, inflight_peak, live_bytes, live_peak, live_window;
static void peak_raise(long long *peak, long long now)
{
    long long p = __atomic_load_n(peak, __ATOMIC_RELAXED);
    while (now > p && !__atomic_compare_exchange_n(peak, &p, now, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}
static void inflight_add(long long n, long long bytes)
{
    peak_raise(&inflight_peak, __atomic_add_fetch(&inflight, n, __ATOMIC_RELAXED));
    long long live = __atomic_add_fetch(&live_bytes, bytes, __ATOMIC_RELAXED);
    peak_raise(&live_peak, live);
    peak_raise(&live_window, live);
}

/* The memory an object of `size` bytes keeps resident at the least: its
   bytes, or past two OS pages the two it writes. */
static long long live_floor(size_t size)
{
    return size < 8192 ? (long long)size : 8192;
}

/* mallocs n objects, each written at both ends, chained through word 0; the
   head's word 1 carries the batch's live bytes to the consumer */
static void *make_batch(const struct cfg *c, int n, long long tag)
{
    static __thread unsigned long made;
    void *chain = NULL;
    long long bytes = 0;
    for (int i = 0; i < n; i++) {
        size_t size = c->odd != 0 && ++made % ODD_EVERY == 0 ? c->odd : c->size;
        char *p = malloc(size);
        if (!p)
            die("malloc(%zu) failed", size);
        p[c->size - 1] = (char)tag;
        *(void **)p = chain;
        chain = p;
        bytes += live_floor(size);
    }
    ((long long *)chain)[1] = bytes;
    inflight_add(n, bytes);
    return chain;
}

/* frees a chain; returns the objects freed */
static long long free_batch(const struct cfg *c, void *chain, long *sum)
{
    long long n = 0, bytes = ((long long *)chain)[1];
    while (chain) {
        void *next = *(void **)chain;
        *sum += ((char *)chain)[c->size - 1];
        free(chain);
        chain = next;
        n++;
    }
    inflight_add(-n, -bytes);
    return n;
}

/* The sampler (see the top): of the samples that found the RSS more than
   RSS_STEP above the last such sample (high), the largest RSS - live, and
   the RSS and live bytes at it. */
#define RSS_STEP (1LL << 20)
static struct sampler {
    long interval_us;
    int stop;                   /* set by main, read by the sampler */
    long long high, rss, live, samples, growths;
} smp;

static void *sample_rss(void *arg)
{
    (void)arg;
    struct timespec gap = { smp.interval_us / 1000000, smp.interval_us % 1000000 * 1000 };
    while (!__atomic_load_n(&smp.stop, __ATOMIC_ACQUIRE)) {
        long long before = __atomic_load_n(&live_bytes, __ATOMIC_RELAXED);
        long rss_kib = bench_rss_now_kib();
        long long after = __atomic_load_n(&live_bytes, __ATOMIC_RELAXED);
        long long window = __atomic_exchange_n(&live_window, after, __ATOMIC_RELAXED);
        if (rss_kib < 0)
            break;
        long long rss = (long long)rss_kib * 1024;
        long long live = before > after ? before : after;
        if (window > live)
            live = window;
        if (smp.samples++ == 0 || rss > smp.high + RSS_STEP) {
            smp.high = rss;
            if (smp.growths++ == 0 || rss - live > smp.rss - smp.live) {
                smp.rss = rss;
                smp.live = live;
            }
        }
        nanosleep(&gap, NULL);
    }
    return NULL;
}

static void worker(bench_thread *t)
{
    struct cfg *c = t->arg;
    long sum = 0;
    /* warm-up, untimed: the thread's first allocations (its heap, its
       caches) happen here, not in the timed region */
    free_batch(c, make_batch(c, c->batch, 0), &sum);
    bench_sync(t);
    if (t->id < c->producers) {
        for (long long b = 0; b < c->batches; b++)
            push(c, make_batch(c, c->batch, b));
        pthread_mutex_lock(&c->mu);
        int last = --c->producers_left == 0;
        pthread_mutex_unlock(&c->mu);
        if (last)       /* one stop per consumer, behind every batch */
            for (int i = 0; i < c->producers; i++)
                push(c, NULL);
    } else {
        long long freed = 0;
        for (void *chain; (chain = pop(c)) != NULL;)
            freed += free_batch(c, chain, &sum);
        t->ops = (uint64_t)freed;
    }
    escape(&sum);
}

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    struct cfg c = { .producers = 2, .batch = 100, .size = 64, .cap = 64 };
    long long total = 4000000;
    int opt;
    smp.interval_us = 1000;
    while ((opt = getopt(argc, argv, "w:n:s:b:q:x:i:P")) != -1) {
        switch (opt) {
        case 'w': c.producers = (int)parse_size(optarg); break;
        case 'n': total = parse_size(optarg); break;
        case 's': c.size = (size_t)parse_size(optarg); break;
        case 'b': c.batch = (int)parse_size(optarg); break;
        case 'q': c.cap = (size_t)parse_size(optarg); break;
        case 'x': c.odd = (size_t)parse_size(optarg); break;
        case 'i': smp.interval_us = (long)parse_size(optarg); break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: batchq [-w producers (= consumers)] [-n objects] [-s object size]\n"
                            "              [-b objects per batch] [-q queue capacity in batches]\n"
                            "              [-x size of every 8192nd object] [-i RSS sampling interval, us] [-P]\n");
            return 2;
        }
    }
    if (c.producers < 1 || c.batch < 1 || c.cap < 1 || c.size < 2 * sizeof(void *))
        die("need -w, -b, -q >= 1 and -s >= %zu", 2 * sizeof(void *));
    if (c.odd != 0 && c.odd < c.size)
        die("need -x >= -s");
    c.batches = total / c.producers / c.batch;
    if (c.batches < 1)
        die("-n too small for -w and -b");
    pthread_mutex_init(&c.mu, NULL);
    pthread_cond_init(&c.not_empty, NULL);
    pthread_cond_init(&c.not_full, NULL);
    c.ring = calloc(c.cap, sizeof *c.ring);
    c.producers_left = c.producers;

    int threads = 2 * c.producers;
    bench_reset_peak_rss();
    inflight_peak = 0;
    double rss_start_mib = bench_rss_now_kib() / 1024.0;
    pthread_t sampler;
    if (smp.interval_us > 0 && pthread_create(&sampler, NULL, sample_rss, NULL) != 0)
        die("pthread_create failed");
    bench_team r;
    bench_team_run(threads, worker, &c, &r);
    if (smp.interval_us > 0) {
        __atomic_store_n(&smp.stop, 1, __ATOMIC_RELEASE);
        pthread_join(sampler, NULL);
        printf("note: RSS sampled %lld times, %lld growths; at the largest RSS - live: RSS %.1f MiB, "
               "live %.1f MiB\n", smp.samples, smp.growths, smp.rss / 1048576.0, smp.live / 1048576.0);
    }
    char beyond_field[96] = "";
    if (smp.interval_us > 0 && smp.samples > 0)
        snprintf(beyond_field, sizeof beyond_field, " beyond_mib=%.1f rss_start_mib=%.1f",
                 (smp.rss - smp.live) / 1048576.0, rss_start_mib);
    if (r.ops != (uint64_t)(c.batches * c.batch * c.producers))
        die("freed %llu objects of %lld", (unsigned long long)r.ops, c.batches * c.batch * c.producers);
    bench_result("batchq", "producers=%d batch=%d size=%zu queue=%zu threads=%d ns_obj=%.2f cpu_ns_obj=%.2f mops=%.3f "
                 "wall_s=%.3f user_s=%.3f sys_s=%.3f peak_rss_mib=%.1f peak_inflight=%lld inflight_mib=%.1f%s",
                 c.producers, c.batch, c.size, c.cap, threads, bench_ns_per_op(&r, threads), bench_cpu_ns_per_op(&r),
                 (double)r.ops / ((double)r.wall_ns / 1e9) / 1e6, (double)r.wall_ns / 1e9, r.user_s, r.sys_s,
                 bench_peak_rss_kib() / 1024.0, inflight_peak, live_peak / 1048576.0, beyond_field);
    free(c.ring);
    pthread_cond_destroy(&c.not_full);
    pthread_cond_destroy(&c.not_empty);
    pthread_mutex_destroy(&c.mu);
    return 0;
}
