/*
 * random_mt.c - several threads run a seeded random mix of every allocation
 * entry point over a shared table of blocks, so blocks are routinely freed or
 * reallocated by a thread other than the one that allocated them. Each block
 * carries a pattern derived from its address, checked before every free and
 * realloc: a block handed out twice, overwritten, or moved without its bytes
 * is caught at the next touch.
 *
 * Knobs: --threads=N (4), --ops=N per thread (40000), --slots=N (1024),
 * --blocks=N per producer (40000), --rounds=N batches per thread (3000;
 * that case runs --threads, default 8, of its own), --handoffs=N blocks
 * one producer hands one consumer (200000).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

#include "api.h"
#include "check.h"
#include "pattern.h"
#include "proc.h"
#include "sizes.h"

/* How a block was obtained: it decides which sized free may release it
   (C23: free_sized for malloc/calloc/realloc blocks, free_aligned_sized for
   aligned_alloc blocks). */
enum how { PLAIN, ZEROED, ALIGNED, ALIGNED_C11 };

struct slot {
    pthread_mutex_t mu;
    void *p;
    size_t size;           /* bytes asked for */
    size_t align;          /* for ALIGNED: the alignment asked for */
    uint64_t tag;          /* pattern tag (address at fill time) */
    enum how how;
    int owner;             /* thread that filled it, for messages */
};

static struct slot *slots;
static size_t n_slots;
static long ops_per_thread;
static unsigned huge_pm = 3;                 /* per mille of huge requests */
static atomic_ulong cross_thread_frees;

static void verify(struct slot *s, const char *before)
{
    size_t bad = nd_pat_check(s->p, s->size, s->size, s->tag);
    EXPECT(bad == SIZE_MAX, "the %zu-byte block at %p (filled by thread %d) to be intact before "
           "%s, byte %zu differs", s->size, s->p, s->owner, before, bad);
}

static void fill(struct slot *s, int self)
{
    s->tag = (uintptr_t)s->p;
    s->owner = self;
    nd_pat_fill(s->p, s->size, s->tag);
}

static void release(struct slot *s, struct nd_rng *r, int self)
{
    const struct nd_api *A = nd_api();
    if (s->owner != self)
        atomic_fetch_add_explicit(&cross_thread_frees, 1, memory_order_relaxed);
    uint64_t way = nd_rng_below(r, 3);
    if (way == 1 && (s->how == PLAIN || s->how == ZEROED))
        A->free_sized(s->p, s->size);
    else if (way == 2 && s->how == ALIGNED_C11)
        A->free_aligned_sized(s->p, s->align, s->size);
    else
        A->free(s->p);
    s->p = NULL;
}

static void obtain(struct slot *s, struct nd_rng *r, int self)
{
    const struct nd_api *A = nd_api();
    size_t size = nd_random_size(r, huge_pm);
    uint64_t pick = nd_rng_below(r, 100);
    s->how = PLAIN;
    s->size = size;
    if (pick < 55) {
        s->p = A->malloc(size);
    } else if (pick < 70) {
        size_t count = 1 + nd_rng_below(r, 4);
        s->how = ZEROED;
        s->p = A->calloc(count, size);
        s->size = size = count * size;
        if (s->p) {
            size_t bad = nd_zero_check(s->p, size);
            EXPECT(bad == SIZE_MAX, "%s block of %zu bytes at %p to be zero, byte %zu is not",
                   nd_fn("calloc"), size, s->p, bad);
        }
    } else if (pick < 94) {
        s->how = ALIGNED;
        s->align = (size_t)16 << nd_rng_below(r, pick < 90 ? 9 : 17);   /* 16 .. 1 MiB */
        if (pick < 80) {
            void *p = NULL;
            int rc = A->posix_memalign(&p, s->align, size);
            EXPECT(rc == 0, "%s(%zu, %zu) to return 0, got %d", nd_fn("posix_memalign"),
                   s->align, size, rc);
            s->p = p;
        } else if (pick < 87) {
            s->size = size = (size + s->align - 1) / s->align * s->align;
            s->how = ALIGNED_C11;
            s->p = A->aligned_alloc(s->align, size);
        } else {
            s->p = A->memalign(s->align, size);
        }
        EXPECT(s->p == NULL || ((uintptr_t)s->p & (s->align - 1)) == 0,
               "an aligned allocation of %zu bytes at alignment %zu to be aligned, got %p",
               size, s->align, s->p);
    } else {
        s->p = A->reallocarray(NULL, 1, size);
    }
    EXPECT(s->p != NULL, "an allocation of %zu bytes (way %d) to succeed (errno %d)",
           size, (int)s->how, errno);
    EXPECT(((uintptr_t)s->p & 15) == 0, "every block to be 16-byte aligned, got %p for %zu bytes",
           s->p, size);
    EXPECT(A->usable_size(s->p) >= size, "usable size of a %zu-byte block to be >= %zu, got %zu",
           size, size, A->usable_size(s->p));
    fill(s, self);
}

static void resize(struct slot *s, struct nd_rng *r, int self)
{
    const struct nd_api *A = nd_api();
    size_t to = nd_random_size(r, huge_pm);
    if (nd_rng_below(r, 2))   /* often a small step, across one class boundary */
        to = s->size + (size_t)nd_rng_below(r, s->size / 4 + 64) - s->size / 8;
    if (to == 0)
        to = 1;
    void *q = A->realloc(s->p, to);
    EXPECT(q != NULL, "%s(%p, %zu) to succeed (errno %d)", nd_fn("realloc"), s->p, to, errno);
    size_t keep = nd_min_size(s->size, to);
    size_t bad = nd_pat_check(q, s->size, keep, s->tag);
    EXPECT(bad == SIZE_MAX, "%s from %zu to %zu bytes (%p -> %p) to keep the first %zu bytes "
           "of a block filled by thread %d, byte %zu differs", nd_fn("realloc"), s->size, to,
           s->p, q, keep, s->owner, bad);
    s->p = q;
    s->size = to;
    s->how = PLAIN;
    fill(s, self);
}

static void *worker(void *arg)
{
    int self = (int)(intptr_t)arg;
    struct nd_rng r = nd_rng_for((uint64_t)self + 1);
    for (long op = 0; op < ops_per_thread; op++) {
        struct slot *s = &slots[nd_rng_below(&r, n_slots)];
        if (pthread_mutex_trylock(&s->mu) != 0)
            continue;
        if (!s->p) {
            obtain(s, &r, self);
        } else {
            uint64_t what = nd_rng_below(&r, 100);
            verify(s, what < 50 ? "its free" : "its realloc");
            if (what < 50) {
                release(s, &r, self);
            } else if (what < 85) {
                resize(s, &r, self);
            } else {
                release(s, &r, self);
                obtain(s, &r, self);
            }
        }
        pthread_mutex_unlock(&s->mu);
    }
    return NULL;
}

static void random_mixed_operations_keep_every_block_intact(void)
{
    const struct nd_api *A = nd_api();
    int threads = (int)nd_opt_long("threads", 4);
    ops_per_thread = nd_opt_long("ops", 40000);
    n_slots = (size_t)nd_opt_long("slots", 1024);
    nd_test_seed();
    nodal_memory_info before;
    EXPECT(nodal_memory_info_get(&before) == 0, "nodal_memory_info_get to succeed");

    slots = A->calloc(n_slots, sizeof *slots);
    EXPECT(slots != NULL, "the slot table to be allocated");
    for (size_t i = 0; i < n_slots; i++)
        pthread_mutex_init(&slots[i].mu, NULL);
    pthread_t tid[64];
    if (threads > 64)
        threads = 64;
    for (int t = 0; t < threads; t++)
        EXPECT(pthread_create(&tid[t], NULL, worker, (void *)(intptr_t)t) == 0,
               "pthread_create to work");
    for (int t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);

    size_t live = 0;
    for (size_t i = 0; i < n_slots; i++) {
        if (slots[i].p) {
            verify(&slots[i], "the final free");
            A->free(slots[i].p);
            live++;
        }
        pthread_mutex_destroy(&slots[i].mu);
    }
    A->free(slots);
    printf("%d threads x %ld operations, %lu frees by a thread other than the filler, "
           "%zu blocks live at the end\n", threads, ops_per_thread,
           (unsigned long)atomic_load(&cross_thread_frees), live);
    EXPECT(atomic_load(&cross_thread_frees) > 0 || threads == 1,
           "some blocks to be freed by a thread other than their filler");
#ifdef ND_TEST_PREFIX_ONLY
    /* Nothing but this test uses nodal here: every byte is back. */
    nodal_memory_info after;
    EXPECT(nodal_memory_info_get(&after) == 0, "nodal_memory_info_get to succeed");
    EXPECT(after.allocated == before.allocated, "nodal_memory_info.allocated to be back at %zu "
           "once every block is freed, it is %zu", before.allocated, after.allocated);
#endif
}

/* Producer threads allocate, consumer threads free what they receive: a
   pure remote-free workload. Memory freed remotely must be reused, so the
   footprint stays near the working set however many rounds run. */
#define RING 4096
static void *ring[RING];
static size_t ring_size[RING];
static size_t ring_head, ring_tail;
static pthread_mutex_t ring_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ring_cv = PTHREAD_COND_INITIALIZER;
static int producers_left;

static void *producer(void *arg)
{
    const struct nd_api *A = nd_api();
    struct nd_rng r = nd_rng_for(1000 + (uint64_t)(intptr_t)arg);
    long n = nd_opt_long("blocks", 40000);
    for (long i = 0; i < n; i++) {
        size_t s = nd_random_size(&r, 1);
        void *p = A->malloc(s);
        EXPECT(p != NULL, "%s(%zu) to succeed", nd_fn("malloc"), s);
        nd_pat_fill(p, s, (uintptr_t)p);
        pthread_mutex_lock(&ring_mu);
        while (ring_head - ring_tail == RING)
            pthread_cond_wait(&ring_cv, &ring_mu);
        ring[ring_head % RING] = p;
        ring_size[ring_head % RING] = s;
        ring_head++;
        pthread_cond_broadcast(&ring_cv);
        pthread_mutex_unlock(&ring_mu);
    }
    pthread_mutex_lock(&ring_mu);
    producers_left--;
    pthread_cond_broadcast(&ring_cv);
    pthread_mutex_unlock(&ring_mu);
    return NULL;
}

static void *consumer(void *arg)
{
    const struct nd_api *A = nd_api();
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&ring_mu);
        while (ring_head == ring_tail && producers_left > 0)
            pthread_cond_wait(&ring_cv, &ring_mu);
        if (ring_head == ring_tail) {
            pthread_mutex_unlock(&ring_mu);
            return NULL;
        }
        void *p = ring[ring_tail % RING];
        size_t s = ring_size[ring_tail % RING];
        ring_tail++;
        pthread_cond_broadcast(&ring_cv);
        pthread_mutex_unlock(&ring_mu);
        size_t bad = nd_pat_check(p, s, s, (uintptr_t)p);
        EXPECT(bad == SIZE_MAX, "a %zu-byte block at %p handed to another thread to arrive "
               "intact, byte %zu differs", s, p, bad);
        A->free(p);
    }
}

static void blocks_freed_by_another_thread_are_reused(void)
{
    nd_test_seed();
    nd_api();
    enum { PRODUCERS = 2, CONSUMERS = 2 };
    pthread_t tid[PRODUCERS + CONSUMERS];
    producers_left = PRODUCERS;
    size_t rss_start = nd_rss_bytes();
    for (int t = 0; t < PRODUCERS; t++)
        EXPECT(pthread_create(&tid[t], NULL, producer, (void *)(intptr_t)t) == 0,
               "pthread_create to work");
    for (int t = 0; t < CONSUMERS; t++)
        EXPECT(pthread_create(&tid[PRODUCERS + t], NULL, consumer, NULL) == 0,
               "pthread_create to work");
    for (int t = 0; t < PRODUCERS + CONSUMERS; t++)
        pthread_join(tid[t], NULL);
    nodal_memory_info mi;
    EXPECT(nodal_memory_info_get(&mi) == 0, "nodal_memory_info_get to succeed");
    size_t rss_end = nd_rss_bytes();
    /* At most RING blocks are in flight (about 4096 * 40 KiB on average, with
       a rare huge one); 80000 blocks go through. Without reuse of
       remotely freed memory the footprint would be gigabytes. */
    size_t bound = (size_t)512 << 20;
    printf("mapped %zu MiB, rss %zu -> %zu MiB after %ld blocks crossed threads\n",
           mi.mapped >> 20, rss_start >> 20, rss_end >> 20, 2 * nd_opt_long("blocks", 40000));
    EXPECT(mi.mapped < bound, "nodal to map less than %zu MiB for a working set of at most "
           "%d blocks (remotely freed memory reused), it maps %zu MiB", bound >> 20, RING,
           mi.mapped >> 20);
#ifndef ND_TEST_SANITIZER
    EXPECT(rss_end < rss_start + bound, "the resident set to grow by less than %zu MiB, it went "
           "from %zu to %zu MiB", bound >> 20, rss_start >> 20, rss_end >> 20);
#endif
}

/* Many threads hand batches of blocks to each other: each allocates a
   batch of one of three sizes, writes its pattern, and puts it in a shared
   ring (or frees it itself when the ring is full); each takes batches
   from the ring, checks every block and frees them. The receivers'
   overflows put the blocks in the transfer store of their kind, and the
   senders' fills take them back, while a thread now and then empties every
   store (nodal_collect): a block the store gave to two threads, or gave
   back while another still used it, breaks a pattern. The stress tier runs
   it under TSan and ASan too. */
#define HB_RING 32
#define HB_BATCH 64
static void **hb_ring[HB_RING];
static size_t hb_ring_size[HB_RING];
static size_t hb_head, hb_tail;
static pthread_mutex_t hb_mu = PTHREAD_MUTEX_INITIALIZER;

static void hb_check_free(void **batch, size_t s)
{
    const struct nd_api *A = nd_api();
    for (int i = 0; i < HB_BATCH; i++) {
        size_t bad = nd_pat_check(batch[i], s, s, (uintptr_t)batch[i]);
        EXPECT(bad == SIZE_MAX, "a %zu-byte block at %p handed over in a batch to arrive intact, byte %zu differs",
               s, batch[i], bad);
        A->free(batch[i]);
    }
    A->free(batch);
}

static void *hand_batches(void *arg)
{
    const struct nd_api *A = nd_api();
    int self = (int)(intptr_t)arg;
    static const size_t sizes[] = { 64, 256, 1024 };
    long rounds = nd_opt_long("rounds", 3000);
    for (long r = 0; r < rounds; r++) {
        size_t s = sizes[(r + self) % 3];
        void **batch = A->malloc(HB_BATCH * sizeof(void *));
        EXPECT(batch != NULL, "%s of a batch to succeed", nd_fn("malloc"));
        for (int i = 0; i < HB_BATCH; i++) {
            batch[i] = A->malloc(s);
            EXPECT(batch[i] != NULL, "%s(%zu) to succeed", nd_fn("malloc"), s);
            nd_pat_fill(batch[i], s, (uintptr_t)batch[i]);
        }
        void **got = NULL;
        size_t got_size = 0;
        pthread_mutex_lock(&hb_mu);
        if (hb_head - hb_tail < HB_RING) {
            hb_ring[hb_head % HB_RING] = batch;
            hb_ring_size[hb_head % HB_RING] = s;
            hb_head++;
            batch = NULL;
        }
        if (hb_head != hb_tail) {
            got = hb_ring[hb_tail % HB_RING];
            got_size = hb_ring_size[hb_tail % HB_RING];
            hb_tail++;
        }
        pthread_mutex_unlock(&hb_mu);
        if (batch != NULL)
            hb_check_free(batch, s);
        if (got != NULL)
            hb_check_free(got, got_size);
        if (self == 0 && r % 500 == 499)
            nodal_collect(0);   /* every store back to its pages, while the others put and take */
    }
    return NULL;
}

static void blocks_handed_in_batches_between_many_threads_arrive_intact(void)
{
    nd_test_seed();
    nd_api();
    int threads = (int)nd_opt_long("threads", 8);
    pthread_t tid[64];
    if (threads > 64)
        threads = 64;
    for (int t = 0; t < threads; t++)
        EXPECT(pthread_create(&tid[t], NULL, hand_batches, (void *)(intptr_t)t) == 0, "pthread_create to work");
    for (int t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);
    while (hb_head != hb_tail) {
        hb_check_free(hb_ring[hb_tail % HB_RING], hb_ring_size[hb_tail % HB_RING]);
        hb_tail++;
    }
    nodal_collect(1);
    nodal_memory_info mi;
    EXPECT(nodal_memory_info_get(&mi) == 0, "nodal_memory_info_get to succeed");
    printf("%d threads handed %ld batches each; mapped %zu MiB at the end\n", threads,
           nd_opt_long("rounds", 3000), mi.mapped >> 20);
}

/* One producer hands blocks of one size to one consumer through a ring of
   PR_DEPTH slots, so at most PR_DEPTH blocks are ever allocated and not
   freed. The pages in use (nodal_memory_info's active: pages holding a
   block, or a block waiting in a cache or transfer store) must stay near
   that: the producer's heap carves only when none of its blocks is free
   where it can take it (its cache, the transfer store, its pages' own and
   remote-freed lists), so what it holds is the blocks in flight plus the
   two threads' bins, the store's share of the class and a page's worth of
   rounding, whatever the scheduler does to the ring. A producer that
   carved while its returned blocks waited would grow by what it hands
   over: 200,000 blocks of 256 B are 49 MiB. */
#define PR_DEPTH 4096
#define PR_SIZE 256
static void *pr_ring[PR_DEPTH];
static _Atomic unsigned long pr_head, pr_tail;

static void *pr_produce(void *arg)
{
    const struct nd_api *A = nd_api();
    long n = *(const long *)arg;
    for (long i = 0; i < n; i++) {
        char *p = A->malloc(PR_SIZE);
        EXPECT(p != NULL, "%s(%d) to succeed", nd_fn("malloc"), PR_SIZE);
        p[0] = (char)i;
        p[PR_SIZE - 1] = (char)i;
        while ((unsigned long)i - atomic_load_explicit(&pr_tail, memory_order_acquire) >= PR_DEPTH)
            sched_yield();
        pr_ring[i % PR_DEPTH] = p;
        atomic_store_explicit(&pr_head, (unsigned long)i + 1, memory_order_release);
    }
    return NULL;
}

static void *pr_consume(void *arg)
{
    const struct nd_api *A = nd_api();
    long n = *(const long *)arg;
    for (long i = 0; i < n; i++) {
        while (atomic_load_explicit(&pr_head, memory_order_acquire) <= (unsigned long)i)
            sched_yield();
        char *p = pr_ring[i % PR_DEPTH];
        EXPECT(p[0] == (char)i && p[PR_SIZE - 1] == (char)i, "block %ld handed over at %p to arrive intact", i, (void *)p);
        A->free(p);
        atomic_store_explicit(&pr_tail, (unsigned long)i + 1, memory_order_release);
    }
    return NULL;
}

static void a_handoff_pair_holds_pages_for_its_blocks_in_flight_only(void)
{
    const struct nd_api *A = nd_api();
    long n = nd_opt_long("handoffs", 200000);
    void *probe = A->malloc(PR_SIZE);   /* the class's real block size (secure=1 pads) */
    EXPECT(probe != NULL, "%s(%d) to succeed", nd_fn("malloc"), PR_SIZE);
    size_t block = A->usable_size(probe);
    A->free(probe);
    nodal_memory_info before, after;
    EXPECT(nodal_memory_info_get(&before) == 0, "nodal_memory_info_get to succeed");
    pthread_t tp, tc;
    EXPECT(pthread_create(&tp, NULL, pr_produce, &n) == 0, "pthread_create to work");
    EXPECT(pthread_create(&tc, NULL, pr_consume, &n) == 0, "pthread_create to work");
    pthread_join(tp, NULL);
    pthread_join(tc, NULL);
    EXPECT(nodal_memory_info_get(&after) == 0, "nodal_memory_info_get to succeed");
    /* in flight, the transfer store's bound for a class (512 KiB, xfer.h),
       and 1 MiB for both threads' bins, their first pages of other
       classes and page rounding */
    size_t in_flight = (size_t)PR_DEPTH * block;
    size_t bound = before.active + in_flight + ((size_t)512 << 10) + ((size_t)1 << 20);
    printf("%ld blocks of %zu B handed over, at most %d in flight (%zu KiB): active %zu KiB before, "
           "peak %zu KiB, bound %zu KiB\n", n, block, PR_DEPTH, in_flight >> 10, before.active >> 10,
           after.peak_active >> 10, bound >> 10);
    EXPECT(after.peak_active <= bound, "the pages a producer/consumer pair holds to stay within its blocks "
           "in flight (%zu KiB) plus caches and store (%zu KiB in all), they peaked at %zu KiB", in_flight >> 10,
           bound >> 10, after.peak_active >> 10);
}

static const struct nd_case cases[] = {
    ND_CASE(random_mixed_operations_keep_every_block_intact),
    ND_CASE(blocks_freed_by_another_thread_are_reused),
    ND_CASE(blocks_handed_in_batches_between_many_threads_arrive_intact),
    ND_CASE(a_handoff_pair_holds_pages_for_its_blocks_in_flight_only),
};
ND_MAIN(cases)
