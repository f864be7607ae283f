#!/usr/bin/env bash
# The library as a user gets it: `cmake --install` into a temporary prefix, then examples/ is
# configured and built against the installed package only (find_package(ferrum)) and run on the
# bundled model with no prompt; its text must be llama2.c's greedy story of 200 steps (the golden
# file the CLI test uses too) and the text of `ferrum run -n 200 --temp 0` with no prompt.
# The example is compiled a second time by hand from `pkg-config --cflags --libs ferrum`, and both
# builds may use no include directory but the prefix's.
#
#   install_test.sh BUILD_DIR SOURCE_DIR CXX_COMPILER [EXTRA_FLAGS]
# EXTRA_FLAGS: sanitizer flags of the build (the example must be built with the library's).
set -euo pipefail
build=$1
src=$2
cxx=$3
extra=${4:-}
model=$src/models/stories260K.gguf
golden=$src/tests/data/models/stories260K/golden_greedy_noprompt_200steps.txt

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

echo "== cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" > "$tmp/install.log" || { cat "$tmp/install.log"; fail "install"; }
for f in include/ferrum/ferrum.h include/ferrum/version.h lib/cmake/ferrum/ferrumConfig.cmake \
         lib/cmake/ferrum/ferrumConfigVersion.cmake lib/cmake/ferrum/ferrumTargets.cmake \
         lib/pkgconfig/ferrum.pc; do
  [ -f "$prefix/$f" ] || fail "$f is not installed"
done
ls "$prefix"/lib/libferrum.so* > /dev/null || fail "libferrum.so is not installed"

# Public headers include only std headers and other ferrum/ headers.
bad=$(grep -h '^#include' "$prefix"/include/ferrum/*.h | grep -v '^#include <[a-z_]*>$' |
      grep -v '^#include "ferrum/[a-z_]*\.h"$' || true)
[ -z "$bad" ] || fail "a public header includes a non-standard header: $bad"

check_includes() {  # $1: a compile command; every -I/-isystem must be the prefix's include dir
  local flags
  flags=$(echo "$1" | tr ' ' '\n' | awk '/^-I|^-isystem/ {print; if ($0 == "-isystem" || $0 == "-I") {getline; print}}' |
          sed 's/^-isystem//; s/^-I//' | grep -v '^$' || true)
  for d in $flags; do
    [ "$(realpath "$d")" = "$(realpath "$prefix/include")" ] || fail "the example is compiled with -I $d"
  done
  [ -n "$flags" ] || fail "no include directory in: $1"
}

expected=$(cat "$golden")
cli=$("$build/ferrum" run "$model" -n 200 --temp 0 < /dev/null) || fail "ferrum run exited with $?"
[ "$cli" = "$expected" ] || fail "ferrum run -n 200 --temp 0 does not print $golden"

echo "== examples/ with find_package(ferrum)"
CXXFLAGS="$extra" LDFLAGS="$extra" cmake -S "$src/examples" -B "$tmp/build" -G Ninja \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
  > "$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; fail "configure examples/"; }
cmake --build "$tmp/build" -- -v > "$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "build examples/"; }
check_includes "$(grep -- '-c .*generate.cpp' "$tmp/build.log")"
out=$("$tmp/build/generate" "$model") || fail "generate exited with $?"
[ "$out" = "$expected" ] || { diff <(echo "$out") "$golden" >&2 || true; fail "generate's text differs from $golden"; }
echo "generate (CMake): the golden story"

echo "== examples/generate.cpp with pkg-config"
pc=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs ferrum) || fail "pkg-config ferrum"
echo "pkg-config --cflags --libs ferrum: $pc"
check_includes "$pc"
# shellcheck disable=SC2086
"$cxx" $extra "$src/examples/generate.cpp" $pc -Wl,-rpath,"$prefix/lib" -o "$tmp/generate-pc" ||
  fail "compile with pkg-config flags"
out=$("$tmp/generate-pc" "$model") || fail "generate-pc exited with $?"
[ "$out" = "$expected" ] || fail "generate-pc's text differs from $golden"
echo "generate (pkg-config): the golden story"

# A prompt works too, and a missing model is a clean error.
out=$("$tmp/generate-pc" "$model" "Once upon a time") || fail "generate with a prompt exited with $?"
[[ "$out" == "Once upon a time"* ]] || fail "the prompt is not echoed: $out"
if "$tmp/generate-pc" "$tmp/missing.gguf" 2> "$tmp/err.txt"; then fail "a missing model did not fail"; fi
grep -q "missing.gguf" "$tmp/err.txt" || fail "the error does not name the file: $(cat "$tmp/err.txt")"
echo "PASS"
