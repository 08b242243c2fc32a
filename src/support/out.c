/*
 * out.c - text output without allocating (see out.h).
 */
#include "out.h"

#include <stdarg.h>
#include <string.h>
#include "os.h"

nd_hot void nd_out_to_buffer(nd_out *o, char *buf, size_t len)
{
    memset(o, 0, offsetof(nd_out, buf));
    o->fd = -1;
    o->dst = buf;
    o->dst_len = len;
    if (len > 0)
        buf[0] = '\0';
}

void nd_out_to_file(nd_out *o, FILE *file, int fd)
{
    memset(o, 0, offsetof(nd_out, buf));
    o->file = file;
    o->fd = fd;
}

void nd_out_flush(nd_out *o)
{
    if (o->dst != NULL || o->n == 0)
        return;
    if (o->file != NULL) {
        if (fwrite(o->buf, 1, o->n, o->file) != o->n)
            o->err = 1;
    } else if (o->fd >= 0) {
        if (!nd_os_write_fd(o->fd, o->buf, o->n))
            o->err = 1;
    } else {
        nd_os_write_stderr(o->buf, o->n);
    }
    o->n = 0;
}

nd_hot void nd_out_write(nd_out *o, const char *s, size_t len)
{
    if (o->dst != NULL) {
        if (o->total + 1 < o->dst_len) {
            size_t room = o->dst_len - 1 - o->total;
            memcpy(o->dst + o->total, s, len < room ? len : room);
        }
        o->total += len;
        if (o->dst_len > 0)
            o->dst[o->total < o->dst_len ? o->total : o->dst_len - 1] = '\0';
        return;
    }
    o->total += len;
    while (len > 0) {
        size_t room = sizeof o->buf - o->n;
        size_t k = len < room ? len : room;
        memcpy(o->buf + o->n, s, k);
        o->n += k;
        s += k;
        len -= k;
        if (o->n == sizeof o->buf)
            nd_out_flush(o);
    }
}

nd_hot void nd_out_str(nd_out *o, const char *s) { nd_out_write(o, s, strlen(s)); }

void nd_outf(nd_out *o, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0)
        nd_out_write(o, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

void nd_format_path(char *buf, size_t len, const char *fmt, ...)
{
    if (len == 0)
        return;
    size_t at = 0;
    va_list ap;
    va_start(ap, fmt);
    for (const char *f = fmt; *f != '\0' && at + 1 < len; f++) {
        char num[12];
        const char *s;
        if (f[0] == '%' && f[1] == 's') {
            s = va_arg(ap, const char *);
        } else if (f[0] == '%' && f[1] == 'd') {
            int v = va_arg(ap, int);
            unsigned u = v < 0 ? 0u - (unsigned)v : (unsigned)v;
            char *e = num + sizeof num;
            *--e = '\0';
            do
                *--e = (char)('0' + u % 10);
            while ((u /= 10) != 0);
            if (v < 0)
                *--e = '-';
            s = e;
        } else {
            buf[at++] = *f;
            continue;
        }
        f++;
        while (*s != '\0' && at + 1 < len)
            buf[at++] = *s++;
    }
    va_end(ap);
    buf[at] = '\0';
}
