#!/usr/bin/python3
"""bench/run.py - nodal's benchmark suite: builds the benchmark programs,
runs every workload under every allocator (interleaved, repeated), and
writes a Markdown table, the raw CSV and plots to
bench/results/<UTC date>-<host>/ (see bench/README.md).

  bench/run.py --quick --build build     the headline comparison (< 5 min)
  bench/run.py --full --build build      everything, incl. callgrind and the VM
  bench/run.py --only micro-pair,xthread --allocators glibc,nodal --reps 5
  bench/run.py --callgrind               instruction counts only
  bench/run.py --vm                      node workloads in the multi-node VM only
"""

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)

from runner import callgrind, cases, machine, plots, profinstr, profpages, report, vm  # noqa: E402
from runner.allocators import Allocators, probe_nodal  # noqa: E402
from runner.execute import run_job  # noqa: E402

LOG = []
# Pairs of runs (prof=1, default) the heap profile's table gets by default:
# its rows' own spread is +-5-15 %, and with 3 pairs no 90 % interval exists
PROF_REPS = 15
# and at most this many on the cases one of whose rows is still not resolved
# after them and the instruction counts (one more pair at a time)
PROF_MAX_REPS = 25


def log(msg):
    print(msg, file=sys.stderr, flush=True)
    LOG.append(msg)


def build_programs(build):
    """Builds the benchmarks in the top-level build if there is one, else (or
    if that fails, e.g. while the library does not compile) on their own."""
    jobs = str(len(os.sched_getaffinity(0)))
    cache = os.path.join(build, "CMakeCache.txt")
    if os.path.exists(cache):
        r = subprocess.run(["cmake", "--build", build, "--target", "bench_programs", "-j", jobs],
                           capture_output=True, text=True)
        if r.returncode == 0 and os.path.exists(os.path.join(build, "bench", "micro")):
            return os.path.join(build, "bench")
        log("note: the top-level build could not build the benchmarks; building bench/ on its own"
            + ("\n" + r.stdout[-2000:] + r.stderr[-2000:] if r.returncode else ""))
    alone = os.path.join(build, "bench-only")
    for cmd in (["cmake", "-S", BENCH, "-B", alone, "-DCMAKE_BUILD_TYPE=Release"],
                ["cmake", "--build", alone, "-j", jobs]):
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("bench: %s failed:\n%s%s" % (" ".join(cmd), r.stdout[-4000:], r.stderr[-4000:]))
    return alone


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    m = ap.add_mutually_exclusive_group()
    m.add_argument("--quick", action="store_true", help="headline comparison (default)")
    m.add_argument("--full", action="store_true", help="every workload, callgrind and (if available) the VM")
    ap.add_argument("--build", default=os.path.join(REPO, "build"), help="CMake build directory (default: build)")
    ap.add_argument("--only", help="comma list of case ids, programs or groups (also 'callgrind', 'vm')")
    ap.add_argument("--allocators", help="comma list: glibc,jemalloc,mimalloc,tcmalloc,nodal,numa,...")
    ap.add_argument("--reps", type=int, help="repetitions (default 3 quick, 5 full)")
    ap.add_argument("--vm", action="store_true", help="run the node workloads in the multi-node VM")
    ap.add_argument("--no-vm", action="store_true", help="with --full: skip the VM")
    ap.add_argument("--callgrind", action="store_true", help="instruction counts per pair (valgrind)")
    ap.add_argument("--nodal", help="libnodal.so to use (default: <build>/libnodal.so)")
    ap.add_argument("--nodal-options", help="NODAL_OPTIONS for the nodal runs (default: none)")
    ap.add_argument("--nodal-variants", default="",
                    help="extra nodal columns for the drop-in workloads, 'label:opts;label:opts' "
                         "(e.g. 'tc256:tcache_count=256;tc4k:tcache_bytes=4096'); --full adds "
                         "'secure:secure=1'")
    ap.add_argument("--prof-reps", type=int,
                    help="repetitions of the 'nodal' and 'nodal prof' columns on the heap profile's rows "
                         "(report.PROF_GROUPS) for the report's prof=1 table: the suite's own repetitions "
                         "count, and the rest run after them, those two columns only, and feed only that "
                         "table (default with a 'prof' variant: %d; --reps or less: none more)" % PROF_REPS)
    ap.add_argument("--prof-max-reps", type=int, default=PROF_MAX_REPS,
                    help="after --prof-reps, more pairs, one at a time, of the cases whose rows the "
                         "profile's table cannot decide yet, up to this many (default %d)" % PROF_MAX_REPS)
    ap.add_argument("--no-prof-instr", action="store_true",
                    help="skip the heap profile's table's instruction counts (its CPU rows under "
                         "callgrind at a reduced size, both columns: runner/profinstr.py; a few minutes)")
    ap.add_argument("--no-prof-pages", action="store_true",
                    help="skip the heap profile's table's pages (its peak RSS rows the pairs leave open, "
                         "5 pairs more each under bench/peakmap.py: runner/profpages.py)")
    ap.add_argument("--numa-vm", help="path of the numa-vm tool")
    ap.add_argument("--out", help="results directory (default: bench/results/<UTC date>-<host>)")
    ap.add_argument("--no-plots", action="store_true")
    a = ap.parse_args()
    if a.reps is not None and a.reps < 1:
        ap.error("--reps must be >= 1")
    return a


def main():
    a = parse_args()
    t_start = time.time()
    mode = "full" if a.full else "quick"
    only = [x for x in a.only.split(",") if x] if a.only else None
    names = [x for x in only or [] if x not in ("callgrind", "vm")]
    run_host = (a.full or not (a.vm or a.callgrind)) and not (only and not names)
    run_cg = a.callgrind or (only is not None and "callgrind" in only) or (a.full and not only)
    run_vm = a.vm or (only is not None and "vm" in only) or (a.full and not a.no_vm and not only)
    reps = a.reps or (5 if a.full else 3)

    pkgs = [p for k, ps in machine.PACKAGES.items() for p in ps if k != "plots" or not a.no_plots]
    if run_cg:
        pkgs += machine.CALLGRIND_PACKAGES
    machine.ensure_packages(pkgs, log)
    if run_host and a.full:
        absent = [p for p in machine.APP_PACKAGES if not machine.installed(p)]
        if absent:
            log("note: the real-program rows (redis, sqlite, stress-ng) need %s; without them they are "
                "skipped (apt-get install -y %s)" % (" ".join(absent), " ".join(absent)))

    build = os.path.abspath(a.build)
    bindir = build_programs(build)
    nodal, nodal_status = probe_nodal(build, bindir, a.nodal, log, repo=REPO)
    log("nodal: " + nodal_status)
    variants = [tuple(v.split(":", 1)) for v in a.nodal_variants.split(";") if ":" in v]
    # --full: nodal with secure=1 too, in every drop-in workload (and the
    # report's "secure=1 against the default" summary), unless a variant of
    # that name is given already
    if a.full and "secure" not in [label for label, _ in variants]:
        variants.append(("secure", "secure=1"))
    # --full: and with the heap profile on (prof=1, the default rate; its
    # files into a scratch directory), for the report's "prof=1 against the
    # default"
    if a.full and "prof" not in [label for label, _ in variants]:
        profdir = os.path.join(tempfile.gettempdir(), "nodal-bench-prof")
        os.makedirs(profdir, exist_ok=True)
        variants.append(("prof", "prof=1,prof_prefix=%s/p.%%p" % profdir))
    allocs = Allocators(nodal, a.nodal_options, [x for x in a.allocators.split(",") if x]
                        if a.allocators else None, variants)

    stamp = time.strftime("%Y-%m-%dT%H%M%SZ", time.gmtime())
    commit, commit_short = machine.git_commit(REPO)
    meta = {"command": " ".join(shlex.quote(x) for x in [os.path.relpath(sys.argv[0], REPO)] + sys.argv[1:]),
            "commit": commit, "commit_short": commit_short, "date": stamp, "machine": machine.machine_info(),
            "versions": machine.package_versions(), "nodal": nodal_status, "reps": reps, "mode": mode}
    outdir = a.out or os.path.join(BENCH, "results", "%s-%s" % (stamp, meta["machine"]["host"]))
    os.makedirs(outdir, exist_ok=True)

    samples, problems, by_group, raw = [], [], {}, []

    def note_variants(group, vs):
        have = by_group.setdefault(group, [])
        for v in vs:
            if v.name not in [h.name for h in have]:
                have.append(v)

    if run_host:
        todo = cases.select(cases.full_cases() if a.full else cases.quick_cases(), names)
        seq = 0
        for rep in range(reps):
            log("[repetition %d/%d]" % (rep + 1, reps))
            for case in todo:
                vs = allocs.for_set(case.vset, **case.vset_kw)
                note_variants(case.group, vs)
                k = rep % len(vs) if vs else 0
                for v in vs[k:] + vs[:k]:
                    seq += 1
                    rows, out, err = run_job(bindir, case, v, rep, seq, log)
                    samples += rows
                    raw.append("### %s / %s / rep %d\n%s%s" % (case.id, v.name, rep, out, err))
                    st = rows[0].get("failure") or rows[0]["status"]
                    if st not in ("ok", "skipped"):
                        problems.append("%s / %s rep %d: %s" % (case.id, v.name, rep, st))

        # the heap profile's table: more pairs of its two columns on its rows
        prof_reps = a.prof_reps if a.prof_reps is not None else PROF_REPS
        prof_todo = [(c, [v for v in allocs.for_set(c.vset, **c.vset_kw)
                          if v.name in (report.PROF_OFF, report.PROF_ON)])
                     for c in todo if c.group in report.PROF_GROUPS]
        prof_todo = [(c, vs) for c, vs in prof_todo if len(vs) == 2]

        def prof_pair(rep, todo):
            nonlocal seq
            for case, vs in todo:
                for v in vs[rep % 2:] + vs[:rep % 2]:
                    seq += 1
                    rows, out, err = run_job(bindir, case, v, rep, seq, log, pass_="prof")
                    samples.extend(rows)
                    raw.append("### %s / %s / rep %d (prof pairs)\n%s%s" % (case.id, v.name, rep, out, err))
                    st = rows[0]["status"]
                    if st not in ("ok", "skipped"):
                        problems.append("%s / %s rep %d (prof pairs): %s" % (case.id, v.name, rep, st))
        for rep in range(reps, prof_reps if prof_todo else 0):
            log("[prof=1 pairs: repetition %d/%d]" % (rep + 1, prof_reps))
            prof_pair(rep, prof_todo)
        # and its CPU rows in instructions, which repeat where times do not
        if prof_todo and not a.no_prof_instr:
            machine.ensure_packages(machine.CALLGRIND_PACKAGES, log)
            log("[prof=1 instructions: %d rows under callgrind]"
                % sum(len(profinstr.units(c)) for c, _ in prof_todo))
            s, p = profinstr.run(bindir, prof_todo, log)
            samples += s
            problems += p
        # and its peak RSS rows that the pairs leave open, by the pages outside
        # the program's blocks, which repeat where the peaks do not
        if prof_todo and not a.no_prof_pages:
            still = report.prof_open_cases(samples, rss_only=True)
            pages_todo = [(c, vs) for c, vs in prof_todo if c.id in still]
            log("[prof=1 pages: %d rows of %d cases under peakmap.py]"
                % (sum(len(profpages.units(c)) for c, _ in pages_todo), len(pages_todo)))
            s, p = profpages.run(bindir, pages_todo, log)
            samples += s
            problems += p
        # more pairs where the table cannot decide yet, until it can or the cap
        for rep in range(max(reps, prof_reps), a.prof_max_reps if prof_todo else 0):
            still = report.prof_open_cases(samples)
            todo = [(c, vs) for c, vs in prof_todo if c.id in still]
            if not todo:
                break
            log("[prof=1 pairs: repetition %d (cap %d) of %d cases not resolved]"
                % (rep + 1, a.prof_max_reps, len(todo)))
            prof_pair(rep, todo)

    if run_cg:
        log("[callgrind]")
        s, vbg, p, loop = callgrind.run(bindir, allocs, log)
        samples += s
        problems += p
        meta["callgrind_loop"] = loop
        for g, vs in vbg.items():
            note_variants(g, vs)

    if run_vm:
        tool = vm.find_numa_vm(REPO, a.numa_vm)
        if not tool:
            problems.append("vm: numa-vm not found (--numa-vm PATH)")
        else:
            log("[vm]")
            jobs, seq = [], 100000
            for rep in range(reps):
                for case in cases.select(cases.vm_cases(), names):
                    vs = allocs.for_set(case.vset, **case.vset_kw)
                    note_variants(case.group, vs)
                    k = rep % len(vs) if vs else 0
                    for v in vs[k:] + vs[:k]:
                        seq += 1
                        jobs.append((seq, rep, case, v))
            # one boot runs every job: allow about 25 s per job under emulation
            s, p = vm.run(tool, bindir, jobs, raw, log, timeout=max(3000, 25 * len(jobs)))
            samples += s
            problems += p

    meta["elapsed"] = time.time() - t_start
    meta["machine"]["loadavg_end"] = machine.machine_info()["loadavg"]
    meta["loadavg_end"] = meta["machine"]["loadavg_end"]
    footer = "nodal bench %s | commit %s | %s | %s, %d CPUs | %s" % (
        mode, meta["commit_short"], stamp, meta["machine"]["host"], meta["machine"]["nproc"], nodal_status)
    pngs = [] if a.no_plots else plots.plot_all(samples, by_group, cases.GROUPS, outdir, footer, log)
    md = report.markdown(samples, by_group, meta, problems)

    def with_plots(prefix):
        if not pngs:
            return md
        return md + "\n## Plots\n\n" + "\n".join("![%s](%s%s)" % (p, prefix, p) for p in pngs) + "\n"

    with open(os.path.join(outdir, "results.md"), "w") as f:
        f.write(with_plots(""))
    report.write_csv(os.path.join(outdir, "samples.csv"), samples, meta)
    with open(os.path.join(outdir, "run.log"), "w") as f:
        f.write("\n".join(LOG) + "\n\n" + "\n".join(raw))
    # latest.md is the results' table (docs/results.md): only complete, unfiltered runs replace
    # it. Git keeps the latest tables and their samples (xz-compressed), not
    # the run directories: their plots and CSV stay on the machine that ran.
    if not a.out and not only and not a.allocators and run_host:
        results = os.path.join(BENCH, "results")
        rel = os.path.relpath(outdir, results)
        with open(os.path.join(results, "latest.md"), "w") as f:
            f.write(md + "\nThe plots and the raw samples of this run are in `bench/results/%s/` on the machine "
                    "that ran it (run directories are not kept in git); the samples are also in "
                    "`latest-samples.csv.xz` here.\n" % rel)
        subprocess.run(["sh", "-c", 'xz -9 -c "$1" > "$2"', "sh", os.path.join(outdir, "samples.csv"),
                        os.path.join(results, "latest-samples.csv.xz")], check=False)
    print(md)
    log("results: %s (%.0f s)" % (os.path.relpath(outdir), meta["elapsed"]))
    return 1 if problems and not samples else 0


if __name__ == "__main__":
    sys.exit(main())
