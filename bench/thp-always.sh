#!/bin/sh
# thp-always.sh NEW BASE OUT [REPS]: the thread-handoff rows with the
# kernel's transparent huge pages in mode "always" (as Debian's and Red
# Hat's kernels default to), nodal against another nodal build and the
# Debian peers, interleaved (bench/ab.py). Needs root: the host's
# /sys/kernel/mm/transparent_hugepage/enabled is set to "always" for the
# run and put back after it.
#   NEW, BASE: libnodal.so files; OUT: the report; REPS: 5 by default.
set -u
[ $# -ge 3 ] || { echo "usage: $0 NEW_LIB BASE_LIB OUT [REPS]" >&2; exit 2; }
NEW=$1; BASE=$2; OUT=$3; R=${4:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "$HERE/../build/bench" && pwd)
THP=/sys/kernel/mm/transparent_hugepage/enabled
old=$(sed -n 's/.*\[\(.*\)\].*/\1/p' "$THP")
echo always > "$THP" || { echo "$0: cannot set $THP (root?)" >&2; exit 1; }
trap 'echo "$old" > "$THP"' EXIT INT TERM
ab() {
    echo "=== $*" >>"$OUT"
    python3 "$HERE/ab.py" "$R" new="$NEW" base="$BASE" tc=tc mi=mi je=je glibc=glibc -- "$@" 2>&1 |
        grep -E '^(new|base|tc|mi|je|glibc) +cpu' >>"$OUT"
}
: >"$OUT"
for t in 2 8; do ab "$B/shortlived" -t $t -n 2000000; done
for t in 2 8; do ab "$B/mstress" -t $t -n 2000000; done
for t in 2 8; do ab "$B/larson" -t $t -r 50000 -R 20; done
for t in 2 8; do ab "$B/rptest" -t $t -n 4000; done
for w in 2 8; do ab "$B/batchq" -w $w -n 4000000; done
ab "$B/mthread" -t 8 -n 5000000
