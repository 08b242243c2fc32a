#!/bin/sh
# instr-per-op.sh - instructions per operation of a nodal fast path, by
# callgrind (the counts repeat on a busy machine, timings do not).
#
#   bench/instr-per-op.sh LIB MODE SIZE [NODAL_OPTIONS]
#       build/bench/micro -m MODE -s SIZE -t 1 under LD_PRELOAD=LIB
#       (MODE: pair, batch, ...; see micro's usage)
#   bench/instr-per-op.sh --node BUILD SIZE [NODAL_OPTIONS]
#       the node-targeted cycle: BUILD/bench/nodepair -b nodal -s SIZE -t 1
#       under LD_PRELOAD=BUILD/libnodal.so (its memset included)
#
# The options the program runs with: NODAL_OPTIONS from the environment
# (`NODAL_OPTIONS=purge_delay=1000000 bench/instr-per-op.sh --node build 32`)
# followed by the NODAL_OPTIONS argument, a later option winning. (Before,
# the argument replaced the environment's, and --node ran with none: a
# prefix was silently dropped.)
#
# Runs the program twice, with 200,000 and 600,000 operations after 20,000
# warm-up ones, and prints (Ir(600k) - Ir(200k)) / 400,000: start-up, exit
# and warm-up cancel out. MICRO overrides the micro binary's path; ALIGN
# sets micro's -a (mode aligned: aligned_alloc(ALIGN, SIZE), 64 by default).
set -eu
if [ "${1:-}" = "--node" ]; then
    [ $# -eq 3 ] || [ $# -eq 4 ] || { echo "usage: $0 --node BUILD SIZE [NODAL_OPTIONS]" >&2; exit 2; }
    lib=$2/libnodal.so; opts=${4:-}
    prog="$2/bench/nodepair -b nodal -s $3 -t 1 -w 20000 -n"
else
    [ $# -ge 3 ] || { echo "usage: $0 LIB MODE SIZE [NODAL_OPTIONS] | --node BUILD SIZE [NODAL_OPTIONS]" >&2; exit 2; }
    lib=$1; opts=${4:-}
    prog="${MICRO:-build/bench/micro} -m $2 -s $3 ${ALIGN:+-a $ALIGN} -t 1 -w 20000 -n"
fi
opts=${NODAL_OPTIONS:-}${NODAL_OPTIONS:+${opts:+,}}$opts
ir() {
    out=$(mktemp "${TMPDIR:-/tmp}/instr.XXXXXX")
    LD_PRELOAD=$lib NODAL_OPTIONS=$opts valgrind --tool=callgrind --callgrind-out-file="$out" \
        --soname-synonyms=somalloc=nouserintercepts $prog "$1" >/dev/null 2>&1
    sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out"
    rm -f "$out"
}
a=$(ir 200000)
b=$(ir 600000)
[ -n "$a" ] && [ -n "$b" ] || { echo "$0: callgrind gave no count" >&2; exit 1; }
awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f\n", (b - a) / 400000 }'
