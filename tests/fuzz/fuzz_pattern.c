/*
 * fuzz_pattern.c - the contents of the fuzz target's blocks: fill, verify,
 * verify zeros. A unit of its own so that the fuzz build compiles it
 * without libFuzzer's comparison tracing and ASan: those loops are not what
 * the fuzzer should learn from (they took 90 % of a run when instrumented),
 * and the memory they touch is nodal's, which ASan does not track anyway.
 */
#include "fuzz_pattern.h"
#include "pattern.h"

/* pattern.h's positions (every byte up to 64 KiB, then the first and last
   4 KiB and one word per 4 KiB), except that blocks past FZ_SPARSE_FROM get
   one word per FZ_SPARSE_STEP between their edges: each OS page faulted in
   costs more than the rest of an operation, and the model still sees any
   block that moves, shrinks or is handed out twice. */
#define FZ_SPARSE_FROM ((size_t)1 << 20)
#define FZ_SPARSE_STEP ((size_t)64 << 10)

/* Writes (check == 0) or verifies the pattern positions of a block filled
   as `size` bytes, cut at `limit`; returns the first wrong offset or
   SIZE_MAX. zero != 0 verifies zeros instead (calloc). */
static size_t fz_pat_apply(void *block, size_t size, size_t limit, uint64_t tag, int check, int zero)
{
    unsigned char *p = block;
    size_t end = nd_min_size(size, limit);
    if (size <= FZ_SPARSE_FROM && !zero)
        return nd_pat_apply(p, size, limit, tag, check);
    size_t edge = size <= ND_PAT_DENSE ? size : ND_PAT_PAGE;
    size_t step = size <= FZ_SPARSE_FROM ? ND_PAT_PAGE : FZ_SPARSE_STEP;
    size_t lo[3], hi[3];
    lo[0] = 0, hi[0] = nd_min_size(edge, end);
    lo[2] = size - edge, hi[2] = end;
    lo[1] = edge, hi[1] = size > 2 * edge ? size - edge : edge;
    for (int r = 0; r < 3; r++) {
        if (r == 2 && size <= ND_PAT_DENSE)
            break;
        if (r == 1) {   /* one word per step */
            for (size_t o = lo[1]; o + 8 <= hi[1] && o < end; o += step) {
                size_t e = nd_min_size(o + 8, end), bad;
                if (zero) {
                    for (size_t b = o; b < e; b++)
                        if (p[b])
                            return b;
                } else if ((bad = nd_pat_range(p, o, e, tag, check)) != SIZE_MAX) {
                    return bad;
                }
            }
            continue;
        }
        if (lo[r] >= hi[r])
            continue;
        if (zero) {
            for (size_t b = lo[r]; b < hi[r]; b++)
                if (p[b])
                    return b;
        } else {
            size_t bad = nd_pat_range(p, lo[r], hi[r], tag, check);
            if (bad != SIZE_MAX)
                return bad;
        }
    }
    return SIZE_MAX;
}

void fz_fill(void *p, size_t size, uint64_t tag)
{
    fz_pat_apply(p, size, size, tag, 0, 0);
}

size_t fz_check(const void *p, size_t size, size_t limit, uint64_t tag)
{
    return fz_pat_apply((void *)p, size, limit, tag, 1, 0);
}

size_t fz_zero_check(const void *p, size_t size)
{
    return fz_pat_apply((void *)p, size, size, 0, 1, 1);
}

