/*
 * stats.c - statistics reports: gathers the per-thread counters
 * (thread.c), the process gauges (counters.h) and the node caches (node.c)
 * into one snapshot, and prints it as text, JSON or one summary line, all
 * three generated from the one table in counters.h; hints drawn from the
 * snapshot; the report at exit (option stats); nodal_memory_info_get,
 * nodal_collect, nodal_option_get and nodal_version.
 *
 * Nothing here allocates: output goes through a fixed buffer to a FILE, to
 * stderr (write(2)) or into the caller's buffer.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "init.h"
#include "large.h"
#include "lock.h"
#include "meta.h"
#include "node.h"
#include "options.h"
#include "os.h"
#include "prof.h"
#include "out.h"
#include "shared.h"
#include "thread.h"
#include "tier.h"
#include "topo.h"

/* ---- snapshot --------------------------------------------------------------- */

typedef struct nd_snapshot {
    nd_snap_totals t;
    nd_snap_class  cls[ND_CLASS_COUNT];
    nd_snap_node   node[ND_MAX_NODES];   /* by position in nd_topo.mem_ids */
    nd_snap_tier   tier[ND_TIER_COUNT];                  /* each the sum of its CPU nodes' */
    nd_snap_tier   tier_from[ND_TIER_COUNT][ND_MAX_NODES];   /* by the id of the CPU node the calls ran on */
    uint64_t       lock_waits[ND_LOCK_ROWS];   /* by row of the lock table (lock.h): where lock_waits went */
} nd_snapshot;

/* The snapshot at the last nodal_stats_reset() (its counters are
   subtracted from reports). */
static nd_snapshot *nd_base;   /* from the metadata allocator at the first reset */
static nd_snapshot nd_snap_buf;   /* reports (and resets) are made one at a time, under nd_report_lock */
/* Locks (lock.h): report, one report at a time; stats_base, nd_base. */
#define nd_report_lock ND_LOCK(report, 0)
#define nd_stats_lock  ND_LOCK(stats_base, 0)

static size_t nd_stats_page_size(unsigned c)
{
    return nd_class_is_small(c) ? ND_SMALL_PAGE_SIZE : ND_MEDIUM_PAGE_SIZE;
}

#define ND_READ_GAUGE(n, k, sc, so, u, l, m)                                            \
    ND_SEL(sc, so)(, , s->t.n = nd_load_relaxed(&nd_gauge.n);,                           \
                   for (unsigned c_ = 0; c_ < ND_CLASS_COUNT; c_++)                      \
                       s->cls[c_].n = nd_load_relaxed(&nd_gauge.n[c_]);,                 \
                   for (int i_ = 0; i_ < nd_topo.mem_count; i_++)                       \
                       s->node[i_].n = nd_load_relaxed(&nd_gauge.n[nd_topo.mem_ids[i_]]);, , \
                   for (int t_ = 0; t_ < ND_TIER_COUNT; t_++)                            \
                       for (int n_ = 0; n_ < ND_MAX_NODES; n_++)                         \
                           s->tier_from[t_][n_].n = nd_load_relaxed(&nd_gauge.n[t_][n_]);)

/* A tier's counts: the sum of its CPU nodes'. */
#define ND_SUM_TIER(n, k, sc, so, u, l, m)                                              \
    ND_SEL(sc, so)(, , , , , for (int n_ = 0; n_ < ND_MAX_NODES; n_++)                  \
                       s->tier[t].n += s->tier_from[t][n_].n;,                           \
                   for (int n_ = 0; n_ < ND_MAX_NODES; n_++)                            \
                       s->tier[t].n += s->tier_from[t][n_].n;)

#define ND_SUB_COUNTER(n, k, sc, so, u, l, m)                                           \
    ND_IF_##sc(ND_IFK_##k(s->t.n -= b->t.n;),                                             \
               ND_IFK_##k(for (unsigned c_ = 0; c_ < ND_CLASS_COUNT; c_++)               \
                              s->cls[c_].n -= b->cls[c_].n;), ,                           \
               ND_IFK_##k(for (int t_ = 0; t_ < ND_TIER_COUNT; t_++) {                   \
                              s->tier[t_].n -= b->tier[t_].n;                             \
                              for (int n_ = 0; n_ < ND_MAX_NODES; n_++)                  \
                                  s->tier_from[t_][n_].n -= b->tier_from[t_][n_].n;       \
                          }))

static void nd_snapshot_take(nd_snapshot *s, bool since_reset)
{
    memset(s, 0, sizeof *s);
    size_t threads = 0, pooled = 0;
    /* With what the threads' heaps hold back from the gauges of pages in
       use (heap.h: gauge_pages), and the large pools from `active`. */
    long active = nd_large_gauge_pending(), pages[ND_CLASS_COUNT] = { 0 };
    nd_thread_stats_sum(s->cls, &s->t, s->tier_from, &threads, &pooled, &active, pages);
    nd_shared_stats_add(s->cls, &s->t);
    ND_STATS_TABLE(ND_READ_GAUGE)
    /* A signed count (config.h: ND_GAUGE_HELD), read while other threads
       move it: below 0 only when little is in use and a thread's spill
       was half seen. */
    s->t.active += (uint64_t)active;
    if ((int64_t)s->t.active < 0)
        s->t.active = 0;
    if (s->t.peak_active < s->t.active)
        s->t.peak_active = s->t.active;
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++)
        s->cls[c].pages += (uint64_t)pages[c];
    /* Derived fields, from all-time counters. */
    s->t.threads = threads;
    s->t.pooled_threads = pooled;
    s->t.metadata = nd_meta_mapped() + nd_segmap_mapped();
    s->t.mapped = s->t.segment_bytes + s->t.metadata;
    s->t.peak_mapped = s->t.peak_segment_bytes + s->t.metadata;   /* metadata only grows */
    nd_os_rss(&s->t.rss, &s->t.peak_rss);
    s->t.large_cached_bytes = nd_large_cached_bytes();
    s->t.prof_table_bytes = nd_prof_table_bytes();
    uint64_t small = 0;
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        nd_snap_class *k = &s->cls[c];
        /* prof=1: a sampled cell is a block of its class (the program's
           bytes), though not in its pages (slab.h). */
        k->requests += k->sampled_cells;
        k->frees += k->sampled_cell_frees;
        uint64_t live = k->requests > k->frees ? k->requests - k->frees : 0;
        uint64_t cells = k->sampled_cells > k->sampled_cell_frees ? k->sampled_cells - k->sampled_cell_frees : 0;
        /* (Under secure=1 the requests and frees of class c past 1 KiB
           are its bin's, whose blocks are of the next class: class.h.) */
        unsigned held = nd_bin_class[c] < ND_CLASS_COUNT ? nd_bin_class[c] : c;
        k->bytes_in_use = live * nd_class_size[held];
        double room = (double)k->pages * (double)nd_stats_page_size(c);
        double used = (double)(live - (cells < live ? cells : live) + k->cached) * nd_class_size[held];
        k->utilization = room > 0 ? (used > room ? 1.0 : used / room) : 0;
        small += k->bytes_in_use;
        s->t.requests += k->requests;
        s->t.frees += k->frees;
        s->t.remote_frees += k->remote_frees;
    }
    uint64_t large_live = s->t.large_bytes_allocated > s->t.large_bytes_freed
                        ? s->t.large_bytes_allocated - s->t.large_bytes_freed : 0;
    s->t.allocated = small + large_live + s->t.huge_bytes;
    s->t.requests += s->t.large_allocs + s->t.huge_allocs;
    s->t.frees += s->t.large_frees + s->t.huge_frees;
    for (int t = 0; t < ND_TIER_COUNT; t++) {
        ND_STATS_TABLE(ND_SUM_TIER)
        s->tier[t].cap_bytes = nd_tier_cap_bytes(t, -1);
        for (int n = 0; n < ND_MAX_NODES; n++)
            if (nd_topo.flags[n] & ND_NODE_HAS_CPU)
                s->tier_from[t][n].cap_bytes = nd_tier_cap_bytes(t, n);
    }
    for (int i = 0; i < nd_topo.mem_count; i++) {
        nd_node_counts plain, bound;
        nd_node_counts_get(nd_topo.mem_ids[i], false, &plain);
        nd_node_counts_get(nd_topo.mem_ids[i], true, &bound);
        s->node[i].plain_cached_segments = plain.cached;
        s->node[i].bound_cached_segments = bound.cached;
        s->node[i].plain_abandoned_segments = plain.abandoned;
        s->node[i].bound_abandoned_segments = bound.abandoned;
    }
    for (unsigned r = 0; r < ND_LOCK_ROWS; r++)
        s->lock_waits[r] = nd_lock_row_waits(r);
    if (since_reset) {
        nd_lock(nd_stats_lock);
        if (nd_base != NULL) {
            const nd_snapshot *b = nd_base;
            ND_STATS_TABLE(ND_SUB_COUNTER)
            for (unsigned r = 0; r < ND_LOCK_ROWS; r++)
                s->lock_waits[r] -= b->lock_waits[r];
        }
        nd_unlock(nd_stats_lock);
    }
}

nd_public void nodal_stats_reset(void)
{
    nd_process_ensure();
    nd_lock(nd_report_lock);
    nd_snapshot_take(&nd_snap_buf, false);
    nd_lock(nd_stats_lock);
    if (nd_base == NULL)
        nd_base = nd_meta_alloc(sizeof *nd_base);   /* NULL: no reset (out of memory) */
    if (nd_base != NULL)
        *nd_base = nd_snap_buf;
    nd_unlock(nd_stats_lock);
    nd_unlock(nd_report_lock);
}

/* ---- output ------------------------------------------------------------------ */

/* A field's value, typed by its unit. */
typedef struct nd_val { uint64_t u; double d; } nd_val;
#define ND_VAL_COUNT(x) ((nd_val){ .u = (uint64_t)(x) })
#define ND_VAL_BYTES(x) ((nd_val){ .u = (uint64_t)(x) })
#define ND_VAL_RATIO(x) ((nd_val){ .d = (double)(x) })

/* Human-readable bytes: "12.3 MiB". */
static const char *nd_human(char *buf, size_t len, double v)
{
    const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(buf, len, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
    return buf;
}

/* A value as text: bytes human-readable when `human`, ratios as percent. */
static const char *nd_fmt(char *buf, size_t len, int unit, nd_val v, bool human)
{
    if (unit == ND_UNIT_RATIO)
        snprintf(buf, len, human ? "%.1f%%" : "%.4f", human ? 100.0 * v.d : v.d);
    else if (unit == ND_UNIT_BYTES && human)
        nd_human(buf, len, (double)v.u);
    else
        snprintf(buf, len, "%llu", (unsigned long long)v.u);
    return buf;
}

static void nd_field(nd_out *o, const char *sep, const char *name, int unit, nd_val v, bool human,
                     const char *eq)
{
    char b[48];
    nd_outf(o, "%s%s%s%s", sep, name, eq, nd_fmt(b, sizeof b, unit, v, human));
}

/* ---- the summary line ------------------------------------------------------------- */

#define ND_BRIEF(n, k, sc, so, u, l, m) \
    ND_IF_##sc(if (l >= 2) nd_field(o, " ", #n, ND_UNIT_##u, ND_VAL_##u(s->t.n), false, "=");, , , )

static void nd_print_brief(nd_out *o, const nd_snapshot *s)
{
    char prog[64];
    nd_os_program_name(prog, sizeof prog);
    nd_outf(o, "nodal: pid=%ld program=%s", nd_os_pid(), prog);
    ND_STATS_TABLE(ND_BRIEF)
    nd_outf(o, "\n");
}

/* ---- hints ---------------------------------------------------------------------- */

/* One hint: a text line, or a JSON string in an array. */
static void __attribute__((format(printf, 4, 5))) nd_hint(nd_out *o, int *n, const char *indent, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (indent != NULL)
        nd_outf(o, "%s%s\n", indent, line);
    else
        nd_outf(o, "%s\"%s\"", *n ? "," : "", line);   /* the texts hold no quote or backslash */
    (*n)++;
}

/* Advice that fires on measured thresholds, each naming the option to
   change: text lines (indent != NULL) or JSON strings. Returns how many. */
static int nd_print_hints(nd_out *o, const nd_snapshot *s, const char *indent)
{
    int n = 0;
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        const nd_snap_class *k = &s->cls[c];
        /* Only fills and overflows at the largest capacity count: a cache
           still growing (or a thread that made a few requests and exited)
           is not short of room. */
        if (k->requests >= 10000 && k->full_size_fills * 64 > k->requests)
            nd_hint(o, &n, indent, "class %u B: the thread cache, at its largest, was refilled every %.0f requests "
                            "(above 1/64): raise tcache_count (now %ld) or tcache_bytes (now %ld)",
                         nd_class_size[c], (double)k->requests / (double)k->full_size_fills,
                         nd_opt(ND_OPT_tcache_count), nd_opt(ND_OPT_tcache_bytes));
        if (k->frees >= 10000 && k->full_size_flushes * 64 > k->frees)
            nd_hint(o, &n, indent, "class %u B: the thread cache, at its largest, overflowed every %.0f frees "
                            "(above 1/64): raise tcache_count (now %ld) or tcache_bytes (now %ld)",
                         nd_class_size[c], (double)k->frees / (double)k->full_size_flushes,
                         nd_opt(ND_OPT_tcache_count), nd_opt(ND_OPT_tcache_bytes));
        if (k->direct_allocs >= 10000 && k->direct_allocs * 2 > k->requests)
            nd_hint(o, &n, indent, "class %u B: %llu blocks came straight from pages, without a thread cache: "
                            "raise tcache_max (now %ld) to at least %u",
                         nd_class_size[c], (unsigned long long)k->direct_allocs,
                         nd_opt(ND_OPT_tcache_max), nd_class_size[c]);
        if (k->pages >= 16 && k->utilization < 0.25) {
            /* Blocks of two OS pages and more give back their memory but
               the first page while their page stays (heap.c:
               nd_heap_purge_free_blocks); smaller ones keep it until their
               page empties. */
            bool purged = nd_class_size[c] >= 2 * nd_os_page_size();
            nd_hint(o, &n, indent, "class %u B: %llu pages hold blocks at %.1f%% use: memory freed in a scattered "
                            "pattern stays in pages until they empty%s; nodal_collect(1) or a shorter purge_delay "
                            "(now %ld ms) returns it sooner",
                         nd_class_size[c], (unsigned long long)k->pages, 100.0 * k->utilization,
                         purged ? " (a free block's OS pages past its first go back after a purge delay or two)" : "",
                         nd_opt(ND_OPT_purge_delay));
        }
    }
    if (s->t.node_fallback_pages > 0)
        nd_hint(o, &n, indent, "%llu OS pages of node-targeted memory are on another node than asked (a node was "
                        "full; node_fallback=preferred): node_fallback=strict makes such requests fail instead",
                     (unsigned long long)s->t.node_fallback_pages);
    if (s->t.strict_failures > 0)
        nd_hint(o, &n, indent, "%llu node-targeted requests failed because their node was full "
                        "(node_fallback=strict): node_fallback=preferred lets them use other nodes (counted)",
                     (unsigned long long)s->t.strict_failures);
    return n;
}

/* ---- text -------------------------------------------------------------------- */

#define ND_TEXT_TOTAL(n, k, sc, so, u, l, m)                                                 \
    ND_IF_##sc(if (l >= 1) {                                                                    \
        nd_fmt(b, sizeof b, ND_UNIT_##u, ND_VAL_##u(s->t.n), true);                             \
        nd_outf(o, "  %-20s %14s%s", #n, b, (++col % 3) == 0 ? "\n" : "");                     \
    }, , , )
#define ND_TEXT_CLASS_HEAD(n, k, sc, so, u, l, m) ND_IF_##sc(, if (l >= 1) nd_outf(o, " %12s", #n);, , )
#define ND_TEXT_CLASS_ROW(n, k, sc, so, u, l, m) \
    ND_IF_##sc(, if (l >= 1) nd_outf(o, " %12s", nd_fmt(b, sizeof b, ND_UNIT_##u, ND_VAL_##u(cl->n), true));, , )
#define ND_TEXT_NODE_HEAD(n, k, sc, so, u, l, m) ND_IF_##sc(, , if (l >= 1) nd_outf(o, " %14s", #n);, )
#define ND_TEXT_NODE_ROW(n, k, sc, so, u, l, m) \
    ND_IF_##sc(, , if (l >= 1) nd_outf(o, " %14s", nd_fmt(b, sizeof b, ND_UNIT_##u, ND_VAL_##u(nd->n), true));, )
#define ND_TEXT_TIER_HEAD(n, k, sc, so, u, l, m) ND_IF_##sc(, , , if (l >= 1) nd_outf(o, " %15s", #n);)
#define ND_TEXT_TIER_ROW(n, k, sc, so, u, l, m) \
    ND_IF_##sc(, , , if (l >= 1) nd_outf(o, " %15s", nd_fmt(b, sizeof b, ND_UNIT_##u, ND_VAL_##u(ti->n), true));)
#define ND_JSON_TIER(n, k, sc, so, u, l, m) \
    ND_IF_##sc(, , , nd_field(o, ",", "\"" #n "\"", ND_UNIT_##u, ND_VAL_##u(ti->n), false, ":");)

/* The tier table, in a program that made tier calls (or had a tier's
   mapping refused): a row per tier (with its cap and the node it names
   from each CPU node), then one per CPU node the tier's calls ran on. */
static void nd_print_tier_table(nd_out *o, const nd_snapshot *s)
{
    char b[48];
    uint64_t use = 0;
    for (int t = 0; t < ND_TIER_COUNT; t++)
        use += s->tier[t].requests + s->tier[t].fallbacks + s->tier[t].cap_refusals;
    if (use == 0)
        return;
    nd_outf(o, "  %11s", "tier");
    ND_STATS_TABLE(ND_TEXT_TIER_HEAD)
    nd_outf(o, " %10s  node from each CPU node\n", "cap");
    for (int t = 0; t < ND_TIER_COUNT; t++) {
        const nd_snap_tier *ti = &s->tier[t];
        nd_outf(o, "  %11s", nd_tier_name(t));
        ND_STATS_TABLE(ND_TEXT_TIER_ROW)
        nd_outf(o, " %10s ", nd_tiers.cap[t] ? nd_human(b, sizeof b, (double)nd_tiers.cap[t]) : "none");
        for (int i = 0; i < ND_MAX_NODES; i++)
            if (nd_topo.flags[i] & ND_NODE_HAS_CPU)
                nd_outf(o, " %d->%d", i, nd_tier_node(t, i));
        nd_outf(o, "\n");
        for (int i = 0; i < ND_MAX_NODES; i++) {
            ti = &s->tier_from[t][i];
            if (!(nd_topo.flags[i] & ND_NODE_HAS_CPU) || ti->requests + ti->fallbacks + ti->cap_refusals == 0)
                continue;
            char from[24];
            snprintf(from, sizeof from, "from %d", i);
            nd_outf(o, "  %11s", from);
            ND_STATS_TABLE(ND_TEXT_TIER_ROW)
            nd_outf(o, " %10s  %d->%d\n", "", i, nd_tier_node(t, i));
        }
    }
}

/* A tier's JSON entry: its counts, its cap (0: none), and per CPU node
   the node it names from there and the counts of the calls made there. */
static void nd_print_tier_json(nd_out *o, const nd_snapshot *s, int t)
{
    const nd_snap_tier *ti = &s->tier[t];
    nd_outf(o, "%s{\"name\":\"%s\"", t ? "," : "", nd_tier_name(t));
    ND_STATS_TABLE(ND_JSON_TIER)
    nd_outf(o, ",\"cap\":%llu,\"nodes\":[", (unsigned long long)nd_tiers.cap[t]);
    int n = 0;
    for (int i = 0; i < ND_MAX_NODES; i++) {
        if (!(nd_topo.flags[i] & ND_NODE_HAS_CPU))
            continue;
        ti = &s->tier_from[t][i];
        nd_outf(o, "%s{\"from\":%d,\"node\":%d", n++ ? "," : "", i, nd_tier_node(t, i));
        ND_STATS_TABLE(ND_JSON_TIER)
        nd_outf(o, "}");
    }
    nd_outf(o, "]}");
}

static void nd_print_text(nd_out *o, const nd_snapshot *s)
{
    char b[48], prog[64];
    int col = 0;
    nd_print_brief(o, s);
    nd_os_program_name(prog, sizeof prog);
    nd_outf(o, "nodal %s statistics of pid %ld (%s)\n", NODAL_VERSION_STRING, nd_os_pid(), prog);
    ND_STATS_TABLE(ND_TEXT_TOTAL)
    if (col % 3 != 0)
        nd_outf(o, "\n");
    nd_outf(o, "  (active and mapped are address space nodal holds; rss is what is resident)\n");
    nd_outf(o, "  %8s", "size");
    ND_STATS_TABLE(ND_TEXT_CLASS_HEAD)
    nd_outf(o, "\n");
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        const nd_snap_class *cl = &s->cls[c];
        if (cl->requests == 0 && cl->frees == 0 && cl->pages == 0)
            continue;
        nd_outf(o, "  %8u", nd_class_size[c]);
        ND_STATS_TABLE(ND_TEXT_CLASS_ROW)
        nd_outf(o, "\n");
    }
    nd_outf(o, "  %8s", "node");
    ND_STATS_TABLE(ND_TEXT_NODE_HEAD)
    nd_outf(o, "\n");
    for (int i = 0; i < nd_topo.mem_count; i++) {
        const nd_snap_node *nd = &s->node[i];
        int id = nd_topo.mem_ids[i];
        nd_outf(o, "  %8d", id);
        ND_STATS_TABLE(ND_TEXT_NODE_ROW)
        nd_outf(o, "%s\n", (nd_topo.flags[id] & ND_NODE_HAS_CPU) ? "" : "  (memory only)");
    }
    nd_print_tier_table(o, s);
    /* Which locks the waits were on (rows of the lock table with any). */
    nd_outf(o, "  lock waits by lock:");
    int waited = 0;
    for (unsigned r = 0; r < ND_LOCK_ROWS; r++)
        if (s->lock_waits[r] != 0)
            nd_outf(o, "%s %s %s", waited++ ? "," : "", nd_lock_table[r].name,
                    nd_fmt(b, sizeof b, ND_UNIT_COUNT, (nd_val){ .u = s->lock_waits[r] }, true));
    nd_outf(o, "%s\n", waited ? "" : " none");
    nd_outf(o, "  hints:\n");
    if (nd_print_hints(o, s, "    ") == 0)
        nd_outf(o, "    none\n");
}

/* ---- JSON -------------------------------------------------------------------- */

#define ND_JSON_TOTAL(n, k, sc, so, u, l, m) \
    ND_IF_##sc(nd_field(o, sep, "\"" #n "\"", ND_UNIT_##u, ND_VAL_##u(s->t.n), false, ":"); sep = ",";, , , )
#define ND_JSON_CLASS(n, k, sc, so, u, l, m) \
    ND_IF_##sc(, nd_field(o, ",", "\"" #n "\"", ND_UNIT_##u, ND_VAL_##u(cl->n), false, ":");, , )
#define ND_JSON_NODE(n, k, sc, so, u, l, m) \
    ND_IF_##sc(, , nd_field(o, ",", "\"" #n "\"", ND_UNIT_##u, ND_VAL_##u(nd->n), false, ":");, )

/* Writes text as the inside of a JSON string. */
static void nd_json_text(nd_out *o, const char *t)
{
    for (; *t; t++) {
        unsigned char c = (unsigned char)*t;
        if (c == '"' || c == '\\')
            nd_outf(o, "\\%c", c);
        else if (c < 0x20)
            nd_outf(o, "\\u%04x", c);
        else
            nd_out_write(o, (const char *)&c, 1);
    }
}

/* An option's value as JSON: numbers as numbers, choices by name and text
   as strings. */
static void nd_json_option(nd_out *o, int i)
{
    char v[ND_OPT_TEXT_MAX + 1];
    nd_opt_format((nd_opt_id)i, v, sizeof v);
    if (nd_opt_is_number((nd_opt_id)i)) {
        nd_outf(o, "%s", v);
    } else {
        nd_outf(o, "\"");
        nd_json_text(o, v);
        nd_outf(o, "\"");
    }
}

static void nd_print_json(nd_out *o, const nd_snapshot *s)
{
    char prog[64];
    const char *sep = "";
    nd_os_program_name(prog, sizeof prog);
    nd_outf(o, "{\"version\":\"%s\",\"pid\":%ld,\"program\":\"", NODAL_VERSION_STRING, nd_os_pid());
    nd_json_text(o, prog);
    nd_outf(o, "\",\"totals\":{");
    ND_STATS_TABLE(ND_JSON_TOTAL)
    nd_outf(o, "},\"classes\":[");
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        const nd_snap_class *cl = &s->cls[c];
        nd_outf(o, "%s{\"size\":%u", c ? "," : "", nd_class_size[c]);
        ND_STATS_TABLE(ND_JSON_CLASS)
        nd_outf(o, "}");
    }
    nd_outf(o, "],\"nodes\":[");
    for (int i = 0; i < nd_topo.mem_count; i++) {
        const nd_snap_node *nd = &s->node[i];
        int id = nd_topo.mem_ids[i];
        nd_outf(o, "%s{\"id\":%d,\"has_cpus\":%s", i ? "," : "", id,
                (nd_topo.flags[id] & ND_NODE_HAS_CPU) ? "true" : "false");
        ND_STATS_TABLE(ND_JSON_NODE)
        nd_outf(o, "}");
    }
    nd_outf(o, "],\"tiers\":[");
    for (int t = 0; t < ND_TIER_COUNT; t++)
        nd_print_tier_json(o, s, t);
    nd_outf(o, "],\"locks\":[");
    for (unsigned r = 0; r < ND_LOCK_ROWS; r++)
        nd_outf(o, "%s{\"name\":\"%s\",\"waits\":%llu}", r ? "," : "", nd_lock_table[r].name,
                (unsigned long long)s->lock_waits[r]);
    nd_outf(o, "],\"options\":{");
    for (int i = 0; i < ND_OPT_COUNT; i++) {
        nd_outf(o, "%s\"%s\":", i ? "," : "", nd_opt_table[i].name);
        nd_json_option(o, i);
    }
    nd_outf(o, "},\"hints\":[");
    nd_print_hints(o, s, NULL);
    nd_outf(o, "]}\n");
}

/* ---- public entry points ----------------------------------------------------------- */


nd_public int nodal_stats_print(FILE *out, const char *opts)
{
    nd_process_ensure();
    nd_lock(nd_report_lock);
    nd_snapshot_take(&nd_snap_buf, true);
    static nd_out o;
    nd_out_to_file(&o, out != NULL ? out : stderr, -1);
    if (opts != NULL && strstr(opts, "json"))
        nd_print_json(&o, &nd_snap_buf);
    else if (opts != NULL && strstr(opts, "brief"))
        nd_print_brief(&o, &nd_snap_buf);
    else
        nd_print_text(&o, &nd_snap_buf);
    nd_out_flush(&o);
    int err = o.err;
    nd_unlock(nd_report_lock);
    if (out != NULL && fflush(out) != 0)
        err = 1;
    else if (out == NULL && fflush(stderr) != 0)
        err = 1;
    return err ? -1 : 0;
}

nd_public size_t nodal_stats_json(char *buf, size_t len)
{
    nd_process_ensure();
    nd_lock(nd_report_lock);
    nd_snapshot_take(&nd_snap_buf, true);
    static nd_out o;
    char dummy;
    nd_out_to_buffer(&o, buf != NULL ? buf : &dummy, buf != NULL ? len : 0);
    nd_print_json(&o, &nd_snap_buf);
    size_t total = o.total;   /* buf is terminated (out.h) */
    nd_unlock(nd_report_lock);
    return total;
}

/* The report at exit when the option stats is set (or stats_file, which
   implies the text report): to stats_file, or straight to fd 2 (a duplicate
   kept at start-up: programs close stderr at exit). In this file's own
   section, with the code run on request (a function called only by a
   destructor would go to .text.exit, at the front of the text, among the
   code every process maps: its 5 KiB of report). */
static nd_noinline __attribute__((section(".text.nodal_report"))) void nd_stats_report_at_exit(const char *file,
                                                                                                 long mode)
{
    nd_lock(nd_report_lock);
    nd_snapshot_take(&nd_snap_buf, false);
    static nd_out o;
    nd_out_to_file(&o, NULL, -1);
    char path[ND_OPT_TEXT_MAX + 32];
    if (file[0] != '\0') {
        if (nd_opt_expand_path(file, nd_os_pid(), path, sizeof path) < sizeof path)
            o.fd = nd_os_create_file(path);
        if (o.fd < 0)
            nd_warn("cannot write the statistics to '%s'; they go to stderr", file);
    }
    if (mode == 2)
        nd_print_json(&o, &nd_snap_buf);
    else if (mode == 3)
        nd_print_brief(&o, &nd_snap_buf);
    else
        nd_print_text(&o, &nd_snap_buf);
    nd_out_flush(&o);
    if (o.fd >= 0)
        nd_os_close(o.fd);
    nd_unlock(nd_report_lock);
}

__attribute__((destructor(101))) static void nd_stats_at_exit(void)
{
    if (nd_load_acquire(&nd_process_state) != 2)
        return;
    const char *file = nd_opt_text(ND_OPT_stats_file);
    long mode = nd_opt(ND_OPT_stats);
    if (mode <= 0 && file[0] == '\0')
        return;
    nd_stats_report_at_exit(file, mode);
}

/* The heap profile's constructor and exit dump (profile.c) come with the
   statistics' into a program linked with a static archive. */
__attribute__((used)) static int (*const nd_profile_keep)(const char *) = nodal_profile_dump;

nd_public int nodal_memory_info_get(nodal_memory_info *info)
{
    if (info == NULL) {
        errno = EINVAL;
        return -1;
    }
    nd_process_ensure();
    nd_lock(nd_report_lock);
    nd_snapshot_take(&nd_snap_buf, false);
    const nd_snap_totals *t = &nd_snap_buf.t;
    memset(info, 0, sizeof *info);
    info->allocated = t->allocated;
    info->active = t->active;
    info->mapped = t->mapped;
    info->committed = t->committed;
    info->returned = t->returned;
    info->peak_active = t->peak_active;
    info->peak_mapped = t->peak_mapped;
    info->segments = t->segments;
    info->rss_current = t->rss;
    info->rss_peak = t->peak_rss;
    nd_unlock(nd_report_lock);
    return 0;
}

#define ND_TIER_PUBLIC(n, k, sc, so, u, l, m) ND_IF_##sc(, , , out->n = ti->n;)

nd_public int nodal_tier_stats_get(int tier, int from_node, nodal_tier_stats *out)
{
    nd_process_ensure();
    if ((unsigned)tier >= ND_TIER_COUNT || out == NULL ||
        (from_node != -1 && ((unsigned)from_node >= ND_MAX_NODES || !(nd_topo.flags[from_node] & ND_NODE_HAS_CPU)))) {
        errno = EINVAL;
        return -1;
    }
    nd_lock(nd_report_lock);
    nd_snapshot_take(&nd_snap_buf, true);
    const nd_snap_tier *ti = from_node < 0 ? &nd_snap_buf.tier[tier] : &nd_snap_buf.tier_from[tier][from_node];
    memset(out, 0, sizeof *out);
    ND_STATS_TABLE(ND_TIER_PUBLIC)
    out->cap = nd_tiers.cap[tier];
    out->node = from_node < 0 ? -1 : nd_tier_node(tier, from_node);
    nd_unlock(nd_report_lock);
    return 0;
}

nd_public void nodal_collect(int force)
{
    nd_process_ensure();
    nd_thread_collect(force != 0);
    nd_node_maintain(force ? ND_SWEEP_ALL : ND_SWEEP_EXPIRED);
}

nd_public long nodal_option_get(const char *name)
{
    nd_process_ensure();
    for (int i = 0; name != NULL && i < ND_OPT_COUNT; i++)
        if (strcmp(name, nd_opt_table[i].name) == 0)
            return nd_opt_values[i];
    errno = ENOENT;
    return -1;
}

nd_public const char *nodal_version(void)
{
    return "nodal " NODAL_VERSION_STRING;
}
