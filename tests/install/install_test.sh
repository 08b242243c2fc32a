#!/bin/sh
# install_test.sh - the README's quick start, exactly as written, then the
# rest of the installed tree as a user would use it.
#
#   tests/install/install_test.sh BUILDDIR
#
# The commands come from README.md itself: each code block that follows a
# "<!-- install-test: NAME -->" line is run as written. The one line that
# needs root ("sudo make install", to /usr/local) is replaced by the block
# the README gives for a prefix of your own, with HOME pointing into a
# temporary directory; so the test installs nothing outside it. After that:
# a program linked with pkg-config runs without LD_LIBRARY_PATH, a static
# build, find_package, nodal-run's JSON statistics, the man pages, the
# archives' exported names (a program defining nd_* names of its own links
# with both), and `make uninstall`.
set -eu
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
# This test installs from BUILDDIR, which writes BUILDDIR/install_manifest.txt:
# the manifest of an install of the user's own (what `make uninstall` reads)
# is put back at the end.
manifest=$build/install_manifest.txt
[ -f "$manifest" ] && cp -p "$manifest" "$tmp/manifest.saved"
restore_manifest() {
    rm -f "$manifest" "$manifest.removed"
    [ -f "$tmp/manifest.saved" ] && cp -p "$tmp/manifest.saved" "$manifest"
    return 0
}
trap 'restore_manifest; rm -rf "$tmp"' EXIT
fail() { echo "FAIL install: expected $*" >&2; exit 1; }

# block NAME: the README's code block after <!-- install-test: NAME -->
block() {
    awk -v tag="<!-- install-test: $1 -->" '
        $0 == tag { armed = 1; next }
        armed && /^```/ { if (inside) exit; inside = 1; next }
        inside { print }' "$src/README.md"
}
for b in "quick start" "own prefix" link; do
    [ -n "$(block "$b")" ] || fail "README.md to have a code block after <!-- install-test: $b -->"
done
block "quick start" | grep -qx 'sudo make install *#.*' ||
    fail "the quick start's install step to be 'sudo make install' (this test replaces it)"

# The quick start as a script: the root-only line swapped for the
# own-prefix block. Run from the top of the tree, as
# the README says, with this test's build directory and a private HOME.
{
    echo "set -ex"
    block "quick start" | while IFS= read -r line; do
        case $line in
        "sudo make install"*) block "own prefix" ;;
        *) printf '%s\n' "$line" ;;
        esac
    done
} >"$tmp/quickstart.sh"
mkdir -p "$tmp/home"
(
    cd "$src"
    unset LD_LIBRARY_PATH LD_PRELOAD NODAL_OPTIONS NODAL_STATS NODAL_STATS_FILE PKG_CONFIG_PATH
    export HOME="$tmp/home" BUILD="$build"
    sh "$tmp/quickstart.sh"
    env >"$tmp/env.after"
) >"$tmp/quickstart.out" 2>"$tmp/quickstart.err" || {
    tail -n 40 "$tmp/quickstart.err" >&2
    fail "every quick start step to succeed (script: $(tr '\n' ';' <"$tmp/quickstart.sh"))"
}
prefix=$tmp/home/.local
# step 3: the summary line of the program run on nodal
grep -q '^nodal: [a-z_]*=[0-9]' "$tmp/quickstart.err" ||
    fail "step 3 to print nodal's summary line ('nodal: name=value ...') on stderr, got: $(head -c 600 "$tmp/quickstart.err")"
# the quick start says how many steps it has, and has them
steps=$(block "quick start" | grep -c '# [0-9]*\. ')
word=$(echo one two three four five six seven eight nine | cut -d' ' -f"$steps")
sed -n '/^## Quick start/,/^## /p' "$src/README.md" | grep -q "in $word steps" ||
    fail "the quick start to announce the $steps steps its block numbers"
# make install's advice points to a section the README has
see=$(sed -n 's/.*(see README.md, \([^)]*\)).*/\1/p' "$tmp/quickstart.out" "$tmp/quickstart.err" | head -n 1)
[ -n "$see" ] || fail "make install into a private prefix to say what to do (see README.md, ...)"
grep -qx "## $see" "$src/README.md" || fail "the README section '$see' that make install points to"
# step 4
grep -q 'nodal-verify: PASS' "$tmp/quickstart.out" ||
    fail "nodal-verify --quick to end with 'nodal-verify: PASS', got: $(tail -n 5 "$tmp/quickstart.out")"

# What the quick start installed.
pc=$prefix/lib/pkgconfig/nodal.pc
[ -f "$pc" ] || fail "nodal.pc in $prefix/lib/pkgconfig (where the README's PKG_CONFIG_PATH points)"
libdir=$prefix/lib
[ -f "$prefix/include/nodal.h" ] || fail "include/nodal.h to be installed"
[ -f "$prefix/include/nodal.hpp" ] || fail "include/nodal.hpp to be installed"
ls "$libdir"/libnodal.so.0* >/dev/null 2>&1 || fail "a versioned libnodal.so.0 (soname) in $libdir"
[ -f "$libdir/libnodal.a" ] || fail "libnodal.a in $libdir"
for page in man3/nodal.3 man1/nodal-run.1 man1/nodal-verify.1; do
    [ -f "$prefix/share/man/$page" ] || fail "the man page share/man/$page"
done
soname=$(objdump -p "$libdir/libnodal.so" 2>/dev/null | awk '/SONAME/{print $2}')
[ "$soname" = "libnodal.so.0" ] || fail "soname libnodal.so.0, got '$soname'"

# "Linked": the README's link block as written, in the environment the
# own-prefix block set up, and the program runs without LD_LIBRARY_PATH.
mkdir -p "$tmp/app"
cp "$here/hello.c" "$tmp/app/prog.c"
(
    cd "$tmp/app"
    unset LD_LIBRARY_PATH LD_PRELOAD
    export HOME="$tmp/home" PATH="$prefix/bin:$PATH" PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
    { echo "set -ex"; block link; } >link.sh
    sh link.sh
) >"$tmp/link.out" 2>"$tmp/link.err" || {
    cat "$tmp/link.err" >&2
    fail "the README's link block to build and run prog.c"
}
grep -q "hello from nodal" "$tmp/link.out" || fail "the linked program's output, got: $(cat "$tmp/link.out")"
env -u LD_LIBRARY_PATH ldd "$tmp/app/prog" | grep -q "libnodal.so.0 => $libdir" ||
    fail "the linked program to find $libdir/libnodal.so.0 by itself: $(ldd "$tmp/app/prog" | grep nodal)"

export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc=${CC:-cc}
# a C program gets no C++ runtime from libnodal (it defines operator new)
readelf -d "$tmp/app/prog" | grep -q 'NEEDED.*libstdc++' && fail "the C program not to need libstdc++"
readelf -d "$libdir/libnodal.so" | grep -q 'NEEDED.*libstdc++' && fail "libnodal.so not to need libstdc++"
# C++ through pkg-config: nodal.hpp and nodal's operator new
cxx=${CXX:-c++}
$cxx -std=c++17 -o "$tmp/hello_cxx" "$here/hello.cpp" $(pkg-config --cflags --libs nodal) \
    || fail "hello.cpp to build with pkg-config --cflags --libs nodal"
out=$(env -u LD_LIBRARY_PATH "$tmp/hello_cxx") || fail "the C++ pkg-config build to run, got: $out"
echo "$out" | grep -q "hello from nodal.hpp" || fail "its output, got: $out"
# static, through pkg-config
$cc -o "$tmp/hello_static" "$here/hello.c" $(pkg-config --cflags nodal) "$libdir/libnodal.a" \
    $(pkg-config --static --libs-only-other nodal) -lpthread \
    || fail "hello.c to link statically against libnodal.a"
"$tmp/hello_static" | grep -q "hello from nodal" || fail "the static build to run"
$cxx -std=c++17 -o "$tmp/hello_cxx_static" "$here/hello.cpp" $(pkg-config --cflags nodal) \
    "$libdir/libnodal.a" -pthread || fail "hello.cpp to link statically against libnodal.a"
"$tmp/hello_cxx_static" | grep -q "hello from nodal.hpp" || fail "the static C++ build to run"
# The archives export the shared library's names and nothing else: a program
# with its own nd_warn, nd_heap_init, ... links with each of them and runs.
nm=${NM:-nm}
# exported ARCHIVE: its global names, less the compiler's DW.ref.* (a weak
# hidden pointer to the C++ personality routine that every object with a
# catch carries, merged across objects by the linker)
exported() { "$nm" -g --defined-only "$1" | awk 'NF == 3 && $3 !~ /^DW\.ref\./ { print $3 }' | sort -u; }
"$nm" -D --defined-only "$libdir/libnodal.so" | awk '{ print $3 }' | sort -u >"$tmp/so.names"
exported "$libdir/libnodal.a" >"$tmp/a.names"
extra=$(comm -13 "$tmp/so.names" "$tmp/a.names" | head -n 5 | tr '\n' ' ')
[ -z "$extra" ] || fail "libnodal.a to export only what libnodal.so exports, also got: $extra"
[ "$(wc -l <"$tmp/a.names")" -eq "$(wc -l <"$tmp/so.names")" ] ||
    fail "libnodal.a to export every name libnodal.so exports: $(comm -23 "$tmp/so.names" "$tmp/a.names" | head -n 5 | tr '\n' ' ')"
extra=$(exported "$libdir/libnodal_prefix.a" | grep -v '^nodal_' | head -n 5 | tr '\n' ' ')
[ -z "$extra" ] || fail "libnodal_prefix.a to export only nodal_* names, also got: $extra"
for lib in libnodal.a libnodal_prefix.a; do
    $cc -o "$tmp/clash" "$here/clash.c" $(pkg-config --cflags nodal) "$libdir/$lib" -pthread \
        >"$tmp/clash.log" 2>&1 || { cat "$tmp/clash.log" >&2; fail "a program defining nd_* names of its own to link with $lib"; }
    "$tmp/clash" | grep -q "side by side" || fail "the program with its own nd_* names, linked with $lib, to run"
done
# The README's examples, as written: each code block after
# <!-- readme-example: c --> / <!-- readme-example: c++ --> is a program
# that builds with pkg-config and runs on any machine (one node or many).
example() {
    awk -v tag="<!-- readme-example: $1 -->" '
        $0 == tag { armed = 1; next }
        armed && /^```/ { if (inside) exit; inside = 1; next }
        inside { print }' "$src/README.md"
}
example c >"$tmp/example.c"
example c++ >"$tmp/example.cpp"
[ -s "$tmp/example.c" ] || fail "README.md to have a C example after <!-- readme-example: c -->"
[ -s "$tmp/example.cpp" ] || fail "README.md to have a C++ example after <!-- readme-example: c++ -->"
$cc -std=c11 -Wall -Wextra -Werror -o "$tmp/example_c" "$tmp/example.c" $(pkg-config --cflags --libs nodal) \
    >"$tmp/example.log" 2>&1 || { cat "$tmp/example.log" >&2; fail "the README's C example to build without warnings"; }
out=$(env -u LD_LIBRARY_PATH "$tmp/example_c" 2>&1) || fail "the README's C example to run, got: $out"
$cxx -std=c++17 -Wall -Wextra -Werror -o "$tmp/example_cxx" "$tmp/example.cpp" $(pkg-config --cflags --libs nodal) \
    >"$tmp/example.log" 2>&1 || { cat "$tmp/example.log" >&2; fail "the README's C++ example to build without warnings"; }
out=$(env -u LD_LIBRARY_PATH "$tmp/example_cxx" 2>&1) || fail "the README's C++ example to run, got: $out"
# CMake package
mkdir -p "$tmp/consumer"
cp "$here/hello.c" "$here/hello.cpp" "$tmp/consumer/"
cp "$here/CMakeLists.txt.consumer" "$tmp/consumer/CMakeLists.txt"
cmake -S "$tmp/consumer" -B "$tmp/consumer/build" -DCMAKE_PREFIX_PATH="$prefix" \
      >"$tmp/consumer.log" 2>&1 \
    && cmake --build "$tmp/consumer/build" >>"$tmp/consumer.log" 2>&1 \
    || { cat "$tmp/consumer.log"; fail "find_package(nodal) and nodal::nodal to build a program"; }
env -u LD_LIBRARY_PATH "$tmp/consumer/build/hello" | grep -q "hello from nodal" ||
    fail "the CMake build to run (from its build tree, without LD_LIBRARY_PATH)"
env -u LD_LIBRARY_PATH "$tmp/consumer/build/hello_cxx" | grep -q "hello from nodal.hpp" ||
    fail "the CMake C++ build to run"
"$tmp/consumer/build/hello_cxx_static" | grep -q "hello from nodal.hpp" ||
    fail "the CMake C++ build with nodal::nodal_static to run"
# nodal-run from the prefix: the summary line, JSON statistics, the option list
err=$("$prefix/bin/nodal-run" --tcache-count=64 -- ls "$prefix" 2>&1 >/dev/null)
echo "$err" | grep -q "^nodal: pid=[0-9]* program=[^ ]* requests=" ||
    fail "nodal-run to print a 'nodal: pid=N program=P requests=N' line, got: $err"
err=$("$prefix/bin/nodal-run" --stats=json -- true 2>&1 >/dev/null)
echo "$err" | python3 -m json.tool >/dev/null 2>&1 || fail "nodal-run --stats=json to print JSON that parses, got: $err"
"$prefix/bin/nodal-run" --list-options | grep -q "^tcache_count" || fail "nodal-run --list-options to list tcache_count"
"$prefix/bin/nodal-run" --version | grep -q "^library: $libdir/libnodal.so" ||
    fail "the installed nodal-run to preload the installed library, got: $("$prefix/bin/nodal-run" --version)"
# the man pages render without warnings (when man is installed)
if command -v man >/dev/null 2>&1; then
    for page in man3/nodal.3 man3/nodal.hpp.3 man1/nodal-run.1 man1/nodal-verify.1; do
        [ -f "$prefix/share/man/$page" ] || fail "the man page share/man/$page"
        w=$(MANWIDTH=80 man --warnings -l "$prefix/share/man/$page" 2>&1 >/dev/null) ||
            fail "man -l $page to render"
        [ -z "$w" ] || fail "man -l $page to render without warnings, got: $w"
    done
fi
# make uninstall: every file the install put in the prefix is gone again
(
    cd "$src"
    export BUILD="$build"
    make uninstall
) >"$tmp/uninstall.log" 2>&1 || { cat "$tmp/uninstall.log" >&2; fail "make uninstall to succeed"; }
left=$(find "$prefix" -type f -o -type l | head -n 5 | tr '\n' ' ')
[ -z "$left" ] || fail "make uninstall to remove every file of the install, left: $left"
[ ! -e "$prefix/lib/cmake/nodal" ] || fail "make uninstall to remove the directory lib/cmake/nodal"
# pkg-config: an rpath only where the loader would not find the library by
# itself (the private prefix above has one); none into a system directory
DESTDIR="$tmp/stage" cmake --install "$build" --prefix /usr >"$tmp/stage.log" 2>&1 ||
    { cat "$tmp/stage.log" >&2; fail "a staged install (DESTDIR) into /usr to succeed"; }
grep -q '^Libs:.*rpath' "$tmp/stage/usr/lib/pkgconfig/nodal.pc" &&
    fail "nodal.pc installed into /usr to carry no rpath, got: $(grep '^Libs:' "$tmp/stage/usr/lib/pkgconfig/nodal.pc")"
echo "PASS install: the README's quick start and link step as written; headers (C and C++); libraries (soname $soname, no libstdc++); pkg-config (shared with rpath, static; C and C++); find_package; nodal-run; nodal-verify; man pages; the README's C and C++ examples; archives export only public names; make uninstall; no rpath in a system prefix's nodal.pc"
