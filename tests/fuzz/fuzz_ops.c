/*
 * fuzz_ops.c - a fuzz target that reads its input as a program of heap
 * operations and runs it against nodal, checking every result against a
 * model of the live blocks.
 *
 * Entry points driven: malloc, calloc, realloc, reallocarray, free,
 * free_sized, free_aligned_sized, posix_memalign, aligned_alloc, memalign,
 * valloc, pvalloc, malloc_usable_size, nodal_malloc_node, nodal_calloc_node,
 * nodal_aligned_alloc_node, nodal_realloc_node, nodal_malloc_local,
 * nodal_malloc_interleaved, nodal_node_of, nodal_collect,
 * nodal_memory_info_get; all under their nodal_* names (the target links
 * libnodal_prefix, see tests/fuzz/CMakeLists.txt for why).
 *
 * The model holds FZ_SLOTS slots; each live block records its requested size,
 * usable size, guaranteed alignment, node and a tag. The block is filled with
 * the tag's pattern (tests/common/pattern.h) over its whole usable size, and
 * the pattern is checked before every free and realloc and by the CHECK op.
 * A new block must be aligned, at least as large as asked, the size
 * malloc_usable_size reports, on the node asked for, zero when calloc'ed,
 * and must not overlap any live block. Calls that must fail (sizes past
 * PTRDIFF_MAX, calloc overflow, bad alignments, bad nodes) must return NULL
 * with the documented errno and leave the model unchanged.
 *
 * Two worker threads take blocks to free (asynchronously: they race with the
 * main thread's own work, as remote frees do), allocate blocks for the model
 * (so the main thread's frees of them are remote), churn a size class on
 * their own, and exit on request (their heaps are abandoned while the model
 * still holds their blocks).
 *
 * Input format: a stream of operations, each one opcode byte (modulo 32, see
 * fz_run_op) followed by the bytes its arguments need; a short input reads
 * zeros past its end. Keep it stable: saved inputs depend on it. At the
 * end of each input every block is freed and the workers are drained, so
 * nodal holds none of the model's blocks between inputs.
 *
 * Any violated expectation prints one line "fuzz_ops: op N (NAME): expected
 * ..." and aborts (libFuzzer saves the input as a crash). Set ND_FUZZ_TRACE=1
 * to print every operation as it runs. After each input, which frees
 * everything it allocated, nodal_memory_info's `allocated` must be back at
 * its value before the input (ND_FUZZ_STATS=0 turns that check off);
 * ND_FUZZ_PARANOID=1 checks memory info after every operation and free.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "nodal.h"
#include "fuzz_pattern.h"
#include "pattern.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_SLOTS      64
#define FZ_MAX_OPS    4096
#define FZ_BUDGET     ((size_t)96 << 20)   /* requested bytes live in the model */
#define FZ_HUGE_MAX   ((size_t)12 << 20)
#define FZ_WORKERS    2
#define FZ_QUEUE      64
#define FZ_MiB        ((size_t)1 << 20)
/* nodal's thresholds, for the sizes the generator likes (the model itself
   does not depend on them). */
#define FZ_SMALL_MAX  ((size_t)16 << 10)
#define FZ_MEDIUM_MAX ((size_t)128 << 10)
#define FZ_LARGE_MAX  (((size_t)1 << 20) - ((size_t)4 << 10))

/* How a block was made (for messages and for which free fits it). */
enum fz_how {
    H_MALLOC, H_CALLOC, H_REALLOC, H_REALLOCARRAY, H_POSIX_MEMALIGN, H_ALIGNED_ALLOC,
    H_MEMALIGN, H_VALLOC, H_PVALLOC, H_MALLOC_NODE, H_CALLOC_NODE, H_ALIGNED_NODE,
    H_REALLOC_NODE, H_MALLOC_LOCAL, H_INTERLEAVED, H_HOW_COUNT
};
static const char *const fz_how_name[H_HOW_COUNT] = {
    "malloc", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc",
    "memalign", "valloc", "pvalloc", "nodal_malloc_node", "nodal_calloc_node",
    "nodal_aligned_alloc_node", "nodal_realloc_node", "nodal_malloc_local",
    "nodal_malloc_interleaved",
};

#define FZ_NODE_PLAIN (-1)   /* plain memory: nodal_node_of says some node */
#define FZ_NODE_ANY   (-2)   /* no promise about the node */

struct fz_block {
    unsigned char *p;
    size_t size;       /* requested */
    size_t usable;     /* malloc_usable_size when it was made; filled in full */
    size_t align;      /* guaranteed alignment */
    int node;          /* node it must be on, or FZ_NODE_* */
    uint8_t how;
    uint64_t tag;
};

/* ---- the run's state ------------------------------------------------------ */
static struct fz_block fz_slot[FZ_SLOTS];
static size_t fz_live_bytes;
static uint64_t fz_next_tag = 1;
static unsigned fz_op_index;
static const char *fz_op_name = "start";
static int fz_trace, fz_check_stats, fz_paranoid;
static int fz_node_ids[NODAL_MAX_NODES], fz_node_count;
static size_t fz_page;

__attribute__((noreturn, format(printf, 1, 2)))
static void fz_fail(const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "fuzz_ops: op %u (%s): expected %s\n", fz_op_index, fz_op_name, msg);
    fflush(stderr);
    abort();
}

#define FZ_EXPECT(cond, ...)          \
    do {                              \
        if (!(cond))                  \
            fz_fail(__VA_ARGS__);     \
    } while (0)

__attribute__((format(printf, 1, 2)))
static void fz_log(const char *fmt, ...)
{
    if (!fz_trace)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[%u] ", fz_op_index);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ---- reading the input -------------------------------------------------- */
struct fz_in {
    const uint8_t *p;
    size_t n;
};

static uint8_t fz_u8(struct fz_in *in)
{
    if (in->n == 0)
        return 0;
    in->n--;
    return *in->p++;
}

static uint32_t fz_u16(struct fz_in *in)
{
    uint32_t lo = fz_u8(in);
    return lo | (uint32_t)fz_u8(in) << 8;
}

static uint32_t fz_u32(struct fz_in *in)
{
    uint32_t lo = fz_u16(in);
    return lo | fz_u16(in) << 16;
}

static const size_t fz_edge_sizes[] = {
    1, 7, 8, 15, 16, 17, 24, 31, 32, 33, 48, 64, 96, 112, 127, 128, 129, 160, 255, 256, 257,
    511, 512, 640, 1000, 1023, 1024, 1025, 1280, 2047, 2048, 3000, 4095, 4096, 4097, 8192,
    12288, 16383, FZ_SMALL_MAX, FZ_SMALL_MAX + 1, 20480, 32768, 65535, 65536, 65537, 100000,
    FZ_MEDIUM_MAX - 1, FZ_MEDIUM_MAX, FZ_MEDIUM_MAX + 1, 262144, (size_t)1 << 20,
    FZ_LARGE_MAX - 4096, FZ_LARGE_MAX - 1, FZ_LARGE_MAX, FZ_LARGE_MAX + 1, ((size_t)4 << 20) - 1,
    (size_t)4 << 20, ((size_t)4 << 20) + 1, (size_t)8 << 20,
};
#define FZ_EDGE_SIZES (sizeof fz_edge_sizes / sizeof fz_edge_sizes[0])

/* Sizes no allocator can serve: every call must fail with ENOMEM. */
static const size_t fz_impossible_sizes[] = {
    SIZE_MAX, SIZE_MAX - 4095, SIZE_MAX / 2 + 1, (size_t)PTRDIFF_MAX + 1, (size_t)PTRDIFF_MAX,
    ((size_t)1 << 62) + 1,
};
#define FZ_IMPOSSIBLE (sizeof fz_impossible_sizes / sizeof fz_impossible_sizes[0])

static int fz_size_is_impossible(size_t s)
{
    return s >= ((size_t)1 << 62);
}

/* A request size: mostly small, sometimes medium, large or huge, rarely one
   that must fail. */
static size_t fz_size(struct fz_in *in)
{
    uint8_t sel = fz_u8(in);
    uint32_t r = fz_u32(in);
    switch (sel % 32) {
    case 0:  return 0;
    case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 8:
        return 1 + r % 256;
    case 9: case 10: case 11: case 12:
        return 1 + r % 2048;
    case 13: case 14:
        return 1 + r % (FZ_SMALL_MAX + 64);
    case 15: case 16:
        return FZ_SMALL_MAX + r % (FZ_MEDIUM_MAX - FZ_SMALL_MAX + 64);
    case 17: case 18: case 19: case 20: case 21:
        return fz_edge_sizes[r % FZ_EDGE_SIZES];
    case 22: case 23: {   /* large, log-uniform: 128 KiB .. 4 MiB */
        size_t lo = FZ_MEDIUM_MAX << (r % 5);
        return lo + (r >> 8) % lo;
    }
    case 24:
        if (r & 1)
            return FZ_LARGE_MAX + (r >> 1) % (FZ_HUGE_MAX - FZ_LARGE_MAX);
        return 1 + r % 4096;
    case 25:
        return fz_impossible_sizes[r % FZ_IMPOSSIBLE];
    default:
        return 1 + r % 64;
    }
}

/* An alignment: mostly powers of two from 1 to 8 MiB, sometimes values that
   no aligned call accepts (or memalign rounds up). */
static size_t fz_align(struct fz_in *in)
{
    uint8_t sel = fz_u8(in);
    static const size_t odd[] = { 0, 3, 24, 48, 100, 4095, 12288, (size_t)1 << 63, SIZE_MAX };
    if (sel < 200)
        return (size_t)1 << (sel % 24);
    return odd[sel % (sizeof odd / sizeof odd[0])];
}

static int fz_is_pow2(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

static int fz_node_valid(int node)
{
    for (int i = 0; i < fz_node_count; i++)
        if (fz_node_ids[i] == node)
            return 1;
    return 0;
}

/* A node id: mostly one with memory, sometimes one that is not. */
static int fz_node(struct fz_in *in)
{
    uint8_t sel = fz_u8(in);
    if (sel < 224)
        return fz_node_ids[sel % fz_node_count];
    static const int bad[] = { -1, NODAL_MAX_NODES, 1000, -2147483647 - 1, NODAL_MAX_NODES - 1 };
    int n = bad[sel % (sizeof bad / sizeof bad[0])];
    return fz_node_valid(n) ? -1 : n;
}

/* ---- the model's checks -------------------------------------------------- */
static const char *fz_blk_how(const struct fz_block *b) { return fz_how_name[b->how]; }

static void fz_check_contents(const struct fz_block *b, size_t slot, const char *when)
{
    size_t bad = fz_check(b->p, b->usable, b->usable, b->tag);
    FZ_EXPECT(bad == SIZE_MAX,
              "the %zu-byte block %p of slot %zu (from %s, %zu usable) to keep its contents %s; "
              "byte %zu changed", b->size, (void *)b->p, slot, fz_blk_how(b), b->usable, when, bad);
}

static void fz_check_block(const struct fz_block *b, size_t slot)
{
    fz_check_contents(b, slot, "while live");
    size_t u = nodal_malloc_usable_size(b->p);
    FZ_EXPECT(u == b->usable, "malloc_usable_size of the live block %p (slot %zu) to stay %zu, it is %zu",
              (void *)b->p, slot, b->usable, u);
}

/* A new block p from `how` for `size` bytes: the checks every result must
   pass; then it is filled and put in slot `slot` (which must be empty). */
static void fz_adopt(size_t slot, void *vp, size_t size, size_t align, int node, int how, int zeroed)
{
    unsigned char *p = vp;
    if (align < 16)
        align = 16;
    FZ_EXPECT(((uintptr_t)p & (align - 1)) == 0, "%s(%zu) to return a block aligned to %zu, got %p",
              fz_how_name[how], size, align, vp);
    size_t usable = nodal_malloc_usable_size(p);
    FZ_EXPECT(usable >= size && usable == nodal_usable_size(p),
              "%s(%zu) to return a block of at least that usable size (both names agreeing), "
              "got %zu / %zu at %p", fz_how_name[how], size, usable, nodal_usable_size(p), vp);
    if (how == H_PVALLOC) {
        size_t rounded = size == 0 ? fz_page : (size + fz_page - 1) / fz_page * fz_page;
        FZ_EXPECT(usable >= rounded, "pvalloc(%zu) to give whole pages (%zu usable bytes), got %zu",
                  size, rounded, usable);
    }
    for (size_t i = 0; i < FZ_SLOTS; i++) {
        const struct fz_block *o = &fz_slot[i];
        if (o->p && p < o->p + o->usable && o->p < p + usable)
            fz_fail("%s(%zu) to return a block that overlaps no live block; [%p, +%zu) overlaps "
                    "slot %zu's [%p, +%zu) from %s", fz_how_name[how], size, vp, usable, i,
                    (void *)o->p, o->usable, fz_blk_how(o));
    }
    if (zeroed) {
        size_t bad = fz_zero_check(p, size);
        FZ_EXPECT(bad == SIZE_MAX, "%s(%zu) to return zeroed memory; byte %zu of %p is 0x%02x",
                  fz_how_name[how], size, bad, vp, bad == SIZE_MAX ? 0 : p[bad]);
    }
    if (node >= 0) {
        int on = nodal_node_of(p);
        FZ_EXPECT(on == node, "%s(%zu) for node %d to return a block on node %d, nodal_node_of says %d",
                  fz_how_name[how], size, node, node, on);
    }
    struct fz_block *b = &fz_slot[slot];
    b->p = p;
    b->size = size;
    b->usable = usable;
    b->align = align;
    b->node = node;
    b->how = (uint8_t)how;
    b->tag = fz_next_tag++ * 0x9e3779b97f4a7c15ULL;
    fz_fill(p, usable, b->tag);
    fz_live_bytes += size;
    fz_log("  slot %zu <- %p (%s, size %zu, usable %zu, align %zu, node %d)", slot, vp,
           fz_how_name[how], size, usable, align, node);
}

/* A call that had to fail did: NULL and one of the errnos the contract
   allows (err2 = 0 when only one applies). */
static void fz_expect_failure(const char *call, void *p, int err, int want, int want2)
{
    FZ_EXPECT(p == NULL, "%s to fail (NULL), got %p", call, p);
    FZ_EXPECT(err == want || (want2 && err == want2), "%s to fail with errno %d%s, got %d", call,
              want, want2 ? " (or the other error that applies)" : "", err);
}

static void fz_forget(size_t slot)
{
    fz_live_bytes -= fz_slot[slot].size;
    memset(&fz_slot[slot], 0, sizeof fz_slot[slot]);
}

/* Frees the block of `slot` with the call its kind allows (`which` picks
   among them). The contents are checked first. */
static void fz_free_block(const struct fz_block *b, unsigned which)
{
    if (which % 3 == 1 && b->how != H_INTERLEAVED) {
        nodal_free_sized(b->p, b->size);
    } else if (which % 3 == 2 && b->how == H_ALIGNED_ALLOC) {
        nodal_free_aligned_sized(b->p, b->align, b->size);
    } else {
        nodal_free(b->p);
    }
}

static void fz_op_memory_info(void);

static void fz_free_slot(size_t slot, unsigned which)
{
    struct fz_block *b = &fz_slot[slot];
    if (!b->p)
        return;
    fz_check_contents(b, slot, "until it is freed");
    fz_log("  free slot %zu (%p)", slot, (void *)b->p);
    fz_free_block(b, which);
    fz_forget(slot);
    if (fz_paranoid)
        fz_op_memory_info();
}

/* Room for `size` more bytes in the budget? Makes room by freeing slots
   when it can; sizes that must fail always fit. */
static int fz_room(size_t size)
{
    if (fz_size_is_impossible(size))
        return 1;
    if (size > FZ_BUDGET)
        return 0;
    for (size_t i = 0; i < FZ_SLOTS && fz_live_bytes + size > FZ_BUDGET; i++)
        fz_free_slot(i, 0);
    return 1;
}

/* ---- allocation requests, run by the main thread or a worker ------------- */
struct fz_req {
    int how;
    size_t size, count, align;
    int node;
    int nodes[3], nnodes;
};

/* Decodes the arguments of an allocation of kind `how`. */
static void fz_req_read(struct fz_in *in, int how, struct fz_req *r)
{
    memset(r, 0, sizeof *r);
    r->how = how;
    r->size = fz_size(in);
    r->count = 1;
    r->align = 1;
    r->node = FZ_NODE_PLAIN;
    switch (how) {
    case H_CALLOC: case H_CALLOC_NODE: {
        /* count * size == the drawn size, or an overflowing pair */
        uint8_t c = fz_u8(in);
        if (c >= 250) {
            r->count = (SIZE_MAX >> (c - 249)) | 1;
            r->size = 16 + c;
        } else {
            r->count = 1 + c % 8;
            r->size /= r->count;
        }
        break;
    }
    case H_POSIX_MEMALIGN: case H_ALIGNED_ALLOC: case H_MEMALIGN: case H_ALIGNED_NODE:
        r->align = fz_align(in);
        break;
    case H_INTERLEAVED: {
        uint8_t c = fz_u8(in);
        r->nnodes = c % 4;
        for (int i = 0; i < r->nnodes; i++)
            r->nodes[i] = fz_node(in);
        break;
    }
    default:
        break;
    }
    if (how == H_MALLOC_NODE || how == H_CALLOC_NODE || how == H_ALIGNED_NODE)
        r->node = fz_node(in);
}

/* What a request must give: 0 = a block, else the errno (or two) it must
   fail with. */
static int fz_req_must_fail(const struct fz_req *r, int *err2)
{
    size_t bytes;
    int overflow = __builtin_mul_overflow(r->count, r->size, &bytes);
    int huge = overflow || fz_size_is_impossible(bytes);
    int bad_node = 0, bad_align = 0;
    *err2 = 0;
    switch (r->how) {
    case H_MALLOC_NODE: case H_CALLOC_NODE: case H_ALIGNED_NODE:
        bad_node = !fz_node_valid(r->node);
        break;
    case H_INTERLEAVED:
        for (int i = 0; i < r->nnodes; i++)
            bad_node |= !fz_node_valid(r->nodes[i]);
        break;
    default:
        break;
    }
    switch (r->how) {
    case H_POSIX_MEMALIGN:
        bad_align = !fz_is_pow2(r->align) || r->align < sizeof(void *);
        break;
    case H_ALIGNED_ALLOC: case H_ALIGNED_NODE:
        bad_align = !fz_is_pow2(r->align);
        break;
    case H_MEMALIGN:
        bad_align = r->align > ((size_t)1 << 62);
        break;
    default:
        break;
    }
    if (bad_node || bad_align) {
        if (huge)
            *err2 = ENOMEM;
        return EINVAL;
    }
    /* An alignment no address space can honour: ENOMEM (EINVAL is fine too). */
    if (r->align >= ((size_t)1 << 40)) {
        *err2 = EINVAL;
        return ENOMEM;
    }
    return huge ? ENOMEM : 0;
}

/* The alignment a successful request guarantees. */
static size_t fz_req_align(const struct fz_req *r)
{
    switch (r->how) {
    case H_POSIX_MEMALIGN: case H_ALIGNED_ALLOC: case H_ALIGNED_NODE:
        return r->align;
    case H_MEMALIGN: {
        size_t a = 1;
        while (a < r->align)
            a <<= 1;
        return a;
    }
    case H_VALLOC: case H_PVALLOC: case H_INTERLEAVED:
        return fz_page;
    default:
        return 16;
    }
}

static int fz_req_node(const struct fz_req *r)
{
    switch (r->how) {
    case H_MALLOC_NODE: case H_CALLOC_NODE: case H_ALIGNED_NODE:
        return r->node;
    case H_MALLOC_LOCAL:
        return FZ_NODE_ANY;
    case H_INTERLEAVED:
        return r->nnodes == 1 ? r->nodes[0] : FZ_NODE_ANY;
    default:
        return FZ_NODE_PLAIN;
    }
}

/* Runs the request; returns the block (or NULL) and the errno it left. */
static void *fz_req_run(const struct fz_req *r, int *err)
{
    void *p = NULL;
    errno = 0;
    switch (r->how) {
    case H_MALLOC:         p = nodal_malloc(r->size); break;
    case H_CALLOC:         p = nodal_calloc(r->count, r->size); break;
    case H_VALLOC:         p = nodal_valloc(r->size); break;
    case H_PVALLOC:        p = nodal_pvalloc(r->size); break;
    case H_ALIGNED_ALLOC:  p = nodal_aligned_alloc(r->align, r->size); break;
    case H_MEMALIGN:       p = nodal_memalign(r->align, r->size); break;
    case H_MALLOC_NODE:    p = nodal_malloc_node(r->size, r->node); break;
    case H_CALLOC_NODE:    p = nodal_calloc_node(r->count, r->size, r->node); break;
    case H_ALIGNED_NODE:   p = nodal_aligned_alloc_node(r->align, r->size, r->node); break;
    case H_MALLOC_LOCAL:   p = nodal_malloc_local(r->size); break;
    case H_INTERLEAVED:
        p = nodal_malloc_interleaved(r->size, r->nnodes ? r->nodes : NULL, r->nnodes);
        break;
    case H_POSIX_MEMALIGN: {
        void *out = (void *)&p;   /* must stay untouched on failure */
        int rc = nodal_posix_memalign(&out, r->align, r->size);
        if (rc != 0) {
            if (out != (void *)&p)
                fz_fail("posix_memalign(%zu, %zu) to leave *out alone when it fails (%d)",
                        r->align, r->size, rc);
            *err = rc;
            return NULL;
        }
        p = out;
        break;
    }
    default:
        fz_fail("a known allocation kind, got %d", r->how);
    }
    *err = errno;
    return p;
}

/* Checks the outcome of request r and, when it gave a block, adopts it into
   `slot`. */
static void fz_req_finish(const struct fz_req *r, void *p, int err, size_t slot)
{
    char call[160];
    snprintf(call, sizeof call, "%s(size %zu, count %zu, align %zu, node %d)",
             fz_how_name[r->how], r->size, r->count, r->align, r->node);
    int err2, want = fz_req_must_fail(r, &err2);
    if (want) {
        fz_expect_failure(call, p, err, want, err2);
        return;
    }
    FZ_EXPECT(p != NULL, "%s to succeed, it failed with errno %d", call, err);
    int zeroed = r->how == H_CALLOC || r->how == H_CALLOC_NODE;
    fz_adopt(slot, p, r->count * r->size, fz_req_align(r), fz_req_node(r), r->how, zeroed);
}

static size_t fz_req_bytes(const struct fz_req *r)
{
    size_t bytes;
    if (__builtin_mul_overflow(r->count, r->size, &bytes))
        return SIZE_MAX;
    if (r->how == H_PVALLOC || r->how == H_INTERLEAVED)
        bytes = bytes > SIZE_MAX - fz_page ? bytes : bytes + fz_page;
    return bytes;
}

/* ---- worker threads ---------------------------------------------------- */
enum { J_FREE, J_ALLOC, J_REALLOC, J_CHURN, J_EXIT };

struct fz_job {
    int kind;
    struct fz_block blk;     /* J_FREE, J_REALLOC: the block (and how to free it) */
    unsigned which;
    struct fz_req req;       /* J_ALLOC */
    void *result;            /* J_ALLOC, J_REALLOC: out */
    int err;
    size_t new_size;         /* J_REALLOC */
    size_t churn_size;       /* J_CHURN */
    unsigned churn_count;
};

struct fz_worker {
    pthread_t thread;
    int running;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct fz_job q[FZ_QUEUE];
    unsigned head, tail;     /* q[head % FZ_QUEUE] is next; tail - head jobs */
    unsigned done;           /* jobs finished */
};

static struct fz_worker fz_workers[FZ_WORKERS] = {
    { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER },
    { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER },
};

static void fz_churn(size_t size, unsigned count)
{
    void *blocks[64];
    uint64_t tag = (uint64_t)size * 0x2545f4914f6cdd1dULL + count;
    for (unsigned i = 0; i < count; i++) {
        blocks[i] = nodal_malloc(size);
        if (!blocks[i])
            fz_fail("a worker's malloc(%zu) to succeed (errno %d)", size, errno);
        fz_fill(blocks[i], size, tag + i);
    }
    for (unsigned i = count; i-- > 0;) {
        size_t bad = fz_check(blocks[i], size, size, tag + i);
        if (bad != SIZE_MAX)
            fz_fail("a worker's own %zu-byte block %p to keep its contents; byte %zu changed",
                    size, blocks[i], bad);
        nodal_free(blocks[i]);
    }
}

static void *fz_worker_main(void *arg)
{
    struct fz_worker *w = arg;
    for (;;) {
        pthread_mutex_lock(&w->mu);
        while (w->head == w->tail)
            pthread_cond_wait(&w->cv, &w->mu);
        struct fz_job *j = &w->q[w->head % FZ_QUEUE];
        pthread_mutex_unlock(&w->mu);
        int stop = 0;
        switch (j->kind) {
        case J_FREE: {
            size_t bad = fz_check(j->blk.p, j->blk.usable, j->blk.usable, j->blk.tag);
            if (bad != SIZE_MAX)
                fz_fail("the block %p (from %s) handed to a worker to keep its contents until "
                        "the worker frees it; byte %zu changed", (void *)j->blk.p,
                        fz_how_name[j->blk.how], bad);
            fz_free_block(&j->blk, j->which);
            break;
        }
        case J_ALLOC:
            j->result = fz_req_run(&j->req, &j->err);
            break;
        case J_REALLOC:
            errno = 0;
            j->result = nodal_realloc(j->blk.p, j->new_size);
            j->err = errno;
            break;
        case J_CHURN:
            fz_churn(j->churn_size, j->churn_count);
            break;
        case J_EXIT:
            stop = 1;
            break;
        }
        pthread_mutex_lock(&w->mu);
        w->head++;
        w->done++;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
        if (stop)
            return NULL;
    }
}

/* Queues a job (starting the worker if needed); returns its number. */
static unsigned fz_post(struct fz_worker *w, const struct fz_job *job)
{
    if (!w->running) {
        w->head = w->tail = w->done = 0;
        if (pthread_create(&w->thread, NULL, fz_worker_main, w) != 0)
            fz_fail("pthread_create to start a worker");
        w->running = 1;
    }
    pthread_mutex_lock(&w->mu);
    while (w->tail - w->head >= FZ_QUEUE)
        pthread_cond_wait(&w->cv, &w->mu);
    w->q[w->tail % FZ_QUEUE] = *job;
    unsigned ticket = w->tail++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return ticket;
}

/* Waits until job `ticket` is done. */
static void fz_wait(struct fz_worker *w, unsigned ticket)
{
    pthread_mutex_lock(&w->mu);
    while (w->done <= ticket)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

static void fz_sync(struct fz_worker *w)
{
    if (!w->running)
        return;
    pthread_mutex_lock(&w->mu);
    while (w->done != w->tail)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

static void fz_sync_all(void)
{
    for (int i = 0; i < FZ_WORKERS; i++)
        fz_sync(&fz_workers[i]);
}

static void fz_worker_exit(struct fz_worker *w)
{
    if (!w->running)
        return;
    struct fz_job j = { .kind = J_EXIT };
    fz_post(w, &j);
    pthread_join(w->thread, NULL);
    w->running = 0;
}

/* ---- the operations --------------------------------------------------- */
enum {
    OP_MALLOC, OP_CALLOC, OP_REALLOC, OP_REALLOCARRAY, OP_FREE, OP_FREE_SIZED,
    OP_POSIX_MEMALIGN, OP_ALIGNED_ALLOC, OP_MEMALIGN, OP_VALLOC, OP_PVALLOC, OP_USABLE,
    OP_MALLOC_NODE, OP_CALLOC_NODE, OP_ALIGNED_NODE, OP_REALLOC_NODE, OP_MALLOC_LOCAL,
    OP_INTERLEAVED, OP_NODE_OF, OP_COLLECT, OP_HAND_OVER, OP_WORKER_ALLOC, OP_WORKER_CHURN,
    OP_WORKER_EXIT, OP_SYNC, OP_CHECK_ALL, OP_FREE_RANGE, OP_FILL_CLASS, OP_MEMORY_INFO,
    OP_WORKER_REALLOC,
    OP_COUNT
};
static const char *const fz_op_names[OP_COUNT] = {
    "malloc", "calloc", "realloc", "reallocarray", "free", "free_sized",
    "posix_memalign", "aligned_alloc", "memalign", "valloc", "pvalloc", "malloc_usable_size",
    "nodal_malloc_node", "nodal_calloc_node", "nodal_aligned_alloc_node", "nodal_realloc_node",
    "nodal_malloc_local", "nodal_malloc_interleaved", "nodal_node_of", "nodal_collect",
    "hand a block to a worker", "worker allocates", "worker churns", "worker exits",
    "sync workers", "check every block", "free a range", "fill a class", "nodal_memory_info_get",
    "worker reallocs",
};

static const int fz_op_how[OP_COUNT] = {
    [OP_MALLOC] = H_MALLOC, [OP_CALLOC] = H_CALLOC, [OP_POSIX_MEMALIGN] = H_POSIX_MEMALIGN,
    [OP_ALIGNED_ALLOC] = H_ALIGNED_ALLOC, [OP_MEMALIGN] = H_MEMALIGN, [OP_VALLOC] = H_VALLOC,
    [OP_PVALLOC] = H_PVALLOC, [OP_MALLOC_NODE] = H_MALLOC_NODE, [OP_CALLOC_NODE] = H_CALLOC_NODE,
    [OP_ALIGNED_NODE] = H_ALIGNED_NODE, [OP_MALLOC_LOCAL] = H_MALLOC_LOCAL,
    [OP_INTERLEAVED] = H_INTERLEAVED,
};

static size_t fz_slot_of(struct fz_in *in) { return fz_u8(in) % FZ_SLOTS; }

/* One of the allocation calls into a slot (freeing what the slot held). */
static void fz_op_alloc(struct fz_in *in, int how)
{
    size_t slot = fz_slot_of(in);
    struct fz_req r;
    fz_req_read(in, how, &r);
    fz_free_slot(slot, 0);
    if (!fz_room(fz_req_bytes(&r)))
        return;
    fz_log("%s size %zu count %zu align %zu node %d nnodes %d", fz_how_name[how], r.size, r.count,
           r.align, r.node, r.nnodes);
    int err = 0;
    void *p = fz_req_run(&r, &err);
    fz_req_finish(&r, p, err, slot);
}

/* realloc / reallocarray / nodal_realloc_node of a slot (NULL if empty). */
static void fz_op_realloc(struct fz_in *in, int op)
{
    size_t slot = fz_slot_of(in);
    size_t size = fz_size(in), count = 1;
    int node = FZ_NODE_PLAIN;
    if (op == OP_REALLOCARRAY) {
        uint8_t c = fz_u8(in);
        if (c >= 250) {
            count = (SIZE_MAX >> (c - 249)) | 1;
            size = 16 + c;
        } else {
            count = 1 + c % 8;
            size /= count;
        }
    } else if (op == OP_REALLOC_NODE) {
        node = fz_node(in);
    }
    size_t bytes;
    int overflow = __builtin_mul_overflow(count, size, &bytes);
    int impossible = overflow || fz_size_is_impossible(bytes);
    struct fz_block *b = &fz_slot[slot];
    struct fz_block old = *b;
    if (!impossible) {
        size_t held = old.p ? old.size : 0;
        if (bytes > FZ_BUDGET || fz_live_bytes - held + bytes > FZ_BUDGET)
            return;
    }
    if (old.p)
        fz_check_contents(&old, slot, "until it is reallocated");
    fz_log("%s slot %zu (%p, %zu bytes) to %zu x %zu, node %d", fz_op_names[op], slot,
           (void *)old.p, old.size, count, size, node);
    char call[160];
    snprintf(call, sizeof call, "%s(%p [%zu bytes], %zu x %zu, node %d)", fz_op_names[op],
             (void *)old.p, old.size, count, size, node);
    errno = 0;
    void *q;
    if (op == OP_REALLOC)
        q = nodal_realloc(old.p, size);
    else if (op == OP_REALLOCARRAY)
        q = nodal_reallocarray(old.p, count, size);
    else
        q = nodal_realloc_node(old.p, size, node);
    int err = errno;

    int bad_node = op == OP_REALLOC_NODE && !fz_node_valid(node);
    if (bad_node || impossible) {
        int want = bad_node ? EINVAL : ENOMEM;
        fz_expect_failure(call, q, err, want, bad_node && impossible ? ENOMEM : 0);
        if (old.p)   /* the block must be untouched */
            fz_check_block(b, slot);
        return;
    }
    if (old.p && bytes == 0) {
        /* nodal's contract: the block is freed and the result is NULL. */
        FZ_EXPECT(q == NULL, "%s to free the block and return NULL, got %p", call, q);
        fz_forget(slot);
        return;
    }
    FZ_EXPECT(q != NULL, "%s to succeed, it failed with errno %d", call, err);
    if (old.p) {
        size_t keep = old.size < bytes ? old.size : bytes;
        size_t bad = fz_check(q, old.usable, keep, old.tag);
        FZ_EXPECT(bad == SIZE_MAX, "%s to keep the first %zu bytes; byte %zu differs (new block %p)",
                  call, keep, bad, q);
        fz_forget(slot);
    }
    int new_node = node;
    if (op != OP_REALLOC_NODE)
        new_node = !old.p ? FZ_NODE_PLAIN : old.how == H_INTERLEAVED ? FZ_NODE_ANY : old.node;
    int how = op == OP_REALLOC ? H_REALLOC : op == OP_REALLOCARRAY ? H_REALLOCARRAY : H_REALLOC_NODE;
    fz_adopt(slot, q, bytes, 16, new_node, how, 0);
}

static void fz_op_node_of(struct fz_in *in)
{
    size_t slot = fz_slot_of(in);
    const struct fz_block *b = &fz_slot[slot];
    if (!b->p) {
        int local;
        FZ_EXPECT(nodal_node_of(NULL) == -1, "nodal_node_of(NULL) to be -1");
        FZ_EXPECT(nodal_node_of(&local) == -1, "nodal_node_of(a stack address) to be -1");
        FZ_EXPECT(nodal_node_of(fz_slot) == -1, "nodal_node_of(a global) to be -1");
        return;
    }
    int on = nodal_node_of(b->p);
    if (b->node >= 0)
        FZ_EXPECT(on == b->node, "nodal_node_of(%p) (from %s) to be %d, got %d", (void *)b->p,
                  fz_blk_how(b), b->node, on);
    else
        FZ_EXPECT(fz_node_valid(on), "nodal_node_of(%p) (from %s) to be a node with memory, got %d",
                  (void *)b->p, fz_blk_how(b), on);
}

static struct fz_worker *fz_worker_of(struct fz_in *in)
{
    return &fz_workers[fz_u8(in) % FZ_WORKERS];
}

static void fz_op_hand_over(struct fz_in *in)
{
    size_t slot = fz_slot_of(in);
    struct fz_worker *w = fz_worker_of(in);
    unsigned which = fz_u8(in);
    struct fz_block *b = &fz_slot[slot];
    if (!b->p)
        return;
    fz_check_contents(b, slot, "until it is handed to a worker");
    fz_log("hand slot %zu (%p) to worker %d", slot, (void *)b->p, (int)(w - fz_workers));
    struct fz_job j = { .kind = J_FREE, .blk = *b, .which = which };
    fz_post(w, &j);
    fz_forget(slot);
}

static void fz_op_worker_alloc(struct fz_in *in)
{
    size_t slot = fz_slot_of(in);
    struct fz_worker *w = fz_worker_of(in);
    static const int kinds[] = { H_MALLOC, H_CALLOC, H_ALIGNED_ALLOC, H_MALLOC_NODE, H_MEMALIGN,
                                 H_MALLOC, H_MALLOC, H_POSIX_MEMALIGN };
    int how = kinds[fz_u8(in) % (sizeof kinds / sizeof kinds[0])];
    struct fz_job j = { .kind = J_ALLOC };
    fz_req_read(in, how, &j.req);
    fz_free_slot(slot, 0);
    if (!fz_room(fz_req_bytes(&j.req)))
        return;
    fz_log("worker %d: %s size %zu", (int)(w - fz_workers), fz_how_name[how], j.req.size);
    unsigned t = fz_post(w, &j);
    fz_wait(w, t);
    struct fz_job *done = &w->q[t % FZ_QUEUE];   /* stays until the slot is reused */
    fz_req_finish(&done->req, done->result, done->err, slot);
}

/* A worker reallocs a block of the model (most often one the main thread
   owns: the realloc of another thread's block). */
static void fz_op_worker_realloc(struct fz_in *in)
{
    size_t slot = fz_slot_of(in);
    struct fz_worker *w = fz_worker_of(in);
    size_t size = fz_size(in);
    struct fz_block *b = &fz_slot[slot];
    if (!b->p || fz_size_is_impossible(size))
        return;
    if (size > FZ_BUDGET || fz_live_bytes - b->size + size > FZ_BUDGET)
        return;
    fz_check_contents(b, slot, "until a worker reallocates it");
    fz_log("worker %d reallocs slot %zu (%p, %zu bytes) to %zu", (int)(w - fz_workers), slot,
           (void *)b->p, b->size, size);
    struct fz_job j = { .kind = J_REALLOC, .blk = *b, .new_size = size };
    unsigned t = fz_post(w, &j);
    fz_wait(w, t);
    const struct fz_job *done = &w->q[t % FZ_QUEUE];
    struct fz_block old = *b;
    void *q = done->result;
    if (size == 0) {
        FZ_EXPECT(q == NULL, "a worker's realloc(%p, 0) to free the block and return NULL, got %p",
                  (void *)old.p, q);
        fz_forget(slot);
        return;
    }
    FZ_EXPECT(q != NULL, "a worker's realloc(%p, %zu) to succeed, it failed with errno %d",
              (void *)old.p, size, done->err);
    size_t keep = old.size < size ? old.size : size;
    size_t bad = fz_check(q, old.usable, keep, old.tag);
    FZ_EXPECT(bad == SIZE_MAX, "a worker's realloc(%p, %zu) to keep the first %zu bytes; byte %zu "
              "differs (new block %p)", (void *)old.p, size, keep, bad, q);
    fz_forget(slot);
    fz_adopt(slot, q, size, 16, old.how == H_INTERLEAVED ? FZ_NODE_ANY : old.node, H_REALLOC, 0);
}

static void fz_op_worker_churn(struct fz_in *in)
{
    struct fz_worker *w = fz_worker_of(in);
    struct fz_job j = { .kind = J_CHURN };
    j.churn_size = fz_size(in);
    j.churn_count = 1 + fz_u8(in) % 64;
    if (fz_size_is_impossible(j.churn_size) || j.churn_size > FZ_MEDIUM_MAX)
        j.churn_size = 1 + j.churn_size % FZ_MEDIUM_MAX;
    fz_log("worker %d churns %u x %zu", (int)(w - fz_workers), j.churn_count, j.churn_size);
    fz_post(w, &j);
}

/* Frees slots [first, first + n) in order or in reverse: runs of one class
   empty pages and flush the thread cache. */
static void fz_op_free_range(struct fz_in *in)
{
    size_t first = fz_slot_of(in);
    uint8_t a = fz_u8(in);
    size_t n = 1 + a % 32;
    for (size_t k = 0; k < n; k++) {
        size_t i = (a & 0x80) ? (first + n - 1 - k) % FZ_SLOTS : (first + k) % FZ_SLOTS;
        fz_free_slot(i, k);
    }
}

/* Fills slots [first, first + n) with blocks of one size: runs of one class
   fill pages (and, with the free range, empty them again). */
static void fz_op_fill_class(struct fz_in *in)
{
    size_t first = fz_slot_of(in);
    size_t n = 1 + fz_u8(in) % 32;
    size_t size = fz_size(in);
    if (fz_size_is_impossible(size) || size > FZ_MEDIUM_MAX)
        size = 1 + size % FZ_MEDIUM_MAX;
    fz_log("fill %zu slots from %zu with %zu bytes", n, first, size);
    for (size_t k = 0; k < n; k++) {
        size_t i = (first + k) % FZ_SLOTS;
        fz_free_slot(i, 0);
        if (!fz_room(size))
            return;
        void *p = nodal_malloc(size);
        FZ_EXPECT(p != NULL, "malloc(%zu) to succeed, it failed with errno %d", size, errno);
        fz_adopt(i, p, size, 16, FZ_NODE_PLAIN, H_MALLOC, 0);
    }
}

static void fz_op_memory_info(void)
{
    nodal_memory_info mi;
    FZ_EXPECT(nodal_memory_info_get(&mi) == 0, "nodal_memory_info_get to succeed");
    FZ_EXPECT(mi.active <= mi.mapped && mi.committed <= mi.mapped,
              "memory info with active (%zu) and committed (%zu) within mapped (%zu)",
              mi.active, mi.committed, mi.mapped);
    if (!fz_check_stats)
        return;
    /* The statistics sum every thread's counters as they are at that moment:
       while workers allocate and free, a snapshot may read one of them
       half-way through an update. The exact check waits for them (the
       read above stays concurrent). */
    fz_sync_all();
    FZ_EXPECT(nodal_memory_info_get(&mi) == 0, "nodal_memory_info_get to succeed");
    size_t usable = 0;
    for (size_t i = 0; i < FZ_SLOTS; i++)
        if (fz_slot[i].p && fz_slot[i].how != H_INTERLEAVED)
            usable += fz_slot[i].usable;
    FZ_EXPECT(mi.allocated >= usable, "memory info's allocated (%zu) to count at least the "
                  "model's live blocks (%zu usable bytes)", mi.allocated, usable);
}

/* The opcode is the byte modulo FZ_OP_SLOTS; slots past OP_COUNT are
   no-ops. A new operation takes the next free slot, so the inputs in
   tests/fuzz/regress and corpus keep their meaning (they hold no no-ops:
   minimizing removed them). When the slots run out, make the last one an
   escape that reads a second byte. */
#define FZ_OP_SLOTS 32
_Static_assert(OP_COUNT <= FZ_OP_SLOTS, "more operations than opcode slots");

static void fz_run_op(struct fz_in *in)
{
    int op = fz_u8(in) % FZ_OP_SLOTS;
    if (op >= OP_COUNT) {
        fz_op_name = "no-op (a free opcode slot)";
        return;
    }
    fz_op_name = fz_op_names[op];
    fz_log("%s", fz_op_name);
    switch (op) {
    case OP_MALLOC: case OP_CALLOC: case OP_POSIX_MEMALIGN: case OP_ALIGNED_ALLOC:
    case OP_MEMALIGN: case OP_VALLOC: case OP_PVALLOC: case OP_MALLOC_NODE: case OP_CALLOC_NODE:
    case OP_ALIGNED_NODE: case OP_MALLOC_LOCAL: case OP_INTERLEAVED:
        fz_op_alloc(in, fz_op_how[op]);
        break;
    case OP_REALLOC: case OP_REALLOCARRAY: case OP_REALLOC_NODE:
        fz_op_realloc(in, op);
        break;
    case OP_FREE:
        fz_free_slot(fz_slot_of(in), 0);
        break;
    case OP_FREE_SIZED: {
        size_t slot = fz_slot_of(in);
        fz_free_slot(slot, 1 + fz_u8(in) % 2);
        break;
    }
    case OP_USABLE: {
        size_t slot = fz_slot_of(in);
        if (fz_slot[slot].p)
            fz_check_block(&fz_slot[slot], slot);
        else
            FZ_EXPECT(nodal_malloc_usable_size(NULL) == 0, "malloc_usable_size(NULL) to be 0");
        break;
    }
    case OP_NODE_OF:
        fz_op_node_of(in);
        break;
    case OP_COLLECT: {
        int force = fz_u8(in) & 1;
        fz_log("nodal_collect(%d)", force);
        nodal_collect(force);
        break;
    }
    case OP_HAND_OVER:
        fz_op_hand_over(in);
        break;
    case OP_WORKER_ALLOC:
        fz_op_worker_alloc(in);
        break;
    case OP_WORKER_CHURN:
        fz_op_worker_churn(in);
        break;
    case OP_WORKER_EXIT: {
        struct fz_worker *w = fz_worker_of(in);
        fz_log("worker %d exits", (int)(w - fz_workers));
        fz_worker_exit(w);
        break;
    }
    case OP_SYNC:
        fz_sync_all();
        break;
    case OP_CHECK_ALL:
        for (size_t i = 0; i < FZ_SLOTS; i++)
            if (fz_slot[i].p)
                fz_check_block(&fz_slot[i], i);
        break;
    case OP_FREE_RANGE:
        fz_op_free_range(in);
        break;
    case OP_FILL_CLASS:
        fz_op_fill_class(in);
        break;
    case OP_MEMORY_INFO:
        fz_op_memory_info();
        break;
    case OP_WORKER_REALLOC:
        fz_op_worker_realloc(in);
        break;
    }
}

static size_t fz_allocated_now(void)
{
    nodal_memory_info mi;
    if (nodal_memory_info_get(&mi) != 0)
        fz_fail("nodal_memory_info_get to succeed");
    return mi.allocated;
}

static void fz_init(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    const char *t = getenv("ND_FUZZ_TRACE");
    fz_trace = t && *t && *t != '0';
    const char *s = getenv("ND_FUZZ_STATS");
    fz_check_stats = !(s && *s == '0');
    const char *pa = getenv("ND_FUZZ_PARANOID");
    fz_paranoid = pa && *pa && *pa != '0';
    fz_page = (size_t)sysconf(_SC_PAGESIZE);
    fz_node_count = nodal_node_ids(fz_node_ids, NODAL_MAX_NODES);
    if (fz_node_count <= 0 || fz_node_count > NODAL_MAX_NODES)
        fz_fail("nodal_node_ids to report between 1 and %d nodes, got %d", NODAL_MAX_NODES,
                fz_node_count);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_init();
    struct fz_in in = { data, size };
    size_t allocated_before = fz_check_stats ? fz_allocated_now() : 0;
    for (fz_op_index = 0; in.n > 0 && fz_op_index < FZ_MAX_OPS; fz_op_index++) {
        fz_run_op(&in);
        if (fz_paranoid) {
            fz_sync_all();
            fz_op_memory_info();
        }
    }
    /* Leave nodal as we found it: every block freed, the workers idle. */
    fz_op_name = "end of input: free everything";
    for (size_t i = 0; i < FZ_SLOTS; i++)
        fz_free_slot(i, i);
    fz_sync_all();
    if (fz_check_stats) {
        size_t after = fz_allocated_now();
        FZ_EXPECT(after == allocated_before, "memory info's allocated to return to %zu once the "
                  "input freed everything, it is %zu", allocated_before, after);
    }
    return 0;
}
