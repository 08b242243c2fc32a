/*
 * new_fail.h - the failure paths of nodal's C++ operator new (new_fail.cc),
 * called from the C fast paths in new_delete.c. Both need the C++ runtime
 * (std::get_new_handler, throwing and catching exceptions), which
 * new_fail.cc reaches only through weak references: see the top of
 * new_delete.c for why.
 */
#ifndef ND_NEW_FAIL_H
#define ND_NEW_FAIL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An allocation function of the operator-new family: align 0 = default
   alignment. Returns NULL on failure (nodal's own) or throws (a program's
   replacement operator new). */
typedef void *(*nd_new_fn)(size_t size, size_t align);

/*
 * The new-handler loop the C++ standard requires of operator new, entered
 * after alloc(size, align) returned NULL: while std::get_new_handler() gives
 * a handler, call it and try alloc again. Without a handler: throw
 * std::bad_alloc, or return NULL when `nothrow`. In the nothrow forms an
 * exception thrown by the handler is caught and gives NULL. Without a C++
 * runtime in the process (no handler can be installed, nothing can catch)
 * the throwing forms print one line and abort.
 */
void *nd_new_fail(nd_new_fn alloc, size_t size, size_t align, int nothrow)
    __attribute__((visibility("hidden")));

/* Calls fn(size, align), a throwing allocation function, and returns NULL
   instead of letting an exception out: the nothrow forms when the program
   replaced the throwing ones. */
void *nd_new_nothrow_call(nd_new_fn fn, size_t size, size_t align)
    __attribute__((visibility("hidden")));

#ifdef __cplusplus
}
#endif

#endif /* ND_NEW_FAIL_H */
