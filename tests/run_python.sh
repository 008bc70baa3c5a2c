#!/usr/bin/env bash
# run_python.sh PYTHON SOURCE_DIR BUILD_DIR LAYOUT_EXE: installs python/ with
# pip (into a scratch folder: `pip install ./python` as a user does, without
# touching PYTHON's environment) and runs tests/python/test_numpy.py and
# test_api.py with it, finding libsinter.so through $SINTER_LIBRARY, then
# checks that it is found through $SINTER_BUILD_DIR too. Prints
# "python.numpy: all checks passed" (ctest's pass line) only when every step
# passed. $SINTER_PRELOAD: the sanitizer runtime an instrumented
# library needs in an uninstrumented Python.
set -euo pipefail
py=$1 src=$2 build=$3 layout=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$src/python" "$tmp/pkg" # pip builds in the source folder: keep the tree clean
"$py" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation --target "$tmp/site" "$tmp/pkg"
export PYTHONPATH=$tmp/site
pre=()
if [ -n "${SINTER_PRELOAD:-}" ]; then
	pre=(env LD_PRELOAD="$SINTER_PRELOAD" ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0)
fi
cd "$tmp"
SINTER_LIBRARY=$build/libsinter.so.0 "${pre[@]}" "$py" "$src/tests/python/test_numpy.py" "$layout" "$src"
SINTER_LIBRARY=$build/libsinter.so.0 "${pre[@]}" "$py" "$src/tests/python/test_api.py" "$src"
# found without SINTER_LIBRARY: the build folder
env -u SINTER_LIBRARY SINTER_BUILD_DIR="$build" PATH=/usr/bin:/bin "${pre[@]}" "$py" -c \
	'import sinter, sinter._lib as L; v = sinter.version(); print("found", L.path); assert L.path.startswith("'"$build"'")'
echo "python.numpy: all checks passed"
