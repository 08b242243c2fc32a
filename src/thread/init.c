/*
 * init.c - process life cycle: start-up on the first allocation or in the
 * library constructor (whichever comes first), and fork handlers.
 *
 * Start-up must not allocate: it reads the environment and /sys into fixed
 * buffers. Calls that might allocate (pthread_atfork) are made after the
 * process is marked ready, so a nested malloc simply works.
 *
 * Fork: prepare takes every lock of lock.h's table in its order; the parent
 * releases them; the child releases them after folding the tcaches of the
 * threads that did not survive (see thread.c).
 */
#include "init.h"

#include <pthread.h>
#include "class.h"
#include "lock.h"
#include "options.h"
#include "os.h"
#include "page.h"
#include "prof.h"
#include "secure.h"
#include "segment.h"
#include "shared.h"
#include "tcache.h"
#include "thread.h"
#include "tier.h"
#include "topo.h"
#include "xfer.h"

int nd_process_state;
static int nd_atfork_done;

/* Every lock of the table, in its order: no thread can be inside nodal's
   state when the process is copied. The handlers are registered once
   start-up is over; a fork that comes before finds nothing to do. */
static nd_hot void nd_fork_prepare(void)
{
    if (nd_load_acquire(&nd_process_state) != 2)
        return;
    nd_os_unwind_fork_prepare();
    nd_locks_acquire_all();
}

static nd_hot void nd_fork_parent(void)
{
    if (nd_load_acquire(&nd_process_state) != 2)
        return;
    nd_locks_release_all();
    nd_os_unwind_fork_parent();
}

/* The child has only the forking thread: the records of the others are
   folded (thread.c) while every lock is still held, then all are released. */
static nd_hot void nd_fork_child(void)
{
    if (nd_load_acquire(&nd_process_state) != 2)
        return;
    nd_thread_fork_child();
    nd_shared_fork_child();
    nd_xfer_fork_child();   /* claims of threads the child does not have */
    if (nd_prof_is_on())    /* (its code is mapped only then) */
        nd_prof_fork_child();   /* the heap profile's sites they were adding */
    nd_locks_release_all();
    nd_os_unwind_fork_child();
}

nd_hot void nd_process_init(void)
{
    nd_os_static_data_thp_opt_out();   /* before the lock's write: the first of nodal's .bss */
    nd_lock(ND_LOCK(init, 0));
    if (nd_process_state == 0) {
        nd_process_state = 1;
        nd_os_init();
        nd_options_init();
        if (!nd_opt(ND_OPT_purge_batch))
            nd_os_purges_one_by_one();
        nd_topo_init();
        nd_tier_init();
        uint64_t nodes[(ND_MAX_NODES + 63) / 64] = { 0 };
        for (int i = 0; i < nd_topo.mem_count; i++)
            nodes[nd_topo.mem_ids[i] / 64] |= (uint64_t)1 << (nd_topo.mem_ids[i] % 64);
        nd_locks_set_nodes(nodes);   /* fork takes the per-node locks of these */
        nd_seg_init();
        nd_page_keys_init();
        nd_secure_init();
        /* the aligned fast path's table, after secure=1's padding */
        nd_class_aligned_init(nd_secure_on() && !nd_secure_full() ? ND_SECURE_TAIL : 0);
        nd_tcache_process_init();   /* before the first cache */
        nd_thread_process_init();
        if (nd_opt(ND_OPT_stats) > 0)
            nd_os_keep_stderr();
        if (nd_opt_verbose())
            nd_warn("%d node(s) with memory; first %d", nd_topo.mem_count, nd_topo.mem_ids[0]);
        nd_store_release(&nd_process_state, 2);
    }
    nd_unlock(ND_LOCK(init, 0));
    if (nd_load_acquire(&nd_process_state) == 2 &&
        __atomic_exchange_n(&nd_atfork_done, 1, __ATOMIC_ACQ_REL) == 0) {
        nd_os_atfork(nd_fork_prepare, nd_fork_parent, nd_fork_child);
        /* Once, after start-up has faulted in the code it ran, and outside
           the init lock (it takes the loader's, as dl_iterate_phdr does):
           the code and tables of the file a plain program does not run
           become mappings of their own and are unmapped (os.c). */
        nd_os_code_trim();
        nd_os_data_thp_opt_out();
    }
}

__attribute__((constructor(101))) static void nd_constructor(void)
{
    nd_process_ensure();
}
