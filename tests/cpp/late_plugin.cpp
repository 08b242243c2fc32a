/*
 * late_plugin.cpp - a C++ module that a C program loads with dlopen after
 * start-up (late_runtime.c), so libstdc++ arrives after libnodal: its
 * operator new is still nodal's, and failure still follows the standard
 * (the new-handler loop, then std::bad_alloc; nullptr from the nothrow
 * form). Returns 0, or the number of the first check that failed.
 */
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

namespace {
int handler_calls;
void give_up_on_third_call()
{
    if (++handler_calls == 3)
        std::set_new_handler(nullptr);
}
}  // namespace

extern "C" int plugin_run(void)
{
    Dl_info info{};
    void *op = reinterpret_cast<void *>(static_cast<void *(*)(std::size_t)>(&::operator new));
    if (!dladdr(op, &info) || !info.dli_fname || !std::strstr(info.dli_fname, "libnodal.so")) {
        std::fprintf(stderr, "operator new comes from %s\n", info.dli_fname ? info.dli_fname : "?");
        return 1;
    }
    std::vector<std::string> v;
    for (int i = 0; i < 1000; i++)
        v.emplace_back(static_cast<std::size_t>(i % 200), 'x');
    if (v[999].size() != 999 % 200)
        return 2;
    const std::size_t impossible = std::size_t(1) << 62;
    bool caught = false;
    try {
        ::operator delete(::operator new(impossible));
    } catch (const std::bad_alloc &) {
        caught = true;
    }
    if (!caught)
        return 3;
    if (::operator new(impossible, std::nothrow) != nullptr)
        return 4;
    handler_calls = 0;
    std::set_new_handler(give_up_on_third_call);
    caught = false;
    try {
        ::operator delete[](::operator new[](impossible));
    } catch (const std::bad_alloc &) {
        caught = true;
    }
    if (!caught || handler_calls != 3) {
        std::fprintf(stderr, "new[] with a handler: caught %d after %d handler calls (3 expected)\n",
                     caught, handler_calls);
        return 5;
    }
    caught = false;
    try {
        ::operator delete(::operator new(impossible, std::align_val_t(64)), std::align_val_t(64));
    } catch (const std::bad_alloc &) {
        caught = true;
    }
    return caught ? 0 : 6;
}
