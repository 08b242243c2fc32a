/*
 * operators.cpp - nodal's replaceable operator new/delete: every form C++17
 * defines is nodal's (not libstdc++'s calling malloc), allocates from nodal
 * and frees back to it, new[] of every length runs every constructor and
 * destructor in a block large enough for the elements and the array
 * cookie, alignment is honoured, and failure follows the standard (the
 * new-handler loop, std::bad_alloc, nullptr from the nothrow forms).
 *
 * Variants (--variant=): std (linked with libnodal.so), static (libnodal.a),
 * preload (not linked with nodal; run with LD_PRELOAD=libnodal.so).
 * Knobs: --max-n=N (longest array, default 10000).
 */
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

#include "cpp_check.hpp"

namespace {

const std::size_t impossible = std::size_t(1) << 62;

/* ---- every form, paired with every delete that may free it --------------- */
struct form_pair {
    const char *name;
    void *(*alloc)(std::size_t n);
    void (*release)(void *p, std::size_t n);
    std::size_t align;   // 0: default
};

const std::align_val_t al256 = std::align_val_t(256);

const form_pair pairs[] = {
    { "new(n) / delete(p)", [](std::size_t n) { return ::operator new(n); },
      [](void *p, std::size_t) { ::operator delete(p); }, 0 },
    { "new(n) / delete(p, n)", [](std::size_t n) { return ::operator new(n); },
      [](void *p, std::size_t n) { ::operator delete(p, n); }, 0 },
    { "new(n) / delete(p, nothrow)", [](std::size_t n) { return ::operator new(n); },
      [](void *p, std::size_t) { ::operator delete(p, std::nothrow); }, 0 },
    { "new[](n) / delete[](p)", [](std::size_t n) { return ::operator new[](n); },
      [](void *p, std::size_t) { ::operator delete[](p); }, 0 },
    { "new[](n) / delete[](p, n)", [](std::size_t n) { return ::operator new[](n); },
      [](void *p, std::size_t n) { ::operator delete[](p, n); }, 0 },
    { "new[](n) / delete[](p, nothrow)", [](std::size_t n) { return ::operator new[](n); },
      [](void *p, std::size_t) { ::operator delete[](p, std::nothrow); }, 0 },
    { "new(n, nothrow) / delete(p)", [](std::size_t n) { return ::operator new(n, std::nothrow); },
      [](void *p, std::size_t) { ::operator delete(p); }, 0 },
    { "new[](n, nothrow) / delete[](p)",
      [](std::size_t n) { return ::operator new[](n, std::nothrow); },
      [](void *p, std::size_t) { ::operator delete[](p); }, 0 },
    { "new(n, al) / delete(p, al)", [](std::size_t n) { return ::operator new(n, al256); },
      [](void *p, std::size_t) { ::operator delete(p, al256); }, 256 },
    { "new(n, al) / delete(p, n, al)", [](std::size_t n) { return ::operator new(n, al256); },
      [](void *p, std::size_t n) { ::operator delete(p, n, al256); }, 256 },
    { "new(n, al) / delete(p, al, nothrow)", [](std::size_t n) { return ::operator new(n, al256); },
      [](void *p, std::size_t) { ::operator delete(p, al256, std::nothrow); }, 256 },
    { "new[](n, al) / delete[](p, al)", [](std::size_t n) { return ::operator new[](n, al256); },
      [](void *p, std::size_t) { ::operator delete[](p, al256); }, 256 },
    { "new[](n, al) / delete[](p, n, al)", [](std::size_t n) { return ::operator new[](n, al256); },
      [](void *p, std::size_t n) { ::operator delete[](p, n, al256); }, 256 },
    { "new[](n, al) / delete[](p, al, nothrow)",
      [](std::size_t n) { return ::operator new[](n, al256); },
      [](void *p, std::size_t) { ::operator delete[](p, al256, std::nothrow); }, 256 },
    { "new(n, al, nothrow) / delete(p, al)",
      [](std::size_t n) { return ::operator new(n, al256, std::nothrow); },
      [](void *p, std::size_t) { ::operator delete(p, al256); }, 256 },
    { "new[](n, al, nothrow) / delete[](p, al)",
      [](std::size_t n) { return ::operator new[](n, al256, std::nothrow); },
      [](void *p, std::size_t) { ::operator delete[](p, al256); }, 256 },
};

const std::size_t probe_sizes[] = { 1, 24, 1000, 70000, 300000 };
const int blocks_per_probe = 32;

void every_operator_form_allocates_from_nodal_and_frees_back()
{
    static void *blocks[blocks_per_probe];
    nd_totals a = nd_stats_totals(), b = nd_stats_totals();
    EXPECT(a.requests == b.requests && a.allocated == b.allocated,
           "two statistics snapshots in a row to agree (nothing else allocates here): requests "
           "%.0f / %.0f, allocated %.0f / %.0f", a.requests, b.requests, a.allocated, b.allocated);
    for (const form_pair &f : pairs) {
        for (std::size_t s : probe_sizes) {
            nd_totals before = nd_stats_totals();
            for (void *&p : blocks) {
                p = f.alloc(s);
                EXPECT(p != nullptr, "%s of %zu bytes to return a block", f.name, s);
                EXPECT(f.align == 0 || nd_is_aligned(p, f.align), "%s of %zu bytes to be %zu-aligned",
                       f.name, s, f.align);
                EXPECT(nodal_usable_size(p) >= s,
                       "%s of %zu bytes to be a nodal block of at least that size, nodal says %zu",
                       f.name, s, nodal_usable_size(p));
                std::memset(p, 0x5a, s);
            }
            nd_totals mid = nd_stats_totals();
            EXPECT(mid.requests - before.requests == blocks_per_probe,
                   "%d %s of %zu bytes to add exactly %d requests to nodal's statistics, they "
                   "went from %.0f to %.0f", blocks_per_probe, f.name, s, blocks_per_probe,
                   before.requests, mid.requests);
            EXPECT(mid.allocated - before.allocated >= double(blocks_per_probe * s),
                   "%d live blocks of %zu bytes (%s) to add at least %zu bytes to nodal's "
                   "allocated bytes, they went from %.0f to %.0f", blocks_per_probe, s, f.name,
                   blocks_per_probe * s, before.allocated, mid.allocated);
            for (void *p : blocks)
                f.release(p, s);
            nd_totals after = nd_stats_totals();
            EXPECT(after.frees - mid.frees == blocks_per_probe,
                   "%s: %d deletes of %zu-byte blocks to add exactly %d frees to nodal's "
                   "statistics, they went from %.0f to %.0f", f.name, blocks_per_probe, s,
                   blocks_per_probe, mid.frees, after.frees);
            EXPECT(after.allocated == before.allocated,
                   "%s: nodal's allocated bytes to come back to %.0f after the deletes of "
                   "%zu-byte blocks, they are %.0f", f.name, before.allocated, s, after.allocated);
        }
    }
}

/* ---- the symbols a C++ program binds are nodal's -------------------------- */
struct form_addr {
    const char *name;
    void *addr;
};

void operators_resolve_to_nodal_not_libstdcxx()
{
    using std::align_val_t;
    using std::nothrow_t;
    using std::size_t;
    const form_addr forms[] = {
#define FORM(sig, op) { #op " as " #sig, reinterpret_cast<void *>(static_cast<sig>(&op)) }
        FORM(void *(*)(size_t), ::operator new),
        FORM(void *(*)(size_t), ::operator new[]),
        FORM(void *(*)(size_t, const nothrow_t &), ::operator new),
        FORM(void *(*)(size_t, const nothrow_t &), ::operator new[]),
        FORM(void *(*)(size_t, align_val_t), ::operator new),
        FORM(void *(*)(size_t, align_val_t), ::operator new[]),
        FORM(void *(*)(size_t, align_val_t, const nothrow_t &), ::operator new),
        FORM(void *(*)(size_t, align_val_t, const nothrow_t &), ::operator new[]),
        FORM(void (*)(void *), ::operator delete),
        FORM(void (*)(void *), ::operator delete[]),
        FORM(void (*)(void *, size_t), ::operator delete),
        FORM(void (*)(void *, size_t), ::operator delete[]),
        FORM(void (*)(void *, const nothrow_t &), ::operator delete),
        FORM(void (*)(void *, const nothrow_t &), ::operator delete[]),
        FORM(void (*)(void *, align_val_t), ::operator delete),
        FORM(void (*)(void *, align_val_t), ::operator delete[]),
        FORM(void (*)(void *, size_t, align_val_t), ::operator delete),
        FORM(void (*)(void *, size_t, align_val_t), ::operator delete[]),
        FORM(void (*)(void *, align_val_t, const nothrow_t &), ::operator delete),
        FORM(void (*)(void *, align_val_t, const nothrow_t &), ::operator delete[]),
#undef FORM
    };
    nd_need_nodal();
    static char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    EXPECT(len > 0, "/proc/self/exe to name the program");
    exe[len] = '\0';
    bool is_static = nd_variant && std::strcmp(nd_variant, "static") == 0;
    for (std::size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        Dl_info info{};
        EXPECT(dladdr(forms[i].addr, &info) != 0 && info.dli_fname != nullptr,
               "dladdr to find the object defining operator %s (form %zu)", forms[i].name, i);
        const char *want = is_static ? exe : "libnodal.so";
        bool ok = is_static ? std::strcmp(info.dli_fname, exe) == 0
                            : std::strstr(info.dli_fname, "libnodal.so") != nullptr;
        EXPECT(ok, "%s (form %zu of 20) to come from %s, it comes from %s",
               forms[i].name, i, want, info.dli_fname);
    }
}

/* ---- new[] of every length ------------------------------------------------- */
template <std::size_t Size, std::size_t Align>
struct alignas(Align) tracked {
    static long ctors, dtors;
    static std::uint64_t next;
    std::uint64_t id, check;
    unsigned char pad[Size - 2 * sizeof(std::uint64_t)];
    tracked() : id(next++), check(~id) { ctors++; }
    ~tracked()
    {
        EXPECT(check == ~id, "element %llu of a %zu-byte type to be intact when destroyed",
               static_cast<unsigned long long>(id), Size);
        dtors++;
    }
};
template <std::size_t S, std::size_t A> long tracked<S, A>::ctors;
template <std::size_t S, std::size_t A> long tracked<S, A>::dtors;
template <std::size_t S, std::size_t A> std::uint64_t tracked<S, A>::next;

/* new T[n] for n = 1..max_n: every element constructed, aligned and intact
   in a nodal block that holds the elements and the array cookie (the
   Itanium ABI stores the count in the size_t just before the elements). */
template <class T>
void array_lengths(long max_n)
{
    const std::size_t cookie = std::max(sizeof(std::size_t), alignof(T));
    for (long n = 1; n <= max_n; n++) {
        long c0 = T::ctors, d0 = T::dtors;
        T *a = new T[static_cast<std::size_t>(n)];
        EXPECT(T::ctors - c0 == n, "new T[%ld] (sizeof %zu) to run %ld constructors, it ran %ld", n,
               sizeof(T), n, T::ctors - c0);
        EXPECT(nd_is_aligned(a, alignof(T)), "new T[%ld] to be %zu-aligned, got %p", n, alignof(T),
               static_cast<void *>(a));
        EXPECT(reinterpret_cast<std::size_t *>(a)[-1] == static_cast<std::size_t>(n),
               "the array cookie of new T[%ld] to hold %ld", n, n);
        void *block = reinterpret_cast<char *>(a) - cookie;
        std::size_t need = static_cast<std::size_t>(n) * sizeof(T) + cookie;
        EXPECT(nodal_usable_size(block) >= need,
               "new T[%ld] (sizeof %zu, cookie %zu) to get a nodal block of at least %zu bytes, "
               "nodal's usable size is %zu", n, sizeof(T), cookie, need, nodal_usable_size(block));
        for (long i = 0; i < n; i++)
            EXPECT(a[i].check == ~a[i].id, "element %ld of new T[%ld] to be intact", i, n);
        delete[] a;
        EXPECT(T::dtors - d0 == n, "delete[] of T[%ld] to run %ld destructors, it ran %ld", n, n,
               T::dtors - d0);
    }
}

void array_new_of_every_length_runs_every_constructor_and_destructor()
{
    nd_need_nodal();
    long max_n = nd_opt_long("max-n", 10000);
    nd_totals before = nd_stats_totals();
    array_lengths<tracked<16, 8>>(max_n);
    array_lengths<tracked<24, 8>>(max_n);
    array_lengths<tracked<64, 64>>(max_n);
    array_lengths<tracked<256, 256>>(max_n);
    array_lengths<tracked<4096, 4096>>(std::min(max_n, 300L));
    nd_totals after = nd_stats_totals();
    EXPECT(after.allocated == before.allocated,
           "nodal's allocated bytes to be back at %.0f after every array was deleted, they are %.0f",
           before.allocated, after.allocated);
    EXPECT(after.requests - before.requests >= double(4 * max_n),
           "every new[] to be a request to nodal: %.0f requests for more than %ld arrays",
           after.requests - before.requests, 4 * max_n);
}

/* ---- failure ---------------------------------------------------------------- */
const char *const throwing_names[4] = { "new(n)", "new[](n)", "new(n, al)", "new[](n, al)" };
void *throwing(int i, std::size_t n)
{
    switch (i) {
    case 0: return ::operator new(n);
    case 1: return ::operator new[](n);
    case 2: return ::operator new(n, al256);
    default: return ::operator new[](n, al256);
    }
}
const char *const nothrow_names[4] = { "new(n, nothrow)", "new[](n, nothrow)",
                                       "new(n, al, nothrow)", "new[](n, al, nothrow)" };
void *nothrowing(int i, std::size_t n)
{
    switch (i) {
    case 0: return ::operator new(n, std::nothrow);
    case 1: return ::operator new[](n, std::nothrow);
    case 2: return ::operator new(n, al256, std::nothrow);
    default: return ::operator new[](n, al256, std::nothrow);
    }
}

/* What a throwing form did: 0 returned, 1 std::bad_alloc, 2 another
   exception derived from it (my_bad), 3 something else. */
struct my_bad : std::bad_alloc {};
int outcome(int i, std::size_t n)
{
    try {
        void *p = throwing(i, n);
        ::operator delete(p);
        return 0;
    } catch (const my_bad &) {
        return 2;
    } catch (const std::bad_alloc &) {
        return 1;
    } catch (...) {
        return 3;
    }
}

void impossible_sizes_throw_bad_alloc_and_nothrow_forms_return_null()
{
    nd_need_nodal();
    std::set_new_handler(nullptr);
    for (int i = 0; i < 4; i++) {
        int r = outcome(i, impossible);
        EXPECT(r == 1, "operator %s of 2^62 bytes to throw std::bad_alloc, outcome %d", throwing_names[i], r);
        EXPECT(nothrowing(i, impossible) == nullptr, "operator %s of 2^62 bytes to return nullptr",
               nothrow_names[i]);
    }
    void *p = ::operator new(100);   // still works afterwards
    EXPECT(nodal_usable_size(p) >= 100, "operator new(100) to work after the failures");
    ::operator delete(p);
}

int handler_calls;
void give_up_on_third_call()
{
    if (++handler_calls == 3)
        std::set_new_handler(nullptr);
}
void throw_my_bad() { handler_calls++; throw my_bad(); }

void new_handler_runs_until_it_gives_up()
{
    nd_need_nodal();
    for (int i = 0; i < 4; i++) {
        handler_calls = 0;
        std::set_new_handler(give_up_on_third_call);
        int r = outcome(i, impossible);
        EXPECT(r == 1 && handler_calls == 3,
               "operator %s to call the new_handler until it uninstalls itself (3 calls) and then "
               "throw std::bad_alloc; %d calls, outcome %d", throwing_names[i], handler_calls, r);
        handler_calls = 0;
        std::set_new_handler(give_up_on_third_call);
        void *p = nothrowing(i, impossible);
        EXPECT(p == nullptr && handler_calls == 3,
               "operator %s to call the new_handler until it uninstalls itself (3 calls) and then "
               "return nullptr; %d calls, result %p", nothrow_names[i], handler_calls, p);
    }
    std::set_new_handler(nullptr);
}

void nothrow_forms_return_null_when_the_handler_throws()
{
    nd_need_nodal();
    for (int i = 0; i < 4; i++) {
        handler_calls = 0;
        std::set_new_handler(throw_my_bad);
        int r = outcome(i, impossible);
        EXPECT(r == 2 && handler_calls == 1,
               "operator %s to let the new_handler's exception (derived from std::bad_alloc) "
               "through after one call; %d calls, outcome %d", throwing_names[i], handler_calls, r);
        handler_calls = 0;
        void *p = nothrowing(i, impossible);
        EXPECT(p == nullptr && handler_calls == 1,
               "operator %s to return nullptr when the new_handler throws (1 call); %d calls, "
               "result %p", nothrow_names[i], handler_calls, p);
    }
    std::set_new_handler(nullptr);
}

void zero_byte_requests_return_distinct_blocks()
{
    nd_need_nodal();
    void *a = ::operator new(0), *b = ::operator new(0);
    void *c = ::operator new[](0), *d = ::operator new(0, al256);
    void *e = ::operator new(0, std::nothrow);
    void *all[5] = { a, b, c, d, e };
    for (int i = 0; i < 5; i++) {
        EXPECT(all[i] != nullptr, "a zero-byte operator new (%d) to return a block", i);
        for (int j = 0; j < i; j++)
            EXPECT(all[i] != all[j], "zero-byte operator new blocks %d and %d to differ", j, i);
    }
    EXPECT(nd_is_aligned(d, 256), "operator new(0, 256) to be 256-aligned");
    ::operator delete(a);
    ::operator delete(b, std::size_t(0));
    ::operator delete[](c);
    ::operator delete(d, al256);
    ::operator delete(e);
}

const nd_case cases[] = {
    ND_CASE(every_operator_form_allocates_from_nodal_and_frees_back),
    ND_CASE(operators_resolve_to_nodal_not_libstdcxx),
    ND_CASE(array_new_of_every_length_runs_every_constructor_and_destructor),
    ND_CASE(impossible_sizes_throw_bad_alloc_and_nothrow_forms_return_null),
    ND_CASE(new_handler_runs_until_it_gives_up),
    ND_CASE(nothrow_forms_return_null_when_the_handler_throws),
    ND_CASE(zero_byte_requests_return_distinct_blocks),
};

}  // namespace

ND_MAIN(cases)
