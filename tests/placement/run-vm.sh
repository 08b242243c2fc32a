#!/bin/sh
# run-vm.sh - run the NUMA placement tier inside numa-vm (a real multi-node
# Linux under qemu) and print one PASS/FAIL/SKIP line per test.
#
#   tests/placement/run-vm.sh BUILDDIR [TEST...]
#
# BUILDDIR is a CMake build directory with the placement tests built
# (BUILDDIR/tests/placement/*, and the C++ ones in BUILDDIR/tests/cpp/) and,
# if present, BUILDDIR/tools/nodal-verify.
# TEST names (as in the plan below) select a subset.
#
# Three boots:
#   main   default numa-vm topology: nodes 0,1 with 2 CPUs and 512 MiB each,
#          nodes 2,3 memory-only with 512 MiB; transparent huge pages
#          "always" and automatic NUMA balancing on, as the kernel defaults
#          are (nodal's guarantees must hold there), but off while a
#          program checks where plain pages sit after their first touch
#          (the plan's balancing column, below);
#   small  the same with node 3 at 96 MiB, for filling a node;
#   hmat   numa-vm --hmat: 6 nodes, the firmware gives latency and bandwidth
#          (nodes 2, 3 high-bandwidth and 96 MiB, 4, 5 large and slow), for
#          the memory tiers and filling the bandwidth tier.
#
# Exit status: 0 every test passed or skipped, 1 a test failed or had no
# result (crash, timeout, VM stopped), 77 no VM can be prepared on this
# machine (the reason is on the line starting SKIP).
#
# Environment: NUMA_VM (path of the numa-vm tool; default: the repository's
# tools/numa-vm/numa-vm), NUMA_VM_ARGS (extra arguments for every boot, e.g.
# "--accel tcg").
set -u

usage() {
    echo "usage: $0 BUILDDIR [TEST...]" >&2
    exit 2
}
[ $# -ge 1 ] || usage
[ -d "$1" ] || { echo "run-vm.sh: no build directory $1" >&2; exit 2; }
BUILD=$(cd "$1" && pwd)
shift
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

# The plan: boot | name | program (relative to BUILDDIR) | NODAL_OPTIONS | arguments | timeout (s)
#           [| balancing [| other files the program needs (relative to BUILDDIR, space-separated)]]
# balancing: empty, the boot's automatic NUMA balancing (on); "off", the
# guest's kernel.numa_balancing is 0 while the test runs (restored after).
# A test that checks on which node plain (default-policy) pages sit after
# their first touch runs with it off: the balancer migrates such pages
# toward the CPUs that touch them later (a remote free writes its link into
# the block, a page's first block is read by other threads), so where they
# sit then is the kernel's choice, not nodal's (tests/placement/README.md,
# "Automatic NUMA balancing"). Tests of node-bound memory keep it on: bound
# pages must never move, balancing or not.
PLAN='main|topology_matches_kernel|tests/placement/topology_matches_kernel|||60
main|invalid_node_is_einval|tests/placement/invalid_node_is_einval|||60
main|node_of_reports_home_node|tests/placement/node_of_reports_home_node|||120
main|node_blocks_stay_on_node|tests/placement/node_blocks_stay_on_node|||180
main|node_blocks_stay_on_node[huge_pages=1]|tests/placement/node_blocks_stay_on_node|huge_pages=1|--expect-option huge_pages=1|180
main|realloc_keeps_node|tests/placement/realloc_keeps_node|||180
main|interleaved_pages_on_listed_nodes|tests/placement/interleaved_pages_on_listed_nodes|||120
main|plain_malloc_stays_unbound|tests/placement/plain_malloc_stays_unbound||--expect-balancing 0|120|off
main|plain_malloc_stays_unbound[balancing]|tests/placement/plain_malloc_stays_unbound||--expect-balancing 1 --no-first-touch-check|120
main|node_cache_never_mixes_nodes|tests/placement/node_cache_never_mixes_nodes|||180
main|node_cache_never_mixes_nodes[huge_pages=1]|tests/placement/node_cache_never_mixes_nodes|huge_pages=1|--expect-option huge_pages=1|180
main|cross_thread_frees_keep_node|tests/placement/cross_thread_frees_keep_node|||300
main|plain_frees_go_home_to_their_node|tests/placement/plain_frees_go_home_to_their_node||--expect-balancing 0|240|off
main|plain_frees_go_home_to_their_node[balancing]|tests/placement/plain_frees_go_home_to_their_node||--expect-balancing 1 --no-first-touch-check|240
main|thread_churn_keeps_rss_bounded|tests/placement/thread_churn_keeps_rss_bounded||-r 80 -w 30|240
main|nodal-verify|tools/nodal-verify||--quick|240
main|stl_containers_stay_on_their_node|tests/cpp/stl_containers_stay_on_their_node|||240
main|node_typed_objects_stay_on_their_node|tests/cpp/node_typed_objects_stay_on_their_node|||240
main|shared_containers_keep_their_node|tests/cpp/shared_containers_keep_their_node|||240
main|tier_blocks_on_the_kernels_node[no-hmat]|tests/placement/tier_blocks_on_the_kernels_node||--expect-hmat 0|240
main|heap_profile_splits_nodes|tests/placement/heap_profile_splits_nodes|prof=1,prof_rate=16k||180
main|matrix_covers_every_node_pair|tests/placement/matrix_covers_every_node_pair|||180||tools/nodal-verify
main|plain_memory_follows_thread|tests/placement/plain_memory_follows_thread||--case=exit_then_new,not_moved,moved,freed_by_other|300
main|plain_memory_follows_thread[back_and_forth]|tests/placement/plain_memory_follows_thread||--case=back_and_forth|240
main|plain_memory_follows_thread[secure=1]|tests/placement/plain_memory_follows_thread|secure=1|--case=secure_checks_after_move|120
main|plain_memory_follows_thread[follow_thread=0]|tests/placement/plain_memory_follows_thread|follow_thread=0|--expect-option follow_thread=0|300
main|plain_memory_follows_thread[membind]|tests/placement/plain_memory_follows_thread||--policy=membind|240
main|plain_memory_follows_thread[interleave]|tests/placement/plain_memory_follows_thread||--policy=interleave|240
main|plain_memory_follows_thread[preferred]|tests/placement/plain_memory_follows_thread||--policy=preferred|240
small|full_node_strict_or_preferred|tests/placement/full_node_strict_or_preferred|||240
small|node_full_throws_bad_alloc|tests/cpp/node_full_throws_bad_alloc|||240
hmat|tier_blocks_on_the_kernels_node|tests/placement/tier_blocks_on_the_kernels_node||--expect-hmat 1|240
hmat|tier_full_strict_or_preferred|tests/placement/tier_full_strict_or_preferred|||240
hmat|nodal-verify[HMAT]|tools/nodal-verify||--quick --no-timing --no-placement|240'

# numa-vm arguments and time limit (s) of each boot.
boot_setup() {
    case $1 in
    main) bargs="" btmo=570 ;;
    small) bargs="--mem-per-node 512,512,256,96" btmo=300 ;;
    hmat) bargs="--hmat --nodes 6 --mem-per-node 512,512,96,96,1024,1024" btmo=400 ;;
    esac
}

# ---- find numa-vm and check that it can prepare a VM here ------------------------
NUMA_VM=${NUMA_VM:-$ROOT/tools/numa-vm/numa-vm}
if [ ! -x "$NUMA_VM" ]; then
    echo "SKIP placement tier: $NUMA_VM is not an executable file (NUMA_VM names another)"
    exit 77
fi
# --dry-run installs what is missing (as root) and fetches the kernel, but
# boots nothing; 2 = packages missing and not root, 125 = cannot prepare.
pre=$("$NUMA_VM" --dry-run -- true 2>&1 >/dev/null)
prc=$?
if [ "$prc" -ne 0 ]; then
    echo "$pre"
    why=$(echo "$pre" | grep -v '^  ' | grep -v 'qemu command' | tail -n 1 | sed 's/^numa-vm: //')
    if [ "$prc" -eq 2 ] || [ "$prc" -eq 125 ]; then
        echo "SKIP placement tier: numa-vm cannot prepare a VM here: ${why:-exit status $prc}"
        exit 77
    fi
    echo "FAIL placement tier: numa-vm --dry-run exited $prc"
    exit 1
fi

selected() {   # selected NAME: is NAME in the command line's list (or no list)?
    [ -z "$WANT" ] && return 0
    for w in $WANT; do
        [ "$w" = "$1" ] && return 0
    done
    return 1
}
WANT="$*"
for w in $WANT; do
    echo "$PLAN" | cut -d'|' -f2 | grep -qxF "$w" ||
        { echo "run-vm.sh: no test named $w in the plan" >&2; exit 2; }
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/nodal-placement-vm.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT INT TERM
RESULTS=$TMP/results      # name|status|rc|seconds|boot
: >"$RESULTS"
START=$(date +%s)

# ---- one boot ----------------------------------------------------------------
# Writes the guest script for the selected tests of boot $1, runs it, and
# records a result for every planned test (no result line = FAIL).
run_boot() {
    boot=$1
    guest=$TMP/guest-$boot.sh
    adds=""
    cat >"$guest" <<'EOF'
#!/bin/sh
echo "@@ guest: kernel $(uname -r), THP $(cat /sys/kernel/mm/transparent_hugepage/enabled), numa_balancing $(cat /proc/sys/kernel/numa_balancing 2>/dev/null)"
# The balancer's counters, to tell its migrations from nodal's placement.
numa_counters() {
    awk '$1 == "numa_hint_faults" || $1 == "numa_pages_migrated" || $1 == "numa_pte_updates" { printf "%s ", $2 }' /proc/vmstat
}
nb_saved=$(cat /proc/sys/kernel/numa_balancing 2>/dev/null || echo -)
EOF
    echo "$PLAN" | while IFS='|' read -r b name prog opts args tmo bal extra; do
        [ "$b" = "$boot" ] || continue
        selected "$name" || continue
        echo "$name|$prog|$opts|$args|$tmo|$bal|$extra"
    done >"$TMP/plan-$boot"
    [ -s "$TMP/plan-$boot" ] || return 0
    while IFS='|' read -r name prog opts args tmo bal extra; do
        [ -x "$BUILD/$prog" ] || continue
        adds="$adds --add $BUILD/$prog"
        for f in $extra; do
            [ -e "$BUILD/$f" ] && adds="$adds --add $BUILD/$f"
        done
        if [ -n "$opts" ]; then
            envcmd="env NODAL_OPTIONS=$opts"
        else
            envcmd="env -u NODAL_OPTIONS"
        fi
        case $bal in
        off) balset='[ "$nb_saved" = - ] || echo 0 >/proc/sys/kernel/numa_balancing'
             balrestore='[ "$nb_saved" = - ] || echo "$nb_saved" >/proc/sys/kernel/numa_balancing' ;;
        '') balset=: balrestore=: ;;
        *) echo "run-vm.sh: $name: balancing is '$bal', not empty or off" >&2; exit 2 ;;
        esac
        cat >>"$guest" <<EOF
$balset
echo "@@ begin $name (numa_balancing \$(cat /proc/sys/kernel/numa_balancing 2>/dev/null))"
c0=\$(numa_counters)
t0=\$(date +%s)
$envcmd timeout $tmo $BUILD/$prog $args
rc=\$?
t1=\$(date +%s)
c1=\$(numa_counters)
$balrestore
echo "\$c0 \$c1" | awk '{ printf "\n@@ numa %s: hint faults %d, pages migrated %d, PTEs made PROT_NONE %d\n", "$name", \$5 - \$2, \$6 - \$3, \$4 - \$1 }'
printf '@@ result %s %s %s\n' "$name" "\$rc" "\$((t1 - t0))"
EOF
    done <"$TMP/plan-$boot"
    echo 'echo "@@ done"' >>"$guest"
    chmod +x "$guest"
    boot_setup "$boot"
    echo "== placement tier, boot '$boot': $NUMA_VM $bargs ${NUMA_VM_ARGS:-}"
    t0=$(date +%s)
    if [ -n "$adds" ]; then
        {
            # shellcheck disable=SC2086
            (cd "$TMP" && "$NUMA_VM" --timeout "$btmo" $bargs ${NUMA_VM_ARGS:-} $adds \
                -- "$guest") 2>&1
            echo $? >"$TMP/vmrc-$boot"
        } | tee "$TMP/raw-$boot"
    fi
    touch "$TMP/raw-$boot"
    tr -d '\r' <"$TMP/raw-$boot" >"$TMP/out-$boot"
    vmrc=$(cat "$TMP/vmrc-$boot" 2>/dev/null || echo "?")
    echo "== boot '$boot' took $(($(date +%s) - t0)) s (numa-vm exit status $vmrc)"
    while IFS='|' read -r name prog opts args tmo bal extra; do
        if [ ! -x "$BUILD/$prog" ]; then
            echo "$name|FAIL|-|-|$boot|not built: $BUILD/$prog" >>"$RESULTS"
            continue
        fi
        line=$(awk -v n="$name" '$1 == "@@" && $2 == "result" && $3 == n' "$TMP/out-$boot" |
            tail -n 1)
        if [ -z "$line" ]; then
            if awk -v n="$name" '$1 == "@@" && $2 == "begin" && $3 == n { f = 1 } END { exit !f }' \
                "$TMP/out-$boot"; then
                why="started but no result (VM stopped or timed out)"
            else
                why="never started (VM stopped or timed out earlier)"
            fi
            echo "$name|FAIL|-|-|$boot|$why" >>"$RESULTS"
            continue
        fi
        rc=$(echo "$line" | cut -d' ' -f4)
        secs=$(echo "$line" | cut -d' ' -f5)
        case $rc in
        0) st=PASS why="" ;;
        77) st=SKIP why=$(awk -v n="SKIP $name:" 'index($0, n) == 1' "$TMP/out-$boot" |
                tail -n 1 | sed 's/^SKIP [^:]*: //') ;;
        124|143) st=FAIL why="timed out after ${tmo} s" ;;
        *)
            st=FAIL
            if [ "$rc" -gt 128 ] 2>/dev/null; then
                why="killed by signal $((rc - 128))"
            else
                why="exit status $rc"
            fi
            ;;
        esac
        echo "$name|$st|$rc|$secs|$boot|$why" >>"$RESULTS"
    done <"$TMP/plan-$boot"
}

run_boot main
run_boot small
run_boot hmat

# ---- summary -----------------------------------------------------------------
echo
echo "== placement tier summary ($(($(date +%s) - START)) s in all)"
fail=0
pass=0
skip=0
while IFS='|' read -r name st rc secs boot why; do
    printf '%-4s %-45s %6s s  [%s]%s\n' "$st" "$name" "$secs" "$boot" "${why:+  $why}"
    case $st in
    PASS) pass=$((pass + 1)) ;;
    SKIP) skip=$((skip + 1)) ;;
    *) fail=$((fail + 1)) ;;
    esac
done <"$RESULTS"
echo "== $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] || exit 1
exit 0
