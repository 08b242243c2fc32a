/*
 * tiers.c - unit tests of the memory tiers (support/tier.c): the kernel's
 * access attributes, memory tiers and node sizes read from fixture sysfs
 * trees (tests/unit/fixtures/, made after what tools/numa-vm's guests
 * show), the measured file, the order of every tier from every node, the
 * fast path's per-CPU table and the caps. Linked against the debug core;
 * each case re-reads the fixture into the globals (every case runs in a
 * child of its own).
 */
#include "check.h"
#include "counters.h"
#include "options.h"
#include "tier.h"
#include "topo.h"

#ifndef ND_FIXTURES
#error "ND_FIXTURES (the fixture directory) must be defined"
#endif

static void load(const char *tree, const char *measured)
{
    nd_topo_read(tree);
    nd_tier_read(tree, measured);
}

/* Expects the order of tier t from node `from` to be want[0..n). */
static void expect_order(int t, int from, const int *want, int n)
{
    char got[128] = "", exp[128] = "";
    size_t gl = 0, el = 0;
    for (int i = 0; i < nd_topo.mem_count; i++)
        gl += (size_t)snprintf(got + gl, sizeof got - gl, " %d", nd_tiers.order[from][t][i]);
    for (int i = 0; i < n; i++)
        el += (size_t)snprintf(exp + el, sizeof exp - el, " %d", want[i]);
    EXPECT(nd_topo.mem_count == n && strcmp(got, exp) == 0, "the %s order from node %d to be%s, got%s",
           nd_tier_name(t), from, exp, got);
}

/* numa-vm --hmat -n 6: from each CPU node, its own memory is the fastest,
   the high-bandwidth node attached to it the widest, the large one the
   largest; the far nodes follow by distance, then the kernel's tier. */
static void hmat_attributes_name_each_tiers_node_per_cpu_node(void)
{
    load(ND_FIXTURES "/hmat6", NULL);
    EXPECT(nd_topo.mem_count == 6, "6 nodes with memory, got %d", nd_topo.mem_count);
    EXPECT(nd_tiers.source[0] == ND_TIER_SRC_HMAT && nd_tiers.source[1] == ND_TIER_SRC_HMAT,
           "the HMAT as the source of nodes 0 and 1, got %d and %d", nd_tiers.source[0], nd_tiers.source[1]);
    EXPECT(nd_tiers.near[0] == 0x15 && nd_tiers.near[1] == 0x2a,
           "near(0) = {0,2,4} and near(1) = {1,3,5}, got masks %#llx and %#llx",
           (unsigned long long)nd_tiers.near[0], (unsigned long long)nd_tiers.near[1]);
    EXPECT(nd_tiers.attr[0][2].read_latency == 120 && nd_tiers.attr[0][2].read_bandwidth == 40000 &&
           nd_tiers.attr[0][2].write_latency == 120 && nd_tiers.attr[0][2].write_bandwidth == 40000,
           "node 2 from node 0: 120 ns, 40000 MB/s, got %u ns, %u MB/s", nd_tiers.attr[0][2].read_latency,
           nd_tiers.attr[0][2].read_bandwidth);
    EXPECT(nd_tiers.attr[1][2].read_latency == 0, "no attribute for a pair the kernel does not link, got %u ns",
           nd_tiers.attr[1][2].read_latency);
    EXPECT(nd_tiers.mem_bytes[4] == (uint64_t)1024 << 20 && nd_tiers.mem_bytes[2] == (uint64_t)256 << 20,
           "MemTotal of nodes 4 and 2 (1024 and 256 MiB), got %llu and %llu",
           (unsigned long long)nd_tiers.mem_bytes[4], (unsigned long long)nd_tiers.mem_bytes[2]);
    EXPECT(nd_tiers.kernel_tier[0] == 4 && nd_tiers.kernel_tier[5] == 22,
           "the kernel's tiers 4 (node 0) and 22 (node 5), got %d and %d", nd_tiers.kernel_tier[0],
           nd_tiers.kernel_tier[5]);
    expect_order(ND_TIER_LATENCY, 0, (int[]){ 0, 2, 4, 1, 3, 5 }, 6);
    expect_order(ND_TIER_BANDWIDTH, 0, (int[]){ 2, 0, 4, 1, 3, 5 }, 6);
    expect_order(ND_TIER_CAPACITY, 0, (int[]){ 4, 0, 2, 1, 5, 3 }, 6);
    expect_order(ND_TIER_LATENCY, 1, (int[]){ 1, 3, 5, 0, 2, 4 }, 6);
    expect_order(ND_TIER_BANDWIDTH, 1, (int[]){ 3, 1, 5, 0, 2, 4 }, 6);
    expect_order(ND_TIER_CAPACITY, 1, (int[]){ 5, 1, 3, 0, 4, 2 }, 6);
    /* the fast path's table: CPUs 0-1 are node 0's, 2-3 node 1's */
    static const int want[ND_TIER_COUNT][4] = { { 0, 0, 1, 1 }, { 2, 2, 3, 3 }, { 4, 4, 5, 5 } };
    for (int t = 0; t < ND_TIER_COUNT; t++)
        for (int cpu = 0; cpu < 4; cpu++)
            EXPECT(nd_tier_by_cpu[cpu][t] == want[t][cpu], "the %s node of CPU %d to be %d, got %d",
                   nd_tier_name(t), cpu, want[t][cpu], nd_tier_by_cpu[cpu][t]);
    /* a node without CPUs sees the tiers as its closest CPU node does */
    EXPECT(nd_tier_node(ND_TIER_BANDWIDTH, 4) == 2 && nd_tier_node(ND_TIER_CAPACITY, 3) == 5,
           "from memory-only nodes 4 and 3, the tiers of nodes 0 and 1 (2, 5), got %d, %d",
           nd_tier_node(ND_TIER_BANDWIDTH, 4), nd_tier_node(ND_TIER_CAPACITY, 3));
    EXPECT(nd_tier_node(3, 0) == -1 && nd_tier_node(0, 6) == -1 && nd_tier_node(0, -1) == -1,
           "-1 for a bad tier or node");
}

/* Without an HMAT (numa-vm -n 4): a CPU node's near nodes are its own and
   the memory-only node attached to it; latency and bandwidth name the
   nearest, capacity the largest near node. */
static void without_hmat_tiers_follow_distances_and_sizes(void)
{
    load(ND_FIXTURES "/nohmat4", NULL);
    EXPECT(nd_tiers.source[0] == ND_TIER_SRC_DISTANCE, "distances as the source, got %d", nd_tiers.source[0]);
    EXPECT(nd_tiers.near[0] == 0x5 && nd_tiers.near[1] == 0xa, "near(0) = {0,2}, near(1) = {1,3}, got %#llx, %#llx",
           (unsigned long long)nd_tiers.near[0], (unsigned long long)nd_tiers.near[1]);
    expect_order(ND_TIER_LATENCY, 0, (int[]){ 0, 2, 1, 3 }, 4);
    expect_order(ND_TIER_BANDWIDTH, 0, (int[]){ 0, 2, 1, 3 }, 4);
    expect_order(ND_TIER_CAPACITY, 0, (int[]){ 0, 2, 1, 3 }, 4);
    expect_order(ND_TIER_LATENCY, 1, (int[]){ 1, 3, 0, 2 }, 4);
    expect_order(ND_TIER_CAPACITY, 1, (int[]){ 3, 1, 0, 2 }, 4);
}

/* The measured file (nodal-verify --matrix --save) orders by its values
   when the kernel gives no HMAT. */
static void measured_file_orders_the_tiers_without_hmat(void)
{
    load(ND_FIXTURES "/nohmat4", ND_FIXTURES "/nohmat4.measured");
    EXPECT(nd_tiers.source[0] == ND_TIER_SRC_MEASURED, "the measured file as the source, got %d",
           nd_tiers.source[0]);
    EXPECT(nd_tiers.attr[0][2].read_bandwidth == 30000 && nd_tiers.attr[1][3].read_latency == 140,
           "the file's values (30000 MB/s, 140 ns), got %u, %u", nd_tiers.attr[0][2].read_bandwidth,
           nd_tiers.attr[1][3].read_latency);
    expect_order(ND_TIER_LATENCY, 0, (int[]){ 0, 2, 1, 3 }, 4);
    expect_order(ND_TIER_BANDWIDTH, 0, (int[]){ 2, 0, 1, 3 }, 4);
    expect_order(ND_TIER_BANDWIDTH, 1, (int[]){ 3, 1, 0, 2 }, 4);
}

/* A line that is not five numbers: the file is ignored as a whole. */
static void a_malformed_measured_file_is_ignored(void)
{
    load(ND_FIXTURES "/nohmat4", ND_FIXTURES "/bad.measured");
    EXPECT(nd_tiers.source[0] == ND_TIER_SRC_DISTANCE && nd_tiers.attr[0][0].read_latency == 0,
           "distances as the source and no values, got source %d, %u ns", nd_tiers.source[0],
           nd_tiers.attr[0][0].read_latency);
    load(ND_FIXTURES "/nohmat4", ND_FIXTURES "/no-such-file");
    EXPECT(nd_tiers.source[0] == ND_TIER_SRC_DISTANCE, "a missing file to be ignored, got source %d",
           nd_tiers.source[0]);
}

/* An HMAT wins over a measured file. */
static void the_kernels_attributes_win_over_the_measured_file(void)
{
    load(ND_FIXTURES "/hmat6", ND_FIXTURES "/nohmat4.measured");
    EXPECT(nd_tiers.source[0] == ND_TIER_SRC_HMAT && nd_tiers.attr[0][0].read_latency == 80,
           "the HMAT's 80 ns, got source %d, %u ns", nd_tiers.source[0], nd_tiers.attr[0][0].read_latency);
}

/* Every order of every fixture is a permutation of the nodes with memory. */
static void every_order_lists_every_node_once(void)
{
    const char *trees[] = { ND_FIXTURES "/hmat6", ND_FIXTURES "/nohmat4", "/sys" };
    for (int f = 0; f < 3; f++) {
        load(trees[f], NULL);
        for (int c = 0; c < ND_MAX_NODES; c++) {
            if (!(nd_topo.flags[c] & ND_NODE_PRESENT))
                continue;
            for (int t = 0; t < ND_TIER_COUNT; t++) {
                uint64_t seen = 0;
                for (int i = 0; i < nd_topo.mem_count; i++) {
                    int m = nd_tiers.order[c][t][i];
                    EXPECT(nd_topo_node_has_memory(m) && !((seen >> m) & 1),
                           "%s: the %s order from node %d to list node %d once, a node with memory",
                           trees[f], nd_tier_name(t), c, m);
                    seen |= (uint64_t)1 << m;
                }
            }
        }
    }
}

/* tier_bandwidth_max caps the nodes the bandwidth tier names first (2 and
   3 here), and only those. */
static void a_tier_cap_counts_only_its_first_choices(void)
{
    nd_opt_values[ND_OPT_tier_bandwidth_max] = 64 << 20;
    load(ND_FIXTURES "/hmat6", NULL);
    EXPECT(nd_tiers.cap_tiers[2] == 1u << ND_TIER_BANDWIDTH && nd_tiers.cap_tiers[3] == 1u << ND_TIER_BANDWIDTH &&
           nd_tiers.cap_tiers[0] == 0 && nd_tiers.cap_tiers[4] == 0,
           "nodes 2 and 3 capped by the bandwidth tier alone, got %#x %#x %#x %#x", nd_tiers.cap_tiers[2],
           nd_tiers.cap_tiers[3], nd_tiers.cap_tiers[0], nd_tiers.cap_tiers[4]);
    size_t before2 = nd_gauge.bound_mapped[2], before3 = nd_gauge.bound_mapped[3];
    nd_gauge.bound_mapped[2] = 40 << 20;
    nd_gauge.bound_mapped[3] = 20 << 20;
    EXPECT(!nd_tier_over_cap(3, 4 << 20), "60 + 4 MiB to fit a 64 MiB cap");
    EXPECT(nd_tier_over_cap(2, 8 << 20), "60 + 8 MiB to exceed a 64 MiB cap (the two nodes together)");
    EXPECT(!nd_tier_over_cap(0, (size_t)1 << 30), "node 0 to have no cap");
    nd_gauge.bound_mapped[2] = before2;
    nd_gauge.bound_mapped[3] = before3;
    nd_opt_values[ND_OPT_tier_bandwidth_max] = 0;
}

/* What a tier's cap counts (the statistics' cap_bytes), capped or not:
   the node-bound memory on the nodes the tier names first, all of them
   or the one it names from a CPU node. */
static void cap_bytes_count_each_tiers_first_choices(void)
{
    load(ND_FIXTURES "/hmat6", NULL);
    EXPECT(nd_tiers.first_tiers[2] == 1u << ND_TIER_BANDWIDTH && nd_tiers.first_tiers[0] == 1u << ND_TIER_LATENCY &&
           nd_tiers.first_tiers[4] == 1u << ND_TIER_CAPACITY && nd_tiers.cap_tiers[2] == 0,
           "nodes 2, 0 and 4 first of the bandwidth, latency and capacity tiers, no cap, got %#x %#x %#x (cap %#x)",
           nd_tiers.first_tiers[2], nd_tiers.first_tiers[0], nd_tiers.first_tiers[4], nd_tiers.cap_tiers[2]);
    size_t before[6];
    for (int n = 0; n < 6; n++) {
        before[n] = nd_gauge.bound_mapped[n];
        nd_gauge.bound_mapped[n] = (size_t)(n + 1) << 22;   /* node n: n + 1 segments */
    }
    EXPECT(nd_tier_cap_bytes(ND_TIER_BANDWIDTH, -1) == (size_t)(3 + 4) << 22,
           "the bandwidth tier to count nodes 2 and 3 (28 MiB), got %zu", nd_tier_cap_bytes(ND_TIER_BANDWIDTH, -1));
    EXPECT(nd_tier_cap_bytes(ND_TIER_LATENCY, -1) == (size_t)(1 + 2) << 22,
           "the latency tier to count nodes 0 and 1 (12 MiB), got %zu", nd_tier_cap_bytes(ND_TIER_LATENCY, -1));
    EXPECT(nd_tier_cap_bytes(ND_TIER_CAPACITY, 1) == (size_t)6 << 22,
           "the capacity tier from node 1 to count node 5 (24 MiB), got %zu", nd_tier_cap_bytes(ND_TIER_CAPACITY, 1));
    EXPECT(!nd_tier_over_cap(2, (size_t)1 << 40), "no cap set: nothing over it");
    for (int n = 0; n < 6; n++)
        nd_gauge.bound_mapped[n] = before[n];
}

/* The tables by CPU have rows for the CPUs the kernel can give
   (devices/system/cpu/possible: 0-5 in hmat6, whose nodes list CPUs 0-3
   online), not for ND_MAX_CPUS: the rows above are never written, so they
   take no memory (docs/how-it-works.md, "What every process holds"), and
   a CPU id above them counts as unknown. Before, all 4,096 rows of both
   tables were written (16 KiB of nd_tier_by_cpu, 8 KiB of cpu_node). */
static void per_cpu_tables_hold_rows_for_the_possible_cpus_only(void)
{
    load(ND_FIXTURES "/hmat6", NULL);
    EXPECT(nd_topo.cpu_count == 4 && nd_topo.cpu_limit == 6, "CPUs 0-3 known, 0-5 possible, got %d and %d",
           nd_topo.cpu_count, nd_topo.cpu_limit);
    for (int cpu = 4; cpu < 6; cpu++) {
        EXPECT(nd_topo.cpu_node[cpu] == -1 && nd_topo_cpu_node(cpu) == nd_topo.mem_ids[0],
               "possible CPU %d, not online, to be of no node (node %d), got %d", cpu, nd_topo.mem_ids[0],
               nd_topo.cpu_node[cpu]);
        for (int t = 0; t < ND_TIER_COUNT; t++)
            EXPECT(nd_tier_by_cpu[cpu][t] == nd_tiers.order[nd_topo.mem_ids[0]][t][0],
                   "possible CPU %d's %s node to be its node's first, %d, got %d", cpu, nd_tier_name(t),
                   nd_tiers.order[nd_topo.mem_ids[0]][t][0], nd_tier_by_cpu[cpu][t]);
    }
    int written = 0;
    for (int cpu = 6; cpu < ND_MAX_CPUS; cpu++)
        written += nd_topo.cpu_node[cpu] != 0 || nd_tier_by_cpu[cpu][ND_TIER_BANDWIDTH] != 0 ||
                   nd_tier_by_cpu[cpu][ND_TIER_CAPACITY] != 0;
    EXPECT(written == 0, "no row above the possible CPUs to be written, got %d", written);
    EXPECT(nd_topo_cpu_node(6) == nd_topo.mem_ids[0] && nd_topo_cpu_node(ND_MAX_CPUS - 1) == nd_topo.mem_ids[0],
           "a CPU id above the possible ones to be of no node");

    /* No node information (a container without /sys/devices/system/node):
       node 0 holds the possible CPUs, not ND_MAX_CPUS of them. */
    load(ND_FIXTURES "/nonode3", NULL);
    EXPECT(nd_topo.mem_count == 1 && nd_topo.cpu_count == 3 && nd_topo.cpu_limit == 3,
           "one node and CPUs 0-2, got %d node(s), %d and %d CPUs", nd_topo.mem_count, nd_topo.cpu_count,
           nd_topo.cpu_limit);
    EXPECT(nd_topo_cpu_node(2) == 0 && nd_topo.cpu_node[4] == 0 && nd_tier_by_cpu[4][ND_TIER_CAPACITY] == 0,
           "CPU 2 on node 0, the rows above the possible CPUs cleared of the read before");
}

/* On a machine of one node start-up writes one OS page of the tier table
   (79 KiB): the table starts on a page, its small per-node arrays and the
   order rows of node 0 lie in that page, and a row of the attribute
   matrix that no HMAT entry wrote is left unwritten (read, not cleared).
   On main the order rows came first and the small arrays 12 KiB later,
   and node 0's attribute row was cleared: three pages (issue 18, the
   small programs' fixed memory). */
static void a_one_node_machine_writes_one_page_of_the_tier_table(void)
{
    const char *t = (const char *)&nd_tiers;
    EXPECT((uintptr_t)t % 4096 == 0, "the tier table to start on an OS page, it starts at %p", (const void *)t);
    size_t small_end = (size_t)((const char *)(&nd_tiers.any_cap + 1) - t);
    size_t row0_end = (size_t)((const char *)&nd_tiers.order[1] - t);
    EXPECT(small_end <= 4096 && row0_end <= 4096,
           "the small arrays (to %zu) and node 0's order rows (to %zu) to lie in the first 4096 bytes", small_end,
           row0_end);
    load(ND_FIXTURES "/nonode3", NULL);
    EXPECT(nd_topo.mem_count == 1, "one node, got %d", nd_topo.mem_count);
    int set = 0;
    for (int m = 0; m < ND_MAX_NODES; m++)
        set += nd_tiers.attr[0][m].read_latency != 0 || nd_tiers.attr[0][m].read_bandwidth != 0;
    EXPECT(set == 0, "no attribute of node 0 without HMAT, got %d", set);
}

static const struct nd_case cases[] = {
    ND_CASE(a_one_node_machine_writes_one_page_of_the_tier_table),
    ND_CASE(hmat_attributes_name_each_tiers_node_per_cpu_node),
    ND_CASE(without_hmat_tiers_follow_distances_and_sizes),
    ND_CASE(measured_file_orders_the_tiers_without_hmat),
    ND_CASE(a_malformed_measured_file_is_ignored),
    ND_CASE(the_kernels_attributes_win_over_the_measured_file),
    ND_CASE(every_order_lists_every_node_once),
    ND_CASE(a_tier_cap_counts_only_its_first_choices),
    ND_CASE(cap_bytes_count_each_tiers_first_choices),
    ND_CASE(per_cpu_tables_hold_rows_for_the_possible_cpus_only),
};
ND_MAIN(cases)
