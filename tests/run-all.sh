#!/usr/bin/env bash
# run-all.sh - every test tier of nodal, with one summary at the end.
#
#   tests/run-all.sh BUILDDIR        (what `make check` runs)
#
#   1. host    ctest in BUILDDIR, one run per label: unit, api, stress,
#              install,
#              preload, placement (its host form), then any unlabeled test
#   2. asan    configure + build BUILDDIR-asan with -DNODAL_SANITIZE=address
#              (tests call nodal_* names, linked against nodal_prefix_san),
#              ctest -L 'api|stress'
#   3. tsan    the same in BUILDDIR-tsan with -DNODAL_SANITIZE=thread
#   4. fuzz    configure + build BUILDDIR-fuzz with clang and -DNODAL_FUZZ=ON
#              (the core with libFuzzer coverage, ASan and UBSan), ctest -L fuzz:
#              one bounded libFuzzer run per option set, two at a time
#              (skipped when clang's libFuzzer is not installed)
#   5. vm      tests/placement/run-vm.sh BUILDDIR, if that script exists
#              (multi-node NUMA inside a VM; exit 77 = not available)
#
# Exit status: 0 if nothing failed (skips are listed, never counted as
# passes), 1 otherwise. Logs: BUILDDIR/run-all-logs/.
#
# Environment: JOBS (parallel tests/builds, default nproc), ND_SKIP_SAN=1
# (leave out tiers 2 and 3), ND_SKIP_FUZZ=1 (leave out tier 4), ND_SKIP_VM=1
# (leave out tier 5), ND_ASAN_BUILD / ND_TSAN_BUILD / ND_FUZZ_BUILD (their
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
fuzz_dir=${ND_FUZZ_BUILD:-${build%/}-fuzz}
logs=$build/run-all-logs
mkdir -p "$logs"
start_all=$(date +%s)

# One row per tier: name|passed|failed|skipped|seconds|note
summary=()
any_failed=0

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

# run_ctest TIER DIR LABEL_ARGS... : one ctest run, recorded as a summary row.
run_ctest() {
    local tier=$1 dir=$2
    shift 2
    local log=$logs/${tier//\//-}.log t0=$(date +%s)
    if [ "$(cd "$dir" && ctest -N "$@" 2>/dev/null | sed -n 's/^Total Tests: //p')" = "0" ]; then
        summary+=("$tier|0|0|0|0|no tests with this label")
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
    [ "$f" -gt 0 ] && any_failed=1
    summary+=("$tier|$p|$f|$s|$(($(date +%s) - t0))|$note")
    grep -E '\*\*\*(Failed|Timeout|Not Run|Exception)|\*\*\*Skipped' "$log" | sed 's/^/   /'
    grep -E '^(FAIL|SKIP) ' "$log" | sed 's/^/   /' | head -40
}

# ---- 1. host tiers --------------------------------------------------------
for label in unit api stress preload placement install cross fuzz; do
    run_ctest "host/$label" "$build" -L "^$label\$"
done
run_ctest "host/unlabeled" "$build" -LE '^(unit|api|stress|preload|placement|install|cross|fuzz)$'

# ---- 2, 3. sanitizer builds ----------------------------------------------
san_tier() {
    local name=$1 kind=$2 dir=$3 t0=$(date +%s)
    local log=$logs/$name-build.log
    echo "== $name: configure and build $dir (log: $log)"
    if ! { cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNODAL_SANITIZE="$kind" \
                 -DNODAL_BENCH=OFF \
           && cmake --build "$dir" -j "$jobs" --target nd_san_tests; } >"$log" 2>&1; then
        tail -20 "$log" | sed 's/^/   /'
        summary+=("$name|0|1|0|$(($(date +%s) - t0))|configure or build failed, see $log")
        any_failed=1
        return
    fi
    run_ctest "$name" "$dir" -L '^(api|stress)$'
}
if [ "${ND_SKIP_SAN:-0}" = 1 ]; then
    summary+=("asan|0|0|1|0|left out (ND_SKIP_SAN=1)")
    summary+=("tsan|0|0|1|0|left out (ND_SKIP_SAN=1)")
else
    san_tier asan address "$asan_dir"
    san_tier tsan thread "$tsan_dir"
fi

# ---- 4. the fuzz build: libFuzzer runs ---------------------------------------
fuzz_tier() {
    local t0=$(date +%s) log=$logs/fuzz-build.log cc=${ND_FUZZ_CC:-}
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
    echo "== fuzz: configure and build $fuzz_dir with $cc (log: $log)"
    if ! { cmake -S "$src" -B "$fuzz_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNODAL_FUZZ=ON \
                 -DNODAL_BENCH=OFF -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
                 -DND_FUZZ_SECONDS="${ND_FUZZ_SECONDS:-30}" \
           && cmake --build "$fuzz_dir" -j "$jobs" --target nd_fuzz_tests; } >"$log" 2>&1; then
        tail -20 "$log" | sed 's/^/   /'
        summary+=("fuzz|0|1|0|$(($(date +%s) - t0))|configure or build failed, see $log")
        any_failed=1
        return
    fi
    run_ctest "fuzz" "$fuzz_dir" -L '^fuzz$'
}
if [ "${ND_SKIP_FUZZ:-0}" = 1 ]; then
    summary+=("fuzz|0|0|1|0|left out (ND_SKIP_FUZZ=1)")
else
    fuzz_tier
fi

# ---- 5. the VM tier (tests/placement owns it) -----------------------------
vm=$src/tests/placement/run-vm.sh
if [ "${ND_SKIP_VM:-0}" = 1 ]; then
    summary+=("vm|0|0|1|0|left out (ND_SKIP_VM=1)")
elif [ -f "$vm" ]; then
    log=$logs/vm.log
    t0=$(date +%s)
    echo "== vm: $vm $build (log: $log)"
    sh "$vm" "$build" >"$log" 2>&1
    rc=$?
    line=$(grep -E '^== [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$log" | tail -1)
    p=$(echo "$line" | sed -n 's/^== \([0-9]*\) passed.*/\1/p')
    f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
    s=$(echo "$line" | sed -n 's/.* \([0-9]*\) skipped.*/\1/p')
    p=${p:-0} f=${f:-0} s=${s:-0}
    note=""
    if [ "$rc" -eq 77 ]; then
        s=$((s > 0 ? s : 1))
        note="VM not available: $(grep -m1 '^SKIP' "$log")"
    elif [ "$rc" -ne 0 ]; then
        [ "$f" -eq 0 ] && f=1
        note="run-vm.sh exited $rc"
    fi
    [ "$f" -gt 0 ] && any_failed=1
    grep -E '^FAIL' "$log" | sed 's/^/   /'
    summary+=("vm|$p|$f|$s|$(($(date +%s) - t0))|$note")
else
    summary+=("vm|0|0|0|0|tests/placement/run-vm.sh not present")
fi

# ---- summary ----------------------------------------------------------------
echo
echo "== nodal test summary ($(($(date +%s) - start_all)) s in all)"
printf '%-16s %7s %7s %8s %7s  %s\n' tier passed failed skipped seconds note
tp=0 tf=0 ts=0
for row in "${summary[@]}"; do
    IFS='|' read -r tier p f s secs note <<<"$row"
    printf '%-16s %7d %7d %8d %7d  %s\n' "$tier" "$p" "$f" "$s" "$secs" "$note"
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
