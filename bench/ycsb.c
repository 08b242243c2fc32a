/*
 * ycsb.c - seed 000's YCSB workload A: 50 % reads, 50 % updates, uniform
 * keys, 128-byte payloads, over hash tables spread across NUMA nodes;
 * throughput per interval after warm-up.
 *
 * Each node has -T tables of -B buckets (chained hashing, one small lock
 * per bucket); key k lives on node ids[k mod nodes]. A read copies the
 * record's payload out; an update allocates a new record, fills it, swaps it
 * into the chain and frees the old one, so the allocator sees one malloc and
 * one (often remote) free per update. "numa/numa" (-b nodal or jepool)
 * allocates records and buckets on their table's node; "numa/regular"
 * (-b malloc) uses plain malloc (first touch by the updating thread).
 * An operation targets the thread's own node with probability -l percent
 * (default 50), else a uniformly random node.
 *
 * Runs -d seconds (default 3); the op count is sampled every -i ms (default
 * 250); intervals after the first -w (default 2) are the steady state.
 * Reported: steady mean, lowest and highest interval, in Mops/s;
 * operations per CPU-second of the threads over the whole run (cpu_mops);
 * and "misplaced": records and bucket arrays at the end whose page the
 * kernel (move_pages) reports on another node than their table's.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "nodeapi.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct rec {
    long key;
    struct rec *next;
    char payload[];
};

struct bucket {
    bench_lock lock;
    struct rec *head;
};

struct table {
    int node;
    struct bucket *buckets;
};

struct counter { _Alignas(64) _Atomic uint64_t ops; };

struct cfg {
    const node_backend *be;
    int nnodes, ids[64];
    int tables_per_node;
    long buckets, keys;
    size_t payload;
    int local_pct, interval_ms, warm_intervals;
    double seconds;
    struct table *tables;       /* [nnodes * tables_per_node] */
    struct counter *counters;   /* per thread */
    int nthreads;
    double *rates;              /* Mops/s per interval */
    int nrates;
    _Atomic int stop;
};

static struct table *table_of(struct cfg *c, long key, int *node_index)
{
    int ni = (int)(key % c->nnodes);
    *node_index = ni;
    return &c->tables[ni * c->tables_per_node + (key / c->nnodes) % c->tables_per_node];
}

static struct bucket *bucket_of(struct cfg *c, struct table *t, long key)
{
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ULL;
    return &t->buckets[(h >> 20) % (uint64_t)c->buckets];
}

static struct rec *rec_new(struct cfg *c, int node, long key, int fill)
{
    struct rec *r = c->be->alloc(sizeof *r + c->payload, node);
    if (!r)
        die("allocation on node %d failed", node);
    r->key = key;
    r->next = NULL;
    memset(r->payload, fill, c->payload);
    return r;
}

static void read_op(struct cfg *c, long key, char *out)
{
    int ni;
    struct table *t = table_of(c, key, &ni);
    struct bucket *b = bucket_of(c, t, key);
    bench_lock_acquire(&b->lock);
    for (struct rec *r = b->head; r; r = r->next)
        if (r->key == key) {
            memcpy(out, r->payload, c->payload);
            break;
        }
    bench_lock_release(&b->lock);
}

/* Replaces the record of `key` (inserting it if absent). */
static void update_op(struct cfg *c, long key, int fill)
{
    int ni;
    struct table *t = table_of(c, key, &ni);
    struct bucket *b = bucket_of(c, t, key);
    struct rec *fresh = rec_new(c, t->node, key, fill), *old = NULL;
    bench_lock_acquire(&b->lock);
    struct rec **link = &b->head;
    while (*link && (*link)->key != key)
        link = &(*link)->next;
    old = *link;
    fresh->next = old ? old->next : NULL;
    *link = fresh;
    bench_lock_release(&b->lock);
    if (old)
        c->be->free(old, sizeof *old + c->payload, t->node);
}

static void *sampler(void *arg)
{
    struct cfg *c = arg;
    int max = (int)(c->seconds * 1000 / c->interval_ms) + 1;
    c->rates = calloc((size_t)max, sizeof *c->rates);
    uint64_t prev = 0, t_prev = now_ns();
    for (int i = 0; i < max; i++) {
        usleep((useconds_t)c->interval_ms * 1000);
        uint64_t sum = 0, t_now = now_ns();
        for (int k = 0; k < c->nthreads; k++)
            sum += atomic_load_explicit(&c->counters[k].ops, memory_order_relaxed);
        c->rates[c->nrates++] = (double)(sum - prev) / ((double)(t_now - t_prev) / 1e9) / 1e6;
        prev = sum;
        t_prev = t_now;
    }
    atomic_store(&c->stop, 1);
    return NULL;
}

static void worker(bench_thread *t)
{
    struct cfg *c = t->arg;
    int home = 0, my_node = node_of_cpu(t->cpu);
    for (int i = 0; i < c->nnodes; i++)
        if (c->ids[i] == my_node)
            home = i;
    for (long k = t->id; k < c->keys; k += t->nthreads)
        update_op(c, k, (int)k);
    char buf[4096];
    pthread_t samp = 0;
    bench_sync(t);
    if (t->id == 0)
        pthread_create(&samp, NULL, sampler, c);
    _Atomic uint64_t *ops = &c->counters[t->id].ops;
    long per_node = c->keys / c->nnodes;
    while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
        for (int i = 0; i < 32; i++) {
            int ni = rng_below(&t->rng, 100) < (uint64_t)c->local_pct ? home
                                                                     : (int)rng_below(&t->rng, (uint64_t)c->nnodes);
            long key = ni + c->nnodes * (long)rng_below(&t->rng, (uint64_t)per_node);
            if (rng_below(&t->rng, 2))
                read_op(c, key, buf);
            else
                update_op(c, key, i);
        }
        atomic_fetch_add_explicit(ops, 32, memory_order_relaxed);
    }
    bench_stop(t);
    escape(buf);
    t->ops = atomic_load(ops);
    if (t->id == 0)
        pthread_join(samp, NULL);
}

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    const char *backend = "malloc";
    long long threads = 0, tables = 16, buckets = 4099, keys = 200000, payload = 128, local = 50;
    long long interval = 250, warm = 2;
    double seconds = 3;
    int opt;
    while ((opt = getopt(argc, argv, "b:t:T:B:k:p:l:d:i:w:P")) != -1) {
        switch (opt) {
        case 'b': backend = optarg; break;
        case 't': threads = parse_size(optarg); break;
        case 'T': tables = parse_size(optarg); break;
        case 'B': buckets = parse_size(optarg); break;
        case 'k': keys = parse_size(optarg); break;
        case 'p': payload = parse_size(optarg); break;
        case 'l': local = parse_size(optarg); break;
        case 'd': seconds = atof(optarg); break;
        case 'i': interval = parse_size(optarg); break;
        case 'w': warm = parse_size(optarg); break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: ycsb [-b " NODE_BACKENDS "] [-t threads] [-T tables per node]\n"
                            "            [-B buckets] [-k keys] [-p payload] [-l local %%] [-d seconds]\n"
                            "            [-i interval ms] [-w warm-up intervals] [-P]\n");
            return 2;
        }
    }
    if (payload < 1 || payload > 4096 || tables < 1 || buckets < 1 || interval < 1)
        die("bad arguments");
    struct cfg c = { .be = node_backend_get(backend), .tables_per_node = (int)tables, .buckets = buckets,
                     .keys = keys, .payload = (size_t)payload, .local_pct = (int)local,
                     .interval_ms = (int)interval, .warm_intervals = (int)warm, .seconds = seconds };
    c.nnodes = node_ids(c.ids, 64);
    node_backend_require(c.be, c.nnodes);
    if (c.keys < c.nnodes)
        die("need at least one key per node");
    c.tables = calloc((size_t)(c.nnodes * c.tables_per_node), sizeof *c.tables);
    for (int i = 0; i < c.nnodes * c.tables_per_node; i++) {
        struct table *t = &c.tables[i];
        t->node = c.ids[i / c.tables_per_node];
        t->buckets = c.be->alloc(sizeof *t->buckets * (size_t)buckets, t->node);
        if (!t->buckets)
            die("bucket array allocation failed");
        memset(t->buckets, 0, sizeof *t->buckets * (size_t)buckets);
    }
    c.nthreads = threads > 0 ? (int)threads : bench_ncpus();
    c.counters = aligned_alloc(64, sizeof *c.counters * (size_t)c.nthreads);
    memset(c.counters, 0, sizeof *c.counters * (size_t)c.nthreads);

    bench_team r;
    bench_team_run(c.nthreads, worker, &c, &r);

    double sum = 0, lo = 1e300, hi = 0;
    int n = 0;
    printf("note: Mops/s per %lld ms interval:", interval);
    for (int i = 0; i < c.nrates; i++) {
        printf(" %.3f", c.rates[i]);
        if (i < c.warm_intervals)
            continue;
        sum += c.rates[i];
        n++;
        lo = c.rates[i] < lo ? c.rates[i] : lo;
        hi = c.rates[i] > hi ? c.rates[i] : hi;
    }
    printf("\n");
    if (n == 0)
        die("no interval after warm-up: raise -d or lower -w");
    const char *config = strcmp(backend, "malloc") == 0 ? "numa/regular" : "numa/numa";
    /* placement of every record and bucket array, as the kernel sees it */
    long misplaced = 0;
    size_t cap = (size_t)c.keys + 16, len;
    void **v = malloc(sizeof *v * cap);
    for (int i = 0; i < c.nnodes * c.tables_per_node && v; i++) {
        struct table *t = &c.tables[i];
        len = 0;
        v[len++] = t->buckets;
        for (long b = 0; b < buckets; b++)
            for (struct rec *x = t->buckets[b].head; x && len < cap; x = x->next)
                v[len++] = x;
        long bad = node_count_misplaced(v, len, t->node);
        misplaced = bad < 0 || misplaced < 0 ? -1 : misplaced + bad;
    }
    free(v);
    bench_result("ycsb", "config=%s backend=%s threads=%d keys=%lld payload=%lld local_pct=%lld steady_mops=%.4f "
                 "min_interval_mops=%.4f max_interval_mops=%.4f cpu_mops=%.4f misplaced=%ld user_s=%.3f sys_s=%.3f",
                 config, backend, c.nthreads, keys, payload, local, sum / n, lo, hi,
                 (double)r.ops / ((double)r.cpu_ns / 1e9) / 1e6, misplaced, r.user_s, r.sys_s);

    for (int i = 0; i < c.nnodes * c.tables_per_node; i++) {
        struct table *t = &c.tables[i];
        for (long b = 0; b < buckets; b++)
            for (struct rec *x = t->buckets[b].head, *next; x; x = next) {
                next = x->next;
                c.be->free(x, sizeof *x + c.payload, t->node);
            }
        c.be->free(t->buckets, sizeof *t->buckets * (size_t)buckets, t->node);
    }
    free(c.tables);
    free(c.counters);
    free(c.rates);
    return 0;
}
