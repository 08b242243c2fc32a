/*
 * realloc.c - realloc and reallocarray (and nodal_* twins): contents survive
 * every size-class, large and huge transition in both directions; size 0 and
 * NULL behave as glibc's; failures leave the block intact with ENOMEM.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "api.h"
#include "check.h"
#include "pattern.h"
#include "sizes.h"

#define TOP ((size_t)80 << 20)

/* realloc p (filled as `old` bytes with tag = its address) to `new_size`;
   checks the common prefix and refills. */
static void *resize_and_check(void *p, size_t old, size_t new_size, const char *how)
{
    const struct nd_api *A = nd_api();
    void *q = A->realloc(p, new_size);
    EXPECT(q != NULL, "%s(%p, %zu) from %zu bytes to succeed (errno %d) [%s]",
           nd_fn("realloc"), p, new_size, old, errno, how);
    EXPECT(is_aligned(q, 16), "%s(..., %zu) to be 16-byte aligned, got %p [%s]",
           nd_fn("realloc"), new_size, q, how);
    EXPECT(A->usable_size(q) >= new_size, "%s(..., %zu) to give >= %zu usable bytes, got %zu [%s]",
           nd_fn("realloc"), new_size, new_size, A->usable_size(q), how);
    size_t bad = nd_pat_check(q, old, nd_min_size(old, new_size), (uintptr_t)p);
    EXPECT(bad == SIZE_MAX, "%s from %zu to %zu bytes (%p -> %p) to keep the first %zu bytes, "
           "byte %zu differs [%s]", nd_fn("realloc"), old, new_size, p, q,
           nd_min_size(old, new_size), bad, how);
    nd_pat_fill(q, new_size, (uintptr_t)q);
    return q;
}

static size_t next_up(size_t s)
{
    return s < 1024 ? s + 1 : s + s / 16 + 1;
}

static size_t next_down(size_t s)
{
    return s <= 1024 ? s - 1 : s - s / 17 - 1;
}

static void realloc_preserves_contents_growing_through_every_size(void)
{
    const struct nd_api *A = nd_api();
    size_t s = 1;
    void *p = A->malloc(s);
    EXPECT(p != NULL, "%s(1) to succeed", nd_fn("malloc"));
    nd_pat_fill(p, s, (uintptr_t)p);
    while (s < TOP) {
        size_t t = next_up(s);
        p = resize_and_check(p, s, t, "growing step by step");
        s = t;
    }
    A->free(p);
}

static void realloc_preserves_contents_shrinking_through_every_size(void)
{
    const struct nd_api *A = nd_api();
    size_t s = TOP;
    void *p = A->malloc(s);
    EXPECT(p != NULL, "%s(%zu) to succeed", nd_fn("malloc"), s);
    nd_pat_fill(p, s, (uintptr_t)p);
    while (s > 1) {
        size_t t = next_down(s);
        p = resize_and_check(p, s, t, "shrinking step by step");
        s = t;
    }
    A->free(p);
}

/* From each size of a ladder to each other, starting from a plain block and
   (for half of the pairs) from a page-aligned one. */
static void realloc_preserves_contents_between_any_two_sizes(void)
{
    const struct nd_api *A = nd_api();
    for (size_t i = 0; i < ND_PAIR_SIZES; i++)
        for (size_t j = 0; j < ND_PAIR_SIZES; j++)
            for (int aligned = 0; aligned < 1 + (int)((i + j) % 2); aligned++) {
                size_t from = nd_pair_sizes[i], to = nd_pair_sizes[j];
                void *p = NULL;
                if (aligned)
                    EXPECT(A->posix_memalign(&p, 4096, from) == 0, "%s(4096, %zu) to succeed",
                           nd_fn("posix_memalign"), from);
                else
                    p = A->malloc(from);
                EXPECT(p != NULL, "an allocation of %zu bytes to succeed", from);
                nd_pat_fill(p, from, (uintptr_t)p);
                p = resize_and_check(p, from, to, aligned ? "from a 4096-aligned block"
                                                          : "from a malloc block");
                A->free(p);
            }
}

/* glibc: realloc(p, 0) frees p and returns NULL. */
static void realloc_to_zero_frees_the_block_and_returns_null(void)
{
    const struct nd_api *A = nd_api();
    size_t sizes[] = { 1, 100, 5000, 300000, (size_t)8 << 20 };
    for (size_t i = 0; i < 5; i++) {
        size_t before = allocated_now();
        void *p = A->malloc(sizes[i]);
        EXPECT(p != NULL, "%s(%zu) to succeed", nd_fn("malloc"), sizes[i]);
        void *q = A->realloc(p, 0);
        EXPECT(q == NULL, "%s(p, 0) to free p and return NULL (glibc behaviour), got %p "
               "for a %zu-byte block", nd_fn("realloc"), q, sizes[i]);
        size_t after = allocated_now();
        EXPECT(after == before, "%s(p, 0) to free the %zu-byte block: "
               "nodal_memory_info.allocated should be back at %zu, it is %zu",
               nd_fn("realloc"), sizes[i], before, after);
    }
}

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
    return x < y ? -1 : x > y;
}

/* realloc(NULL, 0) is malloc(0): a unique pointer that can be freed. */
static void realloc_of_null_to_zero_returns_unique_pointers(void)
{
    const struct nd_api *A = nd_api();
    enum { N = 200 };
    void *p[N];
    for (size_t i = 0; i < N; i++) {
        p[i] = A->realloc(NULL, 0);
        EXPECT(p[i] != NULL, "%s(NULL, 0) to return a pointer like malloc(0), got NULL",
               nd_fn("realloc"));
    }
    qsort(p, N, sizeof p[0], cmp_ptr);
    for (size_t i = 1; i < N; i++)
        EXPECT(p[i] != p[i - 1], "%s(NULL, 0) to return distinct pointers, %p came twice",
               nd_fn("realloc"), p[i]);
    for (size_t i = 0; i < N; i++)
        A->free(p[i]);
}

static void realloc_of_null_behaves_like_malloc(void)
{
    const struct nd_api *A = nd_api();
    static size_t ladder[ND_LADDER_MAX];
    size_t n = nd_size_ladder(ladder, (size_t)32 << 20);
    for (size_t i = 1; i < n; i++) {
        void *p = A->realloc(NULL, ladder[i]);
        EXPECT(p != NULL && is_aligned(p, 16),
               "%s(NULL, %zu) to return a 16-byte aligned block, got %p",
               nd_fn("realloc"), ladder[i], p);
        EXPECT(A->usable_size(p) >= ladder[i], "%s(NULL, %zu) to have >= %zu usable bytes",
               nd_fn("realloc"), ladder[i], ladder[i]);
        nd_pat_fill(p, ladder[i], 7);
        A->free(p);
    }
}

static const size_t impossible_sizes[] = {
    SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 15, SIZE_MAX - 4095,
    (size_t)PTRDIFF_MAX + 1, (size_t)1 << 62,
};

static void realloc_failure_keeps_the_block_and_sets_enomem(void)
{
    const struct nd_api *A = nd_api();
    size_t start[] = { 10, 3000, 200000, (size_t)6 << 20 };
    for (size_t i = 0; i < 4; i++) {
        void *p = A->malloc(start[i]);
        EXPECT(p != NULL, "%s(%zu) to succeed", nd_fn("malloc"), start[i]);
        nd_pat_fill(p, start[i], (uintptr_t)p);
        for (size_t k = 0; k < sizeof impossible_sizes / sizeof impossible_sizes[0]; k++) {
            errno = 0;
            void *q = A->realloc(p, impossible_sizes[k]);
            EXPECT(q == NULL && errno == ENOMEM,
                   "%s(p, %zu) to give NULL with errno ENOMEM (%d), got %p, errno %d",
                   nd_fn("realloc"), impossible_sizes[k], ENOMEM, q, errno);
            size_t bad = nd_pat_check(p, start[i], start[i], (uintptr_t)p);
            EXPECT(bad == SIZE_MAX, "a failed %s(p, %zu) to leave the %zu-byte block intact, "
                   "byte %zu changed", nd_fn("realloc"), impossible_sizes[k], start[i], bad);
        }
        A->free(p);
    }
}

static const size_t overflowing[][2] = {
    { SIZE_MAX, 2 }, { 2, SIZE_MAX }, { SIZE_MAX / 2 + 1, 2 },
    { (size_t)1 << 32, (size_t)1 << 32 }, { SIZE_MAX, SIZE_MAX },
    { ((size_t)1 << 33) + 1, (size_t)1 << 31 },
};
#define N_OVERFLOWING (sizeof overflowing / sizeof overflowing[0])

static void reallocarray_overflow_keeps_the_block_and_sets_enomem(void)
{
    const struct nd_api *A = nd_api();
    void *p = A->malloc(300);
    EXPECT(p != NULL, "%s(300) to succeed", nd_fn("malloc"));
    nd_pat_fill(p, 300, (uintptr_t)p);
    for (size_t k = 0; k < N_OVERFLOWING; k++) {
        errno = 0;
        void *q = A->reallocarray(p, overflowing[k][0], overflowing[k][1]);
        EXPECT(q == NULL && errno == ENOMEM,
               "%s(p, %zu, %zu) (product overflows) to give NULL with errno ENOMEM (%d), "
               "got %p, errno %d", nd_fn("reallocarray"), overflowing[k][0],
               overflowing[k][1], ENOMEM, q, errno);
        EXPECT(nd_pat_check(p, 300, 300, (uintptr_t)p) == SIZE_MAX,
               "a failed %s to leave the block intact", nd_fn("reallocarray"));
        errno = 0;
        q = A->reallocarray(NULL, overflowing[k][0], overflowing[k][1]);
        EXPECT(q == NULL && errno == ENOMEM,
               "%s(NULL, %zu, %zu) to give NULL with errno ENOMEM (%d), got %p, errno %d",
               nd_fn("reallocarray"), overflowing[k][0], overflowing[k][1], ENOMEM, q, errno);
    }
    A->free(p);
}

static void reallocarray_resizes_to_count_times_size(void)
{
    const struct nd_api *A = nd_api();
    size_t count = 1, size = 24;
    void *p = A->reallocarray(NULL, count, size);
    EXPECT(p != NULL, "%s(NULL, 1, 24) to succeed", nd_fn("reallocarray"));
    nd_pat_fill(p, count * size, (uintptr_t)p);
    for (; count < 400000; count = count * 3 + 1) {
        size_t next = count * 3 + 1;
        void *q = A->reallocarray(p, next, size);
        EXPECT(q != NULL, "%s(p, %zu, %zu) to succeed", nd_fn("reallocarray"), next, size);
        EXPECT(A->usable_size(q) >= next * size, "%s(p, %zu, %zu) to give >= %zu usable bytes",
               nd_fn("reallocarray"), next, size, next * size);
        EXPECT(nd_pat_check(q, count * size, count * size, (uintptr_t)p) == SIZE_MAX,
               "%s from %zu to %zu elements to keep the contents", nd_fn("reallocarray"),
               count, next);
        nd_pat_fill(q, next * size, (uintptr_t)q);
        p = q;
    }
    A->free(p);
}

/* Freed blocks leave their bytes behind (an encoded link, a freed mark) in
   memory that later becomes other blocks, uninitialised: a large block cut
   from pages that held small ones, the tail of a block of a larger class.
   A program that copies such bytes into a block (realloc of a block it
   never wrote, a struct copied with its padding) still holds a block in
   use: malloc_usable_size answers, realloc keeps it, one free frees it.
   (Found as "malloc_usable_size(): invalid pointer (block not in use)"
   right after a realloc of an empty 64 KiB-aligned block, one run in
   20-250 of a randomized hand-over workload.) */
static void blocks_filled_with_uninitialised_memory_stay_in_use(void)
{
    const struct nd_api *A = nd_api();
    enum { SMALL = 30000, BIG = 48 };
    static void *small[SMALL];
    void *big[BIG];
    for (int round = 0; round < 4; round++) {
        /* Pages full of freed small blocks, then given back: their memory
           keeps the debris (purged only after purge_delay). */
        for (int i = 0; i < SMALL; i++) {
            small[i] = A->malloc(16 + 16 * (size_t)(i % 8));
            EXPECT(small[i] != NULL, "%s to succeed", nd_fn("malloc"));
        }
        for (int i = 0; i < SMALL; i++)
            A->free(small[i]);
        nodal_collect(0);
        /* Blocks cut from that memory, never written: large ones (64 KiB
           aligned, empty or one OS page) and small ones of other classes. */
        for (int k = 0; k < BIG; k++) {
            EXPECT(A->posix_memalign(&big[k], (size_t)65536 << (k % 2), (size_t)(k % 3) * 4096) == 0,
                   "%s(64 KiB, ...) to succeed", nd_fn("posix_memalign"));
        }
        for (int k = 0; k < BIG; k++) {
            /* realloc copies the old block's bytes, all of them uninitialised. */
            size_t to = 16 + (size_t)(k % 64) * 16;
            void *q = A->realloc(big[k], to);
            EXPECT(q != NULL, "%s(%p, %zu) to succeed", nd_fn("realloc"), big[k], to);
            EXPECT(A->usable_size(q) >= to, "%s of the block realloc returned to be >= %zu",
                   nd_fn("malloc_usable_size"), to);
            big[k] = q;
        }
        for (int k = 0; k < BIG; k++)
            A->free(big[k]);
        for (int k = 0; k < 64; k++) {
            unsigned char *u = A->malloc(256 + (size_t)k * 64);   /* uninitialised, never written */
            EXPECT(u != NULL, "%s to succeed", nd_fn("malloc"));
            for (size_t off = 0; off + 32 <= 256; off += 16) {
                void *q = A->malloc(32);
                EXPECT(q != NULL, "%s(32) to succeed", nd_fn("malloc"));
                memcpy(q, u + off, 32);
                EXPECT(A->usable_size(q) >= 32, "a block holding copied bytes to be in use");
                A->free(q);
            }
            A->free(u);
        }
    }
}

/* The statistics' count of huge blocks realloc resized without copying. */
static unsigned long long huge_resizes(void)
{
    static char json[4 << 20];
    nodal_stats_json(json, sizeof json);
    const char *k = strstr(json, "\"huge_resizes\"");
    EXPECT(k != NULL, "the statistics to count huge_resizes");
    k += strlen("\"huge_resizes\"");
    while (*k == ':' || *k == ' ')
        k++;
    return strtoull(k, NULL, 10);
}

/* One byte per OS page and the last one, tagged with their offset: a block
   moved, grown or shrunk keeps them (every page touched, cheaply). */
static void sparse_fill(unsigned char *p, size_t from, size_t to)
{
    for (size_t i = from - from % 4096; i < to; i += 4096)
        if (i >= from)
            p[i] = (unsigned char)(i >> 12 | 1);
    p[to - 1] = (unsigned char)to;
}

static size_t sparse_check(const unsigned char *p, size_t n, size_t old)
{
    for (size_t i = 0; i < n; i += 4096)
        if (p[i] != (unsigned char)(i >> 12 | 1))
            return i;
    if (n == old && p[n - 1] != (unsigned char)old)
        return n - 1;
    return SIZE_MAX;
}

/* A huge block of one kind (malloc, an alignment, node-bound) grown by
   tenths from 2 MiB to 48 MiB, then shrunk by sevenths to 1.5 MiB: at
   every step its bytes stay, its alignment too, and each realloc that
   had to resize it (the request beyond the usable size, or at most half
   of it) did so without a copy (the statistics' huge_resizes counts each;
   a copy would not). The bytes allocated follow the usable size. */
static void resize_huge_kind(int kind, size_t align)
{
    const struct nd_api *A = nd_api();
    static const char *names[] = { "malloc", "posix_memalign", "nodal_malloc_node" };
    size_t before = allocated_now();
    size_t size = (size_t)2 << 20;
    unsigned char *p = NULL;
    int node = -1;
    if (kind == 0)
        p = A->malloc(size);
    else if (kind == 1)
        EXPECT(A->posix_memalign((void **)&p, align, size) == 0, "posix_memalign(%zu, %zu) to succeed", align, size);
    else {
        EXPECT(nodal_node_ids(&node, 1) >= 1, "a node with memory");
        p = nodal_malloc_node(size, node);
    }
    EXPECT(p != NULL, "%s(%zu) to succeed", names[kind], size);
    sparse_fill(p, 0, size);
    unsigned long long resizes = huge_resizes(), expected = 0;
    for (int phase = 0; phase < 2; phase++) {
        for (;;) {
            size_t next = phase == 0 ? size + size / 10 : size - size / 7;
            if (phase == 0 ? next > ((size_t)48 << 20) : next < ((size_t)3 << 19))
                break;
            size_t usable = A->usable_size(p);
            if (!(next <= usable && next > usable / 2))
                expected++;   /* nodal resizes it (else it stays as it is) */
            unsigned char *q = A->realloc(p, next);
            EXPECT(q != NULL, "%s(%p, %zu) of a %s block to succeed", nd_fn("realloc"), (void *)p, next, names[kind]);
            EXPECT(A->usable_size(q) >= next, "a %s block resized to %zu to have as many usable bytes, got %zu",
                   names[kind], next, A->usable_size(q));
            EXPECT(((uintptr_t)q & (align - 1)) == 0, "a %s block aligned to %zu to stay so through %s, got %p",
                   names[kind], align, nd_fn("realloc"), (void *)q);
            size_t keep = next < size ? next : size;
            size_t bad = sparse_check(q, keep, size);
            EXPECT(bad == SIZE_MAX, "a %s block resized from %zu to %zu bytes (%p -> %p) to keep its bytes, byte %zu differs",
                   names[kind], size, next, (void *)p, (void *)q, bad);
            if (kind == 2)
                EXPECT(nodal_node_of(q) == node, "a node-%d block resized by %s to stay on its node, nodal_node_of says %d",
                       node, nd_fn("realloc"), nodal_node_of(q));
            p = q;
            sparse_fill(p, keep, next);
            size = next;
        }
    }
    unsigned long long got = huge_resizes() - resizes;
    EXPECT(got == expected, "the %zu-aligned %s block's %llu resizes by %s to be made without a copy (huge_resizes "
           "counted %llu)", align, names[kind], expected, nd_fn("realloc"), got);
    EXPECT(allocated_now() - before == A->usable_size(p), "allocated to grow by the block's usable size, %zu; "
           "it grew by %zu", A->usable_size(p), allocated_now() - before);
    A->free(p);
    EXPECT(allocated_now() == before, "allocated to come back to %zu once the block is freed, got %zu", before,
           allocated_now());
}

static void huge_blocks_resize_without_copying_at_every_alignment(void)
{
    resize_huge_kind(0, 16);
    static const size_t aligns[] = { 4096, (size_t)64 << 10, (size_t)4 << 20, (size_t)8 << 20, (size_t)32 << 20 };
    for (size_t i = 0; i < sizeof aligns / sizeof aligns[0]; i++)
        resize_huge_kind(1, aligns[i]);
    resize_huge_kind(2, 16);
}

/* A block realloc grew from 64 B through the large blocks to 1.1 MiB (its
   pages moved into its huge mapping then, not copied: the process's first
   huge block, a fresh mapping), then past the end of its mapping where
   the addresses after it are taken: the kernel holds its mapping as three
   (header, the large block's pages, the rest) and moves one at a time, so
   nodal moves each; before, that move failed and realloc copied the block
   (bench/micro -m realloc -g 8m: 3.4 MB copied a sequence). Its bytes
   stay, and huge_resizes counts the move (a copy would not). */
static void a_huge_block_that_was_a_large_block_moves_without_a_copy(void)
{
    const struct nd_api *A = nd_api();
    size_t size = 64;
    unsigned char *p = A->malloc(size);
    EXPECT(p != NULL, "%s(64) to succeed", nd_fn("malloc"));
    sparse_fill(p, 0, size);
    static const size_t steps[] = { 20000, 100000, 300000, (size_t)900 << 10, (size_t)1100 << 10 };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        unsigned char *q = A->realloc(p, steps[i]);
        EXPECT(q != NULL, "%s(%p, %zu) to succeed", nd_fn("realloc"), (void *)p, steps[i]);
        size_t bad = sparse_check(q, size, size);
        EXPECT(bad == SIZE_MAX, "a block grown from %zu to %zu bytes to keep its bytes, byte %zu differs", size,
               steps[i], bad);
        p = q;
        sparse_fill(p, size, steps[i]);
        size = steps[i];
    }
    /* The page after its mapping taken: it cannot grow where it is. */
    size_t usable = A->usable_size(p);
    uintptr_t end = ((uintptr_t)p + usable + 4095) & ~(uintptr_t)4095;
    void *wall = mmap((void *)end, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    EXPECT(wall != MAP_FAILED || errno == EEXIST, "the page after the block (%p) to be mappable or taken", (void *)end);
    unsigned long long resizes = huge_resizes();
    size_t next = usable + ((size_t)1 << 20);
    unsigned char *q = A->realloc(p, next);
    EXPECT(q != NULL, "%s(%p, %zu) to succeed", nd_fn("realloc"), (void *)p, next);
    size_t bad = sparse_check(q, size, size);
    EXPECT(bad == SIZE_MAX, "the block moved from %p to %p to keep its bytes, byte %zu differs", (void *)p, (void *)q,
           bad);
    EXPECT(huge_resizes() - resizes == 1, "the block grown from %zu to %zu bytes past a taken page to be moved by "
           "the kernel, not copied (huge_resizes counted %llu)", usable, next, huge_resizes() - resizes);
    A->free(q);
    if (wall != MAP_FAILED)
        munmap(wall, 4096);
}

static const struct nd_case cases[] = {
    ND_CASE(realloc_preserves_contents_growing_through_every_size),
    ND_CASE(realloc_preserves_contents_shrinking_through_every_size),
    ND_CASE(realloc_preserves_contents_between_any_two_sizes),
    ND_CASE(realloc_to_zero_frees_the_block_and_returns_null),
    ND_CASE(realloc_of_null_to_zero_returns_unique_pointers),
    ND_CASE(realloc_of_null_behaves_like_malloc),
    ND_CASE(realloc_failure_keeps_the_block_and_sets_enomem),
    ND_CASE(reallocarray_overflow_keeps_the_block_and_sets_enomem),
    ND_CASE(reallocarray_resizes_to_count_times_size),
    ND_CASE(blocks_filled_with_uninitialised_memory_stay_in_use),
    ND_CASE(huge_blocks_resize_without_copying_at_every_alignment),
    ND_CASE(a_huge_block_that_was_a_large_block_moves_without_a_copy),
};
ND_MAIN(cases)
