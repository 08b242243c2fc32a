/*
 * nodeapi.c - the node-targeted allocation backends and topology helpers
 * (see nodeapi.h).
 *
 * nodal is never linked in: its functions are weak references, which stay
 * NULL unless a libnodal.so loaded into the process (LD_PRELOAD) defines
 * them. The same binary therefore runs with or without nodal, and calls
 * nodal_malloc_node through the PLT exactly as it calls malloc.
 */
#define _GNU_SOURCE
#include "nodeapi.h"
#include "harness.h"
#include "jepool.h"
#include "mkpool.h"
#include "nodal.h"

#include <numa.h>
#include <numaif.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#pragma weak nodal_malloc_node
#pragma weak nodal_free
#pragma weak nodal_version

static void *plain_alloc(size_t size, int node) { (void)node; return malloc(size); }
static void plain_free(void *p, size_t size, int node) { (void)size; (void)node; free(p); }

static void *nodal_alloc_(size_t size, int node) { return nodal_malloc_node(size, node); }
static void nodal_free_(void *p, size_t size, int node) { (void)size; (void)node; nodal_free(p); }

static void *numa_alloc_(size_t size, int node) { return numa_alloc_onnode(size, node); }
static void numa_free_(void *p, size_t size, int node) { (void)node; numa_free(p, size); }

static const node_backend backends[] = {
    { "malloc", plain_alloc, plain_free, 0 },
    { "nodal", nodal_alloc_, nodal_free_, 0 },
    { "numa", numa_alloc_, numa_free_, 0 },
    { "jepool", jepool_alloc, jepool_free, 0 },
    { "memkind", mkpool_alloc, mkpool_free, 0 },
    { "memkind-hbw", mkpool_hbw_alloc, mkpool_hbw_free, 1 },
};

const node_backend *node_backend_get(const char *name)
{
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
        if (strcmp(backends[i].name, name) != 0)
            continue;
        if (strcmp(name, "nodal") == 0) {
            if (!nodal_malloc_node || !nodal_free) {
                fprintf(stderr, "nodal backend: libnodal.so is not loaded (run with LD_PRELOAD=.../libnodal.so)\n");
                exit(BENCH_SKIP);
            }
            if (nodal_version)
                printf("note: %s\n", nodal_version());
        }
        if (strcmp(name, "numa") == 0 && numa_available() < 0) {
            fprintf(stderr, "numa backend: libnuma reports no NUMA support\n");
            exit(BENCH_SKIP);
        }
        if (strcmp(name, "jepool") == 0 && jepool_init() != 0)
            exit(BENCH_SKIP);
        if (strcmp(name, "memkind") == 0 && mkpool_init() != 0)
            exit(BENCH_SKIP);
        if (strcmp(name, "memkind-hbw") == 0 && mkpool_hbw_init() != 0)
            exit(BENCH_SKIP);
        return &backends[i];
    }
    fprintf(stderr, "unknown backend '%s' (%s)\n", name, NODE_BACKENDS);
    exit(2);
}

void node_backend_require(const node_backend *be, int count)
{
    if (be->one_node && count > 1) {
        fprintf(stderr, "%s: targets one node per process; this run needs %d\n", be->name, count);
        exit(BENCH_SKIP);
    }
}

int node_ids(int *ids, int max)
{
    if (numa_available() < 0) {
        if (max > 0)
            ids[0] = 0;
        return 1;
    }
    int n = 0;
    for (int i = 0; i <= numa_max_node() && n < max; i++)
        if (numa_bitmask_isbitset(numa_all_nodes_ptr, (unsigned)i))
            ids[n++] = i;
    if (n == 0 && max > 0)
        ids[n++] = 0;
    return n;
}

int node_of_cpu(int cpu)
{
    if (numa_available() < 0)
        return 0;
    int n = numa_node_of_cpu(cpu);
    return n < 0 ? 0 : n;
}

int node_of_addr(const void *p)
{
    void *page = (void *)((uintptr_t)p & ~(uintptr_t)4095);
    int status = -1;
    if (move_pages(0, 1, &page, NULL, &status, 0) != 0)
        return -1;
    return status;
}

long node_count_misplaced(void *const *ptrs, size_t n, int node)
{
    enum { BATCH = 1024 };
    void *pages[BATCH];
    int status[BATCH];
    long bad = 0;
    for (size_t i = 0; i < n; i += BATCH) {
        size_t m = n - i < BATCH ? n - i : BATCH;
        for (size_t j = 0; j < m; j++)
            pages[j] = (void *)((uintptr_t)ptrs[i + j] & ~(uintptr_t)4095);
        if (move_pages(0, (unsigned long)m, pages, NULL, status, 0) != 0)
            return -1;
        for (size_t j = 0; j < m; j++)
            if (status[j] != node)
                bad++;
    }
    return bad;
}

int node_target_parse(const char *s)
{
    if (strcmp(s, "local") == 0)
        return -1;
    if (strcmp(s, "rr") == 0)
        return -2;
    return (int)parse_size(s);
}

int node_target_for(int target, int thread, int cpu)
{
    if (target == -1)
        return node_of_cpu(cpu);
    if (target == -2) {
        int ids[64];
        int n = node_ids(ids, 64);
        return ids[thread % n];
    }
    return target;
}
