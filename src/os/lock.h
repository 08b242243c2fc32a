/*
 * lock.h - every lock nodal has, in one table, and the lock-order witness.
 *
 * ND_LOCKS(X) lists the locks outermost first: their rank is their row. A
 * thread that holds a lock may take only locks of later rows, and of a row
 * with several instances only instances of a higher index. The table is the
 * only place that order is written down; from it come
 *   - the locks themselves (each on its own cache line, node by node in
 *     nd_locks[], below; a file uses ND_LOCK(NAME, i) and never declares
 *     a lock of its own),
 *   - fork(): the prepare handler takes every instance of every row, top to
 *     bottom (nd_locks_acquire_all), the parent and the child release them
 *     bottom to top (nd_locks_release_all), so no lock is ever copied held
 *     into a child,
 *   - the lock table of src/README.md (tools/gen-locks; a unit test keeps
 *     the two equal),
 *   - in debug builds (ND_WITNESS, on when ND_DEBUG >= 1: the unit tier and
 *     the sanitizer builds), a witness: every acquisition is checked
 *     against the locks the thread holds, and one out of order (the same
 *     lock twice included) aborts with one line naming both; a function
 *     that may take a lock says so at its top (nd_lock_may_take), so a
 *     caller holding that lock, or a later one, is caught even on the runs
 *     where the lock happens not to be taken.
 *
 *   X(name, count, protects)     count: 1, ND_LOCKS_PER_NODE (instance =
 *                                node id), ND_LOCKS_PER_NODE_KIND (2 * node
 *                                id + kind: plain, bound) or
 *                                ND_LOCKS_PER_NODE_KIND_SHARD ((2 * node id
 *                                + kind) * ND_LARGE_SHARDS + shard)
 *
 * Locks are real mutexes (futexes): nothing spins without bound (a lock
 * held briefly may be tried a few times before its taker waits:
 * nd_lock_brief), and no fast path takes any of them.
 */
#ifndef ND_LOCK_H
#define ND_LOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <pthread.h>
#include "config.h"

#define ND_LOCKS_PER_NODE      ND_MAX_NODES
#define ND_LOCKS_PER_NODE_KIND (2 * ND_MAX_NODES)
#define ND_LOCKS_PER_NODE_KIND_SHARD (2 * ND_LARGE_SHARDS * ND_MAX_NODES)

#define ND_LOCKS(X) \
    X(init,         1,                "start-up: options, topology and secrets are read once, by one thread") \
    X(profile,      1,                "heap profile dumps, one at a time: their scratch tables and files (nodal_profile_dump, the signal's, periodic and exit dumps)") \
    X(report,       1,                "statistics reports, one at a time: the snapshot buffer and the output of nodal_stats_print, nodal_stats_json, nodal_memory_info_get, nodal_stats_reset and the report at exit") \
    X(stats_base,   1,                "the snapshot nodal_stats_reset took (subtracted from later reports)") \
    X(threads,      1,                "the list of thread records, the pools of exited threads' records, the statistics of exited threads") \
    X(shared_table, 1,                "the creation of shared heaps") \
    X(shared_heap,  ND_LOCKS_PER_NODE_KIND, "one shared heap (per node; plain, bound): the heap of threads that have no cache of their own (starting or exiting), and of small requests a thread's own heap had no room for (an address-space limit)") \
    X(nursery,      ND_LOCKS_PER_NODE, "one node's nursery (nursery.h): the shared heap whose pages serve the first few blocks of each small class to threads' plain caches") \
    X(tight,        ND_LOCKS_PER_NODE, "one node's tight slabs (tight.h): the large blocks cut into cells near an address-space limit, their cells in use") \
    X(prof_slab,    ND_LOCKS_PER_NODE_KIND, "prof=1: the cell slab of one node and kind of memory (plain, bound), shared by the threads whose small samples take its cells (slab.h): cutting a cell, taking a freed one again, a new slab") \
    X(large_pool,   ND_LOCKS_PER_NODE_KIND_SHARD, "one shard of a pool of large-block segments (per node; plain, bound; ND_LARGE_SHARDS shards): its segments' chunk masks and block descriptors") \
    X(node,         ND_LOCKS_PER_NODE, "one node's caches of free segments and of freed huge mappings, and its abandoned segments") \
    X(meta,         1,                "the metadata allocator (thread records, thread caches, heaps)")

typedef enum {
#define ND_LOCK_ENUM(name, count, protects) ND_LOCK_ID_##name,
    ND_LOCKS(ND_LOCK_ENUM)
#undef ND_LOCK_ENUM
    ND_LOCK_ROWS
} nd_lock_id;

/* One lock on its own cache line (a pthread mutex), and how many times a
   taker found it held (a relaxed count, written only then: a lock taken
   free writes nothing more; the statistics' `locks`, nd_lock_row_waits). */
typedef struct nd_aligned(ND_CACHE_LINE) nd_lock_t {
    pthread_mutex_t mu;
    uint64_t        waits;
} nd_lock_t;

/* Where the locks are: node by node, not row by row. nd_locks[n] holds
   node n's instances of the per-node rows (one, two or 2 x ND_LARGE_SHARDS
   each: the row's count / ND_MAX_NODES), and, in nd_locks[0] only, the one instance of
   each other row; slot ND_LOCK_OFF_name is the row's first there.
   Instance i of a row is at nd_locks[i / per][off + i % per]. So the
   locks a process on one node takes are in 20 cache lines of one OS page
   (row by row, each row's node-0 instance sat 4 or 8 KiB from the
   next, a page of .bss each: docs/results.md, h48m); the slots of
   the one-instance rows in the other nodes' entries are never used. */
#define ND_LOCK_PER(count) ((count) >= ND_MAX_NODES ? (count) / ND_MAX_NODES : 1)
enum {
#define ND_LOCK_SLOT(name, count, protects) \
    ND_LOCK_OFF_##name, ND_LOCK_LAST_##name = ND_LOCK_OFF_##name + ND_LOCK_PER(count) - 1,
    ND_LOCKS(ND_LOCK_SLOT)
#undef ND_LOCK_SLOT
    ND_LOCK_SLOTS
};
#define ND_LOCK_PERS(name, count, protects) enum { ND_LOCK_PER_##name = ND_LOCK_PER(count) };
ND_LOCKS(ND_LOCK_PERS)
#undef ND_LOCK_PERS
extern nd_lock_t nd_locks[ND_MAX_NODES][ND_LOCK_SLOTS] nd_hidden;

/* Instance i of the row `name`. */
#define ND_LOCK(name, i) \
    (&nd_locks[(unsigned)(i) / ND_LOCK_PER_##name][ND_LOCK_OFF_##name + (unsigned)(i) % ND_LOCK_PER_##name])

/* The rows, for the witness, fork and the documentation. */
typedef struct nd_lock_row {
    const char *name;
    nd_lock_t  *locks;      /* instance 0 */
    unsigned    count;
    unsigned    off, per;   /* its slots in nd_locks[] (above) */
    const char *protects;
} nd_lock_row;
extern const nd_lock_row nd_lock_table[ND_LOCK_ROWS] nd_hidden;
/* Instance i (< row->count) of a row. */
static inline nd_lock_t *nd_lock_instance(const nd_lock_row *row, unsigned i)
{
    return &nd_locks[i / row->per][row->off + i % row->per];
}

void nd_lock(nd_lock_t *l) nd_hidden;
bool nd_trylock(nd_lock_t *l) nd_hidden;
/* nd_lock that, finding the lock held, tries again `tries` times (pauses
   between) before it waits: for locks held briefly (lock.c). */
void nd_lock_brief(nd_lock_t *l, unsigned tries) nd_hidden;
void nd_unlock(nd_lock_t *l) nd_hidden;
/* The waits counted on row r's instances (those of the nodes in use),
   since the process started: which lock the statistics' lock_waits were
   spent on (the report's lock table, stats.c). Read without the locks. */
uint64_t nd_lock_row_waits(unsigned r) nd_hidden;

/* fork(): every lock of the table, in its order (prepare), and back
   (parent, child). The caller holds none. The instances of the per-node
   rows are those of the nodes with memory (nd_locks_set_nodes, at
   start-up): no other is ever taken. */
void nd_locks_acquire_all(void) nd_hidden;
void nd_locks_release_all(void) nd_hidden;
/* The nodes whose per-node lock instances are in use (a bit per node). */
void nd_locks_set_nodes(const uint64_t *mask) nd_hidden;

#ifndef ND_WITNESS
#define ND_WITNESS (ND_DEBUG >= 1)
#endif

#if ND_WITNESS
/* The caller may take a lock of row `id` (any instance): aborts if the
   thread holds a lock of that row or a later one. */
void nd_lock_may_take(nd_lock_id id) nd_hidden;
#else
#define nd_lock_may_take(id) ((void)0)
#endif
/* Was the library built with the witness? Locks the calling thread holds,
   as the witness counts them (0 without it). For tests. */
bool     nd_lock_witness_on(void) nd_hidden;
unsigned nd_lock_held_count(void) nd_hidden;

#endif /* ND_LOCK_H */
