/*
 * nodal-verify - check nodal on this machine: what the NUMA topology looks
 * like, how node-targeted allocation scales with threads, and whether
 * blocks really land where they were asked to.
 *
 *   nodal-verify [--quick] [--threads 1,2,4,8,16] [--ops N] [--size BYTES]
 *                [--no-timing] [--no-placement] [-h]
 *   nodal-verify --matrix [--json] [--size BYTES] [--time SECONDS] [--bw-threads N]
 *
 * 1. Topology: nodes with memory, their CPUs, total and free memory, which
 *    are memory-only, and the distance matrix, as nodal sees them; any
 *    difference from /sys/devices/system/node is reported as a failure.
 * 2. Placement, judged by the kernel (move_pages and get_mempolicy, never by
 *    asking nodal), run first so that plain memory is fresh:
 *      a. plain malloc still unbound: in a thread on each CPU node that has
 *         used the node API for every node, plain blocks are under the
 *         default policy and their pages on the thread's own node;
 *      b. one thread, requests interleaved over all nodes, every size class,
 *         large and huge sizes: every OS page on its node, under a policy for
 *         exactly that node (bind or preferred);
 *      c. 8 threads on all CPU nodes allocating for all nodes and freeing each
 *         other's blocks: no block off its node.
 * 3. Timing: nanoseconds per nodal_malloc_node and per free of 32-byte
 *    blocks, for every node, with 1, 2, 4, 8 and 16 threads pinned over the
 *    CPUs (plain malloc/free as a reference). Per-thread cost should stay
 *    flat as threads are added; a cost that grows with the thread count is
 *    reported as a warning (timing never fails the run: machines are noisy,
 *    and counts above the CPU count oversubscribe).
 *
 * --matrix instead measures latency and bandwidth from every CPU node to
 * every memory node on node-API memory (verify-matrix.c).
 *
 * Exit status: 0 all placement checks passed, 1 a check failed, 2 usage or
 * setup error.
 *
 * Build by hand: cc -O2 -pthread nodal-verify.c verify-matrix.c -lnodal
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "kview.h"
#include "nodal.h"
#include "verify.h"

#define MASK_BITS 1024              /* get_mempolicy wants room for every kernel node id */
#define MASK_LONGS (MASK_BITS / (8 * sizeof(unsigned long)))
#define MPOL_DEFAULT 0
#define MPOL_PREFERRED 1
#define MPOL_BIND 2
#define MPOL_F_ADDR (1 << 1)
#define MIB (1024.0 * 1024.0)

/* ---- options and results ------------------------------------------------ */
static int quick, do_timing = 1, do_placement = 1;
static long ops_per_thread = 200000;
static size_t timing_size = 32;
static int thread_counts[32] = { 1, 2, 4, 8, 16 }, nthread_counts = 5;
static int failed_checks, warnings;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long check_violations;   /* of the check running now */

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    pthread_mutex_lock(&out_lock);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
    pthread_mutex_unlock(&out_lock);
}

/* A placement violation: counted always, printed for the first few. */
static void violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void violation(const char *fmt, ...)
{
    va_list ap;
    pthread_mutex_lock(&out_lock);
    if (++check_violations <= 10) {
        printf("    FAIL: ");
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        printf("\n");
    }
    fflush(stdout);
    pthread_mutex_unlock(&out_lock);
}

double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- topology ------------------------------------------------------------ */
struct node nodes[MAX_NODES];
int nnodes;
int cpu_nodes[MAX_NODES], ncpu_nodes;
int page_size;

static int read_line(const char *path, char *buf, size_t len)
{
    if (kv_read_text(path, buf, len) < 0)
        return -1;
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

static void topology(void)
{
    int ids[MAX_NODES], sys_ids[MAX_NODES], nsys = 0;
    char buf[4096];
    cpu_set_t allowed;

    page_size = (int)sysconf(_SC_PAGESIZE);
    nnodes = nodal_node_ids(ids, MAX_NODES);
    if (nnodes < 1) {
        printf("nodal reports no node with memory\n");
        exit(2);
    }
    if (nnodes > MAX_NODES)
        nnodes = MAX_NODES;
    CPU_ZERO(&allowed);
    sched_getaffinity(0, sizeof allowed, &allowed);
    for (int i = 0; i < nnodes; i++) {
        struct node *n = &nodes[i];
        char path[128];
        int cpus[1024], nc;
        n->id = ids[i];
        n->has_cpus = nodal_node_has_cpus(n->id) == 1;
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", n->id);
        if (read_line(path, n->cpulist, sizeof n->cpulist))
            n->cpulist[0] = '\0';
        nc = kv_parse_list(n->cpulist, cpus, 1024);
        n->cpus = calloc((size_t)nc + 1, sizeof *n->cpus);
        for (int c = 0; c < nc; c++)
            if (cpus[c] < CPU_SETSIZE && CPU_ISSET(cpus[c], &allowed))
                n->cpus[n->ncpus++] = cpus[c];
        n->total_kib = kv_meminfo_kib(n->id, "MemTotal");
        n->free_kib = kv_meminfo_kib(n->id, "MemFree");
        if (n->ncpus > 0)
            cpu_nodes[ncpu_nodes++] = i;
    }
    if (ncpu_nodes == 0) {
        printf("no node with memory has a CPU this process may use\n");
        exit(2);
    }

    /* nodal against the kernel */
    if (read_line("/sys/devices/system/node/has_memory", buf, sizeof buf) == 0)
        nsys = kv_parse_list(buf, sys_ids, MAX_NODES);
    int same = nsys == nnodes;
    for (int i = 0; same && i < nnodes; i++)
        same = sys_ids[i] == ids[i];
    if (nsys && !same) {
        printf("  FAIL: nodal lists %d node(s) with memory, /sys/devices/system/node/"
               "has_memory says \"%s\"\n", nnodes, buf);
        failed_checks++;
    }
    for (int i = 0; i < nnodes; i++) {
        int kernel_cpus = nodes[i].cpulist[0] != '\0';
        if (kernel_cpus != nodes[i].has_cpus) {
            printf("  FAIL: nodal_node_has_cpus(%d) = %d, /sys lists CPUs \"%s\"\n",
                   nodes[i].id, nodes[i].has_cpus, nodes[i].cpulist);
            failed_checks++;
        }
        for (int j = 0; j < nnodes; j++) {
            int d = nodal_node_distance(nodes[i].id, nodes[j].id);
            int k = kv_distance(nodes[i].id, nodes[j].id);
            if (k >= 0 && d != k) {
                printf("  FAIL: nodal_node_distance(%d, %d) = %d, /sys says %d\n",
                       nodes[i].id, nodes[j].id, d, k);
                failed_checks++;
            }
        }
    }
}

static void print_header(void)
{
    struct utsname u;
    char thp[128] = "?", bal[32] = "?";
    uname(&u);
    read_line("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof thp);
    read_line("/proc/sys/kernel/numa_balancing", bal, sizeof bal);
    printf("%s on %s %s (%s); %ld CPUs online, %d-byte pages\n", nodal_version(), u.sysname,
           u.release, u.machine, sysconf(_SC_NPROCESSORS_ONLN), page_size);
    printf("transparent huge pages: %s; automatic NUMA balancing: %s\n", thp,
           !strcmp(bal, "0") ? "off" : !strcmp(bal, "?") ? "unknown" : "on");
    const char *opts = getenv("NODAL_OPTIONS");
    printf("NODAL_OPTIONS: %s; node_fallback = %s, huge_pages = %ld\n\n", opts ? opts : "(unset)",
           nodal_option_get("node_fallback") == 1 ? "preferred" : "strict",
           nodal_option_get("huge_pages"));

    printf("Topology: %d node(s) with memory, %d with CPUs\n", nnodes, ncpu_nodes);
    printf("  %-5s %-12s %-16s %10s %10s\n", "node", "kind", "cpus", "total MiB", "free MiB");
    for (int i = 0; i < nnodes; i++) {
        const struct node *n = &nodes[i];
        printf("  %-5d %-12s %-16s %10ld %10ld\n", n->id,
               n->has_cpus ? "cpu+memory" : "memory-only",
               n->cpulist[0] ? n->cpulist : "-", n->total_kib >> 10, n->free_kib >> 10);
    }
    printf("  distances:\n       ");
    for (int j = 0; j < nnodes; j++)
        printf("%5d", nodes[j].id);
    printf("\n");
    for (int i = 0; i < nnodes; i++) {
        printf("  %4d:", nodes[i].id);
        for (int j = 0; j < nnodes; j++)
            printf("%5d", nodal_node_distance(nodes[i].id, nodes[j].id));
        printf("\n");
    }
    printf("\n");
}

/* ---- CPUs and threads ------------------------------------------------------ */
/* k-th CPU, round-robin over the CPU nodes, then over each node's CPUs. */
static int spread_cpu(int k, int *node_idx)
{
    int ni = cpu_nodes[k % ncpu_nodes];
    const struct node *n = &nodes[ni];
    if (node_idx)
        *node_idx = ni;
    return n->cpus[(k / ncpu_nodes) % n->ncpus];
}

int pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        return -1;
    sched_yield();
    return 0;
}

static int usable_cpus(void)
{
    int n = 0;
    for (int c = 0; c < ncpu_nodes; c++)
        n += nodes[cpu_nodes[c]].ncpus;
    return n;
}

/* ---- the kernel's view --------------------------------------------------- */
static void touch(void *p, size_t size)
{
    volatile unsigned char *c = p;
    uintptr_t a = (uintptr_t)p, ps = (uintptr_t)page_size;
    c[0] = 1;
    for (uintptr_t q = (a | (ps - 1)) + 1; q < a + size; q += ps)
        c[q - a] = 1;
    c[size - 1] = 1;
}

size_t pages_off_node(const void *p, size_t size, int node, int *where)
{
    enum { CHUNK = 1024 };
    void *pages[CHUNK];
    int status[CHUNK];
    uintptr_t ps = (uintptr_t)page_size, first = (uintptr_t)p & ~(ps - 1);
    uintptr_t last = ((uintptr_t)p + size - 1) & ~(ps - 1);
    size_t bad = 0;
    *where = node;
    for (uintptr_t a = first; a <= last;) {
        unsigned long n = 0;
        for (; a <= last && n < CHUNK; a += ps)
            pages[n++] = (void *)a;
        if (kv_query_pages(pages, status, n) != 0) {
            *where = -errno;
            return n;
        }
        for (unsigned long i = 0; i < n; i++) {
            if (status[i] != node) {
                if (bad++ == 0)
                    *where = status[i];
            }
        }
    }
    return bad;
}

/* Policy mode at p, and whether its mask is exactly {node}. */
static int policy_at(const void *p, int node, int *only_node)
{
    unsigned long mask[MASK_LONGS] = { 0 };
    int mode = -1;
    *only_node = 0;
    if (syscall(SYS_get_mempolicy, &mode, mask, (unsigned long)MASK_BITS, p, MPOL_F_ADDR) != 0)
        return -1;
    int bits = 0;
    for (size_t i = 0; i < MASK_LONGS; i++)
        bits += __builtin_popcountl(mask[i]);
    *only_node = node >= 0 && node < MASK_BITS && bits == 1 &&
                 (mask[node / (8 * sizeof(long))] >> (node % (8 * sizeof(long))) & 1);
    return mode & 0xff;
}

/* A node block: all pages on `node`, under a policy for exactly that node. */
static void expect_node_block(const void *p, size_t size, int node, const char *what)
{
    int where, only;
    size_t bad = pages_off_node(p, size, node, &where);
    if (bad)
        violation("%s: %zu B for node %d has %zu OS page(s) elsewhere (first on %s%d)", what,
                  size, node, bad, where < 0 ? "error " : "node ", where < 0 ? -where : where);
    int mode = policy_at(p, node, &only);
    if ((mode != MPOL_BIND && mode != MPOL_PREFERRED) || !only)
        violation("%s: %zu B for node %d is under kernel policy mode %d%s; expected bind{%d} "
                  "or preferred{%d}", what, size, node, mode,
                  only ? "" : " with another node mask", node, node);
}

/* ---- timing ------------------------------------------------------------- */
#define BATCH 1000                  /* --ops must be at least this (see usage_error) */

struct timing_job {
    pthread_t tid;
    int cpu, node;          /* node id to allocate on, -1 = plain malloc */
    long ops;
    double alloc_s, free_s;
    int failed;
};
static pthread_barrier_t timing_barrier;

static void *timing_thread(void *arg)
{
    struct timing_job *j = arg;
    void **v = malloc(BATCH * sizeof *v);
    pin(j->cpu);
    pthread_barrier_wait(&timing_barrier);
    for (long done = -BATCH; done < j->ops; done += BATCH) {   /* first batch warms up */
        double t0 = now();
        for (int i = 0; i < BATCH; i++)
            v[i] = j->node < 0 ? malloc(timing_size) : nodal_malloc_node(timing_size, j->node);
        double t1 = now();
        for (int i = 0; i < BATCH; i++) {
            if (!v[i])
                j->failed = 1;
            free(v[i]);
        }
        double t2 = now();
        if (done >= 0) {
            j->alloc_s += t1 - t0;
            j->free_s += t2 - t1;
        }
    }
    free(v);
    return NULL;
}

/* Mean per-thread ns per alloc and per free for `threads` threads on node. */
static int time_one(int threads, int node, double *alloc_ns, double *free_ns)
{
    struct timing_job *jobs = calloc((size_t)threads, sizeof *jobs);
    int failed = 0;
    pthread_barrier_init(&timing_barrier, NULL, (unsigned)threads);
    for (int t = 0; t < threads; t++) {
        jobs[t].cpu = spread_cpu(t, NULL);
        jobs[t].node = node;
        jobs[t].ops = ops_per_thread;
        pthread_create(&jobs[t].tid, NULL, timing_thread, &jobs[t]);
    }
    *alloc_ns = *free_ns = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(jobs[t].tid, NULL);
        *alloc_ns += jobs[t].alloc_s * 1e9 / (double)ops_per_thread / threads;
        *free_ns += jobs[t].free_s * 1e9 / (double)ops_per_thread / threads;
        failed |= jobs[t].failed;
    }
    pthread_barrier_destroy(&timing_barrier);
    free(jobs);
    return failed;
}

static void timing(void)
{
    int ncpu = usable_cpus();
    double base_free[MAX_NODES + 1], base_alloc[MAX_NODES + 1];
    printf("Timing: ns per operation, %zu-byte blocks, %ld operations per thread, threads "
           "pinned round-robin over the CPU nodes (%d usable CPUs)\n", timing_size,
           ops_per_thread, ncpu);
    printf("  %-8s %-8s %10s %10s %10s\n", "threads", "node", "alloc", "free", "pair");
    for (int c = 0; c < nthread_counts; c++) {
        int threads = thread_counts[c];
        for (int i = -1; i < nnodes; i++) {
            int node = i < 0 ? -1 : nodes[i].id;
            double a, f;
            if (time_one(threads, node, &a, &f))
                printf("  FAIL: allocation returned NULL while timing node %d\n", node);
            char label[16];
            snprintf(label, sizeof label, i < 0 ? "malloc" : "%d", node);
            printf("  %-8d %-8s %10.1f %10.1f %10.1f%s\n", threads, label, a, f, a + f,
                   threads > ncpu ? "  (more threads than CPUs)" : "");
            if (c == 0) {
                base_alloc[i + 1] = a;
                base_free[i + 1] = f;
            } else if (threads <= ncpu && i >= 0) {
                /* The free path of the allocator nodal replaces went from 26 to 377 ns
                   between 1 and 20 threads; flat is the goal. */
                if (f > 3 * base_free[i + 1] && f - base_free[i + 1] > 20) {
                    printf("  WARN: free on node %d costs %.1f ns with %d threads, %.1fx the "
                           "%.1f ns with %d; expected it to stay flat\n", node, f, threads,
                           f / base_free[i + 1], base_free[i + 1], thread_counts[0]);
                    warnings++;
                }
                if (a > 3 * base_alloc[i + 1] && a - base_alloc[i + 1] > 20) {
                    printf("  WARN: nodal_malloc_node(%d) costs %.1f ns with %d threads, "
                           "%.1fx the %.1f ns with %d; expected it to stay flat\n", node, a,
                           threads, a / base_alloc[i + 1], base_alloc[i + 1],
                           thread_counts[0]);
                    warnings++;
                }
            }
        }
    }
    printf("\n");
}

/* ---- placement ----------------------------------------------------------- */
static void begin_check(const char *name)
{
    check_violations = 0;
    say("  %s\n", name);
}

static void end_check(const char *name, const char *summary)
{
    if (check_violations) {
        say("  FAIL %s: %lu violation(s); %s\n", name, check_violations, summary);
        failed_checks++;
    } else {
        say("  PASS %s: %s\n", name, summary);
    }
}

/* a. One thread, all sizes, nodes interleaved. */
static void check_interleaved(void)
{
    const char *name = "single thread, requests interleaved over all nodes";
    size_t sizes[160];
    int n = 0;
    long min_free = -1;
    for (int i = 0; i < nnodes; i++)
        if (nodes[i].free_kib >= 0 && (min_free < 0 || nodes[i].free_kib < min_free))
            min_free = nodes[i].free_kib;
    for (size_t base = 16; base < 128 * 1024; base *= 2)
        for (int k = 0; k < 4; k++)
            sizes[n++] = base + k * base / 4;   /* every quarter octave */
    sizes[n++] = 128 * 1024;
    size_t big[] = { 256 << 10, 1 << 20, 3 << 20, 16 << 20 };
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
        if (min_free < 0 || big[i] * 8 < (size_t)min_free * 1024)
            sizes[n++] = big[i];
    begin_check(name);
    void **live = calloc((size_t)n * nnodes * 2, sizeof *live);
    int nl = 0;
    size_t bytes = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int s = 0; s < n; s++)
            for (int i = 0; i < nnodes; i++) {
                /* the second pass asks each slot for the next node: blocks
                   of that size from the other nodes were just freed */
                int node = nodes[(i + pass) % nnodes].id;
                void *p = nodal_malloc_node(sizes[s], node);
                if (!p) {
                    violation("nodal_malloc_node(%zu, %d) returned NULL (%s)", sizes[s], node,
                              strerror(errno));
                    continue;
                }
                touch(p, sizes[s]);
                expect_node_block(p, sizes[s], node, "nodal_malloc_node");
                live[nl++] = p;
                bytes += sizes[s];
            }
        while (nl > 0)
            free(live[--nl]);
    }
    free(live);
    char summary[160];
    snprintf(summary, sizeof summary, "%d sizes 16 B..%zu KiB x %d node(s) x 2 passes, "
             "%.1f MiB checked page by page", n, sizes[n - 1] >> 10, nnodes, bytes / MIB);
    end_check(name, summary);
}

/* b. Plain malloc still unbound and local, in threads using the node API. */
struct plain_job {
    pthread_t tid;
    int cpu, node_idx;
    size_t pages, off_node;
};

static void *plain_thread(void *arg)
{
    struct plain_job *j = arg;
    int node = nodes[j->node_idx].id;
    pin(j->cpu);
    for (int i = 0; i < nnodes; i++)                   /* the node API, every node */
        for (size_t s = 16; s <= 64 * 1024; s *= 2) {
            void *p = nodal_malloc_node(s, nodes[i].id);
            if (p)
                touch(p, s);
            free(p);
        }
    static const size_t sizes[] = { 16, 48, 200, 1000, 4000, 30000, 100000, 1 << 20, 8 << 20 };
    void *live[sizeof sizes / sizeof sizes[0]];
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        live[k] = malloc(sizes[k]);
        if (!live[k]) {
            violation("malloc(%zu) returned NULL", sizes[k]);
            continue;
        }
        memset(live[k], 0x11, sizes[k]);
        int only, where;
        int mode = policy_at(live[k], -1, &only);
        if (mode != MPOL_DEFAULT)
            violation("plain malloc(%zu) on CPU %d is under kernel policy mode %d; expected "
                      "the default policy (plain memory is never bound)", sizes[k], j->cpu,
                      mode);
        size_t bad = pages_off_node(live[k], sizes[k], node, &where);
        j->pages += (sizes[k] + (size_t)page_size - 1) / (size_t)page_size;
        j->off_node += bad;
        if (bad) {
            if (nodes[j->node_idx].free_kib < 256 * 1024)
                say("    WARN: plain malloc(%zu) on CPU %d: %zu page(s) not on node %d, "
                    "which has little free memory\n", sizes[k], j->cpu, bad, node);
            else
                violation("plain malloc(%zu) written on CPU %d (node %d): %zu OS page(s) on "
                          "%s%d; expected first-touch placement on node %d", sizes[k], j->cpu,
                          node, bad, where < 0 ? "error " : "node ", where < 0 ? -where : where,
                          node);
        }
    }
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        free(live[k]);
    return NULL;
}

static void check_plain(void)
{
    const char *name = "plain malloc still unbound, in threads using the node API";
    struct plain_job jobs[MAX_NODES];
    begin_check(name);
    for (int c = 0; c < ncpu_nodes; c++) {
        jobs[c] = (struct plain_job){ .node_idx = cpu_nodes[c] };
        jobs[c].cpu = nodes[cpu_nodes[c]].cpus[0];
        pthread_create(&jobs[c].tid, NULL, plain_thread, &jobs[c]);
    }
    size_t pages = 0, off = 0;
    for (int c = 0; c < ncpu_nodes; c++) {
        pthread_join(jobs[c].tid, NULL);
        pages += jobs[c].pages;
        off += jobs[c].off_node;
    }
    char summary[160];
    snprintf(summary, sizeof summary, "%d thread(s), one per CPU node; %zu of %zu plain OS "
             "pages off the writing thread's node", ncpu_nodes, off, pages);
    end_check(name, summary);
}

/* c. 8 threads, all nodes, freeing each other's blocks. */
#define XT_THREADS 8
struct xt_block {
    void *p;
    size_t size;
    int node;
};
struct xt_job {
    pthread_t tid;
    int idx, cpu;
    struct xt_block *buf;
    unsigned long checked;
};
static struct xt_job xt[XT_THREADS];
static int xt_per_round, xt_rounds;
static pthread_barrier_t xt_barrier;

static void *xt_thread(void *arg)
{
    struct xt_job *j = arg;
    uint64_t rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(j->idx + 1);
    pin(j->cpu);
    for (int r = 0; r < xt_rounds; r++) {
        for (int k = 0; k < xt_per_round; k++) {
            struct xt_block *b = &j->buf[k];
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            b->size = 16 + rng % (k % 64 == 0 ? 128 * 1024 : 2048);
            b->node = nodes[(j->idx + k + r) % nnodes].id;
            b->p = nodal_malloc_node(b->size, b->node);
            if (b->p)
                touch(b->p, b->size);
            else
                violation("thread %d: nodal_malloc_node(%zu, %d) returned NULL (%s)", j->idx,
                          b->size, b->node, strerror(errno));
        }
        pthread_barrier_wait(&xt_barrier);
        /* check and free the next thread's blocks */
        struct xt_job *o = &xt[(j->idx + 1 + r) % XT_THREADS];
        for (int k = 0; k < xt_per_round; k++) {
            struct xt_block *b = &o->buf[k];
            if (!b->p)
                continue;
            int where;
            size_t bad = pages_off_node(b->p, b->size, b->node, &where);
            if (bad)
                violation("block of %zu B for node %d, freed by another thread: %zu OS "
                          "page(s) on %s%d", b->size, b->node, bad,
                          where < 0 ? "error " : "node ", where < 0 ? -where : where);
            j->checked++;
            free(b->p);
            b->p = NULL;
        }
        pthread_barrier_wait(&xt_barrier);
    }
    return NULL;
}

static void check_cross_threads(void)
{
    const char *name = "8 threads, interleaved over all nodes, freeing each other's blocks";
    xt_per_round = 1024;
    xt_rounds = quick ? 8 : 40;
    begin_check(name);
    pthread_barrier_init(&xt_barrier, NULL, XT_THREADS);
    for (int t = 0; t < XT_THREADS; t++) {
        xt[t] = (struct xt_job){ .idx = t, .cpu = spread_cpu(t, NULL) };
        xt[t].buf = calloc((size_t)xt_per_round, sizeof *xt[t].buf);
        pthread_create(&xt[t].tid, NULL, xt_thread, &xt[t]);
    }
    unsigned long checked = 0;
    for (int t = 0; t < XT_THREADS; t++) {
        pthread_join(xt[t].tid, NULL);
        checked += xt[t].checked;
        free(xt[t].buf);
    }
    pthread_barrier_destroy(&xt_barrier);
    char summary[160];
    snprintf(summary, sizeof summary, "%lu blocks allocated, checked page by page and freed "
             "by another thread", checked);
    end_check(name, summary);
}

/* ---- main ---------------------------------------------------------------- */
static void usage(const char *prog, int status)
{
    fprintf(status ? stderr : stdout,
            "usage: %s [--quick] [--threads 1,2,4,8,16] [--ops N] [--size BYTES]\n"
            "          [--no-timing] [--no-placement]\n"
            "       %s --matrix [--json] [--size BYTES] [--time SECONDS] [--bw-threads N] [--save FILE]\n"
            "       %s --version | -h | --help\n"
            "\n"
            "Without --matrix: prints the NUMA topology (nodes with memory, their CPUs, memory,\n"
            "distances), checks with the kernel (move_pages, get_mempolicy) that blocks from\n"
            "nodal_malloc_node land on the node they were asked for and that plain malloc stays\n"
            "unbound, prints the memory tiers per CPU node as the kernel and nodal see them and\n"
            "checks that nodal_malloc_tier's blocks land on the tier's node, and reports the cost\n"
            "of node-targeted alloc/free per thread count.\n"
            "  --quick           fewer rounds and operations (20,000 per thread)\n"
            "  --threads LIST    thread counts for the timing (default 1,2,4,8,16)\n"
            "  --ops N           operations per thread for the timing (default 200,000)\n"
            "  --size BYTES      block size for the timing (default 32)\n"
            "  --no-timing       skip the timing\n"
            "  --no-placement    skip the placement checks\n"
            "\n"
            "With --matrix: measures, on memory from the node API, what an access costs from every\n"
            "node with CPUs (rows) to every node with memory (columns; memory-only nodes are\n"
            "columns only), and prints the kernel's distance beside each value:\n"
            "  latency           ns per load: one thread pinned to the CPU node's first CPU follows\n"
            "                    a chain of dependent loads through the buffer in random order\n"
            "  read, write       GB/s: one thread per CPU of the CPU node, each summing 64-bit words\n"
            "                    over (read) or memset()ing (write) its share of the buffer\n"
            "Each node's buffer (one nodal_malloc_node block) is checked with move_pages first.\n"
            "  --json            print one JSON object instead of the tables: cpu_nodes, mem_nodes,\n"
            "                    distance, latency_ns, read_gbs, write_gbs (rows = cpu_nodes,\n"
            "                    columns = mem_nodes), bw_threads, misplaced_pages, size_bytes\n"
            "  --size BYTES      buffer per memory node (default 256m; k, m, g suffixes; capped at\n"
            "                    half the free memory of the emptiest node). Use several times\n"
            "                    the last-level cache, or the latency measures the cache.\n"
            "  --time SECONDS    time per measurement (default 0.2; three per cell)\n"
            "  --bw-threads N    threads per CPU node for the bandwidth (default: one per CPU)\n"
            "  --save FILE       also write the values as the file the option tier_file reads\n"
            "                    (NODAL_OPTIONS=tier_file=FILE: the tier calls use them where the\n"
            "                    firmware gives no HMAT; docs/tiers.md)\n"
            "Set NODAL_OPTIONS=huge_pages=1 to measure with transparent huge pages (fewer TLB\n"
            "misses in the latency).\n"
            "\n"
            "Exit status: 0 placement correct (or matrix measured, every buffer on its node),\n"
            "1 a placement check failed, 2 usage or setup error. See nodal-verify(1).\n",
            prog, prog, prog);
    exit(status);
}

/* A usage error: one line saying what is wrong, one with the synopsis
   (the whole help is --help's), exit status 2. */
static _Noreturn void usage_error(const char *prog, const char *what, const char *arg)
{
    (void)prog;
    fprintf(stderr, "nodal-verify: %s%s%s\n", what, arg ? ": " : "", arg ? arg : "");
    fprintf(stderr, "usage: nodal-verify [--quick] [--matrix] [FLAGS]   (nodal-verify --help lists the flags)\n");
    exit(2);
}

/* The flags, for suggestions. */
static const char *const verify_flags[] = {
    "--quick", "--threads", "--ops", "--size", "--time", "--bw-threads", "--matrix",
    "--json", "--save", "--no-timing", "--no-placement", "--version", "--help",
};
#define N_VERIFY_FLAGS (sizeof verify_flags / sizeof verify_flags[0])

/* Edit distance (insertions, deletions, substitutions) of a[0..alen) and b,
   for strings of up to 63 characters (longer ones are far from every flag). */
static int edit_distance(const char *a, size_t alen, const char *b)
{
    size_t blen = strlen(b);
    if (alen > 63 || blen > 63)
        return 64;
    int row[64];
    for (size_t j = 0; j <= blen; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= alen; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= blen; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[blen];
}

/* An unknown flag: one line, with the nearest flag when one is close (or the
   flag itself when only "=VALUE" was wrong: values follow after a space). */
static _Noreturn void unknown_flag(const char *prog, const char *a)
{
    const char *eq = strchr(a, '=');
    size_t len = eq ? (size_t)(eq - a) : strlen(a);
    const char *best = NULL;
    int bestd = 3;                      /* at most 2 edits away */
    for (size_t k = 0; k < N_VERIFY_FLAGS; k++) {
        int d = edit_distance(a, len, verify_flags[k]);
        if (d < bestd) {
            bestd = d;
            best = verify_flags[k];
        }
    }
    char what[160];
    if (best != NULL && eq != NULL && bestd == 0)
        snprintf(what, sizeof what, "unknown flag '%.60s' (give the value after a space: %s %.40s)", a, best,
                 eq + 1);
    else if (best != NULL)
        snprintf(what, sizeof what, "unknown flag '%.60s'; did you mean %s?", a, best);
    else
        snprintf(what, sizeof what, "unknown flag '%.60s'", a);
    usage_error(prog, what, NULL);
}

/* "256m" -> bytes; 0 on junk. */
static size_t parse_bytes(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || v <= 0)
        return 0;
    switch (*end) {
    case 'k': case 'K': v *= 1024; end++; break;
    case 'm': case 'M': v *= 1024 * 1024; end++; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; end++; break;
    default: break;
    }
    return *end == '\0' ? (size_t)v : 0;
}

int main(int argc, char **argv)
{
    int ops_given = 0, matrix = 0;
    const char *size_arg = NULL;
    struct matrix_opts mo = { .size = (size_t)256 << 20, .seconds = 0.2 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = i + 1 < argc;
        if (!strcmp(a, "--quick") || !strcmp(a, "-q")) {
            quick = 1;
        } else if (!strcmp(a, "--threads") || !strcmp(a, "--ops") || !strcmp(a, "--size") ||
                   !strcmp(a, "--time") || !strcmp(a, "--bw-threads") || !strcmp(a, "--save")) {
            if (!has_value)
                usage_error(argv[0], "a value must follow", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--threads")) {
                nthread_counts = kv_parse_list(v, thread_counts, 32);
                for (int k = 0; k < nthread_counts; k++)
                    if (thread_counts[k] < 1 || thread_counts[k] > 4096)
                        usage_error(argv[0], "--threads takes counts from 1 to 4096, got", v);
                if (nthread_counts == 0)
                    usage_error(argv[0], "--threads takes a list like 1,2,4, got", v);
            } else if (!strcmp(a, "--ops")) {
                ops_per_thread = atol(v);
                ops_given = 1;
                if (ops_per_thread < BATCH)
                    usage_error(argv[0], "--ops takes a count of at least 1000, got", v);
            } else if (!strcmp(a, "--size")) {
                size_arg = v;
            } else if (!strcmp(a, "--time")) {
                mo.seconds = atof(v);
                if (!(mo.seconds > 0 && mo.seconds <= 60))
                    usage_error(argv[0], "--time takes seconds above 0, up to 60, got", v);
            } else if (!strcmp(a, "--save")) {
                mo.save = v;
            } else {
                mo.bw_threads = atoi(v);
                if (mo.bw_threads < 1 || mo.bw_threads > 4096)
                    usage_error(argv[0], "--bw-threads takes a count from 1 to 4096, got", v);
            }
        } else if (!strcmp(a, "--matrix")) {
            matrix = 1;
        } else if (!strcmp(a, "--json")) {
            mo.json = 1;
        } else if (!strcmp(a, "--no-timing")) {
            do_timing = 0;
        } else if (!strcmp(a, "--no-placement")) {
            do_placement = 0;
        } else if (!strcmp(a, "--version")) {
            printf("nodal-verify %s (library: %s)\n", ND_VERSION, nodal_version());
            return 0;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(argv[0], 0);
        } else {
            unknown_flag(argv[0], a);
        }
    }
    if (mo.json && !matrix)
        usage_error(argv[0], "--json goes with --matrix", NULL);
    if (mo.save && !matrix)
        usage_error(argv[0], "--save goes with --matrix", NULL);
    if (size_arg != NULL) {
        size_t v = parse_bytes(size_arg);
        if (v == 0)
            usage_error(argv[0], "--size takes a size in bytes (k, m, g suffixes), got", size_arg);
        if (matrix)
            mo.size = v;
        else
            timing_size = v;
    }
    if (quick && !ops_given)
        ops_per_thread = 20000;
    ops_per_thread = (ops_per_thread + BATCH - 1) / BATCH * BATCH;
    setvbuf(stdout, NULL, _IOLBF, 0);

    topology();
    if (matrix) {
        if (!mo.json)
            print_header();
        return matrix_run(&mo);
    }
    print_header();
    /* Placement first: the plain-malloc check wants pages no earlier thread
       of this process has touched (memory of exited threads is reused). */
    if (do_placement) {
        printf("Placement (the kernel's view: move_pages, get_mempolicy)\n");
        check_plain();
        check_interleaved();
        check_cross_threads();
        printf("\n");
    }
    failed_checks += tiers_run();
    if (do_timing)
        timing();
    if (failed_checks)
        printf("nodal-verify: FAIL: %d check(s) failed%s\n", failed_checks,
               warnings ? "; see also the timing warnings" : "");
    else
        printf("nodal-verify: PASS%s%s\n", do_placement ? ": every block on its node" : "",
               warnings ? " (timing warnings above)" : "");
    return failed_checks ? 1 : 0;
}
