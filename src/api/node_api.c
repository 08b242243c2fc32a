/*
 * node_api.c - the public node API that is not an allocation fast path:
 * topology queries, nodal_node_of, local and interleaved allocation.
 * (nodal_malloc_node / calloc / aligned / realloc live in alloc.c.)
 */
#include <errno.h>
#include <string.h>
#include "alloc.h"
#include "huge.h"
#include "init.h"
#include "os.h"
#include "topo.h"

nd_public int nodal_node_count(void)
{
    nd_process_ensure();
    return nd_topo.mem_count;
}

nd_public int nodal_node_ids(int *ids, int max)
{
    nd_process_ensure();
    for (int i = 0; i < nd_topo.mem_count && i < max; i++)
        ids[i] = nd_topo.mem_ids[i];
    return nd_topo.mem_count;
}

static bool nd_node_present(int node)
{
    return (unsigned)node < ND_MAX_NODES && (nd_topo.flags[node] & ND_NODE_PRESENT);
}

nd_public int nodal_node_has_memory(int node)
{
    nd_process_ensure();
    if (!nd_node_present(node)) {
        errno = EINVAL;
        return -1;
    }
    return (nd_topo.flags[node] & ND_NODE_HAS_MEM) != 0;
}

nd_public int nodal_node_has_cpus(int node)
{
    nd_process_ensure();
    if (!nd_node_present(node)) {
        errno = EINVAL;
        return -1;
    }
    return (nd_topo.flags[node] & ND_NODE_HAS_CPU) != 0;
}

nd_public int nodal_node_distance(int from, int to)
{
    nd_process_ensure();
    if (!nd_node_present(from) || !nd_node_present(to)) {
        errno = EINVAL;
        return -1;
    }
    int d = nd_topo.distance[from][to];
    return d != 0 ? d : (from == to ? 10 : 20);
}

nd_public int nodal_current_node(void)
{
    nd_process_ensure();
    return nd_topo_current_node();
}

nd_public int nodal_node_of(const void *p)
{
    if (p == NULL)
        return -1;
    nd_segment *s = nd_seg_of(p);
    /* Not nodal's: outside every segment, past a short segment's end or
       in a hole of one (segment.h: another mapping may be there now). */
    if (s == NULL || !nd_seg_cookie_ok(s) || !nd_seg_maps(s, p))
        return -1;
    if (s->bound && !s->interleaved)
        return s->node;
    /* Plain (or interleaved) memory: ask the kernel where the page is.
       move_pages says -ENOENT for a page not yet touched (then: the node of
       the CPU that created the segment). Other errors (-EFAULT while NUMA
       balancing samples the page) fall back to get_mempolicy, which reports
       the node of a present page. */
    void *page = (void *)((uintptr_t)p & ~(uintptr_t)(nd_os_page_size() - 1));
    int status = -1;
    if (nd_os_pages_nodes(&page, &status, 1) == 0) {
        if (status >= 0)
            return status;
        if (status != -ENOENT) {
            int node = nd_os_addr_node(page);
            if (node >= 0)
                return node;
        }
    }
    return s->node;
}

nd_public void *nodal_malloc_local(size_t size)
{
    nd_process_ensure();
    return nd_malloc_node_fast(size, nd_topo_local_mem_node(nd_topo_current_node()));
}

nd_public void *nodal_malloc_interleaved(size_t size, const int *nodes, int count)
{
    nd_process_ensure();
    uint64_t mask[ND_MAX_NODES / 64];
    memset(mask, 0, sizeof mask);
    int first = -1;
    if (nodes == NULL || count <= 0) {
        for (int i = 0; i < nd_topo.mem_count; i++)
            mask[nd_topo.mem_ids[i] / 64] |= (uint64_t)1 << (nd_topo.mem_ids[i] % 64);
        first = nd_topo.mem_ids[0];
    } else {
        for (int i = 0; i < count; i++) {
            if (!nd_topo_node_has_memory(nodes[i])) {
                errno = EINVAL;
                return NULL;
            }
            mask[nodes[i] / 64] |= (uint64_t)1 << (nodes[i] % 64);
            if (first < 0)
                first = nodes[i];
        }
    }
    if (size > (size_t)PTRDIFF_MAX) {
        errno = ENOMEM;
        return NULL;
    }
    return nd_huge_alloc(size == 0 ? 1 : size, nd_os_page_size(), first, false, mask);
}
