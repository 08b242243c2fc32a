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
 */
#include "new_fail.h"

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

// The ones this file names, declared weak so that their address can be
// tested: NULL when the process has no C++ runtime.
namespace std {
__attribute__((weak)) new_handler get_new_handler() noexcept;
}
extern "C" {
__attribute__((weak)) void *__cxa_allocate_exception(std::size_t) noexcept;
__attribute__((weak)) void __cxa_throw(void *, void *, void (*)(void *));
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

}  // namespace

extern "C" void *nd_new_fail(nd_new_fn alloc, std::size_t size, std::size_t align, int nothrow)
{
    if (!runtime_present())
        return nullptr;   // nothrow: NULL; the caller aborts for the throwing forms
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
