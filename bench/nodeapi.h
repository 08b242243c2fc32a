/*
 * nodeapi.h - one interface over the ways a benchmark can put a block on a
 * chosen NUMA node, so the node-targeted workloads run unchanged on each:
 *
 *   malloc   plain malloc/free; the node is ignored (the "regular"
 *            configuration, and the baseline for nodal's own overhead)
 *   nodal    nodal_malloc_node / nodal_free, reached through weak references
 *            that a preloaded libnodal.so resolves (LD_PRELOAD)
 *   numa     libnuma's numa_alloc_onnode / numa_free: mmap + mbind per block
 *   jepool   jemalloc driven as a NUMA pool, the seed 000 design (jepool.c)
 *   memkind  memkind with one fixed kind per node over an area bound to it
 *            (mkpool.c)
 *   memkind-hbw  memkind's MEMKIND_HBW kind with MEMKIND_HBW_NODES = the
 *            node: one target node per process (mkpool.c)
 *
 * Topology (node ids, node of a CPU) comes from libnuma.
 */
#ifndef BENCH_NODEAPI_H
#define BENCH_NODEAPI_H

#include <stddef.h>

/* The names, for usage messages. */
#define NODE_BACKENDS "malloc|nodal|numa|jepool|memkind|memkind-hbw"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct node_backend {
    const char *name;
    void *(*alloc)(size_t size, int node);
    void (*free)(void *p, size_t size, int node);
    int one_node;       /* can target only one node per process (memkind-hbw) */
} node_backend;

/*
 * Finds and initialises the named backend; prints why and exits with
 * BENCH_SKIP (77) when it cannot run here (e.g. "nodal" without libnodal.so
 * preloaded), or 2 for an unknown name.
 */
const node_backend *node_backend_get(const char *name);

/* A workload about to target `count` distinct nodes: exits with BENCH_SKIP
   and a message when the backend cannot (one_node and count > 1). */
void node_backend_require(const node_backend *be, int count);

/* Nodes with memory, ascending (at most 64). */
int node_ids(int *ids, int max);
/* Node of a CPU (0 when unknown). */
int node_of_cpu(int cpu);
/* Node the page holding p is on now, as the kernel reports it; -1 if unknown. */
int node_of_addr(const void *p);
/* How many of the n blocks are on another node than `node` (kernel's view,
   move_pages in batches); -1 if the kernel cannot tell. */
long node_count_misplaced(void *const *ptrs, size_t n, int node);

/*
 * Parses a target-node option: a node id, "local" (-1: the node of the
 * thread's CPU) or "rr" (-2: node ids[thread % count]).
 */
int node_target_parse(const char *s);
int node_target_for(int target, int thread, int cpu);

#ifdef __cplusplus
}
#endif

#endif
