"""A Python workload for running under LD_PRELOAD=libnodal.so with
PYTHONMALLOC=malloc: dicts, lists, strings, bytes and a few threads, so the
interpreter's allocations of every size go through nodal. Prints one line
that depends only on the computation, compared with a run on the system
malloc by preload-run.sh."""
import hashlib
import random
import threading

ALPHABET = "abcdefghijklmnopqrstuvwxyz"


def churn(seed, rounds):
    rng = random.Random(seed)
    h = hashlib.sha256()
    table = {}
    for r in range(rounds):
        # Strings and bytes of many sizes, some of them large.
        size = rng.choice([1, 7, 40, 300, 4000, 70000, 1 << 20])
        shift = r % 26
        s = (ALPHABET[shift:] + ALPHABET[:shift]) * (size // 26 + 1)
        s = s[:size]
        key = "k%d" % rng.randrange(5000)
        table[key] = [s[: rng.randrange(len(s) + 1)], bytes(rng.randrange(3000)), r]
        if rng.random() < 0.3:
            table.pop("k%d" % rng.randrange(5000), None)
        if r % 500 == 0:
            # Rebuild: many small objects freed at once.
            table = {k: list(v) for k, v in table.items()}
    for k in sorted(table):
        v = table[k]
        h.update(k.encode())
        h.update(v[0].encode())
        h.update(len(v[1]).to_bytes(4, "little"))
    return h.hexdigest()


def lists_and_sorting(seed):
    rng = random.Random(seed)
    data = [rng.random() for _ in range(300000)]
    words = ["%08x" % rng.getrandbits(32) for _ in range(100000)]
    data.sort()
    words.sort()
    nested = [[i] * (i % 50) for i in range(20000)]
    return "%.6f %s %d" % (sum(data[:1000]), words[500], sum(len(x) for x in nested))


def main():
    results = [None] * 4

    def work(i):
        results[i] = churn(i, 3000)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(" ".join(r[:16] for r in results), lists_and_sorting(99))


if __name__ == "__main__":
    main()
