/*
 * class.c - the size-class tables (see class.h).
 */
#include "class.h"

const uint32_t nd_class_size[ND_CLASS_COUNT] = {
    16, 32, 48, 64, 80, 96, 112, 128,
    160, 192, 224, 256, 320, 384, 448, 512, 640, 768, 896, 1024,
    1280, 1536, 1792, 2048, 2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192,
    10240, 12288, 14336, 16384, 20480, 24576, 28672, 32768,
    40960, 49152, 57344, 65536, 81920, 98304, 114688, 131072,
};

/* Class of sizes (i-1)*16+1 .. i*16 (index 0: size 0). */
const uint8_t nd_class_lookup[ND_LOOKUP_MAX / ND_QUANTUM + 1] = {
    0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 12, 12,
    13, 13, 13, 13, 14, 14, 14, 14, 15, 15, 15, 15, 16, 16, 16, 16, 16, 16,
    16, 16, 17, 17, 17, 17, 17, 17, 17, 17, 18, 18, 18, 18, 18, 18, 18, 18,
    19, 19, 19, 19, 19, 19, 19, 19,
};

_Static_assert(sizeof nd_class_lookup == 65, "one entry per 16 bytes up to 1 KiB");
_Static_assert(ND_MEDIUM_MAX == 131072, "the last class is ND_MEDIUM_MAX");
