"""--vm: the node-sensitive workloads in a multi-node VM (tools/numa-vm).

Python does not run inside the VM, so every job of every repetition goes into
one busybox sh script, run in a single boot; each job is framed by marker
lines on the serial console:
    @@job <seq>          before the job
    @@rc <seq> <status>  after it
and the result lines in between are parsed as on the host. There is no
wait4() there, so proc_* fields are empty; the programs' own result lines
carry their timings. Under TCG the guest's times are emulation times: the
VM shows that node placement works across nodes (misplaced = 0) and how the
allocators compare there, not the host's NUMA latencies.
"""

import os
import shlex
import subprocess
import tempfile

from .execute import samples_from, status_of


def find_numa_vm(repo, override=None):
    """The repository's own tools/numa-vm/numa-vm, or the one --numa-vm names."""
    path = override or os.path.join(repo, "tools", "numa-vm", "numa-vm")
    return path if os.access(path, os.X_OK) else None


def run(numa_vm, bindir, jobs, raw_out, log, timeout=3000):
    """jobs: list of (seq, rep, case, variant); the console text is appended
    to raw_out. Returns (samples, problems)."""
    lines = ["#!/bin/sh", "cd /tmp"]
    adds = set()
    for seq, rep, case, v in jobs:
        prog = os.path.join(bindir, case.program)
        adds.add(prog)
        env = dict(v.env)
        if v.preload:
            env["LD_PRELOAD"] = v.preload
            adds.add(v.preload)
        for lib in ("BENCH_JEMALLOC", "BENCH_MEMKIND"):   # dlopen()ed: not seen by ldd
            if lib in env:
                adds.add(env[lib])
        cmd = ["env"] + ["%s=%s" % kv for kv in env.items()] + [prog] + case.args + v.args
        lines.append("echo @@job %d" % seq)
        lines.append(" ".join(shlex.quote(c) for c in cmd) + " 2>&1")
        lines.append("echo @@rc %d $?" % seq)
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "vm-bench.sh")
        with open(script, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.chmod(script, 0o755)
        # --hmat: the firmware gives latency and bandwidth per (CPU node, node),
        # which the tier workloads (and memkind's attribute kinds) need; the
        # topology and distances are numa-vm's default either way
        argv = [numa_vm, "--hmat", "-t", str(timeout)]
        for a in sorted(adds) + [script]:
            argv += ["--add", a]
        argv += ["--", "sh", script]
        log("vm: one boot, %d jobs: %s" % (len(jobs), " ".join(shlex.quote(a) for a in argv[:3]) + " ..."))
        r = subprocess.run(argv, capture_output=True, text=True, cwd=tmp)
    raw_out.append(r.stdout + r.stderr)
    by_seq = {seq: (rep, case, v) for seq, rep, case, v in jobs}
    samples, problems, current, buf, done = [], [], None, [], set()
    for line in r.stdout.splitlines():
        if line.startswith("@@job "):
            current, buf = int(line.split()[1]), []
        elif line.startswith("@@rc ") and current is not None:
            rc = int(line.split()[2])
            rep, case, v = by_seq[current]
            base = {"rep": rep, "seq": current, "case": case.id, "group": case.group,
                    "variant": v.name, "program": case.program}
            usage = {"proc_wall_s": None, "proc_user_s": None, "proc_sys_s": None, "proc_maxrss_kib": None,
                     "proc_minflt": None, "proc_nvcsw": None, "proc_nivcsw": None}
            status = status_of(rc)
            samples += samples_from("\n".join(buf), status, usage, base)
            if status not in ("ok", "skipped"):
                problems.append("vm %s / %s rep %d: %s" % (case.id, v.name, rep, status))
            log("  vm %-22s %-22s %s" % (case.id, v.name, status))
            done.add(current)
            current = None
        elif current is not None:
            buf.append(line)
    missing = [s for s in by_seq if s not in done]
    if missing or r.returncode != 0:
        problems.append("vm: numa-vm exited %d; %d of %d jobs did not finish%s" % (
            r.returncode, len(missing), len(jobs),
            (": " + r.stderr.strip().splitlines()[-1]) if r.stderr.strip() else ""))
    return samples, problems
