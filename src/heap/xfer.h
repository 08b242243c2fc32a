/*
 * xfer.h - the transfer store: per kind of memory (plain memory of node n,
 * memory bound to node n) and size class, a bounded array of free blocks
 * that the thread caches of that kind hand to each other, as pointers.
 *
 * Owns: struct nd_xfer (one per kind, made on first use) and the copies in
 * and out of it. It knows nothing of heaps or thread caches: tcache.c puts
 * the blocks a bin's overflow sends away in it (checked there first: their
 * mark, their page; with transfer=2, the default, the heap's own blocks
 * too, so that the node's heaps share their free blocks before any of them
 * carves: docs/how-it-works.md), takes them back out when a bin of that
 * kind runs dry, and sends what sat unused to the blocks' pages
 * (nd_tcache_xfer_sweep).
 *
 * Why: a block freed by a thread that did not allocate it used to go home
 * to its page linked in a chain (the flush wrote every block's link), and
 * the owner walked that chain back into its cache (a dependent load per
 * block of lines another core wrote): four touches of each block handed
 * over. Through the store it is touched by the free (its mark, and the
 * overflow's check of the mark while the line is still hot), and by the
 * malloc that reuses it; the pointers move as arrays.
 *
 *   nd_xfer (kind k)
 *     cls[c][s]: claim count taken low big | start[29]     (four lines)
 *     slots of shard s of class c: start[] while big == 0, else
 *       p[first + s * slots/4 + off[c] ..]
 *     either: [ b0 b1 ... b(count-1) | unused ... ]
 *               ^ oldest in            ^ next put
 *     puts copy at [count]; takes copy the newest ([count-n .. count)).
 *
 * Shards: each class of a store is split into ND_XFER_SHARDS shards, each
 * its own slots and claim word (a cache line of its own), holding a share
 * of the class's blocks (its cap split evenly). A thread starts at its own
 * shard (tcache.c: from its thread id) and goes on to the next ones where
 * one is claimed, full (a put) or empty (a take), so threads that hand
 * over at once mostly claim different words, and the class still holds
 * as many blocks as one array did: a put fills the shards in turn, a take
 * empties them in turn. One shard serves most puts and takes (one claim).
 *
 * No lock: each shard has a claim word that puts, takes and drains only
 * try to set (a compare-and-swap) and clear when their copy is done. A
 * claimed shard is skipped (the blocks go to the next shard, then their
 * pages, the fill to the next shard, then the heap, a sweep comes back
 * later), so a thread preempted inside its copy of a few hundred pointers
 * never makes another wait or spin.
 * Fork: the child clears every claim (nd_xfer_fork_child). A claim held at
 * the fork belonged to a thread the child does not have; its copy is not
 * counted until `count` is stored, one word, so the shard is as it was
 * before that copy or after it, and the blocks it was moving are lost with
 * that thread's cache, as the rest of its cache is.
 */
#ifndef ND_XFER_H
#define ND_XFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "class.h"
#include "config.h"

/* Blocks one class of one kind holds at most, and the bytes: the smaller
   bound applies. Since the store also takes a heap's own overflows
   (transfer=2), it is where the node's heaps find each other's free
   blocks before they carve, so it holds a few overflows of every heap
   that shares a class: 2 MiB is 128 blocks of 16 KiB and 2,048 of 1 KiB
   (the slots' bound), where 512 KiB held 32 and 512 and 128 KiB 8
   (rptest -t 8, sizes 8 B-16 KiB: peak RSS 64.1 MiB with 128 KiB, 50.0
   with 512, main 74.5; bench/ab.py 3; then 55-56 MiB with 512 KiB, 47.2
   with 1 MiB, 37.9 with 2, 34.0 with 4, CPU x0.93 at 2 MiB, and rptest -t
   2 15.3 -> 12.8; bench/ab.py 7, docs/results.md h50q). The classes up to
   256 B keep the slots' bound (2,048 blocks): more slots (64 K) let
   batchq's producers outrun its queue, x1.2-1.4 its CPU in sleeps. Every
   small class full at once would be about 44 MiB per kind (15 with
   512 KiB; the medium ones 46 MiB), but a class no cache took from for a
   purge delay is sent back to its pages, and so are the blocks any class
   held all through one (its low-water mark: nd_tcache_xfer_sweep), and
   only overflows fill it. The
   slots take about 440 KiB of metadata per kind (the shards' headers,
   48 KiB with their start rooms, a page of offsets, and the big slots,
   each shard's rounded up to whole cache lines; a kind's store is made on
   the first overflow of a cache of it that puts blocks in it), resident
   as classes use them.
   A medium class (above ND_SMALL_MAX; thread-cached up to tcache_max,
   128 KiB by default) holds ND_XFER_MEDIUM_BLOCKS blocks instead, 1.25
   MiB of 20 KiB to 8 MiB of 128 KiB: 512 KiB was 10 blocks of 48 KiB, a
   tenth of the batch one producer hands over, so most of a consumer's
   overflows went home to the producer's pages, where only that producer
   could reuse them, and every producer carved to its own peak (batchq -w
   8 -s 49152 with tcache_max=128k: peak RSS 62.5 MiB with 512 KiB, 54.2
   with 2 MiB, 50.6 with 8 MiB; bench/ab.py 7). Counted in blocks, as the
   hand-offs are, not in bytes: 8 MiB of 20 KiB blocks (409) held more than
   the consumers' overflows needed and raised batchq -w 2 -s 20000's peak
   RSS by 14 % (33.8 to 38.5 MiB).
   8,192 blocks per medium class (tried, not kept: docs/results.md,
   "Medium blocks handed off in bursts") took the blocks carved beyond the
   most in flight from 3,500-11,600 to 110-2,300, but the faster hand-off
   let batchq's producers fill its queue: on a quiet machine peak RSS 42.5
   -> 63.7 MiB and CPU x1.17 at -w 8, 19.7 -> 58.3 MiB at -w 2.
   Past its 64, a medium class takes only the blocks that would otherwise
   wait for an owner that is not coming back for them (another heap's page
   whose remote list already holds blocks, while more heaps wait with
   notified pages than there are CPUs) into its deep room, up to
   ND_XFER_MEDIUM_DEEP blocks (tcache.c, nd_tcache_spill_deep; batchq -w 8
   -s 49152: docs/results.md, h53b): 12,288 slots per kind for the medium
   classes, resident as far as used.
   */
#define ND_XFER_SLOTS 2048u
/* Kinds that may have a store: 2 .. 2 + ND_XFER_KINDS (nd_kind_of). */
#define ND_XFER_KINDS (2 * ND_MAX_NODES)
#define ND_XFER_BYTES (2048 * ND_KiB)
#define ND_XFER_MEDIUM_BLOCKS 64u
/* A medium class's deep room: the blocks it holds at most, counting those
   only nd_xfer_put_deep puts (tcache.c: blocks whose page's owner has not
   taken back the remote frees already waiting on that page, which would
   otherwise wait there for it alone; docs/how-it-works.md). */
#define ND_XFER_MEDIUM_DEEP 1024u

/* Shards per class (a power of two), and the slots of a cache line. */
#define ND_XFER_SHARDS 4u
#define ND_XFER_LINE_SLOTS (ND_CACHE_LINE / sizeof(void *))
/* The slots each shard has in its own header, its start room: a shard
   holds its first blocks there and moves them to its big slots (in p[])
   the first time a put would take it past them. 29 fills the shard's
   header to 256 bytes, four lines: a class's four shards are 1 KiB, four
   classes a 4 KiB page. */
#define ND_XFER_START_SLOTS 29u

/* Blocks class c holds at most: min(ND_XFER_SLOTS, ND_XFER_BYTES / its
   size), ND_XFER_MEDIUM_BLOCKS for a medium class (above ND_SMALL_MAX). */
static inline uint32_t nd_xfer_cap_of(unsigned c)
{
    if (!nd_class_is_small(c))
        return ND_XFER_MEDIUM_BLOCKS;
    size_t cap = ND_XFER_BYTES / nd_class_size[c];
    return (uint32_t)(cap < ND_XFER_SLOTS ? cap : ND_XFER_SLOTS);
}
/* Blocks class c holds at most with its deep room (nd_xfer_put_deep):
   ND_XFER_MEDIUM_DEEP for a medium class, else its cap. */
static inline uint32_t nd_xfer_deep_cap_of(unsigned c)
{
    return nd_class_is_small(c) ? nd_xfer_cap_of(c) : ND_XFER_MEDIUM_DEEP;
}
/* Shard s's share of them: the cap split evenly, one more for the first
   cap % ND_XFER_SHARDS shards. */
static inline uint32_t nd_xfer_shard_cap(unsigned c, unsigned s)
{
    uint32_t cap = nd_xfer_cap_of(c);
    return cap / ND_XFER_SHARDS + (s < cap % ND_XFER_SHARDS);
}
/* The same with the deep room. */
static inline uint32_t nd_xfer_shard_deep_cap(unsigned c, unsigned s)
{
    uint32_t cap = nd_xfer_deep_cap_of(c);
    return cap / ND_XFER_SHARDS + (s < cap % ND_XFER_SHARDS);
}
/* The big slots each shard of class c has in p[]: its deep cap rounded up
   to whole cache lines of slots, 0 when its start room holds it. */
static inline uint32_t nd_xfer_shard_stride(unsigned c)
{
    uint32_t cap = nd_xfer_shard_deep_cap(c, 0);
    if (cap <= ND_XFER_START_SLOTS)
        return 0;
    return (cap + (uint32_t)ND_XFER_LINE_SLOTS - 1) & ~((uint32_t)ND_XFER_LINE_SLOTS - 1);
}

/*
 * One shard of one class's store of one kind: its header and start room,
 * four cache lines.
 *
 *   cls[c][s]: claim count taken low big | start[0 .. 29)
 *   big == 0: its blocks are start[0 .. count)
 *   big == 1: its blocks are p[first + off[c] + s * slots / 4 ..][0 .. count)
 *
 * Invariants (while not claimed): count <= its deep cap
 * (nd_xfer_shard_deep_cap: its cap, nd_xfer_shard_cap, but for a medium
 * class);
 * big is 0 or 1, and 1 only for a class whose shards have big slots
 * (nd_xfer_shard_stride nonzero); while big is 0, count <= its start
 * room (ND_XFER_START_SLOTS); big never goes back to 0 (the shard keeps
 * its big slots once their pages are resident). Its blocks, the first
 * count of its slots,
 * are free blocks of class c, each a block start of a page in use of
 * class c, in a segment of the store's kind (its bound and node), carrying
 * the freed-block mark (page.h; under secure=1 its canary too, which
 * tcache.c checks as it goes in and comes out: secure.h); each counts among its page's used blocks
 * (the page cannot leave use nor its segment be unmapped while a block of
 * it is here). low <= count. `taken`: a take happened since the last
 * sweep; `low`: the fewest blocks the shard held since then (its
 * low-water mark: that many sat untaken all along). `count` is also read
 * without the lock (relaxed), as a hint only. A shard never used is all
 * zero: the store's headers are not written when it is made, so only the
 * pages of the classes in use become resident.
 */
typedef struct nd_aligned(ND_CACHE_LINE) nd_xfer_class {
    uint32_t claim;   /* 1: a thread is copying in or out of this shard */
    uint32_t count;
    uint32_t taken;
    uint32_t low;     /* low-water count since the last sweep */
    uint32_t big;     /* 1: its blocks are in its big slots in p[] */
    uint32_t unused_;
    void    *start[ND_XFER_START_SLOTS];   /* its start room */
} nd_xfer_class;
_Static_assert(sizeof(nd_xfer_class) == 4 * ND_CACHE_LINE, "a shard's header and start room are four lines");

/*
 * The store of one kind. Invariants: kind >= 2 (nd_kind_of: never
 * ND_KIND_NONE or ND_KIND_NO_PAGE), the kind of every block it holds;
 * the big slots in p[] start at p[first], on an OS page, shard by shard
 * (slots / ND_XFER_SHARDS each, whole OS pages), and within a shard's
 * part class by class, nd_xfer_shard_stride(c) each:
 * off[c] is where class c's are in shard 0's part, slots the total (so
 * the first blocks of one shard of neighbouring classes share pages: a
 * program that hands over a few hundred blocks of several classes, most
 * through one shard, touches fewer pages than with each class's shards
 * together: bench/larson -t 2, 10 pages of slots -> 7-8); swept_ms is when
 * the store was made, then when a sweep last claimed it (relaxed atomics;
 * any thread; it only grows), so the first sweep comes a whole period
 * after the store's first blocks could go in, as every later one a
 * period after the one before. Only kind, slots, first, off and swept_ms
 * are written when the store is made.
 */
typedef struct nd_xfer {
    nd_xfer_class cls[ND_CLASS_COUNT][ND_XFER_SHARDS];
    unsigned      kind;
    uint32_t      slots;      /* the big slots of all shards: ND_XFER_SHARDS parts of whole OS pages */
    uint32_t      first;      /* the big slots start at p[first], on an OS page */
    uint64_t      swept_ms;
    uint32_t      off[ND_CLASS_COUNT];
    nd_aligned(ND_CACHE_LINE) void *p[];   /* the shards' big slots, class by class */
} nd_xfer;

/* The store of `kind` (nd_kind_of), made on first use; NULL when out of
   memory. */
nd_xfer *nd_xfer_get(unsigned kind) nd_hidden;
/* The store of `kind` if one was made, else NULL. */
nd_xfer *nd_xfer_find(unsigned kind) nd_hidden;
/* Blocks class c holds at most: the sum of its shards' caps. */
size_t   nd_xfer_cap(const nd_xfer *x, unsigned c) nd_hidden;
/* The most blocks puts could add to class c now, over all its shards (a
   hint, no lock). */
size_t   nd_xfer_room(const nd_xfer *x, unsigned c) nd_hidden;
/* A caller's check of the k blocks a put is about to copy in (under the
   shard's claim, before any other thread can take them): it returns only
   if they may go in. */
typedef void nd_xfer_check_fn(void *const *blocks, size_t k, const void *arg);
/* Copies up to n of blocks[0 .. n) (from the front) into class c's store,
   starting at shard `shard` (any number: taken modulo ND_XFER_SHARDS) and
   going on to the next shards while blocks are left: a full or claimed
   shard is skipped. When check is set, each shard's share of the blocks
   is passed to check(share, k, arg) first, so only the blocks that go in
   are looked at. Returns how many it took (0 when every shard is full or
   held by another thread: it never waits). */
size_t   nd_xfer_put(nd_xfer *x, unsigned c, unsigned shard, void *const *blocks, size_t n, nd_xfer_check_fn *check,
                     const void *arg) nd_hidden;
/* The same up to the shards' deep caps (nd_xfer_shard_deep_cap: a medium
   class's deep room; for a small class, nd_xfer_put). */
size_t   nd_xfer_put_deep(nd_xfer *x, unsigned c, unsigned shard, void *const *blocks, size_t n,
                          nd_xfer_check_fn *check, const void *arg) nd_hidden;
/* Copies up to max blocks of class c, each shard's newest first, starting
   at shard `shard` and going on to the next ones while fewer than max
   came, into the max slots that END at `end`: the n it returns are
   end[-n .. -1] (a bin's blocks end at its end, tcache.h). 0 when empty or
   busy: it never waits. */
size_t   nd_xfer_take(nd_xfer *x, unsigned c, unsigned shard, void **end, size_t max) nd_hidden;
/* Moves up to max of the blocks of shard `shard` of class c into out: any
   (the newest), or, when idle_only (a sweep), those that sat untaken since
   the last sweep: all of them if no take came (the newest first), else as
   many as the shard never went below (its low-water mark), the oldest
   first; the sweep then starts the shard's next period. Returns how many
   (0 when another thread has it claimed: it never waits). A caller
   empties a shard, or gives back all its untaken blocks, by calling again
   while it gets max, and a class by doing so for each shard. */
size_t   nd_xfer_drain(nd_xfer *x, unsigned c, unsigned shard, void **out, size_t max, bool idle_only) nd_hidden;
/* Is a sweep of x due (period_ms since the last one)? true claims it for
   the caller. */
bool     nd_xfer_sweep_claim(nd_xfer *x, uint64_t now_ms, uint64_t period_ms) nd_hidden;

/* In a child after fork: every claim cleared (see above). */
void     nd_xfer_fork_child(void) nd_hidden;

/* Debug check of the invariants of class c's store: of each shard that
   no other thread has claimed (those are checked at their next use). */
bool     nd_xfer_is_valid(nd_xfer *x, unsigned c) nd_hidden;

#endif /* ND_XFER_H */
