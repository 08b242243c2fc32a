#!/bin/sh
# instr_bounds.sh LIBNODAL INSTR_PAIRS - instructions per allocate/free pair
# (of 32 B, or an aligned 4 KiB below), one thread, under callgrind
# (LD_PRELOAD=LIBNODAL): the count at
# N = 600,000 pairs minus the count at N = 200,000, divided by 400,000, so
# start-up, warm-up and exit cancel out. Each case has a bound a little
# above what the library takes (docs/hardening.md, tenth and eleventh
# steps, issue 23's twelfth, h51l's shorter free fast path, and h58a's:
# the nd_segcache word as its compare's operand), under what it took
# before the step that set it. Stop 69 raised them by 1-3: h58a's bins
# read and written by asms (the tick's decrement and free's step of cur in
# memory) saved 3 instructions a pair and took the pair of 32 B from 3.5
# to 8 ns on stop 69's Intel Xeon (tcache.h, docs/results.md "Stop 69"); plain C
# takes 68.3 and 3.5 ns:
#   malloc/free, default            <= 69   (68.3; 65.3 with h58a's
#                                            asms; before: 70.3; 74.4
#                                            before h51l: the page's
#                                            limit and the bin's low
#                                            loaded apart from their
#                                            compares, two register copies,
#                                            the segment by copy and mask)
#   malloc/free, secure=1           <= 86   (85.4; 84.4 with h58a's
#                                            asms; before: 86.4; 89.4
#                                            before h51l; 95.3 before
#                                            issue 23's twelfth step; 101.3
#                                            before the eleventh, 109.3
#                                            before the tenth)
#   new/sized delete, default       <= 73   (72.4; 70.3 with h58a's
#                                            asms; before: 74.4; 78.3
#                                            before h51l; 88.4 with the
#                                            derived deletes in the cold
#                                            section, with a stack frame)
#   new/sized delete, secure=1      <= 90   (89.4; 88.4 with h58a's
#                                            asms; before: 90.4; 94.5
#                                            before h51l; 99.3 before
#                                            issue 23's twelfth step, 105.4
#                                            before the eleventh, 122.4
#                                            before the tenth)
# and a block of 4 KiB at an alignment of 4 KiB (an I/O buffer) and free:
#   posix_memalign, default         <= 103  (101.4; 126.4 before stop 71,
#                                            when every such request went
#                                            through the slow path that
#                                            keeps errno)
#   aligned_alloc, default          <= 89   (87.4)
# Counts are x86-64's (gcc): skipped elsewhere, and without valgrind.
# Exit: 0 pass, 1 fail, 77 skip.
set -u
lib=${1:?usage: instr_bounds.sh LIBNODAL INSTR_PAIRS}
prog=${2:?usage: instr_bounds.sh LIBNODAL INSTR_PAIRS}
skip() { echo "SKIP preload.instr_bounds: $*" >&2; exit 77; }
[ -f "$lib" ] || { echo "FAIL: expected the library $lib to exist"; exit 1; }
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")   # LD_PRELOAD takes a bare name from the search path
command -v valgrind >/dev/null 2>&1 || skip "valgrind is not installed"
[ "$(uname -m)" = x86_64 ] || skip "the bounds are x86-64 instruction counts"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nodal-instr.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# total MODE N OPTIONS: callgrind's instruction count of one run.
total() {
    NODAL_OPTIONS=$3 LD_PRELOAD=$lib valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" \
        "$prog" "$1" "$2" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; return 1; }
    awk '/^(summary|totals):/ { print $2; exit }' "$tmp/cg"
}

status=0
# check MODE OPTIONS BOUND
check() {
    a=$(total "$1" 200000 "$2") && b=$(total "$1" 600000 "$2") || { echo "FAIL: $1 [$2] did not run"; status=1; return; }
    per=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", (b - a) / 400000 }')
    if awk -v p="$per" -v m="$3" 'BEGIN { exit !(p <= m) }'; then
        echo "ok: $1 [${2:-default}] $per instructions per pair (bound $3)"
    else
        echo "FAIL: expected $1 [${2:-default}] at most $3 instructions per pair, got $per"
        status=1
    fi
}
check malloc "" 69
check malloc secure=1 86
check new "" 73
check new secure=1 90
check posix_memalign "" 103
check aligned_alloc "" 89
exit $status
