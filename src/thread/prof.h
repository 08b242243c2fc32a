/*
 * prof.h - the heap profile's samples (prof=1; docs/profiling.md): which
 * requests are sampled, their call stacks, and the table of the sampled
 * blocks still live. The reports (files, signal, periodic dumps) are
 * api/profile.c's.
 *
 * Owns: the table of call stacks (sites) and the table of live samples,
 * the per-thread countdown of large and huge requests, the recursion
 * guard of the unwinder.
 *
 * Which requests: on average one per prof_rate bytes, as a Poisson process
 * over the bytes allocated: a request of u usable bytes is sampled with
 * probability 1 - exp(-u / rate) and then stands for 1 / that many
 * requests of its size. Small and medium requests are counted by their
 * thread cache bins' ticks (tcache.h: the fast paths do not change);
 * large and huge ones, which always take a slow path, here.
 *
 * A sampled block is a cell of a sample slab (a request of a class up to
 * 1 KiB: a cell of its thread cache's cell slab, slab.h; the slab's
 * descriptor has sampled == ND_PROF_SLAB and the cell names its slot), an
 * ordinary block of its class (a request of a class above 1 KiB, or of a
 * class above that a medium request borrows, tcache.c: its page
 * counts its live samples and carries the kind ND_KIND_PROF meanwhile,
 * its prof_mask has the block's bit; page.h, nd_page_sample_add) or a
 * large or huge block, flagged in its descriptor (nd_page.sampled == 1).
 * Every free of any of them takes the slow path, which drops the sample:
 * a cell's and a large or huge block's by the slot they name, a class
 * block's by its address (nd_prof_drop_block). Frees of blocks in no such
 * page never look at the profile.
 *
 * Both tables are lock-free (a signal handler may allocate and free while
 * its thread is inside the profiler) and fixed in size, mapped at start:
 *
 *   sites: handed out in order (a program's few stacks share the
 *          table's first OS pages); found through an index by the
 *          stack's hash, open addressing in a table of half an OS page
 *          (in nodal's data, prof.c), then in a larger one, whose
 *          entries go 0 (empty) -> 1 (being
 *          written) -> the site and stay. A site's state goes 0 -> 2
 *          (ready) before its index entry names it; its counters are
 *          atomic.
 *   live:  open addressing by the block's address, in the first of six
 *          tables of growing size (x4) that has room on the block's probe path
 *          within 8 slots (256 in the last table: a crowded table is
 *          passed, not walked); key 0 (empty), 1 (a tombstone), 2 (being
 *          written) or the
 *          block's address. A writer
 *          makes seq odd while it writes the fields; a reader copies a
 *          slot and keeps the copy only if seq was even and unchanged.
 *          A large block's descriptor names its slot (nd_page.prof_slot;
 *          a slab cell's own slot field), so dropping its sample reads
 *          that slot only, not the probe path; a class block's sample is
 *          found on its probe path, which ends at an empty slot (a slot
 *          never becomes empty again).
 *
 * The estimated live bytes and the count of samples are sums of per-thread
 * stripes (prof.c), not one counter every thread's record and free write.
 *
 * Invariants: a live slot's key is the address of a sampled large or huge
 * block in use whose descriptor's `sampled` is 1 and whose prof_slot is
 * that slot, of a live cell of a sample slab whose slot is that slot, or
 * of a block in use of a small or medium page whose prof_mask has its bit
 * (page.h), and no other slot has that key; its site is a ready slot of
 * the sites table; live_bytes (the stripes' sum) is the sum of the live
 * slots' estimated bytes.
 */
#ifndef ND_PROF_H
#define ND_PROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "config.h"
#include "segment.h"

#define ND_PROF_FRAMES 32        /* frames kept of a stack */
#define ND_PROF_SITES  16384     /* distinct stacks */
/* Live samples: six hash tables of 64, 256, 1024, 4096, 16384 and 65536
   slots (of 64 bytes: the first table one OS page), filled smallest first,
   each four times the one before, so that the OS pages a program's live
   samples write grow with their number: a few live samples touch the
   first page, 200 the first five (with a second table of 2,048 slots, 32
   pages, which a hundred samples spread over by hash: xthread's 1 KiB
   rows, 132-140 KiB of table for about 500 samples, h52p). */
#define ND_PROF_LIVE_LEVELS 6
#define ND_PROF_LIVE   (64 + 256 + 1024 + 4096 + 16384 + 65536)

typedef struct nd_prof_site {
    uint32_t state;              /* 0 empty, 1 being written, 2 ready */
    uint32_t nframes;
    uint64_t hash;
    void    *frames[ND_PROF_FRAMES];   /* innermost first; nodal's own frames left out */
    uint64_t samples;            /* samples taken here (atomic) */
    uint64_t alloc_objs;         /* estimated requests made here since the start (atomic) */
    uint64_t alloc_bytes;        /* estimated bytes requested here since the start (atomic) */
} nd_prof_site;

/* A live sample as the reports see it. */
typedef struct nd_prof_live {
    uintptr_t addr;
    uint32_t  site;              /* index into the sites */
    int16_t   node;              /* the node of its memory when sampled (bound: the node asked for) */
    uint8_t   bound;             /* node-targeted memory */
    uintptr_t tid;               /* the allocating thread's id */
    uint64_t  size;              /* bytes requested */
    uint64_t  objs;              /* estimated requests it stands for */
    uint64_t  bytes;             /* estimated bytes it stands for */
} nd_prof_live;

typedef struct nd_prof_slot {
    uintptr_t    key;
    uint32_t     seq;
    nd_prof_live v;
} nd_prof_slot;

/* Starts sampling, every rate bytes on average (once; after start-up, from
   the library's constructor): maps the tables and loads the unwinder.
   False when that failed (profiling stays off). */
bool nd_prof_start(int64_t rate) nd_hidden;
/* Is profiling on? */
bool nd_prof_is_on(void) nd_hidden;
/* A large or huge request of `bytes`: is it sampled? */
bool nd_prof_big_due(size_t bytes) nd_hidden;
/* Records sampled block p (a large or huge block, descriptor pg) of `size`
   requested and `usable` bytes, of (node, bound) memory: its stack, and
   its entry in the live table. */
void nd_prof_record(void *p, nd_page *pg, size_t size, size_t usable, int node, bool bound) nd_hidden;
/* The same for a block whose slot is kept elsewhere (a sample slab's cell,
   slab.h): its slot in the live table, ND_PROF_LIVE if not recorded
   (a full table, or the thread inside the profiler already). */
uint32_t nd_prof_put(void *p, size_t size, size_t usable, int node, bool bound) nd_hidden;
/* Sampled block p (descriptor pg) is freed or moves: drops its sample. */
void nd_prof_forget(void *p, nd_page *pg) nd_hidden;
/* Drops the sample of block p recorded in `slot` (nd_prof_put's; nothing
   if ND_PROF_LIVE or above, or the slot holds another block now). */
void nd_prof_drop(void *p, uint32_t slot) nd_hidden;

/* Drops the sample of block p that nd_prof_put recorded, found by its
   address (a block of a small or medium page, whose slot is kept nowhere:
   page.h, nd_page_sample_add). */
void nd_prof_drop_block(void *p) nd_hidden;

/* For the reports: the sites table, a consistent copy of live slot i
   (false when it holds no sample), the estimated live bytes, and the
   samples dropped because a table was full. */
const nd_prof_site *nd_prof_sites(void) nd_hidden;
bool     nd_prof_live_copy(size_t i, nd_prof_live *out) nd_hidden;
/* The first site / live slot >= i that may be in use (on a page of its
   table ever written; the reports read no other), or the table's size. */
size_t   nd_prof_site_next(size_t i) nd_hidden;
/* fork(): in the child, the index entries left half-written by threads
   it does not have are given up (init.c's child handler). */
void     nd_prof_fork_child(void) nd_hidden;
/* Tests (built with ND_DEBUG only: the unit tier's core): every empty
   entry of the first index table as a fork leaves a writer's. */
void     nd_prof_test_writers_cut_off(void) nd_hidden;
size_t   nd_prof_live_next(size_t i) nd_hidden;
int64_t  nd_prof_live_bytes(void) nd_hidden;
uint64_t nd_prof_dropped(void) nd_hidden;
/* Samples taken since the start, and how many of their stacks the unwinder
   walked (the others the memo of stacks recognised: prof.c). */
uint64_t nd_prof_samples(void) nd_hidden;
uint64_t nd_prof_unwinds(void) nd_hidden;
int64_t  nd_prof_rate(void) nd_hidden;
/* The resident (written) bytes of the profile's own tables (the sites, their second
   index, the live samples) and of the unwinder's memory: 0 while
   profiling is off (statistics: prof_table_bytes). */
size_t   nd_prof_table_bytes(void) nd_hidden;

#endif /* ND_PROF_H */
