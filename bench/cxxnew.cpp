/*
 * cxxnew.cpp - the cost of C++ operator new and delete, with nothing else
 * going on: what `new T` and `delete p` compile to for a complete type T,
 * i.e. ::operator new(size) and the sized ::operator delete(p, size).
 *
 *   -m pair     p = ::operator new(size); ::operator delete(p, size); repeated
 *   -m batch    -b blocks (default 1,000) allocated, then all deleted in the
 *               same order
 *   -a new      the operators above (default)
 *   -a malloc   malloc/free in the same loops: the same binary's C pair, for
 *               "operator new costs no more than malloc"
 *   -a unsized  ::operator new / ::operator delete(p) (no size: deletes
 *               through a base pointer without a virtual destructor's size,
 *               or from code built with -fno-sized-deallocation)
 *
 * The allocator comes in with LD_PRELOAD like in micro.c: jemalloc,
 * mimalloc, tcmalloc and nodal each define operator new and delete
 * themselves; with no preload (glibc) they are libstdc++'s, which call
 * malloc and free. Every thread runs the same loop; the total -n operations
 * are split over the -t threads, after -w warm-up iterations each.
 * Reported like micro.c: core-normalised wall time (ns_pair) and CPU time
 * (cpu_ns_pair) per new+delete pair.
 */
#include "harness.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace {

enum class mode { pair, batch };
enum class api { op_new, op_malloc, op_unsized };
const char *const api_names[] = { "new", "malloc", "unsized" };

struct cfg {
    mode m = mode::pair;
    api a = api::op_new;
    std::size_t size = 32;
    long long ops = 0, warm = 0;   // per thread
    int batch = 1000;
};

template <api A>
inline void *get(std::size_t n)
{
    if constexpr (A == api::op_malloc)
        return std::malloc(n);
    else
        return ::operator new(n);
}

template <api A>
inline void put(void *p, std::size_t n)
{
    if constexpr (A == api::op_malloc)
        std::free(p);
    else if constexpr (A == api::op_unsized)
        ::operator delete(p);
    else
        ::operator delete(p, n);
}

template <api A>
void pairs(std::size_t size, long long n)
{
    for (long long i = 0; i < n; i++) {
        void *p = get<A>(size);
        escape(p);
        put<A>(p, size);
    }
}

template <api A>
void batches(std::size_t size, void **slots, int b, long long rounds)
{
    for (long long r = 0; r < rounds; r++) {
        for (int i = 0; i < b; i++) {
            slots[i] = get<A>(size);
            escape(slots[i]);
        }
        for (int i = 0; i < b; i++)
            put<A>(slots[i], size);
    }
}

template <api A>
void run(bench_thread *t, const cfg &c)
{
    if (c.m == mode::pair) {
        pairs<A>(c.size, c.warm);
        bench_sync(t);
        pairs<A>(c.size, c.ops);
        t->ops = static_cast<uint64_t>(c.ops);
        return;
    }
    void **slots = static_cast<void **>(std::calloc(static_cast<std::size_t>(c.batch), sizeof(void *)));
    long long rounds = c.ops / c.batch, wrounds = c.warm / c.batch;
    batches<A>(c.size, slots, c.batch, wrounds > 0 ? wrounds : 1);
    bench_sync(t);
    batches<A>(c.size, slots, c.batch, rounds);
    bench_stop(t);
    t->ops = static_cast<uint64_t>(rounds * c.batch);
    std::free(slots);
}

void worker(bench_thread *t)
{
    const cfg &c = *static_cast<const cfg *>(t->arg);
    switch (c.a) {
    case api::op_new: run<api::op_new>(t, c); break;
    case api::op_malloc: run<api::op_malloc>(t, c); break;
    case api::op_unsized: run<api::op_unsized>(t, c); break;
    }
}

[[noreturn]] void usage()
{
    std::fprintf(stderr, "usage: cxxnew [-m pair|batch] [-a new,malloc,unsized] [-s sizes] [-t threads]\n"
                         "              [-n ops] [-w warm-up per thread] [-b batch] [-P]\n");
    std::exit(2);
}

}  // namespace

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    cfg c;
    long long sizes[32] = { 32 };
    int nsizes = 1, threads = 1, napis = 0;
    api apis[3];
    long long total = 4000000, warm = -1;
    int opt;
    while ((opt = getopt(argc, argv, "m:a:s:t:n:w:b:P")) != -1) {
        switch (opt) {
        case 'm':
            if (!std::strcmp(optarg, "pair"))
                c.m = mode::pair;
            else if (!std::strcmp(optarg, "batch"))
                c.m = mode::batch;
            else
                usage();
            break;
        case 'a':
            for (char *tok = std::strtok(optarg, ","); tok; tok = std::strtok(nullptr, ",")) {
                int k = 0;
                while (k < 3 && std::strcmp(tok, api_names[k]) != 0)
                    k++;
                if (k == 3 || napis == 3)
                    usage();
                apis[napis++] = static_cast<api>(k);
            }
            break;
        case 's': nsizes = parse_list(optarg, sizes, 32); break;
        case 't': threads = static_cast<int>(parse_size(optarg)); break;
        case 'n': total = parse_size(optarg); break;
        case 'w': warm = parse_size(optarg); break;
        case 'b': c.batch = static_cast<int>(parse_size(optarg)); break;
        case 'P': bench_pinning = 0; break;
        default: usage();
        }
    }
    if (threads < 1 || c.batch < 1)
        usage();
    if (napis == 0)
        apis[napis++] = api::op_new;
    c.ops = total / threads;
    if (c.m == mode::batch)
        c.ops = (c.ops / c.batch) * c.batch;
    c.warm = warm >= 0 ? warm : c.ops / 10;
    for (int k = 0; k < napis; k++)
        for (int i = 0; i < nsizes; i++) {
            c.a = apis[k];
            c.size = static_cast<std::size_t>(sizes[i]);
            bench_team r;
            bench_team_run(threads, worker, &c, &r);
            bench_result("cxxnew", "mode=%s api=%s size=%zu threads=%d ns_pair=%.2f cpu_ns_pair=%.2f "
                         "user_s=%.3f sys_s=%.3f", c.m == mode::pair ? "pair" : "batch",
                         api_names[static_cast<int>(c.a)], c.size, threads,
                         bench_ns_per_op(&r, threads), bench_cpu_ns_per_op(&r), r.user_s, r.sys_s);
        }
    return 0;
}
