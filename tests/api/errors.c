/*
 * errors.c - every allocation entry point fails cleanly on sizes no allocator
 * can serve: NULL (or ENOMEM returned) with errno = ENOMEM, never a crash and
 * never a small block from an overflowed size computation.
 */
#define _GNU_SOURCE
#include <link.h>
#include <stdint.h>
#include <string.h>

#include "api.h"
#include "check.h"

/* Sizes above PTRDIFF_MAX or near SIZE_MAX (these overflow a careless
   "round up to the class" or "add a header"), and sizes larger than the
   address space. */
static const size_t impossible[] = {
    SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 15, SIZE_MAX - 4095,
    SIZE_MAX - ((size_t)2 << 20) + 1, SIZE_MAX - ((size_t)64 << 20) + 1,
    (size_t)PTRDIFF_MAX + 1, (size_t)PTRDIFF_MAX, (size_t)1 << 62, (size_t)1 << 48,
};
#define N_IMPOSSIBLE (sizeof impossible / sizeof impossible[0])

#define EXPECT_ENOMEM(call, fmt, ...)                                           \
    do {                                                                        \
        errno = 0;                                                              \
        void *r_ = (call);                                                      \
        int e_ = errno;                                                         \
        EXPECT(r_ == NULL && e_ == ENOMEM,                                      \
               fmt " to give NULL with errno ENOMEM (%d), got %p, errno %d",    \
               __VA_ARGS__, ENOMEM, r_, e_);                                    \
    } while (0)

static void malloc_of_impossible_size_fails_with_enomem(void)
{
    const struct nd_api *A = nd_api();
    for (size_t i = 0; i < N_IMPOSSIBLE; i++)
        EXPECT_ENOMEM(A->malloc(impossible[i]), "%s(%zu)", nd_fn("malloc"), impossible[i]);
}

static void calloc_of_impossible_size_fails_with_enomem(void)
{
    const struct nd_api *A = nd_api();
    for (size_t i = 0; i < N_IMPOSSIBLE; i++) {
        EXPECT_ENOMEM(A->calloc(1, impossible[i]), "%s(1, %zu)", nd_fn("calloc"), impossible[i]);
        EXPECT_ENOMEM(A->calloc(impossible[i], 1), "%s(%zu, 1)", nd_fn("calloc"), impossible[i]);
    }
}

static void calloc_overflow_fails_with_enomem(void)
{
    const struct nd_api *A = nd_api();
    static const size_t pairs[][2] = {
        { SIZE_MAX, 2 }, { 2, SIZE_MAX }, { SIZE_MAX / 2 + 1, 2 }, { 2, SIZE_MAX / 2 + 1 },
        { (size_t)1 << 32, (size_t)1 << 32 }, { SIZE_MAX, SIZE_MAX },
        { ((size_t)1 << 33) + 1, (size_t)1 << 31 }, { SIZE_MAX / 16 + 1, 16 },
        { 16, SIZE_MAX / 16 + 1 }, { (size_t)1 << 61, 8 },
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        EXPECT_ENOMEM(A->calloc(pairs[i][0], pairs[i][1]), "%s(%zu, %zu) (product overflows)",
                      nd_fn("calloc"), pairs[i][0], pairs[i][1]);
}

static void realloc_of_impossible_size_fails_with_enomem(void)
{
    const struct nd_api *A = nd_api();
    for (size_t i = 0; i < N_IMPOSSIBLE; i++) {
        EXPECT_ENOMEM(A->realloc(NULL, impossible[i]), "%s(NULL, %zu)", nd_fn("realloc"),
                      impossible[i]);
        EXPECT_ENOMEM(A->reallocarray(NULL, 1, impossible[i]), "%s(NULL, 1, %zu)",
                      nd_fn("reallocarray"), impossible[i]);
        void *p = A->malloc(64);
        EXPECT(p != NULL, "%s(64) to succeed", nd_fn("malloc"));
        EXPECT_ENOMEM(A->realloc(p, impossible[i]), "%s(p, %zu)", nd_fn("realloc"), impossible[i]);
        A->free(p);
    }
}

static void aligned_entry_points_fail_on_impossible_size_with_enomem(void)
{
    const struct nd_api *A = nd_api();
    for (size_t i = 0; i < N_IMPOSSIBLE; i++) {
        size_t s = impossible[i];
        EXPECT_ENOMEM(A->memalign(64, s), "%s(64, %zu)", nd_fn("memalign"), s);
        EXPECT_ENOMEM(A->aligned_alloc(16, s & ~(size_t)15), "%s(16, %zu)",
                      nd_fn("aligned_alloc"), s & ~(size_t)15);
        EXPECT_ENOMEM(A->valloc(s), "%s(%zu)", nd_fn("valloc"), s);
        EXPECT_ENOMEM(A->pvalloc(s), "%s(%zu) (rounding up to pages overflows)",
                      nd_fn("pvalloc"), s);
        void *sentinel = (void *)(uintptr_t)0x5eed, *out = sentinel;
        int rc = A->posix_memalign(&out, 64, s);
        EXPECT(rc == ENOMEM, "%s(64, %zu) to return ENOMEM (%d), got %d",
               nd_fn("posix_memalign"), s, ENOMEM, rc);
        EXPECT(out == sentinel || out == NULL,
               "%s(64, %zu) to leave *out untouched (or NULL) on failure, it became %p",
               nd_fn("posix_memalign"), s, out);
    }
}

/* After every kind of failure the allocator still works. */
static void allocation_works_after_failures(void)
{
    const struct nd_api *A = nd_api();
    for (size_t i = 0; i < N_IMPOSSIBLE; i++) {
        void *bad = A->malloc(impossible[i]);
        EXPECT(bad == NULL, "%s(%zu) to fail", nd_fn("malloc"), impossible[i]);
        void *p = A->malloc(1000);
        EXPECT(p != NULL, "%s(1000) to succeed after a failed %s(%zu)", nd_fn("malloc"),
               nd_fn("malloc"), impossible[i]);
        memset(p, 1, 1000);
        A->free(p);
    }
}

/* libnodal's own image (code, data, and static arrays such as the segment
   map) is address space every program that uses it holds from the start,
   and an address-space limit (ulimit -v, RLIMIT_AS) counts all of it. */
#ifndef ND_TEST_PREFIX_ONLY
static int nd_image_bytes(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    if (info->dlpi_name == NULL || strstr(info->dlpi_name, "libnodal") == NULL)
        return 0;
    size_t total = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD)
            total += (ph->p_memsz + (ph->p_vaddr & 4095) + 4095) & ~(size_t)4095;
    }
    *(size_t *)data = total;
    return 1;
}

static void nodal_image_takes_little_address_space(void)
{
    size_t bytes = 0;
    dl_iterate_phdr(nd_image_bytes, &bytes);
    if (bytes == 0)
        SKIP("nodal is linked into the program here: its image is the program's");
    EXPECT(bytes <= ((size_t)2 << 20), "libnodal's image, static data included, to take at most 2 MiB of "
           "address space (an RLIMIT_AS counts it), got %zu KiB", bytes >> 10);
}
#endif

static const struct nd_case cases[] = {
    ND_CASE(malloc_of_impossible_size_fails_with_enomem),
#ifndef ND_TEST_PREFIX_ONLY
    ND_CASE(nodal_image_takes_little_address_space),
#endif
    ND_CASE(calloc_of_impossible_size_fails_with_enomem),
    ND_CASE(calloc_overflow_fails_with_enomem),
    ND_CASE(realloc_of_impossible_size_fails_with_enomem),
    ND_CASE(aligned_entry_points_fail_on_impossible_size_with_enomem),
    ND_CASE(allocation_works_after_failures),
};
ND_MAIN(cases)
