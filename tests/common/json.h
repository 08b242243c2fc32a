/*
 * json.h - a strict, small JSON reader for checking nodal's statistics:
 * parses RFC 8259 text into a tree of nodes taken from a caller's array (no
 * allocation, so it can run inside an allocator test) and looks values up.
 * Strings are kept as spans of the source; keys are compared without
 * decoding escapes (nodal's keys have none).
 */
#ifndef ND_TEST_JSON_H
#define ND_TEST_JSON_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum nd_json_type { ND_JSON_NULL, ND_JSON_BOOL, ND_JSON_NUMBER, ND_JSON_STRING,
                    ND_JSON_ARRAY, ND_JSON_OBJECT };

struct nd_json {
    enum nd_json_type type;
    double number;              /* NUMBER; BOOL as 0/1 */
    const char *str;            /* STRING: the characters between the quotes */
    size_t len;
    const char *key;            /* member of an OBJECT: its key (raw) */
    size_t keylen;
    struct nd_json *child;      /* first element / member */
    struct nd_json *next;       /* next sibling */
    size_t count;               /* elements / members */
};

struct nd_json_parser {
    const char *s, *end;
    struct nd_json *pool;
    size_t used, cap;
    const char *error;          /* what went wrong */
    size_t error_at;            /* byte offset */
};

static void nd_json_ws(struct nd_json_parser *p)
{
    while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r'))
        p->s++;
}

static struct nd_json *nd_json_fail(struct nd_json_parser *p, const char *why, const char *base)
{
    if (!p->error) {
        p->error = why;
        p->error_at = (size_t)(p->s - base);
    }
    return NULL;
}

static int nd_json_string(struct nd_json_parser *p, const char **out, size_t *len)
{
    if (p->s >= p->end || *p->s != '"')
        return 0;
    const char *start = ++p->s;
    while (p->s < p->end && *p->s != '"') {
        unsigned char c = (unsigned char)*p->s;
        if (c < 0x20)
            return 0;
        if (c == '\\') {
            p->s++;
            if (p->s >= p->end)
                return 0;
            if (*p->s == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (p->s + i >= p->end || !strchr("0123456789abcdefABCDEF", p->s[i]) || !p->s[i])
                        return 0;
                p->s += 4;
            } else if (!strchr("\"\\/bfnrt", *p->s) || !*p->s) {
                return 0;
            }
        }
        p->s++;
    }
    if (p->s >= p->end)
        return 0;
    *out = start;
    *len = (size_t)(p->s - start);
    p->s++;
    return 1;
}

static int nd_json_isdigit(char c) { return c >= '0' && c <= '9'; }

static struct nd_json *nd_json_value(struct nd_json_parser *p, const char *base, int depth)
{
    nd_json_ws(p);
    if (p->s >= p->end)
        return nd_json_fail(p, "unexpected end of text", base);
    if (p->used >= p->cap)
        return nd_json_fail(p, "too many values for the node pool", base);
    if (depth > 64)
        return nd_json_fail(p, "nesting deeper than 64", base);
    struct nd_json *v = &p->pool[p->used++];
    memset(v, 0, sizeof *v);
    char c = *p->s;
    if (c == '{' || c == '[') {
        int obj = c == '{';
        v->type = obj ? ND_JSON_OBJECT : ND_JSON_ARRAY;
        p->s++;
        nd_json_ws(p);
        if (p->s < p->end && *p->s == (obj ? '}' : ']')) {
            p->s++;
            return v;
        }
        struct nd_json **tail = &v->child;
        for (;;) {
            const char *key = NULL;
            size_t keylen = 0;
            if (obj) {
                nd_json_ws(p);
                if (!nd_json_string(p, &key, &keylen))
                    return nd_json_fail(p, "expected a string key", base);
                nd_json_ws(p);
                if (p->s >= p->end || *p->s != ':')
                    return nd_json_fail(p, "expected ':' after a key", base);
                p->s++;
            }
            struct nd_json *m = nd_json_value(p, base, depth + 1);
            if (!m)
                return NULL;
            m->key = key;
            m->keylen = keylen;
            *tail = m;
            tail = &m->next;
            v->count++;
            nd_json_ws(p);
            if (p->s < p->end && *p->s == ',') {
                p->s++;
                continue;
            }
            if (p->s < p->end && *p->s == (obj ? '}' : ']')) {
                p->s++;
                return v;
            }
            return nd_json_fail(p, obj ? "expected ',' or '}'" : "expected ',' or ']'", base);
        }
    }
    if (c == '"') {
        v->type = ND_JSON_STRING;
        if (!nd_json_string(p, &v->str, &v->len))
            return nd_json_fail(p, "bad string (control character, bad escape or no end)", base);
        return v;
    }
    static const struct { const char *word; enum nd_json_type t; double n; } lits[] = {
        { "true", ND_JSON_BOOL, 1 }, { "false", ND_JSON_BOOL, 0 }, { "null", ND_JSON_NULL, 0 },
    };
    for (size_t i = 0; i < 3; i++) {
        size_t n = strlen(lits[i].word);
        if ((size_t)(p->end - p->s) >= n && strncmp(p->s, lits[i].word, n) == 0) {
            v->type = lits[i].t;
            v->number = lits[i].n;
            p->s += n;
            return v;
        }
    }
    /* number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
    const char *start = p->s;
    if (p->s < p->end && *p->s == '-')
        p->s++;
    if (p->s < p->end && *p->s == '0') {
        p->s++;
    } else if (p->s < p->end && nd_json_isdigit(*p->s)) {
        while (p->s < p->end && nd_json_isdigit(*p->s))
            p->s++;
    } else {
        return nd_json_fail(p, "expected a value", base);
    }
    if (p->s < p->end && *p->s == '.') {
        p->s++;
        if (p->s >= p->end || !nd_json_isdigit(*p->s))
            return nd_json_fail(p, "expected digits after '.'", base);
        while (p->s < p->end && nd_json_isdigit(*p->s))
            p->s++;
    }
    if (p->s < p->end && (*p->s == 'e' || *p->s == 'E')) {
        p->s++;
        if (p->s < p->end && (*p->s == '+' || *p->s == '-'))
            p->s++;
        if (p->s >= p->end || !nd_json_isdigit(*p->s))
            return nd_json_fail(p, "expected digits in the exponent", base);
        while (p->s < p->end && nd_json_isdigit(*p->s))
            p->s++;
    }
    char num[64];
    size_t n = (size_t)(p->s - start);
    if (n >= sizeof num)
        return nd_json_fail(p, "number longer than 63 characters", base);
    memcpy(num, start, n);
    num[n] = '\0';
    v->type = ND_JSON_NUMBER;
    v->number = strtod(num, NULL);
    return v;
}

/* Parses all of text[0..len); NULL with p->error set if it is not exactly
   one JSON value (surrounded by optional whitespace). */
__attribute__((unused))
static struct nd_json *nd_json_parse(struct nd_json_parser *p, const char *text, size_t len,
                                     struct nd_json *pool, size_t cap)
{
    memset(p, 0, sizeof *p);
    p->s = text;
    p->end = text + len;
    p->pool = pool;
    p->cap = cap;
    struct nd_json *root = nd_json_value(p, text, 0);
    if (!root)
        return NULL;
    nd_json_ws(p);
    if (p->s != p->end)
        return nd_json_fail(p, "text after the value", text);
    return root;
}

/* Member `key` of an object, or NULL. */
__attribute__((unused))
static const struct nd_json *nd_json_get(const struct nd_json *obj, const char *key)
{
    if (!obj || obj->type != ND_JSON_OBJECT)
        return NULL;
    size_t kl = strlen(key);
    for (const struct nd_json *m = obj->child; m; m = m->next)
        if (m->keylen == kl && strncmp(m->key, key, kl) == 0)
            return m;
    return NULL;
}

#endif /* ND_TEST_JSON_H */
