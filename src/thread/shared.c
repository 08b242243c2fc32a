/*
 * shared.c - the shared heaps (see shared.h).
 */
#include "shared.h"

#include <errno.h>
#include "lock.h"
#include "nursery.h"
#include "route.h"
#include "tcache.h"

/* Created under ND_LOCK(shared_table, 0), then each used under its own
   ND_LOCK(shared_heap, 2 * node + bound); tc is also read without a lock
   (acquire) to see whether it exists. */
static nd_tcache *nd_shared[ND_MAX_NODES][2];

static nd_lock_t *nd_shared_lock(int node, bool bound) { return ND_LOCK(shared_heap, 2 * node + (bound ? 1 : 0)); }

static nd_tcache *nd_shared_get(int node, bool bound)
{
    nd_tcache **slot = &nd_shared[node][bound];
    nd_tcache *tc = nd_load_acquire(slot);
    if (tc != NULL)
        return tc;
    nd_lock(ND_LOCK(shared_table, 0));
    tc = *slot;
    if (tc == NULL) {
        tc = nd_tcache_create(ND_TID_SHARED, node, bound, true);
        if (tc != NULL)
            nd_store_release(slot, tc);
    }
    nd_unlock(ND_LOCK(shared_table, 0));
    return tc;
}

void *nd_shared_malloc(int node, bool bound, size_t alignment, size_t size)
{
    nd_tcache *tc = nd_shared_get(node, bound);
    if (tc == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    nd_lock(nd_shared_lock(node, bound));
    void *p = nd_route_malloc_aligned(tc, alignment, size);
    nd_unlock(nd_shared_lock(node, bound));
    return p;
}

/* The locked heaps of node n without a cache of their own: the shared
   heaps (i = 0 plain, 1 bound) and the nursery (2, nursery.h); NULL where
   there is none yet. */
#define ND_SHARED_PER_NODE 3
static nd_tcache *nd_shared_at(int n, int i)
{
    return i < 2 ? nd_load_acquire(&nd_shared[n][i]) : nd_nursery_of(n);
}

void nd_shared_stats_add(nd_snap_class *cls, nd_snap_totals *tot)
{
    for (int n = 0; n < ND_MAX_NODES; n++)
        for (int i = 0; i < ND_SHARED_PER_NODE; i++) {
            nd_tcache *tc = nd_shared_at(n, i);
            if (tc != NULL)
                nd_tcache_stats_add(tc, cls, tot);
        }
}

void nd_shared_fork_child(void)
{
    for (int n = 0; n < ND_MAX_NODES; n++)
        for (int i = 0; i < ND_SHARED_PER_NODE; i++) {
            nd_tcache *tc = nd_shared_at(n, i);
            if (tc != NULL)
                nd_heap_fork_child(&tc->heap);
        }
}
