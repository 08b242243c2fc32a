/*
 * harness.c - the shared benchmark harness (see harness.h): clocks, pinned
 * thread teams, RSS readings, argument helpers and result lines.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

int bench_argc;
char **bench_argv;
int bench_pinning = 1;

static int cpu_list[CPU_SETSIZE];
static int cpu_count;

uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void bench_init(int argc, char **argv)
{
    bench_argc = argc;
    bench_argv = argv;
    const char *np = getenv("BENCH_NOPIN");
    if (np && *np && strcmp(np, "0") != 0)
        bench_pinning = 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set))
                cpu_list[cpu_count++] = c;
    }
    if (cpu_count == 0)
        cpu_list[cpu_count++] = 0;
}

int bench_ncpus(void) { return cpu_count ? cpu_count : 1; }
int bench_cpu(int i) { return cpu_list[i % bench_ncpus()]; }

void bench_pin_self(int cpu)
{
    if (!bench_pinning)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

void bench_lock_acquire(bench_lock *l)
{
    unsigned spins = 0;
    while (atomic_exchange_explicit(&l->held, 1, memory_order_acquire)) {
        while (atomic_load_explicit(&l->held, memory_order_relaxed)) {
            if (++spins < 128)
                cpu_relax();
            else
                sched_yield();
        }
    }
}

/* ---- kernel counters over the timed region (BENCH_KSTAT=1) ------------- */
/* The /proc/vmstat counters that say what the kernel did for the program's
   memory: faults, huge pages, NUMA hinting and migration, page allocation. */
static const char *const kstat_prefixes[] = {
    "pgfault", "pgmajfault", "thp_", "numa_", "pgmigrate_", "pgalloc_", "pgfree", "compact_",
};
#define KSTAT_MAX 160

struct kstat {
    int n;
    char name[KSTAT_MAX][64];
    long long value[KSTAT_MAX];
};

static int kstat_wanted(const char *name)
{
    if (strncmp(name, "nr_", 3) == 0)
        return 0;
    for (size_t i = 0; i < sizeof kstat_prefixes / sizeof kstat_prefixes[0]; i++)
        if (strncmp(name, kstat_prefixes[i], strlen(kstat_prefixes[i])) == 0)
            return 1;
    return 0;
}

static void kstat_add(struct kstat *k, const char *name, long long v)
{
    if (k->n < KSTAT_MAX) {
        snprintf(k->name[k->n], sizeof k->name[0], "%s", name);
        k->value[k->n++] = v;
    }
}

/* vmstat counters, TLB shootdown IPIs (all CPUs, /proc/interrupts) and the
   process's faults and context switches. */
long long bench_tlb_shootdowns(void)
{
    FILE *f = fopen("/proc/interrupts", "r");
    if (!f)
        return -1;
    char line[4096];
    long long sum = -1;
    while (fgets(line, sizeof line, f)) {
        if (!strstr(line, "TLB shootdowns"))
            continue;
        sum = 0;
        char *p = strchr(line, ':');
        for (char *end; p && *++p;) {
            long long x = strtoll(p, &end, 10);
            if (end == p)
                break;
            sum += x;
            p = end - 1;
        }
    }
    fclose(f);
    return sum;
}

static void kstat_read(struct kstat *k)
{
    k->n = 0;
    char line[4096], name[64];
    long long v;
    FILE *f = fopen("/proc/vmstat", "r");
    if (f) {
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "%63s %lld", name, &v) == 2 && kstat_wanted(name))
                kstat_add(k, name, v);
        fclose(f);
    }
    long long tlb = bench_tlb_shootdowns();
    if (tlb >= 0)
        kstat_add(k, "tlb_shootdowns", tlb);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    kstat_add(k, "proc_minflt", ru.ru_minflt);
    kstat_add(k, "proc_majflt", ru.ru_majflt);
    kstat_add(k, "proc_nvcsw", ru.ru_nvcsw);
    kstat_add(k, "proc_nivcsw", ru.ru_nivcsw);
}

/* Mappings (VMAs) of the process now: lines of /proc/self/maps. */
static long count_vmas(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    long n = 0;
    for (int c; (c = fgetc(f)) != EOF;)
        n += c == '\n';
    fclose(f);
    return n;
}

static void kstat_print(const struct kstat *a, const struct kstat *b)
{
    printf("note: kernel over the timed region: vmas_at_end=%ld", count_vmas());
    for (int i = 0; i < b->n; i++) {
        long long before = 0;
        for (int j = 0; j < a->n; j++)
            if (strcmp(a->name[j], b->name[i]) == 0)
                before = a->value[j];
        if (b->value[i] != before)
            printf(" %s=%lld", b->name[i], b->value[i] - before);
    }
    printf("\n");
}

/* 0 off, 1 counters, 2 counters and the process's mappings with their
   policies (/proc/self/maps, numa_maps) at the end, to tell where faults
   were. */
static int kstat_enabled(void)
{
    const char *e = getenv("BENCH_KSTAT");
    if (!e || !*e || strcmp(e, "0") == 0)
        return 0;
    return strcmp(e, "2") == 0 ? 2 : 1;
}

static void dump_numa_maps(void)
{
    static const char *const files[] = { "/proc/self/maps", "/proc/self/numa_maps" };
    char line[1024];
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(files[i], "r");
        while (f && fgets(line, sizeof line, f))
            printf("note: %s: %s", files[i] + 11, line);
        if (f)
            fclose(f);
    }
}

/* The end of the window is taken by the first worker that stops, so that
   what threads do after their timed region (clean-up, exit) is left out. */
static struct kstat kstat_start, kstat_end;
static int kstat_on;
static atomic_int kstat_taken;

/* ---- thread team ------------------------------------------------------- */
static pthread_barrier_t team_barrier;
static bench_fn team_fn;        /* one team runs at a time */

static void *team_main(void *p)
{
    bench_thread *t = p;
    bench_pin_self(t->cpu);
    team_fn(t);
    if (t->t_end == 0)
        bench_stop(t);
    return NULL;
}

void bench_sync(bench_thread *t)
{
    pthread_barrier_wait(&team_barrier);
    t->t_start = now_ns();
    t->cpu_start = thread_cpu_ns();
}

void bench_stop(bench_thread *t)
{
    t->t_end = now_ns();
    t->cpu_end = thread_cpu_ns();
    if (kstat_on && atomic_exchange(&kstat_taken, 1) == 0)
        kstat_read(&kstat_end);
}

uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double tv_s(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec / 1e6; }

void bench_team_run(int n, bench_fn fn, void *arg, bench_team *out)
{
    if (n < 1)
        die("thread count must be >= 1");
    bench_thread *ts = NULL;
    if (posix_memalign((void **)&ts, 128, sizeof *ts * (size_t)n) != 0)
        die("out of memory");
    pthread_t *tids = calloc((size_t)n, sizeof *tids);
    team_fn = fn;
    kstat_on = kstat_enabled();
    atomic_store(&kstat_taken, 0);
    pthread_barrier_init(&team_barrier, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++) {
        memset(&ts[i], 0, sizeof ts[i]);
        ts[i].id = i;
        ts[i].nthreads = n;
        ts[i].cpu = bench_cpu(i);
        ts[i].arg = arg;
        ts[i].rng = rng_seed(0x6e6f64616cULL, (uint64_t)i);
        int e = pthread_create(&tids[i], NULL, team_main, &ts[i]);
        if (e)
            die("pthread_create: %s", strerror(e));
    }
    /* The main thread joins the start barrier so that it can read the CPU
       time at the start of the timed region. */
    pthread_barrier_wait(&team_barrier);
    if (kstat_on)
        kstat_read(&kstat_start);
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    for (int i = 0; i < n; i++)
        pthread_join(tids[i], NULL);
    getrusage(RUSAGE_SELF, &r1);
    if (kstat_on) {
        if (!atomic_load(&kstat_taken))
            kstat_read(&kstat_end);
        kstat_print(&kstat_start, &kstat_end);
        if (kstat_on > 1)
            dump_numa_maps();
    }
    pthread_barrier_destroy(&team_barrier);

    memset(out, 0, sizeof *out);
    uint64_t first = UINT64_MAX, last = 0;
    for (int i = 0; i < n; i++) {
        if (ts[i].t_start < first)
            first = ts[i].t_start;
        if (ts[i].t_end > last)
            last = ts[i].t_end;
        out->ops += ts[i].ops;
        out->cpu_ns += ts[i].cpu_end - ts[i].cpu_start;
        for (int k = 0; k < 4; k++)
            out->acc[k] += ts[i].acc[k];
        double s = (double)(ts[i].t_end - ts[i].t_start) / 1e9;
        if (s > out->max_thread_s)
            out->max_thread_s = s;
    }
    out->wall_ns = last > first ? last - first : 1;
    out->user_s = tv_s(r1.ru_utime) - tv_s(r0.ru_utime);
    out->sys_s = tv_s(r1.ru_stime) - tv_s(r0.ru_stime);
    free(tids);
    free(ts);
}

double bench_ns_per_op(const bench_team *r, int threads)
{
    int cores = threads < bench_ncpus() ? threads : bench_ncpus();
    return r->ops ? (double)r->wall_ns * cores / (double)r->ops : 0.0;
}

double bench_cpu_ns_per_op(const bench_team *r)
{
    return r->ops ? (double)r->cpu_ns / (double)r->ops : 0.0;
}

/* ---- memory ------------------------------------------------------------ */
static long status_field_kib(const char *name)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long v = -1;
    size_t len = strlen(name);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, name, len) == 0 && line[len] == ':') {
            v = strtol(line + len + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return v;
}

long bench_rss_kib(void) { return status_field_kib("VmRSS"); }

long bench_rss_now_kib(void)
{
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[128];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    /* "size resident shared text lib data dt", in OS pages */
    char *p = strchr(buf, ' ');
    if (!p)
        return -1;
    return strtol(p + 1, NULL, 10) * (sysconf(_SC_PAGESIZE) / 1024);
}
long bench_vm_kib(void) { return status_field_kib("VmSize"); }
long bench_peak_rss_kib(void) { return status_field_kib("VmHWM"); }

int bench_reset_peak_rss(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return -1;
    int ok = fputs("5", f) >= 0;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

void bench_touch_pages(void *p, size_t size)
{
    volatile char *c = p;
    for (size_t off = 0; off < size; off += 4096)
        c[off] = (char)off;
    if (size)
        c[size - 1] = 1;
}

/* ---- randomness -------------------------------------------------------- */
uint64_t rng_seed(uint64_t a, uint64_t b)
{
    /* splitmix64 finaliser of a mix of both inputs; never returns 0 */
    uint64_t z = a * 0x9E3779B97F4A7C15ULL + b + 0x632BE59BD9B4E019ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return z ? z : 1;
}

size_t rng_log_uniform(uint64_t *s, size_t lo, size_t hi)
{
    double u = (double)(rng_next(s) >> 11) / 9007199254740992.0;    /* [0, 1) */
    size_t v = (size_t)exp(log((double)lo) + u * (log((double)hi + 1) - log((double)lo)));
    return v < lo ? lo : v > hi ? hi : v;
}

/* ---- arguments --------------------------------------------------------- */
void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

long long parse_size(const char *s)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || v < 0)
        die("bad number: '%s'", s);
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
    }
    if (*end != '\0')
        die("bad number: '%s'", s);
    return v;
}

int parse_list(const char *s, long long *out, int max)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == max)
            die("list too long: '%s'", s);
        out[n++] = parse_size(tok);
    }
    if (n == 0)
        die("empty list");
    return n;
}

/* ---- output ------------------------------------------------------------ */
void bench_result(const char *workload, const char *fmt, ...)
{
    /* VmHWM in KiB on every result line: peak_rss_mib's 0.1 MiB steps are
       2-3 % of the small rows' peaks, too coarse for the heap profile's
       extra (docs/profiling.md). Read before the line is printed. */
    long hwm_kib = bench_peak_rss_kib();
    va_list ap;
    va_start(ap, fmt);
    printf("result %s ", workload);
    vprintf(fmt, ap);
    printf(" peak_rss_kib=%ld\n", hwm_kib);
    fflush(stdout);
    va_end(ap);
}
