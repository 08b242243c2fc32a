/*
 * threadcost.c - what each thread costs in resident memory: N threads that
 * each make a few small requests and then wait, against none (issue 18: a
 * small program with a few threads should not pay much more than under
 * glibc's arenas).
 *
 * For each N of -n (default 0,1,4,16,64) the program runs itself again
 * (/proc/self/exe, same environment, so LD_PRELOAD carries over) with
 * -T N, -r times (default 3): the main thread makes -k requests (default
 * 64) of sizes uniform in [-a, -b] (default 16 .. 160 B), writing each
 * block, then starts N threads (default attributes: 8 MiB stacks, of which
 * they touch what they use) that do the same and wait; once all of them
 * hold their blocks the main thread reads its resident set
 * (/proc/self/statm) and lets them go. Per N it reports the median RSS of
 * the runs and, for N > 0, the cost per thread: (RSS(N) - RSS(0)) / N, in
 * KiB. The stack pages a thread touches (about 8 KiB with glibc's
 * pthread_create) are in every allocator's figure.
 *
 * -T N runs one measurement and prints "rss N KiB"; with -d it also writes
 * the mappings with resident pages (/proc/self/smaps: range, Rss KiB, name)
 * to stderr, for finding where the growth is.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_COUNTS 16
#define MAX_REPS   15

struct cfg {
    int requests;
    size_t min, max;
};

static struct cfg cfg = { 64, 16, 160 };
static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t  gate_cv = PTHREAD_COND_INITIALIZER;
static int ready, released;

/* -k blocks of [min, max] bytes, each written; returned for the caller to
   free. */
static void **take_blocks(uint64_t seed)
{
    uint64_t rng = rng_seed(seed, 0x7c05);
    void **p = malloc(sizeof *p * (size_t)cfg.requests);
    if (p == NULL)
        die("malloc of the block array failed");
    for (int i = 0; i < cfg.requests; i++) {
        size_t sz = cfg.min + rng_below(&rng, cfg.max - cfg.min + 1);
        p[i] = malloc(sz);
        if (p[i] == NULL)
            die("malloc(%zu) failed", sz);
        memset(p[i], 0x5a, sz);
    }
    return p;
}

static void give_back(void **p)
{
    for (int i = 0; i < cfg.requests; i++)
        free(p[i]);
    free(p);
}

static void *waiter(void *arg)
{
    void **p = take_blocks((uint64_t)(uintptr_t)arg + 1);
    pthread_mutex_lock(&gate);
    ready++;
    pthread_cond_broadcast(&gate_cv);
    while (!released)
        pthread_cond_wait(&gate_cv, &gate);
    pthread_mutex_unlock(&gate);
    give_back(p);
    return NULL;
}

static long statm_rss_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, res = -1;
    if (f == NULL)
        return -1;
    if (fscanf(f, "%ld %ld", &size, &res) != 2)
        res = -1;
    fclose(f);
    return res < 0 ? -1 : res * (sysconf(_SC_PAGESIZE) / 1024);
}

/* The mappings with resident pages, to stderr. */
static void dump_smaps(void)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512], head[512] = "";
    if (f == NULL)
        return;
    while (fgets(line, sizeof line, f) != NULL) {
        long kib;
        if (sscanf(line, "Rss: %ld kB", &kib) == 1) {
            if (kib > 0) {
                char range[128] = "", name[384] = "";
                sscanf(head, "%127s %*s %*s %*s %*s %383[^\n]", range, name);
                fprintf(stderr, "%-34s %7ld %s\n", range, kib, name);
            }
        } else {
            unsigned long lo, hi;
            if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
                snprintf(head, sizeof head, "%s", line);
        }
    }
    fclose(f);
}

static int measure(int n, int dump)
{
    void **mine = take_blocks(0);
    pthread_t *th = malloc(sizeof *th * (size_t)(n > 0 ? n : 1));
    if (th == NULL)
        die("malloc of the thread array failed");
    for (int i = 0; i < n; i++)
        if (pthread_create(&th[i], NULL, waiter, (void *)(uintptr_t)i) != 0)
            die("pthread_create failed at thread %d", i);
    pthread_mutex_lock(&gate);
    while (ready < n)
        pthread_cond_wait(&gate_cv, &gate);
    pthread_mutex_unlock(&gate);
    long rss = statm_rss_kib();
    if (dump)
        dump_smaps();
    pthread_mutex_lock(&gate);
    released = 1;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    free(th);
    give_back(mine);
    printf("rss %d %ld KiB\n", n, rss);
    return 0;
}

/* One child run of -T n; its RSS in KiB, or -1. */
static long run_child(int n)
{
    char tn[32], tk[32], ta[32], tb[32];
    snprintf(tn, sizeof tn, "%d", n);
    snprintf(tk, sizeof tk, "%d", cfg.requests);
    snprintf(ta, sizeof ta, "%zu", cfg.min);
    snprintf(tb, sizeof tb, "%zu", cfg.max);
    int fd[2];
    if (pipe(fd) != 0)
        die("pipe failed");
    pid_t pid = fork();
    if (pid < 0)
        die("fork failed");
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        execl("/proc/self/exe", bench_argv[0], "-T", tn, "-k", tk, "-a", ta, "-b", tb, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    char buf[128] = "";
    ssize_t got = read(fd[0], buf, sizeof buf - 1);
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    int m;
    long kib;
    if (got <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0
        || sscanf(buf, "rss %d %ld", &m, &kib) != 2 || m != n)
        return -1;
    return kib;
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    long long counts[MAX_COUNTS] = { 0, 1, 4, 16, 64 };
    int ncounts = 5, reps = 3, one = -1, dump = 0, opt;
    while ((opt = getopt(argc, argv, "n:r:k:a:b:T:dP")) != -1) {
        switch (opt) {
        case 'n': ncounts = parse_list(optarg, counts, MAX_COUNTS); break;
        case 'r': reps = atoi(optarg); break;
        case 'k': cfg.requests = atoi(optarg); break;
        case 'a': cfg.min = (size_t)parse_size(optarg); break;
        case 'b': cfg.max = (size_t)parse_size(optarg); break;
        case 'T': one = atoi(optarg); break;
        case 'd': dump = 1; break;
        case 'P': break;
        default:
            die("usage: threadcost [-n 0,1,4,16,64] [-r reps] [-k requests] [-a min] [-b max] [-T n [-d]]");
        }
    }
    if (cfg.requests < 1 || cfg.min < 1 || cfg.max < cfg.min || reps < 1 || reps > MAX_REPS)
        die("bad arguments");
    if (one >= 0)
        return measure(one, dump);

    long base = -1;
    for (int i = 0; i < ncounts; i++) {
        int n = (int)counts[i];
        long v[MAX_REPS];
        for (int r = 0; r < reps; r++)
            if ((v[r] = run_child(n)) < 0)
                die("the run with %d threads failed", n);
        qsort(v, (size_t)reps, sizeof v[0], cmp_long);
        long med = v[reps / 2];
        if (n == 0)
            base = med;
        if (n > 0 && base >= 0)
            bench_result("threadcost", "threads=%d rss_kib=%ld (%ld-%ld) per_thread_kib=%.1f", n, med, v[0],
                         v[reps - 1], (double)(med - base) / n);
        else
            bench_result("threadcost", "threads=%d rss_kib=%ld (%ld-%ld)", n, med, v[0], v[reps - 1]);
    }
    return 0;
}
