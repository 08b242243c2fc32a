// stl_workload.cpp - a C++ program built without nodal, for running under
// LD_PRELOAD=libnodal.so: STL containers (vector, map, unordered_map, string,
// deque, shared_ptr) grown and destroyed by several threads, with objects
// built in one thread and destroyed in another. Prints a checksum that
// depends only on the computation (compared with a run on the system malloc).
#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <condition_variable>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

std::uint64_t mix(std::uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// Objects handed from producers to consumers (freed by another thread).
struct Parcel {
    std::vector<std::string> words;
    std::map<int, std::string> index;
};

std::mutex mu;
std::condition_variable cv;
std::deque<std::unique_ptr<Parcel>> queue;
int producers_running = 0;

std::uint64_t produce(int id)
{
    std::uint64_t sum = 0, r = static_cast<std::uint64_t>(id) * 7919;
    for (int round = 0; round < 3000; round++) {
        auto p = std::make_unique<Parcel>();
        int n = 1 + static_cast<int>(mix(++r) % 40);
        for (int i = 0; i < n; i++) {
            std::size_t len = static_cast<std::size_t>(mix(++r) % (i % 7 == 0 ? 5000 : 60));
            p->words.emplace_back(len, static_cast<char>('a' + (i + round) % 26));
            p->index[i * 3] = p->words.back().substr(0, len / 2);
            sum += len;
        }
        std::lock_guard<std::mutex> lock(mu);
        queue.push_back(std::move(p));
        cv.notify_one();
    }
    return sum;
}

std::uint64_t consume()
{
    std::uint64_t sum = 0;
    for (;;) {
        std::unique_ptr<Parcel> p;
        {
            std::unique_lock<std::mutex> lock(mu);
            cv.wait(lock, [] { return !queue.empty() || producers_running == 0; });
            if (queue.empty())
                return sum;
            p = std::move(queue.front());
            queue.pop_front();
        }
        for (const auto &w : p->words)
            sum += w.size();
    }
}

std::uint64_t containers(int id)
{
    std::uint64_t sum = 0, r = static_cast<std::uint64_t>(id) + 12345;
    std::unordered_map<std::string, std::vector<int>> um;
    std::map<std::uint64_t, std::shared_ptr<std::string>> m;
    for (int i = 0; i < 60000; i++) {
        std::string key = "key" + std::to_string(mix(++r) % 20000);
        auto &v = um[key];
        v.push_back(i);
        if (v.size() > 64)
            v.clear();
        m[mix(++r) % 50000] = std::make_shared<std::string>(static_cast<std::size_t>(i % 300), 'x');
        if (i % 1000 == 0) {
            std::vector<std::uint64_t> big(static_cast<std::size_t>(10000 + i * 3));
            for (std::size_t k = 0; k < big.size(); k++)
                big[k] = k;
            sum += big.back();
        }
    }
    for (const auto &kv : um)
        sum += kv.second.size();
    for (const auto &kv : m)
        sum += kv.second->size();
    return sum;
}

} // namespace

int main()
{
    std::vector<std::uint64_t> results(6);
    std::vector<std::thread> threads;
    producers_running = 2;
    for (int t = 0; t < 2; t++)
        threads.emplace_back([t, &results] {
            results[static_cast<std::size_t>(t)] = produce(t);
            std::lock_guard<std::mutex> lock(mu);
            producers_running--;
            cv.notify_all();
        });
    std::uint64_t consumed[2] = {0, 0};
    for (int t = 0; t < 2; t++)
        threads.emplace_back([t, &consumed] { consumed[t] = consume(); });
    for (int t = 0; t < 2; t++)
        threads.emplace_back([t, &results] {
            results[static_cast<std::size_t>(4 + t)] = containers(t);
        });
    for (auto &th : threads)
        th.join();
    results[2] = consumed[0] + consumed[1];
    std::printf("produced %llu+%llu consumed %llu containers %llu %llu\n",
                static_cast<unsigned long long>(results[0]),
                static_cast<unsigned long long>(results[1]),
                static_cast<unsigned long long>(results[2]),
                static_cast<unsigned long long>(results[4]),
                static_cast<unsigned long long>(results[5]));
    return 0;
}
