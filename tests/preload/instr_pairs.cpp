// instr_pairs.cpp - tight allocate/free pairs of one size, one thread, for
// instr_bounds.sh to count under callgrind with LD_PRELOAD=libnodal.so.
//   instr_pairs malloc|new N [SIZE]
// malloc: malloc(SIZE) then free; new: ::operator new(SIZE) then the sized
// ::operator delete(p, SIZE) (what `new T` / `delete p` compile to). 20,000
// pairs of warm-up, then N pairs. Built without nodal.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace {

// The pointer escapes: the compiler may not drop the pair.
inline void keep(void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

void pairs_malloc(long n, std::size_t size)
{
    for (long i = 0; i < n; i++) {
        void *p = std::malloc(size);
        keep(p);
        std::free(p);
    }
}

void pairs_new(long n, std::size_t size)
{
    for (long i = 0; i < n; i++) {
        void *p = ::operator new(size);
        keep(p);
        ::operator delete(p, size);
    }
}

}  // namespace

int main(int argc, char **argv)
{
    if (argc < 3 || (std::strcmp(argv[1], "malloc") != 0 && std::strcmp(argv[1], "new") != 0)) {
        std::fprintf(stderr, "usage: instr_pairs malloc|new N [SIZE]\n");
        return 2;
    }
    bool use_new = std::strcmp(argv[1], "new") == 0;
    long n = std::atol(argv[2]);
    std::size_t size = argc > 3 ? static_cast<std::size_t>(std::atol(argv[3])) : 32;
    void (*run)(long, std::size_t) = use_new ? pairs_new : pairs_malloc;
    run(20000, size);
    run(n, size);
    return 0;
}
