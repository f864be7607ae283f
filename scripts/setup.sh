#!/usr/bin/env bash
# Installs the Debian packages ferrum needs (only those missing) and builds it into build/.
# Idempotent: a second run installs nothing and rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  cmake ninja-build pkg-config xz-utils
  clang-16 libomp-16-dev            # compiler (see README: GCC 12 mis-handles AMX intrinsics)
  libclang-rt-16-dev                # sanitizer runtimes (ASan/UBSan/TSan builds of test.sh) and libFuzzer
  llvm-16                           # llvm-symbolizer: source lines in sanitizer reports (test.sh)
  libgtest-dev libgmock-dev         # tests
  nlohmann-json3-dev                # JSON (config.json, tokenizer.json, eval output, server)
  libfmt-dev                        # formatting of messages
  libcli11-dev                      # command line
  libpcre2-dev                      # Unicode regex for BPE pre-tokenizers
  libmicrohttpd-dev                 # HTTP server (ferrum serve)
  libcpp-httplib-dev                # HTTP client of the server tests
  python3-jsonschema                # independent JSON Schema validator of the grammar tests
)

# Node.js + npm run the OpenAI-client test (tests/server-node); any existing install will do.
command -v node >/dev/null 2>&1 || PACKAGES+=(nodejs)
command -v npm >/dev/null 2>&1 || PACKAGES+=(npm)
. scripts/packages.sh
install_missing setup "${PACKAGES[@]}"

BUILD_DIR=${BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  CC=clang-16 CXX=clang++-16 cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build "$BUILD_DIR" -j "$(nproc)"
