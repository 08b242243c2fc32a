/*
 * jepool.c - jemalloc driven as a NUMA pool, the design of seed 000, as the
 * strongest existing way to get pooled node-local memory from Debian
 * packages. See jepool.h for the outline; the details that matter:
 *
 *  - Each node's arena gets extent hooks that mmap its memory and mbind() it
 *    to the node before first touch, so everything the arena hands out is on
 *    that node. The hooks never call malloc.
 *  - A tcache is bound to the arena the creating thread is using at that
 *    moment, for good. So each thread creates its own tcache per node, lazily,
 *    after pointing thread.arena at that node's arena (and restores
 *    thread.arena afterwards). Tcaches created up front on the main thread
 *    were seed 000's 408 ns/pair bug.
 *  - One tcache per (thread, node): jemalloc's tcache bins are per size
 *    class, not per arena, so sharing one tcache across nodes would hand a
 *    node-1 request node-0 memory.
 *  - Explicit tcaches are not reclaimed by jemalloc; a thread-exit
 *    destructor destroys them.
 *  - libjemalloc.so.2 uses initial-exec TLS, which a plain dlopen() cannot
 *    place ("cannot allocate memory in static TLS block"); the program then
 *    re-executes itself once with GLIBC_TUNABLES=glibc.rtld.optional_static_tls
 *    raised. BENCH_JEMALLOC overrides the library path.
 */
#define _GNU_SOURCE
#include "jepool.h"
#include "harness.h"

#include <dlfcn.h>
#include <jemalloc/jemalloc.h>
#include <numaif.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define JEPOOL_MAX_NODES 64

static void *(*je_mallocx_fn)(size_t, int);
static void (*je_dallocx_fn)(void *, int);
static int (*je_mallctl_fn)(const char *, void *, size_t *, void *, size_t);

/* The hooks of one node: jemalloc passes &hooks back to every call. */
struct node_hooks {
    extent_hooks_t hooks;   /* first member: the cast back relies on it */
    int node;
};
static struct node_hooks node_hooks[JEPOOL_MAX_NODES];
static unsigned node_arena[JEPOOL_MAX_NODES];
static int node_ready[JEPOOL_MAX_NODES];
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;

/* Per thread and node: the flags for mallocx (0 = not yet made) and
   dallocx, and the tcache they name. */
static __thread struct {
    int flags[JEPOOL_MAX_NODES];
    int free_flags[JEPOOL_MAX_NODES];
    unsigned tcache[JEPOOL_MAX_NODES];
    int registered;
} tls;
static pthread_key_t exit_key;

/* ---- extent hooks: memory bound to one node ---------------------------- */
static void *hook_alloc(extent_hooks_t *h, void *new_addr, size_t size, size_t alignment,
                        bool *zero, bool *commit, unsigned arena_ind)
{
    (void)arena_ind;
    if (new_addr != NULL)
        return NULL;    /* cannot promise a given address */
    if (alignment < 4096)
        alignment = 4096;
    size_t len = size + alignment;
    char *raw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    char *p = (char *)(((uintptr_t)raw + alignment - 1) & ~(uintptr_t)(alignment - 1));
    if (p > raw)
        munmap(raw, (size_t)(p - raw));
    if (p + size < raw + len)
        munmap(p + size, (size_t)(raw + len - (p + size)));
    int node = ((struct node_hooks *)h)->node;
    unsigned long mask[JEPOOL_MAX_NODES / (8 * sizeof(unsigned long)) + 1] = { 0 };
    mask[node / (8 * sizeof(unsigned long))] |= 1ul << (node % (8 * sizeof(unsigned long)));
    if (mbind(p, size, MPOL_BIND, mask, JEPOOL_MAX_NODES + 1, 0) != 0) {
        munmap(p, size);
        return NULL;
    }
    *zero = true;
    *commit = true;
    return p;
}

static bool hook_dalloc(extent_hooks_t *h, void *addr, size_t size, bool committed, unsigned a)
{
    (void)h; (void)committed; (void)a;
    return munmap(addr, size) != 0;
}

static void hook_destroy(extent_hooks_t *h, void *addr, size_t size, bool committed, unsigned a)
{
    (void)h; (void)committed; (void)a;
    munmap(addr, size);
}

static bool hook_commit(extent_hooks_t *h, void *addr, size_t size, size_t off, size_t len, unsigned a)
{
    (void)h; (void)addr; (void)size; (void)off; (void)len; (void)a;
    return false;   /* memory is always committed */
}

static bool hook_decommit(extent_hooks_t *h, void *addr, size_t size, size_t off, size_t len, unsigned a)
{
    (void)h; (void)addr; (void)size; (void)off; (void)len; (void)a;
    return true;    /* opt out: keep it committed */
}

static bool hook_purge_lazy(extent_hooks_t *h, void *addr, size_t size, size_t off, size_t len, unsigned a)
{
    (void)h; (void)size; (void)a;
    return madvise((char *)addr + off, len, MADV_FREE) != 0;
}

static bool hook_purge_forced(extent_hooks_t *h, void *addr, size_t size, size_t off, size_t len, unsigned a)
{
    (void)h; (void)size; (void)a;
    /* the mbind policy stays with the mapping, so refaults land on the node */
    return madvise((char *)addr + off, len, MADV_DONTNEED) != 0;
}

static bool hook_split(extent_hooks_t *h, void *addr, size_t size, size_t sa, size_t sb, bool c, unsigned a)
{
    (void)h; (void)addr; (void)size; (void)sa; (void)sb; (void)c; (void)a;
    return false;   /* plain mappings split freely */
}

static bool hook_merge(extent_hooks_t *h, void *aa, size_t sa, void *ab, size_t sb, bool c, unsigned a)
{
    (void)h; (void)aa; (void)sa; (void)ab; (void)sb; (void)c; (void)a;
    return false;   /* munmap of a range spanning two mappings is fine */
}

/* ---- set-up ------------------------------------------------------------ */
static void reexec_with_tls_room(void)
{
    if (getenv("BENCH_JEPOOL_REEXEC"))
        return;     /* already tried once */
    const char *old = getenv("GLIBC_TUNABLES");
    char buf[1024];
    snprintf(buf, sizeof buf, "%s%sglibc.rtld.optional_static_tls=16384", old ? old : "", old && *old ? ":" : "");
    setenv("GLIBC_TUNABLES", buf, 1);
    setenv("BENCH_JEPOOL_REEXEC", "1", 1);
    fflush(NULL);
    execv("/proc/self/exe", bench_argv);
}

int jepool_init(void)
{
    if (je_mallocx_fn)
        return 0;
    const char *path = getenv("BENCH_JEMALLOC");
    void *h = dlopen(path ? path : "libjemalloc.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *err = dlerror();
        if (err && strstr(err, "static TLS"))
            reexec_with_tls_room();     /* returns only if that failed */
        fprintf(stderr, "jepool: cannot load jemalloc: %s\n", err ? err : "?");
        return -1;
    }
    je_mallocx_fn = (void *(*)(size_t, int))dlsym(h, "mallocx");
    je_dallocx_fn = (void (*)(void *, int))dlsym(h, "dallocx");
    je_mallctl_fn = (int (*)(const char *, void *, size_t *, void *, size_t))dlsym(h, "mallctl");
    if (!je_mallocx_fn || !je_dallocx_fn || !je_mallctl_fn) {
        fprintf(stderr, "jepool: jemalloc lacks mallocx/dallocx/mallctl\n");
        je_mallocx_fn = NULL;
        return -1;
    }
    return 0;
}

/* The arena of a node, created on first use (any thread). */
static int node_arena_get(int node, unsigned *out)
{
    if (__atomic_load_n(&node_ready[node], __ATOMIC_ACQUIRE)) {
        *out = node_arena[node];
        return 0;
    }
    pthread_mutex_lock(&init_lock);
    int rc = 0;
    if (!node_ready[node]) {
        struct node_hooks *nh = &node_hooks[node];
        nh->hooks = (extent_hooks_t){ hook_alloc, hook_dalloc, hook_destroy, hook_commit, hook_decommit,
                                      hook_purge_lazy, hook_purge_forced, hook_split, hook_merge };
        nh->node = node;
        extent_hooks_t *hp = &nh->hooks;
        unsigned ind;
        size_t sz = sizeof ind;
        rc = je_mallctl_fn("arenas.create", &ind, &sz, &hp, sizeof hp);
        if (rc == 0) {
            node_arena[node] = ind;
            __atomic_store_n(&node_ready[node], 1, __ATOMIC_RELEASE);
        } else {
            fprintf(stderr, "jepool: arenas.create failed (%d)\n", rc);
        }
    }
    pthread_mutex_unlock(&init_lock);
    *out = node_arena[node];
    return rc;
}

static void thread_exit(void *arg)
{
    (void)arg;
    for (int n = 0; n < JEPOOL_MAX_NODES; n++) {
        if (tls.flags[n]) {
            unsigned tc = tls.tcache[n];
            je_mallctl_fn("tcache.destroy", NULL, NULL, &tc, sizeof tc);
            tls.flags[n] = 0;
        }
    }
}

static void make_key(void) { pthread_key_create(&exit_key, thread_exit); }

/* First use of `node` in this thread: its own tcache, bound to the node's arena. */
static int thread_bind(int node)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    unsigned arena, old, tc;
    size_t sz = sizeof old;
    if (node < 0 || node >= JEPOOL_MAX_NODES || node_arena_get(node, &arena) != 0)
        return 0;
    if (je_mallctl_fn("thread.arena", &old, &sz, &arena, sizeof arena) != 0)
        return 0;
    sz = sizeof tc;
    int rc = je_mallctl_fn("tcache.create", &tc, &sz, NULL, 0);
    je_mallctl_fn("thread.arena", NULL, NULL, &old, sizeof old);
    if (rc != 0)
        return 0;
    if (!tls.registered) {
        pthread_once(&once, make_key);
        pthread_setspecific(exit_key, &tls);
        tls.registered = 1;
    }
    tls.tcache[node] = tc;
    tls.flags[node] = MALLOCX_ARENA(arena) | MALLOCX_TCACHE(tc);
    tls.free_flags[node] = MALLOCX_TCACHE(tc);
    return tls.flags[node];
}

void *jepool_alloc(size_t size, int node)
{
    int f = (unsigned)node < JEPOOL_MAX_NODES ? tls.flags[node] : 0;
    if (__builtin_expect(f == 0, 0) && (f = thread_bind(node)) == 0)
        return NULL;
    return je_mallocx_fn(size, f);
}

void jepool_free(void *p, size_t size, int node)
{
    (void)size;
    if ((unsigned)node >= JEPOOL_MAX_NODES)
        return;     /* cannot have come from jepool_alloc */
    /* a block of node k goes into this thread's node-k tcache */
    if (__builtin_expect(tls.flags[node] == 0, 0))
        thread_bind(node);
    je_dallocx_fn(p, tls.free_flags[node]);
}
