/*
 * placement_cxx.hpp - what the C++ placement programs of tests/cpp/ share
 * on top of tests/placement/placement.h: a log of every block an allocator
 * or memory resource hands out (an allocator adaptor and a pmr adaptor
 * record them), checked page by page through the kernel
 * (move_pages, in batches) and by the policy covering them; and a dispatch
 * from a node id known at run time to code compiled for that node.
 *
 * As in the placement tier, nothing asks nodal where a block is.
 */
#ifndef ND_TEST_PLACEMENT_CXX_HPP
#define ND_TEST_PLACEMENT_CXX_HPP

#include <nodal.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory_resource>
#include <mutex>
#include <utility>

#define _Noreturn [[noreturn]]
extern "C" {
#include "placement.h"
}
#undef _Noreturn

namespace ndt {

/* Live blocks: address -> (bytes, node expected). The map itself lives in
   plain memory (the program's own operator new). */
class block_log {
public:
    void add(void *p, std::size_t bytes, int node, const char *what)
    {
        std::lock_guard<std::mutex> g(lock_);
        live_[p] = entry{ bytes, node, what };
        total_++;
    }
    void remove(void *p)
    {
        std::lock_guard<std::mutex> g(lock_);
        if (live_.erase(p) == 0)
            pt_fail("a block (%p) was freed through a logging allocator that never handed it out", p);
    }
    std::size_t live() const
    {
        std::lock_guard<std::mutex> g(lock_);
        return live_.size();
    }
    unsigned long total() const { return total_; }
    /* Every live block: all its OS pages on its node (move_pages); the policy
       at its first and last byte naming that node only, for every block of
       4 KiB and more and every 64th smaller one. Returns blocks checked. */
    std::size_t check(pt_batch *b)
    {
        std::lock_guard<std::mutex> g(lock_);
        std::size_t i = 0;
        for (auto &kv : live_) {
            const entry &e = kv.second;
            pt_batch_add(b, kv.first, e.bytes, e.node, e.what, static_cast<unsigned long>(i));
            if (e.bytes >= 4096 || i % 64 == 0)
                pt_expect_node_policy(kv.first, e.bytes, e.node, e.what);
            i++;
        }
        pt_batch_flush(b);
        return i;
    }

private:
    struct entry {
        std::size_t bytes;
        int node;
        const char *what;
    };
    mutable std::mutex lock_;
    std::map<void *, entry> live_;
    unsigned long total_ = 0;
};

inline block_log &the_log()
{
    static block_log *log = new block_log;   // outlives every container
    return *log;
}

/* An allocator that is Base (a node_allocator) and logs what it hands out. */
template <class T, class Base>
class logged : public Base {
public:
    using value_type = T;
    template <class U>
    struct rebind {
        using other = logged<U, typename std::allocator_traits<Base>::template rebind_alloc<U>>;
    };
    using Base::Base;
    logged() = default;
    logged(const Base &b) noexcept : Base(b) {}
    template <class U, class B2>
    logged(const logged<U, B2> &o) noexcept : Base(static_cast<const B2 &>(o))
    {
    }
    T *allocate(std::size_t n)
    {
        T *p = Base::allocate(n);
        the_log().add(p, n * sizeof(T), this->node_id(), "container block");
        return p;
    }
    void deallocate(T *p, std::size_t n) noexcept
    {
        the_log().remove(p);
        Base::deallocate(p, n);
    }
};

/* A memory resource that forwards to a node resource and logs. */
class logged_resource : public std::pmr::memory_resource {
public:
    logged_resource(std::pmr::memory_resource *up, int node) : up_(up), node_(node) {}

private:
    void *do_allocate(std::size_t bytes, std::size_t align) override
    {
        void *p = up_->allocate(bytes, align);
        the_log().add(p, bytes, node_, "pmr block");
        return p;
    }
    void do_deallocate(void *p, std::size_t bytes, std::size_t align) override
    {
        the_log().remove(p);
        up_->deallocate(p, bytes, align);
    }
    bool do_is_equal(const std::pmr::memory_resource &o) const noexcept override { return this == &o; }
    std::pmr::memory_resource *up_;
    int node_;
};

/* Calls f(std::integral_constant<int, k>) when k < 8 (the nodes compiled
   in); returns false for larger ids. */
template <class F, int... K>
bool with_static_node_impl(int k, F &&f, std::integer_sequence<int, K...>)
{
    bool hit = false;
    ((k == K ? (f(std::integral_constant<int, K>{}), hit = true) : false), ...);
    return hit;
}
constexpr int static_nodes = 8;
template <class F>
bool with_static_node(int k, F &&f)
{
    return with_static_node_impl(k, std::forward<F>(f), std::make_integer_sequence<int, static_nodes>{});
}

}  // namespace ndt

#endif /* ND_TEST_PLACEMENT_CXX_HPP */
