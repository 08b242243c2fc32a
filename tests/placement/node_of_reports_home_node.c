/*
 * node_of_reports_home_node - nodal_node_of(p) returns the node a node
 * block belongs to, for every way of getting one (nodal_malloc_node,
 * nodal_calloc_node, nodal_aligned_alloc_node, nodal_realloc_node,
 * nodal_malloc_local) and every size kind; for a plain malloc block the node
 * the kernel says its first page is on; and -1 for NULL and for pointers
 * nodal did not return (a stack variable, a static variable, a mapping of
 * our own, the middle of an unmapped range). The expected node is always
 * confirmed with move_pages first, so the test checks nodal_node_of against
 * the kernel, not against itself.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "nodal.h"
#include "placement.h"

static pt_batch *batch;
static int static_var;

static void expect_node_of(void *p, size_t size, int node, const char *how)
{
    char what[96];
    if (!p) {
        pt_fail("%s(%zu B, node %d) returned NULL (%s); expected a block", how, size, node,
                strerror(errno));
        return;
    }
    memset(p, 7, size);
    snprintf(what, sizeof what, "%s block", how);
    pt_batch_add(batch, p, size, node, what, 0);
    pt_batch_flush(batch);
    int got = nodal_node_of(p);
    if (got != node)
        pt_fail("nodal_node_of(%s block of %zu B on node %d) = %d; expected %d", how, size,
                node, got, node);
    free(p);
}

int main(int argc, char **argv)
{
    argc = pt_begin(argc, argv, "node_of_reports_home_node",
             "nodal_node_of gives a block's node, the kernel's node for plain blocks, and -1 "
             "for pointers nodal did not return");
    pt_no_args(argc, argv);
    const pt_topo *t = pt_topology();
    batch = pt_batch_new();
    static const size_t sizes[] = { 16, 700, 20000, 128 << 10, 600 << 10, 3 << 20, 9 << 20 };
    for (int k = 0; k < t->nmem; k++) {
        int node = t->mem[k];
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            size_t s = sizes[i];
            expect_node_of(nodal_malloc_node(s, node), s, node, "nodal_malloc_node");
            expect_node_of(nodal_calloc_node(1, s, node), s, node, "nodal_calloc_node");
            expect_node_of(nodal_aligned_alloc_node(4096, (s + 4095) & ~(size_t)4095, node),
                           (s + 4095) & ~(size_t)4095, node, "nodal_aligned_alloc_node");
            void *m = malloc(64);
            expect_node_of(nodal_realloc_node(m, s, node), s, node, "nodal_realloc_node");
        }
    }
    for (int c = 0; c < t->ncpunode; c++) {
        const pt_node *nd = pt_node_get(t->cpunode[c]);
        if (!nd->has_memory || pt_pin(nd->cpus[0]) != 0)
            continue;
        expect_node_of(nodal_malloc_local(5000), 5000, nd->id, "nodal_malloc_local");
    }

    /* Plain blocks: whatever node the kernel put the first page on. */
    static const size_t plain[] = { 24, 3000, 100000, 5 << 20 };
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        unsigned char *p = malloc(plain[i]);
        pt_where w;
        if (!p)
            pt_die("malloc(%zu) failed", plain[i]);
        memset(p, 1, plain[i]);
        if (pt_where_is(p, 1, -1, &w) != 0 || w.first_bad_status < 0)
            pt_die("move_pages on a plain block failed");
        int got = nodal_node_of(p);
        if (got != w.first_bad_status)
            pt_fail("nodal_node_of(plain block of %zu B) = %d; expected %d, the node the "
                    "kernel reports for its first page", plain[i], got, w.first_bad_status);
        free(p);
    }

    /* Pointers nodal never returned. */
    int stack_var = 0;
    char *own = mmap(NULL, 8 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (own == MAP_FAILED)
        pt_die("mmap: %s", strerror(errno));
    memset(own, 1, 8 << 20);
    char *hole = mmap(NULL, 64 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (hole == MAP_FAILED)
        pt_die("mmap: %s", strerror(errno));
    munmap(hole, 64 << 20);   /* now an unmapped range */
    const struct { const void *p; const char *what; } foreign[] = {
        { NULL, "NULL" },
        { &stack_var, "a stack variable" },
        { &static_var, "a static variable" },
        { own, "the start of an mmap of the test's own" },
        { own + (4 << 20) + 48, "the middle of an mmap of the test's own" },
        { hole + (32 << 20), "an unmapped address" },
    };
    for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++) {
        int got = nodal_node_of(foreign[i].p);
        if (got != -1)
            pt_fail("nodal_node_of(%s) = %d; expected -1 (not a pointer nodal returned)",
                    foreign[i].what, got);
    }
    munmap(own, 8 << 20);
    pt_batch_free(batch);
    return pt_end();
}
