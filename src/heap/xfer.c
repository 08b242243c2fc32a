/*
 * xfer.c - the transfer stores (see xfer.h): one per kind of memory, made
 * on first use from metadata, and the copies of block pointers in and out.
 * No lock: a shard's claim word, only tried (xfer.h).
 */
#include "xfer.h"

#include <string.h>
#include "atomic.h"
#include "meta.h"
#include "os.h"
#include "page.h"
#include "segment.h"

/* The stores, by kind - 2 (2 * node + bound); installed once, never freed. */
static nd_xfer *nd_xfer_stores[ND_XFER_KINDS];

/* The slots of an OS page. */
#define ND_XFER_PAGE_SLOTS (4096u / (uint32_t)sizeof(void *))

/* Claims a shard (acquire: the last holder's copy and count are seen);
   false when another thread has it. */
static inline bool nd_xfer_claim(nd_xfer_class *xc)
{
    uint32_t free_ = 0;
    return nd_load_relaxed(&xc->claim) == 0 &&
           __atomic_compare_exchange_n(&xc->claim, &free_, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}
/* Ends the claim (release: the copy and the count go with it). */
static inline void nd_xfer_release(nd_xfer_class *xc) { nd_store_release(&xc->claim, 0); }

/* Where shard s of class c's big slots start in p[] (xfer.h: shard by
   shard, each shard's classes one after the other). */
static inline uint32_t nd_xfer_big_off(const nd_xfer *x, unsigned c, unsigned s)
{
    return x->first + x->off[c] + s * (x->slots / ND_XFER_SHARDS);
}

/* Shard s of class c's slots: its start room, or its big slots once it
   moved there (xfer.h). Under the shard's claim. */
static inline void **nd_xfer_slots(nd_xfer *x, unsigned c, unsigned s)
{
    nd_xfer_class *xc = &x->cls[c][s];
    return xc->big ? &x->p[nd_xfer_big_off(x, c, s)] : xc->start;
}

nd_hot nd_xfer *nd_xfer_find(unsigned kind)
{
    if (kind < 2 || kind - 2 >= ND_XFER_KINDS)
        return NULL;
    return nd_load_acquire(&nd_xfer_stores[kind - 2]);
}

nd_hot nd_xfer *nd_xfer_get(unsigned kind)
{
    nd_xfer *x = nd_xfer_find(kind);
    if (nd_likely(x != NULL) || kind < 2 || kind - 2 >= ND_XFER_KINDS)
        return x;
    /* Each shard's part of the big slots is whole OS pages, and the first
       part starts on a page (`first`, the slots skipped to get there), so
       a class whose shard's slots are a page (the classes up to 256 B)
       touches one page per shard, not two. */
    uint32_t part = 0;
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++)
        part += nd_xfer_shard_stride(c);
    part = (part + ND_XFER_PAGE_SLOTS - 1) & ~(ND_XFER_PAGE_SLOTS - 1);
    uint32_t slots = ND_XFER_SHARDS * part;
    size_t bytes = sizeof(nd_xfer) + (size_t)(slots + ND_XFER_PAGE_SLOTS) * sizeof(void *);
    nd_xfer *fresh = nd_meta_alloc_untouched(bytes, offsetof(nd_xfer, p));
    if (fresh == NULL)
        return NULL;
    fresh->kind = kind;
    fresh->slots = slots;
    /* The sweep period starts now: a first sweep due from time 0 would
       send the first blocks put in back to their pages at the next
       maintenance, however briefly they sat (xfer.h, swept_ms). */
    fresh->swept_ms = nd_os_now_ms();
    fresh->first = (uint32_t)(((4096 - ((uintptr_t)fresh->p & 4095)) & 4095) / sizeof(void *));
    for (unsigned c = 0, off = 0; c < ND_CLASS_COUNT; c++) {
        fresh->off[c] = off;
        off += nd_xfer_shard_stride(c);
    }
    nd_xfer *none = NULL;
    if (__atomic_compare_exchange_n(&nd_xfer_stores[kind - 2], &none, fresh, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return fresh;
    nd_meta_free(fresh, bytes);   /* another thread made it first */
    return none;
}

size_t nd_xfer_cap(const nd_xfer *x, unsigned c)
{
    (void)x;
    return nd_xfer_cap_of(c);
}

size_t nd_xfer_room(const nd_xfer *x, unsigned c)
{
    size_t room = 0;
    for (unsigned s = 0; s < ND_XFER_SHARDS; s++) {
        uint32_t count = nd_load_relaxed(&x->cls[c][s].count), cap = nd_xfer_shard_cap(c, s);
        room += count < cap ? cap - count : 0;
    }
    return room;
}

/* nd_xfer_put up to the shards' caps, or (deep) their deep caps. */
static inline size_t nd_xfer_put_to(nd_xfer *x, unsigned c, unsigned shard, void *const *blocks, size_t n,
                                     nd_xfer_check_fn *check, const void *arg, bool deep)
{
    size_t put = 0;
    for (unsigned i = 0; i < ND_XFER_SHARDS && put < n; i++) {
        unsigned s = (shard + i) & (ND_XFER_SHARDS - 1);
        nd_xfer_class *xc = &x->cls[c][s];
        uint32_t cap = deep ? nd_xfer_shard_deep_cap(c, s) : nd_xfer_shard_cap(c, s);
        if (nd_load_relaxed(&xc->count) >= cap || !nd_xfer_claim(xc))
            continue;   /* full (a hint), or another thread's */
        size_t k = n - put, room = cap - xc->count;
        if (k > room)
            k = room;
        if (check != NULL)
            check(blocks + put, k, arg);
        if (!xc->big && xc->count + k > ND_XFER_START_SLOTS) {
            /* Past its start room: the shard moves to its big slots, for
               good (xfer.h). */
            memcpy(&x->p[nd_xfer_big_off(x, c, s)], xc->start, xc->count * sizeof(void *));
            xc->big = 1;
        }
        memcpy(nd_xfer_slots(x, c, s) + xc->count, blocks + put, k * sizeof(void *));
        nd_store_relaxed(&xc->count, xc->count + (uint32_t)k);   /* one word: the put counts from here */
        nd_xfer_release(xc);
        put += k;
    }
    return put;
}

nd_hot size_t nd_xfer_put(nd_xfer *x, unsigned c, unsigned shard, void *const *blocks, size_t n, nd_xfer_check_fn *check,
                          const void *arg)
{
    return nd_xfer_put_to(x, c, shard, blocks, n, check, arg, false);
}

/* (Not nd_hot: only programs that hand medium blocks over while more
   owners wait than there are CPUs run it.) */
size_t nd_xfer_put_deep(nd_xfer *x, unsigned c, unsigned shard, void *const *blocks, size_t n, nd_xfer_check_fn *check,
                        const void *arg)
{
    return nd_xfer_put_to(x, c, shard, blocks, n, check, arg, true);
}

nd_hot size_t nd_xfer_take(nd_xfer *x, unsigned c, unsigned shard, void **end, size_t max)
{
    size_t got = 0;
    for (unsigned i = 0; i < ND_XFER_SHARDS && got < max; i++) {
        unsigned s = (shard + i) & (ND_XFER_SHARDS - 1);
        nd_xfer_class *xc = &x->cls[c][s];
        if (nd_load_relaxed(&xc->count) == 0 || !nd_xfer_claim(xc))
            continue;   /* empty (a hint), or another thread's */
        size_t k = max - got;
        if (k > xc->count)
            k = xc->count;
        if (k == 0) {   /* emptied since the hint: not a take (the sweep's `taken`) */
            nd_xfer_release(xc);
            continue;
        }
        uint32_t rest = xc->count - (uint32_t)k;
        got += k;
        memcpy(end - got, nd_xfer_slots(x, c, s) + rest, k * sizeof(void *));
        nd_store_relaxed(&xc->count, rest);
        nd_store_relaxed(&xc->taken, 1);
        if (rest < xc->low)
            xc->low = rest;
        nd_xfer_release(xc);
    }
    return got;
}

nd_hot size_t nd_xfer_drain(nd_xfer *x, unsigned c, unsigned shard, void **out, size_t max, bool idle_only)
{
    unsigned s = shard & (ND_XFER_SHARDS - 1);
    nd_xfer_class *xc = &x->cls[c][s];
    if (nd_load_relaxed(&xc->count) == 0 && (!idle_only || nd_load_relaxed(&xc->taken) == 0))
        return 0;
    if (!nd_xfer_claim(xc))
        return 0;
    void **p = nd_xfer_slots(x, c, s);
    size_t n = 0;
    if (!idle_only || !xc->taken) {
        /* Any: the newest. */
        n = xc->count < max ? xc->count : max;
        uint32_t rest = xc->count - (uint32_t)n;
        memcpy(out, p + rest, n * sizeof(void *));
        nd_store_relaxed(&xc->count, rest);
    } else if (xc->low != 0) {
        /* Taken from, but never below `low` blocks since the last sweep:
           those sat untaken a whole period, the oldest go back (the rest
           move down). The sweep goes on while it gets max, `low` counting
           down; it ends below. */
        n = xc->low < max ? xc->low : max;
        uint32_t rest = xc->count - (uint32_t)n;
        memcpy(out, p, n * sizeof(void *));
        memmove(p, p + n, rest * sizeof(void *));
        nd_store_relaxed(&xc->count, rest);
        xc->low -= (uint32_t)n;
        if (n == max)
            goto more;
    }
    nd_store_relaxed(&xc->taken, 0);
    xc->low = xc->count;   /* the next period starts */
more:
    nd_xfer_release(xc);
    return n;
}

nd_hot bool nd_xfer_sweep_claim(nd_xfer *x, uint64_t now_ms, uint64_t period_ms)
{
    uint64_t last = nd_load_relaxed(&x->swept_ms);
    if (now_ms < last || now_ms - last < period_ms)
        return false;
    return __atomic_compare_exchange_n(&x->swept_ms, &last, now_ms, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

void nd_xfer_fork_child(void)
{
    for (unsigned k = 0; k < ND_XFER_KINDS; k++) {
        nd_xfer *x = nd_load_relaxed(&nd_xfer_stores[k]);
        for (unsigned c = 0; x != NULL && c < ND_CLASS_COUNT; c++)
            for (unsigned s = 0; s < ND_XFER_SHARDS; s++)
                if (nd_load_relaxed(&x->cls[c][s].claim) != 0)   /* a shard never used stays unwritten */
                    nd_store_relaxed(&x->cls[c][s].claim, 0);
    }
}

/* ---- debug validation ---------------------------------------------------------- */

/* Shard s of class c (claimed by the caller): its bounds and its blocks. */
static bool nd_xfer_shard_is_valid(nd_xfer *x, unsigned c, unsigned s)
{
    const nd_xfer_class *xc = &x->cls[c][s];
    uint32_t stride = nd_xfer_shard_stride(c);
    bool ok = xc->count <= nd_xfer_shard_deep_cap(c, s) && xc->low <= xc->count && xc->big <= 1 &&
              (xc->big ? stride != 0 : xc->count <= ND_XFER_START_SLOTS);
    void **p = nd_xfer_slots(x, c, s);
    for (uint32_t i = 0; ok && i < xc->count; i++) {
        nd_segment *seg = nd_seg_base(p[i]);
        const nd_page *pg = nd_page_of(seg, p[i]);
        ok = nd_load_relaxed(&pg->in_use) && pg->cls == c && nd_page_has_block(pg, p[i]) && nd_block_is_marked(p[i]) &&
             nd_kind_of(seg->bound, seg->node) == x->kind;
    }
    return ok;
}

bool nd_xfer_is_valid(nd_xfer *x, unsigned c)
{
    if (x->kind < 2 || x->kind - 2 >= ND_XFER_KINDS || c >= ND_CLASS_COUNT)
        return false;
    uint32_t off = 0;
    for (unsigned k = 0; k < c; k++)
        off += nd_xfer_shard_stride(k);
    bool ok = x->off[c] == off && x->slots % ND_XFER_SHARDS == 0 && x->first < ND_XFER_PAGE_SLOTS &&
              nd_xfer_big_off(x, c, ND_XFER_SHARDS - 1) + nd_xfer_shard_stride(c) <= x->first + x->slots &&
              off % ND_XFER_LINE_SLOTS == 0;
    for (unsigned s = 0; ok && s < ND_XFER_SHARDS; s++) {
        nd_xfer_class *xc = &x->cls[c][s];
        if (nd_xfer_claim(xc)) {   /* else another thread's: checked at its next use */
            ok = nd_xfer_shard_is_valid(x, c, s);
            nd_xfer_release(xc);
        }
    }
    return ok;
}
