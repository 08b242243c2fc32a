/*
 * gen-options.c - prints nodal's option table (src/options.h) as Markdown
 * (for the README and the man page) or as plain text (for nodal-run
 * --list-options). Build-time helper; not installed.
 *
 *   gen-options md|text|man
 */
#include <stdio.h>
#include <string.h>
#include "options.h"

static void value(char *buf, size_t len, const nd_opt_desc *d, long v)
{
    if (d->kind == ND_OPTK_ENUM) {
        const char *s = d->names;
        for (long i = 0; i < v && s; i++) {
            s = strchr(s, '|');
            if (s)
                s++;
        }
        size_t n = s ? strcspn(s, "|") : 0;
        snprintf(buf, len, "%.*s", (int)n, s ? s : "?");
    } else if (d->kind == ND_OPTK_SIZE && v >= 1024 && v % 1024 == 0) {
        if (v % (1024 * 1024) == 0)
            snprintf(buf, len, "%ldm", v / (1024 * 1024));
        else
            snprintf(buf, len, "%ldk", v / 1024);
    } else {
        snprintf(buf, len, "%ld", v);
    }
}

static void range(char *buf, size_t len, const nd_opt_desc *d)
{
    if (d->kind == ND_OPTK_ENUM) {
        snprintf(buf, len, "%s", d->names);
        for (char *c = buf; *c; c++)
            if (*c == '|')
                *c = '/';
        return;
    }
    char lo[32], hi[32];
    value(lo, sizeof lo, d, d->lo);
    value(hi, sizeof hi, d, d->hi);
    snprintf(buf, len, "%s..%s", lo, hi);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "md";
    char def[32], rng[64];
    if (strcmp(mode, "md") == 0) {
        printf("| option | default | range | meaning |\n|---|---|---|---|\n");
        for (int i = 0; i < ND_OPT_COUNT; i++) {
            const nd_opt_desc *d = &nd_opt_table[i];
            value(def, sizeof def, d, d->def);
            range(rng, sizeof rng, d);
            printf("| `%s` | %s | %s | %s |\n", d->name, def, rng, d->meaning);
        }
    } else if (strcmp(mode, "man") == 0) {
        for (int i = 0; i < ND_OPT_COUNT; i++) {
            const nd_opt_desc *d = &nd_opt_table[i];
            value(def, sizeof def, d, d->def);
            range(rng, sizeof rng, d);
            printf(".TP\n.BR %s \" (default %s, %s)\"\n%s\n", d->name, def, rng, d->meaning);
        }
    } else {
        for (int i = 0; i < ND_OPT_COUNT; i++) {
            const nd_opt_desc *d = &nd_opt_table[i];
            value(def, sizeof def, d, d->def);
            range(rng, sizeof rng, d);
            printf("%-16s default %-8s %-18s %s\n", d->name, def, rng, d->meaning);
        }
    }
    return 0;
}
