#!/bin/sh
# install_test.sh - `cmake --install` into a temporary prefix, then use it as
# a user would: build with pkg-config (shared and static), build with CMake's
# find_package, run the programs, run one under nodal-run and check that the
# statistics line comes out, and check that the man page is there.
#
#   tests/install/install_test.sh BUILDDIR
set -eu
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL install: expected $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "cmake --install to succeed"; }
prefix=$tmp/prefix
pc=$(find "$prefix" -name nodal.pc | head -n1)
[ -n "$pc" ] || fail "nodal.pc to be installed"
libdir=$(dirname "$(dirname "$pc")")
[ -f "$prefix/include/nodal.h" ] || fail "include/nodal.h to be installed"
ls "$libdir"/libnodal.so.0* >/dev/null 2>&1 || fail "a versioned libnodal.so.0 (soname) in $libdir"
[ -f "$libdir/libnodal.a" ] || fail "libnodal.a in $libdir"
[ -x "$prefix/bin/nodal-run" ] || fail "bin/nodal-run to be installed"
[ -f "$prefix/share/man/man3/nodal.3" ] || fail "the man page share/man/man3/nodal.3"
soname=$(objdump -p "$libdir/libnodal.so" 2>/dev/null | awk '/SONAME/{print $2}')
[ "$soname" = "libnodal.so.0" ] || fail "soname libnodal.so.0, got '$soname'"

export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc=${CC:-cc}
# shared, through pkg-config
$cc -o "$tmp/hello" "$here/hello.c" $(pkg-config --cflags --libs nodal) -Wl,-rpath,"$libdir" \
    || fail "hello.c to build with pkg-config --cflags --libs nodal"
out=$("$tmp/hello") || fail "the pkg-config build to run"
echo "$out" | grep -q "hello from nodal" || fail "its output, got: $out"
ldd "$tmp/hello" | grep -q "libnodal.so.0 => $libdir" || fail "the program to use the installed libnodal.so.0"
# static, through pkg-config
$cc -o "$tmp/hello_static" "$here/hello.c" $(pkg-config --cflags nodal) "$libdir/libnodal.a" \
    $(pkg-config --static --libs-only-other nodal) -lpthread \
    || fail "hello.c to link statically against libnodal.a"
"$tmp/hello_static" | grep -q "hello from nodal" || fail "the static build to run"
# CMake package
mkdir -p "$tmp/consumer"
cp "$here/hello.c" "$tmp/consumer/"
cp "$here/CMakeLists.txt.consumer" "$tmp/consumer/CMakeLists.txt"
cmake -S "$tmp/consumer" -B "$tmp/consumer/build" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_BUILD_RPATH="$libdir" >"$tmp/consumer.log" 2>&1 \
    && cmake --build "$tmp/consumer/build" >>"$tmp/consumer.log" 2>&1 \
    || { cat "$tmp/consumer.log"; fail "find_package(nodal) and nodal::nodal to build a program"; }
"$tmp/consumer/build/hello" | grep -q "hello from nodal" || fail "the CMake build to run"
# nodal-run: a program that knows nothing of nodal (ls), with statistics at
# exit. (Not a shell: dash ends with _exit(), which skips every exit hook.)
err=$("$prefix/bin/nodal-run" --tcache-count=64 -- ls "$prefix" 2>&1 >/dev/null)
echo "$err" | grep -q "^nodal: pid=[0-9]* program=[^ ]* requests=" || fail "nodal-run to print a 'nodal: pid=N program=P requests=N' line, got: $err"
err=$("$prefix/bin/nodal-run" --stats=json -- true 2>&1 >/dev/null)
echo "$err" | python3 -m json.tool >/dev/null 2>&1 || fail "nodal-run --stats=json to print JSON that parses, got: $err"
"$prefix/bin/nodal-run" --list-options | grep -q "^tcache_count" || fail "nodal-run --list-options to list tcache_count"
echo "PASS install: headers, libraries (soname $soname), pkg-config (shared and static), find_package, nodal-run, man page"
