/*
 * fork_storm.c - fork() while other threads make every kind of nodal call
 * at once: each child must be able to allocate, free, print statistics and
 * exit, promptly. A lock that one of nodal's calls can hold while the
 * process forks, and that nodal's fork handlers do not take, is held for
 * ever in the child (its owner does not exist there): the child hangs on
 * its first call that needs it (issue 17: the statistics report lock).
 *
 * Worker threads, one per kind of call, run until the last fork: small,
 * large (128 KiB-1 MiB) and huge (> 1 MiB) malloc/free; the node calls
 * (nodal_malloc_node, nodal_calloc_node, nodal_aligned_alloc_node,
 * nodal_realloc_node); remote frees (one thread allocates, another frees);
 * realloc across every size band; thread start and exit (a thread that
 * keeps starting short-lived threads that allocate, and frees what they
 * leave); nodal_stats_print (text, JSON, brief) to /dev/null and
 * nodal_stats_json; nodal_collect(0/1), nodal_option_get,
 * nodal_memory_info_get and nodal_stats_reset; and the C++ operators
 * (operator new/delete in their plain, array, sized and aligned forms,
 * called by their mangled names where libnodal exports them: not in the
 * prefix and sanitizer builds, where they are not nodal's). Each calls for
 * 0.2 ms and sleeps for 0.8 ms in turn, and all of them wait while a child
 * runs: a dozen threads on two cores would otherwise take most of the CPU
 * time of a run between forks, and the child's share of it.
 *
 * The main thread forks --forks times. Every child allocates and frees
 * small and huge blocks and calls nodal_stats_print; every other child also
 * a large block, calloc, realloc, a node block, the blocks the parent held
 * and nodal_memory_info_get, the others the C++ operators,
 * nodal_stats_json, nodal_collect and nodal_option_get (child_main). It
 * ends with _exit(0) or, one child in two with --exit-report=1, with
 * exit(0), which runs nodal's report at exit when the option stats or
 * stats_file is set (ctest sets stats_file=/dev/null). It writes a marker
 * to a pipe before each step.
 * The parent watches each child (proc.h, nd_watch_check): one that sleeps
 * --quiet-s seconds without using CPU, has used 60 s of CPU or lived 600
 * s is a failure that names the fork and the child's last marker; its
 * threads' states and stacks go to stderr (nd_dump_threads) and it is
 * killed. A child that is runnable but starved on a loaded machine is
 * slow, not stuck, however long it waits for a CPU.
 *
 * Knobs: --forks=N (1000), --quiet-s=N (5), --exit-report=0|1 (1;
 * 0 in the sanitizer builds: their exit handlers are theirs to get right),
 * --without=KIND,... (leave kinds of worker out, to find which one leaves a
 * lock behind: small, large, huge, node, remote, realloc, threads, stats,
 * maint, cxx), --settle-us=N (1000: before a fork, wait at most this long
 * for every kind of worker to have made a call since the last child),
 * --verbose=1 (where the time went: the children's steps, fork(), the
 * wait for the workers), --seed=S.
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <time.h>

#include "api.h"
#include "check.h"
#include "pattern.h"
#include "proc.h"

#define S_KiB ((size_t)1 << 10)
#define S_MiB ((size_t)1 << 20)

/* ---- the C++ operators, by their mangled names --------------------------- */
#if !defined(ND_TEST_PREFIX_ONLY)
/* Weak: absent (NULL) where the library does not export them. */
extern void *_Znwm(size_t n) __attribute__((weak));                              /* new */
extern void *_Znam(size_t n) __attribute__((weak));                              /* new[] */
extern void *_ZnwmSt11align_val_t(size_t n, size_t al) __attribute__((weak));    /* new, aligned */
extern void _ZdlPv(void *p) __attribute__((weak));                               /* delete */
extern void _ZdlPvm(void *p, size_t n) __attribute__((weak));                    /* delete, sized */
extern void _ZdaPv(void *p) __attribute__((weak));                               /* delete[] */
extern void _ZdaPvm(void *p, size_t n) __attribute__((weak));                    /* delete[], sized */
extern void _ZdlPvSt11align_val_t(void *p, size_t al) __attribute__((weak));     /* delete, aligned */
static int cxx_present(void)
{
    return _Znwm && _Znam && _ZnwmSt11align_val_t && _ZdlPv && _ZdlPvm && _ZdaPv && _ZdaPvm &&
           _ZdlPvSt11align_val_t;
}
#else
static int cxx_present(void) { return 0; }
#endif

/* ---- worker kinds ------------------------------------------------------------ */
enum kind { K_SMALL, K_LARGE, K_HUGE, K_NODE, K_REMOTE, K_REALLOC, K_THREADS, K_STATS, K_MAINT,
            K_CXX, K_COUNT };
static const char *const kind_name[K_COUNT] = {
    "small", "large", "huge", "node", "remote", "realloc", "threads", "stats", "maint", "cxx",
};
static int kind_on[K_COUNT];
static atomic_long kind_ops[K_COUNT];
static atomic_int stop;
static const struct nd_api *A;
static int node_ids[NODAL_MAX_NODES], node_count;
static FILE *worker_out;                 /* /dev/null, for the stats worker */
static FILE *child_out;                  /* /dev/null, used only by children */
static char child_out_buf[BUFSIZ];

static void count(enum kind k)
{
    atomic_fetch_add_explicit(&kind_ops[k], 1, memory_order_relaxed);
}

/* While a child runs, the workers wait (the child's locks were settled at
   the fork; it gets the CPU instead of a dozen busy threads, so its time
   measures its locks, not its share of two cores). */
static atomic_int hold;
static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cond = PTHREAD_COND_INITIALIZER;

static void set_hold(int on)
{
    pthread_mutex_lock(&hold_lock);
    atomic_store(&hold, on);
    if (!on)
        pthread_cond_broadcast(&hold_cond);
    pthread_mutex_unlock(&hold_lock);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Each worker calls for RUN_MS, then sleeps for SLEEP_MS: a dozen threads
   on two cores, each mid-call at a fork about a fifth of the time (a call
   that holds a lock longer, such as a statistics report, more often),
   without spending most of a run's CPU time between forks. */
#define RUN_MS   0.2
#define SLEEP_MS 0.8
static _Thread_local double run_until;

/* 1 when the worker is to stop; waits first while the workers are held,
   and sleeps when its running time is up. */
static int stopped(void)
{
    if (atomic_load_explicit(&hold, memory_order_acquire)) {
        pthread_mutex_lock(&hold_lock);
        while (atomic_load(&hold))
            pthread_cond_wait(&hold_cond, &hold_lock);
        pthread_mutex_unlock(&hold_lock);
    }
    if (now_ms() > run_until) {
        struct timespec ts = { 0, (long)(SLEEP_MS * 1e6) };
        nanosleep(&ts, NULL);
        run_until = now_ms() + RUN_MS;
    }
    return atomic_load_explicit(&stop, memory_order_relaxed);
}

/* A block's first and last bytes carry a tag, checked before it is freed. */
static void tag_block(void *p, size_t size, unsigned char tag)
{
    if (size == 0)
        return;
    unsigned char *b = p;
    b[size - 1] = (unsigned char)(tag ^ 0x5a);
    b[0] = tag;
}

static void check_tag(const void *p, size_t size, unsigned char tag, const char *what)
{
    if (size == 0)
        return;
    const unsigned char *b = p;
    EXPECT(b[0] == tag && (size == 1 || b[size - 1] == (unsigned char)(tag ^ 0x5a)),
           "a %zu-byte block of the %s worker to keep its contents while the main thread forks",
           size, what);
}

static _Thread_local const char *who = "main";   /* for the fatal-signal line */
static atomic_long forks_done;

static void worker_start(const char *name)
{
    who = name;
}

/* nodal aborted (or a pointer went wild) in the parent: name the thread. */
static atomic_int fatal_seen;
static void on_fatal(int sig)
{
    if (atomic_exchange(&fatal_seen, 1))
        for (;;)
            pause();
    char line[300];
    int n = snprintf(line, sizeof line, "FAIL %s: expected no fatal signal in the parent; got "
                     "%s in the %s thread after %ld forks [seed=%" PRIu64 "]\n", nd_case_name,
                     sig == SIGABRT ? "SIGABRT (nodal aborted?)" : sig == SIGSEGV ? "SIGSEGV"
                                                                                  : "SIGBUS",
                     who, atomic_load(&forks_done), nd_seed);
    ssize_t ignored = write(2, line, n > 0 ? (size_t)n : 0);
    (void)ignored;
    signal(sig, SIG_DFL);
    raise(sig);
}

static size_t size_between(struct nd_rng *r, size_t lo, size_t hi)
{
    return lo + nd_rng_below(r, hi - lo + 1);
}

/* Allocates with the `kind`'s sizes, frees the block a ring slot held. */
static void *ring_worker(void *arg)
{
    enum kind k = (enum kind)(intptr_t)arg;
    worker_start(kind_name[k]);
    struct nd_rng r = nd_rng_for(100 + (uint64_t)k);
    enum { RING = 16 };
    void *p[RING] = { 0 };
    size_t sz[RING] = { 0 };
    unsigned ring = k == K_SMALL ? RING : k == K_LARGE ? 8 : 4;
    size_t lo = k == K_SMALL ? 1 : k == K_LARGE ? 128 * S_KiB + 1 : S_MiB + 1;
    size_t hi = k == K_SMALL ? 4096 : k == K_LARGE ? S_MiB - 4 * S_KiB : 3 * S_MiB;
    for (unsigned i = 0; !stopped(); i++) {
        unsigned at = i % ring;
        if (p[at]) {
            check_tag(p[at], sz[at], (unsigned char)at, kind_name[k]);
            A->free(p[at]);
        }
        sz[at] = size_between(&r, lo, hi);
        p[at] = A->malloc(sz[at]);
        EXPECT(p[at] != NULL, "%s(%zu) to succeed in the %s worker", nd_fn("malloc"), sz[at],
               kind_name[k]);
        tag_block(p[at], sz[at], (unsigned char)at);
        count(k);
    }
    for (unsigned i = 0; i < RING; i++)
        A->free(p[i]);
    return NULL;
}

static void *node_worker(void *arg)
{
    worker_start("node");
    (void)arg;
    struct nd_rng r = nd_rng_for(200);
    for (unsigned i = 0; !stopped(); i++) {
        int node = node_ids[i % (unsigned)node_count];
        size_t size = size_between(&r, 1, i % 8 == 0 ? 600 * S_KiB : 8 * S_KiB);
        void *p;
        switch (i % 4) {
        case 0:  p = nodal_malloc_node(size, node); break;
        case 1:  p = nodal_calloc_node(1, size, node); break;
        case 2:  p = nodal_aligned_alloc_node((size_t)64 << (i % 10), size, node); break;
        default: p = nodal_realloc_node(A->malloc(size), size + 100, node); size += 100; break;
        }
        EXPECT(p != NULL, "node call %u for %zu bytes on node %d to succeed", i % 4, size, node);
        EXPECT(nodal_node_of(p) == node, "a block for node %d to be on it, nodal_node_of says %d",
               node, nodal_node_of(p));
        tag_block(p, size, (unsigned char)i);
        check_tag(p, size, (unsigned char)i, "node");
        A->free(p);
        count(K_NODE);
    }
    return NULL;
}

/* ---- remote frees: a producer thread and a consumer thread ------------------ */
#define MAIL 256
static void *mail[MAIL];
static size_t mail_size[MAIL];
static unsigned mail_head, mail_count;
static pthread_mutex_t mail_lock = PTHREAD_MUTEX_INITIALIZER;

static void *remote_producer(void *arg)
{
    worker_start("remote producer");
    (void)arg;
    struct nd_rng r = nd_rng_for(300);
    while (!stopped()) {
        size_t size = nd_rng_below(&r, 16) ? size_between(&r, 1, 2048)
                                           : size_between(&r, 2049, 400 * S_KiB);
        void *p = A->malloc(size);
        EXPECT(p != NULL, "%s(%zu) to succeed in the remote producer", nd_fn("malloc"), size);
        tag_block(p, size, 0x33);
        pthread_mutex_lock(&mail_lock);
        if (mail_count < MAIL) {
            mail[(mail_head + mail_count) % MAIL] = p;
            mail_size[(mail_head + mail_count++) % MAIL] = size;
            p = NULL;
        }
        pthread_mutex_unlock(&mail_lock);
        if (p) {                 /* the mailbox is full: free it here */
            A->free(p);
            sched_yield();
        }
    }
    return NULL;
}

static void *remote_consumer(void *arg)
{
    worker_start("remote consumer");
    (void)arg;
    for (;;) {
        void *p = NULL;
        size_t size = 0;
        pthread_mutex_lock(&mail_lock);
        if (mail_count > 0) {
            p = mail[mail_head];
            size = mail_size[mail_head];
            mail_head = (mail_head + 1) % MAIL;
            mail_count--;
        }
        pthread_mutex_unlock(&mail_lock);
        if (!p) {
            if (stopped())
                return NULL;
            sched_yield();
            continue;
        }
        check_tag(p, size, 0x33, "remote");
        A->free(p);               /* a remote free: another thread made it */
        count(K_REMOTE);
    }
}

static void *realloc_worker(void *arg)
{
    worker_start("realloc");
    (void)arg;
    struct nd_rng r = nd_rng_for(400);
    static const size_t band[][2] = {
        { 1, 1024 }, { 1025, 64 * 1024 }, { 128 * 1024 + 1, 1024 * 1024 - 4096 },
        { 1024 * 1024 + 1, 3 * 1024 * 1024 },
    };
    void *p = NULL;
    size_t size = 0;
    while (!stopped()) {
        unsigned b = (unsigned)nd_rng_below(&r, 4);
        size_t to = size_between(&r, band[b][0], band[b][1]);
        void *q = A->realloc(p, to);
        EXPECT(q != NULL, "%s(%p, %zu) to succeed in the realloc worker", nd_fn("realloc"), p, to);
        if (p && size > 0 && to > 0)
            EXPECT(((unsigned char *)q)[0] == 0x77, "%s(%p, %zu) to keep the first byte of "
                   "the %zu-byte block", nd_fn("realloc"), p, to, size);
        p = q;
        size = to;
        tag_block(p, size, 0x77);
        count(K_REALLOC);
    }
    A->free(p);
    return NULL;
}

/* ---- thread start and exit --------------------------------------------------- */
struct brief_life {
    void *left[8];
    size_t left_size[8];
    uint64_t stream;
};

static void *brief_thread(void *arg)
{
    struct brief_life *b = arg;
    who = "short-lived";
    struct nd_rng r = nd_rng_for(b->stream);
    for (int i = 0; i < 24; i++) {
        size_t size = nd_rng_below(&r, 8) ? size_between(&r, 1, 4096)
                                          : size_between(&r, 4097, 300 * S_KiB);
        void *p = A->malloc(size);
        EXPECT(p != NULL, "%s(%zu) to succeed in a short-lived thread", nd_fn("malloc"), size);
        tag_block(p, size, 0x44);
        if (i < 8) {             /* left for the thread that started it */
            b->left[i] = p;
            b->left_size[i] = size;
        } else {
            A->free(p);
        }
    }
    return NULL;
}

static void *threads_worker(void *arg)
{
    worker_start("threads");
    (void)arg;
    for (uint64_t n = 0; !stopped(); n++) {
        struct brief_life b;
        memset(&b, 0, sizeof b);
        b.stream = 1000 + n;
        pthread_t t;
        int rc = pthread_create(&t, NULL, brief_thread, &b);
        EXPECT(rc == 0, "pthread_create of a short-lived thread to work (error %d)", rc);
        pthread_join(t, NULL);
        for (int i = 0; i < 8; i++) {
            check_tag(b.left[i], b.left_size[i], 0x44, "threads");
            A->free(b.left[i]);  /* blocks of a thread that has exited */
        }
        count(K_THREADS);
    }
    return NULL;
}

/* ---- statistics and maintenance ---------------------------------------------- */
static void *stats_worker(void *arg)
{
    worker_start("stats");
    (void)arg;
    static const char *const opts[] = { NULL, "json", "brief" };
    size_t cap = 1 << 20;
    char *buf = A->malloc(cap);
    EXPECT(buf != NULL, "a buffer for nodal_stats_json");
    for (unsigned i = 0; !stopped(); i++) {
        if (i % 4 == 3) {
            size_t n = nodal_stats_json(buf, cap);
            EXPECT(n > 0 && n < cap && buf[0] == '{', "nodal_stats_json to write an object that "
                   "fits %zu bytes, it needs %zu", cap, n);
        } else {
            EXPECT(nodal_stats_print(worker_out, opts[i % 4]) == 0,
                   "nodal_stats_print to /dev/null to succeed");
        }
        count(K_STATS);
    }
    A->free(buf);
    return NULL;
}

static void *maint_worker(void *arg)
{
    worker_start("maint");
    (void)arg;
    static const char *const names[] = { "tcache_count", "purge_delay", "secure", "check" };
    for (unsigned i = 0; !stopped(); i++) {
        switch (i % 8) {
        case 0: nodal_collect(0); break;
        case 1: nodal_collect(1); break;
        case 2: case 5: {
            nodal_memory_info mi;
            EXPECT(nodal_memory_info_get(&mi) == 0, "nodal_memory_info_get to succeed");
            break;
        }
        case 7: nodal_stats_reset(); break;
        default:
            EXPECT(nodal_option_get(names[i % 4]) >= 0, "nodal_option_get(\"%s\") to know it",
                   names[i % 4]);
            break;
        }
        count(K_MAINT);
    }
    return NULL;
}

static void *cxx_worker(void *arg)
{
    worker_start("cxx");
    (void)arg;
#if !defined(ND_TEST_PREFIX_ONLY)
    struct nd_rng r = nd_rng_for(500);
    for (unsigned i = 0; !stopped(); i++) {
        size_t n = nd_rng_below(&r, 8) ? size_between(&r, 1, 1024)
                                       : size_between(&r, 1025, 2 * S_MiB);
        void *p;
        switch (i % 4) {
        case 0:
            p = _Znwm(n);
            tag_block(p, n, 1);
            _ZdlPvm(p, n);
            break;
        case 1:
            p = _Znam(n);
            tag_block(p, n, 2);
            if (i & 4)
                _ZdaPvm(p, n);
            else
                _ZdaPv(p);
            break;
        case 2:
            p = _ZnwmSt11align_val_t(n, 4096);
            EXPECT(is_aligned(p, 4096), "operator new(%zu, align_val_t(4096)) to align", n);
            tag_block(p, n, 3);
            _ZdlPvSt11align_val_t(p, 4096);
            break;
        default:
            p = _Znwm(n);
            tag_block(p, n, 4);
            _ZdlPv(p);
            break;
        }
        count(K_CXX);
    }
#endif
    return NULL;
}

/* ---- the child ----------------------------------------------------------------- */
enum step {
    C_FORKED, C_SMALL, C_LARGE, C_HUGE, C_CALLOC, C_REALLOC, C_NODE, C_INHERITED, C_CXX,
    C_STATS_PRINT, C_STATS_JSON, C_MEMORY_INFO, C_COLLECT, C_OPTION_GET, C_EXIT_REPORT,
    C_EXIT, C_STEPS
};
static const char *const step_name[C_STEPS] = {
    "fork (before its first step)", "malloc/free of small blocks", "malloc/free of a large block",
    "malloc/free of a huge block", "calloc", "realloc through every size band",
    "nodal_malloc_node", "free of blocks the parent held", "operator new/delete",
    "nodal_stats_print", "nodal_stats_json", "nodal_memory_info_get", "nodal_collect",
    "nodal_option_get", "exit(0) (nodal's report at exit)", "_exit(0)",
};

#define HELD 32
static void *held[HELD];
static size_t held_size[HELD];

static int child_fd = -1;

static void mark(enum step s)
{
    unsigned char b = (unsigned char)s;
    ssize_t ignored = write(child_fd, &b, 1);
    (void)ignored;
}

/* The child's own failure: a line on stderr (no stdio lock), exit code. */
__attribute__((noreturn))
static void child_fail(int code, const char *what, size_t size)
{
    char line[200];
    int n = snprintf(line, sizeof line, "child %d: %s (%zu bytes) failed\n", (int)getpid(), what,
                     size);
    ssize_t ignored = write(2, line, n > 0 ? (size_t)n : 0);
    (void)ignored;
    _exit(code);
}

static void child_block(size_t size, int code)
{
    unsigned char *p = A->malloc(size);
    if (!p)
        child_fail(code, "malloc", size);
    memset(p, 0xa5, nd_min_size(size, 4096));
    p[size - 1] = 0x5a;
    if (p[0] != 0xa5 || p[size - 1] != 0x5a)
        child_fail(code + 1, "a block's contents", size);
    A->free(p);
}

/* Every child: small and huge blocks, nodal_stats_print, an exit. Odd
   children also a large block, calloc, a realloc chain through every size
   band, a node block and the frees of the blocks the parent held, and
   nodal_memory_info_get; even ones the C++ operators, nodal_stats_json,
   nodal_collect and nodal_option_get. Children f with f % 4 < 2 end with
   exit(0) under --exit-report=1, the others with _exit(0). */
__attribute__((noreturn))
static void child_main(long f, int fd, int exit_report)
{
    static char json[1 << 20];
    static const char *const opts[] = { NULL, "json", "brief" };
    nd_child_watched();   /* not a moment longer than the parent; gdb may attach */
    signal(SIGABRT, SIG_DFL);            /* the parent reports the child's death */
    signal(SIGSEGV, SIG_DFL);
    signal(SIGBUS, SIG_DFL);
    alarm(660);   /* the parent's watch (wall_s 600) comes first */
    child_fd = fd;
    mark(C_SMALL);
    for (size_t s = 8; s <= 8192; s = s * 3 + 1)
        child_block(s, 10);
    mark(C_HUGE);
    child_block(3 * S_MiB + 100, 12);
    if (f & 1) {
        mark(C_LARGE);
        child_block(300 * S_KiB, 14);
        mark(C_CALLOC);
        unsigned char *z = A->calloc(100, 37);
        if (!z || nd_zero_check_full(z, 3700) != SIZE_MAX)
            child_fail(16, "calloc", 3700);
        A->free(z);
        mark(C_REALLOC);
        static const size_t chain[] = { 16, 5000, 200 * 1024, 2 * 1024 * 1024 + 5, 40 };
        void *p = NULL;
        for (size_t i = 0; i < sizeof chain / sizeof chain[0]; i++) {
            p = A->realloc(p, chain[i]);
            if (!p)
                child_fail(17, "realloc", chain[i]);
            ((unsigned char *)p)[chain[i] - 1] = 1;
        }
        A->free(p);
        mark(C_NODE);
        p = nodal_malloc_node(5000, node_ids[(f / 2) % node_count]);
        if (!p)
            child_fail(18, "nodal_malloc_node", 5000);
        A->free(p);
        mark(C_INHERITED);
        for (int i = 0; i < HELD; i++) {
            const unsigned char *h = held[i];
            if (h[0] != (unsigned char)i ||
                (held_size[i] > 1 && h[held_size[i] - 1] != (unsigned char)(i ^ 0x5a)))
                child_fail(19, "an inherited block's contents", held_size[i]);
            A->free(held[i]);
        }
    } else {
#if !defined(ND_TEST_PREFIX_ONLY)
        if (kind_on[K_CXX]) {
            mark(C_CXX);
            void *q = _Znwm(100);
            _ZdlPvm(q, 100);
            q = _Znam(3 * S_MiB);
            _ZdaPv(q);
        }
#endif
    }
    mark(C_STATS_PRINT);
    if (nodal_stats_print(child_out, opts[f % 3]) != 0)
        child_fail(20, "nodal_stats_print", 0);
    if (f & 1) {
        mark(C_MEMORY_INFO);
        nodal_memory_info mi;
        if (nodal_memory_info_get(&mi) != 0)
            child_fail(22, "nodal_memory_info_get", 0);
    } else {
        mark(C_STATS_JSON);
        size_t n = nodal_stats_json(json, sizeof json);
        if (n == 0 || n >= sizeof json || json[0] != '{')
            child_fail(21, "nodal_stats_json", n);
        mark(C_COLLECT);
        nodal_collect((int)((f / 2) & 1));
        mark(C_OPTION_GET);
        if (nodal_option_get("tcache_count") < 0)
            child_fail(23, "nodal_option_get", 0);
    }
    if (exit_report && f % 4 < 2) {
        mark(C_EXIT_REPORT);
        exit(0);
    }
    mark(C_EXIT);
    _exit(0);
}

/* ---- the parent's side ------------------------------------------------------------- */

/* Time the children spent in each step (from its marker to the next). */
static double step_ms[C_STEPS];

/* Waits for the child of fork `f`, watched by w (proc.h: stuck when it
   sleeps without CPU for w->quiet_s, has used w->cpu_s of CPU or lived
   w->wall_s; a child a loaded machine starves is runnable, so slow, not
   stuck); returns how long it took (ms). */
static double wait_child(pid_t pid, int fd, long f, long forks, const struct nd_watch *w)
{
    double t0 = now_ms(), since = t0;
    int last = C_FORKED, open_pipe = 1;
    struct nd_watching watching;
    nd_watch_begin(&watching, pid);
    double next_check = t0 + 100;
    while (open_pipe) {
        double left = next_check - now_ms();
        if (left <= 0) {
            next_check = now_ms() + 100;
            char what[96], msg[256];
            snprintf(what, sizeof what, "the child of fork %ld, last in %s,", f, step_name[last]);
            if (nd_watch_check(&watching, w, what, msg, sizeof msg) != NULL) {
                kill(pid, SIGKILL);
                while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                    ;
                FAIL("the child of fork %ld (of %ld) to exit: %s (killed it; a lock held across "
                     "fork? its threads' stacks are above)", f, forks, msg);
            }
            continue;
        }
        struct pollfd pfd = { fd, POLLIN, 0 };
        int rc = poll(&pfd, 1, left < 1 ? 1 : (int)left);
        if (rc < 0 && errno != EINTR)
            FAIL("poll on the child's pipe to work (errno %d)", errno);
        if (rc <= 0)
            continue;
        unsigned char buf[64];
        ssize_t got = read(fd, buf, sizeof buf);
        double at = now_ms();
        step_ms[last] += at - since;
        since = at;
        if (got <= 0)
            open_pipe = 0;       /* the child has gone (or is going) */
        else if (buf[got - 1] < C_STEPS)
            last = buf[got - 1];
    }
    close(fd);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0,
           "the child of fork %ld (of %ld) to exit 0; it %s after %s (its last marker)", f, forks,
           nd_describe_status(st), step_name[last]);
    return now_ms() - t0;
}

static void fork_during_every_kind_of_call_gives_children_that_finish(void)
{
    A = nd_api();
    long forks = nd_opt_long("forks", 1000);
    /* A child needs a few milliseconds of CPU; one asleep for quiet-s
       without using any is stuck (a lock its fork copied held), as is one
       that used 60 s of CPU (a spin) or lived 600 s. Not wall time alone:
       a child a loaded machine starves is slow, not stuck (h54f). */
    const struct nd_watch watch = {
        .quiet_s = (unsigned)nd_opt_long("quiet-s", 5),
        .cpu_s = 60,
        .wall_s = 600,
    };
    long settle_us = nd_opt_long("settle-us", 1000);
#ifdef ND_TEST_SANITIZER
    int exit_report = (int)nd_opt_long("exit-report", 0);
#else
    int exit_report = (int)nd_opt_long("exit-report", 1);
#endif
    const char *without = "";
    for (int i = 0; i < nd_opt_count; i++)
        if (strcmp(nd_opt_keys[i], "without") == 0)
            without = nd_opt_vals[i];
    struct nd_rng r = nd_rng_for(0);
    node_count = nodal_node_ids(node_ids, NODAL_MAX_NODES);
    EXPECT(node_count >= 1, "nodal_node_ids to name a node, got %d", node_count);
    if (node_count > NODAL_MAX_NODES)
        node_count = NODAL_MAX_NODES;
    for (int k = 0; k < K_COUNT; k++) {
        const char *at = strstr(without, kind_name[k]);
        size_t len = strlen(kind_name[k]);
        kind_on[k] = !(at && (at == without || at[-1] == ',') && (at[len] == ',' || !at[len]));
    }
    if (!cxx_present())
        kind_on[K_CXX] = 0;
#if !defined(ND_TEST_PREFIX_ONLY)
    if (kind_on[K_CXX]) {
        void *p = _Znwm(64);
        EXPECT(nodal_node_of(p) >= 0, "operator new to return a block from nodal");
        _ZdlPv(p);
    }
#endif
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal;
    sigaction(SIGABRT, &sa, NULL);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    worker_out = fopen("/dev/null", "w");
    child_out = fopen("/dev/null", "w");
    EXPECT(worker_out && child_out, "/dev/null to open for writing");
    setvbuf(child_out, child_out_buf, _IOFBF, sizeof child_out_buf);
    for (int i = 0; i < HELD; i++) {
        held_size[i] = nd_rng_below(&r, 8) ? size_between(&r, 1, 2048)
                                           : size_between(&r, 2049, 2 * S_MiB);
        held[i] = A->malloc(held_size[i]);
        EXPECT(held[i] != NULL, "%s(%zu) to succeed", nd_fn("malloc"), held_size[i]);
        tag_block(held[i], held_size[i], (unsigned char)i);
    }

    void *(*const body[K_COUNT])(void *) = {
        ring_worker, ring_worker, ring_worker, node_worker, remote_producer, realloc_worker,
        threads_worker, stats_worker, maint_worker, cxx_worker,
    };
    pthread_t tid[K_COUNT + 1];
    int started = 0;
    pthread_t consumer;
    for (int k = 0; k < K_COUNT; k++) {
        if (!kind_on[k])
            continue;
        int rc = pthread_create(&tid[started++], NULL, body[k], (void *)(intptr_t)k);
        EXPECT(rc == 0, "pthread_create of the %s worker to work (error %d)", kind_name[k], rc);
    }
    if (kind_on[K_REMOTE])
        EXPECT(pthread_create(&consumer, NULL, remote_consumer, NULL) == 0,
               "pthread_create of the remote consumer to work");
    /* Every worker under way before the first fork. */
    for (int k = 0; k < K_COUNT; k++)
        while (kind_on[k] && atomic_load(&kind_ops[k]) == 0)
            sched_yield();

    double slowest = 0, total_ms = 0, t_start = now_ms(), fork_ms = 0, resume_ms = 0;
    long slowest_at = 0;
    for (long f = 1; f <= forks; f++) {
        /* The workers back at work: a random pause, then until each kind
           has made a call since the last child (--settle-us, 1 ms, at most). */
        long before[K_COUNT];
        double t_resume = now_ms();
        for (int k = 0; k < K_COUNT; k++)
            before[k] = atomic_load(&kind_ops[k]);
        struct timespec pause = { 0, (long)nd_rng_below(&r, 500) * 1000 };
        nanosleep(&pause, NULL);
        for (double until = now_ms() + (double)settle_us / 1e3; now_ms() < until;) {
            int all = 1;
            for (int k = 0; k < K_COUNT; k++)
                all &= !kind_on[k] || atomic_load(&kind_ops[k]) > before[k];
            if (all)
                break;
            struct timespec tick = { 0, 100 * 1000 };
            nanosleep(&tick, NULL);
        }
        int pfd[2];
        EXPECT(pipe(pfd) == 0, "pipe() to work (errno %d)", errno);
        fflush(stdout);
        fflush(stderr);
        double t_fork = now_ms();
        resume_ms += t_fork - t_resume;
        pid_t pid = fork();
        EXPECT(pid >= 0, "fork %ld to work (errno %d)", f, errno);
        if (pid == 0) {
            close(pfd[0]);
            child_main(f, pfd[1], exit_report);
        }
        fork_ms += now_ms() - t_fork;
        close(pfd[1]);
        set_hold(1);
        double ms = wait_child(pid, pfd[0], f, forks, &watch);
        atomic_store(&forks_done, f);
        set_hold(0);
        total_ms += ms;
        if (ms > slowest) {
            slowest = ms;
            slowest_at = f;
        }
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    if (kind_on[K_REMOTE])
        pthread_join(consumer, NULL);
    while (mail_count > 0) {      /* what the consumer left */
        A->free(mail[mail_head]);
        mail_head = (mail_head + 1) % MAIL;
        mail_count--;
    }
    for (int i = 0; i < HELD; i++)
        A->free(held[i]);
    fclose(worker_out);
    fclose(child_out);

    char ops[512];
    size_t n = 0;
    for (int k = 0; k < K_COUNT && n < sizeof ops; k++)
        n += (size_t)snprintf(ops + n, sizeof ops - n, "%s%s %ld%s", k ? ", " : "", kind_name[k],
                              atomic_load(&kind_ops[k]), kind_on[k] ? "" : " (left out)");
    int top = 0;
    for (int i = 1; i < C_STEPS; i++)
        if (step_ms[i] > step_ms[top])
            top = i;
    printf("%s: %ld children exited, on average %.1f ms after their fork (%.1f ms of it in %s), "
           "the slowest %.0f ms (fork %ld); %.1f s in all; worker calls: %s\n", nd_case_name,
           forks, forks ? total_ms / (double)forks : 0.0,
           forks ? step_ms[top] / (double)forks : 0.0, step_name[top], slowest, slowest_at,
           (now_ms() - t_start) / 1e3, ops);
    if (nd_opt_long("verbose", 0))
        printf("  %-40s %8.2f ms per fork\n  %-40s %8.2f ms per fork\n", "fork() in the parent",
               forks ? fork_ms / (double)forks : 0.0, "workers back at work",
               forks ? resume_ms / (double)forks : 0.0);
    if (nd_opt_long("verbose", 0))
        for (int i = 0; i < C_STEPS; i++)
            printf("  %-40s %8.2f ms per child\n", step_name[i],
                   forks ? step_ms[i] / (double)forks : 0.0);
}

static const struct nd_case cases[] = {
    ND_CASE(fork_during_every_kind_of_call_gives_children_that_finish),
};
ND_MAIN(cases)
