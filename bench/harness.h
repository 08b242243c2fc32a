/*
 * harness.h - what every benchmark program shares: clocks, a team of pinned
 * threads started together behind a barrier, resident-set readings, a small
 * random generator, argument helpers and the one output format run.py parses.
 *
 * Output format: each measurement is one line
 *     result <workload> key=value key=value ...
 * Keys run.py knows as metrics (ns_pair, peak_rss_mib, ...) are values; every
 * other key is a parameter that names the row (size=32 threads=8 ...).
 * Anything else a program prints is ignored by run.py, so programs may print
 * notes freely (they end up in the run log).
 *
 * Two times per operation are reported:
 *  - ns_*: "core-normalised" wall time: wall time of the timed region times
 *    min(threads, CPUs available), divided by the operations done. With
 *    perfect scaling it stays flat as threads grow, including past the number
 *    of CPUs (oversubscription), so a rise means lost throughput. It includes
 *    time spent blocked (locks) and time the machine gave to other programs.
 *  - cpu_ns_*: CPU time the benchmark's threads consumed in the timed region
 *    (CLOCK_THREAD_CPUTIME_ID), divided by the operations done. It does not
 *    count time spent waiting for a CPU, so on a shared, busy machine it is
 *    the steadier of the two; it also does not count time blocked in the
 *    kernel, so compare it with ns_* where threads interact.
 */
#ifndef BENCH_HARNESS_H
#define BENCH_HARNESS_H

#include <stddef.h>
#include <stdint.h>

/* C++ programs (cxxnew.cpp, bstxx.cpp) include this too: the lock word is a
   std::atomic<int> there, which has the layout of C's _Atomic int. */
#ifdef __cplusplus
#include <atomic>
#define BENCH_ATOMIC_INT std::atomic<int>
extern "C" {
#else
#include <stdatomic.h>
#define BENCH_ATOMIC_INT _Atomic int
#endif

/* Makes p visible to the compiler as "used and possibly written through",
   so a malloc/free pair around it cannot be optimised away. */
static inline void escape(void *p) { __asm__ volatile("" : : "g"(p) : "memory"); }
/* Tells the compiler all memory may have changed. */
static inline void clobber(void) { __asm__ volatile("" : : : "memory"); }
static inline void cpu_relax(void) { __asm__ volatile("pause" ::: "memory"); }

/* A test-and-test-and-set lock that yields the CPU after a short spin, so a
   preempted holder (oversubscription, shared machine) does not stall the
   waiters for a whole time slice. Zero-initialised = unlocked. */
typedef struct { BENCH_ATOMIC_INT held; } bench_lock;
void bench_lock_acquire(bench_lock *l);
static inline void bench_lock_release(bench_lock *l)
{
#ifdef __cplusplus
    l->held.store(0, std::memory_order_release);
#else
    atomic_store_explicit(&l->held, 0, memory_order_release);
#endif
}

/* Monotonic clock in nanoseconds. */
uint64_t now_ns(void);

/* Keeps argc/argv (for re-exec) and reads BENCH_NOPIN. Call first in main. */
/* TLB-shootdown IPIs received so far, all CPUs (/proc/interrupts); -1 if
   the kernel does not say. */
long long bench_tlb_shootdowns(void);

void bench_init(int argc, char **argv);
extern int bench_argc;
extern char **bench_argv;

/* CPUs this process may run on, and the i-th of them (i wraps around). */
int bench_ncpus(void);
int bench_cpu(int i);
/* Pins the calling thread to one CPU; no-op when pinning is disabled. */
void bench_pin_self(int cpu);
/* 0 disables pinning (option -P of every program, or BENCH_NOPIN=1). */
extern int bench_pinning;

/* ---- thread team ------------------------------------------------------- */
typedef struct bench_thread {
    int id;             /* 0 .. nthreads-1 */
    int nthreads;
    int cpu;            /* CPU it is pinned to (or would be) */
    void *arg;          /* the team's shared argument */
    uint64_t rng;       /* per-thread random state, seeded from id */
    uint64_t ops;       /* operations done in the timed region (worker sets) */
    uint64_t t_start;   /* set by bench_sync() */
    uint64_t t_end;     /* set by bench_stop(), else when the worker returns */
    uint64_t cpu_start, cpu_end;    /* thread CPU time at the same points */
    double acc[4];      /* workload-specific sums (e.g. ns in alloc phases) */
    char pad_[64];      /* keep neighbouring records off each other's lines */
} bench_thread;

typedef void (*bench_fn)(bench_thread *t);

typedef struct bench_team {
    uint64_t wall_ns;   /* first start to last stop */
    uint64_t ops;       /* sum of per-thread ops */
    double user_s, sys_s;   /* process CPU time over the timed region */
    uint64_t cpu_ns;    /* sum of the threads' CPU time in their timed regions */
    double acc[4];      /* sums over threads of bench_thread.acc */
    double max_thread_s;    /* longest single thread's timed region */
} bench_team;

/*
 * Runs fn in n threads, thread i pinned to bench_cpu(i). Each worker does its
 * set-up and warm-up, then calls bench_sync(t), which returns once every
 * thread has arrived: the timed region starts there and ends when the worker
 * calls bench_stop(t) (or returns). Untimed clean-up may follow bench_stop.
 * With BENCH_KSTAT=1 in the environment it also prints one "note: kernel
 * over the timed region:" line: the changes of /proc/vmstat's fault, THP,
 * NUMA, migration and page-allocation counters (system-wide), of the TLB
 * shootdown IPIs (/proc/interrupts) and of the process's faults and context
 * switches, from the start of the timed region until the first worker calls
 * bench_stop (what threads do after their timed region is left out), and
 * the number of the process's mappings (VMAs) at the end. BENCH_KSTAT=2
 * also prints /proc/self/maps and numa_maps (every mapping, with its
 * policy) then.
 */
void bench_team_run(int n, bench_fn fn, void *arg, bench_team *out);
void bench_sync(bench_thread *t);
void bench_stop(bench_thread *t);

/* ns per op for a team result, core-normalised wall time and CPU time (see
   the top of this file). */
double bench_ns_per_op(const bench_team *r, int threads);
double bench_cpu_ns_per_op(const bench_team *r);
/* CPU time of the calling thread in ns. */
uint64_t thread_cpu_ns(void);

/* ---- memory ------------------------------------------------------------ */
/* VmRSS / VmHWM of this process in KiB (from /proc/self/status), -1 if unknown. */
long bench_rss_kib(void);
long bench_peak_rss_kib(void);
/* Resets VmHWM to the current RSS (/proc/self/clear_refs); 0 on success. */
int bench_reset_peak_rss(void);
/* RSS of this process now in KiB, from /proc/self/statm with open/read on
   the stack: no malloc, so a thread that samples it gets no heap or cache of
   its own from the allocator measured; -1 if unknown. The kernel's count may
   lag by its per-CPU batches (tens of OS pages a CPU). */
long bench_rss_now_kib(void);
/* VmSize of this process in KiB (address space in use), -1 if unknown. */
long bench_vm_kib(void);
/* Writes one byte in every 4 KiB of [p, p + size) and the last byte, so every
   OS page of the block is resident afterwards (faulted in if it was not). */
void bench_touch_pages(void *p, size_t size);

/* ---- randomness (xorshift64*, deterministic per seed) ------------------ */
static inline uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}
/* Uniform in [0, n). */
static inline uint64_t rng_below(uint64_t *s, uint64_t n) { return (uint64_t)(((unsigned __int128)rng_next(s) * n) >> 64); }
uint64_t rng_seed(uint64_t a, uint64_t b);
/* Log-uniform in [lo, hi] (lo >= 1): as many sizes per octave as any other. */
size_t rng_log_uniform(uint64_t *s, size_t lo, size_t hi);

/* ---- arguments --------------------------------------------------------- */
/* "4k" -> 4096, "2m" -> 2097152, "1g"; exits with a message on junk. */
long long parse_size(const char *s);
/* Comma list of sizes into out[max]; returns the count. */
int parse_list(const char *s, long long *out, int max);
/* Prints the message and exits with status 2. */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* ---- output ------------------------------------------------------------ */
/* Prints "result <workload> <formatted>\n" and flushes stdout. */
void bench_result(const char *workload, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Exit status for "this configuration cannot run here" (run.py: skipped). */
#define BENCH_SKIP 77

#ifdef __cplusplus
}
#endif

#endif
