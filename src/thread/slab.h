/*
 * slab.h - the heap profile's sample slabs (prof=1, docs/profiling.md):
 * the cells sampled requests take instead of large blocks of their own.
 *
 * Owns: struct nd_slab and struct nd_slab_cell, the cell slab of each
 * node and kind of memory.
 */
#ifndef ND_SLAB_H
#define ND_SLAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "config.h"
#include "segment.h"

struct nd_tcache;

/*
 * prof=1: sample slabs. A sampled request of a class of at most
 * ND_SLAB_CELL_MAX bytes gets a cell of the cell slab of its cache's node
 * and kind of memory (plain or bound: one slab each, shared by all the
 * threads whose caches are of it, under its lock, lock.h: prof_slab), a
 * large block of one OS page, rather than a large block of its own (a
 * fresh OS page and a 64 KiB chunk each): the samples share that page
 * until it is full. (One slab a thread cache made each sampling thread
 * hold an OS page for its slab: batchq -w 8, 8 producers, 32 KiB.) (A
 * sampled request of a larger class is its class's
 * ordinary block, whose page counts it: page.h, nd_page_sample_add. A
 * page of small blocks holds up to 4,096 of them, whose frees would all
 * take the slow path while the sample lives.) The block's descriptor has
 * sampled == ND_PROF_SLAB, so every free of a cell takes the slow path
 * (key ND_KEY_LARGE) and finds its cell in the slab's header
 * (nd_slab_cell_find), its first 512 bytes; the descriptor's prof_slot
 * is ND_SLAB_NO_SLOT.
 *
 *   slab  +0                    +512
 *   | header: refs, top, cells | cell | cell |  ...  free ...  |
 *
 * A cell slab's cells are cut in order from `top`, each at its class
 * size's natural alignment (the largest power of two dividing it, as a
 * class's blocks in a page); once `top` leaves no room, a freed cell is
 * taken again by a request it fits (its class's size at least the
 * request's, its place aligned for it), keeping its class and place
 * (slab.c); a full slab is replaced, and goes back to the large pool when
 * its last reference goes.
 * Invariants: refs = the live cells + 1 while it is its node's and kind's
 * current slab (nd_slab_current); the slab is a large block in use of its
 * pool while refs > 0, starting at the header itself; its cells[0, ncells)
 * lie in [header end, top) in order, apart, each aligned to its class
 * size's natural alignment, top <= the block's bytes; ncells, top and the
 * cells' off and cls change only under the slab's lock, while it is
 * current, before the cell is handed out, and never after; a cell's live
 * goes 1 -> 0 by the free that takes it (compare-and-swap: a second free
 * of it is a double free), and 0 -> 1 only under the lock, which takes it
 * again; slot is its sample's slot in the profile's live table (prof.h),
 * or ND_SLAB_NO_SLOT when it has none, written under the lock before the
 * cell is handed out and read by its free before the compare-and-swap.
 */
#define ND_PROF_SLAB      2u      /* nd_page.sampled of a sample slab's descriptor (1: a sampled block) */
#define ND_SLAB_CELL_MAX  1024u   /* the largest class whose samples take cells */
#define ND_SLAB_CELLS     60u     /* cells of a slab at most: the header is 512 bytes */
#define ND_SLAB_HEADER    512u
#define ND_SLAB_NO_SLOT   UINT32_MAX
typedef struct nd_slab_cell {
    uint16_t off;                 /* from the slab's start */
    uint8_t  cls;
    uint8_t  live;                /* atomic */
    uint32_t slot;
} nd_slab_cell;
typedef struct nd_slab {
    uint32_t     refs;            /* atomic */
    uint32_t     top;             /* bytes handed out from the start, header included */
    uint32_t     ncells;          /* atomic: read by any thread's free */
    uint32_t     bytes;           /* the block's bytes the cells may use */
    nd_slab_cell cells[ND_SLAB_CELLS];
} nd_slab;
_Static_assert(sizeof(nd_slab) <= ND_SLAB_HEADER, "a slab's header fits its 512 bytes");
/* A cell for a sampled request of class c (at most ND_SLAB_CELL_MAX),
   *cellp its descriptor (slot ND_SLAB_NO_SLOT): of the slab of tc's node
   and kind of memory (a new one when there is none or it is full). NULL
   when out of memory, or when called again while the thread is in it
   through tc (a signal handler). */
void *nd_sample_slab(struct nd_tcache *tc, unsigned c, nd_slab_cell **cellp) nd_hidden;
/* The current cell slab of node's plain (bound false) or bound memory, or
   NULL (tests). */
nd_slab *nd_slab_current(int node, bool bound) nd_hidden;
/* p's cell (live or freed) when p is a cell's start in the slab of
   descriptor pg (a large block's with sampled == ND_PROF_SLAB); else NULL. */
nd_slab_cell *nd_slab_cell_find(const nd_page *pg, const void *p) nd_hidden;
/* Drops a reference to the slab of descriptor pg in segment s (a cell
   freed); the last one frees the slab. Returns the bytes of the large
   block freed (the caller counts its free), 0 while references remain. */
size_t nd_slab_unref(nd_segment *s, nd_page *pg) nd_hidden;
/* Debug check of the invariants above: a current cell slab (under its
   lock). */
bool nd_slab_is_valid(nd_slab *slab) nd_hidden;

#endif /* ND_SLAB_H */
