/*
 * prof.c - unit tests of the heap profile's table of live samples
 * (src/thread/prof.h): a few live samples stay in the first table (one OS
 * page); a sample examines at most 8 slots of each table but the last, so
 * a crowded first table is not walked whole by every sample (with 64 or
 * more live samples, the first table full, each one read all 64 slots,
 * 64 cache lines, before going on); every sample recorded is found in its
 * slot, and a forgotten one leaves it. And the gaps between samples
 * (src/thread/tcache.c): their logarithm, a table and a series, is libm's
 * to 1e-11, and they are exponential with the rate as their mean. A
 * sample's estimate is 1 / its probability. A bin's countdown to its
 * sample is in requests, ceil(gap / size), or cut short and drawn again
 * for a gap past 2^31 of them; and a thread that requests or frees a few
 * small classes with the profile on writes no page of its cache past the
 * second, as without it (the countdowns are in the classes' cold parts),
 * also when its requests are sampled (a sample's counts are the
 * process's).
 * The live table's OS pages written follow the live samples' number (its
 * tables grow by 4): 200 samples, 5 pages. A forked child adds sites past
 * the index entries its parent's threads were writing (init.c's child
 * handler, nd_prof_fork_child).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "alloc.h"
#include "check.h"
#include "proc.h"
#include "page.h"
#include "prof.h"
#include "tcache.h"
#include "thread.h"

#define FIRST 64u     /* slots of the first table (prof.c) */
#define WINDOW 8u     /* slots a sample examines in each table but the last */
#define SAMPLES 400

static nd_page pages[SAMPLES];

/* A fake sampled block's address: OS pages of a 4 GiB range, distinct, in
   a scrambled order (an odd multiply and a xor-shift of 20 bits, both
   one-to-one), so that their probe paths crowd some stretches of a table
   as real blocks' can (blocks at a steady stride spread evenly). */
static uintptr_t addr_of(int i)
{
    uint32_t x = ((uint32_t)i * 0x5bd1e995u) & 0xfffffu;
    x ^= x >> 7;
    return (uintptr_t)0x7f0000000000ull + (uintptr_t)x * 4096;
}

/* The first slot of block a's probe path in the first table: prof.c's
   nd_prof_slot_hash, the same multiply and shift. */
static unsigned home_of(uintptr_t a) { return (unsigned)(((uint64_t)a * 0x9e3779b97f4a7c15ull) >> 40) & (FIRST - 1); }

static void start(void)
{
    EXPECT(nd_prof_start(512 * 1024), "profiling to start");
    memset(pages, 0, sizeof pages);
}

static void record(int i)
{
    nd_prof_record((void *)addr_of(i), &pages[i], 64, 4096, 0, false);
    EXPECT(pages[i].sampled == 1, "sample %d to be recorded (dropped %lu)", i,
           (unsigned long)nd_prof_dropped());
    nd_prof_live v;
    EXPECT(nd_prof_live_copy(pages[i].prof_slot, &v) && v.addr == addr_of(i),
           "sample %d's slot %u to hold it", i, pages[i].prof_slot);
}

/* 16 live samples: all in the first table, whose slots lie on one OS page. */
static void a_few_live_samples_stay_in_the_first_table(void)
{
    start();
    for (int i = 0; i < 16; i++) {
        record(i);
        EXPECT(pages[i].prof_slot < FIRST, "sample %d of 16 to be in the first table, it is in slot %u", i,
               pages[i].prof_slot);
    }
}

/* 400 live samples: each takes the first free slot of the 8 its address
   starts at in the first table, or, when all 8 are taken, goes on to a
   later table, however many slots of the first are still free. */
static void a_sample_examines_eight_slots_of_a_crowded_table(void)
{
    start();
    bool taken[FIRST] = { false };
    int first = 0, on = 0, first_at_spill = -1;
    for (int i = 0; i < SAMPLES; i++) {
        unsigned home = home_of(addr_of(i)), want = FIRST;
        for (unsigned k = 0; k < WINDOW && want == FIRST; k++)
            if (!taken[(home + k) & (FIRST - 1)])
                want = (home + k) & (FIRST - 1);
        record(i);
        unsigned slot = pages[i].prof_slot;
        if (want < FIRST) {
            EXPECT(slot == want, "sample %d to take slot %u, the first free of the 8 from %u; it took %u", i, want,
                   home, slot);
            taken[slot] = true;
            first++;
        } else {
            EXPECT(slot >= FIRST, "sample %d, whose 8 slots from %u are taken, to go on to the next table; it "
                   "took slot %u of the first (%d of 64 taken)", i, home, slot, first);
            if (on++ == 0)
                first_at_spill = first;
        }
    }
    EXPECT(on > 0 && first_at_spill < (int)FIRST,
           "the first table to send a sample on before it is full: %d on, the first when it held %d", on,
           first_at_spill);
    EXPECT(nd_prof_dropped() == 0, "no sample to be dropped, %lu were", (unsigned long)nd_prof_dropped());
}

/* A forgotten sample leaves its slot, and the next sample there may take it. */
static void a_forgotten_sample_leaves_its_slot(void)
{
    start();
    for (int i = 0; i < 100; i++)
        record(i);
    int64_t live = nd_prof_live_bytes();
    for (int i = 0; i < 100; i += 2) {
        unsigned slot = pages[i].prof_slot;
        nd_prof_forget((void *)addr_of(i), &pages[i]);
        nd_prof_live v;
        EXPECT(pages[i].sampled == 0 && !nd_prof_live_copy(slot, &v), "sample %d's slot %u to be empty", i, slot);
    }
    EXPECT(nd_prof_live_bytes() < live, "the live estimate to fall");
    for (int i = 100; i < 200; i++)
        record(i);
}

/* nd_tcache_ln against libm's log at a million points spread over every
   exponent of (2^-53, 1], the draws' range, and at the ends of each
   sixteenth of [1, 2), where the table's entries change. */
static void the_gaps_logarithm_is_libms_within_1e_11(void)
{
    double worst = 0, at = 1;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 1000000 + 2 * 16 * 54; i++) {
        double u;
        if (i < 1000000) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            u = ldexp(1 + (double)(x >> 12) / 4503599627370496.0, -1 - (int)(x % 53));   /* [2^-53, 1) */
        } else {
            int k = i - 1000000, j = (k / 2) % 16, e = (k / 32) % 54;
            double m = 1 + j / 16.0;
            u = ldexp(k % 2 ? nextafter(m + 1 / 16.0, 1) : m, -e);   /* a sixteenth's first and last double */
            if (u > 1)
                u = 1;
        }
        double err = fabs(nd_tcache_ln(u) - log(u));
        if (err > worst) {
            worst = err;
            at = u;
        }
    }
    EXPECT(worst <= 1e-11, "ln to be within 1e-11 of libm's; %.3g off at %.17g", worst, at);
}

/* A million gaps: their mean the rate within 1 % (the mean's standard
   error is 0.1 %), and the share longer than the rate and than three
   times it e^-1 and e^-3, within half a point and 0.2 (about ten of their
   standard errors). */
static void the_gaps_are_exponential_with_the_rate_as_their_mean(void)
{
    const int64_t rate = 512 * 1024;
    EXPECT(nd_prof_start(rate), "profiling to start");
    uint64_t rng = 12345;
    double sum = 0;
    int over1 = 0, over3 = 0, n = 1000000;
    for (int i = 0; i < n; i++) {
        int64_t g = nd_tcache_prof_gap(&rng);
        EXPECT(g >= 1, "a gap of at least 1 byte, not %lld", (long long)g);
        sum += (double)g;
        over1 += g > rate;
        over3 += g > 3 * rate;
    }
    double mean = sum / n, p1 = (double)over1 / n, p3 = (double)over3 / n;
    EXPECT(fabs(mean / rate - 1) < 0.01, "the gaps' mean to be the rate %lld within 1 %%, it is %.0f",
           (long long)rate, mean);
    EXPECT(fabs(p1 - exp(-1)) < 0.005, "%.4f of the gaps longer than the rate, not e^-1", p1);
    EXPECT(fabs(p3 - exp(-3)) < 0.002, "%.4f of the gaps longer than 3 times the rate, not e^-3", p3);
}

/* Each sample's estimate, the requests and bytes it stands for: 1 / (1 -
   exp(-usable / rate)) of them (libm's), to within the rounding to whole
   ones, on both sides of 1/8 of the rate (the series below, the
   exponential above) and for a block larger than the rate. */
static void a_samples_estimate_is_one_over_its_probability(void)
{
    const int64_t rate = 512 * 1024;
    start();
    static const size_t usable[] = { 1, 16, 48, 64, 1000, 4096, 32768, 65535, 65536, 65537,
                                     100000, 524288, 5000000 };
    for (int i = 0; i < (int)(sizeof usable / sizeof usable[0]); i++) {
        size_t size = usable[i] > 8 ? usable[i] - 8 : usable[i];
        nd_prof_record((void *)addr_of(i), &pages[i], size, usable[i], 0, false);
        nd_prof_live v;
        EXPECT(pages[i].sampled == 1 && nd_prof_live_copy(pages[i].prof_slot, &v), "sample %d to be recorded", i);
        double objs = 1 / -expm1(-(double)usable[i] / rate);
        EXPECT(fabs((double)v.objs - objs) <= 0.5 + 1e-9 * objs, "a sample of %zu usable bytes to stand for %.6f requests, not %llu",
               usable[i], objs, (unsigned long long)v.objs);
        EXPECT(fabs((double)v.bytes - objs * size) <= 0.5 + 1e-9 * objs * size,
               "a sample of %zu bytes (%zu usable) to stand for %.3f bytes, not %llu", size, usable[i], objs * size,
               (unsigned long long)v.bytes);
    }
}

/* A bin's countdown (tcache.c, nd_tcache_prof_draw): the requests to the
   sample, ceil(gap / size) for the gap the same draw gives, and at a rate
   whose gaps pass 2^15 requests of the class (a gap of the default rate
   may: 8,192 requests of 64 B on average), ND_PROF_LEFT_MAX of them
   marked ND_PROF_LEFT_REDRAW (at their end a new draw, no sample). */
static void a_bins_countdown_is_the_gap_in_requests_or_cut_and_drawn_again(void)
{
    start();
    nd_tcache *tc = nd_thread_start();
    EXPECT(tc != NULL, "the thread to start");
    int64_t rate = nd_load_relaxed(&nd_tcache_prof_rate);
    unsigned c = 3;
    uint64_t size = nd_class_size[c];
    tc->prof_rng = 12345;   /* seeded (0: a draw seeds it from the OS) */
    for (int i = 0; i < 1000; i++) {
        uint64_t rng = tc->prof_rng;
        uint64_t want = ((uint64_t)nd_tcache_prof_gap(&rng) + size - 1) / size;
        uint32_t got = nd_tcache_prof_draw(tc, c);
        uint32_t cut_at = ND_PROF_LEFT_MAX | ND_PROF_LEFT_REDRAW;
        EXPECT((want > ND_PROF_LEFT_MAX ? got == cut_at : got == want) && tc->prof_rng == rng,
               "draw %d: %llu requests to the sample, not %u", i, (unsigned long long)want, got);
    }
    nd_store_relaxed(&nd_tcache_prof_rate, (int64_t)1 << 50);   /* gaps of about 2^46 requests of 16 B */
    int cut = 0;
    for (int i = 0; i < 100; i++) {
        uint64_t rng = tc->prof_rng;
        uint64_t want = ((uint64_t)nd_tcache_prof_gap(&rng) + size - 1) / size;
        uint32_t got = nd_tcache_prof_draw(tc, c);
        if (want > ND_PROF_LEFT_MAX) {
            cut++;
            EXPECT(got == (ND_PROF_LEFT_MAX | ND_PROF_LEFT_REDRAW), "a gap of %llu requests cut at 2^15 - 1, marked",
                   (unsigned long long)want);
        } else {
            EXPECT(got == want, "a gap of %llu requests kept", (unsigned long long)want);
        }
    }
    nd_store_relaxed(&nd_tcache_prof_rate, rate);
    EXPECT(cut >= 90, "most gaps at a rate of 2^50 bytes to be cut (%d of 100)", cut);
}

static void *blocks[64];

/* A producer: requests of 16-160 B and 512 B, handed to the consumer. */
static void *request_a_few_small_classes(void *arg)
{
    (void)arg;
    nd_tcache *tc = nd_thread_start();
    EXPECT(tc != NULL, "the thread to start");
    for (int i = 0; i < 64; i++) {
        size_t size = i % 11 < 10 ? 16 * (size_t)(i % 11 + 1) : 512;
        blocks[i] = nodal_malloc(size);
        EXPECT(blocks[i] != NULL, "malloc(%zu) to succeed", size);
        memset(blocks[i], 1, size);
    }
    size_t n = nd_written_pages((char *)tc + 8192, ND_TC_HEAD_BYTES - 8192);
    EXPECT(n == 0, "a thread requesting a few small classes under prof=1 to write no page of its cache's struct "
           "past the second, it wrote %zu", n);
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    return NULL;
}

/* A consumer: frees the producer's blocks (into its own bins, whose
   classes it never requested). */
static void *free_a_few_small_classes(void *arg)
{
    (void)arg;
    nd_tcache *tc = nd_thread_start();
    EXPECT(tc != NULL, "the thread to start");
    for (int i = 0; i < 64; i++)
        nodal_free(blocks[i]);
    size_t n = nd_written_pages((char *)tc + 8192, ND_TC_HEAD_BYTES - 8192);
    EXPECT(n == 0, "a thread freeing blocks of a few small classes under prof=1 to write no page of its cache's "
           "struct past the second, it wrote %zu", n);
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    return NULL;
}

/* With the profile on, a thread that requests a few small classes, and
   one that only frees them, write the pages of their caches a thread
   writes without it (tests/unit/heap_invariants.c: the struct's first 2).
   On main 4c6e842 both wrote the third too: the bins' countdowns to their
   samples were an array of the cache's own there (batchq -w 2: 20 KiB of
   its peak, one page a cache). */
static void a_sampling_thread_writes_no_more_pages_of_its_cache(void)
{
    ND_SKIP_UNLESS_READS_MAP_THE_ZERO_PAGE();
    start();
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, request_a_few_small_classes, NULL) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    EXPECT(pthread_create(&t, NULL, free_a_few_small_classes, NULL) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after the threads exited");
}

/* The same threads with every request sampled (a rate of one byte): the
   producer's requests are all cells of its sample slab, and the consumer
   frees them all, and neither writes a page of its cache's struct past
   the second: a sample's counts (sampled_cells, sampled_cell_frees) are
   the process's (route.c, free.c). On main 35b5b2d they were the
   thread's, on the page of its per-class counters (tcache.h: cstats),
   which a thread of a few classes writes no other time: a sample taken
   wrote it, both threads failed here, and the case above failed in
   about 1 run in 40 (8 of 300 here), those in which one of its requests
   was sampled (one run's written word: class 8's sampled_cells, 1). */
static void threads_whose_requests_are_sampled_write_no_more_pages_of_their_caches(void)
{
    ND_SKIP_UNLESS_READS_MAP_THE_ZERO_PAGE();
    EXPECT(nd_prof_start(1), "profiling to start");
    uint64_t before = nd_prof_samples();
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, request_a_few_small_classes, NULL) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    uint64_t taken = nd_prof_samples() - before;
    EXPECT(taken >= 32, "most of the producer's 64 requests to be sampled at a rate of one byte, %llu were",
           (unsigned long long)taken);
    EXPECT(pthread_create(&t, NULL, free_a_few_small_classes, NULL) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    EXPECT(nd_prof_live_bytes() == 0, "every sample dropped by the consumer's frees, %lld bytes live",
           (long long)nd_prof_live_bytes());
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after the threads exited");
}

/* The OS pages of the live table that pages[0, n)'s slots lie on. */
static size_t slot_pages(int n)
{
    static bool seen[ND_PROF_LIVE * sizeof(nd_prof_slot) / 4096 + 1];
    memset(seen, 0, sizeof seen);
    size_t count = 0;
    for (int i = 0; i < n; i++) {
        size_t pg = (size_t)pages[i].prof_slot * sizeof(nd_prof_slot) / 4096;
        count += !seen[pg];
        seen[pg] = true;
    }
    return count;
}

static uintptr_t stride_addr_of(int i) { return (uintptr_t)0x7f1234560000ull + (uintptr_t)i * 1024; }

/* 200 live samples of blocks at addresses a(0..199): the OS pages of the
   live table their slots lie on, at most 8 of them. */
static void expect_200_samples_on_few_pages(uintptr_t (*a)(int), const char *what)
{
    start();
    const int n = 200;
    for (int i = 0; i < n; i++) {
        nd_prof_record((void *)a(i), &pages[i], 1024, 1024, 0, false);
        nd_prof_live v;
        EXPECT(pages[i].sampled == 1 && nd_prof_live_copy(pages[i].prof_slot, &v) && v.addr == a(i),
               "sample %d to be recorded in its slot", i);
    }
    size_t written = slot_pages(n);
    EXPECT(written <= 8, "%d live samples (%s) to lie on at most 8 OS pages of the live table, they lie on %zu", n,
           what, written);
    for (int i = 0; i < n; i++)
        nd_prof_forget((void *)a(i), &pages[i]);
    EXPECT(nd_prof_live_bytes() == 0, "the live estimate to be 0 once every sample is forgotten, it is %lld",
           (long long)nd_prof_live_bytes());
}

/* 200 live samples write 5 OS pages of the table (the first table's and
   the second's 4), whether their blocks are pages in a scrambled order or
   1 KiB blocks at a steady stride (a producer's ring of 1 KiB blocks):
   the tables grow by 4, so the pages written follow the samples. On main
   39094ac the second table had 2,048 slots, 32 OS pages, and 200 samples
   wrote 32 and 33 pages (xthread -s 1024: 132-140 KiB of table for
   about 500 samples, h52p). */
static void the_live_tables_pages_written_follow_the_samples(void)
{
    expect_200_samples_on_few_pages(addr_of, "OS pages in a scrambled order");
}
static void the_live_tables_pages_written_follow_the_samples_of_1_kib_blocks(void)
{
    expect_200_samples_on_few_pages(stride_addr_of, "1 KiB blocks at a stride");
}

/* The child: a sample whose stack is new (this call site), so its site is
   added to the index. */
static void child_adds_a_site(void *arg)
{
    (void)arg;
    static nd_page pg;
    nd_prof_record((void *)addr_of(SAMPLES - 1), &pg, 64, 4096, 0, false);
    nd_prof_live v;
    if (pg.sampled != 1 || !nd_prof_live_copy(pg.prof_slot, &v)) {
        fprintf(stderr, "the child's sample was not recorded\n");
        _exit(3);
    }
    if (v.site >= ND_PROF_SITES || nd_load_acquire(&nd_prof_sites()[v.site].state) != 2) {
        fprintf(stderr, "the child's sample has no site (site %u)\n", v.site);
        _exit(4);
    }
}

/* A thread of the parent that a fork cuts off while it adds a site leaves
   its index entry "being written", for ever in the child: a search of the
   child that meets it must pass it, not wait for a writer the child does
   not have (every empty entry of the first table so, here). */
static void a_forked_childs_new_site_passes_entries_its_parents_threads_left_half_written(void)
{
    start();
    record(0);
    nd_prof_test_writers_cut_off();
    struct nd_child c;
    nd_run_forked(child_adds_a_site, NULL, 60, &c);
    EXPECT(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0,
           "the child to add a site past the entries half written when it was forked; it %s "
           "(SIGALRM: it waited 60 s for their writers); stderr: %s",
           nd_describe_status(c.status), c.err);
}

static const struct nd_case cases[] = {
    ND_CASE(a_few_live_samples_stay_in_the_first_table),
    ND_CASE(a_sample_examines_eight_slots_of_a_crowded_table),
    ND_CASE(a_forgotten_sample_leaves_its_slot),
    ND_CASE(the_gaps_logarithm_is_libms_within_1e_11),
    ND_CASE(the_gaps_are_exponential_with_the_rate_as_their_mean),
    ND_CASE(a_samples_estimate_is_one_over_its_probability),
    ND_CASE(a_bins_countdown_is_the_gap_in_requests_or_cut_and_drawn_again),
    ND_CASE(a_sampling_thread_writes_no_more_pages_of_its_cache),
    ND_CASE(threads_whose_requests_are_sampled_write_no_more_pages_of_their_caches),
    ND_CASE(the_live_tables_pages_written_follow_the_samples),
    ND_CASE(the_live_tables_pages_written_follow_the_samples_of_1_kib_blocks),
    ND_CASE(a_forked_childs_new_site_passes_entries_its_parents_threads_left_half_written),
};
ND_MAIN(cases)
