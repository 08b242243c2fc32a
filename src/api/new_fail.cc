/*
 * new_fail.cc - the failure paths of nodal's operator new: the standard's
 * new-handler loop, throwing std::bad_alloc, and the nothrow forms' catch.
 * The only C++ in the library; the fast paths are in new_delete.c.
 *
 * Every symbol of the C++ runtime used here is a weak reference, so
 * libnodal.so keeps no libstdc++ dependency (DT_NEEDED) and links with
 * -Wl,--no-undefined: in a C++ program the runtime is loaded and the
 * references resolve; in a C program they stay NULL, and nothing here runs
 * (nobody calls operator new there). The compiler emits some references
 * itself (the exception personality routine, the typeinfo and vtable of
 * std::bad_alloc), which no declaration can make weak; the .weak directives
 * below do it at the assembler level. The linker checks the list: a
 * reference missing from it is a strong undefined symbol, and
 * --no-undefined fails the build.
 *
 * The exceptions only ever come from C++ code (a new_handler, or a program's
 * own operator new); throwing std::bad_alloc is guarded by a check that the
 * runtime is there.
 *
 * A C++ runtime loaded after libnodal (a C program, python say, that
 * dlopens a C++ module) leaves the weak references NULL: they were bound at
 * load time. The throwing forms then find the runtime with dlsym and throw
 * std::bad_alloc through the Itanium C++ ABI (__cxa_allocate_exception,
 * __cxa_throw, the class's typeinfo and vtable), after the same handler
 * loop; the nothrow forms return NULL without calling a handler, since
 * nothing here could catch what it throws.
 */
#include "new_fail.h"

#include <dlfcn.h>

#include <new>

// Symbols the compiler references on its own for try/catch and throw.
asm(".weak __gxx_personality_v0");
asm(".weak _Unwind_Resume");
asm(".weak _ZTISt9bad_alloc");      // typeinfo for std::bad_alloc
asm(".weak _ZTVSt9bad_alloc");      // its vtable
asm(".weak _ZNSt9bad_allocD1Ev");   // its destructor
asm(".weak __cxa_allocate_exception");
asm(".weak __cxa_throw");
asm(".weak __cxa_begin_catch");
asm(".weak __cxa_end_catch");
asm(".weak _ZSt9terminatev");     // std::terminate, called by clang's __clang_call_terminate

// The ones this file names, declared weak so that their address can be
// tested: NULL when the process has no C++ runtime.
namespace std {
__attribute__((weak)) new_handler get_new_handler() noexcept;
}
extern "C" {
__attribute__((weak)) void *__cxa_allocate_exception(std::size_t) noexcept;
__attribute__((weak)) void __cxa_throw(void *, void *, void (*)(void *));
// In libc since glibc 2.34; weak, so that static links do not pull libdl.
__attribute__((weak)) void *dlsym(void *handle, const char *name) noexcept;
__attribute__((weak)) void *dlopen(const char *file, int mode) noexcept;
}

namespace {

bool runtime_present()
{
    return &std::get_new_handler != nullptr && &__cxa_allocate_exception != nullptr &&
           &__cxa_throw != nullptr;
}

// Calls the handler; false if it threw (only the nothrow forms catch).
bool call_handler_nothrow(std::new_handler h) noexcept
{
    try {
        h();
    } catch (...) {
        return false;
    }
    return true;
}

/* The runtime found with dlsym when it was loaded after libnodal. */
struct late_runtime {
    std::new_handler (*get_handler)();
    void *(*allocate_exception)(std::size_t);
    void (*throw_exception)(void *, void *, void (*)(void *));
    void *typeinfo;   // typeinfo for std::bad_alloc
    char *vtable;     // vtable for std::bad_alloc
    void (*destructor)(void *);
};

bool find_in(void *handle, late_runtime *r)
{
    r->get_handler = reinterpret_cast<std::new_handler (*)()>(dlsym(handle, "_ZSt15get_new_handlerv"));
    r->allocate_exception = reinterpret_cast<void *(*)(std::size_t)>(
        dlsym(handle, "__cxa_allocate_exception"));
    r->throw_exception = reinterpret_cast<void (*)(void *, void *, void (*)(void *))>(
        dlsym(handle, "__cxa_throw"));
    r->typeinfo = dlsym(handle, "_ZTISt9bad_alloc");
    r->vtable = static_cast<char *>(dlsym(handle, "_ZTVSt9bad_alloc"));
    r->destructor = reinterpret_cast<void (*)(void *)>(dlsym(handle, "_ZNSt9bad_allocD1Ev"));
    return r->get_handler && r->allocate_exception && r->throw_exception && r->typeinfo &&
           r->vtable && r->destructor;
}

/* The global scope first; then a runtime some module loaded privately
   (RTLD_LOCAL, as python loads extensions): RTLD_NOLOAD only finds what is
   already there, it loads nothing. */
bool find_late(late_runtime *r)
{
    if (&dlsym == nullptr)
        return false;
    if (find_in(RTLD_DEFAULT, r))
        return true;
    if (&dlopen == nullptr)
        return false;
    static const char *const names[] = { "libstdc++.so.6", "libc++.so.1" };
    for (const char *name : names) {
        void *h = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
        if (h != nullptr && find_in(h, r))
            return true;   // h stays open: the runtime is in use anyway
    }
    return false;
}

/* throw std::bad_alloc(), spelt out: the object is its vtable pointer, which
   points past the vtable's offset-to-top and typeinfo words. */
[[noreturn]] void throw_late(const late_runtime &r)
{
    static_assert(sizeof(std::bad_alloc) == sizeof(void *), "std::bad_alloc is its vtable pointer");
    void *e = r.allocate_exception(sizeof(std::bad_alloc));
    *static_cast<void **>(e) = r.vtable + 2 * sizeof(void *);
    r.throw_exception(e, r.typeinfo, r.destructor);
    __builtin_unreachable();
}

/* The throwing forms' loop with a late runtime; NULL if there is none. */
void *fail_late(nd_new_fn alloc, std::size_t size, std::size_t align)
{
    late_runtime r;
    if (!find_late(&r))
        return nullptr;
    for (;;) {
        std::new_handler h = r.get_handler();
        if (h == nullptr)
            throw_late(r);
        h();
        if (void *p = alloc(size, align))
            return p;
    }
}

}  // namespace

extern "C" void *nd_new_fail(nd_new_fn alloc, std::size_t size, std::size_t align, int nothrow)
{
    if (!runtime_present())   // none, or loaded after libnodal
        return nothrow ? nullptr : fail_late(alloc, size, align);   // NULL: the caller aborts
    for (;;) {
        std::new_handler h = std::get_new_handler();
        if (h == nullptr) {
            if (nothrow)
                return nullptr;
            throw std::bad_alloc();
        }
        if (nothrow) {
            if (!call_handler_nothrow(h))
                return nullptr;
        } else {
            h();
        }
        if (void *p = alloc(size, align))
            return p;
    }
}

extern "C" void *nd_new_nothrow_call(nd_new_fn fn, std::size_t size, std::size_t align)
{
    if (!runtime_present())
        return fn(size, align);   // nothing could have thrown
    try {
        return fn(size, align);
    } catch (...) {
        return nullptr;
    }
}
