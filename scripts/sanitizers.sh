# Sourced by scripts/test.sh and scripts/tsan.sh: how the sanitizer builds are configured and the
# options their test runs use. Every finding ends the process with an error, so the test fails.

# Configures build directory $1 once (clang-16, optimised with line tables, the CMake options that
# follow); later runs keep it and rebuild only what changed, as setup.sh does for build/.
sanitizer_configure() {
  local dir=$1
  shift
  if [ ! -f "$dir/build.ninja" ]; then
    # Line tables are all a sanitizer report needs (file:line per frame); full debug info made these
    # builds about an eighth slower to compile and link.
    CC=clang-16 CXX=clang++-16 cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" \
      -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" \
      -DFERRUM_BUILD_TESTS=ON -DFERRUM_MPI=OFF "$@"  # Open MPI is not built for the sanitizers
  fi
}

# Reports name source lines when a symbolizer is found (test.sh installs llvm-16's).
symbolizer=""
for s in /usr/lib/llvm-16/bin/llvm-symbolizer "$(command -v llvm-symbolizer || true)"; do
  if [ -x "$s" ]; then
    symbolizer=":external_symbolizer_path=$s"
    break
  fi
done

# Exported before building too: the build runs each test binary to list its tests.
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1$symbolizer
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1$symbolizer
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1$symbolizer
