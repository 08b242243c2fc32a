/* A program built against an installed nodal: allocates plain and node
   blocks, and prints what it needs the installed library to have done. */
#include <nodal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    char *p = malloc(100);
    void *q = nodal_malloc_node(64, 0);
    if (p == NULL || q == NULL)
        return 1;
    strcpy(p, "hello from nodal");
    printf("%s: %s, node of q = %d, usable %zu\n", nodal_version(), p, nodal_node_of(q),
           nodal_usable_size(p));
    free(q);
    free(p);
    return nodal_node_of(q) == -2;   /* always 0; keeps q "used" */
}
