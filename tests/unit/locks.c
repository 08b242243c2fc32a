/*
 * locks.c - unit tests of the lock table (src/os/lock.h): fork takes every
 * lock of the table, so a lock another thread holds at fork() is never
 * copied held into the child; the debug witness (ND_DEBUG=2 here) stops an
 * acquisition out of the table's order, a lock taken twice, a lock that is
 * not in the table, and a call that may take a lock its caller holds,
 * each with one line naming the locks.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "counters.h"
#include "lock.h"
#include "nodal.h"
#include "check.h"
#include "proc.h"

/* ---- fork while another thread holds a lock ------------------------------ */

struct holder {
    nd_lock_t *lock;
    atomic_int held;
    unsigned hold_ms;
};

static void *hold_for_a_while(void *arg)
{
    struct holder *h = arg;
    nd_lock(h->lock);
    atomic_store(&h->held, 1);
    usleep(h->hold_ms * 1000);
    nd_unlock(h->lock);
    return NULL;
}

static void child_reports(void *arg)
{
    (void)arg;
    void *p = nodal_malloc(100);
    FILE *null = fopen("/dev/null", "w");
    if (p == NULL || null == NULL || nodal_stats_print(null, NULL) != 0)
        _exit(3);
    char json[256];
    nodal_stats_json(json, sizeof json);
    nodal_memory_info mi;
    nodal_memory_info_get(&mi);
    nodal_free(p);
    _exit(0);
}

/* For every row of the table: a thread holds that lock (the first
   instance) while the main thread forks. fork() must wait for it (the
   prepare handler takes every lock), so the child finds it free: it
   allocates, prints statistics (which takes the report lock and, through
   the snapshot, the thread list and the node locks) and exits. Before the
   lock table, the report lock was left out of the handlers: a child forked
   while another thread printed statistics hung in nodal_stats_print. */
static void fork_while_another_thread_holds_any_lock_gives_a_working_child(void)
{
    nodal_free(nodal_malloc(1));
    for (unsigned r = 0; r < ND_LOCK_ROWS; r++) {
        struct holder h = { nd_lock_table[r].locks, 0, 200 };
        pthread_t t;
        EXPECT(pthread_create(&t, NULL, hold_for_a_while, &h) == 0, "pthread_create to work");
        while (!atomic_load(&h.held))
            usleep(100);
        struct nd_child c;
        nd_run_forked(child_reports, NULL, 10, &c);
        pthread_join(t, NULL);
        EXPECT(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0,
               "a child forked while another thread held the %s lock to allocate, report and exit 0; "
               "it %s (stderr: %.200s)", nd_lock_table[r].name, nd_describe_status(c.status), c.err);
    }
}

/* ---- the witness ------------------------------------------------------------ */

static void take_two(nd_lock_t *a, nd_lock_t *b)
{
    nd_lock(a);
    nd_lock(b);
    nd_unlock(b);
    nd_unlock(a);
}

static void out_of_order(void *arg)
{
    (void)arg;
    take_two(ND_LOCK(node, 0), ND_LOCK(threads, 0));
}

static void same_lock_twice(void *arg)
{
    (void)arg;
    take_two(ND_LOCK(meta, 0), ND_LOCK(meta, 0));
}

static void lower_instance_of_one_row(void *arg)
{
    (void)arg;
    take_two(ND_LOCK(large_pool, 3), ND_LOCK(large_pool, 1));
}

static void lock_outside_the_table(void *arg)
{
    (void)arg;
    static nd_lock_t mine = { PTHREAD_MUTEX_INITIALIZER, 0 };
    nd_lock(&mine);
}

static void malloc_under_the_node_lock(void *arg)
{
    (void)arg;
    nd_lock(ND_LOCK(node, 0));
    free(nodal_malloc(1u << 20));   /* a large block: its pool lock comes before nodes */
    nd_unlock(ND_LOCK(node, 0));
}

static void expect_witness(void (*fn)(void *), const char *what, const char *first, const char *second)
{
    struct nd_child c;
    nd_run_forked(fn, NULL, 10, &c);
    EXPECT(WIFSIGNALED(c.status) && WTERMSIG(c.status) == SIGABRT,
           "%s to abort (the lock-order witness); it %s", what, nd_describe_status(c.status));
    EXPECT(nd_count_lines_with(c.err, "nodal: lock") == 1 && strstr(c.err, first) != NULL &&
           (second == NULL || strstr(c.err, second) != NULL),
           "%s to print one line naming %s%s%s, got: %s", what, first, second ? " and " : "",
           second ? second : "", c.err);
}

static void the_witness_stops_every_acquisition_out_of_order(void)
{
    if (!nd_lock_witness_on())
        SKIP("the witness is off in this build (ND_WITNESS=0)");
    expect_witness(out_of_order, "taking threads while holding node[0]", "threads[0]", "node[0]");
    expect_witness(same_lock_twice, "taking meta twice", "taking again meta[0]", NULL);
    expect_witness(lower_instance_of_one_row, "taking large_pool[1] while holding large_pool[3]",
                   "large_pool[1]", "large_pool[3]");
    expect_witness(lock_outside_the_table, "taking a lock that is not in the table", "not in the lock table",
                   NULL);
    expect_witness(malloc_under_the_node_lock, "a malloc that may take a pool lock under a node lock",
                   "may take", "node[0]");
}

/* The locks a process on one node takes lie in one OS page: every row's
   instance 0 and node 0's instances of the per-node rows (lock.h:
   nd_locks, node by node). Row by row, each row's node-0 instance sat 4
   or 8 KiB from the next, and a program that took five kinds of lock
   kept five pages of nodal's .bss (docs/results.md, h48m). */
static void one_nodes_locks_lie_in_one_os_page(void)
{
    uintptr_t page = (uintptr_t)nd_lock_table[0].locks & ~(uintptr_t)4095;
    nd_lock_t *node0[] = { ND_LOCK(shared_heap, 0), ND_LOCK(shared_heap, 1), ND_LOCK(nursery, 0), ND_LOCK(tight, 0),
                           ND_LOCK(large_pool, 0), ND_LOCK(large_pool, 1), ND_LOCK(node, 0) };
    for (unsigned r = 0; r < ND_LOCK_ROWS; r++)
        EXPECT(((uintptr_t)nd_lock_table[r].locks & ~(uintptr_t)4095) == page,
               "the %s lock (instance 0) to be in the OS page of the %s lock, %p and %p", nd_lock_table[r].name,
               nd_lock_table[0].name, (void *)nd_lock_table[r].locks, (void *)nd_lock_table[0].locks);
    for (unsigned i = 0; i < sizeof node0 / sizeof node0[0]; i++)
        EXPECT(((uintptr_t)node0[i] & ~(uintptr_t)4095) == page, "node 0's lock #%u to be in that page too (%p)", i,
               (void *)node0[i]);
}

static void locks_taken_in_the_tables_order_pass_the_witness(void)
{
    if (!nd_lock_witness_on())
        SKIP("the witness is off in this build (ND_WITNESS=0)");
    /* Every row after the other, and two instances of one row upwards. */
    for (unsigned r = 0; r < ND_LOCK_ROWS; r++)
        nd_lock(nd_lock_table[r].locks);
    EXPECT(nd_lock_held_count() == ND_LOCK_ROWS, "the witness to count %u locks held, it says %u",
           (unsigned)ND_LOCK_ROWS, nd_lock_held_count());
    for (unsigned r = ND_LOCK_ROWS; r-- > 0;)
        nd_unlock(nd_lock_table[r].locks);
    take_two(ND_LOCK(node, 0), ND_LOCK(node, 1));
    /* Released out of order, then taken again: fine. */
    nd_lock(ND_LOCK(threads, 0));
    nd_lock(ND_LOCK(meta, 0));
    nd_unlock(ND_LOCK(threads, 0));
    nd_unlock(ND_LOCK(meta, 0));
    EXPECT(nd_lock_held_count() == 0, "no lock to be held at the end, the witness counts %u",
           nd_lock_held_count());
    /* And every entry point a program calls passes it. */
    void *p = nodal_malloc(100), *q = nodal_malloc(300 << 10), *r = nodal_malloc(8 << 20);
    FILE *null = fopen("/dev/null", "w");
    EXPECT(null != NULL && nodal_stats_print(null, "json") == 0, "nodal_stats_print to work");
    fclose(null);
    nodal_collect(1);
    nodal_free(p);
    nodal_free(q);
    nodal_free(r);
    EXPECT(nd_lock_held_count() == 0, "no lock to be held after the calls, the witness counts %u",
           nd_lock_held_count());
}

/* ---- lock_waits: a lock found held is counted, a free one is not --------- */

static void *take_stats_base(void *arg)
{
    (void)arg;
    nd_lock(ND_LOCK(stats_base, 0));   /* held by the main thread: counted, then waits */
    nd_unlock(ND_LOCK(stats_base, 0));
    return NULL;
}

/* The statistics' lock_waits counts each nd_lock that found its lock held
   (lock.c: the trylock that failed), before the thread waits, so the main
   thread, holding the lock, sees the count move and only then lets go;
   a thousand acquisitions of a free lock count nothing; and the report
   shows the field. The wait is counted on its row too (stats_base), and
   on no other: the report's lock table (text and JSON) names it. */
static void a_lock_found_held_counts_one_wait_and_a_free_one_none(void)
{
    uint64_t rows_before[ND_LOCK_ROWS];
    for (unsigned r = 0; r < ND_LOCK_ROWS; r++)
        rows_before[r] = nd_lock_row_waits(r);
    size_t before = nd_load_relaxed(&nd_gauge.lock_waits);
    for (int i = 0; i < 1000; i++) {
        nd_lock(ND_LOCK(stats_base, 0));
        nd_unlock(ND_LOCK(stats_base, 0));
    }
    EXPECT(nd_load_relaxed(&nd_gauge.lock_waits) == before,
           "1,000 acquisitions of a free lock to count no wait, lock_waits %zu -> %zu", before,
           (size_t)nd_load_relaxed(&nd_gauge.lock_waits));
    nd_lock(ND_LOCK(stats_base, 0));
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, take_stats_base, NULL) == 0, "pthread_create to work");
    for (int i = 0; i < 100000 && nd_load_relaxed(&nd_gauge.lock_waits) == before; i++)
        usleep(100);   /* 10 s at most: a lock that does not count fails below, not by a hang */
    nd_unlock(ND_LOCK(stats_base, 0));
    pthread_join(t, NULL);
    size_t after = nd_load_relaxed(&nd_gauge.lock_waits);
    EXPECT(after == before + 1, "one acquisition of a held lock to count one wait, lock_waits %zu -> %zu", before,
           after);
    for (unsigned r = 0; r < ND_LOCK_ROWS; r++) {
        uint64_t want_row = rows_before[r] + (r == ND_LOCK_ID_stats_base);
        EXPECT(nd_lock_row_waits(r) == want_row, "row %s of the lock table to count %llu waits, it counts %llu",
               nd_lock_table[r].name, (unsigned long long)want_row, (unsigned long long)nd_lock_row_waits(r));
    }
    static char json[65536];
    char want[96];
    nodal_stats_json(json, sizeof json);
    snprintf(want, sizeof want, "\"lock_waits\":%zu", after);
    EXPECT(strstr(json, want) != NULL, "the JSON report to have %s", want);
    snprintf(want, sizeof want, "{\"name\":\"stats_base\",\"waits\":%llu}",
             (unsigned long long)rows_before[ND_LOCK_ID_stats_base] + 1);
    EXPECT(strstr(json, want) != NULL, "the JSON report's locks to have %s", want);
    FILE *f = fmemopen(json, sizeof json, "w");
    EXPECT(f != NULL && nodal_stats_print(f, "text") == 0, "nodal_stats_print(f, \"text\") to work");
    fputc(0, f);
    fclose(f);
    snprintf(want, sizeof want, "stats_base %llu", (unsigned long long)rows_before[ND_LOCK_ID_stats_base] + 1);
    EXPECT(strstr(json, "lock waits by lock:") != NULL && strstr(json, want) != NULL,
           "the text report's lock waits to name \"%s\"", want);
}

static const struct nd_case cases[] = {
    ND_CASE(a_lock_found_held_counts_one_wait_and_a_free_one_none),
    ND_CASE(fork_while_another_thread_holds_any_lock_gives_a_working_child),
    ND_CASE(locks_taken_in_the_tables_order_pass_the_witness),
    ND_CASE(one_nodes_locks_lie_in_one_os_page),
    ND_CASE(the_witness_stops_every_acquisition_out_of_order),
};
ND_MAIN(cases)
