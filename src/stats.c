/*
 * stats.c - statistics: gathers the per-thread counters (heap.c), the
 * segment gauges (segment.c) and the node caches (node.c) into one
 * snapshot, and prints it as text or JSON; nodal_memory_info_get,
 * nodal_collect, nodal_option_get and nodal_version.
 *
 * Nothing here allocates: output goes through a fixed buffer to a FILE, to
 * stderr (write(2)) or into the caller's buffer.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "alloc.h"
#include "init.h"
#include "meta.h"
#include "node.h"
#include "page.h"
#include "topo.h"

/* ---- snapshot --------------------------------------------------------------- */

typedef struct nd_snapshot {
    nd_cls_totals cls[ND_CLASS_COUNT];
    size_t        pages[ND_CLASS_COUNT];
    nd_heap_stats hs;
    nd_seg_gauges g;
    size_t        threads;
    size_t        meta;
    size_t        rss, rss_peak;
    /* derived */
    uint64_t      requests, frees;
    size_t        allocated, small_allocated;
} nd_snapshot;

/* Counters at the last nodal_stats_reset() (subtracted from reports). */
static nd_cls_totals nd_base_cls[ND_CLASS_COUNT];
static nd_heap_stats nd_base_hs;
static nd_lock_t nd_stats_lock = ND_LOCK_INIT;

static void nd_snapshot_take(nd_snapshot *s, bool since_reset)
{
    memset(s, 0, sizeof *s);
    nd_heap_stats_sum(s->cls, &s->hs, &s->threads);
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++)
        s->pages[c] = nd_load_relaxed(&nd_page_gauge[c]);
    const size_t *gsrc = (const size_t *)&nd_seg_gauge;
    size_t *gdst = (size_t *)&s->g;
    for (size_t i = 0; i < sizeof s->g / sizeof(size_t); i++)
        gdst[i] = nd_load_relaxed(&gsrc[i]);
    s->meta = nd_meta_mapped();
    nd_os_rss(&s->rss, &s->rss_peak);
    /* Bytes in live blocks, from all-time totals (before any reset). */
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        uint64_t live = s->cls[c].requests > s->cls[c].frees ? s->cls[c].requests - s->cls[c].frees : 0;
        s->small_allocated += (size_t)live * nd_class_size[c];
    }
    size_t large_live = s->hs.large_bytes_alloc > s->hs.large_bytes_freed
                      ? (size_t)(s->hs.large_bytes_alloc - s->hs.large_bytes_freed) : 0;
    s->allocated = s->small_allocated + large_live + s->g.huge_bytes;
    if (since_reset) {
        nd_lock(&nd_stats_lock);
        for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
            uint64_t *d = (uint64_t *)&s->cls[c];
            const uint64_t *b = (const uint64_t *)&nd_base_cls[c];
            for (size_t i = 0; i < sizeof(nd_cls_totals) / 8; i++)
                if (i != offsetof(nd_cls_totals, cached) / 8)
                    d[i] -= b[i];
        }
        uint64_t *d = (uint64_t *)&s->hs;
        const uint64_t *b = (const uint64_t *)&nd_base_hs;
        for (size_t i = 0; i < sizeof(nd_heap_stats) / 8; i++)
            d[i] -= b[i];
        nd_unlock(&nd_stats_lock);
    }
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        s->requests += s->cls[c].requests;
        s->frees += s->cls[c].frees;
    }
    s->requests += s->hs.large_allocs + s->hs.huge_allocs;
    s->frees += s->hs.large_frees + s->hs.huge_frees;
}

nd_public void nodal_stats_reset(void)
{
    nd_snapshot s;
    nd_process_ensure();
    nd_snapshot_take(&s, false);
    nd_lock(&nd_stats_lock);
    memcpy(nd_base_cls, s.cls, sizeof nd_base_cls);
    nd_base_hs = s.hs;
    nd_unlock(&nd_stats_lock);
}

/* ---- output ------------------------------------------------------------------ */

typedef struct nd_out {
    FILE  *file;        /* NULL: stderr via write(2), unless dst */
    char  *dst;         /* caller's buffer (JSON) */
    size_t dst_len;
    size_t total;       /* bytes produced */
    size_t n;           /* bytes in buf */
    int    err;
    char   buf[4096];
} nd_out;

static void nd_out_flush(nd_out *o)
{
    if (o->n == 0)
        return;
    if (o->dst == NULL) {
        if (o->file != NULL) {
            if (fwrite(o->buf, 1, o->n, o->file) != o->n)
                o->err = 1;
        } else {
            nd_os_write_stderr(o->buf, o->n);
        }
    }
    o->n = 0;
}

static void nd_out_write(nd_out *o, const char *s, size_t len)
{
    if (o->dst != NULL) {
        for (size_t i = 0; i < len; i++, o->total++)
            if (o->total + 1 < o->dst_len)
                o->dst[o->total] = s[i];
        return;
    }
    o->total += len;
    while (len > 0) {
        size_t room = sizeof o->buf - o->n;
        size_t k = len < room ? len : room;
        memcpy(o->buf + o->n, s, k);
        o->n += k;
        s += k;
        len -= k;
        if (o->n == sizeof o->buf)
            nd_out_flush(o);
    }
}

static void __attribute__((format(printf, 2, 3))) nd_outf(nd_out *o, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0)
        nd_out_write(o, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

static size_t nd_class_page_size(unsigned c)
{
    return nd_class_size[c] <= ND_SMALL_MAX ? ND_SMALL_PAGE_SIZE : ND_MEDIUM_PAGE_SIZE;
}

/* Human-readable sizes: "12.3 MiB". */
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

static void nd_print_brief(nd_out *o, const nd_snapshot *s)
{
    nd_outf(o, "nodal: mallocs=%llu frees=%llu allocated=%zu active=%zu mapped=%zu rss=%zu peak_rss=%zu"
               " threads=%zu remote_frees=%llu node_fallback_pages=%zu\n",
            (unsigned long long)s->requests, (unsigned long long)s->frees, s->allocated, s->g.active,
            s->g.mapped + s->meta, s->rss, s->rss_peak, s->threads,
            (unsigned long long)s->hs.remote_frees, s->g.fallback_pages);
}

static void nd_print_text(nd_out *o, const nd_snapshot *s)
{
    char a[32], b[32], c[32], d[32], e[32];
    nd_print_brief(o, s);
    nd_outf(o, "nodal %d.%d.%d statistics\n", NODAL_VERSION_MAJOR, NODAL_VERSION_MINOR, NODAL_VERSION_PATCH);
    nd_outf(o, "  allocated %s   active %s (peak %s)   mapped %s (peak %s)\n",
            nd_human(a, sizeof a, (double)s->allocated), nd_human(b, sizeof b, (double)s->g.active),
            nd_human(c, sizeof c, (double)s->g.peak_active), nd_human(d, sizeof d, (double)(s->g.mapped + s->meta)),
            nd_human(e, sizeof e, (double)(s->g.peak_mapped + s->meta)));
    nd_outf(o, "  committed %s   returned to OS %s   segments %zu   metadata %s\n",
            nd_human(a, sizeof a, (double)s->g.committed), nd_human(b, sizeof b, (double)s->g.returned),
            s->g.segments, nd_human(c, sizeof c, (double)s->meta));
    nd_outf(o, "  process rss %s (peak %s)   threads %zu   remote frees %llu\n",
            nd_human(a, sizeof a, (double)s->rss), nd_human(b, sizeof b, (double)s->rss_peak), s->threads,
            (unsigned long long)s->hs.remote_frees);
    nd_outf(o, "  %6s %12s %12s %10s %10s %7s %12s %8s %6s\n", "size", "requests", "frees", "fills",
            "flushes", "pages", "in use", "cached", "util");
    for (unsigned i = 0; i < ND_CLASS_COUNT; i++) {
        const nd_cls_totals *t = &s->cls[i];
        if (t->requests == 0 && t->frees == 0 && s->pages[i] == 0)
            continue;
        uint64_t live = t->requests > t->frees ? t->requests - t->frees : 0;
        double cap = (double)s->pages[i] * (double)nd_class_page_size(i);
        double util = cap > 0 ? 100.0 * (double)live * nd_class_size[i] / cap : 0;
        nd_outf(o, "  %6u %12llu %12llu %10llu %10llu %7zu %12s %8llu %5.1f%%\n", nd_class_size[i],
                (unsigned long long)t->requests, (unsigned long long)t->frees, (unsigned long long)t->fills,
                (unsigned long long)t->flushes, s->pages[i], nd_human(a, sizeof a, (double)live * nd_class_size[i]),
                (unsigned long long)t->cached, util > 100 ? 100.0 : util);
    }
    nd_outf(o, "  large: %llu allocs, %llu frees, %s in use\n", (unsigned long long)s->hs.large_allocs,
            (unsigned long long)s->hs.large_frees,
            nd_human(a, sizeof a, (double)(s->hs.large_bytes_alloc - s->hs.large_bytes_freed)));
    nd_outf(o, "  huge:  %llu allocs, %llu frees, %zu live (%s)\n", (unsigned long long)s->hs.huge_allocs,
            (unsigned long long)s->hs.huge_frees, s->g.huge_count, nd_human(b, sizeof b, (double)s->g.huge_bytes));
    nd_outf(o, "  nodes: fallback pages %zu, strict failures %zu\n", s->g.fallback_pages, s->g.strict_failures);
    for (int i = 0; i < nd_topo.mem_count; i++) {
        int n = nd_topo.mem_ids[i];
        nd_node_counts plain, bound;
        nd_node_counts_get(n, false, &plain);
        nd_node_counts_get(n, true, &bound);
        nd_outf(o, "    node %d%s: plain mapped %s (cached segments %zu, abandoned %zu); bound mapped %s (cached %zu, abandoned %zu)\n",
                n, (nd_topo.flags[n] & ND_NODE_HAS_CPU) ? "" : " (memory only)",
                nd_human(a, sizeof a, (double)s->g.node_mapped[n][0]), plain.cached, plain.abandoned,
                nd_human(b, sizeof b, (double)s->g.node_mapped[n][1]), bound.cached, bound.abandoned);
    }
}

static void nd_print_json(nd_out *o, const nd_snapshot *s)
{
    nd_outf(o, "{\"version\":\"%d.%d.%d\",", NODAL_VERSION_MAJOR, NODAL_VERSION_MINOR, NODAL_VERSION_PATCH);
    nd_outf(o, "\"totals\":{\"requests\":%llu,\"frees\":%llu,\"allocated\":%zu,\"active\":%zu,\"peak_active\":%zu,"
               "\"mapped\":%zu,\"peak_mapped\":%zu,\"committed\":%zu,\"returned\":%zu,\"segments\":%zu,"
               "\"metadata\":%zu,\"rss\":%zu,\"peak_rss\":%zu,\"threads\":%zu,\"remote_frees\":%llu,"
               "\"node_fallback_pages\":%zu,\"strict_failures\":%zu,\"reclaimed_segments\":%llu,"
               "\"abandoned_segments\":%llu},",
            (unsigned long long)s->requests, (unsigned long long)s->frees, s->allocated, s->g.active,
            s->g.peak_active, s->g.mapped + s->meta, s->g.peak_mapped + s->meta, s->g.committed, s->g.returned,
            s->g.segments, s->meta, s->rss, s->rss_peak, s->threads, (unsigned long long)s->hs.remote_frees,
            s->g.fallback_pages, s->g.strict_failures, (unsigned long long)s->hs.reclaimed_segments,
            (unsigned long long)s->hs.abandoned_segments);
    nd_outf(o, "\"classes\":[");
    for (unsigned i = 0; i < ND_CLASS_COUNT; i++) {
        const nd_cls_totals *t = &s->cls[i];
        uint64_t live = t->requests > t->frees ? t->requests - t->frees : 0;
        double cap = (double)s->pages[i] * (double)nd_class_page_size(i);
        double util = cap > 0 ? (double)live * nd_class_size[i] / cap : 0;
        nd_outf(o, "%s{\"size\":%u,\"requests\":%llu,\"mallocs\":%llu,\"frees\":%llu,\"fills\":%llu,"
                   "\"flushes\":%llu,\"flush_blocks\":%llu,\"remote_frees\":%llu,\"pages\":%zu,"
                   "\"bytes_in_use\":%llu,\"cached\":%llu,\"utilization\":%.4f}",
                i ? "," : "", nd_class_size[i], (unsigned long long)t->requests,
                (unsigned long long)t->fill_blocks, (unsigned long long)t->frees, (unsigned long long)t->fills,
                (unsigned long long)t->flushes, (unsigned long long)t->flush_blocks,
                (unsigned long long)t->remote_frees, s->pages[i], (unsigned long long)(live * nd_class_size[i]),
                (unsigned long long)t->cached, util > 1 ? 1.0 : util);
    }
    nd_outf(o, "],\"large\":{\"allocs\":%llu,\"frees\":%llu,\"bytes\":%llu},",
            (unsigned long long)s->hs.large_allocs, (unsigned long long)s->hs.large_frees,
            (unsigned long long)(s->hs.large_bytes_alloc - s->hs.large_bytes_freed));
    nd_outf(o, "\"huge\":{\"allocs\":%llu,\"frees\":%llu,\"count\":%zu,\"bytes\":%zu},",
            (unsigned long long)s->hs.huge_allocs, (unsigned long long)s->hs.huge_frees, s->g.huge_count,
            s->g.huge_bytes);
    nd_outf(o, "\"nodes\":[");
    for (int i = 0; i < nd_topo.mem_count; i++) {
        int n = nd_topo.mem_ids[i];
        nd_node_counts plain, bound;
        nd_node_counts_get(n, false, &plain);
        nd_node_counts_get(n, true, &bound);
        nd_outf(o, "%s{\"id\":%d,\"has_cpus\":%s,\"plain_mapped\":%zu,\"bound_mapped\":%zu,"
                   "\"plain_cached_segments\":%zu,\"bound_cached_segments\":%zu,"
                   "\"plain_abandoned_segments\":%zu,\"bound_abandoned_segments\":%zu}",
                i ? "," : "", n, (nd_topo.flags[n] & ND_NODE_HAS_CPU) ? "true" : "false",
                s->g.node_mapped[n][0], s->g.node_mapped[n][1], plain.cached, bound.cached, plain.abandoned,
                bound.abandoned);
    }
    nd_outf(o, "],\"options\":{");
    for (int i = 0; i < ND_OPT_COUNT; i++)
        nd_outf(o, "%s\"%s\":%ld", i ? "," : "", nd_opt_table[i].name, nd_opt_values[i]);
    nd_outf(o, "}}\n");
}

nd_public int nodal_stats_print(FILE *out, const char *opts)
{
    nd_process_ensure();
    nd_snapshot s;
    nd_snapshot_take(&s, true);
    nd_out o;
    memset(&o, 0, offsetof(nd_out, buf));
    o.file = out != NULL ? out : stderr;
    if (opts != NULL && strstr(opts, "json"))
        nd_print_json(&o, &s);
    else if (opts != NULL && strstr(opts, "brief"))
        nd_print_brief(&o, &s);
    else
        nd_print_text(&o, &s);
    nd_out_flush(&o);
    if (o.file != NULL && fflush(o.file) != 0)
        o.err = 1;
    return o.err ? -1 : 0;
}

nd_public size_t nodal_stats_json(char *buf, size_t len)
{
    nd_process_ensure();
    nd_snapshot s;
    nd_snapshot_take(&s, true);
    nd_out o;
    memset(&o, 0, offsetof(nd_out, buf));
    char dummy;
    o.dst = buf != NULL ? buf : &dummy;
    o.dst_len = buf != NULL ? len : 0;
    nd_print_json(&o, &s);
    if (buf != NULL && len > 0)
        buf[o.total < len ? o.total : len - 1] = '\0';
    return o.total;
}

/* Called at exit when the option stats is set: straight to fd 2. */
void nd_stats_print_exit(int mode)
{
    nd_snapshot s;
    nd_snapshot_take(&s, false);
    nd_out o;
    memset(&o, 0, offsetof(nd_out, buf));
    if (mode >= 2)
        nd_print_json(&o, &s);
    else
        nd_print_text(&o, &s);
    nd_out_flush(&o);
}

nd_public int nodal_memory_info_get(nodal_memory_info *info)
{
    if (info == NULL) {
        errno = EINVAL;
        return -1;
    }
    nd_process_ensure();
    nd_snapshot s;
    nd_snapshot_take(&s, false);
    memset(info, 0, sizeof *info);
    info->allocated = s.allocated;
    info->active = s.g.active;
    info->mapped = s.g.mapped + s.meta;
    info->committed = s.g.committed;
    info->returned = s.g.returned;
    info->peak_active = s.g.peak_active;
    info->peak_mapped = s.g.peak_mapped + s.meta;   /* metadata only grows */
    info->segments = s.g.segments;
    info->rss_current = s.rss;
    info->rss_peak = s.rss_peak;
    return 0;
}

nd_public void nodal_collect(int force)
{
    nd_process_ensure();
    nd_heap *h = nd_tls_heap;
    if (h->kind == ND_HEAP_NORMAL)
        nd_heap_collect(h, force != 0);
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
    return "nodal 0.1.0";
}
