/*
 * nodal_api.c - the nodal-only entry points answer bad arguments as
 * nodal.h says (EINVAL, ENOENT, -1, 0) and report what they should about
 * plain blocks. Where blocks land on nodes is tests/placement's business.
 */
#include <limits.h>
#include <stdint.h>

#include "check.h"
#include "nodal.h"

static void node_functions_reject_invalid_node_ids_with_einval(void)
{
    int ids[NODAL_MAX_NODES];
    int n = nodal_node_ids(ids, NODAL_MAX_NODES);
    EXPECT(n >= 1 && n <= NODAL_MAX_NODES, "nodal_node_ids to report 1..%d nodes, got %d",
           NODAL_MAX_NODES, n);
    EXPECT(nodal_node_count() == n, "nodal_node_count (%d) to equal nodal_node_ids' count (%d)",
           nodal_node_count(), n);
    int bad[5] = { -1, NODAL_MAX_NODES, INT_MAX, INT_MIN, 0 };
    int nbad = 4;
    /* Also the smallest id below the limit that is not a node with memory. */
    for (int id = 0; id < NODAL_MAX_NODES; id++) {
        int known = 0;
        for (int i = 0; i < n; i++)
            known |= ids[i] == id;
        if (!known) {
            bad[nbad++] = id;
            break;
        }
    }
    for (int i = 0; i < nbad; i++) {
        int node = bad[i];
        void *p;
        errno = 0;
        p = nodal_malloc_node(64, node);
        EXPECT(p == NULL && errno == EINVAL, "nodal_malloc_node(64, %d) to fail with EINVAL, "
               "got %p, errno %d", node, p, errno);
        errno = 0;
        p = nodal_calloc_node(4, 16, node);
        EXPECT(p == NULL && errno == EINVAL, "nodal_calloc_node(4, 16, %d) to fail with EINVAL, "
               "got %p, errno %d", node, p, errno);
        errno = 0;
        p = nodal_aligned_alloc_node(64, 64, node);
        EXPECT(p == NULL && errno == EINVAL, "nodal_aligned_alloc_node(64, 64, %d) to fail with "
               "EINVAL, got %p, errno %d", node, p, errno);
        errno = 0;
        p = nodal_realloc_node(NULL, 64, node);
        EXPECT(p == NULL && errno == EINVAL, "nodal_realloc_node(NULL, 64, %d) to fail with "
               "EINVAL, got %p, errno %d", node, p, errno);
        if (node < 0 || node >= NODAL_MAX_NODES) {
            errno = 0;
            int r = nodal_node_has_memory(node);
            EXPECT(r == -1 && errno == EINVAL, "nodal_node_has_memory(%d) to be -1 with EINVAL, "
                   "got %d, errno %d", node, r, errno);
            EXPECT(nodal_node_distance(node, ids[0]) == -1,
                   "nodal_node_distance(%d, %d) to be -1", node, ids[0]);
        }
    }
    EXPECT(nodal_node_distance(ids[0], ids[0]) == 10,
           "nodal_node_distance(%d, %d) (a node to itself) to be 10, got %d",
           ids[0], ids[0], nodal_node_distance(ids[0], ids[0]));
}

static int on_data;

static void node_of_is_minus_one_for_pointers_nodal_did_not_return(void)
{
    int local;
    EXPECT(nodal_node_of(NULL) == -1, "nodal_node_of(NULL) to be -1, got %d", nodal_node_of(NULL));
    EXPECT(nodal_node_of(&local) == -1, "nodal_node_of(a stack address) to be -1, got %d",
           nodal_node_of(&local));
    EXPECT(nodal_node_of(&on_data) == -1, "nodal_node_of(a static variable) to be -1, got %d",
           nodal_node_of(&on_data));
    void *p = nodal_malloc(100);
    int node = nodal_node_of(p);
    EXPECT(node >= 0 && node < NODAL_MAX_NODES && nodal_node_has_memory(node) == 1,
           "nodal_node_of(a nodal_malloc block) to be a node with memory, got %d", node);
    nodal_free(p);
}

static void memory_info_rejects_null_with_einval(void)
{
    errno = 0;
    int r = nodal_memory_info_get(NULL);
    EXPECT(r == -1 && errno == EINVAL, "nodal_memory_info_get(NULL) to be -1 with EINVAL, got %d, "
           "errno %d", r, errno);
}

static void memory_info_follows_allocated_bytes(void)
{
    nodal_memory_info a, b, c;
    size_t big = (size_t)16 << 20;
    EXPECT(nodal_memory_info_get(&a) == 0, "nodal_memory_info_get to return 0");
    void *p = nodal_malloc(big);
    EXPECT(p != NULL, "nodal_malloc(%zu) to succeed", big);
    memset(p, 1, big);
    EXPECT(nodal_memory_info_get(&b) == 0, "nodal_memory_info_get to return 0");
    EXPECT(b.allocated >= a.allocated + big,
           "allocated to grow by at least %zu after nodal_malloc(%zu): %zu -> %zu",
           big, big, a.allocated, b.allocated);
    EXPECT(b.mapped >= b.allocated, "mapped (%zu) to be >= allocated (%zu)", b.mapped, b.allocated);
    EXPECT(b.active <= b.mapped, "active (%zu) to be <= mapped (%zu)", b.active, b.mapped);
    EXPECT(b.peak_active >= b.active, "peak_active (%zu) to be >= active (%zu)",
           b.peak_active, b.active);
    EXPECT(b.peak_mapped >= b.mapped, "peak_mapped (%zu) to be >= mapped (%zu)",
           b.peak_mapped, b.mapped);
    EXPECT(b.committed <= b.mapped, "committed (%zu) to be <= mapped (%zu)", b.committed, b.mapped);
    EXPECT(b.segments >= 1, "segments to be >= 1 with a live block, got %zu", b.segments);
    EXPECT(b.rss_current >= big, "rss_current (%zu) to include the %zu bytes just written",
           b.rss_current, big);
    EXPECT(b.rss_peak >= b.rss_current, "rss_peak (%zu) to be >= rss_current (%zu)",
           b.rss_peak, b.rss_current);
    nodal_free(p);
    EXPECT(nodal_memory_info_get(&c) == 0, "nodal_memory_info_get to return 0");
    EXPECT(c.allocated == a.allocated, "allocated to be back at %zu after the free, it is %zu",
           a.allocated, c.allocated);
    EXPECT(c.peak_mapped >= b.mapped, "peak_mapped (%zu) to remember the %zu mapped earlier",
           c.peak_mapped, b.mapped);
}

static void option_get_rejects_unknown_names_with_enoent(void)
{
    const char *bad[] = { "no_such_option", "", "STATS", "stats=1" };
    for (size_t i = 0; i < 4; i++) {
        errno = 0;
        long v = nodal_option_get(bad[i]);
        EXPECT(v == -1 && errno == ENOENT, "nodal_option_get(\"%s\") to be -1 with ENOENT, "
               "got %ld, errno %d", bad[i], v, errno);
    }
}

static void version_string_matches_the_header(void)
{
    char want[64];
    snprintf(want, sizeof want, "nodal %d.%d.%d", NODAL_VERSION_MAJOR, NODAL_VERSION_MINOR,
             NODAL_VERSION_PATCH);
    const char *v = nodal_version();
    EXPECT(v && strcmp(v, want) == 0, "nodal_version() to be \"%s\", got \"%s\"", want,
           v ? v : "(null)");
}

static void usable_size_of_null_is_zero(void)
{
    EXPECT(nodal_usable_size(NULL) == 0, "nodal_usable_size(NULL) to be 0");
    EXPECT(nodal_malloc_usable_size(NULL) == 0, "nodal_malloc_usable_size(NULL) to be 0");
}

static void collect_keeps_live_blocks_intact(void)
{
    enum { N = 300 };
    static unsigned char *p[N];
    for (size_t i = 0; i < N; i++) {
        size_t s = 16 + i * 997 % 70000;
        p[i] = nodal_malloc(s);
        EXPECT(p[i] != NULL, "nodal_malloc(%zu) to succeed", s);
        memset(p[i], (int)(i & 0xff), s);
    }
    for (size_t i = 0; i < N; i += 2)
        nodal_free(p[i]);
    nodal_collect(0);
    nodal_collect(1);
    for (size_t i = 1; i < N; i += 2) {
        size_t s = 16 + i * 997 % 70000;
        for (size_t k = 0; k < s; k++)
            EXPECT(p[i][k] == (unsigned char)(i & 0xff),
                   "nodal_collect not to touch live blocks: block %zu byte %zu changed", i, k);
        nodal_free(p[i]);
    }
}

/* Found by the fuzzer: `committed` lost 48 KiB (a 64 KiB chunk less the
   16 KiB segment header) at every purge of a run starting at a segment's
   first chunk, until it wrapped around below zero. */
static void committed_stays_within_mapped_across_purges(void)
{
    static void *blocks[4000];
    for (int round = 0; round < 8; round++) {
        for (int i = 0; i < 4000; i++)
            EXPECT((blocks[i] = nodal_malloc(32)) != NULL, "nodal_malloc(32) to succeed");
        for (int i = 0; i < 4000; i++)
            nodal_free(blocks[i]);
        nodal_collect(1);
        nodal_memory_info mi;
        EXPECT(nodal_memory_info_get(&mi) == 0, "nodal_memory_info_get to return 0");
        EXPECT(mi.committed <= mi.mapped,
               "committed (%zu, as signed %zd) to stay within mapped (%zu) after %d rounds of "
               "4000 mallocs, 4000 frees and nodal_collect(1)", mi.committed,
               (ssize_t)mi.committed, mi.mapped, round + 1);
    }
}

static const struct nd_case cases[] = {
    ND_CASE(node_functions_reject_invalid_node_ids_with_einval),
    ND_CASE(node_of_is_minus_one_for_pointers_nodal_did_not_return),
    ND_CASE(memory_info_rejects_null_with_einval),
    ND_CASE(memory_info_follows_allocated_bytes),
    ND_CASE(option_get_rejects_unknown_names_with_enoent),
    ND_CASE(version_string_matches_the_header),
    ND_CASE(usable_size_of_null_is_zero),
    ND_CASE(collect_keeps_live_blocks_intact),
    ND_CASE(committed_stays_within_mapped_across_purges),
};
ND_MAIN(cases)
