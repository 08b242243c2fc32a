/*
 * slab.h - the heap profile's sample slabs (prof=1, docs/profiling.md):
 * the cells sampled requests take instead of large blocks of their own.
 *
 * Owns: struct nd_slab and struct nd_slab_cell, a thread cache's cell
 * slab (its prof_slab, tcache.h) and the run slabs of each kind of memory.
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
 * ND_SLAB_CELL_MAX bytes gets a cell of its thread cache's slab, a large
 * block of one OS page, rather than a large block of its own (a fresh OS
 * page and a 64 KiB chunk each): the samples of a thread share that page
 * until it is full. A sampled request of a medium class of at most
 * ND_SLAB_RUN_MAX bytes gets a run of OS pages of the run slab of its
 * kind of memory, a large block of one chunk (64 KiB) that every thread
 * cache of that kind shares, whose freed runs the next medium samples
 * take again; when no run fits, a large block of its own. Before, each
 * such sample was a large block of its own, a chunk each, so that a
 * program with a dozen medium samples live at a time kept a dozen chunks'
 * pages resident (reqresp -t 2: about 280 KiB, most of profiling's extra
 * peak RSS). The block's descriptor has sampled == ND_PROF_SLAB (both
 * kinds of slab), so every free of a cell takes the slow path (key
 * ND_KEY_LARGE) and finds its cell in the slab's header
 * (nd_slab_cell_find): a cell slab's first 512 bytes; a run slab's
 * header is metadata (nd_meta_alloc) that the descriptor's prof_slot
 * names (its entry in slab.c's table of run slabs; a cell slab's
 * descriptor has ND_SLAB_NO_SLOT there), so that every OS page of the
 * chunk takes runs. With the header in the chunk's first page, a 32 KiB
 * run (16 KiB-aligned) fit only at 16 or 32 KiB, one at a time, and
 * reqresp -t 2 made three run slabs, their 43-53 pages resident where
 * the samples live at once covered 27-39 (traces of its runs replayed);
 * now 32-40.
 *
 *   slab  +0                    +512
 *   | header: refs, top, cells | cell | cell |  ...  free ...  |
 *
 *   run slab +0            +8 KiB    +12 KiB        +16 KiB         +64 KiB
 *   | run (2 pages)      | free    | run (1 page) | ...               |
 *   header (metadata): refs, runs, used, base -> the chunk, cells
 *
 * A cell slab's cells are cut in order from `top`, each at its class
 * size's natural alignment (the largest power of two dividing it, as a
 * class's blocks in a page), and never reused: a slab goes back to the
 * large pool when its last reference goes. A run slab's cell i describes
 * the run starting at OS page i of its chunk; a run is the
 * first one of free pages at its class size's natural alignment (at most
 * ND_ALIGN_NATURAL), lowest first, so a few live samples keep the same
 * few pages resident; it is taken by compare-and-swap on `used`, so
 * threads cut runs of one slab without a lock. A run slab stays while
 * profiling is on (its header too).
 * Invariants: refs = the live cells + 1 while a cache holds the slab as
 * its prof_slab, or the run slabs' table (slab.c) holds it; the slab is
 * a large block in use of its pool while refs > 0, starting at base (the
 * header itself for a cell slab, whose descriptor's prof_slot is
 * ND_SLAB_NO_SLOT; a run slab's descriptor's prof_slot is the index of
 * its entry in the table of run slabs, which names this header); runs
 * == 0 for a cell slab, else the OS pages of the run slab (top, ncells
 * unused); a cell
 * slab's cells[0, ncells) lie in [header end, top) in order, apart, each
 * aligned to its class size's natural alignment, top <= the block's
 * bytes; ncells, top and the cells' off and cls change only in the owner
 * cache's thread, before the cell is handed out; a run slab's bit i of
 * `used` is set while OS page i is in a live cell's run or being cut, a live cell i's run is its class size's
 * OS pages from page i, aligned as above, a cell whose cls is not
 * ND_CLASS_COUNT starts a run cut since the slab was made that no later
 * run covers but at its start, and a cell's fields change only in the
 * thread that took its run's bits; a cell's live goes 1 -> 0 once per cut,
 * by the free that takes it (compare-and-swap: a second free of it is a
 * double free), and a free clears its run's bits after it has read its
 * cell; slot is its sample's slot in the profile's live table (prof.h),
 * or ND_SLAB_NO_SLOT when it has none.
 */
#define ND_PROF_SLAB      2u      /* nd_page.sampled of a sample slab's descriptor (1: a sampled block) */
#define ND_SLAB_CELL_MAX  1024u   /* the largest class whose samples take cells */
#define ND_SLAB_RUN_MAX   32768u  /* the largest class whose samples take runs of a run slab */
#define ND_SLAB_RUN_SLABS 4u     /* run slabs of a kind of memory at most */
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
    uint32_t     top;             /* cell slab: bytes handed out from the start, header included */
    uint32_t     ncells;          /* cell slab, atomic: read by any thread's free */
    uint32_t     bytes;           /* the block's bytes the cells may use */
    uint32_t     runs;            /* 0: a cell slab; else a run slab of this many OS pages */
    uint32_t     used;            /* run slab, atomic: its OS pages in use, a bit each */
    uint8_t     *base;            /* the large block: the slab itself (cell slab), or the run slab's chunk */
    nd_slab_cell cells[ND_SLAB_CELLS];   /* run slab: cell i, the run from OS page i */
} nd_slab;
_Static_assert(sizeof(nd_slab) <= ND_SLAB_HEADER, "a slab's header fits its 512 bytes");
/* Does a sampled request of class c take a cell of a slab (either kind)? */
bool nd_sample_slab_fits(unsigned c) nd_hidden;
/* A cell for a sampled request of class c (nd_sample_slab_fits), *cellp
   its descriptor (slot ND_SLAB_NO_SLOT): of tc's cell slab (a new one of
   tc's kind of memory when it has none or it is full, or of another node:
   follow_thread moved the heap), or a run of the run slab of tc's kind of
   memory (made at its first run). NULL when out of memory, when called
   again while the thread is in it (a signal handler), or when no run of
   the run slab fits (a large block of its own then: route.c). */
void *nd_sample_slab(struct nd_tcache *tc, unsigned c, nd_slab_cell **cellp) nd_hidden;
/* p's cell (live or freed) when p is a cell's start in the slab of
   descriptor pg (a large block's with sampled == ND_PROF_SLAB); else NULL. */
nd_slab_cell *nd_slab_cell_find(const nd_page *pg, const void *p) nd_hidden;
/* Cell `cell` of the slab of descriptor pg in segment s, just taken from
   live (its free): its run given back (a run slab), then its reference
   dropped (nd_slab_unref). */
size_t nd_slab_cell_free(nd_segment *s, nd_page *pg, nd_slab_cell *cell) nd_hidden;
/* Drops a reference to the slab of descriptor pg in segment s (a cell
   freed); the last one frees the slab. Returns the bytes of the large
   block freed (the caller counts its free), 0 while references remain. */
size_t nd_slab_unref(nd_segment *s, nd_page *pg) nd_hidden;
/* tc lets its slabs go (its record is taken apart, or the cache freed):
   the cache's references dropped, a free counted in tc's statistics. */
void nd_tcache_slab_drop(struct nd_tcache *tc) nd_hidden;

/* Debug checks of the invariants above: a cache's cell slab (its owner's
   thread), and the run slabs of tc's kind of memory (any thread). */
bool nd_slab_is_valid(nd_slab *slab) nd_hidden;
bool nd_slab_runs_are_valid(const struct nd_tcache *tc) nd_hidden;

#endif /* ND_SLAB_H */
