/*
 * init.h - process life cycle: start-up (options, topology, segment secret,
 * thread-exit key) and fork handlers. (The statistics report at exit is
 * stats.c's.)
 */
#ifndef ND_INIT_H
#define ND_INIT_H

#include <stdbool.h>
#include "atomic.h"
#include "config.h"

extern int nd_process_state nd_hidden;   /* 0 = not started, 2 = ready */

void nd_process_init(void) nd_hidden;

/* Cheap guard for slow paths: runs start-up once. */
static inline void nd_process_ensure(void)
{
    if (nd_unlikely(nd_load_acquire(&nd_process_state) != 2))
        nd_process_init();
}

#endif /* ND_INIT_H */
