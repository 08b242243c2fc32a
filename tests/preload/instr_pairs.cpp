// instr_pairs.cpp - tight allocate/free pairs of one size, one thread, for
// instr_bounds.sh to count under callgrind with LD_PRELOAD=libnodal.so.
//   instr_pairs malloc|new|posix_memalign|aligned_alloc N [SIZE]
// malloc: malloc(SIZE) then free; new: ::operator new(SIZE) then the sized
// ::operator delete(p, SIZE) (what `new T` / `delete p` compile to);
// posix_memalign / aligned_alloc: SIZE at an alignment of 4 KiB (an I/O
// buffer's), then free. SIZE is 32 by default, 4,096 for the aligned
// modes. 20,000 pairs of warm-up, then N pairs. Built without nodal.
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

void pairs_posix_memalign(long n, std::size_t size)
{
    for (long i = 0; i < n; i++) {
        void *p = nullptr;
        if (posix_memalign(&p, 4096, size) != 0)
            std::abort();
        keep(p);
        std::free(p);
    }
}

void pairs_aligned_alloc(long n, std::size_t size)
{
    for (long i = 0; i < n; i++) {
        void *p = std::aligned_alloc(4096, size);
        keep(p);
        std::free(p);
    }
}

struct mode {
    const char *name;
    void (*run)(long, std::size_t);
    std::size_t size;   // the default SIZE
};
const mode modes[] = {
    {"malloc", pairs_malloc, 32},
    {"new", pairs_new, 32},
    {"posix_memalign", pairs_posix_memalign, 4096},
    {"aligned_alloc", pairs_aligned_alloc, 4096},
};

}  // namespace

int main(int argc, char **argv)
{
    const mode *m = nullptr;
    for (const mode &each : modes)
        if (argc >= 3 && std::strcmp(argv[1], each.name) == 0)
            m = &each;
    if (m == nullptr) {
        std::fprintf(stderr, "usage: instr_pairs malloc|new|posix_memalign|aligned_alloc N [SIZE]\n");
        return 2;
    }
    long n = std::atol(argv[2]);
    std::size_t size = argc > 3 ? static_cast<std::size_t>(std::atol(argv[3])) : m->size;
    m->run(20000, size);
    m->run(n, size);
    return 0;
}
