/*
 * verify-matrix.c - nodal-verify --matrix: what a memory access costs from
 * every CPU node to every memory node, measured on memory from the node API.
 *
 * For each node with memory, one buffer of o->size bytes comes from
 * nodal_malloc_node(size, node); the kernel confirms (move_pages) that
 * every OS page of it is there. The buffer is laid out as one cycle of
 * 64-byte lines in random order. Then, for each node with CPUs this process
 * may use:
 *   latency    one thread pinned to the node's first CPU follows the cycle
 *              (each load depends on the previous one), ns per load;
 *   read       threads pinned to the node's CPUs (one per CPU, or
 *              --bw-threads) each sum 64-bit words over its share of the
 *              buffer, over and over, GB/s in all;
 *   write      the same with memset of 256 KiB blocks;
 * each for o->seconds of the threads' CPU time (time spent waiting for a
 * CPU on a busy machine does not count; the lowest share of CPU the threads
 * got is reported). Rows are CPU nodes, columns memory nodes (so
 * memory-only nodes are columns only); the kernel's distance is printed
 * beside every value.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nodal.h"
#include "verify.h"

#define LINE 64
#define BW_BLOCK (256 * 1024)

struct line {
    struct line *next;
    char pad[LINE - sizeof(struct line *)];
};

struct cell {
    double latency_ns, read_gbs, write_gbs;
};

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* Links the lines of buf into one cycle in random order (Sattolo's
   shuffle), so that a hardware prefetcher cannot guess the next line. */
static int make_cycle(struct line *buf, size_t n)
{
    uint32_t *order = malloc(n * sizeof *order);
    if (order == NULL)
        return -1;
    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    uint64_t rng = 0x6d61747269780001ULL;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)(((unsigned __int128)rng_next(&rng) * i) >> 64);   /* j < i */
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < n; i++)
        buf[order[i]].next = &buf[order[(i + 1) % n]];
    free(order);
    return 0;
}

/* CPU time of the calling thread, seconds. */
static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Lowest share of CPU a measuring thread got (CPU time / wall time): below
   about 0.9 other programs competed for the CPUs. */
static double cpu_share = 1.0;

static void note_share(double cpu, double wall)
{
    if (wall > 0 && cpu / wall < cpu_share)
        cpu_share = cpu / wall;
}

/* ns per dependent load, following the cycle for `seconds` (of the thread's
   CPU time, so that time the thread spent waiting for a CPU does not count). */
static double chase(struct line *start, size_t n, double seconds)
{
    struct line *p = start;
    for (size_t i = 0; i < n / 8 + 1000; i++)   /* warm-up: the TLB and the caches settle */
        p = p->next;
    uint64_t hops = 0;
    double w0 = now(), c0 = thread_cpu(), c;
    do {
        for (int i = 0; i < 16384; i++)
            p = p->next;
        hops += 16384;
        c = thread_cpu();
    } while (c - c0 < seconds);
    note_share(c - c0, now() - w0);
    __asm__ volatile("" : : "r"(p) : "memory");
    return (c - c0) * 1e9 / (double)hops;
}

/* ---- bandwidth ------------------------------------------------------------- */
struct bw_job {
    pthread_t tid;
    int cpu, write;
    char *lo;
    size_t len;             /* a multiple of BW_BLOCK */
    uint64_t bytes, sink;
    double cpu_s;           /* the thread's CPU time while streaming */
};
static atomic_int bw_stop;
static pthread_barrier_t bw_barrier;

static uint64_t read_block(const uint64_t *p, size_t words)
{
    uint64_t a = 0, b = 0, c = 0, d = 0;
    for (size_t i = 0; i < words; i += 4) {
        a += p[i];
        b += p[i + 1];
        c += p[i + 2];
        d += p[i + 3];
    }
    return a + b + c + d;
}

static void *bw_thread(void *arg)
{
    struct bw_job *j = arg;
    pin(j->cpu);
    pthread_barrier_wait(&bw_barrier);
    double c0 = thread_cpu();
    uint64_t sum = 0, bytes = 0;
    while (!atomic_load_explicit(&bw_stop, memory_order_relaxed)) {
        for (size_t off = 0; off < j->len; off += BW_BLOCK) {
            if (j->write)
                memset(j->lo + off, (int)(bytes >> 18), BW_BLOCK);
            else
                sum += read_block((const uint64_t *)(j->lo + off), BW_BLOCK / sizeof(uint64_t));
            bytes += BW_BLOCK;
            if (atomic_load_explicit(&bw_stop, memory_order_relaxed))
                break;
        }
    }
    j->cpu_s = thread_cpu() - c0;
    j->bytes = bytes;
    j->sink = sum;
    return NULL;
}

/* GB/s of `threads` threads on CPU node ci streaming over buf for `seconds`:
   the sum of each thread's bytes per second of its CPU time (on a quiet
   machine the threads run side by side and that is the aggregate rate). */
static double bandwidth(char *buf, size_t size, int ci, int threads, int write, double seconds)
{
    const struct node *cn = &nodes[ci];
    struct bw_job *jobs = calloc((size_t)threads, sizeof *jobs);
    size_t share = size / (size_t)threads / BW_BLOCK * BW_BLOCK;
    if (jobs == NULL || share == 0) {
        free(jobs);
        return 0;
    }
    atomic_store(&bw_stop, 0);
    pthread_barrier_init(&bw_barrier, NULL, (unsigned)threads + 1);
    for (int t = 0; t < threads; t++) {
        jobs[t].cpu = cn->cpus[t % cn->ncpus];
        jobs[t].write = write;
        jobs[t].lo = buf + (size_t)t * share;
        jobs[t].len = share;
        pthread_create(&jobs[t].tid, NULL, bw_thread, &jobs[t]);
    }
    pthread_barrier_wait(&bw_barrier);
    double t0 = now();
    struct timespec ts = { (time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9) };
    nanosleep(&ts, NULL);
    atomic_store(&bw_stop, 1);
    double rate = 0;
    for (int t = 0; t < threads; t++)
        pthread_join(jobs[t].tid, NULL);
    double t1 = now();
    for (int t = 0; t < threads; t++) {
        note_share(jobs[t].cpu_s, t1 - t0);
        if (jobs[t].cpu_s > 0)
            rate += (double)jobs[t].bytes / jobs[t].cpu_s;
    }
    pthread_barrier_destroy(&bw_barrier);
    free(jobs);
    return rate / 1e9;
}

/* ---- the run ------------------------------------------------------------------ */
static int bw_threads_of(const struct matrix_opts *o, int ci)
{
    return o->bw_threads > 0 ? o->bw_threads : nodes[ci].ncpus;
}

static void print_table(const char *title, const struct cell *cells, int which, const char *fmt)
{
    printf("%s\n  %-12s", title, "cpu \\ mem");
    for (int m = 0; m < nnodes; m++)
        printf(" %13d", nodes[m].id);
    printf("\n");
    for (int r = 0; r < ncpu_nodes; r++) {
        int ci = cpu_nodes[r];
        printf("  %-12d", nodes[ci].id);
        for (int m = 0; m < nnodes; m++) {
            const struct cell *c = &cells[r * nnodes + m];
            double v = which == 0 ? c->latency_ns : which == 1 ? c->read_gbs : c->write_gbs;
            char val[32], both[48];
            snprintf(val, sizeof val, fmt, v);
            snprintf(both, sizeof both, "%s [%d]", val, nodal_node_distance(nodes[ci].id, nodes[m].id));
            printf(" %13s", both);
        }
        printf("\n");
    }
    printf("\n");
}

static void json_matrix(const char *key, const struct cell *cells, int which)
{
    printf("\"%s\":[", key);
    for (int r = 0; r < ncpu_nodes; r++) {
        printf("%s[", r ? "," : "");
        for (int m = 0; m < nnodes; m++) {
            const struct cell *c = &cells[r * nnodes + m];
            double v = which == 0 ? c->latency_ns : which == 1 ? c->read_gbs : c->write_gbs;
            printf("%s%.3f", m ? "," : "", v);
        }
        printf("]");
    }
    printf("]");
}

int matrix_run(const struct matrix_opts *o)
{
    /* One size for every column, so that the columns compare: at most half
       of the free memory of the emptiest node. */
    size_t size = o->size;
    for (int m = 0; m < nnodes; m++) {
        size_t room = nodes[m].free_kib > 0 ? (size_t)nodes[m].free_kib * 1024 / 2 : size;
        if (room < size)
            size = room;
    }
    size = size / BW_BLOCK * BW_BLOCK;
    if (size < 4 * (size_t)BW_BLOCK) {
        fprintf(stderr, "nodal-verify --matrix: a node has less than %d KiB free\n", 8 * BW_BLOCK / 1024);
        return 1;
    }
    struct cell *cells = calloc((size_t)(ncpu_nodes * nnodes), sizeof *cells);
    long *misplaced = calloc((size_t)nnodes, sizeof *misplaced);
    int failed = 0;
    if (!o->json) {
        printf("NUMA matrix: %.1f MiB per memory node from nodal_malloc_node%s, %.2f s per measurement\n",
               (double)size / (1 << 20), size < o->size ? " (less than asked: a node is short of free memory)" : "",
               o->seconds);
        printf("  latency: one thread pinned to the CPU node's first CPU, dependent loads over the buffer "
               "in random order (%d-byte lines)\n", LINE);
        printf("  bandwidth: %s pinned to the CPU node's CPUs, each streaming over its share of the buffer "
               "(read: sum of 64-bit words; write: memset of %d KiB blocks)\n",
               o->bw_threads > 0 ? "--bw-threads threads" : "one thread per CPU", BW_BLOCK / 1024);
        printf("  rows: nodes with CPUs this process may use; columns: nodes with memory; "
               "[the kernel's distance]\n\n");
    }
    for (int m = 0; m < nnodes; m++) {
        int node = nodes[m].id;
        struct line *buf = nodal_malloc_node(size, node);
        if (buf == NULL) {
            fprintf(stderr, "nodal-verify --matrix: nodal_malloc_node(%zu, %d) failed\n", size, node);
            failed = 1;
            misplaced[m] = -1;
            continue;
        }
        if (make_cycle(buf, size / LINE) != 0) {
            fprintf(stderr, "nodal-verify --matrix: out of memory for the chase order\n");
            free(buf);
            failed = 1;
            continue;
        }
        int where;
        misplaced[m] = (long)pages_off_node(buf, size, node, &where);
        if (misplaced[m]) {
            fprintf(stderr, "nodal-verify --matrix: %ld OS page(s) of the node-%d buffer are not on node %d "
                    "(first on %s%d)\n", misplaced[m], node, node, where < 0 ? "error " : "node ",
                    where < 0 ? -where : where);
            failed = 1;
        }
        for (int r = 0; r < ncpu_nodes; r++) {
            int ci = cpu_nodes[r];
            struct cell *c = &cells[r * nnodes + m];
            pin(nodes[ci].cpus[0]);
            c->latency_ns = chase(buf, size / LINE, o->seconds);
            c->read_gbs = bandwidth((char *)buf, size, ci, bw_threads_of(o, ci), 0, o->seconds);
            /* the write pass overwrites the links: the cycle is only read above */
            c->write_gbs = bandwidth((char *)buf, size, ci, bw_threads_of(o, ci), 1, o->seconds);
            if (r + 1 < ncpu_nodes && make_cycle(buf, size / LINE) != 0)
                failed = 1;
        }
        free(buf);
    }
    if (o->json) {
        printf("{\"version\":\"%s\",\"size_bytes\":%zu,\"seconds\":%.3f,\"line_bytes\":%d,", nodal_version(), size,
               o->seconds, LINE);
        printf("\"cpu_nodes\":[");
        for (int r = 0; r < ncpu_nodes; r++)
            printf("%s%d", r ? "," : "", nodes[cpu_nodes[r]].id);
        printf("],\"mem_nodes\":[");
        for (int m = 0; m < nnodes; m++)
            printf("%s%d", m ? "," : "", nodes[m].id);
        printf("],\"bw_threads\":[");
        for (int r = 0; r < ncpu_nodes; r++)
            printf("%s%d", r ? "," : "", bw_threads_of(o, cpu_nodes[r]));
        printf("],\"cpu_share\":%.3f,\"distance\":[", cpu_share);
        for (int r = 0; r < ncpu_nodes; r++) {
            printf("%s[", r ? "," : "");
            for (int m = 0; m < nnodes; m++)
                printf("%s%d", m ? "," : "", nodal_node_distance(nodes[cpu_nodes[r]].id, nodes[m].id));
            printf("]");
        }
        printf("],");
        json_matrix("latency_ns", cells, 0);
        printf(",");
        json_matrix("read_gbs", cells, 1);
        printf(",");
        json_matrix("write_gbs", cells, 2);
        printf(",\"misplaced_pages\":[");
        for (int m = 0; m < nnodes; m++)
            printf("%s%ld", m ? "," : "", misplaced[m]);
        printf("]}\n");
    } else {
        print_table("Latency, ns per load [distance]", cells, 0, "%.1f");
        print_table("Read bandwidth, GB/s [distance]", cells, 1, "%.2f");
        print_table("Write bandwidth, GB/s [distance]", cells, 2, "%.2f");
        if (cpu_share < 0.9)
            printf("note: the measuring threads got as little as %.0f%% of a CPU: other programs were running, "
                   "so the values (per second of the threads' CPU time) may be off; measure on a quiet machine\n",
                   100 * cpu_share);
        printf("nodal-verify --matrix: %s\n", failed ? "FAIL: see the messages above" : "done, every buffer on its node");
    }
    if (o->save != NULL && !failed) {
        FILE *f = fopen(o->save, "w");
        if (f == NULL) {
            perror(o->save);
            failed = 1;
        } else {
            fprintf(f, "# nodal tier_file, written by nodal-verify --matrix --save (%s; %.1f MiB per node, "
                    "%.2f s per measurement)\n", nodal_version(), (double)size / (1 << 20), o->seconds);
            fprintf(f, "# cpu_node mem_node latency_ns read_MBps write_MBps\n");
            for (int r = 0; r < ncpu_nodes; r++)
                for (int m = 0; m < nnodes; m++) {
                    const struct cell *c = &cells[r * nnodes + m];
                    fprintf(f, "%d %d %.0f %.0f %.0f\n", nodes[cpu_nodes[r]].id, nodes[m].id, c->latency_ns,
                            c->read_gbs * 1000, c->write_gbs * 1000);
                }
            if (fclose(f) != 0) {
                perror(o->save);
                failed = 1;
            } else if (!o->json) {
                printf("saved to %s: NODAL_OPTIONS=tier_file=%s makes the tier calls use these values\n", o->save,
                       o->save);
            }
        }
    }
    free(cells);
    free(misplaced);
    return failed;
}
