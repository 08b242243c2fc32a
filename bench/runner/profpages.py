"""The heap profile's peak RSS in pages: each open peak RSS row of the
profile's table (report.PROF_GROUPS) run under bench/peakmap.py with prof=1
and without, in pairs, and the resident pages at the peak sorted into the
program's blocks and the rest.

Why: a row's peak RSS moves by 2-30 % from run to run with how many blocks
the program holds at its peak (xthread's rings, batchq's queue, larson's
slots), with or without the profile, while what the profile adds is 50-100
KiB of pages of its own (its code, .bss, tables, cell slabs, the large
segment's header: docs/profiling.md, "Cost"), 1-2 % of these peaks. The
pairs of peaks (report.py) then need hundreds of pairs to decide against
the 2 % target. The pages the program's blocks are on (the small, medium
and huge blocks of nodal's segments) are the part that moves; the rest
repeats to a few pages. So per pair of runs (prof=1 and the default, back
to back, in rotating order, without address-space randomisation), at each
run's largest snapshot before its result line (peakmap.py -l):

    fixed  = nodal's file (code, data, .bss) and the anonymous memory
             that is not the program's blocks (nodal's bookkeeping, the
             profile's tables and cell slabs (peakmap.py tells them from
             the program's large blocks by their header), the segments'
             headers, the stacks); the other objects' pages are left out
             (split, below)
    extra  = fixed(prof=1) - fixed(default)
    ratio  = (peak(default) + extra) / peak(default)

peak: the default run's own peak (its result line's peak_rss_kib). The
ratio is what prof=1's peak would be if its blocks at the peak were the
default run's: true where the profile does not change which blocks a
program holds (a sampled small request is a cell of a slab instead of a
block of its page, counted in fixed; a sampled medium or huge request is
the block it would be), which each pair also checks: the blocks' own
ratio, prof=1 / default (report.py shows its median; it moves by the
row's spread, centred on 1). The program's large blocks (mstress: up to
4 MiB) are blocks; before h51p's last change they were in fixed, where
their spread (which of them were resident at the snapshot) gave mstress
-t 2 a median extra of -1.6 MiB.

The pairs' extra moves with nodal's bookkeeping, which follows what the
program holds at the snapshot (mstress: MiBs; xthread: what its rings
hold), so some rows stay open however many pairs run. Each prof=1 run
therefore also counts the pages the profile itself has, exactly, at its
snapshot (metric prof_own_kib; h52p):

    own = nodal's file pages (code, read-only data, data, .bss; by file
          offset) resident in the prof=1 run, each for the share of the
          row's default runs that do not have it (a thread's exit may
          run code of the sample's section: nd_os_yield, large.c's)
        + the resident bytes of the profile's tables and its unwinder's
          cache (statistic prof_table_bytes at exit: pages stay once
          written, so it bounds the snapshot's)
        + the cell slabs' pages at the snapshot, and the header pages of
          the large segments that hold one (the program's own large
          blocks may share them: counted whole)
        + the stacks' pages past the median of the row's default runs

    ratio = (peak(default) + own) / peak(default), per pair

It assumes the profile writes no other page of nodal's bookkeeping (the
thread caches' pages: tests/unit/prof.c,
a_sampling_thread_writes_no_more_pages_of_its_cache; batchq -w 2's
anonymous pages by the mmap call that made them, strace -k, the same with
and without the profile but for its tables and slabs: docs/results.md,
h52p) and that it does not change which blocks the program holds (the
blocks' ratio, as above).
"""

import json
import os
import shutil
import statistics
import sys
import tempfile

from .execute import parse_results

# Pairs per row: at the table's 90 % level 5 is the fewest whose interval
# (their range) has full coverage (report.median_interval); 9 leave out the
# lowest and the highest (96 %): one run whose program held more at its
# peak also has more of nodal's bookkeeping (its caches' bins grown: larson
# -t 2, 1 run in 5, +72 KiB with or without the profile), which a range
# would take whole.
REPS = 9
# Without address-space randomisation: where the loader puts libc decides
# how many of its code pages the kernel's fault-around maps (aligned runs of
# 64 KiB around each fault), +-150 KiB from run to run (larson -t 2: the
# rest of the peak 2,440-2,610 KiB with ASLR, 2,688-2,692 in 4 of 5 runs
# without). The pages the profile makes resident in libc (the code its
# samples run there) stay in the count, at one layout.
NO_ASLR = ["setarch", "-R"]
PASS = "prof-pages"
# peakmap.py's groups of the program's blocks.
BLOCK_GROUPS = ("seg blocks small", "seg blocks medium", "seg blocks large", "seg blocks huge")
STACKS = ("thread stacks", "main stack")
# The groups counted as what the profile may add: nodal's own file ("LIB
# ..."), and the anonymous memory that is not the program's blocks.
FIXED_ANON = ("other anon (nodal metadata, arenas)", "seg header", "seg cell slabs", "thread stacks",
              "main stack", "[heap] (brk)")


def units(case):
    """[args]: one peakmap run per unit, each printing one result line (one
    row) at the case's own size. xthread's rows are one -s size each, and
    its -x row alone (-M)."""
    a = list(case.args)
    if case.program != "xthread":
        return [a]
    opts = {a[i]: a[i + 1] for i in range(len(a) - 1) if a[i] in ("-s", "-x")}
    rest = [x for i, x in enumerate(a) if x not in opts and (i == 0 or a[i - 1] not in opts)]
    out = [rest + ["-s", s] for s in opts.get("-s", "8").split(",")]
    if "-x" in opts:
        out.append(rest + ["-x", opts["-x"], "-M"])
    return out


def split(groups):
    """(blocks KiB, fixed KiB) of a peakmap snapshot's groups: the program's
    blocks, and nodal's file with the anonymous memory that is not blocks.
    The other objects' pages (libc's, the loader's, the program's) are in
    neither: which of libc's code is resident at the snapshot depends on
    when it is taken (larson -t 2, setarch -R: 1,048 or 1,240 KiB, whether
    the peak came before or after its printf code was mapped, with or
    without the profile), and the profile's own use of them (the unwinder's
    _dl_find_object, pread) is of pages every such program has resident
    (batchq -w 2 and larson -t 2: libc's, ld.so's and libm's code the same
    with prof=1 and without, bench/peakmap.py medians, h51p)."""
    blocks = sum(groups.get(g, 0) for g in BLOCK_GROUPS)
    fixed = sum(v for k, v in groups.items() if k.startswith("LIB ") or k in FIXED_ANON)
    return blocks, fixed


def _peakmap():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if here not in sys.path:
        sys.path.insert(0, here)
    import peakmap
    return peakmap


def run(bindir, todo, log, seq0=300000):
    """todo: [(case, [default variant, prof variant])]. Returns (samples,
    problems): per row, column and pair, metrics prof_fixed_kib,
    prof_blocks_kib and prof_peak_kib, pass "prof-pages"."""
    from .report import PROF_ON
    pm = _peakmap()
    pm.DUMP.add("LIB")   # nodal's file pages by offset (own, above)
    pre = NO_ASLR if shutil.which(NO_ASLR[0]) else []
    samples, problems = [], []
    seq = seq0
    statdir = tempfile.mkdtemp(prefix="profpages.")
    statf = os.path.join(statdir, "s.json")
    for case, vs in todo:
        for args in units(case):
            path = os.path.join(bindir, case.program)
            runs = []   # (rep, variant, LIB pages, stacks KiB, groups, tables KiB, result line)
            for rep in range(REPS):
                for v in vs[rep % 2:] + vs[:rep % 2]:
                    env = v.environ(os.environ)
                    if v.name == PROF_ON:   # the exit statistics to a file: prof_table_bytes (own, above)
                        env["NODAL_OPTIONS"] = ",".join(x for x in (env.get("NODAL_OPTIONS", ""), "stats=json",
                                                                    "stats_file=" + statf) if x)
                    try:
                        _, groups, hwm, out = pm.run_once(env.get("LD_PRELOAD", ""), pre + [path] + args + v.args,
                                                          0.0005, until_result=True, env=env)
                    except Exception as e:      # one row failing must not stop the table
                        problems.append("prof pages %s %s %s: %s" % (case.id, " ".join(args), v.name, e))
                        continue
                    table = _stat(statf, "prof_table_bytes")
                    lines = list(parse_results(out))
                    if len(lines) != 1 or not groups:
                        problems.append("prof pages %s %s: %d result lines, %d groups" % (
                            case.id, " ".join(args), len(lines), len(groups)))
                        continue
                    if v.name == PROF_ON and table is None:
                        problems.append("prof pages %s %s: no prof_table_bytes" % (case.id, " ".join(args)))
                    libpages = {(g, off) for g, (_, off) in groups.get("_pages", []) if g.startswith("LIB ")}
                    runs.append((rep, v, libpages, sum(groups.get(g, 0) for g in STACKS), groups,
                                 (table or 0) // 1024, lines[0]))
                    blocks, fixed = split(groups)
                    peak = lines[0][2].get("peak_rss_kib") or hwm
                    for metric, x in (("prof_fixed_kib", fixed), ("prof_blocks_kib", blocks),
                                      ("prof_peak_kib", peak)):
                        seq += 1
                        samples.append({"rep": rep, "seq": seq, "case": case.id, "group": case.group,
                                        "variant": v.name, "workload": lines[0][0], "params": lines[0][1],
                                        "metric": metric, "value": float(x), "status": "ok", "pass": PASS})
                    log("  %-22s %-30s %-12s fixed %6d KiB, blocks %7d KiB, peak %7d KiB" % (
                        case.id, " ".join(args)[-30:], v.name, fixed, blocks, peak))
            # own (above): each prof=1 run against all of the row's default runs
            offs = [r for r in runs if r[1].name != PROF_ON]
            off_lib = {}
            for r in offs:
                for pg in r[2]:
                    off_lib[pg] = off_lib.get(pg, 0) + 1
            off_stack = statistics.median([r[3] for r in offs] or [0])
            for rep, v, libpages, stack, groups, table, line in runs:
                if v.name != PROF_ON:
                    continue
                # a page the default runs have in some of their snapshots
                # (a thread's exit path in the sample's section, under load)
                # counts for the share of them that lack it
                fresh = sum(1 - off_lib.get(pg, 0) / len(offs) for pg in libpages) if offs else len(libpages)
                parts = {"file": round(fresh * pm.PAGE / 1024), "tables": table,
                         "slabs": groups.get("seg cell slabs", 0) + groups.get("_slab_seg_header", 0),
                         "stacks": max(0, round(stack - off_stack))}
                seq += 1
                samples.append({"rep": rep, "seq": seq, "case": case.id, "group": case.group, "variant": v.name,
                                "workload": line[0], "params": line[1], "metric": "prof_own_kib",
                                "value": float(sum(parts.values())), "status": "ok", "pass": PASS})
                log("  %-22s %-30s own %4d KiB: %s" % (case.id, " ".join(args)[-30:], sum(parts.values()),
                                                        ", ".join("%s %d" % kv for kv in parts.items())))
    shutil.rmtree(statdir, ignore_errors=True)
    return samples, problems


def _stat(path, name):
    """Statistic `name` of the exit report stats=json wrote to path (the
    file removed after), or None."""
    try:
        with open(path) as f:
            text = f.read()
        os.unlink(path)
    except OSError:
        return None
    key = '"%s":' % name
    i = text.find(key)
    if i < 0:
        return None
    num = text[i + len(key):].lstrip()
    digits = len(num) - len(num.lstrip("0123456789"))
    return int(num[:digits]) if digits else None


def ratios(samples, group):
    """{row: ([(peak(default) + extra) / peak(default) per pair], [blocks
    prof=1 / default per pair], [extra KiB per pair])} of pass prof-pages,
    pairs by repetition; extra is the prof=1 run's own pages (prof_own_kib)
    where it was counted, else fixed(prof=1) - fixed(default) (runs of
    before h52p)."""
    from .report import PROF_OFF, PROF_ON, param_key
    by = {}
    for s in samples:
        if s["group"] == group and s.get("pass") == PASS and s["status"] == "ok" and s["value"] is not None:
            by.setdefault(param_key(s["params"]), {}).setdefault(s["rep"], {}).setdefault(
                s["variant"], {})[s["metric"]] = s["value"]
    out = {}
    for row, reps in by.items():
        rs, bs, ds = [], [], []
        for rep in sorted(reps):
            on, off = reps[rep].get(PROF_ON, {}), reps[rep].get(PROF_OFF, {})
            if not all(m in d for d in (on, off) for m in ("prof_fixed_kib", "prof_blocks_kib", "prof_peak_kib")):
                continue
            if off["prof_peak_kib"] <= 0 or off["prof_blocks_kib"] <= 0:
                continue
            extra = on["prof_own_kib"] if "prof_own_kib" in on else on["prof_fixed_kib"] - off["prof_fixed_kib"]
            rs.append((off["prof_peak_kib"] + extra) / off["prof_peak_kib"])
            bs.append(on["prof_blocks_kib"] / off["prof_blocks_kib"])
            ds.append(extra)
        if rs:
            out[row] = (rs, bs, ds)
    return out


def median(xs):
    return statistics.median(xs) if xs else float("nan")
