/*
 * liveprobe.c - the program's own live bytes at their peak, by size band: a
 * library to preload BEFORE the allocator, not a workload.
 *
 *     LD_PRELOAD="build/bench/libliveprobe.so build/libnodal.so" PROG ARGS
 *     LD_PRELOAD=build/bench/libliveprobe.so PROG ARGS      (glibc)
 *
 * It defines malloc, calloc, realloc, free, posix_memalign, aligned_alloc
 * and memalign, passes each call on to the next library's (RTLD_NEXT: the
 * allocator preloaded after it, or glibc), and adds or subtracts the
 * block's usable size (the allocator's malloc_usable_size) in one of four
 * bands, nodal's kinds of memory: small (up to 16 KiB), medium (to
 * 128 KiB), large (to 1 MiB) and huge. Each band keeps its own high, and
 * the sum its high with the four bands as they were at that moment. An
 * allocator's peak RSS against the live peak is what it holds beyond what
 * the program had in use at once; against the sum of the bands' highs, how
 * much of it is each kind reaching its own high at another time. Usable
 * sizes count each allocator's rounding, so compare the peaks of one
 * allocator, or take glibc's (16 bytes over the request) as the program's.
 *
 * At exit one line goes to stderr (or to the file LIVEPROBE_OUT names):
 *     liveprobe peak_live_kib=... at_peak small=... medium=... large=...
 *       huge=... band_peaks small=... medium=... large=... huge=... (KiB)
 * Every call takes two atomic additions on shared words: threads that
 * allocate at once slow each other down, so time a program without it.
 * Calls C++'s operator new makes directly to an allocator that defines
 * it (libnodal.so does) are not seen. Written for issue 18's peaks
 * (docs/results.md, branch h49m).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SMALL, MEDIUM, LARGE, HUGE, BANDS };
static const char *const band_names[BANDS] = { "small", "medium", "large", "huge" };

static void *(*next_malloc)(size_t);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);
static void (*next_free)(void *);
static int (*next_posix_memalign)(void **, size_t, size_t);
static void *(*next_aligned_alloc)(size_t, size_t);
static void *(*next_memalign)(size_t, size_t);
static size_t (*next_usable)(void *);

static _Atomic long live[BANDS], band_peak[BANDS], total, total_peak;
static long at_peak[BANDS];   /* the bands when total_peak was set (racy: approximate) */

/* dlsym may allocate (calloc) before the next library's functions are
   known: those few bytes come from here and are never freed. */
static _Alignas(16) char boot[16384];
static _Atomic size_t boot_used;
static _Atomic int resolving;

static void *boot_alloc(size_t n)
{
    size_t at = atomic_fetch_add(&boot_used, (n + 15) & ~(size_t)15);
    return at + n <= sizeof boot ? boot + at : NULL;
}

static int from_boot(const void *p) { return (const char *)p >= boot && (const char *)p < boot + sizeof boot; }

static void resolve(void)
{
    atomic_store(&resolving, 1);
    next_malloc = dlsym(RTLD_NEXT, "malloc");
    next_calloc = dlsym(RTLD_NEXT, "calloc");
    next_realloc = dlsym(RTLD_NEXT, "realloc");
    next_free = dlsym(RTLD_NEXT, "free");
    next_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
    next_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
    next_memalign = dlsym(RTLD_NEXT, "memalign");
    next_usable = dlsym(RTLD_NEXT, "malloc_usable_size");
    atomic_store(&resolving, 0);
}

__attribute__((constructor)) static void liveprobe_init(void)
{
    if (next_malloc == NULL)
        resolve();
}

static int band_of(size_t n) { return n <= (16u << 10) ? SMALL : n <= (128u << 10) ? MEDIUM : n <= (1u << 20) ? LARGE : HUGE; }

static void count(void *p, long sign)
{
    if (p == NULL || from_boot(p))
        return;
    long n = sign * (long)next_usable(p);
    int b = band_of((size_t)(sign * n));
    long v = atomic_fetch_add(&live[b], n) + n;
    long t = atomic_fetch_add(&total, n) + n;
    if (sign < 0)
        return;
    long old = atomic_load(&band_peak[b]);
    while (v > old && !atomic_compare_exchange_weak(&band_peak[b], &old, v))
        ;
    old = atomic_load(&total_peak);
    while (t > old) {
        if (atomic_compare_exchange_weak(&total_peak, &old, t)) {
            for (int i = 0; i < BANDS; i++)
                at_peak[i] = atomic_load(&live[i]);
            break;
        }
    }
}

void *malloc(size_t n)
{
    if (next_malloc == NULL) {
        if (atomic_load(&resolving))
            return boot_alloc(n);
        resolve();
    }
    void *p = next_malloc(n);
    count(p, 1);
    return p;
}

void *calloc(size_t k, size_t n)
{
    if (next_calloc == NULL) {
        if (atomic_load(&resolving)) {
            if (n != 0 && k > (size_t)-1 / n)
                return NULL;
            return boot_alloc(k * n);   /* static: zero already */
        }
        resolve();
    }
    void *p = next_calloc(k, n);
    count(p, 1);
    return p;
}

void free(void *p)
{
    if (p == NULL || from_boot(p))
        return;
    count(p, -1);
    next_free(p);
}

void *realloc(void *p, size_t n)
{
    if (next_realloc == NULL)
        resolve();
    if (from_boot(p)) {
        void *q = malloc(n);
        size_t room = (size_t)(boot + sizeof boot - (char *)p);
        if (q != NULL)
            memcpy(q, p, n < room ? n : room);
        return q;
    }
    if (p != NULL) {
        /* Counted out first: the block may move or be freed (n == 0). */
        count(p, -1);
    }
    void *q = next_realloc(p, n);
    count(q != NULL ? q : (n != 0 ? p : NULL), 1);
    return q;
}

int posix_memalign(void **out, size_t align, size_t n)
{
    if (next_posix_memalign == NULL)
        resolve();
    int e = next_posix_memalign(out, align, n);
    if (e == 0)
        count(*out, 1);
    return e;
}

static void *counted(void *p)
{
    count(p, 1);
    return p;
}

void *aligned_alloc(size_t align, size_t n)
{
    if (next_aligned_alloc == NULL)
        resolve();
    return counted(next_aligned_alloc(align, n));
}

void *memalign(size_t align, size_t n)
{
    if (next_memalign == NULL)
        resolve();
    return counted(next_memalign(align, n));
}

__attribute__((destructor)) static void liveprobe_report(void)
{
    const char *path = getenv("LIVEPROBE_OUT");
    FILE *f = path != NULL ? fopen(path, "a") : NULL;
    FILE *out = f != NULL ? f : stderr;
    fprintf(out, "liveprobe peak_live_kib=%ld at_peak", atomic_load(&total_peak) >> 10);
    for (int i = 0; i < BANDS; i++)
        fprintf(out, " %s=%ld", band_names[i], at_peak[i] >> 10);
    fprintf(out, " band_peaks");
    for (int i = 0; i < BANDS; i++)
        fprintf(out, " %s=%ld", band_names[i], atomic_load(&band_peak[i]) >> 10);
    fprintf(out, "\n");
    if (f != NULL)
        fclose(f);
}
