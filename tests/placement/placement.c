/*
 * placement.c - the shared part of the placement tests: topology from /sys,
 * pinning, the kernel's view of pages (move_pages) and policies
 * (get_mempolicy), size lists and reporting. See placement.h.
 */
#define _GNU_SOURCE
#include "placement.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kview.h"
#include "nodal.h"

#define MPOL_F_NODE (1 << 0)
#define MPOL_F_ADDR (1 << 1)
/* Mode flags get_mempolicy() may OR into the mode (static/relative nodes,
   NUMA balancing); they say how the mask is interpreted, not the mode. */
#define MPOL_MODE_FLAGS_MASK (~0xffff)

/* ---- reporting ----------------------------------------------------------- */
static const char *test_name = "?";
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long fail_count;
int pt_verbose;

static void vreport(const char *tag, const char *fmt, va_list ap)
{
    char line[1024];
    vsnprintf(line, sizeof line, fmt, ap);
    printf("%s: %s\n", tag, line);
    fflush(stdout);
}

void pt_fail(const char *fmt, ...)
{
    va_list ap;
    pthread_mutex_lock(&report_lock);
    fail_count++;
    if (fail_count <= PT_MAX_REPORTS) {
        va_start(ap, fmt);
        vreport("FAIL", fmt, ap);
        va_end(ap);
    } else if (fail_count == PT_MAX_REPORTS + 1) {
        printf("FAIL: (further violations are counted, not printed)\n");
    }
    pthread_mutex_unlock(&report_lock);
}

void pt_info(const char *fmt, ...)
{
    va_list ap;
    pthread_mutex_lock(&report_lock);
    va_start(ap, fmt);
    vreport("INFO", fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&report_lock);
}

unsigned long pt_failures(void)
{
    pthread_mutex_lock(&report_lock);
    unsigned long n = fail_count;
    pthread_mutex_unlock(&report_lock);
    return n;
}

int pt_end(void)
{
    unsigned long n = pt_failures();
    if (n) {
        printf("FAIL %s: %lu violation%s\n", test_name, n, n == 1 ? "" : "s");
        fflush(stdout);
        return 1;
    }
    printf("PASS %s\n", test_name);
    fflush(stdout);
    return 0;
}

/* One "KIND name: [prefix]why" line on stdout. */
static void verdict(const char *kind, const char *prefix, const char *fmt, va_list ap)
{
    char why[512];
    vsnprintf(why, sizeof why, fmt, ap);
    printf("%s %s: %s%s\n", kind, test_name, prefix, why);
    fflush(stdout);
}

int pt_skip(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verdict("SKIP", "", fmt, ap);
    va_end(ap);
    return PT_SKIP;
}

void pt_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verdict("FAIL", "setup: ", fmt, ap);
    va_end(ap);
    exit(2);
}

int pt_begin(int argc, char **argv, const char *name, const char *property)
{
    int i, keep = 1;

    test_name = name;
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("== %s: %s\n", name, property);
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v")) {
            pt_verbose = 1;
        } else if (!strcmp(argv[i], "--expect-option") && i + 1 < argc) {
            char opt[128], *eq;
            snprintf(opt, sizeof opt, "%s", argv[++i]);
            eq = strchr(opt, '=');
            if (!eq)
                pt_die("--expect-option wants NAME=VALUE, got %s", opt);
            *eq = '\0';
            long want = strtol(eq + 1, NULL, 0);
            errno = 0;
            long got = nodal_option_get(opt);
            if (got != want)
                pt_fail("expected nodal option %s = %ld for this run (NODAL_OPTIONS=%s), "
                        "nodal_option_get says %ld%s", opt, want,
                        getenv("NODAL_OPTIONS") ? getenv("NODAL_OPTIONS") : "(unset)", got,
                        got == -1 && errno == ENOENT ? " (unknown option)" : "");
            else
                pt_info("running with nodal option %s = %ld", opt, got);
        } else if (!strcmp(argv[i], "--expect-balancing") && i + 1 < argc) {
            int want = atoi(argv[++i]) != 0, got = pt_numa_balancing();
            if (got < 0)
                pt_fail("expected the kernel's NUMA balancing %s for this run; "
                        "/proc/sys/kernel/numa_balancing cannot be read", want ? "on" : "off");
            else if ((got != 0) != want)
                pt_fail("expected the kernel's NUMA balancing %s for this run (the VM plan's balancing "
                        "column), /proc/sys/kernel/numa_balancing is %d", want ? "on" : "off", got);
            else
                pt_info("running with kernel.numa_balancing = %d", got);
        } else {
            argv[keep++] = argv[i];
        }
    }
    const pt_topo *t = pt_topology();
    char line[512];
    size_t off = 0;
    for (i = 0; i < t->nnodes && off < sizeof line; i++) {
        const pt_node *n = &t->node[i];
        off += snprintf(line + off, sizeof line - off, "%s%d(%s%s, %ld MiB)", i ? " " : "",
                        n->id, n->has_cpus ? "cpus" : "",
                        n->has_memory ? (n->has_cpus ? "+mem" : "mem") : "",
                        n->total_kib >> 10);
    }
    pt_info("nodes: %s", line);
    argv[keep] = NULL;
    return keep;
}

int pt_numa_balancing(void)
{
    FILE *f = fopen("/proc/sys/kernel/numa_balancing", "r");
    int v = -1;
    if (f != NULL) {
        if (fscanf(f, "%d", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

void pt_no_args(int argc, char **argv)
{
    if (argc > 1)
        pt_die("unknown argument %s (common ones: --expect-option NAME=VALUE, -v)", argv[1]);
}

/* ---- small helpers ------------------------------------------------------- */
double pt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

uint64_t pt_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

size_t pt_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, resident = 0;
    if (!f)
        return 0;
    if (fscanf(f, "%lu %lu", &size, &resident) != 2)
        resident = 0;
    fclose(f);
    return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

unsigned long long pt_json_max(const char *json, const char *key, int *found)
{
    char pat[128];
    unsigned long long best = 0;
    int n = 0;
    size_t plen;
    snprintf(pat, sizeof pat, "\"%s\"", key);
    plen = strlen(pat);
    for (const char *p = json ? strstr(json, pat) : NULL; p; p = strstr(p + plen, pat)) {
        const char *q = p + plen;
        while (*q == ' ' || *q == '\t' || *q == '\n')
            q++;
        if (*q != ':')
            continue;
        q++;
        while (*q == ' ' || *q == '\t' || *q == '\n')
            q++;
        char *end;
        unsigned long long v = strtoull(q, &end, 10);
        if (end == q)
            continue;
        n++;
        if (v > best)
            best = v;
    }
    if (found)
        *found = n;
    return best;
}

char *pt_stats_json(void)
{
    size_t need = nodal_stats_json(NULL, 0);
    size_t len = need + 4096;  /* counters may grow between the two calls */
    char *buf = malloc(len);
    if (!buf)
        return NULL;
    nodal_stats_json(buf, len);
    buf[len - 1] = '\0';
    return buf;
}

/* ---- topology ------------------------------------------------------------ */
static pt_topo topo;
static pthread_once_t topo_once = PTHREAD_ONCE_INIT;

long pt_node_free_kib(int id)
{
    return kv_meminfo_kib(id, "MemFree");
}

static void topo_read(void)
{
    static char buf[65536];
    static int ids[PT_MAX_CPUS];
    int i, n;
    cpu_set_t allowed;

    topo.page_size = (int)sysconf(_SC_PAGESIZE);
    if (kv_read_text("/sys/devices/system/node/online", buf, sizeof buf) < 0) {
        printf("FAIL setup: cannot read /sys/devices/system/node/online "
               "(kernel without NUMA support?)\n");
        exit(2);
    }
    n = kv_parse_list(buf, ids, PT_MAX_NODES);
    for (i = 0; i < n; i++) {
        if (ids[i] >= PT_MAX_NODES)
            continue;
        topo.node[topo.nnodes++].id = ids[i];
    }
    if (kv_read_text("/sys/devices/system/node/has_memory", buf, sizeof buf) >= 0) {
        n = kv_parse_list(buf, ids, PT_MAX_NODES);
        for (i = 0; i < n; i++)
            for (int j = 0; j < topo.nnodes; j++)
                if (topo.node[j].id == ids[i])
                    topo.node[j].has_memory = 1;
    }
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        for (i = 0; i < CPU_SETSIZE; i++)
            CPU_SET(i, &allowed);
    for (i = 0; i < topo.nnodes; i++) {
        pt_node *nd = &topo.node[i];
        char path[128];
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", nd->id);
        n = kv_read_text(path, buf, sizeof buf) >= 0 ? kv_parse_list(buf, ids, PT_MAX_CPUS) : 0;
        nd->cpus = calloc((size_t)n + 1, sizeof *nd->cpus);
        if (!nd->cpus)
            exit(2);
        for (int j = 0; j < n; j++)
            if (ids[j] < CPU_SETSIZE && CPU_ISSET(ids[j], &allowed))
                nd->cpus[nd->ncpus++] = ids[j];
        nd->has_cpus = nd->ncpus > 0;
        nd->total_kib = kv_meminfo_kib(nd->id, "MemTotal");
        nd->free_kib = kv_meminfo_kib(nd->id, "MemFree");
        if (nd->has_memory)
            topo.mem[topo.nmem++] = nd->id;
        if (nd->has_cpus)
            topo.cpunode[topo.ncpunode++] = nd->id;
    }
    if (topo.nmem == 0 || topo.ncpunode == 0) {
        printf("FAIL setup: /sys/devices/system/node lists no node with memory or no "
               "usable CPU\n");
        exit(2);
    }
}

const pt_topo *pt_topology(void)
{
    pthread_once(&topo_once, topo_read);
    return &topo;
}

const pt_node *pt_node_get(int id)
{
    const pt_topo *t = pt_topology();
    for (int i = 0; i < t->nnodes; i++)
        if (t->node[i].id == id)
            return &t->node[i];
    return NULL;
}

int pt_sys_distance(int from, int to)
{
    return kv_distance(from, to);
}

/* ---- CPUs ---------------------------------------------------------------- */
int pt_spread_cpu(int k, int *node)
{
    const pt_topo *t = pt_topology();
    const pt_node *nd = pt_node_get(t->cpunode[k % t->ncpunode]);
    int cpu = nd->cpus[(k / t->ncpunode) % nd->ncpus];
    if (node)
        *node = nd->id;
    return cpu;
}

int pt_pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        return -1;
    sched_yield();
    return 0;
}

int pt_cpu_node(void)
{
    unsigned cpu = 0, node = 0;
    if (syscall(SYS_getcpu, &cpu, &node, NULL) != 0)
        return -1;
    return (int)node;
}

/* ---- pages --------------------------------------------------------------- */
void pt_touch(void *p, size_t size, unsigned char v)
{
    volatile unsigned char *c = p;
    size_t ps = (size_t)pt_topology()->page_size;
    uintptr_t first = (uintptr_t)p;
    if (size == 0)
        return;
    c[0] = v;
    /* the start of every following OS page inside the block */
    for (uintptr_t a = (first | (ps - 1)) + 1; a < first + size; a += ps)
        c[a - first] = v;
    c[size - 1] = v;
}

#define PT_QUERY_CHUNK KV_QUERY_MAX

int pt_where_is(const void *p, size_t size, int node, pt_where *w)
{
    static __thread void *pages[PT_QUERY_CHUNK];
    static __thread int status[PT_QUERY_CHUNK];
    size_t ps = (size_t)pt_topology()->page_size;
    uintptr_t first = (uintptr_t)p & ~(uintptr_t)(ps - 1);
    uintptr_t last = size ? ((uintptr_t)p + size - 1) & ~(uintptr_t)(ps - 1) : first;
    size_t total = (last - first) / ps + 1, done = 0;

    memset(w, 0, sizeof *w);
    w->first_bad = (size_t)-1;
    w->pages = total;
    while (done < total) {
        size_t n = total - done < PT_QUERY_CHUNK ? total - done : PT_QUERY_CHUNK;
        for (size_t i = 0; i < n; i++)
            pages[i] = (void *)(first + (done + i) * ps);
        if (kv_query_pages(pages, status, n) != 0)
            return -1;
        for (size_t i = 0; i < n; i++) {
            int st = status[i];
            if (st == node) {
                w->on_node++;
                continue;
            }
            if (st < 0)
                w->missing++;
            else
                w->elsewhere++;
            if (w->first_bad == (size_t)-1) {
                w->first_bad = done + i;
                w->first_bad_status = st;
            }
        }
        done += n;
    }
    return 0;
}

/* Batched queries for many blocks. */
struct pt_entry {
    void *page;
    const void *block;
    size_t size;
    const char *what;
    unsigned long tag;
    int node;
};

#define PT_BATCH 2048

struct pt_batch {
    size_t n;
    struct pt_entry e[PT_BATCH];
    void *pages[PT_BATCH];
    int status[PT_BATCH];
    size_t checked, bad_pages, bad_blocks;
    const void *last_bad_block;
};

pt_batch *pt_batch_new(void)
{
    pt_batch *b = calloc(1, sizeof *b);
    if (!b)
        pt_die("out of memory for a page batch");
    return b;
}

void pt_batch_free(pt_batch *b)
{
    free(b);
}

size_t pt_batch_pages(const pt_batch *b) { return b->checked; }
size_t pt_batch_bad_pages(const pt_batch *b) { return b->bad_pages; }
size_t pt_batch_bad_blocks(const pt_batch *b) { return b->bad_blocks; }

static void describe_status(int st, const void *page, char *buf, size_t len)
{
    if (st >= 0) {
        snprintf(buf, len, "node %d", st);
        return;
    }
    int m = kv_is_mapped(page);
    snprintf(buf, len, "not resident (move_pages: %s; the address is %s)", strerror(-st),
             m < 0 ? "of unknown mapping" : m ? "mapped" : "NOT mapped any more");
}

void pt_batch_flush(pt_batch *b)
{
    size_t i;
    if (b->n == 0)
        return;
    for (i = 0; i < b->n; i++)
        b->pages[i] = b->e[i].page;
    if (kv_query_pages(b->pages, b->status, b->n) != 0)
        pt_die("move_pages(%zu pages): %s", b->n, strerror(errno));
    for (i = 0; i < b->n; i++) {
        struct pt_entry *e = &b->e[i];
        int st = b->status[i];
        b->checked++;
        if (st == e->node)
            continue;
        b->bad_pages++;
        if (e->block != b->last_bad_block) {
            char where[128];
            b->last_bad_block = e->block;
            b->bad_blocks++;
            describe_status(st, e->page, where, sizeof where);
            uintptr_t first = (uintptr_t)e->block &
                              ~(uintptr_t)(pt_topology()->page_size - 1);
            pt_fail("%s #%lu (%p, %zu B): its OS page %zu is %s%s; expected every page on "
                    "node %d", e->what, e->tag, e->block, e->size,
                    (size_t)(((uintptr_t)e->page - first) / (uintptr_t)pt_topology()->page_size),
                    st >= 0 ? "on " : "", where, e->node);
        }
    }
    b->n = 0;
}

void pt_batch_add(pt_batch *b, const void *p, size_t size, int node, const char *what,
                  unsigned long tag)
{
    size_t ps = (size_t)pt_topology()->page_size;
    uintptr_t first = (uintptr_t)p & ~(uintptr_t)(ps - 1);
    uintptr_t last = size ? ((uintptr_t)p + size - 1) & ~(uintptr_t)(ps - 1) : first;
    for (uintptr_t a = first; a <= last; a += ps) {
        /* Neighbouring small blocks share OS pages: ask once per page and
           expectation (a page expected on two nodes is queued twice). */
        if (b->n && b->e[b->n - 1].page == (void *)a && b->e[b->n - 1].node == node)
            continue;
        if (b->n == PT_BATCH)
            pt_batch_flush(b);
        b->e[b->n++] = (struct pt_entry){ (void *)a, p, size, what, tag, node };
    }
}

/* ---- policies ------------------------------------------------------------ */
int pt_policy_of(const void *p, int *mode, unsigned long mask[PT_MASK_LONGS])
{
    memset(mask, 0, PT_MASK_LONGS * sizeof(unsigned long));
    if (syscall(SYS_get_mempolicy, mode, mask, (unsigned long)PT_MASK_BITS, p, MPOL_F_ADDR) != 0)
        return -1;
    *mode &= ~MPOL_MODE_FLAGS_MASK;
    return 0;
}

int pt_thread_policy(int *mode, unsigned long mask[PT_MASK_LONGS])
{
    memset(mask, 0, PT_MASK_LONGS * sizeof(unsigned long));
    if (syscall(SYS_get_mempolicy, mode, mask, (unsigned long)PT_MASK_BITS, NULL, 0UL) != 0)
        return -1;
    *mode &= ~MPOL_MODE_FLAGS_MASK;
    return 0;
}

const char *pt_policy_str(int mode, const unsigned long *mask, char *buf, size_t len)
{
    static const char *names[] = { "default", "preferred", "bind", "interleave", "local",
                                   "preferred_many", "weighted_interleave" };
    size_t off = (size_t)snprintf(buf, len, "%s",
                                  mode >= 0 && mode < 7 ? names[mode] : "mode?");
    int first = 1;
    for (int i = 0; i < PT_MASK_BITS && off < len; i++) {
        if (!(mask[i / (8 * sizeof(unsigned long))] >> (i % (8 * sizeof(unsigned long))) & 1))
            continue;
        off += (size_t)snprintf(buf + off, len - off, "%s%d", first ? "{" : ",", i);
        first = 0;
    }
    if (!first && off < len)
        snprintf(buf + off, len - off, "}");
    return buf;
}

static int mask_is_only(const unsigned long *mask, int node)
{
    for (size_t i = 0; i < PT_MASK_LONGS; i++) {
        unsigned long want = (size_t)node / (8 * sizeof(unsigned long)) == i
                                 ? 1UL << (node % (8 * sizeof(unsigned long)))
                                 : 0;
        if (mask[i] != want)
            return 0;
    }
    return 1;
}

int pt_expect_node_policy(const void *p, size_t size, int node, const char *what)
{
    const char *at[2] = { p, (const char *)p + (size ? size - 1 : 0) };
    for (int k = 0; k < (size > 1 ? 2 : 1); k++) {
        int mode;
        unsigned long mask[PT_MASK_LONGS];
        char pol[128];
        if (pt_policy_of(at[k], &mode, mask) != 0) {
            pt_fail("%s (%p, %zu B): get_mempolicy(MPOL_F_ADDR) failed: %s; expected the "
                    "kernel to report a policy for node %d", what, p, size, strerror(errno),
                    node);
            return 0;
        }
        int ok = mask_is_only(mask, node) &&
                 (mode == PT_MPOL_BIND || mode == PT_MPOL_PREFERRED);
        if (!ok) {
            pt_fail("%s (%p, %zu B): kernel policy at its %s byte is %s; expected bind{%d} or "
                    "preferred{%d} (node memory is put under its node's policy before first "
                    "touch)", what, p, size, k ? "last" : "first",
                    pt_policy_str(mode, mask, pol, sizeof pol), node, node);
            return 0;
        }
    }
    return 1;
}

int pt_expect_default_policy(const void *p, size_t size, const char *what)
{
    const char *at[2] = { p, (const char *)p + (size ? size - 1 : 0) };
    for (int k = 0; k < (size > 1 ? 2 : 1); k++) {
        int mode;
        unsigned long mask[PT_MASK_LONGS];
        char pol[128];
        if (pt_policy_of(at[k], &mode, mask) != 0) {
            pt_fail("%s (%p, %zu B): get_mempolicy(MPOL_F_ADDR) failed: %s; expected the "
                    "kernel to report the default policy", what, p, size, strerror(errno));
            return 0;
        }
        if (mode != PT_MPOL_DEFAULT) {
            pt_fail("%s (%p, %zu B): kernel policy at its %s byte is %s; expected default "
                    "(plain malloc memory is never bound)", what, p, size,
                    k ? "last" : "first", pt_policy_str(mode, mask, pol, sizeof pol));
            return 0;
        }
    }
    return 1;
}

/* ---- sizes --------------------------------------------------------------- */
int pt_class_sizes(size_t *out, int max)
{
    int n = 0;
    if (max >= 2) {
        out[n++] = 1;   /* the smallest requests share the first class */
        out[n++] = 8;
    }
    for (size_t base = 16; base < 128 * 1024; base *= 2)
        for (size_t k = 0; k < 8 && n + 2 <= max; k++) {
            out[n++] = base + k * base / 8;
            out[n++] = base + k * base / 8 + 1;
        }
    if (n < max)
        out[n++] = 128 * 1024;
    return n;
}

int pt_large_sizes(size_t *out, int max)
{
    static const size_t k[] = { 160 << 10, 256 << 10, (384 << 10) + 1, 512 << 10,
                                768 << 10, 1 << 20, 1536 << 10, (2 << 20) - 1,
                                2 << 20, (2 << 20) + 1, 3 << 20, 4 << 20, (4 << 20) + 4096 };
    int n = 0;
    for (size_t i = 0; i < sizeof k / sizeof k[0] && n < max; i++)
        out[n++] = k[i];
    return n;
}

int pt_huge_sizes(size_t *out, int max, size_t cap)
{
    static const size_t k[] = { 8 << 20, (12 << 20) + 1, 16 << 20, 32 << 20, 64 << 20 };
    int n = 0;
    for (size_t i = 0; i < sizeof k / sizeof k[0] && n < max; i++)
        if (k[i] <= cap)
            out[n++] = k[i];
    return n;
}

int pt_run_self(char *const argv[], const char *options, const char *mode, const char *what)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        pt_die("fork: %s", strerror(errno));
    if (pid == 0) {
        if (options != NULL)
            setenv("NODAL_OPTIONS", options, 1);
        else
            unsetenv("NODAL_OPTIONS");
        unsetenv("NODAL_NODE_FALLBACK");
        execv("/proc/self/exe", argv);
        printf("FAIL: exec /proc/self/exe: %s\n", strerror(errno));
        _exit(2);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            pt_die("waitpid: %s", strerror(errno));
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    if (WIFSIGNALED(st))
        pt_fail("%s: the process was killed by signal %d (%s)%s; expected it to survive a %s", mode, WTERMSIG(st),
                strsignal(WTERMSIG(st)), WTERMSIG(st) == SIGKILL ? " - the OOM killer, most likely" : "", what);
    else
        pt_fail("%s: the check failed (exit status %d, see its lines above)", mode, WEXITSTATUS(st));
    return 1;
}
