/*
 * follow.c - unit tests of follow_thread's look budget (thread/tcache.c):
 * where a thread can change nodes, a plain cache's bins take a slow path
 * (which looks at the CPU's node) at least every ND_LOOK_BYTES of their
 * class's requests, every ND_LOOK_MIN for the largest classes; nowhere
 * else, and never for a bound cache. A tick that ran out for a look only
 * takes the short way (nd_tcache_look_due, nd_tcache_look_pop), which
 * counts requests as exactly as the slow path does; a watched cache (its
 * thread moved lately: nd_tcache_watch) looks at every request. Topologies are read from fixture
 * sysfs trees (tests/unit/fixtures/); linked against the debug core; every
 * case runs in a child of its own.
 */
#include "check.h"
#include "class.h"
#include "nodal.h"
#include "options.h"
#include "tcache.h"
#include "topo.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#ifndef ND_FIXTURES
#error "ND_FIXTURES (the fixture directory) must be defined"
#endif

static uint32_t budget_of(unsigned c)
{
    uint32_t n = ND_LOOK_BYTES / nd_class_size[c];
    return n < ND_LOOK_MIN ? ND_LOOK_MIN : n > ND_TICK_PERIOD ? ND_TICK_PERIOD : n;
}

/* Every bin of tc unarmed until its class's first request (its cold part
   unwritten: tcache.c, nd_bin_info_init), which arms it with the look
   budget (budget) or the plain period, less that request. */
static void expect_armed(nd_tcache *tc, bool budget, const char *what)
{
    for (unsigned c = 0; c < ND_CLASS_COUNT; c++) {
        EXPECT(tc->bins[c].tick == 0 && nd_bin_info_of(tc, c)->armed == 0,
               "%s: class %u (%u B) unarmed before its first request, got tick %lld, armed %u", what, c,
               (unsigned)nd_class_size[c], (long long)tc->bins[c].tick, nd_bin_info_of(tc, c)->armed);
        nd_tcache_count_request(tc, c);
        uint32_t want = budget ? budget_of(c) : ND_TICK_PERIOD;
        if (want > ND_TICK_PERIOD - 1)   /* the period's rest */
            want = ND_TICK_PERIOD - 1;
        EXPECT(tc->bins[c].tick == (int64_t)want && nd_bin_info_of(tc, c)->armed == want && nd_tcache_requests(tc) == c + 1,
               "%s: class %u (%u B) armed with %u requests after its first, got tick %lld, armed %u (%llu counted)",
               what, c, (unsigned)nd_class_size[c], want, (long long)tc->bins[c].tick, nd_bin_info_of(tc, c)->armed,
               (unsigned long long)nd_tcache_requests(tc));
    }
}

/* Reads the topology of `tree`, sets follow_thread, arms the budget, and
   checks a new plain cache and a new bound one. */
static void check_topology(const char *tree, long follow, bool budget, const char *what)
{
    nodal_free(nodal_malloc(1));   /* the process is set up (metadata, options) */
    nd_opt_values[ND_OPT_follow_thread] = follow;
    nd_topo_read(tree);
    nd_tcache_process_init();
    nd_tcache *plain = nd_tcache_create(1, 0, false, false);
    nd_tcache *bound = nd_tcache_create(1, 0, true, false);
    EXPECT(plain != NULL && bound != NULL, "two caches to be made");
    char buf[160];
    snprintf(buf, sizeof buf, "%s, a plain cache", what);
    expect_armed(plain, budget, buf);
    snprintf(buf, sizeof buf, "%s, a bound cache", what);
    expect_armed(bound, false, buf);
    nd_tcache_destroy(plain);
    nd_tcache_destroy(bound);
}

/* Two nodes with CPUs (numa-vm's default machine): the budget. */
static void plain_caches_look_within_their_budget_where_threads_can_change_nodes(void)
{
    check_topology(ND_FIXTURES "/nohmat4", 1, true, "CPUs on nodes 0 and 1");
    /* The smallest classes keep the period, the largest look every
       ND_LOOK_MIN requests. */
    EXPECT(budget_of(0) == ND_TICK_PERIOD && budget_of(ND_CLASS_COUNT - 1) == ND_LOOK_MIN,
           "class 0 at %u requests and the last class at %u, got %u and %u", ND_TICK_PERIOD, ND_LOOK_MIN,
           budget_of(0), budget_of(ND_CLASS_COUNT - 1));
}

/* CPUs on one node only (the others memory-only), or follow_thread=0: a
   thread cannot move or is not followed; every bin keeps the period. */
static void no_budget_where_cpus_are_on_one_node(void)
{
    check_topology(ND_FIXTURES "/cpus1", 1, false, "CPUs on node 0 alone");
}

static void no_budget_under_follow_thread_0(void)
{
    check_topology(ND_FIXTURES "/nohmat4", 0, false, "follow_thread=0");
}

/* A plain cache on numa-vm's machine (CPUs on nodes 0 and 1) with
   follow_thread on: its bins have the look budget. */
static nd_tcache *budgeted_cache(void)
{
    nodal_free(nodal_malloc(1));
    nd_opt_values[ND_OPT_follow_thread] = 1;
    nd_topo_read(ND_FIXTURES "/nohmat4");
    nd_tcache_process_init();
    nd_tcache *tc = nd_tcache_create(1, 0, false, false);
    EXPECT(tc != NULL, "a cache to be made");
    return tc;
}

/* A roll-over of a budgeted bin re-arms it with the budget, and the
   request count stays exact (nreq + armed - tick). */
static void a_budgeted_bin_rolls_over_with_its_budget_and_counts_exactly(void)
{
    nd_tcache *tc = budgeted_cache();
    unsigned c = ND_CLASS_COUNT - 1;
    uint32_t n = budget_of(c);
    EXPECT(n >= 2, "the last class's budget at least 2 requests, got %u", n);
    for (uint32_t i = 0; i < 3 * n + 2; i++)   /* (the first arms it: tcache.c, nd_bin_info_init) */
        nd_tcache_count_request(tc, c);
    uint64_t counted = nd_bin_info_of(tc, c)->nreq + nd_bin_info_of(tc, c)->armed - (uint64_t)tc->bins[c].tick;
    EXPECT(counted == 3 * (uint64_t)n + 2, "%u requests counted, got %llu", 3 * n + 2, (unsigned long long)counted);
    EXPECT(nd_bin_info_of(tc, c)->armed == n && tc->bins[c].tick == (int64_t)(n - 1),
           "the bin re-armed with %u requests and 1 of them taken, got armed %u, tick %lld", n, nd_bin_info_of(tc, c)->armed,
           (long long)tc->bins[c].tick);
    nd_tcache_destroy(tc);
}

/* The requests of class c that tc counted (nreq + armed - tick). */
static uint64_t counted_of(const nd_tcache *tc, unsigned c)
{
    return nd_bin_info_of(tc, c)->nreq + nd_bin_info_of(tc, c)->armed - (uint64_t)tc->bins[c].tick;
}

/* `count` requests of class c as malloc's fast path makes them (a block
   from the bin while its tick lasts), with the short way where the tick ran
   out for a look only (counted in *looks) and the slow path's count and
   refill otherwise (in *whole); each block goes back at once, so the bin
   never runs dry after its first fill. */
static void make_requests(nd_tcache *tc, unsigned c, uint32_t count, uint32_t *looks, uint32_t *whole)
{
    for (uint32_t i = 0; i < count; i++) {
        nd_bin *b = &tc->bins[c];
        void *p;
        if (b->cur == b->empty || --b->tick == 0) {
            if (nd_tcache_tick_out(tc, c) && nd_tcache_look_due(tc, c)) {
                (*looks)++;
                p = nd_tcache_look_pop(tc, c);
            } else {
                (*whole)++;
                nd_tcache_count_request(tc, c);
                p = nd_tcache_alloc(tc, c);
            }
        } else {
            p = *b->cur++;
        }
        EXPECT(p != NULL, "request %u got a block", i);
        nd_tcache_push(tc, c, p);
    }
}

/* Requests of one class as malloc makes them: every request is counted
   once, the short way takes every look but the maintenance roll-overs, and
   each request gets a block of the bin. */
static void the_short_way_counts_each_look_exactly_and_keeps_the_roll_overs(void)
{
    nd_tcache *tc = budgeted_cache();
    unsigned c = nd_class_of(1024);
    uint32_t n = budget_of(c);
    EXPECT(n > 1 && n < ND_TICK_PERIOD, "1 KiB blocks budgeted (1 < %u < %u)", n, ND_TICK_PERIOD);
    const uint32_t total = 4 * ND_TICK_PERIOD + 3;
    uint32_t looks = 0, whole = 0;
    make_requests(tc, c, total, &looks, &whole);
    uint64_t counted = counted_of(tc, c);
    EXPECT(counted == total, "%u requests counted, got %llu", total, (unsigned long long)counted);
    /* Each period of ND_TICK_PERIOD requests ends at one roll-over (the
       whole slow path); the other looks of the period take the short way.
       The first request fills the empty bin. */
    uint32_t rolls = total / ND_TICK_PERIOD;
    EXPECT(whole == rolls + 1, "%u roll-overs and the first fill on the slow path, got %u", rolls, whole);
    uint32_t want = rolls * ((ND_TICK_PERIOD + n - 1) / n - 1);
    EXPECT(looks >= want, "at least %u looks the short way, got %u", want, looks);
    nd_tcache_destroy(tc);
}

/* follow_thread's watch (a thread that moved lately): every bin is
   re-armed at once for one request, its requests so far still counted;
   then every request looks (the short way, but for the maintenance
   roll-overs), so a move is seen at the first malloc after it; off, the
   next look arms the bin with its budget again. */
static void a_watched_cache_looks_at_every_request_and_counts_exactly(void)
{
    nd_tcache *tc = budgeted_cache();
    unsigned c = nd_class_of(64), big = ND_CLASS_COUNT - 1;
    uint32_t n = budget_of(c), looks = 0, whole = 0;
    EXPECT(n > 8, "64-byte blocks budgeted (%u requests)", n);
    make_requests(tc, c, n + n / 2, &looks, &whole);   /* the tick half way to its next look */
    EXPECT(!nd_tcache_is_watched(tc), "a new cache not watched");
    nd_tcache_watch(tc, true);
    EXPECT(nd_tcache_is_watched(tc) && nd_tcache_is_valid(tc), "the cache watched, and valid");
    EXPECT(counted_of(tc, c) == n + n / 2, "%u requests still counted, got %llu", n + n / 2,
           (unsigned long long)counted_of(tc, c));
    for (unsigned k = 0; k < ND_CLASS_COUNT; k++)   /* (a class not asked for yet: unarmed, its first request arms it) */
        EXPECT(k == c ? tc->bins[k].tick == 1 && nd_bin_info_of(tc, k)->armed == 1 : tc->bins[k].tick == 0 && nd_bin_info_of(tc, k)->armed == 0,
               "class %u armed for 1 request (unarmed if never asked for), got tick %lld, armed %u",
               k, (long long)tc->bins[k].tick, nd_bin_info_of(tc, k)->armed);
    const uint32_t total = 2 * ND_TICK_PERIOD + 5;
    looks = whole = 0;
    make_requests(tc, c, total, &looks, &whole);
    EXPECT(counted_of(tc, c) == n + n / 2 + total, "%u requests counted, got %llu", n + n / 2 + total,
           (unsigned long long)counted_of(tc, c));
    EXPECT(nd_tcache_requests(tc) == n + n / 2 + total, "the cache's requests, all of one class: %u, got %llu",
           n + n / 2 + total, (unsigned long long)nd_tcache_requests(tc));
    uint32_t before = n + n / 2, rolls = (before + total) / ND_TICK_PERIOD - before / ND_TICK_PERIOD;
    EXPECT(whole == rolls && looks == total - whole, "every request of %u looks the short way but %u roll-overs, "
           "got %u looks and %u whole slow paths", total, rolls, looks, whole);
    nd_tcache_watch(tc, false);
    EXPECT(!nd_tcache_is_watched(tc) && nd_tcache_is_valid(tc), "the watch off, the cache valid");
    make_requests(tc, c, 1, &looks, &whole);
    EXPECT(nd_bin_info_of(tc, c)->armed == n || nd_bin_info_of(tc, c)->armed == nd_bin_info_of(tc, c)->period_left,
           "the next look armed the bin with its budget (%u), or the period's rest, got %u", n, nd_bin_info_of(tc, c)->armed);
    EXPECT(tc->bins[big].tick == 0, "a class not asked for stays unarmed until its first request, got %lld",
           (long long)tc->bins[big].tick);
    unsigned other = nd_class_of(256);
    nd_tcache_watch(tc, true);
    make_requests(tc, other, 1, &looks, &whole);
    EXPECT(tc->bins[other].tick == 1 && nd_bin_info_of(tc, other)->armed == 1,
           "a watched cache's class first asked for armed for 1 request, got tick %lld, armed %u",
           (long long)tc->bins[other].tick, nd_bin_info_of(tc, other)->armed);
    nd_tcache_watch(tc, false);
    nd_tcache_destroy(tc);
}

/* A file of a fixture tree under root, made with its directories. */
static void put_file(const char *root, const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *s = path + strlen(root) + 1; (s = strchr(s, '/')) != NULL; s++) {
        *s = 0;
        mkdir(path, 0700);
        *s = '/';
    }
    FILE *f = fopen(path, "w");
    EXPECT(f != NULL && fputs(text, f) >= 0 && fclose(f) == 0, "%s to be written", path);
}

/* The slow path's look at the CPU's node is skipped where one node serves
   every CPU's local memory (topo.h: one_mem_node): only there. An unknown
   CPU, or one the table does not hold, is on the first node with memory,
   so CPUs all on another node than that one keep the look. */
static void one_mem_node_names_the_node_only_where_every_cpu_takes_its_memory_there(void)
{
    static const struct { const char *tree; int want; } cases[] = {
        {"cpus1", 0},     /* CPUs on node 0, nodes 1-3 memory only */
        {"nonode3", 0},   /* no node directory: one node */
        {"nohmat4", -1},  /* CPUs on nodes 0 and 1 */
        {"hmat6", -1},
    };
    nodal_free(nodal_malloc(1));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char tree[256];
        snprintf(tree, sizeof tree, "%s/%s", ND_FIXTURES, cases[i].tree);
        nd_topo_read(tree);
        EXPECT(nd_topo.one_mem_node == cases[i].want, "%s: one_mem_node %d, got %d", cases[i].tree, cases[i].want,
               nd_topo.one_mem_node);
    }
    char root[] = "/tmp/nd-follow-XXXXXX";
    EXPECT(mkdtemp(root) != NULL, "a temporary directory");
    put_file(root, "devices/system/cpu/possible", "0-1\n");
    put_file(root, "devices/system/node/online", "0-1\n");
    put_file(root, "devices/system/node/has_memory", "0-1\n");
    put_file(root, "devices/system/node/node0/cpulist", "\n");
    put_file(root, "devices/system/node/node1/cpulist", "0-1\n");
    nd_topo_read(root);
    EXPECT(nd_topo.mem_ids[0] == 0 && nd_topo_cpu_node(1) == 1, "CPUs on node 1, memory on 0 and 1");
    EXPECT(nd_topo.one_mem_node == -1, "CPUs on node 1 alone, node 0 first: one_mem_node -1, got %d",
           nd_topo.one_mem_node);
    put_file(root, "devices/system/node/node0/cpulist", "0-1\n");
    put_file(root, "devices/system/node/node1/cpulist", "\n");
    nd_topo_read(root);
    EXPECT(nd_topo.one_mem_node == 0, "CPUs on node 0 alone: one_mem_node 0, got %d", nd_topo.one_mem_node);
    static const char *const made[] = {
        "devices/system/cpu/possible", "devices/system/cpu", "devices/system/node/node0/cpulist",
        "devices/system/node/node0", "devices/system/node/node1/cpulist", "devices/system/node/node1",
        "devices/system/node/online", "devices/system/node/has_memory", "devices/system/node", "devices/system",
        "devices", "",
    };
    for (size_t i = 0; i < sizeof made / sizeof made[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", root, made[i]);
        remove(path);
    }
}

static const struct nd_case cases[] = {
    ND_CASE(one_mem_node_names_the_node_only_where_every_cpu_takes_its_memory_there),
    ND_CASE(plain_caches_look_within_their_budget_where_threads_can_change_nodes),
    ND_CASE(no_budget_where_cpus_are_on_one_node),
    ND_CASE(no_budget_under_follow_thread_0),
    ND_CASE(a_budgeted_bin_rolls_over_with_its_budget_and_counts_exactly),
    ND_CASE(the_short_way_counts_each_look_exactly_and_keeps_the_roll_overs),
    ND_CASE(a_watched_cache_looks_at_every_request_and_counts_exactly),
};
ND_MAIN(cases)
