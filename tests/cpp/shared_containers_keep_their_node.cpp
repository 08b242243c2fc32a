/*
 * shared_containers_keep_their_node - containers with a node_allocator<T>
 * for node k, built by one thread, changed by several threads pinned over
 * every CPU node (inserts and erases under a lock, so blocks are allocated
 * and freed by threads on other nodes than k), and destroyed by yet another
 * thread, keep every block on node k: checked through the kernel while the
 * other threads are still at work (under their lock), and every block is
 * given back once the containers are destroyed. One set of containers per
 * node with memory, all at the same time.
 *
 *   shared_containers_keep_their_node [-t THREADS] [-n OPS] [-v]
 */
#include <pthread.h>

#include <atomic>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "placement_cxx.hpp"

namespace {

using alloc = ndt::logged<char, nodal::node_allocator<char>>;
template <class T>
using rebound = typename std::allocator_traits<alloc>::template rebind_alloc<T>;
using str = std::basic_string<char, std::char_traits<char>, rebound<char>>;
using smap = std::map<int, str, std::less<int>, rebound<std::pair<const int, str>>>;
using umap = std::unordered_map<long, long, std::hash<long>, std::equal_to<long>,
                                rebound<std::pair<const long, long>>>;
using lvec = std::vector<long, rebound<long>>;

struct shared_set {
    int node;
    std::mutex lock;
    smap m;
    umap u;
    lvec v;
    explicit shared_set(const alloc &a, int k) : node(k), m(a), u(a), v(a) {}
};

int nthreads = 4;
long ops = 20000;

void pin_or_die(int i)
{
    int cpu = pt_spread_cpu(i, nullptr);
    if (pt_pin(cpu) != 0)
        pt_die("thread %d: cannot pin to CPU %d", i, cpu);
}

}  // namespace

int main(int argc, char **argv)
{
    argc = pt_begin(argc, argv, "shared_containers_keep_their_node",
                    "containers changed by threads on every CPU node and destroyed by another "
                    "thread keep every block on their node");
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "-t") && i + 1 < argc)
            nthreads = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "-n") && i + 1 < argc)
            ops = std::atol(argv[++i]);
        else
            pt_die("usage: %s [-t THREADS] [-n OPS] [-v]", argv[0]);
    }
    const pt_topo *t = pt_topology();
    std::vector<shared_set *> sets(static_cast<std::size_t>(t->nmem));

    // 1. One thread builds every set (one per node) and exits.
    std::thread maker([&] {
        pin_or_die(0);
        for (int i = 0; i < t->nmem; i++) {
            int k = t->mem[i];
            sets[static_cast<std::size_t>(i)] = new shared_set(alloc(nodal::node_allocator<char>(k)), k);
        }
    });
    maker.join();

    // 2. Threads on every CPU node change every set; thread 0 also checks
    //    placement half-way, holding each set's lock.
    std::atomic<int> halfway{ 0 };
    std::vector<std::thread> team;
    for (int w = 0; w < nthreads; w++)
        team.emplace_back([&, w] {
            pin_or_die(w + 1);
            pt_batch *b = pt_batch_new();
            for (long i = 0; i < ops; i++) {
                shared_set *s = sets[static_cast<std::size_t>(i % t->nmem)];
                int key = static_cast<int>((i * 7919 + w * 104729) % 4000);
                std::lock_guard<std::mutex> g(s->lock);
                if (i % 3 == 2) {
                    s->m.erase(key);
                    s->u.erase(key);
                    if (!s->v.empty())
                        s->v.pop_back();
                } else {
                    s->m.emplace(key, str(static_cast<std::size_t>(30 + key % 300), 's',
                                          s->m.get_allocator()));
                    s->u[key] = i;
                    s->v.push_back(i);
                }
                if (w == 0 && i == ops / 2) {
                    ndt::the_log().check(b);   // every live block of every set, right now
                    halfway = 1;
                }
            }
            pt_batch_free(b);
        });
    for (auto &th : team)
        th.join();
    if (!halfway)
        pt_fail("the half-way placement check did not run");

    // 3. Another thread checks the final state and destroys everything.
    std::thread destroyer([&] {
        pin_or_die(nthreads + 1);
        pt_batch *b = pt_batch_new();
        std::size_t n = ndt::the_log().check(b);
        pt_info("%zu live blocks of %d node(s) checked before destruction; %zu OS pages, %zu off "
                "their node", n, t->nmem, pt_batch_pages(b), pt_batch_bad_pages(b));
        for (shared_set *s : sets) {
            for (auto &kv : s->m)
                if (kv.second.size() != static_cast<std::size_t>(30 + kv.first % 300) ||
                    kv.second.get_allocator().node_id() != s->node)
                    pt_fail("a string of the node-%d map changed or lost its node", s->node);
            delete s;
        }
        pt_batch_free(b);
    });
    destroyer.join();
    if (ndt::the_log().live() != 0)
        pt_fail("%zu blocks still live after another thread destroyed the containers; expected "
                "none", ndt::the_log().live());
    pt_info("%lu blocks handed out in all", ndt::the_log().total());
    return pt_end();
}
