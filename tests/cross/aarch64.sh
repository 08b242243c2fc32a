#!/bin/sh
# aarch64.sh - nodal keeps building for aarch64: cross-compiles the library
# with the project's warning flags as errors, links the smoke program, and
# runs it under qemu-user when that is installed.
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
for f in "$root"/src/*.c; do
    $cc $flags -I"$root/include" -I"$root/src" -c "$f" -o "$out/$(basename "$f" .c).o" \
        || { echo "FAIL aarch64: expected $f to compile without warnings"; exit 1; }
done
$cc -shared -o "$out/libnodal.so" "$out"/*.o -lpthread || { echo "FAIL aarch64: expected libnodal.so to link"; exit 1; }
$cc -O2 -I"$root/include" "$here/smoke.c" -o "$out/smoke" -L"$out" -lnodal -lpthread -Wl,-rpath,"$out" \
    || { echo "FAIL aarch64: expected the smoke program to link"; exit 1; }
if command -v qemu-aarch64 >/dev/null 2>&1 && [ -d /usr/aarch64-linux-gnu ]; then
    qemu-aarch64 -L /usr/aarch64-linux-gnu "$out/smoke" || { echo "FAIL aarch64: expected the smoke program to pass under qemu-aarch64"; exit 1; }
    echo "PASS aarch64: builds warning-free and runs (qemu-user)"
else
    echo "PASS aarch64: builds warning-free (qemu-aarch64 not installed: not run)"
fi
