/*
 * page.c - one page: carving, its free list, its remote-free list and the
 * notification states (protocol in page.h).
 *
 * Everything here runs on the owner thread of the page (or under a shared
 * heap's lock), except nd_page_xpush / nd_page_xdone and the heap
 * profile's nd_page_sample_add / nd_page_sample_take, which any thread
 * calls.
 */
#include "page.h"

#include <string.h>
#include "msg.h"
#include "options.h"
#include "os.h"

uint64_t  nd_block_mark_key[2];
uint64_t  nd_link_key[2];
uint64_t  nd_block_canary_key[2];
uint8_t   nd_page_fill_carved;

void nd_page_keys_init(void)
{
    /* m odd: the low word of the product is then a bijection of the
       address. */
    nd_block_mark_key[0] = nd_os_random();
    nd_block_mark_key[1] = nd_os_random() | 1;
    nd_link_key[0] = nd_os_random();
    nd_link_key[1] = nd_os_random() | 1;
    nd_block_canary_key[0] = nd_os_random();
    nd_block_canary_key[1] = nd_os_random() | 1;   /* odd: the multiply is a bijection */
    nd_page_fill_carved = nd_secure_full();
}

/* ---- the fill of free blocks (secure=2) ---------------------------------- */

size_t nd_block_fill_damage(const void *p, size_t n)
{
    const uintptr_t *w = p;
    for (size_t i = 0; i < n / sizeof(uintptr_t); i++) {
        uintptr_t want = i == 1 ? nd_block_mark_of(p) : ND_FILL_WORD;
        if (w[i] != want) {
            size_t b = 0;
            while (((w[i] ^ want) >> (8 * b) & 0xff) == 0)
                b++;
            return i * sizeof(uintptr_t) + b;
        }
    }
    return n;
}

void nd_page_corrupt(const nd_page *pg, const void *block, const char *what, const char *detail)
{
    nd_fatal("%s: %p (%s; a block of the %u-byte page at %p: a write after free or an overflow?)",
             what, block, detail, pg->block_size, (const void *)pg->start);
}

bool nd_page_is_block_start(const nd_page *pg, const void *p)
{
    if (!nd_load_relaxed(&pg->in_use))
        return false;
    if (pg->block_size == 0 || pg->reserved == 1)   /* huge or large: one block (not a kept one: large.h) */
        return (const uint8_t *)p == pg->start && !nd_load_relaxed(&pg->in_full);
    return nd_page_has_block(pg, p);
}

nd_hot void nd_page_init(nd_page *pg, unsigned cls, uint8_t *start, size_t area,
                  struct nd_heap *owner, uintptr_t key, unsigned kind)
{
    uint32_t bsize = nd_class_size[cls];
    nd_seg_desc_touch(nd_seg_base(pg), pg);
    pg->block_size = bsize;
    pg->reserved = (uint16_t)(area / bsize);
    pg->capacity = 0;
    nd_store_relaxed(&pg->limit, (uint64_t)0);
    pg->used = 0;
    pg->free = NULL;
    pg->start = start;
    pg->mul = nd_block_mul(bsize);
    pg->cls = (uint8_t)cls;
    pg->bin_off = nd_page_bin_off(cls);
    pg->in_full = 0;
    pg->xnext = NULL;
    nd_store_relaxed(&pg->xfree, (uintptr_t)0);
    nd_store_relaxed(&pg->in_use, 1);
    nd_store_relaxed(&pg->prof_mask, (uint64_t)0);
    pg->free_seen = pg->free_purged = 0;
    pg->free_pushed = 0;
    nd_store_release(&pg->heap, owner);
    nd_store_release(&pg->key, key);
    nd_store_release(&pg->kind_word, nd_kind_word(kind, 0));   /* no sample in a fresh page */
}

/* kind_word with its kind replaced by the one nd_page_kind_now chooses for
   `kind` (one step: another thread may count a sample meanwhile). */
static void nd_page_set_kind(nd_page *pg, unsigned kind)
{
    uint16_t w = nd_load_relaxed(&pg->kind_word), next;
    do
        next = nd_kind_word(nd_page_kind_now(kind, nd_kind_word_sampled(w)), nd_kind_word_sampled(w));
    while (!__atomic_compare_exchange_n(&pg->kind_word, &w, next, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

nd_hot void nd_page_set_owner(nd_page *pg, struct nd_heap *owner, uintptr_t key, unsigned kind)
{
    pg->in_full = 0;
    pg->xnext = NULL;
    nd_store_release(&pg->heap, owner);
    nd_store_release(&pg->key, key);
    nd_page_set_kind(pg, kind);
    nd_page_collect(pg);
}

nd_hot void nd_page_orphan(nd_page *pg)
{
    nd_page_set_kind(pg, ND_KIND_NONE);
    nd_store_release(&pg->key, ND_KEY_NONE);
    nd_store_relaxed(&pg->heap, (struct nd_heap *)NULL);
    pg->next = pg->prev = NULL;
}

nd_hot void nd_page_release(nd_page *pg)
{
    nd_assert(pg->used == 0 && pg->in_use);
    /* A notifier may still be clearing BUSY on this page: let it finish
       before the page (and perhaps its segment) changes hands. */
    while ((nd_load_acquire(&pg->xfree) & ND_XSTATE_MASK) == ND_XSTATE_BUSY)
        nd_os_yield();
    nd_store_relaxed(&pg->xfree, (uintptr_t)0);
    /* Every sample was dropped before its block came back (free.c). */
    nd_assert(nd_load_relaxed(&pg->kind_word) == nd_kind_word(nd_load_relaxed(&pg->kind), 0) &&
              nd_load_relaxed(&pg->prof_mask) == 0);
    nd_store_relaxed(&pg->kind_word, nd_kind_word(ND_KIND_NONE, 0));
    nd_store_release(&pg->key, ND_KEY_NONE);
    nd_store_relaxed(&pg->in_use, 0);
    nd_store_relaxed(&pg->heap, (struct nd_heap *)NULL);
    pg->free = NULL;
    pg->capacity = 0;
    nd_store_relaxed(&pg->limit, (uint64_t)0);
    pg->in_full = 0;
    pg->recarved = 1;
    nd_assert(!pg->kept);   /* its heap took it off its kept pages first */
}

nd_hot void nd_page_keep(nd_page *pg)
{
    nd_assert(pg->used == 0 && pg->in_use && !pg->in_full &&
              (nd_load_relaxed(&pg->xfree) & ~ND_XSTATE_MASK) == 0 && nd_load_relaxed(&pg->prof_mask) == 0);
    pg->free = NULL;
    pg->capacity = 0;
    nd_store_relaxed(&pg->limit, (uint64_t)0);   /* read by remote frees: none is legitimate now */
    pg->recarved = 1;
    pg->free_seen = pg->free_purged = 0;   /* (its heap writes kept_at in their place next) */
    pg->free_pushed = 0;
}

/* ---- remote frees -------------------------------------------------------- */

nd_hot uintptr_t nd_page_xpush(nd_page *pg, nd_block *b)
{
    nd_block_mark(b);
    return nd_page_xpush_chain(pg, b, b);
}

nd_hot uintptr_t nd_page_xpush_chain(nd_page *pg, nd_block *head, nd_block *tail)
{
    uintptr_t old = nd_load_relaxed(&pg->xfree), desired;
    do {
        /* The block already heads the list: freed twice in a row. Pushing it
           again would close a cycle that the owner would walk forever. */
        if (nd_unlikely((old & ~ND_XSTATE_MASK) == (uintptr_t)head))
            nd_misuse("free", "double free", head);
        nd_link_set(pg, tail, (nd_block *)(old & ~ND_XSTATE_MASK));
        uintptr_t st = old & ND_XSTATE_MASK;
        desired = (uintptr_t)head | (st == ND_XSTATE_NOTIFY ? ND_XSTATE_BUSY : st);
    } while (!nd_cas_weak_acq_rel(&pg->xfree, &old, desired));
    return old & ND_XSTATE_MASK;
}

nd_hot void nd_page_xdone(nd_page *pg)
{
    uintptr_t cur = nd_load_relaxed(&pg->xfree);
    while (!nd_cas_weak_acq_rel(&pg->xfree, &cur, cur & ~ND_XSTATE_MASK))
        ;
}

/* How many blocks away the walk of a remote list prefetches (two lines
   in flight at once). */
#define ND_WALK_AHEAD_NEAR 2
#define ND_WALK_AHEAD_FAR  6

/* Follows the link of free block b as nd_link_get does (page.h), with the
   page's fields read once by the caller: before = start - block_size, so
   that the block of index field f is before + f * block_size. Read once
   because the walks store into blocks and into `out`, which the compiler
   would otherwise assume may alias the descriptor. */
static inline bool nd_link_follow_field(const nd_block *b, uintptr_t before, uintptr_t bsize, uint64_t capacity,
                                        nd_block **next, uint64_t *field)
{
    uint64_t w = (uint64_t)(uintptr_t)b->next, f = w & ND_LINK_FIELD;
    if (nd_unlikely((w & ~ND_LINK_FIELD) != nd_link_mac(b, f) || f > capacity))
        return false;
    *next = f == 0 ? NULL : (nd_block *)(before + f * bsize);
    *field = f;
    return true;
}
static inline bool nd_link_follow(const nd_block *b, uintptr_t before, uintptr_t bsize, uint64_t capacity,
                                  nd_block **next)
{
    uint64_t f;
    return nd_link_follow_field(b, before, bsize, capacity, next, &f);
}

/* One step of the walk of a remote list (below): checks b's link and the
   mark of the block it leads to, and counts b against `left`, the blocks
   out of the page that the list can still hold. Returns the next block,
   or NULL at the list's end; *idx becomes the next block's index (the
   link's field less one: the block the link names, checked). */
static inline nd_block *nd_page_walk_step(const nd_page *pg, nd_block *b, uintptr_t before, uintptr_t bsize,
                                          uint64_t capacity, uint32_t *left, size_t *idx)
{
    if (nd_unlikely(*left == 0))
        nd_fatal("free(): double free: %p (a block of the page at %p freed twice by other threads)",
                 (void *)b, (void *)pg->start);
    --*left;
    /* Each step waits for the block the last one named, a line most
       likely written last by another CPU, so the lines of blocks the walk
       will probably reach are asked for ahead: a right guess overlaps
       those waits, a wrong one costs a prefetch (it never faults).
       Without a prefetch, 256 B blocks handed between 4 pairs of threads
       took 2-3x the time (measured with the earlier guess, above b,
       before the owner put blocks in address order). The guess is the blocks just below b: the owner
       hands a page's blocks out in address order (nd_page_collect_into),
       so the blocks below b went out before it and most likely came back
       before it (they are on the list), while those above went out after
       it and may still be in use by the thread that frees them: asking
       for their lines takes them from that thread just before it writes
       them (bench/xthread's 1 KiB pairs: 1.3-1.5x the time with the
       guess above b). */
    __builtin_prefetch((const char *)b - ND_WALK_AHEAD_NEAR * bsize);
    __builtin_prefetch((const char *)b - ND_WALK_AHEAD_FAR * bsize);
    nd_block *next;
    uint64_t f;
    if (nd_unlikely(!nd_link_follow_field(b, before, bsize, capacity, &next, &f) ||
                    (next != NULL && !nd_block_is_marked(next))))
        nd_page_corrupt(pg, b, ND_CORRUPT_LIST, "the link of a block freed by another thread was overwritten");
    *idx = (size_t)f - 1;
    return next;
}

/* A page has at most this many blocks (a small page of the smallest class:
   64 KiB / 16 B; a medium page at most 32). */
#define ND_PAGE_MAX_BLOCKS 4096
_Static_assert(ND_SMALL_PAGE_SIZE / 16 <= ND_PAGE_MAX_BLOCKS && ND_MEDIUM_PAGE_SIZE / ND_SMALL_MAX <= ND_PAGE_MAX_BLOCKS,
               "a map of a page's blocks covers every page of a segment");

/* Takes pg's remote list back: its first blocks go into out[0..n) (up to
   n of them), the rest onto the front of the free list; returns how many
   went into out. The list can hold at most the blocks out of the page: a
   longer one, or a cycle, means a block was freed twice by other threads
   (p, q, p), and the walk stops at that bound rather than run forever.
   Every link is checked before it is followed.
   The blocks come out in address order, the lowest first (into out, then
   on the free list), so that the owner's next requests get neighbouring
   blocks. The list holds the chains of the threads that freed them, each
   in the order of its thread cache, one after the other; fills and
   flushes cut the runs blocks come back in, and handed out in list order
   the runs shrink round after round: a page of 64-byte blocks handed
   between threads ended up in a random order of 4 blocks at a time, and a
   producer's batch of 100 spanned 13 OS pages where mimalloc's and
   jemalloc's span 3-4 (bench/batchq), which defeats the hardware's
   prefetch of the program's walks of its objects. The walk marks each
   block in a map of the page's block indexes (a block marked twice is a
   list that went round); the map then gives them in order. (The freeing
   thread's chains are not sorted: with the walk's earlier prefetch guess,
   above each block, that made bench/xthread's 1 KiB pairs 1.5x slower and
   added little; not measured again with the guess below.) */
static nd_hot size_t nd_page_collect_into(nd_page *pg, void **out, size_t n)
{
    uintptr_t x = nd_load_relaxed(&pg->xfree);
    if ((x & ~ND_XSTATE_MASK) == 0)
        return 0;
    while (!nd_cas_weak_acq_rel(&pg->xfree, &x, x & ND_XSTATE_MASK))
        ;
    nd_block *b = (nd_block *)(x & ~ND_XSTATE_MASK);
    if (b == NULL)
        return 0;
    if (nd_unlikely(!nd_page_link_ok(pg, b) || !nd_block_is_marked(b)))
        nd_page_corrupt(pg, b, ND_CORRUPT_LIST, "a block freed by another thread was modified");
    const uintptr_t bsize = pg->block_size;
    const uintptr_t before = (uintptr_t)pg->start - bsize;
    const uint64_t capacity = pg->capacity;
    nd_assert(capacity <= ND_PAGE_MAX_BLOCKS);
    uint64_t map[ND_PAGE_MAX_BLOCKS / 64];
    size_t lo = ND_PAGE_MAX_BLOCKS / 64, hi = 0;   /* the map's words in use (b is a block) */
    memset(map, 0, ((capacity + 63) >> 6) * sizeof map[0]);
    uint32_t left = pg->used;
    /* The index of each block after the first comes from the link that
       led to it (checked), not from its address: one multiply less. */
    size_t idx = nd_page_block_index(pg, b);
    while (b != NULL) {
        size_t nidx;
        nd_block *next = nd_page_walk_step(pg, b, before, bsize, capacity, &left, &nidx);
        size_t w = idx >> 6;
        uint64_t bit = (uint64_t)1 << (idx & 63);
        if (nd_unlikely(map[w] & bit))
            nd_page_corrupt(pg, b, ND_CORRUPT_LIST, "a block freed by other threads is in the page's list twice");
        map[w] |= bit;
        lo = w < lo ? w : lo;
        hi = w > hi ? w : hi;
        b = next;
        idx = nidx;
    }
    pg->used = (uint16_t)left;
    /* The first n into out; the rest linked in the same order, ahead of
       the free list. */
    size_t got = 0;
    nd_block *rest = NULL, *last = NULL;
    for (size_t w = lo; w <= hi; w++) {
        for (uint64_t bits = map[w]; bits != 0; bits &= bits - 1) {
            nd_block *p = (nd_block *)(pg->start + (w * 64 + (size_t)__builtin_ctzll(bits)) * bsize);
            if (got < n)
                out[got++] = p;
            else {
                if (last == NULL)
                    rest = p;
                else
                    nd_link_set(pg, last, p);
                last = p;
            }
        }
    }
    if (last != NULL) {
        nd_link_set(pg, last, pg->free);
        pg->free = rest;
        pg->free_pushed = 1;
    }
    return got;
}

nd_hot void nd_page_collect(nd_page *pg)
{
    nd_page_collect_into(pg, NULL, 0);
}

nd_hot bool nd_page_disarm(nd_page *pg)
{
    for (;;) {
        uintptr_t x = nd_load_acquire(&pg->xfree);
        uintptr_t st = x & ND_XSTATE_MASK;
        if (st == ND_XSTATE_BUSY) {
            nd_os_yield();
            continue;
        }
        if (st != ND_XSTATE_NOTIFY)
            return false;
        if (nd_cas_weak_acq_rel(&pg->xfree, &x, x & ~ND_XSTATE_MASK))
            return true;
    }
}

nd_hot bool nd_page_arm(nd_page *pg)
{
    for (;;) {
        uintptr_t x = nd_load_acquire(&pg->xfree);
        if ((x & ~ND_XSTATE_MASK) != 0)
            return false;
        uintptr_t st = x & ND_XSTATE_MASK;
        if (st == ND_XSTATE_BUSY) {     /* last cycle's notifier still finishing */
            nd_os_yield();
            continue;
        }
        if (st == ND_XSTATE_NOTIFY)
            return true;
        if (nd_cas_weak_acq_rel(&pg->xfree, &x, ND_XSTATE_NOTIFY))
            return true;
    }
}

bool nd_page_fork_clear_busy(nd_page *pg)
{
    uintptr_t x = nd_load_relaxed(&pg->xfree);
    if ((x & ND_XSTATE_MASK) != ND_XSTATE_BUSY)
        return false;
    nd_store_relaxed(&pg->xfree, x & ~ND_XSTATE_MASK);
    return true;
}

/* ---- taking and giving blocks -------------------------------------------- */

/* How many blocks can still be carved without touching an OS page that
   carving has not reached yet (0 for a page not carved at all). */
static size_t nd_page_resident_room(const nd_page *pg)
{
    if (pg->capacity == 0 || pg->capacity >= pg->reserved)
        return 0;
    uintptr_t next = (uintptr_t)pg->start + (size_t)pg->capacity * pg->block_size;
    uintptr_t ps = (uintptr_t)nd_os_page_size();
    uintptr_t end = (next + ps - 1) & ~(ps - 1);
    return (size_t)((end - next) / pg->block_size);
}

/* Blocks out[0 .. n), just taken off pg's free list, lose their bits in
   free_seen and free_purged (segment.h): in use again, a purged one's
   pages fault in as the program writes them. */
static nd_noinline void nd_page_unseen(nd_page *pg, void *const *out, size_t n)
{
    uint32_t gone = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = nd_page_block_index(pg, out[i]);
        gone |= k < 32 ? (uint32_t)1 << k : 0;
    }
    pg->free_seen &= ~gone;
    pg->free_purged &= ~gone;
}

/* The first blocks of pg's free list (not empty), up to n > 0 of them,
   into out; returns how many (not counted in used). Each was checked when
   the link to it was followed (or set). The list is walked with the
   page's fields read once and its head stored once (nd_link_follow). */
static inline size_t nd_page_take_list(nd_page *pg, void **out, size_t n)
{
    nd_block *b = pg->free;
    const uintptr_t bsize = pg->block_size;
    const uintptr_t before = (uintptr_t)pg->start - bsize;
    const uint64_t capacity = pg->capacity;
    size_t got = 0;
    do {
        nd_block *next;
        if (nd_unlikely(!nd_link_follow(b, before, bsize, capacity, &next) ||
                        (next != NULL && !nd_block_is_marked(next))))
            nd_page_corrupt(pg, b, ND_CORRUPT_LIST, "the link of a freed block was overwritten");
        out[got++] = b;
        b = next;
    } while (b != NULL && got < n);
    pg->free = b;
    if (nd_unlikely((pg->free_seen | pg->free_purged) != 0))
        nd_page_unseen(pg, out, got);
    return got;
}

bool nd_page_would_fault(const nd_page *pg)
{
    return !pg->recarved && pg->free == NULL && (nd_load_relaxed(&pg->xfree) & ~ND_XSTATE_MASK) == 0 &&
           pg->capacity < pg->reserved && nd_page_resident_room(pg) == 0;
}

nd_hot size_t nd_page_take_free(nd_page *pg, void **out, size_t n)
{
    size_t got = pg->free != NULL && n != 0 ? nd_page_take_list(pg, out, n) : 0;
    pg->used = (uint16_t)(pg->used + got);
    return got;
}

void nd_shuffle(void **v, size_t n, uint64_t *s)
{
    uint64_t r = 0;
    unsigned left = 0;
    for (size_t i = n; i > 1; i--) {
        if (left == 0) {
            r = nd_random64(s);
            left = 3;
        }
        size_t j = (size_t)(((r & ((1u << 21) - 1)) * i) >> 21);
        r >>= 21;
        left--;
        void *t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}

/* Puts v[0..k) (k > 1 distinct blocks of pg, taken from its free list) in
   address order, through a map of the page's blocks (which also finds a
   block there twice). A list in address order already, or in its reverse
   (a thread cache gives its blocks back last freed first), is left as it
   is or reversed without the map: its order is strict, so no block is in
   it twice. */
static void nd_page_sort(const nd_page *pg, void **v, size_t k)
{
    size_t up = 1;
    while (up < k && (uintptr_t)v[up - 1] < (uintptr_t)v[up])
        up++;
    if (up == k)
        return;
    if (up == 1) {
        size_t down = 1;
        while (down < k && (uintptr_t)v[down - 1] > (uintptr_t)v[down])
            down++;
        if (down == k) {
            for (size_t i = 0, j = k - 1; i < j; i++, j--) {
                void *t = v[i];
                v[i] = v[j];
                v[j] = t;
            }
            return;
        }
    }
    uint64_t map[ND_PAGE_MAX_BLOCKS / 64];
    size_t words = ((size_t)pg->capacity + 63) >> 6;
    memset(map, 0, words * sizeof map[0]);
    for (size_t i = 0; i < k; i++) {
        size_t idx = nd_page_block_index(pg, v[i]);
        uint64_t bit = (uint64_t)1 << (idx & 63);
        if (nd_unlikely(map[idx >> 6] & bit))
            nd_page_corrupt(pg, v[i], ND_CORRUPT_LIST, "a freed block is in the page's free list twice");
        map[idx >> 6] |= bit;
    }
    size_t got = 0;
    for (size_t w = 0; w < words; w++)
        for (uint64_t bits = map[w]; bits != 0; bits &= bits - 1)
            v[got++] = pg->start + (w * 64 + (size_t)__builtin_ctzll(bits)) * pg->block_size;
}

nd_hot size_t nd_page_take(nd_page *pg, void **out, size_t n, size_t max, uint64_t *rng)
{
    size_t got = 0;
    while (got < n) {
        if (pg->free != NULL) {
            size_t k = nd_page_take_list(pg, out + got, n - got);
            if (nd_unlikely(rng != NULL) && k > 1)
                nd_page_sort(pg, out + got, k);
            got += k;
            continue;
        }
        /* Blocks other threads gave back come before blocks that would make
           more memory resident: carving on through the page while most of
           its blocks wait on xfree would touch all of it. Blocks that fit
           in the OS page carving has already reached cost no memory, and
           come first: meanwhile the remote frees pile up, and the owner
           takes them in one batch rather than a few at a time against the
           thread that frees them (producer/consumer). */
        bool remote = (nd_load_relaxed(&pg->xfree) & ~ND_XSTATE_MASK) != 0;
        size_t room = remote ? nd_page_resident_room(pg) : 0;
        if (remote && room == 0) {
            /* Straight into out: each block is walked once. */
            size_t k = nd_page_collect_into(pg, out + got, max - got);
            got += k;
            if (k != 0 || pg->free != NULL)
                continue;
        }
        if (pg->capacity < pg->reserved) {
            size_t k = (size_t)(pg->reserved - pg->capacity);
            if (room != 0 && k > room)
                k = room;
            if (k > n - got)
                k = n - got;
            uint8_t *p = pg->start + (size_t)pg->capacity * pg->block_size;
            /* Each block's line is written (its mark); a page used before
               holds lines long out of the caches, and a fill carves
               hundreds of blocks at once: stores that miss, one after the
               other, stalled on the store buffer. Asking for the lines
               about eight ahead (512 bytes at least) for writing puts
               their misses in flight together: bench/prefetch (blocks of
               208 bytes, 80,000 allocated, written and freed a round)
               24.3 -> 20.4 ns an object, 1 KiB 149 -> 127 (mimalloc 21.5
               and 127). A prefetch never faults: one past the page's end
               is harmless. */
            const size_t ahead = pg->block_size < 64 ? 512 : 8 * (size_t)pg->block_size;
            for (size_t i = 0; i < k; i++, p += pg->block_size) {
                __builtin_prefetch(p + ahead, 1, 3);
                nd_block_mark(p);   /* free from now on: see page.h */
                out[got++] = p;
            }
            if (nd_unlikely(nd_page_fill_carved))
                for (size_t i = got - k; i < got; i++)
                    nd_block_fill(out[i], pg->block_size);
            if (nd_unlikely(rng != NULL) && !pg->recarved)
                nd_shuffle(out + got - k, k, rng);
            nd_store_relaxed(&pg->capacity, (uint16_t)(pg->capacity + k));   /* read by remote frees */
            nd_store_relaxed(&pg->limit, (uint64_t)pg->capacity * (pg->mul * pg->block_size));   /* read by remote frees */
            continue;
        }
        break;
    }
    pg->used = (uint16_t)(pg->used + got);
    return got;
}

nd_hot void nd_page_give(nd_page *pg, nd_block *head, nd_block *tail, uint32_t count)
{
    if (nd_unlikely(count > pg->used))
        nd_misuse("free", "double free or corruption (more blocks back than out)", head);
    nd_link_set(pg, tail, pg->free);
    pg->free = head;
    pg->free_pushed = 1;
    pg->used = (uint16_t)(pg->used - count);
}

void nd_page_junk(nd_page *pg, void *p)
{
    if (pg->block_size > 2 * sizeof(uintptr_t))
        memset((char *)p + 2 * sizeof(uintptr_t), 0xdf, pg->block_size - 2 * sizeof(uintptr_t));
}

/* ---- the heap profile's samples in a page's blocks (prof=1) -------------- */

void nd_page_sample_add(nd_page *pg, const void *p)
{
    size_t i = nd_page_block_index(pg, p);
    nd_assert(nd_page_sample_fits(pg) && i < pg->reserved);
    __atomic_fetch_or(&pg->prof_mask, (uint64_t)1 << i, __ATOMIC_RELAXED);
    /* The count and the kind in one step: a free of the page's last
       sample in another thread, or its owner's orphan or adoption, may
       change the word between the load and the swap; the swap then fails
       and the new word is counted again. */
    uint16_t w = nd_load_relaxed(&pg->kind_word), next;
    do {
        unsigned kind = nd_kind_word_kind(w), n = nd_kind_word_sampled(w);
        nd_assert(n < 64);
        next = nd_kind_word(kind == ND_KIND_NONE ? kind : ND_KIND_PROF, n + 1);
    } while (!__atomic_compare_exchange_n(&pg->kind_word, &w, next, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

bool nd_page_sample_take(nd_page *pg, const void *p)
{
    size_t i = nd_page_block_index(pg, p);
    uint64_t bit = i < 64 ? (uint64_t)1 << i : 0;
    if ((nd_load_relaxed(&pg->prof_mask) & bit) == 0 ||
        (__atomic_fetch_and(&pg->prof_mask, ~bit, __ATOMIC_RELAXED) & bit) == 0)
        return false;   /* not a sample (or another free of it took the bit: a double free) */
    const nd_segment *s = nd_seg_base(pg);
    unsigned own = nd_kind_of(s->bound, s->node);
    uint16_t w = nd_load_relaxed(&pg->kind_word), next;
    do {
        unsigned kind = nd_kind_word_kind(w), n = nd_kind_word_sampled(w);
        if (n == 0)   /* (only in a child whose fork stopped a thread between the two steps of an add) */
            return true;
        next = nd_kind_word(kind == ND_KIND_PROF && n == 1 ? own : kind, n - 1);
    } while (!__atomic_compare_exchange_n(&pg->kind_word, &w, next, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
    return true;
}

/* ---- debug validation ------------------------------------------------------ */

bool nd_page_is_valid(const nd_page *pg)
{
    /* kind and sampled read at once (other threads count samples). */
    uint16_t w = nd_load_relaxed(&pg->kind_word);
    if ((nd_kind_word_kind(w) == ND_KIND_PROF) != (nd_kind_word_sampled(w) > 0 && nd_kind_word_kind(w) != ND_KIND_NONE))
        return false;
    if (pg->reserved < 64 && (nd_load_relaxed(&pg->prof_mask) >> pg->reserved) != 0)
        return false;
    if (!pg->in_use)
        return (pg->key == ND_KEY_NONE || pg->key == 0) && pg->used == 0 && pg->kind == ND_KIND_NONE && !pg->kept;
    if (pg->kept && (pg->used != 0 || pg->capacity != 0 || pg->free != NULL || !pg->recarved))
        return false;
    if (pg->capacity > pg->reserved || pg->used > pg->capacity)
        return false;
    if (pg->cls < ND_CLASS_COUNT && pg->block_size != nd_class_size[pg->cls])
        return false;
    if (pg->cls < ND_CLASS_COUNT &&
        (pg->mul != nd_block_mul(pg->block_size) || pg->limit != (uint64_t)pg->capacity * (pg->mul * pg->block_size)))
        return false;
    if (pg->cls < ND_CLASS_COUNT && pg->bin_off != nd_page_bin_off(pg->cls))
        return false;
    size_t free_len = 0;
    uint64_t on_list = 0;
    for (nd_block *b = pg->free; b != NULL;) {
        if (!nd_page_is_block_start(pg, b) || !nd_block_is_marked(b) || ++free_len > pg->capacity)
            return false;
        size_t k = nd_page_block_index(pg, b);
        on_list |= k < 64 ? (uint64_t)1 << k : 0;
        if (!nd_link_get(pg, b, &b))
            return false;
    }
    /* free_seen and free_purged: blocks on the list only, of a page of at
       most 32 blocks, the list exactly free_seen's while free_pushed is 0
       (not kept: kept_at is in their place then). */
    if (!pg->kept && pg->cls < ND_CLASS_COUNT) {
        uint64_t marked = (uint64_t)(pg->free_seen | pg->free_purged);
        if ((marked & ~on_list) != 0 || (pg->reserved > 32 && marked != 0) ||
            (pg->reserved <= 32 && !pg->free_pushed && on_list != pg->free_seen))
            return false;
    }
    /* Blocks out of the page may still sit on xfree, so <= rather than ==. */
    return pg->used + free_len <= pg->capacity;
}
