/*
 * node_full_throws_bad_alloc - nodal.hpp on a full node, in strict mode
 * (the default): node_allocator<T>::allocate fills the node and then throws
 * std::bad_alloc (not std::invalid_argument: the node exists), every block
 * it returned has all its pages on the node, and while the node is full the
 * other forms fail the same way - on_node<K>'s new throws and its nothrow
 * new returns nullptr, resource_on(k) and make_on_node throw, new
 * (nodal::node(k)) throws - and nothing comes from another node. A
 * new_handler that frees blocks of the node (and calls nodal_collect) lets
 * the same request succeed (the retry loop). Other nodes and plain memory keep working, and the node
 * can be filled again once its blocks are freed.
 *
 * Filling a node is only safe when it is small and not the only one: the
 * test skips (77) unless some node with memory has at most
 * NODAL_TEST_FILL_LIMIT_MIB (default 1024) MiB free and another node exists.
 * The VM plan runs it with node 3 at 96 MiB.
 *
 *   node_full_throws_bad_alloc [-v]
 */
#include <array>
#include <vector>

#include "placement_cxx.hpp"

namespace {

const std::size_t chunk = std::size_t(1) << 20;
using block = std::array<char, chunk>;

struct held_block {
    char *p;
    std::size_t size;
};
std::vector<held_block> *held;
nodal::node_allocator<char> *alloc_k;

/* 0 returned, 1 std::bad_alloc, 2 std::invalid_argument, 3 other */
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

template <int K>
struct big : nodal::on_node<K> {
    char bytes[chunk];
};

template <int K>
void typed_forms_fail(std::integral_constant<int, K>)
{
    big<K> *p = new (std::nothrow) big<K>;
    if (p != nullptr) {
        pt_fail("new (std::nothrow) of an on_node<%d> class of 1 MiB on the full node returned "
                "a block; expected nullptr", K);
        delete p;
    }
    int r = outcome([] { delete new big<K>; });
    if (r != 1)
        pt_fail("new of an on_node<%d> class of 1 MiB on the full node: expected std::bad_alloc, "
                "outcome %d", K, r);
}

/* What a real handler does: give back 1 MiB of the node's blocks and have
   nodal return free memory to the OS. */
int handler_calls;
void free_a_mebibyte()
{
    handler_calls++;
    if (held->empty()) {
        std::set_new_handler(nullptr);
        return;
    }
    for (std::size_t freed = 0; freed < chunk && !held->empty(); held->pop_back()) {
        alloc_k->deallocate(held->back().p, held->back().size);
        freed += held->back().size;
    }
    nodal_collect(1);
}

}  // namespace

int main(int argc, char **argv)
{
    argc = pt_begin(argc, argv, "node_full_throws_bad_alloc",
                    "on a full node nodal.hpp throws std::bad_alloc (nothrow forms: nullptr) and "
                    "never returns memory of another node");
    pt_no_args(argc, argv);
    const pt_topo *t = pt_topology();
    long limit_mib = 1024;
    if (const char *e = std::getenv("NODAL_TEST_FILL_LIMIT_MIB"))
        limit_mib = std::atol(e);
    int k = -1;
    long free_kib = 0;
    for (int i = 0; i < t->nmem; i++) {
        long f = pt_node_free_kib(t->mem[i]);
        if (f >= 0 && (k < 0 || f < free_kib))
            k = t->mem[i], free_kib = f;
    }
    if (t->nmem < 2 || k < 0 || free_kib > limit_mib * 1024)
        return pt_skip("needs a second node and a node with at most %ld MiB free "
                       "(NODAL_TEST_FILL_LIMIT_MIB); smallest here: %ld MiB", limit_mib, free_kib / 1024);
    int other = t->mem[0] == k ? t->mem[1] : t->mem[0];
    pt_info("filling node %d (%ld MiB free) with 64 KiB blocks, then 1 MiB ones; other node %d", k,
            free_kib / 1024, other);

    // Fill: 64 KiB blocks until std::bad_alloc, then 1 MiB blocks until
    // that size fails too; never past the node's free memory plus a margin.
    nodal::node_allocator<char> a(k);
    alloc_k = &a;
    held = new std::vector<held_block>;
    std::size_t total = 0, cap = static_cast<std::size_t>(free_kib) * 1024 + 64 * chunk;
    for (std::size_t size : { chunk / 16, chunk }) {
        int r = 0;
        while (total < cap) {
            char *p = nullptr;
            r = outcome([&] { p = a.allocate(size); });
            if (r != 0)
                break;
            std::memset(p, 1, size);
            held->push_back(held_block{ p, size });
            total += size;
        }
        if (r != 1)
            pt_fail("filling node %d with %zu-byte blocks: expected std::bad_alloc at the end, "
                    "outcome %d after %zu MiB", k, size, r, total >> 20);
    }
    if (static_cast<long>(total >> 10) < free_kib / 2)
        pt_fail("only %zu MiB of node %d's %ld MiB free could be allocated; expected at least half",
                total >> 20, k, free_kib / 1024);
    pt_batch *b = pt_batch_new();
    for (std::size_t i = 0; i < held->size(); i++)
        pt_batch_add(b, (*held)[i].p, (*held)[i].size, k, "block of the full node", i);
    pt_batch_flush(b);
    pt_info("%zu MiB allocated on node %d before std::bad_alloc; %zu OS pages checked, %zu off node",
            total >> 20, k, pt_batch_pages(b), pt_batch_bad_pages(b));
    int r;

    // The node is full: every form fails, with the right exception.
    if (!ndt::with_static_node(k, [](auto K) { typed_forms_fail(K); }))
        pt_info("node %d is above the compiled-in nodes: on_node<K> forms not exercised", k);
    r = outcome([k] { nodal::resource_on(k)->deallocate(nodal::resource_on(k)->allocate(chunk), chunk); });
    if (r != 1)
        pt_fail("resource_on(%d)->allocate(1 MiB) on the full node: expected std::bad_alloc, outcome %d", k, r);
    r = outcome([k] { nodal::make_on_node<block>(k); });
    if (r != 1)
        pt_fail("make_on_node<1 MiB>(%d) on the full node: expected std::bad_alloc, outcome %d", k, r);
    r = outcome([k] { nodal::destroy(new (nodal::node(k)) block); });
    if (r != 1)
        pt_fail("new (nodal::node(%d)) of 1 MiB on the full node: expected std::bad_alloc, outcome %d", k, r);

    // A new_handler that frees node-k blocks makes the request succeed.
    handler_calls = 0;
    std::set_new_handler(free_a_mebibyte);
    char *p = nullptr;
    r = outcome([&] { p = a.allocate(chunk); });
    std::set_new_handler(nullptr);
    if (r != 0 || handler_calls < 1 || handler_calls > 8)
        pt_fail("allocate(1 MiB) on the full node with a new_handler that frees 1 MiB of node-%d "
                "blocks per call: expected success after 1..8 calls, outcome %d after %d calls", k,
                r, handler_calls);
    pt_info("with the new_handler: outcome %d after %d handler call(s)", r, handler_calls);
    if (p != nullptr) {
        p[0] = 2;
        p[chunk - 1] = 2;
        pt_batch_add(b, p, chunk, k, "block allocated after the new_handler freed one", 0);
        pt_batch_flush(b);
        held->push_back(held_block{ p, chunk });
    }

    // Other nodes and plain memory still work.
    nodal::node_allocator<char> o(other);
    char *q = nullptr;
    r = outcome([&] { q = o.allocate(chunk); });
    if (r != 0)
        pt_fail("allocate(1 MiB) on node %d while node %d is full: expected a block, outcome %d",
                other, k, r);
    else {
        std::memset(q, 3, chunk);
        pt_batch_add(b, q, chunk, other, "block of the other node", 0);
        pt_batch_flush(b);
        o.deallocate(q, chunk);
    }
    std::vector<char> plain(chunk, 4);
    if (plain[chunk - 1] != 4)
        pt_fail("plain memory stopped working while node %d was full", k);

    // Freed, the node takes blocks again.
    for (const held_block &h : *held)
        a.deallocate(h.p, h.size);
    held->clear();
    r = outcome([&] { p = a.allocate(chunk); });
    if (r != 0)
        pt_fail("allocate(1 MiB) on node %d after its blocks were freed: expected a block, outcome %d", k, r);
    else
        a.deallocate(p, chunk);
    pt_batch_free(b);
    delete held;
    return pt_end();
}
