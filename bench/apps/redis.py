#!/usr/bin/python3
"""bench/apps/redis.py - redis-server under the column's allocator.

Starts the installed redis-server on a Unix socket in a temporary directory
(no persistence except what the phases below ask for, debug commands on) with
the allocator preloaded (see common.py), then:

  1. load:   a bulk load of every data type through `redis-cli --pipe`:
             strings (a tenth with a TTL), counters, lists, hashes, sets (of
             integers and of strings), sorted sets, streams, HyperLogLogs,
             bitmaps and geo sets, small and large ones, so that both the
             compact encodings (listpack, intset) and the full ones
             (hashtable, skiplist, quicklist) are built; the data are random
             but the same in every column (fixed seed);
  2. bench:  redis-benchmark over all of its default command types (-n
             requests each, pipelined, random keys; the LRANGE tests, whose
             long replies are mostly the client's work, get a fifth of that);
  3. bgsave: BGSAVE, waited for (the server forks; the child writes the RDB);
  4. reload: DEBUG RELOAD (save, empty the dataset, load it back);
then reads the server's peak RSS (VmHWM) and shuts it down.

Reported: peak_rss_mib (the server's VmHWM: the figure to compare),
rss_load_mib (VmRSS after the load), final_rss_mib (VmRSS at the end),
used_mib (redis's own count of allocated bytes at the end, from
malloc_usable_size), cpu_s, user_s, sys_s (the server's CPU time, BGSAVE
children included), wall_s (all phases), and bench_mops (the geometric mean of
redis-benchmark's requests per second over its tests, in millions; the client
shares the CPUs with the server, so it is noisy).
"""

import argparse
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


def log_uniform(rng, lo, hi):
    return int(math.exp(rng.uniform(math.log(lo), math.log(hi + 1))))


def dataset(scale, seed=12345):
    """The bulk load as RESP commands, in chunks."""
    rng = random.Random(seed)
    letters = b"abcdefghijklmnopqrstuvwxyz0123456789"
    pool = bytes(rng.choice(letters) for _ in range(1 << 16))

    def val(lo, hi):
        n = log_uniform(rng, lo, hi)
        o = rng.randrange(len(pool) - n)
        return pool[o:o + n]

    cmds = []
    n = int(100000 * scale)
    for i in range(n):
        if i % 10 == 0:
            cmds.append(resp("SET", "str:%d" % i, val(8, 512), "EX", 3600))
        else:
            cmds.append(resp("SET", "str:%d" % i, val(8, 512)))
    for i in range(int(5000 * scale)):
        cmds.append(resp("INCRBY", "ctr:%d" % (i % 2000), rng.randint(1, 1000)))
    for i in range(int(1000 * scale)):
        k = "list:%d" % i
        left = log_uniform(rng, 1, 2000)
        while left > 0:
            m = min(left, 100)
            cmds.append(resp("RPUSH", k, *[val(4, 128) for _ in range(m)]))
            left -= m
    for i in range(int(3000 * scale)):
        k = "hash:%d" % i
        left = log_uniform(rng, 1, 600)
        f = 0
        while left > 0:
            m = min(left, 50)
            args = []
            for _ in range(m):
                args += ["field:%d" % f, val(4, 200)]
                f += 1
            cmds.append(resp("HSET", k, *args))
            left -= m
    for i in range(int(2000 * scale)):
        k = "set:%d" % i
        ints = i % 2 == 0
        left = log_uniform(rng, 1, 1500)
        while left > 0:
            m = min(left, 100)
            members = [rng.randint(0, 1 << 40) if ints else val(4, 48) for _ in range(m)]
            cmds.append(resp("SADD", k, *members))
            left -= m
    for i in range(int(2000 * scale)):
        k = "zset:%d" % i
        left = log_uniform(rng, 1, 800)
        while left > 0:
            m = min(left, 100)
            args = []
            for _ in range(m):
                args += ["%.3f" % rng.uniform(0, 1e6), val(4, 64)]
            cmds.append(resp("ZADD", k, *args))
            left -= m
    for i in range(int(200 * scale)):
        k = "stream:%d" % i
        for _ in range(log_uniform(rng, 1, 1000)):
            cmds.append(resp("XADD", k, "*", "user", rng.randint(0, 100000), "event", val(8, 64),
                             "payload", val(16, 256)))
    for i in range(int(500 * scale)):
        cmds.append(resp("PFADD", "hll:%d" % i, *["e%d" % rng.randint(0, 1 << 30) for _ in range(200)]))
    for i in range(int(200 * scale)):
        for _ in range(50):
            cmds.append(resp("SETBIT", "bits:%d" % i, rng.randint(0, 200000), 1))
    for i in range(int(200 * scale)):
        args = []
        for j in range(100):
            args += ["%.6f" % rng.uniform(-179, 179), "%.6f" % rng.uniform(-84, 84), "place:%d" % j]
        cmds.append(resp("GEOADD", "geo:%d" % i, *args))
    return b"".join(cmds), len(cmds)


class Server:
    def __init__(self, binary, workdir, extra):
        self.sock = os.path.join(workdir, "redis.sock")
        argv = [binary, "--port", "0", "--unixsocket", self.sock, "--unixsocketperm", "700",
                "--dir", workdir, "--dbfilename", "dump.rdb", "--save", "", "--appendonly", "no",
                "--enable-debug-command", "yes", "--protected-mode", "no",
                "--logfile", os.path.join(workdir, "redis.log")] + extra
        self.p = subprocess.Popen(argv, env=common.target_env(binary), stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.p.poll() is not None:
                sys.exit("redis-server exited with %s during start-up (see %s)" %
                         (self.p.returncode, os.path.join(workdir, "redis.log")))
            if os.path.exists(self.sock) and self.cli("PING").strip() == "PONG":
                return
            time.sleep(0.05)
        sys.exit("redis-server did not answer within 30 s")

    def cli(self, *args, stdin=None, timeout=600):
        r = subprocess.run([CLI, "-s", self.sock] + list(args), input=stdin, capture_output=True,
                           timeout=timeout)
        return r.stdout.decode(errors="replace") if r.returncode == 0 else ""

    def info(self, section):
        out = {}
        for line in self.cli("INFO", section).splitlines():
            if ":" in line:
                k, v = line.split(":", 1)
                out[k] = v.strip()
        return out


CLI = None
# redis-benchmark's default tests (7.0), in two runs
OTHER_TESTS = "ping_inline,ping_mbulk,set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,mset"
LRANGE_TESTS = "lrange_100,lrange_300,lrange_500,lrange_600"


def main():
    global CLI
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0, help="size of the bulk load (1.0: about 100 MiB RSS)")
    ap.add_argument("-n", "--requests", type=int, default=50000, help="redis-benchmark requests per test")
    ap.add_argument("-P", "--pipeline", type=int, default=16, help="redis-benchmark pipeline depth")
    ap.add_argument("-c", "--clients", type=int, default=8, help="redis-benchmark connections")
    a = ap.parse_args()
    server_bin, CLI, bench_bin = common.require("redis-server", "redis-cli", "redis-benchmark")

    data, ncmds = dataset(a.scale)
    workdir = tempfile.mkdtemp(prefix="nodal-bench-redis-")
    srv = None
    try:
        t0 = time.monotonic()
        srv = Server(server_bin, workdir, [])
        pid = srv.p.pid
        times = {}

        t = time.monotonic()
        out = srv.cli("--pipe", stdin=data)
        if "errors: 0" not in out:
            sys.exit("bulk load failed: %s" % out.strip()[-300:])
        times["load_s"] = time.monotonic() - t
        rss_load = common.status_kib(pid, "VmRSS")
        keys = srv.info("keyspace").get("db0", "")
        common.note("loaded %d commands: %s" % (ncmds, keys))

        # every command type of redis-benchmark; the LRANGE tests (replies of
        # 100-600 elements, mostly client work) get a fifth of the requests
        t = time.monotonic()
        rps, names = [], []
        for tests, n in ((OTHER_TESTS, a.requests), (LRANGE_TESTS, max(1, a.requests // 5))):
            argv = [bench_bin, "-s", srv.sock, "-n", str(n), "-P", str(a.pipeline), "-c", str(a.clients),
                    "-r", "100000", "-d", "200", "--csv", "-t", tests]
            r = subprocess.run(argv, capture_output=True, text=True, timeout=1200)
            for line in r.stdout.splitlines():
                cols = [c.strip('"') for c in line.split(",")]
                if len(cols) < 2 or cols[0] == "test":
                    continue
                try:
                    rps.append(float(cols[1]))
                    names.append("%s=%s" % (cols[0].split(" ")[0], cols[1]))
                except ValueError:
                    pass
            if r.returncode != 0:
                sys.exit("redis-benchmark failed: %s" % (r.stderr.strip()[-300:] or r.stdout.strip()[-300:]))
        times["bench_s"] = time.monotonic() - t
        if not rps:
            sys.exit("redis-benchmark reported nothing")
        common.note("redis-benchmark: %d tests: %s" % (len(rps), " ".join(names)))

        t = time.monotonic()
        if "Background saving started" not in srv.cli("BGSAVE"):
            sys.exit("BGSAVE did not start")
        while True:
            p = srv.info("persistence")
            if p.get("rdb_bgsave_in_progress") == "0":
                break
            time.sleep(0.05)
        if p.get("rdb_last_bgsave_status") != "ok":
            sys.exit("BGSAVE failed")
        times["bgsave_s"] = time.monotonic() - t

        t = time.monotonic()
        if srv.cli("DEBUG", "RELOAD").strip() != "OK":
            sys.exit("DEBUG RELOAD failed")
        times["reload_s"] = time.monotonic() - t

        peak = common.status_kib(pid, "VmHWM")
        final = common.status_kib(pid, "VmRSS")
        used = int(srv.info("memory").get("used_memory", "0"))
        srv.cli("SHUTDOWN", "NOSAVE")
        rc, ru = common.wait_usage(srv.p)
        wall = time.monotonic() - t0
        if peak is None:
            sys.exit("could not read the server's VmHWM")
        metrics = {"peak_rss_mib": peak / 1024.0, "rss_load_mib": (rss_load or 0) / 1024.0,
                   "final_rss_mib": (final or 0) / 1024.0, "used_mib": used / 1048576.0,
                   "cpu_s": ru.ru_utime + ru.ru_stime, "user_s": ru.ru_utime, "sys_s": ru.ru_stime,
                   "wall_s": wall,
                   "bench_mops": math.exp(sum(math.log(x) for x in rps) / len(rps)) / 1e6}
        metrics.update(times)
        common.result("redis", {"scale": a.scale, "requests": a.requests}, metrics)
        return 0
    finally:
        if srv and srv.p.poll() is None:
            srv.p.kill()
            srv.p.wait()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
