/*
 * nodal.h - the whole public API of nodal, a NUMA-aware malloc.
 *
 * Three groups of functions:
 *   1. The standard allocation functions under nodal_* names. libnodal.so and
 *      libnodal.a also export them under their standard names (malloc, free,
 *      ...), replacing the system allocator; libnodal_prefix.a exports only the
 *      nodal_* names, for programs that keep the system malloc.
 *   2. Node-targeted allocation: put a block on the NUMA node you name.
 *      Blocks from these functions are freed with free()/nodal_free() like any
 *      other and keep their node across realloc().
 *   3. Topology, statistics, options and maintenance.
 *
 * Node ids are the kernel's ids, as `numactl --hardware` prints them; they may
 * have holes (nodes 0 and 2, say). Functions that take a node return NULL with
 * errno = EINVAL for an id that is negative, >= NODAL_MAX_NODES, or not a node
 * with memory on this machine.
 */
#ifndef NODAL_H
#define NODAL_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NODAL_VERSION_MAJOR 0
#define NODAL_VERSION_MINOR 1
#define NODAL_VERSION_PATCH 0

/* Node ids must be below this (compile-time limit of nodal's tables). */
#define NODAL_MAX_NODES 64

#if defined(__GNUC__)
#define NODAL_MALLOC_ATTR __attribute__((malloc, warn_unused_result))
#else
#define NODAL_MALLOC_ATTR
#endif

/* ---- 1. Standard allocation functions, prefixed ------------------------- */
/* Same contracts as their C / POSIX / glibc namesakes (see nodal(3)). */
void  *nodal_malloc(size_t size) NODAL_MALLOC_ATTR;
void   nodal_free(void *p);
void  *nodal_calloc(size_t count, size_t size) NODAL_MALLOC_ATTR;
void  *nodal_realloc(void *p, size_t size);
void  *nodal_reallocarray(void *p, size_t count, size_t size);
int    nodal_posix_memalign(void **out, size_t alignment, size_t size);
void  *nodal_aligned_alloc(size_t alignment, size_t size) NODAL_MALLOC_ATTR;
void  *nodal_memalign(size_t alignment, size_t size) NODAL_MALLOC_ATTR;
void  *nodal_valloc(size_t size) NODAL_MALLOC_ATTR;
void  *nodal_pvalloc(size_t size) NODAL_MALLOC_ATTR;
void   nodal_free_sized(void *p, size_t size);
void   nodal_free_aligned_sized(void *p, size_t alignment, size_t size);
/* Bytes usable in the block p (>= the size asked for); 0 for NULL. */
size_t nodal_usable_size(const void *p);
size_t nodal_malloc_usable_size(const void *p); /* the same */

/* ---- 2. Node-targeted allocation --------------------------------------- */
/*
 * Every page of a block returned for node k is on node k. Node-k memory gets
 * node k as its kernel policy (MPOL_PREFERRED) before anything touches it;
 * nodal then faults each chunk in itself before handing out any of it, asks
 * the kernel where every page landed (move_pages), and migrates strays to k.
 * (MPOL_BIND is not used: on a full node it summons the OOM killer instead
 * of failing.) Memory nodal gave back to the OS is checked again when it is
 * reused. If node k has no free memory the result follows the option
 * node_fallback: "strict" (default) returns NULL with errno = ENOMEM,
 * "preferred" falls back to other nodes and counts it in the statistics
 * (node_fallback_pages). A kernel without the NUMA system calls, or a
 * sandbox that forbids them (containers without CAP_SYS_NICE), is fine on a
 * machine with one node; with several nodes the call then fails with that
 * errno (ENOSYS or EPERM) instead of promising a placement.
 *
 * Thread caches are per (thread, node): a node-k request is only ever served
 * from node-k memory, and a node-k block freed by any thread returns to
 * node-k memory. Using these functions never changes where plain malloc()
 * memory goes.
 */
void *nodal_malloc_node(size_t size, int node) NODAL_MALLOC_ATTR;
void *nodal_calloc_node(size_t count, size_t size, int node) NODAL_MALLOC_ATTR;
void *nodal_aligned_alloc_node(size_t alignment, size_t size, int node) NODAL_MALLOC_ATTR;
/* Like realloc(), but the result is on `node` (the block moves if needed). */
void *nodal_realloc_node(void *p, size_t size, int node);
/* On the node of the CPU the calling thread runs on. */
void *nodal_malloc_local(size_t size) NODAL_MALLOC_ATTR;
/*
 * A block whose pages are spread round-robin over `nodes[0..count-1]` (all
 * nodes with memory when nodes is NULL or count is 0). Always page-aligned and
 * mapped on its own; meant for large shared arrays.
 */
void *nodal_malloc_interleaved(size_t size, const int *nodes, int count) NODAL_MALLOC_ATTR;

/* ---- Memory tiers: by attribute, not by node number ---------------------
 * The node with the lowest latency, the highest bandwidth or the most
 * memory near the calling thread (per its CPU's node, at each call), from
 * the firmware's HMAT through the kernel, a file of measured values
 * (option tier_file), or the distances (docs/tiers.md says which wins).
 * The block has the node calls' guarantee: every page on that node.
 * Strict (default): that node full (or over its cap, tier_*_max) gives
 * NULL/ENOMEM. tier | NODAL_TIER_PREFERRED: then the next node of the
 * tier's order, each in turn, and ENOMEM only when all are full.
 * A bad tier gives NULL/EINVAL. Free with free() like any block.
 */
#define NODAL_TIER_LATENCY   0      /* lowest read latency */
#define NODAL_TIER_BANDWIDTH 1      /* highest read bandwidth */
#define NODAL_TIER_CAPACITY  2      /* most memory */
#define NODAL_TIER_PREFERRED 0x100  /* or'ed in: fall to the next node of the order when full */
void *nodal_malloc_tier(size_t size, int tier) NODAL_MALLOC_ATTR;
void *nodal_calloc_tier(size_t count, size_t size, int tier) NODAL_MALLOC_ATTR;
void *nodal_aligned_alloc_tier(size_t alignment, size_t size, int tier) NODAL_MALLOC_ATTR;
/* The node of `tier` for a thread on node `from_node` (any node, CPU-only
   ones too); -1 (EINVAL) for a bad tier or node. */
int nodal_tier_node(int tier, int from_node);
/* The tier's whole order from `from_node`, best first (the preferred walk):
   writes up to max ids and returns how many nodes with memory there are;
   -1 (EINVAL) for a bad tier or node. */
int nodal_tier_nodes(int tier, int from_node, int *nodes, int max);
/* What nodal knows of node `node` seen from node `from_node`. */
typedef struct nodal_tier_attr {
    unsigned read_latency_ns, write_latency_ns;         /* 0 = unknown */
    unsigned read_bandwidth_mbps, write_bandwidth_mbps; /* MB/s; 0 = unknown */
    unsigned long long mem_bytes;                       /* the node's memory */
    int kernel_tier;   /* the kernel's memory_tierN, -1 if none */
    int near;          /* 1 if node is near from_node (docs/tiers.md) */
    int source;        /* 0 distances only, 1 the firmware's HMAT, 2 the measured file */
} nodal_tier_attr;
int nodal_tier_attr_get(int from_node, int node, nodal_tier_attr *out);   /* 0, or -1 (EINVAL) */
/* The statistics of a tier (docs/statistics.md, docs/tiers.md): of the
   calls made on CPUs of `from_node`, or of every node (from_node -1), since
   the start or the last nodal_stats_reset. */
typedef struct nodal_tier_stats {
    unsigned long long requests;      /* blocks the tier calls returned */
    unsigned long long bytes;         /* their usable bytes */
    unsigned long long fallbacks;     /* NODAL_TIER_PREFERRED calls served by a later node */
    unsigned long long cap_refusals;  /* mappings refused, or nodes skipped, for the tier's cap */
    unsigned long long cap_bytes;     /* node-bound bytes mapped now on the tier's node(s), what the cap counts */
    unsigned long long cap;           /* the tier's cap (tier_<name>_max), 0 = none */
    int node;                         /* the node the tier names from from_node; -1 for every node */
} nodal_tier_stats;
/* 0, or -1 (EINVAL: a bad tier, a from_node without CPUs, out NULL). */
int nodal_tier_stats_get(int tier, int from_node, nodal_tier_stats *out);

/*
 * Home node of a block nodal returned: the node it is bound to for
 * node-targeted blocks; for plain malloc() blocks, the node its first page
 * currently resides on (as the kernel reports it), or, if that page has not
 * been touched yet, the node of the CPU that created its segment.
 * Returns -1 for NULL and for any pointer nodal did not return.
 */
int nodal_node_of(const void *p);

/* ---- Topology (read once from /sys/devices/system/node) ---------------- */
/* Number of nodes that have memory (CPU nodes and memory-only nodes). */
int nodal_node_count(void);
/* Writes up to `max` ids of nodes with memory, ascending; returns how many
   there are in all. */
int nodal_node_ids(int *ids, int max);
/* 1 if `node` has memory / has CPUs, 0 if not, -1 (EINVAL) if no such node. */
int nodal_node_has_memory(int node);
int nodal_node_has_cpus(int node);
/* The kernel's distance between two nodes (10 = local); -1 if either is not
   a node. */
int nodal_node_distance(int from, int to);
/* Node of the CPU the calling thread is running on right now. */
int nodal_current_node(void);

/* ---- 3. Statistics, options, maintenance ------------------------------- */
/* A snapshot of process-wide counters (bytes). */
typedef struct nodal_memory_info {
    size_t allocated;      /* bytes in blocks handed out and not freed (usable sizes) */
    size_t active;         /* bytes in pages holding at least one live block */
    size_t mapped;         /* bytes nodal holds mapped from the OS */
    size_t committed;      /* bytes of mapped memory possibly resident (not purged) */
    size_t returned;       /* bytes given back to the OS so far (purged or unmapped) */
    size_t peak_active;    /* high-water mark of `active` */
    size_t peak_mapped;    /* high-water mark of `mapped` */
    size_t segments;       /* segments mapped now (huge blocks included) */
    size_t rss_current;    /* resident set of the process (from /proc), bytes */
    size_t rss_peak;       /* peak resident set of the process (VmHWM), bytes */
} nodal_memory_info;

/* Fills *info; returns 0, or -1 with errno = EINVAL for NULL. */
int nodal_memory_info_get(nodal_memory_info *info);

/*
 * Prints statistics to `out` (stderr when NULL).
 * opts: NULL or "" for the human-readable report; a string containing "json"
 * for one JSON object; "brief" for the one-line summary.
 * Returns 0, or -1 if writing failed.
 */
int nodal_stats_print(FILE *out, const char *opts);
/* Writes the JSON form into buf (NUL-terminated, truncated to len); returns
   the length the full text needs, like snprintf. */
size_t nodal_stats_json(char *buf, size_t len);
/* Resets the per-size-class and event counters (not the byte gauges); the
   first reset takes about 20 KiB of nodal's metadata, and out of memory
   does nothing. */
void nodal_stats_reset(void);

/*
 * Heap profiling (option prof=1; see docs/profiling.md): writes the heap
 * profile now, to path + ".heap" (gperftools' heap-profile format, for
 * google-pprof, jeprof or pprof) and path + ".txt" (the sites ranked by
 * live bytes, with their split over nodes); path NULL: the next numbered
 * name under prof_prefix. Returns 0, or -1 with errno (ENOTSUP: profiling
 * is off; or the error of creating or writing a file).
 */
int nodal_profile_dump(const char *path);

/*
 * Returns free memory to the OS now: flushes the calling thread's caches,
 * frees empty pages and purges every cache nodal holds. force != 0 also
 * purges memory whose delay has not yet expired (the free blocks of 8 KiB
 * and more in the calling thread's pages that still hold blocks in use
 * included: all but their first OS page), and gives back the pages
 * of exited threads whose blocks have all been freed since (whichever
 * node and kind of memory they are; without a call, nodal gives those back
 * on its own every eight purge delays, while any thread allocates or frees).
 */
void nodal_collect(int force);

/* Current value of an option by name (see the README's table), or -1 and
   errno = ENOENT for an unknown name. */
long nodal_option_get(const char *name);

/* "nodal 0.1.0" */
const char *nodal_version(void);

#ifdef __cplusplus
}
#endif

#endif /* NODAL_H */
