/*
 * os.h - the contract between nodal and the kernel. os.c is the only file
 * that makes system calls (mmap, madvise, mbind, move_pages, ...) or reads
 * files; everything above it asks through these functions.
 *
 * Contract:
 *  - Mappings are private, anonymous, read-write, and zero when new.
 *  - Bind before first touch: nd_os_bind() must be called on a range before
 *    any byte of it is written, or the pages already touched stay where the
 *    default policy put them.
 *  - nd_os_populate() faults a range in now (so placement can be checked and
 *    a full node is seen as an error, not as the OOM killer later).
 *  - nd_os_purge() gives the physical pages back; the range stays mapped and
 *    reads as zero afterwards. Its policy (binding) is kept.
 *  - No function here calls malloc, directly or through libc, and none keeps
 *    a lock, so all are safe during start-up, in fork handlers and at exit.
 *  - A guard page (nd_os_protect(p, n, false)) faults on any access until
 *    it is made accessible again; nd_os_populate() must not be given one.
 *  - Failures return -1 / NULL and leave errno as the kernel set it.
 */
#ifndef ND_OS_H
#define ND_OS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/uio.h>
#include "config.h"

/* Kernel NUMA policy modes (linux/mempolicy.h), without needing the header. */
#define ND_MPOL_DEFAULT    0
#define ND_MPOL_PREFERRED  1
#define ND_MPOL_BIND       2
#define ND_MPOL_INTERLEAVE 3

void   nd_os_init(void) nd_hidden;
size_t nd_os_page_size(void) nd_hidden;      /* OS page size */

/* Address space. */
void *nd_os_map_aligned(size_t size, size_t alignment) nd_hidden;  /* NULL on failure */
/* A mapping of size bytes exactly at addr, never over another one
   (MAP_FIXED_NOREPLACE); NULL if the range is taken or there is no room. */
void *nd_os_map_at(uintptr_t addr, size_t size) nd_hidden;
/* How many of nodal's mappings the kernel refused with ENOMEM so far: a
   caller whose request failed tells a lack of address space (this grew
   meanwhile) from a full node (strict placement), which unmapping free
   memory would not help. */
uint64_t nd_os_map_refusals(void) nd_hidden;
/* Whether the process's address space is limited (RLIMIT_AS set, soft
   limit): the kernel may refuse a mapping with room to spare in memory. */
bool  nd_os_space_limited(void) nd_hidden;
/* Whether nd_os_space_limited ever said so (it is asked once at start,
   nd_os_init), or the kernel refused a mapping for lack of room (one
   load, no system call). Inline: as a function it was the only code in
   os.c's cold part that a program's large blocks (a heap profile's cell
   slabs among them) ran after start-up, one more resident page of code. */
extern bool nd_os_limit_seen nd_hidden;   /* set once (relaxed), by os.c only */
static inline bool nd_os_space_limit_seen(void) { return __atomic_load_n(&nd_os_limit_seen, __ATOMIC_RELAXED); }
/* Whether the process's address space has reached ND_OS_TIGHT_SIXTEENTHS
   sixteenths of its limit (RLIMIT_AS), false again below half that: a
   mark past which requests take the blocks that waste the least of it
   (route.c), since a live block cannot shrink once the limit is reached.
   Read only while a limit was seen (nd_os_space_limit_seen), at nodal's
   mappings: the size the process had when last asked
   (/proc/self/statm, asked again as nodal's own mappings move by a 64th
   of the limit or cross the mark) and nodal's mappings since. One load.
   A sixteenth: blocks of 100,000 B in 112 KiB up to the mark and in
   their OS pages past it fill a limit of 200 MiB to 0.954x glibc's
   count; from an eighth, 0.947x (bench/aslimit-sweep.py, 2026-12-04). */
#define ND_OS_TIGHT_SIXTEENTHS 1
bool  nd_os_space_tight(void) nd_hidden;
/* Whether the limit, as last read for nd_os_space_tight, holds fewer
   blocks of `bytes` than an eighth of the mappings the kernel allows a
   process (/proc/sys/vm/max_map_count, 65,530 by default: 8,191 blocks):
   a block that gives its unused end back becomes a mapping of its own,
   and each block made once the limit refused a mapping walks the large
   segments (route.c: nd_route_tight). */
bool  nd_os_space_maps_fit(size_t bytes) nd_hidden;
/* How many times nodal gave address space back (a munmap, a mremap that
   shrank or moved): a request that found no room may find some only once
   this moved (or the program unmapped, or the limit rose). */
uint64_t nd_os_space_returns(void) nd_hidden;
void  nd_os_unmap(void *p, size_t size) nd_hidden;
int   nd_os_purge(void *p, size_t size) nd_hidden;
/* A batch of ranges to purge, given back together: one process_madvise(2)
   of MADV_DONTNEED on the process itself (the pidfd PIDFD_SELF_PROCESS,
   Linux 6.14+: advice other than the cold/pageout kinds only since 6.13
   for the calling process), or, once the kernel refused that (EBADF,
   EINVAL, ENOSYS, EPERM, ...: older kernels, seccomp; remembered for the
   process), one madvise per range. A range is purged by the flush, not by
   the add (nd_os_purges_add flushes only a full batch), so a caller
   creates, fills and flushes a batch in one function, during which no
   range in it can be handed out again (it would be zeroed by the flush)
   nor its memory change hands (os.h's users: heap.c's purge pass, node.c's
   sweep; a segment's runs, segment.c). ND_OS_PURGE_BATCH ranges (2 KiB of
   stack) hold a segment's runs (32 at most) and the runs of most heap
   purge passes (a pass past ND_PURGE_PENDING_MAX, 32 MiB, can hold 512
   runs of 64 KiB: in stress-ng's malloc stressor a batch of 64 filled up
   21 times a run of 200,000 requests); a full batch is flushed and
   filled again. */
#define ND_OS_PURGE_BATCH 128
typedef struct nd_os_purges {
    unsigned     n;
    struct iovec r[ND_OS_PURGE_BATCH];
} nd_os_purges;
static inline void nd_os_purges_init(nd_os_purges *b) { b->n = 0; }
void  nd_os_purges_add(nd_os_purges *b, void *p, size_t size) nd_hidden;
void  nd_os_purges_flush(nd_os_purges *b) nd_hidden;
/* From now on every purge is one madvise a range, never process_madvise
   (the option purge_batch=0: a seccomp allow-list that kills on a system
   call it does not list). */
void nd_os_purges_one_by_one(void) nd_hidden;
int   nd_os_populate(void *p, size_t size) nd_hidden;
int   nd_os_advise_hugepage(void *p, size_t size) nd_hidden;
int   nd_os_advise_nohugepage(void *p, size_t size) nd_hidden;   /* MADV_NOHUGEPAGE: 0, or -1 */
/* Whether the kernel backs anonymous memory with transparent huge pages
   unasked (/sys/kernel/mm/transparent_hugepage/enabled is "always"): read
   at the first call. */
bool  nd_os_thp_always(void) nd_hidden;
/* Makes [p, p+size) (whole OS pages) inaccessible (guard page: any access
   faults) or, access = true, readable and writable again. 0 or -1. */
int   nd_os_protect(void *p, size_t size, bool access) nd_hidden;
/* Grow/shrink a mapping, keeping its start (-1 if it cannot in place). */
int   nd_os_remap_inplace(void *p, size_t old_size, size_t new_size) nd_hidden;
/* Move a mapping to `to` (a range reserved with nd_os_map_aligned). */
void *nd_os_remap_to(void *p, size_t old_size, size_t new_size, void *to) nd_hidden;
/* Moves the pages of mapping [p, p+size) to `to` (a range mapped already,
   replaced), leaving [p, p+size) mapped, empty (Linux 5.7's
   MREMAP_DONTUNMAP): a move that can be undone (nd_os_remap_to back over
   it). NULL if the kernel would not (nothing changed but `to`, which may
   be unmapped then). */
void *nd_os_remap_keep(void *p, size_t size, void *to) nd_hidden;

/* NUMA: node masks are arrays of ND_MAX_NODES bits. */
int  nd_os_bind(void *p, size_t size, int mode, const uint64_t *mask) nd_hidden;
/* Query the node of `count` addresses: status[i] = node, or a negative errno
   (-ENOENT: not yet touched). Returns 0, or -1 if the call itself failed. */
int  nd_os_pages_nodes(void **pages, int *status, size_t count) nd_hidden;
/* Node of the page holding p as get_mempolicy(MPOL_F_NODE|MPOL_F_ADDR)
   reports it, or -1. */
int  nd_os_addr_node(const void *p) nd_hidden;
/* Migrate pages[i] to nodes[i]; status[i] = resulting node or -errno.
   Returns 0, or -1 if the call failed as a whole. */
int  nd_os_move_pages(void **pages, const int *nodes, int *status, size_t count) nd_hidden;
/* The CPU the caller runs on, -1 if unknown: from the rseq area glibc
   registered for the thread (nd_os_current_cpu_fast), else sched_getcpu. */
int  nd_os_current_cpu(void) nd_hidden;
/* Does the calling thread allocate under the default policy (MPOL_DEFAULT
   or MPOL_LOCAL: first touch places a page)? false under membind,
   interleave, preferred..., or when it cannot be asked. */
bool nd_os_policy_is_local(void) nd_hidden;
/* The calling thread's CPU as the kernel last wrote it into the thread's
   restartable-sequences area (glibc >= 2.35 registers one per thread), or a
   negative value when there is none (then ask nd_os_current_cpu). One load
   from thread-local memory: no call, no system call. See below. */
static inline int nd_os_current_cpu_fast(void);

/* Time, randomness, threads. */
uint64_t nd_os_now_ms(void) nd_hidden;        /* coarse monotonic clock */
uint64_t nd_os_random(void) nd_hidden;
void     nd_os_yield(void) nd_hidden;
/* A full memory barrier on every CPU that runs a thread of this process
   (membarrier(2), MEMBARRIER_CMD_PRIVATE_EXPEDITED, registered at the
   first call): false where the kernel has none or refuses it (nothing
   was done then). */
bool     nd_os_barrier_all(void) nd_hidden;

/* Files and environment (start-up and statistics only). */
long        nd_os_read_file(const char *path, char *buf, size_t len) nd_hidden; /* bytes, -1 */
/* True if path names anything (a file, a directory, a symbolic link). */
bool        nd_os_path_exists(const char *path) nd_hidden;
/* Calls fn(name, arg) for every entry of a directory but "." and "..";
   the number of entries, or -1 if it cannot be read. Allocates nothing. */
int         nd_os_dir_names(const char *path, void (*fn)(const char *name, void *arg), void *arg) nd_hidden;
const char *nd_os_getenv(const char *name) nd_hidden;
void        nd_os_write_stderr(const char *buf, size_t len) nd_hidden;
/* Creates (or truncates) a file for writing, mode 0644: a descriptor, or -1. */
int         nd_os_create_file(const char *path) nd_hidden;
/* Writes all of buf to fd; false on an error. */
bool        nd_os_write_fd(int fd, const char *buf, size_t len) nd_hidden;
void        nd_os_close(int fd) nd_hidden;
/* Keeps a private duplicate of stderr for the exit report, so that a
   program closing its stderr at exit (coreutils do) still gets it. */
void        nd_os_keep_stderr(void) nd_hidden;
/* Resident set and its peak, from /proc/self/status (bytes; 0 if unknown). */
void        nd_os_rss(size_t *current, size_t *peak) nd_hidden;
/* Bytes of the OS pages of [p, p + len) (p page-aligned) resident now
   and written (/proc/self/pagemap: a page only read maps the kernel's
   zero page, which RSS does not count, nor this); 0 if unknown. */
size_t      nd_os_resident(const void *p, size_t len) nd_hidden;
_Noreturn void nd_os_abort(void) nd_hidden;
long        nd_os_pid(void) nd_hidden;
/* The program's name as the kernel knows it (/proc/self/comm). */
void        nd_os_program_name(char *buf, size_t len) nd_hidden;

/* Byte offset from the thread pointer of the thread's rseq cpu_id (glibc >=
   2.35 keeps an rseq area in every thread's control block: cpu_id is -1
   before registration, -2 when registration failed or was turned off,
   e.g. under valgrind). Set by nd_os_init; 0 before, which reads some word
   of the thread control block: callers must treat the result as a hint
   until start-up is done (the tier table routes every CPU to its slow path
   until then). */
extern intptr_t nd_os_rseq_cpu_off nd_hidden;
#if defined(__x86_64__) && defined(__SEG_FS)
static inline int nd_os_current_cpu_fast(void)
{
    return *(const volatile __seg_fs int32_t *)nd_os_rseq_cpu_off;
}
#elif defined(__GLIBC__) && (defined(__x86_64__) || defined(__aarch64__))
static inline int nd_os_current_cpu_fast(void)
{
    return *(const volatile int32_t *)((const char *)__builtin_thread_pointer() + nd_os_rseq_cpu_off);
}
#else
static inline int nd_os_current_cpu_fast(void) { return -1; }
#endif
/* Heap profiling (prof.c, profile.c). */
/* The return addresses of the calling thread's stack, innermost first
   (glibc's backtrace(): its first call may load libgcc_s, and allocate). */
int         nd_os_backtrace(void **frames, int max) nd_hidden;
/* libgcc's unwinder, called directly (x86-64; loaded by glibc's backtrace(),
   whose first call nd_os_unwind_start makes): false when it is not at hand
   (then nd_os_unwind returns -1). Not inside malloc: it may allocate. */
bool        nd_os_unwind_start(void) nd_hidden;
/* The frames of the calling thread's stack, innermost first, this
   function's caller first: each frame's code address (ips[i], the return
   address its callee returns to) and its canonical frame address (cfas[i],
   DWARF's CFA: the stack pointer of its caller at the call, just above the
   return address of frame i + 1 on x86-64). Up to max frames; -1 when
   nd_os_unwind_start found no unwinder. Does not allocate. */
int         nd_os_unwind(uintptr_t *ips, uintptr_t *cfas, int max) nd_hidden;
/* The same walk by nodal's own reader of the unwind tables (unwind.c:
   x86-64 with glibc's _dl_find_object; no libgcc, no lock, no allocation,
   async-signal-safe): frames whose rules it does not know end the stack.
   -1 where it is not built (nd_os_unwind_own_ok false). */
int         nd_os_unwind_own(uintptr_t *ips, uintptr_t *cfas, int max) nd_noinline nd_hidden;
bool        nd_os_unwind_own_ok(void) nd_hidden;
/* The resident bytes of nodal's unwinder's own memory (its cache of
   frames' rules, mapped at its first walk; 0 before). */
size_t      nd_os_unwind_resident(void) nd_hidden;
/* fork(): the prepare handler waits until no walk is opening or closing
   a file (an open or a close is one system call with every signal
   blocked; a thread the kernel has stopped there is not waited for), and
   until the parent's or the child's handler walks open and close none
   (they read in place, and leave their files to the handlers); the
   child's closes the files other threads' walks held (unwind.c), which no
   thread of the child will close. */
void        nd_os_unwind_fork_prepare(void) nd_hidden;
void        nd_os_unwind_fork_parent(void) nd_hidden;
void        nd_os_unwind_fork_child(void) nd_hidden;
/* Debug builds (ND_DEBUG >= 2; tests): called by a walk right after it
   opened file fd, before its entry holds the number, with every signal
   blocked, so that a test can stall a walk there while another thread
   forks. Release builds do not define it. */
extern void (*nd_os_unwind_opened_hook)(int fd) nd_hidden;
/* What the dynamic loader knows of code address a: the file of its object
   and where that is loaded, the symbol before a and its address (NULLs
   where unknown). False when a is in no loaded object. */
bool        nd_os_symbol(const void *a, const char **file, const void **base,
                         const char **sym, const void **sym_addr) nd_hidden;
/* The lowest and highest address of the executable segments of the loaded
   object that holds code address a; *main: that object is the program
   itself. False when a is in none. */
bool        nd_os_code_range(const void *a, uintptr_t *lo, uintptr_t *hi, bool *main) nd_hidden;
/* Start-up, in libnodal.so: the code a plain program does not run (all
   of the text from os.c's own code on, but its last page) and the unwind
   tables become mappings of their own, and the read-only data before them
   a mapping a page, so that the kernel's fault-around
   (which maps a file's cached pages in aligned runs of 64 KiB around a
   fault, clipped to the mapping) maps none of them around the code the
   program runs; their pages already mapped are unmapped (they are the
   file's: a page the process wrote, a debugger's breakpoint, stays). The
   number of pages unmapped; 0 for a static link. os.c. */
size_t      nd_os_code_trim(void) nd_hidden;
/* libnodal.so's .bss (its zero-filled writable data, an anonymous mapping)
   opts out of transparent huge pages where the kernel gives them unasked
   (nd_os_thp_always): 1.4 MiB written a page here and there, which the
   kernel merged with a neighbouring mapping into 2 MiB pages (2 MiB of
   "data" resident after one malloc). Not in a static link (the program's
   .bss is not nodal's to advise): there, nd_os_static_data_thp_opt_out. */
void        nd_os_data_thp_opt_out(void) nd_hidden;
/* The same in a static program: libnodal.a's .bss, a section of its own
   there (nodal_bss: cmake/localize-archive.cmake), not the program's. The
   first thing start-up does, before any of nodal's zero-filled data is
   written (a write is what makes the kernel give a 2 MiB page; the advice
   does not split one given already). Nothing elsewhere, nor where the mode
   is not "always" (no system call then but the read of the mode). */
void        nd_os_static_data_thp_opt_out(void) nd_hidden;
/* Makes each page of that object's code that the process has not run yet
   fault in alone (not with the 64 KiB around it: os.c); the number of
   pages given MADV_RANDOM to that end. Nothing for the program itself. */
int         nd_os_code_map_by_page(const void *a) nd_hidden;
/* Copies the file at path to descriptor fd (/proc/self/maps into a
   profile) through buf[0..len) (the caller's: no stack page for it);
   false on an error. */
bool        nd_os_copy_file(const char *path, int fd, char *buf, size_t len) nd_hidden;
/* A pipe, both ends non-blocking and close-on-exec; false on failure. */
bool        nd_os_pipe(int fds[2]) nd_hidden;
/* Waits until fd is readable or timeout_ms passed; reads and discards what
   is there. True when something was read. */
bool        nd_os_wait_input(int fd, int timeout_ms) nd_hidden;
/* Installs handler for signal sig (SA_RESTART); false when sig is invalid. */
bool        nd_os_on_signal(int sig, void (*handler)(int)) nd_hidden;
/* pthread_atfork's handlers (any may be NULL): registered with glibc's
   __register_atfork directly, for this library (glibc's pthread_atfork is
   a stub of libc_nonshared.a that the link puts after all of nodal's
   code, at the end of its text: a start-up call there maps the last 64
   KiB of the library's code, which no process needs otherwise:
   CMakeLists.txt, ND_SOURCES). Returns pthread_atfork's. */
int         nd_os_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void)) nd_hidden;
/* Writes len bytes to fd once (for a signal handler; errno kept). */
void        nd_os_signal_write(int fd, const void *buf, size_t len) nd_hidden;

/* Locks: lock.h (one table of every lock nodal has). */
#include "lock.h"

/* The calling thread's stack-free identity for the fast paths lives in
   heap.h (a TLS word); nothing here is per-thread. */

#endif /* ND_OS_H */
