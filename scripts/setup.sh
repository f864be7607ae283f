#!/usr/bin/env bash
# Installs the Debian packages that building and running ferrum need (only those missing) and
# builds it into build/. The tests' packages are scripts/test.sh's; with them installed, build/
# gets the tests too (FERRUM_BUILD_TESTS=AUTO), and FERRUM_BUILD_TESTS=ON in the environment
# (test.sh) makes sure it does. Idempotent: a second run installs nothing and rebuilds only what
# changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  cmake ninja-build pkg-config
  clang-16                          # compiler (see README: GCC 12 mis-handles AMX intrinsics)
  nlohmann-json3-dev                # JSON (config.json, tokenizer.json, eval output, server)
  libfmt-dev                        # formatting of messages
  libcli11-dev                      # command line
  libpcre2-dev                      # Unicode regex for BPE pre-tokenizers
  libmicrohttpd-dev                 # HTTP server (ferrum serve)
  openmpi-bin libopenmpi-dev        # pipeline stages over MPI ranks (--pipeline, mpirun)
)
. scripts/packages.sh
install_missing setup "${PACKAGES[@]}"

BUILD_DIR=${BUILD_DIR:-build}
TESTS=${FERRUM_BUILD_TESTS:-}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  CC=clang-16 CXX=clang++-16 cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    ${TESTS:+-DFERRUM_BUILD_TESTS=$TESTS}
elif [ -n "$TESTS" ] && ! grep -qx "FERRUM_BUILD_TESTS:[A-Z]*=$TESTS" "$BUILD_DIR/CMakeCache.txt"; then
  # Configured before (e.g. by run.sh, without the test packages): turn the tests on now.
  cmake -S . -B "$BUILD_DIR" -DFERRUM_BUILD_TESTS="$TESTS"
fi
cmake --build "$BUILD_DIR" -j "$(nproc)"
