/*
 * counters.c - the process-wide gauges, the statistics table as data, and
 * the merges generated from it (see counters.h).
 */
#include "counters.h"

nd_gauges nd_gauge;

nd_hot void nd_gauge_add_peak(size_t *gauge, size_t *peak, long delta)
{
    size_t now = __atomic_add_fetch(gauge, (size_t)delta, __ATOMIC_RELAXED);
    if (delta <= 0 || (long)now < 0)
        return;
    size_t old = nd_load_relaxed(peak);
    while (now > old && !nd_cas_weak_acq_rel(peak, &old, now))
        ;
}

#define ND_ADD_SNAP_CLASS(n, k, sc, so, u, l, m) ND_IF_##sc(, dst->n += src->n;, , )
nd_hot void nd_snap_class_add(nd_snap_class *dst, const nd_snap_class *src)
{
    ND_STATS_TABLE(ND_ADD_SNAP_CLASS)
}

#define ND_ADD_SNAP_TOTALS(n, k, sc, so, u, l, m) ND_IF_##sc(dst->n += src->n;, , , )
void nd_snap_totals_add(nd_snap_totals *dst, const nd_snap_totals *src)
{
    ND_STATS_TABLE(ND_ADD_SNAP_TOTALS)
}

#define ND_ADD_SNAP_CLASS_COUNTER(n, k, sc, so, u, l, m) ND_SEL(sc, so)(dst->n += nd_load_relaxed(&src->n);, , , , , , )
__attribute__((no_sanitize("thread")))
nd_hot void nd_snap_class_add_counters(nd_snap_class *dst, const nd_class_counters *src)
{
    ND_STATS_TABLE(ND_ADD_SNAP_CLASS_COUNTER)
}

#define ND_ADD_SNAP_BIN_COUNTER(n, k, sc, so, u, l, m) ND_SEL_BIN(sc, so)(dst->n += nd_load_relaxed(&src->n);)
__attribute__((no_sanitize("thread")))
nd_hot void nd_snap_class_add_bin_counters(nd_snap_class *dst, const nd_bin_counters *src)
{
    ND_STATS_TABLE(ND_ADD_SNAP_BIN_COUNTER)
}

#define ND_ADD_SNAP_THREAD_COUNTER(n, k, sc, so, u, l, m) ND_SEL(sc, so)(, dst->n += nd_load_relaxed(&src->n);, , , , , )
__attribute__((no_sanitize("thread")))
nd_hot void nd_snap_totals_add_counters(nd_snap_totals *dst, const nd_thread_counters *src)
{
    ND_STATS_TABLE(ND_ADD_SNAP_THREAD_COUNTER)
}

#define ND_ADD_SNAP_TIER_NODE_COUNTER(n, k, sc, so, u, l, m)                        \
    ND_SEL(sc, so)(, , , , , for (int t_ = 0; t_ < ND_TIER_COUNT; t_++)                 \
                       for (int n_ = 0; n_ < ND_MAX_NODES; n_++)                       \
                           from[t_][n_].n += nd_load_relaxed(&src->n[t_][n_]);, )
void nd_snap_tier_add_node_counters(nd_snap_tier (*from)[ND_MAX_NODES], const nd_tier_node_counters *src)
{
    ND_STATS_TABLE(ND_ADD_SNAP_TIER_NODE_COUNTER)
}

#define ND_DESC(n, k, sc, so, u, l, m) { #n, ND_KIND_##k, ND_SCOPE_##sc, ND_UNIT_##u, l, #so, m },
const nd_stat_desc nd_stat_table[ND_STAT_COUNT] = { ND_STATS_TABLE(ND_DESC) };
