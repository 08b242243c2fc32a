#!/bin/sh
# aarch64.sh - nodal keeps building for aarch64: cross-compiles the library
# with the project's warning flags as errors, links the smoke programs (C,
# and C++ when the cross g++ is there), and runs them under qemu-user when
# that is installed.
#   tests/cross/aarch64.sh        (exit 77 when no aarch64 cross compiler)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cc=${CROSS_CC:-aarch64-linux-gnu-gcc}
command -v "$cc" >/dev/null 2>&1 || { echo "SKIP: no $cc (apt-get install gcc-aarch64-linux-gnu)"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
flags="-std=gnu11 -O2 -Wall -Wextra -Wundef -Wshadow -Wstrict-prototypes -Wmissing-prototypes
       -Wno-unused-parameter -Werror -fPIC -fvisibility=hidden -ftls-model=initial-exec"
# The C++ operators need new_fail.cc, built by the matching C++ compiler;
# without one they are left out (and said so).
cxx=${CROSS_CXX:-aarch64-linux-gnu-g++}
cxx_note=""
command -v "$cxx" >/dev/null 2>&1 || cxx_note=" (C++ operators left out: no $cxx)"
incs=""
for d in "$root"/src/*/; do incs="$incs -I$d"; done
for f in "$root"/src/*/*.c; do
    [ -n "$cxx_note" ] && [ "$(basename "$f")" = new_delete.c ] && continue
    $cc $flags -I"$root/include" $incs -c "$f" -o "$out/$(basename "$f" .c).o" \
        || { echo "FAIL aarch64: expected $f to compile without warnings"; exit 1; }
done
if [ -z "$cxx_note" ]; then
    $cxx -std=c++17 -O2 -Wall -Wextra -Werror -fPIC -fvisibility=hidden -I"$root/src/api" \
        -c "$root/src/api/new_fail.cc" -o "$out/new_fail.o" \
        || { echo "FAIL aarch64: expected new_fail.cc to compile without warnings"; exit 1; }
fi
$cc -shared -Wl,--no-undefined -o "$out/libnodal.so" "$out"/*.o -lpthread || { echo "FAIL aarch64: expected libnodal.so to link"; exit 1; }
$cc -O2 -I"$root/include" "$here/smoke.c" -o "$out/smoke" -L"$out" -lnodal -lpthread -Wl,-rpath,"$out" \
    || { echo "FAIL aarch64: expected the smoke program to link"; exit 1; }
if [ -z "$cxx_note" ]; then
    $cxx -std=c++17 -O2 -Wall -Wextra -I"$root/include" "$here/smoke_cxx.cpp" -o "$out/smoke_cxx" \
        -L"$out" -lnodal -lpthread -Wl,-rpath,"$out" \
        || { echo "FAIL aarch64: expected the C++ smoke program to link"; exit 1; }
fi
if command -v qemu-aarch64 >/dev/null 2>&1 && [ -d /usr/aarch64-linux-gnu ]; then
    qemu-aarch64 -L /usr/aarch64-linux-gnu "$out/smoke" || { echo "FAIL aarch64: expected the smoke program to pass under qemu-aarch64"; exit 1; }
    if [ -z "$cxx_note" ]; then
        qemu-aarch64 -L /usr/aarch64-linux-gnu "$out/smoke_cxx" ||
            { echo "FAIL aarch64: expected the C++ smoke program to pass under qemu-aarch64"; exit 1; }
    fi
    echo "PASS aarch64: builds warning-free and runs (qemu-user)$cxx_note"
else
    echo "PASS aarch64: builds warning-free (qemu-aarch64 not installed: not run)$cxx_note"
fi
