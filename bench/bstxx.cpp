/*
 * bstxx.cpp - bst.c (seed 000's BST benchmark) in C++, with the tree nodes
 * typed by their NUMA node the way the seed's C++ users write it: a tree
 * on node K holds `tnode<K>`, a class derived from nodal::on_node<K>, so
 * `new tnode<K>` is on node K and `delete` frees it (nodal.hpp). The
 * algorithm, the trees, the locks, the random streams, the prefill and the
 * operation mix are bst.c's, line for line, so the two programs'
 * throughputs compare directly; result lines carry lang=c++ (bst.c's say
 * lang=c).
 *
 * Backends (-b):
 *   nodal    numa/numa: node-typed tree nodes, new tnode<K> / delete
 *            (nodal_malloc_node through nodal.hpp; libnodal.so preloaded)
 *   malloc   numa/regular: plain `new` / `delete` of an untyped node, i.e.
 *            the global operator new of whichever allocator is preloaded
 *   jepool, numa   the node backends of nodeapi.c (placement new into their
 *            blocks), as in bst.c
 * Node ids up to 7 have their own type; a tree on a higher node id is
 * refused (exit 2). Options as bst.c.
 *
 * nodal is not linked in: the nodal_* functions nodal.hpp calls are weak
 * references that a preloaded libnodal.so resolves (see nodeapi.c).
 */
#include "harness.h"
#include "nodeapi.h"

#include <nodal.hpp>

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

extern "C" {
__attribute__((weak)) void *nodal_malloc_node(size_t, int);
__attribute__((weak)) void *nodal_aligned_alloc_node(size_t, size_t, int);
__attribute__((weak)) void nodal_free(void *);
__attribute__((weak)) void nodal_free_sized(void *, size_t);
__attribute__((weak)) void nodal_free_aligned_sized(void *, size_t, size_t);
__attribute__((weak)) int nodal_node_has_memory(int);
__attribute__((weak)) int nodal_current_node(void);
__attribute__((weak)) int nodal_node_ids(int *, int);
__attribute__((weak)) int nodal_node_distance(int, int);
}

namespace {

struct tnode_base {
    long key;
    long value;
    tnode_base *left, *right;
};

/* The node-typed tree node: its class says where it lives. */
template <int K>
struct tnode : tnode_base, nodal::on_node<K> {};

/* A plain one for numa/regular and the C backends. */
struct tnode_plain : tnode_base {};

struct tree;

/* How a tree makes and drops its nodes (one per tree, chosen at start). */
struct node_ops {
    tnode_base *(*make)(const tree *t);
    void (*drop)(const tree *t, tnode_base *n);
};

struct tree {
    bench_lock lock;
    tnode_base *root;
    int node;   // NUMA node its nodes are allocated on
    long size;
    const node_ops *ops;
    const node_backend *be;
    char pad[64];
};

template <int K>
const node_ops typed_ops = {
    [](const tree *) -> tnode_base * { return new tnode<K>; },
    [](const tree *, tnode_base *n) { delete static_cast<tnode<K> *>(n); },
};
const node_ops plain_ops = {
    [](const tree *) -> tnode_base * { return new tnode_plain; },
    [](const tree *, tnode_base *n) { delete static_cast<tnode_plain *>(n); },
};
const node_ops backend_ops = {
    [](const tree *t) -> tnode_base * {
        void *p = t->be->alloc(sizeof(tnode_plain), t->node);
        if (!p)
            die("allocation on node %d failed", t->node);
        return ::new (p) tnode_plain;
    },
    [](const tree *t, tnode_base *n) { t->be->free(n, sizeof(tnode_plain), t->node); },
};

template <int... K>
const node_ops *typed_for(int node, std::integer_sequence<int, K...>)
{
    const node_ops *r = nullptr;
    ((node == K ? (r = &typed_ops<K>, 0) : 0), ...);
    return r;
}

struct cfg {
    tree *trees;   // node i's trees: [i * per_node, (i + 1) * per_node)
    int ntrees, per_node;
    int ids[64];
    long keys;
    long *prefill, nprefill;   // the even keys, shuffled
    int lookup_pct, local_pct;
    double seconds;
    std::atomic<int> stop{ 0 };   // set by the timer thread after -d seconds
};

tnode_base *tnode_new(tree *t, long key)
{
    tnode_base *n = t->ops->make(t);
    n->key = key;
    n->value = key * 3;
    n->left = n->right = nullptr;
    return n;
}

long tree_lookup(tree *t, long key)
{
    bench_lock_acquire(&t->lock);
    tnode_base *n = t->root;
    while (n && n->key != key)
        n = key < n->key ? n->left : n->right;
    long v = n ? n->value : -1;
    bench_lock_release(&t->lock);
    return v;
}

/* The new node is allocated before the lock is taken, freed if unused. */
void tree_insert(tree *t, long key)
{
    tnode_base *fresh = tnode_new(t, key);
    bench_lock_acquire(&t->lock);
    tnode_base **link = &t->root;
    while (*link && (*link)->key != key)
        link = key < (*link)->key ? &(*link)->left : &(*link)->right;
    if (*link == nullptr) {
        *link = fresh;
        t->size++;
        fresh = nullptr;
    }
    bench_lock_release(&t->lock);
    if (fresh)
        t->ops->drop(t, fresh);
}

void tree_delete(tree *t, long key)
{
    tnode_base *gone = nullptr;
    bench_lock_acquire(&t->lock);
    tnode_base **link = &t->root;
    while (*link && (*link)->key != key)
        link = key < (*link)->key ? &(*link)->left : &(*link)->right;
    tnode_base *n = *link;
    if (n) {
        if (!n->left || !n->right) {
            *link = n->left ? n->left : n->right;
            gone = n;
        } else {
            // two children: move the successor's key here, unlink the successor
            tnode_base **s = &n->right;
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
        t->ops->drop(t, gone);
}

void tree_destroy(tree *t, tnode_base *n)
{
    if (!n)
        return;
    tree_destroy(t, n->left);
    tree_destroy(t, n->right);
    t->ops->drop(t, n);
}

void *timer(void *arg)
{
    cfg *c = static_cast<cfg *>(arg);
    usleep(static_cast<useconds_t>(c->seconds * 1e6));
    c->stop.store(1, std::memory_order_relaxed);
    return nullptr;
}

void worker(bench_thread *t)
{
    cfg *c = static_cast<cfg *>(t->arg);
    int home_node = node_of_cpu(t->cpu), home = 0;
    for (int i = 0; i < c->ntrees / c->per_node; i++)
        if (c->ids[i] == home_node)
            home = i * c->per_node;
    // prefill: each thread inserts its share of the even keys, in random
    // order (sorted inserts would make the unbalanced trees into lists)
    for (int i = 0; i < c->ntrees; i++)
        for (long j = t->id; j < c->nprefill; j += t->nthreads)
            tree_insert(&c->trees[i], c->prefill[j]);
    bench_sync(t);
    if (t->id == 0) {
        pthread_t tid;
        pthread_create(&tid, nullptr, timer, c);
        pthread_detach(tid);
    }
    uint64_t ops = 0;
    long sink = 0;
    while (!c->stop.load(std::memory_order_relaxed)) {
        for (int i = 0; i < 64; i++) {
            uint64_t r = rng_below(&t->rng, 100);
            int ti = rng_below(&t->rng, 100) < static_cast<uint64_t>(c->local_pct)
                         ? home + static_cast<int>(rng_below(&t->rng, static_cast<uint64_t>(c->per_node)))
                         : static_cast<int>(rng_below(&t->rng, static_cast<uint64_t>(c->ntrees)));
            tree *tr = &c->trees[ti];
            long key = static_cast<long>(rng_below(&t->rng, static_cast<uint64_t>(c->keys)));
            if (r < static_cast<uint64_t>(c->lookup_pct))
                sink += tree_lookup(tr, key);
            else if ((r - static_cast<uint64_t>(c->lookup_pct)) % 2 == 0)
                tree_insert(tr, key);
            else
                tree_delete(tr, key);
        }
        ops += 64;
    }
    bench_stop(t);
    escape(&sink);
    t->ops = ops;
}

}  // namespace

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
        case 'd': seconds = std::atof(optarg); break;
        case 'T': per_node = parse_size(optarg); break;
        case 'P': bench_pinning = 0; break;
        default:
            std::fprintf(stderr, "usage: bstxx [-b " NODE_BACKENDS "] [-t threads] [-k keys] "
                                 "[-r lookup %%]\n             [-l local %%] [-d seconds] [-T trees per "
                                 "node] [-P]\n");
            return 2;
        }
    }
    bool typed = !std::strcmp(backend, "nodal"), plain = !std::strcmp(backend, "malloc");
    const node_backend *be = nullptr;
    if (typed) {
        if (!nodal_malloc_node || !nodal_free || !nodal_node_has_memory) {
            std::fprintf(stderr, "nodal backend: libnodal.so is not loaded (run with "
                                 "LD_PRELOAD=.../libnodal.so)\n");
            return BENCH_SKIP;
        }
    } else if (!plain) {
        be = node_backend_get(backend);   // exits for an unknown or unusable backend
    }
    if (per_node < 1)
        die("-T must be >= 1");
    cfg c;
    c.keys = keys;
    c.lookup_pct = static_cast<int>(lookup);
    c.local_pct = static_cast<int>(local);
    c.seconds = seconds;
    int nnodes = node_ids(c.ids, 64);
    if (be != nullptr)
        node_backend_require(be, nnodes);   // skips a one-node backend on several nodes
    c.per_node = static_cast<int>(per_node);
    c.ntrees = nnodes * c.per_node;
    c.trees = new tree[static_cast<std::size_t>(c.ntrees)]();
    for (int i = 0; i < c.ntrees; i++) {
        tree &t = c.trees[i];
        t.node = c.ids[i / c.per_node];
        t.be = be;
        t.ops = typed ? typed_for(t.node, std::make_integer_sequence<int, 8>{})
                : plain ? &plain_ops
                        : &backend_ops;
        if (!t.ops)
            die("node %d: bstxx has node-typed trees for nodes 0..7 only", t.node);
    }
    c.nprefill = (keys + 1) / 2;
    c.prefill = static_cast<long *>(std::malloc(sizeof(long) * static_cast<std::size_t>(c.nprefill)));
    uint64_t rng = rng_seed(5, 6);
    for (long i = 0; i < c.nprefill; i++)
        c.prefill[i] = 2 * i;
    for (long i = c.nprefill - 1; i > 0; i--) {
        long j = static_cast<long>(rng_below(&rng, static_cast<uint64_t>(i) + 1)), x = c.prefill[i];
        c.prefill[i] = c.prefill[j];
        c.prefill[j] = x;
    }
    int nthreads = threads > 0 ? static_cast<int>(threads) : bench_ncpus();
    bench_team r;
    bench_team_run(nthreads, worker, &c, &r);
    long size = 0;
    for (int i = 0; i < c.ntrees; i++)
        size += c.trees[i].size;
    const char *config = plain ? "numa/regular" : "numa/numa";
    std::printf("note: %ld keys in the trees at the end\n", size);
    bench_result("bst", "config=%s backend=%s lang=c++ threads=%d trees=%d keys=%lld mops=%.4f "
                 "cpu_mops=%.4f user_s=%.3f sys_s=%.3f",
                 config, backend, nthreads, c.ntrees, keys,
                 static_cast<double>(r.ops) / (static_cast<double>(r.wall_ns) / 1e9) / 1e6,
                 static_cast<double>(r.ops) / (static_cast<double>(r.cpu_ns) / 1e9) / 1e6, r.user_s,
                 r.sys_s);
    for (int i = 0; i < c.ntrees; i++)
        tree_destroy(&c.trees[i], c.trees[i].root);
    delete[] c.trees;
    std::free(c.prefill);
    return 0;
}
