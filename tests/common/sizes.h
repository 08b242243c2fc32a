/*
 * sizes.h - request sizes that walk across nodal's size classes, its large
 * and huge thresholds, without knowing where they are: every small size, then
 * for each power of two p the sizes p, 1.25p, 1.5p, 1.75p and one byte either
 * side of each (size-class spacings are powers of two or quarters of them).
 */
#ifndef ND_TEST_SIZES_H
#define ND_TEST_SIZES_H

#include <stddef.h>
#include <stdint.h>

#include "check.h"

#define ND_LADDER_MAX 512

/* Fills sizes[] with the ladder from 0 up to `max` inclusive; returns how
   many. Above 1 MiB (past the small and large classes, where each size costs
   page faults) only p and 1.5p and their neighbours. */
__attribute__((unused))
static size_t nd_size_ladder(size_t *sizes, size_t max)
{
    size_t n = 0;
    for (size_t s = 0; s <= 64 && s <= max; s++)
        sizes[n++] = s;
    for (size_t p = 64; p <= max; p *= 2) {
        for (size_t q = 0; q < 4; q++) {
            if (p > ((size_t)1 << 20) && (q == 1 || q == 3))
                continue;
            size_t base = p + q * (p / 4);
            for (size_t d = 0; d < 3; d++) {
                size_t s = base - 1 + d;
                if (s > 64 && s <= max && (n == 0 || s > sizes[n - 1]) && n < ND_LADDER_MAX)
                    sizes[n++] = s;
            }
        }
    }
    return n;
}

/* A coarser ladder for pairwise tests (realloc from each to each); the
   step-by-step realloc tests go further (80 MiB). */
static const size_t nd_pair_sizes[] = {
    1, 8, 16, 24, 48, 100, 256, 500, 1000, 2048, 4000, 8192, 16000, 32768,
    65536, 100000, 262144, 500000, (size_t)1 << 20, (size_t)3 << 20,
    (size_t)1 << 22, (size_t)10 << 20,
};
#define ND_PAIR_SIZES (sizeof nd_pair_sizes / sizeof nd_pair_sizes[0])


/* A size in [lo, hi] (1 <= lo <= hi), log-uniform: a random bit length,
   then a random value below it, so every size class of the range gets
   traffic. */
__attribute__((unused))
static size_t nd_log_uniform(struct nd_rng *r, size_t lo, size_t hi)
{
    unsigned lo_bits = 0, hi_bits = 0;
    while (((size_t)1 << lo_bits) < lo)
        lo_bits++;
    while (((size_t)1 << hi_bits) < hi)
        hi_bits++;
    unsigned bits = lo_bits + (unsigned)nd_rng_below(r, hi_bits - lo_bits + 1);
    size_t top = (size_t)1 << bits;
    size_t s = top / 2 + nd_rng_below(r, top / 2 + 1);
    return s < lo ? lo : s > hi ? hi : s;
}

/* A request size drawn from a mix that is mostly small, sometimes medium or
   large and rarely huge (per mille: 600 up to 256 B, 250 up to 4 KiB, 100 up
   to 64 KiB, 45 up to 1 MiB, huge_pm from 1 to 9 MiB; the rest up to 1 MiB).
   Within each band, log-uniform so every class of the band gets traffic. */
__attribute__((unused))
static size_t nd_random_size(struct nd_rng *r, unsigned huge_pm)
{
    uint64_t pick = nd_rng_below(r, 1000);
    size_t lo, hi;
    if (pick < 600)
        lo = 1, hi = 256;
    else if (pick < 850)
        lo = 257, hi = 4096;
    else if (pick < 950)
        lo = 4097, hi = 65536;
    else if (pick < 1000 - huge_pm)
        lo = 65537, hi = (size_t)1 << 20;
    else
        lo = ((size_t)1 << 20) + 1, hi = (size_t)9 << 20;
    return nd_log_uniform(r, lo, hi);
}

#endif /* ND_TEST_SIZES_H */
