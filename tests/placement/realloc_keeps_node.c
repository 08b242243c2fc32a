/*
 * realloc_keeps_node - a node block keeps its node through realloc(), and
 * nodal_realloc_node() moves a block to the node it names.
 *
 *  1. For every node with memory, one block walks through a chain of sizes
 *     that grows and shrinks across size classes, large and huge blocks
 *     (24 B -> 40 MiB -> 16 B), once with realloc() and once with
 *     nodal_realloc(); after every step all its pages must still be on the
 *     node (move_pages), its policy names only that node, its contents kept.
 *  2. nodal_realloc_node(p, size, to) for every pair of nodes (from, to),
 *     including from == to, for a small, a large and a huge block, growing,
 *     keeping and shrinking: the result is on `to`, contents preserved; a
 *     later plain realloc() keeps it on `to`.
 *  3. A node block grown by tenths from 2 MiB to 48 MiB and shrunk by
 *     sevenths to 1.5 MiB (realloc resizes such a huge block without a
 *     copy: grown where it is, or its pages moved, the added ones bound to
 *     the node and checked): after every step all its pages on the node,
 *     its contents kept.
 *  5. For every node with CPUs, a thread pinned there grows a block by
 *     quarters from 8 B to 8 MiB, twice, plain and node-bound: past 1 MiB
 *     a plain block alone in its segment becomes a huge block where it is
 *     (the segment its mapping), the second time in the segment the pool
 *     took back from the huge cache, grown past 4 MiB into the rest of the
 *     mapping the first block left; every page of it on the thread's node
 *     (the bound one: on its node, by its policy).
 *  4. nodal_realloc_node(NULL, size, node) behaves like nodal_malloc_node;
 *     a plain malloc() block given to nodal_realloc_node lands on the node;
 *     a plain block given to realloc() stays plain (default policy).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nodal.h"
#include "placement.h"

static pt_batch *batch;
static unsigned long steps;

/* Byte i of a block filled for seed s. */
static unsigned char pattern(size_t i, unsigned s)
{
    return (unsigned char)((i * 131u + s * 7u + (i >> 12)) | 1u);
}

/* Fills [from, to): full for small blocks, one byte per 512 for big ones
   (enough to see a copy that lost or shifted data). */
static size_t fill_step(size_t size)
{
    return size <= (1u << 20) ? 1 : 512;
}

static void fill(unsigned char *p, size_t from, size_t to, unsigned s)
{
    size_t st = fill_step(to);
    for (size_t i = from - from % st; i < to; i += st)
        p[i] = pattern(i, s);
    p[to - 1] = pattern(to - 1, s);
    pt_touch(p + from, to - from, 1);   /* fault in every page ... */
    for (size_t i = from - from % st; i < to; i += st)
        p[i] = pattern(i, s);           /* ... and restore the pattern */
    p[to - 1] = pattern(to - 1, s);
}

/* The first n bytes still carry the pattern written at the old size. */
static int kept(const unsigned char *p, size_t n, size_t old_size, unsigned s)
{
    size_t st = fill_step(old_size);
    for (size_t i = 0; i < n; i += st)
        if (p[i] != pattern(i, s))
            return 0;
    return 1;
}

static void expect_on(unsigned char *p, size_t size, int node, const char *what)
{
    pt_expect_node_policy(p, size, node, what);
    pt_batch_add(batch, p, size, node, what, steps);
    pt_batch_flush(batch);
    int at = nodal_node_of(p);
    if (at != node)
        pt_fail("%s (%p, %zu B): nodal_node_of says %d; expected %d", what, (void *)p, size,
                at, node);
}

static const size_t classes_to_huge[] = {
    24, 100, 3000, 3001, 40000, 200000, 3 << 20, 10 << 20, 40 << 20,
    9 << 20, 1 << 20, 100000, 5000, 48, 16,
};

static void walk_chain(int node, int use_nodal_name, const size_t *chain, size_t n)
{
    const char *fn = use_nodal_name ? "nodal_realloc" : "realloc";
    unsigned seed = (unsigned)node * 10 + (unsigned)use_nodal_name + (unsigned)n;
    size_t size = chain[0];
    unsigned char *p = nodal_malloc_node(size, node);
    char what[112];
    if (!p) {
        pt_fail("nodal_malloc_node(%zu, %d) returned NULL (%s); expected a block", size, node,
                strerror(errno));
        return;
    }
    fill(p, 0, size, seed);
    for (size_t i = 1; i < n; i++) {
        size_t ns = chain[i];
        unsigned char *q = use_nodal_name ? nodal_realloc(p, ns) : realloc(p, ns);
        steps++;
        if (!q) {
            pt_fail("%s(node-%d block of %zu B, %zu) returned NULL (%s); expected a block",
                    fn, node, size, ns, strerror(errno));
            break;
        }
        size_t keep = size < ns ? size : ns;
        if (!kept(q, keep, size, seed))
            pt_fail("%s(node-%d block, %zu -> %zu B): the first %zu bytes changed; expected "
                    "them copied", fn, node, size, ns, keep);
        p = q;
        if (ns > size)
            fill(p, size, ns, seed);   /* same pattern, extended */
        else
            fill(p, 0, ns, seed);      /* re-lay at the finer step of the smaller size */
        snprintf(what, sizeof what, "node-%d block after %s %zu -> %zu B", node, fn, size, ns);
        expect_on(p, ns, node, what);
        size = ns;
    }
    free(p);
}

/* 2 MiB grown by tenths to 48 MiB, then shrunk by sevenths to 1.5 MiB. */
static size_t tenths[96];

static size_t tenths_chain(void)
{
    size_t n = 0, size = (size_t)2 << 20;
    tenths[n++] = size;
    while (size + size / 10 <= ((size_t)48 << 20))
        tenths[n++] = size += size / 10;
    while (size - size / 7 >= ((size_t)3 << 19))
        tenths[n++] = size -= size / 7;
    return n;
}

static void move_between(int from, int to, size_t size, size_t new_size)
{
    char what[128];
    unsigned seed = (unsigned)(from * 16 + to);
    unsigned char *p = nodal_malloc_node(size, from);
    if (!p) {
        pt_fail("nodal_malloc_node(%zu, %d) returned NULL (%s); expected a block", size, from,
                strerror(errno));
        return;
    }
    fill(p, 0, size, seed);
    steps++;
    unsigned char *q = nodal_realloc_node(p, new_size, to);
    if (!q) {
        pt_fail("nodal_realloc_node(node-%d block of %zu B, %zu, %d) returned NULL (%s); "
                "expected a block on node %d", from, size, new_size, to, strerror(errno), to);
        free(p);
        return;
    }
    size_t keep = size < new_size ? size : new_size;
    if (!kept(q, keep, size, seed))
        pt_fail("nodal_realloc_node(node-%d block, %zu -> %zu B, to node %d): contents "
                "changed; expected the first %zu bytes copied", from, size, new_size, to, keep);
    fill(q, 0, new_size, seed);
    snprintf(what, sizeof what, "block moved by nodal_realloc_node from node %d to %d (%zu -> "
             "%zu B)", from, to, size, new_size);
    expect_on(q, new_size, to, what);
    /* Once moved, a plain realloc keeps the new node. */
    size_t grown = new_size + new_size / 2 + 100;
    unsigned char *r = realloc(q, grown);
    if (!r) {
        pt_fail("realloc(%zu -> %zu B) after nodal_realloc_node returned NULL; expected a "
                "block", new_size, grown);
        free(q);
        return;
    }
    fill(r, 0, grown, seed);
    snprintf(what, sizeof what, "moved block (node %d) after realloc %zu -> %zu B", to,
             new_size, grown);
    expect_on(r, grown, to, what);
    free(r);
}

static void odd_inputs(void)
{
    const pt_topo *t = pt_topology();
    char what[96];
    for (int k = 0; k < t->nmem; k++) {
        int node = t->mem[k];
        unsigned char *p = nodal_realloc_node(NULL, 5000, node);
        if (!p) {
            pt_fail("nodal_realloc_node(NULL, 5000, %d) returned NULL (%s); expected a new "
                    "block like nodal_malloc_node", node, strerror(errno));
        } else {
            fill(p, 0, 5000, 3);
            snprintf(what, sizeof what, "nodal_realloc_node(NULL, 5000, %d) block", node);
            expect_on(p, 5000, node, what);
            free(p);
        }
        static const size_t sz[] = { 200, 70000, 6 << 20 };
        for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++) {
            unsigned char *m = malloc(sz[i]);
            if (!m)
                pt_die("malloc(%zu) failed", sz[i]);
            fill(m, 0, sz[i], 4);
            unsigned char *q = nodal_realloc_node(m, sz[i] * 2, node);
            if (!q) {
                pt_fail("nodal_realloc_node(plain block of %zu B, %zu, %d) returned NULL (%s); "
                        "expected a block on node %d", sz[i], sz[i] * 2, node, strerror(errno),
                        node);
                free(m);
                continue;
            }
            if (!kept(q, sz[i], sz[i], 4))
                pt_fail("nodal_realloc_node(plain block, %zu -> %zu B, node %d): contents "
                        "changed; expected them copied", sz[i], sz[i] * 2, node);
            fill(q, 0, sz[i] * 2, 4);
            snprintf(what, sizeof what, "plain block moved to node %d (%zu -> %zu B)", node,
                     sz[i], sz[i] * 2);
            expect_on(q, sz[i] * 2, node, what);
            free(q);
        }
    }
    /* A plain block stays plain through realloc. */
    size_t size = 40;
    unsigned char *p = malloc(size);
    static const size_t plain_chain[] = { 400, 40000, 400000, 5 << 20, 300, 8 };
    fill(p, 0, size, 5);
    for (size_t i = 0; i < sizeof plain_chain / sizeof plain_chain[0]; i++) {
        unsigned char *q = realloc(p, plain_chain[i]);
        if (!q) {
            pt_fail("realloc(plain block, %zu -> %zu B) returned NULL; expected a block", size,
                    plain_chain[i]);
            break;
        }
        p = q;
        fill(p, 0, plain_chain[i], 5);
        snprintf(what, sizeof what, "plain block after realloc %zu -> %zu B", size,
                 plain_chain[i]);
        pt_expect_default_policy(p, plain_chain[i], what);
        size = plain_chain[i];
    }
    free(p);
}

/* Part 5: one block grown by quarters from 8 B to 8 MiB (plain, or bound
   to `node`), every byte written, twice; after each round every page on
   `node`. */
static void grow_by_quarters_on(int node, int bound)
{
    char what[160];
    for (int round = 0; round < 2; round++) {
        size_t size = 8;
        unsigned char *p = bound ? nodal_malloc_node(size, node) : malloc(size);
        if (p == NULL) {
            pt_fail("a block of 8 B (%s, node %d) returned NULL", bound ? "bound" : "plain", node);
            return;
        }
        fill(p, 0, size, 9);
        while (size < ((size_t)8 << 20)) {
            size_t next = size + size / 4 + 8;
            unsigned char *q = realloc(p, next);
            if (q == NULL) {
                pt_fail("realloc(%s block, %zu -> %zu B) returned NULL", bound ? "bound" : "plain", size, next);
                break;
            }
            if (!kept(q, size, size, 9))
                pt_fail("realloc(%s block, %zu -> %zu B) lost its bytes", bound ? "bound" : "plain", size, next);
            p = q;
            fill(p, size, next, 9);
            size = next;
            steps++;
        }
        snprintf(what, sizeof what, "%s block grown by quarters to %zu B on node %d, round %d",
                 bound ? "bound" : "plain", size, node, round);
        if (bound)
            expect_on(p, size, node, what);
        else {
            pt_batch_add(batch, p, size, node, what, steps);
            pt_batch_flush(batch);
        }
        free(p);
    }
}

int main(int argc, char **argv)
{
    argc = pt_begin(argc, argv, "realloc_keeps_node",
             "realloc keeps a node block on its node; nodal_realloc_node moves it to the "
             "named node");
    pt_no_args(argc, argv);
    const pt_topo *t = pt_topology();
    batch = pt_batch_new();
    if (pt_pin(pt_spread_cpu(0, NULL)) != 0)
        pt_die("cannot pin: %s", strerror(errno));

    for (int k = 0; k < t->nmem; k++) {
        size_t n = sizeof classes_to_huge / sizeof classes_to_huge[0];
        walk_chain(t->mem[k], 0, classes_to_huge, n);
        walk_chain(t->mem[k], 1, classes_to_huge, n);
        walk_chain(t->mem[k], 0, tenths, tenths_chain());
    }
    static const size_t moves[][2] = {
        { 100, 100 }, { 100, 3000 }, { 3000, 64 },          /* classes */
        { 300000, 300000 }, { 40000, 2 << 20 },            /* into / within large */
        { 12 << 20, 12 << 20 }, { 3 << 20, 20 << 20 },    /* huge */
        { 20 << 20, 100000 },                              /* huge -> class */
    };
    for (int a = 0; a < t->nmem; a++)
        for (int b = 0; b < t->nmem; b++)
            for (size_t m = 0; m < sizeof moves / sizeof moves[0]; m++)
                move_between(t->mem[a], t->mem[b], moves[m][0], moves[m][1]);
    odd_inputs();
    for (int k = 0; k < t->ncpunode; k++) {
        int node = -1, cpu = pt_spread_cpu(k, &node), has_memory = 0;
        for (int m = 0; m < t->nmem; m++)
            has_memory |= t->mem[m] == node;
        if (!has_memory || pt_pin(cpu) != 0)
            continue;
        grow_by_quarters_on(node, 0);
        grow_by_quarters_on(node, 1);
    }
    pt_info("%d node(s): %lu reallocations checked, %zu OS pages asked, %zu misplaced", t->nmem,
            steps, pt_batch_pages(batch), pt_batch_bad_pages(batch));
    pt_batch_free(batch);
    return pt_end();
}
