/*
 * unwind.c - unit tests of the heap profile's own unwinder
 * (src/os/unwind.c): from the unwind tables alone it finds the same return
 * addresses as libgcc's (glibc's backtrace()), through frames addressed
 * from rsp and from rbp (alloca), down to the outermost frame, the first
 * time (tables read) and the second (rules kept by return address); each CFA is
 * above the one before it; in a signal handler it goes on through the
 * signal frame into the interrupted code, as backtrace() does, on the
 * thread's stack and on a sigaltstack; a fork() while other threads'
 * walks hold object files open leaves the child none of them, also when a
 * walk stalls between its open and its entry, and a walk stopped there does
 * not hang the fork; a program
 * whose starting name (AT_EXECFN) now leads to another file is still read
 * right; a walk that reads the tables takes at most 3 KiB of its thread's
 * stack, and reads an FDE longer than its frame's buffer.
 */
#include <alloca.h>
#include <execinfo.h>
#include <signal.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdint.h>
#include <string.h>
#include "init.h"
#include "os.h"
#include "check.h"

#define MAXF 64

struct walk {
    uintptr_t ips[MAXF], cfas[MAXF];
    void *bt[MAXF];
    int n, nbt;
};

static volatile int sink;

/* Both walks from one frame: ours first (its ips[0] is the return address
   into this function), then backtrace() (its bt[0] is this function's own
   pc, bt[1] the return address into our caller; a sanitizer's backtrace()
   puts its own frames first). */
static __attribute__((noinline)) void walk_here(struct walk *w)
{
    w->n = nd_os_unwind_own(w->ips, w->cfas, MAXF);
    w->nbt = backtrace(w->bt, MAXF);
    sink++;
}

static __attribute__((noinline)) void with_alloca(struct walk *w, int depth)
{
    /* A frame addressed from rbp: its size is known only at run time. */
    volatile char *buf = alloca(64 + (size_t)depth * 48);
    buf[0] = (char)depth;
    if (depth > 0)
        with_alloca(w, depth - 1);
    else
        walk_here(w);
    sink += buf[0];
}

static __attribute__((noinline)) void plain(struct walk *w, int depth)
{
    if (depth > 0)
        plain(w, depth - 1);
    else
        with_alloca(w, 2);
    sink++;
}

/* Where backtrace()'s frames reach walk_here's caller: bt[k] == ips[1]. */
static int bt_start(const struct walk *w)
{
    for (int k = 1; k < w->nbt; k++)
        if ((uintptr_t)w->bt[k] == w->ips[1])
            return k;
    EXPECT(false, "backtrace() to find the return address into walk_here's caller 0x%lx", (unsigned long)w->ips[1]);
    return 0;
}

/* ours[1..] against backtrace's from there: the return addresses above
   walk_here's own frame. */
static void expect_same(const struct walk *w)
{
    EXPECT(w->n >= 8, "the own unwinder to find at least the 8 test frames, got %d", w->n);
    for (int i = 1; i < w->n; i++)
        EXPECT(w->cfas[i] > w->cfas[i - 1] && (w->cfas[i] & 7) == 0,
               "each CFA above the one before and 8-aligned: frame %d 0x%lx after 0x%lx", i,
               (unsigned long)w->cfas[i], (unsigned long)w->cfas[i - 1]);
    /* backtrace() may add the outermost frame's 0 or stop a frame later. */
    int nbt = w->nbt, k = bt_start(w);
    while (nbt > 0 && w->bt[nbt - 1] == NULL)
        nbt--;
    EXPECT(w->n - 1 == nbt - k, "as many frames as backtrace(): %d, backtrace %d", w->n - 1, nbt - k);
    for (int i = 1; i < w->n; i++)
        EXPECT((uintptr_t)w->bt[k + i - 1] == w->ips[i], "frame %d: 0x%lx, backtrace 0x%lx", i,
               (unsigned long)w->ips[i], (unsigned long)w->bt[k + i - 1]);
}

/* Walks from the frames `from` makes, twice: the first time the tables
   are read, the second the rules kept by return address serve. */
static void expect_same_twice(void (*from)(struct walk *, int), int depth)
{
    for (int i = 0; i < 2; i++) {
        struct walk w;
        memset(&w, 0, sizeof w);
        from(&w, depth);
        expect_same(&w);
    }
}

static void own_unwinder_finds_what_backtrace_finds(void)
{
    if (!nd_os_unwind_own_ok())
        SKIP("the own unwinder is x86-64 with glibc 2.35 or later only");
    expect_same_twice(plain, 3);
}

/* A frame whose FDE is longer than the unwinder's buffer in its frame
   (256 bytes: such FDEs are read over the walk's window): 200 pairs of
   CFA offset changes that cancel out, at one address before the call. */
static __attribute__((noinline)) void long_fde(struct walk *w, int depth)
{
#if defined(__x86_64__) && defined(__GCC_HAVE_DWARF2_CFI_ASM)
    __asm__ volatile(".rept 200\n\t.cfi_adjust_cfa_offset 8\n\t.cfi_adjust_cfa_offset -8\n\t.endr" ::: "memory");
#endif
    if (depth > 0)
        long_fde(w, depth - 1);
    else
        plain(w, 1);
    sink++;
}

static void own_unwinder_reads_an_fde_longer_than_its_frames_buffer(void)
{
    if (!nd_os_unwind_own_ok())
        SKIP("the own unwinder is x86-64 with glibc 2.35 or later only");
#if !defined(__GCC_HAVE_DWARF2_CFI_ASM)
    SKIP("the compiler does not take .cfi directives in asm here");
#endif
    expect_same_twice(long_fde, 2);
}

static struct walk sig_walk;

static void handler(int sig)
{
    (void)sig;
    plain(&sig_walk, 1);
}

/* backtrace() loads libgcc_s on its first call (the dynamic loader
   allocates): called once here, outside the handler, it is safe in the
   handler (and ThreadSanitizer, which reports an allocation in a signal
   handler, has nothing to report). */
static void load_backtrace(void)
{
    void *bt[4];
    sink += backtrace(bt, 4);
}

/* ours[1..] against backtrace's, frame by frame, through the signal frame:
   walk_here's caller, 2 plain, 3 with_alloca, the handler, the signal
   return trampoline, raise's frames, the test's. */
static void expect_through_signal(const struct walk *w)
{
    int k = bt_start(w), nbt = w->nbt;
    while (nbt > 0 && w->bt[nbt - 1] == NULL)
        nbt--;
    EXPECT(w->n >= 10, "the walk to go past the handler's 7 frames and the signal frame: %d frames", w->n);
    EXPECT(w->n - 1 == nbt - k, "as many frames as backtrace(): %d, backtrace %d", w->n - 1, nbt - k);
    for (int i = 1; i < w->n && k + i - 1 < nbt; i++)
        EXPECT((uintptr_t)w->bt[k + i - 1] == w->ips[i], "frame %d: 0x%lx, backtrace 0x%lx", i,
               (unsigned long)w->ips[i], (unsigned long)w->bt[k + i - 1]);
}

static __attribute__((noinline)) void raise_here(int sig)
{
    raise(sig);
    sink++;
}

static void own_unwinder_walks_through_a_signal_frame(void)
{
    if (!nd_os_unwind_own_ok())
        SKIP("the own unwinder is x86-64 with glibc 2.35 or later only");
    load_backtrace();
    memset(&sig_walk, 0, sizeof sig_walk);
    signal(SIGUSR1, handler);
    raise_here(SIGUSR1);
    expect_through_signal(&sig_walk);
    /* Again: the rules now kept (the trampoline's never are). */
    memset(&sig_walk, 0, sizeof sig_walk);
    raise_here(SIGUSR1);
    expect_through_signal(&sig_walk);
    signal(SIGUSR1, SIG_DFL);
}

static void own_unwinder_walks_from_a_sigaltstack(void)
{
    if (!nd_os_unwind_own_ok())
        SKIP("the own unwinder is x86-64 with glibc 2.35 or later only");
    load_backtrace();
    size_t size = 256 * 1024;
    stack_t ss = { .ss_sp = malloc(size), .ss_size = size, .ss_flags = 0 }, old;
    EXPECT(ss.ss_sp != NULL && sigaltstack(&ss, &old) == 0, "a sigaltstack");
    struct sigaction sa, prev;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    EXPECT(sigaction(SIGUSR2, &sa, &prev) == 0, "a handler on the sigaltstack");
    memset(&sig_walk, 0, sizeof sig_walk);
    raise_here(SIGUSR2);
    const struct walk *w = &sig_walk;
    EXPECT(w->cfas[1] >= (uintptr_t)ss.ss_sp && w->cfas[1] < (uintptr_t)ss.ss_sp + size,
           "the walk to start on the sigaltstack");
    expect_through_signal(w);
    bool raised = false;   /* raise_here's return address: on the thread's stack */
    for (int i = 1; i < w->n; i++)
        raised |= w->cfas[i] < (uintptr_t)ss.ss_sp || w->cfas[i] >= (uintptr_t)ss.ss_sp + size;
    EXPECT(raised, "frames of the thread's own stack past the signal frame");
    sigaction(SIGUSR2, &prev, NULL);
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&old, NULL);
    free(ss.ss_sp);
}

/* ---- fork during walks ---------------------------------------------------
   A thread runs through a long stretch of straight-line code; signals
   interrupt it at ever new addresses, whose rules the unwinder has not kept,
   so each walk in the handler opens the program's file. Meanwhile the main
   thread forks: no child may find a descriptor the parent did not have
   before the walks started. */

static int fork_stop;   /* atomic: the main thread stops the other two */
static pthread_t fork_walker;

static void fork_handler(int sig)
{
    (void)sig;
    uintptr_t ips[MAXF], cfas[MAXF];
    sink += nd_os_unwind_own(ips, cfas, MAXF);
}

static void *fork_walker_main(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&fork_stop, __ATOMIC_RELAXED))
        __asm__ volatile(".rept 16384\n\tnop\n\t.endr" ::: "memory");
    return NULL;
}

static void *fork_signaller_main(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&fork_stop, __ATOMIC_RELAXED)) {
        pthread_kill(fork_walker, SIGUSR1);
        usleep(20);
    }
    return NULL;
}

static void fork_during_walks_leaves_the_child_no_descriptor(void)
{
    if (!nd_os_unwind_own_ok())
        SKIP("the own unwinder is x86-64 with glibc 2.35 or later only");
    nd_process_ensure();   /* nodal's fork handlers */
    enum { FDS = 256, FORKS = 300 };
    static bool had[FDS];
    for (int fd = 0; fd < FDS; fd++)
        had[fd] = fcntl(fd, F_GETFD) != -1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fork_handler;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t signaller;
    EXPECT(pthread_create(&fork_walker, NULL, fork_walker_main, NULL) == 0 &&
           pthread_create(&signaller, NULL, fork_signaller_main, NULL) == 0, "two threads");
    int leaked = 0;
    for (int i = 0; i < FORKS; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            int extra = 0;
            for (int fd = 0; fd < FDS; fd++)
                extra += !had[fd] && fcntl(fd, F_GETFD) != -1;
            _exit(extra);
        }
        int status = 0;
        EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status), "a child that exits");
        leaked += WEXITSTATUS(status);
        usleep(100);
    }
    __atomic_store_n(&fork_stop, 1, __ATOMIC_RELAXED);
    pthread_join(signaller, NULL);
    pthread_join(fork_walker, NULL);
    signal(SIGUSR1, SIG_DFL);
    EXPECT(leaked == 0, "no child with a descriptor of a walk: %d in %d children", leaked, FORKS);
}

/* ---- a walk stalled between its open and its entry -----------------------
   The debug core's hook stalls a walk right after its open, before its
   entry holds the descriptor's number, while the main thread forks. The
   fork must wait for the walk however long it stalls (here until the fork
   has returned, or 300 ms after it began: main 4c6e842's prepare handler
   gave up after 100 ms and the child kept the descriptor); a walk the
   kernel has stopped there (a tracer's stop) must not hang the fork. */

static int stall_fd = -1;      /* atomic: the descriptor the stalled walk opened */
static struct stat stall_file; /* its file */
static int stall_tid;          /* atomic: its thread */
static int stall_forking;      /* atomic: the main thread is about to fork */
static int stall_forked;       /* atomic: fork() has returned in the parent */
static int stall_timed;        /* the hook stops stalling 300 ms after the fork began */
static int stall_walker_done;  /* atomic */

static void stall_hook(int fd)
{
    if (__atomic_load_n(&stall_fd, __ATOMIC_ACQUIRE) != -1)
        return;   /* only the first open stalls */
    __atomic_store_n(&stall_tid, (int)syscall(SYS_gettid), __ATOMIC_RELAXED);
    if (fstat(fd, &stall_file) != 0)
        memset(&stall_file, 0, sizeof stall_file);
    __atomic_store_n(&stall_fd, fd, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&stall_forking, __ATOMIC_ACQUIRE))
        usleep(1000);
    for (int ms = 0; !__atomic_load_n(&stall_forked, __ATOMIC_ACQUIRE) && (!stall_timed || ms < 300); ms++)
        usleep(1000);
}

/* The walker stays alive until the fork has returned: a thread that ended
   unjoined before the fork is, in the child, a thread leak to
   ThreadSanitizer, whose report at the child's exit makes its status 66
   (h52x's "5 of 5" under TSan: the child had closed the descriptor). */
static void *stall_walker_main(void *arg)
{
    (void)arg;
    uintptr_t ips[MAXF], cfas[MAXF];
    for (int i = 0; i < 100 && __atomic_load_n(&stall_fd, __ATOMIC_ACQUIRE) == -1; i++)
        sink += nd_os_unwind_own(ips, cfas, MAXF);
    if (__atomic_load_n(&stall_fd, __ATOMIC_ACQUIRE) != -1)
        while (!__atomic_load_n(&stall_forked, __ATOMIC_ACQUIRE))
            usleep(1000);
    __atomic_store_n(&stall_walker_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Starts a walker thread whose first open stalls in the hook; false (the
   walker joined) when no walk opened a file. */
static bool stall_a_walk(pthread_t *walker, bool timed)
{
    nd_process_ensure();   /* nodal's fork handlers */
    stall_timed = timed;
    nd_os_unwind_opened_hook = stall_hook;
    EXPECT(pthread_create(walker, NULL, stall_walker_main, NULL) == 0, "a walker thread");
    while (__atomic_load_n(&stall_fd, __ATOMIC_ACQUIRE) == -1 && !__atomic_load_n(&stall_walker_done, __ATOMIC_ACQUIRE))
        usleep(1000);
    if (__atomic_load_n(&stall_fd, __ATOMIC_ACQUIRE) != -1)
        return true;
    pthread_join(*walker, NULL);
    nd_os_unwind_opened_hook = NULL;
    return false;
}

static void a_fork_waits_for_a_walk_stalled_between_its_open_and_its_entry(void)
{
    if (!nd_os_unwind_own_ok())
        SKIP("the own unwinder is x86-64 with glibc 2.35 or later only");
    pthread_t walker;
    if (!stall_a_walk(&walker, true))
        SKIP("no walk opened a file (the tables read in place)");
    int fd = __atomic_load_n(&stall_fd, __ATOMIC_ACQUIRE);
    /* The child's answer comes through a pipe, not its exit status, which
       a sanitizer's report at its exit replaces (TSan: 66). */
    int answer[2];
    EXPECT(pipe(answer) == 0, "a pipe");
    __atomic_store_n(&stall_forking, 1, __ATOMIC_RELEASE);
    pid_t pid = fork();
    if (pid == 0) {
        /* (the same file, not another one that took the number since: a
           sanitizer's runtime opens files in a child) */
        struct stat st;
        char has = fstat(fd, &st) == 0 && st.st_dev == stall_file.st_dev && st.st_ino == stall_file.st_ino;
        _exit(write(answer[1], &has, 1) == 1 ? 0 : 1);
    }
    __atomic_store_n(&stall_forked, 1, __ATOMIC_RELEASE);
    close(answer[1]);
    char has = 2;
    ssize_t got = read(answer[0], &has, 1);
    close(answer[0]);
    int status = 0;
    EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status), "a child that exits");
    pthread_join(walker, NULL);
    nd_os_unwind_opened_hook = NULL;
    EXPECT(got == 1, "the child's answer (it exited with status %d)", WEXITSTATUS(status));
    EXPECT(has == 0,
           "the child not to have descriptor %d, which a walk had opened but not yet entered when the fork began", fd);
    EXPECT(WEXITSTATUS(status) == 0, "a child that exits 0 (status %d: a sanitizer's report in the child?)",
           WEXITSTATUS(status));
}

static void a_walk_stopped_between_its_open_and_its_entry_does_not_hang_a_fork(void)
{
    if (!nd_os_unwind_own_ok())
        SKIP("the own unwinder is x86-64 with glibc 2.35 or later only");
    /* A tracer process, forked before the walk stalls: it stops the
       walker's thread (PTRACE_INTERRUPT) and lets it go on command. */
    int to_tracer[2], from_tracer[2];
    EXPECT(pipe(to_tracer) == 0 && pipe(from_tracer) == 0, "two pipes");
    pid_t tracer = fork();
    if (tracer == 0) {
        int tid = 0;
        char ok = 0, go;
        if (read(to_tracer[0], &tid, sizeof tid) != sizeof tid)
            _exit(1);
        int st;
        if (ptrace(PTRACE_SEIZE, tid, 0, 0) == 0 && ptrace(PTRACE_INTERRUPT, tid, 0, 0) == 0 &&
            waitpid(tid, &st, __WALL) == tid)
            ok = 1;
        if (write(from_tracer[1], &ok, 1) != 1 || read(to_tracer[0], &go, 1) != 1)
            _exit(1);
        if (ok)
            ptrace(PTRACE_DETACH, tid, 0, 0);
        _exit(0);
    }
    EXPECT(tracer > 0, "a tracer process");
    pthread_t walker;
    bool stalled = stall_a_walk(&walker, false);
    int tid = stalled ? __atomic_load_n(&stall_tid, __ATOMIC_RELAXED) : 0;
    char ok = 0, go = 1;
    EXPECT(write(to_tracer[1], &tid, sizeof tid) == sizeof tid && read(from_tracer[0], &ok, 1) == 1, "the tracer's answer");
    if (!ok) {
        __atomic_store_n(&stall_forked, 1, __ATOMIC_RELEASE);
        ssize_t told = write(to_tracer[1], &go, 1);
        (void)told;
        waitpid(tracer, NULL, 0);
        if (stalled)
            pthread_join(walker, NULL);
        nd_os_unwind_opened_hook = NULL;
        SKIP(stalled ? "the tracer cannot stop the walker (ptrace not permitted here)"
                     : "no walk opened a file (the tables read in place)");
    }
    /* The walker is stopped between its open and its entry: the fork must
       not wait for it (a hang fails by the alarm, or ctest's timeout). */
    alarm(120);
    __atomic_store_n(&stall_forking, 1, __ATOMIC_RELEASE);
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    alarm(0);
    __atomic_store_n(&stall_forked, 1, __ATOMIC_RELEASE);
    int status = 0;
    EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "a fork that returns, and a child that exits, while a walk is stopped in its open");
    EXPECT(write(to_tracer[1], &go, 1) == 1 && waitpid(tracer, &status, 0) == tracer, "the tracer to let the walker go");
    pthread_join(walker, NULL);
    nd_os_unwind_opened_hook = NULL;
}

/* ---- the program's file by its starting name ------------------------------
   The walk opens the program under the name it was started by (AT_EXECFN)
   when that file is the one mapped. Started as "./unit_unwind" from its
   own directory, the child moves to a directory where that name is another
   program (/bin/true): its first walk (nothing kept yet) must find the
   same frames as backtrace(), from the program's own tables. */

#define CHILD_DIR "ND_UNWIND_CHILD_DIR"

static void a_program_whose_starting_name_leads_elsewhere_is_still_walked_right(void)
{
    if (!nd_os_unwind_own_ok())
        SKIP("the own unwinder is x86-64 with glibc 2.35 or later only");
    const char *moved = getenv(CHILD_DIR);
    if (moved != NULL) {   /* the child, started as ./unit_unwind */
        EXPECT(chdir(moved) == 0, "to move to %s", moved);
        struct walk w;
        memset(&w, 0, sizeof w);
        plain(&w, 3);
        expect_same(&w);
        return;
    }
    char self[4096], dir[] = "/tmp/nd-unwind-XXXXXX", other[sizeof dir + 32];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    EXPECT(len > 0, "the program's path");
    self[len] = '\0';
    char *slash = strrchr(self, '/');
    EXPECT(slash != NULL && mkdtemp(dir) != NULL, "a directory of the test's own");
    snprintf(other, sizeof other, "%s/%s", dir, slash + 1);
    EXPECT(symlink("/bin/true", other) == 0, "%s to lead to /bin/true", other);
    *slash = '\0';
    pid_t pid = fork();
    if (pid == 0) {
        char name[300];
        snprintf(name, sizeof name, "./%s", slash + 1);
        setenv(CHILD_DIR, dir, 1);
        if (chdir(self) == 0)
            execl(name, name, "a_program_whose_starting_name_leads_elsewhere_is_still_walked_right", (char *)NULL);
        _exit(3);
    }
    int status = 0;
    EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid, "the child to end");
    unlink(other);
    rmdir(dir);
    EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "the child's walk to find what backtrace() finds (status 0x%x)", (unsigned)status);
}

/* The stack a walk takes: a thread on a stack of the test's own, painted
   first, walks (or does not) from the same frame; the paint each leaves
   tells how deep it went. The walk's first reads of the tables (a new
   process: no rules kept) go deepest. */
#define PAINT_STACK (256 * 1024)
#define PAINT_BYTE 0xa5

static __attribute__((noinline)) void *walk_or_not(void *arg)
{
    uintptr_t ips[MAXF], cfas[MAXF];
    ips[0] = 0;
    int n = arg != NULL ? nd_os_unwind_own(ips, cfas, MAXF) : 0;
    sink += n + (int)(ips[0] & 1);
    return (void *)(intptr_t)n;
}

/* The bytes of the painted stack a thread running walk_or_not(arg) wrote
   (from its top down to the deepest byte written); *n = the frames walked. */
static size_t stack_taken(void *arg, int *n)
{
    unsigned char *stk = mmap(NULL, PAINT_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT(stk != MAP_FAILED, "a stack for the thread");
    memset(stk, PAINT_BYTE, PAINT_STACK);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, stk, PAINT_STACK);
    pthread_t t;
    void *ret = NULL;
    EXPECT(pthread_create(&t, &attr, walk_or_not, arg) == 0 && pthread_join(t, &ret) == 0, "the thread to run");
    pthread_attr_destroy(&attr);
    *n = (int)(intptr_t)ret;
    size_t low = 0;
    while (low < PAINT_STACK && stk[low] == PAINT_BYTE)
        low++;
    munmap(stk, PAINT_STACK);
    return PAINT_STACK - low;
}

static void a_walk_takes_at_most_3_kib_of_its_threads_stack(void)
{
    if (!nd_os_unwind_own_ok())
        SKIP("the own unwinder is x86-64 with glibc 2.35 or later only");
#if defined(__SANITIZE_ADDRESS__)
    SKIP("AddressSanitizer's frames (redzones, its fake stack) are not the stack measured here");
#elif defined(__SANITIZE_THREAD__)
    SKIP("ThreadSanitizer's runtime needs more than the test's 256 KiB thread stack");
#endif
    /* A walk here first: the library calls a walk makes are bound then
       (the dynamic loader's lazy binding saves the vector registers on the
       stack: 2-3 KiB that are not the walk's), while the thread's frames
       (its function, start_thread, clone3) are still new to the rules
       kept, so its walk reads their tables. */
    struct walk w;
    walk_here(&w);
    int n0, n1;
    size_t without = stack_taken(NULL, &n0), with = stack_taken((void *)1, &n1);
    EXPECT(n1 >= 3, "the walk to find the thread's frames, got %d", n1);
    /* Before its state shared one buffer and its rules were 32-bit, a
       first walk took 4.3 KiB (main 55f8196): with the sampler's frame
       (1.9 KiB), 6.2 KiB below malloc, a page of each sampling thread's
       stack that larson -t 2 never reached otherwise (bench/peakmap.py). */
    EXPECT(with > without && with - without <= 3072,
           "a walk that reads the tables to take at most 3 KiB of its thread's stack, took %zu bytes "
           "(the thread without the walk: %zu, with it: %zu)", with - without, without, with);
}

static const struct nd_case cases[] = {
    ND_CASE(own_unwinder_finds_what_backtrace_finds),
    ND_CASE(own_unwinder_walks_through_a_signal_frame),
    ND_CASE(own_unwinder_walks_from_a_sigaltstack),
    ND_CASE(fork_during_walks_leaves_the_child_no_descriptor),
    ND_CASE(a_fork_waits_for_a_walk_stalled_between_its_open_and_its_entry),
    ND_CASE(a_walk_stopped_between_its_open_and_its_entry_does_not_hang_a_fork),
    ND_CASE(a_program_whose_starting_name_leads_elsewhere_is_still_walked_right),
    ND_CASE(a_walk_takes_at_most_3_kib_of_its_threads_stack),
    ND_CASE(own_unwinder_reads_an_fde_longer_than_its_frames_buffer),
};
ND_MAIN(cases)
