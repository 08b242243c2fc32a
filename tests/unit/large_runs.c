/*
 * large_runs.c - unit tests of secure=1's choice of a run for a large
 * block (large.c: guard pages). nd_large_pick weighs every start of a
 * segment at once with masks; here it is held to the rule it implements,
 * written start by start, on random segments. The aligned churn below
 * (alignloop's near rows) runs under secure=1 (the test's environment)
 * against the debug core: the pools' invariants (nd_large_is_valid,
 * guard_ends included: segment.h) hold after every call, and every
 * block's next OS page is its guard.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "large.h"
#include "nodal.h"
#include "os.h"
#include "segment.h"
#include "topo.h"

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

static const struct nd_case cases[] = {
    ND_CASE(secure_runs_need_the_fewest_mprotect_calls_and_start_lowest),
    ND_CASE(secure_aligned_blocks_keep_their_guards_and_the_pools_valid),
    ND_CASE(a_bound_block_being_populated_leaves_the_pools_valid),
};
ND_MAIN(cases)
