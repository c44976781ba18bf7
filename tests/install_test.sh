#!/usr/bin/env bash
# The library people install: `cmake --install` into a temporary prefix, then a small C program
# built against it twice, once with pkg-config and once with find_package(portc), and run, and
# the Python package imported from the prefix alone; the
# library's SONAME is versioned and its dynamic symbols are the API's (portc_*) alone, so the
# statically linked shaderc, glslang, SPIRV-Tools and protobuf-c cannot clash with an
# application's own; `portc --version` answers from the installed tree.
# usage: install_test.sh BUILD_DIR SOURCE_DIR
set -u
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$src/tests/cli_lib.sh"
prefix=$tmp/prefix

expect 0 "cmake --install" -- cmake --install "$build" --prefix "$prefix"
lib=$(ls "$prefix"/lib*/libportc.so.0 2>/dev/null | head -1)
[ -n "$lib" ] || { echo "FAIL: no libportc.so.0 under $prefix"; ls -R "$prefix" | head -30; exit 1; }
expect 0 "readelf" -- readelf -d "$lib"
contains "Library soname: [libportc.so.0]" "the SONAME carries the major version"
expect 0 "header installed" -- test -f "$prefix/include/portc/portc.h"

# only portc_* is exported (the version node PORTC_0 aside)
nm -D --defined-only "$lib" | awk '{print $NF}' | sed 's/@.*//' | grep -v '^PORTC_0$' >"$tmp/syms"
others=$(grep -v '^portc_' "$tmp/syms" | head -20)
if [ -n "$others" ]; then
  echo "FAIL: libportc.so exports symbols that are not portc_*:"; echo "$others" | sed 's/^/  | /'; fails=$((fails + 1))
fi
count=$(wc -l <"$tmp/syms")
[ "$count" -ge 100 ] || { echo "FAIL: only $count portc_* symbols exported"; fails=$((fails + 1)); }
grep -qx portc_compile "$tmp/syms" || { echo "FAIL: portc_compile is not exported"; fails=$((fails + 1)); }

expect 0 "portc --version" -- "$prefix/bin/portc" --version
contains "portc 0." "the installed command runs with the installed library"

# pkg-config
export PKG_CONFIG_PATH=$(dirname "$lib")/pkgconfig
expect 0 "pkg-config --cflags --libs portc" -- pkg-config --cflags --libs portc
flags=$(pkg-config --cflags --libs portc)
expect 0 "build with pkg-config" -- cc -o "$tmp/consumer_pc" "$src/tests/install/consumer.c" $flags
expect 0 "run the pkg-config build" -- env LD_LIBRARY_PATH="$(dirname "$lib")" "$tmp/consumer_pc"
contains "relu = 0 0 0.5 1.5" "the pkg-config build computes relu"

# find_package
expect 0 "configure with find_package" -- cmake -S "$src/tests/install" -B "$tmp/cm" -DCMAKE_PREFIX_PATH="$prefix"
expect 0 "build with find_package" -- cmake --build "$tmp/cm"
expect 0 "run the find_package build" -- env LD_LIBRARY_PATH="$(dirname "$lib")" "$tmp/cm/consumer"
contains "relu = 0 0 0.5 1.5" "the find_package build computes relu"

# the Python package, from the installed tree alone (it finds the library beside it)
expect 0 "python imports the installed package" -- env -u PORTC_LIBRARY PYTHONPATH="$(dirname "$lib")/python3/dist-packages" \
  /usr/bin/python3 -c 'import numpy as np, portc; (y,) = portc.parse("graph g\ninput x: f32[2]\ny = relu(x)\noutput y\n").compile("cpu").run(x=np.array([-1, 2], np.float32)); print("python", portc.version(), list(y))'
contains "python 0." "the installed Python package runs"
contains "[0.0, 2.0]" "the installed Python package computes relu"

[ "$fails" -eq 0 ] && echo "install test: all checks passed"
exit $((fails > 0))
