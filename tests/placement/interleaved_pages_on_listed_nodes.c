/*
 * interleaved_pages_on_listed_nodes - nodal_malloc_interleaved(size, nodes,
 * count) returns a page-aligned block whose pages are all on the listed
 * nodes (all nodes with memory for NULL/0), spread over them: when the
 * block has at least two 2 MiB units per node (the kernel may interleave
 * transparent huge pages by 2 MiB), every listed node holds at least a
 * quarter of its fair share. The block keeps working with free().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nodal.h"
#include "placement.h"

static void check(const int *nodes, int count, size_t size, const char *label)
{
    const pt_topo *t = pt_topology();
    const int *list = nodes ? nodes : t->mem;
    int n = nodes && count ? count : t->nmem;
    size_t ps = (size_t)t->page_size;
    errno = 0;
    unsigned char *p = nodal_malloc_interleaved(size, nodes, count);
    if (!p) {
        pt_fail("nodal_malloc_interleaved(%zu, %s) returned NULL (%s); expected a block", size,
                label, strerror(errno));
        return;
    }
    if ((uintptr_t)p % ps)
        pt_fail("nodal_malloc_interleaved(%zu, %s) = %p; expected a page-aligned block", size,
                label, (void *)p);
    memset(p, 0x21, size);
    size_t pages = (size + ps - 1) / ps;
    void **addr = malloc(pages * sizeof *addr);
    int *st = malloc(pages * sizeof *st);
    size_t per[PT_MAX_NODES] = { 0 }, bad = 0;
    if (!addr || !st)
        pt_die("out of memory");
    for (size_t i = 0; i < pages; i++)
        addr[i] = p + i * ps;
    if (syscall(SYS_move_pages, 0, pages, addr, NULL, st, 0) != 0)
        pt_die("move_pages: %s", strerror(errno));
    for (size_t i = 0; i < pages; i++) {
        int listed = 0;
        for (int k = 0; k < n; k++)
            if (st[i] == list[k]) {
                per[k]++;
                listed = 1;
            }
        if (!listed && bad++ < 3)
            pt_fail("nodal_malloc_interleaved(%zu, %s): page %zu is on %s%d; expected one of "
                    "the listed nodes", size, label, i, st[i] < 0 ? "error " : "node ",
                    st[i] < 0 ? -st[i] : st[i]);
    }
    char dist[256];
    size_t off = 0;
    for (int k = 0; k < n && off < sizeof dist; k++)
        off += (size_t)snprintf(dist + off, sizeof dist - off, " node %d: %zu", list[k], per[k]);
    pt_info("interleaved %zu B over %s:%s pages", size, label, dist);
    if (size >= (size_t)n * (4u << 20)) {
        for (int k = 0; k < n; k++)
            if (per[k] * 4 * (size_t)n < pages)
                pt_fail("nodal_malloc_interleaved(%zu, %s): node %d holds %zu of %zu pages; "
                        "expected at least a quarter of an even share", size, label, list[k],
                        per[k], pages);
    }
    free(addr);
    free(st);
    free(p);
}

int main(int argc, char **argv)
{
    argc = pt_begin(argc, argv, "interleaved_pages_on_listed_nodes",
             "interleaved blocks have every page on a listed node, spread over all of them");
    pt_no_args(argc, argv);
    const pt_topo *t = pt_topology();
    static const size_t sizes[] = { 4096, 3 * 4096 + 5, 1 << 20, 16 << 20 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        check(NULL, 0, sizes[i], "all nodes (NULL)");
        check(t->mem, t->nmem, sizes[i], "every node listed");
        if (t->nmem >= 2) {
            int two[2] = { t->mem[t->nmem - 1], t->mem[0] };
            check(two, 2, sizes[i], "the last and the first node");
        }
        int one[1] = { t->mem[t->nmem - 1] };
        check(one, 1, sizes[i], "one node");
    }
    return pt_end();
}
