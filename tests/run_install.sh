#!/usr/bin/env bash
# run_install.sh BUILD_DIR SOURCE_DIR [WITH_SUBDIR]: sinter as a user consumes
# it. Installs BUILD_DIR into a scratch prefix and checks what is there
# (header, libsinter.so with its soname, libsinter.a, the sinter command,
# sinter.pc, the CMake package); builds tests/install/consume.c with
# `pkg-config --cflags --libs sinter` (shared) and `sinter-static` (static),
# and with find_package(sinter) against both libraries, and runs each (ref
# interpreter, checked against sums worked out in the program). With
# WITH_SUBDIR=1 also configures the source tree as a subproject, builds
# there only the targets scripts/run builds and installs that (the quick
# start's build must be installable), then builds consume.c with
# add_subdirectory. $SINTER_TEST_CFLAGS: the sanitizer
# flags the library was built with, which its consumers need too.
set -euo pipefail
build=$1 src=$2 subdir=${3:-0}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log"
fails=0
check() { if ! eval "$1"; then echo "FAIL: $1"; fails=$((fails + 1)); fi; }
libdir=$(dirname "$(find "$prefix" -name sinter.pc)")/..
check '[ -f "$prefix/include/sinter.h" ]'
check '[ -f "$prefix/include/sinter_tools.h" ]'
check '[ -x "$prefix/bin/sinter" ]'
check '[ -f "$libdir/libsinter.a" ]'
check '[ -L "$libdir/libsinter.so" ]'
check 'readelf -d "$libdir/libsinter.so" | grep -q "SONAME.*libsinter\.so\.0\]"'
check '[ -f "$libdir/cmake/sinter/sinterConfig.cmake" ]'
# only the public API is exported: every defined dynamic symbol is sinter_
extra=$(nm -D --defined-only "$libdir/libsinter.so" | awk '{print $3}' | grep -v '^sinter_' || true)
check '[ -z "$extra" ]'
[ -z "$extra" ] || echo "exported beyond sinter_: $(echo $extra | head -c 300)"
# nor does libsinter.a define any other global (an application's own names cannot clash)
extra=$(nm -g --defined-only "$libdir/libsinter.a" 2>/dev/null | awk 'NF == 3 {print $3}' | grep -v '^sinter_' || true)
check '[ -z "$extra" ]'
[ -z "$extra" ] || echo "libsinter.a globals beyond sinter_: $(echo $extra | head -c 300)"
# every function declared in sinter.h and sinter_tools.h is exported (the
# static inline _init functions are the caller's own)
declared() { grep -v 'static inline' "$1" | grep -oE '\bsinter_[a-z0-9_]+\(' | tr -d '(' | sort -u; }
for f in $(declared "$prefix/include/sinter.h") $(declared "$prefix/include/sinter_tools.h"); do
	nm -D --defined-only "$libdir/libsinter.so" | grep -qw "$f" || { echo "FAIL: $f not exported"; fails=$((fails + 1)); }
done
# the core header stays small (issue 31 item 18): at most 30 functions
ncore=$(declared "$prefix/include/sinter.h" | wc -l)
echo "sinter.h: $ncore functions"
check '[ "$ncore" -le 30 ]'
# and the library exports nothing the headers do not declare
for f in $(nm -D --defined-only "$libdir/libsinter.so" | awk '{print $3}' | grep '^sinter_'); do
	grep -qw "$f" "$prefix/include/sinter.h" "$prefix/include/sinter_tools.h" ||
		{ echo "FAIL: $f exported, not declared"; fails=$((fails + 1)); }
done
"$prefix/bin/sinter" --version >/dev/null || { echo "FAIL: installed sinter --version"; fails=$((fails + 1)); }

cd "$tmp"
cflags=${SINTER_TEST_CFLAGS:-}
# 1. pkg-config
export PKG_CONFIG_PATH=$libdir/pkgconfig
# shellcheck disable=SC2086
cc $cflags -o consume_pc "$src/tests/install/consume.c" $(pkg-config --cflags --libs sinter)
out=$(LD_LIBRARY_PATH=$libdir ./consume_pc "$tmp/w1.safetensors")
echo "pkg-config: $out"
check '[[ "$out" == "consume: ok"* ]]'
check 'pkg-config --libs --static sinter | grep -q -- -lxxhash'
# sinter-static.pc: the archive and what it needs, no libsinter.so
# shellcheck disable=SC2086
cc $cflags -o consume_pcs "$src/tests/install/consume.c" $(pkg-config --cflags --libs sinter-static)
out=$(./consume_pcs "$tmp/w4.safetensors")
echo "pkg-config sinter-static: $out"
check '[[ "$out" == "consume: ok"* ]]'
check '! readelf -d consume_pcs | grep -q libsinter'
check '[ "$(pkg-config --libs sinter-static)" = "$(pkg-config --libs --static sinter-static)" ]'
# 2. find_package, shared and static
cmake -S "$src/tests/install" -B fp -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_FLAGS="$cflags" \
	-DCMAKE_EXE_LINKER_FLAGS="$cflags" >fp.log 2>&1 || { cat fp.log; exit 1; }
ninja -C fp >>fp.log 2>&1 || { cat fp.log; exit 1; }
for k in shared static; do
	out=$(./fp/consume_$k "$tmp/w2.safetensors")
	echo "find_package ($k): $out"
	check '[[ "$out" == "consume: ok"* ]]'
done
check '! readelf -d fp/consume_static | grep -q libsinter'
# 3. add_subdirectory (builds the library again from its sources; as
# Debug, -O0: how the library is consumed is checked here, not how it
# optimizes, and -O0 compiles faster than the default RelWithDebInfo's -O2
# under the sanitizers)
if [ "$subdir" = 1 ]; then
	cmake -S "$src/tests/install" -B sub -G Ninja -DSINTER_SOURCE="$src" -DSINTER_CUDA=OFF -DCMAKE_BUILD_TYPE=Debug \
		-DCMAKE_C_FLAGS="$cflags" -DCMAKE_EXE_LINKER_FLAGS="$cflags" -DCMAKE_SHARED_LINKER_FLAGS="$cflags" \
		>sub.log 2>&1 || { cat sub.log; exit 1; }
	# what scripts/run builds (its `ninja -C build TARGETS` line), then
	# `cmake --install` of that alone
	targets=$(sed -n 's/^ninja -C build \([^>]*\)>.*/\1/p' "$src/scripts/run")
	check '[ -n "$targets" ]'
	# shellcheck disable=SC2086
	ninja -C sub $targets >>sub.log 2>&1 || { cat sub.log; exit 1; }
	if cmake --install sub --prefix "$tmp/prefix2" >install2.log 2>&1; then
		echo "install after scripts/run's build ($targets): ok"
		check '[ -x "$tmp/prefix2/bin/sinter" ] && [ -n "$(find "$tmp/prefix2" -name libsinter.a)" ]'
		check '[ -n "$(find "$tmp/prefix2" -name libsinter.so.0)" ]'
	else
		echo "FAIL: cmake --install after building only scripts/run's targets ($targets):"
		grep -m2 -iE "error|cannot" install2.log || tail -3 install2.log
		fails=$((fails + 1))
	fi
	ninja -C sub consume_shared >>sub.log 2>&1 || { cat sub.log; exit 1; }
	out=$(./sub/consume_shared "$tmp/w3.safetensors")
	echo "add_subdirectory: $out"
	check '[[ "$out" == "consume: ok"* ]]'
fi
[ "$fails" = 0 ] && echo "install: all checks passed"
exit $((fails > 0))
