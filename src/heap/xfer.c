/*
 * xfer.c - the transfer stores (see xfer.h): one per kind of memory, made
 * on first use from metadata, and the copies of block pointers in and out.
 * No lock: a class's claim word, only tried (xfer.h).
 */
#include "xfer.h"

#include <string.h>
#include "atomic.h"
#include "meta.h"
#include "page.h"
#include "segment.h"

/* The stores, by kind - 2 (2 * node + bound); installed once, never freed. */
static nd_xfer *nd_xfer_stores[ND_XFER_KINDS];

/* Claims class c's store (acquire: the last holder's copy and count are
   seen); false when another thread has it. */
static inline bool nd_xfer_claim(nd_xfer_class *xc)
{
    uint32_t free_ = 0;
    return nd_load_relaxed(&xc->claim) == 0 &&
           __atomic_compare_exchange_n(&xc->claim, &free_, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}
/* Ends the claim (release: the copy and the count go with it). */
static inline void nd_xfer_release(nd_xfer_class *xc) { nd_store_release(&xc->claim, 0); }

/* The slots of class c: at most ND_XFER_SLOTS blocks, ND_XFER_BYTES; a
   medium class's ND_XFER_MEDIUM_BLOCKS (xfer.h). */
static inline uint32_t nd_xfer_cap_of(unsigned c)
{
    if (!nd_class_is_small(c))
        return ND_XFER_MEDIUM_BLOCKS;
    size_t cap = ND_XFER_BYTES / nd_class_size[c];
    return (uint32_t)(cap < ND_XFER_SLOTS ? cap : ND_XFER_SLOTS);
}

nd_xfer *nd_xfer_find(unsigned kind)
{
    if (kind < 2 || kind - 2 >= ND_XFER_KINDS)
        return NULL;
    return nd_load_acquire(&nd_xfer_stores[kind - 2]);
}

nd_xfer *nd_xfer_get(unsigned kind)
{
    nd_xfer *x = nd_xfer_find(kind);
    if (nd_likely(x != NULL) || kind < 2 || kind - 2 >= ND_XFER_KINDS)
        return x;
    uint32_t slots = 0;
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++)
        slots += nd_xfer_cap_of(c);
    size_t bytes = sizeof(nd_xfer) + (size_t)slots * sizeof(void *);
    /* Only the header is written now (zeroed): a class's slots become
       resident as puts first write them, the first access to each. */
    nd_xfer *fresh = nd_meta_alloc_head(bytes, offsetof(nd_xfer, p));
    if (fresh == NULL)
        return NULL;
    fresh->kind = kind;
    fresh->slots = slots;
    for (unsigned c = 0, off = 0; c < ND_CLASS_COUNT; c++) {
        fresh->cls[c].cap = nd_xfer_cap_of(c);
        fresh->cls[c].off = off;
        off += fresh->cls[c].cap;
    }
    nd_xfer *none = NULL;
    if (__atomic_compare_exchange_n(&nd_xfer_stores[kind - 2], &none, fresh, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return fresh;
    nd_meta_free(fresh, bytes);   /* another thread made it first */
    return none;
}

size_t nd_xfer_room(const nd_xfer *x, unsigned c)
{
    const nd_xfer_class *xc = &x->cls[c];
    uint32_t count = nd_load_relaxed(&xc->count);
    return count < xc->cap ? xc->cap - count : 0;
}

size_t nd_xfer_put(nd_xfer *x, unsigned c, void *const *blocks, size_t n)
{
    nd_xfer_class *xc = &x->cls[c];
    if (n == 0 || nd_xfer_room(x, c) == 0 || !nd_xfer_claim(xc))
        return 0;
    size_t room = xc->cap - xc->count;
    if (n > room)
        n = room;
    memcpy(&x->p[xc->off + xc->count], blocks, n * sizeof(void *));
    nd_store_relaxed(&xc->count, xc->count + (uint32_t)n);   /* one word: the put counts from here */
    nd_xfer_release(xc);
    return n;
}

/* Under the claim: up to max of the class's newest blocks into out, out
   of the class; returns how many. */
static size_t nd_xfer_copy_out(nd_xfer *x, nd_xfer_class *xc, void **out, size_t max)
{
    size_t n = xc->count < max ? xc->count : max;
    uint32_t rest = xc->count - (uint32_t)n;
    memcpy(out, &x->p[xc->off + rest], n * sizeof(void *));
    nd_store_relaxed(&xc->count, rest);
    return n;
}

size_t nd_xfer_take(nd_xfer *x, unsigned c, void **out, size_t max)
{
    nd_xfer_class *xc = &x->cls[c];
    if (max == 0 || nd_load_relaxed(&xc->count) == 0 || !nd_xfer_claim(xc))
        return 0;
    size_t n = nd_xfer_copy_out(x, xc, out, max);
    nd_store_relaxed(&xc->taken, 1);
    if (xc->count < xc->low)
        xc->low = xc->count;
    nd_xfer_release(xc);
    return n;
}

/* Under the claim: up to max of the class's oldest blocks into out (the
   rest move down), out of the class; returns how many. */
static size_t nd_xfer_copy_oldest(nd_xfer *x, nd_xfer_class *xc, void **out, size_t max)
{
    size_t n = xc->count < max ? xc->count : max;
    uint32_t rest = xc->count - (uint32_t)n;
    memcpy(out, &x->p[xc->off], n * sizeof(void *));
    memmove(&x->p[xc->off], &x->p[xc->off + n], rest * sizeof(void *));
    nd_store_relaxed(&xc->count, rest);
    return n;
}

size_t nd_xfer_drain(nd_xfer *x, unsigned c, void **out, size_t max, bool idle_only)
{
    nd_xfer_class *xc = &x->cls[c];
    if (nd_load_relaxed(&xc->count) == 0 && (!idle_only || nd_load_relaxed(&xc->taken) == 0))
        return 0;
    if (!nd_xfer_claim(xc))
        return 0;
    size_t n = 0;
    if (!idle_only || !xc->taken) {
        n = nd_xfer_copy_out(x, xc, out, max);
    } else if (xc->low != 0) {
        /* Taken from, but never below `low` blocks since the last sweep:
           those sat untaken a whole period, the oldest go back. The sweep
           goes on while it gets max, `low` counting down; it ends below. */
        n = nd_xfer_copy_oldest(x, xc, out, xc->low < max ? xc->low : max);
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

bool nd_xfer_sweep_claim(nd_xfer *x, uint64_t now_ms, uint64_t period_ms)
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
            nd_store_relaxed(&x->cls[c].claim, 0);
    }
}

/* ---- debug validation ---------------------------------------------------------- */

bool nd_xfer_is_valid(nd_xfer *x, unsigned c)
{
    if (x->kind < 2 || x->kind - 2 >= ND_XFER_KINDS || c >= ND_CLASS_COUNT)
        return false;
    nd_xfer_class *xc = &x->cls[c];
    if (!nd_xfer_claim(xc))
        return true;   /* another thread's: checked at its next use */
    uint32_t off = 0;
    for (unsigned k = 0; k < c; k++)
        off += x->cls[k].cap;
    bool ok = xc->count <= xc->cap && xc->low <= xc->count && xc->cap == nd_xfer_cap_of(c) && xc->off == off && off + xc->cap <= x->slots;
    for (uint32_t i = 0; ok && i < xc->count; i++) {
        void *p = x->p[off + i];
        nd_segment *s = nd_seg_base(p);
        const nd_page *pg = nd_page_of(s, p);
        ok = nd_load_relaxed(&pg->in_use) && pg->cls == c && nd_page_has_block(pg, p) && nd_block_is_marked(p) &&
             nd_kind_of(s->bound, s->node) == x->kind;
    }
    nd_xfer_release(xc);
    return ok;
}
