/*
 * gen-options.c - prints nodal's option table (src/support/options.h) as Markdown
 * (for docs/options.md), man page text (for nodal(3) and nodal-run(1)) or plain
 * text. Build-time helper; not installed.
 *
 *   gen-options md|man|text
 */
#include <stdio.h>
#include "options-doc.h"

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "md";
    if (nd_options_doc(stdout, mode) != 0) {
        fprintf(stderr, "usage: gen-options md|man|text\n");
        return 2;
    }
    return 0;
}
