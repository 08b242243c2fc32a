/*
 * tight.h - near an address-space limit, blocks finer than the OS page:
 * the cells of tight slabs.
 *
 * Owns: struct nd_tight_slab (a slab's header), each node's lists of
 * slabs with a free cell.
 *
 * Once the process's address space nears its limit (os.h:
 * nd_os_space_tight), a request of more than ND_TIGHT_MIN bytes whose
 * class's block is more than 4 % larger than the request rounded up to
 * ND_TIGHT_GRAIN takes a cell of that size instead (route.c): a request
 * just past a class or an OS page (32,769 B: a 40 KiB block of its class,
 * a large block of 36 KiB, a cell of 33,024 B; under secure=1 16,384 B and
 * its canary word: 20 KiB, a cell of 16,640 B) wastes under 256 bytes.
 *
 * A tight slab is a large block of plain memory (large.h) of about
 * ND_TIGHT_SLAB_BYTES: a header of ND_TIGHT_GRAIN bytes, then at most
 * ND_TIGHT_CELLS cells of one size one after the other (so 256-byte
 * aligned). Its usable bytes end at its last cell's OS page, so the rest
 * of its run is a tail given back at the next refusal (large.h), as a
 * tight large block's. The descriptor of every chunk of the slab's run
 * has sampled == ND_TIGHT_SLAB and prof_slot == the index of the run's
 * first chunk, so a free of any cell, which takes a large block's slow
 * path (key ND_KEY_LARGE), finds the slab's header from the chunk it lies
 * in (nd_tight_free). Cells are handed out and freed under their node's
 * tight lock (lock.h), lowest free cell first (secure=1: a random free
 * cell); the header's bitmap `used` says which are live, so a second free
 * of a cell is reported, and no freed cell holds anything malloc follows.
 * The header's cookie (its address with the segments' secret) is checked
 * at every free: a write over the header is reported as heap corruption.
 * Under secure=1 a cell's last word is the canary of its address (page.h:
 * nd_block_seal), written when the cell is handed out and checked at its
 * free (free.c).
 *
 * A slab with a free cell is on one of its node's ND_TIGHT_BUCKETS lists
 * (by cell size), which mallocs search for a slab of their cell size
 * (ND_TIGHT_SCAN slabs at most); a full slab is on none until a cell of
 * it is freed. A new slab is made only for a size asked for twice in a
 * row at least (per list: the last size asked for and how many times in
 * a row), with as many cells as that count: a program that fills its
 * limit with one size gets slabs of 2, 4, 8 ... cells, up to
 * ND_TIGHT_SLAB_BYTES; one whose sizes are all different gets none (a
 * slab per size, mostly empty, took more than the class's rounding:
 * 4 threads of random 16-216 KiB requests failed 2.6x as many under
 * 150 MiB), and its requests take their usual route. An empty slab stays listed for the next
 * cells of its size until a maintenance finds that no cell was taken from
 * it since the one before, or a mapping is refused (large.c's release
 * sweeps every empty slab first: nd_tight_sweep). Far from a limit
 * nothing here runs: no fast path tests anything for it.
 *
 *   slab (a large block) +0      +256     +256 + cell         +256 + n cell  run end
 *   | header | cell 0 | cell 1 | ... | cell n-1 | (to its OS page) | tail ...... |
 *
 * Invariants (under the node's tight lock): a slab's header is at its
 * large block's start, a block in use of plain memory of the node, cookie
 * == its address ^ nd_seg_secret; every chunk descriptor of the block's
 * run has sampled == ND_TIGHT_SLAB and prof_slot == the run's first
 * chunk's index, and no other descriptor has sampled == ND_TIGHT_SLAB;
 * cell is a multiple of ND_TIGHT_GRAIN above ND_TIGHT_MIN, 1 <= ncells <=
 * ND_TIGHT_CELLS, ND_TIGHT_GRAIN + ncells * cell <= the block's usable
 * bytes; bit i of used is set only for i < ncells (cell i live); listed
 * == 1 <=> the slab is on its bucket's list <=> it has a free cell.
 */
#ifndef ND_TIGHT_H
#define ND_TIGHT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "config.h"
#include "segment.h"

#define ND_TIGHT_SLAB        3u              /* nd_page.sampled of a tight slab's chunks (slab.h has 1, 2) */
#define ND_TIGHT_GRAIN       256u            /* cell sizes are multiples of this; the header's bytes */
#define ND_TIGHT_MIN         ND_SMALL_MAX    /* cells serve requests (with secure=1's canary) above this ... */
#define ND_TIGHT_MAX         (ND_TIGHT_SLAB_BYTES / 4)   /* ... and up to this */
#define ND_TIGHT_CELLS       64u             /* cells of a slab at most: `used` is a word */
#define ND_TIGHT_SLAB_BYTES  (960 * ND_KiB)  /* a slab is this large at most (ND_TIGHT_CELLS cells at most) */
#define ND_TIGHT_BUCKETS     16u             /* lists of slabs with a free cell, per node */
#define ND_TIGHT_SCAN        32u             /* slabs of a list a malloc looks at, at most */

typedef struct nd_tight_slab {
    uintptr_t cookie;  /* its address ^ nd_seg_secret */
    uint64_t used;     /* bit i: cell i live */
    uint64_t rng;      /* secure=1: the choice of a free cell */
    struct nd_tight_slab *next, *prev;   /* on its bucket's list */
    uint32_t cell;     /* bytes of a cell */
    uint16_t ncells;
    uint8_t  taken;    /* a cell was taken since the last sweep */
    uint8_t  listed;
} nd_tight_slab;
_Static_assert(sizeof(nd_tight_slab) <= ND_TIGHT_GRAIN, "a slab's header fits before its first cell");

/* The cell size of a request of `padded` bytes (secure=1: its canary
   word included). */
static inline size_t nd_tight_cell_of(size_t padded)
{
    return (padded + ND_TIGHT_GRAIN - 1) & ~(size_t)(ND_TIGHT_GRAIN - 1);
}

/* A cell of `cell` bytes (nd_tight_cell_of) of plain memory of `node`, its
   canary written when `sealed` (secure=1); NULL when no slab has one free
   and none is made (*no_room set when the large pool had no room for
   one; the caller takes its usual route). */
void  *nd_tight_alloc(int node, size_t cell, bool sealed, bool *no_room) nd_hidden;

/* What nd_tight_free found wrong. */
enum { ND_TIGHT_OK = 0, ND_TIGHT_NOT_START, ND_TIGHT_NOT_LIVE, ND_TIGHT_OVERFLOW, ND_TIGHT_CORRUPT };
/* Frees p, a pointer into a chunk of large segment s whose descriptor pg
   had sampled == ND_TIGHT_SLAB (any thread): the cell's bytes, or 0 with
   *why set (a pointer that is not a cell's start, a cell not live, a
   canary not intact when `sealed`: the cell is then left live, *cell its
   size; a header overwritten) . */
size_t nd_tight_free(nd_segment *s, const nd_page *pg, void *p, bool sealed, int *why, size_t *cell) nd_hidden;
/* The bytes of p, a live cell (s, pg as above); 0 if p is not one. */
size_t nd_tight_cell_size(nd_segment *s, const nd_page *pg, const void *p) nd_hidden;
/* How many tight slabs are listed (any thread; relaxed). */
extern uint32_t nd_tight_count nd_hidden;
void   nd_tight_sweep_slow(bool force) nd_hidden;
/* Gives the empty slabs back to the large pools: those no cell was taken
   from since the last sweep (maintenance), or all of them (force: a
   mapping was refused). Takes the tight and the large pools' locks. The
   test of the count is inline: every process's maintenance asks, and
   tight.c's code is linked with the code run only on request (a call
   into it mapped the last page of the library's text in a plain program:
   api.std.the_last_page_of_nodals_code_stays_unmapped_in_a_plain_program
   failed 4 runs in 30). */
static inline void nd_tight_sweep(bool force)
{
    if (nd_load_relaxed(&nd_tight_count) != 0)
        nd_tight_sweep_slow(force);
}
/* Debug check of the invariants of every listed slab (takes the tight
   locks). */
bool   nd_tight_is_valid(void) nd_hidden;

#endif /* ND_TIGHT_H */
