/*
 * xfer.c - unit tests of the transfer stores (src/heap/xfer.h): what goes
 * in comes out, within the bounds; kinds never mix; an idle store is
 * drained and a used one kept; blocks freed by a consumer thread come back
 * to the producer through the store (under secure=1 too), and
 * nodal_collect empties it. The
 * core is built with ND_DEBUG=2: every put and take checks the store's
 * invariants (nd_xfer_is_valid) and the thread cache's.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "alloc.h"
#include "check.h"
#include "class.h"
#include "page.h"
#include "segment.h"
#include "tcache.h"
#include "thread.h"
#include "xfer.h"

/* The class of a block of `size` bytes, and the plain kind of this thread. */
static unsigned class_of(size_t size) { return nd_class_of(size); }
static unsigned plain_kind(void)
{
    nodal_free(nodal_malloc(1));   /* the thread has its cache */
    return nd_tls_tc->kind;
}

/* Blocks of this thread's pages, marked free as a cache holds them. */
static void take_marked(void **out, size_t n, size_t size)
{
    for (size_t i = 0; i < n; i++) {
        out[i] = nodal_malloc(size);
        EXPECT(out[i] != NULL, "malloc(%zu) to succeed", size);
        nd_block_mark(out[i]);
    }
}
static void free_marked(void **blocks, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        nd_block_unmark(blocks[i]);
        nodal_free(blocks[i]);
    }
}

/* Put, then take: the same blocks come out, the newest first; a put past
   the cap takes only what fits; a take from an empty store gets none. */
static void a_store_gives_back_what_it_took_and_holds_at_most_its_cap(void)
{
    unsigned kind = plain_kind();
    size_t size = 1024;
    unsigned c = class_of(size);
    nd_xfer *x = nd_xfer_get(kind);
    EXPECT(x != NULL, "the store of kind %u to be made", kind);
    void *out[ND_XFER_SLOTS];
    free_marked(out, nd_xfer_drain(x, c, out, ND_XFER_SLOTS, false));   /* what earlier cases left */
    size_t cap = ND_XFER_BYTES / nd_class_size[c];
    if (cap > ND_XFER_SLOTS)
        cap = ND_XFER_SLOTS;
    EXPECT(x->cls[c].cap == cap && nd_xfer_room(x, c) == cap,
           "class %u's store to hold %zu blocks (min of %u and %zu bytes), it holds %u", c, cap, ND_XFER_SLOTS,
           (size_t)ND_XFER_BYTES, x->cls[c].cap);
    size_t n = cap + 10;
    void **blocks = calloc(n, sizeof(void *));
    take_marked(blocks, n, size);
    EXPECT(nd_xfer_put(x, c, blocks, 3) == 3, "a put of 3 blocks into an empty store to take all 3");
    EXPECT(nd_xfer_is_valid(x, c), "the store's invariants to hold after a put");
    size_t got = nd_xfer_take(x, c, out, 2);
    EXPECT(got == 2 && out[0] == blocks[1] && out[1] == blocks[2], "a take of 2 to give the 2 newest blocks");
    EXPECT(nd_xfer_take(x, c, out + 2, 8) == 1 && out[2] == blocks[0], "the next take to give the last one");
    EXPECT(nd_xfer_take(x, c, out, 8) == 0, "an empty store to give nothing");
    size_t put = nd_xfer_put(x, c, blocks, n);
    EXPECT(put == cap, "a put of %zu blocks to take %zu (the cap), it took %zu", n, cap, put);
    EXPECT(nd_xfer_room(x, c) == 0 && nd_xfer_put(x, c, blocks + cap, 1) == 0, "a full store to take nothing more");
    EXPECT(nd_xfer_is_valid(x, c), "the store's invariants to hold when full");
    got = nd_xfer_take(x, c, out, ND_XFER_SLOTS);
    EXPECT(got == cap, "a take to empty the store (%zu blocks), it gave %zu", cap, got);
    free_marked(blocks, n);
    free(blocks);
}

/* A store's slots are metadata that becomes resident as puts first write
   them: making a store writes only its header. A store made for a kind no
   thread used (the last node's bound memory) has none of its slots' OS
   pages resident, but for the one the header ends in; a put makes the
   class's first slots resident, and only them. (When the store was made
   zeroed, all of its ~270 KiB were: the small programs' peak RSS.) */
static size_t resident_pages(const void *from, const void *to)
{
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = ((uintptr_t)from + ps - 1) & ~(uintptr_t)(ps - 1), b = (uintptr_t)to & ~(uintptr_t)(ps - 1);
    if (b <= a)
        return 0;
    static unsigned char vec[1 << 12];
    size_t n = (b - a) / ps;
    EXPECT(n <= sizeof vec, "the slots to span at most %zu pages, they span %zu", sizeof vec, n);
    EXPECT(mincore((void *)a, b - a, vec) == 0, "mincore to work");
    size_t r = 0;
    for (size_t i = 0; i < n; i++)
        r += vec[i] & 1;
    return r;
}
static void a_new_store_writes_only_its_header(void)
{
    unsigned kind = nd_kind_of(true, ND_MAX_NODES - 1);
    EXPECT(nd_xfer_find(kind) == NULL, "no store of kind %u yet", kind);
    nd_xfer *x = nd_xfer_get(kind);
    EXPECT(x != NULL, "the store of kind %u to be made", kind);
    const void *end = &x->p[x->slots];
    size_t r = resident_pages(&x->p[0], end);
    EXPECT(r == 0, "none of the new store's slots' pages to be resident (%u slots), %zu are", x->slots, r);
    unsigned c = class_of(64);
    void *fake[512];
    for (size_t i = 0; i < 512; i++)
        fake[i] = (void *)(uintptr_t)(i + 1);   /* slots only written and read back: no block behind them */
    EXPECT(nd_xfer_put(x, c, fake, 512) > 0, "a put to take blocks");
    void *out[512];
    size_t got = nd_xfer_take(x, c, out, 512);
    r = resident_pages(&x->p[0], end);
    EXPECT(got > 0 && r >= 1 && r <= 2, "a put of %zu slots to make 1-2 pages resident, %zu are", got, r);
}

/* The store of one kind never gives blocks of another: blocks put in the
   plain store are not found in the node-bound store of the same node, and
   the stores' invariants (each block of a segment of the store's kind)
   hold. */
static void stores_of_two_kinds_keep_their_blocks_apart(void)
{
    unsigned plain = plain_kind();
    int node = nd_tls_tc->heap.node;
    unsigned bound = nd_kind_of(true, node);
    EXPECT(bound != plain, "bound and plain memory of node %d to be two kinds", node);
    size_t size = 256;
    unsigned c = class_of(size);
    nd_xfer *xp = nd_xfer_get(plain), *xb = nd_xfer_get(bound);
    EXPECT(xp != NULL && xb != NULL && xp != xb, "two stores");
    void *out[ND_XFER_SLOTS];
    free_marked(out, nd_xfer_drain(xp, c, out, ND_XFER_SLOTS, false));
    free_marked(out, nd_xfer_drain(xb, c, out, ND_XFER_SLOTS, false));
    void *pb[8], *bb[8];
    take_marked(pb, 8, size);
    for (int i = 0; i < 8; i++) {
        bb[i] = nodal_malloc_node(size, node);
        EXPECT(bb[i] != NULL && nd_seg_base(bb[i])->bound, "nodal_malloc_node(%zu, %d) to give bound memory", size, node);
        nd_block_mark(bb[i]);
    }
    EXPECT(nd_xfer_put(xp, c, pb, 8) == 8 && nd_xfer_put(xb, c, bb, 8) == 8, "both puts to take their 8 blocks");
    EXPECT(nd_xfer_is_valid(xp, c) && nd_xfer_is_valid(xb, c), "each store to hold only blocks of its kind");
    size_t got = nd_xfer_take(xb, c, out, ND_XFER_SLOTS);
    EXPECT(got == 8, "the bound store to give its 8 blocks, it gave %zu", got);
    for (size_t i = 0; i < got; i++)
        EXPECT(nd_seg_base(out[i])->bound, "block %p from the bound store to be bound memory", out[i]);
    got = nd_xfer_take(xp, c, out, ND_XFER_SLOTS);
    EXPECT(got == 8, "the plain store to give its 8 blocks, it gave %zu", got);
    for (size_t i = 0; i < got; i++)
        EXPECT(!nd_seg_base(out[i])->bound, "block %p from the plain store to be plain memory", out[i]);
    free_marked(pb, 8);
    free_marked(bb, 8);
}

/* A drain of idle classes only empties a class no take touched since the
   last drain; a full drain empties it regardless. */
static void a_sweep_drains_an_idle_store_and_keeps_a_used_one(void)
{
    unsigned kind = plain_kind();
    size_t size = 512;
    unsigned c = class_of(size);
    nd_xfer *x = nd_xfer_get(kind);
    void *out[ND_XFER_SLOTS], *blocks[16];
    free_marked(out, nd_xfer_drain(x, c, out, ND_XFER_SLOTS, false));   /* empty, and `taken` cleared */
    take_marked(blocks, 16, size);
    EXPECT(nd_xfer_put(x, c, blocks, 16) == 16, "the put to take 16 blocks");
    EXPECT(nd_xfer_take(x, c, out, 4) == 4, "a take of 4");
    EXPECT(nd_xfer_drain(x, c, out, ND_XFER_SLOTS, true) == 0, "an idle-only drain to keep a class taken from since the last one");
    size_t n = nd_xfer_drain(x, c, out, ND_XFER_SLOTS, true);
    EXPECT(n == 12, "the next idle-only drain (no take in between) to empty it: 12 blocks, it gave %zu", n);
    EXPECT(nd_xfer_room(x, c) == x->cls[c].cap, "the drained class to be empty");
    EXPECT(nd_xfer_put(x, c, blocks, 16) == 16 && nd_xfer_drain(x, c, out, ND_XFER_SLOTS, false) == 16,
           "a full drain to empty a class whatever its takes");
    /* A bounded drain (maintenance's, ND_XFER_SWEEP_BATCH at a time) takes
       the newest and leaves the rest for the next call. */
    EXPECT(nd_xfer_put(x, c, blocks, 16) == 16, "the put to take 16 blocks again");
    n = nd_xfer_drain(x, c, out, 5, true);
    EXPECT(n == 5 && out[0] == blocks[11] && out[4] == blocks[15], "a drain of at most 5 to give the 5 newest, it gave %zu", n);
    n = nd_xfer_drain(x, c, out, ND_XFER_SLOTS, true);
    EXPECT(n == 11 && out[0] == blocks[0], "the next drain to give the 11 left, it gave %zu", n);
    free_marked(blocks, 16);
}

/* A sweep (an idle-only drain) of a class taken from since the last one
   gives back what sat untaken all along: as many blocks as the class
   never went below (its low-water mark), the oldest, in bounded batches;
   the blocks put after the period began stay. The next period then
   starts, and with no take in it the class goes back whole. */
static void a_sweep_gives_back_what_sat_untaken_through_a_period(void)
{
    void *out[ND_XFER_SLOTS], *blocks[16];
    unsigned c = class_of(512);
    nd_xfer *x = nd_xfer_get(plain_kind());
    size_t was = nd_xfer_drain(x, c, out, ND_XFER_SLOTS, false);   /* what earlier cases left */
    free_marked(out, was);
    take_marked(blocks, 16, 512);
    EXPECT(nd_xfer_put(x, c, blocks, 16) == 16 && nd_xfer_take(x, c, out, 2) == 2, "a put of 16 and a take of 2");
    EXPECT(nd_xfer_drain(x, c, out, ND_XFER_SLOTS, true) == 0, "the first sweep (the period began empty) to keep all");
    void *taken[8];
    EXPECT(nd_xfer_take(x, c, taken, 4) == 4, "a take of 4: the class holds 10, never fewer this period");
    taken[4] = out[0];
    taken[5] = out[1];
    EXPECT(nd_xfer_put(x, c, taken, 6) == 6, "the 6 taken put back: 16 in the class");
    size_t n, total = 0, calls = 0;
    do {
        n = nd_xfer_drain(x, c, out + total, 4, true);
        total += n;
        calls++;
    } while (n == 4);
    EXPECT(total == 10 && calls == 3, "the sweep to give back the 10 that sat untaken, 4 at a time: %zu in %zu calls",
           total, calls);
    for (size_t i = 0; i < total; i++)
        EXPECT(out[i] == blocks[i], "the untaken ones to go, the oldest first: block %zu is %p, not %p", i, out[i],
               blocks[i]);
    EXPECT(nd_xfer_room(x, c) == x->cls[c].cap - 6, "the 6 put back this period to stay");
    EXPECT(nd_xfer_is_valid(x, c), "the store's invariants to hold after a sweep");
    n = nd_xfer_drain(x, c, out + total, ND_XFER_SLOTS, true);
    EXPECT(n == 6, "the next sweep, no take in between, to give back the 6 left, it gave %zu", n);
    free_marked(blocks, 16);
}

/* A producer allocates, a consumer frees: the consumer's overflows put the
   blocks in the store and the producer's fills take them, so the blocks
   the producer gets back are the very ones it handed over. */
enum { HANDOFF_N = 20000, HANDOFF_SIZE = 64 };
static void *handoff_blocks[HANDOFF_N];
static void *consume(void *arg)
{
    (void)arg;
    for (int i = 0; i < HANDOFF_N; i++)
        nodal_free(handoff_blocks[i]);
    return NULL;
}
/* `rounds` times: this thread allocates HANDOFF_N blocks, a new thread
   frees them all and exits. */
static void hand_over(int rounds)
{
    for (int round = 0; round < rounds; round++) {
        for (int i = 0; i < HANDOFF_N; i++)
            handoff_blocks[i] = nodal_malloc(HANDOFF_SIZE);
        pthread_t t;
        EXPECT(pthread_create(&t, NULL, consume, NULL) == 0, "pthread_create to work");
        pthread_join(t, NULL);
    }
}
static unsigned long json_class_field(const char *json, size_t size, const char *field)
{
    char key[64];
    snprintf(key, sizeof key, "{\"size\":%zu,", size);   /* stats.c: {"size":N,... per class */
    const char *p = strstr(json, key);
    if (p == NULL)
        return 0;
    const char *end = strchr(p, '}');
    snprintf(key, sizeof key, "\"%s\":", field);
    const char *f = strstr(p, key);
    return f != NULL && f < end ? strtoul(f + strlen(key), NULL, 10) : 0;
}
static void blocks_a_consumer_frees_come_back_to_the_producer_through_the_store(void)
{
    static char json[1 << 17];
    nodal_collect(1);
    nodal_stats_reset();
    hand_over(3);
    /* The consumer exited: what its cache held went home, what it put in
       the store waits there for this thread's fills. */
    EXPECT(nd_thread_is_valid(), "the heap to be valid");
    size_t len = nodal_stats_json(json, sizeof json);
    EXPECT(len > 0 && len < sizeof json, "the JSON report to fit");
    unsigned long puts = json_class_field(json, HANDOFF_SIZE, "xfer_put_blocks");
    unsigned long takes = json_class_field(json, HANDOFF_SIZE, "xfer_take_blocks");
    unsigned long fill_blocks = json_class_field(json, HANDOFF_SIZE, "fill_blocks");
    unsigned cap = nd_xfer_find(nd_tls_tc->kind)->cls[class_of(HANDOFF_SIZE)].cap;
    /* Each round the consumer fills the store (cap blocks), the rest going
       home; the producer's next round takes them first. */
    EXPECT(puts >= 3ul * cap && takes >= 2ul * cap && takes <= puts && takes <= fill_blocks,
           "a store's worth of blocks (%u) to go through the store each round: %lu put, %lu taken", cap, puts, takes);
}

/* nodal_collect sends every store's blocks back to their pages: nothing of
   the class is left in the store afterwards, and every page of blocks a
   consumer freed is empty again. */
static void nodal_collect_empties_every_store(void)
{
    unsigned kind = plain_kind();
    unsigned c = class_of(HANDOFF_SIZE);
    for (int i = 0; i < HANDOFF_N; i++)
        handoff_blocks[i] = nodal_malloc(HANDOFF_SIZE);
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, consume, NULL) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    nd_xfer *x = nd_xfer_find(kind);
    EXPECT(x != NULL && nd_xfer_room(x, c) < x->cls[c].cap, "the consumer to have left blocks in the store");
    nodal_collect(1);
    EXPECT(nd_xfer_room(x, c) == x->cls[c].cap, "nodal_collect to empty the store, %zu of %u slots are free",
           nd_xfer_room(x, c), x->cls[c].cap);
    EXPECT(nd_thread_is_valid(), "the heap to be valid");
    static char json[1 << 17];
    nodal_stats_json(json, sizeof json);
    const char *a = strstr(json, "\"allocated\":");
    EXPECT(a != NULL && atol(a + 12) == 0, "no byte to be allocated, stats say %.24s", a ? a : "nothing");
}

/* transfer=2: a thread's overflow of its own heap's blocks goes to the
   store too, and another thread's fill takes them before its heap carves:
   the second thread's first blocks of the class are blocks of the first
   thread's pages, none of them its own. (With transfer=1 only blocks of
   other heaps' pages go there: the second thread carves its own.) */
enum { OWN_N = 4096, OWN_SIZE = 96 };
static void *own_blocks[OWN_N];
static void *own_overflow(void *arg)
{
    (void)arg;
    for (int i = 0; i < OWN_N; i++)
        own_blocks[i] = nodal_malloc(OWN_SIZE);
    for (int i = 0; i < OWN_N; i++)
        nodal_free(own_blocks[i]);
    return NULL;
}
static void a_heaps_own_overflow_is_reused_by_another_heap_before_it_carves(void)
{
    unsigned kind = plain_kind();
    unsigned c = class_of(OWN_SIZE);
    nodal_collect(1);   /* no store holds blocks of the class */
    EXPECT(nd_xfer_find(kind) == NULL || nd_xfer_room(nd_xfer_find(kind), c) == nd_xfer_find(kind)->cls[c].cap,
           "the store of class %u to start empty", c);
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, own_overflow, NULL) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    nd_xfer *x = nd_xfer_find(kind);
    EXPECT(x != NULL && nd_xfer_room(x, c) == 0,
           "the other thread's overflows of its own blocks to fill the store (%u blocks), %zu slots are free",
           x != NULL ? x->cls[c].cap : 0, x != NULL ? nd_xfer_room(x, c) : 0);
    const nd_heap *mine = &nd_tls_tc->heap;
    size_t n = 64, foreign = 0;
    void *got[64];
    for (size_t i = 0; i < n; i++) {
        got[i] = nodal_malloc(OWN_SIZE);
        EXPECT(got[i] != NULL, "malloc(%d) to succeed", OWN_SIZE);
        const nd_page *pg = nd_page_of(nd_seg_base(got[i]), got[i]);
        foreign += nd_load_relaxed(&pg->heap) != mine;
    }
    EXPECT(foreign == n, "this thread's first %zu blocks to come from the store (the other heap's pages), %zu did", n,
           foreign);
    EXPECT(nd_thread_is_valid(), "the heap to be valid");
    for (size_t i = 0; i < n; i++)
        nodal_free(got[i]);
    nodal_collect(1);
    EXPECT(nd_xfer_room(x, c) == x->cls[c].cap, "nodal_collect to empty the store");
}

/* secure=1: a consumer's overflows go through the store too (its plain
   cache's kind matches no page, so that every free is checked, but its
   bins hold plain memory of its node: the store of that kind), and the
   producer's fills take them, checked (ND_DEBUG=2: the invariants at every
   put and take). The blocks come back with their canaries: each is
   written to its last usable byte and freed again, which checks the
   canary. Without a store for secure=1's caches every block went home to
   its page (no put, no take). */
static void under_secure_1_blocks_a_consumer_frees_come_back_through_the_store(void)
{
    static char json[1 << 17];
    EXPECT(nodal_option_get("secure") == 1, "this case to run with NODAL_OPTIONS=secure=1");
    nodal_collect(1);
    nodal_stats_reset();
    void *probe = nodal_malloc(HANDOFF_SIZE);
    EXPECT(probe != NULL, "malloc(%d) to succeed", HANDOFF_SIZE);
    const nd_page *pg = nd_page_of(nd_seg_base(probe), probe);
    unsigned c = pg->cls;   /* secure=1: the class of the request and its canary word */
    size_t bsize = pg->block_size;
    nodal_free(probe);
    hand_over(3);
    EXPECT(nd_thread_is_valid(), "the heap to be valid");
    nd_xfer *x = nd_xfer_find(nd_kind_of(false, nd_tls_tc->heap.node));
    EXPECT(x != NULL, "secure=1's caches to have made the store of their node's plain memory");
    size_t len = nodal_stats_json(json, sizeof json);
    EXPECT(len > 0 && len < sizeof json, "the JSON report to fit");
    unsigned long puts = json_class_field(json, bsize, "xfer_put_blocks");
    unsigned long takes = json_class_field(json, bsize, "xfer_take_blocks");
    unsigned cap = x->cls[c].cap;
    EXPECT(puts >= 3ul * cap && takes >= 2ul * cap && takes <= puts,
           "a store's worth of %zu-byte blocks (%u) to go through the store each round under secure=1: %lu put, "
           "%lu taken", bsize, cap, puts, takes);
    /* What is left in the store comes out sealed, whoever takes it. */
    size_t n = x->cls[c].cap - nd_xfer_room(x, c);
    for (size_t i = 0; i < n + 64; i++) {
        handoff_blocks[i] = nodal_malloc(HANDOFF_SIZE);
        size_t u = nodal_malloc_usable_size(handoff_blocks[i]);
        EXPECT(u >= HANDOFF_SIZE && u == bsize - 8, "a block of %zu bytes to offer %zu, it offers %zu", bsize,
               bsize - 8, u);
        memset(handoff_blocks[i], 0x5a, u);
    }
    for (size_t i = 0; i < n + 64; i++)
        nodal_free(handoff_blocks[i]);   /* each canary checked */
    nodal_collect(1);
    EXPECT(nd_xfer_room(x, c) == x->cls[c].cap, "nodal_collect to empty the store");
    EXPECT(nd_thread_is_valid(), "the heap to be valid");
}

static const struct nd_case cases[] = {
    ND_CASE(a_new_store_writes_only_its_header),
    ND_CASE(a_store_gives_back_what_it_took_and_holds_at_most_its_cap),
    ND_CASE(stores_of_two_kinds_keep_their_blocks_apart),
    ND_CASE(a_sweep_drains_an_idle_store_and_keeps_a_used_one),
    ND_CASE(a_sweep_gives_back_what_sat_untaken_through_a_period),
    ND_CASE(blocks_a_consumer_frees_come_back_to_the_producer_through_the_store),
    ND_CASE(nodal_collect_empties_every_store),
    ND_CASE(a_heaps_own_overflow_is_reused_by_another_heap_before_it_carves),
    ND_CASE(under_secure_1_blocks_a_consumer_frees_come_back_through_the_store),
};
ND_MAIN(cases)
