/*
 * prof.c - the heap profile's samples (see prof.h).
 */
#include "prof.h"

#include "atomic.h"
#include "msg.h"
#include "os.h"
#include "tcache.h"
#include "thread.h"

static nd_prof_site *nd_prof_site_tab;
static nd_prof_slot *nd_prof_live_tab;
static int64_t  nd_prof_live_est;     /* estimated live bytes (atomic) */
static uint64_t nd_prof_drops;        /* samples a full table refused (atomic) */
static uintptr_t nd_prof_self_lo, nd_prof_self_hi;   /* nodal's code, left out of stacks */

/* The OS pages of the tables ever written (atomic bits): the reports read
   only those, so the tables' untouched pages never become resident. */
#define ND_PROF_PAGE 4096u
#define ND_PROF_SITE_PAGES ((ND_PROF_SITES * sizeof(nd_prof_site) + ND_PROF_PAGE - 1) / ND_PROF_PAGE)
#define ND_PROF_LIVE_PAGES ((ND_PROF_LIVE * sizeof(nd_prof_slot) + ND_PROF_PAGE - 1) / ND_PROF_PAGE)
static uint64_t nd_prof_site_used[(ND_PROF_SITE_PAGES + 63) / 64];
static uint64_t nd_prof_live_used[(ND_PROF_LIVE_PAGES + 63) / 64];

static void nd_prof_touch(uint64_t *used, size_t offset, size_t len)
{
    for (size_t pg = offset / ND_PROF_PAGE; pg <= (offset + len - 1) / ND_PROF_PAGE; pg++)
        if (!(nd_load_relaxed(&used[pg / 64]) & ((uint64_t)1 << (pg % 64))))
            __atomic_fetch_or(&used[pg / 64], (uint64_t)1 << (pg % 64), __ATOMIC_RELEASE);
}

/* The first index >= i of a table of `count` entries of `size` bytes that
   lies on a page ever written; count when none. */
static size_t nd_prof_next_used(const uint64_t *used, size_t i, size_t count, size_t size)
{
    for (; i < count; i++) {
        size_t first = i * size / ND_PROF_PAGE, last = (i * size + size - 1) / ND_PROF_PAGE;
        bool any = false;
        for (size_t pg = first; pg <= last && !any; pg++)
            any = (nd_load_acquire(&used[pg / 64]) >> (pg % 64)) & 1;
        if (any)
            return i;
        /* Skip to the first entry of the next page. */
        size_t next = ((last + 1) * ND_PROF_PAGE + size - 1) / size;
        i = next > i ? next - 1 : i;
    }
    return count;
}

size_t nd_prof_site_next(size_t i) { return nd_prof_next_used(nd_prof_site_used, i, ND_PROF_SITES, sizeof(nd_prof_site)); }
size_t nd_prof_live_next(size_t i) { return nd_prof_next_used(nd_prof_live_used, i, ND_PROF_LIVE, sizeof(nd_prof_slot)); }

/* The recursion guard: set while this thread is inside the profiler (the
   unwinder may allocate; a signal handler may allocate in between). */
static __thread uint8_t nd_prof_busy;
/* Bytes of large and huge requests to this thread's next sample, and the
   state of its draws. */
static __thread int64_t  nd_prof_big_left;
static __thread uint64_t nd_prof_big_rng;

bool nd_prof_is_on(void) { return nd_load_relaxed(&nd_tcache_prof_rate) != 0; }
int64_t nd_prof_rate(void) { return nd_load_relaxed(&nd_tcache_prof_rate); }
const nd_prof_site *nd_prof_sites(void) { return nd_prof_site_tab; }
int64_t nd_prof_live_bytes(void) { return nd_load_relaxed(&nd_prof_live_est); }
uint64_t nd_prof_dropped(void) { return nd_load_relaxed(&nd_prof_drops); }

bool nd_prof_start(int64_t rate)
{
    if (nd_prof_is_on() || rate <= 0)
        return nd_prof_is_on();
    size_t site_bytes = ND_PROF_SITES * sizeof(nd_prof_site);
    size_t live_bytes = ND_PROF_LIVE * sizeof(nd_prof_slot);
    /* Untouched pages of the tables cost address space only. */
    nd_prof_site_tab = nd_os_map_aligned(site_bytes, nd_os_page_size());
    nd_prof_live_tab = nd_os_map_aligned(live_bytes, nd_os_page_size());
    if (nd_prof_site_tab == NULL || nd_prof_live_tab == NULL) {
        nd_warn("prof: cannot map the profile's tables; profiling is off");
        return false;
    }
    bool main;
    if (nd_os_code_range((const void *)(uintptr_t)nd_prof_start, &nd_prof_self_lo, &nd_prof_self_hi, &main) && main)
        nd_prof_self_lo = nd_prof_self_hi = 0;   /* linked into the program: nothing is left out */
    /* The unwinder's first call loads libgcc_s (and allocates): now, and
       not inside a sampled malloc. */
    void *frames[4];
    nd_prof_busy = 1;
    nd_os_backtrace(frames, 4);
    nd_prof_busy = 0;
    nd_store_release(&nd_tcache_prof_rate, rate);
    nd_thread_prof_rearm();
    return true;
}

bool nd_prof_big_due(size_t bytes)
{
    if (nd_prof_big_left == 0)
        nd_prof_big_left = nd_tcache_prof_gap(&nd_prof_big_rng);
    nd_prof_big_left -= (int64_t)(bytes > INT64_MAX / 2 ? INT64_MAX / 2 : bytes);
    if (nd_prof_big_left > 0)
        return false;
    nd_prof_big_left = nd_tcache_prof_gap(&nd_prof_big_rng);
    return true;
}

/* exp(-x) for x >= 0 without libm: x = k ln 2 + r, r in [0, ln 2). */
static double nd_exp_neg(double x)
{
    if (x > 700)
        return 0;
    int k = (int)(x / 0.6931471805599453);
    double r = x - k * 0.6931471805599453, term = 1, sum = 1;
    for (int i = 1; i <= 16; i++) {
        term *= -r / i;
        sum += term;
    }
    union { double d; uint64_t u; } v = { .d = 1.0 };
    v.u -= (uint64_t)k << 52;   /* 2^-k (k <= 1010) */
    return sum * v.d;
}

static uint64_t nd_prof_hash(const void *const *frames, int n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < n; i++)
        h = (h ^ (uint64_t)(uintptr_t)frames[i]) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
    return h < 2 ? h + 2 : h;
}

/* The site of this stack, added if new; ND_PROF_SITES when the table is full. */
static uint32_t nd_prof_site_of(void *const *frames, int n)
{
    uint64_t h = nd_prof_hash((const void *const *)frames, n);
    for (uint32_t probe = 0; probe < 512; probe++) {
        uint32_t i = (uint32_t)(h + probe) & (ND_PROF_SITES - 1);
        nd_prof_site *s = &nd_prof_site_tab[i];
        uint32_t st = nd_load_acquire(&s->state);
        if (st == 0) {
            uint32_t zero = 0;
            if (__atomic_compare_exchange_n(&s->state, &zero, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
                nd_prof_touch(nd_prof_site_used, (size_t)i * sizeof *s, sizeof *s);
                s->hash = h;
                s->nframes = (uint32_t)n;
                for (int k = 0; k < n; k++)
                    s->frames[k] = frames[k];
                nd_store_release(&s->state, 2);
                return i;
            }
            st = nd_load_acquire(&s->state);
        }
        while (st == 1) {   /* another thread writes it: a moment */
            nd_os_yield();
            st = nd_load_acquire(&s->state);
        }
        if (s->hash != h || s->nframes != (uint32_t)n)
            continue;
        bool same = true;
        for (int k = 0; k < n && same; k++)
            same = s->frames[k] == frames[k];
        if (same)
            return i;
    }
    return ND_PROF_SITES;
}

static uint32_t nd_prof_slot_hash(uintptr_t a)
{
    return (uint32_t)(((uint64_t)a * 0x9e3779b97f4a7c15ull) >> 40);
}

#define ND_PROF_EMPTY 0u
#define ND_PROF_TOMB  1u
#define ND_PROF_BUSY  2u
#define ND_PROF_PROBES 256u

void nd_prof_record(void *p, nd_page *pg, size_t size, size_t usable, int node, bool bound)
{
    if (nd_prof_busy || nd_prof_live_tab == NULL)
        return;
    nd_prof_busy = 1;
    void *raw[ND_PROF_FRAMES + 16];
    int n = nd_os_backtrace(raw, ND_PROF_FRAMES + 16);
    int first = 0;
    /* nodal's own frames (malloc and what it called) are not the site. */
    while (first < n && (uintptr_t)raw[first] >= nd_prof_self_lo && (uintptr_t)raw[first] < nd_prof_self_hi)
        first++;
    if (first == n)
        first = 0;
    int keep = n - first < ND_PROF_FRAMES ? n - first : ND_PROF_FRAMES;
    uint32_t site = nd_prof_site_of(raw + first, keep);
    /* The estimate: this request stands for 1 / P(sampled) requests. */
    double rate = (double)nd_prof_rate();
    double prob = 1 - nd_exp_neg((double)usable / rate);
    double objs = prob > 0 ? 1 / prob : 1;
    nd_prof_live v = {
        .addr = (uintptr_t)p, .site = site, .node = (int16_t)node, .bound = bound,
        .tid = nd_tid(), .size = size, .objs = (uint64_t)(objs + 0.5),
        .bytes = (uint64_t)(objs * (double)size + 0.5),
    };
    if (site == ND_PROF_SITES) {
        nd_add_relaxed(&nd_prof_drops, 1);
        nd_prof_busy = 0;
        return;
    }
    nd_prof_site *s = &nd_prof_site_tab[site];
    nd_add_relaxed(&s->samples, 1);
    nd_add_relaxed(&s->alloc_objs, v.objs);
    nd_add_relaxed(&s->alloc_bytes, v.bytes);
    /* Its live slot: the first empty or tombstone on its probe path. */
    uint32_t h = nd_prof_slot_hash(v.addr);
    for (uint32_t probe = 0; probe < ND_PROF_PROBES; probe++) {
        nd_prof_slot *sl = &nd_prof_live_tab[(h + probe) & (ND_PROF_LIVE - 1)];
        uintptr_t k = nd_load_relaxed(&sl->key);
        if (k != ND_PROF_EMPTY && k != ND_PROF_TOMB)
            continue;
        nd_prof_touch(nd_prof_live_used, (size_t)(sl - nd_prof_live_tab) * sizeof *sl, sizeof *sl);
        if (!__atomic_compare_exchange_n(&sl->key, &k, ND_PROF_BUSY, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            continue;
        nd_add_relaxed(&sl->seq, 1);   /* odd: being written */
        __atomic_thread_fence(__ATOMIC_RELEASE);
        sl->v = v;
        __atomic_fetch_add(&sl->seq, 1, __ATOMIC_RELEASE);
        nd_add_relaxed(&nd_prof_live_est, (int64_t)v.bytes);
        nd_store_relaxed(&pg->sampled, 1);
        nd_store_release(&sl->key, v.addr);
        nd_prof_busy = 0;
        return;
    }
    nd_add_relaxed(&nd_prof_drops, 1);
    nd_prof_busy = 0;
}

void nd_prof_forget(void *p, nd_page *pg)
{
    nd_store_relaxed(&pg->sampled, 0);
    if (nd_prof_live_tab == NULL)
        return;
    uintptr_t a = (uintptr_t)p;
    uint32_t h = nd_prof_slot_hash(a);
    for (uint32_t probe = 0; probe < ND_PROF_PROBES; probe++) {
        nd_prof_slot *sl = &nd_prof_live_tab[(h + probe) & (ND_PROF_LIVE - 1)];
        uintptr_t k = nd_load_acquire(&sl->key);
        if (k == ND_PROF_EMPTY)
            return;
        if (k != a)
            continue;
        int64_t bytes = (int64_t)sl->v.bytes;
        if (__atomic_compare_exchange_n(&sl->key, &k, ND_PROF_TOMB, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            nd_add_relaxed(&nd_prof_live_est, -bytes);
        return;
    }
}

/* A seqlock reader: the copy races with writers by design (checked by seq). */
__attribute__((no_sanitize("thread")))
bool nd_prof_live_copy(size_t i, nd_prof_live *out)
{
    if (nd_prof_live_tab == NULL || i >= ND_PROF_LIVE)
        return false;
    nd_prof_slot *sl = &nd_prof_live_tab[i];
    uint32_t s1 = nd_load_acquire(&sl->seq);
    uintptr_t k = nd_load_acquire(&sl->key);
    if ((s1 & 1) || k == ND_PROF_EMPTY || k == ND_PROF_TOMB || k == ND_PROF_BUSY)
        return false;
    __builtin_memcpy(out, (const void *)&sl->v, sizeof *out);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return nd_load_relaxed(&sl->seq) == s1 && nd_load_relaxed(&sl->key) == k && out->addr == k;
}
