/*
 * new_delete.c - nodal's replaceable C++ operator new and delete, all
 * twenty forms C++17 defines (plain, array, nothrow, sized, aligned,
 * aligned + sized), in libnodal.so and libnodal.a. C++ programs then take
 * nodal's fast path directly, instead of libstdc++'s operator new calling
 * malloc, and sized delete hands nodal the size.
 *
 * How the library stays a C library. This file is C: it defines the
 * operators under their mangled names (x86-64 and aarch64: size_t is
 * `unsigned long`, "m"). The failure paths need the C++ runtime
 * (std::get_new_handler, throwing std::bad_alloc, catching in the nothrow
 * forms); they live in new_fail.cc, which reaches the runtime only through
 * weak references. So:
 *   - libnodal.so has no DT_NEEDED on libstdc++ and still links with
 *     -Wl,--no-undefined; a C program linking it gets no libstdc++;
 *   - in a C++ program the weak references resolve to the runtime the
 *     program already loads, linked or under LD_PRELOAD;
 *   - in libnodal.a these are archive members of their own, pulled in only
 *     by a program that calls operator new.
 * The alternatives were a separate libnodal++ (one more library to link,
 * and LD_PRELOAD users would need both) or linking libstdc++ into
 * libnodal.so (every C program would load it).
 *
 * A program's own operator new wins. The definitions here are weak (in
 * libnodal.a a program's strong definition replaces them without a clash;
 * in the shared library the executable's definition interposes anyway).
 * The standard says what the forms the program did not replace must do:
 * array forms call the non-array ones, nothrow forms call the throwing ones
 * and return NULL on an exception, sized and nothrow deletes call the plain
 * delete. So when a program replaces any of the twenty (seen by comparing
 * the symbols the dynamic linker bound with the definitions here, once), every
 * derived form here calls the next form through its symbol, exactly as
 * libstdc++'s own definitions do, and the program's functions see every
 * block they must see. Only when none is replaced do the derived forms take
 * nodal's fast path themselves; that test is one load and branch.
 *
 * Failure: the throwing forms run the standard's new-handler loop and throw
 * std::bad_alloc; the nothrow forms return NULL (an exception from the
 * handler included). A C++ runtime loaded after libnodal (a C program that
 * dlopens a C++ module) is found with dlsym when a request fails, and
 * std::bad_alloc is thrown through the C++ ABI (see new_fail.cc). Only a
 * process with no C++ runtime at all gets one line and abort() from a
 * failing throwing form (nothing could catch the exception).
 *
 * Calls into the core: malloc's fast path (ND_BIN_POP_OR, nd_malloc_fast,
 * nd_malloc_slow), nd_free_fast and nd_aligned_alloc (alloc.h, free.h),
 * plus nd_fatal for that one message.
 */
#include <stddef.h>
#include "alloc.h"
#include "free.h"
#include "new_fail.h"

/* ---- the public symbols: weak, default visibility ------------------------ */
/* Each is an alias of the static implementation below. Referring to the
   alias gives the definition the linker bound (the program's, if it
   replaced it); referring to the static function gives ours. */
#define ND_OP(ret, name, mangled, params)                                          \
    static ret name params;                                                        \
    extern ret name##_sym params __asm__(mangled)                                  \
        __attribute__((weak, alias(#name), visibility("default")))

typedef size_t nd_align_t;   /* std::align_val_t: an enum over size_t */
struct nd_nothrow_t;         /* std::nothrow_t, only ever passed by reference */
#define NT const struct nd_nothrow_t *

ND_OP(void *, op_new,                 "_Znwm",                               (size_t n));
ND_OP(void *, op_new_array,           "_Znam",                               (size_t n));
ND_OP(void *, op_new_nt,              "_ZnwmRKSt9nothrow_t",                 (size_t n, NT t));
ND_OP(void *, op_new_array_nt,        "_ZnamRKSt9nothrow_t",                 (size_t n, NT t));
ND_OP(void *, op_new_al,              "_ZnwmSt11align_val_t",                (size_t n, nd_align_t a));
ND_OP(void *, op_new_array_al,        "_ZnamSt11align_val_t",                (size_t n, nd_align_t a));
ND_OP(void *, op_new_al_nt,           "_ZnwmSt11align_val_tRKSt9nothrow_t",  (size_t n, nd_align_t a, NT t));
ND_OP(void *, op_new_array_al_nt,     "_ZnamSt11align_val_tRKSt9nothrow_t",  (size_t n, nd_align_t a, NT t));
ND_OP(void,   op_delete,              "_ZdlPv",                              (void *p));
ND_OP(void,   op_delete_array,        "_ZdaPv",                              (void *p));
ND_OP(void,   op_delete_sized,        "_ZdlPvm",                             (void *p, size_t n));
ND_OP(void,   op_delete_array_sized,  "_ZdaPvm",                             (void *p, size_t n));
ND_OP(void,   op_delete_nt,           "_ZdlPvRKSt9nothrow_t",                (void *p, NT t));
ND_OP(void,   op_delete_array_nt,     "_ZdaPvRKSt9nothrow_t",                (void *p, NT t));
ND_OP(void,   op_delete_al,           "_ZdlPvSt11align_val_t",               (void *p, nd_align_t a));
ND_OP(void,   op_delete_array_al,     "_ZdaPvSt11align_val_t",               (void *p, nd_align_t a));
ND_OP(void,   op_delete_sized_al,     "_ZdlPvmSt11align_val_t",              (void *p, size_t n, nd_align_t a));
ND_OP(void,   op_delete_array_sized_al, "_ZdaPvmSt11align_val_t",            (void *p, size_t n, nd_align_t a));
ND_OP(void,   op_delete_al_nt,        "_ZdlPvSt11align_val_tRKSt9nothrow_t", (void *p, nd_align_t a, NT t));
ND_OP(void,   op_delete_array_al_nt,  "_ZdaPvSt11align_val_tRKSt9nothrow_t", (void *p, nd_align_t a, NT t));

/* ---- has the program replaced any of them? -------------------------------- */
enum { ND_OPS_UNKNOWN = 0, ND_OPS_OURS = 1, ND_OPS_REPLACED = 2 };
static int nd_ops_state;

/* Not cold: gcc then took every form that calls it for cold too (the
   cold section, a stack frame, the fast paths' helpers not inlined). */
static nd_noinline int nd_ops_check(void)
{
    /* The aliases are weak, so the compiler compares what the linker bound
       (a GOT entry in the shared library) with our own definition. */
#define ND_SAME(name) ((void *)&name##_sym == (void *)&name)
    int ours = ND_SAME(op_new) && ND_SAME(op_new_array) && ND_SAME(op_new_nt) &&
               ND_SAME(op_new_array_nt) && ND_SAME(op_new_al) && ND_SAME(op_new_array_al) &&
               ND_SAME(op_new_al_nt) && ND_SAME(op_new_array_al_nt) && ND_SAME(op_delete) &&
               ND_SAME(op_delete_array) && ND_SAME(op_delete_sized) &&
               ND_SAME(op_delete_array_sized) && ND_SAME(op_delete_nt) &&
               ND_SAME(op_delete_array_nt) && ND_SAME(op_delete_al) &&
               ND_SAME(op_delete_array_al) && ND_SAME(op_delete_sized_al) &&
               ND_SAME(op_delete_array_sized_al) && ND_SAME(op_delete_al_nt) &&
               ND_SAME(op_delete_array_al_nt);
#undef ND_SAME
    int state = ours ? ND_OPS_OURS : ND_OPS_REPLACED;
    nd_store_relaxed(&nd_ops_state, state);   /* idempotent: any thread may race here */
    return state == ND_OPS_OURS;
}

/* True when every form is nodal's: the derived forms may take the fast path. */
nd_inline bool nd_ops_ours(void)
{
    int s = nd_load_relaxed(&nd_ops_state);
    if (nd_likely(s == ND_OPS_OURS))
        return true;
    return s == ND_OPS_UNKNOWN ? nd_ops_check() : false;
}

/* ---- allocation ------------------------------------------------------------ */
/* nodal's own allocation for the retry loop: align 0 = default. */
static void *nd_new_alloc(size_t size, size_t align)
{
    return align == 0 ? nd_malloc_fast(nd_tls_tc, size) : nd_aligned_alloc(align, size);
}

static nd_cold void *nd_new_failed(size_t size, size_t align)
{
    void *p = nd_new_fail(nd_new_alloc, size, align, 0);
    if (p == NULL)
        nd_fatal("operator new(%zu) failed and the process has no C++ runtime to throw "
                 "std::bad_alloc", size);
    return p;
}

/* operator new's slow path: malloc's, then the failure protocol. */
static nd_noinline void *nd_new_slow(size_t n, nd_tcache *tc)
{
    void *p = nd_malloc_slow(n, tc);
    if (nd_likely(p != NULL))
        return p;
    return nd_new_failed(n, 0);
}

/* malloc's own fast path, with a slow path that never returns NULL: a C++
   new costs what a malloc costs. */
static void *op_new(size_t n)
{
    nd_tcache *tc = nd_tls_tc;
    size_t off;
    if (nd_unlikely(!nd_class_fast(n, &off)))
        return nd_new_slow(n, tc);
    ND_BIN_POP_OR(tc, off, nd_new_slow(n, tc));
}

static void *op_new_al(size_t n, nd_align_t a)
{
    void *p = nd_aligned_alloc(a, n);
    if (nd_likely(p != NULL))
        return p;
    return nd_new_failed(n, a);
}

/* The throwing forms reached through their symbols, for the nothrow forms
   of a program that replaced some: the standard's nothrow new calls the
   (possibly replaced) throwing one and catches. */
static void *nd_sym_new(size_t n, size_t a) { (void)a; return op_new_sym(n); }
static void *nd_sym_new_array(size_t n, size_t a) { (void)a; return op_new_array_sym(n); }
static void *nd_sym_new_al(size_t n, size_t a) { return op_new_al_sym(n, a); }
static void *nd_sym_new_array_al(size_t n, size_t a) { return op_new_array_al_sym(n, a); }

static void *op_new_array(size_t n)
{
    if (nd_unlikely(!nd_ops_ours()))
        return op_new_sym(n);
    return op_new(n);
}

static void *op_new_array_al(size_t n, nd_align_t a)
{
    if (nd_unlikely(!nd_ops_ours()))
        return op_new_al_sym(n, a);
    return op_new_al(n, a);
}

static void *op_new_nt(size_t n, NT t)
{
    (void)t;
    if (nd_unlikely(!nd_ops_ours()))
        return nd_new_nothrow_call(nd_sym_new, n, 0);
    void *p = nd_malloc_fast(nd_tls_tc, n);
    if (nd_likely(p != NULL))
        return p;
    return nd_new_fail(nd_new_alloc, n, 0, 1);
}

static void *op_new_array_nt(size_t n, NT t)
{
    if (nd_unlikely(!nd_ops_ours()))
        return nd_new_nothrow_call(nd_sym_new_array, n, 0);
    return op_new_nt(n, t);
}

static void *op_new_al_nt(size_t n, nd_align_t a, NT t)
{
    (void)t;
    if (nd_unlikely(!nd_ops_ours()))
        return nd_new_nothrow_call(nd_sym_new_al, n, a);
    void *p = nd_aligned_alloc(a, n);
    if (nd_likely(p != NULL))
        return p;
    return nd_new_fail(nd_new_alloc, n, a, 1);
}

static void *op_new_array_al_nt(size_t n, nd_align_t a, NT t)
{
    if (nd_unlikely(!nd_ops_ours()))
        return nd_new_nothrow_call(nd_sym_new_array_al, n, a);
    return op_new_al_nt(n, a, t);
}

/* ---- deallocation ----------------------------------------------------------- */
static void op_delete(void *p) { nd_free_fast(p); }
static void op_delete_al(void *p, nd_align_t a) { (void)a; nd_free_fast(p); }

/* A derived delete while the state is not known to be ND_OPS_OURS (the
   first call, or a program that replaced some forms): nodal's free, or the
   form the standard says it calls, through its symbol: sym(p), or
   sym_al(p, a) when sym is NULL. Out of line, so that a derived delete is
   one load and branch and a jump here (a tail call, no stack frame)
   before the free fast path, as the plain delete is without them; with
   nd_ops_ours inline in each (its call of nd_ops_check on one side), gcc
   put every derived form in the cold section with a frame and the
   nd_segcache test not inlined (10 instructions more per sized delete). */
static nd_noinline void nd_delete_unsure(void *p, nd_align_t a, void (*sym)(void *), void (*sym_al)(void *, nd_align_t))
{
    if (nd_ops_ours())
        nd_free_fast(p);
    else if (sym != NULL)
        sym(p);
    else
        sym_al(p, a);
}

/* The derived deletes: nodal's free fast path when every form is nodal's,
   else nd_delete_unsure with the form to call. */
#define ND_DELETE_DERIVED(p, a, sym, sym_al)                              \
    do {                                                                  \
        if (nd_unlikely(nd_load_relaxed(&nd_ops_state) != ND_OPS_OURS)) { \
            nd_delete_unsure(p, a, sym, sym_al);                          \
            return;                                                       \
        }                                                                 \
        nd_free_fast(p);                                                  \
    } while (0)

static void op_delete_array(void *p) { ND_DELETE_DERIVED(p, 0, op_delete_sym, NULL); }
/* The sized deletes: a block's page knows its size (as free_sized). */
static void op_delete_sized(void *p, size_t n) { (void)n; ND_DELETE_DERIVED(p, 0, op_delete_sym, NULL); }
static void op_delete_array_sized(void *p, size_t n) { (void)n; ND_DELETE_DERIVED(p, 0, op_delete_array_sym, NULL); }
static void op_delete_nt(void *p, NT t) { (void)t; ND_DELETE_DERIVED(p, 0, op_delete_sym, NULL); }
static void op_delete_array_nt(void *p, NT t) { (void)t; ND_DELETE_DERIVED(p, 0, op_delete_array_sym, NULL); }

/* The aligned deletes ignore the size: an aligned block may sit in a larger
   size class than its size (the first class that is a multiple of the
   alignment), which a size check would take for a mismatch. */
static void op_delete_array_al(void *p, nd_align_t a) { ND_DELETE_DERIVED(p, a, NULL, op_delete_al_sym); }
static void op_delete_sized_al(void *p, size_t n, nd_align_t a) { (void)n; ND_DELETE_DERIVED(p, a, NULL, op_delete_al_sym); }
static void op_delete_array_sized_al(void *p, size_t n, nd_align_t a) { (void)n; ND_DELETE_DERIVED(p, a, NULL, op_delete_array_al_sym); }
static void op_delete_al_nt(void *p, nd_align_t a, NT t) { (void)t; ND_DELETE_DERIVED(p, a, NULL, op_delete_al_sym); }
static void op_delete_array_al_nt(void *p, nd_align_t a, NT t) { (void)t; ND_DELETE_DERIVED(p, a, NULL, op_delete_array_al_sym); }
