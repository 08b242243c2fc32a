/*
 * thread_churn_keeps_rss_bounded - threads that come and go do not leak
 * their caches: rounds of short-lived threads, pinned alternately to the
 * CPU nodes, each allocate node blocks for every node with memory (and
 * plain blocks), free some themselves, hand the rest to the main thread to
 * free after they exited, and exit. The process's resident set (from
 * /proc/self/statm, the kernel's count) after many rounds must stay within
 * a fixed allowance of what it was after the warm-up rounds; a leak of one
 * thread cache per (thread, node) grows it by far more. The blocks handed
 * over are also checked for placement before they are freed.
 *
 * Each round ends with nodal_collect(1), so the resident set read is what
 * nodal retains, not what waits for its purge delay (that swung it by tens
 * of MiB from round to round, and once failed a run in CI); the cache of an
 * exited thread that leaked is not returned by it. The resident set still
 * ramps up over the first rounds (the records of exited threads, pooled for
 * the next ones, fill their pages), so growth is judged by medians after a
 * warm-up (default 40 rounds): the median RSS over the last third of the
 * rounds after warm-up may exceed the median over the first third by at
 * most --allow-mib (default 12 MiB: about 20 KiB per thread over the
 * default 150 rounds, 45 KiB per thread over the 80 rounds run-vm.sh
 * affords under emulation),
 * and no round may exceed four times the warm-up RSS plus 64 MiB.
 *
 *   thread_churn_keeps_rss_bounded [-r ROUNDS] [-t THREADS] [-w WARMUP]
 *                                  [--allow-mib MIB] [-v]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nodal.h"
#include "placement.h"

#define PER_NODE 48          /* blocks per node per thread */

typedef struct handed {
    void *p;
    size_t size;
    int node;
} handed;

typedef struct worker {
    int idx, round, cpu;
    pthread_t tid;
    handed *out;             /* blocks left for the main thread */
    int nout;
} worker;

static size_t classes[256];
static int ncls;

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

static size_t median(const size_t *v, int n)
{
    size_t *c = malloc((size_t)n * sizeof *c);
    if (!c)
        pt_die("out of memory");
    memcpy(c, v, (size_t)n * sizeof *c);
    qsort(c, (size_t)n, sizeof *c, cmp_size);
    size_t m = c[n / 2];
    free(c);
    return m;
}

static void *run(void *arg)
{
    worker *w = arg;
    const pt_topo *t = pt_topology();
    uint64_t rng = (uint64_t)w->round * 7919u + (uint64_t)w->idx;
    if (pt_pin(w->cpu) != 0)
        pt_die("cannot pin to CPU %d: %s", w->cpu, strerror(errno));
    w->nout = 0;
    for (int k = 0; k < t->nmem; k++) {
        int node = t->mem[k];
        void *mine[PER_NODE];
        for (int j = 0; j < PER_NODE; j++) {
            /* Every class over the rounds, and one large block per node. */
            size_t size = j == 0 ? (size_t)300 << 10 : classes[pt_rand(&rng) % ncls];
            void *p = nodal_malloc_node(size, node);
            if (!p) {
                pt_fail("thread %d of round %d: nodal_malloc_node(%zu, %d) returned NULL "
                        "(%s); expected a block", w->idx, w->round, size, node,
                        strerror(errno));
                mine[j] = NULL;
                continue;
            }
            pt_touch(p, size, (unsigned char)j);
            if (j % 2) {
                w->out[w->nout++] = (handed){ p, size, node };
                mine[j] = NULL;
            } else {
                mine[j] = p;
            }
        }
        for (int j = 0; j < PER_NODE; j++)
            free(mine[j]);   /* into this thread's cache, which dies with it */
    }
    for (int j = 0; j < 32; j++) {
        size_t size = classes[pt_rand(&rng) % ncls];
        void *p = malloc(size);
        if (p)
            pt_touch(p, size, 1);
        if (j % 2)
            free(p);
        else if (p)
            w->out[w->nout++] = (handed){ p, size, -1 };
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int rounds = 150, nthreads = 8, warmup = 40, i;
    long allow_mib = 12;
    argc = pt_begin(argc, argv, "thread_churn_keeps_rss_bounded",
                 "threads using the node API that repeatedly start and exit keep the resident "
                 "set bounded");
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-t") && i + 1 < argc)
            nthreads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-w") && i + 1 < argc)
            warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--allow-mib") && i + 1 < argc)
            allow_mib = atol(argv[++i]);
        else
            pt_die("usage: %s [-r ROUNDS] [-t THREADS] [-w WARMUP] [--allow-mib MIB] [-v]",
                   argv[0]);
    }
    if (rounds < warmup + 6 || nthreads < 1)
        pt_die("need ROUNDS >= WARMUP + 6 and THREADS >= 1");
    ncls = pt_class_sizes(classes, 256);
    const pt_topo *t = pt_topology();
    worker *w = calloc((size_t)nthreads, sizeof *w);
    for (i = 0; i < nthreads; i++) {
        w[i].out = calloc((size_t)t->nmem * PER_NODE + 32, sizeof(handed));
        if (!w[i].out)
            pt_die("out of memory");
    }
    pt_batch *batch = pt_batch_new();
    size_t rss_warm = 0, rss_max = 0, rss = 0;
    size_t *trace = calloc((size_t)rounds, sizeof *trace);
    if (!trace)
        pt_die("out of memory");
    double t0 = pt_now();
    for (int r = 0; r < rounds; r++) {
        for (i = 0; i < nthreads; i++) {
            w[i].idx = i;
            w[i].round = r;
            w[i].cpu = pt_spread_cpu(i + r, NULL);   /* alternate nodes per round */
            if (pthread_create(&w[i].tid, NULL, run, &w[i]) != 0)
                pt_die("pthread_create failed in round %d", r);
        }
        for (i = 0; i < nthreads; i++)
            pthread_join(w[i].tid, NULL);
        /* Blocks of threads that no longer exist: check, then free. */
        for (i = 0; i < nthreads; i++) {
            for (int j = 0; j < w[i].nout; j++)
                if (w[i].out[j].node >= 0)
                    pt_batch_add(batch, w[i].out[j].p, w[i].out[j].size, w[i].out[j].node,
                                 "node block of an exited thread", (unsigned long)r);
            pt_batch_flush(batch);
            for (int j = 0; j < w[i].nout; j++)
                free(w[i].out[j].p);
        }
        /* What nodal retains, not what waits for its purge delay: a leaked
           cache of an exited thread is not returned by this. */
        nodal_collect(1);
        rss = pt_rss_bytes();
        trace[r] = rss;
        if (r == warmup - 1)
            rss_warm = rss;
        if (r >= warmup && rss > rss_max)
            rss_max = rss;
        if (pt_verbose && r % 10 == 0)
            pt_info("round %d: RSS %.1f MiB, %.1f s", r, rss / 1048576.0, pt_now() - t0);
    }
    double secs = pt_now() - t0;
    long threads_after = (long)(rounds - warmup) * nthreads;
    int third = (rounds - warmup) / 3;
    size_t early = median(trace + warmup, third);
    size_t late = median(trace + rounds - third, third);
    double per_thread_kib = late > early ? (double)(late - early) / 1024.0 /
                                               ((double)(rounds - warmup - third) * nthreads)
                                         : 0.0;
    pt_info("%d rounds of %d threads (%ld after warm-up) in %.1f s; RSS after warm-up %.1f MiB, "
            "median of the first third after it %.1f MiB, of the last third %.1f MiB, highest "
            "%.1f MiB", rounds, nthreads, threads_after, secs, rss_warm / 1048576.0,
            early / 1048576.0, late / 1048576.0, rss_max / 1048576.0);
    pt_info("%zu OS pages of handed-over blocks checked, %zu misplaced", pt_batch_pages(batch),
            pt_batch_bad_pages(batch));
    if (late > early + ((size_t)allow_mib << 20))
        pt_fail("median RSS grew from %.1f MiB to %.1f MiB between the first and the last "
                "third of the rounds (%.1f KiB per thread started in between); expected at "
                "most %ld MiB of growth (exited threads' caches are reclaimed)",
                early / 1048576.0, late / 1048576.0, per_thread_kib, allow_mib);
    if (rss_max > 4 * rss_warm + ((size_t)64 << 20))
        pt_fail("RSS reached %.1f MiB after %.1f MiB at the end of the warm-up; expected it to "
                "stay below four times that plus 64 MiB", rss_max / 1048576.0,
                rss_warm / 1048576.0);
    free(trace);
    pt_batch_free(batch);
    return pt_end();
}
