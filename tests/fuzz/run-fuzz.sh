#!/bin/sh
# run-fuzz.sh - one bounded libFuzzer run of nodal's fuzz target.
#
#   run-fuzz.sh FUZZER WORKDIR SECONDS NODAL_OPTIONS [CORPUS_DIR...]
#
# FUZZER is build-fuzz/tests/fuzz/fuzz_nodal. New inputs go to
# WORKDIR/corpus (the committed corpus directories are only read), crashes
# and hangs to WORKDIR/artifacts/. NODAL_OPTIONS may be "" (defaults).
# Extra libFuzzer flags: $ND_FUZZ_FLAGS (e.g. "-seed=1234 -jobs=2").
#
# Exit: 0 no failure; 1 the fuzzer found a failure (the input is named, with
# the command that replays it); 77 when the fuzzer cannot start at all.
set -u
if [ $# -lt 4 ]; then
    echo "usage: $0 FUZZER WORKDIR SECONDS NODAL_OPTIONS [CORPUS_DIR...]" >&2
    exit 2
fi
fuzzer=$1 work=$2 seconds=$3 options=$4
shift 4
[ -x "$fuzzer" ] || { echo "SKIP: no fuzzer at $fuzzer"; exit 77; }
mkdir -p "$work/corpus" "$work/artifacts" || exit 2
rm -f "$work"/artifacts/*

corpora=""
for d in "$@"; do
    [ -d "$d" ] && corpora="$corpora $d"
done

if [ -n "$options" ]; then
    NODAL_OPTIONS=$options
    export NODAL_OPTIONS
else
    unset NODAL_OPTIONS
fi
# Leaks are not libFuzzer's business here: nodal's memory is not the
# system malloc's, and the harness frees every block itself.
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:allocator_may_return_null=1}
UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export ASAN_OPTIONS UBSAN_OPTIONS

echo "== $fuzzer for $seconds s, NODAL_OPTIONS=\"$options\", corpus $work/corpus$corpora"
# -error_exitcode: libFuzzer's default (77) would read as "skipped" to ctest.
# shellcheck disable=SC2086
"$fuzzer" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 -max_len=4096 \
    -error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1 -len_control=20 \
    -artifact_prefix="$work/artifacts/" ${ND_FUZZ_FLAGS:-} \
    "$work/corpus" $corpora >"$work/fuzz.log" 2>&1
rc=$?
grep -E '^(INFO: Seed|#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb|stat::new_units_added)' \
    "$work/fuzz.log"
found=$(ls "$work"/artifacts/ 2>/dev/null | head -1)
if [ "$rc" -ne 0 ] || [ -n "$found" ]; then
    echo "FAIL: the fuzzer found a failure (exit $rc); its report:"
    grep -E 'fuzz_ops:|^nodal:|ERROR: (libFuzzer|AddressSanitizer|UndefinedBehaviorSanitizer)|runtime error|SUMMARY' \
        "$work/fuzz.log" | head -20
    if [ -n "$found" ]; then
        echo "input: $work/artifacts/$found"
        echo "replay: NODAL_OPTIONS=\"$options\" ND_FUZZ_TRACE=1 $fuzzer $work/artifacts/$found"
    fi
    echo "full log: $work/fuzz.log"
    tail -40 "$work/fuzz.log"
    exit 1
fi
echo "no failure found"
exit 0
