/*
 * heap_profile_splits_nodes.c - with prof=1 (NODAL_OPTIONS from the plan,
 * or set here), the heap profile's text report puts each site's live bytes
 * on the node they are on: site_a's blocks asked for on the first node
 * with memory, site_b's on the last, and the split matches the 60 / 40 %
 * of bytes the two sites hold within 5 points. The nodes are what the
 * kernel says the sampled blocks' pages are on (get_mempolicy at the dump),
 * which this test also checks by itself for every block (move_pages).
 */
#include <errno.h>
#include <nodal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "placement.h"

void *site_a(size_t n, int node);
void *site_b(size_t n, int node);
/* Each writes its block after the call, so the call is not a tail call
   (which would leave no frame of the site in the stack). */
__attribute__((noinline)) void *site_a(size_t n, int node)
{
    char *p = nodal_malloc_node(n, node);
    if (p != NULL)
        memset(p, 1, n);
    return p;
}
__attribute__((noinline)) void *site_b(size_t n, int node)
{
    char *p = nodal_malloc_node(n, node);
    if (p != NULL)
        memset(p, 2, n);
    return p;
}

/* Called through pointers: no specialized copy (site_a.constprop.0, a
   name the dynamic symbol table lacks) replaces them. */
static void *(*volatile call_a)(size_t, int) = site_a;
static void *(*volatile call_b)(size_t, int) = site_b;

/* Live bytes on node `node` of the sites whose frames name fn, summed (a
   program linked statically keeps nodal's frames in its stacks, so one
   site of the program may be several stacks). */
static long site_bytes(const char *txt, const char *fn, int node)
{
    char pat[64], key[32];
    snprintf(pat, sizeof pat, " %s+", fn);
    snprintf(key, sizeof key, " node%d=", node);
    long sum = 0;
    for (const char *line = strstr(txt, "\n#"); line != NULL; line = strstr(line + 1, "\n#")) {
        const char *next = strstr(line + 1, "\n#");
        const char *hit = strstr(line, pat);
        if (hit == NULL || (next != NULL && hit > next))
            continue;
        const char *eol = strchr(line + 1, '\n');
        const char *k = strstr(line, key);
        if (k != NULL && k < eol)
            sum += atol(k + strlen(key));
    }
    return sum;
}

int main(int argc, char **argv)
{
    pt_no_args(pt_begin(argc, argv, "heap_profile_splits_nodes",
                        "the heap profile puts each site's live bytes on the node the kernel has them on"), argv);
    if (nodal_option_get("prof") != 1)
        return pt_skip("run with NODAL_OPTIONS=prof=1,prof_rate=16k (the placement plan does)");
    int ids[NODAL_MAX_NODES];
    int n = nodal_node_ids(ids, NODAL_MAX_NODES);
    if (n < 2)
        return pt_skip("one node with memory here");
    int na = ids[0], nb = ids[n - 1];
    enum { BLOCKS = 20000 };
    static void *a[BLOCKS], *b[BLOCKS];
    size_t size = 640;
    for (int i = 0; i < BLOCKS; i++) {
        a[i] = call_a(size * 3 / 2, na);   /* 60 % of the bytes */
        b[i] = call_b(size, nb);           /* 40 % */
        if (a[i] == NULL || b[i] == NULL)
            pt_die("nodal_malloc_node failed");
    }
    /* The kernel's view of where every block is. */
    for (int i = 0; i < BLOCKS; i += 97) {
        pt_where w;
        if (pt_where_is(a[i], size * 3 / 2, na, &w) != 0 || w.on_node != w.pages)
            pt_fail("site_a's block %d is not all on node %d", i, na);
        if (pt_where_is(b[i], size, nb, &w) != 0 || w.on_node != w.pages)
            pt_fail("site_b's block %d is not all on node %d", i, nb);
    }
    const char *path = "/tmp/nodal-heap-profile-splits-nodes";
    if (nodal_profile_dump(path) != 0)
        pt_die("nodal_profile_dump(%s): %s", path, strerror(errno));
    char file[128];
    snprintf(file, sizeof file, "%s.txt", path);
    FILE *f = fopen(file, "r");
    static char txt[1 << 20];
    size_t len = f ? fread(txt, 1, sizeof txt - 1, f) : 0;
    if (f)
        fclose(f);
    txt[len] = '\0';
    long a_on_a = site_bytes(txt, "site_a", na), a_on_b = site_bytes(txt, "site_a", nb);
    long b_on_b = site_bytes(txt, "site_b", nb), b_on_a = site_bytes(txt, "site_b", na);
    double sa = (double)(a_on_a + a_on_b), sb = (double)(b_on_a + b_on_b);
    pt_info("site_a: node%d=%ld node%d=%ld; site_b: node%d=%ld node%d=%ld", na, a_on_a, nb, a_on_b, na, b_on_a, nb,
            b_on_b);
    if (a_on_a <= 0 || a_on_b != 0 || b_on_b <= 0 || b_on_a != 0)
        pt_fail("expected site_a's bytes all on node %d and site_b's all on node %d; the report:\n%.4000s", na, nb,
                txt);
    double ta = sa + sb > 0 ? 100 * sa / (sa + sb) : 0;
    if (ta < 55 || ta > 65)
        pt_fail("site_a holds %.1f%% of the two sites' bytes, expected 60 +- 5", ta);
    for (int i = 0; i < BLOCKS; i++) {
        free(a[i]);
        free(b[i]);
    }
    return pt_end();
}
