/*
 * large.h - large blocks: above the largest size class (128 KiB) and up to
 * ND_LARGE_MAX (1 MiB, 16 chunks: so a block of exactly 1 MiB, a common
 * buffer size, takes the pool's chunks, which any large block takes again
 * once it is freed, not a mapping of its own that only a block of about
 * 1 MiB reuses: config.h), many to a segment. A LARGE segment is cut into 64
 * chunks of 64 KiB; chunk 0 holds the header, and a large block takes a run
 * of whole chunks (it touches only the OS pages of its size). The
 * segments of each kind of memory (plain memory of a node, memory bound to
 * a node) form a pool shared by every thread, in ND_LARGE_SHARDS shards
 * (config.h), each with its own segments and lock: a thread's request goes
 * to the shard of its CPU (the rseq area's CPU modulo ND_LARGE_SHARDS), and
 * a free to the shard of the block's segment (its `shard`). A free takes
 * the lock only of its own CPU's shard, and only when it is free and
 * needed: a block of another CPU's shard, one freed while its shard's lock
 * is held, or one of its own shard's whose stack is empty and whose
 * segment holds other blocks, goes on that shard's stack of deferred frees
 * (in use, flagged in_full, lock-free), which the lock's holder gives back
 * as it lets go (nd_large_unlock) and every later taker as it takes it (the
 * shard's next request on its CPU, a borrower, maintenance,
 * nodal_collect). So a thread that allocates and frees large blocks takes
 * one lock for a malloc and a free (main b76e3b4 two; h53l's shards a
 * trylock at every free: +72 instructions a step of 1,050 in micro -m
 * large -t 1; branch h57l), and a segment its last block leaves is given
 * back at once, not left on a stack (large.c: nd_large_give_back). The threads
 * of two CPUs that allocate and free large blocks take two locks, and
 * neither waits for the other's (micro -m large -t 2 with both threads
 * running: 2.0 us a step with one pool, its lock waited for 120,000 times
 * in 438,000 blocks; branch h53l). A shard's lock, found held, is tried
 * again a few times before its taker waits (nd_lock_brief). The shards
 * touch no more memory than one pool: a shard with no resident run that
 * fits takes a segment its node's cache kept with its memory, one whose
 * resident chunks hold such a run (nd_node_seg_get_resident), then one of
 * another shard's (nd_large_borrow, large.c), before it faults in chunks
 * (the cached segment first: its memory waits for nobody, while another
 * shard's freed run is its own CPU's next block, and borrowed it put
 * both shards' blocks in one segment under one lock: two threads taking
 * batches of 256 KiB blocks borrowed 8,300 times in 440,000 blocks, 476
 * ns a pair, 315 with the cached segments first; docs/results.md, stop
 * 67). A borrow passes a shard that its last look found without a run
 * that fits, its lock not taken, until the shard gives chunks back (the
 * lending hints, large.c), and a shard's own search for a resident run
 * that found none walks only the segments it gained since, until chunks
 * are given back (res_tail, large.c). A shard with no free run that
 * fits takes any of another shard's before it maps a segment past its
 * first (and looks
 * again once it brought one: a run a block freed meanwhile left, or one in
 * a segment another shard brought meanwhile, serves the request, and the
 * new segment goes back to its node unused, nd_large_recheck); a miss drains
 * the caches of its own shard's CPUs (not every shard's); and each shard
 * keeps ND_LARGE_SPARE empty segments, giving back its least resident
 * empty segment past them (nd_large_emptied, large.c) without another
 * shard's lock, so two threads that free batches of large blocks on two
 * CPUs do not take each other's locks at every segment they empty (micro
 * -m batch -s 256k -t 2: 332 -> 236 ns a pair; docs/results.md, stop 68).
 * A block takes the first free run that fits (lowest chunk first) in the
 * oldest segment of the pool that has one (a pool of more than 16
 * segments starts each walk for a run of k chunks at the first segment
 * that may have one: large.c, the fit hints; it walked all of them at
 * every request, 4 MiB apart): a new segment goes to the end
 * of the pool's list, so the holes frees leave in older, fuller segments
 * are filled before the newest is cut into, and the newest, emptiest one
 * can go back empty. (New segments first, as before, spread the blocks of
 * a churn of random sizes over every segment: bench/shortlived -t 8 held
 * 9-10 large segments, all resident, for 21-23 MiB of blocks.) A run all
 * of whose chunks are committed (resident: not purged since a block
 * last had them) comes first, in whichever segment: a freed block's
 * memory serves the next block before chunks whose memory the purge gave
 * back, or that no block ever had, are faulted in. A pool keeps
 * ND_LARGE_SPARE empty segments; past them it gives back the empty one
 * that holds the fewest committed chunks (a spare purged meanwhile, a
 * segment two racing threads each brought), not the one its last block
 * just left with its memory resident.
 *
 *   seg  +0        +64 KiB          +320 KiB        +512 KiB     +4 MiB
 *   | header     | block A (4 chunks)  | free ...   | block B | ... |
 *
 * Descriptor of a large block: pages[i] of its first chunk i: in_use = 1,
 * start = the block (the chunk's start), block_size = its usable bytes (a
 * multiple of the OS page), reserved = its chunks, cls = ND_CLASS_COUNT,
 * key = ND_KEY_LARGE (every free takes the slow path). The descriptors of
 * its other chunks are not in use, so a pointer into the middle of a block
 * is told apart from its start.
 *
 * secure=1: a large block is followed by a guard page (inaccessible):
 * the last OS page of its run (the segment's own guard page when the run
 * ends there); block_size, its usable bytes, is the rest of the run, so
 * guard pages sit at chunk ends (but tight blocks', below) and one a freed
 * block left serves the next block of as many chunks there without a
 * system call (large.c). An overflow past the block stops at the faulting
 * write.
 *
 *   | block A (k chunks less an OS page) | guard | block B ...
 *
 * Tight blocks: once the address space is known to be limited (an
 * RLIMIT_AS seen at start or before a fresh mapping, or a mapping
 * refused: nd_os_space_limit_seen), a new secure=1 block's usable bytes
 * are its request rounded up to the OS page, as in default mode, and its guard
 * page follows them inside its last chunk; the rest of the run belongs to
 * the block but is never used, and is given back with the tails (below).
 * A block made before keeps its whole run (its usable size was told), so
 * its end is never given back. A tight block resizes in place only within
 * its usable bytes; its freed guard stays where it was until a block
 * taking the run moves it (nd_large_guard).
 *
 *   | block A (its pages) | guard | unused (a tail once given back) | ...
 *
 * Out of address space (a mapping failed with ENOMEM: an RLIMIT_AS),
 * the free chunks of every pool give their address space back
 * (nd_large_release): each segment that holds a block unmaps its free
 * chunks, which become holes (segment.h: unmapped), and empty segments
 * are unmapped whole. The pool then tries again, as do a heap that found
 * no segment for a small or medium page (heap.c) and a huge block that
 * did not map (huge.c); a plain large block that finds no room gets a
 * mapping of its own (route.c). A hole is mapped again, where it was,
 * when a block needs its chunks and no free run fits (before a new
 * segment is asked for); one that will not map (no room, or another
 * mapping there now) stays a hole until its segment is unmapped. So
 * neither the chunks no block of the sizes asked for fills (a segment of
 * 512 KiB blocks: 7 of its 64) nor the runs of freed blocks cost address
 * space once it runs out, and a thread with no page of its own gets one
 * whenever a freed large block left room for it. The same release gives
 * back the OS pages inside chunks that nothing uses (tails, segment.h):
 * chunk 0's past the 16 KiB header, and each live block's last chunk's
 * past the block (past its guard page under secure=1; blocks of plain
 * segments only): a block of 200,000 B takes 4 chunks, 256 KiB, and
 * keeps 196 KiB mapped. Its tail is mapped again (in place, never over
 * another mapping) before the block grows into it by realloc; when the
 * block is freed, or shrinks by a chunk, that chunk's mapped start is
 * unmapped too and the chunk becomes a hole (mapped again before reuse,
 * above). Nothing of this runs until a mapping is refused. A plain pool
 * that found no room even after a release fails its next blocks at once
 * (no mapping tried, no walk) until nodal gives address space back
 * (nd_os_space_returns), their requests going to mappings of their own
 * (route.c): once the limit was reached, each large block walked every
 * segment and tried every mapping size again (100,000 B blocks taking
 * large blocks under 700 MiB: 1.55 s, now 0.32 s).
 *
 * Invariants (under the shard's lock; "pool" below is one shard): a
 * shard's segments are kind LARGE, of the pool's node and kind, and their
 * `shard` is the shard's index; free_mask bit i set <=> chunk i belongs to no
 * block (bit 0, the header, never; nor a hole, an unmapped chunk, which
 * belongs to no block either); used_pages = blocks in the segment;
 * secure=1: each block's block_size bytes and its guard page after them
 * (inaccessible) end in its run's last chunk: the run's last OS page, or
 * (a tight block) an OS page inside that chunk, but while a block of a
 * node-bound segment is being populated (its run not all committed:
 * nd_large_commit releases the lock meanwhile; its guard is set after,
 * and a grown block's size); at
 * most ND_LARGE_SPARE segments of a shard have no block (under secure=1
 * ND_LARGE_SPARE_GUARDED);
 * purge_mask holds
 * committed chunks of no block, purged once purge_at has passed. A kept
 * block (below) is a block in use of one OS page, or a grown block of
 * its whole run (secure=1: less its guard page, still protected) of up to
 * ND_LARGE_KEEP_GROWN chunks (secure=1), or (secure=0) a block of its
 * whole run of up to ND_LARGE_CPU_CHUNKS chunks, whose descriptor has in_full = 1; it is in
 * one slot of a shard of its pool (keep, or a CPU's cache: the shard of the
 * CPU that freed it, whichever holds its segment); a deferred free (any
 * shape) has in_full = 1 too and is on its own shard's stack of deferred
 * frees (linked through xnext); every other block has in_full = 0. A segment's tails (segment.h) are chunk 0's, from 16 KiB
 * on at least, and those of blocks' last chunks of plain segments, past
 * the block and its guard page.
 */
#ifndef ND_LARGE_H
#define ND_LARGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "segment.h"

#define ND_LARGE_SPARE 1   /* empty segments each shard of a pool keeps */
/* The shards of a pool: ND_LARGE_SHARDS pools of their own (segments,
   lock, kept blocks, CPUs' caches) for one (node, kind), a thread's
   request going to the shard of its CPU (the rseq area's CPU modulo
   ND_LARGE_SHARDS), and a free to the shard of its block's segment (the
   segment's `shard`). See large.c: nd_large_borrow for how a shard that
   would fault in memory takes another shard's resident run first.
   ND_LARGE_SHARDS itself is in config.h (the lock table counts them). */
/* Kept blocks: a freed block of one OS page (plain segments, secure=0),
   as the heap profile makes of each sampled small request (prof.h), stays
   as it is in one of a pool's ND_LARGE_KEEP slots, in use for the pool and
   flagged in its descriptor (in_full = 1, which no large block has
   otherwise), and the next request of one OS page takes it: neither takes
   the pool's lock, searches a segment or touches a fresh page (Larson at 2
   threads, one sample per 16 KiB: the lock and the search were 8 % of the
   time). A pool gives its kept blocks back when none was taken during a
   purge delay, and all of them when forced. */
#define ND_LARGE_KEEP 8
/* The CPUs' caches of freed blocks: a freed large block of its whole
   run (one realloc grew, nd_large_alloc_grown; or asked for in whole
   chunks) of up to ND_LARGE_CPU_CHUNKS chunks stays as it is, in use for
   its pool and flagged in its descriptor (in_full = 1),
   in a slot of its pool's cache for the CPU that freed it (the rseq
   area's CPU modulo ND_LARGE_CPUS: one cache line of ND_LARGE_CPU_SLOTS
   slots, compare-and-swap, no lock), while the cache holds at most
   ND_LARGE_CPU_CHUNKS chunks. The next large block asked for on that CPU
   takes the cached one of the fewest chunks from its own k to k + k/4
   (its usable bytes become the request's: at most a quarter more memory
   than it needs, as the size classes), or for a block realloc grows
   (nd_large_alloc_grown, its whole run usable) of up to
   ND_LARGE_KEEP_GROWN chunks any of 1 or 2 chunks (one of 1 grows in
   place when it can, and goes back otherwise). So threads that allocate
   and free large blocks, or grow blocks by realloc past ND_SMALL_MAX
   (a vector, a string), take neither the pool's lock nor its lines, and
   each CPU reuses the block whose lines are in its own cache: the pool's
   8 shared slots of kept grown blocks they replace passed blocks between
   the CPUs (micro -m realloc at 2 threads: x1.44 of glibc, its lock
   waited for once in 129,414 large blocks: the lines moved; branch
   h52r). Blocks of a part of their run (random sizes) are not cached:
   few find a cached block within a quarter of their chunks, and the
   cache cost them more than the pool's lock (micro -m large -t 2: x1.06
   of main's time a step). A cache no block was taken from during a purge
   delay gives its blocks back to their segments (nd_large_maintain), all
   of them when forced (nodal_collect, the exit's report, a release), and
   every cache gives its blocks back before the pool faults in chunks for
   a block that no resident run fits (or maps a segment), so cached
   blocks never make the pool touch more memory; a cache belongs
   to a CPU, not a thread: a thread's exit leaves it to the threads that
   run there next, and the delay's check. Under secure=1 only grown
   blocks of ND_LARGE_KEEP_GROWN chunks are cached, for grown requests
   (their guard page stays protected; a kept block of one chunk there
   served growths past 60 KiB that mostly copied); once the address
   space is known to be limited none (tails and holes need the blocks
   back: nd_large_release drains the caches). A realloc or a free of a
   cached block is a misuse (in_full: free.c). */
#define ND_LARGE_KEEP_GROWN 2
#define ND_LARGE_CPUS       16   /* caches a pool has; CPU c uses cache c % ND_LARGE_CPUS */
/* ... ND_LARGE_SHARD_CPUS in each of its shards: CPU c's is cache
   c / ND_LARGE_SHARDS % ND_LARGE_SHARD_CPUS of shard c % ND_LARGE_SHARDS
   (its own shard's, where its requests look) */
#define ND_LARGE_SHARD_CPUS (ND_LARGE_CPUS / ND_LARGE_SHARDS)
#define ND_LARGE_CPU_SLOTS  6    /* blocks a CPU's cache holds, at most */
#define ND_LARGE_CPU_CHUNKS 16   /* ... and chunks (1 MiB) */
/* ... under secure=1: a segment given back loses its guard pages (one
   mprotect) and one taken again gains them block by block (two per
   block), so a shard keeps more of them: 1 MiB-aligned blocks of 512 KiB-
   1 MiB, three to a segment, emptied one in 50 calls with one kept. */
#define ND_LARGE_SPARE_GUARDED 4

/* A large block of `size` bytes, aligned to `alignment` (0 or a power of
   two up to 2 MiB), of (node, bound) memory. *bytes = its usable size.
   NULL with errno = ENOMEM. */
void  *nd_large_alloc(int node, bool bound, size_t size, size_t alignment, size_t *bytes) nd_hidden;
/* A large block for a realloc that grows a block to `size` bytes
   (alignment 0): its whole run of chunks usable, and room after it to
   grow in place where a segment has some (large.c: nd_large_room); as
   nd_large_alloc under secure=1 or an address-space limit. */
void  *nd_large_alloc_grown(int node, bool bound, size_t size, size_t *bytes) nd_hidden;
/* Frees the large block p (any thread); its chunks are purged after the
   delay. Returns the block's bytes, or 0 if p is not the start of a large
   block in use (the caller reports the misuse). */
size_t nd_large_free(nd_segment *s, nd_page *pg, void *p) nd_hidden;
/* Resizes a large block in place (the chunks after it when it grows);
   false if they are taken. *delta = the change in its bytes. */
bool   nd_large_resize(nd_segment *s, nd_page *pg, size_t size, long *delta) nd_hidden;
/* Moves block p (descriptor pg of s) to `to`, the start of a huge block
   at least as large (realloc past ND_LARGE_MAX): the kernel moves its
   pages there (segment.h: nd_seg_move_run), no byte is copied, and its
   chunks are mapped again where they were (holes if another mapping took
   their place meanwhile). Only a plain block of its whole run (a grown
   block, nd_large_alloc_grown) without holes or tails; false otherwise,
   or if the kernel would not move them (the caller copies). True: p is
   freed (not counted: the caller counts it). */
bool   nd_large_move(nd_segment *s, nd_page *pg, void *p, void *to) nd_hidden;
/* Block p (descriptor pg of s), which realloc grows past ND_LARGE_MAX,
   leaves its pool with its segment when it is the segment's only block
   (no other in use, kept or cached), plain, not sampled (prof=1), under
   no guard pages (secure=1) and with no hole or tail: the segment is
   taken off its pool's list for the caller to make a huge mapping of
   (huge.c: nd_huge_from_large), the block counted gone from the large
   blocks (active bytes; the caller counts its free). false with nothing
   changed otherwise (the caller moves or copies it). */
bool   nd_large_leave(nd_segment *s, nd_page *pg, void *p) nd_hidden;
/* Out of address space: every pool's free chunks are unmapped (holes),
   the unused ends of its segments' headers and blocks (tails), and its
   empty segments unmapped whole. The bytes given back. Takes the pools'
   locks (none may be held). */
size_t nd_large_release(void) nd_hidden;
/* After a mapping failed: when the kernel refused one since
   nd_os_map_refusals() was `refused` (out of address space, not a full
   node), nd_large_release; true if it gave any back (worth one more try). */
bool   nd_large_release_after(uint64_t refused) nd_hidden;
/* Bytes of the blocks in the CPUs' caches (whole chunks), read without
   the caches' atomics' order (a report's). */
size_t nd_large_cached_bytes(void) nd_hidden;
/* What the large pools and their CPUs' caches hold back of the active
   gauge (large.c: gauge_active; a report adds it). */
long   nd_large_gauge_pending(void) nd_hidden;
/* Purges freed chunks whose delay has passed (all of them when force). */
void   nd_large_maintain(uint64_t now, bool force) nd_hidden;
/* Will a block of `size` bytes aligned to `alignment` be a large block? */
static inline bool nd_large_fits(size_t size, size_t alignment)
{
    return size <= ND_LARGE_MAX && alignment <= ND_SEG_SIZE / 2;
}

/* Does a large block of `reserved` chunks stay as it is when realloc
   shrinks it to size (> ND_SMALL_MAX, at most its usable bytes), without
   the pool's lock? When it would give back no chunk; and a block of up to
   ND_LARGE_KEEP_GROWN chunks always (a kept grown block of 2 chunks a
   request of 1 took, then grows: shrunk, it took the lock twice). */
static inline bool nd_large_stays(size_t size, unsigned reserved)
{
    return reserved <= ND_LARGE_KEEP_GROWN || (size + nd_seg_guard + ND_CHUNK_SIZE - 1) >> ND_CHUNK_SHIFT == reserved;
}

/* secure=1's choice of a run in one segment (large.c: guard pages): free
   = its free chunks, guarded = the chunks whose last OS page is a guard
   (guard_ends), for a block of at least k chunks (1 <= k <= 63) at a
   multiple of step (a power of two below 64). The mprotect calls the
   block needs: 0 when its run's last page is a guard and no other is
   (a run of k, or, for step 1, of up to 2k chunks, k..2k, up to the
   first guard from its start: *len, the chunks the block takes); 1 when
   it needs one (its run's other guards opened, or its last page closed);
   2 for both; 3 when no run of k fits (*at, *len untouched). *at = the
   lowest start of that cost, *len = k but for cost 0. */
unsigned nd_large_pick(uint64_t free, uint64_t guarded, unsigned k, unsigned step, unsigned *at,
                       unsigned *len) nd_hidden;

/* The lock of the shard that holds large block p (tests: a free while it
   is held must not wait: every free is deferred, nd_large_defer). */
struct nd_lock_t;
struct nd_lock_t *nd_large_lock_of(const void *p) nd_hidden;
/* Debug check of every pool's invariants; takes the locks. */
bool   nd_large_is_valid(void) nd_hidden;
/* Debug builds (ND_DEBUG >= 2; tests): called while a node-bound run is
   populated with its pool's lock released (nd_large_commit), so that a
   test can look at the pools meanwhile. Release builds do not define it. */
extern void (*nd_large_commit_hook)(void) nd_hidden;
/* Debug builds (ND_DEBUG >= 2; tests): called when a pool has brought
   segment `fresh` for a block, before it takes its shard's lock again
   (large.c: nd_large_recheck), so that a test can free or allocate
   meanwhile. Release builds do not define it. */
extern void (*nd_large_grow_hook)(nd_segment *fresh) nd_hidden;

#endif /* ND_LARGE_H */
