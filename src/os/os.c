/*
 * os.c - the only code in nodal that talks to the kernel (see os.h for the
 * contract). Linux only: mmap/munmap/mremap/madvise, and the NUMA calls
 * mbind/move_pages/get_mempolicy made through syscall() so that the library
 * needs no libnuma.
 */
#define _GNU_SOURCE
#include "os.h"

#include "atomic.h"
#include "counters.h"

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>
#include <linux/membarrier.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#ifndef MAP_NORESERVE
#define MAP_NORESERVE 0
#endif

#define ND_MPOL_F_NODE (1 << 0)
#define ND_MPOL_F_ADDR (1 << 1)

/* The first byte of os.c's own code (not its nd_hot functions, which the
   link puts in .text.hot with the others): a label at the start of this
   file's .text, emitted before its functions (GCC and clang write a file's
   top-level asm first). ND_SOURCES (CMakeLists.txt) links this file right
   after the fast paths, so in libnodal.so the label is where the code a
   plain program runs ends and the code it runs only on request starts:
   nd_os_code_trim splits the mappings there. */
__asm__(".text\n"
        ".globl nd_os_cold_text\n"
        ".hidden nd_os_cold_text\n"
        "nd_os_cold_text:\n");
extern const char nd_os_cold_text[] nd_hidden;

static size_t nd_os_pagesize = 4096;   /* the OS page size (a nodal page is ND_SMALL_PAGE_SIZE) */
static int nd_have_populate = 1;   /* cleared when the kernel lacks MADV_POPULATE_WRITE */

intptr_t nd_os_rseq_cpu_off;
/* Set once a limit was seen (relaxed): nd_os_space_limit_seen (os.h). */
bool nd_os_limit_seen;

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35)) && \
    (defined(__x86_64__) || defined(__aarch64__))
/* glibc's (sys/rseq.h, which would pull in the kernel's headers): the area's
   cpu_id_start (u32) is followed by cpu_id (u32). */
extern const ptrdiff_t __rseq_offset;
#define ND_RSEQ_CPU_OFF (__rseq_offset + 4)
#else
#define ND_RSEQ_CPU_OFF 0
#endif

nd_hot void nd_os_init(void)
{
    /* The kernel's word (the auxiliary vector), as sysconf would give it:
       sysconf's code is libc's that a plain program does not run, 16 KiB
       of it resident for one call. */
    unsigned long ps = getauxval(AT_PAGESZ);
    if (ps > 0)
        nd_os_pagesize = (size_t)ps;
    nd_os_rseq_cpu_off = ND_RSEQ_CPU_OFF;
    /* A limit the process started with (a batch job's ulimit -v) is
       seen before the first large block (nd_os_space_limit_seen). */
    (void)nd_os_space_limited();
}

nd_hot size_t nd_os_page_size(void) { return nd_os_pagesize; }

/* Mappings the kernel refused for lack of room (ENOMEM: an address-space
   limit, or the overcommit policy), ever (relaxed atomics). */
static uint64_t nd_os_refused;

nd_hot uint64_t nd_os_map_refusals(void) { return nd_load_relaxed(&nd_os_refused); }

nd_hot bool nd_os_space_limited(void)
{
    struct rlimit lim;
    bool limited = getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY;
    if (limited && !nd_load_relaxed(&nd_os_limit_seen))
        nd_store_relaxed(&nd_os_limit_seen, true);
    return limited;
}

/* The address space in use against the limit (nd_os_space_tight), all
   relaxed atomics: a stale value makes the switch a little early or late,
   never a block wrong. nodal's own mappings are counted as they come and
   go (mmap, munmap, mremap: nd_os_own); the process's whole size
   (/proc/self/statm's first field: thread stacks, libraries, the
   program's own mappings) and the limit are read again only while a limit
   was seen, and only when nodal's count has moved by a 64th of the limit
   since the last reading (4 MiB when none was found), or when the
   estimate (nodal's count and the rest as last read) crosses the mark
   (tight: half of it). Under a limit of 200 MiB that is a reading per
   4 MiB segment or so; under 64 GiB, per GiB. */
static size_t nd_os_own;        /* bytes of nodal's mappings now */
static size_t nd_os_own_read;   /* nd_os_own at the last reading */
static size_t nd_os_other;      /* the rest of the process's address space then */
static size_t nd_os_limit;      /* RLIMIT_AS's soft limit then (bytes; 0: none) */
static bool nd_os_tight;
static size_t nd_os_max_maps;   /* /proc/sys/vm/max_map_count, read with the first size */

#define ND_OS_TIGHT_MARK(limit) ((limit) / 16 * ND_OS_TIGHT_SIXTEENTHS)

nd_hot bool nd_os_space_tight(void) { return nd_load_relaxed(&nd_os_tight); }

bool nd_os_space_maps_fit(size_t bytes)
{
    size_t limit = nd_load_relaxed(&nd_os_limit), maps = nd_load_relaxed(&nd_os_max_maps);
    return bytes != 0 && limit / bytes < maps / 8;
}

/* Reads the limit and the process's size; sets nd_os_tight. */
static void nd_os_space_read(size_t own)
{
    int saved = errno;
    struct rlimit lim;
    char buf[96];
    size_t limit = getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY ? (size_t)lim.rlim_cur : 0;
    size_t vm = 0;
    if (limit != 0 && nd_os_read_file("/proc/self/statm", buf, sizeof buf) > 0)
        vm = (size_t)strtoull(buf, NULL, 10) * nd_os_pagesize;
    if (limit != 0 && nd_load_relaxed(&nd_os_max_maps) == 0) {
        size_t maps = 65530;   /* the kernel's default */
        if (nd_os_read_file("/proc/sys/vm/max_map_count", buf, sizeof buf) > 0 && strtoull(buf, NULL, 10) > 0)
            maps = (size_t)strtoull(buf, NULL, 10);
        nd_store_relaxed(&nd_os_max_maps, maps);
    }
    errno = saved;
    nd_store_relaxed(&nd_os_limit, limit);
    nd_store_relaxed(&nd_os_own_read, own);
    nd_store_relaxed(&nd_os_other, vm > own ? vm - own : 0);
    bool was = nd_load_relaxed(&nd_os_tight);
    size_t mark = ND_OS_TIGHT_MARK(limit);
    bool tight = vm != 0 && vm >= (was ? mark / 2 : mark);
    if (tight != was)
        nd_store_relaxed(&nd_os_tight, tight);
}

/* nodal mapped or unmapped; own is its count of bytes after. */
static void nd_os_space_moved(size_t own)
{
    if (nd_likely(!nd_load_relaxed(&nd_os_limit_seen)))
        return;
    size_t limit = nd_load_relaxed(&nd_os_limit), last = nd_load_relaxed(&nd_os_own_read);
    size_t est = own + nd_load_relaxed(&nd_os_other), mark = ND_OS_TIGHT_MARK(limit);
    size_t moved = own > last ? own - last : last - own;
    bool tight = nd_load_relaxed(&nd_os_tight);
    if (moved >= (limit != 0 ? limit / 64 : ND_SEG_SIZE) || (limit != 0 && (tight ? est < mark / 2 : est >= mark)))
        nd_os_space_read(own);
}

static void nd_os_space_grew(size_t bytes)
{
    nd_os_space_moved(__atomic_add_fetch(&nd_os_own, bytes, __ATOMIC_RELAXED));
}

/* How many times nodal gave address space back (nd_os_space_returns). */
static uint64_t nd_os_returns;

uint64_t nd_os_space_returns(void) { return nd_load_relaxed(&nd_os_returns); }

static void nd_os_space_shrank(size_t bytes)
{
    nd_add_relaxed(&nd_os_returns, 1);
    nd_os_space_moved(__atomic_sub_fetch(&nd_os_own, bytes, __ATOMIC_RELAXED));
}

/* Unmaps what this file mapped a moment ago and does not keep (a
   mapping at the wrong place, the ends of one mapped larger to align
   it): counted off nodal's mappings, but no room given back. */
static void nd_os_unmap_trim(void *p, size_t size)
{
    nd_gauge_add(os_unmaps, 1);
    if (munmap(p, size) == 0)
        nd_os_space_moved(__atomic_sub_fetch(&nd_os_own, size, __ATOMIC_RELAXED));
}

static void nd_os_note_refusal(void)
{
    if (errno == ENOMEM) {
        nd_add_relaxed(&nd_os_refused, 1);
        if (!nd_load_relaxed(&nd_os_limit_seen))
            nd_store_relaxed(&nd_os_limit_seen, true);
    }
}

static void *nd_os_mmap(void *hint, size_t size)
{
    nd_gauge_add(os_maps, 1);
    void *p = mmap(hint, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        nd_os_note_refusal();
        return NULL;
    }
    nd_os_space_grew(size);
    return p;
}

/* Where the next aligned mapping is tried first: just below the last one
   (the kernel hands out address space top down), so that an aligned
   mapping usually takes one mmap of exactly its size, never a mapping
   twice as large to trim. A mapping claims its place (compare-and-swap
   of the hint to the place below) before it maps there, so two threads
   never try the same place: when they did, the second's mmap failed and
   it mapped, unmapped and mapped twice its size to trim (8 threads taking
   batches of 1 MiB blocks: 3,660 failed mmap calls of 8,500 a run,
   docs/results.md, stop 67); a place something else took is passed for
   the next one down, once. */
static uintptr_t nd_os_hint;

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

static void nd_os_hint_below(uintptr_t start, size_t size, size_t alignment)
{
    size_t span = (size + alignment - 1) & ~(alignment - 1);
    nd_store_relaxed(&nd_os_hint, start > span ? start - span : 0);
}

nd_hot void *nd_os_map_at(uintptr_t addr, size_t size)
{
    nd_gauge_add(os_maps, 1);
    void *p = mmap((void *)addr, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == (void *)addr) {
        nd_os_space_grew(size);
        return p;
    }
    if (p == MAP_FAILED)
        nd_os_note_refusal();
    if (p != MAP_FAILED) {   /* a kernel without MAP_FIXED_NOREPLACE took it as a hint */
        nd_os_space_grew(size);   /* nd_os_unmap counts it off */
        nd_os_unmap_trim(p, size);
        errno = EEXIST;
    }
    return NULL;
}

nd_hot void *nd_os_map_aligned(size_t size, size_t alignment)
{
    if (size + alignment < size)
        return errno = ENOMEM, NULL;
    /* The hint, aligned down (a mapping of smaller alignment may have set
       it), claimed: the hint moves below it first. */
    size_t span = (size + alignment - 1) & ~(alignment - 1);
    uintptr_t seen = nd_load_relaxed(&nd_os_hint);
    for (unsigned tries = 0, taken = 0; tries < 8 && taken < 2; tries++) {
        uintptr_t hint = seen & ~(uintptr_t)(alignment - 1);
        if (hint == 0)
            break;
        if (!nd_cas_weak_acq_rel(&nd_os_hint, &seen, hint > span ? hint - span : 0))
            continue;   /* another thread claimed it: seen is the hint now */
        taken++;
        void *p = nd_os_map_at(hint, size);
        if (p != NULL)
            return p;
        seen = nd_load_relaxed(&nd_os_hint);
    }
    void *p = nd_os_mmap(NULL, size);
    if (p == NULL)
        return NULL;
    if (((uintptr_t)p & (alignment - 1)) == 0) {
        nd_os_hint_below((uintptr_t)p, size, alignment);
        return p;
    }
    nd_os_unmap_trim(p, size);
    size_t over = size + alignment;
    char *raw = nd_os_mmap(NULL, over);
    if (raw == NULL) {
        /* No room to map more than asked (an address-space limit,
           RLIMIT_AS, counts the excess too). [p, p + size) was free: a
           mapping of exactly size bytes may fit at the aligned address
           below p (the kernel hands out the top of a free gap), or at the
           one above. */
        int err = errno;
        uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(alignment - 1);
        void *q = nd_os_map_at(lo, size);
        if (q == NULL)
            q = nd_os_map_at(lo + alignment, size);
        if (q != NULL)
            nd_os_hint_below((uintptr_t)q, size, alignment);
        else
            errno = err;
        return q;
    }
    uintptr_t start = ((uintptr_t)raw + alignment - 1) & ~(uintptr_t)(alignment - 1);
    size_t head = start - (uintptr_t)raw;
    size_t tail = over - head - size;
    if (head)
        nd_os_unmap_trim(raw, head);
    if (tail)
        nd_os_unmap_trim((char *)start + size, tail);
    nd_os_hint_below(start, size, alignment);
    return (void *)start;
}

nd_hot void nd_os_unmap(void *p, size_t size)
{
    if (p != NULL && size != 0) {
        nd_gauge_add(os_unmaps, 1);
        if (munmap(p, size) == 0)
            nd_os_space_shrank(size);
    }
}

nd_hot int nd_os_purge(void *p, size_t size)
{
    int saved = errno;
    nd_gauge_add(os_purges, 1);
    nd_gauge_add(os_purge_calls, 1);
    int rc = madvise(p, size, MADV_DONTNEED);
    errno = saved;
    return rc;
}

/* The calling process as a pidfd (linux/pidfd.h, Linux 6.14+), which
   needs no descriptor of its own: an open one would be a malloc's file
   that a program closing its descriptors could close or reuse. */
#define ND_PIDFD_SELF_PROCESS (-10001)
#ifndef SYS_process_madvise
#define SYS_process_madvise 440   /* the same number on every architecture (5.10+) */
#endif
/* process_madvise on the process itself: 0 not tried yet, 1 it purged, -1
   the kernel refused it (relaxed: a race only tries it once more). */
static int nd_os_pm_state;

nd_hot void nd_os_purges_add(nd_os_purges *b, void *p, size_t size)
{
    if (b->n != 0) {
        struct iovec *last = &b->r[b->n - 1];
        if ((char *)last->iov_base + last->iov_len == (char *)p) {   /* runs that meet (one segment's end, the next's start) */
            last->iov_len += size;
            return;
        }
        if (b->n == ND_OS_PURGE_BATCH)
            nd_os_purges_flush(b);
    }
    b->r[b->n].iov_base = p;
    b->r[b->n].iov_len = size;
    b->n++;
}

void nd_os_purges_one_by_one(void)
{
    nd_store_relaxed(&nd_os_pm_state, -1);
}

/* The ranges r[0..n) of a batch in process_madvise calls: the index of
   the first range not purged (n when all were), from which the caller
   goes on with one madvise a range (the kernel refused the call). A call
   purges a prefix of the bytes it is given and returns their count; it
   stops at a range it cannot advise (not mapped: ENOMEM), failing if
   that is the first: that range alone goes to madvise, which purges what
   of it is mapped, and the next call starts past it. */
static size_t nd_os_purges_vector(struct iovec *r, size_t n)
{
    size_t i = 0;
    while (i < n) {
        nd_gauge_add(os_purge_calls, 1);
        long done = syscall(SYS_process_madvise, ND_PIDFD_SELF_PROCESS, r + i, n - i, MADV_DONTNEED, 0u);
        if (done < 0) {
            if (nd_load_relaxed(&nd_os_pm_state) == 0 && errno != ENOMEM && errno != EFAULT && errno != EAGAIN &&
                errno != EINTR) {
                nd_store_relaxed(&nd_os_pm_state, -1);   /* no PIDFD_SELF, no such advice, no such call: never again */
                break;
            }
            nd_gauge_add(os_purge_calls, 1);
            (void)madvise(r[i].iov_base, r[i].iov_len, MADV_DONTNEED);
            i++;
            continue;
        }
        if (done == 0)
            break;   /* (no progress: the rest one at a time) */
        if (nd_load_relaxed(&nd_os_pm_state) == 0)
            nd_store_relaxed(&nd_os_pm_state, 1);
        for (size_t left = (size_t)done; i < n && left != 0;) {
            if (left >= r[i].iov_len) {
                left -= r[i].iov_len;
                i++;
            } else {
                r[i].iov_base = (char *)r[i].iov_base + left;
                r[i].iov_len -= left;
                left = 0;
            }
        }
    }
    return i;
}

nd_hot void nd_os_purges_flush(nd_os_purges *b)
{
    size_t n = b->n, i = 0;
    if (n == 0)
        return;
    b->n = 0;
    int saved = errno;
    nd_gauge_add(os_purges, n);
    if (n > 1 && nd_load_relaxed(&nd_os_pm_state) >= 0)   /* one range: madvise, the same call */
        i = nd_os_purges_vector(b->r, n);
    for (; i < n; i++) {
        nd_gauge_add(os_purge_calls, 1);
        (void)madvise(b->r[i].iov_base, b->r[i].iov_len, MADV_DONTNEED);
    }
    errno = saved;
}

int nd_os_populate(void *p, size_t size)
{
    if (nd_have_populate) {
        if (madvise(p, size, MADV_POPULATE_WRITE) == 0)
            return 0;
        if (errno != EINVAL)
            return -1;   /* ENOMEM, EFAULT, EHWPOISON: a real failure */
        nd_have_populate = 0;   /* kernel < 5.14 */
    }
    /* Write-fault every OS page without changing its contents. */
    for (size_t off = 0; off < size; off += nd_os_pagesize)
        __atomic_fetch_add((char *)p + off, 0, __ATOMIC_RELAXED);
    return 0;
}

/* -1 not read yet, else whether the mode is "always". */
static int nd_os_thp_mode = -1;

/* Is the kernel's THP mode "always"? Read from sysfs, nothing written but
   the stack. */
static nd_hot int nd_os_thp_read(void)
{
    char buf[128];
    int saved = errno;
    int mode = nd_os_read_file("/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof buf) > 0 &&
               strstr(buf, "[always]") != NULL;
    errno = saved;
    return mode;
}

nd_hot bool nd_os_thp_always(void)
{
    int mode = nd_load_relaxed(&nd_os_thp_mode);
    if (nd_unlikely(mode < 0)) {
        mode = nd_os_thp_read();
        nd_store_relaxed(&nd_os_thp_mode, mode);
    }
    return mode != 0;
}

nd_hot int nd_os_advise_nohugepage(void *p, size_t size)
{
#ifdef MADV_NOHUGEPAGE
    return madvise(p, size, MADV_NOHUGEPAGE);
#else
    (void)p; (void)size;
    return -1;
#endif
}

int nd_os_advise_hugepage(void *p, size_t size)
{
#ifdef MADV_HUGEPAGE
    return madvise(p, size, MADV_HUGEPAGE);
#else
    (void)p; (void)size;
    return -1;
#endif
}

int nd_os_protect(void *p, size_t size, bool access)
{
    int saved = errno;
    int rc = mprotect(p, size, access ? PROT_READ | PROT_WRITE : PROT_NONE);
    errno = saved;
    return rc;
}

/* ThreadSanitizer follows mmap and munmap but not mremap: the range a move
   or a shrink gives up keeps its accesses in TSan's shadow, and when a
   mapping that grows in place takes those addresses later, its first
   writes "race" with them (AnnotateNewMemory, which could forget them, does
   nothing in gcc 12's runtime). The kernel orders every change of the
   address space (mmap_lock); these two edges tell TSan so: what mremap
   gives up is released before the call, what it gains acquired after. */
#ifdef ND_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
static char nd_os_vm_order;
#define nd_os_vm_gives_up() __tsan_release(&nd_os_vm_order)
#define nd_os_vm_gains()    __tsan_acquire(&nd_os_vm_order)
#else
#define nd_os_vm_gives_up() ((void)0)
#define nd_os_vm_gains()    ((void)0)
#endif

int nd_os_remap_inplace(void *p, size_t old_size, size_t new_size)
{
    if (new_size < old_size)
        nd_os_vm_gives_up();
    void *q = mremap(p, old_size, new_size, 0);
    if (q == MAP_FAILED)
        return -1;
    if (new_size > old_size) {
        nd_os_vm_gains();
        nd_os_space_grew(new_size - old_size);
    } else
        nd_os_space_shrank(old_size - new_size);
    return 0;
}

void *nd_os_remap_to(void *p, size_t old_size, size_t new_size, void *to)
{
    nd_os_vm_gives_up();   /* [p, p + old_size), once moved */
    void *q = mremap(p, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, to);
    if (q == MAP_FAILED)
        return NULL;
    nd_os_space_shrank(old_size);   /* [to, to + new_size) was mapped (reserved) already */
    return q;
}

void *nd_os_remap_keep(void *p, size_t size, void *to)
{
#ifdef MREMAP_DONTUNMAP
    void *q = mremap(p, size, size, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, to);
    if (q == MAP_FAILED)
        return NULL;
    return q;   /* [to, to + size) was mapped (reserved) already, [p, p + size) still is */
#else
    (void)p; (void)size; (void)to;
    return NULL;
#endif
}

int nd_os_bind(void *p, size_t size, int mode, const uint64_t *mask)
{
    /* maxnode counts bits; the kernel ignores the last one (historic off by one). */
    long rc = syscall(SYS_mbind, p, size, mode, mask, mask ? (unsigned long)ND_MAX_NODES + 1 : 0UL, 0UL);
    return rc == 0 ? 0 : -1;
}

int nd_os_pages_nodes(void **pages, int *status, size_t count)
{
    long rc = syscall(SYS_move_pages, 0, (unsigned long)count, pages, NULL, status, 0);
    return rc < 0 ? -1 : 0;
}

int nd_os_move_pages(void **pages, const int *nodes, int *status, size_t count)
{
    long rc = syscall(SYS_move_pages, 0, (unsigned long)count, pages, nodes, status, 1 << 1 /* MPOL_MF_MOVE */);
    return rc < 0 ? -1 : 0;
}

int nd_os_addr_node(const void *p)
{
    int node = -1;
    long rc = syscall(SYS_get_mempolicy, &node, NULL, 0UL, p, ND_MPOL_F_NODE | ND_MPOL_F_ADDR);
    return rc == 0 ? node : -1;
}

nd_hot int nd_os_current_cpu(void)
{
    /* The rseq area's cpu_id once start-up knows where it is (-1: not
       registered yet, -2: registration failed or turned off). */
    if (nd_os_rseq_cpu_off != 0) {
        int cpu = nd_os_current_cpu_fast();
        if (cpu >= 0)
            return cpu;
    }
    return sched_getcpu();
}

#define ND_MPOL_DEFAULT 0
#define ND_MPOL_LOCAL 4
#define ND_MPOL_MODE_MASK 0xff   /* without MPOL_F_STATIC_NODES and the other mode flags */

bool nd_os_policy_is_local(void)
{
    int mode = -1;
    if (syscall(SYS_get_mempolicy, &mode, NULL, 0UL, NULL, 0UL) != 0)
        return false;
    mode &= ND_MPOL_MODE_MASK;
    return mode == ND_MPOL_DEFAULT || mode == ND_MPOL_LOCAL;
}

nd_hot uint64_t nd_os_now_ms(void)
{
    struct timespec ts;
#ifdef CLOCK_MONOTONIC_COARSE
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
#else
    clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

nd_hot uint64_t nd_os_random(void)
{
    uint64_t r = 0;
#ifdef SYS_getrandom
    if (syscall(SYS_getrandom, &r, sizeof r, 0x1 /* GRND_NONBLOCK */) == (long)sizeof r)
        return r;
#endif
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    r = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)&r;
    return r;
}

nd_sample_path void nd_os_yield(void) { sched_yield(); }

/* membarrier(2) for this process: 0 not tried yet, 1 registered, -1 none. */
static int nd_os_membarrier_state;

bool nd_os_barrier_all(void)
{
#ifdef SYS_membarrier
    int st = nd_load_relaxed(&nd_os_membarrier_state);
    if (st == 0) {
        st = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0 ? 1 : -1;
        nd_store_relaxed(&nd_os_membarrier_state, st);
    }
    return st > 0 && syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
#else
    return false;
#endif
}

nd_hot long nd_os_read_file(const char *path, char *buf, size_t len)
{
    if (len == 0)
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t got = 0;
    while (got + 1 < len) {
        ssize_t n = read(fd, buf + got, len - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    return (long)got;
}

bool nd_os_path_exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* getdents64 through syscall(): opendir would allocate (from nodal). */
nd_hot int nd_os_dir_names(const char *path, void (*fn)(const char *name, void *arg), void *arg)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[4096] __attribute__((aligned(8)));
    int count = 0;
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        for (long off = 0; off < n;) {
            /* struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name */
            unsigned short reclen;
            memcpy(&reclen, buf + off + 16, sizeof reclen);
            const char *name = buf + off + 19;
            if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0) {
                fn(name, arg);
                count++;
            }
            off += reclen;
        }
    }
    close(fd);
    return count;
}

nd_hot const char *nd_os_getenv(const char *name) { return getenv(name); }

static int nd_stderr_fd = STDERR_FILENO;

/* With the sample's code (nd_sample_path, config.h): the profile's start
   runs it, and a page of os.c's other code was resident for it alone in
   every profiled process. */
nd_sample_path void nd_os_keep_stderr(void)
{
    int fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 200);
    if (fd >= 0)
        nd_stderr_fd = fd;
}

bool nd_os_write_fd(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        buf += n;
        len -= (size_t)n;
    }
    return true;
}

void nd_os_write_stderr(const char *buf, size_t len)
{
    int saved = errno;
    nd_os_write_fd(nd_stderr_fd, buf, len);
    errno = saved;
}

int nd_os_create_file(const char *path)
{
    int saved = errno;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    errno = saved;
    return fd;
}

/* A raw system call: close() is a cancellation point, and nodal closes
   files inside malloc (the unwinder's, unwind.c) and at exit. errno is
   kept. */
/* (With the sample's code, as nd_os_keep_stderr: the unwinder closes the
   files it read.) */
nd_sample_path void nd_os_close(int fd)
{
    int saved = errno;
    syscall(SYS_close, fd);
    errno = saved;
}

static size_t nd_status_kib(const char *text, const char *key)
{
    const char *s = strstr(text, key);
    if (s == NULL)
        return 0;
    s += strlen(key);
    while (*s == ' ' || *s == '\t')
        s++;
    size_t v = 0;
    while (*s >= '0' && *s <= '9')
        v = v * 10 + (size_t)(*s++ - '0');
    return v * 1024;
}

void nd_os_rss(size_t *current, size_t *peak)
{
    char buf[4096];
    *current = *peak = 0;
    if (nd_os_read_file("/proc/self/status", buf, sizeof buf) <= 0)
        return;
    *current = nd_status_kib(buf, "VmRSS:");
    *peak = nd_status_kib(buf, "VmHWM:");
}

size_t nd_os_resident(const void *p, size_t len)
{
    uintptr_t ps = nd_os_page_size(), a = (uintptr_t)p, b = a + len;
    int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t n = 0;
    uint64_t ent[64];
    for (uintptr_t q = a; q < b;) {
        size_t k = (b - q + ps - 1) / ps < 64 ? (b - q + ps - 1) / ps : 64;
        if (pread(fd, ent, k * sizeof ent[0], (off_t)(q / ps * sizeof ent[0])) != (ssize_t)(k * sizeof ent[0]))
            break;
        /* present, and not the shared zero page (neither mapped here
           alone, bit 56, nor a file's or shared page, bit 61) */
        for (size_t i = 0; i < k; i++)
            n += (ent[i] >> 63 & 1) && ((ent[i] >> 56 & 1) || (ent[i] >> 61 & 1));
        q += k * ps;
    }
    syscall(SYS_close, fd);
    return n * ps;
}

_Noreturn void nd_os_abort(void) { abort(); }

long nd_os_pid(void) { return (long)getpid(); }

void nd_os_program_name(char *buf, size_t len)
{
    long n = nd_os_read_file("/proc/self/comm", buf, len);
    if (n <= 0) {
        snprintf(buf, len, "?");
        return;
    }
    if (buf[n - 1] == '\n')
        buf[n - 1] = '\0';
}


/* ---- heap profiling ------------------------------------------------------------ */

int nd_os_backtrace(void **frames, int max)
{
    int saved = errno;
    int n = backtrace(frames, max);
    errno = saved;
    return n;
}

/* libgcc's unwinder (glibc's backtrace() loads libgcc_s; nodal does not
   link it): three entry points, looked up once. */
static _Unwind_Reason_Code (*nd_uw_backtrace)(_Unwind_Trace_Fn, void *);
static _Unwind_Ptr (*nd_uw_get_ip)(struct _Unwind_Context *);
static _Unwind_Word (*nd_uw_get_cfa)(struct _Unwind_Context *);

bool nd_os_unwind_start(void)
{
#if defined(__x86_64__)
    int saved = errno;
    void *frames[2];
    backtrace(frames, 2);   /* loads libgcc_s, once */
    void *h = dlopen("libgcc_s.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (h != NULL) {
        nd_uw_get_ip = (_Unwind_Ptr (*)(struct _Unwind_Context *))dlsym(h, "_Unwind_GetIP");
        nd_uw_get_cfa = (_Unwind_Word (*)(struct _Unwind_Context *))dlsym(h, "_Unwind_GetCFA");
        if (nd_uw_get_ip != NULL && nd_uw_get_cfa != NULL)
            nd_uw_backtrace = (_Unwind_Reason_Code (*)(_Unwind_Trace_Fn, void *))dlsym(h, "_Unwind_Backtrace");
        dlclose(h);   /* glibc keeps its own reference */
    }
    errno = saved;
    return nd_uw_backtrace != NULL;
#else
    return false;
#endif
}

struct nd_unwind_walk {
    uintptr_t *ips, *cfas;
    int n, max;
};

static _Unwind_Reason_Code nd_unwind_frame(struct _Unwind_Context *ctx, void *arg)
{
    struct nd_unwind_walk *w = arg;
    if (w->n >= w->max)
        return _URC_END_OF_STACK;
    w->ips[w->n] = (uintptr_t)nd_uw_get_ip(ctx);
    w->cfas[w->n] = (uintptr_t)nd_uw_get_cfa(ctx);
    w->n++;
    return _URC_NO_REASON;
}

int nd_os_unwind(uintptr_t *ips, uintptr_t *cfas, int max)
{
    if (nd_uw_backtrace == NULL)
        return -1;
    int saved = errno;
    struct nd_unwind_walk w = { .ips = ips, .cfas = cfas, .n = 0, .max = max };
    nd_uw_backtrace(nd_unwind_frame, &w);
    errno = saved;
    return w.n;
}

bool nd_os_symbol(const void *a, const char **file, const void **base, const char **sym, const void **sym_addr)
{
    Dl_info info;
    int saved = errno;
    int ok = dladdr(a, &info);
    errno = saved;
    if (!ok) {
        *file = *sym = NULL;
        *base = *sym_addr = NULL;
        return false;
    }
    *file = info.dli_fname;
    *base = info.dli_fbase;
    *sym = info.dli_sname;
    *sym_addr = info.dli_saddr;
    return true;
}

bool nd_os_copy_file(const char *path, int fd, char *buf, size_t len)
{
    int saved = errno;
    int in = open(path, O_RDONLY | O_CLOEXEC);
    bool ok = in >= 0;
    while (ok) {
        ssize_t n = read(in, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            ok = n == 0;
            break;
        }
        ok = nd_os_write_fd(fd, buf, (size_t)n);
    }
    if (in >= 0)
        close(in);
    errno = saved;
    return ok;
}

bool nd_os_pipe(int fds[2])
{
    int saved = errno;
    bool ok = pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0;
    errno = saved;
    return ok;
}

bool nd_os_wait_input(int fd, int timeout_ms)
{
    int saved = errno;
    struct pollfd p = { .fd = fd, .events = POLLIN };
    bool got = false;
    if (poll(&p, 1, timeout_ms) > 0) {
        char buf[64];
        while (read(fd, buf, sizeof buf) > 0)
            got = true;
    }
    errno = saved;
    return got;
}

#if defined(__GLIBC__)
extern int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void), void *dso);
extern void *__dso_handle __attribute__((weak, visibility("hidden")));
#endif

nd_hot int nd_os_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
#if defined(__GLIBC__)
    return __register_atfork(prepare, parent, child, &__dso_handle == NULL ? NULL : __dso_handle);
#else
    return pthread_atfork(prepare, parent, child);
#endif
}

bool nd_os_on_signal(int sig, void (*handler)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    int saved = errno;
    bool ok = sigaction(sig, &sa, NULL) == 0;
    errno = saved;
    return ok;
}

void nd_os_signal_write(int fd, const void *buf, size_t len)
{
    int saved = errno;
    ssize_t n = write(fd, buf, len);
    (void)n;
    errno = saved;
}

/* The object whose code holds address a (dl_iterate_phdr): its
   executable loads' span [lo, hi), load address and program headers (the
   loader's, mapped for good). */
struct nd_code_query {
    uintptr_t a, lo, hi, base;
    const ElfW(Phdr) *phdr;
    int phnum;
    bool found, main;
};

static nd_hot int nd_code_range_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct nd_code_query *q = arg;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    bool has = false;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uintptr_t b = info->dlpi_addr + ph->p_vaddr, e = b + ph->p_memsz;
        lo = b < lo ? b : lo;
        hi = e > hi ? e : hi;
        has |= q->a >= b && q->a < e;
    }
    if (!has)
        return 0;
    q->lo = lo;
    q->hi = hi;
    q->base = info->dlpi_addr;
    q->phdr = info->dlpi_phdr;
    q->phnum = info->dlpi_phnum;
    q->found = true;
    q->main = info->dlpi_name == NULL || info->dlpi_name[0] == '\0';
    return 1;
}

nd_hot bool nd_os_code_range(const void *a, uintptr_t *lo, uintptr_t *hi, bool *main)
{
    struct nd_code_query q = { .a = (uintptr_t)a };
    int saved = errno;
    dl_iterate_phdr(nd_code_range_cb, &q);
    errno = saved;
    *lo = q.lo;
    *hi = q.hi;
    *main = q.main;
    return q.found;
}

/* The load of q's object that holds address x, of flags `flags` (PF_*),
   into [*b, *e); false when none. */
static nd_hot bool nd_trim_load(const struct nd_code_query *q, uintptr_t x, unsigned flags, uintptr_t *b, uintptr_t *e)
{
    for (int i = 0; i < q->phnum; i++) {
        const ElfW(Phdr) *ph = &q->phdr[i];
        uintptr_t lb = q->base + ph->p_vaddr, le = lb + ph->p_memsz;
        if (ph->p_type == PT_LOAD && (ph->p_flags & (PF_R | PF_W | PF_X)) == flags && x >= lb && x < le) {
            *b = lb;
            *e = le;
            return true;
        }
    }
    return false;
}

/* Unmaps the pages of [a, b) of a private file mapping that are the
   file's (pagemap bits 63 and 61: present, and not a copy the process
   wrote, such as a debugger's breakpoint, which stays), through fd,
   /proc/self/pagemap (-1: none). The number of pages unmapped. */
static nd_hot size_t nd_os_drop_file_pages(uintptr_t a, uintptr_t b, int fd)
{
    uintptr_t ps = nd_os_pagesize;
    if (b <= a || fd < 0)
        return 0;
    size_t dropped = 0;
    uint64_t ent[64];
    for (uintptr_t p = a; p < b;) {
        size_t n = (b - p) / ps < 64 ? (b - p) / ps : 64;
        if (pread(fd, ent, n * sizeof ent[0], (off_t)(p / ps * sizeof ent[0])) != (ssize_t)(n * sizeof ent[0]))
            break;
        uintptr_t run = 0;                /* start of a run of the file's pages (0: none) */
        for (size_t i = 0; i <= n; i++) {
            uintptr_t pg = p + i * ps;
            bool file = i < n && (ent[i] >> 63) & 1 && (ent[i] >> 61) & 1;
            if (file && run == 0)
                run = pg;
            if (!file && run != 0) {
                if (madvise((void *)run, pg - run, MADV_DONTNEED) == 0)
                    dropped += (pg - run) / ps;
                run = 0;
            }
        }
        p += n * ps;
    }
    return dropped;
}

/* Gives [a, b) of a private file mapping MADV_RANDOM (flags of its own: a
   mapping apart from its neighbours, which the kernel's fault-around does
   not cross) and unmaps its pages that are the file's
   (nd_os_drop_file_pages). The number of pages unmapped. */
static nd_hot size_t nd_os_trim_range(uintptr_t a, uintptr_t b, int fd)
{
    if (b <= a || madvise((void *)a, b - a, MADV_RANDOM) != 0)
        return 0;
    return nd_os_drop_file_pages(a, b, fd);
}

/* The bounds of libnodal.a's .bss in a static program: the archive is one
   object whose .bss is a section named nodal_bss
   (cmake/localize-archive.cmake), to which the linker gives these symbols;
   libnodal.so and the build's own archives have no such section (NULL).
   Hidden: resolved within the link, never by the dynamic loader. */
extern char __start_nodal_bss[] __attribute__((weak, visibility("hidden")));
extern char __stop_nodal_bss[] __attribute__((weak, visibility("hidden")));

nd_hot void nd_os_static_data_thp_opt_out(void)
{
    uintptr_t a = (uintptr_t)__start_nodal_bss, b = (uintptr_t)__stop_nodal_bss;
    if (a == 0 || b <= a || nd_load_relaxed(&nd_os_thp_mode) >= 0)   /* not a static link, or done */
        return;
    int mode = nd_os_thp_read();
    if (mode) {
        int saved = errno;
        long page = sysconf(_SC_PAGESIZE);   /* (before nd_os_init: nd_os_pagesize is not set yet) */
        uintptr_t ps = page > 0 ? (uintptr_t)page : 4096;
        (void)nd_os_advise_nohugepage((void *)(a & ~(ps - 1)), ((b + ps - 1) & ~(ps - 1)) - (a & ~(ps - 1)));
        errno = saved;
    }
    nd_store_relaxed(&nd_os_thp_mode, mode);   /* (in nodal_bss: written after the advice) */
}

nd_hot void nd_os_data_thp_opt_out(void)
{
    if (!nd_os_thp_always())
        return;
    struct nd_code_query q = { .a = (uintptr_t)nd_os_cold_text };
    int saved = errno;
    dl_iterate_phdr(nd_code_range_cb, &q);
    uintptr_t ps = nd_os_pagesize, x = (uintptr_t)&nd_os_thp_mode;
    for (int i = 0; q.found && !q.main && i < q.phnum; i++) {
        const ElfW(Phdr) *ph = &q.phdr[i];
        uintptr_t lb = q.base + ph->p_vaddr;
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W) || x < lb || x >= lb + ph->p_memsz)
            continue;
        uintptr_t a = (lb + ph->p_filesz + ps - 1) & ~(ps - 1), b = (lb + ph->p_memsz + ps - 1) & ~(ps - 1);
        if (b > a)
            (void)nd_os_advise_nohugepage((void *)a, b - a);
    }
    errno = saved;
}

nd_hot size_t nd_os_code_trim(void)
{
    struct nd_code_query q = { .a = (uintptr_t)nd_os_cold_text };
    int saved = errno;
    dl_iterate_phdr(nd_code_range_cb, &q);
    uintptr_t ps = nd_os_pagesize, lo, hi;
    /* In libnodal.so only (a static link puts this file anywhere in the
       program's text), and only where the link put the hot code first. */
    if (!q.found || q.main || (uintptr_t)nd_os_init >= (uintptr_t)nd_os_cold_text ||
        !nd_trim_load(&q, q.a, PF_R | PF_X, &lo, &hi)) {
        errno = saved;
        return 0;
    }
    int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    /* The code: [start of the cold code, the last page); the last page
       (.fini, which the exit runs) stays a mapping of one page. */
    uintptr_t c = ((uintptr_t)nd_os_cold_text + ps - 1) & ~(ps - 1);
    uintptr_t last = (hi - 1) & ~(ps - 1);
    size_t dropped = nd_os_trim_range(c, last, fd);
    if (last >= c)
        dropped += nd_os_drop_file_pages(last, last + ps, fd);
    uintptr_t eh = 0, rel_lo = UINTPTR_MAX, rel_hi = 0;
    for (int i = 0; i < q.phnum; i++) {
        if (q.phdr[i].p_type == PT_GNU_EH_FRAME)
            eh = q.base + q.phdr[i].p_vaddr;
        if (q.phdr[i].p_type != PT_DYNAMIC)
            continue;
        /* The relocations (.rela.dyn, .rela.plt), which the loader read
           once, before any call into nodal (-z now). A d_ptr the loader
           left as the file has it is relative to the load address. */
        uintptr_t rela = 0, relasz = 0, jmprel = 0, pltsz = 0;
        for (const ElfW(Dyn) *d = (const ElfW(Dyn) *)(q.base + q.phdr[i].p_vaddr); d->d_tag != DT_NULL; d++) {
            if (d->d_tag == DT_RELA)
                rela = d->d_un.d_ptr;
            else if (d->d_tag == DT_RELASZ)
                relasz = d->d_un.d_val;
            else if (d->d_tag == DT_JMPREL)
                jmprel = d->d_un.d_ptr;
            else if (d->d_tag == DT_PLTRELSZ)
                pltsz = d->d_un.d_val;
        }
        if (rela != 0 && relasz != 0) {
            rela += rela < q.base ? q.base : 0;
            rel_lo = rela;
            rel_hi = rela + relasz;
        }
        if (jmprel != 0 && pltsz != 0) {
            jmprel += jmprel < q.base ? q.base : 0;
            if (rel_hi == 0 || jmprel == rel_hi || jmprel + pltsz == rel_lo) {
                rel_lo = jmprel < rel_lo ? jmprel : rel_lo;
                rel_hi = jmprel + pltsz > rel_hi ? jmprel + pltsz : rel_hi;
            }
        }
    }
    /* The unwind tables, which only an unwind through nodal reads (a C++
       exception from operator new, the heap profile). */
    uintptr_t b, e;
    if (eh != 0 && nd_trim_load(&q, eh, PF_R, &b, &e)) {
        uintptr_t p = (eh + ps - 1) & ~(ps - 1), ro = (b + ps - 1) & ~(ps - 1);
        (void)madvise((void *)p, ((e + ps - 1) & ~(ps - 1)) - p, MADV_RANDOM);
        /* And the read-only data before them (.rodata, 28 KiB: the
           size-class tables the slow paths read, the messages, the option
           and statistics names start-up and the reports read): a mapping
           a page, every other one MADV_RANDOM from the unwind tables' down
           (no page has its neighbours' flags, which the kernel merges),
           so that a program's reads keep the pages they read (the
           size-class tables' one or two) and not the whole of it, which
           fault-around mapped at the first read (docs/how-it-works.md,
           "What every process holds"). Their pages start-up mapped are
           unmapped with the tables'. */
        for (; p >= ro + 2 * ps; p -= 2 * ps)
            (void)madvise((void *)(p - 2 * ps), ps, MADV_RANDOM);
        dropped += nd_os_drop_file_pages(ro, (e + ps - 1) & ~(ps - 1), fd);
    }
    /* The relocations' whole pages (to the load's last page when they end
       it). */
    if (rel_hi != 0 && nd_trim_load(&q, rel_lo, PF_R, &b, &e)) {
        uintptr_t end = rel_hi >= e ? (e + ps - 1) & ~(ps - 1) : rel_hi & ~(ps - 1);
        dropped += nd_os_trim_range((rel_lo + ps - 1) & ~(ps - 1), end, fd);
    }
    if (fd >= 0)
        close(fd);
    errno = saved;
    return dropped;
}

/* The kernel maps a file's cached pages around the one a process faults
   on, in aligned runs of 64 KiB clipped to the mapping (fault-around), so
   the first call into code at the end of nodal's text (the heap profile's:
   CMakeLists.txt, ND_SOURCES) maps up to 16 pages of code the process never
   runs. A page whose flags differ from both neighbours' is a mapping of
   its own, and a fault there maps that page only: every other page not
   yet mapped gets MADV_RANDOM (readahead only: the file is cached), so
   each of them is alone or beside mapped pages only. The pages mapped
   now (the code the process has run) stay as they are. */
nd_hot int nd_os_code_map_by_page(const void *a)
{
    uintptr_t lo, hi;
    bool main;
    if (!nd_os_code_range(a, &lo, &hi, &main) || main)
        return 0;
    int saved = errno;
    int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        errno = saved;
        return 0;
    }
    uintptr_t ps = nd_os_pagesize;
    lo &= ~(ps - 1);
    hi = (hi + ps - 1) & ~(ps - 1);
    /* Start-up gave the code a plain program does not run MADV_RANDOM
       (nd_os_code_trim): back to one flag, so that the pages' flags below
       differ from their neighbours'. */
    (void)madvise((void *)lo, hi - lo, MADV_NORMAL);
    int split = 0;
    bool last = false;                    /* the page before got MADV_RANDOM */
    uint64_t ent[64];
    for (uintptr_t p = lo; p < hi;) {
        size_t n = (hi - p) / ps < 64 ? (hi - p) / ps : 64;
        if (pread(fd, ent, n * sizeof ent[0], (off_t)(p / ps * sizeof ent[0])) != (ssize_t)(n * sizeof ent[0]))
            break;
        for (size_t i = 0; i < n; i++, p += ps) {
            bool mapped = (ent[i] >> 63) & 1;
            if (!mapped && !last && madvise((void *)p, ps, MADV_RANDOM) == 0) {
                last = true;
                split++;
            } else {
                last = false;
            }
        }
    }
    close(fd);
    errno = saved;
    return split;
}
