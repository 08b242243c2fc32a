/*
 * huge.c - huge blocks (see huge.h): mapped on allocation, unmapped on free,
 * resized by realloc where they are or moved with mremap rather than copied.
 */
#include "huge.h"

#include <errno.h>
#include <string.h>
#include "large.h"
#include "msg.h"
#include "node.h"
#include "options.h"
#include "os.h"
#include "tier.h"

#if ND_DEBUG >= 2
void (*nd_huge_moved_hook)(void *old_start, size_t old_size);
#endif

/* The bytes of the block of a huge segment whose block starts at `offset`:
   to the end of the mapping, but for the guard page (secure=1). */
static size_t nd_huge_bytes(const nd_segment *s, size_t offset)
{
    return s->size - nd_seg_guard - offset;
}

/* The header and page descriptor of a huge segment whose block starts at
   `offset`, and the block gauges. */
static void *nd_huge_setup(nd_segment *s, size_t offset)
{
    nd_seg_set_geometry(s, ND_SEG_SHIFT, 1);
    s->kind = ND_SEG_HUGE;
    s->free_mask = 0;
    s->used_pages = 1;
    /* The chunks the block covers may be written (segment.h: a huge
       mapping's committed); those before it keep what they had. */
    if (offset < ND_SEG_SIZE)
        s->committed |= nd_mask_range((unsigned)(offset >> ND_CHUNK_SHIFT), 63);
    nd_page *pg = &s->pages[0];
    s->desc_dirty = ~(uint64_t)0;   /* (a mapping that was a segment may be one again: node.c) */
    memset(pg, 0, sizeof *pg);
    pg->key = ND_KEY_NONE;
    pg->in_use = 1;
    pg->used = 1;
    pg->capacity = pg->reserved = 1;
    pg->start = (uint8_t *)s + offset;
    pg->block_size = 0;   /* see nd_huge_usable */
    pg->cls = ND_CLASS_COUNT;
    nd_gauge_active((long)nd_huge_bytes(s, offset));
    nd_gauge_add(huge_count, 1);
    nd_gauge_add(huge_bytes, nd_huge_bytes(s, offset));
    return pg->start;
}

/* The pages [p, p + len) a node-bound huge block gains: bound to its node
   and committed there (populated and verified, as nd_huge_alloc commits a
   new one). 0, or -1 (the caller undoes the growth). */
static int nd_huge_place_added(const nd_segment *s, uint8_t *p, size_t len)
{
    if (!s->bound || s->interleaved)
        return 0;   /* plain or interleaved: the mapping's policy goes with it */
    if (nd_seg_bind_node(p, len, s->node) != 0)
        return -1;
    return nd_seg_commit_bound(p, len, s->node);
}

/* Grows the mapping of live huge block s from old to total bytes where it
   is (the addresses after it free): the mapping's last OS page, the guard
   page under secure=1, is the part of it the kernel extends (in place,
   that page's mapping (VMA) grows whatever the block's others are), then
   the old guard page and the added bytes but a new guard page are opened
   and placed. 0, or -1 with nothing changed. */
static int nd_huge_grow_inplace(nd_segment *s, size_t old, size_t total)
{
    const size_t g = nd_seg_guard;
    uint8_t *base = (uint8_t *)s;
    size_t last = g != 0 ? g : nd_os_page_size();
    if (nd_os_remap_inplace(base + old - last, last, last + total - old) != 0)
        return -1;
    if (!nd_segmap_huge(s, old, total))   /* no room for a leaf of the map */
        goto undo_remap;
    if (g != 0 && nd_os_protect(base + old - g, total - old, true) != 0)
        goto undo_map;
    if (nd_huge_place_added(s, base + old - g, total - old) != 0)
        goto undo_protect;
    return 0;
undo_protect:
    if (g != 0)
        nd_os_protect(base + old - g, total - old, false);   /* joins the guard's mapping: no split */
undo_map:
    nd_segmap_huge(s, total, old);
undo_remap:
    nd_os_remap_inplace(base + old - last, last + total - old, last);
    return -1;
}

/* Set once the kernel refused nd_os_remap_keep (before Linux 5.7). */
static bool nd_huge_no_keep;

void nd_huge_moved_in(nd_segment *s, size_t offset, size_t bytes)
{
    size_t ps = nd_os_page_size(), from = offset / ps, to = (offset + bytes) / ps;
    nd_assert(offset % ps == 0 && bytes % ps == 0 && from > 0 && offset + bytes <= s->size);
    if (to > UINT16_MAX)
        return;   /* (a large block is at most 1 MiB: never) */
    s->seams[0] = (uint16_t)from;
    s->seams[1] = offset + bytes < s->size ? (uint16_t)to : 0;
}

/* The ends of the mappings the kernel holds [0, keep) of s in (seams):
   1 to 3 of them, the last keep. */
static unsigned nd_huge_pieces(const nd_segment *s, size_t keep, size_t ends[3])
{
    size_t ps = nd_os_page_size(), a = (size_t)s->seams[0] * ps, b = (size_t)s->seams[1] * ps;
    unsigned n = 0;
    if (a != 0 && a < keep)
        ends[n++] = a;
    if (a != 0 && b > a && b < keep)
        ends[n++] = b;
    ends[n++] = keep;
    return n;
}

/* Moves the first n pieces (ends) of the pages at `from` over those at
   `to` (both mapped: nd_os_remap_to onto our own range, never refused). */
static nd_noinline void nd_huge_move_pieces_back(uint8_t *from, uint8_t *to, const size_t *ends, unsigned n)
{
    size_t a = 0;
    for (unsigned i = 0; i < n; a = ends[i++])
        if (nd_os_remap_to(from + a, ends[i] - a, ends[i] - a, to + a) == NULL)
            nd_fatal("huge block %p: its pages could not move back from %p", (void *)to, (void *)from);
}

/* A block with steps after its move that may fail (a node-bound one's
   added bytes placed and verified on its node; secure=1's guard page
   closed, which splits the mapping) moves to `to` (total bytes reserved
   there, its windows in the map) so that a failure can undo it: its pages
   move and its old range stays mapped, empty (nd_os_remap_keep), the
   block grows where it landed into the room after it, then those steps;
   any failure moves the pages back over the old range. The guard page is
   cut from the block's own mapping, so a later growth where it is joins
   the two again: one mapping, whose next move works the same (a guard
   page mapped apart would not join it, and the block's next move would
   fail: the kernel moves one mapping at a time). A block that is several
   mappings already (seams) moves one at a time, each to its offset there.
   NULL (nothing changed) if it could not. */
static nd_segment *nd_huge_move_undoable(nd_segment *s, size_t old, size_t total, uint8_t *to)
{
    const size_t g = nd_seg_guard;
    size_t ps = nd_os_page_size(), keep = old - g;   /* the bytes that move: not the guard page */
    size_t ends[3];
    unsigned n = nd_huge_pieces(s, keep, ends);   /* one mapping at a time (seams) */
    nd_os_unmap(to + keep, total - keep);   /* the room the block grows into */
    for (unsigned i = 0; i < n; i++) {
        size_t a = i == 0 ? 0 : ends[i - 1];
        if (nd_os_remap_keep((uint8_t *)s + a, ends[i] - a, to + a) == NULL) {
            if (errno == EINVAL)
                nd_store_relaxed(&nd_huge_no_keep, true);   /* a kernel before 5.7 */
            nd_huge_move_pieces_back(to, (uint8_t *)s, ends, i);
            nd_segmap_huge((nd_segment *)to, total, 0);
            nd_os_unmap(to, keep);
            return NULL;
        }
    }
    if (nd_os_remap_inplace(to + keep - ps, ps, ps + total - keep) != 0)   /* mapped there meanwhile */
        goto back;
    if ((g != 0 && nd_os_protect(to + total - g, g, false) != 0) ||
        nd_huge_place_added(s, to + keep, total - old) != 0) {
        nd_os_unmap(to + keep, total - keep);
        goto back;
    }
    /* The old range, the block's windows first (as nd_huge_move). */
    nd_segmap_huge(s, old, 0);
    nd_os_unmap(s, old);
    return (nd_segment *)to;
back:
    nd_segmap_huge((nd_segment *)to, total, 0);
    nd_huge_move_pieces_back(to, (uint8_t *)s, ends, n);   /* over its own range: never refused */
    return NULL;
}

/* A fresh place for huge block s that grows from old to total bytes and
   must move: total bytes reserved (aligned to align), and free address
   space after them for its next growths where it lands, as much again as
   three times total (at most 1 GiB): reserved with it, then given back.
   Reserved alone, a moved block lands where the kernel hands out address
   space, right below the mappings already there, and its next growth finds
   them in its way and moves it again (bench/micro -m grow, a block grown
   by tenths from 1 MiB to 64 MiB: a move at 2.5 times its size each). The
   space stays free while nodal maps below it (os.c's hint) and nothing
   else maps there. A block that shrinks, or with no address space for the
   room (RLIMIT_AS), gets total bytes alone. NULL if not even those. */
static uint8_t *nd_huge_reserve_room(size_t old, size_t total, size_t align)
{
    if (total > old && total <= ((size_t)1 << 40)) {
        size_t room = total <= ((size_t)1 << 30) / 3 ? 3 * total : (size_t)1 << 30;
        uint8_t *to = nd_seg_reserve(total + room, align);
        if (to != NULL) {
            nd_segmap_huge((nd_segment *)to, total + room, total);
            nd_os_unmap(to + total, room);
            return to;
        }
    }
    return nd_seg_reserve(total, align);
}

/* Moves live huge block s (old bytes) to a fresh place of total bytes
   aligned to `align` (a block aligned beyond 4 MiB stays so; growing, with
   room after it: nd_huge_reserve_room), its pages
   moved by the kernel, not copied; a node-bound one, or any under
   secure=1, by nd_huge_move_undoable. On a kernel before 5.7, where
   a move cannot be undone, the new place gets its guard page first and a
   node-bound block's added bytes are placed and verified there before the
   block moves in front of them, so that a failure leaves it where it was
   (they then are mappings of their own, and a later move of that block
   fails: realloc copies it then). A block the kernel holds as several
   mappings (seams) moves as nd_huge_move_undoable moves them, one at a
   time (the kernel moves none that spans two): a block grown past 1 MiB
   from a large block, moved once more by its next growths, was copied at
   that move (bench/micro -m realloc -g 8m: 3.4 MB a sequence).
   NULL with nothing changed if it could not. */
static nd_segment *nd_huge_move(nd_segment *s, size_t old, size_t total, size_t align)
{
    const size_t g = nd_seg_guard;
    bool place = s->bound && !s->interleaved;
    uint8_t *to = nd_huge_reserve_room(old, total, align);
    if (to == NULL)
        return NULL;
    nd_segment *t;
    if ((place || g != 0 || s->seams[0] != 0) && !nd_load_relaxed(&nd_huge_no_keep)) {
        t = nd_huge_move_undoable(s, old, total, to);
        if (t != NULL || !nd_load_relaxed(&nd_huge_no_keep))
            goto moved;
        to = nd_seg_reserve(total, align);   /* the kernel cannot: the other way */
        if (to == NULL)
            return NULL;
    }
    if ((g != 0 && nd_os_protect(to + total - g, g, false) != 0) ||
        (place && nd_huge_place_added(s, to + old - g, total - old) != 0)) {
        nd_segmap_huge((nd_segment *)to, total, 0);
        nd_os_unmap(to, total);
        return NULL;
    }
    /* The block's old windows are cleared before it moves: once mremap has
       released their addresses, another thread may map a segment there and
       set its bytes, which clearing ours afterwards would wipe (its free
       would then say "not allocated by nodal"). Nobody else looks this
       block up meanwhile: its owner is resizing it. */
    nd_segmap_huge(s, old, 0);
    t = nd_os_remap_to(s, old - g, place ? old - g : total - g, to);
    if (t == NULL) {
        nd_segmap_huge(s, 0, old);   /* its leaves are there: cannot fail */
        nd_segmap_huge((nd_segment *)to, total, 0);
        nd_os_unmap(to, total);
        return NULL;
    }
    if (g != 0)
        nd_os_unmap((uint8_t *)s + old - g, g);   /* the old guard page */
moved:
    if (t == NULL)
        return NULL;
#if ND_DEBUG >= 2
    if (nd_huge_moved_hook != NULL)
        nd_huge_moved_hook(s, old);
#endif
    t->cookie = (uintptr_t)t ^ nd_seg_secret;
    return t;
}

/* Resizes the mapping of huge block s (live, or a cached one for reuse)
   to total bytes (its guard page included) without copying it: shrunk
   where it is (the tail unmapped; secure=1: the new guard page closed
   first), grown where it is when the addresses after it are free, else
   moved (nd_huge_move). Returns the segment (perhaps moved), or NULL with
   nothing changed. */
static nd_segment *nd_huge_resize(nd_segment *s, size_t total, size_t align)
{
    const size_t g = nd_seg_guard;
    size_t old = s->size;
    if (total == old)
        return s;
    if (total < old) {
        /* The new guard page joins the old one's mapping (no split, so no
           new mapping the kernel could refuse), which then shrinks. */
        if (g != 0 && nd_os_protect((uint8_t *)s + total - g, old - total, false) != 0)
            return NULL;
        nd_segmap_huge(s, old, total);
        nd_os_unmap((uint8_t *)s + total, old - total);
        nd_gauge_add(returned, old - total);
        size_t ps = nd_os_page_size();
        if ((size_t)s->seams[1] * ps >= total)
            s->seams[1] = 0;   /* the block's pages end the mapping now */
        if ((size_t)s->seams[0] * ps >= total)
            s->seams[0] = s->seams[1] = 0;
    } else if (s->bound && !s->interleaved && nd_tier_over_cap(s->node, total - old) != 0) {
        return NULL;   /* a capped tier's memory: the copy is refused, and counted, as a new block */
    } else if (nd_huge_grow_inplace(s, old, total) != 0) {
        nd_segment *t = nd_huge_move(s, old, total, align);
        if (t == NULL)
            return NULL;
        s = t;
    }
    s->size = total;
    nd_seg_gauge_mapped(s, (long)total - (long)old);
    if (total > old)
        nd_gauge_add(committed, total - old);
    else
        nd_gauge_sub(committed, old - total);
    return s;
}

/* A freed huge mapping of (node, bound) for a block of total bytes. Its
   pages are in memory already, so it is taken as it is when it is not much
   larger (the block gets the spare bytes as usable size); a smaller plain
   one is grown (mremap keeps its pages), a much larger one trimmed.
   Node-bound mappings are taken only when they hold total bytes already
   (new bound memory must be placed and checked). NULL if none fits. */
static nd_segment *nd_huge_reuse(size_t total, int node, bool bound)
{
    size_t most = 4 * total + 4 * ND_SEG_SIZE;   /* spare bytes are usable; trimming would lose resident pages */
    nd_segment *s = nd_node_huge_take(node, bound, total, most);
    if (s == NULL && !bound) {
        s = nd_node_huge_take(node, false, 0, total);   /* the largest smaller one: grow it */
        if (s == NULL)
            s = nd_node_huge_take(node, false, total, SIZE_MAX);   /* a much larger one: trim it */
        if (s != NULL) {
            /* As realloc resizes a live block (secure=1: the guard page
               moves to the new end). */
            nd_segment *t = nd_huge_resize(s, total, ND_SEG_SIZE);
            if (t == NULL) {
                nd_seg_unmap_huge(s);
                return NULL;
            }
            s = t;
        }
    }
    if (s != NULL)
        s->fresh = 0;
    return s;
}

void *nd_huge_alloc(size_t size, size_t alignment, int node, bool bound, const uint64_t *interleave)
{
    if (alignment < ND_HUGE_HEADER_SIZE)
        alignment = ND_HUGE_HEADER_SIZE;
    size_t ps = nd_os_page_size();
    size_t offset = alignment;   /* block offset from the segment start: >= header */
    size_t map_align = alignment > ND_SEG_SIZE ? alignment : ND_SEG_SIZE;
    if (offset / ND_SEG_SIZE >= ND_SEGMAP_REACH || size > ((size_t)1 << 46)) {
        errno = ENOMEM;
        return NULL;
    }
    if (size == 0)
        size = 1;   /* a block of its own, inside the mapping */
    size_t total = ((offset + size + ps - 1) & ~(ps - 1)) + nd_seg_guard;   /* secure=1: a guard page last */
    if (total < size) {
        errno = ENOMEM;
        return NULL;
    }
    /* A mapping a huge block of this kind left behind, if one fits (every
       cached one starts 4 MiB-aligned, and the segment map of its first GiB
       points at its header). */
    if (interleave == NULL && map_align == ND_SEG_SIZE) {
        nd_segment *s = nd_huge_reuse(total, node, bound);
        if (s != NULL)
            return nd_huge_setup(s, offset);
    }
    nd_node_reserve_note(node);
    uint64_t refused = nd_os_map_refusals();
    nd_segment *s = nd_seg_reserve(total, map_align);
    if (s == NULL) {
        /* Out of address space (or memory): give back every cached segment
           and mapping, and try once more. */
        nd_node_release_cached();
        s = nd_seg_reserve(total, map_align);
    }
    /* Refused for lack of address space: the large blocks' free chunks
       give theirs back too (large.h). */
    if (s == NULL && nd_large_release_after(refused))
        s = nd_seg_reserve(total, map_align);
    if (s == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    if (nd_seg_adopt_mapping(s, total, node, bound, interleave, total - nd_seg_guard) != 0)
        return NULL;
    s->fresh = 1;
    s->committed = ~(uint64_t)0;
    nd_gauge_add(committed, total);
    return nd_huge_setup(s, offset);
}

void *nd_huge_from_large(nd_segment *s, size_t offset)
{
    nd_seg_to_huge(s, offset);
    nd_gauge_add(huge_from_large, 1);
    return nd_huge_setup(s, offset);
}

size_t nd_huge_usable(const nd_segment *s, const void *p)
{
    return nd_huge_bytes(s, (size_t)((const uint8_t *)p - (const uint8_t *)s));
}

void nd_huge_free(nd_segment *s)
{
    size_t offset = (size_t)(s->pages[0].start - (uint8_t *)s);
    size_t bytes = nd_huge_bytes(s, offset);
    s->pages[0].in_use = 0;
    nd_gauge_active(-(long)bytes);
    nd_gauge_sub(huge_count, 1);
    nd_gauge_sub(huge_bytes, bytes);
    /* A block made of a segment that grew past it: the segment and the
       rest cached apart, the segment for its node to give as one again
       (node.c), the rest for the next such block to grow into
       (nd_huge_join_next) or any huge block to take. */
    if (s->formatted && s->size > ND_SEG_SIZE && (s->seams[0] | s->seams[1]) == 0 && nd_seg_guard == 0 &&
        !s->interleaved && nd_opt(ND_OPT_purge_delay) > 0) {
        nd_segment *rest = nd_seg_split_huge(s, ND_SEG_SIZE);
        if (!nd_node_huge_keep(rest))
            nd_seg_unmap_huge(rest);
    }
    if (nd_node_huge_keep(s))   /* the next huge block may take it whole */
        return;
    nd_seg_unmap_huge(s);
}

/* Live plain huge block s grows to total bytes into the freed mapping
   that starts where its own ends (the rest of the mapping of a block
   made of a segment, which nd_huge_free cached apart): no system call,
   its pages resident. A rest much larger than the growth (more than about
   four times what it needs, as nd_huge_reuse takes one) gives only its
   first 4 MiB multiples that hold it, the others cached again where they
   are (nd_seg_split_huge) for the block's next growths: a block that
   grows again and again as the one before it did grows through the
   whole rest, joined a piece at a time, where mremap would have found
   the rest in its way and moved the block (bench/micro -m grow: 4 failed
   mremaps a sequence, each a move of the whole block; h55r). true if it
   did (s->size then at least total). */
static bool nd_huge_join_next(nd_segment *s, size_t total)
{
    if (s->bound || s->interleaved || nd_seg_guard != 0 || (s->seams[0] | s->seams[1]) != 0 ||
        s->size % ND_SEG_SIZE != 0)
        return false;
    size_t need = total - s->size;
    nd_segment *t = nd_node_huge_take_at(s->node, false, (uint8_t *)s + s->size, need, SIZE_MAX);
    if (t == NULL)
        return false;
    if (t->interleaved || (t->seams[0] | t->seams[1]) != 0) {
        /* Several mappings to the kernel: joined, the block could not move
           as one. Back where it was. */
        if (!nd_node_huge_keep(t))
            nd_seg_unmap_huge(t);
        return false;
    }
    if (t->size - need > 3 * need + 4 * ND_SEG_SIZE) {
        nd_segment *r = nd_seg_split_huge(t, (need + ND_SEG_SIZE - 1) & ~(ND_SEG_SIZE - 1));
        if (!nd_node_huge_keep(r))
            nd_seg_unmap_huge(r);
    }
    nd_seg_join_huge(s, t);
    return true;
}

void *nd_huge_realloc(nd_segment *s, void *p, size_t size)
{
    size_t offset = (size_t)((uint8_t *)p - (uint8_t *)s);
    if (size > ((size_t)1 << 46))
        return NULL;
    size_t ps = nd_os_page_size();
    size_t total = ((offset + (size == 0 ? 1 : size) + ps - 1) & ~(ps - 1)) + nd_seg_guard;
    size_t old_total = s->size;
    /* Growing: an eighth more than asked, so that a block grown a little at
       a time moves (or even calls the kernel) seldom; the pages past the
       request cost nothing until they are touched (a node-bound block's
       are committed on its node as its first ones were). */
    if (total > old_total && total - old_total < old_total / 8)
        total = (old_total + old_total / 8 + ps - 1) & ~(ps - 1);
    /* The block's alignment is its offset (nd_huge_alloc): a move keeps the
       mapping aligned to it when it exceeds the 4 MiB every one has. */
    size_t align = offset > ND_SEG_SIZE ? (offset & -offset) : ND_SEG_SIZE;
    nd_segment *t = s;
    if (total > old_total && nd_huge_join_next(s, total))
        total = s->size;   /* all of it: its pages are there */
    else if ((t = nd_huge_resize(s, total, align)) == NULL)
        return NULL;
    t->pages[0].start = (uint8_t *)t + offset;
    nd_gauge_add(huge_resizes, 1);
    long delta = (long)total - (long)old_total;
    nd_gauge_active(delta);
    if (delta > 0)
        nd_gauge_add(huge_bytes, (size_t)delta);
    else
        nd_gauge_sub(huge_bytes, (size_t)-delta);
    return t->pages[0].start;
}
