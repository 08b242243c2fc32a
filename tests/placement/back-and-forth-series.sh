#!/bin/sh
# back-and-forth-series.sh - runs plain_memory_follows_thread's back_and_forth
# case N times inside numa-vm (one boot) and prints, per run, the share of
# pages local to their thread's stay and what the kernel's NUMA balancing
# did meanwhile (/proc/vmstat: pages and transparent huge pages migrated).
#
#   tests/placement/back-and-forth-series.sh BUILDDIR [N] [thp=always|never] [NODAL_OPTIONS]
#
# The row's share moves from run to run with the balancing (docs/results.md,
# issue 19); this is the series behind the figures there.
set -eu
[ $# -ge 1 ] || { echo "usage: $0 BUILDDIR [N] [thp=always|never] [NODAL_OPTIONS]" >&2; exit 2; }
BUILD=$(cd "$1" && pwd)
N=${2:-5}
THP=${3:-thp=always}
OPTS=${4:-}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN=$BUILD/tests/placement/plain_memory_follows_thread
[ -x "$BIN" ] || { echo "no $BIN (build the tests first)" >&2; exit 2; }
INNER=$(mktemp /tmp/bnf.XXXXXX)
trap 'rm -f "$INNER"' EXIT
cat > "$INNER" <<INNER_EOF
#!/bin/sh
echo ${THP#thp=} > /sys/kernel/mm/transparent_hugepage/enabled
vm() { awk '/^(numa_pages_migrated|thp_migration_success) /{print \$2}' /proc/vmstat | tr '\n' ' '; }
i=1
while [ \$i -le $N ]; do
  set -- \$(vm); p0=\$1; t0=\$2
  f=\$(NODAL_OPTIONS='$OPTS' $BIN --case=back_and_forth 2>&1 | grep -oE '6 swaps: [0-9.]+' | cut -d' ' -f3)
  set -- \$(vm)
  echo "run \$i: local \$f, pages migrated \$((\$1 - p0)), huge pages migrated \$((\$2 - t0))"
  i=\$((i + 1))
done
INNER_EOF
chmod +x "$INNER"
exec "${NUMA_VM:-$ROOT/tools/numa-vm/numa-vm}" -t 1800 --add "$BIN" --add "$INNER" -- "$INNER"
