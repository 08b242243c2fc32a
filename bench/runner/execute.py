"""Runs one benchmark process and turns its output into samples.

Every sample is one metric value from one result line of one run:
    {rep, pass, seq, case, variant, workload, params, metric, value, status, proc_*}
proc_* are the whole process's wall, user, sys seconds and peak RSS (KiB),
taken with wait4() on the host, so every run records them even when the
program's own result line does not; load1 is the machine's 1-minute load
average when the run started.
"""

import os
import subprocess
import threading
import time

# Keys of a result line that identify the column, not the row.
VARIANT_KEYS = {"backend", "config"}
STATUS_OK, STATUS_SKIP = "ok", "skipped"


def is_metric(key):
    return (key.startswith(("ns_", "cpu_ns_", "us_", "cpu_us_", "instr_"))
            or key.endswith(("_s", "_mib", "_kib", "_mops", "_pct"))
            or key in ("mops", "overhead", "misplaced", "blocks", "ratio", "tlb_ipis_seg",
                       "peak_inflight"))


def parse_results(text):
    """Yields (workload, params dict, metrics dict) for each result line."""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 2 or parts[0] != "result":
            continue
        params, metrics = {}, {}
        for kv in parts[2:]:
            if "=" not in kv:
                continue
            k, v = kv.split("=", 1)
            if k in VARIANT_KEYS:
                continue
            if is_metric(k):
                try:
                    metrics[k] = float(v)
                except ValueError:
                    pass
            else:
                params[k] = v
        yield parts[1], params, metrics


def run_process(argv, env, timeout):
    """Runs argv; returns (rc, stdout, stderr, rusage dict, wall seconds).
    rc is None on timeout."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    timed_out = []

    def kill():
        timed_out.append(True)
        p.kill()

    timer = threading.Timer(timeout, kill)
    timer.start()
    # read both pipes without blocking on either
    err_chunks = []
    reader = threading.Thread(target=lambda: err_chunks.append(p.stderr.read()))
    reader.start()
    out = p.stdout.read()
    reader.join()
    _, status, ru = os.wait4(p.pid, 0)
    timer.cancel()
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - t0
    usage = {"proc_wall_s": wall, "proc_user_s": ru.ru_utime, "proc_sys_s": ru.ru_stime,
             "proc_maxrss_kib": ru.ru_maxrss, "proc_minflt": ru.ru_minflt, "proc_nvcsw": ru.ru_nvcsw,
             "proc_nivcsw": ru.ru_nivcsw}
    rc = None if timed_out else p.returncode
    return rc, out, "".join(err_chunks), usage, wall


def status_of(rc):
    if rc is None:
        return "timeout"
    if rc == 0:
        return STATUS_OK
    if rc == 77:
        return STATUS_SKIP
    return "failed (exit %d)" % rc


def samples_from(text, status, usage, base):
    """Expands one run's output into sample dicts; a run without result lines
    still yields one record so that failures show up in the CSV."""
    rows = []
    for workload, params, metrics in parse_results(text):
        for metric, value in metrics.items():
            rows.append(dict(base, workload=workload, params=params, metric=metric,
                             value=value, status=status, **usage))
    if not rows:
        rows.append(dict(base, workload=base.get("program", "?"), params={}, metric="",
                         value=None, status=status if status != STATUS_OK else "no result",
                         **usage))
    return rows


def load1():
    """The 1-minute load average: how busy the shared machine was."""
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


# bench/: the real-program drivers (Case.driver) live in bench/apps/
BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_job(bindir, case, variant, rep, seq, log, pass_="main"):
    """Runs one case under one variant. pass_ "main" is a repetition of the
    whole suite; "prof" one of the extra repetitions of the heap profile's
    two columns (run.py --prof-reps), which only its table reads."""
    path = os.path.join(BENCH if case.driver else bindir, case.program)
    argv = [path] + case.args + variant.args
    env = variant.environ(os.environ, target=case.driver)
    load = load1()
    if os.path.exists(path):
        rc, out, err, usage, wall = run_process(argv, env, case.timeout)
        status = status_of(rc)
    else:   # e.g. sqlite without libsqlite3-dev: the program was not built
        rc, out, err, wall = 77, "", "%s was not built" % case.program, 0.0
        usage = {"proc_wall_s": 0.0, "proc_user_s": 0.0, "proc_sys_s": 0.0, "proc_maxrss_kib": 0,
                 "proc_minflt": 0, "proc_nvcsw": 0, "proc_nivcsw": 0}
        status = STATUS_SKIP
    base = {"rep": rep, "seq": seq, "case": case.id, "group": case.group,
            "variant": variant.name, "program": case.program, "load1": load, "pass": pass_}
    failure = None
    if case.partial and status.startswith("failed") and any(True for _ in parse_results(out)):
        # its results count; the failure is still listed (run.py), with the
        # program's last note (aslimit: the signal and the part it died in)
        notes = [ln for ln in out.splitlines() if ln.startswith("note: ")]
        failure = status + (": " + notes[-1][6:] if notes else "") + "; the results before it are kept"
        status = STATUS_OK
    rows = samples_from(out, status, usage, base)
    if failure is not None:
        for r in rows:
            r["failure"] = failure
    shown = failure or (None if status == STATUS_OK else status)
    note = "" if shown is None else "  <- " + shown + (
        ": " + err.strip().splitlines()[-1] if err.strip() and failure is None else "")
    log("  %-22s %-20s %6.2fs%s" % (case.id, variant.name, wall, note))
    return rows, out, err
