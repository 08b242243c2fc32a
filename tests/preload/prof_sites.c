/*
 * prof_sites.c - the heap profile's test program (run by profile.sh with
 * nodal preloaded and prof=1). Modes:
 *   sites [node0 node1]  60 / 30 / 10 % of the live bytes from site_a,
 *                        site_b, site_c (with two nodes: site_a's blocks
 *                        on node0, site_b's on node1, site_c plain), a leak
 *                        at site_leak, and churn (freed at once) at
 *                        site_churn; then nodal_profile_dump(argv[2]).
 *   safety               fork (the child allocates and exits), thread churn,
 *                        and a signal whose handler allocates arriving
 *                        while the threads allocate: must end, no deadlock.
 *   growth DIR           (prof_growth set, prefix DIR/p.%p) grows its live
 *                        bytes by 4 MiB, waits for the helper thread's
 *                        numbered dump 0 marked "(growth)", frees and takes
 *                        the same bytes again (no growth), then grows by
 *                        4 MiB more and waits for dump 1 "(growth)"; waits
 *                        at most 40 s for each (no time is asserted).
 */
#include <nodal.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static int node_a = -1, node_b = -1;

void *get(size_t n, int node);
void *get(size_t n, int node)
{
    void *p = node >= 0 ? nodal_malloc_node(n, node) : malloc(n);
    if (p == NULL) {
        perror("prof_sites: malloc");
        exit(1);
    }
    memset(p, 1, n);
    return p;
}

/* Each touches its block after the call, so that no call is a tail call
   (which would leave no frame of the site in the stack). */
static void *touched(void *p) { ((volatile char *)p)[0] = 2; return p; }
__attribute__((noinline)) void *site_a(size_t n) { return touched(get(n, node_a)); }
__attribute__((noinline)) void *site_b(size_t n) { return touched(get(n, node_b)); }
__attribute__((noinline)) void *site_c(size_t n) { return touched(get(n, -1)); }
__attribute__((noinline)) void *site_leak(size_t n) { return touched(get(n, -1)); }
__attribute__((noinline)) void site_churn(size_t n) { free(touched(get(n, -1))); }

static int sites(int argc, char **argv)
{
    if (argc >= 5) {
        node_a = atoi(argv[3]);
        node_b = atoi(argv[4]);
    }
    /* Three sizes per site, so classes and large blocks are all sampled. */
    static const size_t sizes[] = { 48, 640, 20000 };
    enum { N = 600 };   /* 41 MB live */
    void **keep = calloc(N * 10, sizeof *keep);
    size_t k = 0;
    for (int i = 0; i < N; i++) {
        size_t n = sizes[i % 3];   /* 10 blocks a round: 6 from a, 3 from b, 1 from c */
        for (int j = 0; j < 6; j++)
            keep[k++] = site_a(n);
        for (int j = 0; j < 3; j++)
            keep[k++] = site_b(n);
        keep[k++] = site_c(n);
        site_churn(n * 4);
    }
    for (int i = 0; i < 300; i++)
        (void)site_leak(4096);   /* never freed */
    if (nodal_profile_dump(argv[2]) != 0) {
        perror("nodal_profile_dump");
        return 1;
    }
    for (size_t i = 0; i < k; i++)
        free(keep[i]);
    free(keep);
    return 0;
}

static volatile sig_atomic_t stop;

static void on_alarm(int sig)
{
    (void)sig;
    /* malloc in a handler is not async-signal-safe by POSIX, but programs
       do it, and nodal must not deadlock or recurse when it arrives inside
       a sampled malloc. */
    free(malloc(1000));
}

static void *churn(void *arg)
{
    (void)arg;
    for (int i = 0; i < 20000 && !stop; i++) {
        void *p = malloc((size_t)(i % 4000) + 1);
        free(p);
    }
    return NULL;
}

static int safety(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = { { 0, 200 }, { 0, 200 } };
    setitimer(ITIMER_REAL, &it, NULL);
    for (int round = 0; round < 20; round++) {   /* thread churn */
        pthread_t t[4];
        for (int i = 0; i < 4; i++)
            pthread_create(&t[i], NULL, churn, NULL);
        if (round % 5 == 0) {   /* a fork while the threads allocate */
            pid_t pid = fork();
            if (pid == 0) {
                churn(NULL);
                void *leak = malloc(300000);
                (void)leak;
                exit(0);
            }
            int st;
            waitpid(pid, &st, 0);
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                fprintf(stderr, "prof_sites: the forked child failed\n");
                return 1;
            }
        }
        for (int i = 0; i < 4; i++)
            pthread_join(t[i], NULL);
    }
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &off, NULL);
    if (nodal_profile_dump(NULL) != 0) {
        perror("nodal_profile_dump");
        return 1;
    }
    /* The signal's dump: the helper thread writes the next numbered file. */
    raise(SIGUSR2);
    sleep(1);
    puts("safety: done");
    return 0;
}

/* Waits for DIR/p.PID.N.txt and checks its first line names the growth. */
static int wait_for_growth_dump(const char *dir, int n)
{
    char path[4096], line[512];
    snprintf(path, sizeof path, "%s/p.%d.%d.txt", dir, (int)getpid(), n);
    for (int i = 0; i < 400; i++) {
        FILE *f = fopen(path, "r");
        if (f != NULL) {
            bool whole = fgets(line, sizeof line, f) != NULL && strchr(line, '\n') != NULL;
            fclose(f);
            if (whole) {
                if (strstr(line, "(growth)") != NULL)
                    return 0;
                fprintf(stderr, "prof_sites growth: %s is not a growth dump: %s", path, line);
                return 1;
            }
        }
        usleep(100 * 1000);
    }
    fprintf(stderr, "prof_sites growth: no %s within 40 s\n", path);
    return 1;
}

enum { GROW_BLOCKS = 4096, GROW_SIZE = 1024 };   /* 4 MiB a step */

static int growth(const char *dir)
{
    static void *a[GROW_BLOCKS], *b[GROW_BLOCKS];
    for (int i = 0; i < GROW_BLOCKS; i++)
        a[i] = site_a(GROW_SIZE);
    if (wait_for_growth_dump(dir, 0) != 0)
        return 1;
    /* The same live bytes again: no growth since dump 0. */
    for (int i = 0; i < GROW_BLOCKS; i++) {
        free(a[i]);
        a[i] = site_a(GROW_SIZE);
    }
    for (int i = 0; i < GROW_BLOCKS; i++)
        b[i] = site_b(GROW_SIZE);
    if (wait_for_growth_dump(dir, 1) != 0)
        return 1;
    for (int i = 0; i < GROW_BLOCKS; i++) {
        free(a[i]);
        free(b[i]);
    }
    puts("growth: done");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "sites") == 0)
        return sites(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "safety") == 0)
        return safety();
    if (argc >= 3 && strcmp(argv[1], "growth") == 0)
        return growth(argv[2]);
    fprintf(stderr, "usage: prof_sites sites DUMP [NODE_A NODE_B] | safety | growth DIR\n");
    return 2;
}
