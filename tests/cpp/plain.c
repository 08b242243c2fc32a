/*
 * plain.c - a C program that links libnodal and allocates: its dynamic
 * dependencies must not include libstdc++ (no_libstdcxx.sh checks them),
 * although libnodal defines C++ operator new/delete.
 */
#include <nodal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    char *p = malloc(1000);
    void *q = nodal_malloc_node(64, 0);
    if (p == NULL || q == NULL)
        return 1;
    strcpy(p, "plain C with nodal");
    int ok = nodal_usable_size(p) >= 1000 && strcmp(p, "plain C with nodal") == 0;
    printf("%s: %s\n", p, ok ? "ok" : "wrong");
    free(q);
    free(p);
    return ok ? 0 : 1;
}
