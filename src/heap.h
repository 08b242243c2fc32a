/*
 * heap.h - per-thread heaps: one heap per (thread, node kind). A thread has a
 * plain heap (memory with the default policy, for malloc) and, created on
 * first use, one heap per node it asked for with nodal_*_node (memory bound
 * to that node). Each heap owns its pages outright, so allocation and
 * owner-side frees take no lock and no atomic read-modify-write.
 *
 * Owns: struct nd_heap, struct nd_bin (the thread cache), the TLS words the
 * fast paths read, thread start/exit, and the locked shared heaps used by
 * threads that are being torn down.
 *
 * Thread cache bin (one per size class per heap), a stack of block pointers:
 *
 *     low                 cur                      empty
 *      |  (free slots)     | cached blocks ...       | NULL sentinel
 *      v                   v                         v
 *     [ ][ ][ ][ ][ ][ ][ ][b5][b4][b3][b2][b1][b0]  [0]
 *                           ^ next malloc returns b5 ; a free stores at cur-1
 *
 *   malloc: cur == empty -> slow path (fill), else return *cur++
 *   free:   cur == low   -> slow path (flush), else *--cur = p
 *   a bin with cap 0 has low == cur == empty: every call takes the slow path.
 *
 * tick counts requests down; when the fast path takes it to 0 it goes to
 * the slow path, which adds ND_TICK_PERIOD to the request total, re-arms the
 * tick and runs the heap's maintenance check. So requests of a class are
 * info.nreq + (ND_TICK_PERIOD - tick), exactly, without a counter of its
 * own on the fast path; frees into the cache are derived in the same way
 * (see nd_heap_stats_sum).
 */
#ifndef ND_HEAP_H
#define ND_HEAP_H

#include <stdbool.h>
#include <stdint.h>
#include "config.h"
#include "os.h"
#include "segment.h"

/*
 * Hot part of a bin, read and written by the fast paths (one cache line).
 * Invariants: low <= cur <= empty; empty - low == info.cap <= info.cap_max;
 * *empty == NULL;
 * [cur, empty) are free blocks of the bin's class from pages this heap owns;
 * 0 < tick <= ND_TICK_PERIOD except transiently 0 between a fast path that
 * took it there and the slow path it calls.
 */
typedef struct nd_bin {
    void   **cur;
    void   **empty;
    void   **low;
    int64_t  tick;
    uint64_t page_frees;   /* owner frees straight into cold pages (fast path) */
    void    *last_free;    /* the block freed last, unless a malloc came since */
    uint64_t pad_[2];
} nd_bin;

/*
 * Cold part of a bin (slow paths only). The capacity adapts: a bin that
 * overflows after having run dry since its last flush (its working set does
 * not fit: fill, flush, fill, ...) doubles its capacity, up to cap_max (the
 * slots allocated, from the options tcache_count and tcache_bytes); a GC
 * pass that finds more than half of it unused all along halves it, down to
 * cap_max / 4.
 */
typedef struct nd_bin_info {
    uint64_t nreq;       /* requests counted at tick roll-overs */
    uint32_t cap;        /* current capacity: empty - low */
    uint32_t cap_max;
    uint32_t filled;     /* the bin ran dry since its last flush */
    uint32_t low_water;  /* fewest blocks seen cached since the last GC pass
                            (sampled at fills and tick roll-overs), or
                            ND_NO_SAMPLE */
} nd_bin_info;
#define ND_NO_SAMPLE UINT32_MAX

_Static_assert(sizeof(nd_bin) == ND_CACHE_LINE, "a hot bin is one cache line: class index << 6");
#define ND_TICK_PERIOD 1024
#define ND_HOT_PAGES   4       /* pages per class whose owner frees may go to the cache */

typedef struct nd_page_queue { nd_page *first, *last; size_t count; } nd_page_queue;

/* Slow-path counters per size class (owner thread only; read racily). */
typedef struct nd_cls_stats {
    uint64_t fills, fill_blocks, flushes, flush_blocks;
    uint64_t direct_allocs;   /* blocks of classes without a cache, straight from pages */
    uint64_t slow_frees;      /* owner frees that bypassed the cache */
    uint64_t remote_frees;    /* frees of other threads' blocks made by this thread */
} nd_cls_stats;

typedef struct nd_heap_stats {
    uint64_t large_allocs, large_frees, large_bytes_alloc, large_bytes_freed;
    uint64_t huge_allocs, huge_frees, huge_bytes_alloc, huge_bytes_freed;
    uint64_t remote_frees, reclaimed_segments, abandoned_segments;
} nd_heap_stats;

enum { ND_HEAP_NORMAL = 0, ND_HEAP_SHARED, ND_HEAP_EMPTY, ND_HEAP_DEAD };

/*
 * A heap.
 * Invariants:
 *  - tid != 0 is the owner thread's id (nd_tls_tid), unique for the life of
 *    the process; a shared heap has ND_TID_SHARED and is used under `lock`.
 *  - every page in pages[c] or full is in use, owned by this heap (key ==
 *    tid for the pages in hot[c][], tid | ND_KEY_COLD otherwise), of class c,
 *    in a segment in avail[] or used[]. hot[c][] holds at most ND_HOT_PAGES
 *    of them (NULL for empty slots): the thread cache only ever holds blocks
 *    freed into these, so it cannot keep many pages alive.
 *  - pages[c] holds pages that may have free blocks; the first is tried
 *    first. full holds pages with none, whose xfree is armed to notify
 *    (see page.h), or which are already on xpages.
 *  - avail[k] lists the segments of kind k (0 small, 1 medium) this heap
 *    owns that have a free page; used[k] those that have none. A segment
 *    with no page in use stays owned only as spare[k] (one per kind, given
 *    back after purge_delay unused), so a thread cycling through a
 *    segment's worth of memory does not hand it to the node and back.
 *  - bound == 1: every segment is bound to node; bound == 0: plain.
 *  - node_heaps is meaningful in a thread's plain heap only.
 */
typedef struct nd_aligned(ND_CACHE_LINE) nd_heap {
    nd_bin          bins[ND_CLASS_COUNT];
    struct nd_heap *node_heaps[ND_MAX_NODES];
    nd_bin_info     binfo[ND_CLASS_COUNT];
    uintptr_t       tid;
    uint8_t         kind;
    uint8_t         bound;
    int16_t         node;
    uint32_t        slot_bytes;         /* size of the bins' slot arrays */
    struct nd_heap *plain;              /* the thread's plain heap (itself for plain heaps) */
    struct nd_heap *next, *prev;        /* plain heaps: list of live threads */
    nd_lock_t       lock;               /* shared heaps only */
    nd_page_queue   pages[ND_CLASS_COUNT];
    nd_page_queue   full;
    nd_page        *hot[ND_CLASS_COUNT][ND_HOT_PAGES];  /* pages whose frees go to the cache */
    uint8_t         hot_next[ND_CLASS_COUNT];            /* slot the next hot page replaces */
    nd_segment     *avail[2];           /* owned segments with a free page: [0] small, [1] medium */
    nd_segment     *used[2];            /* owned segments without one */
    nd_segment     *spare[2];           /* an owned segment with no page in use, kept for reuse */
    uint64_t        spare_since[2];     /* ms */
    nd_segment     *large_cache;        /* free large segments kept by this heap */
    uint32_t        large_cache_count;
    uint32_t        gc_countdown;
    uint64_t        maintain_at;        /* ms */
    uint64_t        clock_ms;           /* the clock when maintenance last looked */
    size_t          purge_pending;      /* bytes of retired pages waiting for their purge */
    uint32_t        gc_samples;         /* tick roll-overs since the last cache GC */
    uint64_t        epoch;              /* counts tick roll-overs and flushes: the heap's own clock */
    nd_cls_stats    cstats[ND_CLASS_COUNT];
    nd_heap_stats   stats;
    nd_aligned(ND_CACHE_LINE) nd_page *xpages;   /* notified pages (other threads push) */
} nd_heap;

#define ND_TID_SHARED ((uintptr_t)2 * ND_TID_STEP)

extern nd_heap nd_heap_empty nd_hidden;   /* thread not started: every fast path misses */
extern nd_heap nd_heap_dead nd_hidden;    /* thread torn down: requests go to shared heaps */
extern __thread nd_heap *nd_tls_heap nd_hidden;
extern __thread uintptr_t nd_tls_tid nd_hidden;

/* Statistics increments that other threads may read: a plain load and store,
   no lock prefix, but not a data race. */
#if ND_STATS
#define nd_stat_add(p, v) __atomic_store_n((p), __atomic_load_n((p), __ATOMIC_RELAXED) + (v), __ATOMIC_RELAXED)
#else
#define nd_stat_add(p, v) ((void)(p), (void)(v))
#endif
#define nd_stat_inc(p) nd_stat_add(p, 1)

/* Thread life cycle. */
nd_heap *nd_thread_heap(void) nd_hidden;           /* the calling thread's plain heap, started if needed */
nd_heap *nd_heap_for_node(nd_heap *plain, int node) nd_hidden;  /* NULL (EINVAL) if no such node */
void     nd_thread_done(void *arg) nd_hidden;      /* pthread key destructor */
nd_heap *nd_heap_shared(int node, bool bound) nd_hidden;  /* locked fallback heaps */

/* Allocation below the fast paths; all take the heap they serve. */
void *nd_heap_malloc(nd_heap *h, size_t size) nd_hidden;
void *nd_heap_malloc_aligned(nd_heap *h, size_t alignment, size_t size) nd_hidden;
void  nd_heap_maintain(nd_heap *h, bool force) nd_hidden;
/* Counts a slow-path event; every so many runs nd_heap_maintain. */
void  nd_heap_tick(nd_heap *h) nd_hidden;
void  nd_heap_collect(nd_heap *h, bool purge_all) nd_hidden;
/* Purges retired pages of h's segments: those past their delay, or all. */
void  nd_heap_purge(nd_heap *h, uint64_t now, bool all) nd_hidden;
#define ND_PURGE_PENDING_MAX (32 * ND_MiB)  /* beyond this, purge without waiting */
/* Memory a heap freed is purged once purge_delay has passed AND the heap has
   done this much work since (epochs), so that a thread that gets little CPU
   time (many threads on few cores) does not purge what it is about to reuse. */
#define ND_PURGE_MIN_EPOCHS 4
/* Adopts one segment abandoned by an exited thread; false if none. */
bool  nd_heap_reclaim(nd_heap *h) nd_hidden;
/* Takes an abandoned segment over; false if it turned out empty and was
   given back (s must not be used then). */
bool  nd_heap_adopt_segment(nd_heap *h, nd_segment *s) nd_hidden;
/* Large blocks (one per segment). */
void *nd_heap_large_alloc(nd_heap *h, size_t size, size_t alignment) nd_hidden;
void  nd_large_free(nd_segment *s, nd_page *pg) nd_hidden;
/* Resizes a large block in place; false if it does not fit its segment. */
bool  nd_large_resize(nd_segment *s, nd_page *pg, size_t size) nd_hidden;
/* The calling thread's heap for memory of segment s's kind, if it has one. */
nd_heap *nd_heap_of_kind(nd_segment *s) nd_hidden;
/* Process start: the thread-exit key. */
void  nd_heap_process_init(void) nd_hidden;

/* Class tables. */
extern const uint8_t  nd_class_lookup[ND_LOOKUP_MAX / ND_QUANTUM + 1] nd_hidden;
extern const uint32_t nd_class_size[ND_CLASS_COUNT] nd_hidden;

static inline unsigned nd_class_of(size_t size)
{
    if (size <= ND_LOOKUP_MAX)
        return nd_class_lookup[(size + ND_QUANTUM - 1) / ND_QUANTUM];
    size_t x = size - 1;
    unsigned b = 63u - (unsigned)__builtin_clzll(x);
    return 4u * b - 20u + (unsigned)((x >> (b - 2)) & 3u);
}

/* Thread ids: a per-thread TLS word, never reused. */
static inline uintptr_t nd_tid(void) { return nd_tls_tid; }

/* Statistics: sums over live and exited threads. */
typedef struct nd_cls_totals {
    uint64_t requests, frees, fills, fill_blocks, flushes, flush_blocks, remote_frees, cached;
} nd_cls_totals;
void nd_heap_stats_sum(nd_cls_totals *t, nd_heap_stats *hs, size_t *threads) nd_hidden;
void nd_heap_count_remote_free(unsigned cls) nd_hidden;

/* Global list of live thread heaps (statistics, fork). */
void nd_heaps_lock(void) nd_hidden;
void nd_heaps_unlock(void) nd_hidden;
void nd_heap_fork_child(void) nd_hidden;
void nd_heap_shared_lock_all(void) nd_hidden;
void nd_heap_shared_unlock_all(void) nd_hidden;

#endif /* ND_HEAP_H */
