/*
 * gen-stats.c - prints nodal's statistics table (src/base/counters.h) as
 * Markdown, for docs/statistics.md (a lint test keeps the two equal). Build-time
 * helper; not installed.
 *
 *   gen-stats md
 */
#include <stdio.h>
#include <string.h>
#include "counters.h"

int main(int argc, char **argv)
{
    static const char *kinds[] = { "counter", "gauge", "peak" };
    static const char *scopes[] = { "process", "per class", "per node", "per tier and CPU node" };
    static const char *units[] = { "count", "bytes", "ratio" };
    static const char *where[] = { "JSON", "text, JSON", "summary line, text, JSON" };
    if (argc > 1 && strcmp(argv[1], "md") != 0) {
        fprintf(stderr, "usage: gen-stats [md]\n");
        return 2;
    }
    printf("| field | scope | kind | unit | shown in | meaning |\n|---|---|---|---|---|---|\n");
    for (int i = 0; i < ND_STAT_COUNT; i++) {
        const nd_stat_desc *d = &nd_stat_table[i];
        printf("| `%s` | %s | %s | %s | %s | %s |\n", d->name, scopes[d->scope], kinds[d->kind],
               units[d->unit], where[d->level], d->meaning);
    }
    return 0;
}
