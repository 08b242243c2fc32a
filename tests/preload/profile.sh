#!/bin/sh
# profile.sh LIBNODAL PROF_SITES [NODE_A NODE_B] - the heap profile, end to
# end: with prof=1, prof_sites' three sites get their shares of the live
# bytes (60/30/10 %) within 5 points, on the nodes asked for when two are
# given; its leak is reported at its site at exit; google-pprof reads the
# .heap dump and finds the same sites; a fork, thread churn and a signal
# whose handler allocates neither deadlock nor lose the dumps (nodal_profile_dump,
# the signal's dump, the exit files of parent and child). On x86-64 most
# stacks come from the memo of stacks, not the unwinder, and the unwinder
# is nodal's own (no libgcc_s) unless prof_libgcc=1. prof_growth's dumps
# follow the live estimate's growth.
set -u
lib=$1 prog=$2
node_a=${3:-} node_b=${4:-}
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cd "$dir" || exit 1
NODAL_PROF=1 NODAL_PROF_RATE=32k NODAL_PROF_PREFIX="$dir/p.%p" LD_PRELOAD=$lib \
    "$prog" sites "$dir/dump" $node_a $node_b 2>"$dir/err" || fail "prof_sites sites failed: $(cat "$dir/err")"
[ -s dump.heap ] && [ -s dump.txt ] || fail "nodal_profile_dump wrote no dump.heap / dump.txt"

# Shares of the live bytes, from the text report's site lines.
site_line() {   # site_line FILE SITE: the report's line of the stack with SITE in its first 3 frames
    awk -v f="$2" '/^#[0-9]+ live_bytes=/ { line = $0; k = 0; next }
                   /^        / { k++; if (k <= 3 && line != "" && $1 ~ ("^" f "\\+")) { print line; line = "" } }' "$1" | head -1
}
share() { site_line dump.txt "$1" | sed -n 's/.*share=\([0-9.]*\)%.*/\1/p'; }
a=$(share site_a) b=$(share site_b) c=$(share site_c) leak=$(share site_leak)
echo "shares: site_a=$a site_b=$b site_c=$c site_leak=$leak (want 60/30/10 of the sites' bytes, leak ~2.9)"
for x in "$a" "$b" "$c"; do [ -n "$x" ] || fail "a site is missing from dump.txt: $(head -30 dump.txt)"; done

# The estimate is unbiased: over 16 runs (this one and 15 more), the
# sites' live bytes estimated add up to their shares within 5 standard
# deviations, and their sum to the bytes they hold (41,376,000 a run) within
# 5. Each request is sampled with p = 1 - exp(-its class's size / 32 KiB),
# its estimate size / p (sd of the sum: sqrt(sum of size^2 (1 - p) / p),
# 0.98 MB a run, 2.4 %; 0.59 % over 16; the shares' 1.16 / 1.09 / 0.71
# points a run, 0.29 / 0.27 / 0.18 over 16): the bounds are 1.5, 1.4 and
# 0.9 points and 3 %. Site_a 7 % short (main f8e5289: a borrow moved
# samples, docs/results.md, h56p) is 4.2 % off the sum (7 sd: it fails 98
# times in 100) and 1.75 points off its share. A single run's 5-point
# bound was 2 sd from main's mean: it failed 1 run in 10-16, and passed
# most biased runs.
site_bytes() { site_line "$1" "$2" | sed -n 's/.* live_bytes=\([0-9]*\) .*/\1/p'; }   # its live_bytes
pool=""
for run in $(seq 16); do
    if [ "$run" -eq 1 ]; then
        f=dump.txt
    else
        NODAL_PROF=1 NODAL_PROF_RATE=32k NODAL_PROF_PREFIX="$dir/m.%p" LD_PRELOAD=$lib \
            "$prog" sites "$dir/more" $node_a $node_b 2>"$dir/more.err" || fail "prof_sites sites (run $run) failed: $(cat "$dir/more.err")"
        f=more.txt
    fi
    ra=$(site_bytes $f site_a) rb=$(site_bytes $f site_b) rc=$(site_bytes $f site_c)
    [ -n "$ra" ] && [ -n "$rb" ] && [ -n "$rc" ] || fail "run $run: a site is missing from its dump: $(head -30 $f)"
    pool="$pool $ra $rb $rc"
done
echo "$pool" | awk '{ for (i = 1; i <= NF; i += 3) { a += $i; b += $(i + 1); c += $(i + 2); n++ }
    t = a + b + c; want = n * 41376000
    ea = 100*a/t - 60; eb = 100*b/t - 30; ec = 100*c/t - 10; et = 100*(t - want)/want
    printf "%d runs: shares site_a=%.2f site_b=%.2f site_c=%.2f (want 60/30/10 within 1.5/1.4/0.9), sum %.2f %% off (within 3)\n",
           n, 100*a/t, 100*b/t, 100*c/t, et
    exit !(ea >= -1.5 && ea <= 1.5 && eb >= -1.4 && eb <= 1.4 && ec >= -0.9 && ec <= 0.9 && et >= -3 && et <= 3) }' >pool.out ||
    fail "biased over 16 runs: $(cat pool.out)"
cat pool.out

# x86-64: the memo of stacks recognises most stacks (prof.c): the sites
# repeat, so the unwinder walks few of them. The header counts both.
samples=$(sed -n '1s/.* samples=\([0-9]*\).*/\1/p' dump.txt) unwound=$(sed -n '1s/.* unwound=\([0-9]*\).*/\1/p' dump.txt)
echo "samples=$samples unwound=$unwound"
[ -n "$samples" ] && [ -n "$unwound" ] && [ "$unwound" -le "$samples" ] || fail "no samples= unwound= in the header: $(head -1 dump.txt)"
if [ "$(uname -m)" = x86_64 ]; then
    [ "$unwound" -le $((samples / 10)) ] || fail "the unwinder walked $unwound of $samples stacks (want at most a tenth)"
fi

# x86-64 with glibc 2.35+: nodal reads the unwind tables itself and never
# loads libgcc_s (prof_libgcc=1 does); the shares are the same either way.
if [ "$(uname -m)" = x86_64 ] && ldd --version 2>&1 | head -1 | awk '{ split($NF, v, "."); exit !(v[1] > 2 || (v[1] == 2 && v[2] >= 35)) }'; then
    NODAL_PROF=1 LD_PRELOAD=$lib cat /proc/self/maps >maps.own || fail "cat under prof=1 failed"
    NODAL_PROF=1 NODAL_PROF_LIBGCC=1 LD_PRELOAD=$lib cat /proc/self/maps >maps.libgcc || fail "cat under prof_libgcc=1 failed"
    ! grep -q libgcc_s maps.own || fail "prof=1 loaded libgcc_s: $(grep libgcc_s maps.own | head -1)"
    grep -q libgcc_s maps.libgcc || fail "prof_libgcc=1 did not load libgcc_s (is the check blind?)"
    mv dump.txt dump.own.txt
    NODAL_PROF=1 NODAL_PROF_LIBGCC=1 NODAL_PROF_RATE=32k NODAL_PROF_PREFIX="$dir/g.%p" LD_PRELOAD=$lib \
        "$prog" sites "$dir/dump" $node_a $node_b 2>"$dir/err" || fail "prof_sites sites under prof_libgcc=1 failed: $(cat "$dir/err")"
    ga=$(share site_a) gb=$(share site_b) gc=$(share site_c)
    echo "prof_libgcc=1 shares: site_a=$ga site_b=$gb site_c=$gc"
    awk -v a="$ga" -v b="$gb" -v c="$gc" 'BEGIN { t = a + b + c; if (t == 0) exit 1
        if (100*a/t < 55 || 100*a/t > 65 || 100*b/t < 25 || 100*b/t > 35 || 100*c/t < 5 || 100*c/t > 15) exit 1 }' ||
        fail "prof_libgcc=1: shares off by more than 5 points: a=$ga b=$gb c=$gc"
    mv dump.own.txt dump.txt
fi

if [ -n "$node_a" ]; then
    # site_a's bytes all on node_a, site_b's all on node_b.
    line_a=$(grep -A3 '^#' dump.txt | grep -B3 '^        site_a+' | grep '^#' | head -1)
    line_b=$(grep -A3 '^#' dump.txt | grep -B3 '^        site_b+' | grep '^#' | head -1)
    echo "$line_a" | grep -Eq " node$node_b=0( |$)" || fail "site_a has bytes off node $node_a: $line_a"
    echo "$line_b" | grep -Eq " node$node_a=0( |$)" || fail "site_b has bytes off node $node_b: $line_b"
    echo "$line_a" | grep -Eq " node$node_a=[1-9]" || fail "site_a has no bytes on node $node_a: $line_a"
    echo "$line_b" | grep -Eq " node$node_b=[1-9]" || fail "site_b has no bytes on node $node_b: $line_b"
    echo "node split: site_a on node $node_a, site_b on node $node_b"
fi

# The leak report at exit names site_leak, and only it (the rest was freed).
grep -q '^nodal: leaks: 1 site' err || fail "the leak report does not count one leaking site: $(cat err)"
grep -A3 '^nodal: leak #1' err | grep -q 'site_leak+' || fail "the leak is not reported at site_leak: $(cat err)"
ls p.*.exit.heap p.*.exit.txt >/dev/null 2>&1 || fail "no exit files p.PID.exit.*"

# The viewer parses the dump.
if command -v google-pprof >/dev/null 2>&1; then
    google-pprof --text "$prog" dump.heap >pprof.out 2>pprof.err || fail "google-pprof failed: $(cat pprof.err)"
    for f in site_a site_b site_c; do
        grep -q " $f\$" pprof.out || fail "google-pprof does not show $f: $(cat pprof.out)"
    done
    echo "google-pprof: $(grep -c . pprof.out) lines, the three sites found"
else
    echo "google-pprof not installed (Debian: google-perftools): its check not run"
    pprof_missing=1
fi

# Fork, thread churn, a signal in malloc; the API's and the signal's dumps.
rm -f p.*
NODAL_PROF=1 NODAL_PROF_RATE=1k NODAL_PROF_SIGNAL=12 NODAL_PROF_PREFIX="$dir/p.%p" LD_PRELOAD=$lib \
    timeout 120 "$prog" safety >out 2>err || fail "prof_sites safety failed (status $?): $(tail -5 err)"
grep -q 'safety: done' out || fail "safety did not finish"
n_exit=$(ls p.*.exit.heap 2>/dev/null | wc -l)
[ "$n_exit" -ge 5 ] || fail "want the exit profiles of the parent and its 4 children (and timeout's), found $n_exit"
ls p.*.0.heap >/dev/null 2>&1 || fail "nodal_profile_dump(NULL) wrote no p.PID.0.heap"
ls p.*.1.heap >/dev/null 2>&1 || fail "the signal (prof_signal=12) wrote no p.PID.1.heap"
echo "safety: fork, thread churn, signals in malloc: done; dumps: $(ls p.* | wc -l) files"

# prof_growth: a dump each time the live estimate grew by 1 MiB since the
# last dump; the program grows by 4 MiB, takes the same bytes again, then
# grows by 4 MiB more, and waits for dumps 0 and 1, each marked "(growth)".
rm -f p.*
NODAL_PROF=1 NODAL_PROF_RATE=4k NODAL_PROF_GROWTH=1m NODAL_PROF_PREFIX="$dir/p.%p" LD_PRELOAD=$lib \
    timeout 120 "$prog" growth "$dir" >out 2>err || fail "prof_sites growth failed (status $?): $(tail -5 err)"
grep -q 'growth: done' out || fail "growth did not finish"
n_growth=$(cat p.*.[0-9]*.txt 2>/dev/null | grep -c '^nodal heap profile (growth)')
[ "$n_growth" -ge 2 ] || fail "want two growth dumps, found $n_growth"
echo "prof_growth: $n_growth growth dumps"
[ -z "${pprof_missing:-}" ] || exit 77
exit 0
