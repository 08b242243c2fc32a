/*
 * counters.h - the one table of nodal's statistics, and the structs it
 * generates.
 *
 * ND_STATS_TABLE(X) lists every field a report shows. From it come: the
 * per-thread counter structs the allocator increments, the process-wide
 * gauges, the snapshot a report is made from, the merges between them, the
 * text and JSON printers and the summary line (stats.c), and the
 * statistics table of docs/statistics.md (tools/gen-stats; a lint test keeps
 * the document equal to it). A field has one name everywhere.
 *
 *   X(name, kind, scope, source, unit, level, meaning)
 *
 *   kind    COUNTER  only grows (since the process started or the last
 *                    nodal_stats_reset)
 *           GAUGE    goes up and down
 *           PEAK     the highest value a gauge reached
 *   scope   PROCESS  one value
 *           CLASS    one value per size class
 *           NODE     one value per NUMA node with memory
 *           TIER     one value per memory tier (latency, bandwidth,
 *                    capacity: docs/tiers.md) and per CPU node the calls
 *                    ran on, the tier's value being their sum (a DERIVED
 *                    one is computed for each)
 *   source  THREAD   a per-thread counter (nd_thread_counters), written by
 *                    its owner thread only, summed over live and exited
 *                    threads
 *           CLASS    a per-thread, per-class counter (nd_class_counters)
 *           BIN      the same, kept in the bin's cold part (nd_bin_counters
 *                    in nd_bin_info, tcache.h): the counters a thread's
 *                    fills and overflows write, on the cache's first two
 *                    OS pages with the rest of what a thread that uses a
 *                    few small classes writes, so the other counters'
 *                    pages stay untouched (tcache.h: the cache's pages)
 *           GAUGE    a process-wide gauge (nd_gauge), relaxed atomics
 *           (TIER and THREAD: counted per thread and per tier, by the fast
 *           path beside the bins of its caches (nd_tcache.tier_hits) and by the
 *           slow paths in the record (nd_tier_counters); attributed to a
 *           CPU node when the thread's tier caches are resolved again for
 *           another node or it exits, nd_tier_node_counters)
 *           DERIVED  computed when the snapshot is taken (stats.c, and
 *                    nd_tcache_stats_add for what the fast paths imply)
 *   unit    COUNT, BYTES, RATIO (0..1)
 *   level   2 = also on the one-line summary, 1 = in the text report,
 *           0 = JSON only
 *
 * No counter costs an atomic read-modify-write on a fast path: per-thread
 * counters are plain loads and stores by their owner (nd_count_add), read
 * racily as whole words by reports; gauges change on slow paths only.
 */
#ifndef ND_COUNTERS_H
#define ND_COUNTERS_H

#include <stddef.h>
#include <stdint.h>
#include "atomic.h"
#include "config.h"

#define ND_STATS_TABLE(X) \
    /* ---- the process ---------------------------------------------------------------------------- */ \
    X(requests,            COUNTER, PROCESS, DERIVED, COUNT, 2, "allocation calls that returned a block (malloc, calloc, realloc to a new block, aligned and node-targeted calls)") \
    X(frees,               COUNTER, PROCESS, DERIVED, COUNT, 2, "blocks freed (free, realloc from an old block, free_sized, ...)") \
    X(allocated,           GAUGE,   PROCESS, DERIVED, BYTES, 2, "bytes in live blocks: their size classes, and large and huge blocks as mapped") \
    X(active,              GAUGE,   PROCESS, GAUGE,   BYTES, 2, "bytes of pages holding at least one block (or waiting in a thread cache, or kept set up for their class by their heap), and of large and huge blocks; address space, so parts never touched count too and it can exceed rss") \
    X(peak_active,         PEAK,    PROCESS, GAUGE,   BYTES, 1, "the highest active seen (heaps and large pools hold back up to 2 MiB each of their changes: never over the most in use, under it by less than 2 MiB a thread and large shard)") \
    X(mapped,              GAUGE,   PROCESS, DERIVED, BYTES, 2, "address space nodal holds: segments, huge blocks and metadata") \
    X(peak_mapped,         PEAK,    PROCESS, DERIVED, BYTES, 1, "the highest mapped seen") \
    X(segment_bytes,       GAUGE,   PROCESS, GAUGE,   BYTES, 0, "address space of segments and huge blocks (mapped without metadata)") \
    X(peak_segment_bytes,  PEAK,    PROCESS, GAUGE,   BYTES, 0, "the highest segment_bytes seen") \
    X(committed,           GAUGE,   PROCESS, GAUGE,   BYTES, 1, "bytes of mapped memory that may be resident (not returned to the OS)") \
    X(returned,            COUNTER, PROCESS, GAUGE,   BYTES, 1, "bytes given back to the OS so far (purged or unmapped)") \
    X(segments,            GAUGE,   PROCESS, GAUGE,   COUNT, 1, "segments mapped (4 MiB each, or one per huge block)") \
    X(lock_waits,          COUNTER, PROCESS, GAUGE,   COUNT, 1, "times a thread found one of nodal's locks held by another and waited for it (locks are taken on slow paths only: src/README.md's lock table); a few per thousand fills is usual, many say threads queue on one shared structure, often one whose holder waits for a CPU") \
    X(metadata,            GAUGE,   PROCESS, DERIVED, BYTES, 1, "memory for nodal's own bookkeeping (thread caches, heaps and the segment map's leaves)") \
    X(rss,                 GAUGE,   PROCESS, DERIVED, BYTES, 2, "the process's resident set, as the kernel reports it (all of it, not only nodal's)") \
    X(peak_rss,            PEAK,    PROCESS, DERIVED, BYTES, 2, "the process's highest resident set") \
    X(threads,             GAUGE,   PROCESS, DERIVED, COUNT, 2, "threads that have a heap") \
    X(pooled_threads,      GAUGE,   PROCESS, DERIVED, COUNT, 1, "records of exited threads (caches, heaps and their pages) kept for the next thread to start on their node, for ten purge delays at most") \
    X(remote_frees,        COUNTER, PROCESS, DERIVED, COUNT, 2, "small and medium blocks given back to a page another thread owns by the thread that freed them (a block the freeing thread reused first is not counted)") \
    X(notified_pages,      GAUGE,   PROCESS, GAUGE,   COUNT, 0, "pages whose first remote free since they filled told their owner heap and that wait for it to take them back (at its next fill or maintenance)") \
    X(peak_notified_pages, PEAK,    PROCESS, GAUGE,   COUNT, 1, "the highest notified_pages seen: many say that blocks other threads freed wait in the pages of threads that did not allocate meanwhile (descheduled or idle), where only their owner reuses them") \
    X(notified_owners,     GAUGE,   PROCESS, GAUGE,   COUNT, 0, "heaps with notified pages waiting for them (notified_pages counted by owner); more of them than the process has CPUs open the transfer store's deep room for medium blocks") \
    X(pages_past_notified, COUNTER, PROCESS, GAUGE,   COUNT, 1, "fresh pages a heap took while pages of other heaps waited notified (notified_pages above 0): memory taken while freed blocks waited that only their page's owner can reuse") \
    X(own_routes,          COUNTER, PROCESS, GAUGE,   COUNT, 1, "thread-cache bins that took their own route: a bin cycling whole batches of its own heap's blocks, whose fills had taken other heaps' blocks from the transfer store, sends its overflows home and fills from its heap until its cycles end (docs/how-it-works.md)") \
    X(large_allocs,        COUNTER, PROCESS, THREAD,  COUNT, 1, "large blocks allocated (above 128 KiB, up to 1 MiB)") \
    X(large_frees,         COUNTER, PROCESS, THREAD,  COUNT, 1, "large blocks freed") \
    X(large_bytes_allocated, COUNTER, PROCESS, THREAD, BYTES, 0, "bytes of large blocks allocated (whole OS pages)") \
    X(large_bytes_freed,   COUNTER, PROCESS, THREAD,  BYTES, 0, "bytes of large blocks freed") \
    X(large_cached_bytes,  GAUGE,   PROCESS, DERIVED, BYTES, 1, "freed large blocks waiting in the CPUs' caches (large.h), whole chunks, for the next large block asked for on their CPU; given back when a purge delay passes without one taken, or at nodal_collect; in active") \
    X(huge_allocs,         COUNTER, PROCESS, THREAD,  COUNT, 1, "huge blocks allocated (a mapping of their own)") \
    X(huge_frees,          COUNTER, PROCESS, THREAD,  COUNT, 1, "huge blocks freed") \
    X(huge_bytes_allocated, COUNTER, PROCESS, THREAD, BYTES, 0, "bytes of huge blocks allocated") \
    X(huge_bytes_freed,    COUNTER, PROCESS, THREAD,  BYTES, 0, "bytes of huge blocks freed") \
    X(huge_count,          GAUGE,   PROCESS, GAUGE,   COUNT, 1, "huge blocks live") \
    X(huge_bytes,          GAUGE,   PROCESS, GAUGE,   BYTES, 1, "bytes in live huge blocks") \
    X(huge_cached_bytes,   GAUGE,   PROCESS, GAUGE,   BYTES, 1, "freed huge mappings kept for reuse (for purge_delay at most)") \
    X(huge_resizes,        COUNTER, PROCESS, GAUGE,   COUNT, 1, "huge blocks realloc resized without copying them: grown or shrunk where they were, or their pages moved by the kernel") \
    X(huge_from_large,     COUNTER, PROCESS, GAUGE,   COUNT, 1, "large blocks realloc grew past 1 MiB that became huge blocks where they were, their segment (which held no other block) their mapping: no byte copied, no page moved") \
    X(segments_from_huge,  COUNTER, PROCESS, GAUGE,   COUNT, 1, "cached huge mappings of 4 MiB that had been segments (huge_from_large) taken back as segments by a node with no cached segment to give") \
    X(prof_slab_bytes,     GAUGE,   PROCESS, GAUGE,   BYTES, 1, "the heap profile's overhead (prof=1): its sample slabs, an OS page each, whose cells hold sampled blocks of up to 1 KiB; in active and mapped, not in allocated (a live cell counts there, and in its class, as a block of its class)") \
    X(prof_table_bytes,    GAUGE,   PROCESS, DERIVED, BYTES, 1, "the heap profile's tables (prof=1): the resident bytes of its tables of call stacks and live samples and of its unwinder's cache, mapped at its start (not in mapped; its small tables are in nodal's own data); a page once written stays, so the value at exit bounds the one at any time before (pages only read, the kernel's zero page, not counted)") \
    X(segments_cached,     COUNTER, PROCESS, GAUGE,   COUNT, 0, "segments with no page or block in use that a heap or a large pool gave to its node's cache of free segments (node.h), kept mapped for reuse") \
    X(segments_reused_dirty, COUNTER, PROCESS, GAUGE, COUNT, 0, "cached segments taken again (by a heap or a large pool) with memory still resident in them: what they held serves again without page faults") \
    X(segments_reused_clean, COUNTER, PROCESS, GAUGE, COUNT, 0, "cached segments taken again after their memory was purged in the cache: what their taker uses is faulted in again") \
    X(segments_cache_purged, COUNTER, PROCESS, GAUGE, COUNT, 0, "cached segments whose memory the node's cache purged: on arrival past its dirty ones' bound, by the sweep once purge_delay passed, or at once (a thread that moved, nodal_collect)") \
    X(reclaimed_segments,  COUNTER, PROCESS, THREAD,  COUNT, 1, "segments of exited threads taken over by a live thread") \
    X(abandoned_segments,  COUNTER, PROCESS, THREAD,  COUNT, 1, "segments left with live blocks by exiting threads") \
    X(thread_moves,        COUNTER, PROCESS, THREAD,  COUNT, 1, "moves of a thread to a CPU of another node, seen on its slow paths (follow_thread)") \
    X(moves_followed,      COUNTER, PROCESS, THREAD,  COUNT, 1, "of those, the ones after which the thread's plain memory came from its new node (not under follow_thread=0 or a memory policy)") \
    X(moves_watched,       COUNTER, PROCESS, THREAD,  COUNT, 1, "of the moves followed, the ones seen at the thread's first malloc after them: it was still watched after its last move (follow_thread's watch, a second and 65,536 mallocs at least, every malloc looking at the CPU's node); the others were seen within a class's look budget") \
    X(pages_handed_back,   COUNTER, PROCESS, THREAD,  COUNT, 1, "pages (64 or 512 KiB) of the segments that moved threads handed back to their old node: those holding blocks to the node's abandoned segments, the free ones (purged) to its cache") \
    X(free_blocks_purged,  COUNTER, PROCESS, GAUGE,   COUNT, 1, "free blocks of pages still in use whose whole OS pages past their first 16 bytes were given back to the OS (blocks of 8 KiB and more that sat on their page's free list through two maintenance passes, a purge delay apart, or at a forced collect; heap.c): memory a page that keeps other blocks in use no longer holds") \
    X(idle_heaps_swept,    COUNTER, PROCESS, GAUGE,   COUNT, 1, "heaps of live threads that made no maintenance pass for 5 purge delays (asleep, or running without the allocator) whose empty pages, spare segments and pending purges another thread's maintenance gave back (heap.c: nd_heap_sweep_idle)") \
    X(idle_blocks_purged,  COUNTER, PROCESS, GAUGE,   COUNT, 1, "free blocks of 8 KiB and more that sat untaken in a transfer store through a purge delay and gave back their whole OS pages past their first 16 bytes on their way home (heap.c: nd_heap_purge_idle_blocks): those that go to the pages of a thread that no longer runs no longer keep their memory until it runs again") \
    X(purge_bounds_raised, COUNTER, PROCESS, GAUGE,   COUNT, 1, "times a bound that makes freed memory be given back at once, not after purge_delay, was raised because memory it gave back was faulted in again within about a purge delay: a heap's bound on its pending purges (heap.h: ND_PURGE_PENDING_MAX), a node cache's on its dirty segments and on its segments (node.c); counted when a bound first rises from its base. Many say the program frees and takes again more memory than the bounds in rounds shorter than purge_delay") \
    X(borrowed_blocks,     COUNTER, PROCESS, GAUGE,   COUNT, 1, "medium blocks handed out for a request of one of the eight classes below theirs (up to 4x smaller), whose own pages would have had to touch memory they never had; the block was free and resident (tcache.c: borrowing)") \
    X(remote_pages,        COUNTER, PROCESS, THREAD,  COUNT, 1, "pages of reused memory (already faulted in on its node) that a heap began handing out while its thread ran on another node: a move not followed, or not seen yet") \
    X(node_fallback_pages, COUNTER, PROCESS, GAUGE,   COUNT, 2, "OS pages of node-targeted memory placed on another node (node_fallback=preferred only)") \
    X(strict_failures,     COUNTER, PROCESS, GAUGE,   COUNT, 1, "node-targeted requests refused because the node was full (node_fallback=strict)") \
    X(tier_fallbacks,      COUNTER, PROCESS, GAUGE,   COUNT, 1, "tier calls with NODAL_TIER_PREFERRED served by a later node of the tier's order (the first was full or over its cap)") \
    X(tier_cap_refusals,   COUNTER, PROCESS, GAUGE,   COUNT, 1, "node-bound mappings refused, or tier nodes skipped, because a tier was at its cap (tier_latency_max, ...)") \
    X(os_maps,             COUNTER, PROCESS, GAUGE,   COUNT, 0, "mappings made (mmap)") \
    X(os_unmaps,           COUNTER, PROCESS, GAUGE,   COUNT, 0, "mappings removed (munmap)") \
    X(os_purges,           COUNTER, PROCESS, GAUGE,   COUNT, 0, "ranges returned to the OS while staying mapped (madvise)") \
    X(os_purge_calls,      COUNTER, PROCESS, GAUGE,   COUNT, 0, "system calls that purged those ranges: one madvise per range, or one process_madvise for a batch of them (a heap's purge pass, a node cache's sweep; Linux 6.14+)") \
    X(os_commits,          COUNTER, PROCESS, GAUGE,   COUNT, 0, "ranges of node-targeted memory populated and checked with the kernel") \
    /* ---- per size class ------------------------------------------------------------------------- */ \
    X(requests,            COUNTER, CLASS,   DERIVED, COUNT, 1, "allocation calls served from the class") \
    X(frees,               COUNTER, CLASS,   DERIVED, COUNT, 1, "blocks of the class freed") \
    X(fills,               COUNTER, CLASS,   BIN,     COUNT, 1, "refills of a thread cache from pages, or from the transfer store of its kind (xfer_takes)") \
    X(fill_blocks,         COUNTER, CLASS,   BIN,     COUNT, 0, "blocks moved from pages into thread caches") \
    X(flushes,             COUNTER, CLASS,   BIN,     COUNT, 1, "times a thread cache gave blocks back to their pages, or to the transfer store of its kind (xfer_puts)") \
    X(flush_blocks,        COUNTER, CLASS,   BIN,     COUNT, 0, "blocks moved from thread caches back to pages") \
    X(full_size_fills,     COUNTER, CLASS,   CLASS,   COUNT, 0, "fills of a cache already at its largest capacity (tcache_count, tcache_bytes): the ones a larger cache would have saved") \
    X(full_size_flushes,   COUNTER, CLASS,   CLASS,   COUNT, 0, "overflows of a cache already at its largest capacity") \
    X(direct_allocs,       COUNTER, CLASS,   CLASS,   COUNT, 0, "blocks taken straight from pages (classes without a thread cache)") \
    X(slow_frees,          COUNTER, CLASS,   CLASS,   COUNT, 0, "frees by the owner that reached a page through the slow path (no cache, or checks on)") \
    X(sampled_cells,       COUNTER, CLASS,   GAUGE,   COUNT, 0, "prof=1: sampled requests of the class served by a cell of a sample slab (prof_slab_bytes), not by its pages; counted in requests") \
    X(sampled_cell_frees,  COUNTER, CLASS,   GAUGE,   COUNT, 0, "prof=1: frees of those cells, by any thread; counted in frees") \
    X(remote_frees,        COUNTER, CLASS,   CLASS,   COUNT, 1, "blocks of pages other threads own, given back to their page by the thread that freed them") \
    X(remote_pushes,       COUNTER, CLASS,   CLASS,   COUNT, 0, "of those, the ones sent at once, one atomic each (no cache of their kind, or it had no room); the others went in chains, one atomic per page, from the freeing thread's cache") \
    X(xfer_puts,           COUNTER, CLASS,   BIN,     COUNT, 0, "overflows of a thread cache that put blocks in the transfer store of its kind of memory (for other caches of that kind to take) instead of sending them to their pages") \
    X(xfer_put_blocks,     COUNTER, CLASS,   BIN,     COUNT, 0, "blocks put in transfer stores (counted in flush_blocks too)") \
    X(xfer_takes,          COUNTER, CLASS,   BIN,     COUNT, 0, "refills of a thread cache from the transfer store of its kind (counted in fills too)") \
    X(xfer_take_blocks,    COUNTER, CLASS,   BIN,     COUNT, 0, "blocks taken from transfer stores (counted in fill_blocks too)") \
    X(xfer_full,           COUNTER, CLASS,   CLASS,   COUNT, 0, "overflows that found the transfer store full or busy (another thread in it): some or all of their blocks went to their pages") \
    X(xfer_empty,          COUNTER, CLASS,   BIN,     COUNT, 0, "refills that found the transfer store empty or busy, and went to the pages") \
    X(xfer_drained,        COUNTER, CLASS,   CLASS,   COUNT, 0, "blocks sent from transfer stores to their pages: by maintenance, from a store no cache took from for a purge delay, or by nodal_collect") \
    X(cached,              GAUGE,   CLASS,   DERIVED, COUNT, 1, "blocks waiting in thread caches") \
    X(pages,               GAUGE,   CLASS,   GAUGE,   COUNT, 1, "pages in use (64 KiB for classes up to 16 KiB, 512 KiB above), kept ones included (emptied, kept set up for their class by their heap)") \
    X(bytes_in_use,        GAUGE,   CLASS,   DERIVED, BYTES, 1, "bytes in live blocks of the class") \
    X(utilization,         GAUGE,   CLASS,   DERIVED, RATIO, 1, "share of the pages' space in live or cached blocks (low: many pages held for few blocks)") \
    /* ---- per node ------------------------------------------------------------------------------- */ \
    X(plain_mapped,        GAUGE,   NODE,    GAUGE,   BYTES, 1, "plain (malloc) memory mapped by threads running on the node") \
    X(bound_mapped,        GAUGE,   NODE,    GAUGE,   BYTES, 1, "memory mapped for node-targeted allocation on the node") \
    X(plain_cached_segments, GAUGE, NODE,    DERIVED, COUNT, 0, "free plain segments kept for reuse") \
    X(bound_cached_segments, GAUGE, NODE,    DERIVED, COUNT, 0, "free node-bound segments kept for reuse") \
    X(plain_abandoned_segments, GAUGE, NODE, DERIVED, COUNT, 0, "plain segments of exited threads waiting for a new owner") \
    X(bound_abandoned_segments, GAUGE, NODE, DERIVED, COUNT, 0, "node-bound segments of exited threads waiting for a new owner") \
    /* ---- per memory tier, and per CPU node under it ----------------------------------------------- */ \
    X(requests,            COUNTER, TIER,    THREAD,  COUNT, 1, "blocks that tier calls (nodal_malloc_tier, its calloc and aligned forms, nodal::tier_allocator) returned for the tier; per CPU node: the calls made on a CPU of that node") \
    X(bytes,               COUNTER, TIER,    THREAD,  BYTES, 1, "bytes of those blocks, as malloc_usable_size gives them (the size class's size; large and huge blocks whole)") \
    X(fallbacks,           COUNTER, TIER,    GAUGE,   COUNT, 1, "of those, the ones with NODAL_TIER_PREFERRED served by a later node of the tier's order (the first was full or over its cap)") \
    X(cap_refusals,        COUNTER, TIER,    GAUGE,   COUNT, 1, "node-bound mappings refused, or tier nodes skipped by tier calls, because the tier was at its cap (tier_latency_max, ...); per CPU node: where the refused thread ran") \
    X(cap_bytes,           GAUGE,   TIER,    DERIVED, BYTES, 1, "node-bound memory mapped now on the tier's nodes (those it names first from some CPU node): what its cap counts, in whole 4 MiB segments and huge mappings, capped or not; per CPU node: on the node the tier names from there")

/*
 * Selectors: ND_SEL_<scope>_<source>(class counter, thread counter, process
 * gauge, class gauge, node gauge) expands to the argument that applies to a
 * field, or to nothing (derived fields have no storage of their own).
 */
#define ND_SEL_CLASS_CLASS(a, b, c, d, e, f, g)     a
#define ND_SEL_CLASS_BIN(a, b, c, d, e, f, g)
#define ND_SEL_PROCESS_THREAD(a, b, c, d, e, f, g)  b
#define ND_SEL_PROCESS_GAUGE(a, b, c, d, e, f, g)   c
#define ND_SEL_CLASS_GAUGE(a, b, c, d, e, f, g)     d
#define ND_SEL_NODE_GAUGE(a, b, c, d, e, f, g)      e
#define ND_SEL_TIER_THREAD(a, b, c, d, e, f, g)     f
#define ND_SEL_TIER_GAUGE(a, b, c, d, e, f, g)      g
#define ND_SEL_PROCESS_DERIVED(a, b, c, d, e, f, g)
#define ND_SEL_CLASS_DERIVED(a, b, c, d, e, f, g)
#define ND_SEL_NODE_DERIVED(a, b, c, d, e, f, g)
#define ND_SEL_TIER_DERIVED(a, b, c, d, e, f, g)
#define ND_SEL(scope, source) ND_SEL_##scope##_##source
/* ND_SEL_BIN(scope, source)(x): x for a BIN counter only (in none of the
   selectors above: the cold part of a bin holds it). */
#define ND_SELB_CLASS_BIN(x) x
#define ND_SELB_CLASS_CLASS(x)
#define ND_SELB_PROCESS_THREAD(x)
#define ND_SELB_PROCESS_GAUGE(x)
#define ND_SELB_CLASS_GAUGE(x)
#define ND_SELB_NODE_GAUGE(x)
#define ND_SELB_TIER_THREAD(x)
#define ND_SELB_TIER_GAUGE(x)
#define ND_SELB_PROCESS_DERIVED(x)
#define ND_SELB_CLASS_DERIVED(x)
#define ND_SELB_NODE_DERIVED(x)
#define ND_SELB_TIER_DERIVED(x)
#define ND_SEL_BIN(scope, source) ND_SELB_##scope##_##source

/* Scope filters for the snapshot: ND_IF_<scope>(process, class, node, tier). */
#define ND_IF_PROCESS(a, b, c, d) a
#define ND_IF_CLASS(a, b, c, d)   b
#define ND_IF_NODE(a, b, c, d)    c
#define ND_IF_TIER(a, b, c, d)    d

/* Kind filters: ND_IFK_<kind>(x) is x for counters only. */
#define ND_IFK_COUNTER(x) x
#define ND_IFK_GAUGE(x)
#define ND_IFK_PEAK(x)

#define ND_TYPE_COUNT uint64_t
#define ND_TYPE_BYTES uint64_t
#define ND_TYPE_RATIO double

/* ---- storage the allocator writes ----------------------------------------- */

#define ND_GEN_CLASS_COUNTER(n, k, sc, so, u, l, m)  ND_SEL(sc, so)(uint64_t n;, , , , , , )
#define ND_GEN_BIN_COUNTER(n, k, sc, so, u, l, m)    ND_SEL_BIN(sc, so)(uint64_t n;)
#define ND_GEN_THREAD_COUNTER(n, k, sc, so, u, l, m) ND_SEL(sc, so)(, uint64_t n;, , , , , )
#define ND_GEN_TIER_COUNTER(n, k, sc, so, u, l, m)   ND_SEL(sc, so)(, , , , , uint64_t n[ND_TIER_COUNT];, )
#define ND_GEN_TIER_NODE_COUNTER(n, k, sc, so, u, l, m) \
    ND_SEL(sc, so)(, , , , , uint64_t n[ND_TIER_COUNT][ND_MAX_NODES];, )
#define ND_GEN_GAUGE(n, k, sc, so, u, l, m) \
    ND_SEL(sc, so)(, , size_t n;, size_t n[ND_CLASS_COUNT];, size_t n[ND_MAX_NODES];, , \
                   size_t n[ND_TIER_COUNT][ND_MAX_NODES];)

/* Per thread (thread cache), per size class. */
typedef struct nd_class_counters { ND_STATS_TABLE(ND_GEN_CLASS_COUNTER) } nd_class_counters;
/* Per thread (thread cache), per size class, in the bin's cold part. */
typedef struct nd_bin_counters { ND_STATS_TABLE(ND_GEN_BIN_COUNTER) } nd_bin_counters;
/* Per thread (one per heap of the thread). */
typedef struct nd_thread_counters { ND_STATS_TABLE(ND_GEN_THREAD_COUNTER) } nd_thread_counters;
/* Per thread (its record), each field an array indexed by tier: the tier
   calls' slow paths count here (the fast path in its bins, tcache.h). */
typedef struct nd_tier_counters { ND_STATS_TABLE(ND_GEN_TIER_COUNTER) } nd_tier_counters;
/* The same per tier and CPU node, for what threads counted and attributed
   to the node their calls ran on (relaxed atomics, thread.c). */
typedef struct nd_tier_node_counters { ND_STATS_TABLE(ND_GEN_TIER_NODE_COUNTER) } nd_tier_node_counters;
/* Process-wide gauges. */
typedef struct nd_gauges { ND_STATS_TABLE(ND_GEN_GAUGE) } nd_gauges;

extern nd_gauges nd_gauge nd_hidden;

/* A per-thread counter: written by its owner only, without a lock prefix,
   read by reports as a whole aligned word (never torn on the 64-bit
   targets nodal supports). Under ThreadSanitizer the same as a relaxed
   load and store, so the racy reads are not reported; otherwise a plain
   add, which compiles to one add to memory. */
#if ND_STATS && defined(ND_TSAN)
#define nd_count_add(p, v) __atomic_store_n((p), __atomic_load_n((p), __ATOMIC_RELAXED) + (v), __ATOMIC_RELAXED)
#elif ND_STATS
#define nd_count_add(p, v) ((void)(*(p) += (v)))
#else
#define nd_count_add(p, v) ((void)(p), (void)(v))
#endif
#define nd_count_inc(p) nd_count_add(p, 1)

/* Process-wide gauges: relaxed atomic adds (slow paths only). */
#define nd_gauge_add(field, v) nd_add_relaxed(&nd_gauge.field, (size_t)(v))
#define nd_gauge_sub(field, v) nd_sub_relaxed(&nd_gauge.field, (size_t)(v))
/* Adds delta to a gauge and raises its peak (not to a value that reads
   below 0 as a signed count: the active gauge's, config.h). */
void nd_gauge_add_peak(size_t *gauge, size_t *peak, long delta) nd_hidden;
/* Bytes of in-use pages, large and huge blocks (and their peak), less
   what heaps and large pools hold back (config.h: ND_GAUGE_HELD). */
static inline void nd_gauge_active(long delta) { nd_gauge_add_peak(&nd_gauge.active, &nd_gauge.peak_active, delta); }
/* The active gauge as it reads now: a signed count, 0 when below. */
static inline size_t nd_gauge_active_now(void)
{
    long v = (long)nd_load_relaxed(&nd_gauge.active);
    return v > 0 ? (size_t)v : 0;
}

/* ---- the snapshot a report is made from ------------------------------------ */

#define ND_GEN_SNAP_PROCESS(n, k, sc, so, u, l, m) ND_IF_##sc(ND_TYPE_##u n;, , , )
#define ND_GEN_SNAP_CLASS(n, k, sc, so, u, l, m)   ND_IF_##sc(, ND_TYPE_##u n;, , )
#define ND_GEN_SNAP_NODE(n, k, sc, so, u, l, m)    ND_IF_##sc(, , ND_TYPE_##u n;, )
#define ND_GEN_SNAP_TIER(n, k, sc, so, u, l, m)    ND_IF_##sc(, , , ND_TYPE_##u n;)

typedef struct nd_snap_totals { ND_STATS_TABLE(ND_GEN_SNAP_PROCESS) } nd_snap_totals;
typedef struct nd_snap_class  { ND_STATS_TABLE(ND_GEN_SNAP_CLASS) } nd_snap_class;
typedef struct nd_snap_node   { ND_STATS_TABLE(ND_GEN_SNAP_NODE) } nd_snap_node;
typedef struct nd_snap_tier   { ND_STATS_TABLE(ND_GEN_SNAP_TIER) } nd_snap_tier;

/* dst += src for every field of a snapshot (used to fold threads). */
void nd_snap_class_add(nd_snap_class *dst, const nd_snap_class *src) nd_hidden;
void nd_snap_totals_add(nd_snap_totals *dst, const nd_snap_totals *src) nd_hidden;
/* Copies the per-thread counters of a class into its snapshot (+=). */
void nd_snap_class_add_counters(nd_snap_class *dst, const nd_class_counters *src) nd_hidden;
void nd_snap_class_add_bin_counters(nd_snap_class *dst, const nd_bin_counters *src) nd_hidden;
void nd_snap_totals_add_counters(nd_snap_totals *dst, const nd_thread_counters *src) nd_hidden;
/* Adds the tier counters of every CPU node into the snapshots
   from[tier][node]. */
void nd_snap_tier_add_node_counters(nd_snap_tier (*from)[ND_MAX_NODES], const nd_tier_node_counters *src) nd_hidden;

/* The table as data, for printers and tools. */
enum { ND_KIND_COUNTER, ND_KIND_GAUGE, ND_KIND_PEAK };
enum { ND_SCOPE_PROCESS, ND_SCOPE_CLASS, ND_SCOPE_NODE, ND_SCOPE_TIER };
enum { ND_UNIT_COUNT, ND_UNIT_BYTES, ND_UNIT_RATIO };
typedef struct nd_stat_desc {
    const char *name;
    uint8_t kind, scope, unit, level;
    const char *source;
    const char *meaning;
} nd_stat_desc;

#define ND_GEN_COUNT(n, k, sc, so, u, l, m) +1
enum { ND_STAT_COUNT = 0 ND_STATS_TABLE(ND_GEN_COUNT) };
extern const nd_stat_desc nd_stat_table[ND_STAT_COUNT] nd_hidden;

#endif /* ND_COUNTERS_H */
