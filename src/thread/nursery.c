/*
 * nursery.c - the nurseries (see nursery.h): per node, the shared heap
 * whose pages serve the first blocks of each small class to threads'
 * plain caches; its take and maintenance (its statistics and fork: with
 * the shared heaps', shared.c).
 */
#include "nursery.h"

#include <errno.h>
#include "lock.h"
#include "options.h"
#include "topo.h"

/* Per node, a heap without a cache (shared: used under ND_LOCK(nursery,
   node)), whose pages serve plain caches' first blocks of each small
   class (nursery.h). Created on first use; read without the lock
   (acquire) by the statistics.
   Invariants: nd_nursery[n] is NULL or a cache made with shared = true
   whose heap is plain memory of node n, with id ND_TID_NURSERY (checked
   with its heap's invariants after each take in debug builds). */
static nd_tcache *nd_nursery[ND_MAX_NODES];

nd_hot size_t nd_nursery_take(const nd_tcache *tc, unsigned cls, void **out, size_t n)
{
    nd_lock_may_take(ND_LOCK_ID_nursery);
    int node = tc->heap.node, saved = errno;
    size_t got = 0;
    nd_lock(ND_LOCK(nursery, node));
    nd_tcache *nu = nd_nursery[node];
    if (nu == NULL) {
        nu = nd_tcache_create(ND_TID_NURSERY, node, false, true);
        if (nu != NULL)
            nd_store_release(&nd_nursery[node], nu);
    }
    if (nu != NULL)
        got = nd_heap_take_blocks(&nu->heap, cls, out, n, n);
    nd_assert2(nu == NULL || (nu->heap.tid == ND_TID_NURSERY && nu->heap.node == node && !nu->heap.bound &&
                              nd_heap_is_valid(&nu->heap)));
    nd_unlock(ND_LOCK(nursery, node));
    errno = saved;
    return got;
}

nd_hot void nd_nursery_maintain(uint64_t now, bool force)
{
    nd_lock_may_take(ND_LOCK_ID_nursery);
    uint64_t delay = (uint64_t)nd_opt(ND_OPT_purge_delay);
    for (int i = 0; i < nd_topo.mem_count; i++) {
        int node = nd_topo.mem_ids[i];
        nd_tcache *nu = nd_nursery_of(node);
        if (nu == NULL || !nd_trylock(ND_LOCK(nursery, node)))
            continue;
        if (force || now >= nu->heap.clock_ms + delay) {
            nd_heap_tick(&nu->heap);   /* its purges wait for a few of these (ND_PURGE_MIN_EPOCHS) */
            nd_heap_collect(&nu->heap, now, force);
        }
        nd_unlock(ND_LOCK(nursery, node));
    }
}

nd_tcache *nd_nursery_of(int node)
{
    return nd_load_acquire(&nd_nursery[node]);
}
