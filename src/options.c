/*
 * options.c - parses the option table from the environment, once, without
 * allocating.
 */
#include "options.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "msg.h"
#include "os.h"

const nd_opt_desc nd_opt_table[ND_OPT_COUNT] = {
#define ND_OPT_DESC(name, kind, def, lo, hi, names, meaning) { #name, kind, def, lo, hi, names, meaning },
    ND_OPTIONS(ND_OPT_DESC)
#undef ND_OPT_DESC
};

long nd_opt_values[ND_OPT_COUNT] = {
#define ND_OPT_DEF(name, kind, def, lo, hi, names, meaning) def,
    ND_OPTIONS(ND_OPT_DEF)
#undef ND_OPT_DEF
};

uint8_t nd_prefetch_lines;
uint8_t nd_check_frees;

static bool nd_ieq(const char *a, size_t alen, const char *b)
{
    size_t blen = strlen(b);
    if (alen != blen)
        return false;
    for (size_t i = 0; i < alen; i++) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z') x = (char)(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z') y = (char)(y - 'A' + 'a');
        if (x != y)
            return false;
    }
    return true;
}

/* Parses one value; false if it is not valid for the option. */
static bool nd_parse_value(const nd_opt_desc *d, const char *v, size_t len, long *out)
{
    if (len == 0)
        return false;
    if (d->kind == ND_OPTK_ENUM) {
        const char *s = d->names;
        for (long idx = 0; *s; idx++) {
            const char *bar = strchr(s, '|');
            size_t n = bar ? (size_t)(bar - s) : strlen(s);
            char name[32];
            if (n < sizeof name) {
                memcpy(name, s, n);
                name[n] = '\0';
                if (nd_ieq(v, len, name)) {
                    *out = idx;
                    return true;
                }
            }
            s += n + (bar != NULL);
        }
        /* fall through: numeric index */
    }
    if (nd_ieq(v, len, "true") || nd_ieq(v, len, "yes") || nd_ieq(v, len, "on")) {
        *out = 1;
        return d->lo <= 1 && 1 <= d->hi;
    }
    if (nd_ieq(v, len, "false") || nd_ieq(v, len, "no") || nd_ieq(v, len, "off")) {
        *out = 0;
        return d->lo <= 0 && 0 <= d->hi;
    }
    size_t i = 0;
    bool neg = false;
    if (v[0] == '-') {
        neg = true;
        i = 1;
    }
    if (i >= len || v[i] < '0' || v[i] > '9')
        return false;
    unsigned long long x = 0;
    for (; i < len && v[i] >= '0' && v[i] <= '9'; i++) {
        x = x * 10 + (unsigned)(v[i] - '0');
        if (x > (1ull << 40))
            return false;
    }
    if (i < len && d->kind == ND_OPTK_SIZE) {
        char s = v[i++];
        unsigned shift = (s == 'k' || s == 'K') ? 10 : (s == 'm' || s == 'M') ? 20 : (s == 'g' || s == 'G') ? 30 : 64;
        if (shift == 64)
            return false;
        if (i < len && (v[i] == 'b' || v[i] == 'B' || v[i] == 'i'))
            i++;
        if (i < len && (v[i] == 'b' || v[i] == 'B'))
            i++;
        x <<= shift;
    }
    if (i != len)
        return false;
    long val = neg ? -(long)x : (long)x;
    if (val < d->lo || val > d->hi)
        return false;
    *out = val;
    return true;
}

static void nd_set_option(const char *name, size_t nlen, const char *val, size_t vlen, const char *source)
{
    for (int i = 0; i < ND_OPT_COUNT; i++) {
        const nd_opt_desc *d = &nd_opt_table[i];
        if (!nd_ieq(name, nlen, d->name))
            continue;
        long v;
        if (nd_parse_value(d, val, vlen, &v))
            nd_opt_values[i] = v;
        else
            nd_warn("invalid value '%.*s' for option %s (from %s); using the default %ld",
                    (int)vlen, val, d->name, source, d->def);
        return;
    }
    nd_warn("unknown option '%.*s' (from %s) is ignored", (int)nlen, name, source);
}

void nd_options_init(void)
{
    const char *all = nd_os_getenv("NODAL_OPTIONS");
    if (all != NULL) {
        const char *s = all;
        while (*s) {
            while (*s == ',' || *s == ' ')
                s++;
            if (!*s)
                break;
            const char *end = s;
            while (*end && *end != ',')
                end++;
            const char *eq = memchr(s, '=', (size_t)(end - s));
            if (eq == NULL)   /* a bare name means "on" */
                nd_set_option(s, (size_t)(end - s), "1", 1, "NODAL_OPTIONS");
            else
                nd_set_option(s, (size_t)(eq - s), eq + 1, (size_t)(end - eq - 1), "NODAL_OPTIONS");
            s = end;
        }
    }
    for (int i = 0; i < ND_OPT_COUNT; i++) {
        char var[64] = "NODAL_";
        size_t n = 6;
        for (const char *c = nd_opt_table[i].name; *c && n + 1 < sizeof var; c++)
            var[n++] = (char)(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c);
        var[n] = '\0';
        const char *v = nd_os_getenv(var);
        if (v != NULL)
            nd_set_option(nd_opt_table[i].name, strlen(nd_opt_table[i].name), v, strlen(v), var);
    }
    nd_prefetch_lines = (uint8_t)nd_opt_values[ND_OPT_prefetch];
    nd_check_frees = nd_opt_values[ND_OPT_check] >= 2;
    if (nd_opt_verbose()) {
        for (int i = 0; i < ND_OPT_COUNT; i++)
            nd_warn("option %s = %ld", nd_opt_table[i].name, nd_opt_values[i]);
    }
}
