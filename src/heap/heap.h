/*
 * heap.h - heaps: the pages and segments one thread owns for one kind of
 * memory (plain memory created on a node, or memory bound to a node). A
 * heap hands blocks out to its thread cache (tcache.h) and takes them back;
 * it keeps its pages in queues per size class, takes remote frees back,
 * adopts the segments of exited threads, and gives memory back to the OS
 * after the purge delay.
 *
 * Owns: struct nd_heap, the page queues, the remote-free notification of a
 * heap (nd_heap_free_remote, nd_heap_drain_notified), a heap's segments
 * (new pages, retired pages, spare segments, adoption, abandonment),
 * purging.
 *
 * Everything here runs on the heap's owner thread (or under a shared
 * heap's lock), or on a thread that sweeps the heap of an idle owner
 * (nd_heap_sweep_idle, which excludes the owner's calls: below), except
 * nd_heap_free_remote, which any thread calls.
 */
#ifndef ND_HEAP_H
#define ND_HEAP_H

#include <stdbool.h>
#include <stdint.h>
#include "config.h"
#include "counters.h"
#include "lock.h"
#include "list.h"
#include "page.h"
#include "segment.h"

/* A heap's pending purges (purge_pending: its freed pages' memory waiting
   for the delay) past its bound are purged at once, all of them, without
   waiting: the bound is ND_PURGE_PENDING_MAX, raised (its pending_max) by
   what such a purge gave back that the heap faulted in again within about
   a purge delay, up to ND_PURGE_PENDING_TOP. A fixed bound purged the
   memory of a program that frees and takes again more than it at every
   round: batches of 1,000 blocks of 48 KiB-128 KiB (bench/micro -m batch
   -s 65536: 5,900 ns a pair, 167,000 faults, against mimalloc's 37 ns;
   docs/results.md, stop 62). The raised bound comes down, by half at
   most and not below twice the highest pending seen, at each maintenance
   pass whose pending stayed under half of it (config.h: nd_bound_aged). The memory a raised bound
   keeps is still purged after the delay, as all pending memory is. */
#define ND_PURGE_PENDING_MAX (32 * ND_MiB)
#define ND_PURGE_PENDING_TOP (1024 * ND_MiB)
/* Memory a heap freed is purged once purge_delay has passed AND the heap has
   done this much work since (epochs), so that a thread that gets little CPU
   time (many threads on few cores) does not purge what it is about to reuse. */
#define ND_PURGE_MIN_EPOCHS 4
/* The most bytes of emptied pages a heap keeps set up for their classes
   (its kept pages, below): 64 small pages, or 8 medium ones. */
#define ND_HEAP_KEPT_MAX (4 * ND_MiB)

/* Thread ids: multiples of ND_TID_STEP, never reused; below 4 steps they
   are reserved. */
#define ND_TID_SHARED ((uintptr_t)2 * ND_TID_STEP)
/* The nurseries' (nursery.h): shared heaps that never take a node's reserve. */
#define ND_TID_NURSERY ((uintptr_t)3 * ND_TID_STEP)
/* The first thread's id (the first record's: usually the main thread). */
#define ND_TID_FIRST ((uintptr_t)4 * ND_TID_STEP)

typedef ND_LIST(nd_page) nd_page_queue;
typedef ND_LIST(nd_segment) nd_seg_queue;

/*
 * A heap.
 * Invariants:
 *  - tid != 0 is the owner thread's id, unique for the life of the process;
 *    a shared heap has ND_TID_SHARED (a nursery, ND_TID_NURSERY) and is
 *    used under its owner's lock.
 *  - every page in pages[c] or full is in use, owned by this heap (heap ==
 *    this, key == tid, kind == nd_kind_of(bound, node)),
 *    of class c, in a segment in avail[] or used[]; in its node's reserve
 *    (node.h: a shared heap's) only if c is of ND_RESERVE_CLASS_MAX (1 KiB,
 *    heap.c) or less.
 *  - pages[c] holds pages that may have free blocks; the first is tried
 *    first. full holds pages with none, whose xfree is armed to notify
 *    (page.h), or which are already on `notified`.
 *  - avail[k] lists the segments of kind k (0 small, 1 medium) this heap
 *    owns that have a free page; used[k] those that have none. A segment
 *    with no page in use stays owned only as spare[k] (one per kind, given
 *    back after purge_delay unused) or as its node's reserve, so a thread cycling through a
 *    segment's worth of memory does not hand it to the node and back.
 *  - bound == 1: every segment is bound to node; bound == 0: plain, made by
 *    a thread running on node.
 *  - purge_pending = bytes of the chunks in the purge_mask of its segments.
 *  - cstats: ND_CLASS_COUNT per-class counters of its own, for its
 *    lifetime (its thread cache's, tcache.h: on the struct's fourth OS
 *    page).
 *  - carve_rng: NULL, or (secure=1 and 2, a thread cache's heap) the rng
 *    of its cache's secure state (checked by nd_secure_is_valid).
 *  - away: its thread was last seen on a CPU of another node than `node`
 *    (plain heaps; thread.c sets it); leaving: only inside nd_heap_leave.
 *  - kept pages: a page of pages[c] with kept == 1 was emptied (no block
 *    out) and stays set up for class c (segment.h: nothing carved), so
 *    that a heap that cycles whole pages of a class does not give each one
 *    back to its segment and set it up again every round (bench/micro -m
 *    batch -s 4096 -t 1, on main: 7,286 pages set up in 620 rounds of
 *    1,000 blocks, the rest of each round's blocks waiting in the thread
 *    cache and the transfer store; 71 with kept pages). They are the last pages of
 *    pages[c] (a suffix, in the order they were kept: the queue's other
 *    pages are taken first, then they are, the last kept first, before
 *    any new page); kept_classes has bit c
 *    exactly when pages[c] has one; kept_bytes is the page size (64 or
 *    512 KiB) of each, at most ND_HEAP_KEPT_MAX. None in a shared heap,
 *    with purge_delay=0, in a segment with holes or tails, while leaving.
 *    A heap gives them back to their segments (retires them) as it would
 *    an empty page: all of them when it is trimmed, collected, abandoned,
 *    leaves its node or runs out of address space; at maintenance those
 *    kept longer than the purge delay (and ND_PURGE_MIN_EPOCHS), whose
 *    segment's free pages are then due at once; and one, at the back of
 *    a queue of its kind, whenever a class without pages needs a new one
 *    (the memory serves that class instead).
 *  - gauge_active, gauge_pages[c]: the bytes and pages of class c this
 *    heap set up less those it retired and has not added to the
 *    process's gauges (active, pages[c]: counters.h). gauge_active is in
 *    [0, 2 * ND_GAUGE_HELD): a set-up or retirement that takes it out
 *    adds all but ND_GAUGE_HELD (config.h: the gauge never over what is
 *    in use). The pages go at the ND_GAUGE_EVENTS-th set-up or
 *    retirement since they last went; all of it at each maintenance
 *    pass, trim and abandonment (nd_heap_gauge_flush). gauge_events
 *    counts those since, below ND_GAUGE_EVENTS; gauge_classes has bit c
 *    set for each c with gauge_pages[c] != 0 (and maybe others). All 0 in
 *    a shared heap, which writes the gauges at once (under its lock). A
 *    report adds what the heaps of live and pooled threads hold
 *    (nd_thread_stats_sum), so it reads the gauges whole.
 *  - pending_max is 0 (the bound on purge_pending is ND_PURGE_PENDING_MAX)
 *    or above ND_PURGE_PENDING_MAX and at most ND_PURGE_PENDING_TOP.
 *  - owner's calls and sweeps: depth counts the owner's calls into this
 *    layer now in progress (nested ones included: heap.c's public
 *    functions begin with nd_heap_enter and end with nd_heap_exit, and the
 *    thread layer brackets its own reads of the heap's pages so), owner
 *    only; busy is 1 exactly while depth > 0 (published: the owner's
 *    store, then a compiler barrier, then its load of sweep; a sweeper's
 *    claim of sweep, then nd_os_barrier_all, then its load of busy:
 *    either sees the other's). sweep is 1 while another thread sweeps the
 *    heap of a thread that made no pass for ND_SWEEP_IDLE_DELAYS purge
 *    delays (nd_heap_sweep_idle): the owner then waits at its next
 *    nd_heap_enter until the sweep ends, and a sweep starts only while
 *    busy is 0. A shared heap (used under its lock) has neither.
 *  - classes has bit c - ND_HEAP_CLASSES_FROM set for every class c from
 *    ND_HEAP_CLASSES_FROM on of a page in pages[c] or full (and, a thread
 *    cache's heap, for every such bin c of its cache that has its slots,
 *    tcache.c); never cleared: a bit clear means no block of its class
 *    can be free in the heap or in its cache, so borrowing (tcache.c)
 *    looks only at the classes set.
 */
/* The first class a heap's `classes` has a bit for: the last 16 (8 KiB
   on), the medium classes among them (borrowing's, tcache.c). */
#define ND_HEAP_CLASSES_FROM (ND_CLASS_COUNT - 16)
/* Bit of class c (>= ND_HEAP_CLASSES_FROM) in a heap's classes. */
#define ND_HEAP_CLASS_BIT(c) ((uint16_t)(1u << ((c) - ND_HEAP_CLASSES_FROM)))

typedef struct nd_aligned(ND_CACHE_LINE) nd_heap {
    uintptr_t       tid;
    int16_t         node;
    uint8_t         bound;
    uint8_t         shared;
    uint8_t         away;
    uint8_t         leaving;
    uint16_t        classes;            /* bit c - ND_HEAP_CLASSES_FROM: class c had a page here, or its cache's bin c its slots */
    uint64_t        clock_ms;           /* the clock when maintenance last looked */
    uint64_t        epoch;              /* the heap's own clock: slow-path events */
    size_t          purge_pending;
    uint16_t        depth;              /* the owner's calls in progress (above), owner only */
    uint8_t         busy;               /* depth > 0, published for a sweeper (atomic) */
    uint8_t         sweep;              /* 1 while another thread sweeps it (atomic; above) */
    nd_class_counters *cstats;          /* its per-class counters: ND_CLASS_COUNT, its thread cache's (tcache.h) */
    nd_page_queue   pages[ND_CLASS_COUNT];
    nd_page_queue   full;
    nd_seg_queue    avail[2];
    nd_seg_queue    used[2];
    nd_segment     *spare[2];
    uint64_t        spare_since[2];     /* ms */
    size_t          kept_bytes;         /* its kept pages' bytes (above) */
    uint64_t        kept_classes;       /* bit c: pages[c] holds kept pages */
    size_t          pending_max;        /* its bound on purge_pending, 0 for ND_PURGE_PENDING_MAX (above) */
    size_t          pending_high;       /* the most purge_pending since the last maintenance pass */
    size_t          purged_back;        /* bytes the last purge past the bound gave back not faulted in again */
    uint64_t        purged_at;          /* the clock (clock_ms) at that purge */
    long            gauge_active;       /* page bytes set up less retired, not yet in the active gauge (above) */
    uint64_t        gauge_classes;      /* bit c: gauge_pages[c] may be other than 0 */
    uint32_t        gauge_events;       /* set-ups and retirements since the gauges were last written */
    int16_t         gauge_pages[ND_CLASS_COUNT];   /* pages set up less retired, not yet in the pages gauge */
    uint64_t       *carve_rng;          /* secure=1 and 2: the generator carving shuffles with (page.h); else NULL */
    nd_thread_counters stats;
    nd_aligned(ND_CACHE_LINE) nd_page *notified;   /* pages notified by remote frees (other threads push;
                                                      all heaps' together: the notified_pages gauge) */
} nd_heap;
/* A heap's first line: what a heap whose thread takes no page of its own
   (its blocks from its node's nursery, nursery.h) writes, at its start
   (nd_heap_init) and on its slow paths (its clock, its counters' pointer,
   its bracket: depth and busy);
   its page queues, segment lists and statistics after it are written
   only once it has pages or segments (tcache.h: a thread cache's first
   OS page ends with this line). */
#define ND_HEAP_HOT_BYTES 64
_Static_assert(__builtin_offsetof(nd_heap, pages) <= ND_HEAP_HOT_BYTES,
               "a heap's owner, clock and counters' pointer in its first line (tcache.h)");

/* The page colour of segment s: the free page a new page of a class
   looks for first is the first at or after it (heap.c), a page index that
   differs from one 4 MiB window to the next (5 apart) among the pages
   whose descriptors are on the header's first 4 KiB (ND_SEG_FIRST_DESCS,
   29 of 64): 64 KiB apart over 1.8 MiB, which spreads segments' first
   pages over the TLB's and caches' sets as the 64 did, and keeps their
   descriptors on the OS page of header every segment writes (its
   fields). Until h55m the colour took any of the 64 pages: half of the
   segments wrote a second OS page of header for their first pages'
   descriptors (bench/batchq -w 2, larson -t 2: 4-8 KiB a segment). */
static inline unsigned nd_heap_colour(const nd_segment *s)
{
    unsigned n = s->page_count < ND_SEG_FIRST_DESCS ? s->page_count : (unsigned)ND_SEG_FIRST_DESCS;
    return (unsigned)((((uintptr_t)s >> ND_SEG_SHIFT) * 5u) % n);
}

/* A thread that made no maintenance pass for this many purge delays is
   idle: another thread's maintenance sweeps its plain heap (thread.c,
   nd_thread_sweep_idle; heap.c, nd_heap_sweep_idle). */
#define ND_SWEEP_IDLE_DELAYS 5

/* Waits until the sweep of h in progress ends (heap.c). */
void nd_heap_wait_sweep(nd_heap *h) nd_hidden __attribute__((cold));

/* The owner's bracket around its calls into this layer (above: depth,
   busy, sweep). On x86-64 and aarch64 builds the sweeper's
   nd_os_barrier_all is the fence between the store of busy and the load
   of sweep here; TSan builds, which cannot see that barrier, order both
   sides with sequentially consistent operations instead. */
static inline void nd_heap_enter(nd_heap *h)
{
    if (h->shared || h->depth++ != 0)
        return;
    /* It may wait for a sweeper, which holds the threads' lock and takes
       later ones: its caller must hold none of those (lock.h). */
    nd_lock_may_take(ND_LOCK_ID_threads);
#ifdef ND_TSAN
    __atomic_store_n(&h->busy, 1, __ATOMIC_SEQ_CST);
    if (nd_unlikely(__atomic_load_n(&h->sweep, __ATOMIC_SEQ_CST) != 0))
        nd_heap_wait_sweep(h);
#else
    __atomic_store_n(&h->busy, 1, __ATOMIC_RELAXED);
    __asm__ volatile("" ::: "memory");
    if (nd_unlikely(__atomic_load_n(&h->sweep, __ATOMIC_ACQUIRE) != 0))
        nd_heap_wait_sweep(h);
#endif
}

static inline void nd_heap_exit(nd_heap *h)
{
    if (!h->shared && --h->depth == 0)
        __atomic_store_n(&h->busy, 0, __ATOMIC_RELEASE);
}

/* Sweeps h, the plain heap of a live thread that made no pass for
   ND_SWEEP_IDLE_DELAYS purge delays, from another thread: remote frees
   taken back, every page with no block out retired (kept pages too), its
   spare segments given back, every pending purge made. False, nothing
   done, if h's owner is in a call into this layer (busy), another sweep
   holds it, or the kernel has no barrier for the handshake
   (nd_os_barrier_all). The caller holds the threads' lock (thread.c). */
bool nd_heap_sweep_idle(nd_heap *h, uint64_t now) nd_hidden;

/* The counters of class c in heap h. */
#define nd_heap_cstats(h, c) (&(h)->cstats[(c)])

/* Sets up h (zeroed memory) for (node, bound), owned by thread `tid` (or
   ND_TID_SHARED: a shared heap, used under its lock), counting per class
   in cstats[ND_CLASS_COUNT] (zeroed; its thread cache's, which keeps them
   off the pages a thread that uses a few classes writes: tcache.h). */
void nd_heap_init(nd_heap *h, uintptr_t tid, int node, bool bound, nd_class_counters *cstats) nd_hidden;

/* Fills out[0..n) with blocks of class cls from h's pages (out has room
   for max >= n: blocks other threads gave back may fill it up to max, see
   nd_page_take); returns how many (0 only when memory ran out: errno =
   ENOMEM). */
size_t nd_heap_take_blocks(nd_heap *h, unsigned cls, void **out, size_t n, size_t max) nd_hidden;
/* Would h's next block of class cls touch memory none of its pages of
   the class had: carved past what carving reached in a page that never
   held blocks before (nd_page_would_fault), or a new page when none of
   the segments a new page comes from has a free page with memory in it?
   False while remote frees wait to be drained. */
bool nd_heap_would_fault(nd_heap *h, unsigned cls) nd_hidden;
/* The first free block of class cls of h's first page of the class (its
   free list's head) if its address is a multiple of align (a power of
   two), taken; NULL when there is none or it is not so aligned. */
void *nd_heap_take_free_aligned(nd_heap *h, unsigned cls, uintptr_t align) nd_hidden;
/* Fills out[0..n) with blocks of class cls already free in h's pages
   (their free lists, from the queue's first page on), and nothing else: no
   block carved, no page taken; returns how many (maybe 0). */
size_t nd_heap_take_free(nd_heap *h, unsigned cls, void **out, size_t n) nd_hidden;
/* Gives `count` blocks of page pg, linked head..tail, back (owner side):
   the page leaves the full queue, or retires when no block is out. */
void   nd_heap_return_blocks(nd_heap *h, nd_page *pg, nd_block *head, nd_block *tail, uint32_t count) nd_hidden;
/* Does h drop pg's blocks when its last block out comes back (pg then
   kept, recarved from its start when next used, or retired), rather than
   leave them linked on its free list (the last page of its class, not
   parked as full, of a heap of its own: left as it is, not set up again
   for every round)? Owner only. */
static inline bool nd_heap_drops_emptied(const nd_heap *h, const nd_page *pg)
{
    return pg->in_full || h->pages[pg->cls].count > 1 || h->shared;
}
/* Gives back the last `count` blocks of h's page pg, which drops them
   (nd_heap_drops_emptied), unlinked: the caller checked each block's mark
   and wrote no free-list link, as the page keeps none (kept or retired).
   count must be pg's used count (else heap misuse: abort). */
void   nd_heap_return_all(nd_heap *h, nd_page *pg, uint32_t count) nd_hidden;
/* The owner frees block p (a block start of its page pg, marked free) straight
   to the page. */
void   nd_heap_free_local(nd_heap *h, nd_page *pg, void *p) nd_hidden;
/* Any thread frees block p of page pg, which another heap owns (or nobody,
   when abandoned): onto the page's remote list, notifying the owner if the
   page waits on its full queue. */
void   nd_heap_free_remote(nd_page *pg, void *p) nd_hidden;
/* The same for a chain of marked blocks of pg, linked head..tail (a
   thread cache giving back blocks of other heaps' pages). */
void   nd_heap_free_remote_chain(nd_page *pg, nd_block *head, nd_block *tail) nd_hidden;
/* Blocks of class cls, of `bound` memory or plain, that sat untaken in a
   transfer store through a purge delay, on their way home (tcache.c: the
   store's sweep and a forced collect): each gives back its whole OS pages
   past its first 16 bytes, as the free-block pass does for the blocks on
   a page's free list (heap.c: nd_heap_purge_free_blocks; the same
   classes, memory and modes). Those sent to the remote list of a page
   whose thread no longer runs kept their memory until it ran again. */
void   nd_heap_purge_idle_blocks(void *const *blocks, size_t n, unsigned cls, bool bound) nd_hidden;

/* Counts slow-path work (the heap's epoch). */
static inline void nd_heap_tick(nd_heap *h) { nd_store_relaxed(&h->epoch, h->epoch + 1); }   /* (a sweep reads it) */
/* Maintenance: notified pages, adoption of abandoned segments, purging
   (the free pages past their delay, and the free blocks of pages in use
   that sat on their page's free list since the last pass: heap.c,
   nd_heap_purge_free_blocks), giving back segments kept for reuse (all
   of them when force). */
void   nd_heap_maintain(nd_heap *h, uint64_t now, bool force) nd_hidden;
/* nodal_collect: remote frees taken back, empty pages retired, everything
   kept for reuse given back. */
void   nd_heap_collect(nd_heap *h, uint64_t now, bool purge_all) nd_hidden;
/* A heap whose thread exited and whose record waits for the next thread
   (thread.c): remote frees taken back, empty pages retired, segments kept
   for reuse given back to the node (which purges them after the delay);
   its partly used pages stay, and their free blocks with them for the next
   thread (their memory goes back at its passes, or when the record is
   taken apart: abandon), up to ND_HEAP_KEPT_MAX of them: past it, the free
   blocks of 8 KiB and more give back their memory now, as at a forced
   collect (heap.c: nd_heap_free_block_bytes). The purges due by now go to
   the kernel (nd_heap_idle_purge): bench/idlewait's worker, which freed
   its 800 blocks of 100,000 B a second before it exited, left 5.5 MiB
   resident 300 ms after its exit, its retired pages waiting for the
   record's next pass (2.7 now; glibc 2.0). */
void   nd_heap_trim(nd_heap *h, uint64_t now) nd_hidden;
/* The pass of a heap no thread runs (a pooled record's: thread.c), by
   whichever thread holds the record: remote frees that emptied pages
   taken back and those pages retired, then the purges due by their
   deadline alone (the epochs of nd_heap_purge count the owner's work,
   which has stopped), so memory freed before the thread exited goes back
   a purge delay after its free, as a live thread's does, not when the
   record is taken apart (ND_POOL_WAIT purge delays later). At the exit
   too (nd_heap_trim). */
void   nd_heap_idle_purge(nd_heap *h, uint64_t now) nd_hidden;
/* Adds all that h holds back of its pages set up and retired to the
   process's gauges (above: gauge_pages; owner only). */
void   nd_heap_gauge_flush(nd_heap *h) nd_hidden;
/* Adds to *active and pages[c] what h holds back from the gauges (a
   report's read of another thread's heap: racy whole words). */
void   nd_heap_gauge_pending(const nd_heap *h, long *active, long *pages) nd_hidden;
/* Retires every kept page of h (above): back to its segment, as an empty
   page goes, its memory purged after the delay. */
void   nd_heap_retire_kept(nd_heap *h) nd_hidden;
/* Purges retired pages of h's segments: those past their delay, or all. */
void   nd_heap_purge(nd_heap *h, uint64_t now, bool all) nd_hidden;

/* Out of address space (a mapping refused, an RLIMIT_AS): h's small and
   medium segments give back what no block holds (nd_seg_release_pages:
   their free pages, their pages' ends past the blocks of their class),
   but the node's reserve; by h's owner only. The bytes given back. */
size_t nd_heap_release(nd_heap *h) nd_hidden;
/* Takes an abandoned segment over; false if it turned out empty and was
   given back (s must not be used then). */
bool   nd_heap_adopt_segment(nd_heap *h, nd_segment *s) nd_hidden;
/* Gives everything h holds back: empty pages retired, kept segments
   released, the rest of its segments abandoned to their node. The thread
   cache must have been flushed first. */
void   nd_heap_abandon(nd_heap *h) nd_hidden;
/* Takes up to `max` segments of the abandoned list of h's node and kind
   back for a moment into h, a shared heap with no segment (a cache made
   for this: no kept pages, no spares): the pages whose blocks all came
   back since their thread exited are given back, the segments left with
   no page in use go to the node's cache, the free memory of the others
   is purged and they are abandoned again. For a forced collect
   (nodal_collect(1), malloc_trim) and, every few purge delays, one
   thread's maintenance (thread.c: ND_SWEEP_ABANDONED_DELAYS): a node's
   memory that threads freed but never allocate stays abandoned otherwise
   (no heap of its node and kind adopts it). The number of segments
   taken. */
size_t nd_heap_sweep_abandoned(nd_heap *h, size_t max) nd_hidden;
/* The thread of plain heap h moved to a CPU of node `node`: everything h
   holds is handed back to its old node (empty pages and segments returned
   to the OS first, then kept in the node's cache, whose segments are all
   purged; segments still holding
   blocks abandoned to the node, for its threads to adopt first), and h
   starts over, empty, as a heap of plain memory of `node`. The thread
   cache must have been flushed first. Returns the pages handed back. */
size_t nd_heap_leave(nd_heap *h, int node) nd_hidden;
/* In a child after fork (single-threaded, h consistent: its owner is the
   forking thread, pooled, or a locked shared heap): finishes the
   notifications that threads lost in the fork had begun on h's full pages. */
void   nd_heap_fork_child(nd_heap *h) nd_hidden;

/* Debug check of the invariants above; true when they hold. Cost: O(pages
   + blocks). */
bool   nd_heap_is_valid(const nd_heap *h) nd_hidden;

#endif /* ND_HEAP_H */
