#!/usr/bin/env bash
# Installs the Debian packages ferrum needs (only those missing) and builds it into build/.
# Idempotent: a second run installs nothing and rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  cmake ninja-build pkg-config xz-utils
  clang-16 libomp-16-dev            # compiler (see README: GCC 12 mis-handles AMX intrinsics)
  llvm-16                           # llvm-symbolizer: source lines in sanitizer reports (test.sh)
  libgtest-dev libgmock-dev         # tests
  nlohmann-json3-dev                # JSON (config.json, tokenizer.json, eval output, server)
  libfmt-dev                        # formatting of messages
  libcli11-dev                      # command line
  libpcre2-dev                      # Unicode regex for BPE pre-tokenizers
  libmicrohttpd-dev                 # HTTP server (ferrum serve)
  libcpp-httplib-dev                # HTTP client of the server tests
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js + npm run the OpenAI-client test (tests/server-node); any existing install will do.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

BUILD_DIR=${BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  CC=clang-16 CXX=clang++-16 cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build "$BUILD_DIR" -j "$(nproc)"
