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

/* A take from shard 0 on into out[0 .. max) (nd_xfer_take fills the slots
   that end at its `end`); returns how many, at out[0 ..). */
static size_t take_from(nd_xfer *x, unsigned c, void **out, size_t max)
{
    size_t n = nd_xfer_take(x, c, 0, out + max, max);
    memmove(out, out + max - n, n * sizeof(void *));
    return n;
}
/* Everything class c's shards hold, into out (at most max). */
static size_t drain_all(nd_xfer *x, unsigned c, void **out, size_t max)
{
    size_t n = 0;
    for (unsigned s = 0; s < ND_XFER_SHARDS; s++)
        for (size_t k = 1; k != 0 && n < max; n += k)
            k = nd_xfer_drain(x, c, s, out + n, max - n, false);
    return n;
}

/* The plain store of this thread's kind, class c emptied of what earlier
   cases left (out: room for ND_XFER_SLOTS blocks). */
static nd_xfer *plain_store_emptied(unsigned c, void **out)
{
    unsigned kind = plain_kind();
    nd_xfer *x = nd_xfer_get(kind);
    EXPECT(x != NULL, "the store of kind %u to be made", kind);
    free_marked(out, drain_all(x, c, out, ND_XFER_SLOTS));
    return x;
}

/* The store's bound for the small classes past 1 KiB is 2 MiB of blocks
   (xfer.h): 128 blocks of 16 KiB and 256 of 8 KiB, where 512 KiB held 32
   and 64. Heaps that trade blocks of these sizes (bench/rptest: 8 B-16 KiB,
   a fifth of each loop's blocks freed by another thread) find more of each
   other's overflows there before they carve: rptest -t 8's peak RSS 55 ->
   37 MiB (docs/results.md, h50q). Real blocks go in, the store takes them
   all, and gives them all back. */
static void a_class_up_to_16_kib_holds_2_mib_of_blocks(void)
{
    static const size_t sizes[] = { 8192, 16384 };
    for (size_t k = 0; k < 2; k++) {
        size_t size = sizes[k], n = ((size_t)2 << 20) / size;
        unsigned c = class_of(size);
        void *out[ND_XFER_SLOTS];
        nd_xfer *x = plain_store_emptied(c, out);
        EXPECT(nd_xfer_cap(x, c) == n, "class %u (%zu B) to hold %zu blocks, it holds %zu", c, size, n,
               nd_xfer_cap(x, c));
        void **blocks = calloc(n + 1, sizeof(void *));
        take_marked(blocks, n + 1, size);
        size_t put = nd_xfer_put(x, c, 0, blocks, n + 1, NULL, NULL);
        EXPECT(put == n, "a put of %zu blocks of %zu B to take %zu, it took %zu", n + 1, size, n, put);
        EXPECT(nd_xfer_is_valid(x, c), "the store's invariants to hold when full");
        size_t got = drain_all(x, c, out, ND_XFER_SLOTS);
        EXPECT(got == n, "the %zu blocks back, %zu came", n, got);
        free_marked(out, got);
        free_marked(blocks + n, 1);
        free(blocks);
    }
}

/* Put, then take: the same blocks come out, the newest first; a put past
   the cap takes only what fits; a take from an empty store gets none. */
static void a_store_gives_back_what_it_took_and_holds_at_most_its_cap(void)
{
    size_t size = 1024;
    unsigned c = class_of(size);
    void *out[ND_XFER_SLOTS];
    nd_xfer *x = plain_store_emptied(c, out);
    size_t cap = ND_XFER_BYTES / nd_class_size[c];
    if (cap > ND_XFER_SLOTS)
        cap = ND_XFER_SLOTS;
    EXPECT(nd_xfer_cap(x, c) == cap && nd_xfer_room(x, c) == cap,
           "class %u's store to hold %zu blocks (min of %u and %zu bytes), it holds %zu", c, cap, ND_XFER_SLOTS,
           (size_t)ND_XFER_BYTES, nd_xfer_cap(x, c));
    size_t n = cap + 10;
    void **blocks = calloc(n, sizeof(void *));
    take_marked(blocks, n, size);
    EXPECT(nd_xfer_put(x, c, 0, blocks, 3, NULL, NULL) == 3, "a put of 3 blocks into an empty store to take all 3");
    EXPECT(nd_xfer_is_valid(x, c), "the store's invariants to hold after a put");
    size_t got = take_from(x, c, out, 2);
    EXPECT(got == 2 && out[0] == blocks[1] && out[1] == blocks[2], "a take of 2 to give the 2 newest blocks");
    EXPECT(take_from(x, c, out + 2, 8) == 1 && out[2] == blocks[0], "the next take to give the last one");
    EXPECT(take_from(x, c, out, 8) == 0, "an empty store to give nothing");
    size_t put = nd_xfer_put(x, c, 0, blocks, n, NULL, NULL);
    EXPECT(put == cap, "a put of %zu blocks to take %zu (the cap), it took %zu", n, cap, put);
    EXPECT(nd_xfer_room(x, c) == 0 && nd_xfer_put(x, c, 0, blocks + cap, 1, NULL, NULL) == 0, "a full store to take nothing more");
    EXPECT(nd_xfer_is_valid(x, c), "the store's invariants to hold when full");
    got = take_from(x, c, out, ND_XFER_SLOTS);
    EXPECT(got == cap, "a take to empty the store (%zu blocks), it gave %zu", cap, got);
    free_marked(blocks, n);
    free(blocks);
}

/* The shards of a class: a put that finds its shard claimed by another
   thread, or full, goes on to the next shards, and so does a take that
   finds its shard claimed or empty; the class holds its cap over all of
   them (each a share). */
static void a_put_or_take_goes_on_to_the_next_shard_when_its_own_is_claimed_or_full(void)
{
    size_t size = 2048;
    unsigned c = class_of(size);
    void *out[ND_XFER_SLOTS];
    nd_xfer *x = plain_store_emptied(c, out);
    size_t cap = nd_xfer_cap(x, c), share = nd_xfer_shard_cap(c, 2);
    EXPECT(share * ND_XFER_SHARDS <= cap && cap < (share + 1) * ND_XFER_SHARDS,
           "each of the %u shards to hold a share of the class's %zu blocks, shard 2 holds %zu", ND_XFER_SHARDS, cap,
           share);
    void *blocks[16];
    take_marked(blocks, 16, size);
    /* Shard 1 held by another thread (its claim word set, as a put's is
       during its copy): a put starting there goes to shard 2. */
    x->cls[c][1].claim = 1;
    EXPECT(nd_xfer_put(x, c, 1, blocks, 3, NULL, NULL) == 3, "a put at a claimed shard to go on to the next one");
    EXPECT(x->cls[c][1].count == 0 && x->cls[c][2].count == 3, "the 3 blocks in shard 2 (%u), none in shard 1 (%u)",
           x->cls[c][2].count, x->cls[c][1].count);
    EXPECT(nd_xfer_is_valid(x, c), "the store's invariants to hold (the claimed shard unchecked)");
    /* A take starting at the claimed shard finds them in the next one. */
    void *got[8];
    EXPECT(nd_xfer_take(x, c, 1, got + 8, 8) == 3 && got[5] == blocks[0] && got[7] == blocks[2],
           "a take at a claimed shard to take the next shard's 3 blocks, into the slots that end at its end");
    x->cls[c][1].claim = 0;
    /* A put of more than its shard holds: the rest goes to the next
       shards, the last one wrapping around to shard 0. */
    void **many = calloc(cap, sizeof(void *));
    EXPECT(many != NULL, "calloc to succeed");
    for (size_t i = 0; i < cap; i++)
        many[i] = blocks[i % 16];   /* only counted here: taken out again before any check */
    size_t k = nd_xfer_shard_cap(c, 3) + 2;
    EXPECT(nd_xfer_put(x, c, 3, many, k, NULL, NULL) == k, "a put of %zu blocks at shard 3 to take all of them", k);
    EXPECT(x->cls[c][3].count == nd_xfer_shard_cap(c, 3) && x->cls[c][0].count == 2,
           "shard 3 to be full (%u of %u) and the 2 left over in shard 0 (%u)", x->cls[c][3].count, nd_xfer_shard_cap(c, 3),
           x->cls[c][0].count);
    EXPECT(nd_xfer_put(x, c, 1, many, cap, NULL, NULL) == cap - k && nd_xfer_room(x, c) == 0,
           "the shards together to take the class's cap, %zu, no more", cap);
    EXPECT(take_from(x, c, out, ND_XFER_SLOTS) == cap && nd_xfer_room(x, c) == cap,
           "a take to go through every shard and empty the class");
    free(many);
    free_marked(blocks, 16);
}

/* A put checks only the blocks that go in (the rest go to their pages,
   checked there): its check sees each shard's share before the copy, and
   none of the blocks a full store leaves out. */
static size_t checked_blocks;
static void count_checked(void *const *blocks, size_t k, const void *arg)
{
    (void)blocks;
    EXPECT(arg == &checked_blocks, "the put's argument to reach its check");
    checked_blocks += k;
}
static void a_put_checks_only_the_blocks_that_go_in(void)
{
    unsigned c = class_of(4096);
    void *out[ND_XFER_SLOTS];
    nd_xfer *x = plain_store_emptied(c, out);
    size_t cap = nd_xfer_cap(x, c);
    void **many = calloc(cap + 5, sizeof(void *));
    EXPECT(many != NULL, "calloc to succeed");
    for (size_t i = 0; i < cap + 5; i++)
        many[i] = (void *)(uintptr_t)(i + 1);   /* only counted: drained again before any check */
    checked_blocks = 0;
    EXPECT(nd_xfer_put(x, c, 2, many, cap - 3, count_checked, &checked_blocks) == cap - 3 &&
               checked_blocks == cap - 3,
           "a put of %zu blocks into an empty class to check them all, it checked %zu", cap - 3, checked_blocks);
    checked_blocks = 0;
    EXPECT(nd_xfer_put(x, c, 0, many, 8, count_checked, &checked_blocks) == 3 && checked_blocks == 3,
           "a put of 8 where 3 fit to check only those 3, it checked %zu", checked_blocks);
    EXPECT(nd_xfer_put(x, c, 1, many, 8, count_checked, &checked_blocks) == 0 && checked_blocks == 3,
           "a put into a full class to check none");
    EXPECT(take_from(x, c, out, ND_XFER_SLOTS) == cap, "the class emptied");
    free(many);
}

/* A drain empties one shard; maintenance's give-back (nodal_collect's, a
   sweep's) walks every shard of every class: blocks put in each shard all
   go back to their pages, and the pages' blocks are free again. */
static void a_give_back_empties_every_shard(void)
{
    size_t size = 768;
    unsigned c = class_of(size);
    void *out[ND_XFER_SLOTS];
    nd_xfer *x = plain_store_emptied(c, out);
    void *blocks[4 * ND_XFER_SHARDS];
    take_marked(blocks, 4 * ND_XFER_SHARDS, size);
    for (unsigned s = 0; s < ND_XFER_SHARDS; s++)
        EXPECT(nd_xfer_put(x, c, s, blocks + 4 * s, 4, NULL, NULL) == 4 && x->cls[c][s].count == 4, "4 blocks into shard %u", s);
    EXPECT(nd_xfer_drain(x, c, 2, out, ND_XFER_SLOTS, false) == 4 && x->cls[c][2].count == 0 &&
               nd_xfer_room(x, c) == nd_xfer_cap(x, c) - 4 * (ND_XFER_SHARDS - 1),
           "a drain of shard 2 to empty it and only it");
    EXPECT(nd_xfer_put(x, c, 2, out, 4, NULL, NULL) == 4, "its blocks back in");
    nd_tcache_xfer_give_back(nd_tls_tc);
    for (unsigned s = 0; s < ND_XFER_SHARDS; s++)
        EXPECT(x->cls[c][s].count == 0, "the give-back to empty shard %u, it holds %u", s, x->cls[c][s].count);
    EXPECT(nd_thread_is_valid(), "the heap to be valid (the blocks back on their pages)");
}

/* nd_xfer_is_valid checks every shard: a block of another class in the
   last shard, or a shard's count past its cap, breaks the class's
   invariants. */
static void the_invariant_check_looks_at_every_shard(void)
{
    unsigned c = class_of(320), other = class_of(4096);
    EXPECT(c != other, "two classes");
    void *out[ND_XFER_SLOTS];
    nd_xfer *x = plain_store_emptied(c, out);
    void *right[2], *wrong[1];
    take_marked(right, 2, 320);
    take_marked(wrong, 1, 4096);
    EXPECT(nd_xfer_put(x, c, 0, right, 2, NULL, NULL) == 2 && nd_xfer_is_valid(x, c), "a class of right blocks to be valid");
    unsigned last = ND_XFER_SHARDS - 1;
    EXPECT(nd_xfer_put(x, c, last, wrong, 1, NULL, NULL) == 1 && !nd_xfer_is_valid(x, c),
           "a block of class %u in shard %u of class %u to break its invariants", other, last, c);
    EXPECT(nd_xfer_drain(x, c, last, out, 8, false) == 1 && out[0] == wrong[0] && nd_xfer_is_valid(x, c),
           "the wrong block drained, the class to be valid again");
    uint32_t cap = nd_xfer_shard_cap(c, last);
    x->cls[c][last].count = cap + 1;
    EXPECT(!nd_xfer_is_valid(x, c), "a shard holding more than its cap to break the invariants");
    x->cls[c][last].count = 0;
    EXPECT(drain_all(x, c, out, ND_XFER_SLOTS) == 2, "the right blocks drained");
    free_marked(right, 2);
    free_marked(wrong, 1);
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
    const void *end = &x->p[x->first + x->slots];
    size_t r = resident_pages(&x->p[0], end);
    EXPECT(r == 0, "none of the new store's slots' pages to be resident (%u slots), %zu are", x->slots, r);
    unsigned c = class_of(64);
    void *fake[512];
    for (size_t i = 0; i < 512; i++)
        fake[i] = (void *)(uintptr_t)(i + 1);   /* slots only written and read back: no block behind them */
    EXPECT(nd_xfer_put(x, c, 0, fake, 512, NULL, NULL) > 0, "a put to take blocks");
    void *out[512];
    size_t got = take_from(x, c, out, 512);
    r = resident_pages(&x->p[0], end);
    EXPECT(got > 0 && r >= 1 && r <= 2, "a put of %zu slots to make 1-2 pages resident, %zu are", got, r);
}

/* A class whose shards hold a few blocks keeps them in the shards' own
   headers (their start rooms, four classes to an OS page), not in a page
   of slots per shard: eight classes holding 8 blocks in each of two shards
   make at most 3 of the store's OS pages resident (two of headers and the
   one written when it is made). On main each shard's blocks took a page
   of its own slots after a 12 KiB header written whole: 19 pages (the
   small hand-off programs' peak RSS, issue 18). */
static void classes_holding_a_few_blocks_keep_them_in_their_shards_headers(void)
{
    unsigned kind = nd_kind_of(false, ND_MAX_NODES - 1);
    EXPECT(nd_xfer_find(kind) == NULL, "no store of kind %u yet", kind);
    nd_xfer *x = nd_xfer_get(kind);
    EXPECT(x != NULL, "the store of kind %u to be made", kind);
    void *fake[8], *out[8];
    for (size_t i = 0; i < 8; i++)
        fake[i] = (void *)(uintptr_t)(i + 1);   /* slots only written and read back: no block behind them */
    unsigned first = (class_of(64) + 3) & ~3u;   /* the first of four classes that share an OS page */
    EXPECT((uintptr_t)x % 4096 == 0, "the store to start on an OS page (a mapping of its own)");
    for (unsigned c = first; c < first + 8; c++)
        for (unsigned s = 0; s < 2; s++) {
            EXPECT(nd_xfer_put(x, c, s, fake, 8, NULL, NULL) == 8, "a put of 8 blocks into class %u, shard %u", c, s);
            EXPECT(nd_xfer_take(x, c, s, out + 8, 8) == 8 && memcmp(out, fake, sizeof fake) == 0,
                   "the 8 blocks back from class %u, shard %u", c, s);
        }
    size_t r = resident_pages(x, &x->p[x->first + x->slots]);
    EXPECT(r <= 3, "8 classes of a few blocks in 2 shards to make at most 3 pages of the store resident, %zu are", r);
}

/* The big slots are laid out shard by shard, each shard's part whole OS
   pages from a page on (xfer.h): neighbouring classes that hold a few
   dozen blocks in one shard share pages of slots, and a class whose
   shards' slots are a page each touches one page per shard. Four classes
   of 5-8 KiB holding 40 blocks in shard 0 make at most 2 pages of
   big slots resident (4 when each class's shards were together, main and
   the start rooms' first step; 640 B-1 KiB until their bound rose from
   512 to 2,048 blocks, when the store's bytes went from 512 KiB to
   2 MiB, and a shard of each became a page); a class of 64 B with all four shards full
   (2,048 blocks) makes 4 (5 when its slots did not start on a page). */
static void big_slots_of_one_shard_of_neighbouring_classes_share_pages(void)
{
    void *fake[ND_XFER_SLOTS], *out[ND_XFER_SLOTS];
    for (size_t i = 0; i < ND_XFER_SLOTS; i++)
        fake[i] = (void *)(uintptr_t)(i + 1);   /* slots only written and read back: no block behind them */
    nd_xfer *x = nd_xfer_get(nd_kind_of(false, ND_MAX_NODES - 2));
    EXPECT(x != NULL && x->slots != 0, "a fresh store of kind %u", nd_kind_of(false, ND_MAX_NODES - 2));
    for (unsigned c = class_of(5120); c <= class_of(8192); c++) {
        EXPECT(nd_xfer_put(x, c, 0, fake, 40, NULL, NULL) == 40 && x->cls[c][0].big,
               "40 blocks in class %u's shard 0, past its start room", c);
        EXPECT(take_from(x, c, out, 40) == 40, "the 40 blocks back");
    }
    size_t r = resident_pages(&x->p[x->first], &x->p[x->first + x->slots]);
    EXPECT(r <= 2, "4 classes' 40 blocks in shard 0 to make at most 2 pages of big slots resident, %zu are", r);

    x = nd_xfer_get(nd_kind_of(true, ND_MAX_NODES - 2));
    EXPECT(x != NULL, "a fresh store of kind %u", nd_kind_of(true, ND_MAX_NODES - 2));
    unsigned c = class_of(64);
    EXPECT(nd_xfer_cap(x, c) == ND_XFER_SLOTS && nd_xfer_put(x, c, 0, fake, ND_XFER_SLOTS, NULL, NULL) == ND_XFER_SLOTS,
           "class %u full with %u blocks", c, ND_XFER_SLOTS);
    r = resident_pages(&x->p[x->first], &x->p[x->first + x->slots]);
    EXPECT(r == 4, "a full class of 64 B to make 4 pages of big slots resident, %zu are", r);
    EXPECT(drain_all(x, c, out, ND_XFER_SLOTS) == ND_XFER_SLOTS, "the class drained");
}

/* A shard whose blocks outgrow its start room moves them to its big slots:
   every block put comes back, the newest first, and the class is valid. */
static void a_shard_past_its_start_room_keeps_its_blocks(void)
{
    unsigned c = class_of(48);
    void *out[ND_XFER_SLOTS];
    nd_xfer *x = plain_store_emptied(c, out);
    enum { N = ND_XFER_START_SLOTS + 11 };
    void *blocks[N];
    take_marked(blocks, N, 48);
    EXPECT(nd_xfer_put(x, c, 0, blocks, 20, NULL, NULL) == 20 && !x->cls[c][0].big, "20 blocks in the start room");
    EXPECT(nd_xfer_put(x, c, 0, blocks + 20, N - 20, NULL, NULL) == N - 20 && x->cls[c][0].big,
           "the shard to move to its big slots past %u blocks", ND_XFER_START_SLOTS);
    EXPECT(nd_xfer_is_valid(x, c), "the class to be valid after the move");
    size_t got = take_from(x, c, out, N);
    EXPECT(got == N && memcmp(out, blocks, sizeof blocks) == 0, "all %d blocks back in order (%zu)", (int)N, got);
    free_marked(blocks, N);
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
    free_marked(out, drain_all(xp, c, out, ND_XFER_SLOTS));
    free_marked(out, drain_all(xb, c, out, ND_XFER_SLOTS));
    void *pb[8], *bb[8];
    take_marked(pb, 8, size);
    for (int i = 0; i < 8; i++) {
        bb[i] = nodal_malloc_node(size, node);
        EXPECT(bb[i] != NULL && nd_seg_base(bb[i])->bound, "nodal_malloc_node(%zu, %d) to give bound memory", size, node);
        nd_block_mark(bb[i]);
    }
    EXPECT(nd_xfer_put(xp, c, 0, pb, 8, NULL, NULL) == 8 && nd_xfer_put(xb, c, 0, bb, 8, NULL, NULL) == 8, "both puts to take their 8 blocks");
    EXPECT(nd_xfer_is_valid(xp, c) && nd_xfer_is_valid(xb, c), "each store to hold only blocks of its kind");
    size_t got = take_from(xb, c, out, ND_XFER_SLOTS);
    EXPECT(got == 8, "the bound store to give its 8 blocks, it gave %zu", got);
    for (size_t i = 0; i < got; i++)
        EXPECT(nd_seg_base(out[i])->bound, "block %p from the bound store to be bound memory", out[i]);
    got = take_from(xp, c, out, ND_XFER_SLOTS);
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
    free_marked(out, drain_all(x, c, out, ND_XFER_SLOTS));   /* empty, and `taken` cleared */
    take_marked(blocks, 16, size);
    EXPECT(nd_xfer_put(x, c, 0, blocks, 16, NULL, NULL) == 16, "the put to take 16 blocks");
    EXPECT(take_from(x, c, out, 4) == 4, "a take of 4");
    EXPECT(nd_xfer_drain(x, c, 0, out, ND_XFER_SLOTS, true) == 0, "an idle-only drain to keep a class taken from since the last one");
    size_t n = nd_xfer_drain(x, c, 0, out, ND_XFER_SLOTS, true);
    EXPECT(n == 12, "the next idle-only drain (no take in between) to empty it: 12 blocks, it gave %zu", n);
    EXPECT(nd_xfer_room(x, c) == nd_xfer_cap(x, c), "the drained class to be empty");
    EXPECT(nd_xfer_put(x, c, 0, blocks, 16, NULL, NULL) == 16 && drain_all(x, c, out, ND_XFER_SLOTS) == 16,
           "a full drain to empty a class whatever its takes");
    /* A bounded drain (maintenance's, ND_XFER_SWEEP_BATCH at a time) takes
       the newest and leaves the rest for the next call. */
    EXPECT(nd_xfer_put(x, c, 0, blocks, 16, NULL, NULL) == 16, "the put to take 16 blocks again");
    n = nd_xfer_drain(x, c, 0, out, 5, true);
    EXPECT(n == 5 && out[0] == blocks[11] && out[4] == blocks[15], "a drain of at most 5 to give the 5 newest, it gave %zu", n);
    n = nd_xfer_drain(x, c, 0, out, ND_XFER_SLOTS, true);
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
    size_t was = drain_all(x, c, out, ND_XFER_SLOTS);   /* what earlier cases left */
    free_marked(out, was);
    take_marked(blocks, 16, 512);
    EXPECT(nd_xfer_put(x, c, 0, blocks, 16, NULL, NULL) == 16 && take_from(x, c, out, 2) == 2, "a put of 16 and a take of 2");
    EXPECT(nd_xfer_drain(x, c, 0, out, ND_XFER_SLOTS, true) == 0, "the first sweep (the period began empty) to keep all");
    void *taken[8];
    EXPECT(take_from(x, c, taken, 4) == 4, "a take of 4: the class holds 10, never fewer this period");
    taken[4] = out[0];
    taken[5] = out[1];
    EXPECT(nd_xfer_put(x, c, 0, taken, 6, NULL, NULL) == 6, "the 6 taken put back: 16 in the class");
    size_t n, total = 0, calls = 0;
    do {
        n = nd_xfer_drain(x, c, 0, out + total, 4, true);
        total += n;
        calls++;
    } while (n == 4);
    EXPECT(total == 10 && calls == 3, "the sweep to give back the 10 that sat untaken, 4 at a time: %zu in %zu calls",
           total, calls);
    for (size_t i = 0; i < total; i++)
        EXPECT(out[i] == blocks[i], "the untaken ones to go, the oldest first: block %zu is %p, not %p", i, out[i],
               blocks[i]);
    EXPECT(nd_xfer_room(x, c) == nd_xfer_cap(x, c) - 6, "the 6 put back this period to stay");
    EXPECT(nd_xfer_is_valid(x, c), "the store's invariants to hold after a sweep");
    n = nd_xfer_drain(x, c, 0, out + total, ND_XFER_SLOTS, true);
    EXPECT(n == 6, "the next sweep, no take in between, to give back the 6 left, it gave %zu", n);
    free_marked(blocks, 16);
}

/* A store's first sweep comes a purge delay after the store was made, as
   every later one a delay after the one before: blocks put in a fresh
   store stay until they have sat through a period, and then go back to
   their pages. On main the store's last sweep was at time 0, so the
   first maintenance after the store was made sent them home at once. A
   store no earlier case made: node-bound memory of this thread's node
   (each case runs in a process of its own). */
static void a_fresh_stores_first_sweep_waits_a_period(void)
{
    int node = nd_tls_tc->heap.node;
    unsigned kind = nd_kind_of(true, node), c = class_of(256);
    EXPECT(nd_xfer_find(kind) == NULL, "no store of kind %u yet", kind);
    void *blocks[16];
    for (int i = 0; i < 16; i++) {
        blocks[i] = nodal_malloc_node(256, node);
        EXPECT(blocks[i] != NULL && nd_seg_base(blocks[i])->bound, "nodal_malloc_node(256, %d) to give bound memory", node);
        nd_block_mark(blocks[i]);
    }
    uint64_t made = nd_os_now_ms();
    nd_xfer *x = nd_xfer_get(kind);
    EXPECT(x != NULL, "the store of kind %u to be made", kind);
    EXPECT(nd_xfer_put(x, c, 0, blocks, 16, NULL, NULL) == 16, "the put to take 16 blocks");
    long delay = nd_opt(ND_OPT_purge_delay);
    EXPECT(delay > 0, "this case to run with a purge delay, it is %ld ms", delay);
    nd_tcache_xfer_sweep(nd_tls_tc, made, false);   /* maintenance right after the store was made */
    EXPECT(nd_xfer_room(x, c) == nd_xfer_cap(x, c) - 16,
           "the first sweep, right after the store was made, to keep the 16 blocks put in it: %zu of %zu slots free",
           nd_xfer_room(x, c), nd_xfer_cap(x, c));
    EXPECT(nd_xfer_is_valid(x, c), "the store's invariants to hold");
    nd_tcache_xfer_sweep(nd_tls_tc, nd_os_now_ms() + (uint64_t)delay, false);
    EXPECT(nd_xfer_room(x, c) == nd_xfer_cap(x, c), "a sweep a period later to send the 16 untaken blocks home, %zu left",
           nd_xfer_cap(x, c) - nd_xfer_room(x, c));
    EXPECT(nd_thread_is_valid(), "the heap to be valid");
}

/* Blocks of 8 KiB and more that sat untaken in the store through a purge
   delay give back their OS pages past their first on the way home (the
   sweep's, and a forced collect's: tcache.c, nd_tcache_xfer_empty; heap.c,
   nd_heap_purge_idle_blocks): the page they go to may be a thread's that
   no longer runs, and its passes would purge them only when it ran again.
   Each keeps its first OS page (its link and mark) and its first bytes,
   and is taken again writable. On main a sweep sent them home resident
   (all 16 x 7 OS pages of 32 KiB blocks past their first). */
enum { IDLE_N = 16, IDLE_SIZE = 32768 };
static size_t idle_resident(void *const *blocks)
{
    size_t ps = (size_t)sysconf(_SC_PAGESIZE), r = 0;
    for (int i = 0; i < IDLE_N; i++) {
        uintptr_t a = ((uintptr_t)blocks[i] + 16 + ps - 1) & ~(uintptr_t)(ps - 1);
        r += resident_pages((void *)a, (char *)blocks[i] + IDLE_SIZE);
    }
    return r;
}
static void idle_blocks_into_the_store(nd_xfer *x, unsigned c, void **blocks)
{
    for (int i = 0; i < IDLE_N; i++) {
        blocks[i] = nodal_malloc(IDLE_SIZE);
        EXPECT(blocks[i] != NULL, "malloc(%d) to succeed", IDLE_SIZE);
        memset(blocks[i], 0x5a, IDLE_SIZE);
        nd_block_mark(blocks[i]);
    }
    EXPECT(nd_xfer_put(x, c, 0, blocks, IDLE_N, NULL, NULL) == IDLE_N, "the put to take %d blocks", IDLE_N);
    EXPECT(idle_resident(blocks) > 0, "the blocks' pages to be resident in the store");
}
static void blocks_that_sat_in_the_store_give_back_their_memory_on_their_way_home(void)
{
    if (sysconf(_SC_PAGESIZE) != 4096)
        SKIP("OS pages of %ld bytes", sysconf(_SC_PAGESIZE));
    unsigned c = class_of(IDLE_SIZE);
    void *out[ND_XFER_SLOTS], *blocks[IDLE_N];
    nd_xfer *x = plain_store_emptied(c, out);
    long delay = nd_opt(ND_OPT_purge_delay);
    EXPECT(delay > 0, "this case to run with a purge delay, it is %ld ms", delay);
    /* The sweep: a period after the blocks went in, no take meanwhile. */
    idle_blocks_into_the_store(x, c, blocks);
    uint64_t purged = nd_load_relaxed(&nd_gauge.idle_blocks_purged);
    uint64_t t = nd_os_now_ms() + (uint64_t)delay;
    for (int k = 0; k < 3 && nd_xfer_room(x, c) != nd_xfer_cap(x, c); k++)
        nd_tcache_xfer_sweep(nd_tls_tc, t + (uint64_t)k * (uint64_t)delay, false);
    EXPECT(nd_xfer_room(x, c) == nd_xfer_cap(x, c), "the sweeps to send the untaken blocks home");
    EXPECT(nd_load_relaxed(&nd_gauge.idle_blocks_purged) - purged == IDLE_N, "the %d blocks to be given back, %llu were",
           IDLE_N, (unsigned long long)(nd_load_relaxed(&nd_gauge.idle_blocks_purged) - purged));
    size_t r = idle_resident(blocks);
    EXPECT(r == 0, "no OS page of the blocks past their first to stay resident, %zu did", r);
    /* A forced collect's (nodal_collect(1), malloc_trim). */
    void *again[IDLE_N];
    for (int i = 0; i < IDLE_N; i++) {
        again[i] = nodal_malloc(IDLE_SIZE);
        EXPECT(again[i] != NULL, "malloc(%d) to succeed again", IDLE_SIZE);
        memset(again[i], 0x33, IDLE_SIZE);   /* writable: taken again, faulted in */
        nd_block_mark(again[i]);
    }
    EXPECT(nd_xfer_put(x, c, 0, again, IDLE_N, NULL, NULL) == IDLE_N, "the put to take %d blocks", IDLE_N);
    purged = nd_load_relaxed(&nd_gauge.idle_blocks_purged);
    nd_tcache_xfer_sweep(nd_tls_tc, nd_os_now_ms(), true);
    EXPECT(nd_load_relaxed(&nd_gauge.idle_blocks_purged) - purged == IDLE_N, "a forced collect to give back the %d "
           "blocks, %llu were", IDLE_N, (unsigned long long)(nd_load_relaxed(&nd_gauge.idle_blocks_purged) - purged));
    r = idle_resident(again);
    EXPECT(r == 0, "no OS page of the blocks past their first to stay resident after a forced collect, %zu did", r);
    for (int i = 0; i < IDLE_N; i++) {
        blocks[i] = nodal_malloc(IDLE_SIZE);
        EXPECT(blocks[i] != NULL, "malloc(%d) to succeed once more", IDLE_SIZE);
        memset(blocks[i], 0x11, IDLE_SIZE);
    }
    for (int i = 0; i < IDLE_N; i++)
        nodal_free(blocks[i]);
    EXPECT(nd_xfer_is_valid(x, c) && nd_thread_is_valid(), "the store and the heap to be valid");
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
/* The cases that count what a hand-over left in the store run with a
   purge delay of an hour (tests/unit/CMakeLists.txt): the periodic sweep
   sends home what sat untaken through a purge delay, and under TSan or on
   a loaded machine a thread's round of 20,000 requests took longer than
   the default 100 ms (1 run in 5 under TSan took a quarter of the store's
   blocks back to their pages before the producer's next round). */
static void expect_no_sweep_during_the_case(void)
{
    EXPECT(nodal_option_get("purge_delay") >= 600000,
           "this case to run with purge_delay=3600000 (no sweep between a hand-over and its count), it is %ld ms",
           nodal_option_get("purge_delay"));
}
static void blocks_a_consumer_frees_come_back_to_the_producer_through_the_store(void)
{
    static char json[1 << 17];
    expect_no_sweep_during_the_case();
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
    unsigned long drained = json_class_field(json, HANDOFF_SIZE, "xfer_drained");
    unsigned cap = (unsigned)nd_xfer_cap(nd_xfer_find(nd_tls_tc->kind), class_of(HANDOFF_SIZE));
    /* Each round the consumer fills the store (cap blocks), the rest going
       home; the producer's next round takes them first. */
    EXPECT(puts >= 3ul * cap && takes >= 2ul * cap && takes <= puts && takes <= fill_blocks,
           "a store's worth of blocks (%u) to go through the store each round: %lu put, %lu taken (%lu sent home "
           "by a sweep)", cap, puts, takes, drained);
}

/* nodal_collect sends every store's blocks back to their pages: nothing of
   the class is left in the store afterwards, and every page of blocks a
   consumer freed is empty again. */
static void nodal_collect_empties_every_store(void)
{
    expect_no_sweep_during_the_case();
    unsigned kind = plain_kind();
    unsigned c = class_of(HANDOFF_SIZE);
    for (int i = 0; i < HANDOFF_N; i++)
        handoff_blocks[i] = nodal_malloc(HANDOFF_SIZE);
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, consume, NULL) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    nd_xfer *x = nd_xfer_find(kind);
    EXPECT(x != NULL && nd_xfer_room(x, c) < nd_xfer_cap(x, c), "the consumer to have left blocks in the store");
    nodal_collect(1);
    EXPECT(nd_xfer_room(x, c) == nd_xfer_cap(x, c), "nodal_collect to empty the store, %zu of %zu slots are free",
           nd_xfer_room(x, c), nd_xfer_cap(x, c));
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
    expect_no_sweep_during_the_case();
    unsigned kind = plain_kind();
    unsigned c = class_of(OWN_SIZE);
    nodal_collect(1);   /* no store holds blocks of the class */
    EXPECT(nd_xfer_find(kind) == NULL || nd_xfer_room(nd_xfer_find(kind), c) == nd_xfer_cap(nd_xfer_find(kind), c),
           "the store of class %u to start empty", c);
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, own_overflow, NULL) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    nd_xfer *x = nd_xfer_find(kind);
    EXPECT(x != NULL && nd_xfer_room(x, c) == 0,
           "the other thread's overflows of its own blocks to fill the store (%u blocks), %zu slots are free",
           x != NULL ? (unsigned)nd_xfer_cap(x, c) : 0, x != NULL ? nd_xfer_room(x, c) : 0);
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
    EXPECT(nd_xfer_room(x, c) == nd_xfer_cap(x, c), "nodal_collect to empty the store");
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
    expect_no_sweep_during_the_case();
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
    unsigned long drained = json_class_field(json, bsize, "xfer_drained");
    unsigned cap = (unsigned)nd_xfer_cap(x, c);
    EXPECT(puts >= 3ul * cap && takes >= 2ul * cap && takes <= puts,
           "a store's worth of %zu-byte blocks (%u) to go through the store each round under secure=1: %lu put, "
           "%lu taken (%lu sent home by a sweep)", bsize, cap, puts, takes, drained);
    /* What is left in the store comes out sealed, whoever takes it. */
    size_t n = nd_xfer_cap(x, c) - nd_xfer_room(x, c);
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
    EXPECT(nd_xfer_room(x, c) == nd_xfer_cap(x, c), "nodal_collect to empty the store");
    EXPECT(nd_thread_is_valid(), "the heap to be valid");
}

/* A thread that allocates a batch of blocks and then frees it, a batch
   larger than its bin, cycles whole bins through the store (its overflows
   put its blocks in, its fills take them back). Alone it takes back its
   own blocks, and keeps that route. Once one of its cycles' fills took
   another heap's block from the store (threads cycling beside it: their
   overflows and its fills meet there, and blocks move between heaps),
   its bin, full of its own heap's blocks, takes its own route (tcache.c:
   ND_OWN_CYCLES): its overflows send its blocks home to its pages and
   its fills take from its heap, so it neither puts its blocks where other
   threads take them nor takes theirs. Here: this thread cycles alone and
   uses the store; another thread's overflow then leaves blocks of its
   heap in the store, this thread's fills take some, and from then on its
   rounds put nothing in the store and take nothing from it, and every
   block of a round is of its own pages. (On main every round kept going
   through the store: its last rounds put and took hundreds of blocks.) */
enum { CYCLE_N = 2500, CYCLE_SIZE = 4096, CYCLE_ROUNDS = 12 };
static void *cycle_blocks[CYCLE_N];
static void cycle_round(void)
{
    for (int i = 0; i < CYCLE_N; i++) {
        cycle_blocks[i] = nodal_malloc(CYCLE_SIZE);
        EXPECT(cycle_blocks[i] != NULL, "malloc(%d) to succeed", CYCLE_SIZE);
    }
    for (int i = 0; i < CYCLE_N; i++)
        nodal_free(cycle_blocks[i]);
}
static void *seed_store(void *arg)
{
    (void)arg;
    cycle_round();   /* its overflows fill the emptied store with its heap's blocks */
    return NULL;
}
/* Blocks this thread's bin of class c put in and took from the store
   since the last call (its cold part's counters). */
static void cycle_counts(unsigned c, uint64_t *put, uint64_t *took)
{
    static uint64_t last_put, last_took;
    const nd_bin_info *bi = nd_bin_info_of(nd_tls_tc, c);
    *put = bi->counts.xfer_put_blocks - last_put;
    *took = bi->counts.xfer_take_blocks - last_took;
    last_put = bi->counts.xfer_put_blocks;
    last_took = bi->counts.xfer_take_blocks;
}
static void a_bin_cycling_its_own_batches_sends_them_home_once_it_took_anothers(void)
{
    expect_no_sweep_during_the_case();
    unsigned kind = plain_kind();
    unsigned c = class_of(CYCLE_SIZE);
    nodal_collect(1);
    uint64_t put, took;
    /* Alone: its whole-bin cycles go through the store (its own blocks). */
    for (int r = 0; r < CYCLE_ROUNDS; r++)
        cycle_round();
    cycle_counts(c, &put, &took);
    const nd_bin_info *bi = nd_bin_info_of(nd_tls_tc, c);
    EXPECT(bi->cycles >= 4 && put >= (uint64_t)CYCLE_ROUNDS * 64 && took >= (uint64_t)CYCLE_ROUNDS * 64,
           "a thread cycling alone to keep its blocks going through the store: %d cycles, %llu put, %llu taken in "
           "%d rounds", bi->cycles, (unsigned long long)put, (unsigned long long)took, CYCLE_ROUNDS);
    /* Another heap's blocks in the emptied store, for this thread's fills. */
    nd_xfer *x = nd_xfer_find(kind);
    EXPECT(x != NULL, "the store of kind %u to be made", kind);
    static void *mine[ND_XFER_SLOTS];
    free_marked(mine, drain_all(x, c, mine, ND_XFER_SLOTS));
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, seed_store, NULL) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    EXPECT(nd_xfer_room(x, c) < nd_xfer_cap(x, c), "the other thread to have left blocks in the store");
    for (int r = 0; r < CYCLE_ROUNDS; r++)
        cycle_round();
    cycle_counts(c, &put, &took);
    EXPECT(took > 0, "this thread's fills to have taken the other heap's blocks from the store");
    /* From here on its own route. */
    for (int r = 0; r < CYCLE_ROUNDS; r++)
        cycle_round();
    cycle_counts(c, &put, &took);
    EXPECT(put == 0 && took == 0,
           "a bin cycling its own batches, once it took another heap's, to send them home and fill from its heap: "
           "%llu blocks put in the store and %llu taken in %d rounds (%d cycles)",
           (unsigned long long)put, (unsigned long long)took, CYCLE_ROUNDS, bi->cycles);
    const nd_heap *h = &nd_tls_tc->heap;
    size_t foreign = 0;
    for (int i = 0; i < CYCLE_N; i++) {
        cycle_blocks[i] = nodal_malloc(CYCLE_SIZE);
        foreign += nd_load_relaxed(&nd_page_of(nd_seg_base(cycle_blocks[i]), cycle_blocks[i])->heap) != h;
    }
    EXPECT(foreign == 0, "every block of a round to be of this thread's pages, %zu of %d are another heap's",
           foreign, CYCLE_N);
    for (int i = 0; i < CYCLE_N; i++)
        nodal_free(cycle_blocks[i]);
    EXPECT(nd_thread_is_valid(), "the heap to be valid");
    nodal_collect(1);
    EXPECT(nd_xfer_room(x, c) == nd_xfer_cap(x, c), "nodal_collect to empty the store");
}

static const struct nd_case cases[] = {
    ND_CASE(a_new_store_writes_only_its_header),
    ND_CASE(classes_holding_a_few_blocks_keep_them_in_their_shards_headers),
    ND_CASE(a_shard_past_its_start_room_keeps_its_blocks),
    ND_CASE(big_slots_of_one_shard_of_neighbouring_classes_share_pages),
    ND_CASE(a_store_gives_back_what_it_took_and_holds_at_most_its_cap),
    ND_CASE(a_class_up_to_16_kib_holds_2_mib_of_blocks),
    ND_CASE(stores_of_two_kinds_keep_their_blocks_apart),
    ND_CASE(a_put_or_take_goes_on_to_the_next_shard_when_its_own_is_claimed_or_full),
    ND_CASE(a_put_checks_only_the_blocks_that_go_in),
    ND_CASE(a_give_back_empties_every_shard),
    ND_CASE(the_invariant_check_looks_at_every_shard),
    ND_CASE(a_sweep_drains_an_idle_store_and_keeps_a_used_one),
    ND_CASE(a_sweep_gives_back_what_sat_untaken_through_a_period),
    ND_CASE(a_fresh_stores_first_sweep_waits_a_period),
    ND_CASE(blocks_a_consumer_frees_come_back_to_the_producer_through_the_store),
    ND_CASE(nodal_collect_empties_every_store),
    ND_CASE(a_heaps_own_overflow_is_reused_by_another_heap_before_it_carves),
    ND_CASE(under_secure_1_blocks_a_consumer_frees_come_back_through_the_store),
    ND_CASE(a_bin_cycling_its_own_batches_sends_them_home_once_it_took_anothers),
    ND_CASE(blocks_that_sat_in_the_store_give_back_their_memory_on_their_way_home),
};
ND_MAIN(cases)
