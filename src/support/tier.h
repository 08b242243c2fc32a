/*
 * tier.h - memory tiers: for a thread on a given node, which node with
 * memory is the fastest (lowest latency), the highest-bandwidth or the
 * largest near it, and which nodes follow when that one is full. Read once
 * at start-up, after the topology, and never changed afterwards.
 *
 * Where the attributes come from, per (initiator, target) pair, best first:
 *   hmat      the kernel's access attributes, from the firmware's HMAT:
 *             /sys/devices/system/node/N/access0/initiators/ holds the read
 *             and write latency (ns) and bandwidth (MB/s) of node N for the
 *             initiators linked there (its nearest CPU nodes);
 *   measured  the file named by the option tier_file (nodal-verify --matrix
 *             --save writes it), used only when the kernel has no HMAT;
 *   distance  none: the order falls back to the kernel's memory tiers
 *             (/sys/devices/virtual/memory_tiering/) and the SLIT distances.
 *
 * "Near" a CPU node c: with an HMAT, the nodes whose access0 initiators
 * include c; otherwise c itself (if it has memory) and the memory-only nodes
 * whose closest CPU node is c; a CPU node without memory uses its closest
 * node with memory. The order of a tier from c: the near nodes by the
 * tier's attribute (latency: lowest read latency; bandwidth: highest read
 * bandwidth; capacity: most memory), then the other nodes by distance, then
 * attribute; ties go to the lower kernel memory tier, the shorter distance,
 * the lower id.
 *
 * Invariants:
 *  - order[c][t][0 .. count[c]) lists every node with memory exactly once,
 *    for every present node c and every tier t; count[c] == nd_topo.mem_count.
 *  - nd_tier_by_cpu[cpu][t] == order[nd_topo_cpu_node(cpu)][t][0] for
 *    every cpu below nd_topo.cpu_limit once read (the CPU ids the kernel
 *    can give, topo.h; the rows above are never read nor written, so
 *    they take no memory); 0 before start-up (a thread
 *    that has not started has only empty caches, so a call that early
 *    takes the slow path, which starts nodal), always a valid node index.
 *  - first_tiers[n] has bit t set iff node n is the first choice of tier t
 *    for some CPU node (the tier's nodes, whose node-bound memory its cap
 *    counts); cap_tiers[n] is first_tiers[n] less the tiers without a cap
 *    (option tier_<t>_max 0): only a mapping of node-bound memory on a node
 *    with a bit there can be refused for a cap.
 */
#ifndef ND_TIER_H
#define ND_TIER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "config.h"

#define ND_TIER_LATENCY   0
#define ND_TIER_BANDWIDTH 1
#define ND_TIER_CAPACITY  2
/* ND_TIER_COUNT (3) is in config.h: the statistics table counts per tier. */

/* Where a CPU node's attributes came from. */
#define ND_TIER_SRC_DISTANCE 0
#define ND_TIER_SRC_HMAT     1
#define ND_TIER_SRC_MEASURED 2

typedef struct nd_tier_attr {
    uint32_t read_latency, write_latency;       /* ns; 0 = unknown */
    uint32_t read_bandwidth, write_bandwidth;   /* MB/s; 0 = unknown */
} nd_tier_attr;

typedef struct nd_tiers_s {
    /* Start-up writes the rows of the present nodes only, and the small
       per-node arrays come first, then the order rows, the big attribute
       matrix last; the table starts on a page of its own (tier.c): on a
       machine of one node the table touches one page of its 79 KiB, the
       small arrays and node 0's order row (docs/how-it-works.md, "What
       every process holds"). */
    uint8_t      source[ND_MAX_NODES];                              /* ND_TIER_SRC_* per CPU node */
    uint8_t      first_tiers[ND_MAX_NODES];                         /* bit t: a first choice of tier t */
    uint8_t      cap_tiers[ND_MAX_NODES];                           /* bit t: capped by tier t */
    int16_t      kernel_tier[ND_MAX_NODES];                         /* memory_tierN, -1 = none */
    uint64_t     near[ND_MAX_NODES];                                /* near nodes of each node, a mask */
    uint64_t     mem_bytes[ND_MAX_NODES];                           /* MemTotal of each node */
    size_t       cap[ND_TIER_COUNT];                                /* bytes, 0 = no cap */
    bool         any_cap;
    int8_t       order[ND_MAX_NODES][ND_TIER_COUNT][ND_MAX_NODES];  /* [from node][tier][rank] */
    nd_tier_attr attr[ND_MAX_NODES][ND_MAX_NODES];                  /* [initiator][target] */
} nd_tiers_t;

extern nd_tiers_t nd_tiers nd_hidden;
/* The fast path's table: the node of each tier for a thread on each CPU
   (a CPU's tiers in one word; the fourth byte is unused). */
extern int8_t nd_tier_by_cpu[ND_MAX_CPUS][4] nd_hidden;

/* nd_tier_read("/sys", the option tier_file). */
void nd_tier_init(void) nd_hidden;
/* Reads the attributes under sys (see above; after nd_topo_read of the same
   tree) and the measured file (NULL or "" for none), and builds the orders.
   Allocates nothing. */
void nd_tier_read(const char *sys, const char *measured) nd_hidden;
/* The node of tier t for a thread on node `from`, or -1 (no such node). */
int  nd_tier_node(int t, int from) nd_hidden;
/* The name of tier t ("latency", "bandwidth", "capacity"). */
const char *nd_tier_name(int t) nd_hidden;
/* The tiers (bit t for tier t) whose cap (tier_latency_max, ...) mapping
   `size` more bytes of memory bound to `node` would exceed; 0 if none. */
unsigned nd_tier_over_cap(int node, size_t size) nd_hidden;
/* The node-bound memory mapped now that tier t's cap counts (capped or
   not): on all its nodes (from < 0), or on the node it names from CPU node
   `from`. */
size_t nd_tier_cap_bytes(int t, int from) nd_hidden;

#endif /* ND_TIER_H */
