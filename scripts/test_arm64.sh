#!/usr/bin/env bash
# Cross-compiles ferrum for ARM64 (clang-16 and Debian's aarch64 toolchain, cmake/aarch64-linux-gnu.cmake)
# into build-arm64/ and runs tests under qemu-aarch64 user emulation: by default the kernel tests and
# the model goldens on each ARM tier (scalar, neon, neondot: qemu's default CPU has the dot-product
# extension). Installs what it needs (the cross toolchain, qemu-user and the arm64 builds of the
# libraries, as multiarch packages) only when missing. Speed under emulation says nothing of ARM
# speed; see bench/README.md for the figures on paper.
#   scripts/test_arm64.sh                      # kernel and model tests, every ARM tier (~30 min)
#   scripts/test_arm64.sh --ci                 # the part scripts/test.sh runs (sized for CI)
#   scripts/test_arm64.sh -R 'Golden'          # or any ctest arguments: the tests they select
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/packages.sh

if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "test_arm64: adding the arm64 architecture to dpkg (multiarch libraries)"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo dpkg --add-architecture arm64
  $sudo apt-get update -qq
fi
install_missing test_arm64 cmake ninja-build pkg-config clang-16 qemu-user g++-aarch64-linux-gnu \
  nlohmann-json3-dev libcli11-dev xz-utils \
  libfmt-dev:arm64 libpcre2-dev:arm64 libmicrohttpd-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64 \
  libcpp-httplib-dev:arm64 libc6:arm64

BUILD_DIR=${BUILD_DIR:-build-arm64}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DFERRUM_BUILD_TESTS=ON -DFERRUM_BUILD_LIBRARY=OFF -DFERRUM_MPI=OFF
fi
# The kernel and model tests; outside --ci the command line too (so the whole product keeps
# compiling for ARM64: portable code above the kernels, left out of CI's time).
targets=(test_kernels test_models)
[ "${1:-}" = "--ci" ] || targets+=(ferrum)
cmake --build "$BUILD_DIR" -j "$(nproc)" --target "${targets[@]}"

cd "$BUILD_DIR"
ctest_run() { ctest --output-on-failure -j "$(nproc)" --timeout 1800 "$@"; }
if [ "${1:-}" = "--ci" ]; then
  # Every kernel test on the best tier (neondot; the products, attention, element-wise and LoRA
  # tests loop over every tier the CPU has, neon included), and the model goldens, batching
  # invariance and the newer families on neondot (their files quantized on ARM as on x86). The
  # whole binaries again on the neon tier (kernels.tier_neon, models.tier_neon: ~5 and ~12 min
  # under emulation), the 2488-token exact-path golden (LongPromptPastOriginalContext: ~2 min under
  # emulation, a fifth of this subset's time; the kernel tests cover NEON attention past 4000
  # tokens) and the command line's build are left to the full run.
  status=0
  ctest_run -L '^kernels$' -E '\.tier_' || status=1
  ctest_run -L '^models$' \
    -R '^(Dense/Golden|MoeGolden|Bert|Families/Family)\.|^Dense/Runtime\.BatchingAndChunkingAreBitwiseInvariant/(llama|qwen3moe)$' \
    -E 'LongPromptPastOriginalContext' || status=1
  exit $status
fi
if [ $# -gt 0 ]; then
  ctest_run "$@"
else
  ctest_run -L '^(kernels|models)$'
fi
