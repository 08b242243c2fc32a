/*
 * header_api.cpp - the contract of nodal.hpp on any nodal library: the
 * allocator rules (equality, rebind, propagation), the failure semantics
 * (std::invalid_argument for a node that is not there, std::bad_alloc after
 * the new-handler loop, nullptr from the nothrow forms), every allocation
 * form of on_node<K> allocating from nodal and freeing back (nodal's
 * statistics), new[] of a node-typed class getting the byte count with the
 * array cookie, make_on_node's ownership, the pmr resource, and containers
 * shared by threads and destroyed by another one.
 *
 * Linked with libnodal_prefix.a (the program's operator new stays the
 * system's: the header needs nothing else), and in the sanitizer builds
 * with nodal_prefix_san. Placement itself is checked through the kernel by
 * the programs stl_containers_stay_on_their_node and friends (tests/cpp/),
 * here and in the 4-node VM.
 *
 * Knobs: --max-n=N (longest array, default 10000), --threads=T, --ops=N.
 */
#include <nodal.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory_resource>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cpp_check.hpp"

namespace {

const std::size_t impossible = std::size_t(1) << 62;

/* ---- allocator rules ------------------------------------------------------- */
template <class A>
using traits = std::allocator_traits<A>;
using ct0 = nodal::node_allocator<int, 0>;
using ct1 = nodal::node_allocator<int, 1>;
using rt = nodal::node_allocator<int>;

static_assert(traits<ct0>::is_always_equal::value, "compile-time allocators are always equal");
static_assert(!traits<rt>::is_always_equal::value, "run-time allocators hold state");
static_assert(std::is_same_v<traits<ct0>::rebind_alloc<long>, nodal::node_allocator<long, 0>>,
              "rebind keeps the compile-time node");
static_assert(std::is_same_v<traits<rt>::rebind_alloc<long>, nodal::node_allocator<long>>,
              "rebind keeps a run-time allocator run-time");
static_assert(!traits<rt>::propagate_on_container_copy_assignment::value &&
                  !traits<rt>::propagate_on_container_move_assignment::value &&
                  traits<rt>::propagate_on_container_swap::value,
              "a container keeps its node on assignment; swap exchanges the allocators");
static_assert(std::is_nothrow_copy_constructible_v<rt> && std::is_nothrow_move_constructible_v<rt>,
              "allocators copy without throwing");
static_assert(ct0::node_id() == 0 && ct1::node_id() == 1, "node_id() is the template's node");

void allocator_rules_hold_for_compile_time_and_runtime_nodes()
{
    EXPECT((ct0() == ct0() && ct0() == nodal::node_allocator<long, 0>()),
           "compile-time allocators of node 0 to compare equal, rebound ones too");
    EXPECT(ct0() != ct1(), "allocators of nodes 0 and 1 to compare unequal");
    rt a(0);
    rt b = a;
    nodal::node_allocator<double> c(a);
    EXPECT(a == b && b == a && rt(c) == a && c == a,
           "a run-time allocator to equal its copies and rebound copies");
    EXPECT(a.node_id() == 0 && c.node_id() == 0, "copies to keep node 0");
    EXPECT(rt(ct0()) == a && a == ct0() && a != ct1(),
           "run-time and compile-time allocators to compare by node");
    int *p = a.allocate(1000);
    EXPECT(p != nullptr && nodal_usable_size(p) >= 1000 * sizeof(int),
           "allocate(1000) to return a nodal block of 4000 bytes");
    for (int i = 0; i < 1000; i++)
        p[i] = i;
    b.deallocate(p, 1000);   // an equal allocator frees it
    EXPECT(a.max_size() == std::size_t(-1) / sizeof(int), "max_size() to be SIZE_MAX / sizeof(int)");
    bool threw = false;
    try {
        (void)a.allocate(a.max_size() + 1);
    } catch (const std::bad_array_new_length &) {
        threw = true;
    }
    EXPECT(threw, "allocate(max_size() + 1) to throw std::bad_array_new_length");
}

/* ---- failure -------------------------------------------------------------- */
struct item : nodal::on_node<0> {
    long v[5] = { 1, 2, 3, 4, 5 };
};
struct absent_item : nodal::on_node<63> {
    long v = 7;
};

/* 0 returned, 1 std::bad_alloc, 2 std::invalid_argument, 3 something else */
template <class F>
int outcome(F f)
{
    try {
        f();
        return 0;
    } catch (const std::invalid_argument &) {
        return 2;
    } catch (const std::bad_alloc &) {
        return 1;
    } catch (...) {
        return 3;
    }
}

/* A node id in [0, 64) the kernel does not list with memory, or -1. */
int absent_node()
{
    char buf[4096] = { 0 };
    FILE *f = std::fopen("/sys/devices/system/node/has_memory", "r");
    if (f) {
        size_t n = std::fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        std::fclose(f);
    }
    bool has[64] = { false };
    for (char *s = buf; *s;) {   // "0-1,3"
        char *end;
        long lo = std::strtol(s, &end, 10), hi = lo;
        if (end == s)
            break;
        if (*end == '-')
            hi = std::strtol(end + 1, &end, 10);
        for (long i = lo; i <= hi && i < 64; i++)
            if (i >= 0)
                has[i] = true;
        s = *end ? end + 1 : end;
    }
    for (int i = 63; i >= 0; i--)
        if (!has[i])
            return i;
    return -1;
}

void invalid_nodes_throw_invalid_argument_and_nothrow_forms_return_null()
{
    int missing = absent_node();
    const int bad[] = { -1, NODAL_MAX_NODES, 1000, missing };
    for (int i = 0; i < 4; i++) {
        int k = bad[i];
        if (i == 3 && k < 0)
            continue;   // no absent id below 64 on this machine
        int r = outcome([k] { rt a(k); });
        EXPECT(r == 2, "node_allocator<int>(%d) to throw std::invalid_argument, outcome %d", k, r);
        r = outcome([k] { nodal::make_on_node<item>(k); });
        EXPECT(r == 2, "make_on_node<item>(%d) to throw std::invalid_argument, outcome %d", k, r);
        r = outcome([k] { delete new (nodal::node(k)) item; });
        EXPECT(r == 2, "new (nodal::node(%d)) item to throw std::invalid_argument, outcome %d", k, r);
        r = outcome([k] { nodal::destroy(new (nodal::node(k)) long(1)); });
        EXPECT(r == 2, "new (nodal::node(%d)) long to throw std::invalid_argument, outcome %d", k, r);
        r = outcome([k] { (void)nodal::resource_on(k); });
        EXPECT(r == 2, "resource_on(%d) to throw std::invalid_argument, outcome %d", k, r);
        r = outcome([k] { nodal::node_resource res(k); });
        EXPECT(r == 2, "node_resource(%d) to throw std::invalid_argument, outcome %d", k, r);
    }
    if (missing == 63) {
        int r = outcome([] { (void)nodal::node_allocator<int, 63>().allocate(1); });
        EXPECT(r == 2, "node_allocator<int, 63>().allocate(1) on a machine without node 63 to "
                       "throw std::invalid_argument, outcome %d", r);
        r = outcome([] { delete new absent_item; });
        EXPECT(r == 2, "new of an on_node<63> class to throw std::invalid_argument, outcome %d", r);
        absent_item *p = new (std::nothrow) absent_item;
        EXPECT(p == nullptr, "new (std::nothrow) of an on_node<63> class to return nullptr");
        absent_item *q = new (std::nothrow) absent_item[3];
        EXPECT(q == nullptr, "new (std::nothrow) absent_item[3] to return nullptr");
    }
}

int handler_calls;
void give_up_on_third_call()
{
    if (++handler_calls == 3)
        std::set_new_handler(nullptr);
}
void handler_throws()
{
    handler_calls++;
    throw std::bad_alloc();
}

void impossible_sizes_throw_bad_alloc_after_the_new_handler_gives_up()
{
    struct check {
        const char *what;
        void (*run)();
    };
    const check throwing[] = {
        { "node_allocator<char, 0>().allocate(2^62)",
          [] { (void)nodal::node_allocator<char, 0>().allocate(impossible); } },
        { "node_allocator<char>(0).allocate(2^62)",
          [] { (void)nodal::node_allocator<char>(0).allocate(impossible); } },
        { "on_node<0>::operator new(2^62)", [] { (void)item::operator new(impossible); } },
        { "on_node<0>::operator new[](2^62, align 64)",
          [] { (void)item::operator new[](impossible, std::align_val_t(64)); } },
        { "resource_on(0)->allocate(2^62)", [] { (void)nodal::resource_on(0)->allocate(impossible); } },
        { "new (nodal::node(0)) char[2^62]",
          [] {
              volatile std::size_t n = impossible;   // clang rejects a constant this large
              nodal::destroy(new (nodal::node(0)) char[n]);
          } },
    };
    for (const check &c : throwing) {
        handler_calls = 0;
        std::set_new_handler(give_up_on_third_call);
        int r = outcome(c.run);
        EXPECT(r == 1 && handler_calls == 3,
               "%s to call the new_handler until it gives up (3 calls), then throw "
               "std::bad_alloc; %d calls, outcome %d", c.what, handler_calls, r);
    }
    handler_calls = 0;
    std::set_new_handler(give_up_on_third_call);
    void *p = item::operator new(impossible, std::nothrow);
    EXPECT(p == nullptr && handler_calls == 3,
           "on_node<0>::operator new(2^62, nothrow) to run the handler loop (3 calls) and return "
           "nullptr; %d calls, result %p", handler_calls, p);
    handler_calls = 0;
    std::set_new_handler(handler_throws);
    p = item::operator new[](impossible, std::align_val_t(64), std::nothrow);
    EXPECT(p == nullptr && handler_calls == 1,
           "on_node<0>::operator new[](2^62, 64, nothrow) to return nullptr when the handler "
           "throws (1 call); %d calls, result %p", handler_calls, p);
    std::set_new_handler(nullptr);
    int r = outcome([] { (void)item::operator new(impossible); });
    EXPECT(r == 1, "on_node<0>::operator new(2^62) without a handler to throw std::bad_alloc, "
                   "outcome %d", r);
}

/* ---- every on_node form, through nodal's statistics -------------------------- */
struct alignas(256) wide : nodal::on_node<0> {
    char c[300];
    wide() { c[0] = 1; }
};

struct form {
    const char *name;
    int blocks;   // nodal blocks it allocates and frees
    void (*run)();
};

const form forms[] = {
    { "new / delete", 1, [] { item *p = new item; nd_escape(p); delete p; } },
    { "new[] / delete[]", 1, [] { item *p = new item[7]; nd_escape(p); delete[] p; } },
    { "new (nothrow) / delete", 1,
      [] { item *p = new (std::nothrow) item; nd_escape(p); delete p; } },
    { "new (nothrow) [] / delete[]", 1,
      [] { item *p = new (std::nothrow) item[3]; nd_escape(p); delete[] p; } },
    { "aligned new / delete", 1, [] { wide *p = new wide; nd_escape(p); delete p; } },
    { "aligned new[] / delete[]", 1, [] { wide *p = new wide[4]; nd_escape(p); delete[] p; } },
    { "aligned new (nothrow) / delete", 1,
      [] { wide *p = new (std::nothrow) wide; nd_escape(p); delete p; } },
    { "aligned new (nothrow) [] / delete[]", 1,
      [] { wide *p = new (std::nothrow) wide[2]; nd_escape(p); delete[] p; } },
    { "new (node) / delete", 1, [] { item *p = new (nodal::node(0)) item; nd_escape(p); delete p; } },
    { "new (node) [] / delete[]", 1,
      [] { item *p = new (nodal::node(0)) item[5]; nd_escape(p); delete[] p; } },
    { "aligned new (node) / delete", 1,
      [] { wide *p = new (nodal::node(0)) wide; nd_escape(p); delete p; } },
    { "aligned new (node) [] / delete[]", 1,
      [] { wide *p = new (nodal::node(0)) wide[3]; nd_escape(p); delete[] p; } },
    { "operator new / sized delete", 1,
      [] { void *p = item::operator new(40); item::operator delete(p, std::size_t(40)); } },
    { "operator new[] / sized delete[]", 1,
      [] { void *p = item::operator new[](400); item::operator delete[](p, std::size_t(400)); } },
    { "operator new (nothrow) / delete (nothrow)", 1,
      [] { void *p = item::operator new(40, std::nothrow); item::operator delete(p, std::nothrow); } },
    { "operator new[] (nothrow) / delete[] (nothrow)", 1,
      [] { void *p = item::operator new[](40, std::nothrow); item::operator delete[](p, std::nothrow); } },
    { "operator new (align) / delete (size, align)", 1,
      [] { void *p = item::operator new(300, std::align_val_t(512));
           item::operator delete(p, std::size_t(300), std::align_val_t(512)); } },
    { "operator new[] (align) / delete[] (size, align)", 1,
      [] { void *p = item::operator new[](3000, std::align_val_t(512));
           item::operator delete[](p, std::size_t(3000), std::align_val_t(512)); } },
    { "operator new (align, nothrow) / delete (align, nothrow)", 1,
      [] { void *p = item::operator new(30, std::align_val_t(64), std::nothrow);
           item::operator delete(p, std::align_val_t(64), std::nothrow); } },
    { "operator new[] (align, nothrow) / delete[] (align, nothrow)", 1,
      [] { void *p = item::operator new[](30, std::align_val_t(64), std::nothrow);
           item::operator delete[](p, std::align_val_t(64), std::nothrow); } },
    { "operator new (align) / delete (align)", 1,
      [] { void *p = item::operator new(30, std::align_val_t(128));
           item::operator delete(p, std::align_val_t(128)); } },
    { "operator new[] (align) / delete[] (align)", 1,
      [] { void *p = item::operator new[](30, std::align_val_t(128));
           item::operator delete[](p, std::align_val_t(128)); } },
    { "global new (node) / nodal::destroy", 1,
      [] { std::string *p = new (nodal::node(0)) std::string("x"); nodal::destroy(p); } },
    { "make_on_node / unique_ptr", 1, [] { auto p = nodal::make_on_node<item>(0); nd_escape(p.get()); } },
    { "make_on_node<T[]> / unique_ptr", 1,
      [] { auto p = nodal::make_on_node<item[]>(0, 9); nd_escape(p.get()); } },
};

void on_node_forms_allocate_from_nodal_and_free_back()
{
    for (const form &f : forms) {
        nd_totals before = nd_stats_totals();
        f.run();
        nd_totals after = nd_stats_totals();
        EXPECT(after.requests - before.requests == f.blocks && after.frees - before.frees == f.blocks,
               "%s to allocate and free exactly %d nodal block(s): requests %+.0f, frees %+.0f",
               f.name, f.blocks, after.requests - before.requests, after.frees - before.frees);
        EXPECT(after.allocated == before.allocated,
               "%s to leave nodal's allocated bytes at %.0f, they are %.0f", f.name,
               before.allocated, after.allocated);
    }
    item *p = new item;
    wide *w = new wide[3];
    EXPECT(nodal_node_of(p) == 0 && nodal_node_of(w) == 0 && nd_is_aligned(w, 256),
           "on_node<0> objects to be node-0 blocks, the over-aligned ones 256-aligned");
    delete p;
    delete[] w;
}

/* ---- memory tiers ------------------------------------------------------------ */
using bw_alloc = nodal::tier_allocator<int, NODAL_TIER_BANDWIDTH>;
static_assert(traits<bw_alloc>::is_always_equal::value, "tier allocators are stateless");
static_assert(std::is_same_v<traits<bw_alloc>::rebind_alloc<long>, nodal::tier_allocator<long, NODAL_TIER_BANDWIDTH>>,
              "rebind keeps the tier");
static_assert(bw_alloc::tier() == NODAL_TIER_BANDWIDTH, "tier() is the template's tier");

struct hot : nodal::on_tier<NODAL_TIER_LATENCY> {
    long key = 1;
};
struct alignas(128) big_cold : nodal::on_tier<NODAL_TIER_CAPACITY | NODAL_TIER_PREFERRED> {
    char bytes[3000];
};

/* Blocks of tier_allocator and on_tier come from nodal, on the tier's node
   for the current node (a one-node machine: node 0; the VM tier checks
   placement through the kernel); a bad tier throws nothing at compile
   time because it cannot compile; impossible sizes throw bad_alloc. */
void tier_allocator_and_on_tier_allocate_on_the_tiers_node()
{
    EXPECT((bw_alloc() == nodal::tier_allocator<long, NODAL_TIER_BANDWIDTH>() &&
            bw_alloc() != nodal::tier_allocator<int, NODAL_TIER_LATENCY>()),
           "tier allocators to compare equal exactly when their tiers are");
    nd_totals before = nd_stats_totals();
    {
        std::vector<int, bw_alloc> v(1000, 7);
        int here = nodal_current_node();
        int want = nodal_tier_node(NODAL_TIER_BANDWIDTH, here);
        EXPECT(want >= 0 && nodal_node_of(v.data()) == want,
               "a vector of the bandwidth tier to be on node %d (from node %d), it is on %d", want, here,
               nodal_node_of(v.data()));
        hot *h = new hot;
        big_cold *c = new big_cold[3];
        hot *n = new (std::nothrow) hot;
        EXPECT(nodal_node_of(h) == nodal_tier_node(NODAL_TIER_LATENCY, here) && n != nullptr &&
                   nodal_node_of(c) == nodal_tier_node(NODAL_TIER_CAPACITY, here) && nd_is_aligned(c, 128),
               "on_tier objects to be on their tiers' nodes, the over-aligned ones 128-aligned");
        delete h;
        delete n;
        delete[] c;
    }
    nd_totals after = nd_stats_totals();
    EXPECT(after.requests - before.requests == after.frees - before.frees && after.allocated == before.allocated,
           "every tier block to go back to nodal (requests %+.0f, frees %+.0f)", after.requests - before.requests,
           after.frees - before.frees);
    bool threw = false;
    try {
        int *q = bw_alloc().allocate(impossible);
        bw_alloc().deallocate(q, impossible);
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    EXPECT(threw, "an impossible tier allocation to throw std::bad_alloc");
    errno = 0;
    EXPECT(nodal_malloc_tier(16, 3) == nullptr && errno == EINVAL, "a bad tier to give NULL/EINVAL");
}

/* ---- new[] of a node-typed class: the byte count with the cookie ------------- */
template <std::size_t Size, std::size_t Align>
struct alignas(Align) tracked : nodal::on_node<0> {
    static long ctors, dtors;
    static std::uint64_t next;
    std::uint64_t id, check;
    unsigned char pad[Size - 2 * sizeof(std::uint64_t)];
    tracked() : id(next++), check(~id) { ctors++; }
    ~tracked()
    {
        EXPECT(check == ~id, "element %llu of a %zu-byte node-typed class to be intact when destroyed",
               static_cast<unsigned long long>(id), Size);
        dtors++;
    }
};
template <std::size_t S, std::size_t A> long tracked<S, A>::ctors;
template <std::size_t S, std::size_t A> long tracked<S, A>::dtors;
template <std::size_t S, std::size_t A> std::uint64_t tracked<S, A>::next;

template <class T>
void array_lengths(long max_n)
{
    const std::size_t cookie = std::max(sizeof(std::size_t), alignof(T));
    for (long n = 1; n <= max_n; n++) {
        long c0 = T::ctors, d0 = T::dtors;
        T *a = new T[static_cast<std::size_t>(n)];
        EXPECT(T::ctors - c0 == n, "new T[%ld] (sizeof %zu) to run %ld constructors, it ran %ld", n,
               sizeof(T), n, T::ctors - c0);
        EXPECT(nd_is_aligned(a, alignof(T)), "new T[%ld] to be %zu-aligned", n, alignof(T));
        void *block = reinterpret_cast<char *>(a) - cookie;
        std::size_t need = static_cast<std::size_t>(n) * sizeof(T) + cookie;
        EXPECT(nodal_usable_size(block) >= need,
               "on_node<0>::operator new[] for T[%ld] (sizeof %zu, cookie %zu) to allocate the "
               "byte count it is passed, at least %zu bytes; the block has %zu", n, sizeof(T),
               cookie, need, nodal_usable_size(block));
        EXPECT(nodal_node_of(block) == 0, "new T[%ld] to be a node-0 block", n);
        for (long i = 0; i < n; i++)
            EXPECT(a[i].check == ~a[i].id, "element %ld of new T[%ld] to be intact", i, n);
        delete[] a;
        EXPECT(T::dtors - d0 == n, "delete[] of T[%ld] to run %ld destructors, it ran %ld", n, n,
               T::dtors - d0);
    }
}

void on_node_array_new_gets_the_byte_count_with_the_cookie()
{
    long max_n = nd_opt_long("max-n", 10000);
    nd_totals before = nd_stats_totals();
    array_lengths<tracked<16, 8>>(max_n);
    array_lengths<tracked<40, 8>>(max_n);
    array_lengths<tracked<64, 64>>(max_n);
    array_lengths<tracked<256, 256>>(max_n);
    array_lengths<tracked<4096, 4096>>(std::min(max_n, 300L));
    nd_totals after = nd_stats_totals();
    EXPECT(after.allocated == before.allocated,
           "nodal's allocated bytes to be back at %.0f after every array was deleted, they are %.0f",
           before.allocated, after.allocated);
}

/* ---- make_on_node --------------------------------------------------------------- */
struct counted {
    static int alive, made;
    static int throw_at;   // the made-th construction throws (0: never)
    int v;
    explicit counted(int x = 11) : v(x)
    {
        if (++made == throw_at)
            throw std::runtime_error("constructor failure");
        alive++;
    }
    virtual ~counted() { alive--; }
};
int counted::alive, counted::made, counted::throw_at;
struct counted_more : counted {
    long extra[10] = {};
    counted_more() : counted(22) {}
};

void make_on_node_constructs_destroys_and_frees()
{
    nd_totals before = nd_stats_totals();
    {
        auto p = nodal::make_on_node<counted>(0, 5);
        EXPECT(p->v == 5 && counted::alive == 1, "make_on_node<counted>(0, 5) to construct one object");
        nodal::unique_on_node<counted> base = nodal::make_on_node<counted_more>(0);
        EXPECT(base->v == 22 && counted::alive == 2, "a derived object to convert to unique_on_node<base>");
        auto arr = nodal::make_on_node<counted[]>(0, 50);
        EXPECT(counted::alive == 52 && arr[49].v == 11, "make_on_node<counted[]>(0, 50) to construct 50");
    }
    EXPECT(counted::alive == 0, "every object to be destroyed with its unique_ptr, %d alive",
           counted::alive);
    counted::made = 0;
    counted::throw_at = 1;
    int r = outcome([] { nodal::make_on_node<counted>(0); });
    EXPECT(r == 3, "a throwing constructor's exception to come out of make_on_node");
    counted::made = 0;
    counted::throw_at = 30;
    r = outcome([] { nodal::make_on_node<counted[]>(0, 50); });
    EXPECT(r == 3 && counted::alive == 0,
           "a throwing 30th element to come out of make_on_node<T[]> with the 29 before it "
           "destroyed, %d alive", counted::alive);
    counted::throw_at = 0;
    nd_totals after = nd_stats_totals();
    EXPECT(after.allocated == before.allocated && after.requests - before.requests == 5,
           "make_on_node to free every block, failed constructions included: allocated %.0f -> "
           "%.0f, %.0f requests (5 expected)", before.allocated, after.allocated,
           after.requests - before.requests);
}

/* ---- pmr -------------------------------------------------------------------- */
void pmr_resource_allocates_on_its_node_and_compares_by_node()
{
    std::pmr::memory_resource *r = nodal::resource_on(0);
    EXPECT(r == nodal::resource_on(0), "resource_on(0) to return the same resource every time");
    nodal::node_resource mine(0);
    EXPECT(r->is_equal(mine) && mine.is_equal(*r), "node resources of the same node to be equal");
    EXPECT(!r->is_equal(*std::pmr::new_delete_resource()),
           "a node resource not to equal new_delete_resource");
    nd_totals before = nd_stats_totals();
    {
        std::pmr::vector<long> v(r);
        std::pmr::map<int, std::pmr::string> m(&mine);
        for (int i = 0; i < 2000; i++) {
            v.push_back(i);
            m.emplace(i, std::pmr::string(100, char('a' + i % 26)));
        }
        EXPECT(nodal_node_of(v.data()) == 0 && nodal_node_of(m.begin()->second.data()) == 0,
               "pmr containers on resource_on(0) to hold node-0 blocks");
        void *al = r->allocate(100, 1024);
        EXPECT(nd_is_aligned(al, 1024), "resource_on(0)->allocate(100, 1024) to be 1024-aligned");
        r->deallocate(al, 100, 1024);
    }
    nd_totals after = nd_stats_totals();
    EXPECT(after.allocated == before.allocated, "pmr containers to give every byte back: %.0f -> %.0f",
           before.allocated, after.allocated);
}

/* ---- containers across threads ------------------------------------------------ */
using nstring = std::basic_string<char, std::char_traits<char>, nodal::node_allocator<char>>;
using nmap = std::map<int, nstring, std::less<int>, nodal::node_allocator<std::pair<const int, nstring>>>;
using numap = std::unordered_map<int, long, std::hash<int>, std::equal_to<int>,
                                 nodal::node_allocator<std::pair<const int, long>>>;
using nvec = std::vector<long, nodal::node_allocator<long>>;

struct shared_set {
    std::mutex lock;
    nmap m;
    numap u;
    nvec v;
    explicit shared_set(const nodal::node_allocator<long> &a) : m(a), u(a), v(a) {}
};

void containers_shared_across_threads_are_destroyed_by_another_thread()
{
    int nthreads = static_cast<int>(nd_opt_long("threads", 4));
    long ops = nd_opt_long("ops", 20000);
    nd_totals before = nd_stats_totals();
    std::atomic<shared_set *> box{ nullptr };
    std::atomic<int> done{ 0 };
    std::thread maker([&] {
        box.store(new shared_set(nodal::node_allocator<long>(0)), std::memory_order_release);
    });
    maker.join();   // the thread that built the containers is gone
    std::vector<std::thread> team;
    for (int t = 0; t < nthreads; t++)
        team.emplace_back([&, t] {
            shared_set *s = box.load(std::memory_order_acquire);
            for (long i = 0; i < ops; i++) {
                int key = static_cast<int>((i * 7919 + t * 104729) % 5000);
                std::lock_guard<std::mutex> g(s->lock);
                if (i % 3 == 2) {
                    s->m.erase(key);
                    s->u.erase(key);
                    if (!s->v.empty())
                        s->v.pop_back();
                } else {
                    s->m.emplace(key, nstring(static_cast<std::size_t>(40 + key % 200), 'k',
                                              s->m.get_allocator()));
                    s->u[key] = i;
                    s->v.push_back(i);
                }
            }
            if (done.fetch_add(1) + 1 == nthreads) {   // the last one out destroys them
                shared_set *mine = box.exchange(nullptr);
                for (auto &kv : mine->m)
                    EXPECT(kv.second.size() == static_cast<std::size_t>(40 + kv.first % 200) &&
                               kv.second.get_allocator().node_id() == 0,
                           "every string in the shared map to be intact and on node 0");
                delete mine;
            }
        });
    for (auto &th : team)
        th.join();
    EXPECT(box.load() == nullptr, "the last thread to have destroyed the containers");
    nd_totals after = nd_stats_totals();
    EXPECT(after.allocated == before.allocated,
           "nodal's allocated bytes to come back to %.0f once another thread destroyed the "
           "containers, they are %.0f", before.allocated, after.allocated);
    EXPECT(after.requests - before.requests > double(ops),
           "the containers to have allocated from nodal (%.0f requests)", after.requests - before.requests);
}

const nd_case cases[] = {
    ND_CASE(allocator_rules_hold_for_compile_time_and_runtime_nodes),
    ND_CASE(invalid_nodes_throw_invalid_argument_and_nothrow_forms_return_null),
    ND_CASE(impossible_sizes_throw_bad_alloc_after_the_new_handler_gives_up),
    ND_CASE(on_node_forms_allocate_from_nodal_and_free_back),
    ND_CASE(tier_allocator_and_on_tier_allocate_on_the_tiers_node),
    ND_CASE(on_node_array_new_gets_the_byte_count_with_the_cookie),
    ND_CASE(make_on_node_constructs_destroys_and_frees),
    ND_CASE(pmr_resource_allocates_on_its_node_and_compares_by_node),
    ND_CASE(containers_shared_across_threads_are_destroyed_by_another_thread),
};

}  // namespace

ND_MAIN(cases)
