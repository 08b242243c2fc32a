/*
 * topology_matches_kernel - nodal's view of the machine is the kernel's:
 * nodal_node_count and nodal_node_ids list exactly the nodes in
 * /sys/devices/system/node/has_memory (ascending, holes allowed);
 * nodal_node_has_memory / nodal_node_has_cpus agree with /sys for every
 * online node; nodal_node_distance equals nodeN/distance for every pair;
 * and nodal_current_node, from a thread pinned to each usable CPU, is the
 * node getcpu(2) reports.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nodal.h"
#include "placement.h"

int main(int argc, char **argv)
{
    argc = pt_begin(argc, argv, "topology_matches_kernel",
             "nodal's node list, memory/CPU flags, distances and current node match the "
             "kernel's");
    pt_no_args(argc, argv);
    const pt_topo *t = pt_topology();
    int ids[NODAL_MAX_NODES + 1];
    int count = nodal_node_count();
    int n = nodal_node_ids(ids, NODAL_MAX_NODES);
    if (count != t->nmem)
        pt_fail("nodal_node_count() = %d; expected %d (nodes in /sys/.../has_memory)", count,
                t->nmem);
    if (n != t->nmem)
        pt_fail("nodal_node_ids() = %d; expected %d", n, t->nmem);
    for (int i = 0; i < n && i < t->nmem; i++)
        if (ids[i] != t->mem[i])
            pt_fail("nodal_node_ids()[%d] = %d; expected %d", i, ids[i], t->mem[i]);
    /* A short buffer still reports the full count. */
    if (t->nmem > 1 && nodal_node_ids(ids, 1) != t->nmem)
        pt_fail("nodal_node_ids(ids, 1) did not return the full count %d", t->nmem);

    for (int i = 0; i < t->nnodes; i++) {
        const pt_node *nd = &t->node[i];
        int m = nodal_node_has_memory(nd->id), c = nodal_node_has_cpus(nd->id);
        if (m != nd->has_memory)
            pt_fail("nodal_node_has_memory(%d) = %d; expected %d", nd->id, m, nd->has_memory);
        /* /sys may list CPUs this process may not use; nodal may count those. */
        if (nd->has_cpus && c != 1)
            pt_fail("nodal_node_has_cpus(%d) = %d; expected 1", nd->id, c);
        for (int j = 0; j < t->nnodes; j++) {
            int to = t->node[j].id;
            int want = pt_sys_distance(nd->id, to), got = nodal_node_distance(nd->id, to);
            if (want >= 0 && got != want)
                pt_fail("nodal_node_distance(%d, %d) = %d; expected %d (nodeN/distance)",
                        nd->id, to, got, want);
        }
    }
    for (int i = 0; i < t->nnodes; i++) {
        const pt_node *nd = &t->node[i];
        for (int c = 0; c < nd->ncpus; c++) {
            if (pt_pin(nd->cpus[c]) != 0)
                pt_die("cannot pin to CPU %d: %s", nd->cpus[c], strerror(errno));
            int kernel = pt_cpu_node(), got = nodal_current_node();
            if (got != kernel)
                pt_fail("nodal_current_node() on CPU %d = %d; expected %d (getcpu)",
                        nd->cpus[c], got, kernel);
        }
    }
    pt_info("%d node(s) with memory, %d with usable CPUs", t->nmem, t->ncpunode);
    return pt_end();
}
