/*
 * aslimit.c - an address-space limit (`ulimit -v`): how much of it an
 * allocator lets the program use, and whether small requests still succeed
 * once large ones fail.
 *
 * For each block size in -s (default 1 MiB), or in -r LO-HI[:N] (N sizes,
 * default 16, spread evenly from LO to HI, both included; sizes take K, M
 * suffixes: `-r 16K-128K:29` is every 4 KiB), a child process is forked that
 * sets RLIMIT_AS to -v bytes (default 200 MiB; like `ulimit -v 204800`, the
 * limit covers the whole address space: program, libraries, the allocator's
 * own reservations) and then:
 *   1. allocates 100 blocks of 64 B and keeps them (the program's state);
 *   2. allocates blocks of the size, writing one byte of each, until malloc
 *      returns NULL: `blocks` is how many it got;
 *   3. with all of them still held, asks for -m blocks of -x bytes (default
 *      1,000 of 64 B): `small_ok_pct` is the share that succeeded; then the
 *      same in a thread started before step 2 that had not allocated
 *      (`idle_ok_pct`), and in a thread started now (`new_ok_pct`; -100 when
 *      pthread_create fails: its stack is address space too);
 *   4. frees every second large block and allocates as many again:
 *      `refill_pct` is the share of those that succeeded (freed address
 *      space being reused).
 * The counts live in a shared mapping made before the fork, so they are
 * reported even when the allocator kills the child (an abort on failure,
 * a fault in a thread's set-up that gets no memory): the result line then
 * has what the phases before the one it died in measured, and only that
 * (blocks, fill_pct and vm_start_mib once step 2 ended; small_ok_pct,
 * idle_ok_pct, new_ok_pct, refill_pct once their part ended), a `note:`
 * line names the signal and the part, and the run exits 1 after printing
 * them (bench/runner keeps such a run's results and lists the failure).
 *
 * Reported: blocks, small_ok_pct, refill_pct, fill_pct = blocks * size /
 * (limit - address space in use before step 2), vm_start_mib, the address
 * space in use when the limit was set, and bytes, the block size exactly
 * (`size` is in whole KiB). bench/aslimit-sweep.py compares allocators over
 * a range of sizes.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

struct counts {
    long blocks, small_ok, idle_ok, new_ok, refilled, refill_tried;
    long vm_start_kib, vm_before_kib;
    int phase;      /* the part under way: PHASE_* */
};

/* The parts of a child's run, in order: the one under way when it died
   names it, and the metrics of the parts before it are the ones reported. */
enum { PHASE_START = 1, PHASE_FILL, PHASE_SMALL, PHASE_IDLE, PHASE_NEW, PHASE_REFILL, PHASE_DONE };
static const char *const phase_names[] = {
    "", "start", "fill (step 2)", "small requests (step 3)", "the idle thread's small requests (step 3)",
    "a new thread's small requests (step 3)", "refill (step 4)", "done",
};

struct smalls_job {
    size_t size;
    long n, *ok;
    sem_t *go;   /* waited for first, when not NULL */
};

/* n blocks of `size` bytes, written and kept: how many it got. */
static void *smalls_run(void *arg)
{
    struct smalls_job *j = arg;
    while (j->go != NULL && sem_wait(j->go) != 0)
        ;
    for (long i = 0; i < j->n; i++) {
        char *p = malloc(j->size);
        if (p != NULL) {
            memset(p, 4, j->size);
            (*j->ok)++;
        }
    }
    return NULL;
}

static void child(struct counts *out, size_t size, long long limit, size_t small, long nsmall)
{
    out->phase = PHASE_START;
    out->vm_start_kib = bench_vm_kib();
    /* The idle thread: started before the limit, waits without allocating. */
    static sem_t go;
    if (sem_init(&go, 0, 0) != 0)
        _exit(4);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 << 10);
    struct smalls_job idle = { small, nsmall, &out->idle_ok, &go }, late = { small, nsmall, &out->new_ok, NULL };
    pthread_t idle_t, late_t;
    if (pthread_create(&idle_t, &attr, smalls_run, &idle) != 0)
        _exit(4);
    struct rlimit rl = { (rlim_t)limit, (rlim_t)limit };
    if (setrlimit(RLIMIT_AS, &rl) != 0)
        _exit(3);
    void *state[100];
    for (int i = 0; i < 100; i++) {
        state[i] = malloc(64);
        if (!state[i])
            _exit(4);
        memset(state[i], 1, 64);
    }
    long cap = (long)(limit / (long long)size) + 64;
    char **big = calloc((size_t)cap, sizeof *big);
    void **smalls = calloc((size_t)nsmall, sizeof *smalls);
    if (!big || !smalls)
        _exit(4);
    out->vm_before_kib = bench_vm_kib();
    out->phase = PHASE_FILL;
    long n = 0;
    while (n < cap) {
        char *p = malloc(size);
        if (!p)
            break;
        p[0] = 1;
        big[n++] = p;
        out->blocks = n;
    }
    out->phase = PHASE_SMALL;
    for (long i = 0; i < nsmall; i++) {
        smalls[i] = malloc(small);
        if (smalls[i]) {
            memset(smalls[i], 2, small);
            out->small_ok++;
        }
    }
    out->phase = PHASE_IDLE;
    sem_post(&go);
    pthread_join(idle_t, NULL);
    out->phase = PHASE_NEW;
    if (pthread_create(&late_t, &attr, smalls_run, &late) == 0)
        pthread_join(late_t, NULL);
    else
        out->new_ok = -nsmall;   /* reported as -100: no thread */
    out->phase = PHASE_REFILL;
    for (long i = 0; i < n; i += 2) {
        free(big[i]);
        big[i] = NULL;
        out->refill_tried++;
    }
    for (long i = 0; i < n; i += 2) {
        big[i] = malloc(size);
        if (big[i]) {
            big[i][0] = 3;
            out->refilled++;
        }
    }
    out->phase = PHASE_DONE;
    _exit(0);
}

#define ASLIMIT_MAX_SIZES 256

/* -r LO-HI[:N]: n sizes spread evenly from lo to hi, into sizes; how many. */
static int parse_range(const char *arg, long long *sizes)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", arg);
    char *dash = strchr(buf, '-'), *colon = strchr(buf, ':');
    long long n = 16;
    if (colon != NULL) {
        *colon = '\0';
        n = parse_size(colon + 1);
    }
    if (dash == NULL || n < 1 || n > ASLIMIT_MAX_SIZES)
        die("-r wants LO-HI[:N], N from 1 to %d", ASLIMIT_MAX_SIZES);
    *dash = '\0';
    long long lo = parse_size(buf), hi = parse_size(dash + 1);
    if (lo < 1 || hi < lo)
        die("-r wants 1 <= LO <= HI");
    if (lo == hi)
        n = 1;
    for (long long i = 0; i < n; i++)
        sizes[i] = n == 1 ? lo : lo + (hi - lo) * i / (n - 1);
    return (int)n;
}

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    static long long sizes[ASLIMIT_MAX_SIZES] = { 1 << 20 };
    long long limit = 200ll << 20;
    long long small = 64, nsmall = 1000;
    int nsizes = 1, opt, failed = 0;
    while ((opt = getopt(argc, argv, "s:r:v:x:m:P")) != -1) {
        switch (opt) {
        case 's': nsizes = parse_list(optarg, sizes, ASLIMIT_MAX_SIZES); break;
        case 'r': nsizes = parse_range(optarg, sizes); break;
        case 'v': limit = parse_size(optarg); break;
        case 'x': small = parse_size(optarg); break;
        case 'm': nsmall = parse_size(optarg); break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: aslimit [-s block sizes | -r LO-HI[:N]] [-v address-space limit] [-x small size] [-m small count] [-P]\n");
            return 2;
        }
    }
    if (small < 1 || nsmall < 1)
        die("need -x >= 1 and -m >= 1");
    struct counts *c = mmap(NULL, sizeof *c, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (c == MAP_FAILED)
        die("mmap failed");
    for (int i = 0; i < nsizes; i++) {
        size_t size = (size_t)sizes[i];
        if (size < 1)
            die("block size must be >= 1");
        memset(c, 0, sizeof *c);
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0)
            die("fork failed");
        if (pid == 0)
            child(c, size, limit, (size_t)small, (long)nsmall);
        int st = 0;
        if (waitpid(pid, &st, 0) != pid)
            die("waitpid failed");
        int reached = c->phase;   /* the part under way when it ended */
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            failed = 1;
            const char *part = reached >= PHASE_START && reached <= PHASE_DONE ? phase_names[reached] : "?";
            if (WIFSIGNALED(st))
                printf("note: size %zu: the child was killed by signal %d (%s) in %s\n", size,
                       WTERMSIG(st), strsignal(WTERMSIG(st)), part);
            else
                printf("note: size %zu: the child exited %d in %s\n", size, WEXITSTATUS(st), part);
        } else {
            reached = PHASE_DONE;
        }
        /* Only what the parts before `reached` measured. */
        char line[512];
        int len = 0;
        double room = (double)limit - (double)c->vm_before_kib * 1024.0;
#define ASLIMIT_PUT(...) \
        (len += snprintf(line + len, sizeof line - (size_t)len, __VA_ARGS__))
        if (reached > PHASE_FILL)
            ASLIMIT_PUT(" blocks=%ld fill_pct=%.1f vm_start_mib=%.1f", c->blocks,
                        room > 0 ? 100.0 * (double)c->blocks * (double)size / room : 0.0,
                        (double)c->vm_start_kib / 1024.0);
        if (reached > PHASE_SMALL)
            ASLIMIT_PUT(" small_ok_pct=%.1f", 100.0 * (double)c->small_ok / (double)nsmall);
        if (reached > PHASE_IDLE)
            ASLIMIT_PUT(" idle_ok_pct=%.1f", 100.0 * (double)c->idle_ok / (double)nsmall);
        if (reached > PHASE_NEW)
            ASLIMIT_PUT(" new_ok_pct=%.1f", 100.0 * (double)c->new_ok / (double)nsmall);
        if (reached > PHASE_REFILL)
            ASLIMIT_PUT(" refill_pct=%.1f",
                        c->refill_tried ? 100.0 * (double)c->refilled / (double)c->refill_tried : 0.0);
#undef ASLIMIT_PUT
        bench_result("aslimit", "size=%zuKiB limit=%lldMiB bytes=%zu%s", size >> 10, limit >> 20, size, line);
    }
    return failed;
}
