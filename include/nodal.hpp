/*
 * nodal.hpp - C++17 support for nodal: objects, containers and memory
 * resources placed on a NUMA node. Header-only; it calls the C API of
 * nodal.h and works with every nodal library (libnodal.so, libnodal.a,
 * libnodal_prefix.a). See nodal.hpp(3).
 *
 *   nodal::node_allocator<T, K>   STL allocator on node K, fixed at compile time
 *   nodal::node_allocator<T>      STL allocator on a node chosen at run time
 *   nodal::node_resource          std::pmr::memory_resource on a node
 *   nodal::resource_on(k)         the process-wide node_resource of node k
 *   nodal::on_node<K>             base class: the class's objects live on node K
 *   nodal::make_on_node<T>(k, ..) std::unique_ptr<T, nodal::node_delete<T>>
 *   nodal::tier_allocator<T, A>   STL allocator on the tier A's node near the
 *                                 allocating thread (A: NODAL_TIER_LATENCY,
 *                                 _BANDWIDTH, _CAPACITY, | NODAL_TIER_PREFERRED)
 *   nodal::on_tier<A>             base class: the class's objects live on the
 *                                 tier A's node near the thread creating them
 *   new (nodal::node(k)) T(..)    one object (or array) on node k; free it with
 *                                 nodal::destroy(p), or delete p / delete[] p
 *                                 when the program uses libnodal's operator
 *                                 delete (arrays: only then)
 *
 * Guarantees (those of nodal_malloc_node): every page of every block is on
 * the node asked for; nothing here ever returns memory from another node.
 * Any thread may free anything.
 *
 * Failure: the throwing forms run the new-handler loop (std::get_new_handler)
 * like ::operator new and then throw std::bad_alloc - node full in strict
 * mode (NODAL_OPTIONS=node_fallback=strict, the default), impossible size.
 * A node that is not a node with memory on this machine (negative, >=
 * NODAL_MAX_NODES, absent, memory-less) throws std::invalid_argument
 * instead: that is a configuration error, not a shortage, and retrying or
 * freeing memory cannot fix it. The runtime-node allocator and
 * node_resource check the node when they are constructed, so the error shows
 * where the node was chosen. The nothrow forms return nullptr in every case.
 * Without exceptions (-fno-exceptions) the throwing forms abort instead.
 *
 * Allocator semantics:
 *   - node_allocator<T, K>: stateless, is_always_equal; all allocators of
 *     node K compare equal, allocators of different nodes unequal; rebind
 *     keeps K.
 *   - node_allocator<T>: holds the node; copies and rebinds keep it; two
 *     compare equal exactly when their nodes are equal. A container keeps its
 *     node when it is copy- or move-assigned (its elements are copied or
 *     moved into memory on its own node: propagate_on_container_copy/move_
 *     assignment are false); swap exchanges the allocators with the contents
 *     (propagate_on_container_swap is true), so both containers stay valid.
 *     Default construction takes the node of the CPU the constructing thread
 *     runs on (the nearest node with memory if that one has none).
 */
#ifndef NODAL_HPP
#define NODAL_HPP

#if __cplusplus < 201703L && !(defined(_MSVC_LANG) && _MSVC_LANG >= 201703L)
#error "nodal.hpp needs C++17"
#endif

#include "nodal.h"

#include <cstddef>
#include <cstdlib>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#if __has_include(<memory_resource>)
#include <memory_resource>
#endif
#if defined(__cpp_lib_memory_resource) && __cpp_lib_memory_resource >= 201603L
#define NODAL_HAS_PMR 1
#else
#define NODAL_HAS_PMR 0
#endif

namespace nodal {

/* The second template argument of node_allocator<T> meaning "the node is
   chosen at run time and stored in the allocator". */
inline constexpr int runtime_node = -1;

/* A node id for the placement forms: new (nodal::node(2)) T(args...). */
struct node {
    int id;
    constexpr explicit node(int k) noexcept : id(k) {}
};

namespace detail {

inline constexpr std::size_t default_align = __STDCPP_DEFAULT_NEW_ALIGNMENT__;

inline bool node_valid(int k) noexcept { return nodal_node_has_memory(k) == 1; }

[[noreturn]] inline void throw_invalid_node(int k)
{
#if defined(__cpp_exceptions)
    throw std::invalid_argument("nodal: " + std::to_string(k) +
                                " is not a node with memory on this machine");
#else
    (void)k;
    std::abort();
#endif
}

[[noreturn]] inline void throw_bad_alloc()
{
#if defined(__cpp_exceptions)
    throw std::bad_alloc();
#else
    std::abort();
#endif
}

struct unchecked_node {};

inline int checked_node(int k)
{
    if (!node_valid(k))
        throw_invalid_node(k);
    return k;
}

/* One attempt: align <= the default alignment takes the plain node call. */
inline void *try_alloc(std::size_t bytes, std::size_t align, int k) noexcept
{
    return align > default_align ? nodal_aligned_alloc_node(align, bytes, k)
                                 : nodal_malloc_node(bytes, k);
}

/* The new-handler loop of ::operator new, after a failed attempt: each
   installed handler runs and `attempt` is tried again; with none installed,
   bad_alloc (nothrow: nullptr). The node and tier calls share it. */
template <class Attempt>
inline void *new_handler_loop(Attempt attempt, bool nothrow)
{
    for (;;) {
        std::new_handler h = std::get_new_handler();
        if (h == nullptr) {
            if (nothrow)
                return nullptr;
            throw_bad_alloc();
        }
#if defined(__cpp_exceptions)
        if (nothrow) {
            try {
                h();
            } catch (...) {
                return nullptr;
            }
        } else {
            h();
        }
#else
        h();
#endif
        if (void *p = attempt())
            return p;
    }
}

/* A nothrow form's failure path: nullptr for anything it throws (only
   std::to_string's own bad_alloc could). */
template <class Failed>
inline void *nothrow_failure(Failed failed) noexcept
{
#if defined(__cpp_exceptions)
    try {
        return failed();
    } catch (...) {
        return nullptr;
    }
#else
    return failed();
#endif
}

/* After a failed attempt: a bad node is an error at once (nodes do not
   change while the process runs); otherwise the new-handler loop. */
inline void *alloc_failed(std::size_t bytes, std::size_t align, int k, bool nothrow)
{
    if (!node_valid(k)) {
        if (nothrow)
            return nullptr;
        throw_invalid_node(k);
    }
    return new_handler_loop([=] { return try_alloc(bytes, align, k); }, nothrow);
}

inline void *alloc(std::size_t bytes, std::size_t align, int k)
{
    void *p = try_alloc(bytes, align, k);
    if (__builtin_expect(p != nullptr, 1))
        return p;
    return alloc_failed(bytes, align, k, false);
}

inline void *alloc_nothrow(std::size_t bytes, std::size_t align, int k) noexcept
{
    void *p = try_alloc(bytes, align, k);
    if (__builtin_expect(p != nullptr, 1))
        return p;
    return nothrow_failure([=] { return alloc_failed(bytes, align, k, true); });
}

inline void dealloc(void *p, std::size_t bytes, std::size_t align) noexcept
{
    if (align > default_align)
        nodal_free_aligned_sized(p, align, bytes);
    else
        nodal_free_sized(p, bytes);
}

/* The node of the calling thread's CPU, or the nearest node with memory. */
inline int default_node() noexcept
{
    int here = nodal_current_node();
    if (node_valid(here))
        return here;
    int ids[NODAL_MAX_NODES];
    int n = nodal_node_ids(ids, NODAL_MAX_NODES);
    int best = n > 0 ? ids[0] : 0, best_d = std::numeric_limits<int>::max();
    for (int i = 0; i < n && i < NODAL_MAX_NODES; i++) {
        int d = nodal_node_distance(here, ids[i]);
        if (d >= 0 && d < best_d)
            best = ids[i], best_d = d;
    }
    return best;
}

template <class T>
constexpr std::size_t max_count() noexcept
{
    return std::numeric_limits<std::size_t>::max() / sizeof(T);
}

[[noreturn]] inline void throw_bad_array_new_length()
{
#if defined(__cpp_exceptions)
    throw std::bad_array_new_length();
#else
    std::abort();
#endif
}

}  // namespace detail

namespace detail {
/* Where a fixed kind of allocator or class puts its memory: node K, or the
   tier A near the allocating thread. alloc throws (new-handler loop, then
   bad_alloc or invalid_argument), alloc_nothrow returns nullptr. */
template <int K>
struct node_place {
    static void *alloc(std::size_t n, std::size_t align) { return detail::alloc(n, align, K); }
    static void *alloc_nothrow(std::size_t n, std::size_t align) noexcept { return detail::alloc_nothrow(n, align, K); }
};
/* (tier_place<A>, the same for a tier, follows the tier calls below.) */

/* n objects of T from place(bytes, align); bad_array_new_length when n * sizeof(T) overflows. */
template <class T, class Place>
inline T *allocate_array(std::size_t n, Place place)
{
    if (n > max_count<T>())
        throw_bad_array_new_length();
    return static_cast<T *>(place(n * sizeof(T), alignof(T)));
}

/* What an allocator whose place is fixed at compile time (node_allocator<T,
   K>, tier_allocator<T, A>) has: no state, so all of one place compare
   equal and the memory moves with the container. The derived class adds
   its rebind, constructors and the accessor of its place. */
template <class T, class Place>
class fixed_allocator {
public:
    using value_type = T;
    using size_type = std::size_t;
    using difference_type = std::ptrdiff_t;
    using propagate_on_container_copy_assignment = std::false_type;
    using propagate_on_container_move_assignment = std::true_type;
    using propagate_on_container_swap = std::false_type;
    using is_always_equal = std::true_type;

    [[nodiscard]] T *allocate(std::size_t n)
    {
        return allocate_array<T>(n, [](std::size_t b, std::size_t a) { return Place::alloc(b, a); });
    }
    void deallocate(T *p, std::size_t n) noexcept { dealloc(p, n * sizeof(T), alignof(T)); }
    constexpr std::size_t max_size() const noexcept { return max_count<T>(); }
};
}  // namespace detail

/* ---- allocators ----------------------------------------------------------- */
template <class T, int Node = runtime_node>
class node_allocator : public detail::fixed_allocator<T, detail::node_place<Node>> {
    static_assert(Node >= 0 && Node < NODAL_MAX_NODES,
                  "nodal::node_allocator<T, Node>: Node must be in [0, NODAL_MAX_NODES)");

public:
    template <class U>
    struct rebind {
        using other = node_allocator<U, Node>;
    };

    constexpr node_allocator() noexcept = default;
    template <class U>
    constexpr node_allocator(const node_allocator<U, Node> &) noexcept {}

    static constexpr int node_id() noexcept { return Node; }
};

template <class T>
class node_allocator<T, runtime_node> {
public:
    using value_type = T;
    using size_type = std::size_t;
    using difference_type = std::ptrdiff_t;
    using propagate_on_container_copy_assignment = std::false_type;
    using propagate_on_container_move_assignment = std::false_type;
    using propagate_on_container_swap = std::true_type;
    using is_always_equal = std::false_type;
    template <class U>
    struct rebind {
        using other = node_allocator<U>;
    };

    /* On the node of the CPU this thread runs on now. */
    node_allocator() noexcept : node_(detail::default_node()) {}
    /* On node k; std::invalid_argument if k is not a node with memory. */
    explicit node_allocator(int k) : node_(detail::checked_node(k)) {}
    explicit node_allocator(node k) : node_(detail::checked_node(k.id)) {}
    template <class U>
    node_allocator(const node_allocator<U> &other) noexcept : node_(other.node_id()) {}
    /* From a compile-time node (the node must exist here: it is checked). */
    template <class U, int K>
    explicit node_allocator(const node_allocator<U, K> &) : node_(detail::checked_node(K)) {}

    int node_id() const noexcept { return node_; }

    [[nodiscard]] T *allocate(std::size_t n)
    {
        return detail::allocate_array<T>(n, [k = node_](std::size_t b, std::size_t a) { return detail::alloc(b, a, k); });
    }
    void deallocate(T *p, std::size_t n) noexcept { detail::dealloc(p, n * sizeof(T), alignof(T)); }
    std::size_t max_size() const noexcept { return detail::max_count<T>(); }

private:
    int node_;
};

/* Equal exactly when on the same node (then either one may free what the
   other allocated, and containers may exchange their memory). */
template <class T, int N, class U, int M>
constexpr bool operator==(const node_allocator<T, N> &a, const node_allocator<U, M> &b) noexcept
{
    return a.node_id() == b.node_id();
}
template <class T, int N, class U, int M>
constexpr bool operator!=(const node_allocator<T, N> &a, const node_allocator<U, M> &b) noexcept
{
    return !(a == b);
}

/* ---- std::pmr ------------------------------------------------------------- */
#if NODAL_HAS_PMR
class node_resource : public std::pmr::memory_resource {
public:
    /* std::invalid_argument if k is not a node with memory. */
    explicit node_resource(int k) : node_(detail::checked_node(k)) {}
    /* For resource_on's table: no check. */
    node_resource(int k, detail::unchecked_node) noexcept : node_(k) {}
    int node_id() const noexcept { return node_; }

protected:
    void *do_allocate(std::size_t bytes, std::size_t align) override
    {
        return detail::alloc(bytes, align, node_);
    }
    void do_deallocate(void *p, std::size_t bytes, std::size_t align) override
    {
        detail::dealloc(p, bytes, align);
    }
    /* Node resources on the same node are interchangeable. */
    bool do_is_equal(const std::pmr::memory_resource &other) const noexcept override
    {
        if (this == &other)
            return true;
#if defined(__cpp_rtti) || defined(__GXX_RTTI)
        auto *o = dynamic_cast<const node_resource *>(&other);
        return o != nullptr && o->node_ == node_;
#else
        return false;
#endif
    }

private:
    int node_;
};

/*
 * The node_resource of node k, shared by the whole process and never
 * destroyed (usable from static destructors, like
 * std::pmr::new_delete_resource()). std::invalid_argument if k is not a node
 * with memory. E.g. std::pmr::vector<int> v(nodal::resource_on(2));
 */
inline std::pmr::memory_resource *resource_on(int k)
{
    detail::checked_node(k);
    struct table {
        alignas(node_resource) unsigned char bytes[NODAL_MAX_NODES][sizeof(node_resource)];
        table() noexcept
        {
            for (int i = 0; i < NODAL_MAX_NODES; i++)
                ::new (static_cast<void *>(bytes[i])) node_resource(i, detail::unchecked_node{});
        }
    };
    static table *t = ::new table;   // never freed: outlives every static
    return std::launder(reinterpret_cast<node_resource *>(t->bytes[k]));
}
#endif

/* ---- classes whose objects live on a node -------------------------------- */
/*
 * struct item : nodal::on_node<2> { ... };   every `new item` is on node 2.
 */
namespace detail {
/* Every class-specific allocation form (plain, array, aligned, nothrow, the
   standard placement forms, which the others would hide) from Place, and
   every matching delete: the base of on_node<K> and on_tier<A>. new[]
   allocates the byte count the compiler passes (the elements and its
   array cookie), and every delete form frees a block of any node. */
template <class Place>
struct class_new {
    static void *operator new(std::size_t n) { return Place::alloc(n, 0); }
    static void *operator new[](std::size_t n) { return Place::alloc(n, 0); }
    static void *operator new(std::size_t n, std::align_val_t a) { return Place::alloc(n, static_cast<std::size_t>(a)); }
    static void *operator new[](std::size_t n, std::align_val_t a)
    {
        return Place::alloc(n, static_cast<std::size_t>(a));
    }
    static void *operator new(std::size_t n, const std::nothrow_t &) noexcept { return Place::alloc_nothrow(n, 0); }
    static void *operator new[](std::size_t n, const std::nothrow_t &) noexcept { return Place::alloc_nothrow(n, 0); }
    static void *operator new(std::size_t n, std::align_val_t a, const std::nothrow_t &) noexcept
    {
        return Place::alloc_nothrow(n, static_cast<std::size_t>(a));
    }
    static void *operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t &) noexcept
    {
        return Place::alloc_nothrow(n, static_cast<std::size_t>(a));
    }
    static void *operator new(std::size_t, void *where) noexcept { return where; }
    static void *operator new[](std::size_t, void *where) noexcept { return where; }

    static void operator delete(void *p) noexcept { nodal_free(p); }
    static void operator delete[](void *p) noexcept { nodal_free(p); }
    static void operator delete(void *p, std::size_t n) noexcept { nodal_free_sized(p, n); }
    static void operator delete[](void *p, std::size_t n) noexcept { nodal_free_sized(p, n); }
    static void operator delete(void *p, std::align_val_t) noexcept { nodal_free(p); }
    static void operator delete[](void *p, std::align_val_t) noexcept { nodal_free(p); }
    static void operator delete(void *p, std::size_t n, std::align_val_t a) noexcept
    {
        dealloc(p, n, static_cast<std::size_t>(a));
    }
    static void operator delete[](void *p, std::size_t n, std::align_val_t a) noexcept
    {
        dealloc(p, n, static_cast<std::size_t>(a));
    }
    static void operator delete(void *p, const std::nothrow_t &) noexcept { nodal_free(p); }
    static void operator delete[](void *p, const std::nothrow_t &) noexcept { nodal_free(p); }
    static void operator delete(void *p, std::align_val_t, const std::nothrow_t &) noexcept { nodal_free(p); }
    static void operator delete[](void *p, std::align_val_t, const std::nothrow_t &) noexcept { nodal_free(p); }
    static void operator delete(void *, void *) noexcept {}
    static void operator delete[](void *, void *) noexcept {}
};
}  // namespace detail

/*
 * Every form of detail::class_new from node K, plus the runtime-node
 * placement form new (nodal::node(k)) item, which overrides K for that
 * object, with its delete (objects created with it are deleted with a plain
 * delete).
 */
template <int K>
struct on_node : detail::class_new<detail::node_place<K>> {
    static_assert(K >= 0 && K < NODAL_MAX_NODES, "nodal::on_node<K>: K must be in [0, NODAL_MAX_NODES)");
    static constexpr int home_node = K;

    /* The base's forms, which the runtime-node ones would hide. */
    using detail::class_new<detail::node_place<K>>::operator new;
    using detail::class_new<detail::node_place<K>>::operator new[];
    using detail::class_new<detail::node_place<K>>::operator delete;
    using detail::class_new<detail::node_place<K>>::operator delete[];

    /* Runtime node: new (nodal::node(k)) T(...). */
    static void *operator new(std::size_t n, node where) { return detail::alloc(n, 0, where.id); }
    static void *operator new[](std::size_t n, node where) { return detail::alloc(n, 0, where.id); }
    static void *operator new(std::size_t n, std::align_val_t a, node where)
    {
        return detail::alloc(n, static_cast<std::size_t>(a), where.id);
    }
    static void *operator new[](std::size_t n, std::align_val_t a, node where)
    {
        return detail::alloc(n, static_cast<std::size_t>(a), where.id);
    }
    /* Called when a constructor throws in such a placement new-expression. */
    static void operator delete(void *p, node) noexcept { nodal_free(p); }
    static void operator delete[](void *p, node) noexcept { nodal_free(p); }
    static void operator delete(void *p, std::align_val_t, node) noexcept { nodal_free(p); }
    static void operator delete[](void *p, std::align_val_t, node) noexcept { nodal_free(p); }
};

/* ---- memory tiers: by attribute ------------------------------------------- */
/*
 * nodal_malloc_tier's guarantee (nodal.h, docs/tiers.md): every page on the
 * node the tier names for the allocating thread's node. A full node (or a
 * tier at its cap) runs the new-handler loop and throws std::bad_alloc; with
 * NODAL_TIER_PREFERRED or'ed into A, the next node of the tier's order is
 * tried first. An invalid A is a compile-time error.
 */
namespace detail {
template <int A>
inline constexpr bool tier_valid = (A & ~NODAL_TIER_PREFERRED) >= NODAL_TIER_LATENCY &&
                                   (A & ~NODAL_TIER_PREFERRED) <= NODAL_TIER_CAPACITY;

inline void *tier_try(std::size_t bytes, std::size_t align, int a) noexcept
{
    return align > default_align ? nodal_aligned_alloc_tier(align, bytes, a) : nodal_malloc_tier(bytes, a);
}

inline void *tier_alloc(std::size_t bytes, std::size_t align, int a)
{
    void *p = tier_try(bytes, align, a);
    if (__builtin_expect(p != nullptr, 1))
        return p;
    return new_handler_loop([=] { return tier_try(bytes, align, a); }, false);
}

inline void *tier_alloc_nothrow(std::size_t bytes, std::size_t align, int a) noexcept
{
    void *p = tier_try(bytes, align, a);
    if (__builtin_expect(p != nullptr, 1))
        return p;
    return nothrow_failure([=] { return new_handler_loop([=] { return tier_try(bytes, align, a); }, true); });
}

template <int A>
struct tier_place {
    static void *alloc(std::size_t n, std::size_t align) { return tier_alloc(n, align, A); }
    static void *alloc_nothrow(std::size_t n, std::size_t align) noexcept { return tier_alloc_nothrow(n, align, A); }
};
}  // namespace detail

/* Stateless: all allocators of one tier compare equal (the node is chosen
   per allocation, by the allocating thread's node; any thread may free). */
template <class T, int A>
class tier_allocator : public detail::fixed_allocator<T, detail::tier_place<A>> {
    static_assert(detail::tier_valid<A>, "nodal::tier_allocator<T, A>: A must be a NODAL_TIER_* value");

public:
    template <class U>
    struct rebind {
        using other = tier_allocator<U, A>;
    };

    constexpr tier_allocator() noexcept = default;
    template <class U>
    constexpr tier_allocator(const tier_allocator<U, A> &) noexcept {}

    static constexpr int tier() noexcept { return A; }
};

template <class T, int A, class U, int B>
constexpr bool operator==(const tier_allocator<T, A> &, const tier_allocator<U, B> &) noexcept
{
    return A == B;
}
template <class T, int A, class U, int B>
constexpr bool operator!=(const tier_allocator<T, A> &, const tier_allocator<U, B> &) noexcept
{
    return A != B;
}

/*
 * struct hot_index : nodal::on_tier<NODAL_TIER_LATENCY> { ... };  every `new
 * hot_index` is on the lowest-latency node near the creating thread. The
 * same forms as on_node<K> (plain, array, aligned, nothrow) and every delete.
 */
template <int A>
struct on_tier : detail::class_new<detail::tier_place<A>> {
    static_assert(detail::tier_valid<A>, "nodal::on_tier<A>: A must be a NODAL_TIER_* value");
    static constexpr int home_tier = A;
};

/* ---- make_on_node ------------------------------------------------------------ */
/* The deleter of make_on_node's unique_ptr: destroys, then frees to nodal. */
template <class T>
struct node_delete {
    constexpr node_delete() noexcept = default;
    template <class U, class = std::enable_if_t<std::is_convertible_v<U *, T *>>>
    node_delete(const node_delete<U> &) noexcept {}
    void operator()(T *p) const noexcept
    {
        static_assert(sizeof(T) > 0, "nodal::node_delete of an incomplete type");
        p->~T();
        nodal_free(const_cast<std::remove_cv_t<T> *>(p));
    }
};

/* Arrays: the deleter carries the element count. */
template <class T>
struct node_delete<T[]> {
    std::size_t count = 0;
    void operator()(T *p) const noexcept
    {
        for (std::size_t i = count; i > 0; i--)
            p[i - 1].~T();
        nodal_free(const_cast<std::remove_cv_t<T> *>(p));
    }
};

template <class T>
using unique_on_node = std::unique_ptr<T, node_delete<T>>;

/* A T constructed from args on node k. */
template <class T, class... Args>
std::enable_if_t<!std::is_array_v<T>, unique_on_node<T>> make_on_node(int k, Args &&...args)
{
    void *mem = detail::alloc(sizeof(T), alignof(T), k);
#if defined(__cpp_exceptions)
    try {
        return unique_on_node<T>(::new (mem) T(std::forward<Args>(args)...));
    } catch (...) {
        nodal_free(mem);
        throw;
    }
#else
    return unique_on_node<T>(::new (mem) T(std::forward<Args>(args)...));
#endif
}

/* n value-initialised Ts on node k: make_on_node<T[]>(k, n). */
template <class T>
std::enable_if_t<std::is_array_v<T> && std::extent_v<T> == 0, unique_on_node<T>>
make_on_node(int k, std::size_t n)
{
    using E = std::remove_extent_t<T>;
    if (n > detail::max_count<E>())
        detail::throw_bad_array_new_length();
    E *mem = static_cast<E *>(detail::alloc(n * sizeof(E), alignof(E), k));
    std::size_t done = 0;
#if defined(__cpp_exceptions)
    try {
        for (; done < n; done++)
            ::new (static_cast<void *>(mem + done)) E();
    } catch (...) {
        while (done > 0)
            mem[--done].~E();
        nodal_free(mem);
        throw;
    }
#else
    for (; done < n; done++)
        ::new (static_cast<void *>(mem + done)) E();
#endif
    return unique_on_node<T>(mem, node_delete<T>{n});
}

template <class T, class... Args>
std::enable_if_t<std::extent_v<T> != 0> make_on_node(int, Args &&...) = delete;

/* Destroys and frees an object made with new (nodal::node(k)) T: works
   with any nodal library (plain `delete p` needs libnodal's operator delete,
   i.e. libnodal.so or libnodal.a, linked or preloaded). */
template <class T>
void destroy(T *p) noexcept
{
    if (p == nullptr)
        return;
    p->~T();
    nodal_free(const_cast<std::remove_cv_t<T> *>(p));
}

}  // namespace nodal

/* ---- the runtime-node placement form for any type ----------------------------- */
/* T *p = new (nodal::node(k)) T(args...): on node k. */
inline void *operator new(std::size_t n, nodal::node where) { return nodal::detail::alloc(n, 0, where.id); }
inline void *operator new[](std::size_t n, nodal::node where) { return nodal::detail::alloc(n, 0, where.id); }
inline void *operator new(std::size_t n, std::align_val_t a, nodal::node where)
{
    return nodal::detail::alloc(n, static_cast<std::size_t>(a), where.id);
}
inline void *operator new[](std::size_t n, std::align_val_t a, nodal::node where)
{
    return nodal::detail::alloc(n, static_cast<std::size_t>(a), where.id);
}
/* Called when a constructor throws in such a new-expression. */
inline void operator delete(void *p, nodal::node) noexcept { nodal_free(p); }
inline void operator delete[](void *p, nodal::node) noexcept { nodal_free(p); }
inline void operator delete(void *p, std::align_val_t, nodal::node) noexcept { nodal_free(p); }
inline void operator delete[](void *p, std::align_val_t, nodal::node) noexcept { nodal_free(p); }

#endif /* NODAL_HPP */
