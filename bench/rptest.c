/*
 * rptest.c - the shape of rpmalloc's benchmark (written here from its
 * description): every thread allocates and frees random sizes of 8 B-16 KiB
 * in loops, and hands a share of each loop's blocks to another thread, which
 * frees them.
 *
 * -t threads (default 2) run -n loops in all (default 4,000, split over the
 * threads). One loop of a thread:
 *   1. frees every block other threads handed to it since its last loop;
 *   2. allocates -k blocks (default 1,000) of log-uniform sizes in [-a, -b]
 *      (default 8 B .. 16 KiB), writing the first and the last byte of each;
 *   3. makes -o random replacements among them (default 200: free one, allocate
 *      another size in its place);
 *   4. hands -x % of the blocks (default 20 %, spread over the array) to the
 *      next thread (thread i to i + 1, the last to the first) and frees the
 *      rest, in a scattered order (index x 7919 mod k), not the reverse of
 *      allocation.
 * The hand-over goes through the receiver's inbox, a chain of blocks (linked
 * through their first word) under a mutex: one lock per loop. A sender whose
 * receiver already holds more than 8 loops' worth of blocks frees its own
 * inbox and sleeps (a condition variable) until the receiver has taken its
 * blocks, so the backlog (and peak RSS) stays bounded when a thread gets less
 * CPU than the others (oversubscription, a busy machine), and a waiting
 * thread uses no CPU: the CPU time is the allocator's and the loop's. Freeing
 * its own inbox before it sleeps means no cycle of threads can wait on each
 * other for good (and the wait is timed, 1 ms, for safety). A thread past its last
 * loop sleeps on its inbox's condition variable and frees what still comes
 * (its sender may be many loops behind) until every thread has finished; it
 * is never waited for.
 *
 * Reported: core-normalised wall ns and CPU ns per malloc/free pair (k + o
 * pairs per loop), wall seconds, the process's user and system seconds over
 * the timed region, and peak RSS.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct inbox {
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* its owner, past its last loop, waits here */
    pthread_cond_t room;        /* its sender, finding it full, waits here */
    int sender_waits;
    void *head;                 /* chain through each block's first word */
    long long count;
    int finished;               /* its owner is past its last loop (under mu) */
    char pad_[64];
};

struct cfg {
    int threads;
    long long loops;            /* per thread */
    int blocks, ops, cross_pct;
    size_t min, max;
    long long backlog;          /* most blocks an inbox may hold before senders wait */
    struct inbox *inbox;        /* one per thread */
    _Atomic int running;        /* threads not past their last loop */
};

static void *new_block(bench_thread *t, const struct cfg *c)
{
    size_t sz = rng_log_uniform(&t->rng, c->min, c->max);
    char *p = malloc(sz);
    if (!p)
        die("malloc(%zu) failed", sz);
    p[0] = (char)sz;
    p[sz - 1] = 1;
    return p;
}

static void free_chain(void *chain)
{
    while (chain) {
        void *next = *(void **)chain;
        free(chain);
        chain = next;
    }
}

/* Takes the inbox's chain (under its lock) and wakes a waiting sender. */
static void *take(struct inbox *in)
{
    void *chain = in->head;
    in->head = NULL;
    in->count = 0;
    if (in->sender_waits)
        pthread_cond_signal(&in->room);
    return chain;
}

/* Frees what was handed to this thread. */
static void drain(struct inbox *in)
{
    pthread_mutex_lock(&in->mu);
    void *chain = take(in);
    pthread_mutex_unlock(&in->mu);
    free_chain(chain);
}

/* After the thread's last loop: go on freeing what others hand over (they
   may be many loops behind) until every thread is past its last loop, then
   free the rest. Sleeps on the inbox's condition variable meanwhile. */
static void drain_until_all_done(struct cfg *c, int self)
{
    struct inbox *in = &c->inbox[self];
    pthread_mutex_lock(&in->mu);
    in->finished = 1;
    if (in->sender_waits)
        pthread_cond_signal(&in->room);
    pthread_mutex_unlock(&in->mu);
    if (atomic_fetch_sub(&c->running, 1) == 1) {
        for (int i = 0; i < c->threads; i++) {     /* the last one wakes everyone */
            pthread_mutex_lock(&c->inbox[i].mu);
            pthread_cond_broadcast(&c->inbox[i].cv);
            pthread_mutex_unlock(&c->inbox[i].mu);
        }
    }
    for (;;) {
        pthread_mutex_lock(&in->mu);
        while (in->count == 0 && atomic_load(&c->running) > 0)
            pthread_cond_wait(&in->cv, &in->mu);
        void *chain = take(in);
        int last = atomic_load(&c->running) == 0;
        pthread_mutex_unlock(&in->mu);
        free_chain(chain);
        if (last)       /* nobody hands over any more: the inbox stays empty */
            return;
    }
}

static void hand_over(const struct cfg *c, int self, void *head, void *tail, long long n)
{
    struct inbox *to = &c->inbox[(self + 1) % c->threads];
    pthread_mutex_lock(&to->mu);
    /* a receiver past its last loop frees at once */
    while (to->count > c->backlog && !to->finished) {
        pthread_mutex_unlock(&to->mu);
        drain(&c->inbox[self]);     /* whoever waits for us can go on */
        pthread_mutex_lock(&to->mu);
        if (to->count <= c->backlog || to->finished)
            break;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 1000000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        to->sender_waits++;
        pthread_cond_timedwait(&to->room, &to->mu, &until);
        to->sender_waits--;
    }
    *(void **)tail = to->head;
    to->head = head;
    to->count += n;
    if (to->finished)
        pthread_cond_signal(&to->cv);
    pthread_mutex_unlock(&to->mu);
}

static void worker(bench_thread *t)
{
    struct cfg *c = t->arg;
    void **a = malloc(sizeof *a * (size_t)c->blocks);
    bench_sync(t);
    for (long long loop = 0; loop < c->loops; loop++) {
        drain(&c->inbox[t->id]);
        for (int i = 0; i < c->blocks; i++)
            a[i] = new_block(t, c);
        for (int i = 0; i < c->ops; i++) {
            int k = (int)rng_below(&t->rng, (uint64_t)c->blocks);
            free(a[k]);
            a[k] = new_block(t, c);
        }
        void *head = NULL, *tail = NULL;
        long long handed = 0;
        for (int i = 0; i < c->blocks; i++) {
            void *p = a[(long long)i * 7919 % c->blocks];
            if (c->threads > 1 && i % 100 < c->cross_pct) {
                *(void **)p = head;
                head = p;
                if (!tail)
                    tail = p;
                handed++;
            } else {
                free(p);
            }
        }
        if (handed)
            hand_over(c, t->id, head, tail, handed);
    }
    drain_until_all_done(c, t->id);
    bench_stop(t);
    t->ops = (uint64_t)(c->loops * (c->blocks + c->ops));
    free(a);
}

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    struct cfg c = { .threads = 2, .blocks = 1000, .ops = 200, .cross_pct = 20, .min = 8, .max = 16 << 10 };
    long long total = 4000;
    int opt;
    while ((opt = getopt(argc, argv, "t:n:k:o:x:a:b:P")) != -1) {
        switch (opt) {
        case 't': c.threads = (int)parse_size(optarg); break;
        case 'n': total = parse_size(optarg); break;
        case 'k': c.blocks = (int)parse_size(optarg); break;
        case 'o': c.ops = (int)parse_size(optarg); break;
        case 'x': c.cross_pct = (int)parse_size(optarg); break;
        case 'a': c.min = (size_t)parse_size(optarg); break;
        case 'b': c.max = (size_t)parse_size(optarg); break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: rptest [-t threads] [-n loops] [-k blocks per loop] [-o replacements per loop]\n"
                            "              [-x %% handed to the next thread] [-a min size] [-b max size] [-P]\n");
            return 2;
        }
    }
    if (c.threads < 1 || c.blocks < 1 || c.ops < 0 || c.cross_pct < 0 || c.cross_pct > 100 ||
        c.min < sizeof(void *) || c.max < c.min)
        die("need -t, -k >= 1, -o >= 0, 0 <= -x <= 100, %zu <= -a <= -b", sizeof(void *));
    c.loops = total / c.threads;
    if (c.loops < 1)
        die("-n too small");
    c.backlog = 8LL * c.blocks * c.cross_pct / 100;
    c.inbox = calloc((size_t)c.threads, sizeof *c.inbox);
    for (int i = 0; i < c.threads; i++) {
        pthread_mutex_init(&c.inbox[i].mu, NULL);
        pthread_cond_init(&c.inbox[i].cv, NULL);
        pthread_cond_init(&c.inbox[i].room, NULL);
    }
    atomic_store(&c.running, c.threads);

    bench_reset_peak_rss();
    bench_team r;
    bench_team_run(c.threads, worker, &c, &r);
    bench_result("rptest", "threads=%d cross_pct=%d size=%zu-%zu ns_op=%.2f cpu_ns_op=%.2f wall_s=%.3f user_s=%.3f "
                 "sys_s=%.3f peak_rss_mib=%.1f",
                 c.threads, c.cross_pct, c.min, c.max, bench_ns_per_op(&r, c.threads), bench_cpu_ns_per_op(&r),
                 (double)r.wall_ns / 1e9, r.user_s, r.sys_s, bench_peak_rss_kib() / 1024.0);
    for (int i = 0; i < c.threads; i++) {
        pthread_cond_destroy(&c.inbox[i].cv);
        pthread_cond_destroy(&c.inbox[i].room);
        pthread_mutex_destroy(&c.inbox[i].mu);
    }
    free(c.inbox);
    return 0;
}
