/*
 * tier_blocks_on_the_kernels_node - from every node with CPUs, every OS
 * page of every block nodal_malloc_tier (and its calloc and aligned forms)
 * returns for each attribute is on the node the kernel's attributes name,
 * memory-only nodes included; nodal_tier_node says the same node; and the
 * tier statistics (nodal_tier_stats_get) count each call, and its usable
 * bytes, for the CPU node it ran on, across the thread's moves.
 *
 * The expected node is worked out here from /sys alone, never from nodal:
 *   with an HMAT (some nodeN/access0/initiators/ holds values): among the
 *     nodes whose access0 initiators include the CPU node, the lowest
 *     read_latency (latency), the highest read_bandwidth (bandwidth), the
 *     most MemTotal (capacity); a tie allows any of the tied nodes;
 *   without: docs/tiers.md's fallback: latency and bandwidth name the CPU
 *     node itself (it has memory here), capacity the largest of the CPU
 *     node and the memory-only nodes whose closest CPU node it is.
 * Blocks come from a thread pinned to each CPU of the node in turn: sizes
 * of small, medium, large and huge blocks, 200 of each class size.
 * --expect-hmat 1 (run-vm.sh's HMAT boot) fails the test when the kernel
 * shows no HMAT; --expect-hmat 0 when it shows one.
 *
 *   tier_blocks_on_the_kernels_node [--expect-hmat 0|1] [-v]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kview.h"
#include "nodal.h"
#include "placement.h"

static const char *const names[3] = { "latency", "bandwidth", "capacity" };

static long sys_long(int node, const char *file)
{
    char path[160], buf[64];
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d/access0/initiators/%s", node, file);
    if (kv_read_text(path, buf, sizeof buf) < 0 || buf[0] < '0' || buf[0] > '9')
        return -1;
    return strtol(buf, NULL, 10);
}

static int linked(int target, int cpu_node)
{
    char path[160];
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d/access0/initiators/node%d", target, cpu_node);
    return access(path, F_OK) == 0;
}

/* ok[m] = 1 for every node the kernel's view allows for tier t from c. */
static void expected(int t, int c, int hmat, int ok[PT_MAX_NODES])
{
    const pt_topo *tp = pt_topology();
    long best = -1;
    memset(ok, 0, sizeof(int) * PT_MAX_NODES);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < tp->nmem; i++) {
            int m = tp->mem[i];
            int near;
            if (hmat) {
                near = linked(m, c);
            } else if (pt_node_get(m)->has_cpus) {
                near = m == c;
            } else {
                /* memory-only: near to its closest CPU node(s) */
                int d = pt_sys_distance(m, c), closest = 1;
                for (int k = 0; k < tp->ncpunode; k++)
                    if (pt_sys_distance(m, tp->cpunode[k]) < d)
                        closest = 0;
                near = closest;
            }
            if (!near)
                continue;
            long v;
            if (t == 2)
                v = pt_node_get(m)->total_kib;
            else if (!hmat)
                v = m == c ? 1 : -1;
            else if (t == 0)
                v = sys_long(m, "read_latency") > 0 ? 1000000000L - sys_long(m, "read_latency") : -1;
            else
                v = sys_long(m, "read_bandwidth");
            if (pass == 0 && v > best)
                best = v;
            if (pass == 1 && v == best && v >= 0)
                ok[m] = 1;
        }
    }
}

int main(int argc, char **argv)
{
    argc = pt_begin(argc, argv, "tier_blocks_on_the_kernels_node",
                    "every page of a tier block is on the node the kernel's attributes name, from every CPU node");
    const char *want_hmat = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--expect-hmat") && i + 1 < argc)
            want_hmat = argv[++i];
        else
            pt_die("usage: %s [--expect-hmat 0|1] [-v]", argv[0]);
    }
    const pt_topo *tp = pt_topology();
    int hmat = 0;
    for (int i = 0; i < tp->nmem; i++)
        hmat |= sys_long(tp->mem[i], "read_latency") > 0 || sys_long(tp->mem[i], "read_bandwidth") > 0;
    if (want_hmat && atoi(want_hmat) != hmat)
        pt_fail("the kernel %s an HMAT; this run expects %s", hmat ? "shows" : "shows no",
                atoi(want_hmat) ? "one" : "none");
    pt_info("%s; %d node(s) with memory, %d with CPUs", hmat ? "the firmware gives an HMAT" : "no HMAT: the fallback",
            tp->nmem, tp->ncpunode);

    size_t sizes[64];
    int ns = pt_class_sizes(sizes, 48);
    ns += pt_large_sizes(sizes + ns, 6);
    ns += pt_huge_sizes(sizes + ns, 3, 8u << 20);
    pt_batch *b = pt_batch_new();
    size_t blocks = 0;
    int seen[PT_MAX_NODES] = { 0 };
    static nodal_tier_stats before[3][PT_MAX_NODES];
    static unsigned long long made[3][PT_MAX_NODES], made_bytes[3][PT_MAX_NODES];
    for (int k = 0; k < tp->ncpunode; k++)
        for (int t = 0; t < 3; t++)
            if (nodal_tier_stats_get(t, tp->cpunode[k], &before[t][tp->cpunode[k]]) != 0)
                pt_fail("nodal_tier_stats_get(%s, %d) failed (%s)", names[t], tp->cpunode[k], strerror(errno));
    for (int k = 0; k < tp->ncpunode; k++) {
        int c = tp->cpunode[k];
        const pt_node *cn = pt_node_get(c);
        for (int t = 0; t < 3; t++) {
            int ok[PT_MAX_NODES];
            expected(t, c, hmat, ok);
            int want = nodal_tier_node(t, c);
            if (want < 0 || want >= PT_MAX_NODES || !ok[want]) {
                pt_fail("nodal_tier_node(%s, %d) = %d, not a node the kernel's attributes name", names[t], c, want);
                continue;
            }
            seen[want] = 1;
            for (int ci = 0; ci < cn->ncpus; ci++) {
                if (pt_pin(cn->cpus[ci]) != 0)
                    pt_die("cannot pin to CPU %d", cn->cpus[ci]);
                for (int s = 0; s < ns; s++) {
                    void *live[200];
                    int count = sizes[s] <= 128 * 1024 ? 200 : 2, nl = 0;
                    for (int r = 0; r < count; r++) {
                        void *p = r % 3 == 0   ? nodal_malloc_tier(sizes[s], t)
                                  : r % 3 == 1 ? nodal_calloc_tier(1, sizes[s], t)
                                               : nodal_aligned_alloc_tier(64, sizes[s], t);
                        if (p == NULL) {
                            pt_fail("a %s call for %zu bytes from CPU %d (node %d) returned NULL (%s)", names[t],
                                    sizes[s], cn->cpus[ci], c, strerror(errno));
                            continue;
                        }
                        pt_touch(p, sizes[s], 0x5a);
                        made[t][c]++;
                        made_bytes[t][c] += nodal_malloc_usable_size(p);
                        pt_batch_add(b, p, sizes[s], want, names[t], (unsigned long)sizes[s]);
                        live[nl++] = p;
                        blocks++;
                    }
                    pt_batch_flush(b);
                    for (int i = 0; i < nl; i++)
                        free(live[i]);
                }
            }
        }
    }
    pt_batch_flush(b);
    for (int k = 0; k < tp->ncpunode; k++) {
        int c = tp->cpunode[k];
        for (int t = 0; t < 3; t++) {
            nodal_tier_stats now;
            if (nodal_tier_stats_get(t, c, &now) != 0) {
                pt_fail("nodal_tier_stats_get(%s, %d) failed (%s)", names[t], c, strerror(errno));
                continue;
            }
            unsigned long long dr = now.requests - before[t][c].requests, db = now.bytes - before[t][c].bytes;
            if (dr != made[t][c] || db != made_bytes[t][c])
                pt_fail("the %s tier's statistics from node %d grew by %llu blocks (%llu bytes); the calls made "
                        "there returned %llu (%llu bytes)", names[t], c, dr, db, made[t][c], made_bytes[t][c]);
        }
    }
    int memonly = 0;
    for (int i = 0; i < tp->nmem; i++)
        memonly += seen[tp->mem[i]] && !pt_node_get(tp->mem[i])->has_cpus;
    pt_info("%zu blocks, %zu OS pages checked, %zu off their node; %d memory-only node(s) among the tiers' nodes",
            blocks, pt_batch_pages(b), pt_batch_bad_pages(b), memonly);
    if (hmat && memonly == 0 && tp->nmem > tp->ncpunode)
        pt_fail("with an HMAT and memory-only nodes, expected a tier to name one");
    pt_batch_free(b);
    return pt_end();
}
