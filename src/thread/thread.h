/*
 * thread.h - a thread's life: the thread-local words the fast paths read,
 * a thread's start and exit (its record pooled for the next thread on its
 * node, or taken apart), its thread caches (one for plain memory, one per
 * node it asked for), its periodic maintenance, fork, and the statistics
 * of the records. (Which block a slow path hands out is route.h's; the
 * heaps of threads without caches are shared.h's.)

 */
#ifndef ND_THREAD_H
#define ND_THREAD_H

#include <stdbool.h>
#include <stdint.h>
#include "config.h"
#include "counters.h"
#include "os.h"
#include "tcache.h"
#include "tier.h"

enum { ND_THREAD_NEW = 0, ND_THREAD_LIVE, ND_THREAD_DEAD, ND_THREAD_POOLED, ND_THREAD_PASS };

/*
 * A thread's record: its tcaches (and through them its heaps), kept whole
 * after the thread exits for the next thread that starts on the same node
 * (ND_THREAD_POOLED), so that a program that starts a thread per task
 * reuses the last one's pages and caches instead of building new ones.
 * Invariants: the records on the list (next/prev, under nd_threads_lock)
 * are LIVE (a running thread's) or POOLED (on its node's pool too, through
 * pool_next, pooled_at set, no thread using it: its caches keep their
 * blocks for the next thread), or PASS (a pooled record off its pool for
 * a moment while another thread gives its heaps their pass: thread.c,
 * nd_thread_pool_age), or DEAD (off its pool, being taken apart); plain == the plain tcache (nd_tls_tc while it lives); node_tc[n] ==
 * the tcache for memory bound to node n, or the static empty tcache (every
 * fast path misses) when there is none; node_tc is nd_thread_no_node_tc
 * (thread.c: ND_MAX_NODES pointers to the static empty tcache, shared by
 * every record, never written) until the thread makes its first node
 * cache, then an array of the record's own (meta, the same size), kept
 * and freed with the record; nd_tls_node_tc == nd_tls_thread->node_tc
 * (the node fast paths' view, one load as the record's was); every tcache's heap has the
 * record's id (a thread that takes a pooled record takes its id too);
 * seen_node is the node with memory that serves the CPU the thread ran on
 * at its last look (follow_thread): plain's heap is of that node unless the
 * thread did not follow the move (plain's heap.away then); look_cpu is -1
 * or a CPU of seen_node's (one whose memory node it is) that a look found
 * the thread on, so a look that finds it there again needs no other.
 * plain is watched (nd_tcache_is_watched) only after a move followed at
 * watch_until - ND_WATCH_MS, when plain had counted watch_from requests,
 * until the first maintenance check after both ND_WATCH_MS and
 * ND_WATCH_REQUESTS more (a pooled record's next thread starts unwatched).
 * tier_tc[t] is node_tc[nd_tier_by_cpu[tier_cpu][t]] (the tier call's cache
 * for a thread on CPU tier_cpu, resolved by nd_thread_tier_resolve) or the
 * static empty (or dead) tcache, whose bins are empty: a record whose
 * tier_cpu was never resolved (or whose thread exited) has only those, so
 * whatever CPU number a tier call reads, it takes the slow path.
 * The tier calls' counts: tier_stats (slow paths) plus the tier_hits of
 * tier_tc's bins (fast path) make the record's totals per tier; while
 * tier_node >= 0 (an open period: a CPU node the calls run on), what they
 * grew since tier_open belongs to tier_node, and tier_tc changes only by
 * closing that period (the growth added to the process's counts per CPU
 * node) and opening another; tier_node == -1 implies every tier_tc is the
 * empty one (a period may be open with empty caches: no rseq area).
 */
typedef struct nd_aligned(ND_CACHE_LINE) nd_thread {
    nd_tcache       **node_tc;          /* [ND_MAX_NODES]: the shared empty array, or the record's own
                                           (made at the first node cache): a record of 256 bytes, not
                                           768, so the records of threads that never make one (most)
                                           take a third of the pages */
    nd_tcache        *plain;
    uint8_t           state;
    uint32_t          gc_countdown;     /* slow-path events until the next maintenance check */
    int16_t           seen_node;        /* node (with memory) of the CPU the thread was last seen on */
    int32_t           look_cpu;         /* a CPU (rseq area) seen on seen_node since it was set, -1 none */
    int16_t           tier_node;        /* the CPU node of the open period of tier counts, -1 none */
    int32_t           tier_cpu;         /* the CPU tier_tc was resolved for */
    nd_tcache        *tier_tc[ND_TIER_COUNT];   /* the tier calls' caches from tier_cpu */
    nd_tier_counters  tier_stats;       /* the tier calls' slow-path counts (owner only; counters.h) */
    nd_tier_counters  tier_open;        /* the totals when the period opened */
    uint64_t          maintain_at;      /* ms */
    uint64_t          watch_until;      /* ms: plain's watch (follow_thread, tcache.h: ND_WATCH_MS) lasts at least until then */
    uint64_t          watch_from;       /* plain's requests (nd_tcache_requests) at the move: the watch lasts ND_WATCH_REQUESTS more */
    uint64_t          pooled_at;        /* ms; POOLED only */
    uint64_t          swept_for;        /* the maintain_at its plain heap was last swept idle at (under the threads' lock) */
    struct nd_thread *next, *prev;      /* list of records (live and pooled) */
    struct nd_thread *pool_next;        /* POOLED: its node's pool, newest first */
} nd_thread;
_Static_assert(sizeof(nd_thread) <= 256, "a thread's record: four cache lines, its node caches' array apart");

/* The fast paths' view of the calling thread: its plain tcache and its
   record. Before a thread's first call they are static empty ones (every
   fast path misses, so no "initialised yet?" test is needed); after its
   exit, static dead ones. */
extern __thread nd_tcache *nd_tls_tc nd_hidden;
extern __thread nd_thread *nd_tls_thread nd_hidden;
/* nd_tls_thread->node_tc, for the node fast paths (alloc.h, free.h): a
   TLS load and an indexed one, as through the record. */
extern __thread nd_tcache **nd_tls_node_tc nd_hidden;
extern __thread uintptr_t  nd_tls_tid nd_hidden;

/* The calling thread's id: a TLS word (0 before start and after exit); an
   id belongs to a thread record and passes with it to a later thread. */
static inline uintptr_t nd_tid(void) { return nd_tls_tid; }

void nd_thread_process_init(void) nd_hidden;
/* The calling thread's plain tcache, started if needed; NULL if it cannot
   have one (torn down, starting, or out of memory): use a shared heap. */
nd_tcache *nd_thread_start(void) nd_hidden;
/* The calling (started) thread's tcache for memory bound to `node`, created
   on first use; NULL with errno = EINVAL (no such node) or ENOMEM. */
nd_tcache *nd_thread_node_tcache(int node) nd_hidden;
/* The calling thread's tcache for memory of segment s's kind, if it has (or
   can make) one; NULL otherwise. */
nd_tcache *nd_thread_tcache_for(const nd_segment *s) nd_hidden;
/* The calling thread's tcache that may keep a block of segment s that
   another heap owns, freed by this thread: one for the same kind of memory
   (bound to the same node, or plain memory of the same node), if the thread
   has it already; NULL otherwise. may_start: a thread that has none yet
   gets one after a few such frees. */
nd_tcache *nd_thread_cache_for_free(const nd_segment *s, bool may_start) nd_hidden;
/* secure=1: the calling thread's plain tcache, which keeps the blocks it
   frees in quarantine (started if the thread had none yet); NULL if it
   cannot have one. */
nd_tcache *nd_thread_quarantine(void) nd_hidden;
/* The tier calls' caches (tier_tc) for the CPU the calling thread runs on,
   as the rseq area names it; nothing when there is none, or the thread has
   not started. */
void nd_thread_tier_resolve(void) nd_hidden;
/* A block of `bytes` that a tier call of tier t made on a CPU of node
   `from` returned (the slow paths'; the fast path counts into its bins). */
void nd_thread_count_tier(int t, size_t bytes, int from) nd_hidden;
/* pthread key destructor. */
void nd_thread_done(void *arg) nd_hidden;

/* follow_thread's short way, for a request of class c whose bin's tick
   ran out with a block in the bin (nd_tcache_tick_out). The result:
   ND_LOOK_NO, the whole slow path must run (tc is not the calling thread's
   plain cache, the tick ran out for its maintenance roll-over or a
   sample); ND_LOOK_SAME, it ran out only to look at the CPU's node and the
   thread runs on the CPU of its last look (*cpu): the caller finishes the
   request with nd_tcache_look_pop; ND_LOOK_CPU, the same but on another
   CPU (*cpu, -1 without an rseq area): nd_thread_look_node decides. */
enum { ND_LOOK_NO, ND_LOOK_SAME, ND_LOOK_CPU };
static inline int nd_thread_look(nd_tcache *tc, unsigned c, int *cpu)
{
    nd_thread *t = nd_tls_thread;
    if (t->state != ND_THREAD_LIVE || tc != t->plain || !nd_tcache_look_due(tc, c))
        return ND_LOOK_NO;
    nd_assert2(nd_tcache_tick_out(tc, c) && !tc->heap.bound && !tc->heap.shared);
    *cpu = nd_os_rseq_cpu_off != 0 ? nd_os_current_cpu_fast() : -1;
    return nd_likely(*cpu >= 0 && *cpu == t->look_cpu) ? ND_LOOK_SAME : ND_LOOK_CPU;
}
/* After ND_LOOK_CPU: is the calling thread still on seen_node (the CPU's
   node, sched_getcpu's without an rseq area)? Then cpu becomes the CPU of
   its last look. False: it moved, and the whole slow path follows it. */
bool nd_thread_look_node(int cpu) nd_hidden;
/* A slow-path event of tc (its heap's clock; maintenance every so often). */
void  nd_thread_tick(nd_tcache *tc) nd_hidden;
/* A request of class c made on a slow path of tc (counted as the fast
   path's are; maintenance when the count rolls over). True when the heap
   profile samples this request (prof=1). Inline, the tick's common case
   (nd_tcache_count_quick); nd_thread_count_request_out, the others. */
bool  nd_thread_count_request_out(nd_tcache *tc, unsigned c) nd_hidden;
static inline bool nd_thread_count_request(nd_tcache *tc, unsigned c)
{
    return !nd_tcache_count_quick(tc, c) && nd_thread_count_request_out(tc, c);
}
/* prof=1 has just started: the calling thread's caches count to their
   first samples (caches made later start so). */
void  nd_thread_prof_rearm(void) nd_hidden;
/* nodal_collect: the calling thread's caches and heaps (if it has any), large
   segments, pooled thread records (those past their wait, or all), then
   the nurseries (nursery.h; at once with purge_all). */
void  nd_thread_collect(bool purge_all) nd_hidden;
/* malloc_trim: nodal_collect(1) (the calling thread's caches and heaps,
   the large pools, the nurseries, the node caches, everything purged) if
   it is the thread's first call, or purge_delay has passed since its
   last call that collected, or its caches and heaps hold
   ND_TRIM_WORTH bytes or more to give back (their cached blocks, their
   free pages waiting for their purge, their kept pages); else nothing (no system call).
   1 if memory was given back to the OS meanwhile, else 0 (glibc's). */
int   nd_thread_trim(void) nd_hidden;
/* A collect for less than this is not worth its system calls and the page
   faults that take the memory back: 2 MiB, twice a thread cache's budget
   (tcache_total), so that a cache's blocks alone, its normal state, never
   make a call worth it: it takes a megabyte of free pages too.
   stress-ng --malloc 1 --malloc-ops 200000, which calls malloc_trim every
   8 requests of up to 64 KiB (25,000 calls): system calls that purge
   (strace -c, 3 runs) with 1 MiB 231-355, with 2 MiB 107-119, with 4 MiB
   105-124; a full collect at every call (main 35b5b2d), 3,708. */
#define ND_TRIM_WORTH ((size_t)2 << 20)
/* Purge delays between two sweeps of the abandoned segments no heap
   adopts, by one thread's maintenance (thread.c:
   nd_thread_sweep_abandoned_due). */
#define ND_SWEEP_ABANDONED_DELAYS 8

/* Statistics counted on behalf of the calling thread (or of threads
   without a heap, atomically). */
/* pushed: sent to the page at once (else it waits in this thread's cache). */
void nd_thread_count_remote_free(unsigned cls, bool pushed) nd_hidden;
/* A large (huge = false) or huge block of `bytes` freed. */
void nd_thread_count_free(bool huge, size_t bytes) nd_hidden;
/* A huge block made of a large block where it was (realloc: alloc.c),
   counted as a huge block allocated of `bytes`. */
void nd_thread_count_huge_alloc(size_t bytes) nd_hidden;
void nd_thread_count_large_resize(long delta) nd_hidden;
/* Sums over the records of live, pooled and exited threads into
   cls[ND_CLASS_COUNT], tot and the tier counts tier_from[tier][CPU node]
   (the shared heaps: shared.h); *threads = live threads, *pooled = pooled
   records; held_active != NULL: adds to *held_active and held_pages[c]
   what the heaps of live and pooled threads hold back from the gauges of
   pages in use (heap.h: gauge_pages), which a report adds to them. */
void nd_thread_stats_sum(nd_snap_class *cls, nd_snap_totals *tot, nd_snap_tier (*tier_from)[ND_MAX_NODES],
                         size_t *threads, size_t *pooled, long *held_active, long *held_pages) nd_hidden;

/* fork(), in the child, every lock held: only the forking thread survives
   (the others' counters are folded). */
void nd_thread_fork_child(void) nd_hidden;

/* Debug check of every tcache of the calling thread. */
bool nd_thread_is_valid(void) nd_hidden;

#endif /* ND_THREAD_H */
