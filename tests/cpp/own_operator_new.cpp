/*
 * own_operator_new.cpp - a program that replaces operator new(size_t) and
 * operator delete(void *) keeps them with nodal linked or preloaded: its
 * new-expressions use them, and the forms it did not replace behave as the
 * standard's defaults do - new[] and the nothrow forms call its operator
 * new, the sized, array and nothrow deletes call its operator delete - so
 * no block of its own ever reaches nodal's free and no nodal block reaches
 * its delete. The aligned family, which it did not replace, stays nodal's.
 *
 * The program's operators serve a private arena and refuse (abort) any
 * pointer they did not hand out.
 *
 * Variants: std (linked with libnodal.so), static (libnodal.a: the
 * program's strong definitions win over the library's weak ones without a
 * clash), preload (LD_PRELOAD=libnodal.so).
 */
#include <cstdio>
#include <cstdlib>
#include <new>

#include "cpp_check.hpp"

namespace {

alignas(64) unsigned char arena[8 << 20];
std::size_t arena_used;
long own_news, own_deletes, own_throws;

bool in_arena(const void *p)
{
    auto *c = static_cast<const unsigned char *>(p);
    return c >= arena && c < arena + sizeof arena;
}

}  // namespace

/* noinline: the compiler must not see that the blocks are in a static array. */
__attribute__((noinline)) void *operator new(std::size_t n)
{
    std::size_t at = (arena_used + 15) & ~std::size_t(15);
    if (n > sizeof arena - at) {
        own_throws++;
        throw std::bad_alloc();
    }
    arena_used = at + (n ? n : 1);
    own_news++;
    return arena + at;
}

__attribute__((noinline)) void operator delete(void *p) noexcept
{
    if (p == nullptr)
        return;
    if (!in_arena(p)) {
        std::fprintf(stderr, "FAIL %s: expected the program's operator delete to get only its own "
                             "blocks, it got %p\n", nd_case_name, p);
        std::_Exit(1);
    }
    own_deletes++;
}

namespace {

struct with_dtor {
    int v = 3;
    ~with_dtor() { v = 0; }
};

void check_counts(const char *what, long news0, long dels0, long want_news, long want_dels)
{
    EXPECT(own_news - news0 == want_news && own_deletes - dels0 == want_dels,
           "%s to call the program's operator new %ld and operator delete %ld times, they ran "
           "%ld and %ld times", what, want_news, want_dels, own_news - news0, own_deletes - dels0);
}

void new_expressions_use_the_programs_operator_new()
{
    long n0 = own_news, d0 = own_deletes;
    int *p = new int(5);
    nd_escape(p);
    EXPECT(in_arena(p), "new int to come from the program's arena");
    delete p;   // a sized delete: operator delete(void *, size_t) -> the program's delete
    check_counts("new int / delete", n0, d0, 1, 1);
}

void array_and_nothrow_forms_reach_the_programs_operator_new()
{
    long n0 = own_news, d0 = own_deletes;
    with_dtor *a = new with_dtor[10];
    EXPECT(in_arena(a), "new with_dtor[10] to come from the program's arena");
    delete[] a;
    check_counts("new T[10] / delete[]", n0, d0, 1, 1);

    n0 = own_news, d0 = own_deletes;
    int *q = new (std::nothrow) int(1);
    EXPECT(q != nullptr && in_arena(q), "new (std::nothrow) int to come from the program's arena");
    ::operator delete(q, std::nothrow);
    int *r = new (std::nothrow) int[4];
    EXPECT(r != nullptr && in_arena(r), "new (std::nothrow) int[4] to come from the program's arena");
    ::operator delete[](r, std::nothrow);
    void *s = ::operator new[](100);
    ::operator delete[](s, std::size_t(100));
    check_counts("nothrow new, nothrow delete, new[], sized delete[]", n0, d0, 3, 3);
}

void nothrow_new_returns_null_when_the_programs_new_throws()
{
    long t0 = own_throws;
    void *p = ::operator new(std::size_t(1) << 40, std::nothrow);
    EXPECT(p == nullptr && own_throws - t0 == 1,
           "operator new(2^40, nothrow) to call the program's operator new, which throws, and "
           "return nullptr; result %p, %ld throws", p, own_throws - t0);
    void *q = ::operator new[](std::size_t(1) << 40, std::nothrow);
    EXPECT(q == nullptr && own_throws - t0 == 2,
           "operator new[](2^40, nothrow) to do the same; result %p, %ld throws", q,
           own_throws - t0);
}

void aligned_forms_it_did_not_replace_stay_nodal()
{
    nd_need_nodal();
    struct alignas(128) wide {
        char c[300];
    };
    long n0 = own_news, d0 = own_deletes;
    wide *w = new wide;
    wide *v = new wide[5];
    EXPECT(!in_arena(w) && nodal_usable_size(w) >= sizeof(wide) && nd_is_aligned(w, 128),
           "new of a 128-aligned type (the aligned form the program did not replace) to be a "
           "128-aligned nodal block");
    EXPECT(!in_arena(v) && nodal_usable_size(v) >= 5 * sizeof(wide),
           "new[] of a 128-aligned type to be a nodal block");
    delete w;
    delete[] v;
    check_counts("aligned new and delete", n0, d0, 0, 0);
}

void malloc_stays_nodal()
{
    nd_need_nodal();
    void *p = std::malloc(1000);
    EXPECT(p != nullptr && nodal_usable_size(p) >= 1000, "malloc(1000) to be a nodal block");
    std::free(p);
}

const nd_case cases[] = {
    ND_CASE(new_expressions_use_the_programs_operator_new),
    ND_CASE(array_and_nothrow_forms_reach_the_programs_operator_new),
    ND_CASE(nothrow_new_returns_null_when_the_programs_new_throws),
    ND_CASE(aligned_forms_it_did_not_replace_stay_nodal),
    ND_CASE(malloc_stays_nodal),
};

}  // namespace

ND_MAIN(cases)
