#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang-16 with -fsanitize=fuzzer,address,undefined) into
# build-fuzz/ and runs them. Usage:
#
#   scripts/fuzz.sh [TARGET|all] [SECONDS]     # TARGET: gguf hf tokenizer llama2c jinja grammar lora openai http cli dist imatrix (default: all, 60 s each)
#
# Each target starts from its committed seed corpus (fuzz/corpus/<target>), copied to a work
# directory outside the repository ($FUZZ_WORK, default /tmp/ferrum-fuzz/<target>) where the
# corpus grows between runs; crashes are written there as crash-*/oom-*/timeout-* files and the
# script exits non-zero. Extra libFuzzer flags can be passed in $FUZZ_FLAGS (e.g. -jobs=2).
# Idempotent: installs only missing packages, rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(gguf hf tokenizer llama2c jinja grammar lora openai http cli dist imatrix)
target=${1:-all}
seconds=${2:-60}
if [ "$target" = all ]; then
  run=("${TARGETS[@]}")
elif [[ " ${TARGETS[*]} " == *" $target "* ]]; then
  run=("$target")
else
  echo "fuzz.sh: unknown target '$target' (use one of: ${TARGETS[*]} or all)" >&2
  exit 2
fi

# The normal build's packages, plus compiler-rt (libFuzzer and the sanitizer runtimes).
PACKAGES=(cmake ninja-build pkg-config clang-16 libclang-rt-16-dev nlohmann-json3-dev libfmt-dev libcli11-dev
  libpcre2-dev libmicrohttpd-dev)
. scripts/packages.sh
install_missing fuzz "${PACKAGES[@]}"

BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  CC=clang-16 CXX=clang++-16 cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DFERRUM_BUILD_TESTS=OFF -DFERRUM_FUZZ=ON -DFERRUM_MPI=OFF
fi
cmake --build "$BUILD_DIR" -j "${FUZZ_BUILD_JOBS:-$(nproc)}" --target "${run[@]/#/fuzz_}"

ROOT=$(pwd)
# Stack traces for every finding (UBSan's are off by default), symbolized when a symbolizer exists.
SYM=$(command -v llvm-symbolizer-16 || command -v llvm-symbolizer || true)
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1${SYM:+:external_symbolizer_path=$SYM}}
export ASAN_OPTIONS=${ASAN_OPTIONS:-${SYM:+external_symbolizer_path=$SYM}}
WORK=${FUZZ_WORK:-/tmp/ferrum-fuzz}
status=0
for t in "${run[@]}"; do
  dir="$WORK/$t"
  mkdir -p "$dir/corpus"
  cp -n fuzz/corpus/"$t"/* "$dir/corpus/" 2>/dev/null || true
  echo "fuzz: $t for ${seconds}s (corpus $dir/corpus)"
  # Memory: the harnesses build only small models (fuzz/fuzz_model.cpp), so a single allocation
  # over 512 MB or a process over 2.5 GB is a finding, not an honest request.
  set +e
  # shellcheck disable=SC2086
  (cd "$dir" && "$ROOT/$BUILD_DIR/fuzz/fuzz_$t" corpus -dict="$ROOT/fuzz/dict/$t.dict" \
    -max_total_time="$seconds" -rss_limit_mb=2560 -malloc_limit_mb=512 -timeout=20 -max_len=65536 \
    -print_final_stats=1 ${FUZZ_FLAGS:-} >"$dir/last-run.log" 2>&1)
  rc=$?
  set -e
  grep -E "^#[0-9]+ +(INITED|DONE)|^stat::(number_of_executed_units|peak_rss_mb)|ERROR|SUMMARY|Test unit written" \
    "$dir/last-run.log" || true
  if [ $rc -ne 0 ] || grep -q "Test unit written" "$dir/last-run.log"; then
    echo "fuzz: $t found a problem; see $dir/last-run.log and the crash-*/oom-*/timeout-* files in $dir" >&2
    status=1
  fi
done
exit $status
