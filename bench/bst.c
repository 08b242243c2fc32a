/*
 * bst.c - seed 000's BST application benchmark: one binary search tree per
 * NUMA node, threads pinned to CPUs, a mix of lookups, inserts and deletes;
 * throughput in operations per second.
 *
 * Configurations (seed 000's names): "numa/numa" allocates each tree node on
 * its tree's NUMA node through a node backend (-b nodal or jepool);
 * "numa/regular" (-b malloc) uses plain malloc, so placement follows first
 * touch by whichever thread inserted the key.
 *
 * Each node has -T trees (default 1; more trees mean less lock contention).
 * A thread's home trees are those of its CPU's node. An operation goes to a
 * home tree with probability -l percent (default 75), otherwise to any tree,
 * so part of the work is cross-node by construction, like the seed's txn%4
 * cases. Every tree holds a set of keys from [0, -k), prefilled with every
 * second key (half full, which inserts and deletes then keep steady).
 * The mix is -r percent lookups (default 50), the rest split evenly between
 * inserts and deletes. Each tree has one lock (harness.h's bench_lock).
 * Runs for -d seconds (default 2) after the prefill. Reported: million
 * operations per second (mops) and per CPU-second of the threads (cpu_mops,
 * the steadier figure on a busy machine; it does not count time blocked),
 * and "misplaced": the tree nodes left at the end whose page the kernel
 * (move_pages) reports on another node than their tree's (0 is the only
 * right answer for the node backends; plain malloc follows first touch).
 * Result lines say lang=c; bstxx.cpp is the same benchmark in C++ with
 * node-typed tree nodes (lang=c++).
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

struct tnode {
    long key;
    long value;
    struct tnode *left, *right;
};

struct tree {
    bench_lock lock;
    struct tnode *root;
    int node;           /* NUMA node its nodes are allocated on */
    long size;
    char pad[64];
};

struct cfg {
    const node_backend *be;
    struct tree *trees;     /* node i's trees: [i * per_node, (i + 1) * per_node) */
    int ntrees, per_node;
    int ids[64];
    long keys;
    long *prefill, nprefill;    /* the even keys, shuffled */
    int lookup_pct, local_pct;
    double seconds;
    _Atomic int stop;       /* set by the timer thread after -d seconds */
};

static struct tnode *tnode_new(const struct cfg *c, struct tree *t, long key)
{
    struct tnode *n = c->be->alloc(sizeof *n, t->node);
    if (!n)
        die("allocation on node %d failed", t->node);
    n->key = key;
    n->value = key * 3;
    n->left = n->right = NULL;
    return n;
}

static long tree_lookup(struct tree *t, long key)
{
    bench_lock_acquire(&t->lock);
    struct tnode *n = t->root;
    while (n && n->key != key)
        n = key < n->key ? n->left : n->right;
    long v = n ? n->value : -1;
    bench_lock_release(&t->lock);
    return v;
}

/* The new node is allocated before the lock is taken, freed if unused. */
static void tree_insert(const struct cfg *c, struct tree *t, long key)
{
    struct tnode *fresh = tnode_new(c, t, key);
    bench_lock_acquire(&t->lock);
    struct tnode **link = &t->root;
    while (*link && (*link)->key != key)
        link = key < (*link)->key ? &(*link)->left : &(*link)->right;
    if (*link == NULL) {
        *link = fresh;
        t->size++;
        fresh = NULL;
    }
    bench_lock_release(&t->lock);
    if (fresh)
        c->be->free(fresh, sizeof *fresh, t->node);
}

static void tree_delete(const struct cfg *c, struct tree *t, long key)
{
    struct tnode *gone = NULL;
    bench_lock_acquire(&t->lock);
    struct tnode **link = &t->root;
    while (*link && (*link)->key != key)
        link = key < (*link)->key ? &(*link)->left : &(*link)->right;
    struct tnode *n = *link;
    if (n) {
        if (!n->left || !n->right) {
            *link = n->left ? n->left : n->right;
            gone = n;
        } else {
            /* two children: move the successor's key here, unlink the successor */
            struct tnode **s = &n->right;
            while ((*s)->left)
                s = &(*s)->left;
            gone = *s;
            n->key = gone->key;
            n->value = gone->value;
            *s = gone->right;
        }
        t->size--;
    }
    bench_lock_release(&t->lock);
    if (gone)
        c->be->free(gone, sizeof *gone, t->node);
}

static void tree_destroy(const struct cfg *c, struct tree *t, struct tnode *n)
{
    if (!n)
        return;
    tree_destroy(c, t, n->left);
    tree_destroy(c, t, n->right);
    c->be->free(n, sizeof *n, t->node);
}

/* Appends the tree's nodes to v (grown as needed). */
static void tree_collect(struct tnode *n, void ***v, size_t *len, size_t *cap)
{
    for (; n; n = n->right) {
        tree_collect(n->left, v, len, cap);
        if (*len == *cap) {
            *cap = *cap ? 2 * *cap : 4096;
            *v = realloc(*v, sizeof **v * *cap);
            if (!*v)
                die("out of memory");
        }
        (*v)[(*len)++] = n;
    }
}

static void *timer(void *arg)
{
    struct cfg *c = arg;
    usleep((useconds_t)(c->seconds * 1e6));
    atomic_store_explicit(&c->stop, 1, memory_order_relaxed);
    return NULL;
}

static void worker(bench_thread *t)
{
    struct cfg *c = t->arg;
    int home_node = node_of_cpu(t->cpu), home = 0;
    for (int i = 0; i < c->ntrees / c->per_node; i++)
        if (c->ids[i] == home_node)
            home = i * c->per_node;
    /* prefill: each thread inserts its share of the even keys, in random
       order (sorted inserts would make the unbalanced trees into lists) */
    for (int i = 0; i < c->ntrees; i++)
        for (long j = t->id; j < c->nprefill; j += t->nthreads)
            tree_insert(c, &c->trees[i], c->prefill[j]);
    bench_sync(t);
    if (t->id == 0) {
        pthread_t tid;
        pthread_create(&tid, NULL, timer, c);
        pthread_detach(tid);
    }
    uint64_t ops = 0;
    long sink = 0;
    while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
        for (int i = 0; i < 64; i++) {
            uint64_t r = rng_below(&t->rng, 100);
            int ti = rng_below(&t->rng, 100) < (uint64_t)c->local_pct
                         ? home + (int)rng_below(&t->rng, (uint64_t)c->per_node)
                         : (int)rng_below(&t->rng, (uint64_t)c->ntrees);
            struct tree *tr = &c->trees[ti];
            long key = (long)rng_below(&t->rng, (uint64_t)c->keys);
            if (r < (uint64_t)c->lookup_pct)
                sink += tree_lookup(tr, key);
            else if ((r - (uint64_t)c->lookup_pct) % 2 == 0)
                tree_insert(c, tr, key);
            else
                tree_delete(c, tr, key);
        }
        ops += 64;
    }
    bench_stop(t);
    escape(&sink);
    t->ops = ops;
}

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    const char *backend = "malloc";
    long long threads = 0, keys = 200000, lookup = 50, local = 75, per_node = 1;
    double seconds = 2;
    int opt;
    while ((opt = getopt(argc, argv, "b:t:k:r:l:d:T:P")) != -1) {
        switch (opt) {
        case 'b': backend = optarg; break;
        case 't': threads = parse_size(optarg); break;
        case 'k': keys = parse_size(optarg); break;
        case 'r': lookup = parse_size(optarg); break;
        case 'l': local = parse_size(optarg); break;
        case 'd': seconds = atof(optarg); break;
        case 'T': per_node = parse_size(optarg); break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: bst [-b " NODE_BACKENDS "] [-t threads] [-k keys] [-r lookup %%]\n"
                            "           [-l local %%] [-d seconds] [-T trees per node] [-P]\n");
            return 2;
        }
    }
    struct cfg c = { .be = node_backend_get(backend), .keys = keys, .lookup_pct = (int)lookup,
                     .local_pct = (int)local, .seconds = seconds };
    if (per_node < 1)
        die("-T must be >= 1");
    int nnodes = node_ids(c.ids, 64);
    node_backend_require(c.be, nnodes);
    c.per_node = (int)per_node;
    c.ntrees = nnodes * c.per_node;
    c.trees = calloc((size_t)c.ntrees, sizeof *c.trees);
    for (int i = 0; i < c.ntrees; i++) {
        c.trees[i].node = c.ids[i / c.per_node];
    }
    c.nprefill = (keys + 1) / 2;
    c.prefill = malloc(sizeof *c.prefill * (size_t)c.nprefill);
    uint64_t rng = rng_seed(5, 6);
    for (long i = 0; i < c.nprefill; i++)
        c.prefill[i] = 2 * i;
    for (long i = c.nprefill - 1; i > 0; i--) {
        long j = (long)rng_below(&rng, (uint64_t)i + 1), x = c.prefill[i];
        c.prefill[i] = c.prefill[j];
        c.prefill[j] = x;
    }
    int nthreads = threads > 0 ? (int)threads : bench_ncpus();
    bench_team r;
    bench_team_run(nthreads, worker, &c, &r);
    long size = 0, misplaced = 0;
    void **v = NULL;
    size_t cap = 0;
    for (int i = 0; i < c.ntrees; i++) {
        size += c.trees[i].size;
        size_t len = 0;
        tree_collect(c.trees[i].root, &v, &len, &cap);
        long bad = node_count_misplaced(v, len, c.trees[i].node);
        misplaced = bad < 0 || misplaced < 0 ? -1 : misplaced + bad;
    }
    free(v);
    const char *config = strcmp(backend, "malloc") == 0 ? "numa/regular" : "numa/numa";
    printf("note: %ld keys in the trees at the end\n", size);
    bench_result("bst", "config=%s backend=%s lang=c threads=%d trees=%d keys=%lld mops=%.4f cpu_mops=%.4f "
                 "misplaced=%ld user_s=%.3f sys_s=%.3f",
                 config, backend, nthreads, c.ntrees, keys, (double)r.ops / ((double)r.wall_ns / 1e9) / 1e6,
                 (double)r.ops / ((double)r.cpu_ns / 1e9) / 1e6, misplaced, r.user_s, r.sys_s);
    for (int i = 0; i < c.ntrees; i++)
        tree_destroy(&c, &c.trees[i], c.trees[i].root);
    free(c.trees);
    free(c.prefill);
    return 0;
}
