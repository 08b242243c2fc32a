/*
 * topo.h - the machine's NUMA topology, read once at start-up from
 * /sys/devices/system/node and never changed afterwards (node hot-plug is
 * not followed).
 *
 * Invariants:
 *  - node ids are the kernel's; they may have holes. Only ids below
 *    ND_MAX_NODES are known; larger ones are ignored with a verbose warning.
 *  - nd_topo.mem_ids lists the nodes that have memory, ascending; node-targeted
 *    allocation accepts exactly these ids.
 *  - every known CPU maps to a node; on a machine without /sys node
 *    information there is one node, 0, holding every possible CPU and all
 *    memory.
 *  - cpu_count <= cpu_limit <= ND_MAX_CPUS. cpu_limit is the highest CPU id
 *    the kernel can ever give + 1 (/sys/devices/system/cpu/possible, which
 *    counts CPUs not online yet; ND_MAX_CPUS when unknown). Only
 *    cpu_node[0 .. cpu_limit) is written (-1 where unknown); the entries
 *    above stay 0 and are never read, so tables by CPU (this one, the
 *    tiers' by CPU) hold pages for the CPUs the machine can have, not for
 *    ND_MAX_CPUS.
 *  - one_mem_node is the node with memory every CPU id takes its local
 *    memory from (nd_topo_local_mem_node(nd_topo_cpu_node(cpu)) for every
 *    cpu, known or not, and for -1: then a thread cannot change memory
 *    nodes), or -1 when two or more nodes serve them.
 */
#ifndef ND_TOPO_H
#define ND_TOPO_H

#include <stdbool.h>
#include <stdint.h>
#include "config.h"

#define ND_NODE_PRESENT  1u
#define ND_NODE_HAS_MEM  2u
#define ND_NODE_HAS_CPU  4u

typedef struct nd_topo_s {
    int      mem_count;                    /* nodes with memory */
    int      mem_ids[ND_MAX_NODES];        /* their ids, ascending */
    uint8_t  flags[ND_MAX_NODES];          /* ND_NODE_* per id */
    uint8_t  distance[ND_MAX_NODES][ND_MAX_NODES];  /* 0 = unknown */
    int      nearest_mem[ND_MAX_NODES];    /* for a CPU-only node: closest node with memory */
    int      cpu_count;                    /* highest known CPU id + 1 */
    int      cpu_limit;                    /* highest possible CPU id + 1 */
    int      one_mem_node;                 /* every CPU's local memory node, -1: two or more */
    int16_t  cpu_node[ND_MAX_CPUS];        /* -1 = unknown CPU; last: see cpu_limit */
} nd_topo_t;

extern nd_topo_t nd_topo nd_hidden;

/* Longest path nodal builds under the sysfs root. */
#define ND_SYS_PATH_MAX 512

void nd_topo_init(void) nd_hidden;                  /* nd_topo_read("/sys") */
/* Reads the topology from sys + "/devices/system/node" (sys is "/sys"; the
   unit tier passes a fixture tree). */
void nd_topo_read(const char *sys) nd_hidden;
/* Parses a kernel list ("0-3,8,10-11") and calls fn for every id. */
void nd_parse_list(const char *s, void (*fn)(int id, void *arg), void *arg) nd_hidden;
bool nd_topo_node_has_memory(int node) nd_hidden;   /* false for out-of-range ids */
int  nd_topo_cpu_node(int cpu) nd_hidden;           /* node of a CPU, 0 if unknown */
int  nd_topo_current_node(void) nd_hidden;          /* node of the calling CPU */
/* A node with memory to serve "local" requests from node `node`. */
int  nd_topo_local_mem_node(int node) nd_hidden;
/* Do the machine's CPUs take their local memory from two or more nodes (so
   that a thread the scheduler moves can change memory nodes)? */
bool nd_topo_cpus_span_mem_nodes(void) nd_hidden;

#endif /* ND_TOPO_H */
