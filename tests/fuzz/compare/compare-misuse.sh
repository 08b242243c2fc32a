#!/usr/bin/env bash
# compare-misuse.sh - what each malloc does with the same heap misuse and
# corruption cases (misuse_peer.c): glibc's, jemalloc, mimalloc,
# tcmalloc-minimal under LD_PRELOAD, and nodal (default, check=2, secure=1,
# secure=2).
#
#   tests/fuzz/compare/compare-misuse.sh [BUILDDIR]     (default: build)
#
# Prints a Markdown table (one row per case, one column per allocator) and
# then the first stderr line each allocator printed, per case. Cell codes:
#   abort      SIGABRT after a message on stderr   (caught)
#   abort*     SIGABRT without a message
#   crash      SIGSEGV / SIGBUS                     (stopped, not diagnosed)
#   hang       still running after 10 s
#   DUP        no complaint; malloc later handed out one block twice
#   EXPLOITED  no complaint; malloc returned the address the test wrote
#   silent     no complaint, nothing visible
#   n/a        the case could not set itself up under this allocator
# Peers that are not installed are left out. Nothing here is timed.
set -u
src=$(cd "$(dirname "$0")/../../.." && pwd)
build=$(cd "${1:-$src/build}" && pwd) || exit 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prog=$work/misuse_peer
cc -O1 -g -fno-builtin -pthread -o "$prog" "$src/tests/fuzz/compare/misuse_peer.c" || exit 2

lib=/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
# name|LD_PRELOAD|NODAL_OPTIONS
allocs=("glibc||")
[ -f "$lib/libjemalloc.so.2" ] && allocs+=("jemalloc|$lib/libjemalloc.so.2|")
[ -f "$lib/libmimalloc.so.2" ] && allocs+=("mimalloc|$lib/libmimalloc.so.2|")
[ -f "$lib/libtcmalloc_minimal.so.4" ] && allocs+=("tcmalloc|$lib/libtcmalloc_minimal.so.4|")
[ -n "${ND_MIMALLOC_SECURE:-}" ] && allocs+=("mimalloc-secure|$ND_MIMALLOC_SECURE|")
allocs+=("nodal|$build/libnodal.so|" "nodal check=2|$build/libnodal.so|check=2"
         "nodal secure=1|$build/libnodal.so|secure=1" "nodal secure=2|$build/libnodal.so|secure=2")

classify() {   # status stdout-file stderr-file
    local st=$1 out=$2 err=$3
    if [ "$st" -eq 124 ]; then echo hang; return; fi
    if [ "$st" -gt 128 ]; then
        case $((st - 128)) in
            6) if grep -qv '^$' "$err"; then echo abort; else echo 'abort*'; fi ;;
            11|7) echo crash ;;
            *) echo "signal $((st - 128))" ;;
        esac
        return
    fi
    if [ "$st" -eq 3 ]; then awk '{print $1; exit}' "$out"; return; fi
    if [ "$st" -eq 4 ]; then echo n/a; return; fi
    if [ "$st" -eq 0 ]; then echo silent; return; fi
    echo "exit $st"
}

header="| case |"
rule="| --- |"
for a in "${allocs[@]}"; do
    header+=" ${a%%|*} |"
    rule+=" --- |"
done
echo "$header"
echo "$rule"
notes=()
for c in $("$prog" --list); do
    row="| $c |"
    for a in "${allocs[@]}"; do
        IFS='|' read -r name pre opts <<<"$a"
        # Through sh, which reports a death by signal as status 128+N
        # without bash's "Aborted" job notices.
        env -u NODAL_OPTIONS ${opts:+NODAL_OPTIONS=$opts} ${pre:+LD_PRELOAD=$pre} \
            sh -c 'ulimit -c 0; timeout -s KILL 10 "$0" "$1"; exit $?' "$prog" "$c" \
            >"$work/out" 2>"$work/err"
        st=$?
        [ "$st" -eq 137 ] && st=124
        # sh's own notice of the death is not the allocator's message.
        grep -Ev '^(Aborted|Segmentation fault|Bus error|Killed)( \(core dumped\))?$' "$work/err" \
            >"$work/err2"
        mv "$work/err2" "$work/err"
        cell=$(classify "$st" "$work/out" "$work/err")
        row+=" $cell |"
        msg=$(grep -v '^$' "$work/err" | grep -v "unknown option 'secure'" | head -1 | cut -c1-110)
        [ -n "$msg" ] && notes+=("$c, $name: $msg")
    done
    echo "$row"
done
echo
echo "Messages (first stderr line):"
for n in "${notes[@]}"; do
    echo "- $n"
done
