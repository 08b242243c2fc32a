/*
 * smoke_cxx.cpp - on other architectures (aarch64 under qemu-user): nodal's
 * operator new/delete are the ones a C++ program gets (the mangled names
 * match the target's ABI), they allocate from nodal (nodal_usable_size
 * knows the blocks), over-aligned and array forms work, and a failure
 * throws std::bad_alloc / returns nullptr from the nothrow form.
 */
#include <nodal.h>

#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <new>
#include <string>
#include <vector>

struct alignas(128) Wide {
    char bytes[200];
    ~Wide() { bytes[0] = 0; }
};

static int fail(const char *what)
{
    std::fprintf(stderr, "smoke_cxx: expected %s\n", what);
    return 1;
}

int main()
{
    int *one = new int(7);
    if (nodal_usable_size(one) < sizeof(int))
        return fail("new int to be a nodal block");
    delete one;
    Wide *w = new Wide[33];
    if (reinterpret_cast<std::uintptr_t>(w) % 128 != 0)
        return fail("new Wide[33] to be 128-byte aligned");
    delete[] w;
    std::vector<std::string> v;
    for (int i = 0; i < 1000; i++)
        v.push_back(std::string(static_cast<std::size_t>(i % 300), 'x'));
    if (nodal_usable_size(v.data()) < v.size() * sizeof(std::string))
        return fail("the vector's array to be a nodal block");
    bool threw = false;
    try {
        void *p = ::operator new(static_cast<std::size_t>(1) << 62);
        ::operator delete(p);
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    if (!threw)
        return fail("operator new(2^62) to throw std::bad_alloc");
    if (::operator new(static_cast<std::size_t>(1) << 62, std::nothrow) != nullptr)
        return fail("operator new(2^62, nothrow) to return nullptr");
    std::puts("nodal C++ operators: ok");
    return 0;
}
