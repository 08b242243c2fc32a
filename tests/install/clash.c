/* A program whose own functions and variables carry names that nodal uses
   inside: it links with libnodal.a and with libnodal_prefix.a only if the
   archives keep those names to themselves (as libnodal.so does). Each of its
   definitions must be the one its calls reach, and nodal must still work. */
#include <nodal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Names of nodal's internal functions and tables, with other meanings. */
int nd_warn(const char *what) { return (int)strlen(what); }
int nd_heap_init(int x) { return x + 1; }
int nd_os_abort(void) { return 7; }
int nd_lock(int *x) { return ++*x; }
int nd_page_collect(void) { return 11; }
long nd_opt_table[4] = {1, 2, 3, 4};
int nd_topo = 5;
void *nd_meta_alloc(size_t n) { return n == 42 ? (void *)nd_opt_table : NULL; }

int main(void)
{
    int l = 0;
    if (nd_warn("four") != 4 || nd_heap_init(1) != 2 || nd_os_abort() != 7 || nd_lock(&l) != 1 ||
        nd_page_collect() != 11 || nd_opt_table[3] != 4 || nd_topo != 5 ||
        nd_meta_alloc(42) != (void *)nd_opt_table) {
        fprintf(stderr, "clash: a call reached a definition other than the program's own\n");
        return 1;
    }
    int ids[NODAL_MAX_NODES];
    int n = nodal_node_ids(ids, NODAL_MAX_NODES);
    char *p = nodal_malloc_node(1000, ids[n - 1]);
    char *q = nodal_malloc(100);
    if (n < 1 || p == NULL || q == NULL || nodal_node_of(p) != ids[n - 1]) {
        fprintf(stderr, "clash: nodal's calls failed beside the program's nd_* names\n");
        return 1;
    }
    memset(p, 1, 1000);
    memset(q, 2, 100);
    nodal_free(p);
    nodal_free(q);
    printf("clash: own nd_* names and nodal side by side\n");
    return 0;
}
