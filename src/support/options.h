/*
 * options.h - the one table of run-time options, and nodal's messages.
 *
 * Options are read once, at process initialisation, from NODAL_OPTIONS
 * ("name=value,name=value") and then from NODAL_<NAME> variables, which win.
 * An invalid value prints one warning line on stderr and keeps the default;
 * an unknown name prints one line naming the closest option.
 *
 * The table drives parsing, validation, the messages, nodal_option_get(),
 * nodal-run's flags (tools/nodal-run.c links this file, so it accepts and
 * refuses exactly what the library does, in the same words) and the option
 * tables of docs/options.md, the man pages and `nodal-run --list-options`
 * (tools/gen-options.c).
 */
#ifndef ND_OPTIONS_H
#define ND_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "config.h"
#include "msg.h"

/* Kinds of values. */
#define ND_OPTK_INT    0   /* integer in lo..hi */
#define ND_OPTK_SIZE   1   /* bytes in lo..hi; accepts k/m/g suffixes */
#define ND_OPTK_ENUM   2   /* one of `names` ('|'-separated), stored as its index */
#define ND_OPTK_TEXT   3   /* text of at most hi bytes (a file name); nd_opt_text() */

/* Longest file name a text option takes. */
#define ND_OPT_TEXT_MAX 4095

/* X(name, kind, default, min, max, names, meaning) */
#define ND_OPTIONS(X) \
    X(stats,          ND_OPTK_ENUM, 0,     0, 3,        "off|text|json|summary", "print statistics at exit (to stderr, or to stats_file): text = a report, json = JSON, summary = the report's first line only (one line per process)") \
    X(stats_file,     ND_OPTK_TEXT, 0,     0, ND_OPT_TEXT_MAX, "",          "file the exit statistics go to instead of stderr; %p in the name becomes the process id (one file per process)") \
    X(verbose,        ND_OPTK_INT,  0,     0, 1,        "",                 "print diagnostics (option values, topology problems) on stderr") \
    X(check,          ND_OPTK_INT,  1,     0, 2,        "",                 "heap checks: 1 = the cheap ones (default; always on: 0 is the same), 2 = every free validated, caches off, freed memory filled with 0xdf") \
    X(purge_delay,    ND_OPTK_INT,  100,   0, 3600000,  "",                 "milliseconds freed memory stays unused before it is returned to the OS (0 = at once); a thread that makes no maintenance pass for 5 of them (asleep, or not calling the allocator) has its heap's empty pages, spares and pending purges given back by another thread's maintenance") \
    X(cache_segments, ND_OPTK_INT,  16,    0, 65536,    "",                 "free 4 MiB segments kept mapped per node and kind for reuse (their memory is still purged); the cache keeps more, up to 1,024, while segments it unmapped are asked for again within a purge delay, and comes back to this when that stops") \
    X(tcache_max,     ND_OPTK_SIZE, 131072, 0, 131072,  "",                 "largest block size kept in thread caches (the default, 128k, caches every size class; a bin of 48 KiB holds 10 blocks); with a lower value the classes above it go to pages directly, and a block of them freed by another thread goes home to its page") \
    X(tcache_count,   ND_OPTK_INT,  2048,  0, 65536,    "",                 "most blocks a thread cache may hold per size class (it starts at 8 KiB worth, 2 to 32 blocks, one past 16 KiB, and doubles when a workload needs more)") \
    X(tcache_bytes,   ND_OPTK_SIZE, 262144, 0, 1 << 30, "",                 "most bytes a thread cache may hold per size class, twice past 16 KiB (caps tcache_count for larger classes); a bin of a class up to 16 KiB whose batches cycle whole through the transfer store, in a cache whose other bins hold at most this much (those a thread took with a pooled record and has not used give their capacity back first), may grow to fit its batches, up to 4 x tcache_total's worth or 4 times this, whichever is more (at most tcache_count blocks), drawing from the pool past tcache_total") \
    X(tcache_total,   ND_OPTK_SIZE, 1048576, 0, 1 << 30, "",                "most bytes a thread cache may hold over all its size classes: a class's cache grows only while the sum of their capacities stays under it (each starts at 8 KiB worth, whatever this is); with more than two thread caches per CPU, each grows only to its share of tcache_total x 2 x CPUs (at least an eighth of tcache_total), a class's bin to 16 KiB worth whatever the share, and to twice the share for a class whose runs of requests take 8 times its cache's capacity; a cache whose bins of classes up to 16 KiB cycle whole bins through the transfer store (their batches do not fit), or whose full bins hold only its own blocks, may grow past it, or past its share, drawing from one pool of 16 x tcache_total for the whole process, each cache at most 4 x tcache_total of it (with CPUs shared, at most its even part of it)") \
    X(transfer,       ND_OPTK_INT,  2,     0, 2,        "",                 "free blocks shared between the thread caches of a kind of memory (plain memory of a node, memory bound to a node), as arrays of pointers: a bounded store per kind and size class (2,048 blocks and 2 MiB of them at most, 64 blocks for classes above 16 KiB; what sat untaken through a purge_delay is sent back to the pages), filled by a cache's overflows and taken by its refills before its heap carves fresh blocks (docs/how-it-works.md). 2 = every block of an overflow, of the heap's own pages or of others', so the node's heaps reuse each other's free blocks instead of each carving to its own peak; 1 = only blocks of other heaps' pages (the hand-offs between threads); 0 = none: every overflow goes to the blocks' pages") \
    X(node_fallback,  ND_OPTK_ENUM, 0,     0, 1,        "strict|preferred", "when the requested node is full: strict = NULL/ENOMEM, preferred = use other nodes (counted)") \
    X(huge_pages,     ND_OPTK_INT,  0,     0, 1,        "",                 "1 = ask for transparent huge pages on node-bound segments (MADV_HUGEPAGE), and leave plain segments to the kernel's choice; 0 = where the kernel gives them unasked (transparent_hugepage mode always), nodal's segments of up to 4 MiB and its metadata opt out (MADV_NOHUGEPAGE: nodal commits and gives back 64 KiB chunks, and a 2 MiB page around one holds memory it never counts nor returns); huge blocks keep the kernel's choice") \
    X(purge_batch,    ND_OPTK_INT,  1,     0, 1,        "",                 "1 = the purges of a maintenance pass go to the kernel in one process_madvise(2) call on the process itself where the kernel takes it (Linux 6.14 and later), one madvise(2) a range where it refuses; 0 = one madvise(2) a range always, never process_madvise (for a seccomp allow-list that kills a process on a system call it does not list)") \
    X(reclaim_on_free, ND_OPTK_INT, 1,     0, 1,        "",                 "a free into a segment abandoned by an exited thread adopts that segment (plain memory: only a segment of the freeing thread's node)") \
    X(follow_thread,  ND_OPTK_INT,  1,     0, 1,        "",                 "plain memory follows a thread that moves to another node: where threads can change nodes (CPUs whose local memory comes from two or more nodes), every slow path reads the CPU's node (rseq, or getcpu), and each size class looks at it at least every 16 KiB of requests (every 2 for blocks of 8 KiB and more; a look is about 40 instructions), and at every malloc for a second and 65,536 mallocs after a move (about 43 instructions more per malloc then), so that a thread moved again is noticed before it gets a block of its old node; after a move the thread's cached blocks go back, its old node's pages are handed back to that node (free ones returned to the OS) and its memory comes from the new node. A move costs a few microseconds per segment the thread held, and the old node refaults what it reuses. 0 = a thread keeps the memory of the node it started on. Never under a memory policy (numactl, set_mempolicy): the kernel places plain memory then") \
    X(tier_file,      ND_OPTK_TEXT, 0,     0, ND_OPT_TEXT_MAX, "",          "file of measured latency and bandwidth per (CPU node, memory node) that the tier calls use when the firmware gives no HMAT (nodal-verify --matrix --save writes it; docs/tiers.md)") \
    X(tier_latency_max,   ND_OPTK_SIZE, 0, 0, 1L << 40, "",             "most node-bound memory the process may map on the nodes of the latency tier (0 = no cap), counted in whole 4 MiB segments and huge mappings while mapped (not bytes of blocks); beyond it they count as full") \
    X(tier_bandwidth_max, ND_OPTK_SIZE, 0, 0, 1L << 40, "",             "most node-bound memory the process may map on the nodes of the bandwidth tier (0 = no cap), counted in whole 4 MiB segments and huge mappings while mapped (not bytes of blocks); beyond it they count as full") \
    X(tier_capacity_max,  ND_OPTK_SIZE, 0, 0, 1L << 40, "",             "most node-bound memory the process may map on the nodes of the capacity tier (0 = no cap), counted in whole 4 MiB segments and huge mappings while mapped (not bytes of blocks); beyond it they count as full") \
    X(secure,         ND_OPTK_INT,  0,     0, 2,        "",                 "hardened mode: 1 = for production: guard pages after segments and large blocks, a fresh page's blocks handed out in a random order (freed memory reused in address order, a page emptied and carved again included), a keyed canary word at the end of each small and medium block checked at every free (requests padded by 8 bytes); frees take a checked slow path, mallocs stay on the fast path (1.14x the default's time in geometric mean over the benchmark suite's rows, 1.3-1.5x on batches of 1 KiB blocks and hand-offs between threads); 2 = also the debugging aids: the canary right after the request with 16 checked bytes of slack, freed blocks filled and checked at reuse, a quarantine of 256 freed blocks, a random block per malloc (freed blocks reused in a random order too); every call takes a slow path, 2-8 times slower (docs/hardening.md)") \
    X(prof,           ND_OPTK_INT,  0,     0, 1,        "",                 "heap profiling: samples allocations (one per prof_rate bytes on average) with their call stacks; a profile and a leak report at exit (docs/profiling.md)") \
    X(prof_rate,      ND_OPTK_SIZE, 524288, 1, 1 << 30, "",                 "mean bytes allocated between two samples of the heap profile") \
    X(prof_prefix,    ND_OPTK_TEXT, 0,     0, ND_OPT_TEXT_MAX, "",          "start of the heap profile files' names (default nodal-prof.%p: the current directory); %p becomes the process id") \
    X(prof_signal,    ND_OPTK_INT,  0,     0, 64,       "",                 "a signal number that dumps the heap profile when the process receives it (12 = SIGUSR2; 0 = none)") \
    X(prof_interval,  ND_OPTK_INT,  0,     0, 86400,    "",                 "seconds between periodic dumps of the heap profile (0 = none)") \
    X(prof_libgcc,    ND_OPTK_INT,  0,     0, 1,        "",                 "1 = the heap profile's stacks by libgcc's unwinder (glibc's backtrace(), which loads libgcc_s: about 0.3 MB more resident) instead of nodal's own reader of the same unwind tables (docs/profiling.md)") \
    X(prof_growth,    ND_OPTK_SIZE, 0,     0, 1L << 40, "",                 "dump the heap profile whenever its estimate of live bytes grew by this much since the last dump (0 = never)") \
    X(stats_every,    ND_OPTK_INT,  0,     0, 86400,    "",                 "seconds between statistics reports of a running process, on stderr, in the form `stats` chooses (its summary line when stats is off; 0 = none)")

/* How values are spelled, for every document that lists the options. */
#define ND_OPT_SPELLINGS \
    "How values are written: a number option also takes yes, on or true for 1 and " \
    "no, off or false for 0, and so does stats; a switch or a level (an option of " \
    "0..1 or 0..2, and stats) given by its name alone means 1 (huge_pages means " \
    "huge_pages=1, secure means secure=1); " \
    "sizes take the suffixes k, m and g (tcache_max=64k); a choice may also " \
    "be given by its position, counting from 0 (stats=2 is stats=json); letter case " \
    "does not matter. A file name in NODAL_OPTIONS cannot contain a comma (use " \
    "NODAL_STATS_FILE for one that does)."

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
/* The values. A text option's value is 1 when it is set, 0 when not. */
extern long nd_opt_values[ND_OPT_COUNT] nd_hidden;
/* check >= 2 or secure=1: every free goes through the validating slow path. */
extern uint8_t nd_check_frees nd_hidden;

void nd_options_init(void) nd_hidden;
static inline long nd_opt(nd_opt_id id) { return nd_opt_values[id]; }
static inline bool nd_opt_verbose(void) { return nd_opt_values[ND_OPT_verbose] != 0; }
/* secure=1 or 2 (slow paths only: the fast paths never see it, see
   secure.h): guard pages, padded requests with a canary word. */
static inline bool nd_secure_on(void) { return nd_opt_values[ND_OPT_secure] != 0; }
/* secure=2: every call on a slow path, with the debugging aids (exact
   canaries, fills, quarantine). */
static inline bool nd_secure_full(void) { return nd_opt_values[ND_OPT_secure] >= 2; }
/* A text option's value ("" when not set). */
const char *nd_opt_text(nd_opt_id id) nd_hidden;

/* ---- formatting (no allocation; each returns the length it needs, like
   snprintf, and always terminates buf when len > 0) ---------------------- */

/* An option's current value as its documentation spells it: the name of a
   choice ("strict"), the text of a text option, a number in decimal (sizes in
   bytes). Meant for diagnostics and the statistics JSON: the value is a JSON
   number when nd_opt_is_number(id), else a string to quote. */
size_t nd_opt_format(nd_opt_id id, char *buf, size_t len) nd_hidden;
static inline bool nd_opt_is_number(nd_opt_id id)
{
    return nd_opt_table[id].kind == ND_OPTK_INT || nd_opt_table[id].kind == ND_OPTK_SIZE;
}
/* A value v of option d for people: choice names, sizes with k/m/g when
   exact ("32k"), "(none)" for an unset text option. */
size_t nd_opt_format_value(const nd_opt_desc *d, long v, char *buf, size_t len) nd_hidden;
/* The values an option takes: "0..128k", "strict, preferred", "a file name". */
size_t nd_opt_format_range(const nd_opt_desc *d, char *buf, size_t len) nd_hidden;

/* ---- parsing, shared by the library and nodal-run ------------------------ */

/* The option called name[0..len) (case-insensitive), or -1. */
int nd_opt_find(const char *name, size_t len) nd_hidden;
/* Edit distance between a[0..alen) and b (insert, delete, change or swap
   one letter; case and '-' vs '_' do not count). */
int nd_opt_distance(const char *a, size_t alen, const char *b) nd_hidden;
/* The option that a misspelled name most likely meant: the only option it
   begins, or the nearest within max(2, len / 3) edits; -1 if none is close. */
int nd_opt_closest(const char *name, size_t len) nd_hidden;

/* Checks one setting. `value` is value[0..vlen), or NULL for a name given
   alone. On success sets *id and *out (for a text option *out = 1 and the
   text is value[0..vlen)) and returns 0. Otherwise writes one sentence to msg
   saying what is wrong and what is valid, and returns its length (> 0):
     invalid value '1g' for tcache_max (from NODAL_OPTIONS): out of range; valid: 0..128k
       (bytes; suffixes k, m, g)
     unknown option 'tcache-count' (from NODAL_OPTIONS)<unknown_tail>; did you mean tcache_count?
   *id is the option for an invalid value, -1 for an unknown name.
   `source` says where the setting came from. */
size_t nd_opt_check(const char *name, size_t nlen, const char *value, size_t vlen,
                    const char *source, const char *unknown_tail,
                    int *id, long *out, char *msg, size_t msglen) nd_hidden;

/* Calls fn for every "name=value" or bare "name" in a NODAL_OPTIONS string
   (value NULL for a bare name). */
typedef void nd_opt_visit_fn(void *ctx, const char *name, size_t nlen,
                             const char *value, size_t vlen);
void nd_opt_scan(const char *text, nd_opt_visit_fn *fn, void *ctx) nd_hidden;

/* "NODAL_" + the option's name in capitals, e.g. NODAL_TCACHE_MAX. */
void nd_opt_var_name(nd_opt_id id, char *buf, size_t len) nd_hidden;

/* Expands a stats_file-style name: %p becomes pid, %% a single %. Returns
   the length it needs (like snprintf). */
size_t nd_opt_expand_path(const char *tmpl, long pid, char *buf, size_t len) nd_hidden;

#endif /* ND_OPTIONS_H */
