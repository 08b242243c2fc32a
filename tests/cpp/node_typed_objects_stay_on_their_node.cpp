/*
 * node_typed_objects_stay_on_their_node - objects whose class derives from
 * nodal::on_node<K> are on node K in every allocation form (plain, array,
 * nothrow, over-aligned, small to large objects), new (nodal::node(k)) puts
 * one object or array on node k for node-typed classes and for any type,
 * and make_on_node<T>(k, ...) / make_on_node<T[]>(k, n) put theirs on k:
 * on every node with memory, memory-only nodes included (compile-time
 * nodes 0..7; the run-time forms on every node). Every OS page of every
 * object, and of each whole array, is looked up with move_pages; the
 * policy at both ends must name the node only; contents are checked after
 * all objects exist.
 *
 *   node_typed_objects_stay_on_their_node [-n OBJECTS] [-v]
 */
#include <array>
#include <vector>

#include "placement_cxx.hpp"

namespace {

long objects = 2000;
pt_batch *batch;

template <int K>
struct small_obj : nodal::on_node<K> {
    long id;
    long check;
    explicit small_obj(long i = 0) : id(i), check(~i) {}
    ~small_obj() { check = 0; }
};
template <int K>
struct alignas(512) wide_obj : nodal::on_node<K> {
    long id;
    char fill[1500];
    explicit wide_obj(long i = 0) : id(i) { std::memset(fill, static_cast<int>(i & 0x7f), sizeof fill); }
};
template <int K>
struct big_obj : nodal::on_node<K> {
    long id = 5;
    char fill[300 << 10];   // a large block, beyond the size classes
    big_obj() { std::memset(fill, 0x3c, sizeof fill); }
};

struct placed {
    const void *p;
    std::size_t bytes;
    int node;
    const char *what;
};
std::vector<placed> *found;

void expect_on(const void *p, std::size_t bytes, int node, const char *what)
{
    if (p == nullptr) {
        pt_fail("%s on node %d: got nullptr, expected an object", what, node);
        return;
    }
    found->push_back(placed{ p, bytes, node, what });
}

void check_found()
{
    unsigned long i = 0;
    for (const placed &f : *found) {
        pt_batch_add(batch, f.p, f.bytes, f.node, f.what, i);
        if (f.bytes >= 4096 || i % 32 == 0)
            pt_expect_node_policy(f.p, f.bytes, f.node, f.what);
        i++;
    }
    pt_batch_flush(batch);
    found->clear();
}

template <int K>
void compile_time(std::integral_constant<int, K>)
{
    using S = small_obj<K>;
    using W = wide_obj<K>;
    std::vector<S *> s;
    std::vector<W *> w;
    for (long i = 0; i < objects; i++) {
        s.push_back(i % 2 ? new S(i) : new (std::nothrow) S(i));
        expect_on(s.back(), sizeof(S), K, "on_node<K> object");
        if (i % 16 == 0) {
            w.push_back(i % 32 ? new W(i) : new (std::nothrow) W(i));
            expect_on(w.back(), sizeof(W), K, "over-aligned on_node<K> object");
            if (reinterpret_cast<std::uintptr_t>(w.back()) % 512 != 0)
                pt_fail("an over-aligned on_node<%d> object is not 512-aligned", K);
        }
    }
    S *arr = new S[static_cast<std::size_t>(objects)];
    expect_on(arr, sizeof(S) * static_cast<std::size_t>(objects), K, "on_node<K> array");
    W *warr = new (std::nothrow) W[40];
    expect_on(warr, sizeof(W) * 40, K, "over-aligned on_node<K> array (nothrow)");
    big_obj<K> *big = new big_obj<K>;
    expect_on(big, sizeof *big, K, "large on_node<K> object");
    check_found();
    for (long i = 0; i < objects; i++) {
        S *p = s[static_cast<std::size_t>(i)];
        if (p->id != i || p->check != ~i)
            pt_fail("on_node<%d> object %ld changed", K, i);
        delete p;
    }
    for (W *p : w)
        delete p;
    delete[] arr;
    delete[] warr;
    delete big;
}

void runtime(int k)
{
    using S0 = small_obj<0>;   // typed for node 0, placed on k
    std::vector<S0 *> s;
    std::vector<std::array<long, 40> *> g;
    std::vector<nodal::unique_on_node<std::array<long, 40>>> u;
    for (long i = 0; i < objects; i++) {
        s.push_back(new (nodal::node(k)) S0(i));
        expect_on(s.back(), sizeof(S0), k, "new (nodal::node(k)) of an on_node<0> class");
        if (i % 4 == 0) {
            g.push_back(new (nodal::node(k)) std::array<long, 40>{});
            expect_on(g.back(), sizeof(std::array<long, 40>), k, "new (nodal::node(k)) of any type");
            u.push_back(nodal::make_on_node<std::array<long, 40>>(k));
            expect_on(u.back().get(), sizeof(std::array<long, 40>), k, "make_on_node<T>(k)");
        }
    }
    S0 *arr = new (nodal::node(k)) S0[static_cast<std::size_t>(objects)];
    expect_on(arr, sizeof(S0) * static_cast<std::size_t>(objects), k, "new (nodal::node(k)) T[n]");
    wide_obj<0> *warr = new (nodal::node(k)) wide_obj<0>[30];
    expect_on(warr, sizeof(wide_obj<0>) * 30, k, "new (nodal::node(k)) over-aligned T[n]");
    auto ua = nodal::make_on_node<S0[]>(k, static_cast<std::size_t>(objects));
    expect_on(ua.get(), sizeof(S0) * static_cast<std::size_t>(objects), k, "make_on_node<T[]>(k, n)");
    check_found();
    for (long i = 0; i < objects; i++)
        if (s[static_cast<std::size_t>(i)]->check != ~i || ua[static_cast<std::size_t>(i)].check != ~0L)
            pt_fail("node %d: object %ld changed", k, i);
    for (S0 *p : s)
        delete p;   // on_node's delete frees a block of any node
    for (auto *p : g)
        nodal::destroy(p);
    delete[] arr;
    delete[] warr;
}

}  // namespace

int main(int argc, char **argv)
{
    argc = pt_begin(argc, argv, "node_typed_objects_stay_on_their_node",
                    "on_node<K> objects are on node K in every allocation form; new "
                    "(nodal::node(k)) and make_on_node put theirs on k");
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "-n") && i + 1 < argc)
            objects = std::atol(argv[++i]);
        else
            pt_die("usage: %s [-n OBJECTS] [-v]", argv[0]);
    }
    const pt_topo *t = pt_topology();
    batch = pt_batch_new();
    found = new std::vector<placed>;
    for (int i = 0; i < t->nmem; i++) {
        int k = t->mem[i];
        if (!ndt::with_static_node(k, [](auto K) { compile_time(K); }))
            pt_info("node %d: above the compiled-in nodes 0..%d, run-time forms only", k,
                    ndt::static_nodes - 1);
        runtime(k);
    }
    pt_info("%zu OS pages checked, %zu off their node", pt_batch_pages(batch), pt_batch_bad_pages(batch));
    pt_batch_free(batch);
    delete found;
    return pt_end();
}
