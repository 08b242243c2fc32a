/*
 * peakprobe.c - what is resident at a program's peak, by kind of memory: a
 * library to preload after the allocator, not a workload.
 *
 *     LD_PRELOAD="build/libnodal.so build/bench/libpeakprobe.so" PROG ARGS
 *
 * A thread samples /proc/self/statm every PEAKPROBE_US microseconds
 * (default 300). At each new high of the resident set it walks the
 * process's anonymous mappings in 4 MiB windows and counts each window's
 * resident OS pages (mincore), classed by what nodal's segment header at the
 * window's start says (src/segment/segment.h, struct nd_segment: the `kind`
 * byte at offset 8, the mapped `size` at offset 16): small, medium and large
 * segments, huge blocks (a mapping each, counted whole), freed huge mappings
 * in a node's cache (kind FREE with a huge size), free 4 MiB segments (a
 * heap's spare or a node's cache), and the rest of the anonymous memory
 * (nodal's bookkeeping, thread stacks; all of it when nodal is not loaded,
 * whose headers the windows of another allocator's heaps would be mistaken
 * for). With nodal loaded it also takes nodal_memory_info_get's
 * allocated bytes and the huge cache's gauge (nodal_stats_json) at the same
 * high. Files mapped (code, data of libraries) are counted apart.
 *
 * At exit one line goes to stderr (or to the file PEAKPROBE_OUT names):
 *     peakprobe rss_kib=... small=... medium=... large=... huge=...
 *       huge_cached=... free_seg=... other_anon=... files=... (KiB; the
 *       number of windows in parentheses) allocated_kib=... huge_cached_kib=...
 * PEAKPROBE_JSON names a file for nodal_stats_json's answer at the high
 * whose allocated bytes were the most (where the overheads are measured
 * against the blocks the program holds).
 * A second line, peakprobe_first, gives the same for the first sampled high
 * within PEAKPROBE_NEAR_KIB (default 256) of the last one, with its time
 * (ms since the library was loaded) and the last high's: a resident set
 * that stops growing early gets its last few OS pages at the program's
 * end, when its blocks are freed and its segments emptied (allocated_kib
 * near 0), which is not what was resident when it got there.
 * The gauges are read just before the walk, so a block freed meanwhile
 * can put them apart from the windows. The sampled peak is a little under
 * the kernel's (VmHWM): a high that
 * lasts less than the interval can be missed, and the walk itself takes a
 * while. The sampling thread slows the program a little, which can change
 * what a program whose threads race each other holds (bench/batchq's queue
 * fills more). Written for issue 18's peaks (docs/results.md, branch h47b).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define WINDOW ((uintptr_t)4 << 20)
#define KIND_OFFSET 8    /* struct nd_segment: cookie (8 bytes), then kind */
#define SIZE_OFFSET 16   /* ... kind, page_shift, bound, abandoned, node (2), page_count (2), then size */
enum { SEG_FREE = 0, SEG_SMALL, SEG_MEDIUM, SEG_LARGE, SEG_HUGE };   /* segment.h's ND_SEG_* */

enum { C_FREE_SEG, C_SMALL, C_MEDIUM, C_LARGE, C_HUGE, C_HUGE_CACHED, C_OTHER, C_FILES, C_COUNT };
static const char *const class_names[C_COUNT] = {
    "free_seg", "small", "medium", "large", "huge", "huge_cached", "other_anon", "files",
};

struct tally {
    long kib[C_COUNT];
    long windows[C_COUNT];
};

static atomic_int stop;
static pthread_t sampler;
static int started;
static long best_rss;
static struct tally best;
static long best_allocated = -1, best_huge_cached = -1;
/* Every new high's sample, in order, for the report of the first one
   within PEAKPROBE_NEAR_KIB of the last (the moment the peak was reached:
   a program whose resident set stops growing early sets its last highs
   with a few OS pages at its end, when what it held has been freed). */
#define HISTORY 4096
struct sample_at {
    long rss, allocated, ms;
    struct tally t;
};
static struct sample_at history[HISTORY];
static int history_count;
static struct timespec t0;
static unsigned char vec[WINDOW / 4096 * 64];   /* mincore's answer for up to 256 MiB at once */
static char json[1 << 20];
static char best_json[1 << 20];   /* the statistics at the high with the most allocated (PEAKPROBE_JSON) */
static long best_json_allocated = -1;

typedef struct { size_t allocated, active, mapped, committed, returned, peak_active, peak_mapped, segments,
                 rss_current, rss_peak; } probe_meminfo;   /* include/nodal.h: nodal_memory_info */
static int (*info_get)(probe_meminfo *);
static size_t (*stats_json)(char *, size_t);

static long rss_kib(void)
{
    char buf[128];
    int fd = open("/proc/self/statm", O_RDONLY);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    long size = 0, res = 0;
    sscanf(buf, "%ld %ld", &size, &res);
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

static long resident_kib(uintptr_t start, size_t len)
{
    long kib = 0;
    while (len > 0) {
        size_t part = len < sizeof vec * 4096 ? len : sizeof vec * 4096;
        if (mincore((void *)start, part, vec) != 0)
            return kib;
        for (size_t i = 0; i < part / 4096; i++)
            kib += (vec[i] & 1) * 4;
        start += part;
        len -= part;
    }
    return kib;
}

/* What a 4 MiB-aligned window of an anonymous, readable mapping holds, and
   how far the thing it starts reaches (a huge mapping: its size). */
static int classify(uintptr_t at, uintptr_t end, size_t *span)
{
    /* Read through the kernel (process_vm_readv): the mapping may be gone
       since /proc/self/maps was read (a thread's stack, a huge block
       freed), and a read of it would kill the program. */
    unsigned char head[SIZE_OFFSET + sizeof(size_t)];
    struct iovec local = { head, sizeof head }, remote = { (void *)at, sizeof head };
    *span = WINDOW;
    if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != (ssize_t)sizeof head)
        return C_OTHER;
    uint8_t kind = head[KIND_OFFSET];
    size_t size;
    memcpy(&size, head + SIZE_OFFSET, sizeof size);
    if (kind >= SEG_SMALL && kind <= SEG_LARGE && size > 0 && size <= WINDOW)
        return kind == SEG_SMALL ? C_SMALL : kind == SEG_MEDIUM ? C_MEDIUM : C_LARGE;
    if ((kind == SEG_HUGE || kind == SEG_FREE) && size >= ((size_t)1 << 20) && size != WINDOW &&
        size <= end - at) {
        *span = size;
        return kind == SEG_HUGE ? C_HUGE : C_HUGE_CACHED;
    }
    if (kind == SEG_FREE && size == WINDOW)
        return C_FREE_SEG;
    return C_OTHER;
}

static void walk(struct tally *t)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen("/proc/self/maps", "r");
    if (f == NULL)
        return;
    char line[1024];
    while (fgets(line, sizeof line, f) != NULL) {
        unsigned long lo, hi;
        char perm[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perm) != 3 || perm[0] != 'r')
            continue;
        if (strchr(line, '/') != NULL || strstr(line, "[stack]") != NULL || strstr(line, "[heap]") != NULL ||
            strstr(line, "[v") != NULL) {
            int c = strchr(line, '/') != NULL ? C_FILES : C_OTHER;
            t->kib[c] += resident_kib(lo, hi - lo);
            t->windows[c]++;
            continue;
        }
        uintptr_t at = lo;
        uintptr_t first = (lo + WINDOW - 1) & ~(WINDOW - 1);
        if (first > at) {   /* the mapping's unaligned start */
            uintptr_t stop_at = first < hi ? first : hi;
            t->kib[C_OTHER] += resident_kib(at, stop_at - at);
            at = stop_at;
        }
        while (at < hi) {
            size_t span = WINDOW;
            int c = info_get != NULL && at + 4096 <= hi ? classify(at, hi, &span) : C_OTHER;
            if (span > hi - at)
                span = hi - at;
            t->kib[c] += resident_kib(at, span);
            t->windows[c]++;
            at += span;
        }
    }
    fclose(f);
}

static long json_field(const char *name)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", name);
    const char *p = strstr(json, pat);
    return p != NULL ? atol(p + strlen(pat)) / 1024 : -1;
}

static void *sample(void *arg)
{
    (void)arg;
    const char *us = getenv("PEAKPROBE_US");
    long interval = us != NULL ? atol(us) : 300;
    struct timespec ts = { interval / 1000000, (interval % 1000000) * 1000 };
    struct tally t;
    while (!atomic_load(&stop)) {
        if (rss_kib() > best_rss) {
            probe_meminfo mi = { 0 };
            if (info_get != NULL)
                info_get(&mi);
            if (stats_json != NULL)
                stats_json(json, sizeof json);
            walk(&t);
            long now = rss_kib();
            if (now > best_rss) {
                best_rss = now;
                best = t;
                best_allocated = info_get != NULL ? (long)(mi.allocated / 1024) : -1;
                best_huge_cached = stats_json != NULL ? json_field("huge_cached_bytes") : -1;
                if (stats_json != NULL && best_allocated > best_json_allocated) {
                    memcpy(best_json, json, sizeof json);
                    best_json_allocated = best_allocated;
                }
                if (history_count < HISTORY) {
                    struct timespec ts_now;
                    clock_gettime(CLOCK_MONOTONIC, &ts_now);
                    struct sample_at *h = &history[history_count++];
                    h->rss = now;
                    h->allocated = best_allocated;
                    h->ms = (ts_now.tv_sec - t0.tv_sec) * 1000 + (ts_now.tv_nsec - t0.tv_nsec) / 1000000;
                    h->t = t;
                }
            }
        }
        nanosleep(&ts, NULL);
    }
    return NULL;
}

__attribute__((constructor)) static void probe_start(void)
{
    clock_gettime(CLOCK_MONOTONIC, &t0);
    info_get = (int (*)(probe_meminfo *))dlsym(RTLD_DEFAULT, "nodal_memory_info_get");
    stats_json = (size_t (*)(char *, size_t))dlsym(RTLD_DEFAULT, "nodal_stats_json");
    started = pthread_create(&sampler, NULL, sample, NULL) == 0;
}

__attribute__((destructor)) static void probe_report(void)
{
    if (!started)
        return;
    atomic_store(&stop, 1);
    pthread_join(sampler, NULL);
    const char *path = getenv("PEAKPROBE_OUT");
    FILE *out = path != NULL ? fopen(path, "a") : NULL;
    if (out == NULL)
        out = stderr;
    fprintf(out, "peakprobe rss_kib=%ld", best_rss);
    for (int c = 0; c < C_COUNT; c++)
        fprintf(out, " %s=%ld(%ld)", class_names[c], best.kib[c], best.windows[c]);
    fprintf(out, " allocated_kib=%ld huge_cached_kib=%ld\n", best_allocated, best_huge_cached);
    const char *json_path = getenv("PEAKPROBE_JSON");
    FILE *jf = json_path != NULL && best_json[0] != 0 ? fopen(json_path, "w") : NULL;
    if (jf != NULL) {
        fputs(best_json, jf);
        fclose(jf);
    }
    const char *near_s = getenv("PEAKPROBE_NEAR_KIB");
    long near = near_s != NULL ? atol(near_s) : 256;
    for (int i = 0; i < history_count; i++) {
        const struct sample_at *h = &history[i];
        if (h->rss + near < best_rss)
            continue;
        fprintf(out, "peakprobe_first rss_kib=%ld at_ms=%ld last_ms=%ld", h->rss, h->ms,
                history_count > 0 ? history[history_count - 1].ms : 0);
        for (int c = 0; c < C_COUNT; c++)
            fprintf(out, " %s=%ld(%ld)", class_names[c], h->t.kib[c], h->t.windows[c]);
        fprintf(out, " allocated_kib=%ld\n", h->allocated);
        break;
    }
    if (out != stderr)
        fclose(out);
}
