/*
 * memory.c - how nodal gets memory from the kernel and gives it back, as
 * its statistics (os_maps, os_unmaps, huge_cached_bytes, ...) and the
 * blocks' contents show: freed huge mappings are reused instead of mapped
 * again, the cache of them is bounded and drains after purge_delay, and a
 * reused mapping never leaks old contents into calloc.
 *
 * Linked against the prefix library (nodal_* names): the test's own stdio
 * keeps the system malloc.
 */
#include <stdint.h>
#include <unistd.h>

#include "check.h"
#include "json.h"
#include "nodal.h"
#include "proc.h"

#define JSON_CAP ((size_t)4 << 20)
#define POOL_CAP 200000
static char json_buf[JSON_CAP];
static struct nd_json pool[POOL_CAP];

/* A field of the statistics' totals, now. */
static double total(const char *key)
{
    size_t n = nodal_stats_json(json_buf, JSON_CAP);
    EXPECT(n > 0 && n < JSON_CAP, "the statistics JSON to fit in %zu bytes", JSON_CAP);
    struct nd_json_parser p;
    const struct nd_json *root = nd_json_parse(&p, json_buf, n, pool, POOL_CAP);
    EXPECT(root != NULL, "the statistics JSON to parse: %s", p.error);
    const struct nd_json *t = nd_json_get(root, "totals");
    const struct nd_json *v = t ? nd_json_get(t, key) : NULL;
    EXPECT(v != NULL && v->type == ND_JSON_NUMBER, "the totals to have a number \"%s\"", key);
    return v->number;
}

#define MiB ((size_t)1 << 20)

/* Huge blocks allocated and freed in a loop (5-25 MiB, as a program that
   fills a big buffer per request does) reuse one mapping: a handful of
   mmap calls for 200 blocks, not one each. */
static void huge_blocks_in_a_loop_reuse_their_mapping(void)
{
    nodal_collect(1);
    double maps0 = total("os_maps");
    uint64_t x = 12345;
    for (int i = 0; i < 200; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        size_t size = 5 * MiB + (size_t)(x >> 40) % (20 * MiB);
        unsigned char *p = nodal_malloc(size);
        EXPECT(p != NULL, "nodal_malloc(%zu) to succeed", size);
        p[0] = p[size - 1] = (unsigned char)i;
        nodal_free(p);
    }
    double maps = total("os_maps") - maps0;
    EXPECT(maps <= 20, "200 huge blocks in a loop to take at most 20 new mappings, took %.0f", maps);
}

/* calloc of a huge block that reuses a freed mapping returns zeros, though
   the mapping held other data. */
static void calloc_of_a_reused_huge_mapping_is_zero(void)
{
    size_t size = 12 * MiB;
    unsigned char *p = nodal_malloc(size);
    EXPECT(p != NULL, "nodal_malloc(%zu) to succeed", size);
    memset(p, 0xa5, size);
    nodal_free(p);
    unsigned char *q = nodal_calloc(1, size - MiB);
    EXPECT(q != NULL, "nodal_calloc to succeed");
    for (size_t i = 0; i < size - MiB; i += 1024)
        EXPECT(q[i] == 0, "calloc'd byte %zu to be 0, got 0x%02x (a reused mapping's old contents)", i, q[i]);
    nodal_free(q);
}

/* Many huge blocks freed at once: the cache keeps a bounded amount (at most
   128 MiB per kind of memory) and gives all of it back once purge_delay has
   passed (nodal_collect(0) runs the expiry now; the blocks are freed well
   before). */
static void freed_huge_mappings_are_bounded_and_drained(void)
{
    enum { N = 24 };
    static void *b[N];
    for (int i = 0; i < N; i++) {
        b[i] = nodal_malloc(20 * MiB);
        EXPECT(b[i] != NULL, "nodal_malloc(20 MiB) #%d to succeed", i);
    }
    for (int i = 0; i < N; i++)
        nodal_free(b[i]);
    double cached = total("huge_cached_bytes");
    EXPECT(cached > 0, "freed huge mappings to be kept for reuse, huge_cached_bytes is 0");
    EXPECT(cached <= 128.0 * MiB, "at most 128 MiB of freed huge mappings kept, got %.1f MiB", cached / MiB);
    long delay = nodal_option_get("purge_delay");
    usleep((useconds_t)(delay + 50) * 1000);
    nodal_collect(0);
    cached = total("huge_cached_bytes");
    EXPECT(cached == 0, "the freed huge mappings to be unmapped %ld ms after the frees, %.1f MiB kept",
           delay + 50, cached / MiB);
}

/* With purge_delay=0 nothing is kept: a freed huge block is unmapped at
   once (run by the case below in a child with that option). */
static void emit_cached_after_free_with_no_delay(void)
{
    void *p = nodal_malloc(20 * MiB);
    EXPECT(p != NULL, "nodal_malloc(20 MiB) to succeed");
    nodal_free(p);
    printf("%.0f\n", total("huge_cached_bytes"));
}

static void no_huge_mapping_is_kept_when_purge_delay_is_0(void)
{
    static struct nd_child c;
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    EXPECT(len > 0, "/proc/self/exe to be readable");
    self[len] = '\0';
    char *argv[] = { self, (char *)"emit_cached_after_free_with_no_delay", NULL };
    nd_run_exec(argv, "purge_delay=0", NULL, 60, &c);
    EXPECT(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0, "the child to exit 0; it %s; stderr: %s",
           nd_describe_status(c.status), c.err);
    EXPECT(atof(c.out) == 0, "no freed huge mapping kept with purge_delay=0, huge_cached_bytes %s", c.out);
}

static const struct nd_case cases[] = {
    ND_CASE(huge_blocks_in_a_loop_reuse_their_mapping),
    ND_CASE(calloc_of_a_reused_huge_mapping_is_zero),
    ND_CASE(freed_huge_mappings_are_bounded_and_drained),
    ND_CASE(no_huge_mapping_is_kept_when_purge_delay_is_0),
    ND_CASE(emit_cached_after_free_with_no_delay),
};
ND_MAIN(cases)
