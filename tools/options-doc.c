/*
 * options-doc.c - prints the option table (src/support/options.h) for people, with
 * the same value formatting the library's messages use.
 */
#include "options-doc.h"

#include <string.h>
#include "options.h"

/* Plain text wrapped at 78 columns. */
static void wrapped(FILE *out, const char *s)
{
    size_t col = 0;
    while (*s) {
        size_t n = strcspn(s, " ");
        if (col > 0 && col + 1 + n > 78) {
            fputc('\n', out);
            col = 0;
        } else if (col > 0) {
            fputc(' ', out);
            col++;
        }
        fwrite(s, 1, n, out);
        col += n;
        s += n;
        while (*s == ' ')
            s++;
    }
    fputc('\n', out);
}

/* Man page text: a backslash-free line with '-' escaped, and no line
   starting with '.' or '\''. */
static void man_text(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '-')
            fputs("\\-", out);
        else if (*s == '\\')
            fputs("\\e", out);
        else
            fputc(*s, out);
    }
}

int nd_options_doc(FILE *out, const char *mode)
{
    char def[64], rng[128];
    if (strcmp(mode, "md") == 0) {
        fprintf(out, "| option | default | values | meaning |\n|---|---|---|---|\n");
        for (int i = 0; i < ND_OPT_COUNT; i++) {
            const nd_opt_desc *d = &nd_opt_table[i];
            nd_opt_format_value(d, d->def, def, sizeof def);
            nd_opt_format_range(d, rng, sizeof rng);
            fprintf(out, "| `%s` | %s | %s | %s |\n", d->name, def, rng, d->meaning);
        }
        fprintf(out, "\n%s\n", ND_OPT_SPELLINGS);
    } else if (strcmp(mode, "man") == 0) {
        for (int i = 0; i < ND_OPT_COUNT; i++) {
            const nd_opt_desc *d = &nd_opt_table[i];
            nd_opt_format_value(d, d->def, def, sizeof def);
            nd_opt_format_range(d, rng, sizeof rng);
            fprintf(out, ".TP\n.BR %s \" (default ", d->name);
            man_text(out, def);
            fputs("; ", out);
            man_text(out, rng);
            fputs(")\"\n", out);
            man_text(out, d->meaning);
            fputc('\n', out);
        }
        fputs(".PP\n", out);
        man_text(out, ND_OPT_SPELLINGS);
        fputc('\n', out);
    } else if (strcmp(mode, "text") == 0) {
        fprintf(out, "%-16s %-9s %-22s %s\n", "option", "default", "values", "meaning");
        for (int i = 0; i < ND_OPT_COUNT; i++) {
            const nd_opt_desc *d = &nd_opt_table[i];
            nd_opt_format_value(d, d->def, def, sizeof def);
            nd_opt_format_range(d, rng, sizeof rng);
            fprintf(out, "%-16s %-9s %-22s %s\n", d->name, def, rng, d->meaning);
        }
        fputc('\n', out);
        wrapped(out, ND_OPT_SPELLINGS);
    } else {
        return -1;
    }
    return 0;
}
