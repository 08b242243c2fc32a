#!/usr/bin/env bash
# run-all.sh - every test tier of nodal, with one summary at the end.
#
#   tests/run-all.sh BUILDDIR        (what `make check` runs)
#
#   1. host    ctest in BUILDDIR, one run per label: lint, unit, api, stress,
#              preload, placement (its host form), cpp, install, cross; then any
#              unlabeled test (no row when there is none)
#   2. asan    configure + build BUILDDIR-asan with -DNODAL_SANITIZE=address
#              (tests call nodal_* names, linked against nodal_prefix_san),
#              ctest -L 'api|stress|cpp' (the unit tier, built there with
#              the sanitizer, is not run: tests/README.md, Sanitizers)
#   3. tsan    the same in BUILDDIR-tsan with -DNODAL_SANITIZE=thread
#   4. debug   configure + build BUILDDIR-debug with -DNODAL_DEBUG=ON (every
#              core struct's invariants checked as the library runs, and
#              the lock-order witness), ctest -L 'debug|stress': the
#              hand-over fuzzer under six option sets, twice each (one
#              fixed seed, one new), and the stress tier but
#              rss_peak.c's cases
#   5. fuzz    configure + build BUILDDIR-fuzz with clang and -DNODAL_FUZZ=ON
#              (the core with libFuzzer coverage, ASan and UBSan), ctest -L fuzz:
#              one bounded libFuzzer run per option set, two at a time
#              (skipped when clang's libFuzzer is not installed)
#   6. vm      the repository's 4-node VM: tools/numa-vm/selftest.sh (the
#              tool itself), then tests/placement/run-vm.sh BUILDDIR (the
#              placement tier on 4 nodes); exit 77 = no VM on this machine
#
# Exit status: 0 if nothing failed (skips are listed with their reasons in
# the note column, never counted as passes), 1 otherwise. Logs:
# BUILDDIR/run-all-logs/.
#
# Environment: JOBS (parallel tests/builds, default nproc), ND_SKIP_SAN=1
# (leave out tiers 2 and 3), ND_SKIP_DEBUG=1 (leave out tier 4),
# ND_SKIP_FUZZ=1 (leave out tier 5), ND_SKIP_VM=1 (leave out tier 6),
# ND_ASAN_BUILD / ND_TSAN_BUILD / ND_DEBUG_BUILD / ND_FUZZ_BUILD (their
# build directories), ND_FUZZ_CC (the fuzz tier's compiler, default clang-14
# or clang), ND_FUZZ_SECONDS (seconds per libFuzzer run, default 30).
set -u

if [ $# -lt 1 ]; then
    echo "usage: $0 BUILDDIR" >&2
    exit 2
fi
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" 2>/dev/null && pwd) || { echo "run-all.sh: no build directory $1" >&2; exit 2; }
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
asan_dir=${ND_ASAN_BUILD:-${build%/}-asan}
tsan_dir=${ND_TSAN_BUILD:-${build%/}-tsan}
debug_dir=${ND_DEBUG_BUILD:-${build%/}-debug}
fuzz_dir=${ND_FUZZ_BUILD:-${build%/}-fuzz}
logs=$build/run-all-logs
mkdir -p "$logs"
start_all=$(date +%s)

# One row per tier: name|passed|failed|skipped|seconds|note; a note may hold
# several items separated by ASCII unit separators (one line each).
summary=()
any_failed=0
US=$'\037'

# count_ctest LOG -> "passed failed skipped" from ctest's progress lines.
count_ctest() {
    awk '
        / Test +#[0-9]+: / {
            if ($0 ~ /\*\*\*Skipped/)      s++
            else if ($0 ~ / Passed /)      p++
            else                           f++   # Failed, Timeout, Not Run, Exception
        }
        END { printf "%d %d %d\n", p, f, s }' "$1"
}

# skip_reasons CONSOLE_LOG TEST_LOG -> one "test: reason" line per skipped
# test: the first line starting "SKIP" in its output (ctest keeps the output
# of every test in Testing/Temporary/LastTest.log, even of skipped ones).
skip_reasons() {
    local name
    sed -n 's/.* Test *#[0-9]*: \([^ ]*\) .*\*\*\*Skipped.*/\1/p' "$1" | while read -r name; do
        awk -v n="$name" '
            $0 ~ /^[0-9]+\/[0-9]+ Testing: / { cur = $3 }
            cur == n && /^SKIP/ && !done { sub(/^SKIP:? */, ""); sub(/^[A-Za-z0-9_.=-]+: /, ""); print n ": " $0; done = 1 }
            END { if (!done) print n ": exit status 77 (no reason printed)" }' "$2"
    done
}

# run_ctest TIER DIR LABEL_ARGS... : one ctest run, recorded as a summary row.
# The row's time starts at $tier_t0 when set (a build before the run).
run_ctest() {
    local tier=$1 dir=$2
    shift 2
    local log=$logs/${tier//\//-}.log t0=${tier_t0:-$(date +%s)}
    if [ "$(cd "$dir" && ctest -N "$@" 2>/dev/null | sed -n 's/^Total Tests: //p')" = "0" ]; then
        [ "$tier" = host/unlabeled ] || summary+=("$tier|0|0|0|0|no tests with this label")
        return
    fi
    echo "== $tier: ctest $* (log: $log)"
    (cd "$dir" && ctest -j "$jobs" --output-on-failure "$@") >"$log" 2>&1
    local rc=$?
    read -r p f s < <(count_ctest "$log")
    local note=""
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1
        note="ctest exited $rc"
    fi
    if [ "$s" -gt 0 ]; then
        local reasons
        reasons=$(skip_reasons "$log" "$dir/Testing/Temporary/LastTest.log")
        cp "$dir/Testing/Temporary/LastTest.log" "${log%.log}-tests.log" 2>/dev/null
        note="${note:+$note$US}$(printf '%s' "$reasons" | sed 's/^/skipped /' | tr '\n' "$US")"
    fi
    [ "$f" -gt 0 ] && any_failed=1
    summary+=("$tier|$p|$f|$s|$(($(date +%s) - t0))|$note")
    grep -E '\*\*\*(Failed|Timeout|Not Run|Exception)|\*\*\*Skipped' "$log" | sed 's/^/   /'
    grep -E '^(FAIL|SKIP) ' "$log" | sed 's/^/   /' | head -40
    if [ "$f" -gt 0 ]; then failed_output "$log" "$dir/Testing/Temporary/LastTest.log"; fi
}

# failed_output CONSOLE_LOG TEST_LOG: the last lines each failed test printed
# (a sanitizer's report, an abort message, a seed), so that a run whose logs
# are gone (CI keeps only this console) still says why a test failed.
failed_output() {
    local name
    sed -n 's/.* Test *#[0-9]*: \([^ ]*\) .*\*\*\*\(Failed\|Timeout\|Exception\|Not Run\).*/\1/p' "$1" | head -5 |
    while read -r name; do
        echo "   -- output of $name (last 40 lines):"
        awk -v n="$name" '
            $0 ~ /^[0-9]+\/[0-9]+ Testing: / { cur = $3; out = 0; next }
            cur == n && /^Output:$/ { out = 1; getline; next }
            cur == n && out && /^<end of output>$/ { out = 0 }
            cur == n && out { print }' "$2" | tail -40 | sed 's/^/   | /'
    done
}

# ---- 1. host tiers --------------------------------------------------------
for label in lint unit api stress preload placement cpp install cross fuzz; do
    run_ctest "host/$label" "$build" -L "^$label\$"
done
run_ctest "host/unlabeled" "$build" -LE '^(lint|unit|api|stress|preload|placement|cpp|install|cross|fuzz)$'

# ---- 2, 3. sanitizer builds ----------------------------------------------
# build_tier NAME DIR TARGET T0 [CMAKE ARGS...] : configures DIR (no
# benchmarks) and builds TARGET, its log in $logs/NAME-build.log; on a
# failure the row says so and it returns 1.
build_tier() {
    local name=$1 dir=$2 target=$3 t0=$4 log=$logs/$1-build.log
    shift 4
    echo "== $name: configure and build $dir (log: $log)"
    if ! { cmake -S "$src" -B "$dir" -DNODAL_BENCH=OFF "$@" \
           && cmake --build "$dir" -j "$jobs" --target "$target"; } >"$log" 2>&1; then
        tail -20 "$log" | sed 's/^/   /'
        summary+=("$name|0|1|0|$(($(date +%s) - t0))|configure or build failed, see $log")
        any_failed=1
        return 1
    fi
}
san_tier() {
    local name=$1 kind=$2 dir=$3 t0=$(date +%s)
    build_tier "$name" "$dir" nd_san_tests "$t0" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNODAL_SANITIZE="$kind" || return
    tier_t0=$t0 run_ctest "$name" "$dir" -L '^(api|stress|cpp)$'
}
if [ "${ND_SKIP_SAN:-0}" = 1 ]; then
    summary+=("asan|0|0|1|0|left out (ND_SKIP_SAN=1)")
    summary+=("tsan|0|0|1|0|left out (ND_SKIP_SAN=1)")
else
    san_tier asan address "$asan_dir"
    san_tier tsan thread "$tsan_dir"
    unset tier_t0
fi

# ---- 4. the debug build: the hand-over fuzzer and the stress tier ------------
# The library with ND_DEBUG=2 (-DNODAL_DEBUG=ON): a broken invariant aborts
# where it breaks. Only the programs these labels run are built.
debug_tier() {
    local t0=$(date +%s)
    build_tier debug "$debug_dir" nd_debug_tests "$t0" -DCMAKE_BUILD_TYPE=Release -DNODAL_DEBUG=ON || return
    # Not rss_peak.c's cases: a 512 MiB peak under every invariant check
    # takes minutes (more than their 900 s on a loaded machine), and
    # resident memory is not what the checks add.
    tier_t0=$t0 run_ctest "debug" "$debug_dir" -L '^(debug|stress)$' -E 'rss_falls_back_after_peak'
    unset tier_t0
}
if [ "${ND_SKIP_DEBUG:-0}" = 1 ]; then
    summary+=("debug|0|0|1|0|left out (ND_SKIP_DEBUG=1)")
else
    debug_tier
fi

# ---- 5. the fuzz build: libFuzzer runs ---------------------------------------
fuzz_tier() {
    local t0=$(date +%s) cc=${ND_FUZZ_CC:-}
    if [ -z "$cc" ]; then
        cc=$(command -v clang-14 || command -v clang || true)
    fi
    local probe=$logs/fuzz-probe
    if [ -z "$cc" ] || ! printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' \
            | "$cc" -fsanitize=fuzzer,address -x c - -o "$probe" >/dev/null 2>&1; then
        summary+=("fuzz|0|0|1|0|clang with libFuzzer not installed (apt-get install clang-14 libclang-rt-14-dev)")
        return
    fi
    rm -f "$probe"
    local cxx=${cc/clang/clang++}
    echo "== fuzz: compilers $cc, $cxx"
    build_tier fuzz "$fuzz_dir" nd_fuzz_tests "$t0" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DNODAL_FUZZ=ON -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
        -DND_FUZZ_SECONDS="${ND_FUZZ_SECONDS:-30}" || return
    run_ctest "fuzz" "$fuzz_dir" -L '^fuzz$'
}
if [ "${ND_SKIP_FUZZ:-0}" = 1 ]; then
    summary+=("fuzz|0|0|1|0|left out (ND_SKIP_FUZZ=1)")
else
    fuzz_tier
fi


# ---- 6. the VM tier: the tool's self-test, then the placement tier ------------
# vm_row TIER LOG RC T0 PASSED FAILED SKIPPED : one row; exit 77 is a skip
# whose reason is the log's last line starting SKIP.
vm_row() {
    local tier=$1 log=$2 rc=$3 t0=$4 p=${5:-0} f=${6:-0} s=${7:-0} note=""
    if [ "$rc" -eq 77 ]; then
        s=$((s > 0 ? s : 1))
        note=$(grep '^SKIP' "$log" | tail -n 1 | sed 's/^SKIP:* *//')
    elif [ "$rc" -ne 0 ]; then
        [ "$f" -eq 0 ] && f=1
        note="exit status $rc, see $log"
    fi
    if [ "$rc" -ne 77 ] && [ "$s" -gt 0 ]; then
        # run-vm.sh's summary: "SKIP name secs s [boot]  why"
        note="${note:+$note$US}$(grep -E '^SKIP ' "$log" | sed -E 's/^SKIP +([^ ]+) +[^[]*\[[^]]*\] */skipped \1: /' |
            tr '\n' "$US")"
    fi
    [ "$f" -gt 0 ] && any_failed=1
    summary+=("$tier|$p|$f|$s|$(($(date +%s) - t0))|$note")
}
if [ "${ND_SKIP_VM:-0}" = 1 ]; then
    summary+=("vm|0|0|1|0|left out (ND_SKIP_VM=1)")
else
    log=$logs/vm-numa-vm.log
    t0=$(date +%s)
    echo "== vm/numa-vm: tools/numa-vm/selftest.sh (log: $log)"
    "$src/tools/numa-vm/selftest.sh" >"$log" 2>&1
    rc=$?
    grep -E '^[^ ].* FAIL \(' "$log" | sed 's/^/   /'
    p=$(sed -n 's/^passed \([0-9]*\), failed [0-9]*$/\1/p' "$log")
    f=$(sed -n 's/^passed [0-9]*, failed \([0-9]*\)$/\1/p' "$log")
    vm_row vm/numa-vm "$log" "$rc" "$t0" "$p" "$f" 0

    log=$logs/vm-placement.log
    t0=$(date +%s)
    echo "== vm/placement: tests/placement/run-vm.sh $build (log: $log)"
    sh "$src/tests/placement/run-vm.sh" "$build" >"$log" 2>&1
    rc=$?
    line=$(grep -E '^== [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$log" | tail -1)
    p=$(echo "$line" | sed -n 's/^== \([0-9]*\) passed.*/\1/p')
    f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
    s=$(echo "$line" | sed -n 's/.* \([0-9]*\) skipped.*/\1/p')
    grep -E '^FAIL' "$log" | sed 's/^/   /'
    vm_row vm/placement "$log" "$rc" "$t0" "$p" "$f" "$s"
fi

# ---- summary ----------------------------------------------------------------
echo
echo "== nodal test summary ($(($(date +%s) - start_all)) s in all)"
printf '%-16s %7s %7s %8s %7s  %s\n' tier passed failed skipped seconds note
tp=0 tf=0 ts=0
for row in "${summary[@]}"; do
    IFS='|' read -r tier p f s secs note <<<"$row"
    first=${note%%"$US"*}
    printf '%-16s %7d %7d %8d %7d  %s\n' "$tier" "$p" "$f" "$s" "$secs" "$first"
    rest=${note#"$first"}
    while [ -n "$rest" ]; do
        rest=${rest#"$US"}
        item=${rest%%"$US"*}
        rest=${rest#"$item"}
        [ -n "$item" ] && printf '%-16s %7s %7s %8s %7s  %s\n' "" "" "" "" "" "$item"
    done
    tp=$((tp + p)) tf=$((tf + f)) ts=$((ts + s))
done
printf '%-16s %7d %7d %8d\n' total "$tp" "$tf" "$ts"
if [ "$any_failed" -ne 0 ]; then
    echo "== FAILED (logs in $logs)"
    exit 1
fi
if [ "$ts" -gt 0 ]; then
    echo "== no failures; $ts skipped (not passes: see the notes and logs)"
else
    echo "== all passed"
fi
exit 0
