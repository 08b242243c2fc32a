/*
 * msg.h - nodal's messages: one line on stderr, prefixed "nodal: ", and the
 * one way heap misuse ends (the message, then abort()). Nothing here
 * allocates or takes a lock, so it is safe anywhere, at start-up and in
 * fork handlers included.
 */
#ifndef ND_MSG_H
#define ND_MSG_H

#include "config.h"

/* One line on stderr, prefixed "nodal: ". */
void nd_warn(const char *fmt, ...) nd_hidden __attribute__((format(printf, 1, 2)));
/* Internal failure or corruption: one line on stderr, then abort(). */
_Noreturn void nd_fatal(const char *fmt, ...) nd_hidden __attribute__((format(printf, 1, 2), cold));
/* Heap misuse by the program, as users see it: "nodal: FN(): WHY: P", then
   abort(). FN is the entry point the program called (free, realloc, ...). */
_Noreturn void nd_misuse(const char *fn, const char *why, const void *p) nd_hidden __attribute__((cold));

#endif /* ND_MSG_H */
