/*
 * prof.c - the heap profile's samples (see prof.h).
 */
#include "prof.h"

#include "atomic.h"
#include "msg.h"
#include "options.h"
#include "os.h"
#include "tcache.h"
#include "thread.h"


/* The estimated live bytes and the samples taken, as sums of stripes a
   thread adds to by its id (and a free subtracts from its own): a sample
   is taken on one thread and often dropped on another, and one counter
   for all moved its cache line between them at both (Larson -t 2 at
   prof_rate=16384: the live estimate's add was 7 % of the profile's
   record, its subtract part of the forget). */
#define ND_PROF_STRIPES 8
typedef struct nd_aligned(ND_CACHE_LINE) nd_prof_stripe {
    int64_t  live;                    /* estimated live bytes added here (atomic; may be negative) */
    uint64_t samples;                 /* samples taken here (atomic) */
} nd_prof_stripe;

/* The live table's pages ever written (below). */
#define ND_PROF_PAGE 4096u
#define ND_PROF_LIVE_PAGES ((ND_PROF_LIVE * sizeof(nd_prof_slot) + ND_PROF_PAGE - 1) / ND_PROF_PAGE)

/* The memo of stacks (below), x86-64. */
#define ND_PROF_OWN       128     /* nodal's return addresses known */
#define ND_PROF_MEMO      256     /* sets of program stacks memoised */
#define ND_PROF_MEMO_WAYS 4       /* stacks a set */
#define ND_PROF_OWN_DEPTH 24      /* nodal frames at most between sampler and program */
/* Frames an unwind records beyond the site's: nodal's own (the sampler,
   the slow path, malloc: 5-8) and the unwinder's. A path of more nodal
   frames keeps fewer of the program's than ND_PROF_FRAMES. (It was
   ND_PROF_OWN_DEPTH + 8: 256 bytes more of the sampling thread's stack.) */
#define ND_PROF_WALK_OWN  16

typedef struct nd_prof_memo {
    uint32_t  seq;                /* odd while written */
    uint32_t  site;
    uintptr_t s0;                 /* the slot of the program's innermost return address */
    uint32_t  n;                  /* frames (= the site's) */
    uint32_t  delta[ND_PROF_FRAMES];   /* frame k's return address is at s0 + delta[k] */
} nd_prof_memo;

/* The sites are handed out in order (nd_prof_t.nsites, atomic), so a
   program's few stacks fill the first OS pages of their table; their index
   by stack hash is two tables of growing size (below): the first one half
   an OS page of nodal's data that it shares with the first memo entries
   (a mapping of its own was one more page resident), the second mapped at
   start. */
#define ND_PROF_IDX0   512u                       /* entries of the first index table */
#define ND_PROF_IDX1   (2 * ND_PROF_SITES)        /* of the second */

/* The profile's small tables, together: what every sample reads or writes
   of them (the frame sizes, the memo's sets, the stripes, the live table's
   page bits, the tables' addresses and counts: 3.9 KiB) lies on one OS
   page, the first few memo entries on the next. As separate arrays they
   lay on five pages of nodal's data; aligned to a cache line only, on
   three, and the tables' addresses on a fourth (reqresp -t 2, prof=1:
   the pages of nodal's data resident at exit, /proc/self/pagemap). A
   process that never profiles touches none of it. */
typedef struct nd_aligned(4096) nd_prof_small {
    uint64_t       own[ND_PROF_OWN];                     /* address << 16 | frame size (atomic; 0 empty) */
    /* A set's ways name their memo entries (entry + 1; 0: none yet, atomic). */
    uint16_t       memo_ways[ND_PROF_MEMO * ND_PROF_MEMO_WAYS];
    nd_prof_stripe stripes[ND_PROF_STRIPES];
    /* The OS pages of the live table ever written (atomic bits): the
       reports read only those, so its untouched pages never become resident. */
    uint64_t       live_used[(ND_PROF_LIVE_PAGES + 63) / 64];
    nd_prof_site  *site_tab;                             /* the sites (mapped at start) */
    nd_prof_slot  *live_tab;                             /* the live samples' tables (mapped at start) */
    uint64_t       drops;                                /* samples a full table refused (atomic) */
    uint64_t       nunwinds;                             /* of them, stacks the unwinder walked (atomic) */
    uint32_t       memo_used;                            /* memo entries handed out (atomic) */
    uint32_t       nsites;                               /* sites handed out (atomic) */
    uint32_t      *site_idx1;                            /* the sites' second index table (mapped at start) */
    uintptr_t      self_lo, self_hi;                     /* nodal's code, left out of stacks */
    double         inv_rate;                             /* 1 / the rate (set before the rate) */
    bool           fast;         /* the memo of stacks is used (x86-64, an unwinder at hand, nodal a shared library) */
    /* The unwinder is nodal's own (unwind.c), not libgcc's: nothing loads
       libgcc_s, and no walk falls back to backtrace(). */
    bool           own_unwind;
    /* The entries, handed out in order (memo_used), so a program's few
       stacks fill the first OS pages of the pool, not a page each wherever
       their sets lie. The sites' first index table on the page before them. */
    nd_aligned(4096) uint32_t site_idx0[ND_PROF_IDX0];   /* (atomic entries) */
    nd_prof_memo   memo_pool[ND_PROF_MEMO * ND_PROF_MEMO_WAYS];
} nd_prof_small;
static nd_prof_small nd_prof_t;
_Static_assert(__builtin_offsetof(nd_prof_small, site_idx0) == 4096, "the small tables fit one OS page");

static nd_prof_stripe *nd_prof_my_stripe(void)
{
    return &nd_prof_t.stripes[(nd_tid() / ND_TID_STEP) % ND_PROF_STRIPES];
}

static bool nd_prof_own_code(uintptr_t a) { return a >= nd_prof_t.self_lo && a < nd_prof_t.self_hi; }

/* The memo of stacks (below) reads x86-64's frames: return addresses at CFA - 8. */
#if defined(__x86_64__)
#define ND_PROF_FAST_WALK 1
#else
#define ND_PROF_FAST_WALK 0
#endif

/* (The sites' index: ND_PROF_IDX0, above.) */
#define ND_PROF_IDX_WRITING 1u                    /* an index entry: 0 empty, 1 being written, else site + 2 */
#define ND_PROF_IDX_NONE    UINT32_MAX            /* ... or a stack the full table has no site for */

/* Marks the pages of [offset, offset + len), len at most a page (a slot:
   its first and its last page). */
static void nd_prof_touch(uint64_t *used, size_t offset, size_t len)
{
    nd_assert(len > 0 && len <= ND_PROF_PAGE);
    size_t first = offset / ND_PROF_PAGE, last = (offset + len - 1) / ND_PROF_PAGE;
    uint64_t *w = &used[first / 64], bit = (uint64_t)1 << (first % 64);
    if (!(nd_load_relaxed(w) & bit))
        __atomic_fetch_or(w, bit, __ATOMIC_RELEASE);
    if (last != first)
        nd_prof_touch(used, last * ND_PROF_PAGE, 1);
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

/* A forked child: an index entry that a thread of the parent was writing
   when the process was copied (nd_prof_site_of, from its claim, WRITING,
   to its site's number) is written by no thread of the child, and a
   search of the child that met it would yield for ever. It becomes an
   entry of no site (NONE), which searches pass; the site it may have
   claimed stays unwritten (state 0), which the dumps skip. The child's
   one thread, with every lock held, and prof=1 only (init.c). */
void nd_prof_fork_child(void)
{
    for (uint32_t level = 0; level < 2; level++) {
        uint32_t size = level == 0 ? ND_PROF_IDX0 : ND_PROF_IDX1;
        uint32_t *tab = level == 0 ? nd_prof_t.site_idx0 : nd_prof_t.site_idx1;
        for (uint32_t i = 0; tab != NULL && i < size; i++)
            if (nd_load_relaxed(&tab[i]) == ND_PROF_IDX_WRITING)
                nd_store_relaxed(&tab[i], ND_PROF_IDX_NONE);
    }
}

#if ND_DEBUG
/* Tests: every empty entry of the first index table as a thread that a
   fork cut off while it added a site leaves it (WRITING). */
void nd_prof_test_writers_cut_off(void)
{
    for (uint32_t i = 0; i < ND_PROF_IDX0; i++)
        if (nd_load_relaxed(&nd_prof_t.site_idx0[i]) == 0)
            nd_store_relaxed(&nd_prof_t.site_idx0[i], ND_PROF_IDX_WRITING);
}
#endif

size_t nd_prof_site_next(size_t i)
{
    uint32_t n = nd_load_acquire(&nd_prof_t.nsites);
    return i < n && i < ND_PROF_SITES ? i : ND_PROF_SITES;
}
size_t nd_prof_live_next(size_t i) { return nd_prof_next_used(nd_prof_t.live_used, i, ND_PROF_LIVE, sizeof(nd_prof_slot)); }

/* The recursion guard: set while this thread is inside the profiler (the
   unwinder may allocate; a signal handler may allocate in between). */
static __thread uint8_t nd_prof_busy;
/* Bytes of large and huge requests to this thread's next sample, and the
   state of its draws. */
static __thread int64_t  nd_prof_big_left;
static __thread uint64_t nd_prof_big_rng;

nd_hot bool nd_prof_is_on(void) { return nd_load_relaxed(&nd_tcache_prof_rate) != 0; }
int64_t nd_prof_rate(void) { return nd_load_relaxed(&nd_tcache_prof_rate); }
size_t nd_prof_table_bytes(void)
{
    if (!nd_prof_is_on())
        return 0;
    return nd_os_resident(nd_prof_t.site_tab, ND_PROF_SITES * sizeof(nd_prof_site)) +
           nd_os_resident(nd_prof_t.site_idx1, ND_PROF_IDX1 * sizeof(uint32_t)) +
           nd_os_resident(nd_prof_t.live_tab, ND_PROF_LIVE * sizeof(nd_prof_slot)) + nd_os_unwind_resident();
}
const nd_prof_site *nd_prof_sites(void) { return nd_prof_t.site_tab; }
int64_t nd_prof_live_bytes(void)
{
    int64_t sum = 0;
    for (int i = 0; i < ND_PROF_STRIPES; i++)
        sum += nd_load_relaxed(&nd_prof_t.stripes[i].live);
    return sum;
}
uint64_t nd_prof_dropped(void) { return nd_load_relaxed(&nd_prof_t.drops); }
uint64_t nd_prof_samples(void)
{
    uint64_t sum = 0;
    for (int i = 0; i < ND_PROF_STRIPES; i++)
        sum += nd_load_relaxed(&nd_prof_t.stripes[i].samples);
    return sum;
}
uint64_t nd_prof_unwinds(void) { return nd_load_relaxed(&nd_prof_t.nunwinds); }

bool nd_prof_start(int64_t rate)
{
    if (nd_prof_is_on() || rate <= 0)
        return nd_prof_is_on();
    size_t site_bytes = ND_PROF_SITES * sizeof(nd_prof_site);
    size_t live_bytes = ND_PROF_LIVE * sizeof(nd_prof_slot);
    size_t idx_bytes = ND_PROF_IDX1 * sizeof(uint32_t);
    /* Untouched pages of the tables cost address space only. */
    nd_prof_t.site_tab = nd_os_map_aligned(site_bytes, nd_os_page_size());
    nd_prof_t.live_tab = nd_os_map_aligned(live_bytes, nd_os_page_size());
    nd_prof_t.site_idx1 = nd_os_map_aligned(idx_bytes, nd_os_page_size());
    /* Sparse tables: written a page here and there, never 2 MiB around
       them (segment.h: nd_seg_thp_opt_out). */
    if (nd_os_thp_always()) {
        if (nd_prof_t.site_tab != NULL)
            (void)nd_os_advise_nohugepage(nd_prof_t.site_tab, site_bytes);
        if (nd_prof_t.live_tab != NULL)
            (void)nd_os_advise_nohugepage(nd_prof_t.live_tab, live_bytes);
        if (nd_prof_t.site_idx1 != NULL)
            (void)nd_os_advise_nohugepage(nd_prof_t.site_idx1, idx_bytes);
    }
    if (nd_prof_t.site_tab == NULL || nd_prof_t.live_tab == NULL || nd_prof_t.site_idx1 == NULL) {
        nd_warn("prof: cannot map the profile's tables; profiling is off");
        return false;
    }
    bool main;
    if (nd_os_code_range((const void *)(uintptr_t)nd_prof_start, &nd_prof_t.self_lo, &nd_prof_t.self_hi, &main) && main)
        nd_prof_t.self_lo = nd_prof_t.self_hi = 0;   /* linked into the program: nothing is left out */
    nd_prof_busy = 1;
    nd_prof_t.own_unwind = ND_PROF_FAST_WALK && nd_prof_t.self_hi != 0 && nd_os_unwind_own_ok() &&
                         nd_opt(ND_OPT_prof_libgcc) == 0;
    if (nd_prof_t.own_unwind) {
        nd_prof_t.fast = true;
    } else {
        /* libgcc's unwinder: its first call loads libgcc_s (and
           allocates): now, and not inside a sampled malloc. */
        void *frames[4];
        nd_os_backtrace(frames, 4);
        nd_prof_t.fast = ND_PROF_FAST_WALK && nd_prof_t.self_hi != 0 && nd_os_unwind_start();
    }
    nd_prof_busy = 0;
    nd_prof_t.inv_rate = 1 / (double)rate;
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

/* exp(-x) for x >= 0 without libm: x = k ln 2 + r, r in [0, ln 2); the
   series' terms by multiplies (sixteen divisions were most of a record's
   arithmetic). */
static double nd_exp_neg(double x)
{
    static const double inv[17] = { 0, 1, 1 / 2., 1 / 3., 1 / 4., 1 / 5., 1 / 6., 1 / 7., 1 / 8., 1 / 9.,
                                    1 / 10., 1 / 11., 1 / 12., 1 / 13., 1 / 14., 1 / 15., 1 / 16. };
    if (x > 700)
        return 0;
    int k = (int)(x * (1 / 0.6931471805599453));
    double r = x - k * 0.6931471805599453, term = 1, sum = 1;
    for (int i = 1; i <= 16; i++) {
        term *= -r * inv[i];
        sum += term;
    }
    union { double d; uint64_t u; } v = { .d = 1.0 };
    v.u -= (uint64_t)k << 52;   /* 2^-k (k <= 1010) */
    return sum * v.d;
}

/* The requests a sampled one of `usable` bytes stands for, 1 / P(it is
   sampled) = 1 / (1 - exp(-x)), x = usable / rate. Most requests are far
   smaller than the rate (a class's at most 32 KiB against 512 KiB): for x
   < 1/8 its series 1/x + 1/2 + x/12 - x^3/720 + x^5/30240 (the next term
   below 4e-13, against 8 or more), one division (rate / usable; x by the
   inverse of the rate kept at the start), where the probability's series
   and its inverse took two; otherwise through the exponential. */
static double nd_sample_objs(size_t usable)
{
    double rate = (double)nd_load_acquire(&nd_tcache_prof_rate);   /* inv_rate was set before it */
    double u = (double)(int64_t)usable, x = u * nd_prof_t.inv_rate;
    if (x >= 0.125)
        return 1 / (1 - nd_exp_neg(x));
    if (x <= 0)
        return 1;
    double x2 = x * x;
    return rate / u + 0.5 + x * (1 / 12. - x2 * (1 / 720. - x2 * (1 / 30240.)));
}

static uint64_t nd_prof_hash(const uintptr_t *frames, int n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < n; i++)
        h = (h ^ (uint64_t)frames[i]) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
    return h < 2 ? h + 2 : h;
}

/* Does site i hold this stack? */
static bool nd_prof_site_is(uint32_t i, uint64_t h, const uintptr_t *frames, int n)
{
    const nd_prof_site *s = &nd_prof_t.site_tab[i];
    if (s->hash != h || s->nframes != (uint32_t)n)
        return false;
    for (int k = 0; k < n; k++)
        if ((uintptr_t)s->frames[k] != frames[k])
            return false;
    return true;
}

/* The site of this stack, added if new; ND_PROF_SITES when the table is
   full. Its index entry is on the stack hash's probe path in the first
   index table, or, when that path has no room, in the second: entries are
   never emptied, so the first empty entry on the path ends a search. */
static uint32_t nd_prof_site_of(const uintptr_t *frames, int n)
{
    uint64_t h = nd_prof_hash(frames, n);
    for (uint32_t level = 0; level < 2; level++) {
        uint32_t size = level == 0 ? ND_PROF_IDX0 : ND_PROF_IDX1, probes = level == 0 ? 64 : 512;
        uint32_t *tab = level == 0 ? nd_prof_t.site_idx0 : nd_prof_t.site_idx1;
        for (uint32_t probe = 0; probe < probes; probe++) {
            uint32_t *e = &tab[(uint32_t)(h + probe) & (size - 1)];
            uint32_t v = nd_load_acquire(e);
            if (v == 0) {
                uint32_t zero = 0;
                if (__atomic_compare_exchange_n(e, &zero, ND_PROF_IDX_WRITING, false, __ATOMIC_ACQ_REL,
                                                __ATOMIC_ACQUIRE)) {
                    uint32_t i = __atomic_load_n(&nd_prof_t.nsites, __ATOMIC_RELAXED);
                    while (i < ND_PROF_SITES &&
                           !__atomic_compare_exchange_n(&nd_prof_t.nsites, &i, i + 1, false, __ATOMIC_ACQ_REL,
                                                        __ATOMIC_RELAXED))
                        ;
                    if (i >= ND_PROF_SITES) {
                        nd_store_release(e, ND_PROF_IDX_NONE);
                        return ND_PROF_SITES;
                    }
                    nd_prof_site *s = &nd_prof_t.site_tab[i];
                    s->hash = h;
                    s->nframes = (uint32_t)n;
                    for (int k = 0; k < n; k++)
                        s->frames[k] = (void *)frames[k];
                    nd_store_release(&s->state, 2);
                    nd_store_release(e, i + 2);
                    return i;
                }
                v = nd_load_acquire(e);
            }
            while (v == ND_PROF_IDX_WRITING) {   /* another thread adds a site here: a moment */
                nd_os_yield();
                v = nd_load_acquire(e);
            }
            if (v != ND_PROF_IDX_NONE && nd_prof_site_is(v - 2, h, frames, n))
                return v - 2;
        }
    }
    return ND_PROF_SITES;
}

/* The site of return addresses raw[0..n), nodal's own frames (malloc and
   what it called) left out. */
static uint32_t nd_prof_frames_site(const uintptr_t *raw, int n)
{
    int first = 0;
    n = n < 0 ? 0 : n;
    /* nodal's own frames (malloc and what it called) are not the site. */
    while (first < n && nd_prof_own_code(raw[first]))
        first++;
    if (first == n)
        first = 0;
    int keep = n - first < ND_PROF_FRAMES ? n - first : ND_PROF_FRAMES;
    return nd_prof_site_of(raw + first, keep);
}

/* The site of the calling stack through glibc's backtrace(). */
static uint32_t nd_prof_backtrace_site(void)
{
    nd_add_relaxed(&nd_prof_t.nunwinds, 1);
    void *raw[ND_PROF_FRAMES + 16];
    uintptr_t ips[ND_PROF_FRAMES + 16];
    int n = nd_os_backtrace(raw, ND_PROF_FRAMES + 16);
    for (int k = 0; k < n; k++)
        ips[k] = (uintptr_t)raw[k];
    return nd_prof_frames_site(ips, n);
}

/* The site of the stack without the memo: from the walk just made, ips[0..n),
   with nodal's own unwinder; through backtrace() with libgcc's (whose
   frames, not the memo's walk, the sites were always taken from). */
static uint32_t nd_prof_whole_stack_site(const uintptr_t *ips, int n)
{
    return nd_prof_t.own_unwind ? nd_prof_frames_site(ips, n) : nd_prof_backtrace_site();
}

/* ---- the memo of stacks (x86-64) ------------------------------------------
 *
 * libgcc's unwinder reads DWARF tables for every frame (about 1,700
 * instructions a frame, 10-15 frames a sample, two thirds of them nodal's
 * own). Most samples come from stacks seen before, so a sample first tries
 * to recognise its stack from what earlier unwinds learned:
 *
 *   own:  for each return address inside nodal, its frame's size (the
 *         distance between its CFA and its callee's). nodal's functions have
 *         fixed frames (no alloca, no realignment), so with these the
 *         sampler steps from its own frame through nodal's frames to the
 *         program's innermost return address and the stack slot it is in
 *         (s0), reading nothing but those return-address slots. A return
 *         address seen with two sizes is never used (size 0).
 *   memo: the program's stacks seen, by (s0, its return address; four to
 *         a set, so the callers of one wrapper keep theirs): the site,
 *         and where each of its frames' return addresses lies above s0. A
 *         stack is recognised when every one of those slots still holds the
 *         site's return address: the same return addresses at the same
 *         places, the same stack.
 *
 * Any miss (an unknown nodal return address, no memo, a slot that differs)
 * unwinds with libgcc, which refreshes both. Stack reads stay inside the
 * range this thread's last unwind walked ([nd_prof_stk_lo, nd_prof_stk_hi):
 * live stack between the sampler and the outermost frame), so a memo made
 * on another stack (a coroutine's, sigaltstack) is not followed out of the
 * current one. Both tables are lock-free: own entries are one word (the
 * address and the size) set once by compare-and-swap; a memo entry is
 * written under its odd seq (a writer takes it by compare-and-swap, others
 * skip it) and read as a seqlock.
 */
/* (The tables: nd_prof_small, above.) */
static __thread uintptr_t nd_prof_stk_lo, nd_prof_stk_hi;

static uint32_t nd_prof_own_hash(uintptr_t ip)
{
    return (uint32_t)((ip * 0x9e3779b97f4a7c15ull) >> 48);
}

/* The frame size learned for nodal return address ip; 0 if unknown or unusable. */
static uint32_t nd_prof_own_size(uintptr_t ip)
{
    uint32_t h = nd_prof_own_hash(ip);
    for (uint32_t probe = 0; probe < 16; probe++) {
        uint64_t e = nd_load_acquire(&nd_prof_t.own[(h + probe) & (ND_PROF_OWN - 1)]);
        if (e == 0)
            return 0;
        if (e >> 16 == ip)
            return (uint32_t)(e & 0xffff);
    }
    return 0;
}

static void nd_prof_own_learn(uintptr_t ip, uintptr_t size)
{
    if (ip >> 48 != 0)
        return;
    uint64_t want = (uint64_t)ip << 16 | (size < 0x10000 ? size : 0);
    uint32_t h = nd_prof_own_hash(ip);
    for (uint32_t probe = 0; probe < 16; probe++) {
        uint64_t *slot = &nd_prof_t.own[(h + probe) & (ND_PROF_OWN - 1)];
        uint64_t e = nd_load_acquire(slot);
        while (e == 0 && !__atomic_compare_exchange_n(slot, &e, want, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            ;
        if (e == 0 || e == want)
            return;
        if (e >> 16 == ip) {   /* two sizes: a frame that is not fixed; never again */
            __atomic_compare_exchange_n(slot, &e, (uint64_t)ip << 16, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
            return;
        }
    }
}

static uint32_t nd_prof_memo_hash(uintptr_t s0, uintptr_t ip0)
{
    return (uint32_t)(((s0 ^ ip0 * 0xff51afd7ed558ccdull) * 0x9e3779b97f4a7c15ull) >> 40) & (ND_PROF_MEMO - 1);
}

/* The site of the stack whose innermost program return address is at s0,
   if a memo recognises it; ND_PROF_SITES if not. */
__attribute__((no_sanitize("address")))
static uint32_t nd_prof_memo_try(nd_prof_memo *m, uintptr_t s0)
{
    uint32_t seq = nd_load_acquire(&m->seq);
    if ((seq & 1) || nd_load_relaxed(&m->s0) != s0)
        return ND_PROF_SITES;
    uint32_t site = nd_load_relaxed(&m->site), n = nd_load_relaxed(&m->n);
    if (site >= ND_PROF_SITES || n == 0 || n > ND_PROF_FRAMES)
        return ND_PROF_SITES;
    const nd_prof_site *s = &nd_prof_t.site_tab[site];
    if (nd_load_acquire(&s->state) != 2 || s->nframes != n)
        return ND_PROF_SITES;
    for (uint32_t k = 0; k < n; k++) {
        uintptr_t slot = s0 + nd_load_relaxed(&m->delta[k]);
        if (slot + sizeof(uintptr_t) > nd_prof_stk_hi || *(const uintptr_t *)slot != (uintptr_t)s->frames[k])
            return ND_PROF_SITES;
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return nd_load_relaxed(&m->seq) == seq ? site : ND_PROF_SITES;
}

static uint32_t nd_prof_memo_find(uintptr_t s0)
{
    const uint16_t *ways = &nd_prof_t.memo_ways[nd_prof_memo_hash(s0, *(const uintptr_t *)s0) * ND_PROF_MEMO_WAYS];
    for (uint32_t w = 0; w < ND_PROF_MEMO_WAYS; w++) {
        uint16_t e = nd_load_acquire(&ways[w]);
        uint32_t site = e != 0 ? nd_prof_memo_try(&nd_prof_t.memo_pool[e - 1], s0) : ND_PROF_SITES;
        if (site != ND_PROF_SITES)
            return site;
    }
    return ND_PROF_SITES;
}

static void nd_prof_memo_put(uintptr_t s0, uint32_t site, const uintptr_t *slots, uint32_t n)
{
    /* In its set, an empty way (a new entry), else the site's own (the
       sites of one wrapper's callers share a set: each keeps a way if it
       can). */
    uint16_t *ways = &nd_prof_t.memo_ways[nd_prof_memo_hash(s0, *(const uintptr_t *)s0) * ND_PROF_MEMO_WAYS];
    uint32_t w = site % ND_PROF_MEMO_WAYS;
    for (uint32_t x = 0; x < ND_PROF_MEMO_WAYS; x++)
        if (nd_load_relaxed(&ways[x]) == 0) {
            w = x;
            break;
        }
    uint16_t e = nd_load_acquire(&ways[w]);
    bool fresh = e == 0;
    if (fresh) {
        uint32_t k = __atomic_fetch_add(&nd_prof_t.memo_used, 1, __ATOMIC_RELAXED);
        if (k >= ND_PROF_MEMO * ND_PROF_MEMO_WAYS)
            return;   /* (entries lost to races used up the pool) */
        e = (uint16_t)(k + 1);
    }
    nd_prof_memo *m = &nd_prof_t.memo_pool[e - 1];
    uint32_t seq = nd_load_relaxed(&m->seq);
    if ((seq & 1) || !__atomic_compare_exchange_n(&m->seq, &seq, seq + 1, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return;   /* another thread writes it */
    __atomic_thread_fence(__ATOMIC_RELEASE);
    nd_store_relaxed(&m->s0, s0);
    nd_store_relaxed(&m->site, site);
    nd_store_relaxed(&m->n, n);
    for (uint32_t k = 0; k < n; k++)
        nd_store_relaxed(&m->delta[k], (uint32_t)(slots[k] - s0));
    nd_store_release(&m->seq, seq + 2);
    uint16_t none = 0;
    if (fresh)   /* published; another thread's entry there first: this one is lost */
        __atomic_compare_exchange_n(&ways[w], &none, e, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* The site of the calling stack (nodal's frames left out): recognised from
   the memo, else unwound by libgcc (and learned from). Must not be inlined:
   its own frame is where the walk starts. */
__attribute__((no_sanitize("address")))
static nd_noinline uint32_t nd_prof_stack_site(void)
{
    uintptr_t cfa = (uintptr_t)__builtin_frame_address(0) + 2 * sizeof(uintptr_t);
    uintptr_t ip = (uintptr_t)__builtin_return_address(0), slot = 0;
    /* Through nodal's frames with the sizes learned. */
    for (int k = 0; k < ND_PROF_OWN_DEPTH && nd_prof_own_code(ip); k++) {
        uint32_t size = nd_prof_own_size(ip);
        if (size == 0 || cfa + size > nd_prof_stk_hi) {
            slot = 0;
            break;
        }
        cfa += size;
        slot = cfa - sizeof(uintptr_t);
        ip = *(const uintptr_t *)slot;
    }
    if (slot != 0 && !nd_prof_own_code(ip) && slot >= nd_prof_stk_lo) {
        uint32_t site = nd_prof_memo_find(slot);
        if (site != ND_PROF_SITES)
            return site;
    }

    /* Unwind, learn nodal's frame sizes, note the program's slots. Frame
       i's return address ips[i] is at cfas[i] - 8 (x86-64); the frame it
       returns into has cfas[i + 1]. */
    uintptr_t ips[ND_PROF_FRAMES + ND_PROF_WALK_OWN], cfas[ND_PROF_FRAMES + ND_PROF_WALK_OWN];
    int max = (int)(sizeof ips / sizeof ips[0]);
    int n = nd_prof_t.own_unwind ? nd_os_unwind_own(ips, cfas, max) : nd_os_unwind(ips, cfas, max);
    nd_add_relaxed(&nd_prof_t.nunwinds, 1);
    if (n > 1 && ips[n - 1] == 0)   /* the outermost frame's "return address" */
        n--;
    uintptr_t own_cfa = (uintptr_t)__builtin_frame_address(0) + 2 * sizeof(uintptr_t);
    int me = 0;
    while (me < n && cfas[me] != own_cfa)
        me++;
    if (me >= n)   /* unwinder and sampler disagree: no memo */
        return nd_prof_whole_stack_site(ips, n);
    int first = me;
    bool ok = true;
    for (; first < n && nd_prof_own_code(ips[first]); first++) {
        if (*(const uintptr_t *)(cfas[first] - sizeof(uintptr_t)) != ips[first]) {
            ok = false;
            break;
        }
        if (first + 1 < n && cfas[first + 1] > cfas[first])
            nd_prof_own_learn(ips[first], cfas[first + 1] - cfas[first]);
    }
    if (first == n)   /* all nodal's: as backtrace() would */
        return nd_prof_whole_stack_site(ips, n);
    int keep = n - first < ND_PROF_FRAMES ? n - first : ND_PROF_FRAMES;
    uint32_t site = nd_prof_site_of(&ips[first], keep);
    /* The range this unwind read: the live stack from here to the outermost
       frame (the same stack as before when it ends at the same place), or
       to the last frame before a signal frame's interrupted code (whose
       return address is not at CFA - 8, perhaps on another stack). */
    int last = me;
    while (last + 1 < n && cfas[last + 1] > cfas[last] &&
           *(const uintptr_t *)(cfas[last + 1] - sizeof(uintptr_t)) == ips[last + 1])
        last++;
    uintptr_t hi = cfas[last];
    if (nd_prof_stk_hi != hi || own_cfa < nd_prof_stk_lo)
        nd_prof_stk_lo = own_cfa;
    nd_prof_stk_hi = hi;
    if (!ok || site == ND_PROF_SITES)
        return site;
    /* The slots of the program's return addresses, over their CFAs (each
       read once, before it is written: this frame is 1 KiB smaller than
       with arrays of their own, and the walk below it starts that much
       higher on the thread's stack). */
    uintptr_t *slots = &cfas[first];
    for (int k = 0; k < keep; k++) {
        slots[k] = cfas[first + k] - sizeof(uintptr_t);
        if (*(const uintptr_t *)slots[k] != ips[first + k] || slots[k] < slots[0] ||
            slots[k] - slots[0] > UINT32_MAX || slots[k] + sizeof(uintptr_t) > hi)
            return site;   /* not the plain x86-64 layout (a signal frame): no memo */
    }
    nd_prof_memo_put(slots[0], site, slots, (uint32_t)keep);
    return site;
}

static uint32_t nd_prof_slot_hash(uintptr_t a)
{
    return (uint32_t)(((uint64_t)a * 0x9e3779b97f4a7c15ull) >> 40);
}

#define ND_PROF_EMPTY 0u
#define ND_PROF_TOMB  1u
#define ND_PROF_BUSY  2u
/* Slots a record examines: in the last table, and in each of the others.
   A table full up to its next few slots is left for the next one: a
   crowded small table walked whole (64 slots, 64 cache lines) was most
   of a record's cost once a program held 64 live samples, 32 MB or so of
   small blocks at the default rate (Larson -t 1 -k 100000: 1,128
   instructions a record, 200 with a few live samples; now 350;
   callgrind). */
#define ND_PROF_PROBES       256u
#define ND_PROF_PROBES_SMALL 8u

/* The live tables, smallest first (prof.h). */
static const uint32_t nd_prof_level_size[ND_PROF_LIVE_LEVELS] = { 64, 256, 1024, 4096, 16384, 65536 };
static const uint32_t nd_prof_level_base[ND_PROF_LIVE_LEVELS] = { 0, 64, 64 + 256, 64 + 256 + 1024,
                                                                   64 + 256 + 1024 + 4096,
                                                                   64 + 256 + 1024 + 4096 + 16384 };
_Static_assert(64 + 256 + 1024 + 4096 + 16384 + 65536 == ND_PROF_LIVE, "the live tables' sizes add up");

static nd_prof_slot *nd_prof_live_slot(uint32_t level, uint32_t i)
{
    return &nd_prof_t.live_tab[nd_prof_level_base[level] + (i & (nd_prof_level_size[level] - 1))];
}

/* The next slot on the probe path of hash h: up to ND_PROF_PROBES_SMALL
   slots in table *level (ND_PROF_PROBES in the last one), then the next
   table's, from the smallest; NULL past the last table. A caller that is
   done with a table sets *level to the next and *probe to 0. */
static nd_prof_slot *nd_prof_path_next(uint32_t h, uint32_t *level, uint32_t *probe)
{
    while (*level < ND_PROF_LIVE_LEVELS) {
        uint32_t most = *level + 1 < ND_PROF_LIVE_LEVELS ? ND_PROF_PROBES_SMALL : ND_PROF_PROBES;
        if (*probe < most && *probe < nd_prof_level_size[*level])
            return nd_prof_live_slot(*level, h + (*probe)++);
        ++*level;
        *probe = 0;
    }
    return NULL;
}

uint32_t nd_prof_put(void *p, size_t size, size_t usable, int node, bool bound)
{
    if (nd_prof_busy || nd_prof_t.live_tab == NULL)
        return ND_PROF_LIVE;
    nd_prof_busy = 1;
    uint32_t site = nd_prof_t.fast ? nd_prof_stack_site() : nd_prof_backtrace_site();
    nd_prof_stripe *st = nd_prof_my_stripe();
    nd_add_relaxed(&st->samples, 1);
    /* The estimate: this request stands for 1 / P(sampled) requests. The
       conversions are signed ones (the values are below 2^62: sizes are
       those of mappings, objs * size about rate + size, rate at most
       2^30), one instruction each where an unsigned 64-bit
       one is a branch and several (callgrind: 20 or so of a sample's). */
    double objs = nd_sample_objs(usable);
    nd_prof_live v = {
        .addr = (uintptr_t)p, .site = site, .node = (int16_t)node, .bound = bound,
        .tid = nd_tid(), .size = size, .objs = (uint64_t)(int64_t)(objs + 0.5),
        .bytes = (uint64_t)(int64_t)(objs * (double)(int64_t)size + 0.5),
    };
    if (site == ND_PROF_SITES) {
        nd_add_relaxed(&nd_prof_t.drops, 1);
        nd_prof_busy = 0;
        return ND_PROF_LIVE;
    }
    nd_prof_site *s = &nd_prof_t.site_tab[site];
    nd_add_relaxed(&s->samples, 1);
    nd_add_relaxed(&s->alloc_objs, v.objs);
    nd_add_relaxed(&s->alloc_bytes, v.bytes);
    /* Its live slot: the first empty or tombstone on its probe path, in
       the smallest table that has one. */
    uint32_t h = nd_prof_slot_hash(v.addr), level = 0, probe = 0;
    for (nd_prof_slot *sl; (sl = nd_prof_path_next(h, &level, &probe)) != NULL;) {
        uintptr_t k = nd_load_relaxed(&sl->key);
        if (k != ND_PROF_EMPTY && k != ND_PROF_TOMB)
            continue;
        nd_prof_touch(nd_prof_t.live_used, (size_t)(sl - nd_prof_t.live_tab) * sizeof *sl, sizeof *sl);
        if (!__atomic_compare_exchange_n(&sl->key, &k, ND_PROF_BUSY, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            continue;
        nd_add_relaxed(&sl->seq, 1);   /* odd: being written */
        __atomic_thread_fence(__ATOMIC_RELEASE);
        sl->v = v;
        __atomic_fetch_add(&sl->seq, 1, __ATOMIC_RELEASE);
        nd_add_relaxed(&st->live, (int64_t)v.bytes);
        nd_store_release(&sl->key, v.addr);
        nd_prof_busy = 0;
        return (uint32_t)(sl - nd_prof_t.live_tab);
    }
    nd_add_relaxed(&nd_prof_t.drops, 1);
    nd_prof_busy = 0;
    return ND_PROF_LIVE;
}

void nd_prof_record(void *p, nd_page *pg, size_t size, size_t usable, int node, bool bound)
{
    uint32_t slot = nd_prof_put(p, size, usable, node, bound);
    if (slot < ND_PROF_LIVE) {
        pg->prof_slot = slot;
        nd_store_relaxed(&pg->sampled, 1);
    }
}

void nd_prof_forget(void *p, nd_page *pg)
{
    nd_store_relaxed(&pg->sampled, 0);
    nd_prof_drop(p, pg->prof_slot);
}

void nd_prof_drop(void *p, uint32_t slot)
{
    if (nd_prof_t.live_tab == NULL || slot >= ND_PROF_LIVE)
        return;
    /* Its slot, as the record left it in the descriptor or the slab cell:
       no walk of the probe path (whose every probe was another cache line). */
    nd_prof_slot *sl = &nd_prof_t.live_tab[slot];
    uintptr_t k = nd_load_acquire(&sl->key);
    if (k != (uintptr_t)p)
        return;
    int64_t bytes = (int64_t)sl->v.bytes;
    if (__atomic_compare_exchange_n(&sl->key, &k, ND_PROF_TOMB, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        nd_add_relaxed(&nd_prof_my_stripe()->live, -bytes);
}

void nd_prof_drop_block(void *p)
{
    if (nd_prof_t.live_tab == NULL)
        return;
    /* Its probe path, as nd_prof_put walked it: a slot never goes back to
       empty, so an empty one means p was never put further along. */
    uint32_t h = nd_prof_slot_hash((uintptr_t)p), level = 0, probe = 0;
    for (nd_prof_slot *sl; (sl = nd_prof_path_next(h, &level, &probe)) != NULL;) {
        uintptr_t k = nd_load_acquire(&sl->key);
        if (k == ND_PROF_EMPTY)
            return;
        if (k == (uintptr_t)p) {
            nd_prof_drop(p, (uint32_t)(sl - nd_prof_t.live_tab));
            return;
        }
    }
}

/* A seqlock reader: the copy races with writers by design (checked by seq). */
__attribute__((no_sanitize("thread")))
bool nd_prof_live_copy(size_t i, nd_prof_live *out)
{
    if (nd_prof_t.live_tab == NULL || i >= ND_PROF_LIVE)
        return false;
    nd_prof_slot *sl = &nd_prof_t.live_tab[i];
    uint32_t s1 = nd_load_acquire(&sl->seq);
    uintptr_t k = nd_load_acquire(&sl->key);
    if ((s1 & 1) || k == ND_PROF_EMPTY || k == ND_PROF_TOMB || k == ND_PROF_BUSY)
        return false;
    __builtin_memcpy(out, (const void *)&sl->v, sizeof *out);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return nd_load_relaxed(&sl->seq) == s1 && nd_load_relaxed(&sl->key) == k && out->addr == k;
}
