/*
 * options-doc.h - nodal's option table as documentation: Markdown (the
 * README), man page text (nodal(3), nodal-run(1)) and plain text
 * (nodal-run --list-options). Used by gen-options and nodal-run.
 */
#ifndef ND_OPTIONS_DOC_H
#define ND_OPTIONS_DOC_H

#include <stdio.h>

/* mode: "md", "man" or "text"; returns 0, or -1 for an unknown mode. */
int nd_options_doc(FILE *out, const char *mode);

#endif
