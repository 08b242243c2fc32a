/*
 * placement.h - what the NUMA placement tests (tests/placement/) share:
 * the topology as the kernel describes it, pinning threads to CPUs, the
 * kernel's view of where pages live and which policy covers an address,
 * the size lists, and how a test reports.
 *
 * Placement is always judged by the kernel, never by asking nodal:
 *   - where an OS page lives: move_pages(2) with nodes == NULL (query only);
 *   - which policy covers an address: get_mempolicy(2) with MPOL_F_ADDR;
 *   - the topology: /sys/devices/system/node.
 * Both system calls are made with syscall(2), so the tests need neither
 * libnuma nor numaif.h.
 *
 * Reporting. A test is one program named after the property it checks. It
 * calls pt_begin(), reports each violation with pt_fail() (the message
 * states what was expected and what was found; all violations are counted,
 * the first PT_MAX_REPORTS are printed) and ends with pt_end(), which prints
 *     PASS <name>
 *     FAIL <name>: <n> violation(s)
 * and returns the exit status (0 or 1), or with pt_skip(), which prints
 *     SKIP <name>: <why>
 * and returns 77. A skip is never reported as a pass; a test that could run
 * only part of its property on this machine says which part in an INFO line.
 */
#ifndef ND_PLACEMENT_H
#define ND_PLACEMENT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define PT_SKIP 77

/* Node ids the tests handle; nodal's own limit is NODAL_MAX_NODES (64). */
#define PT_MAX_NODES 64
#define PT_MAX_CPUS 4096
/* get_mempolicy() needs a mask at least as wide as the kernel's node ids. */
#define PT_MASK_BITS 1024
#define PT_MASK_LONGS (PT_MASK_BITS / (8 * sizeof(unsigned long)))

/* Kernel policy modes (linux/mempolicy.h). */
#define PT_MPOL_DEFAULT 0
#define PT_MPOL_PREFERRED 1
#define PT_MPOL_BIND 2
#define PT_MPOL_INTERLEAVE 3
#define PT_MPOL_LOCAL 4

/* ---- topology ----------------------------------------------------------- */
typedef struct pt_node {
    int id;
    int has_memory;        /* listed in /sys/devices/system/node/has_memory */
    int has_cpus;          /* has CPUs this process may run on */
    int ncpus;             /* those CPUs, ascending */
    int *cpus;
    long total_kib;        /* MemTotal / MemFree from nodeN/meminfo */
    long free_kib;
} pt_node;

typedef struct pt_topo {
    int nnodes;                 /* online nodes, ascending ids */
    pt_node node[PT_MAX_NODES];
    int nmem;                   /* ids of nodes with memory */
    int mem[PT_MAX_NODES];
    int ncpunode;               /* ids of nodes with usable CPUs */
    int cpunode[PT_MAX_NODES];
    int page_size;
} pt_topo;

/* Read once (first call) from /sys; exits 2 if /sys has no node directory. */
const pt_topo *pt_topology(void);
const pt_node *pt_node_get(int id);         /* NULL if not online */
/* Current MemFree of a node in KiB (re-read, not cached); -1 if unknown. */
long pt_node_free_kib(int id);
/* The kernel's distance between two nodes, -1 if unknown. */
int pt_sys_distance(int from, int to);

/* ---- threads and CPUs ---------------------------------------------------- */
/* The k-th CPU of the usable CPU nodes, taken round-robin over the nodes
   (k = 0: first CPU of the first node, k = 1: first CPU of the second ...).
   Returns the CPU and stores its node in *node. */
int pt_spread_cpu(int k, int *node);
/* Pins the calling thread to `cpu`; returns 0, or -1 (errno) on failure. */
int pt_pin(int cpu);
/* Node of the CPU the caller runs on (getcpu), -1 on failure. */
int pt_cpu_node(void);

/* ---- kernel view of pages ------------------------------------------------ */
/* Writes one byte in every OS page of [p, p+size) and the last byte, so that
   every page is faulted in (an untouched page has no node). */
void pt_touch(void *p, size_t size, unsigned char v);

typedef struct pt_where {
    size_t pages;          /* OS pages asked about */
    size_t on_node;        /* on the expected node */
    size_t elsewhere;      /* on another node */
    size_t missing;        /* not resident or error (after one retry) */
    size_t first_bad;      /* index of the first page not on the node */
    int first_bad_status;  /* its node, or -errno */
} pt_where;

/* Asks the kernel where every OS page of [p, p+size) is and compares with
   `node`. Returns 0, or -1 if move_pages itself failed (errno). */
int pt_where_is(const void *p, size_t size, int node, pt_where *w);

/*
 * Checks many blocks with few system calls. Pages are queued with the block
 * they belong to and the node they must be on; the batch is sent to the
 * kernel when full and by pt_batch_flush(). Each misplaced block is
 * reported once with pt_fail(), with `what` and `tag` identifying it.
 */
typedef struct pt_batch pt_batch;
pt_batch *pt_batch_new(void);
void pt_batch_free(pt_batch *b);
void pt_batch_add(pt_batch *b, const void *p, size_t size, int node, const char *what,
                  unsigned long tag);
void pt_batch_flush(pt_batch *b);
/* Totals so far (pages are counted after the flush that checked them). */
size_t pt_batch_pages(const pt_batch *b);
size_t pt_batch_bad_pages(const pt_batch *b);
size_t pt_batch_bad_blocks(const pt_batch *b);

/* Policy of the address p as get_mempolicy(MPOL_F_ADDR) reports it: the mode
   without mode flags, and the node mask. Returns 0 or -1 (errno). */
int pt_policy_of(const void *p, int *mode, unsigned long mask[PT_MASK_LONGS]);
/* The calling thread's own policy (no address). */
int pt_thread_policy(int *mode, unsigned long mask[PT_MASK_LONGS]);
/* "bind{1}", "default", "preferred{0,3}" ... for messages. */
const char *pt_policy_str(int mode, const unsigned long *mask, char *buf, size_t len);
/*
 * A node block must be covered by a policy that names exactly its node:
 * bind{node}, or preferred{node} - nodal commits node memory under
 * preferred{node} and then checks and migrates every page itself, because a
 * bind fault on a full node calls the OOM killer instead of failing.
 * Anything else (default, interleave, another node, a wider mask) means the
 * block did not come from that node's memory. Checks the first and the last
 * byte; reports with pt_fail(). Returns 1 if ok.
 */
int pt_expect_node_policy(const void *p, size_t size, int node, const char *what);
/* A plain malloc block must be under the default policy (first and last
   byte). Reports with pt_fail(); returns 1 if ok. */
int pt_expect_default_policy(const void *p, size_t size, const char *what);

/* ---- sizes --------------------------------------------------------------- */
/* Block sizes covering every size class: 16 B .. 128 KiB in 1/8-octave steps
   (finer than any class spacing nodal might use), each also +1. */
int pt_class_sizes(size_t *out, int max);
/* Large blocks: just above the classes up to a few MiB. */
int pt_large_sizes(size_t *out, int max);
/* Huge blocks: 8 .. 64 MiB, each at most `cap` bytes (skip the rest). */
int pt_huge_sizes(size_t *out, int max, size_t cap);

/* ---- misc ---------------------------------------------------------------- */
size_t pt_rss_bytes(void);                  /* /proc/self/statm, resident */
double pt_now(void);                        /* seconds, monotonic */
uint64_t pt_rand(uint64_t *state);          /* splitmix64 */
/* Largest value of "key": <number> in a JSON text (0 if absent), so a total
   is found even when the key also appears per node. *found = occurrences. */
unsigned long long pt_json_max(const char *json, const char *key, int *found);
/* nodal_stats_json() into a malloc'ed string (free it). */
char *pt_stats_json(void);

/* ---- reporting ----------------------------------------------------------- */
#define PT_MAX_REPORTS 25

/*
 * Starts the test: prints its name and the property, reads the common
 * options and the topology. Common options:
 *   --expect-option NAME=VALUE   fail unless nodal_option_get(NAME) == VALUE
 *                                (a run meant for an option really used it)
 *   --expect-balancing 0|1       fail unless the kernel's automatic NUMA
 *                                balancing is off (0) / on (1) in this run
 *                                (run-vm.sh's balancing column took)
 *   -v                           more output
 * Arguments it does not know are left for the test: it moves them to
 * argv[1..] and returns their count + 1, the test's new argc.
 */
int pt_begin(int argc, char **argv, const char *name, const char *property);
/* /proc/sys/kernel/numa_balancing (0 off, 1 on, 2 memory tiering), -1 if
   it cannot be read (a kernel without NUMA balancing). */
int pt_numa_balancing(void);
/* For tests without arguments of their own: dies on any left over. */
void pt_no_args(int argc, char **argv);
extern int pt_verbose;
/* A violation: "FAIL: <message>". Thread-safe. */
void pt_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Informational line: "INFO: <message>". Thread-safe. */
void pt_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Violations so far. */
unsigned long pt_failures(void);
/* Prints PASS/FAIL and returns 0/1. */
int pt_end(void);
/* Prints SKIP and returns 77. */
int pt_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A setup problem that makes the test meaningless (not a verdict on nodal):
   prints "FAIL <name>: setup: ..." and exits 2. */
_Noreturn void pt_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Runs this program again (/proc/self/exe) with argv (argv[0] first, NULL
   last), NODAL_OPTIONS = options (unset when NULL; NODAL_NODE_FALLBACK
   unset either way), and waits for it. 0 when it exited with status 0;
   otherwise a violation naming `mode` (a kill by a signal said to be a
   failure to survive `what`: the OOM killer, most likely), and 1. */
int pt_run_self(char *const argv[], const char *options, const char *mode, const char *what);

#endif /* ND_PLACEMENT_H */
