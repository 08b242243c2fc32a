#!/bin/sh
# hardening-levels.sh - what each hardening level costs, in one session: the
# README's hardening table (its instruction and CPU rows) and docs/hardening.md,
# "Each level in one session".
#
#   bench/hardening-levels.sh [BUILD [REPS]]      (defaults: build, 5)
#
# For the default (check=1), check=2, secure=1 and secure=2 of one library,
# BUILD/libnodal.so: callgrind instructions per malloc/free pair of 32 B
# (bench/instr-per-op.sh), then seven rows run under the four levels
# interleaved (bench/ab.py REPS), and per level the geometric mean and range
# of its CPU time over the default's. Needs valgrind and the bench programs
# (cmake --build BUILD --target bench_programs). About 3 minutes at load 7.
set -eu
build=${1:-build}
reps=${2:-5}
lib=$build/libnodal.so
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp "${TMPDIR:-/tmp}/levels.XXXXXX")
trap 'rm -f "$out"' EXIT

echo "instructions per malloc/free pair of 32 B (callgrind):"
for o in check=1 check=2 secure=1 secure=2; do
    printf '  %-9s %s\n' "$o" "$(MICRO=$build/bench/micro "$here/instr-per-op.sh" "$lib" pair 32 "$o")"
done

for row in "micro -m pair -s 32 -t 1 -n 20000000" "micro -m batch -s 256 -t 2 -n 5000000" \
           "cxxnew -m pair -a new -s 32 -t 1 -n 10000000" "larson -t 2 -r 50000 -R 20" \
           "xthread -s 64 -p 1 -n 2000000" "mstress -t 2 -n 2000000" "shortlived -t 8 -n 2000000"; do
    echo "=== $row  (load $(cut -d' ' -f1 /proc/loadavg))"
    # shellcheck disable=SC2086 # the row is words on purpose
    "$here/ab.py" "$reps" d="$lib" c2="$lib:check=2" s1="$lib:secure=1" s2="$lib:secure=2" \
        -- "$build/bench/"$row
done | tee "$out"

# ab.py's CPU lines: "NAME  cpu 0.123 s [...] x1.16 ..."; the x is against d.
echo "CPU time against the default, geometric mean [range] over the rows:"
awk '$2 == "cpu" && $1 != "d" {
         x = $0; sub(/.*\] x/, "", x); sub(/ .*/, "", x); x += 0
         n[$1]++; s[$1] += log(x)
         if (!($1 in lo) || x < lo[$1]) lo[$1] = x
         if (!($1 in hi) || x > hi[$1]) hi[$1] = x }
     END { split("c2 check=2 s1 secure=1 s2 secure=2", k, " ")
           for (i = 1; i <= 6; i += 2)
               if (n[k[i]]) printf "  %-9s x%.2f [%.2f-%.2f] over %d rows\n", k[i + 1],
                                   exp(s[k[i]] / n[k[i]]), lo[k[i]], hi[k[i]], n[k[i]] }' "$out"
