"""The workload cases of quick mode, full mode and the VM, and the tables they
feed. A Case is one program invocation per variant per repetition; it may
print several result lines (one per size or thread count). Tables are built
per group from the result lines, one table per metric listed for the group.
"""

from dataclasses import dataclass, field


@dataclass
class Case:
    id: str                 # unique name, used in the CSV and logs
    program: str            # binary in the bench build directory
    args: list
    group: str              # table group (GROUPS below)
    vset: str = "dropin"    # variant set (allocators.py)
    vset_kw: dict = field(default_factory=dict)
    timeout: float = 300
    driver: bool = False    # program is a bench/apps/ driver of a real program
                            # (the allocator goes into the program it starts)
    partial: bool = False   # a run that fails still counts for the results it
                            # printed (aslimit: what was measured before the
                            # allocator killed the child); the failure is listed


# group -> (title, metrics tabulated, what one number means)
GROUPS = {
    "micro-pair": ("Micro: tight malloc/free pairs", ["cpu_ns_pair", "ns_pair"],
                   "per malloc+free pair"),
    "micro-batch": ("Micro: batches of 1,000 mallocs then 1,000 frees",
                    ["cpu_ns_pair", "cpu_ns_alloc", "cpu_ns_free", "ns_pair", "sys_s"],
                    "per pair; the alloc/free split divides the CPU time by the measured phase times; "
                    "sys_s = the process's system seconds over the row (glibc trims and refaults its heap "
                    "top for batches of 256 B and more)"),
    "micro-batch-big": ("Micro: batches of 1,000 blocks of 8 KiB-1 MiB (8, 16, 64, 256 KiB, 1 MiB) then 1,000 frees",
                        ["cpu_ns_pair", "cpu_ns_alloc", "cpu_ns_free", "ns_pair", "sys_s"],
                        "per pair; a round frees 8-1,000 MiB of address space (one OS page of each block "
                        "written), which an allocator that gives it back at once maps or faults in again at "
                        "the next round; blocks of 8-16 KiB fill pages of 4-8 blocks, set up and retired each round "
                        "(docs/results.md, stops 62 and 63)"),
    "micro-realloc": ("Micro: realloc growth from 8 B to 64 KiB", ["cpu_ns_realloc", "ns_realloc"],
                      "per realloc call"),
    "micro-grow": ("Micro: realloc growth of a big block from 1 MiB to 64 MiB by tenths", ["cpu_ns_realloc", "ns_realloc"],
                   "per realloc call (the last byte written at each step)"),
    "micro-aligned": ("Micro: aligned_alloc/free pairs", ["cpu_ns_pair", "ns_pair"], "per pair"),
    "cxxnew-pair": ("C++: tight operator new / sized delete pairs", ["cpu_ns_pair", "ns_pair"],
                    "per ::operator new(size) + ::operator delete(p, size) pair, what `new T` / "
                    "`delete p` compile to; every allocator runs its own operator new except glibc, "
                    "whose column is libstdc++'s operator new calling malloc; api=malloc rows are "
                    "malloc/free in the same binary"),
    "cxxnew-batch": ("C++: batches of 1,000 operator new then 1,000 sized deletes",
                     ["cpu_ns_pair", "ns_pair"], "per new + delete pair (as cxxnew-pair)"),
    "xthread": ("Producer/consumer: one thread mallocs, another frees (1-4 pairs)",
                ["ns_obj", "cpu_ns_obj", "mops", "sys_s", "peak_rss_mib", "inflight_mib"],
                "per object through a producer/consumer pair: ns_obj = wall time / objects per pair "
                "(core-normalised past 2 threads); cpu_ns_obj = CPU time of both threads per object "
                "(it includes their brief spinning while they wait for each other); mops = million "
                "objects per second over all pairs; sys_s = system seconds over the row; peak RSS in "
                "MiB (up to 65,536 objects per pair are in flight: 64 MiB per pair at 1,024 B); "
                "inflight_mib = the most MiB of blocks the rings held (allocated, not yet freed), "
                "looked at every 1,024 objects: the program's part of the peak, set by which thread "
                "runs faster and by the scheduler, so compare peak_rss_mib - inflight_mib; "
                "size=8-1024 draws each block's size log-uniformly"),
    "larson": ("Larson-style server simulation", ["ns_op", "cpu_ns_op", "sys_s", "peak_rss_mib"],
               "per free+malloc replacement; system seconds of the row; peak RSS in MiB (one process per "
               "thread count); free=sized rows free each block with its size: free_sized where the "
               "allocator exports it (nodal), else its own sized free (jemalloc sdallocx, tcmalloc "
               "tc_free_sized, mimalloc mi_free_size); glibc 2.36 has none, so its cell stays empty"),
    "batchq": ("Batch producer/consumer: batches of 100 x 64 B through a mutex/condvar queue",
               ["ns_obj", "cpu_ns_obj", "sys_s", "peak_rss_mib", "beyond_mib", "inflight_mib", "proc_nvcsw",
                "proc_minflt"],
               "per object: W producer threads allocate batches, W consumer threads free them "
               "(threads = 2W); core-normalised wall ns and CPU ns of all threads (the queue's locking "
               "and futex wake-ups included: the same under every allocator); system seconds of the "
               "timed region; peak RSS in MiB (queue=64: at most 64 batches, 400 KiB, in the queue; "
               "queue=100000: the queue never fills, and the backlog is set by how fast the producers "
               "run against the consumers); beyond_mib = the most RSS less the live objects' bytes at a "
               "moment the RSS grew (sampled every 1 ms in the program: what the process holds beyond "
               "its backlog, the program's own few MiB included; bench/README.md); inflight_mib = the "
               "most live bytes at once; proc_* = the whole "
               "process (wait4): voluntary context switches (the queue's waits that slept: most of the "
               "system time) and minor page faults"),
    "mstress": ("Stress with transfers (mstress shape): random sizes 8 B-4 MiB, slots swapped "
                "between threads", ["wall_s", "cpu_ns_step", "sys_s", "peak_rss_mib"],
                "5 rounds of short-lived threads share a 1,000-slot transfer array (atomic exchange); "
                "wall seconds of the whole row (thread start and exit included); CPU ns per step = the "
                "process's user + system time / steps (thread exit included); system seconds; peak RSS "
                "in MiB"),
    "rptest": ("rpmalloc benchmark shape: 8 B-16 KiB in loops, 20 % of each loop's blocks freed by "
               "the next thread", ["ns_op", "cpu_ns_op", "sys_s", "peak_rss_mib", "proc_nvcsw", "proc_minflt"],
               "per malloc/free pair: core-normalised wall ns and CPU ns; system seconds of the timed "
               "region; peak RSS in MiB; proc_* = the whole process (wait4): voluntary context switches "
               "and minor page faults"),
    "mthread": ("glibc bench-malloc-thread shape: each thread churns 4 B-32 KiB over 1,024 slots",
                ["ns_step", "cpu_ns_step", "sys_s", "peak_rss_mib"],
                "per step (free + malloc, thread-local): core-normalised wall ns and CPU ns; system "
                "seconds of the timed region; peak RSS in MiB"),
    "alloctest": ("Mixed small sizes (alloc-test shape): 8 B-1 KiB, mostly under 64 B, 65,536 slots "
                  "per thread", ["ns_step", "cpu_ns_step", "sys_s", "peak_rss_mib"],
                  "per step (check, free, malloc, fill the block): core-normalised wall ns and CPU ns; "
                  "system seconds of the timed region; peak RSS in MiB"),
    "malloctest": ("malloc-test (seed 001): 1,024 B malloc/free per thread", ["cpu_ns_req", "ns_req"],
                   "per request"),
    "tinytemps": ("Tiny temporaries (seed 002): 8 and 16 B in batches",
                  ["wall_s", "cpu_ns_tmp", "peak_rss_mib"],
                  "wall seconds; CPU ns per temporary (alloc+free); peak RSS in MiB"),
    "prefetch": ("Prefetch example (seed 003): 80,000 objects allocated, written, freed",
                 ["ns_obj", "cpu_ns_obj", "proc_sys_s", "proc_rss_mib"],
                 "per object (page faults included); proc_* = the whole process (wait4): system "
                 "seconds and peak RSS in MiB"),
    "frag": ("Fragmentation: mixed sizes, free a random half, allocate larger",
             ["peak_rss_mib", "final_rss_mib", "overhead"],
             "RSS in MiB; overhead = final RSS / live bytes"),
    "peakrel": ("Peak then release", ["peak_rss_mib", "free_rss_mib", "settled_rss_mib"],
                "RSS in MiB at the peak, right after freeing everything, and after the settle time"),
    "falseshare": ("False sharing (cache-scratch / cache-thrash)", ["ns_write", "cpu_ns_write"],
                   "per write pass over the block"),
    "hugeblk": ("Huge blocks in a loop: 5-25 MiB allocated, touched, freed",
                ["cpu_us_block", "us_block", "sys_s", "peak_rss_mib"],
                "per block (free + malloc + touch), in microseconds: CPU time (kernel time included: "
                "page faults, mmap, munmap) and core-normalised wall time; sys_s = the process's "
                "system seconds over the timed region; peak RSS in MiB. touch=page writes every "
                "4 KiB of the block, touch=little only its first and last byte; slots = blocks "
                "live per thread"),
    "shortlived": ("Short-lived mixed sizes: 8 B-1 MiB, about 256 blocks live per thread",
                   ["wall_s", "cpu_ns_step", "sys_s", "peak_rss_mib"],
                   "wall seconds of the timed region; CPU ns per step (free + malloc + touch of every "
                   "4 KiB), kernel time included; system seconds; peak RSS in MiB"),
    "alignloop": ("Aligned allocations (4 KiB-1 MiB alignments) and huge aligned requests in a loop",
                  ["cpu_ns_call", "ns_call", "sys_s"],
                  "per call (free + posix_memalign or aligned_alloc + two writes), kernel time "
                  "included in the CPU time; size=near: [align/2, 2*align], size=huge: 4-32 MiB; "
                  "sys_s = system seconds of the row"),
    "aslimit": ("Address-space limit: ulimit -v 200 MiB",
                ["blocks", "small_ok_pct", "idle_ok_pct", "new_ok_pct", "refill_pct", "vm_start_mib"],
                "blocks = how many blocks of the size fit before malloc fails (higher is better); "
                "small_ok_pct = share of 1,000 mallocs of 64 B that succeed after that; idle_ok_pct = "
                "the same in a thread started before the limit that had not allocated, new_ok_pct in a "
                "thread started then (-100: no thread could start); refill_pct = "
                "share of the freed half that can be allocated again; vm_start_mib = address space "
                "in use at start (program, libraries, the allocator's reservations). An allocator "
                "missing from a table's columns had its child killed before that part (the runs that "
                "failed, at the end, say where)"),
    "holes": ("Memory freed around survivors: 1,000 blocks of 8-128 KiB, three of four freed",
              ["rss_idle_mib", "rss_trim_mib", "rss_freed_mib", "live_mib", "idle_cpu_s", "reuse_cpu_s"],
              "rss_idle_mib = RSS after the frees and 400 ms of small requests (a program that goes "
              "on working; the row's figure: lower is better, live_mib is the floor); rss_trim_mib = "
              "after malloc_trim(0); rss_freed_mib = right after the frees; idle_cpu_s = CPU seconds "
              "of those 400 ms; reuse_cpu_s = CPU seconds (system time included: the faults) of "
              "allocating and writing the freed sizes again"),
    "idlewait": ("A worker that frees and then waits: 800 blocks of 100,000 B written and freed",
                 ["rss_waiting_mib", "rss_exit_mib", "rss_freed_mib", "live_mib"],
                 "rss_waiting_mib = RSS a second after a worker thread freed its blocks and began to "
                 "wait on a condition variable, while the main thread goes on with small requests (the "
                 "row's figure: lower is better, live_mib is the floor); rss_exit_mib = 300 ms after "
                 "the worker exited; rss_freed_mib = right after the frees"),
    "threadchurn": ("Thread churn: 20,000 short threads, each allocating a little",
                    ["cpu_us_thread", "us_thread", "sys_s", "rss_mib", "peak_rss_mib"],
                    "per thread (create, 64 mallocs, 56 frees, 8 blocks left to the next wave, exit, "
                    "join), in microseconds: process CPU time (user + system) and core-normalised "
                    "wall time; sys_s = system seconds; rss_mib = RSS after every thread has "
                    "exited and every block is freed; peak RSS in MiB; threads = threads at a time"),
    "reqresp": ("Thread pool: request/response with random sizes",
                ["ns_req", "cpu_ns_req", "mops", "sys_s", "peak_rss_mib"],
                "per request: core-normalised wall ns (clients and workers counted) and CPU ns of all "
                "threads (the queues' futex calls included: the same under every allocator); mops = "
                "million requests per second; system seconds; peak RSS in MiB; threads = workers"),
    "redis": ("redis-server under LD_PRELOAD: bulk load, redis-benchmark, BGSAVE, DEBUG RELOAD",
              ["peak_rss_mib", "cpu_s", "sys_s", "final_rss_mib", "bench_mops"],
              "the server's peak RSS (VmHWM) and RSS at the end in MiB; its CPU and system seconds "
              "(BGSAVE child included); bench_mops = geometric mean of redis-benchmark's requests per "
              "second over its tests, in millions (client on the same CPUs: noisy). The glibc column "
              "preloads libc.so.6, since Debian's redis-server links jemalloc"),
    "sqlite": ("SQLite (libsqlite3) on an in-memory database, CPU-bound",
               ["cpu_s", "sys_s", "peak_rss_mib"],
               "process CPU seconds (user + system) over the workload, system seconds, peak RSS in MiB"),
    "stressng": ("stress-ng's malloc stressor under LD_PRELOAD",
                 ["cpu_s", "sys_s", "peak_rss_mib"],
                 "CPU seconds (user + system) of stress-ng and its workers for a fixed number of "
                 "allocations; system seconds; largest peak RSS of its processes in MiB"),
    "nodepair": ("Node-targeted alloc + first touch + free", ["ns_op", "cpu_ns_op", "misplaced"],
                 "per cycle (numa_alloc_onnode's cost is mostly kernel time and waiting for the mmap "
                 "lock: compare the wall times); misplaced = blocks (of 64 per thread) the kernel "
                 "reports on another node than the target"),
    "bst": ("BST (seed 000): trees per node, mixed lookup/insert/delete", ["mops", "cpu_mops", "misplaced"],
            "million operations per second (mops) and per CPU-second of the threads (cpu_mops); "
            "misplaced = tree nodes the kernel reports off their tree's node at the end (plain malloc "
            "follows first touch)"),
    "ycsb": ("YCSB workload A (seed 000): hash tables per node", ["steady_mops", "cpu_mops", "misplaced"],
             "million operations per second, mean of intervals after warm-up (steady_mops), and "
             "per CPU-second of the threads over the run (cpu_mops); misplaced = records and bucket "
             "arrays the kernel reports off their table's node at the end"),
    "chase": ("Pointer chasing over node-bound objects", ["ns_hop"], "ns per hop"),
    "tiercost": ("Allocation by memory attribute: alloc + first touch + free (bench/tiercost.c)",
                 ["cpu_ns_op", "ns_op", "misplaced"],
                 "per cycle; nodal-tier = nodal_malloc_tier (the node resolved per call), nodal-node = "
                 "nodal_malloc_node on the node nodal_tier_node names for the thread's node, memkind = "
                 "memkind_malloc with MEMKIND_LOWEST_LATENCY_LOCAL / _HIGHEST_BANDWIDTH_LOCAL / "
                 "_HIGHEST_CAPACITY_LOCAL; misplaced = nodal blocks (of 64 per thread) off the tier's node "
                 "(not counted for memkind)"),
    "follow": ("Plain memory and a thread's node (bench/follow.c, 32 MiB of 24 B-16 KiB blocks)",
               ["local_pct", "cpu_s", "peak_rss_mib"],
               "local_pct = share of the last round's OS pages on the node its thread runs on (move_pages); "
               "exit: a thread on node 0 allocates and frees, exits, a new thread on node 1 allocates; moved: "
               "one thread allocates and frees on node 0, is moved to node 1, allocates; freed: a thread on "
               "node 1 frees a node-0 thread's blocks, then allocates; stay: moved without the move (its RSS "
               "baseline); cpu_s and peak_rss_mib of the process over the scenario"),
    "nodecost": ("What node-bound memory costs, per mechanism (bench/nodecost.c)",
                 ["cpu_us_seg", "cpu_us_mib", "us_seg", "tlb_ipis_seg", "ratio", "misplaced"],
                 "per 4 MiB segment and per MiB; the kernel primitives of a node-bound commit timed apart "
                 "(map, mbind, first touch, MADV_POPULATE_WRITE per 64 KiB chunk or per segment, "
                 "move_pages queries, migration of strays, MADV_DONTNEED purges, refaults; commit-64k is "
                 "nodal's commit today, commit-4m the same per segment), and new memory through nodal: "
                 "nodal-plain = malloc + first touch, nodal-node = nodal_malloc_node + first touch "
                 "(ratio = node / plain per MiB); tlb_ipis_seg = TLB-shootdown IPIs the machine received "
                 "per segment meanwhile; busy = sibling threads spinning on other CPUs (so that the "
                 "process's TLB flushes must interrupt them); one column per transparent-huge-page "
                 "setting (thp-on also sets nodal's huge_pages=1)"),
    "callgrind": ("Instructions per malloc/free pair (callgrind, 32 B, one thread)", ["instr_pair"],
                  "instructions per pair = (Ir(N2) - Ir(N1)) / (N2 - N1), loop included "
                  "(the loop alone is given below the table)"),
    "callgrind-node": ("Instructions per node-targeted cycle (callgrind, 32 B, one thread)", ["instr_pair"],
                       "instructions per alloc + 32 B memset + free cycle of nodepair"),
    "callgrind-cxx": ("Instructions per C++ operator new/delete pair (callgrind, 32 B, one thread)",
                      ["instr_pair"],
                      "instructions per pair of cxxnew, loop included: api=new is ::operator new + "
                      "sized delete, api=unsized the unsized delete, api=malloc malloc/free in the "
                      "same loop"),
}


# Tables that also get a "vs glibc" table (each column's median / glibc's):
# the issues' targets for these are ratios to glibc.
VS_GLIBC = {
    "micro-realloc": ["cpu_ns_realloc"],
    "micro-grow": ["cpu_ns_realloc"],
    "larson": ["peak_rss_mib"],
    "aslimit": ["blocks"],
    "threadchurn": ["cpu_us_thread", "rss_mib"],
    "holes": ["rss_idle_mib", "rss_trim_mib"],
    "idlewait": ["rss_waiting_mib", "rss_exit_mib"],
    "redis": ["peak_rss_mib", "cpu_s"],
    "sqlite": ["cpu_s"],
    "stressng": ["cpu_s"],
}


# The VM's tables are kept apart from the host's.
for _g in ("nodepair", "bst", "ycsb", "chase", "nodecost", "tiercost", "follow"):
    _t, _m, _w = GROUPS[_g]
    GROUPS["vm-" + _g] = ("In the multi-node VM: " + _t, _m,
                          _w + " (inside numa-vm under emulation: compare columns, not absolute times)")


def _csv(xs):
    return ",".join(str(x) for x in xs)


def quick_cases():
    cases = []
    for mode in ("pair", "batch"):  # batch: fewer ops, see full_cases()
        # 4 KiB only in batches (issue 11's "batches of 4 KiB blocks")
        sizes = [16, 32, 64, 256, 1024] + ([4096] if mode == "batch" else [])
        for t in (1, 2, 8, 16):
            cases.append(Case("micro-%s-t%d" % (mode, t), "micro",
                              ["-m", mode, "-s", _csv(sizes), "-t", str(t),
                               "-n", "4000000" if mode == "pair" else "500000"],
                              "micro-" + mode))
    for t in (1, 2, 8, 16):
        cases.append(Case("cxxnew-pair-t%d" % t, "cxxnew",
                          ["-m", "pair", "-a", "new,malloc", "-s", _csv(sizes), "-t", str(t),
                           "-n", "4000000"], "cxxnew-pair"))
    cases += [
        Case("xthread", "xthread", ["-s", "8,64", "-x", "8,1024", "-p", "1,2", "-n", "500000"], "xthread"),
        Case("malloctest", "malloctest", ["-t", "1,2,8", "-n", "500000"], "malloctest"),
        Case("tinytemps", "tinytemps", ["-t", "8", "-r", "1000"], "tinytemps"),
        Case("peakrel", "peakrel", ["-t", "2", "-m", "128m", "-d", "1000"], "peakrel"),
        Case("nodepair", "nodepair", ["-s", "32", "-t", "1,2,8,16", "-N", "0"], "nodepair",
             "node", {"numa_ops": 5000, "other_ops": 2000000}),
        Case("hugeblk-page", "hugeblk", ["-T", "page", "-n", "200"], "hugeblk"),
        Case("shortlived-t2", "shortlived", ["-t", "2", "-n", "1000000"], "shortlived"),
        Case("shortlived-t8", "shortlived", ["-t", "8", "-n", "1000000"], "shortlived"),
        Case("alignloop", "alignloop", ["-a", "4k,64k,1m", "-A", "1m", "-n", "100000", "-N", "10000"],
             "alignloop"),
        Case("aslimit", "aslimit", ["-s", "1m", "-v", "200m"], "aslimit", partial=True),
        Case("threadchurn", "threadchurn", ["-c", "8", "-n", "20000"], "threadchurn"),
        Case("holes", "holes", [], "holes"),
        Case("idlewait", "idlewait", [], "idlewait"),
        Case("reqresp-t2", "reqresp", ["-t", "2", "-n", "200000"], "reqresp"),
        Case("reqresp-t8", "reqresp", ["-t", "8", "-n", "200000"], "reqresp"),
        Case("larson-t2", "larson", ["-t", "2", "-r", "50000", "-R", "20"], "larson"),
        Case("larson-t8", "larson", ["-t", "8", "-r", "50000", "-R", "20"], "larson"),
        # issue 18: the two most telling cross-thread shapes, smaller than in full mode
        Case("batchq-w2", "batchq", ["-w", "2", "-n", "2000000"], "batchq"),
        Case("mstress-t8", "mstress", ["-t", "8", "-n", "1000000"], "mstress"),
    ]
    return cases


def full_cases():
    sizes = [8, 16, 32, 64, 256, 1024, 4096]
    cases = []
    for mode in ("pair", "batch"):
        for t in (1, 2, 4, 8, 16):
            # glibc trims the heap after each batch of >= 256 B and faults it
            # back in: batches get fewer operations and more time
            cases.append(Case("micro-%s-t%d" % (mode, t), "micro",
                              ["-m", mode, "-s", _csv(sizes), "-t", str(t),
                               "-n", "10000000" if mode == "pair" else "1000000"],
                              "micro-" + mode, timeout=900))
    # batches of medium and large blocks (stop 62: rounds past the bounds
    # that give memory back at once, and a large pool of hundreds of segments;
    # stop 63: 8 and 16 KiB, pages of 4-8 blocks set up and retired each round)
    for t in (1, 2):
        cases.append(Case("micro-batchbig-t%d" % t, "micro",
                          ["-m", "batch", "-s", "8192,16384,65536,262144,1048576", "-t", str(t), "-n", "100000"],
                          "micro-batch-big", timeout=900))
    for mode in ("pair", "batch"):
        for t in (1, 2, 4, 8, 16):
            cases.append(Case("cxxnew-%s-t%d" % (mode, t), "cxxnew",
                              ["-m", mode, "-a", "new,malloc", "-s", "16,32,64,256,1024", "-t", str(t),
                               "-n", "10000000" if mode == "pair" else "1000000"],
                              "cxxnew-" + mode, timeout=900))
    for t in (1, 2, 4, 8, 16):
        cases.append(Case("micro-realloc-t%d" % t, "micro",
                          ["-m", "realloc", "-g", "64k", "-t", str(t), "-n", "2000000"], "micro-realloc"))
        # tcmalloc, mimalloc and jemalloc copy the block and fault in the copy's
        # pages: 0.1 s a call where a fault costs 20 us (this VM, 2026-12), so
        # -n 4000 took jemalloc 487 s a run. 100 calls are two growth sequences
        # and a half (44 calls each from 1 to 64 MiB), the same sizes per call.
        if t <= 2:
            cases.append(Case("micro-grow-t%d" % t, "micro",
                              ["-m", "grow", "-t", str(t), "-n", "100"], "micro-grow", timeout=600))
        for align in (64, 4096):
            cases.append(Case("micro-aligned%d-t%d" % (align, t), "micro",
                              ["-m", "aligned", "-a", str(align), "-s", "32,256,4096", "-t", str(t),
                               "-n", "4000000"], "micro-aligned"))
    for p in (1, 2, 4):
        cases.append(Case("xthread-p%d" % p, "xthread", ["-s", "8,32,64,256,1024", "-x", "8,1024", "-p", str(p),
                                                        "-n", str(2000000 // p)], "xthread", timeout=600))
    for t in (1, 2, 4, 8, 16):  # one process per thread count: peak RSS of that count alone
        cases.append(Case("larson-t%d" % t, "larson", ["-t", str(t), "-r", "50000", "-R", "20"], "larson"))
    # issue 18: the shapes where threads free each other's blocks, at 2 and 8
    # threads (alloc-test at 1 and 2); a few seconds per run
    for t in (2, 8):
        cases.append(Case("larson-sized-t%d" % t, "larson", ["-t", str(t), "-r", "50000", "-R", "20",
                                                            "-f", "sized"], "larson"))
    for w in (2, 8):
        cases.append(Case("batchq-w%d" % w, "batchq", ["-w", str(w), "-n", "4000000"], "batchq"))
        # a queue that never fills (issue 18): the backlog is the program's,
        # beyond_mib the allocator's
        cases.append(Case("batchq-w%d-q100000" % w, "batchq", ["-w", str(w), "-q", "100000", "-n", "4000000"],
                          "batchq"))
    for t in (2, 8):
        cases.append(Case("mstress-t%d" % t, "mstress", ["-t", str(t), "-n", "2000000"], "mstress"))
        cases.append(Case("rptest-t%d" % t, "rptest", ["-t", str(t), "-n", "4000"], "rptest"))
        cases.append(Case("mthread-t%d" % t, "mthread", ["-t", str(t), "-n", "5000000"], "mthread"))
    for t in (1, 2):
        cases.append(Case("alloctest-t%d" % t, "alloctest", ["-t", str(t), "-n", "5000000"], "alloctest"))
    cases += [
        Case("hugeblk-page", "hugeblk", ["-T", "page", "-n", "500"], "hugeblk"),
        Case("hugeblk-little", "hugeblk", ["-T", "little", "-n", "20000"], "hugeblk"),
        Case("hugeblk-page-k4-t2", "hugeblk", ["-T", "page", "-k", "4", "-t", "2", "-n", "500"], "hugeblk"),
        Case("shortlived-t2", "shortlived", ["-t", "2", "-n", "2000000"], "shortlived"),
        Case("shortlived-t8", "shortlived", ["-t", "8", "-n", "2000000"], "shortlived"),
        Case("alignloop", "alignloop", ["-n", "200000", "-N", "20000"], "alignloop"),
        Case("aslimit", "aslimit", ["-s", "256k,1m,4m", "-v", "200m"], "aslimit", partial=True),
        Case("threadchurn-c8", "threadchurn", ["-c", "8", "-n", "20000"], "threadchurn"),
        Case("threadchurn-c1", "threadchurn", ["-c", "1", "-n", "20000"], "threadchurn"),
        Case("holes", "holes", [], "holes"),
        Case("idlewait", "idlewait", [], "idlewait"),
        Case("idlewait-k4", "idlewait", ["-k", "4"], "idlewait"),
        Case("reqresp-t2", "reqresp", ["-t", "2", "-n", "400000"], "reqresp"),
        Case("reqresp-t8", "reqresp", ["-t", "8", "-n", "400000"], "reqresp"),
        Case("redis", "apps/redis.py", ["-n", "20000"], "redis", timeout=900, driver=True),
        Case("sqlite", "sqlite", ["-r", "3", "-k", "20000"], "sqlite"),
        Case("stressng", "apps/stressng.py", ["-w", "2", "-n", "400000"], "stressng", timeout=900,
             driver=True),
        Case("malloctest", "malloctest", ["-t", "1,2,3,4,5,8,20", "-n", "1000000"], "malloctest"),
        Case("tinytemps-t8", "tinytemps", ["-t", "8"], "tinytemps"),
        Case("tinytemps-t2", "tinytemps", ["-t", "2", "-l", "1000000"], "tinytemps"),
        Case("prefetch", "prefetch", ["-c", "80000", "-r", "100", "-s", "208"], "prefetch"),
        Case("frag", "frag", ["-m", "256m", "-x", "16k"], "frag"),
        Case("peakrel", "peakrel", ["-t", "2", "-m", "512m", "-d", "3000"], "peakrel"),
        Case("falseshare-scratch", "falseshare", ["-m", "scratch", "-t", "2,4", "-s", "8"], "falseshare"),
        Case("falseshare-thrash", "falseshare", ["-m", "thrash", "-t", "2,4", "-s", "8"], "falseshare"),
        Case("nodepair-32", "nodepair", ["-s", "32", "-t", "1,2,4,8,16", "-N", "0"], "nodepair",
             "node", {"numa_ops": 20000, "other_ops": 4000000}),
        Case("nodepair-1024", "nodepair", ["-s", "1024", "-t", "1,2,8", "-N", "0"], "nodepair",
             "node", {"numa_ops": 20000, "other_ops": 2000000}),
        Case("bst-t2", "bst", ["-t", "2", "-T", "4", "-k", "200000", "-d", "3"], "bst", "app"),
        Case("bst-t8", "bst", ["-t", "8", "-T", "4", "-k", "200000", "-d", "3"], "bst", "app"),
        # the same BST in C++ with node-typed tree nodes (rows lang=c++)
        Case("bstxx-t2", "bstxx", ["-t", "2", "-T", "4", "-k", "200000", "-d", "3"], "bst", "app"),
        Case("bstxx-t8", "bstxx", ["-t", "8", "-T", "4", "-k", "200000", "-d", "3"], "bst", "app"),
        Case("ycsb-t2", "ycsb", ["-t", "2", "-k", "500000", "-d", "4"], "ycsb", "app"),
        Case("chase", "chase", ["-c", "2m", "-s", "64", "-h", "10m"], "chase", "chase"),
        Case("nodecost", "nodecost", ["-N", "local", "-r", "5", "-S", "16"], "nodecost", "nodecost"),
        Case("nodecost-busy", "nodecost", ["-N", "local", "-r", "5", "-S", "16", "-B", "1",
                                           "-m", "purge-64k,purge-4m,migrate"], "nodecost", "nodecost"),
    ]
    return cases


def vm_cases():
    """Small versions of the node-sensitive workloads for the multi-node VM
    (TCG emulation is ~10-50x slower than the host)."""
    return [
        Case("vm-nodepair-rr", "nodepair", ["-s", "32", "-t", "1,4", "-N", "rr"], "vm-nodepair",
             "node", {"numa_ops": 2000, "other_ops": 200000}),
        Case("vm-nodepair-remote", "nodepair", ["-s", "32", "-t", "1,2", "-N", "1"], "vm-nodepair",
             "node", {"numa_ops": 2000, "other_ops": 200000}),
        Case("vm-nodepair-memonly", "nodepair", ["-s", "32", "-t", "1,2,4", "-N", "2"], "vm-nodepair",
             "node", {"numa_ops": 2000, "other_ops": 200000}),
        # numa-vm --hmat (vm.py): nodes 2, 3 are the bandwidth tier of nodes 0, 1, so memkind's
        # attribute kinds resolve (they need the firmware's HMAT)
        Case("vm-tiercost-latency", "tiercost", ["-s", "32", "-t", "1,2", "-T", "latency"], "vm-tiercost",
             "tier", {"ops": 200000}),
        Case("vm-tiercost-bandwidth", "tiercost", ["-s", "32", "-t", "1,2", "-T", "bandwidth"], "vm-tiercost",
             "tier", {"ops": 200000}),
        Case("vm-tiercost-capacity", "tiercost", ["-s", "32", "-t", "1,2", "-T", "capacity"], "vm-tiercost",
             "tier", {"ops": 200000}),
        Case("vm-bst", "bst", ["-t", "4", "-k", "50000", "-d", "1"], "vm-bst", "app"),
        Case("vm-bstxx", "bstxx", ["-t", "4", "-k", "50000", "-d", "1"], "vm-bst", "app"),
        Case("vm-ycsb", "ycsb", ["-t", "4", "-k", "50000", "-T", "4", "-B", "1021", "-d", "2",
                                 "-i", "250", "-w", "2"], "vm-ycsb", "app"),
        Case("vm-chase", "chase", ["-c", "256k", "-s", "64", "-h", "2m", "-N", "1"], "vm-chase", "chase"),
        # issue 19's scenarios, one process each (a fresh allocator)
        *[Case("vm-follow-" + s, "follow", ["-m", "32", "-S", s], "vm-follow") for s in ("exit", "moved", "freed", "stay")],
        # one repetition per run (the runner repeats), 4 segments, 8 MiB through nodal
        Case("vm-nodecost-cpu", "nodecost", ["-N", "0", "-r", "1", "-S", "4", "-M", "8"], "vm-nodecost",
             "nodecost"),
        Case("vm-nodecost-memonly", "nodecost", ["-N", "2", "-r", "1", "-S", "4", "-M", "8"], "vm-nodecost",
             "nodecost", {"modes": ("default",)}),
        Case("vm-nodecost-busy", "nodecost", ["-N", "0", "-r", "1", "-S", "4", "-B", "3",
                                              "-m", "purge-64k,purge-4m,migrate"], "vm-nodecost", "nodecost",
             {"modes": ("default",)}),
    ]


def select(cases, only):
    """--only: keep cases whose id, program or group matches one of the names."""
    if not only:
        return cases
    keep = [c for c in cases if any(o in (c.id, c.program, c.group) or c.id.startswith(o + "-")
                                    for o in only)]
    return keep
