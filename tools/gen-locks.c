/*
 * gen-locks.c - prints nodal's lock table (src/os/lock.h) as Markdown, for
 * src/README.md (a unit test keeps the two equal). Build-time helper; not
 * installed.
 *
 *   gen-locks md
 */
#include <stdio.h>
#include <string.h>
#include "lock.h"

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "md") != 0) {
        fprintf(stderr, "usage: gen-locks [md]\n");
        return 2;
    }
    printf("| rank | lock | instances | protects |\n|---:|---|---|---|\n");
    for (unsigned r = 0; r < ND_LOCK_ROWS; r++) {
        const nd_lock_row *row = &nd_lock_table[r];
        char count[32];
        if (row->count == 1)
            snprintf(count, sizeof count, "one");
        else if (row->count == ND_LOCKS_PER_NODE)
            snprintf(count, sizeof count, "one per node with memory");
        else if (row->count == ND_LOCKS_PER_NODE_KIND)
            snprintf(count, sizeof count, "two per node with memory");
        else if (row->count == ND_LOCKS_PER_NODE_KIND_SHARD)
            snprintf(count, sizeof count, "%d per node with memory", 2 * ND_LARGE_SHARDS);
        else
            snprintf(count, sizeof count, "%u", row->count);
        printf("| %u | `%s` | %s | %s |\n", r, row->name, count, row->protects);
    }
    return 0;
}
