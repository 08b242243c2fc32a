/*
 * node.c - per-node shared state (see node.h): free-segment caches and
 * abandoned-segment lists, one pair per (node, kind), each node under its
 * own lock.
 *
 * Cache policy: at most ND_CACHE_DIRTY_MAX cached segments per (node, kind)
 * keep their memory (they serve the next request without page faults);
 * those are purged once purge_delay has passed. Every other segment is
 * purged on arrival. At most cache_segments are kept mapped; the rest are
 * unmapped.
 */
#include "node.h"

#include <string.h>
#include "atomic.h"
#include "options.h"
#include "topo.h"

#define ND_CACHE_DIRTY_MAX 4

/*
 * Invariants (under the node lock):
 *  - cache lists free segments (no page in use, owner NULL, not abandoned),
 *    dirty ones (memory beyond the header still committed) before clean ones;
 *    cache_dirty counts the dirty ones, cache_count all. The counts are
 *    also read without the lock (as hints), so they change atomically.
 *  - abandoned lists segments with abandoned == 1 and owner NULL.
 */
typedef struct nd_kind_state {
    nd_segment *cache, *cache_last;
    size_t      cache_count, cache_dirty;
    nd_segment *abandoned;
    size_t      abandoned_count;
} nd_kind_state;

typedef struct nd_aligned(ND_CACHE_LINE) nd_node_state {
    nd_lock_t     lock;
    nd_kind_state kinds[2];    /* [0] plain, [1] bound */
} nd_node_state;

static nd_node_state nd_nodes[ND_MAX_NODES];
static uint64_t nd_node_next_maintain;   /* ms; one thread at a time sweeps */

void nd_node_init(void)
{
    for (int i = 0; i < ND_MAX_NODES; i++)
        nd_lock_init(&nd_nodes[i].lock);
}

static bool nd_seg_is_dirty(const nd_segment *s) { return (s->committed & ~(uint64_t)1) != 0; }

static void nd_list_push_front(nd_segment **head, nd_segment **last, nd_segment *s)
{
    s->prev = NULL;
    s->next = *head;
    if (*head)
        (*head)->prev = s;
    else if (last)
        *last = s;
    *head = s;
}

static void nd_list_push_back(nd_segment **head, nd_segment **last, nd_segment *s)
{
    s->next = NULL;
    s->prev = *last;
    if (*last)
        (*last)->next = s;
    else
        *head = s;
    *last = s;
}

static void nd_list_remove(nd_segment **head, nd_segment **last, nd_segment *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        *head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    else if (last)
        *last = s->prev;
    s->next = s->prev = NULL;
}

static nd_kind_state *nd_kind(int node, bool bound) { return &nd_nodes[node].kinds[bound ? 1 : 0]; }

nd_segment *nd_node_seg_get(int node, bool bound, int kind)
{
    nd_node_state *ns = &nd_nodes[node];
    nd_kind_state *k = nd_kind(node, bound);
    nd_segment *s = NULL;
    if (nd_load_relaxed(&k->cache_count) != 0) {
        nd_lock(&ns->lock);
        s = k->cache;
        if (s != NULL) {
            nd_list_remove(&k->cache, &k->cache_last, s);
            nd_sub_relaxed(&k->cache_count, 1);
            if (nd_seg_is_dirty(s))
                nd_sub_relaxed(&k->cache_dirty, 1);
        }
        nd_unlock(&ns->lock);
    }
    if (s == NULL) {
        s = nd_seg_map(node, bound);
        if (s == NULL)
            return NULL;
    }
    s->purge_mask = 0;
    nd_seg_format(s, kind);
    return s;
}

void nd_node_seg_put(nd_segment *s)
{
    nd_assert(s->used_pages == 0 && !s->abandoned);
    int node = s->node;
    nd_node_state *ns = &nd_nodes[node];
    nd_kind_state *k = nd_kind(node, s->bound);
    uint64_t now = nd_os_now_ms();
    s->owner = NULL;
    s->kind = ND_SEG_FREE;
    s->cached_at = now;
    s->purge_mask = 0;

    bool keep_dirty = nd_seg_is_dirty(s) && nd_opt(ND_OPT_purge_delay) > 0 &&
                      nd_load_relaxed(&k->cache_dirty) < ND_CACHE_DIRTY_MAX;
    if (!keep_dirty && nd_seg_is_dirty(s))
        nd_seg_purge(s, s->committed);

    nd_segment *victim = NULL;
    nd_lock(&ns->lock);
    if (keep_dirty && nd_seg_is_dirty(s)) {
        nd_list_push_front(&k->cache, &k->cache_last, s);
        nd_add_relaxed(&k->cache_dirty, 1);
    } else {
        nd_list_push_back(&k->cache, &k->cache_last, s);
    }
    nd_add_relaxed(&k->cache_count, 1);
    if (k->cache_count > (size_t)nd_opt(ND_OPT_cache_segments)) {
        victim = k->cache_last;
        nd_list_remove(&k->cache, &k->cache_last, victim);
        nd_sub_relaxed(&k->cache_count, 1);
        if (nd_seg_is_dirty(victim))
            nd_sub_relaxed(&k->cache_dirty, 1);
    }
    nd_unlock(&ns->lock);
    if (victim != NULL)
        nd_seg_unmap(victim);
}

void nd_node_abandon(nd_segment *s)
{
    nd_node_state *ns = &nd_nodes[s->node];
    nd_kind_state *k = nd_kind(s->node, s->bound);
    nd_lock(&ns->lock);
    s->owner = NULL;
    nd_store_release(&s->abandoned, 1);
    nd_list_push_front(&k->abandoned, NULL, s);
    nd_add_relaxed(&k->abandoned_count, 1);
    nd_unlock(&ns->lock);
}

nd_segment *nd_node_abandoned_pop(int node, bool bound)
{
    nd_node_state *ns = &nd_nodes[node];
    nd_kind_state *k = nd_kind(node, bound);
    if (nd_load_relaxed(&k->abandoned_count) == 0)
        return NULL;
    nd_lock(&ns->lock);
    nd_segment *s = k->abandoned;
    if (s != NULL) {
        nd_list_remove(&k->abandoned, NULL, s);
        nd_sub_relaxed(&k->abandoned_count, 1);
        nd_store_relaxed(&s->abandoned, 0);
    }
    nd_unlock(&ns->lock);
    return s;
}

bool nd_node_abandoned_claim(nd_segment *s)
{
    nd_node_state *ns = &nd_nodes[s->node];
    nd_kind_state *k = nd_kind(s->node, s->bound);
    if (!nd_trylock(&ns->lock))
        return false;
    bool claimed = false;
    if (nd_load_relaxed(&s->abandoned)) {
        nd_list_remove(&k->abandoned, NULL, s);
        nd_sub_relaxed(&k->abandoned_count, 1);
        nd_store_relaxed(&s->abandoned, 0);
        claimed = true;
    }
    nd_unlock(&ns->lock);
    return claimed;
}

/* Purges the dirty cached segments of one (node, kind) whose delay is over. */
static void nd_node_sweep(int node, bool bound, uint64_t now, bool force)
{
    enum { MAXV = ND_CACHE_DIRTY_MAX + 2 };
    nd_node_state *ns = &nd_nodes[node];
    nd_kind_state *k = nd_kind(node, bound);
    if (nd_load_relaxed(&k->cache_dirty) == 0)
        return;
    nd_segment *v[MAXV];
    size_t nv = 0;
    uint64_t delay = (uint64_t)nd_opt(ND_OPT_purge_delay);
    nd_lock(&ns->lock);
    for (nd_segment *s = k->cache; s != NULL && nv < MAXV;) {
        nd_segment *next = s->next;
        if (!nd_seg_is_dirty(s))
            break;
        if (force || s->cached_at + delay <= now) {
            nd_list_remove(&k->cache, &k->cache_last, s);
            nd_sub_relaxed(&k->cache_dirty, 1);
            nd_sub_relaxed(&k->cache_count, 1);
            v[nv++] = s;
        }
        s = next;
    }
    nd_unlock(&ns->lock);
    if (nv == 0)
        return;
    for (size_t i = 0; i < nv; i++)
        nd_seg_purge(v[i], v[i]->committed);
    nd_lock(&ns->lock);
    for (size_t i = 0; i < nv; i++) {
        nd_list_push_back(&k->cache, &k->cache_last, v[i]);
        nd_add_relaxed(&k->cache_count, 1);
    }
    nd_unlock(&ns->lock);
}

void nd_node_maintain(int mode)
{
    uint64_t now = nd_os_now_ms();
    uint64_t due = nd_load_relaxed(&nd_node_next_maintain);
    bool force = mode == ND_SWEEP_ALL;
    if (mode == ND_SWEEP_PERIODIC) {
        if (now < due)
            return;
        uint64_t next = now + (uint64_t)(nd_opt(ND_OPT_purge_delay) > 0 ? nd_opt(ND_OPT_purge_delay) : 1);
        if (!nd_cas_strong_acq_rel(&nd_node_next_maintain, &due, next))
            return;   /* another thread sweeps */
    }
    for (int i = 0; i < nd_topo.mem_count; i++) {
        int node = nd_topo.mem_ids[i];
        nd_node_sweep(node, false, now, force);
        nd_node_sweep(node, true, now, force);
    }
}

void nd_node_counts_get(int node, bool bound, nd_node_counts *c)
{
    nd_node_state *ns = &nd_nodes[node];
    nd_kind_state *k = nd_kind(node, bound);
    nd_lock(&ns->lock);
    c->cached = k->cache_count;
    c->cached_committed = 0;
    for (nd_segment *s = k->cache; s; s = s->next)
        c->cached_committed += (size_t)nd_popcount64(s->committed) << ND_CHUNK_SHIFT;
    c->abandoned = k->abandoned_count;
    nd_unlock(&ns->lock);
}

/* Only nodes with memory ever hold segments, so only their locks matter. */
void nd_node_lock_all(void)
{
    for (int i = 0; i < nd_topo.mem_count; i++)
        nd_lock(&nd_nodes[nd_topo.mem_ids[i]].lock);
}

void nd_node_unlock_all(void)
{
    for (int i = nd_topo.mem_count - 1; i >= 0; i--)
        nd_unlock(&nd_nodes[nd_topo.mem_ids[i]].lock);
}
