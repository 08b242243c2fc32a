/*
 * out.h - text output without allocating: formatted text into a caller's
 * buffer (always terminated, the bytes that did not fit still counted), or
 * through a fixed buffer to a stdio FILE or a descriptor (stderr's kept
 * duplicate by default). Statistics reports and the option messages write
 * through it.
 */
#ifndef ND_OUT_H
#define ND_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "config.h"

typedef struct nd_out {
    FILE  *file;        /* a stream, or NULL */
    int    fd;          /* without a stream: a descriptor; -1 = stderr (os.h) */
    char  *dst;         /* a caller's buffer instead (dst_len bytes, always terminated) */
    size_t dst_len;
    size_t total;       /* bytes written, or wanted when dst was too small */
    size_t n;           /* bytes waiting in buf */
    int    err;         /* a write failed */
    char   buf[4096];
} nd_out;

/* Output into buf[0..len) (terminated; len may be 0). */
void nd_out_to_buffer(nd_out *o, char *buf, size_t len) nd_hidden;
/* Output to a stream, or with file == NULL to descriptor fd (-1: stderr). */
void nd_out_to_file(nd_out *o, FILE *file, int fd) nd_hidden;

void nd_out_write(nd_out *o, const char *s, size_t len) nd_hidden;
void nd_out_str(nd_out *o, const char *s) nd_hidden;
void nd_outf(nd_out *o, const char *fmt, ...) nd_hidden __attribute__((format(printf, 2, 3)));
/* A file path into buf[0..len) (terminated, cut short if it does not
   fit): fmt's text with each %s replaced by a string and each %d by an
   int, nothing else. Start-up builds its /sys paths with it rather than
   snprintf: the printf family's code is 60 KiB of libc's, which a
   program that never formats text would otherwise have resident. */
void nd_format_path(char *buf, size_t len, const char *fmt, ...) nd_hidden __attribute__((format(printf, 3, 4)));
/* Writes what waits in the buffer (a stream is not flushed). */
void nd_out_flush(nd_out *o) nd_hidden;

#endif /* ND_OUT_H */
