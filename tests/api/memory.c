/*
 * memory.c - how nodal gets memory from the kernel and gives it back, as
 * its statistics (os_maps, os_unmaps, huge_cached_bytes, ...) and the
 * blocks' contents show: freed huge mappings are reused instead of mapped
 * again, the cache of them is bounded and drains after purge_delay, and a
 * reused mapping never leaks old contents into calloc.
 *
 * A thread that exits leaves its record (caches, heaps) for the next thread
 * to start on its node, for ten purge delays at most.
 *
 * Linked against the prefix library (nodal_* names): the test's own stdio
 * keeps the system malloc.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "check.h"
#include "json.h"
#include "nodal.h"
#include "proc.h"
#include "stats_total.h"

#define MiB ((size_t)1 << 20)

/* Huge blocks allocated and freed in a loop (5-25 MiB, as a program that
   fills a big buffer per request does) reuse one mapping: a handful of
   mmap calls for 200 blocks, not one each. */
static void huge_blocks_in_a_loop_reuse_their_mapping(void)
{
    nodal_collect(1);
    double maps0 = nd_test_total("os_maps");
    uint64_t x = 12345;
    for (int i = 0; i < 200; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        size_t size = 5 * MiB + (size_t)(x >> 40) % (20 * MiB);
        unsigned char *p = nodal_malloc(size);
        EXPECT(p != NULL, "nodal_malloc(%zu) to succeed", size);
        p[0] = p[size - 1] = (unsigned char)i;
        nodal_free(p);
    }
    double maps = nd_test_total("os_maps") - maps0;
    EXPECT(maps <= 20, "200 huge blocks in a loop to take at most 20 new mappings, took %.0f", maps);
}

/* calloc of a huge block that reuses a freed mapping returns zeros, though
   the mapping held other data. */
static void calloc_of_a_reused_huge_mapping_is_zero(void)
{
    size_t size = 12 * MiB;
    unsigned char *p = nodal_malloc(size);
    EXPECT(p != NULL, "nodal_malloc(%zu) to succeed", size);
    memset(p, 0xa5, size);
    nodal_free(p);
    unsigned char *q = nodal_calloc(1, size - MiB);
    EXPECT(q != NULL, "nodal_calloc to succeed");
    for (size_t i = 0; i < size - MiB; i += 1024)
        EXPECT(q[i] == 0, "calloc'd byte %zu to be 0, got 0x%02x (a reused mapping's old contents)", i, q[i]);
    nodal_free(q);
}

/* The purge policy's demand window, in purge delays (src/node/node.c:
   ND_DEMAND_DELAYS): freed huge mappings stay while huge blocks were asked
   for within it, and the process's recent peak is that of the last one to
   two windows. */
#define DEMAND_DELAYS 3

/* Many huge blocks freed at once: the cache keeps a bounded amount (at most
   128 MiB per kind of memory) and gives all of it back once purge_delay has
   passed with no huge block asked for and the process's recent peak has
   aged out (two demand windows; nodal_collect(0) runs the expiry now; the
   blocks are freed well before). */
static void freed_huge_mappings_are_bounded_and_drained(void)
{
    enum { N = 24 };
    static void *b[N];
    for (int i = 0; i < N; i++) {
        b[i] = nodal_malloc(20 * MiB);
        EXPECT(b[i] != NULL, "nodal_malloc(20 MiB) #%d to succeed", i);
    }
    for (int i = 0; i < N; i++)
        nodal_free(b[i]);
    double cached = nd_test_total("huge_cached_bytes");
    EXPECT(cached > 0, "freed huge mappings to be kept for reuse, huge_cached_bytes is 0");
    EXPECT(cached <= 128.0 * MiB, "at most 128 MiB of freed huge mappings kept, got %.1f MiB", cached / MiB);
    long delay = nodal_option_get("purge_delay");
    long wait = (2 * DEMAND_DELAYS + 1) * delay + 50;
    usleep((useconds_t)wait * 1000);
    nodal_collect(0);
    cached = nd_test_total("huge_cached_bytes");
    EXPECT(cached == 0, "the freed huge mappings to be unmapped %ld ms after the frees, %.1f MiB kept",
           wait, cached / MiB);
}

/* While huge blocks keep being asked for, freed mappings stay past
   purge_delay (a program that makes and frees huge blocks on a busy
   machine reuses them rather than mapping and faulting them again): two
   mappings are freed, then one block of their size is made and freed every
   10 ms for three purge delays, each time followed by nodal_collect(0)
   (which returns what is due); the mapping it never takes is still there,
   and nothing was unmapped. */
static void huge_mappings_in_use_stay_past_purge_delay(void)
{
    nodal_collect(1);
    void *a = nodal_malloc(20 * MiB), *b = nodal_malloc(20 * MiB);
    EXPECT(a != NULL && b != NULL, "two nodal_malloc(20 MiB) to succeed");
    nodal_free(a);
    nodal_free(b);
    double unmaps = nd_test_total("os_unmaps");
    long delay = nodal_option_get("purge_delay");
    for (long t = 0; t < 3 * delay; t += 10) {
        void *p = nodal_malloc(20 * MiB);
        EXPECT(p != NULL, "nodal_malloc(20 MiB) to succeed");
        nodal_free(p);
        usleep(10 * 1000);
        nodal_collect(0);   /* what is due goes now */
    }
    double cached = nd_test_total("huge_cached_bytes");
    EXPECT(cached >= 40.0 * MiB, "both freed 20 MiB mappings to stay while such blocks are asked for, %.1f MiB kept",
           cached / MiB);
    EXPECT(nd_test_total("os_unmaps") == unmaps, "no mapping to be unmapped meanwhile (os_unmaps %.0f -> %.0f)", unmaps,
           nd_test_total("os_unmaps"));
    nodal_collect(1);
}

/* With purge_delay=0 nothing is kept: a freed huge block is unmapped at
   once (run by the case below in a child with that option). */
static void emit_cached_after_free_with_no_delay(void)
{
    void *p = nodal_malloc(20 * MiB);
    EXPECT(p != NULL, "nodal_malloc(20 MiB) to succeed");
    nodal_free(p);
    printf("%.0f\n", nd_test_total("huge_cached_bytes"));
}

static void no_huge_mapping_is_kept_when_purge_delay_is_0(void)
{
    static struct nd_child c;
    nd_run_case("emit_cached_after_free_with_no_delay", "purge_delay=0", NULL, 60, &c);
    EXPECT(atof(c.out) == 0, "no freed huge mapping kept with purge_delay=0, huge_cached_bytes %s", c.out);
}

static void pin_to_one_cpu(cpu_set_t *was);

/* Large blocks (above 128 KiB, below 1 MiB) share segments: 20 blocks of
   200 KiB take two segments, not twenty. On one CPU: the large pool is in
   shards by CPU, and a thread that moves to a CPU of another shard has
   that shard map its own first segment (large.h; under TSan this read 3
   segments once in a fresh clone's run, stop 55). */
static void large_blocks_share_segments(void)
{
    enum { N = 20 };
    static void *b[N];
    cpu_set_t was;
    pin_to_one_cpu(&was);
    nodal_collect(1);
    double seg0 = nd_test_total("segments");
    for (int i = 0; i < N; i++) {
        b[i] = nodal_malloc(200 << 10);
        EXPECT(b[i] != NULL, "nodal_malloc(200 KiB) to succeed");
        memset(b[i], i, 200 << 10);
    }
    double segs = nd_test_total("segments") - seg0;
    EXPECT(segs <= 2, "20 blocks of 200 KiB to take at most 2 new segments, took %.0f", segs);
    for (int i = 0; i < N; i++) {
        for (size_t j = 0; j < (200 << 10); j += 4096)
            EXPECT(((unsigned char *)b[i])[j] == (unsigned char)i, "block %d byte %zu intact", i, j);
        nodal_free(b[i]);
    }
    sched_setaffinity(0, sizeof was, &was);
}

/* Pins the calling thread to the first CPU it may run on (*was: its
   mask before), so that the CPU a block is freed on is the one the next
   request runs on. */
static void pin_to_one_cpu(cpu_set_t *was)
{
    EXPECT(sched_getaffinity(0, sizeof *was, was) == 0, "sched_getaffinity to work");
    int cpu = 0;
    while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, was))
        cpu++;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    EXPECT(sched_setaffinity(0, sizeof one, &one) == 0, "sched_setaffinity to CPU %d to work", cpu);
}

#define KiB ((size_t)1 << 10)
#define CHUNK (64 * KiB)

/* A freed large block of whole chunks (one realloc grew, or asked for in
   whole chunks) waits in its CPU's cache (large.h), in use for its pool,
   and the next large block asked for on that CPU of as many chunks (or
   up to a quarter fewer) takes it without the pool; a block of a part of
   its run, or one the cache has no room for (past 16 chunks), goes back
   to the pool; a block that finds no resident run in the pool makes the
   caches give theirs back first (nodal_collect(1) purged every free
   chunk: the cached block's are the only resident ones);
   nodal_collect(1) gives the cached blocks back. */
static void a_freed_large_block_waits_in_its_cpus_cache_for_the_next_one(void)
{
    cpu_set_t was;
    pin_to_one_cpu(&was);
    nodal_collect(1);
    double active0 = nd_test_total("active");
    EXPECT(nd_test_total("large_cached_bytes") == 0, "no large block cached after nodal_collect(1), %.0f B",
           nd_test_total("large_cached_bytes"));
    char *p = nodal_malloc(5 * CHUNK);
    EXPECT(p != NULL, "nodal_malloc(320 KiB) to succeed");
    memset(p, 1, 5 * CHUNK);
    nodal_free(p);
    EXPECT(nd_test_total("large_cached_bytes") == 5 * CHUNK, "the freed 320 KiB block's 5 chunks to be cached, %.0f B",
           nd_test_total("large_cached_bytes"));
    EXPECT(nd_test_total("active") == active0 + 5 * CHUNK, "the cached block to stay active: %.0f, %.0f before",
           nd_test_total("active"), active0);
    char *q = nodal_malloc(280 * KiB);   /* 5 chunks too */
    EXPECT(q == p, "the next 280 KiB block to be the cached one (%p, cached %p)", (void *)q, (void *)p);
    EXPECT(nodal_malloc_usable_size(q) == 280 * KiB, "its usable size to be the request's, %zu",
           nodal_malloc_usable_size(q));
    EXPECT(nd_test_total("large_cached_bytes") == 0, "the cache to be empty once its block is taken, %.0f B",
           nd_test_total("large_cached_bytes"));
    memset(q, 2, 280 * KiB);
    nodal_free(q);
    EXPECT(nd_test_total("large_cached_bytes") == 0, "a block of a part of its run (280 of 320 KiB) not to be cached, %.0f B",
           nd_test_total("large_cached_bytes"));
    char *a = nodal_malloc(5 * CHUNK), *r = nodal_malloc(10 * CHUNK), *s = nodal_malloc(11 * CHUNK);
    EXPECT(a != NULL && r != NULL && s != NULL, "nodal_malloc(5, 10 and 11 chunks) to succeed");
    memset(a, 3, 5 * CHUNK);
    memset(r, 3, 10 * CHUNK);
    memset(s, 4, 11 * CHUNK);
    nodal_free(a);
    nodal_free(r);
    nodal_free(s);
    EXPECT(nd_test_total("large_cached_bytes") == 15 * CHUNK,
           "the first two freed blocks (15 chunks) to be cached, not the third (26 chunks), %.0f B",
           nd_test_total("large_cached_bytes"));
    char *t = nodal_malloc(9 * CHUNK - 8 * KiB);   /* 9 chunks: takes the 10-chunk block, not the 5 */
    EXPECT(t == r, "a block of 9 chunks to take the cached one of 10 (%p, cached %p)", (void *)t, (void *)r);
    EXPECT(nd_test_total("large_cached_bytes") == 5 * CHUNK, "5 chunks to stay cached, %.0f B",
           nd_test_total("large_cached_bytes"));
    nodal_free(t);
    nodal_collect(1);
    EXPECT(nd_test_total("large_cached_bytes") == 0, "nodal_collect(1) to empty the caches, %.0f B",
           nd_test_total("large_cached_bytes"));
    EXPECT(nd_test_total("active") == active0, "nodal_collect(1) to give the cached blocks back: active %.0f, %.0f before",
           nd_test_total("active"), active0);
    char *u = nodal_malloc(10 * CHUNK);
    EXPECT(u != NULL, "nodal_malloc(640 KiB) to succeed");
    memset(u, 5, 10 * CHUNK);
    nodal_free(u);
    EXPECT(nd_test_total("large_cached_bytes") == 10 * CHUNK, "the freed 640 KiB block to be cached, %.0f B",
           nd_test_total("large_cached_bytes"));
    char *big = nodal_malloc(1000 * KiB);   /* 16 chunks: no resident run fits */
    EXPECT(big != NULL, "nodal_malloc(1000 KiB) to succeed");
    EXPECT(nd_test_total("large_cached_bytes") == 0, "a block with no resident run to fit to empty the caches, %.0f B",
           nd_test_total("large_cached_bytes"));
    nodal_free(big);
    char *g = nodal_malloc(20000);
    EXPECT(g != NULL, "nodal_malloc(20,000) to succeed");
    g = nodal_realloc(g, 100000);   /* a grown block: its whole run, 2 chunks */
    EXPECT(g != NULL && nodal_malloc_usable_size(g) == 2 * CHUNK, "realloc to 100,000 B to give 128 KiB, %zu",
           g != NULL ? nodal_malloc_usable_size(g) : 0);
    nodal_free(g);
    EXPECT(nd_test_total("large_cached_bytes") == 2 * CHUNK, "the freed grown block to be cached, %.0f B",
           nd_test_total("large_cached_bytes"));
    nodal_collect(1);
    EXPECT(nd_test_total("active") == active0, "nodal_collect(1) to give every block back: active %.0f, %.0f before",
           nd_test_total("active"), active0);
    sched_setaffinity(0, sizeof was, &was);
}

/* A block of 1 MiB is a large block: a run of 16 chunks of the pool, whose
   memory, freed, serves the next large blocks of any size. (It was a
   mapping of its own, 1 MiB + 4 KiB, which a freed one kept in the huge
   cache for the next block of about 1 MiB only: bench/shortlived -t 2,
   whose blocks reach 1 MiB, held 2-4 MiB there at its peak.) secure=0: a
   block of 512 KiB takes a resident run first, and after nodal_collect(1)
   the freed block's chunks are the only resident free ones (a CPU's cache
   gives it back first; secure=1 picks a run by its guard pages). */
static void a_freed_1_mib_block_serves_the_next_smaller_large_blocks(void)
{
    cpu_set_t was;
    pin_to_one_cpu(&was);
    nodal_collect(1);
    double huge0 = nd_test_total("huge_count"), large0 = nd_test_total("large_allocs");
    char *p = nodal_malloc(MiB);
    EXPECT(p != NULL, "nodal_malloc(1 MiB) to succeed");
    EXPECT(nd_test_total("large_allocs") == large0 + 1 && nd_test_total("huge_count") == huge0,
           "a 1 MiB block to be a large block (large_allocs %.0f -> %.0f, huge blocks live %.0f -> %.0f)", large0,
           nd_test_total("large_allocs"), huge0, nd_test_total("huge_count"));
    memset(p, 1, MiB);
    double cached0 = nd_test_total("huge_cached_bytes");
    nodal_free(p);
    EXPECT(nd_test_total("huge_cached_bytes") == cached0, "the freed 1 MiB block not to wait in the huge cache (%.0f -> %.0f B)",
           cached0, nd_test_total("huge_cached_bytes"));
    char *a = nodal_malloc(512 * KiB), *b = nodal_malloc(512 * KiB);
    EXPECT(a != NULL && b != NULL, "two nodal_malloc(512 KiB) to succeed");
    if (nodal_option_get("secure") == 0) {
        EXPECT((a == p && b == p + 512 * KiB) || (b == p && a == p + 512 * KiB),
               "the two 512 KiB blocks to take the freed 1 MiB block's chunks (%p), got %p and %p", (void *)p,
               (void *)a, (void *)b);
    }
    memset(a, 2, 512 * KiB);
    memset(b, 3, 512 * KiB);
    nodal_free(a);
    nodal_free(b);
    nodal_collect(1);
    sched_setaffinity(0, sizeof was, &was);
}

/* A CPU's cache that no block was taken from during a purge delay gives
   its blocks back (nodal_collect(0) runs the check: the first finds the
   cache used since the last, the next one, a delay later, unused). */
static void a_cpus_cache_of_large_blocks_is_given_back_after_a_purge_delay_unused(void)
{
    cpu_set_t was;
    pin_to_one_cpu(&was);
    nodal_collect(1);
    char *p = nodal_malloc(7 * CHUNK);
    EXPECT(p != NULL, "nodal_malloc(448 KiB) to succeed");
    memset(p, 1, 7 * CHUNK);
    nodal_free(p);
    p = nodal_malloc(7 * CHUNK);   /* taken from the cache: used */
    nodal_free(p);
    EXPECT(nd_test_total("large_cached_bytes") == 7 * CHUNK, "the freed 448 KiB block to be cached, %.0f B",
           nd_test_total("large_cached_bytes"));
    long delay = nodal_option_get("purge_delay");
    for (int i = 0; i < 3; i++) {
        usleep((useconds_t)(delay + 20) * 1000);
        nodal_collect(0);
    }
    EXPECT(nd_test_total("large_cached_bytes") == 0, "the cache to be given back after 3 purge delays unused, %.0f B",
           nd_test_total("large_cached_bytes"));
    sched_setaffinity(0, sizeof was, &was);
}

/* With purge_delay=0 no freed large block waits in a CPU's cache (run by
   the case below in a child with that option). */
static void emit_large_cached_after_free_with_no_delay(void)
{
    void *p = nodal_malloc(5 * CHUNK);
    EXPECT(p != NULL, "nodal_malloc(320 KiB) to succeed");
    nodal_free(p);
    printf("%.0f\n", nd_test_total("large_cached_bytes"));
}

static void no_large_block_is_cached_when_purge_delay_is_0(void)
{
    static struct nd_child c;
    nd_run_case("emit_large_cached_after_free_with_no_delay", "purge_delay=0", NULL, 60, &c);
    EXPECT(c.out[0] != 0 && atof(c.out) == 0, "no freed large block cached with purge_delay=0, large_cached_bytes %s",
           c.out);
}

/* A freed large block of one OS page is kept for the next request of one
   OS page (large.h): a larger request does not get its chunk, the next
   one-page request does, and nodal_collect(1) gives it back. */
static void a_freed_one_page_block_is_kept_for_the_next_one(void)
{
    nodal_collect(1);
    double active0 = nd_test_total("active");
    void *p = nodal_aligned_alloc(32768, 4096);   /* above 16 KiB alignment: a large block */
    EXPECT(p != NULL, "nodal_aligned_alloc(32 KiB, 4 KiB) to succeed");
    memset(p, 1, 4096);
    nodal_free(p);
    void *r = nodal_aligned_alloc(32768, 8192);
    EXPECT(r != NULL && r != p, "a two-page block not to take the kept block's chunk (%p, kept %p)", r, p);
    void *q = nodal_aligned_alloc(32768, 4096);
    EXPECT(q == p, "the next one-page block to be the kept one (%p, kept %p)", q, p);
    memset(q, 2, 4096);
    nodal_free(q);
    nodal_free(r);
    nodal_collect(1);
    EXPECT(nd_test_total("active") == active0, "nodal_collect(1) to give the kept block back: active %.0f, %.0f before",
           nd_test_total("active"), active0);
}

/* realloc grows a large block in place while the chunks after it are free,
   and shrinks it in place. */
static void realloc_resizes_a_large_block_in_place(void)
{
    nodal_collect(1);
    unsigned char *p = nodal_malloc(150 << 10);
    EXPECT(p != NULL, "nodal_malloc(150 KiB) to succeed");
    memset(p, 0x5a, 150 << 10);
    for (size_t size = 200 << 10; size <= (900 << 10); size += 100 << 10) {
        unsigned char *q = nodal_realloc(p, size);
        EXPECT(q == p, "realloc(p, %zu KiB) to grow in place (the chunks after it are free)", size >> 10);
        EXPECT(nodal_usable_size(q) >= size, "usable size %zu >= %zu", nodal_usable_size(q), size);
    }
    unsigned char *q = nodal_realloc(p, 140 << 10);
    EXPECT(q == p, "realloc to 140 KiB to shrink in place");
    for (size_t j = 0; j < (140 << 10); j += 512)
        EXPECT(q[j] == 0x5a, "byte %zu kept through the resizes", j);
    nodal_free(q);
}

/* A block grown by realloc a quarter at a time, from 8 B to 8 MiB: every
   byte written on the way is kept, and past 16 KiB (where a grown block
   becomes a run of chunks) it grows in place up to 1 MiB while the chunks
   after it are free: one copy in all between 16 KiB and 1 MiB, not one
   per size class. */
static void realloc_growth_keeps_contents_and_grows_in_place_past_16_kib(void)
{
    nodal_collect(1);
    size_t size = 8, written = 0;
    unsigned char *p = nodal_malloc(size);
    EXPECT(p != NULL, "nodal_malloc(8) to succeed");
    unsigned char *mid = NULL;
    int moves_mid = 0, steps = 0;
    while (size < ((size_t)8 << 20)) {
        size_t next = size + size / 4 + 8;
        unsigned char *q = nodal_realloc(p, next);
        EXPECT(q != NULL, "realloc(p, %zu) to succeed", next);
        for (size_t j = 0; j < written; j += 61)
            EXPECT(q[j] == (unsigned char)(j * 7 + 1), "byte %zu kept when growing to %zu bytes", j, next);
        for (size_t j = written; j < next; j++)
            q[j] = (unsigned char)(j * 7 + 1);
        written = next;
        if (next > ((size_t)20 << 10) && next <= ((size_t)1000 << 10)) {
            moves_mid += mid != NULL && q != mid;
            mid = q;
        }
        p = q;
        size = next;
        steps++;
    }
    EXPECT(moves_mid == 0, "a block grown by realloc from 20 KiB to 1000 KiB to stay in place; it moved "
           "%d times", moves_mid);
    EXPECT(nodal_usable_size(p) >= size, "usable size %zu >= %zu", nodal_usable_size(p), size);
    nodal_free(p);
}

/* ---- thread records ------------------------------------------------------ */

/* A thread that allocates and frees one 48-byte block on CPU 0, then exits;
   the block's address comes back. */
static void *alloc_free_and_exit(void *arg)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
    void *p = nodal_malloc(48);
    nodal_free(p);
    *(void **)arg = p;
    return NULL;
}

static void *run_on_cpu0(void)
{
    void *p = NULL;
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, alloc_free_and_exit, &p) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    EXPECT(p != NULL, "nodal_malloc(48) in a thread to succeed");
    return p;
}

/* A thread that starts after another exited (on the same node) takes over
   its record: the caches come warm, so its first block is the one the
   exited thread freed last. The record waits in a pool meanwhile, and the
   statistics say so. */
static void a_thread_started_after_another_exited_takes_over_its_caches(void)
{
    nodal_collect(1);   /* no pooled record from earlier tests */
    EXPECT(nd_test_total("pooled_threads") == 0, "no pooled thread record after nodal_collect(1), got %g",
           nd_test_total("pooled_threads"));
    void *first = run_on_cpu0();
    EXPECT(nd_test_total("pooled_threads") == 1, "one pooled thread record after a thread exited, got %g",
           nd_test_total("pooled_threads"));
    void *second = run_on_cpu0();
    EXPECT(second == first, "the next thread's first 48-byte block to be the one the exited thread "
           "freed (%p), got %p", first, second);
    EXPECT(nd_test_total("pooled_threads") == 1, "still one pooled record (taken and given back), got %g",
           nd_test_total("pooled_threads"));
}

/* A pooled record waits ten purge delays (1 s by default) for a thread to
   take it; after that, maintenance takes it apart and its memory goes back
   like that of an exited thread. */
static void a_pooled_thread_record_is_taken_apart_after_ten_purge_delays(void)
{
    nodal_collect(1);
    run_on_cpu0();
    EXPECT(nd_test_total("pooled_threads") == 1, "one pooled thread record after a thread exited, got %g",
           nd_test_total("pooled_threads"));
    nodal_collect(0);
    EXPECT(nd_test_total("pooled_threads") == 1, "a record pooled just now to stay pooled through "
           "nodal_collect(0), got %g", nd_test_total("pooled_threads"));
    long delay = nodal_option_get("purge_delay");
    EXPECT(delay > 0, "purge_delay to be positive (the default), got %ld", delay);
    usleep((useconds_t)(10 * delay + 200) * 1000);
    nodal_collect(0);
    EXPECT(nd_test_total("pooled_threads") == 0, "the record to be taken apart %ld ms after its thread "
           "exited, %g still pooled", 10 * delay + 200, nd_test_total("pooled_threads"));
}

/* Fills 2 MiB of 1 KiB blocks and frees all but the first, then exits:
   its pages but one are empty, their memory waiting for its purge in a
   segment the record's heap keeps. */
static void *fill_free_and_exit(void *arg)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
    enum { N = 2048 };
    void *b[N];   /* on the stack: static data would shift the address-space cases' margins */
    for (int i = 0; i < N; i++) {
        b[i] = nodal_malloc(1024);
        EXPECT(b[i] != NULL, "nodal_malloc(1024) to succeed");
        memset(b[i], 1, 1024);
    }
    for (int i = 1; i < N; i++)
        nodal_free(b[i]);
    *(void **)arg = b[0];
    return NULL;
}

/* Allocates and frees small blocks for `ms` milliseconds, then exits. */
static void *churn_for(void *arg)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
    long ms = (long)(intptr_t)arg;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        for (int i = 0; i < 1000; i++) {
            void *volatile p = nodal_malloc(64 + (size_t)(i & 7) * 16);
            nodal_free(p);
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
    return NULL;
}

/* A program that starts a thread per task, each shorter than the purge
   delay, runs them all on one pooled record: its heaps are still
   maintained every purge delay, so the memory an earlier thread freed
   goes back to the OS while the chain goes on (it waited for a thread
   that lived a whole delay, which never came). */
static void a_chain_of_short_threads_purges_what_its_record_freed(void)
{
    nodal_collect(1);
    void *kept = NULL;
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, fill_free_and_exit, &kept) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    double returned0 = nd_test_total("returned");
    long delay = nodal_option_get("purge_delay");
    EXPECT(delay > 0, "purge_delay to be positive (the default), got %ld", delay);
    long each = delay / 5 > 1 ? delay / 5 : 1;
    for (long spent = 0; spent < 4 * delay; spent += each) {
        EXPECT(pthread_create(&t, NULL, churn_for, (void *)(intptr_t)each) == 0, "pthread_create to work");
        pthread_join(t, NULL);
    }
    double returned = nd_test_total("returned") - returned0;
    EXPECT(nd_test_total("pooled_threads") == 1, "the chain to run on one pooled record, %g pooled",
           nd_test_total("pooled_threads"));
    EXPECT(returned >= 1.0 * (double)MiB, "at least 1 MiB of the 2 MiB freed to go back to the OS within "
           "four purge delays of threads %ld ms long each, %.0f KiB did", each, returned / 1024);
    nodal_free(kept);
}

/* ---- what a thread costs ------------------------------------------------- */

#define TC_THREADS  16
#define TC_REQUESTS 64
static pthread_barrier_t tc_held, tc_done;

/* TC_REQUESTS blocks of 16-160 bytes, each written, held until the main
   thread has measured. */
static void *small_requests_and_wait(void *arg)
{
    void *p[TC_REQUESTS];
    unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u;
    for (int i = 0; i < TC_REQUESTS; i++) {
        seed = seed * 1103515245u + 12345u;
        size_t n = 16 + (seed >> 16) % 145;
        p[i] = nodal_malloc(n);
        EXPECT(p[i] != NULL, "nodal_malloc(%zu) in a thread to succeed", n);
        memset(p[i], 0x5a, n);
    }
    pthread_barrier_wait(&tc_held);
    pthread_barrier_wait(&tc_done);
    for (int i = 0; i < TC_REQUESTS; i++)
        nodal_free(p[i]);
    return NULL;
}

static void *no_request(void *arg)
{
    return arg;
}

/* 16 threads that each make 64 requests of 16-160 bytes and wait add
   less than 64 KiB of anonymous memory each, their 8 KiB of stack and
   their share of the nursery included (49-50 KiB; glibc's threads about
   20 with its arenas; main 2ff11ec: 112-114, of which 36 KiB of
   thread-cache slots, a page for each class the thread used, 16 KiB of
   them apart, and 52 of a segment and a page per class of its own:
   docs/how-it-works.md, "Each thread then costs"). */
static void sixteen_threads_with_a_few_small_requests_each_cost_little_memory(void)
{
#ifdef ND_TEST_SANITIZER
    SKIP("a sanitizer's shadow memory and allocator decide what a thread costs");
#endif
    void *mine = nodal_malloc(64);   /* nodal started in this thread */
    pthread_t t[TC_THREADS];
    /* A thread started and joined first: glibc's own first-thread costs
       (its stack cache, the TLS of the libraries) are not the threads'. */
    EXPECT(pthread_create(&t[0], NULL, no_request, NULL) == 0, "pthread_create to work");
    pthread_join(t[0], NULL);
    pthread_barrier_init(&tc_held, NULL, TC_THREADS + 1);
    pthread_barrier_init(&tc_done, NULL, TC_THREADS + 1);
    long before = nd_anon_rss_kib();
    for (int i = 0; i < TC_THREADS; i++)
        EXPECT(pthread_create(&t[i], NULL, small_requests_and_wait, (void *)(uintptr_t)(i + 1)) == 0,
               "pthread_create to work");
    pthread_barrier_wait(&tc_held);
    long after = nd_anon_rss_kib();
    pthread_barrier_wait(&tc_done);
    for (int i = 0; i < TC_THREADS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&tc_held);
    pthread_barrier_destroy(&tc_done);
    nodal_free(mine);
    long each = (after - before) / TC_THREADS;
    EXPECT(each < 64, "%d threads of %d requests of 16-160 B each to add less than 64 KiB of anonymous "
           "memory each, they added %ld KiB (%ld KiB in all)", TC_THREADS, TC_REQUESTS, each, after - before);
}

/* A thread that makes a few requests of six classes and frees them. */
static void *few_requests_of_six_classes(void *arg)
{
    static const size_t sizes[] = { 16, 48, 96, 160, 320, 640 };
    void *p[6][12];
    for (int c = 0; c < 6; c++)
        for (int i = 0; i < 12; i++) {
            p[c][i] = nodal_malloc(sizes[c]);
            EXPECT(p[c][i] != NULL, "nodal_malloc(%zu) in a thread to succeed", sizes[c]);
            memset(p[c][i], 0x5a, sizes[c]);
        }
    for (int c = 0; c < 6; c++)
        for (int i = 0; i < 12; i++)
            nodal_free(p[c][i]);
    return arg;
}

/* Threads other than the first take their first blocks of small classes
   from their node's nursery (nursery.h), pages they share: once they have
   exited and given them back, nodal_collect(1) leaves none of its pages
   in use (active as before the threads), however many threads took
   blocks there. Before the nurseries' maintenance (586835c) the nursery
   kept its six pages (active 448 KiB against 64); main 2ff11ec, without
   a nursery, passes. */
static void the_nursery_keeps_no_page_once_its_threads_gave_their_blocks_back(void)
{
    void *mine = nodal_malloc(64);   /* the first thread: its pages are its own */
    nodal_collect(1);
    double active0 = nd_test_total("active");
    pthread_t t[TC_THREADS];
    for (int i = 0; i < TC_THREADS; i++)
        EXPECT(pthread_create(&t[i], NULL, few_requests_of_six_classes, NULL) == 0, "pthread_create to work");
    for (int i = 0; i < TC_THREADS; i++)
        pthread_join(t[i], NULL);
    nodal_collect(1);
    double active = nd_test_total("active");
    nodal_free(mine);
    EXPECT(active <= active0, "active to come back to its %.0f KiB once %d threads that took 12 blocks of each "
           "of six classes gave them back and exited (nodal_collect(1)), it is %.0f KiB", active0 / 1024,
           TC_THREADS, active / 1024);
}

/* Under an address-space limit of 200 MiB (ulimit -v), 1 MiB blocks fill
   nearly all of it; once they fail, small allocations still succeed in
   the thread that made them, in a thread that had not allocated before
   and in one started then, and freeing half the large ones lets large
   ones succeed again. Node-targeted calls fail cleanly (NULL, ENOMEM).

   The helper runs in a process of its own (the limit stays there), with
   ND_ASLIMIT=glibc (the system malloc: this program is linked with the
   prefix library) or nodal, and prints "n vm0 main early late refill
   node": blocks of 1 MiB, the address space at its start (KiB), 64-byte
   requests that succeeded (of 1,000) in the main thread, in an idle
   thread made before the limit and in a thread started after (once one
   1 MiB block is freed; it keeps one block in ten), 1 MiB blocks
   allocated again (of the half freed), and 1 if the node calls failed
   cleanly. */
#define AS_LIMIT ((size_t)200 << 20)
#define AS_MAX_BLOCKS 1024   /* 256 KiB blocks: 200 MiB holds fewer than 800 */
#define AS_CHECK_MAX 16384   /* as_check's 16 KiB blocks: 200 MiB holds fewer than 12,800 */

static void *(*as_malloc)(size_t);
static void (*as_free)(void *);
static sem_t as_go;

/* 1,000 requests of 64 B, each block written, one in `keep` of them kept
   and the others freed at once: how many succeeded. */
static int as_small_requests(int keep)
{
    int ok = 0;
    for (int i = 0; i < 1000; i++) {
        char *p = as_malloc(64);
        if (p != NULL) {
            memset(p, 2, 64);
            ok++;
            if (i % keep != 0)
                as_free(p);
        }
    }
    return ok;
}

static void *as_idle_thread(void *arg)
{
    while (sem_wait(&as_go) != 0)
        ;
    *(int *)arg = as_small_requests(1);
    return NULL;
}

/* The thread started after the large blocks failed keeps one block in
   ten. (It keeps fewer than the other threads: what the limit leaves it is
   whatever the last large block did not fit, which may hold one page of a
   short segment and no more; the 1,000 kept blocks of the other threads
   come from pages they could have before.) */
static void *as_late_thread(void *arg)
{
    *(int *)arg = as_small_requests(10);
    return NULL;
}

/* What the address-space helpers share: 100 small blocks of the main
   thread before the limit, an idle thread started before it (its first
   small requests wait for as_go), and a thread started after it. */
typedef struct as_threads {
    void *small[100];
    pthread_attr_t attr;
    pthread_t idle;
    int idle_ok, late_ok;   /* late_ok -1: the late thread did not start */
} as_threads;

static void as_threads_start(as_threads *th)
{
    for (int i = 0; i < 100; i++)
        th->small[i] = as_malloc(64);
    EXPECT(sem_init(&as_go, 0, 0) == 0, "sem_init to work");
    pthread_attr_init(&th->attr);
    pthread_attr_setstacksize(&th->attr, 64 << 10);
    th->idle_ok = th->late_ok = 0;
    EXPECT(pthread_create(&th->idle, &th->attr, as_idle_thread, &th->idle_ok) == 0, "a thread to start");
}

/* Lets the idle thread make its requests, then starts the late thread. */
static void as_threads_finish(as_threads *th)
{
    pthread_t late;
    sem_post(&as_go);
    pthread_join(th->idle, NULL);
    if (pthread_create(&late, &th->attr, as_late_thread, &th->late_ok) == 0)
        pthread_join(late, NULL);
    else
        th->late_ok = -1;
}

/* Node-targeted calls under the limit: 1 MiB blocks until one fails, which
   must say ENOMEM, then small, calloc'ed, aligned and interleaved ones,
   each a block or NULL with ENOMEM. 1 if all did. */
static int as_node_calls_fail_cleanly(void)
{
    int ids[NODAL_MAX_NODES];
    if (nodal_node_ids(ids, NODAL_MAX_NODES) < 1)
        return 0;
    int ok = 1;
    for (int i = 0; i < 400; i++) {
        errno = 0;
        if (nodal_malloc_node(MiB, ids[0]) == NULL) {
            ok &= errno == ENOMEM;
            break;
        }
    }
    for (int i = 0; i < 200; i++) {
        void *p[4];
        errno = 0;
        p[0] = nodal_malloc_node(64, ids[0]);
        ok &= p[0] != NULL || errno == ENOMEM;
        errno = 0;
        p[1] = nodal_calloc_node(1, 300 << 10, ids[0]);
        ok &= p[1] != NULL || errno == ENOMEM;
        errno = 0;
        p[2] = nodal_aligned_alloc_node(2 * MiB, 4 * MiB, ids[0]);
        ok &= p[2] != NULL || errno == ENOMEM;
        errno = 0;
        p[3] = nodal_malloc_interleaved(8 * MiB, NULL, 0);
        ok &= p[3] != NULL || errno == ENOMEM;
        if (i % 2 == 0)
            for (int j = 0; j < 4; j++)
                nodal_free(p[j]);
    }
    return ok;
}

static void emit_address_space_limit(void)
{
    const char *who = getenv("ND_ASLIMIT");   /* "glibc,BYTES" or "nodal,BYTES" */
    bool glibc = who != NULL && strncmp(who, "glibc,", 6) == 0;
    as_malloc = glibc ? malloc : nodal_malloc;
    as_free = glibc ? free : nodal_free;
    const char *bytes = who != NULL ? strchr(who, ',') : NULL;
    size_t block = bytes != NULL ? (size_t)strtoul(bytes + 1, NULL, 10) : MiB;
    long vm0 = nd_vm_kib();
    static void *big[AS_CHECK_MAX];
    as_threads th;
    as_threads_start(&th);
    struct rlimit lim = { (rlim_t)AS_LIMIT, (rlim_t)AS_LIMIT };
    EXPECT(setrlimit(RLIMIT_AS, &lim) == 0, "setrlimit(RLIMIT_AS) to work");
    int n = 0;
    while (n < AS_CHECK_MAX && (big[n] = as_malloc(block)) != NULL)
        n++;
    int main_ok = 0;
    for (int i = 0; i < 1000; i++) {
        void *p = as_malloc(64);
        main_ok += p != NULL;
        if (i % 2 == 0)
            as_free(p);
    }
    for (int i = 0; i < n; i += 2)
        as_free(big[i]);
    int refill = 0;
    for (int i = 0; i < n; i += 2)
        refill += (big[i] = as_malloc(block)) != NULL;
    /* The threads, once one block is given back (but for it, no room at
       all may be left: the last block's failure leaves less than a block,
       perhaps nothing). */
    if (n > 1)
        as_free(big[1]);
    as_threads_finish(&th);
    int node_ok = glibc ? 1 : as_node_calls_fail_cleanly();
    printf("%d %ld %d %d %d %d %d\n", n, vm0, main_ok, th.idle_ok, th.late_ok, refill, node_ok);
    }

/* One run of the helper with the allocator `who` (nodal: with options
   `opts`, or none) and blocks of `block` bytes; its seven counts. */
static void as_run(const char *who, const char *opts, size_t block, long out[7])
{
    static struct nd_child c;
    char env[64];
    snprintf(env, sizeof env, "ND_ASLIMIT=%s,%zu", who, block);
    nd_run_case("emit_address_space_limit", opts, env, 120, &c);
    EXPECT(sscanf(c.out, "%ld %ld %ld %ld %ld %ld %ld", &out[0], &out[1], &out[2], &out[3], &out[4], &out[5],
                  &out[6]) == 7, "seven counts from the %s child, got \"%s\"", who, c.out);
}

/* The helper with blocks of `block` bytes, under glibc then nodal with
   options `opts`: nodal fits at least `permille` thousandths of glibc's
   count and 0.95x of what the limit has room for, and small requests,
   refills and node calls behave (the comment above). */
static void as_check_bytes(size_t block, const char *opts, long permille)
{
    long g[7], v[7];
    as_run("glibc", NULL, block, g);
    as_run("nodal", opts, block, v);
    long n = v[0], glibc_n = g[0];
    const char *mode = opts != NULL ? opts : "default";
    /* What the limit leaves for the blocks, each a mapping of the block
       and an OS page (glibc's, above its mmap threshold of 128 KiB, and
       nodal's huge blocks): the limit less the address space the same
       program held at its start, under glibc. */
    long fits = (long)((AS_LIMIT - (size_t)g[1] * 1024) / (block + (size_t)sysconf(_SC_PAGESIZE)));
    printf("note: %zu B blocks under a 200 MiB RLIMIT_AS (%s): nodal %ld, glibc %ld (%.3fx), room for %ld "
           "(address space at start: nodal's process %ld KiB, glibc's %ld KiB)\n", block, mode, n, glibc_n,
           (double)n / (double)(glibc_n > 0 ? glibc_n : 1), fits, v[1], g[1]);
    EXPECT(glibc_n < AS_CHECK_MAX, "glibc's count of %zu B blocks (%ld) to stop below the helper's %d", block,
           glibc_n, AS_CHECK_MAX);
    EXPECT(1000 * n >= permille * glibc_n, "nodal (%s) to fit at least 0.%03ldx glibc's %ld blocks of %zu B, got "
           "%ld", mode, permille, glibc_n, block, n);
    EXPECT(20 * n >= 19 * fits, "nodal to fit at least 0.95x the %ld blocks of %zu B the limit has room for, "
           "got %ld", fits, block, n);
    EXPECT(v[2] == 1000, "every 64-byte malloc of the main thread to succeed once %zu B ones fail, %ld of 1000 "
           "did", block, v[2]);
    EXPECT(v[3] == 1000, "every 64-byte malloc of a thread that had not allocated before to succeed once %zu B "
           "ones fail (and one is freed), %ld of 1000 did", block, v[3]);
    EXPECT(v[4] == 1000, "every 64-byte malloc of a thread started once %zu B ones fail (and one is freed) to "
           "succeed, %ld of 1000 did (-1: it could not start)", block, v[4]);
    EXPECT(v[5] == (n + 1) / 2, "the %ld %zu B blocks freed to be allocatable again, %ld were", (n + 1) / 2, block,
           v[5]);
    EXPECT(v[6] == 1, "node-targeted calls under the limit to give a block or NULL with errno ENOMEM");
}

/* as_check_bytes by default, blocks of `kib` KiB, at least 0.95x glibc. */
static void as_check(size_t kib)
{
    as_check_bytes(kib << 10, NULL, 950);
}

static void address_space_limit_leaves_small_allocations_working(void)
{
#ifdef ND_TEST_SANITIZER
    SKIP("a sanitizer reserves terabytes of address space: no limit of 200 MiB can hold");
#endif
    as_check(1024);
}

/* The same with large blocks (many to a 4 MiB segment): a segment's
   header and the chunks at its end that no block of the size fills
   must not cost more than glibc's page a block. */
static void address_space_limit_fits_256_and_512_kib_blocks(void)
{
#ifdef ND_TEST_SANITIZER
    SKIP("a sanitizer reserves terabytes of address space: no limit of 200 MiB can hold");
#endif
    as_check(256);
    as_check(512);
}

/* The same with 16 KiB blocks (a small class): the loop's requests that
   find no room in its thread's heap go to the shared heap, which must not
   spend the node's reserve on them; the small requests of the threads
   after it (the idle one, the late one) need its pages. */
static void address_space_limit_after_16_kib_blocks_leaves_small_requests_working(void)
{
#ifdef ND_TEST_SANITIZER
    SKIP("a sanitizer reserves terabytes of address space: no limit of 200 MiB can hold");
#endif
    as_check(16);
}

/* The same with medium blocks whose class leaves the end of its 512 KiB
   pages empty (40 KiB and 80 KiB: 32 KiB a page; 112 KiB: four to a
   page, 64 KiB): once a mapping is refused, a heap gives back those ends
   and its free pages (nd_heap_release), which then hold more blocks. */
static void address_space_limit_gives_back_the_unused_ends_of_medium_pages(void)
{
#ifdef ND_TEST_SANITIZER
    SKIP("a sanitizer reserves terabytes of address space: no limit of 200 MiB can hold");
#endif
    as_check(40);
    as_check(80);
    as_check(112);
}

/* The same with sizes between classes: 100,000 B (class 112 KiB, 13 %
   more) and, its own class of 20 KiB, 20,000 B by default; under
   secure=1, whose canary word moves a request into the next class past
   1 KiB (20,000 B into 24 KiB, 100,000 B into 128 KiB), the same two.
   Past a sixteenth of the limit (os.h: nd_os_space_tight), a request
   whose class wastes more than 4 % takes a cell of the request (and its
   canary) rounded up to 256 bytes instead (tight.h), and secure=1 the
   class its canary needs when that wastes less (20,000 B in 20 KiB). */
static void address_space_limit_fits_sizes_between_classes(void)
{
#ifdef ND_TEST_SANITIZER
    SKIP("a sanitizer reserves terabytes of address space: no limit of 200 MiB can hold");
#endif
    as_check_bytes(100000, NULL, 950);
    as_check_bytes(20000, NULL, 950);
    as_check_bytes(100000, "secure=1", 950);
    as_check_bytes(20000, "secure=1", 930);
}

/* The same with a size just past an OS page (32,769 B: its class takes
   40 KiB, a large block of its OS pages 36 KiB, 0.87x glibc's count
   before) and, under secure=1, exact class sizes (16 and 32 KiB, whose
   canary word moves them into the next class: 0.78x before). Past a
   sixteenth of the limit each takes a cell of a tight slab, the request
   and its canary rounded up to 256 bytes (tight.h; route.c:
   nd_route_cell): at least 0.95x glibc's count. */
static void address_space_limit_fits_sizes_just_past_a_page_and_secure_class_sizes(void)
{
#ifdef ND_TEST_SANITIZER
    SKIP("a sanitizer reserves terabytes of address space: no limit of 200 MiB can hold");
#endif
    as_check_bytes(32769, NULL, 950);
    as_check_bytes(16384, "secure=1", 950);
    as_check_bytes(32768, "secure=1", 950);
}

/* A large block that finds no room under an address-space limit takes
   the free pages of its thread's small segments (nd_route_release): the
   child fills 40 MiB with 1 KiB blocks, frees all but one per 4 MiB
   segment (so each segment stays the heap's, its other pages free but
   mapped), collects, sets a limit of 64 MiB more than it holds and
   allocates 256 KiB blocks until one fails. They must fit in the 64 MiB
   and at least 20 MiB of the ~39 MiB of free pages: 336 blocks (before,
   the free pages were not given back: 250 or so). The child prints the
   count, or -1 when something failed before the limit. */
static void emit_large_blocks_after_freed_small_ones(void)
{
    enum { N = 40960 };
    static void *small[N];
    static uintptr_t kept[64];
    int nkept = 0;
    for (int i = 0; i < N; i++)
        if ((small[i] = nodal_malloc(1024)) == NULL) {
            printf("-1\n");
            return;
        }
    for (int i = 0; i < N; i++) {
        uintptr_t w = (uintptr_t)small[i] >> 22;
        bool seen = false;
        for (int j = 0; j < nkept && !seen; j++)
            seen = kept[j] == w;
        if (!seen && nkept < 64)
            kept[nkept++] = w;
        else
            nodal_free(small[i]);
    }
    nodal_collect(1);
    long vm = nd_vm_kib();
    struct rlimit lim = { (rlim_t)vm * 1024 + ((rlim_t)64 << 20), (rlim_t)vm * 1024 + ((rlim_t)64 << 20) };
    if (vm <= 0 || setrlimit(RLIMIT_AS, &lim) != 0) {
        printf("-1\n");
        return;
    }
    int n = 0;
    while (n < 1000 && nodal_malloc(256 << 10) != NULL)
        n++;
    printf("%d\n", n);
}

static void address_space_limit_gives_large_blocks_the_free_pages_of_small_segments(void)
{
#ifdef ND_TEST_SANITIZER
    SKIP("a sanitizer reserves terabytes of address space: no limit of 200 MiB can hold");
#endif
    static struct nd_child c;
    nd_run_case("emit_large_blocks_after_freed_small_ones", NULL, NULL, 120, &c);
    int n = -1;
    EXPECT(sscanf(c.out, "%d", &n) == 1, "a count from the child, got \"%s\"", c.out);
    printf("note: 256 KiB blocks under 64 MiB more than the process held, ~39 MiB of it free small pages: %d\n", n);
    EXPECT(n >= 336 && n < 1000, "the 256 KiB blocks to take the 64 MiB and at least 20 MiB of the free small pages "
           "(336 blocks or more), got %d", n);
}

/* A freed large block gives its address space back when a thread needs
   a page: the limit filled with 256 KiB blocks (large ones, many to a
   segment), one freed, then 1,000 requests of 64 B in a thread idle until
   then and in one started then all succeed, whatever was left of the
   limit when the blocks failed. The helper takes `pad` KiB of address
   space more before the limit (ND_ASPAD); the case runs it with pads of 0
   to 252 KiB in 4 KiB steps, so what the last block leaves takes every
   value a program's size could give it. The helper prints "n idle late
   again": the blocks, the two threads' successes, and the blocks
   allocated again once all were freed. ND_ASPAD is "pad,kib,freed":
   the pad, the blocks' size in KiB and 1 (one freed) or 0 (none freed
   before the threads' requests: the next case). */
static void emit_freed_large_block_room(void)
{
    const char *env = getenv("ND_ASPAD");
    unsigned pad_kib = 0, kib = 256, freed = 1;
    EXPECT(env != NULL && sscanf(env, "%u,%u,%u", &pad_kib, &kib, &freed) == 3, "ND_ASPAD=pad,kib,freed, got %s",
           env != NULL ? env : "(unset)");
    size_t pad = (size_t)pad_kib << 10, block = (size_t)kib << 10;
    as_malloc = nodal_malloc;
    as_free = nodal_free;
    static void *big[AS_MAX_BLOCKS];
    as_threads th;
    as_threads_start(&th);
    if (pad != 0)
        EXPECT(mmap(NULL, pad, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) != MAP_FAILED,
               "a mapping of %zu KiB", pad >> 10);
    struct rlimit lim = { (rlim_t)AS_LIMIT, (rlim_t)AS_LIMIT };
    EXPECT(setrlimit(RLIMIT_AS, &lim) == 0, "setrlimit(RLIMIT_AS) to work");
    int n = 0;
    while (n < AS_MAX_BLOCKS && (big[n] = as_malloc(block)) != NULL)
        n++;
    if (n > 1 && freed)
        as_free(big[1]);
    as_threads_finish(&th);
    for (int i = 0; i < n; i++)
        if (i != 1 || !freed)
            as_free(big[i]);
    int again = 0;
    while (again < AS_MAX_BLOCKS && (big[again] = as_malloc(block)) != NULL)
        again++;
    printf("%d %d %d %d\n", n, th.idle_ok, th.late_ok, again);
    }

/* The helper above with blocks of `kib` KiB, one freed or none, at pads
   of 0 to 252 KiB in steps of `step` KiB: the pads at which a thread's
   small requests did not all succeed or the blocks did not fit again (but
   the threads' pages: 2). */
static int as_pads_failing(unsigned kib, bool freed, unsigned step)
{
    int failed = 0;
    for (unsigned pad = 0; pad < 256; pad += step) {
        static struct nd_child c;
        char env[96];
        long v[4];
        snprintf(env, sizeof env, "ND_ASPAD=%u,%u,%d", pad, kib, freed ? 1 : 0);
        nd_run_case("emit_freed_large_block_room", NULL, env, 120, &c);
        EXPECT(sscanf(c.out, "%ld %ld %ld %ld", &v[0], &v[1], &v[2], &v[3]) == 4,
               "four counts from the child (pad %u KiB), got \"%s\"", pad, c.out);
        if (pad % 128 == 0)
            printf("note: pad %u KiB, %s: %ld blocks of %u KiB, idle thread %ld, new thread %ld of 1000, %ld "
                   "blocks again once all were freed\n", pad, freed ? "one freed" : "none freed", v[0], kib,
                   v[1], v[2], v[3]);
        bool ok = v[1] == 1000 && v[2] == 1000 && v[3] >= v[0] - 2;
        if (!ok)
            printf("FAILED at pad %u KiB, %u KiB blocks, %s: %ld blocks, idle %ld, new %ld, again %ld\n", pad, kib,
                   freed ? "one freed" : "none freed", v[0], v[1], v[2], v[3]);
        failed += !ok;
    }
    return failed;
}

static void a_freed_large_block_leaves_room_for_a_new_thread_whatever_the_limit_left(void)
{
#ifdef ND_TEST_SANITIZER
    SKIP("a sanitizer reserves terabytes of address space: no limit of 200 MiB can hold");
#endif
    int failed = as_pads_failing(256, true, 4);
    EXPECT(failed == 0, "every 64-byte malloc of an idle and of a new thread to succeed once a 256 KiB block is "
           "freed at the limit, and the blocks to fit again (but the threads' pages: 2), at every pad; %d of 64 "
           "pads failed", failed);
}

/* The same with nothing freed, the limit filled with 256 KiB blocks
   (large) or 128 KiB ones (the largest medium class, on the main thread's
   pages), and with one 128 KiB block freed (it stays in its page), at
   pads in 8 KiB steps: a thread that never had a page gets its small
   blocks from its node's reserve (node.h), as glibc's new threads fall
   back to its main arena. */
static void small_requests_succeed_in_any_thread_when_nothing_was_freed_whatever_the_limit_left(void)
{
#ifdef ND_TEST_SANITIZER
    SKIP("a sanitizer reserves terabytes of address space: no limit of 200 MiB can hold");
#endif
    int none256 = as_pads_failing(256, false, 8), none128 = as_pads_failing(128, false, 8);
    int one128 = as_pads_failing(128, true, 8);
    EXPECT(none256 + none128 + one128 == 0, "every 64-byte malloc of an idle and of a new thread to succeed at "
           "the limit, and the blocks to fit again (but the threads' pages: 2), at every pad; pads failed of 32: "
           "256 KiB blocks, none freed %d; 128 KiB blocks, none freed %d, one freed %d", none256, none128, one128);
}

/* Large blocks that do not fill their last 64 KiB chunk (200,000 and
   300,000 B: 49 and 74 OS pages of 4 and 5 chunks) under a 200 MiB
   limit: once a mapping is refused, the OS pages past each block (past
   its guard page under secure=1) are given back (large.h: tails). The
   helper (ND_ASTAIL="who,bytes", who glibc or nodal) fills the limit with
   blocks of `bytes`, writing each block's whole usable size, then frees
   two of them and asks for 64 MiB (refused: room), grows a block of the middle in place past its
   usable size within its chunks (its tail mapped again), checks and
   writes it whole, frees it and fills the limit again (the chunk that
   held its tail is reused), and checks every block's bytes. It prints
   "n vm0 usable in_place regained intact": the blocks, the address space
   at its start (KiB), the smallest usable size, 1 if the block grew in
   place, the blocks allocated again, 1 if every byte held. */
#define TAIL_MAX 2048

static void emit_large_block_tails(void)
{
    const char *who = getenv("ND_ASTAIL");
    bool glibc = who != NULL && strncmp(who, "glibc,", 6) == 0;
    const char *at = who != NULL ? strchr(who, ',') : NULL;
    EXPECT(at != NULL, "ND_ASTAIL=who,bytes, got %s", who != NULL ? who : "(unset)");
    size_t size = (size_t)strtoul(at + 1, NULL, 10);
    void *(*m)(size_t) = glibc ? malloc : nodal_malloc;
    void *(*re)(void *, size_t) = glibc ? realloc : nodal_realloc;
    void (*fr)(void *) = glibc ? free : nodal_free;
    size_t (*us)(const void *) = glibc ? (size_t (*)(const void *))malloc_usable_size : nodal_usable_size;
    static unsigned char *big[TAIL_MAX];
    static size_t len[TAIL_MAX];
    long vm0 = nd_vm_kib();
    struct rlimit lim = { (rlim_t)AS_LIMIT, (rlim_t)AS_LIMIT };
    EXPECT(setrlimit(RLIMIT_AS, &lim) == 0, "setrlimit(RLIMIT_AS) to work");
    int n = 0;
    size_t usable = SIZE_MAX;
    while (n < TAIL_MAX && (big[n] = m(size)) != NULL) {
        len[n] = us(big[n]);
        usable = len[n] < usable ? len[n] : usable;
        memset(big[n], n & 0xff, len[n]);
        n++;
    }
    int in_place = 0, regained = 0, intact = n > 8;
    if (n > 8) {
        fr(big[0]);
        fr(big[1]);
        big[0] = big[1] = NULL;
        void *no = m((size_t)64 << 20);   /* refused: what was freed gives its address space back */
        intact &= no == NULL;
        int mid = n / 2;
        unsigned char *p = big[mid];
        size_t grow = len[mid] + 8192;   /* within its chunks: 4 or 5 hold 9 or 20 OS pages more */
        unsigned char *q = re(p, grow);
        in_place = q == p;
        if (q != NULL) {
            for (size_t j = 0; j < len[mid]; j++)
                intact &= q[j] == (mid & 0xff);
            big[mid] = q;
            len[mid] = us(q);
            memset(q, mid & 0xff, len[mid]);
        }
        fr(big[mid]);
        big[mid] = NULL;
        for (int i = 0; i < n; i++)
            if (big[i] == NULL && (big[i] = m(size)) != NULL) {
                len[i] = us(big[i]);
                memset(big[i], i & 0xff, len[i]);
                regained++;
            }
        for (int i = 0; i < n; i++)
            for (size_t j = 0; big[i] != NULL && j < len[i]; j += 509)
                intact &= big[i][j] == (i & 0xff) && big[i][len[i] - 1] == (i & 0xff);
    }
    printf("%d %ld %zu %d %d %d\n", n, vm0, usable, in_place, regained, intact);
}

/* The helper under glibc, default nodal and secure=1 at 200,000 and
   300,000 B: nodal fits at least 0.95x what the limit has room for by
   arithmetic (the limit less the address space glibc's process held at
   its start, over the blocks rounded up to whole OS pages: the least a
   block of its own pages takes, glibc's mapping of each of these sizes),
   and every block works after its tail went. */
static void address_space_limit_gives_back_the_unused_ends_of_large_blocks(void)
{
#ifdef ND_TEST_SANITIZER
    SKIP("a sanitizer reserves terabytes of address space: no limit of 200 MiB can hold");
#endif
    static const size_t sizes[] = { 200000, 300000 };
    static const char *const modes[] = { NULL, "secure=1" };
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < 2; i++) {
        static struct nd_child c;
        char env[64];
        long g[6], v[6];
        snprintf(env, sizeof env, "ND_ASTAIL=glibc,%zu", sizes[i]);
        nd_run_case("emit_large_block_tails", NULL, env, 120, &c);
        EXPECT(sscanf(c.out, "%ld %ld %ld %ld %ld %ld", &g[0], &g[1], &g[2], &g[3], &g[4], &g[5]) == 6,
               "six counts from the glibc child, got \"%s\"", c.out);
        size_t block = (sizes[i] + ps - 1) / ps * ps;
        long fits = (long)((AS_LIMIT - (size_t)g[1] * 1024) / block);
        for (int j = 0; j < 2; j++) {
            snprintf(env, sizeof env, "ND_ASTAIL=nodal,%zu", sizes[i]);
            nd_run_case("emit_large_block_tails", modes[j], env, 120, &c);
            EXPECT(sscanf(c.out, "%ld %ld %ld %ld %ld %ld", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) == 6,
                   "six counts from the nodal child, got \"%s\"", c.out);
            const char *mode = modes[j] != NULL ? modes[j] : "default";
            printf("note: %zu B blocks under a 200 MiB RLIMIT_AS, %s: nodal %ld, glibc %ld (%.3fx), room for %ld "
                   "(%.3fx); usable %ld B\n", sizes[i], mode, v[0], g[0], (double)v[0] / (double)g[0], fits,
                   (double)v[0] / (double)fits, v[2]);
            EXPECT(20 * v[0] >= 19 * fits, "nodal (%s) to fit at least 0.95x the %ld blocks of %zu B the limit "
                   "has room for, got %ld", mode, fits, sizes[i], v[0]);
            EXPECT(v[2] >= (long)sizes[i], "a usable size of at least %zu B, got %ld", sizes[i], v[2]);
            EXPECT(v[3] == 1 || (j == 1 && v[3] == 0), "a %zu B block to grow in place by 8 KiB once the limit was "
                   "reached and two blocks freed (%s)", sizes[i], mode);
            EXPECT(v[4] == 3, "the three freed %zu B blocks to be allocated again (%s), %ld were", sizes[i], mode,
                   v[4]);
            EXPECT(v[5] == 1, "every byte of every block's usable size to hold (%s, %zu B)", mode, sizes[i]);
        }
    }
}

/* A helper that must start under an address-space limit, as a batch
   job does: the first time, sets RLIMIT_AS to `bytes` and runs this
   program's case `name` again (ND_ASREEXEC set); the second, returns. */
static void as_reexec_under_limit(rlim_t bytes, const char *name)
{
    if (getenv("ND_ASREEXEC") != NULL)
        return;
    static char self[4096];
    ssize_t got = readlink("/proc/self/exe", self, sizeof self - 1);
    EXPECT(got > 0, "/proc/self/exe to name this program");
    self[got] = '\0';
    struct rlimit lim = { bytes, bytes };
    EXPECT(setrlimit(RLIMIT_AS, &lim) == 0, "setrlimit(RLIMIT_AS) to work");
    EXPECT(setenv("ND_ASREEXEC", "1", 1) == 0, "setenv to work");
    char *argv[] = { self, (char *)name, NULL };
    execv(self, argv);
    EXPECT(0, "execv of %s to work (errno %d)", self, errno);
}

/* secure=1 in a process that starts under an address-space limit (a
   batch job's ulimit -v): its first large block is already tight (large.h:
   its usable size the request rounded up to the OS page, not its whole
   run less the guard page), so its unused end can go back once the limit
   is reached. The helper sets a 64 GiB limit and runs itself again, which
   prints the usable size of its first 200,000 B block. */
static void emit_first_large_block_under_a_limit(void)
{
    as_reexec_under_limit((rlim_t)64 << 30, "emit_first_large_block_under_a_limit");
    void *p = nodal_malloc(200000);
    printf("%zu\n", p != NULL ? nodal_usable_size(p) : (size_t)0);
    nodal_free(p);
}

static void secure_large_blocks_are_tight_from_the_start_under_a_limit(void)
{
#ifdef ND_TEST_SANITIZER
    SKIP("a sanitizer reserves terabytes of address space: no limit of 64 GiB can hold");
#endif
    static struct nd_child c;
    nd_run_case("emit_first_large_block_under_a_limit", "secure=1", NULL, 60, &c);
    size_t ps = (size_t)sysconf(_SC_PAGESIZE), usable = 0;
    EXPECT(sscanf(c.out, "%zu", &usable) == 1, "a usable size from the child, got \"%s\"", c.out);
    EXPECT(usable == (200000 + ps - 1) / ps * ps, "the first 200,000 B block of a secure=1 process started "
           "under a 64 GiB RLIMIT_AS to have a usable size of %zu B (the request in whole OS pages), got %zu",
           (200000 + ps - 1) / ps * ps, usable);
}

/* The helper runs itself again under the RLIMIT_AS that ND_ASUSE gives
   ("MiB,bytes"), as a batch job starts, and prints the usable size of the
   second of two mallocs of that many bytes and its address space then
   (KiB). */
static void emit_usable_size_under_a_limit(void)
{
    const char *use = getenv("ND_ASUSE");
    EXPECT(use != NULL, "ND_ASUSE to say MiB,bytes");
    size_t mib = (size_t)strtoul(use, NULL, 10), bytes = (size_t)strtoul(strchr(use, ',') + 1, NULL, 10);
    as_reexec_under_limit((rlim_t)mib << 20, "emit_usable_size_under_a_limit");
    /* Four huge blocks first: the process's size is read again as nodal's
       mappings grow by a 64th of the limit (os.c), 2 MiB of 128 MiB. */
    void *huge[4];
    for (int i = 0; i < 4; i++)
        huge[i] = nodal_malloc(MiB);
    void *first = nodal_malloc(bytes), *p = nodal_malloc(bytes);   /* (the first of a size is no cell: tight.h) */
    printf("%zu %ld\n", p != NULL ? nodal_usable_size(p) : (size_t)0, nd_vm_kib());
    nodal_free(p);
    nodal_free(first);
    for (int i = 0; i < 4; i++)
        nodal_free(huge[i]);
}

/* The helper runs itself again under an RLIMIT_AS of 128 MiB (as
   emit_usable_size_under_a_limit), takes 4 MiB of huge blocks to pass the
   mark (os.h: nd_os_space_tight), then one block of 32,769 B and 80
   more (tight cells, tight.h: slabs of 2, 4, 8 ... cells), each filled
   with its own byte; another
   thread frees every second one, 40 more are taken, and every kept block
   must still hold its bytes, every block the same usable size, and a
   realloc within it stay in place. It prints "ok USABLE", then makes the
   misuse ND_TIGHTCELLS names (none, "double", "interior", "overflow":
   one byte past the usable size, secure=1's canary). */
#define TIGHT_N 80
static unsigned char *tight_blocks[TIGHT_N];

static void *tight_free_odd(void *arg)
{
    (void)arg;
    for (int i = 1; i < TIGHT_N; i += 2)
        nodal_free(tight_blocks[i]);
    return NULL;
}

static void emit_tight_cells_under_a_limit(void)
{
    const char *misuse = getenv("ND_TIGHTCELLS");
    as_reexec_under_limit((rlim_t)128 << 20, "emit_tight_cells_under_a_limit");
    void *huge[4];
    for (int i = 0; i < 4; i++)
        huge[i] = nodal_malloc(MiB);
    const size_t bytes = 32769;
    void *first = nodal_malloc(bytes);   /* the first of a size is no cell (tight.h) */
    for (int i = 0; i < TIGHT_N; i++) {
        tight_blocks[i] = nodal_malloc(bytes);
        EXPECT(tight_blocks[i] != NULL, "block %d of %zu B under the limit", i, bytes);
        memset(tight_blocks[i], i, bytes);
    }
    size_t usable = nodal_usable_size(tight_blocks[0]);
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, tight_free_odd, NULL) == 0, "a thread to start");
    pthread_join(t, NULL);
    for (int i = 1; i < TIGHT_N; i += 2) {
        tight_blocks[i] = nodal_malloc(bytes);
        EXPECT(tight_blocks[i] != NULL, "block %d of %zu B again", i, bytes);
        memset(tight_blocks[i], i, bytes);
    }
    for (int i = 0; i < TIGHT_N; i++) {
        EXPECT(nodal_usable_size(tight_blocks[i]) == usable, "every block of %zu B to have a usable size of %zu, "
               "block %d has %zu", bytes, usable, i, nodal_usable_size(tight_blocks[i]));
        for (size_t j = 0; j < bytes; j += 509)
            EXPECT(tight_blocks[i][j] == (unsigned char)i, "block %d to keep its bytes (byte %zu)", i, j);
    }
    EXPECT(nodal_realloc(tight_blocks[0], bytes - 100) == tight_blocks[0], "a realloc within the block to keep it "
           "in place");
    printf("ok %zu\n", usable);
    fflush(stdout);
    if (misuse != NULL && strcmp(misuse, "double") == 0) {
        nodal_free(tight_blocks[2]);
        nodal_free(tight_blocks[2]);
    } else if (misuse != NULL && strcmp(misuse, "interior") == 0) {
        nodal_free(tight_blocks[2] + 256);
    } else if (misuse != NULL && strcmp(misuse, "overflow") == 0) {
        tight_blocks[2][usable] ^= 1;
        nodal_free(tight_blocks[2]);
    }
    for (int i = 0; i < TIGHT_N; i++)
        nodal_free(tight_blocks[i]);
    nodal_free(first);
    for (int i = 0; i < 4; i++)
        nodal_free(huge[i]);
}

/* Near an address-space limit, cells of tight slabs (tight.h) are blocks
   like any other: 32,769 B takes 33,024 bytes (secure=1: its canary word
   included, 33,016 usable), blocks keep their bytes while others are
   freed by another thread and taken again, realloc within one stays in
   place, and a second free, a free of a pointer inside one, and under
   secure=1 a write past its usable bytes abort with nodal's usual line. */
static void tight_cells_near_an_address_space_limit_are_checked_blocks(void)
{
#ifdef ND_TEST_SANITIZER
    SKIP("a sanitizer reserves terabytes of address space: no limit of 128 MiB can hold");
#endif
    static const struct { const char *opts, *misuse, *line; } runs[] = {
        { NULL, NULL, NULL }, { "secure=1", NULL, NULL },
        { NULL, "double", "free(): double free: " },
        { NULL, "interior", "free(): invalid pointer (not the start of a block): " },
        { "secure=1", "double", "free(): double free: " },
        { "secure=1", "overflow", "free(): heap overflow past the end of the block: " },
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        static struct nd_child c;
        static char self[4096];
        char env[64];
        ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
        EXPECT(len > 0, "/proc/self/exe to name this program");
        self[len] = '\0';
        char *argv[] = { self, (char *)"emit_tight_cells_under_a_limit", NULL };
        snprintf(env, sizeof env, "ND_TIGHTCELLS=%s", runs[i].misuse != NULL ? runs[i].misuse : "none");
        nd_run_exec(argv, runs[i].opts, env, 60, &c);
        const char *mode = runs[i].opts != NULL ? runs[i].opts : "default";
        size_t usable = 0, want = runs[i].opts != NULL ? 33016 : 33024;
        EXPECT(sscanf(c.out, "ok %zu", &usable) == 1 && usable == want, "the child (%s) to print \"ok %zu\", got "
               "\"%s\"; it %s; stderr: %s", mode, want, c.out, nd_describe_status(c.status), c.err);
        if (runs[i].misuse == NULL) {
            EXPECT(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0, "the child (%s) to exit 0; it %s; stderr: %s",
                   mode, nd_describe_status(c.status), c.err);
            continue;
        }
        EXPECT(WIFSIGNALED(c.status) && WTERMSIG(c.status) == SIGABRT, "a %s of a tight cell (%s) to abort; the "
               "child %s; stderr: %s", runs[i].misuse, mode, nd_describe_status(c.status), c.err);
        EXPECT(strstr(c.err, runs[i].line) != NULL && nd_count_lines_with(c.err, "nodal") == 1, "a %s of a tight "
               "cell (%s) to print one line of nodal's with \"%s\", got: %s", runs[i].misuse, mode, runs[i].line,
               c.err);
    }
}

/* A process far from its address-space limit (64 GiB) gets a medium
   request's class (100,000 B: 112 KiB, the thread cache's block); one
   that holds a sixteenth of its limit (128 MiB: 8 MiB), for a size asked
   for the second time in a row, the request rounded up to 256 bytes, a
   cell of a tight slab (tight.h; route.c: nd_route_cell). A request that its class fits within 4 % of its cell
   (112,000 B in 112 KiB) keeps its class near the limit too. */
static void a_medium_request_takes_a_tight_cell_only_near_an_address_space_limit(void)
{
#ifdef ND_TEST_SANITIZER
    SKIP("a sanitizer reserves terabytes of address space: no limit of 64 GiB can hold");
#endif
    static const struct { const char *use; size_t bytes; bool near; } runs[] = {
        { "65536,100000", 100000, false }, { "128,100000", 100000, true }, { "128,112000", 112000, false },
    };
    for (int i = 0; i < 3; i++) {
        static struct nd_child c;
        char env[64];
        size_t usable = 0;
        long vm = 0;
        snprintf(env, sizeof env, "ND_ASUSE=%s", runs[i].use);
        nd_run_case("emit_usable_size_under_a_limit", NULL, env, 60, &c);
        EXPECT(sscanf(c.out, "%zu %ld", &usable, &vm) == 2, "a usable size and a size from the child, got \"%s\"",
               c.out);
        size_t want = runs[i].near ? (runs[i].bytes + 255) / 256 * 256 : 112 << 10;
        printf("note: RLIMIT_AS,malloc %s: usable %zu B, the process held %ld KiB\n", runs[i].use, usable, vm);
        EXPECT(usable == want, "malloc(%zu) under an RLIMIT_AS of %zu MiB to have a usable size of %zu B (%s), "
               "got %zu", runs[i].bytes, (size_t)strtoul(runs[i].use, NULL, 10), want,
               runs[i].near ? "rounded up to 256 B" : "its class", usable);
    }
}

/* Address space far beyond 256 GiB: blocks of 64 MiB, never touched, up
   to 1 TiB (4x what a segment map of 2^16 windows could hold), as many as
   glibc's malloc gets in the same process (its count first, every block
   freed), and all of them where the kernel overcommits (vm.overcommit_memory 0 or 1: untouched memory is only
   address space). Every block is nodal's (its usable size says so), small
   blocks still come in a thread started then, and freeing them all gives
   the address space back. */
#define FAR_BLOCK ((size_t)64 << 20)
#define FAR_MAX   16384   /* 1 TiB of 64 MiB blocks */

static void *far_small_thread(void *arg)
{
    int *ok = arg;
    for (int i = 0; i < 1000; i++) {
        char *p = nodal_malloc(64);
        if (p != NULL) {
            memset(p, 5, 64);
            nodal_free(p);
            (*ok)++;
        }
    }
    return NULL;
}

static void address_space_far_beyond_256_gib_is_nodals(void)
{
#ifdef ND_TEST_SANITIZER
    SKIP("a sanitizer's allocator and shadow memory decide how much address space a process gets");
#endif
    struct rlimit lim;
    if (getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY)
        SKIP("an address-space limit (ulimit -v) is set: %llu bytes", (unsigned long long)lim.rlim_cur);
    char mode[16] = "";
    FILE *f = fopen("/proc/sys/vm/overcommit_memory", "r");
    if (f != NULL) {
        if (fgets(mode, sizeof mode, f) == NULL)
            mode[0] = '\0';
        fclose(f);
    }
    bool overcommits = mode[0] == '0' || mode[0] == '1';
    static void *blocks[FAR_MAX];
    int glibc_n = 0;
    while (glibc_n < FAR_MAX && (blocks[glibc_n] = malloc(FAR_BLOCK)) != NULL)
        glibc_n++;
    for (int i = 0; i < glibc_n; i++)
        free(blocks[i]);
    long vm0 = nd_vm_kib();
    int n = 0;
    while (n < FAR_MAX && (blocks[n] = nodal_malloc(FAR_BLOCK)) != NULL)
        n++;
    long vm1 = nd_vm_kib();
    printf("note: 64 MiB blocks (untouched), at most %d: nodal %d (%.2f TiB), glibc %d; vm.overcommit_memory %c; "
           "VmSize %.2f TiB with them\n", FAR_MAX, n, (double)n * FAR_BLOCK / (double)((size_t)1 << 40), glibc_n,
           mode[0] ? mode[0] : '?', (double)vm1 / (double)((size_t)1 << 30));
    EXPECT(20 * (long)n >= 19 * (long)glibc_n, "nodal to get at least 0.95x glibc's %d blocks of 64 MiB, got %d",
           glibc_n, n);
    if (overcommits)
        EXPECT(n == FAR_MAX, "1 TiB of 64 MiB blocks where the kernel overcommits, got %d blocks", n);
    size_t below = SIZE_MAX, above = 0;
    for (int i = 0; i < n; i++) {
        below = (uintptr_t)blocks[i] < below ? (uintptr_t)blocks[i] : below;
        above = (uintptr_t)blocks[i] > above ? (uintptr_t)blocks[i] : above;
        if (i % 97 == 0 || i == n - 1)
            EXPECT(nodal_malloc_usable_size(blocks[i]) >= FAR_BLOCK, "block %d (%p) to be nodal's, of 64 MiB or more",
                   i, blocks[i]);
    }
    if (n > 0)
        printf("note: the blocks span %.2f TiB of addresses\n", (double)(above - below) / (double)((size_t)1 << 40));
    int late_ok = 0;
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, far_small_thread, &late_ok) == 0, "a thread to start");
    pthread_join(t, NULL);
    EXPECT(late_ok == 1000, "every 64-byte malloc of a thread started then to succeed, %d of 1000 did", late_ok);
    for (int i = 0; i < n; i++)
        nodal_free(blocks[i]);
    nodal_collect(1);
    long vm2 = nd_vm_kib();
    EXPECT(vm2 < vm0 + 64 * 1024, "the address space to be given back (VmSize %ld KiB, %ld before the blocks)", vm2,
           vm0);
}

static const struct nd_case cases[] = {
    ND_CASE(huge_blocks_in_a_loop_reuse_their_mapping),
    ND_CASE(calloc_of_a_reused_huge_mapping_is_zero),
    ND_CASE(freed_huge_mappings_are_bounded_and_drained),
    ND_CASE(no_huge_mapping_is_kept_when_purge_delay_is_0),
    ND_CASE(huge_mappings_in_use_stay_past_purge_delay),
    ND_CASE(large_blocks_share_segments),
    ND_CASE(a_freed_one_page_block_is_kept_for_the_next_one),
    ND_CASE(a_freed_large_block_waits_in_its_cpus_cache_for_the_next_one),
    ND_CASE(a_freed_1_mib_block_serves_the_next_smaller_large_blocks),
    ND_CASE(a_cpus_cache_of_large_blocks_is_given_back_after_a_purge_delay_unused),
    ND_CASE(no_large_block_is_cached_when_purge_delay_is_0),
    ND_CASE(emit_large_cached_after_free_with_no_delay),
    ND_CASE(realloc_resizes_a_large_block_in_place),
    ND_CASE(realloc_growth_keeps_contents_and_grows_in_place_past_16_kib),
    ND_CASE(a_thread_started_after_another_exited_takes_over_its_caches),
    ND_CASE(a_pooled_thread_record_is_taken_apart_after_ten_purge_delays),
    ND_CASE(a_chain_of_short_threads_purges_what_its_record_freed),
    ND_CASE(sixteen_threads_with_a_few_small_requests_each_cost_little_memory),
    ND_CASE(the_nursery_keeps_no_page_once_its_threads_gave_their_blocks_back),
    ND_CASE(address_space_limit_leaves_small_allocations_working),
    ND_CASE(address_space_limit_fits_256_and_512_kib_blocks),
    ND_CASE(address_space_limit_after_16_kib_blocks_leaves_small_requests_working),
    ND_CASE(address_space_limit_gives_back_the_unused_ends_of_medium_pages),
    ND_CASE(address_space_limit_fits_sizes_between_classes),
    ND_CASE(address_space_limit_fits_sizes_just_past_a_page_and_secure_class_sizes),
    ND_CASE(tight_cells_near_an_address_space_limit_are_checked_blocks),
    ND_CASE(address_space_limit_gives_large_blocks_the_free_pages_of_small_segments),
    ND_CASE(address_space_limit_gives_back_the_unused_ends_of_large_blocks),
    ND_CASE(secure_large_blocks_are_tight_from_the_start_under_a_limit),
    ND_CASE(address_space_far_beyond_256_gib_is_nodals),
    ND_CASE(a_freed_large_block_leaves_room_for_a_new_thread_whatever_the_limit_left),
    ND_CASE(small_requests_succeed_in_any_thread_when_nothing_was_freed_whatever_the_limit_left),
    ND_CASE(emit_cached_after_free_with_no_delay),
    ND_CASE(emit_address_space_limit),
    ND_CASE(emit_tight_cells_under_a_limit),
    ND_CASE(emit_large_blocks_after_freed_small_ones),
    ND_CASE(emit_freed_large_block_room),
    ND_CASE(emit_large_block_tails),
    ND_CASE(emit_first_large_block_under_a_limit),
    ND_CASE(emit_usable_size_under_a_limit),
    ND_CASE(a_medium_request_takes_a_tight_cell_only_near_an_address_space_limit),
};
ND_MAIN(cases)
