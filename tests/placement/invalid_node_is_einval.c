/*
 * invalid_node_is_einval - every function that takes a node rejects an id
 * that is negative, >= NODAL_MAX_NODES, not present on this machine, or a
 * node without memory (CPU-only), with NULL (or -1) and errno EINVAL, and
 * leaves its input alone: nodal_realloc_node with a bad node keeps the old
 * block valid, on its node and unchanged.
 *
 * Ids tried: -1, -2, INT_MIN, 64, 65, 1000, INT_MAX, the lowest id below 64
 * that is not an online node, and every online node without memory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nodal.h"
#include "placement.h"

static void expect_null_einval(void *p, int e, const char *call, int node)
{
    if (p) {
        pt_fail("%s with node %d returned %p; expected NULL with errno EINVAL", call, node, p);
        free(p);
    } else if (e != EINVAL) {
        pt_fail("%s with node %d returned NULL with errno %d (%s); expected EINVAL", call,
                node, e, strerror(e));
    }
}

static void try_node(int node, const char *why)
{
    const pt_topo *t = pt_topology();
    int good = t->mem[0];
    void *p;
    pt_info("node id %d (%s)", node, why);

    errno = 0;
    p = nodal_malloc_node(64, node);
    expect_null_einval(p, errno, "nodal_malloc_node(64)", node);
    errno = 0;
    p = nodal_malloc_node(5 << 20, node);
    expect_null_einval(p, errno, "nodal_malloc_node(5 MiB)", node);
    errno = 0;
    p = nodal_calloc_node(4, 100, node);
    expect_null_einval(p, errno, "nodal_calloc_node(4, 100)", node);
    errno = 0;
    p = nodal_aligned_alloc_node(4096, 8192, node);
    expect_null_einval(p, errno, "nodal_aligned_alloc_node(4096, 8192)", node);
    errno = 0;
    p = nodal_realloc_node(NULL, 100, node);
    expect_null_einval(p, errno, "nodal_realloc_node(NULL, 100)", node);

    /* A bad node must not disturb a good block. */
    unsigned char *old = nodal_malloc_node(3000, good);
    if (!old)
        pt_die("nodal_malloc_node(3000, %d) failed: %s", good, strerror(errno));
    memset(old, 0xab, 3000);
    errno = 0;
    p = nodal_realloc_node(old, 9000, node);
    expect_null_einval(p, errno, "nodal_realloc_node(block, 9000)", node);
    if (!p) {
        int intact = 1;
        for (int i = 0; i < 3000; i++)
            intact &= old[i] == 0xab;
        if (!intact)
            pt_fail("nodal_realloc_node(block, 9000, %d) failed but changed the old block; "
                    "expected it untouched", node);
        pt_expect_node_policy(old, 3000, good, "block kept after a rejected "
                              "nodal_realloc_node");
        free(old);
    }

    int list[2] = { good, node };
    errno = 0;
    p = nodal_malloc_interleaved(1 << 20, list, 2);
    expect_null_einval(p, errno, "nodal_malloc_interleaved(1 MiB, {good, bad})", node);

    errno = 0;
    int r = nodal_node_has_cpus(node);
    int e = errno;
    const pt_node *nd = node >= 0 && node < PT_MAX_NODES ? pt_node_get(node) : NULL;
    if (nd) {
        /* present but without memory: a real node, so has_cpus answers */
        if (nd->ncpus > 0 && r != 1)
            pt_fail("nodal_node_has_cpus(%d) = %d for a node with CPUs but no memory; "
                    "expected 1", node, r);
        errno = 0;
        r = nodal_node_has_memory(node);
        if (r != 0)
            pt_fail("nodal_node_has_memory(%d) = %d for a node without memory; expected 0",
                    node, r);
    } else {
        if (r != -1 || e != EINVAL)
            pt_fail("nodal_node_has_cpus(%d) = %d (errno %d); expected -1 with EINVAL", node,
                    r, e);
        errno = 0;
        r = nodal_node_has_memory(node);
        e = errno;
        if (r != -1 || e != EINVAL)
            pt_fail("nodal_node_has_memory(%d) = %d (errno %d); expected -1 with EINVAL", node,
                    r, e);
        r = nodal_node_distance(node, good);
        if (r != -1)
            pt_fail("nodal_node_distance(%d, %d) = %d; expected -1", node, good, r);
        r = nodal_node_distance(good, node);
        if (r != -1)
            pt_fail("nodal_node_distance(%d, %d) = %d; expected -1", good, node, r);
    }
}

int main(int argc, char **argv)
{
    argc = pt_begin(argc, argv, "invalid_node_is_einval",
             "node ids that are negative, too large, absent or without memory give NULL and "
             "EINVAL");
    pt_no_args(argc, argv);
    const pt_topo *t = pt_topology();
    static const struct { int id; const char *why; } fixed[] = {
        { -1, "negative" }, { -2, "negative" }, { INT_MIN, "INT_MIN" },
        { 64, "= NODAL_MAX_NODES" }, { 65, "> NODAL_MAX_NODES" }, { 1000, "large" },
        { INT_MAX, "INT_MAX" },
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        try_node(fixed[i].id, fixed[i].why);
    for (int id = 0; id < NODAL_MAX_NODES; id++)
        if (!pt_node_get(id)) {
            try_node(id, "not an online node");
            break;
        }
    int cpu_only = 0;
    for (int i = 0; i < t->nnodes; i++)
        if (!t->node[i].has_memory) {
            try_node(t->node[i].id, "online, CPUs but no memory");
            cpu_only++;
        }
    if (!cpu_only)
        pt_info("no online node without memory here: that case was not exercised");
    return pt_end();
}
