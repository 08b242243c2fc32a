/*
 * tier.c - reads the memory attributes of every node (the kernel's access
 * attributes and memory tiers, or a file of measured values) once at
 * start-up and builds the order of every tier from every node (tier.h).
 * Owns nd_tiers. Runs during process initialisation: allocates nothing.
 */
#include "tier.h"

#include <stdio.h>
#include <string.h>
#include "counters.h"
#include "options.h"
#include "os.h"
#include "out.h"
#include "topo.h"

/* On a page of its own: its small arrays and first order rows share one
   (tier.h). */
nd_aligned(4096) nd_tiers_t nd_tiers;
int8_t nd_tier_by_cpu[ND_MAX_CPUS][4];

static const char *const nd_tier_names[ND_TIER_COUNT] = { "latency", "bandwidth", "capacity" };

const char *nd_tier_name(int t)
{
    return (unsigned)t < ND_TIER_COUNT ? nd_tier_names[t] : "?";
}

static uint64_t nd_read_u64(const char *path, bool *ok)
{
    char buf[64];
    *ok = false;
    if (nd_os_read_file(path, buf, sizeof buf) <= 0 || buf[0] < '0' || buf[0] > '9')
        return 0;
    uint64_t v = 0;
    for (const char *s = buf; *s >= '0' && *s <= '9'; s++)
        v = v * 10 + (uint64_t)(*s - '0');
    *ok = true;
    return v;
}

static uint32_t nd_clamp32(uint64_t v) { return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v; }

/* The number in file dir/name, clamped to 32 bits (0 if absent); *any is
   set when the file was there. */
static uint32_t nd_read_attr(const char *dir, const char *name, bool *any)
{
    char path[ND_SYS_PATH_MAX + 32];
    bool ok;
    nd_format_path(path, sizeof path, "%s/%s", dir, name);
    uint32_t v = nd_clamp32(nd_read_u64(path, &ok));
    *any |= ok;
    return v;
}

/* memory_tierN directories: N for every node of its nodelist. */
struct nd_tier_dir { const char *sys; };

static void nd_mark_kernel_tier(int node, void *arg)
{
    if ((unsigned)node < ND_MAX_NODES)
        nd_tiers.kernel_tier[node] = (int16_t)(intptr_t)arg;
}

static void nd_read_kernel_tier(const char *name, void *arg)
{
    const struct nd_tier_dir *d = arg;
    if (strncmp(name, "memory_tier", 11) != 0 || name[11] < '0' || name[11] > '9')
        return;
    long id = 0;
    for (const char *s = name + 11; *s >= '0' && *s <= '9' && id < 32767; s++)
        id = id * 10 + (*s - '0');
    char path[ND_SYS_PATH_MAX], buf[1024];
    nd_format_path(path, sizeof path, "%s/devices/virtual/memory_tiering/%s/nodelist", d->sys, name);
    if (nd_os_read_file(path, buf, sizeof buf) > 0)
        nd_parse_list(buf, nd_mark_kernel_tier, (void *)(intptr_t)id);
}

/* "Node 0 MemTotal:   469116 kB" */
static uint64_t nd_node_mem_total(const char *sys, int node)
{
    char path[ND_SYS_PATH_MAX], buf[2048];
    nd_format_path(path, sizeof path, "%s/devices/system/node/node%d/meminfo", sys, node);
    if (nd_os_read_file(path, buf, sizeof buf) <= 0)
        return 0;
    const char *s = strstr(buf, "MemTotal:");
    if (s == NULL)
        return 0;
    s += 9;
    while (*s == ' ')
        s++;
    uint64_t kib = 0;
    while (*s >= '0' && *s <= '9')
        kib = kib * 10 + (uint64_t)(*s++ - '0');
    return kib << 10;
}

/* The kernel's access attributes of target m; its initiators become near. */
static bool nd_read_hmat(const char *sys, int m)
{
    char dir[ND_SYS_PATH_MAX], path[ND_SYS_PATH_MAX + 32];
    nd_format_path(dir, sizeof dir, "%s/devices/system/node/node%d/access0/initiators", sys, m);
    nd_tier_attr a;
    bool any = false;
    a.read_latency = nd_read_attr(dir, "read_latency", &any);
    a.write_latency = nd_read_attr(dir, "write_latency", &any);
    a.read_bandwidth = nd_read_attr(dir, "read_bandwidth", &any);
    a.write_bandwidth = nd_read_attr(dir, "write_bandwidth", &any);
    if (!any)
        return false;
    bool linked = false;
    for (int c = 0; c < ND_MAX_NODES; c++) {
        if (!(nd_topo.flags[c] & ND_NODE_PRESENT))
            continue;
        nd_format_path(path, sizeof path, "%s/node%d", dir, c);
        if (nd_os_path_exists(path)) {
            nd_tiers.attr[c][m] = a;
            nd_tiers.near[c] |= (uint64_t)1 << m;
            linked = true;
        }
    }
    return linked;
}

/* The measured file: "cpu_node mem_node latency_ns read_MBps write_MBps"
   per line; '#' starts a comment. Returns the number of pairs read. */
static int nd_read_measured(const char *file)
{
    static char buf[128 * 1024];   /* start-up only, under the init lock */
    if (file == NULL || file[0] == '\0')
        return 0;
    if (nd_os_read_file(file, buf, sizeof buf) <= 0) {
        nd_warn("tier_file %s cannot be read; tiers use the kernel's attributes and distances", file);
        return 0;
    }
    int pairs = 0, line_no = 0;
    for (char *s = buf; *s;) {
        char *eol = strchr(s, '\n');
        if (eol)
            *eol = '\0';
        line_no++;
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s != '#' && *s != '\0') {
            uint64_t v[5] = { 0 };
            int n = 0;
            while (n < 5) {
                while (*s == ' ' || *s == '\t')
                    s++;
                if (*s < '0' || *s > '9')
                    break;
                while (*s >= '0' && *s <= '9')
                    v[n] = v[n] * 10 + (uint64_t)(*s++ - '0');
                if (*s == '.')   /* fractions are dropped */
                    for (s++; *s >= '0' && *s <= '9'; s++) {}
                n++;
            }
            while (*s == ' ' || *s == '\t' || *s == '\r')
                s++;
            if (n != 5 || *s != '\0' || v[0] >= ND_MAX_NODES || v[1] >= ND_MAX_NODES) {
                nd_warn("tier_file %s line %d is not 'cpu_node mem_node latency_ns read_MBps write_MBps'; "
                        "the file is ignored", file, line_no);
                memset(nd_tiers.attr, 0, sizeof nd_tiers.attr);
                return 0;
            }
            nd_tier_attr *a = &nd_tiers.attr[v[0]][v[1]];
            a->read_latency = a->write_latency = nd_clamp32(v[2]);
            a->read_bandwidth = nd_clamp32(v[3]);
            a->write_bandwidth = nd_clamp32(v[4]);
            pairs++;
        }
        if (!eol)
            break;
        s = eol + 1;
    }
    return pairs;
}

static int nd_dist(int c, int m)
{
    if (c == m)
        return 0;
    int d = nd_topo.distance[c][m];
    return d ? d : 255;
}

/* Sort key of node m in tier t from node c: smaller is better. */
static void nd_tier_key(int t, int c, int m, uint64_t key[4])
{
    const nd_tier_attr *a = &nd_tiers.attr[c][m];
    bool near = (nd_tiers.near[c] >> m) & 1;
    uint64_t attr;
    switch (t) {
    case ND_TIER_LATENCY:   attr = a->read_latency ? a->read_latency : UINT32_MAX; break;
    case ND_TIER_BANDWIDTH: attr = a->read_bandwidth ? UINT32_MAX - a->read_bandwidth : UINT32_MAX; break;
    default:                attr = UINT64_MAX - nd_tiers.mem_bytes[m]; break;
    }
    uint64_t ktier = nd_tiers.kernel_tier[m] < 0 ? 0x7fff : (uint64_t)nd_tiers.kernel_tier[m];
    if (t == ND_TIER_CAPACITY)
        ktier = 0;   /* size alone decides among near nodes */
    key[0] = near ? 0 : 1;
    if (near) {
        key[1] = attr;
        key[2] = ktier;
        key[3] = (uint64_t)nd_dist(c, m);
    } else {
        key[1] = (uint64_t)nd_dist(c, m);
        key[2] = attr;
        key[3] = ktier;
    }
}

static bool nd_key_less(const uint64_t a[4], const uint64_t b[4])
{
    for (int i = 0; i < 4; i++)
        if (a[i] != b[i])
            return a[i] < b[i];
    return false;
}

static void nd_tier_order(int t, int c)
{
    int8_t *o = nd_tiers.order[c][t];
    int n = nd_topo.mem_count;
    for (int i = 0; i < n; i++)
        o[i] = (int8_t)nd_topo.mem_ids[i];
    /* insertion sort by key, ids ascending on equal keys (stable) */
    for (int i = 1; i < n; i++) {
        int8_t m = o[i];
        uint64_t km[4], kj[4];
        nd_tier_key(t, c, m, km);
        int j = i - 1;
        for (; j >= 0; j--) {
            nd_tier_key(t, c, o[j], kj);
            if (!nd_key_less(km, kj))
                break;
            o[j + 1] = o[j];
        }
        o[j + 1] = m;
    }
}

/* Does row c of the attribute matrix hold a value? Read only: a row no
   HMAT entry wrote stays unwritten (a page only read is not resident). */
static bool nd_tier_row_is_set(int c)
{
    for (int m = 0; m < ND_MAX_NODES; m++) {
        const nd_tier_attr *a = &nd_tiers.attr[c][m];
        if ((a->read_latency | a->write_latency | a->read_bandwidth | a->write_bandwidth) != 0)
            return true;
    }
    return false;
}

/* nd_tiers has been filled before (a test reads fixture trees one after
   another). The first read finds it zero, as the loader left it, and does
   not clear it: its 76 KiB (the attribute table of every node pair, most
   of it) would otherwise become resident in every process. */
static bool nd_tiers_filled;

void nd_tier_read(const char *sys, const char *measured)
{
    if (nd_tiers_filled) {
        memset(&nd_tiers, 0, sizeof nd_tiers);
        memset(nd_tier_by_cpu, 0, sizeof nd_tier_by_cpu);
    }
    nd_tiers_filled = true;
    for (int n = 0; n < ND_MAX_NODES; n++)
        nd_tiers.kernel_tier[n] = -1;

    struct nd_tier_dir d = { sys };
    char path[ND_SYS_PATH_MAX];
    nd_format_path(path, sizeof path, "%s/devices/virtual/memory_tiering", sys);
    nd_os_dir_names(path, nd_read_kernel_tier, &d);

    bool hmat = false;
    for (int i = 0; i < nd_topo.mem_count; i++) {
        int m = nd_topo.mem_ids[i];
        nd_tiers.mem_bytes[m] = nd_node_mem_total(sys, m);
        hmat |= nd_read_hmat(sys, m);
    }
    int src = ND_TIER_SRC_HMAT;
    if (!hmat) {
        /* What a partial HMAT left: the rows of the nodes there are. */
        memset(nd_tiers.near, 0, sizeof nd_tiers.near);
        for (int c = 0; c < ND_MAX_NODES; c++)
            if ((nd_topo.flags[c] & ND_NODE_PRESENT) && nd_tier_row_is_set(c))
                memset(nd_tiers.attr[c], 0, sizeof nd_tiers.attr[c]);
        src = nd_read_measured(measured) > 0 ? ND_TIER_SRC_MEASURED : ND_TIER_SRC_DISTANCE;
        /* near: the node itself, and memory-only nodes whose closest CPU
           node is this one */
        for (int i = 0; i < nd_topo.mem_count; i++) {
            int m = nd_topo.mem_ids[i];
            if (nd_topo.flags[m] & ND_NODE_HAS_CPU) {
                nd_tiers.near[m] |= (uint64_t)1 << m;
                continue;
            }
            int best = 1 << 30;
            for (int c = 0; c < ND_MAX_NODES; c++)
                if ((nd_topo.flags[c] & ND_NODE_HAS_CPU) && nd_dist(c, m) < best)
                    best = nd_dist(c, m);
            for (int c = 0; c < ND_MAX_NODES; c++)
                if ((nd_topo.flags[c] & ND_NODE_HAS_CPU) && nd_dist(c, m) == best)
                    nd_tiers.near[c] |= (uint64_t)1 << m;
        }
    }
    for (int c = 0; c < ND_MAX_NODES; c++) {
        if (!(nd_topo.flags[c] & ND_NODE_HAS_CPU))
            continue;
        if (nd_tiers.near[c] == 0) {
            /* a CPU-only node, or one no HMAT entry names: its closest node
               with memory, and that node's view */
            int l = nd_topo_local_mem_node(c);
            nd_tiers.near[c] = (uint64_t)1 << l;
        }
        nd_tiers.source[c] = (uint8_t)src;
        for (int t = 0; t < ND_TIER_COUNT; t++)
            nd_tier_order(t, c);
    }
    /* A node without CPUs (no thread runs there; nodal_tier_node may still
       be asked): the view of its closest CPU node. */
    for (int m = 0; m < ND_MAX_NODES; m++) {
        if (!(nd_topo.flags[m] & ND_NODE_PRESENT) || (nd_topo.flags[m] & ND_NODE_HAS_CPU))
            continue;
        int best = -1;
        for (int c = 0; c < ND_MAX_NODES; c++)
            if ((nd_topo.flags[c] & ND_NODE_HAS_CPU) && (best < 0 || nd_dist(m, c) < nd_dist(m, best)))
                best = c;
        if (best < 0)
            continue;
        nd_tiers.source[m] = nd_tiers.source[best];
        for (int t = 0; t < ND_TIER_COUNT; t++)
            memcpy(nd_tiers.order[m][t], nd_tiers.order[best][t], sizeof nd_tiers.order[m][t]);
    }
    for (int t = 0; t < ND_TIER_COUNT; t++)
        for (int cpu = 0; cpu < nd_topo.cpu_limit; cpu++)   /* not all ND_MAX_CPUS: 16 KiB */
            nd_tier_by_cpu[cpu][t] = nd_tiers.order[nd_topo_cpu_node(cpu)][t][0];

    static const nd_opt_id caps[ND_TIER_COUNT] = { ND_OPT_tier_latency_max, ND_OPT_tier_bandwidth_max,
                                                   ND_OPT_tier_capacity_max };
    for (int t = 0; t < ND_TIER_COUNT; t++) {
        nd_tiers.cap[t] = (size_t)nd_opt(caps[t]);
        nd_tiers.any_cap |= nd_tiers.cap[t] != 0;
        for (int c = 0; c < ND_MAX_NODES; c++) {
            if (!(nd_topo.flags[c] & ND_NODE_HAS_CPU))
                continue;
            int first = nd_tiers.order[c][t][0];
            nd_tiers.first_tiers[first] |= (uint8_t)(1u << t);
            if (nd_tiers.cap[t] != 0)
                nd_tiers.cap_tiers[first] |= (uint8_t)(1u << t);
        }
    }
}

void nd_tier_init(void)
{
    nd_tier_read("/sys", nd_opt_text(ND_OPT_tier_file));
}

int nd_tier_node(int t, int from)
{
    if ((unsigned)t >= ND_TIER_COUNT || (unsigned)from >= ND_MAX_NODES ||
        !(nd_topo.flags[from] & ND_NODE_PRESENT))
        return -1;
    return nd_tiers.order[from][t][0];
}

unsigned nd_tier_over_cap(int node, size_t size)
{
    if (!nd_tiers.any_cap || (unsigned)node >= ND_MAX_NODES || nd_tiers.cap_tiers[node] == 0)
        return 0;
    unsigned over = 0;
    for (int t = 0; t < ND_TIER_COUNT; t++) {
        if (!(nd_tiers.cap_tiers[node] & (1u << t)))
            continue;
        if (nd_tier_cap_bytes(t, -1) + size > nd_tiers.cap[t])
            over |= 1u << t;
    }
    return over;
}

size_t nd_tier_cap_bytes(int t, int from)
{
    if ((unsigned)t >= ND_TIER_COUNT)
        return 0;
    if (from >= 0) {
        int n = nd_tier_node(t, from);
        return n < 0 ? 0 : nd_load_relaxed(&nd_gauge.bound_mapped[n]);
    }
    /* the tier's memory: node-bound mappings on all its first choices */
    size_t used = 0;
    for (int n = 0; n < ND_MAX_NODES; n++)
        if (nd_tiers.first_tiers[n] & (1u << t))
            used += nd_load_relaxed(&nd_gauge.bound_mapped[n]);
    return used;
}
