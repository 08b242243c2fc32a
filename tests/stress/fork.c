/*
 * fork.c - fork() while other threads are in the middle of allocating: the
 * child must be able to allocate and free (no lock left held by a thread that
 * does not exist in the child), see the parent's blocks intact, and exit 0;
 * the parent carries on undisturbed.
 *
 * Knobs: --forks=N (25), --threads=N (3), --child-threads=0|1 (1; TSan
 * builds use 0: it does not support threads in a child of a threaded
 * process), --quiet-s=N (30).
 *
 * The parent watches each child (proc.h, nd_wait_watched): a child that
 * sleeps --quiet-s seconds without using any CPU, or uses 60 s of CPU, or
 * lives 600 s is stuck; its threads' states, wait channels and stacks (gdb)
 * go to stderr before it is killed. A child that is runnable but starved
 * (a loaded machine) is not stuck.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

#include "api.h"
#include "check.h"
#include "pattern.h"
#include "proc.h"
#include "sizes.h"

#define HELD 256                     /* blocks the main thread holds across forks */
static void *held[HELD];
static size_t held_size[HELD];
static atomic_int stop;
static atomic_long worker_ops;

static void *worker(void *arg)
{
    const struct nd_api *A = nd_api();
    struct nd_rng r = nd_rng_for(10 + (uint64_t)(intptr_t)arg);
    enum { N = 128 };
    void *p[N] = { 0 };
    size_t sz[N] = { 0 };
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        size_t i = nd_rng_below(&r, N);
        if (p[i]) {
            size_t bad = nd_pat_check(p[i], sz[i], sz[i], (uintptr_t)p[i]);
            EXPECT(bad == SIZE_MAX, "a worker's %zu-byte block to stay intact while the main "
                   "thread forks, byte %zu differs", sz[i], bad);
            if (nd_rng_below(&r, 2)) {
                A->free(p[i]);
                p[i] = NULL;
                continue;
            }
            size_t to = nd_random_size(&r, 0);
            void *q = A->realloc(p[i], to);
            EXPECT(q != NULL, "%s to %zu bytes to succeed", nd_fn("realloc"), to);
            p[i] = q;
            sz[i] = to;
        } else {
            sz[i] = nd_random_size(&r, 0);
            p[i] = A->malloc(sz[i]);
            EXPECT(p[i] != NULL, "%s(%zu) to succeed", nd_fn("malloc"), sz[i]);
        }
        nd_pat_fill(p[i], sz[i], (uintptr_t)p[i]);
        atomic_fetch_add_explicit(&worker_ops, 1, memory_order_relaxed);
    }
    for (size_t i = 0; i < N; i++)
        A->free(p[i]);
    return NULL;
}

static void *child_thread(void *arg)
{
    const struct nd_api *A = nd_api();
    (void)arg;
    for (size_t s = 1; s < ((size_t)4 << 20); s = s * 2 + 3) {
        void *p = A->malloc(s);
        if (!p)
            _exit(11);
        nd_pat_fill(p, s, (uintptr_t)p);
        if (nd_pat_check(p, s, s, (uintptr_t)p) != SIZE_MAX)
            _exit(12);
        A->free(p);
    }
    return NULL;
}

/* The child: check what it inherited, allocate and free across every size,
   free the inherited blocks, exit 0. Exit codes name what went wrong. */
static void child_main(long child_threads)
{
    const struct nd_api *A = nd_api();
    for (size_t i = 0; i < HELD; i++) {
        if (nd_pat_check(held[i], held_size[i], held_size[i], (uintptr_t)held[i]) != SIZE_MAX) {
            fprintf(stderr, "child: inherited block %zu (%zu bytes) is not intact\n", i,
                    held_size[i]);
            _exit(20);
        }
    }
    struct nd_rng r = { (uint64_t)getpid() };
    void *p[32];
    size_t sz[32];
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < 32; i++) {
            sz[i] = nd_random_size(&r, round == 0 ? 30 : 0);   /* a huge block now and then */
            p[i] = A->malloc(sz[i]);
            if (!p[i]) {
                fprintf(stderr, "child: malloc(%zu) failed\n", sz[i]);
                _exit(21);
            }
            nd_pat_fill(p[i], sz[i], (uintptr_t)p[i]);
        }
        for (int i = 0; i < 32; i++) {
            if (nd_pat_check(p[i], sz[i], sz[i], (uintptr_t)p[i]) != SIZE_MAX) {
                fprintf(stderr, "child: a %zu-byte block it allocated is not intact\n", sz[i]);
                _exit(22);
            }
            A->free(p[i]);
        }
    }
    if (child_threads) {
        pthread_t t;
        if (pthread_create(&t, NULL, child_thread, NULL) != 0)
            _exit(23);
        pthread_join(t, NULL);
    }
    for (size_t i = 0; i < HELD; i++)
        A->free(held[i]);
    exit(0);
}

static void fork_while_other_threads_allocate_gives_a_working_child(void)
{
    const struct nd_api *A = nd_api();
    int threads = (int)nd_opt_long("threads", 3);
    long forks = nd_opt_long("forks", 25);
    long child_threads = nd_opt_long("child-threads", 1);
    /* A child needs a few tenths of a second of CPU (0.11 s on average
       here, 0.15 s under TSan), but on a loaded machine it may wait far
       longer than that for a CPU: under TSan at load 20-38 and nice 5-10,
       children runnable all along took 20-118 s (docs/results.md, h54f),
       which the 30 s alarm before took for a hang. It is stuck if it
       sleeps 30 s without using any CPU (a lock no thread will release),
       or has used 60 s (a spin), or is still there after 600 s. */
    const struct nd_watch watch = {
        .quiet_s = (unsigned)nd_opt_long("quiet-s", 30),
        .cpu_s = 60,
        .wall_s = 600,
    };
    struct nd_rng r = nd_rng_for(0);
    for (size_t i = 0; i < HELD; i++) {
        held_size[i] = nd_random_size(&r, 10);
        held[i] = A->malloc(held_size[i]);
        EXPECT(held[i] != NULL, "%s(%zu) to succeed", nd_fn("malloc"), held_size[i]);
        nd_pat_fill(held[i], held_size[i], (uintptr_t)held[i]);
    }
    pthread_t tid[16];
    if (threads > 16)
        threads = 16;
    for (int t = 0; t < threads; t++)
        EXPECT(pthread_create(&tid[t], NULL, worker, (void *)(intptr_t)t) == 0,
               "pthread_create to work");
    for (long f = 0; f < forks; f++) {
        /* Let the workers get going (and the main thread allocate too). */
        long start = atomic_load(&worker_ops);
        while (atomic_load(&worker_ops) < start + 200) {
            void *p = A->malloc(64 + (size_t)f);
            A->free(p);
        }
        pid_t pid = nd_fork_watched();
        if (pid == 0) {
            alarm(watch.wall_s + 60);   /* the parent's watch comes first */
            child_main(child_threads);
        }
        char what[64];
        snprintf(what, sizeof what, "child %ld", f + 1);
        bool stuck;
        int st = nd_wait_watched(pid, &watch, what, &stuck);
        EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0,
               "child %ld forked while %d threads allocate to exit 0; it %s%s", f + 1, threads,
               nd_describe_status(st),
               stuck ? " (stuck: a lock held across fork? its threads' stacks are above)" : "");
    }
    atomic_store(&stop, 1);
    for (int t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);
    for (size_t i = 0; i < HELD; i++) {
        size_t bad = nd_pat_check(held[i], held_size[i], held_size[i], (uintptr_t)held[i]);
        EXPECT(bad == SIZE_MAX, "the parent's %zu-byte block to be intact after %ld forks, byte "
               "%zu differs", held_size[i], forks, bad);
        A->free(held[i]);
    }
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    printf("%ld children forked and exited 0 while %d threads ran %ld operations; the children "
           "used %.2f s of CPU in all\n", forks, threads, atomic_load(&worker_ops),
           (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
               (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
}

/* The watch itself (proc.h): a child blocked for good (a read no one will
   answer, as a lock no thread will release) is found stuck within its
   quiet time and its stacks are shown, the kernel's wait channel at
   least; a child that keeps using CPU for longer than the quiet time, on a
   machine however loaded, is not stuck and its status comes back. */
static void a_stuck_child_is_shown_and_killed_a_busy_one_is_left_to_finish(void)
{
    int pfd[2], log_fd;
    char log_path[] = "/tmp/nodal-watch-XXXXXX";
    EXPECT(pipe(pfd) == 0, "pipe() to work (errno %d)", errno);
    log_fd = mkstemp(log_path);
    EXPECT(log_fd >= 0, "mkstemp to work (errno %d)", errno);
    unlink(log_path);
    pid_t pid = nd_fork_watched();
    if (pid == 0) {
        close(pfd[1]);
        char c;
        (void)!read(pfd[0], &c, 1);   /* never answered: the parent holds the write end */
        _exit(0);
    }
    close(pfd[0]);
    /* The dump goes to stderr: catch it in a file for the check. */
    int saved = dup(2);
    dup2(log_fd, 2);
    const struct nd_watch quick = { .quiet_s = 2, .cpu_s = 60, .wall_s = 600 };
    bool stuck = false;
    int st = nd_wait_watched(pid, &quick, "the blocked child", &stuck);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(pfd[1]);
    char dump[16384];
    ssize_t n = pread(log_fd, dump, sizeof dump - 1, 0);
    close(log_fd);
    dump[n > 0 ? n : 0] = '\0';
    fputs(dump, stderr);
    EXPECT(stuck && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
           "a child blocked in read() to be found stuck and killed; it %s, stuck %d",
           nd_describe_status(st), (int)stuck);
    char expect[96];
    snprintf(expect, sizeof expect, "---- pid %d: the blocked child stuck after", (int)pid);
    EXPECT(strstr(dump, expect) != NULL && strstr(dump, "  thread ") != NULL &&
               strstr(dump, "---- end of pid") != NULL,
           "the stuck child's threads to be listed on stderr; got: %s", dump);
    EXPECT(strstr(dump, " S ") != NULL, "the blocked child's thread to be asleep (state S); got: %s",
           dump);
    if (strstr(dump, "no gdb") == NULL)
        EXPECT(strstr(dump, "#0 ") != NULL && strstr(dump, "read") != NULL,
               "gdb's stack of the blocked child to show its read(); got: %s", dump);

    /* Busy for 2 s of its own CPU, with a quiet time of 1 s: never quiet. */
    pid = nd_fork_watched();
    if (pid == 0) {
        for (;;) {
            struct rusage ru;
            getrusage(RUSAGE_SELF, &ru);
            if (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec >= 2)
                _exit(7);
        }
    }
    const struct nd_watch busy = { .quiet_s = 1, .cpu_s = 60, .wall_s = 3600 };
    st = nd_wait_watched(pid, &busy, "the busy child", &stuck);
    EXPECT(!stuck && WIFEXITED(st) && WEXITSTATUS(st) == 7,
           "a child using CPU for longer than the quiet time to be left to finish; it %s, "
           "stuck %d", nd_describe_status(st), (int)stuck);
}

static const struct nd_case cases[] = {
    ND_CASE(fork_while_other_threads_allocate_gives_a_working_child),
    ND_CASE(a_stuck_child_is_shown_and_killed_a_busy_one_is_left_to_finish),
};
ND_MAIN(cases)
