/*
 * node_blocks_stay_on_node - every OS page of every block nodal returns for
 * node k is on node k, for every size: one thread interleaves requests for
 * all nodes with memory across every size class (16 B .. 128 KiB in
 * 1/8-octave steps), large sizes (up to a few MiB) and huge sizes
 * (8 .. 64 MiB), through nodal_malloc_node, nodal_calloc_node and
 * nodal_aligned_alloc_node; then frees them and asks again with the nodes
 * rotated, so blocks freed from one node are there to be (wrongly) reused
 * for another; and checks nodal_malloc_local from a CPU of each node.
 *
 * Each block is written in full, its pages are looked up with move_pages,
 * the policy at its first and last byte must name node k only, its contents are
 * checked again after all neighbours were written (no overlap), calloc
 * blocks must read as zero and aligned blocks must be aligned.
 *
 *   node_blocks_stay_on_node [--expect-option huge_pages=1] [-v]
 *
 * Single-node machines run the same sequence with node 0 only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nodal.h"
#include "placement.h"

enum { API_MALLOC, API_CALLOC, API_ALIGNED, API_COUNT };
static const char *api_name[API_COUNT] = { "nodal_malloc_node", "nodal_calloc_node",
                                           "nodal_aligned_alloc_node" };

typedef struct blk {
    unsigned char *p;
    size_t size;
    int node;
    int api;
    int full;              /* written in full (else one byte per OS page) */
    unsigned char pat;
} blk;

static pt_batch *batch;
static unsigned long nblocks;

static int all_bytes_are(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

/* One block through API `api`; NULL (reported) on failure. */
static int get_block(blk *b, int api, size_t size, int node, size_t align, int full_write)
{
    const char *name = api_name[api];
    char what[96];

    errno = 0;
    switch (api) {
    case API_MALLOC:
        b->p = nodal_malloc_node(size, node);
        break;
    case API_CALLOC:
        b->p = nodal_calloc_node(1, size, node);
        break;
    default:
        size = (size + align - 1) & ~(align - 1);
        b->p = nodal_aligned_alloc_node(align, size, node);
        break;
    }
    b->size = size;
    b->node = node;
    b->api = api;
    b->full = full_write;
    b->pat = (unsigned char)(0x11 + nblocks * 37 % 200);
    if (!b->p) {
        pt_fail("%s(%zu B, node %d) returned NULL (%s); expected a block",
                name, size, node, strerror(errno));
        return 0;
    }
    nblocks++;
    if (api == API_ALIGNED && ((uintptr_t)b->p & (align - 1)))
        pt_fail("%s(%zu, %zu B, node %d) = %p; expected a multiple of %zu", name, align, size,
                node, (void *)b->p, align);
    if (api == API_CALLOC) {
        /* Every byte, or for huge blocks one word per OS page and the ends. */
        int zero = 1;
        if (full_write) {
            zero = all_bytes_are(b->p, size, 0);
        } else {
            for (size_t off = 0; off < size && zero; off += 4096)
                zero = b->p[off] == 0;
            zero = zero && b->p[size - 1] == 0;
        }
        if (!zero)
            pt_fail("%s(1, %zu B, node %d) = %p; expected all bytes zero", name, size, node,
                    (void *)b->p);
    }
    if (full_write)
        memset(b->p, b->pat, size);
    else
        pt_touch(b->p, size, b->pat);
    snprintf(what, sizeof what, "node-%d block from %s", node, name);
    pt_expect_node_policy(b->p, size, node, what);
    pt_batch_add(batch, b->p, size, node, api_name[api], nblocks);
    return 1;
}

/* The bytes pt_touch() wrote. */
static int touched_bytes_are(const unsigned char *p, size_t n, unsigned char v)
{
    uintptr_t a = (uintptr_t)p, ps = (uintptr_t)pt_topology()->page_size;
    if (p[0] != v || p[n - 1] != v)
        return 0;
    for (uintptr_t q = (a | (ps - 1)) + 1; q < a + n; q += ps)
        if (p[q - a] != v)
            return 0;
    return 1;
}

/* After all neighbours were written: contents intact? */
static void check_contents(const blk *v, int n)
{
    for (int i = 0; i < n; i++)
        if (v[i].p && !(v[i].full ? all_bytes_are(v[i].p, v[i].size, v[i].pat)
                                  : touched_bytes_are(v[i].p, v[i].size, v[i].pat)))
            pt_fail("node-%d block %p (%zu B) from %s lost its contents after other blocks "
                    "were written; expected blocks that do not overlap", v[i].node,
                    (void *)v[i].p, v[i].size, api_name[v[i].api]);
}

static void free_all(blk *v, int n)
{
    for (int i = 0; i < n; i++) {
        free(v[i].p);
        v[i].p = NULL;
    }
}

static const size_t aligns[] = { 16, 64, 256, 4096, 65536 };

/* Every size in sizes[], for every node, interleaved. `rot` shifts which
   node a given slot asks for, so a second pass gets other nodes' frees. */
static int round_sizes(blk *v, const size_t *sizes, int nsizes, int rot, int full_write,
                       size_t max_align)
{
    const pt_topo *t = pt_topology();
    int n = 0;
    for (int s = 0; s < nsizes; s++)
        for (int k = 0; k < t->nmem; k++) {
            int node = t->mem[(k + rot) % t->nmem];
            int api = (s + k) % API_COUNT;
            size_t al = aligns[(s + k) % (sizeof aligns / sizeof aligns[0])];
            if (al > max_align)
                al = max_align;
            while (al > 16 && al / 2 >= sizes[s])
                al /= 2;  /* keep small sizes small */
            if (get_block(&v[n], api, sizes[s], node, al, full_write))
                n++;
        }
    pt_batch_flush(batch);
    check_contents(v, n);
    return n;
}

static void local_blocks(void)
{
    const pt_topo *t = pt_topology();
    static const size_t sizes[] = { 32, 1000, 40000, 300000, 3 << 20 };
    for (int c = 0; c < t->ncpunode; c++) {
        const pt_node *nd = pt_node_get(t->cpunode[c]);
        if (!nd->has_memory) {
            pt_info("node %d has CPUs but no memory: nodal_malloc_local not checked there",
                    nd->id);
            continue;
        }
        if (pt_pin(nd->cpus[0]) != 0)
            pt_die("cannot pin to CPU %d: %s", nd->cpus[0], strerror(errno));
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            unsigned char *p = nodal_malloc_local(sizes[i]);
            if (!p) {
                pt_fail("nodal_malloc_local(%zu) on CPU %d (node %d) returned NULL (%s); "
                        "expected a block", sizes[i], nd->cpus[0], nd->id, strerror(errno));
                continue;
            }
            memset(p, 0x5a, sizes[i]);
            pt_expect_node_policy(p, sizes[i], nd->id, "nodal_malloc_local block");
            pt_batch_add(batch, p, sizes[i], nd->id, "nodal_malloc_local block", i);
            pt_batch_flush(batch);
            free(p);
        }
    }
}

int main(int argc, char **argv)
{
    argc = pt_begin(argc, argv, "node_blocks_stay_on_node",
             "every OS page of a block for node k is on node k, for all sizes and nodes");
    pt_no_args(argc, argv);
    const pt_topo *t = pt_topology();
    size_t classes[256], large[32], huge[16];
    int ncls = pt_class_sizes(classes, 256);
    int nlarge = pt_large_sizes(large, 32);
    long min_free = -1;
    for (int k = 0; k < t->nmem; k++) {
        long f = pt_node_free_kib(t->mem[k]);
        if (f >= 0 && (min_free < 0 || f < min_free))
            min_free = f;
    }
    /* A huge block per node at a time; leave room for everything else. */
    size_t cap = min_free > 0 ? (size_t)min_free * 1024 / 3 : (size_t)64 << 20;
    int nhuge = pt_huge_sizes(huge, 16, cap);
    blk *v = calloc((size_t)(ncls + nlarge + nhuge) * t->nmem, sizeof *v);
    if (!v)
        pt_die("out of memory");
    batch = pt_batch_new();

    if (pt_pin(pt_spread_cpu(0, NULL)) != 0)
        pt_die("cannot pin the main thread: %s", strerror(errno));
    pt_info("%d memory node(s); %d class sizes %zu..%zu B, %d large up to %zu B, %d huge up to "
            "%zu MiB", t->nmem, ncls, classes[0], classes[ncls - 1], nlarge, large[nlarge - 1],
            nhuge, nhuge ? huge[nhuge - 1] >> 20 : 0);
    if (nhuge < 5)
        pt_info("huge sizes above %zu MiB left out: a node has only %ld MiB free",
                cap >> 20, min_free >> 10);

    /* Size classes, all nodes interleaved, kept live together. */
    int n = round_sizes(v, classes, ncls, 0, 1, 65536);
    /* Large blocks next to them. */
    int m = round_sizes(v + n, large, nlarge, 0, 1, 2 << 20);
    free_all(v, n + m);
    /* Again with the nodes rotated: every slot now asks for a node whose
       blocks of that size were just freed by this thread. */
    n = round_sizes(v, classes, ncls, 1, 1, 65536);
    m = round_sizes(v + n, large, nlarge, 1, 1, 2 << 20);
    free_all(v, n + m);
    /* Huge blocks: one size at a time on every node, touched page by page. */
    for (int h = 0; h < nhuge; h++) {
        int got = round_sizes(v, &huge[h], 1, h, 0, 2 << 20);
        free_all(v, got);
    }
    local_blocks();

    pt_info("%lu blocks, %zu OS pages checked with move_pages, %zu misplaced in %zu blocks",
            nblocks, pt_batch_pages(batch), pt_batch_bad_pages(batch),
            pt_batch_bad_blocks(batch));
    pt_batch_free(batch);
    free(v);
    return pt_end();
}
