/*
 * thread.c - a thread's life (see thread.h): its start (a new record or a
 * pooled one), its thread caches, its periodic maintenance, its exit (the
 * record pooled, or taken apart), fork, and the statistics of the records.
 *
 * Locks (lock.h): threads (the list of records, the pools, the statistics
 * of exited threads).
 */
#include "thread.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include "large.h"
#include "list.h"
#include "lock.h"
#include "meta.h"
#include "node.h"
#include "nursery.h"
#include "options.h"
#include "os.h"
#include "secure.h"
#include "slab.h"
#include "tight.h"
#include "topo.h"

/* ---- the static tcaches and records, and TLS ------------------------------ */

/* The cache of a thread without one of its own: one that has not started
   (nd_thread_empty's) or has exited (nd_thread_dead's: both records' caches
   are this one; the records' states tell them apart). Its kind is one no
   page has: every free of such a thread takes the slow path. It is all
   zero (.bss): its bins have no slots (tcache.h: NULL, NULL, NULL), so a
   process holds no page of it for reading it (29 KiB of .data did
   before), only the page of its kind word, which start-up writes (no page
   exists before, and no thread can be reading it for an exit yet). One
   cache for both, not one each: the second's kind word was a page of
   .bss more in every process. */
static nd_tcache nd_tcache_empty;

/* The node caches of a record that has none (nd_thread.node_tc): never
   written, shared by every such record. */
static nd_tcache *nd_thread_no_node_tc[ND_MAX_NODES] = { [0 ... ND_MAX_NODES - 1] = &nd_tcache_empty };

static nd_thread nd_thread_empty = {
    .node_tc = nd_thread_no_node_tc,
    .plain = &nd_tcache_empty,
    .state = ND_THREAD_NEW,
    .tier_node = -1,
    .tier_tc = { [0 ... ND_TIER_COUNT - 1] = &nd_tcache_empty },
};
static nd_thread nd_thread_dead = {
    .node_tc = nd_thread_no_node_tc,
    .plain = &nd_tcache_empty,
    .state = ND_THREAD_DEAD,
    .tier_node = -1,
    .tier_tc = { [0 ... ND_TIER_COUNT - 1] = &nd_tcache_empty },
};

__thread nd_tcache *nd_tls_tc = &nd_tcache_empty;
__thread nd_thread *nd_tls_thread = &nd_thread_empty;
__thread nd_tcache **nd_tls_node_tc = nd_thread_no_node_tc;
__thread uintptr_t  nd_tls_tid;
static __thread uint8_t nd_tls_starting;

static uintptr_t nd_next_tid = ND_TID_FIRST;   /* below: reserved (shared heaps, nurseries) */
static pthread_key_t nd_thread_key;

#define nd_threads_lock ND_LOCK(threads, 0)   /* lock.h */
static ND_LIST(nd_thread) nd_threads;   /* live and pooled records, newest first */

#define ND_GC_EVENTS 256

/* Pools of records of exited threads, per node (plain tcache's node), newest
   first, under nd_threads_lock; nd_pool_count (all pools) is also read
   without it. A record waits at most ND_POOL_WAIT purge delays, its heaps
   given their pass every purge delay meanwhile by other threads'
   maintenance (nd_thread_pool_age), then maintenance takes it apart as an
   exit used to: its heaps abandoned (their live blocks' segments wait on
   the node for an owner), its caches freed. */
#define ND_POOL_MAX  16
#define ND_POOL_WAIT 10
static nd_thread *nd_pool[ND_MAX_NODES];
static int  nd_thread_tcaches(const nd_thread *t, nd_tcache **out);
static nd_hot void nd_fold_dead_locked(const nd_tcache *tc);
static uint32_t   nd_pool_len[ND_MAX_NODES];
static uint32_t   nd_pool_count;

/* Statistics of exited threads (under nd_threads_lock), and counts made by
   threads without a heap (atomics). */
static nd_snap_class      nd_dead_cls[ND_CLASS_COUNT];
static nd_snap_totals     nd_dead_tot;
static nd_class_counters  nd_orphan_cls[ND_CLASS_COUNT];
static nd_thread_counters nd_orphan;
/* Tier calls per CPU node: the closed periods of records (nd_thread), and
   the calls of threads without a record (atomics). */
static nd_tier_node_counters nd_tier_done;
static void nd_thread_tier_close(nd_thread *t);

/* ---- a thread's caches ------------------------------------------------------ */

/* A thread cache of the calling thread's for (node, bound), with its
   secure=1 state; NULL when out of memory. */
static nd_tcache *nd_thread_cache_new(int node, bool bound)
{
    nd_tcache *tc = nd_tcache_create(nd_tls_tid, node, bound, false);
    if (tc != NULL && !nd_secure_attach(tc)) {
        nd_tcache_destroy(tc);
        tc = NULL;
    }
    return tc;
}

/* Every block tc holds back to its pages (secure=1: its random bins and
   quarantine too). */
static void nd_thread_cache_flush(nd_tcache *tc)
{
    nd_secure_flush(tc);
    nd_tcache_flush_all(tc);
}

static void nd_thread_cache_destroy(nd_tcache *tc)
{
    nd_secure_detach(tc);
    nd_tcache_destroy(tc);
}

/* ---- threads ------------------------------------------------------------- */

void nd_thread_process_init(void)
{
    nd_store_relaxed(&nd_tcache_empty.kind, ND_KIND_NO_PAGE);
    pthread_key_create(&nd_thread_key, nd_thread_done);
}

/* A pooled record for a thread starting on `node`, now LIVE; NULL if none. */
static nd_thread *nd_thread_pool_take(int node)
{
    if (nd_load_relaxed(&nd_pool_count) == 0)
        return NULL;
    nd_lock(nd_threads_lock);
    nd_thread *t = nd_pool[node];
    if (t != NULL) {
        nd_pool[node] = t->pool_next;
        nd_pool_len[node]--;
        nd_store_relaxed(&nd_pool_count, nd_pool_count - 1);
        t->pool_next = NULL;
        t->state = ND_THREAD_LIVE;
    }
    nd_unlock(nd_threads_lock);
    return t;
}


/* Puts record t (its pooled_at set) on its node's pool, in its place by
   pooled_at (newest first: an exiting thread's goes first, one back from
   its pass, nd_thread_pool_age, where it was): false when the pool is
   full. */
static bool nd_thread_pool_insert(nd_thread *t)
{
    int node = t->plain->heap.node;
    bool pooled = false;
    nd_lock(nd_threads_lock);
    if (nd_pool_len[node] < ND_POOL_MAX) {
        nd_thread **link = &nd_pool[node];
        while (*link != NULL && (*link)->pooled_at > t->pooled_at)
            link = &(*link)->pool_next;
        t->pool_next = *link;
        *link = t;
        t->state = ND_THREAD_POOLED;
        nd_pool_len[node]++;
        nd_store_relaxed(&nd_pool_count, nd_pool_count + 1);
        pooled = true;
    }
    nd_unlock(nd_threads_lock);
    return pooled;
}

/* Pools the record of the calling thread, which is exiting: false when
   its node's pool is full. */
static bool nd_thread_pool_put(nd_thread *t)
{
    t->pooled_at = nd_os_now_ms();
    return nd_thread_pool_insert(t);
}

/* Takes apart a record no thread uses (an exited thread's): its caches
   flushed, its heaps abandoned, its counters folded into the totals of exited threads,
   its caches and itself freed. */
static nd_hot void nd_thread_dismantle(nd_thread *t)
{
    nd_tcache *tcs[ND_MAX_NODES + 1];
    int n = nd_thread_tcaches(t, tcs);
    for (int i = 0; i < n; i++) {
        nd_thread_cache_flush(tcs[i]);
        nd_heap_abandon(&tcs[i]->heap);
    }
    nd_lock(nd_threads_lock);
    nd_list_remove(&nd_threads, t);
    for (int i = 0; i < n; i++)
        nd_fold_dead_locked(tcs[i]);
    t->state = ND_THREAD_DEAD;
    nd_unlock(nd_threads_lock);
    for (int i = 0; i < n; i++)
        nd_thread_cache_destroy(tcs[i]);
    if (t->node_tc != nd_thread_no_node_tc)
        nd_meta_free(t->node_tc, ND_MAX_NODES * sizeof *t->node_tc);
    nd_meta_free(t, sizeof(nd_thread));
}

/* Puts a record back on its node's pool after its pass
   (nd_thread_pool_age); takes it apart if the pool filled meanwhile. */
static void nd_thread_pool_return(nd_thread *t)
{
    if (!nd_thread_pool_insert(t))
        nd_thread_dismantle(t);
}

/* Takes apart the pooled records that waited their time (all of them if
   `all`), and gives the others' heaps their pass when it is due (every
   purge delay, as the record's thread did: maintain_at): the memory its
   thread freed goes back a purge delay after the free, whether or not the
   thread exited meanwhile. A record in its pass is off its pool (PASS: no
   thread can take it, a report counts it as pooled, and a fork meanwhile
   leaves it to the child as lost, as one being taken apart). */
static nd_hot void nd_thread_pool_age(uint64_t now, bool all)
{
    if (nd_load_relaxed(&nd_pool_count) == 0)
        return;
    long delay = nd_opt(ND_OPT_purge_delay);
    uint64_t wait = (uint64_t)delay * ND_POOL_WAIT;
    nd_thread *victims = NULL, *passes = NULL;
    nd_lock(nd_threads_lock);
    for (int node = 0; node < ND_MAX_NODES; node++) {
        /* Newest first: the ones due are a tail. */
        nd_thread **link = &nd_pool[node];
        while (*link != NULL && !all && (*link)->pooled_at + wait > now) {
            nd_thread *t = *link;
            if (t->maintain_at > now) {
                link = &t->pool_next;
                continue;
            }
            *link = t->pool_next;
            nd_pool_len[node]--;
            nd_store_relaxed(&nd_pool_count, nd_pool_count - 1);
            t->state = ND_THREAD_PASS;
            t->pool_next = passes;
            passes = t;
        }
        while (*link != NULL) {
            nd_thread *t = *link;
            *link = t->pool_next;
            nd_pool_len[node]--;
            nd_store_relaxed(&nd_pool_count, nd_pool_count - 1);
            t->state = ND_THREAD_DEAD;   /* off the pool, still on the list */
            t->pool_next = victims;
            victims = t;
        }
    }
    nd_unlock(nd_threads_lock);
    while (passes != NULL) {
        nd_thread *t = passes;
        passes = t->pool_next;
        t->maintain_at = now + (uint64_t)(delay > 0 ? delay : 1);
        nd_tcache *tcs[ND_MAX_NODES + 1];
        int n = nd_thread_tcaches(t, tcs);
        for (int i = 0; i < n; i++) {
            nd_heap_idle_purge(&tcs[i]->heap, now);
            nd_assert2(nd_tcache_is_valid(tcs[i]));
        }
        nd_thread_pool_return(t);
    }
    while (victims != NULL) {
        nd_thread *t = victims;
        victims = t->pool_next;
        nd_thread_dismantle(t);
    }
}

/* Upkeep of the process that no thread's own maintenance may reach in a
   program whose threads are all short-lived (they exit before their first
   maintenance): pooled records aged, large segments purged, node caches and
   freed huge mappings swept. Run as threads start and exit, by one of them
   at a time, at most twice per purge delay. */
static uint64_t nd_upkeep_at;

/* Abandoned segments of a kind no live heap adopts (a heap adopts a few
   of its own kind at each maintenance: heap.c, nd_heap_reclaim) keep the
   pages their blocks left after the abandon (remote frees into them) set
   up and resident: node-bound memory whose threads exited, freed by
   threads that never use that node's bound memory (a memory-only node's
   above all). A forced collect sweeps them (nd_thread_collect); so does
   one thread's maintenance every ND_SWEEP_ABANDONED_DELAYS purge delays,
   for programs that never call one. Every kind: a sweep takes a segment
   from the list, gives back its empty pages and purges its free ones, and
   abandons it again while a block is out (thread.h:
   ND_SWEEP_ABANDONED_DELAYS). */
static uint64_t nd_sweep_abandoned_at;

/* The n abandoned segments of (node, bound) swept by a cache made for it
   (heap.h: nd_heap_sweep_abandoned). Cold: only a program whose threads
   left segments behind runs it. */
static void nd_thread_sweep_abandoned(int node, bool bound, size_t n)
{
    nd_tcache *tc = nd_tcache_create(ND_TID_SHARED, node, bound, true);
    if (tc == NULL)
        return;   /* no memory for it: they wait for a heap of theirs */
    nd_heap_sweep_abandoned(&tc->heap, n);
    nd_tcache_destroy(tc);
}

/* Every node's and kind's abandoned list, as many segments as each holds
   now (its count read here, not in the cold sweep). */
static nd_hot void nd_thread_sweep_every_abandoned(void)
{
    for (int i = 0; i < nd_topo.mem_count; i++)
        for (int bound = 0; bound < 2; bound++) {
            size_t n = nd_node_abandoned_count(nd_topo.mem_ids[i], bound);
            if (n != 0)
                nd_thread_sweep_abandoned(nd_topo.mem_ids[i], bound, n);
        }
}

static nd_hot void nd_thread_sweep_abandoned_due(uint64_t now)
{
    uint64_t at = nd_load_relaxed(&nd_sweep_abandoned_at);
    if (now < at)
        return;
    long delay = nd_opt(ND_OPT_purge_delay);
    uint64_t next = now + (uint64_t)(delay > 0 ? delay : 1) * ND_SWEEP_ABANDONED_DELAYS;
    if (nd_cas_strong_acq_rel(&nd_sweep_abandoned_at, &at, next))   /* else another thread sweeps */
        nd_thread_sweep_every_abandoned();
}

static nd_hot void nd_thread_upkeep(void)
{
    uint64_t now = nd_os_now_ms();
    uint64_t at = nd_load_relaxed(&nd_upkeep_at);
    if (now < at)
        return;
    long delay = nd_opt(ND_OPT_purge_delay);
    uint64_t next = now + (uint64_t)(delay > 1 ? delay / 2 : 1);
    if (!nd_cas_strong_acq_rel(&nd_upkeep_at, &at, next))
        return;   /* another thread does it */
    nd_thread_pool_age(now, false);
    nd_large_maintain(now, false);
    nd_node_maintain(ND_SWEEP_PERIODIC);
    nd_thread_sweep_abandoned_due(now);
}

nd_hot nd_tcache *nd_thread_start(void)
{
    nd_thread *t = nd_tls_thread;
    if (nd_likely(t->state == ND_THREAD_LIVE))
        return nd_tls_tc;
    if (t->state == ND_THREAD_DEAD || nd_tls_starting)
        return NULL;
    nd_tls_starting = 1;
    int node = nd_topo_local_mem_node(nd_topo_current_node());
    t = nd_thread_pool_take(node);
    if (t != NULL) {
        /* The record of an exited thread: its caches, heaps and id. */
        nd_tcache *tc = t->plain;
        nd_tls_tid = tc->heap.tid;
        t->gc_countdown = ND_GC_EVENTS;
        t->seen_node = (int16_t)node;
        t->look_cpu = -1;
        /* maintain_at stays the record's: its heaps and caches are
           maintained every purge delay whoever runs them, so a chain of
           threads each shorter than the delay still purges the pages they
           retired and trims the caches they filled (restarting the clock
           at each start postponed that for as long as the chain lasted). */
        if (nd_tcache_is_watched(tc))   /* the last thread's moves, not this one's */
            nd_tcache_watch(tc, false);
        nd_tcache *tcs[ND_MAX_NODES + 1];
        int ntc = nd_thread_tcaches(t, tcs);
        for (int i = 0; i < ntc; i++)   /* the capacities its bins grew to are the last thread's (nd_tcache_inherit) */
            nd_tcache_inherit(tcs[i]);
        nd_tls_tc = tc;
        nd_tls_thread = t;
        nd_tls_node_tc = t->node_tc;
        pthread_setspecific(nd_thread_key, t);
        nd_tls_starting = 0;
        nd_thread_upkeep();
        return tc;
    }
    nd_thread_upkeep();
    if (nd_tls_tid == 0)
        nd_tls_tid = nd_fetch_add_relaxed(&nd_next_tid, ND_TID_STEP);
    t = nd_meta_alloc(sizeof(nd_thread));
    nd_tcache *tc = t != NULL ? nd_thread_cache_new(node, false) : NULL;
    if (tc == NULL) {
        if (t != NULL)
            nd_meta_free(t, sizeof(nd_thread));
        nd_tls_starting = 0;
        return NULL;
    }
    t->node_tc = nd_thread_no_node_tc;
    t->tier_cpu = 0;
    t->tier_node = -1;
    for (int k = 0; k < ND_TIER_COUNT; k++)
        t->tier_tc[k] = &nd_tcache_empty;
    memset(&t->tier_stats, 0, sizeof t->tier_stats);
    memset(&t->tier_open, 0, sizeof t->tier_open);   /* not listed yet: no report reads it */
    t->plain = tc;
    t->state = ND_THREAD_LIVE;
    t->gc_countdown = ND_GC_EVENTS;
    t->seen_node = (int16_t)node;
    t->look_cpu = -1;
    t->maintain_at = tc->heap.clock_ms + (uint64_t)nd_opt(ND_OPT_purge_delay);
    nd_lock(nd_threads_lock);
    nd_list_push_front(&nd_threads, t);
    nd_unlock(nd_threads_lock);
    nd_tls_tc = tc;
    nd_tls_thread = t;
    nd_tls_node_tc = t->node_tc;
    /* May allocate (for high key numbers): the thread is already in place. */
    pthread_setspecific(nd_thread_key, t);
    nd_tls_starting = 0;
    return tc;
}

nd_tcache *nd_thread_node_tcache(int node)
{
    if (!nd_topo_node_has_memory(node)) {
        errno = EINVAL;
        return NULL;
    }
    nd_thread *t = nd_tls_thread;
    nd_tcache *tc = t->node_tc[node];
    if (tc != &nd_tcache_empty)
        return tc;
    if (t->node_tc == nd_thread_no_node_tc) {   /* its first node cache: an array of its own */
        nd_tcache **own = nd_meta_alloc(ND_MAX_NODES * sizeof *own);
        if (own == NULL) {
            errno = ENOMEM;
            return NULL;
        }
        memcpy(own, nd_thread_no_node_tc, sizeof nd_thread_no_node_tc);
        nd_store_release(&t->node_tc, own);   /* reports read it (nd_thread_tcaches) */
        nd_tls_node_tc = own;
    }
    tc = nd_thread_cache_new(node, true);
    if (tc == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    nd_store_release(&t->node_tc[node], tc);   /* reports read it (nd_thread_tcaches) */
    return tc;
}

nd_hot nd_tcache *nd_thread_tcache_for(const nd_segment *s)
{
    if (nd_tls_thread->state != ND_THREAD_LIVE)
        return NULL;
    if (!s->bound)   /* plain memory of another node is not this thread's to hand out */
        return nd_tls_tc->heap.node == s->node ? nd_tls_tc : NULL;
    return nd_thread_node_tcache(s->node);   /* created if this thread has none yet */
}

/* Remote frees a thread that never allocated makes before it gets a thread
   cache of its own to keep them in (a thread that only frees, as the
   consumer of a queue does, then batches them too). */
#define ND_START_AFTER_REMOTE_FREES 64
static __thread uint32_t nd_tls_remote_frees;

nd_tcache *nd_thread_quarantine(void)
{
    nd_thread *t = nd_tls_thread;
    nd_tcache *tc = t->state == ND_THREAD_LIVE ? nd_tls_tc
                  : t->state == ND_THREAD_NEW ? nd_thread_start() : NULL;
    return tc != NULL && tc->secure != NULL ? tc : NULL;
}

nd_hot nd_tcache *nd_thread_cache_for_free(const nd_segment *s, bool may_start)
{
    nd_thread *t = nd_tls_thread;
    if (nd_unlikely(t->state != ND_THREAD_LIVE)) {
        if (!may_start || t->state != ND_THREAD_NEW || ++nd_tls_remote_frees < ND_START_AFTER_REMOTE_FREES ||
            nd_thread_start() == NULL)
            return NULL;
        t = nd_tls_thread;
    }
    nd_tcache *tc = s->bound ? t->node_tc[s->node] : t->plain;
    if (tc == &nd_tcache_empty || tc->heap.node != s->node)
        return NULL;   /* no tcache for that node, or plain memory of another node */
    return tc;
}

/* The thread's tcaches: its plain one, then its node ones. */
static int nd_thread_tcaches(const nd_thread *t, nd_tcache **out)
{
    int n = 0;
    out[n++] = t->plain;
    nd_tcache **node_tc = nd_load_acquire(&t->node_tc);   /* another thread's, in reports */
    for (int i = 0; i < nd_topo.mem_count; i++) {
        nd_tcache *tc = nd_load_acquire(&node_tc[nd_topo.mem_ids[i]]);
        if (tc != &nd_tcache_empty)
            out[n++] = tc;
    }
    return n;
}

static void nd_fold_dead_locked(const nd_tcache *tc)
{
    nd_snap_class cls[ND_CLASS_COUNT];
    memset(cls, 0, sizeof cls);
    nd_tcache_stats_add(tc, cls, &nd_dead_tot);
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        cls[c].cached = 0;   /* an exited thread caches nothing */
        nd_snap_class_add(&nd_dead_cls[c], &cls[c]);
    }
}

nd_hot void nd_thread_done(void *arg)
{
    nd_thread *t = arg;
    if (t == NULL || t->state != ND_THREAD_LIVE || t != nd_tls_thread)
        return;
    /* Its tier calls go to the CPU node they ran on. */
    nd_thread_tier_close(t);
    /* From here on this thread allocates from the shared heaps. */
    nd_tls_tc = &nd_tcache_empty;   /* (nd_thread_dead's: its state, not its cache, says it exited) */
    nd_tls_thread = &nd_thread_dead;
    nd_tls_node_tc = nd_thread_dead.node_tc;
    nd_tls_tid = 0;
    /* secure=1: the blocks the thread kept in quarantine go back now,
       checked, rather than wait unaudited for the next thread. */
    if (t->plain->secure != NULL)
        nd_secure_flush_quarantine(t->plain);
    /* Pooled for the next thread to start on this node, cached blocks and
       all: it finds its caches warm, as a thread of a pool would. Not
       while CPUs are shared (nd_tcache_cpus_shared): the thread that
       takes the record then mostly waits for a CPU, and the blocks would
       wait with it (and, until it starts, in the pool) while the threads
       that run carve pages for theirs; the caches hand their blocks to
       the transfer store (nd_tcache_hand_over), where those threads take
       them, and the next thread refills from there (a cache holding less
       than half of tcache_total, and bins of less than 8 KiB of blocks,
       keep theirs: tcache.c, ND_HAND_OVER_MIN). mstress -t 8
       (rounds of 8 threads on 2 CPUs, each taking the last round's
       records): blocks waiting in caches 7.7 -> 3.5 MiB on average, peak
       RSS 36.6-38.8 -> 35.3-35.6 MiB, peak active 67.5-70.0 -> 60.2 MiB,
       fills +8 % (docs/results.md, h49c). Its
       heaps then give back pages no block is in and segments kept spare,
       since a record may wait a while, and purge what is past its delay
       (heap.h: nd_heap_trim); the rest goes back a delay after its free
       at the passes other threads give the pooled record
       (nd_thread_pool_age). (purge_delay=0: memory goes back at once, so
       nothing waits.) */
    if (nd_opt(ND_OPT_purge_delay) != 0) {
        nd_tcache *tcs[ND_MAX_NODES + 1];
        int n = nd_thread_tcaches(t, tcs);
        bool hand_over = nd_tcache_cpus_shared();
        uint64_t now = nd_os_now_ms();
        for (int i = 0; i < n; i++) {
            if (hand_over)
                nd_tcache_hand_over(tcs[i]);
            nd_heap_trim(&tcs[i]->heap, now);
        }
        if (nd_thread_pool_put(t)) {
            nd_thread_upkeep();
            return;
        }
    }
    nd_thread_dismantle(t);
    nd_thread_upkeep();
}

void nd_thread_fork_child(void)
{
    /* Only the forking thread survives (and the pooled records, whole, on
       their pools). The tcaches of the others are left
       as they were (they may have been mid-update): their ids never match a
       thread of the child, so frees of their blocks take the remote path.
       Their counters are folded into the totals. Called with every lock
       held (the fork handlers, init.c). */
    nd_thread *self = nd_tls_thread;
    nd_thread *t = nd_threads.first;
    nd_list_init(&nd_threads);
    while (t) {
        nd_thread *next = t->next;
        if (t == self || t->state == ND_THREAD_POOLED) {
            /* The caller, and records no thread was using: they stay, with
               randomness of their own (secure=1: the child's allocation
               order is not its parent's or its siblings'). */
            nd_tcache *tcs[ND_MAX_NODES + 1];
            int n = nd_thread_tcaches(t, tcs);
            for (int i = 0; i < n; i++) {
                if (tcs[i]->secure != NULL)
                    nd_secure_reseed(tcs[i]->secure);
                nd_heap_fork_child(&tcs[i]->heap);
            }
            nd_list_push_front(&nd_threads, t);
        } else {
            nd_tcache *tcs[ND_MAX_NODES + 1];
            int n = nd_thread_tcaches(t, tcs);
            for (int i = 0; i < n; i++) {
                nd_fold_dead_locked(tcs[i]);
                /* Its pages stay in use: what it held back of their
                   gauges goes in (heap.h: gauge_pages). */
                nd_heap_gauge_flush(&tcs[i]->heap);
                nd_tcache_lost(tcs[i]);
            }
            nd_thread_tier_close(t);
        }
        t = next;
    }
}

/* ---- maintenance ------------------------------------------------------------ */

/* The process's next look for idle threads (nd_thread_sweep_idle). */
static uint64_t nd_sweep_idle_at;

/* Live threads that made no maintenance pass for ND_SWEEP_IDLE_DELAYS
   purge delays (asleep, or running without calling the allocator) have
   their plain heaps swept by this one (heap.h: nd_heap_sweep_idle): what
   they freed before they went quiet (pages emptied, kept pages, spare
   segments, pending purges) goes back to the OS instead of waiting for
   their next pass. Once per quiet spell (swept_for), one thread of the
   process at a time, at most once per purge delay; under the threads'
   lock, so no record leaves the list meanwhile and a fork waits for the
   sweep. Their caches' blocks stay where they are (the fast paths take
   and put them without a bracket). */
static nd_hot void nd_thread_sweep_idle(const nd_thread *self, uint64_t now)
{
    long delay = nd_opt(ND_OPT_purge_delay);
    uint64_t at = nd_load_relaxed(&nd_sweep_idle_at);
    if (delay <= 0 || now < at ||
        !__atomic_compare_exchange_n(&nd_sweep_idle_at, &at, now + (uint64_t)delay, false, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED))
        return;
    uint64_t idle = (uint64_t)delay * ND_SWEEP_IDLE_DELAYS;
    nd_lock(nd_threads_lock);
    for (nd_thread *t = nd_threads.first; t != NULL; t = t->next) {
        if (t == self || t->state != ND_THREAD_LIVE)
            continue;
        uint64_t m = nd_load_relaxed(&t->maintain_at);
        if (m + idle > now || t->swept_for == m)
            continue;
        if (nd_heap_sweep_idle(&t->plain->heap, now))
            t->swept_for = m;
    }
    nd_unlock(nd_threads_lock);
}

/* The calling thread's periodic maintenance: thread-cache GC, the idle
   classes of the transfer stores (all of them when forced), and
   for each of its heaps notified pages, adoption, purging, kept segments;
   then the node caches, and when due the abandoned segments no heap
   adopts (nd_thread_sweep_abandoned_due). */
static nd_hot void nd_thread_maintain(nd_thread *t, bool force)
{
    uint64_t now = nd_os_now_ms();
    if (nd_tcache_is_watched(t->plain) && now >= t->watch_until &&
        (int64_t)(nd_tcache_requests(t->plain) - t->watch_from) >= ND_WATCH_REQUESTS)   /* signed: an uncount */
        nd_tcache_watch(t->plain, false);   /* no move for ND_WATCH_MS and ND_WATCH_REQUESTS */
    if (!force && now < t->maintain_at) {
        nd_store_relaxed(&t->plain->heap.clock_ms, now);   /* (a sweep reads it: heap.h) */
        return;
    }
    long delay = nd_opt(ND_OPT_purge_delay);
    nd_store_relaxed(&t->maintain_at, now + (uint64_t)(delay > 0 ? delay : 1));   /* (read by nd_thread_sweep_idle) */
    nd_tcache *tcs[ND_MAX_NODES + 1];
    int n = nd_thread_tcaches(t, tcs);
    for (int i = 0; i < n; i++) {
        if (force)
            nd_secure_flush(tcs[i]);
        if (force || nd_tcache_gc_due(tcs[i]))
            nd_tcache_gc(tcs[i], force);
        if (i == 0)   /* every store, through the plain cache */
            nd_tcache_xfer_sweep(tcs[i], now, force);
        nd_heap_maintain(&tcs[i]->heap, now, force);
        nd_assert2(nd_tcache_is_valid(tcs[i]));
    }
    nd_nursery_maintain(now, force);
    nd_large_maintain(now, force);
    nd_assert2(nd_large_is_valid());
    nd_assert2(nd_tight_is_valid());
    nd_thread_pool_age(now, force);
    nd_thread_sweep_idle(t, now);
    nd_node_maintain(force ? ND_SWEEP_ALL : ND_SWEEP_PERIODIC);
    nd_thread_sweep_abandoned_due(now);
}

/* The one trigger of a thread's maintenance, for both of its clocks: its
   slow-path events (nd_thread_tick) and its requests' roll-overs
   (nd_thread_count_request). A shared heap's cache, or a thread that is
   not live, has none. */
static void nd_thread_maintain_check(nd_tcache *tc, bool due)
{
    nd_thread *t = nd_tls_thread;
    if (due && !tc->heap.shared && t->state == ND_THREAD_LIVE)
        nd_thread_maintain(t, false);
}

/* (thread.h: nd_thread_count_request, the tick's quick case first) */
nd_hot bool nd_thread_count_request_out(nd_tcache *tc, unsigned c)
{
    unsigned r = nd_tcache_count_request(tc, c);
    nd_thread_maintain_check(tc, r & ND_COUNT_MAINTAIN);
    return r & ND_COUNT_SAMPLE;
}

/* follow_thread: the thread's CPU is on node `node`, another node than
   the last one seen. Its plain memory follows it there, unless the option
   is off or a memory policy places plain memory (then the kernel decides,
   and nodal keeps serving what it has). */
static nd_noinline void nd_thread_moved(nd_thread *t, int node)
{
    nd_tcache *tc = t->plain;
    nd_heap *h = &tc->heap;
    t->seen_node = (int16_t)node;
    t->look_cpu = -1;
    nd_count_inc(&h->stats.thread_moves);
    h->away = node != h->node;
    if (!h->away || !nd_opt(ND_OPT_follow_thread) || !nd_os_policy_is_local())
        return;
    nd_count_inc(&h->stats.moves_followed);
    if (nd_tcache_is_watched(tc))
        nd_count_inc(&h->stats.moves_watched);
    /* Every cached block back to its page, and the old node's transfer
       store's (some are this heap's: they would hold its pages), then the
       heap's pages to the old node; the cache serves the new node's
       memory from now on. */
    nd_thread_cache_flush(tc);
    nd_tcache_xfer_give_back(tc);
    nd_count_add(&h->stats.pages_handed_back, nd_heap_leave(h, node));
    nd_tcache_follow_node(tc);   /* secure=1: the new node's plain kind, ND_KIND_SEALED set */
    /* Watched for a while: the next move is seen at its first malloc. */
    t->watch_until = nd_os_now_ms() + ND_WATCH_MS;
    t->watch_from = nd_tcache_requests(tc);
    nd_tcache_watch(tc, true);
    nd_assert2(nd_tcache_is_valid(tc));
}

nd_hot bool nd_thread_look_node(int cpu)
{
    nd_thread *t = nd_tls_thread;
    int node = cpu >= 0 ? nd_topo_cpu_node(cpu) : nd_topo_current_node();   /* the CPU read, not a later one */
    if (nd_topo_local_mem_node(node) != t->seen_node)
        return false;
    t->look_cpu = (unsigned)cpu < ND_MAX_CPUS ? cpu : -1;
    return true;
}

nd_hot void nd_thread_tick(nd_tcache *tc)
{
    nd_heap_tick(&tc->heap);
    nd_thread *t = nd_tls_thread;
    bool due = false;
    if (!tc->heap.shared && t->state == ND_THREAD_LIVE) {
        /* Off the fast paths: a look at the CPU's node at every slow-path
           event (one load from the rseq area; sched_getcpu without one).
           Every event, not every few: what the cache holds when the thread
           moves goes out until a slow path sees the move (8 threads moving
           back and forth in the VM: 0.90 local with a look every 4th event,
           0.93-0.95 with every one). None where every CPU takes its
           local memory from one node (topo.h: one_mem_node): the thread
           cannot change nodes, and the look (~50 instructions, a fifth of
           the bookkeeping of a refill) would always find seen_node. */
        if (nd_topo.one_mem_node < 0) {
            int node = nd_topo_local_mem_node(nd_topo_current_node());
            if (nd_unlikely(node != t->seen_node))
                nd_thread_moved(t, node);
        }
        if (nd_unlikely(--t->gc_countdown == 0)) {
            t->gc_countdown = ND_GC_EVENTS;
            due = true;
        }
    }
    nd_thread_maintain_check(tc, due);
}

/* The record's tier totals now: its slow paths' counts and its tier
   caches' fast-path hits. */
static void nd_thread_tier_now(const nd_thread *t, nd_tier_counters *now)
{
    for (int k = 0; k < ND_TIER_COUNT; k++) {
        uint64_t blocks, bytes;
        nd_tcache_tier_hits(nd_load_acquire(&t->tier_tc[k]), k, &blocks, &bytes);
        now->requests[k] = nd_load_relaxed(&t->tier_stats.requests[k]) + blocks;
        now->bytes[k] = nd_load_relaxed(&t->tier_stats.bytes[k]) + bytes;
    }
}

#define ND_TIER_COPY(n, k, sc, so, u, l, m) \
    ND_SEL(sc, so)(, , , , , for (int k_ = 0; k_ < ND_TIER_COUNT; k_++) \
                       nd_store_relaxed(&dst->n[k_], nd_load_relaxed(&src->n[k_]));, )

/* dst = src, word by word (a record's tier_open: reports read it). */
static void nd_tier_copy(nd_tier_counters *dst, const nd_tier_counters *src)
{
    ND_STATS_TABLE(ND_TIER_COPY)
}

/* What the counts of an open period grew by: now - open (0 where a report
   reads a period its owner is closing). */
#define ND_TIER_GROWTH(k_, f_) (now.f_[k_] > open->f_[k_] ? now.f_[k_] - open->f_[k_] : 0)

#define ND_TIER_CLOSE(n, k, sc, so, u, l, m) \
    ND_SEL(sc, so)(, , , , , for (int k_ = 0; k_ < ND_TIER_COUNT; k_++) \
                       nd_add_relaxed(&nd_tier_done.n[k_][node], ND_TIER_GROWTH(k_, n));, )

/* Closes t's open period: what its tier counts grew by goes to the CPU
   node the calls ran on, and its tier caches become the empty ones (the
   next call resolves them again and opens a period). */
static nd_hot void nd_thread_tier_close(nd_thread *t)
{
    int node = t->tier_node;
    if (node >= 0) {
        nd_tier_counters now, was;
        const nd_tier_counters *open = &was;
        nd_tier_copy(&was, &t->tier_open);
        nd_thread_tier_now(t, &now);
        nd_tier_copy(&t->tier_open, &now);   /* first: a report sees no growth twice */
        ND_STATS_TABLE(ND_TIER_CLOSE)
    }
    nd_store_relaxed(&t->tier_node, -1);
    for (int k = 0; k < ND_TIER_COUNT; k++)
        nd_store_release(&t->tier_tc[k], &nd_tcache_empty);
}

/* Opens a period on `node` with the caches tcs (t has none open). */
static void nd_thread_tier_open(nd_thread *t, int node, nd_tcache *const *tcs)
{
    for (int k = 0; k < ND_TIER_COUNT; k++)
        nd_store_release(&t->tier_tc[k], tcs[k]);
    nd_tier_counters now;
    nd_thread_tier_now(t, &now);
    nd_tier_copy(&t->tier_open, &now);
    nd_store_relaxed(&t->tier_node, (int16_t)node);
}

void nd_thread_tier_resolve(void)
{
    nd_thread *t = nd_tls_thread;
    if (t->state != ND_THREAD_LIVE || nd_os_rseq_cpu_off == 0)
        return;
    int cpu = nd_os_current_cpu_fast();
    if (cpu < 0 || cpu >= nd_topo.cpu_limit)
        return;
    nd_tcache *tcs[ND_TIER_COUNT];
    bool same = true;
    for (int k = 0; k < ND_TIER_COUNT; k++) {
        tcs[k] = t->node_tc[(uint8_t)nd_tier_by_cpu[cpu][k]];
        same &= tcs[k] == t->tier_tc[k];
    }
    int node = nd_topo_cpu_node(cpu);
    if (!same || node != t->tier_node) {
        nd_thread_tier_close(t);
        nd_thread_tier_open(t, node, tcs);
    }
    t->tier_cpu = cpu;
}

void nd_thread_count_tier(int t, size_t bytes, int from)
{
    if ((unsigned)t >= ND_TIER_COUNT || (unsigned)from >= ND_MAX_NODES)
        return;
    nd_thread *th = nd_tls_thread;
    if (th->state == ND_THREAD_LIVE) {
        if (from != th->tier_node) {
            /* A call on another node than the open period's (no rseq
               area: the fast path never runs, nor resolves). */
            nd_tcache *tcs[ND_TIER_COUNT];
            memcpy(tcs, th->tier_tc, sizeof tcs);
            nd_thread_tier_close(th);
            nd_thread_tier_open(th, from, tcs);
        }
        nd_count_inc(&th->tier_stats.requests[t]);
        nd_count_add(&th->tier_stats.bytes[t], bytes);
    } else {
        nd_add_relaxed(&nd_tier_done.requests[t][from], 1);
        nd_add_relaxed(&nd_tier_done.bytes[t][from], bytes);
    }
}

nd_sample_path void nd_thread_prof_rearm(void)
{
    nd_thread *t = nd_tls_thread;
    if (t->state != ND_THREAD_LIVE)
        return;
    nd_tcache *tcs[ND_MAX_NODES + 1];
    int n = nd_thread_tcaches(t, tcs);
    for (int i = 0; i < n; i++)
        nd_tcache_prof_rearm(tcs[i]);
}

void nd_thread_collect(bool purge_all)
{
    nd_thread *t = nd_tls_thread;
    uint64_t now = nd_os_now_ms();
    if (t->state == ND_THREAD_LIVE) {
        nd_tcache *tcs[ND_MAX_NODES + 1];
        int n = nd_thread_tcaches(t, tcs);
        for (int i = 0; i < n; i++) {
            nd_thread_cache_flush(tcs[i]);
            if (i == 0)   /* every kind's transfer store, through the plain cache */
                nd_tcache_xfer_sweep(tcs[i], now, true);
            nd_tcache_gc(tcs[i], purge_all);
            nd_heap_collect(&tcs[i]->heap, now, purge_all);
        }
    }
    nd_large_maintain(now, purge_all);
    nd_thread_pool_age(now, purge_all);
    nd_nursery_maintain(now, purge_all);   /* after the records taken apart gave their blocks back */
    /* Forced: the segments exited threads abandoned give back what no
       block holds any more, whether or not a thread of their node and
       kind will ever adopt them (heap.h). After the records taken apart
       abandoned theirs. */
    if (purge_all)
        nd_thread_sweep_every_abandoned();
}

/* What a collect would give back of the calling thread's: its caches'
   blocks, its heaps' free pages waiting for their purge and the pages
   they keep set up (heap.h: kept pages, retired by a collect). */
static size_t nd_thread_trim_worth(const nd_thread *t)
{
    nd_tcache *tcs[ND_MAX_NODES + 1];
    int n = nd_thread_tcaches(t, tcs);
    size_t bytes = 0;
    for (int i = 0; i < n; i++) {
        nd_heap_enter(&tcs[i]->heap);   /* (heap.h: the owner's bracket) */
        bytes += tcs[i]->heap.purge_pending + tcs[i]->heap.kept_bytes;
        nd_heap_exit(&tcs[i]->heap);
        bytes += nd_tcache_held_bytes(tcs[i]);
    }
    return bytes;
}

/* ms: the calling thread's last malloc_trim that collected, 0 none. Its
   own, not its record's: a thread's first call collects, whether or not
   it has started (a record of an exited thread it takes does not carry
   that thread's calls). */
static __thread uint64_t nd_tls_trim_at;

int nd_thread_trim(void)
{
    nd_thread *t = nd_tls_thread;
    uint64_t now = nd_os_now_ms();
    if (nd_tls_trim_at != 0 && now < nd_tls_trim_at + (uint64_t)nd_opt(ND_OPT_purge_delay) &&
        (t->state != ND_THREAD_LIVE || nd_thread_trim_worth(t) < ND_TRIM_WORTH))
        return 0;
    nd_tls_trim_at = now != 0 ? now : 1;
    size_t before = nd_load_relaxed(&nd_gauge.returned);
    nd_thread_collect(true);
    nd_node_maintain(ND_SWEEP_ALL);
    return nd_load_relaxed(&nd_gauge.returned) != before;
}

/* ---- statistics ----------------------------------------------------------------- */

nd_hot void nd_thread_count_remote_free(unsigned cls, bool pushed)
{
    if (cls >= ND_CLASS_COUNT)
        return;
    if (nd_tls_thread->state == ND_THREAD_LIVE) {
        nd_class_counters *c = nd_heap_cstats(&nd_tls_tc->heap, cls);
        nd_count_inc(&c->remote_frees);
        if (pushed)
            nd_count_inc(&c->remote_pushes);
    } else {
        nd_add_relaxed(&nd_orphan_cls[cls].remote_frees, 1);
        nd_add_relaxed(&nd_orphan_cls[cls].remote_pushes, 1);
    }
}

/* The calling thread's counters (its own, written by it alone: *live), or
   the orphans' (shared: atomic) once it is exiting. */
static inline nd_thread_counters *nd_thread_counters_here(bool *live)
{
    *live = nd_tls_thread->state == ND_THREAD_LIVE;
    return *live ? &nd_tls_tc->heap.stats : &nd_orphan;
}

/* One block of `bytes` into a count and its sum (nd_thread_counters_here). */
static inline void nd_thread_count_block(bool live, uint64_t *count, uint64_t *sum, size_t bytes)
{
    if (live) {
        nd_count_inc(count);
        nd_count_add(sum, bytes);
    } else {
        nd_add_relaxed(count, 1);
        nd_add_relaxed(sum, bytes);
    }
}

nd_hot void nd_thread_count_free(bool huge, size_t bytes)
{
    bool live;
    nd_thread_counters *s = nd_thread_counters_here(&live);
    nd_thread_count_block(live, huge ? &s->huge_frees : &s->large_frees,
                          huge ? &s->huge_bytes_freed : &s->large_bytes_freed, bytes);
}

void nd_thread_count_huge_alloc(size_t bytes)
{
    bool live;
    nd_thread_counters *s = nd_thread_counters_here(&live);
    nd_thread_count_block(live, &s->huge_allocs, &s->huge_bytes_allocated, bytes);
}

void nd_thread_count_large_resize(long delta)
{
    bool live = nd_tls_thread->state == ND_THREAD_LIVE;
    nd_thread_counters *s = live ? &nd_tls_tc->heap.stats : &nd_orphan;
    uint64_t *sum = delta > 0 ? &s->large_bytes_allocated : &s->large_bytes_freed;
    uint64_t bytes = delta > 0 ? (uint64_t)delta : (uint64_t)-delta;
    if (live)
        nd_count_add(sum, bytes);
    else
        nd_add_relaxed(sum, bytes);
}

#define ND_TIER_OPEN_ADD(n, k, sc, so, u, l, m) \
    ND_SEL(sc, so)(, , , , , for (int k_ = 0; k_ < ND_TIER_COUNT; k_++) \
                       tier_from[k_][node].n += ND_TIER_GROWTH(k_, n);, )

void nd_thread_stats_sum(nd_snap_class *cls, nd_snap_totals *tot, nd_snap_tier (*tier_from)[ND_MAX_NODES],
                         size_t *threads, size_t *pooled, long *held_active, long *held_pages)
{
    size_t nthreads = 0, npooled = 0;
    nd_lock(nd_threads_lock);
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        nd_snap_class_add(&cls[c], &nd_dead_cls[c]);
        nd_snap_class_add_counters(&cls[c], &nd_orphan_cls[c]);
        cls[c].frees += nd_load_relaxed(&nd_orphan_cls[c].remote_pushes);
    }
    nd_snap_totals_add(tot, &nd_dead_tot);
    nd_snap_tier_add_node_counters(tier_from, &nd_tier_done);
    nd_snap_totals_add_counters(tot, &nd_orphan);
    for (nd_thread *t = nd_threads.first; t; t = t->next) {
        nthreads += t->state == ND_THREAD_LIVE;
        npooled += t->state == ND_THREAD_POOLED || t->state == ND_THREAD_PASS;
        nd_tcache *tcs[ND_MAX_NODES + 1];
        int n = nd_thread_tcaches(t, tcs);
        for (int i = 0; i < n; i++) {
            nd_tcache_stats_add(tcs[i], cls, tot);
            if (held_active != NULL)
                nd_heap_gauge_pending(&tcs[i]->heap, held_active, held_pages);
        }
        int node = nd_load_relaxed(&t->tier_node);
        if (node >= 0) {
            nd_tier_counters now, was;
            const nd_tier_counters *open = &was;
            nd_tier_copy(&was, &t->tier_open);
            nd_thread_tier_now(t, &now);
            ND_STATS_TABLE(ND_TIER_OPEN_ADD)
        }
    }
    nd_unlock(nd_threads_lock);
    *threads = nthreads;
    *pooled = npooled;
}

bool nd_thread_is_valid(void)
{
    nd_thread *t = nd_tls_thread;
    if (t->state != ND_THREAD_LIVE)
        return true;
    nd_tcache *tcs[ND_MAX_NODES + 1];
    int n = nd_thread_tcaches(t, tcs);
    for (int i = 0; i < n; i++)
        if (!nd_tcache_is_valid(tcs[i]) || !nd_secure_is_valid(tcs[i]))
            return false;
    if (nd_tls_node_tc != t->node_tc)
        return false;
    for (int k = 0; k < ND_MAX_NODES; k++)   /* the shared array never written; the own one only by node caches */
        if (t->node_tc[k] != &nd_tcache_empty &&
            (t->node_tc == nd_thread_no_node_tc || !t->node_tc[k]->heap.bound || t->node_tc[k]->heap.node != k))
            return false;
    if (t->tier_cpu < 0 || t->tier_cpu >= ND_MAX_CPUS || t->tier_node < -1 || t->tier_node >= ND_MAX_NODES)
        return false;
    if (t->look_cpu != -1 && ((unsigned)t->look_cpu >= ND_MAX_CPUS ||
                              nd_topo_local_mem_node(nd_topo_cpu_node(t->look_cpu)) != t->seen_node))
        return false;
    for (int k = 0; k < ND_TIER_COUNT; k++) {
        if (t->tier_tc[k] != &nd_tcache_empty && t->tier_tc[k] != t->node_tc[(uint8_t)nd_tier_by_cpu[t->tier_cpu][k]])
            return false;
        if (t->tier_node < 0 && t->tier_tc[k] != &nd_tcache_empty)
            return false;
    }
    return true;
}
