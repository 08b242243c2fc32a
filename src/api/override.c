/*
 * override.c - the standard allocation names, so that libnodal.so and
 * libnodal.a replace the system allocator (linked with -lnodal or injected
 * with LD_PRELOAD). C++ operator new/delete reach these through libstdc++.
 *
 * Besides the C/POSIX names this exports the glibc-specific ones programs
 * use (malloc_usable_size, memalign, valloc, pvalloc, malloc_trim,
 * mallopt, malloc_stats, mallinfo2) and the __libc_* aliases, so nothing
 * in a process falls back to glibc's allocator for a block nodal owns.
 * This file is left out of libnodal_prefix.a.
 */
#include <stddef.h>
#include <stdio.h>
#include "alloc.h"
#include "free.h"
#include "init.h"

/* Our own declarations: the libc headers' differ in attributes, and some of
   these names (free_sized) are not in them yet. */
struct nd_mallinfo2;
struct nd_mallinfo;
void *malloc(size_t size);
void free(void *p);
void *calloc(size_t count, size_t size);
void *realloc(void *p, size_t size);
void *reallocarray(void *p, size_t count, size_t size);
int posix_memalign(void **out, size_t alignment, size_t size);
void *aligned_alloc(size_t alignment, size_t size);
void *memalign(size_t alignment, size_t size);
void *valloc(size_t size);
void *pvalloc(size_t size);
size_t malloc_usable_size(void *p);
void free_sized(void *p, size_t size);
void free_aligned_sized(void *p, size_t alignment, size_t size);
void cfree(void *p);
void *__libc_malloc(size_t size);
void __libc_free(void *p);
void *__libc_calloc(size_t count, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t alignment, size_t size);
void *__libc_valloc(size_t size);
void *__libc_pvalloc(size_t size);
int __posix_memalign(void **out, size_t alignment, size_t size);
int malloc_trim(size_t pad);
int mallopt(int param, int value);
void malloc_stats(void);
struct nd_mallinfo2 mallinfo2(void);
struct nd_mallinfo mallinfo(void);

nd_public nd_entry_line void *malloc(size_t size) { return nd_malloc_fast(nd_tls_tc, size); }
nd_public nd_entry void free(void *p) { nd_free_fast(p); }
nd_public void *calloc(size_t count, size_t size) { return nd_calloc(count, size); }
nd_public void *realloc(void *p, size_t size) { return nd_realloc(p, size); }
nd_public void *reallocarray(void *p, size_t count, size_t size) { return nd_reallocarray(p, count, size); }
nd_public int posix_memalign(void **out, size_t alignment, size_t size) { return nd_posix_memalign(out, alignment, size); }
nd_public void *aligned_alloc(size_t alignment, size_t size) { return nd_aligned_alloc(alignment, size); }
nd_public void *memalign(size_t alignment, size_t size) { return nd_memalign(alignment, size); }
nd_public void *valloc(size_t size) { return nd_valloc(size); }
nd_public void *pvalloc(size_t size) { return nd_pvalloc(size); }
nd_public size_t malloc_usable_size(void *p) { return nd_usable_size(p); }
nd_public void free_sized(void *p, size_t size) { nd_free_sized(p, size); }
nd_public void free_aligned_sized(void *p, size_t alignment, size_t size) { nd_free_aligned_sized(p, alignment, size); }
nd_public void cfree(void *p) { nd_free_fast(p); }

/* glibc's internal names, used by a few programs and older loaders. */
nd_public void *__libc_malloc(size_t size) { return nd_malloc_fast(nd_tls_tc, size); }
nd_public void __libc_free(void *p) { nd_free_fast(p); }
nd_public void *__libc_calloc(size_t count, size_t size) { return nd_calloc(count, size); }
nd_public void *__libc_realloc(void *p, size_t size) { return nd_realloc(p, size); }
nd_public void *__libc_memalign(size_t alignment, size_t size) { return nd_memalign(alignment, size); }
nd_public void *__libc_valloc(size_t size) { return nd_valloc(size); }
nd_public void *__libc_pvalloc(size_t size) { return nd_pvalloc(size); }
nd_public int __posix_memalign(void **out, size_t alignment, size_t size) { return nd_posix_memalign(out, alignment, size); }

/* glibc extensions. */
/* Collects (nodal_collect(1)) only when it is worth its system calls
   (nd_thread_trim); 1 if memory went back to the OS, as glibc's. */
nd_public int malloc_trim(size_t pad)
{
    (void)pad;
    nd_process_ensure();
    return nd_thread_trim();
}

nd_public int mallopt(int param, int value)
{
    (void)param;
    (void)value;
    return 1;   /* accepted and ignored: nodal is tuned with NODAL_OPTIONS */
}

nd_public void malloc_stats(void) { nodal_stats_print(stderr, NULL); }

/* struct mallinfo2 from glibc's <malloc.h> (2.33+), field for field. */
struct nd_mallinfo2 {
    size_t arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost;
};
struct nd_mallinfo {
    int arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost;
};

nd_public struct nd_mallinfo2 mallinfo2(void)
{
    nodal_memory_info m;
    struct nd_mallinfo2 r = { 0 };
    if (nodal_memory_info_get(&m) == 0) {
        r.arena = m.mapped;
        r.hblkhd = m.mapped;
        r.uordblks = m.allocated;
        r.fordblks = m.committed > m.allocated ? m.committed - m.allocated : 0;
        r.usmblks = m.peak_mapped;
    }
    return r;
}

nd_public struct nd_mallinfo mallinfo(void)
{
    struct nd_mallinfo2 m = mallinfo2();
    struct nd_mallinfo r = {
        (int)m.arena, (int)m.ordblks, (int)m.smblks, (int)m.hblks, (int)m.hblkhd,
        (int)m.usmblks, (int)m.fsmblks, (int)m.uordblks, (int)m.fordblks, (int)m.keepcost,
    };
    return r;
}
