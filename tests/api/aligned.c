/*
 * aligned.c - posix_memalign, aligned_alloc and memalign (and nodal_* twins):
 * every power-of-two alignment from the smallest legal one up to 64 MiB is
 * honoured, invalid alignments fail with EINVAL, impossible sizes with ENOMEM.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "check.h"
#include "pattern.h"
#include "proc.h"

#define MAX_ALIGN ((size_t)64 << 20)

/* The sizes tried at alignment a: tiny, just under/at/over a, a few a. */
static size_t sizes_for(size_t a, size_t out[8])
{
    size_t n = 0;
    out[n++] = 1;
    out[n++] = 24;
    if (a > 2)
        out[n++] = a / 2 + 1;
    out[n++] = a;
    out[n++] = a + 1;
    if (a <= ((size_t)16 << 20))
        out[n++] = 3 * a;
    return n;
}

/* Pattern over a block: all of it up to 1 MiB; above, its first and last
   4 KiB only (enough to show the block is really there, without a page
   fault per 4 KiB of a 64 MiB block). */
static size_t pat_ends(void *p, size_t s, int check)
{
    if (s <= ((size_t)1 << 20))
        return check ? nd_pat_check(p, s, s, (uintptr_t)p)
                     : (nd_pat_fill(p, s, (uintptr_t)p), SIZE_MAX);
    size_t bad = nd_pat_range(p, 0, ND_PAT_PAGE, (uintptr_t)p, check);
    if (bad != SIZE_MAX)
        return bad;
    return nd_pat_range(p, s - ND_PAT_PAGE, s, (uintptr_t)p, check);
}

/* Holds several blocks at once (for small alignments several slots of the
   same page get checked), fills and verifies them, frees them. */
static void check_aligned_blocks(const char *fn, size_t a, size_t s, void **blocks, size_t count)
{
    const struct nd_api *A = nd_api();
    for (size_t k = 0; k < count; k++) {
        EXPECT(blocks[k] != NULL, "%s(alignment %zu, size %zu) to succeed (errno %d)",
               fn, a, s, errno);
        EXPECT(is_aligned(blocks[k], a), "%s(alignment %zu, size %zu) to be %zu-aligned, got %p",
               fn, a, s, a, blocks[k]);
        size_t u = A->usable_size(blocks[k]);
        EXPECT(u >= s, "%s(alignment %zu, size %zu) to have >= %zu usable bytes, has %zu",
               fn, a, s, s, u);
        pat_ends(blocks[k], s, 0);
    }
    for (size_t k = 0; k < count; k++) {
        size_t bad = pat_ends(blocks[k], s, 1);
        EXPECT(bad == SIZE_MAX, "%s(alignment %zu, size %zu) block %p to keep its contents, "
               "byte %zu changed", fn, a, s, blocks[k], bad);
        A->free(blocks[k]);
    }
}

static size_t copies_for(size_t a, size_t s)
{
    return (a <= 4096 && s <= 65536) ? 16 : 1;
}

static void posix_memalign_honours_every_power_of_two_alignment(void)
{
    const struct nd_api *A = nd_api();
    for (size_t a = sizeof(void *); a <= MAX_ALIGN; a *= 2) {
        size_t sizes[8], ns = sizes_for(a, sizes);
        for (size_t i = 0; i < ns; i++) {
            void *b[16];
            size_t c = copies_for(a, sizes[i]);
            for (size_t k = 0; k < c; k++) {
                b[k] = NULL;
                int rc = A->posix_memalign(&b[k], a, sizes[i]);
                EXPECT(rc == 0, "%s(alignment %zu, size %zu) to return 0, got %d",
                       nd_fn("posix_memalign"), a, sizes[i], rc);
            }
            check_aligned_blocks(nd_fn("posix_memalign"), a, sizes[i], b, c);
        }
    }
}

static void aligned_alloc_honours_every_power_of_two_alignment(void)
{
    const struct nd_api *A = nd_api();
    for (size_t a = 1; a <= MAX_ALIGN; a *= 2) {
        /* C11 asks for a size that is a multiple of the alignment. */
        size_t sizes[] = { a, 2 * a, 3 * a, (a < 64 ? 64 : a) };
        for (size_t i = 0; i < 4; i++) {
            if (sizes[i] > ((size_t)128 << 20))
                continue;
            void *b[16];
            size_t c = copies_for(a, sizes[i]);
            for (size_t k = 0; k < c; k++)
                b[k] = A->aligned_alloc(a, sizes[i]);
            check_aligned_blocks(nd_fn("aligned_alloc"), a, sizes[i], b, c);
        }
    }
}

/* Requests of up to 1 KiB at alignments of 32 bytes to 16 KiB (the aligned
   fast path's table, class.h): each block is aligned, holds the request,
   and is a block of the smallest aligned class, a multiple of the
   alignment less than twice the larger of the size and the alignment (a
   power of two always is such a class); under secure=1 and 2 usable_size
   gives less than the block (the canary word follows what it gives:
   filling the usable bytes and freeing the block must not abort). posix_memalign keeps errno. Each size is
   asked for several times (several blocks of a cached page), with both
   calls. */
static void small_aligned_requests_take_the_smallest_aligned_class(void)
{
    const struct nd_api *A = nd_api();
    const char *opts = getenv("NODAL_OPTIONS");
    bool secure = opts != NULL && strstr(opts, "secure=") != NULL && strstr(opts, "secure=0") == NULL;
    static const size_t sizes[] = { 0, 1, 24, 31, 32, 33, 48, 64, 100, 255, 256, 257, 600, 1000, 1017, 1024 };
    for (size_t a = 32; a <= 16384; a *= 2) {
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            size_t n = sizes[i], big = n > a ? n : a;
            void *b[8];
            for (size_t k = 0; k < 8; k++) {
                if (k % 2 == 0) {
                    b[k] = A->aligned_alloc(a, n);
                } else {
                    errno = 4321;
                    int rc = A->posix_memalign(&b[k], a, n);
                    EXPECT(rc == 0 && errno == 4321, "posix_memalign(%zu, %zu) to succeed and keep errno, "
                           "got %d, errno %d", a, n, rc, errno);
                }
                EXPECT(b[k] != NULL && is_aligned(b[k], a), "a request of %zu B at alignment %zu to be "
                       "aligned, got %p", n, a, b[k]);
                size_t u = A->usable_size(b[k]);
                EXPECT(u >= n && (secure || (u >= big && u % a == 0)) && u < 2 * big, "a request of %zu B at alignment "
                       "%zu to take the smallest class that is a multiple of it, usable %zu B", n, a, u);
                memset(b[k], 0xa5, u);
            }
            for (size_t k = 0; k < 8; k++)
                A->free(b[k]);
        }
    }
}

static void memalign_honours_every_power_of_two_alignment(void)
{
    const struct nd_api *A = nd_api();
    for (size_t a = 1; a <= MAX_ALIGN; a *= 2) {
        size_t sizes[8], ns = sizes_for(a, sizes);
        for (size_t i = 0; i < ns; i++) {
            void *b[16];
            size_t c = copies_for(a, sizes[i]);
            for (size_t k = 0; k < c; k++)
                b[k] = A->memalign(a, sizes[i]);
            check_aligned_blocks(nd_fn("memalign"), a, sizes[i], b, c);
        }
    }
}

/* Alignments posix_memalign must refuse: not a power of two, or below
   sizeof(void *). */
static const size_t bad_posix_alignments[] = {
    0, 1, 2, 4, 3, 12, 24, 48, 100, 4095, 4097, 3 << 20, SIZE_MAX,
    ((size_t)1 << 63) + 8,
};

static void posix_memalign_rejects_invalid_alignment_with_einval(void)
{
    const struct nd_api *A = nd_api();
    size_t sizes[] = { 0, 1, 100, 1 << 20 };
    for (size_t i = 0; i < sizeof bad_posix_alignments / sizeof bad_posix_alignments[0]; i++) {
        size_t a = bad_posix_alignments[i];
        if (a == sizeof(void *))
            continue;
        for (size_t k = 0; k < 4; k++) {
            void *sentinel = (void *)(uintptr_t)0x5eed;
            void *out = sentinel;
            int rc = A->posix_memalign(&out, a, sizes[k]);
            EXPECT(rc == EINVAL, "%s(alignment %zu, size %zu) to return EINVAL (%d), got %d",
                   nd_fn("posix_memalign"), a, sizes[k], EINVAL, rc);
            EXPECT(out == sentinel, "%s(alignment %zu, size %zu) to leave *out untouched "
                   "on EINVAL, it became %p", nd_fn("posix_memalign"), a, sizes[k], out);
        }
    }
}

static void aligned_alloc_rejects_invalid_alignment_with_einval(void)
{
    const struct nd_api *A = nd_api();
    size_t bad[] = { 0, 3, 12, 24, 48, 100, 4095, 4097, 3 << 20, SIZE_MAX };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t s = bad[i] && bad[i] < 4096 ? bad[i] * 4 : 4096;
        errno = 0;
        void *p = A->aligned_alloc(bad[i], s);
        EXPECT(p == NULL, "%s(alignment %zu, size %zu) to fail, got %p",
               nd_fn("aligned_alloc"), bad[i], s, p);
        EXPECT(errno == EINVAL, "%s(alignment %zu, size %zu) to set errno to EINVAL (%d), got %d",
               nd_fn("aligned_alloc"), bad[i], s, EINVAL, errno);
    }
}

/* (alignment, size) pairs no allocator can satisfy; some are built to
   overflow a careless "size + alignment" or "round up to alignment". */
struct impossible { size_t align, size; };
static const struct impossible impossible[] = {
    { 16, SIZE_MAX & ~(size_t)15 },
    { 64, SIZE_MAX - 63 },
    { 4096, SIZE_MAX - 4095 },
    { 4096, (size_t)PTRDIFF_MAX + 1 },
    { (size_t)1 << 20, SIZE_MAX - ((size_t)1 << 20) + 1 },
    { (size_t)1 << 20, ((size_t)PTRDIFF_MAX + 1) },
    { (size_t)1 << 26, SIZE_MAX - ((size_t)1 << 26) + 1 },
    { (size_t)1 << 26, (size_t)1 << 62 },
    { (size_t)1 << 62, (size_t)1 << 62 },
};
#define N_IMPOSSIBLE (sizeof impossible / sizeof impossible[0])

static void posix_memalign_with_impossible_size_returns_enomem(void)
{
    const struct nd_api *A = nd_api();
    for (size_t i = 0; i < N_IMPOSSIBLE; i++) {
        void *sentinel = (void *)(uintptr_t)0x5eed;
        void *out = sentinel;
        int rc = A->posix_memalign(&out, impossible[i].align, impossible[i].size);
        EXPECT(rc == ENOMEM, "%s(alignment %zu, size %zu) to return ENOMEM (%d), got %d",
               nd_fn("posix_memalign"), impossible[i].align, impossible[i].size, ENOMEM, rc);
        EXPECT(out == sentinel || out == NULL,
               "%s(alignment %zu, size %zu) to leave *out untouched (or NULL) on ENOMEM, it became %p",
               nd_fn("posix_memalign"), impossible[i].align, impossible[i].size, out);
    }
}

static void aligned_alloc_with_impossible_size_fails_with_enomem(void)
{
    const struct nd_api *A = nd_api();
    for (size_t i = 0; i < N_IMPOSSIBLE; i++) {
        errno = 0;
        void *p = A->aligned_alloc(impossible[i].align, impossible[i].size);
        EXPECT(p == NULL && errno == ENOMEM,
               "%s(alignment %zu, size %zu) to give NULL with errno ENOMEM (%d), got %p, errno %d",
               nd_fn("aligned_alloc"), impossible[i].align, impossible[i].size, ENOMEM, p, errno);
    }
}

static void memalign_with_impossible_size_fails_with_enomem(void)
{
    const struct nd_api *A = nd_api();
    for (size_t i = 0; i < N_IMPOSSIBLE; i++) {
        errno = 0;
        void *p = A->memalign(impossible[i].align, impossible[i].size);
        EXPECT(p == NULL && errno == ENOMEM,
               "%s(alignment %zu, size %zu) to give NULL with errno ENOMEM (%d), got %p, errno %d",
               nd_fn("memalign"), impossible[i].align, impossible[i].size, ENOMEM, p, errno);
    }
}

/* Blocks at large alignments are freed in full by plain free. */
static void aligned_blocks_are_freed_in_full(void)
{
    const struct nd_api *A = nd_api();
    nodal_memory_info before, after;
    EXPECT(nodal_memory_info_get(&before) == 0, "nodal_memory_info_get to succeed");
    for (int round = 0; round < 3; round++)
        for (size_t a = 16; a <= MAX_ALIGN; a *= 2) {
            void *p = NULL;
            EXPECT(A->posix_memalign(&p, a, 100) == 0, "%s(%zu, 100) to succeed",
                   nd_fn("posix_memalign"), a);
            A->free(p);
        }
    EXPECT(nodal_memory_info_get(&after) == 0, "nodal_memory_info_get to succeed");
    EXPECT(after.allocated == before.allocated,
           "nodal_memory_info.allocated to be back at %zu after freeing every aligned block, "
           "it is %zu", before.allocated, after.allocated);
}

/* Found by the fuzzer: an aligned request of size 0 with an alignment of
   4 MiB or more got an address one past its own mapping, which is often the
   header of the segment mapped right above it; that segment's map entry was
   overwritten, so its block stopped being nodal's. A huge block is made
   first, each zero-size request after it, and the huge block must stay
   intact. Run in a child: the failure is an abort inside nodal. */
static void zero_size_aligned_requests_child(void *arg)
{
    (void)arg;
    const struct nd_api *A = nd_api();
    const size_t aligns[] = { (size_t)4 << 20, (size_t)8 << 20 };
    for (int round = 0; round < 4; round++) {
        for (size_t i = 0; i < 2; i++) {
            size_t hsize = ((size_t)6 << 20) + 12345;
            unsigned char *h = A->malloc(hsize);
            if (!h)
                _exit(4);
            nd_pat_fill(h, hsize, 7);
            void *q[3] = { NULL, NULL, NULL };
            if (A->posix_memalign(&q[0], aligns[i], 0) != 0)
                q[0] = NULL;
            q[1] = A->aligned_alloc(aligns[i], 0);
            q[2] = A->memalign(aligns[i], 0);
            for (int k = 0; k < 3; k++)
                if (q[k] && (unsigned char *)q[k] >= h && (unsigned char *)q[k] < h + hsize) {
                    fprintf(stderr, "a zero-size request aligned to %zu returned %p, inside the "
                            "live %zu-byte block %p\n", aligns[i], q[k], hsize, (void *)h);
                    _exit(3);
                }
            if (A->usable_size(h) < hsize || nd_pat_check(h, hsize, hsize, 7) != SIZE_MAX) {
                fprintf(stderr, "the %zu-byte block %p to keep its size and contents\n", hsize,
                        (void *)h);
                _exit(3);
            }
            for (int k = 0; k < 3; k++)
                A->free(q[k]);
            A->free(h);
        }
    }
}

static void zero_size_requests_with_segment_alignment_leave_other_blocks_intact(void)
{
    static struct nd_child c;
    nd_api();
    nd_run_forked(zero_size_aligned_requests_child, NULL, 60, &c);
    EXPECT(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0,
           "zero-size requests aligned to 4 and 8 MiB to leave a live huge block intact; the "
           "child %s; its stderr: \"%s\"", nd_describe_status(c.status), c.err);
}

static const struct nd_case cases[] = {
    ND_CASE(posix_memalign_honours_every_power_of_two_alignment),
    ND_CASE(aligned_alloc_honours_every_power_of_two_alignment),
    ND_CASE(memalign_honours_every_power_of_two_alignment),
    ND_CASE(small_aligned_requests_take_the_smallest_aligned_class),
    ND_CASE(posix_memalign_rejects_invalid_alignment_with_einval),
    ND_CASE(aligned_alloc_rejects_invalid_alignment_with_einval),
    ND_CASE(posix_memalign_with_impossible_size_returns_enomem),
    ND_CASE(aligned_alloc_with_impossible_size_fails_with_enomem),
    ND_CASE(memalign_with_impossible_size_fails_with_enomem),
    ND_CASE(aligned_blocks_are_freed_in_full),
    ND_CASE(zero_size_requests_with_segment_alignment_leave_other_blocks_intact),
};
ND_MAIN(cases)
