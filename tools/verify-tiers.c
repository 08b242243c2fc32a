/*
 * verify-tiers.c - nodal-verify's memory tiers: for every node with CPUs,
 * what the kernel says about the nodes near it (the access attributes of
 * /sys/devices/system/node/nodeN/access0/initiators/ and the memory tiers
 * of /sys/devices/virtual/memory_tiering/), what nodal makes of it
 * (nodal_tier_node, nodal_tier_attr_get), a check that nodal's choice is
 * the kernel's best near node for every attribute the kernel gives, and a
 * placement check: from a thread pinned to the CPU node, every OS page of
 * blocks from nodal_malloc_tier is on that node (move_pages); then the
 * statistics per tier and CPU node (nodal_tier_stats_get), checked against
 * the calls the placement check made.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kview.h"
#include "nodal.h"
#include "verify.h"

static const char *const tier_names[3] = { "latency", "bandwidth", "capacity" };
static const char *const source_names[3] = { "distances", "HMAT", "measured file" };

struct kattr {
    long rl, wl, rb, wb;   /* -1 = not given */
    int linked;            /* the CPU node is among the target's access0 initiators */
};

static long read_long(const char *path)
{
    char buf[64];
    if (kv_read_text(path, buf, sizeof buf) < 0 || buf[0] < '0' || buf[0] > '9')
        return -1;
    return strtol(buf, NULL, 10);
}

static void kernel_attr(int cpu_node, int node, struct kattr *k)
{
    char dir[128], path[192];
    snprintf(dir, sizeof dir, "/sys/devices/system/node/node%d/access0/initiators", node);
    snprintf(path, sizeof path, "%s/read_latency", dir);
    k->rl = read_long(path);
    snprintf(path, sizeof path, "%s/write_latency", dir);
    k->wl = read_long(path);
    snprintf(path, sizeof path, "%s/read_bandwidth", dir);
    k->rb = read_long(path);
    snprintf(path, sizeof path, "%s/write_bandwidth", dir);
    k->wb = read_long(path);
    snprintf(path, sizeof path, "%s/node%d", dir, cpu_node);
    k->linked = access(path, F_OK) == 0;
}

/* The kernel's memory tier of a node ("memory_tier4"), or -1. */
static int kernel_tier(int node)
{
    for (int t = 0; t < 4096; t++) {
        char path[160], buf[512];
        int ids[MAX_NODES];
        snprintf(path, sizeof path, "/sys/devices/virtual/memory_tiering/memory_tier%d/nodelist", t);
        if (kv_read_text(path, buf, sizeof buf) < 0)
            continue;
        int n = kv_parse_list(buf, ids, MAX_NODES);
        for (int i = 0; i < n; i++)
            if (ids[i] == node)
                return t;
    }
    return -1;
}

static void fmt_val(char *buf, size_t len, long v, const char *unit)
{
    if (v < 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%ld %s", v, unit);
}

/* The blocks the placement checks got, and their usable bytes, per tier
   and CPU node. */
static unsigned long long made[3][MAX_NODES], made_bytes[3][MAX_NODES];

/* Blocks from nodal_malloc_tier on a thread pinned to the CPU node: every
   page on nodal_tier_node's node. */
static int check_placement(const struct node *cn, int tier, int want)
{
    if (pin(cn->cpus[0]) != 0)
        return 0;
    static const size_t sizes[] = { 64, 4096, 200 * 1024, 3 << 19 };
    int bad = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        void *p = nodal_malloc_tier(sizes[s], tier);
        if (p == NULL && errno == ENOMEM) {
            printf("  (node %d is full: nodal_malloc_tier(%zu, %s) gave ENOMEM)", want, sizes[s], tier_names[tier]);
            continue;
        }
        if (p == NULL) {
            printf("  FAIL: nodal_malloc_tier(%zu, %s) from node %d returned NULL (%s)\n", sizes[s],
                   tier_names[tier], cn->id, strerror(errno));
            bad++;
            continue;
        }
        memset(p, 1, sizes[s]);
        if (cn->id < MAX_NODES) {
            made[tier][cn->id]++;
            made_bytes[tier][cn->id] += nodal_malloc_usable_size(p);
        }
        int where;
        size_t off = pages_off_node(p, sizes[s], want, &where);
        if (off) {
            printf("  FAIL: %zu OS page(s) of a %zu-byte %s block from node %d are not on node %d (first on %d)\n",
                   off, sizes[s], tier_names[tier], cn->id, want, where);
            bad++;
        }
        free(p);
    }
    return bad;
}

static void fmt_bytes(char *buf, size_t len, unsigned long long b)
{
    if (b >= 1 << 20)
        snprintf(buf, len, "%.1f MiB", (double)b / (1 << 20));
    else
        snprintf(buf, len, "%llu B", b);
}

/* The statistics of every tier from every CPU node: what this run's calls
   added must be the calls it made (before: the counts at its start). */
static int check_stats(nodal_tier_stats before[3][MAX_NODES])
{
    int bad = 0;
    printf("  statistics (calls made from each CPU node, nodal_tier_stats_get):\n");
    printf("    %-9s %5s %5s %9s %12s %9s %12s %12s %8s\n", "tier", "from", "node", "requests", "bytes",
           "fallbacks", "cap_refusals", "cap_bytes", "cap");
    for (int t = 0; t < 3; t++) {
        for (int r = 0; r < ncpu_nodes; r++) {
            int c = nodes[cpu_nodes[r]].id;
            nodal_tier_stats s;
            if (c >= MAX_NODES || nodal_tier_stats_get(t, c, &s) != 0) {
                printf("    FAIL: nodal_tier_stats_get(%s, %d) failed\n", tier_names[t], c);
                bad++;
                continue;
            }
            char b[32], cb[32], cap[32];
            fmt_bytes(b, sizeof b, s.bytes);
            fmt_bytes(cb, sizeof cb, s.cap_bytes);
            if (s.cap)
                fmt_bytes(cap, sizeof cap, s.cap);
            else
                snprintf(cap, sizeof cap, "none");
            printf("    %-9s %5d %5d %9llu %12s %9llu %12llu %12s %8s", tier_names[t], c, s.node, s.requests, b,
                   s.fallbacks, s.cap_refusals, cb, cap);
            unsigned long long dr = s.requests - before[t][c].requests, db = s.bytes - before[t][c].bytes;
            if (dr != made[t][c] || db != made_bytes[t][c]) {
                printf("  FAIL: this run made %llu blocks (%llu bytes), the statistics grew by %llu (%llu)",
                       made[t][c], made_bytes[t][c], dr, db);
                bad++;
            }
            printf("\n");
        }
    }
    return bad;
}

int tiers_run(void)
{
    int failed = 0;
    static nodal_tier_stats before[3][MAX_NODES];
    for (int t = 0; t < 3; t++)
        for (int r = 0; r < ncpu_nodes; r++)
            if (nodes[cpu_nodes[r]].id < MAX_NODES)
                nodal_tier_stats_get(t, nodes[cpu_nodes[r]].id, &before[t][nodes[cpu_nodes[r]].id]);
    cpu_set_t saved;
    nodal_collect(1);   /* the placement checks' freed memory back to the OS: small nodes have room again */
    CPU_ZERO(&saved);
    sched_getaffinity(0, sizeof saved, &saved);
    nodal_tier_attr a;
    nodal_tier_attr_get(nodes[cpu_nodes[0]].id, nodes[cpu_nodes[0]].id, &a);
    printf("Memory tiers (attributes from %s; the kernel's memory tiers:", source_names[a.source]);
    for (int m = 0; m < nnodes; m++)
        printf(" %d=%d", nodes[m].id, kernel_tier(nodes[m].id));
    printf(")\n");
    for (int r = 0; r < ncpu_nodes; r++) {
        const struct node *cn = &nodes[cpu_nodes[r]];
        printf("  from node %d:\n", cn->id);
        printf("    %-5s %-5s %-22s %-22s %9s   %s\n", "node", "near", "kernel: read lat, bw",
               "nodal: read lat, bw", "MiB", "write lat, bw (kernel)");
        long best[3] = { -1, -1, -1 };
        int best_node[3] = { -1, -1, -1 };
        for (int m = 0; m < nnodes; m++) {
            int node = nodes[m].id;
            struct kattr k;
            kernel_attr(cn->id, node, &k);
            nodal_tier_attr_get(cn->id, node, &a);
            char kl[32], kb[32], nl[32], nb[32], wl[32], wb[32], kk[72], nn[72];
            fmt_val(kl, sizeof kl, k.linked ? k.rl : -1, "ns");
            fmt_val(kb, sizeof kb, k.linked ? k.rb : -1, "MB/s");
            fmt_val(nl, sizeof nl, a.read_latency_ns ? (long)a.read_latency_ns : -1, "ns");
            fmt_val(nb, sizeof nb, a.read_bandwidth_mbps ? (long)a.read_bandwidth_mbps : -1, "MB/s");
            fmt_val(wl, sizeof wl, k.linked ? k.wl : -1, "ns");
            fmt_val(wb, sizeof wb, k.linked ? k.wb : -1, "MB/s");
            snprintf(kk, sizeof kk, "%s, %s", kl, kb);
            snprintf(nn, sizeof nn, "%s, %s", nl, nb);
            printf("    %-5d %-5s %-22s %-22s %9llu   %s, %s\n", node, a.near ? "yes" : "no", kk, nn,
                   a.mem_bytes >> 20, wl, wb);
            if (k.linked && k.rl > 0 && (best[0] < 0 || k.rl < best[0]))
                best[0] = k.rl, best_node[0] = node;
            if (k.linked && k.rb > 0 && (best[1] < 0 || k.rb > best[1]))
                best[1] = k.rb, best_node[1] = node;
        }
        for (int t = 0; t < 3; t++) {
            int order[MAX_NODES];
            int n = nodal_tier_nodes(t, cn->id, order, MAX_NODES);
            printf("    %-9s -> node %d", tier_names[t], n > 0 ? order[0] : -1);
            for (int i = 1; i < n && i < MAX_NODES; i++)
                printf("%s%d", i == 1 ? " (then " : " ", order[i]);
            printf("%s", n > 1 ? ")" : "");
            /* The kernel's best, where it gives the attribute: ties are
               nodal's to break, so only a strictly better node counts. */
            if (t < 2 && best_node[t] >= 0 && n > 0 && best_node[t] != order[0]) {
                struct kattr k;
                kernel_attr(cn->id, order[0], &k);
                long mine = t == 0 ? k.rl : k.rb;
                if (!k.linked || mine != best[t]) {
                    printf("  FAIL: the kernel's attributes name node %d", best_node[t]);
                    failed++;
                }
            }
            int bad = n > 0 ? check_placement(cn, t, order[0]) : 1;
            printf("%s\n", bad ? "" : ", every page of its blocks there");
            failed += bad;
        }
    }
    failed += check_stats(before);
    printf("\n");
    sched_setaffinity(0, sizeof saved, &saved);
    return failed;
}
