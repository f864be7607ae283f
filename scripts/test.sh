#!/usr/bin/env bash
# Installs the tests' packages (scripts/packages.sh), sets up and builds with the tests (see
# setup.sh), then runs the whole test suite with CTest twice: on the
# release build (build/) and on an AddressSanitizer + UndefinedBehaviorSanitizer build
# (build-asan/; memory errors, leaks and undefined behaviour fail the test); then the engine and
# server tests under ThreadSanitizer (scripts/tsan.sh); then the ARM64 build's kernel tests and
# model goldens under emulation (scripts/test_arm64.sh --ci). Fails if any of the four fails.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/sanitizers.sh
. scripts/packages.sh
install_test_packages
FERRUM_BUILD_TESTS=ON ./scripts/setup.sh
status=0
(cd build && ctest --output-on-failure -j "$(nproc)" --timeout 900) || status=1

echo "test: the same suite under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/)"
sanitizer_configure build-asan -DFERRUM_SANITIZE=ON
cmake --build build-asan -j "$(nproc)"
(cd build-asan && ctest --output-on-failure -j "$(nproc)" --timeout 900) || status=1

echo "test: the engine, server and pipeline tests under ThreadSanitizer (build-tsan/)"
./scripts/tsan.sh || status=1

echo "test: ARM64 cross build, kernel tests and model goldens under qemu-aarch64 (build-arm64/)"
./scripts/test_arm64.sh --ci || status=1
exit $status
