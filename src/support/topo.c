/*
 * topo.c - reads the NUMA topology from /sys/devices/system/node once.
 * Owns nd_topo. Runs during process initialisation, so it must not allocate:
 * everything is parsed from fixed buffers.
 */
#include "topo.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "options.h"
#include "os.h"
#include "out.h"

nd_topo_t nd_topo;

#define ND_SYS_NODE "%s/devices/system/node"

/* Parses a kernel list ("0-3,8,10-11") and calls fn for every id. */
void nd_parse_list(const char *s, void (*fn)(int id, void *arg), void *arg)
{
    while (*s) {
        while (*s == ',' || *s == ' ' || *s == '\n')
            s++;
        if (*s < '0' || *s > '9')
            break;
        long a = 0, b;
        while (*s >= '0' && *s <= '9')
            a = a * 10 + (*s++ - '0');
        b = a;
        if (*s == '-') {
            s++;
            b = 0;
            while (*s >= '0' && *s <= '9')
                b = b * 10 + (*s++ - '0');
        }
        for (long i = a; i <= b && i < 1 << 20; i++)
            fn((int)i, arg);
    }
}

static void nd_mark_flag(int id, void *arg)
{
    if (id >= 0 && id < ND_MAX_NODES)
        nd_topo.flags[id] |= (uint8_t)(uintptr_t)arg;
    else if (nd_opt_verbose())
        nd_warn("node %d is beyond NODAL_MAX_NODES (%d) and is ignored", id, ND_MAX_NODES);
}

/* CPUs [from, to) become known ones, of no node yet. */
static void nd_topo_limit_cpus(int to)
{
    for (int c = nd_topo.cpu_limit; c < to; c++)
        nd_topo.cpu_node[c] = -1;
    if (to > nd_topo.cpu_limit)
        nd_topo.cpu_limit = to;
}

static void nd_mark_possible(int cpu, void *arg)
{
    (void)arg;
    if (cpu >= 0 && cpu < ND_MAX_CPUS)
        nd_topo_limit_cpus(cpu + 1);
}

static void nd_mark_cpu(int cpu, void *arg)
{
    int node = (int)(intptr_t)arg;
    if (cpu >= 0 && cpu < ND_MAX_CPUS) {
        nd_topo_limit_cpus(cpu + 1);   /* a node's CPU the possible list left out */
        nd_topo.cpu_node[cpu] = (int16_t)node;
        if (cpu + 1 > nd_topo.cpu_count)
            nd_topo.cpu_count = cpu + 1;
    }
}

static void nd_topo_single_node(void)
{
    nd_topo.flags[0] = ND_NODE_PRESENT | ND_NODE_HAS_MEM | ND_NODE_HAS_CPU;
    nd_topo.distance[0][0] = 10;
    for (int c = 0; c < nd_topo.cpu_limit; c++)
        nd_topo.cpu_node[c] = 0;
    nd_topo.cpu_count = nd_topo.cpu_limit;
}

void nd_topo_init(void)
{
    nd_topo_read("/sys");
}

void nd_topo_read(const char *sys)
{
    char buf[4096], path[ND_SYS_PATH_MAX];
    /* Clears what an earlier read wrote (a test reads fixture trees one
       after another): the first finds the table zero, as the loader left
       it, and the CPU rows it does not write stay untouched (topo.h). */
    memset(&nd_topo, 0, offsetof(nd_topo_t, cpu_node) + (size_t)nd_topo.cpu_limit * sizeof nd_topo.cpu_node[0]);
    nd_format_path(path, sizeof path, "%s/devices/system/cpu/possible", sys);
    if (nd_os_read_file(path, buf, sizeof buf) > 0)
        nd_parse_list(buf, nd_mark_possible, NULL);
    if (nd_topo.cpu_limit == 0)
        nd_topo_limit_cpus(ND_MAX_CPUS);

    nd_format_path(path, sizeof path, ND_SYS_NODE "/online", sys);
    if (nd_os_read_file(path, buf, sizeof buf) <= 0) {
        nd_topo_single_node();
    } else {
        nd_parse_list(buf, nd_mark_flag, (void *)(uintptr_t)ND_NODE_PRESENT);
        nd_format_path(path, sizeof path, ND_SYS_NODE "/has_memory", sys);
        if (nd_os_read_file(path, buf, sizeof buf) > 0)
            nd_parse_list(buf, nd_mark_flag, (void *)(uintptr_t)ND_NODE_HAS_MEM);
        else
            for (int n = 0; n < ND_MAX_NODES; n++)
                if (nd_topo.flags[n] & ND_NODE_PRESENT)
                    nd_topo.flags[n] |= ND_NODE_HAS_MEM;
        for (int n = 0; n < ND_MAX_NODES; n++) {
            if (!(nd_topo.flags[n] & ND_NODE_PRESENT))
                continue;
            nd_format_path(path, sizeof path, ND_SYS_NODE "/node%d/cpulist", sys, n);
            if (nd_os_read_file(path, buf, sizeof buf) > 0 && buf[0] >= '0' && buf[0] <= '9') {
                nd_topo.flags[n] |= ND_NODE_HAS_CPU;
                nd_parse_list(buf, nd_mark_cpu, (void *)(intptr_t)n);
            }
            nd_format_path(path, sizeof path, ND_SYS_NODE "/node%d/distance", sys, n);
            if (nd_os_read_file(path, buf, sizeof buf) > 0) {
                /* One distance per present node, in id order. */
                const char *s = buf;
                for (int m = 0; m < ND_MAX_NODES && *s; m++) {
                    if (!(nd_topo.flags[m] & ND_NODE_PRESENT))
                        continue;
                    while (*s == ' ')
                        s++;
                    int d = 0;
                    while (*s >= '0' && *s <= '9')
                        d = d * 10 + (*s++ - '0');
                    nd_topo.distance[n][m] = (uint8_t)(d > 255 ? 255 : d);
                }
            }
        }
        bool any_mem = false;
        for (int n = 0; n < ND_MAX_NODES; n++)
            any_mem |= (nd_topo.flags[n] & ND_NODE_HAS_MEM) != 0;
        if (!any_mem) {
            memset(nd_topo.flags, 0, sizeof nd_topo.flags);
            nd_topo_single_node();
        }
    }

    for (int n = 0; n < ND_MAX_NODES; n++) {
        if (nd_topo.flags[n] & ND_NODE_HAS_MEM)
            nd_topo.mem_ids[nd_topo.mem_count++] = n;
        if (nd_topo.distance[n][n] == 0 && (nd_topo.flags[n] & ND_NODE_PRESENT))
            nd_topo.distance[n][n] = 10;
    }
    /* The closest node with memory, for every present node. */
    for (int n = 0; n < ND_MAX_NODES; n++) {
        nd_topo.nearest_mem[n] = nd_topo.mem_ids[0];
        if (!(nd_topo.flags[n] & ND_NODE_PRESENT))
            continue;
        int best = -1, best_d = 1 << 30;
        for (int i = 0; i < nd_topo.mem_count; i++) {
            int m = nd_topo.mem_ids[i];
            int d = m == n ? 0 : (nd_topo.distance[n][m] ? nd_topo.distance[n][m] : 255);
            if (d < best_d)
                best = m, best_d = d;
        }
        if (best >= 0)
            nd_topo.nearest_mem[n] = best;
    }
    /* A CPU id out of the table, or unknown, is on mem_ids[0]
       (nd_topo_cpu_node): the one node only if every known CPU is too. */
    nd_topo.one_mem_node = nd_topo.mem_ids[0];
    for (int cpu = 0; cpu < nd_topo.cpu_limit; cpu++)
        if (nd_topo_local_mem_node(nd_topo_cpu_node(cpu)) != nd_topo.mem_ids[0])
            nd_topo.one_mem_node = -1;
}

bool nd_topo_node_has_memory(int node)
{
    return (unsigned)node < ND_MAX_NODES && (nd_topo.flags[node] & ND_NODE_HAS_MEM);
}

nd_hot int nd_topo_cpu_node(int cpu)
{
    if (cpu < 0 || cpu >= nd_topo.cpu_limit || nd_topo.cpu_node[cpu] < 0)
        return nd_topo.mem_ids[0];
    return nd_topo.cpu_node[cpu];
}

nd_hot int nd_topo_current_node(void)
{
    return nd_topo_cpu_node(nd_os_current_cpu());
}

nd_hot int nd_topo_local_mem_node(int node)
{
    if (nd_topo_node_has_memory(node))
        return node;
    if ((unsigned)node < ND_MAX_NODES)
        return nd_topo.nearest_mem[node];
    return nd_topo.mem_ids[0];
}

nd_hot bool nd_topo_cpus_span_mem_nodes(void)
{
    int first = -1;
    for (int cpu = 0; cpu < nd_topo.cpu_count; cpu++) {
        if (nd_topo.cpu_node[cpu] < 0)
            continue;
        int m = nd_topo_local_mem_node(nd_topo.cpu_node[cpu]);
        if (first < 0)
            first = m;
        else if (m != first)
            return true;
    }
    return false;
}
