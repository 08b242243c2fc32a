/*
 * stats_total.h - one number of nodal's statistics totals, as it is now:
 * nodal_stats_json's "totals" object read with json.h. The buffers are the
 * function's own (static: no allocation while a test watches nodal's).
 */
#ifndef ND_TEST_STATS_TOTAL_H
#define ND_TEST_STATS_TOTAL_H

#include "check.h"
#include "json.h"
#include "nodal.h"

static inline double nd_test_total(const char *key)
{
    enum { CAP = 4 << 20, NODES = 200000 };
    static char buf[CAP];
    static struct nd_json pool[NODES];
    size_t n = nodal_stats_json(buf, CAP);
    EXPECT(n > 0 && n < CAP, "the statistics JSON to fit in %d bytes", CAP);
    struct nd_json_parser p;
    const struct nd_json *root = nd_json_parse(&p, buf, n, pool, NODES);
    EXPECT(root != NULL, "the statistics JSON to parse: %s", p.error);
    const struct nd_json *t = nd_json_get(root, "totals");
    const struct nd_json *v = t ? nd_json_get(t, key) : NULL;
    EXPECT(v != NULL && v->type == ND_JSON_NUMBER, "the totals to have a number \"%s\"", key);
    return v->number;
}

#endif /* ND_TEST_STATS_TOTAL_H */
