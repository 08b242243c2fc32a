/*
 * class.c - the size-class tables (see class.h).
 */
#include "class.h"

#include "msg.h"

const uint32_t nd_class_size[ND_CLASS_COUNT] = {
    16, 32, 48, 64, 80, 96, 112, 128,
    160, 192, 224, 256, 320, 384, 448, 512, 640, 768, 896, 1024,
    1280, 1536, 1792, 2048, 2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192,
    10240, 12288, 14336, 16384, 20480, 24576, 28672, 32768,
    40960, 49152, 57344, 65536, 81920, 98304, 114688, 131072,
};

/* Class of sizes (i-1)*16+1 .. i*16 (index 0: size 0), written once and
   expanded into the class table and the fast paths' bin-offset table
   (ND_LOOKUP_TAIL: from index 1 on). */
#define ND_LOOKUP(X) X(0) ND_LOOKUP_TAIL(X)
#define ND_LOOKUP_TAIL(X)                                                                      \
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(8) X(9) X(9) X(10) X(10) X(11) X(11)        \
    X(12) X(12) X(12) X(12) X(13) X(13) X(13) X(13) X(14) X(14) X(14) X(14) X(15) X(15)       \
    X(15) X(15) X(16) X(16) X(16) X(16) X(16) X(16) X(16) X(16) X(17) X(17) X(17) X(17)       \
    X(17) X(17) X(17) X(17) X(18) X(18) X(18) X(18) X(18) X(18) X(18) X(18) X(19) X(19)       \
    X(19) X(19) X(19) X(19) X(19) X(19)
#define ND_AS_CLASS(c) c,
/* Two entries of the bin-offset table, which steps by ND_BIN_STEP (8)
   bytes: sizes (i-1)*16+1 .. (i-1)*16+8 and the 8 above them. */
#define ND_AS_OFFSET2(c) (c) * ND_BIN_BYTES, (c) * ND_BIN_BYTES,
const uint8_t nd_class_lookup[ND_LOOKUP_MAX / ND_QUANTUM + 1] = { ND_LOOKUP(ND_AS_CLASS) };
/* Not const: secure=1 pads it once at process start (nd_class_pad_requests). */
uint16_t nd_class_bin_offset[ND_LOOKUP_MAX / ND_BIN_STEP + 1] = { 0, ND_LOOKUP_TAIL(ND_AS_OFFSET2) };

/* Past ND_LOOKUP_MAX: the class of sizes (i-1)*256+1 .. i*256, from the
   bit length of i*256 - 1 as nd_class_of computed it before (folded by the
   compiler: a constant). Entries 0-4 only complete the table (entry 0
   would be the class of 0 - 1). */
#define ND_BIG_CLASS_OF(x) (4u * (63u - (unsigned)__builtin_clzll(x)) - 20u + \
                            (unsigned)(((x) >> (61u - (unsigned)__builtin_clzll(x))) & 3u))
#define ND_BIG1(i) (uint8_t)((i) == 0 ? 0 : ND_BIG_CLASS_OF((unsigned long long)(i) * ND_BIG_STEP - 1)),
#define ND_BIG2(i) ND_BIG1(i) ND_BIG1((i) + 1)
#define ND_BIG4(i) ND_BIG2(i) ND_BIG2((i) + 2)
#define ND_BIG8(i) ND_BIG4(i) ND_BIG4((i) + 4)
#define ND_BIG16(i) ND_BIG8(i) ND_BIG8((i) + 8)
#define ND_BIG32(i) ND_BIG16(i) ND_BIG16((i) + 16)
#define ND_BIG64(i) ND_BIG32(i) ND_BIG32((i) + 32)
#define ND_BIG128(i) ND_BIG64(i) ND_BIG64((i) + 64)
#define ND_BIG256(i) ND_BIG128(i) ND_BIG128((i) + 128)
#define ND_BIG512(i) ND_BIG256(i) ND_BIG256((i) + 256)
const uint8_t nd_class_big[ND_MEDIUM_MAX / ND_BIG_STEP + 1] = { ND_BIG512(0) ND_BIG1(512) };

_Static_assert(sizeof nd_class_lookup == 65, "one entry per 16 bytes up to 1 KiB");
_Static_assert(sizeof nd_class_big == 513, "one entry per 256 bytes up to 128 KiB");
_Static_assert(sizeof nd_class_bin_offset == 2 * 129, "one bin offset per 8 bytes up to 1 KiB");
_Static_assert(ND_MEDIUM_MAX == 131072, "the last class is ND_MEDIUM_MAX");

#define ND_AS_SELF(c) c,
#define ND_CLASSES(X)                                                                            \
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16)  \
    X(17) X(18) X(19) X(20) X(21) X(22) X(23) X(24) X(25) X(26) X(27) X(28) X(29) X(30) X(31)   \
    X(32) X(33) X(34) X(35) X(36) X(37) X(38) X(39) X(40) X(41) X(42) X(43) X(44) X(45) X(46)   \
    X(47)
uint8_t nd_bin_class[ND_CLASS_COUNT] = { ND_CLASSES(ND_AS_SELF) };
uint8_t nd_class_bin[ND_CLASS_COUNT] = { ND_CLASSES(ND_AS_SELF) };
_Static_assert(sizeof nd_bin_class == ND_CLASS_COUNT, "one entry per class");

uint8_t nd_class_aligned_bin[ND_ALIGN_ROWS][ND_ALIGN_BIN_ROW];
uint8_t nd_class_aligned_off[ND_ALIGN_ROWS][ND_ALIGN_ROW_LEN];

/* The rows of nd_class_aligned_bin from the classes and their bins (as
   they are: nd_class_pad_requests's, or the identities). */
static void nd_class_aligned_bins_fill(void)
{
    for (unsigned k = 0; k < ND_ALIGN_ROWS; k++) {
        size_t a = (size_t)1 << (k + ND_ALIGN_ROW0);
        for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
            unsigned d = nd_class_aligned(nd_class_size[c], a);
            if (d < ND_CLASS_COUNT && nd_class_bin[d] >= ND_CLASS_COUNT)
                d++;   /* no bin (class 0 only): the next class (class.h) */
            nd_assert(d >= ND_CLASS_COUNT || (nd_class_size[d] & (a - 1)) == 0);
            nd_class_aligned_bin[k][c] = (uint8_t)(d < ND_CLASS_COUNT ? nd_class_bin[d] : ND_CLASS_COUNT);
        }
    }
}

void nd_class_pad_requests(size_t pad)
{
    unsigned first = nd_class_of(ND_LOOKUP_MAX + 1);   /* the first class the fast path does not pad */
    for (unsigned b = first; b < ND_CLASS_COUNT; b++)
        nd_bin_class[b] = (uint8_t)(b + 1);   /* ND_CLASS_COUNT for the last: none */
    for (unsigned c = first + 1; c < ND_CLASS_COUNT; c++)
        nd_class_bin[c] = (uint8_t)(c - 1);
    /* The first class's blocks go to bin 0, which no padded request takes
       (each needs 24 bytes at least: link, mark, canary): the requests of
       up to 1 KiB that need it (1,017-1,024 bytes, with the canary word)
       get its blocks, 1,280 bytes, not the next class's 1,536 (before, the
       first class had no bin). */
    _Static_assert(ND_QUANTUM < 24, "no padded request takes class 0");
    nd_class_bin[first] = 0;
    nd_bin_class[0] = (uint8_t)first;
    nd_class_bin[0] = ND_CLASS_COUNT;
    /* Per ND_BIN_STEP bytes: a request takes the smallest class with room
       for it and the canary (33-40 bytes: 48, not 64; 1,009-1,016: 1 KiB,
       not 1.25). */
    for (size_t i = 0; i <= ND_LOOKUP_MAX / ND_BIN_STEP; i++) {
        size_t largest = i == 0 ? ND_BIN_STEP : i * ND_BIN_STEP;   /* the largest request of entry i */
        size_t need = largest + pad < 24 ? 24 : largest + pad;   /* link, mark, canary */
        nd_class_bin_offset[i] = (uint16_t)(nd_class_bin[nd_class_of(need)] * ND_BIN_BYTES);
    }
    nd_class_aligned_bins_fill();
}

void nd_class_aligned_init(size_t pad)
{
    /* (nd_class_aligned_bin: secure=1's alone, nd_class_pad_requests filled it) */
    for (unsigned k = 0; k < ND_ALIGN_ROWS; k++) {
        size_t a = (size_t)1 << (k + ND_ALIGN_ROW0);
        for (size_t i = 0; i < ND_ALIGN_ROW_LEN; i++) {
            size_t largest = i == 0 ? ND_BIN_STEP : i * ND_BIN_STEP;   /* the largest request of entry i */
            unsigned d = nd_class_aligned(largest + pad, a);
            if (d < ND_CLASS_COUNT && nd_class_bin[d] >= ND_CLASS_COUNT)
                d++;   /* no bin (class 0 only, under secure=1): the next class */
            if (d >= ND_CLASS_COUNT || nd_class_bin[d] >= ND_CLASS_COUNT || (nd_class_size[d] & (a - 1)) != 0)
                nd_fatal("size classes: no aligned class with a bin for %zu bytes at %zu", largest + pad, a);
            nd_class_aligned_off[k][i] = (uint8_t)nd_class_bin[d];
        }
    }
}
