/*
 * size_classes.c - unit tests of the size-class geometry and the address
 * arithmetic the fast paths rely on (internal functions; linked against the
 * debug build of the core).
 */
#include "check.h"
#include "heap.h"
#include "page.h"
#include "segment.h"

/* Every request size maps to the smallest class that holds it. */
static void every_size_maps_to_the_smallest_class_that_fits(void)
{
    for (size_t s = 0; s <= ND_MEDIUM_MAX; s++) {
        unsigned c = nd_class_of(s);
        EXPECT(c < ND_CLASS_COUNT, "class of %zu to be < %d, got %u", s, ND_CLASS_COUNT, c);
        EXPECT(nd_class_size[c] >= s, "class %u (%u B) to hold %zu B", c, nd_class_size[c], s);
        EXPECT(c == 0 || nd_class_size[c - 1] < s || s == 0,
               "%zu B to go to the smallest class that fits, got %u B while %u B fits",
               s, nd_class_size[c], c ? nd_class_size[c - 1] : 0);
    }
}

/* nd_class_aligned_min(c, 0) is the smallest request that any alignment
   up to ND_ALIGN_NATURAL sends to class c (what decides whether secure=1
   caches a bin that aligned requests reach: tcache.c); with a pad, that
   less the pad. Every request and alignment, counted the slow way. */
static void aligned_min_is_the_smallest_request_each_class_serves(void)
{
    static size_t least[ND_CLASS_COUNT];
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++)
        least[c] = SIZE_MAX;
    for (size_t a = ND_QUANTUM; a <= ND_ALIGN_NATURAL; a *= 2)
        for (size_t n = 1; n <= ND_MEDIUM_MAX; n++) {
            unsigned c = nd_class_aligned(n, a);
            if (c < ND_CLASS_COUNT && n < least[c])
                least[c] = n;
        }
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        size_t want = least[c];
        EXPECT(nd_class_aligned_min(c, 0) == want, "the smallest aligned request of class %u (%u B) to be %zu, "
               "got %zu", c, nd_class_size[c], want, nd_class_aligned_min(c, 0));
        EXPECT(nd_class_aligned_min(c, 8) == (want > 8 ? want - 8 : 1), "with a pad of 8, %zu for class %u B, "
               "got %zu", want > 8 ? want - 8 : 1, nd_class_size[c], nd_class_aligned_min(c, 8));
    }
}

/* secure=1's table of aligned requests (nd_class_aligned_bin), looked up
   by the padded size's class: for every request and alignment from 32
   bytes to ND_ALIGN_NATURAL, the bin it gives holds blocks of the smallest
   class that has a bin, holds the request and its canary word, and is a
   multiple of the alignment (none: no such class). */
static void secure_aligned_bins_hold_the_smallest_aligned_class_with_a_bin(void)
{
    nd_class_pad_requests(8);   /* as nd_secure_init: secure=1's bins */
    for (unsigned k = 0; k < ND_ALIGN_ROWS; k++) {
        size_t a = (size_t)1 << (k + ND_ALIGN_ROW0);
        for (size_t n = 1; n + 8 <= ND_MEDIUM_MAX; n++) {
            unsigned want = ND_CLASS_COUNT;
            for (unsigned d = 0; d < ND_CLASS_COUNT && want == ND_CLASS_COUNT; d++)
                if (nd_class_bin[d] < ND_CLASS_COUNT && nd_class_size[d] >= n + 8 && nd_class_size[d] % a == 0)
                    want = nd_class_bin[d];
            unsigned got = nd_class_aligned_bin[k][nd_class_of(n + 8)];
            EXPECT(got == want, "a request of %zu B aligned to %zu to take bin %u (blocks of %u B), got bin %u "
                   "(blocks of %u B)", n, a, want, want < ND_CLASS_COUNT ? nd_class_size[nd_bin_class[want]] : 0,
                   got, got < ND_CLASS_COUNT ? nd_class_size[nd_bin_class[got]] : 0);
        }
    }
}

/* The smallest class with a bin, of at least n + pad bytes, whose size is
   a multiple of a (ND_CLASS_COUNT: none): the bin an aligned request of n
   bytes must take. */
static unsigned smallest_aligned_bin(size_t n, size_t pad, size_t a)
{
    for (unsigned d = 0; d < ND_CLASS_COUNT; d++)
        if (nd_class_bin[d] < ND_CLASS_COUNT && nd_class_size[d] >= n + pad && nd_class_size[d] % a == 0)
            return nd_class_bin[d];
    return ND_CLASS_COUNT;
}

/* The aligned fast path's table (nd_class_aligned_off, pad: 0 by default,
   secure=1's canary word): every request of 0 to ND_ALIGN_FAST_MAX bytes
   at every alignment from 32 bytes to ND_ALIGN_NATURAL takes the bin of
   the smallest class that holds it (and the pad) and is a multiple of the
   alignment. */
static void check_aligned_offsets(size_t pad)
{
    nd_class_aligned_init(pad);
    for (unsigned k = 0; k < ND_ALIGN_ROWS; k++) {
        size_t a = (size_t)1 << (k + ND_ALIGN_ROW0);
        for (size_t n = 0; n <= ND_ALIGN_FAST_MAX; n++) {
            unsigned want = smallest_aligned_bin(n, pad, a);
            unsigned got = nd_class_aligned_off[k][(n + ND_BIN_STEP - 1) / ND_BIN_STEP];
            EXPECT(want < ND_CLASS_COUNT && got == want,
                   "a request of %zu B (pad %zu) aligned to %zu to take bin %u (blocks of %u B), got bin %u",
                   n, pad, a, want, want < ND_CLASS_COUNT ? nd_class_size[nd_bin_class[want]] : 0, got);
        }
    }
}

/* By default (no padding) the same holds for the larger aligned requests,
   up to the last class, whose class is that of their size rounded up to
   the alignment (nd_class_aligned_past_lookup: a class past 1 KiB from
   nd_class_big); every request has one (the fast path does not check). */
static void aligned_offsets_take_the_smallest_aligned_class(void)
{
    check_aligned_offsets(0);
    for (unsigned k = 0; k < ND_ALIGN_ROWS; k++) {
        size_t a = (size_t)1 << (k + ND_ALIGN_ROW0);
        for (size_t n = ND_ALIGN_FAST_MAX + 1; n <= ND_MEDIUM_MAX; n++) {
            unsigned want = smallest_aligned_bin(n, 0, a), got = nd_class_aligned_past_lookup(n, a);
            EXPECT(want < ND_CLASS_COUNT && got == want, "a request of %zu B aligned to %zu to take bin %u, got %u",
                   n, a, want, got);
        }
    }
}

/* After secure=1's padding: its aligned fast path's
   table leaves room for the canary word. */
static void secure_aligned_offsets_take_the_smallest_aligned_class_with_a_bin(void)
{
    nd_class_pad_requests(8);   /* as nd_secure_init: secure=1's bins */
    check_aligned_offsets(8);
}

/* 16-byte quantum up to 128 B; at most 25 % between neighbours above. */
static void classes_are_quantum_aligned_and_at_most_25_percent_apart(void)
{
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        EXPECT(nd_class_size[c] % ND_QUANTUM == 0, "class %u size %u to be a multiple of 16", c,
               nd_class_size[c]);
        if (c > 0) {
            uint32_t prev = nd_class_size[c - 1], cur = nd_class_size[c];
            EXPECT(cur > prev, "sizes to increase (%u then %u)", prev, cur);
            if (prev >= 128)
                EXPECT((cur - prev) * 4 <= prev, "spacing above 128 B to be <= 25 %% (%u -> %u)",
                       prev, cur);
            else
                EXPECT(cur - prev == ND_QUANTUM, "a 16-byte step below 128 B (%u -> %u)", prev, cur);
        }
    }
    EXPECT(nd_class_size[ND_CLASS_COUNT - 1] == ND_MEDIUM_MAX, "the last class to be %zu B",
           (size_t)ND_MEDIUM_MAX);
}

/* The multiply-based block index equals offset / size for every block start
   and rejects every other offset, in every class, over a whole page. */
static void block_index_by_multiply_is_exact(void)
{
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        nd_page pg;
        memset(&pg, 0, sizeof pg);
        pg.block_size = nd_class_size[c];
        pg.mul = nd_block_mul(pg.block_size);
        pg.start = (uint8_t *)(uintptr_t)(ND_SEG_SIZE * 8 + ND_SEG_HEADER_SIZE);
        size_t area = nd_class_size[c] <= ND_SMALL_MAX ? ND_SEG_SIZE : ND_SEG_SIZE;
        for (size_t off = 0; off < area; off += (c < 8 ? 1 : 7)) {
            size_t idx = nd_page_block_index(&pg, pg.start + off);
            EXPECT(idx == off / pg.block_size, "index of offset %zu in class %u B to be %zu, got %zu",
                   off, pg.block_size, off / pg.block_size, idx);
        }
    }
}

/* The free fast path's block-start check (nd_page_block_ok) accepts exactly
   the starts of carved blocks: every offset of a whole page of every class,
   offsets before the page (a segment header) and beyond what was carved. */
static void fast_block_start_check_is_exact(void)
{
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        nd_page pg;
        memset(&pg, 0, sizeof pg);
        pg.block_size = nd_class_size[c];
        pg.mul = nd_block_mul(pg.block_size);
        pg.start = (uint8_t *)(uintptr_t)(ND_SEG_SIZE * 8 + ND_SEG_HEADER_SIZE);
        size_t page = nd_class_is_small(c) ? ND_SMALL_PAGE_SIZE : ND_MEDIUM_PAGE_SIZE;
        size_t blocks = page / pg.block_size;
        pg.capacity = (uint16_t)(blocks - blocks / 3);   /* part of the page carved */
        pg.limit = (uint64_t)pg.capacity * (pg.mul * pg.block_size);
        size_t span = (size_t)pg.capacity * pg.block_size;
        /* The whole segment after the page start (the check sees pointers
           of its segment only), and the header before it. */
        for (size_t off = 0; off < ND_SEG_SIZE - ND_SEG_HEADER_SIZE; off++) {
            bool want = off % pg.block_size == 0 && off < span;
            EXPECT(nd_page_block_ok(&pg, pg.start + off) == want,
                   "the fast check to %s offset %zu of a %u-byte page carved to %zu bytes",
                   want ? "accept" : "reject", off, pg.block_size, span);
            EXPECT(nd_page_link_ok(&pg, pg.start + off) == want,
                   "the link check to %s offset %zu of a %u-byte page carved to %zu bytes",
                   want ? "accept" : "reject", off, pg.block_size, span);
        }
        for (size_t back = 1; back <= ND_SEG_HEADER_SIZE; back++)
            EXPECT(!nd_page_block_ok(&pg, pg.start - back), "the fast check to reject %zu bytes before "
                   "the first block of class %u B (the segment header)", back, pg.block_size);
        /* Links may hold anything: far pointers never pass the link check. */
        for (uint64_t far = 1; far < 4096; far++) {
            uint64_t v = far * 0x9e3779b97f4a7c15u;
            EXPECT(!nd_page_link_ok(&pg, (void *)(uintptr_t)v) || ((uintptr_t)v - (uintptr_t)pg.start) < span,
                   "the link check to reject the far pointer %#llx", (unsigned long long)v);
        }
        pg.limit = 0;
        EXPECT(!nd_page_block_ok(&pg, pg.start), "a page with nothing carved to take no block (class %u B)",
               pg.block_size);
    }
}

/* What a read of freed blocks gives (page.h): a block's link and mark.
   Every link leads where it was set to; a link copied to another block,
   or with its index changed, is rejected; marks are never 0 nor the fill
   word, differ from block to block, and the XOR of one block's mark with
   its address, XORed with another address, is not that block's mark (the
   XOR scheme's shortcut). Checked over every block of a 64 KiB page of
   48-byte blocks. */
static void links_and_marks_read_from_one_block_forge_no_other(void)
{
    static uint8_t area[ND_SMALL_PAGE_SIZE] __attribute__((aligned(65536)));
    nd_page_keys_init();
    nd_page pg;
    memset(&pg, 0, sizeof pg);
    pg.block_size = 48;
    pg.mul = nd_block_mul(pg.block_size);
    pg.start = area;
    size_t blocks = sizeof area / pg.block_size;
    pg.capacity = (uint16_t)blocks;
    pg.limit = (uint64_t)pg.capacity * (pg.mul * pg.block_size);
#define BLK(i) ((nd_block *)(area + (size_t)(i) * pg.block_size))
    for (size_t i = 0; i < blocks; i++) {
        uintptr_t m = nd_block_mark_of(BLK(i));
        EXPECT(m != 0 && m != ND_FILL_WORD && (m & 0x20), "block %zu's mark %#llx to be neither 0 nor the "
               "fill word, bit 5 set", i, (unsigned long long)m);
        if (i > 0) {
            uintptr_t prev = nd_block_mark_of(BLK(i - 1));
            EXPECT(m != prev, "blocks %zu and %zu to have different marks", i - 1, i);
            EXPECT((prev ^ (uintptr_t)BLK(i - 1) ^ (uintptr_t)BLK(i)) != m,
                   "block %zu's mark not to follow from block %zu's by an XOR of addresses", i, i - 1);
        }
    }
    size_t step = 7;   /* pairs (b, next) and copies over a sample of the page */
    for (size_t i = 0; i < blocks; i += step) {
        for (size_t j = 0; j <= blocks; j += step) {
            nd_block *b = BLK(i), *next = j == blocks ? NULL : BLK(j), *got = (nd_block *)1;
            nd_link_set(&pg, b, next);
            EXPECT(nd_link_get(&pg, b, &got) && got == next, "the link of block %zu set to %zu to lead there",
                   i, j);
            uint64_t w = (uint64_t)(uintptr_t)b->next;
            for (size_t k = 0; k < blocks; k += step) {
                if (k == i)
                    continue;
                BLK(k)->next = b->next;
                EXPECT(!nd_link_get(&pg, BLK(k), &got), "block %zu's link copied into block %zu to be rejected",
                       i, k);
            }
            for (uint64_t f = 0; f <= blocks; f += step) {
                if (f == (w & 0xffff))
                    continue;
                b->next = (nd_block *)(uintptr_t)((w & ~(uint64_t)0xffff) | f);
                EXPECT(!nd_link_get(&pg, b, &got), "block %zu's link with its index changed to %llu to be "
                       "rejected", i, (unsigned long long)f);
            }
        }
    }
#undef BLK
}

/* Chunk masks cover exactly the 64 KiB chunks a range touches. */
static void chunk_masks_cover_exactly_the_touched_chunks(void)
{
    nd_segment *s = (nd_segment *)(uintptr_t)(ND_SEG_SIZE * 16);
    uint8_t *base = (uint8_t *)s;
    EXPECT(nd_seg_chunks(s, base, 1) == 1, "one byte at the start to be chunk 0");
    EXPECT(nd_seg_chunks(s, base + ND_CHUNK_SIZE - 1, 2) == 3, "a range across a chunk edge to cover 2");
    EXPECT(nd_seg_chunks(s, base, ND_SEG_SIZE) == ~(uint64_t)0, "the whole segment to be all chunks");
    EXPECT(nd_seg_chunks(s, base + ND_SEG_SIZE - 1, 1) == (uint64_t)1 << 63, "the last byte to be chunk 63");
    EXPECT(nd_seg_chunks(s, base, 0) == 0, "an empty range to cover nothing");
}

/* Page areas tile a segment: page 0 starts after the header, the others on
   their page boundary, and every start is 16 KiB aligned (natural alignment
   of the aligned-allocation path). */
static void page_areas_tile_the_segment(void)
{
    static uint8_t store[64];
    (void)store;
    nd_segment *s = (nd_segment *)(uintptr_t)(ND_SEG_SIZE * 32);
    uint8_t shifts[2] = { ND_SMALL_PAGE_SHIFT, ND_MEDIUM_PAGE_SHIFT };
    for (int k = 0; k < 2; k++) {
        /* nd_seg_page_area reads only page_shift */
        nd_segment fake;
        memset(&fake, 0, sizeof fake);
        fake.page_shift = shifts[k];
        size_t n = ND_SEG_SIZE >> shifts[k], total = 0;
        for (unsigned i = 0; i < n; i++) {
            size_t area;
            uint8_t *start = nd_seg_page_area(&fake, i, &area);
            uintptr_t off = (uintptr_t)(start - (uint8_t *)&fake);
            EXPECT(off % ND_ALIGN_NATURAL == 0, "page %u starts %zu-aligned", i, (size_t)ND_ALIGN_NATURAL);
            EXPECT(i != 0 || off == ND_SEG_HEADER_SIZE, "page 0 to start after the header");
            total += area;
        }
        EXPECT(total == ND_SEG_SIZE - ND_SEG_HEADER_SIZE, "pages to cover the segment minus its header");
    }
    (void)s;
}

static const struct nd_case cases[] = {
    ND_CASE(every_size_maps_to_the_smallest_class_that_fits),
    ND_CASE(classes_are_quantum_aligned_and_at_most_25_percent_apart),
    ND_CASE(aligned_min_is_the_smallest_request_each_class_serves),
    ND_CASE(aligned_offsets_take_the_smallest_aligned_class),
    ND_CASE(secure_aligned_bins_hold_the_smallest_aligned_class_with_a_bin),
    ND_CASE(secure_aligned_offsets_take_the_smallest_aligned_class_with_a_bin),
    ND_CASE(block_index_by_multiply_is_exact),
    ND_CASE(fast_block_start_check_is_exact),
    ND_CASE(chunk_masks_cover_exactly_the_touched_chunks),
    ND_CASE(page_areas_tile_the_segment),
    ND_CASE(links_and_marks_read_from_one_block_forge_no_other),
};
ND_MAIN(cases)
