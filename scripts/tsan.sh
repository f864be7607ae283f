#!/usr/bin/env bash
# Builds the engine, server and pipeline tests with ThreadSanitizer into build-tsan/ and runs them:
# the scheduler thread, the HTTP handler threads, streaming and cancellation, pipeline stages as threads. A data race fails the
# test that hits it. Needs what setup.sh installs and the test packages (installed here when
# missing); extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/sanitizers.sh
. scripts/packages.sh
install_test_packages
sanitizer_configure build-tsan -DFERRUM_TSAN=ON
cmake --build build-tsan -j "$(nproc)" --target test_engine test_server test_dist
cd build-tsan
ctest --output-on-failure -j "$(nproc)" -L '^(engine|server|dist)$' "$@"
