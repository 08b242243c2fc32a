/*
 * options.c - the option table: parsing and checking settings (shared with
 * nodal-run), formatting values, reading the environment once at start-up;
 * and nodal's one-line messages. Nothing here allocates.
 */
#include "options.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "msg.h"
#include "os.h"
#include "out.h"

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

/* Storage for text options: one buffer each, sized by the option's maximum
   (a single byte for the other kinds). */
#define ND_OPT_BUF(name, kind, def, lo, hi, names, meaning) \
    static char nd_opt_buf_##name[(kind) == ND_OPTK_TEXT ? (hi) + 1 : 1];
ND_OPTIONS(ND_OPT_BUF)
#undef ND_OPT_BUF
static char *const nd_opt_bufs[ND_OPT_COUNT] = {
#define ND_OPT_BUFP(name, kind, def, lo, hi, names, meaning) nd_opt_buf_##name,
    ND_OPTIONS(ND_OPT_BUFP)
#undef ND_OPT_BUFP
};

uint8_t nd_check_frees;

/* Where each value came from, for verbose=1. */
enum { ND_FROM_DEFAULT, ND_FROM_OPTIONS, ND_FROM_VARIABLE };
static uint8_t nd_opt_from[ND_OPT_COUNT];

/* The idx-th name of a '|'-separated list; its length in *n (0 if none). */
static const char *nd_nth_name(const char *names, long idx, size_t *n)
{
    const char *s = names;
    for (long i = 0; i < idx && s != NULL; i++) {
        s = strchr(s, '|');
        if (s != NULL)
            s++;
    }
    if (s == NULL || idx < 0) {
        *n = 0;
        return "";
    }
    *n = strcspn(s, "|");
    return s;
}

/* ---- formatting ---------------------------------------------------------------- */

size_t nd_opt_format_value(const nd_opt_desc *d, long v, char *buf, size_t len)
{
    nd_out b;
    nd_out_to_buffer(&b, buf, len);
    if (d->kind == ND_OPTK_ENUM) {
        size_t n;
        const char *s = nd_nth_name(d->names, v, &n);
        if (n > 0)
            nd_out_write(&b, s, n);
        else
            nd_outf(&b, "%ld", v);
    } else if (d->kind == ND_OPTK_TEXT) {
        nd_out_str(&b, "(none)");
    } else if (d->kind == ND_OPTK_SIZE && v >= 1024 && v % 1024 == 0) {
        if (v % (1024L * 1024 * 1024) == 0)
            nd_outf(&b, "%ldg", v / (1024L * 1024 * 1024));
        else if (v % (1024L * 1024) == 0)
            nd_outf(&b, "%ldm", v / (1024L * 1024));
        else
            nd_outf(&b, "%ldk", v / 1024);
    } else {
        nd_outf(&b, "%ld", v);
    }
    return b.total;
}

size_t nd_opt_format_range(const nd_opt_desc *d, char *buf, size_t len)
{
    nd_out b;
    nd_out_to_buffer(&b, buf, len);
    if (d->kind == ND_OPTK_ENUM) {
        for (long i = d->lo; i <= d->hi; i++) {
            size_t n;
            const char *s = nd_nth_name(d->names, i, &n);
            if (i > d->lo)
                nd_out_str(&b, ", ");
            nd_out_write(&b, s, n);
        }
    } else if (d->kind == ND_OPTK_TEXT) {
        nd_out_str(&b, "a file name");
    } else {
        char lo[32], hi[32];
        nd_opt_format_value(d, d->lo, lo, sizeof lo);
        nd_opt_format_value(d, d->hi, hi, sizeof hi);
        nd_outf(&b, "%s..%s", lo, hi);
    }
    return b.total;
}

nd_hot const char *nd_opt_text(nd_opt_id id)
{
    return nd_opt_table[id].kind == ND_OPTK_TEXT ? nd_opt_bufs[id] : "";
}

size_t nd_opt_format(nd_opt_id id, char *buf, size_t len)
{
    const nd_opt_desc *d = &nd_opt_table[id];
    nd_out b;
    nd_out_to_buffer(&b, buf, len);
    if (d->kind == ND_OPTK_TEXT)
        nd_out_str(&b, nd_opt_bufs[id]);
    else if (d->kind == ND_OPTK_ENUM)
        return nd_opt_format_value(d, nd_opt_values[id], buf, len);
    else
        nd_outf(&b, "%ld", nd_opt_values[id]);
    return b.total;
}

void nd_opt_var_name(nd_opt_id id, char *buf, size_t len)
{
    nd_out b;
    nd_out_to_buffer(&b, buf, len);
    nd_out_str(&b, "NODAL_");
    for (const char *c = nd_opt_table[id].name; *c; c++) {
        char u = (char)(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c);
        nd_out_write(&b, &u, 1);
    }
}

/* (Written into buf directly: through an nd_out and nd_outf, 5 KB of stack
   below the caller, the exit dump's deepest frames: profile.c.) */
size_t nd_opt_expand_path(const char *tmpl, long pid, char *buf, size_t len)
{
    size_t total = 0;
    for (const char *c = tmpl; *c; c++) {
        char num[24];
        const char *piece = c;
        size_t n = 1;
        if (c[0] == '%' && c[1] == 'p') {
            unsigned long v = pid < 0 ? 0ul - (unsigned long)pid : (unsigned long)pid;
            char *end = num + sizeof num, *d = end;
            do
                *--d = (char)('0' + v % 10);
            while ((v /= 10) != 0);
            if (pid < 0)
                *--d = '-';
            piece = d;
            n = (size_t)(end - d);
            c++;
        } else if (c[0] == '%' && c[1] == '%') {
            c++;
        }
        for (size_t i = 0; i < n; i++, total++)
            if (total + 1 < len)
                buf[total] = piece[i];
    }
    if (len > 0)
        buf[total < len ? total : len - 1] = '\0';
    return total;
}

/* ---- names --------------------------------------------------------------------- */

static char nd_fold(char c)
{
    if (c >= 'A' && c <= 'Z')
        return (char)(c - 'A' + 'a');
    return c == '-' ? '_' : c;
}

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

int nd_opt_find(const char *name, size_t len)
{
    for (int i = 0; i < ND_OPT_COUNT; i++)
        if (nd_ieq(name, len, nd_opt_table[i].name))
            return i;
    return -1;
}

int nd_opt_distance(const char *a, size_t alen, const char *b)
{
    enum { MAX = 48 };
    size_t blen = strlen(b);
    if (alen >= MAX || blen >= MAX)
        return 1000;
    /* Optimal string alignment distance over three rows. */
    int rows[3][MAX];
    int *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= blen; j++)
        prev[j] = (int)j;
    for (size_t i = 1; i <= alen; i++) {
        cur[0] = (int)i;
        for (size_t j = 1; j <= blen; j++) {
            int cost = nd_fold(a[i - 1]) != nd_fold(b[j - 1]);
            int v = prev[j] + 1;
            if (cur[j - 1] + 1 < v) v = cur[j - 1] + 1;
            if (prev[j - 1] + cost < v) v = prev[j - 1] + cost;
            if (i > 1 && j > 1 && nd_fold(a[i - 1]) == nd_fold(b[j - 2]) &&
                nd_fold(a[i - 2]) == nd_fold(b[j - 1]) && prev2[j - 2] + 1 < v)
                v = prev2[j - 2] + 1;
            cur[j] = v;
        }
        int *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[blen];
}

static bool nd_is_prefix(const char *p, size_t plen, const char *s)
{
    if (plen == 0 || plen > strlen(s))
        return false;
    for (size_t i = 0; i < plen; i++)
        if (nd_fold(p[i]) != nd_fold(s[i]))
            return false;
    return true;
}

int nd_opt_closest(const char *name, size_t len)
{
    int prefix = -1, prefixes = 0;
    for (int i = 0; i < ND_OPT_COUNT; i++)
        if (nd_is_prefix(name, len, nd_opt_table[i].name)) {
            prefix = i;
            prefixes++;
        }
    int best = -1, best_d = 1000;
    for (int i = 0; i < ND_OPT_COUNT; i++) {
        int d = nd_opt_distance(name, len, nd_opt_table[i].name);
        if (d < best_d) {
            best = i;
            best_d = d;
        }
    }
    int limit = (int)len / 3 > 2 ? (int)len / 3 : 2;
    if (best >= 0 && best_d <= limit && (best_d <= 1 || prefixes != 1))
        return best;
    return prefixes == 1 ? prefix : -1;
}

/* ---- parsing ------------------------------------------------------------------- */

enum nd_verdict { ND_OK, ND_NOT_A_VALUE, ND_OUT_OF_RANGE, ND_NEEDS_VALUE, ND_BAD_TEXT, ND_TOO_LONG };

/* yes/no spellings apply to numbers and to choices that start with "off". */
static bool nd_takes_yes_no(const nd_opt_desc *d)
{
    return d->kind == ND_OPTK_INT || (d->kind == ND_OPTK_ENUM && strncmp(d->names, "off|", 4) == 0);
}

/* A switch or a level: on or off (0..1), a level whose 1 is "on" (0..2:
   check, secure), or a choice that starts with "off" (stats). Only these
   may be given by their name alone, meaning 1 (secure means secure=1, as
   it did when secure was a switch). */
static bool nd_is_switch(const nd_opt_desc *d)
{
    return (d->kind == ND_OPTK_INT && d->lo == 0 && (d->hi == 1 || d->hi == 2)) ||
           (d->kind == ND_OPTK_ENUM && strncmp(d->names, "off|", 4) == 0);
}

static enum nd_verdict nd_parse_value(const nd_opt_desc *d, const char *v, size_t len, long *out)
{
    if (v == NULL) {            /* a name alone: a switch turned on */
        if (!nd_is_switch(d))
            return ND_NEEDS_VALUE;
        v = "1";
        len = 1;
    }
    if (d->kind == ND_OPTK_TEXT) {
        if (len == 0)
            return ND_NEEDS_VALUE;
        if ((long)len > d->hi)
            return ND_TOO_LONG;
        for (size_t i = 0; i < len; i++) {
            if (v[i] == '\0')
                return ND_BAD_TEXT;
            if (v[i] == '%') {
                if (i + 1 >= len || (v[i + 1] != 'p' && v[i + 1] != '%'))
                    return ND_BAD_TEXT;
                i++;
            }
        }
        *out = 1;
        return ND_OK;
    }
    if (len == 0)
        return ND_NOT_A_VALUE;
    if (d->kind == ND_OPTK_ENUM) {
        for (long idx = d->lo; idx <= d->hi; idx++) {
            size_t n;
            const char *s = nd_nth_name(d->names, idx, &n);
            char name[32];
            if (n > 0 && n < sizeof name) {
                memcpy(name, s, n);
                name[n] = '\0';
                if (nd_ieq(v, len, name)) {
                    *out = idx;
                    return ND_OK;
                }
            }
        }
        /* fall through: yes/no, or the position of a name */
    }
    if (nd_takes_yes_no(d)) {
        long yn = -1;
        if (nd_ieq(v, len, "true") || nd_ieq(v, len, "yes") || nd_ieq(v, len, "on"))
            yn = 1;
        else if (nd_ieq(v, len, "false") || nd_ieq(v, len, "no") || nd_ieq(v, len, "off"))
            yn = 0;
        if (yn >= 0) {
            if (yn < d->lo || yn > d->hi)
                return ND_OUT_OF_RANGE;
            *out = yn;
            return ND_OK;
        }
    }
    size_t i = 0;
    bool neg = false;
    if (v[0] == '-' || v[0] == '+') {
        neg = v[0] == '-';
        i = 1;
    }
    if (i >= len || v[i] < '0' || v[i] > '9')
        return ND_NOT_A_VALUE;
    unsigned long long x = 0;
    bool huge = false;
    for (; i < len && v[i] >= '0' && v[i] <= '9'; i++) {
        x = x * 10 + (unsigned)(v[i] - '0');
        if (x > (1ull << 40)) {
            huge = true;
            x = 1ull << 40;
        }
    }
    if (i < len && d->kind == ND_OPTK_SIZE) {
        char s = v[i++];
        unsigned shift = (s == 'k' || s == 'K') ? 10 : (s == 'm' || s == 'M') ? 20 : (s == 'g' || s == 'G') ? 30 : 64;
        if (shift == 64)
            return ND_NOT_A_VALUE;
        if (i < len && (v[i] == 'i' || v[i] == 'I'))
            i++;
        if (i < len && (v[i] == 'b' || v[i] == 'B'))
            i++;
        x <<= shift;
    }
    if (i != len)
        return ND_NOT_A_VALUE;
    if (huge)
        return ND_OUT_OF_RANGE;
    long val = neg ? -(long)x : (long)x;
    if (val < d->lo || val > d->hi)
        return ND_OUT_OF_RANGE;
    *out = val;
    return ND_OK;
}

/* "valid: 0..128k (bytes; suffixes k, m, g)" and the like. */
static void nd_explain_valid(nd_out *b, const nd_opt_desc *d)
{
    char rng[96];
    nd_opt_format_range(d, rng, sizeof rng);
    if (d->kind == ND_OPTK_TEXT) {
        nd_outf(b, "valid: %s; %%p in it becomes the process id, %%%% a %%", rng);
        return;
    }
    nd_outf(b, "valid: %s", rng);
    if (d->kind == ND_OPTK_SIZE)
        nd_out_str(b, " (bytes; suffixes k, m, g)");
    else if (d->kind == ND_OPTK_INT && d->lo == 0 && d->hi == 1)
        nd_out_str(b, " (or yes/no, on/off, true/false)");
}

size_t nd_opt_check(const char *name, size_t nlen, const char *value, size_t vlen,
                    const char *source, const char *unknown_tail,
                    int *id, long *out, char *msg, size_t msglen)
{
    nd_out b;
    nd_out_to_buffer(&b, msg, msglen);
    int i = nd_opt_find(name, nlen);
    *id = i;
    if (i < 0) {
        nd_outf(&b, "unknown option '%.*s' (from %s)%s", (int)(nlen > 64 ? 64 : nlen), name,
                  source, unknown_tail ? unknown_tail : "");
        int c = nd_opt_closest(name, nlen);
        if (c >= 0) {
            nd_outf(&b, "; did you mean %s?", nd_opt_table[c].name);
        } else {
            nd_out_str(&b, "; the options are");
            for (int k = 0; k < ND_OPT_COUNT; k++) {
                nd_out_str(&b, k ? ", " : " ");
                nd_out_str(&b, nd_opt_table[k].name);
            }
        }
        return b.total ? b.total : 1;
    }
    const nd_opt_desc *d = &nd_opt_table[i];
    enum nd_verdict v = nd_parse_value(d, value, vlen, out);
    if (v == ND_OK)
        return 0;
    if (v == ND_NEEDS_VALUE && value == NULL) {
        nd_outf(&b, "option %s (from %s) needs a value; ", d->name, source);
    } else {
        int shown = (int)(vlen > 80 ? 80 : vlen);
        nd_outf(&b, "invalid value '%.*s'%s for %s (from %s): ", shown, value,
                  (size_t)shown < vlen ? "..." : "", d->name, source);
        switch (v) {
        case ND_NOT_A_VALUE:
            nd_out_str(&b, d->kind == ND_OPTK_ENUM ? "not one of the choices; " : "not a number; ");
            break;
        case ND_OUT_OF_RANGE: nd_out_str(&b, "out of range; "); break;
        case ND_NEEDS_VALUE:  nd_out_str(&b, "empty; "); break;
        case ND_TOO_LONG:     nd_outf(&b, "longer than %ld characters; ", d->hi); break;
        case ND_BAD_TEXT:     nd_out_str(&b, "'%' may only be followed by p or %; "); break;
        case ND_OK:           break;
        }
    }
    nd_explain_valid(&b, d);
    return b.total;
}

/* Drops spaces around s[0..*len). */
static const char *nd_trim(const char *s, size_t *len)
{
    while (*len > 0 && s[0] == ' ') {
        s++;
        (*len)--;
    }
    while (*len > 0 && s[*len - 1] == ' ')
        (*len)--;
    return s;
}

void nd_opt_scan(const char *text, nd_opt_visit_fn *fn, void *ctx)
{
    const char *s = text;
    while (*s) {
        while (*s == ',' || *s == ' ')
            s++;
        if (!*s)
            break;
        const char *end = s;
        while (*end && *end != ',')
            end++;
        const char *eq = memchr(s, '=', (size_t)(end - s));
        size_t nlen = (size_t)((eq ? eq : end) - s);
        const char *name = nd_trim(s, &nlen);
        if (eq == NULL) {
            fn(ctx, name, nlen, NULL, 0);
        } else {
            size_t vlen = (size_t)(end - eq - 1);
            const char *value = nd_trim(eq + 1, &vlen);
            fn(ctx, name, nlen, value, vlen);
        }
        s = end;
    }
}

/* ---- the environment, once ----------------------------------------------------- */

typedef struct nd_env_ctx {
    const char *source;
    uint8_t from;
} nd_env_ctx;

static void nd_set_option(void *arg, const char *name, size_t nlen, const char *val, size_t vlen)
{
    const nd_env_ctx *ctx = arg;
    char msg[768];
    int id;
    long v;
    if (nd_opt_check(name, nlen, val, vlen, ctx->source, " is ignored", &id, &v, msg, sizeof msg) == 0) {
        nd_opt_values[id] = v;
        nd_opt_from[id] = ctx->from;
        if (nd_opt_table[id].kind == ND_OPTK_TEXT) {
            memcpy(nd_opt_bufs[id], val, vlen);
            nd_opt_bufs[id][vlen] = '\0';
        }
        return;
    }
    if (id < 0) {
        nd_warn("%s", msg);
    } else {
        char def[48];
        nd_opt_format_value(&nd_opt_table[id], nd_opt_table[id].def, def, sizeof def);
        nd_warn("%s; using the default %s", msg, def);
    }
}

void nd_options_init(void)
{
    const char *all = nd_os_getenv("NODAL_OPTIONS");
    if (all != NULL) {
        nd_env_ctx ctx = { "NODAL_OPTIONS", ND_FROM_OPTIONS };
        nd_opt_scan(all, nd_set_option, &ctx);
    }
    for (int i = 0; i < ND_OPT_COUNT; i++) {
        char var[64];
        nd_opt_var_name((nd_opt_id)i, var, sizeof var);
        const char *v = nd_os_getenv(var);
        if (v != NULL) {
            nd_env_ctx ctx = { var, ND_FROM_VARIABLE };
            nd_set_option(&ctx, nd_opt_table[i].name, strlen(nd_opt_table[i].name), v, strlen(v));
        }
    }
    nd_check_frees = nd_opt_values[ND_OPT_check] >= 2 || nd_opt_values[ND_OPT_secure] != 0;
    if (nd_opt_verbose()) {
        for (int i = 0; i < ND_OPT_COUNT; i++) {
            char val[1024], var[64];
            nd_opt_format((nd_opt_id)i, val, sizeof val);
            nd_opt_var_name((nd_opt_id)i, var, sizeof var);
            const char *from = nd_opt_from[i] == ND_FROM_OPTIONS  ? "NODAL_OPTIONS" :
                               nd_opt_from[i] == ND_FROM_VARIABLE ? var : NULL;
            nd_warn("option %s = %s%s%s%s%s", nd_opt_table[i].name,
                    nd_opt_table[i].kind == ND_OPTK_TEXT && !nd_opt_values[i] ? "(none)" : "", val,
                    from ? " (from " : " (default", from ? from : "", ")");
        }
    }
}
