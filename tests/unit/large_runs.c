/*
 * large_runs.c - unit tests of secure=1's choice of a run for a large
 * block (large.c: guard pages). nd_large_pick weighs every start of a
 * segment at once with masks; here it is held to the rule it implements,
 * written start by start, on random segments. The aligned churn below
 * (alignloop's near rows) runs under secure=1 (the test's environment)
 * against the debug core: the pools' invariants (nd_large_is_valid,
 * guard_ends included: segment.h) hold after every call, and every
 * block's next OS page is its guard.
 *
 * The shards of a pool (large.h): a thread frees a large block without
 * waiting for the lock of the block's shard (a free while another thread
 * holds it is deferred, nd_large_defer, and given back by the lock's next
 * taker), and threads on CPUs of different shards take their blocks from
 * different shards; a block that leaves its pool to become huge leaves
 * its own shard.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "counters.h"
#include "large.h"
#include "lock.h"
#include "nodal.h"
#include "node.h"
#include "os.h"
#include "segment.h"
#include "topo.h"

/* The active gauge as a report reads it: with what the large pools hold
   back of it (large.c: gauge_active). */
static size_t active_now(void)
{
    return nd_load_relaxed(&nd_gauge.active) + (size_t)nd_large_gauge_pending();
}

/* The rule, one start at a time (large.h: nd_large_pick). */
static unsigned pick_by_hand(uint64_t free, uint64_t guarded, unsigned k, unsigned step, unsigned *at,
                             unsigned *len)
{
    unsigned best = 3, most = step > 1 ? k : 2 * k;
    for (unsigned i = step; i + k <= 64; i += step) {
        bool fits = true;
        for (unsigned c = i; c < i + k; c++)
            fits &= (free >> c & 1) != 0;
        if (!fits)
            continue;
        unsigned e = i;   /* the first guard from i */
        while (e < 64 && (guarded >> e & 1) == 0)
            e++;
        bool reach = e < 64 && e + 1 >= i + k && e < i + most;
        for (unsigned c = i; reach && c <= e; c++)
            reach &= (free >> c & 1) != 0;
        if (reach) {
            *at = i;
            *len = e - i + 1;
            return 0;
        }
        bool inside = false;
        for (unsigned c = i; c + 1 < i + k; c++)
            inside |= (guarded >> c & 1) != 0;
        unsigned cost = inside + ((guarded >> (i + k - 1) & 1) == 0);
        if (cost < best) {
            best = cost;
            *at = i;
            *len = k;
        }
    }
    return best;
}

/* Random segments: free chunks in runs (blocks of 1-8 chunks taken), guards
   at the ends of some chunks (the blocks freed there left them). */
static void secure_runs_need_the_fewest_mprotect_calls_and_start_lowest(void)
{
    struct nd_rng r = nd_rng_for(1);
    static const unsigned steps[] = { 1, 1, 1, 2, 4, 8, 16 };
    int zero = 0, one = 0, two = 0, none = 0;
    for (int t = 0; t < 200000; t++) {
        uint64_t free = 0, guarded = 0;
        for (unsigned c = 1; c < 64;) {
            unsigned n = 1 + (unsigned)nd_rng_below(&r, 8);
            bool taken = nd_rng_below(&r, 3) == 0;
            for (unsigned j = c; j < c + n && j < 64; j++)
                free |= (uint64_t)!taken << j;
            if (nd_rng_below(&r, 2) == 0 && c + n - 1 < 64)
                guarded |= (uint64_t)1 << (c + n - 1);
            c += n;
        }
        if (nd_rng_below(&r, 4) == 0)
            guarded |= nd_rng_next(&r) & nd_rng_next(&r) & ~(uint64_t)1;
        unsigned step = steps[nd_rng_below(&r, sizeof steps / sizeof steps[0])];
        unsigned k = step > 1 ? step * (1 + (unsigned)nd_rng_below(&r, 2)) : 1 + (unsigned)nd_rng_below(&r, 12);
        unsigned at = 99, len = 99, want_at = 99, want_len = 99;
        unsigned cost = nd_large_pick(free, guarded, k, step, &at, &len);
        unsigned want = pick_by_hand(free, guarded, k, step, &want_at, &want_len);
        EXPECT(cost == want && at == want_at && len == want_len,
               "free %#llx guarded %#llx, k %u step %u: a run of cost %u at chunk %u of %u chunks, as the "
               "start-by-start rule gives; nd_large_pick gave cost %u at %u of %u",
               (unsigned long long)free, (unsigned long long)guarded, k, step, want, want_at, want_len, cost, at,
               len);
        zero += want == 0;
        one += want == 1;
        two += want == 2;
        none += want == 3;
    }
    printf("note: runs of cost 0 / 1 / 2 / none: %d / %d / %d / %d\n", zero, one, two, none);
    EXPECT(zero > 1000 && one > 1000 && two > 1000 && none > 1000,
           "the random segments to reach every cost (0, 1, 2 and no run) a thousand times at least: %d, %d, %d, %d",
           zero, one, two, none);
}

/* alignloop's near rows under secure=1: blocks of [a/2, 2a] bytes aligned
   to a (64 KiB-1 MiB), 8 slots, a random one freed and refilled a call. */
static void secure_aligned_blocks_keep_their_guards_and_the_pools_valid(void)
{
    if (nd_seg_guard == 0)
        SKIP("needs NODAL_OPTIONS=secure=1 (the test's environment in CMake)");
    struct nd_rng r = nd_rng_for(2);
    static const size_t aligns[] = { 64u << 10, 256u << 10, 1u << 20 };
    size_t ps = nd_os_page_size();
    for (unsigned a = 0; a < 3; a++) {
        size_t align = aligns[a];
        unsigned char *slot[8] = { NULL };
        for (int call = 0; call < 4000; call++) {
            int k = (int)nd_rng_below(&r, 8);
            nodal_free(slot[k]);
            size_t size = align / 2 + (size_t)nd_rng_below(&r, align * 3 / 2 + 1);
            unsigned char *p;
            if (call & 1) {
                void *q = NULL;
                p = nodal_posix_memalign(&q, align, size) == 0 ? q : NULL;
            } else {
                size = (size + align - 1) / align * align;
                p = nodal_aligned_alloc(align, size);
            }
            slot[k] = p;
            EXPECT(p != NULL && ((uintptr_t)p & (align - 1)) == 0, "block %d of %zu B aligned to %zu: %p", call,
                   size, align, (void *)p);
            size_t usable = nodal_usable_size(p);
            p[0] = 1;
            p[usable - 1] = 2;
            nd_segment *s = nd_seg_base(p);
            if (s->kind == ND_SEG_LARGE) {
                size_t g = (size_t)(p + usable - (unsigned char *)s) / ps;
                EXPECT(usable % ps == 0 && nd_seg_guarded(s, g),
                       "large block %d (%zu B usable at %p) to be followed by its guard page (OS page %zu)", call,
                       usable, (void *)p, g);
            }
            if (call % 16 == 0)
                EXPECT(nd_large_is_valid(), "the large pools to be valid after call %d at alignment %zu", call,
                       align);
        }
        for (int k = 0; k < 8; k++)
            nodal_free(slot[k]);
        EXPECT(nd_large_is_valid(), "the large pools to be valid once the blocks aligned to %zu are freed", align);
    }
}

/* A node-bound large block's run is populated with its pool's lock
   released (nd_large_commit), its guard page set after (secure=1): the
   pools' checker, run meanwhile by another thread's maintenance, took the
   block without its guard for a broken pool (the fuzz tier's hand-over
   fuzzer under secure=1 with debug assertions: "nd_large_is_valid()",
   thread.c:513, 4 of 6 runs of seed 197137444). The hook runs the checker
   in that window. */
static int commit_looks, commit_valid;

static void check_during_commit(void)
{
    commit_looks++;
    commit_valid += nd_large_is_valid();
}

static void a_bound_block_being_populated_leaves_the_pools_valid(void)
{
    if (nd_seg_guard == 0)
        SKIP("needs NODAL_OPTIONS=secure=1 (the test's environment in CMake)");
    nodal_free(nodal_malloc(1));   /* start-up: the topology */
    int node = nd_topo.mem_ids[0];
    nd_large_commit_hook = check_during_commit;
    void *p[4];
    for (int i = 0; i < 4; i++)
        p[i] = nodal_malloc_node((size_t)(200 + 150 * i) << 10, node);
    nd_large_commit_hook = NULL;
    for (int i = 0; i < 4; i++) {
        EXPECT(p[i] != NULL, "a node-bound block of %d KiB on node %d", 200 + 150 * i, node);
        nodal_free(p[i]);
    }
    if (commit_looks == 0)
        SKIP("no node-bound run was populated (the blocks came from committed chunks)");
    EXPECT(commit_valid == commit_looks, "the large pools valid while a node-bound run is populated: %d of %d looks",
           commit_valid, commit_looks);
    EXPECT(nd_large_is_valid(), "the large pools valid after");
}

/* The freeing thread, and the test's hand-over with it (a pthread mutex
   and condition: nothing of nodal's). */
static pthread_mutex_t hand_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t  hand_cv = PTHREAD_COND_INITIALIZER;
static int   hand_go, hand_done;
static void *hand_block;

static void *free_when_told(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&hand_mu);
    while (!hand_go)
        pthread_cond_wait(&hand_cv, &hand_mu);
    pthread_mutex_unlock(&hand_mu);
    nodal_free(hand_block);
    pthread_mutex_lock(&hand_mu);
    hand_done = 1;
    pthread_cond_broadcast(&hand_cv);
    pthread_mutex_unlock(&hand_mu);
    return NULL;
}

/* A thread frees a large block while the test holds the lock of the
   block's shard: the free returns without the lock (on main 39094ac it
   waited for it: this case then fails after its 60 s, the thread released
   only then), the block still counts as active until the shard's next
   lock, and nodal_collect gives it back. The wait is the failure's only:
   a free that does not need the lock returns whatever the timing. */
static void a_large_free_does_not_wait_for_its_shards_lock(void)
{
    size_t size = (size_t)300 << 10;   /* 5 chunks, not of its whole run: no CPU's cache takes it */
    hand_block = nodal_malloc(size);
    EXPECT(hand_block != NULL, "a large block of %zu bytes", size);
    size_t bytes = nodal_malloc_usable_size(hand_block);
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, free_when_told, NULL) == 0, "a thread");
    nd_lock_t *l = nd_large_lock_of(hand_block);
    nd_lock(l);
    size_t before = active_now();
    pthread_mutex_lock(&hand_mu);
    hand_go = 1;
    pthread_cond_broadcast(&hand_cv);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 60;
    while (!hand_done && pthread_cond_timedwait(&hand_cv, &hand_mu, &until) == 0)
        ;
    int done = hand_done;
    pthread_mutex_unlock(&hand_mu);
    size_t held = active_now();
    nd_unlock(l);
    pthread_join(t, NULL);
    EXPECT(done, "the free of a block of %zu bytes returned while its shard's lock was held", bytes);
    EXPECT(held == before, "the deferred block still active while the lock is held: %zu, was %zu", held, before);
    EXPECT(nd_large_is_valid(), "the large pools valid with a deferred free");
    nodal_collect(1);
    size_t after = active_now();
    EXPECT(after + bytes <= before, "the deferred block given back by nodal_collect: active %zu, was %zu (%zu bytes)",
           after, before, bytes);
    EXPECT(nd_large_is_valid(), "the large pools valid after");
}

/* Runs the calling thread on CPU c only; false when it may not. */
static bool run_on(int c)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(c, &set);
    return sched_setaffinity(0, sizeof set, &set) == 0 && sched_getcpu() == c;
}

/* On two CPUs of different shards (CPU modulo ND_LARGE_SHARDS), the same
   thread's large blocks come from two shards, each with its own lock (on
   main 39094ac: one pool, one lock). */
static void threads_on_cpus_of_two_shards_take_blocks_from_two_shards(void)
{
    cpu_set_t was;
    EXPECT(sched_getaffinity(0, sizeof was, &was) == 0, "the thread's CPUs");
    int a = -1, b = -1;
    for (int c = 0; c < CPU_SETSIZE && b < 0; c++)
        if (CPU_ISSET(c, &was)) {
            if (a < 0)
                a = c;
            else if (ND_LARGE_SHARDS == 1 || c % ND_LARGE_SHARDS != a % ND_LARGE_SHARDS)
                b = c;   /* (one shard: any other CPU, whose blocks then share its lock) */
        }
    if (b < 0)
        SKIP("needs two CPUs of different shards (CPU modulo %d)", ND_LARGE_SHARDS);
    if (!run_on(a))
        SKIP("cannot run on CPU %d", a);
    if (nd_os_current_cpu_fast() != a)
        SKIP("no restartable-sequences CPU number (shard 0's blocks only)");
    void *p = nodal_malloc((size_t)300 << 10);
    if (!run_on(b))
        SKIP("cannot run on CPU %d", b);
    void *q = nodal_malloc((size_t)300 << 10);
    sched_setaffinity(0, sizeof was, &was);
    EXPECT(p != NULL && q != NULL, "two large blocks");
    EXPECT(nd_large_lock_of(p) != nd_large_lock_of(q),
           "blocks asked for on CPU %d and on CPU %d come from shards of their own locks", a, b);
    nodal_free(p);
    nodal_free(q);
    nodal_collect(1);
    EXPECT(nd_large_is_valid(), "the large pools valid");
}

/* On a CPU of a shard other than the first (CPU modulo ND_LARGE_SHARDS),
   a block alone in its segment that realloc grows past 1 MiB becomes a
   huge block where it is (huge.h: nd_huge_from_large), its segment taken
   off the list of its own shard under that shard's lock (nd_large_leave):
   the pools stay valid, the segment in no shard's list. When the leave
   took the first shard's lock and list (as merged from h53l onto main
   b76e3b4 before this fix), the first shard's list lost a segment it
   never held and the block's shard kept a huge segment: the checker
   fails. */
static void a_block_of_another_shard_grown_past_1_mib_leaves_its_own_shard(void)
{
    cpu_set_t was;
    EXPECT(sched_getaffinity(0, sizeof was, &was) == 0, "the thread's CPUs");
    int c = -1;
    for (int i = 0; i < CPU_SETSIZE && c < 0; i++)
        if (CPU_ISSET(i, &was) && i % ND_LARGE_SHARDS != 0)
            c = i;
    if (c < 0)
        SKIP("needs a CPU of a shard other than the first (CPU modulo %d)", ND_LARGE_SHARDS);
    if (!run_on(c))
        SKIP("cannot run on CPU %d", c);
    if (nd_os_current_cpu_fast() != c)
        SKIP("no restartable-sequences CPU number (shard 0's blocks only)");
    size_t from0 = nd_load_relaxed(&nd_gauge.huge_from_large);
    size_t size = (size_t)600 << 10;
    unsigned char *p = nodal_malloc(size);
    EXPECT(p != NULL, "a large block of %zu bytes", size);
    nd_segment *s = nd_seg_of(p);
    EXPECT(s != NULL && s->kind == ND_SEG_LARGE && s->shard == (unsigned)c % ND_LARGE_SHARDS && s->used_pages == 1,
           "the block alone in a large segment of shard %d (CPU %d)", c % ND_LARGE_SHARDS, c);
    memset(p, 0x5a, size);
    size_t big = (size_t)2 << 20;
    unsigned char *q = nodal_realloc(p, big);
    sched_setaffinity(0, sizeof was, &was);
    EXPECT(q != NULL, "the block grown to %zu bytes", big);
    EXPECT(q == p && nd_load_relaxed(&nd_gauge.huge_from_large) - from0 == 1,
           "the block grown where it was into a huge block (at %p, found at %p; huge_from_large +%zu)", (void *)p,
           (void *)q, nd_load_relaxed(&nd_gauge.huge_from_large) - from0);
    EXPECT(q[0] == 0x5a && q[size - 1] == 0x5a, "its bytes kept");
    EXPECT(nd_large_is_valid(), "the large pools valid without its segment (every shard's list and count)");
    nodal_free(q);
    nodal_collect(1);
    EXPECT(nd_large_is_valid(), "the large pools valid after its free");
}

/* A thread's free of a block of its own CPU's shard, when the shard's
   stack of deferred frees is empty and the block is not its segment's
   last, takes no lock: the block is deferred (still active, flagged
   in_full) until the shard's next lock. The next free, finding the stack
   in use, takes the lock and gives both back; the free of a segment's
   last block gives it back at once (no segment waits on the stack to be
   emptied). On main b76e3b4, and with h53l's trylock at every free of its
   own shard, the first free gave its block back at once: the first check
   fails. */
static void a_free_of_its_own_shards_block_waits_for_the_shards_next_lock(void)
{
    cpu_set_t was;
    EXPECT(sched_getaffinity(0, sizeof was, &was) == 0, "the thread's CPUs");
    int c = -1;
    for (int i = 0; i < CPU_SETSIZE && c < 0; i++)
        if (CPU_ISSET(i, &was))
            c = i;
    if (c < 0 || !run_on(c))
        SKIP("cannot run on one CPU");
    if (nd_os_current_cpu_fast() != c)
        SKIP("no restartable-sequences CPU number");
    size_t size = (size_t)300 << 10;   /* 5 chunks, not of its whole run: no CPU's cache takes it */
    void *p[3];
    for (int i = 0; i < 3; i++) {
        p[i] = nodal_malloc(size);
        EXPECT(p[i] != NULL, "a large block of %zu bytes", size);
    }
    nd_segment *s = nd_seg_base(p[0]);
    EXPECT(nd_seg_base(p[1]) == s && nd_seg_base(p[2]) == s && s->used_pages == 3,
           "the three blocks alone in one segment (%u blocks)", s->used_pages);
    size_t bytes = nodal_malloc_usable_size(p[0]);
    size_t a0 = active_now();
    nodal_free(p[0]);
    size_t a1 = active_now();
    nodal_free(p[1]);
    size_t a2 = active_now();
    unsigned used = s->used_pages;
    nodal_free(p[2]);
    size_t a3 = active_now();
    sched_setaffinity(0, sizeof was, &was);
    EXPECT(a1 == a0, "the first free deferred (active %zu, was %zu)", a1, a0);
    EXPECT(a2 + 2 * bytes == a0 && used == 1, "the second free to give both back (active %zu, was %zu, %zu bytes "
           "each; %u blocks left)", a2, a0, bytes, used);
    EXPECT(a3 + bytes == a2, "the last block's free to give it back at once (active %zu, was %zu)", a3, a2);
    EXPECT(nd_large_is_valid(), "the large pools valid");
    nodal_collect(1);
    EXPECT(nd_large_is_valid(), "the large pools valid after nodal_collect");
}

/* Two CPUs of different shards (CPU modulo ND_LARGE_SHARDS), the first
   the calling thread may run on: false (the case skips) when there are
   none, or the thread cannot run on them, or has no rseq CPU number. */
static bool two_shards(cpu_set_t *was, int *a, int *b)
{
    if (ND_LARGE_SHARDS == 1 || sched_getaffinity(0, sizeof *was, was) != 0)
        return false;
    *a = *b = -1;
    for (int c = 0; c < CPU_SETSIZE && *b < 0; c++)
        if (CPU_ISSET(c, was)) {
            if (*a < 0)
                *a = c;
            else if (c % ND_LARGE_SHARDS != *a % ND_LARGE_SHARDS)
                *b = c;
        }
    return *b >= 0 && run_on(*a) && nd_os_current_cpu_fast() == *a;
}

/* Bytes of a block of k chunks that no CPU's cache keeps (not its whole
   run: large.h). */
static size_t chunks_less_a_page(unsigned k) { return ((size_t)k << ND_CHUNK_SHIFT) - 4096; }

/* Five blocks on the calling thread's CPU, four of 15 chunks and one of
   3: one segment of its shard, full. */
static nd_segment *fill_one_segment(void *x[5])
{
    for (int i = 0; i < 5; i++) {
        x[i] = nodal_malloc(chunks_less_a_page(i < 4 ? 15 : 3));
        EXPECT(x[i] != NULL && nd_seg_base(x[i]) == nd_seg_base(x[0]), "block %d in one segment", i);
    }
    nd_segment *s = nd_seg_base(x[0]);
    EXPECT(s->free_mask == 0, "the segment full");
    return s;
}

/* Nine blocks: x[0..4] on CPU a (four of 15 chunks and one of 3: shard
   a's segment full), x[5..8] on CPU b (four of 15: shard b's segment with
   3 free chunks); written through when `touch`. The thread is left on
   CPU b. */
static void fill_two_shards(int a, int b, void *x[9], bool touch)
{
    for (int i = 0; i < 9; i++) {
        if (i == 0 || i == 5)
            EXPECT(run_on(i == 0 ? a : b), "the thread on CPU %d", i == 0 ? a : b);
        x[i] = nodal_malloc(chunks_less_a_page(i == 4 ? 3 : 15));
        EXPECT(x[i] != NULL && nd_seg_base(x[i]) == nd_seg_base(x[i < 5 ? 0 : 5]), "block %d in its shard's segment", i);
        if (touch)
            memset(x[i], 1, chunks_less_a_page(i == 4 ? 3 : 15));
    }
}

/* A shard with no free run that fits takes another shard's free run, not
   resident (purged by nodal_collect), before it maps a second segment:
   the shards together hold no more segments than one pool
   (nd_large_borrow). Shard a's segment is full; shard b's full but for 3
   chunks, which the purge leaves without memory; on CPU a a block of 3
   chunks lands in those 3. On branch h57l (e24c3bd: another shard's
   resident runs only) it got a new segment; one pool (main 5f90bfb) put
   it there too. */
static void a_shard_with_no_room_takes_another_shards_free_run_before_a_new_segment(void)
{
    cpu_set_t was;
    int a, b;
    if (!two_shards(&was, &a, &b)) {
        sched_setaffinity(0, sizeof was, &was);
        SKIP("needs two CPUs of different shards (CPU modulo %d) and their rseq CPU number", ND_LARGE_SHARDS);
    }
    void *x[10];
    fill_two_shards(a, b, x, false);
    nd_segment *sa = nd_seg_base(x[0]), *s = nd_seg_base(x[5]);
    EXPECT(sa != s && sa->free_mask == 0 && sa->shard == (unsigned)a % ND_LARGE_SHARDS, "shard %d's segment full",
           a % ND_LARGE_SHARDS);
    EXPECT(s->shard == (unsigned)b % ND_LARGE_SHARDS && nd_popcount64(s->free_mask) == 3,
           "shard %d's segment with 3 free chunks (%d)", b % ND_LARGE_SHARDS, nd_popcount64(s->free_mask));
    nodal_collect(1);
    EXPECT((s->free_mask & s->committed) == 0, "its free chunks purged (not resident)");
    EXPECT(run_on(a), "the thread on CPU %d", a);
    x[9] = nodal_malloc(chunks_less_a_page(3));
    sched_setaffinity(0, sizeof was, &was);
    EXPECT(x[9] != NULL, "a block of 3 chunks on CPU %d", a);
    EXPECT(nd_seg_base(x[9]) == s, "the block of shard %d's CPU in the free run of shard %d's segment %p, not in a "
           "new segment (%p, shard %u)", a % ND_LARGE_SHARDS, b % ND_LARGE_SHARDS, (void *)s,
           (void *)nd_seg_base(x[9]), nd_seg_base(x[9])->shard);
    EXPECT(nd_large_is_valid(), "the large pools valid");
    for (int i = 0; i < 10; i++)
        nodal_free(x[i]);
    nodal_collect(1);
    EXPECT(nd_large_is_valid(), "the large pools valid after the frees");
}

/* The race of two threads that find no room at once on CPUs of two
   shards, played by one thread: on CPU a, whose shard's segment is full,
   a block of 3 chunks has its shard bring a segment; meanwhile (the
   grow hook, the shard's lock released) a block asked for on CPU b has
   shard b map a segment of its own, 5 of its chunks taken. The block of
   CPU a then takes a free run of that segment (nd_large_recheck), and
   the segment its shard brought goes back to its node's cache unused.
   On main 35b5b2d the block went into the segment its shard brought: two
   segments for 8 chunks of blocks. */
static cpu_set_t grow_was;
static int grow_a, grow_b, grow_calls;
static void *grow_other;
static nd_segment *grow_fresh;

static void bring_another_shards_segment(nd_segment *fresh)
{
    nd_large_grow_hook = NULL;   /* the block below brings one too */
    grow_calls++;
    grow_fresh = fresh;
    if (run_on(grow_b))
        grow_other = nodal_malloc(chunks_less_a_page(5));
    run_on(grow_a);
}

static void a_segment_another_shard_brought_meanwhile_serves_a_request_and_the_new_one_goes_back(void)
{
    int a, b;
    if (!two_shards(&grow_was, &a, &b)) {
        sched_setaffinity(0, sizeof grow_was, &grow_was);
        SKIP("needs two CPUs of different shards (CPU modulo %d) and their rseq CPU number", ND_LARGE_SHARDS);
    }
    grow_a = a;
    grow_b = b;
    /* Shard a's segment, full. */
    void *x[5];
    nd_segment *sa = fill_one_segment(x);
    EXPECT(sa->shard == (unsigned)a % ND_LARGE_SHARDS, "shard %d's segment full", a % ND_LARGE_SHARDS);
    nd_node_counts c0, c1;
    nd_node_counts_get(sa->node, false, &c0);
    size_t cached0 = nd_load_relaxed(&nd_gauge.segments_cached);
    nd_large_grow_hook = bring_another_shards_segment;
    void *y = nodal_malloc(chunks_less_a_page(3));
    nd_large_grow_hook = NULL;
    int cpu = sched_getcpu();
    nd_node_counts_get(sa->node, false, &c1);
    size_t cached1 = nd_load_relaxed(&nd_gauge.segments_cached);
    sched_setaffinity(0, sizeof grow_was, &grow_was);
    EXPECT(grow_calls == 1 && grow_fresh != NULL, "shard %d brought a segment (%d times)", a % ND_LARGE_SHARDS,
           grow_calls);
    EXPECT(cpu == a, "the thread back on CPU %d (on %d)", a, cpu);
    EXPECT(grow_other != NULL, "a block of 5 chunks on CPU %d meanwhile", b);
    nd_segment *sb = nd_seg_base(grow_other);
    EXPECT(sb != sa && sb != grow_fresh && sb->shard == (unsigned)b % ND_LARGE_SHARDS,
           "that block in a segment of shard %d's own (%p, shard %u)", b % ND_LARGE_SHARDS, (void *)sb, sb->shard);
    EXPECT(y != NULL, "a block of 3 chunks on CPU %d", a);
    EXPECT(nd_seg_base(y) == sb, "the block of CPU %d in the free run of the segment shard %d brought meanwhile "
           "(%p), not in the one its own shard brought (%p): found in %p", a, b % ND_LARGE_SHARDS, (void *)sb,
           (void *)grow_fresh, (void *)nd_seg_base(y));
    EXPECT(cached1 == cached0 + 1 && c1.cached == c0.cached + 1,
           "the segment shard %d brought given back to its node's cache unused (segments_cached +%zu, cached %zu "
           "-> %zu)", a % ND_LARGE_SHARDS, cached1 - cached0, c0.cached, c1.cached);
    EXPECT(nd_large_is_valid(), "the large pools valid");
    for (int i = 0; i < 5; i++)
        nodal_free(x[i]);
    nodal_free(grow_other);
    nodal_free(y);
    nodal_collect(1);
    EXPECT(nd_large_is_valid(), "the large pools valid after the frees");
}

/* Lending hints (large.c: nd_large_borrow): a borrow that found no run of
   k chunks in a shard is not tried there again, the shard's lock not
   even taken, for k chunks or more, until the shard gives chunks back.
   Shard b's segment has 3 free chunks (not resident: purged), shard a's
   is full. On CPU a a block of 4 chunks finds none in shard b and takes
   a segment of its own; then, while another thread holds shard b's lock,
   a block of 5 chunks on CPU a takes its run in that segment at once
   (without the hint, its borrow of a resident run waits for shard b's
   lock: the helper lets go after 2 s). Once a block of shard b is freed
   (its 15 chunks resident), a block of 15 chunks on CPU a borrows them. */
static nd_lock_t *hint_lock;
static atomic_int hint_held, hint_go;

static void *hold_shard_lock(void *arg)
{
    (void)arg;
    nd_lock(hint_lock);
    atomic_store(&hint_held, 1);
    for (int i = 0; i < 200 && !atomic_load(&hint_go); i++)
        usleep(10000);   /* 2 s at most */
    nd_unlock(hint_lock);
    return NULL;
}

static void a_borrow_that_found_no_run_is_not_tried_again_until_the_lender_gives_chunks_back(void)
{
    cpu_set_t was;
    int a, b;
    if (!two_shards(&was, &a, &b)) {
        sched_setaffinity(0, sizeof was, &was);
        SKIP("needs two CPUs of different shards (CPU modulo %d) and their rseq CPU number", ND_LARGE_SHARDS);
    }
    void *x[9];
    fill_two_shards(a, b, x, true);
    nd_segment *sa = nd_seg_base(x[0]), *sb = nd_seg_base(x[5]);
    EXPECT(sa->free_mask == 0 && nd_popcount64(sb->free_mask) == 3, "shard %d's segment full, shard %d's with 3 "
           "free chunks", a % ND_LARGE_SHARDS, b % ND_LARGE_SHARDS);
    nodal_collect(1);   /* nothing resident free: every cached segment purged too */
    EXPECT(run_on(a), "the thread on CPU %d", a);
    void *y = nodal_malloc(chunks_less_a_page(4));
    nd_segment *sy = y != NULL ? nd_seg_base(y) : NULL;
    EXPECT(sy != NULL && sy != sa && sy != sb && sy->shard == (unsigned)a % ND_LARGE_SHARDS,
           "a block of 4 chunks on CPU %d in a new segment of its shard", a);

    hint_lock = ND_LOCK(large_pool, sb->shard);   /* node 0's plain pool: instance = shard */
    EXPECT(sb->node == 0 && !sb->bound, "shard %d's segment of node 0's plain memory", b % ND_LARGE_SHARDS);
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, hold_shard_lock, NULL) == 0, "pthread_create to work");
    while (!atomic_load(&hint_held))
        usleep(100);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    void *z = nodal_malloc(chunks_less_a_page(5));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    atomic_store(&hint_go, 1);
    pthread_join(t, NULL);
    double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    EXPECT(z != NULL && nd_seg_base(z) == sy, "a block of 5 chunks on CPU %d in its shard's segment", a);
    EXPECT(waited < 1.5, "the block of 5 chunks not to wait for shard %d's lock, which the hint says has no run "
           "(it waited %.2f s)", b % ND_LARGE_SHARDS, waited);

    EXPECT(run_on(b), "the thread on CPU %d", b);
    nodal_free(x[6]);   /* 15 chunks of shard b's segment, resident */
    EXPECT(run_on(a), "the thread on CPU %d", a);
    void *w = nodal_malloc(chunks_less_a_page(15));
    sched_setaffinity(0, sizeof was, &was);
    EXPECT(w != NULL && nd_seg_base(w) == sb, "a block of 15 chunks on CPU %d in the run shard %d gave back (%p), "
           "found in %p", a, b % ND_LARGE_SHARDS, (void *)sb, w != NULL ? (void *)nd_seg_base(w) : NULL);
    EXPECT(nd_large_is_valid(), "the large pools valid");
    for (int i = 0; i < 9; i++)
        if (i != 6)
            nodal_free(x[i]);
    nodal_free(y);
    nodal_free(z);
    nodal_free(w);
    nodal_collect(1);
    EXPECT(nd_large_is_valid(), "the large pools valid after the frees");
}

/* A shard keeps its own spare empty segment and drains only its own
   CPUs' caches, taking no other shard's lock for either (large.c:
   nd_large_emptied, the request's drain). Shard b holds a spare (purged)
   and, in its CPU's cache, a block of 3 whole chunks; while another
   thread holds shard b's lock, a request on CPU a that finds no resident
   run (a borrow from shard b passed: the lending hint from its first
   block) leaves shard b's cached block where it is, and the block's free,
   which empties shard a's segment, keeps that segment as shard a's spare
   at once. On main 7210cbf the request drained shard b's cache (the
   block deferred onto b's stack) and the free waited for b's lock (2 s,
   the helper's timeout) to give back one spare of the two. */
static void a_shard_drains_its_own_cpus_caches_and_keeps_its_own_spare_without_another_shards_lock(void)
{
    cpu_set_t was;
    int a, b;
    if (!two_shards(&was, &a, &b)) {
        sched_setaffinity(0, sizeof was, &was);
        SKIP("needs two CPUs of different shards (CPU modulo %d) and their rseq CPU number", ND_LARGE_SHARDS);
    }
    nodal_collect(1);
    /* Shard b: a full segment e, and a block of 3 whole chunks in a
       second one. */
    EXPECT(run_on(b), "the thread on CPU %d", b);
    void *x[5];
    nd_segment *e = fill_one_segment(x);
    EXPECT(e->shard == (unsigned)b % ND_LARGE_SHARDS, "shard %d's segment full", b % ND_LARGE_SHARDS);
    size_t whole = (size_t)3 << ND_CHUNK_SHIFT;
    void *c = nodal_malloc(whole);
    EXPECT(c != NULL && nd_seg_base(c) != e, "a block of 3 whole chunks in a second segment");
    memset(c, 1, whole);
    for (int i = 0; i < 5; i++)
        nodal_free(x[i]);
    nodal_collect(1);
    EXPECT(e->kind == ND_SEG_LARGE && e->used_pages == 0 && (e->committed & ~(uint64_t)1) == 0,
           "shard %d's segment empty and purged: its spare", b % ND_LARGE_SHARDS);
    /* Shard a: a segment of its own for a block of 5 chunks (a borrow of
       a resident run from shard b finds none: the lending hint). */
    EXPECT(run_on(a), "the thread on CPU %d", a);
    void *y = nodal_malloc(chunks_less_a_page(5));
    nd_segment *s = y != NULL ? nd_seg_base(y) : NULL;
    EXPECT(s != NULL && s != e && s != nd_seg_base(c) && s->shard == (unsigned)a % ND_LARGE_SHARDS,
           "a block of 5 chunks on CPU %d in a new segment of its shard", a);
    EXPECT(run_on(b), "the thread on CPU %d", b);
    nodal_free(c);
    EXPECT(nd_large_cached_bytes() == whole, "the block of 3 whole chunks in CPU %d's cache (%zu bytes cached)", b,
           nd_large_cached_bytes());

    hint_lock = ND_LOCK(large_pool, e->shard);   /* node 0's plain pool: instance = shard */
    EXPECT(e->node == 0 && !e->bound, "shard %d's segment of node 0's plain memory", b % ND_LARGE_SHARDS);
    atomic_store(&hint_held, 0);
    atomic_store(&hint_go, 0);
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, hold_shard_lock, NULL) == 0, "pthread_create to work");
    while (!atomic_load(&hint_held))
        usleep(100);
    EXPECT(run_on(a), "the thread on CPU %d", a);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    void *z = nodal_malloc(chunks_less_a_page(5));   /* no resident run in shard a */
    size_t cached = nd_large_cached_bytes();
    nodal_free(z);
    nodal_free(y);   /* shard a's segment empty */
    clock_gettime(CLOCK_MONOTONIC, &t1);
    atomic_store(&hint_go, 1);
    pthread_join(t, NULL);
    sched_setaffinity(0, sizeof was, &was);
    double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    EXPECT(z != NULL && nd_seg_base(z) == s, "the block of 5 chunks on CPU %d in its shard's segment", a);
    EXPECT(cached == whole, "shard %d's cached block left in its CPU's cache by shard %d's request (%zu bytes "
           "cached)", b % ND_LARGE_SHARDS, a % ND_LARGE_SHARDS, cached);
    EXPECT(waited < 1.5, "the request and the frees on CPU %d not to wait for shard %d's lock (they took %.2f s)", a,
           b % ND_LARGE_SHARDS, waited);
    EXPECT(s->kind == ND_SEG_LARGE && s->used_pages == 0 && s->shard == (unsigned)a % ND_LARGE_SHARDS,
           "shard %d's emptied segment kept as its spare (kind %d, %u blocks)", a % ND_LARGE_SHARDS, (int)s->kind,
           s->used_pages);
    EXPECT(e->kind == ND_SEG_LARGE && e->used_pages == 0 && e->shard == (unsigned)b % ND_LARGE_SHARDS,
           "shard %d's spare kept (kind %d)", b % ND_LARGE_SHARDS, (int)e->kind);
    EXPECT(nd_large_is_valid(), "the large pools valid, one empty segment in each shard");
    nodal_collect(1);
    EXPECT(nd_large_cached_bytes() == 0, "nodal_collect to drain every CPU's cache (%zu bytes cached)",
           nd_large_cached_bytes());
    EXPECT(nd_large_is_valid(), "the large pools valid after nodal_collect");
}

/* A shard's one spare is found without a walk of its segments
   (large.c: pool->spare), and the choice stays the least resident of
   the two: 20 segments of three blocks of 16 chunks on one CPU; the last
   segment's blocks freed (the spare) and purged; then the first
   segment's blocks, written, freed: the purged spare goes back to the
   node, the first segment stays as the spare with its memory. With 1 MiB
   batches at 8 threads the walk to a spare deep in a shard of ~460
   segments was half the time (stop 68). */
static void a_segment_emptied_in_a_long_shard_finds_its_spare_and_keeps_the_more_resident(void)
{
    cpu_set_t was;
    EXPECT(sched_getaffinity(0, sizeof was, &was) == 0, "sched_getaffinity to work");
    int cpu = sched_getcpu();
    EXPECT(cpu >= 0 && run_on(cpu), "the thread on one CPU (one shard)");
    nodal_collect(1);
    enum { SEGS = 20 };
    void *b[SEGS * 3];
    for (int i = 0; i < SEGS * 3; i++) {
        b[i] = nodal_malloc(chunks_less_a_page(16));
        EXPECT(b[i] != NULL, "block %d of 16 chunks", i);
        memset(b[i], 1, chunks_less_a_page(16));
    }
    nd_segment *first = nd_seg_base(b[0]), *last = nd_seg_base(b[SEGS * 3 - 1]);
    EXPECT(first != last && nd_seg_base(b[2]) == first && nd_seg_base(b[SEGS * 3 - 3]) == last,
           "three blocks in the first segment and three in the last");
    for (int i = SEGS * 3 - 3; i < SEGS * 3; i++)
        nodal_free(b[i]);
    nodal_collect(1);
    EXPECT(last->kind == ND_SEG_LARGE && last->used_pages == 0 && (last->committed & ~(uint64_t)1) == 0,
           "the last segment empty and purged: the shard's spare");
    for (int i = 0; i < 3; i++)
        nodal_free(b[i]);
    sched_setaffinity(0, sizeof was, &was);
    EXPECT(first->kind == ND_SEG_LARGE && first->used_pages == 0 && nd_popcount64(first->committed) >= 48,
           "the first segment kept as the spare with its memory (kind %d, %d chunks resident)", (int)first->kind,
           nd_popcount64(first->committed));
    EXPECT(last->kind != ND_SEG_LARGE || last->shard != first->shard || last->used_pages != 0,
           "the purged spare given back to its node (kind %d)", (int)last->kind);
    EXPECT(nd_large_is_valid(), "the large pools valid, the spare one of the shard's empty segments");
    for (int i = 3; i < SEGS * 3 - 3; i++)
        nodal_free(b[i]);
    nodal_collect(1);
    EXPECT(nd_large_is_valid(), "the large pools valid after the frees");
}

/* A shard with no resident run for a block takes a segment its node's
   cache kept with its memory, whose resident chunks hold a run that fits,
   before it faults in a free run of its own (large.c: the fetch before a
   borrow or a fault). Segment A holds a free run of 15 chunks, purged;
   two segments of three blocks of 16 chunks empty, one staying as the
   pool's spare, the other going to the node's cache with its 48 chunks
   resident. Blocks of 15 chunks then take the spare's resident runs (three
   of them), then the cached segment's, and A's purged run stays untouched.
   Before, the fourth went into A's run, whose pages it faulted in while
   the cache held memory that served it. */
static void a_block_with_no_resident_run_takes_a_cached_segments_memory_before_faulting_in_its_own(void)
{
    cpu_set_t was;
    EXPECT(sched_getaffinity(0, sizeof was, &was) == 0, "sched_getaffinity to work");
    int cpu = sched_getcpu();
    EXPECT(cpu >= 0 && run_on(cpu), "the thread on one CPU (one shard)");
    void *a[5], *b[6], *c[4];
    nd_segment *sa = fill_one_segment(a);   /* segment A */
    nodal_free(a[1]);
    nodal_collect(1);   /* its 15 chunks purged, the node's cache too */
    uint64_t hole = sa->free_mask;
    EXPECT(nd_popcount64(hole) == 15 && (hole & sa->committed) == 0, "segment A with a free run of 15 chunks, "
           "not resident (%d free)", nd_popcount64(hole));
    for (int i = 0; i < 6; i++) {
        b[i] = nodal_malloc(chunks_less_a_page(16));
        EXPECT(b[i] != NULL && nd_seg_base(b[i]) != sa, "block %d of 16 chunks in a segment of its own", i);
        memset(b[i], 1, chunks_less_a_page(16));
    }
    nd_segment *s1 = nd_seg_base(b[0]), *s2 = nd_seg_base(b[3]);
    EXPECT(s1 != s2 && nd_seg_base(b[2]) == s1 && nd_seg_base(b[5]) == s2, "two segments of three blocks each");
    for (int i = 0; i < 6; i++)
        nodal_free(b[i]);
    EXPECT((s1->kind == ND_SEG_FREE) != (s2->kind == ND_SEG_FREE), "one of them the pool's spare, the other in the "
           "node's cache (kinds %d, %d)", (int)s1->kind, (int)s2->kind);
    nd_segment *spare = s1->kind == ND_SEG_FREE ? s2 : s1, *cached = s1->kind == ND_SEG_FREE ? s1 : s2;
    EXPECT(nd_popcount64(cached->committed & ~(uint64_t)1) >= 48, "the cached one with its 48 chunks resident (%d)",
           nd_popcount64(cached->committed & ~(uint64_t)1));
    for (int i = 0; i < 4; i++) {
        c[i] = nodal_malloc(chunks_less_a_page(15));
        EXPECT(c[i] != NULL, "block %d of 15 chunks", i);
    }
    sched_setaffinity(0, sizeof was, &was);
    for (int i = 0; i < 3; i++)
        EXPECT(nd_seg_base(c[i]) == spare, "block %d of 15 chunks in the spare's resident runs", i);
    EXPECT(nd_seg_base(c[3]) == cached, "the fourth in the segment the node's cache kept with its memory (%p), "
           "found in %p (segment A %p)", (void *)cached, (void *)nd_seg_base(c[3]), (void *)sa);
    EXPECT(sa->free_mask == hole && (sa->committed & hole) == 0, "segment A's purged run untouched");
    EXPECT(nd_large_is_valid(), "the large pools valid");
    for (int i = 0; i < 4; i++)
        nodal_free(c[i]);
    for (int i = 0; i < 5; i++)
        if (i != 1)
            nodal_free(a[i]);
    nodal_collect(1);
    EXPECT(nd_large_is_valid(), "the large pools valid after the frees");
}

static const struct nd_case cases[] = {
    ND_CASE(secure_runs_need_the_fewest_mprotect_calls_and_start_lowest),
    ND_CASE(secure_aligned_blocks_keep_their_guards_and_the_pools_valid),
    ND_CASE(a_bound_block_being_populated_leaves_the_pools_valid),
    ND_CASE(a_large_free_does_not_wait_for_its_shards_lock),
    ND_CASE(threads_on_cpus_of_two_shards_take_blocks_from_two_shards),
    ND_CASE(a_block_of_another_shard_grown_past_1_mib_leaves_its_own_shard),
    ND_CASE(a_free_of_its_own_shards_block_waits_for_the_shards_next_lock),
    ND_CASE(a_shard_with_no_room_takes_another_shards_free_run_before_a_new_segment),
    ND_CASE(a_shard_drains_its_own_cpus_caches_and_keeps_its_own_spare_without_another_shards_lock),
    ND_CASE(a_segment_emptied_in_a_long_shard_finds_its_spare_and_keeps_the_more_resident),
    ND_CASE(a_segment_another_shard_brought_meanwhile_serves_a_request_and_the_new_one_goes_back),
    ND_CASE(a_borrow_that_found_no_run_is_not_tried_again_until_the_lender_gives_chunks_back),
    ND_CASE(a_block_with_no_resident_run_takes_a_cached_segments_memory_before_faulting_in_its_own),
};
ND_MAIN(cases)
