#!/bin/sh
# install_test.sh - `cmake --install` into a temporary prefix, then use it as
# a user would: build C and C++ programs with pkg-config (shared and
# static), build with CMake's find_package, run the programs, check that the
# C program and libnodal.so need no libstdc++, run one under nodal-run and check that the
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
[ -f "$prefix/include/nodal.hpp" ] || fail "include/nodal.hpp to be installed"
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
# a C program gets no C++ runtime from libnodal (it defines operator new)
readelf -d "$tmp/hello" | grep -q 'NEEDED.*libstdc++' && fail "the C program not to need libstdc++"
readelf -d "$libdir/libnodal.so" | grep -q 'NEEDED.*libstdc++' && fail "libnodal.so not to need libstdc++"
# C++ through pkg-config: nodal.hpp and nodal's operator new
cxx=${CXX:-c++}
$cxx -std=c++17 -o "$tmp/hello_cxx" "$here/hello.cpp" $(pkg-config --cflags --libs nodal) \
    -Wl,-rpath,"$libdir" || fail "hello.cpp to build with pkg-config --cflags --libs nodal"
out=$("$tmp/hello_cxx") || fail "the C++ pkg-config build to run, got: $out"
echo "$out" | grep -q "hello from nodal.hpp" || fail "its output, got: $out"
# static, through pkg-config
$cc -o "$tmp/hello_static" "$here/hello.c" $(pkg-config --cflags nodal) "$libdir/libnodal.a" \
    $(pkg-config --static --libs-only-other nodal) -lpthread \
    || fail "hello.c to link statically against libnodal.a"
"$tmp/hello_static" | grep -q "hello from nodal" || fail "the static build to run"
$cxx -std=c++17 -o "$tmp/hello_cxx_static" "$here/hello.cpp" $(pkg-config --cflags nodal) \
    "$libdir/libnodal.a" -pthread || fail "hello.cpp to link statically against libnodal.a"
"$tmp/hello_cxx_static" | grep -q "hello from nodal.hpp" || fail "the static C++ build to run"
# CMake package
mkdir -p "$tmp/consumer"
cp "$here/hello.c" "$here/hello.cpp" "$tmp/consumer/"
cp "$here/CMakeLists.txt.consumer" "$tmp/consumer/CMakeLists.txt"
cmake -S "$tmp/consumer" -B "$tmp/consumer/build" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_BUILD_RPATH="$libdir" >"$tmp/consumer.log" 2>&1 \
    && cmake --build "$tmp/consumer/build" >>"$tmp/consumer.log" 2>&1 \
    || { cat "$tmp/consumer.log"; fail "find_package(nodal) and nodal::nodal to build a program"; }
"$tmp/consumer/build/hello" | grep -q "hello from nodal" || fail "the CMake build to run"
"$tmp/consumer/build/hello_cxx" | grep -q "hello from nodal.hpp" || fail "the CMake C++ build to run"
"$tmp/consumer/build/hello_cxx_static" | grep -q "hello from nodal.hpp" ||
    fail "the CMake C++ build with nodal::nodal_static to run"
# nodal-run: a program that knows nothing of nodal (ls), with statistics at
# exit. (Not a shell: dash ends with _exit(), which skips every exit hook.)
err=$("$prefix/bin/nodal-run" --tcache-count=64 -- ls "$prefix" 2>&1 >/dev/null)
echo "$err" | grep -q "^nodal: pid=[0-9]* program=[^ ]* requests=" || fail "nodal-run to print a 'nodal: pid=N program=P requests=N' line, got: $err"
err=$("$prefix/bin/nodal-run" --stats=json -- true 2>&1 >/dev/null)
echo "$err" | python3 -m json.tool >/dev/null 2>&1 || fail "nodal-run --stats=json to print JSON that parses, got: $err"
"$prefix/bin/nodal-run" --list-options | grep -q "^tcache_count" || fail "nodal-run --list-options to list tcache_count"
[ -f "$prefix/share/man/man3/nodal.hpp.3" ] || fail "the man page share/man/man3/nodal.hpp.3"
echo "PASS install: headers (C and C++), libraries (soname $soname, no libstdc++), pkg-config (shared and static, C and C++), find_package, nodal-run, man pages"
