/*
 * mkpool.c - memkind as a node pool (see mkpool.h).
 *
 * How memkind can target a node, and why the per-node backend uses fixed
 * kinds:
 *  - The static kinds choose nodes relative to the calling CPU: MEMKIND_HBW
 *    and MEMKIND_DAX_KMEM bind to "the closest" high-bandwidth / DAX-KMEM
 *    node of the CPU that makes an arena grow, from the node lists in
 *    MEMKIND_HBW_NODES / MEMKIND_DAX_KMEM_NODES (read once per process).
 *    Listing a single node pins the kind to it, so a process gets at most
 *    one such node per kind family, whichever CPU asks.
 *  - memkind_create_kind() combines a memory type with a policy
 *    (BIND_LOCAL, BIND_ALL, PREFERRED_LOCAL, INTERLEAVE_*): again relative
 *    to the caller or to all nodes of a type, never an explicit node.
 *  - memkind_create_fixed(addr, size) makes a kind over memory the caller
 *    supplies. mbind()ing that area to node k (MPOL_BIND) before first
 *    touch gives a kind whose every page is on node k, for any k and any
 *    number of nodes: the only public way to get nodal's guarantee for
 *    several nodes in one process. Its costs: memkind gives dynamic kinds
 *    no thread cache (every call goes to a jemalloc arena), and a fixed
 *    kind never returns memory to the OS (its purge hooks opt out).
 *
 * MPOL_BIND makes placement hard: a full node means the OOM killer, not a
 * fallback (nodal's strict mode fails the allocation instead).
 */
#define _GNU_SOURCE
#include "mkpool.h"
#include "harness.h"

#include <dlfcn.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MKPOOL_MAX_NODES 64

typedef struct memkind *memkind_t;

static int (*mk_create_fixed)(void *addr, size_t size, memkind_t *kind);
static void *(*mk_malloc)(memkind_t kind, size_t size);
static void (*mk_free)(memkind_t kind, void *p);
static void (*mk_error_message)(int err, char *msg, size_t size);
static memkind_t *mk_hbw;           /* &MEMKIND_HBW in the library */

static memkind_t node_kind[MKPOOL_MAX_NODES];
static int node_ready[MKPOOL_MAX_NODES];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

int mkpool_init(void)
{
    if (mk_malloc)
        return 0;
    const char *path = getenv("BENCH_MEMKIND");
    void *h = dlopen(path ? path : "libmemkind.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *err = dlerror();
        fprintf(stderr, "memkind: cannot load libmemkind: %s (apt-get install libmemkind0)\n", err ? err : "?");
        return -1;
    }
    mk_create_fixed = (int (*)(void *, size_t, memkind_t *))dlsym(h, "memkind_create_fixed");
    mk_free = (void (*)(memkind_t, void *))dlsym(h, "memkind_free");
    mk_error_message = (void (*)(int, char *, size_t))dlsym(h, "memkind_error_message");
    mk_hbw = (memkind_t *)dlsym(h, "MEMKIND_HBW");
    void *m = dlsym(h, "memkind_malloc");
    if (!mk_create_fixed || !mk_free || !m || !mk_hbw) {
        fprintf(stderr, "memkind: libmemkind lacks memkind_create_fixed/memkind_malloc/memkind_free/MEMKIND_HBW\n");
        return -1;
    }
    mk_malloc = (void *(*)(memkind_t, size_t))m;
    return 0;
}

/* Size of node k's area: its memory size (virtual, MAP_NORESERVE), or
   BENCH_MEMKIND_AREA. */
static size_t area_size(int node)
{
    const char *s = getenv("BENCH_MEMKIND_AREA");
    if (s && *s)
        return (size_t)parse_size(s);
    long long sz = numa_available() >= 0 ? numa_node_size64(node, NULL) : -1;
    if (sz <= 0)
        sz = 1ll << 30;
    return ((size_t)sz + (4u << 20) - 1) & ~(size_t)((4u << 20) - 1);
}

/* Node k's fixed kind, created on first use (any thread). */
static memkind_t node_kind_get(int node)
{
    if (__atomic_load_n(&node_ready[node], __ATOMIC_ACQUIRE))
        return node_kind[node];
    pthread_mutex_lock(&lock);
    if (!node_ready[node]) {
        size_t size = area_size(node);
        void *area = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        unsigned long mask[MKPOOL_MAX_NODES / (8 * sizeof(unsigned long)) + 1] = { 0 };
        mask[node / (8 * sizeof(unsigned long))] |= 1ul << (node % (8 * sizeof(unsigned long)));
        if (area == MAP_FAILED) {
            fprintf(stderr, "memkind: mmap of %zu bytes for node %d failed\n", size, node);
        } else if (mbind(area, size, MPOL_BIND, mask, MKPOOL_MAX_NODES + 1, 0) != 0) {
            perror("memkind: mbind");
            munmap(area, size);
        } else {
            memkind_t k = NULL;
            int err = mk_create_fixed(area, size, &k);
            if (err != 0) {
                char msg[256] = "";
                if (mk_error_message)
                    mk_error_message(err, msg, sizeof msg);
                fprintf(stderr, "memkind: memkind_create_fixed for node %d failed: %s\n", node, msg);
                munmap(area, size);
            } else {
                node_kind[node] = k;
                __atomic_store_n(&node_ready[node], 1, __ATOMIC_RELEASE);
            }
        }
    }
    pthread_mutex_unlock(&lock);
    return node_kind[node];
}

void *mkpool_alloc(size_t size, int node)
{
    if ((unsigned)node >= MKPOOL_MAX_NODES)
        return NULL;
    memkind_t k = __atomic_load_n(&node_ready[node], __ATOMIC_ACQUIRE) ? node_kind[node] : node_kind_get(node);
    return k ? mk_malloc(k, size) : NULL;
}

void mkpool_free(void *p, size_t size, int node)
{
    (void)size;
    if ((unsigned)node < MKPOOL_MAX_NODES && node_kind[node])
        mk_free(node_kind[node], p);
}

/* ---- MEMKIND_HBW with MEMKIND_HBW_NODES=<node> --------------------------- */
static int hbw_node = -1;

int mkpool_hbw_init(void)
{
    if (mkpool_init() != 0)
        return -1;
    const char *s = getenv("MEMKIND_HBW_NODES");
    if (s && *s) {
        char *end;
        long n = strtol(s, &end, 10);
        if (*end != '\0' || n < 0) {
            fprintf(stderr, "memkind-hbw: MEMKIND_HBW_NODES='%s' must be one node\n", s);
            return -1;
        }
        hbw_node = (int)n;
    }
    return 0;
}

void *mkpool_hbw_alloc(size_t size, int node)
{
    int n = __atomic_load_n(&hbw_node, __ATOMIC_ACQUIRE);
    if (n < 0) {
        /* First request: its node becomes the HBW node, before memkind reads
           the variable (it does so once, on the kind's first use). */
        pthread_mutex_lock(&lock);
        if (hbw_node < 0) {
            char buf[16];
            snprintf(buf, sizeof buf, "%d", node);
            setenv("MEMKIND_HBW_NODES", buf, 1);
            __atomic_store_n(&hbw_node, node, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&lock);
        n = hbw_node;
    }
    if (n != node) {
        static int told;
        if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
            fprintf(stderr, "memkind-hbw: MEMKIND_HBW_NODES=%d: node %d cannot be targeted in this process\n", n,
                    node);
        return NULL;
    }
    return mk_malloc(*mk_hbw, size);
}

void mkpool_hbw_free(void *p, size_t size, int node)
{
    (void)size;
    (void)node;
    mk_free(*mk_hbw, p);
}
