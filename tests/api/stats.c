/*
 * stats.c - nodal's statistics tell the truth about a known workload, and
 * their JSON form is valid JSON.
 *
 * STATS-SCHEMA: the names this file relies on (src/base/counters.h is the one
 * table they come from; docs/statistics.md lists them):
 *   nodal_stats_json() -> { "version": .., "pid": N, "program": "..",
 *                           "totals": { "requests": N, ... },
 *                           "classes": [ { "size": S, "requests": N,
 *                                          "frees": N, ... }, ... ],
 *                           "nodes": [..],
 *                           "tiers": [ { "name": "latency", "requests": N,
 *                                        "bytes": N, "fallbacks": N,
 *                                        "cap_refusals": N, "cap_bytes": N,
 *                                        "cap": N,
 *                                        "nodes": [ { "from": C, "node": M,
 *                                                     "requests": N, ... },
 *                                                   .. ] }, .. ],
 *   nodal_tier_stats_get(tier, from, &s) -> the same numbers as the JSON's
 *                           "options": {..}, "hints": [..] }
 *   nodal_stats_print(f, "brief") -> one line
 *                           "nodal: pid=N program=P requests=N frees=N ..."
 *   nodal_stats_print(f, NULL) -> the text report: the brief line, then
 *                           "name value" pairs of totals, a table of classes
 *                           whose header names the columns, nodes, tiers
 *                           (a table headed "tier ..."), hints
 *
 * Linked against the prefix library: the test's own stdio keeps the system
 * malloc, so between two snapshots only the test's nodal_* calls count.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "check.h"
#include "json.h"
#include "nodal.h"
#define ND_CHILD_OUT_BYTES 65536   /* the children's JSON reports (every class's counters: about 20 KiB) */
#include "proc.h"

#define KEY_CLASSES  "classes"
#define KEY_SIZE     "size"
#define KEY_REQUESTS "requests"
#define KEY_FREES    "frees"
#define TOP_LEVEL_KEYS { "version", "pid", "program", "totals", "classes", "nodes", "tiers", "locks", "options", "hints" }
#define N_TIERS 3

#define JSON_CAP ((size_t)4 << 20)
#define POOL_CAP 200000

static char json_a[JSON_CAP], json_b[JSON_CAP];
static struct nd_json pool_a[POOL_CAP], pool_b[POOL_CAP];

/* Takes a snapshot and parses it; fails the case if it does not parse. */
static const struct nd_json *snapshot(char *buf, struct nd_json *pool)
{
    size_t need = nodal_stats_json(buf, JSON_CAP);
    EXPECT(need > 0 && need < JSON_CAP,
           "nodal_stats_json to need between 1 and %zu bytes, it says %zu", JSON_CAP, need);
    EXPECT(strlen(buf) == need, "nodal_stats_json's return (%zu) to be the length it wrote (%zu)",
           need, strlen(buf));
    struct nd_json_parser p;
    const struct nd_json *root = nd_json_parse(&p, buf, need, pool, POOL_CAP);
    EXPECT(root != NULL, "nodal_stats_json to produce valid JSON: %s at byte %zu near \"%.40s\"",
           p.error, p.error_at, buf + (p.error_at < need ? p.error_at : need));
    EXPECT(root->type == ND_JSON_OBJECT, "the statistics JSON to be an object");
    return root;
}

static double member_number(const struct nd_json *obj, const char *key, const char *where)
{
    const struct nd_json *v = nd_json_get(obj, key);
    EXPECT(v && v->type == ND_JSON_NUMBER, "%s to have a number \"%s\"", where, key);
    return v->number;
}

/* The class entry that serves requests of `s` bytes: the smallest class
   size >= s. NULL if s is above every class (large or huge). */
static const struct nd_json *class_of(const struct nd_json *root, size_t s)
{
    const struct nd_json *classes = nd_json_get(root, KEY_CLASSES);
    EXPECT(classes && classes->type == ND_JSON_ARRAY && classes->count > 0,
           "the statistics JSON to have a non-empty array \"%s\"", KEY_CLASSES);
    const struct nd_json *best = NULL;
    double best_size = 0;
    for (const struct nd_json *c = classes->child; c; c = c->next) {
        double cs = member_number(c, KEY_SIZE, "every class entry");
        if (cs >= (double)(s ? s : 1) && (!best || cs < best_size))
            best = c, best_size = cs;
    }
    return best;
}

/* Sum of `key` over every class except the one of size `except`. */
static double others_sum(const struct nd_json *root, double except, const char *key)
{
    double sum = 0;
    const struct nd_json *classes = nd_json_get(root, KEY_CLASSES);
    for (const struct nd_json *c = classes->child; c; c = c->next)
        if (member_number(c, KEY_SIZE, "every class entry") != except)
            sum += member_number(c, key, "every class entry");
    return sum;
}

static const size_t probe_sizes[] = { 1, 8, 16, 17, 24, 48, 100, 1000, 3000, 10000 };
#define N_BLOCKS 1000

/* STATS-SCHEMA: "requests" and "frees" per class. */
static void stats_count_exactly_n_requests_and_frees_in_the_class_of_s(void)
{
    static void *blocks[N_BLOCKS];
    int probed = 0;
    for (size_t i = 0; i < sizeof probe_sizes / sizeof probe_sizes[0]; i++) {
        size_t s = probe_sizes[i];
        const struct nd_json *before = snapshot(json_a, pool_a);
        const struct nd_json *cb = class_of(before, s);
        if (!cb)
            continue;                 /* s is above the small classes */
        double csize = member_number(cb, KEY_SIZE, "the class entry");
        double req0 = member_number(cb, KEY_REQUESTS, "the class entry");
        double fre0 = member_number(cb, KEY_FREES, "the class entry");
        double oth0 = others_sum(before, csize, KEY_REQUESTS);
        double use0 = member_number(cb, "bytes_in_use", "the class entry");

        for (size_t k = 0; k < N_BLOCKS; k++) {
            blocks[k] = nodal_malloc(s);
            EXPECT(blocks[k] != NULL, "nodal_malloc(%zu) to succeed", s);
        }
        const struct nd_json *mid = snapshot(json_b, pool_b);
        const struct nd_json *cm = class_of(mid, s);
        double req1 = member_number(cm, KEY_REQUESTS, "the class entry");
        EXPECT(req1 - req0 == N_BLOCKS,
               "%d nodal_malloc(%zu) calls to add exactly %d \"%s\" to the class of size %.0f, "
               "it went from %.0f to %.0f", N_BLOCKS, s, N_BLOCKS, KEY_REQUESTS, csize, req0, req1);
        double use1 = member_number(cm, "bytes_in_use", "the class entry");
        EXPECT(use1 - use0 == N_BLOCKS * csize,
               "%d live blocks of %zu bytes to add exactly %d * %.0f to the class's "
               "\"bytes_in_use\", it went from %.0f to %.0f", N_BLOCKS, s, N_BLOCKS, csize, use0, use1);
        double oth1 = others_sum(mid, csize, KEY_REQUESTS);
        EXPECT(oth1 == oth0, "nodal_malloc(%zu) calls to leave the other classes' \"%s\" alone, "
               "their sum went from %.0f to %.0f", s, KEY_REQUESTS, oth0, oth1);

        for (size_t k = 0; k < N_BLOCKS; k++)
            nodal_free(blocks[k]);
        const struct nd_json *after = snapshot(json_a, pool_a);
        const struct nd_json *ca = class_of(after, s);
        double fre1 = member_number(ca, KEY_FREES, "the class entry");
        double use2 = member_number(ca, "bytes_in_use", "the class entry");
        EXPECT(use2 == use0, "\"bytes_in_use\" of the class of %zu to come back to %.0f after the "
               "frees, it is %.0f", s, use0, use2);
        EXPECT(fre1 - fre0 == N_BLOCKS,
               "%d nodal_free calls of %zu-byte blocks to add exactly %d \"%s\" to the class of "
               "size %.0f, it went from %.0f to %.0f", N_BLOCKS, s, N_BLOCKS, KEY_FREES, csize,
               fre0, fre1);
        probed++;
    }
    EXPECT(probed > 0, "at least one of the probe sizes (1 .. 10000) to be in a size class");
}

static void stats_json_is_one_valid_object_with_the_documented_keys(void)
{
    void *p = nodal_malloc(100), *q = nodal_malloc((size_t)1 << 20), *r = nodal_malloc((size_t)64 << 20);
    const struct nd_json *root = snapshot(json_a, pool_a);
    static const char *keys[] = TOP_LEVEL_KEYS;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        EXPECT(nd_json_get(root, keys[i]) != NULL,
               "the statistics JSON to have the top-level key \"%s\"", keys[i]);
    (void)class_of(root, 1);
    nodal_free(p);
    nodal_free(q);
    nodal_free(r);

    /* nodal_stats_print(f, "json") writes the same kind of text. */
    FILE *f = fmemopen(json_b, JSON_CAP, "w");
    EXPECT(f != NULL, "fmemopen to work");
    EXPECT(nodal_stats_print(f, "json") == 0, "nodal_stats_print(f, \"json\") to return 0");
    long len = ftell(f);
    fclose(f);
    EXPECT(len > 0 && (size_t)len < JSON_CAP, "nodal_stats_print(f, \"json\") to write something");
    struct nd_json_parser ps;
    EXPECT(nd_json_parse(&ps, json_b, (size_t)len, pool_b, POOL_CAP) != NULL,
           "nodal_stats_print(f, \"json\") to write valid JSON: %s at byte %zu",
           ps.error, ps.error_at);
}

/* STATS-SCHEMA: "locks", one entry per row of the lock table (src/os/lock.h,
   src/README.md), in its order: the row's name and the waits counted on it.
   Two threads take large blocks of 128 KiB-1 MiB and free them, both at
   once, so the large pools' locks may be found held; whatever the count,
   the rows' waits add up to totals' lock_waits (read while no other thread
   runs), and the rows the process took are named as in the table. */
static void *take_large_blocks(void *arg)
{
    uint64_t x = (uintptr_t)arg;
    void *held[16] = { 0 };
    for (int i = 0; i < 4000; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        unsigned slot = (unsigned)(x >> 60);
        nodal_free(held[slot]);
        held[slot] = nodal_malloc(((size_t)128 << 10) + (size_t)(x >> 44) % ((size_t)896 << 10));
        EXPECT(held[slot] != NULL, "a large block to be allocated");
    }
    for (int i = 0; i < 16; i++)
        nodal_free(held[i]);
    return NULL;
}

static void stats_json_counts_the_lock_waits_of_each_row_of_the_lock_table(void)
{
    pthread_t t[2];
    for (uintptr_t i = 0; i < 2; i++)
        EXPECT(pthread_create(&t[i], NULL, take_large_blocks, (void *)(i + 1)) == 0, "pthread_create to work");
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    const struct nd_json *root = snapshot(json_a, pool_a);
    const struct nd_json *locks = nd_json_get(root, "locks");
    EXPECT(locks && locks->type == ND_JSON_ARRAY && locks->count >= 10,
           "the statistics JSON to have an array \"locks\" with an entry per row of the lock table");
    static const char *rows[] = { "init", "threads", "large_pool", "node", "meta" };   /* in the table's order */
    size_t next = 0;
    double sum = 0;
    for (const struct nd_json *l = locks->child; l; l = l->next) {
        const struct nd_json *name = nd_json_get(l, "name");
        EXPECT(name && name->type == ND_JSON_STRING, "every \"locks\" entry to have a string \"name\"");
        double w = member_number(l, "waits", "every \"locks\" entry");
        EXPECT(w >= 0 && w == (double)(uint64_t)w, "a row's waits to be a count, %s has %g", name->str, w);
        sum += w;
        if (next < sizeof rows / sizeof rows[0] && name->len == strlen(rows[next]) &&
            memcmp(name->str, rows[next], name->len) == 0)
            next++;
    }
    EXPECT(next == sizeof rows / sizeof rows[0], "the rows init, threads, large_pool, node and meta to be listed in "
           "the lock table's order (found %zu of them in order)", next);
    double total = member_number(nd_json_get(root, "totals"), "lock_waits", "\"totals\"");
    EXPECT(sum == total, "the rows' waits (%g) to add up to lock_waits (%g)", sum, total);
}

/* nodal_stats_json(buf, len) returns the length it needs, like snprintf,
   and never writes past len (the result stays NUL-terminated). */
static void stats_json_reports_its_length_like_snprintf(void)
{
    size_t need = nodal_stats_json(NULL, 0);
    EXPECT(need > 0, "nodal_stats_json(NULL, 0) to return the length needed, got 0");
    static char small[64 + 16];
    size_t cuts[] = { 1, 2, 10, 64 };
    for (size_t i = 0; i < 4; i++) {
        memset(small, '#', sizeof small);
        size_t got = nodal_stats_json(small, cuts[i]);
        EXPECT(got >= need - need / 10, "nodal_stats_json(buf, %zu) to return the full length "
               "(about %zu), got %zu", cuts[i], need, got);
        EXPECT(small[cuts[i] - 1] == '\0', "nodal_stats_json(buf, %zu) to NUL-terminate at "
               "buf[%zu]", cuts[i], cuts[i] - 1);
        for (size_t k = cuts[i]; k < sizeof small; k++)
            EXPECT(small[k] == '#', "nodal_stats_json(buf, %zu) not to write past the buffer, "
                   "buf[%zu] changed", cuts[i], k);
    }
}

/* Blocks freed by a thread that does not own them count as frees at once,
   whether they wait in that thread's cache or went back to their page, and
   still after that thread exits. */
struct remote_frees { void **blocks; int n; pthread_barrier_t freed, checked; };

static void *free_them_all(void *arg)
{
    struct remote_frees *r = arg;
    for (int i = 0; i < r->n; i++)
        nodal_free(r->blocks[i]);
    /* Frees of other threads' blocks wait in this thread's cache until they
       go back to their pages, where remote_frees counts them: send them
       all back now. */
    nodal_collect(0);
    pthread_barrier_wait(&r->freed);
    pthread_barrier_wait(&r->checked);   /* exits once the main thread looked */
    return NULL;
}

static void stats_count_frees_made_by_other_threads_exactly(void)
{
    enum { N = 5000 };
    static void *blocks[N];
    nodal_free(nodal_malloc(64));
    const struct nd_json *before = snapshot(json_a, pool_a);
    const struct nd_json *cb = class_of(before, 64);
    double fre0 = member_number(cb, KEY_FREES, "the class entry");
    double use0 = member_number(cb, "bytes_in_use", "the class entry");
    double rem0 = member_number(cb, "remote_frees", "the class entry");
    for (int i = 0; i < N; i++)
        blocks[i] = nodal_malloc(64);
    struct remote_frees r = { blocks, N, {{0}}, {{0}} };
    pthread_barrier_init(&r.freed, NULL, 2);
    pthread_barrier_init(&r.checked, NULL, 2);
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, free_them_all, &r) == 0, "pthread_create to work");
    pthread_barrier_wait(&r.freed);
    for (int round = 0; round < 2; round++) {
        const struct nd_json *after = snapshot(json_b, pool_b);
        const struct nd_json *ca = class_of(after, 64);
        double fre1 = member_number(ca, KEY_FREES, "the class entry");
        double use1 = member_number(ca, "bytes_in_use", "the class entry");
        double rem1 = member_number(ca, "remote_frees", "the class entry");
        const char *when = round == 0 ? "while the freeing thread lives" : "after it exited";
        EXPECT(fre1 - fre0 == N, "%d frees by another thread to add exactly %d frees %s, got %.0f",
               N, N, when, fre1 - fre0);
        EXPECT(rem1 - rem0 == N, "%d frees by another thread to add exactly %d remote_frees %s, got %.0f",
               N, N, when, rem1 - rem0);
        EXPECT(use1 == use0, "bytes_in_use of the 64-byte class to come back to %.0f %s, it is %.0f",
               use0, when, use1);
        if (round == 0) {
            pthread_barrier_wait(&r.checked);
            pthread_join(t, NULL);
        }
    }
}

/* Prints the report `how` (NULL for text) into buf. */
static void print_report(const char *how, char *buf, size_t cap)
{
    FILE *f = fmemopen(buf, cap - 1, "w");
    EXPECT(f != NULL, "fmemopen to work");
    EXPECT(nodal_stats_print(f, how) == 0, "nodal_stats_print(f, \"%s\") to return 0", how ? how : "NULL");
    long len = ftell(f);
    fclose(f);
    buf[len > 0 ? len : 0] = '\0';
}

/* STATS-SCHEMA: the brief summary line. */
static void stats_print_brief_is_one_summary_line_with_requests(void)
{
    void *p = nodal_malloc(64);
    nodal_free(p);
    static char text[8192];
    print_report("brief", text, sizeof text);
    EXPECT(strncmp(text, "nodal: ", 7) == 0,
           "the brief statistics to start with \"nodal: \", got \"%.80s\"", text);
    char *nl = strchr(text, '\n');
    EXPECT(nl == NULL || nl[1] == '\0', "the brief statistics to be one line, got \"%s\"", text);
    const char *m = strstr(text, " requests=");
    EXPECT(m != NULL, "the brief statistics to have a requests= field, got \"%s\"", text);
    EXPECT(strtoull(m + 10, NULL, 10) > 0, "requests= to be non-zero after a nodal_malloc, got \"%s\"",
           text);
    char want[64];
    snprintf(want, sizeof want, "nodal: pid=%ld ", (long)getpid());
    EXPECT(strncmp(text, want, strlen(want)) == 0, "the brief line to start with \"%s\", got \"%.80s\"",
           want, text);
    EXPECT(strstr(text, " program=api_stats") != NULL, "the brief line to name the program, got \"%s\"", text);
}

/* Every report names its process, and the JSON's pid is this process. */
static void stats_reports_name_their_pid_and_program(void)
{
    const struct nd_json *root = snapshot(json_a, pool_a);
    EXPECT(member_number(root, "pid", "the statistics JSON") == (double)getpid(),
           "the JSON's pid to be %ld", (long)getpid());
    const struct nd_json *prog = nd_json_get(root, "program");
    /* The program is api_stats, or api_stats_san in the sanitizer builds. */
    EXPECT(prog && prog->type == ND_JSON_STRING && prog->len >= 9 && strncmp(prog->str, "api_stats", 9) == 0,
           "the JSON's program to be \"api_stats\"");
    static char text[1 << 16];
    print_report(NULL, text, sizeof text);
    char want[96];
    snprintf(want, sizeof want, "statistics of pid %ld (api_stats", (long)getpid());
    EXPECT(strstr(text, want) != NULL, "the text report to say \"%s\", got \"%.300s\"", want, text);
}

/* The summary line, the text report and the JSON use one vocabulary: every
   name the line and the text show is a key of the JSON. */
static void stats_names_agree_across_brief_text_and_json(void)
{
    void *p = nodal_malloc(100);
    const struct nd_json *root = snapshot(json_a, pool_a);
    const struct nd_json *totals = nd_json_get(root, "totals");
    EXPECT(totals && totals->type == ND_JSON_OBJECT, "the JSON to have an object \"totals\"");
    const struct nd_json *cls = class_of(root, 100);
    static char text[1 << 16];
    print_report("brief", text, sizeof text);
    int checked = 0;
    for (char *t = strtok(text, " \n"); t; t = strtok(NULL, " \n")) {
        char *eq = strchr(t, '=');
        if (eq == NULL || strncmp(t, "pid=", 4) == 0 || strncmp(t, "program=", 8) == 0)
            continue;
        *eq = '\0';
        EXPECT(nd_json_get(totals, t) != NULL, "the brief line's \"%s\" to be a key of the JSON totals", t);
        checked++;
    }
    EXPECT(checked >= 5, "the brief line to have several fields, found %d", checked);
    print_report(NULL, text, sizeof text);
    /* The class table's header: the line starting with "size". */
    char *head = strstr(text, "\n      size ");
    EXPECT(head != NULL, "the text report to have a class table headed \"size ...\", got \"%.400s\"", text);
    char *end = strchr(head + 1, '\n');
    *end = '\0';
    int cols = 0;
    for (char *t = strtok(head + 1, " "); t; t = strtok(NULL, " ")) {
        if (strcmp(t, "size") == 0)
            continue;
        EXPECT(nd_json_get(cls, t) != NULL, "the text report's class column \"%s\" to be a key of a JSON class", t);
        cols++;
    }
    EXPECT(cols >= 5, "the class table to have several columns, found %d", cols);
    nodal_free(p);
}

/* Blocks waiting in a thread cache are available, not wasted: freeing
   blocks into the cache leaves the class's utilization where it was while
   they were live. */
static void stats_utilization_counts_cached_blocks_as_available(void)
{
    /* K freed blocks fit in a new cache (it starts with 8 KiB worth of
       blocks, at most 32). */
    enum { N = 200, K = 16 };
    static void *b[N];
    for (int i = 0; i < N; i++)
        b[i] = nodal_malloc(48);
    const struct nd_json *live = snapshot(json_a, pool_a);
    double u_live = member_number(class_of(live, 48), "utilization", "the class entry");
    double cached_before = member_number(class_of(live, 48), "cached", "the class entry");
    for (int i = N - 1; i >= N - K; i--)   /* the newest: straight into the cache */
        nodal_free(b[i]);
    const struct nd_json *after = snapshot(json_b, pool_b);
    const struct nd_json *c = class_of(after, 48);
    double u_after = member_number(c, "utilization", "the class entry");
    double cached = member_number(c, "cached", "the class entry");
    EXPECT(cached >= cached_before + K, "the %d freed blocks to wait in the thread cache (cached %.0f, "
           "%.0f before)", K, cached, cached_before);
    EXPECT(u_live > 0 && u_after >= u_live * 0.999,
           "the utilization of the 48-byte class to stay at %.4f when blocks move into the cache, got %.4f",
           u_live, u_after);
    for (int i = 0; i < N - K; i++)
        nodal_free(b[i]);
}

/* Not a property: many fills per request with a tiny cache, then the JSON
   on stdout (run by stats_hint_names_the_option_to_change). */
static void emit_stats_after_many_fills(void)
{
    static void *b[64];
    for (int round = 0; round < 2000; round++) {
        for (int i = 0; i < 64; i++)
            b[i] = nodal_malloc(32);
        for (int i = 0; i < 64; i++)
            nodal_free(b[i]);
    }
    size_t n = nodal_stats_json(json_a, JSON_CAP);
    fwrite(json_a, 1, n, stdout);
}

/* A workload that refills its thread cache often gets a hint that names
   tcache_count, in the JSON and in the text report. */
static void stats_hint_names_the_option_to_change(void)
{
    static struct nd_child c;
    nd_run_case("emit_stats_after_many_fills", "tcache_count=8", NULL, 60, &c);
    struct nd_json_parser ps;
    const struct nd_json *root = nd_json_parse(&ps, c.out, strlen(c.out), pool_a, POOL_CAP);
    EXPECT(root != NULL, "the child's JSON to parse: %s", ps.error);
    const struct nd_json *hints = nd_json_get(root, "hints");
    EXPECT(hints && hints->type == ND_JSON_ARRAY, "the JSON to have an array \"hints\"");
    int found = 0;
    for (const struct nd_json *h = hints->child; h; h = h->next)
        found |= h->type == ND_JSON_STRING && memmem(h->str, h->len, "tcache_count", 12) != NULL &&
                 memmem(h->str, h->len, "class 32 B", 10) != NULL;
    EXPECT(found, "a hint about the 32-byte class naming tcache_count, got %zu hints: %.300s",
           hints->count, c.out);
}

/* Not a property: writes the JSON to stdout for `python3 -m json.tool`
   (ctest test api.stats.json_parses_with_python_json_tool). */
static void emit_stats_json(void)
{
    void *p = nodal_malloc(100), *q = nodal_malloc((size_t)4 << 20);
    size_t n = nodal_stats_json(json_a, JSON_CAP);
    EXPECT(n < JSON_CAP, "the JSON to fit in %zu bytes", JSON_CAP);
    fwrite(json_a, 1, n, stdout);
    nodal_free(p);
    nodal_free(q);
}

/* Not a property: a few allocations, then exit (the exit report is the
   point), for stats_file_gets_the_exit_report_named_by_pid. */
static void allocate_a_little(void)
{
    for (int i = 0; i < 100; i++)
        nodal_free(nodal_malloc((size_t)i * 8));
}

/* stats_file=PATH sends the report at exit to PATH (with %p the pid), not
   to stderr, and implies the text report. */
static void stats_file_gets_the_exit_report_named_by_pid(void)
{
    char dir[] = "/tmp/nodal-stats-XXXXXX";
    EXPECT(mkdtemp(dir) != NULL, "mkdtemp to work");
    char opt[128];
    snprintf(opt, sizeof opt, "stats_file=%s/report.%%p.txt", dir);
    static struct nd_child c;
    nd_run_case("allocate_a_little", opt, NULL, 60, &c);
    EXPECT(strstr(c.err, "statistics of pid") == NULL, "no report on stderr, got: %.200s", c.err);
    char cmd[256], found[512] = "";
    snprintf(cmd, sizeof cmd, "ls %s", dir);
    FILE *ls = popen(cmd, "r");
    EXPECT(ls != NULL && fgets(found, sizeof found, ls) != NULL, "one file in %s", dir);
    pclose(ls);
    found[strcspn(found, "\n")] = '\0';
    long pid = 0;
    EXPECT(sscanf(found, "report.%ld.txt", &pid) == 1 && pid > 0, "the file to be report.PID.txt, got %s", found);
    char path[700], text[4096] = "";
    snprintf(path, sizeof path, "%s/%s", dir, found);
    FILE *f = fopen(path, "r");
    EXPECT(f != NULL, "%s to be readable", path);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    char want[96];
    snprintf(want, sizeof want, "nodal: pid=%ld program=", pid);
    EXPECT(strncmp(text, want, strlen(want)) == 0, "the file to start with \"%s\", got \"%.120s\"", want, text);
    EXPECT(strstr(text, "statistics of pid") != NULL, "the file to hold the text report");
    unlink(path);
    rmdir(dir);
}

/* Allocates `size` until 50 requests failed under a tight address-space
   limit (the child only), then compares `allocated` with the blocks it got. */
static void failed_allocations_child(void *arg)
{
    size_t size = *(size_t *)arg;
    void *warm = nodal_malloc(size);
    nodal_free(warm);
    nodal_memory_info mi;
    EXPECT(nodal_memory_info_get(&mi) == 0, "nodal_memory_info_get to return 0");
    size_t before = mi.allocated, got = 0, failures = 0;
    struct rlimit now;
    getrlimit(RLIMIT_AS, &now);
    /* Room for 64 MiB more than the process maps now. */
    size_t vm = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%zu", &vm) != 1)
        _exit(4);
    fclose(f);
    struct rlimit tight = { vm * (size_t)sysconf(_SC_PAGESIZE) + ((size_t)64 << 20), now.rlim_max };
    EXPECT(setrlimit(RLIMIT_AS, &tight) == 0, "setrlimit(RLIMIT_AS) to work (errno %d)", errno);
    size_t tries = ((size_t)256 << 20) / size + 1000;   /* past the margin, whatever the size */
    for (size_t i = 0; i < tries && failures < 50; i++) {
        void *p = nodal_malloc(size);
        if (p)
            got += nodal_usable_size(p);
        else
            failures++;
    }
    EXPECT(failures > 0, "malloc(%zu) to fail under a 64 MiB address-space margin", size);
    EXPECT(nodal_memory_info_get(&mi) == 0, "nodal_memory_info_get to return 0");
    EXPECT(mi.allocated - before == got,
           "allocated to grow by the %zu usable bytes of the blocks malloc(%zu) returned, not by "
           "the %zu failed requests; it grew by %zu", got, size, failures, mi.allocated - before);
}

static void failed_allocations_do_not_count_in_allocated(void)
{
#ifdef ND_TEST_SANITIZER
    SKIP("the sanitizer's shadow memory does not fit an address-space limit");
#endif
    static struct nd_child c;
    size_t sizes[] = { 48, 3000, 100000, 1000000, 6000000 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        nd_run_forked(failed_allocations_child, &sizes[i], 120, &c);
        EXPECT(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0,
               "a child that runs out of address space with %zu-byte requests to find "
               "`allocated` exact; it %s: %s", sizes[i], nd_describe_status(c.status), c.err);
    }
}

/* Found by the fuzzer: a large block freed (or resized in place) by a
   thread whose first nodal call is that free (or realloc) stayed in
   `allocated` for good: the large paths count only in a thread that has a
   heap. (It is also why stress.asan.random_mixed_operations_... fails now
   and then: a worker's first operation can be another thread's block.) */
static void *free_in_fresh_thread(void *p)
{
    nodal_free(p);
    return NULL;
}

static void *shrink_in_fresh_thread(void *p)
{
    return nodal_realloc(p, (size_t)512 << 10);
}

static void blocks_freed_by_a_thread_that_never_allocated_leave_allocated(void)
{
    size_t sizes[] = { 100, 100000, (size_t)1 << 20, (size_t)8 << 20 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        nodal_memory_info mi;
        EXPECT(nodal_memory_info_get(&mi) == 0, "nodal_memory_info_get to return 0");
        size_t before = mi.allocated;
        void *p = nodal_malloc(sizes[i]);
        EXPECT(p != NULL, "nodal_malloc(%zu) to succeed", sizes[i]);
        pthread_t t;
        EXPECT(pthread_create(&t, NULL, free_in_fresh_thread, p) == 0, "pthread_create to work");
        pthread_join(t, NULL);
        EXPECT(nodal_memory_info_get(&mi) == 0, "nodal_memory_info_get to return 0");
        EXPECT(mi.allocated == before, "allocated to be back at %zu once a new thread freed the "
               "%zu-byte block; it is %zu", before, sizes[i], mi.allocated);
    }
    nodal_memory_info mi;
    EXPECT(nodal_memory_info_get(&mi) == 0, "nodal_memory_info_get to return 0");
    size_t before = mi.allocated;
    void *p = nodal_malloc((size_t)1 << 20), *q = NULL;
    EXPECT(p != NULL, "nodal_malloc(1 MiB) to succeed");
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, shrink_in_fresh_thread, p) == 0, "pthread_create to work");
    pthread_join(t, &q);
    EXPECT(q != NULL, "a new thread's realloc of a 1 MiB block to 512 KiB to succeed");
    nodal_free(q);
    EXPECT(nodal_memory_info_get(&mi) == 0, "nodal_memory_info_get to return 0");
    EXPECT(mi.allocated == before, "allocated to be back at %zu once a new thread shrank a 1 MiB "
           "block to 512 KiB and it was freed; it is %zu", before, mi.allocated);
}

/* ---- per tier ---------------------------------------------------------------- */

static const int tier_ids[N_TIERS] = { NODAL_TIER_LATENCY, NODAL_TIER_BANDWIDTH, NODAL_TIER_CAPACITY };
static const char *const tier_names[N_TIERS] = { "latency", "bandwidth", "capacity" };

/* STATS-SCHEMA: the entry of "tiers" named `name`. */
static const struct nd_json *tier_entry(const struct nd_json *root, const char *name)
{
    const struct nd_json *tiers = nd_json_get(root, "tiers");
    EXPECT(tiers && tiers->type == ND_JSON_ARRAY && tiers->count == N_TIERS,
           "the statistics JSON to have an array \"tiers\" of %d entries", N_TIERS);
    for (const struct nd_json *t = tiers->child; t; t = t->next) {
        const struct nd_json *n = nd_json_get(t, "name");
        if (n && n->type == ND_JSON_STRING && n->len == strlen(name) && memcmp(n->str, name, n->len) == 0)
            return t;
    }
    EXPECT(0, "the JSON's \"tiers\" to have an entry named \"%s\"", name);
    return NULL;
}

/* Tier calls of every form, tier t: n mallocs of sizes 1..n, n/10 callocs
   of 3 x 40 bytes, n/10 aligned blocks of 200 bytes at 64, and a large
   block; frees them. Returns the blocks' usable bytes (the blocks:
   *blocks). */
static size_t tier_workload(int t, int n, size_t *blocks)
{
    size_t bytes = 0, count = 0;
    for (int i = 1; i <= n; i++) {
        void *p = nodal_malloc_tier((size_t)i, tier_ids[t]);
        EXPECT(p != NULL, "nodal_malloc_tier(%d, %s) to succeed", i, tier_names[t]);
        bytes += nodal_malloc_usable_size(p);
        nodal_free(p);
        count++;
    }
    void *big = nodal_malloc_tier(300 * 1024, tier_ids[t]);
    EXPECT(big != NULL, "nodal_malloc_tier(300 KiB, %s) to succeed", tier_names[t]);
    bytes += nodal_malloc_usable_size(big);
    nodal_free(big);
    count++;
    for (int i = 0; i < n / 10; i++) {
        void *p = nodal_calloc_tier(3, 40, tier_ids[t]);
        void *q = nodal_aligned_alloc_tier(64, 200, tier_ids[t]);
        EXPECT(p != NULL && q != NULL, "nodal_calloc_tier and nodal_aligned_alloc_tier (%s) to succeed", tier_names[t]);
        bytes += nodal_malloc_usable_size(p) + nodal_malloc_usable_size(q);
        nodal_free(p);
        nodal_free(q);
        count += 2;
    }
    *blocks = count;
    return bytes;
}

static void *tier_workload_thread(void *arg)
{
    size_t *out = arg;
    out[1] = tier_workload(NODAL_TIER_CAPACITY, 500, &out[0]);
    return NULL;
}

/* The sum of a member over a tier's per-CPU-node entries. */
static double tier_nodes_sum(const struct nd_json *tier, const char *key)
{
    const struct nd_json *nodes = nd_json_get(tier, "nodes");
    EXPECT(nodes && nodes->type == ND_JSON_ARRAY && nodes->count >= 1, "a tier entry to list its CPU nodes");
    double sum = 0;
    for (const struct nd_json *n = nodes->child; n; n = n->next)
        sum += member_number(n, key, "a tier's node entry");
    return sum;
}

/* STATS-SCHEMA: "requests" and "bytes" per tier count every block a tier
   call returned and its usable bytes, exactly (fast and slow paths, every
   form), in this thread and in a thread that has exited since; they are
   the sums of the tier's per-CPU-node entries, which name, for every CPU
   node, the node nodal_tier_node gives; nodal_tier_stats_get says the
   same. */
static void stats_count_tier_calls_per_tier_exactly(void)
{
    double req0[N_TIERS], bytes0[N_TIERS];
    const struct nd_json *a = snapshot(json_a, pool_a);
    for (int t = 0; t < N_TIERS; t++) {
        const struct nd_json *e = tier_entry(a, tier_names[t]);
        req0[t] = member_number(e, "requests", "a tier entry");
        bytes0[t] = member_number(e, "bytes", "a tier entry");
    }
    size_t blocks[N_TIERS], bytes[N_TIERS];
    for (int t = 0; t < N_TIERS; t++)
        bytes[t] = tier_workload(t, 1000 * (t + 1), &blocks[t]);
    size_t other[2];
    pthread_t th;
    EXPECT(pthread_create(&th, NULL, tier_workload_thread, other) == 0, "pthread_create to work");
    pthread_join(th, NULL);
    blocks[2] += other[0];
    bytes[2] += other[1];
    const struct nd_json *b = snapshot(json_b, pool_b);
    for (int t = 0; t < N_TIERS; t++) {
        const struct nd_json *e = tier_entry(b, tier_names[t]);
        double dr = member_number(e, "requests", "a tier entry") - req0[t];
        double db = member_number(e, "bytes", "a tier entry") - bytes0[t];
        EXPECT(dr == (double)blocks[t], "tier %s: %zu more requests (tier calls that returned a block), "
               "the statistics count %.0f", tier_names[t], blocks[t], dr);
        EXPECT(db == (double)bytes[t], "tier %s: %zu more usable bytes, the statistics count %.0f",
               tier_names[t], bytes[t], db);
        static const char *const keys[] = { "requests", "bytes", "fallbacks", "cap_refusals" };
        for (int k = 0; k < 4; k++) {
            double sum = tier_nodes_sum(e, keys[k]), whole = member_number(e, keys[k], "a tier entry");
            EXPECT(sum == whole, "tier %s: its %s (%.0f) to be the sum of its CPU nodes' (%.0f)", tier_names[t],
                   keys[k], whole, sum);
        }
        nodal_tier_stats ts;
        EXPECT(nodal_tier_stats_get(tier_ids[t], -1, &ts) == 0, "nodal_tier_stats_get(%s, -1) to succeed",
               tier_names[t]);
        EXPECT((double)ts.requests == member_number(e, "requests", "a tier entry") &&
               (double)ts.bytes == member_number(e, "bytes", "a tier entry") && ts.node == -1,
               "nodal_tier_stats_get(%s) to give the JSON's requests and bytes (%llu, %llu)", tier_names[t],
               ts.requests, ts.bytes);
        const struct nd_json *nodes = nd_json_get(e, "nodes");
        EXPECT(nodes && nodes->type == ND_JSON_ARRAY && nodes->count >= 1,
               "tier %s to list the node it resolves to from at least one CPU node", tier_names[t]);
        for (const struct nd_json *n = nodes->child; n; n = n->next) {
            int from = (int)member_number(n, "from", "a tier's node entry");
            int to = (int)member_number(n, "node", "a tier's node entry");
            EXPECT(to == nodal_tier_node(tier_ids[t], from), "tier %s from node %d: the statistics say node %d, "
                   "nodal_tier_node says %d", tier_names[t], from, to, nodal_tier_node(tier_ids[t], from));
            EXPECT(nodal_tier_stats_get(tier_ids[t], from, &ts) == 0 && ts.node == to &&
                   (double)ts.requests == member_number(n, "requests", "a tier's node entry"),
                   "nodal_tier_stats_get(%s, %d) to give the node entry's node and requests", tier_names[t], from);
        }
    }
    /* The text report's tier table: one row per tier, its columns keys of
       the JSON's tier entries. */
    static char text[1 << 16];
    print_report(NULL, text, sizeof text);
    char *head = strstr(text, "\n         tier ");
    EXPECT(head != NULL, "the text report to have a tier table headed \"tier ...\", got \"%.600s\"", text);
    for (int t = 0; t < N_TIERS; t++) {
        char row[32];
        snprintf(row, sizeof row, "\n  %11s ", tier_names[t]);
        EXPECT(strstr(head, row) != NULL, "the tier table to have a row for %s", tier_names[t]);
    }
    char *end = strchr(head + 1, '\n');
    *end = '\0';
    int cols = 0;
    const struct nd_json *e = tier_entry(b, "latency");
    for (char *t = strtok(head + 1, " "); t; t = strtok(NULL, " ")) {
        if (strcmp(t, "tier") == 0)
            break;
    }
    for (char *t = strtok(NULL, " "); t && strcmp(t, "node") != 0; t = strtok(NULL, " ")) {
        EXPECT(nd_json_get(e, t) != NULL, "the text report's tier column \"%s\" to be a key of a JSON tier", t);
        cols++;
    }
    EXPECT(cols >= 6, "the tier table to have at least 6 columns, found %d", cols);
}

struct tier_racer {
    int tier;
    size_t blocks, bytes;
};

static int tier_racers_done;

static void *tier_racer_thread(void *arg)
{
    struct tier_racer *r = arg;
    r->bytes = tier_workload(r->tier, 3000, &r->blocks);
    __atomic_add_fetch(&tier_racers_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Reports taken while other threads make tier calls (and exit) read the
   counts those threads are writing: once the threads are gone the counts
   are exact, whatever the reports saw (and, under ThreadSanitizer, without
   a race reported). */
static void stats_count_tier_calls_exactly_while_reports_run(void)
{
    enum { THREADS = 4 };
    nodal_tier_stats before[N_TIERS], after;
    for (int t = 0; t < N_TIERS; t++)
        EXPECT(nodal_tier_stats_get(tier_ids[t], -1, &before[t]) == 0, "nodal_tier_stats_get to succeed");
    struct tier_racer r[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        r[i].tier = i % N_TIERS;
        EXPECT(pthread_create(&th[i], NULL, tier_racer_thread, &r[i]) == 0, "pthread_create to work");
    }
    int reports = 0;
    for (int k = 0; k < 200 || __atomic_load_n(&tier_racers_done, __ATOMIC_ACQUIRE) < THREADS; k++, reports++) {
        EXPECT(nodal_tier_stats_get(tier_ids[k % N_TIERS], k % 2 ? -1 : nodal_current_node(), &after) == 0,
               "nodal_tier_stats_get to succeed while tier calls run");
        if (k % 20 == 0)
            nodal_stats_json(json_a, JSON_CAP);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    printf("%d reports while the threads ran\n", reports);
    for (int t = 0; t < N_TIERS; t++) {
        unsigned long long blocks = 0, bytes = 0;
        for (int i = 0; i < THREADS; i++)
            if (r[i].tier == t)
                blocks += r[i].blocks, bytes += r[i].bytes;
        EXPECT(nodal_tier_stats_get(tier_ids[t], -1, &after) == 0, "nodal_tier_stats_get to succeed");
        EXPECT(after.requests - before[t].requests == blocks && after.bytes - before[t].bytes == bytes,
               "tier %s: the threads got %llu blocks (%llu bytes), the statistics grew by %llu (%llu)",
               tier_names[t], blocks, bytes, after.requests - before[t].requests, after.bytes - before[t].bytes);
    }
}

/* STATS-SCHEMA: "cap_bytes" per tier is the node-bound memory the node
   entries show ("bound_mapped") on the nodes the tier names first, and per
   CPU node on the node it names from there. */
static void stats_tier_cap_bytes_are_the_bound_memory_of_its_nodes(void)
{
    void *keep[N_TIERS];
    for (int t = 0; t < N_TIERS; t++) {
        keep[t] = nodal_malloc_tier(300 * 1024, tier_ids[t]);   /* a node-bound segment at least */
        EXPECT(keep[t] != NULL, "nodal_malloc_tier(300 KiB, %s) to succeed", tier_names[t]);
    }
    const struct nd_json *root = snapshot(json_a, pool_a);
    const struct nd_json *nodes = nd_json_get(root, "nodes");
    EXPECT(nodes && nodes->type == ND_JSON_ARRAY, "the JSON to have its \"nodes\"");
    double bound[NODAL_MAX_NODES] = { 0 };
    for (const struct nd_json *n = nodes->child; n; n = n->next)
        bound[(int)member_number(n, "id", "a node entry")] = member_number(n, "bound_mapped", "a node entry");
    for (int t = 0; t < N_TIERS; t++) {
        const struct nd_json *e = tier_entry(root, tier_names[t]);
        int named[NODAL_MAX_NODES] = { 0 };
        double want = 0;
        for (const struct nd_json *n = nd_json_get(e, "nodes")->child; n; n = n->next) {
            int to = (int)member_number(n, "node", "a tier's node entry");
            EXPECT(member_number(n, "cap_bytes", "a tier's node entry") == bound[to],
                   "tier %s from node %d: cap_bytes to be node %d's bound_mapped (%.0f)", tier_names[t],
                   (int)member_number(n, "from", "a tier's node entry"), to, bound[to]);
            if (!named[to]++)
                want += bound[to];
        }
        double got = member_number(e, "cap_bytes", "a tier entry");
        EXPECT(got == want && got >= 4 << 20, "tier %s: cap_bytes %.0f to be its nodes' bound_mapped, %.0f, "
               "a segment at least", tier_names[t], got, want);
        EXPECT(member_number(e, "cap", "a tier entry") == 0, "tier %s: no cap set, \"cap\" 0", tier_names[t]);
    }
    for (int t = 0; t < N_TIERS; t++)
        nodal_free(keep[t]);
}

/* Not a property: under tier_bandwidth_max=4K, a strict bandwidth-tier call
   and a preferred one (refused: their nodes are over the cap), then the
   JSON on stdout. */
static void emit_stats_after_tier_cap(void)
{
    void *p = nodal_malloc_tier(1000, NODAL_TIER_BANDWIDTH);
    void *q = nodal_malloc_tier(1000, NODAL_TIER_BANDWIDTH | NODAL_TIER_PREFERRED);
    printf("%d %d\n", p != NULL, q != NULL);
    size_t n = nodal_stats_json(json_a, JSON_CAP);
    fwrite(json_a, 1, n, stdout);
}

/* STATS-SCHEMA: "cap_refusals" per tier counts the refusals of the capped
   tier only; "fallbacks" a preferred call served by a later node. */
static void stats_count_cap_refusals_of_the_capped_tier(void)
{
    static struct nd_child c;
    nd_run_case("emit_stats_after_tier_cap", "tier_bandwidth_max=4K", NULL, 60, &c);
    int strict_ok = -1, preferred_ok = -1;
    EXPECT(sscanf(c.out, "%d %d", &strict_ok, &preferred_ok) == 2, "the child to print two results first: %.100s", c.out);
    const char *json = strchr(c.out, '\n');
    EXPECT(json != NULL, "the child to print its JSON after its results");
    struct nd_json_parser ps;
    const struct nd_json *root = nd_json_parse(&ps, json + 1, strlen(json + 1), pool_a, POOL_CAP);
    EXPECT(root != NULL, "the child's JSON to parse: %s", ps.error);
    EXPECT(strict_ok == 0, "a strict bandwidth-tier call over a 4 KiB cap to fail");
    const struct nd_json *bw = tier_entry(root, "bandwidth"), *lat = tier_entry(root, "latency");
    double refusals = member_number(bw, "cap_refusals", "a tier entry");
    double fallbacks = member_number(bw, "fallbacks", "a tier entry");
    EXPECT(refusals >= 1, "the bandwidth tier to count its cap refusals, it counts %.0f", refusals);
    EXPECT(member_number(lat, "cap_refusals", "a tier entry") == 0 &&
           member_number(tier_entry(root, "capacity"), "cap_refusals", "a tier entry") == 0,
           "the tiers without a cap to count no cap refusal");
    EXPECT(fallbacks == (double)preferred_ok, "the bandwidth tier's fallbacks (%.0f) to count the preferred call "
           "served by a later node (%d)", fallbacks, preferred_ok);
    const struct nd_json *totals = nd_json_get(root, "totals");
    EXPECT(totals && member_number(totals, "tier_cap_refusals", "the totals") >= refusals,
           "the process's tier_cap_refusals to include the bandwidth tier's %.0f", refusals);
    EXPECT(member_number(bw, "requests", "a tier entry") == (double)preferred_ok,
           "the bandwidth tier's requests to count only the call that returned a block");
    EXPECT(member_number(bw, "cap", "a tier entry") == 4096, "the bandwidth tier's \"cap\" to be 4096");
    EXPECT(tier_nodes_sum(bw, "cap_refusals") == refusals && tier_nodes_sum(bw, "fallbacks") == fallbacks,
           "the bandwidth tier's refusals and fallbacks to be the sums of its CPU nodes'");
}

static const struct nd_case cases[] = {
    ND_CASE(stats_count_exactly_n_requests_and_frees_in_the_class_of_s),
    ND_CASE(stats_json_is_one_valid_object_with_the_documented_keys),
    ND_CASE(stats_json_counts_the_lock_waits_of_each_row_of_the_lock_table),
    ND_CASE(stats_json_reports_its_length_like_snprintf),
    ND_CASE(stats_count_frees_made_by_other_threads_exactly),
    ND_CASE(stats_print_brief_is_one_summary_line_with_requests),
    ND_CASE(stats_reports_name_their_pid_and_program),
    ND_CASE(stats_names_agree_across_brief_text_and_json),
    ND_CASE(stats_utilization_counts_cached_blocks_as_available),
    ND_CASE(stats_hint_names_the_option_to_change),
    ND_CASE(stats_file_gets_the_exit_report_named_by_pid),
    ND_CASE(allocate_a_little),
    ND_CASE(failed_allocations_do_not_count_in_allocated),
    ND_CASE(blocks_freed_by_a_thread_that_never_allocated_leave_allocated),
    ND_CASE(emit_stats_json),
    ND_CASE(emit_stats_after_many_fills),
    ND_CASE(stats_count_tier_calls_per_tier_exactly),
    ND_CASE(stats_count_cap_refusals_of_the_capped_tier),
    ND_CASE(stats_tier_cap_bytes_are_the_bound_memory_of_its_nodes),
    ND_CASE(stats_count_tier_calls_exactly_while_reports_run),
    ND_CASE(emit_stats_after_tier_cap),
};
ND_MAIN(cases)
