/*
 * fuzz_pattern.h - block contents for the fuzz target (fuzz_pattern.c).
 */
#ifndef ND_FUZZ_PATTERN_H
#define ND_FUZZ_PATTERN_H

#include <stddef.h>
#include <stdint.h>

/* Fills the pattern positions of a block of `size` bytes with tag's bytes. */
void fz_fill(void *p, size_t size, uint64_t tag);
/* First wrong offset among the first `limit` bytes of a block filled as
   `size` bytes with `tag`, or SIZE_MAX. */
size_t fz_check(const void *p, size_t size, size_t limit, uint64_t tag);
/* First non-zero offset among the pattern positions of `size` bytes, or
   SIZE_MAX. */
size_t fz_zero_check(const void *p, size_t size);

#endif /* ND_FUZZ_PATTERN_H */
