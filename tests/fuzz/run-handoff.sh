#!/bin/sh
# run-handoff.sh - the hand-over fuzzer (tests/fuzz/handoff.c) back to back
# with new seeds, each run with a CPU-bound process beside it.
#
#   run-handoff.sh [--long [SECONDS]] [--build DIR] [--out DIR] [--run SECONDS]
#                  [--threads N] [--hogs N]
#
# Without --long: one run of each option set (five runs, 15 s each). With
# --long: runs of 60 s until SECONDS have passed (default 3600), cycling
# through the option sets: default, check=2, secure=1, "churn"
# (purge_delay=0,tcache_count=16,cache_segments=0), and the prefix build
# (nodal_* names, libnodal_prefix.a). Every run draws a new seed.
#
# Prints one line per run (PASS or FAIL, option set, seed, seconds, the
# fuzzer's failure line) and a summary with the failing seeds and the
# command that reruns each. Logs of failing runs are kept in
# OUT/fail-RUN-SEED-SET.log (default OUT: /tmp/nodal-handoff); a run that
# outlives its time by 120 s is killed and counts as a failure (a hang),
# its log ending with its threads' states and stacks (overrun, below).
#
# Exit: 0 no run failed; 1 some run failed; 2 usage; 77 no fuzzer built.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$here/../../build
out=/tmp/nodal-handoff
long=0
total=
run_s=
threads=4
hogs=1
while [ $# -gt 0 ]; do
    case $1 in
    --long)
        long=1
        if [ $# -gt 1 ] && [ "${2#-}" = "$2" ]; then total=$2; shift; fi ;;
    --build) build=$2; shift ;;
    --out) out=$2; shift ;;
    --run) run_s=$2; shift ;;
    --threads) threads=$2; shift ;;
    --hogs) hogs=$2; shift ;;
    *) echo "usage: $0 [--long [SECONDS]] [--build DIR] [--out DIR] [--run SECONDS] [--threads N] [--hogs N]" >&2
       exit 2 ;;
    esac
    shift
done
if [ "$long" = 1 ]; then
    total=${total:-3600}
    run_s=${run_s:-60}
else
    run_s=${run_s:-15}
fi
case_name=blocks_handed_between_threads_stay_intact_and_in_use
[ -x "$build/tests/fuzz_handoff" ] || { echo "SKIP: no fuzzer at $build/tests/fuzz_handoff (build the tests first)"; exit 77; }
build=$(cd "$build" && pwd)
std=$build/tests/fuzz_handoff
prefix=$build/tests/fuzz_handoff_prefix
mkdir -p "$out" || exit 2

# overrun PID SECONDS LOG: once PID has run SECONDS, appends to LOG what
# each of its threads is doing (state, CPU ticks, kernel wait channel; every
# thread's stack through gdb where gdb is installed and may attach), so that
# a hang leaves its stacks, then kills it (SIGKILL: exit 137).
overrun() {
    end=$(($(date +%s) + $2))   # by the clock: on a loaded machine a sleep 1 takes longer
    while [ "$(date +%s)" -lt "$end" ]; do
        sleep 1
        kill -0 "$1" 2>/dev/null || return 0
    done
    {
        echo "run-handoff: still running after $2 s: its threads (state, utime, stime in ticks, wchan)"
        for t in /proc/"$1"/task/*; do
            echo "  ${t##*/}: $(cut -d' ' -f3,14,15 "$t/stat" 2>/dev/null) $(cat "$t/wchan" 2>/dev/null)"
        done
        if command -v gdb >/dev/null 2>&1; then
            timeout 120 gdb -p "$1" -batch -ex 'thread apply all bt' 2>&1
        else
            echo "run-handoff: no gdb: no stacks"
        fi
    } >>"$3"
    kill -KILL "$1" 2>/dev/null
}

# The option sets, in turn: NAME=NODAL_OPTIONS (prefix: the prefix build).
sets="default= check2=check=2 secure=secure=1 churn=purge_delay=0,tcache_count=16,cache_segments=0 prefix="

if [ "$long" = 1 ]; then
    echo "run-handoff: $total s of runs of $run_s s, $threads threads, $hogs hog(s) each; logs in $out"
else
    echo "run-handoff: one run of $run_s s per option set, $threads threads, $hogs hog(s) each; logs in $out"
fi
start=$(date +%s)
runs=0
failed=0
failures=
while :; do
    for set in $sets; do
        now=$(date +%s)
        [ "$long" = 0 ] || [ $((now - start)) -lt "$total" ] || break 2
        name=${set%%=*}
        opts=${set#*=}
        seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
        runs=$((runs + 1))
        prog=$std
        variant=std
        if [ "$name" = prefix ]; then
            prog=$prefix
            variant=prefix
        fi
        log=$out/run.log
        t0=$(date +%s)
        # shellcheck disable=SC2086
        NODAL_OPTIONS=$opts "$prog" --variant=$variant \
            --seconds="$run_s" --threads="$threads" --hogs="$hogs" --seed="$seed" "$case_name" \
            >"$log" 2>&1 &
        pid=$!
        overrun "$pid" $((run_s + 120)) "$log" &
        dog=$!
        wait "$pid"
        rc=$?
        kill "$dog" 2>/dev/null
        wait "$dog" 2>/dev/null
        secs=$(($(date +%s) - t0))
        rerun="NODAL_OPTIONS=$opts $prog --variant=$variant --seconds=$run_s --threads=$threads --seed=$seed $case_name"
        if [ "$rc" -eq 0 ]; then
            echo "run $runs [$name] seed=$seed: PASS ($secs s)"
        else
            failed=$((failed + 1))
            keep=$out/fail-$runs-$seed-$name.log
            echo "$rerun" >>"$log"
            mv "$log" "$keep"
            why=$(grep -E '^(FAIL|nodal:)' "$keep" | head -2 | tr '\n' ' ')
            [ "$rc" -eq 137 ] && why="killed after $secs s (a hang?) $why"
            echo "run $runs [$name] seed=$seed: FAIL (exit $rc, $secs s): $why"
            failures="$failures
  $rerun    # log: $keep"
        fi
    done
    [ "$long" = 1 ] || break
done
rm -f "$out/run.log"
echo "run-handoff: $runs runs in $(($(date +%s) - start)) s, $failed failed"
if [ "$failed" -gt 0 ]; then
    echo "failing seeds (rerun each with):$failures"
    exit 1
fi
exit 0
