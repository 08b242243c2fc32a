#!/bin/sh
# preload-run.sh - runs a real program twice, on the system malloc and under
# LD_PRELOAD=libnodal.so with NODAL_OPTIONS=stats=1, and checks that
#   1. the nodal run exits 0 and prints what the system-malloc run printed;
#   2. nodal served it: stderr has a line starting "nodal: " whose requests=
#      count is non-zero (the summary stats=1 prints at exit).
#
# usage: preload-run.sh LIBNODAL CASE [ARG]
#   CASE python            python3 tests/preload/workload.py, PYTHONMALLOC=malloc
#   CASE sort              coreutils sort of 50 MB of generated lines
#   CASE stl PROGRAM       the C++ STL program built from stl_workload.cpp
# Exit: 0 pass, 1 fail, 77 skip (a tool is missing).
set -u

lib=${1:?usage: preload-run.sh LIBNODAL CASE [ARG]}
what=${2:?usage: preload-run.sh LIBNODAL CASE [ARG]}
arg=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nodal-preload.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

fail() { echo "FAIL preload.$what: expected $*" >&2; exit 1; }
skip() { echo "SKIP preload.$what: $*" >&2; exit 77; }

[ -f "$lib" ] || fail "the library $lib to exist"
unset NODAL_OPTIONS

# run NAME CMD... : runs CMD with its stdout in $tmp/NAME.out, stderr in
# $tmp/NAME.err; under nodal when NAME is "nodal".
run() {
    name=$1; shift
    if [ "$name" = nodal ]; then
        env LD_PRELOAD="$lib" NODAL_OPTIONS=stats=1 "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    else
        "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    fi
}

case $what in
python)
    command -v python3 >/dev/null 2>&1 || skip "python3 is not installed"
    export PYTHONMALLOC=malloc PYTHONHASHSEED=0
    set -- python3 "$here/workload.py"
    ;;
sort)
    command -v sort >/dev/null 2>&1 || skip "sort is not installed"
    command -v python3 >/dev/null 2>&1 || skip "python3 (to generate the input) is not installed"
    # 50 MB of lines of varied length, the same every run.
    python3 - "$tmp/input" <<'PY' || fail "the 50 MB input to be generated"
import random, sys
rng = random.Random(2024)
alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "
chunk = []
size = 0
with open(sys.argv[1], "w") as f:
    while size < 50 * 1000 * 1000:
        n = rng.choice((3, 10, 30, 60, 120, 400))
        line = "".join(rng.choices(alphabet, k=n))
        chunk.append(line)
        size += n + 1
        if len(chunk) >= 10000:
            f.write("\n".join(chunk) + "\n")
            chunk = []
    f.write("\n".join(chunk) + "\n")
PY
    export LC_ALL=C
    set -- sort --parallel=2 -S 200M "$tmp/input"
    ;;
stl)
    [ -x "$arg" ] || fail "the STL program ($arg) to be built"
    set -- "$arg"
    ;;
*)
    echo "preload-run.sh: unknown case $what" >&2
    exit 2
    ;;
esac

run plain "$@" || fail "the program to succeed on the system malloc (status $?): $(head -c 600 "$tmp/plain.err")"
run nodal "$@"
status=$?
[ $status -eq 0 ] || fail "the program to exit 0 under LD_PRELOAD=$lib, it exited $status; stderr: $(head -c 1500 "$tmp/nodal.err")"

if ! cmp -s "$tmp/plain.out" "$tmp/nodal.out"; then
    fail "the same output under nodal as on the system malloc; first difference: $(cmp "$tmp/plain.out" "$tmp/nodal.out" 2>&1 | head -1)"
fi
[ -s "$tmp/nodal.out" ] || fail "the program to print something"

stats=$(grep '^nodal: ' "$tmp/nodal.err" | head -1)
[ -n "$stats" ] || fail "a statistics line starting with \"nodal: \" on stderr with NODAL_OPTIONS=stats=1 (proof that nodal served the program); stderr was: $(head -c 800 "$tmp/nodal.err")"
requests=$(printf '%s\n' "$stats" | sed -n 's/.*[ ]requests=\([0-9][0-9]*\).*/\1/p')
[ -n "$requests" ] || fail "the statistics line to have requests=N, got: $stats"
[ "$requests" -gt 0 ] || fail "requests= to be non-zero, got: $stats"
lines=$(grep -c '^nodal: ' "$tmp/nodal.err")
echo "preload.$what: output matches the system-malloc run; $lines statistics line(s), first: $stats"
exit 0
