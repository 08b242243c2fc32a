/*
 * follow.c - does plain malloc memory stay on the node a thread runs on?
 * The three scenarios of issue 19, and a thread that stays as the baseline,
 * for any allocator (preloaded). A round allocates -m MiB of blocks of
 * log-uniform sizes, 24 B to 16 KiB, writing every byte.
 *
 *   exit   a thread on node X allocates and frees a round and exits; a new
 *          thread on node Y allocates a round
 *   moved  one thread allocates and frees a round on X, is moved to Y
 *          (sched_setaffinity), allocates a round
 *   freed  a thread on X allocates a round; a thread on Y frees it all, then
 *          allocates a round
 *   stay   as moved, without the move (the RSS baseline of moved)
 *
 * Result per scenario: local_pct = share of the last round's OS pages on
 * the node its thread runs on (move_pages, through tools/kview.c as the
 * placement tests ask), cpu_s = the process's CPU time
 * for the scenario, peak_rss_mib = the process's peak RSS during it (reset
 * before it where the kernel allows), read when the last round is
 * allocated, before the check's own allocations. X and Y: the nodes of the first CPU
 * and of the first CPU on another node; exits 77 with one node.
 *
 *   follow [-m MiB] [-S exit,moved,freed,stay]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "kview.h"

typedef struct blk {
    void *p;
    size_t size;
} blk;

typedef struct round {
    blk *b;
    size_t n, cap;
} round_t;

static size_t round_bytes = (size_t)32 << 20;
static int cpu_x = -1, cpu_y = -1, node_x, node_y;

static int cpu_node_of(int cpu)
{
    cpu_set_t set, old;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_getaffinity(0, sizeof old, &old);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        return -1;
    unsigned c = 0, node = 0;
    long rc = syscall(SYS_getcpu, &c, &node, NULL);
    sched_setaffinity(0, sizeof old, &old);
    return rc == 0 ? (int)node : -1;
}

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        die("sched_setaffinity(%d): %s", cpu, strerror(errno));
    sched_yield();
}

static void round_alloc(round_t *r, uint64_t seed)
{
    uint64_t st = seed;
    size_t total = 0;
    r->n = 0;
    while (total < round_bytes) {
        if (r->n == r->cap) {
            r->cap = r->cap ? 2 * r->cap : 4096;
            r->b = realloc(r->b, r->cap * sizeof *r->b);
            if (r->b == NULL)
                die("out of memory");
        }
        size_t s = rng_log_uniform(&st, 24, 16384);
        void *p = malloc(s);
        if (p == NULL)
            die("malloc(%zu) failed", s);
        memset(p, 0x5a, s);
        r->b[r->n].p = p;
        r->b[r->n++].size = s;
        total += s;
    }
}

static void round_free(round_t *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->b[i].p);
    r->n = 0;
}

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

/* Share of the round's OS pages on `node`, in percent. */
static double local_pct(const round_t *r, int node)
{
    size_t ps = (size_t)sysconf(_SC_PAGESIZE), n = 0, cap = 0;
    uintptr_t *pages = NULL;
    for (size_t i = 0; i < r->n; i++) {
        uintptr_t a = (uintptr_t)r->b[i].p & ~(uintptr_t)(ps - 1);
        uintptr_t e = ((uintptr_t)r->b[i].p + r->b[i].size - 1) & ~(uintptr_t)(ps - 1);
        for (; a <= e; a += ps) {
            if (n == cap) {
                cap = cap ? 2 * cap : 8192;
                pages = realloc(pages, cap * sizeof *pages);
                if (pages == NULL)
                    die("out of memory");
            }
            pages[n++] = a;
        }
    }
    qsort(pages, n, sizeof *pages, cmp_ptr);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || pages[u - 1] != pages[i])
            pages[u++] = pages[i];
    int *status = malloc(u * sizeof *status);
    if (status == NULL)
        die("out of memory");
    size_t on = 0;
    for (size_t done = 0; done < u; done += KV_QUERY_MAX) {
        size_t k = u - done < KV_QUERY_MAX ? u - done : KV_QUERY_MAX;
        if (kv_query_pages((void **)(pages + done), status + done, k) != 0)
            die("move_pages: %s", strerror(errno));
    }
    for (size_t i = 0; i < u; i++)
        on += status[i] == node;
    free(status);
    free(pages);
    return u ? 100.0 * (double)on / (double)u : 0.0;
}

/* ---- scenarios --------------------------------------------------------- */

static round_t handed;
static double result_pct;
static long peak_kib;
static pthread_barrier_t turn;

static void *t_alloc_free(void *arg)
{
    (void)arg;
    pin(cpu_x);
    round_t r = { 0 };
    round_alloc(&r, 1);
    round_free(&r);
    free(r.b);
    return NULL;
}

static void *t_alloc_measure(void *arg)
{
    (void)arg;
    pin(cpu_y);
    round_t r = { 0 };
    round_alloc(&r, 2);
    peak_kib = bench_peak_rss_kib();
    result_pct = local_pct(&r, node_y);
    round_free(&r);
    free(r.b);
    return NULL;
}

static void *t_moved(void *arg)
{
    int move = *(int *)arg;
    pin(cpu_x);
    round_t r = { 0 };
    round_alloc(&r, 1);
    round_free(&r);
    if (move)
        pin(cpu_y);
    round_alloc(&r, 2);
    peak_kib = bench_peak_rss_kib();
    result_pct = local_pct(&r, move ? node_y : node_x);
    round_free(&r);
    free(r.b);
    return NULL;
}

static void *t_freed_x(void *arg)
{
    (void)arg;
    pin(cpu_x);
    round_alloc(&handed, 1);
    pthread_barrier_wait(&turn);
    pthread_barrier_wait(&turn);
    return NULL;
}

static void *t_freed_y(void *arg)
{
    (void)arg;
    pin(cpu_y);
    pthread_barrier_wait(&turn);
    round_free(&handed);
    round_t r = { 0 };
    round_alloc(&r, 2);
    peak_kib = bench_peak_rss_kib();
    result_pct = local_pct(&r, node_y);
    round_free(&r);
    free(r.b);
    pthread_barrier_wait(&turn);
    return NULL;
}

static void run1(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    if (pthread_create(&t, NULL, fn, arg) != 0)
        die("pthread_create failed");
    pthread_join(t, NULL);
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void scenario(const char *name)
{
    bench_reset_peak_rss();
    double c0 = cpu_now();
    if (strcmp(name, "exit") == 0) {
        run1(t_alloc_free, NULL);
        run1(t_alloc_measure, NULL);
    } else if (strcmp(name, "moved") == 0 || strcmp(name, "stay") == 0) {
        int move = name[0] == 'm';
        run1(t_moved, &move);
    } else if (strcmp(name, "freed") == 0) {
        pthread_barrier_init(&turn, NULL, 2);
        pthread_t x, y;
        if (pthread_create(&x, NULL, t_freed_x, NULL) != 0 || pthread_create(&y, NULL, t_freed_y, NULL) != 0)
            die("pthread_create failed");
        pthread_join(x, NULL);
        pthread_join(y, NULL);
        pthread_barrier_destroy(&turn);
        free(handed.b);
        handed.b = NULL;
        handed.cap = 0;
    } else {
        die("-S %s: expected exit, moved, freed or stay", name);
    }
    double cpu = cpu_now() - c0;
    bench_result("follow", "scenario=%s mib=%zu local_pct=%.1f cpu_s=%.3f peak_rss_mib=%.1f", name,
                 round_bytes >> 20, result_pct, cpu, (double)peak_kib / 1024.0);
}

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    const char *list = "exit,moved,freed,stay";
    int opt;
    while ((opt = getopt(argc, argv, "m:S:")) != -1) {
        if (opt == 'm')
            round_bytes = (size_t)parse_size(optarg) << 20;
        else if (opt == 'S')
            list = optarg;
        else
            die("usage: follow [-m MiB] [-S exit,moved,freed,stay]");
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    for (int c = 0; c < ncpu && cpu_y < 0; c++) {
        int n = cpu_node_of(c);
        if (n < 0)
            continue;
        if (cpu_x < 0) {
            cpu_x = c;
            node_x = n;
        } else if (n != node_x) {
            cpu_y = c;
            node_y = n;
        }
    }
    if (cpu_y < 0) {
        fprintf(stderr, "follow: needs CPUs on two nodes\n");
        return BENCH_SKIP;
    }
    char *copy = strdup(list);
    for (char *s = strtok(copy, ","); s != NULL; s = strtok(NULL, ","))
        scenario(s);
    free(copy);
    return 0;
}
