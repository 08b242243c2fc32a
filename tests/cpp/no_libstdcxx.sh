#!/bin/sh
# no_libstdcxx.sh - libnodal defines C++ operator new/delete, yet C programs
# that link it get no C++ runtime:
#   - libnodal.so has no DT_NEEDED on libstdc++ (or any C++ runtime) and
#     leaves no libstdc++ symbol strongly undefined;
#   - a C program linked with libnodal.so, and one linked with libnodal.a,
#     has no libstdc++ among its DT_NEEDED entries nor in what ldd loads,
#     and runs;
#   - libnodal.so exports all twenty C++17 operator new/delete forms.
#
#   tests/cpp/no_libstdcxx.sh LIBNODAL_SO PLAIN_SHARED PLAIN_STATIC
set -u
so=$1 shared=$2 static=$3
fail() { echo "FAIL c_program_gets_no_libstdcxx: expected $*"; exit 1; }
command -v readelf >/dev/null 2>&1 || { echo "SKIP: readelf not installed (binutils)"; exit 77; }

readelf -d "$so" | grep -E 'NEEDED.*(libstdc\+\+|libc\+\+)' &&
    fail "libnodal.so to need no C++ runtime, readelf -d lists it"
strong=$(readelf --dyn-syms -W "$so" | awk '$7 == "UND" && $5 == "GLOBAL" { print $8 }' |
         grep -E '^(_Z|__cxa_|__gxx_|_Unwind_)' || true)
[ -z "$strong" ] || fail "every C++ runtime symbol of libnodal.so to be a weak reference, strong: $strong"
for prog in "$shared" "$static"; do
    readelf -d "$prog" | grep -q 'NEEDED.*libstdc++' &&
        fail "$(basename "$prog") (C, linked with libnodal) not to need libstdc++ (readelf -d)"
    ldd "$prog" | grep -q 'libstdc++' &&
        fail "$(basename "$prog") not to load libstdc++ (ldd: $(ldd "$prog" | grep libstdc++))"
    out=$("$prog") || fail "$(basename "$prog") to run, got: $out"
done
readelf -d "$shared" | grep -q 'NEEDED.*libnodal' || fail "$(basename "$shared") to be linked with libnodal.so"
n=$(nm -D --defined-only "$so" | awk '{ print $3 }' |
    grep -cE '^_Z(nw|na|dl|da)(m|Pv)')
[ "$n" -eq 20 ] || fail "libnodal.so to export the 20 C++17 operator new/delete forms, it exports $n"
echo "PASS c_program_gets_no_libstdcxx: libnodal.so and C programs linked with it (shared, static) need no libstdc++; 20 operator forms exported"
