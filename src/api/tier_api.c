/*
 * tier_api.c - allocation by memory attribute: nodal_malloc_tier and its
 * family resolve (calling CPU, tier) to a node through one table
 * (nd_tier_by_cpu, tier.h) and then are the node-targeted calls, with
 * their guarantee. The fast path is nodal_malloc_node's with, in place of
 * its node check, the tier check (on the argument's whole register: no
 * extension), the CPU load (the rseq area, no call), one compare with the
 * CPU the thread's tier caches were resolved for (nd_thread_tier_resolve,
 * thread.h), and one add to the bin's count of the tier's blocks
 * (tier_hits, tcache.h; thread.c sums them per CPU node): 27 instructions
 * against the node call's 23 on x86-64. A thread on another CPU than last
 * time, a tier with NODAL_TIER_PREFERRED, an unknown CPU or a bad tier
 * takes the slow path, which resolves the caches again and walks the
 * tier's order when a node is full.
 */
#include <errno.h>
#include "alloc.h"
#include "counters.h"
#include "init.h"
#include "os.h"
#include "tier.h"
#include "topo.h"

/* The public flag (nodal.h): walk the order when a node is full. */
#define ND_TIER_PREFERRED_FLAG 0x100

/* The node of the calling thread's CPU if tier t has a node for it, or -1. */
static int nd_tier_here(int t)
{
    nd_process_ensure();
    int from = nd_topo_current_node();
    return nd_tier_node(t, from) < 0 ? -1 : from;
}

/* Tries the nodes of the tier in order from the calling thread's node:
   only the first unless preferred. fn(node, a, b) is one of the node
   calls; a block returned is counted for the tier (its usable size) and
   the CPU node. Stops at the first result, or at an error other than
   ENOMEM. */
typedef void *nd_tier_alloc_fn(int node, size_t a, size_t b);

static void *nd_tier_walk(int tier, nd_tier_alloc_fn *fn, size_t a, size_t b)
{
    int t = tier & ~ND_TIER_PREFERRED_FLAG;
    bool preferred = (tier & ND_TIER_PREFERRED_FLAG) != 0;
    if ((unsigned)t >= ND_TIER_COUNT || (tier & ~(ND_TIER_PREFERRED_FLAG | 0xff)) != 0) {
        errno = EINVAL;
        return NULL;
    }
    int from = nd_tier_here(t);
    if (from < 0) {
        errno = EINVAL;
        return NULL;
    }
    int n = preferred ? nd_topo.mem_count : 1;
    for (int i = 0; i < n; i++) {
        int node = nd_tiers.order[from][t][i];
        if (nd_tier_over_cap(node, 0)) {
            nd_gauge_add(tier_cap_refusals, 1);
            nd_add_relaxed(&nd_gauge.cap_refusals[t][from], 1);
            errno = ENOMEM;
            continue;
        }
        void *p = fn(node, a, b);
        if (p != NULL) {
            if (i > 0) {
                nd_gauge_add(tier_fallbacks, 1);
                nd_add_relaxed(&nd_gauge.fallbacks[t][from], 1);
            }
            nd_thread_count_tier(t, nd_usable_size(p), from);
            return p;
        }
        if (errno != ENOMEM)
            return NULL;
    }
    errno = ENOMEM;
    return NULL;
}

static void *nd_tier_malloc_one(int node, size_t size, size_t unused)
{
    (void)unused;
    return nd_malloc_node_fast(size, node);
}

static void *nd_tier_calloc_one(int node, size_t count, size_t size)
{
    return nd_calloc_node(count, size, node);
}

static void *nd_tier_aligned_one(int node, size_t alignment, size_t size)
{
    return nodal_aligned_alloc_node(alignment, size, node);
}

/* The register that carries `tier`, whole: on x86-64 its upper half is
   whatever the caller left there (the ABI extends nothing), so the word is
   below ND_TIER_COUNT only when it is the tier itself; any other word,
   the tier's too, takes the slow path, which reads the int. This spares
   the fast path the extension. */
static inline size_t nd_tier_word(int tier)
{
#if defined(__x86_64__)
    size_t w;
    __asm__("" : "=S"(w) : "0"(tier));   /* "S": rsi, the second argument's register */
    return w;
#else
    return (unsigned)tier;
#endif
}

/* The fast path's misses: no rseq CPU (a thread glibc registered none for,
   or valgrind), the table not built yet, an empty bin, a size above the
   classes, a preferred or bad tier. A strict tier with a known CPU goes
   straight to the node fast path (its own slow path refills the bin).
   word: nd_tier_word(tier), whose low half is the tier. */
static __attribute__((noinline)) void *nd_tier_malloc_slow(size_t size, size_t word)
{
    int tier = (int)word;
    nd_process_ensure();
    if ((unsigned)tier < ND_TIER_COUNT) {
        unsigned cpu = (unsigned)nd_os_current_cpu();
        if (cpu < (unsigned)nd_topo.cpu_limit) {   /* nd_tier_by_cpu has rows up to there */
            unsigned node = (uint8_t)nd_tier_by_cpu[cpu][tier];
            if (node < ND_MAX_NODES) {
                void *p = nd_malloc_node_fast(size, (int)node);
                if (p != NULL)
                    nd_thread_count_tier(tier, nd_usable_size(p), nd_topo_cpu_node((int)cpu));
                nd_thread_tier_resolve();   /* the next call's fast path (its node's cache exists now) */
                return p;
            }
        }
    }
    return nd_tier_walk(tier, nd_tier_malloc_one, size, 0);
}

nd_public void *nodal_malloc_tier(size_t size, int tier)
{
    /* The thread's caches for its CPU's tiers, resolved by the slow path
       when the CPU was another (thread.h): a thread that has not started,
       or has not resolved them, has only empty caches there, and the pop
       below fails. */
    nd_thread *th = nd_tls_thread;
    size_t t = nd_tier_word(tier);
    if (nd_unlikely(t >= ND_TIER_COUNT || nd_os_current_cpu_fast() != th->tier_cpu))
        return nd_tier_malloc_slow(size, t);
    nd_tcache *tc = th->tier_tc[t];
    size_t c;
    if (nd_unlikely(!nd_class_fast(size, &c)))
        return nd_tier_malloc_slow(size, t);
    ND_BIN_POP_THEN_OR(tc, c, nd_count_inc(&nd_bin_tier_hits(b_)[t]),
                       nd_tier_malloc_slow(size, t));
}

nd_public void *nodal_calloc_tier(size_t count, size_t size, int tier)
{
    return nd_tier_walk(tier, nd_tier_calloc_one, count, size);
}

nd_public void *nodal_aligned_alloc_tier(size_t alignment, size_t size, int tier)
{
    return nd_tier_walk(tier, nd_tier_aligned_one, alignment, size);
}

nd_public int nodal_tier_node(int tier, int from_node)
{
    nd_process_ensure();
    int n = nd_tier_node(tier, from_node);
    if (n < 0)
        errno = EINVAL;
    return n;
}

nd_public int nodal_tier_nodes(int tier, int from_node, int *nodes, int max)
{
    nd_process_ensure();
    if (nd_tier_node(tier, from_node) < 0 || (nodes == NULL && max > 0)) {
        errno = EINVAL;
        return -1;
    }
    for (int i = 0; i < nd_topo.mem_count && i < max; i++)
        nodes[i] = nd_tiers.order[from_node][tier][i];
    return nd_topo.mem_count;
}

nd_public int nodal_tier_attr_get(int from_node, int node, nodal_tier_attr *out)
{
    nd_process_ensure();
    if ((unsigned)from_node >= ND_MAX_NODES || !(nd_topo.flags[from_node] & ND_NODE_PRESENT) ||
        !nd_topo_node_has_memory(node) || out == NULL) {
        errno = EINVAL;
        return -1;
    }
    const nd_tier_attr *a = &nd_tiers.attr[from_node][node];
    out->read_latency_ns = a->read_latency;
    out->write_latency_ns = a->write_latency;
    out->read_bandwidth_mbps = a->read_bandwidth;
    out->write_bandwidth_mbps = a->write_bandwidth;
    out->mem_bytes = nd_tiers.mem_bytes[node];
    out->kernel_tier = nd_tiers.kernel_tier[node];
    out->near = (int)((nd_tiers.near[from_node] >> node) & 1);
    out->source = nd_tiers.source[from_node];
    return 0;
}
