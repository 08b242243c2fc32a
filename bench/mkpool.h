/*
 * mkpool.h - memkind (Debian libmemkind0 1.14) as a node pool, for
 * comparison with nodal's node API and the jemalloc pool. Two ways of
 * targeting a node, both with hard placement (MPOL_BIND):
 *
 *   memkind      one "fixed" kind per node (memkind_create_fixed) over an
 *                area that is mmapped and mbind()ed to the node before
 *                anything touches it. Any node, any number of nodes in one
 *                process. memkind gives dynamic kinds no thread cache.
 *   memkind-hbw  memkind's static MEMKIND_HBW kind with MEMKIND_HBW_NODES set
 *                to the node: the environment-variable way people use today
 *                for one memory-only node; it has a thread cache, but one
 *                process can target only that one node.
 *
 * libmemkind.so.0 is dlopen()ed (RTLD_LOCAL): its jemalloc is private
 * (jemk_ names), so the program's malloc stays what it was. BENCH_MEMKIND
 * overrides the library path; BENCH_MEMKIND_AREA the size of each node's
 * area (default: the node's memory size).
 */
#ifndef BENCH_MKPOOL_H
#define BENCH_MKPOOL_H

#include <stddef.h>

/* 0 on success; -1 with a message on stderr (library missing). */
int mkpool_init(void);
void *mkpool_alloc(size_t size, int node);
void mkpool_free(void *p, size_t size, int node);

/* The MEMKIND_HBW variant: the first node asked for becomes the process's
   only node; a request for another one fails (NULL, message once). */
int mkpool_hbw_init(void);
void *mkpool_hbw_alloc(size_t size, int node);
void mkpool_hbw_free(void *p, size_t size, int node);

#endif
