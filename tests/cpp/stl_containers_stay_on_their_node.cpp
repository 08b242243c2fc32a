/*
 * stl_containers_stay_on_their_node - every block an STL container takes
 * through nodal.hpp is on the container's node, on every node with memory
 * (memory-only nodes included): std::vector (plain and over-aligned
 * elements), std::map, std::unordered_map (its bucket arrays too),
 * std::basic_string, std::deque and std::list with node_allocator<T, K>
 * (compile-time node, for nodes 0..7) and node_allocator<T> (run-time
 * node), and std::pmr containers on nodal::resource_on(k). The containers
 * are filled, their contents checked, and every block they hold is looked
 * up with move_pages (an allocator adaptor logs each block handed out).
 * With two nodes or more, copy and move assignment keep the destination's
 * node and swap exchanges the nodes with the contents. When the containers
 * are gone every logged block has been given back.
 *
 *   stl_containers_stay_on_their_node [-n ELEMENTS] [-v]
 */
#include <deque>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

#include "placement_cxx.hpp"

namespace {

long elements = 20000;
pt_batch *batch;

struct alignas(128) wide {
    long v;
    char pad[100];
    explicit wide(long x = 0) : v(x) { pad[0] = static_cast<char>(x); }
};

template <class T, class Alloc>
using rebound = typename std::allocator_traits<Alloc>::template rebind_alloc<T>;

/* One set of containers on the allocator family A (logged<char, ...>). */
template <class A>
void fill_and_check(const A &a, int node, const char *how)
{
    using str = std::basic_string<char, std::char_traits<char>, rebound<char, A>>;
    std::size_t before = ndt::the_log().live();
    {
        std::vector<long, rebound<long, A>> v(a);
        std::vector<wide, rebound<wide, A>> w(a);
        std::map<int, long, std::less<int>, rebound<std::pair<const int, long>, A>> m(a);
        std::unordered_map<int, str, std::hash<int>, std::equal_to<int>,
                           rebound<std::pair<const int, str>, A>> u(a);
        std::deque<int, rebound<int, A>> d(a);
        std::list<int, rebound<int, A>> l(a);
        str big(std::size_t(1) << 20, 'b', a), small("short", a);
        for (long i = 0; i < elements; i++) {
            v.push_back(i);
            if (i % 8 == 0)
                w.emplace_back(i);
            m.emplace(static_cast<int>(i), i * 3);
            if (i % 4 == 0)
                u.emplace(static_cast<int>(i), str(static_cast<std::size_t>(20 + i % 300), 'u', a));
            d.push_back(static_cast<int>(i));
            if (i % 2 == 0)
                l.push_back(static_cast<int>(i));
        }
        for (long i = 0; i < elements; i++)
            if (v[static_cast<std::size_t>(i)] != i || m.at(static_cast<int>(i)) != i * 3 ||
                d[static_cast<std::size_t>(i)] != i)
                pt_fail("%s on node %d: element %ld lost its value", how, node, i);
        for (const wide &x : w)
            if (reinterpret_cast<std::uintptr_t>(&x) % 128 != 0)
                pt_fail("%s on node %d: an over-aligned vector element is not 128-aligned", how, node);
        if (big.size() != (std::size_t(1) << 20) || big[12345] != 'b' || small != "short")
            pt_fail("%s on node %d: string contents changed", how, node);
        std::size_t n = ndt::the_log().check(batch);
        if (pt_verbose)
            pt_info("%s on node %d: %zu live blocks checked", how, node, n);
    }
    if (ndt::the_log().live() != before)
        pt_fail("%s on node %d: %zu blocks still live after the containers were destroyed; "
                "expected every one freed", how, node, ndt::the_log().live() - before);
}

template <int K>
void compile_time(std::integral_constant<int, K>)
{
    fill_and_check(ndt::logged<char, nodal::node_allocator<char, K>>(), K, "node_allocator<T, K>");
}

void pmr_on(int node)
{
    ndt::logged_resource res(nodal::resource_on(node), node);
    {
        std::pmr::vector<long> v(&res);
        std::pmr::unordered_map<int, std::pmr::string> u(&res);
        for (long i = 0; i < elements; i++) {
            v.push_back(i);
            if (i % 4 == 0)
                u.emplace(static_cast<int>(i), std::pmr::string(static_cast<std::size_t>(30 + i % 200), 'p'));
        }
        if (u.at(4).size() != 34 || v.back() != elements - 1)
            pt_fail("pmr containers on node %d: contents changed", node);
        ndt::the_log().check(batch);
    }
    if (ndt::the_log().live() != 0)
        pt_fail("pmr containers on node %d: blocks still live after destruction", node);
}

/* Assignment keeps the destination's node; swap exchanges the nodes. */
void assignment_between(int a, int b)
{
    using alloc = ndt::logged<long, nodal::node_allocator<long>>;
    using vec = std::vector<long, alloc>;
    vec x{ alloc{ nodal::node_allocator<long>(a) } }, y{ alloc{ nodal::node_allocator<long>(b) } };
    for (long i = 0; i < elements; i++)
        y.push_back(i);
    x = y;   // copy: x stays on a
    if (x.get_allocator().node_id() != a || x.size() != y.size())
        pt_fail("copy assignment: expected the node-%d vector to stay on node %d, it is on %d", a,
                a, x.get_allocator().node_id());
    vec z{ alloc{ nodal::node_allocator<long>(a) } };
    z = std::move(y);   // move: z stays on a, elements moved into node-a memory
    if (z.get_allocator().node_id() != a || z.size() != static_cast<std::size_t>(elements))
        pt_fail("move assignment: expected the node-%d vector to stay on node %d, it is on %d", a,
                a, z.get_allocator().node_id());
    vec s{ alloc{ nodal::node_allocator<long>(b) } };
    s.push_back(7);
    x.swap(s);
    if (x.get_allocator().node_id() != b || s.get_allocator().node_id() != a || x.size() != 1)
        pt_fail("swap: expected the allocators (nodes %d and %d) to be exchanged with the contents",
                a, b);
    ndt::the_log().check(batch);   // every block of x, s, z, y is on its container's node
}

}  // namespace

int main(int argc, char **argv)
{
    argc = pt_begin(argc, argv, "stl_containers_stay_on_their_node",
                    "every block of an STL container with a nodal.hpp allocator or resource is on "
                    "the container's node");
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "-n") && i + 1 < argc)
            elements = std::atol(argv[++i]);
        else
            pt_die("usage: %s [-n ELEMENTS] [-v]", argv[0]);
    }
    const pt_topo *t = pt_topology();
    batch = pt_batch_new();
    for (int i = 0; i < t->nmem; i++) {
        int k = t->mem[i];
        if (!ndt::with_static_node(k, [](auto K) { compile_time(K); }))
            pt_info("node %d: above the compiled-in nodes 0..%d, run-time allocators only", k,
                    ndt::static_nodes - 1);
        fill_and_check(ndt::logged<char, nodal::node_allocator<char>>(nodal::node_allocator<char>(k)),
                       k, "node_allocator<T>");
        pmr_on(k);
    }
    if (t->nmem > 1)
        for (int i = 0; i < t->nmem; i++)
            assignment_between(t->mem[i], t->mem[(i + 1) % t->nmem]);
    else
        pt_info("one node with memory: assignment and swap across nodes not exercised");
    pt_info("%lu blocks logged, %zu OS pages checked, %zu off their node", ndt::the_log().total(),
            pt_batch_pages(batch), pt_batch_bad_pages(batch));
    if (ndt::the_log().live() != 0)
        pt_fail("%zu blocks still live at the end; expected none", ndt::the_log().live());
    pt_batch_free(batch);
    return pt_end();
}
