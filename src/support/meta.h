/*
 * meta.h - memory for nodal's own bookkeeping (thread records, heaps and
 * their cache arrays), taken straight from the OS layer so that nodal never
 * calls the public malloc on itself.
 *
 * Objects are cache-line aligned and zeroed. Freed objects go on a free list
 * per exact size and are reused by the next request of that size; their
 * memory is never unmapped (heaps are type-stable, which keeps late readers
 * of a recycled heap safe).
 */
#ifndef ND_META_H
#define ND_META_H

#include <stddef.h>
#include "config.h"

void *nd_meta_alloc(size_t size) nd_hidden;      /* zeroed, 64-byte aligned; NULL on failure */
/* The same with only the first `zero` bytes zeroed (a recycled object's
   rest keeps old contents): for objects with a big array the owner fills. */
void *nd_meta_alloc_head(size_t size, size_t zero) nd_hidden;
/* The same, but a fresh object's zeroed head is not written: its pages stay
   the mapping's untouched zero pages until the owner writes them (a
   recycled object's head is zeroed, written). For an object of which a
   thread uses a few scattered parts (the transfer stores' shards). */
void *nd_meta_alloc_untouched(size_t size, size_t zero) nd_hidden;
void  nd_meta_free(void *p, size_t size) nd_hidden;
size_t nd_meta_mapped(void) nd_hidden;            /* bytes mapped for metadata */

/* fork(): the lock is taken in prepare and released in parent and child. */

#endif /* ND_META_H */
