/*
 * heap_invariants.c - unit tests of the heap and page invariants under
 * random workloads: after every batch of operations nd_heap_is_valid() must
 * hold for the thread's heaps (the core is built with ND_DEBUG=2, so fills
 * and flushes check it too), blocks must come back intact, and remote frees
 * must return to their owner's pages.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <link.h>
#include <sched.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <string.h>
#include "alloc.h"
#include "heap.h"
#include "huge.h"
#include "large.h"
#include "node.h"
#include "page.h"
#include "check.h"
#include "stats_total.h"
#include "proc.h"
#include "thread.h"
#include "segment.h"
#include "topo.h"
#include "options.h"
#include "xfer.h"

#define MiB_ ((size_t)1 << 20)

static size_t random_size(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t r = *x >> 33;
    switch (r % 8) {
    case 0: return r % 17;
    case 1: case 2: case 3: return 16 + r % 1024;
    case 4: case 5: return 1024 + r % (32 << 10);
    case 6: return (32 << 10) + r % (256 << 10);
    default: return (r & 0x3f00) == 0 ? (4 << 20) + r % (4 << 20)   /* now and then huge */
                                      : (256 << 10) + r % (2 << 20);
    }
}

static void random_operations_keep_the_heap_valid(void)
{
    enum { N = 2048 };
    static void *p[N];
    static size_t sz[N];
    uint64_t x = nd_test_seed();
    for (int round = 0; round < 10; round++) {
        for (int i = 0; i < 4000; i++) {
            size_t k = (size_t)(x >> 40) % N;
            x = x * 6364136223846793005ull + 1;
            if (p[k]) {
                for (size_t j = 0; j < sz[k]; j += 4096)
                    EXPECT(((unsigned char *)p[k])[j] == (unsigned char)(k + j), "block %zu byte %zu intact", k, j);
                nodal_free(p[k]);
                p[k] = NULL;
            } else {
                sz[k] = random_size(&x);
                p[k] = nodal_malloc(sz[k]);
                EXPECT(p[k] != NULL, "malloc(%zu) to succeed", sz[k]);
                for (size_t j = 0; j < sz[k]; j += 4096)
                    ((unsigned char *)p[k])[j] = (unsigned char)(k + j);
            }
        }
        EXPECT(nd_thread_is_valid(), "the heap invariants to hold after round %d", round);
    }
    for (int k = 0; k < N; k++)
        nodal_free(p[k]), p[k] = NULL;
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after freeing everything");
}

/* What a thread that moves to another node does to its plain heap
   (follow_thread; thread.c): its cache flushed, its heap handed back to its
   node (nd_heap_leave). The host has one node, so the heap "moves" to the
   node it is on: the same steps. The blocks still out stay intact and can
   be freed (into the abandoned segments, which this thread then adopts),
   and the heap serves and stays valid. */
static void a_heap_that_leaves_its_node_keeps_every_block_usable(void)
{
    enum { N = 4096 };
    static void *p[N];
    static size_t sz[N];
    uint64_t x = nd_test_seed();
    for (int i = 0; i < N; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        sz[i] = 1 + (size_t)(x >> 40) % (64 << 10);
        p[i] = nodal_malloc(sz[i]);
        EXPECT(p[i] != NULL, "malloc(%zu) to succeed", sz[i]);
        memset(p[i], (unsigned char)i, sz[i]);
    }
    for (int i = 0; i < N; i += 2)
        nodal_free(p[i]), p[i] = NULL;
    nd_tcache *tc = nd_tls_tc;
    nd_tcache_flush_all(tc);
    size_t pages = nd_heap_leave(&tc->heap, tc->heap.node);
    EXPECT(pages > 0, "the heap to hand back the pages of its segments (%zu)", pages);
    EXPECT(tc->heap.avail[0].count == 0 && tc->heap.used[0].count == 0 && tc->heap.avail[1].count == 0 &&
           tc->heap.used[1].count == 0, "the heap to own no segment after leaving");
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after leaving");
    for (int i = 1; i < N; i += 2) {
        for (size_t j = 0; j < sz[i]; j += 997)
            EXPECT(((unsigned char *)p[i])[j] == (unsigned char)i, "block %d byte %zu intact", i, j);
        nodal_free(p[i]), p[i] = NULL;
    }
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after freeing the blocks left behind");
    for (int i = 0; i < N; i++) {
        p[i] = nodal_malloc(sz[i]);
        EXPECT(p[i] != NULL, "malloc(%zu) after leaving to succeed", sz[i]);
        memset(p[i], 1, sz[i]);
    }
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold when it serves again");
    for (int i = 0; i < N; i++)
        nodal_free(p[i]), p[i] = NULL;
}

/* Resident OS pages of [p, p+len) (mincore). */
static size_t resident_pages(const void *p, size_t len)
{
    size_t ps = (size_t)sysconf(_SC_PAGESIZE), n = (len + ps - 1) / ps, in = 0;
    unsigned char *v = malloc(n);
    EXPECT(v != NULL && mincore((void *)p, len, v) == 0, "mincore over %zu bytes to work", len);
    for (size_t i = 0; i < n; i++)
        in += v[i] & 1;
    free(v);
    return in;
}

/* Resident OS pages of page pg's area in its segment. */
static size_t page_resident(const nd_page *pg)
{
    nd_segment *s = nd_seg_base(pg);
    size_t area;
    uint8_t *start = nd_seg_page_area(s, nd_seg_page_index(s, pg), &area);
    return resident_pages(start, area);
}

/* A free page of s whose chunks nodal never committed, or -1. */
static int uncommitted_free_page(nd_segment *s, uint8_t **start, size_t *area)
{
    for (unsigned i = 1; i < s->page_count; i++) {
        if (!(s->free_mask >> i & 1))
            continue;
        *start = nd_seg_page_area(s, i, area);
        if ((nd_seg_chunks(s, *start, *area) & s->committed) == 0)
            return (int)i;
    }
    return -1;
}

/* A thread that leaves its node leaves no memory in the free pages it
   hands back, also where nodal never committed it: with transparent huge
   pages the kernel faults in a whole 2 MiB around the first byte touched
   (or migrates it whole to another node), so pages nodal has not handed
   out yet can hold memory of another node than their segment's. Here a
   write stands in for the kernel's fault-around, in a segment that keeps
   a block (abandoned) and in one left with none (back to the node's
   cache); after nd_heap_leave neither page is resident (mincore). */
static void a_heap_that_leaves_its_node_leaves_no_memory_in_its_free_pages(void)
{
    enum { N = 64 };
    void *small[N], *medium[N];
    for (int i = 0; i < N; i++) {
        small[i] = nodal_malloc(256);
        medium[i] = nodal_malloc(40 << 10);
        EXPECT(small[i] != NULL && medium[i] != NULL, "malloc to succeed");
        memset(small[i], 1, 256);
        memset(medium[i], 1, 40 << 10);
    }
    nd_segment *kept = nd_seg_base(small[0]), *left = nd_seg_base(medium[0]);
    EXPECT(kept != left && kept->owner == &nd_tls_tc->heap && left->owner == &nd_tls_tc->heap,
           "the small and medium blocks to be in two segments of the thread's heap (%p %p, owners %p %p, heap %p)",
           (void *)kept, (void *)left, (void *)kept->owner, (void *)left->owner, (void *)&nd_tls_tc->heap);
    uint8_t *kp, *lp;
    size_t karea, larea;
    EXPECT(uncommitted_free_page(kept, &kp, &karea) >= 0 && uncommitted_free_page(left, &lp, &larea) >= 0,
           "both segments to have a free page nodal never committed");
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    kp[0] = 1, kp[karea - ps] = 1;   /* faulted in, as a huge page around a neighbour would be */
    lp[0] = 1;
    EXPECT(resident_pages(kp, karea) >= 2 && resident_pages(lp, larea) >= 1, "the writes to fault pages in");
    for (int i = 1; i < N; i++)
        nodal_free(small[i]);
    for (int i = 0; i < N; i++)
        nodal_free(medium[i]);
    nd_tcache *tc = nd_tls_tc;
    nd_tcache_flush_all(tc);
    nd_heap_leave(&tc->heap, tc->heap.node);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after leaving");
    EXPECT(resident_pages(kp, karea) == 0, "the abandoned segment's free page to hold no memory after the leave, "
           "got %zu resident OS pages", resident_pages(kp, karea));
    EXPECT(resident_pages(lp, larea) == 0, "the released segment's free page to hold no memory after the leave, "
           "got %zu resident OS pages", resident_pages(lp, larea));
    nodal_free(small[0]);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after the kept block is freed");
}

/* A thread cache gives a bin its slots when the thread first uses its
   class (tcache.h): a thread that allocates one size and frees blocks of
   another that a second thread allocated holds slots for those two classes
   only, and the cache is valid throughout. */
static void *use_two_classes(void *arg)
{
    void **theirs = arg;
    nd_tcache *tc = nd_thread_start();
    EXPECT(tc != NULL, "the thread to start");
    unsigned mine = nd_class_of(64), other = nd_class_of(3000);
    size_t active = 0;
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++)
        active += tc->bins[c].empty != NULL;
    EXPECT(tc->bins[mine].empty == NULL && nd_bin_info_of(tc, mine)->cap == 0,
           "a class not used yet to have no slots (cap %u)", nd_bin_info_of(tc, mine)->cap);
    void *p = nodal_malloc(64);
    EXPECT(p != NULL && tc->bins[mine].empty != NULL && nd_bin_info_of(tc, mine)->cap > 0,
           "the first malloc of a class to give its bin slots (cap %u)", nd_bin_info_of(tc, mine)->cap);
    EXPECT(tc->bins[other].empty == NULL, "a class this thread has not used to have none");
    for (int i = 0; i < 2; i++)
        nodal_free(theirs[i]);   /* another thread's blocks: into this thread's cache (it starts at 2) */
    EXPECT(tc->bins[other].empty != NULL && tc->bins[other].empty - tc->bins[other].cur == 2,
           "the first free of a class to give its bin slots, holding the 2 blocks (%td)",
           tc->bins[other].empty - tc->bins[other].cur);
    size_t now = 0;
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++)
        now += tc->bins[c].empty != NULL;
    EXPECT(now == active + 2, "exactly two more bins with slots (%zu, before %zu)", now, active);
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    nodal_free(p);
    return NULL;
}

static void a_cache_gives_slots_only_to_the_classes_a_thread_uses(void)
{
    void *theirs[8];
    for (int i = 0; i < 8; i++)
        theirs[i] = nodal_malloc(3000);
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, use_two_classes, theirs) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    for (int i = 2; i < 8; i++)
        nodal_free(theirs[i]);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after the thread exited");
}

/* A new thread that makes a request of each class of 16 to 160 B and one
   of 512 B (as bench/threadcost's threads do: their 64 requests of 16-160
   B and the array of their pointers) writes 1 page of its cache: the
   struct's first (the bins, the cache's fields, the near records with the
   cold parts and first rooms of the 11 classes it used, and the heap's
   first line, tcache.h). Not the struct's other pages (the heap's page
   queues, the cold parts of the classes it never used, the other
   counters, the tier calls' and prof=1's cold tail), nor any slot after
   the struct. On main 4c6e842 it wrote 2: the struct's first 2 (the bins,
   the heap's head, a first area of 16 slots a class below 1 KiB, and the
   cold parts of classes 0-18 by class); on main 882520c 3, on main
   55f8196 5, on main 1378f24 4. */
static void *use_the_classes_up_to_160_bytes(void *arg)
{
    (void)arg;
    nd_tcache *tc = nd_thread_start();
    EXPECT(tc != NULL && tc->fill_from_one, "the thread to start, served by the nursery (not the process's first)");
    void *p[11];
    for (int i = 0; i < 11; i++) {
        size_t size = i < 10 ? 16 * (size_t)(i + 1) : 512;
        p[i] = nodal_malloc(size);
        EXPECT(p[i] != NULL, "malloc(%zu) to succeed", size);
        memset(p[i], 1, size);
    }
    size_t n = nd_written_pages(tc, ND_TC_HEAD_BYTES + tc->slot_bytes);
    EXPECT(n <= 1, "a thread using the classes of 16-160 B and 512 B to write at most 1 page of its cache, it wrote %zu", n);
    EXPECT(n >= 1, "the count to see the page the thread wrote (%zu)", n);
    n = nd_written_pages((char *)tc + 4096, ND_TC_HEAD_BYTES - 4096);
    EXPECT(n == 0, "the struct's pages past its first (the heap's page queues, the cold parts and counters of the classes "
           "it never used, the cold tail) to stay unwritten, %zu were written", n);
    const nd_class_counters *tail = nd_heap_cstats(&tc->heap, ND_CLASS_COUNT - 1);
    n = nd_written_pages(tail, sizeof *tail);
    EXPECT(n == 0, "the page of the counters of the largest classes, which it never used, to stay unwritten (%zu)", n);
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    for (int i = 0; i < 11; i++)
        nodal_free(p[i]);
    return NULL;
}

/* The first ND_NEAR_BINS (11) classes a thread uses, whichever they are,
   have their cold parts on its cache's first page (tcache.h: near
   records), in the order it first used them, by request or by free; the
   classes it uses after them have theirs in binfo, past that page. Each
   class counts its requests exactly (nreq + armed - tick), wherever its
   cold part is. On main 4c6e842 the cold part of class c was binfo[c], on
   the struct's second page for the classes below 1 KiB and its third for
   the others, whatever the thread used. */
static void *use_fourteen_classes(void *arg)
{
    void *theirs = arg;
    nd_tcache *tc = nd_thread_start();
    EXPECT(tc != NULL, "the thread to start");
    static const size_t sizes[14] = { 4096, 8192, 24, 1000, 300, 16384, 2048, 64, 700, 6000, 200, 3000, 100, 40 };
    void *p[14][3];
    nodal_free(theirs);   /* the class of 5 KiB: its first use a free */
    for (int i = 0; i < 14; i++)
        for (int j = 0; j < 3; j++)
            EXPECT((p[i][j] = nodal_malloc(sizes[i])) != NULL, "malloc(%zu) to succeed", sizes[i]);
    unsigned free_first = nd_class_of(5000);
    EXPECT(tc->near_of[free_first] == 1, "the class first used by a free to have the first near record (%u)",
           tc->near_of[free_first]);
    for (int i = 0; i < 14; i++) {
        unsigned c = nd_class_of(sizes[i]);
        const char *bi = (const char *)nd_bin_info_of(tc, c);
        if (i < (int)ND_NEAR_BINS - 1) {
            EXPECT(tc->near_of[c] == (unsigned)i + 2 && bi + sizeof(nd_bin_info) <= (const char *)tc + 4096,
                   "the class of %zu B, the %d-th the thread used, to have its cold part on the cache's first page "
                   "(near record %u, at byte %td)", sizes[i], i + 2, tc->near_of[c], bi - (const char *)tc);
        } else {
            EXPECT(tc->near_of[c] == 0 && bi == (const char *)&tc->binfo[c] && bi >= (const char *)tc + 4096,
                   "the class of %zu B, used after the first %u, to have its cold part in binfo (near record %u)", sizes[i],
                   ND_NEAR_BINS, tc->near_of[c]);
        }
        const nd_bin_info *info = nd_bin_info_of(tc, c);
        uint64_t counted = info->nreq + info->armed - (uint64_t)tc->bins[c].tick;
        EXPECT(counted == 3, "the class of %zu B to have counted its 3 requests, got %llu", sizes[i],
               (unsigned long long)counted);
    }
    EXPECT(tc->near_used == ND_NEAR_BINS, "every near record given (%u)", tc->near_used);
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    for (int i = 0; i < 14; i++)
        for (int j = 0; j < 3; j++)
            nodal_free(p[i][j]);
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold after the frees");
    return NULL;
}

/* Runs fn(arg) in a thread of its own, then checks this thread's heaps. */
static void run_in_a_thread_with(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, fn, arg) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after the thread exited");
}
static void run_in_a_thread(void *(*fn)(void *)) { run_in_a_thread_with(fn, NULL); }

static void a_threads_first_classes_have_their_cold_parts_on_its_caches_first_page(void)
{
    void *p = nodal_malloc(5000);
    EXPECT(p != NULL, "malloc(5000) to succeed");
    run_in_a_thread_with(use_fourteen_classes, p);
}

static void a_thread_using_a_few_small_classes_writes_a_few_pages_of_its_cache(void)
{
    ND_SKIP_UNLESS_READS_MAP_THE_ZERO_PAGE();
    nodal_free(nodal_malloc(16));   /* the process's first thread is this one: the next takes its blocks from the nursery */
    run_in_a_thread(use_the_classes_up_to_160_bytes);
}

/* A bin's cold part and tick are set up at its class's first use
   (tcache.c: nd_bin_info_init), a request or a free: a class a thread
   never used has both zero; a free into it arms its tick for one request,
   and its requests are counted exactly from there (nreq + armed - tick),
   across the roll-overs of its tick. */
static void *free_first_then_count(void *arg)
{
    void *theirs = arg;
    nd_tcache *tc = nd_thread_start();
    EXPECT(tc != NULL, "the thread to start");
    unsigned c = nd_class_of(256);
    EXPECT(nd_bin_info_of(tc, c)->period_left == 0 && nd_bin_info_of(tc, c)->armed == 0 && tc->bins[c].tick == 0 &&
           tc->bins[c].empty == NULL, "a class never used to have its cold part and tick zero (period_left %u, tick %lld)",
           nd_bin_info_of(tc, c)->period_left, (long long)tc->bins[c].tick);
    nodal_free(theirs);   /* its first use: a free */
    EXPECT(tc->bins[c].tick == 1 && nd_bin_info_of(tc, c)->armed == 1 && nd_bin_info_of(tc, c)->period_left == ND_TICK_PERIOD &&
           tc->bins[c].empty - tc->bins[c].cur == 1,
           "a free to set the bin up, armed for one request (tick %lld, armed %u)", (long long)tc->bins[c].tick,
           nd_bin_info_of(tc, c)->armed);
    const uint64_t n = 3 * ND_TICK_PERIOD + 7;
    for (uint64_t i = 0; i < n; i++)
        nodal_free(nodal_malloc(250));   /* (the class of 256 B) */
    uint64_t counted = nd_bin_info_of(tc, c)->nreq + nd_bin_info_of(tc, c)->armed - (uint64_t)tc->bins[c].tick;
    EXPECT(counted == n, "%llu requests of the class to be counted, got %llu", (unsigned long long)n,
           (unsigned long long)counted);
    unsigned other = nd_class_of(640);
    EXPECT(nd_bin_info_of(tc, other)->period_left == 0 && tc->bins[other].tick == 0,
           "a class still never used to have its cold part zero (period_left %u)", nd_bin_info_of(tc, other)->period_left);
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    return NULL;
}

static void a_classes_cold_part_is_set_up_at_its_first_use_and_counts_exactly(void)
{
    void *p = nodal_malloc(256);
    EXPECT(p != NULL, "malloc(256) to succeed");
    run_in_a_thread_with(free_first_then_count, p);
}

/* A bin fills its room from the top (its sentinel) down, so a room whose
   sentinel sits near the start of an OS page has a bin of a few dozen
   blocks write two pages. A plain cache's middle rooms (tcache.c:
   nd_tcache_area_pad) keep 200 or more of their top slots on their
   sentinel's page, and its large rooms min(cap_max, 256). On main 55f8196
   every other middle room kept 48-64 (the offset where the struct ended
   gave them); its large rooms kept enough by the same chance, which a
   struct 832 bytes shorter lost (the room of the class of 1 KiB kept 13:
   bench/larson's threads wrote a page of slots more). */
static void a_bins_rooms_keep_their_top_slots_on_one_page(void)
{
    EXPECT(nd_thread_start() != NULL, "the thread to start");
    const size_t page = 4096 / sizeof(void *), base = ND_TC_HEAD_BYTES / sizeof(void *);
    unsigned mids = 0, larges = 0;
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        const nd_bin_layout *lay = &nd_tcache_layouts[ND_LAYOUT_PLAIN][c];
        if (lay->cap_max == 0)
            continue;
        size_t top = (base + lay->slot_end) % page, need = lay->cap_max < 256 ? lay->cap_max : 256;
        EXPECT(top >= need, "the large room of class %u (%u B) to keep %zu of its top slots on one page, it keeps %zu", c,
               (unsigned)nd_class_size[c], need, top);
        larges++;
        if (lay->mid_end != 0) {
            top = (base + lay->mid_end) % page;
            EXPECT(top >= 200, "the middle room of class %u (%u B) to keep 200 of its top slots on one page, it keeps %zu",
                   c, (unsigned)nd_class_size[c], top);
            mids++;
        }
    }
    EXPECT(mids >= 8 && larges >= 32, "the plain caches to have middle rooms (%u) and large rooms (%u)", mids, larges);
}

/* A bin's capacity doubles as it runs dry (tcache.h), for bigger fills,
   but its slots stay in its first room (in its near record), then the
   start area, until its blocks need more than its room there
   (nd_bin_move): a thread that makes 12 requests of 160 B (fills of 4 and
   8 blocks, the capacity doubled once, 32 -> 64, past its first room of
   12) holds what is left in its first room; 28 more (a fill of 16: more
   than that room) move it to its start room of 64, where it stays while
   its capacity doubles past it and it holds what it frees; 100 blocks
   held move it to its middle room. On main a59940e the bin moved to its
   middle room, another page of slots, at its third fill. */
#define LAZY_FIRST  12
#define LAZY_BLOCKS 40
static void *grow_a_bin_past_its_start_room(void *arg)
{
    (void)arg;
    nd_tcache *tc = nd_thread_start();
    EXPECT(tc != NULL, "the thread to start");
    unsigned c = nd_class_of(160);
    void *p[100];
    for (int i = 0; i < LAZY_FIRST; i++)
        EXPECT((p[i] = nodal_malloc(160)) != NULL, "malloc(160) to succeed");
    const nd_bin *b = &tc->bins[c];
    const nd_bin_info *bi = nd_bin_info_of(tc, c);
    void **start = nd_tcache_slots(tc) + nd_bin_lay(tc, c)->start_end;
    EXPECT(bi->cap > ND_BIN_FIRST_ROOM, "the bin's capacity to have doubled past its first room (cap %u)", bi->cap);
    EXPECT(nd_bin_lay(tc, c)->has_first && tc->near_of[c] != 0 &&
           b->empty == (void **)&tc->near[tc->near_of[c] - 1].room[ND_BIN_FIRST_ROOM],
           "a bin that holds %td blocks after %d requests to be in its first room", b->empty - b->cur, LAZY_FIRST);
    for (int i = LAZY_FIRST; i < LAZY_BLOCKS; i++)
        EXPECT((p[i] = nodal_malloc(160)) != NULL, "malloc(160) to succeed");
    EXPECT(bi->cap > 64, "the bin's capacity to have doubled past its start room of 64 (cap %u)", bi->cap);
    EXPECT(b->empty == start, "a bin that holds %td blocks after %d requests to be in its start room",
           b->empty - b->cur, LAZY_BLOCKS);
    for (int i = 0; i < LAZY_BLOCKS; i++)
        nodal_free(p[i]);
    EXPECT(b->empty == start && b->empty - b->cur >= LAZY_BLOCKS,
           "the bin to hold its %d blocks in its start room (%td held)", LAZY_BLOCKS, b->empty - b->cur);
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 100; i++)
            EXPECT((p[i] = nodal_malloc(160)) != NULL, "malloc(160) to succeed");
        for (int i = 0; i < 100; i++)
            nodal_free(p[i]);
    }
    EXPECT(b->empty != start && b->empty == nd_tcache_slots(tc) + nd_bin_lay(tc, c)->mid_end,
           "a bin that held more blocks than its start room to have moved to its middle room");
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold after the move");
    return NULL;
}

static void a_bin_stays_in_its_start_room_while_its_blocks_fit(void)
{
    run_in_a_thread(grow_a_bin_past_its_start_room);
}

/* Is the OS page that holds p resident (mincore)? */
static bool page_is_resident(const void *p)
{
    uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE);
    unsigned char v = 0;
    EXPECT(mincore((void *)((uintptr_t)p & ~(ps - 1)), ps, &v) == 0, "mincore to work");
    return (v & 1) != 0;
}

/* A bin that moves on (nd_bin_move: its start room, then its middle room,
   then its large room) gives back the OS pages of the room it left that
   no other bin's room shares (tcache.c, nd_bin_room_release): a thread
   whose one class (64 B) grows to hundreds of blocks keeps the pages of
   its large room only, not its start room's page and its middle room's
   two as well. On main 4b802c7 all three stayed resident (bench/batchq's
   consumers: 12 KiB a thread, docs/results.md, h55m). */
static void *move_one_bin_through_its_rooms(void *arg)
{
    (void)arg;
    nd_tcache *tc = nd_thread_start();
    EXPECT(tc != NULL, "the thread to start");
    unsigned c = nd_class_of(64);
    static void *p[1024];
    for (int round = 0; round < 8; round++) {   /* the bin grows to about 1,000 blocks */
        for (int i = 0; i < 1024; i++)
            EXPECT((p[i] = nodal_malloc(64)) != NULL, "malloc(64) to succeed");
        for (int i = 0; i < 1024; i++)
            nodal_free(p[i]);
    }
    const nd_bin *b = &tc->bins[c];
    const nd_bin_layout *lay = nd_bin_lay(tc, c);
    void **slots = nd_tcache_slots(tc);
    EXPECT(lay->mid_end != 0 && b->empty == slots + lay->slot_end,
           "the bin of 64 B to have moved to its large room (it holds %td blocks)", b->empty - b->cur);
    for (unsigned d = 0; d < ND_CLASS_COUNT; d++) {
        const void *e = tc->bins[d].empty;
        EXPECT(d == c || e == NULL || ((const char *)e >= (const char *)tc && (const char *)e < (const char *)slots),
               "no other bin of the thread to have slots past the struct (class %u)", d);
    }
    uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t used_lo = (uintptr_t)b->cur & ~(ps - 1), used_hi = (uintptr_t)b->empty | (ps - 1);
    const void *left[] = { slots + lay->start_end, slots + lay->mid_end - 256, slots + lay->mid_end };
    for (unsigned i = 0; i < 3; i++) {
        uintptr_t q = (uintptr_t)left[i];
        if (q >= used_lo && q <= used_hi)
            continue;   /* (a page its large room's blocks use too) */
        EXPECT(!page_is_resident(left[i]), "the page of slot %td of the cache (%s) to hold no memory once the bin "
               "moved on", (void *const *)left[i] - slots, i == 0 ? "its start room's sentinel" : i == 1 ?
               "its middle room's bottom" : "its middle room's sentinel");
    }
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    return NULL;
}

static void a_bin_that_moved_on_gives_back_the_pages_of_its_old_rooms(void)
{
    run_in_a_thread(move_one_bin_through_its_rooms);
}

/* A bin's first fill takes ND_FIRST_FILL (4) blocks, or 1 KiB worth of
   them when that is fewer (tcache.c: ND_FIRST_FILL_BYTES): the process's
   first thread's (its own pages; the others' fills start at one block,
   below) first request of 512 B leaves one block in its bin, of 1,000 B none,
   of 64 B three. On main a59940e each took 4 blocks (2 and 4 KiB of the
   nursery written for one request). */
static void *make_one_request_of_three_sizes(void *arg)
{
    (void)arg;
    nd_tcache *tc = nd_thread_start();
    EXPECT(tc != NULL, "the thread to start");
    static const size_t size[3] = {128, 512, 1000};   /* (64 B: a pair of lines, 2 blocks) */
    static const ptrdiff_t left[3] = {3, 1, 0};
    for (int i = 0; i < 3; i++) {
        void *p = nodal_malloc(size[i]);
        EXPECT(p != NULL, "malloc(%zu) to succeed", size[i]);
        const nd_bin *b = &tc->bins[nd_class_of(size[i])];
        EXPECT(b->empty - b->cur == left[i], "the first fill of the class of %zu B to leave %td blocks in its bin, it left %td",
               size[i], left[i], b->empty - b->cur);
        nodal_free(p);
    }
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    return NULL;
}

static void a_bins_first_fill_takes_at_most_a_kib_of_blocks_past_256_bytes(void)
{
    run_in_a_thread(make_one_request_of_three_sizes);
}

/* In a cache the nursery may serve (a thread other than the process's
   first: tcache.c, fill_from_one) a bin's first fill takes one block: a
   thread's first request of 64 B, 512 B or 1,000 B leaves no block in its
   bin. On main 1378f24 64 B and 512 B left 3 and 1 (fills of
   ND_FIRST_FILL, or 1 KiB worth, as the process's first thread's). */
static void *make_one_request_of_three_sizes_from_one(void *arg)
{
    (void)arg;
    nd_tcache *tc = nd_thread_start();
    EXPECT(tc != NULL, "the thread to start");
    EXPECT(tc->fill_from_one, "a thread's plain cache to start its fills at one block");
    static const size_t size[3] = {128, 512, 1000};   /* (64 B: a pair of lines, 2 blocks) */
    for (int i = 0; i < 3; i++) {
        void *p = nodal_malloc(size[i]);
        EXPECT(p != NULL, "malloc(%zu) to succeed", size[i]);
        const nd_bin *b = &tc->bins[nd_class_of(size[i])];
        EXPECT(b->empty == b->cur, "the first fill of the class of %zu B to leave no block in its bin, it left %td",
               size[i], b->empty - b->cur);
        nodal_free(p);
    }
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    return NULL;
}

/* A thread that makes k requests of a class (its bin's first fills, from
   the nursery: 1, 2, 3, 4, 6, 8, 12 blocks, then 16 and 24 from its own
   pages; a class whose block is not a multiple of a pair of cache lines
   starts at whole pairs, 2, 4 or 8 blocks) has taken at most half as many again: at
   most k / 2 wait in its bin (and those 2 or 4), for k = 1, 3, ... 31 (bench/threadcost's threads make 3-12 of
   each class). On main 1378f24 (fills of 4, 8 and 16) 1 request left 3
   blocks in the bin, 5 left 7. */
static void *make_k_requests_of_each_class(void *arg)
{
    (void)arg;
    nd_tcache *tc = nd_thread_start();
    EXPECT(tc != NULL, "the thread to start");
    static void *p[16][31];
    for (unsigned k = 1; k <= 16; k++) {
        size_t size = nd_class_size[k - 1];   /* the classes of 16-256 B, one for each k */
        unsigned n = k * 2 - 1;   /* 1, 3, 5, ... 31 requests */
        for (unsigned i = 0; i < n; i++)
            EXPECT((p[k - 1][i] = nodal_malloc(size)) != NULL, "malloc(%zu) to succeed", size);
        const nd_bin *b = &tc->bins[nd_class_of(size)];
        unsigned pow2 = (unsigned)(size & (0 - size)), line = pow2 < 128 ? 128 / pow2 : 0;   /* (whole pairs of lines first) */
        EXPECT((unsigned)(b->empty - b->cur) <= n / 2 + line, "%u requests of %zu B to leave at most %u blocks in the bin, it holds %td",
               n, size, n / 2 + line, b->empty - b->cur);
    }
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    for (unsigned k = 1; k <= 16; k++)
        for (unsigned i = 0; i < k * 2 - 1; i++)
            nodal_free(p[k - 1][i]);
    return NULL;
}

static void a_threads_first_requests_of_a_class_take_at_most_half_as_many_blocks_again(void)
{
    EXPECT(nd_thread_start() != NULL, "the process's first thread to start (its cache fills from its own pages)");
    run_in_a_thread(make_k_requests_of_each_class);
}

static void a_threads_first_fill_takes_one_block(void)
{
    EXPECT(nd_thread_start() != NULL, "the process's first thread to start (its cache fills from its own pages)");
    run_in_a_thread(make_one_request_of_three_sizes_from_one);
}

/* A thread's fills from its node's nursery (a thread other than the
   process's first, classes below 1 KiB: tcache.c, nd_bin_nursery_take)
   take whole pairs of cache lines each (2, 4 or 8 blocks of the classes
   whose block is not a multiple of 128 B), so two threads' blocks never
   share a pair however many fills each made, and they bring the bin's
   blocks to the first whole pair at or past the totals of fills of 1, 2,
   3, 4, 6, 8 and 12 (1, 3, 6, 10, 16, 24, 36): k requests take that many
   blocks, no more. Threads started one after another, each kept alive
   with its k blocks of one class (1-30 requests of 16-224 B), from the
   nursery's pages in the order they asked. On main 39094ac the fills
   were a pair, then half as many again (8, 12 blocks of 48 B): 9
   requests of 48 B took 20 blocks (the formula: 16) and the fill of 12,
   4.5 pairs, left the next thread's first blocks on the pair its last
   ones ended in. */
#define PAIR_SIZES 10
#define PAIR_KS    8
#define PAIR_MAXK  30
struct pair_thread {
    size_t size;
    unsigned k;
    void *held[PAIR_MAXK + 16];   /* its k blocks, then the blocks waiting in its bin */
    unsigned n;
    int from_nursery;
    sem_t done, go;
};
static void *take_k_blocks_and_wait(void *arg)
{
    struct pair_thread *t = arg;
    nd_tcache *tc = nd_thread_start();
    EXPECT(tc != NULL && tc->fill_from_one, "a thread's plain cache to fill from one block");
    unsigned c = nd_class_of(t->size);
    for (unsigned i = 0; i < t->k; i++)
        EXPECT((t->held[i] = nodal_malloc(t->size)) != NULL, "malloc(%zu) to succeed", t->size);
    t->from_nursery = tc->heap.pages[c].first == NULL;
    const nd_bin *b = &tc->bins[c];
    t->n = t->k;
    for (void **q = b->cur; q < b->empty && t->n < PAIR_MAXK + 16; q++)
        t->held[t->n++] = *q;
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    sem_post(&t->done);
    sem_wait(&t->go);
    for (unsigned i = 0; i < t->k; i++)
        nodal_free(t->held[i]);
    return NULL;
}
static void a_threads_nursery_fills_take_whole_pairs_of_lines_and_no_more(void)
{
    nodal_free(nodal_malloc(16));   /* the process's first thread is this one: the next take the nursery's blocks */
    static const size_t sizes[PAIR_SIZES] = { 16, 32, 48, 64, 80, 96, 112, 128, 160, 224 };
    static const unsigned ks[PAIR_KS] = { 1, 3, 7, 9, 13, 17, 25, 30 };
    static const unsigned totals[] = { 1, 3, 6, 10, 16, 24, 36 };
    static struct pair_thread th[PAIR_SIZES * PAIR_KS];
    static pthread_t id[PAIR_SIZES * PAIR_KS];
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 << 10);
    for (int i = 0; i < PAIR_SIZES * PAIR_KS; i++) {
        struct pair_thread *t = &th[i];
        t->size = sizes[i / PAIR_KS];
        t->k = ks[i % PAIR_KS];
        sem_init(&t->done, 0, 0);
        sem_init(&t->go, 0, 0);
        EXPECT(pthread_create(&id[i], &attr, take_k_blocks_and_wait, t) == 0, "pthread_create to work");
        sem_wait(&t->done);   /* one after another: the nursery's blocks in this order */
    }
    for (int i = 0; i < PAIR_SIZES * PAIR_KS; i++) {
        const struct pair_thread *t = &th[i];
        EXPECT(t->from_nursery, "the thread of %u requests of %zu B to be served by the nursery", t->k, t->size);
        size_t pow2 = t->size & (0 - t->size), p = pow2 < 128 ? 128 / pow2 : 1, want = 0;
        for (size_t j = 0; j < sizeof totals / sizeof totals[0] && want < t->k; j++)
            want = (totals[j] + p - 1) / p * p;
        EXPECT(t->n == want, "%u requests of %zu B to take %zu blocks (whole pairs of lines, the fills' totals), "
               "they took %u", t->k, t->size, want, t->n);
        for (int j = 0; j < i; j++) {   /* no pair of lines holds two threads' blocks */
            const struct pair_thread *u = &th[j];
            for (unsigned a = 0; a < t->n; a++)
                for (unsigned b = 0; b < u->n; b++) {
                    uintptr_t x = (uintptr_t)t->held[a], y = (uintptr_t)u->held[b];
                    EXPECT(x / 128 != (y + u->size - 1) / 128 && y / 128 != (x + t->size - 1) / 128,
                           "the blocks of two threads (%u of %zu B, %u of %zu B) to share no pair of cache lines: "
                           "%#lx and %#lx do", t->k, t->size, u->k, u->size, (unsigned long)x, (unsigned long)y);
                }
        }
    }
    for (int i = 0; i < PAIR_SIZES * PAIR_KS; i++)
        sem_post(&th[i].go);
    for (int i = 0; i < PAIR_SIZES * PAIR_KS; i++)
        pthread_join(id[i], NULL);
    pthread_attr_destroy(&attr);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after the threads exited");
}

/* A thread's record (thread.h) is four cache lines: its array of node
   caches (ND_MAX_NODES pointers) is the one all records share, never
   written, until the thread makes its first node cache, then an array of
   its own that the node fast paths read (nd_tls_node_tc). 32 threads that
   make a few small requests and wait: their records, side by side in the
   metadata allocator's chunk (written at each thread's start), lie on at
   most 4 OS pages (2 and a few records elsewhere: the allocator reuses
   freed objects of the size first); one that then asks for memory of
   node 0 gets an array of its own, whose entry the fast path finds. On
   main 39094ac a record was 768 bytes (the array inside it, every entry
   written when the thread started): the 32 records lay on 8 pages. */
#define REC_THREADS 32
static sem_t rec_ready, rec_go;
static void *records[REC_THREADS];
static void *make_a_few_requests_and_wait(void *arg)
{
    void **slot = arg;
    void *p[8];
    for (int i = 0; i < 8; i++)
        EXPECT((p[i] = nodal_malloc(16 + 16 * (size_t)i)) != NULL, "malloc to succeed");
    *slot = nd_tls_thread;
    sem_post(&rec_ready);
    sem_wait(&rec_go);
    for (int i = 0; i < 8; i++)
        nodal_free(p[i]);
    return NULL;
}
static int records_by_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
    return x < y ? -1 : x > y;
}
static void a_threads_record_holds_no_node_caches_until_it_makes_one(void)
{
    nodal_free(nodal_malloc(16));
    pthread_t id[REC_THREADS];
    sem_init(&rec_ready, 0, 0);
    sem_init(&rec_go, 0, 0);
    for (int i = 0; i < REC_THREADS; i++) {
        EXPECT(pthread_create(&id[i], NULL, make_a_few_requests_and_wait, &records[i]) == 0, "pthread_create to work");
        sem_wait(&rec_ready);
    }
    qsort(records, REC_THREADS, sizeof records[0], records_by_address);
    for (int i = 0; i < REC_THREADS; i++)
        EXPECT(((nd_thread *)records[i])->state == ND_THREAD_LIVE, "the threads' records to be live");
    uintptr_t pages[2 * REC_THREADS];   /* the OS pages the records lie on, each written at its thread's start */
    size_t n = 0;
    for (int i = 0; i < REC_THREADS; i++) {
        EXPECT(nd_written_pages(records[i], sizeof(nd_thread)) >= 1, "a live thread's record to be written");
        for (uintptr_t a = (uintptr_t)records[i] / 4096; a <= ((uintptr_t)records[i] + sizeof(nd_thread) - 1) / 4096; a++)
            if (n == 0 || pages[n - 1] != a)
                pages[n++] = a;
    }
    EXPECT(n <= 4, "%d threads' records to lie on at most 4 OS pages, they lie on %zu", REC_THREADS, n);
    for (int i = 0; i < REC_THREADS; i++)
        sem_post(&rec_go);
    for (int i = 0; i < REC_THREADS; i++)
        pthread_join(id[i], NULL);
    /* This thread's record: no array of its own until its first node cache. */
    nd_thread *t = nd_tls_thread;
    nd_tcache **shared = t->node_tc;
    EXPECT(nd_tls_node_tc == shared, "the node fast paths to read the record's array");
    void *q = nodal_malloc_node(64, 0);
    EXPECT(q != NULL, "nodal_malloc_node(64, 0) to succeed");
    EXPECT(t->node_tc != shared && nd_tls_node_tc == t->node_tc && t->node_tc[0] != shared[0] &&
           t->node_tc[0]->heap.bound && t->node_tc[0]->heap.node == 0,
           "the first node cache to give the record an array of its own, which the fast paths read");
    EXPECT(shared[0] == shared[ND_MAX_NODES - 1], "the shared array to stay as it was");
    nodal_free(q);
    EXPECT(nd_thread_is_valid(), "the thread's invariants to hold");
}

/* A thread whose busy classes each cycle a hundred blocks (a working set
   past the bin's start room, not past 256 blocks) keeps their bins in the
   cache's middle area, two to an OS page, not each at the top of its own
   large room (tcache.h: 16 KiB apart for 64-byte blocks): the slots its
   16 bins (classes of 64-896 B) may fill span at most 10 OS pages, their
   2 KiB rooms there. On main f0a54d9 (start and large areas only) they
   span 23. */
#define MID_CLASSES 16
#define MID_BLOCKS 100
static void *cycle_a_hundred_blocks_of_sixteen_classes(void *arg)
{
    (void)arg;
    static __thread void *p[MID_CLASSES][MID_BLOCKS];
    nd_tcache *tc = nd_thread_start();
    EXPECT(tc != NULL, "the thread to start");
    for (int round = 0; round < 2; round++) {
        for (int c = 0; c < MID_CLASSES; c++)
            for (int i = 0; i < MID_BLOCKS; i++) {
                p[c][i] = nodal_malloc(nd_class_size[nd_class_of(64) + (unsigned)c]);
                EXPECT(p[c][i] != NULL, "nodal_malloc of class %u to succeed", nd_class_of(64) + (unsigned)c);
            }
        for (int c = 0; c < MID_CLASSES; c++)
            for (int i = 0; i < MID_BLOCKS; i++)
                nodal_free(p[c][i]);
    }
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t start_end = 0;   /* the start area's end: past every bin's room there */
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++)
        if (nd_bin_cap_max(tc, c) != 0 && (uintptr_t)(nd_tcache_slots(tc) + nd_bin_lay(tc, c)->start_end) > start_end)
            start_end = (uintptr_t)(nd_tcache_slots(tc) + nd_bin_lay(tc, c)->start_end);
    uintptr_t pages[2 * MID_CLASSES + 2];
    size_t n = 0;
    for (int k = 0; k < MID_CLASSES; k++) {
        unsigned c = nd_class_of(64) + (unsigned)k;
        const nd_bin *b = &tc->bins[c];
        EXPECT(nd_bin_info_of(tc, c)->cap > 64 && nd_bin_info_of(tc, c)->cap <= 256,
               "a bin that cycles %d blocks to have grown past its start room, to at most 256 (class %u: cap %u)", MID_BLOCKS, c,
               nd_bin_info_of(tc, c)->cap);
        EXPECT((uintptr_t)b->empty > start_end, "the bin to have left the start area");
        for (uintptr_t a = (uintptr_t)b->low / ps; a <= (uintptr_t)b->empty / ps; a++) {
            size_t j = 0;
            while (j < n && pages[j] != a)
                j++;
            if (j == n && n < sizeof pages / sizeof pages[0])
                pages[n++] = a;
        }
    }
    EXPECT(n <= 10, "the slots of %d bins of up to 256 blocks to span at most 10 OS pages (their rooms in the middle area), "
           "they span %zu", MID_CLASSES, n);
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    return NULL;
}

static void busy_bins_of_a_few_hundred_blocks_share_pages_of_slots(void)
{
    run_in_a_thread(cycle_a_hundred_blocks_of_sixteen_classes);
}

/* A producer's bin (its thread allocates and never frees: every fill finds
   it dry again) grows for bigger fills only up to 16 KiB worth of blocks
   or 64 of them (tcache.h), not to tcache_count: the blocks it would hold
   beyond that are its pages' memory kept out, for no more hits. */
static void *only_allocate(void *arg)
{
    void **out = arg;
    for (int i = 0; i < 20000; i++)
        out[i] = nodal_malloc(64);
    nd_tcache *tc = nd_tls_tc;
    unsigned c = nd_class_of(64), small = nd_class_of(16);
    EXPECT(nd_bin_info_of(tc, c)->cap <= 16384 / 64, "a 64 B producer's bin to hold at most 16 KiB (cap %u)", nd_bin_info_of(tc, c)->cap);
    EXPECT(nd_bin_info_of(tc, c)->cap >= 64, "it to have grown past its start for bigger fills (cap %u)", nd_bin_info_of(tc, c)->cap);
    for (int i = 0; i < 20000; i++)
        out[20000 + i] = nodal_malloc(16);
    EXPECT(nd_bin_info_of(tc, small)->cap <= 16384 / 16, "a 16 B producer's bin to hold at most 16 KiB (cap %u)",
           nd_bin_info_of(tc, small)->cap);
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    return NULL;
}

static void a_producers_bin_grows_to_16_kib_at_most(void)
{
    static void *blocks[40000];
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, only_allocate, blocks) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    for (int i = 0; i < 40000; i++)
        nodal_free(blocks[i]);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after the producer's blocks were freed");
}

/* A bin whose misses are rare does not stay big (tcache.c: nd_bin_since).
   A thread allocates 300 blocks of 640 B in a row (a producer: its bin
   grows to 96 for bigger fills), then frees and allocates blocks of that
   class at random around that level, 400,000 times, as bench/larson does:
   its bin runs dry or overflows once in hundreds or thousands of calls;
   at such a fill it halves under 32 blocks, and it grows again only after
   two quick cycles in a row. Its capacity over the walk, on average, must
   not exceed the 96 the run gave it (68 on h52m). On main 4c6e842 it grew
   on single short cycles to 384 on average (a GC pass would halve it, but
   none comes: purge_delay is an hour here, and a run shorter than the
   default 100 ms sees none either). */
enum { WALK_LEVEL = 300, WALK_MAX = 4096, WALK_STEPS = 400000 };

static void *walk_around_a_level(void *arg)
{
    (void)arg;
    static void *held[WALK_MAX];
    unsigned c = nd_class_of(640);
    size_t n = 0;
    for (; n < WALK_LEVEL; n++)
        held[n] = nodal_malloc(640);
    nd_tcache *tc = nd_tls_tc;
    uint32_t grown = nd_bin_info_of(tc, c)->cap;
    EXPECT(grown >= 48, "a bin of 640 B blocks to grow in a run of 300 requests (capacity %u)", grown);
    uint64_t x = 0x9e3779b97f4a7c15u;   /* xorshift64: the same walk every run */
    uint64_t sum = 0;
    for (int i = 0; i < WALK_STEPS; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if (((x >> 32) & 1) && n > 0) {
            size_t k = (size_t)(x % n);
            nodal_free(held[k]);
            held[k] = held[--n];
        } else if (n < WALK_MAX) {
            held[n++] = nodal_malloc(640);
        }
        sum += nd_bin_info_of(tc, c)->cap;
    }
    double mean = (double)sum / WALK_STEPS;
    EXPECT(mean <= grown, "a bin of 640 B blocks whose misses are rare to have had no more capacity over the walk, on "
           "average, than its run of requests gave it (%u): it had %.1f", grown, mean);
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    while (n > 0)
        nodal_free(held[--n]);
    return NULL;
}

static void a_bin_whose_misses_are_rare_goes_back_to_its_start(void)
{
    run_in_a_thread(walk_around_a_level);
}

/* A bin whose requests and frees wander (bench/larson's replacements:
   one block of a random size freed, one allocated, over and over) settles
   at about ND_WANDER_MIN (32) blocks, whatever its class's starting
   capacity (tcache.c: nd_tcache_grow, nd_bin_quick). Two classes at once,
   each a random walk of frees and requests from an empty bin, 200,000
   steps each: 96 B (its bin starts at 32) and 640 B (it starts at 12,
   doubles to 24, then to 32, not 48). Each bin's capacity over the walk,
   on average, must be at most 40 blocks: 36.6 and 32.3 on h54m. On main
   61f716f 79.2 and 67.3 (purge_delay is an hour, so no GC pass comes in
   either): two cycles in a row each within two capacities of calls
   doubled a bin, which a walk has often, and a 640 B bin grew 24 -> 48
   under the threshold of those rules. */
enum { WANDER_MAX = 4096, WANDER_STEPS = 400000, WANDER_MEAN_MAX = 40 };

static void *wander_two_classes(void *arg)
{
    (void)arg;
    static const size_t sizes[2] = { 96, 640 };
    static void *held[2][WANDER_MAX];
    size_t n[2] = { 0, 0 };
    nodal_free(nodal_malloc(16));   /* the thread's cache */
    nd_tcache *tc = nd_tls_tc;
    uint64_t x = 0x2545f4914f6cdd1du;   /* xorshift64: the same walk every run */
    uint64_t sum[2] = { 0, 0 };
    for (int i = 0; i < WANDER_STEPS; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int k = (int)((x >> 40) & 1);
        if (((x >> 32) & 1) && n[k] > 0) {
            size_t j = (size_t)(x % n[k]);
            nodal_free(held[k][j]);
            held[k][j] = held[k][--n[k]];
        } else if (n[k] < WANDER_MAX) {
            held[k][n[k]++] = nodal_malloc(sizes[k]);
        }
        for (int m = 0; m < 2; m++)
            sum[m] += nd_bin_info_of(tc, nd_class_of(sizes[m]))->cap;
    }
    for (int k = 0; k < 2; k++) {
        double mean = (double)sum[k] / WANDER_STEPS;
        EXPECT(mean <= WANDER_MEAN_MAX, "a bin of %zu B blocks whose requests and frees wander to hold at most %d blocks "
               "on average over the walk: it had %.1f", sizes[k], WANDER_MEAN_MAX, mean);
    }
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    for (int k = 0; k < 2; k++)
        while (n[k] > 0)
            nodal_free(held[k][--n[k]]);
    return NULL;
}

static void a_bin_that_wanders_holds_about_32_blocks(void)
{
    run_in_a_thread(wander_two_classes);
}

/* A bin of a medium class (past ND_SMALL_MAX) starts at one block
   (tcache.c: nd_bin_start_capacity): a thread that frees two blocks of
   such a class (here blocks another thread allocated) keeps one, and the
   other goes where other threads can take it (the transfer store) or to
   its page; a class used in bursts still grows its bin, a doubling each
   time it runs dry and then overflows. On main 55f8196 the bin started at
   two blocks and kept both (40-256 KiB a class: bench/shortlived -t 8 had
   8.4 MiB in its caches at its peak). */
/* n blocks of `size` (n <= 32) allocated, then all freed: a burst. */
static void burst_of(int n, size_t size)
{
    void *b[32];
    for (int i = 0; i < n; i++) {
        b[i] = nodal_malloc(size);
        EXPECT(b[i] != NULL, "block %d of %zu B", i, size);
    }
    for (int i = 0; i < n; i++)
        nodal_free(b[i]);
}

static const size_t medium_sizes[] = { 20 << 10, 48 << 10, 96 << 10, 128 << 10 };
#define MEDIUM_SIZES (sizeof medium_sizes / sizeof medium_sizes[0])

static void *free_two_medium_blocks(void *arg)
{
    void **given = arg;
    nodal_free(nodal_malloc(16));   /* the thread's cache */
    nd_tcache *tc = NULL;
    for (unsigned i = 0; i < MEDIUM_SIZES; i++) {
        nodal_free(given[2 * i]);
        nodal_free(given[2 * i + 1]);
        tc = nd_tls_tc;
        unsigned c = nd_class_of(medium_sizes[i]);
        size_t held = (size_t)(tc->bins[c].empty - tc->bins[c].cur);
        EXPECT(held == 1 && nd_bin_info_of(tc, c)->cap == 1,
               "a thread's bin of %zu B to keep one of the two blocks it freed (it holds %zu, capacity %u)",
               medium_sizes[i], held, nd_bin_info_of(tc, c)->cap);
    }
    /* Bursts of 8 blocks of 48 KiB: the bin grows to hold them. */
    unsigned c = nd_class_of(48 << 10);
    for (int round = 0; round < 16; round++)
        burst_of(8, 48 << 10);
    EXPECT(nd_bin_info_of(tc, c)->cap >= 4, "a bin of 48 KiB blocks in bursts of 8 to have grown to 4 or more (capacity %u)",
           nd_bin_info_of(tc, c)->cap);
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    return NULL;
}

/* A medium class's bin holds twice tcache_bytes worth (tcache.c:
   nd_bin_capacity): bursts of 8 blocks of 64 KiB grow it to all 8 (512
   KiB); at 256 KiB it stopped at 4 and a batch refilled and flushed it
   every 4 requests (docs/results.md, stop 67). A bin of 16 KiB blocks
   (a small class) still stops at tcache_bytes worth: 16. */
static void *bursts_of_64k_and_16k(void *arg)
{
    unsigned *caps = arg;
    for (int round = 0; round < 16; round++) {
        burst_of(8, 64 << 10);
        burst_of(32, 16 << 10);
    }
    nd_tcache *tc = nd_tls_tc;
    caps[0] = nd_bin_info_of(tc, nd_class_of(64 << 10))->cap;
    caps[1] = nd_bin_info_of(tc, nd_class_of(16 << 10))->cap;
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    return NULL;
}

static void a_medium_bin_holds_twice_tcache_bytes_worth(void)
{
    if (nd_opt(ND_OPT_tcache_bytes) != 256 << 10 || nd_opt(ND_OPT_tcache_total) != 1 << 20 ||
        nd_opt(ND_OPT_tcache_count) < 32 || nd_opt(ND_OPT_tcache_max) < (64 << 10) || nd_secure_on())
        SKIP("made for the defaults tcache_bytes=256k, tcache_total=1m, secure=0");
    unsigned caps[2] = { 0, 0 };
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, bursts_of_64k_and_16k, caps) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    EXPECT(caps[0] == 8, "a bin of 64 KiB blocks in bursts of 8 to grow to 8 (512 KiB), capacity %u", caps[0]);
    EXPECT(caps[1] <= 16, "a bin of 16 KiB blocks in bursts of 32 to stop at 16 (256 KiB), capacity %u", caps[1]);
}

static void a_medium_bin_starts_at_one_block(void)
{
    void *given[2 * MEDIUM_SIZES];
    for (unsigned i = 0; i < 2 * MEDIUM_SIZES; i++) {
        given[i] = nodal_malloc(medium_sizes[i / 2]);
        EXPECT(given[i] != NULL, "a block of %zu B", medium_sizes[i / 2]);
    }
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, free_two_medium_blocks, given) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after the thread exited");
}

/* A bin in a run of requests (it ran dry twice with no block freed into
   it in between, and its fills since its last overflow took a bin's worth
   already) refills its whole capacity, and the second half comes only
   from blocks already free in the class's pages: none carved for it
   (tcache.c: nd_tcache_fill, heap.c: nd_heap_take_free). 600 blocks of
   1 KiB are carved and freed back (one kept on each page, so that no page
   is released); then the bin is emptied by mallocs alone: half-bin fills
   until they have taken a bin's worth, then a whole one. */
enum { RUN_BLOCKS = 600 };

/* Adds the page of block p to seen[0..*n) unless it is there already;
   returns that page when it was new, else NULL. */
static nd_page *note_page(nd_page **seen, int *n, void *p)
{
    nd_page *pg = nd_page_of(nd_seg_base(p), p);
    for (int k = 0; k < *n; k++)
        if (seen[k] == pg)
            return NULL;
    seen[(*n)++] = pg;
    return pg;
}

static uint64_t carved_of(void **blocks, int n)
{
    uint64_t sum = 0;
    nd_page *seen[RUN_BLOCKS], *pg;
    int pages = 0;
    for (int i = 0; i < n; i++)
        if ((pg = note_page(seen, &pages, blocks[i])) != NULL)
            sum += pg->capacity;
    return sum;
}

/* The blocks carved in the pages of class c of heap h. */
static uint64_t class_carved(nd_heap *h, unsigned c)
{
    uint64_t sum = 0;
    for (nd_page *pg = h->pages[c].first; pg != NULL; pg = pg->next)
        sum += pg->capacity;
    for (nd_page *pg = h->full.first; pg != NULL; pg = pg->next)
        sum += pg->cls == c ? pg->capacity : 0;
    return sum;
}

/* Mallocs RUN_BLOCKS blocks of 1 KiB into a[]; the calling thread's bin
   of that class and its info. */
typedef struct { nd_tcache *tc; nd_bin *b; nd_bin_info *bi; } kib_bin;
static kib_bin kib_blocks(void **a)
{
    for (int i = 0; i < RUN_BLOCKS; i++)
        a[i] = nodal_malloc(1024);
    nd_tcache *tc = nd_tls_tc;
    unsigned c = nd_class_of(1024);
    return (kib_bin){ tc, &tc->bins[c], nd_bin_info_of(tc, c) };
}

static void *run_of_requests(void *arg)
{
    (void)arg;
    static void *a[RUN_BLOCKS], *got[RUN_BLOCKS];
    kib_bin kb = kib_blocks(a);
    nd_tcache *tc = kb.tc;
    nd_bin *b = kb.b;
    nd_bin_info *bi = kb.bi;
    nd_page *kept_page[RUN_BLOCKS];
    int kept = 0;
    for (int i = 0; i < RUN_BLOCKS; i++)
        if (note_page(kept_page, &kept, a[i]) == NULL)   /* else a[i] stays out: its page stays in use */
            nodal_free(a[i]), a[i] = NULL;
    nd_tcache_flush_all(tc);
    /* The pages' carved blocks, from the one block kept on each. */
    static void *one[RUN_BLOCKS];
    int ones = 0;
    for (int i = 0; i < RUN_BLOCKS; i++)
        if (a[i] != NULL)
            one[ones++] = a[i];
    uint64_t carved = carved_of(one, ones);
    EXPECT(b->cur == b->empty, "the bin to be empty after the flush");
    int n = 0;
    /* The first fills of the run take half the bin each, until they
       have taken a bin's worth: then the whole bin (tcache.c:
       nd_tcache_fill, run_fill). */
    size_t taken = 0;
    for (int fills = 0; taken < bi->cap; fills++) {
        got[n++] = nodal_malloc(1024);
        size_t half = (size_t)(b->empty - b->cur) + 1;
        EXPECT(half <= bi->cap / 2, "refill %d of the run, before a bin's worth, to take half the bin at most "
               "(%zu of %u)", fills + 1, half, bi->cap);
        taken += half;
        while (b->cur != b->empty && n < RUN_BLOCKS)
            got[n++] = nodal_malloc(1024);
    }
    got[n++] = nodal_malloc(1024);   /* dry again, nothing freed in between, a bin's worth taken: the whole bin */
    size_t held = (size_t)(b->empty - b->cur);
    EXPECT(held + 1 == bi->cap, "a refill in a run of requests to fill the whole bin (%zu of %u after one request)",
           held, bi->cap);
    EXPECT(carved_of(one, ones) == carved, "its blocks to come from the pages' free lists, none carved (%llu -> %llu)",
           (unsigned long long)carved, (unsigned long long)carved_of(one, ones));
    /* On in the run until the free blocks run out: from then on a refill
       carves (or opens pages for) half the bin at most. */
    static void *more[4 * RUN_BLOCKS];
    int m = 0;
    while (m < 4 * RUN_BLOCKS - 1) {
        while (b->cur != b->empty && m < 4 * RUN_BLOCKS - 1)
            more[m++] = nodal_malloc(1024);
        uint64_t before = class_carved(&tc->heap, nd_class_of(1024));
        more[m++] = nodal_malloc(1024);
        uint64_t grown = class_carved(&tc->heap, nd_class_of(1024)) - before;
        EXPECT(grown <= bi->cap / 2, "a refill to carve half the bin at most (%llu of %u)",
               (unsigned long long)grown, bi->cap);
    }
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    for (int i = 0; i < m; i++)
        nodal_free(more[i]);
    for (int i = 0; i < n; i++)
        nodal_free(got[i]);
    for (int i = 0; i < ones; i++)
        nodal_free(one[i]);
    return NULL;
}

/* Runs fn in a thread of its own (a fresh thread cache and heap) and
   waits for it. */
static void in_a_new_thread(void *(*fn)(void *))
{
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, fn, NULL) == 0, "pthread_create to work");
    pthread_join(t, NULL);
}

static void a_bin_in_a_run_of_requests_refills_whole_from_free_blocks_only(void)
{
    in_a_new_thread(run_of_requests);
}

/* A bin in a run of frees (it overflowed twice with no request in
   between) sends all its blocks home at the second overflow, not half,
   unless the first sent only a 64th (its first after a fill: then the
   third does; tcache.c: nd_tcache_push). */
static void *run_of_frees(void *arg)
{
    (void)arg;
    static void *a[RUN_BLOCKS];
    kib_bin kb = kib_blocks(a);
    nd_tcache *tc = kb.tc;
    nd_bin *b = kb.b;
    nd_bin_info *bi = kb.bi;
    int overflows = 0, whole = 0;
    bool few = false;   /* the last overflow sent less than half */
    for (int i = 0; i < RUN_BLOCKS; i++) {
        size_t before = (size_t)(b->empty - b->cur);
        uint32_t cap = bi->cap;
        nodal_free(a[i]);
        size_t after = (size_t)(b->empty - b->cur);
        if (before == cap && after <= before) {   /* it overflowed (and did not grow) */
            overflows++;
            if (overflows >= 2 && !few)
                EXPECT(after == 1, "overflow %d in a run of frees to send the whole bin (%zu of %u kept)",
                       overflows, after, cap);
            else if (overflows >= 2)
                EXPECT(after - 1 <= (cap + 1) / 2, "the overflow after a 64th to send half the bin or more "
                       "(%zu of %u kept)", after - 1, cap);
            few = before + 1 - after < (cap + 1) / 2;
            whole += after == 1;
        }
    }
    EXPECT(overflows >= 2 && whole >= 1, "the run to overflow the bin twice or more (%d, %d whole)", overflows, whole);
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    return NULL;
}

static void a_bin_in_a_run_of_frees_sends_the_whole_bin_home(void)
{
    in_a_new_thread(run_of_frees);
}

/* A bin of two blocks (tcache_bytes=32k: 16 KiB blocks, the capacity the
   budget leaves a big class when many caches share it) in a run of
   requests refills both blocks at once, and in a run of frees sends both
   home at once, as a larger bin moves its whole capacity (tcache.c: "fewer
   than a quarter of the capacity" in between, which is none for a bin of
   2 or 3 blocks; a quarter rounded down to 0 kept it at one block a fill
   and one a flush: a slow path every request, rptest -t 8's classes of
   2 KiB and more). */
enum { PAIR_RUN = 64 };
static void *pair_runs(void *arg)
{
    (void)arg;
    static void *a[PAIR_RUN];
    const size_t size = 16384;
    unsigned c = nd_class_of(size);
    for (int i = 0; i < PAIR_RUN; i++)
        a[i] = nodal_malloc(size);
    /* One block of each page stays out, so that the pages keep the
       others free for the run's whole fills (nd_heap_take_free). */
    static nd_page *kept_page[PAIR_RUN];
    static void *kept[PAIR_RUN];
    int pages = 0, n = 0;
    for (int i = 0; i < PAIR_RUN; i++)
        if (note_page(kept_page, &pages, a[i]) != NULL)
            kept[n++] = a[i];
        else
            nodal_free(a[i]);
    nd_tcache *tc = nd_tls_tc;
    nd_bin_info *bi = nd_bin_info_of(tc, c);
    EXPECT(bi->cap == 2, "the 16 KiB bin to hold two blocks under tcache_bytes=32k (cap %u)", bi->cap);
    nd_tcache_flush_all(tc);
    nd_tcache_xfer_sweep(tc, 0, true);   /* the store's blocks back to their pages too */
    const int run = PAIR_RUN - n;
    const nd_bin_counters *cs = &nd_bin_info_of(tc, c)->counts;
    uint64_t fills = nd_load_relaxed(&cs->fills);
    for (int i = 0; i < run; i++)
        a[i] = nodal_malloc(size);
    fills = nd_load_relaxed(&cs->fills) - fills;
    uint64_t flushes = nd_load_relaxed(&cs->flushes);
    for (int i = 0; i < run; i++)
        nodal_free(a[i]);
    flushes = nd_load_relaxed(&cs->flushes) - flushes;
    EXPECT(run >= 32 && fills <= (uint64_t)run / 2 + 2,
           "a run of %d requests to refill the two-block bin whole: %llu fills", run, (unsigned long long)fills);
    EXPECT(flushes <= (uint64_t)run / 2 + 2, "a run of %d frees to send the two-block bin home whole: %llu flushes",
           run, (unsigned long long)flushes);
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    for (int i = 0; i < n; i++)
        nodal_free(kept[i]);
    return NULL;
}

static void a_two_block_bin_moves_both_blocks_in_runs(void)
{
    EXPECT(nd_opt(ND_OPT_tcache_bytes) == 32768, "this case to run with NODAL_OPTIONS=tcache_bytes=32k");
    in_a_new_thread(pair_runs);
}

/* Batches of 1 KiB blocks that fit the bin (its capacity: 256 blocks, a
   working set of 250) move no block in or out once the bin holds them,
   whatever it held when the batches began: a GC pass that flushed part of
   it (nd_tcache_gc, at a purge delay: more of them on a slower machine),
   a fill or an overflow at another point of a batch. Whole-bin fills and
   overflows in each batch (a run of requests, then a run of frees) kept
   such a bin filling and flushing half or all of it every batch, for as
   long as the thread ran (bench/micro -m batch -s 256 -t 2: 86-1,950
   flushes in 500 rounds, against 28 in the rounds that settled: the
   bimodal rows of issue 23). Here: the bin grown and settled, then
   flushed down to `keep` blocks (as a GC pass does), then 60 batches,
   of which the last 30 must take no fill and make no flush
   (tcache.c: nd_tcache_fill's run_fill, nd_tcache_push's spilled_few).
   It runs with a purge delay of an hour (tests/unit/CMakeLists.txt), so
   that no GC pass of the thread's own maintenance comes during the
   batches (under TSan on a loaded machine 5 runs in 20 took one, 100 ms
   after the thread started, and failed: up to 28 fills and 56 flushes in
   the last 30 batches); the pass a slower machine would make is the
   flush here. */
enum { SETTLE_W = 250 };
static size_t settle_keep;
static void *batches_settle(void *arg)
{
    (void)arg;
    static void *a[SETTLE_W];
    unsigned c = nd_class_of(1024);
    for (int i = 0; i < SETTLE_W; i++)
        a[i] = nodal_malloc(1024);
    nd_tcache *tc = nd_tls_tc;
    nd_bin *b = &tc->bins[c];
    nd_bin_info *bi = nd_bin_info_of(tc, c);
    for (int i = 0; i < SETTLE_W; i++)
        nodal_free(a[i]);
    for (int r = 0; r < 40; r++) {
        for (int i = 0; i < SETTLE_W; i++)
            a[i] = nodal_malloc(1024);
        for (int i = 0; i < SETTLE_W; i++)
            nodal_free(a[i]);
    }
    EXPECT(bi->cap >= SETTLE_W, "the bin to have grown to hold a batch (%u of %d)", bi->cap, SETTLE_W);
    size_t held = (size_t)(b->empty - b->cur);
    if (held > settle_keep)
        nd_tcache_flush(tc, c, held - settle_keep);
    const nd_bin_counters *cs = &nd_bin_info_of(tc, c)->counts;
    uint64_t fills = 0, flushes = 0;
    for (int r = 0; r < 60; r++) {
        if (r == 30) {
            fills = nd_load_relaxed(&cs->fills);
            flushes = nd_load_relaxed(&cs->flushes);
        }
        for (int i = 0; i < SETTLE_W; i++)
            a[i] = nodal_malloc(1024);
        for (int i = 0; i < SETTLE_W; i++)
            nodal_free(a[i]);
    }
    fills = nd_load_relaxed(&cs->fills) - fills;
    flushes = nd_load_relaxed(&cs->flushes) - flushes;
    EXPECT(fills == 0 && flushes == 0, "batches that fit the bin, %zu blocks kept by a flush, to settle: "
           "%llu fills and %llu flushes in the last 30 of 60 batches (capacity %u)", settle_keep,
           (unsigned long long)fills, (unsigned long long)flushes, bi->cap);
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    return NULL;
}

static void batches_that_fit_the_bin_settle_after_a_flush(void)
{
    EXPECT(nd_opt(ND_OPT_purge_delay) >= 600000,
           "this case to run with purge_delay=3600000 (no GC pass during the batches), it is %ld ms",
           nd_opt(ND_OPT_purge_delay));
    static const size_t keeps[] = { 0, 1, 8, 20, 40, 64, 100, 128, 160, 200, 240, 250 };
    for (size_t k = 0; k < sizeof keeps / sizeof keeps[0]; k++) {
        settle_keep = keeps[k];
        in_a_new_thread(batches_settle);
    }
}

/* A GC pass judges a bin by its low-water mark, sampled once per
   ND_TICK_PERIOD requests of its class and at fills; a bin that serves a
   loop from its own blocks is sampled seldom, so a pass may count it idle
   and flush it, or halve it, while the loop holds its blocks (h51x). That
   costs fills and nothing else: passes (nd_tcache_gc, as the thread's
   maintenance runs it) between any two of the loop's mallocs and frees
   leave every held block intact and none in the bin, the cache valid, the
   class's requests and frees counted exactly, and, once all is freed,
   flushed and the store swept, no block of the class out of its pages. */
enum { GC_N = 16, GC_LOOPS = 3000, GC_SIZE = 96 };

static uint64_t gc_class_count(unsigned c, bool frees)
{
    static nd_snap_class cls[ND_CLASS_COUNT];
    static nd_snap_totals tot;
    static nd_snap_tier tier_from[ND_TIER_COUNT][ND_MAX_NODES];
    size_t threads = 0, pooled = 0;
    memset(cls, 0, sizeof cls);
    memset(&tot, 0, sizeof tot);
    memset(tier_from, 0, sizeof tier_from);
    nd_thread_stats_sum(cls, &tot, tier_from, &threads, &pooled, NULL, NULL);
    return frees ? cls[c].frees : cls[c].requests;
}

static void *gc_amid_loops(void *arg)
{
    uint64_t *out = arg;
    unsigned c = nd_class_of(GC_SIZE);
    nodal_free(nodal_malloc(GC_SIZE));   /* the class's bin set up */
    nd_tcache *tc = nd_tls_tc;
    uint64_t req0 = gc_class_count(c, false), free0 = gc_class_count(c, true);
    uint64_t fills0 = nd_load_relaxed(&nd_bin_info_of(tc, c)->counts.fills);
    void *held[GC_N];
    uint64_t passes = 0, mallocs = 0, frees = 0, halved = 0;
    for (int loop = 0; loop < GC_LOOPS; loop++) {
        int at_malloc = (loop * 7) % (GC_N + 1), at_free = (loop * 5) % (GC_N + 1);
        for (int i = 0; i < GC_N; i++) {
            if (i == at_malloc && loop % 3 != 2) {
                uint32_t cap = nd_bin_info_of(tc, c)->cap;
                nd_tcache_gc(tc, false);
                passes++;
                halved += nd_bin_info_of(tc, c)->cap < cap;
            }
            held[i] = nodal_malloc(GC_SIZE);
            mallocs++;
            EXPECT(held[i] != NULL, "a block of %d bytes", GC_SIZE);
            memset(held[i], (loop + i) & 0xff, GC_SIZE);
        }
        if (at_malloc == GC_N && loop % 3 != 2) {
            nd_tcache_gc(tc, false);
            passes++;
        }
        nd_bin *b = &tc->bins[c];
        for (void **q = b->cur; q < b->empty; q++)
            for (int i = 0; i < GC_N; i++)
                EXPECT(*q != held[i], "no block the loop holds in its bin (loop %d)", loop);
        for (int i = 0; i < GC_N; i++) {
            const unsigned char *m = held[i];
            for (int k = 0; k < GC_SIZE; k++)
                EXPECT(m[k] == ((loop + i) & 0xff), "block %d of loop %d intact after the passes, byte %d", i, loop, k);
        }
        for (int i = 0; i < GC_N; i++) {
            if (i == at_free && loop % 2 == 0) {
                nd_tcache_gc(tc, false);
                passes++;
            }
            nodal_free(held[(i * 5) % GC_N]);
            frees++;
        }
        EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold after loop %d", loop);
    }
    EXPECT(gc_class_count(c, false) - req0 == mallocs && gc_class_count(c, true) - free0 == frees,
           "the class's requests and frees counted exactly: %llu and %llu, counted %llu and %llu",
           (unsigned long long)mallocs, (unsigned long long)frees,
           (unsigned long long)(gc_class_count(c, false) - req0), (unsigned long long)(gc_class_count(c, true) - free0));
    /* Every block home: the pages of the last loop's blocks hand none out. */
    nd_tcache_flush_all(tc);
    nd_tcache_xfer_sweep(tc, 0, true);
    for (int i = 0; i < GC_N; i++) {
        nd_page *pg = nd_page_of(nd_seg_base(held[i]), held[i]);
        EXPECT(!pg->in_use || pg->cls != c || pg->used == 0,
               "no block of the class out of its page once all is freed and flushed, %u are", pg->used);
    }
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold");
    out[0] = passes;
    out[1] = nd_load_relaxed(&nd_bin_info_of(tc, c)->counts.fills) - fills0;
    out[2] = halved;
    return NULL;
}

static void gc_passes_amid_a_bins_loops_cost_fills_only(void)
{
    uint64_t out[3];
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, gc_amid_loops, out) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    printf("%llu GC passes amid %d loops of %d blocks: %llu fills, the bin halved %llu times\n",
           (unsigned long long)out[0], GC_LOOPS, GC_N, (unsigned long long)out[1], (unsigned long long)out[2]);
    EXPECT(out[0] > 1000 && out[1] > 0, "passes that flushed the bin while its loop ran (%llu passes, %llu fills)",
           (unsigned long long)out[0], (unsigned long long)out[1]);
}

/* A new page of a heap takes a free page whose memory is still resident
   (freed lately, waiting for its purge) before one that would be faulted
   in fresh (heap.c: nd_heap_pick_page): pages of one class freed and
   purged, pages of another freed and not yet purged, then a third class
   gets a page: one of the resident ones. */
static void *reuse_resident_pages(void *arg)
{
    (void)arg;
    enum { N = 200 };
    static void *a[N], *b[N];
    for (int i = 0; i < N; i++)
        a[i] = nodal_malloc(1000);   /* about 3 pages of 64 KiB */
    for (int i = 0; i < N; i++)
        b[i] = nodal_malloc(1500);
    nd_tcache *tc = nd_tls_tc;
    nd_heap *h = &tc->heap;
    for (int i = 0; i < N; i++)
        nodal_free(a[i]);
    nd_tcache_flush_all(tc);
    nd_tcache_xfer_sweep(tc, 0, true);   /* and the transfer store: with transfer=2 own blocks wait there too */
    nd_heap_retire_kept(h);      /* emptied pages kept for their class go back to the segment (heap.h) */
    nd_heap_purge(h, 0, true);   /* a's pages: free, their memory returned */
    for (int i = 0; i < N; i++)
        nodal_free(b[i]);
    nd_tcache_flush_all(tc);     /* b's pages: free, their memory still there */
    nd_tcache_xfer_sweep(tc, 0, true);
    nd_heap_retire_kept(h);
    nd_segment *s = nd_seg_base(b[0]);
    EXPECT(s->owner == h, "the pages to be in this thread's segment");
    uint64_t resident_free = 0;
    for (unsigned i = 1; i < s->page_count; i++)
        if (((s->free_mask >> i) & 1) && ((s->committed >> i) & 1))
            resident_free |= (uint64_t)1 << i;
    void *c = nodal_malloc(3000);
    EXPECT(c != NULL && nd_seg_base(c) == s, "the new page to come from the same segment");
    unsigned at = nd_seg_page_index(s, nd_page_of(s, c));
    EXPECT(resident_free == 0 || ((resident_free >> at) & 1),
           "the new page (%u) to be one whose memory was resident (mask %#llx)", at,
           (unsigned long long)resident_free);
    EXPECT(resident_free != 0, "freed pages to wait for their purge with their memory (mask 0)");
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold");
    nodal_free(c);
    return NULL;
}

static void a_new_page_reuses_resident_memory_first(void)
{
    in_a_new_thread(reuse_resident_pages);
}

/* Frees every block of a[0..n) in segment s but the first one found:
   its index. */
static int free_all_but_one_in(void *const *a, int n, const nd_segment *s)
{
    int kept = -1;
    for (int i = 0; i < n; i++)
        if (nd_seg_base(a[i]) == s) {
            if (kept >= 0)
                nodal_free(a[i]);
            else
                kept = i;
        }
    return kept;
}

/* The resident free pages of any of a heap's segments come before a page
   that would be faulted in fresh, not only those of the first segment on
   its queue (heap.c: nd_heap_pick_segment): segment A, first on the
   queue, has free pages whose memory was returned; segment B, behind it,
   has free pages still resident; a new page of another class goes to B. */
static void *reuse_resident_pages_of_any_segment(void *arg)
{
    (void)arg;
    enum { MAX = 12000 };
    static void *a[MAX];
    int n = 0;
    nd_segment *first = NULL, *second = NULL;
    size_t in_second = 0;
    /* Blocks of 1000 B until the heap works in a second segment, and eight
       pages of it are taken (65 blocks a page). */
    while (n < MAX && in_second < 8 * 65) {
        a[n] = nodal_malloc(1000);
        EXPECT(a[n] != NULL, "malloc(1000) to succeed");
        nd_segment *s = nd_seg_base(a[n]);
        if (first == NULL)
            first = s;
        else if (s != first && second == NULL)
            second = s;
        if (s == second)
            in_second++;
        n++;
    }
    EXPECT(second != NULL, "the blocks to fill a segment and go on into a second");
    nd_tcache *tc = nd_tls_tc;
    nd_heap *h = &tc->heap;
    /* Every block of the first segment but one freed, and its free pages
       purged; then those of the second, which stay resident. */
    int keep_first = free_all_but_one_in(a, n, first);
    nd_tcache_flush_all(tc);
    nd_tcache_xfer_sweep(tc, 0, true);   /* with transfer=2 own blocks may wait in the store */
    nd_heap_retire_kept(h);   /* emptied pages kept for their class go back to their segment (heap.h) */
    nd_heap_purge(h, 0, true);
    int keep_second = free_all_but_one_in(a, n, second);
    nd_tcache_flush_all(tc);
    nd_tcache_xfer_sweep(tc, 0, true);
    nd_heap_retire_kept(h);
    uint64_t first_resident = 0, second_resident = 0;
    for (unsigned i = 1; i < 64; i++) {
        if (((first->free_mask >> i) & 1) && ((first->committed >> i) & 1))
            first_resident |= (uint64_t)1 << i;
        if (((second->free_mask >> i) & 1) && ((second->committed >> i) & 1))
            second_resident |= (uint64_t)1 << i;
    }
    EXPECT(h->avail[0].first == first && first->free_mask != 0 && first_resident == 0,
           "the first segment to lead the queue with free pages, none resident (resident mask %#llx)",
           (unsigned long long)first_resident);
    EXPECT(second_resident != 0, "the second segment's freed pages to wait for their purge with their memory");
    void *c = nodal_malloc(3000);
    EXPECT(c != NULL && nd_seg_base(c) == second,
           "the new page to come from the segment with resident free pages (%p, not %p)",
           (void *)nd_seg_base(c), (void *)second);
    unsigned at = nd_seg_page_index(second, nd_page_of(second, c));
    EXPECT((second_resident >> at) & 1, "the new page (%u) to be one whose memory was resident (mask %#llx)", at,
           (unsigned long long)second_resident);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold");
    nodal_free(c);
    for (int i = 0; i < n; i++)
        if ((nd_seg_base(a[i]) != first && nd_seg_base(a[i]) != second) || i == keep_first || i == keep_second)
            nodal_free(a[i]);
    return NULL;
}

static void a_new_page_reuses_resident_memory_of_any_segment_first(void)
{
    in_a_new_thread(reuse_resident_pages_of_any_segment);
}

/* ---- kept pages (heap.h) ---------------------------------------------------- */

/* Batches of 900 blocks of 4 KiB: 57 pages, and the few more a bin's
   fills carve past them, within the 4 MiB a heap keeps (ND_HEAP_KEPT_MAX;
   bench/micro's batches of 1,000 span 65 with those). */
enum { KEEP_N = 900, KEEP_SIZE = 4096, KEEP_MAX_PAGES = 80 };

/* Where pg is in set[0..n), or -1. */
static int page_at(const nd_page *pg, nd_page *const *set, int n)
{
    for (int k = 0; k < n; k++)
        if (set[k] == pg)
            return k;
    return -1;
}

static bool page_in(const nd_page *pg, nd_page *const *set, int n) { return page_at(pg, set, n) >= 0; }

/* Takes n blocks of KEEP_SIZE into a[] and notes the pages they are in
   (pages[0..*np), each once); false if a block is in none of the pages
   of `only` (when only != NULL). */
static bool take_batch(void **a, int n, nd_page **pages, int *np, nd_page *const *only, int nonly)
{
    bool all_in = true;
    for (int i = 0; i < n; i++) {
        a[i] = nodal_malloc(KEEP_SIZE);
        EXPECT(a[i] != NULL, "malloc(%d) to succeed", KEEP_SIZE);
        memset(a[i], 0x5a, 64);
        nd_page *pg = nd_page_of(nd_seg_base(a[i]), a[i]);
        if (!page_in(pg, pages, *np) && *np < KEEP_MAX_PAGES)
            pages[(*np)++] = pg;
        if (only != NULL)
            all_in &= page_in(pg, only, nonly);
    }
    return all_in;
}

/* Frees a[from..n) and sends every block home to its page (the thread
   cache and the transfer stores emptied). */
static void free_batch(void **a, int from, int n)
{
    for (int i = from; i < n; i++)
        nodal_free(a[i]);
    nd_tcache *tc = nd_tls_tc;
    nd_tcache_flush_all(tc);
    nd_tcache_xfer_sweep(tc, 0, true);
}

/* How many of pages[0..n) are still set up for class cls in heap h (in
   use, its, of the class, their segment's page not free). */
static int pages_still_set_up(nd_page *const *pages, int n, const nd_heap *h, unsigned cls)
{
    int up = 0;
    for (int i = 0; i < n; i++) {
        nd_segment *s = nd_seg_base(pages[i]);
        unsigned at = nd_seg_page_index(s, pages[i]);
        up += pages[i]->in_use && pages[i]->heap == h && pages[i]->cls == cls && !((s->free_mask >> at) & 1);
    }
    return up;
}

/* A heap that cycles whole pages of a class (bench/micro -m batch -s
   4096: blocks of 4 KiB, all freed, again and again) keeps each page it
   empties set up for the class, and takes those again before any new
   page: after every round's frees the class's pages are those of the
   first round, every one still set up, and every later round's blocks
   are in them (until h60r, all but the last page of the class went back
   to their segment at every round, and were set up again at the next). */
static void *cycle_whole_pages(void *arg)
{
    (void)arg;
    static void *a[KEEP_N];
    static nd_page *first[KEEP_MAX_PAGES], *set[KEEP_MAX_PAGES], *later[KEEP_MAX_PAGES];
    int nfirst = 0, nset = 0;
    unsigned cls = nd_class_of(KEEP_SIZE);
    take_batch(a, KEEP_N, first, &nfirst, NULL, 0);
    nd_heap *h = &nd_tls_tc->heap;   /* (the thread's cache: set up by its first malloc) */
    EXPECT(nfirst >= 50 && nfirst < KEEP_MAX_PAGES, "the batch to span about 57 pages, got %d", nfirst);
    free_batch(a, 0, KEEP_N);
    for (nd_page *pg = h->pages[cls].first; pg != NULL && nset < KEEP_MAX_PAGES; pg = pg->next)
        set[nset++] = pg;
    EXPECT(nset >= nfirst && pages_still_set_up(first, nfirst, h, cls) == nfirst,
           "every page emptied to stay set up for its class: %d of %d did (%d pages of the class)",
           pages_still_set_up(first, nfirst, h, cls), nfirst, nset);
    EXPECT(h->kept_bytes >= (size_t)(nset - 1) * ND_SMALL_PAGE_SIZE && h->kept_bytes <= ND_HEAP_KEPT_MAX,
           "the heap to count its kept pages (%zu bytes for %d pages)", h->kept_bytes, nset);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold with pages kept");
    for (int round = 1; round <= 4; round++) {
        int nlater = 0;
        bool in_set = take_batch(a, KEEP_N, later, &nlater, set, nset);
        EXPECT(in_set, "round %d: every block to come from the pages of the first round (no page set up again)",
               round);
        EXPECT(nd_thread_is_valid(), "round %d: the heap invariants to hold", round);
        free_batch(a, 0, KEEP_N);
        EXPECT(pages_still_set_up(set, nset, h, cls) == nset && h->pages[cls].count == (size_t)nset,
               "round %d: every page emptied to stay set up for its class: %d of %d did (%zu pages of the class)",
               round, pages_still_set_up(set, nset, h, cls), nset, h->pages[cls].count);
    }
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after the rounds");
    return NULL;
}

static void a_heap_cycling_whole_pages_of_a_class_sets_each_page_up_once(void)
{
    in_a_new_thread(cycle_whole_pages);
}

/* A flush's run that gives a page of the heap's own every block it has
   out, where the page then drops its blocks (kept, recarved from its start
   when next used, or retired), writes no free-list link into them: the
   page never reads them. A run that falls short of the blocks out (one of
   the page's blocks still live) links them all after all, and those links
   hold: the blocks come back from the page's free list, every link
   checked, and the heap stays valid (tcache.c, nd_tcache_flush_page). Run
   with transfer=0: the bin's overflows go home, not to the store. Blocks
   of 2 KiB (no nursery), 32 a page. */
enum { WR_SIZE = 2048, WR_N = 512, WR_PAGES = 24 };
static const uint64_t wr_word = 0x5a5a5a5a5a5a5a5aull;

static void *whole_runs(void *arg)
{
    (void)arg;
    static void *a[WR_N];
    static nd_page *pages[WR_PAGES];
    static int live_in[WR_PAGES];
    int np = 0;
    for (int i = 0; i < WR_N; i++) {
        a[i] = nodal_malloc(WR_SIZE);
        EXPECT(a[i] != NULL, "malloc(%d) to succeed", WR_SIZE);
        memcpy(a[i], &wr_word, sizeof wr_word);
        nd_page *pg = nd_page_of(nd_seg_base(a[i]), a[i]);
        if (!page_in(pg, pages, np) && np < WR_PAGES)
            pages[np++] = pg;
    }
    EXPECT(np >= 16 && np < WR_PAGES, "the blocks to span about 16 pages, got %d", np);
    /* One block stays live in every other page. */
    for (int i = 0; i < WR_N; i++) {
        int k = page_at(nd_page_of(nd_seg_base(a[i]), a[i]), pages, np);
        if (k >= 0 && k % 2 == 1 && live_in[k] == 0) {
            live_in[k] = 1;
            continue;
        }
        nodal_free(a[i]);
        a[i] = NULL;
    }
    nd_tcache *tc = nd_tls_tc;
    nd_tcache_flush_all(tc);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after the flushes");
    nd_heap *h = &tc->heap;
    unsigned cls = nd_class_of(WR_SIZE);
    int dropped_unlinked = 0, linked = 0;
    for (int k = 0; k < np; k++) {
        nd_page *pg = pages[k];
        bool dropped = !pg->in_use || pg->heap != h || pg->cls != cls || pg->kept;
        if (live_in[k]) {
            EXPECT(!dropped && pg->used == 1, "page %d, one block live, to stay in use with that block out (used %u)",
                   k, (unsigned)pg->used);
            linked += pg->free != NULL;
            continue;
        }
        if (!dropped)
            continue;   /* (the class's last page keeps its list) */
        /* Kept or retired: its blocks' first words are the program's,
           unless an earlier overflow sent some of them home first. */
        bool intact = true;
        for (uint8_t *b = pg->start; b < pg->start + ND_SMALL_PAGE_SIZE / WR_SIZE * (size_t)WR_SIZE && intact;
             b += WR_SIZE)
            intact = memcmp(b, &wr_word, sizeof wr_word) == 0;
        dropped_unlinked += intact;
    }
    EXPECT(dropped_unlinked >= 1, "a page whose every block came back in one run to hold no link in them "
           "(%d of %d pages did)", dropped_unlinked, np);
    EXPECT(linked >= np / 2 - 1, "the pages with a block live to hold the others on their free lists (%d of %d)",
           linked, np / 2);
    /* Every block again, from the free lists first (each link checked as
       it is followed), then freed again, the live ones too. */
    static void *b[WR_N];
    for (int i = 0; i < WR_N; i++) {
        b[i] = nodal_malloc(WR_SIZE);
        EXPECT(b[i] != NULL, "malloc(%d) to succeed again", WR_SIZE);
        memset(b[i], 0x33, WR_SIZE);
    }
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold with the blocks taken again");
    for (int i = 0; i < WR_N; i++) {
        nodal_free(b[i]);
        if (a[i] != NULL)
            nodal_free(a[i]);
    }
    nd_tcache_flush_all(tc);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after every block went back");
    return NULL;
}

static void a_flush_links_a_pages_blocks_only_when_the_page_keeps_them(void)
{
    if (nd_opt(ND_OPT_transfer) != 0 || nd_secure_on())
        SKIP("run with transfer=0 and secure=0 (the bin's overflows go home)");
    in_a_new_thread(whole_runs);
}

/* Kept pages stay no longer than an empty page's memory would: a heap's
   maintenance retires those kept for the purge delay (and a few of its
   epochs), and their memory goes back to the OS at that same pass, not a
   delay later (one purge of their segment's free pages). One block of the
   batch stays, so that the segment stays the heap's. */
static void *age_kept_pages(void *arg)
{
    (void)arg;
    enum { N = 400 };
    static void *a[N];
    static nd_page *pages[KEEP_MAX_PAGES];
    int n = 0;
    unsigned cls = nd_class_of(KEEP_SIZE);
    take_batch(a, N, pages, &n, NULL, 0);
    nd_heap *h = &nd_tls_tc->heap;
    free_batch(a, 1, N);
    EXPECT(h->kept_bytes != 0, "the emptied pages to be kept");
    uint64_t now = nd_os_now_ms();
    nd_heap_maintain(h, now, false);
    EXPECT(h->kept_bytes != 0, "kept pages not to be retired before the purge delay");
    for (int i = 0; i < ND_PURGE_MIN_EPOCHS; i++)
        nd_heap_tick(h);
    nd_heap_maintain(h, now + (uint64_t)nd_opt(ND_OPT_purge_delay) + 1000, false);
    EXPECT(h->kept_bytes == 0 && h->kept_classes == 0, "every kept page to be retired past the purge delay (%zu bytes "
           "kept)", h->kept_bytes);
    int up = pages_still_set_up(pages, n, h, cls);
    EXPECT(up <= 1, "the emptied pages to be free again (the one with a block excepted), %d of %d set up", up, n);
    size_t resident = 0;
    int checked = 0;
    for (int i = 0; i < n; i++) {
        if (pages[i]->in_use || nd_seg_base(pages[i])->owner != h)
            continue;   /* (a segment left with no page in use went to the node's cache: its rules) */
        resident += page_resident(pages[i]);
        checked++;
    }
    EXPECT(checked >= n / 2, "most pages to stay in the heap's segment (%d of %d)", checked, n);
    EXPECT(resident == 0, "the retired pages' memory to be purged at the same pass: %zu OS pages resident", resident);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold");
    nodal_free(a[0]);
    return NULL;
}

static void kept_pages_past_the_purge_delay_are_retired_and_purged_at_one_pass(void)
{
    in_a_new_thread(age_kept_pages);
}

/* Resident OS pages of the pages of s whose bits are set in m and that
   are free in s. */
static size_t free_pages_resident(nd_segment *s, uint64_t m)
{
    size_t resident = 0;
    for (m &= s->free_mask; m != 0; m &= m - 1)
        resident += page_resident(&s->pages[__builtin_ctzll(m)]);
    return resident;
}

/* A segment whose pages keep being freed still gives back the pages freed
   first: each page's chunks wait a purge delay from their own free, not
   from the segment's latest (segment.h: purge_young), and two at most.
   The heap's clock is the test's: a batch's pages freed at t0, then pages
   set up and freed in the same segment every half delay until t0 + 3
   delays. At t0 + delay the batch's pages (those no step set up again)
   are purged, not the pages freed at that moment; two delays after the
   last free every page freed is. Until then every free put the whole
   segment's deadline off by a delay: nothing was purged while the frees
   went on (api.memory.a_chain_of_short_threads_purges_what_its_record_freed
   failed 1 run in 40-80 so on main 872dfa1). */
static void *purge_amid_steady_frees(void *arg)
{
    (void)arg;
    enum { N = 400, M = 40, STEPS = 6 };
    static void *a[N], *b[M];
    static nd_page *pages[KEEP_MAX_PAGES];
    int n = 0;
    take_batch(a, N, pages, &n, NULL, 0);
    nd_heap *h = &nd_tls_tc->heap;
    nd_segment *s = nd_seg_base(a[0]);   /* a[0] stays: the segment stays the heap's */
    uint64_t delay = (uint64_t)nd_opt(ND_OPT_purge_delay), t0 = nd_os_now_ms(), t = t0;
    free_batch(a, 1, N);
    h->clock_ms = t0;
    nd_heap_retire_kept(h);   /* the emptied pages back to their segment at t0, waiting for their purge */
    uint64_t batch = 0, stepped = 0;
    for (int i = 0; i < n; i++)
        if (nd_seg_base(pages[i]) == s)
            batch |= (uint64_t)1 << nd_seg_page_index(s, pages[i]);
    size_t first = free_pages_resident(s, batch);
    EXPECT(first >= 16, "the batch's freed pages to be resident before their purge (%zu OS pages)", first);
    for (int step = 1; step <= STEPS; step++) {
        t = t0 + (uint64_t)step * delay / 2;
        uint64_t before = ~s->free_mask;
        int nb = 0;
        take_batch(b, M, pages, &nb, NULL, 0);   /* past the free slots of a[0]'s page: new pages */
        uint64_t set_up = ~s->free_mask & ~before;   /* (a bin's fill may carve pages no block returned lies in) */
        EXPECT(set_up != 0, "the step's blocks to set up pages in the batch's segment (step %d)", step);
        batch &= ~set_up;   /* freed at t, not t0 */
        stepped |= set_up;
        free_batch(b, 0, M);
        h->clock_ms = t;
        nd_heap_retire_kept(h);   /* their pages back to the segment at t */
        for (int i = 0; i < ND_PURGE_MIN_EPOCHS; i++)
            nd_heap_tick(h);
        nd_heap_purge(h, t, false);
        EXPECT(nd_seg_is_valid(s), "the segment to stay valid (step %d)", step);
        if (step == 1)
            EXPECT(free_pages_resident(s, batch) != 0,
                   "nothing to be purged half a delay after the free (%zu of %zu OS pages resident)",
                   free_pages_resident(s, batch), first);
        if (step == 2) {
            EXPECT(batch != 0 && free_pages_resident(s, batch) == 0,
                   "the batch's pages (those no step set up again: %d) to be purged a delay after their free while "
                   "the segment's pages keep being freed: %zu of %zu OS pages resident", nd_popcount64(batch),
                   free_pages_resident(s, batch), first);
            EXPECT(free_pages_resident(s, set_up) != 0, "the pages freed at that moment not to be purged with them");
        }
    }
    for (int i = 0; i < ND_PURGE_MIN_EPOCHS; i++)
        nd_heap_tick(h);
    nd_heap_purge(h, t + delay, false);
    nd_heap_purge(h, t + 2 * delay, false);
    EXPECT(free_pages_resident(s, batch | stepped) == 0, "every page freed to be purged two delays after the last "
           "free: %zu OS pages resident", free_pages_resident(s, batch | stepped));
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold");
    nodal_free(a[0]);
    return NULL;
}

static void a_segment_whose_pages_keep_being_freed_purges_those_freed_a_delay_ago(void)
{
    in_a_new_thread(purge_amid_steady_frees);
}

/* ---- free blocks of pages in use given back (heap.c: nd_heap_purge_free_blocks) ---- */

/* FB_N blocks of FB_SIZE bytes (the 112 KiB class: four to a medium page),
   each filled with its index + 1; then three of every four freed, so that
   most pages keep a block in use and hold free ones too. */
enum { FB_N = 64, FB_SIZE = 100000 };
static unsigned char *fb_live[FB_N], *fb_freed[FB_N];

static void fb_fill_and_free(void)
{
    for (int i = 0; i < FB_N; i++) {
        fb_live[i] = nodal_malloc(FB_SIZE);
        EXPECT(fb_live[i] != NULL, "block %d to be allocated", i);
        memset(fb_live[i], i + 1, FB_SIZE);
        fb_freed[i] = NULL;
    }
    for (int i = 0; i < FB_N; i++)
        if (i % 4 != 0) {
            fb_freed[i] = fb_live[i];
            fb_live[i] = NULL;
            nodal_free(fb_freed[i]);
        }
}

/* The OS pages of freed block i past the one its start is on, resident;
   *pages (if not NULL): how many such OS pages it has. */
static size_t fb_tail_resident(int i, size_t *pages)
{
    uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE), b = (uintptr_t)fb_freed[i];
    uintptr_t lo = (b + 2 * sizeof(uintptr_t) + ps - 1) & ~(ps - 1), hi = (b + FB_SIZE) & ~(ps - 1);
    if (pages != NULL)
        *pages = (size_t)(hi - lo) / ps;
    return resident_pages((void *)lo, hi - lo);
}

/* The freed blocks whose page is still in use, their tails' resident OS
   pages (*resident) and all their tails' OS pages (*all). */
static int fb_freed_in_pages_in_use(size_t *resident, size_t *all)
{
    int n = 0;
    *resident = *all = 0;
    for (int i = 0; i < FB_N; i++) {
        if (fb_freed[i] == NULL)
            continue;
        const nd_page *pg = nd_page_of(nd_seg_base(fb_freed[i]), fb_freed[i]);
        if (!pg->in_use || pg->used == 0 || pg->kept)
            continue;
        size_t pages;
        *resident += fb_tail_resident(i, &pages);
        *all += pages;
        n++;
    }
    return n;
}

/* The live blocks still hold their bytes, and the freed ones their first
   16 bytes' mark (the page's free list runs through them). */
static void fb_check_contents(const char *when)
{
    int bad = 0;
    for (int i = 0; i < FB_N; i++) {
        if (fb_live[i] != NULL)
            for (size_t j = 0; j < FB_SIZE; j++)
                bad += fb_live[i][j] != (unsigned char)(i + 1);
        if (fb_freed[i] != NULL)
            bad += !nd_block_is_marked(fb_freed[i]);
    }
    EXPECT(bad == 0, "every live block's bytes and every freed block's mark to be intact %s (%d wrong)", when, bad);
}

/* The freed blocks allocated again: each writable whole, its page valid. */
static void fb_take_again_and_free(void)
{
    static unsigned char *again[FB_N];
    for (int i = 0; i < FB_N; i++) {
        again[i] = nodal_malloc(FB_SIZE);
        EXPECT(again[i] != NULL, "block %d to be allocated again", i);
        memset(again[i], 0x77, FB_SIZE);
    }
    int bad = 0;
    for (int i = 0; i < FB_N; i++)
        for (size_t j = 0; j < FB_SIZE; j += 512)
            bad += again[i][j] != 0x77;
    EXPECT(bad == 0, "the blocks taken again to hold what was written to them (%d wrong)", bad);
    for (int i = 0; i < FB_N; i++)
        fb_freed[i] = NULL;   /* (in use again, some of them among `again`) */
    fb_check_contents("once the freed blocks are in use again");
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold with the purged blocks in use again");
    for (int i = 0; i < FB_N; i++) {
        nodal_free(again[i]);
        nodal_free(fb_live[i]);
        fb_live[i] = fb_freed[i] = NULL;
    }
}

/* Three of every four 100,000-byte blocks freed, each page keeping one in
   use: the free ones sent home to their pages (the cache's bins flushed,
   the transfer store's blocks sent back), the heap's first maintenance
   pass after that gives nothing back (they were freed since the last
   one), the next gives back every OS page of theirs past their first
   (their mark and link stay), once; the live blocks keep their bytes and
   the heap stays valid, before and after the freed blocks are taken again.
   On main 1103851 every page of those blocks stayed resident for as long
   as their pages had a block in use (bench: 60 of 80 MiB kept). */
static void *free_blocks_given_back_after_two_passes(void *arg)
{
    (void)arg;
    fb_fill_and_free();
    nd_tcache *tc = nd_tls_tc;   /* (the thread's own since its first malloc) */
    nd_heap *h = &tc->heap;
    nd_tcache_gc(tc, true);
    nd_tcache_xfer_give_back(tc);   /* (a forced sweep would purge them on the way: tcache.c, nd_tcache_xfer_empty) */
    size_t resident, all;
    int n = fb_freed_in_pages_in_use(&resident, &all);
    EXPECT(n >= FB_N / 2, "most freed blocks to lie in pages still in use (%d of %d)", n, FB_N * 3 / 4);
    EXPECT(resident == all && all != 0, "the freed blocks to be resident before any pass (%zu of %zu OS pages)",
           resident, all);
    uint64_t purged = nd_load_relaxed(&nd_gauge.free_blocks_purged), t = h->clock_ms + 1000;
    uint64_t delay = (uint64_t)nd_opt(ND_OPT_purge_delay);
    nd_heap_maintain(h, t, false);
    fb_freed_in_pages_in_use(&resident, &all);
    EXPECT(resident == all, "the first pass after their free to give back none of their pages (%zu of %zu resident)",
           resident, all);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after the first pass");
    nd_heap_maintain(h, t + delay, false);
    fb_freed_in_pages_in_use(&resident, &all);
    EXPECT(resident == 0, "the second pass to give back every OS page of theirs past the first (%zu of %zu resident)",
           resident, all);
    uint64_t now_purged = nd_load_relaxed(&nd_gauge.free_blocks_purged);
    EXPECT(now_purged - purged >= (uint64_t)n, "the statistic to count them (%llu, %d blocks)",
           (unsigned long long)(now_purged - purged), n);
    nd_heap_maintain(h, t + 2 * delay, false);
    EXPECT(nd_load_relaxed(&nd_gauge.free_blocks_purged) == now_purged, "a block to be given back once (%llu more)",
           (unsigned long long)(nd_load_relaxed(&nd_gauge.free_blocks_purged) - now_purged));
    int walked = 0;
    for (int i = 0; i < FB_N; i++)
        if (fb_freed[i] != NULL)
            walked += nd_page_of(nd_seg_base(fb_freed[i]), fb_freed[i])->free_pushed;
    EXPECT(walked == 0, "the pages whose lists did not grow since a pass not to be walked again (%d are)", walked);
    fb_check_contents("after the passes");
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after the passes");
    fb_take_again_and_free();
    return NULL;
}

static void free_blocks_of_pages_in_use_give_their_memory_back_after_a_delay(void)
{
    in_a_new_thread(free_blocks_given_back_after_two_passes);
}

/* The same blocks, then a forced collect (nodal_collect(1), as malloc_trim
   does): their pages past the first go back at once. */
static void *free_blocks_given_back_by_a_forced_collect(void *arg)
{
    (void)arg;
    fb_fill_and_free();
    nodal_collect(1);
    size_t resident, all;
    int n = fb_freed_in_pages_in_use(&resident, &all);
    EXPECT(n >= FB_N / 2 && resident == 0, "a forced collect to give back the freed blocks' OS pages past their first "
           "(%d blocks in pages in use: %zu of %zu OS pages resident)", n, resident, all);
    fb_check_contents("after the collect");
    fb_take_again_and_free();
    return NULL;
}

static void free_blocks_of_pages_in_use_give_their_memory_back_at_a_forced_collect(void)
{
    in_a_new_thread(free_blocks_given_back_by_a_forced_collect);
}

/* A thread that exits leaves its record pooled for the next thread
   (thread.c), its partly used pages with it, for up to 10 purge delays. A
   record pooled with more than ND_HEAP_KEPT_MAX (4 MiB) of free blocks on
   those pages' lists gives back their memory at the exit, as a forced
   collect does (heap.c: nd_heap_trim); with less, they wait for the next
   thread (warm). A worker of bench/idlewait freeing 600 of 800 blocks of
   100,000 B before it exited left 18.5 MiB resident 300 ms later on main
   9475a2a (6.7 now). Run with purge_delay=3600000: no pass purges in
   between, and the record waits. */
/* n blocks of size bytes into b[], each filled with its index plus one. */
static void alloc_written(unsigned char **b, int n, size_t size)
{
    for (int i = 0; i < n; i++) {
        b[i] = nodal_malloc(size);
        EXPECT(b[i] != NULL, "block %d to be allocated", i);
        memset(b[i], i + 1, size);
    }
}

/* The blocks of b[] (NULL ones skipped) of size bytes none of whose OS
   pages past the first is resident (their memory given back). */
static int blocks_given_back(unsigned char *const *b, int n, size_t size)
{
    uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE);
    int count = 0;
    for (int i = 0; i < n; i++) {
        if (b[i] == NULL)
            continue;
        uintptr_t a = (uintptr_t)b[i];
        uintptr_t lo = (a + 2 * sizeof(uintptr_t) + ps - 1) & ~(ps - 1), hi = (a + size) & ~(ps - 1);
        count += resident_pages((void *)lo, hi - lo) == 0;
    }
    return count;
}

enum { EX_N = 320, EX_SIZE = 100000 };
static unsigned char *ex_live[EX_N], *ex_freed[EX_N];
static int ex_free_count;

static void *exit_after_freeing(void *arg)
{
    (void)arg;
    alloc_written(ex_live, EX_N, EX_SIZE);
    memset(ex_freed, 0, sizeof ex_freed);
    for (int i = 0, n = 0; i < EX_N && n < ex_free_count; i++)
        if (i % 4 != 0) {
            ex_freed[i] = ex_live[i];
            ex_live[i] = NULL;
            nodal_free(ex_freed[i]);
            n++;
        }
    return NULL;
}

/* The freed blocks whose OS pages past their first are none resident. */
static int ex_given_back(void)
{
    return blocks_given_back(ex_freed, EX_N, EX_SIZE);
}

static void ex_check_and_free_the_live(void)
{
    int bad = 0;
    for (int i = 0; i < EX_N; i++)
        if (ex_live[i] != NULL) {
            for (size_t j = 0; j < EX_SIZE; j += 512)
                bad += ex_live[i][j] != (unsigned char)(i + 1);
            nodal_free(ex_live[i]);
        }
    EXPECT(bad == 0, "every block the thread left to keep its bytes (%d wrong)", bad);
}

static void a_record_pooled_with_much_free_memory_in_its_pages_gives_it_back(void)
{
    if (nd_opt(ND_OPT_purge_delay) < 1000000 || nd_opt(ND_OPT_secure) != 0 || nd_opt(ND_OPT_check) >= 2)
        SKIP("made for purge_delay=3600000, without secure or check=2");
    /* Under the bound: 20 blocks freed (2 MB), kept for the next thread. */
    ex_free_count = 20;
    uint64_t purged = nd_load_relaxed(&nd_gauge.free_blocks_purged);
    in_a_new_thread(exit_after_freeing);
    EXPECT(nd_load_relaxed(&nd_gauge.free_blocks_purged) == purged, "a record pooled with 2 MB of free blocks to "
           "keep them, %llu were given back", (unsigned long long)(nd_load_relaxed(&nd_gauge.free_blocks_purged) - purged));
    ex_check_and_free_the_live();
    /* Past it: 240 blocks freed (24 MB), some held by the transfer store
       and the bins, the rest on their pages' lists. */
    ex_free_count = EX_N;
    purged = nd_load_relaxed(&nd_gauge.free_blocks_purged);
    in_a_new_thread(exit_after_freeing);
    uint64_t now = nd_load_relaxed(&nd_gauge.free_blocks_purged) - purged;
    int back = ex_given_back();
    EXPECT(now >= 120 && back >= 120, "a record pooled with 24 MB of free blocks to give back most of them: %llu "
           "counted, %d of 240 with no OS page resident past their first", (unsigned long long)now, back);
    ex_check_and_free_the_live();
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold");
}

/* A thread that freed memory and exited: its record waits pooled for up to
   10 purge delays (thread.c: ND_POOL_WAIT), and the memory its thread
   freed goes back a purge delay after the frees all the same, by the
   passes other threads give pooled records (thread.c: nd_thread_pool_age,
   heap.c: nd_heap_idle_purge), not when the record is taken apart. On main
   047e048 the freed blocks stayed resident for the record's whole wait
   (bench/idlewait: 5.5 MiB 300 ms after the worker's exit, 2.6-2.8 now;
   glibc 2.0). transfer=0: the frees go to their pages, not to the store,
   whose sweep purges what it sends home on its own. The thread keeps its
   first block, so its segment stays its heap's, and leaves 16 for this
   thread to free after its exit (remote frees into the pooled record's
   pages, while passes run: under TSan too). */
enum { IP_N = 64, IP_SIZE = 100000, IP_HANDED = 32 };
static unsigned char *ip_blocks[IP_N];

static void *free_all_but_one_and_exit(void *arg)
{
    (void)arg;
    alloc_written(ip_blocks, IP_N, IP_SIZE);
    for (int i = 1; i < IP_N; i++)
        if (i < IP_HANDED || i >= IP_HANDED + 16)
            nodal_free(ip_blocks[i]);
    return NULL;
}

/* The freed blocks (1..IP_N-1) none of whose OS pages past the first is
   resident. */
static int ip_given_back(void)
{
    return blocks_given_back(ip_blocks + 1, IP_N - 1, IP_SIZE);
}

static size_t ip_pooled(void)
{
    static nd_snap_class cls[ND_CLASS_COUNT];
    static nd_snap_totals tot;
    static nd_snap_tier tier_from[ND_TIER_COUNT][ND_MAX_NODES];
    size_t threads = 0, pooled = 0;
    nd_thread_stats_sum(cls, &tot, tier_from, &threads, &pooled, NULL, NULL);
    return pooled;
}

/* The cases of this section run with purge_delay=200 and transfer=0. */
static void ip_skip_unless_made_for(void)
{
    long delay = nd_opt(ND_OPT_purge_delay);
    if (delay < 100 || delay > 1000 || nd_opt(ND_OPT_transfer) != 0 || nd_opt(ND_OPT_secure) != 0 ||
        nd_opt(ND_OPT_check) >= 2)
        SKIP("made for purge_delay=200 and transfer=0, without secure or check=2");
}

/* This thread works on (small requests, as a program's main thread would:
   its maintenance passes run) until the memory of IP_N - 8 of the blocks
   1..IP_N-1 went back, or `delays` purge delays passed: how many went back,
   and (*took) after how many ms. */
static int ip_work_until_given_back(unsigned delays, uint64_t *took)
{
    uint64_t t0 = nd_os_now_ms(), until = t0 + delays * (uint64_t)nd_opt(ND_OPT_purge_delay);
    int back = ip_given_back();
    while (back < IP_N - 8 && nd_os_now_ms() < until) {
        for (int i = 0; i < 1000; i++) {
            volatile char *p = nodal_malloc(64);
            EXPECT(p != NULL, "a small block to be allocated");
            p[0] = (char)i;
            nodal_free((void *)p);
        }
        usleep(2000);
        back = ip_given_back();
    }
    *took = nd_os_now_ms() - t0;
    return back;
}

/* Block 0, which its thread kept: its bytes as alloc_written left them;
   then freed. */
static void ip_check_and_free_the_kept_block(const char *what)
{
    for (size_t j = 0; j < IP_SIZE; j += 4096)
        EXPECT(ip_blocks[0][j] == 1, "%s to keep its bytes", what);
    nodal_free(ip_blocks[0]);
}

static void a_pooled_records_freed_memory_goes_back_a_purge_delay_after_the_frees(void)
{
    ip_skip_unless_made_for();
    nodal_free(nodal_malloc(64));   /* this thread's own record: it does not take the one pooled below */
    size_t pooled = ip_pooled();
    in_a_new_thread(free_all_but_one_and_exit);
    EXPECT(ip_pooled() == pooled + 1, "the exited thread's record to be pooled");
    for (int i = IP_HANDED; i < IP_HANDED + 16; i++)
        nodal_free(ip_blocks[i]);
    /* Its maintenance passes give the pooled record its passes; up to 5
       purge delays: the record is taken apart after 10. */
    uint64_t took;
    int back = ip_work_until_given_back(5, &took);
    EXPECT(back >= IP_N - 8, "the memory of at least %d of the %d blocks the exited thread freed to be given back "
           "within 5 purge delays of its exit (%d were, after %llu ms)", IP_N - 8, IP_N - 1, back,
           (unsigned long long)took);
    size_t pooled_now = ip_pooled();
    EXPECT(pooled_now == pooled + 1, "the record to be still pooled (not taken apart) when they were: %zu pooled, %zu before", pooled_now, pooled);
    ip_check_and_free_the_kept_block("the block the thread kept");
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold");
}

/* A live thread that freed memory and then sleeps (a worker of a pool
   waiting on its queue) makes no maintenance pass of its own; after
   ND_SWEEP_IDLE_DELAYS purge delays another thread's maintenance sweeps
   its heap (heap.h: nd_heap_sweep_idle): the pages it emptied, its kept
   pages, its spare segments and its pending purges go back to the OS
   while it sleeps, and it allocates again as before once it wakes. On
   047e048 the memory stayed until the thread ran again (bench/idlewait:
   15.0 MiB resident while the worker waited, 2.5-2.7 now; glibc 2.0).
   transfer=0, as above. */
static sem_t sl_freed, sl_wake;

static void *free_then_sleep_then_work(void *arg)
{
    (void)arg;
    alloc_written(ip_blocks, IP_N, IP_SIZE);
    for (int i = 1; i < IP_N; i++)
        nodal_free(ip_blocks[i]);
    sem_post(&sl_freed);
    while (sem_wait(&sl_wake) != 0)
        ;
    /* Awake: its heap, swept meanwhile, serves it as before. */
    static unsigned char *again[IP_N];
    alloc_written(again, IP_N, IP_SIZE);
    int bad = 0;
    for (int i = 0; i < IP_N; i++) {
        for (size_t j = 0; j < IP_SIZE; j += 4096)
            bad += again[i][j] != (unsigned char)(i + 1);
        nodal_free(again[i]);
    }
    EXPECT(bad == 0, "the blocks the thread took after its sweep to keep their bytes (%d wrong)", bad);
    ip_check_and_free_the_kept_block("the block the thread kept through the sweep");
    EXPECT(nd_thread_is_valid(), "the swept thread's heap invariants to hold");
    return NULL;
}

static void a_sleeping_threads_freed_memory_goes_back_while_it_sleeps(void)
{
    ip_skip_unless_made_for();
    if (!nd_os_barrier_all())
        SKIP("no membarrier(2) here: idle heaps are not swept");
    nodal_free(nodal_malloc(64));   /* this thread's own record */
    sem_init(&sl_freed, 0, 0);
    sem_init(&sl_wake, 0, 0);
    uint64_t swept = nd_load_relaxed(&nd_gauge.idle_heaps_swept);
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, free_then_sleep_then_work, NULL) == 0, "pthread_create to work");
    while (sem_wait(&sl_freed) != 0)
        ;
    /* Its maintenance looks for idle threads once a purge delay; up to 10
       purge delays: the sleeper is idle after 5. */
    uint64_t took;
    int back = ip_work_until_given_back(10, &took);
    EXPECT(back >= IP_N - 8, "the memory of at least %d of the %d blocks the sleeping thread freed to be given back "
           "within 10 purge delays (%d were, after %llu ms)", IP_N - 8, IP_N - 1, back, (unsigned long long)took);
    EXPECT(took >= 4 * (uint64_t)nd_opt(ND_OPT_purge_delay), "not before the thread was idle for 5 purge delays (%llu ms)",
           (unsigned long long)took);
    EXPECT(nd_load_relaxed(&nd_gauge.idle_heaps_swept) > swept, "idle_heaps_swept to count the sweep");
    sem_post(&sl_wake);
    pthread_join(t, NULL);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold");
}

/* Threads that go quiet for a few purge delays and wake again while the
   main thread's maintenance sweeps the idle ones: the owner's calls into
   its heap and the sweeps exclude each other (heap.h: depth, busy,
   sweep), whichever comes first, under TSan too. purge_delay=2: idle after
   10 ms. Each round a thread fills and checks a set of blocks of mixed
   sizes, frees some, then sleeps 0-30 ms. */
enum { SW_THREADS = 3, SW_ROUNDS = 60, SW_N = 48 };

static void *sweep_race_worker(void *arg)
{
    uint64_t rng = (uint64_t)(uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;
    unsigned char *b[SW_N] = { 0 }, tag[SW_N] = { 0 };
    size_t sz[SW_N] = { 0 };
    int bad = 0;
    for (int r = 0; r < SW_ROUNDS; r++) {
        for (int i = 0; i < SW_N; i++) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            if (b[i] != NULL) {
                for (size_t j = 0; j < sz[i]; j += 512)
                    bad += b[i][j] != tag[i];
                bad += b[i][sz[i] - 1] != tag[i];
                if (rng & 1) {
                    nodal_free(b[i]);
                    b[i] = NULL;
                }
            }
            if (b[i] == NULL) {
                sz[i] = (size_t)16 << ((rng >> 8) % 14);   /* 16 B-128 KiB */
                b[i] = nodal_malloc(sz[i]);
                EXPECT(b[i] != NULL, "a block of %zu bytes", sz[i]);
                tag[i] = (unsigned char)(rng >> 32);
                memset(b[i], tag[i], sz[i]);
            }
        }
        usleep((useconds_t)((rng >> 20) % 30000));   /* 0-30 ms: idle past 10 ms */
    }
    for (int i = 0; i < SW_N; i++)
        nodal_free(b[i]);
    EXPECT(bad == 0, "a worker's live blocks to keep their bytes through the sweeps (%d wrong)", bad);
    EXPECT(nd_thread_is_valid(), "a worker's heap invariants to hold");
    return NULL;
}

static void threads_that_sleep_and_wake_while_idle_heaps_are_swept_stay_valid(void)
{
    if (nd_opt(ND_OPT_purge_delay) != 2 || nd_opt(ND_OPT_secure) != 0 || nd_opt(ND_OPT_check) >= 2)
        SKIP("made for purge_delay=2, without secure or check=2");
    if (!nd_os_barrier_all())
        SKIP("no membarrier(2) here: idle heaps are not swept");
    uint64_t swept = nd_load_relaxed(&nd_gauge.idle_heaps_swept);
    pthread_t t[SW_THREADS];
    for (int i = 0; i < SW_THREADS; i++)
        EXPECT(pthread_create(&t[i], NULL, sweep_race_worker, (void *)(uintptr_t)(i + 1)) == 0, "pthread_create");
    /* This thread's maintenance sweeps (a pass a purge delay). */
    for (int k = 0; k < 400; k++) {
        for (int i = 0; i < 300; i++)
            nodal_free(nodal_malloc(64));
        usleep(1000);
    }
    for (int i = 0; i < SW_THREADS; i++)
        pthread_join(t[i], NULL);
    EXPECT(nd_load_relaxed(&nd_gauge.idle_heaps_swept) > swept, "some idle heaps to have been swept (%llu)",
           (unsigned long long)(nd_load_relaxed(&nd_gauge.idle_heaps_swept) - swept));
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold");
}

/* ---- bounds that give memory back at once (heap.h: ND_PURGE_PENDING_MAX;
   node.c: the cache's bounds) ---- */

/* Rounds of blocks whose memory is more than a bound allows: medium blocks
   of 64 KiB (50 MiB a round: more than a heap's 32 MiB of pending purges)
   or large blocks of 1 MiB (100 segments a round: more than a node cache's
   4 dirty and 16 mapped segments). Each block's first byte is written. */
static void alloc_free_round(void **a, int n, size_t size)
{
    for (int i = 0; i < n; i++) {
        a[i] = nodal_malloc(size);
        EXPECT(a[i] != NULL, "block %d of %zu bytes to be allocated", i, size);
        *(char *)a[i] = (char)i;
    }
    for (int i = 0; i < n; i++)
        nodal_free(a[i]);
}

/* The OS calls (mappings and purges) a round makes. */
static uint64_t round_os_calls(void **a, int n, size_t size)
{
    uint64_t before = nd_load_relaxed(&nd_gauge.os_maps) + nd_load_relaxed(&nd_gauge.os_purges);
    alloc_free_round(a, n, size);
    return nd_load_relaxed(&nd_gauge.os_maps) + nd_load_relaxed(&nd_gauge.os_purges) - before;
}

/* A program that frees and takes again more memory than a bound that
   gives it back at once (not after purge_delay) keeps it after its first
   rounds: the bound rises by what it gave back that was faulted in again
   within a purge delay. On main 1dd0adc every round of 800 blocks of 64
   KiB purged 50 MiB and faulted it in again (bench/micro -m batch -s 65536:
   5,900 ns a pair against mimalloc's 37), and every round of 300 blocks
   of 1 MiB purged and unmapped 80 segments and mapped them again. A heap's
   raised bound comes down at the maintenance passes after the rounds stop
   (the test's clock). */
static void *rounds_past_the_bounds(void *arg)
{
    (void)arg;
    enum { MEDIUM_N = 800, LARGE_N = 300, ROUNDS = 5 };
    static void *a[MEDIUM_N];
    nd_heap *h = &nd_tls_tc->heap;
    uint64_t raised = nd_load_relaxed(&nd_gauge.purge_bounds_raised);
    uint64_t calls[ROUNDS];
    for (int r = 0; r < ROUNDS; r++)
        calls[r] = round_os_calls(a, MEDIUM_N, 64 << 10);
    EXPECT(calls[0] > 0, "the first round of 50 MiB of medium blocks to purge past the bound (%llu OS calls)",
           (unsigned long long)calls[0]);
    EXPECT(calls[3] == 0 && calls[4] == 0, "the fourth and fifth rounds of medium blocks to keep their memory: "
           "%llu and %llu OS calls (rounds: %llu %llu %llu)", (unsigned long long)calls[3], (unsigned long long)calls[4],
           (unsigned long long)calls[0], (unsigned long long)calls[1], (unsigned long long)calls[2]);
    EXPECT(nd_load_relaxed(&nd_gauge.purge_bounds_raised) > raised, "a bound to be raised by the medium rounds");
    EXPECT(nd_heap_is_valid(h), "the heap invariants to hold");
    /* No more rounds: a raised bound of the heap comes down pass by pass
       (whether the heap's or the node cache's bound rose depends on how
       the rounds' pages fell in segments: raised by hand here). */
    h->pending_max = 96 * ND_MiB;
    h->pending_high = 0;
    uint64_t now = nd_os_now_ms();
    for (int i = 1; i <= 8 && h->pending_max != 0; i++)
        nd_heap_maintain(h, now + (uint64_t)i * (uint64_t)nd_opt(ND_OPT_purge_delay) * 2, false);
    EXPECT(h->pending_max == 0, "the raised bound to come down to its base after the rounds (%zu)", h->pending_max);

    for (int r = 0; r < ROUNDS; r++)
        calls[r] = round_os_calls(a, LARGE_N, 1 << 20);
    EXPECT(calls[0] > 0, "the first round of 100 segments of large blocks to purge or map past the cache's bounds "
           "(%llu OS calls)", (unsigned long long)calls[0]);
    EXPECT(calls[3] == 0 && calls[4] == 0, "the fourth and fifth rounds of large blocks to keep their segments: "
           "%llu and %llu OS calls (rounds: %llu %llu %llu)", (unsigned long long)calls[3], (unsigned long long)calls[4],
           (unsigned long long)calls[0], (unsigned long long)calls[1], (unsigned long long)calls[2]);
    EXPECT(nd_load_relaxed(&nd_gauge.purge_bounds_raised) - raised >= 2, "purge_bounds_raised to count the heap's and "
           "the cache's raised bounds (%llu)", (unsigned long long)(nd_load_relaxed(&nd_gauge.purge_bounds_raised) - raised));
    EXPECT(nd_large_is_valid(), "the large pools' invariants (their fit hints among them) to hold");
    return NULL;
}

/* A pool of many segments (100, three 1 MiB blocks each) starts its walks
   where a run may fit (large.c: the fit hints): a block freed in an old
   segment is found again, whatever request came since. Every third block
   freed, then as many taken again: they fill those holes, no segment is
   mapped, and the hints stay true (nd_large_is_valid walks them). */
static void *holes_in_a_big_pool(void *arg)
{
    (void)arg;
    enum { N = 300 };
    static void *a[N];
    for (int i = 0; i < N; i++) {
        a[i] = nodal_malloc(1 << 20);
        EXPECT(a[i] != NULL, "block %d to be allocated", i);
    }
    void *probe = nodal_malloc(1 << 20);   /* a walk past the last segment: hints past the end */
    nodal_free(probe);
    for (int i = 0; i < N; i += 3) {
        nodal_free(a[i]);
        a[i] = NULL;
    }
    EXPECT(nd_large_is_valid(), "the fit hints to hold after the frees");
    uint64_t maps = nd_load_relaxed(&nd_gauge.os_maps) + nd_load_relaxed(&nd_gauge.segments_cached);
    for (int i = 0; i < N; i += 3) {
        a[i] = nodal_malloc(1 << 20);
        EXPECT(a[i] != NULL, "block %d to be allocated again", i);
    }
    EXPECT(nd_load_relaxed(&nd_gauge.os_maps) + nd_load_relaxed(&nd_gauge.segments_cached) == maps,
           "the blocks taken again to fill the holes the frees left, no segment brought");
    EXPECT(nd_large_is_valid(), "the fit hints to hold after the blocks were taken again");
    for (int i = 0; i < N; i++)
        nodal_free(a[i]);
    EXPECT(nd_large_is_valid(), "the large pools' invariants to hold at the end");
    return NULL;
}

static void a_big_large_pool_finds_the_holes_of_its_old_segments(void)
{
    if (nd_opt(ND_OPT_secure) != 0)
        SKIP("default mode: secure=1 chooses runs by its guard pages");
    in_a_new_thread(holes_in_a_big_pool);
}

static void rounds_past_the_purge_bounds_keep_their_memory_after_the_first(void)
{
    if (nd_opt(ND_OPT_purge_delay) < 1000000 || nd_opt(ND_OPT_secure) != 0)
        SKIP("made for purge_delay=3600000, without secure");
    in_a_new_thread(rounds_past_the_bounds);
}

/* Memory freed once past the bound, and not taken again, is still given
   back at once: the bound rises only by what was faulted in again. */
static void *one_free_past_the_bound(void *arg)
{
    (void)arg;
    enum { N = 800 };
    static void *a[N];
    nd_heap *h = &nd_tls_tc->heap;
    uint64_t returned = nd_load_relaxed(&nd_gauge.returned), raised = nd_load_relaxed(&nd_gauge.purge_bounds_raised);
    alloc_free_round(a, N, 64 << 10);
    uint64_t back = nd_load_relaxed(&nd_gauge.returned) - returned;
    EXPECT(back >= 12 * ND_MiB, "50 MiB freed at once to give back what the bounds do not keep (the node cache's 4 "
           "dirty segments, the heap's spare and kept pages) without waiting for the delay (%llu bytes)",
           (unsigned long long)back);
    void *p = nodal_malloc(100);   /* other work: small blocks only */
    nodal_free(p);
    EXPECT(h->pending_max == 0 && nd_load_relaxed(&nd_gauge.purge_bounds_raised) == raised,
           "the bound not to rise without memory faulted in again (%zu)", h->pending_max);
    return NULL;
}

static void memory_freed_once_past_the_purge_bound_is_still_given_back_at_once(void)
{
    if (nd_opt(ND_OPT_purge_delay) < 1000000 || nd_opt(ND_OPT_secure) != 0)
        SKIP("made for purge_delay=3600000, without secure");
    in_a_new_thread(one_free_past_the_bound);
}

/* Two threads that each cycle batches of medium blocks (64 KiB: a bin of
   1-4 blocks) through the transfer store take each other's blocks there
   and send them home as remote frees, until a bin takes its own route
   (tcache.c: ND_OWN_CYCLES, nd_bin_holds_own). The check of a bin's
   blocks sampled 16 of them and refused bins of fewer: no medium bin ever
   took its route (micro -m batch -s 65536 -t 2: 388 ns a pair against 247
   now, mimalloc 53; docs/results.md, stop 62). */
static pthread_barrier_t medium_barrier;

static void *medium_batches(void *arg)
{
    (void)arg;
    enum { N = 200, ROUNDS = 40 };
    void *a[N];
    for (int r = 0; r < ROUNDS; r++) {
        pthread_barrier_wait(&medium_barrier);   /* the two threads' rounds at once */
        for (int i = 0; i < N; i++) {
            a[i] = nodal_malloc(64 << 10);
            EXPECT(a[i] != NULL, "block %d to be allocated", i);
            *(char *)a[i] = (char)i;
        }
        for (int i = 0; i < N; i++)
            nodal_free(a[i]);
    }
    return NULL;
}

static void threads_cycling_batches_of_medium_blocks_take_their_own_route(void)
{
    if (nd_opt(ND_OPT_transfer) != 2 || nd_opt(ND_OPT_secure) != 0 || nd_opt(ND_OPT_tcache_max) < (64 << 10))
        SKIP("made for transfer=2, secure=0 and medium blocks in thread caches");
    uint64_t before = nd_load_relaxed(&nd_gauge.own_routes);
    pthread_barrier_init(&medium_barrier, NULL, 2);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        EXPECT(pthread_create(&t[i], NULL, medium_batches, NULL) == 0, "thread %d to start", i);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&medium_barrier);
    EXPECT(nd_load_relaxed(&nd_gauge.own_routes) > before, "a bin of 64 KiB blocks cycling its batches to take its own "
           "route (%llu routes taken)", (unsigned long long)(nd_load_relaxed(&nd_gauge.own_routes) - before));
}

/* ---- transparent huge pages (segment.h: nd_seg_thp_opt_out) ---- */

/* Where the kernel backs memory with huge pages unasked (mode "always"),
   nodal's segments (a small block's, a large block's) and its metadata
   (the thread's cache) opt out (MADV_NOHUGEPAGE: VmFlags "nh"), unless
   huge_pages=1; elsewhere they are left as they are. The mode is read
   here too, so a nodal that misreads it fails. Under "always" on main
   872dfa1 a forced collect left 24-30 MiB resident in
   tests/placement/thread_churn_keeps_rss_bounded (4 with "madvise"), and
   bench/shortlived -t 2 peaked at 48.7 MiB against 25.7 now. */
static void segments_opt_out_of_huge_pages_the_kernel_gives_unasked(void)
{
    char mode[128] = "";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f == NULL)
        SKIP("no transparent huge pages in this kernel");
    EXPECT(fgets(mode, sizeof mode, f) != NULL, "the THP mode to be readable");
    fclose(f);
    bool always = strstr(mode, "[always]") != NULL;
    EXPECT(nd_os_thp_always() == always, "nodal to read the THP mode (%s) as %s", mode,
           nd_os_thp_always() ? "always" : "not always");
    bool opt_out = always && !nd_opt(ND_OPT_huge_pages);
    void *small = nodal_malloc(64), *large = nodal_malloc(200 << 10);
    EXPECT(small != NULL && large != NULL, "the blocks to be allocated");
    EXPECT((nd_vmflag_at((uintptr_t)small, "nh") == 1) == opt_out, "a small block's segment %s MADV_NOHUGEPAGE (THP %s, "
           "huge_pages=%ld)", opt_out ? "to have" : "not to have", always ? "always" : "not always",
           nd_opt(ND_OPT_huge_pages));
    EXPECT((nd_vmflag_at((uintptr_t)large, "nh") == 1) == opt_out, "a large block's segment %s MADV_NOHUGEPAGE",
           opt_out ? "to have" : "not to have");
    EXPECT((nd_vmflag_at((uintptr_t)nd_tls_tc, "nh") == 1) == always, "the thread's cache (metadata) %s MADV_NOHUGEPAGE",
           always ? "to have" : "not to have");
    nodal_free(small);
    nodal_free(large);
}

/* The same, run with huge_pages=1 (CMakeLists.txt): no segment opts out. */
static void under_huge_pages_1_plain_segments_keep_the_kernels_huge_pages(void)
{
    EXPECT(nd_opt(ND_OPT_huge_pages) == 1, "the case to run with huge_pages=1 (NODAL_OPTIONS)");
    segments_opt_out_of_huge_pages_the_kernel_gives_unasked();
}

/* ---- abandoned segments swept by a forced collect (heap.h) ---- */

enum { SWEEP_N = 512, SWEEP_SIZE = 1024 };
static void *sweep_blocks[SWEEP_N];

/* Blocks of node 0's bound memory, written, left to the main thread. */
static void *bound_blocks_and_exit(void *arg)
{
    (void)arg;
    for (int i = 0; i < SWEEP_N; i++) {
        sweep_blocks[i] = nodal_malloc_node(SWEEP_SIZE, 0);
        EXPECT(sweep_blocks[i] != NULL, "nodal_malloc_node(%d, 0) to succeed", SWEEP_SIZE);
        memset(sweep_blocks[i], 7, SWEEP_SIZE);
    }
    return NULL;
}

/* A thread's blocks of node 0's bound memory (sweep_blocks), out while
   its segments are abandoned: the thread exited and its pooled record was
   taken apart (a forced collect). The number of segments abandoned. */
static size_t bound_blocks_of_an_abandoned_record(void)
{
    nodal_collect(1);
    EXPECT(nd_node_abandoned_count(0, true) == 0, "no bound segment of node 0 to be abandoned at the start");
    in_a_new_thread(bound_blocks_and_exit);
    nodal_collect(1);   /* the pooled record taken apart: its segments abandoned, their blocks out */
    size_t abandoned = nd_node_abandoned_count(0, true);
    EXPECT(abandoned >= 1, "the exited thread's bound segments to be abandoned while their blocks are out");
    return abandoned;
}

/* Blocks a thread allocated on a node (bound memory) and another thread
   freed after the first exited and its record was taken apart: their
   segments stay abandoned, as the freeing thread has no heap of that
   kind to adopt them; a forced collect takes them back for a moment, so
   their pages, every block back, are given back and purged (heap.h:
   nd_heap_sweep_abandoned) and none stays abandoned. On main 872dfa1
   they stayed abandoned, set up and resident, for as long as no thread
   allocated that node's bound memory (the VM's
   thread_churn_keeps_rss_bounded: 2-8 MiB of pages set up and 12-37 MiB
   committed after each round's nodal_collect(1), its resident set
   swinging by 27 MiB from round to round). */
static void a_forced_collect_gives_back_the_pages_of_abandoned_segments_no_heap_adopts(void)
{
    size_t abandoned = bound_blocks_of_an_abandoned_record();
    long active = (long)nd_load_relaxed(&nd_gauge.active), committed = (long)nd_load_relaxed(&nd_gauge.committed);
    for (int i = 0; i < SWEEP_N; i++)
        nodal_free(sweep_blocks[i]);   /* into the abandoned pages (remote frees) */
    nodal_collect(1);
    EXPECT(nd_node_abandoned_count(0, true) == 0, "no segment to stay abandoned once all its blocks came back and a "
           "forced collect ran (%zu stayed of %zu)", nd_node_abandoned_count(0, true), abandoned);
    long given = active - (long)nd_load_relaxed(&nd_gauge.active);
    long purged = committed - (long)nd_load_relaxed(&nd_gauge.committed);
    EXPECT(given >= (long)SWEEP_N * SWEEP_SIZE, "the blocks' pages (%d KiB of blocks) to be given back, %ld KiB were",
           SWEEP_N * SWEEP_SIZE / 1024, given / 1024);
    EXPECT(purged >= (long)SWEEP_N * SWEEP_SIZE, "their memory (%d KiB of blocks) to be purged, %ld KiB was",
           SWEEP_N * SWEEP_SIZE / 1024, purged / 1024);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold");
}

/* 4,096 requests of 64 B, each freed at once: the calling thread's
   maintenance runs on their ticks. */
static void plain_requests(void)
{
    for (int i = 0; i < 4096; i++)
        nodal_free(nodal_malloc(64));
}

/* The same without a forced collect, run with reclaim_on_free=0
   (CMakeLists.txt) so that no free adopts the segments either (with the
   default, the first free into one adopts it into the freeing thread's
   cache of its kind, route.c; segments whose blocks all came back before
   their thread exited, or that no free reaches, wait as these do): the
   freeing thread's maintenance (its requests' ticks) sweeps the abandoned
   lists every ND_SWEEP_ABANDONED_DELAYS purge delays (thread.c), so the
   pages come back within about that long of the last free, in a program
   that never calls nodal_collect(1) or malloc_trim. Before, they stayed
   abandoned, set up and resident, for as long as no thread of that node's
   bound memory came. */
static void abandoned_segments_no_heap_adopts_give_back_their_pages_unasked(void)
{
    EXPECT(nd_opt(ND_OPT_reclaim_on_free) == 0, "the case to run with reclaim_on_free=0 (NODAL_OPTIONS)");
    size_t abandoned = bound_blocks_of_an_abandoned_record();
    plain_requests();   /* the page the requests below take, set up before the count */
    long active = (long)nd_load_relaxed(&nd_gauge.active);
    for (int i = 0; i < SWEEP_N; i++)
        nodal_free(sweep_blocks[i]);   /* into the abandoned pages (remote frees) */
    /* Plain requests for up to 12 sweep periods (the thread's maintenance
       runs on its requests' ticks, once a purge delay at most). */
    long period = (nd_opt(ND_OPT_purge_delay) > 0 ? nd_opt(ND_OPT_purge_delay) : 1) * ND_SWEEP_ABANDONED_DELAYS;
    uint64_t until = nd_os_now_ms() + (uint64_t)(12 * period);
    while (nd_node_abandoned_count(0, true) != 0 && nd_os_now_ms() < until) {
        plain_requests();
        usleep(1000);
    }
    EXPECT(nd_node_abandoned_count(0, true) == 0, "no segment to stay abandoned once all its blocks came back, within "
           "12 sweep periods of %ld ms and no forced collect (%zu stayed of %zu)", period,
           nd_node_abandoned_count(0, true), abandoned);
    long given = active - (long)nd_load_relaxed(&nd_gauge.active);
    EXPECT(given >= (long)SWEEP_N * SWEEP_SIZE, "the blocks' pages (%d KiB of blocks) to be given back, %ld KiB were",
           SWEEP_N * SWEEP_SIZE / 1024, given / 1024);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold");
}

/* A kept page's memory serves every class: a class with no page of its
   own that needs a new one first retires a kept page of its kind, whose
   memory (resident) the new page takes. */
static void *another_class_takes_a_kept_page(void *arg)
{
    (void)arg;
    static void *a[KEEP_N];
    static nd_page *pages[KEEP_MAX_PAGES];
    int n = 0;
    take_batch(a, KEEP_N, pages, &n, NULL, 0);
    nd_heap *h = &nd_tls_tc->heap;
    free_batch(a, 0, KEEP_N);
    size_t kept = h->kept_bytes;
    EXPECT(kept != 0, "the emptied pages to be kept");
    void *b = nodal_malloc(3000);   /* above the nurseries' classes: a page of the heap's own */
    EXPECT(b != NULL, "malloc(3000) to succeed");
    nd_page *pg = nd_page_of(nd_seg_base(b), b);
    EXPECT(page_in(pg, pages, n), "the new page to be one of the kept pages' memory");
    EXPECT(h->kept_bytes == kept - ND_SMALL_PAGE_SIZE, "one kept page to be retired for it (%zu -> %zu bytes)", kept,
           h->kept_bytes);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold");
    nodal_free(b);
    return NULL;
}

/* The pages a heap sets up and retires reach the process's gauges (pages
   of a class, active bytes) at its ND_GAUGE_EVENTS-th set-up or
   retirement, or at its maintenance, not at each (heap.h: gauge_pages),
   and a report counts those a thread's heap holds back: another thread's
   report while the heap holds them, and after its thread exited. */
static struct {
    pthread_barrier_t held, seen;
    unsigned cls;
    long held_pages, held_active;
} gauge_hold;

/* A thread's gauges, the start of a case on them: its record and cache
   made, what its start set up added to the gauges, and the gauges of
   class cls's pages and of active bytes as they are then. */
static nd_heap *gauge_case_start(unsigned cls, size_t *pages0, size_t *active0)
{
    nodal_free(nodal_malloc(16));   /* the thread's record and cache */
    nd_heap *h = &nd_tls_tc->heap;
    nd_heap_gauge_flush(h);   /* (what its start set up) */
    *pages0 = nd_load_relaxed(&nd_gauge.pages[cls]);
    *active0 = nd_load_relaxed(&nd_gauge.active);
    return h;
}

/* Frees blocks[0 .. n), taken from a heap straight (nd_heap_take_blocks). */
static void gauge_case_free(void **blocks, int n)
{
    for (int i = 0; i < n; i++) {
        nd_block_unmark(blocks[i]);   /* handed out, as nd_tcache_alloc does */
        nodal_free(blocks[i]);
    }
}

static void *hold_back_page_gauges(void *arg)
{
    (void)arg;
    enum { MAX = 512 };
    static void *blocks[MAX];
    unsigned cls = gauge_hold.cls;
    size_t pages0, active0;
    nd_heap *h = gauge_case_start(cls, &pages0, &active0);
    int n = 0;
    /* Blocks one at a time, until three pages of the class are set up. */
    while (h->gauge_pages[cls] < 3 && n < MAX)
        EXPECT(nd_heap_take_blocks(h, cls, &blocks[n++], 1, 1) == 1, "a block of the class");
    EXPECT(h->gauge_pages[cls] == 3 && h->gauge_events == 3, "three set-ups held back, %d pages in %u events",
           h->gauge_pages[cls], h->gauge_events);
    EXPECT(nd_load_relaxed(&nd_gauge.pages[cls]) == pages0 && nd_load_relaxed(&nd_gauge.active) == active0,
           "the gauges not written at each set-up (pages %zu, %zu before)", nd_load_relaxed(&nd_gauge.pages[cls]),
           pages0);
    gauge_hold.held_pages = h->gauge_pages[cls];
    gauge_hold.held_active = h->gauge_active;
    pthread_barrier_wait(&gauge_hold.held);   /* the main thread reports */
    pthread_barrier_wait(&gauge_hold.seen);
    /* On to the ND_GAUGE_EVENTS-th set-up: then all of them are in. */
    while (h->gauge_events != 0 && n < MAX)
        EXPECT(nd_heap_take_blocks(h, cls, &blocks[n++], 1, 1) == 1, "a block of the class");
    EXPECT(nd_load_relaxed(&nd_gauge.pages[cls]) == pages0 + ND_GAUGE_EVENTS,
           "the %d-th set-up to add the %d pages to the gauge, %zu (%zu before)", ND_GAUGE_EVENTS,
           ND_GAUGE_EVENTS, nd_load_relaxed(&nd_gauge.pages[cls]), pages0);
    /* One more, held back; then maintenance adds it. */
    size_t before = nd_load_relaxed(&nd_gauge.pages[cls]);
    while (h->gauge_events == 0 && n < MAX)
        EXPECT(nd_heap_take_blocks(h, cls, &blocks[n++], 1, 1) == 1, "a block of the class");
    EXPECT(nd_load_relaxed(&nd_gauge.pages[cls]) == before, "the next set-up held back");
    nd_heap_maintain(h, h->clock_ms, false);
    EXPECT(h->gauge_events == 0 && nd_load_relaxed(&nd_gauge.pages[cls]) == before + 1,
           "maintenance to add what the heap held back (%u events left)", h->gauge_events);
    gauge_case_free(blocks, n);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold");
    return NULL;
}

static void reports_count_the_page_gauges_a_heap_holds_back(void)
{
    gauge_hold.cls = nd_class_of(16384);
    pthread_barrier_init(&gauge_hold.held, NULL, 2);
    pthread_barrier_init(&gauge_hold.seen, NULL, 2);
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, hold_back_page_gauges, NULL) == 0, "pthread_create to work");
    pthread_barrier_wait(&gauge_hold.held);
    nd_heap_gauge_flush(&nd_tls_tc->heap);   /* this thread's own, out of the sum */
    double active = nd_test_total("active"), peak = nd_test_total("peak_active");
    size_t gauge = nd_load_relaxed(&nd_gauge.active) + (size_t)nd_large_gauge_pending();
    EXPECT(active == (double)gauge + (double)gauge_hold.held_active,
           "the report's active to count the %ld bytes another thread's heap holds back: %.0f, gauge %zu",
           gauge_hold.held_active, active, gauge);
    EXPECT(peak >= active, "peak_active (%.0f) at least active (%.0f)", peak, active);
    pthread_barrier_wait(&gauge_hold.seen);
    pthread_join(t, NULL);
    nodal_collect(1);
    EXPECT(nd_test_total("active") == (double)(nd_load_relaxed(&nd_gauge.active) + (size_t)nd_large_gauge_pending()),
           "once the thread exited, the report's active to be the gauge's");
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold");
}

/* A heap whose held-back bytes leave the band of config.h (ND_GAUGE_HELD)
   adds them to the active gauge and keeps its pages back until its
   ND_GAUGE_EVENTS-th set-up or retirement: blocks of 128 KiB, one page
   of 512 KiB set up every 4, until the bytes have left the band (the 4th
   or 5th page). Main before stop 69: the band's exit wrote every class's
   page gauge too (two read-modify-writes of shared lines where one is
   needed). */
static void *a_band_exit_of_large_pages(void *arg)
{
    (void)arg;
    enum { MAX = 64 };
    static void *blocks[MAX];
    unsigned cls = nd_class_of(131072);
    size_t pages0, active0;
    nd_heap *h = gauge_case_start(cls, &pages0, &active0);
    int n = 0;
    while (nd_load_relaxed(&nd_gauge.active) == active0 && n < MAX)
        EXPECT(nd_heap_take_blocks(h, cls, &blocks[n++], 1, 1) == 1, "a block of the class");
    EXPECT(nd_load_relaxed(&nd_gauge.active) > active0 && h->gauge_events < ND_GAUGE_EVENTS,
           "the bytes out of the band added within %d set-ups (%u events, %d blocks)", ND_GAUGE_EVENTS,
           h->gauge_events, n);
    EXPECT(nd_load_relaxed(&nd_gauge.pages[cls]) == pages0 && h->gauge_pages[cls] == (int)h->gauge_events &&
           h->gauge_pages[cls] >= 4,
           "the pages still held back (%d of %u set-ups; the gauge %zu, %zu before)", h->gauge_pages[cls],
           h->gauge_events, nd_load_relaxed(&nd_gauge.pages[cls]), pages0);
    EXPECT(h->gauge_active >= 0 && !nd_gauge_out_of_band(h->gauge_active), "the bytes held back within the band, %ld",
           h->gauge_active);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold");
    gauge_case_free(blocks, n);
    return NULL;
}

static void bytes_out_of_the_gauge_band_go_without_the_page_gauges(void)
{
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, a_band_exit_of_large_pages, NULL) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold");
}

/* What heaps and large pools hold back of the active gauge is never a
   fall: the gauge is never over what is in use, so peak_active is never
   over the most the process had in use. Rounds of large blocks and of
   small pages, each round's freed before the next's made: a holder that
   held back the fall of its frees while another added its rise to the
   gauge would put the gauge, and its peak, over what was in use (stop
   63's held-back gauges: shortlived -t 2 reported peak_active 88 MiB with
   at most 31 MiB in use). */
#define GAUGE_ROUNDS 24
#define GAUGE_LARGE 20
#define GAUGE_SMALL 1024
static void *rounds_of_large_and_small(void *arg)
{
    (void)arg;
    static void *large[GAUGE_LARGE], *small[GAUGE_SMALL];
    size_t base = (size_t)nd_test_total("active"), most = 0;
    for (int r = 0; r < GAUGE_ROUNDS; r++) {
        size_t live = 0;
        for (int i = 0; i < GAUGE_SMALL; i++) {
            EXPECT((small[i] = nodal_malloc(16384)) != NULL, "a block of 16 KiB");
            live += nodal_usable_size(small[i]);
        }
        for (int i = 0; i < GAUGE_LARGE; i++) {
            size_t n = (size_t)(512 + 32 * i) << 10;   /* 512 KiB .. 1.1 MiB: large blocks */
            EXPECT((large[i] = nodal_malloc(n)) != NULL, "a large block");
            live += nodal_usable_size(large[i]);
        }
        if (live > most)
            most = live;
        for (int i = 0; i < GAUGE_LARGE; i++)
            nodal_free(large[i]);
        for (int i = 0; i < GAUGE_SMALL; i++)
            nodal_free(small[i]);
        EXPECT(nd_tls_tc->heap.gauge_active >= 0, "a heap to hold back no fall of the gauge (%ld bytes)",
               nd_tls_tc->heap.gauge_active);
        EXPECT(nd_large_is_valid(), "the large pools' invariants to hold (none holds back a fall)");
    }
    /* Over: pages round blocks up to at most a page each of a class,
       large blocks to a chunk, and the shared heaps hold a little. Under:
       by less than 2 * ND_GAUGE_HELD for each holder (this heap, and the
       large shard of each CPU the thread ran on: all of them at most). */
    double peak = nd_test_total("peak_active");
    size_t over = base + most + most / 8 + ((size_t)4 << 20);
    size_t under = most - (1 + ND_LARGE_SHARDS) * 2 * (size_t)ND_GAUGE_HELD;
    EXPECT(peak <= (double)over, "peak_active (%.0f) not over the most in use (%zu, %zu before the rounds) "
           "and its rounding (%zu)", peak, most, base, over);
    EXPECT(peak >= (double)under, "peak_active (%.0f) under the most in use (%zu) by less than the holders "
           "hold back (%zu)", peak, most, under);
    return NULL;
}

static void peak_active_is_never_over_the_most_in_use(void)
{
    in_a_new_thread(rounds_of_large_and_small);
}

static void a_new_page_of_another_class_takes_a_kept_pages_memory(void)
{
    in_a_new_thread(another_class_takes_a_kept_page);
}

/* A heap that leaves its node (its thread moved) gives its kept pages back
   and purges them, as it does its empty pages: none stays set up, none
   holds memory. */
static void *leave_with_kept_pages(void *arg)
{
    (void)arg;
    static void *a[KEEP_N];
    static nd_page *pages[KEEP_MAX_PAGES];
    int n = 0;
    take_batch(a, KEEP_N, pages, &n, NULL, 0);
    nd_tcache *tc = nd_tls_tc;
    nd_heap *h = &tc->heap;
    free_batch(a, 1, KEEP_N);   /* a[0] stays: its segment is abandoned, not cached */
    EXPECT(h->kept_bytes != 0, "the emptied pages to be kept");
    nd_heap_leave(h, h->node);
    EXPECT(h->kept_bytes == 0 && h->kept_classes == 0, "no page to stay kept after the leave");
    size_t resident = 0;
    int up = 0;
    for (int i = 0; i < n; i++) {
        up += pages[i]->in_use;
        if (!pages[i]->in_use)
            resident += page_resident(pages[i]);
    }
    EXPECT(up <= 1, "the kept pages to be given back, %d of %d still in use", up, n);
    EXPECT(resident == 0, "the pages given back to hold no memory: %zu OS pages resident", resident);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after leaving");
    nodal_free(a[0]);
    return NULL;
}

static void a_heap_that_leaves_its_node_gives_back_and_purges_its_kept_pages(void)
{
    in_a_new_thread(leave_with_kept_pages);
}

#define PURGE_BATCHES_REFUSED \
    "the kernel refuses process_madvise(MADV_DONTNEED) on the process itself (before Linux 6.14, or a " \
    "seccomp filter): every purged range is one madvise there (nd_os_purges_flush's fallback)"

/* Does the kernel take process_madvise(MADV_DONTNEED) on the process
   itself (the pidfd PIDFD_SELF_PROCESS, -10001)? Asked here, not of
   nodal, so that a nodal that never tries it fails rather than skips. */
static bool kernel_purges_batches(void)
{
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    char *m = mmap(NULL, 2 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT(m != MAP_FAILED, "a mapping of 2 pages");
    m[0] = m[ps] = 1;
    struct iovec v[2] = { { m, ps }, { m + ps, ps } };
    long done = syscall(SYS_process_madvise, -10001, v, 2, MADV_DONTNEED, 0u);
    bool ok = done == (long)(2 * ps) && m[0] == 0 && m[ps] == 0;
    munmap(m, 2 * ps);
    return ok;
}

/* A heap's purge pass gives the free pages of all its segments back in
   one system call (os.h: nd_os_purges): blocks of 1000 B over two
   segments, the blocks of every other page of both freed, then one
   nd_heap_purge: the runs of both segments (one page each, 30 or more of
   them) go in one process_madvise where the kernel takes it. */
static void *purge_two_segments(void *arg)
{
    (void)arg;
    enum { MAX = 12000 };
    static void *a[MAX];
    int n = 0;
    nd_segment *first = NULL, *second = NULL;
    size_t in_second = 0;
    while (n < MAX && in_second < 16 * 65) {   /* 16 pages of the second segment */
        a[n] = nodal_malloc(1000);
        EXPECT(a[n] != NULL, "malloc(1000) to succeed");
        nd_segment *s = nd_seg_base(a[n]);
        if (first == NULL)
            first = s;
        else if (s != first && second == NULL)
            second = s;
        in_second += s == second;
        n++;
    }
    EXPECT(second != NULL, "the blocks to fill a segment and go on into a second");
    nd_tcache *tc = nd_tls_tc;
    nd_heap *h = &tc->heap;
    for (int i = 0; i < n; i++) {
        nd_segment *s = nd_seg_base(a[i]);
        if (nd_seg_page_index(s, nd_page_of(s, a[i])) % 2 == 1) {
            nodal_free(a[i]);
            a[i] = NULL;
        }
    }
    nd_tcache_flush_all(tc);
    nd_tcache_xfer_sweep(tc, 0, true);   /* with transfer=2 own blocks may wait in the store */
    nd_heap_retire_kept(h);   /* emptied pages kept for their class go back to their segment (heap.h) */
    EXPECT(nd_popcount64(first->purge_mask) >= 8 && nd_popcount64(second->purge_mask) >= 4,
           "the free pages of both segments to wait for their purge (%d and %d chunks)",
           nd_popcount64(first->purge_mask), nd_popcount64(second->purge_mask));
    uint64_t calls = nd_load_relaxed(&nd_gauge.os_purge_calls), ranges = nd_load_relaxed(&nd_gauge.os_purges);
    nd_heap_purge(h, 0, true);
    calls = nd_load_relaxed(&nd_gauge.os_purge_calls) - calls;
    ranges = nd_load_relaxed(&nd_gauge.os_purges) - ranges;
    EXPECT(first->purge_mask == 0 && second->purge_mask == 0, "the pass to purge both segments");
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold");
    for (int i = 0; i < n; i++)
        nodal_free(a[i]);
    if (!kernel_purges_batches())
        SKIP(PURGE_BATCHES_REFUSED);
    EXPECT(ranges >= 12 && calls == 1, "one system call for the pass's %llu ranges, %llu were made",
           (unsigned long long)ranges, (unsigned long long)calls);
    return NULL;
}

static void a_heaps_purge_of_several_segments_is_one_system_call(void)
{
    in_a_new_thread(purge_two_segments);
}

/* Whatever the kernel does with a batch (os.h: nd_os_purges), every range
   of it is purged: 300 ranges (more than a batch holds, so adds flush
   full batches and go on) and, among them, one the process does not have
   mapped (process_madvise stops there and returns what it advised before
   it, which the flush takes up after it). Each range's page reads zero
   afterwards, the others keep their contents. */
static void a_batch_purges_every_range_past_a_full_batch_and_an_unmapped_one(void)
{
    enum { N = 300, HOLE = 150 };
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *m = mmap(NULL, 2 * N * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT(m != MAP_FAILED, "a mapping of %zu pages", (size_t)2 * N);
    memset(m, 0xa5, 2 * N * ps);
    EXPECT(munmap(m + 2 * HOLE * ps, ps) == 0, "a page of it unmapped");
    uint64_t calls = nd_load_relaxed(&nd_gauge.os_purge_calls);
    nd_os_purges b;
    nd_os_purges_init(&b);
    for (int i = 0; i < N; i++)   /* every other page: ranges that do not meet */
        nd_os_purges_add(&b, m + 2 * (size_t)i * ps, ps);
    nd_os_purges_flush(&b);
    calls = nd_load_relaxed(&nd_gauge.os_purge_calls) - calls;
    for (int i = 0; i < N; i++) {
        if (i == HOLE)
            continue;
        EXPECT(m[2 * (size_t)i * ps] == 0 && m[2 * (size_t)i * ps + ps - 1] == 0, "range %d of %d to be purged", i, N);
        EXPECT(m[(2 * (size_t)i + 1) * ps] == 0xa5, "the page after range %d to keep its contents", i);
    }
    EXPECT(b.n == 0, "the flush to leave the batch empty");
    if (kernel_purges_batches())   /* 3 batches; the second's call stops at the hole, which goes alone, then the rest */
        EXPECT(calls <= 6, "a few system calls for %d ranges, %llu were made", N, (unsigned long long)calls);
    munmap(m, 2 * N * ps);
}

/* Under purge_batch=0 (run so: CMakeLists.txt) nodal never calls
   process_madvise: a child whose seccomp filter kills the process on that
   call frees every other page of a run of pages and collects (a pass
   whose purges are many ranges that do not meet), and lives, each range
   one madvise. With the default a kernel that takes the call (Linux 6.14
   and later) sees it there, and such a filter (a service's
   SystemCallFilter= that does not list it) kills the process. */
static void under_purge_batch_0_a_filter_that_kills_on_process_madvise_does_no_harm(void)
{
    EXPECT(nd_opt(ND_OPT_purge_batch) == 0, "the case to run with purge_batch=0 (NODAL_OPTIONS)");
    pid_t pid = fork();
    EXPECT(pid >= 0, "fork to work");
    if (pid == 0) {
        struct sock_filter f[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_madvise, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = { (unsigned short)(sizeof f / sizeof f[0]), f };
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
            _exit(77);
        enum { N = 64 * 40 };
        static void *a[N];
        for (int i = 0; i < N; i++) {
            a[i] = nodal_malloc(1000);
            if (a[i] == NULL)
                _exit(3);
            memset(a[i], 1, 1000);
        }
        for (int i = 0; i < N; i++)   /* the blocks of every other 64 KiB page */
            if ((((uintptr_t)a[i] >> 16) & 1) == 0)
                nodal_free(a[i]), a[i] = NULL;
        uint64_t calls = nd_load_relaxed(&nd_gauge.os_purge_calls), purges = nd_load_relaxed(&nd_gauge.os_purges);
        nodal_collect(1);
        calls = nd_load_relaxed(&nd_gauge.os_purge_calls) - calls;
        purges = nd_load_relaxed(&nd_gauge.os_purges) - purges;
        _exit(purges >= 4 && calls == purges ? 0 : 4);   /* ranges that do not meet, one call each */
    }
    int status = 0;
    EXPECT(waitpid(pid, &status, 0) == pid, "waitpid to work");
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
        SKIP("no seccomp filter here");
    EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child to live through its purges, one madvise a range: %s %d",
           WIFSIGNALED(status) ? "killed by signal" : "exit status", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

/* Threads beyond two per CPU share the CPUs' thread-cache budget
   (tcache.c: nd_tcache_total_share): 16 threads, alive together, each
   working through 1 MiB of blocks of four classes, so that each would grow
   its cache to tcache_total; none grows it past twice its share of
   tcache_total x 2 x CPUs (the share with 17 caches, the most it can be:
   a bin in long runs may go past the share itself, tcache.c: ND_RUN_BINS). */
enum { SHARE_THREADS = 16 };
static pthread_barrier_t share_barrier;

/* Four rounds over 256 KiB of blocks of each of 1, 2, 4 and 8 KiB, in
   p: enough to take a cache to its share. */
static void work_through_four_classes(void **p)
{
    for (int round = 0; round < 4; round++)
        for (size_t size = 1024; size <= 8192; size *= 2) {
            int n = (int)((256 << 10) / size);
            for (int i = 0; i < n; i++)
                p[i] = nodal_malloc(size);
            for (int i = 0; i < n; i++)
                nodal_free(p[i]);
        }
}

static void *grow_four_classes(void *arg)
{
    size_t *cap = arg;
    static __thread void *p[1024];
    nodal_free(nodal_malloc(1));            /* this thread's cache */
    pthread_barrier_wait(&share_barrier);   /* every thread has its cache */
    work_through_four_classes(p);
    *cap = nd_tls_tc->cap_bytes - nd_tls_tc->cap_extra;   /* (its draw from the pool: ND_POOL_MULT) */
    EXPECT(nd_tcache_is_valid(nd_tls_tc), "the cache invariants to hold");
    pthread_barrier_wait(&share_barrier);   /* none exits before all measured */
    return NULL;
}

/* The share of each of SHARE_THREADS + 1 caches (nd_tcache_total_share);
   *cpus, the CPUs it counts. */
static size_t share_of_each(size_t *cpus)
{
    size_t total = (size_t)nd_opt(ND_OPT_tcache_total), n = 0;
    for (int cpu = 0; cpu < nd_topo.cpu_count; cpu++)
        n += nd_topo.cpu_node[cpu] >= 0;
    *cpus = n;
    size_t caches = SHARE_THREADS + 1, each = 2 * n;
    size_t share = caches <= each ? total : total / caches * each;
    return share < total / 8 ? total / 8 : share;
}

/* The most each of SHARE_THREADS + 1 caches, CPUs shared, may draw from
   the process's pool (tcache.c: nd_tcache_extra_fits): its even part of
   the pool, or a cache's most, whichever is less. */
static size_t pool_part_of_each(void)
{
    size_t total = (size_t)nd_opt(ND_OPT_tcache_total), part = ND_POOL_MULT * total / (SHARE_THREADS + 1);
    return part < ND_EXTRA_MULT * total ? part : ND_EXTRA_MULT * total;
}

/* Runs fn in SHARE_THREADS threads alive together, each given its cap[i]. */
static void in_share_threads(void *(*fn)(void *), size_t *cap)
{
    pthread_t t[SHARE_THREADS];
    nodal_free(nodal_malloc(1));   /* this thread's cache counts too */
    pthread_barrier_init(&share_barrier, NULL, SHARE_THREADS);
    for (int i = 0; i < SHARE_THREADS; i++)
        EXPECT(pthread_create(&t[i], NULL, fn, &cap[i]) == 0, "pthread_create to work");
    for (int i = 0; i < SHARE_THREADS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&share_barrier);
}

static void threads_beyond_the_cpus_share_the_cache_budget(void)
{
    size_t cpus, share = share_of_each(&cpus), cap[SHARE_THREADS];
    in_share_threads(grow_four_classes, cap);
    /* A cache's starting capacities are never refused: 8 KiB worth of
       blocks per class, or 2 blocks (16 KiB of 8 KiB ones), five classes. */
    for (int i = 0; i < SHARE_THREADS; i++)
        EXPECT(cap[i] <= 2 * share + 5 * 16384, "thread %d's cache to hold at most twice its share, %zu, with what it "
               "drew from the process's pool aside (%zu, %zu CPUs)", i, share, cap[i], cpus);
}

/* A bin in runs of requests of 8 bins' worth and more grows past its
   cache's share (tcache.c: ND_RUN_BINS): the same 16 threads, alive
   together, each allocating 64 blocks of 16 KiB and freeing them, 8 times;
   the bin, held at 8 blocks (128 KiB) by a share under 256 KiB, grows to
   16 (its tcache_bytes) past it. */
static void *runs_of_16k(void *arg)
{
    size_t *cap = arg;
    static __thread void *p[64];
    nodal_free(nodal_malloc(1));
    pthread_barrier_wait(&share_barrier);
    for (int round = 0; round < 8; round++) {
        for (int i = 0; i < 64; i++)
            p[i] = nodal_malloc(16384);
        for (int i = 0; i < 64; i++)
            nodal_free(p[i]);
    }
    *cap = nd_bin_info_of(nd_tls_tc, nd_class_of(16384))->cap;
    EXPECT(nd_tcache_is_valid(nd_tls_tc), "the cache invariants to hold");
    pthread_barrier_wait(&share_barrier);
    return NULL;
}

static void a_bin_in_runs_of_many_bins_grows_past_its_caches_share(void)
{
    size_t cpus, share = share_of_each(&cpus), cap[SHARE_THREADS];
    if (share >= 16 * 16384 || nd_opt(ND_OPT_tcache_bytes) < 16 * 16384)
        SKIP("a share of %zu (%zu CPUs) holds 16 blocks of 16 KiB without the runs' rule", share, cpus);
    in_share_threads(runs_of_16k, cap);
    for (int i = 0; i < SHARE_THREADS; i++)
        EXPECT(cap[i] * 16384 > share, "thread %d's 16 KiB bin, in runs of 64 blocks, to grow past the share, %zu "
               "(%zu blocks, %zu CPUs)", i, share, cap[i], cpus);
}

/* With CPUs shared, a small class's bin grows to 16 KiB worth of blocks
   whatever its cache's share (tcache.c: ND_BIN_SHARED_FLOOR): the same 16
   threads, alive together, each first takes its cache to its share with
   blocks of 1-8 KiB (work_through_four_classes), then allocates and frees
   runs of 100 blocks of 64 B, 50 times; its 64 B bin, which starts at 32
   blocks, grows to 128 and the runs take no fill nor overflow. Main: the
   bin stays at 32 (the runs are too short for ND_RUN_BINS) and each run
   takes 3-4 fills and as many overflows. */
static void *short_runs_of_64_bytes(void *arg)
{
    size_t *out = arg;
    static __thread void *p[1024];
    nodal_free(nodal_malloc(1));
    pthread_barrier_wait(&share_barrier);
    work_through_four_classes(p);
    unsigned c = nd_class_of(64);
    const nd_bin_counters *cs = &nd_bin_info_of(nd_tls_tc, c)->counts;
    uint64_t before = 0;
    for (int run = 0; run < 50; run++) {
        if (run == 40)
            before = cs->fills + cs->flushes;
        for (int i = 0; i < 100; i++)
            p[i] = nodal_malloc(64);
        for (int i = 0; i < 100; i++)
            nodal_free(p[(i * 37) % 100]);
    }
    out[0] = nd_bin_info_of(nd_tls_tc, c)->cap;
    out[1] = (size_t)(cs->fills + cs->flushes - before);
    EXPECT(nd_tcache_is_valid(nd_tls_tc), "the cache invariants to hold");
    pthread_barrier_wait(&share_barrier);
    return NULL;
}

static void with_cpus_shared_a_small_bin_grows_to_16_kib_past_its_caches_share(void)
{
    size_t cpus, share = share_of_each(&cpus), out[SHARE_THREADS][2];
    if (share >= (size_t)nd_opt(ND_OPT_tcache_total) || nd_opt(ND_OPT_tcache_count) < 256 ||
        nd_opt(ND_OPT_tcache_bytes) < 16384 || nd_opt(ND_OPT_tcache_max) < 8192 || nd_secure_on())
        SKIP("no CPU shared by %d threads on %zu CPUs, or a cache too small by its options", SHARE_THREADS, cpus);
    pthread_t t[SHARE_THREADS];
    nodal_free(nodal_malloc(1));
    pthread_barrier_init(&share_barrier, NULL, SHARE_THREADS);
    for (int i = 0; i < SHARE_THREADS; i++)
        EXPECT(pthread_create(&t[i], NULL, short_runs_of_64_bytes, out[i]) == 0, "pthread_create to work");
    for (int i = 0; i < SHARE_THREADS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&share_barrier);
    for (int i = 0; i < SHARE_THREADS; i++) {
        EXPECT(out[i][0] >= 128, "thread %d's 64 B bin, in runs of 100 blocks, to grow to 128 blocks or more past its "
               "cache's share, %zu (its capacity is %zu, %zu CPUs)", i, share, out[i][0], cpus);
        EXPECT(out[i][1] == 0, "thread %d's last 10 runs of 100 blocks of 64 B to take no fill nor overflow, %zu",
               i, out[i][1]);
    }
}

/* A cache none of whose bins fits its thread's loops (each allocates
   CYCLE_N blocks of each of nine classes of 4-16 KiB, 1.3 MB, more than
   tcache_total, then frees them all) moves every loop's excess through the
   transfer store, fills and overflows of whole bins each way. While no CPU
   is shared, such bins may grow the cache past tcache_total, drawing from
   the process's pool (tcache.h: ND_POOL_MULT): once it has, the loops
   take no fill nor overflow at all. Main: the cache stays within
   tcache_total, and each loop fills and overflows a few bins (about 40
   slow paths a loop). It runs with a purge delay of an hour
   (tests/unit/CMakeLists.txt): a GC pass of the thread's maintenance in
   the last 100 loops (under TSan on a loaded machine, 7 runs in 200) cut
   bins that cycle and the loops filled and overflowed again while they
   grew back (189 slow paths). */
enum { CYCLE_N = 16, CYCLE_CLASSES = 9, CYCLE_LOOPS = 300 };
static const size_t cycle_size[CYCLE_CLASSES] = {4096, 5120, 6144, 7168, 8192, 10240, 12288, 14336, 16384};
static uint64_t cycle_slow_paths(const nd_tcache *tc)
{
    uint64_t n = 0;
    for (int k = 0; k < CYCLE_CLASSES; k++) {
        const nd_bin_counters *cs = &nd_bin_info_of(tc, nd_class_of(cycle_size[k]))->counts;
        n += cs->fills + cs->flushes;
    }
    return n;
}
static void *cycle_loops_larger_than_the_cache(void *arg)
{
    size_t *out = arg;
    static void *blocks[CYCLE_N * CYCLE_CLASSES];
    nd_tcache *tc = nd_tls_tc;
    uint64_t before = 0;
    for (int loop = 0; loop < CYCLE_LOOPS; loop++) {
        if (loop == CYCLE_LOOPS - 100)
            before = cycle_slow_paths(nd_tls_tc);
        for (int i = 0; i < CYCLE_N; i++)
            for (int k = 0; k < CYCLE_CLASSES; k++)
                blocks[i * CYCLE_CLASSES + k] = nodal_malloc(cycle_size[k]);
        for (int i = 0; i < CYCLE_N * CYCLE_CLASSES; i++)
            nodal_free(blocks[(i * 7919) % (CYCLE_N * CYCLE_CLASSES)]);
    }
    tc = nd_tls_tc;
    out[0] = (size_t)(cycle_slow_paths(tc) - before);
    out[1] = tc->cap_bytes;
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    return NULL;
}

static void a_cache_whose_bins_cycle_through_the_store_grows_past_tcache_total(void)
{
    size_t out[2];
    if ((size_t)nd_opt(ND_OPT_tcache_total) != 1 << 20 || nd_opt(ND_OPT_transfer) != 2)
        SKIP("made for the defaults tcache_total=1m, transfer=2");
    EXPECT(nd_opt(ND_OPT_purge_delay) >= 600000,
           "this case to run with purge_delay=3600000 (no GC pass during the loops), it is %ld ms",
           nd_opt(ND_OPT_purge_delay));
    pthread_t t;
    nodal_free(nodal_malloc(1));   /* this thread's cache counts too */
    EXPECT(pthread_create(&t, NULL, cycle_loops_larger_than_the_cache, out) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    EXPECT(out[1] > (size_t)nd_opt(ND_OPT_tcache_total), "the cache to grow past tcache_total (%zu B), "
           "its capacity is %zu B", (size_t)nd_opt(ND_OPT_tcache_total), out[1]);
    EXPECT(out[0] < 10, "loops of 1.3 MB of 4-16 KiB blocks to take no fill or overflow once the cache grew, "
           "%zu in the last 100 loops", out[0]);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after the thread exited");
}

/* A thread that churns its own blocks at random (glibc's thread
   benchmark, bench/mthread: 1,024 slots, each step frees one and puts a
   block of 4 B-32 KiB in its place, each octave as likely: 3.6 MiB live, a random
   walk of each class's bin around its edges) outgrows tcache_total (or
   its share) with bins of its own blocks, which draw from the process's
   pool (tcache.c: nd_tcache_may_draw): its bins of 20-28 KiB grow to 8
   blocks or more (12), and its last 100,000 steps take a fill or an
   overflow in under 2 % of their requests (691 of them). Main before it:
   those bins at 4 blocks at most (the pool drawn from by its cycling bins
   of small classes only), 5,350 slow paths. It runs with a purge delay of an hour
   (tests/unit/CMakeLists.txt): no GC pass halves the bins mid-run. */
enum { CHURN_SLOTS = 1024, CHURN_STEPS = 400000, CHURN_LAST = 100000 };
static uint64_t churn_slow_paths(const nd_tcache *tc)
{
    uint64_t n = 0;
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++)
        if (tc->bins[c].empty != NULL)   /* (a bin with its slots) */
            n += nd_bin_info_of(tc, c)->counts.fills + nd_bin_info_of(tc, c)->counts.flushes;
    return n;
}
static size_t churn_size(uint64_t *rng)
{
    *rng = *rng * 6364136223846793005ULL + 1442695040888963407ULL;
    size_t octave = (size_t)4 << ((*rng >> 33) % 13);   /* 4 B .. 16 KiB: each octave as likely */
    return octave + (size_t)(*rng >> 11) % octave;   /* uniform within it: up to 32 KiB */
}
/* One step of a churn: a random slot's block freed and a new one of
   churn_size in its place, written. */
static void churn_step(void **slot, uint64_t *rng)
{
    *rng = *rng * 6364136223846793005ULL + 1442695040888963407ULL;
    size_t k = (size_t)(*rng >> 33) % CHURN_SLOTS;
    nodal_free(slot[k]);
    slot[k] = nodal_malloc(churn_size(rng));
    EXPECT(slot[k] != NULL, "malloc to succeed");
    ((char *)slot[k])[0] = 1;
}
static void *churn_own_blocks(void *arg)
{
    size_t *out = arg;
    static void *slot[CHURN_SLOTS];
    uint64_t rng = 42, before = 0;
    for (int i = 0; i < CHURN_SLOTS; i++)
        slot[i] = nodal_malloc(churn_size(&rng));
    for (int step = 0; step < CHURN_STEPS; step++) {
        if (step == CHURN_STEPS - CHURN_LAST)
            before = churn_slow_paths(nd_tls_tc);
        churn_step(slot, &rng);
    }
    out[0] = (size_t)(churn_slow_paths(nd_tls_tc) - before);
    out[1] = 0;   /* the most blocks a bin of 20-28 KiB may hold */
    for (size_t size = 20480; size <= 28672; size += 4096) {
        const nd_bin_info *bi = nd_bin_info_of(nd_tls_tc, nd_class_of(size));
        out[1] = bi->cap > out[1] ? bi->cap : out[1];
    }
    EXPECT(nd_tcache_is_valid(nd_tls_tc), "the cache invariants to hold");
    for (int i = 0; i < CHURN_SLOTS; i++)
        nodal_free(slot[i]);
    return NULL;
}

static void a_thread_churning_its_own_blocks_grows_its_bins_from_the_pool(void)
{
    size_t out[2];
    if ((size_t)nd_opt(ND_OPT_tcache_total) != 1 << 20 || nd_opt(ND_OPT_tcache_bytes) != 256 << 10 ||
        nd_opt(ND_OPT_transfer) != 2 || nd_secure_on())
        SKIP("made for the defaults tcache_total=1m, tcache_bytes=256k, transfer=2");
    EXPECT(nd_opt(ND_OPT_purge_delay) >= 600000,
           "this case to run with purge_delay=3600000 (no GC pass during the walk), it is %ld ms",
           nd_opt(ND_OPT_purge_delay));
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, churn_own_blocks, out) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    EXPECT(out[1] >= 8, "a bin of 20-28 KiB, which only a bin of its own blocks grows past the share with, to hold "
           "8 blocks or more, the most holds %zu", out[1]);
    EXPECT(out[0] < CHURN_LAST * 2 / 100, "under 2 %% of the last %d steps' requests to take a fill or an "
           "overflow, %zu did", CHURN_LAST, out[0]);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after the thread exited");
}

/* With CPUs shared, threads that churn their own blocks at random (as
   churn_own_blocks, 16 alive together, 17 caches on this machine's CPUs)
   grow their bins of their own blocks past their shares from the
   process's pool, together past what the pool was before stop 69
   (ND_EXTRA_MULT x tcache_total: each cache's even part of it, ~240 KiB,
   held their bins of 20-28 KiB to 2-4 blocks and bench/mthread -t 8 took
   150,000 fills in 5 M requests), within the pool (ND_POOL_MULT x
   tcache_total) and none past its even part. Main before it: together
   at most 4 x tcache_total. Slots of its own per thread; a purge delay of
   an hour (tests/unit/CMakeLists.txt): no GC pass halves the bins. */
enum { SHARED_CHURN_STEPS = 150000 };
static void *churn_own_blocks_with_cpus_shared(void *arg)
{
    size_t *out = arg;
    static __thread void *slot[CHURN_SLOTS];
    uint64_t rng = (uint64_t)(uintptr_t)out * 2654435761u + 1;
    nodal_free(nodal_malloc(1));
    pthread_barrier_wait(&share_barrier);   /* every cache made: CPUs shared from the start */
    for (int i = 0; i < CHURN_SLOTS; i++)
        slot[i] = nodal_malloc(churn_size(&rng));
    for (int step = 0; step < SHARED_CHURN_STEPS; step++) {
        churn_step(slot, &rng);
    }
    *out = nd_tls_tc->cap_extra;
    EXPECT(nd_tcache_is_valid(nd_tls_tc), "the cache invariants to hold");
    pthread_barrier_wait(&share_barrier);   /* every draw measured while all are alive */
    for (int i = 0; i < CHURN_SLOTS; i++)
        nodal_free(slot[i]);
    return NULL;
}

static void with_cpus_shared_threads_churning_their_own_blocks_draw_past_the_former_pool(void)
{
    size_t cpus, share = share_of_each(&cpus), drawn[SHARE_THREADS], sum = 0, most = 0;
    size_t total = (size_t)nd_opt(ND_OPT_tcache_total);
    if (share >= total || total != 1 << 20 || nd_opt(ND_OPT_tcache_bytes) != 256 << 10 ||
        nd_opt(ND_OPT_transfer) != 2 || nd_secure_on())
        SKIP("made for the defaults tcache_total=1m, tcache_bytes=256k, transfer=2, with CPUs shared (%zu CPUs)", cpus);
    EXPECT(nd_opt(ND_OPT_purge_delay) >= 600000,
           "this case to run with purge_delay=3600000 (no GC pass during the walk), it is %ld ms",
           nd_opt(ND_OPT_purge_delay));
    in_share_threads(churn_own_blocks_with_cpus_shared, drawn);
    for (int i = 0; i < SHARE_THREADS; i++) {
        sum += drawn[i];
        most = drawn[i] > most ? drawn[i] : most;
    }
    EXPECT(sum > ND_EXTRA_MULT * total, "the caches of threads churning their own blocks to draw more than %u x "
           "tcache_total together (%zu CPUs, a share of %zu each), %zu", ND_EXTRA_MULT, cpus, share, sum);
    EXPECT(sum <= ND_POOL_MULT * total, "the caches to draw at most the pool, %u x tcache_total, together, %zu",
           ND_POOL_MULT, sum);
    EXPECT(most <= pool_part_of_each(), "no cache to draw more than its even part of the pool, %zu; one drew %zu",
           pool_part_of_each(), most);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after the threads exited");
}

/* With CPUs shared, a cache whose bins cycle whole through the transfer
   store (runs larger than its share) draws from the process's pool past
   its share (tcache.c: ND_EXTRA_CYCLES), as one does past tcache_total
   when no CPU is shared, and all of them together draw at most the pool
   (ND_POOL_MULT x tcache_total, tcache.h): the same 16 threads, alive together,
   each looping 100 times over 16 blocks of each of nine classes of 4-16
   KiB (cycle_loops_larger_than_the_cache's loops, 1.3 MB); and none more
   than its even part of the pool (h48c: twice it, which the first caches
   to cycle drew and held while their threads waited for a CPU). Main
   before h48c: nothing drawn while CPUs are shared; h48c: a cache drew
   more than its even part. */
static void *cycle_loops_in_shared_cpus(void *arg)
{
    size_t *out = arg;
    static __thread void *blocks[CYCLE_N * CYCLE_CLASSES];
    nodal_free(nodal_malloc(1));
    pthread_barrier_wait(&share_barrier);
    for (int loop = 0; loop < 100; loop++) {
        for (int i = 0; i < CYCLE_N; i++)
            for (int k = 0; k < CYCLE_CLASSES; k++)
                blocks[i * CYCLE_CLASSES + k] = nodal_malloc(cycle_size[k]);
        for (int i = 0; i < CYCLE_N * CYCLE_CLASSES; i++)
            nodal_free(blocks[(i * 7919) % (CYCLE_N * CYCLE_CLASSES)]);
    }
    *out = nd_tls_tc->cap_extra;
    EXPECT(nd_tcache_is_valid(nd_tls_tc), "the cache invariants to hold");
    pthread_barrier_wait(&share_barrier);   /* every draw measured while all are alive */
    return NULL;
}

static void with_cpus_shared_a_cache_whose_bins_cycle_draws_from_the_pool(void)
{
    size_t cpus, share = share_of_each(&cpus), drawn[SHARE_THREADS], sum = 0, most = 0;
    size_t total = (size_t)nd_opt(ND_OPT_tcache_total);
    if (share >= total || total != 1 << 20 || nd_opt(ND_OPT_transfer) != 2 || nd_secure_on())
        SKIP("made for the defaults tcache_total=1m, transfer=2, with CPUs shared (%zu CPUs)", cpus);
    in_share_threads(cycle_loops_in_shared_cpus, drawn);
    for (int i = 0; i < SHARE_THREADS; i++) {
        sum += drawn[i];
        most = drawn[i] > most ? drawn[i] : most;
    }
    EXPECT(most > 0, "a cache whose bins of 4-16 KiB cycle through the store to draw from the pool past its share, "
           "%zu (%zu CPUs)", share, cpus);
    EXPECT(sum <= ND_POOL_MULT * total, "the caches to draw at most the pool, %u x tcache_total, together, %zu",
           ND_POOL_MULT, sum);
    EXPECT(most <= pool_part_of_each(), "no cache to draw more than its even part of the pool, %zu; one drew %zu",
           pool_part_of_each(), most);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after the threads exited");
}

/* While CPUs are shared, a bin whose batches of its own blocks cycle
   through the store grows past tcache_bytes (tcache.c:
   nd_tcache_grow_past, nd_bin_holds_own), from its even part of the pool:
   2 x CPUs threads alive and idle, and this thread, whose cache makes
   CPUs shared (2 x CPUs + 1 caches), loops over batches of 500 blocks of
   1 KiB, its own; its bin grows to 512 blocks (256 KiB more, within the
   even part, 4 MiB / (2 x CPUs + 1), up to 7 CPUs) and its last 10
   batches take no fill nor overflow. Main 5f90bfb: no bin past
   tcache_bytes while CPUs are shared, the bin stays at 256 blocks and each
   batch fills and overflows. It runs with a purge delay of an hour
   (tests/unit/CMakeLists.txt). */
enum { OWN_N = 500, OWN_LOOPS = 60 };
static pthread_barrier_t own_barrier;
static void *idle_alive(void *arg)
{
    (void)arg;
    nodal_free(nodal_malloc(1));   /* its cache */
    pthread_barrier_wait(&own_barrier);   /* every cache made */
    pthread_barrier_wait(&own_barrier);   /* the loops done */
    return NULL;
}

/* The checks of the cases of 1 KiB batches with CPUs shared below: the
   defaults they are made for (tcache_count at least count_min) and the
   purge delay of an hour they run with (tests/unit/CMakeLists.txt: no GC
   pass during the loops); a SKIP past max_cpus CPUs (why: what more would
   change). The CPUs. */
static size_t kib_case_cpus(long count_min, size_t max_cpus, const char *why)
{
    size_t cpus;
    (void)share_of_each(&cpus);
    if (nd_opt(ND_OPT_tcache_bytes) != 256 << 10 || nd_opt(ND_OPT_tcache_total) != 1 << 20 ||
        nd_opt(ND_OPT_transfer) != 2 || nd_opt(ND_OPT_tcache_count) < count_min || nd_secure_on())
        SKIP("made for the defaults tcache_bytes=256k, tcache_total=1m, transfer=2 (tcache_count %ld or more)",
             count_min);
    if (cpus == 0 || cpus > max_cpus)
        SKIP("%zu CPUs: %s", cpus, why);
    EXPECT(nd_opt(ND_OPT_purge_delay) >= 600000,
           "this case to run with purge_delay=3600000 (no GC pass during the loops), it is %ld ms",
           nd_opt(ND_OPT_purge_delay));
    return cpus;
}

/* Idle threads alive beside this one, so that CPUs are shared (n of them
   and this thread's cache; idle_alive, own_barrier); the first runs
   `first` instead where it is not NULL (it waits at own_barrier twice, as
   idle_alive). Checks that the caches then share the cpus CPUs. */
static void idle_threads_start(pthread_t *t, int n, void *(*first)(void *), size_t cpus)
{
    nodal_free(nodal_malloc(1024));   /* this thread's cache */
    pthread_barrier_init(&own_barrier, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++)
        EXPECT(pthread_create(&t[i], NULL, i == 0 && first != NULL ? first : idle_alive, NULL) == 0,
               "pthread_create to work");
    pthread_barrier_wait(&own_barrier);
    EXPECT(nd_tcache_cpus_shared(), "%d threads and this one to share %zu CPUs", n, cpus);
}
static void idle_threads_end(pthread_t *t, int n)
{
    pthread_barrier_wait(&own_barrier);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&own_barrier);
}
/* Loops `loops` batches of n blocks of 1 KiB (p: room for n) on this
   thread; the 1 KiB bin's capacity at the end, and in *slow its fills and
   overflows over the last 10 batches. */
static size_t kib_batches(void **p, int n, int loops, uint64_t *slow)
{
    nd_tcache *tc = nd_tls_tc;
    unsigned c = nd_class_of(1024);
    uint64_t before = 0;
    for (int loop = 0; loop < loops; loop++) {
        if (loop == loops - 10)
            before = nd_bin_info_of(tc, c)->counts.fills + nd_bin_info_of(tc, c)->counts.flushes;
        for (int i = 0; i < n; i++)
            p[i] = nodal_malloc(1024);
        for (int i = 0; i < n; i++)
            nodal_free(p[i]);
    }
    *slow = nd_bin_info_of(tc, c)->counts.fills + nd_bin_info_of(tc, c)->counts.flushes - before;
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    return nd_bin_info_of(tc, c)->cap;
}

static void an_own_batches_bin_grows_past_tcache_bytes_while_cpus_are_shared(void)
{
    size_t cpus = kib_case_cpus(1024, 7, "an even part of the pool under 256 KiB");
    int n = (int)(2 * cpus);
    pthread_t t[14];
    idle_threads_start(t, n, NULL, cpus);
    static void *p[OWN_N];
    uint64_t slow;
    size_t cap = kib_batches(p, OWN_N, OWN_LOOPS, &slow);
    idle_threads_end(t, n);
    EXPECT(cap >= OWN_N, "the 1 KiB bin, in batches of %d of its own blocks, to grow past tcache_bytes (256 blocks) "
           "while CPUs are shared; its capacity is %zu", OWN_N, cap);
    EXPECT(slow == 0, "the last 10 batches to take no fill nor overflow, %llu", (unsigned long long)slow);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after the threads exited");
}

/* A bin past tcache_bytes grows by doubling to cover the run of blocks it
   saw (tcache.c: nd_tcache_grow_past); when the cache's part of the pool
   has not the doubling, it grows to the run itself: RUN_IDLE idle threads
   and this one (RUN_IDLE + 1 caches, CPUs shared up to 4 CPUs: each cache's
   part 16 MiB / 10, 1.6 MiB) and batches of 1,100 blocks of 1 KiB, whose
   runs of up to 1,356 blocks double the bin from 256 to 2,048 blocks
   (1.75 MiB more); the bin grows to its run instead (under 1.1 MiB more)
   and the last 10 batches take no fill nor overflow. Main c591bcc: the
   doubling refused, the bin stays at 256 blocks, each batch 4-5 fills and
   as many overflows (micro -m batch -s 16,...,4096 -t 8: 1 KiB 13-15 ns a
   pair against 5 now). It runs with a purge delay of an hour
   (tests/unit/CMakeLists.txt). */
enum { RUN_N = 1100, RUN_IDLE = 9 };
static void a_bin_past_tcache_bytes_grows_to_its_run_when_the_pool_part_has_not_the_doubling(void)
{
    size_t cpus = kib_case_cpus(2048, RUN_IDLE / 2, "10 caches do not share them");
    pthread_t t[RUN_IDLE];
    idle_threads_start(t, RUN_IDLE, NULL, cpus);
    static void *p[RUN_N];
    uint64_t slow;
    size_t cap = kib_batches(p, RUN_N, 60, &slow);
    size_t extra = nd_tls_tc->cap_extra, part = ND_POOL_MULT * (size_t)nd_opt(ND_OPT_tcache_total) / (RUN_IDLE + 1);
    idle_threads_end(t, RUN_IDLE);
    EXPECT(cap >= RUN_N, "the 1 KiB bin, in batches of %d, to grow past tcache_bytes (256 blocks) to hold them; "
           "its capacity is %zu", RUN_N, cap);
    EXPECT(cap < 2048, "the bin to grow to its run, not to the doubling its cache's part has not; it holds %zu", cap);
    EXPECT(extra <= part, "the cache to draw at most its part of the pool, %zu; it drew %zu", part, extra);
    EXPECT(slow == 0, "the last 10 batches to take no fill nor overflow, %llu", (unsigned long long)slow);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after the threads exited");
}

/* While CPUs are shared, a bin whose batches cycle through the store with
   blocks of another thread's pages grows past tcache_bytes as one of its
   own blocks does (tcache.c: nd_tcache_grow_past): a thread allocates
   3,000 blocks of 1 KiB and frees them (its overflows put them in the
   transfer store) and stays alive, beside 2 x CPUs - 1 idle threads; this
   thread's batches of 1,000 blocks of 1 KiB then take its blocks from the
   store and cycle them through it; its bin grows to hold a batch and the
   last 10 take no fill nor overflow. Main c591bcc: only a full bin of its
   own heap's blocks grew past tcache_bytes while CPUs were shared
   (nd_bin_holds_own); this one stayed at 256 blocks, 4 fills and as many
   overflows a batch (micro -m batch -s 1024 -t 8, whose threads' batches
   mix in the store: 11-15 ns a pair against 5 now; no loss of CPU or peak
   RSS on mstress, rptest, Larson, shortlived or mthread at 8 threads on 2
   CPUs, docs/results.md, stop 70). */
enum { SEED_N = 3000, MIX_N = 1000 };
static void *seed_store_then_idle(void *arg)
{
    (void)arg;
    static void *q[SEED_N];
    for (int i = 0; i < SEED_N; i++)
        q[i] = nodal_malloc(1024);
    for (int i = 0; i < SEED_N; i++)
        nodal_free(q[i]);
    pthread_barrier_wait(&own_barrier);   /* every cache made */
    pthread_barrier_wait(&own_barrier);   /* the loops done */
    return NULL;
}
static void with_cpus_shared_a_bin_cycling_another_threads_blocks_grows_past_tcache_bytes(void)
{
    size_t cpus = kib_case_cpus(1024, 7, "an even part of the pool under 1 MiB");
    int n = (int)(2 * cpus);
    pthread_t t[14];
    idle_threads_start(t, n, seed_store_then_idle, cpus);
    nd_tcache *tc = nd_tls_tc;
    static void *p[MIX_N];
    /* The first batch: how many of its blocks are of another heap's pages. */
    size_t foreign = 0;
    for (int i = 0; i < MIX_N; i++) {
        p[i] = nodal_malloc(1024);
        foreign += nd_load_relaxed(&nd_page_of(nd_seg_base(p[i]), p[i])->heap) != &tc->heap;
    }
    for (int i = 0; i < MIX_N; i++)
        nodal_free(p[i]);
    uint64_t slow;
    size_t cap = kib_batches(p, MIX_N, 60, &slow);
    idle_threads_end(t, n);
    EXPECT(foreign >= MIX_N / 2, "the first batch to take the other thread's blocks from the store, %zu of %d",
           foreign, MIX_N);
    EXPECT(cap >= MIX_N, "the 1 KiB bin, in batches of %d of another thread's blocks, to grow past tcache_bytes "
           "(256 blocks) while CPUs are shared; its capacity is %zu", MIX_N, cap);
    EXPECT(slow == 0, "the last 10 batches to take no fill nor overflow, %llu", (unsigned long long)slow);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after the threads exited");
}

/* A thread that takes a pooled record takes the capacities its former
   thread grew its bins to; a bin of its own whose batches cycle through
   the store grows past tcache_bytes all the same, the inherited bins
   giving their capacity back (tcache.c: nd_tcache_reclaim): the first
   thread loops over batches of 1,000 blocks of 128 B and of 256 B (bins
   of 1,024 blocks, 384 KiB, more than tcache_bytes) and exits; the next,
   on its record, loops over batches of 1,000 blocks of 1 KiB, which go
   past tcache_bytes (256 blocks) once they cycle, and the last 10 take no
   fill nor overflow. Main 5f90bfb: the inherited bins counted as the
   cache's other bins (tcache.c: nd_tcache_grow_past) and the 1 KiB bin
   stayed at 256 blocks, each batch 3-4 fills and as many overflows. It
   runs with a purge delay of an hour (tests/unit/CMakeLists.txt): no GC
   pass shrinks the first thread's bins in between. */
enum { HEIR_N = 1000, HEIR_LOOPS = 60 };
static uintptr_t heir_tid;
static void *former_thread(void *arg)
{
    (void)arg;
    static __thread void *p[HEIR_N];
    for (int loop = 0; loop < 20; loop++)
        for (size_t size = 128; size <= 256; size *= 2) {
            for (int i = 0; i < HEIR_N; i++)
                p[i] = nodal_malloc(size);
            for (int i = 0; i < HEIR_N; i++)
                nodal_free(p[i]);
        }
    heir_tid = nd_tls_tc->heap.tid;
    return NULL;
}
static void *heir_thread(void *arg)
{
    size_t *out = arg;
    static __thread void *p[HEIR_N];
    nodal_free(nodal_malloc(1024));   /* this thread's cache: the record it took, or a new one */
    nd_tcache *tc = nd_tls_tc;
    unsigned c = nd_class_of(1024);
    out[2] = tc->heap.tid == heir_tid;
    uint64_t before = 0;
    for (int loop = 0; loop < HEIR_LOOPS; loop++) {
        if (loop == HEIR_LOOPS - 10)
            before = nd_bin_info_of(tc, c)->counts.fills + nd_bin_info_of(tc, c)->counts.flushes;
        for (int i = 0; i < HEIR_N; i++)
            p[i] = nodal_malloc(1024);
        for (int i = 0; i < HEIR_N; i++)
            nodal_free(p[i]);
    }
    out[0] = nd_bin_info_of(tc, c)->cap;
    out[1] = (size_t)(nd_bin_info_of(tc, c)->counts.fills + nd_bin_info_of(tc, c)->counts.flushes - before);
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    return NULL;
}

static void a_thread_on_a_pooled_record_grows_its_own_bin_past_the_inherited_ones(void)
{
    size_t out[3] = {0};
    if (nd_opt(ND_OPT_tcache_bytes) != 256 << 10 || nd_opt(ND_OPT_tcache_total) != 1 << 20 ||
        nd_opt(ND_OPT_transfer) != 2 || nd_opt(ND_OPT_tcache_count) < 1024 || nd_secure_on())
        SKIP("made for the defaults tcache_bytes=256k, tcache_total=1m, transfer=2");
    EXPECT(nd_opt(ND_OPT_purge_delay) >= 600000,
           "this case to run with purge_delay=3600000 (no GC pass between the threads), it is %ld ms",
           nd_opt(ND_OPT_purge_delay));
    in_a_new_thread(former_thread);
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, heir_thread, out) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    if (!out[2])
        SKIP("the second thread did not take the first one's record (another node's pool?)");
    EXPECT(out[0] >= HEIR_N, "the 1 KiB bin, in batches of %d, to grow past tcache_bytes (256 blocks) beside the "
           "inherited bins of 128 B and 256 B; its capacity is %zu", HEIR_N, out[0]);
    EXPECT(out[1] == 0, "the last 10 batches of 1 KiB to take no fill nor overflow, %zu", out[1]);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after the threads exited");
}

/* Class c's counters summed over every record (live, pooled, exited
   threads'). */
static nd_snap_class class_in_records(unsigned c)
{
    static nd_snap_class cls[ND_CLASS_COUNT];
    static nd_snap_totals tot;
    static nd_snap_tier tier_from[ND_TIER_COUNT][ND_MAX_NODES];
    size_t threads = 0, pooled = 0;
    memset(cls, 0, sizeof cls);
    memset(&tot, 0, sizeof tot);
    memset(tier_from, 0, sizeof tier_from);
    nd_thread_stats_sum(cls, &tot, tier_from, &threads, &pooled, NULL, NULL);
    return cls[c];
}

/* The blocks waiting in every record's caches (live, pooled, exited
   threads'), class c. */
static uint64_t cached_in_records(unsigned c)
{
    return class_in_records(c).cached;
}

/* The blocks class c's transfer store of the plain kind of this thread's
   cache holds. */
static size_t held_in_store(unsigned c)
{
    nd_xfer *x = nd_xfer_find(nd_tls_tc->kind);
    return x != NULL ? nd_xfer_cap(x, c) - nd_xfer_room(x, c) : 0;
}

/* Each allocates EXIT_BLOCKS blocks of 256 B and frees them, three times
   (its bin grows to hold them: dry, then full), and exits with them
   cached, 16 KiB, with 4 blocks of 1 KiB and a block of each of
   exit_large's sizes (584 KiB, in bins of medium classes, which start at
   one block: its cache holds more than half of tcache_total); all alive
   together. */
enum { EXIT_BLOCKS = 64, EXIT_LARGE = 7 };
/* in_share_threads_exiting_in_turn: the threads' held[] (NULL: no turns)
   and each thread's turn to exit. */
static size_t *exit_held;
static sem_t exit_turn[SHARE_THREADS];
static const size_t exit_large[EXIT_LARGE] = {49152, 57344, 65536, 81920, 98304, 114688, 131072};
static void *exit_with_blocks_cached(void *arg)
{
    size_t *held = arg;
    void *p[EXIT_BLOCKS];
    nodal_free(nodal_malloc(1));
    pthread_barrier_wait(&share_barrier);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < EXIT_BLOCKS; i++)
            p[i] = nodal_malloc(256);
        for (int i = 0; i < EXIT_BLOCKS; i++)
            nodal_free(p[i]);
    }
    for (int i = 0; i < 4; i++)   /* 4 KiB: kept */
        p[i] = nodal_malloc(1024);
    for (int i = 0; i < 4; i++)
        nodal_free(p[i]);
    size_t large = 0;
    for (int k = 0; k < EXIT_LARGE; k++) {   /* a block each, their bins' starting capacity: 584 KiB */
        unsigned lc = nd_class_of(exit_large[k]);
        nodal_free(nodal_malloc(exit_large[k]));
        large += (size_t)(nd_tls_tc->bins[lc].empty - nd_tls_tc->bins[lc].cur) * nd_class_size[lc];
    }
    EXPECT(large >= (size_t)nd_opt(ND_OPT_tcache_total) / 2, "the cache to hold half of tcache_total or more in its "
           "bins of medium classes, %zu bytes", large);
    unsigned c = nd_class_of(256);
    *held = (size_t)(nd_tls_tc->bins[c].empty - nd_tls_tc->bins[c].cur);
    EXPECT(nd_tcache_is_valid(nd_tls_tc), "the cache invariants to hold");
    pthread_barrier_wait(&share_barrier);
    if (exit_held != NULL)   /* (in_share_threads_exiting_in_turn) */
        while (sem_wait(&exit_turn[held - exit_held]) != 0 && errno == EINTR)
            ;
    return NULL;
}

/* Runs exit_with_blocks_cached in SHARE_THREADS threads alive together,
   each given its held[i], which exit one at a time: thread i returns once
   thread i - 1 has been joined (its exit, hand-over and all, done). */
static void in_share_threads_exiting_in_turn(size_t *held)
{
    pthread_t t[SHARE_THREADS];
    nodal_free(nodal_malloc(1));   /* this thread's cache counts too */
    pthread_barrier_init(&share_barrier, NULL, SHARE_THREADS);
    for (int i = 0; i < SHARE_THREADS; i++)
        EXPECT(sem_init(&exit_turn[i], 0, 0) == 0, "sem_init to work");
    exit_held = held;
    for (int i = 0; i < SHARE_THREADS; i++)
        EXPECT(pthread_create(&t[i], NULL, exit_with_blocks_cached, &held[i]) == 0, "pthread_create to work");
    for (int i = 0; i < SHARE_THREADS; i++) {
        sem_post(&exit_turn[i]);
        pthread_join(t[i], NULL);
    }
    exit_held = NULL;
    for (int i = 0; i < SHARE_THREADS; i++)
        sem_destroy(&exit_turn[i]);
    pthread_barrier_destroy(&share_barrier);
}

/* A thread that exits leaves its record in the pool, cached blocks and
   all, for the next thread to start warm; but while CPUs are shared the
   next thread mostly waits for a CPU, and the blocks with it, so the
   record's caches hand them to the transfer store as the thread exits
   (tcache.c: nd_tcache_hand_over), where the threads that run take them.
   One thread alone (two caches, no CPU shared) exits with its 64 blocks
   of 256 B (and what its fills took past them) cached, and they stay in
   its pooled record; then 16 threads alive together (more than two caches
   per CPU), each exiting with as many cached, leave none in any record,
   and the store holds them (they exit one at a time: below). A bin holding less than 8 KiB of blocks
   keeps them (ND_HAND_OVER_MIN): the 4 blocks of 1 KiB stay. (A cache
   holding less than half of tcache_total keeps all of its blocks:
   bench/threadchurn's.) Main: the 16 pooled records hold theirs. */
static void with_cpus_shared_an_exiting_threads_cache_hands_its_blocks_to_the_store(void)
{
    size_t cpus, held[SHARE_THREADS];
    share_of_each(&cpus);
    unsigned c = nd_class_of(256);
    if (cpus == 0 || SHARE_THREADS + 1 <= 2 * cpus || nd_opt(ND_OPT_transfer) != 2 || nd_opt(ND_OPT_purge_delay) == 0 ||
        nd_opt(ND_OPT_tcache_max) < 131072 || nd_opt(ND_OPT_tcache_total) > 1 << 20 || nd_secure_on() ||
        nd_opt(ND_OPT_check) >= 2)
        SKIP("no CPU shared by %d threads on %zu CPUs, or not transfer=2 with caches of every class up to a "
             "tcache_total of 1 MiB and pooled records", SHARE_THREADS, cpus);
    /* Nothing here may depend on how long the case takes (on 2 loaded
       CPUs, seconds): with the default purge_delay of 100 ms a pooled
       record is taken apart after 1 s (thread.c: ND_POOL_WAIT), caches
       and its bins' blocks and all, and a sweep every 100 ms sends a store
       class no cache took from back to its pages, whole (xfer.h). */
    EXPECT(nd_opt(ND_OPT_purge_delay) >= 10000, "this case to run with NODAL_OPTIONS=purge_delay=10000 (ctest sets "
           "it), purge_delay is %ld", (long)nd_opt(ND_OPT_purge_delay));
    nodal_free(nodal_malloc(1));   /* this thread's cache counts too */
    pthread_t t;
    pthread_barrier_init(&share_barrier, NULL, 1);
    EXPECT(pthread_create(&t, NULL, exit_with_blocks_cached, &held[0]) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    pthread_barrier_destroy(&share_barrier);
    EXPECT(held[0] >= EXIT_BLOCKS && cached_in_records(c) >= held[0],
           "a thread exiting with no CPU shared to leave its %d cached blocks of 256 B in its record (it cached %zu, "
           "the records hold %llu)", EXIT_BLOCKS, held[0], (unsigned long long)cached_in_records(c));
    nd_snap_class k0 = class_in_records(c), kib0 = class_in_records(nd_class_of(1024));
    size_t store0 = held_in_store(c);
    in_share_threads_exiting_in_turn(held);
    for (int i = 0; i < SHARE_THREADS; i++)
        EXPECT(held[i] * 256 >= 8192, "thread %d to exit with 8 KiB of blocks of 256 B cached or more, %zu blocks",
               i, held[i]);
    EXPECT(cached_in_records(c) == 0, "16 threads exiting with CPUs shared (%zu CPUs) to leave no block of 256 B in "
           "their records' caches, %llu", cpus, (unsigned long long)cached_in_records(c));
    /* A put never waits for a shard another thread is in (xfer.h), so the
       threads exit one at a time: when they all returned together, one
       preempted inside a shard on the 2 loaded CPUs made another's
       overflow find every shard it tried busy and send the rest of its
       blocks home (counted in xfer_full). Measured on main under
       stress-ng --cpu 2 (load 20+): 7 of 1,100 runs left 608-988 blocks in
       the store; the 3 whose counters were printed had 3-5 overflows
       that found it busy, and in 5 none was drained nor taken. */
    nd_snap_class k1 = class_in_records(c);
    uint64_t put = k1.xfer_put_blocks - k0.xfer_put_blocks, taken = k1.xfer_take_blocks - k0.xfer_take_blocks,
             drained = k1.xfer_drained - k0.xfer_drained, busy = k1.xfer_full - k0.xfer_full;
    size_t in_store = held_in_store(c);
    EXPECT(in_store - store0 == put - taken - drained, "the store to hold what the caches put in it: %zu blocks of 256 B "
           "now, %zu before; %llu put, %llu taken, %llu drained", in_store, store0, (unsigned long long)put,
           (unsigned long long)taken, (unsigned long long)drained);
    EXPECT(in_store >= (size_t)SHARE_THREADS * EXIT_BLOCKS, "the store to hold the %d blocks of 256 B they exited "
           "with, %zu (%llu put, %llu taken, %llu drained, %llu overflows found it full or busy)",
           SHARE_THREADS * EXIT_BLOCKS, in_store, (unsigned long long)put, (unsigned long long)taken,
           (unsigned long long)drained, (unsigned long long)busy);
    unsigned kib = nd_class_of(1024);
    EXPECT(cached_in_records(kib) >= 4 * SHARE_THREADS, "the bins of 1 KiB, holding 4 KiB each, to keep their blocks, "
           "%llu (%llu blocks of 1 KiB flushed meanwhile)", (unsigned long long)cached_in_records(kib),
           (unsigned long long)(class_in_records(kib).flush_blocks - kib0.flush_blocks));
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after the threads exited");
}

/* A bin whose thread's loops allocate, then free, 2.5 x tcache_bytes worth
   of one small class (640 blocks of 1 KiB by default) fits in no bin of
   tcache_bytes (256 blocks): each loop moves ~400 blocks out through the
   transfer store and back. While no CPU is shared, such a bin grows past
   tcache_bytes into its room (tcache.c: nd_bin_room, the pool's worth of
   its blocks or ND_EXTRA_MULT x cap_max, whichever is more), drawing from
   the process's pool, and its loops then take no fill nor overflow. Main:
   the bin stays at 256 blocks, 4-5 slow paths a loop. So do loops of
   1,000 blocks of 4 KiB (the pool's 4 MiB: a room of 1,024; it was 256,
   4 x cap_max, and each loop moved ~940 blocks through the store and the
   pages). Loops of 1,000 blocks of 16 KiB, larger than their bin's room
   (256), keep it within that room: it may grow at a fill whose run so
   far fits (nd_tcache_fill), never past the room. */
enum { KIB_LOOPS = 300 };
/* A bin whose batches cycle whole (an overflow sent the whole bin away, the
   fills since took a whole bin back) grows to the run it saw, within
   cap_max, at its next growth (tcache.c: nd_tcache_grow), not by one
   doubling a growth: a new thread loops over batches of 1,000 blocks of
   256 B (cap_max 1,024 blocks); its bin holds 1,024 after the 2nd batch
   (128 after the first) and the batches after it take no fill nor
   overflow. Main b3d4c58: one doubling a batch, 128, 256, 512, 1,024 after
   the 4th; with CPUs shared, where each doubling past the cache's share
   waits for ND_EXTRA_CYCLES cycles, longer (micro -m batch -s 256 -t 16,
   31 batches a thread: 9.5 ns a pair, 8.6 now; no CPU or peak RSS moved
   on the 2- and 8-thread rows of issue 18, docs/results.md, stop 70). */
enum { WHOLE_N = 1000, WHOLE_LOOPS = 16, WHOLE_BY = 2 };
static void *batches_of_256(void *arg)
{
    size_t *cap = arg;   /* out: the bin's capacity after each batch; [WHOLE_LOOPS]: slow paths after WHOLE_BY */
    static void *p[WHOLE_N];
    nd_tcache *tc = NULL;
    unsigned c = nd_class_of(256);
    uint64_t before = 0;
    for (int loop = 0; loop < WHOLE_LOOPS; loop++) {
        for (int i = 0; i < WHOLE_N; i++)
            p[i] = nodal_malloc(256);
        for (int i = 0; i < WHOLE_N; i++)
            nodal_free(p[i]);
        tc = nd_tls_tc;
        cap[loop] = nd_bin_info_of(tc, c)->cap;
        if (loop == WHOLE_BY - 1)
            before = nd_bin_info_of(tc, c)->counts.fills + nd_bin_info_of(tc, c)->counts.flushes;
    }
    cap[WHOLE_LOOPS] = (size_t)(nd_bin_info_of(tc, c)->counts.fills + nd_bin_info_of(tc, c)->counts.flushes - before);
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    return NULL;
}

static void a_bin_whose_batches_cycle_whole_grows_to_its_run_at_once(void)
{
    if (nd_opt(ND_OPT_tcache_bytes) != 256 << 10 || nd_opt(ND_OPT_tcache_total) != 1 << 20 ||
        nd_opt(ND_OPT_tcache_count) < 1024 || nd_secure_on())
        SKIP("made for the defaults tcache_bytes=256k, tcache_total=1m");
    EXPECT(nd_opt(ND_OPT_purge_delay) >= 600000,
           "this case to run with purge_delay=3600000 (no GC pass during the loops), it is %ld ms",
           nd_opt(ND_OPT_purge_delay));
    size_t cap[WHOLE_LOOPS + 1] = {0};
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, batches_of_256, cap) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    char caps[WHOLE_LOOPS * 8] = "", *at = caps;
    for (int i = 0; i < WHOLE_LOOPS; i++)
        at += snprintf(at, sizeof caps - (size_t)(at - caps), " %zu", cap[i]);
    EXPECT(cap[WHOLE_BY - 1] >= WHOLE_N, "the 256 B bin to hold a batch of %d by batch %d; its capacity after each:%s",
           WHOLE_N, WHOLE_BY, caps);
    EXPECT(cap[WHOLE_LOOPS] == 0, "the batches after the %dth to take no fill nor overflow, %zu", WHOLE_BY,
           cap[WHOLE_LOOPS]);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after the thread exited");
}

static void *kib_loops_past_tcache_bytes(void *arg)
{
    size_t *out = arg;   /* in: size, blocks a loop; out: slow paths of the last 100 loops, cap, cap_max */
    size_t size = out[0], n = out[1];
    void **blocks = nodal_malloc(n * sizeof(void *));
    unsigned c = nd_class_of(size);
    uint64_t before = 0;
    for (int loop = 0; loop < KIB_LOOPS; loop++) {
        if (loop == KIB_LOOPS - 100)
            before = nd_bin_info_of(nd_tls_tc, c)->counts.fills + nd_bin_info_of(nd_tls_tc, c)->counts.flushes;
        for (size_t i = 0; i < n; i++)
            blocks[i] = nodal_malloc(size);
        for (size_t i = 0; i < n; i++)
            nodal_free(blocks[(i * 7919) % n]);
    }
    nd_tcache *tc = nd_tls_tc;
    out[0] = (size_t)(nd_bin_info_of(tc, c)->counts.fills + nd_bin_info_of(tc, c)->counts.flushes - before);
    out[1] = nd_bin_info_of(tc, c)->cap;
    out[2] = nd_bin_cap_max(tc, c);
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    nodal_free(blocks);
    return NULL;
}

static void kib_loops(size_t size, size_t n, size_t *out)
{
    pthread_t t;
    out[0] = size;
    out[1] = n;
    EXPECT(pthread_create(&t, NULL, kib_loops_past_tcache_bytes, out) == 0, "pthread_create to work");
    pthread_join(t, NULL);
}

static void a_bin_whose_batches_cycle_through_the_store_grows_past_tcache_bytes(void)
{
    size_t out[3];
    if ((size_t)nd_opt(ND_OPT_tcache_total) != 1 << 20 || (size_t)nd_opt(ND_OPT_tcache_bytes) != 1 << 18 ||
        nd_opt(ND_OPT_tcache_count) != 2048 || nd_opt(ND_OPT_transfer) != 2 || nd_secure_on())
        SKIP("made for the defaults tcache_total=1m, tcache_bytes=256k, tcache_count=2048, transfer=2");
    nodal_free(nodal_malloc(1));   /* this thread's cache counts too */
    kib_loops(1024, 5 * (size_t)nd_opt(ND_OPT_tcache_bytes) / 2 / 1024, out);
    EXPECT(out[1] > out[2], "a bin of 1 KiB in loops of 640 blocks to grow past tcache_bytes (%zu blocks), its "
           "capacity is %zu", out[2], out[1]);
    EXPECT(out[0] < 10, "loops of 640 blocks of 1 KiB to take no fill or overflow once the bin grew, %zu in the "
           "last 100 loops", out[0]);
    kib_loops(4096, 1000, out);
    EXPECT(out[1] >= 1000, "a bin of 4 KiB in loops of 1,000 blocks to grow past tcache_bytes (%zu blocks) to hold "
           "them, its capacity is %zu", out[2], out[1]);
    EXPECT(out[0] < 10, "loops of 1,000 blocks of 4 KiB to take no fill or overflow once the bin grew, %zu in the "
           "last 100 loops", out[0]);
    kib_loops(16384, 1000, out);
    EXPECT(out[1] <= 256, "a bin of 16 KiB in loops of 1,000 blocks (16 MiB, more than the pool) to stay within its "
           "room, the pool's worth (256 blocks), its capacity is %zu (tcache_bytes: %zu)", out[1], out[2]);
    EXPECT(out[0] >= 100, "loops of 1,000 blocks of 16 KiB, past the pool, still to take fills and overflows: %zu in "
           "the last 100 loops", out[0]);
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after the threads exited");
}

static void *producer(void *arg)
{
    void **slots = arg;
    for (int i = 0; i < 20000; i++)
        slots[i] = nodal_malloc(16 + (size_t)(i % 300));
    EXPECT(nd_thread_is_valid(), "the producer's heap to be valid");
    return NULL;
}

/* Blocks freed by another thread go back to their owner's pages: once the
   owner has collected, the pages are empty again and the heap is valid. */
static void remote_frees_return_to_the_owner(void)
{
    static void *slots[20000];
    pthread_t t;
    nodal_free(nodal_malloc(1));   /* this thread has a heap to adopt into */
    EXPECT(pthread_create(&t, NULL, producer, slots) == 0, "pthread_create to work");
    pthread_join(t, NULL);   /* the producer exits: its segments are abandoned */
    for (int i = 0; i < 20000; i++)
        nodal_free(slots[i]);   /* remote frees into abandoned segments */
    nodal_collect(1);
    EXPECT(nd_thread_is_valid(), "the heap that adopted the segments to be valid");
    /* Everything returned: no small block of the producer is still live. */
    char json[1 << 16];
    nodal_stats_json(json, sizeof json);
    const char *th = strstr(json, "\"threads\":");
    EXPECT(th != NULL && atoi(th + 10) == 1, "only this thread to be live, stats say %.14s", th ? th : "nothing");
    const char *a = strstr(json, "\"allocated\":");
    EXPECT(a != NULL && atol(a + 12) == 0, "no byte to be allocated, stats say %.24s", a ? a : "nothing");
}

/* ---- notified pages: freed blocks waiting for an owner that does not allocate ---- */

/* A thread that allocated pages of blocks and then waits (as a producer
   the scheduler has set aside does): another thread frees its blocks, its
   full pages tell it (notified_pages), and it does not take them back
   until it runs again. A third heap (here the main thread's) that needs a
   fresh page meanwhile cannot use those blocks, and the statistics count
   that page (pages_past_notified). Once the owner runs (its collect), its
   notified pages leave the gauge, and the peak stays. */
enum { IDLE_N = 8192, IDLE_SIZE = 96 };
static void *idle_blocks[IDLE_N];
static sem_t idle_made, idle_go, idle_done;

static void *idle_owner(void *arg)
{
    (void)arg;
    for (int i = 0; i < IDLE_N; i++)
        idle_blocks[i] = nodal_malloc(IDLE_SIZE);
    sem_post(&idle_made);
    sem_wait(&idle_go);
    nodal_collect(0);   /* runs again: takes its notified pages back */
    EXPECT(nd_thread_is_valid(), "the owner's heap to be valid after it took its pages back");
    sem_post(&idle_done);
    sem_wait(&idle_go);
    return NULL;
}

static void pages_waiting_for_an_idle_owner_are_counted_when_another_heap_takes_a_fresh_page(void)
{
    sem_init(&idle_made, 0, 0);
    sem_init(&idle_go, 0, 0);
    sem_init(&idle_done, 0, 0);
    size_t waiting0 = nd_load_relaxed(&nd_gauge.notified_pages);
    size_t past0 = nd_load_relaxed(&nd_gauge.pages_past_notified);
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, idle_owner, NULL) == 0, "pthread_create to work");
    sem_wait(&idle_made);
    for (int i = 0; i < IDLE_N; i++) {
        EXPECT(idle_blocks[i] != NULL, "malloc(%d) to succeed", IDLE_SIZE);
        nodal_free(idle_blocks[i]);
    }
    nodal_collect(0);   /* this thread's cache and the stores: every block home, to the owner's pages */
    /* 8,192 blocks of 96 B fill a dozen 64 KiB pages, all full but the
       last: each full one that got blocks back is notified. */
    size_t waiting = nd_load_relaxed(&nd_gauge.notified_pages);
    EXPECT(waiting >= waiting0 + 8, "the owner's full pages to wait notified, notified_pages %zu -> %zu", waiting0,
           waiting);
    EXPECT(nd_load_relaxed(&nd_gauge.peak_notified_pages) >= waiting, "peak_notified_pages to be %zu at least",
           waiting);
    /* This thread needs pages of the class now: fresh ones, counted. */
    static void *mine[3 * IDLE_N / 8];
    for (size_t i = 0; i < sizeof mine / sizeof mine[0]; i++)
        mine[i] = nodal_malloc(IDLE_SIZE);
    size_t past = nd_load_relaxed(&nd_gauge.pages_past_notified);
    EXPECT(past > past0, "a fresh page taken while the owner's pages waited to be counted, pages_past_notified %zu -> %zu",
           past0, past);
    sem_post(&idle_go);
    sem_wait(&idle_done);
    EXPECT(nd_load_relaxed(&nd_gauge.notified_pages) == waiting0,
           "the owner's pages to leave the gauge once it took them back, notified_pages %zu (before %zu)",
           (size_t)nd_load_relaxed(&nd_gauge.notified_pages), waiting0);
    EXPECT(nd_load_relaxed(&nd_gauge.peak_notified_pages) >= waiting, "the peak to stay");
    char json[1 << 16], want[64];
    nodal_stats_json(json, sizeof json);
    snprintf(want, sizeof want, "\"pages_past_notified\":%zu", (size_t)nd_load_relaxed(&nd_gauge.pages_past_notified));
    EXPECT(strstr(json, want) != NULL, "the JSON report to have %s", want);
    for (size_t i = 0; i < sizeof mine / sizeof mine[0]; i++)
        nodal_free(mine[i]);
    sem_post(&idle_go);
    pthread_join(t, NULL);
    EXPECT(nd_thread_is_valid(), "this thread's heap to be valid");
}

/* Blocks another thread frees wait in its cache and go back to their own
   pages as one chain per page: freed in address order, runs cross page
   boundaries (page 0 of a segment starts after the header) and must still
   land on the right page. The owner then takes them all back, checked. */
struct handoff { void **blocks; int n, down; };

static void *free_in_address_order(void *arg)
{
    struct handoff *h = arg;
    for (int i = 0; i < h->n; i++)
        nodal_free(h->blocks[h->down ? h->n - 1 - i : i]);
    nodal_collect(0);   /* flush this thread's cache: every chain goes home now */
    return NULL;
}

static int by_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
    return x < y ? -1 : x > y;
}

static void remote_frees_in_chains_go_back_to_their_own_pages(void)
{
    enum { N = 40000 };
    static void *blocks[N];
    size_t sizes[] = { 48, 96, 3072, 48, 96, 3072 };
    for (size_t k = 0; k < 6; k++) {
        for (int i = 0; i < N; i++) {
            blocks[i] = nodal_malloc(sizes[k]);
            EXPECT(blocks[i] != NULL, "malloc(%zu) to succeed", sizes[k]);
        }
        qsort(blocks, N, sizeof blocks[0], by_address);
        struct handoff h = { blocks, N, k >= 3 };   /* ascending, then descending addresses */
        pthread_t t;
        EXPECT(pthread_create(&t, NULL, free_in_address_order, &h) == 0, "pthread_create to work");
        pthread_join(t, NULL);
        for (int i = 0; i < N; i++)
            blocks[i] = nodal_malloc(sizes[k]);   /* takes the chains back, checking every link */
        EXPECT(nd_thread_is_valid(), "the heap invariants to hold after taking back %d blocks of %zu B", N, sizes[k]);
        for (int i = 0; i < N; i++)
            nodal_free(blocks[i]);
    }
}

/* Blocks another thread freed, in any order, come back to their owner in
   address order: the owner sorts what it takes from a page's remote list
   (page.c, nd_page_collect_sort). So the owner's next requests get
   neighbouring blocks: nearly every step from one block to the next goes
   up (998 of 999 here, against 498, a random order, before). */
enum { ORDER_N = 1000 };
static void *free_shuffled(void *arg)
{
    void **b = arg;
    for (int i = 0; i < ORDER_N; i++)
        nodal_free(b[i]);
    nodal_collect(0);   /* flush this thread's cache: every page's blocks go home now */
    return NULL;
}

static void *own_and_take_back(void *arg)
{
    (void)arg;
    static void *b[ORDER_N], *again[ORDER_N];
    for (int i = 0; i < ORDER_N; i++) {
        b[i] = nodal_malloc(64);
        EXPECT(b[i] != NULL, "malloc(64) to succeed");
    }
    uint64_t x = 88172645463325252ull;
    for (int i = ORDER_N - 1; i > 0; i--) {   /* a random order */
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int j = (int)(x % (uint64_t)(i + 1));
        void *t = b[i];
        b[i] = b[j];
        b[j] = t;
    }
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, free_shuffled, b) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    qsort(b, ORDER_N, sizeof b[0], by_address);
    int up = 0, reused = 0;
    for (int i = 0; i < ORDER_N; i++) {
        again[i] = nodal_malloc(64);
        EXPECT(again[i] != NULL, "malloc(64) to succeed");
        up += i > 0 && (uintptr_t)again[i] > (uintptr_t)again[i - 1];
        reused += bsearch(&again[i], b, ORDER_N, sizeof b[0], by_address) != NULL;
    }
    EXPECT(reused >= ORDER_N * 9 / 10, "the freed blocks to come back: %d of %d are", reused, ORDER_N);
    EXPECT(up >= (ORDER_N - 1) * 95 / 100, "the blocks to come back in address order: %d of %d steps go up", up,
           ORDER_N - 1);
    EXPECT(nd_thread_is_valid(), "the heap to be valid");
    for (int i = 0; i < ORDER_N; i++)
        nodal_free(again[i]);
    return NULL;
}

static void blocks_freed_by_another_thread_come_back_in_address_order(void)
{
    in_a_new_thread(own_and_take_back);   /* its own heap, nothing cached yet */
}

/* A thread that frees a block of a full page "notifies" the owner: it holds
   the page BUSY from its push until the page is on the owner's `notified`
   list. fork() can cut such a thread off at either point; the owner in the
   child must not wait for it forever. Simulated here: this thread pushes
   one of its own blocks as a remote free would, stops where the notifier
   would be cut off, and forks. The child frees everything (the page leaves
   the full queue, which waits out BUSY), allocates again and checks the
   heap. */
static void fork_cutting_off_a_remote_free_leaves_a_working_child(void)
{
    enum { N = 4096 };
    static void *blocks[N];
    for (int variant = 0; variant < 2; variant++) {
        nd_page *pg = NULL;
        int victim = -1;
        for (int i = 0; i < N; i++) {
            blocks[i] = nodal_malloc(64);
            EXPECT(blocks[i] != NULL, "malloc(64) to succeed");
        }
        for (int i = 0; i < N && pg == NULL; i++) {
            nd_page *q = nd_page_of(nd_seg_base(blocks[i]), blocks[i]);
            if ((nd_load_acquire(&q->xfree) & ND_XSTATE_MASK) == ND_XSTATE_NOTIFY)
                pg = q, victim = i;
        }
        EXPECT(pg != NULL, "some page of %d blocks of 64 B to be full and armed", N);
        EXPECT(nd_page_xpush(pg, blocks[victim]) == ND_XSTATE_NOTIFY,
               "the push to find the page armed (the pusher must notify)");
        nd_heap *h = nd_load_acquire(&pg->heap);
        if (variant == 1) {     /* cut off after queueing the page, before clearing BUSY */
            pg->xnext = h->notified;
            h->notified = pg;
        }
        blocks[victim] = NULL;
        fflush(NULL);
        pid_t pid = fork();
        EXPECT(pid >= 0, "fork to work");
        if (pid == 0) {
            alarm(20);
            for (int i = 0; i < N; i++)
                nodal_free(blocks[i]);
            nodal_collect(0);
            for (int i = 0; i < N; i++)
                blocks[i] = nodal_malloc(64);
            bool ok = nd_thread_is_valid();
            for (int i = 0; i < N; i++)
                nodal_free(blocks[i]);
            _exit(ok && nd_thread_is_valid() ? 0 : 3);
        }
        /* The parent is single-threaded too: finish the notification the
           same way, then give everything back. */
        nd_heap_fork_child(h);
        int st;
        while (waitpid(pid, &st, 0) < 0)
            ;
        EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0,
               "the child (variant %d) to free, allocate and exit 0; it %s", variant,
               nd_describe_status(st));
        for (int i = 0; i < N; i++)
            nodal_free(blocks[i]);
        EXPECT(nd_thread_is_valid(), "the parent's heap to be valid after variant %d", variant);
    }
}

/* realloc moves a plain huge block to a new mapping when it cannot grow
   in place (mremap). The old addresses are free for anyone once the block
   has moved: a block another thread maps there meanwhile must keep its
   segment-map entries (they were wiped when the move cleared the old
   range's entries after the fact: that block's free then aborted with
   "invalid pointer (not allocated by nodal)"). The hook maps huge blocks
   of the old size right after the move, as another thread could: the
   kernel usually hands back the range just released. */
static void *moved_hook_blocks[4];
static int moved_hook_hits;

static void map_where_the_block_was(void *old_start, size_t old_size)
{
    for (int i = 0; i < 4; i++) {
        moved_hook_blocks[i] = nodal_malloc(old_size - 8192);
        if ((uint8_t *)moved_hook_blocks[i] >= (uint8_t *)old_start &&
            (uint8_t *)moved_hook_blocks[i] < (uint8_t *)old_start + old_size)
            moved_hook_hits++;
    }
}

static void a_huge_block_mapped_where_a_moved_one_was_stays_nodals(void)
{
    enum { ROUNDS = 16 };
    nd_huge_moved_hook = map_where_the_block_was;
    for (int r = 0; r < ROUNDS; r++) {
        /* A block, and one right after it so that it cannot grow in place. */
        size_t size = (size_t)(8 + r % 4) << 20;
        uint8_t *p = nodal_malloc(size);
        void *fence = nodal_malloc((size_t)4 << 20);
        EXPECT(p != NULL && fence != NULL, "huge mallocs to succeed");
        memset(p, 0x5a, 4096);
        moved_hook_blocks[0] = NULL;
        uint8_t *q = nodal_realloc(p, size * 3);
        EXPECT(q != NULL && q[4095] == 0x5a, "realloc of a huge block to keep its contents");
        for (int i = 0; i < 4; i++) {
            void *b = moved_hook_blocks[i];
            if (b == NULL)
                continue;
            EXPECT(nodal_usable_size(b) >= ((size_t)(8 + r % 4) << 20) - 8192,
                   "a huge block mapped while another moved to be nodal's and in use");
            nodal_free(b);   /* aborts if its segment-map entries were wiped */
            moved_hook_blocks[i] = NULL;
        }
        nodal_free(q);
        nodal_free(fence);
    }
    nd_huge_moved_hook = NULL;
    if (moved_hook_hits == 0)
        SKIP("the kernel never mapped a new block where a moved one was (%d rounds): the window was "
             "not exercised", ROUNDS);
}

/* Under an address-space limit that leaves room for no 4 MiB segment, a
   thread's small and medium blocks come from short segments (segment.h):
   their invariants hold (nd_thread_is_valid checks every segment of the
   thread's heaps), their blocks stay intact, a request that does not fit
   fails with ENOMEM, and an empty short segment goes back to the OS. */
static void *short_segment_work(void *arg)
{
    enum { N = 512 };
    static void *p[N];
    static size_t sz[N];
    int *result = arg;
    uint64_t x = nd_test_seed();
    int ok = 0, failed = 0, short_seen = 0, bad = 0;
    for (int round = 0; round < 8; round++) {
        for (int i = 0; i < 3000; i++) {
            size_t k = (size_t)(x >> 40) % N;
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            if (p[k] != NULL) {
                for (size_t j = 0; j < sz[k]; j += 512)
                    bad += ((unsigned char *)p[k])[j] != (unsigned char)(k + j);
                nodal_free(p[k]);
                p[k] = NULL;
                continue;
            }
            sz[k] = (x >> 33) % 4 == 0 ? 16384 + (x >> 20) % (112 << 10) : 1 + (x >> 20) % 2048;
            errno = 0;
            p[k] = nodal_malloc(sz[k]);
            if (p[k] == NULL) {
                failed++;
                bad += errno != ENOMEM;
                continue;
            }
            ok++;
            nd_segment *seg = nd_seg_base(p[k]);
            if (seg->size < ND_SEG_SIZE && !short_seen) {
                short_seen = 1;
                /* Its block is nodal's; its window's rest is not. */
                bad += nodal_node_of(p[k]) < 0 || nodal_node_of((uint8_t *)seg + seg->size) != -1;
            }
            for (size_t j = 0; j < sz[k]; j += 512)
                ((unsigned char *)p[k])[j] = (unsigned char)(k + j);
        }
        bad += !nd_thread_is_valid();
    }
    for (int k = 0; k < N; k++) {
        nodal_free(p[k]);
        p[k] = NULL;
    }
    nodal_collect(1);
    bad += !nd_thread_is_valid();
    result[0] = ok, result[1] = failed, result[2] = short_seen, result[3] = bad;
    return NULL;
}

/* The static TLS of the process's objects (their PT_TLS segments, each
   with its alignment), which glibc takes from every thread's stack. */
static int add_tls_bytes(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_TLS)
            *(size_t *)data += info->dlpi_phdr[i].p_memsz + info->dlpi_phdr[i].p_align;
    return 0;
}
static size_t static_tls_bytes(void)
{
    size_t bytes = 0;
    dl_iterate_phdr(add_tls_bytes, &bytes);
    return bytes;
}

/* A forked child for an address-space-limit test (killed after 60 s),
   with *attr set for threads of 64 KiB stacks past the static TLS (glibc
   takes the TLS from the thread's stack: with 64 KiB in all, a case's
   thread-local array of 8 KiB more left these children no thread, exit
   5, stop 70): its pid in the parent, 0 in the child. */
static pid_t fork_limit_child(pthread_attr_t *attr)
{
#ifdef ND_TEST_SANITIZER
    SKIP("a sanitizer maps memory of its own for a thread (and ThreadSanitizer needs more than a 64 KiB "
         "stack): an address-space limit set to what the process maps now leaves it none");
#endif
    fflush(NULL);
    pid_t pid = fork();
    EXPECT(pid >= 0, "fork to work");
    if (pid == 0) {
        alarm(60);
        pthread_attr_init(attr);
        pthread_attr_setstacksize(attr, ((64 << 10) + static_tls_bytes() + 4095) & ~(size_t)4095);
    }
    return pid;
}

/* In such a child: RLIMIT_AS set to what the process maps now plus
   extra bytes; exit status 4 when it cannot be. */
static void limit_address_space_to_now_plus(rlim_t extra)
{
    long vm = nd_vm_kib();
    struct rlimit lim;
    lim.rlim_cur = lim.rlim_max = (rlim_t)vm * 1024 + extra;
    if (vm <= 0 || setrlimit(RLIMIT_AS, &lim) != 0)
        _exit(4);
}

/* Keeps the calling thread (and the threads it starts) on CPU c; false
   when it may not run there. */
static bool run_on_cpu(int c)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(c, &set);
    return sched_setaffinity(0, sizeof set, &set) == 0;
}

/* Child pid's status, once it has exited. */
static int wait_for_child(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        ;
    return st;
}

static void short_segments_under_an_address_space_limit_keep_the_heap_valid(void)
{
    pthread_attr_t attr;
    pid_t pid = fork_limit_child(&attr);
    if (pid == 0) {
        /* Room for the thread's stack and 3 MiB: no whole segment. */
        limit_address_space_to_now_plus((rlim_t)3 << 20);
        int r[4] = { 0, 0, 0, 0 };
        pthread_t t;
        if (pthread_create(&t, &attr, short_segment_work, r) != 0)
            _exit(5);
        pthread_join(t, NULL);
        printf("%d %d %d %d\n", r[0], r[1], r[2], r[3]);
        _exit(r[0] > 0 && r[2] && r[3] == 0 ? 0 : 3);
    }
    int st = wait_for_child(pid);
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0,
           "the child to get blocks from short segments, with every block intact, every failure ENOMEM, "
           "nodal_node_of a node for a block of a short segment and -1 past its end, and the heap valid (exit 0); it %s (4: no limit, 5: no thread, 3: see its line of ok, failed, "
           "short segments seen, problems)", nd_describe_status(st));
}

/* Under an address-space limit with no room left at all (filled with
   256 KiB blocks, then with single OS pages of the program's own), a
   thread that had allocated nothing gets 100 small blocks of 64 B from its
   node's reserve: each in the 256 KiB short segment the plain shared heap
   took (node.h), intact, the node's invariants (nd_node_is_valid: the
   reserve's) and the thread's holding; once they are freed and collected,
   the reserve stays mapped and still the shared heap's. */
static sem_t reserve_go;

static void *reserve_work(void *arg)
{
    int *r = arg;   /* ok, in the reserve, problems */
    while (sem_wait(&reserve_go) != 0)
        ;
    static unsigned char *p[100];
    nd_segment *seg = NULL;
    for (int i = 0; i < 100; i++) {
        p[i] = nodal_malloc(64);
        if (p[i] == NULL)
            continue;
        r[0]++;
        memset(p[i], i, 64);
        nd_segment *s = nd_seg_base(p[i]);
        if (s->size == ((size_t)256 << 10) && s->owner != NULL && s->owner->shared && !s->bound) {
            r[1]++;
            seg = s;
        }
    }
    r[2] += !nd_thread_is_valid();
    if (seg != NULL)
        r[2] += !nd_node_is_valid(seg->node);
    for (int i = 0; i < 100; i++)
        if (p[i] != NULL) {
            for (int j = 0; j < 64; j++)
                r[2] += p[i][j] != (unsigned char)i;
            nodal_free(p[i]);
        }
    nodal_collect(1);
    if (seg != NULL)
        r[2] += !nd_seg_cookie_ok(seg) || seg->owner == NULL || !nd_node_is_valid(seg->node);
    r[2] += !nd_thread_is_valid();
    return NULL;
}

static void a_thread_with_no_room_left_gets_small_blocks_from_its_nodes_reserve(void)
{
    pthread_attr_t attr;
    pid_t pid = fork_limit_child(&attr);
    if (pid == 0) {
        int r[3] = { 0, 0, 0 };
        pthread_t t;
        if (sem_init(&reserve_go, 0, 0) != 0 || pthread_create(&t, &attr, reserve_work, r) != 0)
            _exit(5);
        limit_address_space_to_now_plus((rlim_t)24 << 20);
        int n = 0, pages = 0;
        while (n < 200 && nodal_malloc(256 << 10) != NULL)
            n++;
        while (pages < 100000 && mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) != MAP_FAILED)
            pages++;
        sem_post(&reserve_go);
        pthread_join(t, NULL);
        printf("%d blocks, %d pages; %d %d %d\n", n, pages, r[0], r[1], r[2]);
        _exit(n > 0 && r[0] == 100 && r[1] == 100 && r[2] == 0 ? 0 : 3);
    }
    int st = wait_for_child(pid);
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0,
           "the child's new thread to get 100 of 100 small blocks, all from the 256 KiB reserve the plain shared "
           "heap took, intact, with the node and thread valid before and after they are freed (exit 0); it %s "
           "(4: no limit, 5: no thread, 3: see its line: blocks, pages, ok, in the reserve, problems)",
           nd_describe_status(st));
}

/* A large block of `size` bytes filled with block i's byte, or NULL (a
   failure that is not ENOMEM counts in *bad). */
static unsigned char *trim_alloc(int i, size_t size, int *bad)
{
    errno = 0;
    unsigned char *q = nodal_malloc(size);
    if (q == NULL)
        *bad += errno != ENOMEM;
    else
        memset(q, i & 0xff, size);
    return q;
}

/* Checks block i's byte on every OS page of q (NULL: none), then frees it. */
static void trim_check_free(unsigned char *q, int i, size_t size, int *bad)
{
    if (q == NULL)
        return;
    for (size_t j = 0; j < size; j += 4096)
        *bad += q[j] != (unsigned char)(i & 0xff);
    nodal_free(q);
}

/* The holes (unmapped chunks) of the large segments of the blocks of
   p[0, n) (NULL: none), each segment counted once; tails: their chunks
   with a tail instead (segment.h), but the headers'. */
static int large_segment_chunks_of(unsigned char **p, int n, bool tails)
{
    int count = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] == NULL)
            continue;
        nd_segment *s = nd_seg_base(p[i]);
        bool first = s->kind == ND_SEG_LARGE;
        for (int j = 0; j < i && first; j++)
            first = p[j] == NULL || nd_seg_base(p[j]) != s;
        if (first)
            count += nd_popcount64(tails ? s->tails & ~(uint64_t)1 : s->unmapped);
    }
    return count;
}

static int unmapped_chunks_of(unsigned char **p, int n) { return large_segment_chunks_of(p, n, false); }

/* Blocks of 256 and 512 KiB (4 and 8 chunks of a segment's 63: each
   segment ends in free ones) into p[0, max), their sizes in sz, filled
   with their index (trim_alloc) until one fails or max: how many. */
static int fill_large_blocks(unsigned char **p, size_t *sz, int max, int *bad)
{
    int n = 0;
    for (; n < max; n++) {
        sz[n] = (n % 4 == 0 ? 256 : 512) << 10;
        if ((p[n] = trim_alloc(n, sz[n], bad)) == NULL)
            break;
    }
    return n;
}

/* Under an address-space limit, large blocks fill their segments until no
   4 MiB segment maps; the segments then unmap the chunks that no block
   holds (large.h: nd_large_release, holes), and map them again when a
   block needs them: the pools stay valid (nd_large_is_valid checks every
   segment), some segment has a hole (but under secure=1, below), every
   block stays intact through frees and reallocations of half of them
   (in holes mapped again and in mappings of their own), and every failure
   says ENOMEM. The child exits 0 when all held. */
static int unmapped_chunks_child(void)
{
    enum { N = 256 };
    static unsigned char *p[N];
    static size_t sz[N];
    limit_address_space_to_now_plus((rlim_t)40 << 20);
    int bad = 0, hole_seen = 0;
    int n = fill_large_blocks(p, sz, N, &bad);
    bad += !nd_large_is_valid();
    for (int i = 0; i < n; i++) {
        nd_segment *s = nd_seg_base(p[i]);
        hole_seen |= s->kind == ND_SEG_LARGE && s->unmapped != 0;
    }
    int regained = 0;
    for (int round = 0; round < 2; round++) {
        for (int i = round; i < n; i += 2) {
            trim_check_free(p[i], i, sz[i], &bad);
            p[i] = NULL;
        }
        bad += !nd_large_is_valid();
        /* A block that cannot map (64 MiB under a 40 MiB limit) makes the
           freed runs holes; the blocks below map them again. */
        errno = 0;
        void *huge = nodal_malloc((size_t)64 << 20);
        bad += huge != NULL || errno != ENOMEM;
        int holes = unmapped_chunks_of(p, n);
        for (int i = round; i < n; i += 2)
            p[i] = trim_alloc(i, sz[i], &bad);
        regained += unmapped_chunks_of(p, n) < holes;
        bad += !nd_large_is_valid();
    }
    bad += regained != 2;
    for (int i = 0; i < n; i++)
        trim_check_free(p[i], i, sz[i], &bad);
    nodal_collect(1);
    bad += !nd_large_is_valid();
    printf("%d %d %d\n", n, hole_seen, bad);
    /* secure=1: a segment's last block takes the chunks up to its guard
       page (large.c: nd_large_find_guarded), so no end is left free. */
    return n > 0 && n < N && (hole_seen || nd_seg_guard != 0) && bad == 0 ? 0 : 3;
}

/* Runs child `*arg` (an int (*)(void)) in a forked process: its result
   is the exit status. */
static void run_child_fn(void *arg)
{
    int (*const *fn)(void) = arg;
    fflush(NULL);
    _exit((*fn)());
}

/* Runs child *fn (run_child_fn) and expects it to exit 0; `what` says
   what that means and what its other statuses say. The child's alarm
   (a hang) comes just before ctest's 300 s: under TSan on a loaded
   machine (load 40) the 40 MiB child took more than the 60 s it had. */
static void expect_child_exits_0(int (*const *fn)(void), const char *what)
{
    static struct nd_child c;
    fflush(NULL);
    nd_run_forked(run_child_fn, (void *)fn, 280, &c);
    EXPECT(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0, "%s; it %s; stdout: %s stderr: %s", what,
           nd_describe_status(c.status), c.out, c.err);
}

static void large_segments_with_unmapped_chunks_under_an_address_space_limit_stay_valid(void)
{
    static int (*const fn)(void) = unmapped_chunks_child;
    expect_child_exits_0(&fn, "the child to fill 40 MiB with large blocks, its segments' free chunks unmapped and "
                         "valid, every block intact and every failure ENOMEM (exit 0; 4: no limit, 3: see its "
                         "line of blocks, hole seen, problems)");
}

/* A thread that moves to another CPU, whose large requests go to another
   shard (large.h), takes the holes its blocks left in the first shard's
   segments before it fails for want of address space: under a limit,
   blocks of 256 and 512 KiB fill their segments on one CPU, every other
   one is freed and its chunks unmapped (a request that cannot map), and
   on a CPU of another shard the same requests are made again: they map
   the holes again (fewer of them after), every block stays intact, every
   failure says ENOMEM, the pools stay valid. The child exits 0 when all
   held, 5 when no two CPUs it may run on are of different shards. */
static int moved_thread_child(void)
{
    enum { N = 256 };
    static unsigned char *p[N];
    static size_t sz[N];
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return 5;
    int a = -1, b = -1;
    for (int c = 0; c < CPU_SETSIZE && b < 0; c++)
        if (CPU_ISSET(c, &allowed)) {
            if (a < 0)
                a = c;
            else if (c % ND_LARGE_SHARDS != a % ND_LARGE_SHARDS)
                b = c;
        }
    if (b < 0)
        return 5;
    if (!run_on_cpu(a))
        return 5;
    limit_address_space_to_now_plus((rlim_t)40 << 20);
    int bad = 0;
    int n = fill_large_blocks(p, sz, N, &bad);
    for (int i = 1; i < n; i += 2) {
        trim_check_free(p[i], i, sz[i], &bad);
        p[i] = NULL;
    }
    errno = 0;
    void *huge = nodal_malloc((size_t)64 << 20);   /* cannot map: the freed runs become holes */
    bad += huge != NULL || errno != ENOMEM;
    int holes = unmapped_chunks_of(p, n);
    if (!run_on_cpu(b))
        return 5;
    int failed = 0;
    for (int i = 1; i < n; i += 2)
        failed += (p[i] = trim_alloc(i, sz[i], &bad)) == NULL;
    int after = unmapped_chunks_of(p, n);
    bad += !nd_large_is_valid();
    for (int i = 0; i < n; i++)
        trim_check_free(p[i], i, sz[i], &bad);
    nodal_collect(1);
    bad += !nd_large_is_valid();
    printf("cpus %d %d blocks %d holes %d -> %d failed %d bad %d\n", a, b, n, holes, after, failed, bad);
    return n > 0 && n < N && holes > 0 && after < holes && failed <= n / 8 && bad == 0 ? 0 : 3;
}

static void a_thread_moved_to_another_cpu_maps_the_holes_of_its_first_shard_again(void)
{
    static int (*const fn)(void) = moved_thread_child;
    static struct nd_child c;
    fflush(NULL);
    nd_run_forked(run_child_fn, (void *)&fn, 280, &c);
    if (WIFEXITED(c.status) && WEXITSTATUS(c.status) == 5)
        SKIP("needs two CPUs of different large shards to run on");
    if (WIFEXITED(c.status) && WEXITSTATUS(c.status) == 4)
        SKIP("no address-space limit could be set");
    EXPECT(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0,
           "the moved thread's requests to map its first shard's holes again (exit 0; 3: see its line); it %s; "
           "stdout: %s stderr: %s", nd_describe_status(c.status), c.out, c.err);
}

/* A page of the program's own at `at` (a hole of a segment: never over a
   mapping), filled with 0x5a; NULL when it would not map there. */
static unsigned char *map_own_page_at(void *at)
{
    void *q = mmap(at, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (q == at) {
        memset(q, 0x5a, 4096);
        return q;
    }
    if (q != MAP_FAILED)
        munmap(q, 4096);
    return NULL;
}

/* Medium segments under an address-space limit (nd_heap_release): a
   40 MiB limit filled with 112 KiB blocks (four to a 512 KiB page) makes
   their pages' unused ends tails and holes; the blocks of every second
   page are freed and collected (their pages given back: tails become
   holes), a page of the program's own is mapped into one such hole, and
   the limit is filled again with 48 KiB blocks (ten to a page, reaching
   into the holes): the holes are mapped again but the one the program
   took (that page is skipped: a page without holes or a new segment
   serves), no block over the program's page, every block intact, every
   failure ENOMEM, the heap valid throughout (the debug checks of every
   fill). Exit 0 when all held. */
static int medium_holes_child(void)
{
    enum { N = 1024 };
    static unsigned char *p[N], *q[N];
    limit_address_space_to_now_plus((rlim_t)40 << 20);
    const size_t big = 112 << 10, mid = 48 << 10;
    int n = 0, m = 0, bad = 0, gaps = 0;
    errno = 0;
    while (n < N && (p[n] = nodal_malloc(big)) != NULL) {
        memset(p[n], n & 0xff, big);
        n++;
    }
    bad += n == N || errno != ENOMEM;
    for (int i = 0; i < n; i++) {
        nd_segment *s = nd_seg_base(p[i]);
        gaps += s->kind == ND_SEG_MEDIUM && (s->unmapped | s->tails) != 0;
    }
    for (int i = 0; i < n; i++)
        if ((((uintptr_t)p[i] >> ND_MEDIUM_PAGE_SHIFT) & 1) == 0) {
            for (size_t j = 0; j < big; j += 4096)
                bad += p[i][j] != (unsigned char)(i & 0xff);
            nodal_free(p[i]);
            p[i] = NULL;
        }
    nodal_collect(1);
    unsigned char *mine = NULL;
    for (int i = 0; i < n && mine == NULL; i++) {
        if (p[i] == NULL)
            continue;
        nd_segment *s = nd_seg_base(p[i]);
        if (s->kind != ND_SEG_MEDIUM || s->unmapped == 0 || s->free_mask == 0)
            continue;
        for (uint64_t f = s->free_mask; f != 0 && mine == NULL; f &= f - 1) {
            unsigned pg = (unsigned)__builtin_ctzll(f), per = 1u << (ND_MEDIUM_PAGE_SHIFT - ND_CHUNK_SHIFT);
            uint64_t holes = (s->unmapped >> (pg * per)) & (((uint64_t)1 << per) - 1);
            if (holes == 0)
                continue;
            void *at = (uint8_t *)s + ((size_t)(pg * per + (unsigned)__builtin_ctzll(holes)) << ND_CHUNK_SHIFT);
            mine = map_own_page_at(at);
        }
    }
    if (mine == NULL)
        return 5;
    bad += nodal_node_of(mine) != -1;
    errno = 0;
    while (m < N && (q[m] = nodal_malloc(mid)) != NULL) {
        bad += q[m] <= mine + 4095 && q[m] + mid > mine;
        memset(q[m], 0xc3, mid);
        m++;
    }
    bad += m == N || errno != ENOMEM;
    for (int i = 0; i < n; i++)
        if (p[i] != NULL) {
            for (size_t j = 0; j < big; j += 4096)
                bad += p[i][j] != (unsigned char)(i & 0xff);
            nodal_free(p[i]);
        }
    for (int i = 0; i < m; i++) {
        for (size_t j = 0; j < mid; j += 4096)
            bad += q[i][j] != 0xc3;
        nodal_free(q[i]);
    }
    nodal_collect(1);
    for (int j = 0; j < 4096; j++)
        bad += mine[j] != 0x5a;
    printf("%d %d %d %d\n", n, m, gaps, bad);
    return n > 0 && m > 0 && gaps > 0 && bad == 0 ? 0 : 3;
}

static void medium_pages_with_unmapped_ends_under_an_address_space_limit_stay_valid(void)
{
    static int (*const fn)(void) = medium_holes_child;
    expect_child_exits_0(&fn, "the child to fill 40 MiB with 112 KiB blocks (their pages' ends given back), free "
                         "every second page's, map a page of its own into a hole, fill the limit again with 48 KiB "
                         "blocks around it, every block intact, every failure ENOMEM, the heap valid (exit 0; 4: "
                         "no limit, 5: no hole to map into, 3: see its line of blocks, 48 KiB blocks, blocks in "
                         "segments with gaps, problems)");
}

/* A hole of a large segment (an unmapped chunk, large.h) that another
   mapping took meanwhile is never nodal's again: blocks that need its
   chunks do not map over it (MAP_FIXED_NOREPLACE) and the segment, once
   empty, is unmapped around it. The child fills a 40 MiB limit with
   256 KiB blocks, frees every second, makes the freed runs holes (a
   64 MiB block that cannot map), maps a page of its own into one hole,
   then fills the limit again, frees everything, collects and has the
   empty segments unmapped (another 64 MiB block): its page keeps its
   bytes, and the pools stay valid. Exit 0 when all held. */
static int foreign_hole_child(void)
{
    enum { N = 256 };
    static unsigned char *p[N];
    limit_address_space_to_now_plus((rlim_t)40 << 20);
    int n = 0, bad = 0;
    while (n < N && (p[n] = nodal_malloc(256 << 10)) != NULL)
        n++;
    for (int i = 0; i < n; i += 2) {
        nodal_free(p[i]);
        p[i] = NULL;
    }
    errno = 0;
    bad += nodal_malloc((size_t)64 << 20) != NULL || errno != ENOMEM;
    unsigned char *mine = NULL;
    for (int i = 1; i < n && mine == NULL; i += 2) {
        nd_segment *s = nd_seg_base(p[i]);
        if (s->kind != ND_SEG_LARGE || s->unmapped == 0)
            continue;
        unsigned c = (unsigned)__builtin_ctzll(s->unmapped);
        void *at = (uint8_t *)s + ((size_t)c << ND_CHUNK_SHIFT);
        mine = map_own_page_at(at);
    }
    if (mine == NULL)
        return 5;
    bad += nodal_node_of(mine) != -1;   /* in a hole: not nodal's */
    bad += nodal_node_of(p[1]) < 0;     /* a live block of the same pools: nodal's */
    for (int i = 0; i < n; i += 2)
        p[i] = nodal_malloc(256 << 10);   /* NULL or a block: never over mine */
    for (int i = 0; i < n; i++)
        if (p[i] != NULL) {
            bad += p[i] <= mine + 4095 && p[i] + (256 << 10) > mine;
            memset(p[i], 1, 256 << 10);
        }
    bad += !nd_large_is_valid();
    for (int i = 0; i < n; i++)
        nodal_free(p[i]);
    nodal_collect(1);
    errno = 0;   /* and every empty segment unmapped (a pool keeps one otherwise) */
    bad += nodal_malloc((size_t)64 << 20) != NULL || errno != ENOMEM;
    bad += !nd_large_is_valid();
    for (int j = 0; j < 4096; j++)
        bad += mine[j] != 0x5a;
    printf("%d %d\n", n, bad);
    return n > 0 && n < N && bad == 0 ? 0 : 3;
}

static void a_hole_another_mapping_took_is_never_mapped_over_nor_unmapped(void)
{
    static int (*const fn)(void) = foreign_hole_child;
    expect_child_exits_0(&fn, "the child's own page in a hole of a large segment to keep its bytes through "
                         "refills, frees and a collect, no block over it, nodal_node_of -1 for it (not nodal's) "
                         "and a node for a live block, the pools valid (exit 0; 4: no limit, 5: no hole to map "
                         "into, 3: see its line of blocks and problems)");
}

/* Under an address-space limit, large blocks that do not fill their last
   chunk (150,000-500,000 B) give back the OS pages past them (past their
   guard page under secure=1) once a mapping is refused (large.h: tails):
   the pools stay valid; every block keeps its bytes and its whole usable
   size stays writable; blocks grow in place into their tail (mapped
   again), shrink a chunk (the tail's chunk a hole), are freed (the tail's
   chunk a hole) and allocated again; a page of the child's own mapped in
   a tail is never mapped over nor unmapped, and nodal_node_of says -1 for
   it. Exit 0 when all held; run in default mode and under secure=1. */
static void emit_large_tails(void)
{
    enum { N = 400 };
    static const size_t sizes[] = { 150000, 200000, 300000, 500000 };
    static unsigned char *p[N];
    static size_t len[N];
    limit_address_space_to_now_plus((rlim_t)40 << 20);
    int n = 0, bad = 0;
    for (; n < N; n++) {
        if ((p[n] = trim_alloc(n, sizes[n % 4], &bad)) == NULL)
            break;
        len[n] = nodal_usable_size(p[n]);
        memset(p[n], n & 0xff, len[n]);
    }
    bad += !nd_large_is_valid();
    int tails = large_segment_chunks_of(p, n, true);
    /* Frees every fourth block, makes room (a refused 64 MiB block). */
    for (int i = 0; i < n; i += 4) {
        trim_check_free(p[i], i, len[i], &bad);
        p[i] = NULL;
    }
    errno = 0;
    bad += nodal_malloc((size_t)64 << 20) != NULL || errno != ENOMEM;
    bad += !nd_large_is_valid();
    /* A page of our own in the tail of some block. */
    unsigned char *mine = NULL;
    for (int i = 1; i < n && mine == NULL; i++) {
        if (p[i] == NULL)
            continue;
        nd_segment *s = nd_seg_base(p[i]);
        unsigned c = (unsigned)(((uintptr_t)p[i] - (uintptr_t)s) >> ND_CHUNK_SHIFT);
        unsigned last = c + s->pages[c].reserved - 1u;
        if (s->kind != ND_SEG_LARGE || ((s->tails >> last) & 1) == 0)
            continue;
        uint8_t *at = (uint8_t *)s + ((size_t)last << ND_CHUNK_SHIFT) + s->tail_from[last];
        void *q = mmap(at, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (q == (void *)at)
            mine = q;
        else if (q != MAP_FAILED)
            munmap(q, 4096);
    }
    if (mine != NULL) {
        memset(mine, 0x5a, 4096);
        bad += nodal_node_of(mine) != -1;
    }
    /* Grows the blocks by 8 KiB (in place when their chunks hold it: the
       tail mapped again, or not where our page is), shrinks every third
       by a chunk. */
    int grown = 0, shrunk = 0;
    for (int i = 1; i < n; i++) {
        if (p[i] == NULL)
            continue;
        size_t want = i % 3 == 0 && len[i] > ND_CHUNK_SIZE + 4096 ? len[i] - ND_CHUNK_SIZE : len[i] + 8192;
        for (size_t j = 0; j < len[i]; j += 4096)
            bad += p[i][j] != (unsigned char)(i & 0xff);
        unsigned char *q = nodal_realloc(p[i], want);
        if (q == NULL) {
            bad += errno != ENOMEM;
            continue;
        }
        grown += q == p[i] && want > len[i];
        shrunk += q == p[i] && want < len[i];
        size_t keep = want < len[i] ? want : len[i];
        for (size_t j = 0; j < keep; j += 4096)
            bad += q[j] != (unsigned char)(i & 0xff);
        p[i] = q;
        len[i] = nodal_usable_size(q);
        memset(q, i & 0xff, len[i]);
    }
    bad += !nd_large_is_valid();
    for (int i = 0; i < n; i += 4)
        if ((p[i] = trim_alloc(i, sizes[i % 4], &bad)) != NULL)
            len[i] = nodal_usable_size(p[i]);
    bad += !nd_large_is_valid();
    for (int i = 0; i < n; i++)
        if (p[i] != NULL) {
            bad += mine != NULL && p[i] <= mine + 4095 && p[i] + len[i] > mine;
            memset(p[i], i & 0xff, len[i]);
        }
    for (int i = 0; i < n; i++)
        trim_check_free(p[i], i, len[i], &bad);
    nodal_collect(1);
    errno = 0;   /* every empty segment unmapped around our page */
    bad += nodal_malloc((size_t)64 << 20) != NULL || errno != ENOMEM;
    bad += !nd_large_is_valid();
    for (int j = 0; mine != NULL && j < 4096; j++)
        bad += mine[j] != 0x5a;
    printf("%d %d %d %d %d %d\n", n, tails, mine != NULL, grown, shrunk, bad);
    fflush(stdout);
    _exit(n > 0 && n < N && tails > 0 && mine != NULL && bad == 0 ? 0 : 3);
}

static void large_blocks_whose_tails_were_given_back_stay_whole_and_valid(void)
{
    static const char *const modes[] = { NULL, "secure=1" };
    static char self[4096];
    ssize_t got = readlink("/proc/self/exe", self, sizeof self - 1);
    EXPECT(got > 0, "/proc/self/exe to name this program");
    self[got] = '\0';
    for (int m = 0; m < 2; m++) {
        static struct nd_child c;
        char *argv[] = { self, (char *)"emit_large_tails", NULL };
        nd_run_exec(argv, modes[m], NULL, 120, &c);
        int v[6] = { 0 };
        bool parsed = sscanf(c.out, "%d %d %d %d %d %d", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) == 6;
        printf("note: %s: %d blocks, %d tails, own page in a tail %d, %d grew and %d shrank in place, %d problems\n",
               modes[m] ? modes[m] : "default", v[0], v[1], v[2], v[3], v[4], v[5]);
        EXPECT(parsed && WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0 && (m == 1 || v[3] > 0),
               "the child (%s) to fill 40 MiB with large blocks of 150,000-500,000 B, give back their tails, "
               "keep every block whole and writable through frees, growth (some in place) and shrinking, never "
               "touch its own page in a tail, and keep the pools valid (exit 0); it %s (4: no limit, 3: see its "
               "line: blocks, tails, own page, grown, shrunk, problems: \"%s\"); stderr: %s",
               modes[m] ? modes[m] : "default", nd_describe_status(c.status), c.out, c.err);
    }
}

/* nd_segcache is a direct-mapped table (segment.h): a window 256 GiB away
   from a segment's has the same slot, and is not taken for the segment;
   the segment map (two levels) holds every window of nodal's wherever it
   is, mapping a leaf for a range it had none in. */
static uintptr_t other_window_of_slot(uintptr_t w)
{
    /* The same slot in another 256 GiB range, below 2^47. */
    uintptr_t region = (uintptr_t)ND_SEGCACHE_SLOTS << ND_SEG_SHIFT;
    uintptr_t a = w << ND_SEG_SHIFT;
    return a >= region ? a - region : a + region;
}

static void segment_map_holds_windows_of_any_range_and_the_cache_names_its_window(void)
{
    char *p = nodal_malloc(64);
    EXPECT(p != NULL, "malloc(64) to succeed");
    nd_segment *s = nd_seg_base(p);
    EXPECT(nd_seg_of(p) == s && nd_segcache_is_start((uintptr_t)s),
           "a block's segment to be found through the map and to hold its slot of the cache");
    uintptr_t alias = other_window_of_slot((uintptr_t)s >> ND_SEG_SHIFT);
    EXPECT(nd_seg_of((void *)(alias + 64)) == NULL && !nd_segcache_is_start(alias),
           "an address 256 GiB from a segment (the same slot) not to be nodal's");
    /* The alias's window in the map (a 4 MiB window nothing of this
       process is in: only the map's bytes, never dereferenced). */
    size_t leaves = nd_segmap_mapped();
    EXPECT(nd_segmap_huge((nd_segment *)alias, 0, ND_SEG_SIZE), "a window of another range to be set in the map");
    EXPECT(nd_seg_of((void *)(alias + 64)) == (nd_segment *)alias && !nd_segcache_is_start(alias),
           "the alias to be found through the map, without the slot the segment holds");
    EXPECT(nd_seg_of(p) == s && nd_segcache_is_start((uintptr_t)s), "the segment to keep its byte and its slot");
    EXPECT(nd_segmap_mapped() <= leaves + ND_SEGMAP_LEAF_SIZE, "at most one leaf of 64 KiB to be mapped for it");
    EXPECT(nd_segmap_huge((nd_segment *)alias, ND_SEG_SIZE, 0), "a release to succeed");
    EXPECT(nd_seg_of((void *)(alias + 64)) == NULL, "a cleared window not to be nodal's");
    /* Three chunks, found from each; in ranges up to 2^48. */
    uintptr_t far[] = { alias, (uintptr_t)0x500000000000, (uintptr_t)0xffffff000000 - 3 * ND_SEG_SIZE };
    for (int i = 0; i < 3; i++) {
        uint8_t *x = (uint8_t *)(far[i] & ~(uintptr_t)ND_SEG_MASK);
        EXPECT(nd_segmap_huge((nd_segment *)x, 0, 3 * ND_SEG_SIZE), "three windows at %p to be set", (void *)x);
        EXPECT(nd_seg_of(x + 5 * MiB_) == (nd_segment *)x && nd_seg_of(x + 9 * MiB_) == (nd_segment *)x &&
               nd_seg_of(x + 12 * MiB_) == NULL, "every chunk of the mapping at %p to point back at its start",
               (void *)x);
        EXPECT(nd_segmap_huge((nd_segment *)x, 3 * ND_SEG_SIZE, 0), "a release to succeed");
        EXPECT(nd_seg_of(x + 5 * MiB_) == NULL, "released windows not to be nodal's");
    }
    EXPECT(nd_seg_of((void *)((uintptr_t)1 << ND_VA_BITS)) == NULL && nd_seg_of((void *)~(uintptr_t)0) == NULL,
           "addresses beyond 2^%d not to be nodal's", ND_VA_BITS);
    nodal_free(p);
}

/* Threads that set windows of a range no leaf covers yet, all at once:
   one leaf is published (the others' are unmapped), and every thread's
   windows are in it. */
enum { LEAF_RACERS = 4, LEAF_WINDOWS = 64 };
static uintptr_t leaf_race_base;
static pthread_barrier_t leaf_race_barrier;

static void *leaf_racer(void *arg)
{
    uintptr_t id = (uintptr_t)arg;
    pthread_barrier_wait(&leaf_race_barrier);
    for (uintptr_t i = 0; i < LEAF_WINDOWS; i++) {
        uintptr_t a = leaf_race_base + ((i * LEAF_RACERS + id) << ND_SEG_SHIFT);
        if (!nd_segmap_huge((nd_segment *)a, 0, ND_SEG_SIZE) || nd_seg_of((void *)(a + 100)) != (nd_segment *)a)
            return (void *)1;
    }
    return NULL;
}

static void a_new_leaf_is_published_once_by_racing_threads(void)
{
    /* A 256 GiB range nothing of this process is in (the highest below
       2^47 that no leaf covers). */
    uintptr_t range = (uintptr_t)ND_SEGMAP_LEAF_SIZE << ND_SEG_SHIFT;
    uintptr_t base = ((uintptr_t)1 << 47) - range;
    while (nd_seg_of((void *)base) != NULL || nd_load_acquire(&nd_segmap_top[base / range]) != NULL)
        base -= range;
    leaf_race_base = base;
    size_t before = nd_segmap_mapped();
    pthread_barrier_init(&leaf_race_barrier, NULL, LEAF_RACERS);
    pthread_t t[LEAF_RACERS];
    for (uintptr_t i = 0; i < LEAF_RACERS; i++)
        EXPECT(pthread_create(&t[i], NULL, leaf_racer, (void *)i) == 0, "a thread to start");
    int bad = 0;
    for (int i = 0; i < LEAF_RACERS; i++) {
        void *r;
        pthread_join(t[i], &r);
        bad += r != NULL;
    }
    pthread_barrier_destroy(&leaf_race_barrier);
    EXPECT(bad == 0, "every thread to find each window it set, %d did not", bad);
    EXPECT(nd_segmap_mapped() == before + ND_SEGMAP_LEAF_SIZE, "one leaf of 64 KiB to be mapped (%zu bytes were)",
           nd_segmap_mapped() - before);
    for (uintptr_t i = 0; i < LEAF_RACERS * LEAF_WINDOWS; i++) {
        nd_segment *x = (nd_segment *)(base + (i << ND_SEG_SHIFT));
        EXPECT(nd_seg_of(x) == x, "window %zu to be set", (size_t)i);
        EXPECT(nd_segmap_huge(x, ND_SEG_SIZE, 0), "a release to succeed");
    }
}

/* With every slot of nd_segcache held by windows of no segment, nothing
   takes the free fast path: every block of every size is freed through the
   segment map, and the heap stays valid; when the slots are free again, a
   segment formatted anew takes its own. */
static void segments_without_a_slot_free_through_the_segment_map(void)
{
    static uint64_t saved[ND_SEGCACHE_SLOTS];
    for (size_t i = 0; i < ND_SEGCACHE_SLOTS; i++) {
        saved[i] = nd_segcache[i];
        nd_store_release(&nd_segcache[i], (uint64_t)1 << 40 | i);   /* a key no address below 2^62 has */
    }
    static const size_t sizes[] = { 16, 64, 200, 1000, 5000, 40000, 200 << 10, 3 << 20, 9 << 20 };
    enum { N = 600 };
    static void *blocks[N];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < N; i++) {
            size_t n = sizes[(unsigned)(i + round) % (sizeof sizes / sizeof sizes[0])];
            if (n > ND_SEG_SIZE && i % 16 != 0)
                n = 64;
            blocks[i] = nodal_malloc(n);
            EXPECT(blocks[i] != NULL, "malloc(%zu) to succeed", n);
            memset(blocks[i], 1, n < 256 ? n : 256);
            EXPECT(!nd_segcache_is_start((uintptr_t)blocks[i]), "no block of a segment with a slot");
        }
        for (int i = 0; i < N; i++)
            nodal_free(blocks[i]);
        EXPECT(nd_thread_is_valid(), "the heap to be valid after round %d", round);
    }
    /* The words of segments still mapped go back (a segment unmapped
       meanwhile has none). */
    for (size_t i = 0; i < ND_SEGCACHE_SLOTS; i++) {
        uint64_t key = saved[i] & ~ND_SEGCACHE_MEDIUM;   /* a medium segment's word carries the flag */
        uintptr_t a = (uintptr_t)(key - 1) << ND_SEG_SHIFT;
        bool live = key > 1 && nd_seg_of((void *)a) == (nd_segment *)a;
        nd_store_release(&nd_segcache[i], live ? saved[i] : 0);
    }
    nodal_collect(1);
    void *q = nodal_malloc(64);
    EXPECT(q != NULL && nd_seg_of(q) == nd_seg_base(q), "malloc(64) to succeed with the slots back");
    nodal_free(q);
    EXPECT(nd_thread_is_valid(), "the heap to be valid with the slots back");
}

/* Header OS pages of s (of its 16 KiB) the process wrote: present and its
   own (pagemap bits 63 and 56; a page only read maps the shared zero
   page, present but not its own, and counts in no RSS). -1: no pagemap. */
static int header_pages_written(const nd_segment *s, unsigned first)
{
    int fd = open("/proc/self/pagemap", O_RDONLY);
    if (fd < 0)
        return -1;
    int n = 0;
    for (unsigned i = first; i < ND_SEG_HEADER_SIZE / 4096; i++) {
        uint64_t e = 0;
        off_t at = (off_t)(((uintptr_t)s + i * 4096u) / 4096u * sizeof e);
        if (pread(fd, &e, sizeof e, at) != (ssize_t)sizeof e) {
            close(fd);
            return -1;
        }
        n += (e >> 63) & (e >> 56) & 1;
    }
    close(fd);
    return n;
}

/* Formatting a fresh segment writes its header's fields, not its 64 page
   descriptors (8 KiB past the first OS page): a fresh mapping's are zero,
   which is what a descriptor never used says (segment.h), so the OS
   pages of the descriptors of pages a segment does not use stay out of
   the process's memory (12 KiB of header a segment -> 4-8 KiB). A
   segment formatted again (taken back from a node's cache) has every
   descriptor written: free, whatever its page held before. Fails before
   the change (2 of the 3 OS pages past the first written). */
static void a_fresh_segments_format_leaves_its_descriptors_unwritten(void)
{
    if (sysconf(_SC_PAGESIZE) != 4096)
        SKIP("OS pages of %ld bytes", sysconf(_SC_PAGESIZE));
    ND_SKIP_UNLESS_READS_MAP_THE_ZERO_PAGE();
    nd_segment *s = nd_seg_map(0, false, ND_SEG_SIZE);
    EXPECT(s != NULL, "a fresh segment to map (errno %d)", errno);
    int before = header_pages_written(s, 1);
    if (before < 0)
        SKIP("/proc/self/pagemap is not readable");
    if (before != 0)
        SKIP("the kernel backs the fresh mapping with more than the pages written (%d: transparent huge pages?)", before);
    nd_seg_format(s, ND_SEG_SMALL);
    EXPECT(nd_seg_is_valid(s), "the fresh segment to be valid once formatted");
    for (unsigned i = 0; i < ND_SEG_MAX_PAGES; i++)
        EXPECT(nd_page_is_valid(&s->pages[i]) && !s->pages[i].in_use && s->pages[i].kind == ND_KIND_NONE &&
               nd_seg_page_index(s, &s->pages[i]) == i, "descriptor %u of a fresh segment to say its page is free", i);
    int written = header_pages_written(s, 1);
    EXPECT(written == 0, "formatting a fresh segment to write only the first OS page of its header, "
           "not %d more (its descriptors)", written);
    /* Used, then formatted again: every descriptor free again. */
    s->pages[40].key = 16;
    s->pages[40].used = 3;
    s->pages[40].kind = 2;
    nd_seg_format(s, ND_SEG_SMALL);
    EXPECT(nd_seg_is_valid(s), "the segment to be valid once formatted again");
    for (unsigned i = 0; i < ND_SEG_MAX_PAGES; i++)
        EXPECT(nd_page_is_valid(&s->pages[i]) && s->pages[i].key == ND_KEY_NONE && s->pages[i].recarved == 1,
               "descriptor %u of a segment formatted again to say its page is free and held freed memory", i);
    nd_seg_unmap(s);
}

/* The page a heap takes first in a segment (heap.c: at or after its page
   colour, nd_heap_colour) has its descriptor on the header's first OS
   page, which the segment's fields make resident anyway: a thread that
   uses a few pages of a segment writes one OS page of its header, not
   two. The colours still differ from window to window (5 pages apart,
   among ND_SEG_FIRST_DESCS). On main 4b802c7 the colour was any of the 64
   pages, (window x 5) mod 64: about half of the segments (35 of 64
   colours) wrote a second OS page of header for their first pages'
   descriptors; with its formula here, 16 fresh segments fail this test
   unless every one of them drew a colour below 29. */
static void a_segments_first_pages_have_their_descriptors_on_its_first_header_page(void)
{
    if (sysconf(_SC_PAGESIZE) != 4096)
        SKIP("OS pages of %ld bytes", sysconf(_SC_PAGESIZE));
    enum { SEGS = 16 };
    nd_segment *seg[SEGS];
    uint64_t seen = 0;
    for (int i = 0; i < SEGS; i++) {
        seg[i] = nd_seg_map(0, false, ND_SEG_SIZE);
        EXPECT(seg[i] != NULL, "a fresh segment to map (errno %d)", errno);
        nd_seg_format(seg[i], ND_SEG_SMALL);
        unsigned c = nd_heap_colour(seg[i]);
        uintptr_t end = (uintptr_t)&seg[i]->pages[c + 1] - (uintptr_t)seg[i];
        EXPECT(c < seg[i]->page_count && end <= 4096, "the page colour of the segment at %p (%u) to name a page whose "
               "descriptor ends within the header's first 4 KiB, it ends at byte %zu", (void *)seg[i], c, (size_t)end);
        seen |= (uint64_t)1 << c;
    }
    EXPECT(__builtin_popcountll(seen) >= 8, "16 segments' colours to take 8 values or more, they took %d",
           __builtin_popcountll(seen));
    for (int i = 0; i < SEGS; i++)
        nd_seg_unmap(seg[i]);
}

/* The free fast path finds a block's page descriptor from the block's
   nd_segcache word (segment.h): per 64 KiB chunk, or per 512 KiB page when
   the word carries ND_SEGCACHE_MEDIUM; it never reads the segment
   header's desc_shift and desc_mask (a dependent load fewer). With those
   two scribbled over, a small and a medium block not in their segment's
   first page still go into the thread's bin (the fast path; a lookup
   through the header would find page 0 and the slow path would abort on a
   block that is not page 0's). And each formatted segment's word says its
   kind, its lookup giving nd_page_of's descriptor. */
static void the_free_fast_path_finds_a_page_without_the_segment_header(void)
{
    static const struct { size_t size; int kind; int count; } cases[] = {
        { 48, ND_SEG_SMALL, 3000 },        /* 1,365 to a 64 KiB page */
        { 20000, ND_SEG_MEDIUM, 60 },      /* 26 to a 512 KiB page */
        { 300 << 10, ND_SEG_LARGE, 1 },
    };
    enum { MAX = 3000 };
    static void *blocks[MAX];
    for (int c = 0; c < 3; c++) {
        int n = cases[c].count;
        for (int i = 0; i < n; i++) {
            blocks[i] = nodal_malloc(cases[c].size);
            EXPECT(blocks[i] != NULL, "malloc(%zu) to succeed", cases[c].size);
        }
        /* The block to free: the last one outside its segment's first page
           (which page each block falls in depends on what the earlier cases
           and the maintenance left free: the last of 60 blocks of 20,000 B
           landed in a first page about once in 60 runs). */
        if (cases[c].kind != ND_SEG_LARGE)
            for (int i = n - 1; i > 0; i--) {
                nd_segment *si = nd_seg_base(blocks[i]);
                if (nd_seg_page_index(si, nd_page_of(si, blocks[i])) != 0) {
                    void *t = blocks[i];
                    blocks[i] = blocks[n - 1];
                    blocks[n - 1] = t;
                    break;
                }
            }
        void *p = blocks[n - 1];
        nd_segment *s = nd_seg_base(p);
        uintptr_t key = nd_segcache_key((uintptr_t)s);
        uint64_t word = nd_load_relaxed(&nd_segcache[key & (ND_SEGCACHE_SLOTS - 1)]);
        EXPECT(s->kind == cases[c].kind && word == nd_segcache_word(key, s->kind),
               "a %zu-byte block's segment (kind %d, expected %d) to hold its slot with the word of its kind "
               "(%#llx, expected %#llx)", cases[c].size, s->kind, cases[c].kind, (unsigned long long)word,
               (unsigned long long)nd_segcache_word(key, s->kind));
        nd_page *pg = nd_page_of(s, p);
        nd_page *fast = (word & ND_SEGCACHE_MEDIUM) ? nd_page_of_medium(s, p) : nd_page_of_chunk(s, p);
        EXPECT(fast == pg, "the word's lookup to find the %zu-byte block's descriptor (%p, nd_page_of: %p)",
               cases[c].size, (void *)fast, (void *)pg);
        if (cases[c].kind != ND_SEG_LARGE) {
            EXPECT(nd_seg_page_index(s, pg) != 0, "one of %d blocks of %zu bytes not to be in its segment's first page", n,
                   cases[c].size);
            nd_bin *b = &nd_tls_tc->bins[pg->cls];
            void **before = b->cur;
            uint8_t shift = s->desc_shift;
            uint16_t mask = s->desc_mask;
            s->desc_shift = 63;   /* any lookup through the header finds page 0 */
            nodal_free(p);
            s->desc_shift = shift;
            s->desc_mask = mask;
            EXPECT(b->cur == before - 1 && *b->cur == p,
                   "a %zu-byte block of page %u to go into the bin with the header's lookup scribbled over "
                   "(bin top %p -> %p, holding %p)", cases[c].size, (unsigned)nd_seg_page_index(s, pg), (void *)before,
                   (void *)b->cur, b->cur != NULL ? *b->cur : NULL);
            n--;
        }
        for (int i = 0; i < n; i++)
            nodal_free(blocks[i]);
        EXPECT(nd_thread_is_valid(), "the heap to be valid after the %zu-byte blocks", cases[c].size);
    }
}

/* ---- blocks grown by realloc (large.h: nd_large_alloc_grown) ------------ */

/* Grows block *pp (tag: its byte pattern) from `from` to `to` bytes by
   1/step of its size (and 8 bytes) at a time, writing every new byte and
   checking every `every`th old one; the moves of a block past `past`
   bytes. */
static int grow_in_steps(unsigned char **pp, size_t from, size_t to, int tag, size_t step, size_t every, size_t past)
{
    int moves = 0;
    size_t size = from;
    while (size < to) {
        size_t next = size + size / step + 8;
        if (next > to)
            next = to;
        unsigned char *q = nodal_realloc(*pp, next);
        EXPECT(q != NULL, "realloc(p, %zu) to succeed", next);
        if (q == NULL)
            return moves;
        for (size_t j = 0; j < size; j += every)
            EXPECT(q[j] == (unsigned char)(j * 7 + tag), "byte %zu kept when growing to %zu bytes", j, next);
        for (size_t j = size; j < next; j++)
            q[j] = (unsigned char)(j * 7 + tag);
        moves += size > past && q != *pp;
        *pp = q;
        size = next;
    }
    return moves;
}

/* A quarter at a time, every 61st old byte checked; the moves past 20 KiB
   (where a grown block is a run of chunks). */
static int grow_by_quarters(unsigned char **pp, size_t from, size_t to, int tag)
{
    return grow_in_steps(pp, from, to, tag, 4, 61, (size_t)20 << 10);
}

/* p, a new block of 8 bytes (NULL: a failed malloc, reported), its bytes
   written with the pattern of tag (grow_by_quarters). */
static unsigned char *tagged_block(unsigned char *p, int tag)
{
    EXPECT(p != NULL, "an 8-byte block to be allocated");
    for (size_t j = 0; p != NULL && j < 8; j++)
        p[j] = (unsigned char)(j * 7 + tag);
    return p;
}

/* Two blocks grown by realloc in turn, a quarter at a time from 8 B to
   120 KiB (two vectors built side by side, or by two threads at once):
   each grows in place from 20 KiB on, its contents kept, as the other's
   run is not placed right after it (a grown block starts a free run of
   twice its chunks where a segment has one). On main 54e3c03 the first
   one moved at 64 KiB: the second took the chunk after it. */
static void two_blocks_grown_in_turn_grow_in_place_to_twice_their_chunk(void)
{
    nodal_collect(1);
    unsigned char *p[2];
    size_t size = 8;
    for (int b = 0; b < 2; b++)
        if ((p[b] = tagged_block(nodal_malloc(size), 1 + b)) == NULL)
            return;
    int moves[2] = { 0, 0 };
    const size_t top = (size_t)120 << 10;
    while (size < top) {
        size_t next = size + size / 4 + 8;
        if (next > top)
            next = top;
        for (int b = 0; b < 2; b++)
            moves[b] += grow_by_quarters(&p[b], size, next, 1 + b);
        size = next;
    }
    EXPECT(moves[0] == 0 && moves[1] == 0, "two blocks grown in turn from 20 KiB to 120 KiB to stay in place; "
           "they moved %d and %d times", moves[0], moves[1]);
    EXPECT(nd_large_is_valid(), "the large pools to be valid");
    nodal_free(p[0]);
    nodal_free(p[1]);
    EXPECT(nd_large_is_valid(), "the large pools to be valid once the blocks are freed");
}

/* A new block of 8 B (tag's pattern) grown by realloc a quarter and 8 B at
   a time to `top` bytes and freed: the times it moved (copied) from a
   size of `from` bytes on; -1 if its first malloc failed (reported). */
static int moves_growing_by_quarters(int tag, size_t from, size_t top)
{
    nodal_collect(1);
    unsigned char *p = tagged_block(nodal_malloc(8), tag);
    if (p == NULL)
        return -1;
    int moves = 0;
    for (size_t size = 8; size < top;) {
        size_t next = size + size / 4 + 8;
        unsigned char *before = p;
        grow_by_quarters(&p, size, next, tag);
        moves += size >= from && p != before;
        size = next;
    }
    nodal_free(p);
    return moves;
}

/* A block grown by realloc a quarter at a time from 8 B to 120 KiB moves
   once from 10,000 B on: into a run of chunks as soon as its next block
   with its room (half as much again: alloc.c, nd_grown_room) would pass
   16 KiB, then in place. On main 54e3c03 it moved twice (15,994 -> 19,992
   B into a medium class of 20 KiB, then to a large block at 25,008 B: one
   copy of 20 KiB more); until h51r, from 12 KiB on (the room a quarter). */
static void a_block_grown_by_quarters_moves_once_past_10000_bytes(void)
{
    int moves = moves_growing_by_quarters(4, 10000, (size_t)120 << 10);
    EXPECT(moves == 1, "a block grown by quarters from 10,000 B to 120 KiB to move once; it moved %d times", moves);
}

/* A block grown by realloc a quarter and 8 B at a time from 8 B to 64 KiB
   (34 steps, bench/micro -m realloc) is copied 11 times: a growth by less
   than half gets half as much again of room (alloc.c: nd_grown_room), so
   most steps fit the block the step before took, and from 10,923 B on it
   is a large block that grows in place. A block grown by doubling gets a
   quarter (less memory held where the caller grows geometrically
   itself). On main 882520c it was copied 15 times, 38.9 KB against
   26.8 KB. */
static void a_block_grown_in_small_steps_is_copied_11_times_to_64_kib(void)
{
    int copies = moves_growing_by_quarters(5, 0, (size_t)64 << 10);
    EXPECT(copies == 11, "a block grown by quarters from 8 B to 64 KiB to be copied 11 times; it was copied %d times",
           copies);
    unsigned char *d = nodal_malloc(1000);
    EXPECT(d != NULL, "a block of 1,000 bytes");
    unsigned char *e = nodal_realloc(d, 2000);
    EXPECT(e != NULL && nodal_usable_size(e) >= 2000 && nodal_usable_size(e) < 3000,
           "a block of 1,000 bytes doubled by realloc to get a quarter of room (2,560), got %zu",
           e != NULL ? nodal_usable_size(e) : 0);
    nodal_free(e);
}

/* A plain block grown by realloc a quarter at a time past 1 MiB, from a
   run of chunks of a segment that holds another block (a neighbour of
   256 KiB) into a fresh huge mapping: the kernel moves its pages there
   (no copy), so its contents are kept and its run's first chunk is free
   and holds no resident page at once; it grows on to 3 MiB (the huge
   block remapped) intact, and the pools stay valid. On main 54e3c03 it
   was copied, its chunks left committed for a purge delay. (Alone in its
   segment, the segment becomes its mapping: the case below.) */
/* Keeps the calling thread (and the threads it starts) on the CPU it is
   on: the large pools are in shards by CPU (large.h), so a case that
   expects a thread's large blocks to share a segment must not move to
   another CPU's shard halfway (ctest under load moves threads: three
   cases below failed so, branch h57l). */
static void stay_on_this_cpu(void)
{
    int c = sched_getcpu();
    if (c >= 0)
        (void)run_on_cpu(c);
}

static void a_block_grown_into_a_fresh_huge_mapping_leaves_its_chunks_empty(void)
{
    stay_on_this_cpu();
    nodal_collect(1);
    unsigned char *neighbour = nodal_malloc((size_t)256 << 10);
    EXPECT(neighbour != NULL, "a neighbour block of 256 KiB");
    unsigned char *p = tagged_block(nodal_malloc(8), 7), *large = NULL;
    size_t size = 8;
    while (p != NULL && size < ((size_t)3 << 20)) {
        size_t next = size + size / 4 + 8;
        grow_by_quarters(&p, size, next, 7);
        size = next;
        nd_segment *s = nd_seg_of(p);
        if (s != NULL && s->kind == ND_SEG_LARGE) {
            large = p;
        } else if (s != NULL && s->kind == ND_SEG_HUGE && large != NULL) {
            nd_segment *ls = nd_seg_base(large);
            EXPECT(ls == nd_seg_base(neighbour), "the grown block (%p) in its neighbour's segment (%p)",
                   (void *)large, (void *)neighbour);
            uint64_t first = (uint64_t)1 << (((uintptr_t)large - (uintptr_t)ls) >> ND_CHUNK_SHIFT);
            EXPECT((ls->committed & first) == 0 && (ls->free_mask & first) != 0,
                   "the chunks of a block grown from %p into a huge block at %zu bytes to be free and uncommitted "
                   "(its pages moved; committed %#llx, free %#llx, bit %#llx)", (void *)large, size,
                   (unsigned long long)ls->committed, (unsigned long long)ls->free_mask, (unsigned long long)first);
            EXPECT(nd_large_is_valid(), "the large pools to be valid after the move");
            large = NULL;
        }
    }
    EXPECT(p != NULL && nd_seg_of(p)->kind == ND_SEG_HUGE, "the block grown to %zu bytes to be a huge block", size);
    nodal_free(p);
    nodal_free(neighbour);
    EXPECT(nd_large_is_valid(), "the large pools to be valid");
}

/* The number of huge mappings a node's huge cache holds of (node, plain)
   that start at `at`, read under the node's checker's terms (tests only:
   the cache's list, node.c, is not public; nd_node_huge_take_at then
   nd_node_huge_keep puts it back in front). */
static bool huge_cache_holds(int node, const void *at)
{
    nd_segment *s = nd_node_huge_take_at(node, false, at, 0, SIZE_MAX);
    if (s != NULL)
        EXPECT(nd_node_huge_keep(s), "the cached mapping at %p to go back to its cache", at);
    return s != NULL;
}

/* A plain block grown by realloc a quarter at a time from 8 B past 1 MiB,
   alone in its segment: the segment becomes its huge mapping where it is
   (huge.h: nd_huge_from_large), so it does not move at 1 MiB nor up to
   4 MiB, its bytes kept, the segment valid as a huge one (its map, its
   nd_segcache word given up: a free of it takes the huge path), the large
   pools valid without it. Freed at 8 MiB, its mapping is cached in two:
   the first 4 MiB, which the large pool takes back as a segment for the
   next large block, and the rest at 4 MiB past it, which the next block
   grown there past 4 MiB joins in place: the second round does not move
   at all from 20 KiB on. The statistics count each (huge_from_large,
   segments_from_huge). On main 4b802c7 the block moved at 1 MiB (copied
   into a huge block) and at least once more by 8 MiB, each round. */
static void a_block_grown_alone_past_1_mib_stays_where_it_is(void)
{
    nodal_collect(1);
    size_t from0 = nd_load_relaxed(&nd_gauge.huge_from_large), back0 = nd_load_relaxed(&nd_gauge.segments_from_huge);
    const size_t top = (size_t)8 << 20;
    for (int round = 0; round < 2; round++) {
        unsigned char *p = tagged_block(nodal_malloc(8), 9 + round), *large = NULL;
        if (p == NULL)
            return;
        int moves_large = 0, moves_huge = 0;
        size_t size = 8;
        while (size < top) {
            size_t next = size + size / 4 + 8;
            unsigned char *before = p;
            grow_by_quarters(&p, size, next, 9 + round);
            nd_segment *s = nd_seg_of(p);
            if (size > ((size_t)20 << 10) && p != before)
                *(next <= ((size_t)4 << 20) - ND_CHUNK_SIZE ? &moves_large : &moves_huge) += 1;
            if (s != NULL && s->kind == ND_SEG_LARGE) {
                large = p;
            } else if (s != NULL && s->kind == ND_SEG_HUGE && large != NULL) {
                EXPECT(p == large, "round %d: the block at %p to stay there past 1 MiB (%zu B), found at %p", round,
                       (void *)large, next, (void *)p);
                EXPECT(nd_seg_is_valid(s) && s->size >= ((size_t)4 << 20) && !nd_segcache_is_start((uintptr_t)p) &&
                           nd_huge_usable(s, p) >= next,
                       "round %d: its segment %p to be a valid huge mapping of 4 MiB or more (%zu), out of "
                       "nd_segcache, its block of %zu B usable", round, (void *)s, s->size, nd_huge_usable(s, p));
                EXPECT(nd_large_is_valid(), "round %d: the large pools to be valid without it", round);
                large = NULL;
            }
            size = next;
        }
        EXPECT(moves_large == 0, "round %d: the block grown from 20 KiB to 4 MiB not to move; it moved %d times", round,
               moves_large);
        if (round == 1)
            EXPECT(moves_huge == 0, "round 1: the block grown from 4 MiB to 8 MiB into the rest of the mapping the "
                   "first one left not to move; it moved %d times", moves_huge);
        nd_segment *s = nd_seg_of(p);
        int node = s->node;
        uint8_t *rest = (uint8_t *)s + ((size_t)4 << 20);
        bool whole = s->size > ((size_t)4 << 20);
        nodal_free(p);
        if (whole)
            EXPECT(huge_cache_holds(node, rest), "round %d: the rest of the freed mapping (%p) to be cached apart",
                   round, (void *)rest);
        EXPECT(nd_large_is_valid() && nd_node_is_valid(node), "round %d: the pools and node caches to be valid", round);
    }
    EXPECT(nd_load_relaxed(&nd_gauge.huge_from_large) - from0 == 2,
           "huge_from_large to count the 2 blocks that became huge where they were, got %zu",
           nd_load_relaxed(&nd_gauge.huge_from_large) - from0);
    EXPECT(nd_load_relaxed(&nd_gauge.segments_from_huge) - back0 >= 1,
           "segments_from_huge to count the segment the pool took back from the huge cache, got %zu",
           nd_load_relaxed(&nd_gauge.segments_from_huge) - back0);
}

/* A large segment whose free chunks were purged (nodal_collect) becomes
   the mapping of a huge block where it is (its one block, at chunk 32,
   grown past 1 MiB: huge.h, nd_huge_from_large), which counts committed
   whole; once the block is freed, the large pool takes the mapping back
   from the huge cache as a segment (node.c: nd_node_seg_from_huge). Its
   committed chunks are then the header's, those the segment had committed
   and those the huge block covered (32-63), not the 31 the purge gave back,
   and the committed statistic no longer counts those; the pool's next
   block takes resident chunks. No system call finds them (segment.h: a
   huge mapping's committed). On main f163d2f every chunk was marked
   committed: the statistic kept counting the purged ones, and the next
   block went to chunk 1, faulting purged chunks in while resident ones
   waited. */
static void a_segment_taken_back_from_the_huge_cache_has_only_its_written_chunks_committed(void)
{
    stay_on_this_cpu();
    nodal_collect(1);
    size_t one = ((size_t)16 << ND_CHUNK_SHIFT) - 4096, two = ((size_t)15 << ND_CHUNK_SHIFT) - 4096;
    unsigned char *x = nodal_malloc(one), *y = nodal_malloc(two), *p = nodal_malloc((size_t)300 << 10);
    EXPECT(x != NULL && y != NULL && p != NULL, "three large blocks");
    nd_segment *s = nd_seg_base(p);
    EXPECT(nd_seg_base(x) == s && nd_seg_base(y) == s && s->kind == ND_SEG_LARGE && p == (unsigned char *)s + (32u << ND_CHUNK_SHIFT),
           "the blocks in one large segment, the third at chunk 32 (at %p, segment %p)", (void *)p, (void *)s);
    memset(x, 1, one);
    memset(y, 1, two);
    nodal_free(x);
    nodal_free(y);
    nodal_collect(1);
    EXPECT((s->committed & nd_mask_range(1, 31)) == 0, "chunks 1-31 purged (committed %#llx)",
           (unsigned long long)s->committed);
    size_t big = (size_t)3 << 19;   /* 1.5 MiB: chunks 32-55 */
    unsigned char *q = nodal_realloc(p, big);
    EXPECT(q == p && nd_seg_of(q) != NULL && nd_seg_of(q)->kind == ND_SEG_HUGE,
           "the block grown to %zu B a huge block where it was (at %p, found at %p)", big, (void *)p, (void *)q);
    memset(q, 2, big);
    size_t back0 = nd_load_relaxed(&nd_gauge.segments_from_huge);
    nodal_free(q);
    EXPECT(huge_cache_holds(s->node, s), "the freed mapping %p in its node's huge cache", (void *)s);
    size_t committed0 = nd_load_relaxed(&nd_gauge.committed);
    unsigned char *r = nodal_malloc((size_t)300 << 10);
    size_t committed1 = nd_load_relaxed(&nd_gauge.committed);
    EXPECT(r != NULL && nd_seg_base(r) == s && nd_load_relaxed(&nd_gauge.segments_from_huge) == back0 + 1,
           "the next large block in the mapping taken back as a segment (%p, segment %p; segments_from_huge +%zu)",
           (void *)r, (void *)s, nd_load_relaxed(&nd_gauge.segments_from_huge) - back0);
    EXPECT((s->committed & nd_mask_range(1, 31)) == 0 && (s->committed & nd_mask_range(32, 55)) == nd_mask_range(32, 55),
           "its committed chunks the header's and the block's 32-55, not the purged 1-31 (committed %#llx)",
           (unsigned long long)s->committed);
    EXPECT(committed0 >= committed1 + ((size_t)31 << ND_CHUNK_SHIFT),
           "the committed statistic to drop by the purged chunks at least (%zu KiB), it went from %zu to %zu KiB",
           (size_t)31 << (ND_CHUNK_SHIFT - 10), committed0 >> 10, committed1 >> 10);
    size_t at = (size_t)(r - (unsigned char *)s) >> ND_CHUNK_SHIFT;
    EXPECT(at >= 32 && at + 5 <= 56, "the block in resident chunks (32-55), at chunk %zu", at);
    nodal_free(r);
    EXPECT(nd_large_is_valid() && nd_node_is_valid(s->node), "the pools and node caches to be valid");
}

/* Under an address-space limit that leaves 1 MiB, a block grown alone
   past 1 MiB (a huge block in its segment) that realloc cannot grow to
   64 MiB (no room to grow its mapping where it is, to move it, nor to map
   another block) gets NULL with errno ENOMEM, its bytes intact; it is
   freed as a huge block, and the pools stay valid. The child's exit
   status says which step failed. */
static void a_block_made_huge_in_its_segment_that_cannot_grow_stays_intact(void)
{
    pthread_attr_t attr;
    pid_t pid = fork_limit_child(&attr);
    if (pid == 0) {
        nodal_collect(1);
        unsigned char *p = nodal_malloc(8);
        if (p == NULL)
            _exit(5);
        for (size_t size = 8; size < ((size_t)2 << 20);) {
            size_t next = size + size / 4 + 8;
            unsigned char *q = nodal_realloc(p, next);
            if (q == NULL)
                _exit(5);
            for (size_t j = size; j < next; j++)
                q[j] = (unsigned char)(j * 7 + 13);
            p = q;
            size = next;
        }
        nd_segment *s = nd_seg_of(p);
        if (s == NULL || s->kind != ND_SEG_HUGE || !s->formatted)
            _exit(6);
        limit_address_space_to_now_plus((rlim_t)1 << 20);
        errno = 0;
        unsigned char *q = nodal_realloc(p, (size_t)64 << 20);
        if (q != NULL || errno != ENOMEM)
            _exit(7);
        for (size_t j = 8; j < ((size_t)2 << 20) - ((size_t)1 << 18); j += 61)
            if (p[j] != (unsigned char)(j * 7 + 13))
                _exit(8);
        nodal_free(p);
        _exit(nd_large_is_valid() ? 0 : 9);
    }
    int st = wait_for_child(pid);
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) != 4, "the child to set its limit (status %#x)", st);
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) != 5 && WEXITSTATUS(st) != 6,
           "the child's block grown to 2 MiB to be a huge block in its segment (status %#x)", st);
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) != 7, "realloc to 64 MiB under the limit to give NULL and ENOMEM");
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) != 8, "the block's bytes to be intact after the failed realloc");
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child to free it and keep its pools valid (status %#x)", st);
}

/* A tenth at a time (bench/micro -m grow), every 4,093rd old byte
   checked; every move. */
static int grow_by_tenths(unsigned char **pp, size_t from, size_t to, int tag)
{
    return grow_in_steps(pp, from, to, tag, 10, 4093, 0);
}

/* A block grown alone past 1 MiB, then by tenths to 64 MiB, twice: the
   second block, made huge in the segment the large pool took back from
   the first one's mapping, grows through the rest of that mapping (cached
   apart when the first was freed, 60 MiB) where it is, joined a piece at
   a time (nd_huge_join_next: a rest much larger than the growth gives its
   first 4 MiB multiples, the others stay cached where they are): it never
   moves, its bytes kept; the pools and node caches stay valid. On h55r's
   branch (c464b25) a rest larger than four times the growth was not
   joined, so the block found it in the way of mremap and moved past
   4 MiB, 3 to 4 times a round; on main f8e5289 it moved at 1 MiB (into
   a huge block) and past. (purge_delay=3600000: the rest stays cached
   between the rounds however long they take.) */
static void a_block_grown_alone_to_64_mib_again_grows_through_the_rest_in_place(void)
{
    nodal_collect(1);
    const size_t top = (size_t)64 << 20;
    for (int round = 0; round < 2; round++) {
        unsigned char *p = tagged_block(nodal_malloc(8), 21 + round);
        if (p == NULL)
            return;
        grow_by_quarters(&p, 8, (size_t)1 << 20, 21 + round);
        unsigned char *at1 = p;
        int moves = grow_by_tenths(&p, (size_t)1 << 20, top, 21 + round);
        nd_segment *s = nd_seg_of(p);
        EXPECT(s != NULL && s->kind == ND_SEG_HUGE && nd_seg_is_valid(s) && nd_huge_usable(s, p) >= top,
               "round %d: a valid huge block of 64 MiB", round);
        if (round == 1)
            EXPECT(moves == 0 && p == at1, "round 1: the block grown from 1 MiB to 64 MiB (at %p) not to move; it "
                   "moved %d times, to %p", (void *)at1, moves, (void *)p);
        int node = s->node;
        nodal_free(p);
        EXPECT(nd_large_is_valid() && nd_node_is_valid(node), "round %d: the pools and node caches to be valid",
               round);
    }
}

/* A huge block whose mapping cannot grow where it is (the next addresses
   taken: a mapping of the test's own) moves once, and lands with room:
   grown on by quarters to 2.5 times the size it moved at, it stays where
   it landed (huge.c: nd_huge_reserve_room), its bytes kept. On main
   f8e5289 it landed in a place of exactly its size (the kernel's top
   down, right below the mappings there: at most the 4 MiB its alignment's
   trim left free after it) and moved again at its next growths. */
static void a_huge_block_moved_to_grow_lands_with_room_to_grow_on(void)
{
    nodal_collect(1);
    const int tag = 31;
    size_t size = (size_t)8 << 20;
    unsigned char *p = nodal_malloc(size);
    EXPECT(p != NULL, "a block of 8 MiB");
    if (p == NULL)
        return;
    for (size_t j = 0; j < size; j++)
        p[j] = (unsigned char)(j * 7 + tag);
    nd_segment *s = nd_seg_of(p);
    EXPECT(s != NULL && s->kind == ND_SEG_HUGE, "a huge block of 8 MiB");
    uint8_t *end = (uint8_t *)s + s->size;
    void *wall = mmap(end, 65536, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (wall != MAP_FAILED && wall != end) {
        munmap(wall, 65536);   /* an old kernel took it as a hint */
        wall = MAP_FAILED;
    }
    size_t usable = nd_huge_usable(s, p);
    unsigned char *q = nodal_realloc(p, usable + ((size_t)1 << 20));
    EXPECT(q != NULL && q != p, "realloc past the mapping's end (%p, taken) to move the block", (void *)end);
    if (q == NULL)
        return;
    for (size_t j = usable; j < usable + ((size_t)1 << 20); j++)
        q[j] = (unsigned char)(j * 7 + tag);
    size = usable + ((size_t)1 << 20);
    int moves = grow_by_quarters(&q, size, size * 5 / 2, tag);
    EXPECT(moves == 0, "the moved block grown from %zu B to %zu B to stay where it landed; it moved %d times", size,
           size * 5 / 2, moves);
    nodal_free(q);
    if (wall != MAP_FAILED)
        munmap(wall, 65536);
    EXPECT(nd_large_is_valid(), "the large pools to be valid");
}

/* A block alone in its segment that realloc grows at once past what the
   segment holds (1 MiB to 6 MiB) does not become a huge block there: its
   mapping would have to grow past the segment's neighbours at once. It
   takes the path of a block that shares its segment (a huge mapping of
   its own, mapped where it has room), its segment stays in its pool, and
   huge_from_large does not count it; its bytes are kept. On h55r's branch
   (c464b25) the segment left its pool and was moved at once. (Main
   f8e5289 has no such path: it passes there.) */
static void a_block_alone_grown_past_its_segment_at_once_leaves_it_in_the_pool(void)
{
    nodal_collect(1);
    const int tag = 41;
    unsigned char *p = tagged_block(nodal_malloc(8), tag);
    if (p == NULL)
        return;
    grow_by_quarters(&p, 8, (size_t)1 << 20, tag);
    nd_segment *ls = nd_seg_of(p);
    EXPECT(ls != NULL && ls->kind == ND_SEG_LARGE, "a large block of 1 MiB");
    size_t from0 = nd_load_relaxed(&nd_gauge.huge_from_large);
    unsigned char *q = nodal_realloc(p, (size_t)6 << 20);
    EXPECT(q != NULL && q != p && nd_seg_of(q)->kind == ND_SEG_HUGE, "realloc to 6 MiB to give a huge block");
    EXPECT(nd_load_relaxed(&nd_gauge.huge_from_large) == from0, "huge_from_large not to count it");
    EXPECT(nd_seg_of(p) == ls && ls->kind == ND_SEG_LARGE && nd_seg_is_valid(ls),
           "its segment %p to stay a valid large segment", (void *)ls);
    for (size_t j = 0; q != NULL && j < ((size_t)1 << 20); j += 61)
        EXPECT(q[j] == (unsigned char)(j * 7 + tag), "byte %zu kept", j);
    nodal_free(q != NULL ? q : p);
    EXPECT(nd_large_is_valid(), "the large pools to be valid");
}

/* A block grown alone past 1 MiB is a huge block of its segment's 4 MiB:
   realloc shrinking it to 1.5 MiB keeps it where it is (its mapping whole,
   to serve as a segment again), and to 512 KiB copies it into a large
   block, its bytes kept; the pools stay valid. */
static void a_block_made_huge_in_its_segment_shrinks_as_a_huge_block(void)
{
    nodal_collect(1);
    unsigned char *p = tagged_block(nodal_malloc(8), 11);
    if (p == NULL)
        return;
    size_t size = (size_t)1200 << 10;
    grow_by_quarters(&p, 8, size, 11);
    nd_segment *s = nd_seg_of(p);
    EXPECT(s != NULL && s->kind == ND_SEG_HUGE && s->formatted && s->size == ((size_t)4 << 20),
           "a block grown to %zu B alone in its segment to be a huge block of its 4 MiB", size);
    unsigned char *q = nodal_realloc(p, (size_t)1500 << 10);
    EXPECT(q == p, "realloc to 1.5 MiB to keep it in place");
    if (q == NULL)
        return;
    q = nodal_realloc(p = q, (size_t)512 << 10);
    EXPECT(q != NULL && nd_seg_of(q)->kind == ND_SEG_LARGE, "realloc to 512 KiB to make it a large block");
    for (size_t j = 0; q != NULL && j < ((size_t)512 << 10); j += 61)
        EXPECT(q[j] == (unsigned char)(j * 7 + 11), "byte %zu kept", j);
    nodal_free(q != NULL ? q : p);
    EXPECT(nd_large_is_valid(), "the large pools to be valid");
}

static unsigned char *handed_block;
static size_t handed_size;

static void *grow_the_handed_block(void *arg)
{
    size_t to = (size_t)(uintptr_t)arg;
    grow_by_quarters(&handed_block, handed_size, to, 3);
    handed_size = to;
    return NULL;
}

/* A block grown by realloc in one thread, grown on in a second and freed
   by a third (a buffer handed along a pipeline), three times over: its
   contents survive every step, the freed block is kept for the next grown
   one (large.h: kept grown blocks) and taken again, and the pools stay
   valid. */
static void a_block_grown_in_one_thread_grows_on_in_another(void)
{
    for (int round = 0; round < 3; round++) {
        if ((handed_block = tagged_block(nodal_malloc(8), 3)) == NULL)
            return;
        handed_size = 8;
        pthread_t t;
        EXPECT(pthread_create(&t, NULL, grow_the_handed_block, (void *)(uintptr_t)(40 << 10)) == 0,
               "pthread_create to work");
        pthread_join(t, NULL);
        EXPECT(pthread_create(&t, NULL, grow_the_handed_block, (void *)(uintptr_t)(300 << 10)) == 0,
               "pthread_create to work");
        pthread_join(t, NULL);
        for (size_t j = 0; j < handed_size; j += 61)
            EXPECT(handed_block[j] == (unsigned char)(j * 7 + 3), "byte %zu kept through both threads", j);
        EXPECT(nd_large_is_valid(), "the large pools to be valid with the block live (round %d)", round);
        nodal_free(handed_block);
        EXPECT(nd_large_is_valid(), "the large pools to be valid with the block freed (round %d)", round);
    }
    nodal_collect(1);
    EXPECT(nd_large_is_valid(), "the large pools to be valid after nodal_collect");
}

/* A block bound to a node stays bound to it through realloc's growth, from
   8 B through the classes, a grown run of chunks (kept when freed: the
   bound pool's own slots) and a huge block; a plain block grown after
   the bound one was freed is not given its kept run. */
static void a_node_bound_block_grown_by_realloc_stays_on_its_node(void)
{
    nodal_free(nodal_malloc(1));   /* the thread started: its node */
    int node = nd_tls_tc->heap.node;
    for (int round = 0; round < 2; round++) {
        unsigned char *p = tagged_block(nodal_malloc_node(8, node), 5);
        if (p == NULL)
            return;
        size_t size = 8;
        while (size < ((size_t)2 << 20)) {
            size_t next = size + size / 2;
            grow_by_quarters(&p, size, next, 5);
            size = next;
            nd_segment *s = nd_seg_of(p);
            EXPECT(s != NULL && s->bound && s->node == node, "a block bound to node %d grown to %zu bytes to stay bound to it "
                   "(segment bound %d, node %d)", node, size, s != NULL && s->bound, s != NULL ? s->node : -1);
        }
        nodal_free(p);
        unsigned char *q = tagged_block(nodal_malloc(8), 6);
        if (q == NULL)
            return;
        grow_by_quarters(&q, 8, (size_t)60 << 10, 6);
        EXPECT(!nd_seg_base(q)->bound, "a plain block grown to 60 KiB to stay plain memory");
        nodal_free(q);
        EXPECT(nd_large_is_valid(), "the large pools to be valid (round %d)", round);
    }
}

/* A large block takes the first free run that fits in the oldest segment
   of its pool that has one: a new segment goes to the end of the pool's
   list (large.c), so the holes that frees leave in the older, fuller
   segments are filled before the newest, emptiest one is cut into, and
   that one stays free to go back. Blocks of 3 chunks: 21 fill a segment
   (chunk 0 is its header), the next 9 go to a second; one of the first
   21 freed, a new block of the same size takes its place. On main 174830f
   (a new segment first in the list) it went to the second segment: with
   8 threads of random sizes (bench/shortlived -t 8) the pool held 9-10
   segments, 35-39 MiB resident, for 21-23 MiB of large blocks. */
static void a_large_block_fills_an_older_segments_hole_first(void)
{
    enum { N = 30, PER_SEG = 21 };
    const size_t size = 3 * ND_CHUNK_SIZE;
    static unsigned char *p[N];
    stay_on_this_cpu();   /* one shard's segments */
    for (int i = 0; i < N; i++) {
        p[i] = nodal_malloc(size);
        EXPECT(p[i] != NULL, "malloc(%zu) number %d to succeed", size, i);
        if (p[i] == NULL)
            return;
        memset(p[i], 1, size);
    }
    nd_segment *older = nd_seg_base(p[0]), *newer = nd_seg_base(p[N - 1]);
    int in_older = 0, in_newer = 0;
    for (int i = 0; i < N; i++) {
        in_older += nd_seg_base(p[i]) == older;
        in_newer += nd_seg_base(p[i]) == newer;
    }
    EXPECT(older != newer && older->kind == ND_SEG_LARGE && in_older == PER_SEG && in_newer == N - PER_SEG,
           "the first %d blocks of %zu B to fill one large segment and the other %d to go to a second (a fresh "
           "pool); %d and %d", PER_SEG, size, N - PER_SEG, in_older, in_newer);
    unsigned char *hole = p[PER_SEG / 2];
    nodal_free(hole);
    unsigned char *q = nodal_malloc(size);
    EXPECT(q == hole, "the new block (%p, segment %p) to take the hole the freed one (%p) left in the older "
           "segment (%p), not the newer one's free chunks (%p)", (void *)q, q != NULL ? (void *)nd_seg_base(q) : NULL,
           (void *)hole, (void *)older, (void *)newer);
    EXPECT(nd_large_is_valid(), "the large pools to be valid");
    p[PER_SEG / 2] = q;
    for (int i = 0; i < N; i++)
        nodal_free(p[i]);
    EXPECT(nd_large_is_valid(), "the large pools to be valid once the blocks are freed");
}

/* n blocks of size, each written whole, into p[]; false if one failed.
   The thread stays on its CPU from here on: the cases that use it expect
   large blocks of one shard's segments (stay_on_this_cpu). */
static bool written_blocks(unsigned char **p, int n, size_t size)
{
    stay_on_this_cpu();
    for (int i = 0; i < n; i++) {
        p[i] = nodal_malloc(size);
        EXPECT(p[i] != NULL, "malloc(%zu) number %d to succeed", size, i);
        if (p[i] == NULL)
            return false;
        memset(p[i], 1, size);
    }
    return true;
}

/* A large block takes a run whose chunks are still resident before one
   whose memory was given back (large.c: committed first), wherever they
   lie in the pool: four blocks of 4 chunks in a fresh segment, the first
   freed and purged (the pool's maintenance, forced), the third freed; a
   new block of 4 chunks takes the third's run, not the first's, which it
   would have to fault in again. On main 55f8196 (the first run that fits)
   it took the first's. */
static void a_large_block_reuses_resident_chunks_before_purged_ones(void)
{
    const size_t size = 4 * ND_CHUNK_SIZE;
    unsigned char *p[4];
    if (!written_blocks(p, 4, size))
        return;
    nd_segment *s = nd_seg_base(p[0]);
    EXPECT(s->kind == ND_SEG_LARGE && nd_seg_base(p[3]) == s && p[1] == p[0] + size && p[2] == p[1] + size,
           "the four blocks to lie one after the other in one large segment");
    nodal_free(p[0]);
    nd_large_maintain(nd_os_now_ms(), true);   /* its chunks purged */
    unsigned first = (unsigned)(((uintptr_t)p[0] - (uintptr_t)s) >> ND_CHUNK_SHIFT);
    EXPECT((s->committed >> first & 1) == 0, "the freed block's chunks to be purged");
    nodal_free(p[2]);   /* its chunks resident, waiting for the delay */
    unsigned char *q = nodal_malloc(size);
    EXPECT(q == p[2], "the new block (%p) to take the resident run the third block left (%p), not the purged one "
           "of the first (%p)", (void *)q, (void *)p[2], (void *)p[0]);
    EXPECT(nd_large_is_valid(), "the large pools to be valid");
    nodal_free(q);
    nodal_free(p[1]);
    nodal_free(p[3]);
    EXPECT(nd_large_is_valid(), "the large pools to be valid once the blocks are freed");
}

/* When a large segment empties and its pool has its spare empty segment
   already, the pool gives back the one that holds less memory (large.c:
   nd_large_cleanest_empty): a segment of 7 blocks of 9 chunks, an eighth
   block in a second segment, freed (the spare) and purged; then the 7
   freed: the first segment, its chunks resident, stays, and the next
   block lands in it without a page fault. On main 55f8196 the segment
   just emptied went back to the node (its memory idle there until the
   delay) and the next block was cut from the purged spare. */
static void a_large_pool_keeps_its_most_resident_empty_segment(void)
{
    const size_t size = 9 * ND_CHUNK_SIZE;
    unsigned char *p[8];
    if (!written_blocks(p, 8, size))
        return;
    nd_segment *full = nd_seg_base(p[0]), *spare = nd_seg_base(p[7]);
    for (int i = 1; i < 7; i++)
        EXPECT(nd_seg_base(p[i]) == full, "the first 7 blocks to fill one segment (block %d)", i);
    EXPECT(spare != full, "the eighth block to go to a second segment");
    nodal_free(p[7]);
    nd_large_maintain(nd_os_now_ms(), true);   /* the spare purged */
    for (int i = 0; i < 7; i++)
        nodal_free(p[i]);
    unsigned char *q = nodal_malloc(size);
    EXPECT(q != NULL && nd_seg_base(q) == full, "the next block (segment %p) to go to the segment just emptied, "
           "its memory resident (%p), not to the purged spare (%p)", q != NULL ? (void *)nd_seg_base(q) : NULL,
           (void *)full, (void *)spare);
    EXPECT(nd_large_is_valid(), "the large pools to be valid");
    nodal_free(q);
    EXPECT(nd_large_is_valid(), "the large pools to be valid once the blocks are freed");
}

/* A segment the pool takes dirty from its node's cache keeps its memory's
   deadline (node.h): the chunks no block uses again are purged when the
   cache would have purged them. Two segments of 7 blocks of 9 chunks
   (less 8 KiB: not a whole run, so no CPU's cache keeps them), all
   written; the second's freed (the pool's spare), then the first's (to
   the node's cache, resident); 8 blocks again: the spare takes 7, the
   eighth a cached segment. At its deadline the pool's maintenance purges
   that segment's chunks but the block's. On main 61f716f they stayed
   resident (purge_mask 0) for as long as the segment held a block. */
/* Two large segments of 7 written blocks of `size` each, freed second
   first: the second stays as the pool's spare, the first goes to the
   node's cache with its memory resident. False (after a failed EXPECT)
   when the blocks could not be made. */
static bool a_dirty_segment_in_the_nodes_cache(size_t size)
{
    stay_on_this_cpu();   /* one shard's segments */
    unsigned char *p[14];
    if (!written_blocks(p, 14, size))
        return false;
    nd_segment *first = nd_seg_base(p[0]), *second = nd_seg_base(p[7]);
    for (int i = 1; i < 14; i++)
        EXPECT(nd_seg_base(p[i]) == (i < 7 ? first : second), "blocks 0-6 in one segment, 7-13 in another (block %d)", i);
    for (int i = 7; i < 14; i++)
        nodal_free(p[i]);
    for (int i = 0; i < 7; i++)
        nodal_free(p[i]);
    return true;
}

static void a_cached_segments_unused_chunks_are_purged_at_the_caches_deadline(void)
{
    if (nd_opt(ND_OPT_purge_delay) <= 0)
        SKIP("needs purge_delay > 0 (a dirty node cache)");
    const size_t size = 9 * ND_CHUNK_SIZE - 8192;
    unsigned char *p[8];
    if (!a_dirty_segment_in_the_nodes_cache(size) || !written_blocks(p, 8, size))
        return;
    nd_segment *s = nd_seg_base(p[7]);
    unsigned at = (unsigned)(((uintptr_t)p[7] - (uintptr_t)s) >> ND_CHUNK_SHIFT);
    uint64_t block = nd_mask_range(at, at + 8);
    uint64_t rest = s->committed & ~block & ~(uint64_t)1;
    EXPECT(nd_popcount64(rest) >= 54, "the eighth block's segment (%p) to come dirty from the node's cache: "
           "%d resident chunks besides the block's and the header", (void *)s, nd_popcount64(rest));
    EXPECT(s->purge_mask == rest, "its resident chunks but the block's waiting for their purge (purge_mask %#llx, "
           "resident %#llx)", (unsigned long long)s->purge_mask, (unsigned long long)rest);
    nd_large_maintain(s->purge_at, false);
    EXPECT((s->committed & ~block & ~(uint64_t)1) == 0 && (s->committed & block) == block,
           "at the cache's deadline the chunks no block uses purged, the block's resident (committed %#llx)",
           (unsigned long long)s->committed);
    EXPECT(nd_large_is_valid(), "the large pools to be valid");
    for (int i = 0; i < 8; i++)
        nodal_free(p[i]);
    EXPECT(nd_large_is_valid(), "the large pools to be valid once the blocks are freed");
}

/* The same for a heap (node.h): a thread's first medium block takes a
   segment the large pool left dirty in the node's cache; nodal_collect(1)
   in that thread purges its chunks but its page's (heap.c counts them in
   purge_pending). On main 61f716f the heap kept the whole segment
   resident: the collect purges only what its pages freed. */
static void *a_medium_block_in_a_cached_segment(void *arg)
{
    (void)arg;
    unsigned char *q = nodal_malloc(20000);
    EXPECT(q != NULL, "a medium block");
    if (q == NULL)
        return NULL;
    memset(q, 1, 20000);
    nd_segment *s = nd_seg_base(q);
    size_t area;
    unsigned i = (unsigned)(((uintptr_t)q - (uintptr_t)s) >> ND_MEDIUM_PAGE_SHIFT);
    uint8_t *start = nd_seg_page_area(s, i, &area);   /* page 0's starts past the header */
    uint64_t page = nd_seg_chunks(s, start, area);
    uint64_t rest = s->committed & ~page & ~(uint64_t)1;
    EXPECT(s->kind == ND_SEG_MEDIUM && nd_popcount64(rest) >= 40,
           "the block's segment (%p) to come dirty from the node's cache: %d resident chunks besides its page's",
           (void *)s, nd_popcount64(rest));
    EXPECT(s->purge_mask == rest, "those chunks waiting for their purge (purge_mask %#llx, resident %#llx)",
           (unsigned long long)s->purge_mask, (unsigned long long)rest);
    nodal_collect(1);
    EXPECT((s->committed & ~page & ~(uint64_t)1) == 0,
           "nodal_collect(1) to purge the segment's chunks but its page's (committed %#llx, page %#llx)",
           (unsigned long long)s->committed, (unsigned long long)page);
    EXPECT(nd_heap_is_valid(&nd_tls_tc->heap), "the heap to be valid");
    nodal_free(q);
    return NULL;
}

static void a_heap_purges_the_unused_chunks_of_a_segment_it_took_dirty(void)
{
    if (nd_opt(ND_OPT_purge_delay) <= 0)
        SKIP("needs purge_delay > 0 (a dirty node cache)");
    if (a_dirty_segment_in_the_nodes_cache(9 * ND_CHUNK_SIZE - 8192))
        run_in_a_thread(a_medium_block_in_a_cached_segment);
}

/* The node's cache of free segments counts what it does (counters.h):
   a segment given to it (segments_cached), taken again with its memory
   (segments_reused_dirty) or after it was purged (segments_reused_clean),
   purged in the cache (segments_cache_purged). A segment of two written
   chunks goes in, comes back first (dirty ones first), goes in again, is
   purged by a sweep of every cached segment, and comes back clean. On
   main 5f90bfb the fields do not exist. */
static uint64_t node_counter(const size_t *field) { return nd_load_relaxed(field); }

static void the_node_cache_counts_segments_cached_reused_dirty_or_clean_and_purged(void)
{
    if (nd_opt(ND_OPT_purge_delay) <= 0)
        SKIP("needs purge_delay > 0 (a dirty node cache)");
    int node = nd_topo.mem_ids[0];
    nd_node_maintain(ND_SWEEP_ALL);   /* no dirty segment cached before this one */
    uint64_t cached0 = node_counter(&nd_gauge.segments_cached);
    uint64_t dirty0 = node_counter(&nd_gauge.segments_reused_dirty);
    uint64_t clean0 = node_counter(&nd_gauge.segments_reused_clean);
    uint64_t purged0 = node_counter(&nd_gauge.segments_cache_purged);
    nd_segment *s = nd_node_seg_get(node, false, ND_SEG_LARGE);
    EXPECT(s != NULL, "a segment from node %d", node);
    if (s == NULL)
        return;
    uint8_t *two = (uint8_t *)s + 2 * ND_CHUNK_SIZE;
    EXPECT(nd_seg_commit(s, two, 2 * ND_CHUNK_SIZE) == 0, "two chunks of it committed");
    memset(two, 0x5a, 2 * ND_CHUNK_SIZE);
    nd_node_seg_put(s);
    EXPECT(node_counter(&nd_gauge.segments_cached) - cached0 == 1, "one segment cached, counted %llu",
           (unsigned long long)(node_counter(&nd_gauge.segments_cached) - cached0));
    nd_segment *t = nd_node_seg_get(node, false, ND_SEG_LARGE);
    EXPECT(t == s, "the dirty segment (%p) taken again first, got %p", (void *)s, (void *)t);
    EXPECT(node_counter(&nd_gauge.segments_reused_dirty) - dirty0 == 1 &&
               node_counter(&nd_gauge.segments_reused_clean) == clean0,
           "it counted as taken dirty (dirty %llu, clean %llu)",
           (unsigned long long)(node_counter(&nd_gauge.segments_reused_dirty) - dirty0),
           (unsigned long long)(node_counter(&nd_gauge.segments_reused_clean) - clean0));
    if (t == NULL)
        return;
    nd_node_seg_put(t);
    nd_node_maintain(ND_SWEEP_ALL);
    EXPECT(node_counter(&nd_gauge.segments_cache_purged) - purged0 == 1,
           "the sweep of every cached segment to purge the one dirty segment, counted %llu",
           (unsigned long long)(node_counter(&nd_gauge.segments_cache_purged) - purged0));
    t = nd_node_seg_get(node, false, ND_SEG_LARGE);
    EXPECT(t != NULL && (t->committed & ~(uint64_t)1) == 0, "a cached segment with nothing committed but its header");
    EXPECT(node_counter(&nd_gauge.segments_reused_clean) - clean0 == 1 &&
               node_counter(&nd_gauge.segments_reused_dirty) - dirty0 == 1,
           "it counted as taken clean (dirty %llu, clean %llu)",
           (unsigned long long)(node_counter(&nd_gauge.segments_reused_dirty) - dirty0),
           (unsigned long long)(node_counter(&nd_gauge.segments_reused_clean) - clean0));
    if (t != NULL)
        nd_node_seg_put(t);
    EXPECT(node_counter(&nd_gauge.segments_cached) - cached0 == 3, "three segments cached in all, counted %llu",
           (unsigned long long)(node_counter(&nd_gauge.segments_cached) - cached0));
    EXPECT(nd_node_is_valid(node), "node %d's caches to be valid", node);
}

/* ---- secure=1: a node-bound cache's fills counted on the request's class --
   Under secure=1 a node-bound cache has no bins, and past ND_LOOKUP_MAX a
   request is counted on its bin's class, the one below its block's
   (class.h: nd_class_bin). Its block comes from the secure bins of the
   block's class, whose fills were counted on the block's class, never
   requested, its cold part not set; when a request of that class came
   later, its cold part went to a near record and the counts stayed in
   binfo[] (nd_tcache_is_valid false: the hand-off fuzzer, secure=1, in a
   debug build, within its first 150 steps on every run). The fills are
   counted where the request was. */
static void *secure_bound_fills_in_a_fresh_thread(void *arg)
{
    (void)arg;
    nodal_free(nodal_malloc(1));   /* the thread's plain cache */
    int node = nd_topo.mem_ids[0];
    size_t first = 2000;
    unsigned c = nd_class_of(first + sizeof(uint64_t));   /* its block's class (the canary word) */
    unsigned counted = nd_class_bin[c];
    EXPECT(counted < ND_CLASS_COUNT && counted != c && nd_class_bin[c + 1] == c,
           "under secure=1, class %u's blocks in bin %u, the next class's in bin %u (class.h)", c, counted, c);
    void *p = nodal_malloc_node(first, node);
    nd_tcache *tc = nd_thread_node_tcache(node);
    EXPECT(p != NULL && tc != NULL && nd_bin_cap_max(tc, counted) == 0, "a block from a node-bound cache with no bins");
    void *q = nodal_malloc_node(nd_class_size[c], node);   /* counted on class c: its first use */
    EXPECT(q != NULL, "a second block");
    EXPECT(nd_tcache_is_valid(tc), "the node-bound cache's invariants to hold once class %u is first requested", c);
    EXPECT(nd_bin_info_of(tc, counted)->counts.fills == 1,
           "the first block's fill counted on its request's class %u (got %llu fills)", counted,
           (unsigned long long)nd_bin_info_of(tc, counted)->counts.fills);
    nodal_free(p);
    nodal_free(q);
    EXPECT(nd_tcache_is_valid(tc), "the cache invariants to hold");
    return NULL;
}

static void under_secure_1_a_node_bound_caches_fills_count_on_the_requests_class(void)
{
    if (!nd_secure_on() || nd_secure_full())
        SKIP("run with NODAL_OPTIONS=secure=1 (ctest sets it)");
    run_in_a_thread(secure_bound_fills_in_a_fresh_thread);
}

/* Threads that map aligned segments at once (nd_os_map_aligned, os.c)
   claim the place below the last mapping before they map there, so two
   never try the same place: each mapping is one mmap call, but for the
   few where something else took the place. When both read the same hint
   and tried it, the second's mmap failed, and it mapped, unmapped and
   mapped twice the size to trim: 8 threads taking batches of 1 MiB blocks
   made 3,660 failed mmap calls of 8,500 a run (docs/results.md, stop 67). */
#define MAP_RACE_EACH 200
static pthread_barrier_t map_race_start;
static void *map_race_maps[2][MAP_RACE_EACH];

static void *map_segments_at_once(void *arg)
{
    void **out = arg;
    pthread_barrier_wait(&map_race_start);
    for (int i = 0; i < MAP_RACE_EACH; i++)
        out[i] = nd_os_map_aligned(ND_SEG_SIZE, ND_SEG_SIZE);
    return NULL;
}

static void threads_mapping_segments_at_once_take_one_mmap_each(void)
{
    size_t before = nd_load_relaxed(&nd_gauge.os_maps);
    pthread_t t[2];
    EXPECT(pthread_barrier_init(&map_race_start, NULL, 2) == 0, "pthread_barrier_init to work");
    for (int i = 0; i < 2; i++)
        EXPECT(pthread_create(&t[i], NULL, map_segments_at_once, map_race_maps[i]) == 0, "pthread_create to work");
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    size_t calls = nd_load_relaxed(&nd_gauge.os_maps) - before;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < MAP_RACE_EACH; j++) {
            uintptr_t p = (uintptr_t)map_race_maps[i][j];
            EXPECT(p != 0 && (p & ND_SEG_MASK) == 0, "mapping %d of thread %d aligned to 4 MiB", j, i);
            for (int k = 0; k < j; k++)
                EXPECT((uintptr_t)map_race_maps[i][k] != p && (uintptr_t)map_race_maps[1 - i][k] != p,
                       "mapping %d of thread %d its own", j, i);
        }
    EXPECT(calls <= 2 * MAP_RACE_EACH + 2 * MAP_RACE_EACH / 20, "%d aligned mappings in at most %d mmap calls "
           "(one each, a few places taken by something else), made in %zu", 2 * MAP_RACE_EACH,
           2 * MAP_RACE_EACH + 2 * MAP_RACE_EACH / 20, calls);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < MAP_RACE_EACH; j++)
            nd_os_unmap(map_race_maps[i][j], ND_SEG_SIZE);
    pthread_barrier_destroy(&map_race_start);
}

static const struct nd_case cases[] = {
    ND_CASE(a_heap_that_leaves_its_node_keeps_every_block_usable),
    ND_CASE(a_heap_that_leaves_its_node_leaves_no_memory_in_its_free_pages),
    ND_CASE(a_huge_block_mapped_where_a_moved_one_was_stays_nodals),
    ND_CASE(short_segments_under_an_address_space_limit_keep_the_heap_valid),
    ND_CASE(a_thread_with_no_room_left_gets_small_blocks_from_its_nodes_reserve),
    ND_CASE(large_segments_with_unmapped_chunks_under_an_address_space_limit_stay_valid),
    ND_CASE(a_thread_moved_to_another_cpu_maps_the_holes_of_its_first_shard_again),
    ND_CASE(a_hole_another_mapping_took_is_never_mapped_over_nor_unmapped),
    ND_CASE(medium_pages_with_unmapped_ends_under_an_address_space_limit_stay_valid),
    ND_CASE(large_blocks_whose_tails_were_given_back_stay_whole_and_valid),
    ND_CASE(emit_large_tails),
    ND_CASE(segment_map_holds_windows_of_any_range_and_the_cache_names_its_window),
    ND_CASE(a_new_leaf_is_published_once_by_racing_threads),
    ND_CASE(segments_without_a_slot_free_through_the_segment_map),
    ND_CASE(a_fresh_segments_format_leaves_its_descriptors_unwritten),
    ND_CASE(a_segments_first_pages_have_their_descriptors_on_its_first_header_page),
    ND_CASE(the_free_fast_path_finds_a_page_without_the_segment_header),
    ND_CASE(fork_cutting_off_a_remote_free_leaves_a_working_child),
    ND_CASE(random_operations_keep_the_heap_valid),
    ND_CASE(a_cache_gives_slots_only_to_the_classes_a_thread_uses),
    ND_CASE(a_thread_using_a_few_small_classes_writes_a_few_pages_of_its_cache),
    ND_CASE(a_threads_first_classes_have_their_cold_parts_on_its_caches_first_page),
    ND_CASE(a_classes_cold_part_is_set_up_at_its_first_use_and_counts_exactly),
    ND_CASE(a_bins_rooms_keep_their_top_slots_on_one_page),
    ND_CASE(a_bin_stays_in_its_start_room_while_its_blocks_fit),
    ND_CASE(a_bin_that_moved_on_gives_back_the_pages_of_its_old_rooms),
    ND_CASE(a_bins_first_fill_takes_at_most_a_kib_of_blocks_past_256_bytes),
    ND_CASE(a_threads_first_fill_takes_one_block),
    ND_CASE(a_threads_first_requests_of_a_class_take_at_most_half_as_many_blocks_again),
    ND_CASE(a_threads_nursery_fills_take_whole_pairs_of_lines_and_no_more),
    ND_CASE(a_threads_record_holds_no_node_caches_until_it_makes_one),
    ND_CASE(a_producers_bin_grows_to_16_kib_at_most),
    ND_CASE(a_bin_whose_misses_are_rare_goes_back_to_its_start),
    ND_CASE(a_bin_that_wanders_holds_about_32_blocks),
    ND_CASE(a_medium_bin_starts_at_one_block),
    ND_CASE(a_medium_bin_holds_twice_tcache_bytes_worth),
    ND_CASE(busy_bins_of_a_few_hundred_blocks_share_pages_of_slots),
    ND_CASE(a_bin_in_a_run_of_requests_refills_whole_from_free_blocks_only),
    ND_CASE(a_bin_in_a_run_of_frees_sends_the_whole_bin_home),
    ND_CASE(batches_that_fit_the_bin_settle_after_a_flush),
    ND_CASE(gc_passes_amid_a_bins_loops_cost_fills_only),
    ND_CASE(a_two_block_bin_moves_both_blocks_in_runs),
    ND_CASE(a_new_page_reuses_resident_memory_first),
    ND_CASE(a_new_page_reuses_resident_memory_of_any_segment_first),
    ND_CASE(a_heap_cycling_whole_pages_of_a_class_sets_each_page_up_once),
    ND_CASE(a_flush_links_a_pages_blocks_only_when_the_page_keeps_them),
    ND_CASE(kept_pages_past_the_purge_delay_are_retired_and_purged_at_one_pass),
    ND_CASE(a_segment_whose_pages_keep_being_freed_purges_those_freed_a_delay_ago),
    ND_CASE(free_blocks_of_pages_in_use_give_their_memory_back_after_a_delay),
    ND_CASE(free_blocks_of_pages_in_use_give_their_memory_back_at_a_forced_collect),
    ND_CASE(a_record_pooled_with_much_free_memory_in_its_pages_gives_it_back),
    ND_CASE(a_pooled_records_freed_memory_goes_back_a_purge_delay_after_the_frees),
    ND_CASE(a_sleeping_threads_freed_memory_goes_back_while_it_sleeps),
    ND_CASE(threads_that_sleep_and_wake_while_idle_heaps_are_swept_stay_valid),
    ND_CASE(rounds_past_the_purge_bounds_keep_their_memory_after_the_first),
    ND_CASE(memory_freed_once_past_the_purge_bound_is_still_given_back_at_once),
    ND_CASE(a_big_large_pool_finds_the_holes_of_its_old_segments),
    ND_CASE(threads_cycling_batches_of_medium_blocks_take_their_own_route),
    ND_CASE(a_forced_collect_gives_back_the_pages_of_abandoned_segments_no_heap_adopts),
    ND_CASE(abandoned_segments_no_heap_adopts_give_back_their_pages_unasked),
    ND_CASE(segments_opt_out_of_huge_pages_the_kernel_gives_unasked),
    ND_CASE(threads_mapping_segments_at_once_take_one_mmap_each),
    ND_CASE(under_huge_pages_1_plain_segments_keep_the_kernels_huge_pages),
    ND_CASE(reports_count_the_page_gauges_a_heap_holds_back),
    ND_CASE(bytes_out_of_the_gauge_band_go_without_the_page_gauges),
    ND_CASE(peak_active_is_never_over_the_most_in_use),
    ND_CASE(a_new_page_of_another_class_takes_a_kept_pages_memory),
    ND_CASE(a_heap_that_leaves_its_node_gives_back_and_purges_its_kept_pages),
    ND_CASE(a_heaps_purge_of_several_segments_is_one_system_call),
    ND_CASE(a_batch_purges_every_range_past_a_full_batch_and_an_unmapped_one),
    ND_CASE(under_purge_batch_0_a_filter_that_kills_on_process_madvise_does_no_harm),
    ND_CASE(threads_beyond_the_cpus_share_the_cache_budget),
    ND_CASE(a_bin_in_runs_of_many_bins_grows_past_its_caches_share),
    ND_CASE(with_cpus_shared_a_small_bin_grows_to_16_kib_past_its_caches_share),
    ND_CASE(a_cache_whose_bins_cycle_through_the_store_grows_past_tcache_total),
    ND_CASE(a_thread_churning_its_own_blocks_grows_its_bins_from_the_pool),
    ND_CASE(with_cpus_shared_a_cache_whose_bins_cycle_draws_from_the_pool),
    ND_CASE(with_cpus_shared_threads_churning_their_own_blocks_draw_past_the_former_pool),
    ND_CASE(a_thread_on_a_pooled_record_grows_its_own_bin_past_the_inherited_ones),
    ND_CASE(an_own_batches_bin_grows_past_tcache_bytes_while_cpus_are_shared),
    ND_CASE(a_bin_past_tcache_bytes_grows_to_its_run_when_the_pool_part_has_not_the_doubling),
    ND_CASE(with_cpus_shared_a_bin_cycling_another_threads_blocks_grows_past_tcache_bytes),
    ND_CASE(with_cpus_shared_an_exiting_threads_cache_hands_its_blocks_to_the_store),
    ND_CASE(a_bin_whose_batches_cycle_through_the_store_grows_past_tcache_bytes),
    ND_CASE(a_bin_whose_batches_cycle_whole_grows_to_its_run_at_once),
    ND_CASE(remote_frees_return_to_the_owner),
    ND_CASE(remote_frees_in_chains_go_back_to_their_own_pages),
    ND_CASE(pages_waiting_for_an_idle_owner_are_counted_when_another_heap_takes_a_fresh_page),
    ND_CASE(blocks_freed_by_another_thread_come_back_in_address_order),
    ND_CASE(a_large_block_fills_an_older_segments_hole_first),
    ND_CASE(a_large_block_reuses_resident_chunks_before_purged_ones),
    ND_CASE(a_large_pool_keeps_its_most_resident_empty_segment),
    ND_CASE(a_cached_segments_unused_chunks_are_purged_at_the_caches_deadline),
    ND_CASE(a_heap_purges_the_unused_chunks_of_a_segment_it_took_dirty),
    ND_CASE(the_node_cache_counts_segments_cached_reused_dirty_or_clean_and_purged),
    ND_CASE(two_blocks_grown_in_turn_grow_in_place_to_twice_their_chunk),
    ND_CASE(a_block_grown_in_one_thread_grows_on_in_another),
    ND_CASE(a_block_grown_by_quarters_moves_once_past_10000_bytes),
    ND_CASE(a_block_grown_in_small_steps_is_copied_11_times_to_64_kib),
    ND_CASE(a_block_grown_into_a_fresh_huge_mapping_leaves_its_chunks_empty),
    ND_CASE(a_block_grown_alone_past_1_mib_stays_where_it_is),
    ND_CASE(a_segment_taken_back_from_the_huge_cache_has_only_its_written_chunks_committed),
    ND_CASE(a_block_made_huge_in_its_segment_shrinks_as_a_huge_block),
    ND_CASE(a_block_made_huge_in_its_segment_that_cannot_grow_stays_intact),
    ND_CASE(a_block_grown_alone_to_64_mib_again_grows_through_the_rest_in_place),
    ND_CASE(a_huge_block_moved_to_grow_lands_with_room_to_grow_on),
    ND_CASE(a_block_alone_grown_past_its_segment_at_once_leaves_it_in_the_pool),
    ND_CASE(a_node_bound_block_grown_by_realloc_stays_on_its_node),
    ND_CASE(under_secure_1_a_node_bound_caches_fills_count_on_the_requests_class),
};
ND_MAIN(cases)
