/*
 * cpp_check.hpp - what the C++ tests (tests/cpp/) share: check.h's case
 * table and EXPECT, nodal's statistics totals (from nodal_stats_json, parsed
 * with json.h), and small C++ helpers.
 *
 * Programs built for the preload variant (ND_TEST_PRELOAD) are not linked
 * with nodal: they reach nodal_* through weak references that the preloaded
 * libnodal.so resolves, and a case fails if it is not there.
 */
#ifndef ND_TEST_CPP_CHECK_HPP
#define ND_TEST_CPP_CHECK_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "check.h"
#include "json.h"
#include "nodal.h"

#ifdef ND_TEST_PRELOAD
extern "C" {
__attribute__((weak)) size_t nodal_stats_json(char *buf, size_t len);
__attribute__((weak)) size_t nodal_usable_size(const void *p);
__attribute__((weak)) const char *nodal_version(void);
}
#endif

/* Fails the case unless nodal is in the process (preload variant). */
static inline void nd_need_nodal()
{
#ifdef ND_TEST_PRELOAD
    EXPECT(&nodal_stats_json != nullptr && &nodal_usable_size != nullptr,
           "libnodal.so in the process (run with LD_PRELOAD=.../libnodal.so)");
#endif
}

/* nodal's process-wide totals: requests and frees of blocks (every size,
   every heap, node heaps included) and the bytes in live blocks. */
struct nd_totals {
    double requests, frees, allocated;
};

static inline nd_totals nd_stats_totals()
{
    static char json[1 << 20];
    static nd_json pool[40000];
    nd_need_nodal();
    size_t need = nodal_stats_json(json, sizeof json);
    EXPECT(need > 0 && need < sizeof json, "nodal_stats_json to fit %zu bytes, it needs %zu",
           sizeof json, need);
    nd_json_parser p;
    const nd_json *root = nd_json_parse(&p, json, need, pool, sizeof pool / sizeof pool[0]);
    EXPECT(root != nullptr, "nodal_stats_json to be valid JSON: %s at byte %zu", p.error,
           p.error_at);
    const nd_json *t = nd_json_get(root, "totals");
    EXPECT(t != nullptr && t->type == ND_JSON_OBJECT, "the statistics to have \"totals\"");
    nd_totals r{};
    const char *keys[3] = { "requests", "frees", "allocated" };
    double *out[3] = { &r.requests, &r.frees, &r.allocated };
    for (int i = 0; i < 3; i++) {
        const nd_json *v = nd_json_get(t, keys[i]);
        EXPECT(v != nullptr && v->type == ND_JSON_NUMBER, "totals to have a number \"%s\"", keys[i]);
        *out[i] = v->number;
    }
    return r;
}

/* Keeps the compiler from eliding or merging an allocation. */
static inline void nd_escape(void *p) { __asm__ volatile("" : : "g"(p) : "memory"); }

static inline bool nd_is_aligned(const void *p, std::size_t a)
{
    return reinterpret_cast<std::uintptr_t>(p) % a == 0;
}

#endif /* ND_TEST_CPP_CHECK_HPP */
