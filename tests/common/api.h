/*
 * api.h - the allocation functions a test calls, as a table, so one test
 * source checks both name sets:
 *
 *   "std"     malloc, free, ... (the override: libnodal.so / libnodal.a)
 *   "prefix"  nodal_malloc, nodal_free, ... (any nodal library)
 *
 * The variant comes from --variant=std|prefix. Programs linked against a
 * library without the override (nodal_prefix, nodal_prefix_san) are compiled
 * with ND_TEST_PREFIX_ONLY: there the standard names are the system's, so the
 * "std" table does not exist and "prefix" is the default.
 *
 * Calling through pointers also keeps the compiler from treating these as
 * the builtins it knows (it may otherwise fold malloc(SIZE_MAX) to NULL or
 * drop a malloc/free pair).
 */
#ifndef ND_TEST_API_H
#define ND_TEST_API_H

#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "nodal.h"

struct nd_api {
    const char *name;
    void  *(*malloc)(size_t);
    void   (*free)(void *);
    void  *(*calloc)(size_t, size_t);
    void  *(*realloc)(void *, size_t);
    void  *(*reallocarray)(void *, size_t, size_t);
    int    (*posix_memalign)(void **, size_t, size_t);
    void  *(*aligned_alloc)(size_t, size_t);
    void  *(*memalign)(size_t, size_t);
    void  *(*valloc)(size_t);
    void  *(*pvalloc)(size_t);
    void   (*free_sized)(void *, size_t);
    void   (*free_aligned_sized)(void *, size_t, size_t);
    size_t (*usable_size)(const void *);       /* malloc_usable_size */
    size_t (*usable_size_twin)(const void *);  /* nodal_usable_size, or NULL */
};

static const struct nd_api nd_api_prefix = {
    "prefix",
    nodal_malloc, nodal_free, nodal_calloc, nodal_realloc, nodal_reallocarray,
    nodal_posix_memalign, nodal_aligned_alloc, nodal_memalign, nodal_valloc,
    nodal_pvalloc, nodal_free_sized, nodal_free_aligned_sized,
    nodal_malloc_usable_size, nodal_usable_size,
};

#ifndef ND_TEST_PREFIX_ONLY
/* C23 names that glibc 2.36 does not declare; libnodal must export them.
   Weak, so a missing export fails the case that needs it, not the link. */
extern void free_sized(void *p, size_t size) __attribute__((weak));
extern void free_aligned_sized(void *p, size_t alignment, size_t size) __attribute__((weak));

static size_t nd_std_usable_size(const void *p)
{
    return malloc_usable_size((void *)p);
}

static const struct nd_api nd_api_std = {
    "std",
    malloc, free, calloc, realloc, reallocarray,
    posix_memalign, aligned_alloc, memalign, valloc,
    pvalloc, free_sized, free_aligned_sized,
    nd_std_usable_size, NULL,
};
#endif

/* The table chosen by --variant (read once; no locking needed after the
   first call from the main thread). */
__attribute__((unused))
static const struct nd_api *nd_api(void)
{
    static const struct nd_api *chosen;
    if (chosen)
        return chosen;
#ifdef ND_TEST_PREFIX_ONLY
    if (nd_variant && strcmp(nd_variant, "prefix") != 0) {
        fprintf(stderr, "FAIL: this build of the test has only --variant=prefix\n");
        _exit(2);
    }
    chosen = &nd_api_prefix;
#else
    if (!nd_variant || strcmp(nd_variant, "std") == 0) {
        chosen = &nd_api_std;
    } else if (strcmp(nd_variant, "prefix") == 0) {
        chosen = &nd_api_prefix;
    } else {
        fprintf(stderr, "FAIL: unknown --variant=%s (std or prefix)\n", nd_variant);
        _exit(2);
    }
#endif
    return chosen;
}

/* "malloc" for std, "nodal_malloc" for prefix: for failure messages. */
__attribute__((unused))
static const char *nd_fn(const char *name)
{
    static char buf[8][48];
    static int next;
    if (strcmp(nd_api()->name, "std") == 0)
        return name;
    char *b = buf[next++ % 8];
    snprintf(b, sizeof buf[0], "nodal_%s", name);
    return b;
}

/* Is p a multiple of a (a power of two)? */
__attribute__((unused))
static int is_aligned(const void *p, size_t a)
{
    return ((uintptr_t)p & (a - 1)) == 0;
}

/* Bytes nodal counts in live blocks right now. */
__attribute__((unused))
static size_t allocated_now(void)
{
    nodal_memory_info mi;
    EXPECT(nodal_memory_info_get(&mi) == 0, "nodal_memory_info_get to succeed");
    return mi.allocated;
}

/* A sanity requirement of the std table: the library must export a name
   that glibc does not have. */
#define ND_NEED(fnptr, what)                                                 \
    do {                                                                     \
        if (!(fnptr))                                                        \
            FAIL("the library to export %s (C23), but it does not", what);   \
    } while (0)

#endif /* ND_TEST_API_H */
