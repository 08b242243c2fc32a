/*
 * lock.c - the locks of the table in lock.h, fork's take-everything and
 * give-everything-back, and the lock-order witness of debug builds.
 *
 * The witness keeps, per thread, the locks it holds (row and instance);
 * nd_lock compares the lock asked for with the latest-ranked one held and
 * aborts with one line naming both when the order is broken. It writes its
 * message itself (this layer cannot use msg.c) and never allocates.
 */
#include "lock.h"

#include <stdio.h>
#include <string.h>
#include "atomic.h"
#include "counters.h"
#include "os.h"

/* Aligned to 2 KiB: a node's entry (20 locks, 1,280 bytes; the large
   pools' shards 8 of them) never straddles two OS pages. */
_Static_assert(ND_LOCK_SLOTS * sizeof(nd_lock_t) <= 2048, "a node's locks fit in 2 KiB");
nd_aligned(2048) nd_lock_t nd_locks[ND_MAX_NODES][ND_LOCK_SLOTS] = {
    [0 ... ND_MAX_NODES - 1] = { [0 ... ND_LOCK_SLOTS - 1] = { PTHREAD_MUTEX_INITIALIZER, 0 } }
};

const nd_lock_row nd_lock_table[ND_LOCK_ROWS] = {
#define ND_LOCK_ROW(name, count, protects) \
    { #name, &nd_locks[0][ND_LOCK_OFF_##name], (count), ND_LOCK_OFF_##name, ND_LOCK_PER(count), protects },
    ND_LOCKS(ND_LOCK_ROW)
#undef ND_LOCK_ROW
};

#if ND_WITNESS

#define ND_WITNESS_DEPTH 16

typedef struct nd_held { uint16_t row, index; } nd_held;
static __thread nd_held  nd_held_locks[ND_WITNESS_DEPTH];
static __thread unsigned nd_held_n;
static __thread uint8_t  nd_held_all;   /* between fork's acquire_all and release_all */

/* Row and instance of l; aborts for a lock that is not in the table. */
static nd_held nd_lock_find(const nd_lock_t *l);

static _Noreturn void nd_witness_fail(const char *what, nd_held a, nd_held b)
{
    char line[256];
    const nd_lock_row *ra = &nd_lock_table[a.row], *rb = &nd_lock_table[b.row];
    int n = snprintf(line, sizeof line, "nodal: lock order: %s %s[%u] (rank %u) while holding %s[%u] (rank %u)\n",
                     what, ra->name, a.index, a.row, rb->name, b.index, b.row);
    nd_os_write_stderr(line, n > 0 ? (size_t)n : 0);
    nd_os_abort();
}

static nd_held nd_lock_find(const nd_lock_t *l)
{
    const nd_lock_t *all = &nd_locks[0][0];
    if (l >= all && l < all + ND_MAX_NODES * ND_LOCK_SLOTS) {
        unsigned node = (unsigned)(l - all) / ND_LOCK_SLOTS, slot = (unsigned)(l - all) % ND_LOCK_SLOTS;
        for (unsigned r = 0; r < ND_LOCK_ROWS; r++) {
            const nd_lock_row *row = &nd_lock_table[r];
            unsigned i = node * row->per + (slot - row->off);
            if (slot >= row->off && slot < row->off + row->per && i < row->count)
                return (nd_held){ (uint16_t)r, (uint16_t)i };
        }
    }
    char line[128];
    int n = snprintf(line, sizeof line, "nodal: lock %p is not in the lock table (src/os/lock.h)\n", (const void *)l);
    nd_os_write_stderr(line, n > 0 ? (size_t)n : 0);
    nd_os_abort();
}

/* The held lock of the latest rank (and highest instance), if any. */
static bool nd_witness_top(nd_held *top)
{
    if (nd_held_n == 0)
        return false;
    *top = nd_held_locks[0];
    for (unsigned i = 1; i < nd_held_n; i++) {
        nd_held h = nd_held_locks[i];
        if (h.row > top->row || (h.row == top->row && h.index > top->index))
            *top = h;
    }
    return true;
}

static void nd_witness_acquire(const nd_lock_t *l)
{
    nd_held me = nd_lock_find(l), top;
    if (nd_held_all)
        nd_witness_fail("taking", me, (nd_held){ ND_LOCK_ROWS - 1, 0 });   /* fork holds them all */
    if (nd_witness_top(&top) && (me.row < top.row || (me.row == top.row && me.index <= top.index)))
        nd_witness_fail(me.row == top.row && me.index == top.index ? "taking again" : "taking", me, top);
    if (nd_held_n == ND_WITNESS_DEPTH)
        nd_witness_fail("too many locks held, taking", me, nd_held_locks[ND_WITNESS_DEPTH - 1]);
    nd_held_locks[nd_held_n++] = me;
}

static void nd_witness_release(const nd_lock_t *l)
{
    nd_held me = nd_lock_find(l);
    for (unsigned i = nd_held_n; i-- > 0;) {
        if (nd_held_locks[i].row == me.row && nd_held_locks[i].index == me.index) {
            nd_held_locks[i] = nd_held_locks[--nd_held_n];
            return;
        }
    }
    nd_witness_fail("releasing", me, me);   /* not held */
}

void nd_lock_may_take(nd_lock_id id)
{
    nd_held top;
    if (nd_held_all || !nd_witness_top(&top) || top.row < (unsigned)id)
        return;
    nd_witness_fail("a call that may take", (nd_held){ (uint16_t)id, 0 }, top);
}

unsigned nd_lock_held_count(void) { return nd_held_n; }

#else
#define nd_witness_acquire(l) ((void)0)
#define nd_witness_release(l) ((void)0)
unsigned nd_lock_held_count(void) { return 0; }
#endif

bool nd_lock_witness_on(void) { return ND_WITNESS; }

/* A lock found held is counted (the statistics' lock_waits) before the
   thread waits for it: the same one atomic when it is free (a trylock
   takes it as a lock would). */
nd_hot void nd_lock(nd_lock_t *l)
{
    nd_witness_acquire(l);
    if (nd_likely(pthread_mutex_trylock(&l->mu) == 0))
        return;
    nd_gauge_add(lock_waits, 1);
    nd_add_relaxed(&l->waits, 1);
    pthread_mutex_lock(&l->mu);
}

/* nd_lock for a lock held for a few hundred instructions at a time (lock.h):
   found held, it is tried again up to `tries` times, a pause between, before
   the thread waits in the kernel (a futex wait and its wake cost more than
   such a hold: a large pool's shard, docs/results.md h53l). Bounded: a
   holder that was preempted costs its waiter `tries` pauses, then a wait. */
nd_hot void nd_lock_brief(nd_lock_t *l, unsigned tries)
{
    nd_witness_acquire(l);
    if (nd_likely(pthread_mutex_trylock(&l->mu) == 0))
        return;
    nd_gauge_add(lock_waits, 1);
    nd_add_relaxed(&l->waits, 1);
    for (unsigned n = 0; n < tries; n++) {
        for (unsigned i = 0; i < 4; i++)
            nd_cpu_relax();
        if (pthread_mutex_trylock(&l->mu) == 0)
            return;
    }
    pthread_mutex_lock(&l->mu);
}

nd_hot bool nd_trylock(nd_lock_t *l)
{
    if (pthread_mutex_trylock(&l->mu) != 0)
        return false;
    nd_witness_acquire(l);
    return true;
}

nd_hot void nd_unlock(nd_lock_t *l)
{
    nd_witness_release(l);
    pthread_mutex_unlock(&l->mu);
}

/* Nodes with memory: only their instances of the per-node rows are taken. */
static uint64_t nd_lock_nodes[(ND_MAX_NODES + 63) / 64];

nd_hot void nd_locks_set_nodes(const uint64_t *mask)
{
    for (unsigned i = 0; i < sizeof nd_lock_nodes / sizeof nd_lock_nodes[0]; i++)
        nd_lock_nodes[i] = mask[i];
}

/* Is instance i of row r one fork must take? */
static bool nd_lock_instance_used(unsigned r, unsigned i)
{
    unsigned count = nd_lock_table[r].count;
    if (count == 1)
        return true;
    unsigned node = i / (count / ND_MAX_NODES);   /* per node, per node and kind, per ... and shard */
    return (nd_lock_nodes[node / 64] >> (node % 64)) & 1;
}

uint64_t nd_lock_row_waits(unsigned r)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < nd_lock_table[r].count; i++)
        if (nd_lock_instance_used(r, i))
            n += nd_load_relaxed(&nd_lock_instance(&nd_lock_table[r], i)->waits);
    return n;
}

nd_hot void nd_locks_acquire_all(void)
{
#if ND_WITNESS
    nd_held none = { 0, 0 }, top;
    if (nd_witness_top(&top))
        nd_witness_fail("fork() taking every lock, from", none, top);
#endif
    for (unsigned r = 0; r < ND_LOCK_ROWS; r++)
        for (unsigned i = 0; i < nd_lock_table[r].count; i++)
            if (nd_lock_instance_used(r, i))
                pthread_mutex_lock(&nd_lock_instance(&nd_lock_table[r], i)->mu);
#if ND_WITNESS
    nd_held_all = 1;
#endif
}

nd_hot void nd_locks_release_all(void)
{
    for (unsigned r = ND_LOCK_ROWS; r-- > 0;)
        for (unsigned i = nd_lock_table[r].count; i-- > 0;)
            if (nd_lock_instance_used(r, i))
                pthread_mutex_unlock(&nd_lock_instance(&nd_lock_table[r], i)->mu);
#if ND_WITNESS
    nd_held_all = 0;
#endif
}
