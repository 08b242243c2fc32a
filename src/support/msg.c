/*
 * msg.c - nodal's one-line messages (see msg.h). Lines are formatted into a
 * fixed buffer and written with one write(2) through the OS layer.
 */
#include "msg.h"

#include <stdarg.h>
#include <stdio.h>
#include "os.h"

static void nd_vmessage(const char *fmt, va_list ap)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "nodal: ");
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    nd_os_write_stderr(line, len);
}

void nd_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    nd_vmessage(fmt, ap);
    va_end(ap);
}

void nd_fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    nd_vmessage(fmt, ap);
    va_end(ap);
    nd_os_abort();
}

void nd_misuse(const char *fn, const char *why, const void *p)
{
    nd_fatal("%s(): %s: %p", fn, why, p);
}

void nd_assert_fail(const char *expr, const char *file, int line)
{
    nd_fatal("internal assertion failed: %s (%s:%d)", expr, file, line);
}
