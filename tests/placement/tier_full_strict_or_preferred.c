/*
 * tier_full_strict_or_preferred - what the tier calls do when the tier's
 * node is full, or the tier is at its cap. From the first CPU node, the
 * bandwidth tier's node B (nodal_tier_node) is filled in fresh processes
 * of this program:
 *
 *   strict (NODAL_TIER_BANDWIDTH): 512 KiB blocks succeed until B is
 *     nearly full (at least half of its free memory), then NULL with
 *     errno ENOMEM; every page of every block on B; never OOM-killed.
 *   preferred (NODAL_TIER_BANDWIDTH | NODAL_TIER_PREFERRED): B's free
 *     memory + 64 MiB never fails; every block lies wholly on one node
 *     of the tier's order (nodal_tier_nodes), the first of them on B, at
 *     least half of B's free memory on B, and some blocks on later nodes
 *     (never on a node outside the order); tier_fallbacks > 0.
 *   cap (NODAL_OPTIONS=tier_bandwidth_max=32m, strict): the tier's calls
 *     fail with ENOMEM once 32 MiB of B is mapped (after at least 16 MiB
 *     of blocks, at most 32), while B still has room; the node call on
 *     another node still works; tier_cap_refusals > 0.
 *
 * Skips (77) unless B has at most NODAL_TEST_FILL_LIMIT_MIB (default 1024)
 * MiB free and the order has a second node. run-vm.sh runs it in the
 * "hmat-small" boot (numa-vm --hmat, node 2, the bandwidth node of node 0,
 * at 96 MiB).
 *
 *   tier_full_strict_or_preferred [-v]
 *   tier_full_strict_or_preferred --child strict|preferred|cap   (internal)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nodal.h"
#include "placement.h"

#define MIB ((size_t)1 << 20)
#define BLOCK (512 * 1024)

static void **blocks;
static size_t nblocks, cap_blocks;

static void keep(void *p)
{
    if (nblocks == cap_blocks) {
        cap_blocks = cap_blocks ? cap_blocks * 2 : 1024;
        blocks = realloc(blocks, cap_blocks * sizeof *blocks);
        if (!blocks)
            pt_die("out of memory for the block list");
    }
    blocks[nblocks++] = p;
}

static unsigned long long stat_of(const char *key)
{
    int found = 0;
    char *json = pt_stats_json();
    unsigned long long v = pt_json_max(json, key, &found);
    free(json);
    if (!found)
        pt_fail("nodal_stats_json has no \"%s\"", key);
    return v;
}

/* The node every page of p is on, or -1 if they differ or one is missing. */
static int node_of_all(void *p, size_t size, int guess)
{
    pt_where w;
    if (pt_where_is(p, size, guess, &w) != 0)
        pt_die("move_pages: %s", strerror(errno));
    if (w.elsewhere == 0 && w.missing == 0)
        return guess;
    if (w.first_bad != 0 || w.first_bad_status < 0)
        return -1;
    int other = w.first_bad_status;
    if (pt_where_is(p, size, other, &w) != 0)
        pt_die("move_pages: %s", strerror(errno));
    return w.elsewhere == 0 && w.missing == 0 ? other : -1;
}

static int child_strict(int b)
{
    long free_kib = pt_node_free_kib(b);
    size_t total = 0, limit = (size_t)free_kib * 1024 * 2;
    void *p;
    errno = 0;
    while (total < limit && (p = nodal_malloc_tier(BLOCK, NODAL_TIER_BANDWIDTH)) != NULL) {
        pt_touch(p, BLOCK, 0x11);
        int on = node_of_all(p, BLOCK, b);
        if (on != b)
            pt_fail("strict: block %zu is not wholly on node %d (%d)", nblocks, b, on);
        keep(p);
        total += BLOCK;
        errno = 0;
    }
    if (total >= limit)
        pt_fail("strict: %zu MiB taken from node %d with %ld MiB free; expected NULL before", total / MIB, b,
                free_kib >> 10);
    else if (errno != ENOMEM)
        pt_fail("strict: NULL with errno %d (%s); expected ENOMEM", errno, strerror(errno));
    if (total < (size_t)free_kib * 1024 / 2)
        pt_fail("strict: only %zu MiB before NULL; node %d had %ld MiB free", total / MIB, b, free_kib >> 10);
    pt_info("strict: %zu MiB on node %d (%ld MiB were free), then NULL/ENOMEM", total / MIB, b, free_kib >> 10);
    return pt_end();
}

static int child_preferred(int b)
{
    int order[PT_MAX_NODES];
    int n = nodal_tier_nodes(NODAL_TIER_BANDWIDTH, pt_cpu_node(), order, PT_MAX_NODES);
    long free_kib = pt_node_free_kib(b);
    size_t want = (size_t)free_kib * 1024 + 64 * MIB, total = 0, on_b = 0, later = 0;
    int last_rank = 0;
    while (total < want) {
        void *p = nodal_malloc_tier(BLOCK, NODAL_TIER_BANDWIDTH | NODAL_TIER_PREFERRED);
        if (p == NULL) {
            pt_fail("preferred: NULL (%s) after %zu MiB; expected the next node of the tier", strerror(errno),
                    total / MIB);
            break;
        }
        pt_touch(p, BLOCK, 0x22);
        int on = node_of_all(p, BLOCK, b), rank = -1;
        for (int i = 0; i < n && i < PT_MAX_NODES; i++)
            if (order[i] == on)
                rank = i;
        if (rank < 0)
            pt_fail("preferred: block %zu is on node %d, not wholly on a node of the tier's order", nblocks, on);
        else if (rank == 0)
            on_b += BLOCK;
        else
            later += BLOCK;
        if (rank > last_rank)
            last_rank = rank;
        keep(p);
        total += BLOCK;
    }
    if (on_b < (size_t)free_kib * 1024 / 2)
        pt_fail("preferred: %zu MiB on node %d, which had %ld MiB free; expected at least half", on_b / MIB, b,
                free_kib >> 10);
    if (later == 0)
        pt_fail("preferred: no block on a later node after %zu MiB", total / MIB);
    if (stat_of("tier_fallbacks") == 0)
        pt_fail("preferred: tier_fallbacks is 0; expected the blocks on later nodes counted");
    pt_info("preferred: %zu MiB on node %d, %zu MiB on later nodes (up to rank %d: node %d)", on_b / MIB, b,
            later / MIB, last_rank, order[last_rank]);
    return pt_end();
}

static int child_cap(int b)
{
    size_t total = 0;
    void *p;
    errno = 0;
    while (total < 256 * MIB && (p = nodal_malloc_tier(BLOCK, NODAL_TIER_BANDWIDTH)) != NULL) {
        pt_touch(p, BLOCK, 0x33);
        keep(p);
        total += BLOCK;
        errno = 0;
    }
    if (errno != ENOMEM)
        pt_fail("cap: NULL with errno %d (%s) after %zu MiB; expected ENOMEM", errno, strerror(errno), total / MIB);
    if (total < 16 * MIB || total > 32 * MIB)
        pt_fail("cap: %zu MiB of blocks before NULL; expected 16-32 MiB under tier_bandwidth_max=32m", total / MIB);
    if (pt_node_free_kib(b) < 8 * 1024)
        pt_fail("cap: node %d is nearly full (%ld KiB free); the cap was meant to stop the calls first", b,
                pt_node_free_kib(b));
    if (stat_of("tier_cap_refusals") == 0)
        pt_fail("cap: tier_cap_refusals is 0");
    int other = nodal_tier_node(NODAL_TIER_LATENCY, pt_cpu_node());
    void *q = other == b ? NULL : nodal_malloc_node(4 * MIB, other);
    if (other != b && q == NULL)
        pt_fail("cap: nodal_malloc_node(4 MiB, %d) failed (%s); the cap is the bandwidth tier's only", other,
                strerror(errno));
    free(q);
    pt_info("cap: %zu MiB of blocks on node %d, then NULL/ENOMEM", total / MIB, b);
    return pt_end();
}

static void run_child(const char *self, const char *mode)
{
    char *args[] = { (char *)self, "--child", (char *)mode, NULL };
    pt_run_self(args, strcmp(mode, "cap") ? NULL : "tier_bandwidth_max=32m", mode, "full tier");
}

int main(int argc, char **argv)
{
    const char *child = NULL;
    static char name[96];
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--child") && i + 1 < argc)
            child = argv[i + 1];
    snprintf(name, sizeof name, "tier_full_strict_or_preferred%s%s%s", child ? "[" : "", child ? child : "",
             child ? "]" : "");
    argc = pt_begin(argc, argv, name,
                    child ? "(one mode)"
                          : "a full tier gives NULL/ENOMEM (strict), the next node of its order (preferred), "
                            "and a capped tier refuses beyond its cap");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--child") && i + 1 < argc)
            i++;
        else
            pt_die("usage: %s [-v]", argv[0]);
    }
    const pt_topo *t = pt_topology();
    const pt_node *cn = pt_node_get(t->cpunode[0]);
    if (pt_pin(cn->cpus[0]) != 0)
        pt_die("cannot pin to CPU %d", cn->cpus[0]);
    int b = nodal_tier_node(NODAL_TIER_BANDWIDTH, cn->id);
    if (child) {
        if (!strcmp(child, "strict"))
            return child_strict(b);
        if (!strcmp(child, "preferred"))
            return child_preferred(b);
        if (!strcmp(child, "cap"))
            return child_cap(b);
        pt_die("unknown mode %s", child);
    }
    long limit_mib = getenv("NODAL_TEST_FILL_LIMIT_MIB") ? atol(getenv("NODAL_TEST_FILL_LIMIT_MIB")) : 1024;
    int order[PT_MAX_NODES];
    int n = nodal_tier_nodes(NODAL_TIER_BANDWIDTH, cn->id, order, PT_MAX_NODES);
    long free_mib = pt_node_free_kib(b) >> 10;
    if (n < 2)
        return pt_skip("the bandwidth tier has one node: filling it would starve the machine "
                       "(run under numa-vm --hmat with a small node 2)");
    if (free_mib > limit_mib)
        return pt_skip("the bandwidth node %d has %ld MiB free, more than NODAL_TEST_FILL_LIMIT_MIB=%ld", b,
                       free_mib, limit_mib);
    pt_info("from node %d: bandwidth node %d (%ld MiB free), then node %d", cn->id, b, free_mib, order[1]);
    run_child(argv[0], "strict");
    run_child(argv[0], "preferred");
    run_child(argv[0], "cap");
    return pt_end();
}
