/*
 * jepool.h - jemalloc as a NUMA pool (seed 000's design), for comparison:
 * one explicit arena per node whose extents are mmapped and mbind()ed to that
 * node by extent hooks, one explicit tcache per (thread, node) created lazily
 * in the thread itself, and mallocx/dallocx with MALLOCX_ARENA|MALLOCX_TCACHE.
 * jemalloc is dlopen()ed with RTLD_LOCAL, so it does not replace the
 * program's malloc.
 */
#ifndef BENCH_JEPOOL_H
#define BENCH_JEPOOL_H

#include <stddef.h>

/* 0 on success; -1 with a message on stderr. May re-exec the program once
   (see jepool.c) to make room for jemalloc's static TLS. */
int jepool_init(void);
void *jepool_alloc(size_t size, int node);
void jepool_free(void *p, size_t size, int node);

#endif
