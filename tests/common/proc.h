/*
 * proc.h - the kernel's view of a test process: resident set size, and
 * running a piece of the test in a child whose death and stderr we inspect.
 */
#ifndef ND_TEST_PROC_H
#define ND_TEST_PROC_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define ND_MiB ((size_t)1 << 20)

/* Anonymous resident memory of this process in KiB (statm: resident less
   shared, the file pages), read without allocating. */
__attribute__((unused))
static long nd_anon_rss_kib(void)
{
    char buf[128];
    int fd = open("/proc/self/statm", O_RDONLY);
    EXPECT(fd >= 0, "/proc/self/statm to be readable (errno %d)", errno);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    EXPECT(n > 0, "/proc/self/statm to have content");
    buf[n] = '\0';
    unsigned long size, resident, shared;
    EXPECT(sscanf(buf, "%lu %lu %lu", &size, &resident, &shared) == 3, "statm to start with three numbers: %s", buf);
    return (long)((resident - shared) * (unsigned long)sysconf(_SC_PAGESIZE) / 1024);
}

/* Resident set of this process in bytes (second field of /proc/self/statm),
   read without allocating. */
__attribute__((unused))
static size_t nd_rss_bytes(void)
{
    char buf[128];
    int fd = open("/proc/self/statm", O_RDONLY);
    if (fd < 0)
        FAIL("/proc/self/statm to be readable (errno %d)", errno);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        FAIL("/proc/self/statm to have content");
    buf[n] = '\0';
    unsigned long size = 0, resident = 0;
    if (sscanf(buf, "%lu %lu", &size, &resident) != 2)
        FAIL("/proc/self/statm to start with two numbers, got '%s'", buf);
    return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

/* Pages of [p, p+len) this process has written (/proc/self/pagemap: present
   and mapped only here, bits 63 and 56; a page only read maps the shared
   zero page, which is not counted). */
__attribute__((unused))
static size_t nd_written_pages(const void *p, size_t len)
{
    size_t ps = (size_t)sysconf(_SC_PAGESIZE), n = 0;
    FILE *f = fopen("/proc/self/pagemap", "rb");
    EXPECT(f != NULL, "/proc/self/pagemap to open");
    for (uintptr_t a = (uintptr_t)p / ps; a <= ((uintptr_t)p + len - 1) / ps; a++) {
        uint64_t e = 0;
        EXPECT(fseek(f, (long)(a * sizeof e), SEEK_SET) == 0 && fread(&e, sizeof e, 1, f) == 1,
               "pagemap's entry of page %#lx to read", (unsigned long)a);
        n += (e >> 63 & 1) && (e >> 56 & 1);
    }
    fclose(f);
    return n;
}

/* Does the first read of a fresh anonymous page map the kernel's shared
   zero page, as Linux does by default? Some kernels do not (seen on a
   6.18 VM host, 2026-12-07: a read of a fresh page maps a page of its own,
   present and exclusive in pagemap, and the soft-dirty bit is not built
   in): there a page nodal only read is resident like one it wrote, and
   the tests that count the pages it wrote (nd_written_pages) or the
   resident pages of its data cannot tell them apart; they skip. */
__attribute__((unused))
static bool nd_reads_map_the_zero_page(void)
{
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    char *p = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT(p != MAP_FAILED, "a page to map (errno %d)", errno);
    (void)*(volatile char *)p;
    uint64_t e = 0;
    FILE *f = fopen("/proc/self/pagemap", "rb");
    EXPECT(f != NULL, "/proc/self/pagemap to open");
    EXPECT(fseek(f, (long)((uintptr_t)p / ps * sizeof e), SEEK_SET) == 0 && fread(&e, sizeof e, 1, f) == 1,
           "pagemap's entry of a page to read");
    fclose(f);
    munmap(p, ps);
    return !((e >> 63 & 1) && (e >> 56 & 1));
}
#define ND_SKIP_UNLESS_READS_MAP_THE_ZERO_PAGE()                                                              \
    do {                                                                                                      \
        if (!nd_reads_map_the_zero_page())                                                                    \
            SKIP("this kernel maps a page of its own at a read of a fresh page (no shared zero page): pages "  \
                 "read cannot be told from pages written");                                                   \
    } while (0)

/* Does the mapping that holds address a carry VmFlag `flag` (a word of
   its VmFlags line in /proc/self/smaps, such as "nh")? 1 or 0; -1 when
   no mapping holds a. */
__attribute__((unused))
static int nd_vmflag_at(uintptr_t a, const char *flag)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    EXPECT(f != NULL, "/proc/self/smaps to be readable");
    static char line[4096];
    int found = -1;
    bool here = false;
    while (fgets(line, sizeof line, f) != NULL) {
        unsigned long lo, hi;
        /* A mapping's line starts with its address (lower-case hex); its
           fields' with a capital (Rss:, VmFlags:). */
        if ((line[0] < 'A' || line[0] > 'Z') && sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
            here = a >= lo && a < hi;
            continue;
        }
        if (here && strncmp(line, "VmFlags:", 8) == 0) {
            char want[8];
            snprintf(want, sizeof want, " %s ", flag);
            line[strcspn(line, "\n")] = ' ';   /* the last flag ends in a space too */
            found = strstr(line + 8, want) != NULL;
            break;
        }
    }
    fclose(f);
    return found;
}

/* Address space of this process in KiB (VmSize: first field of
   /proc/self/statm), read without allocating; -1 if it cannot be read. */
__attribute__((unused))
static long nd_vm_kib(void)
{
    char buf[128];
    int fd = open("/proc/self/statm", O_RDONLY);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    unsigned long size = 0;
    if (sscanf(buf, "%lu", &size) != 1)
        return -1;
    return (long)(size * (unsigned long)sysconf(_SC_PAGESIZE) / 1024);
}

/* What a child left behind. A test whose children print more (a JSON
   report of every class) defines ND_CHILD_OUT_BYTES before including this;
   the others keep their images small (api.memory's address-space cases
   count what the process holds at its start). */
#ifndef ND_CHILD_OUT_BYTES
#define ND_CHILD_OUT_BYTES 16384
#endif
struct nd_child {
    int status;          /* from waitpid */
    char out[ND_CHILD_OUT_BYTES];   /* its stdout (when captured), NUL-terminated */
    char err[16384];     /* its stderr, NUL-terminated, cut if longer */
};

/* Reads the two pipes until both close; keeps what fits. */
static void nd_drain(int fd_out, int fd_err, struct nd_child *c)
{
    size_t n_out = 0, n_err = 0;
    struct pollfd fds[2] = { { fd_out, POLLIN, 0 }, { fd_err, POLLIN, 0 } };
    int open_fds = (fd_out >= 0) + (fd_err >= 0);
    if (fd_out < 0)
        fds[0].fd = -1;
    while (open_fds > 0) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char tmp[4096];
            ssize_t r = read(fds[i].fd, tmp, sizeof tmp);
            if (r <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
                continue;
            }
            char *dst = i == 0 ? c->out : c->err;
            size_t *len = i == 0 ? &n_out : &n_err;
            size_t room = sizeof c->out - 1 - *len;
            size_t take = (size_t)r < room ? (size_t)r : room;
            memcpy(dst + *len, tmp, take);
            *len += take;
        }
    }
    c->out[n_out] = '\0';
    c->err[n_err] = '\0';
}

/*
 * Forks a child that runs child(arg), which must not return (it exits or
 * execs), with no core dumps and its stderr (and its stdout when
 * `capture_out`) captured into c; waits for it.
 */
__attribute__((unused))
static void nd_fork_captured(void (*child)(void *), void *arg, int capture_out, struct nd_child *c)
{
    int op[2] = { -1, -1 }, ep[2];
    if ((capture_out && pipe(op) != 0) || pipe(ep) != 0)
        FAIL("pipe() to work (errno %d)", errno);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        FAIL("fork() to work (errno %d)", errno);
    if (pid == 0) {
        struct rlimit no_core = { 0, 0 };
        setrlimit(RLIMIT_CORE, &no_core);
        if (capture_out) {
            dup2(op[1], 1);
            close(op[0]);
            close(op[1]);
        }
        dup2(ep[1], 2);
        close(ep[0]);
        close(ep[1]);
        child(arg);
        _exit(127);
    }
    if (capture_out)
        close(op[1]);
    close(ep[1]);
    memset(c, 0, sizeof *c);
    nd_drain(op[0], ep[0], c);
    while (waitpid(pid, &c->status, 0) < 0 && errno == EINTR)
        ;
}

struct nd_forked_call {
    void (*fn)(void *);
    void *arg;
    unsigned timeout_s;
};

__attribute__((unused))
static void nd_forked_call_run(void *p)
{
    const struct nd_forked_call *f = p;
    alarm(f->timeout_s);
    f->fn(f->arg);
    exit(0);
}

/*
 * Runs fn(arg) in a forked child with its stderr captured; the child exits 0
 * if fn returns. No core dumps; SIGALRM after `timeout_s` seconds so a
 * deadlock shows as a death by SIGALRM instead of a hang.
 */
__attribute__((unused))
static void nd_run_forked(void (*fn)(void *), void *arg, unsigned timeout_s,
                          struct nd_child *c)
{
    struct nd_forked_call f = { fn, arg, timeout_s };
    nd_fork_captured(nd_forked_call_run, &f, 0, c);
}

struct nd_exec_call {
    char *const *argv;
    const char *options, *extra;
    unsigned timeout_s;
};

__attribute__((unused))
static void nd_exec_call_run(void *p)
{
    const struct nd_exec_call *x = p;
    /* Only the settings asked for: no NODAL_* from the caller's
       environment. */
    extern char **environ;
    for (int again = 1; again;) {
        again = 0;
        for (char **e = environ; *e; e++)
            if (strncmp(*e, "NODAL_", 6) == 0 && strchr(*e, '=')) {
                char name[128];
                size_t len = (size_t)(strchr(*e, '=') - *e);
                if (len >= sizeof name)
                    len = sizeof name - 1;
                memcpy(name, *e, len);
                name[len] = '\0';
                unsetenv(name);
                again = 1;
                break;
            }
    }
    if (x->options)
        setenv("NODAL_OPTIONS", x->options, 1);
    if (x->extra)
        putenv((char *)x->extra);
    alarm(x->timeout_s);
    execv(x->argv[0], x->argv);
    fprintf(stderr, "exec %s failed: errno %d\n", x->argv[0], errno);
    _exit(127);
}

/*
 * Runs argv[0] (a path) with NODAL_OPTIONS set to `options` (unset when
 * NULL) and, if `extra` is not NULL, one more variable "NAME=value";
 * captures stdout and stderr.
 */
__attribute__((unused))
static void nd_run_exec(char *const argv[], const char *options, const char *extra,
                        unsigned timeout_s, struct nd_child *c)
{
    struct nd_exec_call x = { argv, options, extra, timeout_s };
    nd_fork_captured(nd_exec_call_run, &x, 1, c);
}

static const char *nd_describe_status(int st);

/*
 * Runs this program's case `name` (a helper case, printing what the
 * caller checks) in a child, as nd_run_exec does, and expects it to exit 0.
 */
__attribute__((unused))
static void nd_run_case(const char *name, const char *options, const char *extra, unsigned timeout_s,
                        struct nd_child *c)
{
    static char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    EXPECT(len > 0, "/proc/self/exe to name this program");
    self[len] = '\0';
    char *argv[] = { self, (char *)name, NULL };
    nd_run_exec(argv, options, extra, timeout_s, c);
    EXPECT(WIFEXITED(c->status) && WEXITSTATUS(c->status) == 0,
           "the child running %s (NODAL_OPTIONS=\"%s\"%s%s) to exit 0; it %s; stderr: %s", name,
           options ? options : "(unset)", extra ? ", " : "", extra ? extra : "", nd_describe_status(c->status),
           c->err);
}

/* "exited with 3", "killed by signal 6 (Aborted)": for messages. */
__attribute__((unused))
static const char *nd_describe_status(int st)
{
    static char buf[96];
    if (WIFEXITED(st))
        snprintf(buf, sizeof buf, "exited with status %d", WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        snprintf(buf, sizeof buf, "was killed by signal %d (%s)", WTERMSIG(st),
                 strsignal(WTERMSIG(st)));
    else
        snprintf(buf, sizeof buf, "ended with wait status 0x%x", st);
    return buf;
}

/* Number of lines of `text` that contain `needle`. */
__attribute__((unused))
static int nd_count_lines_with(const char *text, const char *needle)
{
    int n = 0;
    const char *line = text;
    while (*line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        for (size_t i = 0; i + strlen(needle) <= len; i++)
            if (strncmp(line + i, needle, strlen(needle)) == 0) {
                n++;
                break;
            }
        if (!end)
            break;
        line = end + 1;
    }
    return n;
}

/* ---- children that may hang ------------------------------------------------
 *
 * A test whose child could be left stuck (a lock a fork copied held, a
 * state a thread the child does not have left half-written) waits for it
 * with nd_wait_watched: no wall-clock limit alone decides, since a child
 * that is starved on a loaded machine is slow, not stuck. What the child
 * says of itself does: its threads' states and its CPU time, from /proc.
 * A child that is stuck leaves its threads' states, wait channels, kernel
 * stacks and, where gdb is installed, their stacks on stderr before it is
 * killed, so the one run in a thousand that hangs tells why.
 */
struct nd_watch {
    unsigned quiet_s;   /* stuck: no thread runnable and no CPU used for this long */
    unsigned cpu_s;     /* stuck: this much CPU used (a spin or a livelock) */
    unsigned wall_s;    /* stuck: alive this long, whatever it does */
};

/* For the child, first thing: it dies with its parent (no orphan is left
   if the test is killed), and any process may attach to it (gdb, from
   nd_dump_threads, where Yama restricts ptrace to descendants). */
__attribute__((unused))
static void nd_child_watched(void)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
#ifdef PR_SET_PTRACER
    prctl(PR_SET_PTRACER, (unsigned long)-1 /* PR_SET_PTRACER_ANY */, 0, 0, 0);
#endif
}

/* fork() for a child the parent will watch: stdout and stderr flushed
   first (nothing buffered printed twice), the child set up by
   nd_child_watched; the pid, 0 in the child. */
__attribute__((unused))
static pid_t nd_fork_watched(void)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    EXPECT(pid >= 0, "fork to work (errno %d)", errno);
    if (pid == 0)
        nd_child_watched();
    return pid;
}

static double nd_watch_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Reads a small /proc file into buf (NUL-terminated, newlines kept); ""
   if it cannot be read. */
static void nd_proc_read(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
}

/* One thread's (or the process's) state letter and CPU ticks (utime +
   stime) from its stat file; false if it is gone. */
static bool nd_proc_stat(const char *path, char *state, unsigned long long *ticks)
{
    char buf[1024];
    nd_proc_read(path, buf, sizeof buf);
    const char *p = strrchr(buf, ')');   /* the name may hold spaces */
    unsigned long long ut = 0, st = 0;
    if (p == NULL || sscanf(p + 2, "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
                            state, &ut, &st) != 3)
        return false;
    *ticks = ut + st;
    return true;
}

/* Whether any thread of pid is running or runnable (R) or in an
   uninterruptible wait (D: a fault, I/O): busy, if slowly. */
static bool nd_proc_any_busy(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (d == NULL)
        return false;
    bool busy = false;
    struct dirent *e;
    while (!busy && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char stat_path[320], state = '?';
        unsigned long long ticks;
        snprintf(stat_path, sizeof stat_path, "/proc/%d/task/%s/stat", (int)pid, e->d_name);
        busy = nd_proc_stat(stat_path, &state, &ticks) && (state == 'R' || state == 'D');
    }
    closedir(d);
    return busy;
}

/* What each thread of pid is doing, on stderr: state, CPU ticks, the
   kernel's wait channel and stack (root only), then every thread's stack
   through gdb (bounded by timeout(1); skipped without gdb). */
__attribute__((unused))
static void nd_dump_threads(pid_t pid, const char *why)
{
    fprintf(stderr, "---- pid %d: %s; its threads (state, utime + stime in ticks, wait channel, "
            "kernel stack):\n", (int)pid, why);
    char path[320], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char state = '?';
        unsigned long long ticks = 0;
        snprintf(path, sizeof path, "/proc/%d/task/%s/stat", (int)pid, e->d_name);
        nd_proc_stat(path, &state, &ticks);
        char wchan[128];
        snprintf(path, sizeof path, "/proc/%d/task/%s/wchan", (int)pid, e->d_name);
        nd_proc_read(path, wchan, sizeof wchan);
        fprintf(stderr, "  thread %s: %c %llu %s\n", e->d_name, state, ticks, wchan[0] ? wchan : "-");
        snprintf(path, sizeof path, "/proc/%d/task/%s/stack", (int)pid, e->d_name);
        nd_proc_read(path, buf, sizeof buf);
        for (char *line = buf; *line;) {
            char *end = strchr(line, '\n');
            if (end)
                *end = '\0';
            fprintf(stderr, "    kernel: %s\n", line);
            if (!end)
                break;
            line = end + 1;
        }
    }
    if (d != NULL)
        closedir(d);
    char pid_s[24];
    snprintf(pid_s, sizeof pid_s, "%d", (int)pid);
    char *argv[] = { "timeout", "-k", "5", "120", "gdb", "-nx", "-batch", "-p", pid_s,
                     "-ex", "thread apply all bt", NULL };
    pid_t gdb;
    int st = 0;
    fflush(stdout);
    fflush(stderr);
    /* fork and exec, not posix_spawn: TSan's posix_spawn (GCC 12) left
       gdb's stdout where it was. The child only moves a descriptor. */
    gdb = fork();
    if (gdb == 0) {
        dup2(2, 1);   /* gdb's output to stderr too */
        execvp(argv[0], argv);
        _exit(127);
    }
    if (gdb < 0) {
        fprintf(stderr, "  (fork for gdb failed: no stacks)\n");
        return;
    }
    while (waitpid(gdb, &st, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
        fprintf(stderr, "  (no gdb or no timeout(1): no stacks of the threads)\n");
    fprintf(stderr, "---- end of pid %d\n", (int)pid);
}

/*
 * One watch of a child, for a parent that waits in its own loop (a pipe to
 * read, say): nd_watch_begin when it forks, then nd_watch_check now and
 * then (every 50-250 ms). A child is stuck when, by the watch w, it has
 * slept without using CPU for quiet_s, or used cpu_s of CPU, or lived
 * wall_s; one that is runnable but not running (a loaded machine), in an
 * uninterruptible wait, or that used any CPU since the last check keeps
 * its time.
 */
struct nd_watching {
    pid_t pid;
    double start, progress;            /* nd_watch_now() at the fork, at its last sign of life */
    unsigned long long last_ticks;     /* its CPU (utime + stime) at the last check */
    long hz;
    char stat_path[64];
};

__attribute__((unused))
static void nd_watch_begin(struct nd_watching *s, pid_t pid)
{
    s->pid = pid;
    s->start = s->progress = nd_watch_now();
    s->last_ticks = 0;
    s->hz = sysconf(_SC_CLK_TCK);
    snprintf(s->stat_path, sizeof s->stat_path, "/proc/%d/stat", (int)pid);
}

/* NULL while the child is alive and not stuck, or has exited (a zombie:
   the caller reaps it); else the reason, with the figures in msg (len
   bytes), after its threads have been shown (nd_dump_threads, `what`
   naming it). The caller kills it. */
__attribute__((unused))
static const char *nd_watch_check(struct nd_watching *s, const struct nd_watch *w, const char *what,
                                  char *msg, size_t len)
{
    double now = nd_watch_now();
    char state = '?';
    unsigned long long ticks = 0;
    if (!nd_proc_stat(s->stat_path, &state, &ticks) || state == 'Z' || state == 'X')
        return NULL;
    if (ticks != s->last_ticks || nd_proc_any_busy(s->pid)) {
        s->last_ticks = ticks;
        s->progress = now;
    }
    const char *why = NULL;
    if (now - s->progress >= (double)w->quiet_s)
        why = "no thread runnable and no CPU used";
    else if (s->hz > 0 && ticks >= (unsigned long long)w->cpu_s * (unsigned long long)s->hz)
        why = "CPU time used up";
    else if (now - s->start >= (double)w->wall_s)
        why = "wall time used up";
    if (why == NULL)
        return NULL;
    snprintf(msg, len, "%s stuck after %.0f s (%s; %.1f s of CPU; %.0f s since it last ran)", what,
             now - s->start, why, s->hz > 0 ? (double)ticks / (double)s->hz : 0.0, now - s->progress);
    nd_dump_threads(s->pid, msg);
    return why;
}

/*
 * Waits for child pid and returns its wait status, watching it by w
 * (nd_watch_check): a stuck child is shown and killed, *stuck set (may be
 * NULL).
 */
__attribute__((unused))
static int nd_wait_watched(pid_t pid, const struct nd_watch *w, const char *what, bool *stuck)
{
    struct nd_watching s;
    nd_watch_begin(&s, pid);
    if (stuck)
        *stuck = false;
    for (;;) {
        int st = 0;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return st;
        if (r < 0 && errno != EINTR)
            FAIL("waitpid(%d) to work (errno %d)", (int)pid, errno);
        struct timespec nap = { 0, 50 * 1000 * 1000 };
        nanosleep(&nap, NULL);
        char msg[200];
        if (nd_watch_check(&s, w, what, msg, sizeof msg) == NULL)
            continue;
        kill(pid, SIGKILL);
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        if (stuck)
            *stuck = true;
        return st;
    }
}

#endif /* ND_TEST_PROC_H */
