#!/bin/sh
# nodal_run.sh - nodal-run's contract: flags are checked against the option
# table before the program starts, with the library's own messages;
# --profile and --stats-every report on a running program; and
# nodal-verify's answer to a mistyped flag.
#
#   nodal_run.sh BUILDDIR CASE
#
# Each CASE is one property (the ctest name is api.nodal_run.CASE); the
# program run under nodal-run leaves a marker file, so "did not start" is
# checked, not assumed.
set -u
build=$1
case_name=$2
run=$build/tools/nodal-run
lib=$build/libnodal.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
marker=$tmp/started

fail() { echo "FAIL $case_name: expected $*" >&2; exit 1; }

# nodal_run ARGS...: runs nodal-run in a clean option environment; sets rc,
# out, err.
nodal_run() {
    env -u NODAL_OPTIONS -u NODAL_STATS -u NODAL_STATS_FILE -u NODAL_VERBOSE \
        -u NODAL_TCACHE_MAX -u NODAL_PURGE_DELAY "$run" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
}
# the program: leaves a marker, prints its NODAL_* environment
prog="sh -c 'touch $marker; env | grep ^NODAL_ | sort'"

expect_refused() {   # expect_refused WHAT PIECE... (after nodal_run)
    what=$1
    shift
    [ "$rc" -eq 2 ] || fail "$what to exit with status 2, got $rc (stderr: $err)"
    [ ! -e "$marker" ] || fail "$what not to start the program"
    n=$(printf '%s\n' "$err" | grep -c '^nodal-run: ')
    [ "$n" -ge 1 ] || fail "$what to print an error line starting 'nodal-run: ', got: $err"
    for piece in "$@"; do
        printf '%s' "$err" | grep -qF -- "$piece" || fail "$what to say \"$piece\", got: $err"
    done
}

case $case_name in
unknown_option_flag_names_the_closest_option_and_exits_2)
    nodal_run --tcache-cnt=5 -- sh -c "touch $marker"
    expect_refused "--tcache-cnt=5" "unknown option 'tcache_cnt' (from --tcache-cnt)" \
        "did you mean tcache_count?"
    nodal_run --purge-dealy=0 -- sh -c "touch $marker"
    expect_refused "--purge-dealy=0" "did you mean purge_delay?"
    ;;
invalid_value_flag_names_the_valid_values_and_exits_2)
    nodal_run --tcache-max=1g -- sh -c "touch $marker"
    expect_refused "--tcache-max=1g" "invalid value '1g' for tcache_max (from --tcache-max)" \
        "valid: 0..128k"
    nodal_run --stats=xml -- sh -c "touch $marker"
    expect_refused "--stats=xml" "valid: off, text, json"
    nodal_run --node-fallback=loose -- sh -c "touch $marker"
    expect_refused "--node-fallback=loose" "valid: strict, preferred"
    nodal_run --stats-file=/tmp/x.%d -- sh -c "touch $marker"
    expect_refused "--stats-file=/tmp/x.%d" "for stats_file" "%p"
    nodal_run --tcache-max -- sh -c "touch $marker"
    expect_refused "--tcache-max without a value" "needs a value"
    ;;
messages_are_the_librarys_own)
    # The same bad setting in NODAL_OPTIONS: nodal-run refuses it with the
    # words the library warns with (minus the library's "using the default").
    for setting in tcache_max=1g node_fallback=loose tcache-count=256 stats=xml; do
        lib_line=$(env -u NODAL_STATS NODAL_OPTIONS=$setting LD_PRELOAD=$lib true 2>&1 |
            sed -n 's/^nodal: //p' | sed 's/; using the default [^;]*$//; s/ is ignored;/;/')
        run_line=$(env -u NODAL_STATS NODAL_OPTIONS=$setting "$run" -- true 2>&1 |
            sed -n '1s/^nodal-run: //p')
        [ -n "$lib_line" ] || fail "the library to warn about NODAL_OPTIONS=$setting"
        [ "$lib_line" = "$run_line" ] ||
            fail "nodal-run to refuse NODAL_OPTIONS=$setting in the library's words: library \"$lib_line\", nodal-run \"$run_line\""
    done
    ;;
short_flag_is_a_usage_error_not_an_exec_error)
    nodal_run -v sh -c "touch $marker"
    expect_refused "-v" "unknown flag '-v'" "--verbose" "usage: nodal-run"
    printf '%s' "$err" | grep -q "exec" && fail "no 'exec' error for -v, got: $err"
    ;;
no_program_is_an_error)
    nodal_run
    [ "$rc" -eq 2 ] || fail "exit status 2 without a program, got $rc"
    printf '%s' "$err" | grep -q '^nodal-run: no program given' ||
        fail "'nodal-run: no program given', got: $err"
    nodal_run --stats=json
    [ "$rc" -eq 2 ] || fail "exit status 2 with flags but no program, got $rc"
    ;;
version_names_version_and_library)
    nodal_run --version
    [ "$rc" -eq 0 ] || fail "--version to exit 0, got $rc"
    printf '%s' "$out" | grep -q '^nodal-run [0-9][0-9.]*$' || fail "'nodal-run X.Y.Z', got: $out"
    printf '%s' "$out" | grep -q "^library: .*libnodal.so" || fail "'library: .../libnodal.so...', got: $out"
    ;;
version_with_lib_names_that_library)
    mkdir -p "$tmp/other"
    cp "$lib" "$tmp/other/libnodal.so.0"
    for order in "--version --lib=$tmp/other/libnodal.so.0" "--lib=$tmp/other/libnodal.so.0 --version"; do
        nodal_run $order
        [ "$rc" -eq 0 ] || fail "nodal-run $order to exit 0, got $rc: $err"
        printf '%s' "$out" | grep -qx "library: $tmp/other/libnodal.so.0" ||
            fail "nodal-run $order to name the library --lib gives, got: $out"
    done
    nodal_run --version --lib="$tmp/none.so"
    [ "$rc" -eq 2 ] || fail "--version with a missing --lib library to exit 2, got $rc"
    printf '%s' "$out" | grep -q "^library: $tmp/none.so: No such file" ||
        fail "--version to say the --lib library is missing, got: $out"
    ;;
statically_linked_program_runs_and_is_said_to_get_no_report)
    printf 'int main(void) { return 0; }\n' >"$tmp/static.c"
    ${CC:-cc} -static -o "$tmp/static" "$tmp/static.c" 2>/dev/null ||
        { echo "SKIP: no static C library to link a static program with"; exit 77; }
    nodal_run -- "$tmp/static"
    [ "$rc" -eq 0 ] || fail "the static program to run, exit $rc: $err"
    printf '%s' "$err" | grep -q "^nodal-run: '$tmp/static' is statically linked: .*no report" ||
        fail "a line saying the program is statically linked and gets no report, got: $err"
    nodal_run -- true
    printf '%s' "$err" | grep -q "statically" && fail "no such line for a dynamic program, got: $err"
    [ "$rc" -eq 0 ] || fail "true to run"
    ;;
stats_summary_prints_one_line_per_process)
    nodal_run --stats=summary -- sh -c "ls / >/dev/null; ls / >/dev/null; touch $marker"
    [ "$rc" -eq 0 ] && [ -e "$marker" ] || fail "the program to run, exit $rc: $err"
    n=$(printf '%s\n' "$err" | grep -c '^nodal: pid=[0-9]* program=[^ ]* requests=[0-9]')
    [ "$n" -ge 2 ] || fail "a summary line from each ls, got: $err"
    other=$(printf '%s\n' "$err" | grep -v '^nodal: pid=[0-9]* program=[^ ]* requests=[0-9]')
    [ -z "$other" ] || fail "nothing but summary lines, also got: $other"
    ;;
verify_mistyped_flag_is_one_line_and_a_suggestion)
    verify=$build/tools/nodal-verify
    "$verify" --quik >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ "$rc" -eq 2 ] || fail "nodal-verify --quik to exit 2, got $rc"
    [ "$(wc -l <"$tmp/err")" -eq 2 ] || fail "two lines (the error, the synopsis), got: $(cat "$tmp/err")"
    grep -q "^nodal-verify: unknown flag '--quik'; did you mean --quick?" "$tmp/err" ||
        fail "the error to suggest --quick, got: $(cat "$tmp/err")"
    "$verify" --threads=1,2 >"$tmp/out" 2>"$tmp/err"
    grep -q "give the value after a space: --threads 1,2" "$tmp/err" ||
        fail "--threads=1,2 to be told the value goes after a space, got: $(cat "$tmp/err")"
    ;;
flags_reach_the_program_and_win_over_the_environment)
    NODAL_OPTIONS=purge_delay=5,verbose "$run" --purge-delay=7 --stats-file="$tmp/s.%p" --no-huge-pages \
        -- sh -c "touch $marker; env | grep ^NODAL_ | sort" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ "$rc" -eq 0 ] || fail "the program to run, exit $rc: $(cat "$tmp/err")"
    grep -qx "NODAL_PURGE_DELAY=7" "$tmp/out" || fail "NODAL_PURGE_DELAY=7 in the program's environment, got: $(cat "$tmp/out")"
    grep -qx "NODAL_STATS_FILE=$tmp/s.%p" "$tmp/out" || fail "NODAL_STATS_FILE in the program's environment"
    grep -qx "NODAL_HUGE_PAGES=off" "$tmp/out" || fail "NODAL_HUGE_PAGES=off in the program's environment"
    grep -qx "NODAL_OPTIONS=purge_delay=5,verbose" "$tmp/out" || fail "NODAL_OPTIONS kept as it was"
    grep -q "option purge_delay = 7 (from NODAL_PURGE_DELAY)" "$tmp/err" ||
        fail "the library to take purge_delay=7 from the flag, got: $(cat "$tmp/err")"
    grep -q "option stats_file = $tmp/s.%p (from NODAL_STATS_FILE)" "$tmp/err" ||
        fail "the library to take stats_file from --stats-file"
    grep -q "option stats = text (from NODAL_STATS)" "$tmp/err" ||
        fail "statistics on by default (stats = text), got: $(cat "$tmp/err")"
    ;;
environment_is_checked_before_the_program_starts)
    NODAL_OPTIONS=tcache_max=1g "$run" -- sh -c "touch $marker" >"$tmp/out" 2>"$tmp/err"
    rc=$? err=$(cat "$tmp/err")
    expect_refused "NODAL_OPTIONS=tcache_max=1g" "(from NODAL_OPTIONS)" "valid: 0..128k"
    NODAL_PURGE_DELAY=soon "$run" -- sh -c "touch $marker" >"$tmp/out" 2>"$tmp/err"
    rc=$? err=$(cat "$tmp/err")
    expect_refused "NODAL_PURGE_DELAY=soon" "(from NODAL_PURGE_DELAY)"
    ;;
missing_program_exits_127)
    nodal_run -- "$tmp/no-such-program"
    [ "$rc" -eq 127 ] || fail "exit status 127 for a missing program, got $rc"
    printf '%s' "$err" | grep -q "^nodal-run: cannot run '$tmp/no-such-program'" ||
        fail "'cannot run ...', got: $err"
    ;;
list_options_lists_every_option)
    nodal_run --list-options
    [ "$rc" -eq 0 ] || fail "--list-options to exit 0"
    for name in $("$build/tools/gen-options" md | sed -n 's/^| `\([a-z_]*\)`.*/\1/p'); do
        printf '%s\n' "$out" | grep -q "^$name " || fail "--list-options to list $name"
    done
    ;;
profile_and_stats_every_report_a_running_program)
    # --profile and --stats-every on a program that runs until it has seen
    # both reports of its own while running (or 40 s): its statistics line
    # (--stats-every 1) on its standard error, and a numbered profile dump
    # (prof_interval=1) under the prefix; and nodal-run says where the
    # profile goes. (Not the exit dump: dash leaves by _exit, which runs no
    # destructor; preload.heap_profile_* checks that one.) No timing is asserted:
    # the program waits for the reports, however late the machine's load
    # makes them. (The program is sh; grep, ls and sleep, which it starts,
    # get nodal too, and write exit dumps of their own, by their pid.)
    d=$tmp/prof
    mkdir "$d"
    cat >"$tmp/prog.sh" <<EOF
i=0
while [ \$i -lt 400 ]; do
    if grep -q "pid=\$\$ .*requests=" "$tmp/err" && [ -s "$d/p.\$\$.0.heap" ]; then
        echo \$\$ >"$tmp/pid"
        exit 0
    fi
    sleep 0.1
    i=\$((i + 1))
done
exit 1
EOF
    NODAL_PROF_PREFIX="$d/p.%p" NODAL_PROF_INTERVAL=1 nodal_run --profile=4k --stats-every 1 -- sh "$tmp/prog.sh"
    [ "$rc" -eq 0 ] || fail "the program to see its statistics line and its first interval dump within 40 s (rc $rc; stderr: $(head -c 2000 "$tmp/err"))"
    pid=$(cat "$tmp/pid")
    printf '%s\n' "$err" | grep -qF "nodal-run: the heap profile goes to $d/p.$pid.exit.heap" ||
        fail "nodal-run to say where the profile goes ($d/p.$pid.exit.heap), got: $err"
    head -n 1 "$d/p.$pid.0.heap" | grep -q '^heap profile:' ||
        fail "the interval dump in the heap-profile format, got: $(head -n 1 "$d/p.$pid.0.heap")"
    ;;
*)
    echo "nodal_run.sh: no case $case_name" >&2
    exit 2
    ;;
esac
echo "PASS $case_name"
