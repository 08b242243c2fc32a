/*
 * options.h - the one table of run-time options.
 *
 * Options are read once, at process initialisation, from NODAL_OPTIONS
 * ("name=value,name=value") and then from NODAL_<NAME> variables, which win.
 * An invalid value prints one warning line on stderr and keeps the default.
 * The table drives parsing, validation, nodal_option_get() and the README's
 * table (tools/gen-options prints it).
 */
#ifndef ND_OPTIONS_H
#define ND_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include "config.h"
#include "msg.h"

/* Kinds of values. */
#define ND_OPTK_INT  0   /* plain integer */
#define ND_OPTK_SIZE 1   /* bytes; accepts k/m/g suffixes */
#define ND_OPTK_ENUM 2   /* one of the names in `names` ('|'-separated), stored as its index */

/* X(name, kind, default, min, max, names, meaning) */
#define ND_OPTIONS(X) \
    X(stats,          ND_OPTK_INT,  0,     0, 2,        "",                 "print statistics to stderr at exit: 1 = text report, 2 = JSON") \
    X(verbose,        ND_OPTK_INT,  0,     0, 1,        "",                 "print diagnostics (option values, topology problems) on stderr") \
    X(check,          ND_OPTK_INT,  1,     0, 2,        "",                 "heap checks: 0 = none, 1 = cheap ones (default), 2 = every free validated, caches off, freed memory filled with 0xdf") \
    X(purge_delay,    ND_OPTK_INT,  100,   0, 3600000,  "",                 "milliseconds freed memory stays unused before it is returned to the OS (0 = at once)") \
    X(cache_segments, ND_OPTK_INT,  16,    0, 65536,    "",                 "free 4 MiB segments kept mapped per node and kind for reuse (their memory is still purged)") \
    X(tcache_max,     ND_OPTK_SIZE, 32768, 0, 131072,   "",                 "largest block size kept in thread caches; larger sizes go to pages directly") \
    X(tcache_count,   ND_OPTK_INT,  2048,  0, 65536,    "",                 "most blocks a thread cache may hold per size class (it starts at a quarter and grows when a workload needs it)") \
    X(tcache_bytes,   ND_OPTK_SIZE, 262144, 0, 1 << 30, "",                 "most bytes a thread cache may hold per size class (caps tcache_count for larger classes)") \
    X(node_fallback,  ND_OPTK_ENUM, 0,     0, 1,        "strict|preferred", "when the requested node is full: strict = NULL/ENOMEM, preferred = use other nodes (counted)") \
    X(huge_pages,     ND_OPTK_INT,  0,     0, 1,        "",                 "ask for transparent huge pages on node-bound segments (MADV_HUGEPAGE)") \
    X(prefetch,       ND_OPTK_INT,  0,     0, 8,        "",                 "prefetch the next free block of a size class on malloc: cache lines, 0 = off") \
    X(reclaim_on_free, ND_OPTK_INT, 1,     0, 1,        "",                 "a free into a segment abandoned by an exited thread adopts that segment")

typedef enum {
#define ND_OPT_ENUM(name, kind, def, lo, hi, names, meaning) ND_OPT_##name,
    ND_OPTIONS(ND_OPT_ENUM)
#undef ND_OPT_ENUM
    ND_OPT_COUNT
} nd_opt_id;

typedef struct nd_opt_desc {
    const char *name;
    int kind;
    long def, lo, hi;
    const char *names;
    const char *meaning;
} nd_opt_desc;

extern const nd_opt_desc nd_opt_table[ND_OPT_COUNT] nd_hidden;
extern long nd_opt_values[ND_OPT_COUNT] nd_hidden;
/* The prefetch option as the fast path reads it (one byte). */
extern uint8_t nd_prefetch_lines nd_hidden;
/* check >= 2: every free goes through the validating slow path. */
extern uint8_t nd_check_frees nd_hidden;

void nd_options_init(void) nd_hidden;
static inline long nd_opt(nd_opt_id id) { return nd_opt_values[id]; }
static inline bool nd_opt_verbose(void) { return nd_opt_values[ND_OPT_verbose] != 0; }

#endif /* ND_OPTIONS_H */
