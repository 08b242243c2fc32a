/*
 * full_node_strict_or_preferred - what happens when the node asked for is
 * full. The test fills the smallest node with memory (a memory-only one if
 * there is a choice) in two fresh processes of itself:
 *
 *   strict (NODAL_OPTIONS unset, the default): allocations for the node
 *     succeed until it is nearly full (at least half of its free memory),
 *     then return NULL with errno ENOMEM - for large and small sizes -, never
 *     a block with a byte on another node (every page checked with
 *     move_pages), and the process is never OOM-killed. Meanwhile plain
 *     malloc and other nodes still work, the statistics count no fallback
 *     pages, and once the blocks are freed the node can be filled again.
 *
 *   preferred (NODAL_OPTIONS=node_fallback=preferred): allocating 64 MiB
 *     more than the node has free never fails and is never OOM-killed; the
 *     blocks taken while the node still had room are on it; the rest spill to
 *     other nodes, and nodal_stats_json reports node_fallback_pages > 0.
 *
 * Filling a node is only safe when it is small and not the only one: the
 * test skips (77) unless some node with memory has at most
 * NODAL_TEST_FILL_LIMIT_MIB (default 1024) MiB free and another node exists.
 * Under numa-vm it runs with e.g. --mem-per-node 512,512,256,96.
 *
 *   full_node_strict_or_preferred [--node N] [-v]
 *   full_node_strict_or_preferred --child strict|preferred --node N   (internal)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nodal.h"
#include "placement.h"

#define MIB ((size_t)1 << 20)

typedef struct blk {
    void *p;
    size_t size;
    int early;       /* taken while the node had plenty of room */
} blk;

static blk *blocks;
static size_t nblocks, cap_blocks;

static void keep(void *p, size_t size, int early)
{
    if (nblocks == cap_blocks) {
        cap_blocks = cap_blocks ? cap_blocks * 2 : 1024;
        blocks = realloc(blocks, cap_blocks * sizeof *blocks);
        if (!blocks)
            pt_die("out of memory for the block list");
    }
    blocks[nblocks++] = (blk){ p, size, early };
}

static void free_kept(void)
{
    for (size_t i = 0; i < nblocks; i++)
        free(blocks[i].p);
    nblocks = 0;
}

static unsigned long long fallback_pages(int *found)
{
    char *json = pt_stats_json();
    unsigned long long v = pt_json_max(json, "node_fallback_pages", found);
    free(json);
    return v;
}

/* A CPU not on `node`, if there is one. */
static int cpu_away_from(int node)
{
    const pt_topo *t = pt_topology();
    for (int c = 0; c < t->ncpunode; c++)
        if (t->cpunode[c] != node)
            return pt_node_get(t->cpunode[c])->cpus[0];
    return pt_node_get(t->cpunode[0])->cpus[0];
}

/* Plain malloc and another node still work while `node` is full. */
static void others_still_work(int node)
{
    const pt_topo *t = pt_topology();
    void *p = malloc(4 * MIB);
    if (!p)
        pt_fail("plain malloc(4 MiB) returned NULL while node %d was full; expected plain "
                "memory to be unaffected", node);
    else
        pt_touch(p, 4 * MIB, 1);
    free(p);
    for (int k = 0; k < t->nmem; k++) {
        int other = t->mem[k];
        if (other == node)
            continue;
        void *q = nodal_malloc_node(2 * MIB, other);
        if (!q) {
            pt_fail("nodal_malloc_node(2 MiB, %d) returned NULL (%s) while node %d was full; "
                    "expected other nodes to be unaffected", other, strerror(errno), node);
            continue;
        }
        pt_touch(q, 2 * MIB, 1);
        pt_batch *b = pt_batch_new();
        pt_batch_add(b, q, 2 * MIB, other, "block for another node while one was full", 0);
        pt_batch_flush(b);
        pt_batch_free(b);
        free(q);
        break;
    }
}

/* Sizes tried in turn: mostly 1 MiB (fills fast), with huge, large and
   class sizes in between so every path meets the full node. */
static const size_t fill_sizes[] = { MIB, MIB, MIB, 8 * MIB, MIB, 200 << 10,
                                     MIB, 30000, MIB, 4000, MIB, 64 };
#define NFILL (sizeof fill_sizes / sizeof fill_sizes[0])

static int child_strict(int node)
{
    long free0 = pt_node_free_kib(node);
    size_t total = 0, limit = (size_t)free0 * 1024 + 64 * MIB;
    int failed[NFILL] = { 0 }, nfailed = 0, found;
    unsigned long nulls = 0;
    pt_batch *b = pt_batch_new();

    pt_info("strict: filling node %d (%ld MiB free) from CPU %d", node, free0 >> 10,
            cpu_away_from(node));
    size_t next = 0;
    for (unsigned long allocs = 0; nfailed < (int)NFILL && total < limit && allocs < 2000000;
         allocs++) {
        while (failed[next % NFILL])
            next++;
        size_t i = next++ % NFILL, size = fill_sizes[i];
        errno = 0;
        void *p = nodal_malloc_node(size, node);
        if (!p) {
            int e = errno;
            nulls++;
            if (e != ENOMEM)
                pt_fail("nodal_malloc_node(%zu, %d) on a full node returned NULL with errno "
                        "%d (%s); expected ENOMEM", size, node, e, strerror(e));
            /* this size is not asked again; smaller ones still are */
            for (size_t j = 0; j < NFILL; j++)
                if (fill_sizes[j] == size)
                    failed[j] = 1;
            nfailed = 0;
            for (size_t j = 0; j < NFILL; j++)
                nfailed += failed[j];
            continue;
        }
        pt_touch(p, size, 0x77);   /* an OOM kill would happen here */
        if (size >= 4096 || nblocks % 256 == 0)
            pt_expect_node_policy(p, size, node, "block on the filling node");
        pt_batch_add(b, p, size, node, "block on the filling node", nblocks);
        keep(p, size, 0);
        total += size;
    }
    pt_batch_flush(b);
    long free_end = pt_node_free_kib(node);
    pt_info("strict: %zu blocks, %.1f MiB on node %d, then %lu NULL results; node %d has "
            "%ld MiB free now", nblocks, total / (double)MIB, node, nulls, node,
            free_end >> 10);
    if (nfailed < (int)NFILL)
        pt_fail("strict: after %.1f MiB (node %d had %ld MiB free) not every size had failed; "
                "expected NULL/ENOMEM once the node is full", total / (double)MIB, node,
                free0 >> 10);
    if (total < (size_t)free0 * 1024 / 2)
        pt_fail("strict: ENOMEM after only %.1f MiB of node %d's %ld MiB free; expected at "
                "least half of the free memory to be usable", total / (double)MIB, node,
                free0 >> 10);
    pt_info("strict: %zu OS pages checked, %zu on another node", pt_batch_pages(b),
            pt_batch_bad_pages(b));
    others_still_work(node);
    unsigned long long fb = fallback_pages(&found);
    if (!found)
        pt_fail("nodal_stats_json has no \"node_fallback_pages\"; expected the key in its "
                "totals");
    else if (fb != 0)
        pt_fail("strict: nodal_stats_json reports node_fallback_pages = %llu; expected 0 "
                "(strict never falls back)", fb);
    /* Once freed, the node is usable again. */
    free_kept();
    nodal_collect(1);
    size_t again = 0, want = (size_t)free0 * 1024 * 2 / 5;
    while (again < want) {
        void *p = nodal_malloc_node(MIB, node);
        if (!p) {
            pt_fail("strict: after freeing everything, nodal_malloc_node(1 MiB, %d) failed "
                    "(%s) at %.1f MiB; expected %.1f MiB to fit again", node, strerror(errno),
                    again / (double)MIB, want / (double)MIB);
            break;
        }
        pt_touch(p, MIB, 1);
        pt_batch_add(b, p, MIB, node, "block after the node was emptied", nblocks);
        keep(p, MIB, 0);
        again += MIB;
    }
    pt_batch_flush(b);
    free_kept();
    pt_batch_free(b);
    return pt_end();
}

static int child_preferred(int node)
{
    long free0 = pt_node_free_kib(node);
    size_t total = 0, goal = (size_t)free0 * 1024 + 64 * MIB;
    size_t early_limit = (size_t)free0 * 1024 / 2;
    int found;

    pt_info("preferred: asking node %d (%ld MiB free) for %zu MiB from CPU %d", node,
            free0 >> 10, goal >> 20, cpu_away_from(node));
    for (unsigned long it = 0; total < goal; it++) {
        size_t size = fill_sizes[it % NFILL];
        errno = 0;
        void *p = nodal_malloc_node(size, node);
        if (!p) {
            pt_fail("preferred: nodal_malloc_node(%zu, %d) returned NULL (%s) after %.1f MiB; "
                    "expected fallback to other nodes, never NULL", size, node,
                    strerror(errno), total / (double)MIB);
            break;
        }
        pt_touch(p, size, 0x55);
        int early = total + size <= early_limit;
        if (early)
            pt_expect_node_policy(p, size, node, "block taken while the node had room");
        keep(p, size, early);
        total += size;
    }
    /* Where did it go? */
    size_t on = 0, off = 0, early_off = 0;
    for (size_t i = 0; i < nblocks; i++) {
        pt_where w;
        if (pt_where_is(blocks[i].p, blocks[i].size, node, &w) != 0)
            pt_die("move_pages: %s", strerror(errno));
        on += w.on_node;
        off += w.elsewhere + w.missing;
        if (blocks[i].early && (w.elsewhere || w.missing)) {
            early_off++;
            if (early_off <= 5)
                pt_fail("preferred: block %zu (%zu B) taken while node %d had room has %zu "
                        "pages elsewhere; expected it on node %d", i, blocks[i].size, node,
                        w.elsewhere + w.missing, node);
        }
    }
    unsigned long long fb = fallback_pages(&found);
    pt_info("preferred: %zu blocks, %.1f MiB: %zu OS pages on node %d, %zu elsewhere; "
            "node_fallback_pages = %llu", nblocks, total / (double)MIB, on, node, off, fb);
    if (off == 0)
        pt_fail("preferred: every page is on node %d although %.1f MiB were asked of its %ld "
                "MiB free; expected some to spill to other nodes (the test's premise)", node,
                total / (double)MIB, free0 >> 10);
    if (!found)
        pt_fail("nodal_stats_json has no \"node_fallback_pages\"; expected the key in its "
                "totals");
    else if (fb == 0)
        pt_fail("preferred: node_fallback_pages = 0 although %zu OS pages are off node %d; "
                "expected the fallback to be counted", off, node);
    free_kept();
    return pt_end();
}

static int run_child(const char *self, const char *mode, int node)
{
    char nodestr[16];
    snprintf(nodestr, sizeof nodestr, "%d", node);
    char *args[] = { (char *)self, "--child", (char *)mode, "--node", nodestr, NULL };
    return pt_run_self(args, strcmp(mode, "strict") ? "node_fallback=preferred" : NULL, mode, "full node");
}

int main(int argc, char **argv)
{
    const char *child = NULL;
    int node = -1, i;
    static char name[96];
    for (i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--child") && i + 1 < argc)
            child = argv[i + 1];
    snprintf(name, sizeof name, "full_node_strict_or_preferred%s%s%s", child ? "[" : "",
             child ? child : "", child ? "]" : "");
    argc = pt_begin(argc, argv, name,
                 child ? "(one mode)"
                       : "a full node gives NULL/ENOMEM (strict, default) or spills to other "
                         "nodes and is counted (preferred)");
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--child") && i + 1 < argc)
            i++;
        else if (!strcmp(argv[i], "--node") && i + 1 < argc)
            node = atoi(argv[++i]);
        else
            pt_die("usage: %s [--node N] [-v]", argv[0]);
    }
    const pt_topo *t = pt_topology();
    if (child) {
        if (pt_pin(cpu_away_from(node)) != 0)
            pt_die("cannot pin: %s", strerror(errno));
        if (!strcmp(child, "strict"))
            return child_strict(node);
        if (!strcmp(child, "preferred"))
            return child_preferred(node);
        pt_die("unknown mode %s", child);
    }

    long limit_mib = getenv("NODAL_TEST_FILL_LIMIT_MIB")
                         ? atol(getenv("NODAL_TEST_FILL_LIMIT_MIB")) : 1024;
    if (node < 0) {
        /* The smallest node with memory, memory-only ones first. */
        long best = -1;
        int best_cpus = 1;
        for (int k = 0; k < t->nmem; k++) {
            const pt_node *n = pt_node_get(t->mem[k]);
            long f = pt_node_free_kib(n->id);
            if (best < 0 || (!n->has_cpus && best_cpus) ||
                (n->has_cpus == best_cpus && f <= best)) {
                best = f;
                best_cpus = n->has_cpus;
                node = n->id;
            }
        }
    }
    const pt_node *target = pt_node_get(node);
    if (!target || !target->has_memory)
        pt_die("node %d has no memory", node);
    long free_mib = pt_node_free_kib(node) >> 10;
    if (t->nmem < 2)
        return pt_skip("only one node with memory: filling it would starve the whole machine "
                       "(run under numa-vm with a small node, e.g. --mem-per-node "
                       "512,512,256,96)");
    if (free_mib > limit_mib)
        return pt_skip("the smallest node (%d) has %ld MiB free, more than "
                       "NODAL_TEST_FILL_LIMIT_MIB=%ld; filling it is not safe here",
                       node, free_mib, limit_mib);
    pt_info("filling node %d (%ld MiB free) in two fresh processes", node, free_mib);
    run_child(argv[0], "strict", node);
    run_child(argv[0], "preferred", node);
    return pt_end();
}
