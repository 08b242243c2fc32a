/*
 * unwind.c - the heap profile's own stack unwinder (x86-64, glibc 2.35 and
 * later): the call stack from the unwind tables every object carries
 * (.eh_frame, found through .eh_frame_hdr), without libgcc.
 *
 * Owns: nothing but code; it reads the loaded objects' unwind tables and
 * the calling thread's stack.
 *
 * Why: libgcc's unwinder (what glibc's backtrace() loads) costs a process
 * about 0.3 MB resident that the profile would otherwise not touch
 * (libgcc_s itself, the loader code that opens it and the parts of libc it
 * runs), more than the rest of the profile. The tables are the same ones
 * libgcc reads; this reader understands the subset compilers emit for
 * ordinary x86-64 functions:
 *
 *   - the frame's CFA is rsp + offset or rbp + offset (DW_CFA_def_cfa*);
 *   - the return address is at CFA - 8 (register 16 at offset -8), or
 *     undefined in the outermost frame (_start, clone), which ends the walk;
 *   - rbp is the same as in the callee or saved at CFA + offset.
 *
 * A signal handler's frames return into the signal return trampoline
 * (glibc's __restore_rt), whose rules are DWARF expressions: the walk
 * recognises its two instructions, as libgcc does, and goes on from the
 * interrupted code's registers in the ucontext the kernel left on the
 * stack, at the handler's CFA. Anything else (a CFA or register given by a
 * DWARF expression; an encoding it does not know; no table for an address)
 * ends the walk there: the stack is cut short, never misread.
 * Each frame's CFA must be above the previous one and 8-aligned. The object
 * of an address comes from _dl_find_object, which takes no lock and is
 * async-signal-safe, so this runs inside malloc and in signal handlers.
 */
#define _GNU_SOURCE
/* Small rather than fast: it runs only where the memo of stacks misses. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("Os")
#endif
#include "os.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <unistd.h>

/* This file's code starts the code a heap profile's sample runs, which
   lies together at the end of the text (nd_sample_path, config.h): on a
   page boundary, so that it takes as few pages as its length needs (7,
   28 KiB), whatever the length of the code before it (a start 160 bytes
   before a boundary made it 8: api.prof.the_code_a_sample_runs_lies_on_
   few_pages). The directive raises this file's .text alignment to a page;
   gcc writes top-level asm before the functions, so no padding falls
   inside the file's code. */
__asm__(".text\n\t.balign 4096");

#if defined(__x86_64__) && defined(DLFO_EH_SEGMENT_TYPE)
#define ND_OWN_UNWIND 1
#else
#define ND_OWN_UNWIND 0
#endif

#if ND_OWN_UNWIND

/* DWARF pointer encodings (DW_EH_PE_*) this reader takes. */
#define PE_OMIT    0xff
#define PE_ABSPTR  0x00
#define PE_ULEB    0x01
#define PE_UDATA2  0x02
#define PE_UDATA4  0x03
#define PE_UDATA8  0x04
#define PE_SLEB    0x09
#define PE_SDATA2  0x0a
#define PE_SDATA4  0x0b
#define PE_SDATA8  0x0c
#define PE_PCREL   0x10
#define PE_DATAREL 0x30

#define DW_RBP 6
#define DW_RSP 7
#define DW_RA  16

/* A cursor over unwind-table bytes; ok turns false on anything unknown or
   past end. */
typedef struct nd_uw_cur {
    const uint8_t *p, *end;
    bool ok;
    uintptr_t bias;       /* the bytes' address in the object less their address here */
} nd_uw_cur;

/* Byte compares and lengths without libc's: its memcmp, strcmp and
   strnlen are the CPU's variants (avx2, evex), which a process that does
   not profile may never run, and the first call of each maps the 64 KiB
   of libc's code around it (fault-around): batchq -w 2's samples made 16
   pages of libc's code resident that way (bench/peakmap.py -p libc.so.6,
   under setarch -R). These are short (an ELF header's magic, a build ID's
   bytes, an augmentation string). */
static bool nd_uw_same(const void *a, const void *b, size_t n)
{
    const volatile uint8_t *x = a;   /* volatile: not turned back into a memcmp call */
    const uint8_t *y = b;
    for (size_t i = 0; i < n; i++)
        if (x[i] != y[i])
            return false;
    return true;
}

static size_t nd_uw_strnlen(const char *s, size_t max)
{
    size_t n = 0;
    while (n < max && s[n] != '\0')
        n++;
    return n;
}

static nd_noinline uint64_t nd_uw_uleb(nd_uw_cur *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0; c->p < c->end && shift < 64; shift += 7) {
        uint8_t b = *c->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    c->ok = false;
    return 0;
}

static nd_noinline int64_t nd_uw_sleb(nd_uw_cur *c)
{
    uint64_t v = 0;
    unsigned shift = 0;
    for (; c->p < c->end && shift < 64;) {
        uint8_t b = *c->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80)) {
            if (shift < 64 && (b & 0x40))
                v |= ~(uint64_t)0 << shift;
            return (int64_t)v;
        }
    }
    c->ok = false;
    return 0;
}

static nd_noinline uint64_t nd_uw_fixed(nd_uw_cur *c, size_t n)
{
    if ((size_t)(c->end - c->p) < n) {
        c->ok = false;
        return 0;
    }
    uint64_t v = 0;
    memcpy(&v, c->p, n);   /* little-endian */
    c->p += n;
    return v;
}

/* A pointer in encoding enc; datarel is relative to `data` (.eh_frame_hdr). */
static nd_noinline uintptr_t nd_uw_ptr(nd_uw_cur *c, uint8_t enc, uintptr_t data)
{
    uintptr_t at = (uintptr_t)c->p + c->bias, v;
    switch (enc & 0x0f) {
    case PE_ABSPTR: v = (uintptr_t)nd_uw_fixed(c, 8); break;
    case PE_ULEB:   v = (uintptr_t)nd_uw_uleb(c); break;
    case PE_UDATA2: v = (uintptr_t)nd_uw_fixed(c, 2); break;
    case PE_UDATA4: v = (uintptr_t)nd_uw_fixed(c, 4); break;
    case PE_UDATA8: case PE_SDATA8: v = (uintptr_t)nd_uw_fixed(c, 8); break;
    case PE_SLEB:   v = (uintptr_t)nd_uw_sleb(c); break;
    case PE_SDATA2: v = (uintptr_t)(int64_t)(int16_t)nd_uw_fixed(c, 2); break;
    case PE_SDATA4: v = (uintptr_t)(int64_t)(int32_t)nd_uw_fixed(c, 4); break;
    default: c->ok = false; return 0;
    }
    switch (enc & 0x70) {
    case 0: break;
    case PE_PCREL: v += at; break;
    case PE_DATAREL: v += data; break;
    default: c->ok = false; return 0;
    }
    return v;
}

/* The rules of one frame at one address: what the walk needs of them.
   Offsets are 32 bits (a frame of 2 GiB is not one): a rule whose offset
   does not fit is unusable (cfa_bad; a register's how 2). */
typedef struct nd_uw_rules {
    int32_t cfa_off;
    int32_t rbp_off;
    int32_t ra_off;
    uint8_t cfa_reg;      /* DW_RSP or DW_RBP; anything else is unusable */
    uint8_t cfa_bad;      /* 1: the CFA's offset did not fit cfa_off: unusable */
    uint8_t rbp_how;      /* 0 same value, 1 saved at CFA + rbp_off, 2 unusable */
    uint8_t ra_how;       /* 1 at CFA + ra_off, 2 unusable, 3 undefined (outermost) */
} nd_uw_rules;

static bool nd_uw_fits(int64_t off) { return off >= INT32_MIN && off <= INT32_MAX; }

static nd_noinline void nd_uw_set_cfa_off(nd_uw_rules *r, int64_t off)
{
    r->cfa_bad = !nd_uw_fits(off);
    r->cfa_off = r->cfa_bad ? 0 : (int32_t)off;
}

/* DW_CFA_remember_state depth: compilers save one state around each
   epilogue in a function's middle and restore it after (depth 1); a
   deeper nesting ends the stack there. (8 took 384 bytes of the sampling
   thread's stack.) */
#define ND_UW_STATES 4

/* Sets the rule of register reg: how 1 (at CFA + off), 0 (same), 2, 3. */
static nd_noinline void nd_uw_set(nd_uw_rules *r, uint64_t reg, uint8_t how, int64_t off)
{
    if (!nd_uw_fits(off)) {
        how = 2;
        off = 0;
    }
    if (reg == DW_RBP) {
        r->rbp_how = how == 3 ? 2 : how;
        r->rbp_off = (int32_t)off;
    } else if (reg == DW_RA) {
        r->ra_how = how == 0 ? 2 : how;
        r->ra_off = (int32_t)off;
    }
}

/* Runs CFA instructions [c) for addresses up to target (pc advancing from
   *loc; target = UINTPTR_MAX runs them all); init: the rules after the
   CIE's instructions (DW_CFA_restore). False on anything unknown. */
static bool nd_uw_run(nd_uw_cur *c, uintptr_t *loc, uintptr_t target, uint64_t caf, int64_t daf,
                      uint8_t fde_enc, nd_uw_rules *r, const nd_uw_rules *init)
{
    nd_uw_rules saved[ND_UW_STATES];
    unsigned depth = 0;
    while (c->ok && c->p < c->end) {
        uint8_t op = *c->p++, low = op & 0x3f;
        uint64_t reg, adv = UINT64_MAX;
        switch (op >> 6) {
        case 1: adv = low * caf; break;
        case 2: nd_uw_set(r, low, 1, (int64_t)nd_uw_uleb(c) * daf); continue;
        case 3:
            if (init == NULL)
                return false;
            if (low == DW_RBP) { r->rbp_how = init->rbp_how; r->rbp_off = init->rbp_off; }
            if (low == DW_RA) { r->ra_how = init->ra_how; r->ra_off = init->ra_off; }
            continue;
        default: break;
        }
        if (adv == UINT64_MAX) {
            switch (op) {
            case 0x00: break;                                            /* nop */
            case 0x01: {                                                 /* set_loc */
                uintptr_t to = nd_uw_ptr(c, fde_enc, 0);
                if (to > target)
                    return true;
                *loc = to;
                break;
            }
            case 0x02: adv = nd_uw_fixed(c, 1) * caf; break;             /* advance_loc1 */
            case 0x03: adv = nd_uw_fixed(c, 2) * caf; break;             /* advance_loc2 */
            case 0x04: adv = nd_uw_fixed(c, 4) * caf; break;             /* advance_loc4 */
            case 0x05: reg = nd_uw_uleb(c); nd_uw_set(r, reg, 1, (int64_t)nd_uw_uleb(c) * daf); break;
            case 0x06:                                                   /* restore_extended */
                reg = nd_uw_uleb(c);
                if (init == NULL)
                    return false;
                if (reg == DW_RBP) { r->rbp_how = init->rbp_how; r->rbp_off = init->rbp_off; }
                if (reg == DW_RA) { r->ra_how = init->ra_how; r->ra_off = init->ra_off; }
                break;
            case 0x07: nd_uw_set(r, nd_uw_uleb(c), 3, 0); break;         /* undefined */
            case 0x08: nd_uw_set(r, nd_uw_uleb(c), 0, 0); break;         /* same_value */
            case 0x09: reg = nd_uw_uleb(c); nd_uw_uleb(c); nd_uw_set(r, reg, 2, 0); break;   /* register */
            case 0x0a:                                                   /* remember_state */
                if (depth == ND_UW_STATES)
                    return false;
                saved[depth++] = *r;
                break;
            case 0x0b:                                                   /* restore_state */
                if (depth == 0)
                    return false;
                *r = saved[--depth];
                break;
            case 0x0c: r->cfa_reg = (uint8_t)nd_uw_uleb(c); nd_uw_set_cfa_off(r, (int64_t)nd_uw_uleb(c)); break;
            case 0x0d: r->cfa_reg = (uint8_t)nd_uw_uleb(c); break;
            case 0x0e: nd_uw_set_cfa_off(r, (int64_t)nd_uw_uleb(c)); break;
            case 0x0f: r->cfa_reg = 0xff; c->p += nd_uw_uleb(c); break;  /* def_cfa_expression */
            case 0x10: case 0x16:                                        /* (val_)expression */
                reg = nd_uw_uleb(c);
                nd_uw_set(r, reg, 2, 0);
                c->p += nd_uw_uleb(c);
                break;
            case 0x11: reg = nd_uw_uleb(c); nd_uw_set(r, reg, 1, nd_uw_sleb(c) * daf); break;
            case 0x12: r->cfa_reg = (uint8_t)nd_uw_uleb(c); nd_uw_set_cfa_off(r, nd_uw_sleb(c) * daf); break;
            case 0x13: nd_uw_set_cfa_off(r, nd_uw_sleb(c) * daf); break;
            case 0x14: reg = nd_uw_uleb(c); nd_uw_uleb(c); nd_uw_set(r, reg, 2, 0); break;   /* val_offset */
            case 0x15: reg = nd_uw_uleb(c); nd_uw_sleb(c); nd_uw_set(r, reg, 2, 0); break;
            case 0x2e: nd_uw_uleb(c); break;                             /* GNU_args_size */
            case 0x2f: reg = nd_uw_uleb(c); nd_uw_set(r, reg, 1, -(int64_t)nd_uw_uleb(c) * daf); break;
            default: return false;
            }
            if (c->p > c->end)
                return false;
        }
        if (adv != UINT64_MAX) {
            if (*loc + adv > target)
                return true;   /* the rules at target are these */
            *loc += adv;
        }
    }
    return c->ok;
}

/* Where the tables of the objects a walk met are read from. Reading them
   in place would make them resident: the kernel maps a file's pages 64 KiB
   around each one touched, so the few entries a walk reads in libc's
   tables (its outermost frames are in every stack) cost about 150 KiB of
   the process's resident memory. So they are read from the object's file
   with pread (page cache, not the process's pages), when the file is the
   one mapped (its program headers put the tables where they are, and the
   object ends where it does); in place otherwise (the vDSO, a file
   replaced since). */
#define ND_UW_OBJS 4
#define ND_UW_WINDOW 128   /* entries of the search table read at once */
#define ND_UW_RECORD 96    /* bytes of an FDE or a CIE read at once (most are shorter) */
/* Bytes of a file's start read at once: its ELF header and up to
   ND_UW_PHNUM program headers after it (the same stack as the two reads
   took). An object with more program headers (10-14 in the libraries and
   programs of a Debian system) is read in place. They are read over the
   walk's window (nd_uw_walk), whose 1 KiB 16 of them fit. */
#define ND_UW_PHNUM  16
#define ND_UW_HEAD   (sizeof(Elf64_Ehdr) + ND_UW_PHNUM * sizeof(Elf64_Phdr))
typedef struct nd_uw_obj {
    uintptr_t start;      /* dlfo_map_start: which object */
    int       fd;         /* -1: read in place */
    int       slot;       /* its entry in nd_uw_fds */
    uintptr_t lo, hi;     /* the addresses of the segment read from the file */
    uintptr_t delta;      /* file offset = address - delta */
    uintptr_t tab;        /* its search table (0: .eh_frame_hdr not read yet) */
    uint64_t  count;      /* ... of `count` entries */
} nd_uw_obj;

/* A CIE of up to this many bytes (length word included) is read; a
   longer one ends the stack there (20-28 bytes in the libraries and
   programs of a Debian system). */
#define ND_UW_CIE 128

/* An FDE of up to this many bytes (length word included) is read into a
   buffer of the frame's; a longer one (rare: none in libc, 4 of 4,867 in
   libstdc++, of up to 760 bytes) into the walk's scratch, over its window
   (1 KiB: a longer one ends the stack there; it was 1.5 KiB). */
#define ND_UW_FDE_SMALL 256

/* A walk's reads, kept for its next frames: each object's .eh_frame_hdr
   (above), the last window of a search table and the last CIE read. The
   frames of one walk mostly lie in a few objects, near each other and
   under one CIE: the first walk of larson -t 1 read libnodal's header,
   its search steps, the same window and the same CIE again for each of
   its four nodal frames (53 pread64 calls, 31 with these kept).

   The window shares its bytes with an object's ELF and program headers
   (read when the walk meets a new object, at most ND_UW_OBJS times a walk)
   and with a long FDE: either ends the window kept (win_obj = NULL). They
   were three buffers on the sampling thread's stack, a walk that read the
   tables took 4.3 KiB of it (unit.unwind.a_walk_takes_at_most_3_kib_of_its_threads_stack;
   now 2.3 KiB) and a sample about 6.2 KiB below malloc (now 3.4): in
   larson -t 2 a page of each sampling thread's stack that the program
   otherwise never reached (bench/peakmap.py, thread stacks 24 KiB with
   prof=1, 16 without; now 16). */
typedef struct nd_uw_walk {
    nd_uw_obj objs[ND_UW_OBJS];
    int       nobjs;
    const nd_uw_obj *win_obj;        /* the window's object (NULL: none) */
    uintptr_t win_hdr;               /* ... its .eh_frame_hdr */
    uint64_t  win_lo, win_hi;        /* its entries [win_lo, win_hi) of the table */
    const nd_uw_obj *cie_obj;        /* the last CIE's object (NULL: none) */
    uintptr_t cie_at;                /* ... its address */
    uint8_t   cie[ND_UW_CIE];        /* ... its bytes (length word first) */
    union {
        int32_t    win[2 * ND_UW_WINDOW];   /* the window (win_obj's) */
        Elf64_Ehdr eh;                      /* a new object's headers (nd_uw_obj_of) */
        Elf64_Phdr ph;                      /* (their alignment) */
        uint8_t    head[ND_UW_HEAD];
        uint8_t    fde[2 * ND_UW_WINDOW * 4];   /* an FDE longer than ND_UW_FDE_SMALL */
    } u;
} nd_uw_walk;

/* The file calls, as raw system calls: open, pread and close are
   cancellation points, and a malloc must not be one (close:
   nd_os_close). */
static int nd_uw_open(const char *path) { return (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC); }
static ssize_t nd_uw_pread(int fd, void *buf, size_t len, uint64_t off)
{
    return (ssize_t)syscall(SYS_pread64, fd, buf, len, (off_t)off);
}

/* The descriptors walks hold, so that fork() leaves none to a child. A
   walk registers each file before it opens it and until it has closed it.
   An entry is 0 (free), ND_UW_BUSY (a descriptor being opened or closed:
   its number not known), fd + 1 (a walk holds fd) or -(fd + 2) (fd left
   open by a walk that ended during a fork: the fork's handlers close it);
   its owner is the walking thread (the address of its nd_uw_self, and its
   thread id). The kernel copies a process's memory and its descriptors at
   different moments, so no walk opens or closes a file while a fork is
   under way: fork()'s prepare handler stops them (walks read in place,
   and leave their files to the handlers) and waits for the opens and
   closes already started; the parent's handler closes the files left to
   it, the child's also those of other threads' walks, which it does not
   have.

   The wait has no time limit, so that no delay of the walker (a thread
   that waits for a CPU, on a loaded machine) leaves a child a descriptor
   whose number no entry holds yet. It cannot hang the fork: an entry is
   ND_UW_BUSY only across one system call, with every signal blocked, so
   no handler runs there (one that never returned would stop the walker
   for good); a thread the kernel has stopped there (a debugger's, 't' or
   'T' in /proc: a stop of the whole process stops the forking thread too)
   is not waited for: its descriptor may go to the child, which is better
   than a fork that never ends. */
#define ND_UW_FDS  16
#define ND_UW_BUSY (-1)
/* The unwinder's few variables (these, nd_uw_cache and nd_uw_cache_none,
   about 0.4 KiB) are in nodal's .data, whose one OS page every process
   has resident (its relocations write it), not in .bss, where they lay
   on a page of their own (with the end of the reports' snapshot buffer):
   one page more in every process that unwinds (batchq -w 2 and larson -t
   2 with prof=1, bench/peakmap.py). A cache line of their own, not
   shared with .data's other variables. */
#define ND_UW_DATA __attribute__((section(".data.nodal_unwind"), aligned(64)))
ND_UW_DATA static int       nd_uw_fds[ND_UW_FDS];         /* atomic */
ND_UW_DATA static uintptr_t nd_uw_fd_owner[ND_UW_FDS];    /* atomic */
ND_UW_DATA static int       nd_uw_fd_tid[ND_UW_FDS];      /* atomic: the owner's thread id */
ND_UW_DATA static int       nd_uw_forking;                /* atomic: between prepare and parent/child */
static __thread char nd_uw_self;

#if ND_DEBUG >= 2
void (*nd_os_unwind_opened_hook)(int fd);
#endif

/* Blocks every signal (the kernel's mask: SIGKILL and SIGSTOP stay) for
   the time an entry is ND_UW_BUSY; *old = the mask before. Raw system
   calls, as the file calls. */
static void nd_uw_block_signals(uint64_t *old)
{
    uint64_t all = ~(uint64_t)0;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, old, sizeof all);
}

static void nd_uw_restore_signals(const uint64_t *old)
{
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, old, NULL, sizeof *old);
}

/* Opens path for a walk, registered in *slot; -1 when it cannot (no free
   entry, a fork under way, no file). */
static int nd_uw_open_registered(const char *path, int *slot)
{
    for (int i = 0; i < ND_UW_FDS; i++) {
        int zero = 0;
        if (__atomic_load_n(&nd_uw_fds[i], __ATOMIC_RELAXED) != 0)
            continue;
        uint64_t mask;
        nd_uw_block_signals(&mask);
        if (!__atomic_compare_exchange_n(&nd_uw_fds[i], &zero, ND_UW_BUSY, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
            nd_uw_restore_signals(&mask);
            continue;
        }
        __atomic_store_n(&nd_uw_fd_owner[i], (uintptr_t)&nd_uw_self, __ATOMIC_RELAXED);
        __atomic_store_n(&nd_uw_fd_tid[i], (int)syscall(SYS_gettid), __ATOMIC_RELAXED);
        /* (seq_cst: the prepare handler's flag and this entry are seen in
           one order, so it waits for this open or this walk sees the flag) */
        int fd = __atomic_load_n(&nd_uw_forking, __ATOMIC_SEQ_CST) ? -1 : nd_uw_open(path);
#if ND_DEBUG >= 2
        if (fd >= 0 && nd_os_unwind_opened_hook != NULL)
            nd_os_unwind_opened_hook(fd);   /* a test's stall between the open and the entry */
#endif
        __atomic_store_n(&nd_uw_fds[i], fd >= 0 ? fd + 1 : 0, __ATOMIC_RELEASE);
        nd_uw_restore_signals(&mask);
        *slot = i;
        return fd;
    }
    return -1;
}

static void nd_uw_close_registered(int fd, int slot)
{
    uint64_t mask;
    nd_uw_block_signals(&mask);
    __atomic_store_n(&nd_uw_fds[slot], ND_UW_BUSY, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&nd_uw_forking, __ATOMIC_SEQ_CST))
        __atomic_store_n(&nd_uw_fds[slot], -(fd + 2), __ATOMIC_RELEASE);   /* the fork's handlers close it */
    else {
        nd_os_close(fd);
        __atomic_store_n(&nd_uw_fds[slot], 0, __ATOMIC_RELEASE);
    }
    nd_uw_restore_signals(&mask);
}

/* Is thread tid of this process stopped by the kernel (state 't' or 'T'
   in /proc/self/task/TID/stat), or its state unreadable? */
static bool nd_uw_thread_is_stopped(int tid)
{
    char path[48] = "/proc/self/task/", digits[12], stat[160];
    int nd = 0, len = sizeof "/proc/self/task/" - 1;
    for (unsigned v = (unsigned)tid; nd == 0 || v != 0; v /= 10)
        digits[nd++] = (char)('0' + v % 10);
    while (nd > 0)
        path[len++] = digits[--nd];
    memcpy(path + len, "/stat", sizeof "/stat");
    int fd = nd_uw_open(path);
    if (fd < 0)
        return true;
    ssize_t got = nd_uw_pread(fd, stat, sizeof stat - 1, 0);
    nd_os_close(fd);
    if (got <= 0)
        return true;
    stat[got] = '\0';
    const char *state = NULL;   /* after the name's last ')' (a name may hold one) */
    for (const char *c = stat; *c != '\0'; c++)
        if (*c == ')')
            state = c;
    return state == NULL || state[1] != ' ' || state[2] == 't' || state[2] == 'T';
}

/* How long the prepare handler waits for an open or a close before it
   looks whether its thread is stopped (then again as long again). */
#define ND_UW_LOOK_MS 50

/* The entries of other threads' opens and closes in progress, as a mask. */
nd_inline uint32_t nd_uw_busy_fds(void)
{
    uint32_t busy = 0;
    for (int i = 0; i < ND_UW_FDS; i++)
        if (__atomic_load_n(&nd_uw_fds[i], __ATOMIC_SEQ_CST) == ND_UW_BUSY &&
            __atomic_load_n(&nd_uw_fd_owner[i], __ATOMIC_RELAXED) != (uintptr_t)&nd_uw_self)
            busy |= (uint32_t)1 << i;
    return busy;
}

/* The prepare handler's wait while some are (only with prof=1, whose
   walks open and close files): in the cold part of the text, off the
   code every forking process maps (config.h: nd_hot). */
static nd_noinline void nd_uw_fork_wait(void)
{
    uint32_t stopped = 0;   /* the entries of threads found stopped: not waited for */
    for (uint64_t look = 0;;) {
        uint32_t busy = nd_uw_busy_fds() & ~stopped;
        if (busy == 0)
            return;
        uint64_t now = nd_os_now_ms();
        if (look == 0)
            look = now + ND_UW_LOOK_MS;
        else if (now >= look) {
            for (int i = 0; i < ND_UW_FDS; i++)
                if ((busy >> i & 1) && nd_uw_thread_is_stopped(__atomic_load_n(&nd_uw_fd_tid[i], __ATOMIC_RELAXED)))
                    stopped |= (uint32_t)1 << i;
            look = now + ND_UW_LOOK_MS;
        }
        nd_os_yield();
    }
}

nd_hot void nd_os_unwind_fork_prepare(void)
{
    __atomic_store_n(&nd_uw_forking, 1, __ATOMIC_SEQ_CST);
    if (nd_uw_busy_fds() != 0)
        nd_uw_fork_wait();
}

/* Closes the files left to the fork's handlers, and in the child those of
   other threads' walks (and frees the entries of a stopped thread's open
   or close, whose thread the child does not have); then walks open and
   close files again. */
static nd_hot void nd_uw_fork_done(bool child)
{
    for (int i = 0; i < ND_UW_FDS; i++) {
        int v = __atomic_load_n(&nd_uw_fds[i], __ATOMIC_ACQUIRE);
        bool other = __atomic_load_n(&nd_uw_fd_owner[i], __ATOMIC_RELAXED) != (uintptr_t)&nd_uw_self;
        if (v < ND_UW_BUSY || (child && v > 0 && other)) {
            if (__atomic_compare_exchange_n(&nd_uw_fds[i], &v, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
                nd_os_close(v > 0 ? v - 1 : -v - 2);
        } else if (child && v == ND_UW_BUSY && other)
            __atomic_store_n(&nd_uw_fds[i], 0, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&nd_uw_forking, 0, __ATOMIC_RELEASE);
}

nd_hot void nd_os_unwind_fork_parent(void) { nd_uw_fork_done(false); }
nd_hot void nd_os_unwind_fork_child(void) { nd_uw_fork_done(true); }

/* Reads len bytes at address a of object o. */
static bool nd_uw_read(const nd_uw_obj *o, uintptr_t a, void *buf, size_t len)
{
    if (o == NULL || o->fd < 0 || a < o->lo || a + len > o->hi) {
        memcpy(buf, (const void *)a, len);
        return true;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t n = nd_uw_pread(o->fd, (char *)buf + done, len - done, a + done - o->delta);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        done += (size_t)n;
    }
    return true;
}

/* Reads the record (a 4-byte length, then that many bytes: an FDE or a
   CIE) at address a of object o into buf (cap bytes): from a file, with
   one pread of the record's usual size and a second one only for the rest
   of a longer one. *len = the length word (also when the record is
   longer than cap, which returns false). */
static bool nd_uw_read_record(const nd_uw_obj *o, uintptr_t a, uint8_t *buf, size_t cap, uint32_t *len)
{
    size_t first = 8;
    if (o != NULL && o->fd >= 0 && a >= o->lo && a < o->hi)
        first = o->hi - a < ND_UW_RECORD ? o->hi - a : ND_UW_RECORD;
    if (first < 8 || !nd_uw_read(o, a, buf, first))
        return false;
    memcpy(len, buf, sizeof *len);
    if (*len < 4 || *len > cap - 4)
        return false;   /* (0xffffffff: 64-bit lengths, not used in .eh_frame) */
    return 4 + (size_t)*len <= first || nd_uw_read(o, a + first, buf + first, 4 + *len - first);
}

/* The first ND_UW_HEAD bytes of file fd (its ELF header and, mostly,
   its program headers): the bytes read, or -1. */
static ssize_t nd_uw_read_head(int fd, uint8_t *head)
{
    ssize_t got;
    do
        got = nd_uw_pread(fd, head, ND_UW_HEAD, 0);
    while (got < 0 && errno == EINTR);
    return got;
}

/* The object mapped at map_start: the end of its GNU build ID note (a
   hash of the whole file, which the linker writes) as an offset in its
   file, when that lies within its first `got` bytes (the notes follow the
   program headers; the loader read them there: resident already); 0
   when there is none there. */
static uint64_t nd_uw_id_end(uintptr_t map_start, ssize_t got)
{
    const Elf64_Ehdr *meh = (const Elf64_Ehdr *)map_start;
    if (got < (ssize_t)sizeof *meh || !nd_uw_same(meh->e_ident, ELFMAG, SELFMAG) ||
        meh->e_phentsize != sizeof(Elf64_Phdr) || meh->e_phoff + (uint64_t)meh->e_phnum * sizeof(Elf64_Phdr) > (uint64_t)got)
        return 0;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(map_start + meh->e_phoff);
    for (int i = 0; i < meh->e_phnum; i++) {
        if (ph[i].p_type != PT_NOTE || ph[i].p_offset + ph[i].p_filesz > (uint64_t)got)
            continue;
        /* The notes: name size, description size, type, then the name and
           the description, each padded to 4 bytes. */
        uint64_t end = ph[i].p_offset + ph[i].p_filesz;
        for (uint64_t at = ph[i].p_offset; at + 12 <= end;) {
            const uint32_t *n = (const uint32_t *)(map_start + at);
            uint64_t next = at + 12 + ((n[0] + 3ull) & ~3ull) + ((n[1] + 3ull) & ~3ull);
            if (next > end)
                break;
            if (n[2] == NT_GNU_BUILD_ID && n[0] == 4 && nd_uw_same(n + 3, "GNU", 4) && n[1] != 0)
                return next;
            at = next;
        }
    }
    return 0;
}

/* Reads the head of file fd (-1: none; *got = the bytes read, or -1)
   into head, and *id_end = nd_uw_id_end of the object mapped at
   map_start: whether the file's bytes up to the end of its build ID are
   the mapped ones (false when it has none there to tell). */
static bool nd_uw_head_is_mapped(int fd, uintptr_t map_start, uint8_t *head, ssize_t *got, uint64_t *id_end)
{
    *got = fd >= 0 ? nd_uw_read_head(fd, head) : -1;
    *id_end = nd_uw_id_end(map_start, *got);
    return *id_end != 0 && nd_uw_same(head, (const void *)map_start, *id_end);
}

/* Opens the file of object fo and checks it is the one mapped; its entry
   in w (fd -1 when it is not read from a file). */
static nd_uw_obj *nd_uw_obj_of(nd_uw_walk *w, const struct dl_find_object *fo)
{
    uintptr_t start = (uintptr_t)fo->dlfo_map_start;
    for (int i = 0; i < w->nobjs; i++)
        if (w->objs[i].start == start)
            return &w->objs[i];
    if (w->nobjs == ND_UW_OBJS)
        return NULL;   /* in place */
    nd_uw_obj *o = &w->objs[w->nobjs++];
    *o = (nd_uw_obj){ .start = start, .fd = -1 };
    const struct link_map *lm = fo->dlfo_link_map;
    if (lm == NULL || lm->l_name == NULL)
        return o;
    /* The program's own file: under the name it was started by
       (AT_EXECFN) if that is still the file mapped (the same build ID: a
       relative name after a chdir, a script or a file rebuilt since is
       not), else
       /proc/self/exe. Opening /proc/self/exe cost a process's first walk
       25-80 us (procfs makes the process's entries on first use; larson
       -t 1, clock_gettime around the call), any other file 2-7 us. */
    bool exe = lm->l_name[0] == '\0';
    const char *path = exe ? (const char *)getauxval(AT_EXECFN) : lm->l_name;
    if (path == NULL)
        path = "/proc/self/exe";
    int fd = nd_uw_open_registered(path, &o->slot);
    /* The ELF header and the program headers after it: one read (they
       were two), over the walk's window. */
    w->win_obj = NULL;
    uint8_t *head = w->u.head;
    /* The file's bytes up to the end of the build ID are those mapped:
       the file mapped. A file with another build ID (a library upgraded
       in place since, perhaps with the same layout) is not read: its
       tables' rules are not the running code's. */
    ssize_t got;
    uint64_t id_end;
    bool same = nd_uw_head_is_mapped(fd, start, head, &got, &id_end);
    bool by_name = exe && !nd_uw_same(path, "/proc/self/exe", sizeof "/proc/self/exe");
    if (by_name && fd >= 0 && !same) {   /* no build ID to tell: not by its name */
        nd_uw_close_registered(fd, o->slot);
        fd = -1;
    }
    if (by_name && fd < 0) {
        fd = nd_uw_open_registered("/proc/self/exe", &o->slot);
        same = nd_uw_head_is_mapped(fd, start, head, &got, &id_end);
    }
    if (fd < 0)
        return o;
    const Elf64_Ehdr *eh = &w->u.eh;
    bool ok = (id_end == 0 || same) && got >= (ssize_t)sizeof *eh && nd_uw_same(eh->e_ident, ELFMAG, SELFMAG) &&
              eh->e_ident[EI_CLASS] == ELFCLASS64 && eh->e_phentsize == sizeof(Elf64_Phdr) && eh->e_phnum <= ND_UW_PHNUM;
    int phnum = ok ? eh->e_phnum : 0;
    size_t phlen = (size_t)phnum * sizeof(Elf64_Phdr);
    const Elf64_Phdr *ph = &w->u.ph;
    if (ok && eh->e_phoff + phlen <= (uint64_t)got && eh->e_phoff % 8 == 0)
        ph = (const Elf64_Phdr *)(head + eh->e_phoff);
    else if (ok)   /* not right after the ELF header: a read of their own, over it */
        ok = nd_uw_pread(fd, head, phlen, eh->e_phoff) == (ssize_t)phlen;
    uintptr_t base = (uintptr_t)lm->l_addr, hdr = (uintptr_t)fo->dlfo_eh_frame, end = 0;
    bool hdr_here = false;
    for (int i = 0; ok && i < phnum; i++) {
        if (ph[i].p_type == PT_GNU_EH_FRAME)
            hdr_here = base + ph[i].p_vaddr == hdr;
        if (ph[i].p_type != PT_LOAD)
            continue;
        uintptr_t lo = base + ph[i].p_vaddr, hi = lo + ph[i].p_filesz;
        if (lo + ph[i].p_memsz > end)
            end = lo + ph[i].p_memsz;
        if (hdr >= lo && hdr < hi) {
            o->lo = lo;
            o->hi = hi;
            o->delta = lo - ph[i].p_offset;
        }
    }
    /* The file mapped: the tables where its headers say, the same end. */
    if (ok && hdr_here && o->hi != 0 && end == (uintptr_t)fo->dlfo_map_end) {
        o->fd = fd;
        return o;
    }
    nd_uw_close_registered(fd, o->slot);
    o->lo = o->hi = 0;
    return o;
}

/* The rules of the frame executing at pc (for a return address, pc is the
   call instruction: the address minus one). False when there are none this
   reader can use. */
static bool nd_uw_rules_at(nd_uw_walk *w, uintptr_t pc, nd_uw_rules *out)
{
    struct dl_find_object fo;
    if (_dl_find_object((void *)pc, &fo) != 0 || fo.dlfo_eh_frame == NULL)
        return false;
    nd_uw_obj *o = nd_uw_obj_of(w, &fo);
    /* .eh_frame_hdr: version 1, the encodings, then a table of
       (initial address, FDE) sorted by address, both datarel sdata4. Read
       once a walk for each object (of the first ND_UW_OBJS). */
    uintptr_t hdr = (uintptr_t)fo.dlfo_eh_frame, tab;
    uint64_t count;
    if (o != NULL && o->tab != 0) {
        tab = o->tab;
        count = o->count;
    } else {
        uint8_t hb[4 + 16];
        if (!nd_uw_read(o, hdr, hb, sizeof hb) || hb[0] != 1 || hb[3] != (PE_DATAREL | PE_SDATA4))
            return false;
        nd_uw_cur c = { hb + 4, hb + sizeof hb, true, hdr - (uintptr_t)hb };
        nd_uw_ptr(&c, hb[1], hdr);                                   /* .eh_frame itself: not needed */
        count = nd_uw_ptr(&c, hb[2], hdr);
        if (!c.ok || hb[2] == PE_OMIT || count == 0)
            return false;
        tab = (uintptr_t)c.p + c.bias;
        if (o != NULL) {
            o->tab = tab;
            o->count = count;
        }
    }
    /* The last entry whose address is <= pc. Each read takes a window of
       ND_UW_WINDOW entries (a read from a file is a system call, as dear
       for 1 KiB as for 8 bytes), placed where pc would be if the entries'
       addresses grew evenly between the two known bounds (at first the
       object's start and end), then between the window's ends and the
       bound on pc's side; every other window halves the range, so a table
       of n entries takes at most 2 log2(n / ND_UW_WINDOW) reads. Halving
       one entry at a time took libc's table of about 30,000 entries 6
       reads a frame (5 probes of 8 bytes and the window); placing them
       takes 1-3. The walk's last window serves when pc lies before its
       last entry's address (its answer is inside). */
    int32_t *e = w->u.win;
    uint64_t lo = w->win_lo, hi = w->win_hi;
    bool kept = o != NULL && w->win_obj == o && w->win_hdr == hdr && hi > lo && hdr + (intptr_t)e[0] <= pc &&
                (hi == count || pc < hdr + (intptr_t)e[2 * (hi - lo - 1)]);
    if (!kept) {
        w->win_obj = NULL;
        /* The answer is in [lo, hi) if there is one; entry lo's address is
           about alo (<= pc once read), entry hi's ahi (> pc once read). */
        uint64_t n = count;
        uintptr_t alo = (uintptr_t)fo.dlfo_map_start, ahi = (uintptr_t)fo.dlfo_map_end;
        bool even = true, found = false;
        lo = 0;
        hi = n;
        while (!found) {
            uint64_t at;
            if (hi - lo <= ND_UW_WINDOW) {
                at = lo;
            } else {
                uint64_t guess = lo + (hi - lo) / 2;
                if (even && pc > alo && ahi > alo && pc < ahi)
                    guess = lo + (uint64_t)((double)(pc - alo) / (double)(ahi - alo) * (double)(hi - lo));
                at = guess > lo + ND_UW_WINDOW / 2 ? guess - ND_UW_WINDOW / 2 : lo;
                if (at > hi - ND_UW_WINDOW)
                    at = hi - ND_UW_WINDOW;
            }
            uint64_t len = hi - at < ND_UW_WINDOW ? hi - at : ND_UW_WINDOW;
            if (!nd_uw_read(o, tab + 8 * at, e, 8 * (size_t)len))
                return false;
            uintptr_t first = hdr + (intptr_t)e[0], last = hdr + (intptr_t)e[2 * (len - 1)];
            uint64_t before = hi - lo;
            if (pc < first) {
                if (at == lo)
                    return false;   /* before the first entry (lo's is <= pc unless lo is 0) */
                hi = at;
                ahi = first;
            } else if (pc < last || at + len == hi) {
                lo = at;
                hi = at + len;
                found = true;
            } else {
                lo = at + len - 1;
                alo = last;
            }
            /* A placed window that did not halve the range: the next one halves it. */
            even = !even || 2 * (hi - lo) <= before;
        }
        w->win_obj = o;
        w->win_hdr = hdr;
        w->win_lo = lo;
        w->win_hi = hi;
    }
    uint64_t j = hi - lo;
    while (j > 0 && hdr + (intptr_t)e[2 * (j - 1)] > pc)
        j--;
    if (j == 0)
        return false;
    uintptr_t fde = hdr + (intptr_t)e[2 * (j - 1) + 1];

    /* The FDE: length, CIE pointer, its address range, instructions. */
    uint8_t small[ND_UW_FDE_SMALL], *fb = small, *cb = w->cie;
    uint32_t fh[2] = { 0, 0 }, ch[2];
    if (!nd_uw_read_record(o, fde, fb, sizeof small, &fh[0])) {
        /* Longer than the frame's buffer: again, into the walk's scratch. */
        if (fh[0] <= sizeof small - 4 || fh[0] > sizeof w->u.fde - 4)
            return false;
        w->win_obj = NULL;
        fb = w->u.fde;
        if (!nd_uw_read_record(o, fde, fb, sizeof w->u.fde, &fh[0]))
            return false;
    }
    memcpy(&fh[1], fb + 4, sizeof fh[1]);
    if (fh[1] == 0)
        return false;
    uintptr_t cie = fde + 4 - fh[1];
    if (o != NULL && w->cie_obj == o && w->cie_at == cie) {
        memcpy(&ch[0], cb, sizeof ch[0]);   /* the walk's last CIE: read and checked */
    } else {
        w->cie_obj = NULL;
        if (!nd_uw_read_record(o, cie, cb, sizeof w->cie, &ch[0]))
            return false;
        w->cie_obj = o;
        w->cie_at = cie;
    }
    memcpy(&ch[1], cb + 4, sizeof ch[1]);
    if (ch[1] != 0)
        return false;
    nd_uw_cur cc = { cb + 8, cb + 4 + ch[0], true, cie - (uintptr_t)cb };
    uint8_t version = (uint8_t)nd_uw_fixed(&cc, 1);
    const char *aug = (const char *)cc.p;
    size_t auglen = nd_uw_strnlen(aug, (size_t)(cc.end - cc.p));
    cc.p += auglen + 1;
    if ((version != 1 && version != 3) || aug[0] != 'z' || cc.p > cc.end)
        return false;   /* no augmentation data: not what compilers emit for .eh_frame */
    uint64_t caf = nd_uw_uleb(&cc);
    int64_t daf = nd_uw_sleb(&cc);
    uint64_t ra = version == 1 ? nd_uw_fixed(&cc, 1) : nd_uw_uleb(&cc);
    uint64_t adlen = nd_uw_uleb(&cc);
    if (!cc.ok || adlen > (uint64_t)(cc.end - cc.p))
        return false;
    const uint8_t *ad_end = cc.p + adlen;
    uint8_t fde_enc = PE_ABSPTR;
    nd_uw_cur ac = { cc.p, ad_end, true, cc.bias };
    for (size_t i = 1; i < auglen && ac.ok; i++) {
        if (aug[i] == 'R')
            fde_enc = (uint8_t)nd_uw_fixed(&ac, 1);
        else if (aug[i] == 'L')
            nd_uw_fixed(&ac, 1);
        else if (aug[i] == 'P') {
            uint8_t penc = (uint8_t)nd_uw_fixed(&ac, 1);
            nd_uw_ptr(&ac, penc & 0x7f, 0);
        } else if (aug[i] != 'S')
            return false;   /* S: a signal frame's; its rules are read as any */
    }
    if (!ac.ok || ra != DW_RA)
        return false;
    cc.p = ad_end;

    nd_uw_cur fc = { fb + 8, fb + 4 + fh[0], true, fde - (uintptr_t)fb };
    uintptr_t begin = nd_uw_ptr(&fc, fde_enc, 0);
    uintptr_t range = nd_uw_ptr(&fc, fde_enc & 0x0f, 0);
    uint64_t fadlen = nd_uw_uleb(&fc);
    if (!fc.ok || fadlen > (uint64_t)(fc.end - fc.p) || pc < begin || pc - begin >= range)
        return false;
    fc.p += fadlen;

    nd_uw_rules r = { .cfa_reg = 0xff, .rbp_how = 0, .ra_how = 2 };
    uintptr_t loc = begin;
    if (!nd_uw_run(&cc, &loc, UINTPTR_MAX, caf, daf, fde_enc, &r, NULL))
        return false;
    nd_uw_rules init = r;
    loc = begin;
    if (!nd_uw_run(&fc, &loc, pc, caf, daf, fde_enc, &r, &init))
        return false;
    *out = r;
    return true;
}

/* The rules found, by return address: a walk reads the tables (pread) only
   for return addresses it has not met before. One word an entry, set by a
   store and read by a load (atomic), so it needs no lock:

     bits 0-46   the return address less one (user addresses are below 2^47)
     bit  47     the CFA is from rbp (else rsp)
     bits 48-55  the CFA's offset / 8
     bit  56     rbp is saved (else kept)
     bits 57-62  minus rbp's offset from the CFA / 8
     bit  63     the outermost frame (its return address undefined): no other bit but the address

   Rules that do not fit (the return address not at CFA - 8, offsets out
   of range) are not kept. Mapped at the first walk (a process that never
   profiles does not hold it). One OS page: its entries are spread by a
   hash, so a table of two was resident whole after a few walks (4 KiB of
   a small program's 2 % budget of prof=1), and past the memo of stacks
   (prof.c) a program walks few distinct return addresses. */
#define ND_UW_CACHE 512
ND_UW_DATA static uint64_t *nd_uw_cache;

/* Without a cache (no memory for it): one entry, still exact by its key. */
ND_UW_DATA static uint64_t nd_uw_cache_none;

static uint64_t *nd_uw_cache_slot(uintptr_t pc)
{
    uint64_t *c = __atomic_load_n(&nd_uw_cache, __ATOMIC_ACQUIRE);
    if (c == NULL) {
        void *m = mmap(NULL, ND_UW_CACHE * sizeof *c, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return &nd_uw_cache_none;
        uint64_t *none = NULL;
        if (__atomic_compare_exchange_n(&nd_uw_cache, &none, (uint64_t *)m, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            c = m;
        else {
            munmap(m, ND_UW_CACHE * sizeof *c);
            c = none;
        }
    }
    return &c[(uint32_t)((pc * 0x9e3779b97f4a7c15ull) >> 54) & (ND_UW_CACHE - 1)];
}

size_t nd_os_unwind_resident(void)
{
    uint64_t *c = __atomic_load_n(&nd_uw_cache, __ATOMIC_ACQUIRE);
    return c == NULL ? 0 : nd_os_resident(c, ND_UW_CACHE * sizeof *c);
}

static bool nd_uw_cached(uintptr_t pc, nd_uw_rules *r)
{
    uint64_t e = __atomic_load_n(nd_uw_cache_slot(pc), __ATOMIC_RELAXED);
    if (e == 0 || (e & ((1ull << 47) - 1)) != pc)
        return false;
    if (e >> 63) {
        *r = (nd_uw_rules){ .cfa_reg = 0xff, .ra_how = 3 };
        return true;
    }
    *r = (nd_uw_rules){ .cfa_reg = (e >> 47) & 1 ? DW_RBP : DW_RSP, .cfa_off = (int32_t)((e >> 48) & 0xff) * 8,
                        .rbp_how = (uint8_t)((e >> 56) & 1), .rbp_off = -(int32_t)((e >> 57) & 0x3f) * 8,
                        .ra_how = 1, .ra_off = -8 };
    return true;
}

static void nd_uw_cache_put(uintptr_t pc, const nd_uw_rules *r)
{
    if (pc >> 47 == 0 && pc != 0 && r->ra_how == 3) {
        __atomic_store_n(nd_uw_cache_slot(pc), (uint64_t)pc | 1ull << 63, __ATOMIC_RELAXED);
        return;
    }
    if (pc >> 47 != 0 || r->ra_how != 1 || r->ra_off != -8 || r->cfa_bad || (r->cfa_reg != DW_RSP && r->cfa_reg != DW_RBP) ||
        r->cfa_off < 0 || r->cfa_off % 8 != 0 || r->cfa_off / 8 > 0xff || r->rbp_how > 1 ||
        (r->rbp_how == 1 && (r->rbp_off >= 0 || r->rbp_off % 8 != 0 || -r->rbp_off / 8 > 0x3f)))
        return;
    uint64_t e = (uint64_t)pc | (uint64_t)(r->cfa_reg == DW_RBP) << 47 | (uint64_t)(r->cfa_off / 8) << 48;
    if (r->rbp_how == 1)
        e |= 1ull << 56 | (uint64_t)(-r->rbp_off / 8) << 57;
    __atomic_store_n(nd_uw_cache_slot(pc), e, __ATOMIC_RELAXED);
}

/* Is pc the x86-64 signal return trampoline (glibc's __restore_rt: mov
   $15, %rax; syscall), where a signal handler returns to? Its frame is the
   kernel's signal frame: the handler's CFA is the ucontext of the
   interrupted code. Read only when pc lies in a loaded object. */
static bool nd_uw_is_sigreturn(uintptr_t pc)
{
    static const uint8_t code[9] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 };
    struct dl_find_object fo;
    if (_dl_find_object((void *)pc, &fo) != 0 || pc + sizeof code > (uintptr_t)fo.dlfo_map_end)
        return false;
    return nd_uw_same((const void *)pc, code, sizeof code);
}

__attribute__((no_sanitize("address")))
int nd_os_unwind_own(uintptr_t *ips, uintptr_t *cfas, int max)
{
    /* This frame: its CFA, the return address into the caller below it,
       the caller's rbp saved at its frame address. */
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    uintptr_t cfa = fp + 2 * sizeof(uintptr_t);
    uintptr_t pc = (uintptr_t)__builtin_return_address(0);
    uintptr_t rbp = *(const uintptr_t *)fp;
    /* The rules of a frame are those of its call instruction (pc - 1),
       but in the frame a signal interrupted: of pc itself. */
    uintptr_t before = 1;
    int saved = errno, n = 0;
    nd_uw_walk w;
    w.nobjs = 0;
    w.win_obj = w.cie_obj = NULL;
    while (n < max && pc != 0) {
        ips[n] = pc;
        cfas[n] = cfa;
        n++;
        nd_uw_rules r;
        if (nd_uw_cached(pc - before, &r))
            ;
        else if (before == 1 && nd_uw_is_sigreturn(pc)) {
            /* A signal frame: the interrupted code's registers are in the
               ucontext at the handler's CFA. */
            const ucontext_t *uc = (const ucontext_t *)cfa;
            uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
            pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
            rbp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
            if (sp == 0 || (sp & 7) != 0)
                break;
            cfa = sp;   /* (on a sigaltstack it may lie below the handler's) */
            before = 0;
            continue;
        } else if (nd_uw_rules_at(&w, pc - before, &r))
            nd_uw_cache_put(pc - before, &r);
        else
            break;
        before = 1;
        if (r.ra_how != 1)
            break;   /* no rules, or the outermost frame (its return address undefined) */
        uintptr_t base = r.cfa_bad ? 0 : r.cfa_reg == DW_RSP ? cfa : r.cfa_reg == DW_RBP ? rbp : 0;
        if (base == 0 || r.rbp_how == 2)
            break;
        uintptr_t next = base + (uintptr_t)(intptr_t)r.cfa_off;
        if (next <= cfa || (next & 7) != 0)
            break;   /* a stack grows down: the caller's frame is above */
        uintptr_t ra_at = next + (uintptr_t)(intptr_t)r.ra_off;
        if (r.rbp_how == 1)
            rbp = *(const uintptr_t *)(next + (uintptr_t)(intptr_t)r.rbp_off);
        pc = *(const uintptr_t *)ra_at;
        cfa = next;
    }
    for (int i = 0; i < w.nobjs; i++)
        if (w.objs[i].fd >= 0)
            nd_uw_close_registered(w.objs[i].fd, w.objs[i].slot);
    errno = saved;
    return n;
}

bool nd_os_unwind_own_ok(void) { return true; }

#else

int nd_os_unwind_own(uintptr_t *ips, uintptr_t *cfas, int max)
{
    (void)ips;
    (void)cfas;
    (void)max;
    return -1;
}

bool nd_os_unwind_own_ok(void) { return false; }
size_t nd_os_unwind_resident(void) { return 0; }

void nd_os_unwind_fork_prepare(void) {}
void nd_os_unwind_fork_parent(void) {}
void nd_os_unwind_fork_child(void) {}

#endif
